/*
 * Element values and output comparisons of every element type (tether/compare.h): what `tether
 * run --reference`, `tether ab` and the Python package compare and generate with.
 *
 * What must stay true: integer and bool elements compare exactly, as 64-bit integers (never
 * through a double, which would make 2^53 + 1 equal 2^53); floats compare within the tolerance
 * with NaN == NaN; no allocation, nothing printed.
 */
#include "tether/compare.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tether/crt.h"

static float half_to_float(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0    ? ldexpf((float)m, -24)
              : e == 31 ? (m ? NAN : INFINITY)
                        : ldexpf((float)(m + 1024), e - 25);
    return (h & 0x8000) ? -v : v;
}

static float bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t tether_float_to_bfloat16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    }
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

uint16_t tether_float_to_half(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) {
        return sign | 0x7e00; /* NaN */
    }
    if (a >= 0x477ff000u) { /* rounds to 65520 or more: infinity */
        return sign | 0x7c00;
    }
    if (a < 0x38800000u) { /* below 2^-14: a subnormal half, or zero */
        float af;
        memcpy(&af, &a, 4);
        float q = af * 16777216.0f; /* in units of 2^-24, exact */
        float r = rintf(q);         /* nearest even (the default rounding mode) */
        return sign | (uint16_t)r;
    }
    uint32_t mant = a & 0x7fffffu, e = (a >> 23) - 127 + 15;
    uint32_t h = (e << 10) | (mant >> 13), rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) {
        h++; /* may carry into the exponent: still right */
    }
    return sign | (uint16_t)h;
}

bool tether_dtype_is_float(DLDataType t) {
    return t.code == kDLFloat || t.code == kDLBfloat;
}

double tether_elem_double(DLDataType t, const void *data, size_t i) {
    const unsigned char *p = data;
    if (t.code == kDLFloat || t.code == kDLBfloat) {
        if (t.bits == 64) {
            double d;
            memcpy(&d, p + 8 * i, 8);
            return d;
        }
        if (t.bits == 32) {
            float f;
            memcpy(&f, p + 4 * i, 4);
            return f;
        }
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return t.code == kDLBfloat ? bf16_to_float(h) : half_to_float(h);
    }
    if (t.code == kDLUInt && t.bits == 64) {
        uint64_t u;
        memcpy(&u, p + 8 * i, 8);
        return (double)u;
    }
    return (double)tether_elem_int(t, data, i);
}

int64_t tether_elem_int(DLDataType t, const void *data, size_t i) {
    const unsigned char *p = data;
    if (t.code == kDLFloat || t.code == kDLBfloat) {
        return (int64_t)tether_elem_double(t, data, i);
    }
    bool sgn = t.code == kDLInt;
    switch (t.bits) {
    case 1:
    case 8:
        return sgn ? (int64_t)(int8_t)p[i] : (int64_t)p[i];
    case 16: {
        uint16_t u;
        memcpy(&u, p + 2 * i, 2);
        return sgn ? (int64_t)(int16_t)u : (int64_t)u;
    }
    case 32: {
        uint32_t u;
        memcpy(&u, p + 4 * i, 4);
        return sgn ? (int64_t)(int32_t)u : (int64_t)u;
    }
    default: {
        int64_t v;
        memcpy(&v, p + 8 * i, 8);
        return v;
    }
    }
}

void tether_compare_default_tolerance(DLDataType t, double *rtol, double *atol) {
    if (!tether_dtype_is_float(t)) {
        *rtol = *atol = 0;
    } else if (t.code == kDLBfloat) {
        *rtol = *atol = 1e-2;
    } else if (t.bits == 16) {
        *rtol = *atol = 1e-3;
    } else {
        *rtol = 1e-4;
        *atol = 1e-5;
    }
}

bool tether_compare_arrays(const tether_npy *got, const tether_npy *want, double rtol, double atol,
                           tether_compare_result *r) {
    memset(r, 0, sizeof *r);
    DLDataType t = want->dtype;
    r->dtype = t;
    r->exact = !tether_dtype_is_float(t);
    r->same_layout =
        tether_dtype_equal(got->dtype, t) && got->ndim == want->ndim && got->nbytes == want->nbytes;
    for (int d = 0; r->same_layout && d < want->ndim; d++) {
        r->same_layout = got->shape[d] == want->shape[d];
    }
    if (!r->same_layout) {
        return false;
    }
    size_t es = tether_dtype_bytes(t);
    r->count = es ? want->nbytes / es : 0;
    if (r->exact) {
        for (size_t i = 0; i < r->count; i++) {
            int64_t a = tether_elem_int(t, got->data, i), b = tether_elem_int(t, want->data, i);
            if (a != b) {
                if (!r->mismatches++) {
                    r->first = i;
                    r->got_first = tether_elem_double(t, got->data, i);
                    r->want_first = tether_elem_double(t, want->data, i);
                    r->got_int = a;
                    r->want_int = b;
                }
                double d = fabs(tether_elem_double(t, got->data, i) -
                                tether_elem_double(t, want->data, i));
                r->max_abs = d > r->max_abs ? d : r->max_abs;
            }
        }
        r->equal = r->mismatches == 0;
        return r->equal;
    }
    double drt, dat;
    tether_compare_default_tolerance(t, &drt, &dat);
    r->rtol = rtol < 0 ? drt : rtol;
    r->atol = atol < 0 ? dat : atol;
    for (size_t i = 0; i < r->count; i++) {
        double a = tether_elem_double(t, got->data, i), b = tether_elem_double(t, want->data, i);
        double d;
        bool ok;
        if (isnan(a) || isnan(b)) {
            ok = isnan(a) && isnan(b);
            d = ok ? 0 : NAN;
        } else if (isinf(a) || isinf(b)) {
            ok = a == b;
            d = ok ? 0 : INFINITY;
        } else {
            d = fabs(a - b);
            ok = d <= r->atol + r->rtol * fabs(b);
        }
        if (d > r->max_abs || (isnan(d) && !isnan(r->max_abs))) {
            r->max_abs = d;
        }
        if (!ok && !r->mismatches++) {
            r->first = i;
            r->got_first = a;
            r->want_first = b;
        }
    }
    r->equal = r->mismatches == 0;
    return r->equal;
}

void tether_fill_inputs(DLDataType t, size_t n, uint32_t *seed, void *data) {
    unsigned char *p = data;
    size_t es = tether_dtype_bytes(t);
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        uint32_t s = *seed;
        float f = (float)(s >> 8) / 8388608.0f - 1.0f;
        unsigned char *q = p + i * es;
        if (t.code == kDLFloat && t.bits == 32) {
            memcpy(q, &f, 4);
        } else if (t.code == kDLFloat && t.bits == 64) {
            double d = f;
            memcpy(q, &d, 8);
        } else if (t.code == kDLFloat || t.code == kDLBfloat) {
            uint16_t h =
                t.code == kDLBfloat ? tether_float_to_bfloat16(f) : tether_float_to_half(f);
            memcpy(q, &h, 2);
        } else if (t.bits == 1) {
            q[0] = (unsigned char)((s >> 20) & 1);
        } else {
            int64_t v =
                t.code == kDLInt ? (int64_t)((s >> 24) & 15) - 8 : (int64_t)((s >> 24) & 15);
            memcpy(q, &v, es); /* little-endian: the low bytes */
        }
    }
}

void tether_compare_describe(const tether_compare_result *r, char *buf, size_t size) {
    if (!size) {
        return;
    }
    if (!r->same_layout) {
        snprintf(buf, size, "DIFFERS: dtype or shape");
    } else if (r->equal && r->exact) {
        snprintf(buf, size, "equal (exact)");
    } else if (r->equal) {
        snprintf(buf, size, "equal (max |diff| %.3g within rtol %g, atol %g)", r->max_abs, r->rtol,
                 r->atol);
    } else if (r->exact) {
        char g[24], w[24];
        if (r->dtype.code == kDLUInt) {
            snprintf(g, sizeof g, "%llu", (unsigned long long)r->got_int);
            snprintf(w, sizeof w, "%llu", (unsigned long long)r->want_int);
        } else {
            snprintf(g, sizeof g, "%lld", (long long)r->got_int);
            snprintf(w, sizeof w, "%lld", (long long)r->want_int);
        }
        snprintf(buf, size,
                 "DIFFERS: %zu of %zu elements, first [%zu]: got %s, expected %s (exact)",
                 r->mismatches, r->count, r->first, g, w);
    } else {
        snprintf(buf, size,
                 "DIFFERS: %zu of %zu elements, first [%zu]: got %.9g, expected %.9g "
                 "(max |diff| %.3g; rtol %g, atol %g)",
                 r->mismatches, r->count, r->first, r->got_first, r->want_first, r->max_abs,
                 r->rtol, r->atol);
    }
}
