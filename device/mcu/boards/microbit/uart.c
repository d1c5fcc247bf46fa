/*
 * nRF51 UART driver of the micro:bit: interrupt-driven receive into a ring, polled transmit,
 * the functions of firmware/board.h (tether_board_uart_write/_getc/_lost, tether_board_wait)
 * and tether__uart_init.
 *
 * What must stay true:
 * - No received byte is dropped silently: the RXDRDY interrupt moves every byte of the UART's
 *   receive FIFO into the ring; a full ring increments `lost`, which the firmware reports.
 * - The RXDRDY event is cleared BEFORE RXD is read: reading RXD sets the event again while
 *   bytes remain, so none is left behind without a pending interrupt.
 * - Transmit is polled (TXDRDY), so it works from fault handlers with interrupts masked.
 */
#include <stdint.h>

#include "board.h"
#include "board_config.h"
#include "cortex_m.h"

#define UART_STARTRX       REG32(BOARD_UART_BASE + 0x000u)
#define UART_STARTTX       REG32(BOARD_UART_BASE + 0x008u)
#define UART_EVENTS_RXDRDY REG32(BOARD_UART_BASE + 0x108u)
#define UART_EVENTS_TXDRDY REG32(BOARD_UART_BASE + 0x11Cu)
#define UART_INTENSET      REG32(BOARD_UART_BASE + 0x304u)
#define UART_ENABLE        REG32(BOARD_UART_BASE + 0x500u)
#define UART_PSELTXD       REG32(BOARD_UART_BASE + 0x50Cu)
#define UART_PSELRXD       REG32(BOARD_UART_BASE + 0x514u)
#define UART_RXD           REG32(BOARD_UART_BASE + 0x518u)
#define UART_TXD           REG32(BOARD_UART_BASE + 0x51Cu)
#define UART_BAUDRATE      REG32(BOARD_UART_BASE + 0x524u)
#define UART_INT_RXDRDY    (1u << 2)
#define UART_ENABLED       4u
#define UART_BAUD_115200   0x01D7E000u
#define PIN_TX             24u /* the micro:bit's USB serial pins */
#define PIN_RX             25u

void tether_uart_rx_handler(void);
void tether__uart_init(void);

#define RX_RING_SIZE 128u /* power of two: the next chunk waits here while one is handled */
static volatile uint8_t rx_ring[RX_RING_SIZE];
static volatile uint32_t rx_head; /* written by the ISR */
static volatile uint32_t rx_tail; /* written by the reader */
static volatile uint32_t rx_lost;

static void rx_drain(void) {
    while (UART_EVENTS_RXDRDY) {
        UART_EVENTS_RXDRDY = 0; /* before the read: the read sets it again while bytes remain */
        uint8_t b = (uint8_t)UART_RXD;
        uint32_t head = rx_head;
        if (head - rx_tail < RX_RING_SIZE) {
            rx_ring[head & (RX_RING_SIZE - 1u)] = b;
            rx_head = head + 1u;
        } else {
            rx_lost++;
        }
    }
}

void tether_uart_rx_handler(void) {
    rx_drain();
}

int tether_board_uart_getc(void) {
    uint32_t tail = rx_tail;
    if (tail == rx_head) {
        __asm volatile("cpsid i" ::: "memory");
        rx_drain();
        __asm volatile("cpsie i" ::: "memory");
        if (tail == rx_head) {
            return -1;
        }
    }
    int b = rx_ring[tail & (RX_RING_SIZE - 1u)];
    rx_tail = tail + 1u;
    return b;
}

uint32_t tether_board_uart_lost(void) {
    return rx_lost;
}

void tether_board_uart_write(const void *buf, size_t n) {
    const uint8_t *p = buf;
    for (size_t i = 0; i < n; i++) {
        UART_EVENTS_TXDRDY = 0;
        UART_TXD = p[i];
        while (UART_EVENTS_TXDRDY == 0) {
        }
    }
}

void tether_board_wait(void) {
    __asm volatile("cpsid i" ::: "memory");
    if (rx_tail == rx_head && UART_EVENTS_RXDRDY == 0) {
        __asm volatile("wfi" ::: "memory");
    }
    __asm volatile("cpsie i" ::: "memory");
}

/* 115200 8N1 on the USB serial pins, RXDRDY interrupt into the ring. */
void tether__uart_init(void) {
    UART_PSELTXD = PIN_TX;
    UART_PSELRXD = PIN_RX;
    UART_BAUDRATE = UART_BAUD_115200;
    UART_ENABLE = UART_ENABLED;
    UART_STARTTX = 1;
    UART_STARTRX = 1;
    UART_INTENSET = UART_INT_RXDRDY;
    uint32_t irq = BOARD_UART_RX_IRQ;
    uint32_t shift = 8u * (irq % 4u);
    NVIC_IPR(irq) = (NVIC_IPR(irq) & ~(0xFFu << shift)) | (0x40u << shift);
    NVIC_ISER(0) = 1u << irq;
}
