/*
 * Board configuration of the Arm MPS2 AN505 (QEMU -M mps2-an505, Cortex-M33 in the IoT Kit
 * subsystem) for the shared drivers (device/mcu/drivers). The firmware runs in the Secure state
 * (the core resets there, the SAU is off) and uses the Secure aliases of memory and
 * peripherals: code at 0x10000000 (the reset vector table, init-svtor), RAM at 0x38000000
 * (ZBT SSRAM1/2), CMSDK UART0 at 0x50200000. The identity (name, core, features, clock,
 * compiler flags) is the board table's (device/mcu/boards/boards.txt).
 */
#ifndef TETHER_BOARD_CONFIG_H
#define TETHER_BOARD_CONFIG_H

#define BOARD_UART_BASE   0x50200000u /* CMSDK APB UART0, Secure alias of 0x40200000 */
#define BOARD_UART_RX_IRQ 32          /* UART0 RX (QEMU 7.2 raises RX on IRQ 32, combined 42) */
#define BOARD_NUM_IRQS    124         /* 32 IoT Kit interrupts + 92 of the FPGA image */
#define BOARD_RAM_LO      0x38000000u /* ZBT SSRAM1/2: a fault frame is trusted only in here */
#define BOARD_RAM_HI      0x38400000u

#endif /* TETHER_BOARD_CONFIG_H */
