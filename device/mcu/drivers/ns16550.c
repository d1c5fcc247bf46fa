/*
 * NS16550A UART driver (QEMU virt's UART0, many RISC-V SoCs): polled receive and transmit with
 * the 16-byte FIFOs on, the functions of firmware/board.h and tether__uart_init.
 * BOARD_UART_BASE (board_config.h) is the register base (byte registers, stride 1); with
 * BOARD_PLIC_BASE and BOARD_UART_IRQ the receive interrupt goes through the PLIC (context 0)
 * and tether_board_wait sleeps in WFI until the UART has something.
 *
 * What must stay true: receive is polled, so bytes wait in the UART's FIFO (and, under QEMU,
 * in the pty or socket: QEMU hands the UART bytes only while its FIFO has room, so none is
 * lost); a receiver overrun (LSR.OE) is counted in `lost`. Transmit is polled, so it works in
 * the trap handler. The receive interrupt never traps: tether_board_wait enables it in mie only
 * with mstatus.MIE off and disables it again before MIE is restored (without a PLIC it returns
 * at once). The receive trigger is 14 bytes: under QEMU (docs/rpc.md) the UART then takes up
 * to 14 bytes per main-loop round.
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

#ifdef BOARD_PLIC_BASE
#define PLIC_REG(off)    (*(volatile uint32_t *)(uintptr_t)(BOARD_PLIC_BASE + (off)))
#define PLIC_PRIORITY(n) PLIC_REG(4u * (n))
#define PLIC_ENABLE_CTX0 PLIC_REG(0x2000u)
#define PLIC_THRESH_CTX0 PLIC_REG(0x200000u)
#define PLIC_CLAIM_CTX0  PLIC_REG(0x200004u)
#define MIE_MEIE         0x800u
#endif

/* Sleeps until the UART has received something: WFI with the UART's interrupt enabled in mie
 * but mstatus.MIE off for the moment, so the pending interrupt wakes the core and no trap is
 * taken; then the PLIC's claim is completed. Polling LSR instead kept QEMU's vCPU in the
 * device's lock, which the main loop needs to hand the UART the next bytes. */
void tether_board_wait(void) {
#ifdef BOARD_PLIC_BASE
    uint32_t status;
    __asm volatile(".option push\n.option arch, +zicsr\ncsrrci %0, mstatus, 8\n.option pop"
                   : "=r"(status)::"memory");
    __asm volatile(".option push\n.option arch, +zicsr\ncsrs mie, %0\n.option pop" ::"r"(MIE_MEIE)
                   : "memory");
    if ((UART_LSR & LSR_DR) == 0) {
        __asm volatile("wfi" ::: "memory");
    }
    __asm volatile(".option push\n.option arch, +zicsr\ncsrc mie, %0\n.option pop" ::"r"(MIE_MEIE)
                   : "memory");
    uint32_t id = PLIC_CLAIM_CTX0;
    if (id != 0) {
        PLIC_CLAIM_CTX0 = id;
    }
    __asm volatile(
        ".option push\n.option arch, +zicsr\ncsrs mstatus, %0\n.option pop" ::"r"(status & 8u)
        : "memory");
#endif
}

/* 8N1 at the fastest divisor (QEMU times the FIFO's character timeout by it), FIFOs on and
 * cleared with the receive trigger at 14 bytes (QEMU then hands the UART up to 14 bytes per
 * main-loop round, 1 at level 1), the receive interrupt routed to the PLIC for the WFI above. */
void tether__uart_init(void) {
    UART_IER = 0;
    UART_LCR = 0x83; /* DLAB: the divisor latch */
    UART_REG(0u) = 1u;
    UART_REG(1u) = 0u;
    UART_LCR = 0x03;
    UART_FCR = 0xC7;
#ifdef BOARD_PLIC_BASE
    PLIC_PRIORITY(BOARD_UART_IRQ) = 1u;
    PLIC_ENABLE_CTX0 |= 1u << BOARD_UART_IRQ;
    PLIC_THRESH_CTX0 = 0u;
    UART_IER = 0x01; /* received data available / character timeout */
#endif
}
