/*
 * The planner core: normalisation of a problem into items, best/compare, lower bounds and the
 * conversion to a tether_plan; the 1D placement algorithms are place1d.c's, the texture phase
 * texture_plan.c's.
 *
 * What must stay true:
 *  - every plan produced here is valid: two items live at the same time never overlap in the
 *    same pool, offsets respect max(pool, buffer) alignment, pools never exceed their capacity,
 *    pins are honoured, alias groups share one placement (without NDEBUG tether_plan_run checks
 *    each plan it returns with the independent tether_plan_validate, validate.c);
 *  - the 1D placement (place1d.c) places every planned 1D item or fails naming the one that has
 *    no room;
 *  - failures leave nothing allocated and name the buffer, its size and the free space.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tether/crt/dtype.h"

bool tether__plan_overlap(int32_t a0, int32_t a1, int32_t b0, int32_t b1) {
    return a0 <= b1 && b0 <= a1;
}

int64_t tether__plan_align_up(int64_t v, int64_t a) {
    return (v + a - 1) / a * a;
}

int64_t tether__plan_align(const tp_problem *tp, int item, int pool) {
    int64_t a = tp->p->pools[pool].alignment;
    int64_t b = tp->items[item].align;
    return b > a ? b : a;
}

int64_t tether__plan_image_bytes(const tether_plan_image *img) {
    return tether__plan_texture_bytes(img->width, img->height, img->dtype);
}

/* ------------------------------------------------------------------------------------------ */
/* Normalisation                                                                              */
/* ------------------------------------------------------------------------------------------ */

void tether__plan_problem_free(tp_problem *tp) {
    free(tp->items);
    free(tp->item_of_buffer);
    free(tp->pool_storage);
    memset(tp, 0, sizeof(*tp));
}

static bool buffer_planned(const tether_plan_buffer *b, const tether_plan_options *o) {
    if (b->kind == TETHER_PLAN_GRAPH_INPUT && !o->plan_inputs) {
        return false;
    }
    if (b->kind == TETHER_PLAN_GRAPH_OUTPUT && !o->plan_outputs) {
        return false;
    }
    return true;
}

static bool same_str(const char *a, const char *b) {
    if (a == NULL || b == NULL) {
        return a == b;
    }
    return strcmp(a, b) == 0;
}

static bool same_pool_lists(const tether_plan_buffer *a, const tether_plan_buffer *b) {
    if (a->npools != b->npools) {
        return false;
    }
    for (int i = 0; i < a->npools; i++) {
        if (strcmp(a->pools[i], b->pools[i]) != 0) {
            return false;
        }
    }
    return true;
}

/* Resolves the candidate pools of item `it` (representative buffer b) into storage. */
static int resolve_pools(const tether_plan_problem *p, const tether_plan_buffer *b, tp_item *it,
                         int *storage) {
    it->cand = storage;
    it->tcand = storage + p->npools;
    it->ncand = 0;
    it->ntcand = 0;
    it->pin_offset = -1;
    it->pinned_global = false;
    if (b->pin_pool != NULL) {
        int pi = tether_plan_problem_find_pool(p, b->pin_pool);
        if (pi < 0) {
            return tether_set_error(TETHER_ERR_NOT_FOUND,
                                    "buffer '%.60s' is pinned to pool '%s', which is not declared",
                                    b->name, b->pin_pool);
        }
        const tether_plan_pool *pool = &p->pools[pi];
        if (pool->scope == TETHER_SCOPE_GLOBAL) {
            it->cand[it->ncand++] = pi;
            it->pin_offset = b->pin_offset;
            it->pinned_global = it->texture;
            if (b->pin_offset >= 0) {
                int64_t a = it->align > pool->alignment ? it->align : pool->alignment;
                if (b->pin_offset % a != 0) {
                    return tether_set_error(TETHER_ERR_ALIGNMENT,
                                            "buffer '%.60s': pin offset %lld in pool '%s' is not "
                                            "a multiple of the alignment %lld",
                                            b->name, (long long)b->pin_offset, pool->name,
                                            (long long)a);
                }
            }
        } else if (it->texture && pool->scope == it->scope) {
            if (b->pin_offset >= 0) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "buffer '%.60s': a pin offset applies to 1D pools, and "
                                        "'%s' is a texture pool",
                                        b->name, pool->name);
            }
            it->tcand[it->ntcand++] = pi;
        } else {
            return tether_set_error(
                TETHER_ERR_MISMATCH, "buffer '%.60s' (scope %s) is pinned to pool '%s' of scope %s",
                b->name, tether_scope_name(it->scope), pool->name, tether_scope_name(pool->scope));
        }
        return TETHER_OK;
    }
    int n = b->npools > 0 ? b->npools : p->npools;
    for (int k = 0; k < n; k++) {
        int pi = k;
        if (b->npools > 0) {
            pi = tether_plan_problem_find_pool(p, b->pools[k]);
            if (pi < 0) {
                return tether_set_error(TETHER_ERR_NOT_FOUND,
                                        "buffer '%.60s' lists pool '%s', which is not declared",
                                        b->name, b->pools[k]);
            }
            for (int j = 0; j < k; j++) {
                if (strcmp(b->pools[j], b->pools[k]) == 0) {
                    return tether_set_error(TETHER_ERR_INVALID_ARG,
                                            "buffer '%.60s' lists pool '%s' twice", b->name,
                                            b->pools[k]);
                }
            }
        }
        const tether_plan_pool *pool = &p->pools[pi];
        if (pool->scope == TETHER_SCOPE_GLOBAL) {
            it->cand[it->ncand++] = pi;
        } else if (it->texture && pool->scope == it->scope) {
            it->tcand[it->ntcand++] = pi;
        } else if (b->npools > 0) {
            return tether_set_error(
                TETHER_ERR_MISMATCH,
                "buffer '%.60s' (scope %s) cannot live in pool '%s' of scope %s", b->name,
                tether_scope_name(it->scope), pool->name, tether_scope_name(pool->scope));
        }
    }
    if (it->ncand == 0 && it->ntcand == 0) {
        return tether_set_error(TETHER_ERR_NOT_FOUND,
                                "buffer '%.60s' (scope %s) has no usable pool (declare a pool of "
                                "scope global%s%s)",
                                b->name, tether_scope_name(it->scope), it->texture ? " or " : "",
                                it->texture ? tether_scope_name(it->scope) : "");
    }
    return TETHER_OK;
}

int tether__plan_problem_build(const tether_plan_problem *p, const tether_plan_options *o,
                               tp_problem *out) {
    memset(out, 0, sizeof(*out));
    out->p = p;
    out->opt = *o;
    if (p->npools == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "no pools declared");
    }
    int nb = p->nbuffers;
    out->item_of_buffer = malloc(((size_t)nb + 1) * sizeof(int));
    out->items = calloc((size_t)nb + 1, sizeof(tp_item));
    out->pool_storage = malloc(((size_t)nb + 1) * 2 * (size_t)p->npools * sizeof(int));
    if (out->item_of_buffer == NULL || out->items == NULL || out->pool_storage == NULL) {
        tether__plan_problem_free(out);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory planning");
    }
    int rc = TETHER_OK;
    for (int i = 0; i < nb; i++) {
        out->item_of_buffer[i] = -2; /* not yet decided */
    }
    for (int i = 0; i < nb && rc == TETHER_OK; i++) {
        if (out->item_of_buffer[i] != -2) {
            continue;
        }
        const tether_plan_buffer *b = &p->buffers[i];
        /* members: i alone, or every buffer of its alias group */
        bool planned = true;
        for (int j = i; j < nb; j++) {
            const tether_plan_buffer *m = &p->buffers[j];
            if (j == i || (b->alias_group != 0 && m->alias_group == b->alias_group)) {
                planned = planned && buffer_planned(m, o);
            }
        }
        if (!planned) {
            for (int j = i; j < nb; j++) {
                if (j == i ||
                    (b->alias_group != 0 && p->buffers[j].alias_group == b->alias_group)) {
                    out->item_of_buffer[j] = -1;
                }
            }
            continue;
        }
        int idx = out->nitems++;
        tp_item *it = &out->items[idx];
        it->rep = i;
        it->size = b->size;
        it->align = b->alignment;
        it->first = b->first;
        it->last = b->last;
        it->scope = b->scope;
        it->dtype = b->dtype;
        it->width = b->width;
        it->height = b->height;
        it->texture = tether_scope_is_texture(b->scope);
        for (int j = i + 1; j < nb && b->alias_group != 0; j++) {
            const tether_plan_buffer *m = &p->buffers[j];
            if (m->alias_group != b->alias_group) {
                continue;
            }
            if (m->scope != b->scope) {
                rc = tether_set_error(TETHER_ERR_MISMATCH,
                                      "alias group %d: '%.50s' (scope %s) and '%.50s' (scope %s) "
                                      "must share a scope",
                                      (int)b->alias_group, b->name, tether_scope_name(b->scope),
                                      m->name, tether_scope_name(m->scope));
                break;
            }
            if (!same_pool_lists(b, m) || !same_str(b->pin_pool, m->pin_pool) ||
                b->pin_offset != m->pin_offset) {
                rc = tether_set_error(TETHER_ERR_MISMATCH,
                                      "alias group %d: '%.50s' and '%.50s' list different pools "
                                      "or pins; aliased buffers share one storage",
                                      (int)b->alias_group, b->name, m->name);
                break;
            }
            if (it->texture && (m->width != b->width || m->height != b->height ||
                                !tether_dtype_equal(m->dtype, b->dtype))) {
                rc = tether_set_error(TETHER_ERR_MISMATCH,
                                      "alias group %d: textures '%.50s' and '%.50s' differ in "
                                      "extent or dtype",
                                      (int)b->alias_group, b->name, m->name);
                break;
            }
            if (m->size > it->size) {
                it->size = m->size;
            }
            if (m->alignment > it->align) {
                it->align = m->alignment;
            }
            if (m->first < it->first) {
                it->first = m->first;
            }
            if (m->last > it->last) {
                it->last = m->last;
            }
            out->item_of_buffer[j] = idx;
        }
        out->item_of_buffer[i] = idx;
        if (rc == TETHER_OK) {
            rc = resolve_pools(p, b, it, out->pool_storage + (size_t)idx * 2 * (size_t)p->npools);
        }
    }
    if (rc != TETHER_OK) {
        tether__plan_problem_free(out);
    }
    return rc;
}

int tether__plan_result_alloc(int nitems, tp_result *r) {
    memset(r, 0, sizeof(*r));
    size_t n = (size_t)nitems + 1;
    r->pool = malloc(n * sizeof(int));
    r->offset = malloc(n * sizeof(int64_t));
    r->image = malloc(n * sizeof(int));
    r->fallback = calloc(n, sizeof(bool));
    if (r->pool == NULL || r->offset == NULL || r->image == NULL || r->fallback == NULL) {
        tether__plan_result_free(r);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory planning");
    }
    for (int i = 0; i < nitems; i++) {
        r->pool[i] = -1;
        r->offset[i] = -1;
        r->image[i] = -1;
    }
    return TETHER_OK;
}

void tether__plan_result_free(tp_result *r) {
    free(r->pool);
    free(r->offset);
    free(r->image);
    free(r->fallback);
    free(r->images);
    memset(r, 0, sizeof(*r));
}

/* ------------------------------------------------------------------------------------------ */
/* Plans                                                                                      */
/* ------------------------------------------------------------------------------------------ */

static int64_t live_max(const tp_problem *tp, const tp_result *r, int pool, bool texels) {
    /* sweep over item start points: the maximum of a sum of intervals is reached at a start */
    int64_t best = 0;
    for (int i = 0; i < tp->nitems; i++) {
        if (r->pool[i] != pool) {
            continue;
        }
        int32_t t = tp->items[i].first;
        int64_t sum = 0;
        for (int j = 0; j < tp->nitems; j++) {
            const tp_item *it = &tp->items[j];
            if (r->pool[j] == pool && it->first <= t && t <= it->last) {
                sum += texels ? it->width * it->height : it->size;
            }
        }
        if (sum > best) {
            best = sum;
        }
    }
    return best;
}

static int64_t items_lower_bound(const tp_problem *tp, bool include_textures) {
    int64_t best = 0;
    for (int i = 0; i < tp->nitems; i++) {
        int32_t t = tp->items[i].first;
        int64_t sum = 0;
        for (int j = 0; j < tp->nitems; j++) {
            const tp_item *it = &tp->items[j];
            if ((include_textures || !it->texture) && it->first <= t && t <= it->last) {
                sum += it->size;
            }
        }
        if (sum > best) {
            best = sum;
        }
    }
    return best;
}

static int build_plan(const tp_problem *tp, const tp_result *r, tether_plan_algorithm a,
                      tether_plan *out) {
    const tether_plan_problem *p = tp->p;
    memset(out, 0, sizeof(*out));
    out->algorithm = a;
    out->nbuffers = p->nbuffers;
    out->npools = p->npools;
    out->nimages = r->nimages;
    out->assign = calloc((size_t)p->nbuffers + 1, sizeof(tether_plan_assignment));
    out->pools = calloc((size_t)p->npools + 1, sizeof(tether_plan_pool_usage));
    out->images = calloc((size_t)r->nimages + 1, sizeof(tether_plan_image));
    if (out->assign == NULL || out->pools == NULL || out->images == NULL) {
        tether_plan_close(out);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory planning");
    }
    if (r->nimages > 0) {
        memcpy(out->images, r->images, (size_t)r->nimages * sizeof(tether_plan_image));
    }
    for (int b = 0; b < p->nbuffers; b++) {
        int i = tp->item_of_buffer[b];
        tether_plan_assignment *as = &out->assign[b];
        if (i < 0) {
            as->pool = -1;
            as->offset = -1;
            as->image = -1;
            continue;
        }
        as->pool = r->pool[i];
        as->offset = r->image[i] >= 0 ? -1 : r->offset[i];
        as->image = r->image[i];
        as->fallback = r->fallback[i];
        out->pools[as->pool].nbuffers++;
    }
    for (int i = 0; i < tp->nitems; i++) {
        if (r->fallback[i]) {
            out->nfallbacks++;
        }
    }
    for (int k = 0; k < p->npools; k++) {
        tether_plan_pool_usage *u = &out->pools[k];
        if (p->pools[k].scope == TETHER_SCOPE_GLOBAL) {
            for (int i = 0; i < tp->nitems; i++) {
                if (r->pool[i] == k && r->offset[i] + tp->items[i].size > u->size) {
                    u->size = r->offset[i] + tp->items[i].size;
                }
            }
            u->lower_bound = live_max(tp, r, k, false);
        } else {
            for (int m = 0; m < r->nimages; m++) {
                if (r->images[m].pool == k) {
                    u->nimages++;
                    u->size += tether__plan_image_bytes(&r->images[m]);
                    u->texel_area += r->images[m].width * r->images[m].height;
                }
            }
            u->lower_bound = live_max(tp, r, k, false);
            u->texel_waste = u->texel_area - live_max(tp, r, k, true);
        }
        out->total_bytes += u->size;
    }
    out->lower_bound = items_lower_bound(tp, true);
    return TETHER_OK;
}

static int run_one(const tp_problem *tp, tether_plan_algorithm a, tether_plan *out) {
    tp_result r;
    int rc = tether__plan_result_alloc(tp->nitems, &r);
    if (rc != TETHER_OK) {
        return rc;
    }
    rc = tether__plan_plan_textures(tp, a != TETHER_PLAN_NAIVE, &r);
    if (rc == TETHER_OK) {
        rc = tether__plan_place_1d(tp, a, &r);
    }
    if (rc == TETHER_OK) {
        rc = build_plan(tp, &r, a, out);
    }
    tether__plan_result_free(&r);
    return rc;
}

static int check_options(const tether_plan_options *o) {
    if ((unsigned)o->algorithm >= TETHER_PLAN_ALGORITHM_COUNT) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "unknown planner algorithm %d",
                                (int)o->algorithm);
    }
    if (o->search_budget < 0 || o->search_budget > 100000000) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "search budget %d must be in 0..100000000",
                                o->search_budget);
    }
    if (o->exact_max_buffers < 0 || o->exact_max_buffers > 20) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "exact_max_buffers %d must be in 0..20",
                                o->exact_max_buffers);
    }
    if (!(o->texture_max_ratio >= 1.0) || o->texture_max_ratio > 1e6) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "texture_max_ratio must be >= 1");
    }
    return TETHER_OK;
}

static bool better(const tether_plan *a, const tether_plan *b) {
    if (a->total_bytes != b->total_bytes) {
        return a->total_bytes < b->total_bytes;
    }
    return a->nfallbacks < b->nfallbacks;
}

static int plan_run(const tether_plan_problem *p, const tether_plan_options *o, tether_plan *out) {
    if (out != NULL) {
        memset(out, 0, sizeof(*out));
    }
    if (p == NULL || out == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "problem or plan is null");
    }
    tether_plan_options def;
    if (o == NULL) {
        tether_plan_options_init(&def);
        o = &def;
    }
    int rc = check_options(o);
    if (rc != TETHER_OK) {
        return rc;
    }
    tp_problem tp;
    if ((rc = tether__plan_problem_build(p, o, &tp)) != TETHER_OK) {
        return rc;
    }
    if (o->algorithm != TETHER_PLAN_BEST) {
        rc = run_one(&tp, o->algorithm, out);
        tether__plan_problem_free(&tp);
        return rc;
    }
    int first_rc = TETHER_OK;
    char first_msg[TETHER_ERROR_MSG_MAX] = "";
    bool have = false;
    /* on equal bytes the first in this order wins: the simplest plan that is as small */
    static const tether_plan_algorithm pref[TETHER_PLAN_BEST] = {
        TETHER_PLAN_GREEDY_SIZE, TETHER_PLAN_GREEDY_CONFLICTS, TETHER_PLAN_SHARED_OBJECTS,
        TETHER_PLAN_EXACT,       TETHER_PLAN_SEARCH,           TETHER_PLAN_NAIVE};
    for (int k = 0; k < TETHER_PLAN_BEST; k++) {
        tether_plan_algorithm a = pref[k];
        tether_plan cand;
        int r = run_one(&tp, a, &cand);
        if (r != TETHER_OK) {
            if (first_rc == TETHER_OK || a == TETHER_PLAN_GREEDY_SIZE) {
                first_rc = r;
                snprintf(first_msg, sizeof(first_msg), "%s", tether_last_error());
            }
            continue;
        }
        if (!have || better(&cand, out)) {
            if (have) {
                tether_plan_close(out);
            }
            *out = cand;
            have = true;
        } else {
            tether_plan_close(&cand);
        }
    }
    tether__plan_problem_free(&tp);
    if (!have) {
        return tether_set_error(first_rc, "%s", first_msg);
    }
    tether_clear_error();
    return TETHER_OK;
}

int tether_plan_run(const tether_plan_problem *p, const tether_plan_options *o, tether_plan *out) {
    int rc = plan_run(p, o, out);
#ifndef NDEBUG
    if (rc == TETHER_OK && (rc = tether_plan_validate(p, o, out)) != TETHER_OK) {
        tether_plan_close(out); /* a bug in an algorithm: never hand out a broken plan */
    }
#endif
    return rc;
}

void tether_plan_close(tether_plan *plan) {
    if (plan == NULL) {
        return;
    }
    free(plan->assign);
    free(plan->pools);
    free(plan->images);
    memset(plan, 0, sizeof(*plan));
}

int tether_plan_compare(const tether_plan_problem *p, const tether_plan_options *o,
                        tether_plan_summary *rows, int max_rows) {
    if (p == NULL || rows == NULL || max_rows < 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "problem or rows is null");
    }
    tether_plan_options def;
    if (o == NULL) {
        tether_plan_options_init(&def);
        o = &def;
    }
    int n = 0;
    for (int a = 0; a < TETHER_PLAN_BEST && n < max_rows; a++) {
        tether_plan_options oa = *o;
        oa.algorithm = (tether_plan_algorithm)a;
        tether_plan plan;
        tether_plan_summary *row = &rows[n++];
        memset(row, 0, sizeof(*row));
        row->algorithm = (tether_plan_algorithm)a;
        row->status = tether_plan_run(p, &oa, &plan);
        if (row->status != TETHER_OK) {
            snprintf(row->error, sizeof(row->error), "%s", tether_last_error());
            continue;
        }
        row->total_bytes = plan.total_bytes;
        row->nfallbacks = plan.nfallbacks;
        tether_plan_close(&plan);
    }
    tether_clear_error();
    return n;
}

int tether_plan_lower_bound(const tether_plan_problem *p, const tether_plan_options *o,
                            bool include_textures, int64_t *out) {
    if (p == NULL || out == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "problem or output is null");
    }
    tether_plan_options def;
    if (o == NULL) {
        tether_plan_options_init(&def);
        o = &def;
    }
    tp_problem tp;
    int rc = tether__plan_problem_build(p, o, &tp);
    if (rc != TETHER_OK) {
        return rc;
    }
    int64_t best = items_lower_bound(&tp, include_textures);
    tether__plan_problem_free(&tp);
    *out = best;
    return TETHER_OK;
}
