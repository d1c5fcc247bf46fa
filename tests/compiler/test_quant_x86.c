/*
 * The x86-64 AVX2 qconv, qmatmul, qadd and qmul kernels (emit_c_qx86.c, emit_c_qc1_x86.c,
 * emit_c_qdw2_x86.c, emit_c_qdwc_x86.c, emit_c_qmm_x86.c, emit_c_qelt_x86.c; docs/quantization.md
 * "Kernels") against the portable ones: QDQ matmuls (3-D A, odd K, partial column blocks, Gemm with
 * transB and a bias), convolutions (pointwise, general, strided, 1 to 3 input channels, depthwise
 * with padding and stride 1 or 2, pointwise on planes of few pixels, odd channel counts, int8 and
 * uint8 activations with zero points, per-channel weights, ReLU as a clamp, row dilation) and
 * qadd/qmul of two 8-bit tensors, compiled for x86-64-v3 (the AVX2 path) and for the baseline (the
 * portable #else), both run here; outputs must be equal byte for byte to each other and to the
 * reference interpreter (inputs with NaN, infinities, saturating values and rounding ties for the
 * input quantize). The generated C must hold the AVX2 path, and must also compile with -mavx512vnni
 * -mavx512vl (the VPDPWSSD variant; compiled only: this machine has no VNNI to run it).
 *
 * What must stay true: a host without AVX2 still runs the portable build and the compile checks
 * (the AVX2 run is skipped, said so on stderr); every temporary file lives under the build tree.
 */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

typedef struct qcase {
    const char *name;
    int C, O, H, W, KH, KW, S, pt, pl, pb, pr, G, u8, xz, relu;
    int mm; /* 1: matmul of x [2, H, C] by w [C, O]; 2: dense x [H, C], w [O, C] (transB), bias;
             * 5: attention scores, x [H, C] by x^T quantized again (B an activation) */
    int dh; /* the row dilation (0: 1) */
} qcase;

static int konst(tether_ir_graph *g, const char *name, DLDataType t, int ndim, const int64_t *shape,
                 const void *v, size_t bytes) {
    int idx = -1;
    assert_int_equal(tether_ir_add_constant(g, name, t, ndim, shape, v, bytes, &idx), 0);
    return idx;
}

static int tensor(tether_ir_graph *g, const char *name) {
    int idx = -1;
    assert_int_equal(tether_ir_add_tensor(g, name, TETHER_FLOAT32, -1, NULL, &idx), 0);
    return idx;
}

static void node(tether_ir_graph *g, const char *name, tether_op op, const int *in, int nin,
                 int out, const tether_ir_attrs *a) {
    assert_int_equal(tether_ir_add_node(g, name, op, in, nin, &out, 1, a, NULL), 0);
}

static uint32_t next(uint32_t *s) {
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/* mm 3 / 4: x [H, C] quantized twice (two scales and zero points) -> DQ, DQ -> add / mul -> Q ->
 * DQ: the integer pass makes it one qadd / qmul of two 8-bit tensors (emit_c_qelt_x86.c) */
static void build_elt(tether_ir_graph *g, const qcase *c) {
    int64_t sx[2] = {c->H, c->C}, one = 1;
    int x;
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 2, sx, &x), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    DLDataType at = c->u8 ? TETHER_UINT8 : TETHER_INT8;
    float s1 = 0.03f, s2 = 0.011f, ys = c->mm == 3 ? 0.05f : 0.02f;
    uint8_t z1u = (uint8_t)c->xz, z2u = 17, yzu = 120;
    int8_t z1s = (int8_t)c->xz, z2s = -9, yzs = 5;
    const int u = c->u8;
    int cs1 = konst(g, "s1", TETHER_FLOAT32, 1, &one, &s1, 4),
        cs2 = konst(g, "s2", TETHER_FLOAT32, 1, &one, &s2, 4),
        cys = konst(g, "ys", TETHER_FLOAT32, 1, &one, &ys, 4),
        cz1 = konst(g, "z1", at, 1, &one, u ? (const void *)&z1u : (const void *)&z1s, 1),
        cz2 = konst(g, "z2", at, 1, &one, u ? (const void *)&z2u : (const void *)&z2s, 1),
        cyz = konst(g, "yz", at, 1, &one, u ? (const void *)&yzu : (const void *)&yzs, 1);
    int q1 = tensor(g, "q1"), q2 = tensor(g, "q2"), d1 = tensor(g, "d1"), d2 = tensor(g, "d2"),
        y = tensor(g, "y"), yq = tensor(g, "yq"), out = tensor(g, "out");
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_QUANTIZE, &a);
    a.to = at;
    node(g, "q1", TETHER_OP_QUANTIZE, (int[]){x, cs1, cz1}, 3, q1, &a);
    node(g, "q2", TETHER_OP_QUANTIZE, (int[]){x, cs2, cz2}, 3, q2, &a);
    node(g, "qy", TETHER_OP_QUANTIZE, (int[]){y, cys, cyz}, 3, yq, &a);
    node(g, "d1", TETHER_OP_DEQUANTIZE, (int[]){q1, cs1, cz1}, 3, d1, NULL);
    node(g, "d2", TETHER_OP_DEQUANTIZE, (int[]){q2, cs2, cz2}, 3, d2, NULL);
    node(g, "op", c->mm == 3 ? TETHER_OP_ADD : TETHER_OP_MUL, (int[]){d1, d2}, 2, y, NULL);
    node(g, "dqy", TETHER_OP_DEQUANTIZE, (int[]){yq, cys, cyz}, 3, out, NULL);
    assert_int_equal(tether_ir_add_output(g, out), 0);
    assert_int_equal(tether_ir_infer(g), 0);
}

/* x -> Q -> DQ -> conv(DQ(w per channel), bias) [-> relu] -> Q -> DQ -> y (or matmul / dense) */
static void build(tether_ir_graph *g, const qcase *c) {
    assert_int_equal(tether_ir_init(g, c->name), 0);
    if (c->mm == 3 || c->mm == 4) {
        build_elt(g, c);
        return;
    }
    int64_t sx[4] = {1, c->C, c->H, c->W}, sw[4] = {c->O, c->C / c->G, c->KH, c->KW}, so = c->O,
            one = 1;
    int x, nx = 4, nw4 = 4;
    if (c->mm == 1) {
        sx[0] = 2, sx[1] = c->H, sx[2] = c->C, nx = 3;
        sw[0] = c->C, sw[1] = c->O, nw4 = 2;
    } else if (c->mm == 2 || c->mm == 5) {
        sx[0] = c->H, sx[1] = c->C, nx = 2;
        sw[0] = c->O, sw[1] = c->C, nw4 = 2;
    }
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, nx, sx, &x), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    size_t nw = (size_t)(c->O * (c->C / c->G) * (c->mm ? 1 : c->KH * c->KW));
    int8_t *w = malloc(nw), wz[256] = {0};
    float ws[256], b[256], xs = 0.03f, ys = 0.07f;
    uint32_t seed = 11;
    for (size_t i = 0; i < nw; i++) {
        w[i] = (int8_t)((int)(next(&seed) % 255) - 127);
    }
    for (int o = 0; o < c->O; o++) {
        wz[o] = (int8_t)(c->mm == 1 && c->u8 ? o % 3 - 1 : 0); /* B - b_zp as int16 pairs */
        ws[o] = 0.001f + 0.0001f * (float)(next(&seed) % 50);
        b[o] = (float)((int)(next(&seed) % 200) - 100) * 0.01f;
    }
    DLDataType at = c->u8 ? TETHER_UINT8 : TETHER_INT8;
    uint8_t xzu = (uint8_t)c->xz, yzu = 120;
    int8_t xzs = (int8_t)c->xz, yzs = -7;
    const void *xzp = c->u8 ? (const void *)&xzu : (const void *)&xzs,
               *yzp = c->u8 ? (const void *)&yzu : (const void *)&yzs;
    int cxs = konst(g, "xs", TETHER_FLOAT32, 1, &one, &xs, 4),
        cxz = konst(g, "xz", at, 1, &one, xzp, 1), cw = konst(g, "w", TETHER_INT8, nw4, sw, w, nw),
        cws = konst(g, "ws", TETHER_FLOAT32, 1, &so, ws, 4 * (size_t)c->O),
        cwz = konst(g, "wz", TETHER_INT8, 1, &so, wz, (size_t)c->O),
        cb = konst(g, "b", TETHER_FLOAT32, 1, &so, b, 4 * (size_t)c->O),
        cys = konst(g, "ys", TETHER_FLOAT32, 1, &one, &ys, 4),
        cyz = konst(g, "yz", at, 1, &one, yzp, 1);
    free(w);
    int xq = tensor(g, "xq"), xd = tensor(g, "xd"), wd = tensor(g, "wd"), y = tensor(g, "y"),
        yr = c->relu ? tensor(g, "yr") : y, yq = tensor(g, "yq"), out = tensor(g, "out");
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_QUANTIZE, &a);
    a.to = at;
    node(g, "qx", TETHER_OP_QUANTIZE, (int[]){x, cxs, cxz}, 3, xq, &a);
    node(g, "dqx", TETHER_OP_DEQUANTIZE, (int[]){xq, cxs, cxz}, 3, xd, NULL);
    tether_ir_attrs_init(TETHER_OP_DEQUANTIZE, &a);
    a.axis = c->mm == 1 ? 1 : 0;
    node(g, "dqw", TETHER_OP_DEQUANTIZE, (int[]){cw, cws, cwz}, 3, wd, &a);
    if (c->mm == 1) {
        node(g, "mm", TETHER_OP_MATMUL, (int[]){xd, wd}, 2, y, NULL);
    } else if (c->mm == 5) { /* B: x^T quantized with its own scale and zero point */
        uint8_t bzu = 131;
        int8_t bzs = 5;
        float bs = 0.021f;
        int cbs = konst(g, "bs", TETHER_FLOAT32, 1, &one, &bs, 4),
            cbz = konst(g, "bz", at, 1, &one, c->u8 ? (const void *)&bzu : (const void *)&bzs, 1);
        int xt = tensor(g, "xt"), bq = tensor(g, "bq"), bd = tensor(g, "bd");
        tether_ir_attrs_init(TETHER_OP_TRANSPOSE, &a);
        a.ints[0] = 1;
        a.ints[1] = 0;
        a.nints = 2;
        node(g, "xt", TETHER_OP_TRANSPOSE, &xd, 1, xt, &a);
        tether_ir_attrs_init(TETHER_OP_QUANTIZE, &a);
        a.to = at;
        node(g, "qb", TETHER_OP_QUANTIZE, (int[]){xt, cbs, cbz}, 3, bq, &a);
        node(g, "dqb", TETHER_OP_DEQUANTIZE, (int[]){bq, cbs, cbz}, 3, bd, NULL);
        node(g, "scores", TETHER_OP_MATMUL, (int[]){xd, bd}, 2, y, NULL);
    } else if (c->mm == 2) {
        tether_ir_attrs_init(TETHER_OP_DENSE, &a);
        a.trans_b = 1;
        node(g, "gemm", TETHER_OP_DENSE, (int[]){xd, wd, cb}, 3, y, &a);
    }
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.pads[0] = c->pt;
    a.pads[1] = c->pl;
    a.pads[2] = c->pb;
    a.pads[3] = c->pr;
    a.strides[0] = a.strides[1] = c->S;
    a.dilations[0] = c->dh ? c->dh : 1;
    a.groups = c->G;
    if (!c->mm) {
        node(g, "conv", TETHER_OP_CONV2D, (int[]){xd, wd, cb}, 3, y, &a);
    }
    if (c->relu) {
        node(g, "relu", TETHER_OP_RELU, &y, 1, yr, NULL);
    }
    tether_ir_attrs_init(TETHER_OP_QUANTIZE, &a);
    a.to = at;
    node(g, "qy", TETHER_OP_QUANTIZE, (int[]){yr, cys, cyz}, 3, yq, &a);
    node(g, "dqy", TETHER_OP_DEQUANTIZE, (int[]){yq, cys, cyz}, 3, out, NULL);
    assert_int_equal(tether_ir_add_output(g, out), 0);
    assert_int_equal(tether_ir_infer(g), 0);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

/* Compiles the case for cpu (NULL: the baseline) and runs it on x into y (unless run is 0). */
static void compile_run(const qcase *c, const char *cpu, const char *tag, const float *x, float *y,
                        int run, char *src, size_t srcn) {
    tether_ir_graph g;
    build(&g, c);
    char dir[1024], lib[1200], prefix[64], sym[80];
    snprintf(dir, sizeof dir, "%s/tests/compiler/tmp", TETHER_BINARY_DIR);
    mkdir(dir, 0755);
    snprintf(dir, sizeof dir, "%s/tests/compiler/tmp/qx86-%s-%s", TETHER_BINARY_DIR, c->name, tag);
    snprintf(prefix, sizeof prefix, "qx%s", tag);
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.codegen.prefix = prefix;
    o.build.cpu = cpu;
    if (tether_compile_graph(&g, dir, &o, NULL) != 0) {
        fail_msg("%s (%s): %s", c->name, tag, tether_error_detail());
    }
    tether_ir_close(&g);
    snprintf(src, srcn, "%s/%s.c", dir, prefix);
    if (!run) {
        return;
    }
    snprintf(lib, sizeof lib, "%s/lib%s.so", dir, prefix);
    snprintf(sym, sizeof sym, "%s_main", prefix);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    int32_t (*fn)(const float *, float *) = (int32_t(*)(const float *, float *))dlsym(h, sym);
    assert_non_null(fn);
    assert_int_equal(fn(x, y), 0);
    dlclose(h);
}

static void check(const qcase *c, int vnni) {
    size_t nx = (size_t)(c->C * c->H * c->W);
    int OH = (c->H + c->pt + c->pb - ((c->KH - 1) * (c->dh ? c->dh : 1) + 1)) / c->S + 1,
        OW = (c->W + c->pl + c->pr - c->KW) / c->S + 1;
    size_t ny = (size_t)(c->O * OH * OW);
    if (c->mm) {
        nx = (size_t)(c->mm == 1 ? 2 : 1) * (size_t)(c->H * c->C);
        ny = (size_t)(c->mm == 1 ? 2 : 1) * (size_t)(c->H * (c->mm == 5   ? c->H
                                                             : c->mm >= 3 ? c->C
                                                                          : c->O));
    }
    float *x = malloc(nx * 4), *ref = malloc(ny * 4), *base = malloc(ny * 4), *avx = malloc(ny * 4);
    uint32_t seed = 5;
    for (size_t i = 0; i < nx; i++) { /* a range past the int8 one: saturated inputs too */
        x[i] = ((float)(next(&seed) % 20001) / 10000.0f - 1.0f) * 4.5f;
    }
    /* the input quantize's edge cases (emit_c_qdq_x86.c against the scalar loop): NaN (zero
     * point), infinities and values far past the range (saturated), signed zeros, halves of the
     * input step (round half to even) */
    static const float special[] = {NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 0.0f, -0.0f};
    for (size_t i = 0; i < nx && i < 80; i += 2) {
        x[i] = i / 2 < 7 ? special[i / 2] : ((float)((int)(i / 2) - 20) + 0.5f) * 0.03f;
    }
    /* the reference interpreter on the passed graph (the integer operators) */
    tether_ir_graph g;
    build(&g, c);
    tether_pass_options po;
    tether_pass_options_init(&po);
    assert_int_equal(tether_passes_run(&g, &po), 0);
    int nq = 0;
    for (int i = 0; i < g.nnodes; i++) {
        nq += g.nodes[i].op == (c->mm == 3   ? TETHER_OP_QADD
                                : c->mm == 4 ? TETHER_OP_QMUL
                                : c->mm      ? TETHER_OP_QMATMUL
                                             : TETHER_OP_QCONV);
    }
    assert_int_equal(nq, 1);
    const float *in[1] = {x};
    float *out[1] = {ref};
    assert_int_equal(tether_interp_run(&g, in, out), 0);
    tether_ir_close(&g);
    char src[1300];
    compile_run(c, NULL, "base", x, base, 1, src, sizeof src);
    assert_memory_equal(base, ref, ny * 4);
    __builtin_cpu_init();
    int have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    compile_run(c, "x86-64-v3", "avx2", x, avx, have, src, sizeof src);
    if (have) {
        assert_memory_equal(avx, ref, ny * 4);
    } else {
        fprintf(stderr, "%s: no AVX2 here: the AVX2 build compiled, not run\n", c->name);
    }
    char *s = slurp(src);
    assert_non_null(strstr(s, "#if defined(__AVX2__)"));
    if (c->mm == 3 || c->mm == 4) { /* emit_c_qelt_x86.c's loop */
        assert_non_null(strstr(s, "tgq_rnd4(pe, nv, lo, hi)"));
    } else {
        assert_non_null(strstr(s, "_mm256_madd_epi16"));
        assert_true(strstr(s, "tgq_rq8(") || strstr(s, "tgq_rq8k(")); /* vector requantization */
    }
    assert_non_null(strstr(s, "_mm256_round_ps("));    /* emit_c_qdq_x86.c's quantize */
    assert_non_null(strstr(s, "_mm256_cvtepi32_ps(")); /* and dequantize */
    if (c->mm == 1 || c->mm == 2 || c->mm == 5) {
        assert_non_null(strstr(s, "apk[")); /* emit_c_qmm_x86.c's kernel */
    }
    if (strncmp(c->name, "pwc_", 4) == 0 || strcmp(c->name, "pw_odd") == 0) {
        assert_non_null(strstr(s, "int32_t xp[")); /* emit_c_qpw_x86.c's kernel */
    }
    if (strcmp(c->name, "pw_overlap") == 0) {
        assert_non_null(strstr(s, "const int p0 = pt + 16 > 125 ? 109 : pt;"));
        assert_null(strstr(s, "ok = p < 125")); /* no scalar pack */
    }
    if (c->mm == 5) { /* B packed at run time */
        assert_non_null(strstr(s, "B - b_zp as int16 pairs"));
    }
    if (strncmp(c->name, "conv3_rows", 10) == 0) {
        assert_non_null(strstr(s, "int32_t rows[")); /* the row kernel */
        /* with several channel pairs its 8 accumulators are pinned to registers (gcc 12 kept
         * one on the stack: unet_small's 16->16 and 32->32 layers ran slower than float32) */
        assert_non_null(strstr(s, "__asm__(\"\" : \"+x\"(a00), \"+x\"(a01)"));
    }
    if (strncmp(c->name, "c1_", 3) == 0) { /* emit_c_qc1_x86.c's kernel */
        assert_non_null(strstr(s, "int16_t pl["));
        assert_non_null(strstr(s, "const int16_t *restrict pt = pl + tf[t];"));
        /* its 8 accumulators pinned to registers (gcc 12 kept one on the stack) */
        assert_non_null(strstr(s, "\"+x\"(a6), \"+x\"(a7));"));
    }
    if (strncmp(c->name, "dwrow_", 6) == 0) { /* emit_c_qx86.c's depthwise row kernel */
        assert_non_null(strstr(s, "for (int ot = "));
        assert_null(strstr(s, "const int16_t *restrict pr = pl + oh * "));
        assert_null(strstr(s, "the plane, zero-bordered, and zeros past it"));
    }
    /* the flat kernel */
    if (strcmp(c->name, "dw3_s1") == 0 || strcmp(c->name, "dw3_narrow") == 0) {
        assert_non_null(strstr(s, "the plane, zero-bordered, and zeros past it"));
    }
    if (strncmp(c->name, "dwc_", 4) == 0) { /* emit_c_qdwc_x86.c's kernel */
        assert_non_null(strstr(s, "x - xz, pixel-major"));
        /* with the round-half-up requantization: these weights, biases and multipliers rule
         * every tie out (emit_c_qrq_x86.c); the bytes are checked above */
        assert_true(strstr(s, "tgq_rq8h(al, ") || strstr(s, "tgq_rq8hs(al, "));
    }
    if (strncmp(c->name, "dw2_", 4) == 0 || strcmp(c->name, "dw3_s2_tf") == 0) {
        /* emit_c_qdw2_x86.c's kernel */
        assert_non_null(strstr(s, "const int16_t *restrict pr = pl + oh * "));
    }
    free(s);
    /* the VNNI variant compiles (gcc with -mavx512vnni; not run: no VNNI CPU here) */
    char cmd[3000];
    if (!vnni) {
        free(x);
        free(ref);
        free(base);
        free(avx);
        return;
    }
    snprintf(cmd, sizeof cmd,
             "gcc -std=c99 -O1 -Wall -Werror -march=x86-64-v3 -mavx512f -mavx512vl -mavx512vnni "
             "-fPIC -c '%s' -o '%s.vnni.o' 2>&1",
             src, src);
    assert_int_equal(system(cmd), 0);
    free(x);
    free(ref);
    free(base);
    free(avx);
}

static void test_cases(void **state) {
    (void)state;
    static const qcase cases[] = {
        /* name, C, O, H, W, KH, KW, S, pt, pl, pb, pr, G, u8, xz, relu */
        {"pw_odd", 7, 9, 5, 5, 1, 1, 1, 0, 0, 0, 0, 1, 0, 3, 1, 0, 0},
        {"pw_full", 6, 5, 8, 8, 1, 1, 1, 0, 0, 0, 0, 1, 0, 3, 1, 0, 0},
        {"conv3_s2", 5, 6, 9, 11, 3, 3, 2, 1, 1, 1, 1, 1, 1, 128, 1, 0, 0},
        {"conv_10x4", 1, 8, 20, 10, 10, 4, 2, 4, 1, 5, 2, 1, 0, -4, 1, 0, 0},
        {"dw3_s1", 3, 3, 6, 37, 3, 3, 1, 1, 1, 1, 1, 3, 0, -2, 1, 0, 0},
        {"dw3_s2_tf", 2, 2, 8, 70, 3, 3, 2, 0, 0, 1, 1, 2, 1, 97, 0, 0, 0},
        {"dw5_s1", 3, 3, 7, 40, 5, 5, 1, 2, 2, 2, 2, 3, 0, 5, 0, 0, 0},
        /* narrow planes: the flat zero-bordered depthwise kernel (asymmetric pads, uint8) */
        {"dw3_narrow", 4, 4, 25, 5, 3, 3, 1, 1, 1, 1, 1, 4, 0, -3, 1, 0, 0},
        {"dw5_asym_u8", 3, 3, 9, 9, 5, 5, 1, 2, 1, 0, 2, 3, 1, 100, 0, 0, 0},
        /* stride 1, one group: the row kernel (odd C, a partial tile and channel block; uint8
         * with asymmetric pads) */
        {"conv3_rows", 5, 6, 7, 37, 3, 3, 1, 1, 1, 1, 1, 1, 0, -3, 1, 0, 0},
        {"conv3_rows_u8", 4, 8, 6, 20, 3, 3, 1, 0, 2, 1, 0, 1, 1, 100, 0, 0, 0},
        /* qmatmul (emit_c_qmm_x86.c): odd K, partial column blocks, a row tail; R = 1 */
        {"mm3d", 37, 21, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 3, 1, 1, 0},
        {"mm_u8", 130, 40, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 128, 0, 1, 0},
        {"gemm_tb", 64, 12, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, -5, 1, 2, 0},
        /* activation x activation qmatmul (attention scores): odd K, a partial column block;
         * uint8 with zero points 128 and 131, K even, full blocks */
        {"mm_act", 37, 0, 21, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 3, 0, 5, 0},
        {"mm_act_u8", 64, 0, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 128, 0, 5, 0},
        /* one input channel (emit_c_qc1_x86.c): stride 1 and 2, odd widths, a partial pixel block,
         * 8, 13 and 64 output channels, odd and even window widths, row dilation, uint8 */
        {"c1_s1", 1, 13, 9, 7, 3, 3, 1, 1, 1, 1, 1, 1, 0, 5, 1, 0, 0},
        {"c1_s2_64_u8", 1, 64, 21, 9, 10, 4, 2, 4, 1, 5, 2, 1, 1, 100, 0, 0, 0},
        {"c1_k5_dil", 1, 8, 15, 11, 5, 5, 2, 2, 2, 2, 2, 1, 0, -3, 0, 0, 2},
        /* 2 and 3 input channels (an RGB first layer; stride 1 with rows under 16) */
        {"c1_c3_s2", 3, 8, 13, 11, 3, 3, 2, 1, 1, 1, 1, 1, 0, 2, 1, 0, 0},
        {"c1_c2_s1_u8", 2, 9, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 100, 0, 0, 0},
        /* depthwise, column stride 2 (emit_c_qdw2_x86.c): rows narrower than 8, a last step moved
         * back (12 wide), TF-style pads, a 5x5 window with row dilation, uint8 */
        {"dw2_small", 6, 6, 6, 6, 3, 3, 2, 1, 1, 1, 1, 6, 0, 4, 1, 0, 0},
        {"dw2_12_u8", 5, 5, 24, 24, 3, 3, 2, 0, 0, 1, 1, 5, 1, 120, 0, 0, 0},
        {"dw2_k5_dil", 3, 3, 13, 19, 5, 5, 2, 2, 2, 2, 2, 3, 0, -1, 1, 0, 2},
        /* stride-1 depthwise on a plane past the flat kernel's 8,192 values: the row kernel */
        {"dwrow_wide", 2, 2, 40, 230, 3, 3, 1, 1, 1, 1, 1, 2, 0, -2, 1, 0, 0},
        /* qadd / qmul of two 8-bit tensors (emit_c_qelt_x86.c): a tail past the 8-element steps,
         * int8 and uint8 */
        {"qadd_s8", 13, 0, 7, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 3, 0, 3, 0},
        {"qadd_u8", 16, 0, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 128, 0, 3, 0},
        {"qmul_s8", 13, 0, 7, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, -4, 0, 4, 0},
        {"qmul_u8", 9, 0, 9, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 100, 0, 4, 0},
        /* pointwise on planes 16-pixel tiles fit badly (emit_c_qpw_x86.c, vectorised over output
         * channels): 3 blocks of 8 (the last partial), a pixel tail, P under 4, uint8 */
        {"pwc_3x3_u8", 13, 20, 3, 3, 1, 1, 1, 0, 0, 0, 0, 1, 1, 100, 0, 0, 0},
        {"pwc_6x6", 32, 17, 6, 6, 1, 1, 1, 0, 0, 0, 0, 1, 0, -3, 1, 0, 0},
        {"pwc_1x2", 5, 8, 1, 2, 1, 1, 1, 0, 0, 0, 0, 1, 0, 7, 1, 0, 0},
        /* more stride-2 depthwise (emit_c_qdw2_x86.c): TF-style pads (bottom/right only), odd
         * sizes with symmetric pads, a 5x5 window with uneven pads, uint8, wide rows */
        {"dw2_tf", 5, 5, 24, 24, 3, 3, 2, 0, 0, 1, 1, 5, 0, -3, 1, 0, 0},
        {"dw2_odd", 3, 3, 7, 9, 3, 3, 2, 1, 1, 1, 1, 3, 0, 4, 1, 0, 0},
        {"dw2_k5_u8", 2, 2, 11, 20, 5, 5, 2, 2, 2, 2, 1, 2, 1, 90, 0, 0, 0},
        {"dw2_wide_pl1", 3, 3, 9, 75, 3, 3, 2, 1, 1, 1, 1, 3, 0, -9, 1, 0, 0}, /* vector split */
        /* depthwise on planes past the flat kernel's 8,192 values (stride 1) and
         * emit_c_qdw2_x86.c's 64 KiB (stride 2): the row tiles with their scalar borders */
        {"dwrow_s1", 2, 2, 100, 90, 3, 3, 1, 1, 1, 1, 1, 2, 0, -3, 1, 0, 0},
        {"dwrow_s2", 2, 2, 190, 191, 3, 3, 2, 1, 1, 1, 1, 2, 1, 60, 0, 0, 0},
        /* pointwise, 125 pixels: the last 16-pixel tile moved back over the one before */
        {"pw_overlap", 9, 6, 5, 25, 1, 1, 1, 0, 0, 0, 0, 1, 0, -6, 1, 0, 0},
        /* depthwise with channels in the lanes (emit_c_qdwc_x86.c): DS-CNN's 25x5 with a partial
         * block of 16 channels, stride 2 to a 3x3 plane (under 16 pixels; uint8), a 3x3 input
         * plane, a 5x5 window with row dilation and uneven pads */
        {"dwc_25x5", 20, 20, 25, 5, 3, 3, 1, 1, 1, 1, 1, 20, 0, -3, 1, 0, 0},
        {"dwc_s2_u8", 32, 32, 6, 6, 3, 3, 2, 1, 1, 1, 1, 32, 1, 100, 0, 0, 0},
        {"dwc_3x3", 16, 16, 3, 3, 3, 3, 1, 1, 1, 1, 1, 16, 0, 5, 1, 0, 0},
        {"dwc_k5_dil", 17, 17, 9, 7, 5, 5, 1, 2, 1, 2, 3, 17, 0, -1, 0, 0, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        check(&cases[i], i == 1 || i == 5 || i == 6 || i == 8 || i == 10 || i == 15 || i == 20 ||
                             i == 28 || strcmp(cases[i].name, "dwc_25x5") == 0);
    }
}

/* The driver of test_rq8k: tgq_rq8k (8 lanes, each its own multiplier and shift) against the
 * scalar tgq_requant of the module it includes, on edge, tie and random accumulators, every
 * shift in -31..-1, multipliers of every size and sign, with and without a clamp; returns the
 * number of lanes that differ (0) and how many it checked. */
static const char rq_driver[] =
    "static unsigned tgq_t_s = 7u;\n"
    "static uint32_t tgq_t_next(void) {\n"
    "    tgq_t_s = tgq_t_s * 1664525u + 1013904223u;\n"
    "    return tgq_t_s ^ (tgq_t_s >> 15);\n"
    "}\n"
    "long long tgq_t_run(long long *checked) {\n"
    "    static const int32_t edge[] = {INT32_MIN, INT32_MIN + 1, -65536, -3, -2, -1, 0, 1, 2, 3,\n"
    "                                   65535, INT32_MAX - 1, INT32_MAX};\n"
    "    long long bad = 0, n = 0;\n"
    "    for (int it = 0; it < 200000; it++) {\n"
    "        int32_t acc[8], m[8], s[8], nn[8];\n"
    "        for (int i = 0; i < 8; i++) {\n"
    "            const uint32_t r = tgq_t_next(), kind = tgq_t_next() % 8;\n"
    "            s[i] = -1 - (int32_t)(tgq_t_next() % 31);\n"
    "            nn[i] = 31 - s[i];\n"
    "            if (kind == 0) {\n"
    "                m[i] = (int32_t)tgq_t_next();\n"
    "            } else if (kind == 1) {\n"
    "                m[i] = (int32_t)(tgq_t_next() % 4 == 0 ? 0x7fffffffu : 0x80000000u);\n"
    "            } else {\n"
    "                m[i] = (int32_t)(0x40000000u | (tgq_t_next() & 0x3fffffffu));\n"
    "            }\n"
    "            if (kind >= 5) { /* multipliers with trailing zeros and their ties */\n"
    "                const int tz = (int)(tgq_t_next() % 31);\n"
    "                m[i] = (int32_t)((uint32_t)m[i] & ~((1u << tz) - 1u)) | (int32_t)(1u << 30);\n"
    "            }\n"
    "            int tz = 0;\n"
    "            while (tz < 31 && !((uint32_t)m[i] >> tz & 1u)) {\n"
    "                tz++;\n"
    "            }\n"
    "            const int e = nn[i] - 1 - tz; /* acc = odd * 2^e: acc * m a tie */\n"
    "            if (kind >= 4 && e >= 0 && e <= 30) {\n"
    "                acc[i] = (int32_t)(((r | 1u) << e)) + (int32_t)(tgq_t_next() % 3) - 1;\n"
    "            } else if (kind == 3) {\n"
    "                acc[i] = edge[r % (sizeof edge / sizeof *edge)];\n"
    "            } else {\n"
    "                acc[i] = (int32_t)(r >> (tgq_t_next() % 32));\n"
    "                acc[i] = tgq_t_next() & 1u ? acc[i] : -acc[i];\n"
    "            }\n"
    "        }\n"
    "        const int clamp = it % 3 == 0;\n"
    "        const int32_t zp = clamp ? (int32_t)(tgq_t_next() % 256) - 128 : 0;\n"
    "        const int32_t lo = clamp ? -128 : INT32_MIN, hi = clamp ? 127 : INT32_MAX;\n"
    "        int32_t ev[4] = {nn[0], nn[2], nn[4], nn[6]}, ov[4] = {nn[1], nn[3], nn[5], nn[7]};\n"
    "        int32_t out[8];\n"
    "        const __m256i v = tgq_rq8k(\n"
    "            _mm256_loadu_si256((const __m256i *)(const void *)acc),\n"
    "            _mm256_loadu_si256((const __m256i *)(const void *)m),\n"
    "            _mm256_cvtepi32_epi64(_mm_loadu_si128((const __m128i *)(const void *)ev)),\n"
    "            _mm256_cvtepi32_epi64(_mm_loadu_si128((const __m128i *)(const void *)ov)),\n"
    "            _mm256_set1_epi64x((long long)lo - (clamp ? zp : 0)),\n"
    "            _mm256_set1_epi64x((long long)hi - (clamp ? zp : 0)), _mm256_set1_epi32(zp));\n"
    "        _mm256_storeu_si256((__m256i *)(void *)out, v);\n"
    "        for (int i = 0; i < 8; i++) {\n"
    "            bad += out[i] != tgq_requant(acc[i], m[i], s[i], zp, lo, hi);\n"
    "            n++;\n"
    "        }\n"
    "    }\n"
    "    *checked = n;\n"
    "    return bad;\n"
    "}\n";

/* The second driver of test_rq8k: tgq_rq8h / tgq_rq8hs (round half up, for nodes whose
 * accumulators cannot make an exact tie: emit_c_qrq_x86.c) against tgq_requant on accumulators
 * within the bound B that proof uses (floor(log2 B) + trailing zeros of m < n - 1): +-B, near-ties
 * (odd multiples of high powers of two, and their neighbours), random values; tgq_rq8hs through the
 * saturating int8 store. Returns the lanes that differ (0) and how many it checked. */
static const char rqh_driver[] =
    "static unsigned tgq_h_s = 11u;\n"
    "static uint32_t tgq_h_next(void) {\n"
    "    tgq_h_s = tgq_h_s * 1664525u + 1013904223u;\n"
    "    return tgq_h_s ^ (tgq_h_s >> 15);\n"
    "}\n"
    "long long tgq_h_run(long long *checked) {\n"
    "    long long bad = 0, n = 0;\n"
    "    for (int it = 0; it < 200000; it++) {\n"
    "        int32_t acc[8], m[8], s[8], nn[8];\n"
    "        for (int i = 0; i < 8; i++) {\n"
    "            s[i] = -1 - (int32_t)(tgq_h_next() % 31);\n"
    "            nn[i] = 31 - s[i];\n"
    "            const int tz = (int)(tgq_h_next() % 8 == 0 ? tgq_h_next() % 31 : tgq_h_next() % "
    "4);\n"
    "            m[i] = (int32_t)((0x40000000u | (tgq_h_next() & 0x3fffffffu)) & ~((1u << tz) - "
    "1u));\n"
    "            if (tgq_h_next() % 2) {\n"
    "                m[i] = -m[i];\n"
    "            }\n"
    "            int z = 0; /* the trailing zeros m has (tz or more) */\n"
    "            while (!((uint32_t)m[i] >> z & 1u)) {\n"
    "                z++;\n"
    "            }\n"
    "            const int room = nn[i] - 2 - z; /* the largest floor(log2 B) allowed */\n"
    "            if (room < 0) {\n"
    "                acc[i] = 0;\n"
    "                continue;\n"
    "            }\n"
    "            const int lb = (int)(tgq_h_next() % (uint32_t)((room < 30 ? room : 30) + 1));\n"
    "            const int32_t B = (int32_t)((1u << lb) | (tgq_h_next() & ((1u << lb) - 1u)));\n"
    "            const uint32_t kind = tgq_h_next() % 4;\n"
    "            if (kind == 0) {\n"
    "                acc[i] = tgq_h_next() & 1u ? B : -B;\n"
    "            } else if (kind == 1) { /* an odd multiple of a high power of two, +-1 */\n"
    "                const int e = (int)(tgq_h_next() % (uint32_t)(lb + 1));\n"
    "                int32_t a = (int32_t)(1u << e) + (int32_t)(tgq_h_next() % 3) - 1;\n"
    "                a = a > B ? B : a;\n"
    "                acc[i] = tgq_h_next() & 1u ? a : -a;\n"
    "            } else {\n"
    "                acc[i] = (int32_t)(tgq_h_next() % ((uint32_t)B + 1u));\n"
    "                acc[i] = tgq_h_next() & 1u ? acc[i] : -acc[i];\n"
    "            }\n"
    "        }\n"
    "        const int32_t zp = (int32_t)(tgq_h_next() % 256) - 128;\n"
    "        const int clamp = it % 2 == 0; /* a relu-like clamp, else the int8 range */\n"
    "        const int32_t lo = clamp ? zp : -128, hi = 127;\n"
    "        int32_t ev[4] = {nn[0], nn[2], nn[4], nn[6]}, ov[4] = {nn[1], nn[3], nn[5], nn[7]};\n"
    "        const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)acc),\n"
    "                      mv = _mm256_loadu_si256((const __m256i *)(const void *)m),\n"
    "                      ne = _mm256_cvtepi32_epi64(_mm_loadu_si128((const __m128i *)(const void "
    "*)ev)),\n"
    "                      no = _mm256_cvtepi32_epi64(_mm_loadu_si128((const __m128i *)(const void "
    "*)ov));\n"
    "        int32_t out[8];\n"
    "        int8_t b8[8];\n"
    "        _mm256_storeu_si256((__m256i *)(void *)out,\n"
    "                            tgq_rq8h(a, mv, ne, no, _mm256_set1_epi64x((long long)lo - zp),\n"
    "                                     _mm256_set1_epi64x((long long)hi - zp), "
    "_mm256_set1_epi32(zp)));\n"
    "        tgq_st8s(b8, tgq_rq8hs(a, mv, ne, no, _mm256_setzero_si256(), "
    "_mm256_setzero_si256(),\n"
    "                               _mm256_set1_epi32(zp)));\n"
    "        for (int i = 0; i < 8; i++) {\n"
    "            bad += out[i] != tgq_requant(acc[i], m[i], s[i], zp, lo, hi);\n"
    "            bad += b8[i] != tgq_requant(acc[i], m[i], s[i], zp, -128, 127);\n"
    "            n += 2;\n"
    "        }\n"
    "    }\n"
    "    *checked = n;\n"
    "    return bad;\n"
    "}\n";

/* A pointwise plane of whole 16-pixel tiles gets the vector pack only: no scalar pack for a
 * partial tile that cannot occur (gcc 13 rejected that unreachable branch under -Werror,
 * "iteration 15 invokes undefined behavior"); pw_full in test_cases checks its bytes. */
static void test_pw_full_tiles(void **state) {
    (void)state;
    static const qcase c = {"pw_full", 6, 5, 8, 8, 1, 1, 1, 0, 0, 0, 0, 1, 0, 3, 1, 0, 0};
    char src[1300];
    float dummy = 0;
    compile_run(&c, "x86-64-v3", "avx2", &dummy, &dummy, 0, src, sizeof src);
    char *s = slurp(src);
    assert_non_null(strstr(s, "_mm256_permute2x128_si256")); /* the vector pack */
    assert_null(strstr(s, "ok = p < 64"));                   /* no scalar pack */
    free(s);
}

/* tgq_rq8k (emit_c_quant.c: the 32-bit-lane requantization for shifts -31..-1) equals the
 * scalar tgq_requant lane by lane, and so do tgq_rq8h / tgq_rq8hs (round half up, for nodes
 * whose accumulators cannot make an exact tie: emit_c_qrq_x86.c) within the bound of that
 * proof: the two drivers above compiled with a generated module's helpers. */
static void test_rq8k(void **state) {
    (void)state;
    static const qcase c = {"rq8k", 7, 9, 5, 5, 1, 1, 1, 0, 0, 0, 0, 1, 0, 3, 1, 0, 0};
    char src[1300], drv[1400], lib[1400], cmd[4500];
    float dummy = 0;
    compile_run(&c, "x86-64-v3", "avx2", &dummy, &dummy, 0, src, sizeof src);
    char *s = slurp(src);
    assert_non_null(strstr(s, "tgq_rq8k(")); /* the pointwise kernel uses it */
    free(s);
    snprintf(drv, sizeof drv, "%s.rq8k.c", src);
    snprintf(lib, sizeof lib, "%s.rq8k.so", src);
    FILE *f = fopen(drv, "w");
    assert_non_null(f);
    fprintf(f, "#include \"%s\"\n%s%s", src, rq_driver, rqh_driver);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "gcc -std=c99 -O1 -Wall -Werror -march=x86-64-v3 -fPIC -shared '%s' -o '%s' 2>&1", drv,
             lib);
    assert_int_equal(system(cmd), 0);
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2")) {
        fprintf(stderr, "rq8k: no AVX2 here: compiled, not run\n");
        return;
    }
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    long long (*run)(long long *) = (long long (*)(long long *))dlsym(h, "tgq_t_run");
    assert_non_null(run);
    long long checked = 0;
    assert_int_equal(run(&checked), 0);
    assert_int_equal(checked, 1600000);
    long long (*runh)(long long *) = (long long (*)(long long *))dlsym(h, "tgq_h_run");
    assert_non_null(runh);
    assert_int_equal(runh(&checked), 0);
    assert_int_equal(checked, 3200000);
    dlclose(h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rq8k),
        cmocka_unit_test(test_pw_full_tiles),
        cmocka_unit_test(test_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
