/*
 * Part of test_onnx_import: an exported detection head whose tensors have a data-dependent size
 * (docs/onnx.md, "Data-dependent output sizes"): NonMaxSuppression -> Gather of the box index
 * column -> Gather of the selected boxes -> Mul imports (the output dynamic along dimension 0,
 * its extent output added) and gives the selected boxes, by value, with their count; a consumer
 * that is not supported yet (Gather along NonZero's count by run-time indices) is refused naming
 * the node; the readers of NonZero's [rank, count] by its live count (Transpose, Slice, Gather,
 * Concat, Flatten: test_onnx_nonzero_readers), by value;
 * a run-time Slice on two axes with a step (test_onnx_slice_runtime); readers by the live extent
 * reading each other (test_onnx_live_chain).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "loop_models.h"
#include "model_builder.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"
#include "test_onnx_import.h"

#define F ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

void test_onnx_detection_head(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 13);
    int64_t sb[3] = {1, 4, 4}, ss[3] = {1, 1, 4}, one = 1, two = 2, four = 4;
    mb_input(&b, "boxes", F, 3, sb);
    mb_input(&b, "scores", F, 3, ss);
    const int64_t maxb = 4, col = 2, s44[2] = {4, 4};
    const float iou = 0.5f, thr = 0.5f, scale[4] = {1, 2, 3, 4};
    mb_init_tensor(&b, mb_tensor_i64(&b, "max_out", 1, &one, &maxb));
    mb_init_tensor(&b, mb_tensor_f(&b, "iou", 1, &one, &iou, 0));
    mb_init_tensor(&b, mb_tensor_f(&b, "thr", 1, &one, &thr, 0));
    mb_init_tensor(&b, mb_tensor_i64(&b, "col", 0, NULL, &col));
    mb_init_tensor(&b, mb_tensor_i64(&b, "s44", 1, &two, s44));
    mb_init_tensor(&b, mb_tensor_f(&b, "scale", 1, &four, scale, 1));
    mb_node(&b, "NonMaxSuppression", "nms", "boxes,scores,max_out,iou,thr", "sel");
    Onnx__NodeProto *g1 = mb_node(&b, "Gather", "col", "sel,col", "idx");
    mb_attr_i(&b, g1, "axis", 1);
    mb_node(&b, "Reshape", "b2", "boxes,s44", "b2");
    mb_node(&b, "Gather", "pick", "b2,idx", "picked");
    mb_node(&b, "Mul", "mul", "picked,scale", "y");
    mb_output(&b, "y", F);
    tether_ir_graph g;
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    assert_int_equal(g.noutputs, 2);
    assert_string_equal(g.tensors[g.outputs[1]].name, "y_extent");
    assert_int_equal(g.tensors[g.outputs[0]].dyn_dim, 1);
    const float boxes[16] = {0, 0, 1, 1, 0, 0, 1, 1.05f, 2, 2, 3, 3, 5, 5, 6, 6};
    const float scores[4] = {0.9f, 0.8f, 0.7f, 0.1f};
    const float want[8] = {0, 0, 3, 4, 2, 4, 9, 12};
    float y[16];
    int64_t ext = -1;
    const void *in[2] = {boxes, scores};
    void *out[2] = {y, &ext};
    if (tether_interp_run_typed(&g, in, out)) {
        fail_msg("%s", tether_last_error());
    }
    assert_int_equal(ext, 2);
    assert_memory_equal(y, want, sizeof want);
    tether_ir_close(&g);
    mb_free(&b);
    /* a Gather of NonZero's [rank, count] by run-time indices along the count: still refused */
    mb_init(&b, 13);
    int64_t s6 = 6;
    mb_input(&b, "x", F, 1, &s6);
    mb_node(&b, "NonZero", "nz", "x", "c");
    mb_node(&b, "NonZero", "nz2", "x", "c2");
    Onnx__NodeProto *gg = mb_node(&b, "Gather", "gat", "c,c2", "y");
    mb_attr_i(&b, gg, "axis", 1);
    mb_output(&b, "y", ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
    expect_error(&b, TETHER_ERR_UNSUPPORTED,
                 "node 'gat' (gather): input 'c' has a data-dependent extent (dimension 1, at "
                 "most 6");
    mb_free(&b);
}

/* The readers of NonZero's [2, count] by its live count (nonzero_readers_model): Transpose to
 * [count, 2] (torch.nonzero), Slice t[:2] and t[-2:], Gather of one row of NonZero's output,
 * Concat with a static row, Flatten; and Gather of t[0] and t[-1] (static outputs), whose index
 * outside the live count is a run-time error naming the gather. By value, rows past the
 * extents zero, for 3, 1 and 0 nonzero elements. */
void test_onnx_nonzero_readers(void **state) {
    (void)state;
    mb b;
    nonzero_readers_model(&b, 0);
    tether_ir_graph g;
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    mb_free(&b);
    assert_int_equal(g.noutputs, 12);
    const int dyn[12] = {1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1};
    for (int i = 0; i < 12; i++) {
        assert_int_equal(g.tensors[g.outputs[i]].dyn_dim, dyn[i]);
    }
    assert_string_equal(g.tensors[g.outputs[10]].name, "cat_extent");
    assert_int_equal(g.tensors[g.outputs[1]].shape[0], 2); /* the slices' bounds */
    assert_int_equal(g.tensors[g.outputs[2]].shape[0], 2);
    assert_int_equal(g.tensors[g.outputs[4]].shape[0], 7);
    const float xs[3][6] = {{0, 1, 0, 2, 0, 3}, {0, 0, 0, 0, 5, 0}, {0, 0, 0, 0, 0, 0}};
    /* nonzero (row, column) pairs of each x */
    const int64_t want_t[3][6] = {{0, 1, 1, 0, 1, 2}, {1, 1}, {0}};
    const int64_t counts[3] = {3, 1, 0};
    for (int k = 0; k < 3; k++) {
        int64_t t[12], head[4], tail[4], cols[6], cat[14], flat[12], ext[6];
        memset(ext, 0xff, sizeof ext);
        void *out[12] = {t,       head,    tail,    cols,    cat,     flat,
                         &ext[0], &ext[1], &ext[2], &ext[3], &ext[4], &ext[5]};
        const void *in[1] = {xs[k]};
        if (tether_interp_run_typed(&g, in, out)) {
            fail_msg("%s", tether_last_error());
        }
        int64_t c = counts[k], h = c < 2 ? c : 2;
        const int64_t want_ext[6] = {c, h, h, c, c + 1, c};
        assert_memory_equal(ext, want_ext, sizeof want_ext);
        int64_t wt[12] = {0}, wcat[14] = {0}, wcols[6] = {0}, wtail[4] = {0}, whead[4] = {0};
        memcpy(wt, want_t[k], sizeof(int64_t) * (size_t)(2 * c));
        memcpy(whead, want_t[k], sizeof(int64_t) * (size_t)(2 * h));
        memcpy(wtail, want_t[k] + 2 * (c - h), sizeof(int64_t) * (size_t)(2 * h));
        memcpy(wcat, want_t[k], sizeof(int64_t) * (size_t)(2 * c));
        wcat[2 * c] = wcat[2 * c + 1] = 7;
        for (int64_t r = 0; r < c; r++) {
            wcols[r] = want_t[k][2 * r + 1];
        }
        assert_memory_equal(t, wt, sizeof wt);
        assert_memory_equal(flat, wt, sizeof wt);
        assert_memory_equal(head, whead, sizeof whead);
        assert_memory_equal(tail, wtail, sizeof wtail);
        assert_memory_equal(cols, wcols, sizeof wcols);
        assert_memory_equal(cat, wcat, sizeof wcat);
    }
    tether_ir_close(&g);
    nonzero_readers_model(&b, 1);
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    mb_free(&b);
    assert_int_equal(g.noutputs, 2);
    assert_int_equal(g.tensors[g.outputs[0]].dyn_dim, 0);
    for (int k = 0; k < 3; k++) {
        int64_t first[2] = {-9, -9}, last[2] = {-9, -9};
        void *out[2] = {first, last};
        const void *in[1] = {xs[k]};
        int rc = tether_interp_run_typed(&g, in, out);
        if (k == 2) {
            assert_int_equal(rc, TETHER_ERR_INVALID_ARG);
            assert_non_null(strstr(tether_last_error(), "node 'first_n' (gather): index 0 is out "
                                                        "of range for the live extent 0"));
            continue;
        }
        assert_int_equal(rc, 0);
        int64_t c = counts[k];
        assert_memory_equal(first, want_t[k], sizeof first);
        assert_memory_equal(last, want_t[k] + 2 * (c - 1), sizeof last);
    }
    tether_ir_close(&g);
}

/* A Slice of a plain graph (no Loop) whose starts are a graph input and whose ends are starts +
 * [2, 5], on two axes with steps [1, 2] (x[a:a+2, b:b+5:2] in PyTorch): lowered to one gather per
 * axis (convert_slice_rt.c). By value for positive and negative starts against ONNX's
 * normalisation; starts that ONNX would clamp to a shorter slice (b = 3: columns 3 and 5 only;
 * a = -2: an end of 0, an empty slice) are run-time errors, never rows of other starts. A
 * negative step with run-time starts is refused naming the axis. */
void test_onnx_slice_runtime(void **state) {
    (void)state;
    for (int neg = 0; neg < 2; neg++) {
        mb b;
        mb_init(&b, 13);
        int64_t sx[2] = {5, 7}, two = 2;
        const int64_t k[2] = {2, 5}, axes[2] = {0, 1}, steps[2] = {1, neg ? -1 : 2};
        mb_input(&b, "x", F, 2, sx);
        mb_input(&b, "st", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, &two);
        mb_init_tensor(&b, mb_tensor_i64(&b, "k", 1, &two, k));
        mb_init_tensor(&b, mb_tensor_i64(&b, "axes", 1, &two, axes));
        mb_init_tensor(&b, mb_tensor_i64(&b, "steps", 1, &two, steps));
        mb_node(&b, "Add", "end", "st,k", "en");
        mb_node(&b, "Slice", "cut", "x,st,en,axes,steps", "y");
        mb_output(&b, "y", F);
        if (neg) {
            expect_error(&b, TETHER_ERR_UNSUPPORTED,
                         "starts computed at run time on axis 1 with ends - starts 5 and step -1");
            mb_free(&b);
            continue;
        }
        tether_ir_graph g;
        if (load(&b, NULL, &g)) {
            fail_msg("%s", tether_error_detail());
        }
        mb_free(&b);
        assert_int_equal(g.noutputs, 1);
        assert_int_equal(g.tensors[g.outputs[0]].ndim, 2);
        assert_int_equal(g.tensors[g.outputs[0]].shape[0], 2);
        assert_int_equal(g.tensors[g.outputs[0]].shape[1], 3);
        float x[35];
        for (int i = 0; i < 35; i++) {
            x[i] = (float)(10 * (i / 7) + i % 7); /* row r, column c: 10r + c */
        }
        /* {a, b, first row, first column}; first row -1: a run-time error */
        const int64_t cases[][4] = {{0, 0, 0, 0},   {1, 1, 1, 1},  {3, 2, 3, 2},  {-3, 0, 2, 0},
                                    {-5, -7, 0, 0}, {2, -6, 2, 1}, {0, 3, -1, 0}, {-2, 0, -1, 0},
                                    {4, 0, -1, 0},  {-9, 0, -1, 0}};
        for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
            const int64_t st[2] = {cases[t][0], cases[t][1]};
            float y[6];
            memset(y, 0xff, sizeof y);
            const void *in[2] = {x, st};
            void *out[1] = {y};
            int rc = tether_interp_run_typed(&g, in, out);
            if (cases[t][2] < 0) {
                assert_int_equal(rc, TETHER_ERR_INVALID_ARG);
                assert_non_null(strstr(tether_last_error(), "out of range"));
                continue;
            }
            if (rc) {
                fail_msg("starts %lld %lld: %s", (long long)st[0], (long long)st[1],
                         tether_last_error());
            }
            for (int r = 0; r < 2; r++) {
                for (int c = 0; c < 3; c++) {
                    assert_true(y[r * 3 + c] ==
                                (float)(10 * (cases[t][2] + r) + cases[t][3] + 2 * c));
                }
            }
        }
        tether_ir_close(&g);
    }
}

/* Readers by the live extent reading each other: tail = t[-2:] of torch.nonzero's [count, 2],
 * cat = Concat(tail, pad, t) along the count, and head = cat[:3]: each output's extent is its
 * own node's, by value for 3, 1 and 0 nonzero elements. */
void test_onnx_live_chain(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 13);
    int64_t d23[2] = {2, 3}, one = 1, d12[2] = {1, 2};
    const int64_t m2 = -2, big = INT64_MAX, zero = 0, three = 3, pad[2] = {7, -7};
    mb_input(&b, "x", F, 2, d23);
    mb_init_tensor(&b, mb_tensor_i64(&b, "sm2", 1, &one, &m2));
    mb_init_tensor(&b, mb_tensor_i64(&b, "ebig", 1, &one, &big));
    mb_init_tensor(&b, mb_tensor_i64(&b, "s0", 1, &one, &zero));
    mb_init_tensor(&b, mb_tensor_i64(&b, "e3", 1, &one, &three));
    mb_init_tensor(&b, mb_tensor_i64(&b, "ax0", 1, &one, &zero));
    mb_init_tensor(&b, mb_tensor_i64(&b, "pad", 2, d12, pad));
    mb_node(&b, "NonZero", "nz", "x", "nzo");
    mb_node(&b, "Transpose", "tr", "nzo", "t");
    mb_node(&b, "Slice", "tail_n", "t,sm2,ebig,ax0", "tail");
    Onnx__NodeProto *cn = mb_node(&b, "Concat", "cat_n", "tail,pad,t", "cat");
    mb_attr_i(&b, cn, "axis", 0);
    mb_node(&b, "Slice", "head_n", "cat,s0,e3,ax0", "head");
    mb_output(&b, "cat", ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
    mb_output(&b, "head", ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
    tether_ir_graph g;
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    mb_free(&b);
    assert_int_equal(g.noutputs, 4);                       /* cat, head, their extents */
    assert_int_equal(g.tensors[g.outputs[0]].shape[0], 9); /* tail's bound 2 + 1 + t's 6 */
    assert_int_equal(g.tensors[g.outputs[1]].shape[0], 3);
    const float xs[3][6] = {{0, 1, 0, 2, 0, 3}, {0, 0, 0, 0, 5, 0}, {0, 0, 0, 0, 0, 0}};
    const int64_t want_cat[3][12] = {
        {1, 0, 1, 2, 7, -7, 0, 1, 1, 0, 1, 2}, {1, 1, 7, -7, 1, 1}, {7, -7}};
    const int64_t want_ext[3][2] = {{6, 3}, {3, 3}, {1, 1}};
    for (int k = 0; k < 3; k++) {
        int64_t cat[18], head[6], ext[2] = {-1, -1};
        memset(cat, 0xff, sizeof cat);
        memset(head, 0xff, sizeof head);
        void *out[4] = {cat, head, &ext[0], &ext[1]};
        const void *in[1] = {xs[k]};
        if (tether_interp_run_typed(&g, in, out)) {
            fail_msg("%s", tether_last_error());
        }
        assert_memory_equal(ext, want_ext[k], sizeof ext);
        int64_t wc[18] = {0}, wh[6] = {0};
        memcpy(wc, want_cat[k], sizeof(int64_t) * (size_t)(2 * want_ext[k][0]));
        memcpy(wh, want_cat[k], sizeof(int64_t) * (size_t)(2 * want_ext[k][1]));
        assert_memory_equal(cat, wc, sizeof wc);
        assert_memory_equal(head, wh, sizeof wh);
    }
    tether_ir_close(&g);
}
