/*
 * Data-dependent output sizes (nonzero, compress, unique, nms; ops.def; and the scan outputs of a
 * run-time loop, loop_stack, whose rules are in shapes_loop.c): their shape and typing
 * rules, the bound of the dynamic dimension, the extent outputs a graph with dynamic outputs
 * carries (tether_ir_add_extent_outputs) and the check that nothing else reads a dynamic tensor.
 *
 * What must stay true: a dynamic tensor's shape is its bound (what the planner sizes and every
 * kernel may write at most); its actual extent along dyn_dim - 1 is computed at run time by the
 * node and by its extent node (same operator, same inputs, mode | TETHER__DYN_COUNT), which both
 * fail with TETHER_ERR_LIMIT when the count is above the bound (nms' extent node reads the rows
 * of its nms node instead, which end with a -1 row when there are fewer than the bound). The
 * producers zero their output past the actual data, so a consumer of a tensor dynamic along
 * dimension 0 (consumer_input: elementwise with a static other operand, gather, reshapes keeping
 * dimension 0, and the row readers of shapes_dynamic_use.c) computes every row of the bound
 * safely and its first rows are the actual ones: its output is dynamic along dimension 0 with
 * the extent of the root it derives from (the extent node of a graph output is the root's).
 * Reductions over dimension 0 (shapes_dynamic_use.c) read one into a static output through the
 * live extent wired as their input 1; a reduce with an input 1 of any other kind is refused.
 * Readers by the live extent (shapes_dynamic_live.c: a transpose moving the dynamic dimension,
 * concat, gather and slice along it) read any dynamic dimension through extents wired as extra
 * inputs; slice and concat of such inputs are roots of an extent of their own.
 * Readers besides those (and unique's second input, nms' extent node: terminated lists)
 * are refused naming them. Messages name the node.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/ir.h"

bool tether__ir_is_dynamic_op(tether_op op) {
    return op == TETHER_OP_NONZERO || op == TETHER_OP_COMPRESS || op == TETHER_OP_UNIQUE ||
           op == TETHER_OP_NMS;
}

/* Whether op is the root of a dynamic tensor: the four operators above, and a run-time loop's
 * scan output (loop_stack, ir/shapes_loop.c: its extent is the loop's iteration count). */
static bool is_root_op(tether_op op) {
    return tether__ir_is_dynamic_op(op) || op == TETHER_OP_LOOP_STACK;
}

/* A root node: one of those, or a slice/concat of dynamic inputs (shapes_dynamic_live.c). */
static bool is_root(const tether_ir_graph *g, const tether_ir_node *n) {
    return is_root_op(n->op) || tether__ir_live_root(g, n);
}

static int64_t numel(const tether_ir_tensor *t) {
    int64_t p = 1;
    for (int d = 0; d < t->ndim; d++) {
        p *= t->shape[d];
    }
    return p;
}

/* The unique operator's slice count: the axis extent, or every element. */
static int64_t unique_items(const tether_ir_tensor *x, const tether_ir_attrs *a) {
    if (a->mode & 4) {
        int ax = tether__ir_norm_axis(a->axis, x->ndim);
        return ax < 0 ? 0 : x->shape[ax];
    }
    return numel(x);
}

int64_t tether__ir_dyn_bound(const tether_ir_graph *g, const tether_ir_node *n) {
    const tether_ir_tensor *x = tether__ir_in(g, n, 0), *c = tether__ir_in(g, n, 1);
    const tether_ir_attrs *a = &n->attrs;
    int64_t b = 0;
    if (n->op == TETHER_OP_NONZERO) {
        b = numel(x);
    } else if (n->op == TETHER_OP_COMPRESS) {
        int64_t l = numel(c);
        int64_t m = numel(x);
        if (a->mode & 4) {
            int ax = tether__ir_norm_axis(a->axis, x->ndim);
            m = ax < 0 ? 0 : x->shape[ax];
        }
        b = l < m ? l : m;
    } else if (n->op == TETHER_OP_UNIQUE) {
        b = unique_items(x, a);
    } else if (n->op == TETHER_OP_NMS && (a->mode & TETHER__DYN_COUNT)) {
        b = x->ndim == 2 ? x->shape[0] : 0; /* the rows of the nms node it counts */
    } else if (n->op == TETHER_OP_NMS && c) {
        int64_t per = a->k < x->shape[1] ? a->k : x->shape[1];
        b = c->shape[0] * c->shape[1] * (per > 0 ? per : 0);
    } else {
        return 0;
    }
    if (a->nints == 1 && a->ints[0] >= 0 && a->ints[0] < b) {
        b = a->ints[0];
    }
    return b;
}

/* Whether node n may read a dynamic tensor and give an output dynamic along its dimension 0:
 * its dynamic input(s) are dynamic along their dimension 0 (so the data of the actual shape are
 * the first rows of the buffer, the producers zero the rest: any row computes safely), and the
 * output's rows are the dynamic input's rows:
 *  - elementwise unary; binary with a static other operand broadcast along dimension 0;
 *  - gather along axis 0 of static data by dynamic indices, or along another axis of dynamic
 *    data by static indices;
 *  - reshape-like aliases keeping dimension 0 (the other dimensions regrouped).
 * Returns the dynamic input (tensor index), -1 when n reads none, -2 when it reads one but does
 * not qualify. On inferred inputs and output. */
static int consumer_input(const tether_ir_graph *g, const tether_ir_node *n) {
    int dyn = tether__ir_dyn_live(g, n, NULL), ndyn = 0;
    if (dyn >= 0) {
        return dyn; /* through the live extent (shapes_dynamic_live.c) */
    }
    for (int j = 0; j < n->ninputs; j++) {
        const tether_ir_tensor *t = tether__ir_in(g, n, j);
        if (t && t->dyn_dim > 0) {
            dyn = dyn < 0 ? j : dyn;
            ndyn++;
            if (t->dyn_dim != 1) {
                return -2;
            }
        }
    }
    if (dyn < 0) {
        return -1;
    }
    const tether_ir_tensor *x = tether__ir_in(g, n, dyn), *o = &g->tensors[n->outputs[0]];
    int kind = tether__op_info_of(n->op)->kind;
    bool ok =
        ndyn == 1 && n->noutputs == 1 && o->ndim >= 1 && x->ndim >= 1 && o->shape[0] == x->shape[0];
    if (kind == TETHER__OPK_UNARY) {
        return ok ? n->inputs[dyn] : tether__ir_dyn_row_reader(g, n, dyn);
    }
    if (kind == TETHER__OPK_BINARY && n->ninputs == 2) {
        const tether_ir_tensor *other = tether__ir_in(g, n, 1 - dyn);
        ok = ok && x->ndim == o->ndim &&
             (other->ndim < o->ndim || other->shape[0] == 1 || o->shape[0] == 1);
        return ok ? n->inputs[dyn] : tether__ir_dyn_row_reader(g, n, dyn);
    }
    if (n->op == TETHER_OP_GATHER) {
        const tether_ir_tensor *data = tether__ir_in(g, n, 0);
        int ax = tether__ir_norm_axis(n->attrs.axis, data->ndim);
        ok = ok && (dyn == 1 ? ax == 0 : ax > 0);
        return ok ? n->inputs[dyn] : tether__ir_dyn_row_reader(g, n, dyn);
    }
    if (n->op == TETHER_OP_FLATTEN) { /* [N, ...] -> [N, rest]: axis >= 1 keeps the rows */
        int64_t fa = n->attrs.axis < 0 ? n->attrs.axis + x->ndim : n->attrs.axis;
        ok = ok && o->ndim == 2 && fa >= 1;
        return ok ? n->inputs[dyn] : tether__ir_dyn_row_reader(g, n, dyn);
    }
    if (kind == TETHER__OPK_ALIAS) {
        /* squeeze/unsqueeze: not of dimension 0 itself (the rows would move) */
        int rank = n->op == TETHER_OP_SQUEEZE ? x->ndim : o->ndim;
        for (int i = 0; ok && (n->op == TETHER_OP_SQUEEZE || n->op == TETHER_OP_UNSQUEEZE) &&
                        i < n->attrs.nints;
             i++) {
            ok = tether__ir_norm_axis(n->attrs.ints[i], rank) != 0;
        }
        ok = ok && !(n->op == TETHER_OP_SQUEEZE && n->attrs.nints == 0 && x->shape[0] == 1);
        return ok ? n->inputs[dyn] : tether__ir_dyn_row_reader(g, n, dyn);
    }
    return tether__ir_dyn_row_reader(g, n, dyn); /* shapes_dynamic_use.c */
}

int tether__ir_dyn_dim(const tether_ir_graph *g, const tether_ir_node *n) {
    if (n->op == TETHER_OP_LOOP_STACK) {
        return (n->attrs.mode & TETHER__DYN_COUNT) ? -1 : 1;
    }
    if (!tether__ir_is_dynamic_op(n->op)) {
        int od = 0;
        if (tether__ir_dyn_live(g, n, &od) >= 0) {
            return od; /* shapes_dynamic_live.c */
        }
        return consumer_input(g, n) >= 0 ? 1 : 0;
    }
    const tether_ir_attrs *a = &n->attrs;
    if (a->mode & TETHER__DYN_COUNT) {
        return -1;
    }
    if (n->op == TETHER_OP_NONZERO) {
        return 2;
    }
    if (n->op == TETHER_OP_COMPRESS) {
        return (a->mode & 4) ? tether__ir_norm_axis(a->axis, tether__ir_in(g, n, 0)->ndim) + 1 : 1;
    }
    if (n->op == TETHER_OP_UNIQUE) {
        int out = (int)((a->mode >> 4) & 3);
        if (out == 2) {
            return 0; /* inverse indices: one per item, a static extent */
        }
        if (out == 0 && (a->mode & 4)) {
            return tether__ir_norm_axis(a->axis, tether__ir_in(g, n, 0)->ndim) + 1;
        }
    }
    return 1;
}

static int fail(const tether_ir_node *n, const char *msg) {
    return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "%s", msg);
}

int tether__ir_dynamic_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond) {
    const tether_ir_tensor *x = tether__ir_in(g, n, 0), *c = tether__ir_in(g, n, 1);
    tether_ir_attrs *a = &n->attrs;
    if (a->nints > 1 || (a->nints == 1 && a->ints[0] < 0)) {
        return fail(n, "ints holds at most one entry, the cap of the bound (>= 0)");
    }
    if (a->mode & ~(int64_t)(TETHER__DYN_COUNT | 0x3f)) {
        return fail(n, "mode has unknown flags");
    }
    if ((a->mode & 4) && tether__ir_norm_axis(a->axis, x->ndim) < 0) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                     "axis %lld out of range for rank %d", (long long)a->axis,
                                     x->ndim);
    }
    int64_t b = tether__ir_dyn_bound(g, n);
    if (a->mode & TETHER__DYN_COUNT) {
        os[0] = 1;
        *ond = 1;
        if (n->op == TETHER_OP_UNIQUE && c) {
            return fail(n, "an extent node of unique reads x only");
        }
        if (n->op == TETHER_OP_NMS && (c || x->ndim != 2 || x->shape[1] != 3 ||
                                       !tether_dtype_equal(x->dtype, TETHER_INT64))) {
            return fail(n, "an extent node of nms reads the [count,3] rows of its nms node only");
        }
        return TETHER_OK;
    }
    if (n->op == TETHER_OP_NONZERO) {
        os[0] = x->ndim ? x->ndim : 1;
        os[1] = b;
        *ond = 2;
        return TETHER_OK;
    }
    if (n->op == TETHER_OP_COMPRESS) {
        if (!c || c->ndim != 1) {
            return fail(n, "the condition must be 1-D");
        }
        if (!(a->mode & 4)) {
            os[0] = b;
            *ond = 1;
            return TETHER_OK;
        }
        *ond = x->ndim;
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        os[tether__ir_norm_axis(a->axis, x->ndim)] = b;
        return TETHER_OK;
    }
    if (n->op == TETHER_OP_UNIQUE) {
        int out = (int)((a->mode >> 4) & 3);
        if ((out == 1) != (c == NULL)) {
            return fail(n, "the indices output reads x alone; values, inverse and counts read x "
                           "and the indices node");
        }
        if (c && (c->ndim != 1 || !tether_dtype_equal(c->dtype, TETHER_INT64))) {
            return fail(n, "input 1 must be the int64 indices of a unique node");
        }
        if (out == 0 && (a->mode & 4)) {
            *ond = x->ndim;
            memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
            os[tether__ir_norm_axis(a->axis, x->ndim)] = b;
            return TETHER_OK;
        }
        os[0] = out == 2 ? unique_items(x, a) : b;
        *ond = 1;
        return TETHER_OK;
    }
    if (n->op == TETHER_OP_NMS) {
        if (!c || x->ndim != 3 || x->shape[2] != 4 || c->ndim != 3 || c->shape[0] != x->shape[0] ||
            c->shape[2] != x->shape[1]) {
            return fail(n, "boxes must be [B,N,4] and scores [B,C,N]");
        }
        if (a->k < 0) {
            return fail(n, "max_output_boxes_per_class (k) must be >= 0");
        }
        os[0] = b;
        os[1] = 3;
        *ond = 2;
        return TETHER_OK;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "not a dynamic operator");
}

int tether__ir_dynamic_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out) {
    const tether_ir_tensor *x = tether__ir_in(g, n, 0), *c = tether__ir_in(g, n, 1);
    *out = TETHER_INT64;
    if (n->attrs.mode & TETHER__DYN_COUNT) {
        return TETHER_OK;
    }
    if (n->op == TETHER_OP_NONZERO) {
        return TETHER_OK;
    }
    if (n->op == TETHER_OP_COMPRESS || n->op == TETHER_OP_UNIQUE) {
        if (n->op == TETHER_OP_COMPRESS || ((n->attrs.mode >> 4) & 3) == 0) {
            *out = x->dtype;
        }
        return TETHER_OK;
    }
    if (n->op == TETHER_OP_NMS) {
        if (!c || !tether__dtype_is_float(x->dtype) || !tether__dtype_is_float(c->dtype)) {
            return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED,
                                         "boxes and scores must be floating point (%s, %s)",
                                         tether__dtype_str(x->dtype), tether__dtype_str(c->dtype));
        }
        return TETHER_OK;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "not a dynamic operator");
}

static int producer_of(const tether_ir_graph *g, int t) {
    for (int i = 0; i < g->nnodes; i++) {
        if (g->nodes[i].outputs[0] == t) {
            return i;
        }
    }
    return -1;
}

/* Whether node p computes a dynamic tensor (not an extent, not unique's inverse indices). */
static bool computes_dynamic(const tether_ir_graph *g, const tether_ir_node *p) {
    return (is_root_op(p->op) && !(p->attrs.mode & TETHER__DYN_COUNT) &&
            !(p->op == TETHER_OP_UNIQUE && ((p->attrs.mode >> 4) & 3) == 2)) ||
           tether__ir_live_root(g, p);
}

/* Before inference: the node computing the dynamic tensor that tensor t derives from through
 * nodes that may consume one (consumer_input: elementwise, gather, aliases; depth-first over
 * their inputs), and in *root that tensor; -1 when there is none. */
static int root_before_infer(const tether_ir_graph *g, int t, int depth, int *root) {
    int p = producer_of(g, t);
    if (p < 0 || depth > 64) {
        return -1;
    }
    const tether_ir_node *n = &g->nodes[p];
    if (computes_dynamic(g, n)) {
        *root = t;
        return p;
    }
    int kind = tether__op_info_of(n->op)->kind, od = -1;
    if (tether__ir_dyn_live(g, n, &od) >= 0 && od == 0) {
        return -1; /* a gather along the dynamic dimension: a static output */
    }
    /* a node inferred as it was added (the ONNX import) says itself whether it is dynamic */
    bool dyn_out = n->noutputs == 1 && g->tensors[n->outputs[0]].dyn_dim > 0;
    if (kind != TETHER__OPK_UNARY && kind != TETHER__OPK_BINARY && kind != TETHER__OPK_ALIAS &&
        n->op != TETHER_OP_GATHER && !dyn_out) {
        return -1;
    }
    for (int j = 0; j < n->ninputs; j++) {
        int r = n->inputs[j] >= 0 ? root_before_infer(g, n->inputs[j], depth + 1, root) : -1;
        if (r >= 0) {
            return r;
        }
    }
    return -1;
}

/* After inference: the node computing the dynamic tensor that dynamic tensor t derives from
 * (through consumers), and in *root that tensor; -1 when t is not dynamic. */
static int root_after_infer(const tether_ir_graph *g, int t, int *root) {
    for (int depth = 0; t >= 0 && g->tensors[t].dyn_dim > 0 && depth < 4096; depth++) {
        int p = g->tensors[t].producer;
        if (p < 0) {
            return -1;
        }
        const tether_ir_node *n = &g->nodes[p];
        if (is_root(g, n)) {
            *root = t;
            return p;
        }
        t = consumer_input(g, n);
    }
    return -1;
}

int tether__ir_dyn_root(const tether_ir_graph *g, int t) {
    /* as root_after_infer, finding producers by their outputs: the ONNX import infers each node
     * as it adds it, before tensors know their producer */
    for (int depth = 0; t >= 0 && g->tensors[t].dyn_dim > 0 && depth < 4096; depth++) {
        int p = producer_of(g, t);
        if (p < 0) {
            return -1;
        }
        const tether_ir_node *n = &g->nodes[p];
        if (is_root(g, n)) {
            return p;
        }
        t = consumer_input(g, n);
    }
    return -1;
}

int tether_ir_add_extent_outputs(tether_ir_graph *g) {
    int nout = g->noutputs;
    for (int i = 0; i < nout; i++) {
        int t = g->outputs[i], root = -1, p = root_before_infer(g, t, 0, &root);
        if (p < 0) {
            continue;
        }
        tether_ir_node n = g->nodes[p];
        char name[512];
        snprintf(name, sizeof name, "%s_extent", g->tensors[t].name);
        int e = tether_ir_find_tensor(g, name), k = -1, rc = TETHER_OK;
        for (int j = 0; e >= 0 && j < g->noutputs; j++) {
            k = g->outputs[j] == e ? j : k;
        }
        if (k >= 0) {
            continue; /* already there */
        }
        tether_ir_attrs a = n.attrs;
        a.mode |= TETHER__DYN_COUNT;
        /* unique's count reads x alone, nms' the terminated rows of its node */
        int nin = n.op == TETHER_OP_UNIQUE || n.op == TETHER_OP_NMS ? 1 : n.ninputs;
        if (n.op == TETHER_OP_NMS) {
            n.inputs[0] = root;
        }
        int64_t one = 1;
        if ((rc = tether_ir_add_tensor(g, name, TETHER_INT64, 1, &one, &e)) ||
            (rc = tether_ir_add_node(g, name, n.op, n.inputs, nin, &e, 1, &a, NULL)) ||
            (rc = tether_ir_add_output(g, e))) {
            return rc;
        }
    }
    return TETHER_OK;
}

int tether_ir_extent_output(const tether_ir_graph *g, int i) {
    if (i < 0 || i >= g->noutputs || g->tensors[g->outputs[i]].dyn_dim <= 0) {
        return -1;
    }
    int ndyn = 0, nplain = 0;
    for (int j = 0; j < g->noutputs; j++) {
        int dd = g->tensors[g->outputs[j]].dyn_dim;
        nplain += dd >= 0;
        ndyn += dd > 0 && j < i;
    }
    int k = nplain + ndyn;
    return k < g->noutputs ? k : -1;
}

int tether__ir_check_dynamic(const tether_ir_graph *g) {
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *n = &g->nodes[i];
        int rc = tether__ir_live_check(g, n); /* live extents wired (shapes_dynamic_live.c) */
        if (rc) {
            return rc;
        }
        /* input 1 of a reduce is only ever the live extent wired by tether__ir_dyn_wire_counts */
        if (tether__op_info_of(n->op)->kind == TETHER__OPK_REDUCE && n->ninputs > 1 &&
            !tether__ir_dyn_counted(g, n)) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "%d inputs; a reduction takes one (its axes are "
                                         "attributes)",
                                         n->ninputs);
        }
        for (int j = 0; j < n->ninputs; j++) {
            const tether_ir_tensor *t = tether__ir_in(g, n, j);
            if (!t || t->dyn_dim <= 0 || (n->op == TETHER_OP_UNIQUE && j == 1) ||
                (n->op == TETHER_OP_NMS && (n->attrs.mode & TETHER__DYN_COUNT)) ||
                (!is_root_op(n->op) &&
                 (consumer_input(g, n) >= 0 || tether__ir_dyn_counted(g, n)))) {
                continue;
            }
            return tether__ir_node_error(
                n, TETHER_ERR_UNSUPPORTED,
                "input '%s' has a data-dependent extent (dimension %d, at most %lld, known at run "
                "time only): only elementwise operators (a static other operand broadcast along "
                "dimension 0, or operands of one root), gather (axis 0 by such indices, another "
                "axis of such data), reshapes keeping dimension 0, and operators computing each "
                "row from its own row (reductions, softmax, concat along another axis, transpose "
                "keeping dimension 0, matmul/gemm of such rows by a static matrix), and reductions "
                "over dimension 0 (the live rows) read one "
                "that varies along dimension 0; other operators and dimensions are not supported "
                "yet",
                t->name, t->dyn_dim - 1, (long long)t->shape[t->dyn_dim - 1]);
        }
    }
    /* the model's outputs (extent outputs at the end), then one extent per dynamic output */
    int nplain = 0, ndyn = 0;
    for (int j = 0; j < g->noutputs; j++) {
        const tether_ir_tensor *t = &g->tensors[g->outputs[j]];
        if (t->dyn_dim < 0) {
            continue;
        }
        if (nplain != j) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "graph output '%s' comes after an extent output (extent "
                                    "outputs come last: tether_ir_add_extent_outputs)",
                                    t->name);
        }
        nplain++;
        ndyn += t->dyn_dim > 0;
    }
    if (g->noutputs != nplain + ndyn) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "the graph has %d outputs of data-dependent size and %d extent "
                                "outputs (one each, after the others: "
                                "tether_ir_add_extent_outputs)",
                                ndyn, g->noutputs - nplain);
    }
    for (int j = 0; j < nplain; j++) {
        int k = tether_ir_extent_output(g, j);
        if (k < 0) {
            continue;
        }
        const tether_ir_tensor *t = &g->tensors[g->outputs[j]], *e = &g->tensors[g->outputs[k]];
        int root = -1, pi = root_after_infer(g, g->outputs[j], &root);
        if (pi < 0 || e->producer < 0) {
            return tether_set_error(TETHER_ERR_INTERNAL,
                                    "graph output '%s': no producer of its "
                                    "data-dependent extent",
                                    t->name);
        }
        const tether_ir_node *p = &g->nodes[pi], *q = &g->nodes[e->producer];
        int nin = tether__ir_extent_key_inputs(p);
        bool same = q->op == p->op && tether__ir_extent_key_inputs(q) == nin &&
                    (p->op != TETHER_OP_NMS || q->inputs[0] == root) &&
                    tether__ir_extent_attrs_equal(&p->attrs, &q->attrs);
        for (int i = 0; same && i < nin && p->op != TETHER_OP_NMS; i++) {
            same = q->inputs[i] == p->inputs[i];
        }
        if (!same) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "graph output '%s' is the extent of '%s' but is computed by "
                                    "another node than its own extent node",
                                    e->name, t->name);
        }
    }
    return TETHER_OK;
}
