/*
 * MPS3 AN547 board support (Cortex-M55 with Helium, Secure state): the board info with its memory
 * pools, on the shared drivers (device/mcu/drivers: Cortex-M startup, SysTick cycle counter, CMSDK
 * UART0).
 *
 * What must stay true: the pools are the regions of link.ld, fastest first (pools[0] = the
 * heap); docs/boards.md lists the same numbers.
 *
 * The byte channel (drivers/channel.c) is CMSDK UART0, or semihosting's console when the host
 * selected it before the boot (docs/mcu.md).
 */
#include <stdint.h>

#include "board.h"
#include "drivers.h"

extern uint32_t __tether_psram_start[], __tether_psram_end[];
extern uint32_t __tether_code_pool_start[], __tether_code_pool_end[];

static tether_board_info info;
static tether_board_pool pools[3];

const tether_board_info *tether_board_get_info(void) {
    return &info;
}

void tether_board_init(void) {
    tether__board_info_init(&info);
    pools[0].name = "sram"; /* the 4 MiB SRAM at 0x21000000: the default pool */
    pools[0].base = info.heap_base;
    pools[0].size = info.heap_size;
    pools[1].name = "psram"; /* 16 MiB of the DDR at 0x60000000: large, slower on hardware */
    pools[1].base = (uintptr_t)__tether_psram_start;
    pools[1].size = (uint32_t)((uintptr_t)__tether_psram_end - (uintptr_t)__tether_psram_start);
    pools[2].name = "code"; /* the rest of the ITCM, the code memory: weights, as in flash */
    pools[2].base = (uintptr_t)__tether_code_pool_start;
    pools[2].size =
        (uint32_t)((uintptr_t)__tether_code_pool_end - (uintptr_t)__tether_code_pool_start);
    info.pools = pools;
    info.npools = 3;
    tether__systick_init();
    tether__channel_init();
    __asm volatile("cpsie i");
}
