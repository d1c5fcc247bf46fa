/*
 * The statistics of A/B comparisons (tether/stats.h; `tether ab`, docs/cli.md "How ab measures"):
 * the spread of one side's per-repeat times and the ratio of two sides with a distribution-free
 * confidence interval.
 *
 * The ratio B/A is the Hodges-Lehmann estimate on log times: the median of log(b_j) - log(a_i)
 * over all pairs, exponentiated. Its 95% confidence interval is the matching Mann-Whitney one
 * (Hollander & Wolfe): the C-th smallest and C-th largest pairwise differences with
 * C = round(nm/2 - 1.96 sqrt(nm(n+m+1)/12)); the two-sided Mann-Whitney p-value (normal
 * approximation with tie correction and continuity correction) is reported alongside. The
 * verdict follows the interval: above 1 "slower", below 1 "faster", else "no significant
 * difference"; a significant ratio whose estimate is within 1% of 1 (TETHER_RATIO_EQUAL_WITHIN) is
 * "equal within 1%", a difference too small to matter; C < 1 (fewer than 4 repeats a side) gives
 * "too few repeats", a time <= 0 (a zero timer) "not measurable".
 *
 * What must stay true: pure functions of their inputs (no clock, no randomness), so the tests can
 * check them on fixed data; nothing is printed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tether/stats.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* Quantile q of sorted x (linear interpolation between order statistics, NumPy's default). */
static double quantile(const double *x, int n, double q) {
    double h = (n - 1) * q;
    int lo = (int)floor(h);
    if (lo >= n - 1) {
        return x[n - 1];
    }
    return x[lo] + (h - lo) * (x[lo + 1] - x[lo]);
}

void tether_spread_of(const double *x, int n, tether_spread *out) {
    memset(out, 0, sizeof *out);
    out->n = n;
    if (n <= 0) {
        return;
    }
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) {
        return;
    }
    memcpy(s, x, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double sum = 0;
    for (int i = 0; i < n; i++) {
        sum += s[i];
    }
    out->min = s[0];
    out->max = s[n - 1];
    out->mean = sum / n;
    out->median = quantile(s, n, 0.5);
    out->q1 = quantile(s, n, 0.25);
    out->q3 = quantile(s, n, 0.75);
    free(s);
}

const char *tether_verdict_name(tether_verdict v) {
    static const char *const names[] = {
        "faster",          "slower",         "no_significant_difference",
        "too_few_repeats", "not_measurable", "equal_within_1_percent"};
    return v >= 0 && v <= TETHER_VERDICT_EQUAL ? names[v] : "not_measurable";
}

void tether_ratio_of(const double *a, int na, const double *b, int nb, tether_ratio *out) {
    memset(out, 0, sizeof *out);
    out->p_value = 1;
    out->verdict = TETHER_VERDICT_TOO_FEW;
    if (na < 1 || nb < 1) {
        return;
    }
    for (int i = 0; i < na; i++) {
        if (!(a[i] > 0)) {
            out->verdict = TETHER_VERDICT_NOT_MEASURABLE;
        }
    }
    for (int j = 0; j < nb; j++) {
        if (!(b[j] > 0)) {
            out->verdict = TETHER_VERDICT_NOT_MEASURABLE;
        }
    }
    if (out->verdict == TETHER_VERDICT_NOT_MEASURABLE) {
        return;
    }
    size_t nm = (size_t)na * (size_t)nb;
    double *d = malloc(nm * sizeof *d);
    if (!d) {
        return;
    }
    double u = 0; /* Mann-Whitney U of b over a: pairs with b_j > a_i, ties counting half */
    for (int i = 0; i < na; i++) {
        for (int j = 0; j < nb; j++) {
            d[(size_t)i * (size_t)nb + (size_t)j] = log(b[j]) - log(a[i]);
            u += b[j] > a[i] ? 1.0 : b[j] == a[i] ? 0.5 : 0.0;
        }
    }
    qsort(d, nm, sizeof *d, cmp_double);
    double med = nm % 2 ? d[nm / 2] : 0.5 * (d[nm / 2 - 1] + d[nm / 2]);
    out->estimate = exp(med);
    /* p-value: normal approximation, variance corrected for ties in the pooled sample */
    int n = na + nb;
    double *pool = malloc((size_t)n * sizeof *pool);
    double ties = 0;
    if (pool) {
        memcpy(pool, a, (size_t)na * sizeof *pool);
        memcpy(pool + na, b, (size_t)nb * sizeof *pool);
        qsort(pool, (size_t)n, sizeof *pool, cmp_double);
        for (int i = 0; i < n;) {
            int k = i;
            while (k < n && pool[k] == pool[i]) {
                k++;
            }
            double t = k - i;
            ties += t * t * t - t;
            i = k;
        }
        free(pool);
    }
    double mean_u = (double)nm / 2;
    double var = (double)nm / 12.0 * ((n + 1) - ties / ((double)n * (n - 1 > 0 ? n - 1 : 1)));
    if (var > 0) {
        double z = (fabs(u - mean_u) - 0.5) / sqrt(var);
        out->p_value = z > 0 ? erfc(z / sqrt(2.0)) : 1.0;
    }
    /* the confidence interval: order statistics C and nm + 1 - C of the differences */
    double c = (double)nm / 2 - 1.959964 * sqrt((double)nm * (n + 1) / 12.0);
    long ci = lround(c);
    if (ci >= 1) {
        out->ci_low = exp(d[ci - 1]);
        out->ci_high = exp(d[nm - (size_t)ci]);
        out->have_ci = 1;
        out->verdict = out->ci_low > 1    ? TETHER_VERDICT_SLOWER
                       : out->ci_high < 1 ? TETHER_VERDICT_FASTER
                                          : TETHER_VERDICT_NO_DIFFERENCE;
        if (out->verdict != TETHER_VERDICT_NO_DIFFERENCE &&
            fabs(out->estimate - 1) < TETHER_RATIO_EQUAL_WITHIN) {
            out->verdict = TETHER_VERDICT_EQUAL; /* significant, but under 1% */
        }
    }
    free(d);
}
