/*
 * The operator cases of the DATA family (gather ... einsum, ops.def) for op_cases.c's table: their
 * attribute setters and the rows (TT_DATA_CASES, placed in tt_op_cases[]). Included by op_cases.c
 * only, after its NONE/C macros.
 *
 * What must stay true: every DATA operator has a case here; index operands are drawn in [-20, 20]
 * (test_ops.c), so each indexed extent is 41 or the case expects every value in range after one
 * wrap of a negative one.
 */
#ifndef TT_OP_CASES_DATA_H
#define TT_OP_CASES_DATA_H

#include <string.h>

#include "ops_common.h"

/* the DATA family (indices drawn in [-20, 20]: extents of 41 along indexed axes keep every one
 * in range after the wrap of a negative one) */
static void a_scatter_max(tether_ir_attrs *a) {
    a->axis = 1;
    a->mode = 3;
}
static void a_scatter_mul(tether_ir_attrs *a) {
    a->mode = 2;
}
static void a_topk_smallest_idx(tether_ir_attrs *a) {
    a->axis = 0;
    a->k = 2;
    a->mode = 6;
}
static void a_arg_last(tether_ir_attrs *a) {
    a->axis = 1;
    a->keepdims = false;
    a->mode = 1;
}
static void a_cumsum_excl_rev(tether_ir_attrs *a) {
    a->axis = -1;
    a->mode = 3;
}
static void a_trilu_lower_neg(tether_ir_attrs *a) {
    a->k = -1;
    a->mode = 0;
}
static void a_one_hot(tether_ir_attrs *a) {
    a->axis = 1;
    a->k = 10;
}
static void a_tile(tether_ir_attrs *a) {
    static const int64_t s[] = {3, 4, 5, 3};
    memcpy(a->ints, s, sizeof s);
    a->nints = 4;
}
static void a_slice(tether_ir_attrs *a) {
    static const int64_t b[] = {1, 6, 5, -1};
    memcpy(a->ints, b, sizeof b);
    a->nints = 4;
    a->steps[0] = 2;
    a->steps[1] = -2;
}
/* einsum labels: 6 bits per dimension (i = 9, j = 10, k = 11, b = 2) */
#define L2(x, y)    ((int64_t)(x) | (int64_t)(y) << 6)
#define L3(x, y, z) (L2(x, y) | (int64_t)(z) << 12)
static void a_einsum_matmul(tether_ir_attrs *a) {
    a->ints[0] = L2(9, 10);
    a->ints[1] = L2(10, 11);
    a->ints[2] = L2(9, 11);
    a->nints = 3;
}
static void a_einsum_diag(tether_ir_attrs *a) {
    a->ints[0] = L3(2, 9, 9);
    a->ints[1] = L2(2, 9);
    a->nints = 2;
}

/* the vision and signal rows (issue 27, wt27f) */
static void a_grid_bicubic_reflect(tether_ir_attrs *a) {
    a->mode = 2 | (2 << 2);
}
static void a_grid_nearest_border_align(tether_ir_attrs *a) {
    a->mode = 1 | (1 << 2) | 16;
}
static void a_roi_max(tether_ir_attrs *a) {
    a->ints[0] = 2;
    a->ints[1] = 3;
    a->nints = 2;
    a->k = 0;
    a->alpha = 0.5f;
    a->mode = 1;
}
static void a_pool_arg(tether_ir_attrs *a) {
    a->kernel[0] = a->kernel[1] = 3;
    a->strides[0] = a->strides[1] = 2;
    a->pads[0] = a->pads[1] = a->pads[2] = a->pads[3] = 1;
    a->mode = 3;
}
static void a_unpool(tether_ir_attrs *a) {
    static const int64_t s[] = {1, 2, 5, 6};
    memcpy(a->ints, s, sizeof s);
    a->nints = 4;
    a->steps[0] = 1;
    a->steps[1] = 2;
    a->steps[2] = 4;
    a->steps[3] = 6;
}
static void a_dft(tether_ir_attrs *a) {
    a->axis = 1;
    a->k = 7;
    a->mode = 1;
}
static void a_stft(tether_ir_attrs *a) {
    a->k = 3;
    a->ints[0] = 8;
    a->nints = 1;
    a->mode = 2;
}

/* clang-format off */
#define TT_DATA_CASES \
    {"gather_axis1", \
     TETHER_OP_GATHER, \
     2, \
     {3, 2}, \
     {{2, 41, 3}, {4, 2}}, \
     0, \
     a_axis1, \
     NONE, \
     C, \
     "float32 int64"}, \
    {"gather_elements", \
     TETHER_OP_GATHER_ELEMENTS, \
     2, \
     {2, 2}, \
     {{3, 41}, {3, 5}}, \
     0, \
     a_axis1, \
     NONE, \
     C, \
     "float16 int32"}, \
    {"gather_nd_batch", \
     TETHER_OP_GATHER_ND, \
     2, \
     {3, 3}, \
     {{2, 41, 3}, {2, 4, 1}}, \
     0, \
     a_axis1, \
     NONE, \
     C, \
     "float64 int64"}, \
    {"scatter_elements_max", \
     TETHER_OP_SCATTER_ELEMENTS, \
     3, \
     {2, 2, 2}, \
     {{3, 41}, {3, 5}, {3, 5}}, \
     0, \
     a_scatter_max, \
     NONE, \
     C, \
     "int16 int32 int16"}, \
    {"scatter_nd_mul", \
     TETHER_OP_SCATTER_ND, \
     3, \
     {2, 2, 2}, \
     {{41, 3}, {4, 1}, {4, 3}}, \
     0, \
     a_scatter_mul, \
     NONE, \
     C, \
     "float32 int64 float32"}, \
    {"topk_smallest_indices_int", \
     TETHER_OP_TOPK, \
     1, \
     {2}, \
     {{6, 4}}, \
     0, \
     a_topk_smallest_idx, \
     NONE, \
     C, \
     "int32"}, \
    {"arg_max_f64", TETHER_OP_ARG_MAX, 1, {3}, {{3, 5, 4}}, 0, a_axis1, NONE, C, "float64"}, \
    {"arg_min_last_int8", TETHER_OP_ARG_MIN, 1, {2}, {{4, 9}}, 0, a_arg_last, NONE, C, "int8"}, \
    {"cumsum_excl_rev", \
     TETHER_OP_CUMSUM, \
     1, \
     {2}, \
     {{3, 5}}, \
     0, \
     a_cumsum_excl_rev, \
     NONE, \
     C, \
     "float64"}, \
    {"trilu_lower_bool", TETHER_OP_TRILU, 1, {2}, {{5, 3}}, 0, a_trilu_lower_neg, NONE, C, "bool"}, \
    {"one_hot", \
     TETHER_OP_ONE_HOT, \
     2, \
     {2, 1}, \
     {{2, 3}, {2}}, \
     0, \
     a_one_hot, \
     NONE, \
     C, \
     "int32 float32"}, \
    {"tile_uint8", TETHER_OP_TILE, 1, {3}, {{2, 1, 3}}, 0, a_tile, NONE, C, "uint8"}, \
    {"slice_steps", TETHER_OP_SLICE, 1, {2}, {{5, 7}}, 0, a_slice, NONE, C, NULL}, \
    {"einsum_matmul", \
     TETHER_OP_EINSUM, \
     2, \
     {2, 2}, \
     {{3, 4}, {4, 5}}, \
     0, \
     a_einsum_matmul, \
     NONE, \
     C, \
     NULL}, \
    {"einsum_batch_diag", \
     TETHER_OP_EINSUM, \
     1, \
     {3}, \
     {{2, 3, 3}}, \
     0, \
     a_einsum_diag, \
     NONE, \
     C, \
     "float64"}, \
    {"grid_sample_bicubic_reflection", TETHER_OP_GRID_SAMPLE, 2, {4, 4}, {{1, 2, 4, 5}, {1, 3, 2, 2}}, 0, a_grid_bicubic_reflect, NONE, C, NULL}, \
    {"grid_sample_nearest_border_f64", TETHER_OP_GRID_SAMPLE, 2, {4, 4}, {{2, 1, 3, 3}, {2, 2, 3, 2}}, 0, a_grid_nearest_border_align, NONE, C, "float64 float64"}, \
    {"roi_align_max_adaptive", TETHER_OP_ROI_ALIGN, 3, {4, 2, 1}, {{41, 2, 5, 6}, {3, 4}, {3}}, 0, a_roi_max, NONE, C, "float32 float32 uint8"}, \
    {"max_pool_arg_indices_colmajor", TETHER_OP_MAX_POOL_ARG, 1, {4}, {{1, 2, 5, 6}}, 0, a_pool_arg, NONE, C, "int8"}, \
    {"max_unpool_padded", TETHER_OP_MAX_UNPOOL, 2, {4, 4}, {{1, 2, 2, 3}, {1, 2, 2, 3}}, 0, a_unpool, NONE, C, "float32 uint8"}, \
    {"triangular_f64", TETHER_OP_TRIANGULAR, 1, {3}, {{2, 4, 4}}, 0, NULL, NONE, C, "float64"}, \
    {"diag_prod", TETHER_OP_DIAG_PROD, 1, {3}, {{2, 3, 3}}, 0, NULL, NONE, C, NULL}, \
    {"dft_inverse_complex", TETHER_OP_DFT, 1, {4}, {{2, 5, 3, 2}}, 0, a_dft, NONE, C, NULL}, \
    {"stft_window_onesided", TETHER_OP_STFT, 2, {3, 1}, {{2, 20, 1}, {8}}, 0, a_stft, NONE, C, NULL}, \
/* clang-format on */

#endif
