/*
 * The operators with data-dependent output sizes on the OpenCL backend (emit_opencl_dynamic.c;
 * docs/onnx.md "Data-dependent output sizes") on PoCL:
 *  - an exported detection head (test_onnx_detection_head's model: NonMaxSuppression -> Gather of
 *    the box index column -> Gather of the selected boxes -> Mul) with a ReduceMean over the
 *    selected rows (the compiler's live-extent input) compiled for OpenCL equals the C backend and
 *    the interpreter byte for byte, every output at its bound and its extent, on inputs selecting
 *    some, all and none of the boxes;
 *  - NonZero, Compress along axis 1 and Unique (sorted, with an axis, its four outputs) on int32
 *    data, byte for byte against C and the interpreter, and at the IR the other element types:
 *    bool NonZero, int8 Compress, float16 Unique, NonMaxSuppression with float64 boxes;
 *  - a count above a node's bound (nonzero capped at 2) fails the OpenCL run with
 *    TETHER_ERR_LIMIT naming the node, a Compress condition selecting past the axis fails it with
 *    TETHER_ERR_INVALID_ARG, and the next run in range succeeds (the flag cleared);
 *  - `tether run MODEL.onnx --backend opencl` writes the same .npy files as the C backend (the
 *    actual shapes, the extent outputs left out);
 *  - the readers by live extents (emit_opencl_dynamic_live.c) of NonZero's [2, count] and of a
 *    float Compress's [3, count] (Transpose, Slice t[:2], t[-2:], t[::-2], t[1:, 1:2], Gather
 *    nz[1], Concat with a constant row and of two live inputs, Flatten) with no, some and every
 *    element selected, and Gather t[0]/t[-1], byte for byte against C and the interpreter; with no
 *    nonzero element t[0] fails the OpenCL run with TETHER_ERR_INVALID_ARG naming the gather, as
 *    C and the interpreter fail, and the next run succeeds; a reader still refused (Concat along
 *    the other axis of NonZero's output) is refused naming the node;
 *  - a damaged extent_of in metadata.json is refused at open.
 *
 * What must stay true: outputs are compared with memcmp (no tolerance); tetherd is started by the
 * test (local:) and stopped at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "codegen_common.h"
#include "model_builder.h"
#include "ops_common.h"
#include "tether/compiler.h"
#include "tether/artifact.h"
#include "tether/crt/error.h"
#include "tether/npy.h"
#include "tether/onnx.h"

#define F   ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define I32 ONNX__TENSOR_PROTO__DATA_TYPE__INT32
#define I64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define B   ONNX__TENSOR_PROTO__DATA_TYPE__BOOL

/* Runs the OpenCL artifact in dir; outputs (sized by the artifact) into outs; the run's code. */
static int run_rc(const char *dir, const void *const *ins, void **outs, int nout, size_t *bytes) {
    tether_artifact *a;
    if (tether_artifact_open(dir, &a)) {
        fail_msg("load %s: %s", dir, tether_last_error());
    }
    assert_int_equal(tether_artifact_num_outputs(a), nout);
    for (int i = 0; i < nout; i++) {
        tether_artifact_io io;
        assert_int_equal(tether_artifact_io_of(a, 1, i, &io), 0);
        bytes[i] = io.nbytes;
        outs[i] = malloc(io.nbytes ? io.nbytes : 1);
        memset(outs[i], 0xa5, io.nbytes); /* every byte must be written */
    }
    int rc = tether_artifact_prepare(a, g_s, NULL);
    if (!rc) {
        rc = tether_artifact_run(a, ins, (void *const *)outs, NULL, NULL);
    }
    tether_artifact_free(a);
    return rc;
}

/* g on the interpreter, the C backend (unpacked) and OpenCL (buffers, then texture activations)
 * with each input set; every output equal byte for byte. */
static void check_all(const tether_ir_graph *g, int nsets, const void *const *sets) {
    char dir[128];
    compile_ocl(g, false, true, dir, sizeof dir);
    g_tex_act = true;
    char tdir[128];
    compile_ocl(g, false, true, tdir, sizeof tdir);
    g_tex_act = false;
    int nin = g->ninputs, nout = g->noutputs;
    assert_true(nout <= 32);
    for (int s = 0; s < nsets; s++) {
        const void *const *in = sets + s * nin;
        void *ref[32], *c[32], *o[32], *t[32];
        size_t bytes[32], tb[32];
        for (int i = 0; i < nout; i++) {
            size_t n = tether_ir_tensor_bytes(&g->tensors[g->outputs[i]]);
            ref[i] = calloc(1, n ? n : 1);
            c[i] = calloc(1, n ? n : 1);
        }
        if (tether_interp_run_typed(g, in, ref)) {
            fail_msg("interpreter: %s", tether_last_error());
        }
        if (tt_run_compiled(g, "dynocl", TETHER_ABI_UNPACKED, TETHER_INTERFACE_PACKED, true,
                            (const float *const *)in, (float *const *)c)) {
            fail_msg("C: %s", tether_last_error());
        }
        if (run_rc(dir, in, o, nout, bytes) || run_rc(tdir, in, t, nout, tb)) {
            fail_msg("OpenCL: %s", tether_last_error());
        }
        assert_int_equal(tether_session_reset(g_s), 0);
        for (int i = 0; i < nout; i++) {
            size_t n = tether_ir_tensor_bytes(&g->tensors[g->outputs[i]]);
            assert_int_equal(bytes[i], n);
            assert_memory_equal(c[i], ref[i], n);
            assert_memory_equal(o[i], c[i], n);
            assert_memory_equal(t[i], c[i], n);
            free(ref[i]);
            free(c[i]);
            free(o[i]);
            free(t[i]);
        }
    }
}

static void load_mb(mb *b, const char *name, tether_ir_graph *g) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", g_tmp, name);
    mb_write(b, path);
    if (tether_onnx_load(path, NULL, g)) {
        fail_msg("%s: %s", name, tether_error_detail());
    }
}

/* test_onnx_detection_head's model, with the mean of the selected boxes as a second output */
static void detection_head(mb *b) {
    mb_init(b, 13);
    int64_t sb[3] = {1, 4, 4}, ss[3] = {1, 1, 4}, one = 1, two = 2, four = 4;
    mb_input(b, "boxes", F, 3, sb);
    mb_input(b, "scores", F, 3, ss);
    const int64_t maxb = 4, col = 2, s44[2] = {4, 4}, ax0 = 0;
    const float iou = 0.5f, thr = 0.5f, scale[4] = {1, 2, 3, 4};
    mb_init_tensor(b, mb_tensor_i64(b, "max_out", 1, &one, &maxb));
    mb_init_tensor(b, mb_tensor_f(b, "iou", 1, &one, &iou, 0));
    mb_init_tensor(b, mb_tensor_f(b, "thr", 1, &one, &thr, 0));
    mb_init_tensor(b, mb_tensor_i64(b, "col", 0, NULL, &col));
    mb_init_tensor(b, mb_tensor_i64(b, "s44", 1, &two, s44));
    mb_init_tensor(b, mb_tensor_f(b, "scale", 1, &four, scale, 1));
    mb_node(b, "NonMaxSuppression", "nms", "boxes,scores,max_out,iou,thr", "sel");
    Onnx__NodeProto *g1 = mb_node(b, "Gather", "col", "sel,col", "idx");
    mb_attr_i(b, g1, "axis", 1);
    mb_node(b, "Reshape", "b2", "boxes,s44", "b2");
    mb_node(b, "Gather", "pick", "b2,idx", "picked");
    mb_node(b, "Mul", "mul", "picked,scale", "y");
    Onnx__NodeProto *r = mb_node(b, "ReduceMean", "mean", "y", "m");
    mb_attr_ints(b, r, "axes", 1, &ax0);
    mb_attr_i(b, r, "keepdims", 0);
    mb_output(b, "y", F);
    mb_output(b, "m", F);
}

static void test_detection_head(void **state) {
    (void)state;
    mb b;
    detection_head(&b);
    tether_ir_graph g;
    load_mb(&b, "det.onnx", &g);
    mb_free(&b);
    assert_int_equal(g.noutputs, 3); /* y, m, y_extent */
    const float boxes[16] = {0, 0, 1, 1, 0, 0, 1, 1.05f, 2, 2, 3, 3, 5, 5, 6, 6};
    const float some[4] = {0.9f, 0.8f, 0.7f, 0.1f}, all[4] = {0.6f, 0.7f, 0.8f, 0.9f},
                none[4] = {0.1f, 0.2f, 0.3f, 0.5f};
    const float far[16] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
    const void *sets[] = {boxes, some, boxes, all, boxes, none, far, all};
    check_all(&g, 4, sets);
    /* the kernels: one work-item for nms, its extent and the live-row mean in double */
    char cl[192], dir[128];
    compile_ocl(&g, false, true, dir, sizeof dir);
    snprintf(cl, sizeof cl, "%s/m.cl", dir);
    FILE *f = fopen(cl, "rb");
    assert_non_null(f);
    static char src[1 << 18];
    size_t n = fread(src, 1, sizeof src - 1, f);
    fclose(f);
    src[n] = 0;
    assert_non_null(strstr(src, "TG_DIV_RN(inter, uni)"));
    assert_non_null(strstr(src, "const long live = "));
    assert_non_null(strstr(src, "nms: nms(boxes [1,4,4], scores [1,1,4]) -> sel [4,3]; 1 "
                                "work-item, serial loop 44;"));
    assert_non_null(strstr(src, "serial: a data-dependent output size"));
    /* a damaged metadata.json: the extent output names another output back; refused when the
     * artifact is opened, naming the output (tether__artifact_check_dynamic) */
    snprintf(cl, sizeof cl, "%s/metadata.json", dir);
    f = fopen(cl, "rb");
    assert_non_null(f);
    n = fread(src, 1, sizeof src - 1, f);
    fclose(f);
    src[n] = 0;
    char *k = strstr(src, "\"extent_of\"");
    assert_non_null(k);
    k = strpbrk(k + 11, "0123456789");
    assert_non_null(k);
    *k = *k == '1' ? '0'
                   : '1'; /* output 0 (y) names extent 2; now 2 names 1 (m) or 0 the wrong way */
    f = fopen(cl, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(src, 1, n, f), n);
    fclose(f);
    tether_artifact *a = NULL;
    assert_int_equal(tether_artifact_open(dir, &a), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "metadata.json"));
    assert_non_null(strstr(tether_last_error(), "do not agree"));
    tether_ir_close(&g);
}

static void test_nonzero_compress_unique(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 13);
    int64_t sx[2] = {3, 4}, s4 = 4;
    mb_input(&b, "x", I32, 2, sx);
    mb_input(&b, "c", B, 1, &s4);
    mb_node(&b, "NonZero", "nz", "x", "nzi");
    Onnx__NodeProto *cp = mb_node(&b, "Compress", "cp", "x,c", "cx");
    mb_attr_i(&b, cp, "axis", 1);
    Onnx__NodeProto *u = mb_node(&b, "Unique", "un", "x", "uy,ui,uinv,ucnt");
    mb_attr_i(&b, u, "sorted", 1);
    mb_attr_i(&b, u, "axis", 0);
    Onnx__NodeProto *u2 = mb_node(&b, "Unique", "un2", "x", "vy,vi,vinv,vcnt");
    mb_attr_i(&b, u2, "sorted", 0);
    mb_output(&b, "nzi", I64);
    mb_output(&b, "cx", I32);
    mb_output(&b, "uy", I32);
    mb_output(&b, "ui", I64);
    mb_output(&b, "uinv", I64);
    mb_output(&b, "ucnt", I64);
    mb_output(&b, "vy", I32);
    mb_output(&b, "vcnt", I64);
    tether_ir_graph g;
    load_mb(&b, "ncu.onnx", &g);
    mb_free(&b);
    const int32_t x1[12] = {3, 0, -2, 7, 1, 1, 0, 0, 3, 0, -2, 7}; /* rows 0 and 2 equal */
    const int32_t x2[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    const int32_t x3[12] = {5, 4, 3, 2, 1, 0, -1, -2, -3, -4, -5, -6};
    const uint8_t c1[4] = {1, 0, 1, 1}, c2[4] = {0, 0, 0, 0}, c3[4] = {1, 1, 1, 1};
    const void *sets[] = {x1, c1, x2, c2, x3, c3};
    check_all(&g, 3, sets);
    tether_ir_close(&g);
}

/* The readers by live extents (ir/shapes_dynamic_live.c, emit_opencl_dynamic_live.c) of
 * NonZero's [2, count] of x [3, 4] and of Compress(x, c) along axis 1 ([3, count]): Transpose
 * (torch.nonzero), Slice t[:2], t[-2:], t[::-2] and t[1:, 1:2], Gather nz[1], Concat with a
 * constant row and of the slice t[-2:] and t around it (a reader of a reader), Flatten, and the
 * transpose of the float compress; every output and extent byte for byte against C and the
 * interpreter with no, some and every element selected. */
static void test_live_readers(void **state) {
    (void)state;
    static const int64_t d34[2] = {3, 4}, d12[2] = {1, 2}, d1[1] = {1}, d2[1] = {2}, s4 = 4;
    static const int64_t pad[2] = {7, -7}, two = 2, ax2 = 2, zero = 0, m2 = -2, m1 = -1,
                         big = INT64_MAX, small = INT64_MIN, one = 1, s11[2] = {1, 1},
                         e2[2] = {INT64_MAX, 2}, a01[2] = {0, 1};
    mb b;
    mb_init(&b, 13);
    mb_input(&b, "x", F, 2, d34);
    mb_input(&b, "c", B, 1, &s4);
    mb_init_tensor(&b, mb_tensor_i64(&b, "s0", 1, d1, &zero));
    mb_init_tensor(&b, mb_tensor_i64(&b, "e2", 1, d1, &two));
    mb_init_tensor(&b, mb_tensor_i64(&b, "sm2", 1, d1, &m2));
    mb_init_tensor(&b, mb_tensor_i64(&b, "sm1", 1, d1, &m1));
    mb_init_tensor(&b, mb_tensor_i64(&b, "ebig", 1, d1, &big));
    mb_init_tensor(&b, mb_tensor_i64(&b, "esmall", 1, d1, &small));
    mb_init_tensor(&b, mb_tensor_i64(&b, "stm2", 1, d1, &m2));
    mb_init_tensor(&b, mb_tensor_i64(&b, "ax0", 1, d1, &zero));
    mb_init_tensor(&b, mb_tensor_i64(&b, "ax2", 1, d1, &ax2));
    mb_init_tensor(&b, mb_tensor_i64(&b, "s11", 1, d2, s11));
    mb_init_tensor(&b, mb_tensor_i64(&b, "e_2", 1, d2, e2));
    mb_init_tensor(&b, mb_tensor_i64(&b, "a01", 1, d2, a01));
    mb_init_tensor(&b, mb_tensor_i64(&b, "i1", 0, NULL, &one));
    mb_init_tensor(&b, mb_tensor_i64(&b, "pad", 2, d12, pad));
    mb_node(&b, "NonZero", "nz", "x", "nzo");
    mb_node(&b, "Transpose", "tr", "nzo", "t");
    mb_node(&b, "Slice", "head_n", "t,s0,e2,ax0", "head");
    mb_node(&b, "Slice", "tail_n", "t,sm2,ebig,ax0", "tail");
    mb_node(&b, "Slice", "rev_n", "t,sm1,esmall,ax0,stm2", "rev");
    mb_node(&b, "Slice", "mid_n", "t,s11,e_2,a01", "mid");
    mb_node(&b, "Gather", "cols_n", "nzo,i1", "cols");
    Onnx__NodeProto *cn = mb_node(&b, "Concat", "cat_n", "t,pad", "cat");
    mb_attr_i(&b, cn, "axis", 0);
    cn = mb_node(&b, "Concat", "cat2_n", "tail,pad,t", "cat2");
    mb_attr_i(&b, cn, "axis", 0);
    mb_node(&b, "Unsqueeze", "unsq", "t,ax2", "t3");
    Onnx__NodeProto *fl = mb_node(&b, "Flatten", "flat_n", "t3", "flat");
    mb_attr_i(&b, fl, "axis", 1);
    Onnx__NodeProto *cp = mb_node(&b, "Compress", "cp", "x,c", "cx");
    mb_attr_i(&b, cp, "axis", 1);
    mb_node(&b, "Transpose", "ctr", "cx", "ct");
    const char *outs[10] = {"t", "head", "tail", "rev", "mid", "cols", "cat", "cat2", "flat", "ct"};
    for (int i = 0; i < 10; i++) {
        mb_output(&b, outs[i], i == 9 ? F : I64);
    }
    tether_ir_graph g;
    load_mb(&b, "live.onnx", &g);
    mb_free(&b);
    assert_int_equal(g.noutputs, 20); /* every output dynamic: its extent */
    const float x0[12] = {0}, xs[12] = {0, 1.5f, 0, -2, 0, 0, 0, 0, 3, 0, -0.0f, 4},
                xa[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, -12.25f};
    const uint8_t c0[4] = {0, 0, 0, 0}, cs[4] = {0, 1, 0, 1}, ca[4] = {1, 1, 1, 1};
    const void *sets[] = {x0, c0, xs, cs, xa, ca};
    check_all(&g, 3, sets);
    /* the kernels: one work-item per element of the bound, the extent read on the device */
    char dir[128], cl[192];
    compile_ocl(&g, false, true, dir, sizeof dir);
    snprintf(cl, sizeof cl, "%s/m.cl", dir);
    FILE *f = fopen(cl, "rb");
    assert_non_null(f);
    static char src[1 << 18];
    size_t n = fread(src, 1, sizeof src - 1, f);
    fclose(f);
    src[n] = 0;
    assert_non_null(strstr(src, "tr: transpose("));
    assert_non_null(strstr(src, "const long lv0 = (long)(in1[0] < 0 ? 0 : in1[0] > 12L ? 12L"));
    tether_ir_close(&g);
}

/* Gather t[0] and t[-1] of torch.nonzero's [count, 2] (static outputs) byte for byte against C
 * and the interpreter; with no nonzero element index 0 is outside the live extent: the OpenCL run
 * fails with TETHER_ERR_INVALID_ARG naming the gather, as C's -1, and the next run succeeds. */
static void test_live_gather_error(void **state) {
    (void)state;
    static const int64_t d6 = 6, zero = 0, last = -1;
    mb b;
    mb_init(&b, 13);
    mb_input(&b, "x", I32, 1, &d6);
    mb_init_tensor(&b, mb_tensor_i64(&b, "i0", 0, NULL, &zero));
    mb_init_tensor(&b, mb_tensor_i64(&b, "im1", 0, NULL, &last));
    mb_node(&b, "NonZero", "nz", "x", "nzo");
    mb_node(&b, "Transpose", "tr", "nzo", "t");
    mb_node(&b, "Gather", "first_n", "t,i0", "first");
    mb_node(&b, "Gather", "last_n", "t,im1", "last");
    mb_output(&b, "first", I64);
    mb_output(&b, "last", I64);
    tether_ir_graph g;
    load_mb(&b, "livegather.onnx", &g);
    mb_free(&b);
    assert_int_equal(g.noutputs, 2); /* static outputs */
    const int32_t xs[6] = {0, 5, 0, 0, -1, 0}, xa[6] = {1, 2, 3, 4, 5, 6}, x0[6] = {0};
    const void *sets[] = {xs, xa};
    check_all(&g, 2, sets);
    char dir[128];
    compile_ocl(&g, false, true, dir, sizeof dir);
    const void *in[1] = {x0};
    int64_t ref[2], cout[2];
    void *rp[2] = {&ref[0], &ref[1]}, *cp[2] = {&cout[0], &cout[1]};
    assert_int_equal(tether_interp_run_typed(&g, in, rp), TETHER_ERR_INVALID_ARG);
    assert_int_not_equal(tt_run_compiled(&g, "dynlive", TETHER_ABI_UNPACKED,
                                         TETHER_INTERFACE_PACKED, true, (const float *const *)in,
                                         (float *const *)cp),
                         0);
    void *o[2];
    size_t bytes[2];
    for (int round = 0; round < 3; round++) {
        in[0] = round == 1 ? (const void *)x0 : (const void *)xs;
        int rc = run_rc(dir, in, o, 2, bytes);
        if (round == 1) {
            assert_int_equal(rc, TETHER_ERR_INVALID_ARG);
            if (!strstr(tether_last_error(),
                        "node 'first_n' (gather): an index outside the live extent")) {
                fail_msg("unexpected message: %s", tether_last_error());
            }
        } else {
            assert_int_equal(rc, 0);
            const int64_t first = 1, lastv = 4;
            assert_memory_equal(o[0], &first, sizeof first);
            assert_memory_equal(o[1], &lastv, sizeof lastv);
        }
        free(o[0]);
        free(o[1]);
        assert_int_equal(tether_session_reset(g_s), 0);
    }
    tether_ir_close(&g);
}

/* Concat along dimension 0 of NonZero's [2, count] (the other axis of a tensor dynamic along
 * dimension 1): still refused, naming the node, before any backend. */
static void test_live_still_refused(void **state) {
    (void)state;
    static const int64_t d6 = 6;
    mb b;
    mb_init(&b, 13);
    mb_input(&b, "x", F, 1, &d6);
    mb_node(&b, "NonZero", "nz", "x", "nzo");
    Onnx__NodeProto *cn = mb_node(&b, "Concat", "cat0", "nzo,nzo", "cat");
    mb_attr_i(&b, cn, "axis", 0);
    mb_output(&b, "cat", I64);
    char path[128];
    snprintf(path, sizeof path, "%s/refused.onnx", g_tmp);
    mb_write(&b, path);
    mb_free(&b);
    tether_ir_graph g;
    assert_int_equal(tether_onnx_load(path, NULL, &g), TETHER_ERR_UNSUPPORTED);
    if (!strstr(tether_error_detail(), "node 'cat0' (concat)")) {
        fail_msg("unexpected message: %s", tether_error_detail());
    }
}

/* x float32 [6] -> nonzero capped at 2; c bool [5] -> compress of x along axis 0 */
static void test_errors(void **state) {
    (void)state;
    tether_ir_graph g;
    assert_int_equal(tether_ir_init(&g, "dynerr"), 0);
    int64_t s6 = 6, s5 = 5;
    int x, c, y, z;
    assert_int_equal(tether_ir_add_tensor(&g, "x", TETHER_FLOAT32, 1, &s6, &x), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "c", TETHER_BOOL, 1, &s5, &c), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "y", TETHER_INT64, TETHER_IR_SHAPE_UNKNOWN, NULL, &y),
                     0);
    assert_int_equal(
        tether_ir_add_tensor(&g, "z", TETHER_FLOAT32, TETHER_IR_SHAPE_UNKNOWN, NULL, &z), 0);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_NONZERO, &a);
    a.nints = 1;
    a.ints[0] = 2;
    assert_int_equal(tether_ir_add_node(&g, "nz", TETHER_OP_NONZERO, &x, 1, &y, 1, &a, NULL), 0);
    tether_ir_attrs_init(TETHER_OP_COMPRESS, &a);
    a.mode = 4; /* along axis 0 */
    a.axis = 0;
    int xc[2] = {x, c};
    assert_int_equal(tether_ir_add_node(&g, "cp", TETHER_OP_COMPRESS, xc, 2, &z, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_input(&g, x), 0);
    assert_int_equal(tether_ir_add_input(&g, c), 0);
    assert_int_equal(tether_ir_add_output(&g, y), 0);
    assert_int_equal(tether_ir_add_output(&g, z), 0);
    assert_int_equal(tether_ir_add_extent_outputs(&g), 0);
    assert_int_equal(tether_ir_infer(&g), 0);
    char dir[128];
    compile_ocl(&g, false, true, dir, sizeof dir);
    const float two[6] = {0, 3, 0, 0, -1, 0}, three[6] = {1, 0, 2, 0, 0, 4};
    const uint8_t ok[5] = {1, 0, 0, 1, 1};
    const void *in[2] = {two, ok};
    void *o[4];
    size_t bytes[4];
    for (int round = 0; round < 3; round++) {
        in[0] = round == 1 ? three : two;
        int rc = run_rc(dir, in, o, 4, bytes);
        if (round == 1) {
            assert_int_equal(rc, TETHER_ERR_LIMIT);
            assert_non_null(strstr(tether_last_error(), "node 'nz' (nonzero): more nonzero"));
        } else {
            assert_int_equal(rc, 0);
            const int64_t want[2] = {1, 4}, ext = 2, zext = 3;
            const float zw[3] = {0, 0, -1};
            assert_memory_equal(o[0], want, sizeof want);
            assert_memory_equal(o[1], zw, sizeof zw);
            assert_memory_equal(o[2], &ext, sizeof ext);
            assert_memory_equal(o[3], &zext, sizeof zext);
        }
        for (int i = 0; i < 4; i++) {
            free(o[i]);
        }
        assert_int_equal(tether_session_reset(g_s), 0);
    }
    tether_ir_close(&g);
    /* a condition longer than the axis selecting past it: the C path's -1 */
    assert_int_equal(tether_ir_init(&g, "dynerr2"), 0);
    int64_t s3 = 3;
    assert_int_equal(tether_ir_add_tensor(&g, "x", TETHER_FLOAT32, 1, &s3, &x), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "c", TETHER_BOOL, 1, &s5, &c), 0);
    assert_int_equal(
        tether_ir_add_tensor(&g, "z", TETHER_FLOAT32, TETHER_IR_SHAPE_UNKNOWN, NULL, &z), 0);
    xc[0] = x;
    xc[1] = c;
    assert_int_equal(tether_ir_add_node(&g, "cp", TETHER_OP_COMPRESS, xc, 2, &z, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_input(&g, x), 0);
    assert_int_equal(tether_ir_add_input(&g, c), 0);
    assert_int_equal(tether_ir_add_output(&g, z), 0);
    assert_int_equal(tether_ir_add_extent_outputs(&g), 0);
    assert_int_equal(tether_ir_infer(&g), 0);
    compile_ocl(&g, false, true, dir, sizeof dir);
    const float x3[3] = {1, 2, 3};
    const uint8_t past[5] = {0, 1, 0, 0, 1}, within[5] = {1, 0, 1, 0, 0};
    in[0] = x3;
    in[1] = past;
    assert_int_equal(run_rc(dir, in, o, 2, bytes), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "node 'cp' (compress): a condition selecting"));
    free(o[0]);
    free(o[1]);
    assert_int_equal(tether_session_reset(g_s), 0);
    in[1] = within;
    assert_int_equal(run_rc(dir, in, o, 2, bytes), 0);
    const float zw[3] = {1, 3, 0};
    assert_memory_equal(o[0], zw, sizeof zw);
    free(o[0]);
    free(o[1]);
    assert_int_equal(tether_session_reset(g_s), 0);
    tether_ir_close(&g);
}

static uint32_t g_seed = 31;

static uint32_t rnd(void) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return g_seed >> 8;
}

/* The other element types the C path takes, at the IR: nonzero of bool [2, 3, 2], compress of
 * int8 [3, 5] along axis -1 by a bool condition, unique (unsorted, axis 0, the indices and the
 * counts) of float16 [6, 2] (bits of small integers: duplicates), nms with float64 boxes and
 * float32 scores (center_point_box, no score threshold, 2 batches, 3 classes, 5 boxes). */
static void test_types(void **state) {
    (void)state;
    tether_ir_graph g;
    assert_int_equal(tether_ir_init(&g, "dyntypes"), 0);
    int64_t sb[3] = {2, 3, 2}, sx[2] = {3, 5}, s5 = 5, su[2] = {6, 2}, bx[3] = {2, 5, 4},
            sc[3] = {2, 3, 5};
    int b, x, c, u, bo, so, y[5];
    const char *names[5] = {"nz", "cp", "ui", "uc", "sel"};
    assert_int_equal(tether_ir_add_tensor(&g, "b", TETHER_BOOL, 3, sb, &b), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "x", TETHER_INT8, 2, sx, &x), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "c", TETHER_BOOL, 1, &s5, &c), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "u", TETHER_DTYPE(kDLFloat, 16), 2, su, &u), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "boxes", TETHER_DTYPE(kDLFloat, 64), 3, bx, &bo), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "scores", TETHER_FLOAT32, 3, sc, &so), 0);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(tether_ir_add_tensor(&g, names[i], i == 1 ? TETHER_INT8 : TETHER_INT64,
                                              TETHER_IR_SHAPE_UNKNOWN, NULL, &y[i]),
                         0);
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_NONZERO, &a);
    assert_int_equal(tether_ir_add_node(&g, "nz", TETHER_OP_NONZERO, &b, 1, &y[0], 1, &a, NULL), 0);
    tether_ir_attrs_init(TETHER_OP_COMPRESS, &a);
    a.mode = 4;
    a.axis = -1;
    int xc[2] = {x, c};
    assert_int_equal(tether_ir_add_node(&g, "cp", TETHER_OP_COMPRESS, xc, 2, &y[1], 1, &a, NULL),
                     0);
    tether_ir_attrs_init(TETHER_OP_UNIQUE, &a);
    a.mode = 4 | 1 << 4; /* unsorted, along axis 0: the first-occurrence indices */
    a.axis = 0;
    assert_int_equal(tether_ir_add_node(&g, "ui", TETHER_OP_UNIQUE, &u, 1, &y[2], 1, &a, NULL), 0);
    a.mode = 4 | 3 << 4; /* the counts, reading them */
    int uu[2] = {u, y[2]};
    assert_int_equal(tether_ir_add_node(&g, "uc", TETHER_OP_UNIQUE, uu, 2, &y[3], 1, &a, NULL), 0);
    tether_ir_attrs_init(TETHER_OP_NMS, &a);
    a.k = 3;
    a.alpha = 0.3f;
    a.mode = 1;
    int bs[2] = {bo, so};
    assert_int_equal(tether_ir_add_node(&g, "nms", TETHER_OP_NMS, bs, 2, &y[4], 1, &a, NULL), 0);
    int ins[6] = {b, x, c, u, bo, so};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(tether_ir_add_input(&g, ins[i]), 0);
    }
    for (int i = 0; i < 5; i++) {
        assert_int_equal(tether_ir_add_output(&g, y[i]), 0);
    }
    assert_int_equal(tether_ir_add_extent_outputs(&g), 0);
    if (tether_ir_infer(&g)) {
        fail_msg("%s", tether_last_error());
    }
    enum { SETS = 3 };
    static uint8_t bv[SETS][12], xv[SETS][15], cv[SETS][5];
    static uint16_t uv[SETS][12];
    static double bxv[SETS][40];
    static float scv[SETS][30];
    const void *sets[SETS * 6];
    for (int s = 0; s < SETS; s++) {
        for (int i = 0; i < 12; i++) {
            bv[s][i] = (uint8_t)(rnd() % 3 == 0);
            static const uint16_t h[3] = {0x0000, 0x3c00, 0xc000}; /* 0, 1, -2 */
            uv[s][i] = h[rnd() % 3];
        }
        for (int i = 0; i < 15; i++) {
            xv[s][i] = (uint8_t)(rnd() % 256);
        }
        for (int i = 0; i < 5; i++) {
            cv[s][i] = (uint8_t)(s == 1 ? 0 : rnd() % 2);
        }
        for (int i = 0; i < 10; i++) { /* centers in [0, 4), sizes in [0.5, 2.5) */
            bxv[s][4 * i] = (double)(rnd() % 400) / 100.0;
            bxv[s][4 * i + 1] = (double)(rnd() % 400) / 100.0;
            bxv[s][4 * i + 2] = 0.5 + (double)(rnd() % 200) / 100.0;
            bxv[s][4 * i + 3] = 0.5 + (double)(rnd() % 200) / 100.0;
        }
        for (int i = 0; i < 30; i++) {
            scv[s][i] = (float)(rnd() % 1000) / 1000.0f;
        }
        const void *row[6] = {bv[s], xv[s], cv[s], uv[s], bxv[s], scv[s]};
        memcpy(&sets[s * 6], row, sizeof row);
    }
    check_all(&g, SETS, sets);
    tether_ir_close(&g);
}

static void write_npy(const char *name, DLDataType t, const int64_t *shape, int nd,
                      const void *data) {
    char p[200];
    snprintf(p, sizeof p, "%s/%s", g_tmp, name);
    if (tether_npy_write(p, t, shape, nd, data)) {
        fail_msg("%s", tether_last_error());
    }
}

static void expect_same_file(const char *a, const char *b) {
    tether_npy x, y;
    char p[200];
    snprintf(p, sizeof p, "%s/%s", g_tmp, a);
    assert_int_equal(tether_npy_read(p, &x), 0);
    snprintf(p, sizeof p, "%s/%s", g_tmp, b);
    assert_int_equal(tether_npy_read(p, &y), 0);
    assert_int_equal(x.ndim, y.ndim);
    assert_memory_equal(x.shape, y.shape, sizeof(int64_t) * (size_t)x.ndim);
    assert_true(tether_dtype_equal(x.dtype, y.dtype));
    assert_int_equal(x.nbytes, y.nbytes);
    assert_memory_equal(x.data, y.data, x.nbytes);
    tether_npy_free(&x);
    tether_npy_free(&y);
}

static void test_cli(void **state) {
    (void)state;
    mb b;
    detection_head(&b);
    char path[128];
    snprintf(path, sizeof path, "%s/det_cli.onnx", g_tmp);
    mb_write(&b, path);
    mb_free(&b);
    const float boxes[16] = {0, 0, 1, 1, 0, 0, 1, 1.05f, 2, 2, 3, 3, 5, 5, 6, 6};
    const float scores[4] = {0.9f, 0.8f, 0.7f, 0.1f};
    const int64_t sb[3] = {1, 4, 4}, ss[3] = {1, 1, 4};
    write_npy("boxes.npy", TETHER_FLOAT32, sb, 3, boxes);
    write_npy("scores.npy", TETHER_FLOAT32, ss, 3, scores);
    char o[8192];
    if (run_cli(o, sizeof o,
                "run det_cli.onnx --in boxes=boxes.npy --in scores=scores.npy --out c_y.npy "
                "--out c_m.npy")) {
        fail_msg("%s", o);
    }
    if (run_cli(o, sizeof o,
                "run det_cli.onnx --backend opencl --in boxes=boxes.npy --in scores=scores.npy "
                "--out o_y.npy --out o_m.npy")) {
        fail_msg("%s", o);
    }
    expect_same_file("c_y.npy", "o_y.npy");
    expect_same_file("c_m.npy", "o_m.npy");
    tether_npy y;
    char p[200];
    snprintf(p, sizeof p, "%s/o_y.npy", g_tmp);
    assert_int_equal(tether_npy_read(p, &y), 0);
    assert_int_equal(y.ndim, 2); /* the actual shape: 2 boxes selected */
    assert_int_equal(y.shape[0], 2);
    assert_int_equal(y.shape[1], 4);
    const float want[8] = {0, 0, 3, 4, 2, 4, 9, 12};
    assert_memory_equal(y.data, want, sizeof want);
    tether_npy_free(&y);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detection_head),
        cmocka_unit_test(test_nonzero_compress_unique),
        cmocka_unit_test(test_live_readers),
        cmocka_unit_test(test_live_gather_error),
        cmocka_unit_test(test_live_still_refused),
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_cli),
    };
    return ocl_test_main("/tmp/tocldXXXXXX", tests, sizeof tests / sizeof tests[0]);
}
