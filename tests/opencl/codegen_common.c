/*
 * The helpers the files of test_opencl_codegen share (codegen_common.h): the session on a local
 * tetherd, compiling a graph with the OpenCL backend, running the artifact through the host
 * library's runner, checking it against the interpreter, the conv builder, and the CLI.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen_common.h"
#include "daemon.h"
#include "ops_common.h"
#include "tether/artifact.h"
#include "tether/npy.h"

tether_session *g_s;
tether_session *g_run;
char g_fallback[TETHER_ERROR_MSG_MAX];
char g_tmp[64];
static int g_seq;
bool g_tex_act;
int64_t g_img_max[2];
bool g_legacy;
bool g_conv_gemm;
const tether_node_schedule *g_sched;
int g_nsched;
bool g_fp16;

int open_local(tether_session **s) {
    static const char *const quiet[] = {"--quiet", NULL};
    tether_session_options o = {0};
    o.tetherd = k_tetherd;
    o.tetherd_args = quiet;
    return tether_session_open(s, "local:", &o);
}

void rm_tree(const char *dir) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
    }
}

int ocl_test_main(const char *tmpl, const struct CMUnitTest *tests, size_t n) {
    snprintf(g_tmp, sizeof g_tmp, "%s", tmpl);
    if (!mkdtemp(g_tmp)) {
        return 1;
    }
    if (open_local(&g_s)) {
        fprintf(stderr, "cannot start tetherd: %s\n", tether_last_error());
        rm_tree(g_tmp);
        return 1;
    }
    int rc = 77;
    if (!tether_session_info(g_s)->opencl) {
        printf("skipped: tetherd reports no OpenCL device (no OpenCL platform with image support "
               "on this machine)\n");
    } else {
        if (getenv("TT_OCL_FILTER")) {
            cmocka_set_test_filter(getenv("TT_OCL_FILTER")); /* one test by name while debugging */
        }
        rc = _cmocka_run_group_tests("tests", tests, n, NULL, NULL);
    }
    tether_session_close(g_s);
    rm_tree(g_tmp);
    return rc;
}

/* Compiles g (a copy; g stays as it is) with the OpenCL backend into a fresh directory. */
void compile_ocl(const tether_ir_graph *g, bool texture, bool passes, char *dir, size_t n) {
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
    o.opencl.legacy_kernels = g_legacy;
    o.opencl.conv_gemm = g_conv_gemm;
    o.opencl.node_schedules = g_sched;
    o.opencl.nnode_schedules = g_nsched;
    o.opencl.fp16 = g_fp16;
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
void run_ocl(const char *dir, const float *const *ins, float **outs, int nout) {
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
void check_graph(const tether_ir_graph *g, const unsigned char *positive, bool texture,
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
        /* fp16: every intermediate and weight rounded to half (2^-11 relative) on the way */
        double c = g_fp16 ? tt_close(got[i], ref[i], n, 2e-2, 2e-2)
                          : tt_close(got[i], ref[i], n, 1e-5, 1e-4);
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

/* x -> conv(w const, b const) [-> + residual input] [-> act]: the passes fuse bias, residual and
 * activation into the conv. */
void build_conv(tether_ir_graph *g, const conv_case *c) {
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

int run_cli(char *out, size_t cap, const char *fmt, ...) {
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

void expect_equal_npy(const char *a, const char *b, double tol) {
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
