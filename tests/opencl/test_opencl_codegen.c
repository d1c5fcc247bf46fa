/*
 * The compiler's OpenCL backend end to end on PoCL (label opencl), in four files with one main
 * (codegen_common.h). This one: main, and every operator (one case per shape family, including
 * 1x1 kernels, stride > kernel, asymmetric pads, dilations, groups, depthwise, fused epilogues,
 * rank-1 and scalar broadcasting, aliases as outputs) compiled with `--backend opencl`, run on
 * tetherd (local:) through the same runner as `tether run DIR` (tether/artifact.h, the host
 * library's runner) and compared with the reference interpreter; convolutions with constant
 * weights in buffers and in texture:weight images (OIHW4o); the operator zoo after the passes
 * both ways; graph outputs that alias an input, a constant or an output; empty tensors; the
 * error listing every unsupported node; a weight image over the device's image limit. The
 * texture activations are in test_opencl_codegen_tex.c, the CLI (KWS over local: and TCP, tune,
 * a device without OpenCL, usage errors) in test_opencl_codegen_cli.c. Exits 77 with the reason
 * when tetherd reports no OpenCL device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen_common.h"
#include "ops_common.h"
#include "tether/artifact.h"

/* ---- operator cases (tests/compiler/op_cases.c, those marked TT_OPENCL): operands are inputs - */

/* Adds one case to g (inputs c<k>_in<j>, output c<k>_y), recording which inputs are positive. */
static void add_case(tether_ir_graph *g, int k, const tt_op_case *c, unsigned char *positive) {
    int in[TT_MAXIN];
    for (int i = 0; i < c->nin; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s.in%d", c->name, i);
        assert_int_equal(
            tether_ir_add_tensor(g, nm, TETHER_FLOAT32, c->ndim[i], c->shape[i], &in[i]), 0);
        positive[g->ninputs] = (c->positive >> i) & 1u;
        assert_int_equal(tether_ir_add_input(g, in[i]), 0);
    }
    char tn[64], nn[64];
    snprintf(tn, sizeof tn, "%s.y", c->name);
    int mid, out;
    assert_int_equal(tether_ir_add_tensor(g, tn, TETHER_FLOAT32, -1, NULL, &mid), 0);
    tether_ir_attrs a;
    tether_ir_attrs_init(c->op, &a);
    if (c->attrs) {
        c->attrs(&a);
    }
    snprintf(nn, sizeof nn, "%s", c->name);
    assert_int_equal(tether_ir_add_node(g, nn, c->op, in, c->nin, &mid, 1, &a, NULL), 0);
    out = mid;
    if (c->then != TT_NONE) {
        snprintf(tn, sizeof tn, "%s.z", c->name);
        snprintf(nn, sizeof nn, "%s.after", c->name);
        assert_int_equal(tether_ir_add_tensor(g, tn, TETHER_FLOAT32, -1, NULL, &out), 0);
        assert_int_equal(tether_ir_add_node(g, nn, c->then, &mid, 1, &out, 1, NULL, NULL), 0);
    }
    (void)k;
    assert_int_equal(tether_ir_add_output(g, out), 0);
}

/* The cases in graphs of at most CASES_PER_PROGRAM (one program, one session each: every case
 * has its own inputs and output). A bounded program keeps PoCL's build at the first launch well
 * inside the session's reply timeout on a loaded machine, however many cases the table grows. */
#define CASES_PER_PROGRAM 40

void test_every_operator(void **state) {
    (void)state;
    unsigned char *positive = calloc(tt_num_op_cases * TT_MAXIN, 1);
    assert_non_null(positive);
    size_t k = 0;
    while (k < tt_num_op_cases) {
        tether_ir_graph g;
        assert_int_equal(tether_ir_init(&g, "cases"), 0);
        memset(positive, 0, tt_num_op_cases * TT_MAXIN);
        int n = 0;
        for (; k < tt_num_op_cases && n < CASES_PER_PROGRAM; k++) {
            if (tt_op_cases[k].backends & TT_OPENCL) {
                add_case(&g, (int)k, &tt_op_cases[k], positive);
                n++;
            }
        }
        if (n) {
            if (tether_ir_infer(&g)) {
                fail_msg("%s", tether_last_error());
            }
            /* passes on (fusion etc. find nothing to fold here: every operand is an input) */
            check_graph(&g, positive, false, true);
        }
        tether_ir_close(&g);
    }
    free(positive);
}

/* ---- convolutions with constant weights: buffers and texture:weight images ----------------- */

static const conv_case conv_cases[] = {
    {"tex_3x3_pad_relu", {1, 3, 8, 8}, {8, 3, 3, 3}, 1, 1, 1, 1, 1, TETHER_ACT_RELU, 0},
    {"tex_o_not_multiple_of_4", {2, 2, 5, 5}, {6, 2, 3, 3}, 1, 2, 1, 1, 1, TETHER_ACT_NONE, 0},
    {"tex_1x1_o3_nobias", {1, 5, 4, 3}, {3, 5, 1, 1}, 1, 1, 0, 1, 0, TETHER_ACT_NONE, 0},
    {"tex_depthwise_s2", {1, 6, 7, 7}, {6, 1, 3, 3}, 6, 2, 1, 1, 1, TETHER_ACT_CLIP, 0},
    {"tex_groups2_og4", {1, 4, 6, 6}, {8, 2, 3, 3}, 2, 1, 1, 2, 1, TETHER_ACT_SIGMOID, 0},
    {"tex_groups3_og2", {1, 6, 5, 5}, {6, 2, 2, 2}, 3, 1, 0, 1, 1, TETHER_ACT_NONE, 0},
    {"tex_residual_hswish", {1, 4, 5, 5}, {4, 4, 3, 3}, 1, 1, 1, 1, 1, TETHER_ACT_HARD_SWISH, 1},
    {"tex_depthwise_multiplier2", {1, 3, 6, 6}, {6, 1, 3, 3}, 3, 1, 1, 1, 0, TETHER_ACT_NONE, 0},
};

void test_conv_weights_buffer_and_texture(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof conv_cases / sizeof *conv_cases; i++) {
        tether_ir_graph g;
        build_conv(&g, &conv_cases[i]);
        check_graph(&g, NULL, false, true);
        check_graph(&g, NULL, true, true);
        /* the legacy kernels: buffer weights are packed OIHW4o and read with vload4 */
        g_legacy = true;
        check_graph(&g, NULL, false, true);
        char bdir[128];
        compile_ocl(&g, false, true, bdir, sizeof bdir);
        g_legacy = false;
        char bp[400];
        snprintf(bp, sizeof bp, "grep -q 'vload4(ob' '%s/m.cl' && ! grep -q image2d_t '%s/m.cl'",
                 bdir, bdir);
        assert_int_equal(system(bp), 0);
        rm_tree(bdir);
        /* the artifact really uses an image and fuses the epilogue into the conv */
        char dir[128];
        compile_ocl(&g, true, true, dir, sizeof dir);
        char p[200], *src;
        snprintf(p, sizeof p, "%s/m.cl", dir);
        FILE *f = fopen(p, "r");
        assert_non_null(f);
        src = calloc(1, 1 << 16);
        size_t n = fread(src, 1, (1 << 16) - 1, f);
        fclose(f);
        src[n] = 0;
        assert_non_null(strstr(src, "read_imagef"));
        assert_non_null(strstr(src, "image2d_t"));
        int kernels = 0;
        for (char *s = src; (s = strstr(s, "__kernel")); s++) {
            kernels++;
        }
        assert_int_equal(kernels, 1);
        free(src);
        rm_tree(dir);
        tether_ir_close(&g);
    }
}

/* ---- the zoo, after the passes --------------------------------------------------------------- */

void test_zoo(void **state) {
    (void)state;
    tether_ir_graph g;
    tt_build_zoo(&g);
    assert_int_equal(tether_ir_infer(&g), 0);
    check_graph(&g, NULL, false, true);
    check_graph(&g, NULL, true, true);
    check_graph(&g, NULL, false, false); /* no passes: batch_norm, bias adds, ... as kernels */
    tether_ir_close(&g);
}

/* Graph outputs that are aliases (reshape) of a graph input, of a constant and of another graph
 * output: each gets a copy kernel from where its root lives (input buffer, params, output). */
void test_alias_outputs(void **state) {
    (void)state;
    tether_ir_graph g;
    assert_int_equal(tether_ir_init(&g, "aliases"), 0);
    int64_t s[2] = {3, 70};
    int x, c, y, r1, r2, r3;
    float cv[210];
    uint32_t seed = 3;
    tt_fill(cv, 210, false, &seed);
    assert_int_equal(tether_ir_add_tensor(&g, "x", TETHER_FLOAT32, 2, s, &x), 0);
    assert_int_equal(tether_ir_add_constant(&g, "c", TETHER_FLOAT32, 2, s, cv, sizeof cv, &c), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "y", TETHER_FLOAT32, -1, NULL, &y), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "r1", TETHER_FLOAT32, -1, NULL, &r1), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "r2", TETHER_FLOAT32, -1, NULL, &r2), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "r3", TETHER_FLOAT32, -1, NULL, &r3), 0);
    int ab[2] = {x, c};
    assert_int_equal(tether_ir_add_node(&g, "add", TETHER_OP_ADD, ab, 2, &y, 1, NULL, NULL), 0);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_RESHAPE, &a);
    a.nints = 1;
    a.ints[0] = -1;
    assert_int_equal(tether_ir_add_node(&g, "rx", TETHER_OP_RESHAPE, &x, 1, &r1, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_node(&g, "rc", TETHER_OP_RESHAPE, &c, 1, &r2, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_node(&g, "ry", TETHER_OP_RESHAPE, &y, 1, &r3, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_input(&g, x), 0);
    assert_int_equal(tether_ir_add_output(&g, y), 0);
    assert_int_equal(tether_ir_add_output(&g, r1), 0);
    assert_int_equal(tether_ir_add_output(&g, r2), 0);
    assert_int_equal(tether_ir_add_output(&g, r3), 0);
    if (tether_ir_infer(&g)) {
        fail_msg("%s", tether_last_error());
    }
    check_graph(&g, NULL, false, true);
    check_graph(&g, NULL, false, false);
    tether_ir_close(&g);
}

/* Empty tensors flow only into empty outputs: no kernel, an object to bind all the same. */
void test_empty_tensors(void **state) {
    (void)state;
    tether_ir_graph g;
    assert_int_equal(tether_ir_init(&g, "empty"), 0);
    int64_t sx[2] = {2, 0}, sz[2] = {2, 3};
    int x, z, a, c;
    assert_int_equal(tether_ir_add_tensor(&g, "x", TETHER_FLOAT32, 2, sx, &x), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "z", TETHER_FLOAT32, 2, sz, &z), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "a", TETHER_FLOAT32, -1, NULL, &a), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "c", TETHER_FLOAT32, -1, NULL, &c), 0);
    assert_int_equal(tether_ir_add_node(&g, "relu", TETHER_OP_RELU, &x, 1, &a, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_node(&g, "sig", TETHER_OP_SIGMOID, &z, 1, &c, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_input(&g, x), 0);
    assert_int_equal(tether_ir_add_input(&g, z), 0);
    assert_int_equal(tether_ir_add_output(&g, a), 0);
    assert_int_equal(tether_ir_add_output(&g, c), 0);
    if (tether_ir_infer(&g)) {
        fail_msg("%s", tether_last_error());
    }
    check_graph(&g, NULL, false, true);
    tether_ir_close(&g);
    /* every output empty: an artifact without a kernel (nothing is built on the device) */
    assert_int_equal(tether_ir_init(&g, "all_empty"), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "x", TETHER_FLOAT32, 2, sx, &x), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "a", TETHER_FLOAT32, -1, NULL, &a), 0);
    assert_int_equal(tether_ir_add_node(&g, "relu", TETHER_OP_RELU, &x, 1, &a, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_input(&g, x), 0);
    assert_int_equal(tether_ir_add_output(&g, a), 0);
    assert_int_equal(tether_ir_infer(&g), 0);
    check_graph(&g, NULL, false, true);
    tether_ir_close(&g);
}

/* ---- errors ---------------------------------------------------------------------------------- */

/* Nodes the backend has no kernel for (operators newer than it, as a front end may produce one)
 * fail the compile with one error naming every such node; nothing is written. */
void test_unsupported_nodes(void **state) {
    (void)state;
    tether_ir_graph g;
    tt_build_zoo(&g);
    assert_int_equal(tether_ir_infer(&g), 0);
    tether_memplan plan;
    assert_int_equal(tether_memplan_build(&g, NULL, &plan), 0);
    tether_opencl_output out;
    assert_int_equal(tether_codegen_opencl(&g, &plan, NULL, &out), 0);
    assert_true(out.nkernels > 30);
    tether_opencl_output_close(&out);
    /* two nodes turned into operators the backend does not know */
    tether_op saved[2] = {g.nodes[2].op, g.nodes[7].op};
    g.nodes[2].op = (tether_op)(TETHER_OP_COUNT_ + 3);
    g.nodes[7].op = (tether_op)(TETHER_OP_COUNT_ + 4);
    int rc = tether_codegen_opencl(&g, &plan, NULL, &out);
    assert_int_equal(rc, TETHER_ERR_UNSUPPORTED);
    const char *msg = tether_error_detail();
    char n2[160], n7[160];
    snprintf(n2, sizeof n2, "node '%s'", g.nodes[2].name);
    snprintf(n7, sizeof n7, "node '%s'", g.nodes[7].name);
    assert_non_null(strstr(msg, "OpenCL backend has no kernel for 2 nodes"));
    assert_non_null(strstr(msg, n2));
    assert_non_null(strstr(msg, n7));
    assert_null(out.source);
    g.nodes[2].op = saved[0];
    g.nodes[7].op = saved[1];
    tether_memplan_close(&plan);
    tether_ir_close(&g);
}

/* A conv whose OIHW4o weight image is wider than the device allows: compiled without image limits
 * the artifact runs its buffer variant there (the interpreter's outputs, the reason named);
 * compiled for larger limits (no variant) it is refused with the limit before anything is
 * allocated; the same model with buffer weights runs. */
void test_image_over_limit(void **state) {
    (void)state;
    const tether_device_info *d = tether_session_info(g_s);
    assert_true(d->image_max_width > 0);
    int64_t C = d->image_max_width / 9 + 1; /* C/g * 3 * 3 texels > the limit */
    conv_case c = {"wide", {1, C, 3, 3}, {4, C, 3, 3}, 1, 1, 1, 1, 1, TETHER_ACT_NONE, 0};
    tether_ir_graph g;
    build_conv(&g, &c);
    check_graph(&g, NULL, true, true);
    char want[128];
    snprintf(want, sizeof want, "texture:weight image width %lld exceeds the device limit",
             (long long)(C * 9));
    assert_non_null(strstr(g_fallback, want));
    assert_non_null(strstr(g_fallback, "w (node 'conv')"));
    g_img_max[0] = g_img_max[1] = (int64_t)1 << 20; /* limits given: no buffer variant */
    char dir[128];
    compile_ocl(&g, true, true, dir, sizeof dir);
    g_img_max[0] = g_img_max[1] = 0;
    tether_artifact *a;
    assert_int_equal(tether_artifact_open(dir, &a), 0);
    int rc = tether_artifact_prepare(a, g_s, NULL);
    char msg[TETHER_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", tether_last_error());
    tether_artifact_free(a);
    assert_int_equal(tether_session_reset(g_s), 0);
    assert_int_equal(rc, TETHER_ERR_LIMIT);
    assert_non_null(strstr(msg, want));
    assert_non_null(strstr(msg, "CL_DEVICE_IMAGE2D_MAX_WIDTH"));
    assert_non_null(strstr(msg, "w (node 'conv')"));
    assert_non_null(strstr(msg, "recompile with --device URL or --image-max WxH"));
    rm_tree(dir);
    check_graph(&g, NULL, false, true);
    assert_string_equal(g_fallback, "");
    tether_ir_close(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_operator),
        cmocka_unit_test(test_conv_weights_buffer_and_texture),
        cmocka_unit_test(test_zoo),
        cmocka_unit_test(test_alias_outputs),
        cmocka_unit_test(test_empty_tensors),
        cmocka_unit_test(test_unsupported_nodes),
        cmocka_unit_test(test_image_over_limit),
        cmocka_unit_test(test_texture_activations),
        cmocka_unit_test(test_image_fallback),
        cmocka_unit_test(test_kws_cli),
        cmocka_unit_test(test_cli_errors),
        cmocka_unit_test(test_tune_opencl),
        cmocka_unit_test(test_gpu_conv),
        cmocka_unit_test(test_gpu_dense),
        cmocka_unit_test(test_gpu_schedules),
        cmocka_unit_test(test_gpu_rows),
        cmocka_unit_test(test_gpu_dense_softmax),
        cmocka_unit_test(test_fp16),
        cmocka_unit_test(test_wall_clock),
        cmocka_unit_test(test_fuse_conv_add_relu),
    };
    return ocl_test_main("/tmp/toclcgXXXXXX", tests, sizeof tests / sizeof tests[0]);
}
