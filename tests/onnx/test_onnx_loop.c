/*
 * Part of test_onnx_import: Loops whose trip count or condition is known only at run time
 * (compiler/onnx/src/control_loop.c: a run-time loop of the IR, not unrolled), each output
 * compared with values worked out by hand from the ONNX definition: a while-style Loop (no trip
 * count, the condition computed in the body from an int64 counter against an outer-scope limit,
 * a float state scaled by an outer-scope value; also with the initial condition false), and a
 * for-style Loop whose trip count is a graph input (Fibonacci with two states swapped through
 * the body, an int64 state adding the iteration number; also 0 iterations), and scan outputs of
 * a Loop of constant M whose run-time condition stops it early (bounded by M, their extent the
 * iterations run; refused when M has no bound), and scan outputs of a Loop whose M is known
 * only at run time (bounded by --loop-max or by a value-range bound of M; more iterations than
 * the rows are TETHER_ERR_LIMIT; a body gathering an outer input at the iteration number; a
 * body Slice with a run-time start refused), readers of a scan output beyond elementwise ones (a
 * sum over the iterations, matmul, concat; concat along the iterations and a transpose moving
 * them by the live extent), and an ONNX Scan over
 * run-time inputs in both directions along two axes.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "loop_models.h"
#include "model_builder.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/onnx.h"
#include "test_onnx_import.h"

static mb *new_mb(void) {
    mb *b = calloc(1, sizeof *b);
    assert_non_null(b);
    return b;
}

static void del_mb(mb *b) {
    mb_free(b);
    free(b);
}

/* while (cond) { n += 1; y *= x; cond = n < limit } */
static void loop_while(void) {
    mb *b = new_mb(), *body = new_mb();
    loop_while_model(b, body);
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
    mb *b = new_mb(), *body = new_mb();
    loop_for_model(b, body);
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

/* The while-style Loop with its initial condition bound to true (as `tether run --in` and `ab`
 * bind it): the body's condition is computed at run time, so the Loop is a run-time loop, not
 * unrolled (the unrolling predicated 4,096 iterations, which took minutes and then stopped
 * short of a longer loop's end without a word). limit 5000 runs past that. */
static void loop_while_bound_cond(void) {
    mb *b = new_mb(), *body = new_mb();
    loop_while_model(b, body);
    const uint8_t yes = 1;
    tether_model_value v[4];
    memset(v, 0, sizeof v);
    v[0].dtype = TETHER_BOOL;
    v[0].data = &yes;
    v[0].nbytes = 1;
    unsigned char bound[4] = {0};
    tether_model_load_options o;
    memset(&o, 0, sizeof o);
    o.input_values = v;
    o.ninput_values = 4;
    o.input_bound = bound;
    tether_ir_graph g;
    if (load(b, &o, &g)) {
        fail_msg("%s", tether_last_error());
    }
    assert_int_equal(bound[0], 1);
    assert_int_equal(g.ninputs, 3);
    int begins = 0;
    for (int i = 0; i < g.nnodes; i++) {
        begins += g.nodes[i].op == TETHER_OP_LOOP_BEGIN;
    }
    assert_int_equal(begins, 1);
    assert_true(g.nnodes < 20);
    const int64_t limits[3] = {5000, 3, -1};
    for (int k = 0; k < 3; k++) {
        const float x = 1.0f, y0 = 2.0f;
        int64_t nf = -1;
        float yf = -1;
        const void *in[3] = {&limits[k], &x, &y0};
        void *out[2] = {&nf, &yf};
        assert_int_equal(tether_interp_run_typed(&g, in, out), 0);
        assert_int_equal(nf, limits[k] > 1 ? limits[k] : 1); /* the body runs at least once */
        assert_true(yf == 2.0f);
    }
    tether_ir_close(&g);
    del_mb(b);
    del_mb(body);
}

/* A body whose condition is a constant false: the Loop runs its body once (a bool constant, not
 * the int64 one the fold made), and one that is always true with no trip count is refused. */
static void loop_const_body_cond(void) {
    for (int always = 0; always < 2; always++) {
        static const int64_t d1[1] = {1};
        mb *b = new_mb(), *body = new_mb();
        mb_init(b, 13);
        mb_init(body, 13);
        mb_input(body, "i", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 0, NULL);
        mb_input(body, "cin", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL);
        mb_input(body, "yin", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d1);
        mb_node(body, "Add", "twice", "yin,yin", "yout");
        int64_t k0 = always;
        mb_init_tensor(b, mb_tensor_i64(b, "k0", 0, NULL, &k0));
        Onnx__NodeProto *cast = mb_node(body, "Cast", "tobool", "k0", "cout"); /* folded */
        mb_attr_i(body, cast, "to", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL);
        mb_output(body, "cout", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL);
        mb_output(body, "yout", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
        mb_input(b, "c0", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL);
        mb_input(b, "y0", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d1);
        Onnx__NodeProto *n = mb_node(b, "Loop", "loop", ",c0,y0", "yf");
        mb_attr_g(b, n, "body", body);
        mb_output(b, "yf", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
        if (always) {
            expect_error(b, TETHER_ERR_UNSUPPORTED,
                         "Loop 'loop' has no trip count and its body's condition is always true");
        } else {
            tether_ir_graph g;
            if (load(b, NULL, &g)) {
                fail_msg("%s", tether_last_error());
            }
            for (uint8_t c0 = 0; c0 < 2; c0++) {
                const float y0 = 3.0f;
                float yf = -1;
                const void *in[2] = {&c0, &y0};
                void *out[1] = {&yf};
                assert_int_equal(tether_interp_run_typed(&g, in, out), 0);
                assert_true(yf == (c0 ? 6.0f : 3.0f));
            }
            tether_ir_close(&g);
        }
        del_mb(b);
        del_mb(body);
    }
}

/* Scan outputs of a run-time loop (loop_scan_model): M = 8 constant, the condition computed at
 * run time stops the loop early; the scan outputs are bounded by M, dynamic along dimension 0,
 * their extent the iterations run (extent outputs ys_extent, ns_extent); rows past it are zero.
 * With M a graph input they are refused, naming the Loop and how to bound them; an elementwise
 * consumer of one (variant 3) is dynamic with the same extent. */
static void loop_scan_runtime(void) {
    for (int variant = 0; variant < 4; variant++) {
        mb *b = new_mb(), *body = new_mb();
        loop_scan_model(b, body, variant);
        float scale = variant == 3 ? 2.0f : 1.0f;
        if (variant == 2) { /* loop_scan_trip below, with --loop-max */
            expect_error(b, TETHER_ERR_UNSUPPORTED,
                         "Loop 'loop' runs a number of iterations known only at run time, so the "
                         "length of its 2 scan outputs is not bounded at compile time: pass "
                         "--loop-max N");
            del_mb(b);
            del_mb(body);
            continue;
        }
        tether_ir_graph g;
        if (load(b, NULL, &g)) {
            fail_msg("%s", tether_last_error());
        }
        int begins = 0;
        for (int i = 0; i < g.nnodes; i++) {
            begins += g.nodes[i].op == TETHER_OP_LOOP_BEGIN;
        }
        assert_int_equal(begins, 1); /* a run-time loop, not unrolled */
        assert_int_equal(g.noutputs, 6);
        const tether_ir_tensor *ys = &g.tensors[g.outputs[2]], *ns = &g.tensors[g.outputs[3]];
        assert_int_equal(ys->dyn_dim, 1);
        assert_int_equal(ns->dyn_dim, 1);
        assert_int_equal(ys->ndim, 2);
        assert_int_equal(ys->shape[0], 8);
        assert_int_equal(ys->shape[1], 2);
        assert_true(tether_dtype_equal(ns->dtype, TETHER_INT64));
        assert_int_equal(ns->shape[0], 8);
        assert_string_equal(g.tensors[g.outputs[4]].name,
                            variant == 3 ? "ys2_extent" : "ys_extent");
        assert_string_equal(g.tensors[g.outputs[5]].name, "ns_extent");
        assert_int_equal(g.tensors[g.outputs[4]].dyn_dim, -1);
        /* c0, limit -> iterations (x = {2, 0.5}: y after k of them is {2^k, -0.5^k}) */
        const struct {
            uint8_t c0;
            int64_t limit, iters;
        } cases[] = {{1, 5, 5}, {1, 20, 8}, {0, 5, 0}, {1, -3, 1}, {1, 8, 8}};
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            if (variant == 1 && !cases[k].c0) {
                continue;
            }
            const float x[2] = {2, 0.5f};
            int64_t nf = -1, nsv[8], ye = -1, ne = -1;
            float yf[2], ysv[16];
            memset(nsv, 0x5A, sizeof nsv);
            memset(ysv, 0x5A, sizeof ysv);
            const void *in0[3] = {&cases[k].c0, &cases[k].limit, x};
            const void *const *in = variant == 1 ? in0 + 1 : in0;
            void *out[6] = {&nf, yf, ysv, nsv, &ye, &ne};
            assert_int_equal(tether_interp_run_typed(&g, in, out), 0);
            int64_t it = cases[k].iters;
            assert_int_equal(nf, it);
            assert_int_equal(ye, it);
            assert_int_equal(ne, it);
            float p = 1, q = -1;
            for (int r = 0; r < 8; r++) {
                p *= 2;
                q *= 0.5f;
                bool live = r < it;
                if (ysv[2 * r] != (live ? scale * p : 0) ||
                    ysv[2 * r + 1] != (live ? scale * q : 0) || nsv[r] != (live ? r + 1 : 0)) {
                    fail_msg("variant %d case %zu row %d: ys %g %g ns %lld", variant, k, r,
                             (double)ysv[2 * r], (double)ysv[2 * r + 1], (long long)nsv[r]);
                }
                if (r + 1 == it) {
                    assert_true(yf[0] == p && yf[1] == q);
                }
            }
            if (it == 0) {
                assert_true(yf[0] == 1 && yf[1] == -1);
            }
        }
        tether_ir_close(&g);
        del_mb(b);
        del_mb(body);
    }
}

/* Scan outputs of a Loop whose trip count M is known only at run time: a graph input bounded by
 * the load options' loop_max (--loop-max), M = Min(Mraw, 6) (the value-range bound 6, or a
 * smaller loop_max), M = Cast(uint8) (255). The rows are the bound; M above it is
 * TETHER_ERR_LIMIT at run time, naming the node. */
static void loop_scan_trip(void) {
    const struct {
        int variant;
        int64_t loop_max, rows;
    } models[] = {{2, 8, 8}, {2, 3, 3}, {4, 0, 6}, {4, 100, 6}, {4, 4, 4}, {5, 0, 255}};
    for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++) {
        mb *b = new_mb(), *body = new_mb();
        loop_scan_model(b, body, models[mi].variant);
        tether_model_load_options o;
        memset(&o, 0, sizeof o);
        o.loop_max = models[mi].loop_max;
        tether_ir_graph g;
        if (load(b, &o, &g)) {
            fail_msg("model %zu: %s", mi, tether_last_error());
        }
        int64_t rows = models[mi].rows;
        const tether_ir_tensor *ys = &g.tensors[g.outputs[2]], *ns = &g.tensors[g.outputs[3]];
        assert_int_equal(ys->dyn_dim, 1);
        assert_int_equal(ys->shape[0], rows);
        assert_int_equal(ns->shape[0], rows);
        assert_true(tether_dtype_equal(g.tensors[g.inputs[0]].dtype,
                                       models[mi].variant == 5 ? TETHER_UINT8 : TETHER_INT64));
        /* M, c0, limit -> iterations (x = {2, 0.5}: y after k of them is {2^k, -0.5^k}); -1:
         * more iterations than rows, TETHER_ERR_LIMIT */
        const struct {
            int64_t m;
            uint8_t c0;
            int64_t limit;
        } cases[] = {{8, 1, 5},  {3, 1, 20}, {0, 1, 20},   {2, 0, 5},
                     {6, 1, 20}, {9, 1, 20}, {200, 1, 300}};
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            int64_t m = cases[k].m;
            int64_t want = m;
            if (models[mi].variant == 4 && want > 6) {
                want = 6;
            }
            want = !cases[k].c0 ? 0 : (want < cases[k].limit ? want : cases[k].limit);
            const float x[2] = {2, 0.5f};
            uint8_t m8 = (uint8_t)m;
            int64_t nf = -1, ye = -1, ne = -1;
            int64_t *nsv = calloc((size_t)rows, sizeof *nsv);
            float yf[2], *ysv = calloc((size_t)rows * 2, sizeof *ysv);
            assert_true(nsv && ysv);
            const void *in[4] = {models[mi].variant == 5 ? (const void *)&m8 : (const void *)&m,
                                 &cases[k].c0, &cases[k].limit, x};
            void *out[6] = {&nf, yf, ysv, nsv, &ye, &ne};
            int rc = tether_interp_run_typed(&g, in, out);
            if (want > rows) {
                assert_int_equal(rc, TETHER_ERR_LIMIT);
                assert_non_null(strstr(tether_last_error(), "loop_scan"));
                free(nsv);
                free(ysv);
                continue;
            }
            if (rc) {
                fail_msg("model %zu case %zu: %s", mi, k, tether_last_error());
            }
            assert_int_equal(nf, want);
            assert_int_equal(ye, want);
            assert_int_equal(ne, want);
            float p = 1, q = -1;
            for (int64_t r = 0; r < rows; r++) {
                p *= 2;
                q *= 0.5f;
                bool live = r < want;
                if (ysv[2 * r] != (live ? p : 0) || ysv[2 * r + 1] != (live ? q : 0) ||
                    nsv[r] != (live ? r + 1 : 0)) {
                    fail_msg("model %zu case %zu row %lld: ys %g %g ns %lld", mi, k, (long long)r,
                             (double)ysv[2 * r], (double)ysv[2 * r + 1], (long long)nsv[r]);
                }
            }
            free(nsv);
            free(ysv);
        }
        tether_ir_close(&g);
        del_mb(b);
        del_mb(body);
    }
}

/* A run-time trip count M bounded by loop_max whose body picks element i of an outer-scope input
 * (loop_slice_model). By Gather: the running sum and the scan output's rows by hand, M = 0..6;
 * M = 7 fails at the gather of seq[6] (an index out of range, before row 6 past the bound). By
 * Slice (PyTorch's x[i:i+1], lowered to a gather of [i] + [0]): the same values, and the same
 * run-time error for the slice [6, 7) that ONNX would clamp to an empty one. */
static void loop_slice_trip(void) {
    for (int form = 0; form < 2; form++) { /* Gather, then Slice(seq, [i], [i] + 1) */
        mb *b = new_mb(), *body = new_mb();
        loop_slice_model(b, body, form == 0);
        tether_model_load_options o;
        memset(&o, 0, sizeof o);
        o.loop_max = 6;
        tether_ir_graph g;
        if (load(b, &o, &g)) {
            fail_msg("%s", tether_last_error());
        }
        del_mb(b);
        del_mb(body);
        assert_int_equal(g.tensors[g.outputs[1]].dyn_dim, 1);
        assert_int_equal(g.tensors[g.outputs[1]].shape[0], 6);
        const float seq[6] = {1, 2, 4, 8, 16, 32};
        for (int64_t m = 0; m <= 7; m++) {
            float sf = -1, els[6];
            int64_t ext = -1;
            memset(els, 0xff, sizeof els);
            const void *in[2] = {&m, seq};
            void *out[3] = {&sf, els, &ext};
            int rc = tether_interp_run_typed(&g, in, out);
            if (m == 7) { /* iteration 6 picks seq[6] (the slice [6, 7) is empty) first */
                assert_int_equal(rc, TETHER_ERR_INVALID_ARG);
                assert_non_null(strstr(tether_last_error(), "node 'loop/body/pick' (gather): index "
                                                            "6 out of range for an extent of 6"));
                break;
            }
            if (rc) {
                fail_msg("M %lld: %s", (long long)m, tether_last_error());
            }
            assert_int_equal(ext, m);
            assert_true(sf == (float)((1 << m) - 1));
            for (int64_t r = 0; r < 6; r++) {
                assert_true(els[r] == (r < m ? seq[r] : 0));
            }
        }
        tether_ir_close(&g);
    }
}

/* ONNX Scan over run-time scan inputs in both directions along different axes, scan outputs
 * along the last axis in reverse and along axis 0 (scan_dirs_model), by hand. */
static void scan_directions(void) {
    mb *b = new_mb(), *body = new_mb();
    scan_dirs_model(b, body);
    tether_ir_graph g;
    if (load(b, NULL, &g)) {
        fail_msg("%s", tether_last_error());
    }
    assert_int_equal(g.ninputs, 3);
    const float s0[2] = {0, 1}, seq[6] = {1, 2, 3, 4, 5, 6}, seq2[6] = {10, 20, 30, 40, 50, 60};
    float sf[2], o1[6], o2[6];
    const void *in[3] = {s0, seq, seq2};
    void *out[3] = {sf, o1, o2};
    assert_int_equal(tether_interp_run_typed(&g, in, out), 0);
    /* columns (3,6) (2,5) (1,4) with rows (10,20) (30,40) (50,60): s = (13,27) (45,72) (96,136);
     * outs1 holds s*s from the last column back, outs2 s - row in order */
    const float want_s[2] = {96, 136}, want1[6] = {9216, 2025, 169, 18496, 5184, 729},
                want2[6] = {3, 7, 15, 32, 46, 76};
    assert_memory_equal(sf, want_s, sizeof want_s);
    assert_memory_equal(o1, want1, sizeof want1);
    assert_memory_equal(o2, want2, sizeof want2);
    tether_ir_close(&g);
    del_mb(b);
    del_mb(body);
}

/* Readers of a dynamic scan output beyond elementwise ones (loop_scan_model variant 6): a sum
 * over the iterations (static [2]), a matmul by a constant (rows, dynamic), a concat along axis
 * 1 with ys * ys (dynamic), a sum over the matmul's rows (static), and the reductions over the
 * iterations that read the live row count (mean, max, min, prod, a sum of Exp(ys) whose padding
 * is not zero); by hand, with 5, 8 and no iterations (ONNX's empty reductions: mean NaN, max
 * -inf, min +inf, prod 1, sum 0). A concat along the iterations (variant 7: the rows twice,
 * packed, extent twice the iterations) and a transpose moving them (8: [2, iterations] dense at
 * the start of the [2, 8] buffer) read the live extent; by value, zeros past it. */
static void loop_scan_readers(void) {
    for (int variant = 7; variant <= 8; variant++) {
        mb *b = new_mb(), *body = new_mb();
        loop_scan_model(b, body, variant);
        tether_ir_graph g;
        if (load(b, NULL, &g)) {
            fail_msg("%s", tether_last_error());
        }
        assert_int_equal(g.noutputs, 6);
        assert_int_equal(g.tensors[g.outputs[2]].dyn_dim, variant == 7 ? 1 : 2);
        assert_string_equal(g.tensors[g.outputs[4]].name, "red_out_extent");
        const int64_t limits[3] = {5, 20, 0};
        for (int k = 0; k < 3; k++) {
            const uint8_t c0 = limits[k] > 0;
            const float x[2] = {2, 0.5f};
            int64_t nf, nsv[8], re = -1, ne = -1;
            float yf[2], red[32], want[32] = {0};
            memset(red, 0xff, sizeof red);
            const void *in[3] = {&c0, &limits[k], x};
            void *out[6] = {&nf, yf, red, nsv, &re, &ne};
            if (tether_interp_run_typed(&g, in, out)) {
                fail_msg("%s", tether_last_error());
            }
            int64_t it = k == 0 ? 5 : (k == 1 ? 8 : 0);
            assert_int_equal(ne, it);
            assert_int_equal(re, variant == 7 ? 2 * it : it);
            float p = 1, q = -1;
            for (int64_t r = 0; r < it; r++) {
                p *= 2;
                q *= 0.5f;
                if (variant == 7) { /* the rows, then the rows again, packed */
                    want[2 * r] = want[2 * (it + r)] = p;
                    want[2 * r + 1] = want[2 * (it + r) + 1] = q;
                } else { /* [2, it], dense */
                    want[r] = p;
                    want[it + r] = q;
                }
            }
            assert_memory_equal(red, want, sizeof(float) * (variant == 7 ? 32 : 16));
        }
        tether_ir_close(&g);
        del_mb(b);
        del_mb(body);
    }
    mb *b = new_mb(), *body = new_mb();
    loop_scan_model(b, body, 6);
    tether_ir_graph g;
    if (load(b, NULL, &g)) {
        fail_msg("%s", tether_last_error());
    }
    assert_int_equal(g.noutputs, 15);
    const int dyn[15] = {0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, -1, -1, -1};
    for (int i = 0; i < 15; i++) {
        assert_int_equal(g.tensors[g.outputs[i]].dyn_dim, dyn[i]);
    }
    assert_string_equal(g.tensors[g.outputs[12]].name, "proj_extent");
    assert_string_equal(g.tensors[g.outputs[13]].name, "cat_extent");
    const int64_t limits[3] = {5, 20, 0};
    for (int k = 0; k < 3; k++) {
        const uint8_t c0 = limits[k] > 0;
        const float x[2] = {2, 0.5f};
        int64_t nf, nsv[8], pe = -1, ce = -1, ne = -1;
        float yf[2], tot[2], proj[8], cat[32], tot2, mean[2], mx[2], mn[2], prod[2], esum[2];
        const void *in[3] = {&c0, &limits[k], x};
        void *out[15] = {&nf, yf,   tot,  proj, cat, &tot2, mean, mx,
                         mn,  prod, esum, nsv,  &pe, &ce,   &ne};
        if (tether_interp_run_typed(&g, in, out)) {
            fail_msg("%s", tether_last_error());
        }
        int64_t it = k == 0 ? 5 : (k == 1 ? 8 : 0);
        assert_int_equal(pe, it);
        assert_int_equal(ce, it);
        float p = 1, q = -1, s0 = 0, s1 = 0, s2 = 0;
        double e0 = 0, e1 = 0, pr0 = 1, pr1 = 1;
        float mx0 = -INFINITY, mx1 = -INFINITY, mn0 = INFINITY, mn1 = INFINITY;
        for (int r = 0; r < it; r++) {
            p *= 2;
            q *= 0.5f;
            s0 += p;
            s1 += q;
            s2 += p + 2 * q;
            e0 += (double)expf(p); /* Exp in float32; the sum in double */
            e1 += (double)expf(q);
            pr0 *= p;
            pr1 *= q;
            mx0 = p > mx0 ? p : mx0;
            mx1 = q > mx1 ? q : mx1;
            mn0 = p < mn0 ? p : mn0;
            mn1 = q < mn1 ? q : mn1;
            const float row[4] = {p, q, p * p, q * q};
            assert_memory_equal(&cat[4 * r], row, sizeof row);
            assert_true(proj[r] == p + 2 * q);
        }
        assert_true(tot[0] == s0 && tot[1] == s1);
        assert_true(tot2 == s2);
        assert_true(mx[0] == mx0 && mx[1] == mx1 && mn[0] == mn0 && mn[1] == mn1);
        assert_true(prod[0] == (float)pr0 && prod[1] == (float)pr1);
        if (it == 0) {
            assert_true(isnan(mean[0]) && isnan(mean[1]));
            assert_true(esum[0] == 0 && esum[1] == 0);
        } else { /* the means and sums of exactly representable powers of 2 */
            assert_true(mean[0] == s0 / (float)it && mean[1] == s1 / (float)it);
            assert_true(esum[0] == (float)e0 && esum[1] == (float)e1);
        }
    }
    tether_ir_close(&g);
    del_mb(b);
    del_mb(body);
}

void test_onnx_loop_runtime(void) {
    loop_scan_readers();
    scan_directions();
    loop_scan_runtime();
    loop_scan_trip();
    loop_slice_trip();
    loop_while();
    loop_for_input_trip();
    loop_while_bound_cond();
    loop_const_body_cond();
}
