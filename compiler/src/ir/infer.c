/*
 * Validation, topological ordering and dtype inference of the IR, plus the IR printer; the
 * per-operator shape rules are in shapes.c, the typing rules in types.c.
 *
 * What must stay true: after tether_ir_infer returns 0, nodes are in a valid execution order,
 * every tensor has ndim >= 0 and a known shape, every tensor is written by at most one node,
 * producer/alias_of are set, and every operator's attributes are in range. Kernels, the
 * interpreter and the emitters rely on these facts and do not re-check them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "tether/custom_ops.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/ir.h"

static bool is_kind(tether_op op, tether__op_kind kind) {
    const tether__op_info *info = tether__op_info_of(op);
    return info && info->kind == kind;
}

int tether__ir_is_alias_op(tether_op op) {
    return is_kind(op, TETHER__OPK_ALIAS);
}

int tether__ir_is_unary(tether_op op) {
    return is_kind(op, TETHER__OPK_UNARY);
}

int tether__ir_is_binary(tether_op op) {
    return is_kind(op, TETHER__OPK_BINARY);
}

int tether__ir_norm_axis(int64_t axis, int ndim) {
    if (axis < 0) {
        axis += ndim;
    }
    if (axis < 0 || axis >= ndim) {
        return -1;
    }
    return (int)axis;
}

tether__ir_items tether__ir_items_of(const tether_ir_tensor *x, const tether_ir_attrs *a) {
    tether__ir_items it = {1, 1, 1};
    int ax = (a->mode & 4) ? tether__ir_norm_axis(a->axis, x->ndim) : -1;
    for (int d = 0; d < x->ndim; d++) {
        if (ax < 0) {
            it.m *= x->shape[d];
        } else if (d < ax) {
            it.outer *= x->shape[d];
        } else if (d == ax) {
            it.m = x->shape[d];
        } else {
            it.inner *= x->shape[d];
        }
    }
    return it;
}

int tether__ir_main_inputs(const tether_ir_node *n) {
    if (tether__ir_live_wired(n)) {
        return tether__ir_live_data_inputs(n); /* then the live extents (shapes_dynamic_live.c) */
    }
    return n->attrs.has_residual ? n->ninputs - 1 : n->ninputs;
}

void tether__ir_matmul_view(const tether_ir_graph *g, const tether_ir_node *n, tether_ir_tensor *a,
                            tether_ir_tensor *b, tether_ir_tensor *y) {
    const tether_ir_tensor *x = &g->tensors[n->inputs[0]], *z = &g->tensors[n->inputs[1]];
    *a = *x;
    *b = *z;
    *y = g->tensors[n->outputs[0]];
    if (a->ndim == 1) {
        a->ndim = 2;
        a->shape[0] = 1;
        a->shape[1] = x->shape[0];
    }
    if (b->ndim == 1) {
        b->ndim = 2;
        b->shape[0] = z->shape[0];
        b->shape[1] = 1;
    }
    int nd = 0;
    tether__ir_broadcast(a->shape, a->ndim - 2, b->shape, b->ndim - 2, y->shape, &nd);
    y->shape[nd] = a->shape[a->ndim - 2];
    y->shape[nd + 1] = b->shape[b->ndim - 1];
    y->ndim = nd + 2;
}

int tether__ir_broadcast(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out,
                         int *nout) {
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t da = i < n - na ? 1 : a[i - (n - na)];
        int64_t db = i < n - nb ? 1 : b[i - (n - nb)];
        if (da != db && da != 1 && db != 1) {
            return TETHER_ERR_MISMATCH;
        }
        out[i] = da == 1 ? db : da;
    }
    *nout = n;
    return TETHER_OK;
}

static int check_node_io(tether_ir_node *n) {
    const tether__op_info *info = tether__op_info_of(n->op);
    if (!info) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "node '%s': unknown operator %d", n->name,
                                (int)n->op);
    }
    int nin = tether__ir_main_inputs(n);
    if (nin < info->min_inputs || nin > info->max_inputs) {
        if (info->min_inputs == info->max_inputs) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "takes %d inputs, got %d",
                                         info->min_inputs, nin);
        }
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "takes %d to %d inputs, got %d",
                                     info->min_inputs, info->max_inputs, nin);
    }
    if (n->noutputs != 1) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "has %d outputs, expected 1",
                                     n->noutputs);
    }
    for (int i = 0; i < n->ninputs; i++) {
        int optional = ((i == 2 && (n->op == TETHER_OP_CONV2D || n->op == TETHER_OP_DENSE ||
                                    n->op == TETHER_OP_LAYER_NORM)) ||
                        (i >= 2 && tether__op_info_of(n->op)->kind == TETHER__OPK_QUANT) ||
                        (i >= 3 && (n->op == TETHER_OP_RNN || n->op == TETHER_OP_GRU ||
                                    n->op == TETHER_OP_LSTM))) &&
                       !(n->attrs.has_residual && i == n->ninputs - 1);
        if (n->inputs[i] < 0 && !optional) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "input %d is missing", i);
        }
    }
    if (n->attrs.act != TETHER_ACT_NONE || n->attrs.has_residual) {
        if (!info->epilogue) {
            return tether__ir_node_error(
                n, TETHER_ERR_UNSUPPORTED,
                "fused activation/residual only on conv2d, dense and matmul");
        }
        if ((int)n->attrs.act < 0 || (int)n->attrs.act >= TETHER_ACT_COUNT_) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "invalid fused activation %d",
                                         (int)n->attrs.act);
        }
    }
    return TETHER_OK;
}

/* Orders nodes so every input is produced before it is read; errors on double writers,
 * unproduced inputs and cycles. */
static int order_nodes(tether_ir_graph *g) {
    int nt = g->ntensors, nn = g->nnodes;
    int *producer = malloc(sizeof(int) * (size_t)(nt ? nt : 1));
    int *done = calloc((size_t)(nt ? nt : 1), sizeof(int));
    int *placed = calloc((size_t)(nn ? nn : 1), sizeof(int));
    tether_ir_node *sorted = malloc(sizeof(tether_ir_node) * (size_t)(nn ? nn : 1));
    int rc = TETHER_OK;
    if (!producer || !done || !placed || !sorted) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    for (int i = 0; i < nt; i++) {
        producer[i] = -1;
        done[i] = g->tensors[i].kind != TETHER_TENSOR_INTERMEDIATE;
    }
    for (int i = 0; i < nn; i++) {
        tether_ir_node *n = &g->nodes[i];
        for (int j = 0; j < n->noutputs; j++) {
            int t = n->outputs[j];
            if (g->tensors[t].kind != TETHER_TENSOR_INTERMEDIATE) {
                rc = tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "writes %s '%s'",
                                           g->tensors[t].kind == TETHER_TENSOR_INPUT ? "graph input"
                                                                                     : "constant",
                                           g->tensors[t].name);
                goto out;
            }
            if (producer[t] >= 0) {
                rc = tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                           "tensor '%s' is also written by '%s'",
                                           g->tensors[t].name, g->nodes[producer[t]].name);
                goto out;
            }
            producer[t] = i;
        }
    }
    for (int i = 0; i < nn; i++) {
        tether_ir_node *n = &g->nodes[i];
        for (int j = 0; j < n->ninputs; j++) {
            int t = n->inputs[j];
            if (t >= 0 && !done[t] && producer[t] < 0) {
                rc = tether__ir_node_error(
                    n, TETHER_ERR_INVALID_ARG,
                    "input '%s' is not a graph input, a constant or a node output",
                    g->tensors[t].name);
                goto out;
            }
        }
    }
    for (int i = 0; i < g->noutputs; i++) {
        const tether_ir_tensor *t = &g->tensors[g->outputs[i]];
        if (producer[g->outputs[i]] < 0) {
            rc = tether_set_error(TETHER_ERR_INVALID_ARG,
                                  "graph output '%s' is not produced by any node", t->name);
            goto out;
        }
    }
    int count = 0;
    while (count < nn) {
        int progress = 0;
        for (int i = 0; i < nn; i++) {
            if (placed[i]) {
                continue;
            }
            tether_ir_node *n = &g->nodes[i];
            int ready = 1;
            for (int j = 0; j < n->ninputs && ready; j++) {
                ready = n->inputs[j] < 0 || done[n->inputs[j]];
            }
            if (!ready) {
                continue;
            }
            placed[i] = 1;
            sorted[count++] = *n;
            for (int j = 0; j < n->noutputs; j++) {
                done[n->outputs[j]] = 1;
            }
            progress = 1;
        }
        if (!progress) {
            for (int i = 0; i < nn; i++) {
                if (!placed[i]) {
                    rc = tether__ir_node_error(&g->nodes[i], TETHER_ERR_INVALID_ARG,
                                               "is part of a cycle");
                    goto out;
                }
            }
        }
    }
    memcpy(g->nodes, sorted, sizeof(tether_ir_node) * (size_t)nn);
out:
    free(producer);
    free(done);
    free(placed);
    free(sorted);
    return rc;
}

static int check_elements(const tether_ir_graph *g) {
    for (int i = 0; i < g->ntensors; i++) {
        const tether_ir_tensor *t = &g->tensors[i];
        int64_t n = 1;
        for (int d = 0; d < t->ndim; d++) {
            if (t->shape[d] > INT32_MAX || (t->shape[d] && n > INT32_MAX / t->shape[d])) {
                return tether_set_error(TETHER_ERR_LIMIT,
                                        "tensor '%s' has more than 2^31-1 elements (the limit of "
                                        "generated code)",
                                        t->name);
            }
            n *= t->shape[d];
        }
    }
    return TETHER_OK;
}

/* Integer attributes are bounded so that shape arithmetic cannot overflow. */
static int check_attr_ranges(const tether_ir_node *n) {
    const tether_ir_attrs *a = &n->attrs;
    const int64_t lim = INT32_MAX;
    for (int i = 0; i < 2; i++) {
        if (a->kernel[i] > lim || a->strides[i] > lim || a->dilations[i] > lim ||
            a->scales[i] > 65536 || a->kernel[i] < -lim || a->strides[i] < -lim ||
            a->dilations[i] < -lim || a->scales[i] < -lim) {
            return tether__ir_node_error(n, TETHER_ERR_LIMIT,
                                         "kernel, strides, dilations or scales out of "
                                         "range");
        }
    }
    for (int i = 0; i < 4; i++) {
        if (a->pads[i] > lim || a->pads[i] < -lim) {
            return tether__ir_node_error(n, TETHER_ERR_LIMIT, "pads out of range");
        }
    }
    if (a->nwin < 0 || a->nwin > 3) {
        return tether__ir_node_error(n, TETHER_ERR_LIMIT, "%d window dimensions (1 to 3)", a->nwin);
    }
    for (int i = 0; i < 3; i++) {
        if (a->wkernel[i] > lim || a->wstrides[i] > lim || a->wdilations[i] > lim ||
            a->wkernel[i] < -lim || a->wstrides[i] < -lim || a->wdilations[i] < -lim ||
            a->wpads[i] > lim || a->wpads[i] < -lim || a->wpads[i + 3] > lim ||
            a->wpads[i + 3] < -lim) {
            return tether__ir_node_error(n, TETHER_ERR_LIMIT,
                                         "window kernel, strides, dilations or pads out of range");
        }
    }
    /* einsum: packed labels; rnn, gru, lstm: packed activations (checked by shapes_rnn.c) */
    bool packed = n->op == TETHER_OP_EINSUM || n->op == TETHER_OP_RNN || n->op == TETHER_OP_GRU ||
                  n->op == TETHER_OP_LSTM;
    for (int i = 0; i < a->nints && !packed; i++) {
        if (a->ints[i] > lim || a->ints[i] < -lim) {
            return tether__ir_node_error(
                n, TETHER_ERR_LIMIT, "integer list entry %lld out of range", (long long)a->ints[i]);
        }
    }
    for (int i = 0; i < TETHER_IR_MAX_NDIM; i++) {
        if (a->steps[i] > lim || a->steps[i] < -lim) {
            return tether__ir_node_error(n, TETHER_ERR_LIMIT, "steps out of range");
        }
    }
    if (a->k > lim || a->k < -lim || a->mode > lim || a->mode < -lim) {
        return tether__ir_node_error(n, TETHER_ERR_LIMIT, "k or mode out of range");
    }
    if (a->groups > lim || a->axis > lim || a->axis < -lim || a->nints < 0 ||
        a->nints > 2 * TETHER_IR_MAX_NDIM) {
        return tether__ir_node_error(n, TETHER_ERR_LIMIT,
                                     "groups, axis or list length out of range");
    }
    return TETHER_OK;
}

/* Infers the output shape of one node whose inputs have shapes: checks a declared output shape
 * and the output dtype, then sets the output's ndim and shape. */
static int infer_output(tether_ir_graph *g, tether_ir_node *n) {
    int64_t shape[TETHER_IR_MAX_NDIM];
    int ndim = 0;
    int rc = TETHER_OK;
    if (!tether__ir_live_shape(g, n, shape, &ndim, &rc)) { /* shapes_dynamic_live.c */
        rc = tether__ir_infer_shape(g, n, shape, &ndim);
    }
    if (rc) {
        return rc;
    }
    /* Empty tensors (an extent of 0) only flow into nodes with an empty output, which are no-ops:
     * no kernel ever reads from or writes to an empty tensor. */
    int64_t out_elems = 1;
    for (int d = 0; d < ndim; d++) {
        out_elems *= shape[d] ? 1 : 0;
    }
    for (int i = 0; i < n->ninputs && out_elems; i++) {
        const tether_ir_tensor *t = tether__ir_in(g, n, i);
        int empty = 0; /* an extent of 0 (not a product, which could wrap to 0) */
        for (int d = 0; t && d < t->ndim; d++) {
            empty |= t->shape[d] == 0;
        }
        if (empty) {
            return tether__ir_node_error(
                n, TETHER_ERR_UNSUPPORTED,
                "input '%s' is empty (an extent of 0) but the output is not: "
                "empty tensors only flow into empty outputs",
                t->name);
        }
    }
    if (n->attrs.has_residual) {
        const tether_ir_tensor *r = &g->tensors[n->inputs[n->ninputs - 1]];
        if (r->ndim != ndim || memcmp(r->shape, shape, sizeof(int64_t) * (size_t)ndim)) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "residual input '%s' differs in shape from the output",
                                         r->name);
        }
    }
    tether_ir_tensor *o = &g->tensors[n->outputs[0]];
    if (o->ndim != TETHER_IR_SHAPE_UNKNOWN &&
        (o->ndim != ndim || memcmp(o->shape, shape, sizeof(int64_t) * (size_t)ndim) != 0)) {
        char s1[96], s2[96];
        tether__shape_text(s1, sizeof s1, o->shape, o->ndim);
        tether__shape_text(s2, sizeof s2, shape, ndim);
        return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                     "output '%s' is declared %s but the inputs give %s", o->name,
                                     s1, s2);
    }
    DLDataType ot;
    if ((rc = tether__ir_infer_dtype(g, n, &ot))) {
        return rc;
    }
    if (n->attrs.has_residual &&
        !tether_dtype_equal(g->tensors[n->inputs[n->ninputs - 1]].dtype, ot)) {
        return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                     "residual input '%s' differs in element type from the output",
                                     g->tensors[n->inputs[n->ninputs - 1]].name);
    }
    if ((n->attrs.mode & TETHER__DYN_COUNT) &&
        (n->op == TETHER_OP_SLICE || n->op == TETHER_OP_CONCAT)) {
        ot = TETHER_INT64; /* the extent node of a live slice or concat */
    }
    o->dtype = ot;
    o->ndim = ndim;
    memcpy(o->shape, shape, sizeof(int64_t) * (size_t)ndim);
    o->dyn_dim = tether__ir_dyn_dim(g, n);
    return TETHER_OK;
}

int tether_ir_infer_node(tether_ir_graph *g, int index) {
    if (index < 0 || index >= g->nnodes) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "node index %d out of range", index);
    }
    tether_ir_node *n = &g->nodes[index];
    int rc;
    if ((rc = check_node_io(n)) || (rc = check_attr_ranges(n))) {
        return rc;
    }
    for (int i = 0; i < n->ninputs; i++) {
        if (n->inputs[i] >= 0 && g->tensors[n->inputs[i]].ndim == TETHER_IR_SHAPE_UNKNOWN) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "input '%s' has no shape yet",
                                         g->tensors[n->inputs[i]].name);
        }
    }
    if ((rc = infer_output(g, n))) {
        return rc;
    }
    const tether_ir_tensor *o = &g->tensors[n->outputs[0]];
    int64_t count = 1;
    for (int d = 0; d < o->ndim; d++) {
        if (o->shape[d] > INT32_MAX || (o->shape[d] && count > INT32_MAX / o->shape[d])) {
            return tether_set_error(TETHER_ERR_LIMIT,
                                    "tensor '%s' has more than 2^31-1 elements (the limit of "
                                    "generated code)",
                                    o->name);
        }
        count *= o->shape[d];
    }
    return TETHER_OK;
}

int tether_ir_infer(tether_ir_graph *g) {
    int rc;
    if (g->noutputs == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "graph '%s' has no outputs", g->name);
    }
    for (int i = 0; i < g->ntensors; i++) {
        const tether_ir_tensor *t = &g->tensors[i];
        if (t->kind != TETHER_TENSOR_INTERMEDIATE &&
            tether__dtype_class(t->dtype) == TETHER__DC_NONE) {
            char dn[TETHER_DTYPE_NAME_MAX] = "?";
            tether_dtype_name(t->dtype, dn, sizeof dn);
            return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                    "tensor '%s' has dtype %s; tether computes bool, int8..int64, "
                                    "uint8..uint64, float16, bfloat16, float32 and float64",
                                    t->name, dn);
        }
        if (t->kind == TETHER_TENSOR_INPUT && t->ndim == TETHER_IR_SHAPE_UNKNOWN) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "graph input '%s' has no shape",
                                    t->name);
        }
    }
    if ((rc = check_elements(g))) {
        return rc;
    }
    for (int i = 0; i < g->nnodes; i++) {
        if ((rc = check_node_io(&g->nodes[i])) || (rc = check_attr_ranges(&g->nodes[i]))) {
            return rc;
        }
    }
    rc = order_nodes(g);
    rc = rc ? rc : tether__ir_loop_hoist(g); /* loop bodies (shapes_loop.c) */
    if (rc) {
        return rc;
    }
    for (int i = 0; i < g->ntensors; i++) {
        g->tensors[i].producer = -1;
        g->tensors[i].alias_of = -1;
    }
    for (int i = 0; i < g->nnodes; i++) {
        tether_ir_node *n = &g->nodes[i];
        rc = infer_output(g, n);
        if (rc) {
            return rc;
        }
        tether_ir_tensor *o = &g->tensors[n->outputs[0]];
        o->producer = i;
        if (n->op == TETHER_OP_CONV2D || n->op == TETHER_OP_MAX_POOL ||
            n->op == TETHER_OP_AVG_POOL) {
            o->layout = TETHER_LAYOUT_NCHW;
        }
        if (tether__ir_is_alias_op(n->op)) {
            int src = n->inputs[0];
            int is_out = 0;
            for (int k = 0; k < g->noutputs; k++) {
                is_out |= g->outputs[k] == n->outputs[0];
            }
            if (!is_out) {
                o->alias_of = g->tensors[src].alias_of >= 0 ? g->tensors[src].alias_of : src;
            }
        }
    }
    /* Generated kernels index with int: every tensor must have fewer than 2^31 elements. */
    if ((rc = check_elements(g))) {
        return rc;
    }
    if (g->nnodes && g->nodes[0].op == TETHER_OP_CONV2D) {
        g->tensors[g->nodes[0].inputs[0]].layout = TETHER_LAYOUT_NCHW;
    }
    /* reductions over dimension 0 of dynamic data get the live extent (shapes_dynamic_use.c):
     * new nodes, so the graph is ordered and inferred again */
    bool changed = false;
    if ((rc = tether__ir_dyn_wire_counts(g, &changed))) {
        return rc;
    }
    if (changed) {
        return tether_ir_infer(g);
    }
    return tether__ir_check_dynamic(g); /* data-dependent sizes (shapes_dynamic.c) */
}

static void print_shape(FILE *out, const tether_ir_tensor *t) {
    fputc('[', out);
    for (int i = 0; i < t->ndim; i++) {
        fprintf(out, "%s%lld", i ? "," : "", (long long)t->shape[i]);
    }
    fputc(']', out);
}

int tether_ir_print(FILE *out, const tether_ir_graph *g) {
    static const char *const kinds[] = {"tensor", "input", "const"};
    fprintf(out, "graph %s: %d tensors, %d nodes\n", g->name, g->ntensors, g->nnodes);
    for (int i = 0; i < g->ntensors; i++) {
        const tether_ir_tensor *t = &g->tensors[i];
        char dn[TETHER_DTYPE_NAME_MAX] = "?";
        tether_dtype_name(t->dtype, dn, sizeof dn);
        fprintf(out, "  %%%d %-6s %s %s", i, kinds[t->kind], t->name, dn);
        print_shape(out, t);
        if (t->kind == TETHER_TENSOR_CONSTANT) {
            fprintf(out, " (%zu bytes)", t->nbytes);
        }
        if (t->alias_of >= 0) {
            fprintf(out, " alias of %s", g->tensors[t->alias_of].name);
        }
        fputc('\n', out);
    }
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *n = &g->nodes[i];
        const tether_ir_attrs *a = &n->attrs;
        fprintf(out, "  node %s = %s(", n->name, tether_op_name(n->op));
        for (int j = 0; j < n->ninputs; j++) {
            fprintf(out, "%s%s", j ? ", " : "",
                    n->inputs[j] >= 0 ? g->tensors[n->inputs[j]].name : "-");
        }
        fprintf(out, ") -> %s ", g->tensors[n->outputs[0]].name);
        print_shape(out, &g->tensors[n->outputs[0]]);
        switch (n->op) {
        case TETHER_OP_CONV2D:
        case TETHER_OP_MAX_POOL:
        case TETHER_OP_AVG_POOL:
            fprintf(out, " kernel=%lldx%lld strides=%lld,%lld pads=%lld,%lld,%lld,%lld",
                    (long long)a->kernel[0], (long long)a->kernel[1], (long long)a->strides[0],
                    (long long)a->strides[1], (long long)a->pads[0], (long long)a->pads[1],
                    (long long)a->pads[2], (long long)a->pads[3]);
            if (n->op == TETHER_OP_CONV2D) {
                fprintf(out, " groups=%lld", (long long)a->groups);
            }
            if (a->dilations[0] != 1 || a->dilations[1] != 1) {
                fprintf(out, " dilations=%lld,%lld", (long long)a->dilations[0],
                        (long long)a->dilations[1]);
            }
            break;
        case TETHER_OP_DENSE:
            fprintf(out, " alpha=%g beta=%g transA=%d transB=%d", (double)a->alpha, (double)a->beta,
                    a->trans_a, a->trans_b);
            break;
        case TETHER_OP_CONV_ND:
        case TETHER_OP_CONV_TRANSPOSE:
            fprintf(out, " kernel=");
            for (int d = 0; d < a->nwin; d++) {
                fprintf(out, "%s%lld", d ? "x" : "", (long long)a->wkernel[d]);
            }
            fprintf(out, " strides=");
            for (int d = 0; d < a->nwin; d++) {
                fprintf(out, "%s%lld", d ? "," : "", (long long)a->wstrides[d]);
            }
            fprintf(out, " pads=");
            for (int d = 0; d < 2 * a->nwin; d++) {
                fprintf(out, "%s%lld", d ? "," : "",
                        (long long)a->wpads[d < a->nwin ? d : d - a->nwin + 3]);
            }
            fprintf(out, " dilations=");
            for (int d = 0; d < a->nwin; d++) {
                fprintf(out, "%s%lld", d ? "," : "", (long long)a->wdilations[d]);
            }
            fprintf(out, " groups=%lld", (long long)a->groups);
            break;
        case TETHER_OP_SOFTMAX:
        case TETHER_OP_LOG_SOFTMAX:
        case TETHER_OP_HARDMAX:
        case TETHER_OP_CONCAT:
        case TETHER_OP_FLATTEN:
        case TETHER_OP_LAYER_NORM:
            fprintf(out, " axis=%lld", (long long)a->axis);
            break;
            TETHER__CASES_UNARY
            TETHER__CASES_BINARY
            if (strstr(tether__op_info_of(n->op)->json_attrs, "min max")) { /* clip */
                fprintf(out, " min=%g max=%g", (double)a->min, (double)a->max);
            }
            break;
        case TETHER_OP_MATMUL:
        case TETHER_OP_PRELU:
        case TETHER_OP_GLOBAL_AVG_POOL:
        case TETHER_OP_GLOBAL_MAX_POOL:
        case TETHER_OP_RESHAPE:
        case TETHER_OP_SQUEEZE:
        case TETHER_OP_UNSQUEEZE:
        case TETHER_OP_TRANSPOSE:
        case TETHER_OP_PAD:
        case TETHER_OP_BATCH_NORM:
        case TETHER_OP_REDUCE_MEAN:
        case TETHER_OP_REDUCE_SUM:
        case TETHER_OP_REDUCE_MAX:
        case TETHER_OP_REDUCE_MIN:
        case TETHER_OP_REDUCE_PROD:
        case TETHER_OP_REDUCE_L1:
        case TETHER_OP_REDUCE_L2:
        case TETHER_OP_REDUCE_LOG_SUM:
        case TETHER_OP_REDUCE_LOG_SUM_EXP:
        case TETHER_OP_REDUCE_SUM_SQUARE:
        case TETHER_OP_RESIZE_NEAREST:
        case TETHER_OP_WHERE:
            break;
            TETHER__CASES_DATA
            fprintf(out, " axis=%lld k=%lld mode=%lld", (long long)a->axis, (long long)a->k,
                    (long long)a->mode);
            break;
        case TETHER_OP_NLL_LOSS:
        case TETHER_OP_NLL_LOSS_SUM:
        case TETHER_OP_NLL_LOSS_MEAN:
            if (a->nints == 1) {
                fprintf(out, " ignore_index=%lld", (long long)a->ints[0]);
            }
            break;
        case TETHER_OP_QUANTIZE:
        case TETHER_OP_DEQUANTIZE:
            fprintf(out, " axis=%lld", (long long)a->axis);
            break;
        case TETHER_OP_QCONV:
            fprintf(out, " kernel=%lldx%lld strides=%lld,%lld pads=%lld,%lld,%lld,%lld groups=%lld",
                    (long long)a->kernel[0], (long long)a->kernel[1], (long long)a->strides[0],
                    (long long)a->strides[1], (long long)a->pads[0], (long long)a->pads[1],
                    (long long)a->pads[2], (long long)a->pads[3], (long long)a->groups);
            if (a->min > -1e30f || a->max < 1e30f) {
                fprintf(out, " clamp=%g..%g", (double)a->min, (double)a->max);
            }
            break;
        case TETHER_OP_QMATMUL:
            if (a->min > -1e30f || a->max < 1e30f) {
                fprintf(out, " clamp=%g..%g", (double)a->min, (double)a->max);
            }
            break;
        case TETHER_OP_QADD: /* issue 28 integer elementwise/pooling: no extra attributes */
        case TETHER_OP_QMUL:
        case TETHER_OP_QLUT:
        case TETHER_OP_QAVG_POOL:
            break;
        case TETHER_OP_QMAX_POOL:
            fprintf(out, " k=%lldx%lld s=%lldx%lld", (long long)a->kernel[0],
                    (long long)a->kernel[1], (long long)a->strides[0], (long long)a->strides[1]);
            break;
        case TETHER_OP_CUSTOM: {
            const tether_custom_op *cop = tether_custom_op_of(g, n);
            fprintf(out, " %s::%s", cop ? cop->domain : "?", cop ? cop->name : "?");
            break;
        }
        }
        if (n->op == TETHER_OP_CAST || n->op == TETHER_OP_QUANTIZE || n->op == TETHER_OP_QCONV ||
            n->op == TETHER_OP_QMATMUL) {
            fprintf(out, " to=%s", tether__dtype_str(a->to));
        }
        if (a->act != TETHER_ACT_NONE) {
            fprintf(out, " +%s", tether_act_name(a->act));
        }
        if (a->has_residual) {
            fprintf(out, " +residual");
        }
        fputc('\n', out);
    }
    fprintf(out, "  inputs:");
    for (int i = 0; i < g->ninputs; i++) {
        fprintf(out, " %s", g->tensors[g->inputs[i]].name);
    }
    fprintf(out, "\n  outputs:");
    for (int i = 0; i < g->noutputs; i++) {
        fprintf(out, " %s", g->tensors[g->outputs[i]].name);
    }
    fputc('\n', out);
    return ferror(out) ? tether_set_error(TETHER_ERR_IO, "write error printing the IR") : TETHER_OK;
}
