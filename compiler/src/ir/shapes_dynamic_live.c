/*
 * Readers of a tensor of data-dependent size that need its live extent in the kernel (docs/onnx.md,
 * "Data-dependent output sizes"; shapes_dynamic.c's consumer_input hands them over): a transpose
 * that moves the dynamic dimension (or reads a tensor dynamic along a dimension other than 0,
 * such as NonZero's [rank, count]), a gather along the dynamic dimension by static indices (or
 * along another axis of data dynamic along a dimension > 0), a slice of a dynamic tensor and a
 * concat along the dynamic dimension (static inputs allowed).
 *
 * Such a node gets, after inference (tether__ir_dyn_wire_counts), mode | TETHER__DYN_LIVE,
 * attrs.k = its number of data inputs, and one more input per dynamic data input, in their order:
 * the int64 [1] extent of that input's root. Its kernels (interp_dynamic_live.c,
 * emit_c_dynamic_live.c) compute on the live shapes (each dynamic dimension at its clamped live
 * extent), write the output densely at the start of its buffer and zero the rest of the bound,
 * as the producers do. Slice and concat are roots of their own: their output's extent differs
 * from their inputs' (a concat's is the sum of the live extents and static sizes along the axis,
 * a slice's the ONNX clamp against the live extent), computed by their extent node (the same
 * operator and inputs, mode | TETHER__DYN_COUNT). Along the dynamic axis a slice's bounds are
 * ONNX's raw starts and ends (negative ones count from the live extent; the importer does not
 * normalise them there); its bound is the most the slice gives over every live extent from 0 to
 * the input's bound. A gather index outside the live extent is TETHER_ERR_INVALID_ARG, never a
 * read of the padding.
 *
 * What must stay true: an output row past the live extent is never computed from the padding of
 * an input (the kernels read live rows only); the output's bound holds every live extent; the
 * OpenCL backend runs them with its kernels of codegen/emit_opencl_dynamic_live.c (same bytes as
 * the C kernels) and refuses, naming it, any such node those do not take.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/ir.h"

static bool live_op(tether_op op) {
    return op == TETHER_OP_TRANSPOSE || op == TETHER_OP_CONCAT || op == TETHER_OP_GATHER ||
           op == TETHER_OP_SLICE;
}

bool tether__ir_live_wired(const tether_ir_node *n) {
    return live_op(n->op) && (n->attrs.mode & TETHER__DYN_LIVE);
}

int tether__ir_live_data_inputs(const tether_ir_node *n) {
    return tether__ir_live_wired(n) ? (int)n->attrs.k : n->ninputs;
}

int tether__ir_dyn_live(const tether_ir_graph *g, const tether_ir_node *n, int *odim) {
    if (!live_op(n->op) || n->noutputs != 1 || n->ninputs < 1) {
        return -1;
    }
    int nd = tether__ir_live_data_inputs(n), first = -1, od = 0;
    const tether_ir_tensor *x = tether__ir_in(g, n, 0);
    if (!x || x->ndim < 1 || x->ndim == TETHER_IR_SHAPE_UNKNOWN) {
        return -1;
    }
    int d = x->dyn_dim - 1;
    if (n->op == TETHER_OP_TRANSPOSE) {
        if (d < 0 || n->attrs.nints != x->ndim || (d == 0 && n->attrs.ints[0] == 0)) {
            return -1; /* static, or a row reader (shapes_dynamic_use.c) */
        }
        for (int i = 0; i < x->ndim; i++) {
            od = tether__ir_norm_axis(n->attrs.ints[i], x->ndim) == d ? i + 1 : od;
        }
        first = n->inputs[0];
    } else if (n->op == TETHER_OP_GATHER) {
        const tether_ir_tensor *ix = tether__ir_in(g, n, 1);
        int ax = tether__ir_norm_axis(n->attrs.axis, x->ndim);
        if (d < 0 || !ix || ix->dyn_dim != 0 || ax < 0 || (d == 0 && ax > 0)) {
            return -1; /* static, dynamic indices, or a row gather (shapes_dynamic.c) */
        }
        od = ax == d ? 0 : d < ax ? d + 1 : d + ix->ndim;
        first = n->inputs[0];
    } else if (n->op == TETHER_OP_SLICE) {
        if (d < 0) {
            return -1;
        }
        od = d + 1;
        first = n->inputs[0];
    } else { /* concat along the dynamic dimension of every dynamic input */
        int ax = tether__ir_norm_axis(n->attrs.axis, x->ndim);
        for (int j = 0; j < nd && ax >= 0; j++) {
            const tether_ir_tensor *t = tether__ir_in(g, n, j);
            if (!t || t->ndim != x->ndim || (t->dyn_dim > 0 && t->dyn_dim != ax + 1) ||
                t->dyn_dim < 0) {
                return -1;
            }
            first = first < 0 && t->dyn_dim > 0 ? n->inputs[j] : first;
        }
        if (first < 0) {
            return -1;
        }
        od = ax + 1;
    }
    if (odim) {
        *odim = (n->attrs.mode & TETHER__DYN_COUNT) ? -1 : od;
    }
    return first;
}

bool tether__ir_live_root(const tether_ir_graph *g, const tether_ir_node *n) {
    return (n->op == TETHER_OP_SLICE || n->op == TETHER_OP_CONCAT) &&
           !(n->attrs.mode & TETHER__DYN_COUNT) && tether__ir_dyn_live(g, n, NULL) >= 0;
}

int64_t tether__ir_slice_live_len(int64_t s, int64_t e, int64_t st, int64_t dim) {
    if (st == 0 || dim <= 0) {
        return 0;
    }
    s = s < 0 ? s + dim : s;
    e = e < 0 ? e + dim : e;
    if (st > 0) {
        s = s < 0 ? 0 : s > dim ? dim : s;
        e = e < 0 ? 0 : e > dim ? dim : e;
        return e > s ? (e - s + st - 1) / st : 0;
    }
    s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
    e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
    return s > e ? (s - e + (-st) - 1) / (-st) : 0;
}

int64_t tether__ir_slice_live_start(int64_t s, int64_t st, int64_t dim) {
    s = s < 0 ? s + dim : s;
    if (st > 0) {
        return s < 0 ? 0 : s > dim ? dim : s;
    }
    return s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
}

/* The most a slice (s, e, st) along an extent of 0..b gives: the length is piecewise linear in
 * the extent, its pieces ending where s, e, -s or -e cross it. */
static int64_t slice_bound(int64_t s, int64_t e, int64_t st, int64_t b) {
    int64_t best = tether__ir_slice_live_len(s, e, st, b);
    const int64_t pts[4] = {s, -s, e, -e};
    for (int i = 0; i < 4; i++) {
        if (pts[i] < -2 || pts[i] > b + 2) {
            continue;
        }
        for (int64_t dim = pts[i] - 2; dim <= pts[i] + 2; dim++) {
            if (dim >= 0 && dim <= b) {
                int64_t l = tether__ir_slice_live_len(s, e, st, dim);
                best = l > best ? l : best;
            }
        }
    }
    return best;
}

int tether__ir_live_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond,
                          int *rc) {
    if ((n->op != TETHER_OP_SLICE && n->op != TETHER_OP_CONCAT) ||
        tether__ir_dyn_live(g, n, NULL) < 0) {
        return 0;
    }
    *rc = TETHER_OK;
    if (n->attrs.mode & TETHER__DYN_COUNT) { /* the extent node: int64 [1] */
        if (n->op == TETHER_OP_CONCAT) {     /* normalised as its root's (shapes.c) */
            n->attrs.axis = tether__ir_norm_axis(n->attrs.axis, tether__ir_in(g, n, 0)->ndim);
        }
        os[0] = 1;
        *ond = 1;
        return 1;
    }
    if (n->op == TETHER_OP_CONCAT) {
        return 0; /* the sum of the bounds: shapes.c's rule over the data inputs */
    }
    const tether_ir_tensor *x = tether__ir_in(g, n, 0);
    const tether_ir_attrs *a = &n->attrs;
    int nd = x->ndim, dd = x->dyn_dim - 1;
    if (a->nints != 2 * nd) {
        *rc = tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                    "bounds has %d entries, expected %d (starts, then ends)",
                                    a->nints, 2 * nd);
        return 1;
    }
    for (int d = 0; d < nd; d++) {
        int64_t s = a->ints[d], e = a->ints[nd + d], st = a->steps[d], dim = x->shape[d];
        if (d == dd && st != 0) { /* ONNX's starts and ends against the live extent */
            os[d] = slice_bound(s, e, st, dim);
        } else if (st > 0 && s >= 0 && s <= e && e <= dim) {
            os[d] = (e - s + st - 1) / st;
        } else if (st < 0 && e >= -1 && e <= s && s < dim) {
            os[d] = (s - e + (-st) - 1) / (-st);
        } else {
            *rc =
                tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                      "dimension %d: start %lld, end %lld, step %lld out of the "
                                      "extent %lld",
                                      d, (long long)s, (long long)e, (long long)st, (long long)dim);
            return 1;
        }
    }
    *ond = nd;
    return 1;
}

int tether__ir_live_check(const tether_ir_graph *g, const tether_ir_node *n) {
    if (!live_op(n->op)) {
        return TETHER_OK;
    }
    int live = tether__ir_dyn_live(g, n, NULL);
    if (!tether__ir_live_wired(n)) {
        if (live >= 0) {
            return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED,
                                         "input '%s' has a data-dependent extent whose live count "
                                         "is not known (no root of it was found)",
                                         g->tensors[live].name);
        }
        return TETHER_OK;
    }
    int k = (int)n->attrs.k, m = 0;
    for (int j = 0; j < k && k <= n->ninputs; j++) {
        const tether_ir_tensor *t = tether__ir_in(g, n, j);
        if (t && t->dyn_dim > 0) {
            const tether_ir_tensor *e = k + m < n->ninputs ? tether__ir_in(g, n, k + m) : NULL;
            if (!e || e->dyn_dim != -1 || e->ndim != 1 || e->shape[0] != 1 ||
                !tether_dtype_equal(e->dtype, TETHER_INT64)) {
                return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                             "input %d must be the int64 [1] live extent of input "
                                             "'%s'",
                                             k + m, t->name);
            }
            m++;
        }
    }
    if (live < 0 || k < 1 || k + m != n->ninputs) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                     "%d inputs for %d data inputs, %d of them of data-dependent "
                                     "size (one live extent each)",
                                     n->ninputs, k, m);
    }
    return TETHER_OK;
}

int tether__ir_extent_key_inputs(const tether_ir_node *n) {
    if (n->op == TETHER_OP_UNIQUE || n->op == TETHER_OP_NMS) {
        return 1;
    }
    return tether__ir_live_wired(n) ? (int)n->attrs.k : n->ninputs;
}

bool tether__ir_extent_attrs_equal(const tether_ir_attrs *a, const tether_ir_attrs *q) {
    /* the live wiring (its mode bit, k = the data inputs) may be done on one and not yet on the
     * other: a root and its extent node are wired in node order */
    const int64_t live = TETHER__DYN_LIVE;
    const bool wired = ((a->mode | q->mode) & live) != 0;
    if ((q->mode & ~live) != ((a->mode | TETHER__DYN_COUNT) & ~live) || q->axis != a->axis ||
        (!wired && q->k != a->k) || q->nints != a->nints ||
        memcmp(q->ints, a->ints, sizeof(int64_t) * (size_t)(a->nints > 0 ? a->nints : 0)) ||
        memcmp(q->steps, a->steps, sizeof a->steps)) {
        return false;
    }
    return true;
}
