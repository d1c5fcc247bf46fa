/*
 * The blocked kernels (compiler/src/codegen/emit_c_schedules.c) against the reference
 * interpreter, over the schedule knobs: convolutions whose planes are wide enough for vector
 * blocks, single vectors and a scalar remainder in one row, and dense layers with transposed
 * weights (dot products with K and N remainders, C, alpha/beta, activations, residuals), and
 * matrix products (row and column tails, broadcast batches, rank-1 operands); strides 1
 * and 2, dilations, symmetric and asymmetric padding, grouped and depthwise, channel counts that
 * leave a tail block, 1x1 as a matrix product with a ragged end, fused bias, activations and
 * residuals; channel-blocked chains (emit_c_nchwc.c). Each case runs with vector widths 0 (scalar
 * loops), 4, 8 and 16 and several block shapes, with the conv padding pass (a padded copy of the
 * input) and without it (borders handled in the kernel); all must match the interpreter (|a-b| <=
 * 1e-5 + 1e-4 |b|) and every element must be written.
 *
 * The knob grid is 18 compiles per case (14 per chain), each a gcc run of the generated
 * source; the suite runs a sixth of it per case, rotating with the case's name so that
 * neighbouring cases cover the rest (sampled()), and every knob setting still runs on several
 * shapes, the first of them built at -O3 and the others at -O1 (o3_once()).
 * TETHER_TEST_ALL_SCHEDULES=1 runs the whole grid for every case (before changing
 * emit_c_schedules.c or emit_c_nchwc.c; about 4 minutes on 2 cores).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ops_common.h"
#include "tether/crt.h"

typedef struct conv_case {
    const char *name;
    int64_t x[4], w[4];
    int bias, residual;
    int64_t stride[2], dil[2], pads[4], groups;
    tether_act act;
} conv_case;

static const conv_case cases[] = {
    /* 37 columns: 2 blocks of 16 at vw 8 nr 2, no single vector, 3 + 2 scalar border/tail */
    {"3x3_pad1_tail",
     {1, 3, 9, 37},
     {6, 3, 3, 3},
     1,
     0,
     {1, 1},
     {1, 1},
     {1, 1, 1, 1},
     1,
     TETHER_ACT_RELU},
    {"3x3_s2_gather",
     {1, 4, 11, 41},
     {5, 4, 3, 3},
     1,
     0,
     {2, 2},
     {1, 1},
     {1, 1, 1, 1},
     1,
     TETHER_ACT_CLIP},
    {"5x3_dilated_asym",
     {2, 2, 13, 45},
     {7, 2, 5, 3},
     0,
     0,
     {1, 1},
     {2, 3},
     {0, 2, 3, 1},
     1,
     TETHER_ACT_NONE},
    {"depthwise_3x3_s1",
     {1, 6, 12, 35},
     {6, 1, 3, 3},
     1,
     0,
     {1, 1},
     {1, 1},
     {1, 1, 1, 1},
     6,
     TETHER_ACT_CLIP},
    {"depthwise_3x3_s2",
     {1, 5, 14, 50},
     {5, 1, 3, 3},
     1,
     0,
     {2, 2},
     {1, 1},
     {0, 0, 1, 1},
     5,
     TETHER_ACT_RELU},
    {"groups2_og4",
     {1, 4, 8, 30},
     {8, 2, 3, 3},
     1,
     1,
     {1, 1},
     {1, 1},
     {1, 1, 1, 1},
     2,
     TETHER_ACT_RELU},
    {"groups3_og3_tail",
     {1, 6, 7, 27},
     {9, 2, 1, 3},
     0,
     0,
     {1, 1},
     {1, 1},
     {0, 1, 0, 1},
     3,
     TETHER_ACT_NONE},
    {"1x1_matrix_ragged",
     {1, 10, 7, 9},
     {11, 10, 1, 1},
     1,
     1,
     {1, 1},
     {1, 1},
     {0, 0, 0, 0},
     1,
     TETHER_ACT_RELU},
    {"1x1_stride2",
     {1, 5, 10, 38},
     {3, 5, 1, 1},
     0,
     0,
     {2, 2},
     {1, 1},
     {0, 0, 0, 0},
     1,
     TETHER_ACT_NONE},
    {"7x7_wide_pad3",
     {1, 2, 6, 70},
     {4, 2, 7, 7},
     1,
     1,
     {1, 1},
     {1, 1},
     {3, 3, 3, 3},
     1,
     TETHER_ACT_HARD_SWISH},
};

static void build(const conv_case *c, tether_ir_graph *g) {
    assert_int_equal(tether_ir_init(g, c->name), 0);
    int in[4], n = 0, y;
    char nm[8];
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, c->x, &in[n]), 0);
    assert_int_equal(tether_ir_add_input(g, in[n++]), 0);
    assert_int_equal(tether_ir_add_tensor(g, "w", TETHER_FLOAT32, 4, c->w, &in[n]), 0);
    assert_int_equal(tether_ir_add_input(g, in[n++]), 0);
    if (c->bias) {
        int64_t b = c->w[0];
        assert_int_equal(tether_ir_add_tensor(g, "b", TETHER_FLOAT32, 1, &b, &in[n]), 0);
        assert_int_equal(tether_ir_add_input(g, in[n++]), 0);
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.strides[0] = c->stride[0];
    a.strides[1] = c->stride[1];
    a.dilations[0] = c->dil[0];
    a.dilations[1] = c->dil[1];
    memcpy(a.pads, c->pads, sizeof a.pads);
    a.groups = c->groups;
    a.act = c->act;
    a.act_min = 0.0f;
    a.act_max = 0.5f;
    int nin = n;
    if (c->residual) { /* the residual has the output's shape: infer it first */
        int64_t ys[4] = {
            c->x[0], c->w[0],
            (c->x[2] + c->pads[0] + c->pads[2] - c->dil[0] * (c->w[2] - 1) - 1) / c->stride[0] + 1,
            (c->x[3] + c->pads[1] + c->pads[3] - c->dil[1] * (c->w[3] - 1) - 1) / c->stride[1] + 1};
        snprintf(nm, sizeof nm, "r");
        assert_int_equal(tether_ir_add_tensor(g, nm, TETHER_FLOAT32, 4, ys, &in[n]), 0);
        assert_int_equal(tether_ir_add_input(g, in[n++]), 0);
        a.has_residual = true;
        if (!c->bias) { /* the residual is the 4th input: an absent bias keeps its slot */
            in[3] = in[2];
            in[2] = -1;
            n = 4;
        }
    }
    (void)nin;
    assert_int_equal(tether_ir_add_tensor(g, "y", TETHER_FLOAT32, -1, NULL, &y), 0);
    assert_int_equal(tether_ir_add_node(g, "conv", TETHER_OP_CONV2D, in, n, &y, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_output(g, y), 0);
    if (tether_ir_infer(g)) {
        fail_msg("%s: %s", c->name, tether_last_error());
    }
}

/* family: which kernels the case is of (0 conv, 1 dense, 2 matmul), for o3_once() */
static void run_graph(tether_ir_graph *gp, const char *name, int family);

/* TETHER_TEST_ALL_SCHEDULES=1: the whole grid, every build at -O3. */
static bool all_schedules(void) {
    static int all = -1;
    if (all < 0) {
        const char *e = getenv("TETHER_TEST_ALL_SCHEDULES");
        all = e && *e && strcmp(e, "0") != 0;
    }
    return all;
}

/* Whether grid point k of the case `name` runs: all with TETHER_TEST_ALL_SCHEDULES=1, else a
 * sixth of them, which sixth depending on the name. */
static bool sampled(const char *name, size_t k) {
    if (all_schedules()) {
        return true;
    }
    unsigned h = 0;
    for (const char *p = name; *p; p++) {
        h = h * 31u + (unsigned char)*p;
    }
    return (k + h) % 6 == 0;
}

/* The optimisation level of a build of grid point k (*done: whether one was at -O3 already):
 * the first build of each point and kernel family in the run is at the target's default (-O3,
 * -Werror: the warnings only optimisation finds, the vectorised code as users get it), the others
 * at -O1 (the same generated C, checked for its values; gcc at -O3 was most of this test's time).
 * The whole grid (TETHER_TEST_ALL_SCHEDULES=1) builds everything at -O3. */
static int o3_once(bool *done) {
    if (!*done || all_schedules()) {
        *done = true;
        return TETHER_OPT_DEFAULT;
    }
    return 1;
}

static void run(const conv_case *c) {
    tether_ir_graph g;
    build(c, &g);
    run_graph(&g, c->name, 0);
}

static void run_graph(tether_ir_graph *gp, const char *name, int family) {
    static const int schedules[][4] = {
        /* vector_width, conv_oc_block, conv_col_vectors, dw_col_vectors */
        {0, 4, 2, 4}, {4, 4, 2, 4}, {8, 4, 2, 4},  {16, 4, 2, 4}, {8, 1, 1, 1},
        {8, 3, 4, 8}, {4, 8, 3, 2}, {16, 2, 1, 3}, {0, 3, 1, 1}, /* scalar: 3 channels, 3 rows */
    };
    tether_ir_graph g = *gp; /* owned: closed at the end */
    uint32_t seed = 7;
    float *inputs[4];
    for (int i = 0; i < g.ninputs; i++) {
        size_t n = tether_ir_tensor_elements(&g.tensors[g.inputs[i]]);
        inputs[i] = malloc(n * sizeof(float));
        tt_fill(inputs[i], n, false, &seed);
    }
    size_t on = tether_ir_tensor_elements(&g.tensors[g.outputs[0]]);
    float *ref = malloc(on * sizeof(float)), *got = malloc(on * sizeof(float));
    assert_int_equal(tether_interp_run(&g, (const float *const *)inputs, &ref), 0);
    for (size_t k = 0; k < 2 * (sizeof schedules / sizeof *schedules); k++) {
        if (!sampled(name, k)) {
            continue;
        }
        /* first pass: padded convs read a padded copy (the driver's pass); second: the kernel
         * handles the borders itself */
        int pad_min = k < sizeof schedules / sizeof *schedules ? 0 : -1;
        tether_schedule sc;
        tether_schedule_init(&sc);
        const int *kn = schedules[k % (sizeof schedules / sizeof *schedules)];
        sc.vector_width = kn[0];
        sc.conv_oc_block = kn[1];
        sc.conv_col_vectors = kn[2];
        sc.dw_col_vectors = kn[3];
        sc.gemv_rows = kn[1]; /* 4, 1, 3, 8, 2 rows */
        sc.gemm_rows = kn[1];
        sc.gemm_col_vectors = kn[2];
        for (size_t q = 0; q < on; q++) {
            got[q] = -12345.0f;
        }
        char tag[96];
        snprintf(tag, sizeof tag, "sched-%s-%zu", name, k);
        static bool built_o3[3][2 * sizeof schedules / sizeof *schedules];
        tt_opt_level = o3_once(&built_o3[family][k]);
        int rc = tt_run_compiled_schedule(&g, tag, TETHER_ABI_UNPACKED, TETHER_INTERFACE_PACKED,
                                          true, &sc, pad_min, (const float *const *)inputs, &got);
        tt_opt_level = TETHER_OPT_DEFAULT;
        if (rc) {
            fail_msg("%s, schedule %zu: %s", name, k, tether_last_error());
        }
        double cl = tt_close(got, ref, on, 1e-5, 1e-4);
        if (cl > 1.0) {
            fail_msg("%s, schedule vw %d mr %d nr %d dw %d, %s: differs from the interpreter "
                     "(%.3g x tolerance)",
                     name, sc.vector_width, sc.conv_oc_block, sc.conv_col_vectors,
                     sc.dw_col_vectors, pad_min ? "borders in the kernel" : "padded copy", cl);
        }
    }
    for (int i = 0; i < g.ninputs; i++) {
        free(inputs[i]);
    }
    free(ref);
    free(got);
    tether_ir_close(&g);
}

static void test_case(void **state) {
    run((const conv_case *)*state);
}

/* dense with transposed weights (the dot-product kernel): K with and without a remainder, N
 * with and without a row tail, C as a row or a column, alpha/beta, activation, residual. */
typedef struct dense_case {
    const char *name;
    int64_t M, K, N;
    int cshape; /* 0: no C, 1: C[N], 2: C[M,1] */
    float alpha, beta;
    tether_act act;
    int residual;
} dense_case;

static const dense_case dense_cases[] = {
    {"dense_k1000_n12", 1, 1000, 12, 1, 1.0f, 1.0f, TETHER_ACT_NONE, 0},
    {"dense_k37_n7_relu", 3, 37, 7, 1, 1.0f, 1.0f, TETHER_ACT_RELU, 0},
    {"dense_k64_n9_ab_col", 2, 64, 9, 2, 0.5f, 2.0f, TETHER_ACT_NONE, 1},
    {"dense_k16_n1", 5, 16, 1, 0, 1.0f, 1.0f, TETHER_ACT_SIGMOID, 0},
};

static void test_dense(void **state) {
    const dense_case *d = *state;
    tether_ir_graph g;
    assert_int_equal(tether_ir_init(&g, d->name), 0);
    int in[4], n = 0, y;
    int64_t as[2] = {d->M, d->K}, ws[2] = {d->N, d->K}, cs[2] = {d->M, 1}, ys[2] = {d->M, d->N};
    assert_int_equal(tether_ir_add_tensor(&g, "a", TETHER_FLOAT32, 2, as, &in[n]), 0);
    assert_int_equal(tether_ir_add_input(&g, in[n++]), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "w", TETHER_FLOAT32, 2, ws, &in[n]), 0);
    assert_int_equal(tether_ir_add_input(&g, in[n++]), 0);
    if (d->cshape) {
        int64_t *shape = d->cshape == 1 ? &ws[0] : cs;
        assert_int_equal(
            tether_ir_add_tensor(&g, "c", TETHER_FLOAT32, d->cshape == 1 ? 1 : 2, shape, &in[n]),
            0);
        assert_int_equal(tether_ir_add_input(&g, in[n++]), 0);
    } else if (d->residual) {
        in[n++] = -1;
    }
    if (d->residual) {
        assert_int_equal(tether_ir_add_tensor(&g, "r", TETHER_FLOAT32, 2, ys, &in[n]), 0);
        assert_int_equal(tether_ir_add_input(&g, in[n++]), 0);
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_DENSE, &a);
    a.trans_b = true;
    a.alpha = d->alpha;
    a.beta = d->beta;
    a.act = d->act;
    a.has_residual = d->residual != 0;
    assert_int_equal(tether_ir_add_tensor(&g, "y", TETHER_FLOAT32, -1, NULL, &y), 0);
    assert_int_equal(tether_ir_add_node(&g, "fc", TETHER_OP_DENSE, in, n, &y, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_output(&g, y), 0);
    if (tether_ir_infer(&g)) {
        fail_msg("%s: %s", d->name, tether_last_error());
    }
    run_graph(&g, d->name, 1);
}

/* Knobs out of range are refused with the knob's name. */
static void test_knob_ranges(void **state) {
    (void)state;
    tether_ir_graph g;
    build(&cases[0], &g);
    tether_memplan plan;
    assert_int_equal(tether_memplan_build(&g, "greedy-size", &plan), 0);
    tether_codegen_options o;
    tether_codegen_options_init(&o);
    tether_codegen_output out;
    o.schedule.vector_width = 6;
    assert_int_equal(tether_codegen_c(&g, &plan, &o, &out), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "vector_width 6"));
    o.schedule.vector_width = 8;
    o.schedule.conv_oc_block = 9;
    assert_int_equal(tether_codegen_c(&g, &plan, &o, &out), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "conv_oc_block 9"));
    o.schedule.conv_oc_block = 4;
    o.schedule.channel_block = 3;
    assert_int_equal(tether_codegen_c(&g, &plan, &o, &out), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "channel_block 3"));
    o.schedule.channel_block = -1;
    o.schedule.nchwc_pixels = 17;
    assert_int_equal(tether_codegen_c(&g, &plan, &o, &out), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "nchwc_pixels 17"));
    o.schedule.nchwc_pixels = 0;
    assert_int_equal(tether_codegen_c(&g, &plan, &o, &out), 0);
    assert_non_null(strstr(out.source, "schedule: blocked direct conv, 4 channels x 2 vectors"));
    tether_codegen_output_close(&out);
    o.schedule.vector_width = 0;
    assert_int_equal(tether_codegen_c(&g, &plan, &o, &out), 0);
    assert_null(strstr(out.source, "vector_size"));
    tether_codegen_output_close(&out);
    tether_memplan_close(&plan);
    tether_ir_close(&g);
}

/* matmul as register blocks: row and column tails, broadcast batches, a rank-1 operand, fused
 * activation and residual. */
typedef struct matmul_case {
    const char *name;
    int na, nb;
    int64_t a[4], b[4];
    tether_act act;
    int residual;
} matmul_case;

static const matmul_case matmul_cases[] = {
    {"matmul_attention_64x128x64", 2, 2, {64, 128}, {128, 64}, TETHER_ACT_NONE, 0},
    {"matmul_batch_bcast_tails", 4, 2, {2, 3, 5, 20}, {20, 37}, TETHER_ACT_RELU, 1},
    {"matmul_rank1_a", 1, 3, {24}, {3, 24, 19}, TETHER_ACT_NONE, 0},
    {"matmul_batched_both", 3, 3, {4, 7, 9}, {4, 9, 33}, TETHER_ACT_NONE, 1},
};

static void test_matmul(void **state) {
    const matmul_case *m = *state;
    tether_ir_graph g;
    assert_int_equal(tether_ir_init(&g, m->name), 0);
    int in[3], y;
    assert_int_equal(tether_ir_add_tensor(&g, "a", TETHER_FLOAT32, m->na, m->a, &in[0]), 0);
    assert_int_equal(tether_ir_add_input(&g, in[0]), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "b", TETHER_FLOAT32, m->nb, m->b, &in[1]), 0);
    assert_int_equal(tether_ir_add_input(&g, in[1]), 0);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_MATMUL, &a);
    a.act = m->act;
    int n = 2;
    if (m->residual) { /* infer the output shape first, for the residual input */
        tether_ir_graph p;
        assert_int_equal(tether_ir_init(&p, "probe"), 0);
        int pin[2], py;
        assert_int_equal(tether_ir_add_tensor(&p, "a", TETHER_FLOAT32, m->na, m->a, &pin[0]), 0);
        assert_int_equal(tether_ir_add_tensor(&p, "b", TETHER_FLOAT32, m->nb, m->b, &pin[1]), 0);
        assert_int_equal(tether_ir_add_input(&p, pin[0]), 0);
        assert_int_equal(tether_ir_add_input(&p, pin[1]), 0);
        assert_int_equal(tether_ir_add_tensor(&p, "y", TETHER_FLOAT32, -1, NULL, &py), 0);
        assert_int_equal(tether_ir_add_node(&p, "mm", TETHER_OP_MATMUL, pin, 2, &py, 1, NULL, NULL),
                         0);
        assert_int_equal(tether_ir_add_output(&p, py), 0);
        assert_int_equal(tether_ir_infer(&p), 0);
        assert_int_equal(tether_ir_add_tensor(&g, "r", TETHER_FLOAT32, p.tensors[py].ndim,
                                              p.tensors[py].shape, &in[2]),
                         0);
        tether_ir_close(&p);
        assert_int_equal(tether_ir_add_input(&g, in[2]), 0);
        a.has_residual = true;
        n = 3;
    }
    assert_int_equal(tether_ir_add_tensor(&g, "y", TETHER_FLOAT32, -1, NULL, &y), 0);
    assert_int_equal(tether_ir_add_node(&g, "mm", TETHER_OP_MATMUL, in, n, &y, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_output(&g, y), 0);
    if (tether_ir_infer(&g)) {
        fail_msg("%s: %s", m->name, tether_last_error());
    }
    run_graph(&g, m->name, 2);
}

/* ---- channel-blocked chains (emit_c_nchwc.c) ------------------------------------------------
 * Networks whose activations between convolutions are stored NCHW<b>c: a plain input into a
 * dense conv (plain -> blocked), depthwise and pointwise convs on blocked tensors with strides,
 * dilations, TF-style and symmetric padding, explicit Pad nodes, residuals, an unfused
 * elementwise op, global average pooling of a blocked tensor, a blocked tensor into a conv
 * writing the plain graph output, channel counts whose block is 16, 8 or 4 and ones with none
 * (6 channels stay plain between blocked neighbours). Weights are constants (repacked in the
 * module), linked and in a params blob. */

typedef struct chain {
    tether_ir_graph *g;
    uint32_t seed;
    int n;
} chain;

static int chain_const(chain *c, int ndim, const int64_t *shape) {
    char name[16];
    snprintf(name, sizeof name, "k%d", c->n++);
    int idx = tt_add_const(c->g, name, ndim, shape, &c->seed);
    assert_true(idx >= 0);
    return idx;
}

static int chain_tensor(chain *c) {
    char name[16];
    int t;
    snprintf(name, sizeof name, "t%d", c->n++);
    assert_int_equal(tether_ir_add_tensor(c->g, name, TETHER_FLOAT32, -1, NULL, &t), 0);
    return t;
}

/* y = conv(x) with O channels, a KxK kernel; res >= 0 adds that tensor (as a separate Add the
 * fusion pass folds into the conv). */
static int chain_conv(chain *c, int x, int64_t C, int64_t O, int64_t K, int64_t stride,
                      const int64_t pads[4], int64_t dil, int depthwise, tether_act act, int res) {
    int64_t ws[4] = {O, depthwise ? 1 : C, K, K}, bs[1] = {O};
    int in[3] = {x, chain_const(c, 4, ws), chain_const(c, 1, bs)};
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.strides[0] = a.strides[1] = stride;
    a.dilations[0] = a.dilations[1] = dil;
    memcpy(a.pads, pads, sizeof a.pads);
    a.groups = depthwise ? C : 1;
    int y = chain_tensor(c);
    char name[16];
    snprintf(name, sizeof name, "n%d", c->n++);
    assert_int_equal(tether_ir_add_node(c->g, name, TETHER_OP_CONV2D, in, 3, &y, 1, &a, NULL), 0);
    if (res >= 0) {
        int ai[2] = {y, res}, s = chain_tensor(c);
        snprintf(name, sizeof name, "n%d", c->n++);
        assert_int_equal(tether_ir_add_node(c->g, name, TETHER_OP_ADD, ai, 2, &s, 1, NULL, NULL),
                         0);
        y = s;
    }
    if (act != TETHER_ACT_NONE) {
        tether_ir_attrs r;
        tether_op op = act == TETHER_ACT_RELU ? TETHER_OP_RELU : TETHER_OP_CLIP;
        tether_ir_attrs_init(op, &r);
        r.min = 0.0f;
        r.max = 6.0f;
        int z = chain_tensor(c);
        snprintf(name, sizeof name, "n%d", c->n++);
        assert_int_equal(tether_ir_add_node(c->g, name, op, &y, 1, &z, 1, &r, NULL), 0);
        y = z;
    }
    return y;
}

static int chain_node(chain *c, tether_op op, const int *in, int n, const tether_ir_attrs *a) {
    int y = chain_tensor(c);
    char name[16];
    snprintf(name, sizeof name, "n%d", c->n++);
    assert_int_equal(tether_ir_add_node(c->g, name, op, in, n, &y, 1, a, NULL), 0);
    return y;
}

static const int64_t P0[4] = {0, 0, 0, 0}, P1[4] = {1, 1, 1, 1}, PTF[4] = {0, 0, 1, 1},
                     P2[4] = {2, 2, 2, 2}, PA[4] = {1, 2, 1, 0};

/* which: 0 a DS-CNN-like net ending in global average pooling; 1 residuals, an unfused
 * elementwise op and a plain graph output; 2 explicit Pad nodes, dilations, a 6-channel plain
 * island; 3 the dense first conv on a 3-channel image, MobileNet-style strides. */
static void build_chain(int which, tether_ir_graph *g) {
    chain c = {g, 11u + (uint32_t)which, 0};
    char name[16];
    snprintf(name, sizeof name, "chain%d", which);
    assert_int_equal(tether_ir_init(g, name), 0);
    static const int64_t xs[4][4] = {{1, 1, 19, 10}, {1, 8, 9, 7}, {1, 4, 11, 13}, {1, 3, 23, 21}};
    int x, y;
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, xs[which], &x), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    switch (which) {
    case 0:
        y = chain_conv(&c, x, 1, 16, 3, 2, P1, 1, 0, TETHER_ACT_RELU, -1);
        y = chain_conv(&c, y, 16, 16, 3, 1, P1, 1, 1, TETHER_ACT_RELU, -1);
        y = chain_conv(&c, y, 16, 24, 1, 1, P0, 1, 0, TETHER_ACT_NONE, -1);
        y = chain_conv(&c, y, 24, 24, 3, 2, PTF, 1, 1, TETHER_ACT_CLIP, -1);
        y = chain_conv(&c, y, 24, 20, 1, 1, P0, 1, 0, TETHER_ACT_RELU, -1);
        y = chain_node(&c, TETHER_OP_GLOBAL_AVG_POOL, &y, 1, NULL);
        break;
    case 1: {
        int a = chain_conv(&c, x, 8, 16, 1, 1, P0, 1, 0, TETHER_ACT_NONE, -1);
        y = chain_conv(&c, a, 16, 16, 3, 1, P1, 1, 1, TETHER_ACT_CLIP, -1);
        y = chain_conv(&c, y, 16, 16, 1, 1, P0, 1, 0, TETHER_ACT_NONE, a);
        int b = chain_conv(&c, y, 16, 16, 3, 1, PA, 1, 0, TETHER_ACT_NONE, -1);
        int in2[2] = {b, y};
        y = chain_node(&c, TETHER_OP_ADD, in2, 2, NULL); /* both operands used twice: unfused */
        int n2 = chain_node(&c, TETHER_OP_NEG, &y, 1, NULL);
        int in3[2] = {n2, b};
        y = chain_node(&c, TETHER_OP_SUB, in3, 2, NULL);
        y = chain_conv(&c, y, 16, 12, 3, 1, P1, 1, 0, TETHER_ACT_NONE, -1); /* plain output */
        break;
    }
    case 2: {
        y = chain_conv(&c, x, 4, 8, 1, 1, P0, 1, 0, TETHER_ACT_RELU, -1);
        tether_ir_attrs pa;
        tether_ir_attrs_init(TETHER_OP_PAD, &pa);
        pa.nints = 8;
        memset(pa.ints, 0, sizeof pa.ints);
        pa.ints[2] = 1;
        pa.ints[3] = 2;
        pa.ints[7] = 1;
        pa.value = 0.25f;
        y = chain_node(&c, TETHER_OP_PAD, &y, 1, &pa);
        y = chain_conv(&c, y, 8, 8, 3, 1, P0, 1, 1, TETHER_ACT_NONE, -1);
        y = chain_conv(&c, y, 8, 8, 3, 1, P2, 2, 0, TETHER_ACT_RELU, -1);
        y = chain_conv(&c, y, 8, 6, 1, 1, P0, 1, 0, TETHER_ACT_NONE, -1);  /* 6: no block */
        y = chain_conv(&c, y, 6, 6, 3, 1, P1, 1, 1, TETHER_ACT_RELU, -1);  /* plain depthwise */
        y = chain_conv(&c, y, 6, 32, 1, 1, P0, 1, 0, TETHER_ACT_NONE, -1); /* plain -> blocked */
        y = chain_conv(&c, y, 32, 32, 5, 2, P2, 1, 1, TETHER_ACT_RELU, -1);
        y = chain_node(&c, TETHER_OP_GLOBAL_AVG_POOL, &y, 1, NULL);
        break;
    }
    default:
        y = chain_conv(&c, x, 3, 8, 3, 2, PTF, 1, 0, TETHER_ACT_CLIP, -1);
        y = chain_conv(&c, y, 8, 8, 3, 1, P1, 1, 1, TETHER_ACT_CLIP, -1);
        y = chain_conv(&c, y, 8, 16, 1, 1, P0, 1, 0, TETHER_ACT_CLIP, -1);
        y = chain_conv(&c, y, 16, 16, 3, 2, PTF, 1, 1, TETHER_ACT_CLIP, -1);
        y = chain_conv(&c, y, 16, 48, 1, 1, P0, 1, 0, TETHER_ACT_CLIP, -1);
        y = chain_conv(&c, y, 48, 48, 3, 1, P1, 1, 1, TETHER_ACT_CLIP, -1);
        y = chain_conv(&c, y, 48, 40, 3, 1, P1, 1, 0, TETHER_ACT_NONE, -1); /* dense 3x3 */
        break;
    }
    assert_int_equal(tether_ir_add_output(g, y), 0);
    if (tether_ir_infer(g)) {
        fail_msg("%s: %s", name, tether_last_error());
    }
}

static void test_chain(void **state) {
    int which = (int)(intptr_t)*state;
    /* vector_width, channel_block, nchwc_oc_vectors, nchwc_pixels, nchwc_dw_pixels */
    static const int schedules[][5] = {
        {16, -1, 0, 0, 4}, {8, -1, 0, 0, 4},   {4, -1, 0, 0, 4}, {16, 4, 3, 5, 3},
        {16, 8, 1, 1, 1},  {8, -1, 8, 16, 16}, {16, 0, 0, 0, 4},
    };
    tether_ir_graph g;
    build_chain(which, &g);
    uint32_t seed = 5;
    size_t in_n = tether_ir_tensor_elements(&g.tensors[g.inputs[0]]);
    size_t on = tether_ir_tensor_elements(&g.tensors[g.outputs[0]]);
    float *in = malloc(in_n * sizeof(float)), *ref = malloc(on * sizeof(float)),
          *got = malloc(on * sizeof(float));
    tt_fill(in, in_n, false, &seed);
    const float *ins[1] = {in};
    assert_int_equal(tether_interp_run(&g, ins, &ref), 0);
    char chain_name[16];
    snprintf(chain_name, sizeof chain_name, "chain%d", which);
    for (size_t k = 0; k < 2 * sizeof schedules / sizeof *schedules; k++) {
        if (!sampled(chain_name, k)) {
            continue;
        }
        const int *kn = schedules[k / 2];
        tether_schedule sc;
        tether_schedule_init(&sc);
        sc.vector_width = kn[0];
        sc.channel_block = kn[1];
        sc.nchwc_oc_vectors = kn[2];
        sc.nchwc_pixels = kn[3];
        sc.nchwc_dw_pixels = kn[4];
        bool linked = k % 2 == 0;
        for (size_t q = 0; q < on; q++) {
            got[q] = -12345.0f;
        }
        char tag[64];
        snprintf(tag, sizeof tag, "chain%d-%zu", which, k);
        /* odd runs: the padding pass off, so padded blocked convs handle their borders */
        static bool built_o3[2 * sizeof schedules / sizeof *schedules];
        tt_opt_level = o3_once(&built_o3[k]);
        int rc = tt_run_compiled_schedule(&g, tag, TETHER_ABI_UNPACKED, TETHER_INTERFACE_PACKED,
                                          linked, &sc, linked ? 0 : -1, ins, &got);
        tt_opt_level = TETHER_OPT_DEFAULT;
        if (rc) {
            fail_msg("chain %d, schedule %zu: %s", which, k, tether_last_error());
        }
        double cl = tt_close(got, ref, on, 1e-5, 1e-4);
        if (cl > 1.0) {
            fail_msg("chain %d, vw %d channel_block %d oc_vectors %d pixels %d dw_pixels %d, %s: "
                     "differs from the interpreter (%.3g x tolerance)",
                     which, kn[0], kn[1], kn[2], kn[3], kn[4], linked ? "linked" : "blob", cl);
        }
    }
    /* the blocked kernels are the ones that ran: the source says so (and not with blocking off) */
    tether_memplan plan;
    assert_int_equal(tether_memplan_build(&g, "greedy-size", &plan), 0);
    tether_codegen_options o;
    tether_codegen_options_init(&o);
    o.schedule.vector_width = 16;
    tether_codegen_output out;
    assert_int_equal(tether_codegen_c(&g, &plan, &o, &out), 0);
    assert_non_null(strstr(out.source, "channel-blocked"));
    tether_codegen_output_close(&out);
    o.schedule.channel_block = 0;
    assert_int_equal(tether_codegen_c(&g, &plan, &o, &out), 0);
    assert_null(strstr(out.source, "channel-blocked"));
    tether_codegen_output_close(&out);
    tether_memplan_close(&plan);
    free(in);
    free(ref);
    free(got);
    tether_ir_close(&g);
}

int main(void) {
    struct CMUnitTest tests[sizeof cases / sizeof *cases +
                            sizeof dense_cases / sizeof *dense_cases +
                            sizeof matmul_cases / sizeof *matmul_cases + 5];
    size_t n = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tests[n++] = (struct CMUnitTest){cases[i].name, test_case, NULL, NULL, (void *)&cases[i]};
    }
    for (size_t i = 0; i < sizeof dense_cases / sizeof *dense_cases; i++) {
        tests[n++] = (struct CMUnitTest){dense_cases[i].name, test_dense, NULL, NULL,
                                         (void *)&dense_cases[i]};
    }
    for (size_t i = 0; i < sizeof matmul_cases / sizeof *matmul_cases; i++) {
        tests[n++] = (struct CMUnitTest){matmul_cases[i].name, test_matmul, NULL, NULL,
                                         (void *)&matmul_cases[i]};
    }
    static const char *const chain_names[4] = {"chain_dscnn_gap", "chain_residual_plain_out",
                                               "chain_pad_dilation_plain_island",
                                               "chain_mobilenet_image"};
    for (int i = 0; i < 4; i++) {
        tests[n++] =
            (struct CMUnitTest){chain_names[i], test_chain, NULL, NULL, (void *)(intptr_t)i};
    }
    tests[n++] = (struct CMUnitTest){"knob_ranges", test_knob_ranges, NULL, NULL, NULL};
    return _cmocka_run_group_tests("schedules", tests, n, NULL, NULL);
}
