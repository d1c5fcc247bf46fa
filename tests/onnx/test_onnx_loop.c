/*
 * Part of test_onnx_import: Loops whose trip count or condition is known only at run time
 * (compiler/onnx/src/control_loop.c: a run-time loop of the IR, not unrolled), each output
 * compared with values worked out by hand from the ONNX definition: a while-style Loop (no trip
 * count, the condition computed in the body from an int64 counter against an outer-scope limit,
 * a float state scaled by an outer-scope value; also with the initial condition false), and a
 * for-style Loop whose trip count is a graph input (Fibonacci with two states swapped through
 * the body, an int64 state adding the iteration number; also 0 iterations).
 */
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

/* while (cond) { n += 1; y *= x; cond = n < limit } */
static void loop_while(void) {
    static const int64_t d1[1] = {1};
    mb *b = new_mb(13), *body = new_mb(13);
    mb_input(body, "i", I6, 0, NULL);
    mb_input(body, "cin", B, 0, NULL);
    mb_input(body, "nin", I6, 1, d1);
    mb_input(body, "yin", F, 1, d1);
    mb_node(body, "Add", "inc", "nin,one", "nout");
    mb_node(body, "Mul", "scale", "yin,x", "yout");
    mb_node(body, "Less", "lt", "nout,limit", "cvec");
    mb_node(body, "Squeeze", "sq", "cvec", "cout");
    mb_output(body, "cout", B);
    mb_output(body, "nout", I6);
    mb_output(body, "yout", F);
    int64_t one = 1, zero = 0;
    mb_init_tensor(b, mb_tensor_i64(b, "one", 1, d1, &one));
    mb_init_tensor(b, mb_tensor_i64(b, "n0", 1, d1, &zero));
    mb_input(b, "c0", B, 0, NULL);
    mb_input(b, "limit", I6, 1, d1);
    mb_input(b, "x", F, 1, d1);
    mb_input(b, "y0", F, 1, d1);
    Onnx__NodeProto *n = mb_node(b, "Loop", "loop", ",c0,n0,y0", "nfinal,yfinal");
    mb_attr_g(b, n, "body", body);
    mb_output(b, "nfinal", I6);
    mb_output(b, "yfinal", F);
    tether_ir_graph g;
    if (load(b, NULL, &g)) {
        fail_msg("%s", tether_last_error());
    }
    /* c0, limit, x, y0 -> n, y */
    const struct {
        uint8_t c0;
        int64_t limit;
        float x, y0;
        int64_t n;
        float y;
    } cases[] = {
        {1, 5, 2, 1, 5, 32}, {1, 1, 3, 2, 1, 6}, {0, 5, 2, 7, 0, 7}, {1, -3, 0.5f, 8, 1, 4}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        int64_t nf = -1;
        float yf = -1;
        const void *in[4] = {&cases[k].c0, &cases[k].limit, &cases[k].x, &cases[k].y0};
        void *out[2] = {&nf, &yf};
        assert_int_equal(tether_interp_run_typed(&g, in, out), 0);
        assert_int_equal(nf, cases[k].n);
        if (yf != cases[k].y) {
            fail_msg("case %zu: y %g, want %g", k, (double)yf, (double)cases[k].y);
        }
    }
    tether_ir_close(&g);
    del_mb(b);
    del_mb(body);
}

/* for (i = 0; i < M; i++) { (a, b) = (b, a + b); s += i } */
static void loop_for_input_trip(void) {
    static const int64_t d2[1] = {2};
    mb *b = new_mb(13), *body = new_mb(13);
    mb_input(body, "i", I6, 0, NULL);
    mb_input(body, "cin", B, 0, NULL);
    mb_input(body, "ain", F, 1, d2);
    mb_input(body, "bin", F, 1, d2);
    mb_input(body, "sin", I6, 0, NULL);
    mb_node(body, "Add", "fib", "ain,bin", "bout");
    mb_node(body, "Add", "sum", "sin,i", "sout");
    mb_output(body, "cin", B);
    mb_output(body, "bin", F);
    mb_output(body, "bout", F);
    mb_output(body, "sout", I6);
    int64_t zero = 0;
    mb_init_tensor(b, mb_tensor_i64(b, "s0", 0, NULL, &zero));
    mb_input(b, "M", I6, 0, NULL);
    mb_input(b, "a0", F, 1, d2);
    mb_input(b, "b0", F, 1, d2);
    Onnx__NodeProto *n = mb_node(b, "Loop", "loop", "M,,a0,b0,s0", "af,bf,sf");
    mb_attr_g(b, n, "body", body);
    mb_output(b, "af", F);
    mb_output(b, "bf", F);
    mb_output(b, "sf", I6);
    tether_ir_graph g;
    if (load(b, NULL, &g)) {
        fail_msg("%s", tether_last_error());
    }
    const float a0[2] = {0, 2}, b0[2] = {1, 3};
    /* M 6: a = F6 (8), b = F7 (13); from (2, 3): 2,3,5,8,13,21,34,55 -> a 34, b 55; s 15 */
    const int64_t ms[3] = {6, 0, -2};
    const float want[3][4] = {{8, 34, 13, 55}, {0, 2, 1, 3}, {0, 2, 1, 3}};
    const int64_t want_s[3] = {15, 0, 0};
    for (int k = 0; k < 3; k++) {
        float af[2], bf[2];
        int64_t sf = -1;
        const void *in[3] = {&ms[k], a0, b0};
        void *out[3] = {af, bf, &sf};
        assert_int_equal(tether_interp_run_typed(&g, in, out), 0);
        const float got[4] = {af[0], af[1], bf[0], bf[1]};
        for (int j = 0; j < 4; j++) {
            if (got[j] != want[k][j]) {
                fail_msg("M %lld: element %d %g, want %g", (long long)ms[k], j, (double)got[j],
                         (double)want[k][j]);
            }
        }
        assert_int_equal(sf, want_s[k]);
    }
    tether_ir_close(&g);
    del_mb(b);
    del_mb(body);
}

void test_onnx_loop_runtime(void) {
    loop_while();
    loop_for_input_trip();
}
