/*
 * `tether tune MODEL --device URL [--trials N] [--log FILE] [--time-budget S]` (docs/tune.md):
 * schedule search measured on the device. Each distinct workload of the model (tether_workload_
 * key of a conv2d, dense or matmul node after the passes) is tuned once: the default schedule
 * first, then random candidates over its knobs, then local search around the best (one knob
 * moved one step). A candidate is the whole model compiled with that node schedule for the
 * workload's nodes (so the kernel is the one the model runs, in the model's layouts); while the
 * device times one candidate's kernel through its registry function (TIME: seconds on tetherd,
 * cycles on an MCU board, exact under QEMU icount), a worker thread already compiles the next.
 * On an MCU board each candidate is linked as a RAM image against its firmware and uploaded. Every
 * measurement is appended to the log at once; a rerun with the same log resumes (measured
 * candidates are not measured again, a workload with its trials done is skipped), and workloads
 * shared by several models are tuned once. A workload whose knob space is used up before its
 * trials are done stops early and says so.
 *
 * What must stay true: nothing but the log is written outside temporary folders, which are
 * removed on every path; a candidate that fails to compile or run is recorded as failed (us < 0)
 * and never chosen; records are for the exact target and CPU of the device.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "tether/artifact.h"
#include "tether/compiler.h"
#include "tether/device_compile.h"
#include "tether/crt.h"
#include "tether/file.h"
#include "tether/host.h"

#ifdef TETHER_HAVE_COMPILER

typedef struct workload {
    char key[TETHER_WORKLOAD_MAX];
    int node;       /* first node of the workload in the compiled graph */
    int func_index; /* its function's index among the module's operator functions */
    int nnodes;     /* nodes of the model with this workload */
    tether_op op;
    int depthwise; /* a conv with one input and one output channel per group */
    int blocked;   /* its kernel is channel-blocked in the default build */
    int scalar;    /* an MCU target: the scalar kernels */
} workload;

/* The knobs a workload's operator uses, with their ranges (0 = the default/auto value). */
typedef struct knob {
    const char *name;
    size_t off;
    int lo, hi; /* the range; with pow2, of the exponent (the value is 1 << it) */
    int pow2;
} knob;

#define K(f, lo, hi)                                                                               \
    { #f, offsetof(tether_schedule, f), lo, hi, 0 }
/* Each kernel family reads its own knobs (varying the others would measure the same code
 * again): a dense (or grouped) conv in plain NCHW or channel-blocked, a depthwise one, and the
 * scalar kernels of MCU targets (vector width 0). */
static const knob conv_knobs[] = {K(conv_oc_block, 1, 8), K(conv_col_vectors, 1, 4)};
static const knob conv_blocked_knobs[] = {K(nchwc_oc_vectors, 1, 8), K(nchwc_pixels, 1, 16)};
static const knob dw_knobs[] = {K(dw_col_vectors, 1, 8)};
static const knob dw_blocked_knobs[] = {K(nchwc_dw_pixels, 1, 16)};
static const knob scalar_conv_knobs[] = {K(conv_oc_block, 1, 8)};
static const knob dense_knobs[] = {K(gemv_rows, 1, 8)};
static const knob matmul_knobs[] = {K(gemm_rows, 1, 8), K(gemm_col_vectors, 1, 4)};
/* OpenCL: the launch's work-group size, 8 .. 256 */
static const knob ocl_knobs[] = {{"local_size", offsetof(tether_schedule, local_size), 3, 8, 1}};
/* OpenCL GPU kernels (docs/codegen.md): dense's split-K factor, conv's GEMM tiles */
static const knob ocl_dense_knobs[] = {
    {"local_size", offsetof(tether_schedule, local_size), 3, 8, 1},
    {"ocl_split_k", offsetof(tether_schedule, ocl_split_k), 1, 8, 1}};
static const knob ocl_conv_knobs[] = {
    {"local_size", offsetof(tether_schedule, local_size), 3, 8, 1},
    {"ocl_tile_m", offsetof(tether_schedule, ocl_tile_m), 4, 6, 1},
    {"ocl_tile_n", offsetof(tether_schedule, ocl_tile_n), 4, 6, 1}};
#undef K

static int g_opencl; /* --backend opencl: every kernel's work-group size */

#define LIST(a) (*n = (int)(sizeof a / sizeof *a), a)

/* The knobs of workload w's kernel: blocked = its node's kernel is channel-blocked in the
 * default build, scalar = an MCU target (no vector kernels). NULL with *n 0: none. */
static const knob *knobs_of(tether_op op, int depthwise, int blocked, int scalar, int *n) {
    if (g_opencl) {
        if (op == TETHER_OP_DENSE) {
            return LIST(ocl_dense_knobs);
        }
        if (op == TETHER_OP_CONV2D) {
            return LIST(ocl_conv_knobs);
        }
        return LIST(ocl_knobs);
    }
    if (op == TETHER_OP_CONV2D && scalar) {
        if (depthwise) { /* the scalar depthwise kernel has no knob */
            *n = 0;
            return NULL;
        }
        return LIST(scalar_conv_knobs);
    }
    if (op == TETHER_OP_CONV2D && depthwise) {
        return blocked ? LIST(dw_blocked_knobs) : LIST(dw_knobs);
    }
    if (op == TETHER_OP_CONV2D) {
        return blocked ? LIST(conv_blocked_knobs) : LIST(conv_knobs);
    }
    if (op == TETHER_OP_MATMUL && scalar) {
        *n = 0;
        return NULL;
    }
    if (op == TETHER_OP_DENSE) {
        *n = (int)(sizeof dense_knobs / sizeof *dense_knobs);
        return dense_knobs;
    }
    *n = (int)(sizeof matmul_knobs / sizeof *matmul_knobs);
    return matmul_knobs;
}
#undef LIST

static int *knob_ptr(tether_schedule *s, const knob *k) {
    return (int *)((char *)s + k->off);
}

static int same_knobs(const tether_schedule *a, const tether_schedule *b, const knob *ks, int nk) {
    for (int i = 0; i < nk; i++) {
        if (*knob_ptr((tether_schedule *)a, &ks[i]) != *knob_ptr((tether_schedule *)b, &ks[i])) {
            return 0;
        }
    }
    return 1;
}

static uint32_t rnd(uint64_t *st) {
    *st = *st * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*st >> 33);
}

/* The next candidate for workload w: trial 0 the default, then random ones for a third of the
 * trials, then one knob of the best moved one step up or down (random again when every
 * neighbour is measured); never one already measured or being measured (gives up after 200
 * draws and returns 0). */
static int next_candidate(const tether_tuning_log *log, const workload *w, const char *target,
                          const char *cpu, int trial, int trials, uint64_t *seed,
                          const tether_schedule *base, const tether_schedule *pending,
                          tether_schedule *out) {
    int nk;
    const knob *ks = knobs_of(w->op, w->depthwise, w->blocked, w->scalar, &nk);
    if (nk == 0 && trial > 0) {
        return 0; /* no knob: the default is the only candidate */
    }
    const tether_tune_record *best = NULL;
    for (int i = 0; i < log->n; i++) {
        const tether_tune_record *r = &log->records[i];
        if (r->us >= 0 && !strcmp(r->workload, w->key) && !strcmp(r->target, target) &&
            !strcmp(r->cpu, cpu) && (!best || r->us < best->us)) {
            best = r;
        }
    }
    for (int attempt = 0; attempt < 200; attempt++) {
        tether_schedule c = *base;
        if (trial > 0 || attempt > 0) {
            if (best && trial >= trials / 3 && attempt <= 100) { /* then random again */
                c = best->schedule;
                const knob *k = &ks[rnd(seed) % (uint32_t)nk];
                int *v = knob_ptr(&c, k);
                int mid = (k->lo + k->hi) / 2;
                int cur = *v ? *v : k->pow2 ? 1 << mid : mid;
                if (k->pow2) { /* move the exponent */
                    int ex = 0;
                    while ((1 << (ex + 1)) <= cur) {
                        ex++;
                    }
                    ex += rnd(seed) & 1 ? 1 : -1;
                    ex = ex < k->lo ? k->lo : ex > k->hi ? k->hi : ex;
                    *v = 1 << ex;
                } else {
                    cur += rnd(seed) & 1 ? 1 : -1;
                    *v = cur < k->lo ? k->lo : cur > k->hi ? k->hi : cur;
                }
            } else {
                for (int i = 0; i < nk; i++) {
                    int x = ks[i].lo + (int)(rnd(seed) % (uint32_t)(ks[i].hi - ks[i].lo + 1));
                    *knob_ptr(&c, &ks[i]) = ks[i].pow2 ? 1 << x : x;
                }
            }
        }
        int seen = pending && same_knobs(pending, &c, ks, nk); /* being measured now */
        for (int i = 0; i < log->n && !seen; i++) {
            const tether_tune_record *r = &log->records[i];
            seen = !strcmp(r->workload, w->key) && !strcmp(r->target, target) &&
                   !strcmp(r->cpu, cpu) && same_knobs(&r->schedule, &c, ks, nk);
        }
        if (!seen) {
            *out = c;
            return 1;
        }
    }
    return 0;
}

static int measured(const tether_tuning_log *log, const workload *w, const char *target,
                    const char *cpu, double *best, double *first) {
    int n = 0;
    *best = -1;
    *first = -1;
    for (int i = 0; i < log->n; i++) {
        const tether_tune_record *r = &log->records[i];
        if (!strcmp(r->workload, w->key) && !strcmp(r->target, target) && !strcmp(r->cpu, cpu)) {
            if (r->trial == 0 && r->us >= 0) {
                *first = r->us;
            }
            if (r->us >= 0 && (*best < 0 || r->us < *best)) {
                *best = r->us;
            }
            n++;
        }
    }
    return n;
}

/* ---- compiling candidates (on a worker thread) ---- */

typedef struct build_job {
    const char *model;
    tether_session *s; /* only its HELLO is read here (the device measures meanwhile) */
    const tether_device_compile_options *base;
    tether_node_schedule ns;
    char dir[600];
    char lib[900];
    int rc;
    char err[512];
} build_job;

static void *build_run(void *p) {
    build_job *j = p;
    tether_device_compile_options o = *j->base; /* its pointers stay into base */
    o.compile.codegen.node_schedules = &j->ns;
    o.compile.codegen.nnode_schedules = 1;
    tether_compile_result res;
    if (g_opencl) {
        o.compile.opencl.node_schedules = &j->ns;
        o.compile.opencl.nnode_schedules = 1;
    }
    /* compiled for the device (tether/device_compile.h); time_candidate loads it */
    j->rc = tether_compile_for_device(j->s, j->model, j->dir, &o, &res, NULL);
    if (j->rc) {
        snprintf(j->err, sizeof j->err, "%s", tether_last_error());
    } else if (!g_opencl) {
        snprintf(j->lib, sizeof j->lib, "%s/%s", j->dir, res.build.library);
    }
    return NULL;
}

/* Times operator function `func` of the library at path: its arrays allocated on the device
 * with the node's shapes (contents as the device leaves them), median microseconds in *us. */
static uint32_t min_repeat_ms = 5; /* --min-repeat-ms: each repeat at least this long */

static int time_candidate(tether_session *s, const char *path, const char *target,
                          const char *firmware, const char *func, const tether_ir_graph *g,
                          int node, uint32_t number, uint32_t repeat, double *us, char *err,
                          size_t errn) {
    uint64_t module;
    tether_remote_func f;
    memset(&f, 0, sizeof f);
    /* a shared object for tetherd, a RAM image linked against an MCU board's firmware */
    int rc = tether_cli_load_module(s, path, target, firmware, "tune", &module, NULL, NULL);
    if (!rc) {
        rc = tether_session_get_function(s, module, func, &f);
    }
    const tether_ir_node *nd = &g->nodes[node];
    tether_remote_arg args[TETHER_IR_MAX_INPUTS + 1];
    uint32_t na = 0;
    int32_t code = f.abi == TETHER_ABI_PACKED ? TETHER_TYPE_DLTENSOR : TETHER_TYPE_HANDLE;
    for (int i = 0; !rc && i <= nd->ninputs; i++) {
        int t = i < nd->ninputs ? nd->inputs[i] : nd->outputs[0];
        if (t < 0) {
            continue;
        }
        const tether_ir_tensor *x = &g->tensors[t];
        uint64_t h;
        rc = tether_session_alloc(s, x->shape, x->ndim, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", &h,
                                  NULL);
        args[na].type_code = code;
        args[na++].v.array = h;
    }
    tether_time_stats ts;
    tether_call_result cr;
    if (!rc) { /* warm-up: caches, lazy binding, the painted stack */
        rc = tether_session_call(s, &f, args, na, &cr);
    }
    if (!rc) {
        rc = tether_session_time(s, &f, args, na, number, repeat, min_repeat_ms, 0, &ts);
    }
    if (rc) {
        snprintf(err, errn, "%s", tether_last_error());
    } else {
        *us = ts.median * 1e6;
    }
    int rrc = tether_session_reset(s); /* frees the arrays, unloads the module */
    return rc ? rc : rrc;
}

/* Times the OpenCL artifact in dir: inputs zero, the sequence timed with TIME_SEQ, the median
 * of the launch of node `node` in *us. */
static int time_opencl(tether_session *s, const char *dir, const char *node, uint32_t number,
                       uint32_t repeat, double *us, char *err, size_t errn) {
    tether_artifact *a = NULL;
    int rc = tether_artifact_open(dir, &a);
    int nin = rc ? 0 : tether_artifact_num_inputs(a);
    int nout = rc ? 0 : tether_artifact_num_outputs(a);
    void **bufs = calloc((size_t)(nin + nout + 1), sizeof *bufs);
    rc = rc ? rc : bufs ? 0 : TETHER_ERR_OUT_OF_MEMORY;
    for (int k = 0; !rc && k < nin + nout; k++) {
        tether_artifact_io io;
        rc = tether_artifact_io_of(a, k >= nin, k >= nin ? k - nin : k, &io);
        bufs[k] = rc ? NULL : calloc(io.nbytes ? io.nbytes : 1, 1);
        rc = rc ? rc : bufs[k] ? 0 : TETHER_ERR_OUT_OF_MEMORY;
    }
    if (!rc) {
        rc = tether_artifact_prepare(a, s, NULL);
    }
    if (!rc) {
        rc = tether_artifact_run(a, (const void *const *)bufs, bufs + nin, NULL, NULL);
    }
    int nk = rc ? 0 : tether_artifact_num_kernels(a);
    double *med = calloc((size_t)(nk ? nk : 1), sizeof *med);
    tether_time_stats ts;
    if (!rc) {
        rc = med ? tether_artifact_time(a, number, repeat, min_repeat_ms, 0, &ts, med)
                 : TETHER_ERR_OUT_OF_MEMORY;
    }
    if (rc) {
        snprintf(err, errn, "%s", tether_last_error());
    } else {
        rc = -1;
        for (int k = 0; k < nk; k++) {
            const char *kn, *nn;
            tether_artifact_kernel(a, k, &kn, &nn);
            if (nn && !strcmp(nn, node)) {
                *us = med[k] * 1e6;
                rc = 0;
                break;
            }
        }
        if (rc) {
            snprintf(err, errn, "no launch of node '%s' in %s", node, dir);
        }
    }
    free(med);
    for (int k = 0; bufs && k < nin + nout; k++) {
        free(bufs[k]);
    }
    free(bufs);
    tether_artifact_free(a);
    int rrc = tether_session_reset(s);
    return rc ? rc : rrc;
}

/* Whether the default build's C source (text, NULL = unknown) emitted node `name`'s kernel
 * channel-blocked: its operator comment (`/+ NAME: op(...` ... `+/`) names such a layout. */
static int kernel_is_blocked(const char *text, const char *name) {
    char head[300];
    snprintf(head, sizeof head, "/* %s: ", name);
    const char *p = text ? strstr(text, head) : NULL, *end = p ? strstr(p, "*/") : NULL;
    const char *q = end ? strstr(p, "channel-blocked") : NULL;
    return q && q < end;
}

/* Workload w stops at trial t of `trials` because next_candidate found no unmeasured candidate:
 * says so, with the size of its knob space and how many of it the log holds. */
static void say_exhausted(const tether_tuning_log *log, const workload *w, const char *target,
                          const char *cpu, int t, long trials) {
    int nk;
    const knob *ks = knobs_of(w->op, w->depthwise, w->blocked, w->scalar, &nk);
    long space = 1;
    for (int i = 0; i < nk; i++) {
        space *= ks[i].hi - ks[i].lo + 1;
    }
    double best, first;
    int n = measured(log, w, target, cpu, &best, &first);
    if (n >= space) {
        printf("  the search space is exhausted: all %ld candidates of its knobs are measured; "
               "stopping this workload after %d of %ld trials\n",
               space, t, trials);
    } else {
        printf("  no unmeasured candidate found (%d of the %ld of its knobs measured); stopping "
               "this workload after %d of %ld trials\n",
               n, space, t, trials);
    }
    fflush(stdout);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char tune_usage[] =
    "usage: tether tune MODEL [--device URL] [--backend c|opencl] [--trials N] [--log FILE]\n"
    "                   [--time-budget S] [--number N] [--repeat R] [--min-repeat-ms MS]\n"
    "                   [--seed N] [--token-file F] [--timeout-ms MS] [--wait] [--firmware PATH]\n"
    "Searches the schedule knobs of every distinct conv2d/dense/matmul workload of MODEL,\n"
    "measured on the device (docs/tune.md):\n"
    "  --device URL      where to measure (default $TETHER_DEVICE, else local:)\n"
    "  --backend opencl  tune the work-group size of every OpenCL kernel instead (records for\n"
    "                    target \"opencl\"; `compile|run --backend opencl --tuning-log`)\n"
    "  --trials N        candidates per workload, the default schedule included (default 16)\n"
    "  --log FILE        the tuning log: every measurement is appended; a rerun resumes\n"
    "                    (default tune.json)\n"
    "  --time-budget S   stop after S seconds (a rerun goes on where it stopped; default none)\n"
    "  --number N, --repeat R, --min-repeat-ms MS  TIME of one candidate after a warm-up call:\n"
    "                    N calls per repeat (default 20, grown to fill MS, default 5), R\n"
    "                    repeats (default 5), the median (outliers do not move it)\n"
    "  --seed N          the search's random seed (default 1)\n"
    "  --firmware PATH   (MCU board) its firmware.json or build folder, for linking candidates\n"
    "  --wait            queue for a busy serial device instead of failing at once\n"
    "Use the log with `tether compile|run|bench MODEL --tuning-log FILE`.\n";

int tether_cli_cmd_tune(int argc, char **argv) {
    tether_cli_device dev = {0};
    const char *model = NULL, *logpath = "tune.json", *firmware = NULL;
    long trials = 16, number = 20, repeat = 5;
    double budget = 0;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(tune_usage, stdout);
            return 0;
        }
        int takes = a[0] == '-' && strcmp(a, "--wait") != 0;
        if (takes && (!v || (v[0] == '-' && v[1] == '-'))) {
            return tether_cli_fail(2, "%s needs a value", a);
        }
        char *end = NULL;
        if (!strcmp(a, "--device")) {
            dev.url = v;
        } else if (!strcmp(a, "--token-file")) {
            dev.token_file = v;
        } else if (!strcmp(a, "--timeout-ms")) {
            dev.timeout_ms = (int)strtol(v, &end, 10);
        } else if (!strcmp(a, "--wait")) {
            dev.wait = 1;
        } else if (!strcmp(a, "--firmware")) {
            firmware = v;
        } else if (!strcmp(a, "--backend")) {
            if (strcmp(v, "c") && strcmp(v, "opencl")) {
                return tether_cli_fail(2, "--backend wants c or opencl");
            }
            g_opencl = !strcmp(v, "opencl");
        } else if (!strcmp(a, "--log")) {
            logpath = v;
        } else if (!strcmp(a, "--trials")) {
            trials = strtol(v, &end, 10);
            if (trials < 1 || trials > 10000) {
                return tether_cli_fail(2, "--trials '%s' is not 1..10000", v);
            }
        } else if (!strcmp(a, "--number")) {
            number = strtol(v, &end, 10);
            if (number < 1 || number > 1000000) {
                return tether_cli_fail(2, "--number '%s' is not 1..1000000", v);
            }
        } else if (!strcmp(a, "--repeat")) {
            repeat = strtol(v, &end, 10);
            if (repeat < 1 || repeat > 32) {
                return tether_cli_fail(2, "--repeat '%s' is not 1..32", v);
            }
        } else if (!strcmp(a, "--time-budget")) {
            budget = strtod(v, &end);
            if (budget <= 0) {
                return tether_cli_fail(2, "--time-budget '%s' is not a positive number", v);
            }
        } else if (!strcmp(a, "--min-repeat-ms")) {
            long ms = strtol(v, &end, 10);
            if (ms < 0 || ms > 60000) {
                return tether_cli_fail(2, "--min-repeat-ms '%s' is not 0..60000", v);
            }
            min_repeat_ms = (uint32_t)ms;
        } else if (!strcmp(a, "--seed")) {
            seed = strtoull(v, &end, 10);
        } else if (a[0] == '-') {
            return tether_cli_fail(2, "unknown option '%s' (see --help)", a);
        } else if (!model) {
            model = a;
        } else {
            return tether_cli_fail(2, "unexpected argument '%s'", a);
        }
        if (end && *end) {
            return tether_cli_fail(2, "%s: '%s' is not a number", a, v);
        }
        if (takes) {
            i++;
        }
    }
    if (!model) {
        return tether_cli_fail(2, "missing MODEL (see --help)");
    }
    double t_start = now_s();
    tether_tuning_log log;
    if (tether_tuning_log_load(logpath, true, &log)) {
        return tether_cli_fail(1, "%s", tether_last_error());
    }
    tether_session *s = NULL;
    if (tether_cli_open(&dev, &s)) {
        tether_tuning_log_close(&log);
        return 1;
    }
    int rc = 1;
    char target[32], cpu[64], dir[600] = "", dir2[600] = "";
    workload *ws = NULL;
    int nw = 0;
    tether_ir_graph g;
    memset(&g, 0, sizeof g);
    if (g_opencl) { /* work-group sizes: records for the OpenCL layer, not a CPU */
        if (!tether_session_info(s)->opencl) {
            tether_cli_fail(1, "--backend opencl: the device has no OpenCL layer (HELLO: opencl "
                               "no)");
            goto out;
        }
        snprintf(target, sizeof target, "opencl");
        cpu[0] = 0;
    } else if (tether_cli_device_target(tether_session_info(s), target, sizeof target, cpu,
                                        sizeof cpu)) {
        goto out;
    }
    static tether_device_compile_options base_d; /* every candidate's, for the device */
    tether_cli_device_options(&base_d, firmware);
    if (g_opencl) {
        base_d.compile.backend = TETHER_BACKEND_OPENCL;
    } else {
        base_d.compile.build.target = target;
        base_d.compile.build.cpu = cpu;
    }
    if (tether_device_compile_resolve(tether_session_info(s), &base_d)) {
        tether_cli_fail(1, "%s", tether_last_error());
        goto out;
    }
    tether_compile_options base = base_d.compile;
    /* the model after the passes, and its workloads */
    if (tether_cli_tempdir_make(dir, sizeof dir, "tune") ||
        tether_cli_tempdir_make(dir2, sizeof dir2, "tune")) {
        tether_cli_fail(1, "%s", tether_last_error());
        goto out;
    }
    tether_compile_result res;
    if (tether_model_load(model, &g) || tether_compile_graph(&g, dir, &base, &res)) {
        tether_cli_fail(1, "%s", tether_error_detail());
        goto out;
    }
    ws = calloc((size_t)(g.nnodes ? g.nnodes : 1), sizeof *ws);
    if (!ws) {
        tether_cli_fail(1, "out of memory");
        goto out;
    }
    int funcs = 0;
    char *source = NULL; /* the default build's C source, read once: its kernels' layouts */
    if (!g_opencl) {
        char path[800];
        snprintf(path, sizeof path, "%s/tether_model.c", dir);
        if (tether_file_read_text(path, (size_t)1 << 28, &source, NULL)) {
            source = NULL;
        }
    }
    for (int i = 0; i < g.nnodes; i++) {
        const tether_ir_tensor *y = &g.tensors[g.nodes[i].outputs[0]];
        int has_func = y->alias_of < 0 && tether_ir_tensor_elements(y) > 0;
        int fi = has_func ? funcs++ : -1;
        if (fi < 0 || (!g_opencl && !tether_workload_tunable(&g, i))) { /* OpenCL: every launch */
            continue;
        }
        char key[TETHER_WORKLOAD_MAX];
        if (tether_workload_key(&g, i, key, sizeof key)) {
            continue;
        }
        int k = 0;
        while (k < nw && strcmp(ws[k].key, key) != 0) {
            k++;
        }
        if (k == nw) {
            snprintf(ws[nw].key, sizeof ws[nw].key, "%s", key);
            ws[nw].node = i;
            ws[nw].func_index = fi;
            ws[nw].op = g.nodes[i].op;
            ws[nw].depthwise = g.nodes[i].op == TETHER_OP_CONV2D && g.nodes[i].attrs.groups > 1 &&
                               g.tensors[g.nodes[i].inputs[1]].shape[1] == 1;
            ws[nw].scalar = !g_opencl && strcmp(target, "x86_64-linux") != 0 &&
                            strcmp(target, "aarch64-linux") != 0;
            ws[nw].blocked = kernel_is_blocked(source, g.nodes[i].name);
            nw++;
        }
        ws[k].nnodes++;
    }
    free(source);
    /* the operator functions' names, in node order, from the module's registry list (the
     * entry first, set_params with a params blob) */
    char **fnames = calloc((size_t)(funcs ? funcs : 1), sizeof *fnames);
    if (!fnames) {
        tether_cli_fail(1, "out of memory");
        goto out;
    }
    if (!g_opencl) {
        char meta[800], *text = NULL;
        snprintf(meta, sizeof meta, "%s/metadata.json", dir);
        if (!fnames || tether_file_read_text(meta, 1 << 24, &text, NULL)) {
            free(fnames);
            tether_cli_fail(1, "%s: %s", meta, tether_last_error());
            goto out;
        }
        cJSON *m = cJSON_Parse(text);
        free(text);
        const cJSON *entry =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, "entry"), "name");
        const cJSON *setp = cJSON_GetObjectItemCaseSensitive(m, "set_params");
        const cJSON *f;
        int k = 0;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(m, "functions")) {
            const cJSON *nm = cJSON_GetObjectItemCaseSensitive(f, "name");
            if (!cJSON_IsString(nm) ||
                (cJSON_IsString(entry) && !strcmp(nm->valuestring, entry->valuestring)) ||
                (cJSON_IsString(setp) && !strcmp(nm->valuestring, setp->valuestring))) {
                continue;
            }
            if (k < funcs) {
                fnames[k++] = strdup(nm->valuestring);
            }
        }
        cJSON_Delete(m);
    }
    printf("tune %s on %s (%s, cpu %s): %d workloads of %d kernels with knobs, %ld trials each, "
           "log %s (%d records)\n",
           model, dev.url ? dev.url : "local:", target, cpu[0] ? cpu : "baseline", nw, res.ntunable,
           trials, logpath, log.n);
    fflush(stdout);
    int total_trials = 0, stopped = 0, remaining = 0;
    for (int w = 0; w < nw; w++) {
        double b, f0;
        int d = measured(&log, &ws[w], target, cpu, &b, &f0);
        remaining += d < trials ? (int)trials - d : 0;
    }
    double t_trials = now_s();
    for (int w = 0; w < nw && !stopped; w++) {
        const char *fn = fnames[ws[w].func_index];
        if (!fn && !g_opencl) {
            tether_cli_fail(1, "no function for node '%s' in %s/metadata.json",
                            g.nodes[ws[w].node].name, dir);
            goto free_names;
        }
        double best, first;
        int done = measured(&log, &ws[w], target, cpu, &best, &first);
        printf("[%d/%d] %s (node %s, %d node%s): %d of %ld trials in the log\n", w + 1, nw,
               ws[w].key, g.nodes[ws[w].node].name, ws[w].nnodes, ws[w].nnodes == 1 ? "" : "s",
               done, trials);
        build_job jobs[2];
        memset(jobs, 0, sizeof jobs);
        pthread_t th;
        int pending = 0, slot = 0;
        for (int t = done; t < trials + 1 && !stopped; t++) {
            /* start the build of trial t (if any) while trial t-1 is measured */
            int have_next = 0, threaded = 0;
            if (t < trials) {
                tether_schedule c;
                if (next_candidate(&log, &ws[w], target, cpu, t, (int)trials, &seed,
                                   &base.codegen.schedule,
                                   pending ? &jobs[slot ^ 1].ns.schedule : NULL, &c)) {
                    build_job *j = &jobs[slot];
                    memset(j, 0, sizeof *j);
                    j->model = model;
                    j->s = s;
                    j->base = &base_d;
                    j->ns.workload = ws[w].key;
                    j->ns.schedule = c;
                    /* two slots: one built while the other is measured; a compile replaces the
                     * artifact a slot held before */
                    snprintf(j->dir, sizeof j->dir, "%s/candidate", slot ? dir2 : dir);
                    have_next = 1;
                    if (pthread_create(&th, NULL, build_run, j) == 0) {
                        threaded = 1;
                    } else {
                        build_run(j); /* no thread: build it here, measure it next */
                    }
                }
            }
            if (pending) { /* measure trial t-1 */
                build_job *j = &jobs[slot ^ 1];
                tether_tune_record r;
                memset(&r, 0, sizeof r);
                snprintf(r.workload, sizeof r.workload, "%s", ws[w].key);
                snprintf(r.target, sizeof r.target, "%s", target);
                snprintf(r.cpu, sizeof r.cpu, "%s", cpu);
                snprintf(r.node, sizeof r.node, "%s", g.nodes[ws[w].node].name);
                r.schedule = j->ns.schedule;
                r.trial = t - 1;
                char err[512] = "";
                double us = -1;
                if (j->rc) {
                    snprintf(err, sizeof err, "compile: %s", j->err);
                } else if (g_opencl
                               ? time_opencl(s, j->dir, g.nodes[ws[w].node].name, (uint32_t)number,
                                             (uint32_t)repeat, &us, err, sizeof err)
                               : time_candidate(s, j->lib, target, firmware, fn, &g, ws[w].node,
                                                (uint32_t)number, (uint32_t)repeat, &us, err,
                                                sizeof err)) {
                    us = -1;
                }
                r.us = us;
                if (tether_tuning_log_add(&log, logpath, &r)) {
                    tether_cli_fail(1, "%s", tether_last_error());
                    if (threaded) {
                        pthread_join(th, NULL);
                    }
                    goto free_names;
                }
                total_trials++;
                if (us >= 0 && (best < 0 || us < best)) {
                    best = us;
                }
                if (r.trial == 0 && us >= 0) {
                    first = us;
                }
                double left = budget > 0 ? budget - (now_s() - t_start) : 0;
                remaining--;
                double eta = (now_s() - t_trials) / total_trials * remaining;
                printf("  trial %d/%ld: %s  best %.3f us%s", r.trial + 1, trials,
                       us >= 0 ? "" : "failed", best, "");
                if (us >= 0) {
                    printf(" (this %.3f us)", us);
                }
                if (first > 0 && best > 0) {
                    printf(", default/best %.2fx", first / best);
                }
                printf(", %d trial%s to go (%.2f trials/s, ~%.0f s left)", remaining,
                       remaining == 1 ? "" : "s", total_trials / (now_s() - t_trials), eta);
                if (budget > 0) {
                    printf(", budget %.0f s left", left > 0 ? left : 0);
                }
                printf("%s%s\n", err[0] ? ": " : "", err);
                fflush(stdout);
                if (budget > 0 && left <= 0) {
                    stopped = 1;
                }
            }
            if (have_next) {
                if (threaded) {
                    pthread_join(th, NULL);
                }
                pending = 1;
                slot ^= 1;
            } else {
                pending = 0;
                if (t < trials) { /* no unmeasured candidate left: said, not a silent stop */
                    say_exhausted(&log, &ws[w], target, cpu, t, trials);
                    remaining -= (int)trials - t;
                    break;
                }
            }
        }
    }
    printf("tuned %d candidates in %.1f s%s; the log %s holds %d records\n", total_trials,
           now_s() - t_start, stopped ? " (time budget reached: rerun to go on)" : "", logpath,
           log.n);
    for (int w = 0; w < nw; w++) {
        double best, first;
        if (!measured(&log, &ws[w], target, cpu, &best, &first) || best < 0) {
            printf("  %-10s not measured yet  %s\n", g.nodes[ws[w].node].name, ws[w].key);
            continue;
        }
        printf("  %-10s default %9.3f us  best %9.3f us  %.2fx  %s\n", g.nodes[ws[w].node].name,
               first, best, first > 0 ? first / best : 0.0, ws[w].key);
    }
    rc = 0;
free_names:
    for (int i = 0; i < funcs; i++) {
        free(fnames[i]);
    }
    free(fnames);
out:
    free(ws);
    tether_ir_close(&g);
    if (dir[0]) {
        tether_cli_tempdir_remove(dir);
    }
    if (dir2[0]) {
        tether_cli_tempdir_remove(dir2);
    }
    tether_session_close(s);
    tether_tuning_log_close(&log);
    return rc;
}

#endif
