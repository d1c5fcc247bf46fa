/*
 * test_opencl_codegen (codegen_common.h): the CLI on OpenCL artifacts: KWS over local: and over
 * TCP to a tetherd on 127.0.0.1, buffer and texture weights, equal to `tether run --reference`
 * within 1e-4, and `tether bench`; tune --backend opencl; usage errors, edited artifacts and a
 * texture image over the device's limit refused with their reasons.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen_common.h"
#include "daemon.h"
#include "ops_common.h"
#include "tether/npy.h"

/* ---- the CLI: KWS over local: and TCP, reference, bench, errors ---------------------------- */

void test_kws_cli(void **state) {
    (void)state;
    static char o[16384];
    const char *kws = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    float x[490];
    uint32_t seed = 5;
    tt_fill(x, 490, false, &seed);
    int64_t xs[4] = {1, 1, 49, 10};
    char p[200];
    snprintf(p, sizeof p, "%s/x.npy", g_tmp);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, xs, 4, x), 0);
    assert_int_equal(run_cli(o, sizeof o, "run '%s' --reference --in x.npy --out ref.npy", kws), 0);
    /* buffer weights */
    if (run_cli(o, sizeof o, "compile '%s' -o kws_buf --backend opencl --prefix kws", kws)) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "OpenCL kernels"));
    if (run_cli(o, sizeof o, "run kws_buf --in x.npy --out buf.npy")) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "kws (OpenCL): 2 kernels in")); /* fc and softmax: one kernel */
    expect_equal_npy("buf.npy", "ref.npy", 1e-4);
    /* texture weights */
    if (run_cli(o, sizeof o,
                "compile '%s' -o kws_tex --backend opencl --texture-weights --prefix kws", kws)) {
        fail_msg("%s", o);
    }
    if (run_cli(o, sizeof o, "run kws_tex --in x.npy --out tex.npy")) {
        fail_msg("%s", o);
    }
    expect_equal_npy("tex.npy", "ref.npy", 1e-4);
    snprintf(p, sizeof p, "%s/kws_tex/metadata.json", g_tmp);
    char *meta = NULL;
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    meta = calloc(1, 65536);
    assert_true(fread(meta, 1, 65535, f) > 0);
    fclose(f);
    assert_non_null(strstr(meta, "\"texture:weight\""));
    assert_non_null(strstr(meta, "\"OIHW4o\""));
    free(meta);
    /* bench: the sum of the kernels' times and one line per kernel */
    if (run_cli(o, sizeof o, "bench kws_tex --in x.npy --number 3 --repeat 2")) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "kws (OpenCL, 2 kernels): 2 repeats x"));
    assert_non_null(strstr(o, "kernel kws_conv1"));
    assert_non_null(strstr(o, "kernel kws_fc"));
    /* a model file compiled for OpenCL on the fly */
    if (run_cli(o, sizeof o, "run '%s' --backend opencl --texture-weights --in x.npy --out m.npy",
                kws)) {
        fail_msg("%s", o);
    }
    expect_equal_npy("m.npy", "ref.npy", 1e-4);
    /* ab with the OpenCL backend beside both ABIs */
    if (run_cli(o, sizeof o, "ab '%s' --opencl --in x.npy --number 2 --repeat 1 --json ab.json",
                kws)) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "OpenCL backend on the same device"));
    snprintf(p, sizeof p, "%s/ab.json", g_tmp);
    f = fopen(p, "r");
    assert_non_null(f);
    meta = calloc(1, 65536);
    assert_true(fread(meta, 1, 65535, f) > 0);
    fclose(f);
    assert_non_null(strstr(meta, "\"weights\":\t\"texture\""));
    assert_null(strstr(meta, "\"outputs_equal\":\tfalse"));
    free(meta);
    /* over TCP to a tetherd on 127.0.0.1 */
    test_daemon d;
    assert_int_equal(daemon_start(&d, NULL), 0);
    int rc1 = run_cli(o, sizeof o, "run --device %s kws_buf --in x.npy --out tcp_buf.npy", d.url);
    char o1[2048];
    snprintf(o1, sizeof o1, "%.2000s", o);
    int rc2 = run_cli(o, sizeof o, "run --device %s kws_tex --in x.npy --out tcp_tex.npy", d.url);
    daemon_stop(&d);
    if (rc1 || rc2) {
        fail_msg("tcp: %s / %s", o1, o);
    }
    expect_equal_npy("tcp_buf.npy", "ref.npy", 1e-4);
    expect_equal_npy("tcp_tex.npy", "ref.npy", 1e-4);
    /* a device without OpenCL refuses the artifact with the reason */
    static const char *const noocl[] = {"--no-opencl", NULL};
    assert_int_equal(daemon_start(&d, noocl), 0);
    int rc3 = run_cli(o, sizeof o, "run --device %s kws_buf --in x.npy --out no.npy", d.url);
    daemon_stop(&d);
    assert_int_equal(rc3, 1);
    assert_non_null(strstr(o, "has no OpenCL layer"));
    snprintf(p, sizeof p, "%s/no.npy", g_tmp);
    assert_int_equal(access(p, F_OK), -1);
    /* a wrong input shape is named before the device is contacted */
    int64_t bad[2] = {49, 10};
    snprintf(p, sizeof p, "%s/bad.npy", g_tmp);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, bad, 2, x), 0);
    assert_int_equal(run_cli(o, sizeof o, "run kws_buf --in bad.npy --out b.npy"), 1);
    assert_non_null(strstr(o, "bad.npy: shape [49,10], but model input 'mfcc' is [1,1,49,10]"));
    assert_int_equal(run_cli(o, sizeof o, "run kws_buf"), 2);
}

/* tether tune --backend opencl: KWS's three kernels (conv, dense, softmax), work-group sizes
 * measured on PoCL through the artifact runner, records for target "opencl"; run with the log
 * uses them for every launch and still equals --reference. */
void test_tune_opencl(void **state) {
    (void)state;
    static char o[16384];
    const char *kws = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    assert_int_equal(run_cli(o, sizeof o,
                             "tune '%s' --backend opencl --trials 3 --number 3 --repeat 3 --log "
                             "tk.json",
                             kws),
                     0);
    assert_non_null(strstr(o, "(opencl, cpu baseline): 3 workloads"));
    assert_non_null(strstr(o, "tuned 9 candidates"));
    assert_int_equal(run_cli(o, sizeof o, "run '%s' --reference --in x.npy --out tref.npy", kws),
                     0);
    assert_int_equal(run_cli(o, sizeof o,
                             "run '%s' --backend opencl --tuning-log tk.json --in x.npy --out "
                             "ttuned.npy",
                             kws),
                     0);
    assert_non_null(strstr(o, "3 of 3 kernels with knobs use a tuned schedule (opencl"));
    expect_equal_npy("tref.npy", "ttuned.npy", 1e-4);
    char p[200], *text;
    snprintf(p, sizeof p, "%s/tk.json", g_tmp);
    assert_int_equal(tether_file_read_text(p, 1 << 20, &text, NULL), 0);
    assert_non_null(strstr(text, "\"target\":\"opencl\""));
    assert_null(strstr(text, "\"us\":-1"));
    free(text);
}

void test_cli_errors(void **state) {
    (void)state;
    static char o[16384];
    const char *kws = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    assert_int_equal(run_cli(o, sizeof o, "compile '%s' -o e1 --backend cuda", kws), 2);
    assert_non_null(strstr(o, "unknown backend 'cuda'"));
    assert_int_equal(run_cli(o, sizeof o, "compile '%s' -o e1 --texture-weights", kws), 2);
    assert_non_null(strstr(o, "--texture-weights needs --backend opencl"));
    assert_int_equal(run_cli(o, sizeof o, "compile '%s' -o e1 --backend opencl --abi packed", kws),
                     2);
    assert_non_null(strstr(o, "--abi applies to the C backend"));
    assert_int_equal(
        run_cli(o, sizeof o, "compile '%s' -o e1 --backend opencl --local-size 0", kws), 2);
    assert_int_equal(run_cli(o, sizeof o, "compile '%s' -o e1 --texture-activations", kws), 2);
    assert_non_null(strstr(o, "--texture-activations needs --backend opencl"));
    assert_int_equal(
        run_cli(o, sizeof o, "compile '%s' -o e1 --backend opencl --image-max 4096", kws), 2);
    assert_non_null(strstr(o, "--image-max '4096' is not WIDTHxHEIGHT"));
    assert_int_equal(run_cli(o, sizeof o, "run '%s' --texture-activations --in x.npy", kws), 2);
    assert_non_null(strstr(o, "--texture-activations needs --backend opencl"));
    char p[200];
    snprintf(p, sizeof p, "%s/e1", g_tmp);
    assert_int_equal(access(p, F_OK), -1);
    /* a damaged artifact is refused with the reason before the device is contacted */
    assert_int_equal(run_cli(o, sizeof o, "compile '%s' -o dmg --backend opencl --quiet", kws), 0);
    float x0[490] = {0};
    int64_t xs[4] = {1, 1, 49, 10};
    snprintf(p, sizeof p, "%s/x0.npy", g_tmp);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, xs, 4, x0), 0);
    snprintf(p, sizeof p, "cd '%s/dmg' && sed -i 's/\"memory\":\t3/\"memory\":\t99/' metadata.json",
             g_tmp);
    assert_int_equal(system(p), 0);
    assert_int_equal(run_cli(o, sizeof o, "run dmg --in x0.npy --out d.npy"), 1);
    assert_non_null(strstr(o, "names no memory object"));
    assert_int_equal(run_cli(o, sizeof o, "compile '%s' -o dmg --backend opencl --quiet", kws), 0);
    snprintf(p, sizeof p, "%s/dmg/params.bin", g_tmp);
    assert_int_equal(truncate(p, 1000), 0);
    assert_int_equal(run_cli(o, sizeof o, "run dmg --in x0.npy --out d.npy"), 1);
    assert_non_null(strstr(o, "params_bytes differs from the size of params.bin"));
    /* work sizes the arrays cannot hold, a local size that does not divide, steps missing */
    const char *edits[3][2] = {
        {"s/\"global\":\t\\[256\\]/\"global\":\t[1048576]/; s/\"int\":\t250/\"int\":\t1048576/",
         "exceeds its work size"},
        {"s/\"local\":\t\\[64\\]/\"local\":\t[7]/", "is not a multiple of local"},
        {"s/\"kernels\":\t3/\"kernels\":\t1000/", "differs from the 3 steps"},
    };
    setenv("TETHER_OPENCL_LEGACY", "1", 1); /* the sizes above are the legacy kernels' */
    for (int k = 0; k < 3; k++) {
        assert_int_equal(run_cli(o, sizeof o, "compile '%s' -o dmg --backend opencl --quiet", kws),
                         0);
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "cd '%s/dmg' && sed -i '%s' metadata.json", g_tmp, edits[k][0]);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(run_cli(o, sizeof o, "run dmg --in x0.npy --out d.npy"), 1);
        if (!strstr(o, edits[k][1])) {
            fail_msg("edit %d: %s", k, o);
        }
    }
    unsetenv("TETHER_OPENCL_LEGACY");
    snprintf(p, sizeof p, "%s/d.npy", g_tmp);
    assert_int_equal(access(p, F_OK), -1);
    /* an OpenCL artifact with a texture image over the limit, through the CLI (compiled for
     * larger image limits than the device's, so it has no buffer variant to fall back to) */
    const tether_device_info *d = tether_session_info(g_s);
    int64_t C = d->image_max_width / 9 + 1;
    conv_case c = {"wide", {1, C, 3, 3}, {4, C, 3, 3}, 1, 1, 1, 1, 1, TETHER_ACT_NONE, 0};
    tether_ir_graph g;
    build_conv(&g, &c);
    char dir[128];
    g_img_max[0] = g_img_max[1] = (int64_t)1 << 20;
    compile_ocl(&g, true, true, dir, sizeof dir);
    g_img_max[0] = g_img_max[1] = 0;
    float *x = calloc((size_t)(C * 9), sizeof(float));
    snprintf(p, sizeof p, "%s/wide.npy", g_tmp);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, c.x, 4, x), 0);
    free(x);
    assert_int_equal(run_cli(o, sizeof o, "run '%s' --in wide.npy --out wide_y.npy", dir), 1);
    assert_non_null(strstr(o, "tether run: w (node 'conv'): texture:weight image width"));
    assert_non_null(strstr(o, "CL_DEVICE_IMAGE2D_MAX_WIDTH"));
    assert_non_null(strstr(o, "recompile with --device URL or --image-max WxH at the device's "
                              "limits, or without --texture-weights"));
    snprintf(p, sizeof p, "%s/wide_y.npy", g_tmp);
    assert_int_equal(access(p, F_OK), -1);
    rm_tree(dir);
    tether_ir_close(&g);
}
