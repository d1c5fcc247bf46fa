/*
 * Names from a model reach generated C as identifiers, comments and string literals. Real models
 * (TFLite exports) have names of hundreds of characters sharing long prefixes, and a model file
 * must never be able to inject code: these tests compile such graphs with both ABIs and both
 * interfaces, run them against the reference interpreter, and check that a node named like a C
 * function definition inside a comment defines nothing.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ops_common.h"
#include "tether/compiler.h"
#include "tether/crt.h"

/* x -> conv(w, b) + relu -> y, with the given names. */
static void build(tether_ir_graph *g, const char *model, const char *xname, const char *wname,
                  const char *bname, const char *node, const char *yname) {
    assert_int_equal(tether_ir_init(g, model), 0);
    int64_t sx[] = {1, 2, 5, 5}, sw[] = {3, 2, 3, 3}, sb[] = {3};
    float w[54], b[3];
    uint32_t seed = 3;
    tt_fill(w, 54, false, &seed);
    tt_fill(b, 3, false, &seed);
    int x, wt, bt, y, n;
    assert_int_equal(tether_ir_add_tensor(g, xname, TETHER_FLOAT32, 4, sx, &x), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    assert_int_equal(tether_ir_add_constant(g, wname, TETHER_FLOAT32, 4, sw, w, sizeof w, &wt), 0);
    assert_int_equal(tether_ir_add_constant(g, bname, TETHER_FLOAT32, 1, sb, b, sizeof b, &bt), 0);
    assert_int_equal(
        tether_ir_add_tensor(g, yname, TETHER_FLOAT32, TETHER_IR_SHAPE_UNKNOWN, NULL, &y), 0);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.kernel[0] = a.kernel[1] = 3;
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    a.act = TETHER_ACT_RELU;
    int ins[3] = {x, wt, bt};
    assert_int_equal(tether_ir_add_node(g, node, TETHER_OP_CONV2D, ins, 3, &y, 1, &a, &n), 0);
    assert_int_equal(tether_ir_add_output(g, y), 0);
    if (tether_ir_infer(g) != 0) {
        fail_msg("infer: %s", tether_last_error());
    }
}

static void run_all(const tether_ir_graph *g, const char *tag) {
    float x[50], ref[75], got[75];
    uint32_t seed = 11;
    tt_fill(x, 50, false, &seed);
    const float *in[1] = {x};
    float *r[1] = {ref}, *o[1] = {got};
    assert_int_equal(tether_interp_run(g, in, r), 0);
    for (int abi = 0; abi < 2; abi++) {
        for (int iface = 0; iface < 2; iface++) {
            memset(got, 0, sizeof got);
            if (tt_run_compiled(g, tag, (tether_abi)abi, (tether_interface)iface, abi == 0, in,
                                o)) {
                fail_msg("%s (abi %d, interface %d): %s", tag, abi, iface, tether_last_error());
            }
            assert_true(tt_close(got, ref, 75, 1e-5, 1e-4) <= 1.0);
        }
    }
}

/* TFLite-style names: several hundred characters, identical for their first 150. */
static void test_long_shared_prefixes(void **state) {
    (void)state;
    char prefix[200], w[400], b[400], x[5100], y[400];
    memset(prefix, 0, sizeof prefix);
    snprintf(prefix, sizeof prefix,
             "sequential/conv2d/Conv2D;sequential/conv2d/BiasAdd/"
             "ReadVariableOp/resource;sequential/conv2d/Conv2D/"
             "ReadVariableOp/resource;seq");
    snprintf(w, sizeof w, "%s/weight", prefix);
    snprintf(b, sizeof b, "%s/bias", prefix);
    snprintf(y, sizeof y, "%s/Relu", prefix);
    memset(x, 'y', 5000);
    x[5000] = 0;
    tether_ir_graph g;
    build(&g, "tflite_like", x, w, b, prefix, y);
    run_all(&g, "names-long");
    tether_ir_close(&g);
}

/* Comment terminators, nested comment starts, newlines, trigraphs, quotes and backslashes in
 * model, node and tensor names: the module builds, computes the right values and defines
 * nothing but its own symbols. */
static void test_hostile_names(void **state) {
    (void)state;
    tether_ir_graph g;
    build(&g, "m */\n#error boom\n/* ?\?/", "in\"put\\ ?\?/\n", "w /* nested", "b */ x",
          "x */ int injected(void){return 42;} /* y", "out\"\\?\?=");
    run_all(&g, "names-hostile");
    /* compile once more, keep it, and look for the injected function */
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.codegen.abi = TETHER_ABI_UNPACKED;
    char dir[1024], lib[1400];
    snprintf(dir, sizeof dir, "%s/tests/compiler/tmp/names-inject", TETHER_BINARY_DIR);
    tether_compile_result res;
    if (tether_compile_graph(&g, dir, &o, &res) != 0) {
        fail_msg("%s", tether_last_error());
    }
    snprintf(lib, sizeof lib, "%s/%s", dir, res.build.library);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    assert_null(dlsym(h, "injected"));
    assert_non_null(dlsym(h, "tether_module_registry"));
    dlclose(h);
    tether_ir_close(&g);
}

/* The same hostile names through the OpenCL emitter (no device needed: the source is checked as
 * text). Names reach the .cl file only inside comments: outside them there is no trace of the
 * injected function or the #error, no trigraph, and only printable ASCII and newlines. */
static void test_hostile_names_opencl(void **state) {
    (void)state;
    tether_ir_graph g;
    build(&g, "m */\n#error boom\n/* ?\?/", "in\"put\\ ?\?/\n", "w /* nested", "b */ x",
          "x */ __kernel void injected(void){} /* y", "out\"\\?\?=");
    tether_memplan plan;
    assert_int_equal(tether_memplan_build(&g, NULL, &plan), 0);
    tether_opencl_output out;
    if (tether_codegen_opencl(&g, &plan, NULL, &out) != 0) {
        fail_msg("%s", tether_last_error());
    }
    const char *src = out.source;
    assert_null(strstr(src, "??"));
    for (const char *p = src; *p; p++) {
        assert_true(*p == '\n' || (*p >= 32 && *p < 127));
    }
    /* the source without its comments (a comment ends at the first terminator after its start) */
    size_t n = strlen(src), o = 0;
    char *code = malloc(n + 1);
    assert_non_null(code);
    for (size_t i = 0; i < n;) {
        if (src[i] == '/' && src[i + 1] == '*') {
            const char *end = strstr(src + i + 2, "*/");
            assert_non_null(end);
            i = (size_t)(end - src) + 2;
            code[o++] = ' ';
        } else {
            code[o++] = src[i++];
        }
    }
    code[o] = 0;
    assert_null(strstr(code, "void injected"));
    assert_null(strstr(code, "#error"));
    assert_null(strstr(code, "boom"));
    assert_null(strstr(code, "nested"));
    /* the one kernel, named after the node's identifier part (48 characters of its name) */
    assert_non_null(
        strstr(code, "__kernel void tether_model_x______kernel_void_injected_void_______y("));
    free(code);
    tether_opencl_output_close(&out);
    tether_memplan_close(&plan);
    tether_ir_close(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_shared_prefixes),
        cmocka_unit_test(test_hostile_names),
        cmocka_unit_test(test_hostile_names_opencl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
