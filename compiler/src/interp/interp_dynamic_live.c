/*
 * The reference loops of the readers of a tensor of data-dependent size that need its live
 * extent (ir/shapes_dynamic_live.c): transpose, concat, gather and slice wired with
 * TETHER__DYN_LIVE, for every element type. Each computes on the live shapes (every dynamic
 * dimension of an input at its live extent, clamped to the bound), writes the output densely at
 * the start of its buffer and zeroes the rest up to the bound; the extent node of a slice or
 * concat (mode TETHER__DYN_COUNT) writes the output's live extent as int64 [1].
 *
 * What must stay true: the same elements in the same places as the generated C
 * (codegen/emit_c_dynamic_live.c); nothing is read past an input's live extent (a gather index
 * outside it is TETHER_ERR_INVALID_ARG naming the node, checked before any element is copied
 * from it); nothing is written past the output's bound.
 */
#include <string.h>

#include "interp_internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* The live dimensions of data input j of n (its dynamic dimension at its wired extent). */
static void live_dims(const tether_ir_graph *g, const tether_ir_node *n, void **buf, int j,
                      int64_t *dims) {
    const tether_ir_tensor *t = &g->tensors[n->inputs[j]];
    memcpy(dims, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    if (t->dyn_dim <= 0) {
        return;
    }
    int m = 0; /* the extents follow the data inputs, one per dynamic one */
    for (int i = 0; i < j; i++) {
        m += g->tensors[n->inputs[i]].dyn_dim > 0;
    }
    int64_t live = *(const int64_t *)buf[n->inputs[(int)n->attrs.k + m]];
    int d = t->dyn_dim - 1;
    dims[d] = live < 0 ? 0 : live > t->shape[d] ? t->shape[d] : live;
}

static int64_t prod(const int64_t *d, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) {
        p *= d[i];
    }
    return p;
}

/* y[f] = x[the source of output element f] for f < the product of od, where element idx of
 * the output reads x at sum((start[a] + idx[a] * step[a]) * stride[a]) with stride over
 * dimension src[a] of the live input dims xd. */
static int64_t strided(unsigned char *y, const unsigned char *x, size_t es, int nd,
                       const int64_t *xd, const int64_t *od, const int *src, const int64_t *start,
                       const int64_t *step) {
    int64_t xs[TETHER_IR_MAX_NDIM], tot = prod(od, 0, nd);
    for (int a = nd - 1; a >= 0; a--) {
        xs[a] = a == nd - 1 ? 1 : xs[a + 1] * xd[a + 1];
    }
    for (int64_t f = 0; f < tot; f++) {
        int64_t rem = f, off = 0;
        for (int a = nd - 1; a >= 0; a--) {
            int64_t i = rem % od[a];
            rem /= od[a];
            off += (start[a] + i * step[a]) * xs[src[a]];
        }
        memcpy(y + (size_t)f * es, x + (size_t)off * es, es);
    }
    return tot;
}

int tether__interp_live(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *o = &g->tensors[n->outputs[0]], *xt = &g->tensors[n->inputs[0]];
    const tether_ir_attrs *a = &n->attrs;
    size_t es = tether_dtype_bytes(o->dtype);
    unsigned char *y = buf[n->outputs[0]];
    const unsigned char *x = buf[n->inputs[0]];
    int64_t xd[TETHER_IR_MAX_NDIM], od[TETHER_IR_MAX_NDIM], start[TETHER_IR_MAX_NDIM],
        step[TETHER_IR_MAX_NDIM], written = 0;
    int src[TETHER_IR_MAX_NDIM], nd = xt->ndim;
    live_dims(g, n, buf, 0, xd);
    switch ((int)n->op) {
    case TETHER_OP_TRANSPOSE:
        for (int i = 0; i < nd; i++) {
            src[i] = (int)a->ints[i];
            od[i] = xd[src[i]];
            start[i] = 0;
            step[i] = 1;
        }
        written = strided(y, x, es, nd, xd, od, src, start, step);
        break;
    case TETHER_OP_SLICE: {
        int dd = xt->dyn_dim - 1;
        for (int i = 0; i < nd; i++) {
            src[i] = i;
            step[i] = a->steps[i];
            if (i == dd) { /* ONNX's starts and ends against the live extent */
                od[i] = tether__ir_slice_live_len(a->ints[i], a->ints[nd + i], a->steps[i], xd[i]);
                start[i] = tether__ir_slice_live_start(a->ints[i], a->steps[i], xd[i]);
            } else {
                od[i] = o->shape[i];
                start[i] = a->ints[i];
            }
        }
        if (a->mode & TETHER__DYN_COUNT) {
            *(int64_t *)y = od[dd];
            return TETHER_OK;
        }
        written = strided(y, x, es, nd, xd, od, src, start, step);
        break;
    }
    case TETHER_OP_GATHER: {
        const tether_ir_tensor *it = &g->tensors[n->inputs[1]];
        int ax = tether__ir_norm_axis(a->axis, nd);
        int64_t outer = prod(xd, 0, ax), dim = xd[ax], inner = prod(xd, ax + 1, nd);
        int64_t ni = (int64_t)tether_ir_tensor_elements(it);
        for (int64_t j = 0; j < ni; j++) { /* every index first: no copy from a bad one */
            int64_t v = tether__interp_load(buf[n->inputs[1]], it->dtype, (size_t)j).i;
            if (v < -dim || v >= dim) {
                return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                             "index %lld is out of range for the live extent "
                                             "%lld of axis %d of '%s'",
                                             (long long)v, (long long)dim, ax, xt->name);
            }
        }
        for (int64_t p = 0; p < outer; p++) {
            for (int64_t j = 0; j < ni; j++) {
                int64_t v = tether__interp_load(buf[n->inputs[1]], it->dtype, (size_t)j).i;
                v = v < 0 ? v + dim : v;
                memcpy(y + (size_t)((p * ni + j) * inner) * es,
                       x + (size_t)((p * dim + v) * inner) * es, (size_t)inner * es);
            }
        }
        written = outer * ni * inner;
        break;
    }
    case TETHER_OP_CONCAT: {
        int ax = (int)a->axis, k = (int)a->k;
        int64_t outer = prod(xt->shape, 0, ax), inner = prod(xt->shape, ax + 1, nd), total = 0;
        int64_t len[TETHER_IR_MAX_INPUTS];
        for (int q = 0; q < k; q++) {
            live_dims(g, n, buf, q, xd);
            len[q] = xd[ax];
            total += len[q];
        }
        if (a->mode & TETHER__DYN_COUNT) {
            *(int64_t *)y = total;
            return TETHER_OK;
        }
        for (int64_t p = 0; p < outer; p++) {
            int64_t at = 0;
            for (int q = 0; q < k; q++) {
                memcpy(y + (size_t)((p * total + at) * inner) * es,
                       (const unsigned char *)buf[n->inputs[q]] + (size_t)(p * len[q] * inner) * es,
                       (size_t)(len[q] * inner) * es);
                at += len[q];
            }
        }
        written = outer * total * inner;
        break;
    }
    default:
        return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "not a reader by live extents");
    }
    size_t bytes = tether_ir_tensor_bytes(o); /* past the actual data: zeros (consumers) */
    if ((size_t)written * es < bytes) {
        memset(y + (size_t)written * es, 0, bytes - (size_t)written * es);
    }
    return TETHER_OK;
}
