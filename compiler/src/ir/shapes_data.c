/*
 * Shape and typing rules of the DATA operators (gather, gather_elements, gather_nd,
 * scatter_elements, scatter_nd, topk, arg_max, arg_min, cumsum, trilu, one_hot, tile, slice,
 * einsum; ops.def): tether__ir_data_shape and tether__ir_data_dtype, which the generic rules
 * (shapes.c, types.c) hand every DATA row to.
 *
 * What must stay true: a node passes these rules only when every kernel of the family
 * (interp/interp_data.c, codegen/emit_c_data.c) runs it without reading or writing outside its
 * tensors for any attribute it accepts; index *values* are checked at run time by the kernels
 * (an error code, never an access); each message names the node and what is wrong. Each switch
 * names every DATA row (TETHER__CASES_NOT_DATA for the others): a new DATA row without its rule
 * does not build.
 */
#include <string.h>

#include "../internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/ir.h"

int tether__einsum_labels(const tether_ir_attrs *a, int j, int *labels) {
    if (j < 0 || j >= a->nints || a->ints[j] < 0 || a->ints[j] >= ((int64_t)1 << 48)) {
        return -1;
    }
    uint64_t v = (uint64_t)a->ints[j];
    int r = 0;
    while (r < TETHER_IR_MAX_NDIM && ((v >> (6 * r)) & 63)) {
        labels[r] = (int)((v >> (6 * r)) & 63);
        r++;
    }
    return (v >> (6 * r)) ? -1 : r; /* a label after a 0 */
}

static bool is_index_type(DLDataType t) {
    return t.lanes == 1 && t.code == kDLInt && (t.bits == 32 || t.bits == 64);
}

static int axis_of(const tether_ir_node *n, int64_t axis, int rank, int *out) {
    int a = tether__ir_norm_axis(axis, rank);
    if (a < 0) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                     "axis %lld out of range for rank %d", (long long)axis, rank);
    }
    *out = a;
    return TETHER_OK;
}

static int einsum_shape(const tether_ir_graph *g, const tether_ir_node *n, int64_t *os, int *ond) {
    const tether_ir_attrs *a = &n->attrs;
    int64_t ext[64];
    for (int i = 0; i < 64; i++) {
        ext[i] = -1;
    }
    if (a->nints != n->ninputs + 1) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                     "labels has %d entries, expected %d (one per input, then the "
                                     "output)",
                                     a->nints, n->ninputs + 1);
    }
    int lab[TETHER_IR_MAX_NDIM];
    for (int j = 0; j < n->ninputs; j++) {
        const tether_ir_tensor *t = tether__ir_in(g, n, j);
        int r = tether__einsum_labels(a, j, lab);
        if (!t || r < 0 || r != t->ndim) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "input %d has rank %d but %d labels", j, t ? t->ndim : -1,
                                         r);
        }
        for (int d = 0; d < r; d++) {
            if (ext[lab[d]] >= 0 && ext[lab[d]] != t->shape[d]) {
                return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                             "label %d has extents %lld and %lld", lab[d],
                                             (long long)ext[lab[d]], (long long)t->shape[d]);
            }
            ext[lab[d]] = t->shape[d];
        }
    }
    int r = tether__einsum_labels(a, n->ninputs, lab);
    if (r < 0) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "malformed output labels");
    }
    for (int d = 0; d < r; d++) {
        for (int e = 0; e < d; e++) {
            if (lab[e] == lab[d]) {
                return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                             "output label %d appears twice", lab[d]);
            }
        }
        if (ext[lab[d]] < 0) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "output label %d is in no input", lab[d]);
        }
        os[d] = ext[lab[d]];
    }
    *ond = r;
    return TETHER_OK;
}

static int slice_shape(const tether_ir_node *n, const tether_ir_tensor *x, int64_t *os, int *ond) {
    const tether_ir_attrs *a = &n->attrs;
    int nd = x->ndim;
    if (a->nints != 2 * nd) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                     "bounds has %d entries, expected %d (starts, then ends)",
                                     a->nints, 2 * nd);
    }
    for (int d = 0; d < nd; d++) {
        int64_t s = a->ints[d], e = a->ints[nd + d], st = a->steps[d], dim = x->shape[d];
        if (st > 0 && s >= 0 && s <= e && e <= dim) {
            os[d] = (e - s + st - 1) / st;
        } else if (st < 0 && e >= -1 && e <= s && s < dim) {
            os[d] = (s - e + (-st) - 1) / (-st);
        } else {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "dimension %d: start %lld, end %lld, step %lld out of the "
                                         "extent %lld",
                                         d, (long long)s, (long long)e, (long long)st,
                                         (long long)dim);
        }
    }
    *ond = nd;
    return TETHER_OK;
}

int tether__ir_data_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = tether__ir_in(g, n, 0), *ix = tether__ir_in(g, n, 1);
    int ax = 0, rc;
    switch (n->op) {
    case TETHER_OP_GATHER: {
        if ((rc = axis_of(n, a->axis, x->ndim, &ax))) {
            return rc;
        }
        int nd = x->ndim - 1 + ix->ndim;
        if (nd > TETHER_IR_MAX_NDIM) {
            return tether__ir_node_error(n, TETHER_ERR_LIMIT, "the output's rank %d is above %d",
                                         nd, TETHER_IR_MAX_NDIM);
        }
        int o = 0;
        for (int d = 0; d < ax; d++) {
            os[o++] = x->shape[d];
        }
        for (int d = 0; d < ix->ndim; d++) {
            os[o++] = ix->shape[d];
        }
        for (int d = ax + 1; d < x->ndim; d++) {
            os[o++] = x->shape[d];
        }
        *ond = nd;
        return TETHER_OK;
    }
    case TETHER_OP_GATHER_ELEMENTS:
    case TETHER_OP_SCATTER_ELEMENTS: {
        if ((rc = axis_of(n, a->axis, x->ndim, &ax))) {
            return rc;
        }
        if (ix->ndim != x->ndim) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "indices have rank %d, the data %d", ix->ndim, x->ndim);
        }
        for (int d = 0; d < x->ndim; d++) {
            if (d != ax && ix->shape[d] > x->shape[d]) {
                return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                             "indices dimension %d (%lld) exceeds the data's %lld",
                                             d, (long long)ix->shape[d], (long long)x->shape[d]);
            }
        }
        if (n->op == TETHER_OP_SCATTER_ELEMENTS) {
            const tether_ir_tensor *u = tether__ir_in(g, n, 2);
            if (u->ndim != ix->ndim ||
                memcmp(u->shape, ix->shape, sizeof(int64_t) * (size_t)ix->ndim)) {
                return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                             "updates and indices differ in shape");
            }
            if (a->mode < 0 || a->mode > 4) {
                return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                             "mode %lld (reduction: 0 none, 1 add, 2 mul, 3 max, "
                                             "4 min)",
                                             (long long)a->mode);
            }
            memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
            *ond = x->ndim;
        } else {
            memcpy(os, ix->shape, sizeof(int64_t) * (size_t)ix->ndim);
            *ond = ix->ndim;
        }
        return TETHER_OK;
    }
    case TETHER_OP_GATHER_ND: {
        int64_t b = a->axis;
        int q = ix->ndim;
        if (q < 1 || b < 0 || b >= q || b >= x->ndim) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "batch_dims %lld with data rank %d and indices rank %d",
                                         (long long)b, x->ndim, q);
        }
        int64_t m = ix->shape[q - 1];
        if (m < 1 || m > x->ndim - b) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "indices' last dimension %lld (1 to %lld)", (long long)m,
                                         (long long)(x->ndim - b));
        }
        for (int d = 0; d < b; d++) {
            if (ix->shape[d] != x->shape[d]) {
                return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                             "batch dimension %d differs (%lld, %lld)", d,
                                             (long long)ix->shape[d], (long long)x->shape[d]);
            }
        }
        int o = 0;
        for (int d = 0; d < q - 1; d++) {
            os[o++] = ix->shape[d];
        }
        for (int64_t d = b + m; d < x->ndim; d++) {
            os[o++] = x->shape[d];
        }
        *ond = o;
        return TETHER_OK;
    }
    case TETHER_OP_SCATTER_ND: {
        const tether_ir_tensor *u = tether__ir_in(g, n, 2);
        int q = ix->ndim;
        int64_t k = q ? ix->shape[q - 1] : 0;
        if (q < 1 || k < 1 || k > x->ndim || u->ndim != q - 1 + x->ndim - k) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "indices [...,%lld] and updates of rank %d do not fit "
                                         "data of rank %d",
                                         (long long)k, u->ndim, x->ndim);
        }
        for (int d = 0; d < u->ndim; d++) {
            int64_t want = d < q - 1 ? ix->shape[d] : x->shape[k + d - (q - 1)];
            if (u->shape[d] != want) {
                return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                             "updates dimension %d is %lld, expected %lld", d,
                                             (long long)u->shape[d], (long long)want);
            }
        }
        if (a->mode < 0 || a->mode > 4) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "mode %lld (reduction 0 to 4)",
                                         (long long)a->mode);
        }
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        *ond = x->ndim;
        return TETHER_OK;
    }
    case TETHER_OP_TOPK:
        if ((rc = axis_of(n, a->axis, x->ndim, &ax))) {
            return rc;
        }
        if (a->k < 0 || a->k > x->shape[ax] || a->mode < 0 || a->mode > 7) {
            return tether__ir_node_error(
                n, TETHER_ERR_INVALID_ARG,
                "k %lld (0 to the axis' extent %lld) or mode %lld (0 to 7)", (long long)a->k,
                (long long)x->shape[ax], (long long)a->mode);
        }
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        os[ax] = a->k;
        *ond = x->ndim;
        return TETHER_OK;
    case TETHER_OP_ARG_MAX:
    case TETHER_OP_ARG_MIN: {
        if ((rc = axis_of(n, a->axis, x->ndim, &ax))) {
            return rc;
        }
        if (x->shape[ax] < 1) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "the axis is empty");
        }
        int o = 0;
        for (int d = 0; d < x->ndim; d++) {
            if (d != ax || a->keepdims) {
                os[o++] = d == ax ? 1 : x->shape[d];
            }
        }
        *ond = o;
        return TETHER_OK;
    }
    case TETHER_OP_CUMSUM:
        if ((rc = axis_of(n, a->axis, x->ndim, &ax))) {
            return rc;
        }
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        *ond = x->ndim;
        return TETHER_OK;
    case TETHER_OP_TRILU:
        if (x->ndim < 2) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "the input has rank %d (2 or more)", x->ndim);
        }
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        *ond = x->ndim;
        return TETHER_OK;
    case TETHER_OP_ONE_HOT: {
        if (x->ndim + 1 > TETHER_IR_MAX_NDIM) {
            return tether__ir_node_error(n, TETHER_ERR_LIMIT, "the output's rank is above %d",
                                         TETHER_IR_MAX_NDIM);
        }
        if ((rc = axis_of(n, a->axis, x->ndim + 1, &ax))) {
            return rc;
        }
        if (tether_ir_tensor_elements(ix) != 2 || ix->ndim != 1 || a->k < 1) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "values must be [off, on] and depth (k %lld) positive",
                                         (long long)a->k);
        }
        for (int d = 0, i = 0; d <= x->ndim; d++) {
            os[d] = d == ax ? a->k : x->shape[i++];
        }
        *ond = x->ndim + 1;
        return TETHER_OK;
    }
    case TETHER_OP_TILE: {
        int nd = a->nints, off = nd - x->ndim;
        if (nd < x->ndim || nd > TETHER_IR_MAX_NDIM) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "shape has %d entries for an input of rank %d", nd,
                                         x->ndim);
        }
        for (int d = 0; d < nd; d++) {
            int64_t in = d < off ? 1 : x->shape[d - off], o = a->ints[d];
            if (o < 0 || (in == 0 ? o != 0 : o % in != 0)) {
                return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                             "output dimension %d (%lld) is not a multiple of the "
                                             "input's %lld",
                                             d, (long long)o, (long long)in);
            }
            os[d] = o;
        }
        *ond = nd;
        return TETHER_OK;
    }
    case TETHER_OP_SLICE:
        return slice_shape(n, x, os, ond);
    case TETHER_OP_EINSUM:
        return einsum_shape(g, n, os, ond);
        TETHER__CASES_VISION /* shapes_vision.c */
            return tether__ir_vision_shape(g, n, os, ond);
    case TETHER_OP_RNN:
    case TETHER_OP_GRU:
    case TETHER_OP_LSTM:
    case TETHER_OP_REVERSE_SEQUENCE:
        return tether__ir_rnn_shape(g, n, os, ond);
    case TETHER_OP_NONZERO: /* data-dependent sizes: shapes_dynamic.c */
    case TETHER_OP_COMPRESS:
    case TETHER_OP_UNIQUE:
    case TETHER_OP_NMS:
        return tether__ir_dynamic_shape(g, n, os, ond);
    case TETHER_OP_TFIDF: /* shapes_text.c */
        return tether__ir_tfidf_shape(g, n, os, ond);
        TETHER__CASES_LOOP /* shapes_loop.c */
            return tether__ir_loop_shape(g, n, os, ond);
        TETHER__CASES_NOT_DATA
        break;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "no DATA shape rule");
}

static int bad(const tether_ir_node *n, const tether_ir_tensor *t, const char *takes) {
    return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED, "input '%s' has element type %s; %s",
                                 t->name, tether__dtype_str(t->dtype), takes);
}

int tether__ir_data_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out) {
    const tether_ir_tensor *x = tether__ir_in(g, n, 0), *ix = tether__ir_in(g, n, 1);
    *out = x->dtype;
    switch (n->op) {
    case TETHER_OP_GATHER:
    case TETHER_OP_GATHER_ELEMENTS:
    case TETHER_OP_GATHER_ND:
    case TETHER_OP_SCATTER_ELEMENTS:
    case TETHER_OP_SCATTER_ND:
        if (!is_index_type(ix->dtype)) {
            return bad(n, ix, "indices must be int32 or int64");
        }
        if (n->op == TETHER_OP_SCATTER_ELEMENTS || n->op == TETHER_OP_SCATTER_ND) {
            const tether_ir_tensor *u = tether__ir_in(g, n, 2);
            if (!tether_dtype_equal(u->dtype, x->dtype)) {
                return bad(n, u, "updates must have the data's element type");
            }
            if (n->attrs.mode != 0 && tether__dtype_is_bool(x->dtype)) {
                return bad(n, x, "a reduction takes numeric types only");
            }
        }
        return TETHER_OK;
    case TETHER_OP_TOPK:
    case TETHER_OP_ARG_MAX:
    case TETHER_OP_ARG_MIN:
    case TETHER_OP_CUMSUM:
        if (tether__dtype_is_bool(x->dtype)) {
            return bad(n, x, "this operator takes numeric types only");
        }
        if (n->op != TETHER_OP_CUMSUM && (n->op != TETHER_OP_TOPK || (n->attrs.mode & 4))) {
            *out = TETHER_INT64;
        }
        return TETHER_OK;
    case TETHER_OP_TRILU:
    case TETHER_OP_TILE:
    case TETHER_OP_SLICE:
        return TETHER_OK;
    case TETHER_OP_ONE_HOT:
        if (tether__dtype_is_bool(x->dtype)) {
            return bad(n, x, "indices must be numeric");
        }
        *out = ix->dtype;
        return TETHER_OK;
    case TETHER_OP_EINSUM:
        if (tether__dtype_is_bool(x->dtype)) {
            return bad(n, x, "this operator takes numeric types only");
        }
        for (int j = 1; j < n->ninputs; j++) {
            const tether_ir_tensor *t = tether__ir_in(g, n, j);
            if (t && !tether_dtype_equal(t->dtype, x->dtype)) {
                return bad(n, t, "every input must have the first one's element type");
            }
        }
        return TETHER_OK;
        TETHER__CASES_VISION /* shapes_vision.c */
            return tether__ir_vision_dtype(g, n, out);
    case TETHER_OP_RNN:
    case TETHER_OP_GRU:
    case TETHER_OP_LSTM:
    case TETHER_OP_REVERSE_SEQUENCE:
        return tether__ir_rnn_dtype(g, n, out);
    case TETHER_OP_NONZERO: /* data-dependent sizes: shapes_dynamic.c */
    case TETHER_OP_COMPRESS:
    case TETHER_OP_UNIQUE:
    case TETHER_OP_NMS:
        return tether__ir_dynamic_dtype(g, n, out);
    case TETHER_OP_TFIDF: /* shapes_text.c */
        return tether__ir_tfidf_dtype(g, n, out);
        TETHER__CASES_LOOP /* shapes_loop.c */
            return tether__ir_loop_dtype(g, n, out);
        TETHER__CASES_NOT_DATA
        break;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "no DATA typing rule");
}
