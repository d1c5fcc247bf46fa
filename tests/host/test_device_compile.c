/*
 * Compile for a device (tether/device_compile.h) on made-up HELLOs, no device: the choices the
 * host library takes from a device (an MCU board's core, a hosted device's target and CPU, pool
 * sizes for "--pool NAME", OpenCL image limits and cl_khr_fp64), what the caller gave kept, and the
 * errors for a pool the device lacks, a CPU the compiler has no target for and a board without
 * firmware.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target_from_hello),
        cmocka_unit_test(test_pools_from_hello),
        cmocka_unit_test(test_opencl_image_limits),
        cmocka_unit_test(test_opencl_fp64_from_hello),
        cmocka_unit_test(test_board_without_firmware),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
