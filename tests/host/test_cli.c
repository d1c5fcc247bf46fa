/*
 * The `tether` CLI as a process, against local: (tetherd spawned over stdio): info (--json),
 * upload, run MODULE FUNC, run ARTIFACT_DIR (a hand-made artifact around the test module),
 * bench, --help on every subcommand, and the exit codes and one-line reasons of bad usage,
 * unknown functions and dtype/shape mismatches; model inputs checked before a compile or a device
 * (a device that refuses connections), and an .npz decompression bomb refused under a memory
 * limit.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "tether/crt.h"
#include "tether/file.h"
#include "tether/npy.h"
#include "tether/rpc/sha256.h"

#include "npz_bomb.h"

#if defined(__SANITIZE_ADDRESS__)
#define TETHER_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TETHER_TEST_ASAN 1
#endif
#endif

static char g_dir[64];
static char g_out[256];
static const char *g_limit = ""; /* shell words in front of the command (a memory limit) */

/* Runs `tether ARGS` in g_dir; returns the exit code, output (stdout+stderr) in a static buffer. */
static int tether(const char **out, const char *fmt, ...) {
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

static void write_f32(const char *name, int64_t n, float base) {
    float v[64];
    for (int i = 0; i < n; i++) {
        v[i] = base + (float)i;
    }
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, &n, 1, v), 0);
}

static void check_sum(const char *name) {
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
static cJSON *read_json(const char *name) {
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

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    if (!cJSON_IsNumber(v)) {
        fail_msg("\"%s\" is not a number", key);
    }
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    if (!cJSON_IsString(v)) {
        fail_msg("\"%s\" is not a string", key);
    }
    return v->valuestring;
}

static int exists(const char *name) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    return access(p, F_OK) == 0;
}

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/tcliXXXXXX");
    if (!mkdtemp(g_dir)) {
        return -1;
    }
    snprintf(g_out, sizeof g_out, "%s/out.txt", g_dir);
    return 0;
}

static pid_t g_tetherd; /* a tetherd a test started, 0 = none */

static int teardown(void **state) {
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

/* info: every text line "label  value [unit]" is the JSON key label_with_underscores[_unit]
 * with the same value, and every reported JSON field has its text line. */
static void test_info_consistent(void **state) {
    (void)state;
    const char *o;
    static char text[8192];
    assert_int_equal(tether(&o, "info"), 0);
    snprintf(text, sizeof text, "%s", o);
    assert_non_null(strstr(text, "scopes             global"));
    assert_int_equal(tether(&o, "info --json"), 0);
    cJSON *j = cJSON_Parse(o);
    assert_non_null(j);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "auth_required")));
    int lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *gap = strstr(line, "  ");
        assert_non_null(gap);
        char key[64], value[256];
        snprintf(key, sizeof key, "%.*s", (int)(gap - line), line);
        for (char *p = key; *p; p++) {
            *p = *p == ' ' ? '_' : *p;
        }
        while (*gap == ' ') {
            gap++;
        }
        snprintf(value, sizeof value, "%s", gap);
        size_t vl = strlen(value);
        if (vl > 6 && !strcmp(value + vl - 6, " bytes")) {
            strcat(key, "_bytes");
            value[vl - 6] = 0;
        } else if (vl > 3 && !strcmp(value + vl - 3, " Hz")) {
            strcat(key, "_hz");
            value[vl - 3] = 0;
        }
        const cJSON *v = cJSON_GetObjectItem(j, key);
        if (!v || cJSON_IsNull(v)) {
            fail_msg("text line '%s': no JSON value \"%s\"", line, key);
        }
        char jv[256] = "";
        if (cJSON_IsNumber(v)) {
            snprintf(jv, sizeof jv, "%.0f", v->valuedouble);
        } else if (cJSON_IsString(v)) {
            snprintf(jv, sizeof jv, "%s", v->valuestring);
        } else if (cJSON_IsBool(v)) {
            snprintf(jv, sizeof jv, "%s", cJSON_IsTrue(v) ? "yes" : "no");
        } else if (cJSON_IsArray(v)) {
            for (int i = 0; i < cJSON_GetArraySize(v); i++) {
                snprintf(jv + strlen(jv), sizeof jv - strlen(jv), "%s%s", i ? ", " : "",
                         cJSON_GetArrayItem(v, i)->valuestring);
            }
            if (!jv[0]) {
                snprintf(jv, sizeof jv, "(none)");
            }
        }
        if (strcmp(jv, value)) {
            fail_msg("'%s': text '%s', JSON \"%s\": '%s'", line, value, key, jv);
        }
        lines++;
    }
    int reported = 0; /* every non-null JSON field has its line */
    for (const cJSON *v = j->child; v; v = v->next) {
        reported += !cJSON_IsNull(v);
    }
    assert_int_equal(lines, reported);
    assert_true(lines >= 15);
    cJSON_Delete(j);
    /* --json FILE, as every command takes it: the same object in FILE, the text on stdout */
    assert_int_equal(tether(&o, "info --json info.json"), 0);
    assert_non_null(strstr(o, "scopes             global"));
    assert_non_null(strstr(o, "wrote info.json"));
    j = read_json("info.json");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "auth_required")));
    assert_non_null(cJSON_GetObjectItem(j, "pool_bytes"));
    cJSON_Delete(j);
    assert_int_equal(tether(&o, "info --json /nonexistent/info.json"), 2); /* before the device */
    assert_non_null(strstr(o, "--json"));
}

/* Every subcommand prints its help and exits 0 on --help and -h; tether --version. */
static void test_help_version(void **state) {
    (void)state;
    const char *o;
    const char *cmds[] = {
        "info",    "upload", "run",    "bench",
#ifdef TETHER_HAVE_COMPILER
        "compile", "plan",   "import", "plan-buffers", "ab",
#endif
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        const char *flags[2] = {"--help", "-h"};
        for (int k = 0; k < 2; k++) {
            int rc = tether(&o, "%s %s", cmds[i], flags[k]);
            if (rc != 0) {
                fail_msg("tether %s %s: exit %d: %s", cmds[i], flags[k], rc, o);
            }
            assert_non_null(strstr(o, "usage"));
        }
    }
    assert_int_equal(tether(&o, "--version"), 0);
    assert_string_equal(o, "tether " TETHER_VERSION "\n");
    assert_int_equal(tether(&o, "--help"), 0);
    assert_non_null(strstr(o, "--version"));
}

static void test_usage_errors(void **state) {
    (void)state;
    const char *o;
    assert_int_equal(tether(&o, "frobnicate"), 2);
    assert_non_null(strstr(o, "unknown command 'frobnicate'"));
    assert_int_equal(tether(&o, "run"), 2);
    assert_non_null(strstr(o, "tether run: nothing to run"));
    /* a malformed device URL is bad usage, found before anything is opened */
    assert_int_equal(tether(&o, "info --device tcp://127.0.0.1:notaport"), 2);
    assert_non_null(strstr(o, "port must be"));
    assert_int_equal(tether(&o, "info --device bogus://x"), 2);
    assert_non_null(strstr(o, "unknown device URL"));
    assert_int_equal(tether(&o, "info --device tcp://127.0.0.1"), 2);
    assert_int_equal(tether(&o, "info --device ''"), 2);
    assert_non_null(strstr(o, "empty device URL"));
    assert_int_equal(tether(&o, "bench --repeat 0 x"), 2);
    /* one line per usage error; option-like values are not taken as values */
    assert_int_equal(tether(&o, "bench x --number -1"), 2);
    assert_null(strchr(o, '\n') == NULL ? NULL : strchr(strchr(o, '\n') + 1, '\n'));
    assert_int_equal(tether(&o, "upload x.so --name --device local:"), 2);
    assert_non_null(strstr(o, "--name needs a value"));
    assert_int_equal(tether(&o, "run x.so f --out y.npy:float32:1x12x"), 2);
    assert_non_null(strstr(o, "bad shape"));
    assert_int_equal(tether(&o, "plan-buffers --help"), 0);
    assert_non_null(strstr(o, "usage: tether plan-buffers"));
}

static void test_run_module(void **state) {
    (void)state;
    write_f32("a.npy", 16, 0);
    write_f32("b.npy", 16, 100);
    const char *o;
    assert_int_equal(tether(&o, "upload '%s' --name m", TESTMOD_PATH), 0);
    assert_non_null(strstr(o, "12 functions"));
    int rc = tether(&o, "run '%s' add_packed --in a.npy --in b.npy --out c.npy", TESTMOD_PATH);
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "stack high-water mark"));
    check_sum("c.npy");
    /* explicit output dtype/shape */
    rc = tether(&o, "run '%s' add_packed --in a.npy --in b.npy --out d.npy:float32:16",
                TESTMOD_PATH);
    assert_int_equal(rc, 0);
    check_sum("d.npy");
    rc = tether(&o, "bench '%s' add_packed --in a.npy --in b.npy --out c.npy --number 5 --repeat 2",
                TESTMOD_PATH);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(o, "median"));
    assert_non_null(strstr(o, "stack high-water mark"));
    /* a measurement longer than the request timeout: TIME waits for what it asked for */
    rc = tether(&o,
                "bench '%s' add_packed --in a.npy --in b.npy --out c.npy --number 1 --repeat 2 "
                "--min-repeat-ms 600 --timeout-ms 400",
                TESTMOD_PATH);
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "2 repeats"));
    /* errors: unknown function, wrong argument count, dtype mismatch, Fortran npy */
    assert_int_equal(tether(&o, "run '%s' nope --in a.npy --out c.npy", TESTMOD_PATH), 1);
    assert_non_null(strstr(o, "'nope'"));
    assert_int_equal(tether(&o, "run '%s' add_packed --in a.npy --out c.npy", TESTMOD_PATH), 1);
    assert_non_null(strstr(o, "takes 3 arguments"));
    int64_t n = 16;
    int32_t iv[16] = {0};
    char p[256];
    snprintf(p, sizeof p, "%s/i.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_INT32, &n, 1, iv), 0);
    assert_int_equal(
        tether(&o, "run '%s' add_packed --in a.npy --in i.npy --out c.npy", TESTMOD_PATH), 1);
    assert_non_null(strstr(o, "dtype must be float32"));
    assert_int_equal(
        tether(&o, "run '%s' add_packed --in missing.npy --in a.npy --out c.npy", TESTMOD_PATH), 1);
    assert_non_null(strstr(o, "missing.npy"));
}

/* --json FILE of run, bench and upload: parsed back, every promised field with its value. */
static void test_json_outputs(void **state) {
    (void)state;
    write_f32("a.npy", 16, 0);
    write_f32("b.npy", 16, 100);
    const char *o;
    int rc = tether(&o, "run '%s' add_packed --in a.npy --in b.npy --out c.npy --json run.json",
                    TESTMOD_PATH);
    if (rc) {
        fail_msg("%s", o);
    }
    cJSON *j = read_json("run.json");
    assert_string_equal(str(j, "command"), "run");
    assert_string_equal(str(j, "function"), "add_packed");
    const cJSON *dev = cJSON_GetObjectItem(j, "device");
    assert_string_equal(str(dev, "url"), "local:");
    assert_string_equal(str(dev, "arch"), "x86_64");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(dev, "board")));
    const cJSON *outs = cJSON_GetObjectItem(j, "outputs");
    assert_int_equal(cJSON_GetArraySize(outs), 1);
    const cJSON *y = cJSON_GetArrayItem(outs, 0);
    assert_string_equal(str(y, "name"), "out0");
    assert_string_equal(str(y, "file"), "c.npy");
    assert_string_equal(str(y, "dtype"), "float32");
    const cJSON *shape = cJSON_GetObjectItem(y, "shape");
    assert_int_equal(cJSON_GetArraySize(shape), 1);
    assert_int_equal((int)cJSON_GetArrayItem(shape, 0)->valuedouble, 16);
    /* c = a + b = 100 + 2i */
    assert_true(num(y, "min") == 100.0);
    assert_true(num(y, "max") == 130.0);
    assert_true(num(y, "mean") == 115.0);
    const cJSON *call = cJSON_GetObjectItem(j, "call");
    assert_int_equal((int)num(call, "return_code"), 0);
    assert_true(num(call, "time_us") >= 0);
    assert_true(num(call, "stack_hwm_bytes") >= 0); /* a leaf: its own frame, maybe 0 */
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(call, "cycles"))); /* nanosecond clock */
    cJSON_Delete(j);
    check_sum("c.npy");

    rc = tether(&o,
                "bench '%s' add_packed --in a.npy --in b.npy --out c.npy --number 4 --repeat 3 "
                "--json bench.json",
                TESTMOD_PATH);
    if (rc) {
        fail_msg("%s", o);
    }
    j = read_json("bench.json");
    assert_string_equal(str(j, "command"), "bench");
    assert_int_equal((int)num(j, "repeat"), 3);
    assert_true(num(j, "number") >= 4);
    const cJSON *reps = cJSON_GetObjectItem(j, "repeats_us");
    assert_int_equal(cJSON_GetArraySize(reps), 3);
    double mn = num(j, "min_us"), mx = num(j, "max_us"), med = num(j, "median_us");
    assert_true(mn >= 0 && mn <= med && med <= mx);
    for (int i = 0; i < 3; i++) {
        double r = cJSON_GetArrayItem(reps, i)->valuedouble;
        assert_true(r >= mn && r <= mx);
    }
    assert_true(num(j, "mean_us") >= mn && num(j, "mean_us") <= mx);
    assert_true(num(j, "stack_hwm_bytes") >= 0);
    assert_true(num(j, "first_call_us") >= 0);
    assert_true(cJSON_IsBool(cJSON_GetObjectItem(j, "zero_timer")));
    cJSON_Delete(j);

    rc = tether(&o, "upload '%s' --name m.so --json up.json", TESTMOD_PATH);
    if (rc) {
        fail_msg("%s", o);
    }
    j = read_json("up.json");
    assert_string_equal(str(j, "command"), "upload");
    assert_string_equal(str(j, "module"), "m.so");
    assert_string_equal(str(j, "kind"), "shared_object");
    assert_true(num(j, "handle") > 0);
    assert_int_equal((int)num(j, "functions"), 12);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "function_names"))); /* not known for a .so */
    uint8_t *data;
    size_t len;
    assert_int_equal(tether_file_read(TESTMOD_PATH, (size_t)1 << 26, &data, &len), 0);
    assert_int_equal((size_t)num(j, "bytes"), len);
    uint8_t h[32];
    tether_sha256(data, len, h);
    free(data);
    char hex[65];
    for (int i = 0; i < 32; i++) {
        snprintf(hex + 2 * i, 3, "%02x", h[i]);
    }
    assert_string_equal(str(j, "sha256"), hex);
    cJSON_Delete(j);

    /* a --json path that cannot be written is bad usage found before any work: no output file */
    assert_int_equal(tether(&o,
                            "run '%s' add_packed --in a.npy --in b.npy --out new.npy --json "
                            "/nonexistent/r.json",
                            TESTMOD_PATH),
                     2);
    assert_non_null(strstr(o, "tether run: --json"));
    assert_false(exists("new.npy"));
    assert_int_equal(tether(&o, "bench '%s' add_packed --json", TESTMOD_PATH), 2);
    assert_int_equal(tether(&o, "upload '%s' --json /nonexistent/u.json", TESTMOD_PATH), 2);
    assert_non_null(strstr(o, "tether upload: --json"));
    /* JSON to a device node is written in place */
    assert_int_equal(tether(&o, "upload '%s' --json /dev/null", TESTMOD_PATH), 0);
}

static void test_run_artifact(void **state) {
    (void)state;
    write_f32("a.npy", 16, 0);
    write_f32("b.npy", 16, 100);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/art' && cp '%s' '%s/art/libm.so'", g_dir, TESTMOD_PATH,
             g_dir);
    assert_int_equal(system(cmd), 0);
    char p[256];
    snprintf(p, sizeof p, "%s/art/metadata.json", g_dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f, "{\"format\":\"tether-artifact\",\"version\":1,\"prefix\":\"m\",\"abi\":\"packed\","
               "\"interface\":\"packed\",\"target\":\"x86_64-linux\",\"library\":\"libm.so\","
               "\"entry\":{\"name\":\"add_packed\",\"abi\":\"packed\",\"num_args\":3},"
               "\"inputs\":[{\"name\":\"a\",\"dtype\":\"float32\",\"shape\":[16]},"
               "{\"name\":\"b\",\"dtype\":\"float32\",\"shape\":[16]}],"
               "\"outputs\":[{\"name\":\"y\",\"dtype\":\"float32\",\"shape\":[16]}],"
               "\"functions\":[],\"pools\":[],\"params_bytes\":0}");
    fclose(f);
    const char *o;
    int rc = tether(&o, "run art --in a.npy --in b.npy --out y.npy");
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "add_packed: returned 0"));
    check_sum("y.npy");
    /* without --out: out0.npy in the current directory, said on stderr with the directory */
    rc = tether(&o, "run art --in a.npy --in b.npy");
    if (rc) {
        fail_msg("%s", o);
    }
    check_sum("out0.npy");
    char said[512];
    snprintf(said, sizeof said, "tether run: no --out given: wrote out0.npy (output 'y') in %s;",
             g_dir);
    if (!strstr(o, said)) {
        fail_msg("no '%s' in: %s", said, o);
    }
    assert_int_equal(tether(&o, "run art --in a.npy"), 2);
    assert_non_null(strstr(o, "2 inputs, 1 --in given"));
    write_f32("short.npy", 8, 0);
    assert_int_equal(tether(&o, "run art --in a.npy --in short.npy"), 1);
    assert_non_null(strstr(o, "shape [8], but model input 'b' is [16]"));
    assert_int_equal(tether(&o, "run art func --in a.npy --in b.npy"), 2);
}

#ifdef TETHER_HAVE_COMPILER
/* g_dir/mfcc.npy: a fixed input of the KWS example (1x1x49x10). */
static void write_mfcc(void) {
    int64_t shape[] = {1, 1, 49, 10};
    float x[490];
    for (int i = 0; i < 490; i++) {
        x[i] = (float)((i * 37) % 100) / 100.0f;
    }
    char p[256];
    snprintf(p, sizeof p, "%s/mfcc.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 4, x), 0);
}

/* A model file is compiled through the compiler API and run; the KWS example ends in softmax. */
static void test_run_model(void **state) {
    (void)state;
    write_mfcc();
    char p[256];
    const char *o;
    int rc = tether(&o, "run '%s/examples/kws/kws.json' --in mfcc.npy --out probs.npy",
                    TETHER_SOURCE_DIR);
    if (rc) {
        fail_msg("%s", o);
    }
    snprintf(p, sizeof p, "%s/probs.npy", g_dir);
    tether_npy n;
    assert_int_equal(tether_npy_read(p, &n), 0);
    assert_int_equal(n.ndim, 2);
    assert_int_equal(n.shape[1], 12);
    double sum = 0;
    for (int i = 0; i < 12; i++) {
        sum += ((float *)n.data)[i];
    }
    assert_true(sum > 0.999 && sum < 1.001);
    tether_npy_free(&n);
    /* --opt-level and --params reach the compile, as with tether compile: the weights in a blob
     * leave the library's text without them; run and bench alike */
    double text[2];
    const char *params[2] = {"linked", "blob"};
    for (int k = 0; k < 2; k++) {
        rc = tether(&o,
                    "%s '%s/examples/kws/kws.json' --in mfcc.npy --opt-level s --params %s --json "
                    "m.json%s",
                    k ? "bench" : "run", TETHER_SOURCE_DIR, params[k],
                    k ? " --number 1 --repeat 1" : " --out probs2.npy");
        if (rc) {
            fail_msg("%s", o);
        }
        cJSON *j = read_json("m.json");
        const cJSON *c = cJSON_GetObjectItem(j, "compiled");
        assert_string_equal(str(c, "opt_level"), "s");
        assert_string_equal(str(c, "params"), params[k]);
        assert_int_equal((int)num(c, "params_bytes"), 49360);
        text[k] = num(c, "text_bytes");
        cJSON_Delete(j);
    }
    assert_true(text[1] + 40000 < text[0]);
    /* a model is compiled for the device's CPU (HELLO cpu) at the hosted default -O3, unless
     * --mcpu says otherwise; a CPU name that is no -march value is refused */
    if (tether(&o, "info --json")) {
        fail_msg("%s", o);
    }
    cJSON *info = cJSON_Parse(o);
    assert_non_null(info);
    const cJSON *jcpu = cJSON_GetObjectItem(info, "cpu");
    char dev_cpu[64];
    snprintf(dev_cpu, sizeof dev_cpu, "%s", cJSON_IsString(jcpu) ? jcpu->valuestring : "");
    cJSON_Delete(info);
    for (int k = 0; k < 2; k++) {
        if (tether(&o, "run '%s/examples/kws/kws.json' --in mfcc.npy --out p3.npy --json m.json%s",
                   TETHER_SOURCE_DIR, k ? " --mcpu x86-64-v2" : "")) {
            fail_msg("%s", o);
        }
        cJSON *j = read_json("m.json");
        const cJSON *c = cJSON_GetObjectItem(j, "compiled");
        assert_string_equal(str(c, "opt_level"), "3");
        assert_string_equal(str(c, "cpu"), k ? "x86-64-v2" : dev_cpu);
        cJSON_Delete(j);
    }
    assert_int_equal(
        tether(&o, "run '%s/examples/kws/kws.json' --in mfcc.npy --mcpu 'v3;x'", TETHER_SOURCE_DIR),
        1);
    assert_non_null(strstr(o, "cpu 'v3;x' is not a -march/-mcpu value"));
    assert_int_equal(
        tether(&o, "run '%s/examples/kws/kws.json' --in mfcc.npy --opt-level 7", TETHER_SOURCE_DIR),
        2);
    assert_non_null(strstr(o, "--opt-level wants"));
    assert_int_equal(
        tether(&o, "run '%s/examples/kws/kws.json' --in mfcc.npy --params foo", TETHER_SOURCE_DIR),
        2);
    /* a module or an artifact is not compiled: the options are refused */
    assert_int_equal(tether(&o, "run '%s' add_packed --opt-level 1", TESTMOD_PATH), 2);
    assert_non_null(strstr(o, "apply to a MODEL"));
    assert_int_equal(tether(&o,
                            "run '%s/examples/kws/kws.json' --reference --in mfcc.npy "
                            "--params blob",
                            TETHER_SOURCE_DIR),
                     2);
    assert_int_equal(tether(&o, "run '%s/tests/compiler/bad_models/bad_dtype.json' --in mfcc.npy",
                            TETHER_SOURCE_DIR),
                     1);
    assert_non_null(strstr(o, "float33"));
}

static tether_npy read_npy(const char *name) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    tether_npy n;
    if (tether_npy_read(p, &n)) {
        fail_msg("%s", tether_last_error());
    }
    return n;
}

/* run --reference (host interpreter) agrees with the compiled model run on the device. */
static void test_run_reference(void **state) {
    (void)state;
    int64_t shape[] = {1, 1, 49, 10};
    float x[490];
    for (int i = 0; i < 490; i++) {
        x[i] = (float)((i * 53) % 97) / 50.0f - 1.0f;
    }
    char p[256];
    snprintf(p, sizeof p, "%s/mfcc.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 4, x), 0);
    const char *o;
    const char *kws = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    if (tether(&o, "run --reference '%s' --in mfcc.npy --out ref.npy", kws)) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "reference interpreter"));
    if (tether(&o, "run '%s' --in mfcc.npy --out dev.npy", kws)) {
        fail_msg("%s", o);
    }
    tether_npy a = read_npy("ref.npy"), b = read_npy("dev.npy");
    assert_int_equal(a.nbytes, 48);
    assert_int_equal(b.nbytes, 48);
    for (int i = 0; i < 12; i++) {
        assert_float_equal(((float *)a.data)[i], ((float *)b.data)[i], 1e-5);
    }
    tether_npy_free(&a);
    tether_npy_free(&b);
    /* a params blob of the wrong size is refused before the device runs anything (the unpacked
     * ABI could not tell) */
    if (tether(&o, "compile '%s' -o blob --params blob --quiet", kws)) {
        fail_msg("%s", o);
    }
    assert_int_equal(tether(&o, "run blob --in mfcc.npy --out b.npy"), 0);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && head -c 100 blob/params.bin > blob/p && mv blob/p blob/params.bin", g_dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(tether(&o, "run blob --in mfcc.npy --out b2.npy"), 1);
    assert_non_null(
        strstr(o, "params.bin is 100 bytes, but metadata.json says params_bytes 49360"));
    snprintf(p, sizeof p, "%s/b2.npy", g_dir);
    assert_int_not_equal(access(p, F_OK), 0);
    /* an input that is not a regular file */
    assert_int_equal(tether(&o, "run blob --in /dev/zero --out b2.npy"), 1);
    assert_non_null(strstr(o, "not a regular file"));
    /* artifacts this tether cannot run say why */
    if (tether(&o, "compile '%s' -o nobuild --no-build --quiet", kws)) {
        fail_msg("%s", o);
    }
    assert_int_equal(tether(&o, "run nobuild --in mfcc.npy"), 1);
    assert_non_null(strstr(o, "compiled with --no-build"));
    snprintf(cmd, sizeof cmd,
             "cd '%s' && sed -i 's/\"version\":\t1,/\"version\":\t99,/' blob/metadata.json", g_dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(tether(&o, "run blob --in mfcc.npy"), 1);
    assert_non_null(strstr(o, "format version 99"));
    /* wrong input shape: named, nothing written */
    snprintf(p, sizeof p, "%s/mfcc.npy", g_dir);
    int64_t bad[] = {1, 49, 10};
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, bad, 3, x), 0);
    assert_int_equal(tether(&o, "run --reference '%s' --in mfcc.npy --out ref2.npy", kws), 1);
    assert_non_null(strstr(o, "model input 'mfcc'"));
    snprintf(p, sizeof p, "%s/ref2.npy", g_dir);
    assert_int_not_equal(access(p, F_OK), 0);
    assert_int_equal(tether(&o, "run --reference '%s' --in mfcc.npy", g_dir), 2);
}

/* Output files: a device (/dev/null, even as root) and a symbolic link are written in place,
 * never replaced; a regular file is replaced; an input or model that is a link to /dev/zero is
 * refused instead of read until memory runs out. */
static void test_output_files(void **state) {
    (void)state;
    write_f32("a.npy", 16, 0);
    write_f32("b.npy", 16, 100);
    const char *o;
    struct stat before, after;
    assert_int_equal(stat("/dev/null", &before), 0);
    int rc = tether(&o, "run '%s' add_packed --in a.npy --in b.npy --out /dev/null", TESTMOD_PATH);
    if (rc) {
        fail_msg("%s", o);
    }
    assert_int_equal(lstat("/dev/null", &after), 0);
    assert_true(S_ISCHR(after.st_mode));
    assert_int_equal(before.st_rdev, after.st_rdev);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -f real.npy link.npy && ln -s real.npy link.npy",
             g_dir);
    assert_int_equal(system(cmd), 0);
    rc = tether(&o, "run '%s' add_packed --in a.npy --in b.npy --out link.npy", TESTMOD_PATH);
    if (rc) {
        fail_msg("%s", o);
    }
    char p[256];
    snprintf(p, sizeof p, "%s/link.npy", g_dir);
    assert_int_equal(lstat(p, &after), 0);
    assert_true(S_ISLNK(after.st_mode));
    check_sum("real.npy");
    /* a model symlinked to /dev/zero: refused at once with the reason */
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -f zero.json && ln -s /dev/zero zero.json", g_dir);
    assert_int_equal(system(cmd), 0);
    assert_int_not_equal(tether(&o, "compile zero.json -o z --quiet"), 0);
    assert_non_null(strstr(o, "not a regular file"));
    snprintf(p, sizeof p, "%s/z", g_dir);
    assert_int_not_equal(access(p, F_OK), 0); /* nothing left behind */
}

/* The allowed significance verdicts of ab's ratios. */
static void check_ratio(const cJSON *r, const char *num_name) {
    assert_non_null(r);
    assert_string_equal(str(r, "numerator"), num_name);
    assert_string_equal(str(r, "denominator"), "unpacked");
    assert_non_null(strstr(str(r, "method"), "hodges-lehmann"));
    const char *v = str(r, "verdict");
    const char *allowed[] = {"faster",          "slower",         "no_significant_difference",
                             "too_few_repeats", "not_measurable", "equal_within_1_percent"};
    int ok = 0;
    for (int i = 0; i < 6; i++) {
        ok |= !strcmp(v, allowed[i]);
    }
    if (!ok) {
        fail_msg("verdict '%s'", v);
    }
    double p = num(r, "p_value");
    assert_true(p >= 0 && p <= 1);
    if (!strcmp(v, "not_measurable")) {
        return;
    }
    double e = num(r, "estimate");
    assert_true(e > 0);
    if (!strcmp(v, "too_few_repeats")) {
        assert_true(cJSON_IsNull(cJSON_GetObjectItem(r, "ci95_low")));
        return;
    }
    double lo = num(r, "ci95_low"), hi = num(r, "ci95_high");
    assert_true(lo > 0 && lo <= e && e <= hi);
    /* the verdict follows the interval, and a ratio within 1% of 1 is equal within 1% */
    int small = fabs(e - 1) < 0.01;
    assert_int_equal(!strcmp(v, "slower"), lo > 1 && !small);
    assert_int_equal(!strcmp(v, "faster"), hi < 1 && !small);
    assert_int_equal(!strcmp(v, "equal_within_1_percent"), (lo > 1 || hi < 1) && small);
}

/* One side's timing fields: the spread is ordered and non-negative, one time per repeat. */
static void check_latency(const cJSON *u, int repeat) {
    double q1 = num(u, "latency_q1_us"), q3 = num(u, "latency_q3_us");
    double med = num(u, "latency_median_us"), mn = num(u, "latency_min_us"),
           mx = num(u, "latency_max_us");
    assert_true(num(u, "latency_iqr_us") >= 0);
    assert_true(fabs(num(u, "latency_iqr_us") - (q3 - q1)) <= 1e-9 * q3);
    assert_true(mn > 0 && mn <= q1 && q1 <= med && med <= q3 && q3 <= mx);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(u, "repeats_us")), repeat);
    assert_int_equal((int)num(u, "repeat"), repeat);
    assert_true(num(u, "number") >= 1);
}

/* No line of a table is wider than its header line (cells sized from their content). */
static void check_table(const char *o, const char *header) {
    const char *h = strstr(o, header);
    assert_non_null(h);
    while (h > o && h[-1] != '\n') {
        h--;
    }
    size_t width = strcspn(h, "\n");
    for (const char *l = h; *l && *l != '(' && strncmp(l, "OpenCL", 6) && *l != '\n';) {
        size_t n = strcspn(l, "\n");
        if (n > width) {
            fail_msg("table line wider than the header: '%.*s'", (int)n, l);
        }
        l += n + (l[n] == '\n');
    }
}

/* ab: both ABIs compiled, prepared, measured interleaved on local:, equal to the interpreter,
 * JSON written with the spread and the ratio's interval; the unpacked build uses less code and
 * stack than the packed one (the point of the unpacked ABI). */
static void test_ab(void **state) {
    (void)state;
    const char *o;
    const char *kws = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    int rc = tether(&o, "ab '%s' -o abdir --json ab.json --repeat 5 --min-repeat-ms 2", kws);
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "outputs equal the interpreter"));
    assert_non_null(strstr(o, "packed/unpacked\n")); /* the ratio column's header, whole */
    assert_non_null(strstr(o, "IQR"));
    assert_non_null(strstr(o, "interleaved"));
    check_table(o, "unpacked ABI");
    const char *verdict = strstr(o, "packed/unpacked latency: ");
    assert_non_null(verdict);
    assert_true(strstr(verdict, "significantly faster") ||
                strstr(verdict, "significantly slower") ||
                strstr(verdict, "no significant difference") || strstr(verdict, "equal within 1%"));
    cJSON *j = read_json("ab.json");
    /* the head of run's, bench's and upload's JSON: the command and the device object */
    assert_string_equal(str(j, "command"), "ab");
    const cJSON *dev = cJSON_GetObjectItem(j, "device");
    assert_true(cJSON_IsObject(dev));
    assert_string_equal(str(dev, "url"), "local:");
    assert_string_equal(str(dev, "arch"), "x86_64");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(dev, "board")));
    cJSON *abis = cJSON_GetObjectItem(j, "abis");
    assert_int_equal(cJSON_GetArraySize(abis), 2);
    cJSON *u = cJSON_GetArrayItem(abis, 0), *k = cJSON_GetArrayItem(abis, 1);
    assert_string_equal(str(u, "abi"), "unpacked");
    assert_string_equal(str(k, "abi"), "packed");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(u, "outputs_equal")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(k, "outputs_equal")));
    double uc = num(u, "code"), kc = num(k, "code");
    double uh = num(u, "stack_hwm"), kh = num(k, "stack_hwm");
    assert_true(uc > 0 && uc < kc);
#ifdef TETHER_TEST_ASAN
    /* under AddressSanitizer tetherd's calls carry the sanitizer's own stack use, which hides
     * the difference between the ABIs: only check that both were measured */
    assert_true(uh > 0 && kh > 0);
#else
    assert_true(uh > 0 && uh < kh);
#endif
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(u, "static_stack")));
    check_latency(u, 5);
    check_latency(k, 5);
    const cJSON *m = cJSON_GetObjectItem(j, "measurement");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(m, "interleaved")));
    assert_int_equal((int)num(m, "repeat"), 5);
    assert_int_equal((int)num(m, "min_repeat_ms"), 2);
    check_ratio(cJSON_GetObjectItem(j, "latency_ratio"), "packed");
    cJSON_Delete(j);
    /* the artifacts and the generated input stay in -o DIR */
    assert_true(exists("abdir/packed/metadata.json"));
    assert_true(exists("abdir/input_0.npy"));
    /* two repeats give no 95% interval: said so, not a verdict */
    rc = tether(&o, "ab '%s' --json ab2.json --repeat 2 --min-repeat-ms 0", kws);
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "too few repeats"));
    j = read_json("ab2.json");
    check_ratio(cJSON_GetObjectItem(j, "latency_ratio"), "packed");
    assert_string_equal(str(cJSON_GetObjectItem(j, "latency_ratio"), "verdict"), "too_few_repeats");
    cJSON_Delete(j);
    /* usage errors */
    assert_int_equal(tether(&o, "ab"), 2);
    assert_int_equal(tether(&o, "ab '%s' --target nowhere", kws), 2);
    assert_non_null(strstr(o, "nowhere"));
    assert_int_equal(tether(&o, "ab '%s' --in a.npy", kws), 1); /* no such file */
    assert_non_null(strstr(o, "a.npy"));
    write_f32("a.npy", 16, 0.0f);
    write_f32("b.npy", 16, 0.0f);
    assert_int_equal(tether(&o, "ab '%s' --in a.npy --in b.npy", kws), 2); /* 1 input */
    assert_non_null(strstr(o, "2 --in given"));
    assert_int_equal(tether(&o, "ab '%s' --repeat 999", kws), 2);
    assert_int_equal(tether(&o, "ab '%s' --json /nonexistent/ab.json", kws), 2);
    assert_null(strstr(o, "A/B of")); /* refused before any work */
    assert_int_equal(tether(&o, "ab '%s' --device http://x", kws), 2);
    /* an artifact for another architecture is refused before it is uploaded */
    if (system("aarch64-linux-gnu-gcc --version > /dev/null 2>&1") == 0) {
        assert_int_equal(tether(&o, "ab '%s' --target aarch64-linux --repeat 1", kws), 1);
        assert_non_null(strstr(o, "was compiled for aarch64-linux, but the device is"));
    }
    /* the help says where the target comes from */
    assert_int_equal(tether(&o, "ab --help"), 0);
    assert_non_null(strstr(o, "HELLO"));
    assert_null(strstr(o, "(default\n  x86_64-linux)"));
}

/* On a device with OpenCL (skipped otherwise): upload --json of an OpenCL C source lists its
 * kernels; ab --opencl measures both OpenCL builds in the rotation and writes opencl[] with the
 * spread and the ratio against the unpacked ABI; both tables fit their headers. */
static void test_opencl_json(void **state) {
    (void)state;
    const char *o;
    assert_int_equal(tether(&o, "info --json"), 0);
    cJSON *info = cJSON_Parse(o);
    assert_non_null(info);
    int has = cJSON_IsTrue(cJSON_GetObjectItem(info, "opencl"));
    cJSON_Delete(info);
    if (!has) {
        skip();
    }
    char p[256];
    snprintf(p, sizeof p, "%s/k.cl", g_dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("__kernel void scale(__global const float *x, __global float *y, float a) {\n"
          "    size_t i = get_global_id(0); y[i] = a * x[i]; }\n"
          "/* __kernel void not_this(void) */\n"
          "__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void twice(__global float *y)"
          " { y[0] *= 2.0f; }\n",
          f);
    fclose(f);
    int rc = tether(&o, "upload k.cl --json cl.json");
    if (rc) {
        fail_msg("%s", o);
    }
    cJSON *j = read_json("cl.json");
    assert_string_equal(str(j, "kind"), "opencl_source");
    assert_int_equal((int)num(j, "functions"), 2);
    const cJSON *names = cJSON_GetObjectItem(j, "function_names");
    assert_int_equal(cJSON_GetArraySize(names), 2);
    assert_string_equal(cJSON_GetArrayItem(names, 0)->valuestring, "scale");
    assert_string_equal(cJSON_GetArrayItem(names, 1)->valuestring, "twice");
    cJSON_Delete(j);

    rc = tether(&o,
                "ab '%s/examples/kws/kws.json' --opencl --repeat 4 --min-repeat-ms 2 --json "
                "abo.json",
                TETHER_SOURCE_DIR);
    if (rc) {
        fail_msg("%s", o);
    }
    check_table(o, "unpacked ABI");
    check_table(o, "buffer weights");
    assert_non_null(strstr(o, "OpenCL texture weights/unpacked latency: "));
    j = read_json("abo.json");
    const cJSON *ocl = cJSON_GetObjectItem(j, "opencl");
    assert_int_equal(cJSON_GetArraySize(ocl), 2);
    const char *w[2] = {"buffer", "texture"};
    for (int i = 0; i < 2; i++) {
        const cJSON *s = cJSON_GetArrayItem(ocl, i);
        assert_string_equal(str(s, "weights"), w[i]);
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(s, "outputs_equal")));
        assert_int_equal((int)num(s, "kernels"), 3);
        check_latency(s, 4);
        check_ratio(cJSON_GetObjectItem(s, "latency_ratio"), w[i]);
    }
    cJSON_Delete(j);
}

/* ab --opencl against a tetherd without OpenCL (--no-opencl, on 127.0.0.1): refused with the
 * reason before anything is compiled. */
static void test_ab_opencl_refused(void **state) {
    (void)state;
    char portfile[128];
    snprintf(portfile, sizeof portfile, "%s/port", g_dir);
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, STDOUT_FILENO);
        dup2(devnull, STDERR_FILENO);
        execl(TETHERD_PATH, "tetherd", "--tcp", "127.0.0.1:0", "--port-file", portfile,
              "--no-opencl", "--quiet", (char *)NULL);
        _exit(127);
    }
    assert_true(pid > 0);
    int port = 0;
    for (int i = 0; i < 500 && port <= 0; i++) {
        FILE *f = fopen(portfile, "r");
        if (f) {
            if (fscanf(f, "%d", &port) != 1) {
                port = 0;
            }
            fclose(f);
        }
        if (port <= 0) {
            usleep(10 * 1000);
        }
    }
    const char *o;
    int rc = -1, info_rc = -1;
    static char out[4096];
    if (port > 0) {
        info_rc = tether(&o, "info --device tcp://127.0.0.1:%d", port);
        snprintf(out, sizeof out, "%s", o);
        rc = tether(&o, "ab '%s/examples/kws/kws.json' --opencl -o abx --device tcp://127.0.0.1:%d",
                    TETHER_SOURCE_DIR, port);
    }
    kill(pid, SIGTERM);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(port > 0);
    assert_int_equal(info_rc, 0);
    assert_non_null(strstr(out, "opencl             no"));
    assert_int_equal(rc, 1);
    assert_non_null(strstr(o, "tether ab: --opencl: the device tcp://127.0.0.1:"));
    assert_non_null(strstr(o, "has no OpenCL layer"));
    assert_null(strchr(strchr(o, '\n') + 1, '\n')); /* one line */
    assert_false(exists("abx/unpacked"));           /* nothing was compiled */
}
#endif

#ifdef TETHER_HAVE_COMPILER
/* Entries of dir whose names start with prefix ("tether-": the CLI's, "tetherd-": sessions). */
#ifdef TETHER_HAVE_COMPILER
/* Lines of a text file that contain `what`. */
static int count_lines_with(const char *name, const char *what) {
    char p[256], line[4096];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    FILE *f = fopen(p, "r");
    int n = 0;
    while (f && fgets(line, sizeof line, f)) {
        n += strstr(line, what) != NULL;
    }
    if (f) {
        fclose(f);
    }
    return n;
}

/* tether tune on local: (tetherd): KWS's two workloads (conv, dense) x 3 trials into a log,
 * every record for the device's target and cpu; a rerun resumes (nothing measured again), more
 * trials add to it; compile/run with --tuning-log take the best records (all kernels tuned,
 * outputs still those of the reference) and say so; a log of another CPU is noted, a malformed
 * log refused naming the line, --tuning-log with a module refused. */
static void test_tune(void **state) {
    (void)state;
    const char *o;
    const char *kws = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    int rc = tether(&o, "tune '%s' --trials 3 --number 5 --repeat 3 --log t.json", kws);
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "2 workloads"));
    assert_non_null(strstr(o, "trial 3/3"));
    assert_non_null(strstr(o, "tuned 6 candidates"));
    assert_int_equal(count_lines_with("t.json", "\"workload\":\"conv2d "), 3);
    assert_int_equal(count_lines_with("t.json", "\"workload\":\"dense "), 3);
    assert_int_equal(count_lines_with("t.json", "\"target\":\"x86_64-linux\""), 6);
    rc = tether(&o, "tune '%s' --trials 3 --number 5 --repeat 3 --log t.json", kws);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(o, "3 of 3 trials in the log"));
    assert_non_null(strstr(o, "tuned 0 candidates"));
    rc = tether(&o, "tune '%s' --trials 5 --number 5 --repeat 3 --log t.json", kws);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(o, "tuned 4 candidates"));
    assert_int_equal(count_lines_with("t.json", "\"us\":"), 10);
    /* the records drive the kernels' schedules: run equals the reference */
    int64_t shape[] = {1, 1, 49, 10};
    float x[490];
    for (int i = 0; i < 490; i++) {
        x[i] = (float)((i * 13) % 50) / 50.0f;
    }
    char p[256];
    snprintf(p, sizeof p, "%s/tx.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 4, x), 0);
    rc = tether(&o, "run '%s' --tuning-log t.json --in tx.npy --out tuned.npy", kws);
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "2 of 2 kernels with knobs use a tuned schedule"));
    assert_int_equal(tether(&o, "run '%s' --reference --in tx.npy --out ref.npy", kws), 0);
    tether_npy a = read_npy("tuned.npy"), b = read_npy("ref.npy");
    for (int i = 0; i < 12; i++) {
        assert_true(fabs(((float *)a.data)[i] - ((float *)b.data)[i]) < 1e-5);
    }
    tether_npy_free(&a);
    tether_npy_free(&b);
    /* ab compiles both ABIs with the records */
    rc = tether(&o, "ab '%s' --tuning-log t.json --repeat 3 --min-repeat-ms 5", kws);
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "tuning log: 2 of 2 kernels with knobs use a tuned schedule"));
    /* compile for another cpu: no record applies, and the note says which the log has */
    rc = tether(&o, "compile '%s' -o tk --tuning-log t.json --mcpu x86-64 --quiet", kws);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(o, "0 of 2 kernels with knobs use a tuned schedule"));
    assert_non_null(strstr(o, "the log has records for x86_64-linux/"));
    /* refusals */
    snprintf(p, sizeof p, "%s/bad.json", g_dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("{\"workload\":\"conv2d\",\"target\":\"x86_64-linux\",\"cpu\":\"\",\"schedule\":{},"
          "\"us\":1}\nnot json\n",
          f);
    fclose(f);
    rc = tether(&o, "compile '%s' -o tk --tuning-log bad.json --quiet", kws);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(o, "bad.json:2: not a tuning record"));
    rc = tether(&o, "tune '%s' --trials 0", kws);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(o, "--trials '0' is not 1..10000"));
    rc = tether(&o, "run '%s' --tuning-log t.json", TESTMOD_PATH);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(o, "--tuning-log apply to a MODEL"));
}

/* A workload whose knob space is smaller than --trials stops early and says so: a dense layer
 * has 8 candidates (gemv_rows 1..8), so 10 trials stop after 8. */
static void test_tune_exhausted(void **state) {
    (void)state;
    char p[256];
    snprintf(p, sizeof p, "%s/fc.json", g_dir);
    const char *m =
        "{\"format\": \"tether-model\", \"version\": 1, \"tensors\": [{\"name\": "
        "\"x\", \"shape\": [1, 4]}, {\"name\": \"w\", \"shape\": [4, 4], \"data\": "
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]}], \"inputs\": [\"x\"], "
        "\"outputs\": [\"y\"], \"nodes\": [{\"name\": \"fc\", \"op\": \"dense\", "
        "\"inputs\": [\"x\", \"w\"], \"outputs\": [\"y\"]}]}\n";
    assert_int_equal(tether_file_write(p, m, strlen(m)), 0);
    const char *o;
    int rc = tether(&o, "tune fc.json --trials 10 --number 2 --repeat 2 --log fc.log");
    if (rc) {
        fail_msg("%s", o);
    }
    if (!strstr(o, "the search space is exhausted: all 8 candidates of its knobs are measured; "
                   "stopping this workload after 8 of 10 trials")) {
        fail_msg("no exhausted space said: %s", o);
    }
    assert_non_null(strstr(o, "tuned 8 candidates"));
    assert_int_equal(count_lines_with("fc.log", "\"workload\":\"dense "), 8);
}
#endif

static int count_dirs(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    }
    closedir(d);
    return n;
}

/* Interrupting `tether ab` (Ctrl-C, kill) leaves no temporary directory behind, and the
 * process ends by that signal. */
static void test_interrupt_cleans_up(void **state) {
    (void)state;
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s/tmpdir", g_dir);
    assert_int_equal(mkdir(tmp, 0700), 0);
    const int sigs[2] = {SIGINT, SIGTERM};
    for (int k = 0; k < 2; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            setenv("TMPDIR", tmp, 1);
            setenv("TETHER_TETHERD", TETHERD_PATH, 1);
            int devnull = open("/dev/null", O_WRONLY);
            dup2(devnull, STDOUT_FILENO);
            dup2(devnull, STDERR_FILENO);
            execl(TETHER_CLI, "tether", "ab", TETHER_SOURCE_DIR "/examples/kws/kws.json",
                  "--number", "2000", "--repeat", "100", (char *)NULL);
            _exit(127);
        }
        /* wait until the temporary directory exists, then interrupt */
        for (int i = 0; i < 500 && count_dirs(tmp, "tether-") == 0; i++) {
            usleep(10 * 1000);
        }
        assert_int_equal(count_dirs(tmp, "tether-"), 1);
        usleep(200 * 1000);
        kill(pid, sigs[k]);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFSIGNALED(st));
        assert_int_equal(WTERMSIG(st), sigs[k]);
        assert_int_equal(count_dirs(tmp, "tether-"), 0);
        /* the spawned tetherd (local:) ends its session and removes its directory too */
        for (int i = 0; i < 300 && count_dirs(tmp, "tetherd-") > 0; i++) {
            usleep(10 * 1000);
        }
        assert_int_equal(count_dirs(tmp, "tetherd-"), 0);
    }
}
#endif

#ifdef TETHER_HAVE_COMPILER
/* Starts tetherd on 127.0.0.1 (a free port) with the given extra options; returns its pid and
 * writes the device URL. */
static pid_t start_tetherd_tcp(const char *opts, char *url, size_t n) {
    char pf[300], cmd[1024];
    snprintf(pf, sizeof pf, "%s/port", g_dir);
    snprintf(cmd, sizeof cmd, "exec '%s' --tcp 127.0.0.1:0 --port-file '%s' --quiet %s",
             TETHERD_PATH, pf, opts);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500; i++) { /* up to 5 s for the port file */
        FILE *f = fopen(pf, "r");
        int port = 0;
        if (f) {
            int got = fscanf(f, "%d", &port);
            fclose(f);
            if (got == 1 && port > 0) {
                snprintf(url, n, "tcp://127.0.0.1:%d", port);
                return pid;
            }
        }
        usleep(10000);
    }
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    fail_msg("tetherd did not start");
    return -1;
}

static void stop_tetherd(pid_t pid) {
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

/* Two KWS outputs (12 floats) agree within 1e-5. */
static void assert_same_probs(const char *x, const char *y) {
    tether_npy a = read_npy(x), b = read_npy(y);
    assert_int_equal(a.nbytes, b.nbytes);
    assert_int_equal(a.nbytes, 12 * sizeof(float));
    for (int i = 0; i < 12; i++) {
        assert_true(fabsf(((float *)a.data)[i] - ((float *)b.data)[i]) < 1e-5f);
    }
    tether_npy_free(&a);
    tether_npy_free(&b);
}

/* Two-pool models on tetherd: the device lists its pools (info), a MODEL compiled with two pools
 * (one spilling, graph input and output planned, a pin) runs equal to the interpreter; a pool the
 * device lacks, one over the device pool's size, a plan that fits no pool, a pin to a missing
 * pool and memory options on an artifact directory are refused with their reasons. */
static void test_pools_on_tetherd(void **state) {
    (void)state;
    char url[64];
    pid_t td = start_tetherd_tcp("--pool sram:4K --pool dram", url, sizeof url);
    g_tetherd = td; /* stopped by the teardown when an assertion ends the test early */
    const char *o;
    int rc = tether(&o, "info --device %s --json", url);
    if (rc) {
        fail_msg("%s", o);
    }
    cJSON *j = cJSON_Parse(o);
    assert_non_null(j);
    cJSON *pools = cJSON_GetObjectItem(j, "pools"), *bytes = cJSON_GetObjectItem(j, "pool_bytes");
    assert_int_equal(cJSON_GetArraySize(pools), 2);
    assert_string_equal(cJSON_GetArrayItem(pools, 0)->valuestring, "sram");
    assert_string_equal(cJSON_GetArrayItem(pools, 1)->valuestring, "dram");
    assert_string_equal(cJSON_GetArrayItem(bytes, 0)->valuestring, "4096");
    assert_string_equal(cJSON_GetArrayItem(bytes, 1)->valuestring, "unbounded");
    cJSON_Delete(j);
    write_mfcc();
    rc = tether(&o, "run '%s/examples/kws/kws.json' --reference --in mfcc.npy --out ref.npy",
                TETHER_SOURCE_DIR);
    if (rc) {
        fail_msg("%s", o);
    }
    const char *abis[2] = {"unpacked", "packed"};
    for (int k = 0; k < 2; k++) {
        rc = tether(&o,
                    "run '%s/examples/kws/kws.json' --device %s --abi %s --pool sram:global:2K "
                    "--pool dram:global:1M --plan-inputs --plan-outputs --pin relu1.out=dram "
                    "--in mfcc.npy --out probs.npy",
                    TETHER_SOURCE_DIR, url, abis[k]);
        if (rc) {
            fail_msg("%s: %s", abis[k], o);
        }
        assert_same_probs("probs.npy", "ref.npy");
    }
    /* --pool NAME takes the size of the device's pool (sram: 4096 from HELLO) */
    rc = tether(&o,
                "run '%s/examples/kws/kws.json' --device %s --pool sram --pool dram --in mfcc.npy "
                "--out probs4.npy --json r4.json",
                TETHER_SOURCE_DIR, url);
    if (rc) {
        fail_msg("%s", o);
    }
    assert_same_probs("probs4.npy", "ref.npy");
    rc = tether(&o, "compile '%s/examples/kws/kws.json' -o art0 --pool sram", TETHER_SOURCE_DIR);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(o, "--pool sram has no size"));
    assert_false(exists("art0"));
    rc = tether(&o, "run '%s/examples/kws/kws.json' --device %s --pool fast --in mfcc.npy",
                TETHER_SOURCE_DIR, url);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(o, "--pool fast: the device has no such pool (its pools: sram, dram)"));
    /* compile: the report lists both pools and the spill */
    rc = tether(&o,
                "compile '%s/examples/kws/kws.json' -o art --pool sram:global:2K --pool "
                "dram:global:1M --json c.json",
                TETHER_SOURCE_DIR);
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "pool 'sram'"));
    assert_non_null(strstr(o, "spilled past the first pool"));
    cJSON *c = read_json("c.json");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(c, "pools")), 2);
    assert_true(num(c, "spilled") > 0);
    cJSON_Delete(c);
    rc = tether(&o, "run art --device %s --in mfcc.npy --out probs3.npy", url);
    if (rc) {
        fail_msg("%s", o);
    }
    /* refusals */
    struct {
        const char *args;
        int code;
        const char *want;
    } bad[] = {
        {"--pool fast:global:1M", 1,
         "pool 'fast', which the device does not have (its pools: "
         "sram, dram)"},
        {"--pool sram:global:1M", 1, "do not fit pool 'sram'"}, /* all ~7 KiB in sram */
        {"--pool sram:global:64", 1, "fits in no candidate pool"},
        {"--pool sram:global:1M --pin relu1.out=nosuch", 1, "no pool 'nosuch'"},
        {"--pool sram:global:1M --pin nosuch=sram", 1, "the model has no tensor 'nosuch'"},
        {"--pool sram:texture:1M", 2, "global pools"},
        {"--pool sram:global:1M --pool sram:global:2M", 2, "given twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        rc = tether(&o, "run '%s/examples/kws/kws.json' --device %s %s --in mfcc.npy",
                    TETHER_SOURCE_DIR, url, bad[i].args);
        if (rc != bad[i].code || !strstr(o, bad[i].want)) {
            fail_msg("%s: exit %d, output '%s' lacks '%s'", bad[i].args, rc, o, bad[i].want);
        }
    }
    /* tether plan shows the plan compile makes with the same options */
    rc = tether(&o,
                "plan '%s/examples/kws/kws.json' --pool sram:global:2K --pool dram:global:1M "
                "--plan-inputs --plan-outputs --pin relu1.out=dram --json=plan.json",
                TETHER_SOURCE_DIR);
    if (rc) {
        fail_msg("%s", o);
    }
    cJSON *pj = read_json("plan.json");
    int found = 0;
    cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItem(pj, "buffers")) {
        const char *bn = str(b, "name"), *bp = str(b, "pool");
        if (!strcmp(bn, "relu1.out")) {
            found += !strcmp(bp, "dram");
        }
        if (!strcmp(bn, "mfcc") || !strcmp(bn, "probs")) {
            found += 1; /* planned graph input and output */
        }
    }
    cJSON_Delete(pj);
    assert_int_equal(found, 3);
    rc = tether(&o, "plan '%s/examples/kws/kws.json' --pool sram:global:2K --pin relu1.out=dram",
                TETHER_SOURCE_DIR);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(o, "pinned to pool 'dram', which is not declared"));
    rc = tether(&o, "run art --device %s --pool sram:global:1M --in mfcc.npy", url);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(o, "apply to a MODEL"));
    stop_tetherd(td);
    g_tetherd = 0;
}
#endif

#ifdef TETHER_HAVE_COMPILER
/* A model with two named inputs (a, b) and outputs (s = a + b, p = a * b). */
static void write_two_io_model(void) {
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

static float g_a[6] = {0, 1, 2, 3, 4, 5}, g_b[6] = {2, 2, 2, -1, 0.5f, 3};

/* Checks array `name` of the archive (or the .npy file when name is NULL) against s or p. */
static void check_two_io(const char *file, const char *name, int product) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, file);
    tether_npy n;
    int rc = name ? tether_npz_read_member(p, name, &n) : tether_npy_read(p, &n);
    if (rc) {
        fail_msg("%s", tether_last_error());
    }
    assert_int_equal(n.nbytes, 24);
    assert_int_equal(n.shape[0], 2);
    for (int i = 0; i < 6; i++) {
        assert_true(((float *)n.data)[i] == (product ? g_a[i] * g_b[i] : g_a[i] + g_b[i]));
    }
    tether_npy_free(&n);
}

/* Progress: plain lines for logs and one redrawn line on a terminal, with rate and time left;
 * nothing for work that ends within the first second (the default). */
static void test_progress(void **state) {
    (void)state;
    write_two_io_model();
    const char *o;
    setenv("TETHER_PROGRESS", "lines", 1);
    setenv("TETHER_PROGRESS_AFTER_MS", "0", 1);
    setenv("TETHER_PROGRESS_EVERY_MS", "0", 1);
    int rc = tether(&o, "ab two.json --number 1 --repeat 3");
    if (rc) {
        fail_msg("%s", o);
    }
    /* 2 sides x (warm-up + 3 rounds) TIME requests */
    assert_non_null(strstr(o, "tether ab: measuring: 12% (1 of 8 TIMEs, "));
    assert_non_null(strstr(o, " TIMEs/s, "));
    assert_non_null(strstr(o, " s left)\n"));
    assert_non_null(strstr(o, "tether ab: measuring: done, 8 of 8 TIMEs in "));
    assert_non_null(strstr(o, "tether ab: copy to device: done, 24 B of 24 B in "));
    /* a big upload: bytes with binary units */
    char big[256];
    snprintf(big, sizeof big, "%s/big.so", g_dir);
    static uint8_t junk[3 << 20];
    memset(junk, 0x5a, sizeof junk);
    assert_int_equal(tether_file_write(big, junk, sizeof junk), 0);
    setenv("TETHER_UPLOAD_CACHE", "off", 1);
    assert_int_equal(tether(&o, "upload big.so"), 1); /* not an ELF: loading fails */
    assert_non_null(strstr(o, "tether upload: upload big.so: done, 3.0 MiB of 3.0 MiB in "));
    assert_non_null(strstr(o, " MiB/s)\n"));
    setenv("TETHER_PROGRESS", "tty", 1);
    rc = tether(&o, "ab two.json --number 1 --repeat 1");
    if (rc) {
        fail_msg("%s", o);
    }
    /* redrawn at most 10 times a second: the first and the last state are always drawn */
    assert_non_null(strstr(o, "\r\033[Kmeasuring  [#####...............]   25%  1 of 4 TIMEs  "));
    assert_non_null(strstr(o, "\r\033[Kmeasuring  [####################]  100%  4 of 4 TIMEs  "));
    unsetenv("TETHER_PROGRESS_AFTER_MS");
    unsetenv("TETHER_PROGRESS_EVERY_MS");
    unsetenv("TETHER_UPLOAD_CACHE");
    /* by default quick work shows nothing, and TETHER_PROGRESS=off never does */
    rc = tether(&o, "ab two.json --number 1 --repeat 1");
    assert_int_equal(rc, 0);
    assert_null(strstr(o, "measuring"));
    setenv("TETHER_PROGRESS", "off", 1);
    setenv("TETHER_PROGRESS_AFTER_MS", "0", 1);
    rc = tether(&o, "ab two.json --number 1 --repeat 1");
    assert_int_equal(rc, 0);
    assert_null(strstr(o, "measuring"));
    unsetenv("TETHER_PROGRESS");
    unsetenv("TETHER_PROGRESS_AFTER_MS");
}

/* Checks that g_dir/name is well-formed XML and renders (librsvg) to a PNG; returns its text. */
static char *rendered_svg(const char *name) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && xmllint --noout '%s' && rsvg-convert -o '%s.png' '%s' && "
             "head -c 8 '%s.png' | od -An -tx1 | grep -q '89 50 4e 47'",
             g_dir, name, name, name, name);
    if (system(cmd) != 0) {
        fail_msg("%s does not render", name);
    }
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    char *text;
    size_t len;
    if (tether_file_read_text(p, 1 << 22, &text, &len)) {
        fail_msg("%s", tether_last_error());
    }
    return text;
}

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *s = strstr(hay, needle); s; s = strstr(s + 1, needle)) {
        n++;
    }
    return n;
}

/* ab --svg, bench --svg and the planner's pictures (a plan, and one that does not fit) are
 * written, said, well-formed and render. */
static void test_pictures(void **state) {
    (void)state;
    write_two_io_model();
    const char *o;
    int rc = tether(&o, "ab two.json --number 2 --repeat 4 --svg ab.svg");
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "\nwrote ab.svg\n"));
    char *svg = rendered_svg("ab.svg");
    assert_int_equal(count_of(svg, "<circle class=\"rep\""), 8); /* 2 ABIs x 4 repeats */
    assert_non_null(strstr(svg, ">unpacked ABI</text>"));
    assert_non_null(strstr(svg, ">packed ABI</text>"));
    assert_non_null(strstr(svg, "code size: text bytes"));
    assert_non_null(strstr(svg, "measured high-water mark"));
    assert_non_null(strstr(svg, "(baseline)"));
    free(svg);
    if (tether(&o, "compile two.json -o art --quiet")) {
        fail_msg("%s", o);
    }
    write_f32("a6.npy", 6, 1);
    int64_t shape[2] = {2, 3};
    float v[6] = {1, 2, 3, 4, 5, 6};
    char p[256];
    snprintf(p, sizeof p, "%s/a.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 2, v), 0);
    rc = tether(&o, "bench art --in a.npy --in a.npy --number 3 --repeat 5 --svg bench.svg");
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "wrote bench.svg\n"));
    svg = rendered_svg("bench.svg");
    assert_int_equal(count_of(svg, "<circle class=\"rep\""), 5);
    assert_int_equal(count_of(svg, "<circle class=\"order\""), 5);
    assert_non_null(strstr(svg, "5 repeats of 3 calls"));
    free(svg);
    /* the planner: a plan with operator names and the caller's inputs/outputs ... */
    const char *kws = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    rc = tether(&o, "plan '%s' --svg kws.svg", kws);
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "wrote kws.svg"));
    svg = rendered_svg("kws.svg");
    /* after compile's passes for x86_64-linux: conv1 reads a padded copy of the input */
    assert_int_equal(count_of(svg, "<text class=\"op\""), 5);
    assert_non_null(strstr(svg, ">4 softmax<title>"));
    assert_non_null(strstr(svg, ">0 conv1.pad<title>"));
    assert_non_null(strstr(svg, ">1 conv1<title>"));
    assert_int_equal(count_of(svg, "<rect class=\"iobuf\""), 2);
    assert_non_null(strstr(svg, "<title>mfcc: graph input, 1960 bytes"));
    free(svg);
    /* ... and one that does not fit: exit 1, and the picture of why */
    const char *demo = TETHER_SOURCE_DIR "/examples/pools/pool_demo.json";
    rc = tether(&o, "plan '%s' --pool sram:global:200K --svg nofit.svg", demo);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(o, "fits in no candidate pool"));
    assert_non_null(strstr(o, "wrote nofit.svg (why the plan does not fit)"));
    svg = rendered_svg("nofit.svg");
    assert_non_null(strstr(svg, "Memory plan does not fit"));
    /* over at conv2.pad (r1 + its padded copy) and conv2 (the copy + r2), as compile plans */
    assert_int_equal(count_of(svg, "<rect class=\"over\""), 2);
    assert_non_null(strstr(svg, "conv2.pad"));
    assert_non_null(strstr(svg, "pool sram: 204800"));
    free(svg);
    /* compile names the files it wrote; a bad --svg path is refused before any work */
    rc = tether(&o, "compile two.json -o art2");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(o, "wrote art2/: "));
    assert_non_null(strstr(o, "libtether_model.so, metadata.json, report.json"));
    assert_int_equal(tether(&o, "ab two.json --svg nodir/x.svg"), 2);
    assert_non_null(strstr(o, "--svg: "));
    assert_int_equal(tether(&o, "bench art --in a.npy --in a.npy --svg art"), 2);
}

/* --in NAME=FILE, .npz inputs and outputs (tvmc's habits) on a model, an artifact, the reference
 * interpreter and ab; every refusal names the problem and writes nothing. */
static void test_named_and_npz(void **state) {
    (void)state;
    write_two_io_model();
    int64_t shape[2] = {2, 3};
    char p[256];
    snprintf(p, sizeof p, "%s/a.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 2, g_a), 0);
    snprintf(p, sizeof p, "%s/b.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 2, g_b), 0);
    /* an archive in the other order than the model's inputs */
    tether_npy arrays[2] = {{TETHER_FLOAT32, 2, {2, 3}, g_b, 24},
                            {TETHER_FLOAT32, 2, {2, 3}, g_a, 24}};
    const char *names[2] = {"b", "a"};
    snprintf(p, sizeof p, "%s/in.npz", g_dir);
    assert_int_equal(tether_npz_write(p, 2, names, arrays), 0);
    const char *o;
    int rc = tether(&o, "run two.json --in in.npz --out o.npz");
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "o.npz:s: float32 [2, 3]"));
    assert_non_null(strstr(o, "\nwrote o.npz\n"));
    check_two_io("o.npz", "s", 0);
    check_two_io("o.npz", "p", 1);
    /* by name in any order; only the named output is written */
    rc = tether(&o, "run two.json --in b=b.npy --in a=a.npy --out p=p.npy");
    if (rc) {
        fail_msg("%s", o);
    }
    check_two_io("p.npy", NULL, 1);
    assert_false(exists("out0.npy"));
    assert_non_null(strstr(o, "wrote p.npy\n"));
    /* the reference interpreter binds the same way */
    rc = tether(&o, "run --reference two.json --in in.npz --out ref.npz");
    if (rc) {
        fail_msg("%s", o);
    }
    check_two_io("ref.npz", "s", 0);
    check_two_io("ref.npz", "p", 1);
    /* an artifact: NAME=ARCHIVE takes the archive's array NAME; --json names the archive */
    if (tether(&o, "compile two.json -o art --quiet")) {
        fail_msg("%s", o);
    }
    rc = tether(&o, "run art --in b=in.npz --in a=in.npz --out art.npz --json run.json");
    if (rc) {
        fail_msg("%s", o);
    }
    check_two_io("art.npz", "p", 1);
    assert_non_null(strstr(o, "wrote art.npz, run.json\n"));
    cJSON *j = read_json("run.json");
    const cJSON *outs = cJSON_GetObjectItem(j, "outputs");
    assert_int_equal(cJSON_GetArraySize(outs), 2);
    assert_string_equal(str(cJSON_GetArrayItem(outs, 1), "name"), "p");
    assert_string_equal(str(cJSON_GetArrayItem(outs, 1), "file"), "art.npz");
    cJSON_Delete(j);
    rc = tether(&o, "bench art --in in.npz --number 2 --repeat 2 --out bench.npz");
    if (rc) {
        fail_msg("%s", o);
    }
    check_two_io("bench.npz", "s", 0);
    rc = tether(&o, "ab two.json --in in.npz --number 2 --repeat 1");
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "outputs equal the interpreter"));
    /* refusals (usage errors are found before any device is contacted) */
    assert_int_equal(tether(&o, "run two.json --device tcp://127.0.0.1:1 --in b=b.npy --in a.npy"),
                     2);
    assert_non_null(strstr(o, "some arguments are named"));
    assert_int_equal(tether(&o, "run two.json --device tcp://127.0.0.1:1 --in a=a.npy --in "
                                "a=b.npy"),
                     2);
    assert_non_null(strstr(o, "input 'a' is given twice (a.npy and b.npy)"));
    assert_int_equal(tether(&o, "run art --in c=b.npy --in a=a.npy --out x.npz"), 2);
    assert_non_null(strstr(o, "the model has no input 'c' (its inputs: a, b)"));
    assert_int_equal(tether(&o, "run art --in a=a.npy --out x.npz"), 2);
    assert_non_null(strstr(o, "input 'b' has no --in (give --in b=FILE)"));
    assert_int_equal(tether(&o, "run art --in in.npz --out q=q.npy"), 2);
    assert_non_null(strstr(o, "no output 'q' (its outputs: s, p)"));
    assert_int_equal(tether(&o, "run art --in c=in.npz"), 2);
    assert_non_null(strstr(o, "in.npz has 2 arrays and none is named 'c'"));
    assert_int_equal(tether(&o, "run art --in in.npz --out s=x.npz"), 2);
    assert_non_null(strstr(o, "an .npz output collects every output by name"));
    assert_int_equal(tether(&o, "run art --in in.npz --out x.npz --out y.npy"), 2);
    assert_non_null(strstr(o, "--out x.npz collects every output"));
    assert_int_equal(tether(&o, "run '%s' add_packed --in in.npz --out c.npy", TESTMOD_PATH), 2);
    assert_non_null(strstr(o, "a module function's arguments are positional"));
    assert_int_equal(tether(&o, "run art --in a.npy --in b.npy --out two.json.npz.bad/x.npz"), 1);
    assert_int_equal(tether(&o, "run art --in missing.npz"), 1);
    assert_non_null(strstr(o, "missing.npz"));
    assert_int_equal(tether(&o, "run art --in a.npy --in in.npz"), 2); /* mixed, expanded */
    assert_false(exists("x.npz"));
    assert_false(exists("q.npy"));
    assert_false(exists("c.npy"));
    /* names as ONNX and TensorFlow make them: ':' and '/' inside, in archives and NAME=FILE */
    snprintf(p, sizeof p, "%s/odd.json", g_dir);
    const char *odd =
        "{\"format\": \"tether-model\", \"version\": 1, \"tensors\": [{\"name\": \"x:0\", "
        "\"shape\": [2, 3]}, {\"name\": \"onnx::b/1\", \"shape\": [2, 3]}], \"inputs\": "
        "[\"x:0\", \"onnx::b/1\"], \"outputs\": [\"y/0\"], \"nodes\": [{\"name\": \"add\", "
        "\"op\": \"add\", \"inputs\": [\"x:0\", \"onnx::b/1\"], \"outputs\": [\"y/0\"]}]}\n";
    assert_int_equal(tether_file_write(p, odd, strlen(odd)), 0);
    const char *odd_names[2] = {"onnx::b/1", "x:0"};
    snprintf(p, sizeof p, "%s/odd.npz", g_dir);
    assert_int_equal(tether_npz_write(p, 2, odd_names, arrays), 0); /* b = g_b, x = g_a */
    rc = tether(&o, "run odd.json --in odd.npz --out odd-out.npz");
    if (rc) {
        fail_msg("%s", o);
    }
    check_two_io("odd-out.npz", "y/0", 0);
    rc = tether(&o, "run odd.json --in onnx::b/1=b.npy --in x:0=a.npy --out y/0=odd-y.npy");
    if (rc) {
        fail_msg("%s", o);
    }
    check_two_io("odd-y.npy", NULL, 0);
    /* a repeated run does not upload the library again (tetherd's upload cache) */
    char cache[256];
    snprintf(cache, sizeof cache, "%s/cache", g_dir);
    setenv("TETHER_UPLOAD_CACHE", cache, 1);
    for (int k = 0; k < 2; k++) {
        rc = tether(&o, "run art --in in.npz --out o.npz --json c%d.json", k);
        if (rc) {
            fail_msg("%s", o);
        }
        char name[16];
        snprintf(name, sizeof name, "c%d.json", k);
        cJSON *cj = read_json(name);
        assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(cj, "upload_cached")), k == 1);
        cJSON_Delete(cj);
    }
    rc = tether(&o, "upload art/libtether_model.so");
    unsetenv("TETHER_UPLOAD_CACHE");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(o, "(the device had these bytes: none sent)"));
}
#endif

#ifdef TETHER_HAVE_COMPILER
/* A TCP port on 127.0.0.1 that refuses connections: bound, not listening, held (so nobody else
 * takes it) until the caller closes *fd. */
static int refused_port(int *fd) {
    *fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    assert_true(*fd >= 0);
    assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &n), 0);
    return ntohs(a.sin_port);
}

/* Entries of a directory (without . and ..). */
static int dir_entries(const char *path) {
    DIR *d = opendir(path);
    int n = 0;
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    }
    closedir(d);
    return n;
}

/* run/bench/ab MODEL check every --in file against the model (exists, parses, dtype and shape of
 * the input it is for, the count) before anything is compiled or a device contacted: with a
 * device nobody listens on, the error is the input's, and no temporary directory (where a model
 * is compiled) is made. */
static void test_inputs_before_device(void **state) {
    (void)state;
    write_two_io_model();
    write_f32("short.npy", 3, 0.0f);
    int64_t shape[2] = {2, 3};
    char p[256];
    snprintf(p, sizeof p, "%s/a.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 2, g_a), 0);
    snprintf(p, sizeof p, "%s/b.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 2, g_b), 0);
    snprintf(p, sizeof p, "%s/bad.npy", g_dir);
    assert_int_equal(tether_file_write(p, "not an array", 12), 0);
    char tmpdir[256];
    snprintf(tmpdir, sizeof tmpdir, "%s/tmp", g_dir);
    assert_int_equal(mkdir(tmpdir, 0700), 0);
    setenv("TMPDIR", tmpdir, 1);
    int fd, port = refused_port(&fd);
    static const struct {
        const char *args;
        int code;
        const char *msg;
    } cases[] = {
        {"run two.json --in bad.npy --in b.npy", 1, "bad.npy: not a .npy file (bad magic)"},
        {"run two.json --in a=short.npy --in b=b.npy", 1,
         "short.npy: shape [3], but model input 'a' is [2,3]"},
        {"run two.json --in missing.npy --in b.npy", 1, "missing.npy"},
        {"run two.json --in a.npy", 2, "the model has 2 inputs, 1 --in given"},
        {"run two.json --in c=a.npy --in b=b.npy", 2, "the model has no input 'c'"},
        {"bench two.json --in a.npy --in short.npy", 1,
         "short.npy: shape [3], but model input 'b' is [2,3]"},
        {"ab two.json --in a.npy --in bad.npy", 1, "bad.npy: not a .npy file (bad magic)"},
        {"ab two.json --in short.npy --in b.npy", 1,
         "short.npy: shape [3], but model input 'a' is [2,3]"},
    };
    const char *o;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = tether(&o, "%s --device tcp://127.0.0.1:%d", cases[i].args, port);
        if (rc != cases[i].code || !strstr(o, cases[i].msg) || strstr(o, "connect")) {
            fail_msg("%s: exit %d: %s", cases[i].args, rc, o);
        }
        assert_int_equal(dir_entries(tmpdir), 0); /* nothing was compiled */
    }
    /* --reference: the same check, the same message */
    int rc = tether(&o, "run two.json --reference --in a=short.npy --in b=b.npy");
    assert_int_equal(rc, 1);
    assert_non_null(strstr(o, "short.npy: shape [3], but model input 'a' is [2,3]"));
    /* with good inputs the device is what fails: the check holds nothing else back */
    rc = tether(&o, "run two.json --in a.npy --in b.npy --device tcp://127.0.0.1:%d", port);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(o, "cannot connect"));
    close(fd);
    unsetenv("TMPDIR");
}

/* A decompression bomb as an .npz input (1 MB inflating to 1 GiB of float32) is refused from its
 * member's header, under a memory limit the old reader (which inflated the whole member first)
 * could not run in; the same commands run under that limit with real inputs. */
static void test_npz_bomb(void **state) {
    (void)state;
    write_two_io_model();
    int64_t shape[2] = {2, 3};
    char p[256];
    snprintf(p, sizeof p, "%s/b.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 2, g_b), 0);
    snprintf(p, sizeof p, "%s/a.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 2, g_a), 0);
    snprintf(p, sizeof p, "%s/bomb.npz", g_dir);
    uint64_t size =
        tt_write_npz_bomb(p, "a.npy", "<f4", (uint64_t)1 << 28, (uint64_t)1 << 30, UINT64_MAX);
    assert_true(size > 0 && size < (2u << 20));
    const char *o;
    if (tether(&o, "compile two.json -o art --quiet")) {
        fail_msg("%s", o);
    }
#ifdef TETHER_TEST_ASAN
    /* the sanitizer reserves terabytes of address space: limit its allocations instead */
    g_limit = "ASAN_OPTIONS=\"$ASAN_OPTIONS:allocator_may_return_null=1:max_allocation_size_mb="
              "256\"";
#else
    g_limit = "ulimit -v 400000 &&"; /* 400 MB of address space */
#endif
    static const char *const cmds[] = {"run art", "bench art --number 1 --repeat 1", "run two.json",
                                       "run two.json --reference",
                                       "ab two.json --number 1 --repeat 1"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        int rc = tether(&o, "%s --in a=bomb.npz --in b=b.npy", cmds[i]);
        if (rc != 1 || !strstr(o, "bomb.npz:a: shape [268435456], but model input 'a' is [2,3]")) {
            fail_msg("%s: exit %d: %s", cmds[i], rc, o);
        }
    }
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        int rc = tether(&o, "%s --in a=a.npy --in b=b.npy", cmds[i]);
        if (rc) {
            fail_msg("%s under the limit: exit %d: %s", cmds[i], rc, o);
        }
    }
    g_limit = "";
}

#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_usage_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_info_consistent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_help_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_outputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_module, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_artifact, setup, teardown),
#ifdef TETHER_HAVE_COMPILER
        cmocka_unit_test_setup_teardown(test_run_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_reference, setup, teardown),
        cmocka_unit_test_setup_teardown(test_named_and_npz, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inputs_before_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_npz_bomb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_progress, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pictures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ab, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ab_opencl_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_opencl_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_cleans_up, setup, teardown),
#ifdef TETHER_HAVE_COMPILER
        cmocka_unit_test_setup_teardown(test_tune, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tune_exhausted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pools_on_tetherd, setup, teardown),
#endif
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
