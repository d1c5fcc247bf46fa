/*
 * tether crt: allocators over caller-provided memory. Nothing here calls malloc.
 *
 * tether_stack_alloc  LIFO ("workspace") allocator: bump a pointer, free in reverse order.
 *                     Used for operator scratch space, where lifetimes nest. Tracks the
 *                     high-water mark; can check that frees come in LIFO order.
 * tether_heap         first-fit allocator with block splitting and coalescing of free
 *                     neighbours. Used for NDArrays on MCUs, where frees come in any order.
 *
 * Ownership: the caller owns the memory region and the allocator struct; both must outlive every
 * pointer handed out. Neither allocator is thread-safe. Failures never abort: they return a
 * status and set the last error (tether_last_error) with the request and the space left.
 */
#ifndef TETHER_CRT_ALLOC_H
#define TETHER_CRT_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TETHER_DEFAULT_ALIGNMENT 16

/* ---- LIFO workspace allocator ---- */

typedef struct tether_stack_alloc {
    uint8_t *base;     /* start of the region (aligned to `alignment`) */
    size_t size;       /* bytes in the region */
    size_t top;        /* bytes in use (payloads + one link unit per block) */
    size_t newest;     /* payload offset of the newest live block (valid when count > 0) */
    size_t high_water; /* largest `top` seen since init or tether_stack_alloc_reset_peak */
    size_t alignment;  /* every block starts at a multiple of this (power of two) */
    bool check_lifo;   /* when true, frees out of LIFO order fail with TETHER_ERR_STATE */
    uint32_t count;    /* live blocks */
} tether_stack_alloc;

/* Initialises over [base, base+size). alignment must be a power of two (0 = default 16); base
 * must already be aligned to it (TETHER_ERR_ALIGNMENT otherwise: an unaligned pool usually means
 * a linker-script or declaration mistake that must not be papered over). */
int tether_stack_alloc_init(tether_stack_alloc *a, void *base, size_t size, size_t alignment,
                            bool check_lifo);

/* Allocates `size` bytes, rounded up to the alignment, plus one alignment unit (at least
 * sizeof(size_t)) of bookkeeping that links the block to the one before it. Size 0 gives a
 * valid, distinct block. */
int tether_stack_alloc_push(tether_stack_alloc *a, size_t size, void **out);

/* Frees the block at `ptr`, which must be the most recent live block when check_lifo is set.
 * Without the check, freeing a block also frees every block allocated after it. */
int tether_stack_alloc_pop(tether_stack_alloc *a, void *ptr);

/* Frees everything (the high-water mark is kept). */
void tether_stack_alloc_reset(tether_stack_alloc *a);
void tether_stack_alloc_reset_peak(tether_stack_alloc *a);

/* ---- first-fit heap with coalescing ---- */

typedef struct tether_heap {
    uint8_t *base;
    size_t size;
    size_t alignment;
    size_t used;       /* bytes in live blocks, headers included */
    size_t high_water; /* largest `used` seen */
    uint32_t count;    /* live blocks */
} tether_heap;

/* Initialises over [base, base+size); same alignment rules as the stack allocator. The region
 * must hold at least one header plus one aligned unit. */
int tether_heap_init(tether_heap *h, void *base, size_t size, size_t alignment);

/* Allocates `size` bytes (0 is rejected) aligned to the heap's alignment, first fit. */
int tether_heap_alloc(tether_heap *h, size_t size, void **out);

/* Frees a block from this heap; neighbouring free blocks merge. A pointer not handed out by this
 * heap, or a double free, gives TETHER_ERR_STATE and changes nothing. */
int tether_heap_free(tether_heap *h, void *ptr);

/* Largest single allocation that would currently succeed. */
size_t tether_heap_largest_free(const tether_heap *h);

/* Walks every block and checks the heap's invariants (headers intact, blocks tile the region,
 * no two adjacent free blocks, `used` consistent). TETHER_OK or TETHER_ERR_INTERNAL. */
int tether_heap_check(const tether_heap *h);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_CRT_ALLOC_H */
