/*
 * The statistics of A/B comparisons (tether/stats.h, what `tether ab` reports) on fixed data:
 * quartiles, the Hodges-Lehmann ratio, its Mann-Whitney confidence interval and p-value, and the
 * verdicts (faster, slower, no significant difference, too few repeats, not measurable, equal
 * within 1%). No timing is involved.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tether/stats.h"

static void test_spread(void **state) {
    (void)state;
    const double x[] = {5, 1, 4, 2, 3};
    tether_spread s;
    tether_spread_of(x, 5, &s);
    assert_int_equal(s.n, 5);
    assert_float_equal(s.median, 3, 1e-12);
    assert_float_equal(s.q1, 2, 1e-12);
    assert_float_equal(s.q3, 4, 1e-12);
    assert_float_equal(s.min, 1, 1e-12);
    assert_float_equal(s.max, 5, 1e-12);
    assert_float_equal(s.mean, 3, 1e-12);
    const double y[] = {1, 2, 3, 4}; /* interpolated: q1 = 1.75, median 2.5, q3 = 3.25 */
    tether_spread_of(y, 4, &s);
    assert_float_equal(s.q1, 1.75, 1e-12);
    assert_float_equal(s.median, 2.5, 1e-12);
    assert_float_equal(s.q3, 3.25, 1e-12);
    tether_spread_of(y, 1, &s);
    assert_float_equal(s.q1, 1, 1e-12);
    assert_float_equal(s.q3, 1, 1e-12);
}

/* 15 noisy repeats of A; B = A * factor (shuffled) */
static void sample(double *a, double *b, double factor) {
    const double noise[15] = {1.00, 1.03, 0.98, 1.01, 0.99, 1.05, 0.97, 1.02,
                              1.00, 0.96, 1.04, 1.01, 0.99, 1.02, 0.98};
    for (int i = 0; i < 15; i++) {
        a[i] = 20e-6 * noise[i];
        b[i] = 20e-6 * factor * noise[(i * 7) % 15];
    }
}

static void test_ratio_verdicts(void **state) {
    (void)state;
    double a[15], b[15];
    tether_ratio r;
    sample(a, b, 1.5);
    tether_ratio_of(a, 15, b, 15, &r);
    assert_float_equal(r.estimate, 1.5, 0.02);
    assert_true(r.have_ci);
    assert_true(r.ci_low <= r.estimate && r.estimate <= r.ci_high);
    assert_true(r.ci_low > 1.4 && r.ci_high < 1.6);
    assert_true(r.p_value < 1e-4);
    assert_int_equal(r.verdict, TETHER_VERDICT_SLOWER);
    assert_string_equal(tether_verdict_name(r.verdict), "slower");

    sample(a, b, 0.8);
    tether_ratio_of(a, 15, b, 15, &r);
    assert_float_equal(r.estimate, 0.8, 0.02);
    assert_int_equal(r.verdict, TETHER_VERDICT_FASTER);

    /* the same distribution: the interval holds 1 */
    sample(a, b, 1.0);
    tether_ratio_of(a, 15, b, 15, &r);
    assert_float_equal(r.estimate, 1.0, 1e-9);
    assert_true(r.ci_low < 1 && r.ci_high > 1);
    assert_true(r.p_value > 0.5);
    assert_int_equal(r.verdict, TETHER_VERDICT_NO_DIFFERENCE);
    assert_string_equal(tether_verdict_name(r.verdict), "no_significant_difference");

    /* a 1% shift inside 4% noise is not significant */
    sample(a, b, 1.01);
    tether_ratio_of(a, 15, b, 15, &r);
    assert_int_equal(r.verdict, TETHER_VERDICT_NO_DIFFERENCE);

    /* deterministic timings (QEMU -icount): B 0.2% slower on every repeat is significant, but
     * under the 1% threshold: equal within 1%; 2% is slower */
    for (int i = 0; i < 15; i++) {
        a[i] = 1000e-6 + (i % 3) * 1e-9;
        b[i] = a[i] * 1.002;
    }
    tether_ratio_of(a, 15, b, 15, &r);
    assert_true(r.have_ci && r.ci_low > 1);
    assert_true(r.p_value < 1e-4);
    assert_float_equal(r.estimate, 1.002, 1e-4);
    assert_int_equal(r.verdict, TETHER_VERDICT_EQUAL);
    assert_string_equal(tether_verdict_name(r.verdict), "equal_within_1_percent");
    for (int i = 0; i < 15; i++) {
        b[i] = a[i] * 0.998;
    }
    tether_ratio_of(a, 15, b, 15, &r);
    assert_int_equal(r.verdict, TETHER_VERDICT_EQUAL);
    for (int i = 0; i < 15; i++) {
        b[i] = a[i] * 1.02;
    }
    tether_ratio_of(a, 15, b, 15, &r);
    assert_int_equal(r.verdict, TETHER_VERDICT_SLOWER);

    /* n = m = 3: no 95% interval exists (the smallest two-sided p is 0.1) */
    sample(a, b, 2.0);
    tether_ratio_of(a, 3, b, 3, &r);
    assert_false(r.have_ci);
    assert_int_equal(r.verdict, TETHER_VERDICT_TOO_FEW);
    assert_float_equal(r.estimate, 2.0, 0.1);
    /* n = m = 4: the widest interval, all pairs on one side */
    tether_ratio_of(a, 4, b, 4, &r);
    assert_true(r.have_ci);
    assert_int_equal(r.verdict, TETHER_VERDICT_SLOWER);
    tether_ratio_of(a, 1, b, 1, &r);
    assert_int_equal(r.verdict, TETHER_VERDICT_TOO_FEW);

    /* a zero timer */
    b[2] = 0;
    tether_ratio_of(a, 15, b, 15, &r);
    assert_int_equal(r.verdict, TETHER_VERDICT_NOT_MEASURABLE);
    assert_string_equal(tether_verdict_name(r.verdict), "not_measurable");
    assert_string_equal(tether_verdict_name(TETHER_VERDICT_TOO_FEW), "too_few_repeats");
}

/* Hodges-Lehmann on a hand-checked case: a = {1, 2, 4}, b = {2, 4, 8} -> the pairwise log ratios
 * are log2 * {1, 0, -1, 2, 1, 0, 3, 2, 1}: median log2 * 1, estimate 2; U = 7 of 9 (ties count
 * half), and the pooled sample has two ties (2 and 4). */
static void test_ratio_by_hand(void **state) {
    (void)state;
    const double a[] = {1, 2, 4}, b[] = {2, 4, 8};
    tether_ratio r;
    tether_ratio_of(a, 3, b, 3, &r);
    assert_float_equal(r.estimate, 2.0, 1e-12);
    /* z = (|7 - 4.5| - 0.5) / sqrt(9/12 * (7 - 12/30)) */
    double z = 2.0 / sqrt(9.0 / 12.0 * (7.0 - 12.0 / 30.0));
    assert_float_equal(r.p_value, erfc(z / sqrt(2.0)), 1e-12);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spread),
        cmocka_unit_test(test_ratio_verdicts),
        cmocka_unit_test(test_ratio_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
