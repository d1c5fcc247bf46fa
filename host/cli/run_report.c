/*
 * What `tether run` and `tether bench` print and write after the work is done (run.h): the call's
 * return code, time (and cycles on a device timer) and stack high-water mark, bench's TIME
 * statistics, OpenCL per-kernel lines and the wall-clock latency on the device (from runs without
 * profiling events) with the launch overhead (wall - the profiled kernel sum), the outputs
 * (tether_cli_write_outputs), --json and bench --svg (svg.c).
 *
 * What must stay true: the text lines and the --json keys say the same figures (docs/cli.md);
 * outputs and --json files go through tether/file.h (nothing partial); a figure a device does
 * not have (cycles without a device timer, a stack for OpenCL kernels) is null in the JSON, never
 * 0; without --out, run says on stderr which files it wrote into which directory.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "run.h"
#include "tether/artifact.h"
#include "tether/crt.h"

#define fail  tether_cli_fail
#define g_cmd (tether_cli_command())

/* A device-timer duration in its cycles (elapsed_ns is cycles * 1e9 / hz, rounded down). */
static uint64_t cycles(uint64_t elapsed_ns, uint64_t hz) {
    return (uint64_t)((double)elapsed_ns * (double)hz / 1e9 + 0.5);
}

/* bench --svg: the latency distribution of q's TIME (OpenCL: with the kernels' medians). */
static int bench_svg(run_args *r, const run_result *q, int nk, const char *const *kernels,
                     const double *kernel_median) {
    if (!r->svg) {
        return 0;
    }
    const tether_device_info *d = tether_session_info(q->s);
    char title[400], sub[600];
    snprintf(title, sizeof title, "tether bench: %s", q->fname);
    snprintf(sub, sizeof sub, "%s on %s (%s%s%s)", r->target, tether_cli_device_url(r->c.device),
             d->board[0] ? d->board : d->triple, d->cpu[0] ? ", " : "", d->cpu);
    return tether_cli_svg_bench(r->svg, title, sub, &q->ts, nk, kernels, kernel_median);
}

/* The common head of the --json report of run and bench. */
static cJSON *report_json(run_args *r, int bench, const run_result *q) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "command", bench ? "bench" : "run");
    cJSON_AddItemToObject(root, "device",
                          tether_cli_device_json(r->c.device, tether_session_info(q->s)));
    cJSON_AddStringToObject(root, "module", r->target);
    cJSON_AddStringToObject(root, "function", q->fname);
    /* the device's upload cache had the library: no bytes were sent */
    cJSON_AddBoolToObject(root, "upload_cached", tether_cli_uploads_cached() > 0);
    return root;
}

/* Writes the outputs (tether_cli_write_outputs); adds them to jouts when not NULL. */
static int write_outputs(run_args *r, const run_result *q, cJSON *jouts) {
    const char *names[RUN_MAX_IO];
    char defs[RUN_MAX_IO][32];
    for (int i = 0; i < q->nout; i++) {
        snprintf(defs[i], sizeof defs[i], "out%d", i);
        names[i] = q->out_name[i] ? q->out_name[i] : defs[i];
    }
    return tether_cli_write_outputs(r->out, r->nout, q->nout, names, q->out, jouts);
}

/* What `run`/`bench` print and write (--json) after the work is done. */
int tether_cli_report_run(run_args *r, int bench, const run_result *q) {
    const char *fname = q->fname;
    const tether_call_result *res = &q->call;
    const tether_time_stats *ts = &q->ts;
    uint64_t hz = tether_session_info(q->s)->clock_hz;
    cJSON *root = NULL;
    if (r->c.json_file) {
        root = report_json(r, bench, q);
        if (r->compiled) {
            cJSON_AddItemToObject(root, "compiled", r->compiled);
            r->compiled = NULL;
        }
    }
    if (bench && r->out_given && write_outputs(r, q, NULL)) {
        cJSON_Delete(root);
        return 1;
    }
    if (bench) {
        printf("%s: %u repeats x %u calls: mean %.3f us, median %.3f us, min %.3f us, max %.3f "
               "us%s\n",
               fname, ts->repeat, ts->number, ts->mean * 1e6, ts->median * 1e6, ts->min * 1e6,
               ts->max * 1e6, ts->zero_timer ? " (zero timer detected)" : "");
        if (hz) { /* a device timer (MCU): the same figures in its cycles */
            printf("cycles per call (%llu Hz timer): first call %llu, TIME mean %.0f, min %.0f, "
                   "max %.0f\n",
                   (unsigned long long)hz, (unsigned long long)cycles(res->elapsed_ns, hz),
                   ts->mean * (double)hz, ts->min * (double)hz, ts->max * (double)hz);
        }
        printf("stack high-water mark: %llu bytes\n", (unsigned long long)res->stack_bytes);
        if (bench_svg(r, q, 0, NULL, NULL)) {
            cJSON_Delete(root);
            return 1;
        }
        if (root) {
            cJSON_AddNumberToObject(root, "first_call_us", (double)res->elapsed_ns / 1e3);
            cJSON_AddNumberToObject(root, "stack_hwm_bytes", (double)res->stack_bytes);
            cJSON_AddNumberToObject(root, "min_repeat_ms", r->min_repeat_ms);
            cJSON_AddNumberToObject(root, "cooldown_ms", r->cooldown_ms);
            tether_cli_time_json(root, ts);
            if (hz) {
                cJSON *cy = cJSON_AddObjectToObject(root, "cycles_per_call");
                cJSON_AddNumberToObject(cy, "first_call", (double)cycles(res->elapsed_ns, hz));
                cJSON_AddNumberToObject(cy, "mean", ts->mean * (double)hz);
                cJSON_AddNumberToObject(cy, "min", ts->min * (double)hz);
                cJSON_AddNumberToObject(cy, "max", ts->max * (double)hz);
            } else {
                cJSON_AddNullToObject(root, "cycles_per_call");
            }
        }
        return root ? tether_cli_write_json(r->c.json_file, root) : 0;
    }
    if (write_outputs(r, q, root ? cJSON_AddArrayToObject(root, "outputs") : NULL)) {
        cJSON_Delete(root);
        return 1;
    }
    char extra[96] = "";
    if (hz) {
        snprintf(extra, sizeof extra, " (%llu cycles at %llu Hz)",
                 (unsigned long long)cycles(res->elapsed_ns, hz), (unsigned long long)hz);
    }
    printf("%s: returned %d in %.3f us%s, stack high-water mark %llu bytes\n", fname, (int)res->ret,
           (double)res->elapsed_ns / 1e3, extra, (unsigned long long)res->stack_bytes);
    if (res->ret_value.type_code == TETHER_TYPE_INT) {
        printf("%s: return value %lld\n", fname, (long long)res->ret_value.v.i);
    } else if (res->ret_value.type_code == TETHER_TYPE_UINT) {
        printf("%s: return value %llu\n", fname, (unsigned long long)res->ret_value.v.u);
    } else if (res->ret_value.type_code == TETHER_TYPE_FLOAT) {
        printf("%s: return value %.17g\n", fname, res->ret_value.v.f);
    }
    if (!root) {
        return 0;
    }
    cJSON *call = cJSON_AddObjectToObject(root, "call");
    cJSON_AddNumberToObject(call, "return_code", res->ret);
    cJSON_AddNumberToObject(call, "time_us", (double)res->elapsed_ns / 1e3);
    if (hz) {
        cJSON_AddNumberToObject(call, "cycles", (double)cycles(res->elapsed_ns, hz));
    } else {
        cJSON_AddNullToObject(call, "cycles");
    }
    cJSON_AddNumberToObject(call, "stack_hwm_bytes", (double)res->stack_bytes);
    if (res->ret_value.type_code == TETHER_TYPE_INT) {
        cJSON_AddNumberToObject(call, "return_value", (double)res->ret_value.v.i);
    } else if (res->ret_value.type_code == TETHER_TYPE_UINT) {
        cJSON_AddNumberToObject(call, "return_value", (double)res->ret_value.v.u);
    } else if (res->ret_value.type_code == TETHER_TYPE_FLOAT && isfinite(res->ret_value.v.f)) {
        cJSON_AddNumberToObject(call, "return_value", res->ret_value.v.f);
    } else {
        cJSON_AddNullToObject(call, "return_value");
    }
    return tether_cli_write_json(r->c.json_file, root);
}

/* The same for an OpenCL artifact: kernel times instead of a stack, per-kernel lines in bench. */
int tether_cli_report_opencl(run_args *r, int bench, const run_result *q, const tether_artifact *a,
                             const uint64_t *kernel_ns, const double *kernel_median) {
    int nk = tether_artifact_num_kernels(a);
    double first_us = (double)q->call.elapsed_ns / 1e3;
    const tether_time_stats *ts = &q->ts;
    cJSON *root = NULL;
    if (r->c.json_file) {
        root = report_json(r, bench, q);
        cJSON_AddStringToObject(root, "backend", "opencl");
    }
    if (bench && r->out_given && write_outputs(r, q, NULL)) {
        cJSON_Delete(root);
        return 1;
    }
    if (bench) {
        printf("%s (OpenCL, %d kernels): %u repeats x %u calls: mean %.3f us, median %.3f us, "
               "min %.3f us, max %.3f us%s\n",
               q->fname, nk, ts->repeat, ts->number, ts->mean * 1e6, ts->median * 1e6,
               ts->min * 1e6, ts->max * 1e6, ts->zero_timer ? " (zero timer detected)" : "");
        cJSON *jk = root ? cJSON_AddArrayToObject(root, "kernels") : NULL;
        for (int i = 0; i < nk; i++) {
            const char *k, *node;
            tether_artifact_kernel(a, i, &k, &node);
            printf("  kernel %-32s median %10.3f us  (first call %.3f us)\n", k,
                   kernel_median[i] * 1e6, (double)kernel_ns[i] / 1e3);
            if (jk) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "kernel", k);
                cJSON_AddStringToObject(o, "node", node);
                cJSON_AddNumberToObject(o, "median_us", kernel_median[i] * 1e6);
                cJSON_AddNumberToObject(o, "first_call_us", (double)kernel_ns[i] / 1e3);
                cJSON_AddItemToArray(jk, o);
            }
        }
        printf("time = sum of the kernels' profiled times; first run %.3f us\n", first_us);
        if (ts->wall_seconds > 0) {
            printf("wall-clock %.3f us per inference on the device (unprofiled runs: first "
                   "enqueue to the end of clFinish), launch overhead %.3f us (wall - kernel sum "
                   "%.3f us of the profiled runs)\n",
                   ts->wall_seconds * 1e6, (ts->wall_seconds - ts->median) * 1e6, ts->median * 1e6);
        }
        const char **knames = calloc((size_t)nk + 1, sizeof *knames);
        if (!knames) {
            cJSON_Delete(root);
            return fail(1, "out of memory");
        }
        for (int i = 0; i < nk; i++) {
            const char *node;
            tether_artifact_kernel(a, i, &knames[i], &node);
        }
        int src = bench_svg(r, q, nk, knames, kernel_median);
        free(knames);
        if (src) {
            cJSON_Delete(root);
            return 1;
        }
        if (!root) {
            return 0;
        }
        cJSON_AddNumberToObject(root, "first_call_us", first_us);
        /* both figures: the kernel sum from the profiled runs, the wall clock from the unprofiled
         */
        cJSON_AddNumberToObject(root, "kernel_sum_us", ts->median * 1e6);
        if (ts->wall_seconds > 0) {
            cJSON_AddNumberToObject(root, "wall_us", ts->wall_seconds * 1e6);
            cJSON_AddNumberToObject(root, "launch_overhead_us",
                                    (ts->wall_seconds - ts->median) * 1e6);
        } else {
            cJSON_AddNullToObject(root, "wall_us");
            cJSON_AddNullToObject(root, "launch_overhead_us");
        }
        cJSON_AddNullToObject(root, "stack_hwm_bytes"); /* kernels: no call stack */
        cJSON_AddNumberToObject(root, "min_repeat_ms", r->min_repeat_ms);
        cJSON_AddNumberToObject(root, "cooldown_ms", r->cooldown_ms);
        tether_cli_time_json(root, ts);
        cJSON_AddNullToObject(root, "cycles_per_call");
        return tether_cli_write_json(r->c.json_file, root);
    }
    if (write_outputs(r, q, root ? cJSON_AddArrayToObject(root, "outputs") : NULL)) {
        cJSON_Delete(root);
        return 1;
    }
    printf("%s (OpenCL): %d kernels in %.3f us (sum of the kernels' profiled times)\n", q->fname,
           nk, first_us);
    double wall_us = (double)tether_artifact_wall_ns(a) / 1e3; /* 0: not measured */
    if (wall_us > 0) {
        printf("wall-clock %.3f us on the device (an unprofiled run: first enqueue to the end of "
               "clFinish), "
               "launch overhead %.3f us (wall - kernel sum)\n",
               wall_us, wall_us - first_us);
    }
    if (!root) {
        return 0;
    }
    cJSON *call = cJSON_AddObjectToObject(root, "call");
    cJSON_AddNumberToObject(call, "return_code", 0);
    cJSON_AddNumberToObject(call, "time_us", first_us);
    cJSON_AddNullToObject(call, "cycles");
    cJSON_AddNullToObject(call, "stack_hwm_bytes"); /* kernels: no call stack */
    cJSON_AddNullToObject(call, "return_value");
    cJSON_AddNumberToObject(call, "kernels", nk);
    if (wall_us > 0) {
        cJSON_AddNumberToObject(call, "wall_us", wall_us);
        cJSON_AddNumberToObject(call, "launch_overhead_us", wall_us - first_us);
    } else {
        cJSON_AddNullToObject(call, "wall_us");
        cJSON_AddNullToObject(call, "launch_overhead_us");
    }
    cJSON *jk = cJSON_AddArrayToObject(call, "kernel_times");
    for (int i = 0; i < nk; i++) {
        const char *k, *node;
        tether_artifact_kernel(a, i, &k, &node);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "kernel", k);
        cJSON_AddStringToObject(o, "node", node);
        cJSON_AddNumberToObject(o, "time_us", (double)kernel_ns[i] / 1e3);
        cJSON_AddItemToArray(jk, o);
    }
    return tether_cli_write_json(r->c.json_file, root);
}

void tether_cli_say_default_outputs(const run_args *r, const run_result *q) {
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) {
        snprintf(cwd, sizeof cwd, "the current directory");
    }
    fprintf(stderr, "tether %s: no --out given: wrote ", g_cmd);
    for (int i = 0; i < q->nout && i < r->nout; i++) {
        fprintf(stderr, "%s%s (output '%s')", i ? ", " : "", r->out[i].path,
                q->out_name[i] ? q->out_name[i] : "");
    }
    fprintf(stderr, " in %s; --out FILE, NAME=FILE or FILE.npz chooses where\n", cwd);
}
