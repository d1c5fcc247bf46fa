/*
 * The residual int8 block in QDQ form that the integer elementwise and pooling operators are
 * tested on (docs/quantization.md "Integer elementwise and pooling operators"): conv -> relu ->
 * add with the skip -> relu, max_pool with a new scale, sigmoid, concat of differently scaled
 * inputs, mul, avg_pool with uncounted padding. Options: QB_BCAST adds a broadcasting add of a
 * per-channel int8 constant and a uint8 stage (a per-tensor scalar mul, a uint8 avg_pool with
 * ceil_mode, a leaky_relu); QB_INT_ENDS makes the graph input the int8 tensor x's quantize would
 * write and the output the int8 tensor before the last dequantize (no float at the ends).
 * Included by test_quant_elt.c and tests/opencl/test_opencl_quant.c (one test file each).
 *
 * What must stay true: with no option the graph is the one test_quant_elt's float-island
 * tolerance was measured on; the builder asserts (cmocka) on every IR call.
 */
#ifndef TT_QELT_BLOCK_H
#define TT_QELT_BLOCK_H

#include <stdint.h>
#include <stdio.h>

#include "tether/compiler.h"
#include "tether/crt/dtype.h"

enum { QB_BCAST = 1, QB_INT_ENDS = 2 };

static tether_ir_graph *qb_g;
static int qb_last_q; /* the output of the last quantize qb_qdq wrote */

static int qb_konst(const char *name, DLDataType t, const void *v, size_t bytes, int ndim,
                    const int64_t *shape) {
    int idx = -1;
    assert_int_equal(tether_ir_add_constant(qb_g, name, t, ndim, shape, v, bytes, &idx), 0);
    return idx;
}

static int qb_tensor(const char *name) {
    int idx = -1;
    assert_int_equal(tether_ir_add_tensor(qb_g, name, TETHER_FLOAT32, -1, NULL, &idx), 0);
    return idx;
}

static int qb_node(const char *name, tether_op op, const int *in, int nin,
                   const tether_ir_attrs *a) {
    char tn[64];
    snprintf(tn, sizeof tn, "%s_out", name);
    int out = qb_tensor(tn);
    assert_int_equal(tether_ir_add_node(qb_g, name, op, in, nin, &out, 1, a, NULL), 0);
    return out;
}

/* The scale s and zero point z (type t: int8 or uint8) constants of name. */
static void qb_params(const char *name, float s, int z, DLDataType t, int *cs, int *cz) {
    int64_t one = 1;
    char n1[64], n2[64];
    snprintf(n1, sizeof n1, "%s_s", name);
    snprintf(n2, sizeof n2, "%s_z", name);
    uint8_t zb = (uint8_t)(t.code == kDLInt ? (uint8_t)(int8_t)z : (uint8_t)z);
    *cs = qb_konst(n1, TETHER_FLOAT32, &s, 4, 1, &one);
    *cz = qb_konst(n2, t, &zb, 1, 1, &one);
}

/* Q(x) then DQ with scale s, zero point z of type t: the dequantized tensor. */
static int qb_qdq_t(const char *name, int x, float s, int z, DLDataType t) {
    int cs, cz;
    qb_params(name, s, z, t, &cs, &cz);
    char n3[64];
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_QUANTIZE, &a);
    a.to = t;
    snprintf(n3, sizeof n3, "%s_q", name);
    int q = qb_node(n3, TETHER_OP_QUANTIZE, (int[]){x, cs, cz}, 3, &a);
    qb_last_q = q;
    snprintf(n3, sizeof n3, "%s_dq", name);
    return qb_node(n3, TETHER_OP_DEQUANTIZE, (int[]){q, cs, cz}, 3, NULL);
}

static int qb_qdq(const char *name, int x, float s, int8_t z) {
    return qb_qdq_t(name, x, s, z, TETHER_INT8);
}

static void qb_build(tether_ir_graph *g, int opts) {
    qb_g = g;
    assert_int_equal(tether_ir_init(g, "qelt_block"), 0);
    int64_t sx[4] = {1, 4, 8, 8}, sw[4] = {4, 4, 3, 3}, s4 = 4, one = 1;
    int x, d0;
    if (opts & QB_INT_ENDS) {
        assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_INT8, 4, sx, &x), 0);
        assert_int_equal(tether_ir_add_input(g, x), 0);
        int cs, cz;
        qb_params("x", 0.03f, 2, TETHER_INT8, &cs, &cz);
        d0 = qb_node("x_dq", TETHER_OP_DEQUANTIZE, (int[]){x, cs, cz}, 3, NULL);
    } else {
        assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, sx, &x), 0);
        assert_int_equal(tether_ir_add_input(g, x), 0);
        d0 = qb_qdq("x", x, 0.03f, 2);
    }
    int8_t w[144];
    uint32_t seed = 11;
    for (int i = 0; i < 144; i++) {
        seed = seed * 1103515245u + 12345u;
        w[i] = (int8_t)((int)(seed >> 16) % 255 - 127);
    }
    float ws = 0.004f, b[4] = {0.1f, -0.2f, 0.05f, 0.3f};
    int8_t wz = 0;
    int cw = qb_konst("w", TETHER_INT8, w, sizeof w, 4, sw),
        cws = qb_konst("ws", TETHER_FLOAT32, &ws, 4, 1, &one),
        cwz = qb_konst("wz", TETHER_INT8, &wz, 1, 1, &one),
        cb = qb_konst("b", TETHER_FLOAT32, b, sizeof b, 1, &s4);
    int wd = qb_node("dqw", TETHER_OP_DEQUANTIZE, (int[]){cw, cws, cwz}, 3, NULL);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    int c = qb_node("conv", TETHER_OP_CONV2D, (int[]){d0, wd, cb}, 3, &a);
    int d1 = qb_qdq("c", qb_node("relu1", TETHER_OP_RELU, &c, 1, NULL), 0.04f, -3);
    int s = qb_node("add", TETHER_OP_ADD, (int[]){d1, d0}, 2, NULL);
    int d2 = qb_qdq("s", qb_node("relu2", TETHER_OP_RELU, &s, 1, NULL), 0.05f, -10);
    tether_ir_attrs_init(TETHER_OP_MAX_POOL, &a);
    a.kernel[0] = a.kernel[1] = 2;
    a.strides[0] = a.strides[1] = 2;
    int d3 = qb_qdq("m", qb_node("maxpool", TETHER_OP_MAX_POOL, &d2, 1, &a), 0.06f, 1);
    int d4 = qb_qdq("g", qb_node("sigmoid", TETHER_OP_SIGMOID, &d3, 1, NULL), 1.0f / 256.0f, -128);
    tether_ir_attrs_init(TETHER_OP_CONCAT, &a);
    a.axis = 1;
    int d5 = qb_qdq("k", qb_node("concat", TETHER_OP_CONCAT, (int[]){d4, d3}, 2, &a), 0.05f, 0);
    int d6 = qb_qdq("p", qb_node("mul", TETHER_OP_MUL, (int[]){d5, d5}, 2, NULL), 0.02f, -100);
    if (opts & QB_BCAST) {
        /* + a per-channel int8 constant [1, 8, 1, 1] (broadcast over H and W) */
        int8_t cv[8] = {-100, -50, -7, 0, 3, 40, 90, 127};
        int64_t sc[4] = {1, 8, 1, 1};
        float css = 0.01f;
        int8_t czz = -5;
        int cc = qb_konst("bc", TETHER_INT8, cv, sizeof cv, 4, sc),
            ccs = qb_konst("bc_s", TETHER_FLOAT32, &css, 4, 1, &one),
            ccz = qb_konst("bc_z", TETHER_INT8, &czz, 1, 1, &one);
        int cd = qb_node("bc_dq", TETHER_OP_DEQUANTIZE, (int[]){cc, ccs, ccz}, 3, NULL);
        int e1 = qb_qdq_t("e", qb_node("badd", TETHER_OP_ADD, (int[]){d6, cd}, 2, NULL), 0.03f, 120,
                          TETHER_UINT8);
        /* uint8: x a scalar uint8 constant, avg_pool counting its padding, leaky_relu */
        uint8_t sv = 200;
        float svs = 0.01f;
        uint8_t svz = 128;
        int sc1 = qb_konst("sv", TETHER_UINT8, &sv, 1, 1, &one),
            sc2 = qb_konst("sv_s", TETHER_FLOAT32, &svs, 4, 1, &one),
            sc3 = qb_konst("sv_z", TETHER_UINT8, &svz, 1, 1, &one);
        int sd = qb_node("sv_dq", TETHER_OP_DEQUANTIZE, (int[]){sc1, sc2, sc3}, 3, NULL);
        int e2 = qb_qdq_t("f", qb_node("smul", TETHER_OP_MUL, (int[]){e1, sd}, 2, NULL), 0.025f,
                          100, TETHER_UINT8);
        tether_ir_attrs_init(TETHER_OP_AVG_POOL, &a);
        a.kernel[0] = 2;
        a.kernel[1] = 3;
        a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
        a.strides[0] = 1;
        a.strides[1] = 2;
        a.count_include_pad = false;
        a.ceil_mode = true;
        int e3 = qb_qdq_t("h", qb_node("avgpool_u8", TETHER_OP_AVG_POOL, &e2, 1, &a), 0.02f, 90,
                          TETHER_UINT8);
        tether_ir_attrs_init(TETHER_OP_LEAKY_RELU, &a);
        a.alpha = 0.1f;
        d6 = qb_qdq("l", qb_node("leaky", TETHER_OP_LEAKY_RELU, &e3, 1, &a), 0.02f, -20);
    }
    tether_ir_attrs_init(TETHER_OP_AVG_POOL, &a);
    a.kernel[0] = a.kernel[1] = 3;
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    a.count_include_pad = false;
    int d7 = qb_qdq("v", qb_node("avgpool", TETHER_OP_AVG_POOL, &d6, 1, &a), 0.01f, -50);
    if (opts & QB_INT_ENDS) {
        assert_int_equal(tether_ir_add_output(g, qb_last_q), 0);
    } else {
        assert_int_equal(tether_ir_add_output(g, d7), 0);
    }
    assert_int_equal(tether_ir_infer(g), 0);
}

/* Rounding ties of qadd and qmul: x [1, 2, 4, 8] quantized twice (scale 0.25, zero points 3 and
 * -7), added into scale 0.5 and multiplied into scale 0.125, so that the multipliers are exactly
 * 1/2 (2^30 / 2^31) and every odd sum or product is a tie, positive and negative; both are
 * outputs [1, 2, 4, 8]. */
static void qb_build_ties(tether_ir_graph *g) {
    qb_g = g;
    assert_int_equal(tether_ir_init(g, "qelt_ties"), 0);
    int64_t sx[4] = {1, 2, 4, 8};
    int x;
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, sx, &x), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    int a = qb_qdq("a", x, 0.25f, 3), b = qb_qdq("b", x, 0.25f, -7);
    tether_ir_attrs at;
    tether_ir_attrs_init(TETHER_OP_NEG, &at);
    int nb = qb_qdq("nb", qb_node("neg", TETHER_OP_NEG, &b, 1, &at), 0.25f, 1);
    int s = qb_qdq("s", qb_node("add", TETHER_OP_ADD, (int[]){a, nb}, 2, NULL), 0.5f, 1);
    int m = qb_qdq("m", qb_node("mul", TETHER_OP_MUL, (int[]){a, b}, 2, NULL), 0.125f, -2);
    assert_int_equal(tether_ir_add_output(g, s), 0);
    assert_int_equal(tether_ir_add_output(g, m), 0);
    assert_int_equal(tether_ir_infer(g), 0);
}

#endif
