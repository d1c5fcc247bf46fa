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

/* The stack is the caller's memory, not this translation unit's: plain (non-volatile) accesses
 * are enough, since the compiler cannot know its contents across the call that used it, and let
 * the loops run at memory speed (the stack of a tetherd call is 256 KiB by default). Eight
 * words per iteration (the compiler turns them into wide stores where it can); no library call,
 * so painting touches no stack below its own frame (the MCU paints up to a small gap below it). */
static void paint_words(uint32_t *w, uint32_t *end) {
    const uint32_t p = TETHER_STACK_PAINT;
    while (end - w >= 8) {
        w[0] = p, w[1] = p, w[2] = p, w[3] = p, w[4] = p, w[5] = p, w[6] = p, w[7] = p;
        w += 8;
    }
    while (w < end) {
        *w++ = p;
    }
}

void tether_stack_paint(void *base, size_t size) {
    uintptr_t lo, hi;
    word_range(base, size, &lo, &hi);
    paint_words((uint32_t *)lo, (uint32_t *)hi);
}

void tether_stack_repaint(void *base, size_t size, size_t dirty) {
    uintptr_t lo, hi;
    word_range(base, size, &lo, &hi);
    uintptr_t from = dirty >= hi - lo ? lo : (hi - dirty) & ~(uintptr_t)3u;
    paint_words((uint32_t *)from, (uint32_t *)hi);
}

size_t tether_stack_used(const void *base, size_t size) {
    uintptr_t lo, hi;
    word_range(base, size, &lo, &hi);
    const uint32_t *w = (const uint32_t *)lo, *end = (const uint32_t *)hi;
    /* 16 words at a time while they all hold the pattern, then word by word */
    while (end - w >= 16) {
        uint32_t diff = 0;
        for (int i = 0; i < 16; i++) {
            diff |= w[i] ^ TETHER_STACK_PAINT;
        }
        if (diff != 0) {
            break;
        }
        w += 16;
    }
    while (w < end && *w == TETHER_STACK_PAINT) {
        w++;
    }
    return (size_t)((uintptr_t)end - (uintptr_t)w);
}
