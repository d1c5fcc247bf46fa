/*
 * Custom operators (docs/custom-ops.md) on ONNX models built here: the example registry
 * (examples/custom_ops: swish on a packed NHWC image, OpenCL and C) inside a small graph,
 * computed by the reference interpreter (through the C implementation built for the host) and by
 * the generated C module, both against values this test computes; the OpenCL artifact carries
 * the user's kernel with its #line and the images as NHWC; a contract violation (3 channels in an
 * image) is refused naming the rule; an unknown custom op lists the registry's operators; bad
 * registries (a shape rule that does not parse, no implementation for the backend) are refused.
 */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "model_builder.h"
#include "tether/compiler.h"
#include "tether/crt.h"
#include "tether/custom_ops.h"
#include "tether/onnx.h"

#define F ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

static char tmp[256];

static void write_text(const char *name, const char *text) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmp, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A small CNN: x [1, 1, 3, 5] -> Conv 3x3 (C output channels, pads 1, bias) -> com.example::<op>
 * -> Mul 2 -> y [1, C, 3, 5]. Weights w[o][k] = ((o * 9 + k) % 7 - 3) / 8, bias (o - 1) / 4. */
static float wt(int o, int k) {
    return (float)((o * 9 + k) % 7 - 3) / 8.0f;
}

static uint8_t *model(const char *op, int64_t C, size_t *len) {
    mb b;
    mb_init(&b, 13);
    mb_opset(&b, "com.example", 1);
    int64_t dims[4] = {1, 1, 3, 5};
    mb_input(&b, "x", F, 4, dims);
    float w[8 * 9], bias[8];
    for (int o = 0; o < C; o++) {
        bias[o] = (float)(o - 1) / 4.0f;
        for (int k = 0; k < 9; k++) {
            w[o * 9 + k] = wt(o, k);
        }
    }
    int64_t wd[4] = {C, 1, 3, 3}, bd[1] = {C};
    mb_init_tensor(&b, mb_tensor_f(&b, "w", 4, wd, w, 0));
    mb_init_tensor(&b, mb_tensor_f(&b, "b", 1, bd, bias, 0));
    Onnx__NodeProto *conv = mb_node(&b, "Conv", "conv", "x,w,b", "c");
    int64_t pads[4] = {1, 1, 1, 1};
    mb_attr_ints(&b, conv, "pads", 4, pads);
    Onnx__NodeProto *n = mb_node(&b, op, "act", "c", "s");
    mb_domain(&b, n, "com.example");
    float two = 2.0f;
    int64_t one = 1;
    mb_init_tensor(&b, mb_tensor_f(&b, "two", 1, &one, &two, 0));
    mb_node(&b, "Mul", "scale", "s,two", "y");
    mb_output(&b, "y", F);
    uint8_t *data = mb_pack(&b, len);
    const char *keep = getenv("TETHER_CUSTOM_OPS_WRITE_MODEL"); /* examples/custom_ops */
    if (keep && keep[0] && C == 4 && !strcmp(op, "Swish")) {
        mb_write(&b, keep);
    }
    mb_free(&b);
    return data;
}

static tether_custom_registry *example(void) {
    tether_custom_registry *r = NULL;
    int rc = tether_custom_registry_load(TETHER_EXAMPLES "/custom_ops/ops.json", &r);
    if (rc) {
        print_error("%s\n", tether_last_error());
    }
    assert_int_equal(rc, TETHER_OK);
    return r;
}

static void input(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)((int)(i * 7 % 23) - 11) / 4.0f;
    }
}

/* y = 2 * swish(conv(x)), computed here: x [1, 1, 3, 5], y [1, 4, 3, 5] */
static void expect_all(const float *x, float *y) {
    for (int o = 0; o < 4; o++) {
        for (int h = 0; h < 3; h++) {
            for (int w = 0; w < 5; w++) {
                double acc = (double)(o - 1) / 4.0;
                for (int kh = 0; kh < 3; kh++) {
                    for (int kw = 0; kw < 3; kw++) {
                        int ih = h + kh - 1, iw = w + kw - 1;
                        if (ih >= 0 && ih < 3 && iw >= 0 && iw < 5) {
                            acc += (double)wt(o, kh * 3 + kw) * x[ih * 5 + iw];
                        }
                    }
                }
                float v = (float)acc;
                y[(o * 3 + h) * 5 + w] = 2.0f * (v / (1.0f + expf(-v)));
            }
        }
    }
}

static void test_interp_and_c_module(void **state) {
    (void)state;
    tether_custom_registry *r = example();
    size_t len;
    uint8_t *data = model("Swish", 4, &len);
    tether_model_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.custom_ops = r;
    tether_ir_graph g;
    assert_int_equal(tether_onnx_load_buffer(data, len, "m.onnx", &lo, &g), TETHER_OK);
    /* the contract's permutes around the custom node */
    int transposes = 0, custom = 0;
    for (int i = 0; i < g.nnodes; i++) {
        transposes += g.nodes[i].op == TETHER_OP_TRANSPOSE;
        custom += g.nodes[i].op == TETHER_OP_CUSTOM;
    }
    assert_int_equal(transposes, 2);
    assert_int_equal(custom, 1);
    float x[15], y[60], want[60];
    input(x, 15);
    expect_all(x, want);
    const float *ins[1] = {x};
    float *outs[1] = {y};
    assert_int_equal(tether_interp_run(&g, ins, outs), TETHER_OK);
    for (int i = 0; i < 60; i++) {
        assert_float_equal(y[i], want[i], 1e-5);
    }
    /* the generated C module (unpacked entry) on the host */
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.codegen.abi = TETHER_ABI_UNPACKED;
    o.codegen.prefix = "cm";
    char dir[300];
    snprintf(dir, sizeof dir, "%s/c", tmp);
    tether_compile_result res;
    int rc = tether_compile_graph(&g, dir, &o, &res);
    if (rc) {
        print_error("%s\n", tether_last_error());
    }
    assert_int_equal(rc, TETHER_OK);
    char lib[400];
    snprintf(lib, sizeof lib, "%s/libcm.so", dir);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    int32_t (*fn)(const float *, float *);
    void *sym = dlsym(h, "cm_main");
    assert_non_null(sym);
    memcpy(&fn, &sym, sizeof fn);
    memset(y, 0, sizeof y);
    assert_int_equal(fn(x, y), 0);
    for (int i = 0; i < 60; i++) {
        assert_float_equal(y[i], want[i], 1e-5);
    }
    dlclose(h);
    tether_ir_close(&g);
    free(data);
    tether_custom_registry_free(r);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void test_opencl_artifact(void **state) {
    (void)state;
    tether_custom_registry *r = example();
    size_t len;
    uint8_t *data = model("Swish", 4, &len);
    tether_model_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.custom_ops = r;
    tether_ir_graph g;
    assert_int_equal(tether_onnx_load_buffer(data, len, "m.onnx", &lo, &g), TETHER_OK);
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.backend = TETHER_BACKEND_OPENCL;
    o.codegen.prefix = "om";
    char dir[300], p[400];
    snprintf(dir, sizeof dir, "%s/ocl", tmp);
    tether_compile_result res;
    int rc = tether_compile_graph(&g, dir, &o, &res);
    if (rc) {
        print_error("%s\n", tether_last_error());
    }
    assert_int_equal(rc, TETHER_OK);
    snprintf(p, sizeof p, "%s/om.cl", dir);
    const char *cl = slurp(p);
    assert_non_null(strstr(cl, "#line 1 \"swish.cl\""));
    assert_non_null(strstr(cl, "swish_image(m"));
    assert_non_null(strstr(cl, "write_imagef"));
    snprintf(p, sizeof p, "%s/metadata.json", dir);
    const char *meta = slurp(p);
    assert_non_null(strstr(meta, "\"NHWC\""));
    assert_null(strstr(meta, "buffer_variant"));
    tether_ir_close(&g);
    free(data);
    tether_custom_registry_free(r);
}

static void test_contract_and_bad_input(void **state) {
    (void)state;
    tether_custom_registry *r = example();
    tether_model_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.custom_ops = r;
    tether_ir_graph g;
    size_t len;
    /* 3 channels in an image: refused, naming the rule and the advice */
    uint8_t *data = model("Swish", 3, &len);
    assert_int_not_equal(tether_onnx_load_buffer(data, len, "m.onnx", &lo, &g), TETHER_OK);
    assert_non_null(strstr(tether_last_error(), "image contract"));
    assert_non_null(strstr(tether_last_error(), "3 channels"));
    assert_non_null(strstr(tether_last_error(), "pad to 4 channels explicitly"));
    free(data);
    /* 8 channels: C in {1, 2, 4} */
    data = model("Swish", 8, &len);
    assert_int_not_equal(tether_onnx_load_buffer(data, len, "m.onnx", &lo, &g), TETHER_OK);
    assert_non_null(strstr(tether_last_error(), "C in {1, 2, 4}"));
    free(data);
    /* an unknown custom operator lists the registry's */
    data = model("Gelu", 4, &len);
    assert_int_not_equal(tether_onnx_load_buffer(data, len, "m.onnx", &lo, &g), TETHER_OK);
    assert_non_null(strstr(tether_last_error(), "Gelu"));
    assert_non_null(strstr(tether_last_error(), "com.example::Swish"));
    /* without a registry: the option to give */
    assert_int_not_equal(tether_onnx_load_buffer(data, len, "m.onnx", NULL, &g), TETHER_OK);
    assert_non_null(strstr(tether_last_error(), "--custom-ops"));
    free(data);
    tether_custom_registry_free(r);

    /* registries: a shape rule that does not parse; no implementation for the backend */
    write_text("k.cl", "__kernel void k(__global const float *x, __global float *y) {}\n");
    write_text(
        "bad.json",
        "{\"ops\": [{\"domain\": \"com.example\", \"name\": \"Swish\", "
        "\"implementations\": {\"opencl\": {\"source\": \"k.cl\", \"kernel\": \"k\"}}, "
        "\"inputs\": [{\"kind\": \"buffer\", \"layout\": \"NCHW\", \"dtype\": \"float32\"}], "
        "\"outputs\": [{\"kind\": \"buffer\", \"layout\": \"NCHW\", \"dtype\": \"float32\", "
        "\"shape\": [\"in0[0]\", \"in0[1] +\"]}], \"work_size\": [\"out0[0]\"]}]}");
    char p[400];
    snprintf(p, sizeof p, "%s/bad.json", tmp);
    assert_int_not_equal(tether_custom_registry_load(p, &r), TETHER_OK);
    assert_null(r);
    assert_non_null(strstr(tether_last_error(), "in0[1] +"));
    assert_non_null(strstr(tether_last_error(), "com.example::Swish"));
    write_text(
        "oclonly.json",
        "{\"ops\": [{\"domain\": \"com.example\", \"name\": \"Swish\", "
        "\"implementations\": {\"opencl\": {\"source\": \"k.cl\", \"kernel\": \"k\"}}, "
        "\"inputs\": [{\"kind\": \"buffer\", \"layout\": \"NCHW\", \"dtype\": \"float32\"}], "
        "\"outputs\": [{\"kind\": \"buffer\", \"layout\": \"NCHW\", \"dtype\": \"float32\", "
        "\"shape\": \"in0\"}], \"work_size\": [\"out0[1] * out0[2] * out0[3]\"]}]}");
    snprintf(p, sizeof p, "%s/oclonly.json", tmp);
    assert_int_equal(tether_custom_registry_load(p, &r), TETHER_OK);
    lo.custom_ops = r;
    data = model("Swish", 4, &len);
    assert_int_equal(tether_onnx_load_buffer(data, len, "m.onnx", &lo, &g), TETHER_OK);
    tether_compile_options o;
    tether_compile_options_init(&o);
    char dir[300];
    snprintf(dir, sizeof dir, "%s/noc", tmp);
    tether_compile_result res;
    assert_int_not_equal(tether_compile_graph(&g, dir, &o, &res), TETHER_OK);
    assert_non_null(strstr(tether_last_error(), "no C implementation"));
    assert_int_not_equal(access(dir, F_OK), 0); /* nothing partial left */
    tether_ir_close(&g);
    /* a shape rule that parses but does not evaluate for the node */
    write_text("rank.json",
               "{\"ops\": [{\"domain\": \"com.example\", \"name\": \"Swish\", "
               "\"implementations\": {\"opencl\": {\"source\": \"k.cl\", \"kernel\": \"k\"}}, "
               "\"inputs\": [{\"kind\": \"buffer\", \"layout\": \"NCHW\", \"dtype\": "
               "\"float32\"}], \"outputs\": [{\"kind\": \"buffer\", \"layout\": \"NCHW\", "
               "\"dtype\": \"float32\", \"shape\": [\"in0[7]\"]}], \"work_size\": [1]}]}");
    tether_custom_registry *r2 = NULL;
    snprintf(p, sizeof p, "%s/rank.json", tmp);
    assert_int_equal(tether_custom_registry_load(p, &r2), TETHER_OK);
    lo.custom_ops = r2;
    assert_int_not_equal(tether_onnx_load_buffer(data, len, "m.onnx", &lo, &g), TETHER_OK);
    assert_non_null(strstr(tether_last_error(), "dimension 7 is outside in0's rank 4"));
    tether_custom_registry_free(r2);
    /* registry errors: an unknown key, an image that is not NHWC */
    write_text("key.json", "{\"ops\": [{\"domain\": \"d\", \"name\": \"n\", \"colour\": 1}]}");
    snprintf(p, sizeof p, "%s/key.json", tmp);
    assert_int_not_equal(tether_custom_registry_load(p, &r2), TETHER_OK);
    assert_non_null(strstr(tether_last_error(), "unknown key 'colour'"));
    write_text("nchwimg.json",
               "{\"ops\": [{\"domain\": \"d\", \"name\": \"n\", \"implementations\": "
               "{\"opencl\": {\"source\": \"k.cl\", \"kernel\": \"k\"}}, \"inputs\": "
               "[{\"kind\": \"image\", \"layout\": \"NCHW\", \"dtype\": \"float32\"}], "
               "\"outputs\": [{\"kind\": \"buffer\", \"layout\": \"NCHW\", \"dtype\": "
               "\"float32\", \"shape\": \"in0\"}], \"work_size\": [1]}]}");
    snprintf(p, sizeof p, "%s/nchwimg.json", tmp);
    assert_int_not_equal(tether_custom_registry_load(p, &r2), TETHER_OK);
    assert_non_null(strstr(tether_last_error(), "layout must be NHWC"));
    /* int8 declared, float32 in the graph: mismatched types */
    write_text("int8.json",
               "{\"ops\": [{\"domain\": \"com.example\", \"name\": \"Swish\", "
               "\"implementations\": {\"opencl\": {\"source\": \"k.cl\", \"kernel\": \"k\"}}, "
               "\"inputs\": [{\"kind\": \"buffer\", \"layout\": \"NCHW\", \"dtype\": \"int8\"}], "
               "\"outputs\": [{\"kind\": \"buffer\", \"layout\": \"NCHW\", \"dtype\": \"int8\", "
               "\"shape\": \"in0\"}], \"work_size\": [\"out0[1]\"]}]}");
    tether_custom_registry_free(r);
    snprintf(p, sizeof p, "%s/int8.json", tmp);
    assert_int_equal(tether_custom_registry_load(p, &r), TETHER_OK);
    lo.custom_ops = r;
    assert_int_not_equal(tether_onnx_load_buffer(data, len, "m.onnx", &lo, &g), TETHER_OK);
    assert_non_null(strstr(tether_last_error(), "is float32 but the registry declares int8"));
    free(data);
    tether_custom_registry_free(r);
}

#ifdef TETHER_CLI
#include <sys/wait.h>
/* `tether ARGS` in tmp with local: (a tetherd child); exit code, output in a static buffer. */
static int tether(const char **out, const char *args) {
    static char buf[65536];
    char cmd[4096], log[400];
    snprintf(log, sizeof log, "%s/out.txt", tmp);
    snprintf(cmd, sizeof cmd, "cd '%s' && TETHER_TETHERD='%s' '%s' %s > '%s' 2>&1", tmp,
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

/* the float32 [1, 4, 3, 5] .npy file name in tmp equals expect_all(x) */
static void check_npy(const char *name, const float *x) {
    float want[60];
    expect_all(x, want);
    char p[400];
    snprintf(p, sizeof p, "%s/%s", tmp, name);
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    unsigned char yb[4096];
    size_t yn = fread(yb, 1, sizeof yb, f);
    fclose(f);
    assert_true(yn >= 10 + 240);
    size_t off = 10 + (size_t)(yb[8] | (yb[9] << 8));
    assert_int_equal(yn - off, 240);
    for (int i = 0; i < 60; i++) {
        float v;
        memcpy(&v, yb + off + 4 * (size_t)i, 4);
        assert_float_equal(v, want[i], 1e-5);
    }
}

/* run, bench and ab through the CLI on tetherd (C backend), and a build error in the user's C
 * shown with its file and line */
static void test_cli(void **state) {
    (void)state;
    size_t len;
    uint8_t *data = model("Swish", 4, &len);
    char p[400];
    snprintf(p, sizeof p, "%s/m.onnx", tmp);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
    free(data);
    const char *o;
    int rc = tether(&o, "ab m.onnx --custom-ops " TETHER_EXAMPLES "/custom_ops/ops.json");
    print_message("%s\n", o);
    assert_int_equal(rc, 0);
    /* x.npy: float32 [1, 1, 3, 5], a 128-byte header */
    float x[15];
    input(x, 15);
    char hdr[128];
    memset(hdr, ' ', sizeof hdr);
    memcpy(hdr, "\x93NUMPY\x01\x00\x76\x00", 10); /* version 1.0, 118 header bytes */
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 3, 5), }";
    memcpy(hdr + 10, dict, strlen(dict));
    hdr[127] = '\n';
    snprintf(p, sizeof p, "%s/x.npy", tmp);
    f = fopen(p, "wb");
    assert_non_null(f);
    fwrite(hdr, 1, sizeof hdr, f);
    fwrite(x, sizeof(float), 15, f);
    fclose(f);
    rc = tether(&o, "run m.onnx --in x.npy --out y.npy --custom-ops " TETHER_EXAMPLES
                    "/custom_ops/ops.json");
    print_message("%s\n", o);
    assert_int_equal(rc, 0);
    check_npy("y.npy", x);
    rc = tether(&o, "bench m.onnx --in x.npy --custom-ops " TETHER_EXAMPLES "/custom_ops/ops.json");
    assert_int_equal(rc, 0);
    /* OpenCL (the user's image kernel) */
    rc = tether(&o,
                "run m.onnx --backend opencl --in x.npy --out yo.npy --custom-ops " TETHER_EXAMPLES
                "/custom_ops/ops.json");
    print_message("%s\n", o);
    assert_int_equal(rc, 0);
    check_npy("yo.npy", x);
    /* a user OpenCL kernel that does not build: its file and line, from the device's build */
    write_text("brokenk.cl", "__kernel void swish_image(__read_only image2d_t x,\n"
                             "                          __write_only image2d_t y) {\n"
                             "    write_imagef(y, (int2)(0, 0), nothing_here);\n}\n");
    write_text("brokenk.json",
               "{\"ops\": [{\"domain\": \"com.example\", \"name\": \"Swish\", "
               "\"implementations\": {\"opencl\": {\"source\": \"brokenk.cl\", \"kernel\": "
               "\"swish_image\"}}, \"inputs\": [{\"kind\": \"image\", \"layout\": \"NHWC\", "
               "\"dtype\": \"float32\"}], \"outputs\": [{\"kind\": \"image\", \"layout\": "
               "\"NHWC\", \"dtype\": \"float32\", \"shape\": \"in0\"}], \"work_size\": "
               "[\"out0[2]\", \"out0[1]\"]}]}");
    rc = tether(&o, "run m.onnx --backend opencl --in x.npy --custom-ops brokenk.json");
    print_message("%s\n", o);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(o, "brokenk.cl:3:"));
    /* a user C source that does not build: its file and line */
    write_text("broken.c", "int32_t swish_nhwc(const tether_custom_tensor *inputs, int32_t n,\n"
                           "    const tether_custom_tensor *outputs, int32_t m) {\n"
                           "    return undeclared_thing;\n}\n");
    write_text("broken.json",
               "{\"ops\": [{\"domain\": \"com.example\", \"name\": \"Swish\", "
               "\"implementations\": {\"c\": {\"source\": \"broken.c\", \"function\": "
               "\"swish_nhwc\"}}, \"inputs\": [{\"kind\": \"image\", \"layout\": \"NHWC\", "
               "\"dtype\": \"float32\"}], \"outputs\": [{\"kind\": \"image\", \"layout\": "
               "\"NHWC\", \"dtype\": \"float32\", \"shape\": \"in0\"}]}]}");
    rc = tether(&o, "compile m.onnx -o outb --custom-ops broken.json");
    print_message("%s\n", o);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(o, "broken.c:3:"));
    /* the registry's bad input stops the command: exit 1 and the message */
    rc = tether(&o, "run m.onnx --custom-ops missing.json");
    assert_int_equal(rc, 1);
    assert_non_null(strstr(o, "missing.json"));
}
#endif

int main(void) {
    snprintf(tmp, sizeof tmp, "%s/tether-custom-test-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp)) {
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interp_and_c_module),
        cmocka_unit_test(test_opencl_artifact),
        cmocka_unit_test(test_contract_and_bad_input),
#ifdef TETHER_CLI
        cmocka_unit_test(test_cli),
#endif
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) {
        rc = rc ? rc : 1;
    }
    return rc;
}
