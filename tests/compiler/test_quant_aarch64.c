/*
 * int8 kernels on aarch64-linux, bit for bit (docs/quantization.md "Kernels"): the QDQ
 * convolution / depthwise / pointwise / dense model of quant_models.h (per-channel weights,
 * nonzero zero points, asymmetric padding, strides, odd channel counts and sizes) compiled for
 * aarch64-linux for the baseline CPU and for armv8.2-a+dotprod, run under qemu-aarch64 user-mode
 * emulation (-cpu cortex-a53: no dot product; -cpu max: with it) by a small AArch64 harness
 * (dlopen, tether_call from crt/ built for AArch64), and its output bytes compared with the x86-64
 * build's and the reference interpreter's. Skipped with a reason when aarch64-linux-gnu-gcc or
 * qemu-aarch64 is missing (scripts/setup installs both).
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
#include "quant_models.h"
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
           system("aarch64-linux-gnu-objdump --version >/dev/null 2>&1") == 0 &&
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

static void write_floats(const char *name, const float *v, size_t n) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(v, sizeof(float), n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void read_floats(const char *name, float *v, size_t n) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(v, sizeof(float), n, f), n);
    fclose(f);
}

/* one model shape: x86-64 build and interpreter, then aarch64 for both CPUs under both QEMU CPUs */
static void check_shape(int C, int H, int W, int K, int u8, int dws) {
    tether_ir_graph g;
    if (tq_build_mix_ex(&g, C, H, W, K, u8, dws)) {
        fail_msg("%s", tether_last_error());
    }
    tether_pass_options po;
    tether_pass_options_init(&po);
    if (tether_passes_run(&g, &po)) {
        fail_msg("%s", tether_last_error());
    }
    int nq = 0;
    for (int i = 0; i < g.nnodes; i++) {
        nq += g.nodes[i].op == TETHER_OP_QCONV || g.nodes[i].op == TETHER_OP_QMATMUL;
    }
    assert_int_equal(nq, 4); /* conv, depthwise, pointwise, dense: all integer */
    const tether_ir_tensor *tx = &g.tensors[g.inputs[0]], *ty = &g.tensors[g.outputs[0]];
    size_t nx = tether_ir_tensor_elements(tx), ny = tether_ir_tensor_elements(ty);
    assert_true(nx <= 4096 && ny == 11);
    static float x[4096];
    float ref[11], host[11], got[11];
    uint32_t seed = (uint32_t)(C * 131 + H * 7 + W);
    tt_fill(x, nx, false, &seed);
    const float *in[1] = {x};
    float *r[1] = {ref}, *h[1] = {host};
    assert_int_equal(tether_interp_run(&g, in, r), 0);
    if (tt_run_compiled(&g, "qmix", TETHER_ABI_UNPACKED, TETHER_INTERFACE_PACKED, true, in, h)) {
        fail_msg("x86-64: %s", tether_last_error());
    }
    assert_memory_equal(host, ref, sizeof ref); /* the scalar kernels equal the interpreter */
    write_floats("x.bin", x, nx);
    char xs[64];
    snprintf(xs, sizeof xs, "1x%dx%dx%d", C, H, W);
    static const char *const cpus[] = {"", "armv8.2-a+dotprod"};
    for (int c = 0; c < 2; c++) {
        tether_compile_options o;
        tether_compile_options_init(&o);
        o.codegen.prefix = "qmix";
        o.codegen.link_params = true;
        o.build.target = "aarch64-linux";
        o.build.cpu = cpus[c];
        char dir[1200];
        snprintf(dir, sizeof dir, "%s/cpu%d", g_dir, c);
        tether_compile_result res;
        if (tether_compile_graph(&g, dir, &o, &res) != 0) {
            fail_msg("aarch64-linux %s: %s", cpus[c], tether_last_error());
        }
        assert_true(res.build.stack.bounded);
        /* the NEON kernels (emit_c_qneon.c) are the ones built: SMLAL in the three GEMM
         * kernels (tgk_*: two convolutions and the dense) of the baseline build and no SDOT
         * anywhere; SDOT in the three of the dot-product build (the depthwise is SMLAL in both,
         * the scalar loop below 8 output columns) */
        sh("aarch64-linux-gnu-objdump -d '%s/%s' > '%s/dis%d.txt'", dir, res.build.library, g_dir,
           c);
        sh("awk '/^[0-9a-f]+ <tgk_/ { f = $2 } /\\t%s\\t/ { h[f] = 1 } "
           "END { n = 0; for (k in h) n++; exit n < %d }' '%s/dis%d.txt'",
           c ? "sdot" : "smlal2?", 3, g_dir, c);
        if (!c) {
            sh("! grep -q -E '\\ssdot\\s' '%s/dis0.txt'", g_dir);
        }
        /* the baseline build runs on any AArch64 CPU; the dot-product build needs one with it */
        static const char *const qcpus[] = {"cortex-a53", "max"};
        for (int q = c; q < 2; q++) {
            memset(got, 0, sizeof got);
            sh("cd '%s' && rm -f y.bin && qemu-aarch64 -cpu %s -L /usr/aarch64-linux-gnu ./harness "
               "'%s/%s' '%s' x.bin %zu %s y.bin 11 1x11",
               g_dir, qcpus[q], dir, res.build.library, res.entry, nx, xs);
            read_floats("y.bin", got, 11);
            if (memcmp(got, host, sizeof got) != 0) {
                fail_msg("aarch64 (%s, qemu -cpu %s), shape %dx%dx%d K%d u8 %d stride %d: output "
                         "differs from x86-64's",
                         cpus[c][0] ? cpus[c] : "baseline", qcpus[q], C, H, W, K, u8, dws);
            }
            print_message("aarch64 %s on qemu -cpu %s: %dx%dx%d K%d u8 %d stride %d bit-exact\n",
                          cpus[c][0] ? cpus[c] : "baseline", qcpus[q], C, H, W, K, u8, dws);
        }
    }
    tether_ir_close(&g);
}

static void test_int8_on_aarch64(void **state) {
    (void)state;
    if (!tools_present()) {
        print_message("skipped: aarch64-linux-gnu-gcc or qemu-aarch64 is not installed\n");
        skip();
    }
    snprintf(g_dir, sizeof g_dir, "%s/tests/compiler/quant_aarch64", TETHER_BINARY_DIR);
    sh("rm -rf '%s' && mkdir -p '%s'", g_dir, g_dir);
    build_harness();
    check_shape(3, 11, 9, 3, 0, 1);
    check_shape(5, 13, 7, 5, 0, 1);
    check_shape(3, 9, 40, 3, 0, 1); /* 20 output columns: the depthwise 8-column steps */
    check_shape(3, 9, 40, 3, 1, 2); /* uint8 activations, the depthwise at stride 2 */
    sh("rm -rf '%s'", g_dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int8_on_aarch64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
