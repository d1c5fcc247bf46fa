/*
 * The planner's 1D placement: the algorithms that give every 1D item (global buffers and
 * texture fallbacks) an offset in one of its candidate pools, with multi-pool spill and pins:
 * greedy orders by size, by conflicts and by first use, greedy best-fit shared objects, an
 * improving random search and the exact branch-and-bound search (docs/planner.md).
 *
 * What must stay true:
 *  - two items live at the same time never overlap in the same pool, offsets respect
 *    max(pool, buffer) alignment, pools never exceed their capacity, pins are honoured;
 *  - every algorithm places items in an order with "lowest fit" (or, for shared objects, lays
 *    objects out with lowest fit), and an item tries its candidate pools in order;
 *  - the exact search is exact for one candidate pool per item (see exact_search); otherwise
 *    it reports TETHER_ERR_UNSUPPORTED rather than pretending;
 *  - failures leave nothing allocated and name the buffer, its size and the free space.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tether/crt/dtype.h"

#define COST_FAIL INT64_MAX

/* ------------------------------------------------------------------------------------------ */
/* 1D placement                                                                               */
/* ------------------------------------------------------------------------------------------ */

typedef struct placed {
    int32_t first, last;
    int64_t off, end;
} placed;

typedef struct pool_state {
    placed *v; /* sorted by offset */
    int n;
    int64_t top; /* highest end */
} pool_state;

typedef struct placer {
    const tp_problem *tp;
    int npools;
    pool_state *ps;
    placed *storage;
    int nlin;   /* items placed in 1D */
    int *lin;   /* the 1D items (indices into tp->items) */
    bool naive; /* ignore time: no reuse at all */
} placer;

static int placer_init(placer *pl, const tp_problem *tp, const tp_result *r) {
    memset(pl, 0, sizeof(*pl));
    pl->tp = tp;
    pl->npools = tp->p->npools;
    int n = tp->nitems;
    pl->ps = calloc((size_t)pl->npools, sizeof(pool_state));
    pl->storage = malloc(((size_t)n + 1) * (size_t)pl->npools * sizeof(placed));
    pl->lin = malloc(((size_t)n + 1) * sizeof(int));
    if (pl->ps == NULL || pl->storage == NULL || pl->lin == NULL) {
        free(pl->ps);
        free(pl->storage);
        free(pl->lin);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory planning");
    }
    for (int k = 0; k < pl->npools; k++) {
        pl->ps[k].v = pl->storage + (size_t)k * ((size_t)n + 1);
    }
    for (int i = 0; i < n; i++) {
        const tp_item *it = &tp->items[i];
        if (!it->texture || it->pinned_global || r->fallback[i]) {
            pl->lin[pl->nlin++] = i;
        }
    }
    return TETHER_OK;
}

static void placer_free(placer *pl) {
    free(pl->ps);
    free(pl->storage);
    free(pl->lin);
}

static void placer_reset(placer *pl) {
    for (int k = 0; k < pl->npools; k++) {
        pl->ps[k].n = 0;
        pl->ps[k].top = 0;
    }
}

static int pool_insert(pool_state *s, int32_t first, int32_t last, int64_t off, int64_t end) {
    int lo = 0, hi = s->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (s->v[mid].off <= off) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    memmove(&s->v[lo + 1], &s->v[lo], (size_t)(s->n - lo) * sizeof(placed));
    s->v[lo] = (placed){first, last, off, end};
    s->n++;
    if (end > s->top) {
        s->top = end;
    }
    return lo;
}

/* Lowest offset >= min_off, aligned, free over [first, last] (or over all time). */
static int64_t lowest_fit(const pool_state *s, int32_t first, int32_t last, int64_t size,
                          int64_t align, int64_t min_off, bool all_time) {
    int64_t cand = tether__plan_align_up(min_off, align);
    for (int k = 0; k < s->n; k++) {
        const placed *c = &s->v[k];
        if (!all_time && !tether__plan_overlap(first, last, c->first, c->last)) {
            continue;
        }
        if (c->end <= cand) {
            continue;
        }
        if (c->off >= cand + size) {
            break;
        }
        cand = tether__plan_align_up(c->end, align);
    }
    return cand;
}

/* Largest free block (aligned start) during [first, last] below capacity. */
static int64_t largest_gap(const pool_state *s, int32_t first, int32_t last, int64_t align,
                           int64_t capacity) {
    int64_t best = 0, cur = 0;
    for (int k = 0; k < s->n; k++) {
        const placed *c = &s->v[k];
        if (!tether__plan_overlap(first, last, c->first, c->last) || c->end <= cur) {
            continue;
        }
        int64_t start = tether__plan_align_up(cur, align);
        if (c->off > start && c->off - start > best) {
            best = c->off - start;
        }
        cur = c->end;
    }
    int64_t start = tether__plan_align_up(cur, align);
    if (capacity > start && capacity - start > best) {
        best = capacity - start;
    }
    return best;
}

static int64_t placer_cost(const placer *pl) {
    int64_t c = 0;
    for (int k = 0; k < pl->npools; k++) {
        c += pl->ps[k].top;
    }
    return c;
}

static int fail_no_room(const placer *pl, int i) {
    const tp_problem *tp = pl->tp;
    const tp_item *it = &tp->items[i];
    char msg[TETHER_ERROR_MSG_MAX];
    /* the operators by name when the problem has them (a graph's nodes), so the message of a
     * compile and of `tether plan` say where in the model it overflows */
    const tether_plan_problem *p = tp->p;
    char ops[128] = "";
    if (it->first >= 0 && it->last < p->noperators && p->operators[it->first] &&
        p->operators[it->last]) {
        if (it->first == it->last) {
            snprintf(ops, sizeof(ops), ", operator '%.32s'", p->operators[it->first]);
        } else {
            snprintf(ops, sizeof(ops), ", operators '%.32s' .. '%.32s'", p->operators[it->first],
                     p->operators[it->last]);
        }
    }
    size_t len = (size_t)snprintf(msg, sizeof(msg),
                                  "buffer '%.48s' (%lld bytes, live %d..%d%s) fits in no candidate "
                                  "pool:",
                                  p->buffers[it->rep].name, (long long)it->size, (int)it->first,
                                  (int)it->last, ops);
    for (int k = 0; k < it->ncand && len < sizeof(msg); k++) {
        int pi = it->cand[k];
        const tether_plan_pool *pool = &p->pools[pi];
        int64_t gap = largest_gap(&pl->ps[pi], it->first, it->last, tether__plan_align(tp, i, pi),
                                  pool->capacity);
        len +=
            (size_t)snprintf(msg + len, sizeof(msg) - len,
                             "%s %s has %lld bytes free (largest block, capacity %lld)",
                             k ? ";" : "", pool->name, (long long)gap, (long long)pool->capacity);
    }
    return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s", msg);
}

/* Places the pinned-offset items; they are obstacles for everything else. */
static int place_pinned(placer *pl, tp_result *r) {
    const tp_problem *tp = pl->tp;
    for (int k = 0; k < pl->nlin; k++) {
        int i = pl->lin[k];
        const tp_item *it = &tp->items[i];
        if (it->pin_offset < 0) {
            continue;
        }
        int pi = it->cand[0];
        const tether_plan_pool *pool = &tp->p->pools[pi];
        int64_t end = it->pin_offset + it->size;
        if (pool->capacity != TETHER_PLAN_UNBOUNDED && end > pool->capacity) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY,
                                    "buffer '%.60s' pinned at offset %lld (%lld bytes) ends past "
                                    "the capacity %lld of pool '%s'",
                                    tp->p->buffers[it->rep].name, (long long)it->pin_offset,
                                    (long long)it->size, (long long)pool->capacity, pool->name);
        }
        for (int m = 0; m < k; m++) {
            int j = pl->lin[m];
            const tp_item *o = &tp->items[j];
            if (o->pin_offset < 0 || o->cand[0] != pi) {
                continue;
            }
            if (tether__plan_overlap(it->first, it->last, o->first, o->last) &&
                it->pin_offset < o->pin_offset + o->size && o->pin_offset < end) {
                return tether_set_error(TETHER_ERR_MISMATCH,
                                        "buffers '%.50s' and '%.50s' are pinned to overlapping "
                                        "bytes of pool '%s' while both live",
                                        tp->p->buffers[it->rep].name, tp->p->buffers[o->rep].name,
                                        pool->name);
            }
        }
        pool_insert(&pl->ps[pi], it->first, it->last, it->pin_offset, end);
        r->pool[i] = pi;
        r->offset[i] = it->pin_offset;
    }
    return TETHER_OK;
}

/* Places item i at the lowest fit of its first candidate pool with room. */
static bool place_item(placer *pl, int i, tp_result *r) {
    const tp_problem *tp = pl->tp;
    const tp_item *it = &tp->items[i];
    for (int k = 0; k < it->ncand; k++) {
        int pi = it->cand[k];
        int64_t cap = tp->p->pools[pi].capacity;
        int64_t off = lowest_fit(&pl->ps[pi], it->first, it->last, it->size,
                                 tether__plan_align(tp, i, pi), 0, pl->naive);
        if (cap != TETHER_PLAN_UNBOUNDED && off + it->size > cap) {
            continue;
        }
        pool_insert(&pl->ps[pi], it->first, it->last, off, off + it->size);
        r->pool[i] = pi;
        r->offset[i] = off;
        return true;
    }
    return false;
}

/* Places the unpinned items in `order` (n entries). Returns the cost or COST_FAIL, with
 * *failed set to the item that did not fit. */
static int64_t place_order(placer *pl, const int *order, int n, tp_result *r, int *failed) {
    placer_reset(pl);
    if (place_pinned(pl, r) != TETHER_OK) {
        *failed = -1;
        return COST_FAIL;
    }
    for (int k = 0; k < n; k++) {
        if (!place_item(pl, order[k], r)) {
            *failed = order[k];
            return COST_FAIL;
        }
    }
    return placer_cost(pl);
}

/* Unpinned 1D items into order[]; returns how many. */
static int free_items(const placer *pl, int *order) {
    int n = 0;
    for (int k = 0; k < pl->nlin; k++) {
        int i = pl->lin[k];
        if (pl->tp->items[i].pin_offset < 0) {
            order[n++] = i;
        }
    }
    return n;
}

/* ---- orders ---- */

/* qsort context; thread-local so that planners on different threads do not interfere */
static _Thread_local const tp_problem *g_sort_tp;
static _Thread_local const int64_t *g_sort_key;

static int cmp_size(const void *a, const void *b) {
    const tp_item *x = &g_sort_tp->items[*(const int *)a];
    const tp_item *y = &g_sort_tp->items[*(const int *)b];
    if (x->size != y->size) {
        return x->size > y->size ? -1 : 1;
    }
    int32_t lx = x->last - x->first, ly = y->last - y->first;
    if (lx != ly) {
        return lx > ly ? -1 : 1;
    }
    if (x->first != y->first) {
        return x->first < y->first ? -1 : 1;
    }
    return *(const int *)a - *(const int *)b;
}

static int cmp_key_then_size(const void *a, const void *b) {
    int64_t kx = g_sort_key[*(const int *)a], ky = g_sort_key[*(const int *)b];
    if (kx != ky) {
        return kx > ky ? -1 : 1;
    }
    return cmp_size(a, b);
}

static int cmp_first(const void *a, const void *b) {
    const tp_item *x = &g_sort_tp->items[*(const int *)a];
    const tp_item *y = &g_sort_tp->items[*(const int *)b];
    if (x->first != y->first) {
        return x->first < y->first ? -1 : 1;
    }
    return *(const int *)a - *(const int *)b;
}

static void order_by_size(const tp_problem *tp, int *order, int n) {
    g_sort_tp = tp;
    qsort(order, (size_t)n, sizeof(int), cmp_size);
}

static int order_by_conflicts(const tp_problem *tp, int *order, int n) {
    int64_t *key = calloc((size_t)tp->nitems + 1, sizeof(int64_t));
    if (key == NULL) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory planning");
    }
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            const tp_item *x = &tp->items[order[a]], *y = &tp->items[order[b]];
            if (a != b && tether__plan_overlap(x->first, x->last, y->first, y->last)) {
                key[order[a]]++;
            }
        }
    }
    g_sort_tp = tp;
    g_sort_key = key;
    qsort(order, (size_t)n, sizeof(int), cmp_key_then_size);
    free(key);
    return TETHER_OK;
}

static void order_by_first(const tp_problem *tp, int *order, int n) {
    g_sort_tp = tp;
    qsort(order, (size_t)n, sizeof(int), cmp_first);
}

/* ---- shared objects (greedy best-fit) ---- */

typedef struct sobj {
    int pool;
    int64_t size, align, off;
    int head; /* first member item; members chain through next_member[] */
} sobj;

/* Lays the objects of pool pi out with lowest fit, each free over all its members' lifetimes
 * (pinned items are obstacles). Writes placements to r when non-NULL. Returns the pool top. */
static int64_t layout_objects(placer *pl, const sobj *objs, int nobj, const int *next_member,
                              int pi, tp_result *r) {
    const tp_problem *tp = pl->tp;
    pool_state *s = &pl->ps[pi];
    s->n = 0;
    s->top = 0;
    for (int k = 0; k < pl->nlin; k++) {
        const tp_item *it = &tp->items[pl->lin[k]];
        if (it->pin_offset >= 0 && it->cand[0] == pi) {
            pool_insert(s, it->first, it->last, it->pin_offset, it->pin_offset + it->size);
        }
    }
    for (int o = 0; o < nobj; o++) {
        const sobj *ob = &objs[o];
        if (ob->pool != pi) {
            continue;
        }
        int64_t off = 0;
        for (;;) {
            int64_t fit = off;
            for (int m = ob->head; m >= 0; m = next_member[m]) {
                const tp_item *it = &tp->items[m];
                int64_t f = lowest_fit(s, it->first, it->last, ob->size, ob->align, off, false);
                if (f > fit) {
                    fit = f;
                }
            }
            if (fit == off) {
                break;
            }
            off = fit;
        }
        for (int m = ob->head; m >= 0; m = next_member[m]) {
            const tp_item *it = &tp->items[m];
            pool_insert(s, it->first, it->last, off, off + ob->size);
            if (r != NULL) {
                r->pool[m] = pi;
                r->offset[m] = off;
            }
        }
    }
    return s->top;
}

static bool fits_cap(const tp_problem *tp, int pi, int64_t top) {
    int64_t cap = tp->p->pools[pi].capacity;
    return cap == TETHER_PLAN_UNBOUNDED || top <= cap;
}

static int plan_shared_objects(placer *pl, tp_result *r) {
    const tp_problem *tp = pl->tp;
    size_t cnt = (size_t)tp->nitems + 1;
    int *order = malloc(cnt * sizeof(int));
    int *next_member = malloc(cnt * sizeof(int));
    sobj *objs = calloc(cnt, sizeof(sobj));
    if (order == NULL || next_member == NULL || objs == NULL) {
        free(order);
        free(next_member);
        free(objs);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory planning");
    }
    int n = free_items(pl, order);
    order_by_size(tp, order, n);
    int nobj = 0;
    int rc = TETHER_OK;
    for (int k = 0; k < n && rc == TETHER_OK; k++) {
        int i = order[k];
        const tp_item *it = &tp->items[i];
        bool done = false;
        for (int c = 0; c < it->ncand && !done; c++) {
            int pi = it->cand[c];
            int64_t align = tether__plan_align(tp, i, pi);
            /* best fit: the smallest free object >= size, else the largest smaller one */
            int best = -1;
            for (int o = 0; o < nobj; o++) {
                const sobj *ob = &objs[o];
                if (ob->pool != pi) {
                    continue;
                }
                bool free_obj = true;
                for (int m = ob->head; m >= 0 && free_obj; m = next_member[m]) {
                    const tp_item *x = &tp->items[m];
                    free_obj = !tether__plan_overlap(it->first, it->last, x->first, x->last);
                }
                if (!free_obj) {
                    continue;
                }
                if (best < 0) {
                    best = o;
                    continue;
                }
                int64_t db = objs[best].size - it->size, dn = ob->size - it->size;
                bool nf = dn >= 0, bf = db >= 0;
                if ((nf && !bf) || (nf && bf && dn < db) || (!nf && !bf && dn > db)) {
                    best = o;
                }
            }
            /* an unbounded pool always has room: lay out once at the end */
            bool bounded = tp->p->pools[pi].capacity != TETHER_PLAN_UNBOUNDED;
            if (best >= 0) {
                sobj saved = objs[best];
                sobj *ob = &objs[best];
                ob->size = it->size > ob->size ? it->size : ob->size;
                ob->align = align > ob->align ? align : ob->align;
                next_member[i] = ob->head;
                ob->head = i;
                if (!bounded ||
                    fits_cap(tp, pi, layout_objects(pl, objs, nobj, next_member, pi, NULL))) {
                    done = true;
                } else {
                    objs[best] = saved;
                }
            }
            if (!done) {
                sobj *ob = &objs[nobj++];
                ob->pool = pi;
                ob->size = it->size;
                ob->align = align;
                ob->off = 0;
                next_member[i] = -1;
                ob->head = i;
                if (!bounded ||
                    fits_cap(tp, pi, layout_objects(pl, objs, nobj, next_member, pi, NULL))) {
                    done = true;
                } else {
                    nobj--;
                }
            }
            if (bounded) {
                layout_objects(pl, objs, nobj, next_member, pi, NULL);
            }
        }
        if (!done) {
            rc = fail_no_room(pl, i);
        }
    }
    if (rc == TETHER_OK) {
        for (int k = 0; k < pl->npools; k++) {
            layout_objects(pl, objs, nobj, next_member, k, r);
        }
        /* pinned items keep their pinned placement */
        for (int k = 0; k < pl->nlin; k++) {
            int i = pl->lin[k];
            if (tp->items[i].pin_offset >= 0) {
                r->pool[i] = tp->items[i].cand[0];
                r->offset[i] = tp->items[i].pin_offset;
            }
        }
    }
    free(order);
    free(next_member);
    free(objs);
    return rc;
}

/* ---- improving search ---- */

static uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

static int plan_search(placer *pl, tp_result *r) {
    const tp_problem *tp = pl->tp;
    size_t sz = ((size_t)pl->nlin + 1) * sizeof(int);
    int *cur = malloc(sz), *cand = malloc(sz), *best = malloc(sz), *seed = malloc(sz);
    int rc = TETHER_OK;
    if (cur == NULL || cand == NULL || best == NULL || seed == NULL) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory planning");
        goto out;
    }
    int n = free_items(pl, seed);
    int failed = -1;
    int64_t best_cost = COST_FAIL;
    memcpy(best, seed, (size_t)n * sizeof(int)); /* a valid permutation even if all fail */
    /* starting points: the greedy orders */
    for (int s = 0; s < 3; s++) {
        memcpy(cand, seed, (size_t)n * sizeof(int));
        if (s == 0) {
            order_by_size(tp, cand, n);
        } else if (s == 1) {
            if ((rc = order_by_conflicts(tp, cand, n)) != TETHER_OK) {
                goto out;
            }
        } else {
            order_by_first(tp, cand, n);
        }
        int f = -1;
        int64_t c = place_order(pl, cand, n, r, &f);
        if (s == 0) {
            failed = f;
        }
        if (c < best_cost) {
            best_cost = c;
            memcpy(best, cand, (size_t)n * sizeof(int));
        }
    }
    memcpy(cur, best, (size_t)n * sizeof(int));
    int64_t cur_cost = best_cost;
    uint64_t state = tp->opt.seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
    if (state == 0) {
        state = 1;
    }
    /* the budget is in placement orders; each costs about n^2 steps, so very large problems
     * get fewer (never below 20) to keep one run under roughly 5e7 steps */
    int budget = tp->opt.search_budget;
    int64_t cap_evals = n > 0 ? INT64_C(50000000) / ((int64_t)n * n) : budget;
    if (cap_evals < 20) {
        cap_evals = 20;
    }
    if (budget > cap_evals) {
        budget = (int)cap_evals;
    }
    double t0 = best_cost == COST_FAIL ? 1.0 : (double)best_cost * 0.02 + 1.0;
    for (int it = 0; it < budget && n >= 2; it++) {
        memcpy(cand, cur, (size_t)n * sizeof(int));
        int a = (int)(rng_next(&state) % (uint64_t)n);
        int b = (int)(rng_next(&state) % (uint64_t)n);
        if (rng_next(&state) & 1) {
            int t = cand[a];
            cand[a] = cand[b];
            cand[b] = t;
        } else {
            /* move a to position b */
            int t = cand[a];
            if (a < b) {
                memmove(&cand[a], &cand[a + 1], (size_t)(b - a) * sizeof(int));
            } else {
                memmove(&cand[b + 1], &cand[b], (size_t)(a - b) * sizeof(int));
            }
            cand[b] = t;
        }
        int f = -1;
        int64_t c = place_order(pl, cand, n, r, &f);
        if (c == COST_FAIL) {
            continue;
        }
        bool accept = c <= cur_cost;
        if (!accept && cur_cost != COST_FAIL) {
            double temp = t0 * (1.0 - (double)it / (double)budget);
            double u = (double)(rng_next(&state) >> 11) / 9007199254740992.0;
            accept = temp > 0 && u < exp(-(double)(c - cur_cost) / temp);
        }
        if (accept) {
            memcpy(cur, cand, (size_t)n * sizeof(int));
            cur_cost = c;
            if (c < best_cost) {
                best_cost = c;
                memcpy(best, cand, (size_t)n * sizeof(int));
            }
        }
    }
    if (best_cost == COST_FAIL) {
        memcpy(cand, seed, (size_t)n * sizeof(int));
        order_by_size(tp, cand, n);
        place_order(pl, cand, n, r, &failed);
        rc = failed >= 0 ? fail_no_room(pl, failed) : tether_last_status();
        goto out;
    }
    place_order(pl, best, n, r, &failed);
out:
    free(cur);
    free(cand);
    free(best);
    free(seed);
    return rc;
}

/* ---- exact search ---- */

/*
 * Exactness argument (one candidate pool per item). Take an optimal placement and replay its
 * items in order of (offset, index) with lowest fit: each item's old offset is still free
 * (every earlier item now sits at or below its old place and ended at or below this item's old
 * offset when they were live together), so every offset can only go down. Repeating reaches a
 * fixed point whose replay order yields non-decreasing (offset, index) pairs. Hence searching
 * only orders whose lowest-fit offsets are non-decreasing in (offset, index) finds an optimum.
 * Bound: remaining items of a pool sit at or above the last offset, disjoint while live, so a
 * pool's top is at least last + (largest sum of remaining sizes live at one time).
 */
typedef struct exact_ctx {
    placer *pl;
    int n;
    int *items; /* free items */
    bool *used;
    int *order; /* current prefix */
    int *best;
    int64_t best_cost;
    int32_t *times; /* distinct first values (event points) */
    int ntimes;
    int64_t *live;    /* scratch [npools * ntimes]: remaining bytes live */
    int64_t *livepad; /* same cells: their padding to the pool alignment */
    int64_t *maxpad;  /* same cells: the largest such padding */
    int *twin;        /* per free item: previous identical item (interchangeable) or -1 */
    int64_t *fits;    /* scratch [n * n]: lowest fits per depth */
    int *cands;       /* scratch [n * n]: children per depth */
    int64_t nodes;
    int64_t node_limit;
    int64_t root_bound; /* lower bound at the root: reaching it ends the search */
    bool aborted;       /* node limit hit: no proof of optimality */
    bool done;          /* an order reaching root_bound was found */
} exact_ctx;

static int64_t exact_bound(exact_ctx *x, int64_t last_off) {
    placer *pl = x->pl;
    const tp_problem *tp = pl->tp;
    int np = pl->npools;
    size_t cells = (size_t)np * (size_t)x->ntimes;
    memset(x->live, 0, cells * sizeof(int64_t));
    memset(x->livepad, 0, cells * sizeof(int64_t));
    memset(x->maxpad, 0, cells * sizeof(int64_t));
    for (int k = 0; k < x->n; k++) {
        if (x->used[k]) {
            continue;
        }
        const tp_item *it = &tp->items[x->items[k]];
        int pi = it->cand[0];
        int64_t g = tp->p->pools[pi].alignment;
        int64_t pad = tether__plan_align_up(it->size, g) - it->size;
        for (int t = 0; t < x->ntimes; t++) {
            if (x->times[t] >= it->first && x->times[t] <= it->last) {
                size_t c = (size_t)pi * (size_t)x->ntimes + (size_t)t;
                x->live[c] += it->size;
                x->livepad[c] += pad;
                if (pad > x->maxpad[c]) {
                    x->maxpad[c] = pad;
                }
            }
        }
    }
    int64_t total = 0;
    for (int p = 0; p < np; p++) {
        const pool_state *s = &pl->ps[p];
        int64_t top = s->top;
        for (int t = 0; t < x->ntimes; t++) {
            int64_t need = x->live[p * x->ntimes + t];
            if (need == 0) {
                continue;
            }
            /* every offset is a multiple of the pool alignment, so each remaining item but the
             * topmost is followed by padding up to that multiple */
            need += x->livepad[p * x->ntimes + t] - x->maxpad[p * x->ntimes + t];
            /* remaining items live at t sit above last_off, beside whatever placed items
             * live at t occupy up there */
            int32_t tt = x->times[t];
            for (int m = 0; m < s->n; m++) {
                const placed *c = &s->v[m];
                if (c->first <= tt && tt <= c->last && c->end > last_off) {
                    need += c->end - (c->off > last_off ? c->off : last_off);
                }
            }
            if (last_off + need > top) {
                top = last_off + need;
            }
        }
        total += top;
    }
    return total;
}

/*
 * Children of a node: items whose lowest fit keeps the (offset, index) order non-decreasing.
 * A further cut: if a remaining item j could sit entirely below offset o (fit_j + size_j <= o),
 * nothing placed later (all at >= o) can take that gap from it, so j would land below o and
 * break the order; a child at offset o is therefore only tried when o < fit_j + size_j for
 * every other remaining j. Children are tried in increasing offset order.
 */
static void exact_dfs(exact_ctx *x, int depth, int64_t last_off, int last_idx) {
    placer *pl = x->pl;
    const tp_problem *tp = pl->tp;
    if (x->aborted || x->done) {
        return;
    }
    if (++x->nodes > x->node_limit) {
        x->aborted = true;
        return;
    }
    if (depth == x->n) {
        int64_t c = placer_cost(pl);
        if (c < x->best_cost) {
            x->best_cost = c;
            memcpy(x->best, x->order, (size_t)x->n * sizeof(int));
            x->done = c <= x->root_bound; /* provably optimal: stop */
        }
        return;
    }
    if (exact_bound(x, last_off) >= x->best_cost) {
        return;
    }
    int64_t *fit = x->fits + (size_t)depth * (size_t)x->n;
    int *cands = x->cands + (size_t)depth * (size_t)x->n;
    int ncands = 0;
    int64_t min1 = INT64_MAX, min2 = INT64_MAX;
    int min1k = -1;
    for (int k = 0; k < x->n; k++) {
        if (x->used[k]) {
            continue;
        }
        int i = x->items[k];
        const tp_item *it = &tp->items[i];
        int pi = it->cand[0];
        fit[k] = lowest_fit(&pl->ps[pi], it->first, it->last, it->size,
                            tether__plan_align(tp, i, pi), 0, false);
        int64_t cap = tp->p->pools[pi].capacity;
        if (cap != TETHER_PLAN_UNBOUNDED && fit[k] + it->size > cap) {
            return; /* fits only grow deeper down: this branch cannot complete */
        }
        int64_t e = fit[k] + it->size;
        if (e < min1) {
            min2 = min1;
            min1 = e;
            min1k = k;
        } else if (e < min2) {
            min2 = e;
        }
        if (fit[k] < last_off || (fit[k] == last_off && k < last_idx)) {
            continue;
        }
        if (x->twin[k] >= 0 && !x->used[x->twin[k]]) {
            continue; /* an identical item with a lower index goes first */
        }
        /* insertion by (fit, k) */
        int at = ncands;
        while (at > 0 && fit[cands[at - 1]] > fit[k]) {
            cands[at] = cands[at - 1];
            at--;
        }
        cands[at] = k;
        ncands++;
    }
    for (int c = 0; c < ncands; c++) {
        int k = cands[c];
        int64_t off = fit[k];
        if (off >= (k == min1k ? min2 : min1)) {
            continue;
        }
        int i = x->items[k];
        const tp_item *it = &tp->items[i];
        pool_state *s = &pl->ps[it->cand[0]];
        int64_t saved_top = s->top;
        int at = pool_insert(s, it->first, it->last, off, off + it->size);
        x->used[k] = true;
        x->order[depth] = i;
        exact_dfs(x, depth + 1, off, k);
        x->used[k] = false;
        memmove(&s->v[at], &s->v[at + 1], (size_t)(s->n - at - 1) * sizeof(placed));
        s->n--;
        s->top = saved_top;
        if (x->aborted || x->done) {
            return;
        }
    }
}

static int plan_exact(placer *pl, tp_result *r) {
    const tp_problem *tp = pl->tp;
    int limit = tp->opt.exact_max_buffers;
    size_t sz = ((size_t)pl->nlin + 1) * sizeof(int);
    exact_ctx x;
    memset(&x, 0, sizeof(x));
    x.pl = pl;
    x.items = malloc(sz);
    x.order = malloc(sz);
    x.best = malloc(sz);
    x.used = calloc((size_t)pl->nlin + 1, sizeof(bool));
    x.times = malloc(sz);
    x.live = malloc(((size_t)pl->nlin + 1) * (size_t)pl->npools * sizeof(int64_t));
    x.livepad = malloc(((size_t)pl->nlin + 1) * (size_t)pl->npools * sizeof(int64_t));
    x.maxpad = malloc(((size_t)pl->nlin + 1) * (size_t)pl->npools * sizeof(int64_t));
    x.twin = malloc(sz);
    x.fits = malloc(((size_t)limit + 1) * ((size_t)limit + 1) * sizeof(int64_t));
    x.cands = malloc(((size_t)limit + 1) * ((size_t)limit + 1) * sizeof(int));
    int rc = TETHER_OK;
    if (x.items == NULL || x.order == NULL || x.best == NULL || x.used == NULL || x.times == NULL ||
        x.live == NULL) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory planning");
        goto out;
    }
    x.n = free_items(pl, x.items);
    if (x.n > limit) {
        rc = tether_set_error(TETHER_ERR_LIMIT,
                              "exact search takes at most %d buffers (options.exact_max_buffers); "
                              "this problem has %d",
                              limit, x.n);
        goto out;
    }
    for (int k = 0; k < x.n; k++) {
        const tp_item *it = &tp->items[x.items[k]];
        if (it->ncand != 1) {
            rc = tether_set_error(TETHER_ERR_UNSUPPORTED,
                                  "exact search needs one candidate pool per buffer; '%.60s' "
                                  "has %d",
                                  tp->p->buffers[it->rep].name, it->ncand);
            goto out;
        }
        bool seen = false;
        for (int t = 0; t < x.ntimes; t++) {
            seen = seen || x.times[t] == it->first;
        }
        if (!seen) {
            x.times[x.ntimes++] = it->first;
        }
    }
    for (int k = 0; k < x.n; k++) {
        const tp_item *a = &tp->items[x.items[k]];
        x.twin[k] = -1;
        for (int j = k - 1; j >= 0 && x.twin[k] < 0; j--) {
            const tp_item *b = &tp->items[x.items[j]];
            if (a->size == b->size && a->align == b->align && a->first == b->first &&
                a->last == b->last && a->cand[0] == b->cand[0]) {
                x.twin[k] = j;
            }
        }
    }
    /* upper bound from the greedy orders (+1 so that an equal solution is found too) */
    int failed = -1;
    memcpy(x.best, x.items, (size_t)x.n * sizeof(int));
    order_by_size(tp, x.best, x.n);
    int64_t ub = place_order(pl, x.best, x.n, r, &failed);
    memcpy(x.order, x.items, (size_t)x.n * sizeof(int));
    if ((rc = order_by_conflicts(tp, x.order, x.n)) != TETHER_OK) {
        goto out;
    }
    int64_t ub2 = place_order(pl, x.order, x.n, r, &failed);
    if (ub2 < ub) {
        ub = ub2;
        memcpy(x.best, x.order, (size_t)x.n * sizeof(int));
    }
    /* x.best holds the greedy order: the search only looks for strictly better orders, and
     * stops as soon as one reaches the root lower bound */
    x.best_cost = ub;
    x.node_limit = INT64_C(20000000);
    placer_reset(pl);
    if (place_pinned(pl, r) != TETHER_OK) {
        rc = tether_last_status();
        goto out;
    }
    x.root_bound = exact_bound(&x, 0);
    if (x.best_cost > x.root_bound) {
        exact_dfs(&x, 0, 0, -1);
    }
    if (x.aborted) {
        rc = tether_set_error(TETHER_ERR_LIMIT,
                              "exact search gave up after %lld nodes; use a heuristic",
                              (long long)x.node_limit);
        goto out;
    }
    if (x.best_cost == COST_FAIL) {
        memcpy(x.order, x.items, (size_t)x.n * sizeof(int));
        order_by_size(tp, x.order, x.n);
        place_order(pl, x.order, x.n, r, &failed);
        rc = failed >= 0 ? fail_no_room(pl, failed)
                         : tether_set_error(TETHER_ERR_OUT_OF_MEMORY,
                                            "no placement fits the pool capacities");
        goto out;
    }
    place_order(pl, x.best, x.n, r, &failed);
out:
    free(x.items);
    free(x.order);
    free(x.best);
    free(x.used);
    free(x.times);
    free(x.live);
    free(x.fits);
    free(x.cands);
    free(x.livepad);
    free(x.maxpad);
    free(x.twin);
    return rc;
}

/* ---- one algorithm ---- */

static int plan_1d(placer *pl, tether_plan_algorithm a, tp_result *r) {
    const tp_problem *tp = pl->tp;
    placer_reset(pl);
    int rc = place_pinned(pl, r);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (a == TETHER_PLAN_SHARED_OBJECTS) {
        return plan_shared_objects(pl, r);
    }
    if (a == TETHER_PLAN_SEARCH) {
        return plan_search(pl, r);
    }
    if (a == TETHER_PLAN_EXACT) {
        return plan_exact(pl, r);
    }
    int *order = malloc(((size_t)pl->nlin + 1) * sizeof(int));
    if (order == NULL) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory planning");
    }
    int n = free_items(pl, order);
    rc = TETHER_OK;
    if (a == TETHER_PLAN_NAIVE) {
        pl->naive = true;
        order_by_first(tp, order, n);
    } else if (a == TETHER_PLAN_GREEDY_SIZE) {
        order_by_size(tp, order, n);
    } else {
        rc = order_by_conflicts(tp, order, n);
    }
    if (rc == TETHER_OK) {
        int failed = -1;
        if (place_order(pl, order, n, r, &failed) == COST_FAIL) {
            rc = failed >= 0 ? fail_no_room(pl, failed) : tether_last_status();
        }
    }
    pl->naive = false;
    free(order);
    return rc;
}

int tether__plan_place_1d(const tp_problem *tp, tether_plan_algorithm a, tp_result *r) {
    placer pl;
    int rc = placer_init(&pl, tp, r);
    if (rc == TETHER_OK) {
        rc = plan_1d(&pl, a, r);
        placer_free(&pl);
    }
    return rc;
}
