/*
 * ONNX operator forms lowered into existing IR operators (branch i27g): Pad's edge, reflect and
 * wrap modes (per axis, in axis order as numpy's np.pad: slices, tiles and a concat, any pad size
 * and element type), Dropout's mask output (inference, or training with ratio 0: all true) and
 * BatchNormalization with training_mode 1 (the batch statistics and the running mean/variance
 * outputs, from reduce_mean, sub, mul, add, sqrt, div).
 *
 * What must stay true: results equal the ONNX reference (numpy) for every allowed attribute; what
 * cannot be reproduced (Dropout's random mask with ratio > 0) is refused by the support check
 * (ops.c) naming the reason, never approximated.
 */
#include <stdio.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* unique suffixes of the IR nodes made for one ONNX node (reset per node by the entry points) */
static _Thread_local int seq;

static int fresh(timport *c, int out, int *t) {
    if (out >= 0) {
        *t = out;
        return TETHER_OK;
    }
    char sfx[32];
    snprintf(sfx, sizeof sfx, "m%d", seq++);
    return tonnx_temp_tensor(c, sfx, t);
}

static int emit(timport *c, tether_op op, const int *in, int nin, int out,
                const tether_ir_attrs *a) {
    char sfx[32];
    snprintf(sfx, sizeof sfx, "n%d", seq++);
    return tonnx_emit(c, sfx, op, in, nin, out, a);
}

/* x[s:e:st] along ax (e -1 with a negative step: down to element 0) into out (-1: new). */
static int slice_axis(timport *c, int x, int ax, int64_t s, int64_t e, int64_t st, int out,
                      int *res) {
    const tether_ir_tensor *xt = &c->g->tensors[x];
    int nd = xt->ndim, rc;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_SLICE, &a);
    for (int d = 0; d < nd; d++) {
        a.ints[d] = 0;
        a.ints[nd + d] = xt->shape[d];
        a.steps[d] = 1;
    }
    a.ints[ax] = s;
    a.ints[nd + ax] = e;
    a.steps[ax] = st;
    a.nints = 2 * nd;
    if ((rc = fresh(c, out, res))) {
        return rc;
    }
    return emit(c, TETHER_OP_SLICE, &x, 1, *res, &a);
}

/* x repeated `reps` times along ax into out (-1: new). */
static int tile_axis(timport *c, int x, int ax, int64_t reps, int out, int *res) {
    const tether_ir_tensor *xt = &c->g->tensors[x];
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_TILE, &a);
    for (int d = 0; d < xt->ndim; d++) {
        a.ints[d] = xt->shape[d] * (d == ax ? reps : 1);
    }
    a.nints = xt->ndim;
    int rc = fresh(c, out, res);
    return rc ? rc : emit(c, TETHER_OP_TILE, &x, 1, *res, &a);
}

static int concat_axis(timport *c, const int *in, int n, int ax, int out, int *res) {
    if (n == 1) {
        return tile_axis(c, in[0], ax, 1, out, res); /* a copy into out */
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONCAT, &a);
    a.axis = ax;
    int rc = fresh(c, out, res);
    return rc ? rc : emit(c, TETHER_OP_CONCAT, in, n, *res, &a);
}

/* The periodic extension of x (period its extent along ax) from offset o, L long. */
static int wrap_window(timport *c, int x, int ax, int64_t o, int64_t len, int out, int *res) {
    int64_t p = c->g->tensors[x].shape[ax];
    int64_t reps = (o + len + p - 1) / p;
    int t = x, rc;
    if (reps > 1 && (rc = tile_axis(c, x, ax, reps, -1, &t))) {
        return rc;
    }
    return slice_axis(c, t, ax, o, o + len, 1, out, res);
}

/* One axis of an edge/reflect/wrap pad: cur padded by pb before and pe after into out. */
static int pad_axis(timport *c, int cur, int ax, int64_t pb, int64_t pe, const char *mode, int out,
                    int *res) {
    int64_t n = c->g->tensors[cur].shape[ax];
    int rc;
    if (n == 0) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "mode '%s' cannot pad axis %d: it has extent 0 (nothing to repeat)", mode,
                          ax);
    }
    bool edge = strcmp(mode, "edge") == 0 || (strcmp(mode, "reflect") == 0 && n == 1);
    if (edge) {
        int parts[3], np = 0, e;
        if (pb > 0) {
            if ((rc = slice_axis(c, cur, ax, 0, 1, 1, -1, &e)) ||
                (rc = tile_axis(c, e, ax, pb, -1, &parts[np]))) {
                return rc;
            }
            np++;
        }
        parts[np++] = cur;
        if (pe > 0) {
            if ((rc = slice_axis(c, cur, ax, n - 1, n, 1, -1, &e)) ||
                (rc = tile_axis(c, e, ax, pe, -1, &parts[np]))) {
                return rc;
            }
            np++;
        }
        return concat_axis(c, parts, np, ax, out, res);
    }
    int per = cur; /* wrap: x itself; reflect: x then x[n-2 .. 1] (period 2n - 2) */
    if (strcmp(mode, "reflect") == 0 && n > 2) {
        int parts[2] = {cur, -1};
        if ((rc = slice_axis(c, cur, ax, n - 2, 0, -1, -1, &parts[1])) ||
            (rc = concat_axis(c, parts, 2, ax, -1, &per))) {
            return rc;
        }
    }
    int64_t p = c->g->tensors[per].shape[ax];
    int64_t o = ((-pb) % p + p) % p;
    return wrap_window(c, per, ax, o, pb + n + pe, out, res);
}

int tonnx_pad_mode(timport *c, int x, int y, const int64_t *pads, int cnt, const char *mode) {
    seq = 0;
    const tether_ir_tensor *xt = &c->g->tensors[x];
    int r = xt->ndim;
    if (cnt != 2 * r) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "pads has %d entries for rank %d", cnt, r);
    }
    int last = -1;
    for (int d = 0; d < r; d++) {
        if (pads[d] < 0 || pads[d + r] < 0) {
            return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                              "negative pads (cropping) in mode '%s' on axis %d", mode, d);
        }
        if (pads[d] || pads[d + r]) {
            last = d;
        }
    }
    if (last < 0) {
        int res;
        return tile_axis(c, x, 0, 1, y, &res); /* nothing to pad: a copy */
    }
    int cur = x, rc;
    for (int d = 0; d <= last; d++) {
        if (!pads[d] && !pads[d + r]) {
            continue;
        }
        if ((rc = pad_axis(c, cur, d, pads[d], pads[d + r], mode, d == last ? y : -1, &cur))) {
            return rc;
        }
    }
    return TETHER_OK;
}

/* Dropout's mask (output 1): all true, x's shape (inference, or training with ratio 0). */
int tonnx_dropout_mask(timport *c, const Onnx__NodeProto *n) {
    seq = 0;
    int x, m, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = tonnx_out_tensor(c, 1, &m))) {
        return rc;
    }
    /* copies: adding tensors may move the tensor array */
    int nd = c->g->tensors[x].ndim;
    int64_t ones[TETHER_IR_MAX_NDIM], shape[TETHER_IR_MAX_NDIM];
    for (int d = 0; d < nd; d++) {
        ones[d] = 1;
        shape[d] = c->g->tensors[x].shape[d];
    }
    char name[400];
    snprintf(name, sizeof name, "%s/true", tonnx_node_name(c, c->cur));
    uint8_t one = 1;
    int k;
    if ((rc = tether_ir_add_constant(c->g, name, TETHER_BOOL, nd, ones, &one, 1, &k))) {
        return tonnx_wrap(c, rc);
    }
    (void)n;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_TILE, &a);
    for (int d = 0; d < nd; d++) {
        a.ints[d] = shape[d];
    }
    a.nints = nd;
    return emit(c, TETHER_OP_TILE, &k, 1, m, &a);
}

static int bin(timport *c, tether_op op, int a, int b, int out, int *res) {
    int in[2] = {a, b}, rc = fresh(c, out, res);
    tether_ir_attrs at;
    tether_ir_attrs_init(op, &at);
    return rc ? rc : emit(c, op, in, b < 0 ? 1 : 2, *res, &at);
}

static int scalar(timport *c, float v, int *t) {
    char sfx[32];
    snprintf(sfx, sizeof sfx, "k%d", seq++);
    return tonnx_const_tensor(c, sfx, 0, NULL, &v, t);
}

/* v [C] seen as [1, C, 1, ...] (rank r) into a new tensor. */
static int per_channel(timport *c, int v, int r, int *res) {
    int64_t shape[TETHER_IR_MAX_NDIM];
    for (int d = 0; d < r; d++) {
        shape[d] = d == 1 ? c->g->tensors[v].shape[0] : 1;
    }
    char sfx[32];
    snprintf(sfx, sizeof sfx, "r%d", seq++);
    return tonnx_reshape_into(c, sfx, v, r, shape, -1, res);
}

/* BatchNormalization, training_mode 1 (opset 14+), float32: mean and (population) variance of x
 * over every axis but 1; Y = (x - mean) / sqrt(var + epsilon) * scale + B; running_mean =
 * input_mean * momentum + mean * (1 - momentum), running_var likewise. */
int tonnx_batch_norm_training(timport *c, const Onnx__NodeProto *n) {
    seq = 0;
    float eps, mom;
    int in[5], rc;
    if ((rc = tonnx_attr_float(c, "epsilon", 1e-5f, &eps)) ||
        (rc = tonnx_attr_float(c, "momentum", 0.9f, &mom))) {
        return rc;
    }
    for (int i = 0; i < 5; i++) {
        if ((rc = tonnx_in_tensor(c, i, true, &in[i]))) {
            return rc;
        }
    }
    const tether_ir_tensor *xt = &c->g->tensors[in[0]];
    int r = xt->ndim;
    int64_t channels = r >= 2 ? xt->shape[1] : 0; /* xt moves when tensors are added */
    if (r < 2 || !tether_dtype_equal(xt->dtype, TETHER_FLOAT32)) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "training_mode 1 on a float32 input of rank 2 or more only");
    }
    tether_ir_attrs ra;
    tether_ir_attrs_init(TETHER_OP_REDUCE_MEAN, &ra);
    ra.nints = 0;
    for (int d = 0; d < r; d++) {
        if (d != 1) {
            ra.ints[ra.nints++] = d;
        }
    }
    ra.keepdims = true;
    int mean, dev, sq, var, ke, ve, sd, nrm, sc, bi, scaled, y;
    if ((rc = fresh(c, -1, &mean)) || (rc = emit(c, TETHER_OP_REDUCE_MEAN, &in[0], 1, mean, &ra)) ||
        (rc = bin(c, TETHER_OP_SUB, in[0], mean, -1, &dev)) ||
        (rc = bin(c, TETHER_OP_MUL, dev, dev, -1, &sq)) || (rc = fresh(c, -1, &var)) ||
        (rc = emit(c, TETHER_OP_REDUCE_MEAN, &sq, 1, var, &ra)) || (rc = scalar(c, eps, &ke)) ||
        (rc = bin(c, TETHER_OP_ADD, var, ke, -1, &ve)) ||
        (rc = bin(c, TETHER_OP_SQRT, ve, -1, -1, &sd)) ||
        (rc = bin(c, TETHER_OP_DIV, dev, sd, -1, &nrm)) || (rc = per_channel(c, in[1], r, &sc)) ||
        (rc = per_channel(c, in[2], r, &bi)) ||
        (rc = bin(c, TETHER_OP_MUL, nrm, sc, -1, &scaled)) || (rc = tonnx_out_tensor(c, 0, &y)) ||
        (rc = bin(c, TETHER_OP_ADD, scaled, bi, y, &y))) {
        return rc;
    }
    /* the running statistics: outputs 1 and 2 when present */
    int km, k1;
    if ((rc = scalar(c, mom, &km)) || (rc = scalar(c, 1.0f - mom, &k1))) {
        return rc;
    }
    for (int o = 1; o <= 2; o++) {
        if (o >= (int)n->n_output || !S(n->output[o])[0]) {
            continue;
        }
        int64_t cshape[1] = {channels};
        int stat = o == 1 ? mean : var, flat, a, b, out;
        char sfx[32];
        snprintf(sfx, sizeof sfx, "r%d", seq++);
        if ((rc = tonnx_reshape_into(c, sfx, stat, 1, cshape, -1, &flat)) ||
            (rc = bin(c, TETHER_OP_MUL, in[o == 1 ? 3 : 4], km, -1, &a)) ||
            (rc = bin(c, TETHER_OP_MUL, flat, k1, -1, &b)) || (rc = tonnx_out_tensor(c, o, &out)) ||
            (rc = bin(c, TETHER_OP_ADD, a, b, out, &out))) {
            return rc;
        }
    }
    return TETHER_OK;
}
