/*
 * Compiler benchmarks (built, never run by ctest):
 *  1. speed of generated code vs the reference interpreter on the same inputs, for the model
 *     set (the example KWS model, the operator zoo, a small conv net, a MobileNet-style block),
 *     both ABIs timed in the same run, interleaved round by round; prints time per run, the
 *     ratio interpreter/generated (higher = generated code faster) and packed/unpacked;
 *  2. compile time, model file -> C (load, passes, planning, emission), for a generated model of
 *     100+ nodes, and the same including the x86-64 build.
 * usage: bench_compiler [repeats]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../../tests/compiler/ops_common.h"
#include "../host_cpu.h"
#include "tether/compiler.h"
#include "tether/crt.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef int32_t (*run2)(const float *, float *);

/* Compiles g for x86-64 with `abi` (and options o, NULL = the defaults) and returns the
 * dlopen'ed entry (one input, one output). */
static void *compile_entry_with(tether_ir_graph *g, const char *tag, tether_abi abi,
                                const tether_compile_options *opts, void **handle) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/bench/compiler/%s-%s", TETHER_BINARY_DIR, tag,
             tether_abi_name(abi));
    tether_compile_options o;
    if (opts) {
        o = *opts;
    } else {
        tether_compile_options_init(&o);
    }
    o.codegen.abi = abi;
    o.codegen.prefix = "bench";
    if (tether_compile_graph(g, dir, &o, NULL) != 0) {
        fprintf(stderr, "compile %s: %s\n", tag, tether_last_error());
        exit(1);
    }
    char lib[1200];
    snprintf(lib, sizeof lib, "%s/libbench.so", dir);
    *handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!*handle) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        exit(1);
    }
    return dlsym(*handle, "bench_main");
}

static void *compile_entry(tether_ir_graph *g, const char *tag, tether_abi abi, void **handle) {
    return compile_entry_with(g, tag, abi, NULL, handle);
}

typedef struct side {
    void *fn;
    tether_abi abi;
    DLTensor t[2];
    tether_value v[2];
    int32_t codes[2];
} side;

static void call_side(side *s, const float *x, float *y) {
    if (s->abi == TETHER_ABI_UNPACKED) {
        ((run2)s->fn)(x, y);
    } else {
        tether_value r;
        int32_t rc;
        if (((tether_packed_func)s->fn)(s->v, s->codes, 2, &r, &rc, NULL) != 0) {
            fprintf(stderr, "packed entry failed\n");
            exit(1);
        }
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define ROUNDS 15

/* Interpreter time, then both ABIs of the generated code in the same run: ROUNDS rounds, each
 * timing `calls` calls of one ABI then of the other (the order alternates every round), so
 * both see the same machine state; medians over the rounds and their ratio. */
static void bench_model(const char *tag, tether_ir_graph *g, int repeats) {
    size_t nin = tether_ir_tensor_elements(&g->tensors[g->inputs[0]]);
    size_t nout = tether_ir_tensor_elements(&g->tensors[g->outputs[0]]);
    float *x = malloc(nin * sizeof(float)), *y = malloc(nout * sizeof(float));
    uint32_t seed = 9;
    tt_fill(x, nin, false, &seed);
    const float *in[1] = {x};
    float *out[1] = {y};
    double t0 = now();
    for (int i = 0; i < repeats; i++) {
        tether_interp_run(g, in, out);
    }
    double t_ref = (now() - t0) / repeats;
    side s[2];
    void *h[2];
    memset(s, 0, sizeof s);
    for (int k = 0; k < 2; k++) {
        s[k].abi = k == 0 ? TETHER_ABI_UNPACKED : TETHER_ABI_PACKED;
        tether_ir_graph c;
        tt_graph_copy(g, &c);
        s[k].fn = compile_entry(&c, tag, s[k].abi, &h[k]);
        tether_ir_close(&c);
        s[k].t[0].data = x;
        s[k].t[0].ndim = g->tensors[g->inputs[0]].ndim;
        s[k].t[0].shape = g->tensors[g->inputs[0]].shape;
        s[k].t[1].data = y;
        s[k].t[1].ndim = g->tensors[g->outputs[0]].ndim;
        s[k].t[1].shape = g->tensors[g->outputs[0]].shape;
        s[k].t[0].dtype = s[k].t[1].dtype = TETHER_FLOAT32;
        s[k].t[0].device.device_type = s[k].t[1].device.device_type = kDLCPU;
        for (int i = 0; i < 2; i++) {
            s[k].v[i].v_handle = &s[k].t[i];
            s[k].codes[i] = TETHER_TYPE_DLTENSOR;
        }
    }
    /* calls per round: about 20 ms of the unpacked entry */
    call_side(&s[0], x, y);
    call_side(&s[1], x, y);
    t0 = now();
    int calls = 0;
    do {
        call_side(&s[0], x, y);
        calls++;
    } while (now() - t0 < 0.02);
    double times[2][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        for (int j = 0; j < 2; j++) {
            int k = (r + j) % 2;
            t0 = now();
            for (int i = 0; i < calls; i++) {
                call_side(&s[k], x, y);
            }
            times[k][r] = (now() - t0) / calls;
        }
    }
    double med[2];
    for (int k = 0; k < 2; k++) {
        qsort(times[k], ROUNDS, sizeof(double), cmp_double);
        med[k] = times[k][ROUNDS / 2];
    }
    printf("%-9s %4d nodes  interpreter %10.1f us  unpacked %9.2f us (x%.1f)  packed %9.2f us "
           "(x%.1f)  packed/unpacked %.3f\n",
           tag, g->nnodes, t_ref * 1e6, med[0] * 1e6, t_ref / med[0], med[1] * 1e6, t_ref / med[1],
           med[1] / med[0]);
    for (int k = 0; k < 2; k++) {
        dlclose(h[k]);
    }
    free(x);
    free(y);
}

/* The unpacked entry built the way tether built it before schedules (scalar kernels, -O2, the
 * x86-64 baseline) against the defaults for this CPU (-O3, --mcpu of the host, blocked kernels
 * of its vector width), interleaved rounds, medians; "speed-up" = old / new. */
static void bench_schedule(const char *tag, tether_ir_graph *g) {
    size_t nin = tether_ir_tensor_elements(&g->tensors[g->inputs[0]]);
    size_t nout = tether_ir_tensor_elements(&g->tensors[g->outputs[0]]);
    float *x = malloc(nin * sizeof(float)), *y = malloc(nout * sizeof(float));
    uint32_t seed = 9;
    tt_fill(x, nin, false, &seed);
    run2 fn[2];
    void *h[2];
    for (int k = 0; k < 2; k++) {
        tether_compile_options o;
        tether_compile_options_init(&o);
        if (k == 0) {
            o.build.opt_level = 2;
            o.codegen.schedule.vector_width = 0;
        } else {
            o.build.cpu = bench_host_cpu();
        }
        char t[96];
        snprintf(t, sizeof t, "%s-%s", tag, k ? "sched" : "scalar");
        tether_ir_graph c;
        tt_graph_copy(g, &c);
        fn[k] = (run2)compile_entry_with(&c, t, TETHER_ABI_UNPACKED, &o, &h[k]);
        tether_ir_close(&c);
        fn[k](x, y);
    }
    double t0 = now();
    int calls = 0;
    do {
        fn[0](x, y);
        calls++;
    } while (now() - t0 < 0.02);
    double times[2][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        for (int j = 0; j < 2; j++) {
            int k = (r + j) % 2;
            t0 = now();
            for (int i = 0; i < calls; i++) {
                fn[k](x, y);
            }
            times[k][r] = (now() - t0) / calls;
        }
    }
    double med[2];
    for (int k = 0; k < 2; k++) {
        qsort(times[k], ROUNDS, sizeof(double), cmp_double);
        med[k] = times[k][ROUNDS / 2];
    }
    double gflop = (double)tether_ir_graph_flops(g) * 1e-9;
    printf("%-9s %8.2f MFLOP  scalar -O2 %9.2f us (%5.2f GFLOP/s)  scheduled %9.2f us (%5.2f "
           "GFLOP/s)  speed-up x%.2f\n",
           tag, gflop * 1e3, med[0] * 1e6, gflop / med[0], med[1] * 1e6, gflop / med[1],
           med[0] / med[1]);
    for (int k = 0; k < 2; k++) {
        dlclose(h[k]);
    }
    free(x);
    free(y);
}

/* `blocks` residual blocks of conv3x3 -> batch_norm -> relu -> conv1x1 -> add(skip). */
static void build_deep(tether_ir_graph *g, int blocks) {
    uint32_t seed = 8;
    tether_ir_init(g, "deep");
    int64_t sx[] = {1, 8, 16, 16}, sw[] = {8, 8, 3, 3}, sp[] = {8, 8, 1, 1}, s8[] = {8};
    int x;
    tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, sx, &x);
    tether_ir_add_input(g, x);
    int cur = x, k = 0;
    float w[576], p[64], v[8];
    for (int b = 0; b < blocks; b++) {
        char nm[64];
        int cw, pw, bn[4], t[5];
        tt_fill(w, 576, false, &seed);
        tt_fill(p, 64, false, &seed);
        snprintf(nm, sizeof nm, "b%d.w", b);
        tether_ir_add_constant(g, nm, TETHER_FLOAT32, 4, sw, w, sizeof w, &cw);
        snprintf(nm, sizeof nm, "b%d.p", b);
        tether_ir_add_constant(g, nm, TETHER_FLOAT32, 4, sp, p, sizeof p, &pw);
        for (int i = 0; i < 4; i++) {
            tt_fill(v, 8, i == 3, &seed);
            snprintf(nm, sizeof nm, "b%d.bn%d", b, i);
            tether_ir_add_constant(g, nm, TETHER_FLOAT32, 1, s8, v, sizeof v, &bn[i]);
        }
        for (int i = 0; i < 5; i++) {
            snprintf(nm, sizeof nm, "b%d.t%d", b, i);
            tether_ir_add_tensor(g, nm, TETHER_FLOAT32, -1, NULL, &t[i]);
        }
        tether_ir_attrs a;
        tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
        a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
        int i1[] = {cur, cw}, i2[] = {t[0], bn[0], bn[1], bn[2], bn[3]}, i3[] = {t[2], pw},
            i4[] = {t[3], cur};
        snprintf(nm, sizeof nm, "b%d.conv", b);
        tether_ir_add_node(g, nm, TETHER_OP_CONV2D, i1, 2, &t[0], 1, &a, NULL);
        snprintf(nm, sizeof nm, "b%d.bn", b);
        tether_ir_add_node(g, nm, TETHER_OP_BATCH_NORM, i2, 5, &t[1], 1, NULL, NULL);
        snprintf(nm, sizeof nm, "b%d.relu", b);
        tether_ir_add_node(g, nm, TETHER_OP_RELU, &t[1], 1, &t[2], 1, NULL, NULL);
        snprintf(nm, sizeof nm, "b%d.proj", b);
        tether_ir_add_node(g, nm, TETHER_OP_CONV2D, i3, 2, &t[3], 1, NULL, NULL);
        snprintf(nm, sizeof nm, "b%d.add", b);
        tether_ir_add_node(g, nm, TETHER_OP_ADD, i4, 2, &t[4], 1, NULL, NULL);
        cur = t[4];
        k += 5;
    }
    tether_ir_add_output(g, cur);
    (void)k;
}

int main(int argc, char **argv) {
    int repeats = argc > 1 ? atoi(argv[1]) : 20;
    if (repeats < 1) {
        repeats = 1;
    }
    char d[1024];
    snprintf(d, sizeof d, "%s/bench/compiler", TETHER_BINARY_DIR);
    mkdir(d, 0755);
    printf("== generated code vs reference interpreter (x86-64, -O2, time per inference; "
           "xN = interpreter time / generated time;\n   both ABIs measured in the same run, "
           "interleaved, median of %d rounds; packed/unpacked = their ratio)\n",
           ROUNDS);
    printf("   (ONNX Runtime is not installed on this machine, so there is no third column)\n");
    char kws[1024];
    snprintf(kws, sizeof kws, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
    tether_ir_graph g;
    if (tether_model_load(kws, &g) != 0) {
        fprintf(stderr, "%s\n", tether_last_error());
        return 1;
    }
    bench_model("kws", &g, repeats * 10);
    tether_ir_close(&g);
    tt_build_zoo(&g);
    tether_ir_infer(&g);
    bench_model("zoo", &g, repeats * 10);
    tether_ir_close(&g);
    tt_build_convnet(&g, false);
    bench_model("convnet", &g, repeats);
    tether_ir_close(&g);
    tt_build_mobile(&g, false);
    bench_model("mobile", &g, repeats);
    tether_ir_close(&g);

    printf("\n== schedules: scalar kernels at -O2 for the x86-64 baseline (before) vs the defaults "
           "for this CPU\n   (--mcpu %s, -O3, blocked kernels); unpacked ABI, interleaved, median "
           "of %d rounds\n",
           bench_host_cpu(), ROUNDS);
    if (tether_model_load(kws, &g) != 0) {
        fprintf(stderr, "%s\n", tether_last_error());
        return 1;
    }
    bench_schedule("kws", &g);
    tether_ir_close(&g);
    tt_build_zoo(&g);
    tether_ir_infer(&g);
    bench_schedule("zoo", &g);
    tether_ir_close(&g);
    tt_build_convnet(&g, false);
    bench_schedule("convnet", &g);
    tether_ir_close(&g);
    tt_build_mobile(&g, false);
    bench_schedule("mobile", &g);
    tether_ir_close(&g);

    printf("\n== compile time, model file -> C (load, passes, plan, emit)\n");
    int blocks = 30;
    build_deep(&g, blocks);
    if (tether_ir_infer(&g) != 0) {
        fprintf(stderr, "%s\n", tether_last_error());
        return 1;
    }
    char j[1200], b[1200], out[1200];
    snprintf(j, sizeof j, "%s/deep.json", d);
    snprintf(b, sizeof b, "%s/deep.bin", d);
    snprintf(out, sizeof out, "%s/deep-art", d);
    tether_model_save_json(&g, j, b);
    int nodes = g.nnodes;
    tether_ir_close(&g);
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.build_library = false;
    tether_compile_result res;
    double best = 1e9;
    for (int i = 0; i < 5; i++) {
        double t0 = now();
        if (tether_compile_model(j, out, &o, &res) != 0) {
            fprintf(stderr, "%s\n", tether_last_error());
            return 1;
        }
        double t = now() - t0;
        best = t < best ? t : best;
    }
    printf("deep model: %d nodes (%d after passes), model -> C %.1f ms (best of 5), "
           "workspace %lld bytes\n",
           nodes, res.nnodes_out, best * 1e3, (long long)res.workspace_size);
    o.build_library = true;
    double t0 = now();
    if (tether_compile_model(j, out, &o, &res) != 0) {
        fprintf(stderr, "%s\n", tether_last_error());
        return 1;
    }
    printf("deep model: model -> built x86-64 library %.1f ms (C compiler included)\n",
           (now() - t0) * 1e3);
    return 0;
}
