/*
 * Element values and output comparisons of every element type (tether/compare.h): integers
 * exact as 64-bit integers (2^53 + 1 differs from 2^53), bool exact, floats within their type's
 * default tolerances, NaN equal to NaN, float16/bfloat16 conversions rounding to nearest even,
 * generated inputs in their documented ranges.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tether/compare.h"
#include "tether/crt.h"

static tether_npy arr(DLDataType dt, int64_t n, void *data) {
    tether_npy a;
    memset(&a, 0, sizeof a);
    a.dtype = dt;
    a.ndim = 1;
    a.shape[0] = n;
    a.data = data;
    a.nbytes = (size_t)n * tether_dtype_bytes(dt);
    return a;
}

static void test_exact_integers(void **state) {
    (void)state;
    int64_t x[3] = {1, (1LL << 53) + 1, -3}, y[3] = {1, 1LL << 53, -3};
    tether_npy a = arr(TETHER_INT64, 3, x), b = arr(TETHER_INT64, 3, y);
    tether_compare_result r;
    /* a tolerance given for floats never applies to integers */
    assert_false(tether_compare_arrays(&a, &b, 1, 1, &r));
    assert_true(r.exact);
    assert_int_equal(r.mismatches, 1);
    assert_int_equal(r.first, 1);
    char line[200];
    tether_compare_describe(&r, line, sizeof line);
    assert_string_equal(line, "DIFFERS: 1 of 3 elements, first [1]: got 9007199254740993, "
                              "expected 9007199254740992 (exact)");
    y[1] = x[1];
    assert_true(tether_compare_arrays(&a, &b, -1, -1, &r));
    tether_compare_describe(&r, line, sizeof line);
    assert_string_equal(line, "equal (exact)");
    uint64_t u[2] = {UINT64_MAX, 0}, v[2] = {UINT64_MAX, 0};
    a = arr(TETHER_DTYPE(kDLUInt, 64), 2, u);
    b = arr(TETHER_DTYPE(kDLUInt, 64), 2, v);
    assert_true(tether_compare_arrays(&a, &b, -1, -1, &r));
    assert_int_equal(tether_elem_int(TETHER_DTYPE(kDLInt, 16), (int16_t[]){-2}, 0), -2);
    assert_int_equal(tether_elem_int(TETHER_DTYPE(kDLUInt, 16), (uint16_t[]){65535}, 0), 65535);
    assert_int_equal(tether_elem_int(TETHER_DTYPE(kDLUInt, 32), (uint32_t[]){4000000000u}, 0),
                     4000000000LL);
    uint8_t p[3] = {1, 0, 1}, q[3] = {1, 1, 1};
    a = arr(TETHER_BOOL, 3, p);
    b = arr(TETHER_BOOL, 3, q);
    assert_false(tether_compare_arrays(&a, &b, -1, -1, &r));
    assert_int_equal(r.first, 1);
    /* another dtype or shape is never equal */
    a = arr(TETHER_UINT8, 3, p);
    assert_false(tether_compare_arrays(&a, &b, -1, -1, &r));
    assert_false(r.same_layout);
}

static void test_float_tolerances(void **state) {
    (void)state;
    double rt, at;
    tether_compare_default_tolerance(TETHER_DTYPE(kDLFloat, 16), &rt, &at);
    assert_true(rt == 1e-3 && at == 1e-3);
    tether_compare_default_tolerance(TETHER_DTYPE(kDLBfloat, 16), &rt, &at);
    assert_true(rt == 1e-2 && at == 1e-2);
    tether_compare_default_tolerance(TETHER_FLOAT32, &rt, &at);
    assert_true(rt == 1e-4 && at == 1e-5);
    tether_compare_default_tolerance(TETHER_INT32, &rt, &at);
    assert_true(rt == 0 && at == 0);
    /* float16: one ulp at 1.0 (0x3c01, 1 + 2^-10) is within the default, ten are not */
    uint16_t g[2] = {0x3c01, 0x7e00}, w[2] = {0x3c00, 0x7e01}; /* NaN == NaN */
    tether_npy a = arr(TETHER_DTYPE(kDLFloat, 16), 2, g), b = arr(TETHER_DTYPE(kDLFloat, 16), 2, w);
    tether_compare_result r;
    assert_true(tether_compare_arrays(&a, &b, -1, -1, &r));
    assert_false(r.exact);
    assert_true(r.max_abs == ldexp(1, -10));
    g[0] = 0x3c0a;
    assert_false(tether_compare_arrays(&a, &b, -1, -1, &r));
    assert_true(r.got_first == 1 + 10 * ldexp(1, -10));
    /* the same difference in float32 is far outside float32's tolerance */
    float fg[1] = {1.0009765625f}, fw[1] = {1};
    a = arr(TETHER_FLOAT32, 1, fg);
    b = arr(TETHER_FLOAT32, 1, fw);
    assert_false(tether_compare_arrays(&a, &b, -1, -1, &r));
    assert_true(tether_compare_arrays(&a, &b, 1e-3, 0, &r)); /* given: applies */
    /* bfloat16 two ulps at 1.0 (2^-7 each) pass; infinities must match */
    uint16_t bg[2] = {0x3f82, 0x7f80}, bw[2] = {0x3f80, 0x7f80};
    a = arr(TETHER_DTYPE(kDLBfloat, 16), 2, bg);
    b = arr(TETHER_DTYPE(kDLBfloat, 16), 2, bw);
    assert_true(tether_compare_arrays(&a, &b, -1, -1, &r));
    bw[1] = 0xff80;
    assert_false(tether_compare_arrays(&a, &b, -1, -1, &r));
    double dg[1] = {NAN}, dw[1] = {0};
    a = arr(TETHER_DTYPE(kDLFloat, 64), 1, dg);
    b = arr(TETHER_DTYPE(kDLFloat, 64), 1, dw);
    assert_false(tether_compare_arrays(&a, &b, -1, -1, &r));
    assert_true(isnan(r.max_abs));
}

static void test_conversions_and_inputs(void **state) {
    (void)state;
    assert_int_equal(tether_float_to_half(1.0f), 0x3c00);
    assert_int_equal(tether_float_to_half(-2.0f), 0xc000);
    assert_int_equal(tether_float_to_half(65504.0f), 0x7bff);
    assert_int_equal(tether_float_to_half(65520.0f), 0x7c00); /* rounds to infinity */
    assert_int_equal(tether_float_to_half(ldexpf(1, -24)), 0x0001);
    assert_int_equal(tether_float_to_half(ldexpf(1, -25)), 0x0000);        /* tie to even */
    assert_int_equal(tether_float_to_half(ldexpf(3, -25)), 0x0002);        /* tie to even */
    assert_int_equal(tether_float_to_half(1.0f + ldexpf(1, -11)), 0x3c00); /* tie to even */
    assert_int_equal(tether_float_to_half(1.0f + ldexpf(3, -11)), 0x3c02);
    assert_int_equal(tether_float_to_half(NAN) & 0x7c00, 0x7c00);
    assert_int_not_equal(tether_float_to_half(NAN) & 0x3ff, 0);
    assert_int_equal(tether_float_to_bfloat16(1.0f), 0x3f80);
    assert_int_equal(tether_float_to_bfloat16(1.0f + ldexpf(1, -8)), 0x3f80); /* tie to even */
    assert_int_equal(tether_float_to_bfloat16(1.0f + ldexpf(3, -8)), 0x3f82);
    for (uint32_t h = 0; h < 0x7c00; h++) { /* every finite half survives the round trip */
        float f =
            (float)tether_elem_double(TETHER_DTYPE(kDLFloat, 16), &(uint16_t){(uint16_t)h}, 0);
        assert_int_equal(tether_float_to_half(f), h);
    }
    uint32_t seed = 1;
    int8_t i8[64];
    tether_fill_inputs(TETHER_INT8, 64, &seed, i8);
    for (int i = 0; i < 64; i++) {
        assert_true(i8[i] >= -8 && i8[i] < 8);
    }
    uint8_t b[64];
    tether_fill_inputs(TETHER_BOOL, 64, &seed, b);
    int ones = 0;
    for (int i = 0; i < 64; i++) {
        assert_true(b[i] <= 1);
        ones += b[i];
    }
    assert_true(ones > 0 && ones < 64);
    uint64_t u[16];
    tether_fill_inputs(TETHER_DTYPE(kDLUInt, 64), 16, &seed, u);
    for (int i = 0; i < 16; i++) {
        assert_true(u[i] < 16);
    }
    uint16_t h[16];
    tether_fill_inputs(TETHER_DTYPE(kDLFloat, 16), 16, &seed, h);
    for (int i = 0; i < 16; i++) {
        double x = tether_elem_double(TETHER_DTYPE(kDLFloat, 16), h, (size_t)i);
        assert_true(x >= -1 && x <= 1);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_exact_integers),
                                       cmocka_unit_test(test_float_tolerances),
                                       cmocka_unit_test(test_conversions_and_inputs)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
