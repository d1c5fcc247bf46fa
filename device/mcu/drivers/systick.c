/*
 * SysTick as tether's cycle counter on every Cortex-M board: the 24-bit down-counter on the
 * processor clock, reloaded at 2^24 - 1, whose wrap interrupt extends it to 64 bits; the crt
 * time hooks (tether_platform_cycles/_cycles_hz/_time_ns) and the timing sync before a
 * measurement. BOARD_SYSCLK_HZ (board_config.h) is the processor clock.
 *
 * What must stay true:
 * - tether_platform_cycles is monotonic: a reader retries when the high word moved, and counts
 *   a wrap whose interrupt has not run yet (in a handler, or with interrupts masked).
 * - tether_board_timing_sync runs Thumb-1 instructions only (Armv6-M included) and takes
 *   ceil(1e9 / BOARD_SYSCLK_HZ) + 1 instructions per sample (see below).
 */
#include <stdint.h>

#include "board.h"
#include "board_config.h"
#include "cortex_m.h"
#include "tether/crt/platform.h"

void tether_systick_handler(void);
void tether__systick_init(void);

/* ns per tick, rounded up: 40 at 25 MHz, 50 at 20 MHz, 32 (for 31.25) at 32 MHz */
#define TICK_NS   ((1000000000u + BOARD_SYSCLK_HZ - 1u) / BOARD_SYSCLK_HZ)
#define SYNC_NOPS (TICK_NS + 1u - 8u) /* 8 instructions of the loop itself */

static volatile uint32_t systick_wraps;

void tether_systick_handler(void) {
    systick_wraps++;
}

uint64_t tether_platform_cycles(void) {
    uint32_t hi, val;
    do {
        hi = systick_wraps;
        val = SYST_CVR;
        /* A wrap that happened after the read of `hi` but whose interrupt has not run yet (we
         * may be in a handler, or interrupts are masked): the counter reloaded, so count it. */
        if ((SCB_ICSR & (1u << 26)) != 0 && val > SYST_MAX / 2u) {
            hi++;
            break;
        }
    } while (hi != systick_wraps);
    return ((uint64_t)hi << 24) + (uint64_t)(SYST_MAX - val);
}

/*
 * Aligns the core to a SysTick edge. On silicon SysTick counts core cycles, so this only costs a
 * few hundred cycles. Under QEMU -icount shift=0 one instruction is 1 ns and one SysTick tick is
 * TICK_NS ns, so a measurement that starts at a random phase within a tick can come out one
 * tick longer or shorter. The loop below samples the counter every TICK_NS + 1 instructions:
 * the phase moves by one instruction per sample, and the first sample that sees the counter
 * drop by 2 ticks is exactly at an edge (under -icount a sample sees a drop of 1 or 2, nothing
 * else). From there every instruction count, and so every tick count, is the same from run to
 * run. Interrupts are masked while syncing; at most 256 samples, so the loop also ends without
 * -icount, where instructions and time are unrelated. This is exact when a tick is a whole
 * number of ns (25 MHz, 20 MHz); at 32 MHz (31.25 ns) the edges fall between instructions and
 * a count may differ by one tick from run to run (docs/boards.md).
 */
void tether_board_timing_sync(void) {
    __asm volatile(".syntax unified\n"
                   "cpsid i\n"
                   "ldr r0, =0xE000E018\n" /* SYST_CVR */
                   "ldr r1, [r0]\n"
                   "movs r4, #1\n"
                   "lsls r4, r4, #8\n" /* 256 samples at most */
                   "1:\n"
                   ".rept %c[nops]\n"
                   "nop\n"
                   ".endr\n"
                   "ldr r2, [r0]\n"
                   "subs r3, r1, r2\n"
                   "lsls r3, r3, #8\n" /* the counter is 24 bits: compare modulo 2^24 */
                   "mov r1, r2\n"
                   "lsrs r3, r3, #9\n" /* dropped by 2 (or more) ticks since the last sample */
                   "bne 2f\n"
                   "subs r4, r4, #1\n"
                   "bne 1b\n"
                   "2:\n"
                   "cpsie i\n"
                   :
                   : [nops] "i"(SYNC_NOPS)
                   : "r0", "r1", "r2", "r3", "r4", "cc", "memory");
}

uint64_t tether_platform_cycles_hz(void) {
    return BOARD_SYSCLK_HZ;
}

uint64_t tether_platform_time_ns(void) {
    uint64_t c = tether_platform_cycles();
    return c / BOARD_SYSCLK_HZ * 1000000000u + c % BOARD_SYSCLK_HZ * 1000000000u / BOARD_SYSCLK_HZ;
}

/* Free-running over the full 24 bits on the processor clock, lowest priority. */
void tether__systick_init(void) {
    SCB_SHPR3 = (SCB_SHPR3 & 0x00FFFFFFu) | (0xFFu << 24);
    SYST_RVR = SYST_MAX;
    SYST_CVR = 0;
    SYST_CSR = SYST_CSR_ENABLE | SYST_CSR_TICKINT | SYST_CSR_CLKSOURCE;
}
