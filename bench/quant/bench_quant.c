/*
 * tether against ONNX Runtime on quantized models (bench/quant/README.md; `scripts/bench quant`):
 * a small residual CNN (conv 3x3 + ReLU twice, Add, Concat, conv 1x1 + ReLU, GlobalAveragePool,
 * Gemm to 10 classes, batch 32) written here as an ONNX float model, then in the forms ONNX
 * Runtime's static quantizer writes:
 *   qdq_s8   QDQ, int8 activations, int8 weights per channel (`tether quantize`'s library call)
 *   qdq_u8   QDQ, uint8 activations, int8 weights per channel (the same, --activations uint8)
 *   qop_u8   QOperator: QuantizeLinear, QLinearConv (int8 weights per channel, int32 bias),
 *            com.microsoft QLinearAdd, QLinearConcat, QLinearGlobalAveragePool, QGemm, then
 *            DequantizeLinear; uint8 activations, ReLU fused into the output range, built here
 *            with the tests' model builder from ranges the float model shows on the calibration
 *            batch (tether's reference interpreter)
 *   qop_u8_rr the same with ORT's reduce_range (weights in [-64, 64])
 * Each model runs in tether (`tether run MODEL` on a local tetherd) and in ONNX Runtime
 * (onnxruntime-node, ort_quant.js) on the same input batch (another seed than the calibration);
 * per model: the % of output elements within one quantization step (the output's scale) of ONNX
 * Runtime's, the max difference in steps and the top-1 agreement over the 32 rows, plus the
 * int8 model's top-1 agreement with the float model (in ONNX Runtime).
 *
 * usage: bench_quant ORT_DIR [OUT_DIR]   (ORT_DIR: where node_modules/onnxruntime-node is)
 *
 * What must stay true: weights and inputs come from fixed-seed generators; both runtimes get the
 * same model file and the same input bytes; nothing here is part of the tests. Exit 1 when a
 * model fails to run or a form misses the goal (>= 99% within one step, same top-1) while ONNX
 * Runtime's output is the nearer to the float model's (a form where ONNX Runtime is the one off,
 * by its int16 saturation of u8s8 products on CPUs without VNNI, is said so, not counted).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model_builder.h"
#include "tether/compiler.h"
#include "tether/crt.h"
#include "tether/npy.h"
#include "tether/onnx.h"
#include "tether/onnx_quantize.h"

#define N       32 /* batch */
#define C       3
#define H       16
#define CLASSES 10
#define T_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define T_UINT8 ONNX__TENSOR_PROTO__DATA_TYPE__UINT8
#define T_INT8  ONNX__TENSOR_PROTO__DATA_TYPE__INT8
#define T_INT32 ONNX__TENSOR_PROTO__DATA_TYPE__INT32

static char g_out[1024];

static const char *at(const char *name) {
    static char p[8][1200];
    static int k;
    k = (k + 1) % 8;
    snprintf(p[k], sizeof p[k], "%s/%s", g_out, name);
    return p[k];
}

static uint32_t g_seed = 20260611u;
static float frand(void) { /* uniform in [-1, 1) */
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)((g_seed >> 8) & 0xffffff) / 8388608.0f - 1.0f;
}

/* ---- the float model's weights (fixed seed) ---- */

typedef struct weights {
    float w1[16 * C * 9], b1[16], w2[16 * 16 * 9], b2[16], w3[32 * 32], b3[32];
    float w4[CLASSES * 32], b4[CLASSES];
} weights;

static void fill(float *v, size_t n, float amp) {
    for (size_t i = 0; i < n; i++) {
        v[i] = amp * frand();
    }
}

static void make_weights(weights *w) {
    fill(w->w1, sizeof w->w1 / 4, 1.5f / sqrtf(C * 9));
    fill(w->b1, 16, 0.1f);
    fill(w->w2, sizeof w->w2 / 4, 1.5f / sqrtf(16 * 9));
    fill(w->b2, 16, 0.1f);
    fill(w->w3, sizeof w->w3 / 4, 1.5f / sqrtf(32));
    fill(w->b3, 32, 0.1f);
    fill(w->w4, sizeof w->w4 / 4, 1.5f / sqrtf(32));
    fill(w->b4, CLASSES, 0.1f);
}

static void init_f(mb *b, const char *name, int ndim, const int64_t *dims, const float *v) {
    mb_init_tensor(b, mb_tensor_f(b, name, ndim, dims, v, 1));
}

/* An initializer of another element type: raw bytes (mb_tensor_f's buffer is large enough). */
static void init_raw(mb *b, const char *name, int type, int ndim, const int64_t *dims,
                     const void *data, size_t nbytes) {
    size_t c = 1;
    for (int d = 0; d < ndim; d++) {
        c *= (size_t)dims[d];
    }
    float *zero = calloc(c ? c : 1, sizeof(float));
    Onnx__TensorProto *t = mb_tensor_f(b, name, ndim, dims, zero, 1);
    free(zero);
    t->data_type = type;
    t->raw_data.len = nbytes;
    memcpy(t->raw_data.data, data, nbytes);
    mb_init_tensor(b, t);
}

static const int64_t XS[4] = {N, C, H, H};

/* The float model; probe: every activation is an extra output (for the ranges). */
static void write_float(const weights *w, const char *path, int probe) {
    mb b;
    mb_init(&b, 13);
    mb_input(&b, "x", T_FLOAT, 4, XS);
    int64_t d1[4] = {16, C, 3, 3}, d2[4] = {16, 16, 3, 3}, d3[4] = {32, 32, 1, 1};
    int64_t d4[2] = {CLASSES, 32}, n16[1] = {16}, n32[1] = {32}, n10[1] = {CLASSES};
    init_f(&b, "w1", 4, d1, w->w1);
    init_f(&b, "b1", 1, n16, w->b1);
    init_f(&b, "w2", 4, d2, w->w2);
    init_f(&b, "b2", 1, n16, w->b2);
    init_f(&b, "w3", 4, d3, w->w3);
    init_f(&b, "b3", 1, n32, w->b3);
    init_f(&b, "w4", 2, d4, w->w4);
    init_f(&b, "b4", 1, n10, w->b4);
    int64_t pads[4] = {1, 1, 1, 1};
    mb_attr_ints(&b, mb_node(&b, "Conv", "conv1", "x,w1,b1", "c1"), "pads", 4, pads);
    mb_node(&b, "Relu", "relu1", "c1", "r1");
    mb_attr_ints(&b, mb_node(&b, "Conv", "conv2", "r1,w2,b2", "c2"), "pads", 4, pads);
    mb_node(&b, "Relu", "relu2", "c2", "r2");
    mb_node(&b, "Add", "add", "r1,r2", "a");
    mb_attr_i(&b, mb_node(&b, "Concat", "concat", "a,r1", "k"), "axis", 1);
    mb_node(&b, "Conv", "conv3", "k,w3,b3", "c3");
    mb_node(&b, "Relu", "relu3", "c3", "r3");
    mb_node(&b, "GlobalAveragePool", "gap", "r3", "g");
    mb_node(&b, "Flatten", "flatten", "g", "f");
    mb_attr_i(&b, mb_node(&b, "Gemm", "fc", "f,w4,b4", "y"), "transB", 1);
    mb_output(&b, "y", T_FLOAT);
    if (probe) {
        const char *acts[] = {"r1", "r2", "a", "k", "r3", "g"};
        for (int i = 0; i < 6; i++) {
            mb_output(&b, acts[i], T_FLOAT);
        }
    }
    mb_write(&b, path);
    mb_free(&b);
}

/* ---- ranges and quantization parameters (uint8 activations, as ORT's QOperator default) ---- */

typedef struct qp {
    float scale;
    uint8_t zp;
} qp;

static qp u8_params(float lo, float hi) {
    lo = lo < 0 ? lo : 0;
    hi = hi > 0 ? hi : 0;
    qp p = {(hi - lo) / 255.0f, 0};
    if (!(p.scale > 0)) {
        p.scale = 1;
    }
    float z = roundf(-lo / p.scale);
    p.zp = (uint8_t)(z < 0 ? 0 : z > 255 ? 255 : z);
    return p;
}

/* Symmetric int8 per output channel (in [-qmax, qmax]): scales[oc] and q[]. */
static int g_qmax = 127; /* 64 with ORT's reduce_range (7-bit weights) */
static void quant_w(const float *w, int oc, int per, float *scale, int8_t *q) {
    for (int o = 0; o < oc; o++) {
        float m = 0;
        for (int i = 0; i < per; i++) {
            m = fmaxf(m, fabsf(w[o * per + i]));
        }
        float qm = (float)g_qmax;
        scale[o] = m > 0 ? m / qm : 1.0f;
        for (int i = 0; i < per; i++) {
            float v = roundf(w[o * per + i] / scale[o]);
            q[o * per + i] = (int8_t)(v > qm ? qm : v < -qm ? -qm : v);
        }
    }
}

static void quant_b(const float *b, int oc, float xs, const float *ws, int32_t *q) {
    for (int o = 0; o < oc; o++) {
        q[o] = (int32_t)lrintf(b[o] / (xs * ws[o]));
    }
}

/* Activation ranges of the float model on the calibration batch: x, r1, r2, a, k, r3, g, y. */
static int act_ranges(const weights *w, const float *cal, float lo[8], float hi[8]) {
    write_float(w, at("probe.onnx"), 1);
    tether_ir_graph g;
    if (tether_onnx_load(at("probe.onnx"), NULL, &g)) {
        fprintf(stderr, "bench_quant: probe: %s\n", tether_last_error());
        return 1;
    }
    size_t sizes[7] = {N * CLASSES,    N * 16 * H * H, N * 16 * H * H, N * 16 * H * H,
                       N * 32 * H * H, N * 32 * H * H, N * 32};
    void *outs[7];
    for (int i = 0; i < 7; i++) {
        outs[i] = malloc(sizes[i] * sizeof(float));
    }
    const void *ins[1] = {cal};
    int rc = tether_interp_run_typed(&g, ins, outs);
    if (rc) {
        fprintf(stderr, "bench_quant: probe: %s\n", tether_last_error());
    }
    /* lo/hi order: x, r1, r2, a, k, r3, g, y; outputs: y, r1, r2, a, k, r3, g */
    int map[7] = {7, 1, 2, 3, 4, 5, 6};
    for (int i = 0; !rc && i < 7; i++) {
        const float *v = outs[i];
        lo[map[i]] = INFINITY;
        hi[map[i]] = -INFINITY;
        for (size_t k = 0; k < sizes[i]; k++) {
            lo[map[i]] = fminf(lo[map[i]], v[k]);
            hi[map[i]] = fmaxf(hi[map[i]], v[k]);
        }
    }
    lo[0] = INFINITY;
    hi[0] = -INFINITY;
    for (size_t k = 0; k < (size_t)N * C * H * H; k++) {
        lo[0] = fminf(lo[0], cal[k]);
        hi[0] = fmaxf(hi[0], cal[k]);
    }
    for (int i = 0; i < 7; i++) {
        free(outs[i]);
    }
    tether_ir_close(&g);
    return rc;
}

/* ---- the QOperator model ---- */

static void scalar_qp(mb *b, const char *name, qp p) {
    char s[64], z[64];
    snprintf(s, sizeof s, "%s_scale", name);
    snprintf(z, sizeof z, "%s_zp", name);
    mb_init_tensor(b, mb_tensor_f(b, s, 0, NULL, &p.scale, 1));
    init_raw(b, z, T_UINT8, 0, NULL, &p.zp, 1);
}

/* A per-channel int8 weight with its scales, zero points (0) and int32 bias. */
static void qweight(mb *b, const char *name, int ndim, const int64_t *dims, const float *w,
                    const float *bias, float xs, int per_channel) {
    int oc = (int)dims[0], per = 1;
    for (int d = 1; d < ndim; d++) {
        per *= (int)dims[d];
    }
    float *sc = malloc(sizeof(float) * (size_t)oc);
    int8_t *q = malloc((size_t)oc * (size_t)per), *zp = calloc((size_t)oc, 1);
    int32_t *bq = malloc(sizeof(int32_t) * (size_t)oc);
    quant_w(w, oc, per, sc, q);
    if (!per_channel) { /* one scale: the largest */
        float m = 0;
        for (int o = 0; o < oc; o++) {
            m = fmaxf(m, sc[o]);
        }
        for (int o = 0; o < oc; o++) {
            sc[o] = m;
        }
        quant_w(w, 1, oc * per, &m, q);
    }
    quant_b(bias, oc, xs, sc, bq);
    char n[64];
    int64_t ocd[1] = {oc};
    snprintf(n, sizeof n, "%s_q", name);
    init_raw(b, n, T_INT8, ndim, dims, q, (size_t)oc * (size_t)per);
    snprintf(n, sizeof n, "%s_scale", name);
    mb_init_tensor(b, mb_tensor_f(b, n, per_channel ? 1 : 0, ocd, sc, 1));
    snprintf(n, sizeof n, "%s_zp", name);
    init_raw(b, n, T_INT8, per_channel ? 1 : 0, ocd, zp, per_channel ? (size_t)oc : 1);
    snprintf(n, sizeof n, "%s_bias", name);
    init_raw(b, n, T_INT32, 1, ocd, bq, sizeof(int32_t) * (size_t)oc);
    free(sc);
    free(q);
    free(zp);
    free(bq);
}

static void write_qop(const weights *w, const float lo[8], const float hi[8], const char *path) {
    mb b;
    mb_init(&b, 13);
    mb_opset(&b, "com.microsoft", 1);
    mb_input(&b, "x", T_FLOAT, 4, XS);
    const char *names[8] = {"x", "r1", "r2", "a", "k", "r3", "g", "y"};
    qp p[8];
    for (int i = 0; i < 8; i++) {
        p[i] = u8_params(lo[i], hi[i]);
        scalar_qp(&b, names[i], p[i]);
    }
    int64_t d1[4] = {16, C, 3, 3}, d2[4] = {16, 16, 3, 3}, d3[4] = {32, 32, 1, 1};
    int64_t d4[2] = {CLASSES, 32};
    qweight(&b, "w1", 4, d1, w->w1, w->b1, p[0].scale, 1);
    qweight(&b, "w2", 4, d2, w->w2, w->b2, p[1].scale, 1);
    qweight(&b, "w3", 4, d3, w->w3, w->b3, p[4].scale, 1);
    qweight(&b, "w4", 2, d4, w->w4, w->b4, p[6].scale, 0);
    int64_t pads[4] = {1, 1, 1, 1};
    mb_node(&b, "QuantizeLinear", "quant_x", "x,x_scale,x_zp", "xq");
    mb_attr_ints(&b,
                 mb_node(&b, "QLinearConv", "conv1",
                         "xq,x_scale,x_zp,w1_q,w1_scale,w1_zp,r1_scale,r1_zp,w1_bias", "r1q"),
                 "pads", 4, pads);
    mb_attr_ints(&b,
                 mb_node(&b, "QLinearConv", "conv2",
                         "r1q,r1_scale,r1_zp,w2_q,w2_scale,w2_zp,r2_scale,r2_zp,w2_bias", "r2q"),
                 "pads", 4, pads);
    mb_domain(&b,
              mb_node(&b, "QLinearAdd", "add", "r1q,r1_scale,r1_zp,r2q,r2_scale,r2_zp,a_scale,a_zp",
                      "aq"),
              "com.microsoft");
    Onnx__NodeProto *cat = mb_node(&b, "QLinearConcat", "concat",
                                   "k_scale,k_zp,aq,a_scale,a_zp,r1q,r1_scale,r1_zp", "kq");
    mb_domain(&b, cat, "com.microsoft");
    mb_attr_i(&b, cat, "axis", 1);
    mb_node(&b, "QLinearConv", "conv3",
            "kq,k_scale,k_zp,w3_q,w3_scale,w3_zp,r3_scale,r3_zp,w3_bias", "r3q");
    Onnx__NodeProto *gap =
        mb_node(&b, "QLinearGlobalAveragePool", "gap", "r3q,r3_scale,r3_zp,g_scale,g_zp", "gq");
    mb_domain(&b, gap, "com.microsoft");
    mb_attr_i(&b, gap, "channels_last", 0);
    mb_node(&b, "Flatten", "flatten", "gq", "fq");
    Onnx__NodeProto *gm = mb_node(&b, "QGemm", "fc",
                                  "fq,g_scale,g_zp,w4_q,w4_scale,w4_zp,w4_bias,y_scale,y_zp", "yq");
    mb_domain(&b, gm, "com.microsoft");
    mb_attr_i(&b, gm, "transB", 1);
    mb_node(&b, "DequantizeLinear", "dequant_y", "yq,y_scale,y_zp", "y");
    mb_output(&b, "y", T_FLOAT);
    mb_write(&b, path);
    mb_free(&b);
}

/* ---- the QDQ models (tether quantize) ---- */

static int write_qdq(const float *cal, int uint8_acts, const char *path) {
    tether_model_value v = {
        .dtype = TETHER_FLOAT32, .ndim = 4, .data = cal, .nbytes = sizeof(float) * N * C * H * H};
    memcpy(v.shape, XS, sizeof XS);
    const char *name = "x";
    tether_onnx_qsample s = {.source = "calibration batch", .n = 1, .names = &name, .values = &v};
    tether_onnx_quantize_options o;
    memset(&o, 0, sizeof o);
    o.uint8_activations = uint8_acts;
    o.samples = &s;
    o.nsamples = 1;
    tether_onnx_quantize_result r;
    memset(&r, 0, sizeof r);
    if (tether_onnx_quantize(at("float.onnx"), &o, &r)) {
        fprintf(stderr, "bench_quant: quantize: %s\n", tether_last_error());
        return 1;
    }
    FILE *f = fopen(path, "wb");
    int rc = !f || fwrite(r.model, 1, r.model_len, f) != r.model_len;
    if (f) {
        rc |= fclose(f) != 0;
    }
    tether_onnx_quantize_free(&r);
    return rc;
}

/* The step of the model's output: its DequantizeLinear's scale (0: none). */
static double output_step(const char *path) {
    tether_ir_graph g;
    if (tether_onnx_load(path, NULL, &g)) {
        return 0;
    }
    double step = 0;
    for (int n = 0; n < g.nnodes; n++) {
        const tether_ir_node *nd = &g.nodes[n];
        if (nd->op == TETHER_OP_DEQUANTIZE && nd->outputs[0] == g.outputs[0]) {
            const tether_ir_tensor *s = &g.tensors[nd->inputs[1]];
            step = s->data ? *(const float *)s->data : 0;
        }
    }
    tether_ir_close(&g);
    return step;
}

/* ---- running both ---- */

static int read_bin(const char *path, float *v, size_t n) {
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(v, sizeof(float), n, f) : 0;
    if (f) {
        fclose(f);
    }
    return got == n ? 0 : -1;
}

static int run_tether(const char *model, float *y) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' run '%s' --in '%s' --out '%s' > '%s' 2>&1", TETHER_CLI, model,
             at("x.npy"), at("y_tether.npy"), at("tether.log"));
    if (system(cmd) != 0) {
        fprintf(stderr, "bench_quant: tether run %s failed (%s)\n", model, at("tether.log"));
        return 1;
    }
    tether_npy o;
    if (tether_npy_read(at("y_tether.npy"), &o)) {
        fprintf(stderr, "bench_quant: %s\n", tether_last_error());
        return 1;
    }
    int rc = o.nbytes == sizeof(float) * N * CLASSES ? 0 : 1;
    if (!rc) {
        memcpy(y, o.data, o.nbytes);
    }
    tether_npy_free(&o);
    return rc;
}

static int run_ort(const char *ort_dir, const char *model, float *y) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "ORT_DIR='%s' node '%s/ort_quant.js' '%s' '%s' %dx%dx%dx%d '%s'",
             ort_dir, TETHER_BENCH_DIR, model, at("x.bin"), N, C, H, H, at("y_ort.bin"));
    if (system(cmd) != 0) {
        fprintf(stderr, "bench_quant: ONNX Runtime on %s failed\n", model);
        return 1;
    }
    return read_bin(at("y_ort.bin"), y, N * CLASSES);
}

static void argmax_rows(const float *y, int *cls) {
    for (int r = 0; r < N; r++) {
        int best = 0;
        for (int c = 1; c < CLASSES; c++) {
            best = y[r * CLASSES + c] > y[r * CLASSES + best] ? c : best;
        }
        cls[r] = best;
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_quant ORT_DIR [OUT_DIR]\n");
        return 2;
    }
    const char *ort_dir = argv[1];
    snprintf(g_out, sizeof g_out, "%s", argc > 2 ? argv[2] : TETHER_BINARY_DIR "/bench/quant/out");
    mkdir(g_out, 0755);
    tether_onnx_register();
    static weights w;
    make_weights(&w);
    static float cal[N * C * H * H], x[N * C * H * H];
    fill(cal, N * C * H * H, 1.0f);
    fill(x, N * C * H * H, 1.0f);
    write_float(&w, at("float.onnx"), 0);
    float lo[8], hi[8];
    if (act_ranges(&w, cal, lo, hi)) {
        return 1;
    }
    write_qop(&w, lo, hi, at("qop_u8.onnx"));
    g_qmax = 64;
    write_qop(&w, lo, hi, at("qop_u8_rr.onnx"));
    if (write_qdq(cal, 0, at("qdq_s8.onnx")) || write_qdq(cal, 1, at("qdq_u8.onnx"))) {
        return 1;
    }
    if (tether_npy_write(at("x.npy"), TETHER_FLOAT32, XS, 4, x)) {
        fprintf(stderr, "bench_quant: %s\n", tether_last_error());
        return 1;
    }
    FILE *f = fopen(at("x.bin"), "wb");
    if (!f || fwrite(x, sizeof x, 1, f) != 1 || fclose(f)) {
        fprintf(stderr, "bench_quant: cannot write %s\n", at("x.bin"));
        return 1;
    }
    static float yf[N * CLASSES], yt[N * CLASSES], yo[N * CLASSES];
    int cf[N], ct[N], co[N];
    if (run_ort(ort_dir, at("float.onnx"), yf)) {
        return 1;
    }
    argmax_rows(yf, cf);
    const char *models[4] = {"qdq_s8", "qdq_u8", "qop_u8", "qop_u8_rr"};
    const char *forms[4] = {
        "QDQ, int8 activations, per-channel int8 weights",
        "QDQ, uint8 activations, per-channel int8 weights",
        "QOperator (QLinearConv, com.microsoft QLinearAdd/Concat/GAP, QGemm), uint8",
        "the same QOperator model with reduce_range (7-bit weights)"};
    printf("%d x %d outputs per model (batch %d, %d classes); ONNX Runtime: onnxruntime-node\n", N,
           CLASSES, N, CLASSES);
    printf("%-9s %10s %10s %14s %12s %14s %14s  %s\n", "model", "step", "max steps",
           "within 1 step", "exact", "top-1 vs ORT", "ORT vs float", "form");
    int status = 0, ort_off = 0;
    for (int m = 0; m < 4; m++) {
        char file[64];
        snprintf(file, sizeof file, "%s.onnx", models[m]);
        const char *p = at(file);
        double step = output_step(p);
        if (run_tether(p, yt) || run_ort(ort_dir, p, yo) || !(step > 0)) {
            status = 1;
            continue;
        }
        int within = 0, exact = 0, agree = 0, agree_f = 0;
        double maxs = 0, tf = 0, of = 0;
        for (int i = 0; i < N * CLASSES; i++) {
            tf = fmax(tf, fabs((double)yt[i] - (double)yf[i]) / step);
            of = fmax(of, fabs((double)yo[i] - (double)yf[i]) / step);
            double s = fabs((double)yt[i] - (double)yo[i]) / step;
            within += s <= 1 + 1e-3;
            exact += s < 1e-3;
            maxs = s > maxs ? s : maxs;
        }
        argmax_rows(yt, ct);
        argmax_rows(yo, co);
        for (int r = 0; r < N; r++) {
            agree += ct[r] == co[r];
            agree_f += co[r] == cf[r];
        }
        double pct = 100.0 * within / (N * CLASSES);
        printf("%-9s %10.5f %10.2f %13.2f%% %11.2f%% %11d/%d %11d/%d  %s\n", models[m], step, maxs,
               pct, 100.0 * exact / (N * CLASSES), agree, N, agree_f, N, forms[m]);
        printf("%-9s max |difference| to the float model: tether %.1f steps, ONNX Runtime %.1f "
               "steps\n",
               "", tf, of);
        int met = pct >= 99.0 && agree == N;
        if (!met && of > tf + 1) { /* ORT is the one away from the float model */
            printf("%-9s goal not met, and ONNX Runtime is the farther from the float model "
                   "(its u8s8 kernels without VNNI saturate int16 sums; reduce_range avoids it)\n",
                   "");
            ort_off++;
        } else if (!met) {
            status = 1;
        }
    }
    printf("goal: >= 99%% of elements within one step and the same top-1 as ONNX Runtime: %s\n",
           status    ? "NOT MET"
           : ort_off ? "met where ONNX Runtime computes exactly"
                     : "met");
    return status;
}
