/*
 * The reference interpreter: runs an inferred graph on host float buffers with plain,
 * obviously-correct loops (double accumulators, no blocking, no cleverness). It is the ground
 * truth the generated code is tested against, so it shares no code with the emitters; keep it
 * simple rather than fast.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../custom/custom_internal.h"
#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

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

/* Element of `t` (rank nd_t) at broadcast output index idx (rank nd). */
static float bcast_at(const float *d, const int64_t *shape, int nd_t, const int64_t *idx, int nd) {
    int64_t st[TETHER_IR_MAX_NDIM];
    strides_of(shape, nd_t, st);
    int64_t off = 0;
    for (int i = 0; i < nd_t; i++) {
        int64_t k = idx[nd - nd_t + i];
        off += (shape[i] == 1 ? 0 : k) * st[i];
    }
    return d[off];
}

static void unravel(int64_t flat, const int64_t *shape, int nd, int64_t *idx) {
    for (int i = nd - 1; i >= 0; i--) {
        idx[i] = flat % shape[i];
        flat /= shape[i];
    }
}

/* The primitives of the elementwise formulas (ir/formula.def), the interpreter's own
 * definitions: the ground truth of the emitters' spellings. */
static float relu(float v) {
    return v > 0.0f ? v : 0.0f;
}

static float leaky(float v, float alpha) {
    return v < 0.0f ? alpha * v : v;
}

static float clip(float v, float lo, float hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

static float sigmoid(float v) {
    return 1.0f / (1.0f + expf(-v));
}

static float hswish(float v) {
    return v * clip(v + 3.0f, 0.0f, 6.0f) / 6.0f;
}

/* The FORMULA column of ops.def compiled as written, x the input and alpha ... max the node's
 * attributes: ew_unary has a case for every UNARY row, ew_binary for every BINARY and PRELU
 * row (y the second input). A UNARY row without a formula, or one that reads y, does not build.
 * Any other operator is never passed here: NAN, computed by nothing. */
/* clang-format off */
#define EW_ATTRS_(at) \
    const float alpha = (at)->alpha, beta = (at)->beta, min = (at)->min, max = (at)->max; \
    (void)alpha; \
    (void)beta; \
    (void)min; \
    (void)max
#define EW_RETURN_(id, formula) case TETHER_OP_##id: return (formula);
#define EW_NONE_(id)            case TETHER_OP_##id: break;
#define EW_UNARY_(id, name, kind, act, min_in, max_in, attrs, epilogue, formula, defaults) \
    TETHER__OPK_EW_##kind(EW_RETURN_(id, formula), EW_NONE_(id), EW_NONE_(id), EW_NONE_(id))
#define EW_BINARY_(id, name, kind, act, min_in, max_in, attrs, epilogue, formula, defaults) \
    TETHER__OPK_EW_##kind(EW_NONE_(id), EW_RETURN_(id, formula), EW_RETURN_(id, formula), EW_NONE_(id))
/* clang-format on */

static float ew_unary(tether_op op, float x, const tether_ir_attrs *at) {
    EW_ATTRS_(at);
    switch (op) { TETHER_OP_LIST(EW_UNARY_) }
    return NAN;
}

static float ew_binary(tether_op op, float x, float y, const tether_ir_attrs *at) {
    EW_ATTRS_(at);
    switch (op) { TETHER_OP_LIST(EW_BINARY_) }
    return NAN;
}
#undef EW_ATTRS_
#undef EW_RETURN_
#undef EW_NONE_
#undef EW_UNARY_
#undef EW_BINARY_

/* A fused epilogue activation: the formula of the operator whose ACT column it is. */
static float apply_act(float v, const tether_ir_attrs *a) {
    if (a->act == TETHER_ACT_NONE) {
        return v;
    }
    tether_ir_attrs t;
    tether__act_attrs(a, &t);
    return ew_unary(tether__act_op(a->act), v, &t);
}

static void run_node(const tether_ir_graph *g, const tether_ir_node *n, float **buf) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *o = &g->tensors[n->outputs[0]];
    float *y = buf[n->outputs[0]];
    const float *x = buf[n->inputs[0]];
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]];
    size_t total = tether_ir_tensor_elements(o);
    int64_t idx[TETHER_IR_MAX_NDIM] = {0};
    const float *res = a->has_residual ? buf[n->inputs[n->ninputs - 1]] : NULL;
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
                        y[oi] = apply_act(v, a);
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
                y[i * NN + j] = apply_act(v, a);
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
            y[f] = apply_act(v, a);
        }
        return;
    }
        TETHER__CASES_BINARY {
            const tether_ir_tensor *yt = &g->tensors[n->inputs[1]];
            const float *x2 = buf[n->inputs[1]];
            for (size_t f = 0; f < total; f++) {
                unravel((int64_t)f, o->shape, o->ndim, idx);
                y[f] = ew_binary(n->op, bcast_at(x, xt->shape, xt->ndim, idx, o->ndim),
                                 bcast_at(x2, yt->shape, yt->ndim, idx, o->ndim), a);
            }
            return;
        }
    case TETHER_OP_PRELU: {
        const tether_ir_tensor *st = &g->tensors[n->inputs[1]];
        const float *s = buf[n->inputs[1]];
        for (size_t f = 0; f < total; f++) {
            unravel((int64_t)f, o->shape, o->ndim, idx);
            y[f] = ew_binary(n->op, x[f], bcast_at(s, st->shape, st->ndim, idx, o->ndim), a);
        }
        return;
    }
    case TETHER_OP_SOFTMAX:
    case TETHER_OP_LOG_SOFTMAX: {
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
                for (int64_t k = 1; k < len; k++) {
                    mx = xs[k * inner] > mx ? xs[k * inner] : mx;
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
        memcpy(y, x, total * sizeof(float));
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
            y[f] = x[off];
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
                    y[f] = bcast_at(buf[n->inputs[i]], it->shape, it->ndim, idx, o->ndim);
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
            y[f] = inside ? x[off] : a->value;
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
    case TETHER_OP_REDUCE_MEAN: {
        int red[TETHER_IR_MAX_NDIM] = {0};
        for (int i = 0; i < a->nints; i++) {
            red[a->ints[i]] = 1;
        }
        int64_t kshape[TETHER_IR_MAX_NDIM], ost[TETHER_IR_MAX_NDIM];
        for (int i = 0; i < xt->ndim; i++) {
            kshape[i] = red[i] ? 1 : xt->shape[i];
        }
        strides_of(kshape, xt->ndim, ost);
        double *acc = calloc(total, sizeof(double));
        size_t xn = tether_ir_tensor_elements(xt);
        for (size_t f = 0; f < xn; f++) {
            unravel((int64_t)f, xt->shape, xt->ndim, idx);
            int64_t off = 0;
            for (int i = 0; i < xt->ndim; i++) {
                off += (red[i] ? 0 : idx[i]) * ost[i];
            }
            acc[off] += x[f];
        }
        double cnt = (double)xn / (double)total;
        for (size_t f = 0; f < total; f++) {
            y[f] = (float)(acc[f] / cnt);
        }
        free(acc);
        return;
    }
    case TETHER_OP_RESIZE_NEAREST: {
        int64_t H = xt->shape[2], W = xt->shape[3];
        for (size_t f = 0; f < total; f++) {
            unravel((int64_t)f, o->shape, 4, idx);
            y[f] = x[((idx[0] * xt->shape[1] + idx[1]) * H + idx[2] / a->scales[0]) * W +
                     idx[3] / a->scales[1]];
        }
        return;
    }
    case TETHER_OP_CUSTOM: /* run by run_custom (it can fail) */
        return;
        TETHER__CASES_UNARY
        for (size_t f = 0; f < total; f++) {
            y[f] = ew_unary(n->op, x[f], a);
        }
        return;
    }
}

/* A custom operator: its C implementation, built for the host (custom/reference.c). */
static int run_custom(const tether_ir_graph *g, const tether_ir_node *n, float **buf) {
    const float *in[TETHER_IR_MAX_INPUTS];
    for (int j = 0; j < n->ninputs; j++) {
        in[j] = n->inputs[j] >= 0 ? buf[n->inputs[j]] : NULL;
    }
    return tether__custom_reference_run(g, n, in, buf[n->outputs[0]]);
}

int tether_interp_run(const tether_ir_graph *g, const float *const *inputs, float *const *outputs) {
    float **buf = calloc((size_t)(g->ntensors ? g->ntensors : 1), sizeof(float *));
    char *owned = calloc((size_t)(g->ntensors ? g->ntensors : 1), 1);
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
        buf[g->inputs[i]] = (float *)inputs[i];
    }
    for (int i = 0; i < g->noutputs; i++) {
        buf[g->outputs[i]] = outputs[i];
    }
    for (int i = 0; i < g->ntensors; i++) {
        if (!buf[i]) {
            size_t n = tether_ir_tensor_elements(&g->tensors[i]);
            buf[i] = malloc((n ? n : 1) * sizeof(float)); /* empty tensors get a valid pointer */
            owned[i] = 1;
            if (!buf[i]) {
                rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "interpreter: out of memory");
                goto out;
            }
        }
    }
    for (int i = 0; i < g->nnodes; i++) {
        if (tether_ir_tensor_elements(&g->tensors[g->nodes[i].outputs[0]]) == 0) {
            continue; /* an empty output: nothing to compute */
        }
        if (g->nodes[i].op == TETHER_OP_CUSTOM && (rc = run_custom(g, &g->nodes[i], buf))) {
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
    return rc;
}

int tether__interp_eval_node(const tether_ir_graph *g, int node, float *out) {
    const tether_ir_node *n = &g->nodes[node];
    float **buf = calloc((size_t)g->ntensors, sizeof(float *));
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
        }
        run_node(g, n, buf);
    }
    free(buf);
    return rc;
}
