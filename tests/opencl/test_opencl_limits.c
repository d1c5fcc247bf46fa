/*
 * The OpenCL device's work limits from HELLO to the kernels (label opencl, PoCL): a tetherd on
 * 127.0.0.1 reports max work-group size, local memory and compute units equal to what this test
 * queries from OpenCL itself (the first device with image support, as tetherd picks), its
 * cl_khr_fp64 and cl_khr_fp16 as its extension string names them, and a
 * preferred multiple equal to a trivial kernel's; `tether compile --backend opencl --device` on
 * it sizes the kernels by them (the .cl header, the report and report.json say so), and without
 * a device the report says the defaults.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "daemon.h"
#include "tether/crt.h"
#include "tether/host.h"

typedef struct limits {
    size_t wg, multiple;
    cl_ulong lmem;
    cl_uint cu;
    int fp64, fp16; /* 1 the extension string names it, -1 it does not */
} limits;

/* What clinfo would say of the first device with image support; 0 when there is none. */
static int query(limits *l) {
    cl_platform_id pls[8];
    cl_uint n = 0;
    memset(l, 0, sizeof *l);
    if (clGetPlatformIDs(8, pls, &n) != CL_SUCCESS) {
        return 0;
    }
    for (cl_uint i = 0; i < n && i < 8; i++) {
        cl_device_id dev;
        cl_uint nd = 0;
        cl_bool img = CL_FALSE;
        if (clGetDeviceIDs(pls[i], CL_DEVICE_TYPE_ALL, 1, &dev, &nd) != CL_SUCCESS || nd == 0) {
            continue;
        }
        clGetDeviceInfo(dev, CL_DEVICE_IMAGE_SUPPORT, sizeof img, &img, NULL);
        if (!img) {
            continue;
        }
        clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof l->wg, &l->wg, NULL);
        clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof l->lmem, &l->lmem, NULL);
        clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof l->cu, &l->cu, NULL);
        static char ext[1 << 16];
        ext[0] = ' ';
        size_t el = 0;
        clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, sizeof ext - 2, ext + 1, &el);
        snprintf(ext + strlen(ext), 2, " ");
        l->fp64 = strstr(ext, " cl_khr_fp64 ") ? 1 : -1;
        l->fp16 = strstr(ext, " cl_khr_fp16 ") ? 1 : -1;
        cl_int err;
        cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
        const char *src = "__kernel void k(__global float *a) { a[get_global_id(0)] = 1.0f; }";
        cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
        assert_int_equal(clBuildProgram(p, 1, &dev, "", NULL, NULL), CL_SUCCESS);
        cl_kernel k = clCreateKernel(p, "k", &err);
        assert_int_equal(clGetKernelWorkGroupInfo(k, dev,
                                                  CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                                  sizeof l->multiple, &l->multiple, NULL),
                         CL_SUCCESS);
        clReleaseKernel(k);
        clReleaseProgram(p);
        clReleaseContext(ctx);
        return 1;
    }
    return 0;
}

/* Runs the CLI with args, its stdout and stderr into out; the exit status. */
static int cli(char *out, size_t n, const char *args) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", TETHER_CLI, args);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t len = fread(out, 1, n - 1, f);
    out[len] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *b = calloc(1, 1 << 20);
    size_t n = fread(b, 1, (1 << 20) - 1, f);
    b[n] = 0;
    fclose(f);
    return b;
}

static void test_limits(void **state) {
    (void)state;
    limits l;
    if (!query(&l)) {
        skip();
    }
    test_daemon d;
    assert_int_equal(daemon_start(&d, NULL), 0);
    tether_session *s;
    if (tether_session_open(&s, d.url, NULL)) {
        daemon_stop(&d);
        fail_msg("open: %s", tether_last_error());
    }
    const tether_device_info *info = tether_session_info(s);
    assert_true(info->opencl);
    assert_int_equal(info->cl_max_work_group_size, l.wg);
    assert_int_equal(info->cl_wg_multiple, l.multiple);
    assert_int_equal(info->cl_local_mem_size, l.lmem);
    assert_int_equal(info->cl_compute_units, l.cu);
    assert_int_equal(info->cl_fp64, l.fp64); /* the device's extensions, reported */
    assert_int_equal(info->cl_fp16, l.fp16);
    assert_true(l.wg > 0 && l.multiple > 0 && l.lmem > 0 && l.cu > 0);
    tether_session_close(s);

    static char o[65536];
    char args[1024], want[512], tmp[] = "/tmp/tether-limits-XXXXXX";
    assert_non_null(mkdtemp(tmp));
    /* tether info (text and --json) */
    snprintf(args, sizeof args, "info --device %s --json", d.url);
    assert_int_equal(cli(o, sizeof o, args), 0);
    snprintf(want, sizeof want, "\"compute_units\":\t%u", (unsigned)l.cu);
    assert_non_null(strstr(o, want));
    snprintf(want, sizeof want, "\"local_memory_bytes\":\t%llu", (unsigned long long)l.lmem);
    assert_non_null(strstr(o, want));
    snprintf(want, sizeof want, "\"max_work_group_size\":\t%zu", l.wg);
    assert_non_null(strstr(o, want));
    snprintf(want, sizeof want, "\"work_group_multiple\":\t%zu", l.multiple);
    assert_non_null(strstr(o, want));
    /* compile --device: the kernels sized by the device's limits */
    char lim[300];
    snprintf(lim, sizeof lim,
             "max work-group size %zu, preferred multiple %zu, local memory %llu bytes, %u "
             "compute units (as given",
             l.wg, l.multiple, (unsigned long long)l.lmem, (unsigned)l.cu);
    snprintf(args, sizeof args,
             "compile '%s/examples/kws/kws.json' -o '%s/dev' --backend opencl --prefix kws "
             "--device %s",
             TETHER_SOURCE_DIR, tmp, d.url);
    if (cli(o, sizeof o, args)) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, lim));
    snprintf(args, sizeof args, "%s/dev/kws.cl", tmp);
    char *cl = slurp(args);
    snprintf(want, sizeof want, "Device limits the kernels are sized by: %s", lim);
    assert_non_null(strstr(cl, want));
    free(cl);
    snprintf(args, sizeof args, "%s/dev/report.json", tmp);
    char *rep = slurp(args);
    snprintf(want, sizeof want, "\"compute_units\":\t%u", (unsigned)l.cu);
    assert_non_null(strstr(rep, want));
    assert_non_null(strstr(rep, "\"defaults\":\t[]"));
    free(rep);
    /* without a device: the defaults, said as such */
    snprintf(args, sizeof args,
             "compile '%s/examples/kws/kws.json' -o '%s/nodev' --backend opencl --prefix kws",
             TETHER_SOURCE_DIR, tmp);
    if (cli(o, sizeof o, args)) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "device limits: max work-group size 256, preferred multiple 32, "
                              "local memory 16384 bytes, 16 compute units (the defaults"));
    daemon_stop(&d);
    snprintf(args, sizeof args, "rm -rf '%s'", tmp);
    assert_int_equal(system(args), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_limits)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
