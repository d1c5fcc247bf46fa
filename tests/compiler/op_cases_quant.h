/*
 * The operator cases of the quantized operators (quantize, dequantize, qconv, qmatmul; ops.def,
 * docs/quantization.md) for op_cases.c's table: their attribute setters and the rows
 * (TT_QUANT_CASES, placed in tt_op_cases[]). Included by op_cases.c only, after its NONE/C
 * macros; the rows may name op_cases.c's own setters (a_axis1), declared before the table.
 *
 * What must stay true: every quantized operator has a case here; test_quant checks known values,
 * these check the interpreter against generated C in both ABIs on random operands.
 */
#ifndef TT_OP_CASES_QUANT_H
#define TT_OP_CASES_QUANT_H

#include "ops_common.h"

static void a_q_int8(tether_ir_attrs *a) {
    a->to = TETHER_INT8;
}
static void a_qconv(tether_ir_attrs *a) {
    a->groups = 2;
    a->strides[1] = 2;
    a->pads[0] = a->pads[3] = 1;
}
static void a_qconv_acc(tether_ir_attrs *a) {
    a->to = TETHER_INT32;
    a->pads[1] = 1;
    a->dilations[0] = 2;
}
static void a_qclamp(tether_ir_attrs *a) {
    a->to = TETHER_UINT8;
    a->min = 3.0f;
    a->max = 30.0f;
}
/* clang-format off */
#define TT_QUANT_CASES \
    /* quantized operators (docs/quantization.md): NaN and infinities among the quantized floats, \
     * random zero points, multipliers and shifts (test_quant checks known values) */ \
    {"quantize_u8_axis1", \
     TETHER_OP_QUANTIZE, \
     3, \
     {2, 1, 1}, \
     {{3, 8}, {8}, {8}}, \
     2, \
     a_axis1, \
     NONE, \
     C, \
     "float32 float32 uint8"}, \
    {"quantize_i8_tensor", \
     TETHER_OP_QUANTIZE, \
     2, \
     {2, 0}, \
     {{3, 8}, {1}}, \
     2, \
     a_q_int8, \
     NONE, \
     C, \
     "float32 float32"}, \
    {"dequantize_i8", \
     TETHER_OP_DEQUANTIZE, \
     3, \
     {3, 0, 0}, \
     {{2, 3, 4}}, \
     0, \
     NULL, \
     NONE, \
     C, \
     "int8 float32 int8"}, \
    {"dequantize_i32_axis1", \
     TETHER_OP_DEQUANTIZE, \
     2, \
     {3, 1}, \
     {{2, 3, 4}, {3}}, \
     0, \
     a_axis1, \
     NONE, \
     C, \
     "int32 float32"}, \
    {"qconv_i8_requant", \
     TETHER_OP_QCONV, \
     7, \
     {4, 4, 1, 1, 1, 2, 1}, \
     {{1, 4, 6, 5}, {6, 2, 3, 3}, {6}, {1}, {6}, {6, 2}, {1}}, \
     0, \
     a_qconv, \
     NONE, \
     C, \
     "int8 int8 int32"}, \
    {"qconv_u8_int32_acc", \
     TETHER_OP_QCONV, \
     5, \
     {4, 4, 1, 1, 1}, \
     {{2, 3, 5, 5}, {4, 3, 2, 2}, {4}, {1}, {4}}, \
     0, \
     a_qconv_acc, \
     NONE, \
     C, \
     "uint8 int8 int32"}, \
    {"qmatmul_batch_requant", \
     TETHER_OP_QMATMUL, \
     7, \
     {3, 2, 1, 1, 1, 2, 1}, \
     {{2, 3, 5}, {5, 4}, {4}, {3}, {4}, {1, 2}, {1}}, \
     0, \
     a_qclamp, \
     NONE, \
     C, \
     "uint8 int8 int32"},
/* clang-format on */

#endif
