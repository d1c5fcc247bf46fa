/*
 * `tether ab MODEL --int8 ...` as a process on local: (a tetherd the CLI spawns; docs/cli.md,
 * docs/quantization.md): a small conv model built here (Conv 3x3 + bias + Relu, MaxPool, Conv 1x1
 * + Relu, GlobalAveragePool, Flatten, Gemm) against its int8 form, quantized on the fly from
 * calibration archives written here and given as an already quantized file. The text and the
 * --json are checked with their real values: the int8 weights are smaller, the int8 outputs are
 * within the bound below of the float model's and within one output step of the int8 model's
 * own interpreter. Bad input (a missing calibration archive, an int8 model of another model's
 * inputs, --int8 with --opencl, --abi without --int8) is refused with a message naming it, and
 * no temporary file is left behind on any path ($TMPDIR is a folder of the test, empty after
 * every command). `tether run --reference` on a QDQ model whose convolution outputs lie on
 * rounding ties equals the compiled model's output byte for byte (the reference runs the
 * integer-operator pass).
 *
 * The bound: as test_quantize's (int8 activations, four quantized layers, weights < 0.5): max
 * |diff| below 5% of the output's float range.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "model_builder.h"
#include "tether/crt.h"
#include "tether/npy.h"

#define F ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

static char g_dir[600];

/* Runs `tether ARGS` in g_dir with $TMPDIR = g_dir/tmp; the exit code, the output in *out. */
static int tether(const char **out, const char *fmt, ...) {
    static char buf[65536];
    char args[2048], cmd[4096], log[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(log, sizeof log, "%s/out.txt", g_dir);
    int r = snprintf(
        cmd, sizeof cmd,
        "cd '%s' && TMPDIR='%s/tmp' TETHER_TETHERD='%s' TETHER_DEVICE= '%s' %s > '%s' 2>&1", g_dir,
        g_dir, TETHERD_PATH, TETHER_CLI, args, log);
    assert_true(r > 0 && (size_t)r < sizeof cmd);
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

/* g_dir/tmp holds nothing (the temporary folders of every command are gone). */
static void tmp_empty(void) {
    DIR *d = opendir(path("tmp"));
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            fail_msg("left behind in $TMPDIR: %s", e->d_name);
        }
    }
    closedir(d);
}

static cJSON *read_json(const char *name) {
    FILE *f = fopen(path(name), "r");
    assert_non_null(f);
    static char js[1 << 16];
    size_t n = fread(js, 1, sizeof js - 1, f);
    fclose(f);
    js[n] = 0;
    cJSON *j = cJSON_Parse(js);
    assert_non_null(j);
    return j;
}

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    if (!cJSON_IsNumber(v)) {
        fail_msg("'%s' is not a number", key);
    }
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    if (!cJSON_IsString(v)) {
        fail_msg("'%s' is not a string", key);
    }
    return v->valuestring;
}

static uint32_t g_seed = 4242;
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

/* input[1,3,side,side] -> conv 3x3 (8) + relu -> maxpool 2 -> conv 1x1 (16) + relu -> gap ->
 * flatten -> gemm (10) */
static void write_model(const char *name, const char *input, int64_t side) {
    mb b;
    mb_init(&b, 13);
    int64_t xs[4] = {1, 3, side, side};
    mb_input(&b, input, F, 4, xs);
    int64_t w1[4] = {8, 3, 3, 3}, b1[1] = {8}, w2[4] = {16, 8, 1, 1}, b2[1] = {16};
    int64_t w3[2] = {10, 16}, b3[1] = {10};
    tensor(&b, "w1", 4, w1, 0.4f);
    tensor(&b, "b1", 1, b1, 0.1f);
    tensor(&b, "w2", 4, w2, 0.4f);
    tensor(&b, "b2", 1, b2, 0.1f);
    tensor(&b, "w3", 2, w3, 0.5f);
    tensor(&b, "b3", 1, b3, 0.1f);
    char in1[64];
    snprintf(in1, sizeof in1, "%s,w1,b1", input);
    Onnx__NodeProto *c1 = mb_node(&b, "Conv", "conv1", in1, "c1");
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

/* n samples of the input `array` as one stacked array [n,1,3,side,side] */
static void write_calib(const char *name, const char *array, int n, int64_t side) {
    size_t per = (size_t)(3 * side * side);
    float *v = malloc(per * (size_t)n * sizeof *v);
    for (size_t i = 0; i < per * (size_t)n; i++) {
        v[i] = rnd();
    }
    tether_npy a = {.dtype = TETHER_FLOAT32, .data = v, .nbytes = per * (size_t)n * 4};
    int64_t s5[5] = {n, 1, 3, side, side};
    a.ndim = 5;
    memcpy(a.shape, s5, sizeof s5);
    const char *names[1] = {array};
    assert_int_equal(tether_npz_write(path(name), 1, names, &a), 0);
    free(v);
}

/* The figures every --int8 JSON must hold, from a real run (see the header's bound). */
static void check_json(const cJSON *j, int quantized_here) {
    assert_string_equal(str(j, "command"), "ab");
    const cJSON *dev = cJSON_GetObjectItem(j, "device");
    assert_true(cJSON_IsObject(dev));
    assert_string_equal(str(dev, "url"), "local:");
    assert_string_equal(str(dev, "arch"), "x86_64");
    const cJSON *sides = cJSON_GetObjectItem(j, "sides");
    assert_int_equal(cJSON_GetArraySize(sides), 2);
    assert_null(cJSON_GetObjectItem(j, "abis"));
    const cJSON *f = cJSON_GetArrayItem(sides, 0), *q = cJSON_GetArrayItem(sides, 1);
    assert_string_equal(str(f, "side"), "float32");
    assert_string_equal(str(q, "side"), "int8");
    assert_string_equal(str(f, "model"), "m.onnx");
    assert_string_equal(str(f, "abi"), "unpacked");
    assert_string_equal(str(q, "abi"), "unpacked");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(f, "outputs_equal")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(q, "outputs_equal")));
    /* float weights: 4 * (216 + 8 + 128 + 16 + 160 + 10) = 2152 bytes; int8 weights with int32
     * biases and the requantization pairs are well under that */
    double fp = num(f, "params_bytes"), qp = num(q, "params_bytes");
    printf("params: float %g, int8 %g bytes; code+weights %g / %g; workspace %g / %g\n", fp, qp,
           num(f, "code_plus_weights_bytes"), num(q, "code_plus_weights_bytes"),
           num(f, "workspace_bytes"), num(q, "workspace_bytes"));
    assert_true(fp >= 2152);
    assert_true(qp > 0 && qp < 0.75 * fp);
    /* small weights are linked: inside text/data, no params blob */
    assert_true(num(f, "code_plus_weights_bytes") == num(f, "text") + num(f, "data"));
    assert_true(num(q, "code_plus_weights_bytes") == num(q, "text") + num(q, "data"));
    assert_true(num(q, "code") > 0 && num(q, "stack_hwm") > 0);
    assert_true(num(q, "workspace_bytes") > 0);
    assert_true(num(q, "latency_median_us") > 0);
    const cJSON *r = cJSON_GetObjectItem(j, "latency_ratio");
    assert_string_equal(str(r, "numerator"), "int8");
    assert_string_equal(str(r, "denominator"), "float32");
    const cJSON *i8 = cJSON_GetObjectItem(j, "int8");
    assert_true(cJSON_IsObject(i8));
    assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(i8, "quantized_here")), quantized_here);
    if (quantized_here) {
        assert_int_equal((int)num(i8, "samples"), 24);
        assert_int_equal((int)num(i8, "integer_nodes"), 4); /* conv1, conv2, gemm, pool */
    }
    const cJSON *vs = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "int8_vs_float"), 0);
    assert_non_null(vs);
    assert_string_equal(str(vs, "name"), "y");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(vs, "compared")));
    double mx = num(vs, "max_abs_difference"), mean = num(vs, "mean_abs_difference");
    double range = num(vs, "float_range"), step = num(vs, "step");
    printf("int8 vs float: max %g mean %g range %g step %g top-1 %g\n", mx, mean, range, step,
           num(vs, "top1_agreement"));
    assert_true(range > 0 && step > 0 && step < range);
    assert_true(mx > 0 && mx < 0.05 * range); /* quantized, within the bound */
    assert_true(mean > 0 && mean <= mx);
    assert_int_equal((int)num(vs, "top1_rows"), 1);
    const cJSON *rf = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "int8_vs_reference"), 0);
    assert_non_null(rf);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(rf, "within_one_step")));
    assert_true(num(rf, "max_steps") <= 1);
    assert_true(num(rf, "step") == step);
}

static void test_ab_int8(void **state) {
    (void)state;
    write_model("m.onnx", "x", 8);
    write_calib("cal.npz", "x", 24, 8);
    const char *o;
    int rc = tether(&o, "ab m.onnx --int8 cal.npz --repeat 3 --min-repeat-ms 1 --json ab.json "
                        "--svg ab.svg");
    printf("%s", o);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(o, "quantized m.onnx on 24 calibration samples"));
    assert_non_null(strstr(o, "int8/float32\n")); /* the ratio column's header */
    assert_non_null(strstr(o, "code + weights (bytes)"));
    assert_non_null(strstr(o, "int8/float32 latency: "));
    assert_non_null(strstr(o, "int8 model against the float32 model"));
    assert_non_null(strstr(o, "every output exact or within one output step"));
    cJSON *j = read_json("ab.json");
    check_json(j, 1);
    cJSON_Delete(j);
    assert_true(exists("ab.svg"));
    tmp_empty();
    /* -o DIR keeps both artifacts and the quantized model, which then serves as a given one */
    rc = tether(&o, "ab m.onnx --int8 cal.npz -o keep --repeat 2 --min-repeat-ms 0");
    assert_int_equal(rc, 0);
    assert_true(exists("keep/float/metadata.json"));
    assert_true(exists("keep/int8/metadata.json"));
    assert_true(exists("keep/model.int8.onnx"));
    tmp_empty();
    rc = tether(&o, "ab m.onnx --int8 keep/model.int8.onnx --repeat 3 --min-repeat-ms 1 "
                    "--json given.json --abi unpacked");
    printf("%s", o);
    assert_int_equal(rc, 0);
    j = read_json("given.json");
    check_json(j, 0);
    assert_string_equal(str(cJSON_GetObjectItem(j, "int8"), "model"), "keep/model.int8.onnx");
    cJSON_Delete(j);
    tmp_empty();
    /* the packed ABI for both */
    rc = tether(&o, "ab m.onnx --int8 keep/model.int8.onnx --repeat 1 --min-repeat-ms 0 "
                    "--abi packed --json p.json");
    assert_int_equal(rc, 0);
    j = read_json("p.json");
    const cJSON *s1 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "sides"), 1);
    assert_string_equal(str(s1, "abi"), "packed");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(s1, "outputs_equal")));
    cJSON_Delete(j);
    tmp_empty();
}

/* A QDQ convolution whose outputs lie on rounding ties: x [1,1,8,16] quantized by 0.1 (the input
 * holds q * 0.1 for q in -64..63), a 1x1 conv into 8 channels with int8 weights 1..8 by 0.1, the
 * output quantized by 0.2, so the real value q * w * 0.05 is a half step whenever q * w is an odd
 * multiple of 10. The integer requantization rounds acc * M with M the float32 of
 * 0.1 * 0.1 / 0.2, a hair off 0.05, so its ties go one way; the float convolution of the
 * dequantized values meets them as exact or nearly exact halves and rounds them to even. */
static void write_tie_conv(const char *name) {
    mb b;
    mb_init(&b, 13);
    int64_t xs[4] = {1, 1, 8, 16}, one[1] = {1}, wd[4] = {8, 1, 1, 1};
    mb_input(&b, "x", F, 4, xs);
    float s01 = 0.1f, s02 = 0.2f;
    int8_t z = 0, w[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    mb_init_tensor(&b, mb_tensor_f(&b, "s01", 0, one, &s01, 1));
    mb_init_tensor(&b, mb_tensor_f(&b, "s02", 0, one, &s02, 1));
    mb_init_tensor(&b, mb_tensor_raw(&b, "z", 3, 0, one, &z, 1)); /* 3: INT8 */
    mb_init_tensor(&b, mb_tensor_raw(&b, "w", 3, 4, wd, w, 1));
    mb_node(&b, "QuantizeLinear", "qx", "x,s01,z", "xq");
    mb_node(&b, "DequantizeLinear", "dqx", "xq,s01,z", "xd");
    mb_node(&b, "DequantizeLinear", "dqw", "w,s01,z", "wdq");
    mb_node(&b, "Conv", "conv", "xd,wdq", "c");
    mb_node(&b, "QuantizeLinear", "qy", "c,s02,z", "yq");
    mb_node(&b, "DequantizeLinear", "dqy", "yq,s02,z", "y");
    mb_output(&b, "y", F);
    mb_write(&b, path(name));
    mb_free(&b);
}

/* `tether run MODEL --reference` on a QDQ model computes the integers the compiled code computes
 * (the interpreter runs the integer-operator pass first): its output equals the device's byte for
 * byte. Before, the reference interpreted the DequantizeLinear/QuantizeLinear pairs around a
 * float convolution, whose float rounding differs from the integer requantization by one step
 * at ties (here: 30 of the 1,024 outputs before the fix); through more layers (the int8 U-Net
 * of bench/quant) by more than one step, which `tether ab --int8` reported as a mismatch. */
static void test_reference_integers(void **state) {
    (void)state;
    write_tie_conv("c.onnx");
    float x[128];
    for (int i = 0; i < 128; i++) {
        x[i] = (float)(i - 64) * 0.1f;
    }
    int64_t xs[4] = {1, 1, 8, 16};
    assert_int_equal(tether_npy_write(path("x.npy"), TETHER_FLOAT32, xs, 4, x), 0);
    const char *o;
    int rc = tether(&o, "run c.onnx --in x.npy --out dev.npy");
    printf("%s", rc ? o : "");
    assert_int_equal(rc, 0);
    rc = tether(&o, "run c.onnx --reference --in x.npy --out ref.npy");
    printf("%s", rc ? o : "");
    assert_int_equal(rc, 0);
    tether_npy d, r;
    assert_int_equal(tether_npy_read(path("dev.npy"), &d), 0);
    assert_int_equal(tether_npy_read(path("ref.npy"), &r), 0);
    assert_int_equal(d.nbytes, 1024 * 4);
    assert_int_equal(r.nbytes, d.nbytes);
    size_t differ = 0;
    for (size_t i = 0; i < 1024; i++) {
        differ += ((const float *)d.data)[i] != ((const float *)r.data)[i];
    }
    printf("reference vs device: %zu of 1024 elements differ\n", differ);
    assert_int_equal(differ, 0);
    tether_npy_free(&d);
    tether_npy_free(&r);
    tmp_empty();
}

static void refused(const char *args, const char *needle, int code) {
    const char *o;
    int rc = tether(&o, "ab %s", args);
    if (rc != code || !strstr(o, needle)) {
        printf("args: %s\noutput: %s\n", args, o);
    }
    assert_int_equal(rc, code);
    assert_non_null(strstr(o, needle));
    assert_null(strstr(o, "A/B of")); /* refused before any measurement */
    tmp_empty();
}

static void test_ab_int8_bad_input(void **state) {
    (void)state;
    write_model("m.onnx", "x", 8);
    write_calib("cal.npz", "x", 4, 8);
    /* a model of another input (name and shape), quantized: not a form of m.onnx */
    write_model("other.onnx", "data", 10);
    write_calib("other.npz", "data", 4, 10);
    const char *o;
    assert_int_equal(tether(&o, "quantize other.onnx --calibrate other.npz -o other.int8.onnx"), 0);
    refused("m.onnx --int8 missing.npz", "missing.npz", 1);
    refused("m.onnx --int8 cal.npz missing.npz", "missing.npz", 1);
    refused("m.onnx --int8 other.npz", "array 'data' is not an input of", 1);
    refused("m.onnx --int8 other.int8.onnx", "is not a quantized form of m.onnx", 1);
    refused("m.onnx --int8 other.int8.onnx", "'data' float32[1,3,10,10]", 1);
    refused("m.onnx --int8 nosuch.int8.onnx", "nosuch.int8.onnx", 1);
    refused("m.onnx --int8", "--int8 needs", 2);
    refused("m.onnx --int8 cal.npz --opencl", "--opencl with --int8", 2);
    refused("m.onnx --int8 cal.npz --profile", "--profile with --int8", 2);
    refused("m.onnx --int8 cal.npz other.int8.onnx", "one model", 2);
    refused("m.onnx --abi packed", "--abi applies with --int8", 2);
    refused("m.onnx --int8 cal.npz --abi sideways", "--abi 'sideways'", 2);
}

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s/tether-ab-int8-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(g_dir));
    assert_int_equal(mkdir(path("tmp"), 0700), 0);
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
        cmocka_unit_test_setup_teardown(test_ab_int8, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ab_int8_bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reference_integers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
