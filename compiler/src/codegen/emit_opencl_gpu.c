/*
 * The OpenCL backend's GPU kernels (docs/codegen.md, "GPU kernels"): kernels that spread a
 * node's work over work-groups instead of giving each output element one work-item and a serial
 * loop:
 *  - dense (Gemm) as a split-K GEMV / small-N GEMM: S work-items share one output's K, their
 *    partial sums reduced in local memory (a tree of barriers), R = WG / S outputs per
 *    work-group;
 *  - conv2d (pointwise and general, grouped) as an implicit GEMM: [O/G x CG*KH*KW] x
 *    [CG*KH*KW x N*OH*OW] per group, TM x TN output tiles per work-group, TK-deep slices of both
 *    operands staged in local memory, a 4 x 4 register block per work-item;
 *  - depthwise conv2d: 4 output columns per work-item, the input row read with vload4 (stride 1)
 *    or vload8 (stride 2) where the window lies inside the row;
 *  - softmax, log_softmax, hardmax and layer_norm: one work-group per row (emit_opencl_rows.c);
 *  - dense followed by softmax/log_softmax over rows of at most 64: one kernel, each row's
 *    outputs in one work-group and the softmax over them from local memory (emit_opencl.c
 *    skips the softmax node; its output is the kernel's);
 *  - conv2d with few outputs and long reductions: split-K over the taps (emit_opencl_splitk.c),
 *    tried before the direct kernel when no GEMM tiles are asked for.
 * Sizes come from the shape, the device's limits in the options (max work-group size, preferred
 * multiple, local memory, compute units) and a node schedule (`tether tune --backend opencl`:
 * ocl_split_k, ocl_tile_m, ocl_tile_n, local_size). A shape none of them fits (textures,
 * small groups) keeps emit_opencl_kernels.c's kernel; so does every node with legacy_kernels.
 *
 * What must stay true: a kernel with barriers has no early return (emit_opencl.c leaves out the
 * `f < total` guard: every work-item reaches every barrier; the body checks its own outputs), its
 * `total` is the outputs it writes (at most global: the runner checks it against the arrays) and
 * its work-group size divides global and is within the device's limit; local arrays fit the
 * device's local memory; every body reads and writes only its kern's arguments, as
 * emit_opencl_kernels.c's bodies do; gpu_plan says why when it declines.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/compiler.h"

static int64_t next_pow2(int64_t v) {
    int64_t p = 1;
    while (p < v) {
        p <<= 1;
    }
    return p;
}

static int64_t max_wg(const ocl *e) {
    int64_t m = e->o->max_work_group_size > 0 ? e->o->max_work_group_size : 256;
    return m > 1024 ? 1024 : m;
}

static int64_t local_mem(const ocl *e) {
    return e->o->local_mem_size > 0 ? e->o->local_mem_size : 16384;
}

/* Work-groups that keep the device busy: 4 per compute unit. */
static int64_t fill_groups(const ocl *e) {
    return 4 * (int64_t)(e->o->compute_units > 0 ? e->o->compute_units : 16);
}

static int buffer_io(const ocl *e, const tether_ir_node *n) {
    for (int j = 0; j < n->ninputs; j++) {
        if (n->inputs[j] >= 0 && e->tex[n->inputs[j]] >= 0) {
            return 0;
        }
    }
    return e->tex[n->outputs[0]] < 0;
}

/* ---- dense: split-K GEMV ------------------------------------------------------------------ */

static int plan_dense(const ocl *e, const tether_ir_node *n, const tether_schedule *ns,
                      tether__ocl_gpu *p) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    int64_t M = y->shape[0], N = y->shape[1], K = a->trans_a ? x->shape[0] : x->shape[1];
    if (K < 32) {
        snprintf(p->why, sizeof p->why, "K = %lld: one work-item per output loops briefly",
                 (long long)K);
        return 0;
    }
    p->vec = !a->trans_a && a->trans_b && K % 4 == 0;
    int64_t kv = p->vec ? K / 4 : K, mx = max_wg(e);
    int64_t S = ns && ns->ocl_split_k > 0 ? next_pow2(ns->ocl_split_k) : next_pow2((kv + 7) / 8);
    int64_t pm = 1; /* the largest power of two within the work-group limit */
    while (pm * 2 <= mx) {
        pm *= 2;
    }
    S = S > pm ? pm : S;
    if (S < 2) {
        S = 2;
    }
    int64_t wg = ns && ns->local_size > 0 ? ns->local_size : 64;
    wg = wg < S ? S : wg;
    wg = next_pow2(wg) > pm ? S : next_pow2(wg);
    p->kind = TETHER__OCL_GPU_GEMV;
    p->split = S;
    p->rows = wg / S;
    p->local = wg;
    int64_t outs = M * N, groups = (outs + p->rows - 1) / p->rows;
    p->global = groups * wg;
    p->total = outs;
    p->serial = (kv + S - 1) / S;
    snprintf(p->why, sizeof p->why,
             "split-K GEMV: %lld work-items share each output's K = %lld, %lld output%s per "
             "work-group of %lld, %lld work-group%s",
             (long long)S, (long long)K, (long long)p->rows, p->rows == 1 ? "" : "s", (long long)wg,
             (long long)groups, groups == 1 ? "" : "s");
    return 1;
}

static void bias_index(const ocl *e, const tether_ir_node *n, char *idx, size_t cap) {
    const tether_ir_tensor *c = T(e, n->inputs[2]);
    if (tether_ir_tensor_elements(c) == 1) {
        snprintf(idx, cap, "0");
    } else if (c->ndim == 1) {
        snprintf(idx, cap, "j");
    } else if (c->shape[0] != 1 && c->shape[1] != 1) {
        snprintf(idx, cap, "o");
    } else if (c->shape[0] != 1) {
        snprintf(idx, cap, "i");
    } else {
        snprintf(idx, cap, "j");
    }
}

static void body_dense(ocl *e, const tether_ir_node *n, const kern *k, const tether__ocl_gpu *p) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    long long M = y->shape[0], N = y->shape[1];
    long long S = p->split;
    line(e, "__local float red[%lld];", (long long)p->local);
    line(e, "const int lid = (int)get_local_id(0);");
    line(e, "const int s = lid %% %lld;", S);
    line(e, "const int o = (int)get_group_id(0) * %lld + lid / %lld;", (long long)p->rows, S);
    line(e, "const int j = o %% %lld;", N);
    line(e, "const int i = o / %lld;", N);
    line(e, "float acc = 0.0f;");
    open_block(e, "if (o < %lld)", M * N);
    tether__ocl_dense_dot(e, n, p->vec, "s", S);
    close_block(e);
    line(e, "red[lid] = acc;");
    line(e, "barrier(CLK_LOCAL_MEM_FENCE);");
    open_block(e, "for (int h = %lld; h > 0; h >>= 1)", S / 2);
    open_block(e, "if (s < h)");
    line(e, "red[lid] += red[lid + h];");
    close_block(e);
    line(e, "barrier(CLK_LOCAL_MEM_FENCE);");
    close_block(e);
    open_block(e, "if (s == 0 && o < %lld)", M * N);
    char l[48];
    flit(l, sizeof l, a->alpha);
    line(e, "float v = %s%sred[lid];", a->alpha == 1.0f ? "" : l, a->alpha == 1.0f ? "" : " * ");
    if (tether__ir_main_inputs(n) > 2 && n->inputs[2] >= 0) {
        char idx[16];
        bias_index(e, n, idx, sizeof idx);
        flit(l, sizeof l, a->beta);
        line(e, "v += %s%sin2[%s];", a->beta == 1.0f ? "" : l, a->beta == 1.0f ? "" : " * ", idx);
    }
    if (k->res[0]) {
        line(e, "v += %s[o];", k->res);
    }
    tether__ocl_emit_act(e, a, "v");
    line(e, "y[o] = v;");
    close_block(e);
}

/* ---- dense + softmax --------------------------------------------------------------------- */

int tether__ocl_dense_softmax_plan(const ocl *e, const tether_ir_node *n, const tether_ir_node *sm,
                                   tether__ocl_gpu *p) {
    memset(p, 0, sizeof *p);
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    if (e->o->legacy_kernels || !buffer_io(e, n) || e->tex[sm->outputs[0]] >= 0 || y->ndim != 2 ||
        tether__ir_norm_axis(sm->attrs.axis, 2) != 1) {
        snprintf(p->why, sizeof p->why, "not a buffer dense -> softmax over its rows");
        return 0;
    }
    int64_t M = y->shape[0], N = y->shape[1], K = a->trans_a ? x->shape[0] : x->shape[1];
    if (N > 64 || K < 32) {
        snprintf(p->why, sizeof p->why, "rows of %lld over K = %lld", (long long)N, (long long)K);
        return 0;
    }
    p->vec = !a->trans_a && a->trans_b && K % 4 == 0;
    int64_t kv = p->vec ? K / 4 : K, pm = 1, NP = next_pow2(N);
    while (pm * 2 <= max_wg(e)) {
        pm *= 2;
    }
    int64_t S = next_pow2((kv + 7) / 8);
    while (S > 2 && NP * S > pm) {
        S /= 2;
    }
    if (NP * S > pm) {
        snprintf(p->why, sizeof p->why, "%lld outputs per row over the work-group size",
                 (long long)N);
        return 0;
    }
    int64_t RP = NP * S >= 64 ? 1 : 64 / (NP * S), wg = RP * NP * S;
    if ((wg + RP * NP) * 4 > local_mem(e)) {
        snprintf(p->why, sizeof p->why, "over the device's local memory");
        return 0;
    }
    int64_t groups = (M + RP - 1) / RP;
    p->kind = TETHER__OCL_GPU_GEMV_SOFTMAX;
    p->fused_op = sm->op;
    p->split = S;
    p->npad = NP;
    p->rows = RP;
    p->local = wg;
    p->global = groups * wg;
    p->total = M * N < p->global ? M * N : p->global;
    p->serial = (kv + S - 1) / S;
    snprintf(p->why, sizeof p->why,
             "split-K GEMV with %s '%s' fused: %lld work-items share each output's K = %lld, "
             "%lld row%s of %lld per work-group of %lld, the %s in local memory",
             sm->op == TETHER_OP_LOG_SOFTMAX ? "log_softmax" : "softmax",
             tether__cg_comment_text(sm->name), (long long)S, (long long)K, (long long)RP,
             RP == 1 ? "" : "s", (long long)N, (long long)wg,
             sm->op == TETHER_OP_LOG_SOFTMAX ? "log_softmax" : "softmax");
    return 1;
}

static void body_dense_softmax(ocl *e, const tether_ir_node *n, const kern *k,
                               const tether__ocl_gpu *p) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    long long M = y->shape[0], N = y->shape[1];
    long long S = p->split, NP = p->npad, RP = p->rows;
    line(e, "__local float red[%lld];", (long long)p->local);
    line(e, "__local float vals[%lld];", RP * NP);
    line(e, "const int lid = (int)get_local_id(0);");
    line(e, "const int s = lid %% %lld, slot = lid / %lld;", S, S);
    line(e, "const int j = slot %% %lld, rr = slot / %lld;", NP, NP);
    line(e, "const int i = (int)get_group_id(0) * %lld + rr;", RP);
    line(e, "const int o = i * %lld + j;", N);
    line(e, "const int valid = i < %lld && j < %lld;", M, N);
    line(e, "float acc = 0.0f;");
    open_block(e, "if (valid)");
    tether__ocl_dense_dot(e, n, p->vec, "s", S);
    close_block(e);
    line(e, "red[lid] = acc;");
    line(e, "barrier(CLK_LOCAL_MEM_FENCE);");
    open_block(e, "for (int h = %lld; h > 0; h >>= 1)", S / 2);
    open_block(e, "if (s < h)");
    line(e, "red[lid] += red[lid + h];");
    close_block(e);
    line(e, "barrier(CLK_LOCAL_MEM_FENCE);");
    close_block(e);
    open_block(e, "if (s == 0)");
    line(e, "float v = 0.0f;");
    open_block(e, "if (valid)");
    char l[48];
    flit(l, sizeof l, a->alpha);
    line(e, "v = %s%sred[lid];", a->alpha == 1.0f ? "" : l, a->alpha == 1.0f ? "" : " * ");
    if (tether__ir_main_inputs(n) > 2 && n->inputs[2] >= 0) {
        char idx[16];
        bias_index(e, n, idx, sizeof idx);
        flit(l, sizeof l, a->beta);
        line(e, "v += %s%sin2[%s];", a->beta == 1.0f ? "" : l, a->beta == 1.0f ? "" : " * ", idx);
    }
    if (k->res[0]) {
        line(e, "v += %s[o];", k->res);
    }
    tether__ocl_emit_act(e, a, "v");
    close_block(e);
    line(e, "vals[slot] = v;");
    close_block(e);
    line(e, "barrier(CLK_LOCAL_MEM_FENCE);");
    /* the softmax of row i, as emit_opencl_kernels.c's: the maximum from the first value, the
     * sum of exp(v - max) */
    open_block(e, "if (s == 0 && j == 0 && i < %lld)", M);
    line(e, "const __local float *vr = vals + rr * %lld;", NP);
    line(e, "__global float *ys = y + i * %lld;", N);
    line(e, "float mx = vr[0];");
    open_block(e, "for (int c = 1; c < %lld; ++c)", N);
    line(e, "mx = vr[c] > mx ? vr[c] : mx;");
    close_block(e);
    line(e, "float sum = 0.0f;");
    open_block(e, "for (int c = 0; c < %lld; ++c)", N);
    line(e, "sum += exp(vr[c] - mx);");
    close_block(e);
    if (p->fused_op == TETHER_OP_LOG_SOFTMAX) {
        line(e, "const float ls = log(sum);");
        open_block(e, "for (int c = 0; c < %lld; ++c)", N);
        line(e, "ys[c] = (vr[c] - mx) - ls;");
    } else {
        open_block(e, "for (int c = 0; c < %lld; ++c)", N);
        line(e, "ys[c] = exp(vr[c] - mx) / sum;");
    }
    close_block(e);
    close_block(e);
}

/* A dense node whose output only softmax/log_softmax node `next` (the next node with a kernel)
 * reads over its rows: that node's index when one kernel computes both (p planned), else -1. */
int tether__ocl_fused_softmax(const ocl *e, int idx, int next, tether__ocl_gpu *p) {
    const tether_ir_node *n = &e->g->nodes[idx];
    if (n->op != TETHER_OP_DENSE || next < 0 || tether__ocl_custom_owns(e, n)) {
        return -1;
    }
    const tether_ir_node *sm = &e->g->nodes[next];
    int t = n->outputs[0];
    if ((sm->op != TETHER_OP_SOFTMAX && sm->op != TETHER_OP_LOG_SOFTMAX) || sm->inputs[0] != t ||
        e->outmem[t] >= 0 || T(e, t)->alias_of >= 0) {
        return -1;
    }
    for (int i = 0; i < e->g->nnodes; i++) { /* no other reader, no alias of it */
        const tether_ir_node *m = &e->g->nodes[i];
        for (int j = 0; j < m->ninputs; j++) {
            if (i != next && m->inputs[j] >= 0 && root_of(e, m->inputs[j]) == t) {
                return -1;
            }
        }
    }
    /* a tuned dense or softmax keeps its own kernel (what `tether tune` measured, and the
     * candidates it builds for each workload launch each node) */
    char key[TETHER_WORKLOAD_MAX];
    for (int w = 0; w < 2; w++) {
        if (tether_workload_key(e->g, w ? next : idx, key, sizeof key)) {
            continue;
        }
        for (int i = 0; i < e->o->nnode_schedules; i++) {
            const tether_node_schedule *ns = &e->o->node_schedules[i];
            if (ns->workload && !strcmp(ns->workload, key)) {
                return -1;
            }
        }
    }
    return tether__ocl_dense_softmax_plan(e, n, sm, p) ? next : -1;
}

/* ---- conv2d ----------------------------------------------------------------------------------
 */

static void conv_dims(const ocl *e, const tether_ir_node *n, int64_t *CG, int64_t *OG, int64_t *P) {
    const tether_ir_tensor *w = T(e, n->inputs[1]), *y = T(e, n->outputs[0]);
    *CG = w->shape[1];
    *OG = y->shape[1] / n->attrs.groups;
    *P = y->shape[0] * y->shape[2] * y->shape[3];
}

static int plan_conv(const ocl *e, const tether_ir_node *n, const kern *k,
                     const tether_schedule *ns, tether__ocl_gpu *p) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *w = T(e, n->inputs[1]), *y = T(e, n->outputs[0]);
    int64_t CG, OG, P;
    conv_dims(e, n, &CG, &OG, &P);
    if (k->img >= 0) {
        snprintf(p->why, sizeof p->why, "weights in a texture:weight image");
        return 0;
    }
    if (CG == 1 && OG == 1) { /* depthwise */
        int64_t OW = y->shape[3], q = (OW + 3) / 4;
        int64_t total = y->shape[0] * y->shape[1] * y->shape[2] * q;
        p->kind = TETHER__OCL_GPU_DW;
        p->total = total;
        int64_t wg = ns && ns->local_size > 0 ? ns->local_size : e->local;
        wg = wg > max_wg(e) ? max_wg(e) : wg;
        p->local = total >= wg ? wg : 0;
        p->global = p->local ? (total + wg - 1) / wg * wg : total;
        p->serial = w->shape[2] * w->shape[3];
        p->vec = a->strides[1] == 1 ? 4 : a->strides[1] == 2 ? 8 : 0;
        snprintf(p->why, sizeof p->why,
                 "depthwise: 4 output columns per work-item%s, %lld work-items",
                 p->vec == 4   ? ", rows read with vload4"
                 : p->vec == 8 ? ", rows read with vload8 (stride 2)"
                               : " (stride > 2: gathered)",
                 (long long)total);
        return 1;
    }
    int tiles = ns && (ns->ocl_tile_m > 0 || ns->ocl_tile_n > 0);
    if (!e->o->conv_gemm && !tiles && tether__ocl_splitk_plan(e, n, k, ns, p)) {
        return 1;
    }
    if (a->groups > 1 && (OG < 8 || CG < 4)) {
        snprintf(p->why, sizeof p->why,
                 "%lld groups of %lld input and %lld output channels: too small for GEMM tiles",
                 (long long)a->groups, (long long)CG, (long long)OG);
        return 0;
    }
    if (!e->o->conv_gemm && !(ns && (ns->ocl_tile_m > 0 || ns->ocl_tile_n > 0))) {
        snprintf(p->why, sizeof p->why,
                 "general conv: the tiled-GEMM kernel only with tuned tiles (ocl_tile_m/n) or "
                 "conv_gemm");
        return 0;
    }
    int64_t tm = ns && ns->ocl_tile_m > 0 ? ns->ocl_tile_m : OG >= 64 ? 64 : OG >= 32 ? 32 : 16;
    int64_t tn = ns && ns->ocl_tile_n > 0 ? ns->ocl_tile_n : P >= 64 ? 64 : P >= 32 ? 32 : 16;
    int64_t G = a->groups, KK = CG * w->shape[2] * w->shape[3];
    int tuned = ns && (ns->ocl_tile_m > 0 || ns->ocl_tile_n > 0);
    /* smaller tiles until the device is filled (or 16 x 16) */
    while (!tuned && G * ((OG + tm - 1) / tm) * ((P + tn - 1) / tn) < fill_groups(e) &&
           (tm > 16 || tn > 16)) {
        if (tm >= tn && tm > 16) {
            tm /= 2;
        } else {
            tn /= 2;
        }
    }
    int64_t tk = 16;
    while ((tm / 4) * (tn / 4) > max_wg(e) && (tm > 16 || tn > 16)) {
        if (tm >= tn) {
            tm /= 2;
        } else {
            tn /= 2;
        }
    }
    while (tk > 4 && tk * (tm + tn) * 4 > local_mem(e)) {
        tk /= 2;
    }
    if ((tm / 4) * (tn / 4) > max_wg(e) || tk * (tm + tn) * 4 > local_mem(e)) {
        snprintf(p->why, sizeof p->why,
                 "the smallest tile (16 x 16) is over the device's work-group size or local "
                 "memory");
        return 0;
    }
    p->kind = TETHER__OCL_GPU_CONV;
    p->tm = tm;
    p->tn = tn;
    p->tk = tk;
    p->local = (tm / 4) * (tn / 4);
    int64_t groups = G * ((OG + tm - 1) / tm) * ((P + tn - 1) / tn);
    p->global = groups * p->local;
    p->total = y->shape[0] * y->shape[1] * y->shape[2] * y->shape[3];
    p->total = p->total < p->global ? p->total : p->global;
    p->serial = (KK + tk - 1) / tk * tk;
    snprintf(p->why, sizeof p->why,
             "conv as GEMM: %lld x %lld tiles (output channels x pixels), K = %lld in slices of "
             "%lld through local memory, 4 x 4 per work-item, %lld work-group%s of %lld",
             (long long)tm, (long long)tn, (long long)KK, (long long)tk, (long long)groups,
             groups == 1 ? "" : "s", (long long)p->local);
    return 1;
}

/* The weight of output channel `oc` (an int expression) at reduction index `kk` (0 ..
 * CG*KH*KW): packed OIHW4o or plain OIHW. */
static void weight_expr(const ocl *e, const tether_ir_node *n, const kern *k, const char *oc,
                        const char *kk, char *out, size_t cap) {
    const tether_ir_tensor *w = T(e, n->inputs[1]);
    long long KK = w->shape[1] * w->shape[2] * w->shape[3];
    int r = k->packed ? snprintf(out, cap, "wp[(((%s) >> 2) * %lld + (%s)) * 4 + ((%s) & 3)]", oc,
                                 KK, kk, oc)
                      : snprintf(out, cap, "in1[(%s) * %lld + (%s)]", oc, KK, kk);
    if (r < 0 || (size_t)r >= cap) {
        snprintf(out, cap, "#error weight expression too long"); /* never compiles silently */
    }
}

/* v = bias + acc, + residual, act; y written (n, oc, q = oh * OW + ow as C expressions). */
static void conv_out(ocl *e, const tether_ir_node *n, const kern *k, const char *acc) {
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    long long O = y->shape[1], Q = y->shape[2] * y->shape[3];
    int bias = tether__ir_main_inputs(n) > 2 && n->inputs[2] >= 0;
    line(e, "const int yo = (nn * %lld + oc) * %lld + q;", O, Q);
    line(e, "float v = %s%s;", acc, bias ? " + in2[oc]" : "");
    if (k->res[0]) {
        line(e, "v += %s[yo];", k->res);
    }
    tether__ocl_emit_act(e, &n->attrs, "v");
    line(e, "y[yo] = v;");
}

static void body_conv(ocl *e, const tether_ir_node *n, const kern *k, const tether__ocl_gpu *p) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *w = T(e, n->inputs[1]),
                           *y = T(e, n->outputs[0]);
    long long C = x->shape[1], H = x->shape[2], W = x->shape[3];
    long long OH = y->shape[2], OW = y->shape[3], Q = OH * OW;
    long long KH = w->shape[2], KW = w->shape[3];
    int64_t CG, OG, P;
    conv_dims(e, n, &CG, &OG, &P);
    long long KK = CG * KH * KW, TM = p->tm, TN = p->tn, TK = p->tk, WG = p->local;
    long long MT = (OG + TM - 1) / TM, NT = (P + TN - 1) / TN;
    int pointwise = KH == 1 && KW == 1 && a->strides[0] == 1 && a->strides[1] == 1 &&
                    a->pads[0] == 0 && a->pads[1] == 0;
    line(e, "__local float As[%lld];", TK * TM);
    line(e, "__local float Bs[%lld];", TK * TN);
    line(e, "const int lid = (int)get_local_id(0);");
    line(e, "int grp = (int)get_group_id(0);");
    line(e, "const int pt = grp %% %lld;", NT);
    line(e, "grp /= %lld;", NT);
    line(e, "const int mt = grp %% %lld;", MT);
    line(e, "const int g = grp / %lld;", MT);
    line(e, "const int tm = lid / %lld;", TN / 4);
    line(e, "const int tn = lid %% %lld;", TN / 4);
    line(e, "float acc[16];");
    open_block(e, "for (int r = 0; r < 16; ++r)");
    line(e, "acc[r] = 0.0f;");
    close_block(e);
    open_block(e, "for (int k0 = 0; k0 < %lld; k0 += %lld)", KK, TK);
    /* weights: As[kq][m] */
    open_block(e, "for (int t = lid; t < %lld; t += %lld)", TK * TM, WG);
    line(e, "const int m = t %% %lld, kk = k0 + t / %lld;", TM, TM);
    line(e, "const int ocg = mt * %lld + m;", TM);
    char wv[160], ocx[64];
    snprintf(ocx, sizeof ocx, "g * %lld + ocg", (long long)OG);
    weight_expr(e, n, k, ocx, "kk", wv, sizeof wv);
    line(e, "As[t] = (ocg < %lld && kk < %lld) ? %s : 0.0f;", (long long)OG, KK, wv);
    close_block(e);
    /* input: Bs[kq][p] */
    open_block(e, "for (int t = lid; t < %lld; t += %lld)", TK * TN, WG);
    line(e, "const int pp = pt * %lld + t %% %lld, kk = k0 + t / %lld;", TN, TN, TN);
    line(e, "float xv = 0.0f;");
    open_block(e, "if (pp < %lld && kk < %lld)", (long long)P, KK);
    line(e, "const int nn = pp / %lld, q = pp %% %lld;", Q, Q);
    if (pointwise) {
        line(e, "xv = in0[(nn * %lld + g * %lld + kk) * %lld + q];", C, (long long)CG, Q);
    } else {
        line(e, "const int ic = kk / %lld, kr = kk %% %lld;", KH * KW, KH * KW);
        line(e, "const int ih = (q / %lld) * %lld - %lld + (kr / %lld) * %lld;", OW,
             (long long)a->strides[0], (long long)a->pads[0], KW, (long long)a->dilations[0]);
        line(e, "const int iw = (q %% %lld) * %lld - %lld + (kr %% %lld) * %lld;", OW,
             (long long)a->strides[1], (long long)a->pads[1], KW, (long long)a->dilations[1]);
        open_block(e, "if (ih >= 0 && ih < %lld && iw >= 0 && iw < %lld)", H, W);
        line(e, "xv = in0[((nn * %lld + g * %lld + ic) * %lld + ih) * %lld + iw];", C,
             (long long)CG, H, W);
        close_block(e);
    }
    close_block(e);
    line(e, "Bs[t] = xv;");
    close_block(e);
    line(e, "barrier(CLK_LOCAL_MEM_FENCE);");
    open_block(e, "for (int kq = 0; kq < %lld; ++kq)", TK);
    for (int r = 0; r < 4; r++) {
        line(e, "const float a%d = As[kq * %lld + tm + %lld];", r, TM, r * (TM / 4));
    }
    for (int c = 0; c < 4; c++) {
        line(e, "const float b%d = Bs[kq * %lld + tn + %lld];", c, TN, c * (TN / 4));
    }
    for (int r = 0; r < 4; r++) {
        line(e,
             "acc[%d] += a%d * b0; acc[%d] += a%d * b1; acc[%d] += a%d * b2; acc[%d] += a%d * b3;",
             r * 4, r, r * 4 + 1, r, r * 4 + 2, r, r * 4 + 3, r);
    }
    close_block(e);
    line(e, "barrier(CLK_LOCAL_MEM_FENCE);");
    close_block(e);
    open_block(e, "for (int r = 0; r < 4; ++r)");
    line(e, "const int ocg = mt * %lld + tm + r * %lld;", TM, TM / 4);
    open_block(e, "if (ocg >= %lld)", (long long)OG);
    line(e, "break;");
    close_block(e);
    line(e, "const int oc = g * %lld + ocg;", (long long)OG);
    open_block(e, "for (int c = 0; c < 4; ++c)");
    line(e, "const int pp = pt * %lld + tn + c * %lld;", TN, TN / 4);
    open_block(e, "if (pp < %lld)", (long long)P);
    line(e, "const int nn = pp / %lld, q = pp %% %lld;", Q, Q);
    conv_out(e, n, k, "acc[r * 4 + c]");
    close_block(e);
    close_block(e);
    close_block(e);
}

static void body_dw(ocl *e, const tether_ir_node *n, const kern *k, const tether__ocl_gpu *p) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *w = T(e, n->inputs[1]),
                           *y = T(e, n->outputs[0]);
    long long C = x->shape[1], H = x->shape[2], W = x->shape[3];
    long long OH = y->shape[2], OW = y->shape[3], OWQ = (OW + 3) / 4;
    long long KH = w->shape[2], KW = w->shape[3];
    long long SH = a->strides[0], SW = a->strides[1], PT = a->pads[0], PL = a->pads[1];
    long long DH = a->dilations[0], DW = a->dilations[1];
    line(e, "const int owq = f %% %lld;", OWQ);
    line(e, "int q = f / %lld;", OWQ);
    line(e, "const int oh = q %% %lld;", OH);
    line(e, "q /= %lld;", OH);
    line(e, "const int oc = q %% %lld;", C);
    line(e, "const int nn = q / %lld;", C);
    line(e, "const int ow0 = owq * 4;");
    line(e, "const __global float *xc = in0 + (nn * %lld + oc) * %lld;", C, H * W);
    line(e, "const int iw0 = ow0 * %lld - %lld;", SW, PL);
    /* the window of the 4 columns lies inside the row: one vector load per kw */
    long long span = p->vec ? p->vec : 0;
    if (span) {
        line(e, "const int inside = iw0 >= 0 && iw0 + %lld < %lld;", span - 1 + (KW - 1) * DW, W);
    }
    line(e, "float4 acc = (float4)(0.0f);");
    open_block(e, "for (int kh = 0; kh < %lld; ++kh)", KH);
    line(e, "const int ih = oh * %lld - %lld + kh * %lld;", SH, PT, DH);
    open_block(e, "if (ih < 0 || ih >= %lld)", H);
    line(e, "continue;");
    close_block(e);
    line(e, "const __global float *xr = xc + ih * %lld;", W);
    open_block(e, "for (int kw = 0; kw < %lld; ++kw)", KW);
    char wv[160], kk[48];
    snprintf(kk, sizeof kk, "kh * %lld + kw", KW);
    weight_expr(e, n, k, "oc", kk, wv, sizeof wv);
    line(e, "const float wk = %s;", wv);
    line(e, "float4 x4;");
    if (span == 4) {
        open_block(e, "if (inside)");
        line(e, "x4 = vload4(0, xr + iw0 + kw * %lld);", DW);
        close_block(e);
    } else if (span == 8) {
        open_block(e, "if (inside)");
        line(e, "x4 = vload8(0, xr + iw0 + kw * %lld).s0246;", DW);
        close_block(e);
    }
    if (span) {
        open_block(e, "else");
    } else {
        open_scope(e);
    }
    for (int l = 0; l < 4; l++) {
        line(e, "const int i%d = iw0 + %lld + kw * %lld;", l, l * SW, DW);
        line(e, "x4.s%d = (i%d >= 0 && i%d < %lld) ? xr[i%d] : 0.0f;", l, l, l, W, l);
    }
    close_block(e);
    line(e, "acc += x4 * wk;");
    close_block(e);
    close_block(e);
    line(e, "const float accl[4] = {acc.x, acc.y, acc.z, acc.w};");
    open_block(e, "for (int l = 0; l < 4 && ow0 + l < %lld; ++l)", OW);
    line(e, "const int q = oh * %lld + ow0 + l;", OW);
    conv_out(e, n, k, "accl[l]");
    close_block(e);
}

/* ---- entry ------------------------------------------------------------------------------------
 */

int tether__ocl_gpu_plan(const ocl *e, const tether_ir_node *n, const kern *k,
                         const tether_schedule *ns, tether__ocl_gpu *p) {
    if (tether__ocl_quant_op(n->op)) { /* the only kernels of these (emit_opencl_quant.c) */
        return tether__ocl_quant_plan(e, n, k, ns, p);
    }
    memset(p, 0, sizeof *p);
    if (e->o->legacy_kernels) {
        snprintf(p->why, sizeof p->why, "legacy kernels asked for");
        return 0;
    }
    if (!buffer_io(e, n)) {
        snprintf(p->why, sizeof p->why, "an operand in a texture image");
        return 0;
    }
    if (n->op == TETHER_OP_DENSE) {
        return plan_dense(e, n, ns, p);
    }
    if (n->op == TETHER_OP_CONV2D) {
        return plan_conv(e, n, k, ns, p);
    }
    if (n->op == TETHER_OP_SOFTMAX || n->op == TETHER_OP_LOG_SOFTMAX ||
        n->op == TETHER_OP_HARDMAX || n->op == TETHER_OP_LAYER_NORM) {
        return tether__ocl_rows_plan(e, n, ns, p);
    }
    return 0;
}

void tether__ocl_gpu_body(ocl *e, const tether_ir_node *n, const kern *k,
                          const tether__ocl_gpu *p) {
    switch (p->kind) {
    case TETHER__OCL_GPU_QUANT:
        tether__ocl_quant_body(e, n, k, p);
        break;
    case TETHER__OCL_GPU_GEMV:
        body_dense(e, n, k, p);
        break;
    case TETHER__OCL_GPU_CONV:
        body_conv(e, n, k, p);
        break;
    case TETHER__OCL_GPU_DW:
        body_dw(e, n, k, p);
        break;
    case TETHER__OCL_GPU_ROWS:
        tether__ocl_rows_body(e, n, p);
        break;
    case TETHER__OCL_GPU_CONV_SPLITK:
        tether__ocl_splitk_body(e, n, k, p);
        break;
    case TETHER__OCL_GPU_GEMV_SOFTMAX:
        body_dense_softmax(e, n, k, p);
        break;
    default:
        line(e, "#error \"tether: no GPU kernel of this kind\"");
        break;
    }
}
