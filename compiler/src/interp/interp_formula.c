/*
 * The reference interpreter's elementwise formulas: the primitives of ir/formula.def and each
 * operator's FORMULA (float, double) and IFORMULA (int64, uint64) from ops.def, in the
 * interpreter's own obviously-correct spellings, and the fused epilogue activation. They are the
 * ground truth the emitters' spellings are tested against, so they share no code with the
 * emitters. Integer results wrap modulo 2^64 here; the caller stores them back modulo 2^bits.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "interp_internal.h"

/* The primitives of the elementwise formulas (ir/formula.def), the interpreter's own
 * definitions: the ground truth of the emitters' spellings. */
static float relu(float v) {
    return v > 0.0f ? v : 0.0f;
}

static float leaky(float v, float alpha) {
    return v < 0.0f ? alpha * v : v;
}

static float clip(float v, float lo, float hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

static float sigmoid(float v) {
    return 1.0f / (1.0f + expf(-v));
}

static float hswish(float v) {
    return v * clip(v + 3.0f, 0.0f, 6.0f) / 6.0f;
}

/* round half to even (the default rounding mode); atan and sinh are <math.h>'s */
static double rne(double v) {
    return nearbyint(v);
}

/* The FORMULA column of ops.def compiled as written, x the input and alpha ... max the node's
 * attributes: ew_unary has a case for every UNARY row, ew_binary for every BINARY and PRELU
 * row (y the second input). A UNARY row without a formula, or one that reads y, does not build.
 * Any other operator is never passed here: NAN, computed by nothing. The same formulas compile a
 * second time in double (float64: the float functions of formula.def are redefined as their
 * double ones for that part), and the IFORMULA column twice, in int64 and in uint64, for the
 * rows whose TYPES admits integers (TETHER__TY_INTS_). */
/* clang-format off */
#define EW_ATTRS_(at) \
    const float alpha = (at)->alpha, beta = (at)->beta, min = (at)->min, max = (at)->max; \
    (void)alpha; \
    (void)beta; \
    (void)min; \
    (void)max
#define EW_RETURN_(id, formula) case TETHER_OP_##id: return (formula);
#define EW_NONE_(id)            case TETHER_OP_##id: break;
#define EW_UNARY_(id, name, kind, act, min_in, max_in, attrs, epilogue, formula, defaults, types, iformula) \
    TETHER__OPK_EW_##kind(EW_RETURN_(id, formula), EW_NONE_(id), EW_NONE_(id), EW_NONE_(id))
#define EW_BINARY_(id, name, kind, act, min_in, max_in, attrs, epilogue, formula, defaults, types, iformula) \
    TETHER__OPK_EW_##kind(EW_NONE_(id), EW_RETURN_(id, formula), EW_RETURN_(id, formula), EW_NONE_(id))
#define EW_IUNARY_(id, name, kind, act, min_in, max_in, attrs, epilogue, formula, defaults, types, iformula) \
    TETHER__OPK_EW_##kind(TETHER__TY_INTS_##types(EW_RETURN_(id, iformula), EW_NONE_(id)), EW_NONE_(id), EW_NONE_(id), EW_NONE_(id))
#define EW_IBINARY_(id, name, kind, act, min_in, max_in, attrs, epilogue, formula, defaults, types, iformula) \
    TETHER__OPK_EW_##kind(EW_NONE_(id), TETHER__TY_INTS_##types(EW_RETURN_(id, iformula), EW_NONE_(id)), EW_NONE_(id), EW_NONE_(id))
/* clang-format on */

static float pymod(float a, float b) {
    float r = fmodf(a, b);
    if (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) {
        r += b;
    }
    return r;
}

float tether__interp_ew_unary(tether_op op, float x, const tether_ir_attrs *at) {
    EW_ATTRS_(at);
    switch (op) { TETHER_OP_LIST(EW_UNARY_) }
    return NAN;
}

float tether__interp_ew_binary(tether_op op, float x, float y, const tether_ir_attrs *at) {
    EW_ATTRS_(at);
    switch (op) { TETHER_OP_LIST(EW_BINARY_) }
    return NAN;
}

/* float64: the same formulas with every float function of formula.def in double */
static double relu_d(double v) {
    return v > 0.0 ? v : 0.0;
}
static double leaky_d(double v, double alpha) {
    return v < 0.0 ? alpha * v : v;
}
static double clip_d(double v, double lo, double hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}
static double sigmoid_d(double v) {
    return 1.0 / (1.0 + exp(-v));
}
static double hswish_d(double v) {
    return v * clip_d(v + 3.0, 0.0, 6.0) / 6.0;
}
static double pymod_d(double a, double b) {
    double r = fmod(a, b);
    if (r != 0.0 && ((r < 0.0) != (b < 0.0))) {
        r += b;
    }
    return r;
}
#define relu(v)       relu_d(v)
#define leaky(v, a)   leaky_d(v, a)
#define clip(v, l, h) clip_d(v, l, h)
#define sigmoid(v)    sigmoid_d(v)
#define hswish(v)     hswish_d(v)
#define pymod(a, b)   pymod_d(a, b)
#define expf(v)       exp(v)
#define logf(v)       log(v)
#define sqrtf(v)      sqrt(v)
#define tanhf(v)      tanh(v)
#define powf(a, b)    pow(a, b)
#define fmodf(a, b)   fmod(a, b)
#define sinf(v)       sin(v)
#define cosf(v)       cos(v)
#define floorf(v)     floor(v)
#define ceilf(v)      ceil(v)
static double ew_unary_d(tether_op op, double x, const tether_ir_attrs *at) {
    EW_ATTRS_(at);
    switch (op) { TETHER_OP_LIST(EW_UNARY_) }
    return NAN;
}

static double ew_binary_d(tether_op op, double x, double y, const tether_ir_attrs *at) {
    EW_ATTRS_(at);
    switch (op) { TETHER_OP_LIST(EW_BINARY_) }
    return NAN;
}
#undef relu
#undef leaky
#undef clip
#undef sigmoid
#undef hswish
#undef pymod
#undef expf
#undef logf
#undef sqrtf
#undef tanhf
#undef powf
#undef fmodf
#undef sinf
#undef cosf
#undef floorf
#undef ceilf

/* Integers: the IFORMULA column in int64 (signed types) and uint64 (unsigned, bool); the I rows
 * of formula.def defined here, the result stored modulo 2^bits by store_val. */
#define wadd(a, b) ((I)((uint64_t)(a) + (uint64_t)(b)))
#define wsub(a, b) ((I)((uint64_t)(a) - (uint64_t)(b)))
#define wmul(a, b) ((I)((uint64_t)(a) * (uint64_t)(b)))
#define wneg(a)    ((I)((uint64_t)0 - (uint64_t)(a)))
#define I          int64_t
static int64_t idiv_s(int64_t a, int64_t b) {
    return b == 0 ? 0 : b == -1 ? wneg(a) : a / b;
}
static int64_t ifmod_s(int64_t a, int64_t b) {
    return b == 0 || b == -1 ? 0 : a % b;
}
static int64_t imod_s(int64_t a, int64_t b) {
    int64_t r = ifmod_s(a, b);
    return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
static int64_t iabs_s(int64_t a) {
    return a < 0 ? wneg(a) : a;
}
static int64_t isign_s(int64_t a) {
    return a > 0 ? 1 : a < 0 ? -1 : 0;
}
static int64_t shl_s(int64_t a, int64_t b) {
    return b < 0 || b >= 64 ? 0 : (int64_t)((uint64_t)a << b);
}
static int64_t shr_s(int64_t a, int64_t b) {
    return b < 0 || b >= 64 ? 0 : a >> b;
}
static uint64_t ipow_w(uint64_t p, uint64_t b) {
    uint64_t r = 1;
    for (; b; b >>= 1, p *= p) {
        r = b & 1 ? r * p : r;
    }
    return r;
}
static int64_t ipow_s(int64_t a, int64_t b) {
    if (b < 0) {
        return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    }
    return (int64_t)ipow_w((uint64_t)a, (uint64_t)b);
}
#undef I
static uint64_t idiv_u(uint64_t a, uint64_t b) {
    return b == 0 ? 0 : a / b;
}
static uint64_t ifmod_u(uint64_t a, uint64_t b) {
    return b == 0 ? 0 : a % b;
}
static uint64_t imod_u(uint64_t a, uint64_t b) {
    return ifmod_u(a, b);
}
static uint64_t iabs_u(uint64_t a) {
    return a;
}
static uint64_t isign_u(uint64_t a) {
    return a > 0 ? 1 : 0;
}
static uint64_t shl_u(uint64_t a, uint64_t b) {
    return b >= 64 ? 0 : a << b;
}
static uint64_t shr_u(uint64_t a, uint64_t b) {
    return b >= 64 ? 0 : a >> b;
}
#define I           int64_t
#define idiv(a, b)  idiv_s(a, b)
#define ifmod(a, b) ifmod_s(a, b)
#define imod(a, b)  imod_s(a, b)
#define iabs(a)     iabs_s(a)
#define isign(a)    isign_s(a)
#define shl(a, b)   shl_s(a, b)
#define shr(a, b)   shr_s(a, b)
#define ipow(a, b)  ipow_s(a, b)
static int64_t ew_unary_s(tether_op op, int64_t x) {
    switch (op) { TETHER_OP_LIST(EW_IUNARY_) }
    return 0;
}
static int64_t ew_binary_s(tether_op op, int64_t x, int64_t y) {
    switch (op) { TETHER_OP_LIST(EW_IBINARY_) }
    return 0;
}
#undef I
#undef idiv
#undef ifmod
#undef imod
#undef iabs
#undef isign
#undef shl
#undef shr
#undef ipow
#define I           uint64_t
#define idiv(a, b)  idiv_u(a, b)
#define ifmod(a, b) ifmod_u(a, b)
#define imod(a, b)  imod_u(a, b)
#define iabs(a)     iabs_u(a)
#define isign(a)    isign_u(a)
#define shl(a, b)   shl_u(a, b)
#define shr(a, b)   shr_u(a, b)
#define ipow(a, b)  ipow_w(a, b)
static uint64_t ew_unary_u(tether_op op, uint64_t x) {
    switch (op) { TETHER_OP_LIST(EW_IUNARY_) }
    return 0;
}
static uint64_t ew_binary_u(tether_op op, uint64_t x, uint64_t y) {
    switch (op) { TETHER_OP_LIST(EW_IBINARY_) }
    return 0;
}
#undef I
#undef idiv
#undef ifmod
#undef imod
#undef iabs
#undef isign
#undef shl
#undef shr
#undef ipow
#undef wadd
#undef wsub
#undef wmul
#undef wneg
#undef EW_ATTRS_
#undef EW_RETURN_
#undef EW_NONE_
#undef EW_UNARY_
#undef EW_BINARY_
#undef EW_IUNARY_
#undef EW_IBINARY_

/* One elementwise result in the class of the operands (x's; y has the same type). */
val tether__interp_ew_typed(tether_op op, val x, const val *y, const tether_ir_attrs *a) {
    val r = x;
    switch (x.c) {
    case TETHER__DC_F32:
        r.f = y ? tether__interp_ew_binary(op, (float)x.f, (float)y->f, a)
                : tether__interp_ew_unary(op, (float)x.f, a);
        break;
    case TETHER__DC_F64:
        r.f = y ? ew_binary_d(op, x.f, y->f, a) : ew_unary_d(op, x.f, a);
        break;
    case TETHER__DC_INT:
        r.i = y ? ew_binary_s(op, x.i, y->i) : ew_unary_s(op, x.i);
        break;
    case TETHER__DC_UINT:
        r.u = y ? ew_binary_u(op, x.u, y->u) : ew_unary_u(op, x.u);
        break;
    case TETHER__DC_NONE:
        break;
    }
    return r;
}

/* A fused epilogue activation: the formula of the operator whose ACT column it is. */
float tether__interp_apply_act(float v, const tether_ir_attrs *a) {
    if (a->act == TETHER_ACT_NONE) {
        return v;
    }
    tether_ir_attrs t;
    tether__act_attrs(a, &t);
    return tether__interp_ew_unary(tether__act_op(a->act), v, &t);
}
