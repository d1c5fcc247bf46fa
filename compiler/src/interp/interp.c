/*
 * The reference interpreter: runs an inferred graph on host buffers of the tensors' element
 * types with plain, obviously-correct loops (double accumulators, no blocking, no cleverness). It
 * is the ground truth the generated code is tested against, so it shares no code with the
 * emitters; keep it simple rather than fast.
 *
 * Element types: the float32-only operators (TYPES F32) run their float loops unchanged; an
 * elementwise operator on float32 alone computes its FORMULA in float as before. Any other
 * element type goes through typed loads and stores (tether__interp_load/_store, interp_types.c):
 * float16, bfloat16 and float32 compute the FORMULA in float, float64 in double, signed integers
 * the IFORMULA in int64 and unsigned ones and bool in uint64, stored back modulo 2^bits (numpy's
 * wrap-around).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../custom/custom_internal.h"
#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "interp_internal.h"

typedef struct view {
    const float *d;
    const tether_ir_tensor *t;
} view;

/* Row-major strides of a shape. */
static void strides_of(const int64_t *shape, int ndim, int64_t *st) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        st[i] = s;
        s *= shape[i];
    }
}

/* Offset in `t` (shape, rank nd_t) of broadcast output index idx (rank nd). */
static size_t bcast_off(const int64_t *shape, int nd_t, const int64_t *idx, int nd) {
    int64_t st[TETHER_IR_MAX_NDIM];
    strides_of(shape, nd_t, st);
    int64_t off = 0;
    for (int i = 0; i < nd_t; i++) {
        int64_t k = idx[nd - nd_t + i];
        off += (shape[i] == 1 ? 0 : k) * st[i];
    }
    return (size_t)off;
}

/* Element of `t` (rank nd_t) at broadcast output index idx (rank nd). */
static float bcast_at(const float *d, const int64_t *shape, int nd_t, const int64_t *idx, int nd) {
    return d[bcast_off(shape, nd_t, idx, nd)];
}

static bool is_f32(const tether_ir_tensor *t) {
    return tether_dtype_equal(t->dtype, TETHER_FLOAT32);
}

/* Copies element `from` of src to element `to` of dst (esize bytes each). */
static void copy_elem(void *dst, size_t to, const void *src, size_t from, size_t esize) {
    memcpy((char *)dst + to * esize, (const char *)src + from * esize, esize);
}

static void unravel(int64_t flat, const int64_t *shape, int nd, int64_t *idx) {
    for (int i = nd - 1; i >= 0; i--) {
        idx[i] = flat % shape[i];
        flat /= shape[i];
    }
}

/* conv_nd / conv_transpose over 1 to 3 spatial dimensions, seen as 3 (leading extents 1). */
typedef struct win3 {
    int64_t in[3], out[3], k[3], s[3], d[3], p[3];
} win3;

static void win3_of(const tether_ir_tensor *xt, const tether_ir_tensor *o, const tether_ir_attrs *a,
                    win3 *w) {
    int nsp = xt->ndim - 2, off = 3 - nsp;
    for (int i = 0; i < 3; i++) {
        int j = i - off;
        w->in[i] = j >= 0 ? xt->shape[2 + j] : 1;
        w->out[i] = j >= 0 ? o->shape[2 + j] : 1;
        w->k[i] = j >= 0 ? a->wkernel[j] : 1;
        w->s[i] = j >= 0 ? a->wstrides[j] : 1;
        w->d[i] = j >= 0 ? a->wdilations[j] : 1;
        w->p[i] = j >= 0 ? a->wpads[j] : 0;
    }
}

static void run_conv_nd(const tether_ir_node *n, const tether_ir_tensor *xt,
                        const tether_ir_tensor *o, const float *x, const float *w, const float *b,
                        float *y) {
    const tether_ir_attrs *a = &n->attrs;
    win3 g;
    win3_of(xt, o, a, &g);
    int64_t N = xt->shape[0], C = xt->shape[1], O = o->shape[1], G = a->groups;
    int64_t CG = C / G, OG = O / G, K = g.k[0] * g.k[1] * g.k[2];
    int64_t IS = g.in[0] * g.in[1] * g.in[2], OS = g.out[0] * g.out[1] * g.out[2];
    if (n->op == TETHER_OP_CONV_TRANSPOSE) {
        /* y[n, g*OG+oc, o] = b + sum over ic, i, k with o = i*s - p + k*d of x * w[g*CG+ic, oc, k]
         */
        double *acc = calloc((size_t)(OS ? OS : 1), sizeof(double));
        for (int64_t nn = 0; nn < N; nn++) {
            for (int64_t oc = 0; oc < O; oc++) {
                int64_t gi = oc / OG, ocg = oc % OG;
                for (int64_t f = 0; f < OS; f++) {
                    acc[f] = b ? b[oc] : 0.0;
                }
                for (int64_t ic = 0; ic < CG; ic++) {
                    const float *xc = x + (nn * C + gi * CG + ic) * IS;
                    const float *wc = w + ((gi * CG + ic) * OG + ocg) * K;
                    for (int64_t i = 0; i < IS; i++) {
                        int64_t i0 = i / (g.in[1] * g.in[2]), i1 = i / g.in[2] % g.in[1],
                                i2 = i % g.in[2];
                        for (int64_t k = 0; k < K; k++) {
                            int64_t k0 = k / (g.k[1] * g.k[2]), k1 = k / g.k[2] % g.k[1],
                                    k2 = k % g.k[2];
                            int64_t o0 = i0 * g.s[0] - g.p[0] + k0 * g.d[0];
                            int64_t o1 = i1 * g.s[1] - g.p[1] + k1 * g.d[1];
                            int64_t o2 = i2 * g.s[2] - g.p[2] + k2 * g.d[2];
                            if (o0 < 0 || o0 >= g.out[0] || o1 < 0 || o1 >= g.out[1] || o2 < 0 ||
                                o2 >= g.out[2]) {
                                continue;
                            }
                            acc[(o0 * g.out[1] + o1) * g.out[2] + o2] += (double)xc[i] * wc[k];
                        }
                    }
                }
                for (int64_t f = 0; f < OS; f++) {
                    y[(nn * O + oc) * OS + f] = (float)acc[f];
                }
            }
        }
        free(acc);
        return;
    }
    for (int64_t nn = 0; nn < N; nn++) {
        for (int64_t oc = 0; oc < O; oc++) {
            int64_t gi = oc / OG;
            for (int64_t f = 0; f < OS; f++) {
                int64_t o0 = f / (g.out[1] * g.out[2]), o1 = f / g.out[2] % g.out[1],
                        o2 = f % g.out[2];
                double acc = b ? b[oc] : 0.0;
                for (int64_t ic = 0; ic < CG; ic++) {
                    for (int64_t k = 0; k < K; k++) {
                        int64_t k0 = k / (g.k[1] * g.k[2]), k1 = k / g.k[2] % g.k[1],
                                k2 = k % g.k[2];
                        int64_t i0 = o0 * g.s[0] - g.p[0] + k0 * g.d[0];
                        int64_t i1 = o1 * g.s[1] - g.p[1] + k1 * g.d[1];
                        int64_t i2 = o2 * g.s[2] - g.p[2] + k2 * g.d[2];
                        if (i0 < 0 || i0 >= g.in[0] || i1 < 0 || i1 >= g.in[1] || i2 < 0 ||
                            i2 >= g.in[2]) {
                            continue;
                        }
                        acc += (double)x[(nn * C + gi * CG + ic) * IS +
                                         (i0 * g.in[1] + i1) * g.in[2] + i2] *
                               w[(oc * CG + ic) * K + k];
                    }
                }
                y[(nn * O + oc) * OS + f] = (float)acc;
            }
        }
    }
}

/* The reductions: every input element of an output's group folded in double. */
static void run_reduce(const tether_ir_node *n, const tether_ir_tensor *xt, const float *x,
                       float *y, size_t total) {
    const tether_ir_attrs *a = &n->attrs;
    int red[TETHER_IR_MAX_NDIM] = {0};
    for (int i = 0; i < a->nints; i++) {
        red[a->ints[i]] = 1;
    }
    int64_t kshape[TETHER_IR_MAX_NDIM], ost[TETHER_IR_MAX_NDIM], idx[TETHER_IR_MAX_NDIM] = {0};
    for (int i = 0; i < xt->ndim; i++) {
        kshape[i] = red[i] ? 1 : xt->shape[i];
    }
    strides_of(kshape, xt->ndim, ost);
    double *acc = malloc(total * sizeof(double)), *mx = malloc(total * sizeof(double));
    if (!acc || !mx) {
        free(acc);
        free(mx);
        return; /* out of memory: the caller's buffers stay as they are */
    }
    tether_op op = n->op;
    for (size_t f = 0; f < total; f++) {
        acc[f] = op == TETHER_OP_REDUCE_PROD  ? 1.0
                 : op == TETHER_OP_REDUCE_MAX ? -INFINITY
                 : op == TETHER_OP_REDUCE_MIN ? INFINITY
                                              : 0.0;
        mx[f] = -INFINITY;
    }
    size_t xn = tether_ir_tensor_elements(xt);
    for (int pass = op == TETHER_OP_REDUCE_LOG_SUM_EXP ? 0 : 1; pass < 2; pass++) {
        for (size_t f = 0; f < xn; f++) {
            unravel((int64_t)f, xt->shape, xt->ndim, idx);
            int64_t off = 0;
            for (int i = 0; i < xt->ndim; i++) {
                off += (red[i] ? 0 : idx[i]) * ost[i];
            }
            double v = x[f];
            if (pass == 0) {
                mx[off] = v > mx[off] ? v : mx[off];
                continue;
            }
            if (op == TETHER_OP_REDUCE_MAX) {
                acc[off] = v > acc[off] ? v : acc[off];
            } else if (op == TETHER_OP_REDUCE_MIN) {
                acc[off] = v < acc[off] ? v : acc[off];
            } else if (op == TETHER_OP_REDUCE_PROD) {
                acc[off] *= v;
            } else if (op == TETHER_OP_REDUCE_L1) {
                acc[off] += fabs(v);
            } else if (op == TETHER_OP_REDUCE_L2 || op == TETHER_OP_REDUCE_SUM_SQUARE) {
                acc[off] += v * v;
            } else if (op == TETHER_OP_REDUCE_LOG_SUM_EXP) {
                acc[off] += exp(v - mx[off]);
            } else { /* sum, mean, log_sum */
                acc[off] += v;
            }
        }
    }
    double cnt = total ? (double)xn / (double)total : 1.0;
    for (size_t f = 0; f < total; f++) {
        double v = acc[f];
        y[f] = (float)(op == TETHER_OP_REDUCE_MEAN          ? v / cnt
                       : op == TETHER_OP_REDUCE_L2          ? sqrt(v)
                       : op == TETHER_OP_REDUCE_LOG_SUM     ? log(v)
                       : op == TETHER_OP_REDUCE_LOG_SUM_EXP ? mx[f] + log(v)
                                                            : v);
    }
    free(acc);
    free(mx);
}

static void run_node(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *o = &g->tensors[n->outputs[0]];
    float *y = buf[n->outputs[0]];
    const float *x = buf[n->inputs[0]];
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]];
    const size_t es = tether_dtype_bytes(o->dtype);
    size_t total = tether_ir_tensor_elements(o);
    int64_t idx[TETHER_IR_MAX_NDIM] = {0};
    const float *res = a->has_residual ? buf[n->inputs[n->ninputs - 1]] : NULL;
    if (tether__ir_live_wired(n) && tether__op_info_of(n->op)->kind != TETHER__OPK_DATA) {
        (void)tether__interp_live(g, n, buf); /* transpose, concat: never fail */
        return;
    }
    switch (n->op) {
    case TETHER_OP_CONV2D: {
        const float *w = buf[n->inputs[1]];
        const float *b =
            n->ninputs > 2 && n->inputs[2] >= 0 && !(a->has_residual && n->ninputs == 3)
                ? buf[n->inputs[2]]
                : NULL;
        int64_t N = xt->shape[0], C = xt->shape[1], H = xt->shape[2], W = xt->shape[3];
        int64_t O = o->shape[1], OH = o->shape[2], OW = o->shape[3];
        int64_t KH = a->kernel[0], KW = a->kernel[1], G = a->groups, CG = C / G, OG = O / G;
        for (int64_t nn = 0; nn < N; nn++) {
            for (int64_t oc = 0; oc < O; oc++) {
                int64_t gi = oc / OG;
                for (int64_t oh = 0; oh < OH; oh++) {
                    for (int64_t ow = 0; ow < OW; ow++) {
                        double acc = b ? b[oc] : 0.0;
                        for (int64_t ic = 0; ic < CG; ic++) {
                            for (int64_t kh = 0; kh < KH; kh++) {
                                for (int64_t kw = 0; kw < KW; kw++) {
                                    int64_t ih =
                                        oh * a->strides[0] - a->pads[0] + kh * a->dilations[0];
                                    int64_t iw =
                                        ow * a->strides[1] - a->pads[1] + kw * a->dilations[1];
                                    if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                                        continue;
                                    }
                                    acc += (double)x[((nn * C + gi * CG + ic) * H + ih) * W + iw] *
                                           w[((oc * CG + ic) * KH + kh) * KW + kw];
                                }
                            }
                        }
                        size_t oi = (size_t)(((nn * O + oc) * OH + oh) * OW + ow);
                        float v = (float)acc + (res ? res[oi] : 0.0f);
                        y[oi] = tether__interp_apply_act(v, a);
                    }
                }
            }
        }
        return;
    }
    case TETHER_OP_DENSE: {
        const float *B = buf[n->inputs[1]];
        const tether_ir_tensor *bt = &g->tensors[n->inputs[1]];
        const tether_ir_tensor *ct = NULL;
        const float *C = NULL;
        if (tether__ir_main_inputs(n) > 2 && n->inputs[2] >= 0) {
            ct = &g->tensors[n->inputs[2]];
            C = buf[n->inputs[2]];
        }
        int64_t M = o->shape[0], NN = o->shape[1];
        int64_t K = a->trans_a ? xt->shape[0] : xt->shape[1];
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < NN; j++) {
                double acc = 0.0;
                for (int64_t k = 0; k < K; k++) {
                    float av = a->trans_a ? x[k * M + i] : x[i * K + k];
                    float bv = a->trans_b ? B[j * bt->shape[1] + k] : B[k * NN + j];
                    acc += (double)av * bv;
                }
                float v = a->alpha * (float)acc;
                if (C) {
                    int64_t ij[2] = {i, j};
                    v += a->beta * bcast_at(C, ct->shape, ct->ndim, ij, 2);
                }
                if (res) {
                    v += res[i * NN + j];
                }
                y[i * NN + j] = tether__interp_apply_act(v, a);
            }
        }
        return;
    }
    case TETHER_OP_MATMUL: {
        /* rank-1 operands promoted; the output viewed with its extent-1 dimensions */
        tether_ir_tensor va, vb, yv;
        tether__ir_matmul_view(g, n, &va, &vb, &yv);
        const tether_ir_tensor *bt = &vb;
        xt = &va;
        const float *B = buf[n->inputs[1]];
        int nd = yv.ndim;
        int64_t M = yv.shape[nd - 2], NN = yv.shape[nd - 1], K = xt->shape[xt->ndim - 1];
        for (size_t f = 0; f < total; f++) {
            unravel((int64_t)f, yv.shape, nd, idx);
            int64_t i = idx[nd - 2], j = idx[nd - 1];
            double acc = 0.0;
            for (int64_t k = 0; k < K; k++) {
                idx[nd - 2] = i;
                idx[nd - 1] = k;
                float av = bcast_at(x, xt->shape, xt->ndim, idx, nd);
                idx[nd - 2] = k;
                idx[nd - 1] = j;
                float bv = bcast_at(B, bt->shape, bt->ndim, idx, nd);
                acc += (double)av * bv;
            }
            (void)M;
            (void)NN;
            float v = (float)acc + (res ? res[f] : 0.0f);
            y[f] = tether__interp_apply_act(v, a);
        }
        return;
    }
        TETHER__CASES_BINARY {
            const tether_ir_tensor *yt = &g->tensors[n->inputs[1]];
            const float *x2 = buf[n->inputs[1]];
            if (!is_f32(xt) || !is_f32(o)) { /* typed: both inputs of x's type */
                for (size_t f = 0; f < total; f++) {
                    unravel((int64_t)f, o->shape, o->ndim, idx);
                    val u = tether__interp_load(x, xt->dtype,
                                                bcast_off(xt->shape, xt->ndim, idx, o->ndim));
                    val v = tether__interp_load(x2, yt->dtype,
                                                bcast_off(yt->shape, yt->ndim, idx, o->ndim));
                    tether__interp_store(y, o->dtype, f, tether__interp_ew_typed(n->op, u, &v, a));
                }
                return;
            }
            for (size_t f = 0; f < total; f++) {
                unravel((int64_t)f, o->shape, o->ndim, idx);
                y[f] =
                    tether__interp_ew_binary(n->op, bcast_at(x, xt->shape, xt->ndim, idx, o->ndim),
                                             bcast_at(x2, yt->shape, yt->ndim, idx, o->ndim), a);
            }
            return;
        }
    case TETHER_OP_PRELU: {
        const tether_ir_tensor *st = &g->tensors[n->inputs[1]];
        const float *s = buf[n->inputs[1]];
        for (size_t f = 0; f < total; f++) {
            unravel((int64_t)f, o->shape, o->ndim, idx);
            y[f] = tether__interp_ew_binary(n->op, x[f],
                                            bcast_at(s, st->shape, st->ndim, idx, o->ndim), a);
        }
        return;
    }
    case TETHER_OP_SOFTMAX:
    case TETHER_OP_LOG_SOFTMAX:
    case TETHER_OP_HARDMAX: {
        int ax = tether__ir_norm_axis(a->axis, o->ndim);
        int64_t outer = 1, inner = 1, len = o->shape[ax];
        for (int i = 0; i < ax; i++) {
            outer *= o->shape[i];
        }
        for (int i = ax + 1; i < o->ndim; i++) {
            inner *= o->shape[i];
        }
        for (int64_t p = 0; p < outer; p++) {
            for (int64_t q = 0; q < inner; q++) {
                const float *xs = x + p * len * inner + q;
                float *ys = y + p * len * inner + q;
                float mx = xs[0];
                int64_t at = 0;
                for (int64_t k = 1; k < len; k++) {
                    if (xs[k * inner] > mx) {
                        mx = xs[k * inner];
                        at = k;
                    }
                }
                if (n->op == TETHER_OP_HARDMAX) { /* the first maximum */
                    for (int64_t k = 0; k < len; k++) {
                        ys[k * inner] = k == at ? 1.0f : 0.0f;
                    }
                    continue;
                }
                double sum = 0.0;
                for (int64_t k = 0; k < len; k++) {
                    sum += exp((double)xs[k * inner] - mx);
                }
                for (int64_t k = 0; k < len; k++) {
                    double d = (double)xs[k * inner] - mx;
                    ys[k * inner] =
                        n->op == TETHER_OP_SOFTMAX ? (float)(exp(d) / sum) : (float)(d - log(sum));
                }
            }
        }
        return;
    }
    case TETHER_OP_MAX_POOL:
    case TETHER_OP_AVG_POOL: {
        int64_t C = xt->shape[1], H = xt->shape[2], W = xt->shape[3];
        int64_t OH = o->shape[2], OW = o->shape[3];
        for (int64_t nc = 0; nc < o->shape[0] * C; nc++) {
            for (int64_t oh = 0; oh < OH; oh++) {
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = n->op == TETHER_OP_MAX_POOL ? -INFINITY : 0.0;
                    int64_t cnt = 0, cnt_pad = 0;
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
                            float v = x[(nc * H + ih) * W + iw];
                            cnt++;
                            if (n->op == TETHER_OP_MAX_POOL) {
                                acc = v > acc ? v : acc;
                            } else {
                                acc += v;
                            }
                        }
                    }
                    if (n->op == TETHER_OP_AVG_POOL) {
                        acc /= (double)(a->count_include_pad ? cnt_pad : cnt);
                    }
                    y[(nc * OH + oh) * OW + ow] = (float)acc;
                }
            }
        }
        return;
    }
    case TETHER_OP_GLOBAL_AVG_POOL:
    case TETHER_OP_GLOBAL_MAX_POOL: {
        int64_t plane = 1;
        for (int i = 2; i < xt->ndim; i++) {
            plane *= xt->shape[i];
        }
        for (int64_t nc = 0; nc < xt->shape[0] * xt->shape[1]; nc++) {
            double acc = n->op == TETHER_OP_GLOBAL_MAX_POOL ? -INFINITY : 0.0;
            for (int64_t k = 0; k < plane; k++) {
                float v = x[nc * plane + k];
                if (n->op == TETHER_OP_GLOBAL_MAX_POOL) {
                    acc = v > acc ? v : acc;
                } else {
                    acc += v;
                }
            }
            y[nc] = n->op == TETHER_OP_GLOBAL_AVG_POOL ? (float)(acc / (double)plane) : (float)acc;
        }
        return;
    }
    case TETHER_OP_RESHAPE:
    case TETHER_OP_FLATTEN:
    case TETHER_OP_SQUEEZE:
    case TETHER_OP_UNSQUEEZE:
        memcpy(y, x, total * es);
        return;
    case TETHER_OP_TRANSPOSE: {
        int64_t st[TETHER_IR_MAX_NDIM];
        strides_of(xt->shape, xt->ndim, st);
        for (size_t f = 0; f < total; f++) {
            unravel((int64_t)f, o->shape, o->ndim, idx);
            int64_t off = 0;
            for (int i = 0; i < o->ndim; i++) {
                off += idx[i] * st[a->ints[i]];
            }
            copy_elem(y, f, x, (size_t)off, es);
        }
        return;
    }
    case TETHER_OP_WHERE: {
        const tether_ir_tensor *t1 = &g->tensors[n->inputs[1]], *t2 = &g->tensors[n->inputs[2]];
        const unsigned char *c = buf[n->inputs[0]];
        for (size_t f = 0; f < total; f++) {
            unravel((int64_t)f, o->shape, o->ndim, idx);
            if (c[bcast_off(xt->shape, xt->ndim, idx, o->ndim)]) {
                copy_elem(y, f, buf[n->inputs[1]], bcast_off(t1->shape, t1->ndim, idx, o->ndim),
                          es);
            } else {
                copy_elem(y, f, buf[n->inputs[2]], bcast_off(t2->shape, t2->ndim, idx, o->ndim),
                          es);
            }
        }
        return;
    }
    case TETHER_OP_CONCAT: {
        int ax = (int)a->axis;
        for (size_t f = 0; f < total; f++) {
            unravel((int64_t)f, o->shape, o->ndim, idx);
            int64_t k = idx[ax];
            for (int i = 0; i < n->ninputs; i++) {
                const tether_ir_tensor *it = &g->tensors[n->inputs[i]];
                if (k < it->shape[ax]) {
                    idx[ax] = k;
                    copy_elem(y, f, buf[n->inputs[i]], bcast_off(it->shape, it->ndim, idx, o->ndim),
                              es);
                    break;
                }
                k -= it->shape[ax];
            }
        }
        return;
    }
    case TETHER_OP_PAD: {
        int64_t st[TETHER_IR_MAX_NDIM];
        strides_of(xt->shape, xt->ndim, st);
        for (size_t f = 0; f < total; f++) {
            unravel((int64_t)f, o->shape, o->ndim, idx);
            int64_t off = 0;
            int inside = 1;
            for (int i = 0; i < o->ndim; i++) {
                int64_t k = idx[i] - a->ints[i];
                if (k < 0 || k >= xt->shape[i]) {
                    inside = 0;
                    break;
                }
                off += k * st[i];
            }
            if (inside) {
                copy_elem(y, f, x, (size_t)off, es);
            } else {
                tether__interp_store(y, o->dtype, f, (val){TETHER__DC_F64, a->value, 0, 0});
            }
        }
        return;
    }
    case TETHER_OP_BATCH_NORM: {
        const float *sc = buf[n->inputs[1]], *bi = buf[n->inputs[2]];
        const float *mu = buf[n->inputs[3]], *var = buf[n->inputs[4]];
        int64_t C = xt->shape[1], inner = 1;
        for (int i = 2; i < xt->ndim; i++) {
            inner *= xt->shape[i];
        }
        for (size_t f = 0; f < total; f++) {
            int64_t c = ((int64_t)f / inner) % C;
            y[f] =
                (float)(((double)x[f] - mu[c]) / sqrt((double)var[c] + a->epsilon) * sc[c] + bi[c]);
        }
        return;
    }
    case TETHER_OP_LAYER_NORM: {
        const float *sc = buf[n->inputs[1]];
        const float *bi = n->ninputs > 2 && n->inputs[2] >= 0 ? buf[n->inputs[2]] : NULL;
        int64_t outer = 1, inner = 1;
        for (int i = 0; i < a->axis; i++) {
            outer *= xt->shape[i];
        }
        for (int i = (int)a->axis; i < xt->ndim; i++) {
            inner *= xt->shape[i];
        }
        for (int64_t p = 0; p < outer; p++) {
            const float *xs = x + p * inner;
            double mean = 0.0, var = 0.0;
            for (int64_t k = 0; k < inner; k++) {
                mean += xs[k];
            }
            mean /= (double)inner;
            for (int64_t k = 0; k < inner; k++) {
                var += (xs[k] - mean) * (xs[k] - mean);
            }
            var /= (double)inner;
            for (int64_t k = 0; k < inner; k++) {
                y[p * inner + k] =
                    (float)((xs[k] - mean) / sqrt(var + a->epsilon) * sc[k] + (bi ? bi[k] : 0.0));
            }
        }
        return;
    }
    case TETHER_OP_REDUCE_MEAN:
    case TETHER_OP_REDUCE_SUM:
    case TETHER_OP_REDUCE_MAX:
    case TETHER_OP_REDUCE_MIN:
    case TETHER_OP_REDUCE_PROD:
    case TETHER_OP_REDUCE_L1:
    case TETHER_OP_REDUCE_L2:
    case TETHER_OP_REDUCE_LOG_SUM:
    case TETHER_OP_REDUCE_LOG_SUM_EXP:
    case TETHER_OP_REDUCE_SUM_SQUARE:
        if (!tether_dtype_equal(xt->dtype, TETHER_FLOAT32) || n->ninputs > 1) {
            tether__interp_reduce_typed(g, n, buf); /* and a live extent of dimension 0 */
            return;
        }
        run_reduce(n, xt, x, y, total);
        return;
    case TETHER_OP_CONV_ND:
    case TETHER_OP_CONV_TRANSPOSE:
        run_conv_nd(n, xt, o, x, buf[n->inputs[1]],
                    n->ninputs > 2 && n->inputs[2] >= 0 ? buf[n->inputs[2]] : NULL, y);
        return;
    case TETHER_OP_RESIZE_NEAREST: {
        int64_t H = xt->shape[2], W = xt->shape[3];
        for (size_t f = 0; f < total; f++) {
            unravel((int64_t)f, o->shape, 4, idx);
            y[f] = x[((idx[0] * xt->shape[1] + idx[1]) * H + idx[2] / a->scales[0]) * W +
                     idx[3] / a->scales[1]];
        }
        return;
    }
    case TETHER_OP_NLL_LOSS:
    case TETHER_OP_NLL_LOSS_SUM:
    case TETHER_OP_NLL_LOSS_MEAN:
        tether__interp_nll_loss(g, n, buf);
        break;
    case TETHER_OP_QUANTIZE:
    case TETHER_OP_DEQUANTIZE:
    case TETHER_OP_QCONV:
    case TETHER_OP_QMATMUL:
    case TETHER_OP_QADD: /* issue 28 integer elementwise/pooling */
    case TETHER_OP_QMUL:
    case TETHER_OP_QLUT:
    case TETHER_OP_QMAX_POOL:
    case TETHER_OP_QAVG_POOL:
        tether__interp_quant(g, n, buf); /* interp_quant.c */
        return;
    case TETHER_OP_CUSTOM: /* run by run_custom (it can fail) */
        TETHER__CASES_DATA /* run by tether__interp_data (interp_data.c; it can fail) */
            return;
        TETHER__CASES_UNARY
        if (!is_f32(xt) || !is_f32(o)) { /* typed (cast among them) */
            for (size_t f = 0; f < total; f++) {
                tether__interp_store(
                    y, o->dtype, f,
                    tether__interp_ew_typed(n->op, tether__interp_load(x, xt->dtype, f), NULL, a));
            }
            return;
        }
        for (size_t f = 0; f < total; f++) {
            y[f] = tether__interp_ew_unary(n->op, x[f], a);
        }
        return;
    }
}

/* A custom operator: its C implementation, built for the host (custom/reference.c). */
/* The user's C implementation on the buffers (of the element types the registry declares). */
static int run_custom(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const float *in[TETHER_IR_MAX_INPUTS];
    for (int j = 0; j < n->ninputs; j++) {
        in[j] = n->inputs[j] >= 0 ? buf[n->inputs[j]] : NULL;
    }
    return tether__custom_reference_run(g, n, in, (float *)buf[n->outputs[0]]);
}

int tether_interp_run(const tether_ir_graph *g, const float *const *inputs, float *const *outputs) {
    /* The float API: a graph input or output of another element type would be read or written
     * past its float-sized buffer, so such a graph goes through tether_interp_run_typed. */
    for (int i = 0; i < g->ninputs + g->noutputs; i++) {
        int t = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
        if (!tether_dtype_equal(g->tensors[t].dtype, TETHER_FLOAT32)) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "interpreter: graph %s '%s' has element type %s; "
                                    "tether_interp_run takes float32 only (use "
                                    "tether_interp_run_typed)",
                                    i < g->ninputs ? "input" : "output", g->tensors[t].name,
                                    tether__dtype_str(g->tensors[t].dtype));
        }
    }
    return tether_interp_run_typed(g, (const void *const *)inputs, (void *const *)outputs);
}

int tether_interp_run_typed(const tether_ir_graph *g, const void *const *inputs,
                            void *const *outputs) {
    void **buf = calloc((size_t)(g->ntensors ? g->ntensors : 1), sizeof(void *));
    char *owned = calloc((size_t)(g->ntensors ? g->ntensors : 1), 1);
    int64_t *loops = NULL; /* per node: iteration, running, condition (interp_loop.c) */
    int rc = TETHER_OK;
    if (!buf || !owned) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "interpreter: out of memory");
        goto out;
    }
    for (int i = 0; i < g->ntensors; i++) {
        const tether_ir_tensor *t = &g->tensors[i];
        if (t->ndim < 0) {
            rc = tether_set_error(TETHER_ERR_STATE, "interpreter: tensor '%s' has no shape",
                                  t->name);
            goto out;
        }
        if (t->kind == TETHER_TENSOR_CONSTANT) {
            buf[i] = t->data;
        }
    }
    for (int i = 0; i < g->ninputs; i++) {
        buf[g->inputs[i]] = (void *)(uintptr_t)inputs[i]; /* read, never written */
    }
    for (int i = 0; i < g->noutputs; i++) {
        buf[g->outputs[i]] = outputs[i];
    }
    for (int i = 0; i < g->ntensors; i++) {
        if (!buf[i]) {
            size_t n = tether_ir_tensor_bytes(&g->tensors[i]);
            buf[i] = malloc(n ? n : 1); /* empty tensors get a valid pointer */
            owned[i] = 1;
            if (!buf[i]) {
                rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "interpreter: out of memory");
                goto out;
            }
        }
    }
    for (int i = 0; i < g->nnodes; i++) {
        if (tether__ir_is_loop_op(g->nodes[i].op)) { /* run-time loops: interp_loop.c */
            if (!loops && !(loops = calloc((size_t)g->nnodes * 3, sizeof *loops))) {
                rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "interpreter: out of memory");
                goto out;
            }
            int next;
            if ((rc = tether__interp_loop(g, i, buf, loops, &next))) {
                goto out;
            }
            i = next - 1;
            continue;
        }
        if (tether_ir_tensor_elements(&g->tensors[g->nodes[i].outputs[0]]) == 0) {
            continue; /* an empty output: nothing to compute */
        }
        if ((g->nodes[i].op == TETHER_OP_CUSTOM && (rc = run_custom(g, &g->nodes[i], buf))) ||
            (tether__op_info_of(g->nodes[i].op)->kind == TETHER__OPK_DATA &&
             (rc = tether__interp_data(g, &g->nodes[i], buf)))) {
            goto out;
        }
        run_node(g, &g->nodes[i], buf);
    }
out:
    if (buf) {
        for (int i = 0; i < g->ntensors; i++) {
            if (owned && owned[i]) {
                free(buf[i]);
            }
        }
    }
    free(buf);
    free(owned);
    free(loops);
    return rc;
}

int tether__interp_eval_node(const tether_ir_graph *g, int node, void *out) {
    const tether_ir_node *n = &g->nodes[node];
    void **buf = calloc((size_t)g->ntensors, sizeof(void *));
    if (!buf) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "interpreter: out of memory");
    }
    for (int i = 0; i < n->ninputs; i++) {
        if (n->inputs[i] >= 0) {
            buf[n->inputs[i]] = g->tensors[n->inputs[i]].data;
        }
    }
    buf[n->outputs[0]] = out;
    int rc = TETHER_OK;
    if (tether_ir_tensor_elements(&g->tensors[n->outputs[0]]) > 0) {
        if (n->op == TETHER_OP_CUSTOM) {
            rc = run_custom(g, n, buf);
        } else if (tether__op_info_of(n->op)->kind == TETHER__OPK_DATA) {
            rc = tether__interp_data(g, n, buf);
        }
        run_node(g, n, buf);
    }
    free(buf);
    return rc;
}
