/*
 * Board configuration of QEMU's RISC-V virt machine in its 32-bit form (qemu-system-riscv32 -M
 * virt -bios none: an RV32GC hart in machine mode; the firmware is built for RV32IMAC) for the
 * shared RISC-V drivers (device/mcu/drivers: riscv_startup.c, riscv_mtime.c, ns16550.c). The
 * identity (name, core, features, clock, compiler flags) is the board table's
 * (device/mcu/boards/boards.txt).
 */
#ifndef TETHER_BOARD_CONFIG_H
#define TETHER_BOARD_CONFIG_H

#define BOARD_UART_BASE   0x10000000u /* NS16550A UART0 */
#define BOARD_MTIME_ADDR  0x0200BFF8u /* CLINT mtime, 10 MHz */
#define BOARD_RESET_ADDR  0x00100000u /* the test device: 0x7777 resets the machine */
#define BOARD_RESET_VALUE 0x7777u
#define BOARD_RAM_LO      0x80000000u
#define BOARD_RAM_HI      0x88000000u
#define BOARD_PLIC_BASE   0x0C000000u /* the PLIC (context 0: hart 0, machine mode) */
#define BOARD_UART_IRQ    10u         /* UART0's PLIC source */

#endif /* TETHER_BOARD_CONFIG_H */
