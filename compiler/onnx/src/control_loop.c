/*
 * ONNX Loop whose trip count or condition is known only at run time (control.c unrolls the
 * others): a run-time loop of the IR (ops.def loop_begin .. loop_end; docs/onnx.md, "Control
 * flow"). The body is converted inline once, between a loop_begin (its output: the iteration
 * number, the body's first formal) and a loop_end (stores the next loop-carried values, reads the
 * body's condition, jumps back); each loop-carried value is a loop_state (the initial value at
 * iteration 0, then what loop_end stored), each Loop output a loop_result (the initial value when
 * no iteration ran). Outer-scope values are read directly (the memory plan keeps them live over
 * the loop); a loop nested in another one's body takes the outer iteration number as an input,
 * so it stays inside the outer body. A scan output is a loop_scan in the body (row `iteration` of
 * a buffer of `bound` rows, the constant trip count) and a loop_stack after the loop: a tensor
 * dynamic along dimension 0 whose extent, the iterations run, is the graph output
 * `<name>_extent` when it is one (ir/shapes_dynamic.c). Without a constant trip count the rows
 * are an upper bound of M's values (control_bound.c) or the user's --loop-max (the smaller of
 * the two); running past them is TETHER_ERR_LIMIT at run time (loop_scan's check).
 *
 * What must stay true: a next value loop_end stores is never the storage of another state (a
 * state passed on, swapped, or reshaped, is copied first: loop_copy); scan outputs of a loop with
 * no bound on its iterations (no constant trip count, no bound of M's values, no --loop-max)
 * are refused naming the Loop and saying how to bound it; every refusal names the node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* Whether IR tensor t is written by a reshape-like node (it would share another's storage). */
static bool alias_made(const timport *c, int t) {
    for (int i = c->g->nnodes - 1; i >= 0; i--) {
        const tether_ir_node *nd = &c->g->nodes[i];
        if (nd->outputs[0] == t) {
            return nd->op == TETHER_OP_RESHAPE || nd->op == TETHER_OP_FLATTEN ||
                   nd->op == TETHER_OP_SQUEEZE || nd->op == TETHER_OP_UNSQUEEZE;
        }
    }
    return false;
}

/* The IR tensor of condition b as a bool scalar: a host constant (computed ones are int64 or
 * float) becomes a bool constant of its truth value. */
static int bool_tensor_of(timport *c, bindv *b, const char *suffix) {
    if (b->tensor < 0 && b->k) {
        hconst *k = tonnx_hconst_new(c, true, 0, NULL);
        if (!k) {
            return TETHER_ERR_LIMIT;
        }
        ((int64_t *)k->data)[0] =
            b->k->count > 0 && (b->k->is_int ? ((const int64_t *)b->k->data)[0] != 0
                                             : ((const float *)b->k->data)[0] != 0.0f);
        k->dt = TETHER_BOOL;
        b->k = k;
    }
    return tonnx_tensor_of(c, b, suffix);
}

void tonnx_loop_rollback(timport *c, int ntensors, int nnodes) {
    tether_ir_graph *g = c->g;
    for (int i = nnodes; i < g->nnodes; i++) {
        free(g->nodes[i].name);
    }
    g->nnodes = nnodes < g->nnodes ? nnodes : g->nnodes;
    for (int i = ntensors; i < g->ntensors; i++) {
        free(g->tensors[i].name);
        free(g->tensors[i].data);
    }
    g->ntensors = ntensors < g->ntensors ? ntensors : g->ntensors;
    for (int i = 0; i < c->nv; i++) {
        if (c->v[i].tensor >= ntensors) {
            c->v[i].tensor = -1;
        }
    }
}

int tonnx_loop_region(timport *c, const Onnx__NodeProto *n, const Onnx__GraphProto *body,
                      int nstate, int nscan, int64_t bound) {
    const char *me = tonnx_node_name(c, c->cur);
    if (1 + 2 * nstate + 1 > TETHER_IR_MAX_INPUTS) {
        return tonnx_fail(c, TETHER_ERR_LIMIT,
                          "Loop '%s' has %d loop-carried values; a run-time loop carries at most "
                          "%d",
                          me, nstate, (TETHER_IR_MAX_INPUTS - 2) / 2);
    }
    int rc = TETHER_OK, save = c->cur, in[3], nin = 0;
    bool has_m = false;
    bindv m = tonnx_input_bind(c, n, 0, &rc);
    bindv cond = rc ? m : tonnx_input_bind(c, n, 1, &rc);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_LOOP_BEGIN, &a);
    if (!rc && (m.tensor >= 0 || m.k) && !(rc = tonnx_tensor_of(c, &m, "trip_const"))) {
        in[nin++] = m.tensor;
        a.mode |= 1;
        has_m = true;
    }
    if (!rc && (cond.tensor >= 0 || cond.k) && !(rc = bool_tensor_of(c, &cond, "cond_const"))) {
        in[nin++] = cond.tensor;
        a.mode |= 2;
    }
    if (!rc && nscan && bound < 1) { /* M's value-range bound, else the user's (capping it) */
        bound = has_m ? tonnx_loop_trip_bound(c, m.tensor) : -1;
        int64_t user = c->o ? c->o->loop_max : 0;
        bound = user > 0 && (bound < 1 || user < bound) ? user : bound;
        if (bound < 1) {
            return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                              "Loop '%s' runs a number of iterations known only at run time, so "
                              "the length of its %d scan output%s is not bounded at compile "
                              "time: pass --loop-max N (the most iterations it may run; "
                              "tether_model_load_options.loop_max), or give the trip count M as a "
                              "constant (an initializer, or bind the input to a value: tether "
                              "compile/run --in) or computed with a bound (e.g. Min(M, N))",
                              me, nscan, nscan == 1 ? "" : "s");
        }
    }
    if (c->loop_iter1 > 0) {
        in[nin++] = c->loop_iter1 - 1;
        a.mode |= 4;
    }
    bindv it = {-1, NULL};
    rc = rc ? rc : tonnx_emit_op(c, "loop_begin", TETHER_OP_LOOP_BEGIN, in, nin, &a, &it);
    bindv *v = calloc((size_t)(4 * nstate + 4 + 2 * nscan), sizeof *v);
    if (!v) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    bindv *v0 = v, *st = v0 + nstate, *formals = st + nstate, *outs = formals + nstate + 2;
    bindv *scan = outs + nstate + 1 + nscan; /* the loop_scan buffers */
    for (int i = 0; !rc && i < nstate; i++) {
        v0[i] = tonnx_input_bind(c, n, 2 + i, &rc);
        if (!rc && !(rc = tonnx_tensor_of(c, &v0[i], "init_const"))) {
            int si[2] = {v0[i].tensor, it.tensor};
            rc = tonnx_emit_op(c, "loop_state", TETHER_OP_LOOP_STATE, si, 2, NULL, &st[i]);
        }
    }
    if (!rc) {
        formals[0] = it;
        formals[1].tensor = -1;
        formals[1].k = tonnx_k_int(c, 1); /* the body runs only while the condition holds */
        rc = formals[1].k ? TETHER_OK : TETHER_ERR_LIMIT;
        memcpy(formals + 2, st, sizeof *st * (size_t)nstate);
    }
    if (!rc) {
        char prefix[400];
        snprintf(prefix, sizeof prefix, "%s/body/", me);
        int outer = c->loop_iter1;
        c->loop_iter1 = it.tensor + 1;
        rc = tonnx_inline_graph(c, body, prefix, formals, nstate + 2, outs, nstate + 1 + nscan);
        c->loop_iter1 = outer;
        c->cur = save;
    }
    int ein[TETHER_IR_MAX_INPUTS], k = 1 + 2 * nstate;
    ein[0] = it.tensor;
    for (int i = 0; !rc && i < nstate; i++) {
        bindv *nx = &outs[1 + i];
        if ((rc = tonnx_tensor_of(c, nx, "next_const"))) {
            break;
        }
        bool shared = alias_made(c, nx->tensor) || nx->tensor == it.tensor;
        for (int j = 0; j < nstate; j++) {
            shared |= j != i && nx->tensor == st[j].tensor;
        }
        if (shared) {
            rc = tonnx_emit_op(c, "loop_copy", TETHER_OP_LOOP_COPY, &nx->tensor, 1, NULL, nx);
        }
        ein[1 + i] = st[i].tensor;
        ein[1 + nstate + i] = nx->tensor;
    }
    for (int j = 0; !rc && j < nscan; j++) { /* row `iteration` of each scan buffer */
        bindv *sv = &outs[1 + nstate + j];
        if (!(rc = tonnx_tensor_of(c, sv, "scan_const"))) {
            int si[2] = {sv->tensor, it.tensor};
            tether_ir_attrs_init(TETHER_OP_LOOP_SCAN, &a);
            a.k = bound;
            rc = tonnx_emit_op(c, "loop_scan", TETHER_OP_LOOP_SCAN, si, 2, &a, &scan[j]);
        }
    }
    tether_ir_attrs_init(TETHER_OP_LOOP_END, &a);
    a.k = nstate;
    bool cond_true = outs[0].k && outs[0].k->count == 1 &&
                     (outs[0].k->is_int ? ((const int64_t *)outs[0].k->data)[0] != 0
                                        : ((const float *)outs[0].k->data)[0] != 0.0f);
    if (!rc && cond_true && !has_m) {
        rc = tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                        "Loop '%s' has no trip count and its body's condition is always true: it "
                        "would never end (give a trip count M, or compute the condition)",
                        me);
    }
    if (!rc && !cond_true && !(rc = bool_tensor_of(c, &outs[0], "cond_const"))) {
        ein[k++] = outs[0].tensor;
        a.mode |= 2;
    }
    bindv count = {-1, NULL};
    rc = rc ? rc : tonnx_emit_op(c, "loop_end", TETHER_OP_LOOP_END, ein, k, &a, &count);
    for (int i = 0; !rc && i < nstate; i++) {
        int ri[3] = {st[i].tensor, count.tensor, v0[i].tensor};
        bindv o;
        if (!(rc = tonnx_emit_op(c, "loop_result", TETHER_OP_LOOP_RESULT, ri, 3, NULL, &o))) {
            tonnx_set_output(c, n, i, o);
        }
    }
    for (int j = 0; !rc && j < nscan; j++) { /* the rows written, dynamic along dimension 0 */
        int ri[2] = {scan[j].tensor, count.tensor};
        bindv o;
        if (!(rc = tonnx_emit_op(c, "loop_stack", TETHER_OP_LOOP_STACK, ri, 2, NULL, &o))) {
            tonnx_set_output(c, n, nstate + j, o);
        }
    }
    free(v);
    return rc;
}
