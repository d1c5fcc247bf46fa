/*
 * tether: the command-line tool (docs/cli.md).
 *
 *   tether info    [--device URL] [--json [FILE]]    HELLO capabilities (text, JSON, same keys)
 *   tether upload  [--device URL] FILE [--name N] [--json FILE]   upload + load a module
 *   tether run     [--device URL] MODULE.so FUNC --in a.npy ... --out c.npy[:DTYPE:D0xD1] ...
 *   tether run     [--device URL] ARTIFACT_DIR|MODEL.json --in x.npy --out y.npy [--json FILE]
 *   tether bench   (as run) [--number N] [--repeat R] [--min-repeat-ms MS] [--cooldown-ms MS]
 *   tether compile / plan / import / plan-buffers / ab (when built with the compiler)
 *   tether --version
 *
 * What must stay true: every failure prints one line "tether <cmd>: <reason>" on stderr and
 * exits non-zero (1 = the work failed, 2 = bad usage); -h/--help print help and exit 0; nothing
 * partial is written (outputs and --json files go through tether/file.h: a temporary renamed
 * into place, device nodes and symlinks written in place), and a --json path is checked before
 * the device is contacted; the progress bar appears only on a terminal and only for transfers
 * that take over a second. Artifacts run through the host library (tether/artifact.h), the
 * same steps `ab` takes; this file checks the input files, prints and writes.
 */
#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tether/artifact.h"
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

#define MAX_IO TETHER_CLI_MAX_IO

#define fail  tether_cli_fail
#define g_cmd (tether_cli_command())

/* ---- common options ---- */

typedef struct common {
    const char *device;
    const char *token_file;
    const char *firmware; /* --firmware: firmware.json of an MCU device (or its folder) */
    int timeout_ms;
    int wait;              /* --wait: queue for a busy serial device instead of failing */
    int json;              /* info --json: JSON on stdout (or into json_file) */
    const char *json_file; /* run/bench/upload/info --json FILE */
} common;

/* Returns 1 when argv[*i] was a common option (consumed), 0 when not, negative on error. */
static int common_opt(common *c, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(a, "--wait")) {
        c->wait = 1;
        return 1;
    }
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
    return 0;
}

static int open_session(const common *c, tether_session **s) {
    tether_cli_device dev = {c->device, c->token_file, c->timeout_ms, c->wait};
    return tether_cli_open(&dev, s);
}

/* ---- info ---- */

/* One line of `tether info` and its JSON key: the key is the label with '_' for spaces, plus the
 * unit of the text value (_bytes, _hz), so the two outputs name every figure alike. A field the
 * device does not report is left out of the text and null in the JSON. */
typedef struct info_out {
    cJSON *json; /* NULL: text */
} info_out;

static void info_key(const char *label, const char *unit, char *key, size_t n) {
    snprintf(key, n, "%s%s%s", label, unit ? "_" : "", unit ? unit : "");
    for (char *p = key; *p; p++)
        if (*p == ' ')
            *p = '_';
}

static void info_str(info_out *o, const char *label, const char *v) {
    char key[64];
    info_key(label, NULL, key, sizeof key);
    if (o->json)
        cJSON_AddItemToObject(o->json, key, v ? cJSON_CreateString(v) : cJSON_CreateNull());
    else if (v)
        printf("%-18s %s\n", label, v);
}

/* unit: NULL, "bytes" or "hz" (printed "Hz") */
static void info_num(info_out *o, const char *label, const char *unit, int present, double v) {
    char key[64];
    info_key(label, unit, key, sizeof key);
    if (o->json)
        cJSON_AddItemToObject(o->json, key, present ? cJSON_CreateNumber(v) : cJSON_CreateNull());
    else if (present)
        printf("%-18s %.0f%s%s\n", label, v, unit ? " " : "",
               !unit                 ? ""
               : !strcmp(unit, "hz") ? "Hz"
                                     : unit);
}

static void info_bool(info_out *o, const char *label, int v) {
    char key[64];
    info_key(label, NULL, key, sizeof key);
    if (o->json)
        cJSON_AddBoolToObject(o->json, key, v);
    else
        printf("%-18s %s\n", label, v ? "yes" : "no");
}

static void info_real(info_out *o, const char *label, const char *unit, int present, double v) {
    char key[64];
    info_key(label, unit, key, sizeof key);
    if (o->json)
        cJSON_AddItemToObject(o->json, key, present ? cJSON_CreateNumber(v) : cJSON_CreateNull());
    else if (present)
        printf("%-18s %.3g%s%s\n", label, v, unit ? " " : "", unit ? unit : "");
}

static void info_list(info_out *o, const char *label, int n, const char *const *items) {
    char key[64];
    info_key(label, NULL, key, sizeof key);
    if (o->json) {
        cJSON *a = cJSON_AddArrayToObject(o->json, key);
        for (int i = 0; i < n; i++)
            cJSON_AddItemToArray(a, cJSON_CreateString(items[i]));
        return;
    }
    printf("%-18s", label);
    for (int i = 0; i < n; i++)
        printf("%s%s", i ? ", " : " ", items[i]);
    printf("%s\n", n ? "" : " (none)");
}

/* The link test of `tether info` on a serial line: `probes` round trips of a 256-byte buffer
 * (COPY_TO, then COPY_FROM compared byte for byte), so that the link figures count real
 * traffic. Returns the buffers that came back different (0 on a working link) or -1. */
static int link_probe(tether_session *s, int probes, int *errors) {
    enum { N = 256 };
    int64_t shape = N;
    uint64_t h = 0, nbytes = 0;
    *errors = 0;
    if (tether_session_alloc(s, &shape, 1, TETHER_UINT8, TETHER_SCOPE_GLOBAL, "", &h, &nbytes))
        return -1;
    uint8_t out[N], back[N];
    uint32_t x = 0x9e3779b9u;
    int rc = 0;
    for (int i = 0; i < probes && !rc; i++) {
        for (int k = 0; k < N; k++) { /* every byte value, the framing's FLAG and ESC too */
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            out[k] = (uint8_t)x;
        }
        rc = tether_session_copy_to(s, h, 0, out, N);
        if (!rc)
            rc = tether_session_copy_from(s, h, 0, back, N);
        if (!rc && memcmp(out, back, N) != 0)
            (*errors)++;
    }
    int frc = tether_session_free(s, h);
    return rc || frc ? -1 : 0;
}

/* The link part of `tether info`: what the session's transport saw (docs/rpc.md, "UART
 * link"). */
static void print_link(info_out *o, const tether_link_stats *l, int probes, int data_errors) {
    info_str(o, "link",
             !l->serial ? "stream (TCP or pipe: no loss to repair)"
             : l->link2 ? "serial, link 2 (CRC-32 frames, NAKs, resends at once)"
                        : "serial, classic frames (CRC-16; the device has no link 2)");
    if (!l->serial)
        return;
    info_num(o, "link probes", NULL, 1, probes);
    info_num(o, "link data errors", NULL, probes > 0, data_errors);
    info_num(o, "frames sent", NULL, 1, (double)l->frames_sent);
    info_num(o, "frames resent", NULL, 1, (double)l->frames_resent);
    info_num(o, "frames received", NULL, 1, (double)l->frames_received);
    info_num(o, "frames damaged", NULL, 1, (double)l->frames_dropped);
    info_num(o, "crc errors", NULL, 1, (double)l->crc_errors);
    info_num(o, "naks from device", NULL, 1, (double)l->naks_received);
    info_real(o, "byte error rate", NULL, 1, l->error_rate);
    info_num(o, "chunk", "bytes", 1, (double)l->chunk);
    info_num(o, "max chunk", "bytes", 1, (double)l->max_chunk);
    info_real(o, "round trip", "ms", l->rtt_ms > 0, l->rtt_ms);
}

/* json: the fields as JSON instead of text, on stdout (json_file NULL) or into json_file.
 * Returns the exit code of writing that file (0 when there is none). */
static int print_info(const tether_device_info *d, int json, const char *json_file,
                      const tether_link_stats *link, int probes, int data_errors) {
    info_out o = {json ? cJSON_CreateObject() : NULL};
    int mcu = tether_cli_is_mcu(d);
    char buf[64];
    info_num(&o, "protocol", NULL, 1, d->version);
    info_str(&o, "board", d->board[0] ? d->board : NULL);
    info_num(&o, "boot count", NULL, d->board[0] != 0, d->boot_count);
    info_str(&o, "triple", d->triple);
    info_str(&o, "arch", d->arch);
    /* the -march value code is compiled for on this device, and the extensions it stands for */
    info_str(&o, "cpu", d->cpu[0] ? d->cpu : NULL);
    char feat[sizeof d->cpu_features];
    const char *words[64];
    int nw = 0;
    snprintf(feat, sizeof feat, "%s", d->cpu_features);
    for (char *save = NULL, *w = strtok_r(feat, " ", &save); w && nw < 64;
         w = strtok_r(NULL, " ", &save))
        words[nw++] = w;
    if (nw)
        info_list(&o, "cpu features", nw, words);
    else
        info_str(&o, "cpu features", NULL);
    info_str(&o, "endianness", d->little_endian ? "little" : "big");
    info_num(&o, "pointer bits", NULL, 1, d->pointer_bits);
    info_num(&o, "max frame", "bytes", 1, d->max_frame);
    info_num(&o, "window", NULL, 1, d->window);
    info_str(&o, "clock", d->clock_hz ? "device timer" : "nanoseconds");
    info_num(&o, "clock rate", "hz", d->clock_hz != 0, (double)d->clock_hz);
    const char *scopes[TETHER_SCOPE_COUNT], *pools[8];
    int ns = 0;
    for (int k = 0; k < TETHER_SCOPE_COUNT; k++)
        if (d->scopes & (1u << k))
            scopes[ns++] = tether_scope_name((tether_scope)k);
    info_list(&o, "scopes", ns, scopes);
    for (uint32_t k = 0; k < d->num_pools && k < 8; k++)
        pools[k] = d->pools[k];
    info_list(&o, "pools", (int)(d->num_pools < 8 ? d->num_pools : 8), pools);
    char sizes[8][24];
    const char *size_items[8];
    for (uint32_t k = 0; k < d->num_pools && k < 8; k++) { /* same order as pools */
        if (d->pool_sizes[k])
            snprintf(sizes[k], sizeof sizes[k], "%llu", (unsigned long long)d->pool_sizes[k]);
        else
            snprintf(sizes[k], sizeof sizes[k], "unbounded");
        size_items[k] = sizes[k];
    }
    info_list(&o, "pool bytes", (int)(d->num_pools < 8 ? d->num_pools : 8), size_items);
    info_bool(&o, "opencl", d->opencl);
    info_num(&o, "image max width", NULL, d->opencl, d->image_max_width);
    info_num(&o, "image max height", NULL, d->opencl, d->image_max_height);
    info_num(&o, "ram", "bytes", d->ram_size != 0, (double)d->ram_size);
    info_num(&o, "array heap", "bytes", d->heap_size != 0, (double)d->heap_size);
    info_num(&o, "call stack", "bytes", d->stack_size != 0, (double)d->stack_size);
    snprintf(buf, sizeof buf, "0x%08llx", (unsigned long long)d->load_addr);
    info_str(&o, "load address", mcu ? buf : NULL);
    info_num(&o, "load size", "bytes", mcu, (double)d->load_size);
    snprintf(buf, sizeof buf, "0x%08x", (unsigned)d->exports_id);
    info_str(&o, "exports id", mcu ? buf : NULL);
    info_bool(&o, "auth required", d->auth_required);
    if (link)
        print_link(&o, link, probes, data_errors);
    if (o.json && json_file)
        return tether_cli_write_json(json_file, o.json);
    if (o.json) {
        char *txt = cJSON_Print(o.json);
        if (txt)
            printf("%s\n", txt);
        free(txt);
        cJSON_Delete(o.json);
    }
    return 0;
}

static int is_help(const char *a) {
    return !strcmp(a, "--help") || !strcmp(a, "-h");
}

static int cmd_info(int argc, char **argv) {
    common c = {0};
    int probes = 32; /* link test round trips on a serial line */
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            printf("usage: tether info [--device URL] [--token-file FILE] [--timeout-ms MS] "
                   "[--wait] [--link-test N] [--json [FILE]]\n  Prints the device's HELLO "
                   "capabilities, "
                   "one per line (for an MCU "
                   "board also its name, memory, boot count and load region), then the link: on a "
                   "serial line (uart://, tcp-serial://) after N round trips of 256 bytes each "
                   "way (default 32, 0 = none) the frames sent, resent, received and damaged, "
                   "CRC errors, the device's NAKs, the byte error rate, the chunk size in use and "
                   "the round trip; --json prints the "
                   "same fields as a JSON object instead (key = label with '_' for spaces, plus "
                   "_bytes, _hz or _ms when the value has that unit; null for what the device "
                   "does not report); --json FILE writes that object into FILE and prints the "
                   "text.\n");
            return 0;
        }
        if (!strcmp(argv[i], "--json")) {
            c.json = 1;
            if (i + 1 < argc && argv[i + 1][0] != '-') /* --json FILE, as every command takes */
                c.json_file = argv[++i];
            continue;
        }
        if (!strcmp(argv[i], "--link-test")) {
            char *end = NULL;
            long n = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;
            if (!end || *end || n < 0 || n > 100000)
                return fail(2, "--link-test wants a number of round trips (0..100000)");
            probes = (int)n;
            i++;
            continue;
        }
        int r = common_opt(&c, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r == 0)
            return fail(2, "unknown argument '%s' (try --help)", argv[i]);
    }
    if (c.json_file && tether_file_out_check(c.json_file)) /* before the device is contacted */
        return fail(2, "--json: %s", tether_last_error());
    tether_session *s;
    if (open_session(&c, &s))
        return 1;
    tether_link_stats link;
    tether_session_link_stats(s, &link);
    int data_errors = 0;
    if (!link.serial)
        probes = 0;
    if (probes > 0 && link_probe(s, probes, &data_errors)) {
        fail(1, "link test: %s", tether_last_error());
        tether_session_close(s);
        return 1;
    }
    tether_session_link_stats(s, &link);
    if (c.json_file) /* the text on stdout, the JSON into the file */
        print_info(tether_session_info(s), 0, NULL, &link, probes, data_errors);
    int wrc = print_info(tether_session_info(s), c.json, c.json_file, &link, probes, data_errors);
    tether_session_close(s);
    return data_errors || wrc ? 1 : 0;
}

/* ---- upload ---- */

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static const char *module_kind_name(uint32_t kind) {
    return kind == TETHER_MODULE_OPENCL_SOURCE ? "opencl_source"
           : kind == TETHER_MODULE_MCU_IMAGE   ? "mcu_image"
                                               : "shared_object";
}

static int cmd_upload(int argc, char **argv) {
    common c = {0};
    const char *file = NULL, *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            printf("usage: tether upload [--device URL] [--token-file FILE] [--timeout-ms MS] "
                   "[--wait] "
                   "FILE.so|FILE.cl|FILE.o|FILE.a|FILE.bin [--name NAME] [--firmware PATH] "
                   "[--json FILE]\n"
                   "  Uploads a shared object or OpenCL C source (content hash checked), loads or "
                   "builds it and prints its function count. For an MCU device, .o/.a files are "
                   "linked at its load region against its firmware.json (--firmware, "
                   "$TETHER_FIRMWARE or the build tree) and .bin images checked first.\n"
                   "  --json FILE  also write the module name, handle, function count and names "
                   "(when known), bytes and SHA-256 as JSON\n");
            return 0;
        }
        int r = common_opt(&c, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r)
            continue;
        if (!strcmp(argv[i], "--name") || !strcmp(argv[i], "--json")) {
            if (i + 1 >= argc || argv[i + 1][0] == '-')
                return fail(2, "%s needs a value", argv[i]);
            if (!strcmp(argv[i], "--name"))
                name = argv[++i];
            else
                c.json_file = argv[++i];
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
    if (c.json_file && tether_file_out_check(c.json_file))
        return fail(2, "--json: %s", tether_last_error());
    if (!name)
        name = base_name(file);
    tether_session *s;
    if (open_session(&c, &s))
        return 1;
    uint32_t nf = 0;
    uint64_t module = 0;
    static tether_cli_module_info info;
    memset(&info, 0, sizeof info);
    if (tether_cli_load_module(s, file, NULL, c.firmware, name, &module, &nf,
                               c.json_file ? &info : NULL)) {
        fail(1, "%s", tether_last_error());
        tether_session_close(s);
        return 1;
    }
    size_t fl = strlen(file);
    uint32_t kind = fl > 3 && strcmp(file + fl - 3, ".cl") == 0 ? 1u : 0u; /* OpenCL C source */
    printf("uploaded %s as '%s': %u %s%s\n", file, name, nf, kind ? "kernels" : "functions",
           tether_cli_uploads_cached() ? " (the device had these bytes: none sent)" : "");
    int rc = 0;
    if (c.json_file) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "command", "upload");
        cJSON_AddItemToObject(o, "device",
                              tether_cli_device_json(c.device, tether_session_info(s)));
        cJSON_AddStringToObject(o, "file", file);
        cJSON_AddStringToObject(o, "module", name);
        cJSON_AddStringToObject(o, "kind", module_kind_name(info.kind));
        cJSON_AddNumberToObject(o, "handle", (double)module);
        cJSON_AddNumberToObject(o, "functions", nf);
        if (info.nnames >= 0) {
            cJSON *names = cJSON_AddArrayToObject(o, "function_names");
            for (int i = 0; i < info.nnames; i++)
                cJSON_AddItemToArray(names, cJSON_CreateString(info.names[i]));
        } else {
            cJSON_AddNullToObject(o, "function_names");
        }
        cJSON_AddNumberToObject(o, "bytes", (double)info.bytes);
        char hex[65];
        for (int i = 0; i < 32; i++)
            snprintf(hex + 2 * i, 3, "%02x", info.sha256[i]);
        cJSON_AddStringToObject(o, "sha256", hex);
        cJSON_AddBoolToObject(o, "cached", tether_cli_uploads_cached() > 0);
        rc = tether_cli_write_json(c.json_file, o);
    }
    tether_session_close(s);
    return rc;
}

/* ---- run / bench ---- */

typedef tether_cli_array io_spec; /* an --in/--out argument */

typedef struct run_args {
    common c;
    const char *target; /* module .so, artifact dir or model file */
    const char *func;
    io_spec in[MAX_IO], out[MAX_IO];
    int nin, nout;
    int out_given;   /* --out was given (bench writes outputs only then) */
    int default_out; /* run without --out: the outputs go to out0.npy ... in the cwd (said) */
    int ordered;     /* in/out are in the artifact's order (a requeued run orders nothing again) */
    const char *svg; /* bench --svg FILE: the latency distribution */
    uint32_t number, repeat, min_repeat_ms, cooldown_ms;
    int pool_requeues; /* pool:// devices lost mid-run so far (the run is queued again) */
    uint32_t work_dim;
    uint64_t global[3], local[3];
    tether_remote_arg scalars[16];
    int nscalars;
    int reference;              /* --reference: run a model on the host's reference interpreter */
    int nbound;                 /* --in files an ONNX model bound as constants when compiled */
    const char *compile_target; /* --target: compile a model for it (default: for the device) */
    const char *cpu;        /* --mcpu: the CPU a model is compiled for (default: the device's) */
    int opencl;             /* --backend opencl: compile a model to OpenCL kernels */
    int texture_weights;    /* --texture-weights: ... with conv weights in images */
    int texture_acts;       /* --texture-activations: ... activations in texture images */
    const char *tuning_log; /* --tuning-log FILE: tuned schedules for a MODEL (C backend) */
    const char *abi;        /* --abi: ABI of a compiled model (default: the compiler's) */
    const char *input_shapes[MAX_IO]; /* --input-shape NAME=D0xD1...: dynamic model dims */
    int ninput_shapes;
    int opt_level;   /* --opt-level of a compiled model: 0..3, -1 = s; -2 = default */
    int params;      /* --params of a compiled model: 1 linked, 0 blob, -1 default */
    cJSON *compiled; /* a model compiled on the fly: how (for --json), owned here */
#ifdef TETHER_HAVE_COMPILER
    tether_memory_cli *mem; /* --pool/--pin/--plan-inputs/--plan-outputs of a MODEL (static) */
#endif
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

/* The "PATH:DTYPE:D0xD1x..." form of an --out of `run MODULE FUNC` (o->path as given). */
static int parse_out_shape(io_spec *o) {
    static char paths[MAX_IO][1024];
    static int used;
    const char *arg = o->path;
    const char *colon = strchr(arg, ':');
    if (!colon || access(arg, F_OK) == 0)
        return 0;
    if (o->name[0] || o->npz)
        return fail(2,
                    "--out '%s': PATH:DTYPE:SHAPE is for a module's outputs, not named or "
                    ".npz ones",
                    arg);
    if (used >= MAX_IO || (size_t)(colon - arg) >= sizeof paths[0])
        return fail(2, "--out '%s': path too long", arg);
    memcpy(paths[used], arg, (size_t)(colon - arg));
    paths[used][colon - arg] = 0;
    o->path = paths[used++];
    snprintf(o->label, sizeof o->label, "%s", o->path);
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
        if (is_help(a)) {
            printf(
                "usage: tether %s [--device URL] [--token-file FILE] [--timeout-ms MS] [--wait]\n"
                "         MODULE.so FUNC --in a.npy ... --out c.npy[:DTYPE:D0xD1...] ...\n"
                "       tether %s [--device URL] ARTIFACT_DIR|MODEL.json --in x.npy ... "
                "[--out y.npy ...]\n"
                "  --scope global|texture|texture:weight  scope of the following --in/--out\n"
                "  --int V / --float V  scalar arguments, passed after the arrays\n"
                "%s"
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
                "  --firmware PATH  firmware.json (or its folder) of an MCU device, for linking\n"
                "               .o/.a/artifacts at its load region (default: $TETHER_FIRMWARE,\n"
                "               then the build tree)\n"
                "  --global X[,Y[,Z]] [--local X[,Y[,Z]]]  NDRange of an OpenCL kernel "
                "(MODULE.cl)\n"
                "  arguments: inputs then outputs, in order. An --out without a shape takes "
                "the first input's.\n",
                g_cmd, g_cmd,
                bench ? ""
                      : "  --reference  (MODEL only) run the model on this machine's reference\n"
                        "               interpreter instead of a device\n",
                bench ? "timings (every repeat, median/mean/min/max, number/repeat, stack "
                        "high-water mark)"
                      : "outputs' summaries, the call's time and stack high-water mark");
            if (bench)
                printf("  --number N (10) --repeat R (3) --min-repeat-ms MS (0) --cooldown-ms "
                       "MS (0): TIME parameters\n"
                       "  --svg FILE   a picture of the latency distribution over the repeats\n");
            return -1;
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
            int is_out = !strcmp(a, "--out");
            int *n = is_out ? &r->nout : &r->nin, first = *n;
            int prc = tether_cli_array_parse(v, is_out, is_out ? r->out : r->in, n, MAX_IO);
            if (prc)
                return prc;
            for (int k = first; k < *n; k++) {
                io_spec *sp = is_out ? &r->out[k] : &r->in[k];
                sp->scope = scope;
                if (is_out && parse_out_shape(sp))
                    return 2;
            }
            if (is_out && tether_cli_out_npz(r->out, r->nout) && r->nout > 1)
                return fail(2, "--out %s collects every output; it takes no other --out",
                            tether_cli_out_npz(r->out, r->nout));
            r->out_given |= is_out;
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
        } else if (!strcmp(a, "--texture-activations")) {
            r->texture_acts = 1;
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
        } else if (!strcmp(a, "--json")) {
            if (!v)
                return fail(2, "--json needs a file");
            r->c.json_file = v;
            i++;
        } else if (bench && !strcmp(a, "--svg")) {
            if (!v)
                return fail(2, "--svg needs a file");
            r->svg = v;
            i++;
        } else if (!strcmp(a, "--mcpu")) {
            if (!v)
                return fail(2, "--mcpu needs a value");
            r->cpu = v;
            i++;
        } else if (!strcmp(a, "--tuning-log")) {
            if (!v)
                return fail(2, "--tuning-log needs a file");
            r->tuning_log = v;
            i++;
        } else if (!strcmp(a, "--opt-level")) {
            if (!v || (strcmp(v, "s") && (strlen(v) != 1 || v[0] < '0' || v[0] > '3')))
                return fail(2, "--opt-level wants 0, 1, 2, 3 or s");
            r->opt_level = !strcmp(v, "s") ? -1 : v[0] - '0';
            i++;
        } else if (!strcmp(a, "--params")) {
            if (!v || (strcmp(v, "linked") && strcmp(v, "blob")))
                return fail(2, "--params wants linked or blob");
            r->params = !strcmp(v, "linked");
            i++;
        } else if (!strcmp(a, "--input-shape")) {
            if (!v || r->ninput_shapes >= MAX_IO)
                return fail(2, "--input-shape needs NAME=D0xD1... (at most %d)", MAX_IO);
            r->input_shapes[r->ninput_shapes++] = v;
            i++;
#ifdef TETHER_HAVE_COMPILER
        } else if (!strcmp(a, "--pool") || !strcmp(a, "--pin") || !strcmp(a, "--plan-inputs") ||
                   !strcmp(a, "--plan-outputs") || !strcmp(a, "--params-pool")) {
            if (tether_memory_cli_parse(r->mem, g_cmd, argc, argv, &i) != 1)
                return 2;
#endif
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
    if (r->c.json_file && tether_file_out_check(r->c.json_file)) /* before any work */
        return fail(2, "--json: %s", tether_last_error());
    if (r->svg && tether_file_out_check(r->svg))
        return fail(2, "--svg: %s", tether_last_error());
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
    while ((rc = once(r, target, bench)) == RUN_REQUEUE)
        r->pool_requeues++;
    return rc;
}

/* ---- the remote side of a module run: prepare, call, time ---- */

typedef struct module_run {
    tether_session *s; /* borrowed */
    tether_remote_func f;
    tether_remote_arg args[2 * MAX_IO + 16];
    uint32_t nargs;
    uint32_t work_dim; /* OpenCL C module: the NDRange */
    uint64_t global[3], local[3];
    tether_npy in[MAX_IO], out[MAX_IO];
    uint64_t out_handle[MAX_IO];
    int nin, nout;
} module_run;

static void module_run_free(module_run *p) {
    for (int i = 0; i < MAX_IO; i++) {
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
        if (tether_cli_array_read(&r->in[i], &p->in[i]))
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
                return fail(2, "--out %s: no shape given and no input to copy it from", sp->label);
            }
            if (tether_shape_bytes(n->shape, n->ndim, n->dtype, &n->nbytes))
                return fail(2, "--out %s: %s", sp->label, tether_last_error());
            n->data = calloc(1, n->nbytes ? n->nbytes : 1);
            if (!n->data)
                return fail(1, "out of memory");
        }
        uint64_t h;
        if (tether_session_alloc(p->s, n->shape, n->ndim, n->dtype, sp->scope, "", &h, NULL) ||
            (is_in && tether_session_copy_to(p->s, h, 0, n->data, n->nbytes)))
            return device_failed(r, p->s, sp->label);
        if (!is_in)
            p->out_handle[i - r->nin] = h;
        p->args[p->nargs].type_code =
            p->f.abi == TETHER_ABI_PACKED ? TETHER_TYPE_DLTENSOR : TETHER_TYPE_HANDLE;
        p->args[p->nargs++].v.array = h;
    }
    for (int i = 0; i < r->nscalars; i++)
        p->args[p->nargs++] = r->scalars[i];
    return 0;
}

/* One call; the outputs are read back into p->out. */
static int module_call(module_run *p, const run_args *r, tether_call_result *res) {
    memset(res, 0, sizeof *res);
    int crc = p->work_dim ? tether_session_launch(p->s, &p->f, p->args, p->nargs, p->work_dim,
                                                  p->global, p->local, res)
                          : tether_session_call(p->s, &p->f, p->args, p->nargs, res);
    if (crc)
        return device_failed(r, p->s, NULL);
    for (int i = 0; i < p->nout; i++) {
        if (tether_session_copy_from(p->s, p->out_handle[i], 0, p->out[i].data, p->out[i].nbytes))
            return device_failed(r, p->s, NULL);
    }
    return 0;
}

static int module_time(module_run *p, const run_args *r, tether_time_stats *ts) {
    if (tether_session_time_launch(p->s, &p->f, p->args, p->nargs, p->work_dim, p->global, p->local,
                                   r->number, r->repeat, r->min_repeat_ms, r->cooldown_ms, ts))
        return device_failed(r, p->s, NULL);
    return 0;
}

/* A device-timer duration in its cycles (elapsed_ns is cycles * 1e9 / hz, rounded down). */
static uint64_t cycles(uint64_t elapsed_ns, uint64_t hz) {
    return (uint64_t)((double)elapsed_ns * (double)hz / 1e9 + 0.5);
}

/* What one run or bench produced, for the printed lines and --json. */
typedef struct run_result {
    tether_session *s;
    const char *fname; /* the function called (or the OpenCL kernels' prefix) */
    int nout;
    const tether_npy *out;        /* nout arrays */
    const char *out_name[MAX_IO]; /* the artifact's output names, NULL = "outN" */
    tether_call_result call;
    tether_time_stats ts;
} run_result;

/* bench --svg: the latency distribution of q's TIME (OpenCL: with the kernels' medians). */
static int bench_svg(run_args *r, const run_result *q, int nk, const char *const *kernels,
                     const double *kernel_median) {
    if (!r->svg)
        return 0;
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
    const char *names[MAX_IO];
    char defs[MAX_IO][32];
    for (int i = 0; i < q->nout; i++) {
        snprintf(defs[i], sizeof defs[i], "out%d", i);
        names[i] = q->out_name[i] ? q->out_name[i] : defs[i];
    }
    return tether_cli_write_outputs(r->out, r->nout, q->nout, names, q->out, jouts);
}

/* What `run`/`bench` print and write (--json) after the work is done. */
static int report_run(run_args *r, int bench, const run_result *q) {
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
        if (hz) /* a device timer (MCU): the same figures in its cycles */
            printf("cycles per call (%llu Hz timer): first call %llu, TIME mean %.0f, min %.0f, "
                   "max %.0f\n",
                   (unsigned long long)hz, (unsigned long long)cycles(res->elapsed_ns, hz),
                   ts->mean * (double)hz, ts->min * (double)hz, ts->max * (double)hz);
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
    if (hz)
        snprintf(extra, sizeof extra, " (%llu cycles at %llu Hz)",
                 (unsigned long long)cycles(res->elapsed_ns, hz), (unsigned long long)hz);
    printf("%s: returned %d in %.3f us%s, stack high-water mark %llu bytes\n", fname, (int)res->ret,
           (double)res->elapsed_ns / 1e3, extra, (unsigned long long)res->stack_bytes);
    if (res->ret_value.type_code == TETHER_TYPE_INT)
        printf("%s: return value %lld\n", fname, (long long)res->ret_value.v.i);
    else if (res->ret_value.type_code == TETHER_TYPE_UINT)
        printf("%s: return value %llu\n", fname, (unsigned long long)res->ret_value.v.u);
    else if (res->ret_value.type_code == TETHER_TYPE_FLOAT)
        printf("%s: return value %.17g\n", fname, res->ret_value.v.f);
    if (!root)
        return 0;
    cJSON *call = cJSON_AddObjectToObject(root, "call");
    cJSON_AddNumberToObject(call, "return_code", res->ret);
    cJSON_AddNumberToObject(call, "time_us", (double)res->elapsed_ns / 1e3);
    if (hz)
        cJSON_AddNumberToObject(call, "cycles", (double)cycles(res->elapsed_ns, hz));
    else
        cJSON_AddNullToObject(call, "cycles");
    cJSON_AddNumberToObject(call, "stack_hwm_bytes", (double)res->stack_bytes);
    if (res->ret_value.type_code == TETHER_TYPE_INT)
        cJSON_AddNumberToObject(call, "return_value", (double)res->ret_value.v.i);
    else if (res->ret_value.type_code == TETHER_TYPE_UINT)
        cJSON_AddNumberToObject(call, "return_value", (double)res->ret_value.v.u);
    else if (res->ret_value.type_code == TETHER_TYPE_FLOAT && isfinite(res->ret_value.v.f))
        cJSON_AddNumberToObject(call, "return_value", res->ret_value.v.f);
    else
        cJSON_AddNullToObject(call, "return_value");
    return tether_cli_write_json(r->c.json_file, root);
}

/* The same for an OpenCL artifact: kernel times instead of a stack, per-kernel lines in bench. */
static int report_opencl(run_args *r, int bench, const run_result *q, const tether_artifact *a,
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
        if (!root)
            return 0;
        cJSON_AddNumberToObject(root, "first_call_us", first_us);
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
    if (!root)
        return 0;
    cJSON *call = cJSON_AddObjectToObject(root, "call");
    cJSON_AddNumberToObject(call, "return_code", 0);
    cJSON_AddNumberToObject(call, "time_us", first_us);
    cJSON_AddNullToObject(call, "cycles");
    cJSON_AddNullToObject(call, "stack_hwm_bytes"); /* kernels: no call stack */
    cJSON_AddNullToObject(call, "return_value");
    cJSON_AddNumberToObject(call, "kernels", nk);
    return tether_cli_write_json(r->c.json_file, root);
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* One run of a module's function (run_requeued repeats it when the pool's device died). */
static int run_module_once(run_args *r, const char *target, int bench) {
    tether_session *s;
    if (open_session(&r->c, &s))
        return 1;
    module_run *p = calloc(1, sizeof *p);
    int rc = 1;
    uint64_t mod;
    const char *name = base_name(target);
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
    if ((rc = module_call(p, r, &q.call)) != 0 || (bench && (rc = module_time(p, r, &q.ts)) != 0))
        goto out;
    rc = report_run(r, bench, &q);
out:
    if (rc && rc != RUN_REQUEUE)
        tether_cli_after_failure(s, g_cmd);
    if (p)
        module_run_free(p); /* the session's end frees the remote arrays */
    tether_session_close(s);
    return rc;
}

static int run_module(run_args *r, int bench) {
    if (!r->func)
        return fail(2, "give the function to call after the module (try --help)");
    return run_requeued(r, r->target, bench, run_module_once);
}

/* ---- artifacts (tether/artifact.h) ---- */

/* The local half of an artifact run, before the device is contacted: opens and checks the
 * artifact, the outputs' specs (default files out0.npy ...), reads every input and checks it
 * against the signature; out[] get buffers of the outputs' sizes. */
static int artifact_local(run_args *r, const char *dir, tether_artifact **ap, tether_npy *in,
                          tether_npy *out) {
    if (tether_artifact_open(dir, ap))
        return fail(1, "%s", tether_last_error());
    tether_artifact *a = *ap;
    int nin = tether_artifact_num_inputs(a), nout = tether_artifact_num_outputs(a);
    if (nin > MAX_IO || nout > MAX_IO)
        return fail(1, "%s: more than %d inputs or outputs", dir, MAX_IO);
    const char *in_names[MAX_IO], *out_names[MAX_IO];
    for (int i = 0; i < nin + nout; i++) {
        tether_artifact_io io;
        tether_artifact_io_of(a, i >= nin, i < nin ? i : i - nin, &io);
        if (i < nin)
            in_names[i] = io.name;
        else
            out_names[i - nin] = io.name;
    }
    if (!r->ordered) {
        int orc = tether_cli_array_order(r->in, &r->nin, nin, in_names, "input");
        if (!orc && !tether_cli_out_npz(r->out, r->nout))
            orc = tether_cli_array_order(r->out, &r->nout, nout, out_names, "output");
        if (orc)
            return orc;
        r->ordered = 1;
    }
    if (tether_cli_out_npz(r->out, r->nout)) /* checked before the device runs anything */
        for (int i = 0; i < nout; i++)
            if (strlen(out_names[i]) >= TETHER_NPZ_NAME_MAX)
                return fail(2,
                            "--out %s: output '%s' is longer than an .npz array name may be "
                            "(%d bytes)",
                            tether_cli_out_npz(r->out, r->nout), out_names[i],
                            TETHER_NPZ_NAME_MAX - 1);
    if (r->nin != nin) {
        if (r->nbound)
            return fail(2,
                        "the model has %d run-time inputs; %d --in given, of which %d were bound "
                        "as constants",
                        nin, r->nin + r->nbound, r->nbound);
        return fail(2, "the model has %d inputs, %d --in given", nin, r->nin);
    }
    int npz_out = tether_cli_out_npz(r->out, r->nout) != NULL;
    if (!npz_out && r->nout && r->nout != nout)
        return fail(2, "the model has %d outputs, %d --out given", nout, r->nout);
    static char defnames[MAX_IO][32];
    for (int i = 0; i < nout; i++) {
        tether_artifact_io io;
        tether_artifact_io_of(a, 1, i, &io);
        io_spec *sp = &r->out[i];
        if (!r->nout) {
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
        if (sp->has_shape) {
            tether_npy given = {sp->dtype, sp->ndim, {0}, NULL, 0};
            memcpy(given.shape, sp->shape, sizeof given.shape);
            if (tether_npy_check(&given, sp->label, "output", io.name, io.dtype, io.ndim, io.shape))
                return fail(1, "%s", tether_last_error());
        }
        o->nbytes = io.nbytes;
        o->data = calloc(1, io.nbytes ? io.nbytes : 1);
        if (!o->data)
            return fail(1, "out of memory");
    }
    if (!npz_out)
        r->nout = nout;
    for (int i = 0; i < nin; i++) { /* an .npz member is refused from its header */
        tether_artifact_io io;
        tether_artifact_io_of(a, 0, i, &io);
        tether_npy_expect e = {"model input", io.name, io.dtype, io.ndim, {0}};
        memcpy(e.shape, io.shape, sizeof(int64_t) * (size_t)io.ndim);
        if (tether_cli_array_read_expect(&r->in[i], &e, &in[i]) ||
            tether_artifact_check_input(a, i, r->in[i].label, &in[i]))
            return fail(1, "%s", tether_last_error());
    }
    return 0;
}

/* run without --out wrote the outputs to out0.npy ... in the current directory: says so on
 * stderr, with the directory, so that nothing lands there unannounced. */
static void say_default_outputs(const run_args *r, const run_result *q) {
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        snprintf(cwd, sizeof cwd, "the current directory");
    fprintf(stderr, "tether %s: no --out given: wrote ", g_cmd);
    for (int i = 0; i < q->nout && i < r->nout; i++)
        fprintf(stderr, "%s%s (output '%s')", i ? ", " : "", r->out[i].path,
                q->out_name[i] ? q->out_name[i] : "");
    fprintf(stderr, " in %s; --out FILE, NAME=FILE or FILE.npz chooses where\n", cwd);
}

static int run_artifact_once(run_args *r, const char *dir, int bench) {
    tether_artifact *a = NULL;
    tether_session *s = NULL;
    tether_npy in[MAX_IO], out[MAX_IO];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    uint64_t *kernel_ns = NULL;
    double *kernel_median = NULL;
    int rc = artifact_local(r, dir, &a, in, out);
    if (rc)
        goto out;
    rc = 1;
    int nk = tether_artifact_num_kernels(a);
    kernel_ns = calloc((size_t)nk + 1, sizeof *kernel_ns);
    kernel_median = calloc((size_t)nk + 1, sizeof *kernel_median);
    if (!kernel_ns || !kernel_median) {
        fail(1, "out of memory");
        goto out;
    }
    if (open_session(&r->c, &s))
        goto out;
    tether_artifact_options o;
    tether_artifact_options_init(&o);
    o.loader = tether_cli_artifact_loader; /* links .o/.a for an MCU board */
    o.loader_ctx = (void *)r->c.firmware;
    const void *ins[MAX_IO];
    void *outs[MAX_IO];
    for (int i = 0; i < MAX_IO; i++) {
        ins[i] = in[i].data;
        outs[i] = out[i].data;
    }
    run_result q = {.s = s,
                    .fname = tether_artifact_entry(a),
                    .nout = tether_artifact_num_outputs(a),
                    .out = out};
    memset(&q.ts, 0, sizeof q.ts);
    for (int i = 0; i < q.nout; i++) {
        tether_artifact_io io;
        tether_artifact_io_of(a, 1, i, &io);
        q.out_name[i] = io.name[0] ? io.name : NULL;
    }
    if (tether_artifact_prepare(a, s, &o) ||
        tether_artifact_run(a, ins, outs, &q.call, kernel_ns) ||
        (bench && tether_artifact_time(a, r->number, r->repeat, r->min_repeat_ms, r->cooldown_ms,
                                       &q.ts, kernel_median))) {
        rc = device_failed(r, s, NULL); /* RUN_REQUEUE: another device of the pool */
        goto out;
    }
    if (tether_artifact_backend_of(a) == TETHER_ARTIFACT_OPENCL)
        rc = report_opencl(r, bench, &q, a, kernel_ns, kernel_median);
    else
        rc = report_run(r, bench, &q);
    if (!rc && !bench && r->default_out)
        say_default_outputs(r, &q);
out:
    if (rc && rc != RUN_REQUEUE && s)
        tether_cli_after_failure(s, g_cmd);
    tether_artifact_free(a);
    if (s)
        tether_session_close(s);
    for (int i = 0; i < MAX_IO; i++) {
        tether_npy_free(&in[i]);
        tether_npy_free(&out[i]);
    }
    free(kernel_ns);
    free(kernel_median);
    return rc;
}

#ifdef TETHER_HAVE_COMPILER
/* The compile target a model needs for the device: an MCU board's core (HELLO arch, e.g.
 * cortex-m3); "" = the default (host) profile. Asks the device only when it is not the local
 * tetherd. */
/* The compile target and CPU of the device (tether_cli_device_target), from its HELLO. */
static int probe_target(run_args *r, char *out, size_t n, char *cpu, size_t cn) {
    tether_session *s;
    if (open_session(&r->c, &s))
        return 1;
    int rc = tether_cli_device_target(tether_session_info(s), out, n, cpu, cn);
    tether_session_close(s);
    return rc;
}

#endif

static int cmd_run(int argc, char **argv, int bench) {
    run_args r;
    int prc = parse_run(argc, argv, &r, bench);
    if (prc)
        return prc == -1 ? 0 : prc;
    struct stat st;
    if (stat(r.target, &st) != 0)
        return fail(1, "%s: %s", r.target, strerror(errno));
    if ((prc = tether_cli_array_order(r.in, &r.nin, 0, NULL, "input")) ||
        (!tether_cli_out_npz(r.out, r.nout) &&
         (prc = tether_cli_array_order(r.out, &r.nout, 0, NULL, "output"))))
        return prc;
    if (r.reference && (S_ISDIR(st.st_mode) || r.func ||
                        !(ends_with(r.target, ".json") || ends_with(r.target, ".onnx"))))
        return fail(2, "--reference runs a model file (.json/.onnx), not a module or artifact");
    int compile_opts = r.opt_level != -2 || r.params != -1 || r.cpu || r.tuning_log;
#ifdef TETHER_HAVE_COMPILER
    compile_opts |= tether_memory_cli_given(r.mem);
#endif
    int is_model =
        !S_ISDIR(st.st_mode) && (ends_with(r.target, ".json") || ends_with(r.target, ".onnx"));
    if (compile_opts && (!is_model || r.reference))
        return fail(2, "--opt-level, --params, --mcpu and --tuning-log apply to a MODEL compiled "
                       "for the device, and so do --pool, --pin, --plan-inputs, --plan-outputs "
                       "and --params-pool");
    if (S_ISDIR(st.st_mode)) {
        if (r.func)
            return fail(2, "an artifact directory takes no function name");
        return run_requeued(&r, r.target, bench, run_artifact_once);
    }
    if (ends_with(r.target, ".json") || ends_with(r.target, ".onnx")) {
#ifdef TETHER_HAVE_COMPILER
        if (r.func)
            return fail(2, "a model takes no function name");
        if (r.reference)
            return tether_cli_run_reference(r.target, r.nin, r.in, r.nout, r.out);
        tether_compile_options o;
        tether_compile_options_init(&o);
        if (r.abi)
            tether_abi_parse(r.abi, &o.codegen.abi);
        char probed[64], cpu[128];
        if ((r.texture_weights || r.texture_acts) && !r.opencl)
            return fail(2, "%s needs --backend opencl",
                        r.texture_weights ? "--texture-weights" : "--texture-activations");
        if (r.opt_level != -2)
            o.build.opt_level = r.opt_level;
        /* the --in files against the model (and read: the values an ONNX model binds) before
         * the device is contacted or anything is compiled */
        static tether_cli_model_load ml; /* --in values an ONNX model binds, --input-shape */
        int lrc = tether_cli_model_inputs_check(r.target, &ml, r.nin, r.in, r.ninput_shapes,
                                                r.input_shapes, 0, NULL);
        if (lrc)
            return lrc;
        int from_device = 0;
        for (int k = 0; k < r.mem->opts.npools; k++)
            from_device |= r.mem->from_device[k];
        if (from_device) { /* --pool NAME: the size of the device's pool, from its HELLO */
            tether_session *s;
            if (open_session(&r.c, &s))
                return 1;
            const tether_device_info *d = tether_session_info(s);
            int mrc = tether_memory_cli_resolve(
                r.mem, g_cmd, (int)(d->num_pools < 8 ? d->num_pools : 8), d->pools, d->pool_sizes);
            tether_session_close(s);
            if (mrc)
                return mrc;
        }
        o.memory = r.mem->opts;
        if (r.params != -1)
            o.codegen.link_params = r.params == 1;
        else /* large weights go to a params blob unless --params says otherwise */
            o.params_link_max = TETHER_PARAMS_LINK_MAX;
        if (r.opencl) {
            if (r.abi || r.compile_target || r.opt_level != -2 || r.params != -1 || r.cpu ||
                tether_memory_cli_given(r.mem))
                return fail(2, "--abi, --target, --mcpu, --opt-level, --params and the memory "
                               "options apply to the C backend, not --backend opencl");
            o.backend = TETHER_BACKEND_OPENCL;
            o.opencl.texture_weights = r.texture_weights;
            o.opencl.texture_activations = r.texture_acts;
            if (r.texture_acts) { /* textures within the device's image limits */
                tether_session *s;
                if (open_session(&r.c, &s))
                    return 1;
                const tether_device_info *d = tether_session_info(s);
                o.opencl.image_max_width = d->image_max_width;
                o.opencl.image_max_height = d->image_max_height;
                tether_session_close(s);
            }
        } else if (r.compile_target) {
            const tether_target *t;
            if (tether_target_find(r.compile_target, &t))
                return fail(2, "--target: %s", tether_last_error());
            o.build.target = t->name;
            o.build.cpu = r.cpu;
        } else if (probe_target(&r, probed, sizeof probed, cpu, sizeof cpu)) {
            return 1;
        } else {
            o.build.target = probed;
            o.build.cpu = r.cpu ? r.cpu : cpu; /* the device's CPU unless --mcpu */
        }
        o.load = &ml.lo;
        char dir[600];
        if (tether_cli_tempdir_make(dir, sizeof dir, "run")) {
            tether_cli_model_load_free(&ml);
            return fail(1, "%s", tether_last_error());
        }
        tether_compile_result res;
        int rc;
        tether_tuning_log tlog;
        tether_node_schedule *tns = NULL;
        if (r.tuning_log && tether_tuning_log_apply(r.tuning_log, &o, &tlog, &tns)) {
            rc = fail(1, "--tuning-log: %s", tether_last_error());
        } else if (tether_compile_model(r.target, dir, &o, &res)) {
            rc = fail(1, "%s", tether_error_detail());
        } else {
            if (r.tuning_log)
                tether_tuning_note(stderr, &res, &tlog, &o);
            int k = 0; /* inputs bound at compile time are no longer run-time inputs */
            for (int i = 0; i < r.nin; i++)
                if (!ml.bound[i])
                    r.in[k++] = r.in[i];
            r.nbound = r.nin - k;
            r.nin = k;
            if (r.c.json_file && !r.opencl) { /* how the model was compiled, for --json */
                cJSON *cj = r.compiled = cJSON_CreateObject();
                cJSON_AddStringToObject(cj, "target",
                                        o.build.target ? o.build.target : "x86_64-linux");
                cJSON_AddStringToObject(cj, "abi", tether_abi_name(o.codegen.abi));
                char ol[8];
                int level = tether_build_opt_level(&o.build);
                snprintf(ol, sizeof ol, "%d", level);
                cJSON_AddStringToObject(cj, "opt_level", level < 0 ? "s" : ol);
                cJSON_AddStringToObject(cj, "cpu", o.build.cpu ? o.build.cpu : "");
                cJSON_AddStringToObject(cj, "params",
                                        o.codegen.link_params && !res.params_blob_auto ? "linked"
                                                                                       : "blob");
                cJSON_AddNumberToObject(cj, "params_bytes", (double)res.params_bytes);
                cJSON_AddNumberToObject(cj, "text_bytes", (double)res.build.sizes.text);
            }
            rc = run_requeued(&r, dir, bench, run_artifact_once);
            cJSON_Delete(r.compiled);
        }
        if (r.tuning_log) {
            free(tns);
            tether_tuning_log_close(&tlog);
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
    if (tether_cli_array_named(r.in, r.nin) || tether_cli_array_named(r.out, r.nout) ||
        tether_cli_out_npz(r.out, r.nout))
        return fail(2, "a module function's arguments are positional: NAME=FILE and .npz "
                       "archives need a model or an artifact (their inputs have names)");
    return run_module(&r, bench);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: tether <command> [options]   (tether <command> --help for details)\n"
            "       tether --version\n"
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
            "  tune      search a model's schedule knobs, measured on a device\n"
#endif
            "  pool      a shared device pool on Redis: add a device, status\n"
            "Devices: --device tcp://HOST:PORT | uart:///dev/ttyX?baud=N | tcp-serial://HOST:PORT\n"
            "         (a serial line over TCP, e.g. ser2net) | pool://HOST:PORT/KEY (a device of\n"
            "         KEY from the pool, queued first come first served) | local: (default;\n"
            "spawns tetherd, found through $TETHER_TETHERD or PATH).\n");
}

/* A command's exit code, after saying which files it wrote (also when it then failed: the
 * files are there, e.g. ab's --json and --svg when the outputs differ). */
static int finish(int rc) {
    tether_cli_say_written();
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    tether_cli_set_command(cmd);
    /* a write to a connection the peer closed (Redis, a device) is an error, not a kill; the
     * transports already avoid the signal on their own writes */
    signal(SIGPIPE, SIG_IGN);
    /* SIGINT/SIGTERM/SIGHUP end the compilers too and remove what the command left (tempdir.c) */
    tether_cli_signals_init();
#ifdef TETHER_HAVE_COMPILER
    static char who[80];
    snprintf(who, sizeof who, "tether %.60s", cmd);
    tether_compile_set_notices(stderr, who); /* e.g. large weights moved to a params blob */
#endif
    tether_cli_onnx_init(); /* .onnx models and .pb arrays, when built with the ONNX front end */
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("tether %s\n", TETHER_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "info"))
        return finish(cmd_info(argc - 1, argv + 1));
    if (!strcmp(cmd, "upload"))
        return finish(cmd_upload(argc - 1, argv + 1));
    if (!strcmp(cmd, "run"))
        return finish(cmd_run(argc - 1, argv + 1, 0));
    if (!strcmp(cmd, "bench"))
        return finish(cmd_run(argc - 1, argv + 1, 1));
    if (!strcmp(cmd, "pool"))
        return finish(tether_cli_cmd_pool(argc - 1, argv + 1));
#ifdef TETHER_HAVE_COMPILER
    if (!strcmp(cmd, "compile")) {
        for (int i = 2; i < argc; i++) /* a device to upload to or to compile for */
            if (!strcmp(argv[i], "--upload") || !strcmp(argv[i], "--device"))
                return finish(tether_cli_cmd_compile_upload(argc - 1, argv + 1));
        return finish(tether_cmd_compile(argc - 1, argv + 1));
    }
    if (!strcmp(cmd, "plan"))
        return finish(tether_cmd_plan(argc - 1, argv + 1));
    if (!strcmp(cmd, "tune"))
        return finish(tether_cli_cmd_tune(argc - 1, argv + 1));
    if (!strcmp(cmd, "import"))
        return finish(tether_cmd_import(argc - 1, argv + 1));
    if (!strcmp(cmd, "plan-buffers"))
        return finish(tether_cmd_plan_buffers(argc - 1, argv + 1));
    if (!strcmp(cmd, "ab"))
        return finish(tether_cli_cmd_ab(argc - 1, argv + 1));
#endif
    tether_cli_set_command("");
    fprintf(stderr, "tether: unknown command '%s' (try tether --help)\n", cmd);
    return 2;
}
