/*
 * tether profile MODEL|DIR [--device URL] [--in NAME=FILE ...] [--runs N] [--json F] [--trace F]
 *                [--svg F] [--target T] [--mcpu CPU] [--abi A] [--backend c|opencl] [--no-plain]
 *   (and `run --profile` = `profile --runs 1`, `bench --profile` = `profile`)
 *
 * A MODEL is compiled twice for the device of the session (tether_compile_for_device): the plain
 * artifact, timed with TIME, then the profiling build of the same kernels (--profile), timed the
 * same way (the instrumentation overhead) and run --runs times, reading the node times after
 * each run (tether_artifact_profile). A DIR must be a profiling build (else refused, exit 1).
 * Prints the table per node (operator, shapes, schedule, median time and share, MACs and GFLOP/s
 * or MACs/cycle on a board, bytes in/out, workspace live, stack on a board), the sum of the node
 * times beside the whole call, and writes the reports (tether/profile.h).
 *
 * What must stay true: the output paths are checked before the device is contacted; every
 * artifact is released, the temporary directory removed and the session closed on every path;
 * an MCU holds one module at a time, so the plain artifact is released before the profiling
 * build is prepared; the inputs without --in are generated (uniform [-1, 1), fixed seed).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

#ifdef TETHER_HAVE_COMPILER
#include "tether/artifact.h"
#include "tether/crt.h"
#include "tether/device_compile.h"
#include "tether/file.h"
#include "tether/profile.h"

#define fail tether_cli_fail

static const char usage[] =
    "usage: tether profile MODEL|ARTIFACT_DIR [--device URL] [--token-file FILE]\n"
    "                      [--timeout-ms MS] [--wait] [--firmware PATH]\n"
    "                      [--in [NAME=]FILE ...] [--runs N]\n"
    "                      [--json FILE] [--trace FILE] [--svg FILE] [--target T] [--mcpu CPU]\n"
    "                      [--abi packed|unpacked] [--backend c|opencl] [--params linked|blob]\n"
    "                      [--no-plain]\n"
    "  runs a profiling build (`tether compile --profile`) and prints the time, work, memory and\n"
    "  (on a board) stack of every node; a MODEL is compiled for the device, plain and\n"
    "  profiling, and the plain whole call is measured beside it (docs/profile.md)\n"
    "  --runs N       runs to take the node medians over (default 20; --repeat is the same)\n"
    "  --trace FILE   Chrome/Perfetto trace-event JSON (ui.perfetto.dev, chrome://tracing)\n"
    "  --json FILE    the per-node records (schema in docs/profile.md)\n"
    "  --svg FILE     bar chart of the nodes by time, the workspace live under it\n"
    "  --params linked|blob  weights in the code or a params blob (default: linked up to 4 MiB)\n"
    "  --no-plain     do not compile and time the plain artifact (MODEL)\n";

typedef struct prof_args {
    tether_cli_common c;
    const char *target, *json, *trace, *svg, *compile_target, *cpu, *abi, *params;
    tether_cli_array in[TETHER_CLI_MAX_IO];
    int nin, runs, opencl, no_plain;
} prof_args;

static int parse(int argc, char **argv, prof_args *a) {
    memset(a, 0, sizeof *a);
    a->runs = 20;
    for (int i = 1; i < argc; i++) { /* argv[0]: the command's name */
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (tether_cli_is_help(o)) {
            fputs(usage, stdout);
            return -1;
        }
        int crc = tether_cli_common_opt(&a->c, argc, argv, &i);
        if (crc < 0) {
            return 2;
        }
        if (crc) {
            continue;
        }
        int takes = !strcmp(o, "--in") || !strcmp(o, "--runs") || !strcmp(o, "--repeat") ||
                    !strcmp(o, "--json") || !strcmp(o, "--trace") || !strcmp(o, "--svg") ||
                    !strcmp(o, "--target") || !strcmp(o, "--mcpu") || !strcmp(o, "--abi") ||
                    !strcmp(o, "--backend") || !strcmp(o, "--params");
        if (takes && !v) {
            return fail(2, "%s needs a value", o);
        }
        if (!strcmp(o, "--in")) {
            if (tether_cli_array_parse(v, 0, a->in, &a->nin, TETHER_CLI_MAX_IO)) {
                return 2;
            }
        } else if (!strcmp(o, "--runs") || !strcmp(o, "--repeat")) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 10000) {
                return fail(2, "%s '%s': a count 1..10000", o, v);
            }
            a->runs = (int)n;
        } else if (!strcmp(o, "--json")) {
            a->json = v;
        } else if (!strcmp(o, "--trace")) {
            a->trace = v;
        } else if (!strcmp(o, "--svg")) {
            a->svg = v;
        } else if (!strcmp(o, "--target")) {
            a->compile_target = v;
        } else if (!strcmp(o, "--mcpu")) {
            a->cpu = v;
        } else if (!strcmp(o, "--abi")) {
            a->abi = v;
        } else if (!strcmp(o, "--params")) {
            if (strcmp(v, "linked") && strcmp(v, "blob")) {
                return fail(2, "--params '%s' is not linked or blob", v);
            }
            a->params = v;
        } else if (!strcmp(o, "--backend")) {
            if (strcmp(v, "c") && strcmp(v, "opencl")) {
                return fail(2, "--backend '%s' is not c or opencl", v);
            }
            a->opencl = !strcmp(v, "opencl");
        } else if (!strcmp(o, "--no-plain")) {
            a->no_plain = 1;
            continue;
        } else if (o[0] == '-' && o[1]) {
            return fail(2, "unknown option '%s' (tether profile --help)", o);
        } else if (!a->target) {
            a->target = o;
            continue;
        } else {
            return fail(2, "one MODEL or ARTIFACT_DIR, not '%s' too", o);
        }
        i++;
    }
    if (!a->target) {
        fputs(usage, stderr);
        return 2;
    }
    const char *outs[] = {a->json, a->trace, a->svg};
    for (int k = 0; k < 3; k++) {
        if (outs[k] && tether_file_out_check(outs[k])) {
            return fail(2, "%s", tether_last_error());
        }
    }
    if (tether_cli_array_order(a->in, &a->nin, 0, NULL, "input")) {
        return 2;
    }
    return 0;
}

/* The inputs for artifact art: the --in files (checked), else generated. */
static int inputs_for(const prof_args *a, tether_artifact *art, tether_npy *in, int *nin) {
    int n = tether_artifact_num_inputs(art);
    *nin = 0;
    if (a->nin && a->nin != n) {
        return fail(2, "the model has %d inputs, %d --in given", n, a->nin);
    }
    const char *names[TETHER_CLI_MAX_IO];
    for (int i = 0; i < n && i < TETHER_CLI_MAX_IO; i++) {
        tether_artifact_io io;
        tether_artifact_io_of(art, 0, i, &io);
        names[i] = io.name;
    }
    tether_cli_array order[TETHER_CLI_MAX_IO];
    int norder = a->nin;
    memcpy(order, a->in, sizeof order);
    if (norder && tether_cli_array_order(order, &norder, n, names, "input")) {
        return 2;
    }
    uint32_t seed = 20261123u;
    for (int i = 0; i < n; i++) {
        tether_artifact_io io;
        tether_artifact_io_of(art, 0, i, &io);
        if (norder) {
            if (tether_cli_array_read(&order[i], &in[i]) ||
                tether_artifact_check_input(art, i, order[i].label, &in[i])) {
                return fail(1, "%s", tether_last_error());
            }
        } else {
            memset(&in[i], 0, sizeof in[i]);
            in[i].dtype = io.dtype;
            in[i].ndim = io.ndim;
            memcpy(in[i].shape, io.shape, sizeof(int64_t) * (size_t)io.ndim);
            in[i].nbytes = io.nbytes;
            in[i].data = calloc(1, io.nbytes ? io.nbytes : 1);
            if (!in[i].data) {
                return fail(1, "out of memory");
            }
            if (io.dtype.code == kDLFloat && io.dtype.bits == 32) {
                float *v = in[i].data;
                for (size_t k = 0; k < io.nbytes / 4; k++) {
                    seed = seed * 1664525u + 1013904223u;
                    v[k] = (float)(seed >> 8) / 8388608.0f - 1.0f;
                }
            }
        }
        *nin = i + 1;
    }
    return 0;
}

/* Runs art: once (for the outputs), then TIME (median seconds into *timed_s, when not NULL),
 * then, when p is not NULL, the profile. */
static int exercise(const prof_args *a, tether_artifact *art, double *timed_s, tether_profile *p) {
    tether_npy in[TETHER_CLI_MAX_IO];
    const void *ins[TETHER_CLI_MAX_IO];
    void *outs[TETHER_CLI_MAX_IO];
    int nin = 0, nout = tether_artifact_num_outputs(art), rc = 0;
    memset(outs, 0, sizeof outs);
    rc = inputs_for(a, art, in, &nin);
    for (int i = 0; i < nin; i++) {
        ins[i] = in[i].data;
    }
    for (int i = 0; !rc && i < nout; i++) {
        tether_artifact_io io;
        tether_artifact_io_of(art, 1, i, &io);
        outs[i] = calloc(1, io.nbytes ? io.nbytes : 1);
        if (!outs[i]) {
            rc = fail(1, "out of memory");
        }
    }
    if (!rc && tether_artifact_run(art, ins, outs, NULL, NULL)) {
        rc = fail(1, "%s", tether_last_error());
    }
    tether_time_stats ts;
    if (!rc && timed_s) {
        if (tether_artifact_time(art, 10, 7, 20, 0, &ts, NULL)) {
            rc = fail(1, "%s", tether_last_error());
        } else {
            *timed_s = ts.median;
        }
    }
    if (!rc && p && tether_artifact_profile(art, ins, outs, a->runs, p)) {
        rc = fail(1, "%s", tether_last_error());
    }
    for (int i = 0; i < nin; i++) {
        tether_npy_free(&in[i]);
    }
    for (int i = 0; i < nout; i++) {
        free(outs[i]);
    }
    return rc;
}

/* TIME of the plain and the profiling build alternately (A B, B A, ...), 15 rounds of at least
 * 30 ms each; the medians of the time per call. */
static int interleaved_time(tether_artifact *x, tether_artifact *y, double *xs, double *ys) {
    enum { ROUNDS = 15 };
    double t[2][ROUNDS];
    uint32_t number[2] = {1, 1};
    tether_artifact *arts[2] = {x, y};
    for (int r = -1; r < ROUNDS; r++) { /* round -1: warm-up, sets the calls per repeat */
        for (int i = 0; i < 2; i++) {
            int k = r % 2 ? 1 - i : i;
            tether_time_stats ts;
            if (tether_artifact_time(arts[k], number[k], 1, 30, 0, &ts, NULL)) {
                return fail(1, "%s", tether_last_error());
            }
            number[k] = ts.number > number[k] ? ts.number : number[k];
            if (r >= 0) {
                t[k][r] = ts.seconds[0];
            }
        }
    }
    for (int k = 0; k < 2; k++) { /* medians (insertion sort of 9) */
        for (int i = 1; i < ROUNDS; i++) {
            for (int j = i; j > 0 && t[k][j] < t[k][j - 1]; j--) {
                double v = t[k][j];
                t[k][j] = t[k][j - 1];
                t[k][j - 1] = v;
            }
        }
    }
    *xs = t[0][ROUNDS / 2];
    *ys = t[1][ROUNDS / 2];
    return 0;
}

static void human_count(double v, char *out, size_t n) {
    if (v >= 1e9) {
        snprintf(out, n, "%.2fG", v / 1e9);
    } else if (v >= 1e6) {
        snprintf(out, n, "%.2fM", v / 1e6);
    } else if (v >= 1e4) {
        snprintf(out, n, "%.1fk", v / 1e3);
    } else {
        snprintf(out, n, "%.0f", v);
    }
}

void tether_cli_profile_print(FILE *f, const tether_profile *p) {
    int cycles = !p->opencl && strncmp(p->target, "cortex-", 7) == 0;
    int nw = 4, sw = 6; /* the widest name and shapes, at most 32 and 60 */
    for (int i = 0; i < p->nnodes; i++) {
        int a = (int)strlen(p->nodes[i].name), b = (int)strlen(p->nodes[i].shapes);
        nw = a > nw ? (a < 32 ? a : 32) : nw;
        sw = b > sw ? (b < 60 ? b : 60) : sw;
    }
    fprintf(f, "%-*s %-10s %-*s %10s %6s %8s %9s %8s %8s %8s%s  %s\n", nw, "node", "op", sw,
            "shapes", "time us", "share", "MACs", cycles ? "MAC/cyc" : "GFLOP/s", "in B", "out B",
            "live B", p->stack ? "  stack" : "", "schedule");
    for (int i = 0; i < p->nnodes; i++) {
        const tether_profile_node *nd = &p->nodes[i];
        char macs[32], rate[32], bi[32], bo[32], wl[32], stk[32] = "";
        human_count((double)nd->macs, macs, sizeof macs);
        if (cycles) {
            double cyc = nd->median_ns * p->clock_hz / 1e9;
            snprintf(rate, sizeof rate, "%.3f", cyc > 0 ? (double)nd->macs / cyc : 0);
        } else {
            snprintf(rate, sizeof rate, "%.2f",
                     nd->median_ns > 0 ? (double)nd->flops / nd->median_ns : 0);
        }
        human_count((double)nd->bytes_in, bi, sizeof bi);
        human_count((double)nd->bytes_out, bo, sizeof bo);
        human_count((double)nd->workspace_live, wl, sizeof wl);
        if (p->stack) {
            snprintf(stk, sizeof stk, " %6llu", (unsigned long long)nd->stack_bytes);
        }
        fprintf(f, "%-*.*s %-10.10s %-*.*s %10.2f %5.1f%% %8s %9s %8s %8s %8s%s  %s\n", nw, nw,
                nd->name, nd->op, sw, sw, nd->shapes, nd->median_ns / 1e3, 100 * nd->share, macs,
                rate, bi, bo, wl, stk, nd->schedule);
    }
    fprintf(f,
            "sum of nodes %.2f us, whole profiled call %.2f us (nodes %.1f%% of it; median of %d "
            "runs, %s)\n",
            p->sum_median_ns / 1e3, p->call_median_ns / 1e3,
            p->call_median_ns > 0 ? 100 * p->sum_median_ns / p->call_median_ns : 100.0, p->runs,
            p->opencl ? "OpenCL profiling events"
            : cycles  ? "cycle counter"
                      : "device clock");
    if (p->plain_ns > 0 && p->timed_ns > 0) {
        fprintf(f,
                "plain artifact %.2f us, profiling build %.2f us (TIME medians): instrumentation "
                "overhead %+.1f%%\n",
                p->plain_ns / 1e3, p->timed_ns / 1e3, 100 * (p->timed_ns / p->plain_ns - 1));
    }
    if (p->call_stack_bytes) {
        fprintf(f, "stack of the whole call %llu bytes\n", (unsigned long long)p->call_stack_bytes);
    }
}

int tether_cli_profile_write(const tether_profile *p, const char *json, const char *trace,
                             const char *svg) {
    if (json && tether_profile_write_json(p, json)) {
        return fail(1, "%s", tether_last_error());
    }
    if (trace && tether_profile_write_trace(p, trace)) {
        return fail(1, "%s", tether_last_error());
    }
    if (svg && tether_profile_write_svg(p, svg)) {
        return fail(1, "%s", tether_last_error());
    }
    const char *outs[] = {json, trace, svg};
    for (int k = 0; k < 3; k++) {
        if (outs[k]) {
            tether_cli_wrote(outs[k]);
        }
    }
    return 0;
}

typedef struct ab_row {
    int i;
    double a, b;
} ab_row;

static int by_change(const void *x, const void *y) {
    const ab_row *p = x, *q = y;
    double dp = fabs(p->b - p->a), dq = fabs(q->b - q->a);
    return dp < dq ? 1 : dp > dq ? -1 : p->i - q->i;
}

int tether_cli_profile_ab(tether_session *s, const char *model, const char *dir,
                          tether_device_compile_options *const *dco, const char *const *labels,
                          const tether_cli_array *in, int nin) {
    prof_args a;
    memset(&a, 0, sizeof a);
    a.runs = 20;
    a.nin = nin;
    memcpy(a.in, in, sizeof(tether_cli_array) * (size_t)nin);
    tether_profile p[2];
    memset(p, 0, sizeof p);
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        tether_device_compile_options o = *dco[k];
        o.compile.profile = true;
        o.loader_ctx = &o;
        o.notes = NULL;
        char sub[1200];
        snprintf(sub, sizeof sub, "%s/%d-profile", dir, k);
        tether_artifact *art = NULL;
        if (tether_compile_for_device(s, model, sub, &o, NULL, &art)) {
            rc = fail(1, "compile (%s, profiling build): %s", labels[k], tether_last_error());
        } else {
            rc = exercise(&a, art, NULL, &p[k]);
        }
        tether_artifact_free(art);
    }
    ab_row *rows = rc ? NULL : calloc((size_t)(p[0].nnodes ? p[0].nnodes : 1), sizeof *rows);
    if (!rc && !rows) {
        rc = fail(1, "out of memory");
    }
    if (!rc && p[0].nnodes != p[1].nnodes) {
        rc = fail(1, "the profiling builds have %d and %d nodes", p[0].nnodes, p[1].nnodes);
    }
    for (int i = 0; !rc && i < p[0].nnodes; i++) {
        if (strcmp(p[0].nodes[i].name, p[1].nodes[i].name) != 0) {
            rc = fail(1, "node %d is '%s' in one build and '%s' in the other", i,
                      p[0].nodes[i].name, p[1].nodes[i].name);
        }
        rows[i] = (ab_row){i, p[0].nodes[i].median_ns, p[1].nodes[i].median_ns};
    }
    if (!rc) {
        qsort(rows, (size_t)p[0].nnodes, sizeof *rows, by_change);
        printf("\nper node (profiling builds, median of %d runs each; largest change first)\n",
               a.runs);
        printf("%-24s %-10s %14s %14s %11s %7s\n", "node", "op", labels[0], labels[1], "change us",
               "ratio");
        for (int r = 0; r < p[0].nnodes; r++) {
            const tether_profile_node *nd = &p[0].nodes[rows[r].i];
            printf("%-24.24s %-10.10s %11.2f us %11.2f us %+11.2f %7.3f\n", nd->name, nd->op,
                   rows[r].a / 1e3, rows[r].b / 1e3, (rows[r].b - rows[r].a) / 1e3,
                   rows[r].a > 0 ? rows[r].b / rows[r].a : 0);
        }
        printf("%-24s %-10s %11.2f us %11.2f us %+11.2f %7.3f\n", "sum of nodes", "",
               p[0].sum_median_ns / 1e3, p[1].sum_median_ns / 1e3,
               (p[1].sum_median_ns - p[0].sum_median_ns) / 1e3,
               p[0].sum_median_ns > 0 ? p[1].sum_median_ns / p[0].sum_median_ns : 0);
    }
    free(rows);
    tether_profile_free(&p[0]);
    tether_profile_free(&p[1]);
    return rc;
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int tether_cli_cmd_profile(int argc, char **argv) {
    prof_args a;
    int rc = parse(argc, argv, &a);
    if (rc) {
        return rc < 0 ? 0 : rc;
    }
    int dir = is_dir(a.target);
    tether_session *s = NULL;
    if (tether_cli_common_open(&a.c, &s)) {
        return fail(1, "%s", tether_last_error());
    }
    tether_device_compile_options dco;
    tether_cli_device_options(&dco, a.c.firmware);
    tether_profile p;
    memset(&p, 0, sizeof p);
    tether_artifact *art = NULL, *plain = NULL;
    char tmp[1024] = "", sub[1200];
    double plain_s = 0, timed_s = 0;
    if (dir) {
        if (tether_artifact_open(a.target, &art)) {
            rc = fail(1, "%s", tether_last_error());
        } else if (!tether_artifact_profiled(art)) {
            rc = fail(1,
                      "%s is not a profiling build: it has no node timings to read (compile it "
                      "with `tether compile --profile`, or give `tether profile` the model)",
                      a.target);
        } else if (tether_device_prepare(art, s, &dco)) {
            rc = fail(1, "%s", tether_last_error());
        } else {
            rc = exercise(&a, art, &timed_s, &p);
        }
    } else if (tether_cli_tempdir_make(tmp, sizeof tmp, "profile")) {
        rc = fail(1, "%s", tether_last_error());
    } else {
        tether_compile_options *co = &dco.compile;
        co->build.target = a.compile_target;
        co->build.cpu = a.cpu;
        co->backend = a.opencl ? TETHER_BACKEND_OPENCL : TETHER_BACKEND_C;
        /* weights as for run: linked up to TETHER_PARAMS_LINK_MAX unless --params says */
        if (a.params) {
            co->codegen.link_params = !strcmp(a.params, "linked");
        } else {
            co->codegen.link_params = true;
            co->params_link_max = TETHER_PARAMS_LINK_MAX;
        }
        if (a.abi && tether_abi_parse(a.abi, &co->codegen.abi)) {
            rc = fail(2, "--abi '%s' is not packed or unpacked", a.abi);
        }
        /* the plain artifact first; an MCU holds one module at a time, elsewhere both stay
         * prepared and are timed interleaved (drift hits both alike) */
        int mcu = tether_cli_is_mcu(tether_session_info(s));
        if (!rc && !a.no_plain) {
            snprintf(sub, sizeof sub, "%s/plain", tmp);
            if (tether_compile_for_device(s, a.target, sub, &dco, NULL, &plain)) {
                rc = fail(1, "%s", tether_last_error());
            } else {
                rc = exercise(&a, plain, mcu ? &plain_s : NULL, NULL);
            }
            if (mcu) {
                tether_artifact_free(plain);
                plain = NULL;
            }
        }
        if (!rc) {
            tether_device_compile_options pdco = dco;
            pdco.compile.profile = true;
            pdco.loader_ctx = &pdco;
            snprintf(sub, sizeof sub, "%s/profile", tmp);
            if (tether_compile_for_device(s, a.target, sub, &pdco, NULL, &art)) {
                rc = fail(1, "%s", tether_last_error());
            } else if (plain) {
                rc = exercise(&a, art, NULL, NULL);
                if (!rc) {
                    rc = interleaved_time(plain, art, &plain_s, &timed_s);
                }
                if (!rc) {
                    rc = exercise(&a, art, NULL, &p);
                }
            } else {
                rc = exercise(&a, art, a.no_plain ? NULL : &timed_s, &p);
            }
        }
    }
    tether_artifact_free(plain);
    tether_artifact_free(art);
    if (!rc) {
        p.plain_ns = plain_s * 1e9;
        p.timed_ns = timed_s * 1e9;
        printf("%s on %s (%s)\n", a.target, tether_cli_device_url(a.c.device), p.target);
        tether_cli_profile_print(stdout, &p);
        rc = tether_cli_profile_write(&p, a.json, a.trace, a.svg);
    }
    tether_profile_free(&p);
    if (tmp[0]) {
        tether_cli_tempdir_remove(tmp);
    }
    if (rc) {
        tether_cli_after_failure(s, "profile");
    }
    tether_session_close(s);
    return rc;
}

#else
int tether_cli_cmd_profile(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return tether_cli_fail(1, "this tether was built without the compiler");
}
#endif
