/*
 * test_opencl_codegen's --precision fp16 tests (emit_opencl_fp16.c, docs/codegen.md "Half
 * precision") on PoCL. The kernels use only core OpenCL C (vload_half/vstore_half,
 * read_imagef/write_imagef on CL_HALF_FLOAT images), so PoCL runs the real fp16 artifact: every
 * operator, the conv cases with buffer and texture weights, the GPU kernels (split-K dense, GEMM
 * and depthwise conv) and the legacy ones, texture activations, the zoo and the MobileNet-style
 * block, each within 2e-2 of the interpreter; the artifact really holds half (metadata dtype
 * float16, params.bin half the bytes, vload_half in the source, float32 inputs/outputs) and the
 * CLI refuses a precision it does not know.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_common.h"
#include "ops_common.h"

static long file_size(const char *dir, const char *name) {
    char p[300];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    if (!f) {
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

static int grep_q(const char *dir, const char *file, const char *what) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "grep -q -- '%s' '%s/%s'", what, dir, file);
    return system(cmd) == 0;
}

void test_fp16(void **state) {
    (void)state;
    g_fp16 = true;
    test_every_operator(state); /* the operator cases of test_every_operator, in half */
    static const conv_case convs[] = {
        {"h_3x3_pad_relu", {1, 3, 8, 8}, {8, 3, 3, 3}, 1, 1, 1, 1, 1, TETHER_ACT_RELU, 0},
        {"h_depthwise_s2", {1, 8, 9, 9}, {8, 1, 3, 3}, 8, 2, 1, 1, 1, TETHER_ACT_CLIP, 0},
        {"h_pointwise", {1, 16, 6, 6}, {32, 16, 1, 1}, 1, 1, 0, 1, 1, TETHER_ACT_NONE, 1},
        {"h_groups2", {1, 16, 6, 6}, {16, 8, 3, 3}, 2, 1, 1, 1, 1, TETHER_ACT_SIGMOID, 0},
    };
    for (size_t i = 0; i < sizeof convs / sizeof *convs; i++) {
        tether_ir_graph g;
        build_conv(&g, &convs[i]);
        check_graph(&g, NULL, false, true); /* GPU kernels (depthwise, dense conv untuned) */
        check_graph(&g, NULL, true, true);  /* texture weights: CL_HALF_FLOAT images */
        g_conv_gemm = true;                 /* the tiled GEMM conv with local-memory tiles */
        check_graph(&g, NULL, false, true);
        g_conv_gemm = false;
        g_legacy = true;
        check_graph(&g, NULL, false, true);
        g_legacy = false;
        tether_ir_close(&g);
    }
    tether_ir_graph z, m;
    tt_build_zoo(&z);
    assert_int_equal(tether_ir_infer(&z), 0);
    tt_build_mobile(&m, false);
    check_graph(&z, NULL, false, true);
    check_graph(&m, NULL, false, true);
    g_tex_act = true; /* activations in half images */
    check_graph(&m, NULL, true, true);
    check_graph(&z, NULL, false, true);
    g_tex_act = false;

    /* the artifact holds half: params.bin half the bytes of fp32's, float16 memory objects,
     * vload_half/vstore_half in the kernels, the input and output float32 */
    char d16[128], d32[128];
    compile_ocl(&m, false, true, d16, sizeof d16);
    g_fp16 = false;
    compile_ocl(&m, false, true, d32, sizeof d32);
    long p16 = file_size(d16, "params.bin"), p32 = file_size(d32, "params.bin");
    assert_true(p32 > 0);
    assert_int_equal(p16 * 2, p32);
    assert_true(grep_q(d16, "metadata.json", "\"dtype\":.*\"float16\""));
    assert_true(grep_q(d16, "metadata.json", "\"precision\":.*\"fp16\""));
    assert_true(grep_q(d32, "metadata.json", "\"precision\":.*\"fp32\""));
    assert_false(grep_q(d32, "metadata.json", "float16"));
    assert_true(grep_q(d16, "m.cl", "vload_half"));
    assert_true(grep_q(d16, "m.cl", "vstore_half"));
    assert_true(grep_q(d16, "m.cl", "__global const float \\*m0 /\\* input"));
    assert_false(grep_q(d32, "m.cl", "half"));
    rm_tree(d16);
    rm_tree(d32);
    tether_ir_close(&z);
    tether_ir_close(&m);

    /* the CLI: --precision fp16 runs KWS close to the reference; a wrong value is a usage error;
     * fp16 is an OpenCL option */
    static char o[8192];
    int rc = run_cli(o, sizeof o,
                     "run '%s/examples/kws/kws.json' --in '%s/examples/kws/input_0.npy' --backend "
                     "opencl --precision fp16 --out h.npy",
                     TETHER_SOURCE_DIR, TETHER_SOURCE_DIR);
    if (rc != 0) {
        fail_msg("run --precision fp16: %s", o);
    }
    rc = run_cli(o, sizeof o,
                 "run '%s/examples/kws/kws.json' --in '%s/examples/kws/input_0.npy' --reference "
                 "--out r.npy",
                 TETHER_SOURCE_DIR, TETHER_SOURCE_DIR);
    assert_int_equal(rc, 0);
    expect_equal_npy("h.npy", "r.npy", 2e-3);
    rc = run_cli(o, sizeof o,
                 "compile '%s/examples/kws/kws.json' -o x --backend opencl "
                 "--precision fp8",
                 TETHER_SOURCE_DIR);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(o, "--precision 'fp8' is not fp32 or fp16"));
    rc = run_cli(o, sizeof o, "compile '%s/examples/kws/kws.json' -o x --precision fp16",
                 TETHER_SOURCE_DIR);
    assert_int_equal(rc, 2);
}
