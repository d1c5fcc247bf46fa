/*
 * `tether plan` shows the plan `tether compile` makes (issue 25): both run the compile's pass
 * pipeline for the same target and options (tether__compile_passes), so on examples/pools/pool_demo
 * with `--pool sram:global:200K` both fail on the same buffer, operators and free bytes (the
 * hosted target's padded conv inputs included), plan's --json and --svg name the compile's
 * operators, and on a chain of six 3x3 convolutions plan's total equals the compiled workspace
 * (report.json) and memory_plan.json for the default target, an AVX-512 CPU, a Cortex-M3 (no
 * padded copies) and the OpenCL backend. Also: plan's option errors (--target unknown, C-only
 * options with the OpenCL backend).
 *
 * The commands run in this process (tether/compiler_cli.h) with stdout and stderr caught in a
 * file; everything is written under a fresh temporary directory, removed at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "tether/compiler.h"
#include "tether/compiler_cli.h"
#include "tether/file.h"

static char g_tmp[64];
static char g_out[65536]; /* stdout and stderr of the last command */

/* Runs fn(argc, argv) with stdout and stderr going to a file; its text in g_out. */
static int run_argv(int (*fn)(int, char **), int argc, char **argv) {
    char path[128];
    snprintf(path, sizeof path, "%s/out.txt", g_tmp);
    fflush(stdout);
    fflush(stderr);
    int o1 = dup(1), o2 = dup(2);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    dup2(fileno(f), 1);
    dup2(fileno(f), 2);
    int rc = fn(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(o1, 1);
    dup2(o2, 2);
    close(o1);
    close(o2);
    fclose(f);
    f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(g_out, 1, sizeof g_out - 1, f);
    fclose(f);
    g_out[n] = 0;
    return rc;
}

/* run_argv with the arguments given, up to a NULL. */
static int run_cli(int (*fn)(int, char **), const char *a0, ...) {
    char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, a0);
    for (const char *s = a0; s && argc < 31; s = va_arg(ap, const char *)) {
        argv[argc++] = (char *)s;
    }
    va_end(ap);
    argv[argc] = NULL;
    return run_argv(fn, argc, argv);
}

static cJSON *read_json(const char *path) {
    char *text = NULL;
    size_t len = 0;
    if (tether_file_read_text(path, (size_t)1 << 26, &text, &len) != 0) {
        fail_msg("%s: %s", path, tether_last_error());
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) {
        fail_msg("%s is not JSON", path);
    }
    return j;
}

/* "buffer '...' ... (largest block, capacity N)": the planner's no-fit message in text. */
static void nofit_message(const char *text, char *out, size_t n) {
    const char *a = strstr(text, "buffer '");
    const char *b = a ? strstr(a, "(largest block, capacity ") : NULL;
    const char *c = b ? strchr(b, ')') : NULL;
    if (!c) {
        fail_msg("no no-fit message in: %s", text);
    }
    snprintf(out, n, "%.*s", (int)(c + 1 - a), a);
}

/* pool_demo with a 200 KiB SRAM pool: compile and plan fail on the same buffer, operators and
 * free bytes; plan's --json and --svg name the compile's operators (the padded copies). */
static void test_pool_demo_same_failure(void **state) {
    (void)state;
    const char *demo = TETHER_SOURCE_DIR "/examples/pools/pool_demo.json";
    char dir[128], svg[128], js[128];
    snprintf(dir, sizeof dir, "%s/pd", g_tmp);
    snprintf(svg, sizeof svg, "%s/why.svg", g_tmp);
    snprintf(js, sizeof js, "%s/why.json", g_tmp);
    assert_int_equal(run_cli(tether_cmd_compile, "compile", demo, "-o", dir, "--pool",
                             "sram:global:200K", "--no-build", "--quiet", NULL),
                     1);
    char cmsg[512], pmsg[512];
    nofit_message(g_out, cmsg, sizeof cmsg);
    int hint = strstr(g_out, "tether plan MODEL with the same --target") != NULL;
    assert_int_equal(access(dir, F_OK), -1); /* nothing left behind */
    assert_int_equal(
        run_cli(tether_cmd_plan, "plan", demo, "--pool", "sram:global:200K", "--svg", svg, NULL),
        1);
    nofit_message(g_out, pmsg, sizeof pmsg);
    assert_string_equal(pmsg, cmsg);
    assert_true(hint); /* compile's message says which options plan needs */
    /* x86_64-linux (vector width 4): conv2 reads a padded copy of r1, so r1 lives over conv1 and
     * conv2.pad and 30,560 bytes are free beside the padded input */
    assert_non_null(strstr(cmsg, "buffer 'r1' (163840 bytes, live 1..2, operators 'conv1' .. "
                                 "'conv2.pad')"));
    assert_non_null(strstr(cmsg, "sram has 30560 bytes free"));
    char *text = NULL;
    assert_int_equal(tether_file_read_text(svg, (size_t)1 << 24, &text, NULL), 0);
    assert_non_null(strstr(text, "conv2.pad"));
    free(text);
    /* --json of a plan that does not fit: the message and the compile's operators */
    char jarg[160];
    snprintf(jarg, sizeof jarg, "--json=%s", js);
    assert_int_equal(
        run_cli(tether_cmd_plan, "plan", demo, "--pool", "sram:global:200K", jarg, NULL), 1);
    cJSON *j = read_json(js);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "fits")));
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
    assert_true(cJSON_IsString(err));
    assert_non_null(strstr(err->valuestring, cmsg));
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(j, "operators");
    assert_int_equal(cJSON_GetArraySize(ops), 8);
    const char *want[8] = {"conv1.pad", "conv1", "conv2.pad", "conv2", "pool", "gap", "flat", "fc"};
    for (int i = 0; i < 8; i++) {
        assert_string_equal(cJSON_GetArrayItem(ops, i)->valuestring, want[i]);
    }
    cJSON_Delete(j);
    /* on a Cortex-M3 nothing is padded: the same failure, on the unpadded graph, for both */
    assert_int_equal(run_cli(tether_cmd_compile, "compile", demo, "-o", dir, "--pool",
                             "sram:global:200K", "--target", "cortex-m3", "--no-build", "--quiet",
                             NULL),
                     1);
    nofit_message(g_out, cmsg, sizeof cmsg);
    assert_int_equal(run_cli(tether_cmd_plan, "plan", demo, "--pool", "sram:global:200K",
                             "--target", "cortex-m3", NULL),
                     1);
    nofit_message(g_out, pmsg, sizeof pmsg);
    assert_string_equal(pmsg, cmsg);
    assert_null(strstr(cmsg, ".pad"));
}

/* A chain of six 3x3 convolutions (8 channels, 16x16), written as a JSON model. */
static void write_chain(const char *path) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"format\": \"tether-model\", \"version\": 1, \"name\": \"chain6\", \"tensors\": "
               "[{\"name\": \"x\", \"shape\": [1, 8, 16, 16]}");
    for (int i = 0; i < 6; i++) {
        fprintf(f, ", {\"name\": \"w%d\", \"shape\": [8, 8, 3, 3], \"data\": [", i);
        for (int k = 0; k < 8 * 8 * 9; k++) {
            fprintf(f, "%s%g", k ? ", " : "", (double)((k * 7 + i) % 13 - 6) / 50.0);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "], \"inputs\": [\"x\"], \"outputs\": [\"y5\"], \"nodes\": [");
    for (int i = 0; i < 6; i++) {
        char in[8];
        snprintf(in, sizeof in, i ? "y%d" : "x", i - 1);
        fprintf(f,
                "%s{\"name\": \"c%d\", \"op\": \"conv2d\", \"inputs\": [\"%s\", \"w%d\"], "
                "\"outputs\": [\"y%d\"], \"attrs\": {\"pads\": [1, 1, 1, 1]}}",
                i ? ", " : "", i, in, i, i);
    }
    fprintf(f, "]}\n");
    assert_int_equal(fclose(f), 0);
}

/* total_bytes of `tether plan MODEL --json` with the given extra options (NULL-terminated). */
static double plan_total(const char *model, const char *const *extra, cJSON **ops_out) {
    char *argv[16] = {"plan", (char *)model, "--json"};
    int n = 3;
    for (int i = 0; extra && extra[i] && n < 15; i++) {
        argv[n++] = (char *)extra[i];
    }
    argv[n] = NULL;
    assert_int_equal(run_argv(tether_cmd_plan, n, argv), 0);
    cJSON *j = cJSON_Parse(g_out);
    if (!j) {
        fail_msg("plan --json printed no JSON: %s", g_out);
    }
    double total = cJSON_GetObjectItemCaseSensitive(j, "total_bytes")->valuedouble;
    if (ops_out) {
        *ops_out = cJSON_DetachItemFromObjectCaseSensitive(j, "operators");
    }
    cJSON_Delete(j);
    return total;
}

/* The workspace bytes of report.json in dir (the one pool of a compile without --pool). */
static double compiled_workspace(const char *dir) {
    char p[200];
    snprintf(p, sizeof p, "%s/report.json", dir);
    cJSON *r = read_json(p);
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(r, "workspace");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ws, "workspace");
    assert_true(cJSON_IsNumber(v));
    double d = v->valuedouble;
    cJSON_Delete(r);
    return d;
}

static void test_chain_same_total(void **state) {
    (void)state;
    char model[128], dir[128];
    snprintf(model, sizeof model, "%s/chain6.json", g_tmp);
    snprintf(dir, sizeof dir, "%s/c6", g_tmp);
    write_chain(model);
    /* the default target (x86_64-linux), an AVX-512 CPU, a Cortex-M3, the OpenCL backend */
    const char *const cases[4][3] = {{NULL},
                                     {"--mcpu", "x86-64-v4", NULL},
                                     {"--target", "cortex-m3", NULL},
                                     {"--backend", "opencl", NULL}};
    double totals[4];
    for (int k = 0; k < 4; k++) {
        const char *a = cases[k][0], *b = cases[k][1];
        /* the C library is not built (the plan is made before); OpenCL builds nothing */
        const char *nb = k == 3 ? "--quiet" : "--no-build";
        assert_int_equal(
            run_cli(tether_cmd_compile, "compile", model, "-o", dir, nb, "--quiet", a, b, NULL), 0);
        double ws = compiled_workspace(dir);
        totals[k] = plan_total(model, cases[k], NULL);
        if (totals[k] != ws) {
            fail_msg("case %d (%s %s): plan %.0f bytes, compile %.0f", k, a ? a : "", b ? b : "",
                     totals[k], ws);
        }
    }
    /* hosted targets plan the padded copies (more bytes than the unpadded chain); a Cortex-M3
     * and OpenCL have none */
    assert_true(totals[0] > totals[2]);
    assert_true(totals[2] == totals[3]);
    /* with a pool, compile's memory_plan.json is the plan: same total, same operators */
    assert_int_equal(run_cli(tether_cmd_compile, "compile", model, "-o", dir, "--no-build",
                             "--quiet", "--pool", "sram:global:1M", NULL),
                     0);
    char p[200];
    snprintf(p, sizeof p, "%s/memory_plan.json", dir);
    cJSON *mp = read_json(p);
    const char *pool[] = {"--pool", "sram:global:1M", NULL};
    cJSON *ops = NULL;
    double total = plan_total(model, pool, &ops);
    assert_true(total == cJSON_GetObjectItemCaseSensitive(mp, "total_bytes")->valuedouble);
    const cJSON *cops = cJSON_GetObjectItemCaseSensitive(mp, "operators");
    assert_non_null(ops);
    assert_int_equal(cJSON_GetArraySize(ops), 12); /* six pads and six convs */
    assert_true(cJSON_Compare(ops, cops, true));
    assert_string_equal(cJSON_GetArrayItem(ops, 0)->valuestring, "c0.pad");
    cJSON_Delete(ops);
    cJSON_Delete(mp);
}

static void test_plan_usage(void **state) {
    (void)state;
    char model[128];
    snprintf(model, sizeof model, "%s/chain6.json", g_tmp);
    write_chain(model);
    assert_int_equal(run_cli(tether_cmd_plan, "plan", model, "--target", "z80", NULL), 2);
    assert_non_null(strstr(g_out, "z80"));
    assert_int_equal(run_cli(tether_cmd_plan, "plan", model, "--target", NULL), 2);
    assert_non_null(strstr(g_out, "--target needs a value"));
    assert_int_equal(run_cli(tether_cmd_plan, "plan", model, "--texture-activations", "--target",
                             "cortex-m3", NULL),
                     2);
    assert_non_null(strstr(g_out, "--target applies to the C backend"));
    assert_int_equal(
        run_cli(tether_cmd_plan, "plan", model, "--backend", "c", "--texture-activations", NULL),
        2);
    assert_non_null(strstr(g_out, "--texture-activations needs --backend opencl"));
    assert_int_equal(run_cli(tether_cmd_plan, "plan", "--help", NULL), 0);
    assert_non_null(strstr(g_out, "--target NAME"));
    /* options after the planner's still count, MODEL may follow them */
    char svg[128];
    snprintf(svg, sizeof svg, "%s/x.svg", g_tmp);
    assert_int_equal(run_cli(tether_cmd_plan, "plan", "--svg", svg, model, "--target", "cortex-m3",
                             "--planner", "greedy-size", NULL),
                     0);
    assert_int_equal(access(svg, F_OK), 0);
}

int main(void) {
    snprintf(g_tmp, sizeof g_tmp, "/tmp/tplancXXXXXX");
    if (!mkdtemp(g_tmp)) {
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_demo_same_failure),
        cmocka_unit_test(test_chain_same_total),
        cmocka_unit_test(test_plan_usage),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", g_tmp);
    }
    return rc;
}
