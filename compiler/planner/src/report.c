/*
 * The human-readable plan report: per-pool size, lower bound and ratio, texture statistics,
 * fallbacks, buffers left to the caller, and the table of every algorithm's result.
 * What must stay true: every number printed comes from the plan/rows passed in (no
 * recomputation that could disagree with the JSON); ratios are printed with 3 decimals.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static void ratio(char *buf, size_t n, int64_t num, int64_t den) {
    if (den <= 0) {
        snprintf(buf, n, "-");
    } else {
        snprintf(buf, n, "%.3f", (double)num / (double)den);
    }
}

static void capacity_text(char *buf, size_t n, int64_t cap) {
    if (cap == TETHER_PLAN_UNBOUNDED) {
        snprintf(buf, n, "unbounded");
    } else {
        snprintf(buf, n, "%lld", (long long)cap);
    }
}

int tether_plan_report(FILE *out, const tether_plan_problem *p, const tether_plan *plan,
                       const tether_plan_summary *rows, int nrows) {
    if (out == NULL || p == NULL || plan == NULL || (rows == NULL && nrows > 0)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "report: null argument");
    }
    if (plan->nbuffers != p->nbuffers || plan->npools != p->npools) {
        return tether_set_error(TETHER_ERR_MISMATCH, "the plan was made for another problem");
    }
    char r[32], cap[32];
    ratio(r, sizeof(r), plan->total_bytes, plan->lower_bound);
    fprintf(out, "plan: %s, %lld bytes in total, lower bound %lld, ratio %s\n",
            tether_plan_algorithm_name(plan->algorithm), (long long)plan->total_bytes,
            (long long)plan->lower_bound, r);
    fprintf(out, "%-20s %-15s %12s %12s %12s %7s %8s\n", "pool", "scope", "capacity", "size",
            "lower bound", "ratio", "buffers");
    for (int k = 0; k < p->npools; k++) {
        const tether_plan_pool *pool = &p->pools[k];
        const tether_plan_pool_usage *u = &plan->pools[k];
        ratio(r, sizeof(r), u->size, u->lower_bound);
        capacity_text(cap, sizeof(cap), pool->capacity);
        fprintf(out, "%-20s %-15s %12s %12lld %12lld %7s %8d\n", pool->name,
                tether_scope_name(pool->scope), cap, (long long)u->size, (long long)u->lower_bound,
                r, u->nbuffers);
        if (tether_scope_is_texture(pool->scope)) {
            fprintf(out, "%-20s   images %d, texel area %lld, waste %lld texels", "", u->nimages,
                    (long long)u->texel_area, (long long)u->texel_waste);
            if (pool->max_width || pool->max_height) {
                fprintf(out, ", device limit %lldx%lld", (long long)pool->max_width,
                        (long long)pool->max_height);
            }
            fprintf(out, "\n");
        }
    }
    for (int m = 0; m < plan->nimages; m++) {
        const tether_plan_image *img = &plan->images[m];
        fprintf(out, "image %d: pool %s, %s, %lldx%lld texels\n", m, p->pools[img->pool].name,
                tether_scope_name(img->scope), (long long)img->width, (long long)img->height);
    }
    for (int b = 0; b < p->nbuffers; b++) {
        const tether_plan_assignment *as = &plan->assign[b];
        const tether_plan_buffer *buf = &p->buffers[b];
        if (as->fallback) {
            fprintf(out,
                    "fallback: texture buffer '%s' (%lldx%lld texels) placed in global pool %s "
                    "at offset %lld (%lld bytes): %s\n",
                    buf->name, (long long)buf->width, (long long)buf->height,
                    p->pools[as->pool].name, (long long)as->offset, (long long)buf->size,
                    buf->pin_pool != NULL ? "pinned there"
                                          : "no texture pool could hold it (device image limit "
                                            "or capacity)");
        }
    }
    int unplanned = 0;
    for (int b = 0; b < p->nbuffers; b++) {
        if (plan->assign[b].pool < 0) {
            fprintf(out, "%s%s", unplanned++ ? ", " : "left to the caller: ", p->buffers[b].name);
        }
    }
    if (unplanned > 0) {
        fprintf(out, "\n");
    }
    if (nrows > 0) {
        fprintf(out, "\n%-18s %14s %10s %10s  %s\n", "algorithm", "bytes", "vs bound", "fallbacks",
                "note");
        for (int i = 0; i < nrows; i++) {
            const tether_plan_summary *row = &rows[i];
            const char *name = tether_plan_algorithm_name(row->algorithm);
            if (row->status != TETHER_OK) {
                fprintf(out, "%-18s %14s %10s %10s  %s\n", name ? name : "?", "-", "-", "-",
                        row->error);
                continue;
            }
            ratio(r, sizeof(r), row->total_bytes, plan->lower_bound);
            fprintf(out, "%-18s %14lld %10s %10d  %s\n", name ? name : "?",
                    (long long)row->total_bytes, r, row->nfallbacks,
                    row->algorithm == plan->algorithm ? "<- chosen" : "");
        }
        fprintf(out, "%-18s %14lld %10s\n", "lower bound", (long long)plan->lower_bound, "1.000");
    }
    return ferror(out) ? tether_set_error(TETHER_ERR_IO, "cannot write the report") : TETHER_OK;
}
