/*
 * The reference interpreter's quantized operators (docs/quantization.md): quantize, dequantize,
 * qconv and qmatmul, in plain loops. Integer operators accumulate exactly (int64, stored as the
 * int32 accumulator real kernels keep) and requantize with tether_quant_requant (ir/quant.c), the
 * same integers generated C computes; quantize divides in float32 and rounds half to even, as
 * ONNX QuantizeLinear does.
 *
 * What must stay true: the results equal generated C's byte for byte (tests/compiler op cases and
 * test_quant compare them); no float arithmetic inside qconv and qmatmul.
 */
#include <math.h>
#include <string.h>

#include "../internal.h"
#include "interp_internal.h"
#include "tether/crt/dtype.h"

static int64_t ld(const void *p, DLDataType t, size_t k) {
    val v = tether__interp_load(p, t, k);
    return v.c == TETHER__DC_UINT ? (int64_t)v.u : v.i;
}

static int64_t param(const tether_ir_graph *g, const tether_ir_node *n, void **buf, int i,
                     int64_t k) {
    const tether_ir_tensor *t = tether__ir_in(g, n, i);
    if (!t) {
        return 0;
    }
    return ld(buf[n->inputs[i]], t->dtype, tether_ir_tensor_elements(t) == 1 ? 0 : (size_t)k);
}

static void st(void *p, DLDataType t, size_t k, int64_t v) {
    val o = {.c = t.code == kDLUInt ? TETHER__DC_UINT : TETHER__DC_INT, .i = v, .u = (uint64_t)v};
    tether__interp_store(p, t, k, o);
}

/* The clamp of an integer operator's output: its type's range within min..max. */
static void out_range(const tether_ir_node *n, DLDataType t, int64_t *lo, int64_t *hi) {
    if (!tether__quant_range(t, lo, hi)) {
        *lo = INT32_MIN;
        *hi = INT32_MAX;
    }
    if (n->attrs.min > (float)*lo) {
        *lo = (int64_t)ceil((double)n->attrs.min);
    }
    if (n->attrs.max < (float)*hi) {
        *hi = (int64_t)floor((double)n->attrs.max);
    }
}

/* acc (the int32 accumulator, bias added) as output element f of channel c. */
static void finish(const tether_ir_graph *g, const tether_ir_node *n, void **buf, void *y,
                   DLDataType yt, size_t f, int64_t c, int64_t acc, int64_t lo, int64_t hi) {
    int32_t a32 = (int32_t)(uint32_t)(uint64_t)acc;
    const tether_ir_tensor *rq = tether__ir_in(g, n, 5);
    if (!rq) {
        st(y, yt, f, a32);
        return;
    }
    const int32_t *r = buf[n->inputs[5]];
    int64_t row = rq->shape[0] == 1 ? 0 : c;
    int64_t v = tether_quant_requant(a32, r[2 * row], r[2 * row + 1]) + param(g, n, buf, 6, 0);
    st(y, yt, f, v < lo ? lo : v > hi ? hi : v);
}

static void run_qconv(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *xt = tether__ir_in(g, n, 0), *wt = tether__ir_in(g, n, 1),
                           *o = &g->tensors[n->outputs[0]];
    const void *x = buf[n->inputs[0]], *w = buf[n->inputs[1]];
    int64_t N = xt->shape[0], C = xt->shape[1], H = xt->shape[2], W = xt->shape[3];
    int64_t O = o->shape[1], OH = o->shape[2], OW = o->shape[3];
    int64_t KH = a->kernel[0], KW = a->kernel[1], G = a->groups, CG = C / G, OG = O / G;
    int64_t xz = param(g, n, buf, 3, 0), lo, hi;
    out_range(n, o->dtype, &lo, &hi);
    size_t f = 0;
    for (int64_t nn = 0; nn < N; nn++) {
        for (int64_t oc = 0; oc < O; oc++) {
            int64_t gi = oc / OG, wz = param(g, n, buf, 4, oc), bias = param(g, n, buf, 2, oc);
            for (int64_t oh = 0; oh < OH; oh++) {
                for (int64_t ow = 0; ow < OW; ow++, f++) {
                    int64_t acc = bias;
                    for (int64_t c = 0; c < CG; c++) {
                        for (int64_t kh = 0; kh < KH; kh++) {
                            int64_t ih = oh * a->strides[0] - a->pads[0] + kh * a->dilations[0];
                            for (int64_t kw = 0; kw < KW; kw++) {
                                int64_t iw = ow * a->strides[1] - a->pads[1] + kw * a->dilations[1];
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                                    continue; /* padding is the zero point: x - xz = 0 */
                                }
                                int64_t xv =
                                    ld(x, xt->dtype,
                                       (size_t)(((nn * C + gi * CG + c) * H + ih) * W + iw));
                                int64_t wv =
                                    ld(w, wt->dtype, (size_t)(((oc * CG + c) * KH + kh) * KW + kw));
                                acc += (xv - xz) * (wv - wz);
                            }
                        }
                    }
                    finish(g, n, buf, buf[n->outputs[0]], o->dtype, f, oc, acc, lo, hi);
                }
            }
        }
    }
}

static void run_qmatmul(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    tether_ir_tensor va, vb, yv;
    tether__ir_matmul_view(g, n, &va, &vb, &yv);
    const tether_ir_tensor *o = &g->tensors[n->outputs[0]];
    const void *A = buf[n->inputs[0]], *B = buf[n->inputs[1]];
    int nd = yv.ndim;
    int64_t M = yv.shape[nd - 2], NN = yv.shape[nd - 1], K = va.shape[va.ndim - 1], lo, hi;
    int64_t idx[TETHER_IR_MAX_NDIM], ia[TETHER_IR_MAX_NDIM], ib[TETHER_IR_MAX_NDIM];
    out_range(n, o->dtype, &lo, &hi);
    size_t total = tether_ir_tensor_elements(o);
    for (size_t f = 0; f < total; f++) {
        int64_t r = (int64_t)f;
        for (int d = nd - 1; d >= 0; d--) {
            idx[d] = r % yv.shape[d];
            r /= yv.shape[d];
        }
        int64_t i = idx[nd - 2], j = idx[nd - 1];
        /* batch offsets of A and B (numpy broadcasting of the leading dimensions) */
        int64_t offa = 0, offb = 0;
        for (int d = 0; d < va.ndim - 2; d++) {
            int64_t e = va.shape[d];
            ia[d] = e == 1 ? 0 : idx[nd - va.ndim + d];
            offa = offa * e + ia[d];
        }
        for (int d = 0; d < vb.ndim - 2; d++) {
            int64_t e = vb.shape[d];
            ib[d] = e == 1 ? 0 : idx[nd - vb.ndim + d];
            offb = offb * e + ib[d];
        }
        int64_t az = param(g, n, buf, 3, i), bz = param(g, n, buf, 4, j);
        int64_t acc = param(g, n, buf, 2, j);
        for (int64_t k = 0; k < K; k++) {
            int64_t av = ld(A, va.dtype, (size_t)((offa * M + i) * K + k));
            int64_t bv = ld(B, vb.dtype, (size_t)((offb * K + k) * NN + j));
            acc += (av - az) * (bv - bz);
        }
        finish(g, n, buf, buf[n->outputs[0]], o->dtype, f, j, acc, lo, hi);
    }
}

void tether__interp_quant(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *xt = tether__ir_in(g, n, 0), *s = tether__ir_in(g, n, 1),
                           *o = &g->tensors[n->outputs[0]];
    if (tether__quant_is_elt(n->op)) { /* interp_qelt.c */
        tether__interp_qelt(g, n, buf);
        return;
    }
    if (n->op == TETHER_OP_QCONV) {
        run_qconv(g, n, buf);
        return;
    }
    if (n->op == TETHER_OP_QMATMUL) {
        run_qmatmul(g, n, buf);
        return;
    }
    /* quantize, dequantize: per tensor, or per channel along axis */
    size_t total = tether_ir_tensor_elements(o);
    int64_t inner = 1, ch = (int64_t)tether_ir_tensor_elements(s);
    if (ch > 1 || s->ndim == 1) {
        int ax = tether__ir_norm_axis(n->attrs.axis, xt->ndim);
        for (int d = ax + 1; d < xt->ndim; d++) {
            inner *= xt->shape[d];
        }
    }
    const float *scale = buf[n->inputs[1]];
    int64_t lo = 0, hi = 0;
    tether__quant_range(o->dtype, &lo, &hi);
    for (size_t f = 0; f < total; f++) {
        int64_t c = ch > 1 ? ((int64_t)f / inner) % ch : 0;
        int64_t zp = param(g, n, buf, 2, c);
        if (n->op == TETHER_OP_DEQUANTIZE) {
            ((float *)buf[n->outputs[0]])[f] =
                (float)(ld(buf[n->inputs[0]], xt->dtype, f) - zp) * scale[c];
            continue;
        }
        float q = ((const float *)buf[n->inputs[0]])[f] / scale[c]; /* float32, as ONNX */
        int64_t v = q != q ? zp : tether__quant_round_even((double)q) + zp;
        st(buf[n->outputs[0]], o->dtype, f, v < lo ? lo : v > hi ? hi : v);
    }
}
