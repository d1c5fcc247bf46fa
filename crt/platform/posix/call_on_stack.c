/*
 * Runs a function on a dedicated, painted stack with ucontext and measures how much of it the
 * call used. Under AddressSanitizer each switch is announced with the fiber API so that ASan
 * tracks the right stack bounds.
 * Invariant: the caller's context is restored before returning, whatever fn did (short of a
 * longjmp out of it or a crash, which end the process or session anyway).
 */
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

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

typedef struct trampoline_args {
    void (*fn)(void *);
    void *arg;
    ucontext_t caller;
    ucontext_t callee;
#ifdef TETHER_ASAN
    void *fake_stack;
    const void *caller_bottom;
    size_t caller_size;
#endif
} trampoline_args;

/* makecontext passes int arguments only, so the pointer travels in two halves. */
static void trampoline(unsigned int hi, unsigned int lo) {
    trampoline_args *t = (trampoline_args *)(((uintptr_t)hi << 16 << 16) | (uintptr_t)lo);
#ifdef TETHER_ASAN
    __sanitizer_finish_switch_fiber(NULL, &t->caller_bottom, &t->caller_size);
#endif
    t->fn(t->arg);
#ifdef TETHER_ASAN
    __sanitizer_start_switch_fiber(NULL, t->caller_bottom, t->caller_size);
#endif
    /* returning resumes uc_link, the caller */
}

/* tether_stack_used at libc's memcmp speed: whole 4 KiB chunks from the bottom are compared
 * with a painted chunk, the first one that differs is scanned word by word by the crt. Same
 * result as tether_stack_used (the stack is 16-byte aligned, so chunks are whole words). */
#define SCAN_CHUNK 4096
static size_t stack_used_fast(const uint8_t *stack, size_t size) {
    static uint32_t painted[SCAN_CHUNK / 4];
    if (painted[0] != TETHER_STACK_PAINT) {
        tether_stack_paint(painted, sizeof painted);
    }
    size_t off = 0;
    while (size - off > SCAN_CHUNK && memcmp(stack + off, painted, SCAN_CHUNK) == 0) {
        off += SCAN_CHUNK;
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
    cs->base = base;
    cs->size = size;
    cs->dirty = size;
    return check_stack(base, size);
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
    void *stack = cs->base;
    size_t size = cs->size;
    /* Paint first: makecontext writes the initial frame at the top of the new stack. */
    tether_stack_repaint(stack, size, cs->dirty);
    cs->dirty = size; /* until the measurement below says otherwise */
    trampoline_args t;
    memset(&t, 0, sizeof t);
    t.fn = fn;
    t.arg = arg;
    if (getcontext(&t.callee) != 0) {
        return tether_set_error(TETHER_ERR_INTERNAL, "getcontext failed");
    }
    t.callee.uc_stack.ss_sp = stack;
    t.callee.uc_stack.ss_size = size;
    t.callee.uc_link = &t.caller;
    uintptr_t p = (uintptr_t)&t;
    makecontext(&t.callee, (void (*)(void))trampoline, 2, (unsigned int)(p >> 16 >> 16),
                (unsigned int)(p & 0xffffffffu));
#ifdef TETHER_ASAN
    __sanitizer_start_switch_fiber(&t.fake_stack, stack, size);
#endif
    if (swapcontext(&t.caller, &t.callee) != 0) {
        return tether_set_error(TETHER_ERR_INTERNAL, "swapcontext failed");
    }
#ifdef TETHER_ASAN
    __sanitizer_finish_switch_fiber(t.fake_stack, NULL, NULL);
#endif
    cs->dirty = stack_used_fast(stack, size);
    if (used_bytes != NULL) {
        *used_bytes = cs->dirty;
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
