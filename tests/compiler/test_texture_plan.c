/*
 * The OpenCL backend's texture plan is checked with tether_plan_validate in every build type
 * (docs/planner.md), not only where tether_plan_run checks its own plans (builds without
 * NDEBUG). The test is linked with -Wl,--wrap=tether_plan_run: the wrapper hands out the real
 * plan, or, when asked, a broken one (an image one texel row too small for a tensor it holds),
 * which the compile must refuse with the validator's message and no artifact left behind. In a
 * Release or RelWithDebInfo tree (NDEBUG) only the backend's own check can catch it.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <setjmp.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tether/compiler.h"
#include "tether/crt/error.h"
#include "tether/planner.h"

int __real_tether_plan_run(const tether_plan_problem *p, const tether_plan_options *o,
                           tether_plan *out);
int __wrap_tether_plan_run(const tether_plan_problem *p, const tether_plan_options *o,
                           tether_plan *out);

static int g_break_images; /* 1: shrink the first texture image of the next plans */
static int g_images_seen;  /* texture images in the plans handed out */

int __wrap_tether_plan_run(const tether_plan_problem *p, const tether_plan_options *o,
                           tether_plan *out) {
    int rc = __real_tether_plan_run(p, o, out);
    if (rc == TETHER_OK && out->nimages > 0) {
        g_images_seen += out->nimages;
        if (g_break_images && out->images[0].height > 1) {
            out->images[0].height--;
        }
    }
    return rc;
}

/* x[1,4,6,6] -> conv 1x1 -> relu -> conv 1x1 -> y: the two activations between the convs are
 * texture candidates. */
static void build(tether_ir_graph *g) {
    static const DLDataType f32 = {kDLFloat, 32, 1};
    int64_t xs[4] = {1, 4, 6, 6}, ws[4] = {4, 4, 1, 1};
    float w[16];
    for (int i = 0; i < 16; i++) {
        w[i] = (float)(i % 5) * 0.25f - 0.5f;
    }
    int x, w1, w2, a, b, c, y;
    assert_int_equal(tether_ir_init(g, "texplan"), 0);
    assert_int_equal(tether_ir_add_tensor(g, "x", f32, 4, xs, &x), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    assert_int_equal(tether_ir_add_constant(g, "w1", f32, 4, ws, w, sizeof w, &w1), 0);
    assert_int_equal(tether_ir_add_constant(g, "w2", f32, 4, ws, w, sizeof w, &w2), 0);
    assert_int_equal(tether_ir_add_tensor(g, "a", f32, -1, NULL, &a), 0);
    assert_int_equal(tether_ir_add_tensor(g, "b", f32, -1, NULL, &b), 0);
    assert_int_equal(tether_ir_add_tensor(g, "c", f32, -1, NULL, &c), 0);
    assert_int_equal(tether_ir_add_tensor(g, "y", f32, -1, NULL, &y), 0);
    int in1[2] = {x, w1}, in2[2] = {b, w2};
    assert_int_equal(tether_ir_add_node(g, "conv1", TETHER_OP_CONV2D, in1, 2, &a, 1, NULL, NULL),
                     0);
    assert_int_equal(tether_ir_add_node(g, "relu", TETHER_OP_RELU, &a, 1, &b, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_node(g, "conv2", TETHER_OP_CONV2D, in2, 2, &c, 1, NULL, NULL),
                     0);
    assert_int_equal(tether_ir_add_node(g, "sig", TETHER_OP_SIGMOID, &c, 1, &y, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_output(g, y), 0);
    assert_int_equal(tether_ir_infer(g), 0);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* A fresh empty directory for one compile (removed by rm_tree). */
static void fresh_dir(char *dir, size_t n, const char *tag) {
    mkdir(TETHER_BINARY_DIR "/tests/compiler/tmp", 0755);
    snprintf(dir, n, "%s/tests/compiler/tmp/%s_XXXXXX", TETHER_BINARY_DIR, tag);
    assert_non_null(mkdtemp(dir));
}

static void rm_tree(const char *dir) {
    nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static int compile(const char *dir) {
    tether_ir_graph g;
    build(&g);
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.backend = TETHER_BACKEND_OPENCL;
    o.opencl.texture_activations = true;
    int rc = tether_compile_graph(&g, dir, &o, NULL);
    tether_ir_close(&g);
    return rc;
}

static void test_plan_with_textures_compiles(void **state) {
    (void)state;
    char dir[512];
    fresh_dir(dir, sizeof dir, "texplan_ok");
    g_break_images = 0;
    g_images_seen = 0;
    assert_int_equal(compile(dir), TETHER_OK);
    assert_true(g_images_seen > 0); /* the model really has a texture plan */
    char path[600];
    snprintf(path, sizeof path, "%s/metadata.json", dir);
    assert_int_equal(access(path, R_OK), 0);
    rm_tree(dir);
}

static void test_broken_texture_plan_refused(void **state) {
    (void)state;
    char dir[512];
    fresh_dir(dir, sizeof dir, "texplan_broken");
    g_break_images = 1;
    g_images_seen = 0;
    int rc = compile(dir);
    g_break_images = 0;
    assert_true(g_images_seen > 0);
    assert_int_equal(rc, TETHER_ERR_INTERNAL);
    assert_non_null(strstr(tether_last_error(), "invalid plan"));
    assert_non_null(strstr(tether_last_error(), "does not fit image"));
    char path[600];
    snprintf(path, sizeof path, "%s/metadata.json", dir);
    assert_int_not_equal(access(path, F_OK), 0); /* nothing left behind */
    rm_tree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_with_textures_compiles),
        cmocka_unit_test(test_broken_texture_plan_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
