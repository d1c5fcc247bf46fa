/*
 * tether host: the session's calls (session_internal.h): CALL with its return code, time and
 * stack high-water mark, TIME with TVM semantics, OpenCL launches and kernel sequences (LAUNCH,
 * LAUNCH_SEQ, TIME_SEQ), RESET and the link's statistics. Requests go through session.c's request
 * path (timeouts, a lost session refused, faults recorded).
 *
 * What must stay true: every argument is checked before a request is sent (counts, NDRanges,
 * TIME's number and repeat); a TIME's timeout covers the measurement the device was asked for;
 * a failure returns a negative status with a message that names the request and the function.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"
#include "tether/crt.h"
#include "tether/rpc.h"

static int fill_nd(tether_rpc_invoke *inv, uint32_t work_dim, const uint64_t *global,
                   const uint64_t *local);

static int fill_invoke(tether_rpc_invoke *inv, const tether_remote_func *f,
                       const tether_remote_arg *args, uint32_t n) {
    if (n > TETHER_RPC_MAX_ARGS) {
        return tether_set_error(TETHER_ERR_LIMIT, "call: %u arguments, at most %u", (unsigned)n,
                                TETHER_RPC_MAX_ARGS);
    }
    inv->func = f->handle;
    inv->abi = f->abi;
    inv->num_args = n;
    for (uint32_t i = 0; i < n; i++) {
        inv->args[i].type_code = args[i].type_code;
        switch (args[i].type_code) {
        case TETHER_TYPE_INT:
            inv->args[i].v.v_int = args[i].v.i;
            break;
        case TETHER_TYPE_UINT:
            inv->args[i].v.v_uint = args[i].v.u;
            break;
        case TETHER_TYPE_FLOAT:
            inv->args[i].v.v_float = args[i].v.f;
            break;
        case TETHER_TYPE_NULL:
            break;
        default:
            inv->args[i].v.v_handle = args[i].v.array;
            break;
        }
    }
    return 0;
}

/* Fills res from a CALL reply; a non-zero return code becomes the error tetherd would have
 * sent (an MCU replies with the code and sends the function's message as a LOG line first). */
static int call_result(tether_session *s, const tether_remote_func *f, const tether_rpc_msg *rep,
                       tether_call_result *res) {
    tether_call_result local;
    if (!res) {
        res = &local;
    }
    memset(res, 0, sizeof *res);
    const tether_rpc_call_rep *c = &rep->u.call_rep;
    res->ret = c->ret;
    res->elapsed_ns = c->elapsed_ns;
    s->last_call_ns = c->elapsed_ns;
    res->stack_bytes = c->stack_bytes;
    res->ret_value.type_code = c->ret_value.type_code;
    switch (c->ret_value.type_code) {
    case TETHER_TYPE_INT:
        res->ret_value.v.i = c->ret_value.v.v_int;
        break;
    case TETHER_TYPE_FLOAT:
        res->ret_value.v.f = c->ret_value.v.v_float;
        break;
    case TETHER_TYPE_UINT:
    case TETHER_TYPE_HANDLE:
        res->ret_value.v.u = c->ret_value.v.v_uint;
        break;
    default:
        res->ret_value.type_code = TETHER_TYPE_NULL;
        break;
    }
    if (c->ret == 0) {
        return 0;
    }
    int code = c->ret < 0 && c->ret >= TETHER_ERR_INTERNAL ? c->ret : TETHER_ERR_STATE;
    /* the firmware's LOG reads "NAME returned N: message" */
    const char *msg = s->last_warn;
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s returned %d: ", f->name, (int)c->ret);
    if (f->name[0] && strncmp(msg, prefix, strlen(prefix)) == 0) {
        msg += strlen(prefix);
    }
    return tether_set_error(code, "CALL failed: function '%s' returned %d%s%s",
                            f->name[0] ? f->name : "?", (int)c->ret, msg[0] ? ": " : "", msg);
}

int tether_session_call(tether_session *s, const tether_remote_func *f,
                        const tether_remote_arg *args, uint32_t num_args, tether_call_result *res) {
    tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_CALL;
    int rc = fill_invoke(&req.u.call_req, f, args, num_args);
    if (rc) {
        return rc;
    }
    rc = tether__session_request(s, &req, &rep);
    if (rc) {
        return rc;
    }
    return call_result(s, f, &rep, res);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int time_args_check(uint32_t number, uint32_t repeat) {
    if (repeat < 1 || repeat > TETHER_RPC_MAX_REPEAT || number < 1) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "time: number must be >= 1 and repeat 1..%u",
                                TETHER_RPC_MAX_REPEAT);
    }
    return 0;
}

/* TIME and TIME_SEQ reply after the whole measurement: wait for what it should take (a repeat
 * grows its number until it lasts min_repeat_ms, which may take up to ~4x that; every call about
 * as long as the last CALL, counted twice) on top of the usual timeout. */
static int time_timeout_ms(const tether_session *s, uint32_t number, uint32_t repeat,
                           uint32_t min_repeat_ms, uint32_t cooldown_ms) {
    double expect_ms = (double)repeat * (4.0 * min_repeat_ms + cooldown_ms) +
                       2.0 * ((double)number * repeat + 1) * (double)s->last_call_ns / 1e6;
    double total = (double)s->timeout_ms + expect_ms;
    return total > INT_MAX ? INT_MAX : (int)total;
}

static int time_stats(tether_time_stats *out, const char *what, uint32_t number, bool zero_timer,
                      uint32_t repeat, const double *seconds);

int tether_session_time(tether_session *s, const tether_remote_func *f,
                        const tether_remote_arg *args, uint32_t num_args, uint32_t number,
                        uint32_t repeat, uint32_t min_repeat_ms, uint32_t cooldown_ms,
                        tether_time_stats *out) {
    return tether_session_time_launch(s, f, args, num_args, 0, NULL, NULL, number, repeat,
                                      min_repeat_ms, cooldown_ms, out);
}

int tether_session_time_launch(tether_session *s, const tether_remote_func *f,
                               const tether_remote_arg *args, uint32_t num_args, uint32_t work_dim,
                               const uint64_t *global, const uint64_t *local, uint32_t number,
                               uint32_t repeat, uint32_t min_repeat_ms, uint32_t cooldown_ms,
                               tether_time_stats *out) {
    int rc = time_args_check(number, repeat);
    if (rc) {
        return rc;
    }
    tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_TIME;
    rc = fill_invoke(&req.u.time_req.invoke, f, args, num_args);
    if (!rc) {
        rc = fill_nd(&req.u.time_req.invoke, work_dim, global, local);
    }
    if (rc) {
        return rc;
    }
    req.u.time_req.number = number;
    req.u.time_req.repeat = repeat;
    req.u.time_req.min_repeat_ms = min_repeat_ms;
    req.u.time_req.cooldown_ms = cooldown_ms;
    rc = tether__session_request_within(
        s, &req, &rep, time_timeout_ms(s, number, repeat, min_repeat_ms, cooldown_ms));
    if (rc) {
        return rc;
    }
    return time_stats(out, "TIME", rep.u.time_rep.number, rep.u.time_rep.zero_timer,
                      rep.u.time_rep.repeat, rep.u.time_rep.seconds);
}

/* out from a TIME / TIME_SEQ reply's fields. */
static int time_stats(tether_time_stats *out, const char *what, uint32_t number, bool zero_timer,
                      uint32_t repeat, const double *seconds) {
    memset(out, 0, sizeof *out);
    out->number = number;
    out->repeat = repeat;
    out->zero_timer = zero_timer;
    if (out->repeat == 0 || out->repeat > 32) {
        return tether_set_error(TETHER_ERR_PROTOCOL, "%s reply with %u repeats", what,
                                (unsigned)out->repeat);
    }
    double sorted[32], sum = 0;
    for (uint32_t i = 0; i < out->repeat; i++) {
        out->seconds[i] = seconds[i];
        sorted[i] = out->seconds[i];
        sum += sorted[i];
    }
    qsort(sorted, out->repeat, sizeof sorted[0], cmp_double);
    out->mean = sum / out->repeat;
    out->min = sorted[0];
    out->max = sorted[out->repeat - 1];
    out->median = out->repeat % 2 ? sorted[out->repeat / 2]
                                  : (sorted[out->repeat / 2 - 1] + sorted[out->repeat / 2]) / 2;
    return 0;
}

int tether_session_reset(tether_session *s) {
    tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_RESET;
    return tether__session_request(s, &req, &rep);
}

static int fill_nd(tether_rpc_invoke *inv, uint32_t work_dim, const uint64_t *global,
                   const uint64_t *local) {
    if (work_dim > TETHER_RPC_MAX_WORK_DIM || (work_dim && !global)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "launch: work_dim must be 1..3 with global sizes");
    }
    inv->work_dim = work_dim;
    for (uint32_t d = 0; d < work_dim; d++) {
        inv->global[d] = global[d];
        inv->local[d] = local ? local[d] : 0;
    }
    return 0;
}

int tether_session_launch(tether_session *s, const tether_remote_func *f,
                          const tether_remote_arg *args, uint32_t num_args, uint32_t work_dim,
                          const uint64_t *global, const uint64_t *local, tether_call_result *res) {
    tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_CALL;
    int rc = fill_invoke(&req.u.call_req, f, args, num_args);
    if (!rc) {
        rc = fill_nd(&req.u.call_req, work_dim, global, local);
    }
    if (rc) {
        return rc;
    }
    rc = tether__session_request(s, &req, &rep);
    if (rc) {
        return rc;
    }
    return call_result(s, f, &rep, res);
}

/* ---- kernel sequences ---- */

/* The wire form of a sequence: steps and one argument pool (malloc'ed, freed by seq_free). */
typedef struct seq_wire {
    tether_rpc_seq_step *steps;
    tether_rpc_arg *args;
} seq_wire;

static void seq_free(seq_wire *w) {
    free(w->steps);
    free(w->args);
}

static int seq_fill(seq_wire *w, tether_rpc_seq_req *q, const tether_launch_step *steps,
                    uint32_t n) {
    memset(w, 0, sizeof *w);
    if (!steps || n == 0 || n > TETHER_RPC_MAX_SEQ_STEPS) {
        return tether_set_error(n ? TETHER_ERR_LIMIT : TETHER_ERR_INVALID_ARG,
                                "kernel sequence: %u steps, 1..%u allowed", (unsigned)n,
                                TETHER_RPC_MAX_SEQ_STEPS);
    }
    uint32_t total = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (!steps[k].func || (steps[k].num_args && !steps[k].args)) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "kernel sequence step %u: no function or arguments",
                                    (unsigned)k);
        }
        if (steps[k].num_args > TETHER_RPC_MAX_ARGS) {
            return tether_set_error(
                TETHER_ERR_LIMIT, "kernel sequence step %u ('%s'): %u arguments, at most %u",
                (unsigned)k, steps[k].func->name, (unsigned)steps[k].num_args, TETHER_RPC_MAX_ARGS);
        }
        total += steps[k].num_args;
    }
    if (total > TETHER_RPC_MAX_SEQ_ARGS) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "kernel sequence: %u arguments in all steps, at most %u",
                                (unsigned)total, TETHER_RPC_MAX_SEQ_ARGS);
    }
    w->steps = calloc(n, sizeof *w->steps);
    w->args = calloc(total ? total : 1, sizeof *w->args);
    if (!w->steps || !w->args) {
        seq_free(w);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    tether_rpc_invoke inv; /* fill_invoke/fill_nd convert one step at a time */
    uint32_t used = 0;
    for (uint32_t k = 0; k < n; k++) {
        const tether_launch_step *st = &steps[k];
        memset(&inv, 0, sizeof inv);
        int rc = fill_invoke(&inv, st->func, st->args, st->num_args);
        if (!rc) {
            rc = fill_nd(&inv, st->work_dim, st->global, st->local);
        }
        if (rc) {
            seq_free(w);
            return rc;
        }
        tether_rpc_seq_step *o = &w->steps[k];
        o->func = inv.func;
        o->abi = inv.abi;
        o->num_args = inv.num_args;
        o->args = w->args + used;
        memcpy(w->args + used, inv.args, sizeof(tether_rpc_arg) * inv.num_args);
        used += inv.num_args;
        o->work_dim = inv.work_dim;
        memcpy(o->global, inv.global, sizeof o->global);
        memcpy(o->local, inv.local, sizeof o->local);
    }
    q->num_steps = n;
    q->steps = w->steps;
    return 0;
}

/* flags: TETHER_SEQ_* bits only (the wire's TETHER_RPC_SEQ_*). */
static int seq_flags_check(const char *what, uint32_t flags) {
    if (flags & ~(uint32_t)TETHER_SEQ_NO_PROFILE) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%s: flags 0x%x has unknown bits (TETHER_SEQ_NO_PROFILE = 1)", what,
                                (unsigned)flags);
    }
    return 0;
}

/* A reply's step count: every step's time, or none when asked without profiling (a device from
 * before the flag ignores it and profiles every step: also accepted). */
static int seq_steps_ok(const char *what, uint32_t got, uint32_t asked, uint32_t flags) {
    if (got == asked || (got == 0 && (flags & TETHER_SEQ_NO_PROFILE))) {
        return 0;
    }
    return tether_set_error(TETHER_ERR_PROTOCOL, "%s reply with %u step times for %u steps", what,
                            (unsigned)got, (unsigned)asked);
}

int tether_session_launch_seq(tether_session *s, const tether_launch_step *steps,
                              uint32_t num_steps, tether_seq_result *res) {
    return tether_session_launch_seq_ex(s, steps, num_steps, 0, res);
}

int tether_session_launch_seq_ex(tether_session *s, const tether_launch_step *steps,
                                 uint32_t num_steps, uint32_t flags, tether_seq_result *res) {
    int rc = seq_flags_check("LAUNCH_SEQ", flags);
    if (rc) {
        return rc;
    }
    tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_LAUNCH_SEQ;
    seq_wire w;
    rc = seq_fill(&w, &req.u.seq_req, steps, num_steps);
    if (rc) {
        return rc;
    }
    req.u.seq_req.flags = flags;
    rc = tether__session_request(s, &req, &rep);
    seq_free(&w);
    if (rc) {
        return rc;
    }
    const tether_rpc_launch_seq_rep *r = &rep.u.launch_seq_rep;
    if ((rc = seq_steps_ok("LAUNCH_SEQ", r->num_steps, num_steps, flags))) {
        return rc;
    }
    s->last_call_ns = r->elapsed_ns;
    if (res) {
        memset(res, 0, sizeof *res);
        res->elapsed_ns = r->elapsed_ns;
        res->num_steps = r->num_steps;
        memcpy(res->step_ns, r->step_ns, sizeof(uint64_t) * r->num_steps);
        res->wall_ns = r->wall_ns;
    }
    return 0;
}

int tether_session_time_launch_seq(tether_session *s, const tether_launch_step *steps,
                                   uint32_t num_steps, uint32_t number, uint32_t repeat,
                                   uint32_t min_repeat_ms, uint32_t cooldown_ms,
                                   tether_time_stats *out, double *step_seconds) {
    return tether_session_time_launch_seq_ex(s, steps, num_steps, 0, number, repeat, min_repeat_ms,
                                             cooldown_ms, out, step_seconds);
}

int tether_session_time_launch_seq_ex(tether_session *s, const tether_launch_step *steps,
                                      uint32_t num_steps, uint32_t flags, uint32_t number,
                                      uint32_t repeat, uint32_t min_repeat_ms, uint32_t cooldown_ms,
                                      tether_time_stats *out, double *step_seconds) {
    int rc = seq_flags_check("TIME_SEQ", flags);
    if (!rc) {
        rc = time_args_check(number, repeat);
    }
    if (rc) {
        return rc;
    }
    tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_TIME_SEQ;
    seq_wire w;
    rc = seq_fill(&w, &req.u.seq_req, steps, num_steps);
    if (rc) {
        return rc;
    }
    req.u.seq_req.number = number;
    req.u.seq_req.repeat = repeat;
    req.u.seq_req.min_repeat_ms = min_repeat_ms;
    req.u.seq_req.cooldown_ms = cooldown_ms;
    req.u.seq_req.flags = flags;
    rc = tether__session_request_within(
        s, &req, &rep, time_timeout_ms(s, number, repeat, min_repeat_ms, cooldown_ms));
    seq_free(&w);
    if (rc) {
        return rc;
    }
    const tether_rpc_time_seq_rep *r = &rep.u.time_seq_rep;
    if ((rc = seq_steps_ok("TIME_SEQ", r->num_steps, num_steps, flags))) {
        return rc;
    }
    rc = time_stats(out, "TIME_SEQ", r->number, r->zero_timer, r->repeat, r->seconds);
    if (!rc) {
        out->wall_seconds = r->wall_seconds;
    }
    if (!rc && step_seconds) { /* none without profiling: 0 each */
        for (uint32_t k = 0; k < num_steps; k++) {
            step_seconds[k] = k < r->num_steps ? r->step_seconds[k] : 0.0;
        }
    }
    return rc;
}

int tether_session_link_stats(const tether_session *s, tether_link_stats *out) {
    if (!s || !out) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "link stats: null argument");
    }
    memset(out, 0, sizeof *out);
    const tether_transport_stats *st = &s->t.stats;
    out->serial = tether__session_is_uart(s);
    out->link2 = s->t.link2;
    out->frames_sent = st->frames_sent;
    out->frames_resent = st->frames_resent;
    out->frames_received = st->frames_received;
    out->frames_dropped = st->frames_dropped;
    out->crc_errors = st->crc_errors;
    out->naks_received = st->naks_received;
    out->naks_sent = st->naks_sent;
    out->bytes_sent = st->bytes_sent;
    out->bytes_received = st->bytes_received;
    out->error_rate = tether_rpc_client_error_rate(&s->c);
    out->chunk = s->c.chunk_now ? s->c.chunk_now : s->chunk;
    out->max_chunk = s->chunk;
    out->rto_ms = s->c.rto_ms;
    out->rtt_ms = s->c.srtt_ms;
    return 0;
}
