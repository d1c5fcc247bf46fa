/*
 * Shape and typing rules of the vision and signal rows of the DATA family (grid_sample,
 * roi_align, max_pool_arg, max_unpool, triangular, diag_prod, dft, stft; ops.def, issue 27):
 * tether__ir_vision_shape and tether__ir_vision_dtype, which shapes_data.c hands them to.
 *
 * What must stay true: a node passes these rules only when its kernels (interp/interp_vision.c,
 * codegen/emit_c_vision.c) run it without reading or writing outside its tensors for any
 * attribute it accepts (index and batch-index *values* are checked at run time by the kernels);
 * every size the output depends on is an attribute (known at compile time); each message names
 * the node and what is wrong. The switches name every vision row (TETHER__CASES_VISION).
 */
#include <string.h>

#include "../internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/ir.h"

static int fail(const tether_ir_node *n, const char *what) {
    return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "%s", what);
}

/* An integer type (not bool): indices and batch indices (ONNX gives int64). */
static bool is_index(DLDataType t) {
    return t.lanes == 1 && (t.code == kDLInt || (t.code == kDLUInt && t.bits > 1));
}

/* The length of a DFT node's output along its axis. */
static int64_t dft_bins(int64_t len, int64_t mode) {
    return (mode & 2) ? len / 2 + 1 : len;
}

int tether__ir_vision_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond) {
    const tether_ir_tensor *x = tether__ir_in(g, n, 0);
    const tether_ir_attrs *a = &n->attrs;
    switch (n->op) {
    case TETHER_OP_GRID_SAMPLE: {
        const tether_ir_tensor *gr = tether__ir_in(g, n, 1);
        if (x->ndim != 4 || gr->ndim != 4 || gr->shape[3] != 2 || gr->shape[0] != x->shape[0]) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "needs x [N,C,H,W] and grid [N,Ho,Wo,2] (2-D sampling)");
        }
        if (a->mode < 0 || (a->mode & 3) == 3 || ((a->mode >> 2) & 3) == 3 || a->mode >= 32) {
            return fail(n, "mode must encode bilinear/nearest/bicubic, zeros/border/reflection");
        }
        if (x->shape[2] < 1 || x->shape[3] < 1) {
            return fail(n, "the input plane is empty");
        }
        os[0] = x->shape[0];
        os[1] = x->shape[1];
        os[2] = gr->shape[1];
        os[3] = gr->shape[2];
        *ond = 4;
        return TETHER_OK;
    }
    case TETHER_OP_ROI_ALIGN: {
        const tether_ir_tensor *r = tether__ir_in(g, n, 1), *b = tether__ir_in(g, n, 2);
        if (x->ndim != 4 || r->ndim != 2 || r->shape[1] != 4 || b->ndim != 1 ||
            b->shape[0] != r->shape[0]) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "needs x [N,C,H,W], rois [R,4] and batch indices [R]");
        }
        if (a->nints != 2 || a->ints[0] < 1 || a->ints[1] < 1 || a->k < 0 || a->mode < 0 ||
            a->mode > 3 || !(a->alpha > 0.0f)) {
            return fail(n, "needs shape [out_h, out_w] >= 1, a sampling ratio >= 0 and a "
                           "positive spatial scale");
        }
        os[0] = r->shape[0];
        os[1] = x->shape[1];
        os[2] = a->ints[0];
        os[3] = a->ints[1];
        *ond = 4;
        return TETHER_OK;
    }
    case TETHER_OP_MAX_POOL_ARG: {
        if (a->mode < 0 || a->mode > 3) {
            return fail(n, "mode must be 0..3 (bit 0 indices, bit 1 column-major)");
        }
        tether_ir_node p = *n; /* max_pool's window rule, checks and output shape */
        p.op = TETHER_OP_MAX_POOL;
        return tether__ir_infer_shape(g, &p, os, ond);
    }
    case TETHER_OP_MAX_UNPOOL: {
        const tether_ir_tensor *ix = tether__ir_in(g, n, 1);
        if (ix->ndim != x->ndim ||
            memcmp(ix->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim) != 0) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "the indices must have the input's shape");
        }
        if (a->nints != x->ndim || x->ndim < 3) {
            return fail(n, "shape must give the output's shape (the input's rank, >= 3)");
        }
        int64_t total = 1, space = 1;
        for (int d = 0; d < a->nints; d++) {
            int64_t sp = a->steps[d] ? a->steps[d] : a->ints[d];
            if (a->ints[d] < 1 || sp < 1 ||
                (d < 2 && (a->ints[d] != x->shape[d] || sp != x->shape[d]))) {
                return fail(n,
                            "the output shape and index space must be positive and keep N and C");
            }
            if (sp > a->ints[d]) {
                return fail(n, "the index space must fit in the output shape");
            }
            os[d] = a->ints[d];
            total *= a->ints[d];
            space *= sp;
            if (total > INT32_MAX) {
                return fail(n, "an output of 2^31 elements or more");
            }
        }
        (void)space;
        for (int d = a->nints; d < TETHER_IR_MAX_NDIM; d++) {
            if (a->steps[d]) {
                return fail(n, "steps has more entries than the output's rank");
            }
        }
        *ond = a->nints;
        return TETHER_OK;
    }
    case TETHER_OP_TRIANGULAR:
    case TETHER_OP_DIAG_PROD:
        if (x->ndim < 2 || x->shape[x->ndim - 1] != x->shape[x->ndim - 2]) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "needs square matrices in the last two dimensions");
        }
        *ond = n->op == TETHER_OP_TRIANGULAR ? x->ndim : x->ndim - 2;
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)*ond);
        return TETHER_OK;
    case TETHER_OP_DFT: {
        int ax = tether__ir_norm_axis(a->axis, x->ndim);
        int64_t c = x->ndim ? x->shape[x->ndim - 1] : 0;
        if (x->ndim < 2 || ax < 0 || ax == x->ndim - 1 || (c != 1 && c != 2)) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "needs x [..., 1 or 2] and an axis before the last");
        }
        if (a->k < 1 || a->mode < 0 || a->mode > 3 || ((a->mode & 2) && c == 2)) {
            return fail(n, "needs a length >= 1; onesided only on a real input");
        }
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        os[ax] = dft_bins(a->k, a->mode);
        os[x->ndim - 1] = 2;
        *ond = x->ndim;
        return TETHER_OK;
    }
    case TETHER_OP_STFT: {
        const tether_ir_tensor *w = tether__ir_in(g, n, 1);
        if (x->ndim != 3 || (x->shape[2] != 1 && x->shape[2] != 2)) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "needs a signal [batch, length, 1 or 2]");
        }
        int64_t fl = a->nints == 1 ? a->ints[0] : 0;
        if (fl < 1 || fl > x->shape[1] || a->k < 1 || a->mode < 0 || a->mode > 3 || (a->mode & 1) ||
            ((a->mode & 2) && x->shape[2] == 2)) {
            return fail(n, "needs 1 <= frame length <= the signal's length, a frame step >= 1; "
                           "onesided only on a real signal");
        }
        if (w && (w->ndim != 1 || w->shape[0] != fl)) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "the window must be [frame length]");
        }
        os[0] = x->shape[0];
        os[1] = (x->shape[1] - fl) / a->k + 1;
        os[2] = dft_bins(fl, a->mode);
        os[3] = 2;
        *ond = 4;
        return TETHER_OK;
    }
        TETHER__CASES_NOT_DATA
        TETHER__CASES_DATA_NOT_VISION
        break;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "no vision shape rule");
}

static int bad(const tether_ir_node *n, const tether_ir_tensor *t, const char *takes) {
    return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED, "input '%s' has element type %s; %s",
                                 t->name, tether__dtype_str(t->dtype), takes);
}

int tether__ir_vision_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out) {
    const tether_ir_tensor *x = tether__ir_in(g, n, 0);
    bool xf = tether__dtype_is_float(x->dtype);
    *out = x->dtype;
    switch (n->op) {
    case TETHER_OP_GRID_SAMPLE:
    case TETHER_OP_ROI_ALIGN:
    case TETHER_OP_DFT:
    case TETHER_OP_STFT:
        if (!xf) {
            return bad(n, x, "this operator takes floating types");
        }
        for (int i = 1; i < n->ninputs; i++) {
            const tether_ir_tensor *t = tether__ir_in(g, n, i);
            if (!t) {
                continue;
            }
            if (n->op == TETHER_OP_ROI_ALIGN && i == 2) {
                if (!is_index(t->dtype)) {
                    return bad(n, t, "the batch indices must be integers");
                }
            } else if (!tether__dtype_is_float(t->dtype)) {
                return bad(n, t, "this operator takes floating types");
            }
        }
        return TETHER_OK;
    case TETHER_OP_MAX_POOL_ARG:
        if (tether__dtype_is_bool(x->dtype) || tether__dtype_class(x->dtype) == TETHER__DC_NONE) {
            return bad(n, x, "max_pool_arg takes numeric types");
        }
        if (n->attrs.mode & 1) {
            *out = TETHER_DTYPE(kDLInt, 64);
        }
        return TETHER_OK;
    case TETHER_OP_MAX_UNPOOL: {
        const tether_ir_tensor *ix = tether__ir_in(g, n, 1);
        if (!is_index(ix->dtype)) {
            return bad(n, ix, "the indices must be integers");
        }
        return TETHER_OK;
    }
    case TETHER_OP_TRIANGULAR:
    case TETHER_OP_DIAG_PROD:
        if (!xf || x->dtype.bits < 32 || x->dtype.code != kDLFloat) {
            return bad(n, x, "this operator takes float32 and float64");
        }
        return TETHER_OK;
        TETHER__CASES_NOT_DATA
        TETHER__CASES_DATA_NOT_VISION
        break;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "no vision typing rule");
}
