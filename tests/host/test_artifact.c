/*
 * The artifact runner's local half (tether/artifact.h) without a device: metadata.json checks
 * and their messages, the signature as io_of gives it, input checks, which module each kind of
 * device takes, and the target check. Running on a device is covered by test_host_cli (C
 * artifacts through `tether run/bench/ab`), test_opencl_codegen (OpenCL artifacts through the
 * library) and the MCU tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tether/artifact.h"
#include "tether/crt.h"

static char g_dir[64];

static void write_file(const char *name, const char *text) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Opens g_dir with the given metadata.json; returns the status, the artifact in *a on success. */
static int open_with(const char *metadata, tether_artifact **a) {
    write_file("metadata.json", metadata);
    return tether_artifact_open(g_dir, a);
}

#define KWS_LIKE                                                                                   \
    "{\"format\": \"tether-artifact\", \"version\": 1, \"target\": \"x86_64-linux\",\n"            \
    " \"library\": \"libm.so\", \"entry\": {\"name\": \"m_main\"},\n"                              \
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [1, 4]}],\n"               \
    " \"outputs\": [{\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [1, 2]},\n"               \
    "             {\"name\": \"z\", \"dtype\": \"int32\", \"shape\": []}]}\n"

static void test_open_checks(void **state) {
    (void)state;
    tether_artifact *a = NULL;
    char missing[128];
    snprintf(missing, sizeof missing, "%s/none", g_dir);
    assert_true(tether_artifact_open(missing, &a) < 0);
    assert_null(a);
    assert_non_null(strstr(tether_last_error(), "cannot read metadata.json"));

    assert_true(open_with("{\"format\": \"tether-artifact\", \"version\": 99}", &a) < 0);
    assert_non_null(strstr(tether_last_error(), "artifact format version 99"));
    assert_true(
        open_with("{\"format\": \"tether-artifact\", \"version\": 1, \"library\": null}", &a) < 0);
    assert_non_null(strstr(tether_last_error(), "compiled with --no-build"));
    assert_true(open_with("[1, 2]", &a) < 0);
    assert_non_null(strstr(tether_last_error(), "is not a tether artifact"));
    assert_true(open_with("{\"format\": \"tether-artifact\", \"version\": 1, \"library\": "
                          "\"../x.so\", \"entry\": {\"name\": \"f\"}, \"inputs\": [], "
                          "\"outputs\": []}",
                          &a) < 0);
    assert_non_null(strstr(tether_last_error(), "library must be a file name"));
    assert_true(open_with("{\"format\": \"tether-artifact\", \"version\": 1, \"library\": "
                          "\"l.so\", \"entry\": {\"name\": \"f\"}, \"inputs\": [{\"name\": "
                          "\"x\", \"dtype\": \"complex\", \"shape\": [1]}], \"outputs\": []}",
                          &a) < 0);
    assert_non_null(strstr(tether_last_error(), "input 0 ('x') has no valid dtype/shape"));
    assert_true(open_with("{\"format\": \"tether-artifact\", \"version\": 1, \"library\": "
                          "\"l.so\", \"entry\": {\"name\": \"f\"}, \"inputs\": [], \"outputs\": "
                          "[], \"params_file\": \"p.bin\"}",
                          &a) < 0);
    assert_non_null(strstr(tether_last_error(), "params_file must be a file name, with"));
    assert_null(a);
}

static void test_signature(void **state) {
    (void)state;
    tether_artifact *a = NULL;
    assert_int_equal(open_with(KWS_LIKE, &a), 0);
    assert_int_equal(tether_artifact_backend_of(a), TETHER_ARTIFACT_C);
    assert_string_equal(tether_artifact_entry(a), "m_main");
    assert_string_equal(tether_artifact_target(a), "x86_64-linux");
    assert_int_equal(tether_artifact_num_inputs(a), 1);
    assert_int_equal(tether_artifact_num_outputs(a), 2);
    assert_int_equal(tether_artifact_num_kernels(a), 0);
    tether_artifact_io io;
    assert_int_equal(tether_artifact_io_of(a, 0, 0, &io), 0);
    assert_string_equal(io.name, "x");
    assert_int_equal(io.ndim, 2);
    assert_int_equal(io.shape[1], 4);
    assert_int_equal(io.nbytes, 16);
    assert_int_equal(tether_artifact_io_of(a, 1, 1, &io), 0);
    assert_string_equal(io.name, "z");
    assert_true(tether_dtype_equal(io.dtype, TETHER_INT32));
    assert_int_equal(io.ndim, 0);
    assert_int_equal(io.nbytes, 4);
    assert_true(tether_artifact_io_of(a, 1, 2, &io) < 0);

    /* inputs: the message names the file, both shapes (or dtypes) and the input */
    float data[4] = {0};
    tether_npy n = {TETHER_FLOAT32, 2, {1, 4}, data, sizeof data};
    assert_int_equal(tether_artifact_check_input(a, 0, "x.npy", &n), 0);
    n.shape[1] = 3;
    assert_int_equal(tether_artifact_check_input(a, 0, "x.npy", &n), TETHER_ERR_MISMATCH);
    assert_string_equal(tether_last_error(), "x.npy: shape [1,3], but model input 'x' is [1,4]");
    n.shape[1] = 4;
    n.dtype = TETHER_DTYPE(kDLFloat, 64);
    assert_int_equal(tether_artifact_check_input(a, 0, "x.npy", &n), TETHER_ERR_MISMATCH);
    assert_string_equal(tether_last_error(),
                        "x.npy: dtype float64, but model input 'x' is float32");

    /* nothing runs before prepare */
    const void *ins[1] = {data};
    void *outs[2] = {data, data};
    assert_int_equal(tether_artifact_run(a, ins, outs, NULL, NULL), TETHER_ERR_STATE);
    tether_time_stats ts;
    assert_int_equal(tether_artifact_time(a, 1, 1, 0, 0, &ts, NULL), TETHER_ERR_STATE);
    tether_artifact_free(a);
    tether_artifact_free(NULL);
}

static void device(tether_device_info *d, int mcu) {
    memset(d, 0, sizeof *d);
    if (mcu) {
        snprintf(d->arch, sizeof d->arch, "cortex-m3");
        snprintf(d->board, sizeof d->board, "mps2-an385");
        d->load_addr = 0x20010000;
        d->load_size = 0x20000;
    } else {
        snprintf(d->arch, sizeof d->arch, "x86_64");
        snprintf(d->triple, sizeof d->triple, "x86_64-linux-gnu");
    }
}

static void test_module_kind(void **state) {
    (void)state;
    tether_device_info host, board;
    device(&host, 0);
    device(&board, 1);
    uint32_t kind = 99;
    assert_int_equal(tether_artifact_module_kind(&host, "a/libm.so", &kind), 0);
    assert_int_equal(kind, TETHER_MODULE_SHARED_OBJECT);
    assert_int_equal(tether_artifact_module_kind(&host, "k.cl", &kind), 0);
    assert_int_equal(kind, TETHER_MODULE_OPENCL_SOURCE);
    assert_int_equal(tether_artifact_module_kind(&host, "m.bin", &kind), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "m.bin is a RAM image for MCU firmware, but the "
                                                "device is a x86_64 device (x86_64-linux-gnu)"));
    assert_int_equal(tether_artifact_module_kind(&host, "m.a", &kind), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "compile with --target x86_64-linux"));
    assert_int_equal(tether_artifact_module_kind(&board, "m.bin", &kind), 0);
    assert_int_equal(kind, TETHER_MODULE_MCU_IMAGE);
    kind = 99;
    assert_int_equal(tether_artifact_module_kind(&board, "m.a", &kind), 1); /* link first */
    assert_int_equal(kind, TETHER_MODULE_MCU_IMAGE);
    assert_int_equal(tether_artifact_module_kind(&board, "m.o", &kind), 1);
    assert_int_equal(tether_artifact_module_kind(&board, "libm.so", &kind), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "the mps2-an385 board (cortex-m3)"));
    assert_non_null(strstr(tether_last_error(), "compile with --target cortex-m3"));
}

static void test_target_check(void **state) {
    (void)state;
    tether_device_info host, board;
    device(&host, 0);
    device(&board, 1);
    assert_int_equal(tether_artifact_target_check(&host, "x86_64-linux", NULL, "art"), 0);
    assert_int_equal(tether_artifact_target_check(&board, "cortex-m3", "", "art"), 0);
    assert_int_equal(tether_artifact_target_check(&host, "aarch64-linux", NULL, "art"),
                     TETHER_ERR_MISMATCH);
    assert_string_equal(tether_last_error(),
                        "art was compiled for aarch64-linux, but the device is a x86_64 device "
                        "(x86_64-linux-gnu): compile with --target x86_64-linux");
    assert_int_equal(tether_artifact_target_check(&host, "cortex-m4", NULL, "art"),
                     TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "a static library for MCU firmware"));
    assert_int_equal(tether_artifact_target_check(&board, "x86_64-linux", NULL, "art"),
                     TETHER_ERR_MISMATCH);
    assert_string_equal(tether_last_error(),
                        "art was compiled for x86_64-linux, but the device is the mps2-an385 "
                        "board (cortex-m3): compile with --target cortex-m3");

    /* an MCU core from HELLO (arch, cpu_features): instruction set, float ABI, FPU, MVE */
    tether_device_info m4 = board, m55 = board, m7 = board;
    snprintf(m4.board, sizeof m4.board, "mps2-an386");
    snprintf(m4.arch, sizeof m4.arch, "cortex-m4");
    snprintf(m4.cpu_features, sizeof m4.cpu_features, "dsp fp.sp hard-float");
    snprintf(m7.board, sizeof m7.board, "mps2-an500");
    snprintf(m7.arch, sizeof m7.arch, "cortex-m7");
    snprintf(m7.cpu_features, sizeof m7.cpu_features, "dsp fp.sp fp.dp hard-float");
    snprintf(m55.board, sizeof m55.board, "mps3-an547");
    snprintf(m55.arch, sizeof m55.arch, "cortex-m55");
    snprintf(m55.cpu_features, sizeof m55.cpu_features, "dsp fp.sp fp.dp hard-float mve mve.fp");
    assert_int_equal(tether_artifact_target_check(&m4, "cortex-m4", "", "art"), 0);
    assert_int_equal(tether_artifact_target_check(&m7, "cortex-m4", "", "art"), 0);
    assert_int_equal(tether_artifact_target_check(&m55, "cortex-m4", "", "art"), 0);
    assert_int_equal(tether_artifact_target_check(&m55, "cortex-m55-nomve", "", "art"), 0);
    assert_int_equal(tether_artifact_target_check(&m55, "cortex-m33", "", "art"), 0);
    /* Helium code on a Cortex-M4F: refused before any upload, saying what the core lacks */
    assert_int_equal(tether_artifact_target_check(&m4, "cortex-m55", "", "art"),
                     TETHER_ERR_MISMATCH);
    assert_string_equal(tether_last_error(),
                        "art: the module was compiled for cortex-m55 (Armv8.1-M), which the "
                        "mps2-an386 board's cortex-m4 (Armv7E-M) cannot run: compile with "
                        "--target cortex-m4");
    /* double precision on a single-precision FPU */
    assert_int_equal(tether_artifact_target_check(&m4, "cortex-m7", "", "art"),
                     TETHER_ERR_MISMATCH);
    assert_string_equal(tether_last_error(),
                        "art: the module was compiled for cortex-m7, which needs dsp fp.sp fp.dp "
                        "hard-float; the mps2-an386 board's cortex-m4 has dsp fp.sp hard-float "
                        "and lacks fp.dp: compile with --target cortex-m4");
    /* soft-float code on a hard-float firmware and back */
    assert_int_equal(tether_artifact_target_check(&m4, "cortex-m3", "", "art"),
                     TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(),
                           "with the soft-float ABI, but the mps2-an386 "
                           "board's firmware (cortex-m4) uses the hard-float"));
    assert_int_equal(tether_artifact_target_check(&board, "cortex-m4", "", "art"),
                     TETHER_ERR_MISMATCH);
    /* another instruction set family: RISC-V code on an Arm core and back */
    tether_device_info rv = board;
    snprintf(rv.board, sizeof rv.board, "rv32-virt");
    snprintf(rv.arch, sizeof rv.arch, "rv32imac");
    assert_int_equal(tether_artifact_target_check(&rv, "rv32imac", "", "art"), 0);
    assert_int_equal(tether_artifact_target_check(&board, "rv32imac", "", "art"),
                     TETHER_ERR_MISMATCH);
    assert_string_equal(tether_last_error(),
                        "art: the module was compiled for rv32imac (RV32IMAC), which the "
                        "mps2-an385 board's cortex-m3 (Armv7-M) cannot run: compile with "
                        "--target cortex-m3");
    assert_int_equal(tether_artifact_target_check(&rv, "cortex-m0", "", "art"),
                     TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "compile with --target rv32imac"));
    /* an MVE core that lost its MVE (a board without Helium reports no mve) */
    snprintf(m55.cpu_features, sizeof m55.cpu_features, "dsp fp.sp fp.dp hard-float");
    assert_int_equal(tether_artifact_target_check(&m55, "cortex-m55", "", "art"),
                     TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "lacks mve mve.fp"));

    /* the CPU: x86-64 levels up to the device's, armv8 extensions it has, an MCU's own core */
    snprintf(host.cpu, sizeof host.cpu, "x86-64-v3");
    assert_int_equal(tether_artifact_target_check(&host, "x86_64-linux", "x86-64-v2", "art"), 0);
    assert_int_equal(tether_artifact_target_check(&host, "x86_64-linux", "x86-64-v3", "art"), 0);
    assert_int_equal(tether_artifact_target_check(&host, "x86_64-linux", "native", "art"), 0);
    assert_int_equal(tether_artifact_target_check(&host, "x86_64-linux", "x86-64-v4", "art"),
                     TETHER_ERR_MISMATCH);
    assert_string_equal(tether_last_error(),
                        "art was compiled for CPU x86-64-v4, which a x86_64 device "
                        "(x86_64-linux-gnu) does not have (its cpu: x86-64-v3): compile with "
                        "--mcpu x86-64-v3, or without --mcpu");
    /* tether's +extensions (int8 dot products): each needs its HELLO cpu_features tokens */
    snprintf(host.cpu_features, sizeof host.cpu_features, "sse4.2 avx avx2 fma");
    assert_int_equal(
        tether_artifact_target_check(&host, "x86_64-linux", "x86-64-v3+avxvnni", "art"),
        TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "compiled for CPU x86-64-v3+avxvnni"));
    snprintf(host.cpu_features, sizeof host.cpu_features, "sse4.2 avx avx2 fma avxvnni");
    assert_int_equal(
        tether_artifact_target_check(&host, "x86_64-linux", "x86-64-v3+avxvnni", "art"), 0);
    assert_int_equal(
        tether_artifact_target_check(&host, "x86_64-linux", "x86-64-v2+avxvnni", "art"), 0);
    assert_int_equal(
        tether_artifact_target_check(&host, "x86_64-linux", "x86-64-v3+avx512vnni", "art"),
        TETHER_ERR_MISMATCH);
    assert_int_equal(tether_artifact_target_check(&host, "x86_64-linux", "x86-64-v3+nosuch", "art"),
                     TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "x86-64-v3+nosuch"));
    snprintf(host.cpu, sizeof host.cpu, "x86-64-v4");
    snprintf(host.cpu_features, sizeof host.cpu_features, "avx2 fma avx512f avx512vl avx512vnni");
    assert_int_equal(
        tether_artifact_target_check(&host, "x86_64-linux", "x86-64-v4+avx512vnni", "art"), 0);
    assert_int_equal(
        tether_artifact_target_check(&host, "x86_64-linux", "x86-64-v4+avxvnni", "art"),
        TETHER_ERR_MISMATCH);
    snprintf(host.cpu_features, sizeof host.cpu_features, "avx2 fma avx512f avx512vnni");
    assert_int_equal(/* -mavx512vnni below v4 also takes -mavx512vl */
                     tether_artifact_target_check(&host, "x86_64-linux", "x86-64-v3+avx512vnni",
                                                  "art"),
                     TETHER_ERR_MISMATCH);
    host.cpu_features[0] = 0;
    host.cpu[0] = 0;
    assert_int_equal(tether_artifact_target_check(&host, "x86_64-linux", "x86-64-v2", "art"),
                     TETHER_ERR_MISMATCH);
    tether_device_info arm;
    device(&arm, 0);
    snprintf(arm.arch, sizeof arm.arch, "aarch64");
    snprintf(arm.triple, sizeof arm.triple, "aarch64-linux-gnu");
    snprintf(arm.cpu, sizeof arm.cpu, "armv8.2-a+dotprod");
    snprintf(arm.cpu_features, sizeof arm.cpu_features, "asimd dotprod");
    assert_int_equal(
        tether_artifact_target_check(&arm, "aarch64-linux", "armv8.2-a+dotprod", "art"), 0);
    assert_int_equal(
        tether_artifact_target_check(&arm, "aarch64-linux", "armv8.2-a+fp16+dotprod", "art"),
        TETHER_ERR_MISMATCH);
    assert_int_equal(tether_artifact_target_check(&board, "cortex-m3", "cortex-m3", "art"), 0);
    assert_int_equal(tether_artifact_target_check(&board, "cortex-m3", "cortex-m7", "art"),
                     TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "compile with --mcpu cortex-m3"));
}

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/tartXXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char p[256];
    snprintf(p, sizeof p, "%s/metadata.json", g_dir);
    unlink(p);
    return rmdir(g_dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_checks),
        cmocka_unit_test(test_signature),
        cmocka_unit_test(test_module_kind),
        cmocka_unit_test(test_target_check),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
