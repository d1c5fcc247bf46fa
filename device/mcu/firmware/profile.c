/*
 * The stack measurement of a profiling build (docs/profile.md): tether_mcu_profile_stack, which
 * the generated graph function of a board's profiling build calls after each node's kernel
 * (exports.def), returns the stack bytes used since the call started or since its last call
 * (measured from the SP at the call, as CALL's high-water mark is) and repaints what was used, so
 * the next node's figure is its own. The CALL being measured tells it where the stack is
 * (tether__mcu_profile_begin) and takes the most it saw (tether__mcu_profile_end), so the call's
 * high-water mark stays the whole call's although the nodes' use was repainted.
 *
 * What must stay true: outside a measured CALL (TIME, no painting) it does nothing and returns 0;
 * it repaints only below its own stack pointer (nothing live is there); only whole aligned words
 * are read and painted.
 */
#include <stdint.h>

#include "board.h"
#include "firmware.h"

#include "tether/crt/stack.h"

static const tether_mcu_callframe *profile_cf;
static uintptr_t profile_base;
static uint32_t profile_max;

void tether__mcu_profile_begin(const tether_mcu_callframe *cf, uintptr_t stack_base) {
    profile_cf = cf->paint_from ? cf : 0;
    profile_base = (stack_base + 3u) & ~(uintptr_t)3u;
    profile_max = 0;
}

uint32_t tether__mcu_profile_end(void) {
    profile_cf = 0;
    return profile_max;
}

uint32_t tether_mcu_profile_stack(void) {
    const tether_mcu_callframe *cf = profile_cf;
    if (!cf) {
        return 0;
    }
    uintptr_t sp = tether_board_stack_pointer(); /* the board's (Arm or RISC-V) reading */
    uint32_t *w = (uint32_t *)profile_base;
    uint32_t *end = (uint32_t *)(cf->sp_at_call & ~(uintptr_t)3u);
    while (w < end && *w == TETHER_STACK_PAINT) {
        w++;
    }
    uint32_t used = (uint32_t)((uintptr_t)end - (uintptr_t)w);
    for (uint32_t *q = w; (uintptr_t)q < (sp & ~(uintptr_t)3u); q++) {
        *q = TETHER_STACK_PAINT;
    }
    if (used > profile_max) {
        profile_max = used;
    }
    return used;
}
