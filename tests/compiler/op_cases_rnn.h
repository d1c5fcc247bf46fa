/*
 * The operator cases of the recurrent layers (rnn, gru, lstm) and reverse_sequence for
 * op_cases.c's table: attribute setters and the rows (TT_RNN_CASES, placed in tt_op_cases[]).
 * Included by op_cases.c only, after its NONE/C macros. Each case runs the interpreter against the
 * generated C (both ABIs); the values themselves are checked against numpy in
 * tests/onnx/test_onnx_rnn.py's models.
 *
 * What must stay true: sequence lengths are drawn unsigned ([0, 40], test_ops.c), so a time
 * extent of 41 keeps every one in range; float inputs beside them are drawn positive (no NaN).
 */
#ifndef TT_OP_CASES_RNN_H
#define TT_OP_CASES_RNN_H

#include <float.h>
#include <string.h>

#include "ops_common.h"

/* activation code c with alpha al as ops.def packs it; beta b's bits */
static int64_t tt_act(int c, float al) {
    uint32_t u;
    memcpy(&u, &al, sizeof u);
    return (int64_t)c + 256 * (int64_t)u;
}
static int64_t tt_fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (int64_t)u;
}

/* codes (compiler/src/internal.h): sigmoid 0, tanh 1, relu 2, affine 3, leaky_relu 4,
 * thresholded_relu 5, scaled_tanh 6, hard_sigmoid 7, elu 8, softsign 9, softplus 10 */
static void a_rnn_rev_softsign(tether_ir_attrs *a) { /* reverse, one activation */
    a->k = 3;
    a->mode = 1;
    a->ints[0] = tt_act(9, 0.0f);
    a->ints[1] = 0;
    a->nints = 2;
}
static void a_gru_bidir_lbr_clip(tether_ir_attrs *a) {
    a->k = 3;
    a->mode = 2 + 4;
    a->max = 0.7f;
    a->ints[0] = tt_act(7, 0.3f); /* forward: hard_sigmoid(0.3, 0.4), leaky_relu(0.1) */
    a->ints[1] = tt_act(4, 0.1f);
    a->ints[2] = tt_act(0, 0.0f); /* reverse: sigmoid, softplus */
    a->ints[3] = tt_act(10, 0.0f);
    a->ints[4] = tt_fbits(0.4f);
    a->ints[5] = a->ints[6] = a->ints[7] = 0;
    a->nints = 8;
}
static void a_gru_fwd(tether_ir_attrs *a) {
    a->k = 4;
    a->mode = 0;
    a->ints[0] = tt_act(0, 0.0f);
    a->ints[1] = tt_act(1, 0.0f);
    a->ints[2] = a->ints[3] = 0;
    a->nints = 4;
}
static void a_lstm_rev_forget(tether_ir_attrs *a) { /* reverse, input_forget, other activations */
    a->k = 3;
    a->mode = 1 + 4;
    a->ints[0] = tt_act(0, 0.0f);
    a->ints[1] = tt_act(6, 0.8f); /* scaled_tanh(0.8, 1.2) */
    a->ints[2] = tt_act(8, 0.5f); /* elu(0.5) */
    a->ints[3] = 0;
    a->ints[4] = tt_fbits(1.2f);
    a->ints[5] = 0;
    a->nints = 6;
}
static void a_lstm_bidir(tether_ir_attrs *a) {
    a->k = 2;
    a->mode = 2;
    a->max = 3.0f;
    for (int i = 0; i < 6; i++) {
        a->ints[i] = tt_act(i % 3 ? 1 : 0, 0.0f);
        a->ints[6 + i] = 0;
    }
    a->ints[4] = tt_act(3, 0.5f); /* reverse g: affine(0.5, 0.25) */
    a->ints[10] = tt_fbits(0.25f);
    a->nints = 12;
}
static void a_reverse_seq(tether_ir_attrs *a) { /* time axis 0, batch axis 1 */
    a->axis = 0;
    a->mode = 1;
}
static void a_reverse_seq_bt(tether_ir_attrs *a) { /* batch axis 0, time axis 1 */
    a->axis = 1;
    a->mode = 0;
}

/* clang-format off */
#define TT_RNN_CASES \
    {"rnn_reverse_lens", \
     TETHER_OP_RNN, \
     6, \
     {3, 3, 3, 2, 1, 3}, \
     {{41, 2, 2}, {1, 3, 2}, {1, 3, 3}, {1, 6}, {2}, {1, 2, 3}}, \
     0x2fu, \
     a_rnn_rev_softsign, \
     NONE, \
     C, \
     "float32 float32 float32 float32 uint32 float32"}, \
    {"gru_bidir_lbr_clip", \
     TETHER_OP_GRU, \
     4, \
     {3, 3, 3, 2}, \
     {{4, 2, 3}, {2, 9, 3}, {2, 9, 3}, {2, 18}}, \
     0, \
     a_gru_bidir_lbr_clip, \
     NONE, \
     C, \
     NULL}, \
    {"gru_forward", TETHER_OP_GRU, 3, {3, 3, 3}, {{5, 1, 2}, {1, 12, 2}, {1, 12, 4}}, 0, \
     a_gru_fwd, NONE, C, NULL}, \
    {"lstm_reverse_input_forget", \
     TETHER_OP_LSTM, \
     4, \
     {3, 3, 3, 2}, \
     {{3, 2, 2}, {1, 12, 2}, {1, 12, 3}, {1, 24}}, \
     0, \
     a_lstm_rev_forget, \
     NONE, \
     C, \
     NULL}, \
    {"lstm_bidir_lens_states_peepholes", \
     TETHER_OP_LSTM, \
     8, \
     {3, 3, 3, 2, 1, 3, 3, 2}, \
     {{41, 2, 2}, {2, 8, 2}, {2, 8, 2}, {2, 16}, {2}, {2, 2, 2}, {2, 2, 2}, {2, 6}}, \
     0xefu, \
     a_lstm_bidir, \
     NONE, \
     C, \
     "float32 float32 float32 float32 uint8 float32"}, \
    {"reverse_sequence", TETHER_OP_REVERSE_SEQUENCE, 2, {2, 1}, {{41, 3}, {3}}, 0, \
     a_reverse_seq, NONE, C, "float32 uint16"}, \
    {"reverse_sequence_batch_first_int8", TETHER_OP_REVERSE_SEQUENCE, 2, {3, 1}, \
     {{2, 41, 2}, {2}}, 0, a_reverse_seq_bt, NONE, C, "int8 uint32"},
/* clang-format on */

#endif
