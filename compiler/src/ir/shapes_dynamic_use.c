/*
 * Readers of a tensor dynamic along dimension 0 beyond the elementwise ones, gather and reshapes
 * (shapes_dynamic.c's consumer_input hands them over; docs/onnx.md, "Data-dependent output
 * sizes"): a run-time Loop's scan output, a NonZero/Compress/Unique result, feeding a reduction,
 * softmax, transpose, matmul, gemm or concat.
 *
 * Row readers keep dimension 0 as their output's dimension 0 and compute each output row from
 * the same input row only, so every row of the bound computes safely and the first rows are the
 * actual ones (the output is dynamic along dimension 0 with the root's extent): a reduction over
 * axes without 0, softmax/log_softmax/hardmax along another axis, a transpose with perm[0] = 0,
 * matmul or gemm whose dynamic operand is the left one (rows of A; B static of rank <= 2), concat
 * along another axis, and binary operators, of inputs that all derive from one root.
 * Counted readers: every reduction over axes with 0 (a mean, max, min, prod, or a sum of any
 * padding) gets input 1, the root's extent (an extent node added after inference,
 * tether__ir_dyn_wire_counts), and its kernels read the live rows only (interp_reduce.c,
 * emit_c_reduce.c); its output is static. A reduce has input 1 only then
 * (tether__ir_check_dynamic refuses any other).
 *
 * Readers by the live extent (transpose moving the dynamic dimension, concat/gather/slice along
 * it: shapes_dynamic_live.c) get the extents of their dynamic inputs appended by
 * tether__ir_dyn_wire_counts too (wire_live, mode | TETHER__DYN_LIVE).
 *
 * What must stay true: a reader accepted here never lets a row past the extent reach an actual
 * output row (row readers) or a value (counted readers: live rows only); anything else that is
 * not a reader by the live extent stays refused by tether__ir_check_dynamic, naming the node.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/ir.h"

/* Whether axis 0 of a rank-`rank` input is among node n's reduce axes (none given: all). */
static bool reduces_axis0(const tether_ir_node *n, int rank) {
    if (n->attrs.nints == 0) {
        return true;
    }
    for (int i = 0; i < n->attrs.nints; i++) {
        if (tether__ir_norm_axis(n->attrs.ints[i], rank) == 0) {
            return true;
        }
    }
    return false;
}

/* Whether all dynamic inputs of n derive from one root, and how many there are. */
static bool one_root(const tether_ir_graph *g, const tether_ir_node *n, int *ndyn) {
    int root = -1;
    *ndyn = 0;
    for (int j = 0; j < n->ninputs; j++) {
        const tether_ir_tensor *t = tether__ir_in(g, n, j);
        if (t && t->dyn_dim > 0) {
            int r = tether__ir_dyn_root(g, n->inputs[j]);
            if (r < 0 || (root >= 0 && r != root)) {
                return false;
            }
            root = r;
            ++*ndyn;
        }
    }
    return *ndyn > 0;
}

int tether__ir_dyn_row_reader(const tether_ir_graph *g, const tether_ir_node *n, int dyn) {
    const tether_ir_tensor *x = tether__ir_in(g, n, dyn), *o = &g->tensors[n->outputs[0]];
    int ndyn, kind = tether__op_info_of(n->op)->kind;
    if (n->noutputs != 1 || x->dyn_dim != 1 || x->ndim < 1 || o->ndim < 1 ||
        o->shape[0] != x->shape[0] || !one_root(g, n, &ndyn)) {
        return -2;
    }
    bool ok = false;
    if (kind == TETHER__OPK_BINARY && n->ninputs == 2 && ndyn == 2) {
        const tether_ir_tensor *a = tether__ir_in(g, n, 0), *b = tether__ir_in(g, n, 1);
        ok = a->ndim == o->ndim && b->ndim == o->ndim; /* both rows [bound, ...] */
    } else if (kind == TETHER__OPK_REDUCE && ndyn == 1) {
        ok = !reduces_axis0(n, x->ndim);
    } else if (kind == TETHER__OPK_SOFTMAX && ndyn == 1) {
        ok = tether__ir_norm_axis(n->attrs.axis, x->ndim) > 0;
    } else if (kind == TETHER__OPK_TRANSPOSE && ndyn == 1) {
        ok = n->attrs.nints == x->ndim && n->attrs.ints[0] == 0;
    } else if ((kind == TETHER__OPK_MATMUL || kind == TETHER__OPK_DENSE) && ndyn == 1 && dyn == 0) {
        const tether_ir_tensor *b = tether__ir_in(g, n, 1);
        ok = x->ndim >= 2 && b->ndim <= 2 && !(kind == TETHER__OPK_DENSE && n->attrs.trans_a);
        /* gemm's bias C (static) broadcasts along the rows: one row, or none */
        const tether_ir_tensor *c = n->ninputs > 2 ? tether__ir_in(g, n, 2) : NULL;
        ok = ok && (!c || c->ndim < 2 || c->shape[0] == 1);
    } else if (kind == TETHER__OPK_CONCAT && ndyn == n->ninputs) {
        ok = tether__ir_norm_axis(n->attrs.axis, x->ndim) > 0;
    }
    return ok ? n->inputs[dyn] : -2;
}

bool tether__ir_dyn_counted(const tether_ir_graph *g, const tether_ir_node *n) {
    if (tether__op_info_of(n->op)->kind != TETHER__OPK_REDUCE || n->ninputs != 2) {
        return false;
    }
    const tether_ir_tensor *x = tether__ir_in(g, n, 0), *c = tether__ir_in(g, n, 1);
    return x && c && x->dyn_dim == 1 && reduces_axis0(n, x->ndim) && c->dyn_dim == -1 &&
           c->ndim == 1 && c->shape[0] == 1;
}

/* The extent node of root node r (same operator, mode | count; unique's reads x alone, nms' the
 * rows of its node): an existing one, else a new one; its output tensor in *out. */
static int extent_of_root(tether_ir_graph *g, int r, int *out) {
    tether_ir_node root = g->nodes[r];
    int nin = root.op == TETHER_OP_UNIQUE || root.op == TETHER_OP_NMS ? 1 : root.ninputs;
    int nkey = tether__ir_extent_key_inputs(&root);
    int in[TETHER_IR_MAX_INPUTS];
    memcpy(in, root.inputs, sizeof(int) * (size_t)root.ninputs);
    if (root.op == TETHER_OP_NMS) {
        in[0] = root.outputs[0];
    }
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *q = &g->nodes[i];
        bool same = q->op == root.op && (q->attrs.mode & TETHER__DYN_COUNT) &&
                    tether__ir_extent_key_inputs(q) == nkey &&
                    tether__ir_extent_attrs_equal(&root.attrs, &q->attrs);
        for (int j = 0; same && j < nkey; j++) {
            same = q->inputs[j] == in[j];
        }
        if (same) {
            *out = q->outputs[0];
            return TETHER_OK;
        }
    }
    char name[512];
    for (int k = 0; k < 1000; k++) {
        snprintf(name, sizeof name, k ? "%s_live%d" : "%s_live", g->tensors[root.outputs[0]].name,
                 k);
        if (tether_ir_find_tensor(g, name) < 0) {
            break;
        }
    }
    tether_ir_attrs a = root.attrs;
    a.mode |= TETHER__DYN_COUNT;
    int64_t one = 1;
    int rc = tether_ir_add_tensor(g, name, TETHER_INT64, 1, &one, out);
    return rc ? rc : tether_ir_add_node(g, name, root.op, in, nin, out, 1, &a, NULL);
}

/* Node i reads dynamic inputs through their live extents (shapes_dynamic_live.c): one extent
 * input per dynamic data input, after them; unwired when an input has no root (then
 * tether__ir_live_check refuses the node, naming it). */
static int wire_live(tether_ir_graph *g, int i) {
    int k = g->nodes[i].ninputs, ext[TETHER_IR_MAX_INPUTS], m = 0;
    for (int j = 0; j < k; j++) {
        int t = g->nodes[i].inputs[j];
        if (t < 0 || g->tensors[t].dyn_dim <= 0) {
            continue;
        }
        int r = tether__ir_dyn_root(g, t), rc;
        if (r < 0) {
            return TETHER_OK;
        }
        if (k + m >= TETHER_IR_MAX_INPUTS) {
            return tether__ir_node_error(&g->nodes[i], TETHER_ERR_LIMIT,
                                         "%d inputs and %d live extents are more than the %d "
                                         "inputs a node takes",
                                         k, m + 1, TETHER_IR_MAX_INPUTS);
        }
        if ((rc = extent_of_root(g, r, &ext[m++]))) {
            return rc;
        }
    }
    tether_ir_node *n = &g->nodes[i]; /* extent_of_root may move the nodes */
    for (int j = 0; j < m; j++) {
        n->inputs[k + j] = ext[j];
    }
    n->ninputs = k + m;
    n->attrs.k = k;
    n->attrs.mode |= TETHER__DYN_LIVE;
    return TETHER_OK;
}

int tether__ir_dyn_wire_counts(tether_ir_graph *g, bool *changed) {
    *changed = false;
    int nn = g->nnodes;
    for (int i = 0; i < nn; i++) {
        const tether_ir_node *n = &g->nodes[i];
        if (!tether__ir_live_wired(n) && tether__ir_dyn_live(g, n, NULL) >= 0) {
            int rc = wire_live(g, i);
            if (rc) {
                return rc;
            }
            *changed |= tether__ir_live_wired(&g->nodes[i]);
            continue;
        }
        const tether_ir_tensor *x = n->ninputs == 1 ? tether__ir_in(g, n, 0) : NULL;
        if (tether__op_info_of(n->op)->kind != TETHER__OPK_REDUCE || !x || x->dyn_dim != 1 ||
            !reduces_axis0(n, x->ndim)) {
            continue;
        }
        int r = tether__ir_dyn_root(g, n->inputs[0]), e = -1, rc;
        if (r < 0) {
            continue; /* refused by tether__ir_check_dynamic, naming the node */
        }
        if ((rc = extent_of_root(g, r, &e))) {
            return rc;
        }
        g->nodes[i].inputs[1] = e;
        g->nodes[i].ninputs = 2;
        *changed = true;
    }
    return TETHER_OK;
}
