/*
 * The `tether` CLI as a process, against local: (tetherd spawned over stdio), in three files
 * with one main (cli_common.h): this one holds main and the commands on the test module: info
 * (--json), upload, run MODULE FUNC, run ARTIFACT_DIR (a hand-made artifact around the test
 * module), bench, --json of each, --help on every subcommand, and the exit codes and one-line
 * reasons of bad usage, unknown functions and dtype/shape mismatches. test_cli_model.c and
 * test_cli_measure.c hold the tests that need the compiler.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_common.h"
#include "tether/file.h"
#include "tether/rpc/sha256.h"

/* info: every text line "label  value [unit]" is the JSON key label_with_underscores[_unit]
 * with the same value, and every reported JSON field has its text line. */
void test_info_consistent(void **state) {
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
void test_help_version(void **state) {
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

void test_usage_errors(void **state) {
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

void test_run_module(void **state) {
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
                "--min-repeat-ms 1500 --timeout-ms 1000",
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
void test_json_outputs(void **state) {
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

void test_run_artifact(void **state) {
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
        cmocka_unit_test_setup_teardown(test_typed_io, setup, teardown),
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
