/*
 * The compiler's OpenCL backend end to end on PoCL (label opencl): every operator (one case per
 * shape family, including 1x1 kernels, stride > kernel, asymmetric pads, dilations, groups,
 * depthwise, fused epilogues, rank-1 and scalar broadcasting, aliases as outputs) compiled with
 * `--backend opencl`, run on tetherd (local:) through the same runner as `tether run DIR`
 * (tether/artifact.h, the host library's runner) and compared with the reference interpreter;
 * convolutions with constant weights in buffers and in texture:weight images (OIHW4o); the operator
 * zoo after the passes both ways; graph outputs that alias an input, a constant or an output; KWS
 * through the `tether` CLI over local: and over TCP to a tetherd on 127.0.0.1, buffer and texture
 * weights, equal to `tether run --reference` within 1e-4, and `tether bench`; the error listing
 * every unsupported node; a weight image over the device's image limit; a device without OpenCL;
 * usage errors; texture activations (the storage-scope pass) on a chain, the zoo, the conv net and
 * the MobileNet-style block, and their fallback to buffers over tiny image limits. Exits 77 with
 * the reason when tetherd reports no OpenCL device.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "daemon.h"
#include "ops_common.h"
#include "tether/artifact.h"
#include "tether/compiler.h"
#include "tether/crt.h"
#include "tether/file.h"
#include "tether/npy.h"

static tether_session *g_s;
static tether_session *g_run;                 /* run_ocl's session (NULL: g_s) */
static char g_fallback[TETHER_ERROR_MSG_MAX]; /* run_ocl: why its artifact ran the buffer variant */
static char g_tmp[64];
static int g_seq;
static bool g_tex_act;       /* compile_ocl: --texture-activations */
static int64_t g_img_max[2]; /* compile_ocl: --image-max (0 = none) */

/* ---- helpers -------------------------------------------------------------------------------- */

static int open_local(tether_session **s) {
    static const char *const quiet[] = {"--quiet", NULL};
    tether_session_options o = {0};
    o.tetherd = k_tetherd;
    o.tetherd_args = quiet;
    return tether_session_open(s, "local:", &o);
}

static void rm_tree(const char *dir) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
    }
}

/* Compiles g (a copy; g stays as it is) with the OpenCL backend into a fresh directory. */
static void compile_ocl(const tether_ir_graph *g, bool texture, bool passes, char *dir, size_t n) {
    snprintf(dir, n, "%s/a%d", g_tmp, g_seq++);
    tether_ir_graph c;
    assert_int_equal(tt_graph_copy(g, &c), 0);
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.backend = TETHER_BACKEND_OPENCL;
    o.opencl.texture_weights = texture;
    o.opencl.texture_activations = g_tex_act;
    o.opencl.image_max_width = g_img_max[0];
    o.opencl.image_max_height = g_img_max[1];
    o.codegen.prefix = "m";
    if (!passes) {
        memset(&o.passes, 0, sizeof o.passes);
    }
    tether_compile_result res;
    if (tether_compile_graph(&c, dir, &o, &res)) {
        fail_msg("%s: compile: %s", g->name, tether_last_error());
    }
    tether_ir_close(&c);
}

/* Runs the artifact in dir on g_s with inputs; outputs malloc'ed into outs. */
static void run_ocl(const char *dir, const float *const *ins, float **outs, int nout) {
    tether_artifact *a;
    if (tether_artifact_open(dir, &a)) {
        fail_msg("load %s: %s", dir, tether_last_error());
    }
    assert_int_equal(tether_artifact_backend_of(a), TETHER_ARTIFACT_OPENCL);
    assert_int_equal(tether_artifact_num_outputs(a), nout);
    for (int i = 0; i < nout; i++) {
        tether_artifact_io io;
        assert_int_equal(tether_artifact_io_of(a, 1, i, &io), 0);
        int64_t n = (int64_t)(io.nbytes / sizeof(float));
        outs[i] = calloc((size_t)(n ? n : 1), sizeof(float));
        for (int64_t k = 0; k < n; k++) {
            outs[i][k] = NAN; /* every element must be written */
        }
    }
    tether_session *s = g_run ? g_run : g_s;
    int rc = tether_artifact_prepare(a, s, NULL);
    const char *fb = rc ? NULL : tether_artifact_fallback(a);
    snprintf(g_fallback, sizeof g_fallback, "%s", fb ? fb : "");
    if (!rc) {
        rc = tether_artifact_run(a, (const void *const *)ins, (void *const *)outs, NULL, NULL);
    }
    char msg[TETHER_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", tether_last_error());
    tether_artifact_free(a);
    /* a session holds at most 16 modules: start afresh for the next artifact */
    assert_int_equal(tether_session_reset(s), 0);
    if (rc) {
        fail_msg("run %s: %s", dir, msg);
    }
}

/* Inputs of g filled from a fixed seed; positive bit i: input i in [0.1, 2). */
static float **make_inputs(const tether_ir_graph *g, const unsigned char *positive, uint32_t seed) {
    float **in = calloc((size_t)(g->ninputs ? g->ninputs : 1), sizeof(float *));
    for (int i = 0; i < g->ninputs; i++) {
        size_t n = tether_ir_tensor_elements(&g->tensors[g->inputs[i]]);
        in[i] = malloc((n ? n : 1) * sizeof(float));
        tt_fill(in[i], n, positive && positive[i], &seed);
    }
    return in;
}

static void free_list(float **v, int n) {
    for (int i = 0; v && i < n; i++) {
        free(v[i]);
    }
    free(v);
}

/* Compiles and runs g with the OpenCL backend, compares every output with the interpreter. */
static void check_graph(const tether_ir_graph *g, const unsigned char *positive, bool texture,
                        bool passes) {
    float **in = make_inputs(g, positive, 7);
    float **ref = calloc((size_t)g->noutputs, sizeof(float *));
    float **got = calloc((size_t)g->noutputs, sizeof(float *));
    for (int i = 0; i < g->noutputs; i++) {
        size_t n = tether_ir_tensor_elements(&g->tensors[g->outputs[i]]);
        ref[i] = malloc((n ? n : 1) * sizeof(float));
    }
    if (tether_interp_run(g, (const float *const *)in, ref)) {
        fail_msg("%s: interpreter: %s", g->name, tether_last_error());
    }
    char dir[128];
    compile_ocl(g, texture, passes, dir, sizeof dir);
    run_ocl(dir, (const float *const *)in, got, g->noutputs);
    int bad = 0;
    for (int i = 0; i < g->noutputs; i++) {
        const tether_ir_tensor *t = &g->tensors[g->outputs[i]];
        size_t n = tether_ir_tensor_elements(t);
        double c = tt_close(got[i], ref[i], n, 1e-5, 1e-4);
        if (!(c <= 1.0)) {
            size_t worst = 0;
            double wd = -1;
            for (size_t k = 0; k < n; k++) {
                double d = fabs((double)got[i][k] - ref[i][k]);
                if (isnan(got[i][k]) != isnan(ref[i][k]) || d > wd) {
                    wd = isnan(d) ? INFINITY : d;
                    worst = k;
                }
            }
            print_error("%s%s: output '%s' differs (closeness %g): [%zu] = %g, reference %g\n",
                        g->name, texture ? " (texture weights)" : "", t->name, c, worst,
                        (double)got[i][worst], (double)ref[i][worst]);
            bad++;
        }
    }
    free_list(in, g->ninputs);
    free_list(ref, g->noutputs);
    free_list(got, g->noutputs);
    rm_tree(dir);
    assert_int_equal(bad, 0);
}

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

/* Every case in one graph (one program, one session): each has its own inputs and output. */
static void test_every_operator(void **state) {
    (void)state;
    tether_ir_graph g;
    assert_int_equal(tether_ir_init(&g, "cases"), 0);
    unsigned char *positive = calloc(tt_num_op_cases * TT_MAXIN, 1);
    assert_non_null(positive);
    for (size_t k = 0; k < tt_num_op_cases; k++) {
        if (tt_op_cases[k].backends & TT_OPENCL) {
            add_case(&g, (int)k, &tt_op_cases[k], positive);
        }
    }
    if (tether_ir_infer(&g)) {
        fail_msg("%s", tether_last_error());
    }
    /* passes on (fusion etc. find nothing to fold here: every operand is an input) */
    check_graph(&g, positive, false, true);
    free(positive);
    tether_ir_close(&g);
}

/* ---- convolutions with constant weights: buffers and texture:weight images ----------------- */

typedef struct conv_case {
    const char *name;
    int64_t x[4], w[4];
    int groups, stride, pad, dil;
    int bias;
    tether_act act;
    int residual;
} conv_case;

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

/* x -> conv(w const, b const) [-> + residual input] [-> act]: the passes fuse bias, residual and
 * activation into the conv. */
static void build_conv(tether_ir_graph *g, const conv_case *c) {
    assert_int_equal(tether_ir_init(g, c->name), 0);
    uint32_t seed = 11;
    int x, w, b = -1, y, r = -1;
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, c->x, &x), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    size_t wn = (size_t)(c->w[0] * c->w[1] * c->w[2] * c->w[3]);
    float *wv = malloc(wn * sizeof(float));
    tt_fill(wv, wn, false, &seed);
    assert_int_equal(
        tether_ir_add_constant(g, "w", TETHER_FLOAT32, 4, c->w, wv, wn * sizeof(float), &w), 0);
    free(wv);
    int in[3] = {x, w, -1};
    int nin = 2;
    if (c->bias) {
        float bv[64];
        tt_fill(bv, (size_t)c->w[0], false, &seed);
        assert_int_equal(tether_ir_add_constant(g, "b", TETHER_FLOAT32, 1, &c->w[0], bv,
                                                (size_t)c->w[0] * sizeof(float), &b),
                         0);
        in[nin++] = b;
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.groups = c->groups;
    a.strides[0] = a.strides[1] = c->stride;
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = c->pad;
    a.dilations[0] = a.dilations[1] = c->dil;
    assert_int_equal(tether_ir_add_tensor(g, "conv", TETHER_FLOAT32, -1, NULL, &y), 0);
    int node;
    assert_int_equal(tether_ir_add_node(g, "conv", TETHER_OP_CONV2D, in, nin, &y, 1, &a, &node), 0);
    if (tether_ir_infer_node(g, node)) { /* the shape of y, for the residual input */
        fail_msg("%s: %s", c->name, tether_last_error());
    }
    int last = y;
    if (c->residual) {
        assert_int_equal(tether_ir_add_tensor(g, "res", TETHER_FLOAT32, g->tensors[y].ndim,
                                              g->tensors[y].shape, &r),
                         0);
        assert_int_equal(tether_ir_add_input(g, r), 0);
        int s;
        int ab[2] = {last, r};
        assert_int_equal(tether_ir_add_tensor(g, "sum", TETHER_FLOAT32, -1, NULL, &s), 0);
        assert_int_equal(tether_ir_add_node(g, "add", TETHER_OP_ADD, ab, 2, &s, 1, NULL, NULL), 0);
        last = s;
    }
    if (c->act != TETHER_ACT_NONE) {
        tether_op op = c->act == TETHER_ACT_RELU      ? TETHER_OP_RELU
                       : c->act == TETHER_ACT_CLIP    ? TETHER_OP_CLIP
                       : c->act == TETHER_ACT_SIGMOID ? TETHER_OP_SIGMOID
                                                      : TETHER_OP_HARD_SWISH;
        tether_ir_attrs aa;
        tether_ir_attrs_init(op, &aa);
        aa.min = 0.0f;
        aa.max = 0.4f;
        int o;
        assert_int_equal(tether_ir_add_tensor(g, "act", TETHER_FLOAT32, -1, NULL, &o), 0);
        assert_int_equal(tether_ir_add_node(g, "act", op, &last, 1, &o, 1, &aa, NULL), 0);
        last = o;
    }
    assert_int_equal(tether_ir_add_output(g, last), 0);
    if (tether_ir_infer(g)) {
        fail_msg("%s: %s", c->name, tether_last_error());
    }
}

static void test_conv_weights_buffer_and_texture(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof conv_cases / sizeof *conv_cases; i++) {
        tether_ir_graph g;
        build_conv(&g, &conv_cases[i]);
        check_graph(&g, NULL, false, true);
        check_graph(&g, NULL, true, true);
        /* buffer weights are packed OIHW4o and read with vload4 */
        char bdir[128];
        compile_ocl(&g, false, true, bdir, sizeof bdir);
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

static void test_zoo(void **state) {
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
static void test_alias_outputs(void **state) {
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
static void test_empty_tensors(void **state) {
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
static void test_unsupported_nodes(void **state) {
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
static void test_image_over_limit(void **state) {
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

/* ---- texture activations (the storage-scope pass) ------------------------------------------ */

static int run_cli(char *out, size_t cap, const char *fmt, ...);
static void expect_equal_npy(const char *a, const char *b, double tol);

/* x[1,8,10,12] -> conv 3x3 (buffer -> texture) -> depthwise 3x3 -> pointwise, + the first conv's
 * output (a residual) -> sigmoid -> mul with the sum (both operands textures) -> conv 3x3 to 10
 * channels (texture -> a buffer graph output, a channel count that is not a multiple of 4). */
static void build_tex_chain(tether_ir_graph *g) {
    uint32_t seed = 3;
    assert_int_equal(tether_ir_init(g, "tex_chain"), 0);
    int64_t xs[4] = {1, 8, 10, 12}, w8[4] = {8, 8, 3, 3}, wd[4] = {8, 1, 3, 3},
            wp[4] = {8, 8, 1, 1}, w10[4] = {10, 8, 3, 3}, b8[1] = {8}, b10[1] = {10};
    int x, t[7];
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, xs, &x), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    for (int i = 0; i < 7; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "t%d", i);
        assert_int_equal(tether_ir_add_tensor(g, nm, TETHER_FLOAT32, -1, NULL, &t[i]), 0);
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    int c1[3] = {x, tt_add_const(g, "w1", 4, w8, &seed), tt_add_const(g, "b1", 1, b8, &seed)};
    assert_int_equal(tether_ir_add_node(g, "conv1", TETHER_OP_CONV2D, c1, 3, &t[0], 1, &a, NULL),
                     0);
    a.groups = 8;
    a.strides[0] = a.strides[1] = 1;
    int c2[3] = {t[0], tt_add_const(g, "wd", 4, wd, &seed), tt_add_const(g, "bd", 1, b8, &seed)};
    assert_int_equal(tether_ir_add_node(g, "dw", TETHER_OP_CONV2D, c2, 3, &t[1], 1, &a, NULL), 0);
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    int c3[2] = {t[1], tt_add_const(g, "wp", 4, wp, &seed)};
    assert_int_equal(tether_ir_add_node(g, "pw", TETHER_OP_CONV2D, c3, 2, &t[2], 1, &a, NULL), 0);
    int ad[2] = {t[2], t[0]};
    assert_int_equal(tether_ir_add_node(g, "add", TETHER_OP_ADD, ad, 2, &t[3], 1, NULL, NULL), 0);
    assert_int_equal(
        tether_ir_add_node(g, "sig", TETHER_OP_SIGMOID, &t[3], 1, &t[4], 1, NULL, NULL), 0);
    int mu[2] = {t[4], t[3]};
    assert_int_equal(tether_ir_add_node(g, "mul", TETHER_OP_MUL, mu, 2, &t[5], 1, NULL, NULL), 0);
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    int c4[3] = {t[5], tt_add_const(g, "w4", 4, w10, &seed), tt_add_const(g, "b4", 1, b10, &seed)};
    assert_int_equal(tether_ir_add_node(g, "conv4", TETHER_OP_CONV2D, c4, 3, &t[6], 1, &a, NULL),
                     0);
    assert_int_equal(tether_ir_add_output(g, t[6]), 0);
    assert_int_equal(tether_ir_infer(g), 0);
}

/* What the compile put in textures: texture memory objects and tensors in them (metadata.json),
 * fallbacks (report.json). */
static void texture_counts(const char *dir, int *textures, int *tensors, int *fallbacks) {
    char p[200], *text;
    snprintf(p, sizeof p, "%s/metadata.json", dir);
    assert_int_equal(tether_file_read_text(p, 1 << 24, &text, NULL), 0);
    *textures = *tensors = 0;
    for (char *s = text; (s = strstr(s, "\"kind\":\t\"texture\"")); s++) {
        (*textures)++;
    }
    for (char *s = text; (s = strstr(s, "\"storage_scope\":\t\"texture\"")); s++) {
        (*tensors)++;
    }
    free(text);
    snprintf(p, sizeof p, "%s/report.json", dir);
    assert_int_equal(tether_file_read_text(p, 1 << 24, &text, NULL), 0);
    char *f = strstr(text, "\"fallbacks\":");
    assert_non_null(f);
    *fallbacks = atoi(f + strlen("\"fallbacks\":"));
    free(text);
}

/* Texture and buffer artifacts give the interpreter's outputs: the chain above with and without
 * the passes (residual fused into the pointwise conv, or add/sigmoid/mul as texture kernels), the
 * zoo, the conv net and the MobileNet-style block; with tiny image limits every texture falls
 * back to a buffer and the results stay the same. */
static void test_texture_activations(void **state) {
    (void)state;
    tether_ir_graph gs[4];
    build_tex_chain(&gs[0]);
    tt_build_zoo(&gs[1]);
    assert_int_equal(tether_ir_infer(&gs[1]), 0);
    tt_build_convnet(&gs[2], true);
    tt_build_mobile(&gs[3], false);
    g_tex_act = true;
    for (int i = 0; i < 4; i++) {
        check_graph(&gs[i], NULL, false, true);
        check_graph(&gs[i], NULL, true, true);
    }
    check_graph(&gs[0], NULL, false, false);
    /* the chain really runs on textures: 4 of its 6 intermediates with the passes on */
    char dir[128];
    int textures, tensors, fallbacks;
    compile_ocl(&gs[0], false, false, dir, sizeof dir);
    texture_counts(dir, &textures, &tensors, &fallbacks);
    assert_true(textures >= 1);
    assert_int_equal(tensors, 6); /* t0..t5: every intermediate, the output stays a buffer */
    assert_int_equal(fallbacks, 0);
    char cmd[400];
    snprintf(cmd, sizeof cmd,
             "grep -q 'write_imagef' '%s/m.cl' && grep -q '__write_only' '%s/m.cl'", dir, dir);
    assert_int_equal(system(cmd), 0);
    rm_tree(dir);
    compile_ocl(&gs[3], false, true, dir, sizeof dir);
    texture_counts(dir, &textures, &tensors, &fallbacks);
    assert_true(tensors >= 2);
    assert_true(textures >= 1 && textures <= tensors); /* images are reused */
    /* the plan's SVG timeline and JSON show the texture pool beside the workspace */
    snprintf(cmd, sizeof cmd,
             "grep -q 'texture (texture): %d image' '%s/memory_plan.svg' && "
             "grep -q '\"images\"' '%s/memory_plan.json'",
             textures, dir, dir);
    assert_int_equal(system(cmd), 0);
    rm_tree(dir);
    /* over the limits: buffers, same results */
    g_img_max[0] = 4;
    g_img_max[1] = 4;
    compile_ocl(&gs[0], false, false, dir, sizeof dir);
    texture_counts(dir, &textures, &tensors, &fallbacks);
    assert_int_equal(textures, 0);
    assert_int_equal(tensors, 0);
    assert_int_equal(fallbacks, 6);
    rm_tree(dir);
    check_graph(&gs[0], NULL, false, false);
    check_graph(&gs[3], NULL, false, true);
    g_img_max[0] = g_img_max[1] = 0;
    g_tex_act = false;
    /* the CLI: run MODEL --backend opencl --texture-activations (limits from the device's
     * HELLO) equals --reference; compile reports the texture pool and the fallbacks */
    static char o[16384];
    char p[200], q[200];
    snprintf(p, sizeof p, "%s/chain.json", g_tmp);
    snprintf(q, sizeof q, "%s/chain.bin", g_tmp);
    assert_int_equal(tether_model_save_json(&gs[0], p, q), 0);
    float xv[960];
    uint32_t seed = 9;
    tt_fill(xv, 960, false, &seed);
    int64_t xs[4] = {1, 8, 10, 12};
    snprintf(p, sizeof p, "%s/xc.npy", g_tmp);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, xs, 4, xv), 0);
    assert_int_equal(run_cli(o, sizeof o, "run chain.json --reference --in xc.npy --out cr.npy"),
                     0);
    assert_int_equal(run_cli(o, sizeof o,
                             "run chain.json --backend opencl --texture-activations --in xc.npy "
                             "--out ct.npy"),
                     0);
    expect_equal_npy("cr.npy", "ct.npy", 1e-4);
    assert_int_equal(
        run_cli(o, sizeof o, "compile chain.json -o ctx --backend opencl --texture-activations"),
        0);
    assert_non_null(strstr(o, "texture pool ("));
    /* t0, t1, pw + residual, sigmoid, mul in 3 images (reused); no workspace left */
    assert_non_null(strstr(o, "texture pool (3 images)"));
    assert_non_null(strstr(o, "(5 activations, 0 over the image limits as buffers)"));
    assert_int_equal(run_cli(o, sizeof o,
                             "compile chain.json -o ctx --backend opencl --texture-activations "
                             "--image-max 8x8"),
                     0);
    assert_non_null(strstr(o, "(0 activations, 5 over the image limits as buffers)"));
    /* tether plan shows the same texture pool (the scope pass run on the planner's problem) */
    assert_int_equal(run_cli(o, sizeof o, "plan chain.json --texture-activations --svg cp.svg"), 0);
    assert_non_null(strstr(o, "pool texture, texture,"));
    snprintf(p, sizeof p, "grep -q 'texture (texture): 3 images' '%s/cp.svg'", g_tmp);
    assert_int_equal(system(p), 0);
    /* --device without --upload: compiled for the device's image limits (PoCL: 8192 or more) */
    assert_int_equal(run_cli(o, sizeof o,
                             "compile chain.json -o ctx --backend opencl --texture-activations "
                             "--device local:"),
                     0);
    assert_non_null(strstr(o, "(5 activations, 0 over the image limits as buffers)"));
    for (int i = 0; i < 4; i++) {
        tether_ir_close(&gs[i]);
    }
}

/* metadata.json of dir, parsed. */
static cJSON *read_metadata(const char *dir) {
    char p[200], *text;
    snprintf(p, sizeof p, "%s/metadata.json", dir);
    assert_int_equal(tether_file_read_text(p, 1 << 24, &text, NULL), 0);
    cJSON *m = cJSON_Parse(text);
    free(text);
    assert_non_null(m);
    return m;
}

/* Images over a device's limits (issue 25), on a tetherd that reports 8x8 images (the test aid
 * TETHERD_TEST_IMAGE_MAX): every texture image of metadata.json is named after the activations
 * it holds (never "params"); an artifact compiled without image limits carries a buffer variant
 * and gives the interpreter's outputs there, saying why, and uses its images on the real limits;
 * compiled with --image-max larger than the device (no variant) it is refused with the image's
 * name, its node and what to recompile with; weights over --image-max stay buffers. */
static void test_image_fallback(void **state) {
    (void)state;
    tether_ir_graph g;
    build_tex_chain(&g);
    tether_session *small;
    setenv("TETHERD_TEST_IMAGE_MAX", "8x8", 1);
    int rc = open_local(&small);
    unsetenv("TETHERD_TEST_IMAGE_MAX");
    assert_int_equal(rc, 0);
    assert_int_equal(tether_session_info(small)->image_max_width, 8);
    assert_int_equal(tether_session_info(small)->image_max_height, 8);
    g_tex_act = true;
    char dir[128];
    compile_ocl(&g, true, true, dir, sizeof dir);
    cJSON *m = read_metadata(dir);
    int textures = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(m, "memory")) {
        const char *kind = cJSON_GetObjectItem(x, "kind")->valuestring;
        const char *name = cJSON_GetObjectItem(x, "name")->valuestring;
        if (strcmp(kind, "texture") == 0) {
            char want[64];
            snprintf(want, sizeof want, "texture image %d of ", textures++);
            assert_memory_equal(name, want, strlen(want));
            const cJSON *holds = cJSON_GetObjectItem(x, "holds");
            assert_true(cJSON_GetArraySize(holds) >= 1);
            /* every activation it holds is named */
            const cJSON *h;
            cJSON_ArrayForEach(h, holds) {
                assert_non_null(strstr(name + strlen(want), h->valuestring));
            }
        } else if (strcmp(kind, "weight_image") == 0) {
            assert_true(name[0] == 'w' || name[0] == 'b'); /* the weight tensor's name */
        }
        if (strcmp(kind, "params") != 0) {
            assert_string_not_equal(name, "params");
        }
    }
    assert_true(textures >= 1);
    const cJSON *bv = cJSON_GetObjectItem(m, "buffer_variant");
    assert_true(cJSON_IsObject(bv));
    assert_string_equal(cJSON_GetObjectItem(bv, "source")->valuestring, "m.buffers.cl");
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(bv, "memory")) {
        const char *kind = cJSON_GetObjectItem(x, "kind")->valuestring;
        assert_true(strcmp(kind, "texture") != 0 && strcmp(kind, "weight_image") != 0);
    }
    /* a variant that is not the same model, or not buffers only, is refused when opened */
    for (int k = 0; k < 3; k++) {
        cJSON *c = cJSON_Duplicate(m, 1);
        cJSON *cv = cJSON_GetObjectItem(c, "buffer_variant");
        const char *want = "buffer_variant has other inputs, outputs or steps than the artifact";
        if (k == 0) {
            cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItem(cv, "steps"), 1);
            cJSON_ReplaceItemInObject(st, "node", cJSON_CreateString("elsewhere"));
        } else if (k == 1) {
            cJSON_ReplaceItemInObject(cv, "memory",
                                      cJSON_Duplicate(cJSON_GetObjectItem(c, "memory"), 1));
            want = "buffer_variant: memory 0 ('texture image 0 of ";
        } else {
            cJSON_ReplaceItemInObject(cv, "source", cJSON_CreateString("missing.cl"));
            want = "buffer_variant: ";
        }
        char *text = cJSON_Print(c), p[200];
        cJSON_Delete(c);
        snprintf(p, sizeof p, "%s/metadata.json", dir);
        assert_int_equal(tether_file_write(p, text, strlen(text)), 0);
        free(text);
        tether_artifact *bad;
        assert_int_not_equal(tether_artifact_open(dir, &bad), 0);
        if (!strstr(tether_last_error(), want)) {
            fail_msg("variant edit %d: %s", k, tether_last_error());
        }
    }
    cJSON_Delete(m);
    rm_tree(dir);
    /* the small device runs the buffer variant, the real one the images: both as the reference */
    g_run = small;
    check_graph(&g, NULL, true, true);
    assert_non_null(strstr(g_fallback, "exceeds the device limit CL_DEVICE_IMAGE2D_MAX_"));
    assert_non_null(strstr(g_fallback, "= 8"));
    check_graph(&g, NULL, false, true); /* texture activations alone */
    assert_non_null(strstr(g_fallback, "texture image 0 of t0"));
    g_run = NULL;
    check_graph(&g, NULL, true, true);
    assert_string_equal(g_fallback, "");
    /* compiled for larger limits than the device's: no variant, refused naming the image */
    g_img_max[0] = g_img_max[1] = (int64_t)1 << 20;
    compile_ocl(&g, false, true, dir, sizeof dir);
    m = read_metadata(dir);
    assert_null(cJSON_GetObjectItem(m, "buffer_variant"));
    cJSON_Delete(m);
    tether_artifact *a;
    assert_int_equal(tether_artifact_open(dir, &a), 0);
    rc = tether_artifact_prepare(a, small, NULL);
    char msg[TETHER_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", tether_last_error());
    tether_artifact_free(a);
    assert_int_equal(rc, TETHER_ERR_LIMIT);
    if (!strstr(msg, "texture image 0 of t0") || !strstr(msg, "(node 'conv1'): texture image ") ||
        !strstr(msg, "exceeds the device limit CL_DEVICE_IMAGE2D_MAX_") ||
        !strstr(msg, "recompile with --device URL or --image-max WxH at the device's limits")) {
        fail_msg("%s", msg);
    }
    rm_tree(dir);
    /* weights over the compile-time limits stay packed in the params buffer: no image at all */
    g_tex_act = false;
    g_img_max[0] = g_img_max[1] = 4; /* the pointwise conv's 8 x 2 texels too */
    compile_ocl(&g, true, true, dir, sizeof dir);
    m = read_metadata(dir);
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(m, "memory")) {
        assert_string_not_equal(cJSON_GetObjectItem(x, "kind")->valuestring, "weight_image");
    }
    assert_null(cJSON_GetObjectItem(m, "buffer_variant"));
    cJSON_Delete(m);
    rm_tree(dir);
    g_run = small;
    check_graph(&g, NULL, true, true);
    assert_string_equal(g_fallback, "");
    g_run = NULL;
    g_img_max[0] = g_img_max[1] = 0;
    tether_session_close(small);
    tether_ir_close(&g);
}

/* ---- the CLI: KWS over local: and TCP, reference, bench, errors ---------------------------- */

static int run_cli(char *out, size_t cap, const char *fmt, ...) {
    char args[2048], cmd[4096], of[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(of, sizeof of, "%s/cli.txt", g_tmp);
    snprintf(cmd, sizeof cmd, "cd '%s' && TETHER_TETHERD='%s' '%s' %s > '%s' 2>&1", g_tmp,
             k_tetherd, TETHER_CLI, args, of);
    int st = system(cmd);
    FILE *f = fopen(of, "r");
    size_t n = f ? fread(out, 1, cap - 1, f) : 0;
    if (f) {
        fclose(f);
    }
    out[n] = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void load_npy(const char *name, tether_npy *n) {
    char p[200];
    snprintf(p, sizeof p, "%s/%s", g_tmp, name);
    if (tether_npy_read(p, n)) {
        fail_msg("%s", tether_last_error());
    }
}

static void expect_equal_npy(const char *a, const char *b, double tol) {
    tether_npy x, y;
    load_npy(a, &x);
    load_npy(b, &y);
    assert_int_equal(x.nbytes, y.nbytes);
    assert_int_equal(x.ndim, y.ndim);
    const float *p = x.data, *q = y.data;
    for (size_t i = 0; i < x.nbytes / 4; i++) {
        if (!(fabs((double)p[i] - q[i]) <= tol)) {
            fail_msg("%s vs %s: [%zu] %g != %g", a, b, i, (double)p[i], (double)q[i]);
        }
    }
    tether_npy_free(&x);
    tether_npy_free(&y);
}

static void test_kws_cli(void **state) {
    (void)state;
    static char o[16384];
    const char *kws = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    float x[490];
    uint32_t seed = 5;
    tt_fill(x, 490, false, &seed);
    int64_t xs[4] = {1, 1, 49, 10};
    char p[200];
    snprintf(p, sizeof p, "%s/x.npy", g_tmp);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, xs, 4, x), 0);
    assert_int_equal(run_cli(o, sizeof o, "run '%s' --reference --in x.npy --out ref.npy", kws), 0);
    /* buffer weights */
    if (run_cli(o, sizeof o, "compile '%s' -o kws_buf --backend opencl --prefix kws", kws)) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "OpenCL kernels"));
    if (run_cli(o, sizeof o, "run kws_buf --in x.npy --out buf.npy")) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "kws (OpenCL): 3 kernels in"));
    expect_equal_npy("buf.npy", "ref.npy", 1e-4);
    /* texture weights */
    if (run_cli(o, sizeof o,
                "compile '%s' -o kws_tex --backend opencl --texture-weights --prefix kws", kws)) {
        fail_msg("%s", o);
    }
    if (run_cli(o, sizeof o, "run kws_tex --in x.npy --out tex.npy")) {
        fail_msg("%s", o);
    }
    expect_equal_npy("tex.npy", "ref.npy", 1e-4);
    snprintf(p, sizeof p, "%s/kws_tex/metadata.json", g_tmp);
    char *meta = NULL;
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    meta = calloc(1, 65536);
    assert_true(fread(meta, 1, 65535, f) > 0);
    fclose(f);
    assert_non_null(strstr(meta, "\"texture:weight\""));
    assert_non_null(strstr(meta, "\"OIHW4o\""));
    free(meta);
    /* bench: the sum of the kernels' times and one line per kernel */
    if (run_cli(o, sizeof o, "bench kws_tex --in x.npy --number 3 --repeat 2")) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "kws (OpenCL, 3 kernels): 2 repeats x"));
    assert_non_null(strstr(o, "kernel kws_conv1"));
    assert_non_null(strstr(o, "kernel kws_softmax"));
    /* a model file compiled for OpenCL on the fly */
    if (run_cli(o, sizeof o, "run '%s' --backend opencl --texture-weights --in x.npy --out m.npy",
                kws)) {
        fail_msg("%s", o);
    }
    expect_equal_npy("m.npy", "ref.npy", 1e-4);
    /* ab with the OpenCL backend beside both ABIs */
    if (run_cli(o, sizeof o, "ab '%s' --opencl --in x.npy --number 2 --repeat 1 --json ab.json",
                kws)) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "OpenCL backend on the same device"));
    snprintf(p, sizeof p, "%s/ab.json", g_tmp);
    f = fopen(p, "r");
    assert_non_null(f);
    meta = calloc(1, 65536);
    assert_true(fread(meta, 1, 65535, f) > 0);
    fclose(f);
    assert_non_null(strstr(meta, "\"weights\":\t\"texture\""));
    assert_null(strstr(meta, "\"outputs_equal\":\tfalse"));
    free(meta);
    /* over TCP to a tetherd on 127.0.0.1 */
    test_daemon d;
    assert_int_equal(daemon_start(&d, NULL), 0);
    int rc1 = run_cli(o, sizeof o, "run --device %s kws_buf --in x.npy --out tcp_buf.npy", d.url);
    char o1[2048];
    snprintf(o1, sizeof o1, "%.2000s", o);
    int rc2 = run_cli(o, sizeof o, "run --device %s kws_tex --in x.npy --out tcp_tex.npy", d.url);
    daemon_stop(&d);
    if (rc1 || rc2) {
        fail_msg("tcp: %s / %s", o1, o);
    }
    expect_equal_npy("tcp_buf.npy", "ref.npy", 1e-4);
    expect_equal_npy("tcp_tex.npy", "ref.npy", 1e-4);
    /* a device without OpenCL refuses the artifact with the reason */
    static const char *const noocl[] = {"--no-opencl", NULL};
    assert_int_equal(daemon_start(&d, noocl), 0);
    int rc3 = run_cli(o, sizeof o, "run --device %s kws_buf --in x.npy --out no.npy", d.url);
    daemon_stop(&d);
    assert_int_equal(rc3, 1);
    assert_non_null(strstr(o, "has no OpenCL layer"));
    snprintf(p, sizeof p, "%s/no.npy", g_tmp);
    assert_int_equal(access(p, F_OK), -1);
    /* a wrong input shape is named before the device is contacted */
    int64_t bad[2] = {49, 10};
    snprintf(p, sizeof p, "%s/bad.npy", g_tmp);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, bad, 2, x), 0);
    assert_int_equal(run_cli(o, sizeof o, "run kws_buf --in bad.npy --out b.npy"), 1);
    assert_non_null(strstr(o, "bad.npy: shape [49,10], but model input 'mfcc' is [1,1,49,10]"));
    assert_int_equal(run_cli(o, sizeof o, "run kws_buf"), 2);
}

/* tether tune --backend opencl: KWS's three kernels (conv, dense, softmax), work-group sizes
 * measured on PoCL through the artifact runner, records for target "opencl"; run with the log
 * uses them for every launch and still equals --reference. */
static void test_tune_opencl(void **state) {
    (void)state;
    static char o[16384];
    const char *kws = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    assert_int_equal(run_cli(o, sizeof o,
                             "tune '%s' --backend opencl --trials 3 --number 3 --repeat 3 --log "
                             "tk.json",
                             kws),
                     0);
    assert_non_null(strstr(o, "(opencl, cpu baseline): 3 workloads"));
    assert_non_null(strstr(o, "tuned 9 candidates"));
    assert_int_equal(run_cli(o, sizeof o, "run '%s' --reference --in x.npy --out tref.npy", kws),
                     0);
    assert_int_equal(run_cli(o, sizeof o,
                             "run '%s' --backend opencl --tuning-log tk.json --in x.npy --out "
                             "ttuned.npy",
                             kws),
                     0);
    assert_non_null(strstr(o, "3 of 3 kernels with knobs use a tuned schedule (opencl"));
    expect_equal_npy("tref.npy", "ttuned.npy", 1e-4);
    char p[200], *text;
    snprintf(p, sizeof p, "%s/tk.json", g_tmp);
    assert_int_equal(tether_file_read_text(p, 1 << 20, &text, NULL), 0);
    assert_non_null(strstr(text, "\"target\":\"opencl\""));
    assert_null(strstr(text, "\"us\":-1"));
    free(text);
}

static void test_cli_errors(void **state) {
    (void)state;
    static char o[16384];
    const char *kws = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    assert_int_equal(run_cli(o, sizeof o, "compile '%s' -o e1 --backend cuda", kws), 2);
    assert_non_null(strstr(o, "unknown backend 'cuda'"));
    assert_int_equal(run_cli(o, sizeof o, "compile '%s' -o e1 --texture-weights", kws), 2);
    assert_non_null(strstr(o, "--texture-weights needs --backend opencl"));
    assert_int_equal(run_cli(o, sizeof o, "compile '%s' -o e1 --backend opencl --abi packed", kws),
                     2);
    assert_non_null(strstr(o, "--abi applies to the C backend"));
    assert_int_equal(
        run_cli(o, sizeof o, "compile '%s' -o e1 --backend opencl --local-size 0", kws), 2);
    assert_int_equal(run_cli(o, sizeof o, "compile '%s' -o e1 --texture-activations", kws), 2);
    assert_non_null(strstr(o, "--texture-activations needs --backend opencl"));
    assert_int_equal(
        run_cli(o, sizeof o, "compile '%s' -o e1 --backend opencl --image-max 4096", kws), 2);
    assert_non_null(strstr(o, "--image-max '4096' is not WIDTHxHEIGHT"));
    assert_int_equal(run_cli(o, sizeof o, "run '%s' --texture-activations --in x.npy", kws), 2);
    assert_non_null(strstr(o, "--texture-activations needs --backend opencl"));
    char p[200];
    snprintf(p, sizeof p, "%s/e1", g_tmp);
    assert_int_equal(access(p, F_OK), -1);
    /* a damaged artifact is refused with the reason before the device is contacted */
    assert_int_equal(run_cli(o, sizeof o, "compile '%s' -o dmg --backend opencl --quiet", kws), 0);
    float x0[490] = {0};
    int64_t xs[4] = {1, 1, 49, 10};
    snprintf(p, sizeof p, "%s/x0.npy", g_tmp);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, xs, 4, x0), 0);
    snprintf(p, sizeof p, "cd '%s/dmg' && sed -i 's/\"memory\":\t3/\"memory\":\t99/' metadata.json",
             g_tmp);
    assert_int_equal(system(p), 0);
    assert_int_equal(run_cli(o, sizeof o, "run dmg --in x0.npy --out d.npy"), 1);
    assert_non_null(strstr(o, "names no memory object"));
    assert_int_equal(run_cli(o, sizeof o, "compile '%s' -o dmg --backend opencl --quiet", kws), 0);
    snprintf(p, sizeof p, "%s/dmg/params.bin", g_tmp);
    assert_int_equal(truncate(p, 1000), 0);
    assert_int_equal(run_cli(o, sizeof o, "run dmg --in x0.npy --out d.npy"), 1);
    assert_non_null(strstr(o, "params_bytes differs from the size of params.bin"));
    /* work sizes the arrays cannot hold, a local size that does not divide, steps missing */
    const char *edits[3][2] = {
        {"s/\"global\":\t\\[256\\]/\"global\":\t[1048576]/; s/\"int\":\t250/\"int\":\t1048576/",
         "exceeds its work size"},
        {"s/\"local\":\t\\[64\\]/\"local\":\t[7]/", "is not a multiple of local"},
        {"s/\"kernels\":\t3/\"kernels\":\t1000/", "differs from the 3 steps"},
    };
    for (int k = 0; k < 3; k++) {
        assert_int_equal(run_cli(o, sizeof o, "compile '%s' -o dmg --backend opencl --quiet", kws),
                         0);
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "cd '%s/dmg' && sed -i '%s' metadata.json", g_tmp, edits[k][0]);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(run_cli(o, sizeof o, "run dmg --in x0.npy --out d.npy"), 1);
        if (!strstr(o, edits[k][1])) {
            fail_msg("edit %d: %s", k, o);
        }
    }
    snprintf(p, sizeof p, "%s/d.npy", g_tmp);
    assert_int_equal(access(p, F_OK), -1);
    /* an OpenCL artifact with a texture image over the limit, through the CLI (compiled for
     * larger image limits than the device's, so it has no buffer variant to fall back to) */
    const tether_device_info *d = tether_session_info(g_s);
    int64_t C = d->image_max_width / 9 + 1;
    conv_case c = {"wide", {1, C, 3, 3}, {4, C, 3, 3}, 1, 1, 1, 1, 1, TETHER_ACT_NONE, 0};
    tether_ir_graph g;
    build_conv(&g, &c);
    char dir[128];
    g_img_max[0] = g_img_max[1] = (int64_t)1 << 20;
    compile_ocl(&g, true, true, dir, sizeof dir);
    g_img_max[0] = g_img_max[1] = 0;
    float *x = calloc((size_t)(C * 9), sizeof(float));
    snprintf(p, sizeof p, "%s/wide.npy", g_tmp);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, c.x, 4, x), 0);
    free(x);
    assert_int_equal(run_cli(o, sizeof o, "run '%s' --in wide.npy --out wide_y.npy", dir), 1);
    assert_non_null(strstr(o, "tether run: w (node 'conv'): texture:weight image width"));
    assert_non_null(strstr(o, "CL_DEVICE_IMAGE2D_MAX_WIDTH"));
    assert_non_null(strstr(o, "recompile with --device URL or --image-max WxH at the device's "
                              "limits, or without --texture-weights"));
    snprintf(p, sizeof p, "%s/wide_y.npy", g_tmp);
    assert_int_equal(access(p, F_OK), -1);
    rm_tree(dir);
    tether_ir_close(&g);
}

int main(void) {
    snprintf(g_tmp, sizeof g_tmp, "/tmp/toclcgXXXXXX");
    if (!mkdtemp(g_tmp)) {
        return 1;
    }
    if (open_local(&g_s)) {
        fprintf(stderr, "cannot start tetherd: %s\n", tether_last_error());
        rm_tree(g_tmp);
        return 1;
    }
    if (!tether_session_info(g_s)->opencl) {
        printf("skipped: tetherd reports no OpenCL device (no OpenCL platform with image support "
               "on this machine)\n");
        tether_session_close(g_s);
        rm_tree(g_tmp);
        return 77;
    }
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
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tether_session_close(g_s);
    rm_tree(g_tmp);
    return rc;
}
