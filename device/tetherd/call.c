/*
 * tetherd: CALL and TIME of CPU functions (see session_internal.h). The core has checked the
 * function, ABI, argument count and kinds and resolved every argument; here the call runs on
 * the session's dedicated stack inside the call guard (guard.c).
 *
 * What must stay true:
 *  - every CPU call runs on the dedicated painted stack (mmap'ed whole pages, guarded below
 *    the last high-water mark); CALL's stack_bytes is the function's own high-water mark (the
 *    call path's bytes measured once per session and subtracted), as the MCU firmware measures;
 *  - a function that fails (status, or a non-zero return) is one ERROR naming it;
 *  - TIME runs the whole evaluator on the dedicated stack (one paint, one measurement).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "session_internal.h"

typedef struct call_ctx {
    const tether_func_entry *entry;
    tether_value args[TETHER_RPC_MAX_ARGS];
    int32_t codes[TETHER_RPC_MAX_ARGS];
    int32_t n;
    int32_t func_ret;
    int status;
    uint64_t elapsed_ns;
    char err[TETHER_ERROR_MSG_MAX];
    session *s;
    size_t max_stack;
} call_ctx;

static uint64_t now_ns(void) {
    return tetherd_now_ns();
}

static void call_tramp(void *p) {
    call_ctx *c = p;
    tether_clear_error();
    uint64_t t0 = now_ns();
    c->status = tether_call(c->entry, c->args, c->codes, c->n, &c->func_ret);
    c->elapsed_ns = now_ns() - t0;
    if (c->status || c->func_ret) {
        snprintf(c->err, sizeof c->err, "%s", tether_last_error());
    }
}

/* A CALL/TIME the core has validated and resolved (function, ABI, counts, argument kinds;
 * scalars, strings and arrays are in call->values, the arrays brought up to date). */
static void prepare_call(session *s, const tether_server_call *call, call_ctx *c) {
    const tether_rpc_invoke *inv = call->inv;
    /* the fields, not the whole context: its argument arrays (1.3 KiB) are filled only as far
     * as there are arguments, and the error text is read only once written */
    c->func_ret = 0;
    c->status = 0;
    c->elapsed_ns = 0;
    c->err[0] = '\0';
    c->max_stack = 0;
    c->s = s;
    c->entry = call->fn.impl;
    c->n = (int32_t)inv->num_args;
    memcpy(c->args, call->values, sizeof c->args[0] * inv->num_args);
    memcpy(c->codes, call->codes, sizeof c->codes[0] * inv->num_args);
}

/* Empty functions of both ABIs that record where their frame is: the stack pointer just before
 * the call instruction is the frame address + 16 on x86-64 (return address, saved frame
 * pointer) and on AArch64 (the frame record). */
static volatile uintptr_t g_empty_frame;

__attribute__((noinline)) static int32_t empty_packed(tether_value *args, int32_t *codes, int32_t n,
                                                      tether_value *ret, int32_t *ret_code,
                                                      void *ctx) {
    (void)args, (void)codes, (void)n, (void)ret, (void)ret_code, (void)ctx;
    g_empty_frame = (uintptr_t)__builtin_frame_address(0);
    return 0;
}

__attribute__((noinline)) static int32_t empty_unpacked(void *a) {
    (void)a;
    g_empty_frame = (uintptr_t)__builtin_frame_address(0);
    return 0;
}

/* The stack bytes of the call path up to the called function (the switch to the call stack,
 * call_tramp, tether_call and its argument array) for the ABI of c's entry, found once per
 * session from where an empty function's frame lies. CALL reports the bytes touched below that
 * point, so stack_bytes is the function's own high-water mark (with the return address on x86,
 * as gcc's -fstack-usage counts it), as the MCU firmware measures it, and the packed and
 * unpacked figures of one model compare the ABIs rather than tetherd's machinery. What the
 * trampoline touches beside the call (reading the clock) can only raise the figure, never
 * lower it below the function's own use. */
static size_t call_overhead(session *s, tether_abi abi) {
    int k = abi == TETHER_ABI_PACKED;
    if (!s->call_overhead[k]) {
        tether_func_entry e = {"(empty)", abi, 1, {0}};
        if (k) {
            e.fn.packed = empty_packed;
        } else {
            e.fn.unpacked = (tether_unpacked_func)empty_unpacked;
        }
        call_ctx c;
        memset(&c, 0, sizeof c);
        c.entry = &e;
        c.s = s;
        c.n = 1;
        c.codes[0] = TETHER_TYPE_NULL;
        g_empty_frame = 0;
        size_t used = 0;
        uintptr_t top = (uintptr_t)s->call_stack.base + s->call_stack.size;
        uintptr_t sp = 0;
        if (!tether_posix_call_on(&s->call_stack, call_tramp, &c, &used) && !c.status) {
            sp = g_empty_frame + 16;
        }
        /* not found (another architecture, an odd frame): nothing is subtracted */
        s->call_overhead[k] = sp > (uintptr_t)s->call_stack.base && sp < top ? top - sp : 1;
    }
    return s->call_overhead[k];
}

static int run_on_stack(call_ctx *c) {
    size_t base = call_overhead(c->s, c->entry->abi);
    size_t used = 0;
    int rc = tether_posix_call_on(&c->s->call_stack, call_tramp, c, &used);
    used = used > base ? used - base : 1; /* touched nothing below the call: its return address */
    if (used > c->max_stack) {
        c->max_stack = used;
    }
    return rc;
}

static int call_failed_reply(const call_ctx *c, uint32_t type) {
    if (c->status) {
        return tether_set_error(c->status, "%s '%s': %s", tether_rpc_type_name(type),
                                c->entry->name, c->err);
    }
    int code =
        c->func_ret < 0 && c->func_ret >= TETHER_ERR_INTERNAL ? c->func_ret : TETHER_ERR_STATE;
    return tether_set_error(code, "function '%s' returned %d%s%s", c->entry->name, (int)c->func_ret,
                            c->err[0] ? ": " : "", c->err);
}

static int on_call(session *s, const tether_server_call *call, tether_rpc_msg *rep) {
    call_ctx c;
    prepare_call(s, call, &c);
    tetherd_call_begin(s, call->id, c.entry->name, s->cfg->call_timeout_ms);
    int rc = run_on_stack(&c);
    tetherd_call_end();
    if (rc) {
        return tether_set_error(rc, "CALL '%s': %s", c.entry->name, tether_last_error());
    }
    if (c.status || c.func_ret) {
        return call_failed_reply(&c, call->type);
    }
    rep->u.call_rep.ret = c.func_ret;
    rep->u.call_rep.elapsed_ns = c.elapsed_ns;
    rep->u.call_rep.stack_bytes = c.max_stack;
    return 0;
}

/* TIME runs the whole evaluator on the dedicated stack (one paint, one measurement), so the
 * timed calls are not slowed by painting; the high-water mark covers the evaluator as well. */
static int32_t time_run(void *p) {
    call_ctx *c = p;
    c->status = tether_call(c->entry, c->args, c->codes, c->n, &c->func_ret);
    if (c->status || c->func_ret) {
        snprintf(c->err, sizeof c->err, "%s", tether_last_error());
        return c->status ? c->status : c->func_ret;
    }
    return 0;
}

typedef struct time_job {
    call_ctx *c;
    const tether_time_hooks *h;
    const tether_rpc_time_req *q;
    double *seconds;
    tether_time_result res;
    int rc;
    char err[TETHER_ERROR_MSG_MAX];
} time_job;

static void time_tramp(void *p) {
    time_job *j = p;
    j->rc = tether_time_evaluate(j->h, j->q->number, j->q->repeat, j->q->min_repeat_ms,
                                 j->q->cooldown_ms, j->seconds, TETHER_RPC_MAX_REPEAT, &j->res);
    if (j->rc) {
        snprintf(j->err, sizeof j->err, "%s", tether_last_error());
    }
}

static void time_sleep(void *p, uint32_t ms) {
    (void)p;
    tetherd_sleep_ms(ms);
}

static uint64_t time_now(void *p) {
    (void)p;
    return now_ns();
}

void tetherd_sleep_ms(uint32_t ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

static int on_time(session *s, const tether_server_call *call, tether_rpc_msg *rep) {
    const tether_rpc_time_req *q = call->time;
    call_ctx c;
    prepare_call(s, call, &c);
    tether_time_hooks h = {time_run, time_now, time_sleep, &c, NULL};
    tether_time_result res;
    /* the timeout covers the whole evaluation, which may legitimately last repeat * min_repeat */
    uint32_t to = s->cfg->call_timeout_ms;
    if (to) {
        to += q->repeat * (q->min_repeat_ms + q->cooldown_ms);
    }
    time_job j = {&c, &h, q, rep->u.time_rep.seconds, {0}, 0, ""};
    size_t used = 0;
    tetherd_call_begin(s, call->id, c.entry->name, to);
    int rc = tether_posix_call_on(&s->call_stack, time_tramp, &j, &used);
    tetherd_call_end();
    if (rc) {
        return tether_set_error(rc, "TIME '%s': %s", c.entry->name, tether_last_error());
    }
    if (j.rc) {
        if (c.status || c.func_ret) {
            return call_failed_reply(&c, call->type);
        }
        return tether_set_error(j.rc, "TIME '%s': %s", c.entry->name, j.err);
    }
    res = j.res;
    rep->u.time_rep.number = res.number;
    rep->u.time_rep.repeat = res.repeat;
    rep->u.time_rep.zero_timer = res.zero_timer;
    return 0;
}

int tetherd_cpu_invoke(session *s, const tether_server_call *call, tether_rpc_msg *rep) {
    return call->type == TETHER_RPC_TIME ? on_time(s, call, rep) : on_call(s, call, rep);
}
