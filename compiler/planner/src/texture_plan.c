/*
 * The 2D texture phase: texture-scope items become image objects of texture pools.
 *
 * What must stay true:
 *  - an image is shared only by items of the same scope and dtype whose lifetimes are pairwise
 *    disjoint;
 *  - an image grows (to the max width and max height of its users) only while the grown extent
 *    stays within the pool's max width/height and its aspect ratio (long side / short side)
 *    within options.texture_max_ratio, and only when growing adds less area than a new image;
 *  - a pool's images never exceed its capacity (bytes, when bounded);
 *  - an item that fits no texture pool falls back to a global pool of its candidates (marked in
 *    r->fallback, placed by the 1D phase); with no global candidate it is an error naming the
 *    buffer, its extent and the limit.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tether/crt/dtype.h"

static _Thread_local const tp_problem *g_tex_tp; /* qsort context */

static int cmp_area(const void *a, const void *b) {
    const tp_item *x = &g_tex_tp->items[*(const int *)a];
    const tp_item *y = &g_tex_tp->items[*(const int *)b];
    int64_t ax = x->width * x->height, ay = y->width * y->height;
    if (ax != ay) {
        return ax > ay ? -1 : 1;
    }
    if (x->first != y->first) {
        return x->first < y->first ? -1 : 1;
    }
    return *(const int *)a - *(const int *)b;
}

static int add_image(tp_result *r, int **heads, const tether_plan_image *img) {
    if (r->nimages == r->cap_images) {
        int cap = r->cap_images ? r->cap_images * 2 : 8;
        tether_plan_image *ni = realloc(r->images, (size_t)cap * sizeof(*ni));
        if (ni == NULL) {
            return -1;
        }
        r->images = ni;
        int *nh = realloc(*heads, (size_t)cap * sizeof(int));
        if (nh == NULL) {
            return -1;
        }
        *heads = nh;
        r->cap_images = cap;
    }
    r->images[r->nimages] = *img;
    (*heads)[r->nimages] = -1;
    return r->nimages++;
}

static int64_t pool_image_bytes(const tp_result *r, int pool) {
    int64_t sum = 0;
    for (int m = 0; m < r->nimages; m++) {
        if (r->images[m].pool == pool) {
            sum += tether__plan_image_bytes(&r->images[m]);
        }
    }
    return sum;
}

static bool aspect_ok(int64_t w, int64_t h, double ratio) {
    int64_t lo = w < h ? w : h, hi = w < h ? h : w;
    return (double)hi <= ratio * (double)lo;
}

int tether__plan_plan_textures(const tp_problem *tp, bool reuse, tp_result *r) {
    const tether_plan_problem *p = tp->p;
    int *order = malloc(((size_t)tp->nitems + 1) * sizeof(int));
    int *next_member = malloc(((size_t)tp->nitems + 1) * sizeof(int));
    int *heads = NULL;
    if (order == NULL || next_member == NULL) {
        free(order);
        free(next_member);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory planning textures");
    }
    int n = 0;
    for (int i = 0; i < tp->nitems; i++) {
        if (tp->items[i].texture && !tp->items[i].pinned_global) {
            order[n++] = i;
        }
        if (tp->items[i].pinned_global) {
            r->fallback[i] = true; /* pinned to a global pool: stored as a 1D buffer */
        }
    }
    g_tex_tp = tp;
    qsort(order, (size_t)n, sizeof(int), cmp_area);
    int rc = TETHER_OK;
    for (int k = 0; k < n && rc == TETHER_OK; k++) {
        int i = order[k];
        const tp_item *it = &tp->items[i];
        bool placed = false;
        int limit_pool = -1;
        for (int c = 0; c < it->ntcand && !placed; c++) {
            int pi = it->tcand[c];
            const tether_plan_pool *pool = &p->pools[pi];
            int64_t maxw = pool->max_width ? pool->max_width : INT64_MAX;
            int64_t maxh = pool->max_height ? pool->max_height : INT64_MAX;
            if (it->width > maxw || it->height > maxh) {
                limit_pool = pi;
                continue;
            }
            int64_t used = pool_image_bytes(r, pi);
            int64_t cap = pool->capacity;
            int best = -1;
            int64_t best_added = 0, best_area = 0;
            for (int m = 0; reuse && m < r->nimages; m++) {
                const tether_plan_image *img = &r->images[m];
                if (img->pool != pi || img->scope != it->scope ||
                    !tether_dtype_equal(img->dtype, it->dtype)) {
                    continue;
                }
                bool free_img = true;
                for (int u = heads[m]; u >= 0 && free_img; u = next_member[u]) {
                    free_img = !tether__plan_overlap(it->first, it->last, tp->items[u].first,
                                                     tp->items[u].last);
                }
                if (!free_img) {
                    continue;
                }
                int64_t nw = it->width > img->width ? it->width : img->width;
                int64_t nh = it->height > img->height ? it->height : img->height;
                bool grows = nw != img->width || nh != img->height;
                if (nw > maxw || nh > maxh) {
                    continue;
                }
                if (grows && !aspect_ok(nw, nh, tp->opt.texture_max_ratio)) {
                    continue;
                }
                int64_t added = nw * nh - img->width * img->height;
                if (added >= it->width * it->height) {
                    continue; /* a new image would cost no more */
                }
                int64_t grown_bytes = tether__plan_texture_bytes(nw, nh, it->dtype);
                if (cap != TETHER_PLAN_UNBOUNDED &&
                    used - tether__plan_image_bytes(img) + grown_bytes > cap) {
                    continue;
                }
                int64_t area = img->width * img->height;
                if (best < 0 || added < best_added || (added == best_added && area < best_area)) {
                    best = m;
                    best_added = added;
                    best_area = area;
                }
            }
            if (best >= 0) {
                tether_plan_image *img = &r->images[best];
                img->width = it->width > img->width ? it->width : img->width;
                img->height = it->height > img->height ? it->height : img->height;
                next_member[i] = heads[best];
                heads[best] = i;
                r->pool[i] = pi;
                r->image[i] = best;
                placed = true;
                break;
            }
            if (cap != TETHER_PLAN_UNBOUNDED &&
                used + tether__plan_texture_bytes(it->width, it->height, it->dtype) > cap) {
                continue;
            }
            tether_plan_image img = {pi, it->scope, it->dtype, it->width, it->height};
            int m = add_image(r, &heads, &img);
            if (m < 0) {
                rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory planning textures");
                break;
            }
            next_member[i] = -1;
            heads[m] = i;
            r->pool[i] = pi;
            r->image[i] = m;
            placed = true;
        }
        if (placed || rc != TETHER_OK) {
            continue;
        }
        if (it->ncand > 0) {
            r->fallback[i] = true;
            continue;
        }
        const char *name = p->buffers[it->rep].name;
        if (limit_pool >= 0) {
            const tether_plan_pool *pool = &p->pools[limit_pool];
            rc = tether_set_error(TETHER_ERR_LIMIT,
                                  "texture buffer '%.50s' (%lldx%lld texels) exceeds the image "
                                  "limit %lldx%lld of pool '%s' and has no global pool to fall "
                                  "back to",
                                  name, (long long)it->width, (long long)it->height,
                                  (long long)pool->max_width, (long long)pool->max_height,
                                  pool->name);
        } else {
            rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY,
                                  "texture buffer '%.50s' (%lldx%lld texels, %lld bytes) fits in "
                                  "no texture pool's capacity and has no global pool to fall "
                                  "back to",
                                  name, (long long)it->width, (long long)it->height,
                                  (long long)it->size);
        }
    }
    free(order);
    free(next_member);
    free(heads);
    return rc;
}
