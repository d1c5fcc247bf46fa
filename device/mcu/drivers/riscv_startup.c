/*
 * RISC-V (RV32, machine mode) startup and core support shared by RISC-V board folders: the
 * entry point, the trap handler (every trap is a fault: the firmware enables no interrupts),
 * reset, the boot counter kept across warm resets and the common part of the board info. The
 * board's board_config.h gives BOARD_RESET_ADDR/BOARD_RESET_VALUE (a write that resets the
 * machine, e.g. QEMU virt's test device), BOARD_RAM_LO/HI and optionally
 * BOARD_FAULT_STACK_WORDS; the board table gives TETHER_BOARD_NAME, _CORE, _TRIPLE, _FEATURES.
 *
 * What must stay true: tether_reset_handler is the ELF entry and touches no .data or .bss before
 * copying/zeroing them (sp and gp are set first); the trap handler never returns and never
 * trusts the faulting stack: it moves to a private fault stack and hands mcause/mepc/mtval/ra
 * to the firmware (tether_mcu_fault), which reports and resets. No stack guard: the core has
 * no MPU configured here (PMP is not used), so an overflow is not caught.
 */
#include <stdint.h>
#include <string.h>

#include "board.h"
#include "board_config.h"
#include "drivers.h"
#include "tether/crt.h"

#ifndef TETHER_BOARD_FEATURES
#define TETHER_BOARD_FEATURES ""
#endif
#ifndef BOARD_FAULT_STACK_WORDS
#define BOARD_FAULT_STACK_WORDS 512u
#endif

extern uint32_t __tether_data_start[], __tether_data_end[], __tether_data_load[];
extern uint32_t __tether_bss_start[], __tether_bss_end[];
extern uint32_t __tether_stack_base[], __tether_stack_top[];
extern uint32_t __tether_ram_start[], __tether_ram_end[];
extern uint32_t __tether_heap_start[], __tether_heap_end[];
extern uint32_t __tether_load_start[], __tether_load_end[];

void tether_reset_handler(void) __attribute__((naked, noreturn, section(".text.entry")));
void tether_trap_entry(void) __attribute__((naked, noreturn, aligned(4)));
void tether_c_start(void) __attribute__((noreturn, used));
void tether_trap_report(uint32_t mcause, uint32_t mepc, uint32_t mtval, uint32_t ra)
    __attribute__((noreturn, used));

static uint32_t fault_stack[BOARD_FAULT_STACK_WORDS] __attribute__((aligned(16), used));
uint32_t *const tether_fault_stack_top = &fault_stack[BOARD_FAULT_STACK_WORDS];

void tether_reset_handler(void) {
    __asm volatile(".option push\n"
                   ".option norelax\n"
                   ".option arch, +zicsr\n"
                   "la gp, __global_pointer$\n"
                   "la sp, __tether_stack_top\n"
                   "la t0, tether_trap_entry\n"
                   "csrw mtvec, t0\n"
                   "csrw mie, zero\n"
                   ".option pop\n"
                   "j tether_c_start\n");
}

void tether_c_start(void) {
    uint32_t *src = __tether_data_load;
    for (uint32_t *dst = __tether_data_start; dst < __tether_data_end;) {
        *dst++ = *src++;
    }
    for (uint32_t *dst = __tether_bss_start; dst < __tether_bss_end;) {
        *dst++ = 0;
    }
    tether_board_init();
    tether_mcu_main();
}

void tether_trap_entry(void) {
    __asm volatile(".option arch, +zicsr\n"
                   "mv a3, ra\n"
                   "csrr a0, mcause\n"
                   "csrr a1, mepc\n"
                   "csrr a2, mtval\n"
                   "la sp, tether_fault_stack_top\n"
                   "lw sp, 0(sp)\n"
                   "j tether_trap_report\n");
}

void tether_trap_report(uint32_t mcause, uint32_t mepc, uint32_t mtval, uint32_t ra) {
    static const char *const kinds[] = {"instruction address misaligned",
                                        "instruction access fault",
                                        "illegal instruction",
                                        "breakpoint",
                                        "load address misaligned",
                                        "load access fault",
                                        "store address misaligned",
                                        "store access fault"};
    static char detail[64];
    uint32_t code = mcause & 0x7FFFFFFFu;
    tether_fault_info info = {
        .kind = (mcause & 0x80000000u)                ? "unexpected interrupt"
                : code < sizeof kinds / sizeof *kinds ? kinds[code]
                                                      : "trap",
        .pc = mepc,
        .lr = ra,
    };
    tether_format(detail, sizeof detail, "mcause=0x%08x mtval=0x%08x", (unsigned)mcause,
                  (unsigned)mtval);
    info.detail = detail;
    tether_mcu_fault(&info);
}

/* ---- identity, reset ---- */

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
    __asm volatile("fence rw, rw" ::: "memory");
    *(volatile uint32_t *)(uintptr_t)BOARD_RESET_ADDR = BOARD_RESET_VALUE;
    for (;;) {
    }
}

uintptr_t tether_board_stack_pointer(void) {
    uintptr_t sp;
    __asm volatile("mv %0, sp" : "=r"(sp));
    return sp;
}

/* Fills the board-independent part of the info and counts the boot. */
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
}
