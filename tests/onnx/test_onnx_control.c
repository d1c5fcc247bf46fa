/*
 * Part of test_onnx_import: ONNX control flow (If, Loop, Scan; compiler/onnx/src/control.c) on
 * models built here, each output compared with values worked out by hand from the ONNX
 * definitions: an If whose condition is a constant converts the taken branch only (the other
 * holds an operator tether does not import), an If on a run-time condition selects per output,
 * a Loop unrolled with loop-carried state, an outer-scope value and a scan output, a Loop whose
 * condition is computed at run time (predicated), a Scan in reverse with a scan output along
 * axis 1, Range's function expansion (its trip count folded from bound inputs through Ceil and
 * Relu, an int32 scan output), and the refusals (scan outputs of a run-time trip count, branch
 * shapes that differ,
 * unrolling past its bound).
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
#include "tether/crt/error.h"
#include "tether/onnx.h"
#include "test_onnx_import.h"

#define F  ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define B  ONNX__TENSOR_PROTO__DATA_TYPE__BOOL
#define I6 ONNX__TENSOR_PROTO__DATA_TYPE__INT64

static void equal_f(const float *got, const float *want, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fail_msg("element %zu: %.7g, want %.7g", i, (double)got[i], (double)want[i]);
        }
    }
}

static mb *new_mb(int opset) {
    mb *b = calloc(1, sizeof *b);
    assert_non_null(b);
    mb_init(b, opset);
    return b;
}

static void del_mb(mb *b) {
    mb_free(b);
    free(b);
}

/* A bool constant of one element. */
static Onnx__TensorProto *bool_const(mb *b, const char *name, int v) {
    int64_t one = v;
    Onnx__TensorProto *t = mb_tensor_i64(b, name, 0, NULL, &one);
    t->data_type = B;
    t->n_int64_data = 0;
    static int32_t store[8];
    static int used;
    t->int32_data = &store[used++ % 8];
    t->int32_data[0] = v;
    t->n_int32_data = 1;
    return t;
}

static void if_constant_condition(void) {
    static const int64_t d4[1] = {4};
    mb *b = new_mb(13), *th = new_mb(13), *el = new_mb(13);
    /* then: y = x + x; else: an operator the importer does not convert (never read) */
    mb_node(th, "Add", "twice", "x,x", "t_out");
    mb_output(th, "t_out", F);
    mb_node(el, "StringNormalizer", "strnorm", "x", "e_out");
    mb_output(el, "e_out", F);
    Onnx__TensorProto *c = bool_const(b, "c", 1);
    mb_init_tensor(b, c);
    mb_input(b, "x", F, 1, d4);
    Onnx__NodeProto *n = mb_node(b, "If", "if1", "c", "y");
    mb_attr_g(b, n, "then_branch", th);
    mb_attr_g(b, n, "else_branch", el);
    mb_output(b, "y", F);
    tether_ir_graph g;
    if (load(b, NULL, &g)) {
        fail_msg("%s", tether_last_error());
    }
    const float x[4] = {1, -2, 3.5f, 0};
    float y[4];
    run1(&g, x, y);
    const float want[4] = {2, -4, 7, 0};
    equal_f(y, want, 4);
    tether_ir_close(&g);
    /* the condition false: the else branch is read, and its StringNormalizer is named */
    c->int32_data[0] = 0;
    expect_error(b, TETHER_ERR_UNSUPPORTED, "StringNormalizer (node 'if1/else/strnorm'");
    del_mb(b);
    del_mb(th);
    del_mb(el);
}

static void if_runtime_condition(void) {
    static const int64_t d3[1] = {3}, d0[1] = {1};
    mb *b = new_mb(13), *th = new_mb(13), *el = new_mb(13);
    mb_node(th, "Mul", "m", "x,x", "t_out");
    mb_output(th, "t_out", F);
    mb_node(el, "Neg", "neg", "x", "e_out");
    mb_output(el, "e_out", F);
    mb_input(b, "x", F, 1, d3);
    mb_input(b, "c", B, 1, d0);
    Onnx__NodeProto *n = mb_node(b, "If", "if1", "c", "y");
    mb_attr_g(b, n, "then_branch", th);
    mb_attr_g(b, n, "else_branch", el);
    mb_output(b, "y", F);
    tether_ir_graph g;
    if (load(b, NULL, &g)) {
        fail_msg("%s", tether_last_error());
    }
    const float x[3] = {3, -1, 0.5f};
    float y[3];
    for (int cv = 0; cv < 2; cv++) {
        uint8_t cond = (uint8_t)cv;
        const void *in[2] = {x, &cond};
        void *out[1] = {y};
        assert_int_equal(tether_interp_run_typed(&g, in, out), 0);
        const float want_t[3] = {9, 1, 0.25f}, want_e[3] = {-3, 1, -0.5f};
        equal_f(y, cv ? want_t : want_e, 3);
    }
    tether_ir_close(&g);
    /* branches whose outputs differ in shape cannot be selected at run time */
    static const int64_t d2[1] = {2};
    Onnx__TensorProto *k = mb_tensor_f(el, "k2", 1, d2, (const float[]){1, 2}, 0);
    el->nodes[0]->op_type = "Identity";
    el->nodes[0]->input[0] = "k2";
    mb_init_tensor(el, k);
    expect_error(b, TETHER_ERR_UNSUPPORTED, "output 0 is float32[3] in one case and float32[2]");
    del_mb(b);
    del_mb(th);
    del_mb(el);
}

/* Loop: trip count 3, y += x each iteration (x from the outer scope), scan output y*i. */
static void loop_unrolled(void) {
    static const int64_t d2[1] = {2};
    mb *b = new_mb(13), *body = new_mb(13);
    mb_input(body, "i", I6, 0, NULL);
    mb_input(body, "cin", B, 0, NULL);
    mb_input(body, "yin", F, 1, d2);
    mb_node(body, "Identity", "keep", "cin", "cout");
    mb_node(body, "Add", "acc", "yin,x", "yout");
    mb_node(body, "Cast", "fi", "i", "fi_out");
    mb_attr_i(body, body->nodes[2], "to", F);
    mb_node(body, "Mul", "scaled", "yout,fi_out", "sout");
    mb_output(body, "cout", B);
    mb_output(body, "yout", F);
    mb_output(body, "sout", F);
    int64_t three = 3;
    mb_init_tensor(b, mb_tensor_i64(b, "M", 0, NULL, &three));
    mb_input(b, "x", F, 1, d2);
    Onnx__NodeProto *n = mb_node(b, "Loop", "loop", "M,,y0", "yfinal,scans");
    mb_attr_g(b, n, "body", body);
    mb_init_tensor(b, mb_tensor_f(b, "y0", 1, d2, (const float[]){10, 20}, 0));
    mb_output(b, "yfinal", F);
    mb_output(b, "scans", F);
    tether_ir_graph g;
    if (load(b, NULL, &g)) {
        fail_msg("%s", tether_last_error());
    }
    const float x[2] = {1, -2};
    float yf[2], sc[6];
    const void *in[1] = {x};
    void *out[2] = {yf, sc};
    assert_int_equal(tether_interp_run_typed(&g, in, out), 0);
    const float want_y[2] = {13, 14}, want_s[6] = {0, 0, 12, 16, 26, 28};
    equal_f(yf, want_y, 2);
    equal_f(sc, want_s, 6);
    assert_int_equal(g.tensors[g.outputs[1]].ndim, 2);
    assert_int_equal(g.tensors[g.outputs[1]].shape[0], 3);
    tether_ir_close(&g);
    /* a trip count known only at run time leaves the scan output's length unbounded */
    b->g.n_initializer = 0;
    mb_init_tensor(b, mb_tensor_f(b, "y0", 1, d2, (const float[]){10, 20}, 0));
    mb_input(b, "M", I6, 0, NULL);
    expect_error(b, TETHER_ERR_UNSUPPORTED, "1 scan output is not bounded at compile time");
    del_mb(b);
    del_mb(body);
}

/* Unrolling is bounded: 4000 iterations of a body of 5 nodes folded at import (y0 a constant)
 * pass the 16,384 inlined nodes. With y0 a graph input the body leaves nodes to run, so the Loop
 * becomes a run-time loop instead (control.c, TONNX_UNROLL_RUNTIME): a handful of nodes. */
static void loop_unroll_bound(void) {
    static const int64_t d1[1] = {1};
    for (int folded = 1; folded >= 0; folded--) {
        mb *b = new_mb(13), *body = new_mb(13);
        mb_input(body, "i", I6, 0, NULL);
        mb_input(body, "cin", B, 0, NULL);
        mb_input(body, "yin", F, 1, d1);
        mb_node(body, "Identity", "keep", "cin", "cout");
        mb_node(body, "Relu", "r1", "yin", "a1");
        mb_node(body, "Relu", "r2", "a1", "a2");
        mb_node(body, "Relu", "r3", "a2", "a3");
        mb_node(body, "Relu", "r4", "a3", "yout");
        mb_output(body, "cout", B);
        mb_output(body, "yout", F);
        int64_t m = 4000;
        float y0 = -2.0f;
        mb_init_tensor(b, mb_tensor_i64(b, "M", 0, NULL, &m));
        if (folded) {
            mb_init_tensor(b, mb_tensor_f(b, "y0", 1, d1, &y0, 0));
        } else {
            mb_input(b, "y0", F, 1, d1);
        }
        Onnx__NodeProto *n = mb_node(b, "Loop", "loop", "M,,y0", "yfinal");
        mb_attr_g(b, n, "body", body);
        mb_output(b, "yfinal", F);
        if (folded) {
            expect_error(b, TETHER_ERR_LIMIT, "past 16384 (loops unrolled too far)");
        } else {
            tether_ir_graph g;
            if (load(b, NULL, &g)) {
                fail_msg("%s", tether_last_error());
            }
            assert_true(g.nnodes < 16);
            const float xs[2] = {-2.0f, 0.75f};
            for (int k = 0; k < 2; k++) {
                float y = -1;
                run1(&g, &xs[k], &y);
                assert_true(y == (xs[k] > 0 ? xs[k] : 0.0f));
            }
            tether_ir_close(&g);
        }
        del_mb(b);
        del_mb(body);
    }
}

/* Loop whose condition is computed at run time: y doubles while y < limit, at most 5 times. */
static void loop_runtime_condition(void) {
    static const int64_t d1[1] = {1};
    mb *b = new_mb(13), *body = new_mb(13);
    mb_input(body, "i", I6, 0, NULL);
    mb_input(body, "cin", B, 0, NULL);
    mb_input(body, "yin", F, 1, d1);
    mb_node(body, "Add", "dbl", "yin,yin", "yout");
    mb_node(body, "Less", "lt", "yout,limit", "cout");
    mb_output(body, "cout", B);
    mb_output(body, "yout", F);
    int64_t five = 5;
    mb_init_tensor(b, mb_tensor_i64(b, "M", 0, NULL, &five));
    mb_init_tensor(b, bool_const(b, "c0", 1));
    mb_input(b, "y0", F, 1, d1);
    mb_input(b, "limit", F, 1, d1);
    Onnx__NodeProto *n = mb_node(b, "Loop", "loop", "M,c0,y0", "yfinal");
    mb_attr_g(b, n, "body", body);
    mb_output(b, "yfinal", F);
    tether_ir_graph g;
    if (load(b, NULL, &g)) {
        fail_msg("%s", tether_last_error());
    }
    /* y0 1, limit 5: 2, 4, 8 (8 >= 5 stops) -> 8; limit 1000: five doublings -> 32 */
    const float cases[3][3] = {{1, 5, 8}, {1, 1000, 32}, {3, 1, 6}};
    for (int k = 0; k < 3; k++) {
        float y;
        const void *in[2] = {&cases[k][0], &cases[k][1]};
        void *out[1] = {&y};
        assert_int_equal(tether_interp_run_typed(&g, in, out), 0);
        equal_f(&y, &cases[k][2], 1);
    }
    tether_ir_close(&g);
    del_mb(b);
    del_mb(body);
}

/* Scan over a constant [2,3] along axis 1 in reverse: a running sum, scan output along axis 1. */
static void scan_unrolled(void) {
    static const int64_t d2[1] = {2}, d23[2] = {2, 3};
    mb *b = new_mb(13), *body = new_mb(13);
    mb_input(body, "sin", F, 1, d2);
    mb_input(body, "col", F, 1, d2);
    mb_node(body, "Add", "acc", "sin,col", "sout");
    mb_node(body, "Mul", "sq", "sout,sout", "scan_out");
    mb_output(body, "sout", F);
    mb_output(body, "scan_out", F);
    mb_init_tensor(b, mb_tensor_f(b, "seq", 2, d23, (const float[]){1, 2, 3, 4, 5, 6}, 0));
    mb_input(b, "s0", F, 1, d2);
    Onnx__NodeProto *n = mb_node(b, "Scan", "scan", "s0,seq", "sfinal,outs");
    mb_attr_g(b, n, "body", body);
    mb_attr_i(b, n, "num_scan_inputs", 1);
    mb_attr_ints(b, n, "scan_input_axes", 1, (const int64_t[]){1});
    mb_attr_ints(b, n, "scan_input_directions", 1, (const int64_t[]){1});
    mb_attr_ints(b, n, "scan_output_axes", 1, (const int64_t[]){-1});
    mb_output(b, "sfinal", F);
    mb_output(b, "outs", F);
    tether_ir_graph g;
    if (load(b, NULL, &g)) {
        fail_msg("%s", tether_last_error());
    }
    const float s0[2] = {0, 1};
    float sf[2], outs[6];
    const void *in[1] = {s0};
    void *out[2] = {sf, outs};
    assert_int_equal(tether_interp_run_typed(&g, in, out), 0);
    /* columns in reverse: (3,6) (2,5) (1,4): sums (3,7) (5,12) (6,16); squares along axis 1 */
    const float want_s[2] = {6, 16}, want_o[6] = {9, 25, 36, 49, 144, 256};
    equal_f(sf, want_s, 2);
    equal_f(outs, want_o, 6);
    tether_ir_close(&g);
    del_mb(b);
    del_mb(body);
}

/* Range's function expansion (as the ONNX node suite writes it): the trip count is
 * Cast(Relu(Ceil((limit - start) / delta))) of int32 inputs bound with values; Ceil and Relu
 * fold at import, the Loop unrolls, and its scan output keeps the int32 type. start 10, limit 3,
 * delta -3: ceil(7/3) = 3 iterations, [10, 7, 4]; limit 20: ceil(-10/3) = -3, relu 0 gives an
 * empty loop (refused: no iteration, no scan shape). */
static void loop_range_expansion(void) {
    mb *b = new_mb(13), *body = new_mb(13);
    const int I3 = ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    mb_input(body, "i", I6, 0, NULL);
    mb_input(body, "cin", B, 0, NULL);
    mb_input(body, "prev", I3, 0, NULL);
    mb_node(body, "Identity", "keep", "cin", "cout");
    mb_node(body, "Identity", "cur", "prev", "current");
    mb_node(body, "Add", "step", "prev,delta", "next");
    mb_output(body, "cout", B);
    mb_output(body, "next", I3);
    mb_output(body, "current", I3);
    mb_input(b, "start", I3, 0, NULL);
    mb_input(b, "limit", I3, 0, NULL);
    mb_input(b, "delta", I3, 0, NULL);
    mb_node(b, "Sub", "sub", "limit,start", "d");
    mb_node(b, "Cast", "df", "d", "d_f");
    mb_attr_i(b, b->nodes[1], "to", F);
    mb_node(b, "Cast", "sf", "delta", "delta_f");
    mb_attr_i(b, b->nodes[2], "to", F);
    mb_node(b, "Div", "div", "d_f,delta_f", "q");
    mb_node(b, "Ceil", "ceil", "q", "qc");
    mb_node(b, "Relu", "relu", "qc", "qr");
    mb_node(b, "Cast", "mi", "qr", "M");
    mb_attr_i(b, b->nodes[6], "to", I6);
    mb_node(b, "Cast", "mb", "M", "c0");
    mb_attr_i(b, b->nodes[7], "to", B);
    Onnx__NodeProto *n = mb_node(b, "Loop", "loop", "M,c0,start", "last,out");
    mb_attr_g(b, n, "body", body);
    mb_output(b, "out", I3);
    int32_t vals[3] = {10, 3, -3};
    tether_model_value v[3];
    memset(v, 0, sizeof v);
    for (int i = 0; i < 3; i++) {
        v[i].dtype = (DLDataType){kDLInt, 32, 1};
        v[i].data = &vals[i];
        v[i].nbytes = sizeof vals[i];
    }
    unsigned char bound[3] = {0};
    tether_model_load_options o;
    memset(&o, 0, sizeof o);
    o.input_values = v;
    o.ninput_values = 3;
    o.input_bound = bound;
    tether_ir_graph g;
    if (load(b, &o, &g)) {
        fail_msg("%s", tether_last_error());
    }
    assert_int_equal(g.ninputs, 0);
    const tether_ir_tensor *t = &g.tensors[g.outputs[0]];
    assert_int_equal(t->dtype.code, kDLInt);
    assert_int_equal(t->dtype.bits, 32);
    assert_int_equal(t->ndim, 1);
    assert_int_equal(t->shape[0], 3);
    int32_t got[3] = {0};
    void *out[1] = {got};
    assert_int_equal(tether_interp_run_typed(&g, NULL, out), 0);
    assert_int_equal(got[0], 10);
    assert_int_equal(got[1], 7);
    assert_int_equal(got[2], 4);
    tether_ir_close(&g);
    vals[1] = 20;
    assert_int_equal(load(b, &o, &g), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "runs no iteration"));
    del_mb(b);
    del_mb(body);
}

void test_onnx_control_flow(void **state) {
    (void)state;
    if_constant_condition();
    if_runtime_condition();
    loop_unrolled();
    loop_runtime_condition();
    loop_unroll_bound();
    scan_unrolled();
    loop_range_expansion();
    test_onnx_loop_runtime();
}
