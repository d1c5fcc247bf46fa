/*
 * The aarch64-linux target (phones and boards running Linux) for real: the operator zoo (40+
 * nodes) is compiled with both ABIs into an AArch64 shared object by the build driver, loaded by
 * a small AArch64 harness (dlopen, the module registry, tether_call from crt/ built for AArch64)
 * under qemu-aarch64 user-mode emulation, and its output compared with the reference
 * interpreter on the host. Skipped with a reason when aarch64-linux-gnu-gcc or qemu-aarch64 is
 * missing (scripts/setup installs both).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ops_common.h"
#include "tether/compiler.h"
#include "tether/crt.h"

/* The harness: harness LIB ENTRY IN.bin N_IN D0xD1.. OUT.bin N_OUT D0xD1.. (float32 tensors). */
static const char harness_src[] =
    "#include <dlfcn.h>\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#include \"tether/crt.h\"\n"
    "static int shape(const char *s, int64_t *d) {\n"
    "    int n = 0;\n"
    "    while (*s && n < 8) { d[n++] = strtoll(s, (char **)&s, 10); if (*s == 'x') s++; }\n"
    "    return n;\n"
    "}\n"
    "int main(int argc, char **argv) {\n"
    "    if (argc != 9) return 2;\n"
    "    void *h = dlopen(argv[1], RTLD_NOW);\n"
    "    if (!h) { fprintf(stderr, \"%s\\n\", dlerror()); return 3; }\n"
    "    const tether_func_registry *reg = dlsym(h, \"tether_module_registry\");\n"
    "    const tether_func_entry *fn;\n"
    "    if (!reg || tether_registry_check(reg) || tether_registry_find(reg, argv[2], &fn))\n"
    "        return 4;\n"
    "    long nin = atol(argv[4]), nout = atol(argv[7]);\n"
    "    float *x = malloc(sizeof(float) * nin), *y = calloc(nout, sizeof(float));\n"
    "    FILE *f = fopen(argv[3], \"rb\");\n"
    "    if (!f || fread(x, sizeof(float), nin, f) != (size_t)nin) return 5;\n"
    "    fclose(f);\n"
    "    int64_t sx[8], sy[8];\n"
    "    DLTensor t[2];\n"
    "    memset(t, 0, sizeof t);\n"
    "    t[0].data = x; t[0].ndim = shape(argv[5], sx); t[0].shape = sx;\n"
    "    t[1].data = y; t[1].ndim = shape(argv[8], sy); t[1].shape = sy;\n"
    "    t[0].dtype = t[1].dtype = TETHER_FLOAT32;\n"
    "    tether_value args[2] = {{.v_handle = &t[0]}, {.v_handle = &t[1]}};\n"
    "    int32_t codes[2] = {TETHER_TYPE_DLTENSOR, TETHER_TYPE_DLTENSOR}, ret = -1;\n"
    "    if (tether_call(fn, args, codes, 2, &ret) || ret) {\n"
    "        fprintf(stderr, \"call: %s (ret %d)\\n\", tether_last_error(), (int)ret);\n"
    "        return 6;\n"
    "    }\n"
    "    f = fopen(argv[6], \"wb\");\n"
    "    if (!f || fwrite(y, sizeof(float), nout, f) != (size_t)nout) return 7;\n"
    "    return fclose(f) ? 7 : 0;\n"
    "}\n";

static char g_dir[1024];

static int tools_present(void) {
    return system("aarch64-linux-gnu-gcc --version >/dev/null 2>&1") == 0 &&
           system("qemu-aarch64 --version >/dev/null 2>&1") == 0;
}

static void sh(const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (system(cmd) != 0) {
        fail_msg("command failed: %s", cmd);
    }
}

/* Builds the harness once, with crt/'s core sources compiled for AArch64. */
static void build_harness(void) {
    char src[1200];
    snprintf(src, sizeof src, "%s/harness.c", g_dir);
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fputs(harness_src, f);
    fclose(f);
    sh("cd '%s' && aarch64-linux-gnu-gcc -std=c11 -D_GNU_SOURCE -rdynamic -O1 -Wall -Wextra "
       "-Werror "
       "-I'%s/crt/include' "
       "-I'%s' harness.c '%s'/crt/src/*.c '%s'/crt/platform/posix/platform_posix.c "
       "-I'%s/crt/platform/posix/include' -o harness -ldl -lm 2> harness.log || "
       "{ cat harness.log; exit 1; }",
       g_dir, TETHER_SOURCE_DIR, TETHER_DLPACK_INCLUDE, TETHER_SOURCE_DIR, TETHER_SOURCE_DIR,
       TETHER_SOURCE_DIR);
}

static int is_aarch64_elf(const char *path) {
    unsigned char h[20];
    FILE *f = fopen(path, "rb");
    if (!f) {
        return 0;
    }
    size_t n = fread(h, 1, sizeof h, f);
    fclose(f);
    /* ELF magic, 64-bit, little-endian, e_machine EM_AARCH64 (183) */
    return n == sizeof h && !memcmp(h, "\177ELF", 4) && h[4] == 2 && h[5] == 1 && h[18] == 183 &&
           h[19] == 0;
}

static void test_zoo_on_aarch64(void **state) {
    (void)state;
    if (!tools_present()) {
        print_message("skipped: aarch64-linux-gnu-gcc or qemu-aarch64 is not installed\n");
        skip();
    }
    snprintf(g_dir, sizeof g_dir, "%s/tests/compiler/aarch64", TETHER_BINARY_DIR);
    sh("rm -rf '%s' && mkdir -p '%s'", g_dir, g_dir);
    build_harness();
    tether_ir_graph g;
    tt_build_zoo(&g);
    assert_int_equal(tether_ir_infer(&g), 0);
    float x[192], ref[16], got[16];
    uint32_t seed = 7;
    tt_fill(x, 192, false, &seed);
    const float *in[1] = {x};
    float *r[1] = {ref};
    assert_int_equal(tether_interp_run(&g, in, r), 0);
    char path[2048];
    snprintf(path, sizeof path, "%s/x.bin", g_dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(x, sizeof(float), 192, f), 192);
    fclose(f);
    tether_ir_close(&g);
    for (int abi = 0; abi < 2; abi++) {
        tt_build_zoo(&g);
        assert_int_equal(tether_ir_infer(&g), 0);
        tether_compile_options o;
        tether_compile_options_init(&o);
        o.codegen.abi = (tether_abi)abi;
        o.codegen.prefix = "zoo";
        o.codegen.link_params = true;
        o.build.target = "aarch64-linux";
        char dir[1200];
        snprintf(dir, sizeof dir, "%s/%s", g_dir, tether_abi_name((tether_abi)abi));
        tether_compile_result res;
        if (tether_compile_graph(&g, dir, &o, &res) != 0) {
            fail_msg("aarch64-linux: %s", tether_last_error());
        }
        tether_ir_close(&g);
        snprintf(path, sizeof path, "%s/%s", dir, res.build.library);
        assert_true(is_aarch64_elf(path));
        assert_true(res.build.sizes.text > 0);
        assert_true(res.build.stack.bounded);
        print_message("aarch64-linux %s ABI: text %llu, static stack %lld bytes\n",
                      tether_abi_name((tether_abi)abi), (unsigned long long)res.build.sizes.text,
                      (long long)res.build.stack.bytes);
        sh("cd '%s' && qemu-aarch64 -L /usr/aarch64-linux-gnu ./harness '%s' '%s' x.bin 192 "
           "1x3x8x8 y.bin 16 16",
           g_dir, path, res.entry);
        snprintf(path, sizeof path, "%s/y.bin", g_dir);
        f = fopen(path, "rb");
        assert_non_null(f);
        assert_int_equal(fread(got, sizeof(float), 16, f), 16);
        fclose(f);
        if (tt_close(got, ref, 16, 1e-4, 1e-3) > 1.0) {
            fail_msg("zoo on aarch64 differs from the interpreter (%s ABI)",
                     tether_abi_name((tether_abi)abi));
        }
    }
    sh("rm -rf '%s'", g_dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zoo_on_aarch64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
