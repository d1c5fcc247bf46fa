/*
 * The OpenCL backend's global pool + dense kernel (docs/codegen.md, "Fewer launches"): a
 * global_avg_pool or global_max_pool whose output only one dense reads (through Flatten, Reshape
 * or Squeeze aliases: a classifier head) gets no kernel of its own; the dense's split-K GEMV
 * kernel first pools its input into local memory (every work-group pools the whole, small input
 * again, its work-items over the channels), then computes its outputs from there. One launch
 * instead of two; on a GPU a launch costs more than the pooling repeated per work-group.
 *
 * What must stay true: the fusion is declined (both nodes keep their kernels) unless the pooled
 * tensor is small (it and the reduction buffer fit the device's local memory, the pooling
 * repeated by every work-group reads at most 4x what the two kernels read together, and stays
 * a short loop per work-item); the pool's input never shares bytes with the dense's output (the
 * memory plan keeps it live up to the dense, tether__memplan_intervals, and it is checked here
 * again: work-groups still pooling must never see another's outputs); pooling and dot products
 * sum in the order of the two separate kernels (the pool sums each plane in order and divides by
 * its size; the GEMV's split-K partial sums are reduced by the same tree), so the results are
 * those of the unfused kernels; every work-item reaches every barrier.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/compiler.h"

static int tuned(const ocl *e, int idx) {
    char key[TETHER_WORKLOAD_MAX];
    if (tether_workload_key(e->g, idx, key, sizeof key)) {
        return 0;
    }
    for (int i = 0; i < e->o->nnode_schedules; i++) {
        const tether_node_schedule *ns = &e->o->node_schedules[i];
        if (ns->workload && !strcmp(ns->workload, key)) {
            return 1;
        }
    }
    return 0;
}

/* Whether the storage of tensors a (elements na) and b (nb) share any element. */
static int overlap(const ocl *e, loc a, int64_t na, loc b, int64_t nb) {
    (void)e;
    return a.mem >= 0 && a.mem == b.mem && a.off < b.off + nb && b.off < a.off + na;
}

int tether__ocl_fused_pool(const ocl *e, int idx, int next, int after, tether__ocl_gpu *p) {
    const tether_ir_graph *g = e->g;
    const tether_ir_node *n = &g->nodes[idx];
    memset(p, 0, sizeof *p);
    if ((n->op != TETHER_OP_GLOBAL_AVG_POOL && n->op != TETHER_OP_GLOBAL_MAX_POOL) || next < 0 ||
        e->o->legacy_kernels || tether__ocl_custom_owns(e, n) || n->attrs.act != TETHER_ACT_NONE ||
        n->attrs.has_residual) {
        return -1;
    }
    const tether_ir_node *d = &g->nodes[next];
    int x = n->inputs[0], t = n->outputs[0];
    if (d->op != TETHER_OP_DENSE || tether__ocl_custom_owns(e, d) || d->inputs[0] < 0 ||
        root_of(e, d->inputs[0]) != t || T(e, t)->alias_of >= 0 || e->outmem[t] >= 0 ||
        e->tex[x] >= 0 || e->tex[t] >= 0 || e->tex[d->outputs[0]] >= 0 ||
        T(e, x)->dtype.code != kDLFloat || T(e, x)->dtype.bits != 32 || T(e, x)->ndim < 3 ||
        tether__ocl_typed_graph(g)) {
        return -1;
    }
    for (int i = 0; i < g->noutputs; i++) { /* no alias of the pooled tensor is an output */
        if (root_of(e, g->outputs[i]) == t) {
            return -1;
        }
    }
    for (int i = 0; i < g->nnodes; i++) { /* the dense reads it once, nothing else does */
        const tether_ir_node *m = &g->nodes[i];
        for (int j = 0; j < m->ninputs; j++) {
            int u = m->inputs[j];
            if (u >= 0 && root_of(e, u) == t && !tether__ir_is_alias_op(m->op) &&
                !(i == next && j == 0)) {
                return -1;
            }
        }
    }
    if (tuned(e, idx) || tuned(e, next)) {
        return -1; /* what `tether tune` measured launches each node */
    }
    tether__ocl_gpu sm;
    if (after >= 0 && tether__ocl_fused_softmax(e, next, after, &sm) >= 0) {
        return -1; /* the dense keeps its softmax fused instead */
    }
    /* the GEMV of the dense, with work-groups of up to 256 (more outputs per work-group: fewer
     * work-groups pool again) */
    tether_schedule sc;
    memset(&sc, 0, sizeof sc);
    int64_t mx = e->o->max_work_group_size > 0 ? e->o->max_work_group_size : 256;
    sc.local_size = (int)(mx < 256 ? mx : 256);
    kern k0;
    memset(&k0, 0, sizeof k0);
    if (!tether__ocl_gpu_plan(e, d, &k0, &sc, p) || p->kind != TETHER__OCL_GPU_GEMV) {
        memset(p, 0, sizeof *p);
        return -1;
    }
    const tether_ir_tensor *xt = T(e, x), *yt = T(e, d->outputs[0]);
    int64_t pooled = (int64_t)tether_ir_tensor_elements(T(e, t));
    int64_t hw = prod(xt->shape, 2, xt->ndim), wg = p->local, groups = p->global / p->local;
    int64_t M = yt->shape[0], N = yt->shape[1], K = pooled / (M > 0 ? M : 1);
    int64_t lmem = e->o->local_mem_size > 0 ? e->o->local_mem_size : 16384;
    int64_t pool_serial = (pooled + wg - 1) / wg * hw;
    if (hw < 1 || pooled < 1 || 4 * (pooled + wg) > lmem ||
        groups * pooled * hw > 4 * (pooled * hw + K * N) || pool_serial > 4096) {
        memset(p, 0, sizeof *p);
        return -1;
    }
    if (overlap(e, e->store[x], pooled * hw, dest_of(e, d->outputs[0]), M * N)) {
        memset(p, 0, sizeof *p);
        return -1; /* a plan that did not keep the input live: two kernels */
    }
    char why[sizeof p->why];
    int w = snprintf(why, sizeof why,
                     "%s '%.60s' fused (each work-group pools %lld x %lld into "
                     "local memory); ",
                     tether_op_name(n->op), tether__cg_comment_text(n->name), (long long)pooled,
                     (long long)hw);
    size_t used = w > 0 && (size_t)w < sizeof why ? (size_t)w : sizeof why - 1;
    memcpy(why + used, p->why, strnlen(p->why, sizeof why - 1 - used));
    why[used + strnlen(p->why, sizeof why - 1 - used)] = '\0';
    memcpy(p->why, why, sizeof why);
    p->kind = TETHER__OCL_GPU_POOL_GEMV;
    p->pool_hw = hw;
    p->pool_max = n->op == TETHER_OP_GLOBAL_MAX_POOL;
    p->serial += pool_serial;
    return next;
}

void tether__ocl_pool_gemv_body(ocl *e, const tether_ir_node *n, const kern *k,
                                const tether__ocl_gpu *p) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    long long M = y->shape[0], N = y->shape[1], S = p->split, wg = p->local, hw = p->pool_hw;
    long long pooled = (long long)tether_ir_tensor_elements(T(e, n->inputs[0]));
    long long K = pooled / (M > 0 ? M : 1);
    line(e, "__local float tt_x[%lld];", pooled);
    line(e, "__local float red[%lld];", wg);
    line(e, "const int lid = (int)get_local_id(0);");
    /* the pool, as emit_opencl_kernels.c's global pool kernel computes each channel */
    open_block(e, "for (int q = lid; q < %lld; q += %lld)", pooled, wg);
    line(e, "const __global float *xp = in0 + q * %lld;", hw);
    line(e, "float pacc = %s;", p->pool_max ? "-INFINITY" : "0.0f");
    open_block(e, "for (int h = 0; h < %lld; ++h)", hw);
    if (p->pool_max) {
        line(e, "const float v = xp[h];");
        line(e, "pacc = v > pacc ? v : pacc;");
    } else {
        line(e, "pacc += xp[h];");
    }
    close_block(e);
    if (p->pool_max) {
        line(e, "tt_x[q] = pacc;");
    } else {
        line(e, "tt_x[q] = pacc / (float)%lld;", hw);
    }
    close_block(e);
    line(e, "barrier(CLK_LOCAL_MEM_FENCE);");
    /* the split-K GEMV of emit_opencl_gpu.c, A from local memory */
    line(e, "const int s = lid %% %lld;", S);
    line(e, "const int o = (int)get_group_id(0) * %lld + lid / %lld;", (long long)p->rows, S);
    line(e, "const int j = o %% %lld;", N);
    line(e, "const int i = o / %lld;", N);
    line(e, "float acc = 0.0f;");
    open_block(e, "if (o < %lld)", M * N);
    if (p->vec) {
        line(e, "const __local float *ar = tt_x + i * %lld;", K);
        line(e, "const __global float *br = in1 + j * %lld;", K);
        line(e, "float4 a4 = (float4)(0.0f);");
        open_block(e, "for (int k = s; k < %lld; k += %lld)", K / 4, S);
        line(e, "a4 += vload4(k, ar) * vload4(k, br);");
        close_block(e);
        line(e, "acc = (a4.x + a4.y) + (a4.z + a4.w);");
    } else {
        open_block(e, "for (int k = s; k < %lld; k += %lld)", K, S);
        char av[64], bv[64];
        if (a->trans_a) {
            snprintf(av, sizeof av, "tt_x[k * %lld + i]", M);
        } else {
            snprintf(av, sizeof av, "tt_x[i * %lld + k]", K);
        }
        if (a->trans_b) {
            snprintf(bv, sizeof bv, "in1[j * %lld + k]", K);
        } else {
            snprintf(bv, sizeof bv, "in1[k * %lld + j]", N);
        }
        line(e, "acc += %s * %s;", av, bv);
        close_block(e);
    }
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
        tether__ocl_dense_bias_index(e, n, idx, sizeof idx);
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
