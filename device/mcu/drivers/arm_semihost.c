/*
 * The firmware's byte channel over Arm semihosting's console: on QEMU
 * (-semihosting-config enable=on,target=native,chardev=ID; scripts/qemu-board
 * --semihost-serial) the console is a chardev, here a TCP socket the host's tcp-serial://
 * transport talks to. It exists because the CMSDK UART model takes one received byte per QEMU
 * main-loop round (about 50 us, docs/rpc.md): QEMU's console instead takes up to 1 KiB from
 * the socket at once into its input FIFO, and each SYS_READC then returns the next byte of it
 * without a main-loop round.
 *
 * The calls (QEMU 7.2, semihosting/arm-compat-semi.c): SYS_READC returns one byte of the
 * console FIFO and, when it is empty, halts the core until the chardev delivers more (the BKPT
 * is executed again then, so an interrupt in between is taken and the read resumes after it);
 * SYS_WRITE0 writes a NUL-terminated string in one chardev write; SYS_WRITEC writes one byte.
 * SYS_READ/SYS_WRITE on ":tt" are not used: QEMU 7.2 connects those to its own stdin/stdout,
 * not to the chardev.
 *
 * What must stay true:
 * - Nothing is called unless the host asked for this channel (channel.c): without a debugger
 *   or emulator that handles semihosting, BKPT 0xAB is a fault.
 * - Bytes go out in order and unchanged: the runs between zero bytes as SYS_WRITE0 strings,
 *   each zero byte as one SYS_WRITEC; every write is out before tether__semihost_write returns
 *   (nothing is buffered, so the fault path's last report is never left behind).
 * - tether__semihost_getc never blocks; tether__semihost_wait blocks until a byte is there.
 */
#include <stddef.h>
#include <stdint.h>

#include "drivers.h"

#define SYS_WRITEC 0x03u
#define SYS_WRITE0 0x04u
#define SYS_READC  0x07u

/* One semihosting call: op in r0, its argument (a pointer) in r1, the result in r0. */
static uint32_t semihost_call(uint32_t op, const void *arg) {
    register uint32_t r0 __asm("r0") = op;
    register const void *r1 __asm("r1") = arg;
    __asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

/* SYS_READC. QEMU stores the byte at SP - 1 and returns it in r0, but QEMU 7.2 (Debian's
 * 7.2.22 measured) reads r0's value from SP - 1 BEFORE it stores the byte there, so r0 holds
 * the byte that was at SP - 1 (fixed upstream in late 2022, "semihosting: Fix lock/unlock
 * ordering"); a debug probe returns it in r0 alone. So SP - 1 is filled with a mark first and
 * read back after: a changed byte is the one read; an unchanged one means the byte read is the
 * mark itself or r0 is right (a probe); either way r0 is then the byte.
 *
 * An interrupt taken while the call waits (SysTick) must not overwrite SP - 1 before it is read:
 * the call runs with SP = 4 (mod 8), where the exception entry (CCR.STKALIGN, which QEMU sets
 * and v8-M requires) leaves the word below SP as alignment padding and pushes its frame under
 * it. The interrupts stay enabled, so a halted core waits without spinning. */
#define READC_MARK 0xA5u
static int semihost_readc(void) {
    register uint32_t r0 __asm("r0") = SYS_READC;
    register uint32_t r1 __asm("r1") = 0;
    uint32_t saved, below;
    __asm volatile("mov %[saved], sp\n\t"
                   "bic %[below], %[saved], #7\n\t"
                   "sub %[below], %[below], #4\n\t"
                   "mov sp, %[below]\n\t"
                   "mov %[below], %[mark]\n\t"
                   "strb %[below], [sp, #-1]\n\t"
                   "bkpt 0xab\n\t"
                   "ldrb %[below], [sp, #-1]\n\t"
                   "mov sp, %[saved]"
                   : "+r"(r0), [saved] "=&r"(saved), [below] "=&r"(below)
                   : "r"(r1), [mark] "I"(READC_MARK)
                   : "memory");
    return below != READC_MARK ? (int)below : (int)(r0 & 0xFFu);
}

/* The byte SYS_READC returned that getc has not handed out yet (-1: none). */
static int pending = -1;

/* QEMU's console takes bytes from its chardev only while its FIFO has room, and it does not tell
 * the chardev when the guest made room again (it never calls qemu_chr_fe_accept_input): once the
 * FIFO was full, the socket is read again only when QEMU's main loop happens to wake up, which
 * stalled pipelined COPY_TO (two 1 KiB frames in flight fill the 1 KiB FIFO) at 1.4 KiB/s. So
 * every KICK_BYTES bytes read, the board's kick (a read of the idle CMSDK UART's DATA register,
 * channel.c) makes QEMU wake its main loop, which looks at the console's room again. */
#define KICK_BYTES 256u
static void (*kick)(void);
static uint32_t since_kick;

void tether__semihost_init(void (*kick_fn)(void)) {
    kick = kick_fn;
}

int tether__semihost_getc(void) {
    int b = pending;
    pending = -1;
    return b;
}

void tether__semihost_wait(void) {
    if (pending < 0) {
        pending = semihost_readc();
        if (++since_kick >= KICK_BYTES && kick) {
            since_kick = 0;
            kick();
        }
    }
}

/* A run of non-zero bytes is copied here and NUL-terminated for SYS_WRITE0. */
#define RUN_MAX 128u
static char run[RUN_MAX + 1u];

void tether__semihost_write(const void *buf, size_t n) {
    const uint8_t *p = buf;
    size_t len = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || p[i] == 0 || len == RUN_MAX) {
            if (len) {
                run[len] = 0;
                (void)semihost_call(SYS_WRITE0, run);
                len = 0;
            }
            if (i == n) {
                break;
            }
            if (p[i] == 0) {
                static const uint8_t zero = 0;
                (void)semihost_call(SYS_WRITEC, &zero);
                continue;
            }
        }
        run[len++] = (char)p[i];
    }
}
