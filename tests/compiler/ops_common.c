/*
 * Helpers of the compiler tests (see ops_common.h). The compiled module is always reached the
 * way a device reaches it: dlsym("tether_module_registry"), tether_registry_check, lookup by
 * name, tether_call with DLTensor arguments; the typed C interface through dlsym("<p>_run").
 */
#include "ops_common.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tether/crt.h"

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

int tt_graph_copy(const tether_ir_graph *s, tether_ir_graph *d) {
    int rc = tether_ir_init(d, s->name);
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
    o.codegen.abi = abi;
    o.codegen.interface = iface;
    o.codegen.prefix = "tether_test";
    o.codegen.link_params = link_params;
    tether_compile_result res;
    rc = tether_compile_graph(&g, dir, &o, &res);
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
    int n = g.ninputs + g.noutputs;
    if (iface == TETHER_INTERFACE_C) {
        typedef int32_t (*run_fn)(void *, void *, void *);
        run_fn run = (run_fn)dlsym(h, "tether_test_run");
        if (!run) {
            rc = tether_set_error(TETHER_ERR_NOT_FOUND, "tether_test_run missing");
            goto out;
        }
        const float *ins[TETHER_IR_MAX_INPUTS];
        float *outs[TETHER_IR_MAX_OUTPUTS];
        for (int i = 0; i < g.ninputs; i++) {
            ins[i] = inputs[i];
        }
        for (int i = 0; i < g.noutputs; i++) {
            outs[i] = outputs[i];
        }
        void *wsmem = aligned_alloc(16, (size_t)res.workspace_size + 16);
        void *ws[1] = {res.workspace_size ? wsmem : NULL};
        fret = run(ins, outs, ws);
        free(wsmem);
    } else {
        DLTensor t[TETHER_MAX_ARGS];
        tether_value v[TETHER_MAX_ARGS];
        int32_t codes[TETHER_MAX_ARGS];
        for (int i = 0; i < n; i++) {
            const tether_ir_tensor *x =
                &g.tensors[i < g.ninputs ? g.inputs[i] : g.outputs[i - g.ninputs]];
            memset(&t[i], 0, sizeof t[i]);
            t[i].data = i < g.ninputs ? (void *)inputs[i] : outputs[i - g.ninputs];
            t[i].device.device_type = kDLCPU;
            t[i].ndim = x->ndim;
            t[i].dtype = TETHER_FLOAT32;
            t[i].shape = (int64_t *)x->shape;
            v[i].v_handle = &t[i];
            codes[i] = TETHER_TYPE_DLTENSOR;
        }
        rc = tether_call(entry, v, codes, n, &fret);
    }
    if (!rc && fret != 0) {
        rc = tether_set_error(TETHER_ERR_STATE, "entry returned %d", fret);
    }
out:
    free(blob);
    dlclose(h);
    tether_ir_close(&g);
    if (!rc) {
        rm_tree(dir);
    }
    return rc;
}
