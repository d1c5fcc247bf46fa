/*
 * The C emitter: an inferred, planned graph -> one C99 source file and its header, for the packed
 * or the unpacked ABI, with a packed or typed-C AOT interface, weights linked or in a blob. This
 * file is the module and ABI scaffolding (entries, packed wrapper, registry, header, weights);
 * the per-operator functions and the graph function are emit_c_functions.c's, the kernel bodies
 * emit_c_kernels.c's.
 *
 * What must stay true (tests/compiler checks each):
 *  - output is a pure function of (graph, plan, options): no time stamps, no addresses, no host
 *    paths, so the same input gives byte-identical files;
 *  - the source compiles with -std=c99 -Wall -Wextra -Werror for hosted and freestanding
 *    (arm-none-eabi) targets and needs only memcpy/memset and the math functions it lists;
 *  - the unpacked ABI never mentions DLTensor or value arrays; the packed ABI declares the exact
 *    layouts of docs/abi.md itself (no dlpack include) so an artifact builds anywhere;
 *  - every kernel has constant trip counts baked in and reads its reduction innermost.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c_internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* The identifier part for a model name (malloc'd; see tether__cg_ident). */
static char *sanitize(const char *name) {
    char *s = malloc(TETHER_CG_IDENT_BUF);
    if (s) {
        tether__cg_ident(s, name, true);
    }
    return s;
}

/* Unique sanitised names for a list of model names (appends _2, _3, ... on clashes). */
static int unique_names(char **out, const char *const *names, int count) {
    for (int i = 0; i < count; i++) {
        char *s = sanitize(names[i]);
        if (!s) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "codegen: out of memory");
        }
        for (int k = 2;; k++) {
            int clash = 0;
            for (int j = 0; j < i && !clash; j++) {
                clash = out[j] && strcmp(out[j], s) == 0;
            }
            if (!clash) {
                break;
            }
            char *t = malloc(strlen(s) + 16);
            if (!t) {
                free(s);
                return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "codegen: out of memory");
            }
            char *base = sanitize(names[i]);
            snprintf(t, strlen(s) + 16, "%s_%d", base ? base : "t", k);
            free(base);
            free(s);
            s = t;
        }
        out[i] = s;
    }
    return TETHER_OK;
}

/* Appends s as a C string literal (quotes included): escapes quote, backslash, '?' (trigraphs)
 * and every byte outside printable ASCII. */
static void c_string(tether__sbuf *b, const char *s) {
    tether__sbuf_puts(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\' || c == '?') {
            tether__sbuf_printf(b, "\\%c", c);
        } else if (c >= 32 && c < 127) {
            tether__sbuf_printf(b, "%c", c);
        } else {
            tether__sbuf_printf(b, "\\%03o", c);
        }
    }
    tether__sbuf_puts(b, "\"");
}

static void emit_float_array(em *e, const char *name, const float *v, size_t n) {
    tether__sbuf_printf(&e->s, "static const float %s[%zu] = {\n", name, n ? n : 1);
    if (!n) {
        tether__sbuf_puts(&e->s, "    0.0f,\n");
    }
    for (size_t i = 0; i < n; i++) {
        char lit[48];
        if (isnan(v[i]) || isinf(v[i])) {
            flit(lit, sizeof lit, v[i]);
        } else {
            snprintf(lit, sizeof lit, "%af", (double)v[i]);
        }
        tether__sbuf_printf(&e->s, "%s%s,%s", i % 6 == 0 ? "    " : "", lit,
                            (i % 6 == 5 || i == n - 1) ? "\n" : " ");
    }
    tether__sbuf_puts(&e->s, "};\n");
}

/* The packed-ABI support code: argument checks and the DLTensor layout of docs/abi.md. */
static const char packed_support[] =
    "/* The DLTensor layout of dlpack.h (v0.6+), declared here so the module needs no dlpack\n"
    " * include; tests/compiler checks it against the real header. */\n"
    "typedef struct {\n"
    "    int32_t device_type;\n"
    "    int32_t device_id;\n"
    "} tg_device;\n"
    "typedef struct {\n"
    "    uint8_t code;\n"
    "    uint8_t bits;\n"
    "    uint16_t lanes;\n"
    "} tg_dtype;\n"
    "typedef struct {\n"
    "    void *data;\n"
    "    tg_device device;\n"
    "    int32_t ndim;\n"
    "    tg_dtype dtype;\n"
    "    int64_t *shape;\n"
    "    int64_t *strides;\n"
    "    uint64_t byte_offset;\n"
    "} tg_tensor;\n"
    "\n"
    "/* Records a message when the tether runtime is linked in (weak), returns MISMATCH. */\n"
    "extern int tether_set_error(int status, const char *fmt, ...) __attribute__((weak));\n"
    "\n"
    "static int32_t tg_fail(const char *fn, int32_t arg, const char *what) {\n"
    "    if (tether_set_error) {\n"
    "        tether_set_error(-6, \"%s: argument %d: %s\", fn, (int)arg, what);\n"
    "    }\n"
    "    return -6;\n"
    "}\n"
    "\n"
    "static int32_t tg_check(const char *fn, const tether_value *args, const int32_t *codes,\n"
    "                        int32_t i, int32_t ndim, const int64_t *shape, uint8_t code,\n"
    "                        uint8_t bits) {\n"
    "    const tg_tensor *t = (const tg_tensor *)args[i].v_handle;\n"
    "    if (codes[i] != 7 || t == 0) {\n"
    "        return tg_fail(fn, i, \"not a DLTensor\");\n"
    "    }\n"
    "    if (t->data == 0) {\n"
    "        return tg_fail(fn, i, \"data pointer is null\");\n"
    "    }\n"
    "    if (t->ndim != ndim) {\n"
    "        return tg_fail(fn, i, \"ndim differs\");\n"
    "    }\n"
    "    if (t->dtype.code != code || t->dtype.bits != bits || t->dtype.lanes != 1) {\n"
    "        return tg_fail(fn, i, \"dtype differs\");\n"
    "    }\n"
    "    int64_t stride = 1;\n"
    "    for (int32_t d = ndim - 1; d >= 0; --d) {\n"
    "        if (t->shape[d] != shape[d]) {\n"
    "            return tg_fail(fn, i, \"shape differs\");\n"
    "        }\n"
    "        if (t->strides != 0 && shape[d] != 1 && t->strides[d] != stride) {\n"
    "            return tg_fail(fn, i, \"not compact row-major\");\n"
    "        }\n"
    "        stride *= shape[d];\n"
    "    }\n"
    "    return 0;\n"
    "}\n"
    "\n"
    "static void *tg_data(const tether_value *args, int32_t i) {\n"
    "    const tg_tensor *t = (const tg_tensor *)args[i].v_handle;\n"
    "    return (char *)t->data + t->byte_offset;\n"
    "}\n"
    "\n";

static void upper(char *dst, const char *src, size_t n) {
    size_t i = 0;
    for (; src[i] && i + 1 < n; i++) {
        dst[i] = (char)toupper((unsigned char)src[i]);
    }
    dst[i] = 0;
}

static void emit_header(em *e, tether__sbuf *h, const tether_codegen_output *out) {
    const tether_ir_graph *g = e->g;
    char PU[128];
    upper(PU, e->P, sizeof PU);
    tether__sbuf_printf(h,
                        "/*\n * %s.h: generated by tether from model '%s'. Do not edit.\n"
                        " * ABI %s, interface %s, weights %s.\n",
                        e->P, tether__cg_comment_text(g->name), tether_abi_name(e->o->abi),
                        tether_interface_name(e->o->interface),
                        e->o->link_params ? "linked" : "in a params blob");
    if (e->o->abi == TETHER_ABI_PACKED) {
        tether__sbuf_puts(h,
                          " * Packed ABI: include tether/crt.h (if at all) before this header.\n");
    }
    tether__sbuf_puts(h, " */\n");
    tether__sbuf_printf(h,
                        "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n#include "
                        "<stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
                        PU, PU);
    const tether_memplan *plan = e->plan;
    if (!plan->pool_args) {
        tether__sbuf_printf(h, "/* Workspace: one pool, \"%s\", 16-byte aligned. */\n",
                            TETHER_WORKSPACE_POOL);
        tether__sbuf_printf(h, "#define %s_WORKSPACE_SIZE %lld\n", PU,
                            (long long)out->workspace_size);
        tether__sbuf_printf(h, "#define %s_POOL_WORKSPACE_SIZE %lld\n", PU,
                            (long long)out->workspace_size);
    } else {
        tether__sbuf_printf(h,
                            "/* Memory pools, fastest first (tether compile --pool): the caller "
                            "gives one\n * buffer per pool of at least its size, 16-byte "
                            "aligned. */\n#define %s_NUM_POOLS %d\n",
                            PU, plan->npools);
        for (int k = 0; k < plan->npools; k++) {
            char PN[TETHER_POOL_NAME_MAX + 8];
            upper(PN, plan->pools[k].cname, sizeof PN);
            tether__sbuf_printf(h, "#define %s_POOL_%s_NAME \"%s\"\n", PU, PN, plan->pools[k].name);
            tether__sbuf_printf(h, "#define %s_POOL_%s_SIZE %lld\n", PU, PN,
                                (long long)plan->pools[k].size);
        }
        tether__sbuf_printf(h, "/* All pools together. */\n#define %s_WORKSPACE_SIZE %lld\n", PU,
                            (long long)out->workspace_size);
    }
    tether__sbuf_printf(h, "#define %s_PARAMS_SIZE %zu\n", PU, out->params_bytes);
    tether__sbuf_printf(h, "#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n\n", PU,
                        g->ninputs, PU, g->noutputs);
    for (int io = 0; io < 2; io++) {
        int cnt = io ? g->noutputs : g->ninputs;
        for (int i = 0; i < cnt; i++) {
            const tether_ir_tensor *t = T(e, io ? g->outputs[i] : g->inputs[i]);
            const char *w = io ? "OUTPUT" : "INPUT";
            tether__sbuf_printf(h, "#define %s_%s_%d_NAME ", PU, w, i);
            c_string(h, t->name);
            tether__sbuf_puts(h, "\n");
            tether__sbuf_printf(h, "#define %s_%s_%d_DTYPE \"%s\"\n", PU, w, i,
                                tether__dtype_str(t->dtype));
            tether__sbuf_printf(h, "#define %s_%s_%d_NDIM %d\n", PU, w, i, t->ndim);
            tether__sbuf_printf(h, "#define %s_%s_%d_SHAPE {", PU, w, i);
            for (int d = 0; d < t->ndim; d++) {
                tether__sbuf_printf(h, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
            }
            tether__sbuf_printf(h, "}\n#define %s_%s_%d_ELEMENTS %zu\n", PU, w, i,
                                tether_ir_tensor_elements(t));
            tether__sbuf_printf(h, "#define %s_%s_%d_BYTES %zu\n", PU, w, i,
                                tether_ir_tensor_bytes(t));
            int ti = io ? g->outputs[i] : g->inputs[i];
            if (plan->offset[ti] >= 0) { /* planned: where it lives */
                tether__sbuf_printf(h,
                                    "/* planned: %s in pool %s at this offset%s */\n"
                                    "#define %s_%s_%d_POOL \"%s\"\n#define %s_%s_%d_OFFSET %lld\n",
                                    io ? "computed" : "read", plan->pools[plan->pool[ti]].name,
                                    io ? "; copied out when the output pointer is not null"
                                       : "; copied there when the input pointer is not null",
                                    PU, w, i, plan->pools[plan->pool[ti]].name, PU, w, i,
                                    (long long)plan->offset[ti]);
            }
            tether__sbuf_puts(h, "\n");
        }
    }
    if (e->o->abi == TETHER_ABI_PACKED) {
        tether__sbuf_puts(h,
                          "#ifndef TETHER_CRT_ABI_H\n#ifndef TETHER_GENERATED_VALUE\n"
                          "#define TETHER_GENERATED_VALUE\n"
                          "/* One packed argument (same layout as tether_value, docs/abi.md). */\n"
                          "typedef union tether_value {\n    int64_t v_int64;\n    double "
                          "v_float64;\n    void *v_handle;\n    const char *v_str;\n} "
                          "tether_value;\n#endif\n#endif\n\n");
    }
    if (e->o->interface == TETHER_INTERFACE_C) {
        tether__sbuf_printf(h, "struct %s_inputs {\n", e->P);
        for (int i = 0; i < g->ninputs; i++) {
            tether__sbuf_printf(h, "    const %s *%s;\n", ctype(e, g->inputs[i]),
                                e->cname[g->inputs[i]]);
        }
        if (!g->ninputs) {
            tether__sbuf_puts(h, "    char unused; /* no inputs (an empty struct is not C11) */\n");
        }
        tether__sbuf_printf(h, "};\n\nstruct %s_outputs {\n", e->P);
        for (int i = 0; i < g->noutputs; i++) {
            tether__sbuf_printf(h, "    %s *%s;\n", ctype(e, g->outputs[i]),
                                e->cname[g->outputs[i]]);
        }
        if (!plan->pool_args) {
            tether__sbuf_printf(h,
                                "};\n\n/* Caller memory: %s_WORKSPACE_SIZE bytes, 16-byte "
                                "aligned (NULL when the size is 0). */\nstruct %s_workspace "
                                "{\n    uint8_t *%s;\n};\n\n",
                                PU, e->P, TETHER_WORKSPACE_POOL);
        } else {
            tether__sbuf_printf(h,
                                "};\n\n/* Caller memory: one buffer per pool, %s_POOL_<NAME>_SIZE "
                                "bytes, 16-byte aligned. */\nstruct %s_workspace {\n",
                                PU, e->P);
            for (int k = 0; k < plan->npools; k++) {
                tether__sbuf_printf(h, "    uint8_t *%s;\n", plan->pools[k].cname);
            }
            tether__sbuf_puts(h, "};\n\n");
        }
        tether__sbuf_printf(h,
                            "/* Runs the model. 0 on success; -1 null argument, -7 misaligned "
                            "workspace%s. */\nint32_t %s_run(struct %s_inputs *inputs, struct "
                            "%s_outputs *outputs,\n        struct %s_workspace *workspace);\n\n",
                            e->o->link_params ? "" : ", -8 params not set", e->P, e->P, e->P, e->P);
    }
    tether__sbuf_puts(h, plan->pool_args
                             ? "/* RPC entry (listed first in tether_module_registry); takes the "
                               "pools after the\n * outputs, in the order above. */\n"
                             : "/* RPC entry (listed first in tether_module_registry); uses a "
                               "static workspace. */\n");
    if (e->o->abi == TETHER_ABI_PACKED) {
        tether__sbuf_printf(h,
                            "int32_t %s_main(tether_value *args, int32_t *type_codes, int32_t "
                            "num_args,\n        tether_value *ret, int32_t *ret_type_code, void "
                            "*resource_handle);\n",
                            e->P);
        if (!e->o->link_params) {
            tether__sbuf_printf(h,
                                "int32_t %s_set_params(tether_value *args, int32_t *type_codes, "
                                "int32_t num_args,\n        tether_value *ret, int32_t "
                                "*ret_type_code, void *resource_handle);\n",
                                e->P);
        }
    } else {
        tether__sbuf_printf(h, "int32_t %s_main(", e->P);
        for (int i = 0; i < g->ninputs; i++) {
            tether__sbuf_printf(h, "%sconst %s *%s", i ? ", " : "", ctype(e, g->inputs[i]),
                                e->cname[g->inputs[i]]);
        }
        for (int i = 0; i < g->noutputs; i++) {
            tether__sbuf_printf(h, "%s%s *%s", g->ninputs || i ? ", " : "", ctype(e, g->outputs[i]),
                                e->cname[g->outputs[i]]);
        }
        for (int k = 0; plan->pool_args && k < plan->npools; k++) {
            tether__sbuf_printf(h, ", uint8_t *%s", e->pool_param[k]);
        }
        tether__sbuf_puts(h, ");\n");
        if (!e->o->link_params) {
            tether__sbuf_printf(h,
                                "/* Points the module at a params blob (%s_PARAMS_SIZE bytes, "
                                "16-byte aligned, kept alive by the caller). */\n"
                                "int32_t %s_set_params(const void *blob);\n",
                                PU, e->P);
        }
    }
    tether__sbuf_printf(h, "\n#ifdef __cplusplus\n}\n#endif\n#endif /* %s_H */\n", PU);
}

int tether_interface_parse(const char *name, tether_interface *out) {
    if (name && strcmp(name, "packed") == 0) {
        *out = TETHER_INTERFACE_PACKED;
        return TETHER_OK;
    }
    if (name && strcmp(name, "c") == 0) {
        *out = TETHER_INTERFACE_C;
        return TETHER_OK;
    }
    return tether_set_error(TETHER_ERR_NOT_FOUND, "unknown interface '%s' (packed, c)",
                            name ? name : "(null)");
}

const char *tether_interface_name(tether_interface i) {
    return i == TETHER_INTERFACE_C ? "c" : i == TETHER_INTERFACE_PACKED ? "packed" : NULL;
}

void tether_schedule_init(tether_schedule *s) {
    s->vector_width = -1;
    s->conv_oc_block = 0;
    s->conv_col_vectors = 2;
    s->dw_col_vectors = 4;
    s->gemv_rows = 4;
    s->gemm_rows = 0;
    s->gemm_col_vectors = 2;
    s->channel_block = -1;
    s->nchwc_oc_vectors = 0;
    s->nchwc_pixels = 0;
    s->nchwc_dw_pixels = 8;
    s->local_size = 0;
    s->ocl_split_k = 0;
    s->ocl_tile_m = 0;
    s->ocl_tile_n = 0;
}

void tether_codegen_options_init(tether_codegen_options *o) {
    o->abi = TETHER_ABI_UNPACKED;
    o->interface = TETHER_INTERFACE_PACKED;
    o->prefix = "tether_model";
    o->link_params = true;
    tether_schedule_init(&o->schedule);
    o->node_schedules = NULL;
    o->nnode_schedules = 0;
}

void tether_codegen_output_close(tether_codegen_output *out) {
    if (!out) {
        return;
    }
    free(out->source);
    free(out->header);
    free(out->params);
    for (int i = 0; i < out->nfuncs; i++) {
        free(out->funcs[i].name);
    }
    free(out->funcs);
    free((char *)out->math_functions);
    memset(out, 0, sizeof *out);
}

static int add_func(tether_codegen_output *out, const char *name, tether_abi abi, int nargs) {
    tether_codegen_func *f = realloc(out->funcs, sizeof *f * (size_t)(out->nfuncs + 1));
    if (!f) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "codegen: out of memory");
    }
    out->funcs = f;
    f[out->nfuncs].name = malloc(strlen(name) + 1);
    if (!f[out->nfuncs].name) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "codegen: out of memory");
    }
    strcpy(f[out->nfuncs].name, name);
    f[out->nfuncs].abi = abi;
    f[out->nfuncs].num_args = nargs;
    out->nfuncs++;
    return TETHER_OK;
}

int tether_codegen_c(const tether_ir_graph *g, const tether_memplan *plan,
                     const tether_codegen_options *o, tether_codegen_output *out) {
    memset(out, 0, sizeof *out);
    tether_codegen_options defaults;
    if (!o) {
        tether_codegen_options_init(&defaults);
        o = &defaults;
    }
    const char *P = o->prefix ? o->prefix : "tether_model";
    int prc = tether__cg_check_prefix(P);
    if (prc) {
        return prc;
    }
    if (o->abi != TETHER_ABI_PACKED && o->abi != TETHER_ABI_UNPACKED) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "invalid ABI %d", (int)o->abi);
    }
    if (plan->ntensors != g->ntensors) {
        return tether_set_error(TETHER_ERR_MISMATCH, "memory plan is for another graph");
    }
    int src = tether__c_schedule_check(&o->schedule, NULL);
    for (int i = 0; !src && i < o->nnode_schedules; i++) {
        src =
            tether__c_schedule_check(&o->node_schedules[i].schedule, o->node_schedules[i].workload);
    }
    if (src) {
        return src;
    }
    int limit = o->abi == TETHER_ABI_UNPACKED ? TETHER_MAX_UNPACKED_ARGS : TETHER_MAX_ARGS;
    int entry_args = g->ninputs + g->noutputs + (plan->pool_args ? plan->npools : 0);
    if (entry_args > limit) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "the entry would take %d arguments (inputs, outputs%s); the %s "
                                "ABI allows at most %d",
                                entry_args, plan->pool_args ? ", pools" : "",
                                tether_abi_name(o->abi), limit);
    }
    for (int i = 0; i < g->nnodes; i++) {
        if (!tether__ir_is_loop_op(g->nodes[i].op) && tether__c_node_nargs(&g->nodes[i]) > limit) {
            return tether_set_error(TETHER_ERR_LIMIT,
                                    "node '%s' (%s) would take %d arguments; the %s ABI allows at "
                                    "most %d",
                                    g->nodes[i].name, tether_op_name(g->nodes[i].op),
                                    tether__c_node_nargs(&g->nodes[i]), tether_abi_name(o->abi),
                                    limit);
        }
    }
    em e;
    memset(&e, 0, sizeof e);
    e.g = g;
    e.plan = plan;
    e.o = o;
    e.vw = o->schedule.vector_width < 0 ? 8 : o->schedule.vector_width;
    tether__c_use_schedule(&e, &o->schedule);
    e.P = P;
    tether__sbuf_init(&e.s);
    int nt = g->ntensors ? g->ntensors : 1, nn = g->nnodes ? g->nnodes : 1;
    e.cname = calloc((size_t)nt, sizeof(char *));
    e.fname = calloc((size_t)nn, sizeof(char *));
    e.kname = calloc((size_t)nn, sizeof(char *));
    e.poff = calloc((size_t)nt, sizeof(size_t));
    const char **tn = calloc((size_t)nt, sizeof(char *));
    const char **nnm = calloc((size_t)nn, sizeof(char *));
    char **fbase = calloc((size_t)nn, sizeof(char *));
    tether__sbuf h, full;
    tether__sbuf_init(&h);
    tether__sbuf_init(&full);
    int rc = TETHER_OK;
    if (!e.cname || !e.fname || !e.kname || !e.poff || !tn || !nnm || !fbase) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "codegen: out of memory");
        goto out;
    }
    for (int i = 0; i < g->ntensors; i++) {
        tn[i] = g->tensors[i].name;
    }
    for (int i = 0; i < g->nnodes; i++) {
        nnm[i] = g->nodes[i].name;
    }
    if ((rc = unique_names(e.cname, tn, g->ntensors)) ||
        (rc = unique_names(fbase, nnm, g->nnodes))) {
        goto out;
    }
    for (int i = 0; i < g->nnodes; i++) {
        static const char *const reserved[] = {"main",       "run",    "graph",
                                               "set_params", "params", "workspace_pool"};
        const char *suffix = "";
        for (size_t r = 0; r < sizeof reserved / sizeof *reserved; r++) {
            if (strcmp(fbase[i], reserved[r]) == 0 || strncmp(fbase[i], "w_", 2) == 0 ||
                strncmp(fbase[i], "shape_", 6) == 0 || strncmp(fbase[i], "pool_", 5) == 0) {
                suffix = "_op";
            }
        }
        size_t n = strlen(P) + strlen(fbase[i]) + 8;
        e.fname[i] = malloc(n);
        if (!e.fname[i]) {
            rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "codegen: out of memory");
            goto out;
        }
        snprintf(e.fname[i], n, "%s_%s%s", P, fbase[i], suffix);
        e.kname[i] = malloc(n + 4);
        if (!e.kname[i]) {
            rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "codegen: out of memory");
            goto out;
        }
        snprintf(e.kname[i], n + 4, "tgk_%s", e.fname[i]);
        int na = tether__c_node_nargs(&g->nodes[i]);
        e.max_args = na > e.max_args ? na : e.max_args;
    }
    if ((rc = tether__c_layouts(&e))) {
        goto out;
    }
    for (int k = 0; plan->pool_args && k < plan->npools && k < TETHER_MEMORY_MAX_POOLS; k++) {
        /* "pool_<name>", with '_' appended while an input or output has that C name */
        snprintf(e.pool_param[k], sizeof e.pool_param[k], "pool_%s", plan->pools[k].cname);
        for (int clash = 1; clash;) {
            clash = 0;
            for (int i = 0; i < g->ninputs + g->noutputs && !clash; i++) {
                int t = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
                clash = strcmp(e.cname[t], e.pool_param[k]) == 0;
            }
            for (int j = 0; j < k && !clash; j++) {
                clash = strcmp(e.pool_param[j], e.pool_param[k]) == 0;
            }
            size_t n = strlen(e.pool_param[k]);
            if (clash && n + 1 < sizeof e.pool_param[k]) {
                e.pool_param[k][n] = '_';
                e.pool_param[k][n + 1] = 0;
            } else {
                clash = 0;
            }
        }
    }
    /* params layout */
    size_t poff = 0;
    for (int i = 0; i < g->ntensors; i++) {
        if (g->tensors[i].kind == TETHER_TENSOR_CONSTANT) {
            poff = (poff + 15) & ~(size_t)15;
            e.poff[i] = poff;
            poff += g->tensors[i].nbytes;
        }
    }
    out->params_bytes = 0;
    for (int i = 0; i < g->ntensors; i++) {
        if (g->tensors[i].kind == TETHER_TENSOR_CONSTANT) {
            out->params_bytes += g->tensors[i].nbytes;
        }
    }
    out->workspace_size = plan->workspace_size;
    if (!o->link_params) {
        out->params = calloc(poff ? poff : 1, 1);
        if (!out->params) {
            rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "codegen: out of memory");
            goto out;
        }
        for (int i = 0; i < g->ntensors; i++) {
            if (g->tensors[i].kind == TETHER_TENSOR_CONSTANT && g->tensors[i].nbytes) {
                memcpy(out->params + e.poff[i], tether__c_tensor_data(&e, i), g->tensors[i].nbytes);
            }
        }
        out->params_bytes = poff;
    }
    /* registry list: entry, set_params, operators */
    char nm[160];
    snprintf(nm, sizeof nm, "%s_main", P);
    if ((rc = add_func(out, nm, o->abi,
                       g->ninputs + g->noutputs + (plan->pool_args ? plan->npools : 0)))) {
        goto out;
    }
    if (!o->link_params) {
        snprintf(nm, sizeof nm, "%s_set_params", P);
        if ((rc = add_func(out, nm, o->abi, 1))) {
            goto out;
        }
    }
    for (int i = 0; i < g->nnodes; i++) {
        if (tether__c_node_has_function(g, &g->nodes[i]) &&
            (rc = add_func(out, e.fname[i], o->abi, tether__c_node_nargs(&g->nodes[i])))) {
            goto out;
        }
    }
    snprintf(nm, sizeof nm, "%s_profile", P);
    if (o->profile && (rc = add_func(out, nm, o->abi, 1))) {
        goto out;
    }

    /* ---- body: shapes, params, operators, graph, entries, registry ---- */
    if (o->abi == TETHER_ABI_PACKED) {
        tether__sbuf_puts(&e.s, "/* Tensor shapes (packed ABI argument checks). */\n");
        for (int i = 0; i < g->ntensors; i++) {
            const tether_ir_tensor *t = &g->tensors[i];
            int referenced = tether__ir_is_graph_output(g, i);
            for (int k = 0; k < g->ninputs; k++) {
                referenced |= g->inputs[k] == i;
            }
            for (int k = 0; k < g->nnodes && !referenced; k++) {
                const tether_ir_node *nd = &g->nodes[k];
                for (int j = 0; j < nd->ninputs && !referenced; j++) {
                    referenced = nd->inputs[j] == i && tether__c_node_has_function(g, nd);
                }
                referenced |= nd->outputs[0] == i && tether__c_node_has_function(g, nd);
            }
            if (!referenced) {
                continue; /* only in nodes without code (empty tensors, constants folded away) */
            }
            tether__sbuf_printf(&e.s, "static const int64_t %s_shape_%s[%d] = {", P, e.cname[i],
                                t->ndim ? t->ndim : 1);
            for (int d = 0; d < t->ndim; d++) {
                tether__sbuf_printf(&e.s, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
            }
            tether__sbuf_puts(&e.s, t->ndim ? "};\n" : "1};\n");
        }
        if (!o->link_params) {
            tether__sbuf_printf(&e.s, "static const int64_t %s_shape_params_blob[1] = {%zu};\n", P,
                                out->params_bytes);
        }
        tether__sbuf_puts(&e.s, "\n");
    }
    if (o->link_params) {
        int any = 0;
        for (int i = 0; i < g->ntensors; i++) {
            const tether_ir_tensor *t = &g->tensors[i];
            if (t->kind != TETHER_TENSOR_CONSTANT || tether_ir_tensor_elements(t) == 0) {
                continue; /* an empty constant: no code reads it (empty outputs have none) */
            }
            if (!any) {
                tether__sbuf_puts(&e.s, "/* Weights (linked). */\n");
                any = 1;
            }
            char sh[96], name[200];
            tether__shape_text(sh, sizeof sh, t->shape, t->ndim);
            tether__sbuf_printf(&e.s, "/* %s %s */\n", tether__cg_comment_text(t->name), sh);
            snprintf(name, sizeof name, "%s_w_%s", P, e.cname[i]);
            if (tether_dtype_equal(t->dtype, TETHER_FLOAT32)) {
                emit_float_array(&e, name, tether__c_tensor_data(&e, i),
                                 tether_ir_tensor_elements(t));
            } else {
                tether__c_typed_array(&e.s, name, t, tether__c_tensor_data(&e, i));
            }
        }
        if (any) {
            tether__sbuf_puts(&e.s, "\n");
        }
    } else {
        tether__sbuf_printf(&e.s,
                            "/* Weights: a params blob of %zu bytes set by %s_set_params. */\n"
                            "static const uint8_t *%s_params;\n\n",
                            out->params_bytes, P, P);
    }
    if ((rc = tether__c_custom_prototypes(&e))) {
        goto out;
    }
    for (int i = 0; i < g->nnodes; i++) {
        if (tether__c_node_has_function(g, &g->nodes[i])) {
            tether__c_emit_op_function(&e, i);
        }
    }
    tether__c_profile_decls(&e);
    tether__c_emit_graph(&e);
    /* static workspace + entries */
    const tether_memplan_pool *pools = plan->pools;
    int npa = plan->pool_args ? plan->npools : 0; /* pool arguments of every entry */
    if (!plan->pool_args && plan->workspace_size > 0) {
        tether__sbuf_printf(&e.s,
                            "/* Workspace of the RPC entry (pool \"%s\", %lld bytes). Declared as "
                            "float for its\n * alignment, and passed on as bytes. */\n"
                            "static float %s_workspace_pool[%lld] __attribute__((aligned(16)));"
                            "\n\n",
                            TETHER_WORKSPACE_POOL, (long long)plan->workspace_size, P,
                            (long long)plan->workspace_size / 4);
    }
    /* what the entries pass on to the graph function for the pools */
    tether__sbuf wsargs;
    tether__sbuf_init(&wsargs);
    if (!plan->pool_args) {
        if (plan->workspace_size > 0) {
            tether__sbuf_printf(&wsargs, "(uint8_t *)%s_workspace_pool", P);
        } else {
            tether__sbuf_puts(&wsargs, "0");
        }
    }
    if (o->abi == TETHER_ABI_UNPACKED) {
        tether__sbuf_printf(&e.s, "int32_t %s_main(", P);
        for (int i = 0; i < g->ninputs; i++) {
            tether__sbuf_printf(&e.s, "%sconst %s *%s", i ? ", " : "", ctype(&e, g->inputs[i]),
                                e.cname[g->inputs[i]]);
        }
        for (int i = 0; i < g->noutputs; i++) {
            tether__sbuf_printf(&e.s, "%s%s *%s", g->ninputs || i ? ", " : "",
                                ctype(&e, g->outputs[i]), e.cname[g->outputs[i]]);
        }
        for (int k = 0; k < npa; k++) {
            tether__sbuf_printf(&e.s, ", uint8_t *%s", e.pool_param[k]);
            tether__sbuf_printf(&wsargs, "%s%s", k ? ", " : "", e.pool_param[k]);
        }
        tether__sbuf_puts(&e.s, ") {\n");
        for (int k = 0; k < npa; k++) {
            tether__sbuf_printf(&e.s,
                                "    if (%s == 0 || ((uintptr_t)%s & 15u) != 0) {\n"
                                "        return -7; /* pool '%s': null or not 16-byte aligned "
                                "*/\n    }\n",
                                e.pool_param[k], e.pool_param[k], pools[k].name);
        }
        tether__sbuf_printf(&e.s, "    return %s_graph(", P);
        for (int i = 0; i < g->ninputs; i++) {
            tether__sbuf_printf(&e.s, "%s, ", e.cname[g->inputs[i]]);
        }
        for (int i = 0; i < g->noutputs; i++) {
            tether__sbuf_printf(&e.s, "%s, ", e.cname[g->outputs[i]]);
        }
        tether__sbuf_printf(&e.s, "%s);\n}\n\n", wsargs.data);
        if (!o->link_params) {
            tether__sbuf_printf(&e.s,
                                "int32_t %s_set_params(const void *blob) {\n"
                                "    if (blob == 0) {\n        return -1;\n    }\n"
                                "    if (((uintptr_t)blob & 15u) != 0) {\n        return -7;\n"
                                "    }\n    %s_params = (const uint8_t *)blob;\n"
                                "    return 0;\n}\n\n",
                                P, P);
        }
    } else {
        int nio = g->ninputs + g->noutputs, nargs = nio + npa;
        for (int k = 0; k < npa; k++) {
            tether__sbuf_printf(&e.s, "static const int64_t %s_pool_shape_%s[1] = {%lld};\n", P,
                                pools[k].cname, (long long)pools[k].size);
        }
        tether__sbuf_printf(&e.s,
                            "%sint32_t %s_main(tether_value *args, int32_t *type_codes, int32_t "
                            "num_args,\n        tether_value *ret, int32_t *ret_type_code, void "
                            "*resource_handle) {\n",
                            npa ? "\n" : "", P);
        e.depth = 1;
        line(&e, "(void)ret;");
        line(&e, "(void)ret_type_code;");
        line(&e, "(void)resource_handle;");
        line(&e, "if (num_args != %d) {", nargs);
        line(&e, "    return tg_fail(\"%s_main\", num_args, \"argument count differs from %d\");",
             P, nargs);
        line(&e, "}");
        for (int i = 0; i < nio; i++) {
            int t = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
            line(&e,
                 "if (tg_check(\"%s_main\", args, type_codes, %d, %d, %s_shape_%s, %d, %d) != 0) {",
                 P, i, T(&e, t)->ndim, P, e.cname[t], T(&e, t)->dtype.code, T(&e, t)->dtype.bits);
            line(&e, "    return -6;");
            line(&e, "}");
        }
        for (int k = 0; k < npa; k++) { /* pool k: uint8 bytes of its size, 16-byte aligned */
            line(&e,
                 "if (tg_check(\"%s_main\", args, type_codes, %d, 1, %s_pool_shape_%s, 1, 8) != 0) "
                 "{",
                 P, nio + k, P, pools[k].cname);
            line(&e, "    return -6;");
            line(&e, "}");
            line(&e, "if (((uintptr_t)tg_data(args, %d) & 15u) != 0) {", nio + k);
            line(&e, "    return tg_fail(\"%s_main\", %d, \"pool '%s' is not 16-byte aligned\");",
                 P, nio + k, pools[k].name);
            line(&e, "}");
            tether__sbuf_printf(&wsargs, "%s(uint8_t *)tg_data(args, %d)", k ? ", " : "", nio + k);
        }
        for (int d = 0; d < e.depth; d++) {
            tether__sbuf_puts(&e.s, "    ");
        }
        tether__sbuf_printf(&e.s, "return %s_graph(", P);
        for (int i = 0; i < nio; i++) {
            int t = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
            tether__sbuf_printf(&e.s, "(%s%s *)tg_data(args, %d), ", i < g->ninputs ? "const " : "",
                                ctype(&e, t), i);
        }
        tether__sbuf_printf(&e.s, "%s);\n}\n\n", wsargs.data);
        e.depth = 0;
        if (!o->link_params) {
            tether__sbuf_printf(
                &e.s,
                "int32_t %s_set_params(tether_value *args, int32_t *type_codes, int32_t "
                "num_args,\n        tether_value *ret, int32_t *ret_type_code, void "
                "*resource_handle) {\n"
                "    (void)ret;\n    (void)ret_type_code;\n    (void)resource_handle;\n"
                "    if (num_args != 1) {\n"
                "        return tg_fail(\"%s_set_params\", num_args, \"expects 1 argument\");\n"
                "    }\n"
                "    if (tg_check(\"%s_set_params\", args, type_codes, 0, 1, "
                "%s_shape_params_blob, 1, 8) != 0) {\n"
                "        return -6;\n    }\n"
                "    const uint8_t *blob = (const uint8_t *)tg_data(args, 0);\n"
                "    if (((uintptr_t)blob & 15u) != 0) {\n"
                "        return tg_fail(\"%s_set_params\", 0, \"blob is not 16-byte aligned\");\n"
                "    }\n"
                "    %s_params = blob;\n    return 0;\n}\n\n",
                P, P, P, P, P, P);
        }
    }
    tether__sbuf_free(&wsargs);
    tether__c_profile_function(&e);
    if (o->interface == TETHER_INTERFACE_C) {
        tether__sbuf_printf(&e.s,
                            "int32_t %s_run(struct %s_inputs *inputs, struct %s_outputs *outputs,\n"
                            "        struct %s_workspace *workspace) {\n"
                            "    if (inputs == 0 || outputs == 0 || workspace == 0) {\n"
                            "        return -1;\n    }\n",
                            P, P, P, P);
        for (int k = 0; k < plan->npools; k++) {
            const char *m = plan->pool_args ? pools[k].cname : TETHER_WORKSPACE_POOL;
            if (plan->pool_args || plan->workspace_size > 0) {
                tether__sbuf_printf(&e.s,
                                    "    if (workspace->%s == 0 || ((uintptr_t)workspace->%s & "
                                    "15u) != 0) {\n        return -7;\n    }\n",
                                    m, m);
            }
        }
        tether__sbuf_printf(&e.s, "    return %s_graph(", P);
        for (int i = 0; i < g->ninputs; i++) {
            tether__sbuf_printf(&e.s, "inputs->%s, ", e.cname[g->inputs[i]]);
        }
        for (int i = 0; i < g->noutputs; i++) {
            tether__sbuf_printf(&e.s, "outputs->%s, ", e.cname[g->outputs[i]]);
        }
        if (!plan->pool_args) {
            tether__sbuf_printf(&e.s, "workspace->%s);\n}\n\n", TETHER_WORKSPACE_POOL);
        } else {
            for (int k = 0; k < plan->npools; k++) {
                tether__sbuf_printf(&e.s, "%sworkspace->%s", k ? ", " : "", pools[k].cname);
            }
            tether__sbuf_puts(&e.s, ");\n}\n\n");
        }
    }
    /* registry */
    tether__sbuf_puts(&e.s,
                      "/* The module registry (layout of tether_func_entry / tether_func_registry, "
                      "docs/abi.md). */\n"
                      "typedef struct {\n    const char *name;\n    int32_t abi; /* 0 packed, 1 "
                      "unpacked */\n    int32_t num_args;\n    void (*fn)(void);\n} tg_entry;\n"
                      "typedef struct {\n    const tg_entry *entries;\n    size_t count;\n} "
                      "tg_registry;\n\nstatic const tg_entry tg_entries[] = {\n");
    for (int i = 0; i < out->nfuncs; i++) {
        tether__sbuf_printf(&e.s, "    {\"%s\", %d, %d, (void (*)(void))%s},\n", out->funcs[i].name,
                            (int)out->funcs[i].abi, out->funcs[i].num_args, out->funcs[i].name);
    }
    tether__sbuf_printf(&e.s,
                        "};\n\nextern const tg_registry tether_module_registry;\n"
                        "const tg_registry tether_module_registry = {tg_entries, %d};\n",
                        out->nfuncs);
    if ((rc = tether__c_custom_sources(&e))) { /* last: their #line directives */
        goto out;
    }

    /* ---- assemble: preamble + helpers + body ---- */
    tether__sbuf ml;
    tether__sbuf_init(&ml);
    for (int m = 0; m < M_COUNT; m++) {
        if (e.math_used[m]) {
            tether__sbuf_printf(&ml, "%s%s", ml.len ? "," : "", tether__math_name((tether__math)m));
        }
    }
    tether__sbuf_printf(&full,
                        "/*\n * %s.c: generated by tether from model '%s' (%d operators). Do not "
                        "edit.\n * ABI %s, interface %s, weights %s (%zu bytes), workspace %lld "
                        "bytes.\n * Needs from libc: memcpy, memset; from libm: %s.\n */\n",
                        P, tether__cg_comment_text(g->name), g->nnodes, tether_abi_name(o->abi),
                        tether_interface_name(o->interface), o->link_params ? "linked" : "blob",
                        out->params_bytes, (long long)plan->workspace_size,
                        ml.len ? ml.data : "nothing");
    tether__sbuf_printf(&full,
                        "#include <math.h>\n#include <stddef.h>\n#include <stdint.h>\n#include "
                        "<string.h>\n\n#include \"%s.h\"\n\n",
                        P);
    if (o->abi == TETHER_ABI_PACKED) {
        tether__sbuf_puts(&full, packed_support);
    }
    for (int k = 0; k < TETHER__PRIM_COUNT; k++) {
        if (e.need_helpers[k]) {
            tether__sbuf_puts(&full, tether__formula_c_helper(k));
        }
    }
    tether__c_type_helpers(&e, &full);
    tether__c_quant_helpers(&e, &full);
    tether__sbuf_puts(&full, e.s.data ? e.s.data : "");
    emit_header(&e, &h, out);
    if (e.s.failed || h.failed || full.failed || ml.failed) {
        tether__sbuf_free(&ml);
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "codegen: out of memory");
        goto out;
    }
    out->source = full.data;
    out->ntunable = e.ntunable;
    out->ntuned = e.ntuned;
    out->header = h.data;
    out->math_functions = ml.data ? ml.data : calloc(1, 1);
    full.data = NULL;
    h.data = NULL;
out:
    tether__sbuf_free(&e.s);
    tether__sbuf_free(&h);
    tether__sbuf_free(&full);
    for (int i = 0; i < g->ntensors && e.cname; i++) {
        free(e.cname[i]);
    }
    for (int i = 0; i < g->nnodes; i++) {
        if (e.fname) {
            free(e.fname[i]);
        }
        if (e.kname) {
            free(e.kname[i]);
        }
        if (fbase) {
            free(fbase[i]);
        }
    }
    free(e.cname);
    free(e.fname);
    free(e.kname);
    free(e.poff);
    tether__c_layouts_free(&e);
    free(tn);
    free(nnm);
    free(fbase);
    if (rc) {
        tether_codegen_output_close(out);
    }
    return rc;
}
