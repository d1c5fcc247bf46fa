/*
 * Part of op_cases.c: the cases of branch i27g (reductions on every numeric type; the training
 * operators' kernels). Included by op_cases.c only, after its TT_ macros; the attribute setters
 * here are static to that file.
 */
#ifndef TETHER_TEST_OP_CASES_MISC_H
#define TETHER_TEST_OP_CASES_MISC_H

static void a_misc_r1(tether_ir_attrs *a) {
    a->nints = 1;
    a->ints[0] = 1;
}
static void a_misc_r02_nokeep(tether_ir_attrs *a) {
    a->nints = 2;
    a->ints[0] = 0;
    a->ints[1] = 2;
    a->keepdims = false;
}

/* clang-format off */
#define TT_MISC_CASES \
    {"reduce_sum_int32", TETHER_OP_REDUCE_SUM, 1, {3}, {{2, 3, 4}}, 0, a_misc_r1, NONE, C, "int32"}, \
    {"reduce_prod_int64_all", TETHER_OP_REDUCE_PROD, 1, {2}, {{3, 4}}, 0, NULL, NONE, C, "int64"}, \
    {"reduce_max_uint8", TETHER_OP_REDUCE_MAX, 1, {3}, {{2, 3, 4}}, 0, a_misc_r1, NONE, C, "uint8"}, \
    {"reduce_min_int8_nokeep", TETHER_OP_REDUCE_MIN, 1, {3}, {{3, 2, 4}}, 0, a_misc_r02_nokeep, NONE, C, "int8"}, \
    {"reduce_l1_int16", TETHER_OP_REDUCE_L1, 1, {3}, {{2, 3, 4}}, 0, a_misc_r1, NONE, C, "int16"}, \
    {"reduce_l2_int32", TETHER_OP_REDUCE_L2, 1, {3}, {{2, 3, 4}}, 0, a_misc_r1, NONE, C, "int32"}, \
    {"reduce_mean_int64", TETHER_OP_REDUCE_MEAN, 1, {3}, {{2, 3, 4}}, 0, a_misc_r1, NONE, C, "int64"}, \
    {"reduce_mean_float16", TETHER_OP_REDUCE_MEAN, 1, {3}, {{3, 2, 4}}, 0, a_misc_r02_nokeep, NONE, C, "float16"}, \
    {"reduce_log_sum_exp_float64", TETHER_OP_REDUCE_LOG_SUM_EXP, 1, {3}, {{2, 3, 4}}, 0, a_misc_r1, NONE, C, "float64"}, \
    {"reduce_log_sum_bfloat16", TETHER_OP_REDUCE_LOG_SUM, 1, {3}, {{2, 3, 4}}, 1, a_misc_r1, NONE, C, "bfloat16"}, \
    {"reduce_sum_square_uint16", TETHER_OP_REDUCE_SUM_SQUARE, 1, {3}, {{2, 3, 4}}, 0, a_misc_r1, NONE, C, "uint16"}, \
    {"reduce_max_float64_nokeep", TETHER_OP_REDUCE_MAX, 1, {3}, {{3, 2, 4}}, 0, a_misc_r02_nokeep, NONE, C, "float64"},
/* clang-format on */

#endif
