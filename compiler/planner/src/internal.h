/*
 * Planner internals shared by the source files of tether_planner (not installed).
 *
 * A problem is first normalised into "items": one per planned storage (an alias group becomes
 * one item, buffers left to the caller become none). Items carry resolved pool indices. The
 * texture phase turns texture items into images (or marks them as fallbacks); the 1D phase
 * places every global item and every fallback at a byte offset.
 *
 * Naming: the functions declared here are cross-file symbols of the library, so they carry the
 * project's internal prefix, tether__plan_ (never a bare tp_: `nm -g libtether_planner.a` lists
 * only tether_ and tether__ symbols); the types keep their short tp_ names (types are not
 * symbols).
 */
#ifndef TETHER_PLANNER_INTERNAL_H
#define TETHER_PLANNER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tether/planner.h"

typedef struct tp_item {
    int rep;       /* index of the first buffer of the item (names in messages) */
    int64_t size;  /* bytes */
    int64_t align; /* buffer's own alignment request (0 = pool's) */
    int32_t first, last;
    tether_scope scope;
    DLDataType dtype;
    int64_t width, height;
    int *cand; /* 1D candidate pools (global scope), in order */
    int ncand;
    int *tcand; /* texture candidate pools (texture items only), in order */
    int ntcand;
    int64_t pin_offset; /* -1 = none; else a fixed offset in cand[0] */
    bool texture;       /* texture-scope item (goes through the texture phase first) */
    bool pinned_global; /* texture item pinned to a global pool: placed as 1D directly */
} tp_item;

typedef struct tp_problem {
    const tether_plan_problem *p;
    tether_plan_options opt;
    int nitems;
    tp_item *items;
    int *item_of_buffer; /* buffer index -> item index, -1 when left to the caller */
    int *pool_storage;   /* backing store of cand/tcand arrays */
} tp_problem;

/* Result of planning the items. */
typedef struct tp_result {
    int *pool;       /* per item: pool index */
    int64_t *offset; /* per item: byte offset (1D) or -1 */
    int *image;      /* per item: image index or -1 */
    bool *fallback;  /* per item */
    int nimages;
    int cap_images;
    tether_plan_image *images;
} tp_result;

/* Frees pools/buffers past the given counts (undo of a partial load). */
void tether__plan_problem_truncate(tether_plan_problem *p, int npools, int nbuffers);

int tether__plan_problem_build(const tether_plan_problem *p, const tether_plan_options *o,
                               tp_problem *out);
void tether__plan_problem_free(tp_problem *tp);

int tether__plan_result_alloc(int nitems, tp_result *r);
void tether__plan_result_free(tp_result *r);

/* The 1D phase (place1d.c): places every 1D item of tp in r with algorithm a (not BEST). */
int tether__plan_place_1d(const tp_problem *tp, tether_plan_algorithm a, tp_result *r);

/* Texture phase: fills image / pool for texture items; marks fallbacks (to be placed in 1D).
 * reuse == false gives one image per item (the naive planner). */
int tether__plan_plan_textures(const tp_problem *tp, bool reuse, tp_result *r);

/* Effective alignment of item i in pool p. */
int64_t tether__plan_align(const tp_problem *tp, int item, int pool);
int64_t tether__plan_align_up(int64_t v, int64_t a);

/* Bytes of one texture image. */
int64_t tether__plan_image_bytes(const tether_plan_image *img);
int64_t tether__plan_texture_bytes(int64_t w, int64_t h, DLDataType dtype);

bool tether__plan_overlap(int32_t a0, int32_t a1, int32_t b0, int32_t b1);

/* Buffered text builder for the JSON/SVG/report writers. */
typedef struct tp_text {
    char *buf;
    size_t len, cap;
    bool failed;
} tp_text;
void tether__plan_text_printf(tp_text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void tether__plan_text_escape_xml(tp_text *t, const char *s);

#endif /* TETHER_PLANNER_INTERNAL_H */
