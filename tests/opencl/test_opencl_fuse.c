/*
 * Fewer OpenCL launches (docs/codegen.md, "Fewer launches"; issue 31): the kernels an artifact
 * launches for fused patterns, and their outputs equal to the interpreter's. A conv with bias,
 * a residual add and a ReLU is one kernel (three without the passes); a global average or max
 * pool read only by a dense (through Flatten) is one kernel with the dense (rows, vloaded and
 * plain weights, trans_b, a fused ReLU, half storage), and stays two kernels when the pooled
 * tensor is also a graph output or the pooled input is too large to pool per work-group.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codegen_common.h"
#include "ops_common.h"
#include "tether/compiler.h"

/* The kernels of g's artifact (`__kernel` definitions in m.cl), with or without the passes;
 * has: whether the source contains `what` (NULL: not asked). */
static int kernels_of(const tether_ir_graph *g, bool passes, const char *what, int *has) {
    char dir[128], path[200];
    compile_ocl(g, false, passes, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/m.cl", dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *src = malloc((size_t)len + 1);
    assert_non_null(src);
    assert_int_equal(fread(src, 1, (size_t)len, f), (size_t)len);
    src[len] = '\0';
    fclose(f);
    int n = 0;
    for (const char *p = src; (p = strstr(p, "__kernel void")) != NULL; p++) {
        n++;
    }
    if (has) {
        *has = what && strstr(src, what) != NULL;
    }
    free(src);
    rm_tree(dir);
    return n;
}

void test_fuse_conv_add_relu(void **state) {
    (void)state;
    conv_case c = {
        "fuse_conv_add_relu", {1, 8, 6, 6}, {8, 8, 3, 3}, 1, 1, 1, 1, 1, TETHER_ACT_RELU, 1};
    tether_ir_graph g;
    build_conv(&g, &c);
    assert_int_equal(kernels_of(&g, true, NULL, NULL), 1);  /* conv + bias + add + relu */
    assert_int_equal(kernels_of(&g, false, NULL, NULL), 3); /* conv, add, relu */
    check_graph(&g, NULL, false, true);
    check_graph(&g, NULL, false, false);
    tether_ir_close(&g);
}

/* x [M,C,H,W] -> global pool -> flatten -> dense(w, b) [-> relu]; extra 1: the pooled tensor is
 * a graph output too. */
static void build_pool_fc(tether_ir_graph *g, const char *name, tether_op pool, int64_t M,
                          int64_t C, int64_t H, int64_t W, int64_t N, int tb, int relu, int extra) {
    assert_int_equal(tether_ir_init(g, name), 0);
    uint32_t seed = 17;
    int64_t xs[4] = {M, C, H, W}, ws[2] = {tb ? N : C, tb ? C : N};
    int x, p, fl, y;
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, xs, &x), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    tether_ir_attrs a;
    tether_ir_attrs_init(pool, &a);
    assert_int_equal(tether_ir_add_tensor(g, "p", TETHER_FLOAT32, -1, NULL, &p), 0);
    assert_int_equal(tether_ir_add_node(g, "gp", pool, &x, 1, &p, 1, &a, NULL), 0);
    tether_ir_attrs_init(TETHER_OP_FLATTEN, &a);
    a.axis = 1;
    assert_int_equal(tether_ir_add_tensor(g, "fl", TETHER_FLOAT32, -1, NULL, &fl), 0);
    assert_int_equal(tether_ir_add_node(g, "flat", TETHER_OP_FLATTEN, &p, 1, &fl, 1, &a, NULL), 0);
    int in[3] = {fl, tt_add_const(g, "w", 2, ws, &seed), tt_add_const(g, "b", 1, &N, &seed)};
    tether_ir_attrs_init(TETHER_OP_DENSE, &a);
    a.trans_b = tb;
    assert_int_equal(tether_ir_add_tensor(g, "y", TETHER_FLOAT32, -1, NULL, &y), 0);
    assert_int_equal(tether_ir_add_node(g, "fc", TETHER_OP_DENSE, in, 3, &y, 1, &a, NULL), 0);
    if (relu) {
        int r;
        tether_ir_attrs_init(TETHER_OP_RELU, &a);
        assert_int_equal(tether_ir_add_tensor(g, "r", TETHER_FLOAT32, -1, NULL, &r), 0);
        assert_int_equal(tether_ir_add_node(g, "relu", TETHER_OP_RELU, &y, 1, &r, 1, &a, NULL), 0);
        y = r;
    }
    assert_int_equal(tether_ir_add_output(g, y), 0);
    if (extra) {
        assert_int_equal(tether_ir_add_output(g, p), 0);
    }
    assert_int_equal(tether_ir_infer(g), 0);
}

void test_fuse_pool_dense(void **state) {
    (void)state;
    static const struct {
        const char *name;
        tether_op pool;
        int64_t M, C, H, W, N;
        int tb, relu, extra;
        int kernels; /* with the passes */
    } cases[] = {
        {"pf_avg", TETHER_OP_GLOBAL_AVG_POOL, 1, 64, 5, 5, 100, 1, 0, 0, 1},
        {"pf_max_rows", TETHER_OP_GLOBAL_MAX_POOL, 2, 36, 3, 3, 10, 0, 0, 0, 1},
        {"pf_relu", TETHER_OP_GLOBAL_AVG_POOL, 3, 40, 4, 4, 7, 1, 1, 0, 1},
        {"pf_odd", TETHER_OP_GLOBAL_AVG_POOL, 1, 33, 7, 1, 5, 1, 0, 0, 1},
        {"pf_output", TETHER_OP_GLOBAL_AVG_POOL, 1, 64, 3, 3, 10, 1, 0, 1, 2},
        {"pf_large", TETHER_OP_GLOBAL_AVG_POOL, 1, 256, 32, 32, 1000, 1, 0, 0, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tether_ir_graph g;
        build_pool_fc(&g, cases[i].name, cases[i].pool, cases[i].M, cases[i].C, cases[i].H,
                      cases[i].W, cases[i].N, cases[i].tb, cases[i].relu, cases[i].extra);
        int fused = 0;
        int k = kernels_of(&g, true, "'gp' fused", &fused);
        if (k != cases[i].kernels || fused != (cases[i].kernels == 1)) {
            fail_msg("%s: %d kernels (fused: %d), expected %d", cases[i].name, k, fused,
                     cases[i].kernels);
        }
        check_graph(&g, NULL, false, true);
        if (i == 0) { /* texture weights asked for (the dense reads buffers), half storage */
            check_graph(&g, NULL, true, true);
            g_fp16 = true;
            assert_int_equal(kernels_of(&g, true, NULL, NULL), 1);
            check_graph(&g, NULL, false, true);
            g_fp16 = false;
        }
        tether_ir_close(&g);
    }
    /* the legacy kernels (the baseline) keep both */
    tether_ir_graph g;
    build_pool_fc(&g, "pf_legacy", TETHER_OP_GLOBAL_AVG_POOL, 1, 64, 5, 5, 100, 1, 0, 0);
    g_legacy = true;
    assert_int_equal(kernels_of(&g, true, NULL, NULL), 2);
    check_graph(&g, NULL, false, true);
    g_legacy = false;
    tether_ir_close(&g);
}
