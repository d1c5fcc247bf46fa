/*
 * tether MCU firmware: the interface between the board-independent firmware (this folder) and a
 * board folder (device/mcu/boards/<name>/).
 *
 * A board supplies startup code and the vector table, a linker script that defines the memory
 * regions below, a UART driver, a free-running cycle counter and the crt time hooks
 * (tether_platform_time_ns/_cycles/_cycles_hz). The firmware supplies tether_mcu_main (called once
 * by the board's reset handler after .data/.bss are set up and tether_board_init ran) and
 * tether_mcu_fault (called by the board's fault handlers; never returns).
 *
 * Ownership: everything here is static; nothing allocates. The info struct returned by
 * tether_board_get_info lives for the whole run.
 */
#ifndef TETHER_MCU_BOARD_H
#define TETHER_MCU_BOARD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A memory region NDArrays are allocated in: a pool named in HELLO (ALLOC's pool). The board's
 * linker script defines each region; pools[0] is the default pool (the heap below). */
typedef struct tether_board_pool {
    const char *name; /* e.g. "sram", "psram"; a valid pool name */
    uintptr_t base;
    uint32_t size;
} tether_board_pool;

#define TETHER_BOARD_MAX_POOLS 4

/* Memory regions and identity of a board (all addresses are CPU addresses). */
typedef struct tether_board_info {
    const char *name;     /* board name, e.g. "mps2-an385" */
    const char *cpu;      /* e.g. "cortex-m3" */
    const char *triple;   /* e.g. "thumbv7m-none-eabi" */
    const char *features; /* HELLO cpu_features: "dsp fp.sp hard-float" (boards.txt); "" = none */
    uint32_t clock_hz;    /* CPU clock, also the rate of tether_platform_cycles */
    uintptr_t ram_base;   /* all SRAM the firmware knows about */
    uint32_t ram_size;    /* bytes */
    uintptr_t heap_base;  /* static NDArray heap (tether_heap) */
    uint32_t heap_size;
    uintptr_t load_base; /* RAM load region for uploaded code */
    uint32_t load_size;
    uintptr_t stack_base; /* main stack: [stack_base, stack_base + stack_size), grows down */
    uint32_t stack_size;
    const tether_board_pool *pools; /* 1..TETHER_BOARD_MAX_POOLS; pools[0] = the heap */
    uint32_t npools;
} tether_board_info;

/* Registers of a fault, as captured by the board's fault handler. */
typedef struct tether_fault_info {
    const char *kind;   /* "HardFault", "MemManage", "BusFault", "UsageFault" */
    uint32_t pc;        /* stacked PC: the faulting instruction (or the next one) */
    uint32_t lr;        /* stacked LR */
    uint32_t psr;       /* stacked xPSR */
    uint32_t cfsr;      /* SCB->CFSR */
    uint32_t hfsr;      /* SCB->HFSR */
    uint32_t mmfar;     /* SCB->MMFAR (valid when CFSR.MMARVALID) */
    uint32_t bfar;      /* SCB->BFAR (valid when CFSR.BFARVALID) */
    const char *detail; /* set by cores without the Arm registers above: the text that replaces
                           them in the report ("mcause=0x00000002 mtval=0x..."); else NULL */
} tether_fault_info;

/* Board hooks. */
void tether_board_init(void);
const tether_board_info *tether_board_get_info(void);
/* Sends n bytes; returns when the last byte is handed to the UART. Safe in fault handlers. */
void tether_board_uart_write(const void *buf, size_t n);
/* Next received byte, or -1 when none is waiting. Never blocks. */
int tether_board_uart_getc(void);
/* Waits until a byte may have arrived (low-power wait or no-op). */
void tether_board_wait(void);
/* Bytes lost because the receive ring was full or the UART overran (0 in normal operation). */
uint32_t tether_board_uart_lost(void);
/* Aligns the core to the cycle counter's tick before a measurement starts, so that repeated
 * measurements of the same code give the same count (see the board's comment). */
void tether_board_timing_sync(void);
/* Current stack pointer. */
uintptr_t tether_board_stack_pointer(void);
/* Boot counter kept across warm resets (0 on power-up, +1 per reset). */
uint32_t tether_board_boot_count(void);
/* Resets the whole system. */
void tether_board_reset(void) __attribute__((noreturn));

/* Firmware hooks (device/mcu/firmware). */
void tether_mcu_main(void) __attribute__((noreturn));
void tether_mcu_fault(const tether_fault_info *info) __attribute__((noreturn));

#ifdef __cplusplus
}
#endif
#endif /* TETHER_MCU_BOARD_H */
