/*
 * The byte channel of the CMSDK boards (MPS2, MPS3): board.h's byte hooks
 * (tether_board_uart_write/_getc/_lost, tether_board_wait) over the CMSDK UART
 * (cmsdk_uart.c), or over Arm semihosting's console (arm_semihost.c) when the host selected
 * it for this boot: the UART is the default and what a board with only a UART has.
 *
 * The selection: tether_mcu_channel_select, two words in the NOINIT region (neither loaded nor
 * zeroed), holds {TETHER_CHANNEL_MAGIC, 1} when whoever starts the board wrote it before the
 * core ran: scripts/qemu-board --semihost-serial does with QEMU's generic loader
 * (-device loader,addr=ADDR,data=...,data-len=8; ADDR is "channel_select" in firmware.json), a
 * debug probe could with a memory write after a reset halt. QEMU's loader writes it again on
 * every system reset (tether_board_reset's SYSRESETREQ included).
 *
 * What must stay true:
 * - Semihosting is used only when the selection word holds the magic and channel 1; anything
 *   else (random RAM after power-up, a cleared word) is the UART.
 * - The word is cleared once read, so a warm reset that nobody selected again (a real board)
 *   comes back on the UART.
 * - On the semihosting channel the UART is never set up (its DATA register is only read, as
 *   the driver's kick that wakes QEMU's main loop) and nothing is lost (the console's FIFO is
 *   QEMU's; it takes from the chardev only what it has room for).
 */
#include <stdint.h>

#include "board.h"
#include "drivers.h"

#define TETHER_CHANNEL_MAGIC    0x53487E7Bu
#define TETHER_CHANNEL_SEMIHOST 1u

/* Written by the host before the boot (see above); a global symbol, so the firmware build can
 * list its address in firmware.json (cross/gen_module_ld.cmake). */
volatile uint32_t tether_mcu_channel_select[2] __attribute__((section(".tether_noinit"), used));

static int semihost;

void tether__channel_init(void) {
    semihost = tether_mcu_channel_select[0] == TETHER_CHANNEL_MAGIC &&
               tether_mcu_channel_select[1] == TETHER_CHANNEL_SEMIHOST;
    tether_mcu_channel_select[0] = 0;
    tether_mcu_channel_select[1] = 0;
    if (semihost) {
        tether__semihost_init(tether__cmsdk_uart_kick);
    } else {
        tether__cmsdk_uart_init();
    }
}

void tether_board_uart_write(const void *buf, size_t n) {
    if (semihost) {
        tether__semihost_write(buf, n);
    } else {
        tether__cmsdk_uart_write(buf, n);
    }
}

int tether_board_uart_getc(void) {
    return semihost ? tether__semihost_getc() : tether__cmsdk_uart_getc();
}

void tether_board_wait(void) {
    if (semihost) {
        tether__semihost_wait();
    } else {
        tether__cmsdk_uart_wait();
    }
}

uint32_t tether_board_uart_lost(void) {
    return semihost ? 0u : tether__cmsdk_uart_lost();
}
