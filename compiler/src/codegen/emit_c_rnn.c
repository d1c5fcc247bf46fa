/*
 * The C kernels of the recurrent layers (rnn, gru, lstm) and reverse_sequence (DATA rows of
 * ops.def). A recurrent kernel runs the time loop as a loop (one copy of the cell's code per
 * direction, each with its activations and direction as constants), the gate products as plain
 * loops over the weights in float32, and keeps its state in its own output: row T (the hidden
 * state, Y_h when it is done), row T+1 (lstm's cell state; gru's working row, cleared at the
 * end). No stack arrays (MCU targets), no 64-bit division.
 *
 * What must stay true: the same equations as interp/interp_rnn.c (gate orders lstm i o f c, gru
 * z r h; clip on every pre-activation); a sequence length outside 0..T returns -1
 * (TETHER_ERR_INVALID_ARG) before any step reads x; the math functions used are recorded in
 * math_used.
 */
#include <stdio.h>
#include <string.h>

#include "emit_c_internal.h"

/* Returns -1 when an entry of the lengths lens (tensor l, B entries) is outside 0..T (an
 * unsigned type is compared with T only: gcc's -Wtype-limits). */
static void lens_check(em *e, const tether_ir_tensor *l, const char *lens, long long B,
                       long long T) {
    loop(e, "b", B);
    if (tether__dtype_class(l->dtype) == TETHER__DC_UINT) {
        line(e, "if ((unsigned long long)%s[b] > %lluULL) {", lens, (unsigned long long)T);
    } else {
        line(e, "if ((long long)%s[b] < 0 || (long long)%s[b] > %lldLL) {", lens, lens, T);
    }
    line(e, "    return -1; /* TETHER_ERR_INVALID_ARG: a sequence length out of 0..T */");
    line(e, "}");
    close_block(e);
}

/* Activation k of r on the float variable v, as a C expression. */
static void act_text(em *e, const tether__rnn_geo_t *r, int k, char *out, size_t n) {
    char a[48], b[48];
    flit(a, sizeof a, r->alpha[k]);
    flit(b, sizeof b, r->beta[k]);
    switch (r->act[k]) {
    case TETHER__RNN_SIGMOID:
        e->math_used[M_EXPF] = 1;
        snprintf(out, n, "1.0f / (1.0f + expf(-v))");
        break;
    case TETHER__RNN_TANH:
        e->math_used[M_TANHF] = 1;
        snprintf(out, n, "tanhf(v)");
        break;
    case TETHER__RNN_RELU:
        snprintf(out, n, "v > 0.0f ? v : 0.0f");
        break;
    case TETHER__RNN_AFFINE:
        snprintf(out, n, "%s * v + %s", a, b);
        break;
    case TETHER__RNN_LEAKY_RELU:
        snprintf(out, n, "v >= 0.0f ? v : %s * v", a);
        break;
    case TETHER__RNN_THRESHOLDED_RELU:
        snprintf(out, n, "v > %s ? v : 0.0f", a);
        break;
    case TETHER__RNN_SCALED_TANH:
        e->math_used[M_TANHF] = 1;
        snprintf(out, n, "%s * tanhf(%s * v)", a, b);
        break;
    case TETHER__RNN_HARD_SIGMOID:
        snprintf(out, n, "%s * v + %s < 0.0f ? 0.0f : (%s * v + %s > 1.0f ? 1.0f : %s * v + %s)", a,
                 b, a, b, a, b);
        break;
    case TETHER__RNN_ELU:
        e->math_used[M_EXPF] = 1;
        snprintf(out, n, "v >= 0.0f ? v : %s * (expf(v) - 1.0f)", a);
        break;
    case TETHER__RNN_SOFTSIGN:
        snprintf(out, n, "v / (1.0f + (v < 0.0f ? -v : v))");
        break;
    case TETHER__RNN_SOFTPLUS:
        e->math_used[M_EXPF] = 1;
        e->math_used[M_LOGF] = 1;
        snprintf(out, n, "v > 0.0f ? v + logf(1.0f + expf(-v)) : logf(1.0f + expf(v))");
        break;
    default:
        snprintf(out, n, "v");
        break;
    }
}

/* `dst = act(pre);` in a block: v = pre, clipped when the node clips. */
static void apply(em *e, const tether__rnn_geo_t *r, int d, int f, const char *dst,
                  const char *pre) {
    char ex[400], c[48], mc[48];
    act_text(e, r, d * r->funcs + f, ex, sizeof ex);
    line(e, "{");
    e->depth++;
    line(e, "float v = %s;", pre);
    if (r->has_clip) {
        flit(c, sizeof c, r->clip);
        flit(mc, sizeof mc, -r->clip);
        line(e, "v = v < %s ? %s : (v > %s ? %s : v);", mc, mc, c, c);
    }
    line(e, "%s = %s;", dst, ex);
    close_block(e);
}

/* `float a<g> = bias; a<g> += W[g] . x_t (+ R[g] . h)` for gates g in [g0, g1) of unit j. */
static void gate_sums(em *e, const tether_ir_node *nd, const kargs *k, const tether__rnn_geo_t *r,
                      int d, int g0, int g1, int with_r) {
    long long H = r->H, I = r->I, G = r->gates;
    for (int g = g0; g < g1; g++) {
        if (k->in[3]) {
            if (with_r) {
                line(e, "float a%d = %s[%lldLL + j] + %s[%lldLL + j];", g, k->in[3],
                     (long long)(d * 2 * G * H + g * H), k->in[3],
                     (long long)(d * 2 * G * H + G * H + g * H));
            } else {
                line(e, "float a%d = %s[%lldLL + j];", g, k->in[3],
                     (long long)(d * 2 * G * H + g * H));
            }
        } else {
            line(e, "float a%d = 0.0f;", g);
        }
    }
    loop(e, "i", I);
    for (int g = g0; g < g1; g++) {
        line(e, "a%d += %s[(%lldLL + j) * %lldLL + i] * xt[i];", g, k->in[1],
             (long long)(d * G * H + g * H), I);
    }
    close_block(e);
    if (with_r) {
        loop(e, "q", H);
        for (int g = g0; g < g1; g++) {
            line(e, "a%d += %s[(%lldLL + j) * %lldLL + q] * hs[q];", g, k->in[2],
                 (long long)(d * G * H + g * H), H);
        }
        close_block(e);
    }
    (void)nd;
}

static void cell_lstm(em *e, const tether_ir_node *nd, const kargs *k, const tether__rnn_geo_t *r,
                      int d) {
    long long H = r->H;
    const char *p = nd->ninputs > 7 ? k->in[7] : NULL;
    char pi[96] = "0.0f", po[96] = "0.0f", pf[96] = "0.0f";
    if (p) {
        snprintf(pi, sizeof pi, "%s[%lldLL + j]", p, (long long)(d * 3 * H));
        snprintf(po, sizeof po, "%s[%lldLL + j]", p, (long long)(d * 3 * H + H));
        snprintf(pf, sizeof pf, "%s[%lldLL + j]", p, (long long)(d * 3 * H + 2 * H));
    }
    loop(e, "j", H);
    gate_sums(e, nd, k, r, d, 0, 4, 1);
    line(e, "float c0 = cs[j], ig, fg, cg, og;");
    char pre[200];
    snprintf(pre, sizeof pre, "a0 + %s * c0", pi);
    apply(e, r, d, 0, "ig", pre);
    if (r->flag) {
        line(e, "fg = 1.0f - ig;");
    } else {
        snprintf(pre, sizeof pre, "a2 + %s * c0", pf);
        apply(e, r, d, 0, "fg", pre);
    }
    apply(e, r, d, 1, "cg", "a3");
    line(e, "float cn = fg * c0 + ig * cg;");
    snprintf(pre, sizeof pre, "a1 + %s * cn", po);
    apply(e, r, d, 0, "og", pre);
    line(e, "float hc;");
    apply(e, r, d, 2, "hc", "cn");
    line(e, "cs[j] = cn;");
    line(e, "yt[j] = og * hc;");
    close_block(e);
    loop(e, "j", H);
    line(e, "hs[j] = yt[j];");
    close_block(e);
}

static void cell_gru(em *e, const tether_ir_node *nd, const kargs *k, const tether__rnn_geo_t *r,
                     int d) {
    long long H = r->H, G = 3;
    /* pass 1: z into the working row ws, r (or r * h) into yt */
    loop(e, "j", H);
    gate_sums(e, nd, k, r, d, 0, 2, 1);
    apply(e, r, d, 0, "ws[j]", "a0");
    apply(e, r, d, 0, "yt[j]", "a1");
    if (!r->flag) {
        line(e, "yt[j] *= hs[j];");
    }
    close_block(e);
    /* pass 2: the new gate and the new state into ws */
    loop(e, "j", H);
    gate_sums(e, nd, k, r, d, 2, 3, 0);
    if (k->in[3]) {
        line(e, "float rb = %s[%lldLL + j];", k->in[3], (long long)(d * 2 * G * H + G * H + 2 * H));
    } else {
        line(e, "float rb = 0.0f;");
    }
    line(e, "float acc = 0.0f, nv;");
    loop(e, "q", H);
    line(e, "acc += %s[(%lldLL + j) * %lldLL + q] * %s[q];", k->in[2],
         (long long)(d * G * H + 2 * H), H, r->flag ? "hs" : "yt");
    close_block(e);
    if (r->flag) {
        apply(e, r, d, 1, "nv", "a2 + yt[j] * (acc + rb)");
    } else {
        apply(e, r, d, 1, "nv", "a2 + acc + rb");
    }
    line(e, "ws[j] = (1.0f - ws[j]) * nv + ws[j] * hs[j];");
    close_block(e);
    loop(e, "j", H);
    line(e, "yt[j] = ws[j];");
    line(e, "hs[j] = ws[j];");
    close_block(e);
}

static void cell_rnn(em *e, const tether_ir_node *nd, const kargs *k, const tether__rnn_geo_t *r,
                     int d) {
    loop(e, "j", r->H);
    gate_sums(e, nd, k, r, d, 0, 1, 1);
    apply(e, r, d, 0, "yt[j]", "a0");
    close_block(e);
    loop(e, "j", r->H);
    line(e, "hs[j] = yt[j];");
    close_block(e);
}

static void k_recurrent(em *e, const tether_ir_node *nd, const kargs *k) {
    tether__rnn_geo_t r;
    if (tether__rnn_geo(e->g, nd, &r)) {
        line(e, "#error \"tether: a recurrent node that did not pass inference\"");
        return;
    }
    long long T = r.T, B = r.B, I = r.I, H = r.H, D = r.dirs;
    const char *lens = nd->ninputs > 4 ? k->in[4] : NULL;
    const char *h0 = nd->ninputs > 5 ? k->in[5] : NULL, *c0 = nd->ninputs > 6 ? k->in[6] : NULL;
    if (lens) {
        lens_check(e, &e->g->tensors[nd->inputs[4]], lens, B, T);
        line(e, "for (long long f = 0; f < %lldLL; ++f) {", T * D * B * H);
        line(e, "    %s[f] = 0.0f;", k->out);
        line(e, "}");
    }
    for (int d = 0; d < D; d++) {
        int rev = r.reverse || d == 1;
        line(e, "/* direction %d: %s */", d, rev ? "reverse" : "forward");
        loop(e, "b", B);
        line(e, "float *hs = %s + (%lldLL + (long long)b) * %lldLL;", k->out, (T * D + d) * B, H);
        if (nd->op != TETHER_OP_RNN) {
            line(e, "float *%s = %s + (%lldLL + (long long)b) * %lldLL;",
                 nd->op == TETHER_OP_LSTM ? "cs" : "ws", k->out, ((T + 1) * D + d) * B, H);
        }
        loop(e, "j", H);
        if (h0) {
            line(e, "hs[j] = %s[(%lldLL + (long long)b) * %lldLL + j];", h0, (long long)d * B, H);
        } else {
            line(e, "hs[j] = 0.0f;");
        }
        if (nd->op == TETHER_OP_LSTM) {
            if (c0) {
                line(e, "cs[j] = %s[(%lldLL + (long long)b) * %lldLL + j];", c0, (long long)d * B,
                     H);
            } else {
                line(e, "cs[j] = 0.0f;");
            }
        }
        close_block(e);
        if (lens) {
            line(e, "long long len = (long long)%s[b];", lens);
        } else {
            line(e, "long long len = %lldLL;", T);
        }
        line(e, "for (long long s = 0; s < len; ++s) {");
        e->depth++;
        line(e, "long long t = %s;", rev ? "len - 1 - s" : "s");
        line(e, "const float *xt = %s + (t * %lldLL + (long long)b) * %lldLL;", k->in[0], B, I);
        line(e, "float *yt = %s + ((t * %lldLL + %dLL) * %lldLL + (long long)b) * %lldLL;", k->out,
             D, d, B, H);
        if (nd->op == TETHER_OP_LSTM) {
            cell_lstm(e, nd, k, &r, d);
        } else if (nd->op == TETHER_OP_GRU) {
            cell_gru(e, nd, k, &r, d);
        } else {
            cell_rnn(e, nd, k, &r, d);
        }
        close_block(e);
        if (nd->op == TETHER_OP_GRU) {
            loop(e, "j", H);
            line(e, "ws[j] = 0.0f;");
            close_block(e);
        }
        close_block(e);
    }
}

static void k_reverse(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    int ta = (int)nd->attrs.axis, ba = (int)nd->attrs.mode, n = x->ndim;
    long long st[TETHER_IR_MAX_NDIM], s = 1;
    for (int d = n - 1; d >= 0; d--) {
        st[d] = s;
        s *= x->shape[d];
    }
    long long Tn = x->shape[ta], Bn = x->shape[ba];
    lens_check(e, T(e, nd->inputs[1]), k->in[1], Bn, Tn);
    /* every position as nested loops over the dimensions; time and batch by name */
    char v[16];
    for (int d = 0; d < n; d++) {
        snprintf(v, sizeof v, "i%d", d);
        loop(e, v, x->shape[d]);
    }
    size_t len = 0;
    char f[400];
    len += (size_t)snprintf(f + len, sizeof f - len, "(long long)0");
    for (int d = 0; d < n && len < sizeof f; d++) {
        len += (size_t)snprintf(f + len, sizeof f - len, " + (long long)i%d * %lldLL", d, st[d]);
    }
    line(e, "long long f = %s;", f);
    line(e, "long long l = (long long)%s[i%d];", k->in[1], ba);
    line(e, "long long src = i%d < l ? f + (l - 1 - 2 * (long long)i%d) * %lldLL : f;", ta, ta,
         st[ta]);
    line(e, "%s[f] = %s[src];", k->out, k->in[0]);
    for (int d = 0; d < n; d++) {
        close_block(e);
    }
}

void tether__c_rnn(em *e, const tether_ir_node *nd, const kargs *k) {
    if (nd->op == TETHER_OP_REVERSE_SEQUENCE) {
        k_reverse(e, nd, k);
    } else {
        k_recurrent(e, nd, k);
    }
}
