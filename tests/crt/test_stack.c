/* Unit tests: stack painting, and the high-water mark of calls of known stack depth run on a
 * dedicated stack (the mechanism tetherd uses for every CPU call), with and without the guard
 * pages that make a shallow call's measurement cheap on a large stack. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

/* The block-wise scan finds the deepest word wherever it sits relative to its 16-word blocks,
 * and repaint restores exactly the dirty top. */
static void scan_positions_and_repaint(void **state) {
    (void)state;
    static _Alignas(16) uint32_t w[1000];
    for (size_t k = 0; k < 1000; k++) {
        tether_stack_paint(w, sizeof w);
        w[k] = 0;
        assert_int_equal(tether_stack_used(w, sizeof w), (1000 - k) * 4);
    }
    tether_stack_paint(w, sizeof w);
    memset((uint8_t *)w + sizeof w - 300, 0, 300);
    size_t dirty = tether_stack_used(w, sizeof w);
    assert_int_equal(dirty, 300);
    w[10] = 0; /* below the dirty top: repaint must leave it alone */
    tether_stack_repaint(w, sizeof w, dirty);
    assert_int_equal(tether_stack_used(w, sizeof w), sizeof w - 40);
    tether_stack_repaint(w, sizeof w, sizeof w + 1); /* more than the region: all of it */
    assert_int_equal(tether_stack_used(w, sizeof w), 0);
    /* an unaligned dirty count rounds outwards to whole words */
    memset((uint8_t *)w + sizeof w - 7, 0, 7);
    tether_stack_repaint(w, sizeof w, 7);
    assert_int_equal(tether_stack_used(w, sizeof w), 0);
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
    const size_t depths[] = {1024, 8192, 65536, 1000, 5000};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        size_t used = 0;
        size_t depth = depths[i];
        assert_int_equal(tether_posix_call_on_stack(stack, size, call_with_depth, &depth, &used),
                         TETHER_OK);
        /* at least the array; at most the array plus the call overhead and ASan redzones */
        assert_true(used >= depth);
        assert_true(used <= depth + baseline + 4096);
        /* the chunked scan finds the very word the plain scan finds */
        assert_int_equal(used, tether_stack_used(stack, size));
    }
    free(stack);
}

/* A call stack kept painted between calls: deep, shallow, deep again measure what each call used
 * (the shallow call after the deep one proves the deep part was repainted), and a word written
 * below the dirty top between calls shows that only the dirty top is repainted. */
static void kept_call_stack(void **state) {
    (void)state;
    const size_t size = 256 * 1024;
    uint8_t *mem = aligned_alloc(64, size);
    assert_non_null(mem);
    tether_posix_call_stack cs;
    assert_int_equal(tether_posix_call_stack_init(&cs, mem, size), TETHER_OK);
    size_t used[4], depths[4] = {65536, 1024, 65536, 16};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(tether_posix_call_on(&cs, call_with_depth, &depths[i], &used[i]),
                         TETHER_OK);
        assert_true(used[i] >= depths[i]);
        assert_true(used[i] <= depths[i] + 8192);
        assert_int_equal(cs.dirty, used[i]);
    }
    assert_int_equal(used[0], used[2]); /* same call, same measurement */
    assert_true(used[1] < 8192);
    mem[1000] = 0; /* breaks the contract on purpose: nothing repaints it */
    size_t u;
    assert_int_equal(tether_posix_call_on(&cs, call_with_depth, &depths[3], &u), TETHER_OK);
    assert_int_equal(u, size - 1000 / 4 * 4);
    assert_int_equal(tether_posix_call_stack_init(&cs, mem + 8, size), TETHER_ERR_ALIGNMENT);
    free(mem);
    assert_int_equal(tether_posix_call_on(NULL, call_with_depth, NULL, NULL),
                     TETHER_ERR_INVALID_ARG);
}

/* Touches only the deepest byte of a `depth`-byte frame: a jump far below the last mark. */
static __attribute__((noinline)) void touch_bottom(size_t depth) {
    volatile uint8_t buf[depth];
    buf[0] = 1;
    (void)buf[0];
}

static void call_touch_bottom(void *arg) {
    touch_bottom(*(size_t *)arg);
}

static tether_posix_call_stack *g_guarded;
static int g_faults;

static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    if (tether_posix_call_stack_fault(g_guarded, si->si_addr)) {
        g_faults++;
        return;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* With a guard, every call measures what the same call measures without one: shallow calls
 * after deep ones, a deep call after shallow ones (one fault, then the guard moves), and a frame
 * that writes only its deepest byte far below the guard. Calls that stay above the guard fault
 * never. */
static void guarded_call_stack(void **state) {
    (void)state;
    const size_t size = 256 * 1024;
    uint8_t *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *plain = aligned_alloc(64, size);
    assert_true(mem != MAP_FAILED && plain);
    static uint8_t alt[64 * 1024];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigaction(SIGSEGV, &sa, &old);
    tether_posix_call_stack cs, ref;
    assert_int_equal(tether_posix_call_stack_init(&cs, mem, size), TETHER_OK);
    assert_int_equal(tether_posix_call_stack_guard(&cs, true), TETHER_OK);
    assert_int_equal(tether_posix_call_stack_init(&ref, plain, size), TETHER_OK);
    g_guarded = &cs;
    g_faults = 0;
    struct {
        void (*fn)(void *);
        size_t depth;
        int faults; /* faults expected by the time this call returned */
    } steps[] = {
        /* the first call guards below its mark; deeper calls fault once each; a call well
         * above the guard raises it again (so the next deep call faults again) */
        {call_with_depth, 16, 0},       {call_with_depth, 16, 0},   {call_with_depth, 65536, 1},
        {call_with_depth, 65536, 1},    {call_with_depth, 1024, 1}, {call_with_depth, 65536, 2},
        {call_touch_bottom, 200000, 3}, {call_with_depth, 16, 3},   {call_with_depth, 16, 3},
        {call_with_depth, 100000, 4},
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        size_t u = 0, r = 0;
        assert_int_equal(tether_posix_call_on(&cs, steps[i].fn, &steps[i].depth, &u), TETHER_OK);
        assert_int_equal(tether_posix_call_on(&ref, steps[i].fn, &steps[i].depth, &r), TETHER_OK);
        if (u != r) {
            fail_msg("step %zu (depth %zu): guarded %zu, plain %zu", i, steps[i].depth, u, r);
        }
        assert_true(u >= steps[i].depth);
        if (g_faults != steps[i].faults) {
            fail_msg("step %zu: %d faults, expected %d", i, g_faults, steps[i].faults);
        }
        assert_true(cs.guard <= size - u); /* never above what the call used */
    }
    assert_true(cs.guard > 0);
    /* an unaligned stack cannot be guarded */
    tether_posix_call_stack bad;
    assert_int_equal(tether_posix_call_stack_init(&bad, plain, size - 4096 + 16), TETHER_OK);
    assert_int_equal(tether_posix_call_stack_guard(&bad, true), TETHER_ERR_ALIGNMENT);
    assert_int_equal(tether_posix_call_stack_guard(&cs, false), TETHER_OK);
    mem[0] = 1; /* writable again */
    sigaction(SIGSEGV, &old, NULL);
    g_guarded = NULL;
    munmap(mem, size);
    free(plain);
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
        cmocka_unit_test(paint_and_measure),          cmocka_unit_test(scan_positions_and_repaint),
        cmocka_unit_test(dedicated_stack_high_water), cmocka_unit_test(kept_call_stack),
        cmocka_unit_test(dedicated_stack_errors),     cmocka_unit_test(guarded_call_stack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
