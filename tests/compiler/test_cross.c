/*
 * Generated code is portable C99: a model using every operator kind is generated in both ABIs,
 * both interfaces and both weight modes (every pair of the three) and compiled with -std=c99 -Wall
 * -Wextra -Werror at -O0 and -O2 for x86_64-linux and cortex-m3 (the build driver's own flags). The
 * Cortex-M objects may need nothing but memcpy/memset, the listed libm functions, the weak
 * tether_set_error and the compiler's __aeabi helpers. The same model also runs on the host against
 * the interpreter. Cortex-M0/M4/M7 profiles build at -Os too. Without arm-none-eabi-gcc the
 * Cortex-M tests are skipped. A float64 tensor is refused on every MCU core without a
 * double-precision FPU (naming the tensor, nothing written) unless soft_float64 allows it, and
 * accepted on cortex-m7 and the hosted targets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ops_common.h"
#include "tether/crt.h"

static int arm_available(void) {
    const tether_target *t;
    return tether_target_find("cortex-m3", &t) == 0 && tether_target_available(t);
}

/* Checks the undefined symbols of obj against the allowed list via arm-none-eabi-nm. */
static void check_symbols(const char *obj) {
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "arm-none-eabi-nm -u '%s'", obj);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char ln[256];
    int n = 0;
    while (fgets(ln, sizeof ln, p)) {
        char kind[8], name[200];
        if (sscanf(ln, "%7s %199s", kind, name) != 2) {
            continue;
        }
        static const char *const ok[] = {"memcpy", "memset", "expf", "logf",
                                         "sqrtf",  "tanhf",  "powf", "tether_set_error"};
        int good = strncmp(name, "__aeabi_", 8) == 0;
        for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
            good |= strcmp(name, ok[i]) == 0;
        }
        if (!good) {
            pclose(p);
            fail_msg("%s needs '%s'", obj, name);
        }
        n++;
    }
    assert_int_equal(pclose(p), 0);
    assert_true(n > 0); /* at least memcpy/expf/__aeabi_*: the check really ran */
}

static void build_all(const char *target) {
    for (int opt = 0; opt <= 2; opt += 2) {
        /* every pair of ABI, interface and weight mode, in 4 builds instead of all 8: the
         * interface only adds <prefix>_run and its structs to the same code (emit_c.c) */
        for (int combo = 0; combo < 4; combo++) {
            tether_ir_graph g;
            tt_build_zoo(&g);
            if (tether_ir_infer(&g) != 0) {
                fail_msg("zoo: %s", tether_last_error());
            }
            tether_compile_options o;
            tether_compile_options_init(&o);
            o.codegen.abi = (tether_abi)(combo & 1);
            o.codegen.interface = (tether_interface)((combo ^ (combo >> 1)) & 1);
            o.codegen.link_params = !((combo >> 1) & 1);
            o.codegen.prefix = "zoo";
            o.build.target = target;
            o.build.opt_level = opt;
            o.build.keep_objects = true;
            char dir[1024];
            snprintf(dir, sizeof dir, "%s/tests/compiler/cross-%s-O%d-%d", TETHER_BINARY_DIR,
                     target, opt, combo);
            char rm[1200];
            snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
            assert_int_equal(system(rm), 0);
            tether_compile_result res;
            if (tether_compile_graph(&g, dir, &o, &res) != 0) {
                fail_msg("%s -O%d %s/%s/%s: %s", target, opt, tether_abi_name(o.codegen.abi),
                         tether_interface_name(o.codegen.interface),
                         o.codegen.link_params ? "linked" : "blob", tether_last_error());
            }
            assert_true(res.built);
            assert_true(res.build.sizes.text > 0);
            if (!res.build.stack.bounded) {
                fail_msg("%s -O%d combo %d: stack unbounded: %s", target, opt, combo,
                         res.build.stack.reason);
            }
            if (strcmp(target, "x86_64-linux") != 0) {
                char obj[1200];
                snprintf(obj, sizeof obj, "%s/zoo.o", dir);
                check_symbols(obj);
            }
            assert_int_equal(system(rm), 0);
            tether_ir_close(&g);
        }
    }
}

/* float64 needs fp.dp on an MCU, or the explicit soft_float64 (docs/codegen.md). */
static void test_float64_needs_fp_dp(void **state) {
    (void)state;
    static const struct {
        const char *target;
        bool refused;
    } cases[] = {{"cortex-m0", true},   {"cortex-m3", true},     {"cortex-m4", true},
                 {"cortex-m33", true},  {"rv32imac", true},      {"cortex-m7", false},
                 {"cortex-m55", false}, {"x86_64-linux", false}, {"aarch64-linux", false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int soft = 0; soft < 2; soft++) {
            tether_ir_graph g;
            assert_int_equal(tether_ir_init(&g, "f64"), 0);
            int64_t shape[1] = {4};
            int a, s;
            assert_int_equal(
                tether_ir_add_tensor(&g, "a", TETHER_DTYPE(kDLFloat, 64), 1, shape, &a), 0);
            assert_int_equal(
                tether_ir_add_tensor(&g, "s", TETHER_DTYPE(kDLFloat, 64), 1, shape, &s), 0);
            int ins[2] = {a, a};
            assert_int_equal(
                tether_ir_add_node(&g, "add", TETHER_OP_ADD, ins, 2, &s, 1, NULL, NULL), 0);
            assert_int_equal(tether_ir_add_input(&g, a), 0);
            assert_int_equal(tether_ir_add_output(&g, s), 0);
            assert_int_equal(tether_ir_infer(&g), 0);
            tether_compile_options o;
            tether_compile_options_init(&o);
            o.build.target = cases[i].target;
            o.build.soft_float64 = soft;
            o.build_library = false; /* the check, not the cross compilers */
            char dir[1024], rm[1200];
            snprintf(dir, sizeof dir, "%s/tests/compiler/f64-%s-%d", TETHER_BINARY_DIR,
                     cases[i].target, soft);
            snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
            assert_int_equal(system(rm), 0);
            int rc = tether_compile_graph(&g, dir, &o, NULL);
            if (cases[i].refused && !soft) {
                assert_int_equal(rc, TETHER_ERR_UNSUPPORTED);
                assert_non_null(strstr(tether_last_error(), "tensor 'a' is float64: target"));
                assert_non_null(strstr(tether_last_error(), cases[i].target));
                assert_non_null(strstr(tether_last_error(), "--soft-float64"));
                assert_int_not_equal(access(dir, F_OK), 0); /* nothing written */
            } else if (rc) {
                fail_msg("%s (soft %d): %s", cases[i].target, soft, tether_last_error());
            }
            tether_ir_close(&g);
        }
    }
}

static void test_x86_64(void **state) {
    (void)state;
    build_all("x86_64-linux");
}

static void test_cortex_m3(void **state) {
    (void)state;
    if (!arm_available()) {
        skip();
    }
    build_all("cortex-m3");
}

/* The other Cortex-M profiles (soft-float M0, hard-float M4/M7) build too, at -Os. */
static void test_other_profiles(void **state) {
    (void)state;
    if (!arm_available()) {
        skip();
    }
    const char *targets[] = {"cortex-m0", "cortex-m4", "cortex-m7"};
    for (int i = 0; i < 3; i++) {
        for (int abi = 0; abi < 2; abi++) {
            tether_ir_graph g;
            tt_build_zoo(&g);
            assert_int_equal(tether_ir_infer(&g), 0);
            tether_compile_options o;
            tether_compile_options_init(&o);
            o.codegen.abi = (tether_abi)abi;
            o.codegen.interface = TETHER_INTERFACE_C;
            o.codegen.prefix = "zoo";
            o.build.target = targets[i];
            o.build.opt_level = -1;
            o.build.keep_objects = true;
            char dir[1024], rm[1200], obj[1200];
            snprintf(dir, sizeof dir, "%s/tests/compiler/profile-%s-%d", TETHER_BINARY_DIR,
                     targets[i], abi);
            snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
            assert_int_equal(system(rm), 0);
            tether_compile_result res;
            if (tether_compile_graph(&g, dir, &o, &res) != 0) {
                fail_msg("%s: %s", targets[i], tether_last_error());
            }
            assert_true(res.build.stack.bounded);
            snprintf(obj, sizeof obj, "%s/zoo.o", dir);
            check_symbols(obj);
            assert_int_equal(system(rm), 0);
            tether_ir_close(&g);
        }
    }
}

/* The profiles of the newer boards (docs/boards.md): Cortex-M33, Cortex-M55 with and without
 * Helium, and RV32IMAC, each skipped without its compiler: the zoo builds in both ABIs and its
 * static stack is bounded (for rv32imac: libgcc's and picolibc's frames from the RISC-V
 * disassembly, compiler/src/build/libframes.c). */
static void test_board_profiles(void **state) {
    (void)state;
    const char *targets[] = {"cortex-m33", "cortex-m55", "cortex-m55-nomve", "rv32imac"};
    int built = 0;
    for (int i = 0; i < 4; i++) {
        const tether_target *t;
        assert_int_equal(tether_target_find(targets[i], &t), 0);
        assert_non_null(t->features);
        if (!tether_target_available(t)) {
            printf("%s: %s not installed, not built\n", targets[i], t->cc);
            continue;
        }
        for (int abi = 0; abi < 2; abi++) {
            tether_ir_graph g;
            tt_build_zoo(&g);
            assert_int_equal(tether_ir_infer(&g), 0);
            tether_compile_options o;
            tether_compile_options_init(&o);
            o.codegen.abi = (tether_abi)abi;
            o.codegen.prefix = "zoo";
            o.build.target = targets[i];
            char dir[1024], rm[1200];
            snprintf(dir, sizeof dir, "%s/tests/compiler/profile-%s-%d", TETHER_BINARY_DIR,
                     targets[i], abi);
            snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
            assert_int_equal(system(rm), 0);
            tether_compile_result res;
            if (tether_compile_graph(&g, dir, &o, &res) != 0) {
                fail_msg("%s: %s", targets[i], tether_last_error());
            }
            if (!res.build.stack.bounded) {
                fail_msg("%s abi %d: stack unbounded: %s", targets[i], abi, res.build.stack.reason);
            }
            printf("%s abi %d: text %llu, static stack %llu bytes\n", targets[i], abi,
                   (unsigned long long)res.build.sizes.text,
                   (unsigned long long)res.build.stack.bytes);
            assert_true(res.build.stack.bytes > 0);
            assert_int_equal(system(rm), 0);
            tether_ir_close(&g);
            built++;
        }
    }
    if (!built) {
        skip();
    }
}

static void test_zoo_runs_on_host(void **state) {
    (void)state;
    tether_ir_graph g;
    tt_build_zoo(&g);
    assert_int_equal(tether_ir_infer(&g), 0);
    assert_true(g.nnodes >= 40);
    float x[192], ref[16], got[16];
    uint32_t seed = 1;
    tt_fill(x, 192, false, &seed);
    const float *in[1] = {x};
    float *r[1] = {ref}, *o[1] = {got};
    assert_int_equal(tether_interp_run(&g, in, r), 0);
    for (int abi = 0; abi < 2; abi++) {
        int rc =
            tt_run_compiled(&g, "zoo", (tether_abi)abi, TETHER_INTERFACE_PACKED, abi == 0, in, o);
        if (rc) {
            fail_msg("zoo: %s", tether_last_error());
        }
        if (tt_close(got, ref, 16, 1e-4, 1e-3) > 1.0) {
            fail_msg("zoo output differs (%s ABI)", tether_abi_name((tether_abi)abi));
        }
    }
    tether_ir_close(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_x86_64),           cmocka_unit_test(test_cortex_m3),
        cmocka_unit_test(test_other_profiles),   cmocka_unit_test(test_board_profiles),
        cmocka_unit_test(test_zoo_runs_on_host), cmocka_unit_test(test_float64_needs_fp_dp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
