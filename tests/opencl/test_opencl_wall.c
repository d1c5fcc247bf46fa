/*
 * test_opencl_codegen (codegen_common.h): the wall-clock latency of one inference on the device
 * and the launch overhead in `tether run`, `bench` and `ab --opencl` (text and --json) on PoCL:
 * the fields exist and are numbers where the device reports them: the kernel sum from profiled
 * runs, the wall clock from runs without profiling events (first enqueue to clFinish), the
 * overhead their difference. No timing comparisons (the two come from different runs) and no
 * ratios: PoCL's times say nothing about a GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_common.h"
#include "ops_common.h"
#include "tether/npy.h"

/* The --json file g_tmp/name, parsed (the test fails when it is not there or not JSON). */
static cJSON *load_json(const char *name) {
    char p[200];
    snprintf(p, sizeof p, "%s/%s", g_tmp, name);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    char *text = calloc(1, 1 << 20);
    assert_non_null(text);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    assert_true(n > 0);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    return j;
}

/* o[key], which must be a number; its value. */
static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v)) {
        fail_msg("'%s' is not a number", key);
    }
    return v->valuedouble;
}

void test_wall_clock(void **state) {
    (void)state;
    static char o[16384];
    const char *kws = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    float x[490];
    uint32_t seed = 11;
    tt_fill(x, 490, false, &seed);
    int64_t xs[4] = {1, 1, 49, 10};
    char p[200];
    snprintf(p, sizeof p, "%s/xw.npy", g_tmp);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, xs, 4, x), 0);
    if (run_cli(o, sizeof o, "compile '%s' -o kws_wall --backend opencl --prefix kws", kws)) {
        fail_msg("%s", o);
    }

    /* run: the one inference's wall clock, its overhead and each kernel's time */
    if (run_cli(o, sizeof o, "run kws_wall --in xw.npy --out w.npy --json run.json")) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "wall-clock "));
    assert_non_null(strstr(o, "on the device (an unprofiled run: first enqueue to the end of "
                              "clFinish), launch overhead "));
    cJSON *j = load_json("run.json");
    const cJSON *call = cJSON_GetObjectItemCaseSensitive(j, "call");
    assert_non_null(call);
    double sum = num(call, "time_us"), wall = num(call, "wall_us");
    double over = num(call, "launch_overhead_us");
    assert_true(wall > 0);
    assert_true(fabs(over - (wall - sum)) < 1e-6 * (wall + 1));
    const cJSON *kt = cJSON_GetObjectItemCaseSensitive(call, "kernel_times");
    assert_true(cJSON_IsArray(kt));
    assert_int_equal(cJSON_GetArraySize(kt), (int)num(call, "kernels"));
    assert_int_equal(cJSON_GetArraySize(kt), 2); /* conv1; fc and softmax in one kernel */
    double ksum = 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, kt) {
        assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(k, "kernel")));
        assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(k, "node")));
        double t = num(k, "time_us");
        assert_true(t > 0);
        ksum += t;
    }
    assert_true(fabs(ksum - sum) < 1e-3 * (sum + 1));
    cJSON_Delete(j);

    /* bench: the medians over the repeats */
    if (run_cli(o, sizeof o,
                "bench kws_wall --in xw.npy --number 2 --repeat 3 --json bench.json")) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "per inference on the device (unprofiled runs: first enqueue to "
                              "the end of clFinish), launch overhead "));
    j = load_json("bench.json");
    wall = num(j, "wall_us");
    sum = num(j, "kernel_sum_us"); /* the profiled runs' median */
    assert_true(wall > 0);
    assert_true(sum > 0);
    assert_true(fabs(num(j, "launch_overhead_us") - (wall - sum)) < 1e-6 * (wall + sum + 1));
    const cJSON *kb = cJSON_GetObjectItemCaseSensitive(j, "kernels");
    assert_int_equal(cJSON_GetArraySize(kb), 2);
    cJSON_ArrayForEach(k, kb) {
        assert_true(num(k, "median_us") > 0);
    }
    cJSON_Delete(j);

    /* ab --opencl: per OpenCL side the wall-clock median, the overhead and one wall per repeat */
    if (run_cli(o, sizeof o,
                "ab '%s' --opencl --in xw.npy --number 2 --repeat 3 --json abw.json --svg abw.svg",
                kws)) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "wall-clock median (us)"));
    assert_non_null(strstr(o, "launch overhead (us)"));
    j = load_json("abw.json");
    const cJSON *ocl = cJSON_GetObjectItemCaseSensitive(j, "opencl");
    assert_int_equal(cJSON_GetArraySize(ocl), 2);
    const cJSON *side;
    cJSON_ArrayForEach(side, ocl) {
        double w = num(side, "wall_median_us");
        assert_true(w > 0);
        (void)num(side, "launch_overhead_median_us");
        const cJSON *wr = cJSON_GetObjectItemCaseSensitive(side, "wall_repeats_us");
        const cJSON *tr = cJSON_GetObjectItemCaseSensitive(side, "repeats_us");
        assert_int_equal(cJSON_GetArraySize(wr), 3);
        assert_int_equal(cJSON_GetArraySize(tr), 3);
        for (int r = 0; r < 3; r++) {
            assert_true(cJSON_GetArrayItem(wr, r)->valuedouble > 0);
        }
    }
    /* the C sides have no wall clock of their own: their entries keep their fields only */
    const cJSON *abis = cJSON_GetObjectItemCaseSensitive(j, "abis");
    cJSON_ArrayForEach(side, abis) {
        assert_null(cJSON_GetObjectItemCaseSensitive(side, "wall_median_us"));
    }
    cJSON_Delete(j);
    snprintf(p, sizeof p, "%s/abw.svg", g_tmp);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    char *svg = calloc(1, 1 << 20);
    assert_non_null(svg);
    assert_true(fread(svg, 1, (1 << 20) - 1, f) > 0);
    fclose(f);
    assert_non_null(strstr(svg, "; wall "));
    free(svg);
}
