/*
 * The model zoo against ONNX Runtime (bench/models/README.md; `scripts/bench models`): seven
 * public-architecture models written as ONNX files here (tests/onnx/model_builder), each
 * imported and compiled by tether for this machine's CPU (the defaults `tether run` uses:
 * -O3, --mcpu of the host's x86-64 level, blocked kernels), timed in-process through its
 * unpacked entry, and timed with ONNX Runtime (onnxruntime-node, one thread) on the same file
 * and input in the same run; both outputs are compared. Prints per model: MFLOP, tether ms, ORT
 * ms, ratio tether/ORT, GFLOP/s of each, max |difference|; then the geometric mean of the ratios.
 *
 * usage: bench_models [ORT_DIR]   (ORT_DIR: where node_modules/onnxruntime-node is; without it,
 * or without node, tether's figures only)
 *
 * What must stay true: weights come from a fixed-seed generator (He-scaled, so activations stay
 * finite through deep nets); both sides get the same input bytes; timing is the median of 15
 * rounds of at least 50 ms each; nothing here is part of the tests.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "model_builder.h"
#include "../host_cpu.h"
#include "tether/compiler.h"
#include "tether/crt.h"
#include "tether/onnx.h"

#define ROUNDS 15

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- building ONNX models ---- */

typedef struct net {
    mb b;
    uint32_t seed;
    int n; /* names made so far */
} net;

static float frand(net *m) {
    m->seed = m->seed * 1664525u + 1013904223u;
    return (float)((m->seed >> 8) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
}

/* A fresh tensor name. */
static const char *fresh(net *m, const char *tag) {
    static char names[4096][40];
    char *s = names[m->n++ % 4096];
    snprintf(s, 40, "%s%d", tag, m->n);
    return s;
}

/* An initializer of the given shape, uniform in +-scale. */
static const char *weight(net *m, int ndim, const int64_t *dims, float scale) {
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        count *= (size_t)dims[i];
    }
    float *v = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; i++) {
        v[i] = frand(m) * scale;
    }
    const char *name = fresh(m, "w");
    mb_init_tensor(&m->b, mb_tensor_f(&m->b, name, ndim, dims, v, 1));
    free(v);
    return name;
}

/* Conv (+bias) with He-scaled weights, then act: 0 none, 1 Relu, 6 Clip 0..6. */
static const char *conv(net *m, const char *x, int cin, int cout, int kh, int kw, int stride,
                        int pt, int pl, int pb, int pr, int group, int act) {
    int64_t wd[4] = {cout, cin / group, kh, kw}, bd[1] = {cout};
    float scale = sqrtf(6.0f / (float)(cin / group * kh * kw));
    const char *w = weight(m, 4, wd, scale), *b = weight(m, 1, bd, 0.1f);
    const char *y = fresh(m, "c");
    char ins[200];
    snprintf(ins, sizeof ins, "%s,%s,%s", x, w, b);
    Onnx__NodeProto *n = mb_node(&m->b, "Conv", fresh(m, "conv"), ins, y);
    int64_t ks[2] = {kh, kw}, st[2] = {stride, stride}, pads[4] = {pt, pl, pb, pr};
    mb_attr_ints(&m->b, n, "kernel_shape", 2, ks);
    mb_attr_ints(&m->b, n, "strides", 2, st);
    mb_attr_ints(&m->b, n, "pads", 4, pads);
    mb_attr_i(&m->b, n, "group", group);
    if (act == 0) {
        return y;
    }
    const char *z = fresh(m, "a");
    if (act == 1) {
        mb_node(&m->b, "Relu", fresh(m, "relu"), y, z);
    } else {
        /* Clip-11+: the bounds are inputs */
        float lo = 0.0f, hi = 6.0f;
        const char *mn = fresh(m, "min"), *mx = fresh(m, "max");
        mb_init_tensor(&m->b, mb_tensor_f(&m->b, mn, 0, NULL, &lo, 1));
        mb_init_tensor(&m->b, mb_tensor_f(&m->b, mx, 0, NULL, &hi, 1));
        char ins[200];
        snprintf(ins, sizeof ins, "%s,%s,%s", y, mn, mx);
        mb_node(&m->b, "Clip", fresh(m, "clip"), ins, z);
    }
    return z;
}

static const char *same3(net *m, const char *x, int cin, int cout, int stride, int group, int act) {
    /* 3x3 "same" padding: 1 on every side at stride 1; TF-style (0 before, 1 after) at 2 */
    int b = stride == 1 ? 1 : 0;
    return conv(m, x, cin, cout, 3, 3, stride, b, b, 1, 1, group, act);
}

static const char *node1(net *m, const char *op, const char *x) {
    const char *y = fresh(m, "t");
    mb_node(&m->b, op, fresh(m, "n"), x, y);
    return y;
}

static const char *node2(net *m, const char *op, const char *x, const char *z) {
    const char *y = fresh(m, "t");
    char ins[120];
    snprintf(ins, sizeof ins, "%s,%s", x, z);
    mb_node(&m->b, op, fresh(m, "n"), ins, y);
    return y;
}

/* Flatten -> Gemm(transB) -> Softmax: the classifier head. */
static const char *head(net *m, const char *x, int k, int classes) {
    const char *f = fresh(m, "flat");
    Onnx__NodeProto *fl = mb_node(&m->b, "Flatten", fresh(m, "flatten"), x, f);
    mb_attr_i(&m->b, fl, "axis", 1);
    int64_t wd[2] = {classes, k}, bd[1] = {classes};
    const char *w = weight(m, 2, wd, sqrtf(3.0f / (float)k)), *b = weight(m, 1, bd, 0.1f);
    const char *g = fresh(m, "fc");
    char ins[200];
    snprintf(ins, sizeof ins, "%s,%s,%s", f, w, b);
    Onnx__NodeProto *n = mb_node(&m->b, "Gemm", fresh(m, "gemm"), ins, g);
    mb_attr_i(&m->b, n, "transB", 1);
    const char *y = fresh(m, "prob");
    Onnx__NodeProto *s = mb_node(&m->b, "Softmax", fresh(m, "softmax"), g, y);
    mb_attr_i(&m->b, s, "axis", 1);
    return y;
}

typedef struct model {
    const char *name, *what;
    int ndim;
    int64_t in[4];
} model;

static void start(net *m, const model *md) {
    memset(m, 0, sizeof *m);
    m->seed = 12345;
    mb_init(&m->b, 17);
    mb_input(&m->b, "x", 1, md->ndim, md->in);
}

static void finish(net *m, const char *y, const char *path) {
    /* the graph output is named "y": an Identity onto it */
    mb_node(&m->b, "Identity", "out", y, "y");
    mb_output(&m->b, "y", 1);
    mb_write(&m->b, path);
    mb_free(&m->b);
}

static const char *build_kws(net *m) { /* the examples/kws architecture: conv 10x4 s2 + fc */
    const char *x = conv(m, "x", 1, 8, 10, 4, 2, 4, 1, 5, 2, 1, 1);
    return head(m, x, 8 * 25 * 5, 12);
}

static const char *
build_micro_speech(net *m) { /* TFLite Micro's micro_speech: conv 10x8 s2 + fc 4 */
    const char *x = conv(m, "x", 1, 8, 10, 8, 2, 4, 3, 5, 4, 1, 1);
    return head(m, x, 8 * 25 * 20, 4);
}

static const char *
build_ds_cnn(net *m) { /* Hello Edge DS-CNN-S: conv + 4 depthwise-separable blocks */
    const char *x = conv(m, "x", 1, 64, 10, 4, 2, 4, 1, 5, 2, 1, 1);
    for (int i = 0; i < 4; i++) {
        x = same3(m, x, 64, 64, 1, 64, 1);
        x = conv(m, x, 64, 64, 1, 1, 1, 0, 0, 0, 0, 1, 1);
    }
    x = node1(m, "GlobalAveragePool", x);
    return head(m, x, 64, 12);
}

static const char *build_mobilenet_v1(net *m) { /* MobileNet v1, width 0.25, 96x96 */
    static const int ch[] = {16, 32, 32, 64, 64, 128, 128, 128, 128, 128, 128, 256, 256};
    static const int st[] = {1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1};
    const char *x = same3(m, "x", 3, 8, 2, 1, 6);
    int c = 8;
    for (int i = 0; i < 13; i++) {
        x = same3(m, x, c, c, st[i], c, 6);
        x = conv(m, x, c, ch[i], 1, 1, 1, 0, 0, 0, 0, 1, 6);
        c = ch[i];
    }
    x = node1(m, "GlobalAveragePool", x);
    return head(m, x, c, 1000);
}

static const char *build_mobilenet_v2(net *m) { /* MobileNet v2, width 0.35, 96x96 */
    static const int t[] = {1, 6, 6, 6, 6, 6, 6}, c[] = {8, 8, 16, 24, 32, 56, 112},
                     n[] = {1, 2, 3, 4, 3, 3, 1}, s[] = {1, 2, 2, 2, 1, 2, 1};
    const char *x = same3(m, "x", 3, 16, 2, 1, 6);
    int cin = 16;
    for (int b = 0; b < 7; b++) {
        for (int i = 0; i < n[b]; i++) {
            int stride = i == 0 ? s[b] : 1, hid = cin * t[b];
            const char *y = x;
            if (t[b] != 1) {
                y = conv(m, y, cin, hid, 1, 1, 1, 0, 0, 0, 0, 1, 6);
            }
            y = same3(m, y, hid, hid, stride, hid, 6);
            y = conv(m, y, hid, c[b], 1, 1, 1, 0, 0, 0, 0, 1, 0);
            x = stride == 1 && cin == c[b] ? node2(m, "Add", x, y) : y;
            cin = c[b];
        }
    }
    x = conv(m, x, cin, 1280, 1, 1, 1, 0, 0, 0, 0, 1, 6);
    x = node1(m, "GlobalAveragePool", x);
    return head(m, x, 1280, 1000);
}

static const char *upsample2(net *m, const char *x) {
    int64_t sd[1] = {4};
    float sv[4] = {1.0f, 1.0f, 2.0f, 2.0f};
    const char *scales = fresh(m, "scales");
    mb_init_tensor(&m->b, mb_tensor_f(&m->b, scales, 1, sd, sv, 1));
    const char *y = fresh(m, "up");
    char ins[120];
    snprintf(ins, sizeof ins, "%s,,%s", x, scales);
    Onnx__NodeProto *r = mb_node(&m->b, "Resize", fresh(m, "resize"), ins, y);
    mb_attr_s(&m->b, r, "mode", "nearest");
    return y;
}

static const char *maxpool2(net *m, const char *x) {
    const char *y = fresh(m, "pool");
    Onnx__NodeProto *p = mb_node(&m->b, "MaxPool", fresh(m, "maxpool"), x, y);
    int64_t k[2] = {2, 2};
    mb_attr_ints(&m->b, p, "kernel_shape", 2, k);
    mb_attr_ints(&m->b, p, "strides", 2, k);
    return y;
}

static const char *concat(net *m, const char *a, const char *b) {
    const char *y = fresh(m, "cat");
    char ins[120];
    snprintf(ins, sizeof ins, "%s,%s", a, b);
    Onnx__NodeProto *c = mb_node(&m->b, "Concat", fresh(m, "concat"), ins, y);
    mb_attr_i(&m->b, c, "axis", 1);
    return y;
}

static const char *build_unet(net *m) { /* a small U-Net on 1x64x64: 3 levels, skips by concat */
    const char *e1 = same3(m, same3(m, "x", 1, 16, 1, 1, 1), 16, 16, 1, 1, 1);
    const char *e2 = same3(m, same3(m, maxpool2(m, e1), 16, 32, 1, 1, 1), 32, 32, 1, 1, 1);
    const char *bt = same3(m, same3(m, maxpool2(m, e2), 32, 64, 1, 1, 1), 64, 64, 1, 1, 1);
    const char *d2 = concat(m, upsample2(m, bt), e2);
    d2 = same3(m, same3(m, d2, 96, 32, 1, 1, 1), 32, 32, 1, 1, 1);
    const char *d1 = concat(m, upsample2(m, d2), e1);
    d1 = same3(m, same3(m, d1, 48, 16, 1, 1, 1), 16, 16, 1, 1, 1);
    const char *y = conv(m, d1, 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0);
    return node1(m, "Sigmoid", y);
}

static const char *matmul_w(net *m, const char *x, int k, int n) {
    int64_t wd[2] = {k, n};
    return node2(m, "MatMul", x, weight(m, 2, wd, sqrtf(3.0f / (float)k)));
}

static const char *layer_norm(net *m, const char *x, int d) {
    int64_t sd[1] = {d};
    float *one = malloc((size_t)d * sizeof(float)), *zero = calloc((size_t)d, sizeof(float));
    for (int i = 0; i < d; i++) {
        one[i] = 1.0f;
    }
    const char *g = fresh(m, "gamma"), *b = fresh(m, "beta");
    mb_init_tensor(&m->b, mb_tensor_f(&m->b, g, 1, sd, one, 1));
    mb_init_tensor(&m->b, mb_tensor_f(&m->b, b, 1, sd, zero, 1));
    free(one);
    free(zero);
    const char *y = fresh(m, "ln");
    char ins[120];
    snprintf(ins, sizeof ins, "%s,%s,%s", x, g, b);
    Onnx__NodeProto *n = mb_node(&m->b, "LayerNormalization", fresh(m, "layernorm"), ins, y);
    mb_attr_i(&m->b, n, "axis", -1);
    return y;
}

static const char *build_attention(net *m) { /* one transformer block on 64 tokens x 128 */
    const int T = 64, D = 128;
    const char *q = matmul_w(m, "x", D, D), *k = matmul_w(m, "x", D, D),
               *v = matmul_w(m, "x", D, D);
    const char *kt = fresh(m, "kt");
    Onnx__NodeProto *tr = mb_node(&m->b, "Transpose", fresh(m, "transpose"), k, kt);
    int64_t perm[2] = {1, 0};
    mb_attr_ints(&m->b, tr, "perm", 2, perm);
    const char *s = node2(m, "MatMul", q, kt);
    int64_t one = 1;
    float sc = 1.0f / sqrtf((float)D);
    const char *scale = fresh(m, "scale");
    mb_init_tensor(&m->b, mb_tensor_f(&m->b, scale, 1, &one, &sc, 1));
    s = node2(m, "Mul", s, scale);
    const char *p = fresh(m, "attn");
    Onnx__NodeProto *sm = mb_node(&m->b, "Softmax", fresh(m, "softmax"), s, p);
    mb_attr_i(&m->b, sm, "axis", -1);
    const char *o = node2(m, "MatMul", p, v);
    o = matmul_w(m, o, D, D);
    const char *h = layer_norm(m, node2(m, "Add", "x", o), D);
    const char *f = node1(m, "Relu", matmul_w(m, h, D, 2 * D));
    f = matmul_w(m, f, 2 * D, D);
    const char *y = layer_norm(m, node2(m, "Add", h, f), D);
    (void)T;
    return y;
}

/* ---- timing ---- */

typedef int32_t (*entry_fn)(const float *, float *);

static double time_tether(entry_fn fn, const float *x, float *y) {
    for (int i = 0; i < 3; i++) {
        fn(x, y);
    }
    int calls = 0;
    double t0 = now();
    do {
        fn(x, y);
        calls++;
    } while (now() - t0 < 0.05);
    double t[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        t0 = now();
        for (int i = 0; i < calls; i++) {
            fn(x, y);
        }
        t[r] = (now() - t0) / calls;
    }
    qsort(t, ROUNDS, sizeof(double), cmp_double);
    return t[ROUNDS / 2];
}

/* Default and tuned builds of one model, interleaved round by round (same conditions): medians
 * into *ta, *tb. */
static void time_pair(entry_fn a, entry_fn b, const float *x, float *y, double *ta, double *tb) {
    for (int i = 0; i < 3; i++) {
        a(x, y);
        b(x, y);
    }
    int calls = 0;
    double t0 = now();
    do {
        a(x, y);
        calls++;
    } while (now() - t0 < 0.05);
    double t[2][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < 2; k++) {
            entry_fn f = (r + k) % 2 ? b : a; /* the order alternates */
            t0 = now();
            for (int i = 0; i < calls; i++) {
                f(x, y);
            }
            t[f == b][r] = (now() - t0) / calls;
        }
    }
    qsort(t[0], ROUNDS, sizeof(double), cmp_double);
    qsort(t[1], ROUNDS, sizeof(double), cmp_double);
    *ta = t[0][ROUNDS / 2];
    *tb = t[1][ROUNDS / 2];
}

/* TETHER_SCHEDULE="knob=value,..." overrides schedule knobs (for trying them by hand). */
static void schedule_from_env(tether_schedule *sc) {
    const char *env = getenv("TETHER_SCHEDULE");
    char buf[256];
    snprintf(buf, sizeof buf, "%s", env ? env : "");
    for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char name[64];
        int v;
        if (sscanf(kv, "%63[a-z_]=%d", name, &v) != 2) {
            continue;
        }
        int *f = !strcmp(name, "vector_width")       ? &sc->vector_width
                 : !strcmp(name, "conv_oc_block")    ? &sc->conv_oc_block
                 : !strcmp(name, "conv_col_vectors") ? &sc->conv_col_vectors
                 : !strcmp(name, "dw_col_vectors")   ? &sc->dw_col_vectors
                 : !strcmp(name, "gemv_rows")        ? &sc->gemv_rows
                 : !strcmp(name, "gemm_rows")        ? &sc->gemm_rows
                 : !strcmp(name, "gemm_col_vectors") ? &sc->gemm_col_vectors
                 : !strcmp(name, "channel_block")    ? &sc->channel_block
                 : !strcmp(name, "nchwc_oc_vectors") ? &sc->nchwc_oc_vectors
                 : !strcmp(name, "nchwc_pixels")     ? &sc->nchwc_pixels
                 : !strcmp(name, "nchwc_dw_pixels")  ? &sc->nchwc_dw_pixels
                                                     : NULL;
        if (f) {
            *f = v;
        } else {
            fprintf(stderr, "TETHER_SCHEDULE: unknown knob '%s'\n", name);
        }
    }
}

static int write_bin(const char *path, const float *v, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        return -1;
    }
    size_t w = fwrite(v, sizeof(float), n, f);
    fclose(f);
    return w == n ? 0 : -1;
}

/* ORT through node: prints {"ms": median, "net_ms": ...}; output written to out. */
static int time_ort(const char *ort_dir, const char *onnx, const char *in, const char *shape,
                    const char *out, double *ms, double *net_ms) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "ORT_DIR='%s' node '%s/ort_time.js' '%s' '%s' '%s' '%s'", ort_dir,
             TETHER_BENCH_DIR, onnx, in, shape, out);
    FILE *p = popen(cmd, "r");
    if (!p) {
        return -1;
    }
    char line[512] = "";
    int got = 0;
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "{\"ms\":%lf,\"net_ms\":%lf}", ms, net_ms) == 2) {
            got = 1;
        } else {
            fputs(line, stderr);
        }
    }
    return pclose(p) == 0 && got ? 0 : -1;
}

int main(int argc, char **argv) {
    const char *ort_dir = argc > 1 ? argv[1] : NULL;
    static const model models[] = {
        {"kws", "conv 10x4 s2 (8) + fc 12 (examples/kws)", 4, {1, 1, 49, 10}},
        {"micro_speech", "conv 10x8 s2 (8) + fc 4 (TFLM micro_speech)", 4, {1, 1, 49, 40}},
        {"ds_cnn_s",
         "DS-CNN-S: conv 10x4 s2 (64) + 4 depthwise-separable blocks",
         4,
         {1, 1, 49, 10}},
        {"mobilenet_v1_025", "MobileNet v1 0.25, 96x96", 4, {1, 3, 96, 96}},
        {"mobilenet_v2_035", "MobileNet v2 0.35, 96x96", 4, {1, 3, 96, 96}},
        {"unet_small", "U-Net, 3 levels, 1x64x64", 4, {1, 1, 64, 64}},
        {"attention_block", "transformer block, 64 tokens x 128", 2, {64, 128}},
    };
    const char *(*builders[])(net *) = {build_kws,          build_micro_speech, build_ds_cnn,
                                        build_mobilenet_v1, build_mobilenet_v2, build_unet,
                                        build_attention};
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/bench/models/out", TETHER_BINARY_DIR);
    mkdir(dir, 0755);
    const char *cpu = bench_host_cpu();
    int have_ort = ort_dir != NULL;
    if (!getenv("TETHER_ZOO_ONNX_ONLY")) {
        printf(
            "== model zoo: tether (unpacked, -O3, --mcpu %s, blocked kernels) vs ONNX Runtime "
            "(onnxruntime-node, 1 thread)\n   median of %d rounds of >= 50 ms each, same input; "
            "ORT ms excludes the Node binding's per-call cost\n   (the median per-round difference "
            "to an Identity model of the same input, interleaved)\n\n",
            cpu, ROUNDS);
    }
    double log_sum = 0, log_tuned = 0, log_gain = 0;
    int nratio = 0, ntuned = 0;
    static net m;
    /* TETHER_TUNING_LOG=FILE (tether tune's log): each model also built with its best records
     * for this machine, timed interleaved with the default build */
    const char *tlog = getenv("TETHER_TUNING_LOG");
    if (tlog) {
        printf("tuned: the best records of %s for x86_64-linux/%s; default and tuned builds "
               "timed interleaved\n\n",
               tlog, cpu);
    }
    printf("%-18s %9s %10s %10s %7s %9s %9s %10s\n", "model", "MFLOP", "tether ms", "ORT ms",
           "ratio", "tether GF", "ORT GF", "max|diff|");
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        const model *md = &models[i];
        char onnx[1200], inp[1200], outp[1200], ortp[1200], art[1200], shape[64] = "";
        snprintf(onnx, sizeof onnx, "%s/%s.onnx", dir, md->name);
        snprintf(inp, sizeof inp, "%s/%s.in.bin", dir, md->name);
        snprintf(outp, sizeof outp, "%s/%s.tether.bin", dir, md->name);
        snprintf(ortp, sizeof ortp, "%s/%s.ort.bin", dir, md->name);
        snprintf(art, sizeof art, "%s/%s.art", dir, md->name);
        start(&m, md);
        finish(&m, builders[i](&m), onnx);
        if (getenv("TETHER_ZOO_ONNX_ONLY")) { /* bench/gpu.sh --prepare: the files, no timing */
            printf("%s", md->name);
            for (int d = 0; d < md->ndim; d++) {
                printf(" %lld", (long long)md->in[d]);
            }
            printf("\n");
            continue;
        }
        tether_ir_graph g;
        if (tether_onnx_load(onnx, NULL, &g) != 0) {
            fprintf(stderr, "%s: %s\n", md->name, tether_error_detail());
            return 1;
        }
        tether_compile_options o;
        tether_compile_options_init(&o);
        o.codegen.prefix = "zoo";
        o.build.cpu = cpu;
        schedule_from_env(&o.codegen.schedule);
        if (tether_compile_graph(&g, art, &o, NULL) != 0) {
            fprintf(stderr, "%s: %s\n", md->name, tether_error_detail());
            return 1;
        }
        char lib[1300];
        snprintf(lib, sizeof lib, "%s/libzoo.so", art);
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        entry_fn fn = h ? (entry_fn)dlsym(h, "zoo_main") : NULL;
        if (!fn) {
            fprintf(stderr, "%s: %s\n", md->name, dlerror());
            return 1;
        }
        void *ht = NULL;
        entry_fn tfn = NULL;
        int tuned_kernels = 0, tunable = 0;
        if (tlog) { /* the tuned build: another prefix, so both libraries load side by side */
            char tart[1250];
            snprintf(tart, sizeof tart, "%s.tuned", art);
            tether_ir_graph tg;
            tether_compile_options to = o;
            to.codegen.prefix = "zoot";
            tether_tuning_log lg;
            tether_node_schedule *ns = NULL;
            tether_compile_result tres;
            if (tether_tuning_log_apply(tlog, &to, &lg, &ns) != 0 ||
                tether_onnx_load(onnx, NULL, &tg) != 0 ||
                tether_compile_graph(&tg, tart, &to, &tres) != 0) {
                fprintf(stderr, "%s (tuned): %s\n", md->name, tether_error_detail());
                return 1;
            }
            tuned_kernels = tres.ntuned;
            tunable = tres.ntunable;
            free(ns);
            tether_tuning_log_close(&lg);
            tether_ir_close(&tg);
            snprintf(lib, sizeof lib, "%s/libzoot.so", tart);
            ht = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
            tfn = ht ? (entry_fn)dlsym(ht, "zoot_main") : NULL;
            if (!tfn) {
                fprintf(stderr, "%s (tuned): %s\n", md->name, dlerror());
                return 1;
            }
        }
        size_t nin = tether_ir_tensor_elements(&g.tensors[g.inputs[0]]);
        size_t nout = tether_ir_tensor_elements(&g.tensors[g.outputs[0]]);
        float *x = malloc(nin * sizeof(float)), *y = malloc(nout * sizeof(float)),
              *yo = malloc(nout * sizeof(float));
        uint32_t seed = 99;
        for (size_t k = 0; k < nin; k++) {
            seed = seed * 1664525u + 1013904223u;
            x[k] = (float)((seed >> 8) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
        }
        double flops = (double)tether_ir_graph_flops(&g);
        double t, tt = 0, tdiff = 0;
        if (tfn) {
            float *yt = malloc(nout * sizeof(float));
            time_pair(fn, tfn, x, yt, &t, &tt);
            tfn(x, yt);
            fn(x, y);
            for (size_t k = 0; k < nout; k++) {
                double d = fabs((double)y[k] - yt[k]);
                tdiff = d > tdiff || d != d ? d : tdiff;
            }
            free(yt);
        } else {
            t = time_tether(fn, x, y);
        }
        write_bin(inp, x, nin);
        write_bin(outp, y, nout);
        for (int d = 0; d < md->ndim; d++) {
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", d ? "x" : "",
                     (long long)md->in[d]);
        }
        double ort_raw = 0, ort = 0, maxd = -1;
        if (have_ort && time_ort(ort_dir, onnx, inp, shape, ortp, &ort_raw, &ort) == 0) {
            FILE *f = fopen(ortp, "rb");
            if (f && fread(yo, sizeof(float), nout, f) == nout) {
                maxd = 0;
                for (size_t k = 0; k < nout; k++) {
                    double d = fabs((double)y[k] - yo[k]);
                    maxd = d > maxd || d != d ? d : maxd;
                }
            }
            if (f) {
                fclose(f);
            }
        } else {
            have_ort = 0;
        }
        if (have_ort && ort < 0.05 * ort_raw) { /* below what the binding lets us resolve */
            printf("%-18s %9.2f %10.4f %10s %7s %9.2f %9s %10.2g  (ORT %.4f ms with the binding: "
                   "its own time is not resolvable)\n",
                   md->name, flops * 1e-6, t * 1e3, "n/a", "n/a", flops / t * 1e-9, "n/a", maxd,
                   ort_raw);
        } else if (have_ort) {
            double ratio = t * 1e3 / ort;
            log_sum += log(ratio);
            nratio++;
            printf("%-18s %9.2f %10.4f %10.4f %7.2f %9.2f %9.2f %10.2g\n", md->name, flops * 1e-6,
                   t * 1e3, ort, ratio, flops / t * 1e-9, flops / (ort * 1e-3) * 1e-9, maxd);
        } else {
            printf("%-18s %9.2f %10.4f %10s %7s %9.2f %9s %10s\n", md->name, flops * 1e-6, t * 1e3,
                   "-", "-", flops / t * 1e-9, "-", "-");
        }
        if (tfn) {
            double gain = t / tt;
            log_gain += log(gain);
            if (have_ort && ort > 0) {
                log_tuned += log(tt * 1e3 / ort);
            }
            ntuned++;
            printf("%-18s   tuned %10.4f ms  default/tuned %.2fx  (%d of %d kernels tuned, "
                   "max|tuned-default| %.2g)\n",
                   "", tt * 1e3, gain, tuned_kernels, tunable, tdiff);
            if (have_ort && ort > 0) {
                printf("%-18s   tuned/ORT %.2f\n", "", tt * 1e3 / ort);
            }
            dlclose(ht);
        }
        fflush(stdout);
        dlclose(h);
        free(x);
        free(y);
        free(yo);
        tether_ir_close(&g);
    }
    if (ntuned) {
        printf("\ngeometric mean of default/tuned over %d models: %.2f\n", ntuned,
               exp(log_gain / ntuned));
        if (nratio == ntuned) {
            printf("geometric mean of tuned/ORT over %d models: %.2f\n", ntuned,
                   exp(log_tuned / ntuned));
        }
    }
    if (nratio) {
        printf("\ngeometric mean of tether/ORT over %d models: %.2f\n", nratio,
               exp(log_sum / nratio));
    } else {
        printf("\n(no ONNX Runtime: run scripts/bench models, which installs onnxruntime-node into "
               "the build tree)\n");
    }
    return 0;
}
