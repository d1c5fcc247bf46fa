/*
 * The shared board drivers of device/mcu/drivers (Cortex-M startup and core support, SysTick,
 * the CMSDK UART): what a board folder's board.c calls from tether_board_init. A board picks
 * the drivers it needs in its board.cmake (TETHER_BOARD_DRIVERS) and configures them with its
 * board_config.h; the firmware (device/mcu/firmware) only sees firmware/board.h.
 */
#ifndef TETHER_MCU_DRIVERS_H
#define TETHER_MCU_DRIVERS_H

#include "board.h"

/* cortex_m_startup.c: boot counter, identity from the board table, regions from link.ld, the
 * stack guard (stack_base/size exclude the guard). Call first. */
void tether__board_info_init(tether_board_info *info);
/* systick.c: the 64-bit cycle counter on the processor clock. */
void tether__systick_init(void);
/* cmsdk_uart.c (or the board's UART driver): 115200 8N1, RX interrupt into the ring. */
void tether__uart_init(void);

#endif /* TETHER_MCU_DRIVERS_H */
