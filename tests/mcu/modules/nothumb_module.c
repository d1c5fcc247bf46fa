/*
 * A broken RAM-upload module: its registry entry points at machine code through a data symbol,
 * so the address lacks the Thumb bit (as with a raw label or a hand-written table). The device
 * must refuse to load it, never jump there (a BX to an even address faults with INVSTATE).
 */
#include <stdint.h>

#include "tether/crt.h"

/* movs r0, #0; bx lr */
static const uint16_t raw_code[2] __attribute__((aligned(4))) = {0x2000, 0x4770};

static const tether_func_entry entries[] = {
    {"raw", TETHER_ABI_UNPACKED, 0, {.unpacked = (tether_unpacked_func)(uintptr_t)raw_code}},
};
const tether_func_registry tether_module_registry = {entries, 1};
