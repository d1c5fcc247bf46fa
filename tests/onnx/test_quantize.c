/*
 * `tether quantize` as a process (docs/quantization.md): a small conv + dense model built here
 * (Conv 3x3 + bias + Relu, MaxPool, Conv 1x1 + Relu, GlobalAveragePool, Flatten, Gemm + bias)
 * quantized end to end on calibration archives written here; the output is checked as a QDQ
 * model (QuantizeLinear/DequantizeLinear present, int8 weights, loads in tether and runs, the
 * convolutions and the Gemm's MatMul become integer operators), its error against the float
 * model within the bound below, and the bad inputs (a missing calibration file, an empty
 * archive, an array not named after the input, an unknown --keep-float node) each refused with
 * a message naming it and no output file left. With python3-onnx installed, onnx.checker checks
 * the written model too (skipped cleanly otherwise).
 *
 * The error bound: with int8 activations every quantized tensor carries at most half a step of
 * rounding (scale/2, scale = range/255); through four quantized layers with |weights| < 0.5 and
 * fan-ins of 9..32 the errors stay within a few output steps. The test asserts the reported max
 * |diff| is below 5% of the output's float range (about 13 output steps) and the top-1
 * agreement at least 90%.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "model_builder.h"
#include "tether/compiler.h"
#include "tether/crt.h"
#include "tether/npy.h"
#include "tether/onnx.h"

#define F ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

static char g_dir[600];

static int tether(const char **out, const char *fmt, ...) {
    static char buf[65536];
    char args[2048], cmd[4096], log[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(log, sizeof log, "%s/out.txt", g_dir);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s > '%s' 2>&1", g_dir, TETHER_CLI, args, log);
    int st = system(cmd);
    FILE *f = fopen(log, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) {
        fclose(f);
    }
    buf[n] = 0;
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *path(const char *name) {
    static char p[4][800];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
    return p[k];
}

static int exists(const char *name) {
    struct stat st;
    return stat(path(name), &st) == 0;
}

static uint32_t g_seed = 12345;
static float rnd(void) { /* uniform in [-1, 1) */
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)((g_seed >> 8) & 0xffffff) / 8388608.0f - 1.0f;
}

static void tensor(mb *b, const char *name, int ndim, const int64_t *dims, float amp) {
    size_t n = 1;
    for (int d = 0; d < ndim; d++) {
        n *= (size_t)dims[d];
    }
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        v[i] = amp * rnd();
    }
    mb_init_tensor(b, mb_tensor_f(b, name, ndim, dims, v, 1));
    free(v);
}

/* x[1,3,8,8] -> conv 3x3 (8) + relu -> maxpool 2 -> conv 1x1 (16) + relu -> gap -> flatten ->
 * gemm (10) */
static void write_model(const char *name) {
    mb b;
    mb_init(&b, 13);
    int64_t xs[4] = {1, 3, 8, 8};
    mb_input(&b, "x", F, 4, xs);
    int64_t w1[4] = {8, 3, 3, 3}, b1[1] = {8}, w2[4] = {16, 8, 1, 1}, b2[1] = {16};
    int64_t w3[2] = {10, 16}, b3[1] = {10};
    tensor(&b, "w1", 4, w1, 0.4f);
    tensor(&b, "b1", 1, b1, 0.1f);
    tensor(&b, "w2", 4, w2, 0.4f);
    tensor(&b, "b2", 1, b2, 0.1f);
    tensor(&b, "w3", 2, w3, 0.5f);
    tensor(&b, "b3", 1, b3, 0.1f);
    Onnx__NodeProto *c1 = mb_node(&b, "Conv", "conv1", "x,w1,b1", "c1");
    int64_t pads[4] = {1, 1, 1, 1};
    mb_attr_ints(&b, c1, "pads", 4, pads);
    mb_node(&b, "Relu", "relu1", "c1", "r1");
    Onnx__NodeProto *mp = mb_node(&b, "MaxPool", "pool1", "r1", "p1");
    int64_t k2[2] = {2, 2};
    mb_attr_ints(&b, mp, "kernel_shape", 2, k2);
    mb_attr_ints(&b, mp, "strides", 2, k2);
    mb_node(&b, "Conv", "conv2", "p1,w2,b2", "c2");
    mb_node(&b, "Relu", "relu2", "c2", "r2");
    mb_node(&b, "GlobalAveragePool", "gap", "r2", "g");
    mb_node(&b, "Flatten", "flatten", "g", "f");
    Onnx__NodeProto *gm = mb_node(&b, "Gemm", "fc", "f,w3,b3", "y");
    mb_attr_i(&b, gm, "transB", 1);
    mb_output(&b, "y", F);
    mb_write(&b, path(name));
    mb_free(&b);
}

/* n samples of x as one stacked array [n,1,3,8,8] (or [1,3,8,8] when n is 1) */
static void write_calib(const char *name, const char *array, int n) {
    size_t per = 3 * 8 * 8;
    float *v = malloc(per * (size_t)n * sizeof *v);
    for (size_t i = 0; i < per * (size_t)n; i++) {
        v[i] = rnd();
    }
    tether_npy a = {.dtype = TETHER_FLOAT32, .data = v, .nbytes = per * (size_t)n * 4};
    int64_t s5[5] = {n, 1, 3, 8, 8};
    a.ndim = n == 1 ? 4 : 5;
    memcpy(a.shape, n == 1 ? s5 + 1 : s5, sizeof(int64_t) * (size_t)a.ndim);
    const char *names[1] = {array};
    assert_int_equal(tether_npz_write(path(name), 1, names, &a), 0);
    free(v);
}

static void test_quantize_end_to_end(void **state) {
    (void)state;
    write_model("m.onnx");
    write_calib("cal1.npz", "x", 24);
    write_calib("cal2.npz", "x", 1);
    const char *out;
    int rc =
        tether(&out, "quantize m.onnx --calibrate cal1.npz cal2.npz -o m.int8.onnx --json q.json");
    printf("%s", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "25 samples"));
    assert_true(exists("m.int8.onnx"));
    /* the JSON: the error within the bound of the header comment */
    FILE *f = fopen(path("q.json"), "r");
    assert_non_null(f);
    char js[8192];
    size_t n = fread(js, 1, sizeof js - 1, f);
    fclose(f);
    js[n] = 0;
    double maxabs = -1, range = -1, agree = -1;
    const char *p = strstr(js, "\"max_abs_difference\":");
    assert_non_null(p);
    maxabs = atof(p + strlen("\"max_abs_difference\":"));
    p = strstr(js, "\"float_range\":");
    assert_non_null(p);
    range = atof(p + strlen("\"float_range\":"));
    p = strstr(js, "\"top1_agreement\":");
    assert_non_null(p);
    agree = atof(p + strlen("\"top1_agreement\":"));
    assert_true(range > 0);
    assert_true(maxabs > 0); /* quantized: not the float model */
    assert_true(maxabs < 0.05 * range);
    assert_true(agree >= 0.9);
    /* conv1, conv2, the Gemm (a qmatmul) and the global average pool (an integer matmul by
     * ones; docs/quantization.md "Pass-through and pooling") */
    p = strstr(js, "\"integer_nodes\":");
    assert_non_null(p);
    assert_int_equal(atoi(p + strlen("\"integer_nodes\":")), 4);
    /* the output loads in tether as a QDQ model and compiles through the integer pass */
    tether_ir_graph g;
    assert_int_equal(tether_onnx_load(path("m.int8.onnx"), NULL, &g), 0);
    int q = 0, dq = 0;
    for (int i = 0; i < g.nnodes; i++) {
        q += g.nodes[i].op == TETHER_OP_QUANTIZE;
        dq += g.nodes[i].op == TETHER_OP_DEQUANTIZE;
    }
    assert_true(q >= 4);
    assert_true(dq >= q);
    tether_ir_close(&g);
    rc = tether(&out, "run m.int8.onnx --reference --in cal2.npz --out y.npy");
    assert_int_equal(rc, 0);
    /* any runtime: onnx.checker, when python3-onnx is installed */
    if (system("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") == 0) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && /usr/bin/python3 -c \"import onnx; "
                 "onnx.checker.check_model(onnx.load('m.int8.onnx'), full_check=True)\"",
                 g_dir);
        assert_int_equal(system(cmd), 0);
    } else {
        printf("python3-onnx not installed: onnx.checker check skipped\n");
    }
    /* other methods, per tensor, uint8, --keep-float */
    rc = tether(&out, "quantize m.onnx --calibrate cal1.npz -o e.onnx --method entropy "
                      "--per-tensor --activations uint8 --keep-float conv2");
    printf("%s", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "conv2 (Conv)"));
    assert_non_null(strstr(out, "3 integer operators")); /* conv1, gemm, pool */
    rc = tether(&out, "quantize m.onnx --calibrate cal1.npz -o p.onnx --method percentile=99.9");
    assert_int_equal(rc, 0);
}

static void refused(const char *args, const char *needle, int code) {
    const char *out;
    unlink(path("bad.onnx"));
    int rc = tether(&out, "quantize m.onnx %s -o bad.onnx", args);
    if (rc != code || !strstr(out, needle)) {
        printf("args: %s\noutput: %s\n", args, out);
    }
    assert_int_equal(rc, code);
    assert_non_null(strstr(out, needle));
    assert_false(exists("bad.onnx"));
}

static void test_quantize_bad_input(void **state) {
    (void)state;
    write_model("m.onnx");
    write_calib("good.npz", "x", 2);
    write_calib("wrong.npz", "data", 2);
    /* an empty ZIP archive: the end-of-central-directory record alone */
    static const unsigned char eocd[22] = {0x50, 0x4b, 0x05, 0x06};
    FILE *f = fopen(path("empty.npz"), "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(eocd, 1, sizeof eocd, f), sizeof eocd);
    fclose(f);
    refused("--calibrate missing.npz", "missing.npz", 1);
    refused("--calibrate empty.npz", "empty.npz: the archive holds no arrays", 1);
    refused("--calibrate wrong.npz", "array 'data' is not an input of", 1);
    refused("--calibrate good.npz --keep-float nosuchnode", "no node 'nosuchnode'", 1);
    refused("--calibrate good.npz --method kl", "--method", 2);
    refused("--calibrate good.npz --activations int4", "--activations", 2);
}

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s/tether-quantize-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(g_dir));
    tether_onnx_register();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[800];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize_end_to_end),
        cmocka_unit_test(test_quantize_bad_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
