/*
 * MPS2 AN385 (Cortex-M3) startup: vector table, reset handler and fault handlers, in C.
 *
 * What must stay true: the vector table is the first thing in CODE (link.ld keeps .vectors at
 * 0x00000000, where the core fetches the initial SP and PC); the reset handler touches no .data
 * or .bss before copying/zeroing them; fault handlers never return and never trust the faulting
 * stack: they capture the stacked frame, move to a private fault stack and hand the registers to
 * the firmware (tether_mcu_fault), which reports and resets.
 */
#include <stdint.h>
#include <string.h>

#include "board.h"
#include "regs.h"

extern uint32_t __tether_data_start[], __tether_data_end[], __tether_data_load[];
extern uint32_t __tether_bss_start[], __tether_bss_end[];
extern uint32_t __tether_stack_top[];

void tether_reset_handler(void) __attribute__((noreturn));
void tether_fault_handler(void) __attribute__((naked, noreturn));
void tether_fault_report(const uint32_t *frame, uint32_t ipsr) __attribute__((noreturn, used));
void tether_default_handler(void);
void tether_systick_handler(void);
void tether_uart0_rx_handler(void);

/* Private stack for fault reporting: a fault may come from a corrupted or exhausted main stack. */
#define FAULT_STACK_WORDS 512
static uint32_t fault_stack[FAULT_STACK_WORDS] __attribute__((aligned(8)));
uint32_t *const tether_fault_stack_top = &fault_stack[FAULT_STACK_WORDS];

typedef void (*vector)(void);

/* 16 system exceptions + 32 external interrupts (AN385 uses IRQ 0..31). */
__attribute__((section(".vectors"), used)) static const vector vectors[16 + 32] = {
    [0] = (vector)(uintptr_t)__tether_stack_top,
    [1] = tether_reset_handler,
    [2] = tether_default_handler,  /* NMI */
    [3] = tether_fault_handler,    /* HardFault */
    [4] = tether_fault_handler,    /* MemManage */
    [5] = tether_fault_handler,    /* BusFault */
    [6] = tether_fault_handler,    /* UsageFault */
    [11] = tether_default_handler, /* SVCall */
    [12] = tether_default_handler, /* DebugMonitor */
    [14] = tether_default_handler, /* PendSV */
    [15] = tether_systick_handler,
    [16 + AN385_IRQ_UART0_RX] = tether_uart0_rx_handler,
};

void tether_reset_handler(void) {
    uint32_t *src = __tether_data_load;
    for (uint32_t *dst = __tether_data_start; dst < __tether_data_end;) {
        *dst++ = *src++;
    }
    for (uint32_t *dst = __tether_bss_start; dst < __tether_bss_end;) {
        *dst++ = 0;
    }
    /* Separate MemManage/BusFault/UsageFault exceptions, trap integer division by zero. */
    SCB_SHCSR |= SCB_SHCSR_MEMFAULTENA | SCB_SHCSR_BUSFAULTENA | SCB_SHCSR_USGFAULTENA;
    SCB_CCR |= SCB_CCR_DIV_0_TRP;
    tether_board_init();
    tether_mcu_main();
}

/* Unexpected exception or interrupt: report it like a fault (PC unknown). */
void tether_default_handler(void) {
    tether_fault_info info = {.kind = "unexpected exception", .cfsr = SCB_CFSR, .hfsr = SCB_HFSR};
    tether_mcu_fault(&info);
}

/* Picks the stack the frame was pushed to (EXC_RETURN bit 2), switches to the fault stack and
 * calls tether_fault_report(frame, ipsr). */
void tether_fault_handler(void) {
    __asm volatile("tst lr, #4\n"
                   "ite eq\n"
                   "mrseq r0, msp\n"
                   "mrsne r0, psp\n"
                   "mrs r1, ipsr\n"
                   "ldr r2, =tether_fault_stack_top\n"
                   "ldr r2, [r2]\n"
                   "mov sp, r2\n"
                   "b tether_fault_report\n");
}

void tether_fault_report(const uint32_t *frame, uint32_t ipsr) {
    static const char *const kinds[] = {"HardFault", "MemManage", "BusFault", "UsageFault"};
    uint32_t exc = ipsr & 0x1FFu;
    /* The frame may sit in the stack guard (a stack overflow): drop the guard before reading. */
    MPU_CTRL = 0;
    __asm volatile("dsb\n isb" ::: "memory");
    tether_fault_info info = {
        .kind = (exc >= 3 && exc <= 6) ? kinds[exc - 3] : "fault",
        .cfsr = SCB_CFSR,
        .hfsr = SCB_HFSR,
        .mmfar = SCB_MMFAR,
        .bfar = SCB_BFAR,
    };
    /* The frame pointer is only trusted when it lies in RAM. */
    uintptr_t f = (uintptr_t)frame;
    if (f >= 0x20000000u && f + 32u <= 0x20400000u && (f & 3u) == 0) {
        info.lr = frame[5];
        info.pc = frame[6];
        info.psr = frame[7];
    }
    tether_mcu_fault(&info);
}
