/*
 * tether MCU firmware internals shared by the firmware's .c files (not a public API).
 *
 * Sizes that the host must know are reported in HELLO and documented in docs/mcu.md:
 * TETHER_MCU_MAX_FRAME is both the UART receive buffer and the largest reply the firmware sends.
 */
#ifndef TETHER_MCU_FIRMWARE_H
#define TETHER_MCU_FIRMWARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "board.h"
#include "tether/crt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Receive buffer (largest request payload) and transmit buffer (largest reply payload); at
 * least TETHER_RPC_MIN_FRAME. A board may override these sizes (board.cmake,
 * TETHER_BOARD_DEFINES), e.g. a 16 KiB-RAM part would use 512 and 8. */
#ifndef TETHER_MCU_MAX_FRAME
#define TETHER_MCU_MAX_FRAME 1024u
#endif
/* NDArrays alive at once. */
#ifndef TETHER_MCU_MAX_ARRAYS
#define TETHER_MCU_MAX_ARRAYS 32u
#endif
/* Words the trampoline passes: 24 unpacked pointers, or the 6 packed-ABI parameters. */
#define TETHER_MCU_MAX_CALL_WORDS 24u
/* Bytes kept between the C-side stack painting and the caller's SP (painted by the trampoline). */
#define TETHER_MCU_PAINT_GAP 128u

/* Interrupts off/on around the stack painting (the core's own instructions). */
static inline void tether__mcu_irq_off(void) {
#if defined(__riscv)
    __asm volatile(".option push\n.option arch, +zicsr\ncsrci mstatus, 8\n.option pop" ::
                       : "memory");
#else
    __asm volatile("cpsid i" ::: "memory");
#endif
}
static inline void tether__mcu_irq_on(void) {
#if defined(__riscv)
    __asm volatile(".option push\n.option arch, +zicsr\ncsrsi mstatus, 8\n.option pop" ::
                       : "memory");
#else
    __asm volatile("cpsie i" ::: "memory");
#endif
}

/* Argument block of tether__mcu_trampoline (offsets are used by its assembly). */
typedef struct tether_mcu_callframe {
    void (*fn)(void);      /* function address (Thumb: bit 0 set) */
    const uint32_t *words; /* argument words, at least 8 readable entries */
    uint32_t nwords;
    uintptr_t paint_from; /* paint [paint_from, SP at call) first; 0 = no painting */
    uintptr_t sp_at_call; /* out: SP when the callee started */
    int32_t ret;          /* out: r0 on return */
} tether_mcu_callframe;

void tether__mcu_trampoline(tether_mcu_callframe *cf);

/* Profiling builds (profile.c): a measured CALL of cf (painted from stack_base) begins; it ended,
 * the most stack bytes a node used (0 when no profiling build ran). tether_mcu_profile_stack is
 * what the generated code calls (exports.def). */
void tether__mcu_profile_begin(const tether_mcu_callframe *cf, uintptr_t stack_base);
uint32_t tether__mcu_profile_end(void);
uint32_t tether_mcu_profile_stack(void);

/* System library (syslib.c): the firmware's built-in functions. */
extern const tether_func_registry tether_module_registry;

/* RAM upload (upload.c). */
typedef struct tether_mcu_image_header {
    uint32_t magic;      /* TETHER_MCU_IMAGE_MAGIC */
    uint32_t version;    /* TETHER_MCU_IMAGE_VERSION */
    uint32_t link_addr;  /* address the image was linked for (must equal the load region) */
    uint32_t image_size; /* bytes of the uploaded file, header included */
    uint32_t bss_start;  /* absolute address of .bss (zeroed by the device at LOAD_MODULE) */
    uint32_t bss_size;
    uint32_t registry; /* address of the module's tether_module_registry */
    uint32_t reserved; /* 0 */
} tether_mcu_image_header;

#define TETHER_MCU_IMAGE_MAGIC      0x52485454u /* "TTHR" in memory order */
#define TETHER_MCU_IMAGE_VERSION    1u
#define TETHER_MCU_MAX_MODULE_FUNCS 64u

/* Validates an image in the load region and returns its registry. Errors name the problem. */
int tether__mcu_image_load(const tether_board_info *board, uint32_t size,
                           const tether_func_registry **out);

/* Identity of the exported symbol table (exports.c; firmware.json "exports_id"). */
uint32_t tether__mcu_exports_id(void);

/* Sends one LOG notification (also used by tether_platform_log). */
void tether__mcu_send_log(tether_log_level level, const char *text);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_MCU_FIRMWARE_H */
