/*
 * A RAM-upload module whose function faults: integer division by zero, which the firmware traps
 * (CCR.DIV_0_TRP) as a UsageFault, and a store to an unmapped address (BusFault).
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

static const tether_func_entry entries[] = {
    {"div_i32", TETHER_ABI_UNPACKED, 3, {.unpacked = (tether_unpacked_func)div_i32}},
    {"poke", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)poke}},
};
const tether_func_registry tether_module_registry = {entries, 2};
