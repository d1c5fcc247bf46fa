/*
 * The static stack bound of int8 builds with float islands (docs/quantization.md): a QDQ model
 * whose sigmoid and softmax stay float between QuantizeLinear/DequantizeLinear
 * (quant_models.h tq_build_island) has two quantize and two dequantize kernels of one shape,
 * which gcc's identical code folding merges into one body each; the call graph still calls the
 * folded names, and the bound must come out finite anyway (the object's symbol table says which
 * body each one is). Compiled for every installed target of x86_64-linux, aarch64-linux,
 * cortex-m3 and cortex-m4; the board test (tests/mcu test_mcu_int8_stack) checks the bound
 * against the measured high-water mark.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "quant_models.h"
#include "tether/compiler.h"

static void test_island_bounded(void **state) {
    (void)state;
    static const char *const targets[] = {"x86_64-linux", "aarch64-linux", "cortex-m3",
                                          "cortex-m4"};
    int built = 0;
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
        const tether_target *t;
        assert_int_equal(tether_target_find(targets[i], &t), 0);
        if (!tether_target_available(t)) {
            print_message("%s: compiler not installed, not checked\n", targets[i]);
            continue;
        }
        tether_ir_graph g;
        if (tq_build_island(&g)) {
            fail_msg("%s", tether_last_error());
        }
        char dir[1200];
        snprintf(dir, sizeof dir, "%s/tests/compiler/quant_stack", TETHER_BINARY_DIR);
        mkdir(dir, 0755);
        snprintf(dir, sizeof dir, "%s/tests/compiler/quant_stack/%s", TETHER_BINARY_DIR,
                 targets[i]);
        tether_compile_options o;
        tether_compile_options_init(&o);
        o.build.target = targets[i];
        tether_compile_result res;
        if (tether_compile_graph(&g, dir, &o, &res)) {
            fail_msg("%s: %s", targets[i], tether_last_error());
        }
        print_message("%s: static stack %lld bytes (%s)\n", targets[i],
                      (long long)res.build.stack.bytes, res.build.stack.path);
        if (!res.build.stack.bounded) {
            fail_msg("%s: unbounded: %s", targets[i], res.build.stack.reason);
        }
        assert_true(res.build.stack.bytes > 0);
        /* the float islands are there: the sigmoid's and the softmax's kernels are on the path
         * or at least in the module (the bound covers them) */
        assert_non_null(strstr(res.build.stack.path, "tether_model_main"));
        tether_ir_close(&g);
        built++;
    }
    assert_true(built >= 1); /* the host target at least */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_island_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
