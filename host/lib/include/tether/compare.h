/*
 * tether host: element values and output comparisons of every element type (host/lib/compare.c).
 *
 * What `tether run --reference`, `tether ab`, the Python package and the tests use to read any
 * array's elements as numbers, to compare a device's outputs with the reference interpreter's
 * and to generate inputs. Integer and bool outputs compare exactly (every element equal; a
 * tolerance never applies). Floating outputs compare with |got - want| <= atol + rtol * |want|,
 * NaN equal to NaN and an infinity to the same infinity; the default tolerances suit the type:
 *   float32, float64   rtol 1e-4, atol 1e-5
 *   float16            rtol 1e-3, atol 1e-3   (11-bit significand: 1 ulp is ~4.9e-4 relative)
 *   bfloat16           rtol 1e-2, atol 1e-2   (8-bit significand: 1 ulp is ~3.9e-3 relative)
 * What must stay true: pure functions of their arguments (nothing printed, nothing allocated).
 */
#ifndef TETHER_COMPARE_H
#define TETHER_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#include "tether/npy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element i of data (dtype, host byte order; bool one byte, float16/bfloat16 bit patterns) as a
 * double (int64/uint64 beyond 2^53 round). */
double tether_elem_double(DLDataType dtype, const void *data, size_t i);
/* Element i as an exact 64-bit integer (integer and bool types; floats truncate). */
int64_t tether_elem_int(DLDataType dtype, const void *data, size_t i);
/* True for float16, bfloat16, float32 and float64 (the types compared with a tolerance). */
bool tether_dtype_is_float(DLDataType dtype);
/* The default tolerances of dtype (above); 0 and 0 for integer and bool types. */
void tether_compare_default_tolerance(DLDataType dtype, double *rtol, double *atol);

/* The outcome of comparing one output. */
typedef struct tether_compare_result {
    DLDataType dtype;  /* the expected array's */
    bool equal;        /* shapes and dtypes agree and every element is within tolerance */
    bool exact;        /* compared exactly (integer or bool) */
    bool same_layout;  /* dtype and shape agree (when false, nothing else was compared) */
    double rtol, atol; /* what was applied (0, 0 when exact) */
    size_t count;      /* elements compared */
    size_t mismatches; /* elements outside the tolerance (or different, exactly) */
    size_t first;      /* index of the first mismatch (when mismatches > 0) */
    double got_first, want_first; /* its values */
    int64_t got_int, want_int;    /* exactly, for integer and bool types (uint64 as its bits) */
    double max_abs; /* worst |got - want| (NaN when one side is NaN and the other is not) */
} tether_compare_result;

/* One line about r into buf: "equal (exact)", "equal (max |diff| 0.00049 within rtol 0.001,
 * atol 0.001)", "DIFFERS: 3 of 6 elements, first [2]: got 5, expected 4 (exact)", "DIFFERS:
 * dtype or shape". */
void tether_compare_describe(const tether_compare_result *r, char *buf, size_t size);
/* Compares got with want. rtol/atol < 0: the defaults of the dtype; for integer and bool types
 * they are ignored (exact). Returns r->equal. */
bool tether_compare_arrays(const tether_npy *got, const tether_npy *want, double rtol, double atol,
                           tether_compare_result *r);

/* Fills n elements of dtype at data with reproducible inputs from *seed (a 32-bit LCG):
 * floats uniform in [-1, 1) (float16/bfloat16 rounded to nearest even), signed integers in
 * [-8, 8), unsigned in [0, 16), bool 0/1. */
void tether_fill_inputs(DLDataType dtype, size_t n, uint32_t *seed, void *data);
/* float -> float16 / bfloat16 bit pattern, rounding to nearest even (NaN stays NaN). */
uint16_t tether_float_to_half(float f);
uint16_t tether_float_to_bfloat16(float f);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_COMPARE_H */
