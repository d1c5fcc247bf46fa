/*
 * micro:bit board support (nRF51822, Cortex-M0, 16 KiB RAM): the board info with its one pool,
 * on the shared drivers (device/mcu/drivers: Cortex-M startup, SysTick) and the board's nRF51
 * UART driver (uart.c).
 *
 * What must stay true: the pool is the heap region of link.ld (the flash cannot take uploads,
 * so there is no code pool); docs/boards.md lists the same numbers.
 */
#include <stdint.h>

#include "board.h"
#include "drivers.h"

static tether_board_info info;
static tether_board_pool pools[1];

const tether_board_info *tether_board_get_info(void) {
    return &info;
}

void tether_board_init(void) {
    tether__board_info_init(&info);
    pools[0].name = "sram";
    pools[0].base = info.heap_base;
    pools[0].size = info.heap_size;
    info.pools = pools;
    info.npools = 1;
    tether__systick_init();
    tether__uart_init();
    __asm volatile("cpsie i");
}
