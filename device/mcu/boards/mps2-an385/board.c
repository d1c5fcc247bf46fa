/*
 * MPS2 AN385 board support: CMSDK UART0 (interrupt-driven receive ring, polled transmit),
 * SysTick extended to a 64-bit cycle counter, the crt time hooks, reset and the board info.
 *
 * What must stay true:
 * - No received byte is dropped silently: the RX interrupt moves each byte from the one-byte
 *   UART holding register into a 512-byte ring; a full ring or a UART overrun increments
 *   `lost`, which the firmware reports (HELLO and error replies).
 * - tether_platform_cycles is monotonic: SysTick counts down from 2^24-1 at the CPU clock and
 *   its wrap interrupt adds 2^24 to a high word; a reader retries when the high word moved.
 * - Transmit is polled, so it works from fault handlers with interrupts masked.
 */
#include <stdint.h>

#include "board.h"
#include "regs.h"
#include "tether/crt/platform.h"

extern uint32_t __tether_ram_start[], __tether_ram_end[];
extern uint32_t __tether_heap_start[], __tether_heap_end[];
extern uint32_t __tether_load_start[], __tether_load_end[];
extern uint32_t __tether_psram_start[], __tether_psram_end[];
extern uint32_t __tether_code_pool_start[], __tether_code_pool_end[];
extern uint32_t __tether_stack_base[], __tether_stack_top[];

void tether_systick_handler(void);
void tether_uart0_rx_handler(void);

/* ---- receive ring ---- */

#define RX_RING_SIZE 512u /* power of two */
static volatile uint8_t rx_ring[RX_RING_SIZE];
static volatile uint32_t rx_head; /* written by the ISR */
static volatile uint32_t rx_tail; /* written by the reader */
static volatile uint32_t rx_lost;

/* Moves every byte waiting in the UART into the ring. The interrupt flag is cleared BEFORE the
 * holding register is drained: a byte that arrives after the drain sets the flag again, so no
 * byte can be left in RXFULL without a pending interrupt (QEMU delivers the next byte only once
 * RXFULL is clear, so such a byte would stall the link). */
static void rx_drain(void) {
    UART_INTSTATUS = UART_INT_RX | UART_INT_RXOVR;
    while (UART_STATE & UART_STATE_RXFULL) {
        uint8_t b = (uint8_t)UART_DATA;
        uint32_t head = rx_head;
        if (head - rx_tail < RX_RING_SIZE) {
            rx_ring[head & (RX_RING_SIZE - 1u)] = b;
            rx_head = head + 1u;
        } else {
            rx_lost++;
        }
    }
    if (UART_STATE & UART_STATE_RXOVR) {
        UART_STATE = UART_STATE_RXOVR; /* write 1 to clear */
        rx_lost++;
    }
}

void tether_uart0_rx_handler(void) {
    rx_drain();
}

int tether_board_uart_getc(void) {
    uint32_t tail = rx_tail;
    if (tail == rx_head) {
        /* Belt and braces: poll the UART itself with the RX interrupt masked. */
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
        while (UART_STATE & UART_STATE_TXFULL) {
        }
        UART_DATA = p[i];
    }
}

void tether_board_wait(void) {
    /* Sleep until the next interrupt (UART RX or the SysTick wrap). Interrupts are masked while
     * checking, so a byte that arrives between the check and the WFI still wakes the core (WFI
     * returns on a pending interrupt even with PRIMASK set); it is handled after cpsie. */
    __asm volatile("cpsid i" ::: "memory");
    if (rx_tail == rx_head && (UART_STATE & UART_STATE_RXFULL) == 0) {
        __asm volatile("wfi" ::: "memory");
    }
    __asm volatile("cpsie i" ::: "memory");
}

/* ---- 64-bit cycle counter ---- */

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
 * 40 ns (25 MHz), so a measurement that starts at a random phase within a tick can come out one
 * tick longer or shorter. The loop below samples the counter every 41 instructions: the phase
 * moves by one instruction per sample, and the first sample that sees the counter drop by 2
 * ticks is exactly at an edge (under -icount a sample sees a drop of 1 or 2, nothing else). From
 * there every instruction count, and so every tick count, is the same from run to run. Interrupts
 * are masked while syncing.
 */
void tether_board_timing_sync(void) {
    /* 41 instructions per sample: 33 nops + 8 below. At most 256 samples, so the loop also ends
     * without -icount, where instructions and time are unrelated. */
    __asm volatile("cpsid i\n"
                   "ldr r0, =0xE000E018\n" /* SYST_CVR */
                   "ldr r1, [r0]\n"
                   "mov ip, #256\n"
                   "1:\n"
                   ".rept 33\n"
                   "nop\n"
                   ".endr\n"
                   "ldr r2, [r0]\n"
                   "subs r3, r1, r2\n"
                   "lsls r3, r3, #8\n" /* the counter is 24 bits: compare modulo 2^24 */
                   "mov r1, r2\n"
                   "cmp r3, #512\n" /* dropped by 2 (or more) ticks since the last sample */
                   "bhs 2f\n"
                   "subs ip, ip, #1\n"
                   "bne 1b\n"
                   "2:\n"
                   "cpsie i\n"
                   :
                   :
                   : "r0", "r1", "r2", "r3", "ip", "cc", "memory");
}

uint64_t tether_platform_cycles_hz(void) {
    return AN385_SYSCLK_HZ;
}

uint64_t tether_platform_time_ns(void) {
    uint64_t c = tether_platform_cycles();
    /* 25 MHz: 40 ns per cycle. */
    return c * (1000000000u / AN385_SYSCLK_HZ);
}

/* ---- identity, reset ---- */

/* Survives a warm reset (the NOINIT region is neither loaded nor zeroed). */
static struct {
    uint32_t magic;
    uint32_t boots;
} noinit __attribute__((section(".tether_noinit")));
#define NOINIT_MAGIC 0x7E7B0075u
static uint32_t boot_count;

uint32_t tether_board_boot_count(void) {
    return boot_count;
}

void tether_board_reset(void) {
    __asm volatile("dsb");
    SCB_AIRCR = SCB_AIRCR_VECTKEY | SCB_AIRCR_SYSRESETREQ;
    __asm volatile("dsb");
    for (;;) {
    }
}

uintptr_t tether_board_stack_pointer(void) {
    uintptr_t sp;
    __asm volatile("mov %0, sp" : "=r"(sp));
    return sp;
}

static tether_board_info info;
static tether_board_pool pools[3];
#define STACK_GUARD_BYTES 32u

const tether_board_info *tether_board_get_info(void) {
    return &info;
}

void tether_board_init(void) {
    if (noinit.magic == NOINIT_MAGIC) {
        noinit.boots++;
    } else {
        noinit.magic = NOINIT_MAGIC;
        noinit.boots = 0;
    }
    boot_count = noinit.boots;

    info.name = "mps2-an385";
    info.cpu = "cortex-m3";
    info.triple = "thumbv7m-none-eabi";
    info.clock_hz = AN385_SYSCLK_HZ;
    info.ram_base = (uintptr_t)__tether_ram_start;
    info.ram_size = (uint32_t)((uintptr_t)__tether_ram_end - (uintptr_t)__tether_ram_start);
    info.heap_base = (uintptr_t)__tether_heap_start;
    info.heap_size = (uint32_t)((uintptr_t)__tether_heap_end - (uintptr_t)__tether_heap_start);
    info.load_base = (uintptr_t)__tether_load_start;
    info.load_size = (uint32_t)((uintptr_t)__tether_load_end - (uintptr_t)__tether_load_start);
    /* the pools, fastest first (link.ld) */
    pools[0].name = "sram";
    pools[0].base = info.heap_base;
    pools[0].size = info.heap_size;
    pools[1].name = "psram";
    pools[1].base = (uintptr_t)__tether_psram_start;
    pools[1].size = (uint32_t)((uintptr_t)__tether_psram_end - (uintptr_t)__tether_psram_start);
    pools[2].name = "code";
    pools[2].base = (uintptr_t)__tether_code_pool_start;
    pools[2].size =
        (uint32_t)((uintptr_t)__tether_code_pool_end - (uintptr_t)__tether_code_pool_start);
    info.pools = pools;
    info.npools = 3;
    /* Stack overflow protection. The stack is at the bottom of SRAM (link.ld). Region 0 makes
     * its lowest STACK_GUARD_BYTES no-access; region 1 makes the 16 MiB below SRAM no-access
     * (QEMU maps that range as a reserved area that ignores writes, so without the MPU a runaway
     * stack would go unnoticed). A frame big enough to skip the small guard still lands in
     * region 1: an overflow always faults (MemManage) and never reaches .data/.bss. */
    info.stack_base = (uintptr_t)__tether_stack_base + STACK_GUARD_BYTES;
    info.stack_size = (uint32_t)((uintptr_t)__tether_stack_top - info.stack_base);
    MPU_RNR = 0;
    MPU_RBAR = (uint32_t)(uintptr_t)__tether_stack_base;
    MPU_RASR = MPU_RASR_ENABLE | MPU_RASR_SIZE(5) | MPU_RASR_XN; /* 32 bytes, AP = no access */
    MPU_RNR = 1;
    MPU_RBAR = (uint32_t)(uintptr_t)__tether_stack_base - 0x01000000u;
    MPU_RASR = MPU_RASR_ENABLE | MPU_RASR_SIZE(24) | MPU_RASR_XN; /* 16 MiB, no access */
    MPU_CTRL = MPU_CTRL_ENABLE | MPU_CTRL_PRIVDEFENA;
    __asm volatile("dsb\n isb" ::: "memory");

    /* SysTick: free-running over the full 24 bits on the processor clock, lowest priority. */
    SCB_SHPR3 = (SCB_SHPR3 & 0x00FFFFFFu) | (0xFFu << 24);
    SYST_RVR = SYST_MAX;
    SYST_CVR = 0;
    SYST_CSR = SYST_CSR_ENABLE | SYST_CSR_TICKINT | SYST_CSR_CLKSOURCE;

    /* UART0: 115200 8N1 (QEMU ignores the rate), RX interrupt into the ring. */
    UART_BAUDDIV = AN385_SYSCLK_HZ / AN385_UART_BAUD;
    UART_CTRL = UART_CTRL_TXEN | UART_CTRL_RXEN | UART_CTRL_RXINTEN;
    NVIC_IPR(AN385_IRQ_UART0_RX) = 0x40;
    NVIC_ISER0 = 1u << AN385_IRQ_UART0_RX;
    __asm volatile("cpsie i");
}
