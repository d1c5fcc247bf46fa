/*
 * OpenCL backend benchmark (built, never run by ctest): per model, in one run against one local:
 * tetherd,
 *   - the reference interpreter in this process (time per inference),
 *   - the C backend's library on tetherd (TIME of the entry: the device's clock),
 *   - the OpenCL backend on tetherd's OpenCL device (PoCL here), buffer weights and texture
 *     weights: the sum of the kernels' profiled times (TIME_SEQ of the whole sequence), and the
 *     host-observed wall time of one whole inference through RPC (copy in, the kernels, copy
 *     out) two ways in the same run: one LAUNCH_SEQ request for all kernels (what `tether run`
 *     does) against the earlier path of one CALL per kernel (the baseline of that ratio),
 * with ratios against the C backend measured in the same run, the kernel count and the largest
 * output difference from the interpreter. Models: the KWS example and a small MobileNet-style
 * conv net. Exits 77 without an OpenCL device.
 * usage: bench_opencl [number [repeat]]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../tests/compiler/ops_common.h"
#include "tether/artifact.h"
#include "tether/compiler.h"
#include "tether/crt.h"
#include "tether/host.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what) {
    fprintf(stderr, "bench_opencl: %s: %s\n", what, tether_last_error());
    exit(1);
}

static void compile_to(const tether_ir_graph *g, const char *dir, tether_backend be, bool tex) {
    tether_ir_graph c;
    if (tt_graph_copy(g, &c)) {
        die("copy");
    }
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.backend = be;
    o.opencl.texture_weights = tex;
    o.codegen.prefix = "bench";
    if (tether_compile_graph(&c, dir, &o, NULL)) {
        die(dir);
    }
    tether_ir_close(&c);
}

/* The C artifact on tetherd: median seconds per call of the entry (TIME). */
static double time_c(tether_session *s, const char *dir, const float *x, size_t xn,
                     const tether_ir_graph *g, uint32_t number, uint32_t repeat) {
    char lib[1300];
    snprintf(lib, sizeof lib, "%s/libbench.so", dir);
    uint64_t mod = 0, hx = 0, hy = 0;
    tether_remote_func f;
    const tether_ir_tensor *it = &g->tensors[g->inputs[0]], *ot = &g->tensors[g->outputs[0]];
    if (tether_session_upload_file(s, TETHER_MODULE_SHARED_OBJECT, "libbench.so", lib) ||
        tether_session_load_module(s, "libbench.so", &mod, NULL) ||
        tether_session_get_function(s, mod, "bench_main", &f) ||
        tether_session_alloc(s, it->shape, it->ndim, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", &hx,
                             NULL) ||
        tether_session_alloc(s, ot->shape, ot->ndim, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", &hy,
                             NULL) ||
        tether_session_copy_to(s, hx, 0, x, xn * sizeof(float))) {
        die("C artifact");
    }
    int32_t code = f.abi == TETHER_ABI_PACKED ? TETHER_TYPE_DLTENSOR : TETHER_TYPE_HANDLE;
    tether_remote_arg args[2] = {{code, {.array = hx}}, {code, {.array = hy}}};
    tether_time_stats ts;
    if (tether_session_time(s, &f, args, 2, number, repeat, 0, 0, &ts)) {
        die("TIME");
    }
    tether_session_free(s, hx);
    tether_session_free(s, hy);
    return ts.median;
}

typedef struct ocl_result {
    double kernels;      /* median seconds per inference, sum of kernel times (TIME_SEQ) */
    double kernels_each; /* the same from TIME per kernel (the earlier path) */
    double wall;         /* median host wall seconds of one whole run through RPC (LAUNCH_SEQ) */
    double wall_each;    /* the same with one CALL per kernel */
    int nkernels;
    double max_diff; /* vs the interpreter */
} ocl_result;

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static ocl_result time_ocl(tether_session *s, const char *dir, const float *x, const float *ref,
                           size_t yn, uint32_t number, uint32_t repeat) {
    ocl_result r = {0};
    tether_artifact *a;
    float *y = calloc(yn, sizeof(float));
    if (tether_artifact_open(dir, &a) || tether_artifact_prepare(a, s, NULL)) {
        die(dir);
    }
    const void *ins[1] = {x};
    void *outs[1] = {y};
    if (tether_artifact_run(a, ins, outs, NULL, NULL)) {
        die("run");
    }
    for (size_t i = 0; i < yn; i++) {
        double d = fabs((double)y[i] - ref[i]);
        r.max_diff = d > r.max_diff ? d : r.max_diff;
    }
    tether_time_stats ts;
    if (tether_artifact_time(a, number, repeat, 0, 0, &ts, NULL)) {
        die("TIME");
    }
    r.kernels = ts.median;
    tether_artifact_set_per_kernel(a, 1);
    if (tether_artifact_time(a, number, repeat, 0, 0, &ts, NULL)) {
        die("TIME per kernel");
    }
    r.kernels_each = ts.median;
    /* wall time of whole runs, the two paths interleaved so that drift hits both alike */
    double w[32], we[32];
    for (uint32_t k = 0; k < repeat; k++) {
        for (int each = 0; each < 2; each++) {
            tether_artifact_set_per_kernel(a, each);
            double t0 = now();
            if (tether_artifact_run(a, ins, outs, NULL, NULL)) {
                die("run");
            }
            (each ? we : w)[k] = now() - t0;
        }
    }
    qsort(w, repeat, sizeof(double), cmp);
    qsort(we, repeat, sizeof(double), cmp);
    r.wall = w[repeat / 2];
    r.wall_each = we[repeat / 2];
    r.nkernels = tether_artifact_num_kernels(a);
    tether_artifact_free(a);
    free(y);
    if (tether_session_reset(s)) {
        die("RESET");
    }
    return r;
}

/* conv3x3 s2 (3->16) + relu6 -> depthwise 3x3 + relu6 -> conv1x1 (16->32) + relu -> global avg
 * pool -> flatten -> dense 10 -> softmax, on a 64x64 image */
static void build_mobile(tether_ir_graph *g) {
    uint32_t seed = 21;
    tether_ir_init(g, "mobile");
    int64_t sx[] = {1, 3, 64, 64}, sw1[] = {16, 3, 3, 3}, sdw[] = {16, 1, 3, 3},
            spw[] = {32, 16, 1, 1}, s16[] = {16}, s32[] = {32}, sd[] = {10, 32}, s10[] = {10};
    float w[4096], b[64];
    int x, c[10], t[12];
    tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, sx, &x);
    tether_ir_add_input(g, x);
    const int64_t *shapes[] = {sw1, s16, sdw, s16, spw, s32, sd, s10};
    const int nd[] = {4, 1, 4, 1, 4, 1, 2, 1};
    for (int i = 0; i < 8; i++) {
        size_t n = 1;
        for (int k = 0; k < nd[i]; k++) {
            n *= (size_t)shapes[i][k];
        }
        tt_fill(nd[i] == 1 ? b : w, n, false, &seed);
        char nm[8];
        snprintf(nm, sizeof nm, "c%d", i);
        tether_ir_add_constant(g, nm, TETHER_FLOAT32, nd[i], shapes[i], nd[i] == 1 ? b : w, n * 4,
                               &c[i]);
    }
    for (int i = 0; i < 10; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "t%d", i);
        tether_ir_add_tensor(g, nm, TETHER_FLOAT32, -1, NULL, &t[i]);
    }
    tether_ir_attrs a, r6;
    tether_ir_attrs_init(TETHER_OP_CLIP, &r6);
    r6.min = 0.0f;
    r6.max = 6.0f;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    a.strides[0] = a.strides[1] = 2;
    int i1[] = {x, c[0], c[1]}, i2[] = {t[1], c[2], c[3]}, i3[] = {t[3], c[4], c[5]},
        i4[] = {t[7], c[6], c[7]};
    tether_ir_add_node(g, "conv1", TETHER_OP_CONV2D, i1, 3, &t[0], 1, &a, NULL);
    tether_ir_add_node(g, "relu6_1", TETHER_OP_CLIP, &t[0], 1, &t[1], 1, &r6, NULL);
    a.strides[0] = a.strides[1] = 1;
    a.groups = 16;
    tether_ir_add_node(g, "dw", TETHER_OP_CONV2D, i2, 3, &t[2], 1, &a, NULL);
    tether_ir_add_node(g, "relu6_2", TETHER_OP_CLIP, &t[2], 1, &t[3], 1, &r6, NULL);
    tether_ir_add_node(g, "pw", TETHER_OP_CONV2D, i3, 3, &t[4], 1, NULL, NULL);
    tether_ir_add_node(g, "relu", TETHER_OP_RELU, &t[4], 1, &t[5], 1, NULL, NULL);
    tether_ir_add_node(g, "gap", TETHER_OP_GLOBAL_AVG_POOL, &t[5], 1, &t[6], 1, NULL, NULL);
    tether_ir_add_node(g, "flat", TETHER_OP_FLATTEN, &t[6], 1, &t[7], 1, NULL, NULL);
    tether_ir_attrs_init(TETHER_OP_DENSE, &a);
    a.trans_b = true;
    tether_ir_add_node(g, "fc", TETHER_OP_DENSE, i4, 3, &t[8], 1, &a, NULL);
    tether_ir_add_node(g, "softmax", TETHER_OP_SOFTMAX, &t[8], 1, &t[9], 1, NULL, NULL);
    tether_ir_add_output(g, t[9]);
    if (tether_ir_infer(g)) {
        die("mobile");
    }
}

static void bench_model(tether_session *s, const char *tag, tether_ir_graph *g, uint32_t number,
                        uint32_t repeat) {
    size_t xn = tether_ir_tensor_elements(&g->tensors[g->inputs[0]]);
    size_t yn = tether_ir_tensor_elements(&g->tensors[g->outputs[0]]);
    float *x = malloc(xn * sizeof(float)), *ref = malloc(yn * sizeof(float));
    uint32_t seed = 9;
    tt_fill(x, xn, false, &seed);
    const float *in[1] = {x};
    float *out[1] = {ref};
    tether_interp_run(g, in, out);
    double t0 = now();
    int reps = 0;
    do {
        tether_interp_run(g, in, out);
        reps++;
    } while (now() - t0 < 0.2);
    double t_interp = (now() - t0) / reps;
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/bench/opencl/%s-c", TETHER_BINARY_DIR, tag);
    compile_to(g, dir, TETHER_BACKEND_C, false);
    double t_c = time_c(s, dir, x, xn, g, number * 10, repeat);
    if (tether_session_reset(s)) {
        die("RESET");
    }
    snprintf(dir, sizeof dir, "%s/bench/opencl/%s-ocl", TETHER_BINARY_DIR, tag);
    compile_to(g, dir, TETHER_BACKEND_OPENCL, false);
    ocl_result buf = time_ocl(s, dir, x, ref, yn, number, repeat);
    snprintf(dir, sizeof dir, "%s/bench/opencl/%s-ocl-tex", TETHER_BINARY_DIR, tag);
    compile_to(g, dir, TETHER_BACKEND_OPENCL, true);
    ocl_result tex = time_ocl(s, dir, x, ref, yn, number, repeat);
    printf("%s (%d nodes)\n", tag, g->nnodes);
    printf("  %-34s %12.1f us  (x%.2f of C)\n", "interpreter (host, in process)", t_interp * 1e6,
           t_interp / t_c);
    printf("  %-34s %12.1f us  (baseline)\n", "C backend on tetherd (TIME)", t_c * 1e6);
    const ocl_result *r[2] = {&buf, &tex};
    const char *names[2] = {"OpenCL buffers, kernels", "OpenCL texture weights, kernels"};
    for (int i = 0; i < 2; i++) {
        printf("  %-34s %12.1f us  (x%.2f of C)  %d kernels, max |diff| %.2g\n", names[i],
               r[i]->kernels * 1e6, r[i]->kernels / t_c, r[i]->nkernels, r[i]->max_diff);
        printf("  %-34s %12.1f us  (x%.2f of C)\n", "  kernels, TIME per kernel",
               r[i]->kernels_each * 1e6, r[i]->kernels_each / t_c);
        printf("  %-34s %12.1f us  (x%.2f of C, x%.2f of one CALL per kernel)\n",
               "  whole run, LAUNCH_SEQ (wall)", r[i]->wall * 1e6, r[i]->wall / t_c,
               r[i]->wall / r[i]->wall_each);
        printf("  %-34s %12.1f us  (x%.2f of C)\n", "  whole run, one CALL per kernel",
               r[i]->wall_each * 1e6, r[i]->wall_each / t_c);
    }
    free(x);
    free(ref);
}

int main(int argc, char **argv) {
    uint32_t number = argc > 1 ? (uint32_t)atoi(argv[1]) : 20;
    uint32_t repeat = argc > 2 ? (uint32_t)atoi(argv[2]) : 7;
    if (number < 1 || repeat < 1 || repeat > 32) {
        fprintf(stderr, "usage: bench_opencl [number [repeat (1..32)]]\n");
        return 2;
    }
    static const char *const quiet[] = {"--quiet", NULL};
    tether_session_options so = {0};
    so.tetherd = TETHERD_PATH;
    so.tetherd_args = quiet;
    tether_session *s;
    if (tether_session_open(&s, "local:", &so)) {
        die("local:");
    }
    if (!tether_session_info(s)->opencl) {
        printf("skipped: tetherd reports no OpenCL device\n");
        tether_session_close(s);
        return 77;
    }
    printf("OpenCL backend vs C backend vs interpreter, TIME number %u, %u repeats, medians\n",
           number, repeat);
    tether_ir_graph g;
    if (tether_model_load(TETHER_SOURCE_DIR "/examples/kws/kws.json", &g)) {
        die("kws.json");
    }
    bench_model(s, "kws", &g, number, repeat);
    tether_ir_close(&g);
    build_mobile(&g);
    bench_model(s, "mobile", &g, number, repeat);
    tether_ir_close(&g);
    tether_session_close(s);
    return 0;
}
