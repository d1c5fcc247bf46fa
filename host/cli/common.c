/*
 * What every file of the `tether` CLI shares (cli.h): the command name in messages and
 * tether_cli_fail, the options of every device command (--device, --token-file, --timeout-ms,
 * --wait, --firmware) and opening a session with them (token file, the progress bar, device LOG
 * lines, the local: tetherd found beside the CLI or in its build tree), the files a command wrote
 * ("wrote A, B"), the --in/--out arguments (NAME=FILE, .npz archives, ordered by the model's
 * names) and writing the outputs, the one-line array summary, MCU device detection and the
 * --json helpers. The other files of host/cli call into this one, never the other way round.
 *
 * What must stay true: every failure is one line "tether <command>: <reason>" on stderr;
 * transfers report progress through progress.c; every --json file goes through
 * tether_file_write.
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
#include "tether/compare.h"
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

/* ---- transfers: the session's progress callback (progress.c draws) ---- */

static void on_progress(void *ctx, const char *what, uint64_t done, uint64_t total) {
    tether_cli_progress *p = ctx;
    if (!p->active || strncmp(p->what, what, sizeof p->what - 1) != 0 || p->total != total ||
        done < p->done) {
        tether_cli_progress_start(p, what, total, NULL);
    }
    tether_cli_progress_update(p, done);
}

/* ---- device LOG lines ---- */

void tether_cli_device_log(void *ctx, int level, const char *text) {
    const char *cmd = ctx ? (const char *)ctx : "";
    static const char *const names[] = {"error", "warning", "info", "debug"};
    const char *v = getenv("TETHER_VERBOSE");
    int verbose = v && *v && strcmp(v, "0") != 0;
    if (level <= 1 || verbose) {
        fprintf(stderr, "tether %s: device %s: %s\n", cmd,
                names[level >= 0 && level <= 3 ? level : 3], text);
    }
}

int tether_cli_is_mcu(const tether_device_info *d) {
    return d && d->load_size > 0;
}

/* ---- the options of every device command ---- */

int tether_cli_common_opt(tether_cli_common *c, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(a, "--wait")) {
        c->wait = 1;
        return 1;
    }
    if (!strcmp(a, "--device") || !strcmp(a, "--token-file") || !strcmp(a, "--timeout-ms") ||
        !strcmp(a, "--firmware")) {
        if (!v) {
            return fail(-2, "%s needs a value", a);
        }
        (*i)++;
        if (!strcmp(a, "--device")) {
            if (tether_device_url_check(v)) {
                return fail(-2, "--device: %s", tether_last_error());
            }
            c->device = v;
        } else if (!strcmp(a, "--firmware")) {
            c->firmware = v;
        } else if (!strcmp(a, "--token-file")) {
            c->token_file = v;
        } else {
            char *end;
            long t = strtol(v, &end, 10);
            if (*end || t < 1 || t > 86400000) {
                return fail(-2, "--timeout-ms: '%s' is not a positive number", v);
            }
            c->timeout_ms = (int)t;
        }
        return 1;
    }
    return 0;
}

int tether_cli_common_open(const tether_cli_common *c, tether_session **s) {
    tether_cli_device dev = {c->device, c->token_file, c->timeout_ms, c->wait};
    return tether_cli_open(&dev, s);
}

int tether_cli_is_help(const char *a) {
    return !strcmp(a, "--help") || !strcmp(a, "-h");
}

const char *tether_cli_base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* ---- sessions ---- */

/* local: the tetherd to spawn: $TETHER_TETHERD, else one installed beside this program, else one
 * in this program's build tree, else "tetherd" from PATH. */
static const char *find_tetherd(void) {
    static char path[4096];
    const char *env = getenv("TETHER_TETHERD");
    if (env && *env) {
        return env;
    }
    char exe[3000];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(path, sizeof path, "%s/tetherd", exe);
            if (access(path, X_OK) == 0) {
                return path;
            }
            snprintf(path, sizeof path, "%s/../../device/tetherd/tetherd", exe);
            if (access(path, X_OK) == 0) {
                return path;
            }
        }
    }
    return "tetherd";
}

/* --wait: said once when the wait starts, and again when another process takes the device first */
static void on_device_wait(void *ctx, const char *device, int holder_pid) {
    (void)ctx;
    if (holder_pid > 0) {
        fprintf(stderr, "tether %s: %s is held by pid %d; waiting (--wait)\n", g_cmd, device,
                holder_pid);
    } else {
        fprintf(stderr, "tether %s: %s is held by another process; waiting (--wait)\n", g_cmd,
                device);
    }
}

/* tether_cli_open; silent: no failure printed (tether_cli_probe's caller says it). */
static int open_device(const tether_cli_device *dev, tether_session **s, int silent) {
    static tether_cli_progress prog;
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
    if (!getenv("TETHER_VERBOSE")) {
        o.tetherd_args = quiet; /* local: keep the spawned tetherd's log lines out of the output */
    }
    const char *tf = dev->token_file ? dev->token_file : getenv("TETHER_TOKEN_FILE");
    if (tf) {
        uint8_t *tok;
        size_t tlen;
        if (tether_file_read(tf, sizeof token, &tok, &tlen)) {
            return silent ? 1 : fail(1, "token file: %s", tether_last_error());
        }
        memcpy(token, tok, tlen);
        token_len = tlen;
        free(tok);
        while (token_len && (token[token_len - 1] == '\n' || token[token_len - 1] == '\r' ||
                             token[token_len - 1] == ' ')) {
            token_len--;
        }
        o.token = token;
        o.token_len = token_len;
    }
    const char *url = dev->url ? dev->url : getenv("TETHER_DEVICE");
    if (tether_session_open(s, url ? url : "local:", &o)) {
        return silent ? 1 : fail(1, "%s", tether_last_error());
    }
    return 0;
}

int tether_cli_open(const tether_cli_device *dev, tether_session **s) {
    return open_device(dev, s, 0);
}

int tether_cli_probe(const tether_cli_device *dev) {
    tether_session *s;
    if (open_device(dev, &s, 1)) {
        return tether_last_status() ? tether_last_status() : TETHER_ERR_IO;
    }
    tether_session_close(s);
    return 0;
}

/* ---- arrays and --json ---- */

/* min/max/mean of an array's elements (count 0: all three 0). */
static size_t array_stats(const tether_npy *n, double *mn, double *mx, double *mean) {
    size_t count = n->nbytes / tether_dtype_bytes(n->dtype);
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    for (size_t i = 0; i < count; i++) {
        double x = tether_elem_double(n->dtype, n->data, i);
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        sum += x;
    }
    *mn = count ? lo : 0;
    *mx = count ? hi : 0;
    *mean = count ? sum / (double)count : 0;
    return count;
}

/* The files this command wrote, said once at its end (tether_cli_say_written). */
static struct {
    char **path;
    int n, cap;
} g_written;

void tether_cli_wrote(const char *path) {
    if (!path || !strncmp(path, "/dev/", 5)) {
        return;
    }
    for (int i = 0; i < g_written.n; i++) {
        if (!strcmp(g_written.path[i], path)) {
            return;
        }
    }
    if (g_written.n == g_written.cap) {
        int nc = g_written.cap ? 2 * g_written.cap : 16;
        char **np = realloc(g_written.path, sizeof *np * (size_t)nc);
        if (!np) {
            return;
        }
        g_written.path = np;
        g_written.cap = nc;
    }
    if ((g_written.path[g_written.n] = strdup(path)) != NULL) {
        g_written.n++;
    }
}

void tether_cli_say_written(void) {
    if (g_written.n) {
        printf("wrote ");
        for (int i = 0; i < g_written.n; i++) {
            printf("%s%s", i ? ", " : "", tether_cli_tempdir_shown(g_written.path[i]));
        }
        printf("\n");
        fflush(stdout);
    }
    for (int i = 0; i < g_written.n; i++) {
        free(g_written.path[i]);
    }
    free(g_written.path);
    memset(&g_written, 0, sizeof g_written);
}

static int is_npz(const char *path) {
    size_t l = strlen(path);
    return l > 4 && strcmp(path + l - 4, ".npz") == 0;
}

static int is_file(const char *path) {
    return access(path, F_OK) == 0;
}

int tether_cli_array_parse(const char *arg, int is_out, tether_cli_array *list, int *n, int max) {
    const char *opt = is_out ? "--out" : "--in";
    const char *eq = strchr(arg, '=');
    const char *path = arg;
    char name[128] = "";
    /* NAME=FILE, split at the first '=' (a name may hold '/' and ':', as ONNX names do), unless
     * the whole argument is an existing file or an explicit path ("./a=b.npy", "/x/a=b.npy") */
    if (eq && !is_file(arg) && arg[0] != '/' && strncmp(arg, "./", 2) != 0) {
        if (eq == arg || (size_t)(eq - arg) >= sizeof name || !eq[1]) {
            return tether_cli_fail(2, "%s '%s': want FILE or NAME=FILE (a name of 1 to %zu bytes)",
                                   opt, arg, sizeof name - 1);
        }
        memcpy(name, arg, (size_t)(eq - arg));
        name[eq - arg] = 0;
        path = eq + 1;
    }
    int npz = is_npz(path);
    if (is_out && npz && name[0]) {
        return tether_cli_fail(2,
                               "%s '%s': an .npz output collects every output by name; give it "
                               "without NAME= (--out %s)",
                               opt, arg, path);
    }
    if (!is_out && npz && !name[0]) { /* every array of the archive, by name */
        char(*names)[TETHER_NPZ_NAME_MAX] = malloc(sizeof *names * TETHER_NPZ_MAX_ARRAYS);
        int k = 0;
        if (!names) {
            return tether_cli_fail(1, "out of memory");
        }
        if (tether_npz_list(path, names, TETHER_NPZ_MAX_ARRAYS, &k)) {
            free(names);
            /* an archive of too many arrays is as much a usage error as too many --in */
            return tether_cli_fail(tether_last_status() == TETHER_ERR_LIMIT ? 2 : 1, "%s",
                                   tether_last_error());
        }
        if (*n + k > max) {
            free(names);
            return tether_cli_fail(2, "more than %d inputs (%s holds %d)", max, path, k);
        }
        for (int i = 0; i < k; i++) {
            tether_cli_array *a = &list[(*n)++];
            memset(a, 0, sizeof *a);
            a->path = path;
            a->npz = 1;
            snprintf(a->name, sizeof a->name, "%s", names[i]);
            snprintf(a->member, sizeof a->member, "%s", names[i]);
            snprintf(a->label, sizeof a->label, "%s:%s", path, names[i]);
        }
        free(names);
        return 0;
    }
    if (*n >= max) {
        return tether_cli_fail(2, "more than %d %s", max, is_out ? "outputs" : "inputs");
    }
    tether_cli_array *a = &list[(*n)++];
    memset(a, 0, sizeof *a);
    a->path = path;
    a->npz = npz;
    snprintf(a->name, sizeof a->name, "%s", name);
    if (npz && !is_out) {
        /* NAME=ARCHIVE.npz: the archive's array NAME, or its only array */
        char(*names)[TETHER_NPZ_NAME_MAX] = malloc(sizeof *names * TETHER_NPZ_MAX_ARRAYS);
        int k = 0;
        if (!names) {
            return tether_cli_fail(1, "out of memory");
        }
        int lrc = tether_npz_list(path, names, TETHER_NPZ_MAX_ARRAYS, &k);
        int found = 0;
        for (int i = 0; !lrc && i < k; i++) {
            found |= !strcmp(names[i], name);
        }
        const char *member = found || lrc || k != 1 ? name : names[0];
        snprintf(a->member, sizeof a->member, "%s", member);
        snprintf(a->label, sizeof a->label, "%s:%s", path, member);
        free(names);
        if (lrc) {
            return tether_cli_fail(tether_last_status() == TETHER_ERR_LIMIT ? 2 : 1, "%s",
                                   tether_last_error());
        }
        if (!found && k != 1) {
            return tether_cli_fail(2,
                                   "%s '%s': %s has %d arrays and none is named '%s'; name the "
                                   "array as the input it is for",
                                   opt, arg, path, k, name);
        }
    } else {
        snprintf(a->label, sizeof a->label, "%s", path);
    }
    return 0;
}

int tether_cli_array_read(const tether_cli_array *a, tether_npy *out) {
    return tether_cli_array_read_expect(a, NULL, out);
}

int tether_cli_array_read_expect(const tether_cli_array *a, const tether_npy_expect *e,
                                 tether_npy *out) {
    if (a->npz) { /* checked from the member's header, before it is inflated */
        return tether_npz_read_member_expect(a->path, a->member, e, out);
    }
    int rc = tether_npy_read(a->path, out);
    if (!rc && e && e->ndim >= 0 &&
        (rc = tether_npy_check(out, a->label, e->what, e->name,
                               e->dtype.lanes ? e->dtype : out->dtype, e->ndim, e->shape))) {
        tether_npy_free(out);
    }
    return rc;
}

int tether_cli_array_named(const tether_cli_array *list, int n) {
    for (int i = 0; i < n; i++) {
        if (list[i].name[0]) {
            return 1;
        }
    }
    return 0;
}

const char *tether_cli_out_npz(const tether_cli_array *list, int n) {
    for (int i = 0; i < n; i++) {
        if (list[i].npz) {
            return list[i].path;
        }
    }
    return NULL;
}

int tether_cli_array_order(tether_cli_array *list, int *n, int nnames, const char *const *names,
                           const char *what) {
    const char *opt = strcmp(what, "output") ? "--in" : "--out";
    int named = 0;
    for (int i = 0; i < *n; i++) {
        named += list[i].name[0] != 0;
    }
    if (!named) {
        return 0;
    }
    if (named != *n) {
        return tether_cli_fail(2,
                               "%s: some arguments are named (NAME=FILE or an .npz) and some "
                               "are not; name them all or none",
                               opt);
    }
    if (!names) { /* before the model's names are known: only what needs none */
        for (int i = 0; i < *n; i++) {
            for (int k = 0; k < i; k++) {
                if (!strcmp(list[k].name, list[i].name)) {
                    return tether_cli_fail(2, "%s '%s' is given twice (%s and %s)", what,
                                           list[i].name, list[k].label, list[i].label);
                }
            }
        }
        return 0;
    }
    char have[600] = "";
    size_t hl = 0;
    for (int j = 0; j < nnames && hl + 4 < sizeof have; j++) {
        hl += (size_t)snprintf(have + hl, sizeof have - hl, "%s%s", j ? ", " : "", names[j]);
    }
    tether_cli_array *sorted = calloc((size_t)(nnames > 0 ? nnames : 1), sizeof *sorted);
    int rc = 0;
    if (!sorted) {
        rc = tether_cli_fail(1, "out of memory");
        goto out;
    }
    for (int i = 0; i < *n && !rc; i++) {
        int j = 0;
        while (j < nnames && strcmp(names[j], list[i].name)) {
            j++;
        }
        if (j == nnames) {
            rc = tether_cli_fail(2, "%s %s=%s: the model has no %s '%s' (its %ss: %s)", opt,
                                 list[i].name, list[i].label, what, list[i].name, what,
                                 nnames ? have : "none");
            break;
        }
        for (int k = 0; k < i; k++) {
            if (!strcmp(list[k].name, list[i].name)) {
                rc = tether_cli_fail(2, "%s '%s' is given twice (%s and %s)", what, list[i].name,
                                     list[k].label, list[i].label);
            }
        }
        sorted[j] = list[i];
    }
    for (int j = 0; j < nnames && !rc; j++) {
        int given = 0;
        for (int i = 0; i < *n; i++) {
            given |= !strcmp(list[i].name, names[j]);
        }
        if (!given && strcmp(what, "output") != 0) {
            rc = tether_cli_fail(2, "%s '%s' has no %s (give %s %s=FILE)", what, names[j], opt, opt,
                                 names[j]);
        }
    }
    if (!rc) { /* an output nobody named keeps path NULL: it is not written */
        for (int j = 0; j < nnames; j++) {
            list[j] = sorted[j];
        }
        *n = nnames;
    }
out:
    free(sorted);
    return rc;
}

int tether_cli_write_outputs(const tether_cli_array *out, int nspecs, int n,
                             const char *const *names, const tether_npy *arrays,
                             struct cJSON *jouts) {
    const char *npz = tether_cli_out_npz(out, nspecs);
    if (npz) {
        if (tether_npz_write(npz, n, names, arrays)) {
            return fail(1, "%s", tether_last_error());
        }
        tether_cli_wrote(npz);
    }
    for (int i = 0; i < n; i++) {
        const tether_npy *o = &arrays[i];
        const char *path = npz || i >= nspecs ? NULL : out[i].path;
        char label[1200];
        if (npz) {
            snprintf(label, sizeof label, "%s:%s", npz, names[i]);
        } else {
            snprintf(label, sizeof label, "%s", path ? path : names[i]);
        }
        if (path) {
            if (tether_npy_write(path, o->dtype, o->shape, o->ndim, o->data)) {
                return fail(1, "%s", tether_last_error());
            }
            tether_cli_wrote(path);
        }
        tether_cli_summary(label, o);
        if (jouts) {
            cJSON_AddItemToArray(jouts, tether_cli_array_json(names[i], npz ? npz : path, o));
        }
    }
    return 0;
}

void tether_cli_summary(const char *name, const tether_npy *n) {
    char dt[TETHER_DTYPE_NAME_MAX];
    tether_dtype_name(n->dtype, dt, sizeof dt);
    printf("%s: %s [", name, dt);
    for (int i = 0; i < n->ndim; i++) {
        printf("%s%lld", i ? ", " : "", (long long)n->shape[i]);
    }
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
        printf("%s%g", i ? ", " : "", tether_elem_double(n->dtype, n->data, i));
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
    if (d->board[0]) {
        cJSON_AddStringToObject(o, "board", d->board);
    } else {
        cJSON_AddNullToObject(o, "board");
    }
    if (d->clock_hz) {
        cJSON_AddNumberToObject(o, "clock_rate_hz", (double)d->clock_hz);
    } else {
        cJSON_AddNullToObject(o, "clock_rate_hz");
    }
    return o;
}

cJSON *tether_cli_array_json(const char *name, const char *file, const tether_npy *n) {
    cJSON *o = cJSON_CreateObject();
    char dt[TETHER_DTYPE_NAME_MAX];
    tether_dtype_name(n->dtype, dt, sizeof dt);
    cJSON_AddStringToObject(o, "name", name);
    if (file) {
        cJSON_AddStringToObject(o, "file", file);
    } else {
        cJSON_AddNullToObject(o, "file");
    }
    cJSON_AddStringToObject(o, "dtype", dt);
    cJSON *sh = cJSON_AddArrayToObject(o, "shape");
    for (int i = 0; i < n->ndim; i++) {
        cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)n->shape[i]));
    }
    double mn, mx, mean;
    size_t count = array_stats(n, &mn, &mx, &mean);
    cJSON_AddNumberToObject(o, "elements", (double)count);
    /* NaN (and an empty array's undefined figures) are null: JSON has no NaN */
    const char *keys[3] = {"min", "max", "mean"};
    double v[3] = {mn, mx, mean};
    for (int k = 0; k < 3; k++) {
        if (count && isfinite(v[k])) {
            cJSON_AddNumberToObject(o, keys[k], v[k]);
        } else {
            cJSON_AddNullToObject(o, keys[k]);
        }
    }
    return o;
}

void tether_cli_time_json(cJSON *o, const tether_time_stats *ts) {
    cJSON_AddNumberToObject(o, "number", ts->number);
    cJSON_AddNumberToObject(o, "repeat", ts->repeat);
    cJSON *r = cJSON_AddArrayToObject(o, "repeats_us");
    for (uint32_t i = 0; i < ts->repeat && i < 32; i++) {
        cJSON_AddItemToArray(r, cJSON_CreateNumber(ts->seconds[i] * 1e6));
    }
    cJSON_AddNumberToObject(o, "median_us", ts->median * 1e6);
    cJSON_AddNumberToObject(o, "mean_us", ts->mean * 1e6);
    cJSON_AddNumberToObject(o, "min_us", ts->min * 1e6);
    cJSON_AddNumberToObject(o, "max_us", ts->max * 1e6);
    cJSON_AddBoolToObject(o, "zero_timer", ts->zero_timer);
}

int tether_cli_write_json(const char *path, cJSON *root) {
    char *txt = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!txt) {
        return fail(1, "out of memory");
    }
    size_t len = strlen(txt);
    txt[len] = '\n'; /* cJSON_Print's buffer ends with the NUL: a newline in its place */
    int wrc = tether_file_write(path, txt, len + 1);
    free(txt);
    if (wrc) {
        return fail(1, "--json: %s", tether_last_error());
    }
    tether_cli_wrote(path);
    return 0;
}
