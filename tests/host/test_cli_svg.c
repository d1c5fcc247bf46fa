/*
 * The CLI's pictures (host/cli/svg.c) on the data a device can send: equal repeats, a zero timer,
 * values a few ULPs apart, NaN and infinity, no repeats, unbounded stacks, names with markup and
 * bytes that are not UTF-8. Each picture must be written, be well-formed XML (xmllint) and
 * render (rsvg-convert), and a drawing must never loop or print NaN.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli.h"
#include "tether/file.h"

/* what svg.c takes from common.c */
int tether_cli_fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}
static int g_wrote;
void tether_cli_wrote(const char *path) {
    (void)path;
    g_wrote++;
}

static char g_dir[64];

/* Writes nothing itself: checks path is written, well-formed, renders, and has no NaN/inf. */
static void check(const char *path) {
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "xmllint --noout '%s' && rsvg-convert -o '%s.png' '%s' && test -s '%s.png'", path,
             path, path, path);
    if (system(cmd) != 0) {
        fail_msg("%s is not well-formed or does not render", path);
    }
    char *text;
    size_t len;
    assert_int_equal(tether_file_read_text(path, 1 << 24, &text, &len), 0);
    const char *pats[] = {"nan\"", "nan,", ">nan<", ">-nan", " nan ", "inf\"", "inf,", " inf "};
    const char *bad = NULL;
    for (size_t i = 0; i < sizeof pats / sizeof pats[0] && !bad; i++) {
        bad = strstr(text, pats[i]);
    }
    if (bad) {
        fail_msg("%s: %.80s", path, bad > text + 40 ? bad - 40 : text);
    }
    free(text);
}

static void bench(const char *name, const double *v, int n, double mean) {
    tether_time_stats ts;
    memset(&ts, 0, sizeof ts);
    ts.repeat = (uint32_t)n;
    ts.number = 10;
    for (int i = 0; i < n; i++) {
        ts.seconds[i] = v[i];
    }
    ts.mean = ts.median = ts.min = ts.max = mean;
    char path[128];
    snprintf(path, sizeof path, "%s/%s.svg", g_dir, name);
    const char *kernels[2] = {"k<0>", "k\xff\xfe"};
    double medians[2] = {1e-6, NAN};
    int before = g_wrote;
    assert_int_equal(
        tether_cli_svg_bench(path, "bench \xe2\x82", "sub & <title>", &ts, 2, kernels, medians), 0);
    assert_int_equal(g_wrote, before + 1);
    check(path);
}

static void test_bench_edges(void **state) {
    (void)state;
    double equal[4] = {2e-6, 2e-6, 2e-6, 2e-6};
    bench("equal", equal, 4, 2e-6);
    double zero[3] = {0, 0, 0}; /* a zero timer */
    bench("zero", zero, 3, 0);
    double t = 1.2345e-6;
    double ulps[3] = {t, nextafter(t, 1), t};
    bench("ulps", ulps, 3, t);
    double bad[4] = {NAN, 1e-6, INFINITY, 2e-6};
    bench("bad", bad, 4, NAN);
    bench("none", NULL, 0, 0);
    double wide[5] = {1e-9, 1, 2e-9, 0.5, 3e-9};
    bench("wide", wide, 5, 0.3);
}

static void test_ab_edges(void **state) {
    (void)state;
    double a[3] = {1e-3, 1.1e-3, 0.9e-3}, b[3] = {NAN, NAN, NAN};
    tether_cli_ab_row rows[3] = {
        {"unpacked <ABI>", 1000, 400, 128, 120, a, 3, "median 1 ms (baseline)"},
        {"packed \xc3\x28", 1200, -1, -1, 140, a, 3, "1.00x"}, /* bad UTF-8, unbounded stack */
        {"OpenCL", -1, -1, -1, -1, b, 3, "no time"},
    };
    char path[128];
    snprintf(path, sizeof path, "%s/ab.svg", g_dir);
    assert_int_equal(tether_cli_svg_ab(path, "ab", "sub", rows, 3), 0);
    check(path);
    char *text;
    size_t len;
    assert_int_equal(tether_file_read_text(path, 1 << 24, &text, &len), 0);
    assert_non_null(strstr(text, ">unpacked &lt;ABI&gt;</text>"));
    assert_non_null(strstr(text, ">packed ?(</text>"));
    assert_non_null(strstr(text, "static unbounded; HWM 140"));
    assert_non_null(strstr(text, "no call stack (OpenCL kernels)"));
    assert_int_equal((int)(strstr(text, "class=\"rep\"") != NULL), 1);
    /* the latency axis is fitted to 0.9..1.1 ms: it says that it does not start at zero */
    assert_non_null(strstr(text, "<g class=\"axis-break\">"));
    assert_non_null(strstr(text, "not at zero</text>"));
    free(text);
    /* size and stack axes start at zero: one break, the latency panel's */
    assert_int_equal(tether_file_read_text(path, 1 << 24, &text, &len), 0);
    const char *first = strstr(text, "axis-break");
    assert_null(strstr(first + 1, "axis-break"));
    free(text);
    /* a path that cannot be written: an error, no file, nothing said */
    int before = g_wrote;
    assert_int_equal(tether_cli_svg_ab("/nonexistent/dir/ab.svg", "ab", "sub", rows, 3), 1);
    assert_int_equal(g_wrote, before);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/tsvgXXXXXX");
    if (!mkdtemp(g_dir)) {
        return 1;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_bench_edges),
                                       cmocka_unit_test(test_ab_edges)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) {
        rc = 1;
    }
    return rc;
}
