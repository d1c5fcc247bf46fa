/*
 * The OpenCL backend's integer convolution, qconv (docs/quantization.md, "OpenCL"): 8-bit input
 * and weights, int32 accumulation, per-channel weight zero points and requantization, the int32
 * bias, the clamp. Two kernels, both 4 output channels per work-item with the 4 channels'
 * weights one char4/uchar4 (vload4 of the OIHW4o copy packed into params.bin; gathered when the
 * weights are not a constant) and int4 accumulators:
 *  - pointwise (1x1, stride 1, no padding, one group): 4 channels x 4 neighbouring pixels, the
 *    input read as char4/uchar4 (vload4 of 4 pixels of one channel plane), 16 int products per
 *    input channel;
 *  - general (any window, stride, dilation, padding and groups; depthwise included): one pixel,
 *    the input value broadcast to the 4 channels when they share a group, else gathered per
 *    channel (depthwise: 4 neighbouring planes); taps over the padding are skipped (they add
 *    (x_zp - x_zp) * w = 0).
 *
 * What must stay true: the integers equal emit_c_quant.c's qconv (and the interpreter's) for every
 * shape: the order of an exact int32 sum does not matter; lanes past O (O not a multiple of 4)
 * read clamped channels and are never stored; every work-item checks `f < total`.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/compiler.h"

typedef struct qc {
    long long N, C, H, W, O, OH, OW, KH, KW, G, CG, OG, SH, SW, DH, DW, PT, PL, OB, R;
} qc;

static void dims(const ocl *e, const tether_ir_node *n, qc *d) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *w = T(e, n->inputs[1]),
                           *y = T(e, n->outputs[0]);
    d->N = x->shape[0];
    d->C = x->shape[1];
    d->H = x->shape[2];
    d->W = x->shape[3];
    d->O = y->shape[1];
    d->OH = y->shape[2];
    d->OW = y->shape[3];
    d->KH = w->shape[2];
    d->KW = w->shape[3];
    d->G = a->groups;
    d->CG = d->C / d->G;
    d->OG = d->O / d->G;
    d->SH = a->strides[0];
    d->SW = a->strides[1];
    d->DH = a->dilations[0];
    d->DW = a->dilations[1];
    d->PT = a->pads[0];
    d->PL = a->pads[1];
    d->OB = (d->O + 3) / 4;
    d->R = d->CG * d->KH * d->KW;
}

static int pointwise(const tether_ir_node *n, const qc *d) {
    const tether_ir_attrs *a = &n->attrs;
    return d->KH == 1 && d->KW == 1 && d->G == 1 && d->SH == 1 && d->SW == 1 && !a->pads[0] &&
           !a->pads[1] && !a->pads[2] && !a->pads[3];
}

int tether__ocl_qconv_plan(const ocl *e, const tether_ir_node *n, const kern *k,
                           const tether_schedule *ns, tether__ocl_gpu *p) {
    qc d;
    dims(e, n, &d);
    const char *w = k->packed ? "weights packed OIHW4o (vload4)" : "weights gathered";
    if (pointwise(n, &d)) {
        int64_t P = d.OH * d.OW;
        tether__ocl_qsize(e, ns, d.N * d.OB * ((P + 3) / 4), p);
        p->vec = 4;
        p->serial = d.C;
        snprintf(p->why, sizeof p->why,
                 "integer pointwise conv: 4 output channels x 4 pixels per work-item (input "
                 "vload4), %s, int4 accumulators",
                 w);
        return 1;
    }
    tether__ocl_qsize(e, ns, d.N * d.OB * d.OH * d.OW, p);
    p->serial = d.R;
    snprintf(p->why, sizeof p->why,
             "integer conv%s: 4 output channels per work-item, %s, int4 accumulators",
             d.CG == 1 && d.OG == 1 ? " (depthwise)" : "", w);
    return 1;
}

/* int4 of parameter i for the 4 channels oc0 .. oc0+3 (clamped to O-1), or of 0 when absent. */
static void param4(ocl *e, const tether_ir_node *n, int i, const qc *d, const char *name) {
    if (i >= n->ninputs || n->inputs[i] < 0) {
        line(e, "const int4 %s = (int4)(0);", name);
        return;
    }
    if (tether_ir_tensor_elements(T(e, n->inputs[i])) == 1) {
        line(e, "const int4 %s = (int4)((int)%s[0]);", name, in_name(i));
        return;
    }
    line(e, "const int4 %s = (int4)((int)%s[c0], (int)%s[c1], (int)%s[c2], (int)%s[c3]);", name,
         in_name(i), in_name(i), in_name(i), in_name(i));
    (void)d;
}

/* The 4 channels' weights at tap index r (an expression) as int4, less the zero points. */
static void weights4(ocl *e, const kern *k, const qc *d, const char *r) {
    if (k->packed) {
        line(e, "const int4 wv = convert_int4(vload4(%s, wb)) - wz;", r);
    } else {
        line(e,
             "const int4 wv = (int4)((int)in1[c0 * %lld + %s], (int)in1[c1 * %lld + %s], "
             "(int)in1[c2 * %lld + %s], (int)in1[c3 * %lld + %s]) - wz;",
             d->R, r, d->R, r, d->R, r, d->R, r);
    }
}

/* y[base + lane * plane] for the lanes inside O; v(lane) the value. */
static void store4(ocl *e, const tether_ir_node *n, const qc *d, const char *acc, const char *base,
                   long long plane, int vec4) {
    static const char *const lane[] = {"s0", "s1", "s2", "s3"};
    for (int j = 0; j < 4; j++) {
        char a[64], c[16], st[512];
        snprintf(c, sizeof c, "c%d", j);
        if (vec4) { /* 4 pixels of channel j: acc<j> */
            if (d->O % 4 && j) {
                open_block(e, "if (oc0 + %d < %lld)", j, d->O);
            } else {
                open_scope(e);
            }
            const char *yt = tether__ocl_ctype(T(e, n->outputs[0])->dtype);
            char v[4][600];
            for (int q = 0; q < 4; q++) {
                snprintf(a, sizeof a, "%s%d.%s", acc, j, lane[q]);
                tether__ocl_qstore_expr(e, n, a, c, v[q], sizeof v[q]);
            }
            line(e, "__global %s *yp = y + %s + %lld;", yt, base, (long long)j * plane);
            open_block(e, "if (full)");
            line(e, "vstore4((%s4)(%s, %s, %s, %s), 0, yp);", yt, v[0], v[1], v[2], v[3]);
            e->depth--;
            open_block(e, "} else");
            line(e, "yp[0] = %s;", v[0]);
            for (int q = 1; q < 4; q++) {
                open_block(e, "if (p0 + %d < %lld)", q, d->OH * d->OW);
                line(e, "yp[%d] = %s;", q, v[q]);
                close_block(e);
            }
            close_block(e);
            close_block(e);
            continue;
        }
        snprintf(a, sizeof a, "%s.%s", acc, lane[j]);
        tether__ocl_qstore_expr(e, n, a, c, st, sizeof st);
        if (d->O % 4 && j) {
            open_block(e, "if (oc0 + %d < %lld)", j, d->O);
            line(e, "y[%s + %lld] = %s;", base, (long long)j * plane, st);
            close_block(e);
        } else {
            line(e, "y[%s + %lld] = %s;", base, (long long)j * plane, st);
        }
    }
}

static void head(ocl *e, const tether_ir_node *n, const kern *k, const qc *d) {
    line(e, "const int oc0 = ob * 4;");
    line(e,
         "const int c0 = oc0, c1 = min(oc0 + 1, %lld), c2 = min(oc0 + 2, %lld), c3 = "
         "min(oc0 + 3, %lld);",
         d->O - 1, d->O - 1, d->O - 1);
    char xz[96];
    tether__ocl_qparam(e, n, 3, "0", xz, sizeof xz);
    line(e, "const int xz = %s;", xz);
    param4(e, n, 4, d, "wz");
    param4(e, n, 2, d, "bias");
    if (k->packed) {
        line(e, "const __global %s *wb = wp + ob * %lld;",
             tether__ocl_ctype(T(e, n->inputs[1])->dtype), d->R * 4);
    }
}

static void body_pointwise(ocl *e, const tether_ir_node *n, const kern *k, const qc *d) {
    long long P = d->OH * d->OW, PB = (P + 3) / 4;
    const char *xt = tether__ocl_ctype(T(e, n->inputs[0])->dtype);
    line(e, "const int pb = f %% %lld;", PB);
    line(e, "const int ob = (f / %lld) %% %lld;", PB, d->OB);
    line(e, "const int n = f / %lld;", PB * d->OB);
    line(e, "const int p0 = pb * 4;");
    line(e, "const int full = p0 + 4 <= %lld;", P);
    head(e, n, k, d);
    for (int j = 0; j < 4; j++) {
        line(e, "int4 acc%d = (int4)(bias.s%d);", j, j);
    }
    line(e, "const __global %s *xc = in0 + n * %lld + p0;", xt, d->C * P);
    open_block(e, "for (int c = 0; c < %lld; c++, xc += %lld)", d->C, P);
    if (P % 4) {
        line(e,
             "const int4 xv = (full ? convert_int4(vload4(0, xc)) : (int4)((int)xc[0], "
             "(int)xc[min(1, "
             "%lld - p0)], (int)xc[min(2, %lld - p0)], (int)xc[min(3, %lld - p0)])) - xz;",
             P - 1, P - 1, P - 1);
    } else {
        line(e, "const int4 xv = convert_int4(vload4(0, xc)) - xz;");
    }
    weights4(e, k, d, "c");
    for (int j = 0; j < 4; j++) {
        line(e, "acc%d += xv * wv.s%d;", j, j);
    }
    close_block(e);
    char base[96];
    snprintf(base, sizeof base, "(n * %lld + oc0) * %lld + p0", d->O, P);
    store4(e, n, d, "acc", base, P, 1);
}

static void body_general(ocl *e, const tether_ir_node *n, const kern *k, const qc *d) {
    const char *xt = tether__ocl_ctype(T(e, n->inputs[0])->dtype);
    line(e, "const int ow = f %% %lld;", d->OW);
    line(e, "const int oh = (f / %lld) %% %lld;", d->OW, d->OH);
    line(e, "const int ob = (f / %lld) %% %lld;", d->OW * d->OH, d->OB);
    line(e, "const int n = f / %lld;", d->OW * d->OH * d->OB);
    head(e, n, k, d);
    line(e, "int4 acc = bias;");
    /* the window's rows and columns inside the input */
    line(e, "const int ih0 = oh * %lld - %lld, iw0 = ow * %lld - %lld;", d->SH, d->PT, d->SW,
         d->PL);
    line(e, "int kh0 = 0, kh1 = %lld, kw0 = 0, kw1 = %lld;", d->KH, d->KW);
    line(e, "while (kh0 < kh1 && ih0 + kh0 * %lld < 0) kh0++;", d->DH);
    line(e, "while (kh1 > kh0 && ih0 + (kh1 - 1) * %lld >= %lld) kh1--;", d->DH, d->H);
    line(e, "while (kw0 < kw1 && iw0 + kw0 * %lld < 0) kw0++;", d->DW);
    line(e, "while (kw1 > kw0 && iw0 + (kw1 - 1) * %lld >= %lld) kw1--;", d->DW, d->W);
    long long plane = d->H * d->W;
    int shared = d->G == 1 || d->OG % 4 == 0; /* the 4 channels read the same input channel */
    if (shared) {
        line(e, "const __global %s *xg = in0 + (n * %lld + (oc0 / %lld) * %lld) * %lld;", xt, d->C,
             d->OG, d->CG, plane);
    } else {
        for (int j = 0; j < 4; j++) {
            line(e, "const __global %s *x%d = in0 + (n * %lld + (c%d / %lld) * %lld) * %lld;", xt,
                 j, d->C, j, d->OG, d->CG, plane);
        }
    }
    open_block(e, "for (int c = 0; c < %lld; c++)", d->CG);
    open_block(e, "for (int kh = kh0; kh < kh1; kh++)");
    line(e, "const int xo = c * %lld + (ih0 + kh * %lld) * %lld + iw0;", plane, d->DH, d->W);
    line(e, "const int ro = (c * %lld + kh) * %lld;", d->KH, d->KW);
    open_block(e, "for (int kw = kw0; kw < kw1; kw++)");
    line(e, "const int xi = xo + kw * %lld;", d->DW);
    weights4(e, k, d, "ro + kw");
    if (shared) {
        line(e, "acc += wv * ((int)xg[xi] - xz);");
    } else {
        line(e, "acc += wv * ((int4)((int)x0[xi], (int)x1[xi], (int)x2[xi], (int)x3[xi]) - xz);");
    }
    close_block(e);
    close_block(e);
    close_block(e);
    char base[128];
    snprintf(base, sizeof base, "((n * %lld + oc0) * %lld + oh) * %lld + ow", d->O, d->OH, d->OW);
    store4(e, n, d, "acc", base, d->OH * d->OW, 0);
}

void tether__ocl_qconv_body(ocl *e, const tether_ir_node *n, const kern *k,
                            const tether__ocl_gpu *p) {
    qc d;
    dims(e, n, &d);
    if (p->vec == 4) {
        body_pointwise(e, n, k, &d);
    } else {
        body_general(e, n, k, &d);
    }
}
