/*
 * The operator cases of the integer elementwise and pooling operators (qadd, qmul, qlut,
 * qmax_pool, qavg_pool; ops.def, docs/quantization.md) for op_cases.c's table: attribute setters,
 * the rows (TT_QELT_CASES) and tt_qelt_operands, which adds their constant parameter tensors
 * (the kernels require constants, as the integer pass writes them; the interpreter and the
 * backend see the same values). Included by op_cases.c only.
 *
 * What must stay true: every integer elementwise/pooling operator has a case here, with
 * broadcasting, both 8-bit types, a clamp narrower than the type, padding and ceil_mode.
 */
#ifndef TT_OP_CASES_QELT_H
#define TT_OP_CASES_QELT_H

#include "ops_common.h"
#include "tether/compiler.h"

static void a_qe_i8(tether_ir_attrs *a) {
    a->to = TETHER_INT8;
}
static void a_qe_u8(tether_ir_attrs *a) {
    a->to = TETHER_UINT8;
}
static void a_qe_maxpool(tether_ir_attrs *a) { /* 3x3, stride 2, padded, ceil_mode */
    a->kernel[0] = a->kernel[1] = 3;
    a->strides[0] = a->strides[1] = 2;
    a->pads[0] = a->pads[1] = 1;
    a->pads[2] = a->pads[3] = 1;
    a->ceil_mode = true;
}
static void a_qe_avgpool(tether_ir_attrs *a) { /* 3x2, stride 2, padding not counted */
    a->kernel[0] = 3;
    a->kernel[1] = 2;
    a->strides[0] = a->strides[1] = 2;
    a->pads[0] = a->pads[1] = a->pads[2] = 1;
    a->count_include_pad = false;
    a->ceil_mode = true;
    a->to = TETHER_INT8;
}
static void a_qe_avgpool_pad(tether_ir_attrs *a) {
    a_qe_avgpool(a);
    a->count_include_pad = true;
    a->ceil_mode = false;
    a->to = TETHER_UINT8;
}

/* Adds the constant parameters of case op (attributes a) into in[0]; how many (0 or 1). */
int tt_qelt_operands(tether_ir_graph *g, tether_op op, const tether_ir_attrs *a, int *in) {
    int64_t s8 = 8;
    if (op == TETHER_OP_QADD) { /* multipliers 0.287 and 0.230, clamp narrower for uint8 */
        int32_t p[8] = {3, -5, 2, 1234567890, 987654321, 32, -128, 127};
        if (a->to.code == kDLUInt) {
            int32_t u[8] = {7, 200, 128, 2000000000, 1100000000, 31, 10, 240};
            memcpy(p, u, sizeof p);
        }
        tether_ir_add_constant(g, "qp", TETHER_INT32, 1, &s8, p, sizeof p, in);
        return 1;
    }
    if (op == TETHER_OP_QMUL) { /* 0.00136 */
        int32_t p[8] = {128, 120, 100, 1500000000, 0, 40, 0, 255};
        if (a->to.code == kDLInt) {
            int32_t q[8] = {-4, 9, -1, 1800000000, 0, 37, -100, 100};
            memcpy(p, q, sizeof p);
        }
        tether_ir_add_constant(g, "qp", TETHER_INT32, 1, &s8, p, sizeof p, in);
        return 1;
    }
    if (op == TETHER_OP_QLUT) {
        int8_t t[256];
        int64_t s = 256;
        for (int i = 0; i < 256; i++) {
            t[i] = (int8_t)((i * 37 + 11) % 256 - 128);
        }
        tether_ir_add_constant(g, "table", TETHER_INT8, 1, &s, t, sizeof t, in);
        return 1;
    }
    if (op == TETHER_OP_QAVG_POOL) {
        int64_t kk = a->kernel[0] * a->kernel[1], s = 4 + 2 * kk;
        int32_t p[4 + 2 * 9] = {-3, 4, -128, 127};
        if (a->to.code == kDLUInt) {
            p[0] = 100;
            p[1] = 120;
            p[2] = 5;
            p[3] = 250;
        }
        for (int64_t c = 1; c <= kk; c++) {
            tether_quant_multiplier(0.9 / (double)c, &p[2 + 2 * c], &p[3 + 2 * c]);
        }
        tether_ir_add_constant(g, "qp", TETHER_INT32, 1, &s, p, sizeof(int32_t) * (size_t)s, in);
        return 1;
    }
    return 0;
}

/* clang-format off */
#define TT_QELT_CASES \
    {"qadd_i8_broadcast", TETHER_OP_QADD, 2, {3, 2}, {{2, 3, 4}, {3, 1}}, 0, a_qe_i8, NONE, C, \
     "int8 int8"}, \
    {"qadd_u8_i8_clamp", TETHER_OP_QADD, 2, {2, 3}, {{3, 5}, {2, 1, 5}}, 0, a_qe_u8, NONE, C, \
     "uint8 int8"}, \
    {"qmul_u8", TETHER_OP_QMUL, 2, {2, 2}, {{2, 5}, {2, 5}}, 0, a_qe_u8, NONE, C, \
     "uint8 uint8"}, \
    {"qmul_i8_scalar", TETHER_OP_QMUL, 2, {3, 1}, {{2, 2, 3}, {1}}, 0, a_qe_i8, NONE, C, \
     "int8 int8"}, \
    {"qlut_i8", TETHER_OP_QLUT, 1, {2}, {{3, 7}}, 0, NULL, NONE, C, "int8"}, \
    {"qlut_u8", TETHER_OP_QLUT, 1, {2}, {{4, 9}}, 0, NULL, NONE, C, "uint8"}, \
    {"qmax_pool_u8_ceil", TETHER_OP_QMAX_POOL, 1, {4}, {{1, 2, 6, 7}}, 0, a_qe_maxpool, NONE, C, \
     "uint8"}, \
    {"qmax_pool_i8", TETHER_OP_QMAX_POOL, 1, {4}, {{2, 3, 5, 5}}, 0, a_qe_maxpool, NONE, C, \
     "int8"}, \
    {"qavg_pool_i8_nopad", TETHER_OP_QAVG_POOL, 1, {4}, {{1, 2, 7, 6}}, 0, a_qe_avgpool, NONE, C, \
     "int8"}, \
    {"qavg_pool_u8_pad", TETHER_OP_QAVG_POOL, 1, {4}, {{2, 2, 5, 6}}, 0, a_qe_avgpool_pad, NONE, \
     C, "uint8"},
/* clang-format on */

#endif
