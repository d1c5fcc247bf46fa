/*
 * The integer-operator pass's pass-through and pooling patterns (docs/quantization.md): between a
 * dequantize and a quantize,
 *   - reshape, flatten, squeeze, unsqueeze, transpose, concat, and max_pool when its kernel takes
 *     8-bit tensors, whose quantize has the same scale and zero point as every dequantize feeding
 *     it, run on the quantized tensors directly (moving or picking values commutes with an
 *     increasing affine map);
 *   - global_avg_pool becomes reshape -> qmatmul with a column of ones -> reshape (sum of
 *     x - x_zp, requantized by x_scale / (y_scale * H * W));
 *   - avg_pool whose window never leaves the input, or that counts padding (count_include_pad),
 *     becomes a depthwise qconv with weights 1 (the padding is x_zp, i.e. 0 after the
 *     subtraction), requantized by x_scale / (y_scale * kh * kw).
 *
 * What must stay true: a pattern is rewritten only when the integer result equals round(float
 * result / y_scale) + y_zp up to the one rounding of the requantization, with constant per-tensor
 * scales and zero points; the float intermediate is read by nothing but the quantize node.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "quant_pass.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* The quantize node that is the only consumer of t, with constant per-tensor 8-bit parameters
 * (-1 otherwise). */
static int q_of(const tether_ir_graph *g, int t) {
    int q = only_consumer(g, t);
    if (q < 0 || g->nodes[q].op != TETHER_OP_QUANTIZE || !cst(g, g->nodes[q].inputs[1]) ||
        tether_ir_tensor_elements(&g->tensors[g->nodes[q].inputs[1]]) != 1 ||
        (g->nodes[q].ninputs > 2 && g->nodes[q].inputs[2] >= 0 && !cst(g, g->nodes[q].inputs[2])) ||
        g->nodes[q].attrs.to.bits != 8) {
        return -1;
    }
    return q;
}

/* The dequantize producing t with per-tensor parameters of an 8-bit tensor (-1 otherwise). */
static int dq8_of(const tether_ir_graph *g, int t) {
    int d = dq_of(g, t);
    if (d < 0 || tether_ir_tensor_elements(&g->tensors[g->nodes[d].inputs[1]]) != 1 ||
        g->tensors[g->nodes[d].inputs[0]].dtype.bits != 8) {
        return -1;
    }
    return d;
}

static int pass_through_op(tether_op op) {
    if (op == TETHER_OP_RESHAPE || op == TETHER_OP_FLATTEN || op == TETHER_OP_SQUEEZE ||
        op == TETHER_OP_UNSQUEEZE || op == TETHER_OP_TRANSPOSE || op == TETHER_OP_CONCAT) {
        return 1;
    }
    /* max_pool where its kernels take 8-bit integers */
    return op == TETHER_OP_MAX_POOL && tether__op_info_of(op)->types != TETHER__TY_F32;
}

/* op(dq(x1), dq(x2), ...) -> q with every scale and zero point equal: op(x1, x2, ...). */
static int passthrough(tether_ir_graph *g, int i) {
    tether_ir_node *n = &g->nodes[i];
    if (!pass_through_op(n->op) || n->noutputs != 1 || n->attrs.act != TETHER_ACT_NONE ||
        n->attrs.has_residual) {
        return 0;
    }
    int q = q_of(g, n->outputs[0]);
    if (q < 0) {
        return 0;
    }
    const tether_ir_node *Q = &g->nodes[q];
    float ys = sc(g, Q, 0);
    int64_t yz = zp(g, Q, 0);
    int ins[TETHER_IR_MAX_INPUTS];
    for (int k = 0; k < n->ninputs; k++) {
        int d = n->inputs[k] >= 0 ? dq8_of(g, n->inputs[k]) : -1;
        if (d < 0) {
            return 0;
        }
        const tether_ir_node *D = &g->nodes[d];
        if (sc(g, D, 0) != ys || zp(g, D, 0) != yz ||
            !tether_dtype_equal(g->tensors[D->inputs[0]].dtype, Q->attrs.to)) {
            return 0;
        }
        ins[k] = D->inputs[0];
    }
    memcpy(n->inputs, ins, sizeof(int) * (size_t)n->ninputs);
    n->outputs[0] = Q->outputs[0];
    g->nodes[q].op = DEAD;
    return 1;
}

static int add_const(tether_ir_graph *g, const char *base, const char *what, DLDataType dt,
                     int ndim, const int64_t *shape, const void *v, size_t bytes, int *t) {
    char name[512];
    snprintf(name, sizeof name, "%s/%s", base, what);
    for (int u = 1; tether_ir_find_tensor(g, name) >= 0; u++) {
        snprintf(name, sizeof name, "%s/%s#%d", base, what, u);
    }
    return tether_ir_add_constant(g, name, dt, ndim, shape, v, bytes, t);
}

static int add_tensor(tether_ir_graph *g, const char *base, const char *what, DLDataType dt,
                      int *t) {
    char name[512];
    snprintf(name, sizeof name, "%s/%s", base, what);
    for (int u = 1; tether_ir_find_tensor(g, name) >= 0; u++) {
        snprintf(name, sizeof name, "%s/%s#%d", base, what, u);
    }
    return tether_ir_add_tensor(g, name, dt, -1, NULL, t);
}

/* The clamp of quantize node q's type, and the integer parameters of a pooling node: x_zp,
 * requant (multiplier x_scale / (y_scale * count)), y_zp as constants into in[3], in[5], in[6]. */
static int pool_params(tether_ir_graph *g, const char *base, int dx, int q, double count, int *in,
                       tether_ir_attrs *a) {
    const tether_ir_node *DX = &g->nodes[dx], *Q = &g->nodes[q];
    int32_t xz = (int32_t)zp(g, DX, 0), yz = (int32_t)zp(g, Q, 0), rq[2];
    int64_t lo, hi, one = 1, srq[2] = {1, 2};
    tether__quant_range(Q->attrs.to, &lo, &hi);
    a->min = (float)lo;
    a->max = (float)hi;
    a->to = Q->attrs.to;
    double m = (double)sc(g, DX, 0) / ((double)sc(g, Q, 0) * count);
    if (tether_quant_multiplier(m, &rq[0], &rq[1])) {
        return 1; /* not representable: stays float */
    }
    int rc = add_i32(g, base, "x_zero_point", &xz, 1, &one, &in[3]);
    if (!rc) {
        rc = add_i32(g, base, "requant", rq, 2, srq, &in[5]);
    }
    if (!rc) {
        rc = add_i32(g, base, "y_zero_point", &yz, 1, &one, &in[6]);
    }
    return rc;
}

/* global_avg_pool(dq(x)) -> q: reshape [N*C, S] -> qmatmul by ones [S, 1] -> reshape. */
static int global_avg(tether_ir_graph *g, int i) {
    tether_ir_node *n = &g->nodes[i];
    int dx = dq8_of(g, n->inputs[0]), q = q_of(g, n->outputs[0]);
    const tether_ir_tensor *x = &g->tensors[n->inputs[0]];
    if (dx < 0 || q < 0 || x->ndim < 3) {
        return 0;
    }
    int64_t rows = x->shape[0] * x->shape[1], s = 1;
    for (int d = 2; d < x->ndim; d++) {
        s *= x->shape[d];
    }
    if (s < 1 || rows < 1) {
        return 0;
    }
    char base[400];
    snprintf(base, sizeof base, "%s", n->name);
    int in[7] = {g->nodes[dx].inputs[0], -1, -1, -1, -1, -1, -1}, rows_t, prod_t;
    DLDataType xt = g->tensors[in[0]].dtype, yt = g->nodes[q].attrs.to;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_QMATMUL, &a);
    int rc = pool_params(g, base, dx, q, (double)s, in, &a);
    if (rc) {
        return rc > 0 ? 0 : rc;
    }
    int8_t *ones = malloc((size_t)s);
    if (!ones) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "integer-operator pass: out of memory");
    }
    memset(ones, 1, (size_t)s);
    int64_t os[2] = {s, 1};
    rc = add_const(g, base, "ones", TETHER_INT8, 2, os, ones, (size_t)s, &in[1]);
    free(ones);
    if (!rc) {
        rc = add_tensor(g, base, "rows", xt, &rows_t);
    }
    if (!rc) {
        rc = add_tensor(g, base, "sums", yt, &prod_t);
    }
    if (rc) {
        return rc;
    }
    int out = g->nodes[q].outputs[0];
    const tether_ir_tensor *y = &g->tensors[g->nodes[i].outputs[0]];
    tether_ir_attrs r1, r2;
    tether_ir_attrs_init(TETHER_OP_RESHAPE, &r1);
    tether_ir_attrs_init(TETHER_OP_RESHAPE, &r2);
    r1.nints = 2;
    r1.ints[0] = rows;
    r1.ints[1] = s;
    r2.nints = y->ndim;
    for (int d = 0; d < y->ndim; d++) {
        r2.ints[d] = y->shape[d];
    }
    r2.allowzero = true;
    char nm[520];
    snprintf(nm, sizeof nm, "%s/rows", base);
    rc = tether_ir_add_node(g, nm, TETHER_OP_RESHAPE, &in[0], 1, &rows_t, 1, &r1, NULL);
    int qin[7] = {rows_t, in[1], -1, in[3], -1, in[5], in[6]};
    snprintf(nm, sizeof nm, "%s/sum", base);
    if (!rc) {
        rc = tether_ir_add_node(g, nm, TETHER_OP_QMATMUL, qin, 7, &prod_t, 1, &a, NULL);
    }
    snprintf(nm, sizeof nm, "%s/shape", base);
    if (!rc) {
        rc = tether_ir_add_node(g, nm, TETHER_OP_RESHAPE, &prod_t, 1, &out, 1, &r2, NULL);
    }
    if (rc) {
        return rc;
    }
    g->nodes[q].op = DEAD;
    g->nodes[i].op = DEAD;
    return 1;
}

/* avg_pool(dq(x)) -> q with a constant divisor: a depthwise qconv with weights 1. */
static int avg_pool(tether_ir_graph *g, int i) {
    tether_ir_node *n = &g->nodes[i];
    int dx = dq8_of(g, n->inputs[0]), q = q_of(g, n->outputs[0]);
    const tether_ir_tensor *x = &g->tensors[n->inputs[0]];
    const tether_ir_attrs *pa = &n->attrs;
    if (dx < 0 || q < 0 || x->ndim != 4 || pa->nwin > 2) {
        return 0;
    }
    bool padded = pa->pads[0] || pa->pads[1] || pa->pads[2] || pa->pads[3] || pa->ceil_mode;
    if (padded && (!pa->count_include_pad || pa->ceil_mode)) {
        return 0; /* the divisor changes at the borders: stays float */
    }
    int64_t C = x->shape[1], kh = pa->kernel[0], kw = pa->kernel[1];
    char base[400];
    snprintf(base, sizeof base, "%s", n->name);
    int in[7] = {g->nodes[dx].inputs[0], -1, -1, -1, -1, -1, -1};
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_QCONV, &a);
    memcpy(a.strides, pa->strides, sizeof a.strides);
    memcpy(a.pads, pa->pads, sizeof a.pads);
    memcpy(a.dilations, pa->dilations, sizeof a.dilations);
    a.dilations[0] = a.dilations[0] ? a.dilations[0] : 1;
    a.dilations[1] = a.dilations[1] ? a.dilations[1] : 1;
    a.groups = C;
    int rc = pool_params(g, base, dx, q, (double)(kh * kw), in, &a);
    if (rc) {
        return rc > 0 ? 0 : rc;
    }
    size_t nw = (size_t)(C * kh * kw);
    int8_t *ones = malloc(nw);
    if (!ones) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "integer-operator pass: out of memory");
    }
    memset(ones, 1, nw);
    int64_t ws[4] = {C, 1, kh, kw};
    rc = add_const(g, base, "ones", TETHER_INT8, 4, ws, ones, nw, &in[1]);
    free(ones);
    if (rc) {
        return rc;
    }
    n = &g->nodes[i];
    n->op = TETHER_OP_QCONV;
    n->attrs = a;
    n->ninputs = 7;
    memcpy(n->inputs, in, sizeof in);
    n->outputs[0] = g->nodes[q].outputs[0];
    g->nodes[q].op = DEAD;
    return 1;
}

int tether__quant_rewrite_passthrough(tether_ir_graph *g, int i) {
    if (g->nodes[i].op == TETHER_OP_GLOBAL_AVG_POOL) {
        return global_avg(g, i);
    }
    if (g->nodes[i].op == TETHER_OP_AVG_POOL) {
        return avg_pool(g, i);
    }
    return passthrough(g, i);
}
