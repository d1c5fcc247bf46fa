/*
 * Operator cases of the OpenCL layer kernels (compiler/src/codegen/emit_opencl_layers.c, issue
 * 27): conv_nd (1-D, 3-D), conv_transpose (1-D to 3-D: strides, pads, output_padding, dilations,
 * groups, with and without bias), einsum and the recurrent layers (rnn, gru, lstm: directions,
 * activations, clip, linear_before_reset, input_forget; the setters of op_cases_rnn.h, which the
 * table's expansion sees), grid_sample, triangular, diag_prod, dft and stft on float32, run by both
 * operator tests (TT_C and TT_OPENCL; test_opencl_codegen also runs them in half precision). Their
 * attribute setters and the rows (TT_OCL_LAYER_CASES, placed in tt_op_cases[]). Included by
 * op_cases.c only, last: after its NONE/BOTH macros, op_cases_data.h (L2, L3, the grid_sample,
 * dft and stft setters) and op_cases_rnn.h (tt_act, the recurrent setters).
 *
 * What must stay true: every row is float32 only (the OpenCL operator test builds float32
 * operands) and marked BOTH, so the OpenCL kernel is compared with the interpreter on exactly
 * the cases the C path runs.
 */
#ifndef TT_OP_CASES_OCL_H
#define TT_OP_CASES_OCL_H

#include "ops_common.h"

/* 1-D conv: stride 2, dilation 2, pads 2 and 1 */
static void a_ocl_conv1d(tether_ir_attrs *a) {
    a->nwin = 1;
    a->wstrides[0] = 2;
    a->wdilations[0] = 2;
    a->wpads[0] = 2;
    a->wpads[3] = 1;
}
/* 3-D conv in 2 groups: strides 1/2/1, dilation 2 in the first dimension, pads */
static void a_ocl_conv3d_g2(tether_ir_attrs *a) {
    a->nwin = 3;
    a->groups = 2;
    a->wstrides[1] = 2;
    a->wdilations[0] = 2;
    a->wpads[1] = 1;
    a->wpads[2] = 1;
    a->wpads[5] = 1;
}
/* 2-D transpose in 2 groups: strides 2, dilations 2/1, pads 1/0 0/1, output_padding 1 in H */
static void a_ocl_convt2d_g2(tether_ir_attrs *a) {
    a->nwin = 2;
    a->groups = 2;
    a->wstrides[0] = 2;
    a->wstrides[1] = 2;
    a->wdilations[0] = 2;
    a->wpads[0] = 1;
    a->wpads[4] = 1;
    a->wpads[3] = -1; /* output_padding 1 in H */
}
/* 1-D transpose: stride 3 (gaps between the taps), dilation 2, pads 2 and 2 */
static void a_ocl_convt1d(tether_ir_attrs *a) {
    a->nwin = 1;
    a->wstrides[0] = 3;
    a->wdilations[0] = 2;
    a->wpads[0] = 2;
    a->wpads[3] = 2;
}
/* 3-D transpose: strides 1/2/3, pads 0/1/0 */
static void a_ocl_convt3d(tether_ir_attrs *a) {
    a->nwin = 3;
    a->wstrides[1] = 2;
    a->wstrides[2] = 3;
    a->wpads[1] = 1;
    a->wpads[4] = 1;
}
/* einsum bij,bjk->bik */
static void a_ocl_einsum_bmm(tether_ir_attrs *a) {
    a->ints[0] = L3(1, 9, 10);
    a->ints[1] = L3(1, 10, 11);
    a->ints[2] = L3(1, 9, 11);
    a->nints = 3;
}
/* einsum ii->i (a diagonal) and ij-> (the sum of everything: a scalar) */
static void a_ocl_einsum_diag(tether_ir_attrs *a) {
    a->ints[0] = L2(9, 9);
    a->ints[1] = 9;
    a->nints = 2;
}
static void a_ocl_einsum_sum(tether_ir_attrs *a) {
    a->ints[0] = L2(9, 10);
    a->ints[1] = 0;
    a->nints = 2;
}

/* rnn bidirectional: relu forward, thresholded_relu(0.2) reverse, clip 2 */
static void a_ocl_rnn_bidir(tether_ir_attrs *a) {
    a->k = 3;
    a->mode = 2;
    a->max = 2.0f;
    a->ints[0] = tt_act(2, 0.0f);
    a->ints[1] = tt_act(5, 0.2f);
    a->ints[2] = a->ints[3] = 0;
    a->nints = 4;
}

/* lstm bidirectional with 70 units and gru with 67 (linear_before_reset): more units than the
 * OpenCL kernel's work-group of 64, so a lane computes two */
static void a_ocl_lstm_wide(tether_ir_attrs *a) {
    a->k = 70;
    a->mode = 2;
    for (int i = 0; i < 6; i++) {
        a->ints[i] = tt_act(i % 3 ? 1 : 0, 0.0f);
        a->ints[6 + i] = 0;
    }
    a->nints = 12;
}
static void a_ocl_gru_wide(tether_ir_attrs *a) {
    a->k = 67;
    a->mode = 4;
    a->ints[0] = tt_act(0, 0.0f);
    a->ints[1] = tt_act(1, 0.0f);
    a->ints[2] = a->ints[3] = 0;
    a->nints = 4;
}

/* clang-format off */
#define TT_OCL_LAYER_CASES \
    {"ocl_conv1d_bias", TETHER_OP_CONV_ND, 3, {3, 3, 1}, {{2, 3, 13}, {4, 3, 3}, {4}}, 0, a_ocl_conv1d, NONE, BOTH, NULL}, \
    {"ocl_conv3d_groups", TETHER_OP_CONV_ND, 2, {5, 5}, {{1, 4, 5, 6, 4}, {6, 2, 2, 3, 2}}, 0, a_ocl_conv3d_g2, NONE, BOTH, NULL}, \
    {"ocl_convt2d_groups", TETHER_OP_CONV_TRANSPOSE, 3, {4, 4, 1}, {{2, 4, 3, 4}, {4, 3, 3, 2}, {6}}, 0, a_ocl_convt2d_g2, NONE, BOTH, NULL}, \
    {"ocl_convt1d", TETHER_OP_CONV_TRANSPOSE, 2, {3, 3}, {{1, 3, 6}, {3, 2, 3}}, 0, a_ocl_convt1d, NONE, BOTH, NULL}, \
    {"ocl_convt3d_bias", TETHER_OP_CONV_TRANSPOSE, 3, {5, 5, 1}, {{1, 2, 2, 3, 2}, {2, 3, 2, 3, 3}, {3}}, 0, a_ocl_convt3d, NONE, BOTH, NULL}, \
    {"ocl_einsum_bmm", TETHER_OP_EINSUM, 2, {3, 3}, {{2, 3, 4}, {2, 4, 5}}, 0, a_ocl_einsum_bmm, NONE, BOTH, NULL}, \
    {"ocl_einsum_diag", TETHER_OP_EINSUM, 1, {2}, {{4, 4}}, 0, a_ocl_einsum_diag, NONE, BOTH, NULL}, \
    {"ocl_einsum_sum", TETHER_OP_EINSUM, 1, {2}, {{3, 5}}, 0, a_ocl_einsum_sum, NONE, BOTH, NULL}, \
    {"ocl_rnn_bidir", TETHER_OP_RNN, 4, {3, 3, 3, 2}, {{4, 2, 3}, {2, 3, 3}, {2, 3, 3}, {2, 6}}, 0, a_ocl_rnn_bidir, NONE, BOTH, NULL}, \
    {"ocl_gru_bidir_lbr_clip", TETHER_OP_GRU, 4, {3, 3, 3, 2}, {{4, 2, 3}, {2, 9, 3}, {2, 9, 3}, {2, 18}}, 0, a_gru_bidir_lbr_clip, NONE, BOTH, NULL}, \
    {"ocl_gru_forward", TETHER_OP_GRU, 3, {3, 3, 3}, {{5, 1, 2}, {1, 12, 2}, {1, 12, 4}}, 0, a_gru_fwd, NONE, BOTH, NULL}, \
    {"ocl_lstm_reverse_input_forget", TETHER_OP_LSTM, 4, {3, 3, 3, 2}, {{3, 2, 2}, {1, 12, 2}, {1, 12, 3}, {1, 24}}, 0, a_lstm_rev_forget, NONE, BOTH, NULL}, \
    {"ocl_lstm_wide_bidir", TETHER_OP_LSTM, 4, {3, 3, 3, 2}, {{3, 2, 2}, {2, 280, 2}, {2, 280, 70}, {2, 560}}, 0, a_ocl_lstm_wide, NONE, BOTH, NULL}, \
    {"ocl_gru_wide_lbr", TETHER_OP_GRU, 4, {3, 3, 3, 2}, {{4, 1, 3}, {1, 201, 3}, {1, 201, 67}, {1, 402}}, 0, a_ocl_gru_wide, NONE, BOTH, NULL}, \
    {"ocl_grid_sample_bicubic_reflection", TETHER_OP_GRID_SAMPLE, 2, {4, 4}, {{1, 2, 4, 5}, {1, 3, 2, 2}}, 0, a_grid_bicubic_reflect, NONE, BOTH, NULL}, \
    {"ocl_triangular", TETHER_OP_TRIANGULAR, 1, {3}, {{2, 4, 4}}, 0, NULL, NONE, BOTH, NULL}, \
    {"ocl_diag_prod", TETHER_OP_DIAG_PROD, 1, {3}, {{2, 3, 3}}, 0, NULL, NONE, BOTH, NULL}, \
    {"ocl_dft_inverse_complex", TETHER_OP_DFT, 1, {4}, {{2, 5, 3, 2}}, 0, a_dft, NONE, BOTH, NULL}, \
    {"ocl_stft_window_onesided", TETHER_OP_STFT, 2, {3, 1}, {{2, 20, 1}, {8}}, 0, a_stft, NONE, BOTH, NULL},
/* clang-format on */

#endif
