/*
 * tether stats: the statistics of an A/B latency comparison (what `tether ab` reports; docs/cli.md,
 * "How ab measures"): the spread of one side's per-repeat times, and the ratio of two sides as a
 * Hodges-Lehmann estimate with its distribution-free 95% confidence interval, the Mann-Whitney
 * p-value and a verdict (statistical and practical: a significant difference under 1% is "equal
 * within 1%").
 *
 * Pure functions of their inputs: no clock, no randomness, no allocation visible to the caller,
 * nothing printed; the caller owns every array.
 */
#ifndef TETHER_STATS_H
#define TETHER_STATS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tether_spread {
    int n;
    double median, q1, q3, min, max, mean; /* q1/q3: quartiles, linear interpolation */
} tether_spread;
void tether_spread_of(const double *x, int n, tether_spread *out);

typedef enum tether_verdict {
    TETHER_VERDICT_FASTER = 0,         /* B is faster than A: the ratio's 95% CI lies below 1 */
    TETHER_VERDICT_SLOWER = 1,         /* ... above 1 */
    TETHER_VERDICT_NO_DIFFERENCE = 2,  /* the CI contains 1 */
    TETHER_VERDICT_TOO_FEW = 3,        /* too few repeats for a 95% CI (fewer than 4 a side) */
    TETHER_VERDICT_NOT_MEASURABLE = 4, /* a time <= 0 (a zero timer) */
    /* the CI excludes 1, but the estimate is within TETHER_RATIO_EQUAL_WITHIN of 1: a difference
     * too small to matter (deterministic timers, e.g. QEMU -icount, make tiny ones significant) */
    TETHER_VERDICT_EQUAL = 5
} tether_verdict;
/* The practical-significance threshold: a ratio within 1% of 1 is "equal within 1%". */
#define TETHER_RATIO_EQUAL_WITHIN 0.01
/* "faster", "slower", "no_significant_difference", "too_few_repeats", "not_measurable",
 * "equal_within_1_percent" */
const char *tether_verdict_name(tether_verdict v);

typedef struct tether_ratio {
    double estimate;        /* Hodges-Lehmann estimate of B/A */
    double ci_low, ci_high; /* its 95% confidence interval (have_ci) */
    int have_ci;
    double p_value; /* two-sided Mann-Whitney */
    tether_verdict verdict;
} tether_ratio;
/* The ratio of B's times to A's (per-repeat seconds per call). */
void tether_ratio_of(const double *a, int na, const double *b, int nb, tether_ratio *out);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_STATS_H */
