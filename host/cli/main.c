/*
 * tether: the command-line tool (docs/cli.md).
 *
 *   tether info    [--device URL] [--json]           HELLO capabilities
 *   tether upload  [--device URL] FILE [--name N]    upload + load a module, list nothing else
 *   tether run     [--device URL] MODULE.so FUNC --in a.npy ... --out c.npy[:DTYPE:D0xD1] ...
 *   tether run     [--device URL] ARTIFACT_DIR|MODEL.json --in x.npy --out y.npy
 *   tether bench   (as run) [--number N] [--repeat R] [--min-repeat-ms MS] [--cooldown-ms MS]
 *   tether compile / plan                              (when built with the compiler)
 *
 * What must stay true: every failure prints one line "tether <cmd>: <reason>" on stderr and
 * exits non-zero (1 = the work failed, 2 = bad usage); nothing partial is written (outputs are
 * written through a temporary file and renamed); the progress bar appears only on a terminal and
 * only for transfers that take over a second.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tether/crt.h"
#include "tether/host.h"
#include "tether/npy.h"

#ifdef TETHER_HAVE_COMPILER
#include "tether/compiler.h"
#include "tether/compiler_cli.h"
#include "tether/planner.h"
#endif

#include "cli.h"
#include "cli_onnx.h"
#include "opencl_artifact.h"

#define MAX_IO TETHER_CLI_MAX_IO

static const char *g_cmd = "tether";

#define fail tether_cli_fail

int tether_cli_fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tether %s: ", g_cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

/* ---- progress bar ---- */

typedef struct progress {
    double start;
    int shown;
} progress;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_progress(void *ctx, const char *what, uint64_t done, uint64_t total) {
    progress *p = ctx;
    if (!isatty(STDERR_FILENO))
        return;
    if (done == 0 || p->start == 0)
        p->start = now_s();
    if (!p->shown && now_s() - p->start < 1.0)
        return;
    p->shown = 1;
    int width = 30, fill = total ? (int)(width * done / total) : width;
    fprintf(stderr, "\r%-16s [%.*s%*s] %3d%%", what, fill, "##############################",
            width - fill, "", total ? (int)(100 * done / total) : 100);
    if (done >= total) {
        fputc('\n', stderr);
        p->shown = 0;
        p->start = 0;
    }
}

/* ---- common options ---- */

typedef struct common {
    const char *device;
    const char *token_file;
    const char *firmware; /* --firmware: firmware.json of an MCU device (or its folder) */
    int timeout_ms;
    int json;
    progress prog;
    char token[4096];
    size_t token_len;
} common;

/* Returns 1 when argv[*i] was a common option (consumed), 0 when not, negative on error. */
static int common_opt(common *c, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(a, "--device") || !strcmp(a, "--token-file") || !strcmp(a, "--timeout-ms") ||
        !strcmp(a, "--firmware")) {
        if (!v)
            return fail(-2, "%s needs a value", a);
        (*i)++;
        if (!strcmp(a, "--device")) {
            if (tether_device_url_check(v))
                return fail(-2, "--device: %s", tether_last_error());
            c->device = v;
        } else if (!strcmp(a, "--firmware"))
            c->firmware = v;
        else if (!strcmp(a, "--token-file"))
            c->token_file = v;
        else {
            char *end;
            long t = strtol(v, &end, 10);
            if (*end || t < 1 || t > 86400000)
                return fail(-2, "--timeout-ms: '%s' is not a positive number", v);
            c->timeout_ms = (int)t;
        }
        return 1;
    }
    if (!strcmp(a, "--json")) {
        c->json = 1;
        return 1;
    }
    return 0;
}

/* local: the tetherd to spawn: $TETHER_TETHERD, else one installed beside this program, else one
 * in this program's build tree, else "tetherd" from PATH. */
static const char *find_tetherd(void) {
    static char path[4096];
    const char *env = getenv("TETHER_TETHERD");
    if (env && *env)
        return env;
    char exe[3000];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(path, sizeof path, "%s/tetherd", exe);
            if (access(path, X_OK) == 0)
                return path;
            snprintf(path, sizeof path, "%s/../../device/tetherd/tetherd", exe);
            if (access(path, X_OK) == 0)
                return path;
        }
    }
    return "tetherd";
}

static int open_session(common *c, tether_session **s) {
    tether_session_options o = {0};
    o.tetherd = find_tetherd();
    o.timeout_ms = c->timeout_ms;
    o.progress = on_progress;
    o.progress_ctx = &c->prog;
    o.log = tether_cli_device_log; /* device LOG lines: warnings always, info when verbose */
    o.log_ctx = (void *)g_cmd;
    static const char *const quiet[] = {"--quiet", NULL};
    if (!getenv("TETHER_VERBOSE"))
        o.tetherd_args = quiet; /* local: keep the spawned tetherd's log lines out of the output */
    const char *tf = c->token_file ? c->token_file : getenv("TETHER_TOKEN_FILE");
    if (tf) {
        uint8_t *tok;
        size_t tlen;
        if (tether_file_read(tf, sizeof c->token, &tok, &tlen))
            return fail(1, "token file: %s", tether_last_error());
        memcpy(c->token, tok, tlen);
        c->token_len = tlen;
        free(tok);
        while (c->token_len &&
               (c->token[c->token_len - 1] == '\n' || c->token[c->token_len - 1] == '\r' ||
                c->token[c->token_len - 1] == ' '))
            c->token_len--;
        o.token = c->token;
        o.token_len = c->token_len;
    }
    const char *url = c->device ? c->device : getenv("TETHER_DEVICE");
    if (tether_session_open(s, url ? url : "local:", &o))
        return fail(1, "%s", tether_last_error());
    return 0;
}

int tether_cli_open(const tether_cli_device *dev, tether_session **s) {
    static common c;
    memset(&c, 0, sizeof c);
    c.device = dev->url;
    c.token_file = dev->token_file;
    c.timeout_ms = dev->timeout_ms;
    return open_session(&c, s);
}

/* ---- info ---- */

static int cmd_info(int argc, char **argv) {
    common c = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: tether info [--device URL] [--token-file FILE] [--timeout-ms MS] "
                   "[--json]\n  Prints the device's HELLO capabilities (for an MCU board also its "
                   "name, memory, boot count and load region).\n");
            return 0;
        }
        int r = common_opt(&c, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r == 0)
            return fail(2, "unknown argument '%s' (try --help)", argv[i]);
    }
    tether_session *s;
    if (open_session(&c, &s))
        return 1;
    const tether_device_info *d = tether_session_info(s);
    char scopes[128] = "";
    for (int k = 0; k < TETHER_SCOPE_COUNT; k++)
        if (d->scopes & (1u << k)) {
            if (scopes[0])
                strcat(scopes, c.json ? "\",\"" : ", ");
            strcat(scopes, tether_scope_name((tether_scope)k));
        }
    if (c.json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "version", d->version);
        cJSON_AddStringToObject(o, "triple", d->triple);
        cJSON_AddStringToObject(o, "arch", d->arch);
        cJSON_AddStringToObject(o, "endianness", d->little_endian ? "little" : "big");
        cJSON_AddNumberToObject(o, "pointer_bits", d->pointer_bits);
        cJSON_AddNumberToObject(o, "max_frame", d->max_frame);
        cJSON_AddNumberToObject(o, "window", d->window);
        cJSON_AddNumberToObject(o, "clock_hz", (double)d->clock_hz);
        cJSON *sc = cJSON_AddArrayToObject(o, "scopes");
        for (int k = 0; k < TETHER_SCOPE_COUNT; k++)
            if (d->scopes & (1u << k))
                cJSON_AddItemToArray(sc, cJSON_CreateString(tether_scope_name((tether_scope)k)));
        cJSON *pl = cJSON_AddArrayToObject(o, "pools");
        for (uint32_t k = 0; k < d->num_pools; k++)
            cJSON_AddItemToArray(pl, cJSON_CreateString(d->pools[k]));
        cJSON_AddBoolToObject(o, "opencl", d->opencl);
        cJSON_AddNumberToObject(o, "image_max_width", d->image_max_width);
        cJSON_AddNumberToObject(o, "image_max_height", d->image_max_height);
        cJSON_AddNumberToObject(o, "load_addr", (double)d->load_addr);
        cJSON_AddNumberToObject(o, "load_size", (double)d->load_size);
        cJSON_AddBoolToObject(o, "auth_required", d->auth_required);
        cJSON_AddStringToObject(o, "board", d->board);
        cJSON_AddNumberToObject(o, "ram_size", (double)d->ram_size);
        cJSON_AddNumberToObject(o, "heap_size", (double)d->heap_size);
        cJSON_AddNumberToObject(o, "stack_size", (double)d->stack_size);
        cJSON_AddNumberToObject(o, "boot_count", d->boot_count);
        char id[16];
        snprintf(id, sizeof id, "0x%08x", (unsigned)d->exports_id);
        cJSON_AddStringToObject(o, "exports_id", id);
        char *txt = cJSON_Print(o);
        printf("%s\n", txt);
        free(txt);
        cJSON_Delete(o);
    } else {
        printf("protocol      %u\n", d->version);
        if (d->board[0])
            printf("board         %s (boot %u)\n", d->board, (unsigned)d->boot_count);
        printf("target        %s (%s, %s-endian, %u-bit pointers)\n", d->triple, d->arch,
               d->little_endian ? "little" : "big", d->pointer_bits);
        printf("max frame     %u bytes (window %u)\n", d->max_frame, d->window);
        printf("clock         %s\n", d->clock_hz ? "device timer" : "nanoseconds");
        if (d->clock_hz)
            printf("clock rate    %llu Hz\n", (unsigned long long)d->clock_hz);
        printf("scopes        %s\n", scopes);
        printf("pools        ");
        for (uint32_t k = 0; k < d->num_pools; k++)
            printf(" %s", d->pools[k]);
        printf("%s\n", d->num_pools ? "" : " (default only)");
        if (d->opencl)
            printf("opencl        yes, images up to %u x %u\n", d->image_max_width,
                   d->image_max_height);
        else
            printf("opencl        no\n");
        if (d->ram_size)
            printf("ram           %llu bytes\n", (unsigned long long)d->ram_size);
        if (d->heap_size)
            printf("array heap    %llu bytes\n", (unsigned long long)d->heap_size);
        if (d->stack_size)
            printf("call stack    %llu bytes\n", (unsigned long long)d->stack_size);
        if (d->load_size)
            printf("load region   0x%llx, %llu bytes (MCU images, exports id 0x%08x)\n",
                   (unsigned long long)d->load_addr, (unsigned long long)d->load_size,
                   (unsigned)d->exports_id);
        printf("auth          %s\n",
               d->auth_required ? "required (authenticated)" : "not required");
    }
    tether_session_close(s);
    return 0;
}

/* ---- upload ---- */

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int cmd_upload(int argc, char **argv) {
    common c = {0};
    const char *file = NULL, *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: tether upload [--device URL] [--token-file FILE] "
                   "FILE.so|FILE.cl|FILE.o|FILE.a|FILE.bin [--name NAME] [--firmware PATH]\n"
                   "  Uploads a shared object or OpenCL C source (content hash checked), loads or "
                   "builds it and prints its function count. For an MCU device, .o/.a files are "
                   "linked at its load region against its firmware.json (--firmware, "
                   "$TETHER_FIRMWARE or the build tree) and .bin images checked first.\n");
            return 0;
        }
        int r = common_opt(&c, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r)
            continue;
        if (!strcmp(argv[i], "--name")) {
            if (i + 1 >= argc || argv[i + 1][0] == '-')
                return fail(2, "--name needs a value");
            name = argv[++i];
        } else if (argv[i][0] == '-') {
            return fail(2, "unknown option '%s' (try --help)", argv[i]);
        } else if (!file) {
            file = argv[i];
        } else {
            return fail(2, "unexpected argument '%s'", argv[i]);
        }
    }
    if (!file)
        return fail(2, "no file given (try --help)");
    if (!name)
        name = base_name(file);
    tether_session *s;
    if (open_session(&c, &s))
        return 1;
    uint32_t nf = 0;
    size_t fl = strlen(file);
    uint32_t kind = fl > 3 && strcmp(file + fl - 3, ".cl") == 0 ? 1u : 0u; /* OpenCL C source */
    if (tether_cli_load_module(s, file, NULL, c.firmware, name, NULL, &nf)) {
        tether_session_close(s);
        return 1;
    }
    printf("uploaded %s as '%s': %u %s\n", file, name, nf, kind ? "kernels" : "functions");
    tether_session_close(s);
    return 0;
}

/* ---- run / bench ---- */

typedef struct io_spec {
    const char *path;
    tether_scope scope;
    int has_shape;
    DLDataType dtype;
    int ndim;
    int64_t shape[TETHER_MAX_NDIM];
} io_spec;

typedef struct run_args {
    common c;
    const char *target; /* module .so, artifact dir or model file */
    const char *func;
    io_spec in[MAX_IO], out[MAX_IO];
    int nin, nout;
    uint32_t number, repeat, min_repeat_ms, cooldown_ms;
    uint32_t work_dim;
    uint64_t global[3], local[3];
    tether_remote_arg scalars[16];
    int nscalars;
    int reference;              /* --reference: run a model on the host's reference interpreter */
    int nbound;                 /* --in files an ONNX model bound as constants when compiled */
    const char *compile_target; /* --target: compile a model for it (default: for the device) */
    int opencl;                 /* --backend opencl: compile a model to OpenCL kernels */
    int texture_weights;        /* --texture-weights: ... with conv weights in images */
    const char *abi;            /* --abi: ABI of a compiled model (default: the compiler's) */
    const char *input_shapes[MAX_IO]; /* --input-shape NAME=D0xD1...: dynamic model dims */
    int ninput_shapes;
} run_args;

/* Parses "A[,B[,C]]" into up to 3 sizes; returns the count or -1. */
static int parse_sizes(const char *v, uint64_t *out) {
    int n = 0;
    const char *p = v;
    while (p && *p && n < 3) {
        char *end;
        errno = 0;
        unsigned long long x = strtoull(p, &end, 10);
        if (end == p || errno || *p == '-' || x == 0)
            return -1;
        out[n++] = x;
        if (*end == ',')
            p = end + 1;
        else if (*end)
            return -1;
        else
            p = NULL;
    }
    return p ? -1 : n;
}

/* Parses "path[:dtype:D0xD1x...]". */
static int parse_out(const char *arg, io_spec *o) {
    static char paths[MAX_IO][1024];
    static int used;
    const char *colon = strchr(arg, ':');
    if (!colon) {
        o->path = arg;
        return 0;
    }
    if (used >= MAX_IO || (size_t)(colon - arg) >= sizeof paths[0])
        return fail(2, "--out '%s': path too long", arg);
    memcpy(paths[used], arg, (size_t)(colon - arg));
    paths[used][colon - arg] = 0;
    o->path = paths[used++];
    char dt[32];
    const char *c2 = strchr(colon + 1, ':');
    if (!c2 || (size_t)(c2 - colon - 1) >= sizeof dt)
        return fail(2, "--out '%s': want PATH:DTYPE:D0xD1... (e.g. y.npy:float32:4x4)", arg);
    memcpy(dt, colon + 1, (size_t)(c2 - colon - 1));
    dt[c2 - colon - 1] = 0;
    if (tether_dtype_parse(dt, &o->dtype))
        return fail(2, "--out '%s': %s", arg, tether_last_error());
    const char *p = c2 + 1;
    o->ndim = 0;
    while (*p) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || errno || o->ndim >= TETHER_MAX_NDIM)
            return fail(2, "--out '%s': bad shape", arg);
        o->shape[o->ndim++] = v;
        p = end;
        if ((*p == 'x' || *p == ',') && p[1])
            p++;
        else if (*p)
            return fail(2, "--out '%s': bad shape", arg);
    }
    o->has_shape = 1;
    return 0;
}

static int parse_u32(const char *opt, const char *v, uint32_t *out) {
    char *end;
    errno = 0;
    unsigned long x = v ? strtoul(v, &end, 10) : 0;
    if (!v || errno || *end || v[0] == '-' || x > 100000000ul)
        return fail(2, "%s needs a non-negative number", opt);
    *out = (uint32_t)x;
    return 0;
}

static int parse_run(int argc, char **argv, run_args *r, int bench) {
    memset(r, 0, sizeof *r);
    r->number = 10;
    r->repeat = 3;
    r->min_repeat_ms = 0;
    tether_scope scope = TETHER_SCOPE_GLOBAL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) {
            printf(
                "usage: tether %s [--device URL] [--token-file FILE] [--timeout-ms MS]\n"
                "         MODULE.so FUNC --in a.npy ... --out c.npy[:DTYPE:D0xD1...] ...\n"
                "       tether %s [--device URL] ARTIFACT_DIR|MODEL.json --in x.npy ... "
                "[--out y.npy ...]\n"
                "  --scope global|texture|texture:weight  scope of the following --in/--out\n"
                "  --int V / --float V  scalar arguments, passed after the arrays\n"
                "  --reference  (run, MODEL only) run the model on this machine's reference\n"
                "               interpreter instead of a device\n"
                "  --input-shape NAME=D0xD1...  (MODEL) fixes a dynamic input dimension; inputs\n"
                "               an ONNX operator needs as constants are bound from their --in "
                "file\n"
                "  --in FILE    .npy, or .pb (onnx.TensorProto)\n"
                "  --target NAME, --abi packed|unpacked  how a MODEL is compiled (default: for\n"
                "               the device, e.g. cortex-m3 for an MCU board; the compiler's ABI)\n"
                "  --backend c|opencl [--texture-weights]  compile a MODEL to a C library\n"
                "               (default) or to OpenCL kernels run on the device's OpenCL layer\n"
                "  --firmware PATH  firmware.json (or its folder) of an MCU device, for linking\n"
                "               .o/.a/artifacts at its load region (default: $TETHER_FIRMWARE,\n"
                "               then the build tree)\n"
                "  --global X[,Y[,Z]] [--local X[,Y[,Z]]]  NDRange of an OpenCL kernel "
                "(MODULE.cl)\n"
                "  arguments: inputs then outputs, in order. An --out without a shape takes "
                "the first input's.\n",
                g_cmd, g_cmd);
            if (bench)
                printf("  --number N (10) --repeat R (3) --min-repeat-ms MS (0) --cooldown-ms "
                       "MS (0): TIME parameters\n");
            return 1;
        }
        int c = common_opt(&r->c, argc, argv, &i);
        if (c < 0)
            return 2;
        if (c)
            continue;
        if (!strcmp(a, "--in") || !strcmp(a, "--out")) {
            if (!v)
                return fail(2, "%s needs a file", a);
            i++;
            if (!strcmp(a, "--in")) {
                if (r->nin >= MAX_IO)
                    return fail(2, "more than %d inputs", MAX_IO);
                r->in[r->nin].path = v;
                r->in[r->nin++].scope = scope;
            } else {
                if (r->nout >= MAX_IO)
                    return fail(2, "more than %d outputs", MAX_IO);
                if (parse_out(v, &r->out[r->nout]))
                    return 2;
                r->out[r->nout++].scope = scope;
            }
        } else if (!strcmp(a, "--global") || !strcmp(a, "--local")) {
            uint64_t sz[3] = {0, 0, 0};
            int n = v ? parse_sizes(v, sz) : -1;
            if (n < 1)
                return fail(2, "%s wants 1 to 3 positive sizes like 64 or 32,8", a);
            i++;
            if (!strcmp(a, "--global")) {
                r->work_dim = (uint32_t)n;
                memcpy(r->global, sz, sizeof sz);
            } else {
                memcpy(r->local, sz, sizeof sz);
            }
        } else if (!strcmp(a, "--int") || !strcmp(a, "--float")) {
            if (!v || r->nscalars >= 16)
                return fail(2, "%s needs a value (at most 16 scalars)", a);
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
            if (*end || end == v || errno)
                return fail(2, "%s: '%s' is not a number", a, v);
            i++;
        } else if (!bench && !strcmp(a, "--reference")) {
            r->reference = 1;
        } else if (!strcmp(a, "--backend")) {
            if (!v || (strcmp(v, "c") && strcmp(v, "opencl")))
                return fail(2, "--backend wants c or opencl");
            r->opencl = !strcmp(v, "opencl");
            i++;
        } else if (!strcmp(a, "--texture-weights")) {
            r->texture_weights = 1;
        } else if (!strcmp(a, "--target") || !strcmp(a, "--abi")) {
            if (!v)
                return fail(2, "%s needs a value", a);
            if (!strcmp(a, "--abi")) {
                tether_abi abi;
                if (tether_abi_parse(v, &abi))
                    return fail(2, "--abi '%s' is not packed or unpacked", v);
                r->abi = v;
            } else {
                r->compile_target = v;
            }
            i++;
        } else if (!strcmp(a, "--input-shape")) {
            if (!v || r->ninput_shapes >= MAX_IO)
                return fail(2, "--input-shape needs NAME=D0xD1... (at most %d)", MAX_IO);
            r->input_shapes[r->ninput_shapes++] = v;
            i++;
        } else if (!strcmp(a, "--scope")) {
            if (!v || tether_scope_parse(v, &scope))
                return fail(2, "--scope: %s", v ? tether_last_error() : "needs a value");
            i++;
        } else if (bench && !strcmp(a, "--number")) {
            if (parse_u32(a, v, &r->number))
                return 2;
            if (r->number < 1)
                return fail(2, "--number must be >= 1");
            i++;
        } else if (bench && !strcmp(a, "--repeat")) {
            if (parse_u32(a, v, &r->repeat))
                return 2;
            if (r->repeat < 1 || r->repeat > 32)
                return fail(2, "--repeat must be 1..32");
            i++;
        } else if (bench && !strcmp(a, "--min-repeat-ms")) {
            if (parse_u32(a, v, &r->min_repeat_ms))
                return 2;
            i++;
        } else if (bench && !strcmp(a, "--cooldown-ms")) {
            if (parse_u32(a, v, &r->cooldown_ms))
                return 2;
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
    if (!r->target)
        return fail(2, "nothing to run (try --help)");
    return 0;
}

void tether_cli_summary(const char *name, const tether_npy *n) {
    char dt[TETHER_DTYPE_NAME_MAX];
    tether_dtype_name(n->dtype, dt, sizeof dt);
    printf("%s: %s [", name, dt);
    for (int i = 0; i < n->ndim; i++)
        printf("%s%lld", i ? ", " : "", (long long)n->shape[i]);
    printf("]");
    size_t count = n->nbytes / tether_dtype_bytes(n->dtype);
    if (count == 0) {
        printf("\n");
        return;
    }
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    for (size_t i = 0; i < count; i++) {
        double x;
        if (n->dtype.code == kDLFloat)
            x = n->dtype.bits == 32 ? ((float *)n->data)[i] : ((double *)n->data)[i];
        else if (n->dtype.code == kDLInt)
            x = n->dtype.bits == 8    ? ((int8_t *)n->data)[i]
                : n->dtype.bits == 32 ? ((int32_t *)n->data)[i]
                                      : (double)((int64_t *)n->data)[i];
        else
            x = ((uint8_t *)n->data)[i];
        mn = x < mn ? x : mn;
        mx = x > mx ? x : mx;
        sum += x;
    }
    printf(" min %g max %g mean %g", mn, mx, sum / (double)count);
    size_t show = count < 8 ? count : 8;
    printf(" first [");
    for (size_t i = 0; i < show; i++) {
        double x = n->dtype.code == kDLFloat && n->dtype.bits == 32 ? ((float *)n->data)[i]
                   : n->dtype.code == kDLFloat                      ? ((double *)n->data)[i]
                                                                    : NAN;
        if (isnan(x) && n->dtype.code != kDLFloat)
            printf("%s…", i ? " " : "");
        else
            printf("%s%g", i ? ", " : "", x);
        if (n->dtype.code != kDLFloat)
            break;
    }
    printf("]\n");
}

/* The remote side of a run: arrays, function, and what to call. */
typedef struct prepared {
    tether_session *s;
    tether_remote_func f;
    tether_remote_arg args[2 * MAX_IO];
    uint32_t nargs;
    tether_npy in[MAX_IO];
    tether_npy out[MAX_IO];
    uint64_t out_handle[MAX_IO];
    int nin, nout;
} prepared;

static void prepared_free(prepared *p) {
    for (int i = 0; i < MAX_IO; i++) {
        tether_npy_free(&p->in[i]);
        tether_npy_free(&p->out[i]);
    }
}

/* Loads inputs, allocates and fills them remotely, allocates outputs; sets args. Expected
 * signature (from artifact metadata) is checked when exp_in/exp_out are given. */
static int prepare_arrays(prepared *p, run_args *r) {
    p->nin = r->nin;
    p->nout = r->nout;
    for (int i = 0; i < r->nin; i++) {
        if (tether_npy_read(r->in[i].path, &p->in[i]))
            return fail(1, "%s", tether_last_error());
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
                return fail(2, "--out %s: no shape given and no input to copy it from", sp->path);
            }
            if (tether_shape_bytes(n->shape, n->ndim, n->dtype, &n->nbytes))
                return fail(2, "--out %s: %s", sp->path, tether_last_error());
            n->data = calloc(1, n->nbytes ? n->nbytes : 1);
            if (!n->data)
                return fail(1, "out of memory");
        }
        uint64_t h;
        if (tether_session_alloc(p->s, n->shape, n->ndim, n->dtype, sp->scope, "", &h, NULL))
            return fail(1, "%s: %s", sp->path, tether_last_error());
        if (is_in && tether_session_copy_to(p->s, h, 0, n->data, n->nbytes))
            return fail(1, "%s: %s", sp->path, tether_last_error());
        if (!is_in)
            p->out_handle[i - r->nin] = h;
        p->args[p->nargs].type_code =
            p->f.abi == TETHER_ABI_PACKED ? TETHER_TYPE_DLTENSOR : TETHER_TYPE_HANDLE;
        p->args[p->nargs++].v.array = h;
    }
    return 0;
}

/* Set by tether_cli_run_artifact: finish_run hands its results over instead of printing. */
static tether_cli_report *g_report;

/* A device-timer duration in its cycles (elapsed_ns is cycles * 1e9 / hz, rounded down). */
static uint64_t cycles(uint64_t elapsed_ns, uint64_t hz) {
    return (uint64_t)((double)elapsed_ns * (double)hz / 1e9 + 0.5);
}

static int finish_run(prepared *p, run_args *r, int bench, const char *fname) {
    tether_call_result res;
    for (int i = 0; i < r->nscalars; i++)
        p->args[p->nargs++] = r->scalars[i];
    int crc = r->work_dim ? tether_session_launch(p->s, &p->f, p->args, p->nargs, r->work_dim,
                                                  r->global, r->local, &res)
                          : tether_session_call(p->s, &p->f, p->args, p->nargs, &res);
    if (crc)
        return fail(1, "%s", tether_last_error());
    for (int i = 0; i < p->nout; i++) {
        if (tether_session_copy_from(p->s, p->out_handle[i], 0, p->out[i].data, p->out[i].nbytes))
            return fail(1, "%s", tether_last_error());
    }
    if (bench) {
        tether_time_stats ts;
        if (tether_session_time_launch(p->s, &p->f, p->args, p->nargs, r->work_dim, r->global,
                                       r->local, r->number, r->repeat, r->min_repeat_ms,
                                       r->cooldown_ms, &ts))
            return fail(1, "%s", tether_last_error());
        if (g_report) {
            g_report->call = res;
            g_report->time = ts;
            g_report->nout = p->nout;
            for (int i = 0; i < p->nout; i++) {
                g_report->out[i] = p->out[i];
                memset(&p->out[i], 0, sizeof p->out[i]);
            }
            return 0;
        }
        printf("%s: %u repeats x %u calls: mean %.3f us, median %.3f us, min %.3f us, max %.3f "
               "us%s\n",
               fname, ts.repeat, ts.number, ts.mean * 1e6, ts.median * 1e6, ts.min * 1e6,
               ts.max * 1e6, ts.zero_timer ? " (zero timer detected)" : "");
        uint64_t hz = tether_session_info(p->s)->clock_hz;
        if (hz) /* a device timer (MCU): the same figures in its cycles */
            printf("cycles per call (%llu Hz timer): first call %llu, TIME mean %.0f, min %.0f, "
                   "max %.0f\n",
                   (unsigned long long)hz, (unsigned long long)cycles(res.elapsed_ns, hz),
                   ts.mean * (double)hz, ts.min * (double)hz, ts.max * (double)hz);
        printf("stack high-water mark: %llu bytes\n", (unsigned long long)res.stack_bytes);
        return 0;
    }
    for (int i = 0; i < p->nout; i++) {
        if (tether_npy_write(r->out[i].path, p->out[i].dtype, p->out[i].shape, p->out[i].ndim,
                             p->out[i].data))
            return fail(1, "%s", tether_last_error());
        tether_cli_summary(r->out[i].path, &p->out[i]);
    }
    uint64_t hz = tether_session_info(p->s)->clock_hz;
    char extra[96] = "";
    if (hz)
        snprintf(extra, sizeof extra, " (%llu cycles at %llu Hz)",
                 (unsigned long long)cycles(res.elapsed_ns, hz), (unsigned long long)hz);
    printf("%s: returned %d in %.3f us%s, stack high-water mark %llu bytes\n", fname, (int)res.ret,
           (double)res.elapsed_ns / 1e3, extra, (unsigned long long)res.stack_bytes);
    if (res.ret_value.type_code == TETHER_TYPE_INT)
        printf("%s: return value %lld\n", fname, (long long)res.ret_value.v.i);
    else if (res.ret_value.type_code == TETHER_TYPE_UINT)
        printf("%s: return value %llu\n", fname, (unsigned long long)res.ret_value.v.u);
    else if (res.ret_value.type_code == TETHER_TYPE_FLOAT)
        printf("%s: return value %.17g\n", fname, res.ret_value.v.f);
    return 0;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int run_module(run_args *r, int bench) {
    if (!r->func)
        return fail(2, "give the function to call after the module (try --help)");
    prepared p;
    memset(&p, 0, sizeof p);
    if (open_session(&r->c, &p.s))
        return 1;
    int rc = 1;
    uint64_t mod;
    const char *name = base_name(r->target);
    uint32_t kind = ends_with(r->target, ".cl") ? 1u : 0u;
    if (kind == 1 && !r->work_dim) {
        fail(2, "an OpenCL kernel needs --global X[,Y[,Z]]");
        rc = 2;
        goto out;
    }
    if (tether_cli_load_module(p.s, r->target, r->compile_target, r->c.firmware, name, &mod, NULL))
        goto out;
    if (tether_session_get_function(p.s, mod, r->func, &p.f)) {
        fail(1, "%s", tether_last_error());
        goto out;
    }
    if (p.f.num_args >= 0 && p.f.num_args != r->nin + r->nout + r->nscalars) {
        fail(1, "function '%s' takes %d arguments; %d inputs + %d outputs + %d scalars given",
             r->func, (int)p.f.num_args, r->nin, r->nout, r->nscalars);
        goto out;
    }
    if (prepare_arrays(&p, r))
        goto out;
    rc = finish_run(&p, r, bench, r->func);
out:
    if (rc)
        tether_cli_after_failure(p.s, g_cmd);
    tether_session_close(p.s);
    prepared_free(&p);
    return rc;
}

/* ---- artifacts ---- */

/* metadata.json and other text files, NUL-terminated; NULL with tether_last_error() set. */
static char *read_text(const char *path) {
    uint8_t *d;
    size_t n;
    if (tether_file_read(path, (size_t)64 << 20, &d, &n))
        return NULL;
    char *t = realloc(d, n + 1);
    if (!t) {
        free(d);
        return NULL;
    }
    t[n] = 0;
    return t;
}

/* Checks an npy/output spec against metadata {"name","dtype","shape"}. */
static int check_sig(const cJSON *m, DLDataType dt, int ndim, const int64_t *shape,
                     const char *what, const char *path) {
    const cJSON *jn = cJSON_GetObjectItem(m, "name"), *jd = cJSON_GetObjectItem(m, "dtype"),
                *js = cJSON_GetObjectItem(m, "shape");
    const char *nm = cJSON_IsString(jn) ? jn->valuestring : "?";
    DLDataType want;
    if (!cJSON_IsString(jd) || tether_dtype_parse(jd->valuestring, &want) || !cJSON_IsArray(js))
        return fail(1, "metadata.json: %s '%s' has no valid dtype/shape", what, nm);
    char have[TETHER_DTYPE_NAME_MAX];
    tether_dtype_name(dt, have, sizeof have);
    if (!tether_dtype_equal(want, dt))
        return fail(1, "%s: dtype %s, but %s '%s' is %s", path, have, what, nm, jd->valuestring);
    int wn = cJSON_GetArraySize(js);
    int same = wn == ndim;
    for (int i = 0; same && i < wn; i++)
        same = (int64_t)cJSON_GetArrayItem(js, i)->valuedouble == shape[i];
    if (!same) {
        char ws[128] = "", hs[128] = "";
        for (int i = 0; i < wn && strlen(ws) < 100; i++)
            snprintf(ws + strlen(ws), sizeof ws - strlen(ws), "%s%lld", i ? "," : "",
                     (long long)cJSON_GetArrayItem(js, i)->valuedouble);
        for (int i = 0; i < ndim && strlen(hs) < 100; i++)
            snprintf(hs + strlen(hs), sizeof hs - strlen(hs), "%s%lld", i ? "," : "",
                     (long long)shape[i]);
        return fail(1, "%s: shape [%s], but %s '%s' is [%s]", path, hs, what, nm, ws);
    }
    return 0;
}

static int run_artifact(run_args *r, const char *dir, int bench) {
    if (tether_ocl_artifact_detect(dir)) { /* OpenCL kernels + launch sequence: opencl_run.c */
        const char *ins[MAX_IO], *outs[MAX_IO];
        for (int i = 0; i < r->nin; i++)
            ins[i] = r->in[i].path;
        for (int i = 0; i < r->nout; i++)
            outs[i] = r->out[i].path;
        tether_cli_ocl_request q = {{r->c.device, r->c.token_file, r->c.timeout_ms},
                                    r->nin,
                                    ins,
                                    r->nout,
                                    outs,
                                    bench,
                                    r->number,
                                    r->repeat,
                                    r->min_repeat_ms,
                                    r->cooldown_ms,
                                    g_report};
        return tether_cli_run_opencl(dir, &q);
    }
    char path[2048];
    snprintf(path, sizeof path, "%s/metadata.json", dir);
    char *txt = read_text(path);
    if (!txt)
        return fail(1, "%s: cannot read metadata.json: %s", dir, tether_last_error());
    cJSON *md = cJSON_Parse(txt);
    free(txt);
    prepared p;
    memset(&p, 0, sizeof p);
    int rc = 1;
    const cJSON *fmt = cJSON_GetObjectItem(md, "format"), *lib = cJSON_GetObjectItem(md, "library"),
                *entry = cJSON_GetObjectItem(md, "entry"), *ins = cJSON_GetObjectItem(md, "inputs"),
                *outs = cJSON_GetObjectItem(md, "outputs");
    const cJSON *ename = entry ? cJSON_GetObjectItem(entry, "name") : NULL;
    const cJSON *ver = cJSON_GetObjectItem(md, "version");
    if (md && cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "tether-artifact") &&
        (!cJSON_IsNumber(ver) || ver->valuedouble != 1)) {
        fail(1, "%s: metadata.json: artifact format version %g, this tether reads version 1", dir,
             cJSON_IsNumber(ver) ? ver->valuedouble : 0.0);
        goto out;
    }
    if (md && cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "tether-artifact") &&
        cJSON_IsNull(lib)) {
        fail(1, "%s: the artifact was compiled with --no-build: it has no library to run", dir);
        goto out;
    }
    if (!md || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "tether-artifact") ||
        !cJSON_IsString(lib) || !cJSON_IsString(ename) || !cJSON_IsArray(ins) ||
        !cJSON_IsArray(outs)) {
        fail(1,
             "%s: metadata.json is not a tether artifact (format, library, entry, inputs, "
             "outputs)",
             dir);
        goto out;
    }
    if (strchr(lib->valuestring, '/') || !strcmp(lib->valuestring, "..")) {
        fail(1, "%s: metadata.json: library must be a file name in the directory", dir);
        goto out;
    }
    if (r->nin != cJSON_GetArraySize(ins)) {
        if (r->nbound)
            rc = fail(2,
                      "the model has %d run-time inputs; %d --in given, of which %d were bound as "
                      "constants",
                      cJSON_GetArraySize(ins), r->nin + r->nbound, r->nbound);
        else
            rc = fail(2, "the model has %d inputs, %d --in given", cJSON_GetArraySize(ins), r->nin);
        goto out;
    }
    /* outputs: shapes and dtypes come from the metadata; default file names y0.npy ... */
    static char defnames[MAX_IO][32];
    int nout = cJSON_GetArraySize(outs);
    if (nout > MAX_IO || (r->nout && r->nout != nout)) {
        rc = fail(2, "the model has %d outputs, %d --out given", nout, r->nout);
        goto out;
    }
    for (int i = 0; i < nout; i++) {
        const cJSON *o = cJSON_GetArrayItem(outs, i);
        const cJSON *jd = cJSON_GetObjectItem(o, "dtype"), *js = cJSON_GetObjectItem(o, "shape");
        io_spec *sp = &r->out[i];
        if (!r->nout) {
            snprintf(defnames[i], sizeof defnames[i], "out%d.npy", i);
            sp->path = defnames[i];
            sp->scope = TETHER_SCOPE_GLOBAL;
        }
        if (!cJSON_IsString(jd) || tether_dtype_parse(jd->valuestring, &sp->dtype) ||
            !cJSON_IsArray(js) || cJSON_GetArraySize(js) > TETHER_MAX_NDIM) {
            fail(1, "%s: metadata.json: output %d has no valid dtype/shape", dir, i);
            goto out;
        }
        if (sp->has_shape && check_sig(o, sp->dtype, sp->ndim, sp->shape, "output", sp->path))
            goto out;
        sp->ndim = cJSON_GetArraySize(js);
        for (int k = 0; k < sp->ndim; k++)
            sp->shape[k] = (int64_t)cJSON_GetArrayItem(js, k)->valuedouble;
        sp->has_shape = 1;
    }
    r->nout = nout;
    /* inputs must match the model's signature before anything is sent */
    for (int i = 0; i < r->nin; i++) {
        tether_npy n;
        if (tether_npy_read(r->in[i].path, &n)) {
            fail(1, "%s", tether_last_error());
            goto out;
        }
        int bad = check_sig(cJSON_GetArrayItem(ins, i), n.dtype, n.ndim, n.shape, "model input",
                            r->in[i].path);
        tether_npy_free(&n);
        if (bad)
            goto out;
    }
    /* a params blob must be the one this build wrote: the unpacked ABI cannot check it */
    const cJSON *jpf = cJSON_GetObjectItem(md, "params_file"),
                *jpb = cJSON_GetObjectItem(md, "params_bytes");
    if (cJSON_IsString(jpf)) {
        struct stat pst;
        snprintf(path, sizeof path, "%s/%s", dir, jpf->valuestring);
        if (strchr(jpf->valuestring, '/') || !cJSON_IsNumber(jpb)) {
            fail(1, "%s: metadata.json: params_file must be a file name, with params_bytes", dir);
            goto out;
        }
        if (stat(path, &pst) != 0) {
            fail(1, "cannot open %s: %s", path, strerror(errno));
            goto out;
        }
        if ((double)pst.st_size != jpb->valuedouble) {
            fail(1,
                 "%s is %lld bytes, but metadata.json says params_bytes %.0f (a params file of "
                 "another build?)",
                 path, (long long)pst.st_size, jpb->valuedouble);
            goto out;
        }
    }
    if (open_session(&r->c, &p.s))
        goto out;
    /* the artifact must suit the device (a shared object for tetherd, a Cortex-M library for an
     * MCU, which the CLI links at its load region) */
    const cJSON *jt = cJSON_GetObjectItem(md, "target");
    const char *target = cJSON_IsString(jt) ? jt->valuestring : "x86_64-linux";
    if (tether_cli_check_target(p.s, target, dir))
        goto out;
    snprintf(path, sizeof path, "%s/%s", dir, lib->valuestring);
    uint64_t mod;
    if (tether_cli_load_module(p.s, path, target, r->c.firmware, lib->valuestring, &mod, NULL))
        goto out;
    if (tether_session_get_function(p.s, mod, ename->valuestring, &p.f)) {
        fail(1, "%s", tether_last_error());
        goto out;
    }
    /* weights in a params blob: P_set_params(blob) before the first call */
    const cJSON *pf = cJSON_GetObjectItem(md, "params_file"),
                *sp = cJSON_GetObjectItem(md, "set_params"),
                *pb = cJSON_GetObjectItem(md, "params_bytes");
    size_t params_bytes = cJSON_IsNumber(pb) && pb->valuedouble >= 0 ? (size_t)pb->valuedouble : 0;
    if (cJSON_IsString(pf) && cJSON_IsString(sp)) {
        if (strchr(pf->valuestring, '/')) {
            fail(1, "%s: metadata.json: params_file must be a file name", dir);
            goto out;
        }
        snprintf(path, sizeof path, "%s/%s", dir, pf->valuestring);
        uint8_t *blob = NULL;
        size_t n = 0;
        tether_remote_func spf;
        uint64_t h;
        if (tether_file_read(path, TETHER_UPLOAD_MAX_BYTES, &blob, &n)) {
            fail(1, "%s", tether_last_error());
            goto out;
        }
        if (n != params_bytes) {
            free(blob);
            fail(1,
                 "%s is %zu bytes, but metadata.json says params_bytes %zu (a params file of "
                 "another build?)",
                 path, n, params_bytes);
            goto out;
        }
        int64_t shape = (int64_t)n;
        if (tether_session_get_function(p.s, mod, sp->valuestring, &spf) ||
            tether_session_alloc(p.s, &shape, 1, TETHER_UINT8, TETHER_SCOPE_GLOBAL, "", &h, NULL) ||
            tether_session_copy_to(p.s, h, 0, blob, n)) {
            free(blob);
            fail(1, "params %s: %s", path, tether_last_error());
            goto out;
        }
        free(blob);
        tether_remote_arg a = {
            spf.abi == TETHER_ABI_PACKED ? TETHER_TYPE_DLTENSOR : TETHER_TYPE_HANDLE, {.array = h}};
        if (tether_session_call(p.s, &spf, &a, 1, NULL)) {
            fail(1, "%s", tether_last_error());
            goto out;
        }
    }
    if (prepare_arrays(&p, r))
        goto out;
    rc = finish_run(&p, r, bench, ename->valuestring);
out:
    if (rc && p.s)
        tether_cli_after_failure(p.s, g_cmd);
    if (p.s)
        tether_session_close(p.s);
    prepared_free(&p);
    cJSON_Delete(md);
    return rc;
}

int tether_cli_run_artifact(const tether_cli_device *dev, const char *dir, int nin,
                            const char *const *inputs, uint32_t number, uint32_t repeat,
                            uint32_t min_repeat_ms, tether_cli_report *rep) {
    run_args r;
    memset(&r, 0, sizeof r);
    memset(rep, 0, sizeof *rep);
    if (nin > MAX_IO)
        return fail(2, "more than %d inputs", MAX_IO);
    r.c.device = dev->url;
    r.c.token_file = dev->token_file;
    r.c.timeout_ms = dev->timeout_ms;
    r.target = dir;
    r.nin = nin;
    for (int i = 0; i < nin; i++) {
        r.in[i].path = inputs[i];
        r.in[i].scope = TETHER_SCOPE_GLOBAL;
    }
    r.number = number;
    r.repeat = repeat;
    r.min_repeat_ms = min_repeat_ms;
    g_report = rep;
    int rc = run_artifact(&r, dir, 1);
    g_report = NULL;
    if (rc)
        tether_cli_report_free(rep);
    return rc;
}

void tether_cli_report_free(tether_cli_report *rep) {
    for (int i = 0; i < TETHER_CLI_MAX_IO; i++)
        tether_npy_free(&rep->out[i]);
    rep->nout = 0;
}

#ifdef TETHER_HAVE_COMPILER
/* The compile target a model needs for the device: an MCU board's core (HELLO arch, e.g.
 * cortex-m3); "" = the default (host) profile. Asks the device only when it is not the local
 * tetherd. */
static int probe_target_common(common *c, char *out, size_t n) {
    out[0] = 0;
    const char *url = c->device ? c->device : getenv("TETHER_DEVICE");
    if (!url || !*url || !strncmp(url, "local:", 6))
        return 0;
    tether_session *s;
    if (open_session(c, &s))
        return 1;
    const tether_device_info *d = tether_session_info(s);
    int rc = 0;
    if (tether_cli_is_mcu(d)) {
        const tether_target *t;
        if (tether_target_find(d->arch, &t))
            rc = fail(1,
                      "the device is a %s board with CPU '%s', for which the compiler has no "
                      "target (give --target)",
                      d->board, d->arch);
        else
            snprintf(out, n, "%s", t->name);
    }
    tether_session_close(s);
    return rc;
}

static int probe_target(run_args *r, char *out, size_t n) {
    return probe_target_common(&r->c, out, n);
}

int tether_cli_probe_target(const tether_cli_device *dev, char *out, size_t n) {
    common c;
    memset(&c, 0, sizeof c);
    c.device = dev->url;
    c.token_file = dev->token_file;
    c.timeout_ms = dev->timeout_ms;
    return probe_target_common(&c, out, n);
}
#endif

static int cmd_run(int argc, char **argv, int bench) {
    run_args r;
    int prc = parse_run(argc, argv, &r, bench);
    if (prc)
        return prc == 1 ? 0 : prc;
    struct stat st;
    if (stat(r.target, &st) != 0)
        return fail(1, "%s: %s", r.target, strerror(errno));
    if (r.reference && (S_ISDIR(st.st_mode) || r.func ||
                        !(ends_with(r.target, ".json") || ends_with(r.target, ".onnx"))))
        return fail(2, "--reference runs a model file (.json/.onnx), not a module or artifact");
    if (S_ISDIR(st.st_mode)) {
        if (r.func)
            return fail(2, "an artifact directory takes no function name");
        return run_artifact(&r, r.target, bench);
    }
    if (ends_with(r.target, ".json") || ends_with(r.target, ".onnx")) {
#ifdef TETHER_HAVE_COMPILER
        if (r.func)
            return fail(2, "a model takes no function name");
        if (r.reference) {
            const char *ins[MAX_IO], *outs[MAX_IO];
            for (int i = 0; i < r.nin; i++)
                ins[i] = r.in[i].path;
            for (int i = 0; i < r.nout; i++)
                outs[i] = r.out[i].path;
            return tether_cli_run_reference(r.target, r.nin, ins, r.nout, outs);
        }
        tether_compile_options o;
        tether_compile_options_init(&o);
        if (r.abi)
            tether_abi_parse(r.abi, &o.codegen.abi);
        char probed[64];
        if (r.texture_weights && !r.opencl)
            return fail(2, "--texture-weights needs --backend opencl");
        if (r.opencl) {
            if (r.abi || r.compile_target)
                return fail(2, "--abi and --target apply to the C backend, not --backend opencl");
            o.backend = TETHER_BACKEND_OPENCL;
            o.opencl.texture_weights = r.texture_weights;
        } else if (r.compile_target) {
            const tether_target *t;
            if (tether_target_find(r.compile_target, &t))
                return fail(2, "--target: %s", tether_last_error());
            o.build.target = t->name;
        } else if (probe_target(&r, probed, sizeof probed)) {
            return 1;
        } else if (probed[0]) {
            o.build.target = probed;
        }
        const char *ins[MAX_IO];
        for (int i = 0; i < r.nin; i++)
            ins[i] = r.in[i].path;
        static tether_cli_model_load ml; /* --in values an ONNX model binds, --input-shape */
        int lrc = tether_cli_model_load_prepare(&ml, r.nin, ins, r.ninput_shapes, r.input_shapes);
        if (lrc)
            return lrc;
        o.load = &ml.lo;
        char dir[600];
        if (tether_cli_tempdir_make(dir, sizeof dir, "run")) {
            tether_cli_model_load_free(&ml);
            return 1;
        }
        tether_compile_result res;
        int rc;
        if (tether_compile_model(r.target, dir, &o, &res)) {
            rc = fail(1, "%s", tether_error_detail());
        } else {
            int k = 0; /* inputs bound at compile time are no longer run-time inputs */
            for (int i = 0; i < r.nin; i++)
                if (!ml.bound[i])
                    r.in[k++] = r.in[i];
            r.nbound = r.nin - k;
            r.nin = k;
            rc = run_artifact(&r, dir, bench);
        }
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
    return run_module(&r, bench);
}

static void usage(FILE *f) {
    fprintf(f, "usage: tether <command> [options]   (tether <command> --help for details)\n"
               "  info      show a device's capabilities (HELLO)\n"
               "  upload    upload and load a shared object\n"
               "  run       upload a module or artifact, run a function, read outputs back\n"
               "  bench     as run, then time it (TIME: number/repeat/min-repeat-ms)\n"
#ifdef TETHER_HAVE_COMPILER
               "  compile   compile a model into an artifact directory (--upload: and link,\n"
               "            upload and load it on --device, e.g. an MCU board)\n"
               "  import    convert a model (ONNX) into the tether JSON model format\n"
               "  plan      plan a model's memory\n"
               "  plan-buffers  plan a buffer list (JSON) with the memory planner\n"
               "  ab        compile a model with both ABIs, run both on a device, compare\n"
#endif
               "Devices: --device tcp://HOST:PORT | uart:///dev/ttyX?baud=N | local: (default;\n"
               "spawns tetherd, found through $TETHER_TETHERD or PATH).\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    g_cmd = cmd;
    tether_cli_onnx_init(); /* .onnx models and .pb arrays, when built with the ONNX front end */
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "info"))
        return cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "upload"))
        return cmd_upload(argc - 1, argv + 1);
    if (!strcmp(cmd, "run"))
        return cmd_run(argc - 1, argv + 1, 0);
    if (!strcmp(cmd, "bench"))
        return cmd_run(argc - 1, argv + 1, 1);
#ifdef TETHER_HAVE_COMPILER
    if (!strcmp(cmd, "compile")) {
        for (int i = 2; i < argc; i++)
            if (!strcmp(argv[i], "--upload"))
                return tether_cli_cmd_compile_upload(argc - 1, argv + 1);
        return tether_cmd_compile(argc - 1, argv + 1);
    }
    if (!strcmp(cmd, "plan"))
        return tether_cmd_plan(argc - 1, argv + 1);
    if (!strcmp(cmd, "import"))
        return tether_cmd_import(argc - 1, argv + 1);
    if (!strcmp(cmd, "plan-buffers"))
        return tether_cmd_plan_buffers(argc - 1, argv + 1);
    if (!strcmp(cmd, "ab"))
        return tether_cli_cmd_ab(argc - 1, argv + 1);
#endif
    g_cmd = "";
    fprintf(stderr, "tether: unknown command '%s' (try tether --help)\n", cmd);
    return 2;
}
