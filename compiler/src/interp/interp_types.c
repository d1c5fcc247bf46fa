/*
 * Element loads and stores of the reference interpreter for every element type: float16 and
 * bfloat16 to and from float (round to nearest even), float64, integers of every width, bool.
 *
 * What must stay true: the conversions are the ones the generated C makes (emit_c_types.c), so
 * the interpreter stays the ground truth for typed kernels; see interp_internal.h.
 */
#include <math.h>
#include <string.h>

#include "interp_internal.h"
#include "tether/crt/dtype.h"
static float half_to_float(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (float)((h & 0x8000) ? -v : v);
}

/* Round to nearest even of a finite or infinite or NaN double into float16 bits. */
static uint16_t half_from_double(double v) {
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (a != a) {
        return 0x7e00 | sign;
    }
    if (a >= 65520.0) { /* rounds to infinity */
        return 0x7c00 | sign;
    }
    int e;
    frexp(a, &e);   /* a = f * 2^e, f in [0.5, 1) */
    int ex = e - 1; /* a = 1.m * 2^ex */
    if (ex < -14) {
        ex = -14; /* subnormal: units of 2^-24 */
    }
    double q = ldexp(a, 10 - ex); /* the significand in units of the last place */
    double r = nearbyint(q);      /* the default rounding mode: to nearest, ties to even */
    uint32_t mant = (uint32_t)r;
    uint32_t bits;
    if (mant >= 2048) { /* carried into the next binade */
        mant >>= 1;
        ex++;
    }
    if (mant < 1024) {
        bits = mant; /* subnormal (ex == -14) or zero */
    } else {
        bits = ((uint32_t)(ex + 15) << 10) | (mant - 1024);
    }
    return (uint16_t)(bits | sign);
}

static float bf16_to_float(uint16_t h) {
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* float to bfloat16 bits, round to nearest even (NaN stays a quiet NaN). */
static uint16_t bf16_from_float(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    if (f != f) {
        return (uint16_t)((b >> 16) | 0x40);
    }
    b += 0x7fff + ((b >> 16) & 1);
    return (uint16_t)(b >> 16);
}

val tether__interp_load(const void *p, DLDataType t, size_t k) {
    val v = {tether__dtype_class(t), 0.0, 0, 0};
    const unsigned char *b = (const unsigned char *)p + k * tether_dtype_bytes(t);
    switch (t.code) {
    case kDLFloat:
        if (t.bits == 16) {
            uint16_t h;
            memcpy(&h, b, 2);
            v.f = half_to_float(h);
        } else if (t.bits == 32) {
            float f;
            memcpy(&f, b, 4);
            v.f = f;
        } else {
            memcpy(&v.f, b, 8);
        }
        break;
    case kDLBfloat: {
        uint16_t h;
        memcpy(&h, b, 2);
        v.f = bf16_to_float(h);
        break;
    }
    case kDLInt:
        if (t.bits == 8) {
            v.i = (int8_t)b[0];
        } else if (t.bits == 16) {
            int16_t x;
            memcpy(&x, b, 2);
            v.i = x;
        } else if (t.bits == 32) {
            int32_t x;
            memcpy(&x, b, 4);
            v.i = x;
        } else {
            memcpy(&v.i, b, 8);
        }
        break;
    default: /* unsigned and bool */
        if (t.bits <= 8) {
            v.u = b[0];
        } else if (t.bits == 16) {
            uint16_t x;
            memcpy(&x, b, 2);
            v.u = x;
        } else if (t.bits == 32) {
            uint32_t x;
            memcpy(&x, b, 4);
            v.u = x;
        } else {
            memcpy(&v.u, b, 8);
        }
        break;
    }
    return v;
}

/* A floating value to an integer: NaN 0, truncated toward zero, saturated to [lo, hi]. */
static int64_t sat_i(double d, double lo, double hi, int64_t ilo, int64_t ihi) {
    if (d != d) {
        return 0;
    }
    return d <= lo ? ilo : d >= hi ? ihi : (int64_t)d;
}

static uint64_t sat_u(double d, double hi, uint64_t uhi) {
    if (d != d || d <= 0.0) {
        return 0;
    }
    return d >= hi ? uhi : (uint64_t)d;
}

/* Stores v as element k of p (type t): the conversion rules of Cast (ops.def) and of every
 * elementwise store. */
void tether__interp_store(void *p, DLDataType t, size_t k, val v) {
    unsigned char *b = (unsigned char *)p + k * tether_dtype_bytes(t);
    int isf = v.c == TETHER__DC_F32 || v.c == TETHER__DC_F64;
    if (tether__dtype_is_bool(t)) {
        b[0] = isf ? v.f != 0.0 : v.c == TETHER__DC_INT ? v.i != 0 : v.u != 0;
        return;
    }
    if (t.code == kDLFloat || t.code == kDLBfloat) {
        double d = isf ? v.f : v.c == TETHER__DC_INT ? (double)v.i : (double)v.u;
        float f = isf ? (float)v.f : v.c == TETHER__DC_INT ? (float)v.i : (float)v.u;
        if (t.code == kDLBfloat) {
            uint16_t h = bf16_from_float(f);
            memcpy(b, &h, 2);
        } else if (t.bits == 16) {
            uint16_t h = half_from_double(isf ? d : (double)f);
            memcpy(b, &h, 2);
        } else if (t.bits == 32) {
            memcpy(b, &f, 4);
        } else {
            memcpy(b, &d, 8);
        }
        return;
    }
    /* integers: from a float saturated, from an integer modulo 2^bits */
    uint64_t u;
    if (isf) {
        if (t.code == kDLInt) {
            int64_t i = t.bits == 64   ? sat_i(v.f, -9223372036854775808.0, 9223372036854775807.0,
                                               INT64_MIN, INT64_MAX)
                        : t.bits == 32 ? sat_i(v.f, INT32_MIN, INT32_MAX, INT32_MIN, INT32_MAX)
                        : t.bits == 16 ? sat_i(v.f, INT16_MIN, INT16_MAX, INT16_MIN, INT16_MAX)
                                       : sat_i(v.f, INT8_MIN, INT8_MAX, INT8_MIN, INT8_MAX);
            u = (uint64_t)i;
        } else {
            u = t.bits == 64   ? sat_u(v.f, 18446744073709551615.0, UINT64_MAX)
                : t.bits == 32 ? sat_u(v.f, UINT32_MAX, UINT32_MAX)
                : t.bits == 16 ? sat_u(v.f, UINT16_MAX, UINT16_MAX)
                               : sat_u(v.f, UINT8_MAX, UINT8_MAX);
        }
    } else {
        u = v.c == TETHER__DC_INT ? (uint64_t)v.i : v.u;
    }
    if (t.bits == 8) {
        b[0] = (uint8_t)u;
    } else if (t.bits == 16) {
        uint16_t x = (uint16_t)u;
        memcpy(b, &x, 2);
    } else if (t.bits == 32) {
        uint32_t x = (uint32_t)u;
        memcpy(b, &x, 4);
    } else {
        memcpy(b, &u, 8);
    }
}
