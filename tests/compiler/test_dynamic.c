/*
 * Data-dependent output sizes (nonzero, compress, unique, nms; docs/onnx.md "Data-dependent
 * output sizes", docs/abi.md): a count above the bound is an error at run time, never an
 * overrun (the interpreter's TETHER_ERR_LIMIT; the compiled entry's -4 in both ABIs, the bytes
 * past the bound untouched); a count within it gives the data of the actual shape and its extent
 * output; a dynamic tensor read by another node, or a dynamic output without its extent output,
 * is refused naming it unless it may consume one (a detection head: nms, gather, reshape, mul).
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

/* Input 1 of a reduce node is the live extent the compiler wires to a reduction over dimension 0
 * of dynamic data: a model that gives a reduce two inputs itself (a static int64 [1] or a float
 * tensor) is refused naming the node, never read as a row count. */
static void test_reduce_second_input_refused(void **state) {
    (void)state;
    for (int kind = 0; kind < 2; kind++) {
        tether_ir_graph g;
        assert_int_equal(tether_ir_init(&g, "red2"), 0);
        int64_t s4 = 4, s1 = 1;
        int x, c, y;
        assert_int_equal(tether_ir_add_tensor(&g, "x", TETHER_FLOAT32, 1, &s4, &x), 0);
        assert_int_equal(tether_ir_add_tensor(&g, "c", kind ? TETHER_FLOAT32 : TETHER_INT64, 1,
                                              kind ? &s4 : &s1, &c),
                         0);
        assert_int_equal(
            tether_ir_add_tensor(&g, "y", TETHER_FLOAT32, TETHER_IR_SHAPE_UNKNOWN, NULL, &y), 0);
        tether_ir_attrs a;
        tether_ir_attrs_init(TETHER_OP_REDUCE_MEAN, &a);
        int in[2] = {x, c};
        assert_int_equal(
            tether_ir_add_node(&g, "mean", TETHER_OP_REDUCE_MEAN, in, 2, &y, 1, &a, NULL), 0);
        assert_int_equal(tether_ir_add_input(&g, x), 0);
        assert_int_equal(tether_ir_add_input(&g, c), 0);
        assert_int_equal(tether_ir_add_output(&g, y), 0);
        assert_int_equal(tether_ir_infer(&g), TETHER_ERR_INVALID_ARG);
        assert_non_null(strstr(tether_last_error(), "node 'mean' (reduce_mean): 2 inputs"));
        tether_ir_close(&g);
    }
}

/* A detection head: boxes [1,4,4], scores [1,1,4] -> nms (capped at cap rows) -> its column 2
 * (gather axis 1 by a constant scalar) -> the boxes it selects (gather axis 0 of the boxes as
 * [4,4]) -> times a constant [4]: a graph output dynamic along dimension 0 (at most cap rows). */
static void build_head(tether_ir_graph *g, int64_t cap) {
    assert_int_equal(tether_ir_init(g, "head"), 0);
    int64_t sb[3] = {1, 4, 4}, ss[3] = {1, 1, 4}, s44[2] = {4, 4}, s4 = 4;
    int boxes, scores, sel, col, b2, picked, scale, two, y;
    assert_int_equal(tether_ir_add_tensor(g, "boxes", TETHER_FLOAT32, 3, sb, &boxes), 0);
    assert_int_equal(tether_ir_add_tensor(g, "scores", TETHER_FLOAT32, 3, ss, &scores), 0);
    const int64_t idx2 = 2;
    const float sc[4] = {1, 2, 3, 4};
    assert_int_equal(tether_ir_add_constant(g, "two", TETHER_INT64, 0, NULL, &idx2, 8, &two), 0);
    assert_int_equal(tether_ir_add_constant(g, "scale", TETHER_FLOAT32, 1, &s4, sc, 16, &scale), 0);
    const char *names[5] = {"sel", "col", "b2", "picked", "y"};
    int *ts[5] = {&sel, &col, &b2, &picked, &y};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(
            tether_ir_add_tensor(g, names[i], TETHER_FLOAT32, TETHER_IR_SHAPE_UNKNOWN, NULL, ts[i]),
            0);
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_NMS, &a);
    a.k = 4;
    a.alpha = 0.5f;
    a.beta = 0.5f;
    a.mode = 4;
    a.nints = 1;
    a.ints[0] = cap;
    int nin[2] = {boxes, scores};
    assert_int_equal(tether_ir_add_node(g, "nms", TETHER_OP_NMS, nin, 2, &sel, 1, &a, NULL), 0);
    tether_ir_attrs_init(TETHER_OP_GATHER, &a);
    a.axis = 1;
    int gin[2] = {sel, two};
    assert_int_equal(tether_ir_add_node(g, "col", TETHER_OP_GATHER, gin, 2, &col, 1, &a, NULL), 0);
    tether_ir_attrs_init(TETHER_OP_RESHAPE, &a);
    memcpy(a.ints, s44, sizeof s44);
    a.nints = 2;
    assert_int_equal(tether_ir_add_node(g, "b2", TETHER_OP_RESHAPE, &boxes, 1, &b2, 1, &a, NULL),
                     0);
    tether_ir_attrs_init(TETHER_OP_GATHER, &a);
    int pin[2] = {b2, col};
    assert_int_equal(tether_ir_add_node(g, "pick", TETHER_OP_GATHER, pin, 2, &picked, 1, &a, NULL),
                     0);
    int min[2] = {picked, scale};
    assert_int_equal(tether_ir_add_node(g, "mul", TETHER_OP_MUL, min, 2, &y, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_input(g, boxes), 0);
    assert_int_equal(tether_ir_add_input(g, scores), 0);
    assert_int_equal(tether_ir_add_output(g, y), 0);
    assert_int_equal(tether_ir_add_extent_outputs(g), 0);
    if (tether_ir_infer(g)) {
        fail_msg("%s", tether_last_error());
    }
}

/* Consumers of a dynamic tensor (gather, reshape, elementwise) give the actual rows, the same in
 * the interpreter and both ABIs; over the cap the chain fails like its root. */
static void test_detection_head(void **state) {
    (void)state;
    tether_ir_graph g;
    build_head(&g, 4);
    assert_int_equal(g.noutputs, 2);
    assert_string_equal(g.tensors[g.outputs[1]].name, "y_extent");
    assert_int_equal(g.tensors[g.outputs[0]].dyn_dim, 1);
    assert_int_equal(g.tensors[g.outputs[0]].shape[0], 4);
    /* b0, b1 (IoU 0.95 with b0: suppressed), b2 kept, b3 under the score threshold */
    const float boxes[16] = {0, 0, 1, 1, 0, 0, 1, 1.05f, 2, 2, 3, 3, 5, 5, 6, 6};
    const float scores[4] = {0.9f, 0.8f, 0.7f, 0.1f};
    const float want[8] = {0, 0, 3, 4, 2, 4, 9, 12};
    for (int abi = -1; abi < 2; abi++) {
        float y[16];
        int64_t ext = -1;
        for (int i = 0; i < 16; i++) {
            y[i] = -7.0f;
        }
        const float *in[2] = {boxes, scores};
        float *out[2] = {y, (float *)&ext};
        int rc = abi < 0 ? tether_interp_run_typed(&g, (const void *const *)in, (void *const *)out)
                         : tt_run_compiled(&g, abi ? "head_unpacked" : "head_packed",
                                           abi ? TETHER_ABI_UNPACKED : TETHER_ABI_PACKED,
                                           TETHER_INTERFACE_PACKED, true, in, out);
        if (rc) {
            fail_msg("abi %d: %s", abi, tether_last_error());
        }
        assert_int_equal(ext, 2);
        assert_memory_equal(y, want, sizeof want);
    }
    tether_ir_close(&g);
    build_head(&g, 1);
    const float *in[2] = {boxes, scores};
    float y[4];
    int64_t ext;
    float *out[2] = {y, (float *)&ext};
    assert_int_equal(tether_interp_run_typed(&g, (const void *const *)in, (void *const *)out),
                     TETHER_ERR_LIMIT);
    tether_ir_close(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_within_and_over_the_bound),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_reduce_second_input_refused),
        cmocka_unit_test(test_detection_head),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
