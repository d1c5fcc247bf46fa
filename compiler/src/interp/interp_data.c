/*
 * The reference loops of the DATA operators (gather, gather_elements, gather_nd,
 * scatter_elements, scatter_nd, topk, arg_max, arg_min, cumsum, trilu, one_hot, tile, slice,
 * einsum; ops.def) for every element type: elements are moved as bytes, compared and summed in
 * their class (interp_internal.h: floats in double, integers exactly with wrap-around).
 *
 * What must stay true: an index is read, wrapped once when negative, and checked against its
 * extent before any access; one out of range is TETHER_ERR_INVALID_ARG naming the node and the
 * index (the generated C returns the same code), never a read or write outside a buffer. The
 * switch names every DATA row (TETHER__CASES_NOT_DATA for the others).
 */
#include <stdlib.h>
#include <string.h>

#include "interp_internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

typedef struct view {
    const tether_ir_tensor *t;
    size_t es;
    int64_t st[TETHER_IR_MAX_NDIM]; /* element strides */
} view;

static void view_of(const tether_ir_tensor *t, view *v) {
    v->t = t;
    v->es = tether_dtype_bytes(t->dtype);
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        v->st[d] = s;
        s *= t->shape[d];
    }
}

static void unravel(int64_t f, const int64_t *shape, int nd, int64_t *idx) {
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = shape[d] ? f % shape[d] : 0;
        f = shape[d] ? f / shape[d] : 0;
    }
}

static int64_t prod(const int64_t *shape, int from, int to) {
    int64_t p = 1;
    for (int d = from; d < to; d++) {
        p *= shape[d];
    }
    return p;
}

/* Index k of an int32/int64 tensor, wrapped once when negative and checked against dim. */
static int index_at(const tether_ir_node *n, const tether_ir_tensor *t, const void *p, size_t k,
                    int64_t dim, int64_t *out) {
    int64_t i = tether__interp_load(p, t->dtype, k).i;
    int64_t w = i < 0 ? i + dim : i;
    if (w < 0 || w >= dim) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                     "index %lld out of range for an extent of %lld", (long long)i,
                                     (long long)dim);
    }
    *out = w;
    return TETHER_OK;
}

/* a op b in their class: op '+' sum, '*' product, '>' max, '<' min. */
static val combine(val a, val b, char op) {
    val r = a;
    switch (a.c) {
    case TETHER__DC_F32:
    case TETHER__DC_F64:
        r.f = op == '+'   ? a.f + b.f
              : op == '*' ? a.f * b.f
              : op == '>' ? (b.f > a.f ? b.f : a.f)
                          : (b.f < a.f ? b.f : a.f);
        break;
    case TETHER__DC_INT:
        r.i = op == '+'   ? (int64_t)((uint64_t)a.i + (uint64_t)b.i)
              : op == '*' ? (int64_t)((uint64_t)a.i * (uint64_t)b.i)
              : op == '>' ? (b.i > a.i ? b.i : a.i)
                          : (b.i < a.i ? b.i : a.i);
        break;
    case TETHER__DC_UINT:
    case TETHER__DC_NONE:
        r.u = op == '+'   ? a.u + b.u
              : op == '*' ? a.u * b.u
              : op == '>' ? (b.u > a.u ? b.u : a.u)
                          : (b.u < a.u ? b.u : a.u);
        break;
    }
    return r;
}

/* -1, 0, 1 as a < b, a == b, a > b (NaN compares equal to everything: never selected over). */
static int compare(val a, val b) {
    switch (a.c) {
    case TETHER__DC_F32:
    case TETHER__DC_F64:
        return a.f < b.f ? -1 : a.f > b.f ? 1 : 0;
    case TETHER__DC_INT:
        return a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
    case TETHER__DC_UINT:
    case TETHER__DC_NONE:
        break;
    }
    return a.u < b.u ? -1 : a.u > b.u ? 1 : 0;
}

static const char reduce_ops[] = {0, '+', '*', '>', '<'};

static int run_scatter(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]], *it = &g->tensors[n->inputs[1]],
                           *ut = &g->tensors[n->inputs[2]], *o = &g->tensors[n->outputs[0]];
    view x;
    view_of(xt, &x);
    unsigned char *y = buf[n->outputs[0]];
    const unsigned char *u = buf[n->inputs[2]];
    const void *ip = buf[n->inputs[1]];
    if (y != buf[n->inputs[0]]) {
        memcpy(y, buf[n->inputs[0]], tether_ir_tensor_bytes(o));
    }
    char op = reduce_ops[n->attrs.mode];
    int64_t idx[TETHER_IR_MAX_NDIM];
    int rc;
    if (n->op == TETHER_OP_SCATTER_ELEMENTS) {
        int ax = tether__ir_norm_axis(n->attrs.axis, xt->ndim);
        size_t count = tether_ir_tensor_elements(it);
        for (size_t f = 0; f < count; f++) {
            unravel((int64_t)f, it->shape, it->ndim, idx);
            if ((rc = index_at(n, it, ip, f, xt->shape[ax], &idx[ax]))) {
                return rc;
            }
            int64_t off = 0;
            for (int d = 0; d < xt->ndim; d++) {
                off += idx[d] * x.st[d];
            }
            if (!op) {
                memcpy(y + (size_t)off * x.es, u + f * x.es, x.es);
            } else {
                tether__interp_store(y, o->dtype, (size_t)off,
                                     combine(tether__interp_load(y, o->dtype, (size_t)off),
                                             tether__interp_load(u, ut->dtype, f), op));
            }
        }
        return TETHER_OK;
    }
    int q = it->ndim;
    int64_t k = it->shape[q - 1], tuples = prod(it->shape, 0, q - 1);
    int64_t slice = prod(xt->shape, (int)k, xt->ndim);
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off = 0;
        for (int64_t i = 0; i < k; i++) {
            int64_t w = 0;
            if ((rc = index_at(n, it, ip, (size_t)(t * k + i), xt->shape[i], &w))) {
                return rc;
            }
            off += w * x.st[i];
        }
        for (int64_t e = 0; e < slice; e++) {
            size_t yo = (size_t)(off + e), uo = (size_t)(t * slice + e);
            if (!op) {
                memcpy(y + yo * x.es, u + uo * x.es, x.es);
            } else {
                tether__interp_store(y, o->dtype, yo,
                                     combine(tether__interp_load(y, o->dtype, yo),
                                             tether__interp_load(u, ut->dtype, uo), op));
            }
        }
    }
    return TETHER_OK;
}

static int run_gather_nd(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]], *it = &g->tensors[n->inputs[1]];
    view x;
    view_of(xt, &x);
    unsigned char *y = buf[n->outputs[0]];
    const unsigned char *xp = buf[n->inputs[0]];
    const void *ip = buf[n->inputs[1]];
    int b = (int)n->attrs.axis, q = it->ndim;
    int64_t m = it->shape[q - 1], tuples = prod(it->shape, 0, q - 1);
    int64_t per_batch = prod(it->shape, b, q - 1), slice = prod(xt->shape, b + (int)m, xt->ndim);
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off = b ? (t / per_batch) * x.st[b - 1] : 0;
        for (int64_t i = 0; i < m; i++) {
            int64_t w = 0;
            int rc = index_at(n, it, ip, (size_t)(t * m + i), xt->shape[b + i], &w);
            if (rc) {
                return rc;
            }
            off += w * x.st[b + i];
        }
        memcpy(y + (size_t)(t * slice) * x.es, xp + (size_t)off * x.es, (size_t)slice * x.es);
    }
    return TETHER_OK;
}

static int run_topk(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]], *o = &g->tensors[n->outputs[0]];
    int ax = tether__ir_norm_axis(n->attrs.axis, xt->ndim);
    int64_t outer = prod(xt->shape, 0, ax), dim = xt->shape[ax],
            inner = prod(xt->shape, ax + 1, xt->ndim), k = n->attrs.k;
    bool largest = n->attrs.mode & 1, want_idx = n->attrs.mode & 4;
    const void *x = buf[n->inputs[0]];
    void *y = buf[n->outputs[0]];
    int64_t *sel = malloc(sizeof(int64_t) * (size_t)(k ? k : 1));
    if (!sel) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "interpreter: out of memory");
    }
    for (int64_t a = 0; a < outer; a++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t cnt = 0;
            for (int64_t j = 0; j < dim; j++) {
                val v = tether__interp_load(x, xt->dtype, (size_t)((a * dim + j) * inner + i));
                int64_t p = cnt < k ? cnt : k;
                while (p > 0) {
                    val w = tether__interp_load(x, xt->dtype,
                                                (size_t)((a * dim + sel[p - 1]) * inner + i));
                    int c = compare(v, w);
                    if (!(largest ? c > 0 : c < 0)) {
                        break;
                    }
                    if (p < k) {
                        sel[p] = sel[p - 1];
                    }
                    p--;
                }
                if (p < k) {
                    sel[p] = j;
                    cnt += cnt < k;
                }
            }
            for (int64_t r = 0; r < k; r++) {
                size_t yo = (size_t)((a * k + r) * inner + i);
                size_t xo = (size_t)((a * dim + sel[r]) * inner + i);
                if (want_idx) {
                    ((int64_t *)y)[yo] = sel[r];
                } else {
                    tether__interp_store(y, o->dtype, yo, tether__interp_load(x, xt->dtype, xo));
                }
            }
        }
    }
    free(sel);
    return TETHER_OK;
}

static void run_einsum(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *o = &g->tensors[n->outputs[0]];
    int lab[TETHER_IR_MAX_INPUTS + 1][TETHER_IR_MAX_NDIM], rank[TETHER_IR_MAX_INPUTS + 1] = {0};
    int all[64], nall = 0, pos[64];
    int64_t ext[64];
    memset(pos, -1, sizeof pos);
    for (int j = 0; j <= n->ninputs; j++) {
        rank[j] = tether__einsum_labels(a, j, lab[j]);
    }
    /* the output's labels first, then the summed ones */
    for (int d = 0; d < rank[n->ninputs]; d++) {
        pos[lab[n->ninputs][d]] = nall;
        all[nall++] = lab[n->ninputs][d];
    }
    for (int i = 0; i < n->ninputs; i++) {
        const tether_ir_tensor *t = &g->tensors[n->inputs[i]];
        for (int d = 0; d < rank[i]; d++) {
            ext[lab[i][d]] = t->shape[d];
            if (pos[lab[i][d]] < 0) {
                pos[lab[i][d]] = nall;
                all[nall++] = lab[i][d];
            }
        }
    }
    int64_t st[TETHER_IR_MAX_INPUTS][64];
    for (int i = 0; i < n->ninputs; i++) {
        const tether_ir_tensor *t = &g->tensors[n->inputs[i]];
        for (int l = 0; l < nall; l++) {
            st[i][l] = 0;
        }
        int64_t s = 1;
        for (int d = rank[i] - 1; d >= 0; d--) {
            st[i][pos[lab[i][d]]] += s;
            s *= t->shape[d];
        }
    }
    int nout = rank[n->ninputs];
    int64_t inner = 1, cur[64];
    for (int l = nout; l < nall; l++) {
        inner *= ext[all[l]];
    }
    size_t total = tether_ir_tensor_elements(o);
    for (size_t f = 0; f < total; f++) {
        int64_t rem = (int64_t)f;
        for (int l = nout - 1; l >= 0; l--) {
            cur[l] = rem % ext[all[l]];
            rem /= ext[all[l]];
        }
        val acc = tether__interp_load(&(double){0}, TETHER_DTYPE(kDLFloat, 64), 0);
        bool first = true;
        for (int64_t r = 0; r < inner; r++) {
            int64_t rr = r;
            for (int l = nall - 1; l >= nout; l--) {
                cur[l] = rr % ext[all[l]];
                rr /= ext[all[l]];
            }
            val p = acc;
            for (int i = 0; i < n->ninputs; i++) {
                int64_t off = 0;
                for (int l = 0; l < nall; l++) {
                    off += cur[l] * st[i][l];
                }
                val v = tether__interp_load(buf[n->inputs[i]], g->tensors[n->inputs[i]].dtype,
                                            (size_t)off);
                p = i ? combine(p, v, '*') : v;
            }
            acc = first ? p : combine(acc, p, '+');
            first = false;
        }
        if (first) { /* nothing summed: zero of the output's class */
            acc = tether__interp_load(&(int64_t){0}, TETHER_INT64, 0);
        }
        tether__interp_store(buf[n->outputs[0]], o->dtype, f, acc);
    }
}

int tether__interp_data(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    if (tether__ir_live_wired(n)) { /* gather, slice by live extents: interp_dynamic_live.c */
        return tether__interp_live(g, n, buf);
    }
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]], *o = &g->tensors[n->outputs[0]];
    view x, yv;
    view_of(xt, &x);
    view_of(o, &yv);
    const unsigned char *xp = buf[n->inputs[0]];
    unsigned char *y = buf[n->outputs[0]];
    size_t total = tether_ir_tensor_elements(o);
    int64_t idx[TETHER_IR_MAX_NDIM];
    int ax = tether__ir_norm_axis(a->axis, xt->ndim), rc;
    switch (n->op) {
    case TETHER_OP_GATHER: {
        const tether_ir_tensor *it = &g->tensors[n->inputs[1]];
        int64_t outer = prod(xt->shape, 0, ax), dim = xt->shape[ax];
        int64_t inner = prod(xt->shape, ax + 1, xt->ndim);
        size_t ni = tether_ir_tensor_elements(it), w = 0;
        for (int64_t p = 0; p < outer; p++) {
            for (size_t j = 0; j < ni; j++) {
                int64_t i = 0;
                if ((rc = index_at(n, it, buf[n->inputs[1]], j, dim, &i))) {
                    return rc;
                }
                memcpy(y + w * x.es, xp + (size_t)((p * dim + i) * inner) * x.es,
                       (size_t)inner * x.es);
                w += (size_t)inner;
            }
        }
        return TETHER_OK;
    }
    case TETHER_OP_GATHER_ELEMENTS: {
        const tether_ir_tensor *it = &g->tensors[n->inputs[1]];
        for (size_t f = 0; f < total; f++) {
            unravel((int64_t)f, it->shape, it->ndim, idx);
            if ((rc = index_at(n, it, buf[n->inputs[1]], f, xt->shape[ax], &idx[ax]))) {
                return rc;
            }
            int64_t off = 0;
            for (int d = 0; d < xt->ndim; d++) {
                off += idx[d] * x.st[d];
            }
            memcpy(y + f * x.es, xp + (size_t)off * x.es, x.es);
        }
        return TETHER_OK;
    }
    case TETHER_OP_GATHER_ND:
        return run_gather_nd(g, n, buf);
    case TETHER_OP_SCATTER_ELEMENTS:
    case TETHER_OP_SCATTER_ND:
        return run_scatter(g, n, buf);
    case TETHER_OP_TOPK:
        return run_topk(g, n, buf);
    case TETHER_OP_ARG_MAX:
    case TETHER_OP_ARG_MIN: {
        int64_t outer = prod(xt->shape, 0, ax), dim = xt->shape[ax];
        int64_t inner = prod(xt->shape, ax + 1, xt->ndim);
        int want = n->op == TETHER_OP_ARG_MAX ? 1 : -1;
        for (int64_t p = 0; p < outer; p++) {
            for (int64_t i = 0; i < inner; i++) {
                int64_t best = 0;
                val bv = tether__interp_load(xp, xt->dtype, (size_t)(p * dim * inner + i));
                for (int64_t j = 1; j < dim; j++) {
                    val v = tether__interp_load(xp, xt->dtype, (size_t)((p * dim + j) * inner + i));
                    int c = compare(v, bv) * want;
                    if (c > 0 || (c == 0 && a->mode)) {
                        best = j;
                        bv = v;
                    }
                }
                ((int64_t *)(void *)y)[p * inner + i] = best;
            }
        }
        return TETHER_OK;
    }
    case TETHER_OP_CUMSUM: {
        int64_t outer = prod(xt->shape, 0, ax), dim = xt->shape[ax];
        int64_t inner = prod(xt->shape, ax + 1, xt->ndim);
        bool excl = a->mode & 1, rev = a->mode & 2;
        for (int64_t p = 0; p < outer; p++) {
            for (int64_t i = 0; i < inner; i++) {
                val acc = tether__interp_load(&(int64_t){0}, TETHER_INT64, 0);
                bool any = false;
                for (int64_t s = 0; s < dim; s++) {
                    int64_t j = rev ? dim - 1 - s : s;
                    size_t off = (size_t)((p * dim + j) * inner + i);
                    val v = tether__interp_load(xp, xt->dtype, off);
                    if (excl) {
                        if (any) {
                            tether__interp_store(y, o->dtype, off, acc);
                        } else {
                            memset(y + off * x.es, 0, x.es);
                        }
                    }
                    acc = any ? combine(acc, v, '+') : v;
                    any = true;
                    if (!excl) {
                        tether__interp_store(y, o->dtype, off, acc);
                    }
                }
            }
        }
        return TETHER_OK;
    }
    case TETHER_OP_TRILU: {
        int nd = xt->ndim;
        int64_t rows = xt->shape[nd - 2], cols = xt->shape[nd - 1];
        for (size_t f = 0; f < total; f++) {
            int64_t j = (int64_t)f % cols, i = ((int64_t)f / cols) % rows;
            bool keep = a->mode ? j - i >= a->k : j - i <= a->k;
            if (keep) {
                memcpy(y + f * x.es, xp + f * x.es, x.es);
            } else {
                memset(y + f * x.es, 0, x.es);
            }
        }
        return TETHER_OK;
    }
    case TETHER_OP_ONE_HOT: {
        const tether_ir_tensor *vt = &g->tensors[n->inputs[1]];
        const unsigned char *vp = buf[n->inputs[1]];
        int oax = tether__ir_norm_axis(a->axis, o->ndim);
        int64_t inner = prod(o->shape, oax + 1, o->ndim), depth = o->shape[oax];
        for (size_t f = 0; f < total; f++) {
            int64_t in = (int64_t)f % inner, c = ((int64_t)f / inner) % depth;
            int64_t outer = (int64_t)f / inner / depth;
            val iv = tether__interp_load(xp, xt->dtype, (size_t)(outer * inner + in));
            int64_t v = iv.c == TETHER__DC_INT              ? iv.i
                        : iv.c == TETHER__DC_UINT           ? (int64_t)iv.u
                        : iv.f != iv.f                      ? -depth - 1
                        : iv.f >= 9.2e18 || iv.f <= -9.2e18 ? -depth - 1
                                                            : (int64_t)iv.f;
            v = v < 0 ? v + depth : v;
            memcpy(y + f * yv.es, vp + (v == c ? 1 : 0) * yv.es, yv.es);
        }
        (void)vt;
        return TETHER_OK;
    }
    case TETHER_OP_TILE:
    case TETHER_OP_SLICE:
        for (size_t f = 0; f < total; f++) {
            unravel((int64_t)f, o->shape, o->ndim, idx);
            int64_t off = 0, lead = o->ndim - xt->ndim;
            for (int d = 0; d < xt->ndim; d++) {
                int64_t i = n->op == TETHER_OP_TILE ? idx[d + lead] % xt->shape[d]
                                                    : a->ints[d] + idx[d] * a->steps[d];
                off += i * x.st[d];
            }
            memcpy(y + f * x.es, xp + (size_t)off * x.es, x.es);
        }
        return TETHER_OK;
    case TETHER_OP_EINSUM:
        run_einsum(g, n, buf);
        return TETHER_OK;
        TETHER__CASES_VISION /* interp_vision.c */
            return tether__interp_vision(g, n, buf);
    case TETHER_OP_RNN:
    case TETHER_OP_GRU:
    case TETHER_OP_LSTM:
    case TETHER_OP_REVERSE_SEQUENCE:
        return tether__interp_rnn(g, n, buf);
    case TETHER_OP_NONZERO: /* data-dependent sizes: interp_dynamic.c */
    case TETHER_OP_COMPRESS:
    case TETHER_OP_UNIQUE:
    case TETHER_OP_NMS:
        return tether__interp_dynamic(g, n, buf);
    case TETHER_OP_TFIDF: /* interp_text.c */
        return tether__interp_tfidf(g, n, buf);
        TETHER__CASES_LOOP /* run by the interpreter's node loop: interp_loop.c */
            return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "a loop operator runs in a loop");
        TETHER__CASES_NOT_DATA
        break;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "no DATA reference loops");
}
