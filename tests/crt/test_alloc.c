/* Unit tests: LIFO workspace allocator and first-fit heap, including a randomized heap soak. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tether/crt.h"

static _Alignas(64) uint8_t pool[4096];

static void stack_alloc_basic(void **state) {
    (void)state;
    tether_stack_alloc a;
    assert_int_equal(tether_stack_alloc_init(&a, pool, sizeof pool, 16, true), TETHER_OK);
    void *p1, *p2, *p3;
    assert_int_equal(tether_stack_alloc_push(&a, 100, &p1), TETHER_OK);
    assert_int_equal(tether_stack_alloc_push(&a, 1, &p2), TETHER_OK);
    assert_int_equal(tether_stack_alloc_push(&a, 0, &p3), TETHER_OK);
    assert_true(((uintptr_t)p1 % 16) == 0 && ((uintptr_t)p2 % 16) == 0 &&
                ((uintptr_t)p3 % 16) == 0);
    assert_true((uint8_t *)p2 >= (uint8_t *)p1 + 100);
    assert_ptr_not_equal(p2, p3);
    memset(p1, 0xab, 100);
    size_t peak = a.high_water;
    assert_true(peak >= 100 + 16 + 0 + 3 * 16);
    assert_int_equal(tether_stack_alloc_pop(&a, p3), TETHER_OK);
    assert_int_equal(tether_stack_alloc_pop(&a, p2), TETHER_OK);
    assert_int_equal(tether_stack_alloc_pop(&a, p1), TETHER_OK);
    assert_int_equal(a.top, 0);
    assert_int_equal(a.count, 0);
    assert_int_equal(a.high_water, peak);
    tether_stack_alloc_reset_peak(&a);
    assert_int_equal(a.high_water, 0);
}

static void stack_alloc_alignment_options(void **state) {
    (void)state;
    tether_stack_alloc a;
    assert_int_equal(tether_stack_alloc_init(&a, pool, sizeof pool, 64, false), TETHER_OK);
    void *p, *q;
    assert_int_equal(tether_stack_alloc_push(&a, 3, &p), TETHER_OK);
    assert_int_equal(tether_stack_alloc_push(&a, 3, &q), TETHER_OK);
    assert_int_equal((uintptr_t)p % 64, 0);
    assert_int_equal((uintptr_t)q % 64, 0);
    assert_int_equal(tether_stack_alloc_init(&a, pool, sizeof pool, 0, false), TETHER_OK);
    assert_int_equal(a.alignment, TETHER_DEFAULT_ALIGNMENT);
    assert_int_equal(tether_stack_alloc_init(&a, pool, sizeof pool, 24, false),
                     TETHER_ERR_INVALID_ARG);
}

static void stack_alloc_misaligned_base(void **state) {
    (void)state;
    tether_stack_alloc a;
    assert_int_equal(tether_stack_alloc_init(&a, pool + 4, 1024, 16, false), TETHER_ERR_ALIGNMENT);
    assert_non_null(strstr(tether_last_error(), "not aligned to 16 bytes (off by 4)"));
    tether_heap h;
    assert_int_equal(tether_heap_init(&h, pool + 8, 1024, 16), TETHER_ERR_ALIGNMENT);
}

static void stack_alloc_overflow(void **state) {
    (void)state;
    tether_stack_alloc a;
    assert_int_equal(tether_stack_alloc_init(&a, pool, 256, 16, true), TETHER_OK);
    void *p = (void *)1;
    assert_int_equal(tether_stack_alloc_push(&a, 300, &p), TETHER_ERR_OUT_OF_MEMORY);
    assert_null(p);
    assert_non_null(strstr(tether_last_error(), "request of 300 bytes"));
    assert_int_equal(tether_stack_alloc_push(&a, 200, &p), TETHER_OK);
    assert_int_equal(tether_stack_alloc_push(&a, 40, &p), TETHER_ERR_OUT_OF_MEMORY);
    assert_int_equal(tether_stack_alloc_push(&a, SIZE_MAX, &p), TETHER_ERR_OUT_OF_MEMORY);
    assert_int_equal(a.count, 1);
}

static void stack_alloc_lifo_check(void **state) {
    (void)state;
    tether_stack_alloc a;
    void *p1, *p2, *p3;
    assert_int_equal(tether_stack_alloc_init(&a, pool, sizeof pool, 16, true), TETHER_OK);
    assert_int_equal(tether_stack_alloc_push(&a, 32, &p1), TETHER_OK);
    assert_int_equal(tether_stack_alloc_push(&a, 32, &p2), TETHER_OK);
    assert_int_equal(tether_stack_alloc_pop(&a, p1), TETHER_ERR_STATE);
    assert_non_null(strstr(tether_last_error(), "LIFO"));
    assert_int_equal(a.count, 2);
    /* a pointer into the middle of a block, or outside, is refused */
    assert_int_equal(tether_stack_alloc_pop(&a, (uint8_t *)p2 + 16), TETHER_ERR_STATE);
    assert_int_equal(tether_stack_alloc_pop(&a, pool + 4000), TETHER_ERR_STATE);
    assert_int_equal(tether_stack_alloc_pop(&a, p2), TETHER_OK);
    assert_int_equal(tether_stack_alloc_pop(&a, p2), TETHER_ERR_STATE); /* double pop */
    assert_int_equal(tether_stack_alloc_pop(&a, p1), TETHER_OK);

    /* without the check, popping an older block frees it and every newer one */
    assert_int_equal(tether_stack_alloc_init(&a, pool, sizeof pool, 16, false), TETHER_OK);
    assert_int_equal(tether_stack_alloc_push(&a, 32, &p1), TETHER_OK);
    assert_int_equal(tether_stack_alloc_push(&a, 32, &p2), TETHER_OK);
    assert_int_equal(tether_stack_alloc_push(&a, 32, &p3), TETHER_OK);
    assert_int_equal(tether_stack_alloc_pop(&a, p2), TETHER_OK);
    assert_int_equal(a.count, 1);
    void *again;
    assert_int_equal(tether_stack_alloc_push(&a, 32, &again), TETHER_OK);
    assert_ptr_equal(again, p2);
    tether_stack_alloc_reset(&a);
    assert_int_equal(a.top, 0);
}

static void heap_basic_and_coalescing(void **state) {
    (void)state;
    tether_heap h;
    assert_int_equal(tether_heap_init(&h, pool, sizeof pool, 16), TETHER_OK);
    size_t initial = tether_heap_largest_free(&h);
    void *a, *b, *c;
    assert_int_equal(tether_heap_alloc(&h, 100, &a), TETHER_OK);
    assert_int_equal(tether_heap_alloc(&h, 200, &b), TETHER_OK);
    assert_int_equal(tether_heap_alloc(&h, 300, &c), TETHER_OK);
    assert_int_equal((uintptr_t)a % 16, 0);
    assert_int_equal((uintptr_t)b % 16, 0);
    memset(a, 1, 100);
    memset(b, 2, 200);
    memset(c, 3, 300);
    assert_int_equal(tether_heap_check(&h), TETHER_OK);
    assert_int_equal(h.count, 3);
    /* free the middle, then its neighbours: everything merges back into one block */
    assert_int_equal(tether_heap_free(&h, b), TETHER_OK);
    assert_int_equal(tether_heap_check(&h), TETHER_OK);
    assert_int_equal(tether_heap_free(&h, a), TETHER_OK);
    assert_int_equal(tether_heap_check(&h), TETHER_OK);
    assert_int_equal(tether_heap_free(&h, c), TETHER_OK);
    assert_int_equal(tether_heap_check(&h), TETHER_OK);
    assert_int_equal(h.used, 0);
    assert_int_equal(tether_heap_largest_free(&h), initial);
    assert_true(h.high_water >= 600);
    /* the freed hole is reused first-fit */
    void *d;
    assert_int_equal(tether_heap_alloc(&h, 50, &d), TETHER_OK);
    assert_ptr_equal(d, a);
}

static void heap_errors(void **state) {
    (void)state;
    tether_heap h;
    assert_int_equal(tether_heap_init(&h, pool, 8, 16), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_heap_init(&h, pool, 1024, 16), TETHER_OK);
    void *p = NULL, *q = NULL;
    assert_int_equal(tether_heap_alloc(&h, 0, &p), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_heap_alloc(&h, 2000, &p), TETHER_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(tether_last_error(), "request of 2000 bytes"));
    assert_int_equal(tether_heap_alloc(&h, 500, &p), TETHER_OK);
    assert_int_equal(tether_heap_alloc(&h, 500, &q), TETHER_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(tether_last_error(), "largest free block"));
    assert_int_equal(tether_heap_free(&h, (uint8_t *)p + 16), TETHER_ERR_STATE);
    assert_int_equal(tether_heap_free(&h, pool + 2048), TETHER_ERR_STATE);
    assert_int_equal(tether_heap_free(&h, p), TETHER_OK);
    assert_int_equal(tether_heap_free(&h, p), TETHER_ERR_STATE);
    assert_non_null(strstr(tether_last_error(), "double free"));
    assert_int_equal(tether_heap_check(&h), TETHER_OK);
}

/* Random allocations and frees in any order; the heap's invariants hold after every step and
 * blocks never overlap (each is filled with its own byte and checked before freeing). */
static void heap_random_soak(void **state) {
    (void)state;
    static _Alignas(16) uint8_t big[64 * 1024];
    tether_heap h;
    assert_int_equal(tether_heap_init(&h, big, sizeof big, 16), TETHER_OK);
    struct {
        uint8_t *p;
        size_t n;
        uint8_t tag;
    } live[64] = {{0}};
    uint32_t seed = 12345;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245u + 12345u;
        int slot = (int)((seed >> 8) % 64);
        if (live[slot].p != NULL) {
            for (size_t i = 0; i < live[slot].n; i++) {
                assert_int_equal(live[slot].p[i], live[slot].tag);
            }
            assert_int_equal(tether_heap_free(&h, live[slot].p), TETHER_OK);
            live[slot].p = NULL;
        } else {
            size_t n = 1 + (seed >> 16) % 3000;
            void *p;
            if (tether_heap_alloc(&h, n, &p) == TETHER_OK) {
                live[slot].p = p;
                live[slot].n = n;
                live[slot].tag = (uint8_t)(step | 1);
                memset(p, live[slot].tag, n);
            } else {
                assert_int_equal(tether_last_status(), TETHER_ERR_OUT_OF_MEMORY);
            }
        }
        if (step % 97 == 0) {
            assert_int_equal(tether_heap_check(&h), TETHER_OK);
        }
    }
    for (int i = 0; i < 64; i++) {
        if (live[i].p != NULL) {
            assert_int_equal(tether_heap_free(&h, live[i].p), TETHER_OK);
        }
    }
    assert_int_equal(tether_heap_check(&h), TETHER_OK);
    assert_int_equal(h.used, 0);
    assert_int_equal(tether_heap_largest_free(&h),
                     sizeof big - 32 /* one header */ + (sizeof(void *) == 4 ? 16 : 0));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stack_alloc_basic),
        cmocka_unit_test(stack_alloc_alignment_options),
        cmocka_unit_test(stack_alloc_misaligned_base),
        cmocka_unit_test(stack_alloc_overflow),
        cmocka_unit_test(stack_alloc_lifo_check),
        cmocka_unit_test(heap_basic_and_coalescing),
        cmocka_unit_test(heap_errors),
        cmocka_unit_test(heap_random_soak),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
