/*
 * The OpenCL backend's GPU row kernels (docs/codegen.md, "GPU kernels"): softmax, log_softmax,
 * hardmax and layer_norm, whose every output depends on a whole row (a reduction over one axis,
 * or over the trailing axes for layer_norm). The one-work-item-per-row kernels of
 * emit_opencl_kernels.c loop over the row serially three times; on a GPU a 1000-class softmax
 * was one work-item looping 3 x 1000 times (75 us on an H100, a fifth of a MobileNet). Here one
 * work-group owns one row: its work-items stride over the row, combine their partial results
 * (maximum, sum, first arg-maximum) through local memory (a tree of barriers), and write the row
 * together.
 *
 * What must stay true: the kernel has barriers, so no early return: every work-item of a group
 * reaches every barrier (the group's row is always a real row: global = rows x WG exactly); the
 * reductions compute what emit_opencl_kernels.c's kernels compute (the maximum before the sum of
 * exp(v - max); hardmax's 1 at the first maximum; layer_norm's mean, then the mean squared
 * deviation: two passes), in a different order of the sums only; `total` is at most global.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/compiler.h"

/* Rows shorter than this keep the one-work-item kernel (a short loop, and more rows to share
 * the device). */
#define ROW_MIN_LEN 64

static int64_t pow2_at_most(int64_t v) {
    int64_t p = 1;
    while (p * 2 <= v) {
        p *= 2;
    }
    return p;
}

static void row_dims(const ocl *e, const tether_ir_node *n, int64_t *rows, int64_t *len,
                     int64_t *inner) {
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    int ax = tether__ir_norm_axis(n->attrs.axis, y->ndim);
    if (n->op == TETHER_OP_LAYER_NORM) { /* the trailing axes from `axis` form the row */
        *len = prod(y->shape, ax, y->ndim);
        *inner = 1;
        *rows = prod(y->shape, 0, ax);
    } else {
        *len = y->shape[ax];
        *inner = prod(y->shape, ax + 1, y->ndim);
        *rows = prod(y->shape, 0, ax) * *inner;
    }
}

int tether__ocl_rows_plan(const ocl *e, const tether_ir_node *n, const tether_schedule *ns,
                          tether__ocl_gpu *p) {
    int64_t rows, len, inner;
    row_dims(e, n, &rows, &len, &inner);
    if (len < ROW_MIN_LEN) {
        snprintf(p->why, sizeof p->why, "rows of %lld: one work-item per row loops briefly",
                 (long long)len);
        return 0;
    }
    int64_t mx = e->o->max_work_group_size > 0 ? e->o->max_work_group_size : 256;
    mx = pow2_at_most(mx > 1024 ? 1024 : mx);
    /* 2 to 4 elements per work-item, 32 to 256 work-items (a tuned local_size wins) */
    int64_t wg =
        ns && ns->local_size > 0 ? pow2_at_most(ns->local_size) : pow2_at_most((len + 1) / 2);
    wg = wg < 32 ? 32 : wg > 256 && !(ns && ns->local_size > 0) ? 256 : wg;
    wg = wg > mx ? mx : wg;
    int hard = n->op == TETHER_OP_HARDMAX;
    int64_t lbytes = wg * (int64_t)(hard ? 8 : 4);
    int64_t lmem = e->o->local_mem_size > 0 ? e->o->local_mem_size : 16384;
    if (wg < 2 || lbytes > lmem) {
        snprintf(p->why, sizeof p->why,
                 "a work-group of %lld is over the device's work-group size or local memory",
                 (long long)wg);
        return 0;
    }
    p->kind = TETHER__OCL_GPU_ROWS;
    p->local = wg;
    p->global = rows * wg;
    int64_t outs = rows * len;
    p->total = outs < p->global ? outs : p->global;
    p->rows = rows;
    p->serial = (len + wg - 1) / wg;
    snprintf(p->why, sizeof p->why,
             "one work-group of %lld per row of %lld (%lld row%s), partial results reduced in "
             "local memory",
             (long long)wg, (long long)len, (long long)rows, rows == 1 ? "" : "s");
    return 1;
}

/* red[0] = op over red[0 .. wg) (a tree; every work-item takes part). */
static void tree(ocl *e, int64_t wg, const char *combine) {
    line(e, "barrier(CLK_LOCAL_MEM_FENCE);");
    open_block(e, "for (int h = %lld; h > 0; h >>= 1)", (long long)(wg / 2));
    open_block(e, "if (lid < h)");
    line(e, "%s", combine);
    close_block(e);
    line(e, "barrier(CLK_LOCAL_MEM_FENCE);");
    close_block(e);
}

static void body_softmax(ocl *e, const tether_ir_node *n, const tether__ocl_gpu *p) {
    int64_t rows, len, inner;
    row_dims(e, n, &rows, &len, &inner);
    long long L = len, I = inner, WG = p->local;
    line(e, "__local float red[%lld];", WG);
    line(e, "const int lid = (int)get_local_id(0);");
    line(e, "const int row = (int)get_group_id(0);");
    if (I > 1) {
        line(e, "const int base = (row / %lld) * %lld + row %% %lld;", I, L * I, I);
    } else {
        line(e, "const int base = row * %lld;", L);
    }
    line(e, "const __global float *xs = in0 + base;");
    line(e, "__global float *ys = y + base;");
    if (n->op == TETHER_OP_HARDMAX) {
        /* each work-item's first maximum over its k (ascending), then the first of those:
         * the larger value, or the smaller index of equal values; ai = -1: saw nothing */
        line(e, "__local int at[%lld];", WG);
        line(e, "float mx = 0.0f;");
        line(e, "int ai = -1;");
        open_block(e, "for (int k = lid; k < %lld; k += %lld)", L, WG);
        line(e, "const float v = xs[k * %lld];", I);
        open_block(e, "if (ai < 0 || v > mx)");
        line(e, "mx = v;");
        line(e, "ai = k;");
        close_block(e);
        close_block(e);
        line(e, "red[lid] = mx;");
        line(e, "at[lid] = ai;");
        tree(e, WG,
             "const float o = red[lid + h]; const int oi = at[lid + h]; "
             "if (oi >= 0 && (at[lid] < 0 || o > red[lid] || (o == red[lid] && oi < at[lid]))) "
             "{ red[lid] = o; at[lid] = oi; }");
        line(e, "const int first = at[0];");
        open_block(e, "for (int k = lid; k < %lld; k += %lld)", L, WG);
        line(e, "ys[k * %lld] = k == first ? 1.0f : 0.0f;", I);
        close_block(e);
        return;
    }
    line(e, "float mx = -INFINITY;");
    open_block(e, "for (int k = lid; k < %lld; k += %lld)", L, WG);
    line(e, "const float v = xs[k * %lld];", I);
    line(e, "mx = v > mx ? v : mx;");
    close_block(e);
    line(e, "red[lid] = mx;");
    tree(e, WG, "red[lid] = red[lid + h] > red[lid] ? red[lid + h] : red[lid];");
    line(e, "mx = red[0];");
    line(e, "barrier(CLK_LOCAL_MEM_FENCE);");
    line(e, "float s = 0.0f;");
    open_block(e, "for (int k = lid; k < %lld; k += %lld)", L, WG);
    line(e, "s += exp(xs[k * %lld] - mx);", I);
    close_block(e);
    line(e, "red[lid] = s;");
    tree(e, WG, "red[lid] += red[lid + h];");
    line(e, "s = red[0];");
    open_block(e, "for (int k = lid; k < %lld; k += %lld)", L, WG);
    if (n->op == TETHER_OP_LOG_SOFTMAX) {
        line(e, "ys[k * %lld] = (xs[k * %lld] - mx) - log(s);", I, I);
    } else {
        line(e, "ys[k * %lld] = exp(xs[k * %lld] - mx) / s;", I, I);
    }
    close_block(e);
}

/* layer_norm: the mean, then the mean squared deviation (two passes, as the one-work-item
 * kernel), each a sum over the row reduced in local memory; scale and bias over the row. */
static void body_layer_norm(ocl *e, const tether_ir_node *n, const tether__ocl_gpu *p) {
    int64_t rows, len, inner;
    row_dims(e, n, &rows, &len, &inner);
    long long L = len, WG = p->local;
    int bias = n->ninputs > 2 && n->inputs[2] >= 0;
    char eps[48];
    flit(eps, sizeof eps, n->attrs.epsilon);
    line(e, "__local float red[%lld];", WG);
    line(e, "const int lid = (int)get_local_id(0);");
    line(e, "const int row = (int)get_group_id(0);");
    line(e, "const __global float *xs = in0 + row * %lld;", L);
    line(e, "__global float *ys = y + row * %lld;", L);
    line(e, "float s = 0.0f;");
    open_block(e, "for (int k = lid; k < %lld; k += %lld)", L, WG);
    line(e, "s += xs[k];");
    close_block(e);
    line(e, "red[lid] = s;");
    tree(e, WG, "red[lid] += red[lid + h];");
    line(e, "const float mean = red[0] / (float)%lld;", L);
    line(e, "barrier(CLK_LOCAL_MEM_FENCE);");
    line(e, "s = 0.0f;");
    open_block(e, "for (int k = lid; k < %lld; k += %lld)", L, WG);
    line(e, "const float d = xs[k] - mean;");
    line(e, "s += d * d;");
    close_block(e);
    line(e, "red[lid] = s;");
    tree(e, WG, "red[lid] += red[lid + h];");
    line(e, "const float rs = sqrt(red[0] / (float)%lld + %s);", L, eps);
    open_block(e, "for (int k = lid; k < %lld; k += %lld)", L, WG);
    line(e, "ys[k] = (xs[k] - mean) / rs * in1[k]%s;", bias ? " + in2[k]" : "");
    close_block(e);
}

void tether__ocl_rows_body(ocl *e, const tether_ir_node *n, const tether__ocl_gpu *p) {
    if (n->op == TETHER_OP_LAYER_NORM) {
        body_layer_norm(e, n, p);
    } else {
        body_softmax(e, n, p);
    }
}
