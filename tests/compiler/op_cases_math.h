/*
 * The operator cases of the unary math and activation block (sin ... mish), integer pow and the
 * losses (nll_loss*) for op_cases.c's table: the rows (TT_MATH_CASES, placed in tt_op_cases[]).
 * Included by op_cases.c only, after its NONE/C/BOTH macros; the rows name op_cases.c's own
 * attribute setters (a_leaky, a_hsig, a_ignore7...), declared before the table.
 *
 * What must stay true: every row of the unary math block and every loss operator has a case here
 * (test_every_op_has_a_case counts both operators of a paired row).
 */
#ifndef TT_OP_CASES_MATH_H
#define TT_OP_CASES_MATH_H

/* clang-format off */
#define TT_MATH_CASES \
    /* the unary math block: every row, in pairs (the second node on the first's output) */ \
    {"sin_cos", TETHER_OP_SIN, 1, {2}, {{3, 5}}, 0, NULL, TETHER_OP_COS, BOTH, NULL}, \
    {"tan_atan", TETHER_OP_TAN, 1, {2}, {{3, 5}}, 0, NULL, TETHER_OP_ATAN, BOTH, NULL}, \
    {"asin_sinh", TETHER_OP_ASIN, 1, {2}, {{3, 5}}, 0, NULL, TETHER_OP_SINH, BOTH, NULL}, \
    {"acos_asinh", TETHER_OP_ACOS, 1, {2}, {{3, 5}}, 0, NULL, TETHER_OP_ASINH, BOTH, NULL}, \
    {"cosh_acosh", TETHER_OP_COSH, 1, {2}, {{3, 5}}, 0, NULL, TETHER_OP_ACOSH, BOTH, NULL}, \
    {"atanh_ceil", TETHER_OP_ATANH, 1, {2}, {{3, 5}}, 0, NULL, TETHER_OP_CEIL, BOTH, NULL}, \
    {"reciprocal_floor", \
     TETHER_OP_RECIPROCAL, \
     1, \
     {2}, \
     {{3, 5}}, \
     1, \
     NULL, \
     TETHER_OP_FLOOR, \
     BOTH, \
     NULL}, \
    {"elu_round", TETHER_OP_ELU, 1, {2}, {{3, 5}}, 0, a_leaky, TETHER_OP_ROUND, BOTH, NULL}, \
    {"softplus_softsign", \
     TETHER_OP_SOFTPLUS, \
     1, \
     {2}, \
     {{3, 5}}, \
     0, \
     NULL, \
     TETHER_OP_SOFTSIGN, \
     BOTH, \
     NULL}, \
    {"selu_mish", TETHER_OP_SELU, 1, {2}, {{3, 5}}, 0, NULL, TETHER_OP_MISH, BOTH, NULL}, \
    {"celu", TETHER_OP_CELU, 1, {2}, {{3, 5}}, 0, a_hsig, NONE, BOTH, NULL}, \
    {"thresholded_relu", \
     TETHER_OP_THRESHOLDED_RELU, \
     1, \
     {2}, \
     {{3, 5}}, \
     0, \
     a_leaky, \
     NONE, \
     BOTH, \
     NULL}, \
    {"shrink_f64", TETHER_OP_SHRINK, 1, {2}, {{3, 5}}, 0, a_hsig, TETHER_OP_SIN, C, "float64"}, \
    {"round_f16", TETHER_OP_ROUND, 1, {2}, {{3, 5}}, 0, NULL, TETHER_OP_ATAN, C, "float16"}, \
    /* integer pow: wrap-around, negative exponents */ \
    {"pow_int16", TETHER_OP_POW, 2, {2, 2}, {{3, 4}, {3, 4}}, 0, NULL, NONE, C, "int16"}, \
    {"pow_uint8", TETHER_OP_POW, 2, {1, 1}, {{9}, {9}}, 0, NULL, NONE, C, "uint8"}, \
    /* losses: a target outside [0, C) gives NaN (both sides), ignore_index 7 */ \
    {"nll_loss", \
     TETHER_OP_NLL_LOSS, \
     3, \
     {3, 2, 1}, \
     {{2, 24, 3}, {2, 3}, {24}}, \
     0, \
     NULL, \
     NONE, \
     C, \
     "float32 int64 float32"}, \
    {"nll_loss_mean_ii", \
     TETHER_OP_NLL_LOSS_MEAN, \
     2, \
     {4, 3}, \
     {{2, 41, 2, 2}, {2, 2, 2}}, \
     2, \
     a_ignore7, \
     NONE, \
     C, \
     "float32 int32"}, \
    {"nll_loss_sum", \
     TETHER_OP_NLL_LOSS_SUM, \
     3, \
     {2, 1, 1}, \
     {{3, 41}, {3}, {41}}, \
     2, \
     NULL, \
     NONE, \
     C, \
     "float32 uint8 float32"},
/* clang-format on */

#endif
