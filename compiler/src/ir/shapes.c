/*
 * Shape rules of the IR: the output shape of one node from its inputs' shapes and its attributes
 * (tether__ir_infer_shape), one case per operator family, plus the error helper every inference
 * step uses to name the node.
 *
 * What must stay true: a rule reads only its inputs' shapes, dtypes and the node's attributes and
 * writes only the output shape; it rejects (with the node named) any input the kernels cannot
 * run, so that kernels, the interpreter and the emitters need not re-check. Graph-level checks
 * (order, single writer, element limits, dtypes of outputs) live in infer.c.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../custom/custom_internal.h"
#include "../internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/ir.h"

int tether__ir_node_error(const tether_ir_node *n, int status, const char *fmt, ...) {
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tether_set_error(status, "node '%s' (%s): %s", n->name, tether_op_name(n->op), msg);
}

const tether_ir_tensor *tether__ir_in(const tether_ir_graph *g, const tether_ir_node *n, int i) {
    if (i >= n->ninputs || n->inputs[i] < 0) {
        return NULL;
    }
    return &g->tensors[n->inputs[i]];
}

/* Window output extent of conv/pool along one axis; -1 when the window does not fit. */
static int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1,
                          int ceil_mode) {
    int64_t eff = (k - 1) * d + 1;
    int64_t span = in + p0 + p1 - eff;
    if (span < 0) {
        return -1;
    }
    int64_t out = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
    if (ceil_mode && (out - 1) * s >= in + p0) {
        out--;
    }
    return out;
}

static int check_window_attrs(const tether_ir_node *n, int with_kernel) {
    const tether_ir_attrs *a = &n->attrs;
    for (int i = 0; i < 2; i++) {
        if (a->strides[i] < 1 || a->dilations[i] < 1 || (with_kernel && a->kernel[i] < 1)) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "strides, dilations and kernel must be >= 1");
        }
    }
    for (int i = 0; i < 4; i++) {
        if (a->pads[i] < 0) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "pads must be >= 0");
        }
    }
    return TETHER_OK;
}

/* conv_nd (w[O,C/g,K...]) and conv_transpose (w[C,O/g,K...]) over 1 to 3 spatial dimensions:
 * the window attributes checked (and completed: nwin, the kernel from the weights), the output
 * extents per dimension. */
static int conv_nd_shape(const tether_ir_graph *g, tether_ir_node *n, const tether_ir_tensor *x,
                         int64_t *os, int *ond) {
    tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *w = tether__ir_in(g, n, 1), *b = tether__ir_in(g, n, 2);
    bool tr = n->op == TETHER_OP_CONV_TRANSPOSE;
    char s1[96];
    if (!w) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "weights input is missing");
    }
    int nsp = x->ndim - 2;
    if (nsp < 1 || nsp > 3 || w->ndim != x->ndim) {
        return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                     "input and weights must both have rank 3 to 5 (1 to 3 "
                                     "spatial dimensions), got %d and %d",
                                     x->ndim, w->ndim);
    }
    if (a->nwin == 0) {
        a->nwin = nsp;
    }
    if (a->nwin != nsp) {
        return tether__ir_node_error(
            n, TETHER_ERR_MISMATCH, "window attributes for %d spatial dimensions, the input has %d",
            a->nwin, nsp);
    }
    int64_t C = x->shape[1], G = a->groups;
    int64_t O = tr ? w->shape[1] * G : w->shape[0];
    if (G < 1 || C % G || O % G || (tr && w->shape[0] != C) || (!tr && w->shape[1] * G != C)) {
        return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                     "input channels %lld, weights [%lld,%lld,...] and groups %lld "
                                     "do not agree",
                                     (long long)C, (long long)w->shape[0], (long long)w->shape[1],
                                     (long long)G);
    }
    if (b && (b->ndim != 1 || b->shape[0] != O)) {
        tether__shape_text(s1, sizeof s1, b->shape, b->ndim);
        return tether__ir_node_error(n, TETHER_ERR_MISMATCH, "bias shape %s, expected [%lld]", s1,
                                     (long long)O);
    }
    *ond = x->ndim;
    os[0] = x->shape[0];
    os[1] = O;
    for (int d = 0; d < nsp; d++) {
        int64_t k = w->shape[2 + d], s = a->wstrides[d], dl = a->wdilations[d];
        int64_t p0 = a->wpads[d], p1 = a->wpads[3 + d];
        if (a->wkernel[d] && a->wkernel[d] != k) {
            return tether__ir_node_error(
                n, TETHER_ERR_MISMATCH,
                "kernel %lld in dimension %d differs from the weights' %lld",
                (long long)a->wkernel[d], d, (long long)k);
        }
        a->wkernel[d] = k;
        if (s < 1 || dl < 1 || k < 1) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "strides, dilations and kernel must be >= 1");
        }
        if (!tr && (p0 < 0 || p1 < 0)) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "pads must be >= 0");
        }
        int64_t o = tr ? (x->shape[2 + d] - 1) * s + (k - 1) * dl + 1 - p0 - p1
                       : window_out(x->shape[2 + d], k, s, dl, p0, p1, 0);
        if (o < 1) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "output extent %lld in spatial dimension %d (kernel, "
                                         "pads and input do not fit)",
                                         (long long)o, d);
        }
        os[2 + d] = o;
    }
    return TETHER_OK;
}

int tether__ir_infer_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond) {
    tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = tether__ir_in(g, n, 0);
    char s1[96], s2[96];
    if (!x) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "first input is missing");
    }
    switch (n->op) {
    case TETHER_OP_CONV2D: {
        const tether_ir_tensor *w = tether__ir_in(g, n, 1), *b = tether__ir_in(g, n, 2);
        if (!w) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "weights input is missing");
        }
        if (x->ndim != 4 || w->ndim != 4) {
            return tether__ir_node_error(
                n, TETHER_ERR_MISMATCH,
                "input and weights must be rank 4 (NCHW, OIHW), got %d and %d", x->ndim, w->ndim);
        }
        if (a->groups < 1 || x->shape[1] % a->groups || w->shape[0] % a->groups) {
            return tether__ir_node_error(
                n, TETHER_ERR_INVALID_ARG,
                "groups %lld must divide input channels %lld and output channels "
                "%lld",
                (long long)a->groups, (long long)x->shape[1], (long long)w->shape[0]);
        }
        if (w->shape[1] * a->groups != x->shape[1]) {
            return tether__ir_node_error(
                n, TETHER_ERR_MISMATCH,
                "input channels %lld differ from weight channels %lld x groups %lld",
                (long long)x->shape[1], (long long)w->shape[1], (long long)a->groups);
        }
        if (b && (b->ndim != 1 || b->shape[0] != w->shape[0])) {
            tether__shape_text(s1, sizeof s1, b->shape, b->ndim);
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH, "bias shape %s, expected [%lld]",
                                         s1, (long long)w->shape[0]);
        }
        int rc = check_window_attrs(n, 0);
        if (rc) {
            return rc;
        }
        a->kernel[0] = w->shape[2];
        a->kernel[1] = w->shape[3];
        int64_t oh = window_out(x->shape[2], w->shape[2], a->strides[0], a->dilations[0],
                                a->pads[0], a->pads[2], 0);
        int64_t ow = window_out(x->shape[3], w->shape[3], a->strides[1], a->dilations[1],
                                a->pads[1], a->pads[3], 0);
        if (oh < 1 || ow < 1) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "kernel larger than the padded input");
        }
        *ond = 4;
        os[0] = x->shape[0];
        os[1] = w->shape[0];
        os[2] = oh;
        os[3] = ow;
        return TETHER_OK;
    }
    case TETHER_OP_DENSE: {
        const tether_ir_tensor *b = tether__ir_in(g, n, 1), *c = tether__ir_in(g, n, 2);
        if (!b) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "input B is missing");
        }
        if (x->ndim != 2 || b->ndim != 2) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "A and B must be rank 2, got %d and %d", x->ndim, b->ndim);
        }
        int64_t m = a->trans_a ? x->shape[1] : x->shape[0];
        int64_t k = a->trans_a ? x->shape[0] : x->shape[1];
        int64_t kb = a->trans_b ? b->shape[1] : b->shape[0];
        int64_t nn = a->trans_b ? b->shape[0] : b->shape[1];
        if (k != kb) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "inner dimensions differ: A gives K=%lld, B gives K=%lld",
                                         (long long)k, (long long)kb);
        }
        *ond = 2;
        os[0] = m;
        os[1] = nn;
        if (c) {
            int64_t tmp[TETHER_IR_MAX_NDIM];
            int nd;
            if (c->ndim > 2 || tether__ir_broadcast(os, 2, c->shape, c->ndim, tmp, &nd) ||
                tmp[0] != m || tmp[1] != nn) {
                tether__shape_text(s1, sizeof s1, c->shape, c->ndim);
                return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                             "C shape %s does not broadcast to [%lld,%lld]", s1,
                                             (long long)m, (long long)nn);
            }
        }
        return TETHER_OK;
    }
    case TETHER_OP_MATMUL: {
        const tether_ir_tensor *b = tether__ir_in(g, n, 1);
        if (!b || x->ndim < 1 || b->ndim < 1) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH, "operands must have rank >= 1");
        }
        tether_ir_tensor av = *x, bv = *b;
        if (av.ndim == 1) {
            av.ndim = 2;
            av.shape[0] = 1;
            av.shape[1] = x->shape[0];
        }
        if (bv.ndim == 1) {
            bv.ndim = 2;
            bv.shape[0] = b->shape[0];
            bv.shape[1] = 1;
        }
        if (av.shape[av.ndim - 1] != bv.shape[bv.ndim - 2]) {
            return tether__ir_node_error(
                n, TETHER_ERR_MISMATCH, "inner dimensions differ: %lld vs %lld",
                (long long)av.shape[av.ndim - 1], (long long)bv.shape[bv.ndim - 2]);
        }
        int nd;
        if (tether__ir_broadcast(av.shape, av.ndim - 2, bv.shape, bv.ndim - 2, os, &nd)) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "batch dimensions do not broadcast");
        }
        if (x->ndim > 1) {
            os[nd++] = av.shape[av.ndim - 2];
        }
        if (b->ndim > 1) {
            os[nd++] = bv.shape[bv.ndim - 1];
        }
        *ond = nd;
        return TETHER_OK;
    }
        TETHER__CASES_BINARY {
            const tether_ir_tensor *y = tether__ir_in(g, n, 1);
            if (!y) {
                return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "second input is missing");
            }
            if (tether__ir_broadcast(x->shape, x->ndim, y->shape, y->ndim, os, ond)) {
                tether__shape_text(s1, sizeof s1, x->shape, x->ndim);
                tether__shape_text(s2, sizeof s2, y->shape, y->ndim);
                return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                             "shapes %s and %s do not broadcast", s1, s2);
            }
            return TETHER_OK;
        }
    case TETHER_OP_PRELU: {
        const tether_ir_tensor *sl = tether__ir_in(g, n, 1);
        int64_t tmp[TETHER_IR_MAX_NDIM];
        int nd;
        if (!sl || tether__ir_broadcast(x->shape, x->ndim, sl->shape, sl->ndim, tmp, &nd) ||
            nd != x->ndim || memcmp(tmp, x->shape, sizeof(int64_t) * (size_t)nd) != 0) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "slope does not broadcast to the input");
        }
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        *ond = x->ndim;
        return TETHER_OK;
    }
    case TETHER_OP_CONV_ND:
    case TETHER_OP_CONV_TRANSPOSE:
        return conv_nd_shape(g, n, x, os, ond);
    case TETHER_OP_SOFTMAX:
    case TETHER_OP_LOG_SOFTMAX:
    case TETHER_OP_HARDMAX:
        if (x->ndim < 1 || tether__ir_norm_axis(a->axis, x->ndim) < 0) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "axis %lld out of range for rank %d", (long long)a->axis,
                                         x->ndim);
        }
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        *ond = x->ndim;
        return TETHER_OK;
    case TETHER_OP_MAX_POOL:
    case TETHER_OP_AVG_POOL: {
        if (x->ndim != 4) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "input must be rank 4 (NCHW), got %d", x->ndim);
        }
        int rc = check_window_attrs(n, 1);
        if (rc) {
            return rc;
        }
        for (int i = 0; i < 2; i++) {
            int64_t eff = (a->kernel[i] - 1) * a->dilations[i] + 1;
            if (a->pads[i] >= eff || a->pads[i + 2] >= eff) {
                return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                             "pads must be smaller than the (dilated) kernel");
            }
        }
        int64_t oh = window_out(x->shape[2], a->kernel[0], a->strides[0], a->dilations[0],
                                a->pads[0], a->pads[2], a->ceil_mode);
        int64_t ow = window_out(x->shape[3], a->kernel[1], a->strides[1], a->dilations[1],
                                a->pads[1], a->pads[3], a->ceil_mode);
        if (oh < 1 || ow < 1) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "kernel larger than the padded input");
        }
        *ond = 4;
        os[0] = x->shape[0];
        os[1] = x->shape[1];
        os[2] = oh;
        os[3] = ow;
        return TETHER_OK;
    }
    case TETHER_OP_GLOBAL_AVG_POOL:
    case TETHER_OP_GLOBAL_MAX_POOL:
        if (x->ndim < 3) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "input must have rank >= 3, got %d", x->ndim);
        }
        *ond = x->ndim;
        os[0] = x->shape[0];
        os[1] = x->shape[1];
        for (int i = 2; i < x->ndim; i++) {
            os[i] = 1;
        }
        return TETHER_OK;
    case TETHER_OP_RESHAPE: {
        if (a->nints < 1 || a->nints > TETHER_IR_MAX_NDIM) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "attribute 'shape' is missing");
        }
        size_t total = tether_ir_tensor_elements(x), known = 1;
        int infer_at = -1;
        for (int i = 0; i < a->nints; i++) {
            int64_t d = a->ints[i];
            if (d == 0 && !a->allowzero) {
                if (i >= x->ndim) {
                    return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                                 "shape entry %d is 0 but the input has rank %d", i,
                                                 x->ndim);
                }
                d = x->shape[i];
            } else if (d == -1) {
                if (infer_at >= 0) {
                    return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                                 "shape has more than one -1");
                }
                infer_at = i;
                d = 1;
            } else if (d < 0) {
                return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "shape entry %d is %lld", i,
                                             (long long)d);
            }
            os[i] = d;
            known *= (size_t)d;
        }
        if (infer_at >= 0) {
            if (known == 0) {
                return tether__ir_node_error(
                    n, TETHER_ERR_INVALID_ARG,
                    "shape has a 0 extent and a -1: the -1 cannot be inferred");
            }
            if (total % known) {
                return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                             "%zu elements cannot fill the shape", total);
            }
            os[infer_at] = (int64_t)(total / known);
            known = total;
        }
        if (known != total) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "shape has %zu elements, the input has %zu", known, total);
        }
        *ond = a->nints;
        return TETHER_OK;
    }
    case TETHER_OP_FLATTEN: {
        int64_t ax = a->axis < 0 ? a->axis + x->ndim : a->axis;
        if (ax < 0 || ax > x->ndim) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "axis %lld out of range for rank %d", (long long)a->axis,
                                         x->ndim);
        }
        os[0] = os[1] = 1;
        for (int i = 0; i < x->ndim; i++) {
            os[i < ax ? 0 : 1] *= x->shape[i];
        }
        *ond = 2;
        return TETHER_OK;
    }
    case TETHER_OP_SQUEEZE: {
        int drop[TETHER_IR_MAX_NDIM] = {0};
        if (a->nints == 0) {
            for (int i = 0; i < x->ndim; i++) {
                drop[i] = x->shape[i] == 1;
            }
        }
        for (int i = 0; i < a->nints; i++) {
            int ax = tether__ir_norm_axis(a->ints[i], x->ndim);
            if (ax < 0 || x->shape[ax] != 1) {
                return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                             "axis %lld is out of range or not of extent 1",
                                             (long long)a->ints[i]);
            }
            drop[ax] = 1;
        }
        *ond = 0;
        for (int i = 0; i < x->ndim; i++) {
            if (!drop[i]) {
                os[(*ond)++] = x->shape[i];
            }
        }
        return TETHER_OK;
    }
    case TETHER_OP_UNSQUEEZE: {
        int nd = x->ndim + a->nints;
        int ins[TETHER_IR_MAX_NDIM] = {0};
        if (a->nints < 1 || nd > TETHER_IR_MAX_NDIM) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "axes missing or rank above %d",
                                         TETHER_IR_MAX_NDIM);
        }
        for (int i = 0; i < a->nints; i++) {
            int ax = tether__ir_norm_axis(a->ints[i], nd);
            if (ax < 0 || ins[ax]) {
                return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                             "axis %lld invalid or repeated",
                                             (long long)a->ints[i]);
            }
            ins[ax] = 1;
        }
        for (int i = 0, j = 0; i < nd; i++) {
            os[i] = ins[i] ? 1 : x->shape[j++];
        }
        *ond = nd;
        return TETHER_OK;
    }
    case TETHER_OP_TRANSPOSE: {
        if (a->nints == 0) {
            a->nints = x->ndim;
            for (int i = 0; i < x->ndim; i++) {
                a->ints[i] = x->ndim - 1 - i;
            }
        }
        int seen[TETHER_IR_MAX_NDIM] = {0};
        if (a->nints != x->ndim) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "perm has %d entries for rank %d", a->nints, x->ndim);
        }
        for (int i = 0; i < a->nints; i++) {
            int p = tether__ir_norm_axis(a->ints[i], x->ndim);
            if (p < 0 || seen[p]) {
                return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                             "perm is not a permutation");
            }
            seen[p] = 1;
            a->ints[i] = p;
            os[i] = x->shape[p];
        }
        *ond = x->ndim;
        return TETHER_OK;
    }
    case TETHER_OP_CONCAT: {
        int ax = tether__ir_norm_axis(a->axis, x->ndim);
        if (ax < 0) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "axis %lld out of range for rank %d", (long long)a->axis,
                                         x->ndim);
        }
        a->axis = ax;
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        for (int i = 1; i < tether__ir_main_inputs(n); i++) {
            const tether_ir_tensor *y = tether__ir_in(g, n, i);
            if (!y || y->ndim != x->ndim) {
                return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                             "input %d is missing or of other rank", i);
            }
            for (int d = 0; d < x->ndim; d++) {
                if (d != ax && y->shape[d] != x->shape[d]) {
                    return tether__ir_node_error(
                        n, TETHER_ERR_MISMATCH, "input %d differs in dimension %d (%lld vs %lld)",
                        i, d, (long long)y->shape[d], (long long)x->shape[d]);
                }
            }
            os[ax] += y->shape[ax];
        }
        *ond = x->ndim;
        return TETHER_OK;
    }
    case TETHER_OP_PAD:
        if (a->nints != 2 * x->ndim) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "pads has %d entries, expected %d", a->nints, 2 * x->ndim);
        }
        for (int i = 0; i < x->ndim; i++) {
            if (a->ints[i] < 0 || a->ints[i + x->ndim] < 0) {
                return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED, "negative pads (cropping)");
            }
            os[i] = x->shape[i] + a->ints[i] + a->ints[i + x->ndim];
        }
        *ond = x->ndim;
        return TETHER_OK;
    case TETHER_OP_BATCH_NORM:
        if (x->ndim < 2) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH, "input must have rank >= 2");
        }
        for (int i = 1; i < 5; i++) {
            const tether_ir_tensor *p = tether__ir_in(g, n, i);
            if (!p || p->ndim != 1 || p->shape[0] != x->shape[1]) {
                return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                             "parameter %d must have shape [%lld]", i,
                                             (long long)x->shape[1]);
            }
        }
        if (!(a->epsilon >= 0.0f)) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "epsilon must be >= 0");
        }
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        *ond = x->ndim;
        return TETHER_OK;
    case TETHER_OP_LAYER_NORM: {
        int ax = tether__ir_norm_axis(a->axis, x->ndim);
        if (ax < 0) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "axis %lld out of range for rank %d", (long long)a->axis,
                                         x->ndim);
        }
        a->axis = ax;
        for (int i = 1; i < 3; i++) {
            const tether_ir_tensor *p = tether__ir_in(g, n, i);
            if (!p) {
                if (i == 1) {
                    return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                                 "scale input is missing");
                }
                continue;
            }
            if (p->ndim != x->ndim - ax ||
                memcmp(p->shape, x->shape + ax, sizeof(int64_t) * (size_t)p->ndim) != 0) {
                tether__shape_text(s1, sizeof s1, p->shape, p->ndim);
                return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                             "%s shape %s differs from the normalised dimensions",
                                             i == 1 ? "scale" : "bias", s1);
            }
        }
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        *ond = x->ndim;
        return TETHER_OK;
    }
    case TETHER_OP_REDUCE_MEAN:
    case TETHER_OP_REDUCE_SUM:
    case TETHER_OP_REDUCE_MAX:
    case TETHER_OP_REDUCE_MIN:
    case TETHER_OP_REDUCE_PROD:
    case TETHER_OP_REDUCE_L1:
    case TETHER_OP_REDUCE_L2:
    case TETHER_OP_REDUCE_LOG_SUM:
    case TETHER_OP_REDUCE_LOG_SUM_EXP:
    case TETHER_OP_REDUCE_SUM_SQUARE: {
        int red[TETHER_IR_MAX_NDIM] = {0};
        if (a->nints == 0) {
            for (int i = 0; i < x->ndim; i++) {
                red[i] = 1;
            }
        }
        for (int i = 0; i < a->nints; i++) {
            int ax = tether__ir_norm_axis(a->ints[i], x->ndim);
            if (ax < 0) {
                return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "axis %lld out of range",
                                             (long long)a->ints[i]);
            }
            red[ax] = 1;
        }
        /* Store the normalised axes as a full list so later stages need no defaults. */
        a->nints = 0;
        *ond = 0;
        for (int i = 0; i < x->ndim; i++) {
            if (red[i]) {
                a->ints[a->nints++] = i;
                if (a->keepdims) {
                    os[(*ond)++] = 1;
                }
            } else {
                os[(*ond)++] = x->shape[i];
            }
        }
        return TETHER_OK;
    }
    case TETHER_OP_RESIZE_NEAREST:
        if (x->ndim != 4 || a->scales[0] < 1 || a->scales[1] < 1) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "needs an NCHW input and integer scales >= 1");
        }
        os[0] = x->shape[0];
        os[1] = x->shape[1];
        os[2] = x->shape[2] * a->scales[0];
        os[3] = x->shape[3] * a->scales[1];
        *ond = 4;
        return TETHER_OK;
    case TETHER_OP_WHERE: {
        int64_t t[TETHER_IR_MAX_NDIM];
        int nt = 0;
        const tether_ir_tensor *c1 = tether__ir_in(g, n, 1), *c2 = tether__ir_in(g, n, 2);
        if (tether__ir_broadcast(x->shape, x->ndim, c1->shape, c1->ndim, t, &nt) ||
            tether__ir_broadcast(t, nt, c2->shape, c2->ndim, os, ond)) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "the condition and the two inputs do not broadcast");
        }
        return TETHER_OK;
    }
        TETHER__CASES_DATA
        return tether__ir_data_shape(g, n, os, ond);
    case TETHER_OP_NLL_LOSS:
    case TETHER_OP_NLL_LOSS_SUM:
    case TETHER_OP_NLL_LOSS_MEAN: {
        const tether_ir_tensor *t = tether__ir_in(g, n, 1), *w = tether__ir_in(g, n, 2);
        bool ok = x->ndim >= 2 && t->ndim == x->ndim - 1 && t->shape[0] == x->shape[0];
        for (int i = 2; ok && i < x->ndim; i++) {
            ok = t->shape[i - 1] == x->shape[i];
        }
        if (!ok) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "the target must be [N,d...] for scores [N,C,d...]");
        }
        if (w && (w->ndim != 1 || w->shape[0] != x->shape[1])) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH, "the weight must be [C]");
        }
        if (a->nints > 1) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "one ignore_index at most");
        }
        *ond = n->op == TETHER_OP_NLL_LOSS ? t->ndim : 0;
        memcpy(os, t->shape, sizeof(int64_t) * (size_t)*ond);
        return TETHER_OK;
    }
    case TETHER_OP_QUANTIZE:
    case TETHER_OP_DEQUANTIZE:
    case TETHER_OP_QCONV:
    case TETHER_OP_QMATMUL:
    case TETHER_OP_QADD: /* issue 28 integer elementwise/pooling */
    case TETHER_OP_QMUL:
    case TETHER_OP_QLUT:
    case TETHER_OP_QMAX_POOL:
    case TETHER_OP_QAVG_POOL:
        return tether__ir_quant_shape(g, n, os, ond);
    case TETHER_OP_CUSTOM: /* the registry entry's rule and the resource contract */
        return tether__custom_infer_shape(g, n, os, ond);
        TETHER__CASES_UNARY
        if (n->op == TETHER_OP_CLIP && !(a->min <= a->max)) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "min is greater than max");
        }
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        *ond = x->ndim;
        return TETHER_OK;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "no shape rule"); /* not an operator */
}
