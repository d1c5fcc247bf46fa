/*
 * Runs a function on a dedicated, painted stack and measures how much of it the call used.
 *
 * The switch: on x86-64 and AArch64 a few instructions move the stack pointer, call fn(arg)
 * and move it back (tether__posix_switch below); no system call, no signal mask saved or
 * restored. Elsewhere ucontext does it (getcontext/swapcontext/setcontext: a sigprocmask each).
 * Under AddressSanitizer each switch is announced with the fiber API so that ASan tracks the
 * right stack bounds.
 *
 * The measurement: the bytes from the bottom up to the first one that lost the paint pattern
 * are what the call never touched. With a guard (tether_posix_call_stack_guard) the pages wholly
 * below the last high-water mark are PROT_NONE: a call that stays above them is measured by
 * scanning only the pages above (its cost follows the call's own use, not the stack's size);
 * one that goes deeper faults once, the fault lifts the guard (tether_posix_call_stack_fault,
 * from the owner's SIGSEGV handler), the whole stack is scanned and the guard set again below
 * the new mark.
 *
 * Invariants: the caller's stack pointer and callee-saved registers are restored before
 * returning, whatever fn did (short of a longjmp out of it or a crash, which end the process or
 * session anyway); guarded pages hold the paint and are never written while guarded; a
 * measurement never under-reports what the call wrote.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "tether/crt/error.h"
#include "tether/crt/stack.h"
#include "tether/crt_posix.h"

#if defined(__SANITIZE_ADDRESS__)
#define TETHER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TETHER_ASAN 1
#endif
#endif

#ifdef TETHER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__x86_64__) && defined(__ELF__)
#define TETHER_ASM_SWITCH 1
/* void tether__posix_switch(void (*fn)(void *), void *arg, void *top): runs fn(arg) with the
 * stack pointer at top (16-byte aligned), then returns on the caller's stack. rbp holds the
 * caller's stack pointer across the call (callee-saved, so fn keeps it). */
__asm__(".text\n"
        ".globl tether__posix_switch\n"
        ".hidden tether__posix_switch\n"
        ".type tether__posix_switch, @function\n"
        "tether__posix_switch:\n"
        "    .cfi_startproc\n"
        "    pushq %rbp\n"
        "    .cfi_def_cfa_offset 16\n"
        "    .cfi_offset %rbp, -16\n"
        "    movq %rsp, %rbp\n"
        "    .cfi_def_cfa_register %rbp\n"
        "    movq %rdx, %rsp\n"
        "    movq %rdi, %rax\n"
        "    movq %rsi, %rdi\n"
        "    callq *%rax\n"
        "    movq %rbp, %rsp\n"
        "    popq %rbp\n"
        "    .cfi_def_cfa %rsp, 8\n"
        "    retq\n"
        "    .cfi_endproc\n"
        ".size tether__posix_switch, .-tether__posix_switch\n");
#elif defined(__aarch64__) && defined(__ELF__)
#define TETHER_ASM_SWITCH 1
/* The same on AArch64: x29 (frame pointer, callee-saved) holds the caller's sp. */
__asm__(".text\n"
        ".globl tether__posix_switch\n"
        ".hidden tether__posix_switch\n"
        ".type tether__posix_switch, %function\n"
        "tether__posix_switch:\n"
        "    .cfi_startproc\n"
        "    stp x29, x30, [sp, #-16]!\n"
        "    .cfi_def_cfa_offset 16\n"
        "    .cfi_offset x29, -16\n"
        "    .cfi_offset x30, -8\n"
        "    mov x29, sp\n"
        "    .cfi_def_cfa_register x29\n"
        "    mov sp, x2\n"
        "    mov x3, x0\n"
        "    mov x0, x1\n"
        "    blr x3\n"
        "    mov sp, x29\n"
        "    .cfi_def_cfa sp, 16\n"
        "    ldp x29, x30, [sp], #16\n"
        "    .cfi_def_cfa_offset 0\n"
        "    ret\n"
        "    .cfi_endproc\n"
        ".size tether__posix_switch, .-tether__posix_switch\n");
#endif

#ifdef TETHER_ASM_SWITCH
void tether__posix_switch(void (*fn)(void *), void *arg, void *top);
#endif

typedef struct trampoline_args {
    void (*fn)(void *);
    void *arg;
    ucontext_t *caller;
#ifdef TETHER_ASAN
    void *fake_stack;
    const void *caller_bottom;
    size_t caller_size;
#endif
} trampoline_args;

/* Runs on the call stack: announces the switch to ASan and calls fn. */
static void on_call_stack(void *p) {
    trampoline_args *t = (trampoline_args *)p;
#ifdef TETHER_ASAN
    __sanitizer_finish_switch_fiber(NULL, &t->caller_bottom, &t->caller_size);
#endif
    t->fn(t->arg);
#ifdef TETHER_ASAN
    __sanitizer_start_switch_fiber(NULL, t->caller_bottom, t->caller_size);
#endif
}

#ifndef TETHER_ASM_SWITCH
/* makecontext passes int arguments only, so the pointer travels in two halves. */
static void trampoline(unsigned int hi, unsigned int lo) {
    on_call_stack((void *)(((uintptr_t)hi << 16 << 16) | (uintptr_t)lo));
    /* returning resumes uc_link, the caller */
}
#endif

/* Switches to [stack, stack+size), runs t->fn there and comes back. */
static int switch_and_call(trampoline_args *t, void *stack, size_t size) {
#ifdef TETHER_ASAN
    __sanitizer_start_switch_fiber(&t->fake_stack, stack, size);
#endif
#ifdef TETHER_ASM_SWITCH
    tether__posix_switch(on_call_stack, t, (uint8_t *)stack + size);
#else
    ucontext_t caller, callee;
    if (getcontext(&callee) != 0) {
        return tether_set_error(TETHER_ERR_INTERNAL, "getcontext failed");
    }
    callee.uc_stack.ss_sp = stack;
    callee.uc_stack.ss_size = size;
    callee.uc_link = &caller;
    t->caller = &caller;
    uintptr_t p = (uintptr_t)t;
    makecontext(&callee, (void (*)(void))trampoline, 2, (unsigned int)(p >> 16 >> 16),
                (unsigned int)(p & 0xffffffffu));
    if (swapcontext(&caller, &callee) != 0) {
        return tether_set_error(TETHER_ERR_INTERNAL, "swapcontext failed");
    }
#endif
#ifdef TETHER_ASAN
    __sanitizer_finish_switch_fiber(t->fake_stack, NULL, NULL);
#endif
    return TETHER_OK;
}

/* tether_stack_used at libc's memcmp speed: whole 4 KiB chunks from the bottom are compared
 * with a painted chunk, then 256-byte pieces of the first one that differs, and only the first
 * piece that differs is scanned word by word by the crt (a short call's scan, once per CALL, is
 * then a few memcmp calls and at most 64 words). Same result as tether_stack_used (the stack is
 * 16-byte aligned, so chunks and pieces are whole words). */
#define SCAN_CHUNK 4096
#define SCAN_PIECE 256
static size_t stack_used_fast(const uint8_t *stack, size_t size) {
    static uint32_t painted[SCAN_CHUNK / 4];
    if (painted[0] != TETHER_STACK_PAINT) {
        tether_stack_paint(painted, sizeof painted);
    }
    size_t off = 0;
    while (size - off > SCAN_CHUNK && memcmp(stack + off, painted, SCAN_CHUNK) == 0) {
        off += SCAN_CHUNK;
    }
    while (size - off > SCAN_PIECE && memcmp(stack + off, painted, SCAN_PIECE) == 0) {
        off += SCAN_PIECE;
    }
    return tether_stack_used(stack + off, size - off);
}

static int check_stack(const void *stack, size_t size) {
    if (stack == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "call on stack: null stack");
    }
    if (((uintptr_t)stack & 15u) != 0) {
        return tether_set_error(TETHER_ERR_ALIGNMENT, "call stack %p is not 16-byte aligned",
                                stack);
    }
    if (size < TETHER_POSIX_MIN_STACK) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "call stack of %zu bytes is below the minimum of %d", size,
                                TETHER_POSIX_MIN_STACK);
    }
    return TETHER_OK;
}

int tether_posix_call_stack_init(tether_posix_call_stack *cs, void *base, size_t size) {
    if (cs == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "call stack: null argument");
    }
    memset(cs, 0, sizeof *cs);
    cs->base = base;
    cs->size = size;
    cs->dirty = size;
    return check_stack(base, size);
}

/* The page size, asked of the system once (sysconf is a libc call on every call otherwise). */
static size_t page_size(void) {
    static size_t cached;
    if (cached == 0) {
        long p = sysconf(_SC_PAGESIZE);
        cached = p > 0 ? (size_t)p : 4096u;
    }
    return cached;
}

int tether_posix_call_stack_guard(tether_posix_call_stack *cs, bool on) {
    if (cs == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "call stack guard: null argument");
    }
    size_t pg = page_size();
    if (on && ((uintptr_t)cs->base % pg != 0 || cs->size % pg != 0)) {
        return tether_set_error(TETHER_ERR_ALIGNMENT,
                                "call stack guard: the stack (%p, %zu bytes) is not whole pages",
                                cs->base, cs->size);
    }
    if (!on && cs->guard > 0 && mprotect(cs->base, cs->guard, PROT_READ | PROT_WRITE) != 0) {
        return tether_set_error(TETHER_ERR_INTERNAL, "call stack guard: mprotect failed");
    }
    cs->guarded = on;
    cs->guard = 0;
    cs->guard_hit = 0;
    return TETHER_OK;
}

bool tether_posix_call_stack_fault(tether_posix_call_stack *cs, const void *addr) {
    if (cs == NULL || cs->guard == 0) {
        return false;
    }
    const uint8_t *a = (const uint8_t *)addr, *b = (const uint8_t *)cs->base;
    if (a < b || a >= b + cs->guard) {
        return false;
    }
    /* async-signal-safe: one mprotect; the faulting access is retried when the handler returns */
    if (mprotect(cs->base, cs->guard, PROT_READ | PROT_WRITE) != 0) {
        return false;
    }
    cs->guard = 0;
    cs->guard_hit = 1;
    return true;
}

int tether_posix_call_on(tether_posix_call_stack *cs, void (*fn)(void *), void *arg,
                         size_t *used_bytes) {
    if (cs == NULL || fn == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "call on stack: null argument");
    }
    int rc = check_stack(cs->base, cs->size);
    if (rc != TETHER_OK) {
        return rc;
    }
    uint8_t *stack = (uint8_t *)cs->base;
    size_t size = cs->size;
    /* Paint the top that the previous call dirtied (guarded pages are below it and painted). */
    tether_stack_repaint(stack, size, cs->dirty);
    cs->dirty = size; /* until the measurement below says otherwise */
    cs->guard_hit = 0;
    trampoline_args t;
    memset(&t, 0, sizeof t);
    t.fn = fn;
    t.arg = arg;
    rc = switch_and_call(&t, stack, size);
    if (rc != TETHER_OK) {
        return rc;
    }
    /* below an intact guard nothing was touched: scan from its top */
    size_t from = cs->guard_hit ? 0 : cs->guard;
    size_t used = stack_used_fast(stack + from, size - from);
    cs->dirty = used;
    if (cs->guarded) {
        /* guard every whole page below the page the call reached (painted, untouched): again
         * after a fault, and higher when calls now stay well above the guard (8 pages) */
        size_t pg = page_size();
        size_t below = (size - used) / pg * pg;
        bool refresh = cs->guard_hit || cs->guard == 0;
        bool raise = !refresh && below > cs->guard + 8 * pg;
        if ((refresh || raise) && below >= pg) {
            uint8_t *from_p = stack + (raise ? cs->guard : 0);
            if (mprotect(from_p, below - (size_t)(from_p - stack), PROT_NONE) == 0) {
                cs->guard = below;
            }
        }
    }
    if (used_bytes != NULL) {
        *used_bytes = used;
    }
    return TETHER_OK;
}

int tether_posix_call_on_stack(void *stack, size_t size, void (*fn)(void *), void *arg,
                               size_t *used_bytes) {
    if (fn == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "call on stack: null argument");
    }
    tether_posix_call_stack cs;
    int rc = tether_posix_call_stack_init(&cs, stack, size);
    return rc != TETHER_OK ? rc : tether_posix_call_on(&cs, fn, arg, used_bytes);
}
