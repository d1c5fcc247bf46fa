/*
 * Board configuration of the Arm MPS3 AN547 (QEMU -M mps3-an547, Cortex-M55 with Helium in the
 * SSE-300 subsystem) for the shared drivers (device/mcu/drivers). The firmware runs in the
 * Secure state (the core resets there, the SAU is off): code in the ITCM at 0x00000000 (the
 * reset vector table, init-svtor 0), RAM in the 4 MiB SRAM at 0x21000000, CMSDK UART0 at its
 * Secure alias 0x59303000. The identity (name, core, features, clock, compiler flags) is the
 * board table's (device/mcu/boards/boards.txt).
 */
#ifndef TETHER_BOARD_CONFIG_H
#define TETHER_BOARD_CONFIG_H

#define BOARD_UART_BASE   0x59303000u /* CMSDK APB UART0, Secure alias of 0x49303000 */
#define BOARD_UART_RX_IRQ 33          /* UART0 RX (QEMU 7.2 raises RX on IRQ 33, combined 43) */
#define BOARD_NUM_IRQS    128         /* 32 SSE-300 interrupts + 96 of the FPGA image */
#define BOARD_RAM_LO      0x21000000u /* SRAM: a fault frame is trusted only in here */
#define BOARD_RAM_HI      0x21400000u

#endif /* TETHER_BOARD_CONFIG_H */
