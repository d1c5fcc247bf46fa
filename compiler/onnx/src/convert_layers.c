/*
 * The ONNX converters of the window and normalisation layers: Conv, ConvTranspose, MaxPool,
 * AveragePool and LpPool over 1 to 3 spatial dimensions, GlobalLpPool, the Reduce* family,
 * InstanceNormalization, MeanVarianceNormalization, LRN, DepthToSpace and SpaceToDepth.
 *
 * Windows: a 1-D Conv or pool is the 2-D one on the input seen as [N,C,1,L] (an extent-1 height:
 * exact, and the fast 2-D kernels run it); a 3-D Conv is the IR's conv_nd; a 3-D pool is two 2-D
 * pools (over H,W with D folded into the channels, then over D), exact because a pool window is
 * a box (the max of maxima; the average of averages over counts that multiply); ConvTranspose of
 * any rank is conv_transpose. The other layers are compositions of IR operators (layer_norm,
 * reduce_mean, avg_pool, reshape, transpose, elementwise), each exact in real arithmetic.
 *
 * What must stay true: attribute defaults are the ONNX defaults of the version in use
 * (docs/onnx.md); an attribute value the IR cannot express is an error naming it.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/error.h"

/* ---- small builders ----------------------------------------------------------------------- */

static int node1(timport *c, const char *suffix, tether_op op, const int *in, int nin,
                 const tether_ir_attrs *a, int *out) {
    int rc = tonnx_temp_tensor(c, suffix, out);
    return rc ? rc : tonnx_emit(c, suffix, op, in, nin, *out, a);
}

static int reshape_node(timport *c, const char *suffix, int x, int ndim, const int64_t *shape,
                        int out, int *res) {
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_RESHAPE, &a);
    a.nints = ndim;
    memcpy(a.ints, shape, sizeof(int64_t) * (size_t)ndim);
    if (out >= 0) {
        *res = out;
        return tonnx_emit(c, suffix, TETHER_OP_RESHAPE, &x, 1, out, &a);
    }
    return node1(c, suffix, TETHER_OP_RESHAPE, &x, 1, &a, res);
}

static int binary_node(timport *c, const char *suffix, tether_op op, int x, int y, int out,
                       int *res) {
    int in[2] = {x, y};
    if (out >= 0) {
        *res = out;
        return tonnx_emit(c, suffix, op, in, 2, out, NULL);
    }
    return node1(c, suffix, op, in, 2, NULL, res);
}

static int scalar(timport *c, const char *suffix, float v, int *t) {
    return tonnx_const_tensor(c, suffix, 0, NULL, &v, t);
}

static const tether_ir_tensor *TT(timport *c, int t) {
    return &c->g->tensors[t];
}

/* ---- windows ------------------------------------------------------------------------------ */

typedef struct window {
    int nsp;
    int64_t k[3], s[3], d[3], p[6]; /* p: begin..., end... */
    int64_t out_pad[3];             /* ConvTranspose */
} window;

/* A list attribute of nsp entries (def when absent). */
static int attr_n(timport *c, const char *name, int nsp, int64_t def, int64_t *out) {
    int64_t v[8];
    int cnt, rc = tonnx_attr_ints(c, name, v, 8, &cnt);
    if (rc) {
        return rc;
    }
    for (int i = 0; i < nsp; i++) {
        out[i] = cnt < 0 ? def : v[i];
    }
    if (cnt >= 0 && cnt != nsp) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "attribute '%s' has %d entries for %d spatial dimensions", name, cnt,
                          nsp);
    }
    return TETHER_OK;
}

/* strides, dilations, pads and auto_pad of a Conv or pool whose kernel is known (w->k). */
static int read_window(timport *c, const int64_t *in_sp, window *w) {
    char ap[32];
    int64_t v[8];
    int cnt, rc, n = w->nsp;
    if ((rc = attr_n(c, "strides", n, 1, w->s)) || (rc = attr_n(c, "dilations", n, 1, w->d)) ||
        (rc = tonnx_attr_string(c, "auto_pad", "NOTSET", ap, sizeof ap)) ||
        (rc = tonnx_attr_ints(c, "pads", v, 8, &cnt))) {
        return rc;
    }
    memset(w->p, 0, sizeof w->p);
    for (int i = 0; i < n; i++) {
        if (w->s[i] < 1 || w->d[i] < 1 || w->k[i] < 1) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "strides, dilations and kernel must be >= 1");
        }
    }
    if (strcmp(ap, "NOTSET") == 0) {
        if (cnt >= 0 && cnt != 2 * n) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "attribute 'pads' has %d entries for %d spatial dimensions", cnt, n);
        }
        for (int i = 0; i < cnt; i++) {
            w->p[i < n ? i : 3 + i - n] = v[i];
        }
        return TETHER_OK;
    }
    if (strcmp(ap, "VALID") == 0) {
        return TETHER_OK;
    }
    bool upper = strcmp(ap, "SAME_UPPER") == 0;
    if (!upper && strcmp(ap, "SAME_LOWER") != 0) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "auto_pad '%s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
    }
    for (int i = 0; i < n; i++) {
        int64_t out = (in_sp[i] + w->s[i] - 1) / w->s[i];
        int64_t total = (out - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1 - in_sp[i];
        total = total < 0 ? 0 : total;
        int64_t small = total / 2, big = total - small;
        w->p[i] = upper ? small : big;
        w->p[3 + i] = upper ? big : small;
    }
    return TETHER_OK;
}

/* The IR's 2-D attributes from a 1-D (as [1, L]) or 2-D window. */
static void window_2d(const window *w, tether_ir_attrs *a) {
    int o = 2 - w->nsp;
    for (int i = 0; i < 2; i++) {
        int j = i - o;
        a->kernel[i] = j >= 0 ? w->k[j] : 1;
        a->strides[i] = j >= 0 ? w->s[j] : 1;
        a->dilations[i] = j >= 0 ? w->d[j] : 1;
        a->pads[i] = j >= 0 ? w->p[j] : 0;
        a->pads[2 + i] = j >= 0 ? w->p[3 + j] : 0;
    }
}

static void window_nd(const window *w, tether_ir_attrs *a) {
    a->nwin = w->nsp;
    for (int i = 0; i < w->nsp; i++) {
        a->wkernel[i] = w->k[i];
        a->wstrides[i] = w->s[i];
        a->wdilations[i] = w->d[i];
        a->wpads[i] = w->p[i];
        a->wpads[3 + i] = w->p[3 + i];
    }
}

/* x [N,C,L] as [N,C,1,L] (a reshape: the same storage). */
static int as_2d(timport *c, const char *suffix, int x, int *t) {
    const tether_ir_tensor *xt = TT(c, x);
    int64_t s[4] = {xt->shape[0], xt->shape[1], 1, xt->shape[2]};
    return reshape_node(c, suffix, x, 4, s, -1, t);
}

int tonnx_cv_conv(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int in[3], y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1])) ||
        (rc = tonnx_in_tensor(c, 2, false, &in[2]))) {
        return rc;
    }
    const tether_ir_tensor *x = TT(c, in[0]), *wt = TT(c, in[1]);
    window w = {.nsp = x->ndim - 2};
    if (w.nsp < 1 || w.nsp > 3 || wt->ndim != x->ndim) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "only 1-D, 2-D and 3-D convolutions are supported (input and weights of "
                          "the same rank 3 to 5); the input has rank %d, the weights %d",
                          x->ndim, wt->ndim);
    }
    int64_t ks[3], group;
    if ((rc = attr_n(c, "kernel_shape", w.nsp, 0, ks)) ||
        (rc = tonnx_attr_int(c, "group", 1, &group))) {
        return rc;
    }
    for (int i = 0; i < w.nsp; i++) {
        w.k[i] = wt->shape[2 + i];
        if (ks[i] && ks[i] != w.k[i]) {
            return tonnx_fail(c, TETHER_ERR_MISMATCH,
                              "kernel_shape entry %d is %lld, the weights' extent %lld", i,
                              (long long)ks[i], (long long)w.k[i]);
        }
    }
    int64_t in_sp[3] = {x->shape[2], w.nsp > 1 ? x->shape[3] : 1, w.nsp > 2 ? x->shape[4] : 1};
    if ((rc = read_window(c, in_sp, &w)) || (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    int nin = in[2] >= 0 ? 3 : 2;
    tether_ir_attrs a;
    if (w.nsp == 3) {
        tether_ir_attrs_init(TETHER_OP_CONV_ND, &a);
        window_nd(&w, &a);
        a.groups = group;
        return tonnx_emit(c, NULL, TETHER_OP_CONV_ND, in, nin, y, &a);
    }
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    window_2d(&w, &a);
    a.groups = group;
    if (w.nsp == 2) {
        return tonnx_emit(c, NULL, TETHER_OP_CONV2D, in, nin, y, &a);
    }
    /* 1-D: [N,C,L] as [N,C,1,L], weights [O,C/g,K] as [O,C/g,1,K] */
    int x2, w2, y2;
    const tether_ir_tensor *wt2 = TT(c, in[1]);
    if (wt2->kind == TETHER_TENSOR_CONSTANT) {
        int64_t s[4] = {wt2->shape[0], wt2->shape[1], 1, wt2->shape[2]};
        rc = tonnx_const_tensor(c, "weights_2d", 4, s, wt2->data, &w2);
    } else {
        rc = as_2d(c, "weights_2d", in[1], &w2);
    }
    if (rc || (rc = as_2d(c, "input_2d", in[0], &x2))) {
        return rc;
    }
    int in2[3] = {x2, w2, in[2]};
    if ((rc = node1(c, "conv_2d", TETHER_OP_CONV2D, in2, nin, &a, &y2))) {
        return rc;
    }
    const tether_ir_tensor *yt = TT(c, y2);
    int64_t s3[3] = {yt->shape[0], yt->shape[1], yt->shape[3]};
    return reshape_node(c, NULL, y2, 3, s3, y, &y2);
}

/* A pool (max_pool or avg_pool with the window w) of x into out (-1: a new tensor), any of 1 to 3
 * spatial dimensions. */
static int pool_nd(timport *c, tether_op op, int x, const window *w, bool ceil_mode, bool cip,
                   int out, int *res) {
    const tether_ir_tensor *xt = TT(c, x);
    tether_ir_attrs a;
    tether_ir_attrs_init(op, &a);
    a.ceil_mode = ceil_mode;
    a.count_include_pad = cip;
    int rc, t;
    if (w->nsp == 2) {
        window_2d(w, &a);
        if (out >= 0) {
            *res = out;
            return tonnx_emit(c, NULL, op, &x, 1, out, &a);
        }
        return node1(c, "pool", op, &x, 1, &a, res);
    }
    if (w->nsp == 1) {
        window_2d(w, &a);
        int x2, y2;
        if ((rc = as_2d(c, "input_2d", x, &x2)) ||
            (rc = node1(c, "pool_2d", op, &x2, 1, &a, &y2))) {
            return rc;
        }
        const tether_ir_tensor *yt = TT(c, y2);
        int64_t s3[3] = {yt->shape[0], yt->shape[1], yt->shape[3]};
        return reshape_node(c, "output", y2, 3, s3, out, res);
    }
    /* 3-D: over (H, W) with D folded into the channels, then over D */
    int64_t N = xt->shape[0], C = xt->shape[1], D = xt->shape[2], H = xt->shape[3],
            W = xt->shape[4];
    int64_t s4[4] = {N, C * D, H, W};
    window hw = {.nsp = 2,
                 .k = {w->k[1], w->k[2]},
                 .s = {w->s[1], w->s[2]},
                 .d = {w->d[1], w->d[2]},
                 .p = {w->p[1], w->p[2], 0, w->p[4], w->p[5], 0}};
    window dd = {
        .nsp = 1, .k = {w->k[0]}, .s = {w->s[0]}, .d = {w->d[0]}, .p = {w->p[0], 0, 0, w->p[3]}};
    if ((rc = reshape_node(c, "planes", x, 4, s4, -1, &t))) {
        return rc;
    }
    window_2d(&hw, &a);
    int p1;
    if ((rc = node1(c, "pool_hw", op, &t, 1, &a, &p1))) {
        return rc;
    }
    int64_t OH = TT(c, p1)->shape[2], OW = TT(c, p1)->shape[3];
    int64_t s4b[4] = {N * C, 1, D, OH * OW};
    int t2, p2;
    tether_ir_attrs_init(op, &a);
    a.ceil_mode = ceil_mode;
    a.count_include_pad = cip;
    window_2d(&dd, &a);
    a.kernel[0] = a.kernel[1]; /* the D window along the height of [N*C, 1, D, OH*OW] */
    a.kernel[1] = 1;
    a.strides[0] = a.strides[1];
    a.strides[1] = 1;
    a.dilations[0] = a.dilations[1];
    a.dilations[1] = 1;
    a.pads[0] = a.pads[1];
    a.pads[1] = 0;
    a.pads[2] = a.pads[3];
    a.pads[3] = 0;
    if ((rc = reshape_node(c, "depth", p1, 4, s4b, -1, &t2)) ||
        (rc = node1(c, "pool_d", op, &t2, 1, &a, &p2))) {
        return rc;
    }
    int64_t s5[5] = {N, C, TT(c, p2)->shape[2], OH, OW};
    return reshape_node(c, "output", p2, 5, s5, out, res);
}

/* The pool's window from kernel_shape, strides, dilations, pads, auto_pad. */
static int pool_window(timport *c, int x, window *w) {
    const tether_ir_tensor *xt = TT(c, x);
    w->nsp = xt->ndim - 2;
    if (w->nsp < 1 || w->nsp > 3) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "only 1-D, 2-D and 3-D pooling is supported (input rank 3 to 5); the "
                          "input has rank %d",
                          xt->ndim);
    }
    int64_t v[8];
    int cnt, rc = tonnx_attr_ints(c, "kernel_shape", v, 8, &cnt);
    if (rc) {
        return rc;
    }
    if (cnt != w->nsp) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "attribute 'kernel_shape' is required with %d entries", w->nsp);
    }
    memcpy(w->k, v, sizeof(int64_t) * (size_t)w->nsp);
    int64_t in_sp[3];
    for (int i = 0; i < w->nsp; i++) {
        in_sp[i] = xt->shape[2 + i];
    }
    return read_window(c, in_sp, w);
}

int tonnx_cv_pool(timport *c, const Onnx__NodeProto *n) {
    bool max = strcmp(S(n->op_type), "MaxPool") == 0;
    int x, y, rc;
    int64_t ceil_mode = 0, cip = 0;
    window w;
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = pool_window(c, x, &w)) ||
        (rc = tonnx_attr_int(c, "ceil_mode", 0, &ceil_mode)) ||
        (!max && (rc = tonnx_attr_int(c, "count_include_pad", 0, &cip))) ||
        (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    return pool_nd(c, max ? TETHER_OP_MAX_POOL : TETHER_OP_AVG_POOL, x, &w, ceil_mode != 0,
                   cip != 0, y, &y);
}

/* |x|^p (x * x for p = 2). */
static int abs_pow(timport *c, int x, int64_t p, int *res) {
    int rc, t, e;
    if (p == 2) {
        return binary_node(c, "square", TETHER_OP_MUL, x, x, -1, res);
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_ABS, &a);
    if ((rc = node1(c, "abs", TETHER_OP_ABS, &x, 1, &a, &t)) ||
        (rc = scalar(c, "p", (float)p, &e))) {
        return rc;
    }
    return binary_node(c, "power", TETHER_OP_POW, t, e, -1, res);
}

/* (sum * count)^(1/p) into out, from an average over count elements. */
static int lp_finish(timport *c, int avg, double count, int64_t p, int out) {
    int rc, k, s, e, r;
    if ((rc = scalar(c, "count", (float)count, &k)) ||
        (rc = binary_node(c, "sum", TETHER_OP_MUL, avg, k, -1, &s))) {
        return rc;
    }
    if (p == 2) {
        tether_ir_attrs a;
        tether_ir_attrs_init(TETHER_OP_SQRT, &a);
        return tonnx_emit(c, NULL, TETHER_OP_SQRT, &s, 1, out, &a);
    }
    if ((rc = scalar(c, "inv_p", (float)(1.0 / (double)p), &e))) {
        return rc;
    }
    return binary_node(c, NULL, TETHER_OP_POW, s, e, out, &r);
}

/* LpPool: (sum over the window of |x|^p)^(1/p), the padding adding zeros: an average pool that
 * counts the padding, times the window's size. */
int tonnx_cv_lp_pool(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int x, y, rc, ax, avg;
    int64_t p, ceil_mode = 0;
    window w;
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = pool_window(c, x, &w)) ||
        (rc = tonnx_attr_int(c, "p", 2, &p)) ||
        (rc = tonnx_attr_int(c, "ceil_mode", 0, &ceil_mode)) || (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    if (p < 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "p %lld (must be >= 1)", (long long)p);
    }
    if (ceil_mode) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "ceil_mode 1 of LpPool");
    }
    double vol = 1;
    for (int i = 0; i < w.nsp; i++) {
        vol *= (double)w.k[i];
    }
    if ((rc = abs_pow(c, x, p, &ax)) ||
        (rc = pool_nd(c, TETHER_OP_AVG_POOL, ax, &w, false, true, -1, &avg))) {
        return rc;
    }
    return lp_finish(c, avg, vol, p, y);
}

int tonnx_cv_global_lp_pool(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int x, y, rc, ax, avg;
    int64_t p;
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = tonnx_attr_int(c, "p", 2, &p)) ||
        (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    if (p < 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "p %lld (must be >= 1)", (long long)p);
    }
    const tether_ir_tensor *xt = TT(c, x);
    double plane = 1;
    for (int i = 2; i < xt->ndim; i++) {
        plane *= (double)xt->shape[i];
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_GLOBAL_AVG_POOL, &a);
    if ((rc = abs_pow(c, x, p, &ax)) ||
        (rc = node1(c, "mean", TETHER_OP_GLOBAL_AVG_POOL, &ax, 1, &a, &avg))) {
        return rc;
    }
    return lp_finish(c, avg, plane, p, y);
}

/* ConvTranspose: pads from pads / auto_pad / output_shape, output_padding folded into the end
 * pads (an end pad below 0 grows the output). */
int tonnx_cv_conv_transpose(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int in[3], y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1])) ||
        (rc = tonnx_in_tensor(c, 2, false, &in[2]))) {
        return rc;
    }
    const tether_ir_tensor *x = TT(c, in[0]), *wt = TT(c, in[1]);
    window w = {.nsp = x->ndim - 2};
    if (w.nsp < 1 || w.nsp > 3 || wt->ndim != x->ndim) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "only 1-D, 2-D and 3-D transposed convolutions are supported (input and "
                          "weights of the same rank 3 to 5); the input has rank %d, the weights %d",
                          x->ndim, wt->ndim);
    }
    int64_t ks[3], op[3], group, v[8];
    char ap[32];
    int nos;
    if ((rc = attr_n(c, "kernel_shape", w.nsp, 0, ks)) ||
        (rc = attr_n(c, "strides", w.nsp, 1, w.s)) ||
        (rc = attr_n(c, "dilations", w.nsp, 1, w.d)) ||
        (rc = attr_n(c, "output_padding", w.nsp, 0, op)) ||
        (rc = tonnx_attr_int(c, "group", 1, &group)) ||
        (rc = tonnx_attr_string(c, "auto_pad", "NOTSET", ap, sizeof ap)) ||
        (rc = tonnx_attr_ints(c, "output_shape", v, 8, &nos))) {
        return rc;
    }
    bool upper = strcmp(ap, "SAME_UPPER") == 0, lower = strcmp(ap, "SAME_LOWER") == 0;
    if (!upper && !lower && strcmp(ap, "NOTSET") && strcmp(ap, "VALID")) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "auto_pad '%s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
    }
    if (nos >= 0 && nos != w.nsp && nos != x->ndim) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "attribute 'output_shape' has %d entries for %d spatial dimensions", nos,
                          w.nsp);
    }
    const int64_t *oshape = nos == x->ndim ? v + 2 : v;
    for (int i = 0; i < w.nsp; i++) {
        w.k[i] = wt->shape[2 + i];
        if (ks[i] && ks[i] != w.k[i]) {
            return tonnx_fail(c, TETHER_ERR_MISMATCH,
                              "kernel_shape entry %d is %lld, the weights' extent %lld", i,
                              (long long)ks[i], (long long)w.k[i]);
        }
        if (w.s[i] < 1 || w.d[i] < 1 || op[i] < 0) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "strides and dilations must be >= 1, output_padding >= 0");
        }
    }
    int64_t pads[8];
    int npads;
    if ((rc = tonnx_attr_ints(c, "pads", pads, 8, &npads))) {
        return rc;
    }
    if (npads >= 0 && npads != 2 * w.nsp) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "attribute 'pads' has %d entries for %d spatial dimensions", npads,
                          w.nsp);
    }
    for (int i = 0; i < w.nsp; i++) {
        int64_t in_i = x->shape[2 + i], eff = (w.k[i] - 1) * w.d[i] + 1;
        int64_t full = w.s[i] * (in_i - 1) + op[i] + eff; /* the output without padding */
        int64_t pb = 0, pe = 0;
        if (nos >= 0 || upper || lower) {
            int64_t want = nos >= 0 ? oshape[i] : in_i * w.s[i];
            int64_t total = full - want;
            /* the split of onnx's reference: SAME_UPPER puts the smaller half first */
            pb = upper ? total / 2 : total - total / 2;
            pe = total - pb;
            if (nos >= 0 && !upper && !lower) {
                pb = 0; /* output_shape with explicit pads: the output is cut (or grown) at the end
                         */
                pe = total;
            }
        } else if (npads >= 0 && strcmp(ap, "VALID")) {
            pb = pads[i];
            pe = pads[w.nsp + i];
        }
        w.p[i] = pb;
        w.p[3 + i] = pe - op[i];
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONV_TRANSPOSE, &a);
    window_nd(&w, &a);
    a.groups = group;
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_CONV_TRANSPOSE, in, in[2] >= 0 ? 3 : 2, y, &a);
}

/* ---- reductions --------------------------------------------------------------------------- */

/* ReduceSum ... ReduceSumSquare and ReduceMean: axes an attribute before opset 13 (ReduceSum) or
 * 18 (the others), an optional constant input from then on (none: every axis; none with
 * noop_with_empty_axes 1: the output is the input). */
int tonnx_cv_reduce(timport *c, const Onnx__NodeProto *n) {
    static const struct {
        const char *name;
        tether_op op;
    } map[] = {
        {"ReduceMean", TETHER_OP_REDUCE_MEAN},
        {"ReduceSum", TETHER_OP_REDUCE_SUM},
        {"ReduceMax", TETHER_OP_REDUCE_MAX},
        {"ReduceMin", TETHER_OP_REDUCE_MIN},
        {"ReduceProd", TETHER_OP_REDUCE_PROD},
        {"ReduceL1", TETHER_OP_REDUCE_L1},
        {"ReduceL2", TETHER_OP_REDUCE_L2},
        {"ReduceLogSum", TETHER_OP_REDUCE_LOG_SUM},
        {"ReduceLogSumExp", TETHER_OP_REDUCE_LOG_SUM_EXP},
        {"ReduceSumSquare", TETHER_OP_REDUCE_SUM_SQUARE},
    };
    tether_op op = TETHER_OP_REDUCE_MEAN;
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        if (strcmp(map[i].name, S(n->op_type)) == 0) {
            op = map[i].op;
        }
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(op, &a);
    int64_t keep, noop;
    int x, y, rc, cnt = -1;
    int since = op == TETHER_OP_REDUCE_SUM ? 13 : 18;
    if (c->opset < since) {
        rc = tonnx_attr_ints(c, "axes", a.ints, TETHER_IR_MAX_NDIM, &cnt);
    } else {
        hconst *k = NULL;
        rc = tonnx_in_const(c, 1, false, &k);
        if (!rc && k) {
            rc = tonnx_const_ints(c, k, "axes", a.ints, TETHER_IR_MAX_NDIM, &cnt);
        }
    }
    if (rc || (rc = tonnx_attr_int(c, "keepdims", 1, &keep)) ||
        (rc = tonnx_attr_int(c, "noop_with_empty_axes", 0, &noop)) ||
        (rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    if (cnt <= 0 && noop) { /* no axes and noop_with_empty_axes: the output is the input */
        c->v[tonnx_find(c, S(n->output[0]))].tensor = x;
        return TETHER_OK;
    }
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    a.nints = cnt < 0 ? 0 : cnt;
    a.keepdims = keep != 0;
    return tonnx_emit(c, NULL, op, &x, 1, y, &a);
}

/* ---- normalisations ----------------------------------------------------------------------- */

/* InstanceNormalization: each (n, c) plane normalised (layer_norm over [N*C, S] with a unit
 * scale), then scale[c] and B[c]. */
int tonnx_cv_instance_norm(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int in[3], y, rc;
    float eps;
    if ((rc = tonnx_attr_float(c, "epsilon", 1e-5f, &eps)) ||
        (rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1])) ||
        (rc = tonnx_in_tensor(c, 2, true, &in[2])) || (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    const tether_ir_tensor *xt = TT(c, in[0]);
    if (xt->ndim < 3) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "the input has rank %d (at least 3)",
                          xt->ndim);
    }
    int64_t N = xt->shape[0], C = xt->shape[1], S = 1, xs[TETHER_IR_MAX_NDIM];
    int r = xt->ndim;
    memcpy(xs, xt->shape, sizeof(int64_t) * (size_t)r);
    for (int i = 2; i < r; i++) {
        S *= xs[i];
    }
    float *ones = malloc(sizeof(float) * (size_t)(S ? S : 1));
    if (!ones) {
        return tonnx_fail(c, TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int64_t i = 0; i < S; i++) {
        ones[i] = 1.0f;
    }
    int rows, one, ln, sc, bi, m, sum, t;
    int64_t s2[2] = {N * C, S}, s3[3] = {N, C, S}, c2[2] = {C, 1};
    rc = tonnx_const_tensor(c, "unit_scale", 1, &S, ones, &one);
    free(ones);
    tether_ir_attrs la;
    tether_ir_attrs_init(TETHER_OP_LAYER_NORM, &la);
    la.axis = 1;
    la.epsilon = eps;
    int lin[2];
    if (rc || (rc = reshape_node(c, "planes", in[0], 2, s2, -1, &rows))) {
        return rc;
    }
    lin[0] = rows;
    lin[1] = one;
    if ((rc = node1(c, "normalised", TETHER_OP_LAYER_NORM, lin, 2, &la, &ln)) ||
        (rc = reshape_node(c, "channels", ln, 3, s3, -1, &t)) ||
        (rc = reshape_node(c, "scale_c1", in[1], 2, c2, -1, &sc)) ||
        (rc = reshape_node(c, "bias_c1", in[2], 2, c2, -1, &bi)) ||
        (rc = binary_node(c, "scaled", TETHER_OP_MUL, t, sc, -1, &m)) ||
        (rc = binary_node(c, "shifted", TETHER_OP_ADD, m, bi, -1, &sum))) {
        return rc;
    }
    return reshape_node(c, NULL, sum, r, xs, y, &t);
}

/* MeanVarianceNormalization: (x - mean) / (sqrt(mean((x - mean)^2)) + 1e-9) over axes
 * (default 0, 2, 3), as the operator's ONNX function computes it. */
int tonnx_cv_mvn(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int x, y, rc, cnt;
    tether_ir_attrs ra;
    tether_ir_attrs_init(TETHER_OP_REDUCE_MEAN, &ra);
    if ((rc = tonnx_attr_ints(c, "axes", ra.ints, TETHER_IR_MAX_NDIM, &cnt)) ||
        (rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    if (cnt < 0) {
        cnt = 3;
        ra.ints[0] = 0;
        ra.ints[1] = 2;
        ra.ints[2] = 3;
    }
    ra.nints = cnt;
    ra.keepdims = true;
    tether_ir_attrs sa;
    tether_ir_attrs_init(TETHER_OP_SQRT, &sa);
    int mean, d, sq, var, sd, eps, den, r;
    if ((rc = node1(c, "mean", TETHER_OP_REDUCE_MEAN, &x, 1, &ra, &mean)) ||
        (rc = binary_node(c, "centred", TETHER_OP_SUB, x, mean, -1, &d)) ||
        (rc = binary_node(c, "squared", TETHER_OP_MUL, d, d, -1, &sq)) ||
        (rc = node1(c, "variance", TETHER_OP_REDUCE_MEAN, &sq, 1, &ra, &var)) ||
        (rc = node1(c, "stddev", TETHER_OP_SQRT, &var, 1, &sa, &sd)) ||
        (rc = scalar(c, "epsilon", 1e-9f, &eps)) ||
        (rc = binary_node(c, "stddev_eps", TETHER_OP_ADD, sd, eps, -1, &den))) {
        return rc;
    }
    return binary_node(c, NULL, TETHER_OP_DIV, d, den, y, &r);
}

/* LRN: x / (bias + alpha / size * (sum of x^2 over the size channels around c))^beta; the sum
 * is an average pool (counting the zero padding) along the channels of [N, 1, C, S]. */
int tonnx_cv_lrn(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int x, y, rc;
    float alpha, beta, bias;
    int64_t size;
    if (!tonnx_attr(c->gp->node[c->cur], "size")) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute 'size' is required");
    }
    if ((rc = tonnx_attr_float(c, "alpha", 1e-4f, &alpha)) ||
        (rc = tonnx_attr_float(c, "beta", 0.75f, &beta)) ||
        (rc = tonnx_attr_float(c, "bias", 1.0f, &bias)) ||
        (rc = tonnx_attr_int(c, "size", 0, &size)) || (rc = tonnx_in_tensor(c, 0, true, &x)) ||
        (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    const tether_ir_tensor *xt = TT(c, x);
    if (size < 1 || xt->ndim < 3) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "size %lld (>= 1) on a rank-%d input (>= 3)",
                          (long long)size, xt->ndim);
    }
    int r = xt->ndim;
    int64_t xs[TETHER_IR_MAX_NDIM], S = 1;
    memcpy(xs, xt->shape, sizeof(int64_t) * (size_t)r);
    for (int i = 2; i < r; i++) {
        S *= xs[i];
    }
    int64_t s4[4] = {xs[0], 1, xs[1], S};
    tether_ir_attrs pa;
    tether_ir_attrs_init(TETHER_OP_AVG_POOL, &pa);
    pa.kernel[0] = size;
    pa.kernel[1] = 1;
    pa.pads[0] = (size - 1) / 2;
    pa.pads[2] = size - 1 - (size - 1) / 2;
    pa.count_include_pad = true;
    int sq, v, avg, back, ka, kb, kp, t1, t2, den, res;
    if ((rc = binary_node(c, "square", TETHER_OP_MUL, x, x, -1, &sq)) ||
        (rc = reshape_node(c, "channels", sq, 4, s4, -1, &v)) ||
        (rc = node1(c, "window_mean", TETHER_OP_AVG_POOL, &v, 1, &pa, &avg)) ||
        (rc = reshape_node(c, "window_mean_x", avg, r, xs, -1, &back)) ||
        (rc = scalar(c, "alpha", alpha, &ka)) || (rc = scalar(c, "bias", bias, &kb)) ||
        (rc = scalar(c, "beta", beta, &kp)) ||
        (rc = binary_node(c, "scaled", TETHER_OP_MUL, back, ka, -1, &t1)) ||
        (rc = binary_node(c, "biased", TETHER_OP_ADD, t1, kb, -1, &t2)) ||
        (rc = binary_node(c, "denominator", TETHER_OP_POW, t2, kp, -1, &den))) {
        return rc;
    }
    return binary_node(c, NULL, TETHER_OP_DIV, x, den, y, &res);
}

/* ---- layout ------------------------------------------------------------------------------- */

/* DepthToSpace (DCR or CRD) and SpaceToDepth: a reshape to rank 6, a transpose, a reshape. */
int tonnx_cv_depth_space(timport *c, const Onnx__NodeProto *n) {
    bool d2s = strcmp(S(n->op_type), "DepthToSpace") == 0;
    int x, y, rc;
    int64_t b;
    char mode[16];
    if ((rc = tonnx_attr_int(c, "blocksize", 0, &b)) ||
        (rc = tonnx_attr_string(c, "mode", "DCR", mode, sizeof mode)) ||
        (rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    bool crd = strcmp(mode, "CRD") == 0;
    if (d2s && !crd && strcmp(mode, "DCR") != 0) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "mode '%s' (DCR or CRD)", mode);
    }
    const tether_ir_tensor *xt = TT(c, x);
    if (xt->ndim != 4 || b < 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "needs a rank-4 input and blocksize >= 1 (rank %d, blocksize %lld)",
                          xt->ndim, (long long)b);
    }
    int64_t N = xt->shape[0], C = xt->shape[1], H = xt->shape[2], W = xt->shape[3];
    int64_t s6[6], out[4];
    tether_ir_attrs ta;
    tether_ir_attrs_init(TETHER_OP_TRANSPOSE, &ta);
    ta.nints = 6;
    if (d2s) {
        if (C % (b * b)) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "channels %lld not divisible by %lld",
                              (long long)C, (long long)(b * b));
        }
        int64_t cb = C / (b * b);
        static const int64_t dcr[6] = {0, 3, 4, 1, 5, 2}, crdp[6] = {0, 1, 4, 2, 5, 3};
        int64_t s_dcr[6] = {N, b, b, cb, H, W}, s_crd[6] = {N, cb, b, b, H, W};
        memcpy(s6, crd ? s_crd : s_dcr, sizeof s6);
        memcpy(ta.ints, crd ? crdp : dcr, sizeof dcr);
        out[0] = N;
        out[1] = cb;
        out[2] = H * b;
        out[3] = W * b;
    } else {
        if (H % b || W % b) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "H %lld and W %lld not divisible by %lld",
                              (long long)H, (long long)W, (long long)b);
        }
        static const int64_t perm[6] = {0, 3, 5, 1, 2, 4};
        int64_t s[6] = {N, C, H / b, b, W / b, b};
        memcpy(s6, s, sizeof s6);
        memcpy(ta.ints, perm, sizeof perm);
        out[0] = N;
        out[1] = C * b * b;
        out[2] = H / b;
        out[3] = W / b;
    }
    int v, t, r;
    if ((rc = reshape_node(c, "blocks", x, 6, s6, -1, &v)) ||
        (rc = node1(c, "moved", TETHER_OP_TRANSPOSE, &v, 1, &ta, &t))) {
        return rc;
    }
    return reshape_node(c, NULL, t, 4, out, y, &r);
}

/* ---- for the quantized operators (convert_quant.c) ---------------------------------------- */

int tonnx_reshape_into(timport *c, const char *suffix, int x, int ndim, const int64_t *shape,
                       int out, int *res) {
    return reshape_node(c, suffix, x, ndim, shape, out, res);
}

int tonnx_conv_window2d(timport *c, int x, int w, tether_ir_attrs *a, int *x2, int *w2, int *nsp) {
    const tether_ir_tensor *xt = TT(c, x), *wt = TT(c, w);
    window win = {.nsp = xt->ndim - 2};
    if (win.nsp < 1 || win.nsp > 2 || wt->ndim != xt->ndim) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "only 1-D and 2-D integer convolutions are supported (input and weights "
                          "of rank 3 or 4); the input has rank %d, the weights %d",
                          xt->ndim, wt->ndim);
    }
    int64_t ks[3], group;
    int rc;
    if ((rc = attr_n(c, "kernel_shape", win.nsp, 0, ks)) ||
        (rc = tonnx_attr_int(c, "group", 1, &group))) {
        return rc;
    }
    for (int i = 0; i < win.nsp; i++) {
        win.k[i] = wt->shape[2 + i];
        if (ks[i] && ks[i] != win.k[i]) {
            return tonnx_fail(c, TETHER_ERR_MISMATCH,
                              "kernel_shape entry %d is %lld, the weights' extent %lld", i,
                              (long long)ks[i], (long long)win.k[i]);
        }
    }
    int64_t in_sp[3] = {xt->shape[2], win.nsp > 1 ? xt->shape[3] : 1, 1};
    if ((rc = read_window(c, in_sp, &win))) {
        return rc;
    }
    window_2d(&win, a);
    a->groups = group;
    *nsp = win.nsp;
    *x2 = x;
    *w2 = w;
    if (win.nsp == 2) {
        return TETHER_OK;
    }
    if ((rc = as_2d(c, "weights_2d", w, w2))) {
        return rc;
    }
    return as_2d(c, "input_2d", x, x2);
}

int tonnx_pool_into(timport *c, tether_op op, int x, int out) {
    int64_t ceil_mode = 0, cip = 0;
    window w;
    int rc, res;
    if ((rc = pool_window(c, x, &w)) || (rc = tonnx_attr_int(c, "ceil_mode", 0, &ceil_mode)) ||
        (op == TETHER_OP_AVG_POOL && (rc = tonnx_attr_int(c, "count_include_pad", 0, &cip)))) {
        return rc;
    }
    return pool_nd(c, op, x, &w, ceil_mode != 0, cip != 0, out, &res);
}

/* ---- for convert_vision.c (issue 27, wt27f) ---- */

int tonnx_pool_window_2d(timport *c, int x, tether_ir_attrs *a, int *nsp) {
    window w;
    int64_t ceil_mode = 0;
    int rc;
    if ((rc = pool_window(c, x, &w)) || (rc = tonnx_attr_int(c, "ceil_mode", 0, &ceil_mode))) {
        return rc;
    }
    *nsp = w.nsp;
    if (w.nsp <= 2) {
        window_2d(&w, a);
    }
    a->ceil_mode = ceil_mode != 0;
    return TETHER_OK;
}
