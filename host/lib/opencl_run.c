/*
 * Running and timing an OpenCL artifact's launch steps on its device (see opencl_artifact.h):
 * the steps as kernel sequences (LAUNCH_SEQ / TIME_SEQ, chunked to the protocol's limits), or
 * one request per kernel (the bench baseline).
 *
 * What must stay true: the sequences and their arguments are built once, after prepare (the
 * handles do not change between runs), so a run sends the inputs, the prebuilt sequences and
 * reads the outputs, with no per-kernel work on the host; errors name the artifact's step and
 * node; times are sums of the kernels' profiled times as tetherd reports them; the wall clock is
 * measured in runs without profiling events (TETHER_SEQ_NO_PROFILE: the device's host clock
 * around enqueue + clFinish) by time always and by run when asked (unprofiled_wall), else the
 * device's profiled span (each sequence's first START to last END). An artifact with a status
 * object (the run-time error flag, docs/codegen.md "Run-time errors") has it zero when its
 * kernels start (cleared at prepare and after any run or timing that may have set it) and read
 * back after them: a set flag fails the run with the code metadata.json's "errors" gives, naming
 * the node, and copies no output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opencl_artifact_internal.h"

static void make_args(const tether__ocl_artifact *a, const ocl_step *st, tether_remote_arg *args) {
    for (uint32_t k = 0; k < st->nargs; k++) {
        if (st->args[k].mem >= 0) {
            args[k].type_code = TETHER_TYPE_DLTENSOR;
            args[k].v.array = a->mems[st->args[k].mem].handle;
        } else {
            args[k].type_code = TETHER_TYPE_INT;
            args[k].v.i = st->args[k].ival;
        }
    }
}

static int step_error(const ocl_step *st, int rc) {
    char msg[TETHER_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", tether_last_error());
    return tether_set_error(rc, "step '%s'%s%s%s: %s", st->kernel, st->node[0] ? " (node '" : "",
                            st->node, st->node[0] ? "')" : "", msg);
}

void tether__ocl_artifact_per_kernel(tether__ocl_artifact *a, int per_kernel) {
    a->per_kernel = per_kernel;
}

void tether__ocl_artifact_unprofiled_wall(tether__ocl_artifact *a, int on) {
    a->unprofiled_wall = on;
}

/* The launch steps and their chunking (once, at the end of prepare: the handles are fixed
 * after it). */
int tether__ocl_artifact_build_sequences(tether__ocl_artifact *a) {
    if (a->lsteps || a->nsteps == 0) {
        return TETHER_OK;
    }
    size_t nargs = 0;
    for (int i = 0; i < a->nsteps; i++) {
        nargs += a->steps[i].nargs;
    }
    a->lsteps = calloc((size_t)a->nsteps, sizeof *a->lsteps);
    a->largs = calloc(nargs ? nargs : 1, sizeof *a->largs);
    a->chunk_start = calloc((size_t)a->nsteps + 1, sizeof *a->chunk_start);
    if (!a->lsteps || !a->largs || !a->chunk_start) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    size_t used = 0;
    uint32_t in_chunk_args = 0;
    int in_chunk_steps = 0;
    a->nchunks = 0;
    for (int i = 0; i < a->nsteps; i++) {
        const ocl_step *st = &a->steps[i];
        tether_launch_step *l = &a->lsteps[i];
        make_args(a, st, a->largs + used);
        l->func = &st->fn;
        l->args = a->largs + used;
        l->num_args = st->nargs;
        l->work_dim = st->work_dim;
        memcpy(l->global, st->global, sizeof l->global);
        memcpy(l->local, st->local, sizeof l->local);
        used += st->nargs;
        if (i == 0 || in_chunk_steps == TETHER_SEQ_MAX_STEPS ||
            in_chunk_args + st->nargs > TETHER_SEQ_MAX_ARGS) {
            a->chunk_start[a->nchunks++] = i;
            in_chunk_steps = 0;
            in_chunk_args = 0;
        }
        in_chunk_steps++;
        in_chunk_args += st->nargs;
    }
    a->chunk_start[a->nchunks] = a->nsteps;
    return TETHER_OK;
}

/* A kernel sequence's error names the artifact step: the device names the index in the chunk */
static int chunk_error(const tether__ocl_artifact *a, int c, int rc) {
    char msg[TETHER_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", tether_last_error());
    const char *p = strstr(msg, " step ");
    int k = -1;
    if (p && sscanf(p, " step %d", &k) == 1 && k >= 0 &&
        a->chunk_start[c] + k < a->chunk_start[c + 1]) {
        const ocl_step *st = &a->steps[a->chunk_start[c] + k];
        return tether_set_error(rc, "step %d '%s'%s%s%s: %s", a->chunk_start[c] + k, st->kernel,
                                st->node[0] ? " (node '" : "", st->node, st->node[0] ? "')" : "",
                                msg);
    }
    return tether_set_error(rc, "%s", msg);
}

static int copy_inputs(tether__ocl_artifact *a, const float *const *inputs) {
    int rc;
    for (int i = 0; i < a->nin; i++) {
        const ocl_mem *m = &a->mems[a->in[i].mem];
        if (m->bytes &&
            (rc = tether_session_copy_to(a->s, m->handle, 0, inputs[i], (size_t)m->bytes))) {
            return rc;
        }
    }
    return TETHER_OK;
}

static int copy_outputs(tether__ocl_artifact *a, float *const *outputs) {
    int rc;
    for (int i = 0; i < a->nout; i++) {
        const ocl_mem *m = &a->mems[a->out[i].mem];
        if (m->bytes &&
            (rc = tether_session_copy_from(a->s, m->handle, 0, outputs[i], (size_t)m->bytes))) {
            return rc;
        }
    }
    return TETHER_OK;
}

int tether__ocl_artifact_reset_status(tether__ocl_artifact *a) {
    if (a->status_mem < 0 || !a->status_dirty) {
        return TETHER_OK;
    }
    const int32_t zero = 0;
    int rc = tether_session_copy_to(a->s, a->mems[a->status_mem].handle, 0, &zero, sizeof zero);
    if (rc) {
        char msg[TETHER_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", tether_last_error());
        return tether_set_error(rc, "%s: clearing the run-time error flag: %s", a->dir, msg);
    }
    a->status_dirty = 0;
    return TETHER_OK;
}

/* After the kernels: the error flag read back; a value names the check that failed (the run
 * fails with the C path's code, the outputs are not copied). */
static int check_status(tether__ocl_artifact *a) {
    if (a->status_mem < 0) {
        return TETHER_OK;
    }
    int32_t v = 0;
    int rc = tether_session_copy_from(a->s, a->mems[a->status_mem].handle, 0, &v, sizeof v);
    if (rc) {
        return rc;
    }
    if (v == 0) {
        a->status_dirty = 0;
        return TETHER_OK;
    }
    /* the next run clears it first; a failure to clear now is that run's error */
    if (v < 1 || v > a->nerrs) {
        return tether_set_error(TETHER_ERR_INTERNAL,
                                "%s: the run-time error flag holds %d, which metadata.json's "
                                "'errors' (1..%d) does not name",
                                a->dir, (int)v, a->nerrs);
    }
    const ocl_err *x = &a->errs[v - 1];
    (void)tether__ocl_artifact_reset_status(a); /* else the next run clears it first */
    return tether_set_error(x->code,
                            "node '%s' (%s): %s (checked by its OpenCL kernel; no output was "
                            "copied)",
                            x->node, x->op, x->what);
}

static int run_per_kernel(tether__ocl_artifact *a, const float *const *inputs,
                          float *const *outputs, uint64_t *elapsed_ns, uint64_t *step_ns);

int tether__ocl_artifact_run(tether__ocl_artifact *a, const float *const *inputs,
                             float *const *outputs, uint64_t *elapsed_ns, uint64_t *step_ns) {
    if (!a->prepared) {
        return tether_set_error(TETHER_ERR_STATE, "%s: not prepared on a device", a->dir);
    }
    if (a->per_kernel) {
        return run_per_kernel(a, inputs, outputs, elapsed_ns, step_ns);
    }
    int rc = tether__ocl_artifact_build_sequences(a);
    if (rc || (rc = tether__ocl_artifact_reset_status(a)) || (rc = copy_inputs(a, inputs))) {
        return rc;
    }
    a->status_dirty = a->status_mem >= 0; /* until read back as 0 */
    uint64_t total = 0, wall = 0;
    int walled = 1; /* every sequence reported its wall clock */
    for (int c = 0; c < a->nchunks; c++) {
        int first = a->chunk_start[c], n = a->chunk_start[c + 1] - first;
        tether_seq_result res;
        rc = tether_session_launch_seq(a->s, a->lsteps + first, (uint32_t)n, &res);
        if (rc) {
            return chunk_error(a, c, rc);
        }
        total += res.elapsed_ns;
        wall += res.wall_ns;
        walled &= res.wall_ns > 0;
        for (int k = 0; step_ns && k < n; k++) {
            step_ns[first + k] = res.step_ns[k];
        }
    }
    a->wall_ns = walled && a->nchunks ? wall : 0;
    if (a->unprofiled_wall && a->nchunks) { /* the same kernels again, without events */
        wall = 0;
        walled = 1;
        for (int c = 0; c < a->nchunks; c++) {
            int first = a->chunk_start[c], n = a->chunk_start[c + 1] - first;
            tether_seq_result res;
            rc = tether_session_launch_seq_ex(a->s, a->lsteps + first, (uint32_t)n,
                                              TETHER_SEQ_NO_PROFILE, &res);
            if (rc) {
                return chunk_error(a, c, rc);
            }
            wall += res.wall_ns;
            walled &= res.wall_ns > 0;
        }
        a->wall_ns = walled ? wall : 0;
    }
    if ((rc = check_status(a)) || (rc = copy_outputs(a, outputs))) {
        return rc;
    }
    if (elapsed_ns) {
        *elapsed_ns = total;
    }
    return TETHER_OK;
}

uint64_t tether__ocl_artifact_wall_ns(const tether__ocl_artifact *a) {
    return a->wall_ns;
}

static int run_per_kernel(tether__ocl_artifact *a, const float *const *inputs,
                          float *const *outputs, uint64_t *elapsed_ns, uint64_t *step_ns) {
    a->wall_ns = 0; /* one round trip per kernel: no wall clock on the device */
    int rc = tether__ocl_artifact_reset_status(a);
    if (rc || (rc = copy_inputs(a, inputs))) {
        return rc;
    }
    a->status_dirty = a->status_mem >= 0; /* until read back as 0 */
    uint64_t total = 0;
    tether_remote_arg args[OCL_MAX_ARGS];
    for (int i = 0; i < a->nsteps; i++) {
        const ocl_step *st = &a->steps[i];
        make_args(a, st, args);
        tether_call_result res;
        rc = tether_session_launch(a->s, &st->fn, args, st->nargs, st->work_dim, st->global,
                                   st->local, &res);
        if (rc) {
            return step_error(st, rc);
        }
        total += res.elapsed_ns;
        if (step_ns) {
            step_ns[i] = res.elapsed_ns;
        }
    }
    if ((rc = check_status(a)) || (rc = copy_outputs(a, outputs))) {
        return rc;
    }
    if (elapsed_ns) {
        *elapsed_ns = total;
    }
    return TETHER_OK;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double median_of(const double *v, uint32_t n) {
    double t[32];
    memcpy(t, v, sizeof(double) * n);
    qsort(t, n, sizeof(double), cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* mean/median/min/max of out->seconds[0..repeat) */
static void finish_stats(tether_time_stats *out, uint32_t repeat) {
    out->repeat = repeat;
    double mn = out->seconds[0], mx = out->seconds[0], s = 0.0;
    for (uint32_t r = 0; r < repeat; r++) {
        s += out->seconds[r];
        mn = out->seconds[r] < mn ? out->seconds[r] : mn;
        mx = out->seconds[r] > mx ? out->seconds[r] : mx;
    }
    out->mean = s / repeat;
    out->min = mn;
    out->max = mx;
    out->median = median_of(out->seconds, repeat);
}

static int time_per_kernel(tether__ocl_artifact *a, uint32_t number, uint32_t repeat,
                           uint32_t min_repeat_ms, uint32_t cooldown_ms, tether_time_stats *out,
                           double *step_median);

int tether__ocl_artifact_time(tether__ocl_artifact *a, uint32_t number, uint32_t repeat,
                              uint32_t min_repeat_ms, uint32_t cooldown_ms, tether_time_stats *out,
                              double *step_median) {
    if (!a->prepared) {
        return tether_set_error(TETHER_ERR_STATE, "%s: not prepared on a device", a->dir);
    }
    if (repeat < 1 || repeat > 32 || number < 1) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "TIME needs number >= 1, repeat 1..32");
    }
    a->status_dirty = a->status_mem >= 0; /* timed runs do not read the flag back */
    if (a->per_kernel) {
        return time_per_kernel(a, number, repeat, min_repeat_ms, cooldown_ms, out, step_median);
    }
    memset(out, 0, sizeof *out);
    int rc = tether__ocl_artifact_build_sequences(a);
    if (rc) {
        return rc;
    }
    if (a->nsteps == 0) {
        out->number = number;
        finish_stats(out, repeat);
        return TETHER_OK;
    }
    /* one TIME_SEQ per sequence; a model of several sums their per-repeat times */
    for (int c = 0; c < a->nchunks; c++) {
        int first = a->chunk_start[c], n = a->chunk_start[c + 1] - first;
        tether_time_stats ts;
        rc = tether_session_time_launch_seq(a->s, a->lsteps + first, (uint32_t)n, number, repeat,
                                            min_repeat_ms, cooldown_ms, &ts,
                                            step_median ? step_median + first : NULL);
        if (rc) {
            return chunk_error(a, c, rc);
        }
        for (uint32_t r = 0; r < repeat; r++) {
            out->seconds[r] += ts.seconds[r];
        }
        out->zero_timer |= ts.zero_timer;
        out->number = ts.number > out->number ? ts.number : out->number;
    }
    /* the wall clock from the same sequences without profiling events (per-kernel events cost
     * host work per launch on some drivers): each sequence's median, without the round trips */
    for (int c = 0; c < a->nchunks; c++) {
        int first = a->chunk_start[c], n = a->chunk_start[c + 1] - first;
        tether_time_stats ts;
        rc = tether_session_time_launch_seq_ex(a->s, a->lsteps + first, (uint32_t)n,
                                               TETHER_SEQ_NO_PROFILE, number, repeat, min_repeat_ms,
                                               cooldown_ms, &ts, NULL);
        if (rc) {
            return chunk_error(a, c, rc);
        }
        if (ts.wall_seconds <= 0) { /* not reported by this device: no wall clock at all */
            out->wall_seconds = 0;
            break;
        }
        out->wall_seconds += ts.wall_seconds;
    }
    finish_stats(out, repeat);
    return TETHER_OK;
}

static int time_per_kernel(tether__ocl_artifact *a, uint32_t number, uint32_t repeat,
                           uint32_t min_repeat_ms, uint32_t cooldown_ms, tether_time_stats *out,
                           double *step_median) {
    memset(out, 0, sizeof *out);
    double *per = calloc((size_t)(a->nsteps ? a->nsteps : 1) * repeat, sizeof(double));
    if (!per) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    tether_remote_arg args[OCL_MAX_ARGS];
    int rc = TETHER_OK;
    uint32_t used_number = number;
    for (uint32_t r = 0; r < repeat && !rc; r++) {
        if (r && cooldown_ms) {
            struct timespec ts = {(time_t)(cooldown_ms / 1000),
                                  (long)(cooldown_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        double sum = 0.0;
        /* in order, so each kernel reads what its predecessors wrote */
        for (int i = 0; i < a->nsteps && !rc; i++) {
            const ocl_step *st = &a->steps[i];
            make_args(a, st, args);
            tether_time_stats ts;
            rc =
                tether_session_time_launch(a->s, &st->fn, args, st->nargs, st->work_dim, st->global,
                                           st->local, number, 1, min_repeat_ms, 0, &ts);
            if (rc) {
                rc = step_error(st, rc);
                break;
            }
            per[(size_t)i * repeat + r] = ts.mean;
            sum += ts.mean;
            out->zero_timer |= ts.zero_timer;
            used_number = ts.number > used_number ? ts.number : used_number;
        }
        out->seconds[r] = sum;
    }
    if (!rc) {
        out->number = used_number;
        finish_stats(out, repeat);
        for (int i = 0; step_median && i < a->nsteps; i++) {
            step_median[i] = median_of(&per[(size_t)i * repeat], repeat);
        }
    }
    free(per);
    return rc;
}
