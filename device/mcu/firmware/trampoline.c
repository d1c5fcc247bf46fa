/*
 * The call trampoline: calls a function with up to TETHER_MCU_MAX_CALL_WORDS 32-bit argument
 * words (AAPCS: words 0..3 in r0..r3, the rest on an 8-byte aligned stack; RISC-V ilp32: words
 * 0..7 in a0..a7, the rest on a 16-byte aligned stack) and, optionally, paints the stack right
 * up to the stack pointer the callee starts with.
 *
 * What must stay true: the Arm trampoline is Thumb-1 code (runs on every Cortex-M, ARMv6-M
 * included), the RISC-V one RV32I(+Zicsr); `words` always holds at least 8 readable entries; the
 * stack pointer recorded in sp_at_call is exactly the SP at the `blx`, so
 * tether_stack_used(paint_from, sp_at_call - paint_from) is the callee's own stack use (its frames,
 * not the caller's argument area). Interrupts are masked only while painting.
 */
#include <stdint.h>

#include "firmware.h"

_Static_assert(__builtin_offsetof(tether_mcu_callframe, fn) == 0, "asm offsets");
_Static_assert(__builtin_offsetof(tether_mcu_callframe, words) == 4, "asm offsets");
_Static_assert(__builtin_offsetof(tether_mcu_callframe, nwords) == 8, "asm offsets");
_Static_assert(__builtin_offsetof(tether_mcu_callframe, paint_from) == 12, "asm offsets");
_Static_assert(__builtin_offsetof(tether_mcu_callframe, sp_at_call) == 16, "asm offsets");
_Static_assert(__builtin_offsetof(tether_mcu_callframe, ret) == 20, "asm offsets");

_Static_assert(TETHER_MCU_MAX_CALL_WORDS >= 8, "the trampoline reads 8 words");

#if defined(__riscv)
__attribute__((naked)) void tether__mcu_trampoline(__attribute__((unused))
                                                   tether_mcu_callframe *cf) {
    __asm volatile(".option push\n"
                   ".option arch, +zicsr\n"
                   "addi sp, sp, -16\n"
                   "sw ra, 12(sp)\n"
                   "sw s0, 8(sp)\n"
                   "sw s1, 4(sp)\n"
                   "mv s0, a0\n"    /* s0 = cf */
                   "mv s1, sp\n"    /* s1 = SP to restore */
                   "lw t0, 8(s0)\n" /* nwords */
                   "addi t0, t0, -8\n"
                   "bgtz t0, 1f\n"
                   "li t0, 0\n"
                   "1:\n"
                   "slli t0, t0, 2\n" /* t0 = bytes of stack arguments */
                   "sub t1, sp, t0\n"
                   "andi t1, t1, -16\n" /* 16-byte aligned (psABI) */
                   "mv sp, t1\n"
                   "lw t2, 4(s0)\n"
                   "addi t2, t2, 32\n" /* &words[8] */
                   "li t3, 0\n"
                   "2:\n"
                   "bge t3, t0, 3f\n"
                   "add t4, t2, t3\n"
                   "lw t5, 0(t4)\n"
                   "add t4, sp, t3\n"
                   "sw t5, 0(t4)\n"
                   "addi t3, t3, 4\n"
                   "j 2b\n"
                   "3:\n"
                   "lw t0, 12(s0)\n" /* paint_from (0 = no painting) */
                   "beqz t0, 5f\n"
                   "li t1, 0x5AC3E1D2\n"
                   "mv t2, sp\n"
                   "csrci mstatus, 8\n"
                   "4:\n"
                   "bgeu t0, t2, 6f\n"
                   "sw t1, 0(t0)\n"
                   "addi t0, t0, 4\n"
                   "j 4b\n"
                   "6:\n"
                   "csrsi mstatus, 8\n"
                   "5:\n"
                   "sw sp, 16(s0)\n" /* sp_at_call */
                   "lw t0, 0(s0)\n"
                   "lw t6, 4(s0)\n"
                   "lw a0, 0(t6)\n"
                   "lw a1, 4(t6)\n"
                   "lw a2, 8(t6)\n"
                   "lw a3, 12(t6)\n"
                   "lw a4, 16(t6)\n"
                   "lw a5, 20(t6)\n"
                   "lw a6, 24(t6)\n"
                   "lw a7, 28(t6)\n"
                   "jalr ra, t0, 0\n"
                   "sw a0, 20(s0)\n"
                   "mv sp, s1\n"
                   "lw ra, 12(sp)\n"
                   "lw s0, 8(sp)\n"
                   "lw s1, 4(sp)\n"
                   "addi sp, sp, 16\n"
                   "ret\n"
                   ".option pop\n");
}
#else
__attribute__((naked)) void tether__mcu_trampoline(__attribute__((unused))
                                                   tether_mcu_callframe *cf) {
    __asm volatile(".syntax unified\n"
                   "push {r4, r5, r6, r7, lr}\n"
                   "mov r4, r0\n"       /* r4 = cf */
                   "mov r7, sp\n"       /* r7 = SP to restore */
                   "ldr r2, [r4, #8]\n" /* nwords */
                   "subs r2, r2, #4\n"
                   "bgt 1f\n"
                   "movs r2, #0\n"
                   "1:\n"
                   "lsls r2, r2, #2\n" /* r2 = bytes of stack arguments */
                   "mov r3, sp\n"
                   "subs r3, r3, r2\n"
                   "lsrs r3, r3, #3\n"
                   "lsls r3, r3, #3\n" /* 8-byte aligned (AAPCS) */
                   "mov sp, r3\n"
                   "ldr r1, [r4, #4]\n"
                   "adds r1, r1, #16\n" /* &words[4] */
                   "movs r0, #0\n"
                   "2:\n"
                   "cmp r0, r2\n"
                   "bge 3f\n"
                   "ldr r5, [r1, r0]\n"
                   "str r5, [r3, r0]\n"
                   "adds r0, r0, #4\n"
                   "b 2b\n"
                   "3:\n"
                   "ldr r0, [r4, #12]\n" /* paint_from (0 = no painting) */
                   "cmp r0, #0\n"
                   "beq 5f\n"
                   "ldr r1, 9f\n"
                   "mov r2, sp\n"
                   "cpsid i\n"
                   "4:\n"
                   "cmp r0, r2\n"
                   "bhs 6f\n"
                   "str r1, [r0]\n"
                   "adds r0, r0, #4\n"
                   "b 4b\n"
                   "6:\n"
                   "cpsie i\n"
                   "5:\n"
                   "mov r0, sp\n"
                   "str r0, [r4, #16]\n"
                   "ldr r5, [r4, #0]\n"
                   "ldr r6, [r4, #4]\n"
                   "ldr r0, [r6, #0]\n"
                   "ldr r1, [r6, #4]\n"
                   "ldr r2, [r6, #8]\n"
                   "ldr r3, [r6, #12]\n"
                   "blx r5\n"
                   "str r0, [r4, #20]\n"
                   "mov sp, r7\n"
                   "pop {r4, r5, r6, r7, pc}\n"
                   ".align 2\n"
                   "9: .word 0x5AC3E1D2\n");
}
#endif
