/*
 * tether rpc: the TIME evaluator loop, shared by tetherd and MCU firmware. Freestanding.
 *
 * Semantics follow TVM's time evaluator:
 *   1. one warm-up call, not timed;
 *   2. for each of `repeat` repeats: time `number` consecutive calls; while the repeat took less
 *      than min_repeat_ms, grow number to max(min_repeat_ms / (elapsed / number) + 1,
 *      number * 1.618) and time the repeat again; the result is elapsed / number seconds;
 *      number keeps its grown value for later repeats;
 *   3. a clock that reports 0 elapsed for TETHER_TIME_ZERO_LIMIT consecutive measurements of one
 *      repeat ends that repeat (result 0, zero_timer set) instead of looping forever;
 *   4. after each repeat except the last, sleep cooldown_ms (when a sleep hook exists).
 * number never exceeds TETHER_TIME_MAX_NUMBER. A non-zero return from run() stops everything
 * and is reported (TETHER_ERR_STATE naming the call's return code, result in *func_ret).
 */
#ifndef TETHER_RPC_TIMEEVAL_H
#define TETHER_RPC_TIMEEVAL_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TETHER_TIME_ZERO_LIMIT 100
#define TETHER_TIME_MAX_NUMBER 100000000u

typedef struct tether_time_hooks {
    int32_t (*run)(void *ctx);                /* one call of the function; 0 = ok */
    uint64_t (*now_ns)(void *ctx);            /* monotonic clock */
    void (*sleep_ms)(void *ctx, uint32_t ms); /* cooldown; may be NULL */
    void *ctx;
    /* Optional (may be NULL): called once per repeat, after the measurement that gave its
     * result, with the repeat index and the number of calls that measurement timed (the last two
     * now_ns() calls bracket exactly those calls). TIME_SEQ derives per-step times from it. */
    void (*repeat_done)(void *ctx, uint32_t repeat, uint32_t number);
} tether_time_hooks;

typedef struct tether_time_result {
    uint32_t number;  /* calls per repeat at the end */
    uint32_t repeat;  /* results written */
    bool zero_timer;  /* some repeat hit the zero-timer limit */
    int32_t func_ret; /* return code of the failing call, 0 if none */
    uint64_t calls;   /* calls made including the warm-up */
} tether_time_result;

/* number >= 1, 1 <= repeat <= max_out; seconds[i] = mean seconds per call of repeat i. */
int tether_time_evaluate(const tether_time_hooks *h, uint32_t number, uint32_t repeat,
                         uint32_t min_repeat_ms, uint32_t cooldown_ms, double *seconds,
                         uint32_t max_out, tether_time_result *res);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_RPC_TIMEEVAL_H */
