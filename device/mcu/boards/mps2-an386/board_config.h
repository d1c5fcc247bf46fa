/*
 * Board configuration of the Arm MPS2 AN386 (QEMU -M mps2-an386, Cortex-M4 with FPv4-SP) for the
 * shared drivers (device/mcu/drivers): CMSDK UART0, interrupt count, RAM range. The identity (name,
 * core, features, clock, compiler flags) is the board table's (device/mcu/boards/boards.txt).
 */
#ifndef TETHER_BOARD_CONFIG_H
#define TETHER_BOARD_CONFIG_H

#define BOARD_UART_BASE         0x40004000u /* CMSDK APB UART0 */
#define BOARD_UART_RX_IRQ       0 /* UART0 RX (QEMU hw/arm/mps2.c, AN386 application note) */
#define BOARD_NUM_IRQS          32
#define BOARD_RAM_LO            0x20000000u /* ZBT SSRAM2/3: a fault frame is trusted only in here */
#define BOARD_RAM_HI            0x20400000u
#define BOARD_STACK_GUARD_BELOW 1 /* MPU no-access 16 MiB below the stack (link.ld) */

#endif /* TETHER_BOARD_CONFIG_H */
