/*
 * The OpenCL backend's kernels of roi_align (avg/max, half_pixel or output_half_pixel, fixed or
 * adaptive sampling ratio), of the signal rows dft (forward/inverse, real or complex input,
 * onesided, any axis, dft_length padding or cropping) and stft (frame step, window, onesided),
 * and of tfidf (TfIdfVectorizer: TF, IDF, TFIDF, skips, n-gram ranges), issue 27, reached
 * through emit_opencl_layers.c's dispatch. One work-item per output element (roi_align: per
 * pooled cell; dft/stft: per complex output bin, writing its real and imaginary parts; tfidf:
 * per row, emit_c_text.c's loops in its order, so the counts are exact).
 *
 * What must stay true: each computes emit_c_vision.c's formulas in the same compute type (float,
 * double for float64) and order, the DFT's twiddles the same table computed here in double (a
 * __constant array at the kernel's outermost scope), so results equal the C path's within
 * rounding. Every read is inside its tensor: a roi_align batch index out of range (the C path's
 * and the interpreter's run-time error; a kernel cannot report) writes 0 for its cells.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/crt/dtype.h"

static int is_f64(DLDataType t) {
    return t.code == kDLFloat && t.bits == 64;
}

static const char *rt(DLDataType t) {
    return is_f64(t) ? "double" : "float";
}

static DLDataType rdt(DLDataType t) {
    return is_f64(t) ? TETHER_DTYPE(kDLFloat, 64) : TETHER_FLOAT32;
}

static void ld(DLDataType t, const char *p, const char *idx, char *out, size_t n) {
    char l[400];
    tether__ocl_load(t, p, idx, l, sizeof l);
    snprintf(out, n, "(%s)%s", rt(t), l);
}

/* ---- roi_align ---- */

/* Work-item f = ((r * C + c) * PH + ph) * PW + pw. */
static void k_roi_align(ocl *e, const tether_ir_node *nd) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *r = T(e, nd->inputs[1]),
                           *y = T(e, nd->outputs[0]);
    const tether_ir_attrs *a = &nd->attrs;
    long long NB = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    long long PH = a->ints[0], PW = a->ints[1];
    int is_max = (int)(a->mode & 1), half = (a->mode & 2) != 0;
    const char *F = rt(x->dtype);
    char l[500], idx[200], sc[64];
    tether__cg_float_literal(sc, sizeof sc, a->alpha, false);
    line(e, "const int pw = f %% %lld, ph = (f / %lld) %% %lld;", PW, PW, PH);
    line(e, "const int c = (f / %lld) %% %lld, r = f / %lld;", PW * PH, C, PW * PH * C);
    line(e, "const long b = (long)in2[r];");
    open_block(e, "if (b < 0 || b >= %lld)", NB);
    tether__ocl_store(e, rdt(x->dtype), y->dtype, "y", "f", "0");
    line(e, "return; /* a batch index out of range (see the file's comment) */");
    close_block(e);
    const char *nm[4] = {"sw", "sh", "ew", "eh"};
    for (int j = 0; j < 4; j++) {
        snprintf(idx, sizeof idx, "r * 4 + %d", j);
        ld(r->dtype, "in1", idx, l, sizeof l);
        line(e, "%s %s = %s * (%s)%s - (%s)%s;", F, nm[j], l, F, sc, F, half ? "0.5" : "0");
    }
    line(e, "%s rw = ew - sw, rh = eh - sh;", F);
    if (!half) {
        line(e, "rw = rw > 1 ? rw : 1;");
        line(e, "rh = rh > 1 ? rh : 1;");
    }
    line(e, "%s bh = rh / (%s)%lld, bw = rw / (%s)%lld;", F, F, PH, F, PW);
    if (a->k > 0) {
        line(e, "int gh = %lld, gw = %lld;", (long long)a->k, (long long)a->k);
    } else { /* ceil of a value clamped to [0, 1e6] */
        line(e, "%s fh = bh > 0 ? (bh < (%s)1e6 ? bh : (%s)1e6) : 0;", F, F, F);
        line(e, "%s fw = bw > 0 ? (bw < (%s)1e6 ? bw : (%s)1e6) : 0;", F, F, F);
        line(e, "int gh = (int)fh, gw = (int)fw;");
        line(e, "gh += (%s)gh < fh;", F);
        line(e, "gw += (%s)gw < fw;", F);
    }
    if (!is_max) {
        line(e, "%s count = gh * gw > 1 ? (%s)(gh * gw) : (%s)1;", F, F, F);
    }
    line(e, "const long base = (b * %lld + c) * %lld;", C, H * W);
    line(e, "%s acc = 0;", F);
    open_block(e, "for (int iy = 0; iy < gh; ++iy)");
    line(e, "%s yv = sh + (%s)ph * bh + ((%s)iy + (%s)0.5) * bh / (%s)gh;", F, F, F, F, F);
    open_block(e, "for (int ix = 0; ix < gw; ++ix)");
    line(e, "%s xv = sw + (%s)pw * bw + ((%s)ix + (%s)0.5) * bw / (%s)gw;", F, F, F, F, F);
    line(e, "%s v = 0;", F);
    open_block(e, "if (yv >= -1 && yv <= (%s)%lld && xv >= -1 && xv <= (%s)%lld)", F, H, F, W);
    line(e, "%s yy = yv <= 0 ? 0 : yv, xx = xv <= 0 ? 0 : xv;", F);
    line(e, "int yl = (int)yy, xl = (int)xx, yh, xh;");
    open_block(e, "if (yl >= %lld)", H - 1);
    line(e, "yh = yl = %lld;", H - 1);
    line(e, "yy = (%s)yl;", F);
    e->depth--;
    open_block(e, "} else");
    line(e, "yh = yl + 1;");
    close_block(e);
    open_block(e, "if (xl >= %lld)", W - 1);
    line(e, "xh = xl = %lld;", W - 1);
    line(e, "xx = (%s)xl;", F);
    e->depth--;
    open_block(e, "} else");
    line(e, "xh = xl + 1;");
    close_block(e);
    line(e, "%s ly = yy - (%s)yl, lx = xx - (%s)xl, hy = 1 - ly, hx = 1 - lx;", F, F, F);
    const char *terms[4][3] = {{"hy * hx", "yl", "xl"},
                               {"hy * lx", "yl", "xh"},
                               {"ly * hx", "yh", "xl"},
                               {"ly * lx", "yh", "xh"}};
    for (int j = 0; j < 4; j++) {
        snprintf(idx, sizeof idx, "base + %s * %lld + %s", terms[j][1], W, terms[j][2]);
        ld(x->dtype, "in0", idx, l, sizeof l);
        line(e, "%s t%d = %s * %s;", F, j, terms[j][0], l);
    }
    if (is_max) {
        line(e, "v = t0 > t1 ? t0 : t1;");
        line(e, "v = v > t2 ? v : t2;");
        line(e, "v = v > t3 ? v : t3;");
    } else {
        line(e, "v = t0 + t1 + t2 + t3;");
    }
    close_block(e);
    if (is_max) {
        line(e, "acc = (iy == 0 && ix == 0) || v > acc ? v : acc;");
    } else {
        line(e, "acc += v;");
    }
    close_block(e);
    close_block(e);
    tether__ocl_store(e, rdt(x->dtype), y->dtype, "y", "f", is_max ? "acc" : "acc / count");
}

/* ---- dft, stft ---- */

/* The twiddle table tw[2*len] (cos, sin of 2 pi j / len), computed here in double. */
static void twiddles(ocl *e, long long len, const char *F) {
    line(e, "__constant %s tw[%lld] = {", F, 2 * len);
    e->depth++;
    const double two_pi = 6.283185307179586476925286766559;
    char c[64], s[64];
    for (long long j = 0; j < len; j++) {
        double ang = two_pi * (double)j / (double)len;
        if (F[0] == 'f') {
            flit(c, sizeof c, (float)cos(ang));
            flit(s, sizeof s, (float)sin(ang));
        } else {
            snprintf(c, sizeof c, "%.17e", cos(ang));
            snprintf(s, sizeof s, "%.17e", sin(ang));
        }
        line(e, "%s, %s,", c, s);
    }
    e->depth--;
    line(e, "};");
}

/* Output bin kk of one transform: the input element j of the signal at (xoff + j * xs) (times 2
 * when complex), the window in1[j] when win; the bin at (yoff + kk * ys) * 2. */
static void transform(ocl *e, DLDataType xt, DLDataType yt, const char *xoff, long long xs,
                      long long have, int cplx, const tether_ir_tensor *win, const char *yoff,
                      long long ys, long long len, int inverse) {
    const char *F = rt(xt);
    char l[500], idx[300];
    line(e, "%s re = 0, im = 0;", F);
    line(e, "int t = 0;");
    open_block(e, "for (int j = 0; j < %lld; ++j)", have < len ? have : len);
    snprintf(idx, sizeof idx, "((%s) + (long)j * %lld) * %d", xoff, xs, cplx ? 2 : 1);
    ld(xt, "in0", idx, l, sizeof l);
    line(e, "%s a = %s;", F, l);
    if (cplx) {
        snprintf(idx, sizeof idx, "((%s) + (long)j * %lld) * 2 + 1", xoff, xs);
        ld(xt, "in0", idx, l, sizeof l);
        line(e, "%s b = %s;", F, l);
    } else {
        line(e, "%s b = 0;", F);
    }
    if (win) {
        ld(win->dtype, "in1", "j", l, sizeof l);
        line(e, "%s w = (%s)%s;", F, F, l);
        line(e, "a *= w;");
        line(e, "b *= w;");
    }
    line(e, "%s cs = (%s)tw[2 * t], sn = %s(%s)tw[2 * t + 1];", F, F, inverse ? "" : "-", F);
    line(e, "re += a * cs - b * sn;");
    line(e, "im += a * sn + b * cs;");
    line(e, "t += kk;");
    open_block(e, "if (t >= %lld)", len);
    line(e, "t -= %lld;", len);
    close_block(e);
    close_block(e);
    if (inverse) {
        line(e, "re /= (%s)%lld;", F, len);
        line(e, "im /= (%s)%lld;", F, len);
    }
    snprintf(idx, sizeof idx, "((%s) + (long)kk * %lld) * 2", yoff, ys);
    tether__ocl_store(e, rdt(xt), yt, "y", idx, "re");
    snprintf(idx, sizeof idx, "((%s) + (long)kk * %lld) * 2 + 1", yoff, ys);
    tether__ocl_store(e, rdt(xt), yt, "y", idx, "im");
}

/* Work-item f = (p * bins + kk) * inner + q. */
static void k_dft(ocl *e, const tether_ir_node *nd) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    int ax = tether__ir_norm_axis(nd->attrs.axis, x->ndim);
    long long inner = 1;
    for (int d = ax + 1; d < x->ndim - 1; d++) {
        inner *= x->shape[d];
    }
    long long have = x->shape[ax], bins = y->shape[ax], len = nd->attrs.k;
    twiddles(e, len, rt(x->dtype));
    line(e, "const int q = f %% %lld, kk = (f / %lld) %% %lld, p = f / %lld;", inner, inner, bins,
         inner * bins);
    char xo[100], yo[100];
    snprintf(xo, sizeof xo, "(long)p * %lld + q", have * inner);
    snprintf(yo, sizeof yo, "(long)p * %lld + q", bins * inner);
    transform(e, x->dtype, y->dtype, xo, inner, have, x->shape[x->ndim - 1] == 2, NULL, yo, inner,
              len, (nd->attrs.mode & 1) != 0);
}

/* Work-item f = (b * frames + fr) * bins + kk. */
static void k_stft(ocl *e, const tether_ir_node *nd) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    const tether_ir_tensor *w = nd->ninputs > 1 && nd->inputs[1] >= 0 ? T(e, nd->inputs[1]) : NULL;
    long long L = x->shape[1], FR = y->shape[1], bins = y->shape[2], fl = nd->attrs.ints[0];
    twiddles(e, fl, rt(x->dtype));
    line(e, "const int kk = f %% %lld, fr = (f / %lld) %% %lld, b = f / %lld;", bins, bins, FR,
         bins * FR);
    char xo[100], yo[100];
    snprintf(xo, sizeof xo, "(long)b * %lld + (long)fr * %lld", L, (long long)nd->attrs.k);
    snprintf(yo, sizeof yo, "((long)b * %lld + fr) * %lld", FR, bins);
    transform(e, x->dtype, y->dtype, xo, 1, fl, x->shape[2] == 2, w, yo, 1, fl, 0);
}

/* ---- tfidf ---- */

/* Work-item f: row f of x. The n-gram groups of the constant pool unrolled as emit_c_text.c's;
 * a pool index outside 0..C-1 counts nowhere. */
static void k_tfidf(ocl *e, const tether_ir_node *nd) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    const tether_ir_attrs *a = &nd->attrs;
    tether__tfidf_group grp[TETHER__TFIDF_MAX_GRAM];
    int ng = tether__tfidf_groups(e->g, nd, grp);
    if (ng < 0) {
        line(e, "#error \"tether: tfidf with malformed n-gram groups\"");
        return;
    }
    long long len = x->shape[x->ndim - 1];
    long long C = a->k, total = ng ? grp[ng - 1].id0 + grp[ng - 1].count : 0;
    line(e, "const long r = f;");
    open_block(e, "for (long c = 0; c < %lld; ++c)", C);
    line(e, "y[r * %lld + c] = 0.0f;", C);
    close_block(e);
    for (long long gl = a->ints[0]; gl <= a->ints[1] && gl <= ng; gl++) {
        const tether__tfidf_group *gp = &grp[gl - 1];
        if (gp->count == 0) {
            continue;
        }
        line(e, "/* the %lld-grams: %lld of them from pool[%lld] */", gl, (long long)gp->count,
             (long long)gp->start);
        open_block(e, "for (long s = 0; s <= %lld; ++s)", gl == 1 ? 0LL : (long long)a->ints[2]);
        open_block(e, "for (long i = 0; i + %lld * (s + 1) < %lld; ++i)", gl - 1, len);
        open_block(e, "for (long j = 0; j < %lld; ++j)", (long long)gp->count);
        line(e, "int eq = 1;");
        open_block(e, "for (long t = 0; eq && t < %lld; ++t)", gl);
        line(e, "eq = (long)in0[r * %lld + i + t * (s + 1)] == (long)in1[%lld + j * %lld + t];",
             len, (long long)gp->start, gl);
        close_block(e);
        open_block(e, "if (eq)");
        line(e, "const long col = (long)in3[%lld + j];", (long long)gp->id0);
        open_block(e, "if (col >= 0 && col < %lld)", C);
        line(e, "y[r * %lld + col] += 1.0f;", C);
        close_block(e);
        line(e, "break;");
        close_block(e);
        close_block(e);
        close_block(e);
        close_block(e);
    }
    if (a->mode != 0 && total > 0) {
        open_block(e, "for (long j = 0; j < %lld; ++j)", total);
        line(e, "const float wj = %s;", nd->ninputs > 4 && nd->inputs[4] >= 0 ? "in4[j]" : "1.0f");
        line(e, "const long col = (long)in3[j];");
        open_block(e, "if (col >= 0 && col < %lld)", C);
        if (a->mode == 1) {
            line(e, "y[r * %lld + col] = y[r * %lld + col] > 0.0f ? wj : 0.0f;", C, C);
        } else {
            line(e, "y[r * %lld + col] = y[r * %lld + col] * wj;", C, C);
        }
        close_block(e);
        close_block(e);
    }
}

int tether__ocl_signal_op(tether_op op) {
    return op == TETHER_OP_ROI_ALIGN || op == TETHER_OP_DFT || op == TETHER_OP_STFT ||
           op == TETHER_OP_TFIDF;
}

int64_t tether__ocl_signal_items(const ocl *e, const tether_ir_node *n) {
    int64_t ye = (int64_t)tether_ir_tensor_elements(T(e, n->outputs[0]));
    if (n->op == TETHER_OP_TFIDF) { /* a row each */
        const tether_ir_tensor *x = T(e, n->inputs[0]);
        return x->ndim == 2 ? x->shape[0] : 1;
    }
    return n->op == TETHER_OP_ROI_ALIGN ? ye : ye / 2; /* dft/stft: complex bins */
}

int64_t tether__ocl_signal_serial(const ocl *e, const tether_ir_node *n) {
    if (n->op == TETHER_OP_ROI_ALIGN) {
        return n->attrs.k > 0 ? n->attrs.k * n->attrs.k : 1; /* adaptive: from the roi */
    }
    if (n->op == TETHER_OP_TFIDF) { /* the row's positions times the pool's n-grams */
        const tether_ir_tensor *x = T(e, n->inputs[0]), *pool = T(e, n->inputs[1]);
        return x->shape[x->ndim - 1] * (int64_t)tether_ir_tensor_elements(pool);
    }
    return n->op == TETHER_OP_DFT ? n->attrs.k : n->attrs.ints[0];
}

void tether__ocl_signal_body(ocl *e, const tether_ir_node *n) {
    switch ((int)n->op) {
    case TETHER_OP_ROI_ALIGN:
        k_roi_align(e, n);
        return;
    case TETHER_OP_DFT:
        k_dft(e, n);
        return;
    case TETHER_OP_TFIDF:
        k_tfidf(e, n);
        return;
    default:
        k_stft(e, n);
        return;
    }
}
