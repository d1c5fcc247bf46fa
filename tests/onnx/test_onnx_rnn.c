/*
 * Part of test_onnx_import: ONNX RNN, GRU and LSTM with the attributes the node suite does not
 * reach (bidirectional and reverse directions, layout 1, sequence lengths shorter than T, clip,
 * the other activations with activation_alpha/_beta, input_forget, linear_before_reset, absent
 * outputs), imported and run by the interpreter, checked by value against loops written here
 * from the ONNX equations (in double, per gate, layout 0). The compiled C is checked against the
 * interpreter on the same attributes by test_compiler_ops (tests/compiler/op_cases_rnn.h).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model_builder.h"
#include "tether/compiler.h"
#include "tether/onnx.h"
#include "test_onnx_import.h"

#define F ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

enum { MAXT = 4, MAXB = 3, MAXI = 3, MAXH = 3 };

typedef struct rcase {
    const char *op; /* RNN, GRU, LSTM */
    int T, B, I, H;
    const char *direction;
    int layout, flag; /* flag: input_forget (LSTM) / linear_before_reset (GRU) */
    float clip;       /* 0: none */
    int nacts;        /* 0: the defaults */
    const char *acts[6];
    int nalpha, nbeta; /* the attribute lists */
    float alphas[6], betas[6];
    float al[6], be[6]; /* each activation's alpha and beta, resolved here by hand */
    int lens[MAXB];     /* 0 for every entry: no sequence_lens */
    int peep, init;     /* peepholes (LSTM); initial_h (and initial_c) */
    int outs;           /* bit i: output i is requested */
} rcase;

static double act(const char *name, double al, double be, double v) {
    if (!strcmp(name, "Sigmoid")) {
        return 1.0 / (1.0 + exp(-v));
    }
    if (!strcmp(name, "Tanh")) {
        return tanh(v);
    }
    if (!strcmp(name, "Relu")) {
        return v < 0.0 ? 0.0 : v;
    }
    if (!strcmp(name, "Affine")) {
        return al * v + be;
    }
    if (!strcmp(name, "LeakyRelu")) {
        return v < 0.0 ? al * v : v;
    }
    if (!strcmp(name, "ThresholdedRelu")) {
        return v > al ? v : 0.0;
    }
    if (!strcmp(name, "ScaledTanh")) {
        return al * tanh(be * v);
    }
    if (!strcmp(name, "HardSigmoid")) {
        return fmax(0.0, fmin(1.0, al * v + be));
    }
    if (!strcmp(name, "Elu")) {
        return v < 0.0 ? al * (exp(v) - 1.0) : v;
    }
    if (!strcmp(name, "Softsign")) {
        return v / (1.0 + fabs(v));
    }
    if (!strcmp(name, "Softplus")) {
        return log(1.0 + exp(v));
    }
    fail_msg("activation %s", name);
    return 0.0;
}

/* Activation f of direction d (clip first). */
static double fa(const rcase *c, int d, int f, double v) {
    static const char *const defs[3][3] = {
        {"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    int nf = c->op[0] == 'L' ? 3 : c->op[0] == 'G' ? 2 : 1, k = d * nf + f;
    if (c->clip > 0.0f) {
        v = fmax(-c->clip, fmin(c->clip, v));
    }
    if (!c->nacts) {
        return act(defs[nf - 1][f], 0.0, 0.0, v);
    }
    return act(c->acts[k], c->al[k], c->be[k], v);
}

/* The operands (layout 0) and the reference outputs. */
typedef struct rdata {
    float x[MAXT * MAXB * MAXI], w[2 * 4 * MAXH * MAXI], r[2 * 4 * MAXH * MAXH];
    float bias[2 * 8 * MAXH], p[2 * 3 * MAXH], h0[2 * MAXB * MAXH], c0[2 * MAXB * MAXH];
    double y[MAXT * 2 * MAXB * MAXH], yh[2 * MAXB * MAXH], yc[2 * MAXB * MAXH];
} rdata;

static double dot(const float *w, const float *v, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        s += (double)w[i] * v[i];
    }
    return s;
}

static void reference(const rcase *c, rdata *o) {
    int D = strcmp(c->direction, "bidirectional") ? 1 : 2, T = c->T, B = c->B, I = c->I, H = c->H;
    int G = c->op[0] == 'L' ? 4 : c->op[0] == 'G' ? 3 : 1;
    memset(o->y, 0, sizeof o->y);
    for (int d = 0; d < D; d++) {
        int rev = d == 1 || !strcmp(c->direction, "reverse");
        for (int b = 0; b < B; b++) {
            float h[MAXH], cs[MAXH];
            for (int j = 0; j < H; j++) {
                h[j] = c->init ? o->h0[(d * B + b) * H + j] : 0.0f;
                cs[j] = c->init ? o->c0[(d * B + b) * H + j] : 0.0f;
            }
            int len = c->lens[0] ? c->lens[b] : T;
            for (int s = 0; s < len; s++) {
                int t = rev ? len - 1 - s : s;
                const float *xt = o->x + (t * B + b) * I;
                double g[4][MAXH], hn[MAXH];
                const float *wb = o->bias + d * 2 * G * H, *rb = wb + G * H;
                for (int q = 0; q < G; q++) {
                    for (int j = 0; j < H; j++) {
                        int row = q * H + j;
                        g[q][j] = dot(o->w + (d * G * H + row) * I, xt, I) + wb[row];
                        if (!(G == 3 && q == 2)) {
                            g[q][j] += dot(o->r + (d * G * H + row) * H, h, H) + rb[row];
                        }
                    }
                }
                for (int j = 0; j < H; j++) {
                    if (G == 1) {
                        hn[j] = fa(c, d, 0, g[0][j]);
                    } else if (G == 3) {
                        double z = fa(c, d, 0, g[0][j]), rr[MAXH];
                        for (int k = 0; k < H; k++) {
                            rr[k] = fa(c, d, 0, g[1][k]);
                        }
                        const float *rh = o->r + (d * G * H + 2 * H + j) * H;
                        double lin = 0.0;
                        for (int k = 0; k < H; k++) {
                            lin += (double)rh[k] * (c->flag ? (double)h[k] : rr[k] * h[k]);
                        }
                        double n = c->flag ? fa(c, d, 1, g[2][j] + rr[j] * (lin + rb[2 * H + j]))
                                           : fa(c, d, 1, g[2][j] + lin + rb[2 * H + j]);
                        hn[j] = (1.0 - z) * n + z * h[j];
                    } else {
                        const float *p = o->p + d * 3 * H;
                        double pi = c->peep ? p[j] : 0.0, po = c->peep ? p[H + j] : 0.0;
                        double pf = c->peep ? p[2 * H + j] : 0.0;
                        double i = fa(c, d, 0, g[0][j] + pi * cs[j]);
                        double f = c->flag ? 1.0 - i : fa(c, d, 0, g[2][j] + pf * cs[j]);
                        double cc = f * cs[j] + i * fa(c, d, 1, g[3][j]);
                        double ot = fa(c, d, 0, g[1][j] + po * cc);
                        hn[j] = ot * fa(c, d, 2, cc);
                        cs[j] = (float)cc;
                    }
                }
                for (int j = 0; j < H; j++) {
                    h[j] = (float)hn[j];
                    o->y[((t * D + d) * B + b) * H + j] = hn[j];
                }
            }
            for (int j = 0; j < H; j++) {
                o->yh[(d * B + b) * H + j] = h[j];
                o->yc[(d * B + b) * H + j] = cs[j];
            }
        }
    }
}

static void fill(float *v, int n, int seed, float scale) {
    for (int i = 0; i < n; i++) {
        v[i] = scale * ((float)(((i + seed) * 37 + seed * 11) % 23) / 11.0f - 1.0f);
    }
}

static void check(const float *got, const double *want, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        if (fabs((double)got[i] - want[i]) > 1e-5 + 1e-4 * fabs(want[i])) {
            fail_msg("%s element %zu: %.7g vs %.7g", what, i, (double)got[i], want[i]);
        }
    }
}

static void run_case(const rcase *c) {
    int D = strcmp(c->direction, "bidirectional") ? 1 : 2, T = c->T, B = c->B, I = c->I, H = c->H;
    int G = c->op[0] == 'L' ? 4 : c->op[0] == 'G' ? 3 : 1;
    rdata *o = calloc(1, sizeof *o);
    fill(o->x, T * B * I, 1, 1.0f);
    fill(o->w, D * G * H * I, 2, 0.6f);
    fill(o->r, D * G * H * H, 3, 0.5f);
    fill(o->bias, D * 2 * G * H, 4, 0.3f);
    fill(o->p, D * 3 * H, 5, 0.4f);
    fill(o->h0, D * B * H, 6, 0.5f);
    fill(o->c0, D * B * H, 7, 0.5f);
    reference(c, o);
    mb b;
    mb_init(&b, 14);
    /* the model's operands in its layout (1: batch first) */
    float xin[MAXT * MAXB * MAXI], h0in[2 * MAXB * MAXH], c0in[2 * MAXB * MAXH];
    for (int t = 0; t < T; t++) {
        for (int bb = 0; bb < B; bb++) {
            for (int i = 0; i < I; i++) {
                xin[c->layout ? (bb * T + t) * I + i : (t * B + bb) * I + i] =
                    o->x[(t * B + bb) * I + i];
            }
        }
    }
    for (int d = 0; d < D; d++) {
        for (int bb = 0; bb < B; bb++) {
            for (int j = 0; j < H; j++) {
                int k = c->layout ? (bb * D + d) * H + j : (d * B + bb) * H + j;
                h0in[k] = o->h0[(d * B + bb) * H + j];
                c0in[k] = o->c0[(d * B + bb) * H + j];
            }
        }
    }
    int64_t xs[3] = {c->layout ? B : T, c->layout ? T : B, I}, ws[3] = {D, G * H, I};
    int64_t rs[3] = {D, G * H, H}, bs[2] = {D, 2 * G * H}, ls[1] = {B}, ps[2] = {D, 3 * H};
    int64_t hs[3] = {c->layout ? B : D, c->layout ? D : B, H};
    int64_t lens[MAXB];
    for (int i = 0; i < B; i++) {
        lens[i] = c->lens[i];
    }
    mb_input(&b, "x", F, 3, xs);
    mb_init_tensor(&b, mb_tensor_f(&b, "W", 3, ws, o->w, 1));
    mb_init_tensor(&b, mb_tensor_f(&b, "R", 3, rs, o->r, 0));
    mb_init_tensor(&b, mb_tensor_f(&b, "B", 2, bs, o->bias, 1));
    mb_init_tensor(&b, mb_tensor_f(&b, "P", 2, ps, o->p, 1));
    mb_init_tensor(&b, mb_tensor_f(&b, "h0", 3, hs, h0in, 1));
    mb_init_tensor(&b, mb_tensor_f(&b, "c0", 3, hs, c0in, 1));
    if (c->lens[0]) {
        mb_init_tensor(&b, mb_tensor_i64(&b, "lens", 1, ls, lens));
    }
    char ins[128], outs[64];
    snprintf(ins, sizeof ins, "x,W,R,B,%s,%s%s%s", c->lens[0] ? "lens" : "", c->init ? "h0" : "",
             c->op[0] == 'L' ? (c->init ? ",c0" : ",") : "",
             c->op[0] == 'L' && c->peep ? ",P" : "");
    snprintf(outs, sizeof outs, "%s,%s%s", c->outs & 1 ? "Y" : "", c->outs & 2 ? "Y_h" : "",
             c->op[0] == 'L' ? (c->outs & 4 ? ",Y_c" : ",") : "");
    Onnx__NodeProto *n = mb_node(&b, c->op, "rnn", ins, outs);
    mb_attr_i(&b, n, "hidden_size", H);
    mb_attr_s(&b, n, "direction", c->direction);
    mb_attr_i(&b, n, "layout", c->layout);
    if (c->flag) {
        mb_attr_i(&b, n, c->op[0] == 'L' ? "input_forget" : "linear_before_reset", 1);
    }
    if (c->clip > 0.0f) {
        mb_attr_f(&b, n, "clip", c->clip);
    }
    if (c->nacts) {
        mb_attr_strs(&b, n, "activations", c->nacts, c->acts);
    }
    if (c->nalpha) {
        mb_attr_floats(&b, n, "activation_alpha", c->nalpha, c->alphas);
    }
    if (c->nbeta) {
        mb_attr_floats(&b, n, "activation_beta", c->nbeta, c->betas);
    }
    static const char *const names[3] = {"Y", "Y_h", "Y_c"};
    for (int i = 0; i < 3; i++) {
        if (c->outs & (1 << i)) {
            mb_output(&b, names[i], F);
        }
    }
    tether_ir_graph g;
    if (load(&b, NULL, &g) || tether_ir_infer(&g)) {
        fail_msg("%s: %s", c->op, tether_last_error());
    }
    float *out[3] = {NULL, NULL, NULL}, *got[3] = {NULL, NULL, NULL};
    int no = 0;
    for (int i = 0; i < 3; i++) {
        if (c->outs & (1 << i)) {
            got[i] = out[no++] = calloc((size_t)(T * D * B * H), sizeof(float));
        }
    }
    const float *in[1] = {xin};
    assert_int_equal(g.noutputs, no);
    if (tether_interp_run(&g, in, out)) {
        fail_msg("%s: %s", c->op, tether_last_error());
    }
    /* the reference in the model's layout */
    double want[MAXT * 2 * MAXB * MAXH];
    if (got[0]) {
        for (int t = 0; t < T; t++) {
            for (int d = 0; d < D; d++) {
                for (int bb = 0; bb < B; bb++) {
                    for (int j = 0; j < H; j++) {
                        int k = c->layout ? ((bb * T + t) * D + d) * H + j
                                          : ((t * D + d) * B + bb) * H + j;
                        want[k] = o->y[((t * D + d) * B + bb) * H + j];
                    }
                }
            }
        }
        check(got[0], want, (size_t)(T * D * B * H), "Y");
    }
    for (int s = 1; s < 3; s++) {
        if (!got[s]) {
            continue;
        }
        for (int d = 0; d < D; d++) {
            for (int bb = 0; bb < B; bb++) {
                for (int j = 0; j < H; j++) {
                    int k = c->layout ? (bb * D + d) * H + j : (d * B + bb) * H + j;
                    want[k] = (s == 1 ? o->yh : o->yc)[(d * B + bb) * H + j];
                }
            }
        }
        check(got[s], want, (size_t)(D * B * H), names[s]);
    }
    for (int i = 0; i < 3; i++) {
        free(got[i]);
    }
    tether_ir_close(&g);
    mb_free(&b);
    free(o);
}

void test_onnx_rnn(void **state) {
    (void)state;
    static const rcase cases[] = {
        /* RNN bidirectional, batch first, lengths shorter than T, Relu / LeakyRelu(0.3) */
        {.op = "RNN",
         .T = 4,
         .B = 2,
         .I = 3,
         .H = 3,
         .direction = "bidirectional",
         .layout = 1,
         .nacts = 2,
         .acts = {"Relu", "LeakyRelu"},
         .nalpha = 1,
         .alphas = {0.3f},
         .al = {0.0f, 0.3f},
         .lens = {3, 1},
         .init = 1,
         .outs = 3},
        /* GRU reverse, linear_before_reset, clip, HardSigmoid(0.25, 0.45) / Softsign, lengths,
         * only Y_h */
        {.op = "GRU",
         .T = 4,
         .B = 3,
         .I = 2,
         .H = 3,
         .direction = "reverse",
         .flag = 1,
         .clip = 0.5f,
         .nacts = 2,
         .acts = {"HardSigmoid", "Softsign"},
         .nalpha = 1,
         .alphas = {0.25f},
         .nbeta = 1,
         .betas = {0.45f},
         .al = {0.25f},
         .be = {0.45f},
         .lens = {2, 4, 3},
         .init = 1,
         .outs = 2},
        /* GRU bidirectional, linear_before_reset 0, Affine / Elu with their defaults */
        {.op = "GRU",
         .T = 3,
         .B = 2,
         .I = 3,
         .H = 2,
         .direction = "bidirectional",
         .nacts = 4,
         .acts = {"Sigmoid", "Tanh", "Affine", "Elu"},
         .al = {0.0f, 0.0f, 1.0f, 1.0f},
         .be = {0.0f},
         .outs = 3},
        /* LSTM bidirectional, peepholes, initial states, lengths, clip, six activations
         * consuming four alphas and two betas */
        {.op = "LSTM",
         .T = 3,
         .B = 2,
         .I = 2,
         .H = 3,
         .direction = "bidirectional",
         .clip = 1.5f,
         .nacts = 6,
         .acts = {"Sigmoid", "ScaledTanh", "Elu", "HardSigmoid", "Softplus", "ThresholdedRelu"},
         .nalpha = 4,
         .alphas = {0.9f, 0.7f, 0.3f, 0.1f},
         .nbeta = 2,
         .betas = {1.1f, 0.6f},
         .al = {0.0f, 0.9f, 0.7f, 0.3f, 0.0f, 0.1f},
         .be = {0.0f, 1.1f, 0.0f, 0.6f},
         .lens = {3, 2},
         .peep = 1,
         .init = 1,
         .outs = 7},
        /* LSTM reverse, batch first, input_forget, only Y_c */
        {.op = "LSTM",
         .T = 4,
         .B = 2,
         .I = 3,
         .H = 2,
         .direction = "reverse",
         .layout = 1,
         .flag = 1,
         .init = 1,
         .outs = 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        run_case(&cases[i]);
    }
    /* refusals name the node and the attribute */
    mb b;
    int64_t xs[3] = {2, 1, 2}, ws[3] = {1, 2, 2}, rs[3] = {1, 2, 2};
    float w[4] = {0};
    const char *bad[1] = {"Swish"};
    for (int k = 0; k < 3; k++) {
        mb_init(&b, 14);
        mb_input(&b, "x", F, 3, xs);
        mb_init_tensor(&b, mb_tensor_f(&b, "W", 3, ws, w, 1));
        mb_init_tensor(&b, mb_tensor_f(&b, "R", 3, rs, w, 1));
        Onnx__NodeProto *n = mb_node(&b, "RNN", "rnn", "x,W,R", ",Y_h");
        mb_output(&b, "Y_h", F);
        if (k == 0) {
            mb_attr_strs(&b, n, "activations", 1, bad);
            expect_error(&b, TETHER_ERR_UNSUPPORTED, "node 'rnn' (RNN): activation 'Swish'");
        } else if (k == 1) {
            mb_attr_s(&b, n, "direction", "sideways");
            expect_error(&b, TETHER_ERR_INVALID_ARG, "direction 'sideways'");
        } else {
            mb_attr_i(&b, n, "hidden_size", 3);
            expect_error(&b, TETHER_ERR_INVALID_ARG, "hidden_size 3 differs from R's");
        }
        mb_free(&b);
    }
}
