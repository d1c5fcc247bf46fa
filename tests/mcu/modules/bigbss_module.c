/*
 * A RAM-upload module whose .bss (200 KiB) cannot fit the 128 KiB load region: the upload itself
 * is small, so only the header check at LOAD_MODULE can catch it.
 */
#include <stdint.h>

#include "tether/crt.h"

static uint8_t big[200 * 1024];

static int32_t touch(uint8_t *out) {
    big[out[0] % sizeof big] = 1; /* written, so the array cannot be optimised away */
    out[0] = big[sizeof big - 1];
    return 0;
}

static const tether_func_entry entries[] = {
    {"touch", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)touch}},
};
const tether_func_registry tether_module_registry = {entries, 1};
