/*
 * Board configuration of the BBC micro:bit v1 (QEMU -M microbit: nRF51822, Cortex-M0, 256 KiB
 * flash, 16 KiB RAM) for the shared drivers (device/mcu/drivers) and its own UART driver
 * (uart.c). The identity (name, core, features, clock, compiler flags) is the board table's
 * (device/mcu/boards/boards.txt).
 */
#ifndef TETHER_BOARD_CONFIG_H
#define TETHER_BOARD_CONFIG_H

#define BOARD_UART_BASE         0x40002000u /* nRF51 UART0 */
#define BOARD_UART_RX_IRQ       2           /* UART0 (RX ready, the only event enabled) */
#define BOARD_NUM_IRQS          32
#define BOARD_RAM_LO            0x20000000u /* the 16 KiB RAM: a fault frame is trusted only here */
#define BOARD_RAM_HI            0x20004000u
#define BOARD_FAULT_STACK_WORDS 96u /* 384 bytes: the fault report runs on little RAM */

#endif /* TETHER_BOARD_CONFIG_H */
