/*
 * Arm CMSDK APB UART driver (the UART of the MPS2/MPS3 FPGA images): interrupt-driven receive
 * into a ring, polled transmit. The board's board_config.h gives BOARD_UART_BASE,
 * BOARD_UART_RX_IRQ and BOARD_SYSCLK_HZ; its vector table routes BOARD_UART_RX_IRQ to
 * tether_uart_rx_handler (cortex_m_startup.c does). The firmware reaches it through the byte
 * channel (channel.c), which picks this UART or semihosting's console at boot.
 *
 * What must stay true:
 * - No received byte is dropped silently: the RX interrupt moves each byte from the one-byte
 *   holding register into a 512-byte ring; a full ring or a UART overrun increments `lost`,
 *   which the firmware reports (HELLO and error replies).
 * - The interrupt flag is cleared BEFORE the holding register is read (see rx_take), and only
 *   the interrupt touches the receive registers (three accesses per byte).
 * - Transmit is polled, so it works from fault handlers with interrupts masked.
 */
#include <stdint.h>

#include "board.h"
#include "board_config.h"
#include "cortex_m.h"
#include "drivers.h"

#define UART_DATA         REG32(BOARD_UART_BASE + 0x00u)
#define UART_STATE        REG32(BOARD_UART_BASE + 0x04u)
#define UART_CTRL         REG32(BOARD_UART_BASE + 0x08u)
#define UART_INTSTATUS    REG32(BOARD_UART_BASE + 0x0Cu) /* write 1 to clear (INTCLEAR) */
#define UART_BAUDDIV      REG32(BOARD_UART_BASE + 0x10u)
#define UART_STATE_TXFULL (1u << 0)
#define UART_STATE_RXFULL (1u << 1)
#define UART_STATE_RXOVR  (1u << 3)
#define UART_CTRL_TXEN    (1u << 0)
#define UART_CTRL_RXEN    (1u << 1)
#define UART_CTRL_RXINTEN (1u << 3)
#define UART_INT_RX       (1u << 1)
#define UART_INT_RXOVR    (1u << 3)
#define UART_BAUD         115200u

void tether_uart_rx_handler(void);

#define RX_RING_SIZE 512u /* power of two */
static volatile uint8_t rx_ring[RX_RING_SIZE];
static volatile uint32_t rx_head; /* written by the ISR */
static volatile uint32_t rx_tail; /* written by the reader */
static volatile uint32_t rx_lost;

/* The RX interrupt: takes the byte in the holding register into the ring. The interrupt flag is
 * cleared BEFORE the register is read: a byte that arrives after the read sets the flag again,
 * so no byte can be left in RXFULL without a pending interrupt (QEMU delivers the next byte only
 * once RXFULL is clear, so such a byte would stall the link). The register holds one byte, so
 * one read of DATA empties it; the next byte is the next interrupt.
 *
 * Three register accesses per byte (clear, STATE, DATA) and none outside the interrupt: under
 * QEMU every device register access takes the emulator's global lock, which the thread that
 * delivers the host's bytes (one per main-loop round) needs too, so each access the guest makes
 * per byte lengthens that round (docs/rpc.md, "Flow control"). */
static void rx_take(void) {
    UART_INTSTATUS = UART_INT_RX | UART_INT_RXOVR;
    uint32_t state = UART_STATE;
    if (state & UART_STATE_RXFULL) {
        uint8_t b = (uint8_t)UART_DATA;
        uint32_t head = rx_head;
        if (head - rx_tail < RX_RING_SIZE) {
            rx_ring[head & (RX_RING_SIZE - 1u)] = b;
            rx_head = head + 1u;
        } else {
            rx_lost++;
        }
    }
    if (state & UART_STATE_RXOVR) {
        UART_STATE = UART_STATE_RXOVR; /* write 1 to clear */
        rx_lost++;
    }
}

void tether_uart_rx_handler(void) {
    rx_take();
}

/* The ring alone: every byte reaches it through the interrupt (above). */
int tether__cmsdk_uart_getc(void) {
    uint32_t tail = rx_tail;
    if (tail == rx_head) {
        return -1;
    }
    int b = rx_ring[tail & (RX_RING_SIZE - 1u)];
    rx_tail = tail + 1u;
    return b;
}

uint32_t tether__cmsdk_uart_lost(void) {
    return rx_lost;
}

void tether__cmsdk_uart_write(const void *buf, size_t n) {
    const uint8_t *p = buf;
    for (size_t i = 0; i < n; i++) {
        while (UART_STATE & UART_STATE_TXFULL) {
        }
        UART_DATA = p[i];
    }
}

void tether__cmsdk_uart_wait(void) {
    /* Sleep until the next interrupt (UART RX or the SysTick wrap). Interrupts are masked while
     * checking, so a byte that arrives between the check and the WFI still wakes the core (WFI
     * returns on a pending interrupt even with PRIMASK set); it is handled after cpsie. */
    __asm volatile("cpsid i" ::: "memory");
    if (rx_tail == rx_head) {
        __asm volatile("wfi" ::: "memory");
    }
    __asm volatile("cpsie i" ::: "memory");
}

/* The semihosting channel's kick (arm_semihost.c): QEMU's model calls qemu_chr_fe_accept_input
 * on every read of DATA, which wakes QEMU's main loop. Only called when the UART is unused. */
void tether__cmsdk_uart_kick(void) {
    (void)UART_DATA;
}

/* 115200 8N1 (QEMU ignores the rate), RX interrupt into the ring, at priority 0x40. */
void tether__cmsdk_uart_init(void) {
    UART_BAUDDIV = BOARD_SYSCLK_HZ / UART_BAUD;
    UART_CTRL = UART_CTRL_TXEN | UART_CTRL_RXEN | UART_CTRL_RXINTEN;
    uint32_t irq = BOARD_UART_RX_IRQ;
    uint32_t shift = 8u * (irq % 4u);
    NVIC_IPR(irq) = (NVIC_IPR(irq) & ~(0xFFu << shift)) | (0x40u << shift);
    NVIC_ISER(irq / 32u) = 1u << (irq % 32u);
}
