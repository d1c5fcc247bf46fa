/*
 * The `tether` CLI as a process, against local: (tetherd spawned over stdio): info (--json),
 * upload, run MODULE FUNC, run ARTIFACT_DIR (a hand-made artifact around the test module),
 * bench, --help on every subcommand, and the exit codes and one-line reasons of bad usage,
 * unknown functions and dtype/shape mismatches.
 */
#include <dirent.h>
#include <fcntl.h>
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
#include "tether/npy.h"

#if defined(__SANITIZE_ADDRESS__)
#define TETHER_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TETHER_TEST_ASAN 1
#endif
#endif

static char g_dir[64];
static char g_out[256];

/* Runs `tether ARGS` in g_dir; returns the exit code, output (stdout+stderr) in a static buffer. */
static int tether(const char **out, const char *fmt, ...) {
    static char buf[65536];
    char args[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && TETHER_TETHERD='%s' '%s' %s > '%s' 2>&1", g_dir,
             TETHERD_PATH, TETHER_CLI, args, g_out);
    int st = system(cmd);
    FILE *f = fopen(g_out, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_f32(const char *name, int64_t n, float base) {
    float v[64];
    for (int i = 0; i < n; i++)
        v[i] = base + (float)i;
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, &n, 1, v), 0);
}

static void check_sum(const char *name) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    tether_npy n;
    if (tether_npy_read(p, &n))
        fail_msg("%s", tether_last_error());
    assert_int_equal(n.ndim, 1);
    assert_int_equal(n.shape[0], 16);
    for (int i = 0; i < 16; i++)
        assert_true(((float *)n.data)[i] == (float)i + (100.0f + (float)i));
    tether_npy_free(&n);
}

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/tcliXXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_out, sizeof g_out, "%s/out.txt", g_dir);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_info_help(void **state) {
    (void)state;
    const char *o;
    assert_int_equal(tether(&o, "info"), 0);
    assert_non_null(strstr(o, "scopes        global"));
    assert_int_equal(tether(&o, "info --json"), 0);
    assert_non_null(strstr(o, "\"pointer_bits\":"));
    assert_non_null(strstr(o, "\"auth_required\":\tfalse"));
    const char *cmds[] = {"info", "upload", "run", "bench"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(tether(&o, "%s --help", cmds[i]), 0);
        assert_non_null(strstr(o, "usage: tether"));
    }
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
    assert_non_null(strstr(o, "usage: plan-buffers"));
}

static void test_run_module(void **state) {
    (void)state;
    write_f32("a.npy", 16, 0);
    write_f32("b.npy", 16, 100);
    const char *o;
    assert_int_equal(tether(&o, "upload '%s' --name m", TESTMOD_PATH), 0);
    assert_non_null(strstr(o, "8 functions"));
    int rc = tether(&o, "run '%s' add_packed --in a.npy --in b.npy --out c.npy", TESTMOD_PATH);
    if (rc)
        fail_msg("%s", o);
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
    if (rc)
        fail_msg("%s", o);
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
    if (rc)
        fail_msg("%s", o);
    assert_non_null(strstr(o, "add_packed: returned 0"));
    check_sum("y.npy");
    assert_int_equal(tether(&o, "run art --in a.npy"), 2);
    assert_non_null(strstr(o, "2 inputs, 1 --in given"));
    write_f32("short.npy", 8, 0);
    assert_int_equal(tether(&o, "run art --in a.npy --in short.npy"), 1);
    assert_non_null(strstr(o, "shape [8], but model input 'b' is [16]"));
    assert_int_equal(tether(&o, "run art func --in a.npy --in b.npy"), 2);
}

#ifdef TETHER_HAVE_COMPILER
/* A model file is compiled through the compiler API and run; the KWS example ends in softmax. */
static void test_run_model(void **state) {
    (void)state;
    int64_t shape[] = {1, 1, 49, 10};
    float x[490];
    for (int i = 0; i < 490; i++)
        x[i] = (float)((i * 37) % 100) / 100.0f;
    char p[256];
    snprintf(p, sizeof p, "%s/mfcc.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 4, x), 0);
    const char *o;
    int rc = tether(&o, "run '%s/examples/kws/kws.json' --in mfcc.npy --out probs.npy",
                    TETHER_SOURCE_DIR);
    if (rc)
        fail_msg("%s", o);
    snprintf(p, sizeof p, "%s/probs.npy", g_dir);
    tether_npy n;
    assert_int_equal(tether_npy_read(p, &n), 0);
    assert_int_equal(n.ndim, 2);
    assert_int_equal(n.shape[1], 12);
    double sum = 0;
    for (int i = 0; i < 12; i++)
        sum += ((float *)n.data)[i];
    assert_true(sum > 0.999 && sum < 1.001);
    tether_npy_free(&n);
    assert_int_equal(tether(&o, "run '%s/tests/compiler/bad_models/bad_dtype.json' --in mfcc.npy",
                            TETHER_SOURCE_DIR),
                     1);
    assert_non_null(strstr(o, "float33"));
}

static tether_npy read_npy(const char *name) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    tether_npy n;
    if (tether_npy_read(p, &n))
        fail_msg("%s", tether_last_error());
    return n;
}

/* run --reference (host interpreter) agrees with the compiled model run on the device. */
static void test_run_reference(void **state) {
    (void)state;
    int64_t shape[] = {1, 1, 49, 10};
    float x[490];
    for (int i = 0; i < 490; i++)
        x[i] = (float)((i * 53) % 97) / 50.0f - 1.0f;
    char p[256];
    snprintf(p, sizeof p, "%s/mfcc.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 4, x), 0);
    const char *o;
    const char *kws = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    if (tether(&o, "run --reference '%s' --in mfcc.npy --out ref.npy", kws))
        fail_msg("%s", o);
    assert_non_null(strstr(o, "reference interpreter"));
    if (tether(&o, "run '%s' --in mfcc.npy --out dev.npy", kws))
        fail_msg("%s", o);
    tether_npy a = read_npy("ref.npy"), b = read_npy("dev.npy");
    assert_int_equal(a.nbytes, 48);
    assert_int_equal(b.nbytes, 48);
    for (int i = 0; i < 12; i++)
        assert_float_equal(((float *)a.data)[i], ((float *)b.data)[i], 1e-5);
    tether_npy_free(&a);
    tether_npy_free(&b);
    /* a params blob of the wrong size is refused before the device runs anything (the unpacked
     * ABI could not tell) */
    if (tether(&o, "compile '%s' -o blob --params blob --quiet", kws))
        fail_msg("%s", o);
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
    if (tether(&o, "compile '%s' -o nobuild --no-build --quiet", kws))
        fail_msg("%s", o);
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
    if (rc)
        fail_msg("%s", o);
    assert_int_equal(lstat("/dev/null", &after), 0);
    assert_true(S_ISCHR(after.st_mode));
    assert_int_equal(before.st_rdev, after.st_rdev);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -f real.npy link.npy && ln -s real.npy link.npy",
             g_dir);
    assert_int_equal(system(cmd), 0);
    rc = tether(&o, "run '%s' add_packed --in a.npy --in b.npy --out link.npy", TESTMOD_PATH);
    if (rc)
        fail_msg("%s", o);
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

/* ab: both ABIs compiled, run on local:, equal to the interpreter, JSON written; the unpacked
 * build uses less code and stack than the packed one (the point of the unpacked ABI). */
static void test_ab(void **state) {
    (void)state;
    const char *o;
    const char *kws = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    int rc = tether(&o, "ab '%s' -o abdir --json ab.json --number 2 --repeat 2", kws);
    if (rc)
        fail_msg("%s", o);
    assert_non_null(strstr(o, "outputs equal the interpreter"));
    char p[256];
    snprintf(p, sizeof p, "%s/ab.json", g_dir);
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    static char txt[16384];
    size_t n = fread(txt, 1, sizeof txt - 1, f);
    fclose(f);
    txt[n] = 0;
    cJSON *j = cJSON_Parse(txt);
    assert_non_null(j);
    cJSON *abis = cJSON_GetObjectItem(j, "abis");
    assert_int_equal(cJSON_GetArraySize(abis), 2);
    cJSON *u = cJSON_GetArrayItem(abis, 0), *k = cJSON_GetArrayItem(abis, 1);
    assert_string_equal(cJSON_GetObjectItem(u, "abi")->valuestring, "unpacked");
    assert_string_equal(cJSON_GetObjectItem(k, "abi")->valuestring, "packed");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(u, "outputs_equal")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(k, "outputs_equal")));
    double uc = cJSON_GetObjectItem(u, "code")->valuedouble;
    double kc = cJSON_GetObjectItem(k, "code")->valuedouble;
    double uh = cJSON_GetObjectItem(u, "stack_hwm")->valuedouble;
    double kh = cJSON_GetObjectItem(k, "stack_hwm")->valuedouble;
    assert_true(uc > 0 && uc < kc);
#ifdef TETHER_TEST_ASAN
    /* under AddressSanitizer tetherd's calls carry the sanitizer's own stack use, which hides
     * the difference between the ABIs: only check that both were measured */
    assert_true(uh > 0 && kh > 0);
#else
    assert_true(uh > 0 && uh < kh);
#endif
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(u, "static_stack")));
    assert_true(cJSON_GetObjectItem(u, "latency_median_us")->valuedouble > 0);
    assert_int_equal((int)cJSON_GetObjectItem(u, "repeat")->valuedouble, 2);
    cJSON_Delete(j);
    /* the artifacts and the generated input stay in -o DIR */
    snprintf(p, sizeof p, "%s/abdir/packed/metadata.json", g_dir);
    assert_int_equal(access(p, F_OK), 0);
    snprintf(p, sizeof p, "%s/abdir/input_0.npy", g_dir);
    assert_int_equal(access(p, F_OK), 0);
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
    assert_int_equal(tether(&o, "ab '%s' --repeat 99", kws), 2);
    assert_int_equal(tether(&o, "ab '%s' --json /nonexistent/ab.json", kws), 2);
    assert_null(strstr(o, "A/B of")); /* refused before any work */
    assert_int_equal(tether(&o, "ab '%s' --device http://x", kws), 2);
    /* an artifact for another architecture is refused before it is uploaded */
    if (system("aarch64-linux-gnu-gcc --version > /dev/null 2>&1") == 0) {
        assert_int_equal(tether(&o, "ab '%s' --target aarch64-linux --number 1 --repeat 1", kws),
                         1);
        assert_non_null(strstr(o, "was compiled for aarch64-linux, but the device is"));
    }
    assert_int_equal(tether(&o, "ab --help"), 0);
}
#endif

#ifdef TETHER_HAVE_COMPILER
/* Entries of dir whose names start with prefix ("tether-": the CLI's, "tetherd-": sessions). */
static int count_dirs(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
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
                  "--number", "2000", "--repeat", "20", (char *)NULL);
            _exit(127);
        }
        /* wait until the temporary directory exists, then interrupt */
        for (int i = 0; i < 500 && count_dirs(tmp, "tether-") == 0; i++)
            usleep(10 * 1000);
        assert_int_equal(count_dirs(tmp, "tether-"), 1);
        usleep(200 * 1000);
        kill(pid, sigs[k]);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFSIGNALED(st));
        assert_int_equal(WTERMSIG(st), sigs[k]);
        assert_int_equal(count_dirs(tmp, "tether-"), 0);
        /* the spawned tetherd (local:) ends its session and removes its directory too */
        for (int i = 0; i < 300 && count_dirs(tmp, "tetherd-") > 0; i++)
            usleep(10 * 1000);
        assert_int_equal(count_dirs(tmp, "tetherd-"), 0);
    }
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_info_help, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_module, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_artifact, setup, teardown),
#ifdef TETHER_HAVE_COMPILER
        cmocka_unit_test_setup_teardown(test_run_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_reference, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ab, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_cleans_up, setup, teardown),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
