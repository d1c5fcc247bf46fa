/*
 * The one-node operator cases shared by the C backend's operator test (tests/compiler/test_ops.c)
 * and the OpenCL backend's (tests/opencl/test_opencl_codegen.c): one table, each case marked with
 * the backends whose test runs it. What must stay true: a case's operands are all graph inputs,
 * so the reference interpreter and the backend see the same values; names are unique.
 */
#include <string.h>

#include "ops_common.h"

#define NONE TT_NONE
#define BOTH (TT_C | TT_OPENCL)
#define C    TT_C
#define OCL  TT_OPENCL

static void a_pad1(tether_ir_attrs *a) {
    a->pads[0] = a->pads[1] = a->pads[2] = a->pads[3] = 1;
}
static void a_stride3(tether_ir_attrs *a) {
    a->strides[0] = a->strides[1] = 3;
}
static void a_asym_dil(tether_ir_attrs *a) {
    a->pads[0] = 0;
    a->pads[1] = 1;
    a->pads[2] = 2;
    a->pads[3] = 0;
    a->dilations[0] = 2;
}
static void a_depthwise(tether_ir_attrs *a) {
    a_pad1(a);
    a->groups = 4;
    a->strides[0] = a->strides[1] = 2;
}
static void a_groups2(tether_ir_attrs *a) {
    a->groups = 2;
}
static void a_conv_fused(tether_ir_attrs *a) {
    a_pad1(a);
    a->has_residual = true;
    a->act = TETHER_ACT_RELU;
}
static void a_rows(tether_ir_attrs *a) {
    a->strides[0] = 2;
    a->pads[0] = 1;
    a->pads[1] = 2;
    a->pads[2] = 0;
    a->pads[3] = 1;
    a->dilations[1] = 2;
}
static void a_conv_clip(tether_ir_attrs *a) {
    a->act = TETHER_ACT_CLIP;
    a->act_min = 0.0f;
    a->act_max = 0.5f;
}
static void a_transb_ab(tether_ir_attrs *a) {
    a->trans_b = true;
    a->alpha = 0.5f;
    a->beta = 2.0f;
}
static void a_transa(tether_ir_attrs *a) {
    a->trans_a = true;
}
static void a_dense_sig(tether_ir_attrs *a) {
    a->act = TETHER_ACT_SIGMOID;
    a->trans_b = true;
}
static void a_dense_res(tether_ir_attrs *a) {
    a->has_residual = true;
    a->act = TETHER_ACT_LEAKY_RELU;
    a->act_alpha = 0.1f;
}
static void a_matmul_res(tether_ir_attrs *a) {
    a->has_residual = true;
    a->act = TETHER_ACT_HARD_SWISH;
}
static void a_leaky(tether_ir_attrs *a) {
    a->alpha = 0.2f;
}
static void a_relu6(tether_ir_attrs *a) {
    a->min = 0.0f;
    a->max = 0.6f;
}
static void a_axis1(tether_ir_attrs *a) {
    a->axis = 1;
}
static void a_axis0(tether_ir_attrs *a) {
    a->axis = 0;
}
void tt_attrs_pool2(tether_ir_attrs *a) {
    a->kernel[0] = a->kernel[1] = 2;
    a->strides[0] = a->strides[1] = 2;
}
static void a_pool3_ceil(tether_ir_attrs *a) {
    a->kernel[0] = a->kernel[1] = 3;
    a->strides[0] = a->strides[1] = 2;
    a_pad1(a);
    a->ceil_mode = true;
}
static void a_avg_incl(tether_ir_attrs *a) {
    a_pool3_ceil(a);
    a->ceil_mode = false;
    a->pads[2] = 2;
    a->count_include_pad = true;
}
static void a_pool_dil(tether_ir_attrs *a) {
    a->kernel[0] = 2;
    a->kernel[1] = 3;
    a->dilations[0] = 2;
    a->strides[1] = 2;
}
static void a_reshape(tether_ir_attrs *a) {
    a->nints = 3;
    a->ints[0] = 0;
    a->ints[1] = -1;
    a->ints[2] = 2;
}
static void a_squeeze(tether_ir_attrs *a) {
    a->nints = 1;
    a->ints[0] = 1;
}
static void a_unsqueeze(tether_ir_attrs *a) {
    a->nints = 2;
    a->ints[0] = 0;
    a->ints[1] = -1;
}
static void a_perm(tether_ir_attrs *a) {
    a->nints = 4;
    a->ints[0] = 0;
    a->ints[1] = 2;
    a->ints[2] = 3;
    a->ints[3] = 1;
}
static void a_padop(tether_ir_attrs *a) {
    a->nints = 6;
    int64_t p[6] = {0, 1, 2, 1, 0, 3};
    memcpy(a->ints, p, sizeof p);
    a->value = 0.5f;
}
static void a_ln_last(tether_ir_attrs *a) {
    a->axis = -1;
}
static void a_rm23(tether_ir_attrs *a) {
    a->nints = 2;
    a->ints[0] = 2;
    a->ints[1] = 3;
}
static void a_rm1_nokeep(tether_ir_attrs *a) {
    a->nints = 1;
    a->ints[0] = 1;
    a->keepdims = false;
}
static void a_resize23(tether_ir_attrs *a) {
    a->scales[0] = 2;
    a->scales[1] = 3;
}
static void a_hsig(tether_ir_attrs *a) {
    a->alpha = 0.25f;
    a->beta = 0.4f;
}
static void a_conv_hswish(tether_ir_attrs *a) {
    a->strides[0] = 2;
    a->pads[1] = 2;
    a->dilations[1] = 2;
    a->act = TETHER_ACT_HARD_SWISH;
}
static void a_transb(tether_ir_attrs *a) {
    a->trans_b = true;
}
static void a_transab_tanh(tether_ir_attrs *a) {
    a->trans_a = true;
    a->trans_b = true;
    a->act = TETHER_ACT_TANH;
}
static void a_rm02(tether_ir_attrs *a) {
    a->nints = 2;
    a->ints[0] = 0;
    a->ints[1] = -1;
}

const tt_op_case tt_op_cases[] = {
    {"conv_3x3_pad",
     TETHER_OP_CONV2D,
     3,
     {4, 4, 1},
     {{1, 3, 8, 8}, {4, 3, 3, 3}, {4}},
     0,
     a_pad1,
     NONE,
     BOTH},
    {"conv_1x1_nobias",
     TETHER_OP_CONV2D,
     2,
     {4, 4},
     {{2, 5, 4, 4}, {6, 5, 1, 1}},
     0,
     NULL,
     NONE,
     BOTH},
    {"conv_stride_gt_kernel",
     TETHER_OP_CONV2D,
     3,
     {4, 4, 1},
     {{1, 2, 9, 9}, {3, 2, 2, 2}, {3}},
     0,
     a_stride3,
     NONE,
     BOTH},
    {"conv_asym_pads_dilation",
     TETHER_OP_CONV2D,
     3,
     {4, 4, 1},
     {{1, 2, 7, 6}, {2, 2, 3, 2}, {2}},
     0,
     a_asym_dil,
     NONE,
     BOTH},
    {"conv_depthwise",
     TETHER_OP_CONV2D,
     3,
     {4, 4, 1},
     {{1, 4, 6, 6}, {4, 1, 3, 3}, {4}},
     0,
     a_depthwise,
     NONE,
     BOTH},
    {"conv_groups2",
     TETHER_OP_CONV2D,
     2,
     {4, 4},
     {{1, 4, 5, 5}, {6, 2, 3, 3}},
     0,
     a_groups2,
     NONE,
     BOTH},
    {"conv_fused_residual_relu",
     TETHER_OP_CONV2D,
     4,
     {4, 4, 1, 4},
     {{1, 2, 5, 5}, {3, 2, 3, 3}, {3}, {1, 3, 5, 5}},
     0,
     a_conv_fused,
     NONE,
     BOTH},
    {"conv_rows_stride2x1_asym_dilated",
     TETHER_OP_CONV2D,
     3,
     {4, 4, 1},
     {{1, 2, 9, 12}, {3, 2, 3, 3}, {3}},
     0,
     a_rows,
     NONE,
     C},
    {"conv_rows_fused_residual_relu",
     TETHER_OP_CONV2D,
     4,
     {4, 4, 1, 4},
     {{1, 2, 4, 9}, {3, 2, 3, 3}, {3}, {1, 3, 4, 9}},
     0,
     a_conv_fused,
     NONE,
     C},
    {"conv_1x1_clip",
     TETHER_OP_CONV2D,
     3,
     {4, 4, 1},
     {{1, 3, 2, 3}, {2, 3, 1, 1}, {2}},
     0,
     a_conv_clip,
     NONE,
     BOTH},
    {"conv_rows_hswish",
     TETHER_OP_CONV2D,
     3,
     {4, 4, 1},
     {{1, 2, 9, 12}, {5, 2, 3, 3}, {5}},
     0,
     a_conv_hswish,
     NONE,
     OCL},
    {"conv_1x1_input",
     TETHER_OP_CONV2D,
     2,
     {4, 4},
     {{1, 1, 1, 1}, {1, 1, 1, 1}},
     0,
     NULL,
     NONE,
     OCL},
    {"dense_bias", TETHER_OP_DENSE, 3, {2, 2, 1}, {{3, 5}, {5, 4}, {4}}, 0, NULL, NONE, BOTH},
    {"dense_transb_alpha_beta_col",
     TETHER_OP_DENSE,
     3,
     {2, 2, 2},
     {{3, 6}, {7, 6}, {3, 1}},
     0,
     a_transb_ab,
     NONE,
     BOTH},
    {"dense_transb_vec4_row_c",
     TETHER_OP_DENSE,
     3,
     {2, 2, 2},
     {{2, 12}, {5, 12}, {1, 5}},
     0,
     a_transb,
     NONE,
     OCL},
    {"dense_transa_scalar_c",
     TETHER_OP_DENSE,
     3,
     {2, 2, 0},
     {{5, 2}, {5, 3}, {0}},
     0,
     a_transa,
     NONE,
     BOTH},
    {"dense_transab_full_c_tanh",
     TETHER_OP_DENSE,
     3,
     {2, 2, 2},
     {{4, 3}, {2, 4}, {3, 2}},
     0,
     a_transab_tanh,
     NONE,
     OCL},
    {"dense_sigmoid", TETHER_OP_DENSE, 2, {2, 2}, {{2, 9}, {8, 9}}, 0, a_dense_sig, NONE, BOTH},
    {"dense_residual_leaky",
     TETHER_OP_DENSE,
     4,
     {2, 2, 1, 2},
     {{2, 3}, {3, 4}, {4}, {2, 4}},
     0,
     a_dense_res,
     NONE,
     BOTH},
    {"matmul_batch_rank2_b", TETHER_OP_MATMUL, 2, {3, 2}, {{2, 3, 4}, {4, 5}}, 0, NULL, NONE, BOTH},
    {"matmul_broadcast_both",
     TETHER_OP_MATMUL,
     2,
     {4, 3},
     {{2, 1, 3, 4}, {3, 4, 2}},
     0,
     NULL,
     NONE,
     BOTH},
    {"matmul_vector_matrix", TETHER_OP_MATMUL, 2, {1, 3}, {{4}, {2, 4, 3}}, 0, NULL, NONE, BOTH},
    {"matmul_matrix_vector", TETHER_OP_MATMUL, 2, {3, 1}, {{2, 3, 4}, {4}}, 0, NULL, NONE, BOTH},
    {"matmul_dot", TETHER_OP_MATMUL, 2, {1, 1}, {{5}, {5}}, 0, NULL, NONE, BOTH},
    {"matmul_residual_hswish",
     TETHER_OP_MATMUL,
     3,
     {2, 2, 2},
     {{3, 4}, {4, 2}, {3, 2}},
     0,
     a_matmul_res,
     NONE,
     BOTH},
    {"add_same", TETHER_OP_ADD, 2, {3, 3}, {{2, 3, 4}, {2, 3, 4}}, 0, NULL, NONE, BOTH},
    {"add_middle_broadcast", TETHER_OP_ADD, 2, {3, 2}, {{2, 1, 4}, {3, 1}}, 0, NULL, NONE, OCL},
    {"sub_rank1", TETHER_OP_SUB, 2, {3, 1}, {{2, 3, 4}, {4}}, 0, NULL, NONE, BOTH},
    {"mul_scalar", TETHER_OP_MUL, 2, {3, 0}, {{2, 3, 4}, {0}}, 0, NULL, NONE, BOTH},
    {"mul_scalar_left", TETHER_OP_MUL, 2, {1, 2}, {{1}, {3, 5}}, 0, NULL, NONE, BOTH},
    {"div_outer", TETHER_OP_DIV, 2, {2, 2}, {{3, 1}, {1, 4}}, 2, NULL, NONE, BOTH},
    {"pow_positive", TETHER_OP_POW, 2, {2, 1}, {{3, 4}, {4}}, 3, NULL, NONE, BOTH},
    {"add_large", TETHER_OP_ADD, 2, {2, 1}, {{5, 131}, {131}}, 0, NULL, NONE, OCL},
    {"relu", TETHER_OP_RELU, 1, {3}, {{2, 3, 5}}, 0, NULL, NONE, BOTH},
    {"leaky_relu", TETHER_OP_LEAKY_RELU, 1, {2}, {{4, 5}}, 0, a_leaky, NONE, BOTH},
    {"prelu_channel", TETHER_OP_PRELU, 2, {4, 3}, {{1, 3, 2, 3}, {3, 1, 1}}, 0, NULL, NONE, BOTH},
    {"clip_relu6", TETHER_OP_CLIP, 1, {2}, {{4, 5}}, 0, a_relu6, NONE, BOTH},
    {"sigmoid", TETHER_OP_SIGMOID, 1, {1}, {{17}}, 0, NULL, NONE, BOTH},
    {"tanh", TETHER_OP_TANH, 1, {1}, {{17}}, 0, NULL, NONE, BOTH},
    {"hard_sigmoid", TETHER_OP_HARD_SIGMOID, 1, {1}, {{17}}, 0, a_hsig, NONE, BOTH},
    {"hard_swish", TETHER_OP_HARD_SWISH, 1, {2}, {{3, 7}}, 0, NULL, NONE, BOTH},
    {"exp", TETHER_OP_EXP, 1, {1}, {{9}}, 0, NULL, NONE, BOTH},
    {"log", TETHER_OP_LOG, 1, {1}, {{9}}, 1, NULL, NONE, BOTH},
    {"sqrt", TETHER_OP_SQRT, 1, {1}, {{9}}, 1, NULL, NONE, BOTH},
    {"neg", TETHER_OP_NEG, 1, {1}, {{9}}, 0, NULL, NONE, BOTH},
    {"abs", TETHER_OP_ABS, 1, {0}, {{0}}, 0, NULL, NONE, BOTH},
    {"erf", TETHER_OP_ERF, 1, {2}, {{3, 5}}, 0, NULL, NONE, BOTH},
    /* examples/custom_ops' swish (C implementation) on its declared NHWC image [1, H, W, 4]; the
     * graph's tensor is the image itself, so C only (OpenCL keeps images between kernels) */
    {"custom_swish", TETHER_OP_CUSTOM, 1, {4}, {{1, 3, 5, 4}}, 0, tt_attrs_custom, NONE, TT_C},
    {"softmax_last", TETHER_OP_SOFTMAX, 1, {2}, {{3, 10}}, 0, NULL, NONE, BOTH},
    {"softmax_axis1", TETHER_OP_SOFTMAX, 1, {3}, {{2, 3, 4}}, 0, a_axis1, NONE, BOTH},
    {"softmax_len1", TETHER_OP_SOFTMAX, 1, {2}, {{3, 1}}, 0, NULL, NONE, OCL},
    {"log_softmax_axis0", TETHER_OP_LOG_SOFTMAX, 1, {3}, {{3, 2, 2}}, 0, a_axis0, NONE, BOTH},
    {"max_pool_2x2", TETHER_OP_MAX_POOL, 1, {4}, {{1, 2, 6, 6}}, 0, tt_attrs_pool2, NONE, BOTH},
    {"max_pool_3x3_pad_ceil",
     TETHER_OP_MAX_POOL,
     1,
     {4},
     {{1, 2, 6, 7}},
     0,
     a_pool3_ceil,
     NONE,
     BOTH},
    {"avg_pool_ceil_exclude_pad",
     TETHER_OP_AVG_POOL,
     1,
     {4},
     {{1, 2, 6, 7}},
     0,
     a_pool3_ceil,
     NONE,
     BOTH},
    {"avg_pool_include_pad_asym",
     TETHER_OP_AVG_POOL,
     1,
     {4},
     {{2, 1, 5, 5}},
     0,
     a_avg_incl,
     NONE,
     BOTH},
    {"max_pool_dilated", TETHER_OP_MAX_POOL, 1, {4}, {{1, 1, 7, 8}}, 0, a_pool_dil, NONE, BOTH},
    {"global_avg_pool", TETHER_OP_GLOBAL_AVG_POOL, 1, {4}, {{2, 3, 4, 5}}, 0, NULL, NONE, BOTH},
    {"global_max_pool", TETHER_OP_GLOBAL_MAX_POOL, 1, {4}, {{2, 3, 4, 5}}, 0, NULL, NONE, BOTH},
    {"reshape_output_copy", TETHER_OP_RESHAPE, 1, {3}, {{2, 3, 4}}, 0, a_reshape, NONE, BOTH},
    {"reshape_alias", TETHER_OP_RESHAPE, 1, {3}, {{2, 3, 4}}, 0, a_reshape, TETHER_OP_RELU, BOTH},
    {"flatten_alias", TETHER_OP_FLATTEN, 1, {4}, {{2, 3, 2, 2}}, 0, NULL, TETHER_OP_TANH, BOTH},
    {"squeeze_alias", TETHER_OP_SQUEEZE, 1, {3}, {{2, 1, 3}}, 0, a_squeeze, TETHER_OP_NEG, BOTH},
    {"unsqueeze_alias", TETHER_OP_UNSQUEEZE, 1, {2}, {{2, 3}}, 0, a_unsqueeze, TETHER_OP_ABS, BOTH},
    {"transpose_nhwc", TETHER_OP_TRANSPOSE, 1, {4}, {{1, 3, 2, 4}}, 0, a_perm, NONE, BOTH},
    {"transpose_default", TETHER_OP_TRANSPOSE, 1, {3}, {{2, 3, 4}}, 0, NULL, NONE, BOTH},
    {"concat_axis1",
     TETHER_OP_CONCAT,
     3,
     {3, 3, 3},
     {{2, 1, 3}, {2, 2, 3}, {2, 3, 3}},
     0,
     a_axis1,
     NONE,
     BOTH},
    {"concat_axis0", TETHER_OP_CONCAT, 2, {2, 2}, {{1, 4}, {2, 4}}, 0, NULL, NONE, BOTH},
    {"pad_constant", TETHER_OP_PAD, 1, {3}, {{1, 2, 3}}, 0, a_padop, NONE, BOTH},
    {"batch_norm",
     TETHER_OP_BATCH_NORM,
     5,
     {4, 1, 1, 1, 1},
     {{2, 3, 2, 2}, {3}, {3}, {3}, {3}},
     16,
     NULL,
     NONE,
     BOTH},
    {"layer_norm_last_bias",
     TETHER_OP_LAYER_NORM,
     3,
     {3, 1, 1},
     {{2, 3, 8}, {8}, {8}},
     0,
     a_ln_last,
     NONE,
     BOTH},
    {"layer_norm_axis1",
     TETHER_OP_LAYER_NORM,
     2,
     {3, 2},
     {{2, 3, 4}, {3, 4}},
     0,
     a_axis1,
     NONE,
     BOTH},
    {"reduce_mean_hw", TETHER_OP_REDUCE_MEAN, 1, {4}, {{2, 3, 4, 5}}, 0, a_rm23, NONE, BOTH},
    {"reduce_mean_nokeep", TETHER_OP_REDUCE_MEAN, 1, {3}, {{2, 3, 4}}, 0, a_rm1_nokeep, NONE, BOTH},
    {"reduce_mean_outer_inner", TETHER_OP_REDUCE_MEAN, 1, {3}, {{3, 2, 4}}, 0, a_rm02, NONE, OCL},
    {"reduce_mean_all", TETHER_OP_REDUCE_MEAN, 1, {2}, {{3, 4}}, 0, NULL, NONE, BOTH},
    {"resize_nearest_x2", TETHER_OP_RESIZE_NEAREST, 1, {4}, {{1, 2, 3, 4}}, 0, NULL, NONE, BOTH},
    {"resize_nearest_2x3",
     TETHER_OP_RESIZE_NEAREST,
     1,
     {4},
     {{1, 1, 2, 2}},
     0,
     a_resize23,
     NONE,
     BOTH},
};

const size_t tt_num_op_cases = sizeof tt_op_cases / sizeof *tt_op_cases;
