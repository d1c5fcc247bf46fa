/*
 * int8 speed of the model zoo (bench/quant/README.md, "Speed"; `scripts/bench quant-speed`): each
 * float model of `scripts/bench models` (bench_models writes them, TETHER_ZOO_ONNX_ONLY) is
 * quantized with `tether quantize`'s library call (QDQ, int8 activations, per-channel int8
 * weights, min/max on one calibration input), then timed, on one thread, as
 *   - tether int8: the QDQ file compiled the way `tether run MODEL` compiles it here (-O3,
 *     --mcpu of the host's x86-64 level), timed in-process through its unpacked entry;
 *   - tether fp32: the float file, the same way;
 *   - ONNX Runtime on the same QDQ file (onnxruntime-node, bench/models/ort_time.js: one thread,
 *     all graph optimisations, the binding's per-call cost taken off).
 * tether's two builds are timed interleaved round by round (medians of 15 rounds of >= 50 ms);
 * ONNX Runtime runs just before and just after them (the mean of its two medians). Prints per
 * model the three times, int8/ORT-int8 and int8/fp32, the max |difference| of the two int8
 * outputs, and the geometric means of both ratios.
 *
 * usage: bench_quant_speed ORT_DIR   (where node_modules/onnxruntime-node is)
 *
 * What must stay true: inputs and calibration data come from fixed-seed generators (different
 * seeds); ONNX Runtime and tether int8 get the same model file and the same input bytes; all
 * figures of a model come from the same run; nothing here is part of the tests.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../host_cpu.h"
#include "tether/compiler.h"
#include "tether/crt.h"
#include "tether/onnx.h"
#include "tether/onnx_quantize.h"

#define ROUNDS 15

typedef int32_t (*entry_fn)(const float *, float *);

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void fill(float *v, size_t n, uint32_t seed) {
    for (size_t k = 0; k < n; k++) {
        seed = seed * 1664525u + 1013904223u;
        v[k] = (float)((seed >> 8) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
    }
}

/* The two builds interleaved round by round, the order alternating; medians into *ta, *tb. */
static void time_pair(entry_fn a, entry_fn b, const float *x, float *y, double *ta, double *tb) {
    for (int i = 0; i < 3; i++) {
        a(x, y);
        b(x, y);
    }
    int calls[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        double t0 = now();
        do {
            (k ? b : a)(x, y);
            calls[k]++;
        } while (now() - t0 < 0.05);
    }
    double t[2][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        for (int s = 0; s < 2; s++) {
            int k = (r + s) % 2;
            entry_fn f = k ? b : a;
            double t0 = now();
            for (int i = 0; i < calls[k]; i++) {
                f(x, y);
            }
            t[k][r] = (now() - t0) / calls[k];
        }
    }
    qsort(t[0], ROUNDS, sizeof(double), cmp_double);
    qsort(t[1], ROUNDS, sizeof(double), cmp_double);
    *ta = t[0][ROUNDS / 2];
    *tb = t[1][ROUNDS / 2];
}

/* ORT through node (bench/models/ort_time.js): its own median ms per call; output into out. */
static int time_ort(const char *ort_dir, const char *onnx, const char *in, const char *shape,
                    const char *out, double *net_ms) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "ORT_DIR='%s' node '%s/../models/ort_time.js' '%s' '%s' '%s' '%s'",
             ort_dir, TETHER_BENCH_DIR, onnx, in, shape, out);
    FILE *p = popen(cmd, "r");
    if (!p) {
        return -1;
    }
    char line[512] = "";
    double ms;
    int got = 0;
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "{\"ms\":%lf,\"net_ms\":%lf}", &ms, net_ms) == 2) {
            got = 1;
        } else {
            fputs(line, stderr);
        }
    }
    return pclose(p) == 0 && got ? 0 : -1;
}

static int write_file(const char *path, const void *v, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        return -1;
    }
    size_t w = fwrite(v, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

/* Compiles the ONNX file into art with prefix; the entry, its library handle into *h. */
static entry_fn build(const char *onnx, const char *art, const char *prefix, tether_ir_graph *g,
                      void **h) {
    if (tether_onnx_load(onnx, NULL, g) != 0) {
        fprintf(stderr, "%s: %s\n", onnx, tether_error_detail());
        return NULL;
    }
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.codegen.prefix = prefix;
    o.build.cpu = bench_host_cpu();
    if (tether_compile_graph(g, art, &o, NULL) != 0) {
        fprintf(stderr, "%s: %s\n", onnx, tether_error_detail());
        return NULL;
    }
    char lib[1300], sym[64];
    snprintf(lib, sizeof lib, "%s/lib%s.so", art, prefix);
    snprintf(sym, sizeof sym, "%s_main", prefix);
    *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    entry_fn fn = *h ? (entry_fn)dlsym(*h, sym) : NULL;
    if (!fn) {
        fprintf(stderr, "%s: %s\n", lib, dlerror());
    }
    return fn;
}

/* QDQ int8 of the float model at onnx (calibration: one input of another seed) into qpath. */
static int quantize(const char *onnx, const char *qpath, int ndim, const int64_t *dims) {
    size_t n = 1;
    for (int d = 0; d < ndim; d++) {
        n *= (size_t)dims[d];
    }
    float *cal = malloc(n * sizeof(float));
    fill(cal, n, 7);
    tether_model_value v = {
        .dtype = TETHER_FLOAT32, .ndim = ndim, .data = cal, .nbytes = n * sizeof(float)};
    for (int d = 0; d < ndim; d++) {
        v.shape[d] = dims[d];
    }
    const char *name = "x";
    tether_onnx_qsample s = {.source = "calibration input", .n = 1, .names = &name, .values = &v};
    tether_onnx_quantize_options o;
    memset(&o, 0, sizeof o);
    o.samples = &s;
    o.nsamples = 1;
    tether_onnx_quantize_result r;
    memset(&r, 0, sizeof r);
    int rc = tether_onnx_quantize(onnx, &o, &r);
    if (rc) {
        fprintf(stderr, "%s: quantize: %s\n", onnx, tether_last_error());
    } else {
        rc = write_file(qpath, r.model, r.model_len);
    }
    tether_onnx_quantize_free(&r);
    free(cal);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_quant_speed ORT_DIR\n");
        return 2;
    }
    const char *ort_dir = argv[1];
    char cmd[2048], dir[1024];
    snprintf(dir, sizeof dir, "%s/bench/models/out", TETHER_BINARY_DIR);
    snprintf(cmd, sizeof cmd, "TETHER_ZOO_ONNX_ONLY=1 '%s/bench/models/bench_models'",
             TETHER_BINARY_DIR);
    FILE *zoo = popen(cmd, "r"); /* writes the float files; prints "name d0 d1 ..." */
    if (!zoo) {
        perror("bench_models");
        return 1;
    }
    char names[16][64];
    int64_t shapes[16][4];
    int ndims[16], nm = 0;
    char ln[512];
    while (nm < 16 && fgets(ln, sizeof ln, zoo)) {
        long long d[4];
        int got = sscanf(ln, "%63s %lld %lld %lld %lld", names[nm], &d[0], &d[1], &d[2], &d[3]);
        if (got >= 2 && strcmp(names[nm], "model") != 0) {
            ndims[nm] = got - 1;
            for (int k = 0; k < got - 1; k++) {
                shapes[nm][k] = d[k];
            }
            nm++;
        }
    }
    if (pclose(zoo) != 0 || nm == 0) {
        fprintf(stderr, "bench_quant_speed: bench_models did not write the zoo\n");
        return 1;
    }
    printf("== int8 zoo: tether int8 (QDQ from tether quantize; -O3, --mcpu %s) vs ONNX Runtime "
           "on the same file\n   (onnxruntime-node, 1 thread, all optimisations) and tether's "
           "float32 build; medians of %d rounds of >= 50 ms\n\n",
           bench_host_cpu(), ROUNDS);
    printf("%-18s %10s %10s %10s %9s %9s %10s\n", "model", "int8 ms", "ORT i8 ms", "fp32 ms",
           "i8/ORT", "i8/fp32", "max|diff|");
    double lort = 0, lfp = 0;
    int nort = 0, nfp = 0, status = 0;
    for (int i = 0; i < nm; i++) {
        char onnx[1200], qonnx[1200], inp[1200], ortp[1200], aq[1200], af[1200], shape[64] = "";
        snprintf(onnx, sizeof onnx, "%s/%s.onnx", dir, names[i]);
        snprintf(qonnx, sizeof qonnx, "%s/%s.int8.onnx", dir, names[i]);
        snprintf(inp, sizeof inp, "%s/%s.int8.in.bin", dir, names[i]);
        snprintf(ortp, sizeof ortp, "%s/%s.int8.ort.bin", dir, names[i]);
        snprintf(aq, sizeof aq, "%s/%s.int8.art", dir, names[i]);
        snprintf(af, sizeof af, "%s/%s.fp32.art", dir, names[i]);
        for (int d = 0; d < ndims[i]; d++) {
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", d ? "x" : "",
                     (long long)shapes[i][d]);
        }
        tether_ir_graph gq, gf;
        void *hq = NULL, *hf = NULL;
        entry_fn fq = NULL, ff = NULL;
        if (quantize(onnx, qonnx, ndims[i], shapes[i]) != 0 ||
            !(fq = build(qonnx, aq, "zq", &gq, &hq)) || !(ff = build(onnx, af, "zf", &gf, &hf))) {
            status = 1;
            continue;
        }
        size_t nin = tether_ir_tensor_elements(&gq.tensors[gq.inputs[0]]);
        size_t nout = tether_ir_tensor_elements(&gq.tensors[gq.outputs[0]]);
        float *x = malloc(nin * sizeof(float)), *y = malloc(nout * sizeof(float)),
              *yo = malloc(nout * sizeof(float));
        fill(x, nin, 99);
        if (write_file(inp, x, nin * sizeof(float)) != 0) {
            status = 1;
        }
        double o1 = 0, o2 = 0, tq = 0, tf = 0, maxd = -1;
        int ort_ok = time_ort(ort_dir, qonnx, inp, shape, ortp, &o1) == 0;
        time_pair(fq, ff, x, y, &tq, &tf);
        ort_ok = ort_ok && time_ort(ort_dir, qonnx, inp, shape, ortp, &o2) == 0;
        fq(x, y);
        FILE *f = ort_ok ? fopen(ortp, "rb") : NULL;
        if (f && fread(yo, sizeof(float), nout, f) == nout) {
            maxd = 0;
            for (size_t k = 0; k < nout; k++) {
                double d = fabs((double)y[k] - yo[k]);
                maxd = d > maxd || d != d ? d : maxd;
            }
        }
        if (f) {
            fclose(f);
        }
        double ort = (o1 + o2) / 2;
        lfp += log(tq / tf);
        nfp++;
        if (ort_ok && ort > 0) {
            lort += log(tq * 1e3 / ort);
            nort++;
            printf("%-18s %10.4f %10.4f %10.4f %9.2f %9.2f %10.2g\n", names[i], tq * 1e3, ort,
                   tf * 1e3, tq * 1e3 / ort, tq / tf, maxd);
        } else {
            status = 1;
            printf("%-18s %10.4f %10s %10.4f %9s %9.2f %10s\n", names[i], tq * 1e3, "-", tf * 1e3,
                   "-", tq / tf, "-");
        }
        fflush(stdout);
        free(x);
        free(y);
        free(yo);
        dlclose(hq);
        dlclose(hf);
        tether_ir_close(&gq);
        tether_ir_close(&gf);
    }
    printf("\ngeometric mean over %d models: int8/ORT-int8 %.2f, int8/fp32 %.2f\n", nort,
           nort ? exp(lort / nort) : 0.0, nfp ? exp(lfp / nfp) : 0.0);
    return status;
}
