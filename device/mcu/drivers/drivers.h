/*
 * The shared board drivers of device/mcu/drivers (Cortex-M startup and core support, SysTick,
 * the CMSDK UART, Arm semihosting's console, the byte channel that picks one of the two): what a
 * board folder's board.c calls from tether_board_init. A board picks
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
/* The board's own UART driver (microbit/uart.c, ns16550.c): 115200 8N1, RX interrupt into the
 * ring; it defines board.h's byte hooks (tether_board_uart_*, tether_board_wait) itself. */
void tether__uart_init(void);

/* channel.c: board.h's byte hooks for the CMSDK boards, over the CMSDK UART or, when the host
 * selected it before the boot (tether_mcu_channel_select, docs/mcu.md), over Arm semihosting's
 * console. Call instead of a UART init. */
void tether__channel_init(void);

/* cmsdk_uart.c: 115200 8N1, RX interrupt into a ring; the byte hooks as channel.c calls them. */
void tether__cmsdk_uart_init(void);
int tether__cmsdk_uart_getc(void);
void tether__cmsdk_uart_write(const void *buf, size_t n);
void tether__cmsdk_uart_wait(void);
uint32_t tether__cmsdk_uart_lost(void);
/* Reads the (unused) UART's DATA register: under QEMU, that wakes the main loop
 * (arm_semihost.c's kick). */
void tether__cmsdk_uart_kick(void);

/* arm_semihost.c: the console of Arm semihosting (SYS_READC, SYS_WRITE0, SYS_WRITEC), which
 * QEMU connects to a chardev (-semihosting-config chardev=ID). Only call it when a debugger or
 * emulator handles semihosting: without one, BKPT 0xAB is a fault. */
/* kick: called every 256 bytes read (see arm_semihost.c); may be NULL. */
void tether__semihost_init(void (*kick)(void));
int tether__semihost_getc(void);
void tether__semihost_write(const void *buf, size_t n);
void tether__semihost_wait(void);

#endif /* TETHER_MCU_DRIVERS_H */
