/*
 * Compile for a device (tether/device_compile.h) on made-up HELLOs, no device: the choices the
 * host library takes from a device (an MCU board's core, a hosted device's target and CPU, pool
 * sizes for "--pool NAME", OpenCL image limits and cl_khr_fp64), what the caller gave kept, and the
 * errors for a pool the device lacks, a CPU the compiler has no target for and a board without
 * firmware; the CPU flags a HELLO selects (x86-64 levels with and without the int8 dot products
 * avx512vnni and avxvnni, aarch64 dotprod, a baseline device) and that they reach the C compiler
 * (the __AVXVNNI__ / __AVX512VNNI__ macros the int8 kernels select by).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tether/crt.h"
#include "tether/device_compile.h"

static tether_device_info board(void) {
    tether_device_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.arch, sizeof d.arch, "cortex-m3");
    snprintf(d.board, sizeof d.board, "mps2-an385");
    d.load_addr = 0x20050000u;
    d.load_size = 128u << 10;
    d.num_pools = 2;
    snprintf(d.pools[0], sizeof d.pools[0], "sram");
    snprintf(d.pools[1], sizeof d.pools[1], "psram");
    d.pool_sizes[0] = 262144;
    d.pool_sizes[1] = 0; /* no limit reported */
    return d;
}

static tether_device_info hosted(void) {
    tether_device_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.arch, sizeof d.arch, "x86_64");
    snprintf(d.triple, sizeof d.triple, "x86_64-linux-gnu");
    snprintf(d.cpu, sizeof d.cpu, "x86-64-v3");
    d.opencl = true;
    d.image_max_width = 16384;
    d.image_max_height = 8192;
    return d;
}

static void test_target_from_hello(void **state) {
    (void)state;
    tether_device_compile_options o;
    tether_device_compile_options_init(&o);
    assert_null(o.compile.build.target); /* left to the device */
    tether_device_info b = board();
    assert_int_equal(tether_device_compile_resolve(&b, &o), 0);
    assert_string_equal(o.compile.build.target, "cortex-m3");
    assert_string_equal(o.compile.build.cpu, ""); /* the core's baseline */
    /* idempotent: a second resolve changes nothing */
    assert_int_equal(tether_device_compile_resolve(&b, &o), 0);
    assert_string_equal(o.compile.build.target, "cortex-m3");

    tether_device_compile_options_init(&o);
    tether_device_info h = hosted();
    assert_int_equal(tether_device_compile_resolve(&h, &o), 0);
    assert_string_equal(o.compile.build.target, "x86_64-linux");
    assert_string_equal(o.compile.build.cpu, "x86-64-v3");
    /* what the caller names is kept */
    tether_device_compile_options_init(&o);
    o.compile.build.cpu = "x86-64";
    assert_int_equal(tether_device_compile_resolve(&h, &o), 0);
    assert_string_equal(o.compile.build.cpu, "x86-64");
    tether_device_compile_options_init(&o);
    o.compile.build.target = "cortex-m4";
    assert_int_equal(tether_device_compile_resolve(&h, &o), 0);
    assert_string_equal(o.compile.build.target, "cortex-m4");
    assert_null(o.compile.build.cpu);
    o.compile.build.target = "no-such-target";
    assert_int_equal(tether_device_compile_resolve(&h, &o), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "--target"));
    /* a CPU the compiler has no target for */
    tether_device_compile_options_init(&o);
    snprintf(h.arch, sizeof h.arch, "riscv64");
    assert_int_equal(tether_device_compile_resolve(&h, &o), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "give --target"));
}

static void test_pools_from_hello(void **state) {
    (void)state;
    tether_plan_pool pools[3] = {
        {"sram", TETHER_SCOPE_GLOBAL, TETHER_POOL_SIZE_FROM_DEVICE, 0, 0, 0},
        {"psram", TETHER_SCOPE_GLOBAL, TETHER_POOL_SIZE_FROM_DEVICE, 0, 0, 0},
        {"fast", TETHER_SCOPE_GLOBAL, 4096, 0, 0, 0},
    };
    tether_device_compile_options o;
    tether_device_compile_options_init(&o);
    o.compile.memory.pools = pools;
    o.compile.memory.npools = 3;
    tether_device_info b = board();
    assert_int_equal(tether_device_compile_resolve(&b, &o), 0);
    assert_ptr_equal(o.compile.memory.pools, o.pools); /* a copy: the caller's pools untouched */
    assert_int_equal(o.pools[0].capacity, 262144);
    assert_int_equal(o.pools[1].capacity, 0); /* no limit */
    assert_int_equal(o.pools[2].capacity, 4096);
    assert_int_equal(pools[0].capacity, TETHER_POOL_SIZE_FROM_DEVICE);
    /* a pool the device does not have */
    tether_device_compile_options_init(&o);
    tether_plan_pool flash = {"flash", TETHER_SCOPE_GLOBAL, TETHER_POOL_SIZE_FROM_DEVICE, 0, 0, 0};
    o.compile.memory.pools = &flash;
    o.compile.memory.npools = 1;
    assert_int_equal(tether_device_compile_resolve(&b, &o), TETHER_ERR_INVALID_ARG);
    assert_string_equal(tether_last_error(),
                        "--pool flash: the device has no such pool (its pools: sram, psram)");
}

static void test_opencl_image_limits(void **state) {
    (void)state;
    tether_device_compile_options o;
    tether_device_compile_options_init(&o);
    o.compile.backend = TETHER_BACKEND_OPENCL;
    o.compile.opencl.texture_activations = true;
    tether_device_info h = hosted();
    assert_int_equal(tether_device_compile_resolve(&h, &o), 0);
    assert_int_equal(o.compile.opencl.image_max_width, 16384);
    assert_int_equal(o.compile.opencl.image_max_height, 8192);
    /* limits given by the caller stay */
    tether_device_compile_options_init(&o);
    o.compile.backend = TETHER_BACKEND_OPENCL;
    o.compile.opencl.texture_activations = true;
    o.compile.opencl.image_max_width = 100;
    o.compile.opencl.image_max_height = 50;
    assert_int_equal(tether_device_compile_resolve(&h, &o), 0);
    assert_int_equal(o.compile.opencl.image_max_width, 100);
}

/* cl_khr_fp64 from HELLO: a device lacking it makes float64 tensors a compile-time refusal
 * (fp64 -1), one having it 1, one not reporting it leaves 0; what the caller set stays. */
static void test_opencl_fp64_from_hello(void **state) {
    (void)state;
    const int reported[3] = {-1, 1, 0};
    for (int i = 0; i < 3; i++) {
        tether_device_compile_options o;
        tether_device_compile_options_init(&o);
        o.compile.backend = TETHER_BACKEND_OPENCL;
        tether_device_info h = hosted();
        h.cl_fp64 = reported[i];
        assert_int_equal(tether_device_compile_resolve(&h, &o), 0);
        assert_int_equal(o.compile.opencl.fp64, reported[i]);
    }
    tether_device_compile_options o;
    tether_device_compile_options_init(&o);
    o.compile.backend = TETHER_BACKEND_OPENCL;
    o.compile.opencl.fp64 = 1;
    tether_device_info h = hosted();
    h.cl_fp64 = -1;
    assert_int_equal(tether_device_compile_resolve(&h, &o), 0);
    assert_int_equal(o.compile.opencl.fp64, 1);
}

static void test_board_without_firmware(void **state) {
    (void)state;
    tether_device_compile_options o;
    tether_device_compile_options_init(&o);
    const char *dirs[1] = {"/nonexistent/firmware"};
    o.firmware_dirs = dirs;
    o.nfirmware_dirs = 1;
    tether_device_info b = board();
    tether_mcu_firmware fw;
    unsetenv("TETHER_FIRMWARE");
    assert_int_equal(tether_device_firmware(&b, &o, &fw), TETHER_ERR_NOT_FOUND);
    assert_non_null(strstr(tether_last_error(), "mps2-an385"));
    uint8_t *data = (uint8_t *)&o; /* must be reset to NULL */
    size_t size = 1;
    tether_mcu_image img;
    assert_true(tether_device_image(&b, &o, "lib.a", "cortex-m3", &data, &size, &img) < 0);
    assert_null(data);
    assert_int_equal(size, 0);
}

/* The CPU value and compiler flags a resolve takes from a hosted HELLO (cpu, cpu_features). */
static void resolved(const char *arch, const char *cpu, const char *features, const char *want_cpu,
                     const char *want_flags) {
    tether_device_info h = hosted();
    snprintf(h.arch, sizeof h.arch, "%s", arch);
    snprintf(h.cpu, sizeof h.cpu, "%s", cpu);
    snprintf(h.cpu_features, sizeof h.cpu_features, "%s", features);
    tether_device_compile_options o;
    tether_device_compile_options_init(&o);
    assert_int_equal(tether_device_compile_resolve(&h, &o), 0);
    assert_string_equal(o.compile.build.cpu, want_cpu);
    char flags[256];
    assert_int_equal(
        tether_cpu_flags(o.compile.build.target, o.compile.build.cpu, flags, sizeof flags), 0);
    assert_string_equal(flags, want_flags);
}

static void test_cpu_flags_from_hello(void **state) {
    (void)state;
    /* no VNNI: the level alone */
    resolved("x86_64", "x86-64-v3", "sse4.2 avx avx2 bmi bmi2 fma", "x86-64-v3",
             "-march=x86-64-v3");
    resolved("x86_64", "x86-64-v4", "avx2 fma avx512f avx512bw avx512cd avx512dq avx512vl",
             "x86-64-v4", "-march=x86-64-v4");
    /* AVX-512 VNNI on x86-64-v4 (which implies -mavx512vl) */
    resolved("x86_64", "x86-64-v4", "avx2 fma avx512f avx512vl avx512vnni", "x86-64-v4+avx512vnni",
             "-march=x86-64-v4 -mavx512vnni");
    /* AVX-VNNI (VEX) on an AVX2 CPU */
    resolved("x86_64", "x86-64-v3", "avx avx2 fma avxvnni", "x86-64-v3+avxvnni",
             "-march=x86-64-v3 -mavxvnni");
    /* both */
    resolved("x86_64", "x86-64-v4", "avx2 avx512f avx512vl avx512vnni avxvnni",
             "x86-64-v4+avx512vnni+avxvnni", "-march=x86-64-v4 -mavx512vnni -mavxvnni");
    /* an extension whose level the device lacks is not added, nor to a baseline device */
    resolved("x86_64", "x86-64-v3", "avx2 fma avx512f avx512vnni", "x86-64-v3", "-march=x86-64-v3");
    resolved("x86_64", "x86-64-v2", "sse4.2 avxvnni", "x86-64-v2", "-march=x86-64-v2");
    resolved("x86_64", "", "avxvnni avx512vnni", "", "");
    /* a token only contains the name ("avx512vnnix" is not avx512vnni) */
    resolved("x86_64", "x86-64-v4", "avx512vnnix xavxvnni", "x86-64-v4", "-march=x86-64-v4");
    /* aarch64: HELLO's cpu carries dotprod itself */
    resolved("aarch64", "armv8.2-a+dotprod", "asimd dotprod", "armv8.2-a+dotprod",
             "-march=armv8.2-a+dotprod");
    /* what the caller names is kept as it is */
    tether_device_info h = hosted();
    snprintf(h.cpu_features, sizeof h.cpu_features, "avx2 avxvnni");
    tether_device_compile_options o;
    tether_device_compile_options_init(&o);
    o.compile.build.cpu = "x86-64-v2";
    assert_int_equal(tether_device_compile_resolve(&h, &o), 0);
    assert_string_equal(o.compile.build.cpu, "x86-64-v2");

    /* the flags of values given by hand; the features they need on a device */
    char f[256];
    assert_int_equal(tether_cpu_flags(NULL, "x86-64-v2+avx512vnni", f, sizeof f), 0);
    assert_string_equal(f, "-march=x86-64-v2 -mavx512vnni -mavx512vl");
    assert_int_equal(tether_cpu_flags("cortex-m4", "cortex-m4", f, sizeof f), 0);
    assert_string_equal(f, "-mcpu=cortex-m4");
    assert_int_equal(tether_cpu_flags("cortex-m55", "cortex-m55+nomve", f, sizeof f), 0);
    assert_string_equal(f, "-mcpu=cortex-m55+nomve");
    assert_int_equal(tether_cpu_flags(NULL, NULL, f, sizeof f), 0);
    assert_string_equal(f, "");
    assert_int_equal(tether_cpu_flags(NULL, "x86-64-v3+sse5", f, sizeof f), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "unknown x86-64 extension '+sse5'"));
    assert_int_equal(tether_cpu_flags(NULL, "x86-64-v3+", f, sizeof f), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_cpu_flags(NULL, "-O0", f, sizeof f), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "is not a -march/-mcpu value"));
    assert_int_equal(tether_cpu_flags(NULL, "+avxvnni", f, sizeof f), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_cpu_needs("x86-64-v4+avx512vnni+avxvnni", f, sizeof f), 2);
    assert_string_equal(f, "avx512vnni avx512vl avxvnni");
    assert_int_equal(tether_cpu_needs("x86-64-v3", f, sizeof f), 0);
    assert_string_equal(f, "");
    assert_int_equal(tether_cpu_needs("armv8.2-a+dotprod", f, sizeof f), 0);
    assert_true(tether_cpu_needs("x86-64-v3+sse5", f, sizeof f) < 0);
}

/* Builds a source that #errors unless the macros `want` holds are defined and `unwanted` is not,
 * for `cpu`; returns the build's status. */
static int build_checks(const char *dir, const char *cpu, const char *want[],
                        const char *unwanted) {
    char p[600];
    snprintf(p, sizeof p, "%s/m.c", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    for (int i = 0; want[i]; i++) {
        fprintf(f, "#ifndef %s\n#error %s missing\n#endif\n", want[i], want[i]);
    }
    if (unwanted) {
        fprintf(f, "#ifdef %s\n#error %s defined\n#endif\n", unwanted, unwanted);
    }
    fprintf(f, "int m_entry(int x);\nint m_entry(int x) { return x + 1; }\n");
    fclose(f);
    tether_build_options o = {.target = "x86_64-linux", .opt_level = 2, .cpu = cpu};
    tether_build_result r;
    return tether_build_artifact(dir, "m", "m_entry", &o, &r);
}

static void test_cpu_flags_reach_compiler(void **state) {
    (void)state;
    const tether_target *t;
    assert_int_equal(tether_target_find("x86_64-linux", &t), 0);
    if (!tether_target_available(t)) {
        skip();
    }
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tether-cpuflags-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    const char *v3[] = {"__AVX2__", "__AVXVNNI__", NULL};
    const char *v4[] = {"__AVX512VL__", "__AVX512VNNI__", NULL};
    const char *none[] = {"__SSE2__", NULL};
    int r1 = build_checks(dir, "x86-64-v3+avxvnni", v3, "__AVX512VNNI__");
    int r2 = build_checks(dir, "x86-64-v4+avx512vnni", v4, "__AVXVNNI__");
    int r3 = build_checks(dir, "x86-64-v2+avx512vnni", v4, NULL);
    int r4 = build_checks(dir, "x86-64-v4", none, "__AVX512VNNI__");
    int r5 = build_checks(dir, "x86-64-v3+bogus", none, NULL);
    DIR *dd = opendir(dir);
    for (struct dirent *e = dd ? readdir(dd) : NULL; e; e = readdir(dd)) {
        if (e->d_name[0] != '.') {
            char p[800];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    }
    if (dd) {
        closedir(dd);
    }
    rmdir(dir);
    assert_int_equal(r1, 0);
    assert_int_equal(r2, 0);
    assert_int_equal(r3, 0);
    assert_int_equal(r4, 0);
    assert_int_equal(r5, TETHER_ERR_INVALID_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target_from_hello),
        cmocka_unit_test(test_pools_from_hello),
        cmocka_unit_test(test_opencl_image_limits),
        cmocka_unit_test(test_opencl_fp64_from_hello),
        cmocka_unit_test(test_board_without_firmware),
        cmocka_unit_test(test_cpu_flags_from_hello),
        cmocka_unit_test(test_cpu_flags_reach_compiler),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
