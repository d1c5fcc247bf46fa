/*
 * tether_plan_validate: checks a plan against its problem (planner.h). It re-derives every rule
 * of a valid plan from the problem alone, sharing no code with the planning algorithms (it uses
 * nothing of internal.h): no two buffers live at the same time overlap in the same pool,
 * alignments, capacities, pins, candidate pools, alias groups share storage, texture images
 * match scope/dtype, cover their users and stay within the device limits, and the reported
 * sizes/totals agree with the placements. Written from the rules in docs/planner.md; quadratic
 * and simple on purpose. tether_plan_run calls it on every plan it returns when NDEBUG is not
 * defined; the planner tests call it on every plan they make.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/planner.h"

static int failf(const tether_plan *plan, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static int failf(const tether_plan *plan, const char *fmt, ...) {
    char why[TETHER_ERROR_MSG_MAX - 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return tether_set_error(TETHER_ERR_INTERNAL, "invalid plan (%s): %s",
                            tether_plan_algorithm_name(plan->algorithm), why);
}

static int pool_index(const tether_plan_problem *p, const char *name) {
    for (int i = 0; i < p->npools; i++) {
        if (strcmp(p->pools[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

static bool caller_owned(const tether_plan_buffer *b, const tether_plan_options *o) {
    return (b->kind == TETHER_PLAN_GRAPH_INPUT && !o->plan_inputs) ||
           (b->kind == TETHER_PLAN_GRAPH_OUTPUT && !o->plan_outputs);
}

static bool same_group(const tether_plan_buffer *a, const tether_plan_buffer *b) {
    return a->alias_group != 0 && a->alias_group == b->alias_group;
}

static bool listed(const tether_plan_buffer *b, const char *pool) {
    for (int i = 0; i < b->npools; i++) {
        if (strcmp(b->pools[i], pool) == 0) {
            return true;
        }
    }
    return b->npools == 0;
}

static int64_t tex_bytes(int64_t w, int64_t h, DLDataType dt) {
    return w * h * 4 * (int64_t)tether_dtype_bytes(dt);
}

int tether_plan_validate(const tether_plan_problem *p, const tether_plan_options *o,
                         const tether_plan *plan) {
    if (p == NULL || plan == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "problem or plan is null");
    }
    tether_plan_options def;
    if (o == NULL) {
        tether_plan_options_init(&def);
        o = &def;
    }
    if (plan->nbuffers != p->nbuffers || plan->npools != p->npools) {
        return failf(plan, "plan has %d buffers/%d pools, problem %d/%d", plan->nbuffers,
                     plan->npools, p->nbuffers, p->npools);
    }
    int nfall = 0;
    for (int i = 0; i < p->nbuffers; i++) {
        const tether_plan_buffer *b = &p->buffers[i];
        const tether_plan_assignment *a = &plan->assign[i];
        bool group_caller = caller_owned(b, o);
        for (int j = 0; j < p->nbuffers; j++) {
            if (same_group(b, &p->buffers[j]) && caller_owned(&p->buffers[j], o)) {
                group_caller = true;
            }
        }
        if (a->pool < 0) {
            if (!group_caller) {
                return failf(plan, "buffer %s was not planned", b->name);
            }
            continue;
        }
        if (group_caller) {
            return failf(plan, "buffer %s belongs to the caller but was planned", b->name);
        }
        if (a->pool >= p->npools) {
            return failf(plan, "buffer %s: pool index %d out of range", b->name, a->pool);
        }
        const tether_plan_pool *pool = &p->pools[a->pool];
        if (b->pin_pool != NULL) {
            if (pool_index(p, b->pin_pool) != a->pool) {
                return failf(plan, "buffer %s pinned to %s but placed in %s", b->name, b->pin_pool,
                             pool->name);
            }
            if (b->pin_offset >= 0 && a->offset != b->pin_offset) {
                return failf(plan, "buffer %s pinned at %lld but placed at %lld", b->name,
                             (long long)b->pin_offset, (long long)a->offset);
            }
        } else if (!listed(b, pool->name)) {
            return failf(plan, "buffer %s placed in %s, not one of its pools", b->name, pool->name);
        }
        bool tex = tether_scope_is_texture(b->scope);
        if (a->image >= 0) {
            if (!tex || a->image >= plan->nimages) {
                return failf(plan, "buffer %s: bad image %d", b->name, a->image);
            }
            const tether_plan_image *img = &plan->images[a->image];
            if (img->pool != a->pool || pool->scope != b->scope || img->scope != b->scope ||
                !tether_dtype_equal(img->dtype, b->dtype)) {
                return failf(plan, "buffer %s: image %d scope/dtype/pool mismatch", b->name,
                             a->image);
            }
            if (img->width < b->width || img->height < b->height) {
                return failf(plan, "buffer %s (%lldx%lld) does not fit image %d (%lldx%lld)",
                             b->name, (long long)b->width, (long long)b->height, a->image,
                             (long long)img->width, (long long)img->height);
            }
            if (a->fallback) {
                return failf(plan, "buffer %s: image and fallback", b->name);
            }
            continue;
        }
        if (pool->scope != TETHER_SCOPE_GLOBAL) {
            return failf(plan, "buffer %s: offset placement in texture pool %s", b->name,
                         pool->name);
        }
        if (tex != a->fallback) {
            return failf(plan, "buffer %s: fallback flag %d for scope %s", b->name, a->fallback,
                         tether_scope_name(b->scope));
        }
        nfall += a->fallback;
        int64_t align = pool->alignment > b->alignment ? pool->alignment : b->alignment;
        if (a->offset < 0 || a->offset % align != 0) {
            return failf(plan, "buffer %s: offset %lld not aligned to %lld", b->name,
                         (long long)a->offset, (long long)align);
        }
        if (pool->capacity > 0 && a->offset + b->size > pool->capacity) {
            return failf(plan, "buffer %s: ends at %lld past capacity %lld of %s", b->name,
                         (long long)(a->offset + b->size), (long long)pool->capacity, pool->name);
        }
        if (a->offset + b->size > plan->pools[a->pool].size) {
            return failf(plan, "buffer %s ends past the reported size of %s", b->name, pool->name);
        }
    }
    if (nfall != plan->nfallbacks) {
        return failf(plan, "nfallbacks %d but %d buffers fell back", plan->nfallbacks, nfall);
    }
    /* pairs */
    for (int i = 0; i < p->nbuffers; i++) {
        const tether_plan_buffer *b = &p->buffers[i];
        const tether_plan_assignment *a = &plan->assign[i];
        for (int j = i + 1; j < p->nbuffers; j++) {
            const tether_plan_buffer *c = &p->buffers[j];
            const tether_plan_assignment *d = &plan->assign[j];
            if (same_group(b, c)) {
                if (a->pool != d->pool || a->offset != d->offset || a->image != d->image) {
                    return failf(plan, "aliased %s and %s do not share storage", b->name, c->name);
                }
                continue;
            }
            if (a->pool < 0 || a->pool != d->pool) {
                continue;
            }
            bool live = b->first <= c->last && c->first <= b->last;
            if (!live) {
                continue;
            }
            if (a->image >= 0 || d->image >= 0) {
                if (a->image == d->image) {
                    return failf(plan, "%s and %s share image %d while both live", b->name, c->name,
                                 a->image);
                }
                continue;
            }
            if (a->offset < d->offset + c->size && d->offset < a->offset + b->size) {
                return failf(plan,
                             "%s [%lld,+%lld) and %s [%lld,+%lld) overlap in %s while both live",
                             b->name, (long long)a->offset, (long long)b->size, c->name,
                             (long long)d->offset, (long long)c->size, p->pools[a->pool].name);
            }
        }
    }
    /* pools */
    int64_t total = 0;
    for (int k = 0; k < p->npools; k++) {
        const tether_plan_pool *pool = &p->pools[k];
        const tether_plan_pool_usage *u = &plan->pools[k];
        total += u->size;
        if (pool->scope == TETHER_SCOPE_GLOBAL) {
            int64_t end = 0;
            for (int i = 0; i < p->nbuffers; i++) {
                if (plan->assign[i].pool == k &&
                    plan->assign[i].offset + p->buffers[i].size > end) {
                    end = plan->assign[i].offset + p->buffers[i].size;
                }
            }
            if (end != u->size) {
                return failf(plan, "pool %s: reported size %lld, buffers end at %lld", pool->name,
                             (long long)u->size, (long long)end);
            }
            continue;
        }
        int64_t bytes = 0;
        for (int m = 0; m < plan->nimages; m++) {
            const tether_plan_image *img = &plan->images[m];
            if (img->pool != k) {
                continue;
            }
            if ((pool->max_width && img->width > pool->max_width) ||
                (pool->max_height && img->height > pool->max_height)) {
                return failf(plan, "image %d (%lldx%lld) over the limit of %s", m,
                             (long long)img->width, (long long)img->height, pool->name);
            }
            bool used = false;
            for (int i = 0; i < p->nbuffers; i++) {
                used = used || plan->assign[i].image == m;
            }
            if (!used) {
                return failf(plan, "image %d has no user", m);
            }
            bytes += tex_bytes(img->width, img->height, img->dtype);
        }
        if (bytes != u->size) {
            return failf(plan, "texture pool %s: size %lld, images hold %lld", pool->name,
                         (long long)u->size, (long long)bytes);
        }
        if (pool->capacity > 0 && bytes > pool->capacity) {
            return failf(plan, "texture pool %s over capacity", pool->name);
        }
    }
    if (total != plan->total_bytes) {
        return failf(plan, "total %lld but pools sum to %lld", (long long)plan->total_bytes,
                     (long long)total);
    }
    if (plan->total_bytes < plan->lower_bound) {
        return failf(plan, "total %lld below the lower bound %lld", (long long)plan->total_bytes,
                     (long long)plan->lower_bound);
    }
    return TETHER_OK;
}
