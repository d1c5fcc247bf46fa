/*
 * test_opencl_codegen's GPU-kernel tests (emit_opencl_gpu.c, docs/codegen.md "GPU kernels") on
 * PoCL: conv as tiled GEMM (pointwise, general with stride/pad/dilation, grouped, K not a
 * multiple of the tile, odd channel counts, N = 2), vectorised depthwise (strides 1, 2, 3,
 * dilation, widths not a multiple of 4, residual and activation) and split-K dense (N = 1,
 * 4 x 4000, K odd, transposes, bias broadcasts, alpha/beta), split-K conv (pointwise late
 * layers, output channels not a multiple of 4, strides, dilation, residual, groups), each equal to
 * the interpreter and really emitted as the GPU kernel (or, for shapes it does not fit, the legacy
 * kernel with the reason in the kernel's comment); tuned schedules (split-K, tile sizes) keep them
 * equal; the row kernels (emit_opencl_rows.c: softmax, log_softmax, hardmax, layer_norm with one
 * work-group per row; rows strided by an inner extent, lengths not a multiple of the group,
 * hardmax ties, a tuned work-group size) equal the interpreter too, and so does dense with its
 * softmax consumer fused into one kernel (rows of 4 to 64, several rows per group, log_softmax,
 * alpha/beta/bias broadcasts; not fused when the dense output has another reader or is a graph
 * output).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_common.h"
#include "ops_common.h"

/* Whether m.cl of the artifact of g (compiled now) holds `what`. */
static int source_has(const tether_ir_graph *g, const char *what) {
    char dir[128], cmd[400];
    compile_ocl(g, false, true, dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "grep -q -- '%s' '%s/m.cl'", what, dir);
    int rc = system(cmd);
    if (rc != 0) { /* what the kernels' comments say instead */
        snprintf(cmd, sizeof cmd, "grep -h '^/\\* ' '%s/m.cl' | cut -c1-400 >&2", dir);
        (void)!system(cmd);
    }
    rm_tree(dir);
    return rc == 0;
}

/* x [N,C,H,W] -> conv(w [O,C/g,KH,KW], b) -> [+ residual] -> act */
static void build(tether_ir_graph *g, const char *name, const int64_t *xs, const int64_t *ws,
                  int groups, int stride, int pad, int dil, int residual, tether_act act) {
    assert_int_equal(tether_ir_init(g, name), 0);
    uint32_t seed = 5;
    int x, w, b, y;
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, xs, &x), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    w = tt_add_const(g, "w", 4, ws, &seed);
    b = tt_add_const(g, "b", 1, ws, &seed);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.groups = groups;
    a.strides[0] = a.strides[1] = stride;
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = pad;
    a.dilations[0] = a.dilations[1] = dil;
    int in[3] = {x, w, b}, node;
    assert_int_equal(tether_ir_add_tensor(g, "y", TETHER_FLOAT32, -1, NULL, &y), 0);
    assert_int_equal(tether_ir_add_node(g, "conv", TETHER_OP_CONV2D, in, 3, &y, 1, &a, &node), 0);
    assert_int_equal(tether_ir_infer_node(g, node), 0);
    int last = y;
    if (residual) {
        int r, s, ab[2];
        assert_int_equal(tether_ir_add_tensor(g, "r", TETHER_FLOAT32, 4, g->tensors[y].shape, &r),
                         0);
        assert_int_equal(tether_ir_add_input(g, r), 0);
        ab[0] = last;
        ab[1] = r;
        assert_int_equal(tether_ir_add_tensor(g, "s", TETHER_FLOAT32, -1, NULL, &s), 0);
        assert_int_equal(tether_ir_add_node(g, "add", TETHER_OP_ADD, ab, 2, &s, 1, NULL, NULL), 0);
        last = s;
    }
    if (act != TETHER_ACT_NONE) {
        tether_op op = act == TETHER_ACT_RELU ? TETHER_OP_RELU : TETHER_OP_CLIP;
        tether_ir_attrs aa;
        tether_ir_attrs_init(op, &aa);
        aa.min = 0.0f;
        aa.max = 0.5f;
        int o;
        assert_int_equal(tether_ir_add_tensor(g, "act", TETHER_FLOAT32, -1, NULL, &o), 0);
        assert_int_equal(tether_ir_add_node(g, "act", op, &last, 1, &o, 1, &aa, NULL), 0);
        last = o;
    }
    assert_int_equal(tether_ir_add_output(g, last), 0);
    assert_int_equal(tether_ir_infer(g), 0);
}

typedef struct gcase {
    const char *name;
    int64_t x[4], w[4];
    int groups, stride, pad, dil, residual;
    tether_act act;
    const char *kernel; /* text the source must hold: the GPU kernel's, or the fallback's reason */
} gcase;

static const gcase conv_cases[] = {
    {"pw_k_odd", {1, 37, 5, 7}, {19, 37, 1, 1}, 1, 1, 0, 1, 0, TETHER_ACT_NONE, "conv as GEMM"},
    {"pw_big", {1, 72, 6, 6}, {80, 72, 1, 1}, 1, 1, 0, 1, 1, TETHER_ACT_RELU, "conv as GEMM"},
    {"pw_n2", {2, 8, 3, 5}, {3, 8, 1, 1}, 1, 1, 0, 1, 0, TETHER_ACT_CLIP, "conv as GEMM"},
    {"conv3x3_s2_pad", {1, 5, 9, 11}, {7, 5, 3, 3}, 1, 2, 1, 1, 0, TETHER_ACT_RELU, "conv as GEMM"},
    {"conv_dil2", {2, 3, 10, 9}, {5, 3, 3, 3}, 1, 1, 2, 2, 1, TETHER_ACT_NONE, "conv as GEMM"},
    {"conv_5x5_s3", {1, 4, 13, 14}, {33, 4, 5, 5}, 1, 3, 2, 1, 0, TETHER_ACT_NONE, "conv as GEMM"},
    {"grouped_gemm",
     {1, 16, 6, 5},
     {16, 4, 3, 3},
     4,
     1,
     1,
     1,
     0,
     TETHER_ACT_RELU,
     "too small for GEMM tiles"},
    {"grouped_big", {1, 16, 4, 4}, {32, 8, 1, 1}, 2, 1, 0, 1, 0, TETHER_ACT_NONE, "conv as GEMM"},
    {"grouped_small",
     {1, 6, 5, 5},
     {6, 2, 3, 3},
     3,
     1,
     1,
     1,
     0,
     TETHER_ACT_NONE,
     "too small for GEMM tiles"},
    {"dw_s1_w7", {1, 5, 6, 7}, {5, 1, 3, 3}, 5, 1, 1, 1, 1, TETHER_ACT_CLIP, "vload4"},
    {"dw_s2_w9", {2, 3, 9, 9}, {3, 1, 3, 3}, 3, 2, 1, 1, 0, TETHER_ACT_RELU, "vload8"},
    {"dw_s3", {1, 4, 10, 13}, {4, 1, 3, 3}, 4, 3, 0, 1, 0, TETHER_ACT_NONE, "gathered"},
    {"dw_dil2_w16", {1, 7, 12, 16}, {7, 1, 3, 3}, 7, 1, 2, 2, 0, TETHER_ACT_NONE, "vload4"},
    {"dw_5x5_w1", {1, 3, 5, 1}, {3, 1, 5, 5}, 3, 1, 2, 1, 0, TETHER_ACT_NONE, "depthwise"},
    {"dw_multiplier2",
     {1, 3, 6, 6},
     {6, 1, 3, 3},
     3,
     1,
     1,
     1,
     0,
     TETHER_ACT_NONE,
     "too small for GEMM tiles"},
};

void test_gpu_conv(void **state) {
    (void)state;
    g_conv_gemm = true; /* the GEMM kernel untuned, so every shape below exercises it */
    for (size_t i = 0; i < sizeof conv_cases / sizeof *conv_cases; i++) {
        const gcase *c = &conv_cases[i];
        tether_ir_graph g;
        build(&g, c->name, c->x, c->w, c->groups, c->stride, c->pad, c->dil, c->residual, c->act);
        check_graph(&g, NULL, false, true);
        if (!source_has(&g, c->kernel)) {
            fail_msg("%s: the kernel is not the expected one ('%s')", c->name, c->kernel);
        }
        tether_ir_close(&g);
    }
    /* the legacy kernels stay available (the baseline) */
    tether_ir_graph g;
    build(&g, "legacy", conv_cases[0].x, conv_cases[0].w, 1, 1, 0, 1, 0, TETHER_ACT_NONE);
    g_legacy = true;
    assert_true(source_has(&g, "no GPU kernel: legacy kernels asked for"));
    check_graph(&g, NULL, false, true);
    g_legacy = false;
    assert_true(source_has(&g, "GPU kernel, conv as GEMM"));
    tether_ir_close(&g);
    /* by default an untuned general conv with many outputs keeps the direct kernel (faster
     * untuned on the GPU measured); few outputs over a long reduction take the split-K conv */
    g_conv_gemm = false;
    build(&g, "direct", (const int64_t[]){1, 8, 64, 64}, (const int64_t[]){16, 8, 3, 3}, 1, 1, 1, 1,
          0, TETHER_ACT_NONE);
    assert_true(source_has(&g, "the tiled-GEMM kernel only with tuned tiles"));
    check_graph(&g, NULL, false, true);
    tether_ir_close(&g);
    static const gcase splitk[] = {
        {"sk_pw_late",
         {1, 336, 3, 3},
         {56, 336, 1, 1},
         1,
         1,
         0,
         1,
         1,
         TETHER_ACT_NONE,
         "32 work-items share each block"},
        {"sk_pw_o_odd",
         {2, 64, 2, 2},
         {10, 64, 1, 1},
         1,
         1,
         0,
         1,
         0,
         TETHER_ACT_RELU,
         "split-K conv"},
        {"sk_3x3_s2",
         {1, 40, 5, 5},
         {24, 40, 3, 3},
         1,
         2,
         1,
         1,
         0,
         TETHER_ACT_CLIP,
         "split-K conv"},
        {"sk_dil2", {1, 20, 7, 6}, {12, 20, 3, 3}, 1, 1, 2, 2, 1, TETHER_ACT_NONE, "split-K conv"},
        {"sk_grouped",
         {1, 16, 4, 4},
         {16, 8, 3, 3},
         2,
         1,
         1,
         1,
         0,
         TETHER_ACT_RELU,
         "split-K conv"},
        {"sk_grouped_straddle",
         {1, 12, 4, 4},
         {6, 4, 3, 3},
         3,
         1,
         1,
         1,
         0,
         TETHER_ACT_NONE,
         "one work-item per output"},
    };
    for (size_t i = 0; i < sizeof splitk / sizeof *splitk; i++) {
        const gcase *c = &splitk[i];
        build(&g, c->name, c->x, c->w, c->groups, c->stride, c->pad, c->dil, c->residual, c->act);
        check_graph(&g, NULL, false, true);
        if (!source_has(&g, c->kernel)) {
            fail_msg("%s: the kernel is not the expected one ('%s')", c->name, c->kernel);
        }
        tether_ir_close(&g);
    }
}

/* x [M,K] (or [K,M] with trans_a) -> dense(w, c) -> act */
static void build_dense(tether_ir_graph *g, const char *name, int64_t M, int64_t K, int64_t N,
                        int ta, int tb, int cdims, float alpha, float beta, int relu) {
    assert_int_equal(tether_ir_init(g, name), 0);
    uint32_t seed = 9;
    int64_t xs[2] = {ta ? K : M, ta ? M : K}, ws[2] = {tb ? N : K, tb ? K : N};
    int x, y;
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 2, xs, &x), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    int in[3] = {x, tt_add_const(g, "w", 2, ws, &seed), -1}, nin = 2;
    if (cdims == 1) {
        in[nin++] = tt_add_const(g, "c", 1, &N, &seed);
    } else if (cdims == 2) {
        int64_t cs[2] = {M, 1};
        in[nin++] = tt_add_const(g, "c", 2, cs, &seed);
    } else if (cdims == 3) {
        int64_t cs[2] = {M, N};
        in[nin++] = tt_add_const(g, "c", 2, cs, &seed);
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_DENSE, &a);
    a.trans_a = ta;
    a.trans_b = tb;
    a.alpha = alpha;
    a.beta = beta;
    assert_int_equal(tether_ir_add_tensor(g, "y", TETHER_FLOAT32, -1, NULL, &y), 0);
    assert_int_equal(tether_ir_add_node(g, "fc", TETHER_OP_DENSE, in, nin, &y, 1, &a, NULL), 0);
    int o = y;
    if (relu) {
        tether_ir_attrs ra;
        tether_ir_attrs_init(TETHER_OP_RELU, &ra);
        assert_int_equal(tether_ir_add_tensor(g, "r", TETHER_FLOAT32, -1, NULL, &o), 0);
        assert_int_equal(tether_ir_add_node(g, "relu", TETHER_OP_RELU, &y, 1, &o, 1, &ra, NULL), 0);
    }
    assert_int_equal(tether_ir_add_output(g, o), 0);
    assert_int_equal(tether_ir_infer(g), 0);
}

void test_gpu_dense(void **state) {
    (void)state;
    static const struct {
        const char *name;
        int64_t M, K, N;
        int ta, tb, cdims;
        float alpha, beta;
        const char *kernel;
    } cases[] = {
        {"d4x4000", 1, 4000, 4, 0, 1, 1, 1.0f, 1.0f, "split-K GEMV"},
        {"n1", 1, 100, 1, 0, 1, 0, 1.0f, 1.0f, "split-K GEMV"},
        {"k_odd_m3", 3, 77, 5, 0, 1, 3, 0.5f, 2.0f, "split-K GEMV"},
        {"trans_a", 7, 64, 9, 1, 0, 2, 1.0f, 1.0f, "split-K GEMV"},
        {"not_trans_b", 2, 33, 3, 0, 0, 1, 1.0f, 0.5f, "split-K GEMV"},
        {"k_small", 4, 9, 6, 0, 1, 1, 1.0f, 1.0f, "loops briefly"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tether_ir_graph g;
        build_dense(&g, cases[i].name, cases[i].M, cases[i].K, cases[i].N, cases[i].ta, cases[i].tb,
                    cases[i].cdims, cases[i].alpha, cases[i].beta, 1);
        check_graph(&g, NULL, false, true);
        if (!source_has(&g, cases[i].kernel)) {
            fail_msg("%s: the kernel is not the expected one ('%s')", cases[i].name,
                     cases[i].kernel);
        }
        tether_ir_close(&g);
    }
}

/* Tuned split-K factors and tile sizes (what `tether tune --backend opencl` varies) keep the
 * results; out-of-range knobs are refused. */
void test_gpu_schedules(void **state) {
    (void)state;
    tether_ir_graph g;
    build_dense(&g, "split", 2, 300, 3, 0, 1, 1, 1.0f, 1.0f, 0);
    char key[TETHER_WORKLOAD_MAX];
    assert_int_equal(tether_workload_key(&g, 0, key, sizeof key), 0);
    tether_node_schedule ns = {key, {0}};
    tether_schedule_init(&ns.schedule);
    g_sched = &ns;
    g_nsched = 1;
    static const int splits[] = {1, 2, 16, 256};
    for (size_t i = 0; i < sizeof splits / sizeof *splits; i++) {
        ns.schedule.ocl_split_k = splits[i];
        ns.schedule.local_size = 128;
        check_graph(&g, NULL, false, true);
        char want[64];
        snprintf(want, sizeof want, "GEMV: %d work-items share", splits[i] < 2 ? 2 : splits[i]);
        assert_true(source_has(&g, want));
    }
    ns.schedule.ocl_split_k = 2000; /* over 1024 */
    tether_ir_graph c;
    assert_int_equal(tt_graph_copy(&g, &c), 0);
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.backend = TETHER_BACKEND_OPENCL;
    o.opencl.node_schedules = &ns;
    o.opencl.nnode_schedules = 1;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/bad_sched", g_tmp);
    tether_compile_result res;
    assert_int_not_equal(tether_compile_graph(&c, dir, &o, &res), 0);
    assert_non_null(strstr(tether_last_error(), "ocl_split_k 2000"));
    tether_ir_close(&c);
    tether_ir_close(&g);
    build(&g, "tiles", (const int64_t[]){1, 20, 7, 9}, (const int64_t[]){40, 20, 3, 3}, 1, 1, 1, 1,
          0, TETHER_ACT_NONE);
    assert_int_equal(tether_workload_key(&g, 0, key, sizeof key), 0);
    static const int tiles[][2] = {{16, 16}, {64, 16}, {16, 64}, {32, 64}};
    for (size_t i = 0; i < sizeof tiles / sizeof *tiles; i++) {
        tether_schedule_init(&ns.schedule);
        ns.schedule.ocl_tile_m = tiles[i][0];
        ns.schedule.ocl_tile_n = tiles[i][1];
        check_graph(&g, NULL, false, true);
        char want[64];
        snprintf(want, sizeof want, "%d x %d tiles", tiles[i][0], tiles[i][1]);
        assert_true(source_has(&g, want));
    }
    g_sched = NULL;
    g_nsched = 0;
    tether_ir_close(&g);
}

/* x -> op(axis) [-> with scale/bias for layer_norm]; ties: x's values rounded to few levels
 * (hardmax's first maximum). */
static void build_row(tether_ir_graph *g, const char *name, tether_op op, int ndim,
                      const int64_t *xs, int axis, int bias) {
    assert_int_equal(tether_ir_init(g, name), 0);
    uint32_t seed = 3;
    int x, y;
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, ndim, xs, &x), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    tether_ir_attrs a;
    tether_ir_attrs_init(op, &a);
    a.axis = axis;
    int in[3] = {x, -1, -1}, nin = 1;
    if (op == TETHER_OP_LAYER_NORM) {
        int ax = axis < 0 ? axis + ndim : axis;
        in[nin++] = tt_add_const(g, "scale", ndim - ax, xs + ax, &seed);
        if (bias) {
            in[nin++] = tt_add_const(g, "bias", ndim - ax, xs + ax, &seed);
        }
        a.epsilon = 1e-3f;
    }
    assert_int_equal(tether_ir_add_tensor(g, "y", TETHER_FLOAT32, -1, NULL, &y), 0);
    assert_int_equal(tether_ir_add_node(g, "row", op, in, nin, &y, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_output(g, y), 0);
    assert_int_equal(tether_ir_infer(g), 0);
}

void test_gpu_rows(void **state) {
    (void)state;
    static const struct {
        const char *name;
        tether_op op;
        int ndim;
        int64_t x[4];
        int axis, bias;
        const char *kernel;
    } cases[] = {
        {"softmax1000", TETHER_OP_SOFTMAX, 2, {1, 1000}, -1, 0, "one work-group of 256 per row"},
        {"softmax_inner", TETHER_OP_SOFTMAX, 3, {2, 130, 3}, 1, 0, "per row of 130 (6 rows)"},
        {"logsoftmax", TETHER_OP_LOG_SOFTMAX, 3, {2, 3, 100}, 2, 0, "per row of 100"},
        {"hardmax", TETHER_OP_HARDMAX, 2, {3, 517}, 1, 0, "per row of 517"},
        {"hardmax_inner", TETHER_OP_HARDMAX, 3, {1, 70, 5}, 1, 0, "per row of 70"},
        {"layernorm", TETHER_OP_LAYER_NORM, 3, {2, 5, 96}, -1, 1, "per row of 96 (10 rows)"},
        {"layernorm_2axes", TETHER_OP_LAYER_NORM, 3, {2, 9, 40}, 1, 0, "per row of 360"},
        {"softmax_short", TETHER_OP_SOFTMAX, 2, {4, 10}, -1, 0, "rows of 10: one work-item"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tether_ir_graph g;
        build_row(&g, cases[i].name, cases[i].op, cases[i].ndim, cases[i].x, cases[i].axis,
                  cases[i].bias);
        check_graph(&g, NULL, false, true);
        if (!source_has(&g, cases[i].kernel)) {
            fail_msg("%s: the kernel is not the expected one ('%s')", cases[i].name,
                     cases[i].kernel);
        }
        tether_ir_close(&g);
    }
    /* a tuned work-group size (tether tune --backend opencl's local_size) */
    tether_ir_graph g;
    build_row(&g, "tuned", TETHER_OP_SOFTMAX, 2, (const int64_t[]){2, 300}, -1, 0);
    char key[TETHER_WORKLOAD_MAX];
    assert_int_equal(tether_workload_key(&g, 0, key, sizeof key), 0);
    tether_node_schedule ns = {key, {0}};
    tether_schedule_init(&ns.schedule);
    ns.schedule.local_size = 64;
    g_sched = &ns;
    g_nsched = 1;
    check_graph(&g, NULL, false, true);
    assert_true(source_has(&g, "one work-group of 64 per row of 300"));
    g_sched = NULL;
    g_nsched = 0;
    tether_ir_close(&g);
}

/* x [M,K] -> dense(w [N,K], c) -> softmax | log_softmax [-> also a graph output / a second
 * reader] */
static void build_dense_softmax(tether_ir_graph *g, const char *name, int64_t M, int64_t K,
                                int64_t N, int cdims, tether_op op, int extra) {
    build_dense(g, name, M, K, N, 0, 1, cdims, 0.75f, 1.5f, 0);
    int d = g->outputs[0], y;
    g->noutputs = 0;
    tether_ir_attrs a;
    tether_ir_attrs_init(op, &a);
    a.axis = -1;
    assert_int_equal(tether_ir_add_tensor(g, "p", TETHER_FLOAT32, -1, NULL, &y), 0);
    assert_int_equal(tether_ir_add_node(g, "sm", op, &d, 1, &y, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_output(g, y), 0);
    if (extra == 1) { /* the dense output is a graph output too */
        assert_int_equal(tether_ir_add_output(g, d), 0);
    } else if (extra == 2) { /* a second reader */
        tether_ir_attrs ra;
        tether_ir_attrs_init(TETHER_OP_RELU, &ra);
        int r;
        assert_int_equal(tether_ir_add_tensor(g, "r", TETHER_FLOAT32, -1, NULL, &r), 0);
        assert_int_equal(tether_ir_add_node(g, "relu2", TETHER_OP_RELU, &d, 1, &r, 1, &ra, NULL),
                         0);
        assert_int_equal(tether_ir_add_output(g, r), 0);
    }
    assert_int_equal(tether_ir_infer(g), 0);
}

void test_gpu_dense_softmax(void **state) {
    (void)state;
    static const struct {
        const char *name;
        int64_t M, K, N;
        int cdims;
        tether_op op;
        int extra;
        const char *kernel;
    } cases[] = {
        {"ds_4x4000", 1, 4000, 4, 1, TETHER_OP_SOFTMAX, 0, "GEMV with softmax"},
        {"ds_rows", 5, 40, 12, 3, TETHER_OP_SOFTMAX, 0, "2 rows of 12 per work-group"},
        {"ds_k300", 5, 300, 12, 3, TETHER_OP_SOFTMAX, 0, "1 row of 12 per work-group"},
        {"ds_log", 3, 64, 37, 2, TETHER_OP_LOG_SOFTMAX, 0, "GEMV with log_softmax"},
        {"ds_64", 2, 129, 64, 1, TETHER_OP_SOFTMAX, 0, "1 row of 64"},
        {"ds_wide", 1, 100, 65, 1, TETHER_OP_SOFTMAX, 0, "sm: softmax(y"},
        {"ds_output", 1, 500, 8, 1, TETHER_OP_SOFTMAX, 1, "sm: softmax(y"},
        {"ds_reader", 1, 500, 8, 1, TETHER_OP_SOFTMAX, 2, "sm: softmax(y"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tether_ir_graph g;
        build_dense_softmax(&g, cases[i].name, cases[i].M, cases[i].K, cases[i].N, cases[i].cdims,
                            cases[i].op, cases[i].extra);
        check_graph(&g, NULL, false, true);
        if (!source_has(&g, cases[i].kernel)) {
            fail_msg("%s: the kernel is not the expected one ('%s')", cases[i].name,
                     cases[i].kernel);
        }
        tether_ir_close(&g);
    }
}
