/*
 * tether crt, POSIX platform: hook implementations and running a call on a dedicated stack.
 *
 * Linking tether_crt_posix gives every hook of tether/crt/platform.h (CLOCK_MONOTONIC time, the
 * TSC-free cycle counter = nanoseconds, abort(), stderr logging). They are weak symbols: a test or
 * an embedder may define its own.
 *
 * tether_posix_call_on_stack runs fn(arg) on a caller-provided stack that was painted just before,
 * so the bytes the call touched can be measured afterwards (the stack high-water mark that tetherd
 * returns with every CPU call). The stack memory is owned by the caller, must be 16-byte aligned
 * and at least TETHER_POSIX_MIN_STACK bytes, and must not be in use by another call. Works under
 * AddressSanitizer (fiber switches are annotated).
 */
#ifndef TETHER_CRT_POSIX_H
#define TETHER_CRT_POSIX_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TETHER_POSIX_MIN_STACK (16 * 1024)

/* Runs fn(arg) on [stack, stack+size). On success *used_bytes (if not NULL) receives the bytes
 * of the stack the call touched, including the few hundred bytes of the switch itself. */
int tether_posix_call_on_stack(void *stack, size_t size, void (*fn)(void *), void *arg,
                               size_t *used_bytes);

/* A dedicated call stack that stays painted between calls. The first call paints all of it;
 * every later call repaints only the bytes the previous call touched, so the cost of a call's
 * measurement follows its own stack use rather than the stack's size (tetherd's default call
 * stack is 256 KiB). The owner keeps the memory (16-byte aligned, >= TETHER_POSIX_MIN_STACK)
 * and must not write it between calls, or a later measurement could under-report. */
typedef struct tether_posix_call_stack {
    void *base;
    size_t size;
    size_t dirty;           /* top bytes that may no longer hold the pattern; size until the
                               first paint */
    bool guarded;           /* tether_posix_call_stack_guard(cs, true) */
    size_t guard;           /* bytes from the bottom that are PROT_NONE now (whole pages) */
    volatile int guard_hit; /* the running call went below the guard */
} tether_posix_call_stack;

/* Checks and records the region; nothing is painted yet. */
int tether_posix_call_stack_init(tether_posix_call_stack *cs, void *base, size_t size);

/* A guard makes a call's measurement cost follow its own use rather than the stack's size:
 * after each call the whole pages below its high-water mark are made PROT_NONE, and the next
 * call that stays above them is measured by scanning only the pages above. A call that goes
 * deeper faults once: the owner's SIGSEGV handler (SA_SIGINFO, on an alternate stack, not
 * SA_RESETHAND) must call tether_posix_call_stack_fault first and return when it says true; the
 * guard is lifted, the access retried, and the whole stack scanned after the call. The stack
 * must be whole pages (mmap it). on = false lifts it (before the memory is freed). */
int tether_posix_call_stack_guard(tether_posix_call_stack *cs, bool on);
bool tether_posix_call_stack_fault(tether_posix_call_stack *cs, const void *addr);

/* As tether_posix_call_on_stack, on cs, repainting only what is dirty. */
int tether_posix_call_on(tether_posix_call_stack *cs, void (*fn)(void *), void *arg,
                         size_t *used_bytes);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_CRT_POSIX_H */
