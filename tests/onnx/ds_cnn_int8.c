/*
 * The int8 DS-CNN keyword spotter and its float32 twin as ONNX files (ds_cnn_int8.h says what
 * the network is and what must stay true).
 */
#include "ds_cnn_int8.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_builder.h"

enum { T_FLOAT = 1, T_INT8 = 3, T_INT32 = 6 };

typedef struct gen {
    mb b;
    uint32_t seed;
    int n, q;
    char names[1024][32];
} gen;

static float frand(gen *g) { /* uniform in [-1, 1) */
    g->seed = g->seed * 1664525u + 1013904223u;
    return (float)((g->seed >> 8) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
}

static const char *fresh(gen *g, const char *tag) {
    char *s = g->names[g->n % 1024];
    snprintf(s, sizeof g->names[0], "%s%d", tag, g->n);
    g->n++;
    return s;
}

static const char *init_raw(gen *g, const char *tag, int32_t type, int ndim, const int64_t *dims,
                            const void *v, size_t elem) {
    const char *name = fresh(g, tag);
    mb_init_tensor(&g->b, mb_tensor_raw(&g->b, name, type, ndim, dims, v, elem));
    return name;
}

static const char *node(gen *g, const char *op, const char *ins) {
    const char *y = fresh(g, "t");
    mb_node(&g->b, op, fresh(g, op), ins, y);
    return y;
}

/* QuantizeLinear then DequantizeLinear of x at (scale, zp): the quantizer's activation pair. */
static const char *qdq(gen *g, const char *x, float scale, int zp) {
    if (!g->q) {
        return x;
    }
    int8_t z = (int8_t)zp;
    const char *s = init_raw(g, "s", T_FLOAT, 0, NULL, &scale, 4);
    const char *zn = init_raw(g, "z", T_INT8, 0, NULL, &z, 1);
    char ins[128];
    snprintf(ins, sizeof ins, "%s,%s,%s", x, s, zn);
    const char *xq = node(g, "QuantizeLinear", ins);
    snprintf(ins, sizeof ins, "%s,%s,%s", xq, s, zn);
    return node(g, "DequantizeLinear", ins);
}

/* Per-channel (axis 0) int8 weights w[o][k] and int32 bias at scale xs * ws[o], as DQ nodes (or
 * their float values); *wname and *bname receive the tensors the operator reads. */
static void params(gen *g, int ndim, const int64_t *wd, float xs, float fan, const char **wname,
                   const char **bname) {
    int64_t o = wd[0], k = 1;
    for (int i = 1; i < ndim; i++) {
        k *= wd[i];
    }
    int8_t *w = malloc((size_t)(o * k));
    float *wf = malloc(sizeof(float) * (size_t)(o * k)), *ws = malloc(sizeof(float) * (size_t)o),
          *bs = malloc(sizeof(float) * (size_t)o), *bf = malloc(sizeof(float) * (size_t)o);
    int32_t *bq = malloc(sizeof(int32_t) * (size_t)o);
    int8_t *wz = calloc((size_t)o, 1);
    for (int64_t c = 0; c < o; c++) {
        ws[c] = sqrtf(6.0f / fan) / 127.0f * (0.75f + 0.25f * fabsf(frand(g)));
        for (int64_t i = 0; i < k; i++) {
            w[c * k + i] = (int8_t)lrintf(frand(g) * 127.0f);
            wf[c * k + i] = (float)w[c * k + i] * ws[c];
        }
        bs[c] = xs * ws[c];
        bq[c] = (int32_t)lrintf(frand(g) * 0.1f / bs[c]);
        bf[c] = (float)bq[c] * bs[c];
    }
    if (g->q) {
        char ins[128];
        const char *wq = init_raw(g, "w", T_INT8, ndim, wd, w, 1),
                   *wsn = init_raw(g, "ws", T_FLOAT, 1, wd, ws, 4),
                   *wzn = init_raw(g, "wz", T_INT8, 1, wd, wz, 1);
        snprintf(ins, sizeof ins, "%s,%s,%s", wq, wsn, wzn);
        *wname = node(g, "DequantizeLinear", ins);
        mb_attr_i(&g->b, g->b.nodes[g->b.g.n_node - 1], "axis", 0);
        const char *bqn = init_raw(g, "b", T_INT32, 1, wd, bq, 4),
                   *bsn = init_raw(g, "bs", T_FLOAT, 1, wd, bs, 4);
        snprintf(ins, sizeof ins, "%s,%s", bqn, bsn);
        *bname = node(g, "DequantizeLinear", ins);
        mb_attr_i(&g->b, g->b.nodes[g->b.g.n_node - 1], "axis", 0);
    } else {
        *wname = init_raw(g, "w", T_FLOAT, ndim, wd, wf, 4);
        *bname = init_raw(g, "b", T_FLOAT, 1, wd, bf, 4);
    }
    free(w);
    free(wf);
    free(ws);
    free(bs);
    free(bf);
    free(bq);
    free(wz);
}

/* Conv + ReLU, output quantized at (ys, -128). */
static const char *conv(gen *g, const char *x, float xs, int cin, int cout, int kh, int kw,
                        int stride, int pt, int pl, int pb, int pr, int group, float ys) {
    int64_t wd[4] = {cout, cin / group, kh, kw};
    const char *w, *b;
    params(g, 4, wd, xs, (float)(cin / group * kh * kw), &w, &b);
    char ins[128];
    snprintf(ins, sizeof ins, "%s,%s,%s", x, w, b);
    const char *y = fresh(g, "c");
    Onnx__NodeProto *n = mb_node(&g->b, "Conv", fresh(g, "conv"), ins, y);
    int64_t ks[2] = {kh, kw}, st[2] = {stride, stride}, pads[4] = {pt, pl, pb, pr};
    mb_attr_ints(&g->b, n, "kernel_shape", 2, ks);
    mb_attr_ints(&g->b, n, "strides", 2, st);
    mb_attr_ints(&g->b, n, "pads", 4, pads);
    mb_attr_i(&g->b, n, "group", group);
    return qdq(g, node(g, "Relu", y), ys, -128);
}

void ds_cnn_write(const char *path, int quantized) {
    gen *g = calloc(1, sizeof *g);
    if (!g) {
        abort();
    }
    g->seed = 2028;
    g->q = quantized;
    mb_init(&g->b, 17);
    int64_t in[4] = {1, 1, 49, 10};
    mb_input(&g->b, "x", 1, 4, in);
    const float xs = 1.0f / 64.0f, as = 6.0f / 255.0f, ps = 3.0f / 255.0f, ls = 8.0f / 255.0f;
    const char *x = qdq(g, "x", xs, 0);
    x = conv(g, x, xs, 1, 64, 10, 4, 2, 4, 1, 5, 2, 1, as);
    for (int i = 0; i < 4; i++) {
        x = conv(g, x, as, 64, 64, 3, 3, 1, 1, 1, 1, 1, 64, as);
        x = conv(g, x, as, 64, 64, 1, 1, 1, 0, 0, 0, 0, 1, as);
    }
    x = qdq(g, node(g, "GlobalAveragePool", x), ps, -128);
    const char *f = fresh(g, "flat");
    Onnx__NodeProto *fl = mb_node(&g->b, "Flatten", fresh(g, "flatten"), x, f);
    mb_attr_i(&g->b, fl, "axis", 1);
    x = qdq(g, f, ps, -128);
    int64_t wd[2] = {12, 64};
    const char *w, *b;
    params(g, 2, wd, ps, 64.0f, &w, &b);
    char ins[128];
    snprintf(ins, sizeof ins, "%s,%s,%s", x, w, b);
    const char *y = fresh(g, "fc");
    Onnx__NodeProto *gm = mb_node(&g->b, "Gemm", fresh(g, "gemm"), ins, y);
    mb_attr_i(&g->b, gm, "transB", 1);
    y = qdq(g, y, ls, 0);
    mb_node(&g->b, "Identity", "out", y, "y");
    mb_output(&g->b, "y", 1);
    mb_write(&g->b, path);
    mb_free(&g->b);
    free(g);
}
