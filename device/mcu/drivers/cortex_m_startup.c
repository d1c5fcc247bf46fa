/*
 * Cortex-M startup and core support shared by the board folders: the vector table, the reset
 * handler, the fault handlers, the stack guard, reset, the boot counter kept across warm resets
 * and the common part of the board info. The board's board_config.h gives BOARD_NUM_IRQS,
 * BOARD_UART_RX_IRQ (routed to tether_uart_rx_handler), BOARD_RAM_LO/HI (where a stacked fault
 * frame can be trusted), optionally BOARD_FAULT_STACK_WORDS (default 512) and, for an Armv7-M
 * MPU guard below the stack, BOARD_STACK_GUARD_BELOW;
 * the board table (device/mcu/boards/boards.txt, through the cross build) gives
 * TETHER_BOARD_NAME, _CORE, _TRIPLE, _FEATURES.
 *
 * What must stay true: the vector table is the first thing in CODE (the board's link.ld keeps
 * .vectors at the reset vector address); the reset handler enables the FPU before any code that
 * may use it and touches no .data or .bss before copying/zeroing them; fault handlers never
 * return and never trust the faulting stack: they capture the stacked frame, move to a private
 * fault stack and hand the registers to the firmware (tether_mcu_fault), which reports and
 * resets; a stack overflow faults (PMSAv7 guard regions on Armv7-M, MSPLIM on Armv8-M) before
 * it reaches .data/.bss wherever the core can detect it. Thumb-1 only in the assembly.
 */
#include <stdint.h>
#include <string.h>

#include "board.h"
#include "board_config.h"
#include "cortex_m.h"

#ifndef TETHER_BOARD_FEATURES
#define TETHER_BOARD_FEATURES ""
#endif

extern uint32_t __tether_data_start[], __tether_data_end[], __tether_data_load[];
extern uint32_t __tether_bss_start[], __tether_bss_end[];
extern uint32_t __tether_stack_base[], __tether_stack_top[];
extern uint32_t __tether_ram_start[], __tether_ram_end[];
extern uint32_t __tether_heap_start[], __tether_heap_end[];
extern uint32_t __tether_load_start[], __tether_load_end[];

void tether_reset_handler(void) __attribute__((noreturn));
void tether_fault_handler(void) __attribute__((naked, noreturn));
void tether_fault_report(const uint32_t *frame, uint32_t ipsr) __attribute__((noreturn, used));
void tether_default_handler(void);
void tether_systick_handler(void);
void tether_uart_rx_handler(void);

/* Private stack for fault reporting: a fault may come from a corrupted or exhausted main stack. */
#ifndef BOARD_FAULT_STACK_WORDS
#define BOARD_FAULT_STACK_WORDS 512u /* 2 KiB */
#endif
#define FAULT_STACK_WORDS BOARD_FAULT_STACK_WORDS
static uint32_t fault_stack[FAULT_STACK_WORDS] __attribute__((aligned(8)));
uint32_t *const tether_fault_stack_top = &fault_stack[FAULT_STACK_WORDS];

typedef void (*vector)(void);

__attribute__((section(".vectors"), used)) static const vector vectors[16 + BOARD_NUM_IRQS] = {
    [0] = (vector)(uintptr_t)__tether_stack_top,
    [1] = tether_reset_handler,
    [2] = tether_default_handler, /* NMI */
    [3] = tether_fault_handler,   /* HardFault */
#if TETHER_CM_THUMB2
    [4] = tether_fault_handler,    /* MemManage */
    [5] = tether_fault_handler,    /* BusFault */
    [6] = tether_fault_handler,    /* UsageFault */
    [7] = tether_fault_handler,    /* SecureFault (Armv8-M) */
    [12] = tether_default_handler, /* DebugMonitor */
#endif
    [11] = tether_default_handler, /* SVCall */
    [14] = tether_default_handler, /* PendSV */
    [15] = tether_systick_handler,
    [16 + BOARD_UART_RX_IRQ] = tether_uart_rx_handler,
};

void tether_reset_handler(void) {
#if defined(__ARM_FP)
    /* CP10/CP11 full access: the firmware and uploaded modules use the FPU (hard-float ABI). */
    SCB_CPACR |= 0xFu << 20;
    __asm volatile("dsb\n isb" ::: "memory");
#endif
#if defined(BOARD_VECTORS_VTOR)
    SCB_VTOR = (uint32_t)(uintptr_t)vectors;
#endif
    uint32_t *src = __tether_data_load;
    for (uint32_t *dst = __tether_data_start; dst < __tether_data_end;) {
        *dst++ = *src++;
    }
    for (uint32_t *dst = __tether_bss_start; dst < __tether_bss_end;) {
        *dst++ = 0;
    }
#if TETHER_CM_THUMB2
    /* Separate MemManage/BusFault/UsageFault exceptions, trap integer division by zero. */
    SCB_SHCSR |= SCB_SHCSR_MEMFAULTENA | SCB_SHCSR_BUSFAULTENA | SCB_SHCSR_USGFAULTENA;
    SCB_CCR |= SCB_CCR_DIV_0_TRP;
#endif
    tether_board_init();
    tether_mcu_main();
}

/* Unexpected exception or interrupt: report it like a fault (PC unknown). */
void tether_default_handler(void) {
    tether_fault_info info = {.kind = "unexpected exception"};
#if TETHER_CM_THUMB2
    info.cfsr = SCB_CFSR;
    info.hfsr = SCB_HFSR;
#endif
    tether_mcu_fault(&info);
}

/* Picks the stack the frame was pushed to (EXC_RETURN bit 2), switches to the fault stack and
 * calls tether_fault_report(frame, ipsr). Thumb-1, so it runs on Armv6-M too. */
void tether_fault_handler(void) {
    __asm volatile(".syntax unified\n"
                   "movs r0, #4\n"
                   "mov r1, lr\n"
                   "tst r0, r1\n"
                   "beq 1f\n"
                   "mrs r0, psp\n"
                   "b 2f\n"
                   "1:\n"
                   "mrs r0, msp\n"
                   "2:\n"
                   "mrs r1, ipsr\n"
                   "ldr r2, =tether_fault_stack_top\n"
                   "ldr r2, [r2]\n"
                   "mov sp, r2\n"
                   "ldr r3, =tether_fault_report\n"
                   "bx r3\n");
}

void tether_fault_report(const uint32_t *frame, uint32_t ipsr) {
    static const char *const kinds[] = {"HardFault", "MemManage", "BusFault", "UsageFault",
                                        "SecureFault"};
    uint32_t exc = ipsr & 0x1FFu;
    tether_fault_info info = {.kind = (exc >= 3 && exc <= 7) ? kinds[exc - 3] : "fault"};
#if TETHER_CM_THUMB2
#if !TETHER_CM_V8M
    /* The frame may sit in the stack guard (a stack overflow): drop the guard before reading. */
    MPU_CTRL = 0;
    __asm volatile("dsb\n isb" ::: "memory");
#endif
    info.cfsr = SCB_CFSR;
    info.hfsr = SCB_HFSR;
    info.mmfar = SCB_MMFAR;
    info.bfar = SCB_BFAR;
#endif
    /* The frame pointer is only trusted when it lies in RAM. */
    uintptr_t f = (uintptr_t)frame;
    if (f >= BOARD_RAM_LO && f + 32u <= BOARD_RAM_HI && (f & 3u) == 0) {
        info.lr = frame[5];
        info.pc = frame[6];
        info.psr = frame[7];
    }
    tether_mcu_fault(&info);
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

#define STACK_GUARD_BYTES 32u

/* Fills the board-independent part of the info (identity from the board table, regions from
 * the linker script), counts the boot and arms the stack guard. */
void tether__board_info_init(tether_board_info *info) {
    if (noinit.magic == NOINIT_MAGIC) {
        noinit.boots++;
    } else {
        noinit.magic = NOINIT_MAGIC;
        noinit.boots = 0;
    }
    boot_count = noinit.boots;

    info->name = TETHER_BOARD_NAME;
    info->cpu = TETHER_BOARD_CORE;
    info->triple = TETHER_BOARD_TRIPLE;
    info->features = TETHER_BOARD_FEATURES;
    info->clock_hz = BOARD_SYSCLK_HZ;
    info->ram_base = (uintptr_t)__tether_ram_start;
    info->ram_size = (uint32_t)((uintptr_t)__tether_ram_end - (uintptr_t)__tether_ram_start);
    info->heap_base = (uintptr_t)__tether_heap_start;
    info->heap_size = (uint32_t)((uintptr_t)__tether_heap_end - (uintptr_t)__tether_heap_start);
    info->load_base = (uintptr_t)__tether_load_start;
    info->load_size = (uint32_t)((uintptr_t)__tether_load_end - (uintptr_t)__tether_load_start);
    info->stack_base = (uintptr_t)__tether_stack_base;
    info->stack_size = (uint32_t)((uintptr_t)__tether_stack_top - info->stack_base);
#if TETHER_CM_V8M
    /* Stack overflow protection: the stack is at the bottom of the board's RAM (link.ld); a
     * push or SP update below MSPLIM is a UsageFault (STKOF), so an overflow never reaches
     * .data/.bss, however large the frame. */
    info->stack_base += STACK_GUARD_BYTES;
    info->stack_size -= STACK_GUARD_BYTES;
    __asm volatile("msr msplim, %0" ::"r"(info->stack_base) : "memory");
#elif TETHER_CM_THUMB2
    /* PMSAv7, privileged default map for everything else. Region 0 makes the stack's lowest
     * STACK_GUARD_BYTES no-access; with BOARD_STACK_GUARD_BELOW, region 1 makes the 16 MiB
     * below the stack no-access (QEMU maps that range as a reserved area that ignores writes,
     * so without the MPU a runaway stack would go unnoticed). A frame big enough to skip the
     * small guard still lands in region 1: an overflow always faults (MemManage). */
    info->stack_base += STACK_GUARD_BYTES;
    info->stack_size -= STACK_GUARD_BYTES;
    MPU_RNR = 0;
    MPU_RBAR = (uint32_t)(uintptr_t)__tether_stack_base;
    MPU_RASR = MPU_RASR_ENABLE | MPU_RASR_SIZE(5) | MPU_RASR_XN; /* 32 bytes, AP = no access */
#if defined(BOARD_STACK_GUARD_BELOW)
    MPU_RNR = 1;
    MPU_RBAR = (uint32_t)(uintptr_t)__tether_stack_base - 0x01000000u;
    MPU_RASR = MPU_RASR_ENABLE | MPU_RASR_SIZE(24) | MPU_RASR_XN; /* 16 MiB, no access */
#endif
    MPU_CTRL = MPU_CTRL_ENABLE | MPU_CTRL_PRIVDEFENA;
    __asm volatile("dsb\n isb" ::: "memory");
#endif
}
