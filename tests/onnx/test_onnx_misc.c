/*
 * Part of test_onnx_import: the issue-27 leftovers of branch i27g that the ONNX node suite does
 * not pin down by itself: Neg/Abs folded at import (the LayerNormalization function's
 * Shape -> Slice -> Neg -> ConstantOfShape chain on a negative axis), checked on the IR the
 * importer makes and by value through the reference interpreter.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model_builder.h"
#include "tether/compiler.h"
#include "tether/onnx.h"
#include "test_onnx_import.h"

#define F ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

/* x [2, 3, 4]: Shape -> Slice [-1:] -> Neg -> Abs -> ConstantOfShape(value 2) gives a [4] of 2s
 * that Mul scales x's last axis by; the whole shape chain folds at import (one mul node left). */
static void test_fold_neg_abs(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 17);
    int64_t xs[3] = {2, 3, 4}, one_d[1] = {1}, m1 = -1, big = INT64_MAX;
    mb_input(&b, "x", F, 3, xs);
    mb_init_tensor(&b, mb_tensor_i64(&b, "st", 1, one_d, &m1));
    mb_init_tensor(&b, mb_tensor_i64(&b, "en", 1, one_d, &big));
    mb_node(&b, "Shape", "shape", "x", "sh");
    mb_node(&b, "Slice", "last", "sh,st,en", "l");
    mb_node(&b, "Neg", "neg", "l", "nl");
    mb_node(&b, "Abs", "abs", "nl", "al");
    Onnx__NodeProto *cs = mb_node(&b, "ConstantOfShape", "cos", "al", "twos");
    float two = 2.0f;
    mb_attr_t(&b, cs, "value", mb_tensor_f(&b, "", 1, one_d, &two, 0));
    mb_node(&b, "Mul", "scale", "x,twos", "y");
    mb_output(&b, "y", F);
    tether_ir_graph g;
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    assert_int_equal(g.nnodes, 1);
    assert_int_equal(g.nodes[0].op, TETHER_OP_MUL);
    float x[24], y[24];
    for (int i = 0; i < 24; i++) {
        x[i] = (float)i - 5.0f;
    }
    run1(&g, x, y);
    for (int i = 0; i < 24; i++) {
        assert_true(y[i] == 2.0f * x[i]);
    }
    tether_ir_close(&g);
    mb_free(&b);
    /* the negation of INT64_MIN is an error naming the node, never a wrapped value */
    mb_init(&b, 17);
    int64_t lo = INT64_MIN;
    mb_input(&b, "x", F, 3, xs);
    mb_init_tensor(&b, mb_tensor_i64(&b, "v", 1, one_d, &lo));
    mb_node(&b, "Neg", "neg_min", "v", "nv");
    Onnx__NodeProto *c2 = mb_node(&b, "ConstantOfShape", "cos", "nv", "z");
    mb_attr_t(&b, c2, "value", mb_tensor_f(&b, "", 1, one_d, &two, 0));
    mb_node(&b, "Add", "add", "x,z", "y");
    mb_output(&b, "y", F);
    expect_error(&b, TETHER_ERR_LIMIT, "node 'neg_min' (Neg): int64 overflow in Neg(");
    mb_free(&b);
}

void test_onnx_misc(void **state) {
    test_fold_neg_abs(state);
}
