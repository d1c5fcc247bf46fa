/*
 * ONNX operators: the supported table (opsets, attributes, constant inputs), their conversion
 * into IR operators, and the host evaluation of shape computations (Shape, Gather, Slice, Cast,
 * Concat, ... on constants) that exported models use to build Reshape targets.
 *
 * What must stay true: every attribute default is the ONNX default of the operator version in
 * use (docs/onnx.md lists them); an attribute value the IR cannot express is an error naming it,
 * never approximated; the table, the allowed-attribute lists and docs/onnx.md agree; every
 * operator of the table has its input/output counts (arities[], from the ONNX schemas), checked
 * by the importer before any converter runs, so converters read inputs and outputs below the
 * minimum without looking.
 */
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/error.h"

static const char *S(const char *s) {
    return s ? s : "";
}

static int in_count(const Onnx__NodeProto *n) {
    return (int)n->n_input;
}

static bool has_input(const Onnx__NodeProto *n, int i) {
    return i < (int)n->n_input && S(n->input[i])[0];
}

/* ---- constants as attribute values ----------------------------------------------------- */

/* Integer list from a constant (int64 elements, rank <= 1). */
static int const_ints(timport *c, const hconst *k, const char *what, int64_t *out, int max,
                      int *count) {
    if (!k) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "%s is missing or not a constant", what);
    }
    if (!k->is_int || k->ndim > 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "%s must be a 1-D integer tensor", what);
    }
    if (k->count > (size_t)max) {
        return tonnx_fail(c, TETHER_ERR_LIMIT, "%s has %zu entries (at most %d)", what, k->count,
                          max);
    }
    for (size_t i = 0; i < k->count; i++) {
        out[i] = ((const int64_t *)k->data)[i];
    }
    *count = (int)k->count;
    return TETHER_OK;
}

/* One number from a constant with one element. */
static int const_scalar(timport *c, const hconst *k, const char *what, float *out) {
    if (!k) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "%s is missing or not a constant", what);
    }
    if (k->count != 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "%s must have one element, it has %zu", what,
                          k->count);
    }
    *out = k->is_int ? (float)((const int64_t *)k->data)[0] : ((const float *)k->data)[0];
    return TETHER_OK;
}

static int rank_of(timport *c, int t) {
    return c->g->tensors[t].ndim;
}

/* ---- converters ------------------------------------------------------------------------ */

static int out0(timport *c, int *t) {
    return tonnx_out_tensor(c, 0, t);
}

static int cv_unary(timport *c, const Onnx__NodeProto *n) {
    static const struct {
        const char *name;
        tether_op op;
    } map[] = {
        {"Relu", TETHER_OP_RELU},
        {"Sigmoid", TETHER_OP_SIGMOID},
        {"Tanh", TETHER_OP_TANH},
        {"Exp", TETHER_OP_EXP},
        {"Log", TETHER_OP_LOG},
        {"Sqrt", TETHER_OP_SQRT},
        {"Neg", TETHER_OP_NEG},
        {"Abs", TETHER_OP_ABS},
        {"HardSwish", TETHER_OP_HARD_SWISH},
        {"LeakyRelu", TETHER_OP_LEAKY_RELU},
        {"HardSigmoid", TETHER_OP_HARD_SIGMOID},
    };
    tether_op op = TETHER_OP_RELU;
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        if (strcmp(map[i].name, S(n->op_type)) == 0) {
            op = map[i].op;
        }
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(op, &a);
    int rc = TETHER_OK;
    if (op == TETHER_OP_LEAKY_RELU) {
        rc = tonnx_attr_float(c, "alpha", 0.01f, &a.alpha);
    } else if (op == TETHER_OP_HARD_SIGMOID) {
        if (!(rc = tonnx_attr_float(c, "alpha", 0.2f, &a.alpha))) {
            rc = tonnx_attr_float(c, "beta", 0.5f, &a.beta);
        }
    }
    int x, y;
    if (rc || (rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, op, &x, 1, y, &a);
}

static int cv_binary(timport *c, const Onnx__NodeProto *n) {
    const char *t = S(n->op_type);
    tether_op op = strcmp(t, "Add") == 0   ? TETHER_OP_ADD
                   : strcmp(t, "Sub") == 0 ? TETHER_OP_SUB
                   : strcmp(t, "Mul") == 0 ? TETHER_OP_MUL
                   : strcmp(t, "Div") == 0 ? TETHER_OP_DIV
                                           : TETHER_OP_POW;
    int in[2], y, rc;
    for (int i = 0; i < 2; i++) {
        int vi = tonnx_find(c, S(n->input[i]));
        hconst *k = vi >= 0 ? c->v[vi].k : NULL;
        if (op == TETHER_OP_POW && i == 1 && k && k->is_int && c->v[vi].tensor < 0) {
            /* Pow-12+: an integer exponent is computed as float */
            float *f = malloc(sizeof(float) * (k->count ? k->count : 1));
            if (!f) {
                return tonnx_fail(c, TETHER_ERR_OUT_OF_MEMORY, "out of memory");
            }
            for (size_t e = 0; e < k->count; e++) {
                f[e] = (float)((const int64_t *)k->data)[e];
            }
            rc = tonnx_const_tensor(c, "exponent", k->ndim, k->shape, f, &in[i]);
            free(f);
        } else {
            rc = tonnx_in_tensor(c, i, true, &in[i]);
        }
        if (rc) {
            return rc;
        }
    }
    if ((rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, op, in, 2, y, NULL);
}

static int cv_prelu(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int in[2], y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1])) ||
        (rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_PRELU, in, 2, y, NULL);
}

static int cv_clip(timport *c, const Onnx__NodeProto *n) {
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CLIP, &a);
    int rc;
    if (c->opset < 11) {
        if ((rc = tonnx_attr_float(c, "min", a.min, &a.min)) ||
            (rc = tonnx_attr_float(c, "max", a.max, &a.max))) {
            return rc;
        }
    } else {
        hconst *k = NULL;
        for (int i = 1; i < 3 && i < in_count(n); i++) {
            if ((rc = tonnx_in_const(c, i, false, &k))) {
                return rc;
            }
            if (k && (rc = const_scalar(c, k, i == 1 ? "min" : "max", i == 1 ? &a.min : &a.max))) {
                return rc;
            }
        }
    }
    int x, y;
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_CLIP, &x, 1, y, &a);
}

static int cv_gemm(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_DENSE, &a);
    int64_t ta, tb;
    int in[3], y, rc;
    if ((rc = tonnx_attr_float(c, "alpha", 1.0f, &a.alpha)) ||
        (rc = tonnx_attr_float(c, "beta", 1.0f, &a.beta)) ||
        (rc = tonnx_attr_int(c, "transA", 0, &ta)) || (rc = tonnx_attr_int(c, "transB", 0, &tb)) ||
        (rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1])) ||
        (rc = tonnx_in_tensor(c, 2, false, &in[2])) || (rc = out0(c, &y))) {
        return rc;
    }
    a.trans_a = ta != 0;
    a.trans_b = tb != 0;
    return tonnx_emit(c, NULL, TETHER_OP_DENSE, in, in[2] >= 0 ? 3 : 2, y, &a);
}

static int cv_matmul(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int in[2], y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1])) ||
        (rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_MATMUL, in, 2, y, NULL);
}

/* Reads a 2-entry int attribute (kernel_shape, strides, dilations); def when absent. */
static int attr2(timport *c, const char *name, int64_t def, int64_t *out) {
    int64_t v[8];
    int cnt, rc = tonnx_attr_ints(c, name, v, 8, &cnt);
    if (rc) {
        return rc;
    }
    if (cnt < 0) {
        out[0] = out[1] = def;
        return TETHER_OK;
    }
    if (cnt != 2) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "attribute '%s' has %d entries: only 2-D windows are supported", name,
                          cnt);
    }
    out[0] = v[0];
    out[1] = v[1];
    return TETHER_OK;
}

/* pads / auto_pad of conv and pools into IR pads [top, left, bottom, right]. */
static int window_pads(timport *c, const int64_t *in_hw, const int64_t *k, const int64_t *s,
                       const int64_t *d, int64_t *pads) {
    char ap[32];
    int64_t v[8];
    int cnt, rc;
    if ((rc = tonnx_attr_string(c, "auto_pad", "NOTSET", ap, sizeof ap)) ||
        (rc = tonnx_attr_ints(c, "pads", v, 8, &cnt))) {
        return rc;
    }
    pads[0] = pads[1] = pads[2] = pads[3] = 0;
    if (strcmp(ap, "NOTSET") == 0) {
        if (cnt >= 0 && cnt != 4) {
            return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                              "attribute 'pads' has %d entries: only 2-D windows are supported",
                              cnt);
        }
        for (int i = 0; i < cnt; i++) {
            pads[i] = v[i]; /* [h_begin, w_begin, h_end, w_end] = [top, left, bottom, right] */
        }
        return TETHER_OK;
    }
    if (strcmp(ap, "VALID") == 0) {
        return TETHER_OK;
    }
    bool upper = strcmp(ap, "SAME_UPPER") == 0;
    if (!upper && strcmp(ap, "SAME_LOWER") != 0) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "auto_pad '%s' is not NOTSET, SAME_UPPER, "
                          "SAME_LOWER or VALID",
                          ap);
    }
    for (int i = 0; i < 2; i++) {
        if (s[i] < 1 || d[i] < 1 || k[i] < 1) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "strides, dilations and kernel must be >= 1");
        }
        int64_t out = (in_hw[i] + s[i] - 1) / s[i];
        int64_t total = (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in_hw[i];
        if (total < 0) {
            total = 0;
        }
        int64_t small = total / 2, big = total - small;
        pads[i] = upper ? small : big;
        pads[i + 2] = upper ? big : small;
    }
    return TETHER_OK;
}

static int cv_conv(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    int in[3], y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1])) ||
        (rc = tonnx_in_tensor(c, 2, false, &in[2]))) {
        return rc;
    }
    const tether_ir_tensor *x = &c->g->tensors[in[0]], *w = &c->g->tensors[in[1]];
    if (x->ndim != 4 || w->ndim != 4) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "only 2-D convolutions (rank-4 input and weights) are supported; the "
                          "input has rank %d, the weights %d",
                          x->ndim, w->ndim);
    }
    int64_t ks[2] = {0, 0};
    if ((rc = attr2(c, "kernel_shape", 0, ks)) || (rc = attr2(c, "strides", 1, a.strides)) ||
        (rc = attr2(c, "dilations", 1, a.dilations)) ||
        (rc = tonnx_attr_int(c, "group", 1, &a.groups))) {
        return rc;
    }
    if (ks[0] && (ks[0] != w->shape[2] || ks[1] != w->shape[3])) {
        return tonnx_fail(c, TETHER_ERR_MISMATCH,
                          "kernel_shape [%lld,%lld] differs from the weights' [%lld,%lld]",
                          (long long)ks[0], (long long)ks[1], (long long)w->shape[2],
                          (long long)w->shape[3]);
    }
    if ((rc = window_pads(c, x->shape + 2, w->shape + 2, a.strides, a.dilations, a.pads)) ||
        (rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_CONV2D, in, in[2] >= 0 ? 3 : 2, y, &a);
}

static int cv_pool(timport *c, const Onnx__NodeProto *n) {
    bool max = strcmp(S(n->op_type), "MaxPool") == 0;
    tether_op op = max ? TETHER_OP_MAX_POOL : TETHER_OP_AVG_POOL;
    tether_ir_attrs a;
    tether_ir_attrs_init(op, &a);
    int x, y, rc;
    int64_t ceil_mode = 0, cip = 0;
    if ((rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    const tether_ir_tensor *xt = &c->g->tensors[x];
    if (xt->ndim != 4) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "only 2-D pooling (rank-4 NCHW input) is supported; the input has rank "
                          "%d",
                          xt->ndim);
    }
    if ((rc = attr2(c, "kernel_shape", 0, a.kernel)) || (rc = attr2(c, "strides", 1, a.strides)) ||
        (rc = attr2(c, "dilations", 1, a.dilations)) ||
        (rc = tonnx_attr_int(c, "ceil_mode", 0, &ceil_mode)) ||
        (!max && (rc = tonnx_attr_int(c, "count_include_pad", 0, &cip)))) {
        return rc;
    }
    if (a.kernel[0] < 1 || a.kernel[1] < 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute 'kernel_shape' is required");
    }
    a.ceil_mode = ceil_mode != 0;
    a.count_include_pad = cip != 0;
    if ((rc = window_pads(c, xt->shape + 2, a.kernel, a.strides, a.dilations, a.pads)) ||
        (rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, op, &x, 1, y, &a);
}

static int cv_global_pool(timport *c, const Onnx__NodeProto *n) {
    tether_op op = strcmp(S(n->op_type), "GlobalMaxPool") == 0 ? TETHER_OP_GLOBAL_MAX_POOL
                                                               : TETHER_OP_GLOBAL_AVG_POOL;
    int x, y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, op, &x, 1, y, NULL);
}

static int cv_softmax(timport *c, const Onnx__NodeProto *n) {
    tether_op op =
        strcmp(S(n->op_type), "LogSoftmax") == 0 ? TETHER_OP_LOG_SOFTMAX : TETHER_OP_SOFTMAX;
    tether_ir_attrs a;
    tether_ir_attrs_init(op, &a);
    int x, y, rc;
    if ((rc = tonnx_attr_int(c, "axis", c->opset < 13 ? 1 : -1, &a.axis)) ||
        (rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    int r = rank_of(c, x);
    int64_t ax = a.axis < 0 ? a.axis + r : a.axis;
    if (c->opset >= 13 || ax == r - 1 || r == 0) {
        if ((rc = out0(c, &y))) {
            return rc;
        }
        return tonnx_emit(c, NULL, op, &x, 1, y, &a);
    }
    /* before opset 13 the input is coerced to 2-D at axis: flatten, softmax rows, reshape back */
    if (ax < 0 || ax > r) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axis %lld out of range for rank %d",
                          (long long)a.axis, r);
    }
    const tether_ir_tensor *xt = &c->g->tensors[x];
    tether_ir_attrs fa, ra;
    tether_ir_attrs_init(TETHER_OP_FLATTEN, &fa);
    tether_ir_attrs_init(TETHER_OP_RESHAPE, &ra);
    fa.axis = ax;
    ra.nints = r;
    for (int i = 0; i < r; i++) {
        ra.ints[i] = xt->shape[i];
    }
    a.axis = -1;
    int f, s;
    if ((rc = tonnx_temp_tensor(c, "rows", &f)) ||
        (rc = tonnx_emit(c, "flatten", TETHER_OP_FLATTEN, &x, 1, f, &fa)) ||
        (rc = tonnx_temp_tensor(c, "softmax", &s)) ||
        (rc = tonnx_emit(c, NULL, op, &f, 1, s, &a)) || (rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, "reshape", TETHER_OP_RESHAPE, &s, 1, y, &ra);
}

static int cv_reshape(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_RESHAPE, &a);
    hconst *k = NULL;
    int64_t allowzero = 0;
    int x, y, rc;
    if ((rc = tonnx_in_const(c, 1, true, &k)) ||
        (rc = const_ints(c, k, "shape", a.ints, TETHER_IR_MAX_NDIM, &a.nints)) ||
        (rc = tonnx_attr_int(c, "allowzero", 0, &allowzero))) {
        return rc;
    }
    a.allowzero = allowzero != 0;
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = out0(c, &y))) {
        return rc;
    }
    if (a.nints == 0) { /* shape [] : a scalar */
        const tether_ir_tensor *xt = &c->g->tensors[x];
        if (tether_ir_tensor_elements(xt) != 1) {
            return tonnx_fail(c, TETHER_ERR_MISMATCH, "shape [] needs one element");
        }
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "reshape to a scalar");
    }
    return tonnx_emit(c, NULL, TETHER_OP_RESHAPE, &x, 1, y, &a);
}

static int cv_flatten(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_FLATTEN, &a);
    int x, y, rc;
    if ((rc = tonnx_attr_int(c, "axis", 1, &a.axis)) || (rc = tonnx_in_tensor(c, 0, true, &x)) ||
        (rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_FLATTEN, &x, 1, y, &a);
}

/* axes from the attribute (before opset 13) or the constant input 1 */
static int axes_of(timport *c, int since_input, int64_t *axes, int *n) {
    int rc;
    *n = -1;
    if (c->opset < since_input) {
        return tonnx_attr_ints(c, "axes", axes, TETHER_IR_MAX_NDIM, n);
    }
    hconst *k = NULL;
    if ((rc = tonnx_in_const(c, 1, false, &k)) || !k) {
        return rc;
    }
    return const_ints(c, k, "axes", axes, TETHER_IR_MAX_NDIM, n);
}

static int cv_squeeze(timport *c, const Onnx__NodeProto *n) {
    bool un = strcmp(S(n->op_type), "Unsqueeze") == 0;
    tether_op op = un ? TETHER_OP_UNSQUEEZE : TETHER_OP_SQUEEZE;
    tether_ir_attrs a;
    tether_ir_attrs_init(op, &a);
    int x, y, rc, cnt;
    if ((rc = axes_of(c, 13, a.ints, &cnt))) {
        return rc;
    }
    if (un && cnt < 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axes are required");
    }
    a.nints = cnt < 0 ? 0 : cnt;
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, op, &x, 1, y, &a);
}

static int cv_transpose(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_TRANSPOSE, &a);
    int x, y, rc, cnt;
    if ((rc = tonnx_attr_ints(c, "perm", a.ints, TETHER_IR_MAX_NDIM, &cnt)) ||
        (rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = out0(c, &y))) {
        return rc;
    }
    a.nints = cnt < 0 ? 0 : cnt;
    return tonnx_emit(c, NULL, TETHER_OP_TRANSPOSE, &x, 1, y, &a);
}

static int cv_concat(timport *c, const Onnx__NodeProto *n) {
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONCAT, &a);
    if (!tonnx_attr(n, "axis")) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute 'axis' is required");
    }
    int rc = tonnx_attr_int(c, "axis", 0, &a.axis);
    if (rc) {
        return rc;
    }
    if (in_count(n) > TETHER_IR_MAX_INPUTS || in_count(n) < 1) {
        return tonnx_fail(c, TETHER_ERR_LIMIT, "%d inputs (1 to %d supported)", in_count(n),
                          TETHER_IR_MAX_INPUTS);
    }
    int in[TETHER_IR_MAX_INPUTS], y;
    for (int i = 0; i < in_count(n); i++) {
        if ((rc = tonnx_in_tensor(c, i, true, &in[i]))) {
            return rc;
        }
    }
    if ((rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_CONCAT, in, in_count(n), y, &a);
}

static int cv_pad(timport *c, const Onnx__NodeProto *n) {
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_PAD, &a);
    int x, y, rc, cnt;
    if (c->opset < 11) {
        if ((rc = tonnx_attr_ints(c, "pads", a.ints, 2 * TETHER_IR_MAX_NDIM, &cnt)) ||
            (rc = tonnx_attr_float(c, "value", 0.0f, &a.value))) {
            return rc;
        }
        if (cnt < 0) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute 'pads' is required");
        }
    } else {
        hconst *k = NULL;
        if ((rc = tonnx_in_const(c, 1, true, &k)) ||
            (rc = const_ints(c, k, "pads", a.ints, 2 * TETHER_IR_MAX_NDIM, &cnt))) {
            return rc;
        }
        if (has_input(n, 2)) {
            if ((rc = tonnx_in_const(c, 2, true, &k)) ||
                (rc = const_scalar(c, k, "constant_value", &a.value))) {
                return rc;
            }
        }
    }
    if ((rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    if (c->opset >= 18 && has_input(n, 3)) { /* Pad-18: pads only for the listed axes */
        hconst *k = NULL;
        int64_t axes[TETHER_IR_MAX_NDIM], full[2 * TETHER_IR_MAX_NDIM] = {0};
        int na, r = rank_of(c, x);
        if ((rc = tonnx_in_const(c, 3, true, &k)) ||
            (rc = const_ints(c, k, "axes", axes, TETHER_IR_MAX_NDIM, &na))) {
            return rc;
        }
        if (cnt != 2 * na) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "pads has %d entries for %d axes", cnt,
                              na);
        }
        for (int i = 0; i < na; i++) {
            int64_t ax = axes[i] < 0 ? axes[i] + r : axes[i];
            if (ax < 0 || ax >= r) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axis %lld out of range",
                                  (long long)axes[i]);
            }
            full[ax] = a.ints[i];
            full[ax + r] = a.ints[i + na];
        }
        memcpy(a.ints, full, sizeof(int64_t) * (size_t)(2 * r));
        cnt = 2 * r;
    }
    a.nints = cnt;
    if ((rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_PAD, &x, 1, y, &a);
}

static int cv_batch_norm(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_BATCH_NORM, &a);
    int in[5], y, rc;
    if ((rc = tonnx_attr_float(c, "epsilon", 1e-5f, &a.epsilon))) {
        return rc;
    }
    for (int i = 0; i < 5; i++) {
        if ((rc = tonnx_in_tensor(c, i, true, &in[i]))) {
            return rc;
        }
    }
    if ((rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_BATCH_NORM, in, 5, y, &a);
}

static int cv_layer_norm(timport *c, const Onnx__NodeProto *n) {
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_LAYER_NORM, &a);
    int in[3], y, rc;
    if ((rc = tonnx_attr_int(c, "axis", -1, &a.axis)) ||
        (rc = tonnx_attr_float(c, "epsilon", 1e-5f, &a.epsilon)) ||
        (rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1])) ||
        (rc = tonnx_in_tensor(c, 2, false, &in[2]))) {
        return rc;
    }
    int r = rank_of(c, in[0]);
    int64_t ax = a.axis < 0 ? a.axis + r : a.axis;
    if (ax < 0 || ax >= r) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axis %lld out of range for rank %d",
                          (long long)a.axis, r);
    }
    if (S(n->output[0])[0]) {
        if ((rc = out0(c, &y)) ||
            (rc = tonnx_emit(c, NULL, TETHER_OP_LAYER_NORM, in, in[2] >= 0 ? 3 : 2, y, &a))) {
            return rc;
        }
    }
    bool want_mean = tonnx_output_used(c, c->cur, 1), want_inv = tonnx_output_used(c, c->cur, 2);
    if (!want_mean && !want_inv) {
        return TETHER_OK;
    }
    /* Mean and InvStdDev (shape [d0..d(axis-1), 1, ...]) from reductions over axes axis..r-1 */
    tether_ir_attrs ra;
    tether_ir_attrs_init(TETHER_OP_REDUCE_MEAN, &ra);
    ra.keepdims = true;
    ra.nints = r - (int)ax;
    for (int i = 0; i < ra.nints; i++) {
        ra.ints[i] = ax + i;
    }
    int mean, d, sq, var, ve, sd, inv, eps, one;
    float epsv = a.epsilon, onev = 1.0f;
    if (want_mean) {
        rc = tonnx_out_tensor(c, 1, &mean);
    } else {
        rc = tonnx_temp_tensor(c, "mean", &mean);
    }
    int d2[2], v2[2], o2[2];
    if (rc || (rc = tonnx_emit(c, "mean", TETHER_OP_REDUCE_MEAN, &in[0], 1, mean, &ra))) {
        return rc;
    }
    if (!want_inv) {
        return TETHER_OK;
    }
    d2[0] = in[0];
    d2[1] = mean;
    if ((rc = tonnx_temp_tensor(c, "centered", &d)) ||
        (rc = tonnx_emit(c, "centered", TETHER_OP_SUB, d2, 2, d, NULL)) ||
        (rc = tonnx_temp_tensor(c, "squared", &sq))) {
        return rc;
    }
    d2[0] = d2[1] = d;
    if ((rc = tonnx_emit(c, "squared", TETHER_OP_MUL, d2, 2, sq, NULL)) ||
        (rc = tonnx_temp_tensor(c, "variance", &var)) ||
        (rc = tonnx_emit(c, "variance", TETHER_OP_REDUCE_MEAN, &sq, 1, var, &ra)) ||
        (rc = tonnx_const_tensor(c, "epsilon", 0, NULL, &epsv, &eps)) ||
        (rc = tonnx_temp_tensor(c, "variance_eps", &ve))) {
        return rc;
    }
    v2[0] = var;
    v2[1] = eps;
    tether_ir_attrs sa;
    tether_ir_attrs_init(TETHER_OP_SQRT, &sa);
    if ((rc = tonnx_emit(c, "variance_eps", TETHER_OP_ADD, v2, 2, ve, NULL)) ||
        (rc = tonnx_temp_tensor(c, "stddev", &sd)) ||
        (rc = tonnx_emit(c, "stddev", TETHER_OP_SQRT, &ve, 1, sd, &sa)) ||
        (rc = tonnx_const_tensor(c, "one", 0, NULL, &onev, &one)) ||
        (rc = tonnx_out_tensor(c, 2, &inv))) {
        return rc;
    }
    o2[0] = one;
    o2[1] = sd;
    return tonnx_emit(c, "inv_stddev", TETHER_OP_DIV, o2, 2, inv, NULL);
}

static int cv_reduce_mean(timport *c, const Onnx__NodeProto *n) {
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_REDUCE_MEAN, &a);
    int64_t keep, noop;
    int x, y, rc, cnt;
    /* axes: an attribute before opset 18, an optional constant input from 18 */
    if ((rc = axes_of(c, 18, a.ints, &cnt)) || (rc = tonnx_attr_int(c, "keepdims", 1, &keep)) ||
        (rc = tonnx_attr_int(c, "noop_with_empty_axes", 0, &noop)) ||
        (rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    if (cnt <= 0 && noop) { /* no axes and noop_with_empty_axes: the output is the input */
        c->v[tonnx_find(c, S(n->output[0]))].tensor = x;
        return TETHER_OK;
    }
    if ((rc = out0(c, &y))) {
        return rc;
    }
    a.nints = cnt < 0 ? 0 : cnt;
    a.keepdims = keep != 0;
    return tonnx_emit(c, NULL, TETHER_OP_REDUCE_MEAN, &x, 1, y, &a);
}

/* Resize / Upsample (nearest, integer factors on H and W). */
static int cv_resize(timport *c, const Onnx__NodeProto *n) {
    bool upsample = strcmp(S(n->op_type), "Upsample") == 0;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_RESIZE_NEAREST, &a);
    int x, y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    const tether_ir_tensor *xt = &c->g->tensors[x];
    if (xt->ndim != 4) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "only rank-4 (NCHW) inputs are supported; the input has rank %d",
                          xt->ndim);
    }
    double f[4] = {0, 0, 0, 0};
    int scales_at = upsample || c->opset < 11 ? 1 : 2;
    /* Resize-18: scales/sizes may cover only the listed axes (the others keep their size) */
    int64_t axes[4] = {0, 1, 2, 3};
    int naxes = -1;
    if (!upsample && c->opset >= 18 && (rc = tonnx_attr_ints(c, "axes", axes, 4, &naxes))) {
        return rc;
    }
    for (int i = 0; i < naxes; i++) {
        axes[i] = axes[i] < 0 ? axes[i] + 4 : axes[i];
        if (axes[i] < 0 || axes[i] > 3) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axis %lld out of range",
                              (long long)axes[i]);
        }
    }
    int want = naxes < 0 ? 4 : naxes;
    hconst *k = NULL;
    if (upsample && c->opset < 9) {
        const Onnx__AttributeProto *sa = tonnx_attr(n, "scales");
        if (!sa || sa->n_floats != 4) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute 'scales' needs 4 entries");
        }
        for (int i = 0; i < 4; i++) {
            f[i] = sa->floats[i];
        }
    } else {
        if ((rc = tonnx_in_const(c, scales_at, false, &k))) {
            return rc;
        }
        if (k && k->count == 0) {
            k = NULL; /* Resize-11+: an empty scales tensor means "use sizes" */
        }
        if (k) {
            if (k->is_int || k->count != (size_t)want) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "scales must be %d floats", want);
            }
            f[0] = f[1] = f[2] = f[3] = 1;
            for (int i = 0; i < want; i++) {
                f[axes[i]] = ((const float *)k->data)[i];
            }
        } else if (!upsample && c->opset >= 11 && has_input(n, 3)) {
            hconst *sz;
            int64_t s[8];
            int cnt;
            if ((rc = tonnx_in_const(c, 3, true, &sz)) ||
                (rc = const_ints(c, sz, "sizes", s, 8, &cnt))) {
                return rc;
            }
            if (cnt != want) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "sizes must have %d entries", want);
            }
            f[0] = f[1] = f[2] = f[3] = 1;
            for (int i = 0; i < want; i++) {
                int64_t d = xt->shape[axes[i]];
                f[axes[i]] = (double)s[i] / (double)d;
                if (s[i] % d) {
                    f[axes[i]] = -1;
                }
            }
        } else {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "neither scales nor sizes are given");
        }
    }
    if (f[0] != 1 || f[1] != 1) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "only H and W can be resized");
    }
    for (int i = 0; i < 2; i++) {
        double s = f[2 + i];
        if (s < 1 || s != floor(s) || s > 65536) {
            return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                              "only integer upscaling factors are supported, got %g", s);
        }
        a.scales[i] = (int64_t)s;
    }
    if ((rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_RESIZE_NEAREST, &x, 1, y, &a);
}

static int cv_cast(timport *c, const Onnx__NodeProto *n) {
    int64_t to;
    int rc = tonnx_attr_int(c, "to", 0, &to);
    if (rc) {
        return rc;
    }
    if (to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "cast to a non-float type at run time");
    }
    /* float -> float: the output is the input */
    int x;
    if ((rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    int vo = tonnx_find(c, S(n->output[0]));
    c->v[vo].tensor = x;
    return TETHER_OK;
}

static int cv_alias(timport *c, const Onnx__NodeProto *n) {
    (void)c;
    (void)n;
    return TETHER_OK; /* handled by the importer (Identity, Dropout) */
}

/* ---- support checks -------------------------------------------------------------------- */

static const char *check_auto_pad(timport *c, const Onnx__NodeProto *n, char *buf, size_t size) {
    (void)c;
    const Onnx__AttributeProto *a = tonnx_attr(n, "auto_pad");
    if (!a) {
        return NULL;
    }
    char v[32];
    snprintf(v, sizeof v, "%.*s", (int)(a->s.len < 31 ? a->s.len : 31),
             a->s.len ? (const char *)a->s.data : "");
    if (strcmp(v, "NOTSET") && strcmp(v, "SAME_UPPER") && strcmp(v, "SAME_LOWER") &&
        strcmp(v, "VALID")) {
        snprintf(buf, size, "auto_pad '%s'", v);
        return buf;
    }
    return NULL;
}

/* 2-D windows: list attributes must have 2 (pads: 4) entries when present. */
static const char *check_window(timport *c, const Onnx__NodeProto *n, char *buf, size_t size,
                                bool kernel_required) {
    static const char *const names[] = {"kernel_shape", "strides", "dilations", "pads"};
    for (int i = 0; i < 4; i++) {
        const Onnx__AttributeProto *a = tonnx_attr(n, names[i]);
        size_t want = i == 3 ? 4 : 2;
        if (a && a->n_ints != want) {
            snprintf(buf, size, "%zu-D window ('%s' has %zu entries; only 2-D is supported)",
                     i == 3 ? a->n_ints / 2 : a->n_ints, names[i], a->n_ints);
            return buf;
        }
        if (!a && i == 0 && kernel_required) {
            snprintf(buf, size, "no kernel_shape");
            return buf;
        }
    }
    return check_auto_pad(c, n, buf, size);
}

static const char *check_conv(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                              size_t size) {
    (void)node;
    return check_window(c, n, buf, size, false);
}

static const char *check_pool(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                              size_t size) {
    if (strcmp(S(n->op_type), "MaxPool") == 0 && tonnx_output_used(c, node, 1)) {
        return "the Indices output";
    }
    return check_window(c, n, buf, size, true);
}

static const char *string_attr(const Onnx__NodeProto *n, const char *name, const char *def, char *v,
                               size_t size) {
    const Onnx__AttributeProto *a = tonnx_attr(n, name);
    if (!a) {
        snprintf(v, size, "%s", def);
    } else {
        snprintf(v, size, "%.*s", (int)(a->s.len < size - 1 ? a->s.len : size - 1),
                 a->s.len ? (const char *)a->s.data : "");
    }
    return v;
}

static const char *check_pad(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                             size_t size) {
    (void)c;
    (void)node;
    char v[32];
    if (strcmp(string_attr(n, "mode", "constant", v, sizeof v), "constant") != 0) {
        snprintf(buf, size, "mode '%s' (only constant)", v);
        return buf;
    }
    return NULL;
}

static const char *check_resize(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                                size_t size) {
    (void)node;
    char mode[32], ctm[40], nm[40];
    string_attr(n, "mode", "nearest", mode, sizeof mode);
    if (strcmp(mode, "nearest") != 0) {
        snprintf(buf, size, "mode '%s' (only nearest)", mode);
        return buf;
    }
    static const char *const v18[] = {"antialias", "axes", "keep_aspect_ratio_policy"};
    for (int i = 0; i < 3 && c->opset < 18; i++) {
        if (tonnx_attr(n, v18[i])) {
            snprintf(buf, size, "attribute '%s' (opset 18 and later)", v18[i]);
            return buf;
        }
    }
    if (strcmp(S(n->op_type), "Upsample") == 0 || c->opset < 11) {
        return NULL; /* asymmetric coordinates, floor: integer factors replicate */
    }
    char kar[40];
    string_attr(n, "keep_aspect_ratio_policy", "stretch", kar, sizeof kar);
    if (strcmp(kar, "stretch") != 0) {
        snprintf(buf, size, "keep_aspect_ratio_policy '%s' (only stretch)", kar);
        return buf;
    }
    string_attr(n, "coordinate_transformation_mode", "half_pixel", ctm, sizeof ctm);
    string_attr(n, "nearest_mode", "round_prefer_floor", nm, sizeof nm);
    bool centred = !strcmp(ctm, "half_pixel") || !strcmp(ctm, "pytorch_half_pixel");
    bool rounds = !strcmp(nm, "round_prefer_floor") || !strcmp(nm, "round_prefer_ceil");
    bool ok = (centred && rounds) ||
              ((!strcmp(ctm, "asymmetric") || !strcmp(ctm, "tf_half_pixel_for_nn")) &&
               !strcmp(nm, "floor"));
    if (!ok) {
        snprintf(buf, size,
                 "coordinate_transformation_mode '%s' with nearest_mode '%s' (only modes that "
                 "replicate pixels)",
                 ctm, nm);
        return buf;
    }
    return NULL;
}

static const char *check_batch_norm(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                                    size_t size) {
    (void)buf;
    (void)size;
    const Onnx__AttributeProto *tm = tonnx_attr(n, "training_mode");
    const Onnx__AttributeProto *sp = tonnx_attr(n, "spatial");
    if (tm && tm->i != 0) {
        return "training_mode 1";
    }
    if (sp && sp->i != 1) {
        return "spatial 0";
    }
    for (int i = 1; i < 5; i++) {
        if (tonnx_output_used(c, node, i)) {
            return "the training outputs (running mean/var)";
        }
    }
    return NULL;
}

static const char *check_layer_norm(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                                    size_t size) {
    (void)c;
    (void)node;
    const Onnx__AttributeProto *st = tonnx_attr(n, "stash_type");
    if (st && st->i != 1) {
        snprintf(buf, size, "stash_type %lld (only 1, float32)", (long long)st->i);
        return buf;
    }
    return NULL;
}

static const char *check_dropout(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                                 size_t size) {
    (void)n;
    (void)buf;
    (void)size;
    if (tonnx_output_used(c, node, 1)) {
        return "the mask output";
    }
    if (has_input(n, 2)) {
        int vi = tonnx_find(c, S(n->input[2]));
        const hconst *k = vi >= 0 ? c->v[vi].k : NULL;
        if (!k || k->count != 1 ||
            (k->is_int ? ((const int64_t *)k->data)[0] : ((const float *)k->data)[0]) != 0) {
            return "training_mode (only inference)";
        }
    }
    return NULL;
}

static const char *check_constant(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                                  size_t size) {
    (void)c;
    (void)node;
    static const char *const ok[] = {"value", "value_float", "value_floats", "value_int",
                                     "value_ints"};
    if (n->n_attribute != 1) {
        return "needs exactly one value attribute";
    }
    const char *name = S(n->attribute[0]->name);
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        if (strcmp(name, ok[i]) == 0) {
            return NULL;
        }
    }
    snprintf(buf, size, "attribute '%s'", name);
    return buf;
}

static const char *check_cast(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                              size_t size) {
    (void)node;
    const Onnx__AttributeProto *to = tonnx_attr(n, "to");
    int vi = n->n_input ? tonnx_find(c, S(n->input[0])) : -1;
    if (!to) {
        return "no 'to' attribute";
    }
    if (vi >= 0 && !c->v[vi].is_const && to->i != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        char tn[32];
        snprintf(buf, size, "cast to %s at run time",
                 tonnx_dtype_name((int32_t)to->i, tn, sizeof tn));
        return buf;
    }
    return NULL;
}

/* ---- the table ------------------------------------------------------------------------- */

#define MAXV TETHER_ONNX_OPSET_MAX

static const op_def ops[] = {
    {"Abs", 6, MAXV, "abs", "", false, false, cv_unary, NULL},
    {"Add", 7, MAXV, "add", "", true, false, cv_binary, NULL},
    {"AveragePool", 7, MAXV, "avg_pool",
     "auto_pad,ceil_mode,count_include_pad,kernel_shape,pads,strides", false, false, cv_pool,
     check_pool},
    {"BatchNormalization", 7, MAXV, "batch_norm", "epsilon,momentum,spatial,training_mode", false,
     false, cv_batch_norm, check_batch_norm},
    {"Cast", 6, MAXV, "(none: constants, or float to float)", "to", true, false, cv_cast,
     check_cast},
    {"Clip", 6, MAXV, "clip", "min,max", false, false, cv_clip, NULL},
    {"Concat", 4, MAXV, "concat", "axis", true, false, cv_concat, NULL},
    {"Constant", 1, MAXV, "(constant)",
     "value,value_float,value_floats,value_int,value_ints,value_string,value_strings,sparse_value",
     true, true, NULL, check_constant},
    {"ConstantOfShape", 9, MAXV, "(constant)", "value", true, true, NULL, NULL},
    {"Conv", 1, MAXV, "conv2d", "auto_pad,dilations,group,kernel_shape,pads,strides", false, false,
     cv_conv, check_conv},
    {"Div", 7, MAXV, "div", "", true, false, cv_binary, NULL},
    {"Dropout", 7, MAXV, "(dropped)", "ratio,seed", true, false, cv_alias, check_dropout},
    {"Exp", 6, MAXV, "exp", "", false, false, cv_unary, NULL},
    {"Flatten", 1, MAXV, "flatten", "axis", true, false, cv_flatten, NULL},
    {"Gather", 1, MAXV, "(constants only)", "axis", true, true, NULL, NULL},
    {"Gemm", 7, MAXV, "dense", "alpha,beta,transA,transB", false, false, cv_gemm, NULL},
    {"GlobalAveragePool", 1, MAXV, "global_avg_pool", "", false, false, cv_global_pool, NULL},
    {"GlobalMaxPool", 1, MAXV, "global_max_pool", "", false, false, cv_global_pool, NULL},
    {"HardSigmoid", 6, MAXV, "hard_sigmoid", "alpha,beta", false, false, cv_unary, NULL},
    {"HardSwish", 14, MAXV, "hard_swish", "", false, false, cv_unary, NULL},
    {"Identity", 1, MAXV, "(dropped)", "", true, false, cv_alias, NULL},
    {"LayerNormalization", 17, MAXV,
     "layer_norm (+ reduce_mean, sub, mul, add, sqrt, div for "
     "Mean/InvStdDev)",
     "axis,epsilon,stash_type", false, false, cv_layer_norm, check_layer_norm},
    {"LeakyRelu", 6, MAXV, "leaky_relu", "alpha", false, false, cv_unary, NULL},
    {"Log", 6, MAXV, "log", "", false, false, cv_unary, NULL},
    {"LogSoftmax", 1, MAXV, "log_softmax (before opset 13: + flatten, reshape)", "axis", false,
     false, cv_softmax, NULL},
    {"MatMul", 1, MAXV, "matmul", "", false, false, cv_matmul, NULL},
    {"MaxPool", 1, MAXV, "max_pool",
     "auto_pad,ceil_mode,dilations,kernel_shape,pads,storage_order,strides", false, false, cv_pool,
     check_pool},
    {"Mul", 7, MAXV, "mul", "", true, false, cv_binary, NULL},
    {"Neg", 6, MAXV, "neg", "", false, false, cv_unary, NULL},
    {"PRelu", 7, MAXV, "prelu", "", false, false, cv_prelu, NULL},
    {"Pad", 2, MAXV, "pad", "mode,pads,value", false, false, cv_pad, check_pad},
    {"Pow", 7, MAXV, "pow", "", false, false, cv_binary, NULL},
    {"ReduceMean", 1, MAXV, "reduce_mean", "axes,keepdims,noop_with_empty_axes", false, false,
     cv_reduce_mean, NULL},
    {"Relu", 6, MAXV, "relu", "", false, false, cv_unary, NULL},
    {"Reshape", 5, MAXV, "reshape", "allowzero", true, false, cv_reshape, NULL},
    {"Resize", 10, MAXV, "resize_nearest",
     "antialias,axes,coordinate_transformation_mode,cubic_coeff_a,exclude_outside,"
     "extrapolation_value,keep_aspect_ratio_policy,mode,nearest_mode",
     false, false, cv_resize, check_resize},
    {"Shape", 1, MAXV, "(constant: the input's shape)", "start,end", true, true, NULL, NULL},
    {"Sigmoid", 6, MAXV, "sigmoid", "", false, false, cv_unary, NULL},
    {"Slice", 1, MAXV, "(constants only)", "starts,ends,axes", true, true, NULL, NULL},
    {"Softmax", 1, MAXV, "softmax (before opset 13: + flatten, reshape)", "axis", false, false,
     cv_softmax, NULL},
    {"Sqrt", 6, MAXV, "sqrt", "", false, false, cv_unary, NULL},
    {"Squeeze", 1, MAXV, "squeeze", "axes", true, false, cv_squeeze, NULL},
    {"Sub", 7, MAXV, "sub", "", true, false, cv_binary, NULL},
    {"Tanh", 6, MAXV, "tanh", "", false, false, cv_unary, NULL},
    {"Transpose", 1, MAXV, "transpose", "perm", false, false, cv_transpose, NULL},
    {"Unsqueeze", 1, MAXV, "unsqueeze", "axes", true, false, cv_squeeze, NULL},
    {"Upsample", 7, 9, "resize_nearest", "mode,scales", false, false, cv_resize, check_resize},
};

/* How many inputs and outputs each operator of ops[] takes, from the ONNX operator schemas of the
 * versions the importer handles: for each operator, its entries in opset order; the last entry
 * whose `since` is at most the model's opset applies. Optional inputs and outputs count in the
 * maximum only; in_max -1: variadic (at least in_min). Every operator of ops[] has an entry
 * (tonnx_op_arity fails closed otherwise). */
typedef struct arity_def {
    const char *op_type;
    int since;
    int in_min, in_max, out_min, out_max;
} arity_def;

static const arity_def arities[] = {
    {"Abs", 1, 1, 1, 1, 1},
    {"Add", 1, 2, 2, 1, 1},
    {"AveragePool", 1, 1, 1, 1, 1},
    {"BatchNormalization", 1, 5, 5, 1, 5},  /* Y, mean, var, saved_mean, saved_var */
    {"BatchNormalization", 14, 5, 5, 1, 3}, /* Y, running_mean, running_var */
    {"Cast", 1, 1, 1, 1, 1},
    {"Clip", 1, 1, 1, 1, 1},
    {"Clip", 11, 1, 3, 1, 1}, /* input, min, max */
    {"Concat", 1, 1, -1, 1, 1},
    {"Constant", 1, 0, 0, 1, 1},
    {"ConstantOfShape", 9, 1, 1, 1, 1},
    {"Conv", 1, 2, 3, 1, 1}, /* X, W, B */
    {"Div", 1, 2, 2, 1, 1},
    {"Dropout", 1, 1, 1, 1, 2},  /* output, mask */
    {"Dropout", 12, 1, 3, 1, 2}, /* data, ratio, training_mode */
    {"Exp", 1, 1, 1, 1, 1},
    {"Flatten", 1, 1, 1, 1, 1},
    {"Gather", 1, 2, 2, 1, 1},
    {"Gemm", 1, 3, 3, 1, 1},  /* A, B, C */
    {"Gemm", 11, 2, 3, 1, 1}, /* C optional */
    {"GlobalAveragePool", 1, 1, 1, 1, 1},
    {"GlobalMaxPool", 1, 1, 1, 1, 1},
    {"HardSigmoid", 1, 1, 1, 1, 1},
    {"HardSwish", 14, 1, 1, 1, 1},
    {"Identity", 1, 1, 1, 1, 1},
    {"LayerNormalization", 17, 2, 3, 1, 3}, /* X, Scale, B -> Y, Mean, InvStdDev */
    {"LeakyRelu", 1, 1, 1, 1, 1},
    {"Log", 1, 1, 1, 1, 1},
    {"LogSoftmax", 1, 1, 1, 1, 1},
    {"MatMul", 1, 2, 2, 1, 1},
    {"MaxPool", 1, 1, 1, 1, 1},
    {"MaxPool", 8, 1, 1, 1, 2}, /* Y, Indices */
    {"Mul", 1, 2, 2, 1, 1},
    {"Neg", 1, 1, 1, 1, 1},
    {"PRelu", 1, 2, 2, 1, 1},
    {"Pad", 1, 1, 1, 1, 1},
    {"Pad", 11, 2, 3, 1, 1}, /* data, pads, constant_value */
    {"Pad", 18, 2, 4, 1, 1}, /* ..., axes */
    {"Pow", 1, 2, 2, 1, 1},
    {"ReduceMean", 1, 1, 1, 1, 1},
    {"ReduceMean", 18, 1, 2, 1, 1}, /* data, axes */
    {"Relu", 1, 1, 1, 1, 1},
    {"Reshape", 5, 2, 2, 1, 1},
    {"Resize", 10, 2, 2, 1, 1}, /* X, scales */
    {"Resize", 11, 3, 4, 1, 1}, /* X, roi, scales, sizes */
    {"Resize", 13, 1, 4, 1, 1}, /* roi, scales and sizes optional */
    {"Shape", 1, 1, 1, 1, 1},
    {"Sigmoid", 1, 1, 1, 1, 1},
    {"Slice", 1, 1, 1, 1, 1},
    {"Slice", 10, 3, 5, 1, 1}, /* data, starts, ends, axes, steps */
    {"Softmax", 1, 1, 1, 1, 1},
    {"Sqrt", 1, 1, 1, 1, 1},
    {"Squeeze", 1, 1, 1, 1, 1},
    {"Squeeze", 13, 1, 2, 1, 1}, /* data, axes */
    {"Sub", 1, 2, 2, 1, 1},
    {"Tanh", 1, 1, 1, 1, 1},
    {"Transpose", 1, 1, 1, 1, 1},
    {"Unsqueeze", 1, 1, 1, 1, 1},
    {"Unsqueeze", 13, 2, 2, 1, 1}, /* data, axes (required) */
    {"Upsample", 7, 1, 1, 1, 1},
    {"Upsample", 9, 2, 2, 1, 1}, /* X, scales */
};

int tonnx_op_arity(const op_def *d, int opset, tonnx_arity *out) {
    const arity_def *found = NULL;
    int entries = 0;
    for (size_t i = 0; i < sizeof arities / sizeof *arities; i++) {
        const arity_def *e = &arities[i];
        if (strcmp(e->op_type, d->op_type) != 0) {
            continue;
        }
        entries++;
        if (e->since <= opset) {
            found = e;
        }
    }
    if (!found) {
        return TETHER_ERR_NOT_FOUND;
    }
    out->in_min = found->in_min;
    out->in_max = found->in_max;
    out->out_min = found->out_min;
    out->out_max = found->out_max;
    out->by_opset = entries > 1;
    return TETHER_OK;
}

const op_def *tonnx_op_find(const char *domain, const char *op_type) {
    if (domain && domain[0] && strcmp(domain, "ai.onnx") != 0) {
        return NULL;
    }
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        if (strcmp(ops[i].op_type, op_type) == 0) {
            return &ops[i];
        }
    }
    return NULL;
}

unsigned tonnx_const_inputs(const op_def *d, int opset) {
    const char *t = d->op_type;
    if (!strcmp(t, "Reshape")) {
        return 1u << 1;
    }
    if (!strcmp(t, "Squeeze") || !strcmp(t, "Unsqueeze")) {
        return opset >= 13 ? 1u << 1 : 0;
    }
    if (!strcmp(t, "Clip")) {
        return opset >= 11 ? (1u << 1) | (1u << 2) : 0;
    }
    if (!strcmp(t, "Pad")) {
        return opset >= 18 ? 0xeu : opset >= 11 ? (1u << 1) | (1u << 2) : 0;
    }
    if (!strcmp(t, "ReduceMean")) {
        return opset >= 18 ? 1u << 1 : 0;
    }
    if (!strcmp(t, "Resize")) {
        return opset >= 11 ? (1u << 1) | (1u << 2) | (1u << 3) : 1u << 1;
    }
    if (!strcmp(t, "Upsample")) {
        return opset >= 9 ? 1u << 1 : 0;
    }
    if (!strcmp(t, "Dropout")) {
        return opset >= 12 ? (1u << 1) | (1u << 2) : 0;
    }
    if (!strcmp(t, "Slice")) {
        return 0x1eu;
    }
    if (!strcmp(t, "ConstantOfShape")) {
        return 1u;
    }
    return 0;
}

const tether_onnx_op_info *tether_onnx_ops(int *count) {
    static tether_onnx_op_info info[sizeof ops / sizeof *ops];
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        info[i].op_type = ops[i].op_type;
        info[i].since = ops[i].since;
        info[i].until = ops[i].until;
        info[i].maps_to = ops[i].maps_to;
    }
    *count = (int)(sizeof ops / sizeof *ops);
    return info;
}

/* ---- host evaluation ------------------------------------------------------------------- */

static double el(const hconst *k, size_t i) {
    return k->is_int ? (double)((const int64_t *)k->data)[i] : (double)((const float *)k->data)[i];
}

static void set_el(hconst *k, size_t i, double v) {
    if (k->is_int) {
        ((int64_t *)k->data)[i] = (int64_t)v;
    } else {
        ((float *)k->data)[i] = (float)v;
    }
}

static void copy_el(hconst *dst, size_t di, const hconst *src, size_t si) {
    if (dst->is_int && src->is_int) {
        ((int64_t *)dst->data)[di] = ((const int64_t *)src->data)[si];
    } else {
        set_el(dst, di, el(src, si));
    }
}

static int set_out(timport *c, const Onnx__NodeProto *n, int i, hconst *k) {
    if (i < (int)n->n_output && S(n->output[i])[0]) {
        c->v[tonnx_find(c, n->output[i])].k = k;
    }
    return TETHER_OK;
}

static hconst *in_k(timport *c, const Onnx__NodeProto *n, int i) {
    int v = has_input(n, i) ? tonnx_find(c, n->input[i]) : -1;
    return v < 0 ? NULL : c->v[v].k;
}

/* A constant with the same data as k under a new shape. */
static int reshaped(timport *c, const hconst *k, int ndim, const int64_t *shape, hconst **out) {
    hconst *r = tonnx_hconst_new(c, k->is_int, ndim, shape);
    if (!r) {
        return tether_last_status();
    }
    if (r->count != k->count) {
        return tonnx_fail(c, TETHER_ERR_MISMATCH, "%zu elements cannot take a shape of %zu",
                          k->count, r->count);
    }
    memcpy(r->data, k->data, k->count * (k->is_int ? sizeof(int64_t) : sizeof(float)));
    *out = r;
    return TETHER_OK;
}

static int norm_axis(timport *c, int64_t axis, int rank, int *out) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axis %lld out of range for rank %d",
                          (long long)axis, rank);
    }
    *out = (int)a;
    return TETHER_OK;
}

static int host_constant(timport *c, const Onnx__NodeProto *n) {
    const Onnx__AttributeProto *a = n->attribute[0];
    const char *name = S(a->name);
    hconst *k = NULL;
    if (!strcmp(name, "value")) {
        if (!a->t) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute 'value' has no tensor");
        }
        tether_onnx_tensor t;
        int rc = tonnx_tensor_from_proto(a->t, S(n->output[0]), c->dir, &t);
        if (rc) {
            return tonnx_fail(c, rc, "%s", tether_last_error());
        }
        bool is_int = t.dtype.code != kDLFloat;
        tonnx_host_allow(c, t.nbytes / (t.dtype.bits / 8), is_int); /* bytes of the file */
        k = tonnx_hconst_new(c, is_int, t.ndim, t.shape);
        if (!k) {
            tether_onnx_tensor_free(&t);
            return tether_last_status();
        }
        size_t es = t.dtype.bits / 8;
        for (size_t i = 0; i < k->count; i++) {
            const uint8_t *p = (const uint8_t *)t.data + i * es;
            double v = 0;
            if (t.dtype.code == kDLFloat) {
                if (es == 4) {
                    float f;
                    memcpy(&f, p, 4);
                    v = f;
                } else {
                    memcpy(&v, p, 8);
                }
                set_el(k, i, v);
            } else {
                int64_t x = 0;
                bool sg = t.dtype.code == kDLInt;
                if (es == 1) {
                    x = sg ? (int8_t)p[0] : p[0];
                } else if (es == 2) {
                    uint16_t u;
                    memcpy(&u, p, 2);
                    x = sg ? (int16_t)u : u;
                } else if (es == 4) {
                    uint32_t u;
                    memcpy(&u, p, 4);
                    x = sg ? (int32_t)u : (int64_t)u;
                } else {
                    memcpy(&x, p, 8);
                }
                ((int64_t *)k->data)[i] = x;
            }
        }
        tether_onnx_tensor_free(&t);
    } else if (!strcmp(name, "value_float") || !strcmp(name, "value_int")) {
        k = tonnx_hconst_new(c, name[6] == 'i', 0, NULL);
        if (!k) {
            return tether_last_status();
        }
        set_el(k, 0, name[6] == 'i' ? (double)a->i : (double)a->f);
    } else {
        bool ints = !strcmp(name, "value_ints");
        int64_t len = ints ? (int64_t)a->n_ints : (int64_t)a->n_floats;
        k = tonnx_hconst_new(c, ints, 1, &len);
        if (!k) {
            return tether_last_status();
        }
        for (int64_t i = 0; i < len; i++) {
            set_el(k, (size_t)i, ints ? (double)a->ints[i] : (double)a->floats[i]);
        }
    }
    return set_out(c, n, 0, k);
}

static int host_shape(timport *c, const Onnx__NodeProto *n) {
    int vi = tonnx_find(c, S(n->input[0]));
    int ndim;
    const int64_t *shape;
    int rc;
    if (c->v[vi].k) {
        ndim = c->v[vi].k->ndim;
        shape = c->v[vi].k->shape;
    } else {
        int t;
        if ((rc = tonnx_in_tensor(c, 0, true, &t))) {
            return rc;
        }
        ndim = c->g->tensors[t].ndim;
        shape = c->g->tensors[t].shape;
    }
    int64_t start, end;
    if ((rc = tonnx_attr_int(c, "start", 0, &start)) ||
        (rc = tonnx_attr_int(c, "end", ndim, &end))) {
        return rc;
    }
    start = start < 0 ? start + ndim : start;
    end = end < 0 ? end + ndim : end;
    start = start < 0 ? 0 : start > ndim ? ndim : start;
    end = end < 0 ? 0 : end > ndim ? ndim : end;
    int64_t len = end > start ? end - start : 0;
    hconst *k = tonnx_hconst_new(c, true, 1, &len);
    if (!k) {
        return tether_last_status();
    }
    for (int64_t i = 0; i < len; i++) {
        ((int64_t *)k->data)[i] = shape[start + i];
    }
    return set_out(c, n, 0, k);
}

static int host_cast(timport *c, const Onnx__NodeProto *n) {
    const hconst *x = in_k(c, n, 0);
    int64_t to;
    int rc = tonnx_attr_int(c, "to", 0, &to);
    if (rc) {
        return rc;
    }
    bool is_float = to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
                    to == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ||
                    to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
    bool is_bool = to == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    hconst *k = tonnx_hconst_new(c, !is_float, x->ndim, x->shape);
    if (!k) {
        return tether_last_status();
    }
    for (size_t i = 0; i < k->count; i++) {
        double v = el(x, i);
        set_el(k, i, is_bool ? (v != 0) : is_float ? v : trunc(v));
    }
    return set_out(c, n, 0, k);
}

static int host_reshape_like(timport *c, const Onnx__NodeProto *n) {
    const char *t = S(n->op_type);
    const hconst *x = in_k(c, n, 0);
    int64_t shape[TETHER_IR_MAX_NDIM];
    int nd = 0, rc, cnt;
    if (!strcmp(t, "Reshape")) {
        int64_t allowzero;
        if ((rc = const_ints(c, in_k(c, n, 1), "shape", shape, TETHER_IR_MAX_NDIM, &nd)) ||
            (rc = tonnx_attr_int(c, "allowzero", 0, &allowzero))) {
            return rc;
        }
        int infer = -1;
        size_t known = 1;
        for (int i = 0; i < nd; i++) {
            if (shape[i] == 0 && !allowzero) {
                if (i >= x->ndim) {
                    return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                                      "shape entry %d is 0 past the "
                                      "input's rank",
                                      i);
                }
                shape[i] = x->shape[i];
            }
            if (shape[i] == -1) {
                if (infer >= 0) {
                    return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "shape has more than one -1");
                }
                infer = i;
                continue;
            }
            if (shape[i] < 0) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "shape entry %d is %lld", i,
                                  (long long)shape[i]);
            }
            known *= (size_t)shape[i];
        }
        if (infer >= 0) {
            if (!known || x->count % known) {
                return tonnx_fail(c, TETHER_ERR_MISMATCH, "%zu elements cannot fill the shape",
                                  x->count);
            }
            shape[infer] = (int64_t)(x->count / known);
        }
    } else if (!strcmp(t, "Flatten")) {
        int64_t axis;
        if ((rc = tonnx_attr_int(c, "axis", 1, &axis))) {
            return rc;
        }
        axis = axis < 0 ? axis + x->ndim : axis;
        if (axis < 0 || axis > x->ndim) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axis out of range");
        }
        nd = 2;
        shape[0] = shape[1] = 1;
        for (int i = 0; i < x->ndim; i++) {
            shape[i < axis ? 0 : 1] *= x->shape[i];
        }
    } else {
        bool un = !strcmp(t, "Unsqueeze");
        int64_t axes[TETHER_IR_MAX_NDIM];
        cnt = -1;
        if (c->opset < 13) {
            rc = tonnx_attr_ints(c, "axes", axes, TETHER_IR_MAX_NDIM, &cnt);
        } else {
            const hconst *ak = in_k(c, n, 1);
            rc = ak ? const_ints(c, ak, "axes", axes, TETHER_IR_MAX_NDIM, &cnt) : TETHER_OK;
        }
        if (rc) {
            return rc;
        }
        bool mark[TETHER_IR_MAX_NDIM] = {false};
        if (un) {
            nd = x->ndim + (cnt > 0 ? cnt : 0);
            if (cnt < 1 || nd > TETHER_IR_MAX_NDIM) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axes missing or rank above %d",
                                  TETHER_IR_MAX_NDIM);
            }
            for (int i = 0; i < cnt; i++) {
                int a = 0;
                if ((rc = norm_axis(c, axes[i], nd, &a))) {
                    return rc;
                }
                mark[a] = true;
            }
            for (int i = 0, j = 0; i < nd; i++) {
                shape[i] = mark[i] ? 1 : x->shape[j++];
            }
        } else {
            for (int i = 0; i < cnt; i++) {
                int a = 0;
                if ((rc = norm_axis(c, axes[i], x->ndim, &a))) {
                    return rc;
                }
                mark[a] = true;
            }
            for (int i = 0; i < x->ndim; i++) {
                if (cnt < 0 ? x->shape[i] != 1 : !mark[i]) {
                    shape[nd++] = x->shape[i];
                }
            }
        }
    }
    hconst *k = NULL;
    if ((rc = reshaped(c, x, nd, shape, &k))) {
        return rc;
    }
    return set_out(c, n, 0, k);
}

static int host_concat(timport *c, const Onnx__NodeProto *n) {
    int64_t axis;
    int rc = tonnx_attr_int(c, "axis", 0, &axis), ax = 0;
    const hconst *x0 = in_k(c, n, 0);
    if (rc || !x0 || (rc = norm_axis(c, axis, x0->ndim, &ax))) {
        return rc ? rc : tonnx_fail(c, TETHER_ERR_INVALID_ARG, "input 0 is missing");
    }
    int64_t shape[TETHER_IR_MAX_NDIM];
    memcpy(shape, x0->shape, sizeof shape);
    shape[ax] = 0;
    bool is_int = true;
    for (int i = 0; i < in_count(n); i++) {
        const hconst *x = in_k(c, n, i);
        if (!x || x->ndim != x0->ndim) {
            return tonnx_fail(c, TETHER_ERR_MISMATCH, "input %d is missing or of other rank", i);
        }
        for (int d = 0; d < x->ndim; d++) {
            if (d != ax && x->shape[d] != x0->shape[d]) {
                return tonnx_fail(c, TETHER_ERR_MISMATCH, "input %d differs in dimension %d", i, d);
            }
        }
        shape[ax] += x->shape[ax];
        is_int &= x->is_int;
    }
    hconst *k = tonnx_hconst_new(c, is_int, x0->ndim, shape);
    if (!k) {
        return tether_last_status();
    }
    size_t outer = 1, inner = 1;
    for (int d = 0; d < ax; d++) {
        outer *= (size_t)shape[d];
    }
    for (int d = ax + 1; d < x0->ndim; d++) {
        inner *= (size_t)shape[d];
    }
    size_t o = 0;
    for (size_t a = 0; a < outer; a++) {
        for (int i = 0; i < in_count(n); i++) {
            const hconst *x = in_k(c, n, i);
            size_t len = (size_t)x->shape[ax] * inner;
            for (size_t e = 0; e < len; e++) {
                copy_el(k, o++, x, a * len + e);
            }
        }
    }
    return set_out(c, n, 0, k);
}

static int host_gather(timport *c, const Onnx__NodeProto *n) {
    const hconst *x = in_k(c, n, 0), *idx = in_k(c, n, 1);
    int64_t axis;
    int ax = 0, rc;
    if (!idx || !idx->is_int) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "indices must be integers");
    }
    if ((rc = tonnx_attr_int(c, "axis", 0, &axis)) || (rc = norm_axis(c, axis, x->ndim, &ax))) {
        return rc;
    }
    int nd = x->ndim - 1 + idx->ndim;
    if (nd > TETHER_IR_MAX_NDIM) {
        return tonnx_fail(c, TETHER_ERR_LIMIT, "result rank %d", nd);
    }
    int64_t shape[TETHER_IR_MAX_NDIM];
    int o = 0;
    for (int d = 0; d < ax; d++) {
        shape[o++] = x->shape[d];
    }
    for (int d = 0; d < idx->ndim; d++) {
        shape[o++] = idx->shape[d];
    }
    for (int d = ax + 1; d < x->ndim; d++) {
        shape[o++] = x->shape[d];
    }
    hconst *k = tonnx_hconst_new(c, x->is_int, nd, shape);
    if (!k) {
        return tether_last_status();
    }
    size_t outer = 1, inner = 1, dim = (size_t)x->shape[ax];
    for (int d = 0; d < ax; d++) {
        outer *= (size_t)x->shape[d];
    }
    for (int d = ax + 1; d < x->ndim; d++) {
        inner *= (size_t)x->shape[d];
    }
    size_t w = 0;
    for (size_t a = 0; a < outer; a++) {
        for (size_t j = 0; j < idx->count; j++) {
            int64_t i = ((const int64_t *)idx->data)[j];
            i = i < 0 ? i + (int64_t)dim : i;
            if (i < 0 || (size_t)i >= dim) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "index %lld out of range",
                                  (long long)((const int64_t *)idx->data)[j]);
            }
            for (size_t e = 0; e < inner; e++) {
                copy_el(k, w++, x, (a * dim + (size_t)i) * inner + e);
            }
        }
    }
    return set_out(c, n, 0, k);
}

static int host_slice(timport *c, const Onnx__NodeProto *n) {
    const hconst *x = in_k(c, n, 0);
    int64_t starts[TETHER_IR_MAX_NDIM], ends[TETHER_IR_MAX_NDIM], axes[TETHER_IR_MAX_NDIM],
        steps[TETHER_IR_MAX_NDIM];
    int ns, ne, na = -1, nst = -1, rc;
    if (c->opset < 10) {
        if ((rc = tonnx_attr_ints(c, "starts", starts, TETHER_IR_MAX_NDIM, &ns)) ||
            (rc = tonnx_attr_ints(c, "ends", ends, TETHER_IR_MAX_NDIM, &ne)) ||
            (rc = tonnx_attr_ints(c, "axes", axes, TETHER_IR_MAX_NDIM, &na))) {
            return rc;
        }
    } else {
        if (!in_k(c, n, 1) || !in_k(c, n, 2)) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "starts and ends are required");
        }
        if ((rc = const_ints(c, in_k(c, n, 1), "starts", starts, TETHER_IR_MAX_NDIM, &ns)) ||
            (rc = const_ints(c, in_k(c, n, 2), "ends", ends, TETHER_IR_MAX_NDIM, &ne)) ||
            (in_k(c, n, 3) &&
             (rc = const_ints(c, in_k(c, n, 3), "axes", axes, TETHER_IR_MAX_NDIM, &na))) ||
            (in_k(c, n, 4) &&
             (rc = const_ints(c, in_k(c, n, 4), "steps", steps, TETHER_IR_MAX_NDIM, &nst)))) {
            return rc;
        }
    }
    if (ns < 0 || ns != ne || (na >= 0 && na != ns) || (nst >= 0 && nst != ns)) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "starts, ends, axes and steps differ in "
                          "length");
    }
    int64_t lo[TETHER_IR_MAX_NDIM], step[TETHER_IR_MAX_NDIM], shape[TETHER_IR_MAX_NDIM];
    for (int d = 0; d < x->ndim; d++) {
        lo[d] = 0;
        step[d] = 1;
        shape[d] = x->shape[d];
    }
    for (int i = 0; i < ns; i++) {
        int ax = 0;
        if ((rc = norm_axis(c, na >= 0 ? axes[i] : i, x->ndim, &ax))) {
            return rc;
        }
        int64_t dim = x->shape[ax], s = starts[i], e = ends[i], st = nst >= 0 ? steps[i] : 1;
        if (st == 0) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "step 0");
        }
        s = s < 0 ? s + dim : s;
        e = e < 0 ? e + dim : e;
        if (st > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            shape[ax] = e > s ? (e - s + st - 1) / st : 0;
        } else {
            s = s < 0 ? -1 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            shape[ax] = s > e ? (s - e + (-st) - 1) / (-st) : 0;
        }
        lo[ax] = s;
        step[ax] = st;
    }
    hconst *k = tonnx_hconst_new(c, x->is_int, x->ndim, shape);
    if (!k) {
        return tether_last_status();
    }
    int64_t idx[TETHER_IR_MAX_NDIM] = {0}, st[TETHER_IR_MAX_NDIM];
    int64_t s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= x->shape[d];
    }
    for (size_t o = 0; o < k->count; o++) {
        size_t rem = o;
        int64_t off = 0;
        for (int d = x->ndim - 1; d >= 0; d--) {
            idx[d] = (int64_t)(rem % (size_t)shape[d]);
            rem /= (size_t)shape[d];
            off += (lo[d] + idx[d] * step[d]) * st[d];
        }
        copy_el(k, o, x, (size_t)off);
    }
    return set_out(c, n, 0, k);
}

static int host_constant_of_shape(timport *c, const Onnx__NodeProto *n) {
    int64_t shape[TETHER_IR_MAX_NDIM];
    int nd, rc;
    if ((rc = const_ints(c, in_k(c, n, 0), "shape", shape, TETHER_IR_MAX_NDIM, &nd))) {
        return rc;
    }
    bool is_int = false;
    double v = 0;
    const Onnx__AttributeProto *a = tonnx_attr(n, "value");
    if (a && a->t) {
        tether_onnx_tensor t;
        if ((rc = tonnx_tensor_from_proto(a->t, "value", NULL, &t))) {
            return tonnx_fail(c, rc, "%s", tether_last_error());
        }
        if (t.nbytes && t.dtype.code == kDLFloat && t.dtype.bits == 32) {
            v = ((float *)t.data)[0];
        } else if (t.nbytes && t.dtype.code == kDLFloat) {
            v = ((double *)t.data)[0];
        } else if (t.nbytes) {
            is_int = true;
            int64_t x = 0;
            memcpy(&x, t.data, t.dtype.bits / 8);
            v = (double)x;
        }
        tether_onnx_tensor_free(&t);
    }
    hconst *k = tonnx_hconst_new(c, is_int, nd, shape);
    if (!k) {
        return tether_last_status();
    }
    for (size_t i = 0; i < k->count; i++) {
        set_el(k, i, v);
    }
    return set_out(c, n, 0, k);
}

static int host_binary(timport *c, const Onnx__NodeProto *n) {
    const hconst *a = in_k(c, n, 0), *b = in_k(c, n, 1);
    if (!a || !b) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "two inputs are required");
    }
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    int64_t shape[TETHER_IR_MAX_NDIM];
    for (int i = 0; i < nd; i++) {
        int64_t da = i < nd - a->ndim ? 1 : a->shape[i - (nd - a->ndim)];
        int64_t db = i < nd - b->ndim ? 1 : b->shape[i - (nd - b->ndim)];
        if (da != db && da != 1 && db != 1) {
            return tonnx_fail(c, TETHER_ERR_MISMATCH, "shapes do not broadcast");
        }
        shape[i] = da == 1 ? db : da;
    }
    bool is_int = a->is_int && b->is_int;
    hconst *k = tonnx_hconst_new(c, is_int, nd, shape);
    if (!k) {
        return tether_last_status();
    }
    char op = S(n->op_type)[0];
    for (size_t o = 0; o < k->count; o++) {
        size_t rem = o, ia = 0, ib = 0, sa = 1, sb = 1;
        for (int d = nd - 1; d >= 0; d--) {
            size_t i = rem % (size_t)shape[d];
            rem /= (size_t)shape[d];
            int dA = d - (nd - a->ndim), dB = d - (nd - b->ndim);
            if (dA >= 0) {
                ia += (a->shape[dA] == 1 ? 0 : i) * sa;
                sa *= (size_t)a->shape[dA];
            }
            if (dB >= 0) {
                ib += (b->shape[dB] == 1 ? 0 : i) * sb;
                sb *= (size_t)b->shape[dB];
            }
        }
        if (is_int) {
            int64_t x = ((const int64_t *)a->data)[ia], y = ((const int64_t *)b->data)[ib], r;
            if (op == 'D' && y == 0) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "integer division by zero");
            }
            /* shape arithmetic must be exact: an overflow is an error, never a wrapped value */
            bool ovf = op == 'A'   ? __builtin_add_overflow(x, y, &r)
                       : op == 'S' ? __builtin_sub_overflow(x, y, &r)
                       : op == 'M' ? __builtin_mul_overflow(x, y, &r)
                                   : (x == INT64_MIN && y == -1) || ((r = x / y), false);
            if (ovf) {
                return tonnx_fail(c, TETHER_ERR_LIMIT, "int64 overflow in %s(%lld, %lld)",
                                  S(n->op_type), (long long)x, (long long)y);
            }
            ((int64_t *)k->data)[o] = r;
        } else {
            float x = (float)el(a, ia), y = (float)el(b, ib);
            ((float *)k->data)[o] = op == 'A'   ? x + y
                                    : op == 'S' ? x - y
                                    : op == 'M' ? x * y
                                                : x / y;
        }
    }
    return set_out(c, n, 0, k);
}

int tonnx_host_eval(timport *c, const Onnx__NodeProto *n, const op_def *d) {
    const char *t = d->op_type;
    if (!strcmp(t, "Constant")) {
        return host_constant(c, n);
    }
    if (!strcmp(t, "Shape")) {
        return host_shape(c, n);
    }
    /* every other operator evaluated here reads its first input as a constant */
    if (!in_k(c, n, 0)) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "input 0 is missing");
    }
    if (!strcmp(t, "Identity") || !strcmp(t, "Dropout")) {
        return set_out(c, n, 0, in_k(c, n, 0));
    }
    if (!strcmp(t, "Cast")) {
        return host_cast(c, n);
    }
    if (!strcmp(t, "Reshape") || !strcmp(t, "Flatten") || !strcmp(t, "Squeeze") ||
        !strcmp(t, "Unsqueeze")) {
        return host_reshape_like(c, n);
    }
    if (!strcmp(t, "Concat")) {
        return host_concat(c, n);
    }
    if (!strcmp(t, "Gather")) {
        return host_gather(c, n);
    }
    if (!strcmp(t, "Slice")) {
        return host_slice(c, n);
    }
    if (!strcmp(t, "ConstantOfShape")) {
        return host_constant_of_shape(c, n);
    }
    return host_binary(c, n);
}
