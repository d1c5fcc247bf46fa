/*
 * The operator cases of data-dependent output sizes (nonzero, compress, unique, nms; ops.def,
 * docs/onnx.md "Data-dependent output sizes") for op_cases.c's table: their attribute setters and
 * the rows (TT_DYNAMIC_CASES, placed at the end of tt_op_cases[]). Included by op_cases.c only,
 * after its NONE/C macros.
 *
 * What must stay true: every dynamic operator has a case here; test_ops.c's harness adds the
 * extent outputs (tether_ir_add_extent_outputs) and compares each extent exactly and the data of
 * the actual shape only (bytes past it are unwritten or a terminator); the inputs (integers in
 * [-20, 20], random bools, boxes and scores in [-1, 1)) give counts between 1 and the bound,
 * below it but for nms_center_capped (whose cap is its count: at the bound is not over).
 */
#ifndef TT_OP_CASES_DYNAMIC_H
#define TT_OP_CASES_DYNAMIC_H

#include "ops_common.h"

static void a_compress_axis1(tether_ir_attrs *a) {
    a->mode = 4;
    a->axis = -1;
}
static void a_unique_sorted_indices(tether_ir_attrs *a) {
    a->mode = 1 | 1 << 4;
}
static void a_unique_axis_indices(tether_ir_attrs *a) {
    a->mode = 4 | 1 << 4; /* unsorted, along axis 0 */
    a->axis = 0;
}
static void a_nms(tether_ir_attrs *a) {
    a->k = 5;
    a->alpha = 0.3f;
    a->beta = 0.0f;
    a->mode = 4; /* score threshold given */
}
static void a_nms_center_capped(tether_ir_attrs *a) {
    a->k = 4;
    a->alpha = 0.3f;
    a->mode = 1; /* center_point_box; no score threshold */
    a->nints = 1;
    a->ints[0] = 23; /* caps the bound 2 * 3 * 4 = 24 at the count: at the bound is not over */
}

/* clang-format off */
#define TT_DYNAMIC_CASES \
    {"nonzero_int32", TETHER_OP_NONZERO, 1, {2}, {{3, 4}}, 0, NULL, NONE, C, "int32"}, \
    {"nonzero_bool_3d", TETHER_OP_NONZERO, 1, {3}, {{2, 3, 2}}, 0, NULL, NONE, C, "bool"}, \
    {"compress_flat", TETHER_OP_COMPRESS, 2, {2, 1}, {{3, 4}, {7}}, 0, NULL, NONE, C, \
     "float32 bool"}, \
    {"compress_axis_int8", TETHER_OP_COMPRESS, 2, {2, 1}, {{3, 5}, {5}}, 0, a_compress_axis1, \
     NONE, C, "int8 bool"}, \
    {"unique_sorted_indices", TETHER_OP_UNIQUE, 1, {1}, {{16}}, 0, a_unique_sorted_indices, NONE, \
     C, "int32"}, \
    {"unique_axis_indices", TETHER_OP_UNIQUE, 1, {2}, {{6, 2}}, 0, a_unique_axis_indices, NONE, C, \
     "bool"}, \
    {"nms", TETHER_OP_NMS, 2, {3, 3}, {{1, 6, 4}, {1, 2, 6}}, 0, a_nms, NONE, C, NULL}, \
    {"nms_center_capped", TETHER_OP_NMS, 2, {3, 3}, {{2, 5, 4}, {2, 3, 5}}, 1, \
     a_nms_center_capped, NONE, C, "float64 float32"}, \
/* clang-format on */

#endif
