/*
 * Part of test_onnx_import: the window layers the ONNX node suite does not reach, checked by
 * value against loops written here from the ONNX operator definitions: a 1-D Conv (strides,
 * dilations, pads, groups, bias; imported as the 2-D conv on [N,C,1,L]) and a 1-D Conv with
 * SAME_UPPER, LpPool (p 2 and 3, padded) and GlobalLpPool.
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

static void close_to(const float *got, const double *want, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (fabs((double)got[i] - want[i]) > 1e-5 + 1e-4 * fabs(want[i])) {
            fail_msg("element %zu: %.7g vs %.7g", i, (double)got[i], want[i]);
        }
    }
}

/* x [2, 4, 11], W [6, 2, 3] (group 2), bias; strides 2, dilations 2, pads [1, 2]. */
static void test_conv1d(void **state) {
    (void)state;
    enum { N = 2, C = 4, L = 11, O = 6, G = 2, K = 3, S = 2, D = 2, P0 = 1, P1 = 2 };
    enum { OL = (L + P0 + P1 - (K - 1) * D - 1) / S + 1 };
    float x[N * C * L], w[O * (C / G) * K], bias[O], y[N * O * OL];
    double want[N * O * OL];
    for (int i = 0; i < N * C * L; i++) {
        x[i] = (float)((i * 7) % 13) / 6.0f - 1.0f;
    }
    for (int i = 0; i < O * (C / G) * K; i++) {
        w[i] = (float)((i * 5) % 11) / 5.0f - 1.0f;
    }
    for (int i = 0; i < O; i++) {
        bias[i] = 0.25f * (float)i - 0.5f;
    }
    for (int n = 0; n < N; n++) {
        for (int o = 0; o < O; o++) {
            int g = o / (O / G);
            for (int ol = 0; ol < OL; ol++) {
                double acc = bias[o];
                for (int ic = 0; ic < C / G; ic++) {
                    for (int k = 0; k < K; k++) {
                        int il = ol * S - P0 + k * D;
                        if (il >= 0 && il < L) {
                            acc += (double)x[(n * C + g * (C / G) + ic) * L + il] *
                                   w[(o * (C / G) + ic) * K + k];
                        }
                    }
                }
                want[(n * O + o) * OL + ol] = acc;
            }
        }
    }
    mb b;
    mb_init(&b, 13);
    int64_t xs[3] = {N, C, L}, ws[3] = {O, C / G, K}, bs[1] = {O};
    int64_t st[1] = {S}, dl[1] = {D}, pd[2] = {P0, P1};
    mb_input(&b, "x", F, 3, xs);
    mb_init_tensor(&b, mb_tensor_f(&b, "W", 3, ws, w, 1));
    mb_init_tensor(&b, mb_tensor_f(&b, "B", 1, bs, bias, 1));
    Onnx__NodeProto *cv = mb_node(&b, "Conv", "conv", "x,W,B", "y");
    mb_attr_ints(&b, cv, "strides", 1, st);
    mb_attr_ints(&b, cv, "dilations", 1, dl);
    mb_attr_ints(&b, cv, "pads", 2, pd);
    mb_attr_i(&b, cv, "group", G);
    mb_output(&b, "y", F);
    tether_ir_graph g;
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    const tether_ir_tensor *yt = &g.tensors[g.outputs[0]];
    assert_int_equal(yt->ndim, 3);
    assert_int_equal(yt->shape[2], OL);
    int convs = 0;
    for (int i = 0; i < g.nnodes; i++) {
        convs += g.nodes[i].op == TETHER_OP_CONV2D; /* the 2-D kernel runs it */
    }
    assert_int_equal(convs, 1);
    run1(&g, x, y);
    close_to(y, want, N * O * OL);
    tether_ir_close(&g);
    mb_free(&b);

    /* SAME_UPPER, stride 1: the output keeps L; pads (K-1)/2 begin, the rest at the end */
    mb_init(&b, 13);
    int64_t ws1[3] = {1, 1, 4};
    float w1[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    int64_t xs1[3] = {1, 1, 5};
    float x1[5] = {1, 2, 3, 4, 5}, y1[5];
    mb_input(&b, "x", F, 3, xs1);
    mb_init_tensor(&b, mb_tensor_f(&b, "W", 3, ws1, w1, 1));
    cv = mb_node(&b, "Conv", "conv", "x,W", "y");
    mb_attr_s(&b, cv, "auto_pad", "SAME_UPPER");
    mb_output(&b, "y", F);
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    run1(&g, x1, y1);
    /* total pad 3: 1 before, 2 after; y[i] = sum_k x[i - 1 + k] * w[k] */
    const double want1[5] = {1 * 2 + 2 * 3 + 3 * 4, 1 * 1 + 2 * 2 + 3 * 3 + 4 * 4,
                             2 * 1 + 3 * 2 + 4 * 3 + 5 * 4, 3 * 1 + 4 * 2 + 5 * 3, 4 * 1 + 5 * 2};
    close_to(y1, want1, 5);
    tether_ir_close(&g);
    mb_free(&b);
}

/* LpPool 2-D (p 3, kernel 2x3, strides 1x2, pads 1 on every side) and GlobalLpPool (p 2). */
static void test_lp_pool(void **state) {
    (void)state;
    enum { H = 4, W = 5, KH = 2, KW = 3, SH = 1, SW = 2, P = 1 };
    enum { OH = (H + 2 * P - KH) / SH + 1, OW = (W + 2 * P - KW) / SW + 1 };
    float x[H * W], y[OH * OW], yg[1];
    double want[OH * OW];
    for (int i = 0; i < H * W; i++) {
        x[i] = (float)((i * 3) % 7) - 3.0f;
    }
    for (int oh = 0; oh < OH; oh++) {
        for (int ow = 0; ow < OW; ow++) {
            double s = 0;
            for (int kh = 0; kh < KH; kh++) {
                for (int kw = 0; kw < KW; kw++) {
                    int ih = oh * SH - P + kh, iw = ow * SW - P + kw;
                    if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
                        s += pow(fabs(x[ih * W + iw]), 3);
                    }
                }
            }
            want[oh * OW + ow] = pow(s, 1.0 / 3.0);
        }
    }
    mb b;
    mb_init(&b, 13);
    int64_t xs[4] = {1, 1, H, W}, ks[2] = {KH, KW}, st[2] = {SH, SW}, pd[4] = {P, P, P, P};
    mb_input(&b, "x", F, 4, xs);
    Onnx__NodeProto *lp = mb_node(&b, "LpPool", "lp", "x", "y");
    mb_attr_ints(&b, lp, "kernel_shape", 2, ks);
    mb_attr_ints(&b, lp, "strides", 2, st);
    mb_attr_ints(&b, lp, "pads", 4, pd);
    mb_attr_i(&b, lp, "p", 3);
    mb_output(&b, "y", F);
    tether_ir_graph g;
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    run1(&g, x, y);
    close_to(y, want, OH * OW);
    tether_ir_close(&g);
    mb_free(&b);

    mb_init(&b, 13);
    mb_input(&b, "x", F, 4, xs);
    mb_node(&b, "GlobalLpPool", "glp", "x", "y");
    mb_output(&b, "y", F);
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    run1(&g, x, yg);
    double s = 0;
    for (int i = 0; i < H * W; i++) {
        s += (double)x[i] * x[i];
    }
    const double wg[1] = {sqrt(s)};
    close_to(yg, wg, 1);
    tether_ir_close(&g);
    mb_free(&b);
}

void test_onnx_layers(void **state) {
    test_conv1d(state);
    test_lp_pool(state);
}
