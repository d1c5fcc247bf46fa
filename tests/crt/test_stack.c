/* Unit tests: stack painting, and the high-water mark of calls of known stack depth run on a
 * dedicated stack (the mechanism tetherd uses for every CPU call). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tether/crt.h"
#include "tether/crt_posix.h"

static void paint_and_measure(void **state) {
    (void)state;
    _Alignas(16) uint8_t region[1024];
    tether_stack_paint(region, sizeof region);
    assert_int_equal(tether_stack_used(region, sizeof region), 0);
    /* a downward-growing stack touches the top first */
    memset(region + 1024 - 100, 0, 100);
    assert_int_equal(tether_stack_used(region, sizeof region), 100);
    region[300] = 0; /* deepest point */
    assert_int_equal(tether_stack_used(region, sizeof region), 1024 - 300);
    /* unaligned region: only whole words count */
    tether_stack_paint(region + 1, 64);
    assert_int_equal(tether_stack_used(region + 1, 64), 0);
}

/* Touches `depth` bytes of stack through a volatile array so nothing is optimised away. */
static __attribute__((noinline)) void use_stack(size_t depth) {
    volatile uint8_t buf[depth];
    for (size_t i = 0; i < depth; i++) {
        buf[i] = (uint8_t)i;
    }
    (void)buf[0];
}

static void call_with_depth(void *arg) {
    use_stack(*(size_t *)arg);
}

static void dedicated_stack_high_water(void **state) {
    (void)state;
    const size_t size = 256 * 1024;
    void *stack = aligned_alloc(64, size);
    assert_non_null(stack);
    size_t baseline = 0;
    size_t zero = 16; /* the smallest call: baseline of the switch itself */
    assert_int_equal(tether_posix_call_on_stack(stack, size, call_with_depth, &zero, &baseline),
                     TETHER_OK);
    assert_true(baseline > 0 && baseline < 4096);
    const size_t depths[] = {1024, 8192, 65536};
    for (size_t i = 0; i < 3; i++) {
        size_t used = 0;
        size_t depth = depths[i];
        assert_int_equal(tether_posix_call_on_stack(stack, size, call_with_depth, &depth, &used),
                         TETHER_OK);
        /* at least the array; at most the array plus the call overhead and ASan redzones */
        assert_true(used >= depth);
        assert_true(used <= depth + baseline + 4096);
    }
    free(stack);
}

static void dedicated_stack_errors(void **state) {
    (void)state;
    static _Alignas(16) uint8_t small[1024];
    size_t used;
    size_t d = 0;
    assert_int_equal(tether_posix_call_on_stack(small, sizeof small, call_with_depth, &d, &used),
                     TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "below the minimum"));
    assert_int_equal(tether_posix_call_on_stack(small + 8, 64 * 1024, call_with_depth, &d, &used),
                     TETHER_ERR_ALIGNMENT);
    assert_int_equal(tether_posix_call_on_stack(NULL, 64 * 1024, call_with_depth, &d, &used),
                     TETHER_ERR_INVALID_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(paint_and_measure),
        cmocka_unit_test(dedicated_stack_high_water),
        cmocka_unit_test(dedicated_stack_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
