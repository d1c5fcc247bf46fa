/*
 * The ONNX converters of the unary math and activation operators (trigonometry, rounding,
 * Softplus, Elu, Selu, ...), each one IR elementwise node whose formula is its row of
 * compiler/src/ir/ops.def, with the attributes read into the fields those formulas use.
 *
 * What must stay true: every attribute default is the ONNX default of the operator (docs/onnx.md
 * lists them); each ONNX name of map[] is a row of the operator table of ops.c and the other way
 * round (an operator of the table with the converter tonnx_cv_math and no entry here is an
 * internal error, never some other operator).
 */
#include <stdint.h>
#include <string.h>

#include "import.h"
#include "tether/crt/error.h"

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
