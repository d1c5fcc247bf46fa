/*
 * The ONNX converters of the unary math and activation operators (trigonometry, rounding,
 * Softplus, Elu, Selu, ...), each one IR elementwise node whose formula is its row of
 * compiler/src/ir/ops.def, with the attributes read into the fields those formulas use; the
 * losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) and Pow of mixed element types.
 *
 * What must stay true: every attribute default is the ONNX default of the operator (docs/onnx.md
 * lists them); each ONNX name of map[] is a row of the operator table of ops.c and the other way
 * round (an operator of the table with the converter tonnx_cv_math and no entry here is an
 * internal error, never some other operator).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

#define F64 TETHER_DTYPE(kDLFloat, 64)

/* float16, bfloat16, float32 or float64 */
static bool is_float(DLDataType t) {
    return (t.code == kDLFloat || t.code == kDLBfloat) && t.lanes == 1;
}

/* ONNX name, IR operator, the attributes that become alpha and beta (NULL: none) and their
 * defaults */
typedef struct math_map {
    const char *name;
    tether_op op;
    const char *alpha, *beta;
    float alpha_def, beta_def;
} math_map;

static const math_map map[] = {
    {"Sin", TETHER_OP_SIN, NULL, NULL, 0, 0},
    {"Cos", TETHER_OP_COS, NULL, NULL, 0, 0},
    {"Tan", TETHER_OP_TAN, NULL, NULL, 0, 0},
    {"Asin", TETHER_OP_ASIN, NULL, NULL, 0, 0},
    {"Acos", TETHER_OP_ACOS, NULL, NULL, 0, 0},
    {"Atan", TETHER_OP_ATAN, NULL, NULL, 0, 0},
    {"Sinh", TETHER_OP_SINH, NULL, NULL, 0, 0},
    {"Cosh", TETHER_OP_COSH, NULL, NULL, 0, 0},
    {"Asinh", TETHER_OP_ASINH, NULL, NULL, 0, 0},
    {"Acosh", TETHER_OP_ACOSH, NULL, NULL, 0, 0},
    {"Atanh", TETHER_OP_ATANH, NULL, NULL, 0, 0},
    {"Ceil", TETHER_OP_CEIL, NULL, NULL, 0, 0},
    {"Floor", TETHER_OP_FLOOR, NULL, NULL, 0, 0},
    {"Round", TETHER_OP_ROUND, NULL, NULL, 0, 0},
    {"Reciprocal", TETHER_OP_RECIPROCAL, NULL, NULL, 0, 0},
    {"Softplus", TETHER_OP_SOFTPLUS, NULL, NULL, 0, 0},
    {"Softsign", TETHER_OP_SOFTSIGN, NULL, NULL, 0, 0},
    {"Mish", TETHER_OP_MISH, NULL, NULL, 0, 0},
    {"Erf", TETHER_OP_ERF, NULL, NULL, 0, 0},
    {"Elu", TETHER_OP_ELU, "alpha", NULL, 1.0f, 0},
    {"Celu", TETHER_OP_CELU, "alpha", NULL, 1.0f, 0},
    {"ThresholdedRelu", TETHER_OP_THRESHOLDED_RELU, "alpha", NULL, 1.0f, 0},
    {"Selu", TETHER_OP_SELU, "alpha", "gamma", 1.67326319217681884765625f,
     1.05070102214813232421875f},
    {"Shrink", TETHER_OP_SHRINK, "lambd", "bias", 0.5f, 0.0f},
};

int tonnx_cv_math(timport *c, const Onnx__NodeProto *n) {
    const math_map *m = NULL;
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        if (strcmp(map[i].name, S(n->op_type)) == 0) {
            m = &map[i];
        }
    }
    if (!m) {
        return tonnx_fail(c, TETHER_ERR_INTERNAL, "no IR operator for %s", S(n->op_type));
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(m->op, &a);
    int x, y, rc = TETHER_OK;
    if (m->alpha && (rc = tonnx_attr_float(c, m->alpha, m->alpha_def, &a.alpha))) {
        return rc;
    }
    if (m->beta && (rc = tonnx_attr_float(c, m->beta, m->beta_def, &a.beta))) {
        return rc;
    }
    if (m->op == TETHER_OP_CELU && a.alpha == 0.0f) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "alpha 0 (Celu divides by it)");
    }
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, m->op, &x, 1, y, &a);
}

/* NegativeLogLikelihoodLoss (input, target, weight?) and SoftmaxCrossEntropyLoss (scores,
 * labels, weights?; log_softmax over axis 1 first, its result the optional output log_prob):
 * nll_loss, nll_loss_sum or nll_loss_mean by the reduction (default mean), ignore_index in
 * ints[0]. */
int tonnx_cv_loss(timport *c, const Onnx__NodeProto *n) {
    const bool sce = strcmp(S(n->op_type), "SoftmaxCrossEntropyLoss") == 0;
    char red[16];
    int rc = tonnx_attr_string(c, "reduction", "mean", red, sizeof red);
    if (rc) {
        return rc;
    }
    tether_op op = strcmp(red, "none") == 0  ? TETHER_OP_NLL_LOSS
                   : strcmp(red, "sum") == 0 ? TETHER_OP_NLL_LOSS_SUM
                                             : TETHER_OP_NLL_LOSS_MEAN;
    if (op == TETHER_OP_NLL_LOSS_MEAN && strcmp(red, "mean") != 0) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "reduction '%s' (none, sum or mean)", red);
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(op, &a);
    if (tonnx_attr(n, "ignore_index")) {
        if ((rc = tonnx_attr_int(c, "ignore_index", 0, &a.ints[0]))) {
            return rc;
        }
        a.nints = 1;
    }
    int in[3], y;
    if ((rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1])) ||
        (rc = tonnx_in_tensor(c, 2, false, &in[2]))) {
        return rc;
    }
    if (sce) {
        tether_ir_attrs sa;
        tether_ir_attrs_init(TETHER_OP_LOG_SOFTMAX, &sa);
        sa.axis = 1;
        int lp;
        if (n->n_output > 1 && S(n->output[1])[0]) {
            rc = tonnx_out_tensor(c, 1, &lp);
        } else {
            rc = tonnx_temp_tensor(c, "log_prob", &lp);
        }
        if (rc || (rc = tonnx_emit(c, "log_softmax", TETHER_OP_LOG_SOFTMAX, &in[0], 1, lp, &sa))) {
            return rc;
        }
        in[0] = lp;
    }
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, op, in, in[2] >= 0 ? 3 : 2, y, &a);
}

/* A cast of tensor t to type `to` (a new intermediate named "<node>/<suffix>"), or t itself when
 * it has that type already. */
static int cast_to(timport *c, int t, DLDataType to, const char *suffix, int *out) {
    if (tether_dtype_equal(c->g->tensors[t].dtype, to)) {
        *out = t;
        return TETHER_OK;
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CAST, &a);
    a.to = to;
    int rc = tonnx_temp_tensor(c, suffix, out);
    return rc ? rc : tonnx_emit(c, suffix, TETHER_OP_CAST, &t, 1, *out, &a);
}

/* Pow(T base, T1 exponent) -> T: a floating base computes in its type (the exponent cast to it;
 * a constant integer exponent becomes a float constant); an integer base with an integer
 * exponent exactly (wrap-around, the exponent cast to the base's type); an integer base with a
 * floating exponent as numpy does, in double, the result truncated to the base's type. */
int tonnx_cv_pow(timport *c, const Onnx__NodeProto *n) {
    int in[2], y, rc;
    int vi = tonnx_find(c, S(n->input[1]));
    hconst *k = vi >= 0 ? c->v[vi].k : NULL;
    if ((rc = tonnx_in_tensor(c, 0, true, &in[0]))) {
        return rc;
    }
    DLDataType bt = c->g->tensors[in[0]].dtype;
    if (is_float(bt) && k && k->is_int && c->v[vi].tensor < 0) {
        float *f = malloc(sizeof(float) * (k->count ? k->count : 1));
        if (!f) {
            return tonnx_fail(c, TETHER_ERR_OUT_OF_MEMORY, "out of memory");
        }
        for (size_t e = 0; e < k->count; e++) {
            f[e] = (float)((const int64_t *)k->data)[e];
        }
        rc = tonnx_const_tensor(c, "exponent", k->ndim, k->shape, f, &in[1]);
        free(f);
    } else {
        rc = tonnx_in_tensor(c, 1, true, &in[1]);
    }
    if (rc || (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    DLDataType et = c->g->tensors[in[1]].dtype;
    if (is_float(bt) || !is_float(et)) {
        if ((rc = cast_to(c, in[1], bt, "exponent", &in[1]))) {
            return rc;
        }
        return tonnx_emit(c, NULL, TETHER_OP_POW, in, 2, y, NULL);
    }
    int p;
    if ((rc = cast_to(c, in[0], F64, "base_f64", &in[0])) ||
        (rc = cast_to(c, in[1], F64, "exponent_f64", &in[1])) ||
        (rc = tonnx_temp_tensor(c, "pow_f64", &p)) ||
        (rc = tonnx_emit(c, "pow_f64", TETHER_OP_POW, in, 2, p, NULL))) {
        return rc;
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CAST, &a);
    a.to = bt;
    return tonnx_emit(c, NULL, TETHER_OP_CAST, &p, 1, y, &a);
}

/* Clip: a floating input is the IR's clip (min/max attributes, convert.c); an integer input is
 * max(x, min) then min(.., max) in its own type, exactly (the bounds cast to it; an absent bound
 * is no node). */
int tonnx_cv_clip_typed(timport *c, const Onnx__NodeProto *n) {
    int x, y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    DLDataType xt = c->g->tensors[x].dtype;
    if (is_float(xt) || c->opset < 11) {
        return tonnx_cv_clip(c, n);
    }
    int bound[2] = {-1, -1}, nb = 0;
    for (int i = 1; i < 3; i++) {
        if (has_input(n, i)) {
            int b;
            if ((rc = tonnx_in_tensor(c, i, true, &b)) ||
                (rc = cast_to(c, b, xt, i == 1 ? "min" : "max", &bound[i - 1]))) {
                return rc;
            }
            nb++;
        }
    }
    if (nb == 0) { /* no bounds: the output is the input */
        int vo = tonnx_find(c, S(n->output[0]));
        c->v[vo].tensor = x;
        return TETHER_OK;
    }
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    int cur = x;
    for (int i = 0; i < 2; i++) {
        if (bound[i] < 0) {
            continue;
        }
        nb--;
        int out = y;
        if (nb > 0 && (rc = tonnx_temp_tensor(c, "lower", &out))) {
            return rc;
        }
        int in[2] = {cur, bound[i]};
        if ((rc = tonnx_emit(c, nb > 0 ? "lower" : NULL, i == 0 ? TETHER_OP_MAX : TETHER_OP_MIN, in,
                             2, out, NULL))) {
            return rc;
        }
        cur = out;
    }
    return TETHER_OK;
}
