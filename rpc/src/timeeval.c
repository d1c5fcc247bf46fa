/*
 * tether rpc: the TIME evaluator loop with TVM's semantics (see tether/rpc/timeeval.h).
 *
 * Must stay true: exactly one untimed warm-up call; `number` only grows and never exceeds
 * TETHER_TIME_MAX_NUMBER; a repeat ends after TETHER_TIME_ZERO_LIMIT zero-length measurements
 * even when min_repeat_ms is not reached, so a broken clock cannot hang the device.
 */
#include "tether/rpc/timeeval.h"

#include "tether/crt/error.h"

int tether_time_evaluate(const tether_time_hooks *h, uint32_t number, uint32_t repeat,
                         uint32_t min_repeat_ms, uint32_t cooldown_ms, double *seconds,
                         uint32_t max_out, tether_time_result *res) {
    if (!h || !h->run || !h->now_ns || !seconds || !res) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "time evaluator: missing hook or output");
    }
    if (number == 0 || number > TETHER_TIME_MAX_NUMBER) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "time evaluator: number %u outside [1, %u]",
                                (unsigned)number, (unsigned)TETHER_TIME_MAX_NUMBER);
    }
    if (repeat == 0 || repeat > max_out) {
        return tether_set_error(TETHER_ERR_LIMIT, "time evaluator: repeat %u outside [1, %u]",
                                (unsigned)repeat, (unsigned)max_out);
    }
    res->number = number;
    res->repeat = 0;
    res->zero_timer = false;
    res->func_ret = 0;
    res->calls = 0;

    int32_t rc = h->run(h->ctx); /* warm-up, not timed */
    res->calls++;
    if (rc != 0) {
        res->func_ret = rc;
        return tether_set_error(TETHER_ERR_STATE, "time evaluator: warm-up call returned %d",
                                (int)rc);
    }
    for (uint32_t i = 0; i < repeat; i++) {
        double duration_ms = 0.0;
        int zero_times = 0;
        uint64_t ns = 0;
        do {
            if (duration_ms > 0.0) {
                double by_min = (double)min_repeat_ms / (duration_ms / (double)number) + 1.0;
                double by_ratio = (double)number * 1.618;
                double grown = by_min > by_ratio ? by_min : by_ratio;
                number = grown >= (double)TETHER_TIME_MAX_NUMBER ? TETHER_TIME_MAX_NUMBER
                                                                 : (uint32_t)grown;
            }
            uint64_t t0 = h->now_ns(h->ctx);
            for (uint32_t j = 0; j < number; j++) {
                rc = h->run(h->ctx);
                res->calls++;
                if (rc != 0) {
                    res->func_ret = rc;
                    res->number = number;
                    return tether_set_error(TETHER_ERR_STATE,
                                            "time evaluator: call returned %d (repeat %u)", (int)rc,
                                            (unsigned)i);
                }
            }
            uint64_t t1 = h->now_ns(h->ctx);
            ns = t1 > t0 ? t1 - t0 : 0;
            if (ns == 0) {
                zero_times++;
            }
            duration_ms = (double)ns / 1e6;
        } while (duration_ms < (double)min_repeat_ms && zero_times < TETHER_TIME_ZERO_LIMIT &&
                 number < TETHER_TIME_MAX_NUMBER);
        if (ns == 0) {
            res->zero_timer = true;
        }
        seconds[i] = duration_ms / 1e3 / (double)number;
        res->repeat = i + 1;
        if (h->repeat_done) {
            h->repeat_done(h->ctx, i, number);
        }
        if (cooldown_ms > 0 && h->sleep_ms && i + 1 < repeat) {
            h->sleep_ms(h->ctx, cooldown_ms);
        }
    }
    res->number = number;
    return TETHER_OK;
}
