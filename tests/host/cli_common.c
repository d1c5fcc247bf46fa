/*
 * The helpers the files of test_host_cli share (cli_common.h): running `tether` as a process in
 * a fresh directory per test, writing and checking arrays, reading its JSON, the setup and the
 * teardown that stop what a failed test left running.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_common.h"
#include "tether/file.h"

char g_dir[64];
static char g_out[256];
const char *g_limit = "";

/* Runs `tether ARGS` in g_dir; returns the exit code, output (stdout+stderr) in a static buffer. */
int tether(const char **out, const char *fmt, ...) {
    static char buf[65536];
    char args[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && %s TETHER_TETHERD='%s' '%s' %s > '%s' 2>&1", g_dir,
             g_limit, TETHERD_PATH, TETHER_CLI, args, g_out);
    int st = system(cmd);
    FILE *f = fopen(g_out, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) {
        fclose(f);
    }
    buf[n] = 0;
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void write_f32(const char *name, int64_t n, float base) {
    float v[64];
    for (int i = 0; i < n; i++) {
        v[i] = base + (float)i;
    }
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, &n, 1, v), 0);
}

void check_sum(const char *name) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    tether_npy n;
    if (tether_npy_read(p, &n)) {
        fail_msg("%s", tether_last_error());
    }
    assert_int_equal(n.ndim, 1);
    assert_int_equal(n.shape[0], 16);
    for (int i = 0; i < 16; i++) {
        assert_true(((float *)n.data)[i] == (float)i + (100.0f + (float)i));
    }
    tether_npy_free(&n);
}

/* Parses g_dir/name (written by a --json option); fails the test when it is not JSON. */
cJSON *read_json(const char *name) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    FILE *f = fopen(p, "rb");
    if (!f) {
        fail_msg("%s was not written", name);
    }
    static char txt[65536];
    size_t n = fread(txt, 1, sizeof txt - 1, f);
    fclose(f);
    txt[n] = 0;
    cJSON *j = cJSON_Parse(txt);
    if (!j) {
        fail_msg("%s is not JSON: %s", name, txt);
    }
    return j;
}

double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    if (!cJSON_IsNumber(v)) {
        fail_msg("\"%s\" is not a number", key);
    }
    return v->valuedouble;
}

const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    if (!cJSON_IsString(v)) {
        fail_msg("\"%s\" is not a string", key);
    }
    return v->valuestring;
}

int exists(const char *name) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    return access(p, F_OK) == 0;
}

int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/tcliXXXXXX");
    if (!mkdtemp(g_dir)) {
        return -1;
    }
    snprintf(g_out, sizeof g_out, "%s/out.txt", g_dir);
    return 0;
}

pid_t g_tetherd;

int teardown(void **state) {
    (void)state;
    g_limit = ""; /* what a failed test may have left */
    unsetenv("TMPDIR");
    if (g_tetherd > 0) {
        kill(g_tetherd, SIGTERM);
        waitpid(g_tetherd, NULL, 0);
        g_tetherd = 0;
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

tether_npy read_npy(const char *name) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    tether_npy n;
    if (tether_npy_read(p, &n)) {
        fail_msg("%s", tether_last_error());
    }
    return n;
}

#ifdef TETHER_HAVE_COMPILER
/* g_dir/mfcc.npy: a fixed input of the KWS example (1x1x49x10). */
void write_mfcc(void) {
    int64_t shape[] = {1, 1, 49, 10};
    float x[490];
    for (int i = 0; i < 490; i++) {
        x[i] = (float)((i * 37) % 100) / 100.0f;
    }
    char p[256];
    snprintf(p, sizeof p, "%s/mfcc.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 4, x), 0);
}

/* A model with two named inputs (a, b) and outputs (s = a + b, p = a * b). */
void write_two_io_model(void) {
    char p[256];
    snprintf(p, sizeof p, "%s/two.json", g_dir);
    const char *m =
        "{\"format\": \"tether-model\", \"version\": 1, \"tensors\": [{\"name\": \"a\", "
        "\"shape\": [2, 3]}, {\"name\": \"b\", \"shape\": [2, 3]}], \"inputs\": [\"a\", \"b\"], "
        "\"outputs\": [\"s\", \"p\"], \"nodes\": [{\"name\": \"add\", \"op\": \"add\", "
        "\"inputs\": [\"a\", \"b\"], \"outputs\": [\"s\"]}, {\"name\": \"mul\", \"op\": "
        "\"mul\", \"inputs\": [\"a\", \"b\"], \"outputs\": [\"p\"]}]}\n";
    assert_int_equal(tether_file_write(p, m, strlen(m)), 0);
}
#endif
