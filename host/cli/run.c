/*
 * `tether run` and `tether bench` (docs/cli.md):
 *
 *   tether run   [--device URL] MODULE.so|.o|.a|.cl FUNC --in a.npy ... --out c.npy[:DTYPE:SHAPE]
 *   tether run   [--device URL] ARTIFACT_DIR|MODEL.json|MODEL.onnx --in x.npy ... [--out y.npy]
 *   tether bench (as run) [--number N] [--repeat R] [--min-repeat-ms MS] [--cooldown-ms MS]
 *
 * A module's function is called with the arrays given; an artifact directory runs through the
 * host library (tether/artifact.h), the same steps `ab` takes; a MODEL is compiled for the
 * device of the run's session and prepared there by one host-library call
 * (tether_compile_for_device: target, CPU, pool sizes and image limits from its HELLO, the MCU
 * link), then run as an artifact. What they print and write is in run_report.c.
 *
 * What must stay true: the model and every --in file are checked before a compile or the device
 * (tether_cli_model_inputs_check); a --json or --svg path is checked before any work; a model's
 * temporary artifact directory is removed on every path (also on SIGINT/SIGTERM/SIGHUP); a
 * pool:// device lost mid-run queues the run again (at most twice), anything else is one line
 * "tether <cmd>: <reason>" and exit 1 (2 = bad usage).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli_onnx.h"
#include "run.h"
#include "tether/artifact.h"
#include "tether/compiler.h"
#include "tether/compiler_cli.h"
#include "tether/crt.h"
#include "tether/device_compile.h"
#include "tether/host.h"
#include "tether/npy.h"

#define fail  tether_cli_fail
#define g_cmd (tether_cli_command())

/* ---- run / bench ---- */

/* Parses "A[,B[,C]]" into up to 3 sizes; returns the count or -1. */
static int parse_sizes(const char *v, uint64_t *out) {
    int n = 0;
    const char *p = v;
    while (p && *p && n < 3) {
        char *end;
        errno = 0;
        unsigned long long x = strtoull(p, &end, 10);
        if (end == p || errno || *p == '-' || x == 0) {
            return -1;
        }
        out[n++] = x;
        if (*end == ',') {
            p = end + 1;
        } else if (*end) {
            return -1;
        } else {
            p = NULL;
        }
    }
    return p ? -1 : n;
}

/* The "PATH:DTYPE:D0xD1x..." form of an --out of `run MODULE FUNC` (o->path as given). */
static int parse_out_shape(io_spec *o) {
    static char paths[RUN_MAX_IO][1024];
    static int used;
    const char *arg = o->path;
    const char *colon = strchr(arg, ':');
    if (!colon || access(arg, F_OK) == 0) {
        return 0;
    }
    if (o->name[0] || o->npz) {
        return fail(2,
                    "--out '%s': PATH:DTYPE:SHAPE is for a module's outputs, not named or "
                    ".npz ones",
                    arg);
    }
    if (used >= RUN_MAX_IO || (size_t)(colon - arg) >= sizeof paths[0]) {
        return fail(2, "--out '%s': path too long", arg);
    }
    memcpy(paths[used], arg, (size_t)(colon - arg));
    paths[used][colon - arg] = 0;
    o->path = paths[used++];
    snprintf(o->label, sizeof o->label, "%s", o->path);
    char dt[32];
    const char *c2 = strchr(colon + 1, ':');
    if (!c2 || (size_t)(c2 - colon - 1) >= sizeof dt) {
        return fail(2, "--out '%s': want PATH:DTYPE:D0xD1... (e.g. y.npy:float32:4x4)", arg);
    }
    memcpy(dt, colon + 1, (size_t)(c2 - colon - 1));
    dt[c2 - colon - 1] = 0;
    if (tether_dtype_parse(dt, &o->dtype)) {
        return fail(2, "--out '%s': %s", arg, tether_last_error());
    }
    const char *p = c2 + 1;
    o->ndim = 0;
    while (*p) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || errno || o->ndim >= TETHER_MAX_NDIM) {
            return fail(2, "--out '%s': bad shape", arg);
        }
        o->shape[o->ndim++] = v;
        p = end;
        if ((*p == 'x' || *p == ',') && p[1]) {
            p++;
        } else if (*p) {
            return fail(2, "--out '%s': bad shape", arg);
        }
    }
    o->has_shape = 1;
    return 0;
}

static int parse_u32(const char *opt, const char *v, uint32_t *out) {
    char *end;
    errno = 0;
    unsigned long x = v ? strtoul(v, &end, 10) : 0;
    if (!v || errno || *end || v[0] == '-' || x > 100000000ul) {
        return fail(2, "%s needs a non-negative number", opt);
    }
    *out = (uint32_t)x;
    return 0;
}

static int parse_run(int argc, char **argv, run_args *r, int bench) {
    memset(r, 0, sizeof *r);
#ifdef TETHER_HAVE_COMPILER
    static tether_memory_cli mem;
    tether_memory_cli_init(&mem);
    r->mem = &mem;
#endif
    r->number = 10;
    r->repeat = 3;
    r->min_repeat_ms = 0;
    r->opt_level = -2;
    r->params = -1;
    tether_scope scope = TETHER_SCOPE_GLOBAL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (tether_cli_is_help(a)) {
            printf(
                "usage: tether %s [--device URL] [--token-file FILE] [--timeout-ms MS] [--wait]\n"
                "         MODULE.so FUNC --in a.npy ... --out c.npy[:DTYPE:D0xD1...] ...\n"
                "       tether %s [--device URL] ARTIFACT_DIR|MODEL.json --in x.npy ... "
                "[--out y.npy ...]\n"
                "  --scope global|texture|texture:weight  scope of the following --in/--out\n"
                "  --int V / --float V  scalar arguments, passed after the arrays\n"
                "%s"
                "  --loop-max N  (MODEL) rows of an ONNX Loop's scan outputs when its trip count\n"
                "               has no bound (docs/onnx.md)\n"
                "  --input-shape NAME=D0xD1...  (MODEL) fixes a dynamic input dimension; inputs\n"
                "               an ONNX operator needs as constants are bound from their --in "
                "file\n"
                "  --in FILE | NAME=FILE  .npy, .pb (onnx.TensorProto) or .npz; NAME= binds the\n"
                "               model input NAME, an .npz binds each input to its array of\n"
                "               that name (NAME=x.npz: the array NAME, or the only one)\n"
                "  --out FILE | NAME=FILE | FILE.npz  outputs in order, by name, or every\n"
                "               output by name into one .npz archive\n"
                "  --target NAME, --abi packed|unpacked  how a MODEL is compiled (default: for\n"
                "               the device, e.g. cortex-m3 for an MCU board; the compiler's ABI)\n"
                "  --tuning-log FILE  (MODEL) tuned schedules (OpenCL: work-group sizes) from\n"
                "               `tether tune`'s log\n"
                "  --mcpu CPU   the CPU a MODEL is compiled for (default: the device's, from its\n"
                "               HELLO, e.g. x86-64-v4)\n"
                "  --opt-level 0|1|2|3|s, --params linked|blob  as for tether compile (MODEL)\n"
                "  --pool NAME:global:SIZE, --pin TENSOR=POOL, --plan-inputs, --plan-outputs,\n"
                "  --params-pool NAME\n"
                "               memory pools of a MODEL, as for tether compile (the device must\n"
                "               list each pool: `tether info`)\n"
                "  --json FILE  also write the %s as JSON (docs/cli.md)\n"
                "  --backend c|opencl [--texture-weights] [--texture-activations]  compile a\n"
                "               MODEL to a C library (default) or to OpenCL kernels run on the\n"
                "               device's OpenCL layer (activations in textures within the\n"
                "               image limits of its HELLO)\n"
                "  --precision fp32|fp16  (--backend opencl) fp16: workspace, weights and images\n"
                "               in half, float arithmetic, float32 inputs/outputs\n"
                "  --firmware PATH  firmware.json (or its folder) of an MCU device, for linking\n"
                "               .o/.a/artifacts at its load region (default: $TETHER_FIRMWARE,\n"
                "               then the build tree)\n"
                "  --global X[,Y[,Z]] [--local X[,Y[,Z]]]  NDRange of an OpenCL kernel "
                "(MODULE.cl)\n"
                "  --profile    (MODEL or a profiling build) per-node times, work, memory and\n"
                "               stack: `tether profile` with these arguments (docs/profile.md)\n"
                "  arguments: inputs then outputs, in order. An --out without a shape takes "
                "the first input's.\n",
                g_cmd, g_cmd,
                bench ? ""
                      : "  --reference  (MODEL only) run the model on this machine's reference\n"
                        "               interpreter instead of a device\n",
                bench ? "timings (every repeat, median/mean/min/max, number/repeat, stack "
                        "high-water mark)"
                      : "outputs' summaries, the call's time and stack high-water mark");
            if (bench) {
                printf("  --number N (10) --repeat R (3) --min-repeat-ms MS (0) --cooldown-ms "
                       "MS (0): TIME parameters\n"
                       "  --svg FILE   a picture of the latency distribution over the repeats\n");
            }
            return -1;
        }
        int c = tether_cli_common_opt(&r->c, argc, argv, &i);
        if (c < 0) {
            return 2;
        }
        if (c) {
            continue;
        }
        if (!strcmp(a, "--in") || !strcmp(a, "--out")) {
            if (!v) {
                return fail(2, "%s needs a file", a);
            }
            i++;
            int is_out = !strcmp(a, "--out");
            int *n = is_out ? &r->nout : &r->nin, first = *n;
            int prc = tether_cli_array_parse(v, is_out, is_out ? r->out : r->in, n, RUN_MAX_IO);
            if (prc) {
                return prc;
            }
            for (int k = first; k < *n; k++) {
                io_spec *sp = is_out ? &r->out[k] : &r->in[k];
                sp->scope = scope;
                if (is_out && parse_out_shape(sp)) {
                    return 2;
                }
            }
            if (is_out && tether_cli_out_npz(r->out, r->nout) && r->nout > 1) {
                return fail(2, "--out %s collects every output; it takes no other --out",
                            tether_cli_out_npz(r->out, r->nout));
            }
            r->out_given |= is_out;
        } else if (!strcmp(a, "--global") || !strcmp(a, "--local")) {
            uint64_t sz[3] = {0, 0, 0};
            int n = v ? parse_sizes(v, sz) : -1;
            if (n < 1) {
                return fail(2, "%s wants 1 to 3 positive sizes like 64 or 32,8", a);
            }
            i++;
            if (!strcmp(a, "--global")) {
                r->work_dim = (uint32_t)n;
                memcpy(r->global, sz, sizeof sz);
            } else {
                memcpy(r->local, sz, sizeof sz);
            }
        } else if (!strcmp(a, "--int") || !strcmp(a, "--float")) {
            if (!v || r->nscalars >= 16) {
                return fail(2, "%s needs a value (at most 16 scalars)", a);
            }
            char *end;
            tether_remote_arg *sa = &r->scalars[r->nscalars++];
            errno = 0;
            if (!strcmp(a, "--int")) {
                sa->type_code = TETHER_TYPE_INT;
                sa->v.i = strtoll(v, &end, 10);
            } else {
                sa->type_code = TETHER_TYPE_FLOAT;
                sa->v.f = strtod(v, &end);
            }
            if (*end || end == v || errno) {
                return fail(2, "%s: '%s' is not a number", a, v);
            }
            i++;
        } else if (!bench && !strcmp(a, "--reference")) {
            r->reference = 1;
        } else if (!strcmp(a, "--backend")) {
            if (!v || (strcmp(v, "c") && strcmp(v, "opencl"))) {
                return fail(2, "--backend wants c or opencl");
            }
            r->opencl = !strcmp(v, "opencl");
            i++;
        } else if (!strcmp(a, "--texture-weights")) {
            r->texture_weights = 1;
        } else if (!strcmp(a, "--texture-activations")) {
            r->texture_acts = 1;
        } else if (!strcmp(a, "--precision")) {
            if (!v || (strcmp(v, "fp32") && strcmp(v, "fp16"))) {
                return fail(2, "--precision wants fp32 or fp16");
            }
            r->fp16 = !strcmp(v, "fp16");
            i++;
        } else if (!strcmp(a, "--target") || !strcmp(a, "--abi")) {
            if (!v) {
                return fail(2, "%s needs a value", a);
            }
            if (!strcmp(a, "--abi")) {
                tether_abi abi;
                if (tether_abi_parse(v, &abi)) {
                    return fail(2, "--abi '%s' is not packed or unpacked", v);
                }
                r->abi = v;
            } else {
                r->compile_target = v;
            }
            i++;
        } else if (!strcmp(a, "--json")) {
            if (!v) {
                return fail(2, "--json needs a file");
            }
            r->c.json_file = v;
            i++;
        } else if (bench && !strcmp(a, "--svg")) {
            if (!v) {
                return fail(2, "--svg needs a file");
            }
            r->svg = v;
            i++;
        } else if (!strcmp(a, "--mcpu")) {
            if (!v) {
                return fail(2, "--mcpu needs a value");
            }
            r->cpu = v;
            i++;
        } else if (!strcmp(a, "--tuning-log")) {
            if (!v) {
                return fail(2, "--tuning-log needs a file");
            }
            r->tuning_log = v;
            i++;
        } else if (!strcmp(a, "--opt-level")) {
            if (!v || (strcmp(v, "s") && (strlen(v) != 1 || v[0] < '0' || v[0] > '3'))) {
                return fail(2, "--opt-level wants 0, 1, 2, 3 or s");
            }
            r->opt_level = !strcmp(v, "s") ? -1 : v[0] - '0';
            i++;
        } else if (!strcmp(a, "--params")) {
            if (!v || (strcmp(v, "linked") && strcmp(v, "blob"))) {
                return fail(2, "--params wants linked or blob");
            }
            r->params = !strcmp(v, "linked");
            i++;
        } else if (!strcmp(a, "--loop-max")) {
            if (tether_cli_loop_max_parse(v)) {
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--input-shape")) {
            if (!v || r->ninput_shapes >= RUN_MAX_IO) {
                return fail(2, "--input-shape needs NAME=D0xD1... (at most %d)", RUN_MAX_IO);
            }
            r->input_shapes[r->ninput_shapes++] = v;
            i++;
#ifdef TETHER_HAVE_COMPILER
        } else if (!strcmp(a, "--pool") || !strcmp(a, "--pin") || !strcmp(a, "--plan-inputs") ||
                   !strcmp(a, "--plan-outputs") || !strcmp(a, "--params-pool")) {
            if (tether_memory_cli_parse(r->mem, g_cmd, argc, argv, &i) != 1) {
                return 2;
            }
#endif
        } else if (!strcmp(a, "--scope")) {
            if (!v || tether_scope_parse(v, &scope)) {
                return fail(2, "--scope: %s", v ? tether_last_error() : "needs a value");
            }
            i++;
        } else if (bench && !strcmp(a, "--number")) {
            if (parse_u32(a, v, &r->number)) {
                return 2;
            }
            if (r->number < 1) {
                return fail(2, "--number must be >= 1");
            }
            i++;
        } else if (bench && !strcmp(a, "--repeat")) {
            if (parse_u32(a, v, &r->repeat)) {
                return 2;
            }
            if (r->repeat < 1 || r->repeat > 32) {
                return fail(2, "--repeat must be 1..32");
            }
            i++;
        } else if (bench && !strcmp(a, "--min-repeat-ms")) {
            if (parse_u32(a, v, &r->min_repeat_ms)) {
                return 2;
            }
            i++;
        } else if (bench && !strcmp(a, "--cooldown-ms")) {
            if (parse_u32(a, v, &r->cooldown_ms)) {
                return 2;
            }
            i++;
        } else if (a[0] == '-') {
            return fail(2, "unknown option '%s' (try --help)", a);
        } else if (!r->target) {
            r->target = a;
        } else if (!r->func) {
            r->func = a;
        } else {
            return fail(2, "unexpected argument '%s'", a);
        }
    }
    if (!r->target) {
        return fail(2, "nothing to run (try --help)");
    }
    if (r->c.json_file && tether_file_out_check(r->c.json_file)) { /* before any work */
        return fail(2, "--json: %s", tether_last_error());
    }
    if (r->svg && tether_file_out_check(r->svg)) {
        return fail(2, "--svg: %s", tether_last_error());
    }
    return 0;
}

/* ---- a pool:// device lost mid-run: the run is queued again ---- */

/* A run's return when its pool:// device was lost mid-run and the run should be repeated on
 * another device of the pool (at most POOL_REQUEUES times; run_requeued). */
#define RUN_REQUEUE   3
#define POOL_REQUEUES 2

/* A device request of run/bench on session s failed (why in tether_last_error(), what, when not
 * NULL, names the request's subject): RUN_REQUEUE, said on stderr, when the pool's device died
 * under us (its connection is gone; the session gives it back as dead) and the run may be queued
 * again; else the failure said as usual, 1. */
static int device_failed(const run_args *r, tether_session *s, const char *what) {
    const char *url = tether_cli_device_url(r->c.device);
    if (tether_session_fault(s) && tether_last_status() == TETHER_ERR_IO &&
        !strncmp(url, "pool://", 7) && r->pool_requeues < POOL_REQUEUES) {
        fprintf(stderr, "tether %s: the pool's device was lost mid-run (%s%s%s); queuing again\n",
                g_cmd, what ? what : "", what ? ": " : "", tether_last_error());
        return RUN_REQUEUE;
    }
    return what ? fail(1, "%s: %s", what, tether_last_error()) : fail(1, "%s", tether_last_error());
}

/* Runs once(r, target, bench), again while it returns RUN_REQUEUE (each run opens its own
 * session, so it queues for a device of the pool again). */
static int run_requeued(run_args *r, const char *target, int bench,
                        int (*once)(run_args *, const char *, int)) {
    int rc;
    while ((rc = once(r, target, bench)) == RUN_REQUEUE) {
        r->pool_requeues++;
    }
    return rc;
}

/* ---- the remote side of a module run: prepare, call, time ---- */

typedef struct module_run {
    tether_session *s; /* borrowed */
    tether_remote_func f;
    tether_remote_arg args[2 * RUN_MAX_IO + 16];
    uint32_t nargs;
    uint32_t work_dim; /* OpenCL C module: the NDRange */
    uint64_t global[3], local[3];
    tether_npy in[RUN_MAX_IO], out[RUN_MAX_IO];
    uint64_t out_handle[RUN_MAX_IO];
    int nin, nout;
} module_run;

static void module_run_free(module_run *p) {
    for (int i = 0; i < RUN_MAX_IO; i++) {
        tether_npy_free(&p->in[i]);
        tether_npy_free(&p->out[i]);
    }
    free(p);
}

/* Loads inputs, allocates and fills them remotely, allocates outputs; sets the arguments
 * (arrays, then the scalars). */
static int prepare_arrays(module_run *p, run_args *r) {
    p->nin = r->nin;
    p->nout = r->nout;
    p->work_dim = r->work_dim;
    memcpy(p->global, r->global, sizeof p->global);
    memcpy(p->local, r->local, sizeof p->local);
    for (int i = 0; i < r->nin; i++) {
        if (tether_cli_array_read(&r->in[i], &p->in[i])) {
            return fail(1, "%s", tether_last_error());
        }
    }
    for (int i = 0; i < r->nin + r->nout; i++) {
        int is_in = i < r->nin;
        io_spec *sp = is_in ? &r->in[i] : &r->out[i - r->nin];
        tether_npy *n = is_in ? &p->in[i] : &p->out[i - r->nin];
        if (!is_in) {
            if (sp->has_shape) {
                n->dtype = sp->dtype;
                n->ndim = sp->ndim;
                memcpy(n->shape, sp->shape, sizeof n->shape);
            } else if (r->nin > 0) {
                n->dtype = p->in[0].dtype;
                n->ndim = p->in[0].ndim;
                memcpy(n->shape, p->in[0].shape, sizeof n->shape);
            } else {
                return fail(2, "--out %s: no shape given and no input to copy it from", sp->label);
            }
            if (tether_shape_bytes(n->shape, n->ndim, n->dtype, &n->nbytes)) {
                return fail(2, "--out %s: %s", sp->label, tether_last_error());
            }
            n->data = calloc(1, n->nbytes ? n->nbytes : 1);
            if (!n->data) {
                return fail(1, "out of memory");
            }
        }
        uint64_t h;
        if (tether_session_alloc(p->s, n->shape, n->ndim, n->dtype, sp->scope, "", &h, NULL) ||
            (is_in && tether_session_copy_to(p->s, h, 0, n->data, n->nbytes))) {
            return device_failed(r, p->s, sp->label);
        }
        if (!is_in) {
            p->out_handle[i - r->nin] = h;
        }
        p->args[p->nargs].type_code =
            p->f.abi == TETHER_ABI_PACKED ? TETHER_TYPE_DLTENSOR : TETHER_TYPE_HANDLE;
        p->args[p->nargs++].v.array = h;
    }
    for (int i = 0; i < r->nscalars; i++) {
        p->args[p->nargs++] = r->scalars[i];
    }
    return 0;
}

/* One call; the outputs are read back into p->out. */
static int module_call(module_run *p, const run_args *r, tether_call_result *res) {
    memset(res, 0, sizeof *res);
    int crc = p->work_dim ? tether_session_launch(p->s, &p->f, p->args, p->nargs, p->work_dim,
                                                  p->global, p->local, res)
                          : tether_session_call(p->s, &p->f, p->args, p->nargs, res);
    if (crc) {
        return device_failed(r, p->s, NULL);
    }
    for (int i = 0; i < p->nout; i++) {
        if (tether_session_copy_from(p->s, p->out_handle[i], 0, p->out[i].data, p->out[i].nbytes)) {
            return device_failed(r, p->s, NULL);
        }
    }
    return 0;
}

static int module_time(module_run *p, const run_args *r, tether_time_stats *ts) {
    if (tether_session_time_launch(p->s, &p->f, p->args, p->nargs, p->work_dim, p->global, p->local,
                                   r->number, r->repeat, r->min_repeat_ms, r->cooldown_ms, ts)) {
        return device_failed(r, p->s, NULL);
    }
    return 0;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* One run of a module's function (run_requeued repeats it when the pool's device died). */
static int run_module_once(run_args *r, const char *target, int bench) {
    tether_session *s;
    if (tether_cli_common_open(&r->c, &s)) {
        return 1;
    }
    module_run *p = calloc(1, sizeof *p);
    int rc = 1;
    uint64_t mod;
    const char *name = tether_cli_base_name(target);
    uint32_t kind = ends_with(target, ".cl") ? 1u : 0u;
    if (!p) {
        fail(1, "out of memory");
        goto out;
    }
    p->s = s;
    if (kind == 1 && !r->work_dim) {
        fail(2, "an OpenCL kernel needs --global X[,Y[,Z]]");
        rc = 2;
        goto out;
    }
    if (tether_cli_load_module(s, target, r->compile_target, r->c.firmware, name, &mod, NULL,
                               NULL) ||
        tether_session_get_function(s, mod, r->func, &p->f)) {
        rc = device_failed(r, s, NULL);
        goto out;
    }
    if (p->f.num_args >= 0 && p->f.num_args != r->nin + r->nout + r->nscalars) {
        fail(1, "function '%s' takes %d arguments; %d inputs + %d outputs + %d scalars given",
             r->func, (int)p->f.num_args, r->nin, r->nout, r->nscalars);
        goto out;
    }
    if ((rc = prepare_arrays(p, r)) != 0) {
        rc = rc == RUN_REQUEUE ? rc : 1;
        goto out;
    }
    run_result q = {.s = s, .fname = r->func, .nout = p->nout, .out = p->out};
    memset(&q.ts, 0, sizeof q.ts);
    if ((rc = module_call(p, r, &q.call)) != 0 || (bench && (rc = module_time(p, r, &q.ts)) != 0)) {
        goto out;
    }
    rc = tether_cli_report_run(r, bench, &q);
out:
    if (rc && rc != RUN_REQUEUE) {
        tether_cli_after_failure(s, g_cmd);
    }
    if (p) {
        module_run_free(p); /* the session's end frees the remote arrays */
    }
    tether_session_close(s);
    return rc;
}

static int run_module(run_args *r, int bench) {
    if (!r->func) {
        return fail(2, "give the function to call after the module (try --help)");
    }
    return run_requeued(r, r->target, bench, run_module_once);
}

/* ---- artifacts (tether/artifact.h) ---- */

/* The local half of an artifact run, before the device is contacted: opens (unless *ap is open
 * already) and checks the artifact, the outputs' specs (default files out0.npy ...), reads every
 * input and checks it against the signature; out[] get buffers of the outputs' sizes. */
static int artifact_local(run_args *r, const char *dir, tether_artifact **ap, tether_npy *in,
                          tether_npy *out) {
    if (!*ap && tether_artifact_open(dir, ap)) { /* a model's comes open and prepared */
        return fail(1, "%s", tether_last_error());
    }
    tether_artifact *a = *ap;
    /* the model's outputs; the extent outputs of those of data-dependent size (after them) get
     * buffers but no files: the .npy's shape carries the extent */
    int nin = tether_artifact_num_inputs(a), nout = tether_artifact_num_model_outputs(a);
    int nall = tether_artifact_num_outputs(a);
    if (nin > RUN_MAX_IO || nall > RUN_MAX_IO) {
        return fail(1, "%s: more than %d inputs or outputs", dir, RUN_MAX_IO);
    }
    const char *in_names[RUN_MAX_IO], *out_names[RUN_MAX_IO];
    for (int i = 0; i < nin + nout; i++) {
        tether_artifact_io io;
        tether_artifact_io_of(a, i >= nin, i < nin ? i : i - nin, &io);
        if (i < nin) {
            in_names[i] = io.name;
        } else {
            out_names[i - nin] = io.name;
        }
    }
    if (!r->ordered) {
        int orc = tether_cli_array_order(r->in, &r->nin, nin, in_names, "input");
        if (!orc && !tether_cli_out_npz(r->out, r->nout)) {
            orc = tether_cli_array_order(r->out, &r->nout, nout, out_names, "output");
        }
        if (orc) {
            return orc;
        }
        r->ordered = 1;
    }
    if (tether_cli_out_npz(r->out, r->nout)) { /* checked before the device runs anything */
        for (int i = 0; i < nout; i++) {
            if (strlen(out_names[i]) >= TETHER_NPZ_NAME_MAX) {
                return fail(2,
                            "--out %s: output '%s' is longer than an .npz array name may be "
                            "(%d bytes)",
                            tether_cli_out_npz(r->out, r->nout), out_names[i],
                            TETHER_NPZ_NAME_MAX - 1);
            }
        }
    }
    if (r->nin != nin) {
        if (r->nbound) {
            return fail(2,
                        "the model has %d run-time inputs; %d --in given, of which %d were bound "
                        "as constants",
                        nin, r->nin + r->nbound, r->nbound);
        }
        return fail(2, "the model has %d inputs, %d --in given", nin, r->nin);
    }
    int npz_out = tether_cli_out_npz(r->out, r->nout) != NULL;
    if (!npz_out && r->nout && r->nout != nout) {
        return fail(2, "the model has %d outputs, %d --out given", nout, r->nout);
    }
    static char defnames[RUN_MAX_IO][32];
    for (int i = 0; i < nall; i++) {
        tether_artifact_io io;
        tether_artifact_io_of(a, 1, i, &io);
        io_spec *sp = &r->out[i];
        if (i >= nout) {
            /* an extent output: a buffer only */
        } else if (!r->nout) {
            r->default_out = 1;
            memset(sp, 0, sizeof *sp);
            snprintf(defnames[i], sizeof defnames[i], "out%d.npy", i);
            sp->path = defnames[i];
            snprintf(sp->label, sizeof sp->label, "%s", sp->path);
        }
        tether_npy *o = &out[i];
        o->dtype = io.dtype;
        o->ndim = io.ndim;
        memcpy(o->shape, io.shape, sizeof(int64_t) * (size_t)io.ndim);
        if (i < nout && sp->has_shape && io.dynamic_dim < 0) {
            tether_npy given = {sp->dtype, sp->ndim, {0}, NULL, 0};
            memcpy(given.shape, sp->shape, sizeof given.shape);
            if (tether_npy_check(&given, sp->label, "output", io.name, io.dtype, io.ndim,
                                 io.shape)) {
                return fail(1, "%s", tether_last_error());
            }
        }
        o->nbytes = io.nbytes;
        o->data = calloc(1, io.nbytes ? io.nbytes : 1);
        if (!o->data) {
            return fail(1, "out of memory");
        }
    }
    if (!npz_out) {
        r->nout = nout;
    }
    for (int i = 0; i < nin; i++) { /* an .npz member is refused from its header */
        tether_artifact_io io;
        tether_artifact_io_of(a, 0, i, &io);
        tether_npy_expect e = {"model input", io.name, io.dtype, io.ndim, {0}};
        memcpy(e.shape, io.shape, sizeof(int64_t) * (size_t)io.ndim);
        if (tether_cli_array_read_expect(&r->in[i], &e, &in[i]) ||
            tether_artifact_check_input(a, i, r->in[i].label, &in[i])) {
            return fail(1, "%s", tether_last_error());
        }
    }
    return 0;
}

/* A MODEL: compiled into dir for the device of session s and prepared there, in one call of the
 * host library (its target and CPU, pool sizes, image limits, the MCU link). *a: the prepared
 * artifact. Returns 0, 1 or 2 (a usage error: an unknown --target or --pool), or RUN_REQUEUE. */
static int model_for_device(run_args *r, tether_session *s, const char *dir, tether_artifact **a) {
    tether_device_compile_options *o = r->dco;
    int rc = tether_device_compile_resolve(tether_session_info(s), o);
    if (rc) {
        return fail(rc == TETHER_ERR_INVALID_ARG ? 2 : 1, "%s", tether_last_error());
    }
    if (tether_compile_for_device(s, r->model, dir, o, &r->comp, a)) {
        if (tether_session_fault(s)) {
            return device_failed(r, s, NULL); /* RUN_REQUEUE: another device of the pool */
        }
        return fail(1, "%s", tether_error_detail());
    }
    cJSON_Delete(r->compiled);
    r->compiled = NULL;
    if (r->c.json_file && !r->opencl) { /* how the model was compiled, for --json */
        const tether_compile_options *c = &o->compile;
        cJSON *cj = r->compiled = cJSON_CreateObject();
        cJSON_AddStringToObject(cj, "target", c->build.target ? c->build.target : "x86_64-linux");
        cJSON_AddStringToObject(cj, "abi", tether_abi_name(c->codegen.abi));
        char ol[8];
        int level = tether_build_opt_level(&c->build);
        snprintf(ol, sizeof ol, "%d", level);
        cJSON_AddStringToObject(cj, "opt_level", level < 0 ? "s" : ol);
        cJSON_AddStringToObject(cj, "cpu", c->build.cpu ? c->build.cpu : "");
        char cpu_flags[256]; /* what that value became: -march=x86-64-v3 -mavxvnni */
        if (tether_cpu_flags(c->build.target, c->build.cpu, cpu_flags, sizeof cpu_flags)) {
            cpu_flags[0] = 0;
        }
        cJSON_AddStringToObject(cj, "cpu_flags", cpu_flags);
        cJSON_AddStringToObject(
            cj, "params", c->codegen.link_params && !r->comp.params_blob_auto ? "linked" : "blob");
        cJSON_AddNumberToObject(cj, "params_bytes", (double)r->comp.params_bytes);
        cJSON_AddNumberToObject(cj, "text_bytes", (double)r->comp.build.sizes.text);
    }
    return 0;
}

/* One run of an artifact directory, or of a MODEL compiled into dir for this run's device
 * (run_requeued repeats it when the pool's device died). */
static int run_artifact_once(run_args *r, const char *dir, int bench) {
    tether_artifact *a = NULL;
    tether_session *s = NULL;
    tether_npy in[RUN_MAX_IO], out[RUN_MAX_IO];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    uint64_t *kernel_ns = NULL;
    double *kernel_median = NULL;
    int rc = 1;
    if (r->model) { /* the device first: the model is compiled for it */
        if (tether_cli_common_open(&r->c, &s)) {
            goto out;
        }
        if ((rc = model_for_device(r, s, dir, &a)) != 0) {
            goto out;
        }
    }
    rc = artifact_local(r, dir, &a, in, out);
    if (rc) {
        goto out;
    }
    rc = 1;
    int nk = tether_artifact_num_kernels(a);
    kernel_ns = calloc((size_t)nk + 1, sizeof *kernel_ns);
    kernel_median = calloc((size_t)nk + 1, sizeof *kernel_median);
    if (!kernel_ns || !kernel_median) {
        fail(1, "out of memory");
        goto out;
    }
    if (!s && tether_cli_common_open(&r->c, &s)) {
        goto out;
    }
    const void *ins[RUN_MAX_IO];
    void *outs[RUN_MAX_IO];
    for (int i = 0; i < RUN_MAX_IO; i++) {
        ins[i] = in[i].data;
        outs[i] = out[i].data;
    }
    run_result q = {.s = s,
                    .fname = tether_artifact_entry(a),
                    .nout = tether_artifact_num_model_outputs(a),
                    .out = out};
    memset(&q.ts, 0, sizeof q.ts);
    for (int i = 0; i < q.nout; i++) {
        tether_artifact_io io;
        tether_artifact_io_of(a, 1, i, &io);
        q.out_name[i] = io.name[0] ? io.name : NULL;
    }
    tether_device_compile_options dflt; /* an artifact directory: the device's loader */
    tether_cli_device_options(&dflt, r->c.firmware);
    /* run's OpenCL wall clock: the kernels again without profiling events (bench: from time) */
    tether_artifact_set_unprofiled_wall(a, !bench);
    if ((!r->model && tether_device_prepare(a, s, &dflt)) ||
        tether_artifact_run(a, ins, outs, &q.call, kernel_ns) ||
        (bench && tether_artifact_time(a, r->number, r->repeat, r->min_repeat_ms, r->cooldown_ms,
                                       &q.ts, kernel_median))) {
        rc = device_failed(r, s, NULL); /* RUN_REQUEUE: another device of the pool */
        goto out;
    }
    for (int i = 0; i < q.nout; i++) { /* a data-dependent size: the actual shape */
        if (tether_artifact_output_shape(a, i, (const void *const *)outs, out[i].shape,
                                         &out[i].nbytes)) {
            rc = fail(1, "%s", tether_last_error());
            goto out;
        }
    }
    if (tether_artifact_backend_of(a) == TETHER_ARTIFACT_OPENCL) {
        rc = tether_cli_report_opencl(r, bench, &q, a, kernel_ns, kernel_median);
    } else {
        rc = tether_cli_report_run(r, bench, &q);
    }
    if (!rc && !bench && r->default_out) {
        tether_cli_say_default_outputs(r, &q);
    }
out:
    if (rc && rc != RUN_REQUEUE && s) {
        tether_cli_after_failure(s, g_cmd);
    }
    tether_artifact_free(a);
    if (s) {
        tether_session_close(s);
    }
    for (int i = 0; i < RUN_MAX_IO; i++) {
        tether_npy_free(&in[i]);
        tether_npy_free(&out[i]);
    }
    free(kernel_ns);
    free(kernel_median);
    return rc;
}

int tether_cli_cmd_run(int argc, char **argv, int bench) {
    run_args r;
    int prc = parse_run(argc, argv, &r, bench);
    if (prc) {
        return prc == -1 ? 0 : prc;
    }
    struct stat st;
    if (stat(r.target, &st) != 0) {
        return fail(1, "%s: %s", r.target, strerror(errno));
    }
    if ((prc = tether_cli_array_order(r.in, &r.nin, 0, NULL, "input")) ||
        (!tether_cli_out_npz(r.out, r.nout) &&
         (prc = tether_cli_array_order(r.out, &r.nout, 0, NULL, "output")))) {
        return prc;
    }
    if (r.reference && (S_ISDIR(st.st_mode) || r.func ||
                        !(ends_with(r.target, ".json") || ends_with(r.target, ".onnx")))) {
        return fail(2, "--reference runs a model file (.json/.onnx), not a module or artifact");
    }
    int compile_opts = r.opt_level != -2 || r.params != -1 || r.cpu || r.tuning_log;
#ifdef TETHER_HAVE_COMPILER
    compile_opts |= tether_memory_cli_given(r.mem);
#endif
    int is_model =
        !S_ISDIR(st.st_mode) && (ends_with(r.target, ".json") || ends_with(r.target, ".onnx"));
    if (compile_opts && (!is_model || r.reference)) {
        return fail(2, "--opt-level, --params, --mcpu and --tuning-log apply to a MODEL compiled "
                       "for the device, and so do --pool, --pin, --plan-inputs, --plan-outputs "
                       "and --params-pool");
    }
    if (S_ISDIR(st.st_mode)) {
        if (r.func) {
            return fail(2, "an artifact directory takes no function name");
        }
        return run_requeued(&r, r.target, bench, run_artifact_once);
    }
    if (ends_with(r.target, ".json") || ends_with(r.target, ".onnx")) {
#ifdef TETHER_HAVE_COMPILER
        if (r.func) {
            return fail(2, "a model takes no function name");
        }
        if (r.reference) {
            return tether_cli_run_reference(r.target, r.nin, r.in, r.nout, r.out);
        }
        /* the options of tether_compile_for_device: the device's target, CPU, pool sizes and
         * image limits where none are given (resolved on each run's session) */
        static tether_device_compile_options dco;
        tether_cli_device_options(&dco, r.c.firmware);
        tether_compile_options *o = &dco.compile;
        if (r.abi) {
            tether_abi_parse(r.abi, &o->codegen.abi);
        }
        if ((r.texture_weights || r.texture_acts || r.fp16) && !r.opencl) {
            return fail(2, "%s needs --backend opencl",
                        r.texture_weights ? "--texture-weights"
                        : r.fp16          ? "--precision fp16"
                                          : "--texture-activations");
        }
        if (r.opt_level != -2) {
            o->build.opt_level = r.opt_level;
        }
        for (int k = 0; k < r.mem->opts.npools; k++) { /* "--pool NAME": the device's pool size */
            if (r.mem->from_device[k]) {
                r.mem->pools[k].capacity = TETHER_POOL_SIZE_FROM_DEVICE;
                r.mem->from_device[k] = false;
            }
        }
        o->memory = r.mem->opts;
        if (r.params != -1) {
            o->codegen.link_params = r.params == 1;
        } else { /* large weights go to a params blob unless --params says otherwise */
            o->params_link_max = TETHER_PARAMS_LINK_MAX;
        }
        if (r.opencl) {
            if (r.abi || r.compile_target || r.opt_level != -2 || r.params != -1 || r.cpu ||
                tether_memory_cli_given(r.mem)) {
                return fail(2, "--abi, --target, --mcpu, --opt-level, --params and the memory "
                               "options apply to the C backend, not --backend opencl");
            }
            o->backend = TETHER_BACKEND_OPENCL;
            o->opencl.texture_weights = r.texture_weights;
            o->opencl.texture_activations = r.texture_acts;
            o->opencl.fp16 = r.fp16;
        } else if (r.compile_target) {
            const tether_target *t;
            if (tether_target_find(r.compile_target, &t)) {
                return fail(2, "--target: %s", tether_last_error());
            }
            o->build.target = t->name;
        }
        o->build.cpu = r.cpu; /* NULL: the device's CPU, when the target is the device's */
        dco.tuning_log = r.tuning_log;
        dco.notes = stderr; /* the tuning log's note */
        /* the --in files against the model (and read: the values an ONNX model binds) before
         * the device is contacted or anything is compiled */
        static tether_cli_model_load ml; /* --in values an ONNX model binds, --input-shape */
        int lrc = tether_cli_model_inputs_check(r.target, &ml, r.nin, r.in, r.ninput_shapes,
                                                r.input_shapes, 0, NULL);
        if (lrc) {
            return lrc;
        }
        o->load = &ml.lo;
        int k = 0; /* inputs bound at compile time are no longer run-time inputs */
        for (int i = 0; i < r.nin; i++) {
            if (!ml.bound[i]) {
                r.in[k++] = r.in[i];
            }
        }
        r.nbound = r.nin - k;
        r.nin = k;
        char dir[600];
        if (tether_cli_tempdir_make(dir, sizeof dir, "run")) {
            tether_cli_model_load_free(&ml);
            return fail(1, "%s", tether_last_error());
        }
        r.model = r.target;
        r.dco = &dco;
        int rc = run_requeued(&r, dir, bench, run_artifact_once);
        cJSON_Delete(r.compiled);
        tether_cli_model_load_free(&ml);
        tether_cli_tempdir_remove(dir);
        return rc;
#else
        return fail(2,
                    "%s: running a model needs the compiler, which this build lacks; compile "
                    "it elsewhere and run the artifact directory",
                    r.target);
#endif
    }
    if (tether_cli_array_named(r.in, r.nin) || tether_cli_array_named(r.out, r.nout) ||
        tether_cli_out_npz(r.out, r.nout)) {
        return fail(2, "a module function's arguments are positional: NAME=FILE and .npz "
                       "archives need a model or an artifact (their inputs have names)");
    }
    return run_module(&r, bench);
}
