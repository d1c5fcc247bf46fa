/*
 * The C emitter's per-operator functions and the graph function that calls them in order
 * (tether__c_emit_op_function, tether__c_emit_graph), with the tensor pointers, pool parameters
 * and node schedules they use. The module around them (entries, packed wrapper, registry, header,
 * weights) is emit_c.c's; the kernel bodies are emit_c_kernels.c's.
 *
 * What must stay true: a tensor is addressed only through tensor_ptr (its plan offset in its pool,
 * or its graph argument); a node's function takes exactly tether__c_node_nargs arguments; the
 * output is a pure function of graph, plan and options.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c_internal.h"
#include "tether/crt/error.h"

/* ---- module structure ---------------------------------------------------------------------- */

/* Aliases need no code, and neither do nodes with an empty output (an extent of 0): inference
 * guarantees that their inputs are empty too. */
int tether__c_node_has_function(const tether_ir_graph *g, const tether_ir_node *n) {
    const tether_ir_tensor *o = &g->tensors[n->outputs[0]];
    if (tether__ir_is_loop_op(n->op)) {
        return 0; /* statements in the graph function (emit_c_loop.c) */
    }
    return !(tether__ir_is_alias_op(n->op) && o->alias_of >= 0) && tether_ir_tensor_elements(o) > 0;
}

/* The graph function's parameter holding pool k: "ws" for the one default workspace,
 * pool_<name> when the pools were given. */
static void pool_var(const em *e, int k, char *out, size_t n) {
    if (e->plan->pool_args) {
        snprintf(out, n, "pool_%s", e->plan->pools[k].cname);
    } else {
        snprintf(out, n, "ws");
    }
}

/* A graph input or output that the plan placed in a pool (copied in / out by the graph). */
static int planned_io(const em *e, int t) {
    return e->plan->offset[t] >= 0 &&
           (T(e, t)->kind == TETHER_TENSOR_INPUT || tether__ir_is_graph_output(e->g, t));
}

/* C expression for the storage of tensor t inside the graph function. */
void tether__c_tensor_ptr(const em *e, int t, char *out, size_t n) {
    const tether_ir_tensor *x = T(e, t);
    int root = x->alias_of >= 0 ? x->alias_of : t;
    const tether_ir_tensor *r = T(e, root);
    if (r->kind == TETHER_TENSOR_CONSTANT) {
        if (e->o->link_params) {
            snprintf(out, n, "%s_w_%s", e->P, e->cname[root]);
        } else {
            snprintf(out, n, "(const %s *)(%s_params + %zu)", ctype(e, t), e->P, e->poff[root]);
        }
    } else if (e->plan->offset[root] >= 0) {
        char pv[64];
        pool_var(e, e->plan->pool ? e->plan->pool[root] : 0, pv, sizeof pv);
        snprintf(out, n, "(%s *)(%s + %lld)", ctype(e, t), pv, (long long)e->plan->offset[root]);
    } else {
        snprintf(out, n, "p_%s", e->cname[root]);
    }
}

static void op_comment(em *e, const tether_ir_node *nd) {
    char sh[96];
    tether__sbuf_printf(&e->s, "/* %s: %s(", tether__cg_comment_text(nd->name),
                        tether_op_name(nd->op));
    for (int i = 0; i < nd->ninputs; i++) {
        if (nd->inputs[i] < 0) {
            tether__sbuf_printf(&e->s, "%s-", i ? ", " : "");
            continue;
        }
        tether__shape_text(sh, sizeof sh, T(e, nd->inputs[i])->shape, T(e, nd->inputs[i])->ndim);
        tether__sbuf_printf(&e->s, "%s%s%s", i ? ", " : "",
                            tether__cg_comment_text(T(e, nd->inputs[i])->name), sh);
    }
    tether__shape_text(sh, sizeof sh, T(e, nd->outputs[0])->shape, T(e, nd->outputs[0])->ndim);
    tether__sbuf_printf(&e->s, ") -> %s%s", tether__cg_comment_text(T(e, nd->outputs[0])->name),
                        sh);
    const tether_ir_attrs *a = &nd->attrs;
    if (nd->op == TETHER_OP_CONV2D || nd->op == TETHER_OP_MAX_POOL ||
        nd->op == TETHER_OP_AVG_POOL) {
        tether__sbuf_printf(
            &e->s, "\n * kernel %lldx%lld, strides %lldx%lld, pads %lld,%lld,%lld,%lld",
            (long long)a->kernel[0], (long long)a->kernel[1], (long long)a->strides[0],
            (long long)a->strides[1], (long long)a->pads[0], (long long)a->pads[1],
            (long long)a->pads[2], (long long)a->pads[3]);
        if (a->dilations[0] != 1 || a->dilations[1] != 1) {
            tether__sbuf_printf(&e->s, ", dilations %lldx%lld", (long long)a->dilations[0],
                                (long long)a->dilations[1]);
        }
        if (nd->op == TETHER_OP_CONV2D) {
            tether__sbuf_printf(&e->s, ", groups %lld", (long long)a->groups);
        }
    }
    for (int i = 0; i <= nd->ninputs; i++) {
        int t = i < nd->ninputs ? nd->inputs[i] : nd->outputs[0];
        if (t >= 0 && e->cb && e->cb[t]) {
            tether__sbuf_printf(&e->s, "\n * layout: %s NCHW%dc (channel-blocked)",
                                tether__cg_comment_text(T(e, t)->name), e->cb[t]);
        }
        if (t >= 0 && e->wdata && e->wdata[t]) {
            tether__sbuf_printf(&e->s, "\n * layout: %s repacked for vectors of output channels",
                                tether__cg_comment_text(T(e, t)->name));
        }
    }
    if (a->has_residual) {
        tether__sbuf_printf(&e->s, "\n * epilogue: + residual");
    }
    if (a->act != TETHER_ACT_NONE) {
        tether__sbuf_printf(&e->s, "\n * epilogue: %s", tether_act_name(a->act));
    }
    tether__sbuf_puts(&e->s, " */\n");
}

/* Parameter names of a node's function: p_<tensor>, made unique when a tensor repeats. */
static void param_names(const em *e, const tether_ir_node *nd, char names[][80]) {
    for (int i = 0; i <= nd->ninputs; i++) {
        int t = i < nd->ninputs ? nd->inputs[i] : nd->outputs[0];
        if (t < 0) {
            names[i][0] = 0;
            continue;
        }
        snprintf(names[i], 80, "p_%s", e->cname[t]);
        for (int j = 0; j < i; j++) {
            if (strcmp(names[j], names[i]) == 0) {
                snprintf(names[i], 80, "p_%s_%d", e->cname[t], i);
            }
        }
    }
}

int tether__c_node_nargs(const tether_ir_node *nd) {
    int n = 1;
    for (int i = 0; i < nd->ninputs; i++) {
        n += nd->inputs[i] >= 0;
    }
    return n;
}

/* Makes sc the schedule of the kernels emitted next (register blocks resolved by the register
 * file: 32 vector registers with AVX-512). */
void tether__c_use_schedule(em *e, const tether_schedule *sc) {
    e->sc = sc;
    e->conv_mr = sc->conv_oc_block ? sc->conv_oc_block : e->vw >= 16 ? 8 : 4;
    e->gemm_mr = sc->gemm_rows ? sc->gemm_rows : e->vw >= 16 ? 8 : 4;
}

/* The tuned schedule for node idx's workload, or NULL. */
static const tether_schedule *node_schedule(const em *e, int idx) {
    if (!e->o->nnode_schedules || !tether_workload_tunable(e->g, idx)) {
        return NULL;
    }
    char key[TETHER_WORKLOAD_MAX];
    if (tether_workload_key(e->g, idx, key, sizeof key)) {
        return NULL;
    }
    for (int i = 0; i < e->o->nnode_schedules; i++) {
        const tether_node_schedule *ns = &e->o->node_schedules[i];
        if (ns->workload && strcmp(ns->workload, key) == 0) {
            return &ns->schedule;
        }
    }
    return NULL;
}

void tether__c_emit_op_function(em *e, int idx) {
    const tether_ir_node *nd = &e->g->nodes[idx];
    const char *fn = e->fname[idx];
    char names[TETHER_IR_MAX_INPUTS + 1][80];
    param_names(e, nd, names);
    kargs k;
    memset(&k, 0, sizeof k);
    int nmain = tether__ir_main_inputs(nd);
    for (int i = 0; i < nd->ninputs; i++) {
        const char *nm = nd->inputs[i] >= 0 ? names[i] : NULL;
        if (i < nmain || !nd->attrs.has_residual) { /* also live extents, after the data */
            k.in[i] = nm;
        } else {
            k.res = nm;
        }
    }
    k.out = names[nd->ninputs];
    op_comment(e, nd);
    /* The kernel: static, restrict-qualified pointers, the same code for both ABIs. The graph
     * calls it directly; the operator's public function (registry) checks and forwards. Never
     * inlined: its pointers stay restrict parameters (inlined into the graph, whose pointers
     * all come from the workspace, gcc may lose that and emit memmove or scalar loops), and
     * the code exists once however many callers it has. */
    /* a DATA kernel returns its status (an index out of range), every other one nothing */
    bool fails = tether__op_info_of(nd->op)->kind == TETHER__OPK_DATA;
    tether__sbuf_printf(&e->s, "static __attribute__((noinline)) %s %s(",
                        fails ? "int32_t" : "void", e->kname[idx]);
    int first = 1;
    for (int i = 0; i < nd->ninputs; i++) {
        if (nd->inputs[i] < 0) {
            continue;
        }
        tether__sbuf_printf(&e->s, "%sconst %s *restrict %s", first ? "" : ", ",
                            ctype(e, nd->inputs[i]), names[i]);
        first = 0;
    }
    tether__sbuf_printf(&e->s, "%s%s *restrict %s) {\n", first ? "" : ", ",
                        ctype(e, nd->outputs[0]), names[nd->ninputs]);
    e->depth = 1;
    const tether_schedule *tuned = node_schedule(e, idx);
    e->ntunable += tether_workload_tunable(e->g, idx);
    if (tuned) {
        tether__c_use_schedule(e, tuned);
        e->ntuned++;
    }
    tether__c_kernel_body(e, nd, &k);
    if (tuned) {
        tether__c_use_schedule(e, &e->o->schedule);
    }
    e->depth = 0;
    tether__sbuf_puts(&e->s, "}\n\n");
    if (e->o->abi == TETHER_ABI_UNPACKED) {
        tether__sbuf_printf(&e->s, "int32_t %s(", fn);
        first = 1;
        for (int i = 0; i < nd->ninputs; i++) {
            if (nd->inputs[i] < 0) {
                continue;
            }
            tether__sbuf_printf(&e->s, "%sconst %s *restrict %s", first ? "" : ", ",
                                ctype(e, nd->inputs[i]), names[i]);
            first = 0;
        }
        tether__sbuf_printf(&e->s, "%s%s *restrict %s) {\n", first ? "" : ", ",
                            ctype(e, nd->outputs[0]), names[nd->ninputs]);
        e->depth = 1;
        for (int d = 0; d < e->depth; d++) {
            tether__sbuf_puts(&e->s, "    ");
        }
        tether__sbuf_printf(&e->s, "%s%s(", fails ? "return " : "", e->kname[idx]);
        first = 1;
        for (int i = 0; i <= nd->ninputs; i++) {
            if (i < nd->ninputs && nd->inputs[i] < 0) {
                continue;
            }
            tether__sbuf_printf(&e->s, "%s%s", first ? "" : ", ", names[i]);
            first = 0;
        }
        tether__sbuf_puts(&e->s, ");\n");
    } else {
        int nargs = tether__c_node_nargs(nd);
        tether__sbuf_printf(
            &e->s,
            "int32_t %s(tether_value *args, int32_t *type_codes, int32_t num_args,\n"
            "        tether_value *ret, int32_t *ret_type_code, void "
            "*resource_handle) {\n",
            fn);
        e->depth = 1;
        line(e, "(void)ret;");
        line(e, "(void)ret_type_code;");
        line(e, "(void)resource_handle;");
        line(e, "if (num_args != %d) {", nargs);
        line(e, "    return tg_fail(\"%s\", num_args, \"argument count differs from %d\");", fn,
             nargs);
        line(e, "}");
        int a = 0;
        for (int i = 0; i <= nd->ninputs; i++) {
            int t = i < nd->ninputs ? nd->inputs[i] : nd->outputs[0];
            if (t < 0) {
                continue;
            }
            line(e, "if (tg_check(\"%s\", args, type_codes, %d, %d, %s_shape_%s, %d, %d) != 0) {",
                 fn, a, T(e, t)->ndim, e->P, e->cname[t], T(e, t)->dtype.code, T(e, t)->dtype.bits);
            line(e, "    return -6;");
            line(e, "}");
            a++;
        }
        for (int d = 0; d < e->depth; d++) {
            tether__sbuf_puts(&e->s, "    ");
        }
        tether__sbuf_printf(&e->s, "%s%s(", fails ? "return " : "", e->kname[idx]);
        a = 0;
        for (int i = 0; i <= nd->ninputs; i++) {
            int t = i < nd->ninputs ? nd->inputs[i] : nd->outputs[0];
            if (t < 0) {
                continue;
            }
            tether__sbuf_printf(&e->s, "%s(%s%s *)tg_data(args, %d)", a ? ", " : "",
                                i < nd->ninputs ? "const " : "", ctype(e, t), a);
            a++;
        }
        tether__sbuf_puts(&e->s, ");\n");
    }
    if (!fails) {
        line(e, nd->op == TETHER_OP_CUSTOM ? "return tg_custom_rc;" : "return 0;");
    }
    e->depth = 0;
    tether__sbuf_puts(&e->s, "}\n\n");
}

void tether__c_emit_graph(em *e) {
    const tether_ir_graph *g = e->g;
    tether__sbuf_printf(&e->s, "/* The operators in execution order. */\nstatic int32_t %s_graph(",
                        e->P);
    for (int i = 0; i < g->ninputs; i++) {
        tether__sbuf_printf(&e->s, "const %s *p_%s, ", ctype(e, g->inputs[i]),
                            e->cname[g->inputs[i]]);
    }
    for (int i = 0; i < g->noutputs; i++) {
        tether__sbuf_printf(&e->s, "%s *p_%s, ", ctype(e, g->outputs[i]), e->cname[g->outputs[i]]);
    }
    if (!e->plan->pool_args) {
        tether__sbuf_puts(&e->s, "uint8_t *ws) {\n");
    } else {
        for (int k = 0; k < e->plan->npools; k++) {
            tether__sbuf_printf(&e->s, "%suint8_t *pool_%s", k ? ", " : "",
                                e->plan->pools[k].cname);
        }
        tether__sbuf_puts(&e->s, ") {\n");
    }
    e->depth = 1;
    if (!e->plan->pool_args && e->plan->workspace_size == 0) {
        line(e, "(void)ws;");
    }
    for (int k = 0; e->plan->pool_args && k < e->plan->npools; k++) {
        if (e->plan->pools[k].ntensors == 0) {
            line(e, "(void)pool_%s; /* nothing placed in it */", e->plan->pools[k].cname);
        }
    }
    /* inputs no node reads and empty tensors (no code touches them) */
    for (int i = 0; i < g->ninputs + g->noutputs; i++) {
        int t = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
        int used = planned_io(e, t);
        for (int k = 0; k < g->nnodes && !used; k++) {
            const tether_ir_node *nd = &g->nodes[k];
            for (int j = 0; j <= nd->ninputs && !used; j++) {
                int u = j < nd->ninputs ? nd->inputs[j] : nd->outputs[0];
                used = u >= 0 && (u == t || T(e, u)->alias_of == t) &&
                       tether__c_node_has_function(g, nd);
            }
        }
        if (!used) {
            line(e, "(void)p_%s;", e->cname[t]);
        }
    }
    if (!e->o->link_params) {
        line(e, "if (%s_params == 0) {", e->P);
        line(e, "    return -8; /* TETHER_ERR_STATE: %s_set_params was not called */", e->P);
        line(e, "}");
    }
    for (int i = 0; i < g->nnodes; i++) { /* a kernel's code when a count is above its bound */
        if (tether__ir_is_dynamic_op(g->nodes[i].op) &&
            tether__c_node_has_function(g, &g->nodes[i])) {
            line(e, "int32_t tg_rc = 0;");
            break;
        }
    }
    char pv[64];
    for (int i = 0; i < g->ninputs; i++) { /* planned inputs: in place, or copied in */
        int t = g->inputs[i];
        if (planned_io(e, t)) {
            pool_var(e, e->plan->pool[t], pv, sizeof pv);
            long long off = (long long)e->plan->offset[t];
            line(e, "if (p_%s != 0 && (const void *)p_%s != (const void *)(%s + %lld)) {",
                 e->cname[t], e->cname[t], pv, off);
            line(e, "    memcpy(%s + %lld, p_%s, %zu);", pv, off, e->cname[t],
                 tether_ir_tensor_bytes(T(e, t)));
            line(e, "}");
        }
    }
    for (int i = 0, slot = 0; i < g->nnodes; i++) {
        const tether_ir_node *nd = &g->nodes[i];
        if (tether__ir_is_loop_op(nd->op)) {
            tether__c_loop(e, i);
            continue;
        }
        if (!tether__c_node_has_function(g, nd)) {
            if (tether_ir_tensor_elements(T(e, nd->outputs[0])) == 0) {
                line(e, "/* %s: %s is empty (no code) */", tether__cg_comment_text(nd->name),
                     tether__cg_comment_text(T(e, nd->outputs[0])->name));
            } else {
                line(e, "/* %s: %s is an alias of %s (no code) */",
                     tether__cg_comment_text(nd->name),
                     tether__cg_comment_text(T(e, nd->outputs[0])->name),
                     tether__cg_comment_text(T(e, nd->inputs[0])->name));
            }
            continue;
        }
        char ptr[160];
        tether__c_profile_node(e, slot, 0);
        for (int d = 0; d < e->depth; d++) {
            tether__sbuf_puts(&e->s, "    ");
        }
        bool fails = tether__op_info_of(nd->op)->kind == TETHER__OPK_DATA;
        /* data-dependent sizes (emit_c_dynamic.c): the kernel's own code is returned */
        bool dyn = tether__ir_is_dynamic_op(nd->op);
        tether__sbuf_printf(&e->s, "%s%s(",
                            dyn     ? "if ((tg_rc = "
                            : fails ? "if ("
                                    : "",
                            e->kname[i]);
        int first = 1;
        for (int j = 0; j <= nd->ninputs; j++) {
            int t = j < nd->ninputs ? nd->inputs[j] : nd->outputs[0];
            if (t < 0) {
                continue;
            }
            tether__c_tensor_ptr(e, t, ptr, sizeof ptr);
            tether__sbuf_printf(&e->s, "%s%s", first ? "" : ", ", ptr);
            first = 0;
        }
        tether__sbuf_puts(&e->s, dyn ? ")) != 0) {\n" : fails ? ") != 0) {\n" : ");\n");
        if (dyn) {
            line(e, "    return tg_rc; /* -4 TETHER_ERR_LIMIT: a count above its bound */");
            line(e, "}");
        } else if (fails) {
            line(e, "    return -1; /* TETHER_ERR_INVALID_ARG: an index out of range */");
            line(e, "}");
        }
        if (nd->op == TETHER_OP_CUSTOM) { /* the user's function returned its status */
            line(e, "if (tg_custom_rc != 0) {");
            line(e, "    return tg_custom_rc;");
            line(e, "}");
        }
        tether__c_profile_node(e, slot++, 1);
    }
    for (int i = 0; i < g->noutputs; i++) { /* planned outputs: copied out when asked for */
        int t = g->outputs[i];
        if (planned_io(e, t) && T(e, t)->kind != TETHER_TENSOR_INPUT) {
            pool_var(e, e->plan->pool[t], pv, sizeof pv);
            long long off = (long long)e->plan->offset[t];
            line(e, "if (p_%s != 0 && (void *)p_%s != (void *)(%s + %lld)) {", e->cname[t],
                 e->cname[t], pv, off);
            line(e, "    memcpy(p_%s, %s + %lld, %zu);", e->cname[t], pv, off,
                 tether_ir_tensor_bytes(T(e, t)));
            line(e, "}");
        }
    }
    line(e, "return 0;");
    e->depth = 0;
    tether__sbuf_puts(&e->s, "}\n\n");
}

/* Every knob of sc in its range; `workload` names a tuned node schedule in the message. */
int tether__c_schedule_check(const tether_schedule *sc, const char *workload) {
    char who[TETHER_WORKLOAD_MAX + 48] = "";
    if (workload) {
        snprintf(who, sizeof who, "node schedule for '%s': ", workload);
    }
    if (sc->vector_width != -1 && sc->vector_width != 0 && sc->vector_width != 4 &&
        sc->vector_width != 8 && sc->vector_width != 16) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%sschedule vector_width %d: 0 (scalar), 4, 8, 16 or -1 (default)",
                                who, sc->vector_width);
    }
    if (sc->conv_oc_block < 0 || sc->conv_oc_block > 8 || sc->conv_col_vectors < 1 ||
        sc->conv_col_vectors > 4 || sc->dw_col_vectors < 1 || sc->dw_col_vectors > 8 ||
        sc->gemv_rows < 1 || sc->gemv_rows > 8 || sc->gemm_rows < 0 || sc->gemm_rows > 8 ||
        sc->gemm_col_vectors < 1 || sc->gemm_col_vectors > 4 ||
        (sc->channel_block != -1 && sc->channel_block != 0 && sc->channel_block != 4 &&
         sc->channel_block != 8 && sc->channel_block != 16) ||
        sc->nchwc_oc_vectors < 0 || sc->nchwc_oc_vectors > 8 || sc->nchwc_pixels < 0 ||
        sc->nchwc_pixels > 16 || sc->nchwc_dw_pixels < 1 || sc->nchwc_dw_pixels > 16 ||
        sc->local_size < 0 || sc->local_size > 1024) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%sschedule conv_oc_block %d (0..8), conv_col_vectors %d (1..4), "
                                "dw_col_vectors %d (1..8), gemv_rows %d (1..8), gemm_rows %d "
                                "(0..8), gemm_col_vectors %d (1..4), channel_block %d (-1, 0, "
                                "4, 8, 16), nchwc_oc_vectors %d (0..8), nchwc_pixels %d "
                                "(0..16), nchwc_dw_pixels %d (1..16), local_size %d (0..1024) "
                                "out of range",
                                who, sc->conv_oc_block, sc->conv_col_vectors, sc->dw_col_vectors,
                                sc->gemv_rows, sc->gemm_rows, sc->gemm_col_vectors,
                                sc->channel_block, sc->nchwc_oc_vectors, sc->nchwc_pixels,
                                sc->nchwc_dw_pixels, sc->local_size);
    }
    return TETHER_OK;
}
