/*
 * Planner benchmark: synthetic activation graphs shaped like MobileNet v1, MobileNet v2
 * (inverted residuals with residual adds), a DS-CNN keyword spotter and a small U-Net (long
 * skip connections), built as buffer lists with realistic tensor sizes. Prints, per model, the
 * arena bytes of every algorithm, the lower bound, best / lower bound, and each algorithm's
 * ratio to the naive plan measured in the same run (the baseline). A second table plans
 * MobileNet v2 into a small SRAM pool with DRAM spill.
 * What must stay true: deterministic output (fixed seed), no timing-dependent results.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tether/planner.h"

#define MAX_T 512

typedef struct graph {
    const char *model;
    int op; /* current operator index */
    int n;
    char names[MAX_T][32];
    int64_t size[MAX_T];
    int first[MAX_T], last[MAX_T];
    tether_plan_kind kind[MAX_T];
} graph;

static int tensor(graph *g, const char *what, int64_t bytes) {
    int id = g->n++;
    if (id >= MAX_T) {
        fprintf(stderr, "bench: too many tensors\n");
        exit(1);
    }
    snprintf(g->names[id], sizeof(g->names[id]), "%s_%d", what, id);
    g->size[id] = bytes;
    g->first[id] = g->op;
    g->last[id] = g->op;
    g->kind[id] = TETHER_PLAN_INTERMEDIATE;
    return id;
}

static void use(graph *g, int id) {
    if (g->op > g->last[id]) {
        g->last[id] = g->op;
    }
}

/* One operator: reads a (and b >= 0), writes an h*w*c tensor of elem bytes; optional scratch. */
static int op(graph *g, const char *what, int a, int b, int h, int w, int c, int elem,
              int64_t scratch) {
    g->op++;
    use(g, a);
    if (b >= 0) {
        use(g, b);
    }
    if (scratch > 0) {
        tensor(g, "scratch", scratch);
    }
    return tensor(g, what, (int64_t)h * w * c * elem);
}

static void mobilenet_v1(graph *g) {
    memset(g, 0, sizeof(*g));
    g->model = "mobilenet_v1 (224, int8)";
    const int e = 1;
    int x = tensor(g, "input", 224 * 224 * 3);
    g->kind[x] = TETHER_PLAN_GRAPH_INPUT;
    x = op(g, "conv", x, -1, 112, 112, 32, e, (int64_t)112 * 112 * 27); /* im2col */
    static const int cfg[][2] = {{1, 64},  {2, 128},  {1, 128}, {2, 256}, {1, 256},
                                 {2, 512}, {1, 512},  {1, 512}, {1, 512}, {1, 512},
                                 {1, 512}, {2, 1024}, {1, 1024}};
    int hw = 112, c = 32;
    for (size_t i = 0; i < sizeof(cfg) / sizeof(cfg[0]); i++) {
        hw /= cfg[i][0];
        x = op(g, "dw", x, -1, hw, hw, c, e, 0);
        c = cfg[i][1];
        x = op(g, "pw", x, -1, hw, hw, c, e, 0);
    }
    x = op(g, "avgpool", x, -1, 1, 1, c, e, 0);
    x = op(g, "fc", x, -1, 1, 1, 1000, e, 0);
    x = op(g, "softmax", x, -1, 1, 1, 1000, e, 0);
    g->kind[x] = TETHER_PLAN_GRAPH_OUTPUT;
}

static void mobilenet_v2(graph *g) {
    memset(g, 0, sizeof(*g));
    g->model = "mobilenet_v2 (224, int8)";
    const int e = 1;
    int x = tensor(g, "input", 224 * 224 * 3);
    g->kind[x] = TETHER_PLAN_GRAPH_INPUT;
    x = op(g, "conv", x, -1, 112, 112, 32, e, (int64_t)112 * 112 * 27);
    static const int cfg[][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                 {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    int hw = 112, c = 32;
    for (size_t i = 0; i < sizeof(cfg) / sizeof(cfg[0]); i++) {
        for (int r = 0; r < cfg[i][2]; r++) {
            int s = r == 0 ? cfg[i][3] : 1;
            int in = x, cin = c, hidden = c * cfg[i][0];
            int y = in;
            if (cfg[i][0] != 1) {
                y = op(g, "expand", y, -1, hw, hw, hidden, e, 0);
            }
            int ohw = hw / s;
            y = op(g, "dw", y, -1, ohw, ohw, hidden, e, 0);
            y = op(g, "project", y, -1, ohw, ohw, cfg[i][1], e, 0);
            if (s == 1 && cin == cfg[i][1]) {
                y = op(g, "add", y, in, ohw, ohw, cfg[i][1], e, 0); /* residual */
            }
            x = y;
            hw = ohw;
            c = cfg[i][1];
        }
    }
    x = op(g, "conv1x1", x, -1, 7, 7, 1280, e, 0);
    x = op(g, "avgpool", x, -1, 1, 1, 1280, e, 0);
    x = op(g, "fc", x, -1, 1, 1, 1000, e, 0);
    g->kind[x] = TETHER_PLAN_GRAPH_OUTPUT;
}

static void ds_cnn(graph *g) {
    memset(g, 0, sizeof(*g));
    g->model = "ds_cnn kws (49x10, int8)";
    const int e = 1;
    int x = tensor(g, "mfcc", 49 * 10);
    g->kind[x] = TETHER_PLAN_GRAPH_INPUT;
    x = op(g, "conv", x, -1, 25, 5, 64, e, (int64_t)25 * 5 * 40); /* 10x4 kernel im2col */
    for (int i = 0; i < 4; i++) {
        x = op(g, "dw", x, -1, 25, 5, 64, e, 0);
        x = op(g, "pw", x, -1, 25, 5, 64, e, 0);
    }
    x = op(g, "avgpool", x, -1, 1, 1, 64, e, 0);
    x = op(g, "fc", x, -1, 1, 1, 12, e, 0);
    x = op(g, "softmax", x, -1, 1, 1, 12, e, 0);
    g->kind[x] = TETHER_PLAN_GRAPH_OUTPUT;
}

static void unet(graph *g) {
    memset(g, 0, sizeof(*g));
    g->model = "unet small (128, float32)";
    const int e = 4;
    int x = tensor(g, "image", 128 * 128 * 1 * e);
    g->kind[x] = TETHER_PLAN_GRAPH_INPUT;
    int skip[3];
    int hw = 128, c = 16;
    for (int l = 0; l < 3; l++) {
        x = op(g, "enc_conv_a", x, -1, hw, hw, c, e, 0);
        x = op(g, "enc_conv_b", x, -1, hw, hw, c, e, 0);
        skip[l] = x;
        hw /= 2;
        x = op(g, "pool", x, -1, hw, hw, c, e, 0);
        c *= 2;
    }
    x = op(g, "mid_conv_a", x, -1, hw, hw, c, e, 0);
    x = op(g, "mid_conv_b", x, -1, hw, hw, c, e, 0);
    for (int l = 2; l >= 0; l--) {
        hw *= 2;
        c /= 2;
        x = op(g, "upconv", x, -1, hw, hw, c, e, 0);
        x = op(g, "concat", x, skip[l], hw, hw, 2 * c, e, 0); /* long skip ends here */
        x = op(g, "dec_conv_a", x, -1, hw, hw, c, e, 0);
        x = op(g, "dec_conv_b", x, -1, hw, hw, c, e, 0);
    }
    x = op(g, "head", x, -1, hw, hw, 2, e, 0);
    g->kind[x] = TETHER_PLAN_GRAPH_OUTPUT;
}

/* Seeded random lifetimes (no model shape): where the heuristics differ from the optimum. */
static void random_graph(graph *g, int n, uint64_t seed, const char *name) {
    memset(g, 0, sizeof(*g));
    g->model = name;
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
    int nops = n;
    for (int i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int first = (int)(x % (uint64_t)nops);
        int len = (int)((x >> 20) % 4);
        int64_t size = (int64_t)(1 + (x >> 32) % 64) * 1024;
        g->op = first;
        int id = tensor(g, "t", size);
        g->last[id] = first + len < nops ? first + len : nops - 1;
    }
    g->op = nops - 1;
}

static void to_problem(const graph *g, tether_plan_problem *p, const char *const *pools,
                       int npools) {
    tether_plan_problem_init(p);
    for (int i = 0; i < g->n; i++) {
        tether_plan_buffer b;
        memset(&b, 0, sizeof(b));
        b.name = g->names[i];
        b.size = g->size[i];
        b.first = g->first[i];
        b.last = g->last[i];
        b.kind = g->kind[i];
        b.pools = pools;
        b.npools = npools;
        b.pin_offset = -1;
        if (tether_plan_problem_add_buffer(p, &b, NULL) != 0) {
            fprintf(stderr, "bench: %s\n", tether_last_error());
            exit(1);
        }
    }
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void bench_model(const graph *g, const char *svg_dir) {
    tether_plan_problem p;
    to_problem(g, &p, NULL, 0);
    tether_plan_pool ws = {"workspace", TETHER_SCOPE_GLOBAL, TETHER_PLAN_UNBOUNDED, 16, 0, 0};
    tether_plan_problem_add_pool(&p, &ws);
    tether_plan_options o;
    tether_plan_options_init(&o);
    int64_t lb = 0;
    tether_plan_lower_bound(&p, &o, false, &lb);
    printf("\n%s: %d buffers, %d operators, lower bound %lld bytes\n", g->model, p.nbuffers,
           g->op + 1, (long long)lb);
    printf("  %-18s %12s %9s %9s %9s\n", "algorithm", "bytes", "vs bound", "vs naive", "ms");
    int64_t naive = 0, best = 0;
    for (int a = 0; a < TETHER_PLAN_ALGORITHM_COUNT; a++) {
        o.algorithm = (tether_plan_algorithm)a;
        tether_plan plan;
        double t0 = now_ms();
        int rc = tether_plan_run(&p, &o, &plan);
        double dt = now_ms() - t0;
        if (rc != 0) {
            printf("  %-18s %12s %9s %9s %9.2f  (%s)\n",
                   tether_plan_algorithm_name((tether_plan_algorithm)a), "-", "-", "-", dt,
                   rc == TETHER_ERR_LIMIT ? "over the exact-search size limit" : "failed");
            continue;
        }
        if (a == TETHER_PLAN_NAIVE) {
            naive = plan.total_bytes;
        }
        if (a == TETHER_PLAN_BEST) {
            best = plan.total_bytes;
            if (svg_dir != NULL) {
                char path[512], *svg = NULL;
                snprintf(path, sizeof(path), "%s/%.*s.svg", svg_dir, (int)strcspn(g->model, " "),
                         g->model);
                if (tether_plan_to_svg(&p, &plan, &svg) == 0) {
                    tether_plan_write_file(path, svg);
                }
                free(svg);
            }
        }
        printf("  %-18s %12lld %9.3f %9.3f %9.2f\n",
               tether_plan_algorithm_name((tether_plan_algorithm)a), (long long)plan.total_bytes,
               (double)plan.total_bytes / (double)lb,
               naive ? (double)plan.total_bytes / (double)naive : 0.0, dt);
        tether_plan_close(&plan);
    }
    printf("  %-18s %12lld %9.3f\n", "lower bound", (long long)lb, 1.0);
    printf("  best / lower bound = %.3f, best / naive = %.3f\n", (double)best / (double)lb,
           (double)best / (double)naive);
    tether_plan_problem_close(&p);
}

static void bench_spill(const graph *g, int64_t sram) {
    const char *order[] = {"sram", "dram"};
    tether_plan_problem p;
    to_problem(g, &p, order, 2);
    tether_plan_pool s = {"sram", TETHER_SCOPE_GLOBAL, sram, 16, 0, 0};
    tether_plan_pool d = {"dram", TETHER_SCOPE_GLOBAL, TETHER_PLAN_UNBOUNDED, 64, 0, 0};
    tether_plan_problem_add_pool(&p, &s);
    tether_plan_problem_add_pool(&p, &d);
    tether_plan_options o;
    tether_plan_options_init(&o);
    printf("\n%s with sram %lld bytes + dram (spill):\n", g->model, (long long)sram);
    printf("  %-18s %12s %12s %12s\n", "algorithm", "sram used", "dram", "total");
    for (int a = 0; a < TETHER_PLAN_ALGORITHM_COUNT; a++) {
        o.algorithm = (tether_plan_algorithm)a;
        tether_plan plan;
        if (tether_plan_run(&p, &o, &plan) != 0) {
            printf("  %-18s %12s %12s %12s  (%.60s)\n",
                   tether_plan_algorithm_name((tether_plan_algorithm)a), "-", "-", "-",
                   tether_last_error());
            continue;
        }
        printf("  %-18s %12lld %12lld %12lld\n",
               tether_plan_algorithm_name((tether_plan_algorithm)a), (long long)plan.pools[0].size,
               (long long)plan.pools[1].size, (long long)plan.total_bytes);
        tether_plan_close(&plan);
    }
    tether_plan_problem_close(&p);
}

int main(int argc, char **argv) {
    const char *svg_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--svg-dir") == 0 && i + 1 < argc) {
            svg_dir = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--svg-dir DIR]\n", argv[0]);
            return 2;
        }
    }
    static graph g;
    printf("tether planner benchmark: arena bytes per algorithm (search: seed 1, budget 2000)\n");
    mobilenet_v1(&g);
    bench_model(&g, svg_dir);
    mobilenet_v2(&g);
    bench_model(&g, svg_dir);
    ds_cnn(&g);
    bench_model(&g, svg_dir);
    unet(&g);
    bench_model(&g, svg_dir);
    random_graph(&g, 12, 3, "random-12 (seed 3)");
    bench_model(&g, NULL);
    random_graph(&g, 60, 5, "random-60 (seed 5)");
    bench_model(&g, NULL);
    mobilenet_v2(&g);
    bench_spill(&g, 512 * 1024);
    return 0;
}
