/*
 * Fewer OpenCL launches (docs/codegen.md, "Fewer launches"; issue 31): the kernels an artifact
 * launches for fused patterns, and their outputs equal to the interpreter's. A conv with bias,
 * a residual add and a ReLU is one kernel (three without the passes).
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

/* The kernels of g's artifact (`__kernel` definitions in m.cl), with or without the passes. */
static int kernels_of(const tether_ir_graph *g, bool passes) {
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
    assert_int_equal(kernels_of(&g, true), 1);  /* conv + bias + add + relu */
    assert_int_equal(kernels_of(&g, false), 3); /* conv, add, relu */
    check_graph(&g, NULL, false, true);
    check_graph(&g, NULL, false, false);
    tether_ir_close(&g);
}
