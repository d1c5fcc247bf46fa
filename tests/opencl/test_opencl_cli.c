/*
 * `tether run` with an OpenCL C module over local: (label opencl): a buffer kernel with a scalar
 * and --global/--local, a texture-scope kernel (--scope texture) and the usage error for a kernel
 * without --global. Skipped when tetherd reports no OpenCL device.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tether/crt.h"
#include "tether/npy.h"

static char g_dir[64];

static int run(char *out, size_t cap, const char *fmt, ...) {
    char args[1024], cmd[2048], of[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(of, sizeof of, "%s/out.txt", g_dir);
    snprintf(cmd, sizeof cmd, "cd '%s' && TETHER_TETHERD='%s' '%s' %s > '%s' 2>&1", g_dir,
             TETHERD_PATH, TETHER_CLI, args, of);
    int st = system(cmd);
    FILE *f = fopen(of, "r");
    size_t n = f ? fread(out, 1, cap - 1, f) : 0;
    if (f) {
        fclose(f);
    }
    out[n] = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void put(const char *name, const char *text) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static float *load(const char *name, tether_npy *n) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    if (tether_npy_read(p, n)) {
        fail_msg("%s", tether_last_error());
    }
    return n->data;
}

static void test_cli_kernels(void **state) {
    (void)state;
    char o[8192];
    assert_int_equal(run(o, sizeof o, "info"), 0);
    if (!strstr(o, "opencl             yes")) {
        skip();
    }
    put("k.cl", "__kernel void scale(__global const float *x, __global float *y, float a) {\n"
                "    size_t i = get_global_id(0); y[i] = a * x[i]; }\n"
                "__constant sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE |\n"
                "    CLK_FILTER_NEAREST;\n"
                "__kernel void neg(__read_only image2d_t in, __write_only image2d_t out) {\n"
                "    int2 p = (int2)(get_global_id(0), get_global_id(1));\n"
                "    write_imagef(out, p, -read_imagef(in, s, p)); }\n");
    float v[64];
    for (int i = 0; i < 64; i++) {
        v[i] = (float)i;
    }
    int64_t s1 = 64, s3[] = {4, 4, 4};
    char p[128];
    snprintf(p, sizeof p, "%s/x.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, &s1, 1, v), 0);
    snprintf(p, sizeof p, "%s/t.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, s3, 3, v), 0);
    assert_int_equal(run(o, sizeof o, "upload k.cl"), 0);
    assert_non_null(strstr(o, "2 kernels"));
    int rc =
        run(o, sizeof o, "run k.cl scale --in x.npy --out y.npy --float 3 --global 64 --local 16");
    if (rc) {
        fail_msg("%s", o);
    }
    tether_npy n;
    float *y = load("y.npy", &n);
    for (int i = 0; i < 64; i++) {
        assert_true(y[i] == 3.0f * (float)i);
    }
    tether_npy_free(&n);
    rc = run(o, sizeof o, "run k.cl neg --scope texture --in t.npy --out u.npy --global 4,4");
    if (rc) {
        fail_msg("%s", o);
    }
    y = load("u.npy", &n);
    assert_int_equal(n.ndim, 3);
    for (int i = 0; i < 64; i++) {
        assert_true(y[i] == -(float)i);
    }
    tether_npy_free(&n);
    assert_int_equal(run(o, sizeof o, "run k.cl scale --in x.npy --out y.npy --float 3"), 2);
    assert_non_null(strstr(o, "needs --global"));
    assert_int_equal(
        run(o, sizeof o, "bench k.cl scale --in x.npy --out y.npy --float 3 --global 64"), 0);
    assert_non_null(strstr(o, "median"));
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/toclXXXXXX");
    if (!mkdtemp(g_dir)) {
        return 1;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cli_kernels)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) {
        return 1;
    }
    return rc;
}
