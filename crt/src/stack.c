/*
 * Stack painting and high-water measurement.
 * Invariant: only whole, aligned 32-bit words are painted and inspected.
 */
#include <stdint.h>

#include "tether/crt/stack.h"

static void word_range(const void *base, size_t size, uintptr_t *lo, uintptr_t *hi) {
    uintptr_t start = (uintptr_t)base;
    uintptr_t end = start + size;
    *lo = (start + 3u) & ~(uintptr_t)3u;
    *hi = end & ~(uintptr_t)3u;
    if (*hi < *lo) {
        *hi = *lo;
    }
}

void tether_stack_paint(void *base, size_t size) {
    uintptr_t lo, hi;
    word_range(base, size, &lo, &hi);
    for (volatile uint32_t *w = (volatile uint32_t *)lo; (uintptr_t)w < hi; w++) {
        *w = TETHER_STACK_PAINT;
    }
}

size_t tether_stack_used(const void *base, size_t size) {
    uintptr_t lo, hi;
    word_range(base, size, &lo, &hi);
    const volatile uint32_t *w = (const volatile uint32_t *)lo;
    while ((uintptr_t)w < hi && *w == TETHER_STACK_PAINT) {
        w++;
    }
    return (size_t)(hi - (uintptr_t)w);
}
