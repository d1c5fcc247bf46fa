/*
 * Quantized inference in the IR: the shape and typing rules of quantize, dequantize, qconv and
 * qmatmul (the QUANT rows of ops.def), and the integer requantization every backend computes
 * (docs/quantization.md).
 *
 * Requantization: a real multiplier M > 0 (input scale x weight scale / output scale) becomes
 * mult (int32, in [2^30, 2^31)) and shift (M = mult * 2^(shift - 31)); an int32 accumulator acc
 * then becomes round_half_even(acc * mult / 2^(31 - shift)), one rounding of the exact 64-bit
 * product. The interpreter (tether_quant_requant) and generated C (tgq_requant,
 * codegen/emit_c_quant.c) compute exactly this, integers only.
 *
 * What must stay true: a node passes these rules only when the kernels run it: the quantization
 * parameters have the shapes the comments of ops.def give (per tensor: one element; per channel:
 * the channel count), constant scales are finite and > 0, constant zero points fit the quantized
 * type, and requant shifts are in range; every message names the node.
 */
#include <math.h>
#include <string.h>

#include "../internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/ir.h"

int tether_quant_multiplier(double m, int32_t *mult, int32_t *shift) {
    if (!(m > 0.0) || !isfinite(m)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "requantization multiplier %g is not finite and > 0", m);
    }
    int e = 0;
    double q = frexp(m, &e); /* m = q * 2^e, q in [0.5, 1) */
    long long v = llround(q * 2147483648.0);
    if (v == 2147483648LL) {
        v /= 2;
        e++;
    }
    if (e > 31) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "requantization multiplier %g is too large (at most 2^31)", m);
    }
    if (e < -40) { /* every int32 accumulator rounds to 0 */
        v = 0;
        e = -40;
    }
    *mult = (int32_t)v;
    *shift = (int32_t)e;
    return TETHER_OK;
}

int64_t tether_quant_requant(int32_t acc, int32_t mult, int32_t shift) {
    int64_t p = (int64_t)acc * (int64_t)mult; /* |p| < 2^62 */
    int n = 31 - (int)shift;
    if (n <= 0) {
        return p;
    }
    if (n >= 63) {
        return 0;
    }
    uint64_t up = (uint64_t)p + ((uint64_t)1 << 62); /* >= 0, a multiple of 2^n more */
    int64_t r = (int64_t)(up >> n) - (int64_t)(((uint64_t)1 << 62) >> n);
    uint64_t rem = up & (((uint64_t)1 << n) - 1u), half = (uint64_t)1 << (n - 1);
    if (rem > half || (rem == half && ((uint64_t)r & 1u))) {
        r++;
    }
    return r;
}

int64_t tether__quant_round_even(double v) {
    if (!(v == v)) {
        return 0;
    }
    if (v > 9.0e15) {
        return (int64_t)9e15;
    }
    if (v < -9.0e15) {
        return -(int64_t)9e15;
    }
    int64_t i = (int64_t)v; /* toward zero */
    double f = v - (double)i;
    if (f > 0.5 || (f == 0.5 && (i & 1))) {
        i++;
    } else if (f < -0.5 || (f == -0.5 && (i & 1))) {
        i--;
    }
    return i;
}

/* The range of a quantized type; 0 when t is not one of them. */
int tether__quant_range(DLDataType t, int64_t *lo, int64_t *hi) {
    if (t.lanes != 1 || (t.code != kDLInt && t.code != kDLUInt) ||
        (t.bits != 8 && t.bits != 16 && t.bits != 32)) {
        return 0;
    }
    if (t.code == kDLInt) {
        *hi = ((int64_t)1 << (t.bits - 1)) - 1;
        *lo = -*hi - 1;
    } else {
        if (t.bits == 32) {
            return 0;
        }
        *lo = 0;
        *hi = ((int64_t)1 << t.bits) - 1;
    }
    return 1;
}

static bool is_8bit(DLDataType t) {
    return t.lanes == 1 && t.bits == 8 && (t.code == kDLInt || t.code == kDLUInt);
}

static int want(const tether_ir_node *n, const tether_ir_tensor *t, bool ok, const char *what) {
    if (t && !ok) {
        return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED,
                                     "input '%s' has element type %s; %s", t->name,
                                     tether__dtype_str(t->dtype), what);
    }
    return TETHER_OK;
}

int tether__ir_quant_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out) {
    if (tether__quant_is_elt(n->op)) { /* quant_elt.c */
        return tether__ir_qelt_dtype(g, n, out);
    }
    const tether_ir_tensor *x = tether__ir_in(g, n, 0), *s = tether__ir_in(g, n, 1),
                           *z = tether__ir_in(g, n, 2);
    int64_t lo, hi;
    int rc = TETHER_OK;
    if (n->op == TETHER_OP_QUANTIZE) {
        if (!tether__quant_range(n->attrs.to, &lo, &hi) || n->attrs.to.bits == 32) {
            return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED,
                                         "quantizes to %s (int8, uint8, int16 or uint16)",
                                         tether__dtype_str(n->attrs.to));
        }
        if ((rc = want(n, x, tether_dtype_equal(x->dtype, TETHER_FLOAT32), "float32 only")) ||
            (rc = want(n, s, tether_dtype_equal(s->dtype, TETHER_FLOAT32), "a float32 scale")) ||
            (rc = want(n, z, !z || tether_dtype_equal(z->dtype, n->attrs.to),
                       "a zero point of the output's type"))) {
            return rc;
        }
        *out = n->attrs.to;
        return TETHER_OK;
    }
    if (n->op == TETHER_OP_DEQUANTIZE) {
        if ((rc = want(n, x, tether__quant_range(x->dtype, &lo, &hi),
                       "int8, uint8, int16, uint16 or int32")) ||
            (rc = want(n, s, tether_dtype_equal(s->dtype, TETHER_FLOAT32), "a float32 scale")) ||
            (rc = want(n, z, !z || tether_dtype_equal(z->dtype, x->dtype),
                       "a zero point of the input's type"))) {
            return rc;
        }
        *out = TETHER_FLOAT32;
        return TETHER_OK;
    }
    if (n->op == TETHER_OP_QCONV || n->op == TETHER_OP_QMATMUL) {
        const tether_ir_tensor *w = tether__ir_in(g, n, 1);
        bool rq = tether__ir_in(g, n, 5) != NULL;
        if ((rc = want(n, x, is_8bit(x->dtype), "int8 or uint8")) ||
            (rc = want(n, w, is_8bit(w->dtype), "int8 or uint8"))) {
            return rc;
        }
        for (int i = 2; i < n->ninputs; i++) {
            const tether_ir_tensor *t = tether__ir_in(g, n, i);
            if ((rc = want(n, t, tether_dtype_equal(t ? t->dtype : TETHER_INT32, TETHER_INT32),
                           "int32 (bias, zero points, requantization)"))) {
                return rc;
            }
        }
        if (rq ? !is_8bit(n->attrs.to) : !tether_dtype_equal(n->attrs.to, TETHER_INT32)) {
            return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED,
                                         "output type %s: int8 or uint8 with a requantization "
                                         "input, int32 (the accumulator) without",
                                         tether__dtype_str(n->attrs.to));
        }
        *out = n->attrs.to;
        return TETHER_OK;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "no quantized typing rule");
}

/* Elements of t (1 for a scalar). */
static int64_t count(const tether_ir_tensor *t) {
    return (int64_t)tether_ir_tensor_elements(t);
}

/* A parameter of 1 element or of `ch` elements (rank <= 1; rq: [1|ch, 2]). */
static int param_shape(const tether_ir_node *n, const tether_ir_tensor *t, int64_t ch,
                       const char *what) {
    if (!t) {
        return TETHER_OK;
    }
    int64_t c = count(t);
    if (t->ndim > 1 || (c != 1 && c != ch)) {
        char s[96];
        tether__shape_text(s, sizeof s, t->shape, t->ndim);
        return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                     "%s '%s' has shape %s: one element, or %lld (one per channel)",
                                     what, t->name, s, (long long)ch);
    }
    return TETHER_OK;
}

static int check_scale_values(const tether_ir_node *n, const tether_ir_tensor *s) {
    if (s->kind != TETHER_TENSOR_CONSTANT || !s->data) {
        return TETHER_OK;
    }
    const float *v = s->data;
    for (int64_t i = 0; i < count(s); i++) {
        if (!(v[i] > 0.0f) || !isfinite(v[i])) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "scale '%s' element %lld is %g (finite and > 0 needed)",
                                         s->name, (long long)i, (double)v[i]);
        }
    }
    return TETHER_OK;
}

int tether__ir_quant_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond) {
    if (tether__quant_is_elt(n->op)) { /* quant_elt.c */
        return tether__ir_qelt_shape(g, n, os, ond);
    }
    const tether_ir_tensor *x = tether__ir_in(g, n, 0);
    int rc;
    if (n->op == TETHER_OP_QUANTIZE || n->op == TETHER_OP_DEQUANTIZE) {
        const tether_ir_tensor *s = tether__ir_in(g, n, 1), *z = tether__ir_in(g, n, 2);
        int64_t ch = 1;
        if (count(s) != 1 || s->ndim > 1) {
            int ax = tether__ir_norm_axis(n->attrs.axis, x->ndim);
            if (ax < 0) {
                return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                             "axis %lld out of range for rank %d",
                                             (long long)n->attrs.axis, x->ndim);
            }
            ch = x->shape[ax];
            if (s->ndim != 1 || s->shape[0] != ch) {
                return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                             "scale '%s' needs one element, or %lld (axis %d of "
                                             "the input)",
                                             s->name, (long long)ch, ax);
            }
        }
        if (z && (count(z) != count(s) || z->ndim > 1)) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "zero point '%s' has %lld elements, the scale %lld",
                                         z->name, (long long)count(z), (long long)count(s));
        }
        if ((rc = check_scale_values(n, s))) {
            return rc;
        }
        *ond = x->ndim;
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        return TETHER_OK;
    }
    if (n->op == TETHER_OP_QCONV || n->op == TETHER_OP_QMATMUL) {
        tether_ir_node base = *n;
        base.op = n->op == TETHER_OP_QCONV ? TETHER_OP_CONV2D : TETHER_OP_MATMUL;
        base.ninputs = 2;
        base.attrs.act = TETHER_ACT_NONE;
        base.attrs.has_residual = false;
        if ((rc = tether__ir_infer_shape(g, &base, os, ond))) {
            return rc;
        }
        n->attrs.kernel[0] = base.attrs.kernel[0];
        n->attrs.kernel[1] = base.attrs.kernel[1];
        const tether_ir_tensor *a = tether__ir_in(g, n, 0);
        int64_t ch = os[*ond - 1], rows = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1;
        if (n->op == TETHER_OP_QCONV) {
            ch = os[1];
            rows = 1;
        }
        static const char *const what[] = {NULL,
                                           NULL,
                                           "bias",
                                           "input zero point",
                                           "weight zero point",
                                           "requantization",
                                           "output zero "
                                           "point"};
        const tether_ir_tensor *rq = tether__ir_in(g, n, 5);
        for (int i = 2; i < n->ninputs; i++) {
            const tether_ir_tensor *t = tether__ir_in(g, n, i);
            if (!t || i == 5) {
                continue;
            }
            int64_t c = i == 2 || i == 4 ? ch : i == 3 ? rows : 1;
            if (i == 2 && count(t) != ch) {
                return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                             "bias '%s' needs %lld elements", t->name,
                                             (long long)ch);
            }
            if ((rc = param_shape(n, t, c, what[i]))) {
                return rc;
            }
        }
        if (rq) {
            if (rq->ndim != 2 || rq->shape[1] != 2 || (rq->shape[0] != 1 && rq->shape[0] != ch)) {
                return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                             "requantization '%s' must be [1,2] or [%lld,2] "
                                             "(multiplier, shift)",
                                             rq->name, (long long)ch);
            }
            if (rq->kind == TETHER_TENSOR_CONSTANT && rq->data) {
                const int32_t *v = rq->data;
                for (int64_t i = 0; i < rq->shape[0]; i++) {
                    if (v[2 * i] < 0 || v[2 * i + 1] > 31) {
                        return tether__ir_node_error(
                            n, TETHER_ERR_INVALID_ARG,
                            "requantization row %lld: multiplier %ld (>= 0) shift %ld (<= 31)",
                            (long long)i, (long)v[2 * i], (long)v[2 * i + 1]);
                    }
                }
            }
        }
        if (n->attrs.min > n->attrs.max) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "min %g above max %g",
                                         (double)n->attrs.min, (double)n->attrs.max);
        }
        return TETHER_OK;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "no quantized shape rule");
}
