/*
 * The LIFO workspace allocator and the first-fit heap.
 *
 * Stack allocator invariants: every live block starts at base + k*alignment; `top` is the end of
 * the newest live block; each block records the previous top in a footer-free way by keeping the
 * block's own offset (the caller passes the pointer back), so pop(p) sets top = p - base.
 *
 * Heap invariants: blocks tile [base, base+size) exactly; each starts with a header of
 * `header_size(h)` bytes (a multiple of the alignment) holding its total size and the size of the
 * block before it; no two free blocks are adjacent (frees merge immediately); `used` is the sum
 * of live block sizes.
 */
#include <string.h>

#include "tether/crt/alloc.h"
#include "tether/crt/error.h"

static bool is_pow2(size_t v) {
    return v != 0 && (v & (v - 1)) == 0;
}

static size_t round_up(size_t v, size_t align) {
    return (v + align - 1) & ~(align - 1);
}

/* Validates base/size/alignment shared by both allocators; normalises alignment. */
static int check_region(const char *what, void *base, size_t size, size_t *alignment) {
    if (*alignment == 0) {
        *alignment = TETHER_DEFAULT_ALIGNMENT;
    }
    if (!is_pow2(*alignment)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s alignment %zu is not a power of two",
                                what, *alignment);
    }
    if (base == NULL && size > 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s region is null", what);
    }
    if (((uintptr_t)base & (*alignment - 1)) != 0) {
        return tether_set_error(TETHER_ERR_ALIGNMENT,
                                "%s base %p is not aligned to %zu bytes (off by %zu); align the "
                                "pool declaration or its linker section",
                                what, base, *alignment,
                                (size_t)((uintptr_t)base & (*alignment - 1)));
    }
    return TETHER_OK;
}

/* ---- LIFO workspace allocator ---- */

int tether_stack_alloc_init(tether_stack_alloc *a, void *base, size_t size, size_t alignment,
                            bool check_lifo) {
    if (a == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "workspace allocator is null");
    }
    memset(a, 0, sizeof *a);
    int rc = check_region("workspace", base, size, &alignment);
    if (rc != TETHER_OK) {
        return rc;
    }
    a->base = (uint8_t *)base;
    a->size = size;
    a->alignment = alignment;
    a->check_lifo = check_lifo;
    return TETHER_OK;
}

/* Each block is [link][payload]: the link (one alignment unit, at least a size_t) holds the
 * payload offset of the block allocated before it, so pops can walk back in LIFO order. */
static size_t link_size(const tether_stack_alloc *a) {
    return round_up(sizeof(size_t), a->alignment);
}

#define NO_BLOCK ((size_t)-1)

int tether_stack_alloc_push(tether_stack_alloc *a, size_t size, void **out) {
    if (a == NULL || out == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "workspace push: null argument");
    }
    *out = NULL;
    size_t link = link_size(a);
    size_t payload = round_up(size, a->alignment);
    size_t free_bytes = a->size - a->top;
    if (payload < size || payload > free_bytes || link > free_bytes - payload) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY,
                                "workspace overflow: request of %zu bytes (+%zu bookkeeping), %zu "
                                "of %zu free",
                                size, link, free_bytes, a->size);
    }
    size_t prev = a->count == 0 ? NO_BLOCK : a->newest;
    memcpy(a->base + a->top, &prev, sizeof prev);
    a->newest = a->top + link;
    a->top = a->newest + payload;
    a->count++;
    if (a->top > a->high_water) {
        a->high_water = a->top;
    }
    *out = a->base + a->newest;
    return TETHER_OK;
}

int tether_stack_alloc_pop(tether_stack_alloc *a, void *ptr) {
    if (a == NULL || ptr == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "workspace pop: null argument");
    }
    uint8_t *p = (uint8_t *)ptr;
    if (a->count == 0 || p < a->base || p > a->base + a->newest) {
        return tether_set_error(TETHER_ERR_STATE,
                                "workspace pop of %p, which is not a live block of this "
                                "allocator",
                                ptr);
    }
    size_t off = (size_t)(p - a->base);
    /* Walk back from the newest block: the pointer must be the start of a live block. */
    size_t cur = a->newest;
    uint32_t depth = 0;
    while (cur != off) {
        size_t prev;
        memcpy(&prev, a->base + cur - link_size(a), sizeof prev);
        if (prev == NO_BLOCK || prev < off) {
            return tether_set_error(TETHER_ERR_STATE,
                                    "workspace pop of %p, which is not a live block of this "
                                    "allocator",
                                    ptr);
        }
        cur = prev;
        depth++;
    }
    if (depth > 0 && a->check_lifo) {
        return tether_set_error(TETHER_ERR_STATE,
                                "workspace pop out of LIFO order: %p has %u newer live block(s)",
                                ptr, (unsigned)depth);
    }
    size_t prev;
    memcpy(&prev, a->base + off - link_size(a), sizeof prev);
    a->top = off - link_size(a);
    a->newest = prev;
    a->count -= depth + 1;
    return TETHER_OK;
}

void tether_stack_alloc_reset(tether_stack_alloc *a) {
    if (a != NULL) {
        a->top = 0;
        a->count = 0;
    }
}

void tether_stack_alloc_reset_peak(tether_stack_alloc *a) {
    if (a != NULL) {
        a->high_water = a->top;
    }
}
/* ---- first-fit heap ---- */

typedef struct heap_header {
    size_t size;      /* whole block, header included */
    size_t prev_size; /* size of the block just before (0 for the first) */
    uint32_t magic;   /* HEAP_MAGIC_USED or HEAP_MAGIC_FREE */
} heap_header;

#define HEAP_MAGIC_USED 0x7E7A05EDu
#define HEAP_MAGIC_FREE 0x7E7AF4EEu

static size_t header_size(const tether_heap *h) {
    return round_up(sizeof(heap_header), h->alignment);
}

static heap_header *block_at(const tether_heap *h, size_t offset) {
    return (heap_header *)(void *)(h->base + offset);
}

int tether_heap_init(tether_heap *h, void *base, size_t size, size_t alignment) {
    if (h == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "heap is null");
    }
    memset(h, 0, sizeof *h);
    if (alignment != 0 && alignment < sizeof(size_t)) {
        alignment = sizeof(size_t); /* headers hold size_t fields */
    }
    int rc = check_region("heap", base, size, &alignment);
    if (rc != TETHER_OK) {
        return rc;
    }
    h->alignment = alignment;
    size = size & ~(alignment - 1);
    if (size < header_size(h) + alignment) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "heap region of %zu bytes is too small (needs at least %zu)", size,
                                header_size(h) + alignment);
    }
    h->base = (uint8_t *)base;
    h->size = size;
    heap_header *first = block_at(h, 0);
    first->size = size;
    first->prev_size = 0;
    first->magic = HEAP_MAGIC_FREE;
    return TETHER_OK;
}

int tether_heap_alloc(tether_heap *h, size_t size, void **out) {
    if (h == NULL || out == NULL || h->base == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "heap alloc: null or uninitialised heap");
    }
    *out = NULL;
    if (size == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "heap alloc of 0 bytes");
    }
    size_t hdr = header_size(h);
    size_t need = round_up(size, h->alignment);
    if (need < size || need > h->size - hdr) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY,
                                "heap overflow: request of %zu bytes, heap holds %zu", size,
                                h->size);
    }
    need += hdr;
    for (size_t off = 0; off < h->size; off += block_at(h, off)->size) {
        heap_header *b = block_at(h, off);
        if (b->size == 0) {
            return tether_set_error(TETHER_ERR_INTERNAL, "heap corrupt at offset %zu", off);
        }
        if (b->magic != HEAP_MAGIC_FREE || b->size < need) {
            continue;
        }
        if (b->size - need >= hdr + h->alignment) {
            /* split: the tail stays free */
            size_t rest = b->size - need;
            heap_header *tail = block_at(h, off + need);
            tail->size = rest;
            tail->prev_size = need;
            tail->magic = HEAP_MAGIC_FREE;
            if (off + b->size < h->size) {
                block_at(h, off + b->size)->prev_size = rest;
            }
            b->size = need;
        }
        b->magic = HEAP_MAGIC_USED;
        h->used += b->size;
        h->count++;
        if (h->used > h->high_water) {
            h->high_water = h->used;
        }
        *out = h->base + off + hdr;
        return TETHER_OK;
    }
    size_t largest = tether_heap_largest_free(h);
    return tether_set_error(TETHER_ERR_OUT_OF_MEMORY,
                            "heap overflow: request of %zu bytes, %zu of %zu free, largest free "
                            "block %zu",
                            size, h->size - h->used, h->size, largest);
}

int tether_heap_free(tether_heap *h, void *ptr) {
    if (h == NULL || ptr == NULL || h->base == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "heap free: null argument");
    }
    size_t hdr = header_size(h);
    uint8_t *p = (uint8_t *)ptr;
    if (p < h->base + hdr || p >= h->base + h->size) {
        return tether_set_error(TETHER_ERR_STATE, "heap free of %p, outside the heap", ptr);
    }
    size_t target = (size_t)(p - h->base) - hdr;
    /* Walk to the block so that a forged or stale pointer is caught, never trusted. */
    size_t off = 0;
    while (off < target && block_at(h, off)->size != 0) {
        off += block_at(h, off)->size;
    }
    heap_header *b = block_at(h, target);
    if (off != target || b->magic != HEAP_MAGIC_USED) {
        return tether_set_error(TETHER_ERR_STATE,
                                "heap free of %p: not a live block (double free or foreign "
                                "pointer)",
                                ptr);
    }
    h->used -= b->size;
    h->count--;
    b->magic = HEAP_MAGIC_FREE;
    size_t end = target + b->size;
    if (end < h->size && block_at(h, end)->magic == HEAP_MAGIC_FREE) {
        b->size += block_at(h, end)->size;
        end = target + b->size;
    }
    if (target > 0) {
        heap_header *prev = block_at(h, target - b->prev_size);
        if (prev->magic == HEAP_MAGIC_FREE) {
            prev->size += b->size;
            b->magic = 0;
            b = prev;
        }
    }
    if (end < h->size) {
        block_at(h, end)->prev_size = b->size;
    }
    return TETHER_OK;
}

size_t tether_heap_largest_free(const tether_heap *h) {
    if (h == NULL || h->base == NULL) {
        return 0;
    }
    size_t best = 0;
    for (size_t off = 0; off < h->size; off += block_at(h, off)->size) {
        heap_header *b = block_at(h, off);
        if (b->size == 0) {
            break; /* corrupt; tether_heap_check reports it */
        }
        if (b->magic == HEAP_MAGIC_FREE && b->size - header_size(h) > best) {
            best = b->size - header_size(h);
        }
    }
    return best;
}

int tether_heap_check(const tether_heap *h) {
    if (h == NULL || h->base == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "heap check: uninitialised heap");
    }
    size_t used = 0, prev_size = 0;
    uint32_t count = 0;
    bool prev_free = false;
    size_t off = 0;
    while (off < h->size) {
        heap_header *b = block_at(h, off);
        bool is_free = b->magic == HEAP_MAGIC_FREE;
        if ((!is_free && b->magic != HEAP_MAGIC_USED) || b->size < header_size(h) ||
            (b->size & (h->alignment - 1)) || b->size > h->size - off ||
            b->prev_size != prev_size || (is_free && prev_free)) {
            return tether_set_error(TETHER_ERR_INTERNAL, "heap corrupt at offset %zu", off);
        }
        if (!is_free) {
            used += b->size;
            count++;
        }
        prev_free = is_free;
        prev_size = b->size;
        off += b->size;
    }
    if (off != h->size || used != h->used || count != h->count) {
        return tether_set_error(TETHER_ERR_INTERNAL,
                                "heap accounting off: used %zu/%zu, blocks %u/%u", used, h->used,
                                (unsigned)count, (unsigned)h->count);
    }
    return TETHER_OK;
}
