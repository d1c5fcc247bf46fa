/*
 * Data-dependent output sizes (nonzero, compress, unique, nms; docs/onnx.md "Data-dependent
 * output sizes", docs/abi.md): a count above the bound is an error at run time, never an
 * overrun (the interpreter's TETHER_ERR_LIMIT; the compiled entry's -4 in both ABIs, the bytes
 * past the bound untouched); a count within it gives the data of the actual shape and its extent
 * output; a dynamic tensor read by another node, or a dynamic output without its extent output,
 * is refused naming it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ops_common.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* x float32 [6] -> nonzero (bound capped at 2) -> y int64 [1, 2], extent int64 [1]. */
static void build(tether_ir_graph *g, bool relu_after, bool extents) {
    assert_int_equal(tether_ir_init(g, "dyn"), 0);
    int64_t s6 = 6;
    int x, y;
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 1, &s6, &x), 0);
    assert_int_equal(tether_ir_add_tensor(g, "y", TETHER_INT64, TETHER_IR_SHAPE_UNKNOWN, NULL, &y),
                     0);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_NONZERO, &a);
    a.nints = 1;
    a.ints[0] = 2;
    assert_int_equal(tether_ir_add_node(g, "nz", TETHER_OP_NONZERO, &x, 1, &y, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    if (relu_after) {
        int z;
        assert_int_equal(
            tether_ir_add_tensor(g, "z", TETHER_INT64, TETHER_IR_SHAPE_UNKNOWN, NULL, &z), 0);
        assert_int_equal(tether_ir_add_node(g, "neg", TETHER_OP_NEG, &y, 1, &z, 1, NULL, NULL), 0);
        assert_int_equal(tether_ir_add_output(g, z), 0);
    } else {
        assert_int_equal(tether_ir_add_output(g, y), 0);
    }
    if (extents) {
        assert_int_equal(tether_ir_add_extent_outputs(g), 0);
        assert_int_equal(tether_ir_add_extent_outputs(g), 0); /* idempotent */
    }
}

static void test_within_and_over_the_bound(void **state) {
    (void)state;
    tether_ir_graph g;
    build(&g, false, true);
    assert_int_equal(tether_ir_infer(&g), 0);
    assert_int_equal(g.noutputs, 2);
    assert_int_equal(g.tensors[g.outputs[0]].dyn_dim, 2);
    assert_int_equal(g.tensors[g.outputs[0]].shape[1], 2); /* the bound, capped */
    assert_int_equal(tether_ir_extent_output(&g, 0), 1);
    assert_int_equal(tether_ir_extent_output(&g, 1), -1);
    const float two[6] = {0, 3, 0, 0, -1, 0}, three[6] = {1, 0, 2, 0, 0, 4};
    for (int abi = -1; abi < 2; abi++) {       /* the interpreter, packed, unpacked */
        int64_t y[3] = {-7, -7, -7}, ext = -7; /* y[2]: past the bound, never written */
        const float *in[1] = {two};
        float *out[2] = {(float *)y, (float *)&ext};
        int rc = abi < 0 ? tether_interp_run_typed(&g, (const void *const *)in, (void *const *)out)
                         : tt_run_compiled(&g, abi ? "dyn_unpacked" : "dyn_packed",
                                           abi ? TETHER_ABI_UNPACKED : TETHER_ABI_PACKED,
                                           TETHER_INTERFACE_PACKED, true, in, out);
        assert_int_equal(rc, 0);
        assert_int_equal(ext, 2);
        assert_int_equal(y[0], 1);
        assert_int_equal(y[1], 4);
        assert_int_equal(y[2], -7);
        in[0] = three;
        y[0] = y[1] = -7;
        rc = abi < 0 ? tether_interp_run_typed(&g, (const void *const *)in, (void *const *)out)
                     : tt_run_compiled(&g, abi ? "dyn_unpacked" : "dyn_packed",
                                       abi ? TETHER_ABI_UNPACKED : TETHER_ABI_PACKED,
                                       TETHER_INTERFACE_PACKED, true, in, out);
        if (abi < 0) {
            assert_int_equal(rc, TETHER_ERR_LIMIT);
            assert_non_null(strstr(tether_last_error(), "more than its bound 2"));
        } else {
            assert_int_not_equal(rc, 0);
            assert_non_null(strstr(tether_last_error(), "-4"));
        }
        assert_int_equal(y[2], -7); /* never an overrun */
    }
    tether_ir_close(&g);
}

static void test_refusals(void **state) {
    (void)state;
    tether_ir_graph g;
    build(&g, true, true);
    assert_int_equal(tether_ir_infer(&g), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "node 'neg' (neg): input 'y' has a data-dependent "
                                                "extent (dimension 1, at most 2"));
    tether_ir_close(&g);
    build(&g, false, false);
    assert_int_equal(tether_ir_infer(&g), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "1 outputs of data-dependent size and 0 extent"));
    tether_ir_close(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_within_and_over_the_bound),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
