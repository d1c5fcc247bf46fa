/*
 * The host-side RAM-upload link step (compiler/include/tether/mcu_link.h) against a real
 * firmware build, without QEMU: firmware.json is read, found and checked against HELLO values;
 * modules are linked at the load region against the firmware's exports and checked as the
 * device would; a region overflow, a missing Thumb bit, a call to a symbol the firmware does not
 * export, a module compiled for another CPU and damaged images are refused with errors that
 * name the problem, and leave no image behind.
 * usage: test_mcu_link FIRMWARE_DIR
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tether/crt.h"
#include "tether/mcu_link.h"

#include "mcu_client.h"

static const char *fw_dir;
static char workdir[256];
static tether_mcu_firmware fw;

/* Compiles tests/mcu/modules/<name>.c (or the given source file) to an object. */
static void compile(const char *src, const char *obj) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb -std=c11 -Os -ffreestanding "
             "-ffunction-sections -fdata-sections -Wall -Wextra -Werror -I%s/crt/include "
             "-I%s/dlpack-include -c %s -o %s",
             TETHER_SOURCE_DIR, TETHER_BINARY_DIR, src, obj);
    if (system(cmd) != 0) {
        fail_msg("compiling failed: %s", cmd);
    }
}

static void module_obj(const char *name, char *obj, size_t n) {
    char src[600];
    snprintf(src, sizeof src, "%s/tests/mcu/modules/%s.c", TETHER_SOURCE_DIR, name);
    snprintf(obj, n, "%s/%s.o", workdir, name);
    compile(src, obj);
}

/* Links one object; returns the status, image paths in workdir/<name>.elf/.bin. */
static int link_one(const char *name, const char *obj, const char *target, tether_mcu_image *img) {
    char elf[600], bin[600];
    snprintf(elf, sizeof elf, "%s/%s.elf", workdir, name);
    snprintf(bin, sizeof bin, "%s/%s.bin", workdir, name);
    const char *in[1] = {obj};
    return tether_mcu_link(&fw, target, in, 1, elf, bin, img);
}

static int exists(const char *name, const char *ext) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s.%s", workdir, name, ext);
    return access(p, F_OK) == 0;
}

static int setup(void **state) {
    (void)state;
    if (mcu_workdir_create(workdir, sizeof workdir, "link") != 0) {
        return -1;
    }
    unsetenv("TETHER_FIRMWARE");
    if (tether_mcu_firmware_load(fw_dir, &fw) != 0) {
        fprintf(stderr, "%s\n", tether_last_error());
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    return mcu_workdir_remove(workdir);
}

static void test_firmware_description(void **state) {
    (void)state;
    assert_string_equal(fw.board, "mps2-an385");
    assert_int_equal(fw.load_addr, 0x20050000u);
    assert_int_equal(fw.load_size, 128u * 1024u);
    assert_non_null(strstr(fw.cpu_flags, "-mcpu=cortex-m3"));
    assert_true(fw.exports_id != 0);
    assert_int_equal(access(fw.module_ld, R_OK), 0);
    assert_int_equal(access(fw.exports_ld, R_OK), 0);

    /* found by board name below a folder of firmware builds, or through $TETHER_FIRMWARE */
    char parent[512];
    snprintf(parent, sizeof parent, "%s", fw_dir);
    *strrchr(parent, '/') = 0;
    const char *dirs[2] = {"/nonexistent", parent};
    tether_mcu_firmware f2;
    assert_int_equal(tether_mcu_firmware_find("mps2-an385", dirs, 2, &f2), 0);
    assert_int_equal(f2.exports_id, fw.exports_id);
    assert_int_equal(tether_mcu_firmware_find("no-such-board", dirs, 2, &f2), TETHER_ERR_NOT_FOUND);
    assert_non_null(strstr(tether_last_error(), "no-such-board"));
    assert_non_null(strstr(tether_last_error(), "--firmware"));
    setenv("TETHER_FIRMWARE", fw_dir, 1);
    assert_int_equal(tether_mcu_firmware_find("mps2-an385", NULL, 0, &f2), 0);
    unsetenv("TETHER_FIRMWARE");

    /* not a firmware description */
    char bogus[600];
    snprintf(bogus, sizeof bogus, "%s/bogus.json", workdir);
    FILE *f = fopen(bogus, "w");
    fputs("{\"format\": \"tether-artifact\"}", f);
    fclose(f);
    assert_int_equal(tether_mcu_firmware_load(bogus, &f2), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "not a tether firmware description"));
    /* a description of another format version */
    f = fopen(bogus, "w");
    fputs("{\"format\": \"tether-mcu-firmware\", \"version\": 2}", f);
    fclose(f);
    assert_int_equal(tether_mcu_firmware_load(bogus, &f2), TETHER_ERR_UNSUPPORTED);
    if (!strstr(tether_last_error(), "version 2 (this tether reads 1)")) {
        fail_msg("%s", tether_last_error());
    }
}

static void test_device_check(void **state) {
    (void)state;
    assert_int_equal(
        tether_mcu_firmware_check(&fw, "mps2-an385", fw.load_addr, fw.load_size, fw.exports_id), 0);
    assert_int_equal(
        tether_mcu_firmware_check(&fw, "lm3s6965evb", fw.load_addr, fw.load_size, fw.exports_id),
        TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "lm3s6965evb"));
    assert_int_equal(tether_mcu_firmware_check(&fw, "mps2-an385", fw.load_addr + 0x1000,
                                               fw.load_size, fw.exports_id),
                     TETHER_ERR_MISMATCH);
    assert_int_equal(tether_mcu_firmware_check(&fw, "mps2-an385", fw.load_addr, fw.load_size,
                                               fw.exports_id ^ 1u),
                     TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "exports id"));
    assert_int_equal(tether_mcu_firmware_check(&fw, "", 0, 0, 0), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "no RAM load region"));
}

static void test_link_module(void **state) {
    (void)state;
    char obj[600];
    module_obj("math_module", obj, sizeof obj);
    tether_mcu_image img;
    assert_int_equal(link_one("math_module", obj, "cortex-m3", &img), 0);
    assert_int_equal(img.link_addr, fw.load_addr);
    assert_true(img.size > 32 && img.size < 16384);
    assert_true(img.bss_size >= 4);
    assert_int_equal(img.num_functions, 2);
    assert_string_equal(img.functions[0], "softmax16");
    assert_string_equal(img.functions[1], "dot_f32");
    assert_true(img.code > 0);
    assert_true(exists("math_module", "bin"));
    /* Armv6-M code runs on the Cortex-M3 firmware; hard-float or hosted code does not. */
    assert_int_equal(link_one("math_m0", obj, "cortex-m0", &img), 0);
    assert_int_equal(link_one("math_m4", obj, "cortex-m4", &img), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "cannot run"));
    assert_int_equal(link_one("math_x86", obj, "x86_64-linux", &img), TETHER_ERR_MISMATCH);
    assert_int_equal(link_one("math_bad", obj, "no-such-target", &img), TETHER_ERR_NOT_FOUND);
}

static void test_link_errors(void **state) {
    (void)state;
    char obj[600];
    tether_mcu_image img;
    /* 200 KiB of .bss in a 128 KiB region: the linker's overflow, reported as such */
    module_obj("bigbss_module", obj, sizeof obj);
    assert_int_equal(link_one("bigbss_module", obj, NULL, &img), TETHER_ERR_LIMIT);
    printf("bigbss: %s\n", tether_last_error());
    assert_non_null(strstr(tether_last_error(), "does not fit the 131072-byte load region"));
    assert_false(exists("bigbss_module", "bin"));
    /* a registry entry without the Thumb bit */
    module_obj("nothumb_module", obj, sizeof obj);
    assert_int_equal(link_one("nothumb_module", obj, NULL, &img), TETHER_ERR_ALIGNMENT);
    printf("nothumb: %s\n", tether_last_error());
    assert_non_null(strstr(tether_last_error(), "'raw'"));
    assert_non_null(strstr(tether_last_error(), "Thumb"));
    assert_false(exists("nothumb_module", "bin"));
    /* a call to a function the firmware does not export */
    char src[600];
    snprintf(src, sizeof src, "%s/sinh_module.c", workdir);
    FILE *f = fopen(src, "w");
    fputs("#include <math.h>\n#include \"tether/crt.h\"\n"
          "static int32_t f(float *x) { x[0] = sinhf(x[0]); return 0; }\n"
          "static const tether_func_entry e[] = {{\"f\", TETHER_ABI_UNPACKED, 1,\n"
          "    {.unpacked = (tether_unpacked_func)f}}};\n"
          "const tether_func_registry tether_module_registry = {e, 1};\n",
          f);
    fclose(f);
    snprintf(obj, sizeof obj, "%s/sinh_module.o", workdir);
    compile(src, obj);
    assert_int_equal(link_one("sinh_module", obj, NULL, &img), TETHER_ERR_NOT_FOUND);
    printf("sinh: %s\n", tether_last_error());
    assert_non_null(strstr(tether_last_error(), "'sinhf'"));
    assert_non_null(strstr(tether_last_error(), "does not export"));
    assert_false(exists("sinh_module", "elf"));
}

static void test_image_check(void **state) {
    (void)state;
    char obj[600], bin[600];
    module_obj("math_module", obj, sizeof obj);
    tether_mcu_image img;
    assert_int_equal(link_one("math_module", obj, NULL, &img), 0);
    snprintf(bin, sizeof bin, "%s/math_module.bin", workdir);
    FILE *f = fopen(bin, "rb");
    static uint8_t data[65536];
    size_t n = fread(data, 1, sizeof data, f);
    fclose(f);
    assert_int_equal(n, img.size);
    assert_int_equal(tether_mcu_image_check(&fw, data, n, &img), 0);
    /* truncated */
    assert_int_equal(tether_mcu_image_check(&fw, data, n - 4, &img), TETHER_ERR_MISMATCH);
    /* not an image */
    assert_int_equal(tether_mcu_image_check(&fw, data + 4, n - 4, &img), TETHER_ERR_INVALID_ARG);
    /* linked for another address */
    data[10] ^= 0x01;
    assert_int_equal(tether_mcu_image_check(&fw, data, n, &img), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "module.ld"));
    data[10] ^= 0x01;
    /* .bss beyond the region */
    uint8_t save[4];
    memcpy(save, data + 20, 4);
    data[22] = 0x10; /* +1 MiB of .bss */
    assert_int_equal(tether_mcu_image_check(&fw, data, n, &img), TETHER_ERR_LIMIT);
    memcpy(data + 20, save, 4);
    /* misaligned registry */
    data[24] ^= 0x02;
    assert_int_equal(tether_mcu_image_check(&fw, data, n, &img), TETHER_ERR_ALIGNMENT);
    data[24] ^= 0x02;
    assert_int_equal(tether_mcu_image_check(&fw, data, n, &img), 0);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FIRMWARE_DIR\n", argv[0]);
        return 2;
    }
    fw_dir = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_firmware_description), cmocka_unit_test(test_device_check),
        cmocka_unit_test(test_link_module),          cmocka_unit_test(test_link_errors),
        cmocka_unit_test(test_image_check),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
