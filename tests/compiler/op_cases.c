/*
 * The one-node operator cases shared by the C backend's operator test (tests/compiler/test_ops.c)
 * and the OpenCL backend's (tests/opencl/test_opencl_codegen.c): one table, each case marked with
 * the backends whose test runs it. What must stay true: a case's operands are all graph inputs
 * (but tfidf's constant pool, op_cases_text.h), so the reference interpreter and the backend see
 * the same values; names are unique.
 */
#include <string.h>

#include "ops_common.h"
#include "tether/crt/dtype.h"

#define NONE TT_NONE
#define BOTH (TT_C | TT_OPENCL)
#define C    TT_C
#define OCL  TT_OPENCL

#include "op_cases_data.h"
#include "op_cases_math.h"
#include "op_cases_quant.h"
#include "op_cases_rnn.h"
#include "op_cases_misc.h"
#include "op_cases_dynamic.h"
#include "op_cases_text.h"
#include "op_cases_qelt.h"
#include "op_cases_ocl.h" /* after op_cases_data.h and op_cases_rnn.h */

/* tfidf's constant operands (op_cases_text.h) */
/* unigrams {0, 1, -1, 3}, bigrams {(0,1) (1,-1) (2,2)}, trigram {(0,0,0)}: 8 n-grams */
static const int64_t tt_tfidf_pool[13] = {0, 1, -1, 3, 0, 1, 1, -1, 2, 2, 0, 0, 0};
static const int64_t tt_tfidf_counts[3] = {0, 4, 10};
static const int64_t tt_tfidf_indexes[8] = {7, 6, 5, 4, 3, 2, 1, 0};
static const float tt_tfidf_weights[8] = {0.5f, 1.5f, 2.0f, 0.25f, 3.0f, 1.0f, 0.75f, 2.5f};

int tt_tfidf_operands(tether_ir_graph *g, int *in, int with_w) {
    int64_t sp = 13, sc = 3, si = 8;
    tether_ir_add_constant(g, "pool", TETHER_INT64, 1, &sp, tt_tfidf_pool, sizeof tt_tfidf_pool,
                           &in[0]);
    tether_ir_add_constant(g, "counts", TETHER_INT64, 1, &sc, tt_tfidf_counts,
                           sizeof tt_tfidf_counts, &in[1]);
    tether_ir_add_constant(g, "indexes", TETHER_INT64, 1, &si, tt_tfidf_indexes,
                           sizeof tt_tfidf_indexes, &in[2]);
    if (with_w) {
        tether_ir_add_constant(g, "weights", TETHER_FLOAT32, 1, &si, tt_tfidf_weights,
                               sizeof tt_tfidf_weights, &in[3]);
    }
    return with_w ? 4 : 3;
}

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
static void a_ignore7(tether_ir_attrs *a) {
    a->ints[0] = 7;
    a->nints = 1;
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
static void a_to_int32(tether_ir_attrs *a) {
    a->to = TETHER_INT32;
}
static void a_to_f16(tether_ir_attrs *a) {
    a->to = TETHER_DTYPE(kDLFloat, 16);
}
static void a_to_bf16(tether_ir_attrs *a) {
    a->to = TETHER_DTYPE(kDLBfloat, 16);
}
static void a_to_f32(tether_ir_attrs *a) {
    a->to = TETHER_FLOAT32;
}
static void a_to_bool(tether_ir_attrs *a) {
    a->to = TETHER_BOOL;
}
static void a_to_int8(tether_ir_attrs *a) {
    a->to = TETHER_INT8;
}
static void a_to_uint8(tether_ir_attrs *a) {
    a->to = TETHER_UINT8;
}
static void a_isinf_pos(tether_ir_attrs *a) {
    a->alpha = 0.0f;
}
static void a_padop_int(tether_ir_attrs *a) {
    a_padop(a);
    a->value = -3.5f;
}

static void a_rm02(tether_ir_attrs *a) {
    a->nints = 2;
    a->ints[0] = 0;
    a->ints[1] = -1;
}
/* N-D windows: pads begin..., end... */
static void a_conv3d(tether_ir_attrs *a) {
    a->nwin = 3;
    a->wstrides[1] = 2;
    a->wdilations[2] = 2;
    a->wpads[0] = 1;
    a->wpads[2] = 1;
    a->wpads[4] = 1;
}
static void a_conv1d_g2(tether_ir_attrs *a) {
    a->nwin = 1;
    a->groups = 2;
    a->wstrides[0] = 2;
    a->wdilations[0] = 2;
    a->wpads[0] = 1;
    a->wpads[3] = 2;
}
static void a_convt2d(tether_ir_attrs *a) {
    a->nwin = 2;
    a->wstrides[0] = 2;
    a->wstrides[1] = 3;
    a->wdilations[1] = 2;
    a->wpads[0] = 1;
    a->wpads[4] = -1; /* output_padding 1 in W */
}
static void a_convt1d_g2(tether_ir_attrs *a) {
    a->nwin = 1;
    a->groups = 2;
    a->wstrides[0] = 3;
    a->wpads[0] = 1;
}
static void a_convt3d(tether_ir_attrs *a) {
    a->nwin = 3;
    a->wstrides[0] = 2;
    a->wstrides[2] = 2;
    a->wpads[5] = 1;
}
static void a_r1(tether_ir_attrs *a) {
    a->nints = 1;
    a->ints[0] = 1;
}
static void a_r0_nokeep(tether_ir_attrs *a) {
    a->nints = 2;
    a->ints[0] = 0;
    a->ints[1] = 2;
    a->keepdims = false;
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
     BOTH,
     NULL},
    {"conv_1x1_nobias",
     TETHER_OP_CONV2D,
     2,
     {4, 4},
     {{2, 5, 4, 4}, {6, 5, 1, 1}},
     0,
     NULL,
     NONE,
     BOTH,
     NULL},
    {"conv_stride_gt_kernel",
     TETHER_OP_CONV2D,
     3,
     {4, 4, 1},
     {{1, 2, 9, 9}, {3, 2, 2, 2}, {3}},
     0,
     a_stride3,
     NONE,
     BOTH,
     NULL},
    {"conv_asym_pads_dilation",
     TETHER_OP_CONV2D,
     3,
     {4, 4, 1},
     {{1, 2, 7, 6}, {2, 2, 3, 2}, {2}},
     0,
     a_asym_dil,
     NONE,
     BOTH,
     NULL},
    {"conv_depthwise",
     TETHER_OP_CONV2D,
     3,
     {4, 4, 1},
     {{1, 4, 6, 6}, {4, 1, 3, 3}, {4}},
     0,
     a_depthwise,
     NONE,
     BOTH,
     NULL},
    {"conv_groups2",
     TETHER_OP_CONV2D,
     2,
     {4, 4},
     {{1, 4, 5, 5}, {6, 2, 3, 3}},
     0,
     a_groups2,
     NONE,
     BOTH,
     NULL},
    {"conv_fused_residual_relu",
     TETHER_OP_CONV2D,
     4,
     {4, 4, 1, 4},
     {{1, 2, 5, 5}, {3, 2, 3, 3}, {3}, {1, 3, 5, 5}},
     0,
     a_conv_fused,
     NONE,
     BOTH,
     NULL},
    {"conv_rows_stride2x1_asym_dilated",
     TETHER_OP_CONV2D,
     3,
     {4, 4, 1},
     {{1, 2, 9, 12}, {3, 2, 3, 3}, {3}},
     0,
     a_rows,
     NONE,
     C,
     NULL},
    {"conv_rows_fused_residual_relu",
     TETHER_OP_CONV2D,
     4,
     {4, 4, 1, 4},
     {{1, 2, 4, 9}, {3, 2, 3, 3}, {3}, {1, 3, 4, 9}},
     0,
     a_conv_fused,
     NONE,
     C,
     NULL},
    {"conv_1x1_clip",
     TETHER_OP_CONV2D,
     3,
     {4, 4, 1},
     {{1, 3, 2, 3}, {2, 3, 1, 1}, {2}},
     0,
     a_conv_clip,
     NONE,
     BOTH,
     NULL},
    {"conv_rows_hswish",
     TETHER_OP_CONV2D,
     3,
     {4, 4, 1},
     {{1, 2, 9, 12}, {5, 2, 3, 3}, {5}},
     0,
     a_conv_hswish,
     NONE,
     OCL,
     NULL},
    {"conv_1x1_input",
     TETHER_OP_CONV2D,
     2,
     {4, 4},
     {{1, 1, 1, 1}, {1, 1, 1, 1}},
     0,
     NULL,
     NONE,
     OCL,
     NULL},
    {"dense_bias", TETHER_OP_DENSE, 3, {2, 2, 1}, {{3, 5}, {5, 4}, {4}}, 0, NULL, NONE, BOTH, NULL},
    {"dense_transb_alpha_beta_col",
     TETHER_OP_DENSE,
     3,
     {2, 2, 2},
     {{3, 6}, {7, 6}, {3, 1}},
     0,
     a_transb_ab,
     NONE,
     BOTH,
     NULL},
    {"dense_transb_vec4_row_c",
     TETHER_OP_DENSE,
     3,
     {2, 2, 2},
     {{2, 12}, {5, 12}, {1, 5}},
     0,
     a_transb,
     NONE,
     OCL,
     NULL},
    {"dense_transa_scalar_c",
     TETHER_OP_DENSE,
     3,
     {2, 2, 0},
     {{5, 2}, {5, 3}, {0}},
     0,
     a_transa,
     NONE,
     BOTH,
     NULL},
    {"dense_transab_full_c_tanh",
     TETHER_OP_DENSE,
     3,
     {2, 2, 2},
     {{4, 3}, {2, 4}, {3, 2}},
     0,
     a_transab_tanh,
     NONE,
     OCL,
     NULL},
    {"dense_sigmoid",
     TETHER_OP_DENSE,
     2,
     {2, 2},
     {{2, 9}, {8, 9}},
     0,
     a_dense_sig,
     NONE,
     BOTH,
     NULL},
    {"dense_residual_leaky",
     TETHER_OP_DENSE,
     4,
     {2, 2, 1, 2},
     {{2, 3}, {3, 4}, {4}, {2, 4}},
     0,
     a_dense_res,
     NONE,
     BOTH,
     NULL},
    {"matmul_batch_rank2_b",
     TETHER_OP_MATMUL,
     2,
     {3, 2},
     {{2, 3, 4}, {4, 5}},
     0,
     NULL,
     NONE,
     BOTH,
     NULL},
    {"matmul_broadcast_both",
     TETHER_OP_MATMUL,
     2,
     {4, 3},
     {{2, 1, 3, 4}, {3, 4, 2}},
     0,
     NULL,
     NONE,
     BOTH,
     NULL},
    {"matmul_vector_matrix",
     TETHER_OP_MATMUL,
     2,
     {1, 3},
     {{4}, {2, 4, 3}},
     0,
     NULL,
     NONE,
     BOTH,
     NULL},
    {"matmul_matrix_vector",
     TETHER_OP_MATMUL,
     2,
     {3, 1},
     {{2, 3, 4}, {4}},
     0,
     NULL,
     NONE,
     BOTH,
     NULL},
    {"matmul_dot", TETHER_OP_MATMUL, 2, {1, 1}, {{5}, {5}}, 0, NULL, NONE, BOTH, NULL},
    {"matmul_residual_hswish",
     TETHER_OP_MATMUL,
     3,
     {2, 2, 2},
     {{3, 4}, {4, 2}, {3, 2}},
     0,
     a_matmul_res,
     NONE,
     BOTH,
     NULL},
    {"add_same", TETHER_OP_ADD, 2, {3, 3}, {{2, 3, 4}, {2, 3, 4}}, 0, NULL, NONE, BOTH, NULL},
    {"add_middle_broadcast",
     TETHER_OP_ADD,
     2,
     {3, 2},
     {{2, 1, 4}, {3, 1}},
     0,
     NULL,
     NONE,
     OCL,
     NULL},
    {"sub_rank1", TETHER_OP_SUB, 2, {3, 1}, {{2, 3, 4}, {4}}, 0, NULL, NONE, BOTH, NULL},
    {"mul_scalar", TETHER_OP_MUL, 2, {3, 0}, {{2, 3, 4}, {0}}, 0, NULL, NONE, BOTH, NULL},
    {"mul_scalar_left", TETHER_OP_MUL, 2, {1, 2}, {{1}, {3, 5}}, 0, NULL, NONE, BOTH, NULL},
    {"div_outer", TETHER_OP_DIV, 2, {2, 2}, {{3, 1}, {1, 4}}, 2, NULL, NONE, BOTH, NULL},
    {"pow_positive", TETHER_OP_POW, 2, {2, 1}, {{3, 4}, {4}}, 3, NULL, NONE, BOTH, NULL},
    {"add_large", TETHER_OP_ADD, 2, {2, 1}, {{5, 131}, {131}}, 0, NULL, NONE, OCL, NULL},
    {"relu", TETHER_OP_RELU, 1, {3}, {{2, 3, 5}}, 0, NULL, NONE, BOTH, NULL},
    {"leaky_relu", TETHER_OP_LEAKY_RELU, 1, {2}, {{4, 5}}, 0, a_leaky, NONE, BOTH, NULL},
    {"prelu_channel",
     TETHER_OP_PRELU,
     2,
     {4, 3},
     {{1, 3, 2, 3}, {3, 1, 1}},
     0,
     NULL,
     NONE,
     BOTH,
     NULL},
    {"clip_relu6", TETHER_OP_CLIP, 1, {2}, {{4, 5}}, 0, a_relu6, NONE, BOTH, NULL},
    {"sigmoid", TETHER_OP_SIGMOID, 1, {1}, {{17}}, 0, NULL, NONE, BOTH, NULL},
    {"tanh", TETHER_OP_TANH, 1, {1}, {{17}}, 0, NULL, NONE, BOTH, NULL},
    {"hard_sigmoid", TETHER_OP_HARD_SIGMOID, 1, {1}, {{17}}, 0, a_hsig, NONE, BOTH, NULL},
    {"hard_swish", TETHER_OP_HARD_SWISH, 1, {2}, {{3, 7}}, 0, NULL, NONE, BOTH, NULL},
    {"exp", TETHER_OP_EXP, 1, {1}, {{9}}, 0, NULL, NONE, BOTH, NULL},
    {"log", TETHER_OP_LOG, 1, {1}, {{9}}, 1, NULL, NONE, BOTH, NULL},
    {"sqrt", TETHER_OP_SQRT, 1, {1}, {{9}}, 1, NULL, NONE, BOTH, NULL},
    {"neg", TETHER_OP_NEG, 1, {1}, {{9}}, 0, NULL, NONE, BOTH, NULL},
    {"abs", TETHER_OP_ABS, 1, {0}, {{0}}, 0, NULL, NONE, BOTH, NULL},
    {"erf", TETHER_OP_ERF, 1, {2}, {{3, 5}}, 0, NULL, NONE, BOTH, NULL},
    TT_MATH_CASES /* op_cases_math.h */
    /* examples/custom_ops' swish (C implementation) on its declared NHWC image [1, H, W, 4]; the
     * graph's tensor is the image itself, so C only (OpenCL keeps images between kernels) */
    {"custom_swish",
     TETHER_OP_CUSTOM,
     1,
     {4},
     {{1, 3, 5, 4}},
     0,
     tt_attrs_custom,
     NONE,
     TT_C,
     NULL},
    {"softmax_last", TETHER_OP_SOFTMAX, 1, {2}, {{3, 10}}, 0, NULL, NONE, BOTH, NULL},
    {"softmax_axis1", TETHER_OP_SOFTMAX, 1, {3}, {{2, 3, 4}}, 0, a_axis1, NONE, BOTH, NULL},
    {"softmax_len1", TETHER_OP_SOFTMAX, 1, {2}, {{3, 1}}, 0, NULL, NONE, OCL, NULL},
    {"log_softmax_axis0", TETHER_OP_LOG_SOFTMAX, 1, {3}, {{3, 2, 2}}, 0, a_axis0, NONE, BOTH, NULL},
    {"max_pool_2x2",
     TETHER_OP_MAX_POOL,
     1,
     {4},
     {{1, 2, 6, 6}},
     0,
     tt_attrs_pool2,
     NONE,
     BOTH,
     NULL},
    {"max_pool_3x3_pad_ceil",
     TETHER_OP_MAX_POOL,
     1,
     {4},
     {{1, 2, 6, 7}},
     0,
     a_pool3_ceil,
     NONE,
     BOTH,
     NULL},
    {"avg_pool_ceil_exclude_pad",
     TETHER_OP_AVG_POOL,
     1,
     {4},
     {{1, 2, 6, 7}},
     0,
     a_pool3_ceil,
     NONE,
     BOTH,
     NULL},
    {"avg_pool_include_pad_asym",
     TETHER_OP_AVG_POOL,
     1,
     {4},
     {{2, 1, 5, 5}},
     0,
     a_avg_incl,
     NONE,
     BOTH,
     NULL},
    {"max_pool_dilated",
     TETHER_OP_MAX_POOL,
     1,
     {4},
     {{1, 1, 7, 8}},
     0,
     a_pool_dil,
     NONE,
     BOTH,
     NULL},
    {"global_avg_pool",
     TETHER_OP_GLOBAL_AVG_POOL,
     1,
     {4},
     {{2, 3, 4, 5}},
     0,
     NULL,
     NONE,
     BOTH,
     NULL},
    {"global_max_pool",
     TETHER_OP_GLOBAL_MAX_POOL,
     1,
     {4},
     {{2, 3, 4, 5}},
     0,
     NULL,
     NONE,
     BOTH,
     NULL},
    {"reshape_output_copy", TETHER_OP_RESHAPE, 1, {3}, {{2, 3, 4}}, 0, a_reshape, NONE, BOTH, NULL},
    {"reshape_alias",
     TETHER_OP_RESHAPE,
     1,
     {3},
     {{2, 3, 4}},
     0,
     a_reshape,
     TETHER_OP_RELU,
     BOTH,
     NULL},
    {"flatten_alias",
     TETHER_OP_FLATTEN,
     1,
     {4},
     {{2, 3, 2, 2}},
     0,
     NULL,
     TETHER_OP_TANH,
     BOTH,
     NULL},
    {"squeeze_alias",
     TETHER_OP_SQUEEZE,
     1,
     {3},
     {{2, 1, 3}},
     0,
     a_squeeze,
     TETHER_OP_NEG,
     BOTH,
     NULL},
    {"unsqueeze_alias",
     TETHER_OP_UNSQUEEZE,
     1,
     {2},
     {{2, 3}},
     0,
     a_unsqueeze,
     TETHER_OP_ABS,
     BOTH,
     NULL},
    {"transpose_nhwc", TETHER_OP_TRANSPOSE, 1, {4}, {{1, 3, 2, 4}}, 0, a_perm, NONE, BOTH, NULL},
    {"transpose_default", TETHER_OP_TRANSPOSE, 1, {3}, {{2, 3, 4}}, 0, NULL, NONE, BOTH, NULL},
    {"concat_axis1",
     TETHER_OP_CONCAT,
     3,
     {3, 3, 3},
     {{2, 1, 3}, {2, 2, 3}, {2, 3, 3}},
     0,
     a_axis1,
     NONE,
     BOTH,
     NULL},
    {"concat_axis0", TETHER_OP_CONCAT, 2, {2, 2}, {{1, 4}, {2, 4}}, 0, NULL, NONE, BOTH, NULL},
    {"pad_constant", TETHER_OP_PAD, 1, {3}, {{1, 2, 3}}, 0, a_padop, NONE, BOTH, NULL},
    {"batch_norm",
     TETHER_OP_BATCH_NORM,
     5,
     {4, 1, 1, 1, 1},
     {{2, 3, 2, 2}, {3}, {3}, {3}, {3}},
     16,
     NULL,
     NONE,
     BOTH,
     NULL},
    {"layer_norm_last_bias",
     TETHER_OP_LAYER_NORM,
     3,
     {3, 1, 1},
     {{2, 3, 8}, {8}, {8}},
     0,
     a_ln_last,
     NONE,
     BOTH,
     NULL},
    {"layer_norm_axis1",
     TETHER_OP_LAYER_NORM,
     2,
     {3, 2},
     {{2, 3, 4}, {3, 4}},
     0,
     a_axis1,
     NONE,
     BOTH,
     NULL},
    {"reduce_mean_hw", TETHER_OP_REDUCE_MEAN, 1, {4}, {{2, 3, 4, 5}}, 0, a_rm23, NONE, BOTH, NULL},
    {"reduce_mean_nokeep",
     TETHER_OP_REDUCE_MEAN,
     1,
     {3},
     {{2, 3, 4}},
     0,
     a_rm1_nokeep,
     NONE,
     BOTH,
     NULL},
    {"reduce_mean_outer_inner",
     TETHER_OP_REDUCE_MEAN,
     1,
     {3},
     {{3, 2, 4}},
     0,
     a_rm02,
     NONE,
     OCL,
     NULL},
    {"reduce_mean_all", TETHER_OP_REDUCE_MEAN, 1, {2}, {{3, 4}}, 0, NULL, NONE, BOTH, NULL},
    {"resize_nearest_x2",
     TETHER_OP_RESIZE_NEAREST,
     1,
     {4},
     {{1, 2, 3, 4}},
     0,
     NULL,
     NONE,
     BOTH,
     NULL},
    {"resize_nearest_2x3",
     TETHER_OP_RESIZE_NEAREST,
     1,
     {4},
     {{1, 1, 2, 2}},
     0,
     a_resize23,
     NONE,
     BOTH,
     NULL},
    TT_DATA_CASES /* op_cases_data.h */
    /* element types (the typing rules of ops.def; inputs drawn per type by test_ops.c) */
    {"cast_f32_int32", TETHER_OP_CAST, 1, {2}, {{3, 5}}, 0, a_to_int32, NONE, C, "float32"},
    TT_RNN_CASES /* op_cases_rnn.h: the recurrent layers and reverse_sequence */
    {"cast_f32_f16", TETHER_OP_CAST, 1, {1}, {{17}}, 0, a_to_f16, NONE, C, "float32"},
    {"cast_f16_f32", TETHER_OP_CAST, 1, {1}, {{17}}, 0, a_to_f32, NONE, C, "float16"},
    {"cast_f32_bf16", TETHER_OP_CAST, 1, {1}, {{17}}, 0, a_to_bf16, NONE, C, "float32"},
    {"cast_f64_f16", TETHER_OP_CAST, 1, {1}, {{17}}, 0, a_to_f16, NONE, C, "float64"},
    {"cast_int64_f32", TETHER_OP_CAST, 1, {1}, {{9}}, 0, a_to_f32, NONE, C, "int64"},
    {"cast_int32_bool", TETHER_OP_CAST, 1, {1}, {{9}}, 0, a_to_bool, NONE, C, "int32"},
    {"cast_int64_int8", TETHER_OP_CAST, 1, {1}, {{9}}, 0, a_to_int8, NONE, C, "int64"},
    {"cast_bool_uint8", TETHER_OP_CAST, 1, {1}, {{9}}, 0, a_to_uint8, NONE, C, "bool"},
    {"cast_f64_uint8", TETHER_OP_CAST, 1, {1}, {{9}}, 0, a_to_uint8, NONE, C, "float64"},
    {"equal_int32", TETHER_OP_EQUAL, 2, {2, 1}, {{3, 4}, {4}}, 0, NULL, NONE, C, "int32"},
    {"equal_bool", TETHER_OP_EQUAL, 2, {1, 1}, {{8}, {8}}, 0, NULL, NONE, C, "bool"},
    {"less_f32", TETHER_OP_LESS, 2, {2, 2}, {{3, 4}, {3, 4}}, 0, NULL, NONE, C, NULL},
    {"less_equal_int64", TETHER_OP_LESS_EQUAL, 2, {1, 1}, {{7}, {7}}, 0, NULL, NONE, C, "int64"},
    {"greater_uint8", TETHER_OP_GREATER, 2, {2, 0}, {{2, 5}, {0}}, 0, NULL, NONE, C, "uint8"},
    {"greater_equal_f64",
     TETHER_OP_GREATER_EQUAL,
     2,
     {1, 1},
     {{7}, {7}},
     0,
     NULL,
     NONE,
     C,
     "float64"},
    {"and", TETHER_OP_AND, 2, {2, 1}, {{2, 4}, {4}}, 0, NULL, NONE, C, "bool"},
    {"or", TETHER_OP_OR, 2, {1, 1}, {{8}, {8}}, 0, NULL, NONE, C, "bool"},
    {"xor", TETHER_OP_XOR, 2, {1, 1}, {{8}, {8}}, 0, NULL, NONE, C, "bool"},
    {"not", TETHER_OP_NOT, 1, {1}, {{8}}, 0, NULL, NONE, C, "bool"},
    {"bitshift_left_uint8",
     TETHER_OP_BITSHIFT_LEFT,
     2,
     {1, 1},
     {{9}, {9}},
     0,
     NULL,
     NONE,
     C,
     "uint8"},
    {"bitshift_right_uint32",
     TETHER_OP_BITSHIFT_RIGHT,
     2,
     {1, 1},
     {{9}, {9}},
     0,
     NULL,
     NONE,
     C,
     "uint32"},
    {"mod_int32", TETHER_OP_MOD, 2, {1, 1}, {{16}, {16}}, 0, NULL, NONE, C, "int32"},
    {"mod_f32", TETHER_OP_MOD, 2, {1, 1}, {{16}, {16}}, 0, NULL, NONE, BOTH, NULL},
    {"fmod_int64", TETHER_OP_FMOD, 2, {1, 1}, {{16}, {16}}, 0, NULL, NONE, C, "int64"},
    {"fmod_f32", TETHER_OP_FMOD, 2, {1, 1}, {{16}, {16}}, 2, NULL, NONE, BOTH, NULL},
    {"max_int16", TETHER_OP_MAX, 2, {2, 1}, {{3, 4}, {4}}, 0, NULL, NONE, C, "int16"},
    {"max_f32", TETHER_OP_MAX, 2, {1, 1}, {{9}, {9}}, 0, NULL, NONE, BOTH, NULL},
    {"min_uint64", TETHER_OP_MIN, 2, {1, 1}, {{9}, {9}}, 0, NULL, NONE, C, "uint64"},
    {"min_f32", TETHER_OP_MIN, 2, {1, 1}, {{9}, {9}}, 0, NULL, NONE, BOTH, NULL},
    {"sign_int8", TETHER_OP_SIGN, 1, {1}, {{9}}, 0, NULL, NONE, C, "int8"},
    {"sign_f32", TETHER_OP_SIGN, 1, {1}, {{9}}, 0, NULL, NONE, BOTH, NULL},
    {"isnan_f32", TETHER_OP_ISNAN, 1, {1}, {{9}}, 0, NULL, NONE, C, NULL},
    {"isinf_f64", TETHER_OP_ISINF, 1, {1}, {{9}}, 0, a_isinf_pos, NONE, C, "float64"},
    {"where_f32",
     TETHER_OP_WHERE,
     3,
     {2, 1, 2},
     {{3, 4}, {4}, {3, 1}},
     0,
     NULL,
     NONE,
     C,
     "bool float32"},
    {"where_int64", TETHER_OP_WHERE, 3, {1, 1, 1}, {{6}, {6}, {6}}, 0, NULL, NONE, C, "bool int64"},
    {"add_int8_wraps", TETHER_OP_ADD, 2, {1, 1}, {{16}, {16}}, 0, NULL, NONE, C, "int8"},
    {"sub_uint16", TETHER_OP_SUB, 2, {1, 1}, {{16}, {16}}, 0, NULL, NONE, C, "uint16"},
    {"mul_int64", TETHER_OP_MUL, 2, {2, 1}, {{2, 8}, {8}}, 0, NULL, NONE, C, "int64"},
    {"div_int32", TETHER_OP_DIV, 2, {1, 1}, {{16}, {16}}, 0, NULL, NONE, C, "int32"},
    {"div_uint8", TETHER_OP_DIV, 2, {1, 1}, {{16}, {16}}, 0, NULL, NONE, C, "uint8"},
    {"neg_int32", TETHER_OP_NEG, 1, {1}, {{9}}, 0, NULL, NONE, C, "int32"},
    {"abs_int16", TETHER_OP_ABS, 1, {1}, {{9}}, 0, NULL, NONE, C, "int16"},
    {"relu_int64", TETHER_OP_RELU, 1, {1}, {{9}}, 0, NULL, NONE, C, "int64"},
    {"add_f16", TETHER_OP_ADD, 2, {1, 1}, {{17}, {17}}, 0, NULL, NONE, C, "float16"},
    {"mul_bf16", TETHER_OP_MUL, 2, {1, 1}, {{17}, {17}}, 0, NULL, NONE, C, "bfloat16"},
    {"sub_f64", TETHER_OP_SUB, 2, {2, 1}, {{2, 8}, {8}}, 0, NULL, NONE, C, "float64"},
    {"exp_f64", TETHER_OP_EXP, 1, {1}, {{9}}, 0, NULL, NONE, C, "float64"},
    {"sigmoid_f16", TETHER_OP_SIGMOID, 1, {1}, {{9}}, 0, NULL, NONE, C, "float16"},
    {"hard_swish_f64", TETHER_OP_HARD_SWISH, 1, {1}, {{9}}, 0, NULL, NONE, C, "float64"},
    {"transpose_int64", TETHER_OP_TRANSPOSE, 1, {4}, {{1, 3, 2, 4}}, 0, a_perm, NONE, C, "int64"},
    {"concat_bool", TETHER_OP_CONCAT, 2, {2, 2}, {{2, 1}, {2, 3}}, 0, a_axis1, NONE, C, "bool"},
    {"pad_int32", TETHER_OP_PAD, 1, {3}, {{1, 2, 3}}, 0, a_padop_int, NONE, C, "int32"},
    {"pad_f16", TETHER_OP_PAD, 1, {3}, {{1, 2, 3}}, 0, a_padop_int, NONE, C, "float16"},
    {"reshape_uint8", TETHER_OP_RESHAPE, 1, {3}, {{2, 3, 4}}, 0, a_reshape, NONE, C, "uint8"},
    {"flatten_f64_alias",
     TETHER_OP_FLATTEN,
     1,
     {3},
     {{2, 3, 4}},
     0,
     NULL,
     TETHER_OP_NEG,
     C,
     "float64"},
    {"conv_nd_3d",
     TETHER_OP_CONV_ND,
     3,
     {5, 5, 1},
     {{1, 2, 4, 5, 6}, {3, 2, 2, 3, 2}, {3}},
     0,
     a_conv3d,
     NONE,
     C,
     NULL},
    {"conv_nd_1d_groups",
     TETHER_OP_CONV_ND,
     2,
     {3, 3},
     {{2, 4, 9}, {6, 2, 3}},
     0,
     a_conv1d_g2,
     NONE,
     C,
     NULL},
    {"conv_transpose_2d",
     TETHER_OP_CONV_TRANSPOSE,
     3,
     {4, 4, 1},
     {{1, 2, 3, 4}, {2, 3, 3, 3}, {3}},
     0,
     a_convt2d,
     NONE,
     C,
     NULL},
    {"conv_transpose_1d_groups",
     TETHER_OP_CONV_TRANSPOSE,
     2,
     {3, 3},
     {{2, 4, 5}, {4, 1, 3}},
     0,
     a_convt1d_g2,
     NONE,
     C,
     NULL},
    {"conv_transpose_3d",
     TETHER_OP_CONV_TRANSPOSE,
     3,
     {5, 5, 1},
     {{1, 1, 2, 3, 2}, {1, 2, 2, 2, 3}, {2}},
     0,
     a_convt3d,
     NONE,
     C,
     NULL},
    {"reduce_sum_hw", TETHER_OP_REDUCE_SUM, 1, {4}, {{2, 3, 4, 5}}, 0, a_rm23, NONE, BOTH, NULL},
    {"reduce_max_c", TETHER_OP_REDUCE_MAX, 1, {3}, {{2, 3, 4}}, 0, a_r1, NONE, BOTH, NULL},
    {"reduce_min_outer",
     TETHER_OP_REDUCE_MIN,
     1,
     {3},
     {{3, 2, 4}},
     0,
     a_r0_nokeep,
     NONE,
     BOTH,
     NULL},
    {"reduce_prod_all", TETHER_OP_REDUCE_PROD, 1, {2}, {{3, 4}}, 1, NULL, NONE, BOTH, NULL},
    {"reduce_l1_c", TETHER_OP_REDUCE_L1, 1, {3}, {{2, 3, 4}}, 0, a_r1, NONE, BOTH, NULL},
    {"reduce_l2_hw", TETHER_OP_REDUCE_L2, 1, {4}, {{2, 3, 4, 5}}, 0, a_rm23, NONE, BOTH, NULL},
    {"reduce_log_sum_c", TETHER_OP_REDUCE_LOG_SUM, 1, {3}, {{2, 3, 4}}, 1, a_r1, NONE, BOTH, NULL},
    {"reduce_log_sum_exp_outer",
     TETHER_OP_REDUCE_LOG_SUM_EXP,
     1,
     {3},
     {{3, 2, 4}},
     0,
     a_r0_nokeep,
     NONE,
     BOTH,
     NULL},
    {"reduce_sum_square_all",
     TETHER_OP_REDUCE_SUM_SQUARE,
     1,
     {2},
     {{3, 4}},
     0,
     NULL,
     NONE,
     BOTH,
     NULL},
    {"hardmax_axis1", TETHER_OP_HARDMAX, 1, {3}, {{2, 5, 3}}, 0, a_axis1, NONE, BOTH, NULL},
    /* clang-format off */
    TT_QUANT_CASES   /* op_cases_quant.h */
    TT_MISC_CASES    /* op_cases_misc.h */
    TT_DYNAMIC_CASES /* op_cases_dynamic.h */
    TT_TEXT_CASES /* op_cases_text.h: tfidf */
    TT_QELT_CASES /* op_cases_qelt.h: qadd, qmul, qlut, qmax_pool, qavg_pool */
    TT_OCL_LAYER_CASES /* op_cases_ocl.h: conv_nd, conv_transpose, einsum on OpenCL (wt27t) */
    /* clang-format on */
};

const size_t tt_num_op_cases = sizeof tt_op_cases / sizeof *tt_op_cases;
