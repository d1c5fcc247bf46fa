/*
 * tether rpc tests: the TIME evaluator with a fake clock: warm-up, number growth to reach
 * min_repeat_ms (TVM formula), number kept across repeats, cooldown, the zero-timer case, a
 * failing call, argument checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tether/crt.h"
#include "tether/rpc.h"

typedef struct fake {
    uint64_t now;         /* ns */
    uint64_t per_call_ns; /* clock advance per call */
    uint64_t calls;
    uint64_t fail_at; /* call number that fails (0 = never) */
    uint32_t sleeps, slept_ms;
} fake;

static int32_t run(void *ctx) {
    fake *f = ctx;
    f->calls++;
    f->now += f->per_call_ns;
    return f->fail_at && f->calls == f->fail_at ? 7 : 0;
}
static uint64_t now_ns(void *ctx) {
    return ((fake *)ctx)->now;
}
static void sleep_ms(void *ctx, uint32_t ms) {
    fake *f = ctx;
    f->sleeps++;
    f->slept_ms += ms;
    f->now += (uint64_t)ms * 1000000u;
}

static void test_plain_repeats(void **state) {
    (void)state;
    fake f = {0, 1000, 0, 0, 0, 0};
    tether_time_hooks h = {run, now_ns, sleep_ms, &f, NULL};
    double s[4];
    tether_time_result r;
    assert_int_equal(tether_time_evaluate(&h, 10, 3, 0, 5, s, 4, &r), 0);
    assert_int_equal(r.repeat, 3);
    assert_int_equal(r.number, 10);
    assert_int_equal(f.calls, 1 + 3 * 10); /* one warm-up */
    assert_int_equal(r.calls, 31);
    for (int i = 0; i < 3; i++) {
        assert_true(s[i] > 0.999e-6 && s[i] < 1.001e-6);
    }
    assert_int_equal(f.sleeps, 2); /* between repeats only */
    assert_int_equal(f.slept_ms, 10);
    assert_false(r.zero_timer);
}

static void test_number_grows(void **state) {
    (void)state;
    /* 1 us per call, min_repeat_ms = 1: number 1 -> max(1/(0.001/1)+1, 1.618) = 1001 */
    fake f = {0, 1000, 0, 0, 0, 0};
    tether_time_hooks h = {run, now_ns, NULL, &f, NULL};
    double s[2];
    tether_time_result r;
    assert_int_equal(tether_time_evaluate(&h, 1, 2, 1, 0, s, 2, &r), 0);
    assert_int_equal(r.number, 1001);
    /* warm-up + repeat 0 (1 then 1001 calls) + repeat 1 (1001 calls, no growth needed) */
    assert_int_equal(f.calls, 1 + 1 + 1001 + 1001);
    assert_true(s[0] > 0.999e-6 && s[0] < 1.001e-6);
    assert_true(s[1] > 0.999e-6 && s[1] < 1.001e-6);

    /* growth by the golden ratio when the min_repeat formula gives less: a clock that is
     * coarse (1 ms per 1000 calls... ) -- here 0.9 ms per call with min 1 ms: 1/(0.9/1)+1 = 2.11,
     * 1 * 1.618 -> max = 2.11 -> 2 */
    fake g = {0, 900000, 0, 0, 0, 0};
    tether_time_hooks h2 = {run, now_ns, NULL, &g, NULL};
    assert_int_equal(tether_time_evaluate(&h2, 1, 1, 1, 0, s, 2, &r), 0);
    assert_int_equal(r.number, 2);
    assert_int_equal(g.calls, 1 + 1 + 2);
}

static void test_zero_timer(void **state) {
    (void)state;
    /* the clock never advances: each repeat stops after TETHER_TIME_ZERO_LIMIT tries */
    fake f = {0, 0, 0, 0, 0, 0};
    tether_time_hooks h = {run, now_ns, NULL, &f, NULL};
    double s[2] = {-1, -1};
    tether_time_result r;
    assert_int_equal(tether_time_evaluate(&h, 3, 2, 100, 0, s, 2, &r), 0);
    assert_true(r.zero_timer);
    assert_int_equal(r.repeat, 2);
    assert_true(s[0] == 0.0 && s[1] == 0.0);
    assert_int_equal(r.number, 3); /* never grown by a zero duration */
    assert_int_equal(f.calls, 1 + 2 * TETHER_TIME_ZERO_LIMIT * 3);
    /* without min_repeat_ms a zero reading is still flagged */
    fake g = {0, 0, 0, 0, 0, 0};
    tether_time_hooks h2 = {run, now_ns, NULL, &g, NULL};
    assert_int_equal(tether_time_evaluate(&h2, 1, 1, 0, 0, s, 2, &r), 0);
    assert_true(r.zero_timer);
    assert_int_equal(g.calls, 2);
}

static void test_failures(void **state) {
    (void)state;
    double s[2];
    tether_time_result r;
    fake f = {0, 10, 0, 1, 0, 0};
    tether_time_hooks h = {run, now_ns, NULL, &f, NULL};
    assert_int_equal(tether_time_evaluate(&h, 1, 1, 0, 0, s, 2, &r), TETHER_ERR_STATE);
    assert_int_equal(r.func_ret, 7);
    assert_non_null(strstr(tether_last_error(), "warm-up"));
    fake g = {0, 10, 0, 5, 0, 0};
    tether_time_hooks h2 = {run, now_ns, NULL, &g, NULL};
    assert_int_equal(tether_time_evaluate(&h2, 2, 2, 0, 0, s, 2, &r), TETHER_ERR_STATE);
    assert_int_equal(r.func_ret, 7);
    assert_int_equal(r.repeat, 1); /* first repeat finished before the failing call */
    assert_int_equal(tether_time_evaluate(&h, 0, 1, 0, 0, s, 2, &r), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_time_evaluate(&h, 1, 3, 0, 0, s, 2, &r), TETHER_ERR_LIMIT);
    assert_int_equal(tether_time_evaluate(&h, 1, 0, 0, 0, s, 2, &r), TETHER_ERR_LIMIT);
    tether_time_hooks none = {NULL, now_ns, NULL, &f, NULL};
    assert_int_equal(tether_time_evaluate(&none, 1, 1, 0, 0, s, 2, &r), TETHER_ERR_INVALID_ARG);
}

static void test_number_capped(void **state) {
    (void)state;
    /* 1 ns per call and min_repeat_ms huge: number is capped, the loop ends */
    fake f = {0, 1, 0, 0, 0, 0};
    tether_time_hooks h = {run, now_ns, NULL, &f, NULL};
    double s[1];
    tether_time_result r;
    assert_int_equal(tether_time_evaluate(&h, 50000000, 1, 1000000, 0, s, 1, &r), 0);
    assert_int_equal(r.number, TETHER_TIME_MAX_NUMBER);
}

/* repeat_done: once per repeat, in order, with the number of calls its result measured */
typedef struct done_log {
    fake f;
    uint32_t n;
    uint32_t repeat[8], number[8];
    uint64_t calls_at_now[2]; /* f.calls at the last two clock reads */
    uint64_t measured[8];     /* calls between them when repeat_done ran */
} done_log;
static int32_t run_d(void *ctx) {
    return run(&((done_log *)ctx)->f);
}
static uint64_t now_d(void *ctx) {
    done_log *d = ctx;
    d->calls_at_now[0] = d->calls_at_now[1];
    d->calls_at_now[1] = d->f.calls;
    return d->f.now;
}
static void done_d(void *ctx, uint32_t repeat, uint32_t number) {
    done_log *d = ctx;
    d->repeat[d->n] = repeat;
    d->number[d->n] = number;
    d->measured[d->n] = d->calls_at_now[1] - d->calls_at_now[0];
    d->n++;
}
static void test_repeat_done(void **state) {
    (void)state;
    done_log d;
    memset(&d, 0, sizeof d);
    d.f.per_call_ns = 100000; /* 0.1 ms per call: number grows from 2 to reach 1 ms */
    tether_time_hooks h = {run_d, now_d, NULL, &d, done_d};
    double s[3];
    tether_time_result r;
    assert_int_equal(tether_time_evaluate(&h, 2, 3, 1, 0, s, 3, &r), 0);
    assert_int_equal(d.n, 3);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(d.repeat[i], i);
        assert_true(d.number[i] >= 10);
        assert_int_equal(d.measured[i], d.number[i]); /* the last two clock reads bracket them */
    }
    assert_int_equal(d.number[2], r.number);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_repeats), cmocka_unit_test(test_number_grows),
        cmocka_unit_test(test_zero_timer),    cmocka_unit_test(test_failures),
        cmocka_unit_test(test_number_capped), cmocka_unit_test(test_repeat_done),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
