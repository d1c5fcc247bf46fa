/*
 * The ONNX converters: one function per family of ONNX operators that adds the IR node(s) for the
 * current node (tonnx_cv_*, named by the rows of the operator table in ops.c), with the reading
 * of attributes and constant inputs they share.
 *
 * What must stay true: every attribute default is the ONNX default of the operator version in
 * use (docs/onnx.md lists them); an attribute value the IR cannot express is an error naming it,
 * never approximated; a converter reads inputs and outputs below the minimum of the operator's
 * arity without looking (the importer checked the counts before calling it).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* ---- constants as attribute values ----------------------------------------------------- */

/* Integer list from a constant (int64 elements, rank <= 1). */
int tonnx_const_ints(timport *c, const hconst *k, const char *what, int64_t *out, int max,
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

int tonnx_cv_unary(timport *c, const Onnx__NodeProto *n) {
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
        {"Not", TETHER_OP_NOT},
        {"Sign", TETHER_OP_SIGN},
        {"IsNaN", TETHER_OP_ISNAN},
        {"IsInf", TETHER_OP_ISINF},
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
    } else if (op == TETHER_OP_ISINF) {
        int64_t neg = 1, pos = 1;
        if (!(rc = tonnx_attr_int(c, "detect_negative", 1, &neg))) {
            rc = tonnx_attr_int(c, "detect_positive", 1, &pos);
        }
        a.alpha = neg ? 1.0f : 0.0f;
        a.beta = pos ? 1.0f : 0.0f;
    }
    int x, y;
    if (rc || (rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, op, &x, 1, y, &a);
}

int tonnx_cv_binary(timport *c, const Onnx__NodeProto *n) {
    static const struct {
        const char *name;
        tether_op op;
    } map[] = {
        {"Add", TETHER_OP_ADD},         {"Sub", TETHER_OP_SUB},
        {"Mul", TETHER_OP_MUL},         {"Div", TETHER_OP_DIV},
        {"Pow", TETHER_OP_POW},         {"Equal", TETHER_OP_EQUAL},
        {"Less", TETHER_OP_LESS},       {"LessOrEqual", TETHER_OP_LESS_EQUAL},
        {"Greater", TETHER_OP_GREATER}, {"GreaterOrEqual", TETHER_OP_GREATER_EQUAL},
        {"And", TETHER_OP_AND},         {"Or", TETHER_OP_OR},
        {"Xor", TETHER_OP_XOR},
    };
    const char *t = S(n->op_type);
    tether_op op = TETHER_OP_ADD;
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        if (strcmp(map[i].name, t) == 0) {
            op = map[i].op;
        }
    }
    int in[2], y, rc;
    if (strcmp(t, "BitShift") == 0) {
        const Onnx__AttributeProto *d = tonnx_attr(n, "direction");
        char v[16];
        snprintf(v, sizeof v, "%.*s", d ? (int)(d->s.len < 15 ? d->s.len : 15) : 0,
                 d && d->s.len ? (const char *)d->s.data : "");
        if (strcmp(v, "LEFT") && strcmp(v, "RIGHT")) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "direction '%s' (LEFT or RIGHT)", v);
        }
        op = v[0] == 'L' ? TETHER_OP_BITSHIFT_LEFT : TETHER_OP_BITSHIFT_RIGHT;
    } else if (strcmp(t, "Mod") == 0) {
        int64_t fm = 0;
        if ((rc = tonnx_attr_int(c, "fmod", 0, &fm))) {
            return rc;
        }
        op = fm ? TETHER_OP_FMOD : TETHER_OP_MOD;
    }
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

int tonnx_cv_prelu(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int in[2], y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1])) ||
        (rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_PRELU, in, 2, y, NULL);
}

int tonnx_cv_clip(timport *c, const Onnx__NodeProto *n) {
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

int tonnx_cv_gemm(timport *c, const Onnx__NodeProto *n) {
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

int tonnx_cv_matmul(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    int in[2], y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1])) ||
        (rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_MATMUL, in, 2, y, NULL);
}

int tonnx_cv_global_pool(timport *c, const Onnx__NodeProto *n) {
    tether_op op = strcmp(S(n->op_type), "GlobalMaxPool") == 0 ? TETHER_OP_GLOBAL_MAX_POOL
                                                               : TETHER_OP_GLOBAL_AVG_POOL;
    int x, y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, op, &x, 1, y, NULL);
}

int tonnx_cv_softmax(timport *c, const Onnx__NodeProto *n) {
    tether_op op = strcmp(S(n->op_type), "LogSoftmax") == 0 ? TETHER_OP_LOG_SOFTMAX
                   : strcmp(S(n->op_type), "Hardmax") == 0  ? TETHER_OP_HARDMAX
                                                            : TETHER_OP_SOFTMAX;
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

int tonnx_cv_reshape(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_RESHAPE, &a);
    hconst *k = NULL;
    int64_t allowzero = 0;
    int x, y, rc;
    if ((rc = tonnx_in_const(c, 1, true, &k)) ||
        (rc = tonnx_const_ints(c, k, "shape", a.ints, TETHER_IR_MAX_NDIM, &a.nints)) ||
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

int tonnx_cv_flatten(timport *c, const Onnx__NodeProto *n) {
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
    return tonnx_const_ints(c, k, "axes", axes, TETHER_IR_MAX_NDIM, n);
}

int tonnx_cv_squeeze(timport *c, const Onnx__NodeProto *n) {
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

int tonnx_cv_transpose(timport *c, const Onnx__NodeProto *n) {
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

int tonnx_cv_concat(timport *c, const Onnx__NodeProto *n) {
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

int tonnx_cv_pad(timport *c, const Onnx__NodeProto *n) {
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
            (rc = tonnx_const_ints(c, k, "pads", a.ints, 2 * TETHER_IR_MAX_NDIM, &cnt))) {
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
            (rc = tonnx_const_ints(c, k, "axes", axes, TETHER_IR_MAX_NDIM, &na))) {
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
    char mode[16];
    if ((rc = tonnx_attr_string(c, "mode", "constant", mode, sizeof mode))) {
        return rc;
    }
    if (strcmp(mode, "constant") != 0) { /* edge, reflect, wrap: convert_misc.c */
        return tonnx_pad_mode(c, x, y, a.ints, cnt, mode);
    }
    return tonnx_emit(c, NULL, TETHER_OP_PAD, &x, 1, y, &a);
}

int tonnx_cv_batch_norm(timport *c, const Onnx__NodeProto *n) {
    int64_t training = 0;
    int rc = tonnx_attr_int(c, "training_mode", 0, &training);
    if (rc || training) { /* outputs the batch statistics too: convert_misc.c */
        return rc ? rc : tonnx_batch_norm_training(c, n);
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_BATCH_NORM, &a);
    int in[5], y;
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

int tonnx_cv_layer_norm(timport *c, const Onnx__NodeProto *n) {
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

int tonnx_cv_cast(timport *c, const Onnx__NodeProto *n) {
    int64_t to;
    int rc = tonnx_attr_int(c, "to", 0, &to);
    if (rc) {
        return rc;
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CAST, &a);
    if (!tonnx_onnx_dtype((int32_t)to, &a.to)) {
        char tn[32];
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "cast to %s, which tether does not compute",
                          tonnx_dtype_name((int32_t)to, tn, sizeof tn));
    }
    int x, y;
    if ((rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    if (tether_dtype_equal(c->g->tensors[x].dtype, a.to)) { /* to its own type: the input */
        int vo = tonnx_find(c, S(n->output[0]));
        c->v[vo].tensor = x;
        return TETHER_OK;
    }
    if ((rc = out0(c, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_CAST, &x, 1, y, &a);
}

/* Max, Min, Sum (variadic, broadcasting): a chain of binary nodes; Where. */
int tonnx_cv_variadic(timport *c, const Onnx__NodeProto *n) {
    const char *t = S(n->op_type);
    if (strcmp(t, "Where") == 0) {
        int in[3], y, rc;
        for (int i = 0; i < 3; i++) {
            if ((rc = tonnx_in_tensor(c, i, true, &in[i]))) {
                return rc;
            }
        }
        if ((rc = out0(c, &y))) {
            return rc;
        }
        return tonnx_emit(c, NULL, TETHER_OP_WHERE, in, 3, y, NULL);
    }
    tether_op op = strcmp(t, "Max") == 0   ? TETHER_OP_MAX
                   : strcmp(t, "Min") == 0 ? TETHER_OP_MIN
                                           : TETHER_OP_ADD;
    int acc, rc, y;
    if ((rc = tonnx_in_tensor(c, 0, true, &acc))) {
        return rc;
    }
    if (n->n_input == 1) { /* one input: the output is that input (no tensor of its own) */
        int vo = tonnx_find(c, S(n->output[0]));
        c->v[vo].tensor = acc;
        return TETHER_OK;
    }
    if ((rc = out0(c, &y))) {
        return rc;
    }
    for (size_t i = 1; i < n->n_input; i++) {
        int b, out = y;
        char sfx[32];
        snprintf(sfx, sizeof sfx, "part%zu", i);
        if ((rc = tonnx_in_tensor(c, (int)i, true, &b))) {
            return rc;
        }
        if (i + 1 < n->n_input && (rc = tonnx_temp_tensor(c, sfx, &out))) {
            return rc;
        }
        int in[2] = {acc, b};
        if ((rc = tonnx_emit(c, i + 1 < n->n_input ? sfx : NULL, op, in, 2, out, NULL))) {
            return rc;
        }
        acc = out;
    }
    return TETHER_OK;
}

int tonnx_cv_alias(timport *c, const Onnx__NodeProto *n) {
    (void)c;
    (void)n;
    return TETHER_OK; /* handled by the importer (Identity, Dropout) */
}
