/*
 * tetherd's OpenCL layer through the host library (label opencl, PoCL): a texture-scope array
 * round trip (COPY_TO into the image, COPY_FROM back, equal), a texture kernel
 * (read_imagef/write_imagef) built from an uploaded source and run remotely with the right
 * output, a kernel on global buffers with a scalar, TIME of a kernel, a build failure returning
 * the build log, and an image over the device's real limit rejected with a clear error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon.h"
#include "tether/crt.h"

static const char k_src[] =
    "__constant sampler_t smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE |\n"
    "                           CLK_FILTER_NEAREST;\n"
    "__kernel void scale_tex(__read_only image2d_t in, __write_only image2d_t out, float k) {\n"
    "    int2 p = (int2)(get_global_id(0), get_global_id(1));\n"
    "    write_imagef(out, p, read_imagef(in, smp, p) * k + (float4)(1, 2, 3, 4));\n"
    "}\n"
    "__kernel void axpy(__global const float *x, __global float *y, float a) {\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n";

static tether_session *g_s;
static test_daemon g_d;

static void test_opencl(void **state) {
    (void)state;
    assert_int_equal(daemon_start(&g_d, NULL), 0);
    if (tether_session_open(&g_s, g_d.url, NULL)) {
        fail_msg("open: %s", tether_last_error());
    }
    const tether_device_info *info = tether_session_info(g_s);
    if (!info->opencl) {
        tether_session_close(g_s);
        daemon_stop(&g_d);
        skip();
    }
    assert_true(info->image_max_width >= 1024 && info->image_max_height >= 1024);
    assert_true(info->scopes & (1u << TETHER_SCOPE_TEXTURE));

    /* texture round trip: [1, 8, 32, 4] -> 32 wide, 8 high; copied in two chunks */
    int64_t shape[] = {1, 8, 32, 4};
    enum { N = 8 * 32 * 4 };
    float *v = malloc(N * 4), *back = malloc(N * 4);
    for (int i = 0; i < N; i++) {
        v[i] = (float)i * 0.5f - 100.0f;
    }
    uint64_t tin, tout, nb;
    assert_int_equal(
        tether_session_alloc(g_s, shape, 4, TETHER_FLOAT32, TETHER_SCOPE_TEXTURE, "", &tin, &nb),
        0);
    assert_int_equal(nb, N * 4);
    assert_int_equal(tether_session_copy_to(g_s, tin, 0, v, 1000), 0);
    assert_int_equal(tether_session_copy_to(g_s, tin, 1000, (uint8_t *)v + 1000, N * 4 - 1000), 0);
    memset(back, 0, N * 4);
    assert_int_equal(tether_session_copy_from(g_s, tin, 0, back, N * 4), 0);
    assert_memory_equal(back, v, N * 4);
    assert_int_equal(tether_session_copy_from(g_s, tin, 512 * 4, back, 16), 0);
    assert_memory_equal(back, v + 512, 16);

    /* texture kernel */
    assert_int_equal(tether_session_upload(g_s, 1, "k.cl", k_src, sizeof k_src - 1), 0);
    uint64_t mod;
    uint32_t nf;
    if (tether_session_load_module(g_s, "k.cl", &mod, &nf)) {
        fail_msg("build: %s", tether_last_error());
    }
    assert_int_equal(nf, 2);
    tether_remote_func f;
    assert_int_equal(tether_session_get_function(g_s, mod, "scale_tex", &f), 0);
    assert_int_equal(f.num_args, 3);
    assert_int_equal(
        tether_session_alloc(g_s, shape, 4, TETHER_FLOAT32, TETHER_SCOPE_TEXTURE, "", &tout, NULL),
        0);
    tether_remote_arg a[3] = {{TETHER_TYPE_HANDLE, {.array = tin}},
                              {TETHER_TYPE_HANDLE, {.array = tout}},
                              {TETHER_TYPE_FLOAT, {.f = 2.0}}};
    uint64_t g2[2] = {32, 8};
    tether_call_result r;
    if (tether_session_launch(g_s, &f, a, 3, 2, g2, NULL, &r)) {
        fail_msg("launch: %s", tether_last_error());
    }
    assert_int_equal(tether_session_copy_from(g_s, tout, 0, back, N * 4), 0);
    for (int i = 0; i < N; i++) {
        assert_true(back[i] == v[i] * 2.0f + (float)(i % 4 + 1));
    }
    tether_time_stats ts;
    if (tether_session_time_launch(g_s, &f, a, 3, 2, g2, NULL, 3, 2, 0, 0, &ts)) {
        fail_msg("time: %s", tether_last_error());
    }
    assert_int_equal(ts.repeat, 2);

    /* buffer kernel with a scalar */
    assert_int_equal(tether_session_get_function(g_s, mod, "axpy", &f), 0);
    float x[64], y[64], out[64];
    for (int i = 0; i < 64; i++) {
        x[i] = (float)i, y[i] = 1.0f;
    }
    uint64_t hx = alloc_f32(g_s, 64, x), hy = alloc_f32(g_s, 64, y);
    tether_remote_arg b[3] = {{TETHER_TYPE_DLTENSOR, {.array = hx}},
                              {TETHER_TYPE_DLTENSOR, {.array = hy}},
                              {TETHER_TYPE_FLOAT, {.f = 3.0}}};
    uint64_t g1[1] = {64}, l1[1] = {16};
    assert_int_equal(tether_session_launch(g_s, &f, b, 3, 1, g1, l1, &r), 0);
    assert_int_equal(tether_session_copy_from(g_s, hy, 0, out, sizeof out), 0);
    for (int i = 0; i < 64; i++) {
        assert_true(out[i] == 3.0f * (float)i + 1.0f);
    }
    /* a kernel without an NDRange, wrong argument count */
    assert_int_equal(tether_session_call(g_s, &f, b, 3, &r), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "global work size"));
    assert_int_equal(tether_session_launch(g_s, &f, b, 2, 1, g1, NULL, &r), TETHER_ERR_MISMATCH);

    /* build failure carries the log */
    const char bad[] = "__kernel void broken(__global float *x) { x[0] = undefined_name; }\n";
    assert_int_equal(tether_session_upload(g_s, 1, "bad.cl", bad, sizeof bad - 1), 0);
    assert_int_equal(tether_session_load_module(g_s, "bad.cl", NULL, NULL), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "clBuildProgram failed"));
    assert_non_null(strstr(tether_last_error(), "undefined_name"));

    /* an image wider than the device's limit */
    int64_t wide[] = {1, (int64_t)info->image_max_width + 1, 4};
    uint64_t hw;
    assert_int_equal(
        tether_session_alloc(g_s, wide, 3, TETHER_FLOAT32, TETHER_SCOPE_TEXTURE, "", &hw, NULL),
        TETHER_ERR_LIMIT);
    char lim[32];
    snprintf(lim, sizeof lim, "%u", info->image_max_width);
    assert_non_null(strstr(tether_last_error(), lim));
    /* texture:weight flattening: [W0, d1.., 4] -> height d0 */
    int64_t tall[] = {(int64_t)info->image_max_height + 1, 2, 4};
    assert_int_equal(tether_session_alloc(g_s, tall, 3, TETHER_FLOAT32, TETHER_SCOPE_TEXTURE_WEIGHT,
                                          "", &hw, NULL),
                     TETHER_ERR_LIMIT);
    int64_t odd[] = {2, 3};
    assert_int_equal(
        tether_session_alloc(g_s, odd, 2, TETHER_FLOAT32, TETHER_SCOPE_TEXTURE, "", &hw, NULL),
        TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "pad the channels to 4 explicitly"));
    /* the image contract: 1 and 2 channels are CL_R / CL_RG images; bytes round-trip */
    for (int c = 1; c <= 2; c++) {
        int64_t rs[] = {1, 5, 7, c};
        float rv[70], rb[70];
        for (int i = 0; i < 35 * c; i++) {
            rv[i] = (float)(i * 3 + c);
        }
        uint64_t hr;
        int rc =
            tether_session_alloc(g_s, rs, 4, TETHER_FLOAT32, TETHER_SCOPE_TEXTURE, "", &hr, NULL);
        if (rc == TETHER_ERR_UNSUPPORTED && c == 2 &&
            strstr(tether_last_error(), "no CL_RG float images")) {
            continue; /* optional format (PoCL has CL_R and CL_RGBA): refused by name */
        }
        if (rc) {
            fail_msg("%d-channel texture: %s", c, tether_last_error());
        }
        assert_int_equal(tether_session_copy_to(g_s, hr, 0, rv, (size_t)(35 * c) * 4), 0);
        memset(rb, 0, sizeof rb);
        assert_int_equal(tether_session_copy_from(g_s, hr, 0, rb, (size_t)(35 * c) * 4), 0);
        assert_memory_equal(rb, rv, (size_t)(35 * c) * 4);
        assert_int_equal(tether_session_free(g_s, hr), 0);
    }
    free(v);
    free(back);
    tether_session_close(g_s);
    daemon_stop(&g_d);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_opencl)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
