/*
 * The OpenCL backend's element types at compile time (emit_opencl_typed.c, docs/codegen.md
 * "OpenCL element types"; label opencl, no device): a float64 tensor is refused naming the tensor
 * and cl_khr_fp64 when the options say the device lacks it, and otherwise the source stops the
 * device's build with an #error naming it where cl_khr_fp64 is undefined; an int32 graph gets
 * int pointers and the integer helpers of generated C; a float32 graph's source has none of it.
 * The kernels' results are checked on PoCL by test_onnx_node_opencl_typed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tether/compiler.h"
#include "tether/crt.h"

/* y = x + x, x of element type dt [2, 3] */
static void build(tether_ir_graph *g, DLDataType dt) {
    int64_t s[2] = {2, 3};
    int x, y;
    assert_int_equal(tether_ir_init(g, "typed"), 0);
    assert_int_equal(tether_ir_add_tensor(g, "x_wide", dt, 2, s, &x), 0);
    assert_int_equal(tether_ir_add_tensor(g, "y", dt, 2, s, &y), 0);
    int in[2] = {x, x}, out[1] = {y};
    assert_int_equal(tether_ir_add_node(g, "add", TETHER_OP_ADD, in, 2, out, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    assert_int_equal(tether_ir_add_output(g, y), 0);
    assert_int_equal(tether_ir_infer(g), 0);
}

static int compile(tether_ir_graph *g, int fp64, tether_opencl_output *out) {
    tether_memplan plan;
    assert_int_equal(tether_memplan_build(g, NULL, &plan), 0);
    tether_opencl_options o;
    tether_opencl_options_init(&o);
    o.fp64 = fp64;
    int rc = tether_codegen_opencl(g, &plan, &o, out);
    tether_memplan_close(&plan);
    return rc;
}

static void test_float64(void **state) {
    (void)state;
    tether_ir_graph g;
    build(&g, TETHER_DTYPE(kDLFloat, 64));
    tether_opencl_output out;
    assert_int_equal(compile(&g, -1, &out), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "tensor 'x_wide' is float64"));
    assert_non_null(strstr(tether_last_error(), "cl_khr_fp64"));
    assert_null(out.source);
    assert_int_equal(compile(&g, 0, &out), 0);
    assert_non_null(strstr(out.source, "#ifndef cl_khr_fp64\n#error \"tether: tensor 'x_wide' is "
                                       "float64"));
    assert_non_null(strstr(out.source, "__global double *in0"));
    assert_non_null(strstr(out.metadata, "float64"));
    tether_opencl_output_close(&out);
    tether_ir_close(&g);
}

static void test_int32_and_float32(void **state) {
    (void)state;
    tether_ir_graph g;
    build(&g, TETHER_DTYPE(kDLInt, 32));
    tether_opencl_output out;
    assert_int_equal(compile(&g, -1, &out), 0);
    assert_non_null(strstr(out.source, "const __global int *in0"));
    assert_non_null(strstr(out.source, "tgi_wadd_int32(va, vb)"));
    assert_null(strstr(out.source, "cl_khr_fp64"));
    assert_non_null(strstr(out.metadata, "\"int32\""));
    tether_opencl_output_close(&out);
    tether_ir_close(&g);
    build(&g, TETHER_FLOAT32);
    assert_int_equal(compile(&g, -1, &out), 0);
    assert_null(strstr(out.source, "typedef"));
    assert_null(strstr(out.source, "tgi_"));
    tether_opencl_output_close(&out);
    tether_ir_close(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float64),
        cmocka_unit_test(test_int32_and_float32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
