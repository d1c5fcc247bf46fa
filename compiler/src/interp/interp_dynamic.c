/*
 * The reference loops of the operators with data-dependent output sizes (nonzero, compress,
 * unique, nms; ops.def, ir/shapes_dynamic.c) for every element type. Each writes the data of
 * its actual shape densely at the start of its output (whose shape is the bound), or, with mode
 * TETHER__DYN_COUNT, the actual extent as int64 [1].
 *
 * What must stay true: the same selections, orders and counts as the generated C
 * (codegen/emit_c_dynamic.c computes the same loops: nms in float, ties broken by the lower box
 * index); a count above the bound is TETHER_ERR_LIMIT naming the node, detected before any
 * element past the bound is written; a condition selecting past the axis' extent is
 * TETHER_ERR_INVALID_ARG. The output is zeroed up to its bound first (consumers compute every
 * row of the bound: ir/shapes_dynamic.c). Nothing reads or writes outside a tensor.
 */
#include <stdlib.h>
#include <string.h>

#include "interp_internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static int cmp_val(val a, val b) {
    if (a.c == TETHER__DC_F32 || a.c == TETHER__DC_F64) {
        return a.f < b.f ? -1 : a.f > b.f ? 1 : 0;
    }
    if (a.c == TETHER__DC_INT) {
        return a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
    }
    return a.u < b.u ? -1 : a.u > b.u ? 1 : 0;
}

static bool nonzero_val(val v) {
    return v.c == TETHER__DC_F32 || v.c == TETHER__DC_F64 ? v.f != 0
           : v.c == TETHER__DC_INT                        ? v.i != 0
                                                          : v.u != 0;
}

static int over(const tether_ir_node *n, int64_t count, int64_t bound) {
    return tether__ir_node_error(n, TETHER_ERR_LIMIT,
                                 "the output has %lld%s entries along its data-dependent "
                                 "dimension, more than its bound %lld",
                                 (long long)count, count > bound ? "" : " or more",
                                 (long long)bound);
}

/* Lexicographic order of items a and b of x (over outer, then inner). */
static int cmp_items(const tether_ir_tensor *x, const void *xp, tether__ir_items it, int64_t a,
                     int64_t b) {
    for (int64_t p = 0; p < it.outer; p++) {
        for (int64_t i = 0; i < it.inner; i++) {
            int c =
                cmp_val(tether__interp_load(xp, x->dtype, (size_t)((p * it.m + a) * it.inner + i)),
                        tether__interp_load(xp, x->dtype, (size_t)((p * it.m + b) * it.inner + i)));
            if (c) {
                return c;
            }
        }
    }
    return 0;
}

static bool first_occurrence(const tether_ir_tensor *x, const void *xp, tether__ir_items it,
                             int64_t j) {
    for (int64_t k = 0; k < j; k++) {
        if (cmp_items(x, xp, it, k, j) == 0) {
            return false;
        }
    }
    return true;
}

static int run_nonzero(const tether_ir_graph *g, const tether_ir_node *n, void **buf, int64_t b) {
    const tether_ir_tensor *x = &g->tensors[n->inputs[0]];
    const void *xp = buf[n->inputs[0]];
    size_t total = tether_ir_tensor_elements(x);
    int64_t cnt = 0;
    for (size_t f = 0; f < total; f++) {
        cnt += nonzero_val(tether__interp_load(xp, x->dtype, f));
    }
    if (cnt > b) {
        return over(n, cnt, b);
    }
    int64_t *y = buf[n->outputs[0]];
    if (n->attrs.mode & TETHER__DYN_COUNT) {
        y[0] = cnt;
        return TETHER_OK;
    }
    int64_t j = 0;
    for (size_t f = 0; f < total; f++) {
        if (!nonzero_val(tether__interp_load(xp, x->dtype, f))) {
            continue;
        }
        int64_t r = (int64_t)f;
        for (int d = x->ndim - 1; d >= 0; d--) {
            y[d * cnt + j] = r % x->shape[d];
            r /= x->shape[d];
        }
        if (x->ndim == 0) {
            y[j] = 0;
        }
        j++;
    }
    return TETHER_OK;
}

static int run_compress(const tether_ir_graph *g, const tether_ir_node *n, void **buf, int64_t b) {
    const tether_ir_tensor *x = &g->tensors[n->inputs[0]], *c = &g->tensors[n->inputs[1]];
    const unsigned char *xp = buf[n->inputs[0]];
    tether__ir_items it = tether__ir_items_of(x, &n->attrs);
    int64_t len = (int64_t)tether_ir_tensor_elements(c), cnt = 0;
    for (int64_t k = 0; k < len; k++) {
        if (!nonzero_val(tether__interp_load(buf[n->inputs[1]], c->dtype, (size_t)k))) {
            continue;
        }
        if (k >= it.m) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "the condition selects index %lld, past the extent %lld",
                                         (long long)k, (long long)it.m);
        }
        cnt++;
    }
    if (cnt > b) {
        return over(n, cnt, b);
    }
    if (n->attrs.mode & TETHER__DYN_COUNT) {
        ((int64_t *)buf[n->outputs[0]])[0] = cnt;
        return TETHER_OK;
    }
    size_t es = tether_dtype_bytes(x->dtype);
    unsigned char *y = buf[n->outputs[0]];
    for (int64_t p = 0; p < it.outer; p++) {
        int64_t r = 0;
        for (int64_t k = 0; k < len && k < it.m; k++) {
            if (nonzero_val(tether__interp_load(buf[n->inputs[1]], c->dtype, (size_t)k))) {
                memcpy(y + (size_t)((p * cnt + r) * it.inner) * es,
                       xp + (size_t)((p * it.m + k) * it.inner) * es, (size_t)it.inner * es);
                r++;
            }
        }
    }
    return TETHER_OK;
}

static int run_unique(const tether_ir_graph *g, const tether_ir_node *n, void **buf, int64_t b) {
    const tether_ir_tensor *x = &g->tensors[n->inputs[0]];
    const unsigned char *xp = buf[n->inputs[0]];
    tether__ir_items it = tether__ir_items_of(x, &n->attrs);
    int out = (int)((n->attrs.mode >> 4) & 3);
    int64_t *y = buf[n->outputs[0]];
    if (n->ninputs < 2 || n->inputs[1] < 0) { /* the indices, or the count */
        int64_t u = 0;
        for (int64_t j = 0; j < it.m; j++) {
            if (!first_occurrence(x, xp, it, j)) {
                continue;
            }
            if (u >= b) {
                return over(n, u + 1, b);
            }
            if (!(n->attrs.mode & TETHER__DYN_COUNT)) {
                y[u] = j;
            }
            u++;
        }
        if (n->attrs.mode & TETHER__DYN_COUNT) {
            y[0] = u;
            return TETHER_OK;
        }
        for (int64_t r = 1; (n->attrs.mode & 1) && r < u; r++) { /* insertion sort by item */
            int64_t v = y[r], s = r;
            while (s > 0 && cmp_items(x, xp, it, y[s - 1], v) > 0) {
                y[s] = y[s - 1];
                s--;
            }
            y[s] = v;
        }
        if (u < b) {
            y[u] = -1; /* the terminator the other outputs read */
        }
        return TETHER_OK;
    }
    const tether_ir_tensor *it_t = &g->tensors[n->inputs[1]];
    const int64_t *idx = buf[n->inputs[1]];
    int64_t bi = it_t->shape[0], u = 0;
    while (u < bi && idx[u] >= 0) {
        u++;
    }
    if (u > b) {
        return over(n, u, b);
    }
    for (int64_t r = 0; r < u; r++) {
        if (idx[r] >= it.m) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "index %lld out of range",
                                         (long long)idx[r]);
        }
    }
    if (out == 0) {
        size_t es = tether_dtype_bytes(x->dtype);
        unsigned char *yv = buf[n->outputs[0]];
        for (int64_t p = 0; p < it.outer; p++) {
            for (int64_t r = 0; r < u; r++) {
                memcpy(yv + (size_t)((p * u + r) * it.inner) * es,
                       xp + (size_t)((p * it.m + idx[r]) * it.inner) * es, (size_t)it.inner * es);
            }
        }
    } else if (out == 2) {
        for (int64_t j = 0; j < it.m; j++) {
            y[j] = 0;
            for (int64_t r = 0; r < u; r++) {
                if (cmp_items(x, xp, it, idx[r], j) == 0) {
                    y[j] = r;
                    break;
                }
            }
        }
    } else {
        for (int64_t r = 0; r < u; r++) {
            y[r] = 0;
            for (int64_t j = 0; j < it.m; j++) {
                y[r] += cmp_items(x, xp, it, idx[r], j) == 0;
            }
        }
    }
    return TETHER_OK;
}

/* Box j of batch bt as xmin, ymin, xmax, ymax (the ONNX corner or center format). */
static void box_of(const tether_ir_tensor *bx, const void *bp, int center, int64_t off, float *o) {
    float v[4];
    for (int q = 0; q < 4; q++) {
        v[q] = (float)tether__interp_load(bp, bx->dtype, (size_t)(off + q)).f;
    }
    if (center) {
        o[0] = v[0] - v[2] / 2.0f;
        o[2] = v[0] + v[2] / 2.0f;
        o[1] = v[1] - v[3] / 2.0f;
        o[3] = v[1] + v[3] / 2.0f;
    } else {
        o[0] = v[1] < v[3] ? v[1] : v[3];
        o[2] = v[1] < v[3] ? v[3] : v[1];
        o[1] = v[0] < v[2] ? v[0] : v[2];
        o[3] = v[0] < v[2] ? v[2] : v[0];
    }
}

static bool suppressed(const float *a, const float *b, float thr) {
    float ix0 = a[0] > b[0] ? a[0] : b[0], ix1 = a[2] < b[2] ? a[2] : b[2];
    float iy0 = a[1] > b[1] ? a[1] : b[1], iy1 = a[3] < b[3] ? a[3] : b[3];
    if (ix1 <= ix0 || iy1 <= iy0) {
        return false;
    }
    float inter = (ix1 - ix0) * (iy1 - iy0);
    float a1 = (a[2] - a[0]) * (a[3] - a[1]), a2 = (b[2] - b[0]) * (b[3] - b[1]);
    float uni = a1 + a2 - inter;
    if (inter <= 0.0f || a1 <= 0.0f || a2 <= 0.0f || uni <= 0.0f) {
        return false;
    }
    return inter / uni > thr;
}

static int run_nms(const tether_ir_graph *g, const tether_ir_node *n, void **buf, int64_t bound) {
    const tether_ir_attrs *a = &n->attrs;
    int64_t *y = buf[n->outputs[0]];
    if (a->mode & TETHER__DYN_COUNT) { /* the rows of the nms node, up to its -1 row */
        const int64_t *rows = buf[n->inputs[0]];
        int64_t cnt = 0;
        while (cnt < bound && rows[cnt * 3] >= 0) {
            cnt++;
        }
        y[0] = cnt;
        return TETHER_OK;
    }
    const tether_ir_tensor *bx = &g->tensors[n->inputs[0]], *sc = &g->tensors[n->inputs[1]];
    const void *bp = buf[n->inputs[0]], *sp = buf[n->inputs[1]];
    int64_t B = sc->shape[0], C = sc->shape[1], N = sc->shape[2], cnt = 0;
    int center = (int)(a->mode & 1), has_thr = (a->mode & 4) != 0;
    for (int64_t bt = 0; bt < B; bt++) {
        for (int64_t c = 0; c < C; c++) {
            int64_t first = cnt, prev = -1;
            float prev_s = 0.0f;
            const int64_t base = (bt * C + c) * N;
            while (cnt - first < a->k) {
                int64_t best = -1; /* next in order: score down, then index up */
                float bs = 0.0f;
                for (int64_t j = 0; j < N; j++) {
                    float s = (float)tether__interp_load(sp, sc->dtype, (size_t)(base + j)).f;
                    if ((has_thr && !(s > a->beta)) || s != s) {
                        continue;
                    }
                    if (prev >= 0 && !(s < prev_s || (s == prev_s && j > prev))) {
                        continue;
                    }
                    if (best < 0 || s > bs) {
                        best = j;
                        bs = s;
                    }
                }
                if (best < 0) {
                    break;
                }
                prev = best;
                prev_s = bs;
                float cb[4], sb[4];
                box_of(bx, bp, center, (bt * N + best) * 4, cb);
                bool keep = true;
                for (int64_t r = first; keep && r < cnt; r++) { /* this class' selections */
                    box_of(bx, bp, center, (bt * N + y[r * 3 + 2]) * 4, sb);
                    keep = !suppressed(cb, sb, a->alpha);
                }
                if (!keep) {
                    continue;
                }
                if (cnt >= bound) {
                    return over(n, cnt + 1, bound);
                }
                y[cnt * 3] = bt;
                y[cnt * 3 + 1] = c;
                y[cnt * 3 + 2] = best;
                cnt++;
            }
        }
    }
    if (cnt < bound) {
        y[cnt * 3] = -1; /* the terminator row its extent node reads */
    }
    return TETHER_OK;
}

int tether__interp_dynamic(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    int64_t b = tether__ir_dyn_bound(g, n);
    if (!(n->attrs.mode & TETHER__DYN_COUNT)) { /* past the actual data: zeros (consumers) */
        memset(buf[n->outputs[0]], 0, tether_ir_tensor_bytes(&g->tensors[n->outputs[0]]));
    }
    if (n->op == TETHER_OP_NONZERO) {
        return run_nonzero(g, n, buf, b);
    }
    if (n->op == TETHER_OP_COMPRESS) {
        return run_compress(g, n, buf, b);
    }
    if (n->op == TETHER_OP_UNIQUE) {
        return run_unique(g, n, buf, b);
    }
    return run_nms(g, n, buf, b);
}
