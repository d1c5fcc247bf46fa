/*
 * Whether each OpenCL kernel fills the device, and why not (emit_opencl_fill.c, docs/codegen.md
 * "GPU kernels"): compiled for a device of 4 compute units x 32 (128 lanes) without running
 * anything, every launch step of metadata.json has its work-items, and a step under the lanes
 * (exactly those) says why: a small output with one work-item each (and the serial loop no kernel
 * splits), a split-K GEMV whose few outputs already share their reduction. report.json's "fill"
 * lists the same steps and the compile report prints them. No OpenCL device needed.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "tether/compiler.h"
#include "tether/crt/error.h"

static const DLDataType f32 = {kDLFloat, 32, 1};

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* x[1,7] -> relu (7 work-items); x2[1,4096] -> relu (fills); x3[1,64] . w[64,4] (split-K GEMV,
 * 4 outputs in one work-group); x4[1,8,32,32] -> global average pool (8 work-items looping 1024
 * times). */
static void build(tether_ir_graph *g) {
    int64_t s1[2] = {1, 7}, s2[2] = {1, 4096}, s3[2] = {1, 64}, sw[2] = {64, 4};
    int64_t s4[4] = {1, 8, 32, 32};
    static float w[256];
    for (int i = 0; i < 256; i++) {
        w[i] = (float)(i % 7) * 0.01f - 0.03f;
    }
    int x1, x2, x3, x4, wt, y1, y2, y3, y4;
    assert_int_equal(tether_ir_init(g, "fill"), 0);
    assert_int_equal(tether_ir_add_tensor(g, "x1", f32, 2, s1, &x1), 0);
    assert_int_equal(tether_ir_add_tensor(g, "x2", f32, 2, s2, &x2), 0);
    assert_int_equal(tether_ir_add_tensor(g, "x3", f32, 2, s3, &x3), 0);
    assert_int_equal(tether_ir_add_tensor(g, "x4", f32, 4, s4, &x4), 0);
    assert_int_equal(tether_ir_add_input(g, x1), 0);
    assert_int_equal(tether_ir_add_input(g, x2), 0);
    assert_int_equal(tether_ir_add_input(g, x3), 0);
    assert_int_equal(tether_ir_add_input(g, x4), 0);
    assert_int_equal(tether_ir_add_constant(g, "w", f32, 2, sw, w, sizeof w, &wt), 0);
    assert_int_equal(tether_ir_add_tensor(g, "y1", f32, -1, NULL, &y1), 0);
    assert_int_equal(tether_ir_add_tensor(g, "y2", f32, -1, NULL, &y2), 0);
    assert_int_equal(tether_ir_add_tensor(g, "y3", f32, -1, NULL, &y3), 0);
    assert_int_equal(tether_ir_add_tensor(g, "y4", f32, -1, NULL, &y4), 0);
    assert_int_equal(tether_ir_add_node(g, "small", TETHER_OP_RELU, &x1, 1, &y1, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_node(g, "big", TETHER_OP_RELU, &x2, 1, &y2, 1, NULL, NULL), 0);
    int din[2] = {x3, wt};
    assert_int_equal(tether_ir_add_node(g, "fc", TETHER_OP_DENSE, din, 2, &y3, 1, NULL, NULL), 0);
    assert_int_equal(
        tether_ir_add_node(g, "gap", TETHER_OP_GLOBAL_AVG_POOL, &x4, 1, &y4, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_output(g, y1), 0);
    assert_int_equal(tether_ir_add_output(g, y2), 0);
    assert_int_equal(tether_ir_add_output(g, y3), 0);
    assert_int_equal(tether_ir_add_output(g, y4), 0);
    assert_int_equal(tether_ir_infer(g), 0);
}

static cJSON *read_json(const char *dir, const char *name) {
    char p[600];
    assert_true((size_t)snprintf(p, sizeof p, "%s/%s", dir, name) < sizeof p);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    return j;
}

/* The step of metadata.json for node `node` (NULL: the copy step). */
static const cJSON *step_of(const cJSON *meta, const char *node) {
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(meta, "steps")) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(s, "node");
        if (node ? cJSON_IsString(n) && !strcmp(n->valuestring, node) : cJSON_IsNull(n)) {
            return s;
        }
    }
    fail_msg("no step for node %s", node ? node : "(copy)");
    return NULL;
}

static const char *why_of(const cJSON *step) {
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(step, "underfill");
    return cJSON_IsString(w) ? w->valuestring : NULL;
}

static void test_fill_reasons(void **state) {
    (void)state;
    char dir[] = "/tmp/tfillXXXXXX"; /* short: the paths below are built from it */
    assert_non_null(mkdtemp(dir));
    char out[300];
    snprintf(out, sizeof out, "%s/a", dir);
    tether_ir_graph g;
    build(&g);
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.backend = TETHER_BACKEND_OPENCL;
    o.opencl.compute_units = 4;
    o.opencl.wg_multiple = 32;
    o.opencl.max_work_group_size = 256;
    if (tether_compile_graph(&g, out, &o, NULL)) {
        fail_msg("compile: %s", tether_last_error());
    }
    tether_ir_close(&g);
    cJSON *meta = read_json(out, "metadata.json");
    const cJSON *lanes = cJSON_GetObjectItemCaseSensitive(meta, "device_lanes");
    assert_true(cJSON_IsNumber(lanes));
    assert_int_equal((int)lanes->valuedouble, 128);
    /* every step: its work-items, and a reason exactly when they are under the lanes */
    int under = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(meta, "steps")) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(s, "work_items");
        const cJSON *gl = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s, "global"), 0);
        assert_true(cJSON_IsNumber(w));
        assert_true(w->valuedouble == gl->valuedouble);
        assert_true((w->valuedouble < 128) == (why_of(s) != NULL));
        under += why_of(s) != NULL;
    }
    const char *why = why_of(step_of(meta, "small"));
    assert_non_null(why);
    assert_non_null(strstr(why, "under the device's 128 lanes: the output has only 7 elements, "
                                "one work-item each"));
    assert_null(strstr(why, "serial loop"));
    assert_null(why_of(step_of(meta, "big")));
    why = why_of(step_of(meta, "fc"));
    assert_non_null(why);
    assert_non_null(strstr(why, "the output has only 4 elements; "));
    assert_non_null(strstr(why, "work-items already share each one's reduction"));
    why = why_of(step_of(meta, "gap"));
    assert_non_null(why);
    assert_non_null(strstr(why, "the output has only 8 elements, one work-item each, each with a "
                                "serial loop of 1024"));
    /* the kernel's comment in the .cl says the same */
    char cmd[1000];
    snprintf(cmd, sizeof cmd,
             "grep -q 'the output has only 7 elements, one work-item each' %s/*.cl", out);
    assert_int_equal(system(cmd), 0);
    /* report.json's "fill" lists the same steps; the compile report prints them */
    cJSON *rep = read_json(out, "report.json");
    const cJSON *fill = cJSON_GetObjectItemCaseSensitive(rep, "fill");
    assert_true(cJSON_IsObject(fill));
    assert_int_equal((int)cJSON_GetObjectItemCaseSensitive(fill, "device_lanes")->valuedouble, 128);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(fill, "under");
    assert_int_equal(cJSON_GetArraySize(list), under);
    assert_int_equal(under, 3);
    const cJSON *u;
    cJSON_ArrayForEach(u, list) {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(u, "kernel");
        const cJSON *node = cJSON_GetObjectItemCaseSensitive(u, "node");
        assert_true(cJSON_IsString(k));
        assert_true(cJSON_IsString(node));
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(u, "why")->valuestring,
                            why_of(step_of(meta, node->valuestring)));
    }
    char rp[64];
    snprintf(rp, sizeof rp, "%s/report.txt", dir);
    FILE *f = fopen(rp, "w");
    assert_non_null(f);
    assert_int_equal(tether_report_print(f, out), 0);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "grep -q \"kernels under the device's 128 lanes: 3 of\" %s && grep -q 'serial loop "
             "of 1024' %s",
             rp, rp);
    assert_int_equal(system(cmd), 0);
    cJSON_Delete(rep);
    cJSON_Delete(meta);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
