/*
 * The OpenCL backend's split-K convolution (docs/codegen.md, "GPU kernels"): a conv2d with few
 * outputs and a long reduction (the late layers of a MobileNet: 56 x 3 x 3 outputs over 336
 * input channels; a U-Net's 3x3 convs at low occupancy) ran as one work-item per 4 output
 * channels looping over all C*KH*KW taps: a few warps per GPU, latency-bound (48 us for a
 * 336 -> 56 pointwise conv on an H100). Here S work-items share each output block's reduction:
 * work-item (r, s) of a group takes taps s, s + S, ... of output block r (4 output channels at
 * one pixel, the packed OIHW4o weights read with vload4 as the direct kernel does), the S
 * partial float4 sums are reduced in local memory, and work-item s = 0 adds bias, residual and
 * the activation. Adjacent work-items of a group are adjacent pixels of the same 4 channels
 * (the input read coalesced, the weights broadcast).
 *
 * What must stay true: as every kernel with barriers, no early return (global = groups x WG
 * exactly; rows past the outputs compute nothing and write nothing but reach every barrier);
 * only packed weights in a buffer and buffer operands (emit_opencl_gpu.c checks the operands);
 * the 4 lanes of a block never straddle groups (G == 1 or O/G a multiple of 4); `total` is at
 * most global (the blocks, as the direct kernel counts); the sum is that of the direct kernel in
 * another order.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/compiler.h"

static int64_t pow2_at_most(int64_t v) {
    int64_t p = 1;
    while (p * 2 <= v) {
        p *= 2;
    }
    return p;
}

int tether__ocl_splitk_plan(const ocl *e, const tether_ir_node *n, const kern *k,
                            const tether_schedule *ns, tether__ocl_gpu *p) {
    const tether_ir_tensor *w = T(e, n->inputs[1]), *y = T(e, n->outputs[0]);
    int64_t G = n->attrs.groups, O = y->shape[1], OG = O / G;
    int64_t KK = w->shape[1] * w->shape[2] * w->shape[3];
    int64_t P = y->shape[2] * y->shape[3], blocks = y->shape[0] * ((O + 3) / 4) * P;
    if (!k->packed) {
        snprintf(p->why, sizeof p->why, "weights not packed in the params buffer");
        return 0;
    }
    if (G > 1 && OG % 4) {
        snprintf(p->why, sizeof p->why,
                 "%lld output channels per group: a block of 4 would straddle groups",
                 (long long)OG);
        return 0;
    }
    /* about 2048 work-items per compute unit (the device's, or 16), at least 8 taps each */
    int64_t cu = e->o->compute_units > 0 ? e->o->compute_units : 16;
    int64_t want = cu * 2048, S;
    if (ns && ns->ocl_split_k > 0) {
        S = pow2_at_most(ns->ocl_split_k);
    } else {
        S = pow2_at_most((want + blocks - 1) / blocks);
        int64_t kmax = pow2_at_most(KK / 8 > 0 ? KK / 8 : 1);
        S = S > kmax ? kmax : S;
        S = S > 64 ? 64 : S;
    }
    int64_t mx = e->o->max_work_group_size > 0 ? e->o->max_work_group_size : 256;
    mx = pow2_at_most(mx > 1024 ? 1024 : mx);
    S = S > mx ? mx : S;
    if (S < 4 && !(ns && ns->ocl_split_k > 0)) {
        snprintf(p->why, sizeof p->why,
                 "%lld blocks of 4 outputs fill the device: no split of the %lld taps",
                 (long long)blocks, (long long)KK);
        return 0;
    }
    int64_t wg = ns && ns->local_size > 0 ? pow2_at_most(ns->local_size) : 128;
    wg = wg < S ? S : wg;
    wg = wg > mx ? mx : wg;
    int64_t lmem = e->o->local_mem_size > 0 ? e->o->local_mem_size : 16384;
    if (wg * 16 > lmem) {
        snprintf(p->why, sizeof p->why, "a work-group of %lld float4 sums is over local memory",
                 (long long)wg);
        return 0;
    }
    int64_t R = wg / S, groups = (blocks + R - 1) / R;
    p->kind = TETHER__OCL_GPU_CONV_SPLITK;
    p->split = S;
    p->rows = R;
    p->local = wg;
    p->global = groups * wg;
    p->total = blocks < p->global ? blocks : p->global; /* as the direct kernel's count */
    p->serial = (KK + S - 1) / S;
    snprintf(p->why, sizeof p->why,
             "split-K conv: %lld work-items share each block of 4 output channels' %lld taps, "
             "%lld block%s per work-group of %lld, %lld work-group%s",
             (long long)S, (long long)KK, (long long)R, R == 1 ? "" : "s", (long long)wg,
             (long long)groups, groups == 1 ? "" : "s");
    return 1;
}

void tether__ocl_splitk_body(ocl *e, const tether_ir_node *n, const kern *k,
                             const tether__ocl_gpu *p) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *w = T(e, n->inputs[1]),
                           *y = T(e, n->outputs[0]);
    long long C = x->shape[1], H = x->shape[2], W = x->shape[3];
    long long O = y->shape[1], OH = y->shape[2], OW = y->shape[3], Q = OH * OW;
    long long CG = w->shape[1], KH = w->shape[2], KW = w->shape[3], KK = CG * KH * KW;
    long long G = a->groups, OG = O / G, OB = (O + 3) / 4;
    long long S = p->split, R = p->rows, WG = p->local;
    long long blocks = y->shape[0] * OB * Q;
    int pointwise = KH == 1 && KW == 1 && a->strides[0] == 1 && a->strides[1] == 1 &&
                    a->pads[0] == 0 && a->pads[1] == 0;
    int bias = tether__ir_main_inputs(n) > 2 && n->inputs[2] >= 0;
    line(e, "__local float4 red[%lld];", WG);
    line(e, "const int lid = (int)get_local_id(0);");
    line(e, "const int r = lid %% %lld, s = lid / %lld;", R, R);
    line(e, "const int b = (int)get_group_id(0) * %lld + r;", R);
    line(e, "const int q = b %% %lld;", Q);
    line(e, "const int ob = (b / %lld) %% %lld;", Q, OB);
    line(e, "const int nn = b / %lld;", Q * OB);
    line(e, "const int oh = q / %lld, ow = q %% %lld;", OW, OW);
    line(e, "float4 acc = (float4)(0.0f);");
    open_block(e, "if (b < %lld)", blocks);
    if (G == 1) {
        line(e, "const __global float *xg = in0 + nn * %lld;", C * H * W);
    } else {
        line(e, "const __global float *xg = in0 + (nn * %lld + (ob * 4 / %lld) * %lld) * %lld;", C,
             OG, CG, H * W);
    }
    open_block(e, "for (int kk = s; kk < %lld; kk += %lld)", KK, S);
    if (pointwise) {
        line(e, "acc += xg[kk * %lld + q] * vload4(ob * %lld + kk, wp);", Q, KK);
    } else {
        line(e, "const int ic = kk / %lld, kr = kk %% %lld;", KH * KW, KH * KW);
        line(e, "const int ih = oh * %lld - %lld + (kr / %lld) * %lld;", (long long)a->strides[0],
             (long long)a->pads[0], KW, (long long)a->dilations[0]);
        line(e, "const int iw = ow * %lld - %lld + (kr %% %lld) * %lld;", (long long)a->strides[1],
             (long long)a->pads[1], KW, (long long)a->dilations[1]);
        open_block(e, "if (ih >= 0 && ih < %lld && iw >= 0 && iw < %lld)", H, W);
        line(e, "acc += xg[(ic * %lld + ih) * %lld + iw] * vload4(ob * %lld + kk, wp);", H, W, KK);
        close_block(e);
    }
    close_block(e);
    close_block(e);
    line(e, "red[lid] = acc;");
    line(e, "barrier(CLK_LOCAL_MEM_FENCE);");
    open_block(e, "for (int h = %lld; h > 0; h >>= 1)", S / 2);
    open_block(e, "if (s < h)");
    line(e, "red[lid] += red[lid + h * %lld];", R);
    close_block(e);
    line(e, "barrier(CLK_LOCAL_MEM_FENCE);");
    close_block(e);
    open_block(e, "if (s == 0 && b < %lld)", blocks);
    line(e, "const float sum[4] = {red[lid].x, red[lid].y, red[lid].z, red[lid].w};");
    open_block(e, "for (int l = 0; l < 4; ++l)");
    line(e, "const int oc = ob * 4 + l;");
    open_block(e, "if (oc >= %lld)", O);
    line(e, "break;");
    close_block(e);
    line(e, "const int yo = (nn * %lld + oc) * %lld + q;", O, Q);
    line(e, "float v = sum[l]%s;", bias ? " + in2[oc]" : "");
    if (k->res[0]) {
        line(e, "v += %s[yo];", k->res);
    }
    tether__ocl_emit_act(e, a, "v");
    line(e, "y[yo] = v;");
    close_block(e);
    close_block(e);
}
