/*
 * The reference loops of the recurrent layers (rnn, gru, lstm; ONNX RNN, GRU, LSTM) and of
 * reverse_sequence: plain loops in double over float32 operands, written from the ONNX equations
 * (gate orders: lstm i o f c, gru z r h; peepholes i o f).
 *
 * What must stay true: the output is [T+S, D, B, H] as ops.def says: rows 0..T-1 Y (zero past a
 * sequence's length), row T the last valid hidden state, row T+1 lstm's cell state and, for gru,
 * zeros (the C kernel's working row, cleared when it is done); a sequence length outside 0..T is
 * TETHER_ERR_INVALID_ARG naming the node (the generated C returns the same code), never a read
 * outside x. Clip bounds every gate's pre-activation, peephole terms included.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp_internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* Entry k of an integer tensor (signed or unsigned) as int64 (clamped: a length that large is
 * out of range anyway). */
static int64_t int_at(const void *p, DLDataType t, size_t k) {
    val v = tether__interp_load(p, t, k);
    return v.c == TETHER__DC_UINT ? (v.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v.u) : v.i;
}

static double act(int code, double al, double be, double v) {
    switch (code) {
    case TETHER__RNN_SIGMOID:
        return 1.0 / (1.0 + exp(-v));
    case TETHER__RNN_TANH:
        return tanh(v);
    case TETHER__RNN_RELU:
        return v > 0.0 ? v : 0.0;
    case TETHER__RNN_AFFINE:
        return al * v + be;
    case TETHER__RNN_LEAKY_RELU:
        return v >= 0.0 ? v : al * v;
    case TETHER__RNN_THRESHOLDED_RELU:
        return v > al ? v : 0.0;
    case TETHER__RNN_SCALED_TANH:
        return al * tanh(be * v);
    case TETHER__RNN_HARD_SIGMOID: {
        double t = al * v + be;
        return t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
    }
    case TETHER__RNN_ELU:
        return v >= 0.0 ? v : al * (exp(v) - 1.0);
    case TETHER__RNN_SOFTSIGN:
        return v / (1.0 + fabs(v));
    case TETHER__RNN_SOFTPLUS:
        return v > 0.0 ? v + log1p(exp(-v)) : log1p(exp(v));
    default:
        return v;
    }
}

/* Activation f of direction d on v, v clipped first when the node clips. */
static double fn(const tether__rnn_geo_t *r, int d, int f, double v) {
    if (r->has_clip) {
        v = v < -r->clip ? -r->clip : v > r->clip ? r->clip : v;
    }
    int k = d * r->funcs + f;
    return act(r->act[k], r->alpha[k], r->beta[k], v);
}

/* The per-direction operands of a recurrent node. */
typedef struct rnn_ops {
    const float *x, *w, *r, *bias, *h0, *c0, *p;
    const void *lens;
    DLDataType lens_t;
} rnn_ops;

/* One (direction, batch element) run over its sequence: hidden state h (and cell state c), the
 * gates' pre-activations in pre (G*H), the GRU's r*h products in rh (H). */
static void run_seq(const tether_ir_node *n, const tether__rnn_geo_t *r, const rnn_ops *o, int d,
                    int64_t b, int64_t len, double *h, double *c, double *pre, double *hn,
                    float *y) {
    int64_t B = r->B, I = r->I, H = r->H, G = r->gates, D = r->dirs;
    const float *w = o->w + d * G * H * I, *rw = o->r + d * G * H * H;
    const float *wb = o->bias ? o->bias + d * 2 * G * H : NULL;
    const float *p = o->p ? o->p + d * 3 * H : NULL;
    int rev = r->reverse || d == 1;
    for (int64_t s = 0; s < len; s++) {
        int64_t t = rev ? len - 1 - s : s;
        const float *xt = o->x + (t * B + b) * I;
        for (int64_t q = 0; q < G * H; q++) { /* W x + Wb (+ Rb, and R h but for gru's h gate) */
            double acc = wb ? (double)wb[q] : 0.0;
            for (int64_t i = 0; i < I; i++) {
                acc += (double)w[q * I + i] * xt[i];
            }
            bool gru_h = n->op == TETHER_OP_GRU && q >= 2 * H;
            if (!gru_h) {
                acc += wb ? (double)wb[G * H + q] : 0.0;
                for (int64_t k = 0; k < H; k++) {
                    acc += (double)rw[q * H + k] * h[k];
                }
            }
            pre[q] = acc;
        }
        if (n->op == TETHER_OP_RNN) {
            for (int64_t j = 0; j < H; j++) {
                hn[j] = fn(r, d, 0, pre[j]);
            }
        } else if (n->op == TETHER_OP_GRU) {
            for (int64_t k = 0; k < H; k++) { /* the reset gate of every unit (c is free) */
                c[k] = fn(r, d, 0, pre[H + k]);
            }
            for (int64_t j = 0; j < H; j++) {
                double z = fn(r, d, 0, pre[j]), rg = c[j];
                double rb = wb ? (double)wb[G * H + 2 * H + j] : 0.0, acc = 0.0;
                const float *row = rw + (2 * H + j) * H;
                if (r->flag) { /* linear_before_reset: r * (Rh h + Rbh) */
                    for (int64_t k = 0; k < H; k++) {
                        acc += (double)row[k] * h[k];
                    }
                    acc = rg * (acc + rb);
                } else { /* Rh (r * h) + Rbh, r of every unit */
                    for (int64_t k = 0; k < H; k++) {
                        acc += (double)row[k] * (c[k] * h[k]);
                    }
                    acc += rb;
                }
                double nv = fn(r, d, 1, pre[2 * H + j] + acc);
                hn[j] = (1.0 - z) * nv + z * h[j];
            }
        } else { /* lstm: i o f c */
            for (int64_t j = 0; j < H; j++) {
                double pi = p ? (double)p[j] : 0.0, po = p ? (double)p[H + j] : 0.0;
                double pf = p ? (double)p[2 * H + j] : 0.0;
                double ig = fn(r, d, 0, pre[j] + pi * c[j]);
                double fg = r->flag ? 1.0 - ig : fn(r, d, 0, pre[2 * H + j] + pf * c[j]);
                double cg = fn(r, d, 1, pre[3 * H + j]);
                double cn = fg * c[j] + ig * cg;
                double og = fn(r, d, 0, pre[H + j] + po * cn);
                c[j] = cn;
                hn[j] = og * fn(r, d, 2, cn);
            }
        }
        for (int64_t j = 0; j < H; j++) {
            h[j] = hn[j];
            y[((t * D + d) * B + b) * H + j] = (float)hn[j];
        }
    }
}

static int run_rnn(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    tether__rnn_geo_t r;
    int rc = tether__rnn_geo(g, n, &r);
    if (rc) {
        return rc;
    }
    rnn_ops o;
    memset(&o, 0, sizeof o);
    const float **ptr[8] = {&o.x, &o.w, &o.r, &o.bias, NULL, &o.h0, &o.c0, &o.p};
    for (int i = 0; i < n->ninputs; i++) {
        if (n->inputs[i] >= 0 && ptr[i]) {
            *ptr[i] = buf[n->inputs[i]];
        }
    }
    if (n->ninputs > 4 && n->inputs[4] >= 0) {
        o.lens = buf[n->inputs[4]];
        o.lens_t = g->tensors[n->inputs[4]].dtype;
    }
    int64_t T = r.T, B = r.B, H = r.H, D = r.dirs, G = r.gates;
    float *y = buf[n->outputs[0]];
    memset(y, 0, tether_ir_tensor_bytes(&g->tensors[n->outputs[0]]));
    double *st = calloc((size_t)(4 * H + G * H), sizeof *st);
    if (!st) {
        return tether__ir_node_error(n, TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    double *h = st, *c = st + H, *hn = st + 2 * H, *pre = st + 3 * H;
    for (int d = 0; d < D && !rc; d++) {
        for (int64_t b = 0; b < B && !rc; b++) {
            int64_t len = o.lens ? int_at(o.lens, o.lens_t, (size_t)b) : T;
            if (len < 0 || len > T) {
                rc = tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                           "sequence length %lld of batch element %lld is out "
                                           "of 0..%lld",
                                           (long long)len, (long long)b, (long long)T);
                break;
            }
            for (int64_t j = 0; j < H; j++) {
                h[j] = o.h0 ? (double)o.h0[(d * B + b) * H + j] : 0.0;
                c[j] = o.c0 ? (double)o.c0[(d * B + b) * H + j] : 0.0;
            }
            run_seq(n, &r, &o, d, b, len, h, c, pre, hn, y);
            for (int64_t j = 0; j < H; j++) {
                y[((T * D + d) * B + b) * H + j] = (float)h[j];
                if (n->op == TETHER_OP_LSTM) {
                    y[(((T + 1) * D + d) * B + b) * H + j] = (float)c[j];
                }
            }
        }
    }
    free(st);
    return rc;
}

static int run_reverse(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *x = &g->tensors[n->inputs[0]], *l = &g->tensors[n->inputs[1]];
    int ta = (int)n->attrs.axis, ba = (int)n->attrs.mode, nd = x->ndim;
    size_t es = tether_dtype_bytes(x->dtype), total = tether_ir_tensor_elements(x);
    int64_t st[TETHER_IR_MAX_NDIM], s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        st[d] = s;
        s *= x->shape[d];
    }
    int64_t T = x->shape[ta];
    for (int64_t b = 0; b < x->shape[ba]; b++) {
        int64_t len = int_at(buf[n->inputs[1]], l->dtype, (size_t)b);
        if (len < 0 || len > T) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "sequence length %lld of batch element %lld is out of "
                                         "0..%lld",
                                         (long long)len, (long long)b, (long long)T);
        }
    }
    const unsigned char *xp = buf[n->inputs[0]];
    unsigned char *y = buf[n->outputs[0]];
    for (size_t f = 0; f < total; f++) {
        int64_t t = ((int64_t)f / st[ta]) % T, b = ((int64_t)f / st[ba]) % x->shape[ba];
        int64_t len = int_at(buf[n->inputs[1]], l->dtype, (size_t)b);
        int64_t src = t < len ? (int64_t)f + (len - 1 - 2 * t) * st[ta] : (int64_t)f;
        memcpy(y + f * es, xp + (size_t)src * es, es);
    }
    return TETHER_OK;
}

int tether__interp_rnn(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    return n->op == TETHER_OP_REVERSE_SEQUENCE ? run_reverse(g, n, buf) : run_rnn(g, n, buf);
}
