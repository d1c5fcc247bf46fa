/*
 * ONNX through the `tether` CLI as a process, against local: (a tetherd child over stdio), on
 * models and .pb files written here: import to JSON, compile and plan .onnx directly, run .onnx
 * (on the device and --reference) with .pb inputs (an input the Reshape needs as a constant is
 * bound from its --in file), --input-shape for a dynamic dimension (compile, import, plan and
 * ab), and the exit codes and messages of bad models (the complete list of unsupported
 * operators reaches the terminal, not just 255 bytes of it), and a run-time Loop's scan outputs
 * written trimmed to the iterations run.
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

#include "loop_models.h"
#include "model_builder.h"
#include "tether/crt.h"
#include "tether/npy.h"

#define F ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

static char g_dir[600];

/* Runs `tether ARGS` in g_dir; returns the exit code, stdout+stderr in a static buffer. */
static int tether(const char **out, const char *fmt, ...) {
    static char buf[65536];
    char args[2048], cmd[4096], log[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(log, sizeof log, "%s/out.txt", g_dir);
    snprintf(cmd, sizeof cmd, "cd '%s' && TETHER_TETHERD='%s' '%s' %s > '%s' 2>&1", g_dir,
             TETHERD_PATH, TETHER_CLI, args, log);
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

static void write_tensor(const char *name, Onnx__TensorProto *t) {
    size_t len = onnx__tensor_proto__get_packed_size(t);
    uint8_t *buf = malloc(len);
    onnx__tensor_proto__pack(t, buf);
    FILE *f = fopen(path(name), "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
    free(buf);
}

/* y = Reshape(x * 2, shape) with shape a graph input, plus test data x.pb / shape.pb. */
static void reshape_model(void) {
    mb b;
    mb_init(&b, 14);
    int64_t xs[2] = {2, 3}, ss[1] = {2};
    mb_input(&b, "x", F, 2, xs);
    mb_input(&b, "shape", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, ss);
    float two = 2.0f;
    mb_init_tensor(&b, mb_tensor_f(&b, "two", 0, NULL, &two, 0));
    mb_node(&b, "Mul", "double", "x,two", "x2");
    mb_node(&b, "Reshape", "reshape", "x2,shape", "y");
    mb_output(&b, "y", F);
    mb_write(&b, path("reshape.onnx"));
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t target[2] = {3, -1};
    write_tensor("x.pb", mb_tensor_f(&b, "x", 2, xs, x, 1));
    write_tensor("shape.pb", mb_tensor_i64(&b, "shape", 1, ss, target));
    mb_free(&b);
}

static void test_run_onnx(void **state) {
    (void)state;
    reshape_model();
    const char *o;
    int rc = tether(&o, "run reshape.onnx --in x.pb --in shape.pb --out y.npy");
    if (rc) {
        fail_msg("%s", o);
    }
    tether_npy y;
    assert_int_equal(tether_npy_read(path("y.npy"), &y), 0);
    assert_int_equal(y.ndim, 2);
    assert_int_equal(y.shape[0], 3);
    assert_int_equal(y.shape[1], 2);
    for (int i = 0; i < 6; i++) {
        assert_true(((float *)y.data)[i] == 2.0f * (float)(i + 1));
    }
    tether_npy_free(&y);
    /* both ABIs, and the reference interpreter (binding the same way) */
    assert_int_equal(tether(&o, "run reshape.onnx --abi packed --in x.pb --in shape.pb"), 0);
    rc = tether(&o, "run reshape.onnx --reference --in x.pb --in shape.pb --out yr.npy");
    if (rc) {
        fail_msg("%s", o);
    }
    assert_int_equal(tether_npy_read(path("yr.npy"), &y), 0);
    assert_int_equal(y.shape[0], 3);
    assert_true(((float *)y.data)[5] == 12.0f);
    tether_npy_free(&y);
    /* ab binds the same way: both ABIs compiled with the shape as a constant, fed x only */
    rc = tether(&o, "ab reshape.onnx --in x.pb --in shape.pb --number 2 --repeat 1");
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "outputs equal the interpreter"));
    /* one --in too many: the count says how many were bound */
    assert_int_equal(tether(&o, "run reshape.onnx --in x.pb --in shape.pb --in x.pb"), 2);
    assert_non_null(strstr(o, "3 --in given, of which 1 were bound as constants"));
    /* without the shape value the Reshape cannot be compiled */
    assert_int_equal(tether(&o, "run reshape.onnx --in x.pb"), 1);
    assert_non_null(strstr(o, "input 1 ('shape') must be constant"));
    /* .pb inputs are checked like .npy: dtype and shape against the model */
    assert_int_equal(tether(&o, "run reshape.onnx --in shape.pb --in x.pb"), 1);
    assert_non_null(strstr(o, "tether run: "));
    /* by name, in any order: the shape is bound as a constant by its name */
    rc = tether(&o, "run reshape.onnx --in shape=shape.pb --in x=x.pb --out y=yn.npy");
    if (rc) {
        fail_msg("%s", o);
    }
    assert_int_equal(tether_npy_read(path("yn.npy"), &y), 0);
    assert_int_equal(y.shape[0], 3);
    assert_true(((float *)y.data)[5] == 12.0f);
    tether_npy_free(&y);
    rc = tether(&o, "run reshape.onnx --reference --in shape=shape.pb --in x=x.pb --out yrn.npy");
    if (rc) {
        fail_msg("%s", o);
    }
    rc = tether(&o, "ab reshape.onnx --in shape=shape.pb --in x=x.pb --number 2 --repeat 1");
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "outputs equal the interpreter"));
    /* a name the model lacks is neither bound nor run: the error lists the real inputs */
    assert_int_equal(tether(&o, "run reshape.onnx --in shape=shape.pb --in data=x.pb"), 2);
    assert_non_null(strstr(o, "no input 'data' (its inputs: x)"));
}

/* A graph output that is a constant (a Constant node) is copied into the output by the compiled
 * model (both ABIs) and by the interpreter, beside a computed output and in a model without
 * inputs (whose generated C has no input parameters). */
static void test_constant_output(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 13);
    int64_t xs[1] = {2};
    mb_input(&b, "x", F, 1, xs);
    Onnx__NodeProto *kn = mb_node(&b, "Constant", "k", "", "kout");
    float kv[3] = {0.5f, -1.5f, 7.0f}, x[2] = {1, -2};
    mb_attr_floats(&b, kn, "value_floats", 3, kv);
    mb_node(&b, "Neg", "neg", "x", "y");
    mb_output(&b, "y", F);
    mb_output(&b, "kout", F);
    mb_write(&b, path("konst.onnx"));
    write_tensor("kx.pb", mb_tensor_f(&b, "x", 1, xs, x, 1));
    mb_free(&b);
    static const char *const cmds[] = {
        "run konst.onnx --in kx.pb --out ky.npy --out kk.npy",
        "run konst.onnx --abi packed --in kx.pb --out ky.npy --out kk.npy",
        "run konst.onnx --reference --in kx.pb --out ky.npy --out kk.npy",
    };
    for (int c = 0; c < 3; c++) {
        remove(path("ky.npy"));
        remove(path("kk.npy"));
        const char *o;
        if (tether(&o, cmds[c])) {
            fail_msg("%s: %s", cmds[c], o);
        }
        tether_npy y, k;
        assert_int_equal(tether_npy_read(path("ky.npy"), &y), 0);
        assert_int_equal(tether_npy_read(path("kk.npy"), &k), 0);
        assert_int_equal(k.ndim, 1);
        assert_int_equal(k.shape[0], 3);
        for (int i = 0; i < 3; i++) {
            assert_true(((float *)k.data)[i] == kv[i]);
        }
        assert_true(((float *)y.data)[0] == -1.0f && ((float *)y.data)[1] == 2.0f);
        tether_npy_free(&y);
        tether_npy_free(&k);
    }
    /* a model without inputs (its only output a constant): both ABIs, the C interface, the
     * interpreter */
    mb_init(&b, 13);
    kn = mb_node(&b, "Constant", "k", "", "kout");
    mb_attr_floats(&b, kn, "value_floats", 3, kv);
    mb_output(&b, "kout", F);
    mb_write(&b, path("konst0.onnx"));
    mb_free(&b);
    static const char *const cmds0[] = {
        "run konst0.onnx --out kk.npy",
        "run konst0.onnx --abi packed --out kk.npy",
        "run konst0.onnx --reference --out kk.npy",
        "compile konst0.onnx -o konst0c --interface c --opt-level 1",
    };
    for (int c = 0; c < 4; c++) {
        remove(path("kk.npy"));
        const char *o;
        if (tether(&o, cmds0[c])) {
            fail_msg("%s: %s", cmds0[c], o);
        }
        if (c == 3) {
            break;
        }
        tether_npy k;
        assert_int_equal(tether_npy_read(path("kk.npy"), &k), 0);
        assert_int_equal(k.shape[0], 3);
        for (int i = 0; i < 3; i++) {
            assert_true(((float *)k.data)[i] == kv[i]);
        }
        tether_npy_free(&k);
    }
}

/* Scan outputs of a run-time loop (loop_scan_model: M 8, the condition computed at run time
 * stops it after 5 iterations here): `tether run` on the device and --reference write them
 * trimmed to the iterations run (their extent outputs), [5, 2] and [5, 1]. */
static void test_loop_scan_run(void **state) {
    (void)state;
    mb b, body;
    loop_scan_model(&b, &body, 0);
    mb_write(&b, path("scan.onnx"));
    static const int64_t d1[1] = {1}, d2[1] = {2};
    const uint8_t yes = 1;
    const int64_t limit = 5;
    const float x[2] = {2, 0.5f};
    write_tensor("c0.pb",
                 mb_tensor_raw(&b, "c0", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL, &yes, 1));
    write_tensor("limit.pb", mb_tensor_i64(&b, "limit", 1, d1, &limit));
    write_tensor("x.pb", mb_tensor_f(&b, "x", 1, d2, x, 1));
    mb_free(&b);
    mb_free(&body);
    for (int ref = 0; ref < 2; ref++) {
        const char *o;
        int rc = tether(&o,
                        "run scan.onnx %s --in c0.pb --in limit.pb --in x.pb --out nfinal=n.npy "
                        "--out yfinal=y.npy --out ys=ys.npy --out ns=ns.npy",
                        ref ? "--reference" : "");
        if (rc) {
            fail_msg("%s", o);
        }
        tether_npy ys, ns;
        assert_int_equal(tether_npy_read(path("ys.npy"), &ys), 0);
        assert_int_equal(tether_npy_read(path("ns.npy"), &ns), 0);
        assert_int_equal(ys.ndim, 2);
        assert_int_equal(ys.shape[0], 5);
        assert_int_equal(ys.shape[1], 2);
        assert_int_equal(ns.ndim, 2);
        assert_int_equal(ns.shape[0], 5);
        float p = 1, q = -1;
        for (int r = 0; r < 5; r++) {
            p *= 2;
            q *= 0.5f;
            assert_true(((float *)ys.data)[2 * r] == p && ((float *)ys.data)[2 * r + 1] == q);
            assert_int_equal(((int64_t *)ns.data)[r], r + 1);
        }
        tether_npy_free(&ys);
        tether_npy_free(&ns);
    }
}

/* A Loop whose trip count M is a graph input, with scan outputs (loop_scan_model variant 2):
 * `tether compile` refuses it naming --loop-max, compiles it with --loop-max 6 (the scan
 * outputs' rows, in the report's memory plan) and rejects a --loop-max out of range; `run` and
 * `ab` take the option too. */
static void test_loop_max_option(void **state) {
    (void)state;
    mb b, body;
    loop_scan_model(&b, &body, 2);
    mb_write(&b, path("trip.onnx"));
    mb_free(&b);
    mb_free(&body);
    const char *o;
    assert_int_not_equal(tether(&o, "compile trip.onnx -o trip0 --no-build --quiet"), 0);
    if (!strstr(o, "Loop 'loop'") || !strstr(o, "pass --loop-max N")) {
        fail_msg("%s", o);
    }
    if (tether(&o, "compile trip.onnx -o trip6 --no-build --quiet --loop-max 6")) {
        fail_msg("%s", o);
    }
    assert_int_equal(tether(&o, "compile trip.onnx -o trip7 --loop-max 0"), 2);
    assert_non_null(strstr(o, "--loop-max '0' is not 1..16777216"));
    assert_int_equal(tether(&o, "plan trip.onnx --loop-max x"), 2);
    assert_int_equal(tether(&o, "import trip.onnx -o trip.json --loop-max 6"), 0);
    assert_int_equal(tether(&o, "run trip.onnx --loop-max -1 --in a.pb"), 2);
    assert_non_null(strstr(o, "--loop-max '-1' is not 1..16777216"));
    assert_int_equal(tether(&o, "ab trip.onnx --loop-max 0"), 2);
}

static void test_import_compile_plan(void **state) {
    (void)state;
    reshape_model();
    const char *o;
    /* import needs its constant inputs as initializers: make one where shape is one */
    mb b;
    mb_init(&b, 13);
    int64_t xs[4] = {1, 2, 4, 4}, ws[4] = {3, 2, 3, 3}, ks[2] = {2, 2};
    float w[54];
    for (int i = 0; i < 54; i++) {
        w[i] = (float)((i * 5) % 7) * 0.1f - 0.3f;
    }
    mb_input(&b, "x", F, 4, xs);
    mb_init_tensor(&b, mb_tensor_f(&b, "W", 4, ws, w, 1));
    mb_node(&b, "Conv", "conv", "x,W", "c");
    Onnx__NodeProto *mp = mb_node(&b, "MaxPool", "pool", "c", "y");
    mb_attr_ints(&b, mp, "kernel_shape", 2, ks);
    mb_output(&b, "y", F);
    mb_write(&b, path("conv.onnx"));
    /* the same with a dynamic batch */
    b.g.n_input = 0;
    int64_t dyn[4] = {-1, 2, 4, 4};
    mb_input(&b, "x", F, 4, dyn);
    mb_write(&b, path("dyn.onnx"));
    mb_free(&b);
    int rc = tether(&o, "import conv.onnx -o conv.json");
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "imported conv.onnx -> conv.json + conv.bin"));
    assert_int_equal(tether(&o, "compile conv.json -o a1 --quiet"), 0);
    assert_int_equal(tether(&o, "compile conv.onnx -o a2 --quiet"), 0);
    assert_int_equal(tether(&o, "plan conv.onnx"), 0);
    assert_int_equal(tether(&o, "import --help"), 0);
    assert_non_null(strstr(o, "usage: tether import MODEL -o OUT.json"));
    assert_int_equal(tether(&o, "import conv.onnx"), 2);
    /* dynamic dimensions: an error naming the input, fixed by --input-shape */
    assert_int_equal(tether(&o, "compile dyn.onnx -o a3"), 1);
    assert_non_null(strstr(o, "tether compile: dyn.onnx: graph input 'x' has a dynamic dimension "
                              "0 ('N'): fix it with --input-shape, e.g. --input-shape "
                              "x=1x2x4x4"));
    struct stat st;
    assert_int_not_equal(stat(path("a3"), &st), 0);
    assert_int_equal(tether(&o, "compile dyn.onnx -o a3 --quiet --input-shape x=3x2x4x4"), 0);
    assert_int_equal(tether(&o, "import dyn.onnx -o dyn.json --input-shape x=2x2x4x4"), 0);
    assert_int_equal(tether(&o, "compile dyn.onnx -o a4 --input-shape x=3x2"), 1);
    assert_non_null(strstr(o, "has rank 4; --input-shape gives rank 2"));
    assert_int_equal(tether(&o, "compile dyn.onnx -o a4 --input-shape x"), 2);
    assert_int_equal(tether(&o, "plan dyn.onnx --input-shape x=1x2x4x4"), 0);
    /* ab takes --input-shape as run and compile do: both ABIs of the fixed shape, equal to the
     * interpreter; without it the same error as compile's, before any device is contacted */
    rc = tether(&o, "ab dyn.onnx --input-shape x=2x2x4x4 -o ab-dyn --number 2 --repeat 1");
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "outputs equal the interpreter"));
    tether_npy in;
    assert_int_equal(tether_npy_read(path("ab-dyn/input_0.npy"), &in), 0);
    assert_int_equal(in.ndim, 4);
    assert_int_equal(in.shape[0], 2);
    tether_npy_free(&in);
    assert_int_equal(tether(&o, "ab dyn.onnx --device tcp://127.0.0.1:1 --repeat 1"), 1);
    assert_non_null(strstr(o, "graph input 'x' has a dynamic dimension 0 ('N')"));
}

static void test_bad_models(void **state) {
    (void)state;
    const char *o;
    /* truncated */
    reshape_model();
    FILE *f = fopen(path("reshape.onnx"), "rb");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    f = fopen(path("cut.onnx"), "wb");
    fwrite(buf, 1, n - 10, f);
    fclose(f);
    assert_int_equal(tether(&o, "compile cut.onnx -o x"), 1);
    assert_non_null(strstr(o, "tether compile: cut.onnx: truncated file"));
    assert_int_equal(tether(&o, "run cut.onnx --in x.pb"), 1);
    assert_non_null(strstr(o, "truncated file"));
    /* not a model */
    assert_int_equal(tether(&o, "import x.pb -o x.json"), 1);
    assert_non_null(strstr(o, "unknown model format"));
    f = fopen(path("npy.onnx"), "wb");
    fputs("\x93NUMPY fake", f);
    fclose(f);
    assert_int_equal(tether(&o, "import npy.onnx -o x.json"), 1);
    assert_non_null(strstr(o, "npy.onnx: not an ONNX model"));
    /* many unsupported operators with long names: every one is printed */
    mb b;
    mb_init(&b, 13);
    int64_t s[2] = {2, 2};
    mb_input(&b, "x", F, 2, s);
    char prev[64] = "x";
    for (int i = 0; i < 12; i++) {
        char name[96], out[32];
        snprintf(name, sizeof name, "a_rather_long_node_name_to_fill_the_message_%02d", i);
        snprintf(out, sizeof out, "t%d", i);
        char io[128];
        snprintf(io, sizeof io, "%s", prev);
        mb_node(&b, i % 2 ? "StringNormalizer" : "Col2Im", name, io, out);
        snprintf(prev, sizeof prev, "%s", out);
    }
    mb_node(&b, "Relu", "last", prev, "y");
    mb_output(&b, "y", F);
    mb_write(&b, path("unsup.onnx"));
    mb_free(&b);
    assert_int_equal(tether(&o, "compile unsup.onnx -o x"), 1);
    assert_non_null(strstr(o, "unsupported model: 12 operators cannot be imported"));
    assert_non_null(strstr(o, "Col2Im (node 'a_rather_long_node_name_to_fill_the_message_00', "
                              "opset 13)"));
    assert_non_null(
        strstr(o, "StringNormalizer (node 'a_rather_long_node_name_to_fill_the_message_11', "
                  "opset 13)"));
    assert_int_equal(tether(&o, "run unsup.onnx --in x.pb"), 1);
    assert_non_null(strstr(o, "message_11"));
    assert_int_equal(tether(&o, "import unsup.onnx -o u.json"), 1);
    assert_non_null(strstr(o, "message_11"));
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s/tests/onnx/cli", TETHER_BINARY_DIR);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_dir, g_dir);
    if (system(cmd) != 0) {
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_onnx),
        cmocka_unit_test(test_constant_output),
        cmocka_unit_test(test_loop_scan_run),
        cmocka_unit_test(test_loop_max_option),
        cmocka_unit_test(test_import_compile_plan),
        cmocka_unit_test(test_bad_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
