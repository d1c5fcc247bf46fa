/*
 * tether crt: stack high-water measurement by painting.
 *
 * Fill a stack region with a known 32-bit pattern before a call, then after the call count how
 * much of it was overwritten. Stacks grow down on every target tether supports (Arm, x86-64,
 * AArch64), so the untouched part is the low end of the region and the used part is measured
 * from the top. The result is a lower bound on real use only if a callee wrote the pattern
 * value itself at the deepest point, which the 32-bit pattern makes unlikely.
 *
 * Used by MCU firmware on the free part of the main stack and by tetherd on the dedicated stack
 * each CPU call runs on (see tether/crt_posix.h).
 */
#ifndef TETHER_CRT_STACK_H
#define TETHER_CRT_STACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TETHER_STACK_PAINT 0x5AC3E1D2u

/* Paints [base, base+size) with the pattern (base rounded up, size rounded down to words). */
void tether_stack_paint(void *base, size_t size);

/* Paints only the top `dirty` bytes of [base, base+size) (all of it when dirty >= size): after
 * tether_stack_used returned `dirty` for a painted region, this restores the whole region to the
 * pattern in time proportional to what the call used. */
void tether_stack_repaint(void *base, size_t size, size_t dirty);

/* Bytes at the top of [base, base+size) that no longer hold the pattern: the deepest point a
 * downward-growing stack reached since it was painted. */
size_t tether_stack_used(const void *base, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_CRT_STACK_H */
