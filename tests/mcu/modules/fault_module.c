/*
 * A RAM-upload module whose function faults: integer division by zero, which the firmware traps
 * (CCR.DIV_0_TRP) as a UsageFault, a store to an unmapped address (BusFault), and unbounded
 * recursion that runs into the MPU guard at the bottom of the stack (MemManage).
 */
#include <stdint.h>

#include "tether/crt.h"

static int32_t div_i32(const int32_t *a, const int32_t *b, int32_t *out) {
    *out = *a / *b;
    return 0;
}

static int32_t poke(int32_t *addr_holder) {
    volatile uint32_t *p = (volatile uint32_t *)(uintptr_t)(uint32_t)addr_holder[0];
    *p = 0xDEADBEEFu;
    return 0;
}

/* Recursion without end: each level keeps a 64-byte buffer live across the call. */
static int32_t deep(volatile uint8_t *up, int32_t n) {
    volatile uint8_t buf[64];
    buf[0] = (uint8_t)n;
    buf[63] = up[0];
    if (n == 0) {
        return buf[63];
    }
    return deep(buf, n - 1) + buf[0];
}

static int32_t recurse(int32_t *n) {
    return deep((volatile uint8_t *)n, n[0]);
}

static const tether_func_entry entries[] = {
    {"div_i32", TETHER_ABI_UNPACKED, 3, {.unpacked = (tether_unpacked_func)div_i32}},
    {"poke", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)poke}},
    {"recurse", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)recurse}},
};
const tether_func_registry tether_module_registry = {entries, 3};
