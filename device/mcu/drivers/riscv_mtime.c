/*
 * The RISC-V machine timer (mtime of the CLINT) as tether's cycle counter: a 64-bit counter at
 * BOARD_SYSCLK_HZ (the timebase, 10 MHz on QEMU virt) read from BOARD_MTIME_ADDR; the crt time
 * hooks and the timing sync before a measurement.
 *
 * What must stay true: tether_platform_cycles is monotonic (the two halves are read high, low,
 * high again); tether_board_timing_sync takes ceil(1e9 / BOARD_SYSCLK_HZ) + 1 instructions per
 * sample (see systick.c: the same argument for a counter that counts up).
 */
#include <stdint.h>

#include "board.h"
#include "board_config.h"
#include "tether/crt/platform.h"

void tether__systick_init(void);

#define MTIME_LO  (*(volatile uint32_t *)(uintptr_t)(BOARD_MTIME_ADDR))
#define MTIME_HI  (*(volatile uint32_t *)(uintptr_t)(BOARD_MTIME_ADDR + 4u))
#define TICK_NS   ((1000000000u + BOARD_SYSCLK_HZ - 1u) / BOARD_SYSCLK_HZ)
#define SYNC_NOPS (TICK_NS + 1u - 7u) /* 7 instructions of the loop itself */

uint64_t tether_platform_cycles(void) {
    uint32_t hi, lo;
    do {
        hi = MTIME_HI;
        lo = MTIME_LO;
    } while (hi != MTIME_HI);
    return (uint64_t)hi << 32 | lo;
}

/* Under QEMU -icount shift=0 one instruction is 1 ns: sampling every TICK_NS + 1 instructions
 * moves the phase by one instruction per sample, and the first sample that sees the counter
 * advance by 2 is exactly at a tick edge. At most 256 samples (the loop also ends without
 * -icount). */
void tether_board_timing_sync(void) {
    __asm volatile(".option push\n"
                   ".option arch, +zicsr\n"
                   "csrci mstatus, 8\n"
                   "li t0, %[mtime]\n"
                   "lw t1, 0(t0)\n"
                   "li t4, 256\n"
                   "1:\n"
                   ".rept %[nops]\n"
                   "nop\n"
                   ".endr\n"
                   "lw t2, 0(t0)\n"
                   "sub t3, t2, t1\n"
                   "mv t1, t2\n"
                   "addi t3, t3, -2\n"
                   "bgez t3, 2f\n" /* advanced by 2 (or more) ticks since the last sample */
                   "addi t4, t4, -1\n"
                   "bnez t4, 1b\n"
                   "2:\n"
                   ".option pop\n"
                   :
                   : [mtime] "i"(BOARD_MTIME_ADDR), [nops] "i"(SYNC_NOPS)
                   : "t0", "t1", "t2", "t3", "t4", "memory");
}

uint64_t tether_platform_cycles_hz(void) {
    return BOARD_SYSCLK_HZ;
}

uint64_t tether_platform_time_ns(void) {
    uint64_t c = tether_platform_cycles();
    return c / BOARD_SYSCLK_HZ * 1000000000u + c % BOARD_SYSCLK_HZ * 1000000000u / BOARD_SYSCLK_HZ;
}

/* mtime runs from reset: nothing to start. */
void tether__systick_init(void) {}
