/*
 * The OpenCL backend's kernels: one OpenCL C kernel body per operator family (conv2d with buffer,
 * packed or texture weights and texture activations, dense, matmul, the elementwise operators
 * from their formulas, softmax, pools, transpose, concat, pad, norms, reduce, resize) and the
 * fused epilogues. The kernel's signature, its launch step and memory objects are
 * emit_opencl.c's.
 *
 * What must stay true: a body reads and writes only its kern's arguments (in0.., y, the images)
 * at the offsets the memory assignment gave; every work-item checks `f < total` first (the
 * signature does); float and int only; tether__ocl_kernel_body names every operator.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

static void unravel(ocl *e, const char *flat, const int64_t *shape, int nd, const char *p) {
    if (nd == 0) {
        return;
    }
    line(e, "int %s_r = %s;", p, flat);
    for (int d = nd - 1; d >= 1; d--) {
        if (shape[d] == 1) {
            line(e, "const int %s%d = 0;", p, d);
        } else {
            line(e, "const int %s%d = %s_r %% %lld;", p, d, p, (long long)shape[d]);
            line(e, "%s_r /= %lld;", p, (long long)shape[d]);
        }
    }
    line(e, "const int %s0 = %s_r;", p, p);
}

/* Offset into t (row-major, broadcast against an output of rank ond) from the output's
 * multi-index p0.. (or `flat` when shapes are equal). */
static void bcast_expr(char *out, size_t n, const tether_ir_tensor *t, const int64_t *oshape,
                       int ond, const char *p, const char *flat) {
    if (t->ndim == ond && !memcmp(t->shape, oshape, sizeof(int64_t) * (size_t)ond)) {
        snprintf(out, n, "%s", flat);
        return;
    }
    if (tether_ir_tensor_elements(t) == 1) {
        snprintf(out, n, "0");
        return;
    }
    size_t o = 0;
    int64_t stride = 1;
    out[0] = 0;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1) {
            int od = ond - t->ndim + i;
            o += (size_t)snprintf(out + o, n - o, "%s%s%d * %lld", o ? " + " : "", p, od,
                                  (long long)stride);
        }
        stride *= t->shape[i];
    }
    if (!o) {
        snprintf(out, n, "0");
    }
}

static int needs_unravel(const tether_ir_tensor *t, const tether_ir_tensor *o) {
    return !(t->ndim == o->ndim &&
             !memcmp(t->shape, o->shape, sizeof(int64_t) * (size_t)o->ndim)) &&
           tether_ir_tensor_elements(t) != 1;
}

/* v = act(v): the formula of the operator whose ACT column the activation is (ops.def). A
 * failure (a bug) writes an #error, so the program never builds. */
static void emit_act(ocl *e, const tether_ir_attrs *a, const char *v) {
    if (a->act == TETHER_ACT_NONE) {
        return;
    }
    tether_ir_attrs t;
    tether__act_attrs(a, &t);
    char pre[512], ex[1024];
    if (tether__formula_text(tether__act_op(a->act), TETHER__FORMULA_OPENCL, v, NULL, &t, NULL,
                             NULL, pre, sizeof pre, ex, sizeof ex)) {
        line(e, "#error \"tether: no OpenCL formula for activation %s\"", tether_act_name(a->act));
        return;
    }
    if (pre[0]) {
        line(e, "%s = %s;", v, pre);
    }
    line(e, "%s = %s;", v, ex);
}

/* ---- kernels ------------------------------------------------------------------------------- */

static int has_bias(const tether_ir_node *n) {
    return tether__ir_main_inputs(n) > 2 && n->inputs[2] >= 0;
}

static const char *const lanes4[] = {"x", "y", "z", "w"};

/* `const float4 w4 = ...;` the weights of input channel `ic` (an expression) for output block ob.
 */
static void conv_weights4(ocl *e, const tether_ir_node *n, const kern *k, const char *var,
                          const char *ic) {
    const tether_ir_tensor *w = T(e, n->inputs[1]);
    long long CG = w->shape[1], KH = w->shape[2], KW = w->shape[3];
    if (k->packed) {
        line(e, "const float4 %s = vload4(ob * %lld + ((%s) * %lld + kh) * %lld + kw, wp);", var,
             CG * KH * KW, ic, KH, KW);
    } else {
        line(e,
             "const float4 %s = read_imagef(m%d, TT_SAMPLER, (int2)(((%s) * %lld + kh) * %lld + "
             "kw, ob));",
             var, k->img, ic, KH, KW);
    }
}

/* The accumulation of a conv whose input is a texture (N = 1): depthwise, a texel of the input
 * holds the 4 channels of the output texel; dense, each input texel feeds 4 weight vectors. */
static void conv_texture_input(ocl *e, const tether_ir_node *n, const kern *k, int xt) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    long long C = x->shape[1], H = x->shape[2], W = x->shape[3];
    long long OH = y->shape[2], OW = y->shape[3], OB = (y->shape[1] + 3) / 4;
    int depthwise = a->groups > 1;
    line(e, "const int ow = f %% %lld;", OW);
    line(e, "int q = f / %lld;", OW);
    line(e, "const int oh = q %% %lld;", OH);
    line(e, "const int ob = q / %lld %% %lld;", OH, OB);
    line(e, "const int n = 0; /* a texture holds one image (N = 1) */");
    line(e, "const int ih0 = oh * %lld - %lld;", (long long)a->strides[0], (long long)a->pads[0]);
    line(e, "const int iw0 = ow * %lld - %lld;", (long long)a->strides[1], (long long)a->pads[1]);
    line(e, "float4 acc = (float4)(0.0f);");
    if (!depthwise) {
        open_block(e, "for (int ic4 = 0; ic4 < %lld; ++ic4)", C / 4);
    }
    open_block(e, "for (int kh = 0; kh < %lld; ++kh)", (long long)a->kernel[0]);
    line(e, "const int ih = ih0 + kh * %lld;", (long long)a->dilations[0]);
    open_block(e, "if (ih < 0 || ih >= %lld)", H);
    line(e, "continue;");
    close_block(e);
    open_block(e, "for (int kw = 0; kw < %lld; ++kw)", (long long)a->kernel[1]);
    line(e, "const int iw = iw0 + kw * %lld;", (long long)a->dilations[1]);
    open_block(e, "if (iw < 0 || iw >= %lld)", W);
    line(e, "continue;");
    close_block(e);
    line(e, "const float4 x4 = read_imagef(m%d, TT_SAMPLER, (int2)(iw, %s * %lld + ih));", xt,
         depthwise ? "ob" : "ic4", H);
    if (depthwise) {
        conv_weights4(e, n, k, "w4", "0");
        line(e, "acc += x4 * w4;");
    } else {
        for (int j = 0; j < 4; j++) {
            char ic[32], var[8];
            snprintf(ic, sizeof ic, "ic4 * 4 + %d", j);
            snprintf(var, sizeof var, "w%d", j);
            conv_weights4(e, n, k, var, ic);
            line(e, "acc += x4.%s * w%d;", lanes4[j], j);
        }
    }
    close_block(e);
    close_block(e);
    if (!depthwise) {
        close_block(e);
    }
}

/* The 4 output channels of acc (channels ob*4 .. ob*4+3 of pixel (n, oh, ow)) with bias,
 * residual (a texture texel, rt >= 0, or buffer elements) and activation, written as one texel
 * (yt >= 0; N = 1 and O a multiple of 4 there) or as the buffer elements of the channels below
 * O. */
static void conv_store(ocl *e, const tether_ir_node *n, const kern *k, int yt, int rt, int bias) {
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    long long O = y->shape[1], OH = y->shape[2], OW = y->shape[3];
    if (rt >= 0) {
        line(e, "const float4 r4 = read_imagef(m%d, TT_SAMPLER, (int2)(ow, ob * %lld + oh));", rt,
             OH);
    }
    if (yt >= 0) {
        line(e, "float4 o4;");
    }
    for (int j = 0; j < 4; j++) {
        if (yt >= 0 || O % 4 == 0) {
            open_scope(e);
        } else {
            open_block(e, "if (ob * 4 + %d < %lld)", j, O);
        }
        line(e, "const int oc = ob * 4 + %d;", j);
        line(e, "float v = acc.%s%s;", lanes4[j], bias ? " + in2[oc]" : "");
        if (rt >= 0) {
            line(e, "v += r4.%s;", lanes4[j]);
        } else if (k->res[0]) {
            line(e, "v += %s[((n * %lld + oc) * %lld + oh) * %lld + ow];", k->res, O, OH, OW);
        }
        emit_act(e, &n->attrs, "v");
        if (yt >= 0) {
            line(e, "o4.%s = v;", lanes4[j]);
        } else {
            line(e, "y[((n * %lld + oc) * %lld + oh) * %lld + ow] = v;", O, OH, OW);
        }
        close_block(e);
    }
    if (yt >= 0) {
        line(e, "write_imagef(m%d, (int2)(ow, ob * %lld + oh), o4);", yt, OH);
    }
}

static void k_conv2d(ocl *e, const tether_ir_node *n, const kern *k) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *w = T(e, n->inputs[1]),
                           *y = T(e, n->outputs[0]);
    long long C = x->shape[1], H = x->shape[2], W = x->shape[3];
    long long O = y->shape[1], OH = y->shape[2], OW = y->shape[3];
    long long CG = w->shape[1], KH = w->shape[2], KW = w->shape[3];
    long long G = a->groups, OG = O / G;
    long long SH = a->strides[0], SW = a->strides[1], PT = a->pads[0], PL = a->pads[1];
    long long DH = a->dilations[0], DW = a->dilations[1];
    int bias = has_bias(n);
    if (k->img < 0 && !k->packed) {
        line(e, "const int ow = f %% %lld;", OW);
        line(e, "int q = f / %lld;", OW);
        line(e, "const int oh = q %% %lld;", OH);
        line(e, "q /= %lld;", OH);
        line(e, "const int oc = q %% %lld;", O);
        line(e, "const int n = q / %lld;", O);
        if (G == 1) {
            line(e, "const __global float *xg = in0 + n * %lld;", C * H * W);
        } else {
            line(e, "const __global float *xg = in0 + (n * %lld + (oc / %lld) * %lld) * %lld;", C,
                 OG, CG, H * W);
        }
        line(e, "const __global float *wo = in1 + oc * %lld;", CG * KH * KW);
        line(e, "const int ih0 = oh * %lld - %lld;", SH, PT);
        line(e, "const int iw0 = ow * %lld - %lld;", SW, PL);
        line(e, "float acc = %s;", bias ? "in2[oc]" : "0.0f");
        open_block(e, "for (int ic = 0; ic < %lld; ++ic)", CG);
        open_block(e, "for (int kh = 0; kh < %lld; ++kh)", KH);
        line(e, "const int ih = ih0 + kh * %lld;", DH);
        open_block(e, "if (ih < 0 || ih >= %lld)", H);
        line(e, "continue;");
        close_block(e);
        open_block(e, "for (int kw = 0; kw < %lld; ++kw)", KW);
        line(e, "const int iw = iw0 + kw * %lld;", DW);
        open_block(e, "if (iw < 0 || iw >= %lld)", W);
        line(e, "continue;");
        close_block(e);
        line(e, "acc += xg[(ic * %lld + ih) * %lld + iw] * wo[(ic * %lld + kh) * %lld + kw];", H, W,
             KH, KW);
        close_block(e);
        close_block(e);
        close_block(e);
        line(e, "float v = acc;");
        if (k->res[0]) {
            line(e, "v += %s[f];", k->res);
        }
        emit_act(e, a, "v");
        line(e, "y[f] = v;");
        return;
    }
    /* texture or packed weights: a work-item computes 4 output channels (one texel of weights) */
    long long OB = (O + 3) / 4;
    int same_group = G == 1 || OG % 4 == 0;
    int xt = e->tex[n->inputs[0]], yt = e->tex[n->outputs[0]];
    int rt = n->attrs.has_residual ? e->tex[n->inputs[n->ninputs - 1]] : -1;
    if (xt >= 0) {
        conv_texture_input(e, n, k, xt);
        conv_store(e, n, k, yt, rt, bias);
        return;
    }
    line(e, "const int ow = f %% %lld;", OW);
    line(e, "int q = f / %lld;", OW);
    line(e, "const int oh = q %% %lld;", OH);
    line(e, "q /= %lld;", OH);
    line(e, "const int ob = q %% %lld;", OB);
    line(e, "const int n = q / %lld;", OB);
    if (same_group) {
        if (G == 1) {
            line(e, "const __global float *xg = in0 + n * %lld;", C * H * W);
        } else {
            line(e, "const __global float *xg = in0 + (n * %lld + (ob * 4 / %lld) * %lld) * %lld;",
                 C, OG, CG, H * W);
        }
    } else {
        /* lanes of one texel belong to different groups (depthwise): one input base per lane */
        for (int j = 0; j < 4; j++) {
            line(e,
                 "const __global float *x%d = in0 + (n * %lld + (min(ob * 4 + %d, %lld) / %lld) * "
                 "%lld) * %lld;",
                 j, C, j, O - 1, OG, CG, H * W);
        }
    }
    line(e, "const int ih0 = oh * %lld - %lld;", SH, PT);
    line(e, "const int iw0 = ow * %lld - %lld;", SW, PL);
    line(e, "float4 acc = (float4)(0.0f);");
    open_block(e, "for (int ic = 0; ic < %lld; ++ic)", CG);
    open_block(e, "for (int kh = 0; kh < %lld; ++kh)", KH);
    line(e, "const int ih = ih0 + kh * %lld;", DH);
    open_block(e, "if (ih < 0 || ih >= %lld)", H);
    line(e, "continue;");
    close_block(e);
    open_block(e, "for (int kw = 0; kw < %lld; ++kw)", KW);
    line(e, "const int iw = iw0 + kw * %lld;", DW);
    open_block(e, "if (iw < 0 || iw >= %lld)", W);
    line(e, "continue;");
    close_block(e);
    if (k->packed) {
        line(e, "const float4 w4 = vload4(ob * %lld + (ic * %lld + kh) * %lld + kw, wp);",
             CG * KH * KW, KH, KW);
    } else {
        line(e,
             "const float4 w4 = read_imagef(m%d, TT_SAMPLER, (int2)((ic * %lld + kh) * %lld + kw, "
             "ob));",
             k->img, KH, KW);
    }
    line(e, "const int xo = (ic * %lld + ih) * %lld + iw;", H, W);
    if (same_group) {
        line(e, "acc += xg[xo] * w4;");
    } else {
        line(e, "acc += (float4)(x0[xo], x1[xo], x2[xo], x3[xo]) * w4;");
    }
    close_block(e);
    close_block(e);
    close_block(e);
    conv_store(e, n, k, yt, rt, bias);
}

/* The dot product of dense's output (i, j) into `acc` (declared by the caller): k from `start` in
 * steps of `step` (1: the whole reduction), K/4 float4 loads when vec (x row-major, w transposed,
 * K % 4 == 0). Shared by k_dense and the split-K GPU kernel (emit_opencl_gpu.c). */
void tether__ocl_dense_dot(ocl *e, const tether_ir_node *n, bool vec, const char *start,
                           long long step) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    long long M = y->shape[0], N = y->shape[1];
    long long K = a->trans_a ? x->shape[0] : x->shape[1];
    char inc[32];
    if (step == 1) {
        snprintf(inc, sizeof inc, "++k");
    } else {
        snprintf(inc, sizeof inc, "k += %lld", step);
    }
    if (vec) {
        line(e, "const __global float *ar = in0 + i * %lld;", K);
        line(e, "const __global float *br = in1 + j * %lld;", K);
        line(e, "float4 a4 = (float4)(0.0f);");
        open_block(e, "for (int k = %s; k < %lld; %s)", start, K / 4, inc);
        line(e, "a4 += vload4(k, ar) * vload4(k, br);");
        close_block(e);
        line(e, "acc = (a4.x + a4.y) + (a4.z + a4.w);");
        return;
    }
    char av[64], bv[64];
    if (a->trans_a) {
        snprintf(av, sizeof av, "in0[k * %lld + i]", M);
    } else {
        snprintf(av, sizeof av, "in0[i * %lld + k]", K);
    }
    if (a->trans_b) {
        snprintf(bv, sizeof bv, "in1[j * %lld + k]", K);
    } else {
        snprintf(bv, sizeof bv, "in1[k * %lld + j]", N);
    }
    open_block(e, "for (int k = %s; k < %lld; %s)", start, K, inc);
    line(e, "acc += %s * %s;", av, bv);
    close_block(e);
}

static void k_dense(ocl *e, const tether_ir_node *n, const kern *k) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    long long N = y->shape[1];
    long long K = a->trans_a ? x->shape[0] : x->shape[1];
    line(e, "const int j = f %% %lld;", N);
    line(e, "const int i = f / %lld;", N);
    line(e, "float acc = 0.0f;");
    tether__ocl_dense_dot(e, n, !a->trans_a && a->trans_b && K % 4 == 0 && K >= 4, "0", 1);
    char l[48];
    flit(l, sizeof l, a->alpha);
    if (a->alpha == 1.0f) {
        line(e, "float v = acc;");
    } else {
        line(e, "float v = %s * acc;", l);
    }
    if (has_bias(n)) {
        const tether_ir_tensor *c = T(e, n->inputs[2]);
        /* C broadcast to [M, N]: [], [1], [N], [M,1], [1,N], [M,N] */
        char idx[16];
        if (tether_ir_tensor_elements(c) == 1) {
            snprintf(idx, sizeof idx, "0");
        } else if (c->ndim == 1) {
            snprintf(idx, sizeof idx, "j");
        } else if (c->shape[0] != 1 && c->shape[1] != 1) {
            snprintf(idx, sizeof idx, "f");
        } else if (c->shape[0] != 1) {
            snprintf(idx, sizeof idx, "i");
        } else {
            snprintf(idx, sizeof idx, "j");
        }
        flit(l, sizeof l, a->beta);
        if (a->beta == 1.0f) {
            line(e, "v += in2[%s];", idx);
        } else {
            line(e, "v += %s * in2[%s];", l, idx);
        }
    }
    if (k->res[0]) {
        line(e, "v += %s[f];", k->res);
    }
    emit_act(e, a, "v");
    line(e, "y[f] = v;");
}

/* Batch part of a matmul operand's offset: sum over the output's batch dims it does not
 * broadcast. */
static void batch_expr(char *out, size_t n, const tether_ir_tensor *t, int ond) {
    size_t o = 0;
    out[0] = 0;
    int64_t stride = t->shape[t->ndim - 1] * t->shape[t->ndim - 2];
    for (int i = t->ndim - 3; i >= 0; i--) {
        if (t->shape[i] != 1) {
            o += (size_t)snprintf(out + o, n - o, " + o%d * %lld", ond - t->ndim + i,
                                  (long long)stride);
        }
        stride *= t->shape[i];
    }
}

static void k_matmul(ocl *e, const tether_ir_node *n, const kern *k) {
    tether_ir_tensor va, vb, yv;
    tether__ir_matmul_view(e->g, n, &va, &vb, &yv);
    int nd = yv.ndim;
    long long N = yv.shape[nd - 1], K = va.shape[va.ndim - 1];
    unravel(e, "f", yv.shape, nd, "o");
    char ab[256], bb[256];
    batch_expr(ab, sizeof ab, &va, nd);
    batch_expr(bb, sizeof bb, &vb, nd);
    line(e, "const __global float *ar = in0 + o%d * %lld%s;", nd - 2, K, ab);
    line(e, "const __global float *bc = in1 + o%d%s;", nd - 1, bb);
    line(e, "float acc = 0.0f;");
    open_block(e, "for (int k = 0; k < %lld; ++k)", K);
    line(e, "acc += ar[k] * bc[k * %lld];", N);
    close_block(e);
    line(e, "float v = acc;");
    if (k->res[0]) {
        line(e, "v += %s[f];", k->res);
    }
    emit_act(e, &n->attrs, "v");
    line(e, "y[f] = v;");
}

/* The node's elementwise formula (ops.def) as OpenCL C on the operands x and y (y NULL: unary);
 * pre as tether__formula_text's. A failure (a row without a formula: a bug) writes an #error, so
 * the program never builds. */
static void formula_expr(const tether_ir_node *n, const char *x, const char *y, char *pre,
                         size_t npre, char *out, size_t nout) {
    if (tether__formula_text(n->op, TETHER__FORMULA_OPENCL, x, y, &n->attrs, NULL, NULL, pre, npre,
                             out, nout)) {
        snprintf(out, nout, "0.0f;\n#error \"tether: no OpenCL formula for operator %s\"",
                 tether_op_name(n->op));
    }
}

/* The texel coordinate of work-item f of an NCHW4c texture (rows of W texels). */
static void texel_pos(ocl *e, const tether_ir_tensor *y) {
    line(e, "const int2 pos = (int2)(f %% %lld, f / %lld);", (long long)y->shape[3],
         (long long)y->shape[3]);
}

static void k_binary(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *z = T(e, n->inputs[1]),
                           *y = T(e, n->outputs[0]);
    int yt = e->tex[n->outputs[0]];
    if (yt >= 0 && n->op != TETHER_OP_PRELU) {
        char ex[256];
        texel_pos(e, y);
        line(e, "const float4 a0 = read_imagef(m%d, TT_SAMPLER, pos);", e->tex[n->inputs[0]]);
        line(e, "const float4 a1 = read_imagef(m%d, TT_SAMPLER, pos);", e->tex[n->inputs[1]]);
        formula_expr(n, "a0", "a1", NULL, 0, ex, sizeof ex);
        line(e, "write_imagef(m%d, pos, %s);", yt, ex);
        return;
    }
    if (needs_unravel(x, y) || needs_unravel(z, y)) {
        unravel(e, "f", y->shape, y->ndim, "o");
    }
    char i0[256], i1[256], a0[300], a1[300], ex[700];
    bcast_expr(i0, sizeof i0, x, y->shape, y->ndim, "o", "f");
    bcast_expr(i1, sizeof i1, z, y->shape, y->ndim, "o", "f");
    snprintf(a0, sizeof a0, "in0[%s]", i0);
    snprintf(a1, sizeof a1, "in1[%s]", i1);
    if (n->op == TETHER_OP_PRELU) {
        formula_expr(n, "v", a1, NULL, 0, ex, sizeof ex);
        line(e, "const float v = %s;", a0);
        line(e, "y[f] = %s;", ex);
        return;
    }
    formula_expr(n, a0, a1, NULL, 0, ex, sizeof ex);
    line(e, "y[f] = %s;", ex);
}

/* Elementwise operators: one element per work-item, or with texture operands (all of them, the
 * storage-scope pass keeps them together) one texel, the same expression on float4. */
static void k_unary(ocl *e, const tether_ir_node *n) {
    char pre[512], ex[1024];
    int yt = e->tex[n->outputs[0]];
    if (yt >= 0) {
        texel_pos(e, T(e, n->outputs[0]));
        line(e, "float4 v = read_imagef(m%d, TT_SAMPLER, pos);", e->tex[n->inputs[0]]);
    } else {
        line(e, "float v = in0[f];");
    }
    formula_expr(n, "v", NULL, pre, sizeof pre, ex, sizeof ex);
    if (pre[0]) {
        line(e, "v = %s;", pre);
    }
    line(e, "v = %s;", ex);
    if (yt >= 0) {
        line(e, "write_imagef(m%d, pos, v);", yt);
    } else {
        line(e, "y[f] = v;");
    }
}

static void k_softmax(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    int ax = tether__ir_norm_axis(n->attrs.axis, y->ndim);
    long long len = y->shape[ax], inner = prod(y->shape, ax + 1, y->ndim);
    line(e, "const int p = f / %lld;", inner);
    line(e, "const int q = f %% %lld;", inner);
    line(e, "const __global float *xs = in0 + p * %lld + q;", len * inner);
    line(e, "__global float *ys = y + p * %lld + q;", len * inner);
    line(e, "float mx = xs[0];");
    line(e, "int at = 0;");
    open_block(e, "for (int k = 1; k < %lld; ++k)", len);
    line(e, "const float v = xs[k * %lld];", inner);
    open_block(e, "if (v > mx)");
    line(e, "mx = v;");
    line(e, "at = k;");
    close_block(e);
    close_block(e);
    if (n->op == TETHER_OP_HARDMAX) { /* 1 at the first maximum */
        open_block(e, "for (int k = 0; k < %lld; ++k)", len);
        line(e, "ys[k * %lld] = k == at ? 1.0f : 0.0f;", inner);
        close_block(e);
        return;
    }
    line(e, "float sum = 0.0f;");
    open_block(e, "for (int k = 0; k < %lld; ++k)", len);
    line(e, "sum += exp(xs[k * %lld] - mx);", inner);
    close_block(e);
    if (n->op == TETHER_OP_LOG_SOFTMAX) {
        line(e, "const float ls = log(sum);");
        open_block(e, "for (int k = 0; k < %lld; ++k)", len);
        line(e, "ys[k * %lld] = (xs[k * %lld] - mx) - ls;", inner, inner);
    } else {
        open_block(e, "for (int k = 0; k < %lld; ++k)", len);
        line(e, "ys[k * %lld] = exp(xs[k * %lld] - mx) / sum;", inner, inner);
    }
    close_block(e);
}

static void k_pool(ocl *e, const tether_ir_node *n) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    long long H = x->shape[2], W = x->shape[3], OH = y->shape[2], OW = y->shape[3];
    int is_max = n->op == TETHER_OP_MAX_POOL;
    int incl = !is_max && a->count_include_pad;
    line(e, "const int ow = f %% %lld;", OW);
    line(e, "const int oh = (f / %lld) %% %lld;", OW, OH);
    line(e, "const int nc = f / %lld;", OW * OH);
    line(e, "const __global float *xp = in0 + nc * %lld;", H * W);
    line(e, "const int ih0 = oh * %lld - %lld;", (long long)a->strides[0], (long long)a->pads[0]);
    line(e, "const int iw0 = ow * %lld - %lld;", (long long)a->strides[1], (long long)a->pads[1]);
    line(e, "float acc = %s;", is_max ? "-INFINITY" : "0.0f");
    if (!is_max) {
        line(e, "int cnt = 0;");
    }
    open_block(e, "for (int kh = 0; kh < %lld; ++kh)", (long long)a->kernel[0]);
    line(e, "const int ih = ih0 + kh * %lld;", (long long)a->dilations[0]);
    open_block(e, "for (int kw = 0; kw < %lld; ++kw)", (long long)a->kernel[1]);
    line(e, "const int iw = iw0 + kw * %lld;", (long long)a->dilations[1]);
    if (incl) {
        open_block(e, "if (ih < %lld && iw < %lld)", H + a->pads[2], W + a->pads[3]);
        line(e, "cnt++;");
        close_block(e);
    }
    open_block(e, "if (ih < 0 || ih >= %lld || iw < 0 || iw >= %lld)", H, W);
    line(e, "continue;");
    close_block(e);
    line(e, "const float v = xp[ih * %lld + iw];", W);
    if (is_max) {
        line(e, "acc = v > acc ? v : acc;");
    } else {
        line(e, "acc += v;");
        if (!incl) {
            line(e, "cnt++;");
        }
    }
    close_block(e);
    close_block(e);
    if (!is_max) {
        line(e, "acc /= (float)cnt;");
    }
    line(e, "y[f] = acc;");
}

static void k_global_pool(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    long long plane = prod(x->shape, 2, x->ndim);
    int is_max = n->op == TETHER_OP_GLOBAL_MAX_POOL;
    line(e, "const __global float *xp = in0 + f * %lld;", plane);
    line(e, "float acc = %s;", is_max ? "-INFINITY" : "0.0f");
    open_block(e, "for (int k = 0; k < %lld; ++k)", plane);
    if (is_max) {
        line(e, "const float v = xp[k];");
        line(e, "acc = v > acc ? v : acc;");
    } else {
        line(e, "acc += xp[k];");
    }
    close_block(e);
    if (is_max) {
        line(e, "y[f] = acc;");
    } else {
        line(e, "y[f] = acc / (float)%lld;", plane);
    }
}

static void k_transpose(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    int64_t st[TETHER_IR_MAX_NDIM];
    int64_t s = 1;
    for (int i = x->ndim - 1; i >= 0; i--) {
        st[i] = s;
        s *= x->shape[i];
    }
    unravel(e, "f", y->shape, y->ndim, "o");
    char ex[512];
    size_t o = 0;
    ex[0] = 0;
    for (int i = 0; i < y->ndim; i++) {
        if (y->shape[i] != 1) {
            o += (size_t)snprintf(ex + o, sizeof ex - o, "%so%d * %lld", o ? " + " : "", i,
                                  (long long)st[n->attrs.ints[i]]);
        }
    }
    line(e, "y[f] = in0[%s];", o ? ex : "0");
}

static void k_concat(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    int ax = (int)n->attrs.axis;
    long long L = y->shape[ax], inner = prod(y->shape, ax + 1, y->ndim);
    line(e, "const int i = f %% %lld;", inner);
    line(e, "const int k = (f / %lld) %% %lld;", inner, L);
    line(e, "const int o = f / %lld;", inner * L);
    long long start = 0;
    int first = 1;
    for (int j = 0; j < n->ninputs; j++) {
        long long Lj = T(e, n->inputs[j])->shape[ax];
        if (Lj == 0) {
            continue;
        }
        if (first) {
            open_block(e, "if (k < %lld)", start + Lj);
        } else {
            e->depth--;
            open_block(e, "} else if (k < %lld)", start + Lj);
        }
        first = 0;
        line(e, "y[f] = %s[(o * %lld + (k - %lld)) * %lld + i];", in_name(j), Lj, start, inner);
        start += Lj;
    }
    if (!first) {
        close_block(e);
    }
}

static void k_pad(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    int nd = x->ndim;
    unravel(e, "f", y->shape, nd, "o");
    char off[512], cond[1024];
    size_t oo = 0, co = 0;
    off[0] = cond[0] = 0;
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        long long pb = n->attrs.ints[i], pe = n->attrs.ints[i + nd];
        line(e, "const int k%d = o%d - %lld;", i, i, pb);
        if (pb || pe) {
            co += (size_t)snprintf(cond + co, sizeof cond - co, "%sk%d >= 0 && k%d < %lld",
                                   co ? " && " : "", i, i, (long long)x->shape[i]);
        }
        oo += (size_t)snprintf(off + oo, sizeof off - oo, "%sk%d * %lld", oo ? " + " : "", i,
                               (long long)s);
        s *= x->shape[i];
    }
    char l[48];
    flit(l, sizeof l, n->attrs.value);
    if (co) {
        line(e, "y[f] = (%s) ? in0[%s] : %s;", cond, oo ? off : "0", l);
    } else {
        line(e, "y[f] = in0[%s];", oo ? off : "0");
    }
}

static void k_batch_norm(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    long long C = x->shape[1], inner = prod(x->shape, 2, x->ndim);
    char eps[48];
    flit(eps, sizeof eps, n->attrs.epsilon);
    line(e, "const int c = (f / %lld) %% %lld;", inner, C);
    line(e, "y[f] = (in0[f] - in3[c]) / sqrt(in4[c] + %s) * in1[c] + in2[c];", eps);
}

static void k_layer_norm(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    int ax = tether__ir_norm_axis(n->attrs.axis, x->ndim);
    long long inner = prod(x->shape, ax, x->ndim);
    int bias = n->ninputs > 2 && n->inputs[2] >= 0;
    char eps[48];
    flit(eps, sizeof eps, n->attrs.epsilon);
    line(e, "const __global float *xs = in0 + f * %lld;", inner);
    line(e, "__global float *ys = y + f * %lld;", inner);
    line(e, "float mean = 0.0f;");
    open_block(e, "for (int k = 0; k < %lld; ++k)", inner);
    line(e, "mean += xs[k];");
    close_block(e);
    line(e, "mean /= (float)%lld;", inner);
    line(e, "float var = 0.0f;");
    open_block(e, "for (int k = 0; k < %lld; ++k)", inner);
    line(e, "const float d = xs[k] - mean;");
    line(e, "var += d * d;");
    close_block(e);
    line(e, "var /= (float)%lld;", inner);
    line(e, "const float rs = sqrt(var + %s);", eps);
    open_block(e, "for (int k = 0; k < %lld; ++k)", inner);
    line(e, "ys[k] = (xs[k] - mean) / rs * in1[k]%s;", bias ? " + in2[k]" : "");
    close_block(e);
}

/* Every reduction: one work-item per output, the reduced dimensions looped (log_sum_exp twice:
 * the maximum, then the sum of exp(v - max)). */
static void k_reduce(ocl *e, const tether_ir_node *n) {
    tether_op op = n->op;
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    int nd = x->ndim;
    int red[TETHER_IR_MAX_NDIM] = {0};
    for (int i = 0; i < n->attrs.nints; i++) {
        red[n->attrs.ints[i]] = 1;
    }
    int64_t kshape[TETHER_IR_MAX_NDIM], st[TETHER_IR_MAX_NDIM];
    int64_t s = 1, R = 1;
    for (int i = nd - 1; i >= 0; i--) {
        st[i] = s;
        s *= x->shape[i];
        kshape[i] = red[i] ? 1 : x->shape[i];
        R *= red[i] ? x->shape[i] : 1;
    }
    unravel(e, "f", kshape, nd, "o");
    char base[512];
    size_t o = 0;
    base[0] = 0;
    for (int i = 0; i < nd; i++) {
        if (!red[i] && x->shape[i] != 1) {
            o += (size_t)snprintf(base + o, sizeof base - o, "%so%d * %lld", o ? " + " : "", i,
                                  (long long)st[i]);
        }
    }
    line(e, "const __global float *xb = in0 + %s;", o ? base : "0");
    const char *init = op == TETHER_OP_REDUCE_PROD  ? "1.0f"
                       : op == TETHER_OP_REDUCE_MAX ? "-INFINITY"
                       : op == TETHER_OP_REDUCE_MIN ? "INFINITY"
                                                    : "0.0f";
    line(e, "float acc = %s;", init);
    line(e, "float m = -INFINITY;");
    char idx[512];
    size_t io = 0;
    idx[0] = 0;
    for (int pass = op == TETHER_OP_REDUCE_LOG_SUM_EXP ? 0 : 1; pass < 2; pass++) {
        int loops = 0;
        io = 0;
        idx[0] = 0;
        for (int i = 0; i < nd; i++) {
            if (red[i] && x->shape[i] != 1) {
                open_block(e, "for (int r%d = 0; r%d < %lld; ++r%d)", i, i, (long long)x->shape[i],
                           i);
                io += (size_t)snprintf(idx + io, sizeof idx - io, "%sr%d * %lld", io ? " + " : "",
                                       i, (long long)st[i]);
                loops++;
            }
        }
        line(e, "const float v = xb[%s];", io ? idx : "0");
        if (pass == 0) {
            line(e, "m = fmax(m, v);");
        } else if (op == TETHER_OP_REDUCE_MAX) {
            line(e, "acc = v > acc ? v : acc;");
        } else if (op == TETHER_OP_REDUCE_MIN) {
            line(e, "acc = v < acc ? v : acc;");
        } else if (op == TETHER_OP_REDUCE_PROD) {
            line(e, "acc *= v;");
        } else if (op == TETHER_OP_REDUCE_L1) {
            line(e, "acc += fabs(v);");
        } else if (op == TETHER_OP_REDUCE_L2 || op == TETHER_OP_REDUCE_SUM_SQUARE) {
            line(e, "acc += v * v;");
        } else if (op == TETHER_OP_REDUCE_LOG_SUM_EXP) {
            line(e, "acc += exp(v - m);");
        } else {
            line(e, "acc += v;");
        }
        while (loops--) {
            close_block(e);
        }
    }
    if (op == TETHER_OP_REDUCE_MEAN) {
        line(e, "y[f] = acc / (float)%lld;", (long long)R);
    } else if (op == TETHER_OP_REDUCE_L2) {
        line(e, "y[f] = sqrt(acc);");
    } else if (op == TETHER_OP_REDUCE_LOG_SUM) {
        line(e, "y[f] = log(acc);");
    } else if (op == TETHER_OP_REDUCE_LOG_SUM_EXP) {
        line(e, "y[f] = m + log(acc);");
    } else {
        line(e, "y[f] = acc;");
    }
}

static void k_resize(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    unravel(e, "f", y->shape, 4, "o");
    line(e, "y[f] = in0[((o0 * %lld + o1) * %lld + o2 / %lld) * %lld + o3 / %lld];",
         (long long)x->shape[1], (long long)x->shape[2], (long long)n->attrs.scales[0],
         (long long)x->shape[3], (long long)n->attrs.scales[1]);
}

/* The longest serial loop of a work-item of emit_opencl_kernels.c's kernel for n (the report's
 * measure of how much a kernel leaves to one lane). */
int64_t tether__ocl_legacy_serial(const ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = n->ninputs > 0 && n->inputs[0] >= 0 ? T(e, n->inputs[0]) : NULL;
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    int64_t ye = (int64_t)tether_ir_tensor_elements(y);
    tether_op op = n->op;
    if (op == TETHER_OP_CONV2D) {
        const tether_ir_tensor *w = T(e, n->inputs[1]);
        return w->shape[1] * w->shape[2] * w->shape[3];
    }
    if (op == TETHER_OP_DENSE) {
        return n->attrs.trans_a ? x->shape[0] : x->shape[1];
    }
    if (op == TETHER_OP_MATMUL) {
        return x->shape[x->ndim - 1];
    }
    if (op == TETHER_OP_MAX_POOL || op == TETHER_OP_AVG_POOL) {
        return (int64_t)n->attrs.kernel[0] * n->attrs.kernel[1];
    }
    if (op == TETHER_OP_SOFTMAX || op == TETHER_OP_LOG_SOFTMAX || op == TETHER_OP_HARDMAX ||
        op == TETHER_OP_LAYER_NORM) {
        return y->shape[tether__ir_norm_axis(n->attrs.axis, y->ndim)];
    }
    if (op == TETHER_OP_GLOBAL_AVG_POOL || op == TETHER_OP_GLOBAL_MAX_POOL ||
        op == TETHER_OP_REDUCE_MEAN || op == TETHER_OP_REDUCE_SUM || op == TETHER_OP_REDUCE_MAX ||
        op == TETHER_OP_REDUCE_MIN || op == TETHER_OP_REDUCE_PROD || op == TETHER_OP_REDUCE_L1 ||
        op == TETHER_OP_REDUCE_L2 || op == TETHER_OP_REDUCE_LOG_SUM ||
        op == TETHER_OP_REDUCE_LOG_SUM_EXP || op == TETHER_OP_REDUCE_SUM_SQUARE) {
        return x && ye > 0 ? (int64_t)tether_ir_tensor_elements(x) / ye : 1;
    }
    return 1;
}

void tether__ocl_kernel_body(ocl *e, const tether_ir_node *n, const kern *k) {
    switch (n->op) {
    case TETHER_OP_CONV2D:
        k_conv2d(e, n, k);
        break;
    case TETHER_OP_DENSE:
        k_dense(e, n, k);
        break;
    case TETHER_OP_MATMUL:
        k_matmul(e, n, k);
        break;
        TETHER__CASES_BINARY
    case TETHER_OP_PRELU:
        k_binary(e, n);
        break;
    case TETHER_OP_SOFTMAX:
    case TETHER_OP_LOG_SOFTMAX:
    case TETHER_OP_HARDMAX:
        k_softmax(e, n);
        break;
    case TETHER_OP_MAX_POOL:
    case TETHER_OP_AVG_POOL:
        k_pool(e, n);
        break;
    case TETHER_OP_GLOBAL_AVG_POOL:
    case TETHER_OP_GLOBAL_MAX_POOL:
        k_global_pool(e, n);
        break;
    case TETHER_OP_RESHAPE:
    case TETHER_OP_FLATTEN:
    case TETHER_OP_SQUEEZE:
    case TETHER_OP_UNSQUEEZE:
        line(e, "y[f] = in0[f];"); /* an alias that is a graph output: a copy */
        break;
    case TETHER_OP_TRANSPOSE:
        k_transpose(e, n);
        break;
    case TETHER_OP_CONCAT:
        k_concat(e, n);
        break;
    case TETHER_OP_PAD:
        k_pad(e, n);
        break;
    case TETHER_OP_BATCH_NORM:
        k_batch_norm(e, n);
        break;
    case TETHER_OP_LAYER_NORM:
        k_layer_norm(e, n);
        break;
    case TETHER_OP_REDUCE_MEAN:
    case TETHER_OP_REDUCE_SUM:
    case TETHER_OP_REDUCE_MAX:
    case TETHER_OP_REDUCE_MIN:
    case TETHER_OP_REDUCE_PROD:
    case TETHER_OP_REDUCE_L1:
    case TETHER_OP_REDUCE_L2:
    case TETHER_OP_REDUCE_LOG_SUM:
    case TETHER_OP_REDUCE_LOG_SUM_EXP:
    case TETHER_OP_REDUCE_SUM_SQUARE:
        k_reduce(e, n);
        break;
    case TETHER_OP_CONV_ND:
    case TETHER_OP_CONV_TRANSPOSE:
        break; /* emit_opencl_layers.c writes their kernels (tether__ocl_layers_owns) */
    case TETHER_OP_QUANTIZE: /* emit_opencl_quant.c (tether__ocl_gpu_plan sends them there) */
    case TETHER_OP_DEQUANTIZE:
    case TETHER_OP_QCONV:
    case TETHER_OP_QMATMUL:
    case TETHER_OP_QADD: /* issue 28 integer elementwise/pooling */
    case TETHER_OP_QMUL:
    case TETHER_OP_QLUT:
    case TETHER_OP_QMAX_POOL:
    case TETHER_OP_QAVG_POOL:
        break;
    case TETHER_OP_RESIZE_NEAREST:
        k_resize(e, n);
        break;
    case TETHER_OP_CUSTOM: /* emit_opencl_custom.c writes its launch kernel */
        line(e, "#error \"tether: a custom operator reached the generic kernel emitter\"");
    case TETHER_OP_WHERE: /* no kernel: refused by check_support (emit_opencl.c) */
        TETHER__CASES_DATA
    case TETHER_OP_NLL_LOSS:
    case TETHER_OP_NLL_LOSS_SUM:
    case TETHER_OP_NLL_LOSS_MEAN:
        break;
        TETHER__CASES_UNARY
        k_unary(e, n);
        break;
    }
}

void tether__ocl_emit_act(ocl *e, const tether_ir_attrs *a, const char *v) {
    emit_act(e, a, v);
}
