/*
 * ONNX GridSample, RoiAlign, MaxPool with the Indices output or integer inputs, MaxUnpool, Det,
 * DFT and STFT (issue 27): their conversion into the vision and signal rows of the IR's DATA
 * family (ir/ops.def: grid_sample, roi_align, max_pool_arg, max_unpool, triangular + diag_prod,
 * dft, stft).
 *
 * What must stay true: every ONNX default is the operator version's (docs/onnx.md); a size the
 * output depends on (dft_length, frame_step, frame_length, output_shape) is a constant input,
 * else an error naming the node and the input; an attribute value the IR cannot express is an
 * error naming it, never approximated.
 */
#include <stdio.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static const tether_ir_tensor *TT(timport *c, int t) {
    return &c->g->tensors[t];
}

/* A constant scalar input as an integer (what names it in the error). */
static int const_int(timport *c, int i, const char *what, int64_t *out) {
    hconst *k;
    int rc = tonnx_in_const(c, i, true, &k);
    if (rc) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "%s must be a constant (the output's size depends on it)", what);
    }
    if (k->count != 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "%s must have one element", what);
    }
    *out = k->is_int ? ((const int64_t *)k->data)[0] : (int64_t)((const float *)k->data)[0];
    return TETHER_OK;
}

static int emit_out(timport *c, tether_op op, const int *in, int nin, const tether_ir_attrs *a) {
    int y, rc = tonnx_out_tensor(c, 0, &y);
    return rc ? rc : tonnx_emit(c, NULL, op, in, nin, y, a);
}

int tonnx_cv_grid_sample(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    char mode[32], pad[32];
    int64_t align = 0;
    int in[2], rc;
    if ((rc = tonnx_attr_string(c, "mode", "bilinear", mode, sizeof mode)) ||
        (rc = tonnx_attr_string(c, "padding_mode", "zeros", pad, sizeof pad)) ||
        (rc = tonnx_attr_int(c, "align_corners", 0, &align)) ||
        (rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1]))) {
        return rc;
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_GRID_SAMPLE, &a);
    int m = !strcmp(mode, "bilinear") || !strcmp(mode, "linear") ? 0
            : !strcmp(mode, "nearest")                           ? 1
            : !strcmp(mode, "bicubic") || !strcmp(mode, "cubic") ? 2
                                                                 : -1;
    int p = !strcmp(pad, "zeros")        ? 0
            : !strcmp(pad, "border")     ? 1
            : !strcmp(pad, "reflection") ? 2
                                         : -1;
    if (m < 0 || p < 0) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "mode '%s' / padding_mode '%s'", mode, pad);
    }
    a.mode = m | (p << 2) | (align ? 16 : 0);
    return emit_out(c, TETHER_OP_GRID_SAMPLE, in, 2, &a);
}

int tonnx_cv_roi_align(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    char mode[16], ctm[32];
    int64_t oh = 1, ow = 1, sr = 0;
    float scale = 1.0f;
    int in[3], rc;
    if ((rc = tonnx_attr_string(c, "mode", "avg", mode, sizeof mode)) ||
        (rc = tonnx_attr_string(c, "coordinate_transformation_mode",
                                c->opset >= 16 ? "half_pixel" : "output_half_pixel", ctm,
                                sizeof ctm)) ||
        (rc = tonnx_attr_int(c, "output_height", 1, &oh)) ||
        (rc = tonnx_attr_int(c, "output_width", 1, &ow)) ||
        (rc = tonnx_attr_int(c, "sampling_ratio", 0, &sr)) ||
        (rc = tonnx_attr_float(c, "spatial_scale", 1.0f, &scale))) {
        return rc;
    }
    for (int i = 0; i < 3; i++) {
        if ((rc = tonnx_in_tensor(c, i, true, &in[i]))) {
            return rc;
        }
    }
    bool mx = !strcmp(mode, "max"), half = !strcmp(ctm, "half_pixel");
    if ((!mx && strcmp(mode, "avg")) || (!half && strcmp(ctm, "output_half_pixel"))) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "mode '%s' / coordinate_transformation_mode '%s'", mode, ctm);
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_ROI_ALIGN, &a);
    a.nints = 2;
    a.ints[0] = oh;
    a.ints[1] = ow;
    a.k = sr;
    a.alpha = scale;
    a.mode = (mx ? 1 : 0) | (half ? 2 : 0);
    return emit_out(c, TETHER_OP_ROI_ALIGN, in, 3, &a);
}

int tonnx_cv_max_pool(timport *c, const Onnx__NodeProto *n) {
    int x, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    bool indices = tonnx_output_used(c, c->cur, 1);
    DLDataType xt = TT(c, x)->dtype;
    bool f32 = tether_dtype_equal(xt, TETHER_FLOAT32);
    if (!indices && f32) {
        return tonnx_cv_pool(c, n);
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_MAX_POOL_ARG, &a);
    int nsp = 0;
    int64_t so = 0;
    if ((rc = tonnx_pool_window_2d(c, x, &a, &nsp)) ||
        (rc = tonnx_attr_int(c, "storage_order", 0, &so))) {
        return rc;
    }
    if (nsp == 3) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "a 3-D MaxPool with the Indices output or a non-float32 input (1-D "
                          "and 2-D only)");
    }
    int x2 = x;
    const tether_ir_tensor *t = TT(c, x);
    int64_t s4[4] = {t->shape[0], t->shape[1], 1, t->shape[2]};
    if (nsp == 1 && (rc = tonnx_reshape_into(c, "input_2d", x, 4, s4, -1, &x2))) {
        return rc;
    }
    for (int i = 0; i < 2; i++) {
        if (i == 1 ? !indices : (f32 || !tonnx_output_used(c, c->cur, 0))) {
            continue;
        }
        int y, y2, rc2;
        if ((rc2 = tonnx_out_tensor(c, i, &y))) {
            return rc2;
        }
        a.mode = (i ? 1 : 0) | (so ? 2 : 0);
        if (nsp == 2) {
            rc2 = tonnx_emit(c, i ? "indices" : "values", TETHER_OP_MAX_POOL_ARG, &x2, 1, y, &a);
        } else if (!(rc2 = tonnx_temp_tensor(c, i ? "indices_2d" : "values_2d", &y2)) &&
                   !(rc2 = tonnx_emit(c, i ? "indices" : "values", TETHER_OP_MAX_POOL_ARG, &x2, 1,
                                      y2, &a))) {
            const tether_ir_tensor *yt = TT(c, y2);
            int64_t s3[3] = {yt->shape[0], yt->shape[1], yt->shape[3]};
            int res;
            rc2 = tonnx_reshape_into(c, i ? "indices_1d" : "values_1d", y2, 3, s3, y, &res);
        }
        if (rc2) {
            return rc2;
        }
    }
    if (f32 && tonnx_output_used(c, c->cur, 0)) { /* the values through the float32 kernels */
        int y;
        if ((rc = tonnx_out_tensor(c, 0, &y))) {
            return rc;
        }
        return tonnx_pool_into(c, TETHER_OP_MAX_POOL, x, y);
    }
    return TETHER_OK;
}

int tonnx_cv_max_unpool(timport *c, const Onnx__NodeProto *n) {
    int in[2], rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1]))) {
        return rc;
    }
    const tether_ir_tensor *xt = TT(c, in[0]);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_MAX_UNPOOL, &a);
    int nsp = xt->ndim - 2;
    if (has_input(n, 2)) {
        hconst *k;
        if ((rc = tonnx_in_const(c, 2, true, &k))) {
            return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                              "output_shape must be a constant (the output's size depends on it)");
        }
        if ((rc = tonnx_const_ints(c, k, "output_shape", a.ints, TETHER_IR_MAX_NDIM, &a.nints))) {
            return rc;
        }
        if (a.nints != xt->ndim) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "output_shape has %d entries for rank %d",
                              a.nints, xt->ndim);
        }
    }
    int64_t ks[3], st[3], pd[6];
    int nk, ns, np;
    if ((rc = tonnx_attr_ints(c, "kernel_shape", ks, 3, &nk)) ||
        (rc = tonnx_attr_ints(c, "strides", st, 3, &ns)) ||
        (rc = tonnx_attr_ints(c, "pads", pd, 6, &np))) {
        return rc;
    }
    if (nsp < 1 || nsp > 3 || nk != nsp || (ns >= 0 && ns != nsp) || (np >= 0 && np != 2 * nsp)) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "kernel_shape, strides and pads must match the %d spatial dimensions",
                          nsp);
    }
    /* the indices address the default output (ONNX: output_shape pads it at the end) */
    int64_t *dst = has_input(n, 2) ? a.steps : a.ints;
    a.nints = xt->ndim;
    dst[0] = xt->shape[0];
    dst[1] = xt->shape[1];
    for (int i = 0; i < nsp; i++) {
        int64_t s = ns >= 0 ? st[i] : 1, pb = np >= 0 ? pd[i] : 0, pe = np >= 0 ? pd[nsp + i] : 0;
        dst[2 + i] = (xt->shape[2 + i] - 1) * s - (pb + pe) + ks[i];
    }
    return emit_out(c, TETHER_OP_MAX_UNPOOL, in, 2, &a);
}

int tonnx_cv_det(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int x, t, rc;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_TRIANGULAR, &a);
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = tonnx_temp_tensor(c, "triangular", &t)) ||
        (rc = tonnx_emit(c, "triangular", TETHER_OP_TRIANGULAR, &x, 1, t, &a))) {
        return rc;
    }
    tether_ir_attrs_init(TETHER_OP_DIAG_PROD, &a);
    return emit_out(c, TETHER_OP_DIAG_PROD, &t, 1, &a);
}

int tonnx_cv_dft(timport *c, const Onnx__NodeProto *n) {
    int x, rc;
    int64_t inv = 0, one = 0;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_DFT, &a);
    if ((rc = tonnx_attr_int(c, "axis", 1, &a.axis)) ||
        (rc = tonnx_attr_int(c, "inverse", 0, &inv)) ||
        (rc = tonnx_attr_int(c, "onesided", 0, &one)) || (rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    const tether_ir_tensor *xt = TT(c, x);
    int ax = (int)(a.axis < 0 ? a.axis + xt->ndim : a.axis);
    if (ax < 0 || ax >= xt->ndim - 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axis %lld out of range for rank %d",
                          (long long)a.axis, xt->ndim);
    }
    a.axis = ax;
    a.k = xt->shape[ax];
    if (has_input(n, 1) && (rc = const_int(c, 1, "dft_length", &a.k))) {
        return rc;
    }
    a.mode = (inv ? 1 : 0) | (one ? 2 : 0);
    return emit_out(c, TETHER_OP_DFT, &x, 1, &a);
}

int tonnx_cv_stft(timport *c, const Onnx__NodeProto *n) {
    int in[2] = {-1, -1}, rc;
    int64_t one = 1;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_STFT, &a);
    if ((rc = tonnx_attr_int(c, "onesided", 1, &one)) ||
        (rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = const_int(c, 1, "frame_step", &a.k)) ||
        (has_input(n, 2) && (rc = tonnx_in_tensor(c, 2, true, &in[1])))) {
        return rc;
    }
    int64_t fl = in[1] >= 0 ? TT(c, in[1])->shape[0] : 0;
    if (has_input(n, 3) && (rc = const_int(c, 3, "frame_length", &fl))) {
        return rc;
    }
    if (fl < 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "needs a window or a frame_length");
    }
    a.nints = 1;
    a.ints[0] = fl;
    a.mode = one ? 2 : 0;
    return emit_out(c, TETHER_OP_STFT, in, in[1] >= 0 ? 2 : 1, &a);
}
