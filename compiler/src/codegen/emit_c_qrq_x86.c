/*
 * Which AVX2 requantization a qconv's x86-64 kernels emit (docs/quantization.md "Kernels"):
 * tgq_rq8 / tgq_rq8k (emit_c_quant.c, any accumulator), or tgq_rq8h / tgq_rq8hs when this file
 * proves at compile time that no accumulator the node can produce makes acc * mult an exact
 * rounding tie, so that round half up (no lowest-bit term: 6 fewer instructions per 8 outputs)
 * gives tgq_requant's round half to even.
 *
 * The proof, per output channel: acc = bias + sum w * (x - x_zp) over at most the channel's
 * weights, so |acc| <= B = |bias| + max|x - x_zp| * sum|w| (constant weights, bias and x_zp;
 * x in the input type's range). p = acc * mult is a tie of the
 * division by 2^n (n = 31 - shift) only if p mod 2^n = 2^(n-1), i.e. its lowest set bit is bit
 * n - 1; that bit is v(acc) + v(mult) (v: the number of trailing zero bits), and v(acc) <=
 * floor(log2 B) for every non-zero acc (acc = 0 or mult = 0 give p = 0, no tie). So
 * floor(log2 B) + v(mult) < n - 1 rules every tie out. tgq_rq8hs also leaves the clamp to the
 * saturating 8-bit pack that every caller stores through, when the clamp is the output type's
 * whole range.
 *
 * What must stay true: "h" only when the proof holds for every output channel (B < 2^31 as the
 * kernels' int32 sums assume), "hs" only when the node's clamp is its output type's full range;
 * every vector requantization result goes through tgq_st8s/tgq_st8u or the same saturating packs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c_qconv.h"
#include "tether/crt/dtype.h"

/* floor(log2 v) for v >= 1 */
static int ilog2(unsigned long long v) {
    int r = 0;
    while (v > 1) {
        v >>= 1;
        r++;
    }
    return r;
}

static int ctz32(uint32_t v) {
    int r = 0;
    while (!(v & 1u)) {
        v >>= 1;
        r++;
    }
    return r;
}

/* whether no accumulator of nd can make an exact tie (above); 0 when not provable */
static int tie_free(const em *e, const tether_ir_node *nd, const qg *q) {
    const tether_ir_tensor *w = T(e, nd->inputs[1]), *rq = T(e, nd->inputs[5]);
    if (w->kind != TETHER_TENSOR_CONSTANT || !w->data || w->dtype.code != kDLInt ||
        w->dtype.bits != 8 || rq->kind != TETHER_TENSOR_CONSTANT || !rq->data) {
        return 0;
    }
    const tether_ir_tensor *b = nd->ninputs > 2 && nd->inputs[2] >= 0 ? T(e, nd->inputs[2]) : NULL;
    if (b && (b->kind != TETHER_TENSOR_CONSTANT || !b->data || b->dtype.code != kDLInt ||
              b->dtype.bits != 32)) {
        return 0;
    }
    /* max |x - x_zp| over the input type; x_zp absent (0) or one constant value */
    const int s8 = strcmp(q->xt, "int8_t") == 0;
    const long long xmin = s8 ? -128 : 0, xmax = s8 ? 127 : 255;
    long long z = 0;
    const tether_ir_tensor *xz = nd->ninputs > 3 && nd->inputs[3] >= 0 ? T(e, nd->inputs[3]) : NULL;
    if (xz) {
        if (xz->kind != TETHER_TENSOR_CONSTANT || !xz->data || tether_ir_tensor_elements(xz) != 1) {
            return 0;
        }
        if (xz->dtype.code == kDLInt && xz->dtype.bits == 32) {
            z = *(const int32_t *)xz->data;
        } else if (xz->dtype.code == kDLInt && xz->dtype.bits == 8) {
            z = *(const int8_t *)xz->data;
        } else if (xz->dtype.code == kDLUInt && xz->dtype.bits == 8) {
            z = *(const uint8_t *)xz->data;
        } else {
            return 0;
        }
    }
    const long long dx = z - xmin > xmax - z ? z - xmin : xmax - z;
    const long long O = w->shape[0], per = (long long)(tether_ir_tensor_elements(w) / (size_t)O);
    const size_t nb = b ? tether_ir_tensor_elements(b) : 0, nrq = tether_ir_tensor_elements(rq);
    const int8_t *wv = w->data;
    const int32_t *rv = rq->data, *bv = b ? b->data : NULL;
    for (long long o = 0; o < O; o++) {
        long long sw = 0;
        for (long long i = 0; i < per; i++) {
            sw += wv[o * per + i] < 0 ? -(long long)wv[o * per + i] : wv[o * per + i];
        }
        const long long bias = nb == 0 ? 0 : bv[nb == 1 ? 0 : o];
        const long long bound = (bias < 0 ? -bias : bias) + dx * sw;
        const size_t r = nrq == 2 ? 0 : (size_t)(2 * o);
        const int32_t m = rv[r], sh = rv[r + 1];
        if (bound >= 2147483647LL || sh < -31 || sh > -1) {
            return 0;
        }
        if (bound == 0 || m == 0) {
            continue;
        }
        if (ilog2((unsigned long long)bound) + ctz32((uint32_t)m) >= (31 - sh) - 1) {
            return 0;
        }
    }
    return 1;
}

const char *tether__c_qrq_fn(const em *e, const tether_ir_node *nd, const qg *q) {
    const int vec = tether__c_qrq_vec(e, nd, q);
    if (vec != 2) {
        return "tgq_rq8";
    }
    if (!tie_free(e, nd, q)) {
        return "tgq_rq8k";
    }
    const int full =
        strcmp(q->yt, "int8_t") == 0 ? q->lo == -128 && q->hi == 127 : q->lo == 0 && q->hi == 255;
    return full ? "tgq_rq8hs" : "tgq_rq8h";
}
