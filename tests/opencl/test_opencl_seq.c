/*
 * Kernel sequences (LAUNCH_SEQ / TIME_SEQ, label opencl, PoCL) through the host library, on a
 * tetherd over TCP and on local: (tetherd --stdio): four steps of three kernels (one kernel used
 * twice with other arguments) give the right outputs in one request, with one time per step
 * summing to the total; TIME_SEQ returns per-repeat and per-step times; without profiling
 * (TETHER_SEQ_NO_PROFILE) both return the same outputs and only the wall clock, no step times;
 * an undefined flag is refused; a bad step 2 is reported
 * with its index and kernel and nothing runs; the host refuses sequences past the limits.
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
    "__kernel void k_scale(__global const float *x, __global float *y, float a) {\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = a * x[i];\n"
    "}\n"
    "__kernel void k_add(__global const float *a, __global const float *b, __global float *c) {\n"
    "    size_t i = get_global_id(0);\n"
    "    c[i] = a[i] + b[i];\n"
    "}\n"
    "__kernel void k_relu(__global const float *x, __global float *y) {\n"
    "    size_t i = get_global_id(1) * get_global_size(0) + get_global_id(0);\n"
    "    y[i] = fmax(x[i], 0.0f);\n"
    "}\n";

enum { N = 256 };

static void check_session(tether_session *s) {
    assert_int_equal(
        tether_session_upload(s, TETHER_MODULE_OPENCL_SOURCE, "seq.cl", k_src, sizeof k_src - 1),
        0);
    uint64_t mod;
    if (tether_session_load_module(s, "seq.cl", &mod, NULL)) {
        fail_msg("build: %s", tether_last_error());
    }
    tether_remote_func fs, fa, fr;
    assert_int_equal(tether_session_get_function(s, mod, "k_scale", &fs), 0);
    assert_int_equal(tether_session_get_function(s, mod, "k_add", &fa), 0);
    assert_int_equal(tether_session_get_function(s, mod, "k_relu", &fr), 0);
    float x[N], z[N], zero[N], out[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i - N / 2);
        z[i] = (float)(i % 7) - 3.0f;
        zero[i] = 0.0f;
    }
    uint64_t hx = alloc_f32(s, N, x), hy = alloc_f32(s, N, zero), hz = alloc_f32(s, N, z),
             hu = alloc_f32(s, N, zero), hw = alloc_f32(s, N, zero), hv = alloc_f32(s, N, zero);
    tether_remote_arg a0[3] = {{TETHER_TYPE_DLTENSOR, {.array = hx}},
                               {TETHER_TYPE_DLTENSOR, {.array = hy}},
                               {TETHER_TYPE_FLOAT, {.f = 2.0}}};
    tether_remote_arg a1[3] = {{TETHER_TYPE_DLTENSOR, {.array = hy}},
                               {TETHER_TYPE_DLTENSOR, {.array = hz}},
                               {TETHER_TYPE_DLTENSOR, {.array = hu}}};
    tether_remote_arg a2[2] = {{TETHER_TYPE_DLTENSOR, {.array = hu}},
                               {TETHER_TYPE_DLTENSOR, {.array = hw}}};
    tether_remote_arg a3[3] = {{TETHER_TYPE_DLTENSOR, {.array = hw}},
                               {TETHER_TYPE_DLTENSOR, {.array = hv}},
                               {TETHER_TYPE_FLOAT, {.f = 0.5}}};
    tether_launch_step st[4] = {
        {&fs, a0, 3, 1, {N, 0, 0}, {64, 0, 0}},
        {&fa, a1, 3, 1, {N, 0, 0}, {0, 0, 0}},
        {&fr, a2, 2, 2, {N / 4, 4, 0}, {0, 0, 0}},
        {&fs, a3, 3, 1, {N, 0, 0}, {0, 0, 0}}, /* the same kernel again, other arguments */
    };
    tether_seq_result res;
    if (tether_session_launch_seq(s, st, 4, &res)) {
        fail_msg("LAUNCH_SEQ: %s", tether_last_error());
    }
    assert_int_equal(res.num_steps, 4);
    assert_int_equal(res.elapsed_ns,
                     res.step_ns[0] + res.step_ns[1] + res.step_ns[2] + res.step_ns[3]);
    /* the wall clock of the sequence on the device (the first START to the last END of the
     * profiled events) spans every step */
    assert_true(res.wall_ns > 0);
    for (int k = 0; k < 4; k++) {
        assert_true(res.wall_ns >= res.step_ns[k]);
    }
    assert_int_equal(tether_session_copy_from(s, hw, 0, out, sizeof out), 0);
    for (int i = 0; i < N; i++) {
        float want = 2.0f * x[i] + z[i];
        assert_true(out[i] == (want > 0 ? want : 0.0f));
    }
    assert_int_equal(tether_session_copy_from(s, hv, 0, out, sizeof out), 0);
    for (int i = 0; i < N; i++) {
        float want = 2.0f * x[i] + z[i];
        assert_true(out[i] == 0.5f * (want > 0 ? want : 0.0f));
    }

    /* TIME_SEQ: one call = the whole sequence */
    tether_time_stats ts;
    double step_s[4] = {-1, -1, -1, -1};
    if (tether_session_time_launch_seq(s, st, 4, 2, 3, 0, 0, &ts, step_s)) {
        fail_msg("TIME_SEQ: %s", tether_last_error());
    }
    assert_int_equal(ts.repeat, 3);
    assert_true(ts.number >= 2);
    for (int k = 0; k < 4; k++) {
        assert_true(step_s[k] >= 0.0);
    }
    assert_true(ts.wall_seconds > 0.0);

    /* without profiling events (TETHER_SEQ_NO_PROFILE): the same outputs, no per-step times,
     * only the sequence's wall clock */
    assert_int_equal(tether_session_copy_to(s, hw, 0, zero, sizeof zero), 0);
    assert_int_equal(tether_session_copy_to(s, hv, 0, zero, sizeof zero), 0);
    memset(&res, 0xff, sizeof res);
    if (tether_session_launch_seq_ex(s, st, 4, TETHER_SEQ_NO_PROFILE, &res)) {
        fail_msg("LAUNCH_SEQ without profiling: %s", tether_last_error());
    }
    assert_int_equal(res.num_steps, 0);
    assert_int_equal(res.elapsed_ns, 0);
    for (int k = 0; k < 4; k++) {
        assert_int_equal(res.step_ns[k], 0);
    }
    assert_true(res.wall_ns > 0);
    assert_int_equal(tether_session_copy_from(s, hv, 0, out, sizeof out), 0);
    for (int i = 0; i < N; i++) {
        float want = 2.0f * x[i] + z[i];
        assert_true(out[i] == 0.5f * (want > 0 ? want : 0.0f));
    }
    for (int k = 0; k < 4; k++) {
        step_s[k] = -1;
    }
    if (tether_session_time_launch_seq_ex(s, st, 4, TETHER_SEQ_NO_PROFILE, 2, 3, 0, 0, &ts,
                                          step_s)) {
        fail_msg("TIME_SEQ without profiling: %s", tether_last_error());
    }
    assert_int_equal(ts.repeat, 3);
    assert_true(ts.wall_seconds > 0.0);
    assert_true(ts.median > 0.0); /* the clock is the wall clock */
    for (int k = 0; k < 4; k++) {
        assert_true(step_s[k] == 0.0); /* no step was profiled */
    }
    /* a flag nobody defined: refused before anything is sent */
    assert_int_equal(tether_session_launch_seq_ex(s, st, 4, 2, &res), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "flags"));

    /* step 2 names an array that does not exist: an error naming the step, nothing runs */
    assert_int_equal(tether_session_copy_to(s, hw, 0, zero, sizeof zero), 0);
    assert_int_equal(tether_session_copy_to(s, hy, 0, zero, sizeof zero), 0);
    tether_remote_arg bad2[2] = {{TETHER_TYPE_DLTENSOR, {.array = hu}},
                                 {TETHER_TYPE_DLTENSOR, {.array = 987654}}};
    st[2].args = bad2;
    assert_int_equal(tether_session_launch_seq(s, st, 3, &res), TETHER_ERR_NOT_FOUND);
    assert_non_null(strstr(tether_last_error(), "step 2"));
    assert_non_null(strstr(tether_last_error(), "k_relu"));
    assert_non_null(strstr(tether_last_error(), "987654"));
    assert_int_equal(tether_session_copy_from(s, hy, 0, out, sizeof out), 0);
    assert_memory_equal(out, zero, sizeof out); /* step 0 did not run either */
    /* ... a wrong argument count in step 2 */
    st[2].args = a2;
    st[2].num_args = 1;
    assert_int_equal(tether_session_launch_seq(s, st, 3, &res), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "step 2 ('k_relu')"));
    assert_int_equal(tether_session_time_launch_seq(s, st, 3, 1, 1, 0, 0, &ts, NULL),
                     TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "TIME_SEQ step 2"));
    st[2].num_args = 2;
    /* ... a CPU-style step without work dimensions is refused before sending */
    st[2].work_dim = 0;
    assert_int_equal(tether_session_launch_seq(s, st, 3, &res), TETHER_ERR_PROTOCOL);
    assert_non_null(strstr(tether_last_error(), "step 2"));
    st[2].work_dim = 2;

    /* limits: 129 steps; 1024+ arguments in all; 0 steps */
    static tether_launch_step many[TETHER_SEQ_MAX_STEPS + 1];
    for (int k = 0; k <= (int)TETHER_SEQ_MAX_STEPS; k++) {
        many[k] = st[1];
    }
    assert_int_equal(tether_session_launch_seq(s, many, TETHER_SEQ_MAX_STEPS + 1, &res),
                     TETHER_ERR_LIMIT);
    /* 128 steps of 3 arguments (384) run, in one request */
    if (tether_session_launch_seq(s, many, TETHER_SEQ_MAX_STEPS, &res)) {
        fail_msg("128 steps: %s", tether_last_error());
    }
    assert_int_equal(res.num_steps, TETHER_SEQ_MAX_STEPS);
    static tether_remote_arg args64[64];
    for (int i = 0; i < 64; i++) {
        args64[i] = a1[0];
    }
    for (int k = 0; k < 17; k++) {
        many[k] = st[0];
        many[k].args = args64;
        many[k].num_args = 64;
    }
    assert_int_equal(tether_session_launch_seq(s, many, 17, &res), TETHER_ERR_LIMIT);
    assert_non_null(strstr(tether_last_error(), "1024"));
    assert_int_equal(tether_session_launch_seq(s, many, 0, &res), TETHER_ERR_INVALID_ARG);
    /* the session still works */
    assert_int_equal(tether_session_launch_seq(s, st, 4, &res), 0);
}

static void test_seq_tcp(void **state) {
    (void)state;
    test_daemon d;
    tether_session *s = NULL;
    assert_int_equal(daemon_start(&d, NULL), 0);
    if (tether_session_open(&s, d.url, NULL)) {
        fail_msg("open: %s", tether_last_error());
    }
    if (!tether_session_info(s)->opencl) {
        tether_session_close(s);
        daemon_stop(&d);
        skip();
    }
    check_session(s);
    tether_session_close(s);
    daemon_stop(&d);
}

static void test_seq_local(void **state) {
    (void)state;
    tether_session_options o;
    memset(&o, 0, sizeof o);
    o.tetherd = TETHERD_PATH;
    tether_session *s = NULL;
    if (tether_session_open(&s, "local:", &o)) {
        fail_msg("open local: %s", tether_last_error());
    }
    if (!tether_session_info(s)->opencl) {
        tether_session_close(s);
        skip();
    }
    check_session(s);
    tether_session_close(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_seq_tcp),
                                       cmocka_unit_test(test_seq_local)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
