/*
 * Per-node profiling (tether/profile.h, `tether profile`, docs/profile.md) on a tetherd started
 * here on 127.0.0.1: the KWS example and the operator zoo compiled with --profile in both ABIs
 * (and for OpenCL when the device has it) give one record per node with code, each with a time,
 * shapes and its kernel; the node times sum to within 10% of the profiled call's own time; the
 * profiling build's source holds every line of the plain build's (same kernels, schedules and
 * plan, only clock readings added); the trace is trace-event JSON with one "X" event per node
 * call and the JSON report follows its schema; an artifact compiled without --profile is refused
 * by the library and by the CLI with a message saying how to get one; a damaged "profile"
 * object is refused with a message, never read as figures.
 * usage: test_profile   (TETHERD_PATH, TETHER_CLI and the source dir are compiled in)
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "ops_common.h"
#include "tether/artifact.h"
#include "tether/compiler.h"
#include "tether/crt.h"
#include "tether/file.h"
#include "tether/profile.h"

static char g_dir[256], g_url[128];
static pid_t g_tetherd;

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/tether-profile-XXXXXX");
    if (!mkdtemp(g_dir)) {
        return -1;
    }
    char pf[300], cmd[1024];
    snprintf(pf, sizeof pf, "%s/port", g_dir);
    snprintf(cmd, sizeof cmd, "exec '%s' --tcp 127.0.0.1:0 --port-file '%s' --quiet", TETHERD_PATH,
             pf);
    g_tetherd = fork();
    if (g_tetherd == 0) {
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
                snprintf(g_url, sizeof g_url, "tcp://127.0.0.1:%d", port);
                return 0;
            }
        }
        usleep(10000);
    }
    return -1;
}

static int teardown(void **state) {
    (void)state;
    if (g_tetherd > 0) {
        kill(g_tetherd, SIGTERM);
        waitpid(g_tetherd, NULL, 0);
    }
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static tether_session *open_session(void) {
    tether_session *s = NULL;
    if (tether_session_open(&s, g_url, NULL) != 0) {
        fail_msg("session: %s", tether_last_error());
    }
    return s;
}

/* Compiles the model (a JSON file, or the zoo when model is NULL) into g_dir/name; profile 2:
 * the sources of a plain build only (no library: what assert_same_kernels compares). */
static void compile(const char *model, const char *name, tether_abi abi, int opencl, int profile,
                    char *dir, size_t n) {
    snprintf(dir, n, "%s/%s", g_dir, name);
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.codegen.abi = abi;
    o.backend = opencl ? TETHER_BACKEND_OPENCL : TETHER_BACKEND_C;
    o.profile = profile == 1;
    o.build_library = profile != 2;
    int rc;
    if (model) {
        rc = tether_compile_model(model, dir, &o, NULL);
    } else {
        tether_ir_graph g;
        tt_build_zoo(&g);
        rc = tether_compile_graph(&g, dir, &o, NULL);
        tether_ir_close(&g);
    }
    if (rc != 0) {
        fail_msg("compile %s: %s", name, tether_error_detail());
    }
}

/* The node functions of a C artifact in registry order (metadata "functions" without the entry,
 * set_params and profile), or an OpenCL artifact's steps with a node. */
static int expected_nodes(const char *dir, int opencl, char names[][128], int max) {
    char path[400];
    snprintf(path, sizeof path, "%s/metadata.json", dir);
    char *text = NULL;
    size_t len;
    assert_int_equal(tether_file_read_text(path, 1 << 24, &text, &len), 0);
    cJSON *m = cJSON_Parse(text);
    free(text);
    assert_non_null(m);
    int n = 0;
    const cJSON *x;
    if (opencl) {
        cJSON_ArrayForEach(x, cJSON_GetObjectItem(m, "steps")) {
            const cJSON *nd = cJSON_GetObjectItem(x, "node");
            if (cJSON_IsString(nd) && n < max) {
                snprintf(names[n++], 128, "%s", nd->valuestring);
            }
        }
    } else {
        cJSON_ArrayForEach(x, cJSON_GetObjectItem(m, "functions")) {
            const char *f = cJSON_GetStringValue(cJSON_GetObjectItem(x, "name"));
            size_t fl = strlen(f);
            if ((fl > 5 && !strcmp(f + fl - 5, "_main")) ||
                (fl > 11 && !strcmp(f + fl - 11, "_set_params")) ||
                (fl > 8 && !strcmp(f + fl - 8, "_profile")) || n >= max) {
                continue;
            }
            snprintf(names[n++], 128, "%s", f);
        }
    }
    cJSON_Delete(m);
    return n;
}

/* Runs the profile of dir (runs times) and checks the records against the metadata. */
static void check_profile(tether_session *s, const char *dir, int opencl, int runs,
                          tether_profile *p) {
    tether_artifact *a = NULL;
    assert_int_equal(tether_artifact_open(dir, &a), 0);
    assert_true(tether_artifact_profiled(a));
    if (tether_artifact_prepare(a, s, NULL) != 0) {
        fail_msg("prepare %s: %s", dir, tether_last_error());
    }
    const void *ins[TETHER_ARTIFACT_MAX_IO];
    void *outs[TETHER_ARTIFACT_MAX_IO];
    for (int i = 0; i < tether_artifact_num_inputs(a); i++) {
        tether_artifact_io io;
        tether_artifact_io_of(a, 0, i, &io);
        float *v = calloc(1, io.nbytes + 4);
        for (size_t k = 0; k < io.nbytes / 4; k++) {
            v[k] = (float)((k * 7) % 13) / 13.0f - 0.5f;
        }
        ins[i] = v;
    }
    for (int i = 0; i < tether_artifact_num_outputs(a); i++) {
        tether_artifact_io io;
        tether_artifact_io_of(a, 1, i, &io);
        outs[i] = calloc(1, io.nbytes + 4);
    }
    if (tether_artifact_profile(a, ins, outs, runs, p) != 0) {
        fail_msg("profile %s: %s", dir, tether_last_error());
    }
    char names[128][128];
    int n = expected_nodes(dir, opencl, names, 128);
    assert_true(n > 0);
    assert_int_equal(p->nnodes, n);
    assert_int_equal(p->runs, runs);
    assert_int_equal(p->opencl, opencl);
    double sum = 0;
    for (int i = 0; i < n; i++) {
        const tether_profile_node *nd = &p->nodes[i];
        if (opencl) {
            assert_string_equal(nd->name, names[i]);
        } else {
            assert_string_equal(nd->kernel, names[i]);
        }
        assert_true(nd->median_ns > 0);
        assert_non_null(strstr(nd->shapes, " -> "));
        assert_true(nd->op[0] != 0);
        assert_true(nd->bytes_out > 0);
        sum += nd->share;
        for (int r = 0; r < runs; r++) {
            assert_true(p->node_ns[r * n + i] > 0);
            assert_true(p->start_ns[r * n + i] >= 0);
        }
    }
    assert_true(sum > 0.999 && sum < 1.001);
    /* the nodes are timed inside the call: in every run their sum is
     * positive and at most that run's own call time (with slack for two
     * clocks, the node clock and the call clock). How close the two are is
     * timing, reported by the bench, not
     * asserted here. */
    assert_true(p->call_median_ns > 0);
    assert_true(p->sum_median_ns > 0);
    for (int r = 0; r < runs; r++) {
        double run_sum = 0;
        for (int i = 0; i < n; i++) {
            run_sum += p->node_ns[r * n + i];
        }
        assert_true(run_sum > 0);
        if (!opencl) {
            assert_true(run_sum <= p->call_ns[r] * 1.05 + 1000.0);
        }
    }
    for (int i = 0; i < tether_artifact_num_inputs(a); i++) {
        free((void *)ins[i]);
    }
    for (int i = 0; i < tether_artifact_num_outputs(a); i++) {
        free(outs[i]);
    }
    tether_artifact_free(a);
}

static cJSON *read_json(const char *path) {
    char *text = NULL;
    size_t len;
    assert_int_equal(tether_file_read_text(path, 1 << 26, &text, &len), 0);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    return j;
}

/* The trace: one complete ("X") event per node call, on one track, in microseconds. */
static void check_trace(const tether_profile *p, const char *path) {
    assert_int_equal(tether_profile_write_trace(p, path), 0);
    cJSON *t = read_json(path);
    const cJSON *ev = cJSON_GetObjectItem(t, "traceEvents"), *e;
    assert_true(cJSON_IsArray(ev));
    int x = 0, meta = 0;
    cJSON_ArrayForEach(e, ev) {
        const char *ph = cJSON_GetStringValue(cJSON_GetObjectItem(e, "ph"));
        assert_non_null(ph);
        if (!strcmp(ph, "M")) {
            meta++;
            continue;
        }
        assert_string_equal(ph, "X");
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(e, "name"));
        assert_string_equal(name, p->nodes[x % p->nnodes].name);
        assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(e, "ts")) >= 0);
        assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(e, "dur")) > 0);
        assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(e, "tid")), 1);
        assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(e, "pid")), 1);
        x++;
    }
    assert_int_equal(x, p->runs * p->nnodes);
    assert_int_equal(meta, 2); /* the process and its one queue named */
    cJSON_Delete(t);
}

static void check_json(const tether_profile *p, const char *path) {
    assert_int_equal(tether_profile_write_json(p, path), 0);
    cJSON *j = read_json(path);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "format")), "tether-profile");
    assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "version")), 1);
    const cJSON *nodes = cJSON_GetObjectItem(j, "nodes");
    assert_int_equal(cJSON_GetArraySize(nodes), p->nnodes);
    for (int i = 0; i < p->nnodes; i++) {
        const cJSON *x = cJSON_GetArrayItem(nodes, i);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(x, "name")), p->nodes[i].name);
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(x, "ns")), p->runs);
        assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(x, "median_ns")) > 0);
    }
    cJSON_Delete(j);
}

/* Every line of the plain build's source is in the profiling build's, in order (but the
 * registry's count). */
static void assert_same_kernels(const char *plain_dir, const char *prof_dir) {
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/tether_model.c", plain_dir);
    snprintf(b, sizeof b, "%s/tether_model.c", prof_dir);
    char *x = NULL, *y = NULL;
    size_t xl, yl;
    assert_int_equal(tether_file_read_text(a, 1 << 26, &x, &xl), 0);
    assert_int_equal(tether_file_read_text(b, 1 << 26, &y, &yl), 0);
    char *save = NULL, *at = y;
    int lines = 0, kernels = 0;
    for (char *l = strtok_r(x, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (strstr(l, "tether_module_registry = {tg_entries, ")) {
            continue; /* the registry has one more function, <prefix>_profile */
        }
        char *found = strstr(at, l);
        if (!found) {
            fail_msg("plain line not in the profiling build: %s", l);
        }
        at = found + strlen(l);
        lines++;
        kernels += strncmp(l, "static __attribute__((noinline)) void tgk_", 42) == 0;
    }
    assert_true(lines > 50);
    assert_true(kernels > 0);
    assert_non_null(strstr(y, "tether_platform_cycles()"));
    free(x);
    free(y);
}

static void test_c_kws_and_zoo(void **state) {
    (void)state;
    char model[512], dir[400], plain[400];
    snprintf(model, sizeof model, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
    tether_session *s = open_session();
    const tether_abi abis[2] = {TETHER_ABI_UNPACKED, TETHER_ABI_PACKED};
    for (int k = 0; k < 2; k++) {
        for (int zoo = 0; zoo < 2; zoo++) {
            char name[64], pname[80];
            snprintf(name, sizeof name, "%s-%s", zoo ? "zoo" : "kws", k ? "packed" : "unpacked");
            compile(zoo ? NULL : model, name, abis[k], 0, 1, dir, sizeof dir);
            snprintf(pname, sizeof pname, "%s-plain", name);
            compile(zoo ? NULL : model, pname, abis[k], 0, 2, plain, sizeof plain); /* source */
            assert_same_kernels(plain, dir);
            tether_profile p;
            check_profile(s, dir, 0, 9, &p);
            assert_false(p.stack); /* tetherd: no per-node stack */
            assert_true(p.clock_hz == 1e9);
            char path[500];
            snprintf(path, sizeof path, "%s/%s.trace.json", g_dir, name);
            check_trace(&p, path);
            snprintf(path, sizeof path, "%s/%s.json", g_dir, name);
            check_json(&p, path);
            snprintf(path, sizeof path, "%s/%s.svg", g_dir, name);
            assert_int_equal(tether_profile_write_svg(&p, path), 0);
            printf("%s: %d nodes, sum %.1f us of the call's %.1f us\n", name, p.nnodes,
                   p.sum_median_ns / 1e3, p.call_median_ns / 1e3);
            tether_profile_free(&p);
        }
    }
    tether_session_close(s);
}

static void test_opencl(void **state) {
    (void)state;
    tether_session *s = open_session();
    if (!tether_session_info(s)->opencl) {
        tether_session_close(s);
        skip();
    }
    char model[512], dir[400];
    snprintf(model, sizeof model, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
    for (int zoo = 0; zoo < 2; zoo++) {
        compile(zoo ? NULL : model, zoo ? "zoo-cl" : "kws-cl", TETHER_ABI_UNPACKED, 1, 1, dir,
                sizeof dir);
        tether_profile p;
        check_profile(s, dir, 1, 3, &p);
        assert_true(p.opencl);
        char path[500];
        snprintf(path, sizeof path, "%s/cl-%d.trace.json", g_dir, zoo);
        check_trace(&p, path);
        printf("OpenCL %s: %d nodes, sum %.1f us\n", zoo ? "zoo" : "kws", p.nnodes,
               p.sum_median_ns / 1e3);
        tether_profile_free(&p);
    }
    tether_session_close(s);
}

/* An artifact compiled without --profile: the library and the CLI refuse it, saying how. */
static void test_refused(void **state) {
    (void)state;
    char model[512], dir[400];
    snprintf(model, sizeof model, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
    compile(model, "refused", TETHER_ABI_UNPACKED, 0, 0, dir, sizeof dir);
    tether_session *s = open_session();
    tether_artifact *a = NULL;
    assert_int_equal(tether_artifact_open(dir, &a), 0);
    assert_false(tether_artifact_profiled(a));
    assert_int_equal(tether_artifact_prepare(a, s, NULL), 0);
    tether_profile p;
    float in[490] = {0}, out[12];
    const void *ins[1] = {in};
    void *outs[1] = {out};
    assert_int_equal(tether_artifact_profile(a, ins, outs, 3, &p), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "not a profiling build"));
    assert_non_null(strstr(tether_last_error(), "--profile"));
    assert_int_equal(p.nnodes, 0);
    tether_artifact_free(a);
    tether_session_close(s);
    /* the CLI: exit 1, the message on stderr, no report written */
    char cmd[2048], err[400], trace[400];
    snprintf(err, sizeof err, "%s/refused.err", g_dir);
    snprintf(trace, sizeof trace, "%s/refused.trace.json", g_dir);
    snprintf(cmd, sizeof cmd, "'%s' profile '%s' --device %s --trace '%s' 2>'%s' >/dev/null",
             TETHER_CLI, dir, g_url, trace, err);
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    char *text = NULL;
    size_t len;
    assert_int_equal(tether_file_read_text(err, 1 << 16, &text, &len), 0);
    assert_non_null(strstr(text, "tether profile: "));
    assert_non_null(strstr(text, "is not a profiling build"));
    assert_non_null(strstr(text, "tether compile --profile"));
    free(text);
    assert_int_equal(access(trace, F_OK), -1);
}

/* Rewrites dir's metadata.json with its "profile" object changed by edit. */
static void edit_profile(const char *dir, void (*edit)(cJSON *p)) {
    char path[500];
    snprintf(path, sizeof path, "%s/metadata.json", dir);
    cJSON *m = read_json(path);
    edit(cJSON_GetObjectItem(m, "profile"));
    char *text = cJSON_Print(m);
    assert_int_equal(tether_file_write(path, text, strlen(text)), 0);
    free(text);
    cJSON_Delete(m);
}

static void drop_node(cJSON *p) { /* the last: the slots stay in order, the table is larger */
    cJSON *n = cJSON_GetObjectItem(p, "nodes");
    cJSON_DeleteItemFromArray(n, cJSON_GetArraySize(n) - 1);
}

static void nodes_not_array(cJSON *p) {
    cJSON_ReplaceItemInObject(p, "nodes", cJSON_CreateNumber(5));
}

static void slot_wrong(cJSON *p) {
    cJSON *n = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "nodes"), 1);
    cJSON_ReplaceItemInObject(n, "slot", cJSON_CreateNumber(7));
}

/* A damaged "profile" object: refused with a message naming it, never a wrong figure. */
static void test_damaged_metadata(void **state) {
    (void)state;
    char model[512], dir[400];
    snprintf(model, sizeof model, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
    tether_session *s = open_session();
    void (*edits[3])(cJSON *) = {drop_node, nodes_not_array, slot_wrong};
    const char *says[3] = {"no profile table of", "profile needs nodes", "needs slot 1"};
    /* one profiling build; each case edits the metadata.json it wrote, restored in between */
    compile(model, "damaged", TETHER_ABI_UNPACKED, 0, 1, dir, sizeof dir);
    char mpath[500], *orig = NULL;
    size_t olen;
    snprintf(mpath, sizeof mpath, "%s/metadata.json", dir);
    assert_int_equal(tether_file_read_text(mpath, 1 << 24, &orig, &olen), 0);
    for (int k = 0; k < 3; k++) {
        FILE *f = fopen(mpath, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(orig, 1, olen, f), olen);
        assert_int_equal(fclose(f), 0);
        edit_profile(dir, edits[k]);
        tether_artifact *a = NULL;
        int rc = tether_artifact_open(dir, &a);
        if (rc == 0) {
            assert_int_equal(tether_artifact_prepare(a, s, NULL), 0);
            float in[490] = {0}, out[12];
            const void *ins[1] = {in};
            void *outs[1] = {out};
            tether_profile p;
            rc = tether_artifact_profile(a, ins, outs, 2, &p);
            assert_int_equal(p.nnodes, 0);
            tether_artifact_free(a);
        }
        assert_true(rc < 0);
        if (!strstr(tether_last_error(), says[k])) {
            fail_msg("case %d: '%s' does not say '%s'", k, tether_last_error(), says[k]);
        }
    }
    free(orig);
    tether_session_close(s);
}

/* The CLI on a MODEL: the table, the plain artifact beside it, the files. */
static void test_cli_model(void **state) {
    (void)state;
    char cmd[2048], out[400], trace[400], json[400];
    snprintf(out, sizeof out, "%s/cli.out", g_dir);
    snprintf(trace, sizeof trace, "%s/cli.trace.json", g_dir);
    snprintf(json, sizeof json, "%s/cli.json", g_dir);
    snprintf(cmd, sizeof cmd,
             "'%s' profile '%s/examples/kws/kws.json' --device %s --runs 5 --trace '%s' --json "
             "'%s' >'%s' 2>&1",
             TETHER_CLI, TETHER_SOURCE_DIR, g_url, trace, json, out);
    int st = system(cmd);
    char *text = NULL;
    size_t len;
    assert_int_equal(tether_file_read_text(out, 1 << 16, &text, &len), 0);
    printf("%s", text);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_non_null(strstr(text, "conv1 "));
    assert_non_null(strstr(text, "softmax "));
    assert_non_null(strstr(text, "sum of nodes "));
    assert_non_null(strstr(text, "plain artifact "));
    assert_non_null(strstr(text, "instrumentation overhead "));
    free(text);
    cJSON *j = read_json(json);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "plain_ns")) > 0);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(j, "overhead")));
    int n = cJSON_GetArraySize(cJSON_GetObjectItem(j, "nodes"));
    cJSON_Delete(j);
    cJSON *t = read_json(trace);
    int x = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(t, "traceEvents")) {
        x += !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "ph")), "X");
    }
    assert_int_equal(x, 5 * n);
    cJSON_Delete(t);
    /* run --profile: one run */
    snprintf(cmd, sizeof cmd,
             "'%s' run '%s/examples/kws/kws.json' --profile --no-plain --device %s --json '%s' "
             ">'%s' 2>&1",
             TETHER_CLI, TETHER_SOURCE_DIR, g_url, json, out);
    st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    j = read_json(json);
    assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "runs")), 1);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "plain_ns")));
    cJSON_Delete(j);
    /* ab --profile: every node of both ABIs' profiling builds, side by side */
    snprintf(cmd, sizeof cmd,
             "'%s' ab '%s/examples/kws/kws.json' --profile --repeat 3 --min-repeat-ms 5 --device "
             "%s >'%s' 2>&1",
             TETHER_CLI, TETHER_SOURCE_DIR, g_url, out);
    st = system(cmd);
    assert_int_equal(tether_file_read_text(out, 1 << 16, &text, &len), 0);
    printf("%s", text);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    const char *per = strstr(text, "per node (profiling builds");
    assert_non_null(per);
    assert_non_null(strstr(per, "unpacked ABI"));
    assert_non_null(strstr(per, "packed ABI"));
    const char *nodes[] = {"\nconv1 ", "\nfc ", "\nsoftmax ", "\nsum of nodes "};
    for (int i = 0; i < 4; i++) {
        assert_non_null(strstr(per, nodes[i]));
    }
    free(text);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    unsetenv("TETHER_DEVICE");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_c_kws_and_zoo), cmocka_unit_test(test_opencl),
        cmocka_unit_test(test_refused),       cmocka_unit_test(test_damaged_metadata),
        cmocka_unit_test(test_cli_model),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
