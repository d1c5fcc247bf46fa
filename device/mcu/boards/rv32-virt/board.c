/*
 * QEMU RISC-V virt (RV32) board support: the board info with its memory pools, on the shared
 * RISC-V drivers (device/mcu/drivers: riscv_startup.c, riscv_mtime.c, ns16550.c).
 *
 * What must stay true: the pools are the regions of link.ld, fastest first (pools[0] = the
 * heap); docs/boards.md lists the same numbers.
 */
#include <stdint.h>

#include "board.h"
#include "drivers.h"

extern uint32_t __tether_psram_start[], __tether_psram_end[];

static tether_board_info info;
static tether_board_pool pools[2];

const tether_board_info *tether_board_get_info(void) {
    return &info;
}

void tether_board_init(void) {
    tether__board_info_init(&info);
    pools[0].name = "sram";
    pools[0].base = info.heap_base;
    pools[0].size = info.heap_size;
    pools[1].name = "psram"; /* 16 MiB further up the RAM, as a large slow memory would be */
    pools[1].base = (uintptr_t)__tether_psram_start;
    pools[1].size = (uint32_t)((uintptr_t)__tether_psram_end - (uintptr_t)__tether_psram_start);
    info.pools = pools;
    info.npools = 2;
    tether__systick_init();
    tether__uart_init();
}
