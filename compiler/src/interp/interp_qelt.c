/*
 * The reference interpreter's integer elementwise and pooling operators (docs/quantization.md
 * "Integer elementwise and pooling operators"): qadd, qmul, qlut, qmax_pool, qavg_pool, in plain
 * loops over the integers. These are the ground truth generated C and OpenCL match byte for byte.
 *
 * What must stay true: integers only (int64 sums, tether__quant_rshift_rne / tether_quant_requant
 * for the one rounding), the parameter layouts of ops.def's comments, numpy broadcasting for
 * qadd/qmul as the float add has.
 */
#include <string.h>

#include "../internal.h"
#include "interp_internal.h"
#include "tether/crt/dtype.h"

static int64_t ld8(const void *p, DLDataType t, size_t k) {
    return t.code == kDLInt ? (int64_t)((const int8_t *)p)[k] : (int64_t)((const uint8_t *)p)[k];
}

static void st8(void *p, DLDataType t, size_t k, int64_t v) {
    if (t.code == kDLInt) {
        ((int8_t *)p)[k] = (int8_t)v;
    } else {
        ((uint8_t *)p)[k] = (uint8_t)v;
    }
}

static int64_t clampi(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* The offset into input t (right-aligned numpy broadcasting) of output element f. */
static size_t bcast_off(const tether_ir_tensor *o, const tether_ir_tensor *t, size_t f) {
    size_t off = 0, stride = 1;
    int64_t r = (int64_t)f;
    for (int d = o->ndim - 1; d >= 0; d--) {
        int64_t i = r % o->shape[d];
        r /= o->shape[d];
        int td = d - (o->ndim - t->ndim);
        if (td >= 0) {
            if (t->shape[td] != 1) {
                off += (size_t)i * stride;
            }
            stride *= (size_t)t->shape[td];
        }
    }
    return off;
}

static void run_binary(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *at = tether__ir_in(g, n, 0), *bt = tether__ir_in(g, n, 1),
                           *o = &g->tensors[n->outputs[0]];
    const int32_t *p = buf[n->inputs[2]];
    size_t total = tether_ir_tensor_elements(o);
    for (size_t f = 0; f < total; f++) {
        int64_t a = ld8(buf[n->inputs[0]], at->dtype, bcast_off(o, at, f)) - p[0];
        int64_t b = ld8(buf[n->inputs[1]], bt->dtype, bcast_off(o, bt, f)) - p[1];
        int64_t v = n->op == TETHER_OP_QADD ? a * p[3] + b * p[4] : a * b * p[3];
        v = tether__quant_rshift_rne(v, p[5]) + p[2];
        st8(buf[n->outputs[0]], o->dtype, f, clampi(v, p[6], p[7]));
    }
}

static void run_pool(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *xt = tether__ir_in(g, n, 0), *o = &g->tensors[n->outputs[0]];
    const int32_t *p = n->op == TETHER_OP_QAVG_POOL ? buf[n->inputs[1]] : NULL;
    const void *x = buf[n->inputs[0]];
    int64_t C = xt->shape[1], H = xt->shape[2], W = xt->shape[3];
    int64_t OH = o->shape[2], OW = o->shape[3];
    for (int64_t nc = 0; nc < o->shape[0] * C; nc++) {
        for (int64_t oh = 0; oh < OH; oh++) {
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t acc = p || xt->dtype.code != kDLInt ? 0 : -128, cnt = 0, cnt_pad = 0;
                for (int64_t kh = 0; kh < a->kernel[0]; kh++) {
                    for (int64_t kw = 0; kw < a->kernel[1]; kw++) {
                        int64_t ih = oh * a->strides[0] - a->pads[0] + kh * a->dilations[0];
                        int64_t iw = ow * a->strides[1] - a->pads[1] + kw * a->dilations[1];
                        if (ih < H + a->pads[2] && iw < W + a->pads[3]) {
                            cnt_pad++;
                        }
                        if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                            continue;
                        }
                        int64_t v = ld8(x, xt->dtype, (size_t)((nc * H + ih) * W + iw));
                        cnt++;
                        if (p) {
                            acc += v - p[0];
                        } else {
                            acc = v > acc ? v : acc;
                        }
                    }
                }
                size_t f = (size_t)((nc * OH + oh) * OW + ow);
                if (!p) {
                    /* a window over padding alone (never, pads < the kernel) gives the minimum */
                    st8(buf[n->outputs[0]], o->dtype, f, acc);
                    continue;
                }
                int64_t c = a->count_include_pad ? cnt_pad : cnt;
                int64_t v =
                    tether_quant_requant((int32_t)acc, p[4 + 2 * (c - 1)], p[5 + 2 * (c - 1)]) +
                    p[1];
                st8(buf[n->outputs[0]], o->dtype, f, clampi(v, p[2], p[3]));
            }
        }
    }
}

void tether__interp_qelt(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    if (n->op == TETHER_OP_QADD || n->op == TETHER_OP_QMUL) {
        run_binary(g, n, buf);
    } else if (n->op == TETHER_OP_QLUT) {
        const tether_ir_tensor *xt = tether__ir_in(g, n, 0), *o = &g->tensors[n->outputs[0]];
        const uint8_t *tab = buf[n->inputs[1]];
        int64_t base = xt->dtype.code == kDLInt ? -128 : 0;
        size_t total = tether_ir_tensor_elements(o);
        for (size_t f = 0; f < total; f++) {
            ((uint8_t *)buf[n->outputs[0]])[f] = tab[ld8(buf[n->inputs[0]], xt->dtype, f) - base];
        }
    } else {
        run_pool(g, n, buf);
    }
}
