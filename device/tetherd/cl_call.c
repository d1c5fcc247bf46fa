/*
 * tetherd: OpenCL kernels (see session_internal.h): CALL and TIME of one kernel, and kernel
 * sequences (LAUNCH_SEQ / TIME_SEQ). Built with TETHERD_HAVE_OPENCL only.
 *
 * What must stay true:
 *  - arrays become images (texture scopes) or buffers over the array's bytes (global, made on
 *    first use); a kernel's global buffers are synchronised back only when the host side needs
 *    them (memory.c host_view), so a chain of kernels costs no map/unmap between launches;
 *  - a sequence is checked and resolved whole before anything runs; its steps run back to back
 *    with one wait; errors name the step; times come from event profiling, the wall clock of a
 *    sequence too (the first step's START to the last's END: no host clock in it); a sequence
 *    asked for without profiling (TETHER_RPC_SEQ_NO_PROFILE) makes no event at all and its wall
 *    clock is the host's, from before the first enqueue to the return of the one clFinish;
 *  - kernels run inside the call guard (guard.c), bounded by the daemon's call timeout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"

typedef struct cl_job {
    session *s;
    tetherd_cl_program *prog;
    int kernel;
    tetherd_cl_arg args[TETHER_RPC_MAX_ARGS];
    tether_server_array *arrs[TETHER_RPC_MAX_ARGS];
    const tether_rpc_invoke *inv;
    uint64_t gpu_ns; /* sum of profiled kernel times (the TIME clock) */
    int rc;
    char err[TETHER_ERROR_MSG_MAX];
} cl_job;

static int32_t cl_run(void *p) {
    cl_job *j = p;
    uint64_t ns = 0;
    j->rc = tetherd_cl_launch(j->s->cl, j->prog, j->kernel, j->args, (int)j->inv->num_args,
                              j->inv->work_dim, j->inv->global, j->inv->local, &ns);
    if (j->rc) {
        snprintf(j->err, sizeof j->err, "%s", tether_last_error());
    }
    j->gpu_ns += ns;
    return j->rc;
}

static uint64_t cl_now(void *p) {
    return ((cl_job *)p)->gpu_ns;
}

static void time_sleep(void *p, uint32_t ms) {
    (void)p;
    tetherd_sleep_ms(ms);
}

/* The device's buffer over a global array's bytes (made on first use by a kernel) or its
 * image. */
static int cl_mem_of(session *s, tether_server_array *a, tetherd_cl_mem **out) {
    if (!s->acl[a->index].clm &&
        tetherd_cl_buffer(s->cl, a->data, a->nbytes, &s->acl[a->index].clm)) {
        return -1;
    }
    *out = s->acl[a->index].clm;
    return 0;
}

/* Kernels that ran may have written their global buffers: synchronised when the host needs
 * them (memory.c host_view). */
static void mark_dirty(session *s, tether_server_array *const *arrs, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        if (arrs[i] && arrs[i]->nd.scope == TETHER_SCOPE_GLOBAL) {
            s->acl[arrs[i]->index].dirty = 1;
        }
    }
}

/* CALL or TIME of an OpenCL kernel: arrays become images (texture scopes) or buffers over the
 * array memory (global), scalars are converted to the kernel's parameter types; times come from
 * event profiling. */
int tetherd_cl_invoke(session *s, const tether_server_call *call, tether_rpc_msg *rep) {
    const tether_rpc_invoke *inv = call->inv;
    const tether_rpc_time_req *tq = call->time;
    const tether_server_module *mod = call->fn.impl; /* kernel_at (memory.c) */
    cl_job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.prog = mod->obj;
    j.kernel = (int)call->fn.index;
    j.inv = inv;
    const char *what = tether_rpc_type_name(call->type);
    const char *kname = call->fn.name;
    for (uint32_t i = 0; i < inv->num_args; i++) {
        const tether_rpc_arg *a = &inv->args[i];
        if (call->arrays[i]) { /* resolved by the core */
            if (cl_mem_of(s, call->arrays[i], &j.args[i].mem)) {
                return tether_set_error(TETHER_ERR_IO, "%s '%s': %s", what, kname,
                                        tether_last_error());
            }
            j.arrs[i] = call->arrays[i];
        } else if (a->type_code == TETHER_TYPE_INT || a->type_code == TETHER_TYPE_UINT) {
            j.args[i].type_code = a->type_code;
            j.args[i].i = a->v.v_int;
        } else if (a->type_code == TETHER_TYPE_FLOAT) {
            j.args[i].type_code = a->type_code;
            j.args[i].f = a->v.v_float;
        } else {
            return tether_set_error(TETHER_ERR_UNSUPPORTED, "%s '%s': argument %u has type code %d",
                                    what, kname, (unsigned)i, (int)a->type_code);
        }
    }
    int rc;
    tetherd_call_begin(s, call->id, kname, s->cfg->call_timeout_ms);
    if (tq) {
        tether_time_hooks h = {cl_run, cl_now, time_sleep, &j, NULL};
        tether_time_result res;
        rc = tether_time_evaluate(&h, tq->number, tq->repeat, tq->min_repeat_ms, tq->cooldown_ms,
                                  rep->u.time_rep.seconds, TETHER_RPC_MAX_REPEAT, &res);
        rep->u.time_rep.number = res.number;
        rep->u.time_rep.repeat = res.repeat;
        rep->u.time_rep.zero_timer = res.zero_timer;
    } else {
        rc = cl_run(&j);
        rep->u.call_rep.elapsed_ns = j.gpu_ns;
    }
    tetherd_call_end();
    if (rc) {
        return tether_set_error(rc < 0 ? rc : TETHER_ERR_STATE, "%s '%s': %s", what, kname,
                                j.err[0] ? j.err : tether_last_error());
    }
    mark_dirty(s, j.arrs, inv->num_args);
    return 0;
}

/* A kernel sequence, resolved: per step its program, kernel and converted arguments. */
typedef struct seq_job {
    session *s;
    uint32_t n;
    struct {
        tetherd_cl_program *prog;
        int kernel;
        const char *name;
        uint32_t first_arg, nargs;
    } st[TETHER_RPC_MAX_SEQ_STEPS];
    tetherd_cl_arg args[TETHER_RPC_MAX_SEQ_ARGS];
    tether_server_array *arrs[TETHER_RPC_MAX_SEQ_ARGS];
    const tether_rpc_seq_step *steps;
    void *ev[TETHER_RPC_MAX_SEQ_STEPS];
    uint64_t ns[TETHER_RPC_MAX_SEQ_STEPS];      /* the last run's step times */
    uint64_t cum[TETHER_RPC_MAX_SEQ_STEPS];     /* step times summed over all runs */
    uint64_t mark[2][TETHER_RPC_MAX_SEQ_STEPS]; /* cum at the last two clock reads */
    double *per;                                /* TIME_SEQ: [step][repeat] mean seconds */
    double wall[TETHER_RPC_MAX_REPEAT];         /* TIME_SEQ: per repeat, mean wall seconds */
    uint64_t wall_cum, wall_mark[2];            /* wall ns summed over all runs; at clock reads */
    uint64_t wall_ns;                           /* the last run's wall ns (LAUNCH_SEQ) */
    uint32_t repeat;
    int noprof;      /* TETHER_RPC_SEQ_NO_PROFILE: no events, the host clock around the run */
    uint64_t gpu_ns; /* sum of all runs' step times, unprofiled: walls (the TIME_SEQ clock) */
    int failed_step; /* -1 = none */
    char err[TETHER_ERROR_MSG_MAX];
} seq_job;

/* One run without profiling events: the host clock from before the first enqueue to the return
 * of clFinish (what an application sees: enqueue costs, gaps between kernels and the wait). */
static int32_t seq_run_unprofiled(seq_job *j) {
    uint64_t t0 = tetherd_now_ns();
    int rc = 0;
    for (uint32_t k = 0; k < j->n && !rc; k++) {
        const tether_rpc_seq_step *q = &j->steps[k];
        rc = tetherd_cl_enqueue(j->s->cl, j->st[k].prog, j->st[k].kernel,
                                j->args + j->st[k].first_arg, (int)j->st[k].nargs, q->work_dim,
                                q->global, q->local, NULL);
        if (rc) {
            j->failed_step = (int)k;
            snprintf(j->err, sizeof j->err, "%s", tether_last_error());
        }
    }
    int frc = tetherd_cl_finish(j->s->cl); /* also after a failure: nothing may still run */
    uint64_t span = tetherd_now_ns() - t0;
    if (!rc && frc) { /* without events a failed kernel cannot be told from the others */
        rc = frc;
        snprintf(j->err, sizeof j->err, "%s", tether_last_error());
    }
    if (rc) {
        return rc;
    }
    span = span ? span : 1; /* a clock too coarse still says "measured" */
    j->wall_ns = span;
    j->wall_cum += span;
    j->gpu_ns += span;
    return 0;
}

/* One run of the sequence: every step enqueued back to back, one wait for all. */
static int32_t seq_run(void *p) {
    seq_job *j = p;
    if (j->noprof) {
        return seq_run_unprofiled(j);
    }
    int rc = 0;
    uint32_t k = 0;
    for (; k < j->n && !rc; k++) {
        const tether_rpc_seq_step *q = &j->steps[k];
        rc = tetherd_cl_enqueue(j->s->cl, j->st[k].prog, j->st[k].kernel,
                                j->args + j->st[k].first_arg, (int)j->st[k].nargs, q->work_dim,
                                q->global, q->local, &j->ev[k]);
        if (rc) {
            j->failed_step = (int)k;
            snprintf(j->err, sizeof j->err, "%s", tether_last_error());
        }
    }
    int failed = -1;
    /* wait for what was enqueued even after a failure: nothing may still run afterwards. The
     * wall clock of one inference is the device's: the first kernel's START to the last's END
     * on the events' profiling clock (no host round trip, no host wake-up in it) */
    uint64_t span = 0;
    int wrc = tetherd_cl_wait(j->s->cl, j->ev, (int)(rc ? k - 1 : k), j->ns, &span, &failed);
    if (!rc && wrc) {
        rc = wrc;
        j->failed_step = failed;
        snprintf(j->err, sizeof j->err, "%s", tether_last_error());
    }
    if (rc) {
        return rc;
    }
    j->wall_ns = span;
    j->wall_cum += span;
    for (k = 0; k < j->n; k++) {
        j->cum[k] += j->ns[k];
        j->gpu_ns += j->ns[k];
    }
    return 0;
}

static uint64_t seq_now(void *p) {
    seq_job *j = p;
    memcpy(j->mark[0], j->mark[1], sizeof(uint64_t) * j->n);
    memcpy(j->mark[1], j->cum, sizeof(uint64_t) * j->n);
    j->wall_mark[0] = j->wall_mark[1];
    j->wall_mark[1] = j->wall_cum;
    return j->gpu_ns;
}

static void seq_repeat_done(void *p, uint32_t r, uint32_t number) {
    seq_job *j = p;
    for (uint32_t k = 0; k < j->n; k++) {
        j->per[(size_t)k * j->repeat + r] =
            (double)(j->mark[1][k] - j->mark[0][k]) / 1e9 / (double)number;
    }
    if (r < TETHER_RPC_MAX_REPEAT) {
        j->wall[r] = (double)(j->wall_mark[1] - j->wall_mark[0]) / 1e9 / (double)number;
    }
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* LAUNCH_SEQ / TIME_SEQ: every step checked and resolved first (nothing runs when one is
 * wrong), then the steps run back to back on the queue with one wait; errors name the step. */
static int on_seq(session *s, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    const tether_rpc_seq_req *q = &req->u.seq_req;
    const char *what = tether_rpc_type_name(req->type);
    int timed = req->type == TETHER_RPC_TIME_SEQ;
    if (timed && (q->number < 1 || q->repeat < 1 || q->repeat > TETHER_RPC_MAX_REPEAT)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%s: number must be >= 1 and repeat in 1..%u", what,
                                TETHER_RPC_MAX_REPEAT);
    }
    seq_job *j = calloc(1, sizeof *j);
    if (!j) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    }
    j->s = s;
    j->n = q->num_steps;
    j->steps = q->steps;
    j->noprof = (q->flags & TETHER_RPC_SEQ_NO_PROFILE) != 0;
    j->failed_step = -1;
    uint32_t used = 0;
    int rc = 0;
    for (uint32_t k = 0; k < q->num_steps && !rc; k++) {
        const tether_rpc_seq_step *st = &q->steps[k];
        tether_server_func fn;
        if (!tether__server_find_func(&s->srv, st->func, &fn) || !fn.kernel) {
            rc = tether_set_error(TETHER_ERR_NOT_FOUND,
                                  "%s step %u: handle %llu is not an OpenCL kernel of this session",
                                  what, (unsigned)k, (unsigned long long)st->func);
            break;
        }
        const tether_server_module *mod = fn.impl;
        const char *kname = fn.name;
        j->st[k].prog = mod->obj;
        j->st[k].kernel = (int)fn.index;
        j->st[k].name = kname;
        j->st[k].first_arg = used;
        j->st[k].nargs = st->num_args;
        if ((int)st->num_args != fn.num_args) {
            rc = tether_set_error(TETHER_ERR_MISMATCH,
                                  "%s step %u ('%s'): takes %d arguments, %u given", what,
                                  (unsigned)k, kname, (int)fn.num_args, (unsigned)st->num_args);
            break;
        }
        for (uint32_t i = 0; i < st->num_args && !rc; i++) {
            const tether_rpc_arg *a = &st->args[i];
            tetherd_cl_arg *o = &j->args[used + i];
            if (a->type_code == TETHER_TYPE_DLTENSOR || a->type_code == TETHER_TYPE_HANDLE) {
                tether_server_array *arr = tether_server_find_array(&s->srv, a->v.v_handle);
                if (!arr) {
                    rc = tether_set_error(
                        TETHER_ERR_NOT_FOUND,
                        "%s step %u ('%s'): argument %u: no NDArray with handle %llu", what,
                        (unsigned)k, kname, (unsigned)i, (unsigned long long)a->v.v_handle);
                } else if (cl_mem_of(s, arr, &o->mem)) {
                    rc = tether_set_error(TETHER_ERR_IO, "%s step %u ('%s'): %s", what, (unsigned)k,
                                          kname, tether_last_error());
                } else {
                    j->arrs[used + i] = arr;
                }
            } else if (a->type_code == TETHER_TYPE_INT || a->type_code == TETHER_TYPE_UINT) {
                o->type_code = a->type_code;
                o->i = a->v.v_int;
            } else if (a->type_code == TETHER_TYPE_FLOAT) {
                o->type_code = a->type_code;
                o->f = a->v.v_float;
            } else {
                rc = tether_set_error(TETHER_ERR_UNSUPPORTED,
                                      "%s step %u ('%s'): argument %u has type code %d", what,
                                      (unsigned)k, kname, (unsigned)i, (int)a->type_code);
            }
        }
        used += st->num_args;
    }
    if (rc) {
        free(j);
        return rc;
    }
    uint32_t to = s->cfg->call_timeout_ms;
    if (to && timed) {
        to += q->repeat * (q->min_repeat_ms + q->cooldown_ms);
    }
    tetherd_call_begin(s, req->id, "kernel sequence", to);
    if (timed) {
        j->repeat = q->repeat;
        j->per = calloc((size_t)j->n * q->repeat, sizeof(double));
        tether_time_hooks h = {seq_run, seq_now, time_sleep, j, seq_repeat_done};
        tether_time_result res;
        rc = j->per
                 ? tether_time_evaluate(&h, q->number, q->repeat, q->min_repeat_ms, q->cooldown_ms,
                                        rep->u.time_seq_rep.seconds, TETHER_RPC_MAX_REPEAT, &res)
                 : tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
        if (!rc) {
            rep->u.time_seq_rep.number = res.number;
            rep->u.time_seq_rep.repeat = res.repeat;
            rep->u.time_seq_rep.zero_timer = res.zero_timer;
            rep->u.time_seq_rep.num_steps = j->noprof ? 0 : j->n;
            for (uint32_t k = 0; k < rep->u.time_seq_rep.num_steps; k++) {
                double *v = &j->per[(size_t)k * q->repeat];
                qsort(v, q->repeat, sizeof(double), cmp_dbl);
                uint32_t r = q->repeat;
                rep->u.time_seq_rep.step_seconds[k] =
                    r % 2 ? v[r / 2] : 0.5 * (v[r / 2 - 1] + v[r / 2]);
            }
            uint32_t r = q->repeat;
            qsort(j->wall, r, sizeof(double), cmp_dbl);
            rep->u.time_seq_rep.wall_seconds =
                r % 2 ? j->wall[r / 2] : 0.5 * (j->wall[r / 2 - 1] + j->wall[r / 2]);
        }
    } else {
        rc = seq_run(j);
        rep->u.launch_seq_rep.elapsed_ns = j->noprof ? 0 : j->gpu_ns;
        rep->u.launch_seq_rep.num_steps = j->noprof ? 0 : j->n;
        memcpy(rep->u.launch_seq_rep.step_ns, j->ns,
               sizeof(uint64_t) * rep->u.launch_seq_rep.num_steps);
        rep->u.launch_seq_rep.wall_ns = j->wall_ns;
    }
    tetherd_call_end();
    mark_dirty(s, j->arrs, used);
    if (rc) {
        int code = rc < 0 ? rc : TETHER_ERR_STATE;
        if (j->failed_step >= 0) {
            tether_set_error(code, "%s step %d ('%s'): %s", what, j->failed_step,
                             j->st[j->failed_step].name, j->err);
        } else {
            tether_set_error(code, "%s: %s", what, tether_last_error());
        }
        free(j->per);
        free(j);
        return code;
    }
    free(j->per);
    free(j);
    return 0;
}

/* ops->request of the core: LAUNCH_SEQ / TIME_SEQ (the core sends them here only when HELLO
 * says opencl). */
int tetherd_cl_seq(session *s, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    int rc = tetherd_ensure_cl(s);
    if (rc) {
        return tether_set_error(rc, "%s: %s", tether_rpc_type_name(req->type), tether_last_error());
    }
    return on_seq(s, req, rep);
}
