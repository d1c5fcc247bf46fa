/*
 * tether: the command-line tool (docs/cli.md): main() dispatches the commands, and this file
 * holds the two that only talk to a device:
 *
 *   tether info    [--device URL] [--json [FILE]]    HELLO capabilities (text, JSON, same keys)
 *   tether upload  [--device URL] FILE [--name N] [--json FILE]   upload + load a module
 *
 * The others live in their own files: run and bench (run.c, their reports in run_report.c),
 * compile --device/--upload (mcu.c), ab and run --reference (model.c), tune (tune.c), pool
 * (pool.c); compile, plan, import and plan-buffers come from the compiler (compiler_cli.h).
 *
 * What must stay true: every failure prints one line "tether <cmd>: <reason>" on stderr and
 * exits non-zero (1 = the work failed, 2 = bad usage); -h/--help print help and exit 0; nothing
 * partial is written (--json files go through tether/file.h: a temporary renamed into place,
 * device nodes and symlinks written in place), and a --json path is checked before the device is
 * contacted; main() says which files a command wrote ("wrote A, B") also when it then failed.
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
#include "custom_ops_cli.h"

#define fail  tether_cli_fail
#define g_cmd (tether_cli_command())

/* ---- info ---- */

/* One line of `tether info` and its JSON key: the key is the label with '_' for spaces, plus the
 * unit of the text value (_bytes, _hz), so the two outputs name every figure alike. A field the
 * device does not report is left out of the text and null in the JSON. */
typedef struct info_out {
    cJSON *json; /* NULL: text */
} info_out;

static void info_key(const char *label, const char *unit, char *key, size_t n) {
    snprintf(key, n, "%s%s%s", label, unit ? "_" : "", unit ? unit : "");
    for (char *p = key; *p; p++) {
        if (*p == ' ') {
            *p = '_';
        }
    }
}

static void info_str(info_out *o, const char *label, const char *v) {
    char key[64];
    info_key(label, NULL, key, sizeof key);
    if (o->json) {
        cJSON_AddItemToObject(o->json, key, v ? cJSON_CreateString(v) : cJSON_CreateNull());
    } else if (v) {
        printf("%-18s %s\n", label, v);
    }
}

/* unit: NULL, "bytes" or "hz" (printed "Hz") */
static void info_num(info_out *o, const char *label, const char *unit, int present, double v) {
    char key[64];
    info_key(label, unit, key, sizeof key);
    if (o->json) {
        cJSON_AddItemToObject(o->json, key, present ? cJSON_CreateNumber(v) : cJSON_CreateNull());
    } else if (present) { /* a label of 18 or more keeps a gap of two spaces */
        int w = strlen(label) >= 18 ? (int)strlen(label) + 1 : 18;
        printf("%-*s %.0f%s%s\n", w, label, v, unit ? " " : "",
               !unit                 ? ""
               : !strcmp(unit, "hz") ? "Hz"
                                     : unit);
    }
}

static void info_bool(info_out *o, const char *label, int v) {
    char key[64];
    info_key(label, NULL, key, sizeof key);
    if (o->json) {
        cJSON_AddBoolToObject(o->json, key, v);
    } else {
        printf("%-18s %s\n", label, v ? "yes" : "no");
    }
}

static void info_real(info_out *o, const char *label, const char *unit, int present, double v) {
    char key[64];
    info_key(label, unit, key, sizeof key);
    if (o->json) {
        cJSON_AddItemToObject(o->json, key, present ? cJSON_CreateNumber(v) : cJSON_CreateNull());
    } else if (present) {
        printf("%-18s %.3g%s%s\n", label, v, unit ? " " : "", unit ? unit : "");
    }
}

static void info_list(info_out *o, const char *label, int n, const char *const *items) {
    char key[64];
    info_key(label, NULL, key, sizeof key);
    if (o->json) {
        cJSON *a = cJSON_AddArrayToObject(o->json, key);
        for (int i = 0; i < n; i++) {
            cJSON_AddItemToArray(a, cJSON_CreateString(items[i]));
        }
        return;
    }
    printf("%-18s", label);
    for (int i = 0; i < n; i++) {
        printf("%s%s", i ? ", " : " ", items[i]);
    }
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
    if (tether_session_alloc(s, &shape, 1, TETHER_UINT8, TETHER_SCOPE_GLOBAL, "", &h, &nbytes)) {
        return -1;
    }
    uint8_t out[N], back[N];
    uint32_t x = 0x9e3779b9u;
    int rc = 0;
    for (int i = 0; i < probes && !rc; i++) {
        for (int k = 0; k < N; k++) { /* every byte value, the framing's FLAG and ESC too */
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            out[k] = (uint8_t)x;
        }
        rc = tether_session_copy_to(s, h, 0, out, N);
        if (!rc) {
            rc = tether_session_copy_from(s, h, 0, back, N);
        }
        if (!rc && memcmp(out, back, N) != 0) {
            (*errors)++;
        }
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
    if (!l->serial) {
        return;
    }
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
         w = strtok_r(NULL, " ", &save)) {
        words[nw++] = w;
    }
    if (nw) {
        info_list(&o, "cpu features", nw, words);
    } else {
        info_str(&o, "cpu features", NULL);
    }
    info_str(&o, "endianness", d->little_endian ? "little" : "big");
    info_num(&o, "pointer bits", NULL, 1, d->pointer_bits);
    info_num(&o, "max frame", "bytes", 1, d->max_frame);
    info_num(&o, "window", NULL, 1, d->window);
    info_str(&o, "clock", d->clock_hz ? "device timer" : "nanoseconds");
    info_num(&o, "clock rate", "hz", d->clock_hz != 0, (double)d->clock_hz);
    const char *scopes[TETHER_SCOPE_COUNT], *pools[8];
    int ns = 0;
    for (int k = 0; k < TETHER_SCOPE_COUNT; k++) {
        if (d->scopes & (1u << k)) {
            scopes[ns++] = tether_scope_name((tether_scope)k);
        }
    }
    info_list(&o, "scopes", ns, scopes);
    for (uint32_t k = 0; k < d->num_pools && k < 8; k++) {
        pools[k] = d->pools[k];
    }
    info_list(&o, "pools", (int)(d->num_pools < 8 ? d->num_pools : 8), pools);
    char sizes[8][24];
    const char *size_items[8];
    for (uint32_t k = 0; k < d->num_pools && k < 8; k++) { /* same order as pools */
        if (d->pool_sizes[k]) {
            snprintf(sizes[k], sizeof sizes[k], "%llu", (unsigned long long)d->pool_sizes[k]);
        } else {
            snprintf(sizes[k], sizeof sizes[k], "unbounded");
        }
        size_items[k] = sizes[k];
    }
    info_list(&o, "pool bytes", (int)(d->num_pools < 8 ? d->num_pools : 8), size_items);
    info_bool(&o, "opencl", d->opencl);
    info_num(&o, "image max width", NULL, d->opencl, d->image_max_width);
    info_num(&o, "image max height", NULL, d->opencl, d->image_max_height);
    info_num(&o, "max work group size", NULL, d->opencl && d->cl_max_work_group_size,
             d->cl_max_work_group_size);
    info_num(&o, "work group multiple", NULL, d->opencl && d->cl_wg_multiple, d->cl_wg_multiple);
    info_num(&o, "local memory", "bytes", d->opencl && d->cl_local_mem_size,
             (double)d->cl_local_mem_size);
    info_num(&o, "compute units", NULL, d->opencl && d->cl_compute_units, d->cl_compute_units);
    if (d->opencl && d->cl_fp64) {
        info_bool(&o, "cl_khr_fp64", d->cl_fp64 > 0);
    }
    if (d->opencl && d->cl_fp16) {
        info_bool(&o, "cl_khr_fp16", d->cl_fp16 > 0);
    }
    info_num(&o, "ram", "bytes", d->ram_size != 0, (double)d->ram_size);
    info_num(&o, "array heap", "bytes", d->heap_size != 0, (double)d->heap_size);
    info_num(&o, "call stack", "bytes", d->stack_size != 0, (double)d->stack_size);
    snprintf(buf, sizeof buf, "0x%08llx", (unsigned long long)d->load_addr);
    info_str(&o, "load address", mcu ? buf : NULL);
    info_num(&o, "load size", "bytes", mcu, (double)d->load_size);
    snprintf(buf, sizeof buf, "0x%08x", (unsigned)d->exports_id);
    info_str(&o, "exports id", mcu ? buf : NULL);
    info_bool(&o, "auth required", d->auth_required);
    if (link) {
        print_link(&o, link, probes, data_errors);
    }
    if (o.json && json_file) {
        return tether_cli_write_json(json_file, o.json);
    }
    if (o.json) {
        char *txt = cJSON_Print(o.json);
        if (txt) {
            printf("%s\n", txt);
        }
        free(txt);
        cJSON_Delete(o.json);
    }
    return 0;
}

static int cmd_info(int argc, char **argv) {
    tether_cli_common c = {0};
    int probes = 32; /* link test round trips on a serial line */
    for (int i = 1; i < argc; i++) {
        if (tether_cli_is_help(argv[i])) {
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
            if (i + 1 < argc && argv[i + 1][0] != '-') { /* --json FILE, as every command takes */
                c.json_file = argv[++i];
            }
            continue;
        }
        if (!strcmp(argv[i], "--link-test")) {
            char *end = NULL;
            long n = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;
            if (!end || *end || n < 0 || n > 100000) {
                return fail(2, "--link-test wants a number of round trips (0..100000)");
            }
            probes = (int)n;
            i++;
            continue;
        }
        int r = tether_cli_common_opt(&c, argc, argv, &i);
        if (r < 0) {
            return 2;
        }
        if (r == 0) {
            return fail(2, "unknown argument '%s' (try --help)", argv[i]);
        }
    }
    if (c.json_file && tether_file_out_check(c.json_file)) { /* before the device is contacted */
        return fail(2, "--json: %s", tether_last_error());
    }
    tether_session *s;
    if (tether_cli_common_open(&c, &s)) {
        return 1;
    }
    tether_link_stats link;
    tether_session_link_stats(s, &link);
    int data_errors = 0;
    if (!link.serial) {
        probes = 0;
    }
    if (probes > 0 && link_probe(s, probes, &data_errors)) {
        fail(1, "link test: %s", tether_last_error());
        tether_session_close(s);
        return 1;
    }
    tether_session_link_stats(s, &link);
    if (c.json_file) { /* the text on stdout, the JSON into the file */
        print_info(tether_session_info(s), 0, NULL, &link, probes, data_errors);
    }
    int wrc = print_info(tether_session_info(s), c.json, c.json_file, &link, probes, data_errors);
    tether_session_close(s);
    return data_errors || wrc ? 1 : 0;
}

/* ---- upload ---- */

static const char *module_kind_name(uint32_t kind) {
    return kind == TETHER_MODULE_OPENCL_SOURCE ? "opencl_source"
           : kind == TETHER_MODULE_MCU_IMAGE   ? "mcu_image"
                                               : "shared_object";
}

static int cmd_upload(int argc, char **argv) {
    tether_cli_common c = {0};
    const char *file = NULL, *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (tether_cli_is_help(argv[i])) {
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
        int r = tether_cli_common_opt(&c, argc, argv, &i);
        if (r < 0) {
            return 2;
        }
        if (r) {
            continue;
        }
        if (!strcmp(argv[i], "--name") || !strcmp(argv[i], "--json")) {
            if (i + 1 >= argc || argv[i + 1][0] == '-') {
                return fail(2, "%s needs a value", argv[i]);
            }
            if (!strcmp(argv[i], "--name")) {
                name = argv[++i];
            } else {
                c.json_file = argv[++i];
            }
        } else if (argv[i][0] == '-') {
            return fail(2, "unknown option '%s' (try --help)", argv[i]);
        } else if (!file) {
            file = argv[i];
        } else {
            return fail(2, "unexpected argument '%s'", argv[i]);
        }
    }
    if (!file) {
        return fail(2, "no file given (try --help)");
    }
    if (c.json_file && tether_file_out_check(c.json_file)) {
        return fail(2, "--json: %s", tether_last_error());
    }
    if (!name) {
        name = tether_cli_base_name(file);
    }
    tether_session *s;
    if (tether_cli_common_open(&c, &s)) {
        return 1;
    }
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
            for (int i = 0; i < info.nnames; i++) {
                cJSON_AddItemToArray(names, cJSON_CreateString(info.names[i]));
            }
        } else {
            cJSON_AddNullToObject(o, "function_names");
        }
        cJSON_AddNumberToObject(o, "bytes", (double)info.bytes);
        char hex[65];
        for (int i = 0; i < 32; i++) {
            snprintf(hex + 2 * i, 3, "%02x", info.sha256[i]);
        }
        cJSON_AddStringToObject(o, "sha256", hex);
        cJSON_AddBoolToObject(o, "cached", tether_cli_uploads_cached() > 0);
        rc = tether_cli_write_json(c.json_file, o);
    }
    tether_session_close(s);
    return rc;
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
            "  quantize  static post-training int8 quantization of an ONNX model (QDQ)\n"
            "  tune      search a model's schedule knobs, measured on a device\n"
            "  profile   time, work, memory and stack of every node of a model on a device\n"
#endif
            "  pool      a shared device pool on Redis: add a device, status\n"
            "Devices: --device tcp://HOST:PORT | uart:///dev/ttyX?baud=N | tcp-serial://HOST:PORT\n"
            "         (a serial line over TCP, e.g. ser2net) | pool://HOST:PORT/KEY (a device of\n"
            "         KEY from the pool, queued first come first served) | local: (default;\n"
            "spawns tetherd, found through $TETHER_TETHERD or PATH).\n");
}

/* `run --profile` / `bench --profile`: `tether profile` with the same arguments (run: one run;
 * bench: --repeat runs, default 20), printing the per-node table (docs/profile.md). */
static int has_profile(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--profile")) {
            return 1;
        }
    }
    return 0;
}

static int run_profile(int argc, char **argv, int bench) {
    char **v = calloc((size_t)argc + 3, sizeof *v);
    if (!v) {
        return tether_cli_fail(1, "out of memory");
    }
    int n = 0;
    v[n++] = argv[1];
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--profile") != 0) {
            v[n++] = argv[i];
        }
    }
    if (!bench) {
        v[n++] = "--runs";
        v[n++] = "1";
    }
    tether_cli_set_command(bench ? "bench" : "run");
    int rc = tether_cli_cmd_profile(n, v);
    free(v);
    return rc;
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
#ifdef TETHER_HAVE_COMPILER
    int crc = tether_cli_custom_ops_take(cmd, &argc, argv); /* --custom-ops FILE, any command */
    if (crc) {
        return crc;
    }
#endif
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("tether %s\n", TETHER_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "info")) {
        return finish(cmd_info(argc - 1, argv + 1));
    }
    if (!strcmp(cmd, "upload")) {
        return finish(cmd_upload(argc - 1, argv + 1));
    }
    if ((!strcmp(cmd, "run") || !strcmp(cmd, "bench")) && has_profile(argc, argv)) {
        return finish(run_profile(argc, argv, !strcmp(cmd, "bench")));
    }
    if (!strcmp(cmd, "run")) {
        return finish(tether_cli_cmd_run(argc - 1, argv + 1, 0));
    }
    if (!strcmp(cmd, "bench")) {
        return finish(tether_cli_cmd_run(argc - 1, argv + 1, 1));
    }
    if (!strcmp(cmd, "pool")) {
        return finish(tether_cli_cmd_pool(argc - 1, argv + 1));
    }
#ifdef TETHER_HAVE_COMPILER
    if (!strcmp(cmd, "compile")) {
        for (int i = 2; i < argc; i++) { /* a device to upload to or to compile for */
            if (!strcmp(argv[i], "--upload") || !strcmp(argv[i], "--device")) {
                return finish(tether_cli_cmd_compile_upload(argc - 1, argv + 1));
            }
        }
        return finish(tether_cmd_compile(argc - 1, argv + 1));
    }
    if (!strcmp(cmd, "plan")) {
        return finish(tether_cmd_plan(argc - 1, argv + 1));
    }
    if (!strcmp(cmd, "tune")) {
        return finish(tether_cli_cmd_tune(argc - 1, argv + 1));
    }
    if (!strcmp(cmd, "import")) {
        return finish(tether_cmd_import(argc - 1, argv + 1));
    }
    if (!strcmp(cmd, "plan-buffers")) {
        return finish(tether_cmd_plan_buffers(argc - 1, argv + 1));
    }
    if (!strcmp(cmd, "ab")) {
        return finish(tether_cli_cmd_ab(argc - 1, argv + 1));
    }
#endif
    if (!strcmp(cmd, "quantize")) {
#ifdef TETHER_HAVE_ONNX
        int qrc = tether_cli_cmd_quantize(argc - 1, argv + 1);
        return finish(qrc == -1 ? 0 : qrc);
#else
        return tether_cli_fail(2, "quantize needs the ONNX front end, which this build lacks");
#endif
    }
    if (!strcmp(cmd, "profile")) {
        return finish(tether_cli_cmd_profile(argc - 1, argv + 1));
    }
    tether_cli_set_command("");
    fprintf(stderr, "tether: unknown command '%s' (try tether --help)\n", cmd);
    return 2;
}
