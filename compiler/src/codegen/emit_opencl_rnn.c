/*
 * The OpenCL backend's kernels of the recurrent layers (rnn, gru, lstm: directions, sequence
 * lengths, initial states, peepholes, clip, input_forget / linear_before_reset, every activation
 * of the C path) and reverse_sequence (issue 27), reached through emit_opencl_layers.c's
 * dispatch. A recurrent node is one persistent kernel: one work-group per (direction, batch
 * row), of up to 64 work-items each computing every L-th unit, runs the whole time loop with the
 * cell's code for its direction, the passes of a step separated by work-group barriers, keeping
 * its state in the node's own output rows as the C kernel does (row T: the hidden state, Y_h when
 * done; row T+1: lstm's cell state, gru's working row, cleared at the end). reverse_sequence is one
 * work-item per element.
 *
 * What must stay true: the equations, gate orders (lstm i o f c, gru z r h), the order of the
 * sums and the output layout are emit_c_rnn.c's, so results equal the C path's within rounding;
 * a work-group touches only its own (direction, batch) rows, a work-item writes only its units,
 * and every read of another unit's value follows a barrier after its write (trip counts and
 * barriers are uniform within a work-group: the length is its batch row's). A sequence length
 * outside 0..T (the C path's and the interpreter's run-time error; a kernel cannot report) is
 * clamped into 0..T, so nothing outside a tensor is read or written. Every access is `p[i]` on
 * in0.., y (no derived pointers), so --precision fp16 rewrites them.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/crt/dtype.h"

/* Input j's kernel name, or NULL when the node lacks it. */
static const char *opt_in(const tether_ir_node *n, int j) {
    return n->ninputs > j && n->inputs[j] >= 0 ? in_name(j) : NULL;
}

/* Activation k of r on the float variable v, as an OpenCL C expression. */
static void act_text(const tether__rnn_geo_t *r, int k, char *out, size_t n) {
    char a[48], b[48];
    flit(a, sizeof a, r->alpha[k]);
    flit(b, sizeof b, r->beta[k]);
    switch (r->act[k]) {
    case TETHER__RNN_SIGMOID:
        snprintf(out, n, "1.0f / (1.0f + exp(-v))");
        break;
    case TETHER__RNN_TANH:
        snprintf(out, n, "tanh(v)");
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
        snprintf(out, n, "%s * tanh(%s * v)", a, b);
        break;
    case TETHER__RNN_HARD_SIGMOID:
        snprintf(out, n, "%s * v + %s < 0.0f ? 0.0f : (%s * v + %s > 1.0f ? 1.0f : %s * v + %s)", a,
                 b, a, b, a, b);
        break;
    case TETHER__RNN_ELU:
        snprintf(out, n, "v >= 0.0f ? v : %s * (exp(v) - 1.0f)", a);
        break;
    case TETHER__RNN_SOFTSIGN:
        snprintf(out, n, "v / (1.0f + (v < 0.0f ? -v : v))");
        break;
    case TETHER__RNN_SOFTPLUS:
        snprintf(out, n, "v > 0.0f ? v + log(1.0f + exp(-v)) : log(1.0f + exp(v))");
        break;
    default:
        snprintf(out, n, "v");
        break;
    }
}

/* `dst = act(pre);` in a block: v = pre, clipped when the node clips. */
static void apply(ocl *e, const tether__rnn_geo_t *r, int d, int f, const char *dst,
                  const char *pre) {
    char ex[400], c[48], mc[48];
    act_text(r, d * r->funcs + f, ex, sizeof ex);
    open_scope(e);
    line(e, "float v = %s;", pre);
    if (r->has_clip) {
        flit(c, sizeof c, r->clip);
        flit(mc, sizeof mc, -r->clip);
        line(e, "v = v < %s ? %s : (v > %s ? %s : v);", mc, mc, c, c);
    }
    line(e, "%s = %s;", dst, ex);
    close_block(e);
}

static void loop(ocl *e, const char *v, long long n) {
    open_block(e, "for (int %s = 0; %s < %lld; ++%s)", v, v, n, v);
}

/* The work-group's units: j from the work-item's lane by the group's size. */
static void units(ocl *e, long long H) {
    open_block(e, "for (int j = lid; j < %lld; j += L)", H);
}

/* Every unit's writes of this pass visible to the group before the next pass reads them. */
static void sync(ocl *e) {
    line(e, "barrier(CLK_GLOBAL_MEM_FENCE);");
}

/* `float a<g> = bias; a<g> += W[g] . x_t (+ R[g] . h)` for gates g in [g0, g1) of unit j; x_t
 * is in0 from xb, h is y from hb. */
static void gate_sums(ocl *e, const tether_ir_node *n, const tether__rnn_geo_t *r, int d, int g0,
                      int g1, int with_r) {
    long long H = r->H, I = r->I, G = r->gates;
    const char *B = opt_in(n, 3);
    for (int g = g0; g < g1; g++) {
        if (B && with_r) {
            line(e, "float a%d = %s[%lld + j] + %s[%lld + j];", g, B, d * 2 * G * H + g * H, B,
                 d * 2 * G * H + G * H + g * H);
        } else if (B) {
            line(e, "float a%d = %s[%lld + j];", g, B, d * 2 * G * H + g * H);
        } else {
            line(e, "float a%d = 0.0f;", g);
        }
    }
    loop(e, "i", I);
    for (int g = g0; g < g1; g++) {
        line(e, "a%d += in1[(%lld + j) * %lld + i] * in0[xb + i];", g, d * G * H + g * H, I);
    }
    close_block(e);
    if (with_r) {
        loop(e, "q", H);
        for (int g = g0; g < g1; g++) {
            line(e, "a%d += in2[(%lld + j) * %lld + q] * y[hb + q];", g, d * G * H + g * H, H);
        }
        close_block(e);
    }
}

/* The cells: y[yb + j] is the output row of step t, y[hb + j] the hidden state, y[cb + j]
 * lstm's cell state or gru's working row. */
static void cell_lstm(ocl *e, const tether_ir_node *n, const tether__rnn_geo_t *r, int d) {
    long long H = r->H;
    const char *p = opt_in(n, 7);
    char pi[96] = "0.0f", po[96] = "0.0f", pf[96] = "0.0f", pre[200];
    if (p) {
        snprintf(pi, sizeof pi, "%s[%lld + j]", p, (long long)(d * 3 * H));
        snprintf(po, sizeof po, "%s[%lld + j]", p, (long long)(d * 3 * H + H));
        snprintf(pf, sizeof pf, "%s[%lld + j]", p, (long long)(d * 3 * H + 2 * H));
    }
    units(e, H);
    gate_sums(e, n, r, d, 0, 4, 1);
    line(e, "float c0 = y[cb + j], ig, fg, cg, og;");
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
    line(e, "y[cb + j] = cn;");
    line(e, "y[yb + j] = og * hc;");
    close_block(e);
    sync(e);
    units(e, H);
    line(e, "y[hb + j] = y[yb + j];");
    close_block(e);
    sync(e);
}

static void cell_gru(ocl *e, const tether_ir_node *n, const tether__rnn_geo_t *r, int d) {
    long long H = r->H, G = 3;
    const char *B = opt_in(n, 3);
    /* pass 1: z into the working row, r (or r * h) into the output row */
    units(e, H);
    gate_sums(e, n, r, d, 0, 2, 1);
    apply(e, r, d, 0, "y[cb + j]", "a0");
    apply(e, r, d, 0, "y[yb + j]", "a1");
    if (!r->flag) {
        line(e, "y[yb + j] = y[yb + j] * y[hb + j];");
    }
    close_block(e);
    sync(e);
    /* pass 2: the new gate and the new state into the working row */
    units(e, H);
    gate_sums(e, n, r, d, 2, 3, 0);
    if (B) {
        line(e, "float rb = %s[%lld + j];", B, d * 2 * G * H + G * H + 2 * H);
    } else {
        line(e, "float rb = 0.0f;");
    }
    line(e, "float acc = 0.0f, nv;");
    loop(e, "q", H);
    line(e, "acc += in2[(%lld + j) * %lld + q] * y[%s + q];", d * G * H + 2 * H, H,
         r->flag ? "hb" : "yb");
    close_block(e);
    if (r->flag) {
        apply(e, r, d, 1, "nv", "a2 + y[yb + j] * (acc + rb)");
    } else {
        apply(e, r, d, 1, "nv", "a2 + acc + rb");
    }
    line(e, "y[cb + j] = (1.0f - y[cb + j]) * nv + y[cb + j] * y[hb + j];");
    close_block(e);
    sync(e);
    units(e, H);
    line(e, "y[yb + j] = y[cb + j];");
    line(e, "y[hb + j] = y[cb + j];");
    close_block(e);
    sync(e);
}

static void cell_rnn(ocl *e, const tether_ir_node *n, const tether__rnn_geo_t *r, int d) {
    units(e, r->H);
    gate_sums(e, n, r, d, 0, 1, 1);
    apply(e, r, d, 0, "y[yb + j]", "a0");
    close_block(e);
    sync(e);
    units(e, r->H);
    line(e, "y[hb + j] = y[yb + j];");
    close_block(e);
    sync(e);
}

/* The work-group of a recurrent node: up to H units, within the device's work-group limit. */
static int64_t group_size(const ocl *e, const tether_ir_node *n) {
    tether__rnn_geo_t r;
    if (tether__rnn_geo(e->g, n, &r)) {
        return 1;
    }
    tether__ocl_limits lim;
    tether__ocl_limits_get(e->o, &lim);
    int64_t L = r.H < 64 ? r.H : 64;
    L = L < lim.max_work_group_size ? L : lim.max_work_group_size;
    return L > 0 ? L : 1;
}

/* Work-group g = d * B + b (direction d, batch row b) of L work-items, lane lid. */
static void k_recurrent(ocl *e, const tether_ir_node *n) {
    tether__rnn_geo_t r;
    if (tether__rnn_geo(e->g, n, &r)) {
        line(e, "#error \"tether: a recurrent node that did not pass inference\"");
        return;
    }
    long long T = r.T, B = r.B, I = r.I, H = r.H, D = r.dirs;
    const char *lens = opt_in(n, 4), *h0 = opt_in(n, 5), *c0 = opt_in(n, 6);
    line(e, "const int L = %lld, lid = f %% L, g = f / L;", (long long)group_size(e, n));
    line(e, "const int d = g / %lld, b = g %% %lld;", B, B);
    if (lens) {
        line(e, "long len = (long)%s[b];", lens);
        line(e, "len = len < 0 ? 0 : len > %lld ? %lld : len; /* 0..T (see the file's comment) */",
             T, T);
        /* steps past the length stay 0, as the C path's cleared output */
        open_block(e, "for (int t = (int)len; t < %lld; ++t)", T);
        units(e, H);
        line(e, "y[((t * %lld + d) * %lld + b) * %lld + j] = 0.0f;", D, B, H);
        close_block(e);
        close_block(e);
    } else {
        line(e, "const long len = %lld;", T);
    }
    line(e, "const int hb = ((%lld + d) * %lld + b) * %lld;", T * D, B, H);
    line(e, "const int cb = ((%lld + d) * %lld + b) * %lld;", (T + 1) * D, B, H);
    units(e, H);
    if (h0) {
        line(e, "y[hb + j] = %s[(d * %lld + b) * %lld + j];", h0, B, H);
    } else {
        line(e, "y[hb + j] = 0.0f;");
    }
    if (n->op == TETHER_OP_LSTM) {
        if (c0) {
            line(e, "y[cb + j] = %s[(d * %lld + b) * %lld + j];", c0, B, H);
        } else {
            line(e, "y[cb + j] = 0.0f;");
        }
    }
    close_block(e);
    sync(e);
    for (int d = 0; d < D; d++) {
        int rev = r.reverse || d == 1;
        open_block(e, "if (d == %d) /* %s */", d, rev ? "reverse" : "forward");
        open_block(e, "for (long s = 0; s < len; ++s)");
        line(e, "const int t = (int)(%s);", rev ? "len - 1 - s" : "s");
        line(e, "const int xb = (t * %lld + b) * %lld;", B, I);
        line(e, "const int yb = ((t * %lld + %d) * %lld + b) * %lld;", D, d, B, H);
        if (n->op == TETHER_OP_LSTM) {
            cell_lstm(e, n, &r, d);
        } else if (n->op == TETHER_OP_GRU) {
            cell_gru(e, n, &r, d);
        } else {
            cell_rnn(e, n, &r, d);
        }
        close_block(e);
        close_block(e);
    }
    if (n->op == TETHER_OP_GRU) {
        units(e, H);
        line(e, "y[cb + j] = 0.0f;");
        close_block(e);
    }
}

/* One work-item per element: positions before the row's length along the time axis read their
 * mirror. */
static void k_reverse(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    int ta = (int)n->attrs.axis, ba = (int)n->attrs.mode, nd = x->ndim;
    long long st[TETHER_IR_MAX_NDIM], s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        st[d] = s;
        s *= x->shape[d];
    }
    line(e, "const long it = ((long)f / %lld) %% %lld;", st[ta], (long long)x->shape[ta]);
    line(e, "const long ib = ((long)f / %lld) %% %lld;", st[ba], (long long)x->shape[ba]);
    line(e, "long l = (long)in1[ib];");
    line(e, "l = l < 0 ? 0 : l > %lld ? %lld : l; /* 0..T (see the file's comment) */",
         (long long)x->shape[ta], (long long)x->shape[ta]);
    line(e, "const long src = it < l ? f + (l - 1 - 2 * it) * %lld : f;", st[ta]);
    line(e, "y[f] = in0[src];");
}

int tether__ocl_rnn_op(tether_op op) {
    return op == TETHER_OP_RNN || op == TETHER_OP_GRU || op == TETHER_OP_LSTM ||
           op == TETHER_OP_REVERSE_SEQUENCE;
}

int64_t tether__ocl_rnn_items(const ocl *e, const tether_ir_node *n) {
    tether__rnn_geo_t r;
    if (n->op == TETHER_OP_REVERSE_SEQUENCE || tether__rnn_geo(e->g, n, &r)) {
        return (int64_t)tether_ir_tensor_elements(T(e, n->outputs[0]));
    }
    return r.dirs * r.B * group_size(e, n);
}

void tether__ocl_rnn_launch(const ocl *e, const tether_ir_node *n, step *s) {
    if (n->op == TETHER_OP_REVERSE_SEQUENCE) {
        return;
    }
    s->local = group_size(e, n);
    s->global = s->total; /* (directions x batch rows) work-groups of exactly that size */
    s->gpu = 2;           /* barriers: every work-item stays */
}

int64_t tether__ocl_rnn_serial(const ocl *e, const tether_ir_node *n) {
    tether__rnn_geo_t r;
    if (n->op == TETHER_OP_REVERSE_SEQUENCE || tether__rnn_geo(e->g, n, &r)) {
        return 1;
    }
    int64_t L = group_size(e, n);
    /* the time loop over a lane's units' sums */
    return r.T * ((r.H + L - 1) / L) * (r.I + r.H);
}

void tether__ocl_rnn_body(ocl *e, const tether_ir_node *n) {
    if (n->op == TETHER_OP_REVERSE_SEQUENCE) {
        k_reverse(e, n);
    } else {
        k_recurrent(e, n);
    }
}
