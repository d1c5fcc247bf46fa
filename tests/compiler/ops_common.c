/*
 * Helpers of the compiler tests (see ops_common.h). The compiled module is always reached the
 * way a device reaches it: dlsym("tether_module_registry"), tether_registry_check, lookup by
 * name, tether_call with DLTensor arguments; the typed C interface through dlsym("<p>_run").
 */
#include "ops_common.h"

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tether/crt.h"
#include "tether/custom_ops.h"

int tt_opt_level = TETHER_OPT_DEFAULT;

void tt_fill(float *v, size_t n, bool positive, uint32_t *seed) {
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        float u = (float)(*seed >> 8) / 16777216.0f;
        v[i] = positive ? 0.1f + 1.9f * u : 2.0f * u - 1.0f;
    }
}

double tt_close(const float *a, const float *b, size_t n, double atol, double rtol) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) && isnan(b[i])) {
            continue;
        }
        if (isnan(a[i]) || isnan(b[i])) {
            return INFINITY;
        }
        double r = fabs((double)a[i] - b[i]) / (atol + rtol * fabs((double)b[i]));
        worst = r > worst ? r : worst;
    }
    return worst;
}

void tt_attrs_custom(tether_ir_attrs *a) {
    a->ints[0] = 0;
    a->nints = 1;
}

const struct tether_custom_registry *tt_custom_registry(void) {
    static tether_custom_registry *r;
    if (!r && tether_custom_registry_load(TETHER_SOURCE_DIR "/examples/custom_ops/ops.json", &r)) {
        fprintf(stderr, "%s\n", tether_last_error());
    }
    return r;
}

int tt_graph_copy(const tether_ir_graph *s, tether_ir_graph *d) {
    int rc = tether_ir_init(d, s->name);
    d->custom = s->custom;
    for (int i = 0; i < s->ntensors && !rc; i++) {
        const tether_ir_tensor *t = &s->tensors[i];
        if (t->kind == TETHER_TENSOR_CONSTANT) {
            rc = tether_ir_add_constant(d, t->name, t->dtype, t->ndim, t->shape, t->data, t->nbytes,
                                        NULL);
        } else {
            rc = tether_ir_add_tensor(d, t->name, t->dtype, t->ndim, t->shape, NULL);
        }
    }
    for (int i = 0; i < s->nnodes && !rc; i++) {
        const tether_ir_node *n = &s->nodes[i];
        rc = tether_ir_add_node(d, n->name, n->op, n->inputs, n->ninputs, n->outputs, n->noutputs,
                                &n->attrs, NULL);
    }
    for (int i = 0; i < s->ninputs && !rc; i++) {
        rc = tether_ir_add_input(d, s->inputs[i]);
    }
    for (int i = 0; i < s->noutputs && !rc; i++) {
        rc = tether_ir_add_output(d, s->outputs[i]);
    }
    if (!rc) {
        rc = tether_ir_infer(d);
    }
    return rc;
}

static void rm_tree(const char *dir) {
    static const char *const names[] = {"tether_test.c",  "tether_test.h",     "tether_test.su",
                                        "tether_test.ci", "libtether_test.so", "build.log",
                                        "metadata.json",  "report.json",       "params.bin"};
    char p[1200];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

int tt_run_compiled(const tether_ir_graph *g0, const char *tag, tether_abi abi,
                    tether_interface iface, bool link_params, const float *const *inputs,
                    float *const *outputs) {
    return tt_run_compiled_schedule(g0, tag, abi, iface, link_params, NULL, 0, inputs, outputs);
}

int tt_run_compiled_schedule(const tether_ir_graph *g0, const char *tag, tether_abi abi,
                             tether_interface iface, bool link_params,
                             const tether_schedule *schedule, int pad_conv_min_width,
                             const float *const *inputs, float *const *outputs) {
    return tt_run_compiled_memory(g0, tag, abi, iface, link_params, schedule, pad_conv_min_width,
                                  NULL, NULL, inputs, outputs);
}

int tt_run_compiled_memory(const tether_ir_graph *g0, const char *tag, tether_abi abi,
                           tether_interface iface, bool link_params,
                           const tether_schedule *schedule, int pad_conv_min_width,
                           const tether_memory_options *memory, tether_compile_result *result,
                           const float *const *inputs, float *const *outputs) {
    return tt_run_compiled_both(g0, tag, abi, iface, link_params, schedule, pad_conv_min_width,
                                memory, result, inputs,
                                iface == TETHER_INTERFACE_PACKED ? outputs : NULL,
                                iface == TETHER_INTERFACE_C ? outputs : NULL);
}

/* Runs the loaded module once through one entry: the registry's <prefix>_main (packed calling
 * convention, DLTensor arguments) or, when typed, <prefix>_run (the typed C interface). The pools
 * are poisoned first (0xA5): the code must not read what it did not write. */
static int run_entry(void *h, const tether_func_entry *entry, const tether_ir_graph *g,
                     const tether_compile_result *res, void *const *pool_mem, bool typed,
                     const float *const *inputs, float *const *outputs) {
    int32_t fret = 0;
    int rc = 0;
    int n = g->ninputs + g->noutputs;
    for (int k = 0; k < res->npools; k++) {
        memset(pool_mem[k], 0xA5, (size_t)res->pools[k].size);
    }
    if (typed) {
        typedef int32_t (*run_fn)(void *, void *, void *);
        run_fn run = (run_fn)dlsym(h, "tether_test_run");
        if (!run) {
            return tether_set_error(TETHER_ERR_NOT_FOUND, "tether_test_run missing");
        }
        const float *ins[TETHER_IR_MAX_INPUTS];
        float *outs[TETHER_IR_MAX_OUTPUTS];
        for (int i = 0; i < g->ninputs; i++) {
            ins[i] = inputs[i];
        }
        for (int i = 0; i < g->noutputs; i++) {
            outs[i] = outputs[i];
        }
        void *wsmem = aligned_alloc(16, (size_t)res->workspace_size + 16);
        void *ws[TETHER_MEMORY_MAX_POOLS] = {res->workspace_size ? wsmem : NULL};
        for (int k = 0; k < res->npools; k++) {
            ws[k] = pool_mem[k];
        }
        fret = run(ins, outs, ws);
        free(wsmem);
    } else {
        DLTensor t[TETHER_MAX_ARGS];
        tether_value v[TETHER_MAX_ARGS];
        int32_t codes[TETHER_MAX_ARGS];
        for (int i = 0; i < n; i++) {
            const tether_ir_tensor *x =
                &g->tensors[i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs]];
            memset(&t[i], 0, sizeof t[i]);
            t[i].data = i < g->ninputs ? (void *)inputs[i] : outputs[i - g->ninputs];
            t[i].device.device_type = kDLCPU;
            t[i].ndim = x->ndim;
            t[i].dtype = x->dtype;
            t[i].shape = (int64_t *)x->shape;
            v[i].v_handle = &t[i];
            codes[i] = TETHER_TYPE_DLTENSOR;
        }
        int64_t pool_shape[TETHER_MEMORY_MAX_POOLS];
        for (int k = 0; k < res->npools; k++) { /* the pools after the outputs */
            int i = n + k;
            pool_shape[k] = res->pools[k].size;
            memset(&t[i], 0, sizeof t[i]);
            t[i].data = pool_mem[k];
            t[i].device.device_type = kDLCPU;
            t[i].ndim = 1;
            t[i].dtype = TETHER_UINT8;
            t[i].shape = &pool_shape[k];
            v[i].v_handle = &t[i];
            codes[i] = TETHER_TYPE_DLTENSOR;
        }
        rc = tether_call(entry, v, codes, n + res->npools, &fret);
    }
    if (!rc && fret != 0) {
        rc = tether_set_error(TETHER_ERR_STATE, "entry returned %d", fret);
    }
    return rc;
}

int tt_run_compiled_both(const tether_ir_graph *g0, const char *tag, tether_abi abi,
                         tether_interface iface, bool link_params, const tether_schedule *schedule,
                         int pad_conv_min_width, const tether_memory_options *memory,
                         tether_compile_result *result, const float *const *inputs,
                         float *const *out_packed, float *const *out_c) {
    if (out_c && iface != TETHER_INTERFACE_C) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "<prefix>_run needs interface c");
    }
    void *pool_mem[TETHER_MEMORY_MAX_POOLS] = {0};
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/compiler/tmp", TETHER_BINARY_DIR);
    mkdir(dir, 0755);
    snprintf(dir, sizeof dir, "%s/tests/compiler/tmp/%s-%s-%s%s", TETHER_BINARY_DIR, tag,
             tether_abi_name(abi), tether_interface_name(iface), link_params ? "" : "-blob");
    rm_tree(dir);
    tether_ir_graph g;
    int rc = tt_graph_copy(g0, &g);
    if (rc) {
        tether_ir_close(&g);
        return rc;
    }
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.build.opt_level = tt_opt_level;
    o.codegen.abi = abi;
    o.codegen.interface = iface;
    o.codegen.prefix = "tether_test";
    o.codegen.link_params = link_params;
    if (schedule) {
        o.codegen.schedule = *schedule;
    }
    o.passes.pad_conv_min_width = pad_conv_min_width;
    if (memory) {
        o.memory = *memory;
    }
    tether_compile_result res;
    rc = tether_compile_graph(&g, dir, &o, &res);
    if (result) {
        *result = res;
    }
    if (rc) {
        tether_ir_close(&g);
        return rc;
    }
    char lib[1200];
    snprintf(lib, sizeof lib, "%s/libtether_test.so", dir);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        tether_ir_close(&g);
        return tether_set_error(TETHER_ERR_IO, "dlopen: %s", dlerror());
    }
    const tether_func_registry *reg = dlsym(h, "tether_module_registry");
    const tether_func_entry *entry = NULL;
    void *blob = NULL;
    int32_t fret = 0;
    if (!reg || tether_registry_check(reg) != 0 ||
        tether_registry_find(reg, "tether_test_main", &entry) != 0) {
        rc = tether_set_error(TETHER_ERR_NOT_FOUND, "registry missing or broken: %s",
                              tether_last_error());
        goto out;
    }
    if (!link_params) {
        char pp[1200];
        snprintf(pp, sizeof pp, "%s/params.bin", dir);
        FILE *f = fopen(pp, "rb");
        struct stat st;
        if (!f || stat(pp, &st) != 0) {
            if (f) {
                fclose(f);
            }
            rc = tether_set_error(TETHER_ERR_IO, "no params.bin");
            goto out;
        }
        blob = aligned_alloc(16, ((size_t)st.st_size + 15) / 16 * 16 + 16);
        size_t got = fread(blob, 1, (size_t)st.st_size, f);
        fclose(f);
        (void)got;
        const tether_func_entry *sp;
        if ((rc = tether_registry_find(reg, "tether_test_set_params", &sp))) {
            goto out;
        }
        DLTensor bt = {0};
        int64_t bshape[1] = {st.st_size};
        bt.data = blob;
        bt.device.device_type = kDLCPU;
        bt.ndim = 1;
        bt.dtype = TETHER_UINT8;
        bt.shape = bshape;
        tether_value a = {.v_handle = &bt};
        int32_t code = TETHER_TYPE_DLTENSOR;
        if ((rc = tether_call(sp, &a, &code, 1, &fret)) || fret != 0) {
            rc = rc ? rc : tether_set_error(TETHER_ERR_STATE, "set_params returned %d", fret);
            goto out;
        }
    }
    for (int k = 0; k < res.npools; k++) {
        pool_mem[k] = aligned_alloc(16, (size_t)res.pools[k].size);
    }
    if (out_packed && (rc = run_entry(h, entry, &g, &res, pool_mem, false, inputs, out_packed))) {
        goto out;
    }
    if (out_c && (rc = run_entry(h, entry, &g, &res, pool_mem, true, inputs, out_c))) {
        goto out;
    }
out:
    for (int k = 0; k < TETHER_MEMORY_MAX_POOLS; k++) {
        free(pool_mem[k]);
    }
    free(blob);
    dlclose(h);
    tether_ir_close(&g);
    if (!rc) {
        rm_tree(dir);
    }
    return rc;
}

/* ---- the operator zoo ---------------------------------------------------------------------- */

typedef struct zoo {
    tether_ir_graph *g;
    uint32_t seed;
    int last;
    int count;
} zoo;

static int zconst(zoo *z, int ndim, const int64_t *shape, bool positive) {
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        n *= (size_t)shape[i];
    }
    float *v = malloc(n * sizeof(float));
    tt_fill(v, n, positive, &z->seed);
    char name[32];
    snprintf(name, sizeof name, "c%d", z->count++);
    int idx = -1;
    tether_ir_add_constant(z->g, name, TETHER_FLOAT32, ndim, shape, v, n * sizeof(float), &idx);
    free(v);
    return idx;
}

/* Adds node op(inputs...) -> new tensor; returns the tensor. */
static int znode(zoo *z, tether_op op, const tether_ir_attrs *a, int nin, ...) {
    int in[8];
    va_list ap;
    va_start(ap, nin);
    for (int i = 0; i < nin; i++) {
        in[i] = va_arg(ap, int);
    }
    va_end(ap);
    char tn[32], nn[32];
    snprintf(tn, sizeof tn, "t%d", z->count);
    snprintf(nn, sizeof nn, "%s_%d", tether_op_name(op), z->count++);
    int out = -1;
    tether_ir_add_tensor(z->g, tn, TETHER_FLOAT32, -1, NULL, &out);
    tether_ir_add_node(z->g, nn, op, in, nin, &out, 1, a, NULL);
    z->last = out;
    return out;
}

static tether_ir_attrs zattrs(tether_op op) {
    tether_ir_attrs a;
    tether_ir_attrs_init(op, &a);
    return a;
}

void tt_build_zoo(tether_ir_graph *g) {
    zoo z = {g, 99, -1, 0};
    tether_ir_init(g, "zoo");
    int64_t sx[] = {1, 3, 8, 8};
    int x;
    tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, sx, &x);
    tether_ir_add_input(g, x);
    int64_t s_w1[] = {6, 3, 3, 3}, s6[] = {6}, s_dw[] = {6, 1, 3, 3};
    tether_ir_attrs a = zattrs(TETHER_OP_CONV2D);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    int t =
        znode(&z, TETHER_OP_CONV2D, &a, 3, x, zconst(&z, 4, s_w1, false), zconst(&z, 1, s6, false));
    t = znode(&z, TETHER_OP_BATCH_NORM, NULL, 5, t, zconst(&z, 1, s6, false),
              zconst(&z, 1, s6, false), zconst(&z, 1, s6, false), zconst(&z, 1, s6, true));
    t = znode(&z, TETHER_OP_RELU, NULL, 1, t);
    a.groups = 6;
    a.strides[0] = a.strides[1] = 2;
    t = znode(&z, TETHER_OP_CONV2D, &a, 3, t, zconst(&z, 4, s_dw, false), zconst(&z, 1, s6, false));
    int skip = znode(&z, TETHER_OP_LEAKY_RELU, NULL, 1, t);
    a = zattrs(TETHER_OP_MAX_POOL);
    a.kernel[0] = a.kernel[1] = 2;
    a.strides[0] = a.strides[1] = 2;
    t = znode(&z, TETHER_OP_MAX_POOL, &a, 1, skip);
    t = znode(&z, TETHER_OP_RESIZE_NEAREST, NULL, 1, t);
    a = zattrs(TETHER_OP_AVG_POOL);
    a.kernel[0] = a.kernel[1] = 3;
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    a.count_include_pad = true;
    t = znode(&z, TETHER_OP_AVG_POOL, &a, 1, t);
    t = znode(&z, TETHER_OP_ADD, NULL, 2, t, skip);
    t = znode(&z, TETHER_OP_HARD_SWISH, NULL, 1, t);
    t = znode(&z, TETHER_OP_SIGMOID, NULL, 1, t);
    t = znode(&z, TETHER_OP_TANH, NULL, 1, t);
    t = znode(&z, TETHER_OP_HARD_SIGMOID, NULL, 1, t);
    t = znode(&z, TETHER_OP_EXP, NULL, 1, t);
    t = znode(&z, TETHER_OP_LOG, NULL, 1, t);
    a = zattrs(TETHER_OP_CLIP);
    a.min = -0.5f;
    a.max = 0.5f;
    t = znode(&z, TETHER_OP_CLIP, &a, 1, t);
    a = zattrs(TETHER_OP_TRANSPOSE);
    a.nints = 4;
    a.ints[0] = 0;
    a.ints[1] = 2;
    a.ints[2] = 3;
    a.ints[3] = 1;
    t = znode(&z, TETHER_OP_TRANSPOSE, &a, 1, t); /* [1,4,4,6] */
    a = zattrs(TETHER_OP_LAYER_NORM);
    t = znode(&z, TETHER_OP_LAYER_NORM, &a, 3, t, zconst(&z, 1, s6, false),
              zconst(&z, 1, s6, false));
    a = zattrs(TETHER_OP_RESHAPE);
    a.nints = 3;
    a.ints[0] = 1;
    a.ints[1] = 16;
    a.ints[2] = 6;
    t = znode(&z, TETHER_OP_RESHAPE, &a, 1, t);
    int64_t s65[] = {6, 5};
    t = znode(&z, TETHER_OP_MATMUL, NULL, 2, t, zconst(&z, 2, s65, false)); /* [1,16,5] */
    t = znode(&z, TETHER_OP_SOFTMAX, NULL, 1, t);
    a = zattrs(TETHER_OP_LOG_SOFTMAX);
    a.axis = 1;
    t = znode(&z, TETHER_OP_LOG_SOFTMAX, &a, 1, t);
    a = zattrs(TETHER_OP_REDUCE_MEAN);
    a.nints = 1;
    a.ints[0] = 1;
    t = znode(&z, TETHER_OP_REDUCE_MEAN, &a, 1, t); /* [1,1,5] */
    t = znode(&z, TETHER_OP_FLATTEN, NULL, 1, t);   /* [1,5] */
    int64_t s57[] = {5, 7}, s7[] = {7};
    t = znode(&z, TETHER_OP_DENSE, NULL, 3, t, zconst(&z, 2, s57, false),
              zconst(&z, 1, s7, false)); /* [1,7] */
    t = znode(&z, TETHER_OP_NEG, NULL, 1, t);
    a = zattrs(TETHER_OP_CONCAT);
    a.axis = 1;
    t = znode(&z, TETHER_OP_CONCAT, &a, 2, t, t); /* [1,14] */
    a = zattrs(TETHER_OP_PAD);
    a.nints = 4;
    a.ints[0] = 0;
    a.ints[1] = 1;
    a.ints[2] = 0;
    a.ints[3] = 1;
    t = znode(&z, TETHER_OP_PAD, &a, 1, t); /* [1,16] */
    int64_t s16[] = {16}, s0[1] = {1};
    t = znode(&z, TETHER_OP_ABS, NULL, 1, t);
    t = znode(&z, TETHER_OP_POW, NULL, 2, t, zconst(&z, 0, s0, true));
    t = znode(&z, TETHER_OP_SQRT, NULL, 1, t);
    t = znode(&z, TETHER_OP_DIV, NULL, 2, t, zconst(&z, 1, s16, true));
    t = znode(&z, TETHER_OP_SUB, NULL, 2, t, zconst(&z, 1, s16, false));
    t = znode(&z, TETHER_OP_PRELU, NULL, 2, t, zconst(&z, 1, s16, false));
    t = znode(&z, TETHER_OP_MUL, NULL, 2, t, t);
    a = zattrs(TETHER_OP_UNSQUEEZE);
    a.nints = 1;
    a.ints[0] = 2;
    t = znode(&z, TETHER_OP_UNSQUEEZE, &a, 1, t); /* [1,16,1] */
    t = znode(&z, TETHER_OP_GLOBAL_MAX_POOL, NULL, 1, t);
    a = zattrs(TETHER_OP_UNSQUEEZE);
    a.nints = 1;
    a.ints[0] = 3;
    t = znode(&z, TETHER_OP_UNSQUEEZE, &a, 1, t); /* [1,16,1,1] */
    t = znode(&z, TETHER_OP_GLOBAL_AVG_POOL, NULL, 1, t);
    a = zattrs(TETHER_OP_SQUEEZE);
    t = znode(&z, TETHER_OP_SQUEEZE, &a, 1, t); /* [16] */
    t = znode(&z, TETHER_OP_RELU, NULL, 1, t);
    tether_ir_add_output(g, t);
}

/* ---- the conv net and the MobileNet-style block ------------------------------------------- */

int tt_add_const(tether_ir_graph *g, const char *name, int ndim, const int64_t *shape,
                 uint32_t *seed) {
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        n *= (size_t)shape[i];
    }
    float *v = malloc(n * sizeof(float));
    tt_fill(v, n, false, seed);
    int idx = -1;
    tether_ir_add_constant(g, name, TETHER_FLOAT32, ndim, shape, v, n * sizeof(float), &idx);
    free(v);
    return idx;
}

void tt_build_convnet(tether_ir_graph *g, bool small) {
    uint32_t seed = 4;
    tether_ir_init(g, "convnet");
    int64_t C = small ? 8 : 16, O = small ? 16 : 32, S = small ? 16 : 32;
    int64_t sx[] = {1, C, S, S}, sw1[] = {O, C, 3, 3}, sw2[] = {O, O, 1, 1}, sb[] = {O},
            sd[] = {10, O * (S / 2) * (S / 2)}, s10[] = {10};
    int x, t[7];
    tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, sx, &x);
    int c1w = tt_add_const(g, "w1", 4, sw1, &seed), c1b = tt_add_const(g, "b1", 1, sb, &seed);
    int c2w = tt_add_const(g, "w2", 4, sw2, &seed), c2b = tt_add_const(g, "b2", 1, sb, &seed);
    int dw = tt_add_const(g, "wd", 2, sd, &seed), db = tt_add_const(g, "bd", 1, s10, &seed);
    for (int i = 0; i < 7; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "t%d", i);
        tether_ir_add_tensor(g, nm, TETHER_FLOAT32, -1, NULL, &t[i]);
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    int i1[] = {x, c1w, c1b}, i2[] = {t[1], c2w, c2b}, i3[] = {t[5], dw, db};
    tether_ir_add_node(g, "conv1", TETHER_OP_CONV2D, i1, 3, &t[0], 1, &a, NULL);
    tether_ir_add_node(g, "relu1", TETHER_OP_RELU, &t[0], 1, &t[1], 1, NULL, NULL);
    tether_ir_add_node(g, "conv2", TETHER_OP_CONV2D, i2, 3, &t[2], 1, NULL, NULL);
    tether_ir_add_node(g, "relu2", TETHER_OP_RELU, &t[2], 1, &t[3], 1, NULL, NULL);
    tether_ir_attrs_init(TETHER_OP_MAX_POOL, &a);
    a.kernel[0] = a.kernel[1] = a.strides[0] = a.strides[1] = 2;
    tether_ir_add_node(g, "pool", TETHER_OP_MAX_POOL, &t[3], 1, &t[4], 1, &a, NULL);
    tether_ir_add_node(g, "flat", TETHER_OP_FLATTEN, &t[4], 1, &t[5], 1, NULL, NULL);
    tether_ir_attrs_init(TETHER_OP_DENSE, &a);
    a.trans_b = true;
    tether_ir_add_node(g, "fc", TETHER_OP_DENSE, i3, 3, &t[6], 1, &a, NULL);
    tether_ir_add_input(g, x);
    tether_ir_add_output(g, t[6]);
    tether_ir_infer(g);
}

void tt_build_mobile(tether_ir_graph *g, bool small) {
    uint32_t seed = 21;
    tether_ir_init(g, "mobile");
    int64_t S = small ? 32 : 64;
    int64_t sx[] = {1, 3, S, S}, sw1[] = {16, 3, 3, 3}, sdw[] = {16, 1, 3, 3},
            spw[] = {32, 16, 1, 1}, s16[] = {16}, s32[] = {32}, sd[] = {10, 32}, s10[] = {10};
    int x, c[8], t[10];
    tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, sx, &x);
    tether_ir_add_input(g, x);
    const int64_t *shapes[] = {sw1, s16, sdw, s16, spw, s32, sd, s10};
    const int nd[] = {4, 1, 4, 1, 4, 1, 2, 1};
    for (int i = 0; i < 8; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "c%d", i);
        c[i] = tt_add_const(g, nm, nd[i], shapes[i], &seed);
    }
    for (int i = 0; i < 10; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "t%d", i);
        tether_ir_add_tensor(g, nm, TETHER_FLOAT32, -1, NULL, &t[i]);
    }
    tether_ir_attrs a, r6;
    tether_ir_attrs_init(TETHER_OP_CLIP, &r6);
    r6.min = 0.0f;
    r6.max = 6.0f;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    a.strides[0] = a.strides[1] = 2;
    int i1[] = {x, c[0], c[1]}, i2[] = {t[1], c[2], c[3]}, i3[] = {t[3], c[4], c[5]},
        i4[] = {t[7], c[6], c[7]};
    tether_ir_add_node(g, "conv1", TETHER_OP_CONV2D, i1, 3, &t[0], 1, &a, NULL);
    tether_ir_add_node(g, "relu6_1", TETHER_OP_CLIP, &t[0], 1, &t[1], 1, &r6, NULL);
    a.strides[0] = a.strides[1] = 1;
    a.groups = 16;
    tether_ir_add_node(g, "dw", TETHER_OP_CONV2D, i2, 3, &t[2], 1, &a, NULL);
    tether_ir_add_node(g, "relu6_2", TETHER_OP_CLIP, &t[2], 1, &t[3], 1, &r6, NULL);
    tether_ir_add_node(g, "pw", TETHER_OP_CONV2D, i3, 3, &t[4], 1, NULL, NULL);
    tether_ir_add_node(g, "relu", TETHER_OP_RELU, &t[4], 1, &t[5], 1, NULL, NULL);
    tether_ir_add_node(g, "gap", TETHER_OP_GLOBAL_AVG_POOL, &t[5], 1, &t[6], 1, NULL, NULL);
    tether_ir_add_node(g, "flat", TETHER_OP_FLATTEN, &t[6], 1, &t[7], 1, NULL, NULL);
    tether_ir_attrs_init(TETHER_OP_DENSE, &a);
    a.trans_b = true;
    tether_ir_add_node(g, "fc", TETHER_OP_DENSE, i4, 3, &t[8], 1, &a, NULL);
    tether_ir_add_node(g, "softmax", TETHER_OP_SOFTMAX, &t[8], 1, &t[9], 1, NULL, NULL);
    tether_ir_add_output(g, t[9]);
    tether_ir_infer(g);
}

int tt_build_model(const char *name, bool small, tether_ir_graph *g) {
    if (strcmp(name, "kws") == 0) {
        char path[1024];
        snprintf(path, sizeof path, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
        return tether_model_load(path, g);
    }
    if (strcmp(name, "zoo") == 0) {
        tt_build_zoo(g);
        return tether_ir_infer(g);
    }
    if (strcmp(name, "convnet") == 0) {
        tt_build_convnet(g, small);
        return tether_ir_infer(g);
    }
    if (strcmp(name, "mobile") == 0) {
        tt_build_mobile(g, small);
        return tether_ir_infer(g);
    }
    return tether_set_error(TETHER_ERR_NOT_FOUND, "no model '%s' in the model set", name);
}
