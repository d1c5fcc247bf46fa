/*
 * QDQ int8 test models built with the IR API (quant_models.h).
 *
 * What must stay true: see quant_models.h; every constant's name is unique (a counter), every
 * failure returns -1 with the IR's message in tether_last_error().
 */
#include "quant_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether/crt/dtype.h"

typedef struct qb {
    tether_ir_graph *g;
    int fail, n;
    uint32_t seed;
    int u8; /* activations uint8 at zero point z + 128 (as QOperator models) instead of int8 */
} qb;

static uint32_t rnd(qb *b) {
    b->seed = b->seed * 1103515245u + 12345u;
    return b->seed >> 16;
}

static int konst(qb *b, DLDataType t, int ndim, const int64_t *shape, const void *v, size_t bytes) {
    char name[32];
    snprintf(name, sizeof name, "c%d", b->n++);
    int idx = -1;
    if (!b->fail && tether_ir_add_constant(b->g, name, t, ndim, shape, v, bytes, &idx)) {
        b->fail = 1;
    }
    return idx;
}

static int node(qb *b, tether_op op, const int *in, int nin, const tether_ir_attrs *a) {
    char name[32];
    snprintf(name, sizeof name, "t%d", b->n++);
    int out = -1;
    if (b->fail || tether_ir_add_tensor(b->g, name, TETHER_FLOAT32, -1, NULL, &out)) {
        b->fail = 1;
        return -1;
    }
    snprintf(name, sizeof name, "n%d", b->n++);
    if (tether_ir_add_node(b->g, name, op, in, nin, &out, 1, a, NULL)) {
        b->fail = 1;
    }
    return out;
}

/* quantize t to int8 at (s, z) (uint8 at (s, z + 128) with b->u8), then dequantize: the
 * dequantized tensor */
static int qdq(qb *b, int t, float s, int z) {
    int64_t one = 1;
    int8_t zz = (int8_t)z;
    uint8_t zu = (uint8_t)(z + 128);
    int cs = konst(b, TETHER_FLOAT32, 1, &one, &s, sizeof s),
        cz = b->u8 ? konst(b, TETHER_UINT8, 1, &one, &zu, 1)
                   : konst(b, TETHER_INT8, 1, &one, &zz, 1);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_QUANTIZE, &a);
    a.to = b->u8 ? TETHER_UINT8 : TETHER_INT8;
    int q = node(b, TETHER_OP_QUANTIZE, (int[]){t, cs, cz}, 3, &a);
    return node(b, TETHER_OP_DEQUANTIZE, (int[]){q, cs, cz}, 3, NULL);
}

/* dequantized int8 weights of the given shape, symmetric, per channel along axis */
static int weights(qb *b, int ndim, const int64_t *shape, int axis) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        n *= shape[d];
    }
    static int8_t w[65536];
    static float ws[256];
    static int8_t wz[256];
    if (n > (int64_t)sizeof w || shape[axis] > 256) {
        abort(); /* a test model larger than the builder's buffers */
    }
    for (int64_t i = 0; i < n; i++) {
        w[i] = (int8_t)((int)(rnd(b) % 255u) - 127);
    }
    int64_t ch = shape[axis];
    for (int64_t c = 0; c < ch; c++) {
        ws[c] = 0.002f + 0.0007f * (float)(c % 5);
        wz[c] = 0;
    }
    int cw = konst(b, TETHER_INT8, ndim, shape, w, (size_t)n),
        cs = konst(b, TETHER_FLOAT32, 1, &ch, ws, sizeof(float) * (size_t)ch),
        cz = konst(b, TETHER_INT8, 1, &ch, wz, (size_t)ch);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_DEQUANTIZE, &a);
    a.axis = axis;
    return node(b, TETHER_OP_DEQUANTIZE, (int[]){cw, cs, cz}, 3, &a);
}

/* conv2d of the dequantized xd by dequantized per-channel weights and a float bias [+ relu] */
static int conv(qb *b, int xd, int C, int O, int K, int stride, const int64_t pads[4], int groups,
                int relu) {
    int64_t ws[4] = {O, C / groups, K, K}, o = O;
    float bias[256];
    for (int i = 0; i < O; i++) {
        bias[i] = (float)((int)(rnd(b) % 200u) - 100) / 400.0f;
    }
    int w = weights(b, 4, ws, 0),
        cb = konst(b, TETHER_FLOAT32, 1, &o, bias, sizeof(float) * (size_t)O);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    for (int i = 0; i < 4; i++) {
        a.pads[i] = pads[i];
    }
    a.strides[0] = a.strides[1] = stride;
    a.groups = groups;
    int y = node(b, TETHER_OP_CONV2D, (int[]){xd, w, cb}, 3, &a);
    return relu ? node(b, TETHER_OP_RELU, &y, 1, NULL) : y;
}

static int input(qb *b, tether_ir_graph *g, const char *name, int C, int H, int W) {
    memset(b, 0, sizeof *b);
    b->g = g;
    b->seed = 11;
    if (tether_ir_init(g, name)) {
        return -1;
    }
    int64_t sx[4] = {1, C, H, W};
    int x = -1;
    if (tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, sx, &x) || tether_ir_add_input(g, x)) {
        b->fail = 1;
    }
    return x;
}

static int finish(qb *b, int y) {
    if (b->fail || tether_ir_add_output(b->g, y) || tether_ir_infer(b->g)) {
        tether_ir_close(b->g);
        return -1;
    }
    return 0;
}

int tq_build_island(tether_ir_graph *g) {
    qb b;
    int x = input(&b, g, "qdq_island", 3, 8, 8);
    const int64_t p1[4] = {1, 1, 1, 1}, p0[4] = {0, 0, 0, 0};
    int t = qdq(&b, x, 1.0f / 128, 3);
    t = qdq(&b, conv(&b, t, 3, 4, 3, 1, p1, 1, 1), 0.02f, -100);
    t = qdq(&b, node(&b, TETHER_OP_SIGMOID, &t, 1, NULL), 1.0f / 256, -128);
    t = qdq(&b, node(&b, TETHER_OP_TANH, &t, 1, NULL), 1.0f / 128, 0);
    t = qdq(&b, conv(&b, t, 4, 5, 3, 2, p0, 1, 0), 0.03f, 7);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_SOFTMAX, &a);
    a.axis = 1;
    return finish(&b, node(&b, TETHER_OP_SOFTMAX, &t, 1, &a));
}

int tq_build_mix(tether_ir_graph *g, int C, int H, int W, int K) {
    return tq_build_mix_ex(g, C, H, W, K, 0, 1);
}

int tq_build_mix_ex(tether_ir_graph *g, int C, int H, int W, int K, int u8, int dw_stride) {
    qb b;
    int x = input(&b, g, "qdq_mix", C, H, W);
    b.u8 = u8;
    const int64_t pa[4] = {1, 0, 2, 1}, p1[4] = {1, 1, 1, 1}, p0[4] = {0, 0, 0, 0};
    int t = qdq(&b, x, 1.0f / 128, 5);
    t = qdq(&b, conv(&b, t, C, 7, K, 2, pa, 1, 1), 0.04f, -20);
    t = qdq(&b, conv(&b, t, 7, 7, 3, dw_stride, p1, 7, 0), 0.03f, -3);
    t = qdq(&b, conv(&b, t, 7, 9, 1, 1, p0, 1, 1), 0.02f, -90);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_FLATTEN, &a);
    a.axis = 1;
    t = qdq(&b, node(&b, TETHER_OP_FLATTEN, &t, 1, &a), 0.02f, -90);
    /* the first convolution's output size (pads top 1, left 0, bottom 2, right 1, stride 2) */
    int64_t oh = (H + 3 - K) / 2 + 1, ow = (W + 1 - K) / 2 + 1;
    oh = (oh - 1) / dw_stride + 1; /* the depthwise 3x3 pad 1 */
    ow = (ow - 1) / dw_stride + 1;
    int64_t ws[2] = {9 * oh * ow, 11};
    int w = weights(&b, 2, ws, 1);
    t = node(&b, TETHER_OP_MATMUL, (int[]){t, w}, 2, NULL);
    return finish(&b, qdq(&b, t, 0.1f, 2));
}
