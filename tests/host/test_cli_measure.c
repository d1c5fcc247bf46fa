/*
 * test_host_cli (cli_common.h): measuring through the CLI: ab (both ABIs, the spread, the
 * ratio's interval and verdict, usage errors), ab --opencl and upload of OpenCL C (and its
 * refusal on a device without OpenCL), tune (records, resuming, the records driving compile and
 * run, an exhausted search space), interrupting ab (nothing left behind), two-pool models on a
 * tetherd with --pool, progress lines and the redrawn line, and the pictures (ab/bench --svg, the
 * planner's).
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_common.h"
#include "tether/file.h"

#ifdef TETHER_HAVE_COMPILER
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
void test_ab(void **state) {
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
void test_opencl_json(void **state) {
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
        assert_int_equal((int)num(s, "kernels"), 2); /* fc and softmax in one */
        check_latency(s, 4);
        check_ratio(cJSON_GetObjectItem(s, "latency_ratio"), w[i]);
    }
    cJSON_Delete(j);
}

/* ab --opencl against a tetherd without OpenCL (--no-opencl, on 127.0.0.1): refused with the
 * reason before anything is compiled. */
void test_ab_opencl_refused(void **state) {
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

/* tether tune on local: (tetherd): KWS's two workloads (conv, dense) x 2 trials into a log,
 * every record for the device's target and cpu; a rerun resumes (nothing measured again), more
 * trials add to it; compile/run with --tuning-log take the best records (all kernels tuned,
 * outputs still those of the reference) and say so; a log of another CPU is noted, a malformed
 * log refused naming the line, --tuning-log with a module refused. */
/* g_dir/small_kws.json: KWS's structure (conv2d 3x3 s2 + relu, flatten, dense with trans_b,
 * softmax) at a tenth of its size, so that a candidate, a whole -O3 build of the model, takes a
 * fraction of KWS's (test_tune builds 8; the README's tune line tunes KWS itself). */
static void write_small_kws(void) {
    char m[4096], p[256];
    int n = snprintf(m, sizeof m,
                     "{\"format\": \"tether-model\", \"version\": 1, \"tensors\": [{\"name\": "
                     "\"x\", \"shape\": [1, 1, 10, 6]}, {\"name\": \"w\", \"shape\": [4, 1, 3, "
                     "3], \"data\": [");
    for (int i = 0; i < 36; i++) {
        n += snprintf(m + n, sizeof m - (size_t)n, "%s%g", i ? ", " : "", (i * 7 % 11 - 5) / 10.0);
    }
    n += snprintf(m + n, sizeof m - (size_t)n,
                  "]}, {\"name\": \"b\", \"shape\": [4], \"data\": [0.1, -0.2, 0.3, 0]}, "
                  "{\"name\": \"fw\", \"shape\": [5, 60], \"data\": [");
    for (int i = 0; i < 300; i++) {
        n += snprintf(m + n, sizeof m - (size_t)n, "%s%g", i ? ", " : "", (i * 5 % 13 - 6) / 20.0);
    }
    n +=
        snprintf(m + n, sizeof m - (size_t)n,
                 "]}, {\"name\": \"fb\", \"shape\": [5], \"data\": [0, 0.1, 0.2, -0.1, 0.05]}], "
                 "\"inputs\": [\"x\"], \"outputs\": [\"probs\"], \"nodes\": [{\"name\": \"conv1\", "
                 "\"op\": \"conv2d\", \"inputs\": [\"x\", \"w\", \"b\"], \"outputs\": [\"c\"], "
                 "\"attrs\": {\"strides\": [2, 2], \"pads\": [1, 1, 1, 1]}}, {\"name\": \"relu1\", "
                 "\"op\": \"relu\", \"inputs\": [\"c\"], \"outputs\": [\"r\"]}, {\"name\": "
                 "\"flatten\", \"op\": \"flatten\", \"inputs\": [\"r\"], \"outputs\": [\"f\"]}, "
                 "{\"name\": \"fc\", \"op\": \"dense\", \"inputs\": [\"f\", \"fw\", \"fb\"], "
                 "\"outputs\": [\"o\"], \"attrs\": {\"trans_b\": true}}, {\"name\": \"softmax\", "
                 "\"op\": \"softmax\", \"inputs\": [\"o\"], \"outputs\": [\"probs\"]}]}\n");
    assert_true(n > 0 && (size_t)n < sizeof m);
    snprintf(p, sizeof p, "%s/small_kws.json", g_dir);
    assert_int_equal(tether_file_write(p, m, (size_t)n), 0);
}

void test_tune(void **state) {
    (void)state;
    const char *o;
    const char *kws = "small_kws.json";
    write_small_kws();
    /* (2 trials, then 3: each candidate is a gcc -O3 build of the model, most of this test's
     * time) */
    int rc = tether(&o, "tune '%s' --trials 2 --number 5 --repeat 3 --log t.json", kws);
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "2 workloads"));
    assert_non_null(strstr(o, "trial 2/2"));
    assert_non_null(strstr(o, "tuned 4 candidates"));
    assert_int_equal(count_lines_with("t.json", "\"workload\":\"conv2d "), 2);
    assert_int_equal(count_lines_with("t.json", "\"workload\":\"dense "), 2);
    assert_int_equal(count_lines_with("t.json", "\"target\":\"x86_64-linux\""), 4);
    rc = tether(&o, "tune '%s' --trials 2 --number 5 --repeat 3 --log t.json", kws);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(o, "2 of 2 trials in the log"));
    assert_non_null(strstr(o, "tuned 0 candidates"));
    rc = tether(&o, "tune '%s' --trials 3 --number 5 --repeat 3 --log t.json", kws);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(o, "tuned 2 candidates"));
    assert_int_equal(count_lines_with("t.json", "\"us\":"), 6);
    /* the records drive the kernels' schedules: run equals the reference */
    int64_t shape[] = {1, 1, 10, 6};
    float x[60];
    for (int i = 0; i < 60; i++) {
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
    assert_int_equal(a.shape[1], 5);
    for (int i = 0; i < 5; i++) {
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
void test_tune_exhausted(void **state) {
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

/* Entries of dir whose names start with prefix ("tether-": the CLI's, "tetherd-": sessions). */
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
void test_interrupt_cleans_up(void **state) {
    (void)state;
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s/tmpdir", g_dir);
    assert_int_equal(mkdir(tmp, 0700), 0);
    const int sigs[2] = {SIGINT, SIGTERM};
    for (int k = 0; k < 2; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            /* a test run in the background of a shell without job control inherits SIGINT
             * ignored, and tether keeps an ignored signal ignored (nohup): start from the
             * default so the interrupt is what is under test */
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
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
void test_pools_on_tetherd(void **state) {
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

/* Progress: plain lines for logs and one redrawn line on a terminal, with rate and time left;
 * nothing for work that ends within the first second (the default). */
void test_progress(void **state) {
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
void test_pictures(void **state) {
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

#endif
