/*
 * NS16550A UART driver (QEMU virt's UART0, many RISC-V SoCs): polled receive and transmit with
 * the 16-byte FIFOs on, the functions of firmware/board.h and tether__uart_init.
 * BOARD_UART_BASE (board_config.h) is the register base (byte registers, stride 1).
 *
 * What must stay true: receive is polled, so bytes wait in the UART's FIFO (and, under QEMU,
 * in the pty: QEMU hands the UART a byte only when its FIFO has room, so none is lost); a
 * receiver overrun (LSR.OE) is counted in `lost`. Transmit is polled, so it works in the trap
 * handler. tether_board_wait returns at once (no interrupt wakes the core).
 */
#include <stdint.h>

#include "board.h"
#include "board_config.h"

#define UART_REG(off) (*(volatile uint8_t *)(uintptr_t)(BOARD_UART_BASE + (off)))
#define UART_RBR      UART_REG(0u)
#define UART_THR      UART_REG(0u)
#define UART_IER      UART_REG(1u)
#define UART_FCR      UART_REG(2u)
#define UART_LCR      UART_REG(3u)
#define UART_LSR      UART_REG(5u)
#define LSR_DR        0x01u
#define LSR_OE        0x02u
#define LSR_THRE      0x20u

void tether__uart_init(void);

static uint32_t rx_lost;

int tether_board_uart_getc(void) {
    uint8_t lsr = UART_LSR;
    if (lsr & LSR_OE) {
        rx_lost++;
    }
    if ((lsr & LSR_DR) == 0) {
        return -1;
    }
    return UART_RBR;
}

uint32_t tether_board_uart_lost(void) {
    return rx_lost;
}

void tether_board_uart_write(const void *buf, size_t n) {
    const uint8_t *p = buf;
    for (size_t i = 0; i < n; i++) {
        while ((UART_LSR & LSR_THRE) == 0) {
        }
        UART_THR = p[i];
    }
}

void tether_board_wait(void) {}

/* 8N1, FIFOs on and cleared, no interrupts (QEMU ignores the divisor). */
void tether__uart_init(void) {
    UART_IER = 0;
    UART_LCR = 0x03;
    UART_FCR = 0x07;
}
