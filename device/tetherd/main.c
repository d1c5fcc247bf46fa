/*
 * tetherd: the POSIX device server. Listens on TCP (libuv), a UART, or its own stdin/stdout, and
 * serves each host session in a forked child process (see session.h). This file: the options,
 * the start-up checks and the choice of mode; the rest of the daemon is described in daemon.h
 * (children.c the session processes, watch.c their deadlines, serve_tcp.c and serve_serial.c the
 * modes), one session in session_internal.h.
 *
 * What must stay true:
 *  - a bad option, a missing or unwritable --work-dir, an unreadable or empty token file or an
 *    explicit --upload-cache that cannot be made ends the daemon with status 2 and a message
 *    naming it, before any socket, session process or directory is made;
 *  - at start the session directories of daemons that are gone are removed (children.c), never
 *    those of a live process;
 *  - every option is documented in usage() and docs/tetherd.md.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#ifdef TETHERD_HAVE_OPENCL
#include "opencl.h"
#endif
#include "tether/crt.h"
#include "tether/file.h"

tetherd_config tether__cfg;
const char *tether__work_base;
unsigned tether__max_sessions = 64;

static void usage(FILE *f) {
    fprintf(f, "usage: tetherd [--tcp HOST:PORT | --uart PATH [--baud N] | --stdio] [options]\n"
               "  --tcp HOST:PORT        listen on TCP (default 127.0.0.1:9090; port 0 = any)\n"
               "  --uart PATH            serve sessions on a serial device (UART framing)\n"
               "  --baud N               UART baud rate (default 115200)\n"
               "  --stdio                serve one session on stdin/stdout (used by local:)\n"
               "  --token-file FILE      shared token for HMAC challenge-response auth\n"
               "  --insecure             allow a non-loopback bind without a token (warns)\n"
               "  --port-file FILE       write the bound TCP port to FILE\n"
               "  --max-upload BYTES     per-upload limit (default 64 MiB)\n"
               "  --max-alloc BYTES      per-session allocation limit (default 1 GiB)\n"
               "  --pool NAME[:SIZE]     a named memory pool listed in HELLO (repeatable; SIZE\n"
               "                         bytes with K/M/G bounds what a session holds in it);\n"
               "                         ALLOC in other pools is refused (default: one pool\n"
               "                         \"dram\")\n"
               "  --max-sessions N       concurrent sessions (default 64)\n"
               "  --call-timeout-ms MS   CALL/TIME limit, 0 = none (default 60000); the\n"
               "                         daemon kills a call that outlives it\n"
               "  --hello-timeout-ms MS  a TCP client must send HELLO (and AUTH) within MS of\n"
               "                         connecting (default 10000, 0 = no limit)\n"
               "  --idle-timeout-ms MS   a TCP session that sends no request for MS ends\n"
               "                         (default 600000, 0 = no limit)\n"
               "  --stack-size BYTES     dedicated call stack (default 256 KiB)\n"
               "  --work-dir DIR         where session directories are made (default $TMPDIR)\n"
               "  --upload-cache DIR|off uploads kept by SHA-256 across sessions, so a repeated\n"
               "                         upload sends no bytes (default $TETHER_UPLOAD_CACHE,\n"
               "                         else $XDG_CACHE_HOME or ~/.cache, /tether/uploads)\n"
               "  --upload-cache-size BYTES  its limit, oldest-used out first (default 512M)\n"
               "  --no-opencl            do not offer the OpenCL layer (texture scopes, kernels)\n"
               "  --quiet | --verbose    less / more logging on stderr\n"
               "  --version              print the version and exit\n");
}

int tether__parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') {
        return -1;
    }
    *out = v;
    return 0;
}

/* Bytes with an optional K/M/G suffix (powers of 1024); 0 or -1. */
static int parse_size(const char *text, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    uint64_t mul = *end == 'K' ? 1024u : *end == 'M' ? 1024u * 1024u : *end == 'G' ? 1u << 30 : 1;
    if (mul != 1) {
        end++;
    }
    if (errno || end == text || *end || text[0] == '-' || v > UINT64_MAX / mul) {
        return -1;
    }
    *out = v * mul;
    return 0;
}

/* --pool NAME[:SIZE]: SIZE in bytes with an optional K/M/G suffix (powers of 1024). */
static int add_pool(const char *spec) {
    if (tether__cfg.npools >= (int)TETHER_RPC_MAX_POOLS) {
        fprintf(stderr, "tetherd: at most %d --pool options\n", TETHER_RPC_MAX_POOLS);
        return -1;
    }
    char name[TETHER_POOL_NAME_MAX];
    const char *colon = strchr(spec, ':');
    size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
    if (n >= sizeof name) {
        fprintf(stderr, "tetherd: --pool '%s': name longer than %d\n", spec,
                TETHER_POOL_NAME_MAX - 1);
        return -1;
    }
    memcpy(name, spec, n);
    name[n] = 0;
    if (tether_pool_name_check(name)) {
        fprintf(stderr, "tetherd: --pool '%s': %s\n", spec, tether_last_error());
        return -1;
    }
    uint64_t cap = 0;
    if (colon && (parse_size(colon + 1, &cap) || cap == 0)) {
        fprintf(stderr, "tetherd: --pool '%s': SIZE is bytes > 0 with an optional K, M or G\n",
                spec);
        return -1;
    }
    for (int i = 0; i < tether__cfg.npools; i++) {
        if (strcmp(tether__cfg.pool_name[i], name) == 0) {
            fprintf(stderr, "tetherd: --pool '%s' is given twice\n", name);
            return -1;
        }
    }
    snprintf(tether__cfg.pool_name[tether__cfg.npools], sizeof tether__cfg.pool_name[0], "%s",
             name);
    tether__cfg.pool_capacity[tether__cfg.npools++] = cap;
    return 0;
}

static int read_token(const char *path, char **tok, size_t *len) {
    uint8_t *data;
    size_t n;
    if (tether_file_read(path, 4096, &data, &n)) {
        fprintf(stderr, "tetherd: token file: %s\n", tether_last_error());
        return -1;
    }
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & 077)) {
        fprintf(stderr, "tetherd: warning: token file %s is readable by other users\n", path);
    }
    char *buf = (char *)data;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) {
        n--;
    }
    if (n == 0) {
        fprintf(stderr, "tetherd: token file %s is empty\n", path);
        free(data);
        return -1;
    }
    *tok = buf; /* the caller frees it */
    *len = n;
    return 0;
}

/* The upload cache: --upload-cache, else $TETHER_UPLOAD_CACHE, else the user's cache directory
 * ("off" = none). An explicit directory that cannot be made is an error (2); the default one
 * only a warning (the cache is then off). */
static int open_upload_cache(const char *arg) {
    const char *env = getenv("TETHER_UPLOAD_CACHE");
    const char *dir = arg ? arg : (env && env[0] ? env : NULL);
    static char def[1024];
    if (!dir) {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && xdg[0] == '/') {
            snprintf(def, sizeof def, "%s/tether/uploads", xdg);
        } else if (home && home[0] == '/') {
            snprintf(def, sizeof def, "%s/.cache/tether/uploads", home);
        } else {
            return 0; /* nowhere to keep it */
        }
        dir = def;
    }
    if (!strcmp(dir, "off")) {
        return 0;
    }
    char why[1200];
    tether__cfg.cache_dir = tetherd_cache_open(dir, why, sizeof why);
    if (tether__cfg.cache_dir) {
        return 0;
    }
    if (dir != def) {
        fprintf(stderr, "tetherd: upload cache %s\n", why);
        return -1;
    }
    tetherd_log(&tether__cfg, 0, NULL, "upload cache off: %s", why);
    return 0;
}

int main(int argc, char **argv) {
    const char *tcp = NULL, *uart = NULL, *token_file = NULL, *port_file = NULL;
    int stdio_mode = 0, insecure = 0, no_opencl = 0;
    const char *cache_arg = NULL; /* --upload-cache */
    tether__cfg.cache_max = 512ull << 20;
    uint64_t baud = 115200;
    tether__cfg.max_upload = 64ull << 20;
    tether__cfg.max_alloc = 1ull << 30;
    tether__cfg.call_timeout_ms = 60000;
    tether__cfg.hello_timeout_ms = 10000;
    tether__cfg.idle_timeout_ms = 600000;
    tether__cfg.stack_size = 256u << 10;
    tether__work_base = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n;
#define NEED_VALUE()                                                                               \
    do {                                                                                           \
        if (!v) {                                                                                  \
            fprintf(stderr, "tetherd: %s needs a value\n", a);                                     \
            return 2;                                                                              \
        }                                                                                          \
        i++;                                                                                       \
    } while (0)
#define NEED_NUMBER(dst, lo, hi)                                                                   \
    do {                                                                                           \
        NEED_VALUE();                                                                              \
        if (tether__parse_u64(v, &n) || n + 1 < (uint64_t)(lo) + 1 || n > (hi)) {                  \
            fprintf(stderr, "tetherd: %s: '%s' is not a number in %llu..%llu\n", a, v,             \
                    (unsigned long long)(lo), (unsigned long long)(hi));                           \
            return 2;                                                                              \
        }                                                                                          \
        dst = n;                                                                                   \
    } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("tetherd %s (protocol %u, OpenCL layer %s)\n", TETHER_VERSION,
                   (unsigned)TETHER_RPC_VERSION,
#ifdef TETHERD_HAVE_OPENCL
                   "built"
#else
                   "not built"
#endif
            );
            return 0;
        } else if (!strcmp(a, "--tcp")) {
            NEED_VALUE();
            tcp = v;
        } else if (!strcmp(a, "--uart")) {
            NEED_VALUE();
            uart = v;
        } else if (!strcmp(a, "--baud")) {
            NEED_NUMBER(baud, 1, 20000000);
        } else if (!strcmp(a, "--stdio")) {
            stdio_mode = 1;
        } else if (!strcmp(a, "--token-file")) {
            NEED_VALUE();
            token_file = v;
        } else if (!strcmp(a, "--insecure")) {
            insecure = 1;
        } else if (!strcmp(a, "--port-file")) {
            NEED_VALUE();
            port_file = v;
        } else if (!strcmp(a, "--max-upload")) {
            NEED_NUMBER(tether__cfg.max_upload, 1, TETHER_RPC_MAX_UPLOAD);
        } else if (!strcmp(a, "--pool")) {
            NEED_VALUE();
            if (add_pool(v)) {
                return 2;
            }
        } else if (!strcmp(a, "--max-alloc")) {
            NEED_NUMBER(tether__cfg.max_alloc, 1, UINT64_MAX);
        } else if (!strcmp(a, "--max-sessions")) {
            NEED_NUMBER(tether__max_sessions, 1, TETHERD_MAX_CHILDREN);
        } else if (!strcmp(a, "--call-timeout-ms")) {
            NEED_NUMBER(tether__cfg.call_timeout_ms, 0, 86400000);
        } else if (!strcmp(a, "--hello-timeout-ms")) {
            NEED_NUMBER(tether__cfg.hello_timeout_ms, 0, 86400000);
        } else if (!strcmp(a, "--idle-timeout-ms")) {
            NEED_NUMBER(tether__cfg.idle_timeout_ms, 0, 86400000u * 7);
        } else if (!strcmp(a, "--stack-size")) {
            NEED_NUMBER(tether__cfg.stack_size, 64 * 1024, 1ull << 30);
        } else if (!strcmp(a, "--work-dir")) {
            NEED_VALUE();
            tether__work_base = v;
        } else if (!strcmp(a, "--upload-cache")) {
            NEED_VALUE();
            cache_arg = v;
        } else if (!strcmp(a, "--upload-cache-size")) {
            NEED_VALUE();
            if (parse_size(v, &tether__cfg.cache_max) || tether__cfg.cache_max == 0) {
                fprintf(stderr, "tetherd: --upload-cache-size '%s': want bytes, K/M/G allowed\n",
                        v);
                return 2;
            }
        } else if (!strcmp(a, "--no-opencl")) {
            no_opencl = 1;
        } else if (!strcmp(a, "--quiet")) {
            tether__cfg.verbose = -1;
        } else if (!strcmp(a, "--verbose")) {
            tether__cfg.verbose = 1;
        } else {
            fprintf(stderr, "tetherd: unknown option '%s' (try --help)\n", a);
            return 2;
        }
    }
    tether__cfg.stack_size = (tether__cfg.stack_size + 15) / 16 * 16;
    if ((tcp != NULL) + (uart != NULL) + stdio_mode > 1) {
        fprintf(stderr, "tetherd: give only one of --tcp, --uart, --stdio\n");
        return 2;
    }
    if (token_file) {
        char *tok;
        if (read_token(token_file, &tok, &tether__cfg.token_len)) {
            return 2;
        }
        tether__cfg.token = tok;
    }
    /* every session makes its directory here: a missing or read-only base would fail each
     * session after the connection, so it is refused at start-up */
    struct stat wst;
    const char *why = NULL;
    if (stat(tether__work_base, &wst) != 0) {
        why = strerror(errno);
    } else if (!S_ISDIR(wst.st_mode)) {
        why = "not a directory";
    } else if (access(tether__work_base, W_OK | X_OK) != 0) {
        why = "not writable";
    }
    if (why) {
        fprintf(stderr, "tetherd: --work-dir %s: %s\n", tether__work_base, why);
        return 2;
    }
    int swept = tether__sweep_stale_session_dirs();
    if (swept) {
        tetherd_log(&tether__cfg, 0, NULL,
                    "removed %d session director%s left in %s by a tetherd that is gone", swept,
                    swept == 1 ? "y" : "ies", tether__work_base);
    }
    if (open_upload_cache(cache_arg)) {
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (tether__children_init()) {
        return 1;
    }
    (void)no_opencl;
#ifdef TETHERD_HAVE_OPENCL
    tetherd_cl_limits lim;
    if (!no_opencl && tetherd_cl_probe(&lim) == 0) {
        tether__cfg.cl_max_width = lim.max_width;
        tether__cfg.cl_max_height = lim.max_height;
        tether__cfg.cl_max_work_group_size = lim.max_work_group_size;
        tether__cfg.cl_wg_multiple = lim.wg_multiple;
        tether__cfg.cl_local_mem_size = lim.local_mem_size;
        tether__cfg.cl_compute_units = lim.compute_units;
        tether__cfg.cl_features = lim.features;
        tetherd_log(&tether__cfg, 1, NULL,
                    "OpenCL images up to %u x %u; work-groups up to %u (multiple %u), %llu bytes "
                    "of local memory, %u compute units; cl_khr_fp64 %s, cl_khr_fp16 %s",
                    lim.max_width, lim.max_height, lim.max_work_group_size, lim.wg_multiple,
                    (unsigned long long)lim.local_mem_size, lim.compute_units,
                    lim.features & TETHER_RPC_CL_FP64 ? "yes" : "no",
                    lim.features & TETHER_RPC_CL_FP16 ? "yes" : "no");
    }
#endif
    if (stdio_mode) {
        return tether__serve_stdio();
    }
    if (uart) {
        return tether__serve_uart(uart, (uint32_t)baud);
    }
    return tether__serve_tcp(tcp ? tcp : "127.0.0.1:9090", port_file, insecure);
}
