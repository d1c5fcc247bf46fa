/*
 * Loading options and the helpers front ends use (the ONNX importer is their main client):
 *  - --input-shape specs parse or fail with a message naming the spec;
 *  - tether_model_load_with checks every input shape against the loaded model (unknown input,
 *    other shape) and passes options to loaders registered with tether_model_register_loader_with;
 *  - tether_error_detail carries a message longer than tether_last_error() and goes stale when a
 *    later error replaces it;
 *  - tether_ir_infer_node shapes a graph node by node, with the same checks as tether_ir_infer;
 *  - `tether import` writes a JSON model that loads back, and leaves nothing on failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tether/compiler.h"
#include "tether/compiler_cli.h"
#include "tether/crt.h"

static void kws_path(char *p, size_t n) {
    snprintf(p, n, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
}

static void test_input_shape_parse(void **state) {
    (void)state;
    tether_model_input_shape s;
    assert_int_equal(tether_model_input_shape_parse("x=1x3x224x224", &s), 0);
    assert_string_equal(s.name, "x");
    assert_int_equal(s.ndim, 4);
    assert_int_equal(s.shape[0], 1);
    assert_int_equal(s.shape[3], 224);
    assert_int_equal(tether_model_input_shape_parse("a=b=2,3", &s), 0); /* last '=' splits */
    assert_string_equal(s.name, "a=b");
    assert_int_equal(s.ndim, 2);
    assert_int_equal(tether_model_input_shape_parse("scalar=", &s), 0);
    assert_int_equal(s.ndim, 0);
    static const char *const bad[] = {
        "x", "=1x2", "x=0x3", "x=1x", "x=-1", "x=1xa", "x=1x2x3x4x5x6x7x8x9", "x=99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(tether_model_input_shape_parse(bad[i], &s), TETHER_ERR_INVALID_ARG);
        assert_non_null(strstr(tether_last_error(), "input shape '"));
    }
}

static void test_load_with_checks_shapes(void **state) {
    (void)state;
    char p[1024];
    kws_path(p, sizeof p);
    tether_model_input_shape s;
    tether_model_load_options o;
    memset(&o, 0, sizeof o);
    o.input_shapes = &s;
    o.ninput_shapes = 1;
    tether_ir_graph g;
    assert_int_equal(tether_model_input_shape_parse("mfcc=1x1x49x10", &s), 0);
    assert_int_equal(tether_model_load_with(p, &o, &g), 0);
    tether_ir_close(&g);
    assert_int_equal(tether_model_input_shape_parse("mfcc=1x1x50x10", &s), 0);
    assert_int_equal(tether_model_load_with(p, &o, &g), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(),
                           "input 'mfcc' has shape [1,1,49,10]; --input-shape gives [1,1,50,10]"));
    assert_int_equal(g.ntensors, 0); /* closed on failure */
    assert_int_equal(tether_model_input_shape_parse("probs=1x12", &s), 0);
    assert_int_equal(tether_model_load_with(p, &o, &g), TETHER_ERR_NOT_FOUND);
    assert_non_null(strstr(tether_last_error(), "'probs', which is not a graph input"));
    assert_non_null(strstr(tether_last_error(), "(inputs: 'mfcc')"));
    /* the same input twice */
    tether_model_input_shape two[2];
    assert_int_equal(tether_model_input_shape_parse("mfcc=1x1x49x10", &two[0]), 0);
    assert_int_equal(tether_model_input_shape_parse("mfcc=2x1x49x10", &two[1]), 0);
    o.input_shapes = two;
    o.ninput_shapes = 2;
    assert_int_equal(tether_model_load_with(p, &o, &g), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "--input-shape gives input 'mfcc' twice"));
    assert_int_equal(g.ntensors, 0);
}

static const tether_model_load_options *seen_options;

static int options_loader(const char *path, const tether_model_load_options *o,
                          tether_ir_graph *g) {
    (void)path;
    seen_options = o;
    char p[1024];
    kws_path(p, sizeof p);
    if (o->input_bound) {
        o->input_bound[0] = 1;
    }
    return tether_model_load(p, g);
}

static void test_loader_with_options(void **state) {
    (void)state;
    assert_int_equal(tether_model_register_loader_with(".opts", NULL), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_model_register_loader_with(".opts", options_loader), 0);
    tether_ir_graph g;
    assert_int_equal(tether_model_load("m.opts", &g), 0); /* options never NULL for the loader */
    assert_non_null(seen_options);
    assert_null(seen_options->input_values);
    tether_ir_close(&g);
    float v = 1.0f;
    unsigned char bound[2] = {7, 7};
    tether_model_value val = {TETHER_FLOAT32, 0, {0}, &v, sizeof v};
    tether_model_load_options o;
    memset(&o, 0, sizeof o);
    o.input_values = &val;
    o.ninput_values = 2;
    o.input_bound = bound;
    assert_int_equal(tether_model_load_with("m.opts", &o, &g), 0);
    assert_ptr_equal(seen_options, &o);
    assert_int_equal(bound[0], 1); /* set by the loader */
    assert_int_equal(bound[1], 0); /* cleared before the loader runs */
    tether_ir_close(&g);
}

static void test_error_detail(void **state) {
    (void)state;
    char longtext[2000];
    memset(longtext, 'a', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = 0;
    tether_set_error(TETHER_ERR_UNSUPPORTED, "%s", longtext);
    tether_set_error_detail(longtext);
    assert_int_equal(strlen(tether_error_detail()), sizeof longtext - 1);
    assert_true(strlen(tether_last_error()) < TETHER_ERROR_MSG_MAX);
    tether_set_error(TETHER_ERR_IO, "a later error");
    assert_string_equal(tether_error_detail(), "a later error");
}

static void test_infer_node(void **state) {
    (void)state;
    tether_ir_graph g;
    assert_int_equal(tether_ir_init(&g, "t"), 0);
    int64_t xs[2] = {2, 3};
    int x, y, z, n0, n1;
    assert_int_equal(tether_ir_add_tensor(&g, "x", TETHER_FLOAT32, 2, xs, &x), 0);
    assert_int_equal(tether_ir_add_input(&g, x), 0);
    assert_int_equal(
        tether_ir_add_tensor(&g, "y", TETHER_FLOAT32, TETHER_IR_SHAPE_UNKNOWN, NULL, &y), 0);
    assert_int_equal(
        tether_ir_add_tensor(&g, "z", TETHER_FLOAT32, TETHER_IR_SHAPE_UNKNOWN, NULL, &z), 0);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_TRANSPOSE, &a);
    assert_int_equal(tether_ir_add_node(&g, "t", TETHER_OP_TRANSPOSE, &x, 1, &y, 1, &a, &n0), 0);
    int in2[2] = {y, y};
    assert_int_equal(tether_ir_add_node(&g, "m", TETHER_OP_MATMUL, in2, 2, &z, 1, NULL, &n1), 0);
    /* the second node cannot be shaped before the first */
    assert_int_equal(tether_ir_infer_node(&g, n1), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "node 'm' (matmul): input 'y' has no shape yet"));
    assert_int_equal(tether_ir_infer_node(&g, n0), 0);
    assert_int_equal(g.tensors[y].ndim, 2);
    assert_int_equal(g.tensors[y].shape[0], 3);
    /* [3,2] x [3,2]: the same check as tether_ir_infer */
    assert_int_equal(tether_ir_infer_node(&g, n1), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "inner dimensions differ: 2 vs 3"));
    assert_int_equal(tether_ir_infer_node(&g, 5), TETHER_ERR_INVALID_ARG);
    tether_ir_close(&g);
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static int count_entries(const char *dir) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *f = popen(cmd, "r");
    int n = -1;
    if (f) {
        if (fscanf(f, "%d", &n) != 1) {
            n = -1;
        }
        pclose(f);
    }
    return n;
}

static void test_import_command(void **state) {
    (void)state;
    char model[1024], dir[1024], out[1100], bin[1100];
    kws_path(model, sizeof model);
    snprintf(dir, sizeof dir, "%s/tests/compiler/tmp-import", TETHER_BINARY_DIR);
    snprintf(out, sizeof out, "%s/m.json", dir);
    snprintf(bin, sizeof bin, "%s/m.bin", dir);
    unlink(out);
    unlink(bin);
    mkdir(dir, 0755);
    char *ok[] = {"import", model, "-o", out, NULL};
    assert_int_equal(tether_cmd_import(4, ok), 0);
    assert_true(file_exists(out) && file_exists(bin));
    tether_ir_graph g;
    assert_int_equal(tether_model_load(out, &g), 0);
    assert_int_equal(g.nnodes, 5);
    tether_ir_close(&g);
    assert_int_equal(count_entries(dir), 2);
    /* usage errors: exit 2 */
    char *no_o[] = {"import", model, NULL};
    assert_int_equal(tether_cmd_import(2, no_o), 2);
    char *not_json[] = {"import", model, "-o", bin, NULL};
    assert_int_equal(tether_cmd_import(4, not_json), 2);
    char *bad_shape[] = {"import", model, "-o", out, "--input-shape", "mfcc=0", NULL};
    assert_int_equal(tether_cmd_import(6, bad_shape), 2);
    /* a failing load leaves nothing new */
    unlink(out);
    unlink(bin);
    char *wrong_shape[] = {"import", model, "-o", out, "--input-shape", "mfcc=1x2", NULL};
    assert_int_equal(tether_cmd_import(6, wrong_shape), 1);
    assert_int_equal(count_entries(dir), 0);
    char *missing[] = {"import", "nothere.json", "-o", out, NULL};
    assert_int_equal(tether_cmd_import(4, missing), 1);
    assert_int_equal(count_entries(dir), 0);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_input_shape_parse),   cmocka_unit_test(test_load_with_checks_shapes),
        cmocka_unit_test(test_loader_with_options), cmocka_unit_test(test_error_detail),
        cmocka_unit_test(test_infer_node),          cmocka_unit_test(test_import_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
