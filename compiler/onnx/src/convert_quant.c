/*
 * The ONNX quantization operators (docs/quantization.md): QuantizeLinear and DequantizeLinear
 * (the QDQ format), DynamicQuantizeLinear, QLinearConv, QLinearMatMul, ConvInteger,
 * MatMulInteger, and the com.microsoft operators ONNX Runtime's quantizer writes (QGemm,
 * QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearConcat,
 * QLinearGlobalAveragePool, QLinearAveragePool).
 *
 * The integer operators become qconv / qmatmul with their zero points as int32 constants and the
 * requantization (multiplier, shift per output channel) computed here from the constant scales:
 * M = x_scale * w_scale / y_scale in float32, as ONNX Runtime computes it. The element-wise and
 * pooling com.microsoft operators become dequantize -> the float operator -> quantize (the
 * compile report lists them as float).
 *
 * What must stay true: a scale that is not finite and > 0, a zero point outside its type, a
 * per-channel parameter whose length is not the channel count, an int4/float8 type, are errors
 * naming the node; nothing is approximated silently.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/ir.h"

static const tether_ir_tensor *TT(timport *c, int t) {
    return &c->g->tensors[t];
}

static const char *in_name(timport *c, int i) {
    const Onnx__NodeProto *n = c->gp->node[c->cur];
    return i < (int)n->n_input ? S(n->input[i]) : "";
}

/* The range of a quantized type (int8 ... int32, uint8, uint16); 0 for another. */
static int qrange(DLDataType t, int64_t *lo, int64_t *hi) {
    if (t.lanes != 1 || (t.code != kDLInt && t.code != kDLUInt) ||
        (t.bits != 8 && t.bits != 16 && t.bits != 32) || (t.code == kDLUInt && t.bits == 32)) {
        return 0;
    }
    *lo = t.code == kDLInt ? -((int64_t)1 << (t.bits - 1)) : 0;
    *hi = t.code == kDLInt ? ((int64_t)1 << (t.bits - 1)) - 1 : ((int64_t)1 << t.bits) - 1;
    return 1;
}

/* A type's name, for messages (four rotating buffers). */
static const char *dn(DLDataType t) {
    static char b[4][TETHER_DTYPE_NAME_MAX];
    static int k;
    k = (k + 1) % 4;
    snprintf(b[k], sizeof b[k], "?");
    tether_dtype_name(t, b[k], sizeof b[k]);
    return b[k];
}

static bool q8(DLDataType t) {
    return t.lanes == 1 && t.bits == 8 && (t.code == kDLInt || t.code == kDLUInt);
}

/* A constant input that is a scale: finite and > 0. */
static int scale_const(timport *c, int i, hconst **k) {
    int rc = tonnx_in_const(c, i, true, k);
    if (rc) {
        return rc;
    }
    if ((*k)->is_int) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "scale '%s' is not float", in_name(c, i));
    }
    if ((*k)->ndim > 1) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "scale '%s' has rank %d (blocked quantization is not supported)",
                          in_name(c, i), (*k)->ndim);
    }
    for (size_t j = 0; j < (*k)->count; j++) {
        float v = ((const float *)(*k)->data)[j];
        if (!(v > 0.0f) || !isfinite(v)) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "scale '%s' element %zu is %g (finite and > 0 needed)", in_name(c, i),
                              j, (double)v);
        }
    }
    return TETHER_OK;
}

/* A constant zero point (absent: NULL), its type checked against `want` (unless want.bits 0)
 * and its values against the type's range. */
static int zp_const(timport *c, int i, DLDataType want, hconst **k) {
    int rc = tonnx_in_const(c, i, false, k);
    if (rc || !*k) {
        return rc;
    }
    int64_t lo, hi;
    if (!(*k)->is_int || !qrange((*k)->dt, &lo, &hi)) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "zero point '%s' has type %s (int8, uint8, int16, uint16 or int32 "
                          "supported; int4 and float8 are not)",
                          in_name(c, i), dn((*k)->dt));
    }
    if (want.bits && !tether_dtype_equal((*k)->dt, want)) {
        return tonnx_fail(c, TETHER_ERR_MISMATCH, "zero point '%s' is %s, its data %s",
                          in_name(c, i), dn((*k)->dt), dn(want));
    }
    for (size_t j = 0; j < (*k)->count; j++) {
        int64_t v = ((const int64_t *)(*k)->data)[j];
        if (v < lo || v > hi) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "zero point '%s' element %zu (%lld) is "
                              "outside %s",
                              in_name(c, i), j, (long long)v, dn((*k)->dt));
        }
    }
    return TETHER_OK;
}

/* An IR constant of type dt from host values (int64 or float32), shape given. */
static int typed_const(timport *c, const char *suffix, DLDataType dt, const hconst *k, int ndim,
                       const int64_t *shape, int *t) {
    size_t es = tether_dtype_bytes(dt), n = k->count;
    uint8_t *buf = calloc(n ? n : 1, es);
    if (!buf) {
        return tonnx_fail(c, TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t j = 0; j < n; j++) {
        if (dt.code == kDLFloat) {
            float f =
                k->is_int ? (float)((const int64_t *)k->data)[j] : ((const float *)k->data)[j];
            memcpy(buf + j * 4, &f, 4);
            continue;
        }
        int64_t v =
            k->is_int ? ((const int64_t *)k->data)[j] : (int64_t)((const float *)k->data)[j];
        if (es == 1) {
            buf[j] = (uint8_t)v;
        } else if (es == 2) {
            uint16_t u = (uint16_t)v;
            memcpy(buf + j * 2, &u, 2);
        } else if (es == 4) {
            uint32_t u = (uint32_t)v;
            memcpy(buf + j * 4, &u, 4);
        } else {
            memcpy(buf + j * 8, &v, 8);
        }
    }
    char name[400];
    snprintf(name, sizeof name, "%s/%s", tonnx_node_name(c, c->cur), suffix);
    for (int u = 1; tether_ir_find_tensor(c->g, name) >= 0; u++) {
        snprintf(name, sizeof name, "%s/%s#%d", tonnx_node_name(c, c->cur), suffix, u);
    }
    int rc = tether_ir_add_constant(c->g, name, dt, ndim, shape, buf, n * es, t);
    free(buf);
    return rc ? tonnx_wrap(c, rc) : TETHER_OK;
}

/* An int32 constant [n] from values v. */
static int i32_const(timport *c, const char *suffix, const int64_t *v, int64_t n, int ndim,
                     int *t) {
    hconst k = {.is_int = true, .count = (size_t)n, .data = (void *)v};
    int64_t shape[2] = {ndim == 2 ? n / 2 : n, 2};
    return typed_const(c, suffix, TETHER_INT32, &k, ndim, shape, t);
}

/* Input i as a tensor of its own element type: a constant one made with its type (an integer
 * initializer keeps int8/uint8/...), else the run-time tensor. */
static int typed_in(timport *c, int i, bool required, int *t) {
    *t = -1;
    const char *name = in_name(c, i);
    if (!name[0]) {
        return required ? tonnx_fail(c, TETHER_ERR_INVALID_ARG, "input %d is missing", i)
                        : TETHER_OK;
    }
    int vi = tonnx_find(c, name);
    if (vi >= 0 && c->v[vi].k && c->v[vi].k->is_int &&
        !tether_dtype_equal(c->v[vi].k->dt, TETHER_INT64)) {
        hconst *k = c->v[vi].k;
        if (c->v[vi].tensor >= 0 && tether_dtype_equal(TT(c, c->v[vi].tensor)->dtype, k->dt)) {
            *t = c->v[vi].tensor;
            return TETHER_OK;
        }
        int rc = typed_const(c, "const", k->dt, k, k->ndim, k->shape, t);
        if (!rc && c->v[vi].tensor < 0) {
            c->v[vi].tensor = *t;
        }
        return rc;
    }
    return tonnx_in_tensor(c, i, required, t);
}

/* The output type of a quantizing node: its zero point's, else `def`. */
static DLDataType out_type(const hconst *zp, DLDataType def) {
    return zp ? zp->dt : def;
}

/* ---- QuantizeLinear, DequantizeLinear ---------------------------------------------------- */

static int check_block(timport *c) {
    int64_t bs = 0;
    int rc = tonnx_attr_int(c, "block_size", 0, &bs);
    if (!rc && bs != 0) {
        rc = tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                        "block_size %lld (blocked quantization) is not "
                        "supported",
                        (long long)bs);
    }
    return rc;
}

/* Inputs 1 (scale) and 2 (zero point) of a Q/DQ node: constants checked and made typed, or the
 * run-time tensors. *zdt the zero point's type when known (bits 0 otherwise). */
static int qdq_params(timport *c, DLDataType zwant, int *s, int *z, DLDataType *zdt) {
    int vs = tonnx_find(c, in_name(c, 1)), rc;
    zdt->bits = 0;
    if (vs >= 0 && c->v[vs].k) {
        hconst *k;
        if ((rc = scale_const(c, 1, &k)) ||
            (rc = typed_const(c, "scale", TETHER_FLOAT32, k, k->ndim, k->shape, s))) {
            return rc;
        }
    } else if ((rc = tonnx_in_tensor(c, 1, true, s))) {
        return rc;
    }
    *z = -1;
    if (!in_name(c, 2)[0]) {
        return TETHER_OK;
    }
    int vz = tonnx_find(c, in_name(c, 2));
    if (vz >= 0 && c->v[vz].k) {
        hconst *k;
        if ((rc = zp_const(c, 2, zwant, &k))) {
            return rc;
        }
        *zdt = k->dt;
        return typed_const(c, "zero_point", k->dt, k, k->ndim, k->shape, z);
    }
    if ((rc = tonnx_in_tensor(c, 2, false, z))) {
        return rc;
    }
    *zdt = TT(c, *z)->dtype;
    return TETHER_OK;
}

int tonnx_cv_quantize(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int in[3], y, rc;
    int64_t axis = 1, odt = 0;
    DLDataType zdt, to = TETHER_UINT8;
    if ((rc = check_block(c)) || (rc = tonnx_attr_int(c, "axis", 1, &axis)) ||
        (rc = tonnx_attr_int(c, "output_dtype", 0, &odt)) ||
        (rc = tonnx_in_tensor(c, 0, true, &in[0])) ||
        (rc = qdq_params(c, (DLDataType){0, 0, 1}, &in[1], &in[2], &zdt))) {
        return rc;
    }
    if (odt &&
        (!tonnx_onnx_dtype((int32_t)odt, &to) || !qrange(to, &(int64_t){0}, &(int64_t){0}))) {
        char tn[32];
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "output_dtype %s is not supported (int8, "
                          "uint8, int16, uint16)",
                          tonnx_dtype_name((int32_t)odt, tn, sizeof tn));
    }
    if (zdt.bits) {
        to = zdt;
    }
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_QUANTIZE, &a);
    a.axis = axis;
    a.to = to;
    return tonnx_emit(c, NULL, TETHER_OP_QUANTIZE, in, in[2] >= 0 ? 3 : 2, y, &a);
}

int tonnx_cv_dequantize(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int in[3], y, rc;
    int64_t axis = 1;
    DLDataType zdt;
    if ((rc = check_block(c)) || (rc = tonnx_attr_int(c, "axis", 1, &axis)) ||
        (rc = typed_in(c, 0, true, &in[0])) ||
        (rc = qdq_params(c, TT(c, in[0])->dtype, &in[1], &in[2], &zdt)) ||
        (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_DEQUANTIZE, &a);
    a.axis = axis;
    return tonnx_emit(c, NULL, TETHER_OP_DEQUANTIZE, in, in[2] >= 0 ? 3 : 2, y, &a);
}

/* ---- integer convolution and matrix product ----------------------------------------------- */

/* The requantization rows of per-channel multipliers xs * ws[c] / ys (ws of 1 or ch elements,
 * alpha folded in), as an int32 [rows,2] constant. */
static int requant_const(timport *c, float xs, const hconst *ws, float ys, float alpha, int64_t ch,
                         int *t) {
    int64_t rows = ws->count == 1 ? 1 : ch, *v = malloc(sizeof(int64_t) * (size_t)(2 * rows));
    if (!v) {
        return tonnx_fail(c, TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int64_t r = 0; r < rows; r++) {
        volatile float m = xs * ((const float *)ws->data)[ws->count == 1 ? 0 : r];
        m = m * alpha;
        m = m / ys; /* float32, as ONNX Runtime */
        int32_t mult, shift;
        if (tether_quant_multiplier((double)m, &mult, &shift)) {
            free(v);
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "channel %lld: %s", (long long)r,
                              tether_last_error());
        }
        v[2 * r] = mult;
        v[2 * r + 1] = shift;
    }
    int rc = i32_const(c, "requant", v, 2 * rows, 2, t);
    free(v);
    return rc;
}

/* A zero point as an int32 [1] or [count] constant (absent: none, -1); its count must be 1 or
 * ch (per channel; ch 0: one element only). */
static int zp_i32(timport *c, int i, DLDataType want, int64_t ch, const char *what, int *t) {
    hconst *k;
    int rc = zp_const(c, i, want, &k);
    *t = -1;
    if (rc || !k) {
        return rc;
    }
    if (k->count != 1 && (int64_t)k->count != ch) {
        return tonnx_fail(c, TETHER_ERR_MISMATCH,
                          "%s '%s' has %zu elements: one, or %lld (one per channel)", what,
                          in_name(c, i), k->count, (long long)ch);
    }
    return i32_const(c, what, k->data, (int64_t)k->count, 1, t);
}

static int check_channels(timport *c, const hconst *k, int64_t ch, const char *what, int i) {
    if (k->count != 1 && (int64_t)k->count != ch) {
        return tonnx_fail(c, TETHER_ERR_MISMATCH,
                          "%s '%s' has %zu elements: one, or %lld (one per channel)", what,
                          in_name(c, i), k->count, (long long)ch);
    }
    return TETHER_OK;
}

static float one(const hconst *k) {
    return ((const float *)k->data)[0];
}

/* A qconv of the current node: x, w tensors; params input indices (-1 absent). */
static int qconv(timport *c, int x, int w, int bias_i, int xz_i, int wz_i, const hconst *xs,
                 const hconst *ws, const hconst *ys, int yz_i) {
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_QCONV, &a);
    int x2, w2, nsp, rc, y;
    if (!q8(TT(c, x)->dtype) || !q8(TT(c, w)->dtype)) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "input and weights are %s and %s (int8 or "
                          "uint8)",
                          dn(TT(c, x)->dtype), dn(TT(c, w)->dtype));
    }
    if ((rc = tonnx_conv_window2d(c, x, w, &a, &x2, &w2, &nsp))) {
        return rc;
    }
    int64_t O = TT(c, w)->shape[0];
    int in[7] = {x2, w2, -1, -1, -1, -1, -1};
    hconst *yzk = NULL;
    if (bias_i >= 0 && (rc = typed_in(c, bias_i, false, &in[2]))) {
        return rc;
    }
    if ((rc = zp_i32(c, xz_i, TT(c, x)->dtype, 1, "x_zero_point", &in[3])) ||
        (rc = zp_i32(c, wz_i, TT(c, w)->dtype, O, "w_zero_point", &in[4]))) {
        return rc;
    }
    if (ys) {
        if ((rc = check_channels(c, xs, 1, "x_scale", 1)) ||
            (rc = check_channels(c, ws, O, "w_scale", 4)) ||
            (rc = check_channels(c, ys, 1, "y_scale", 6)) ||
            (rc = requant_const(c, one(xs), ws, one(ys), 1.0f, O, &in[5])) ||
            (rc = zp_const(c, yz_i, (DLDataType){0, 0, 1}, &yzk)) ||
            (rc = zp_i32(c, yz_i, (DLDataType){0, 0, 1}, 1, "y_zero_point", &in[6]))) {
            return rc;
        }
        a.to = out_type(yzk, TT(c, x)->dtype);
    } else {
        a.to = TETHER_INT32;
    }
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    if (nsp == 2) {
        return tonnx_emit(c, NULL, TETHER_OP_QCONV, in, 7, y, &a);
    }
    int y2;
    if ((rc = tonnx_temp_tensor(c, "conv_2d", &y2)) ||
        (rc = tonnx_emit(c, "conv_2d", TETHER_OP_QCONV, in, 7, y2, &a))) {
        return rc;
    }
    const tether_ir_tensor *yt = TT(c, y2);
    int64_t s3[3] = {yt->shape[0], yt->shape[1], yt->shape[3]};
    return tonnx_reshape_into(c, NULL, y2, 3, s3, y, &y2);
}

int tonnx_cv_qlinear_conv(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int x, w, rc;
    hconst *xs, *ws, *ys;
    if ((rc = typed_in(c, 0, true, &x)) || (rc = typed_in(c, 3, true, &w)) ||
        (rc = scale_const(c, 1, &xs)) || (rc = scale_const(c, 4, &ws)) ||
        (rc = scale_const(c, 6, &ys))) {
        return rc;
    }
    return qconv(c, x, w, 8, 2, 5, xs, ws, ys, 7);
}

int tonnx_cv_conv_integer(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int x, w, rc;
    if ((rc = typed_in(c, 0, true, &x)) || (rc = typed_in(c, 1, true, &w))) {
        return rc;
    }
    return qconv(c, x, w, -1, 2, 3, NULL, NULL, NULL, -1);
}

/* A qmatmul of a and b (tensors) into out: bias tensor, zero-point input indices, scales (ys
 * NULL: the int32 accumulator). */
static int qmatmul(timport *c, int a, int b, int bias, int az_i, int bz_i, const hconst *as,
                   const hconst *bs, const hconst *ys, int yz_i, float alpha, int out) {
    int rc;
    if (!q8(TT(c, a)->dtype) || !q8(TT(c, b)->dtype)) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "A and B are %s and %s (int8 or uint8)",
                          dn(TT(c, a)->dtype), dn(TT(c, b)->dtype));
    }
    const tether_ir_tensor *at = TT(c, a), *bt = TT(c, b);
    int64_t M = at->ndim >= 2 ? at->shape[at->ndim - 2] : 1,
            N = bt->ndim >= 2 ? bt->shape[bt->ndim - 1] : 1;
    int in[7] = {a, b, bias, -1, -1, -1, -1};
    hconst *yzk = NULL;
    tether_ir_attrs at_;
    tether_ir_attrs_init(TETHER_OP_QMATMUL, &at_);
    if ((rc = zp_i32(c, az_i, at->dtype, M, "a_zero_point", &in[3])) ||
        (rc = zp_i32(c, bz_i, bt->dtype, N, "b_zero_point", &in[4]))) {
        return rc;
    }
    if (ys) {
        if ((rc = check_channels(c, as, 1, "a_scale", 1)) ||
            (rc = check_channels(c, bs, N, "b_scale", 4)) ||
            (rc = check_channels(c, ys, 1, "y_scale", 6)) ||
            (rc = requant_const(c, one(as), bs, one(ys), alpha, N, &in[5])) ||
            (rc = zp_const(c, yz_i, (DLDataType){0, 0, 1}, &yzk)) ||
            (rc = zp_i32(c, yz_i, (DLDataType){0, 0, 1}, 1, "y_zero_point", &in[6]))) {
            return rc;
        }
        at_.to = out_type(yzk, at->dtype);
    } else {
        at_.to = TETHER_INT32;
    }
    return tonnx_emit(c, NULL, TETHER_OP_QMATMUL, in, 7, out, &at_);
}

int tonnx_cv_qlinear_matmul(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int a, b, y, rc;
    hconst *as, *bs, *ys;
    if ((rc = typed_in(c, 0, true, &a)) || (rc = typed_in(c, 3, true, &b)) ||
        (rc = scale_const(c, 1, &as)) || (rc = scale_const(c, 4, &bs)) ||
        (rc = scale_const(c, 6, &ys)) || (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    return qmatmul(c, a, b, -1, 2, 5, as, bs, ys, 7, 1.0f, y);
}

int tonnx_cv_matmul_integer(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int a, b, y, rc;
    if ((rc = typed_in(c, 0, true, &a)) || (rc = typed_in(c, 1, true, &b)) ||
        (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    return qmatmul(c, a, b, -1, 2, 3, NULL, NULL, NULL, -1, 1.0f, y);
}

static int transpose2(timport *c, const char *suffix, int x, int *t) {
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_TRANSPOSE, &a);
    a.nints = 2;
    a.ints[0] = 1;
    a.ints[1] = 0;
    int rc = tonnx_temp_tensor(c, suffix, t);
    return rc ? rc : tonnx_emit(c, suffix, TETHER_OP_TRANSPOSE, &x, 1, *t, &a);
}

/* com.microsoft QGemm: A, a_scale, a_zp, B, b_scale, b_zp, C (int32 bias), y_scale, y_zp
 * (without y_scale the output is float: alpha * a_scale * b_scale * (A B + C)). */
int tonnx_cv_qgemm(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int a, b, bias = -1, y, rc;
    int64_t ta = 0, tb = 0;
    float alpha = 1.0f;
    hconst *as, *bs, *ys = NULL;
    if ((rc = typed_in(c, 0, true, &a)) || (rc = typed_in(c, 3, true, &b)) ||
        (rc = scale_const(c, 1, &as)) || (rc = scale_const(c, 4, &bs)) ||
        (rc = tonnx_attr_int(c, "transA", 0, &ta)) || (rc = tonnx_attr_int(c, "transB", 0, &tb)) ||
        (rc = tonnx_attr_float(c, "alpha", 1.0f, &alpha))) {
        return rc;
    }
    if (!(alpha > 0.0f) || !isfinite(alpha)) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "alpha %g (finite and > 0 supported)",
                          (double)alpha);
    }
    if (in_name(c, 7)[0] && (rc = scale_const(c, 7, &ys))) {
        return rc;
    }
    if ((ta && (rc = transpose2(c, "a_t", a, &a))) || (tb && (rc = transpose2(c, "b_t", b, &b)))) {
        return rc;
    }
    int64_t N = TT(c, b)->shape[TT(c, b)->ndim - 1];
    if (in_name(c, 6)[0]) {
        hconst *ck;
        if ((rc = tonnx_in_const(c, 6, true, &ck))) {
            return rc;
        }
        if (!ck->is_int || (ck->count != 1 && (int64_t)ck->count != N) ||
            (ck->ndim == 2 && ck->shape[0] != 1)) {
            return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                              "C must be an int32 bias of one element or [%lld]", (long long)N);
        }
        int64_t *v = malloc(sizeof(int64_t) * (size_t)N);
        if (!v) {
            return tonnx_fail(c, TETHER_ERR_OUT_OF_MEMORY, "out of memory");
        }
        for (int64_t j = 0; j < N; j++) {
            v[j] = ((const int64_t *)ck->data)[ck->count == 1 ? 0 : j];
        }
        rc = i32_const(c, "bias", v, N, 1, &bias);
        free(v);
        if (rc) {
            return rc;
        }
    }
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    if (ys) {
        return qmatmul(c, a, b, bias, 2, 5, as, bs, ys, 8, alpha, y);
    }
    /* float output: the int32 accumulator dequantized per column */
    int acc, sc, dq_in[2];
    float *s = malloc(sizeof(float) * (size_t)N);
    if (!s) {
        return tonnx_fail(c, TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if ((rc = check_channels(c, bs, N, "b_scale", 4))) {
        free(s);
        return rc;
    }
    for (int64_t j = 0; j < N; j++) {
        s[j] = alpha * one(as) * ((const float *)bs->data)[bs->count == 1 ? 0 : j];
    }
    rc = tonnx_const_tensor(c, "scale", 1, &N, s, &sc);
    free(s);
    if (rc || (rc = tonnx_temp_tensor(c, "acc", &acc)) ||
        (rc = qmatmul(c, a, b, bias, 2, 5, NULL, NULL, NULL, -1, 1.0f, acc))) {
        return rc;
    }
    dq_in[0] = acc;
    dq_in[1] = sc;
    tether_ir_attrs da;
    tether_ir_attrs_init(TETHER_OP_DEQUANTIZE, &da);
    da.axis = -1;
    return tonnx_emit(c, "dequantize", TETHER_OP_DEQUANTIZE, dq_in, 2, y, &da);
}

/* ---- DynamicQuantizeLinear: uint8, scale = (max(x,0) - min(x,0)) / 255, zp = sat(rne(-min/s)) */

static int node(timport *c, const char *suffix, tether_op op, const int *in, int nin,
                const tether_ir_attrs *a, int out, int *res) {
    int rc = TETHER_OK;
    if (out < 0) {
        rc = tonnx_temp_tensor(c, suffix, &out);
    }
    *res = out;
    return rc ? rc : tonnx_emit(c, suffix, op, in, nin, out, a);
}

static int scalar(timport *c, const char *suffix, float v, int *t) {
    return tonnx_const_tensor(c, suffix, 0, NULL, &v, t);
}

int tonnx_cv_dyn_quantize(timport *c, const Onnx__NodeProto *n) {
    int x, rc, mn, mx, zero, k255, t1, t2, d, s, negmin, zp, y;
    tether_ir_attrs ra, qa;
    tether_ir_attrs_init(TETHER_OP_REDUCE_MIN, &ra);
    ra.keepdims = false;
    tether_ir_attrs_init(TETHER_OP_QUANTIZE, &qa);
    qa.to = TETHER_UINT8;
    int outs[3] = {-1, -1, -1};
    for (int i = 0; i < 3; i++) {
        if (i < (int)n->n_output && S(n->output[i])[0] && (rc = tonnx_out_tensor(c, i, &outs[i]))) {
            return rc;
        }
    }
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = scalar(c, "zero", 0.0f, &zero)) ||
        (rc = scalar(c, "qrange", 255.0f, &k255)) ||
        (rc = node(c, "min", TETHER_OP_REDUCE_MIN, &x, 1, &ra, -1, &mn)) ||
        (rc = node(c, "max", TETHER_OP_REDUCE_MAX, &x, 1, &ra, -1, &mx)) ||
        (rc = node(c, "min0", TETHER_OP_MIN, (int[]){mn, zero}, 2, NULL, -1, &t1)) ||
        (rc = node(c, "max0", TETHER_OP_MAX, (int[]){mx, zero}, 2, NULL, -1, &t2)) ||
        (rc = node(c, "range", TETHER_OP_SUB, (int[]){t2, t1}, 2, NULL, -1, &d)) ||
        (rc = node(c, "scale", TETHER_OP_DIV, (int[]){d, k255}, 2, NULL, outs[1], &s)) ||
        (rc = node(c, "neg_min", TETHER_OP_NEG, &t1, 1, NULL, -1, &negmin)) ||
        (rc =
             node(c, "zero_point", TETHER_OP_QUANTIZE, (int[]){negmin, s}, 2, &qa, outs[2], &zp))) {
        return rc;
    }
    return outs[0] >= 0 ? node(c, NULL, TETHER_OP_QUANTIZE, (int[]){x, s, zp}, 3, &qa, outs[0], &y)
                        : TETHER_OK;
}

/* ---- com.microsoft element-wise and pooling operators: dequantize, the float op, quantize -- */

/* Dequantizes input i (scale input si, zero point zi) into a new float tensor. */
static int dq_input(timport *c, int i, int si, int zi, int *t) {
    int x, s, z = -1, rc;
    hconst *sk, *zk;
    if ((rc = typed_in(c, i, true, &x)) || (rc = scale_const(c, si, &sk)) ||
        (rc = zp_const(c, zi, TT(c, x)->dtype, &zk)) ||
        (rc = check_channels(c, sk, 1, "scale", si))) {
        return rc;
    }
    if ((rc = typed_const(c, "scale", TETHER_FLOAT32, sk, 0, NULL, &s)) ||
        (zk && (rc = typed_const(c, "zero_point", zk->dt, zk, 0, NULL, &z)))) {
        return rc;
    }
    char suffix[32];
    snprintf(suffix, sizeof suffix, "dequantize_%d", i);
    return node(c, suffix, TETHER_OP_DEQUANTIZE, (int[]){x, s, z}, z >= 0 ? 3 : 2, NULL, -1, t);
}

/* Quantizes float tensor v into output 0 with scale input si and zero point zi (type: the zero
 * point's, else def). */
static int q_output(timport *c, int v, int si, int zi, DLDataType def) {
    int s, z = -1, y, rc;
    hconst *sk, *zk;
    if ((rc = scale_const(c, si, &sk)) || (rc = zp_const(c, zi, (DLDataType){0, 0, 1}, &zk)) ||
        (rc = check_channels(c, sk, 1, "scale", si)) ||
        (rc = typed_const(c, "y_scale", TETHER_FLOAT32, sk, 0, NULL, &s)) ||
        (zk && (rc = typed_const(c, "y_zero_point", zk->dt, zk, 0, NULL, &z))) ||
        (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_QUANTIZE, &a);
    a.to = out_type(zk, def);
    /* the quantize takes the node's name unless the float operator has it (QLinearAveragePool's
     * pool is emitted under the node's own name) */
    const char *own = tonnx_node_name(c, c->cur);
    int taken = 0;
    for (int i = 0; i < c->g->nnodes && !taken; i++) {
        taken = c->g->nodes[i].name && !strcmp(c->g->nodes[i].name, own);
    }
    return node(c, taken ? "quantize" : NULL, TETHER_OP_QUANTIZE, (int[]){v, s, z}, z >= 0 ? 3 : 2,
                &a, y, &y);
}

static int permute(timport *c, const char *suffix, int x, const int64_t *perm, int nd, int *t) {
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_TRANSPOSE, &a);
    a.nints = nd;
    memcpy(a.ints, perm, sizeof(int64_t) * (size_t)nd);
    return node(c, suffix, TETHER_OP_TRANSPOSE, &x, 1, &a, -1, t);
}

int tonnx_cv_qlinear_float(timport *c, const Onnx__NodeProto *n) {
    const char *op = S(n->op_type);
    int a, b, v, rc;
    DLDataType xt;
    if (!strcmp(op, "QLinearAdd") || !strcmp(op, "QLinearMul")) {
        if ((rc = dq_input(c, 0, 1, 2, &a)) || (rc = dq_input(c, 3, 4, 5, &b)) ||
            (rc = node(c, "float", !strcmp(op, "QLinearAdd") ? TETHER_OP_ADD : TETHER_OP_MUL,
                       (int[]){a, b}, 2, NULL, -1, &v))) {
            return rc;
        }
        xt = TT(c, c->v[tonnx_find(c, in_name(c, 0))].tensor)->dtype;
        return q_output(c, v, 6, 7, xt);
    }
    if (!strcmp(op, "QLinearConcat")) { /* Y_scale, Y_zp, then (X, X_scale, X_zp)... */
        int in[TETHER_IR_MAX_INPUTS], k = 0;
        int64_t axis;
        if ((n->n_input - 2) % 3 || n->n_input < 5 || (n->n_input - 2) / 3 > TETHER_IR_MAX_INPUTS) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "inputs must be Y_scale, Y_zero_point and triples (X, scale, zero "
                              "point), at most %d",
                              TETHER_IR_MAX_INPUTS);
        }
        if ((rc = tonnx_attr_int(c, "axis", 0, &axis))) {
            return rc;
        }
        for (size_t i = 2; i < n->n_input; i += 3, k++) {
            if ((rc = dq_input(c, (int)i, (int)i + 1, (int)i + 2, &in[k]))) {
                return rc;
            }
        }
        tether_ir_attrs ca;
        tether_ir_attrs_init(TETHER_OP_CONCAT, &ca);
        ca.axis = axis;
        if ((rc = node(c, "float", TETHER_OP_CONCAT, in, k, &ca, -1, &v))) {
            return rc;
        }
        xt = TT(c, c->v[tonnx_find(c, in_name(c, 2))].tensor)->dtype;
        return q_output(c, v, 0, 1, xt);
    }
    /* one input: X, X_scale, X_zp, Y_scale, Y_zp */
    if ((rc = dq_input(c, 0, 1, 2, &a))) {
        return rc;
    }
    xt = TT(c, c->v[tonnx_find(c, in_name(c, 0))].tensor)->dtype;
    if (!strcmp(op, "QLinearSigmoid")) {
        rc = node(c, "float", TETHER_OP_SIGMOID, &a, 1, NULL, -1, &v);
    } else if (!strcmp(op, "QLinearLeakyRelu")) {
        tether_ir_attrs la;
        tether_ir_attrs_init(TETHER_OP_LEAKY_RELU, &la);
        if (!(rc = tonnx_attr_float(c, "alpha", 0.01f, &la.alpha))) {
            rc = node(c, "float", TETHER_OP_LEAKY_RELU, &a, 1, &la, -1, &v);
        }
    } else { /* QLinearGlobalAveragePool, QLinearAveragePool; channels_last: NHWC */
        int64_t cl = 0;
        int nd = TT(c, a)->ndim;
        int64_t to_first[5] = {0, nd - 1, 1, 2, 3}, to_last[5] = {0, 2, 3, 4, 1};
        if ((rc = tonnx_attr_int(c, "channels_last", 0, &cl))) {
            return rc;
        }
        if (nd < 3 || nd > 5) {
            return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "input of rank %d (3 to 5)", nd);
        }
        for (int i = 2; i < nd; i++) {
            to_first[i] = i - 1;
            to_last[i - 1] = i;
        }
        to_last[nd - 1] = 1;
        if (cl && (rc = permute(c, "nchw", a, to_first, nd, &a))) {
            return rc;
        }
        if (!strcmp(op, "QLinearGlobalAveragePool")) {
            rc = node(c, "float", TETHER_OP_GLOBAL_AVG_POOL, &a, 1, NULL, -1, &v);
        } else if (!(rc = tonnx_temp_tensor(c, "float", &v))) {
            rc = tonnx_pool_into(c, TETHER_OP_AVG_POOL, a, v);
        }
        if (!rc && cl) {
            rc = permute(c, "nhwc", v, to_last, nd, &v);
        }
    }
    return rc ? rc : q_output(c, v, 3, 4, xt);
}

/* ---- the table of the com.microsoft domain and the constant inputs ------------------------ */

#define MAXV TETHER_ONNX_OPSET_MAX

static const op_def ms_ops[] = {
    {"QGemm", 1, MAXV, "qmatmul (+ transpose, dequantize)", "alpha,transA,transB", false, false,
     tonnx_cv_qgemm, NULL},
    {"QLinearAdd", 1, MAXV, "dequantize, add, quantize", "", false, false, tonnx_cv_qlinear_float,
     NULL},
    {"QLinearMul", 1, MAXV, "dequantize, mul, quantize", "", false, false, tonnx_cv_qlinear_float,
     NULL},
    {"QLinearSigmoid", 1, MAXV, "dequantize, sigmoid, quantize", "", false, false,
     tonnx_cv_qlinear_float, NULL},
    {"QLinearLeakyRelu", 1, MAXV, "dequantize, leaky_relu, quantize", "alpha", false, false,
     tonnx_cv_qlinear_float, NULL},
    {"QLinearConcat", 1, MAXV, "dequantize, concat, quantize", "axis", false, false,
     tonnx_cv_qlinear_float, NULL},
    {"QLinearGlobalAveragePool", 1, MAXV, "dequantize, global_avg_pool, quantize", "channels_last",
     false, false, tonnx_cv_qlinear_float, NULL},
    {"QLinearAveragePool", 1, MAXV, "dequantize, avg_pool, quantize",
     "auto_pad,ceil_mode,channels_last,count_include_pad,kernel_shape,pads,strides", false, false,
     tonnx_cv_qlinear_float, NULL},
};

static const tonnx_arity ms_arity[] = {
    {6, 9, 1, 1, false}, {7, 8, 1, 1, false},  {7, 8, 1, 1, false}, {4, 5, 1, 1, false},
    {4, 5, 1, 1, false}, {5, -1, 1, 1, false}, {4, 5, 1, 1, false}, {4, 5, 1, 1, false},
};

const op_def *tonnx_ms_op_find(const char *op_type) {
    for (size_t i = 0; i < sizeof ms_ops / sizeof *ms_ops; i++) {
        if (!strcmp(ms_ops[i].op_type, op_type)) {
            return &ms_ops[i];
        }
    }
    return NULL;
}

int tonnx_ms_arity(const op_def *d, tonnx_arity *out) {
    for (size_t i = 0; i < sizeof ms_ops / sizeof *ms_ops; i++) {
        if (d == &ms_ops[i]) {
            *out = ms_arity[i];
            return TETHER_OK;
        }
    }
    return TETHER_ERR_NOT_FOUND;
}

/* Bit i: input i must be known at import time (scales and zero points of the integer ops). */
unsigned tonnx_quant_const_inputs(const char *t) {
    if (!strcmp(t, "QLinearConv") || !strcmp(t, "QLinearMatMul")) {
        return (1u << 1) | (1u << 2) | (1u << 4) | (1u << 5) | (1u << 6) | (1u << 7);
    }
    if (!strcmp(t, "ConvInteger") || !strcmp(t, "MatMulInteger")) {
        return (1u << 2) | (1u << 3);
    }
    if (!strcmp(t, "QGemm")) {
        return (1u << 1) | (1u << 2) | (1u << 4) | (1u << 5) | (1u << 6) | (1u << 7) | (1u << 8);
    }
    if (!strcmp(t, "QLinearAdd") || !strcmp(t, "QLinearMul")) {
        return (1u << 1) | (1u << 2) | (1u << 4) | (1u << 5) | (1u << 6) | (1u << 7);
    }
    if (!strcmp(t, "QLinearSigmoid") || !strcmp(t, "QLinearLeakyRelu") ||
        !strcmp(t, "QLinearGlobalAveragePool") || !strcmp(t, "QLinearAveragePool")) {
        return (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4);
    }
    if (!strcmp(t, "QLinearConcat")) {
        unsigned m = 3u; /* Y_scale, Y_zp, then each triple's scale and zero point */
        for (int i = 2; i + 2 < 32; i += 3) {
            m |= (1u << (i + 1)) | (1u << (i + 2));
        }
        return m;
    }
    return 0;
}
