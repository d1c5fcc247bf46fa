/*
 * What every file of the `tether` CLI shares (cli.h): the command name in messages and
 * tether_cli_fail, opening a session like every device command (token file, --wait, the progress
 * bar, device LOG lines, the local: tetherd), the one-line array summary and the --json helpers.
 * The other files of host/cli call into this one, never the other way round.
 *
 * What must stay true: every failure is one line "tether <command>: <reason>" on stderr; the
 * progress bar is drawn only on a terminal and only for transfers that take over a second;
 * every --json file goes through tether_file_write.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "tether/crt.h"
#include "tether/file.h"

#define fail tether_cli_fail

static const char *g_cmd = "tether";

void tether_cli_set_command(const char *cmd) {
    g_cmd = cmd;
}

const char *tether_cli_command(void) {
    return g_cmd;
}

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

/* ---- device LOG lines ---- */

void tether_cli_device_log(void *ctx, int level, const char *text) {
    const char *cmd = ctx ? (const char *)ctx : "";
    static const char *const names[] = {"error", "warning", "info", "debug"};
    const char *v = getenv("TETHER_VERBOSE");
    int verbose = v && *v && strcmp(v, "0") != 0;
    if (level <= 1 || verbose)
        fprintf(stderr, "tether %s: device %s: %s\n", cmd,
                names[level >= 0 && level <= 3 ? level : 3], text);
}

int tether_cli_is_mcu(const tether_device_info *d) {
    return d && d->load_size > 0;
}

/* ---- sessions ---- */

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

/* --wait: said once when the wait starts, and again when another process takes the device first */
static void on_device_wait(void *ctx, const char *device, int holder_pid) {
    (void)ctx;
    if (holder_pid > 0)
        fprintf(stderr, "tether %s: %s is held by pid %d; waiting (--wait)\n", g_cmd, device,
                holder_pid);
    else
        fprintf(stderr, "tether %s: %s is held by another process; waiting (--wait)\n", g_cmd,
                device);
}

int tether_cli_open(const tether_cli_device *dev, tether_session **s) {
    static progress prog;
    static char token[4096];
    size_t token_len = 0;
    tether_session_options o = {0};
    if (dev->wait) {
        o.wait_ms = -1; /* until the holder is done; Ctrl-C ends the wait */
        o.on_wait = on_device_wait;
    }
    o.tetherd = find_tetherd();
    o.timeout_ms = dev->timeout_ms;
    o.progress = on_progress;
    o.progress_ctx = &prog;
    o.log = tether_cli_device_log; /* device LOG lines: warnings always, info when verbose */
    o.log_ctx = (void *)g_cmd;
    static const char *const quiet[] = {"--quiet", NULL};
    if (!getenv("TETHER_VERBOSE"))
        o.tetherd_args = quiet; /* local: keep the spawned tetherd's log lines out of the output */
    const char *tf = dev->token_file ? dev->token_file : getenv("TETHER_TOKEN_FILE");
    if (tf) {
        uint8_t *tok;
        size_t tlen;
        if (tether_file_read(tf, sizeof token, &tok, &tlen))
            return fail(1, "token file: %s", tether_last_error());
        memcpy(token, tok, tlen);
        token_len = tlen;
        free(tok);
        while (token_len && (token[token_len - 1] == '\n' || token[token_len - 1] == '\r' ||
                             token[token_len - 1] == ' '))
            token_len--;
        o.token = token;
        o.token_len = token_len;
    }
    const char *url = dev->url ? dev->url : getenv("TETHER_DEVICE");
    if (tether_session_open(s, url ? url : "local:", &o))
        return fail(1, "%s", tether_last_error());
    return 0;
}

/* ---- arrays and --json ---- */

/* min/max/mean of an array's elements (count 0: all three 0). */
static size_t array_stats(const tether_npy *n, double *mn, double *mx, double *mean) {
    size_t count = n->nbytes / tether_dtype_bytes(n->dtype);
    double lo = INFINITY, hi = -INFINITY, sum = 0;
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
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        sum += x;
    }
    *mn = count ? lo : 0;
    *mx = count ? hi : 0;
    *mean = count ? sum / (double)count : 0;
    return count;
}

void tether_cli_summary(const char *name, const tether_npy *n) {
    char dt[TETHER_DTYPE_NAME_MAX];
    tether_dtype_name(n->dtype, dt, sizeof dt);
    printf("%s: %s [", name, dt);
    for (int i = 0; i < n->ndim; i++)
        printf("%s%lld", i ? ", " : "", (long long)n->shape[i]);
    printf("]");
    double mn, mx, mean;
    size_t count = array_stats(n, &mn, &mx, &mean);
    if (count == 0) {
        printf("\n");
        return;
    }
    printf(" min %g max %g mean %g", mn, mx, mean);
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

/* ---- JSON outputs ---- */

const char *tether_cli_device_url(const char *url) {
    const char *env = getenv("TETHER_DEVICE");
    return url && *url ? url : env && *env ? env : "local:";
}

cJSON *tether_cli_device_json(const char *url, const tether_device_info *d) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "url", tether_cli_device_url(url));
    cJSON_AddStringToObject(o, "triple", d->triple);
    cJSON_AddStringToObject(o, "arch", d->arch);
    if (d->board[0])
        cJSON_AddStringToObject(o, "board", d->board);
    else
        cJSON_AddNullToObject(o, "board");
    if (d->clock_hz)
        cJSON_AddNumberToObject(o, "clock_rate_hz", (double)d->clock_hz);
    else
        cJSON_AddNullToObject(o, "clock_rate_hz");
    return o;
}

cJSON *tether_cli_array_json(const char *name, const char *file, const tether_npy *n) {
    cJSON *o = cJSON_CreateObject();
    char dt[TETHER_DTYPE_NAME_MAX];
    tether_dtype_name(n->dtype, dt, sizeof dt);
    cJSON_AddStringToObject(o, "name", name);
    if (file)
        cJSON_AddStringToObject(o, "file", file);
    else
        cJSON_AddNullToObject(o, "file");
    cJSON_AddStringToObject(o, "dtype", dt);
    cJSON *sh = cJSON_AddArrayToObject(o, "shape");
    for (int i = 0; i < n->ndim; i++)
        cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)n->shape[i]));
    double mn, mx, mean;
    size_t count = array_stats(n, &mn, &mx, &mean);
    cJSON_AddNumberToObject(o, "elements", (double)count);
    /* NaN (and an empty array's undefined figures) are null: JSON has no NaN */
    const char *keys[3] = {"min", "max", "mean"};
    double v[3] = {mn, mx, mean};
    for (int k = 0; k < 3; k++)
        if (count && isfinite(v[k]))
            cJSON_AddNumberToObject(o, keys[k], v[k]);
        else
            cJSON_AddNullToObject(o, keys[k]);
    return o;
}

void tether_cli_time_json(cJSON *o, const tether_time_stats *ts) {
    cJSON_AddNumberToObject(o, "number", ts->number);
    cJSON_AddNumberToObject(o, "repeat", ts->repeat);
    cJSON *r = cJSON_AddArrayToObject(o, "repeats_us");
    for (uint32_t i = 0; i < ts->repeat && i < 32; i++)
        cJSON_AddItemToArray(r, cJSON_CreateNumber(ts->seconds[i] * 1e6));
    cJSON_AddNumberToObject(o, "median_us", ts->median * 1e6);
    cJSON_AddNumberToObject(o, "mean_us", ts->mean * 1e6);
    cJSON_AddNumberToObject(o, "min_us", ts->min * 1e6);
    cJSON_AddNumberToObject(o, "max_us", ts->max * 1e6);
    cJSON_AddBoolToObject(o, "zero_timer", ts->zero_timer);
}

int tether_cli_write_json(const char *path, cJSON *root) {
    char *txt = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!txt)
        return fail(1, "out of memory");
    size_t len = strlen(txt);
    txt[len] = '\n'; /* cJSON_Print's buffer ends with the NUL: a newline in its place */
    int wrc = tether_file_write(path, txt, len + 1);
    free(txt);
    if (wrc)
        return fail(1, "--json: %s", tether_last_error());
    return 0;
}
