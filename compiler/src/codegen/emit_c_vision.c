/*
 * The C kernels of the vision and signal rows of the DATA family (grid_sample, roi_align,
 * max_pool_arg, max_unpool, triangular, diag_prod, dft, stft; ops.def, issue 27), called by
 * emit_c_data.c's switch (which writes the final "return 0;"). Floating operators compute in
 * float (double for float64), the formulas of interp/interp_vision.c; no libm call (floors are
 * integer conversions of clamped values, the DFT's twiddles a constant table computed here in
 * double) and no 64-bit division (MCU targets without a divider).
 *
 * What must stay true: every access is inside its tensor for any input values: taps of
 * grid_sample are mapped into the plane (or read as 0) before the read, a roi_align batch index
 * and a max_unpool index are checked first and one out of range returns -1
 * (TETHER_ERR_INVALID_ARG). Trip counts and strides are constants, except roi_align's sampling
 * grid with sampling ratio 0 (computed from the roi, as ONNX defines it).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emit_c_internal.h"
#include "tether/crt/dtype.h"

/* The compute type of a floating element type, as C and as a DLDataType. */
static const char *rt(DLDataType t) {
    return t.code == kDLFloat && t.bits == 64 ? "double" : "float";
}

static DLDataType rdt(DLDataType t) {
    return t.code == kDLFloat && t.bits == 64 ? TETHER_DTYPE(kDLFloat, 64) : TETHER_FLOAT32;
}

/* `p[idx]` loaded in its compute type. */
static void ld(DLDataType t, const char *p, const char *idx, char *out, size_t n) {
    char ex[300];
    int r = snprintf(ex, sizeof ex, "%s[%s]", p, idx);
    if (r < 0 || (size_t)r >= sizeof ex) { /* never compiles silently */
        snprintf(ex, sizeof ex, "#error expression too long");
    }
    char l[340];
    tether__c_load(t, ex, l, sizeof l);
    snprintf(out, n, "(%s)%s", rt(t), l);
}

/* `p[idx] = v;` with v in compute type `from`. */
static void store(em *e, DLDataType from, DLDataType to, const char *p, const char *idx,
                  const char *v) {
    char c[400];
    tether__c_convert(rdt(from), to, v, c, sizeof c);
    line(e, "%s[%s] = %s;", p, idx, c);
}

/* ---- grid_sample ---- */

/* `int name = expr;` mapped into [0, n): zeros padding -1 when outside, border clamped,
 * reflection reflected (align: about 0 and n-1, else about -0.5 and n-0.5). */
static void tap(em *e, const char *name, const char *expr, long long n, int pad, int align) {
    line(e, "int %s = %s;", name, expr);
    if (pad == 0) {
        line(e, "if (%s < 0 || %s >= %lld) {", name, name, n);
        line(e, "    %s = -1;", name);
        line(e, "}");
        return;
    }
    if (pad == 2) {
        long long m = align ? n - 1 : n;
        line(e, "if (%s < 0 || %s >= %lld) {", name, name, n);
        e->depth++;
        if (m <= 0) {
            line(e, "%s = 0;", name);
        } else {
            line(e, "int lo_ = %s < 0;", name);
            line(e, "int d_ = lo_ ? -%s - %d : %s - %lld;", name, align ? 0 : 1, name,
                 align ? n - 1 : n);
            line(e, "int q_ = d_ / %lld, r_ = d_ - q_ * %lld;", m, m);
            line(e, "%s = (lo_ != 0) == ((q_ & 1) == 0) ? r_ : %lld - r_;", name, n - 1);
        }
        e->depth--;
        line(e, "}");
    }
    line(e, "%s = %s < 0 ? 0 : %s >= %lld ? %lld : %s;", name, name, name, n, n - 1, name);
}

/* `int v = floor(x);` of a clamped value (|x| <= 1e7). */
static void ifloor(em *e, const char *v, const char *x, const char *R) {
    line(e, "int %s = (int)%s;", v, x);
    line(e, "if ((%s)%s > %s) {", R, v, x);
    line(e, "    %s -= 1;", v);
    line(e, "}");
}

static void k_grid_sample(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *gr = T(e, nd->inputs[1]),
                           *y = T(e, nd->outputs[0]);
    int mode = (int)(nd->attrs.mode & 3), pad = (int)((nd->attrs.mode >> 2) & 3);
    int align = (int)((nd->attrs.mode >> 4) & 1);
    long long N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    long long P = gr->shape[1] * gr->shape[2];
    const char *R = rt(x->dtype);
    DLDataType G = gr->dtype;
    char a[400], b[400], idx[200];
    loop(e, "n", N);
    loop(e, "i", P);
    snprintf(idx, sizeof idx, "((long long)n * %lldLL + i) * 2", P);
    ld(G, k->in[1], idx, a, sizeof a);
    snprintf(idx, sizeof idx, "((long long)n * %lldLL + i) * 2 + 1", P);
    ld(G, k->in[1], idx, b, sizeof b);
    line(e, "%s gx = (%s)%s, gy = (%s)%s;", R, R, a, R, b);
    if (align) {
        line(e, "%s x = (gx + 1) / 2 * (%s)%lld, y = (gy + 1) / 2 * (%s)%lld;", R, R, W - 1, R,
             H - 1);
    } else {
        line(e, "%s x = ((gx + 1) * (%s)%lld - 1) / 2, y = ((gy + 1) * (%s)%lld - 1) / 2;", R, R, W,
             R, H);
    }
    /* clamped far outside any plane (NaN too), so that the integer conversions are defined */
    line(e, "x = x >= (%s)-1e7 ? (x <= (%s)1e7 ? x : (%s)1e7) : (%s)-1e7;", R, R, R, R);
    line(e, "y = y >= (%s)-1e7 ? (y <= (%s)1e7 ? y : (%s)1e7) : (%s)-1e7;", R, R, R, R);
    if (mode == 1) { /* round half to even */
        const char *vs[2] = {"x", "y"};
        for (int j = 0; j < 2; j++) {
            line(e, "{");
            e->depth++;
            ifloor(e, "f_", vs[j], R);
            line(e, "%s d_ = %s - (%s)f_;", R, vs[j], R);
            line(e, "%s = (%s)(d_ > (%s)0.5 || (d_ == (%s)0.5 && (f_ & 1)) ? f_ + 1 : f_);", vs[j],
                 R, R, R);
            e->depth--;
            line(e, "}");
        }
    }
    const char *lox = align ? "0" : "-0.5";
    char hix[40], hiy[40];
    snprintf(hix, sizeof hix, "%lld%s", align ? W - 1 : W, align ? "" : " - 0.5");
    snprintf(hiy, sizeof hiy, "%lld%s", align ? H - 1 : H, align ? "" : " - 0.5");
    if (pad != 0) {
        line(e, "if (x < (%s)%s || x > (%s)(%s) || y < (%s)%s || y > (%s)(%s)) {", R, lox, R, hix,
             R, lox, R, hiy);
        e->depth++;
        if (pad == 1) {
            line(e, "x = x < 0 ? 0 : x > (%s)%lld ? (%s)%lld : x;", R, W - 1, R, W - 1);
            line(e, "y = y < 0 ? 0 : y > (%s)%lld ? (%s)%lld : y;", R, H - 1, R, H - 1);
        } else {
            const char *vs[2] = {"x", "y"};
            const char *his[2] = {hix, hiy};
            for (int j = 0; j < 2; j++) {
                line(e, "{");
                e->depth++;
                line(e, "%s lo = (%s)%s, hi = (%s)(%s), range = hi - lo;", R, R, lox, R, his[j]);
                line(e, "if (range <= 0) {");
                line(e, "    %s = lo;", vs[j]);
                line(e, "} else if (%s < lo || %s > hi) {", vs[j], vs[j]);
                e->depth++;
                line(e, "%s dx = %s < lo ? lo - %s : %s - hi;", R, vs[j], vs[j], vs[j]);
                line(e, "int q = (int)(dx / range);");
                line(e, "%s r = dx - (%s)q * range;", R, R);
                line(e, "%s = (%s < lo) == ((q & 1) == 0) ? lo + r : hi - r;", vs[j], vs[j]);
                e->depth--;
                line(e, "}");
                e->depth--;
                line(e, "}");
            }
        }
        e->depth--;
        line(e, "}");
    }
    int ntap = mode == 1 ? 1 : mode == 0 ? 2 : 4;
    if (mode == 1) {
        line(e, "int bx = (int)x, by = (int)y;");
    } else {
        ifloor(e, "bx", "x", R);
        ifloor(e, "by", "y", R);
        line(e, "%s tx = x - (%s)bx, ty = y - (%s)by;", R, R, R);
        if (mode == 2) {
            line(e, "bx -= 1;");
            line(e, "by -= 1;");
        }
    }
    char nm[16], ex[40];
    for (int j = 0; j < ntap; j++) {
        snprintf(nm, sizeof nm, "c%d", j);
        snprintf(ex, sizeof ex, "bx + %d", j);
        tap(e, nm, ex, W, pad, align);
        snprintf(nm, sizeof nm, "r%d", j);
        snprintf(ex, sizeof ex, "by + %d", j);
        tap(e, nm, ex, H, pad, align);
    }
    if (mode == 0) {
        line(e, "%s wx[2] = {1 - tx, tx}, wy[2] = {1 - ty, ty};", R);
    } else if (mode == 2) {
        line(e, "%s wx[4], wy[4];", R);
        const char *ws[2] = {"wx", "wy"}, *ts[2] = {"tx", "ty"};
        for (int j = 0; j < 2; j++) {
            line(e, "{");
            e->depth++;
            line(e, "const %s A = (%s)-0.75, t = %s;", R, R, ts[j]);
            line(e, "%s[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;", ws[j]);
            line(e, "%s[1] = ((A + 2) * t - (A + 3)) * t * t + 1;", ws[j]);
            line(e, "%s[2] = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1;", ws[j]);
            line(e, "%s[3] = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A;", ws[j]);
            e->depth--;
            line(e, "}");
        }
    }
    line(e, "int rr[%d] = {r0%s%s%s}, cc[%d] = {c0%s%s%s};", ntap, ntap > 1 ? ", r1" : "",
         ntap > 2 ? ", r2" : "", ntap > 2 ? ", r3" : "", ntap, ntap > 1 ? ", c1" : "",
         ntap > 2 ? ", c2" : "", ntap > 2 ? ", c3" : "");
    loop(e, "c", C);
    line(e, "long long base = ((long long)n * %lldLL + c) * %lldLL;", C, H * W);
    line(e, "%s v = 0;", R);
    loop(e, "p", ntap);
    loop(e, "q", ntap);
    snprintf(idx, sizeof idx, "base + (long long)rr[p] * %lldLL + cc[q]", W);
    ld(x->dtype, k->in[0], idx, a, sizeof a);
    line(e, "%s px = rr[p] < 0 || cc[q] < 0 ? (%s)0 : %s;", R, R, a);
    if (mode == 1) {
        line(e, "v += px;");
    } else {
        line(e, "v += wy[p] * wx[q] * px;");
    }
    close_block(e);
    close_block(e);
    snprintf(idx, sizeof idx, "((long long)n * %lldLL + c) * %lldLL + i", C, P);
    store(e, x->dtype, y->dtype, k->out, idx, "v");
    close_block(e);
    close_block(e);
    close_block(e);
}

/* ---- roi_align ---- */

static void k_roi_align(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *r = T(e, nd->inputs[1]),
                           *bt = T(e, nd->inputs[2]), *y = T(e, nd->outputs[0]);
    const tether_ir_attrs *a = &nd->attrs;
    long long NB = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    long long R = r->shape[0], PH = a->ints[0], PW = a->ints[1];
    int is_max = (int)(a->mode & 1), half = (a->mode & 2) != 0;
    const char *F = rt(x->dtype);
    char l[400], idx[200], sc[64];
    tether__cg_float_literal(sc, sizeof sc, a->alpha, false);
    loop(e, "r", R);
    line(e, "long long b = (long long)%s[r];", k->in[2]);
    (void)bt;
    line(e, "if (b < 0 || b >= %lldLL) {", NB);
    line(e, "    return -1; /* TETHER_ERR_INVALID_ARG: a batch index out of range */");
    line(e, "}");
    const char *nm[4] = {"sw", "sh", "ew", "eh"};
    for (int j = 0; j < 4; j++) {
        snprintf(idx, sizeof idx, "(long long)r * 4 + %d", j);
        ld(r->dtype, k->in[1], idx, l, sizeof l);
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
    loop(e, "c", C);
    line(e, "long long base = ((long long)b * %lldLL + c) * %lldLL;", C, H * W);
    loop(e, "ph", PH);
    loop(e, "pw", PW);
    line(e, "%s acc = 0;", F);
    line(e, "for (int iy = 0; iy < gh; ++iy) {");
    e->depth++;
    line(e, "%s yv = sh + (%s)ph * bh + ((%s)iy + (%s)0.5) * bh / (%s)gh;", F, F, F, F, F);
    line(e, "for (int ix = 0; ix < gw; ++ix) {");
    e->depth++;
    line(e, "%s xv = sw + (%s)pw * bw + ((%s)ix + (%s)0.5) * bw / (%s)gw;", F, F, F, F, F);
    line(e, "%s v = 0;", F);
    line(e, "if (yv >= -1 && yv <= (%s)%lld && xv >= -1 && xv <= (%s)%lld) {", F, H, F, W);
    e->depth++;
    line(e, "%s yy = yv <= 0 ? 0 : yv, xx = xv <= 0 ? 0 : xv;", F);
    line(e, "int yl = (int)yy, xl = (int)xx, yh, xh;");
    line(e, "if (yl >= %lld) {", H - 1);
    line(e, "    yh = yl = %lld;", H - 1);
    line(e, "    yy = (%s)yl;", F);
    line(e, "} else {");
    line(e, "    yh = yl + 1;");
    line(e, "}");
    line(e, "if (xl >= %lld) {", W - 1);
    line(e, "    xh = xl = %lld;", W - 1);
    line(e, "    xx = (%s)xl;", F);
    line(e, "} else {");
    line(e, "    xh = xl + 1;");
    line(e, "}");
    line(e, "%s ly = yy - (%s)yl, lx = xx - (%s)xl, hy = 1 - ly, hx = 1 - lx;", F, F, F);
    const char *terms[4][3] = {{"hy * hx", "yl", "xl"},
                               {"hy * lx", "yl", "xh"},
                               {"ly * hx", "yh", "xl"},
                               {"ly * lx", "yh", "xh"}};
    for (int j = 0; j < 4; j++) {
        snprintf(idx, sizeof idx, "base + (long long)%s * %lldLL + %s", terms[j][1], W,
                 terms[j][2]);
        ld(x->dtype, k->in[0], idx, l, sizeof l);
        line(e, "%s t%d = %s * %s;", F, j, terms[j][0], l);
    }
    if (is_max) {
        line(e, "v = t0 > t1 ? t0 : t1;");
        line(e, "v = v > t2 ? v : t2;");
        line(e, "v = v > t3 ? v : t3;");
    } else {
        line(e, "v = t0 + t1 + t2 + t3;");
    }
    e->depth--;
    line(e, "}");
    if (is_max) {
        line(e, "acc = (iy == 0 && ix == 0) || v > acc ? v : acc;");
    } else {
        line(e, "acc += v;");
    }
    close_block(e);
    close_block(e);
    snprintf(idx, sizeof idx, "(((long long)r * %lldLL + c) * %lldLL + ph) * %lldLL + pw", C, PH,
             PW);
    store(e, x->dtype, y->dtype, k->out, idx, is_max ? "acc" : "acc / count");
    close_block(e);
    close_block(e);
    close_block(e);
    close_block(e);
}

/* ---- max_pool_arg, max_unpool ---- */

static void k_max_pool_arg(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    const tether_ir_attrs *a = &nd->attrs;
    long long H = x->shape[2], W = x->shape[3], OH = y->shape[2], OW = y->shape[3];
    const char *CT = tether__c_compute_type(x->dtype);
    char l[300];
    loop(e, "p", x->shape[0] * x->shape[1]);
    loop(e, "oh", OH);
    loop(e, "ow", OW);
    line(e, "%s best = 0;", CT);
    line(e, "long long bi = -1;");
    loop(e, "kh", a->kernel[0]);
    line(e, "int h = oh * %lld - %lld + kh * %lld;", (long long)a->strides[0],
         (long long)a->pads[0], (long long)a->dilations[0]);
    line(e, "if (h < 0 || h >= %lld) {", H);
    line(e, "    continue;");
    line(e, "}");
    loop(e, "kw", a->kernel[1]);
    line(e, "int w = ow * %lld - %lld + kw * %lld;", (long long)a->strides[1],
         (long long)a->pads[1], (long long)a->dilations[1]);
    line(e, "if (w < 0 || w >= %lld) {", W);
    line(e, "    continue;");
    line(e, "}");
    line(e, "long long xi = ((long long)p * %lldLL + h) * %lldLL + w;", H, W);
    char ex[100];
    snprintf(ex, sizeof ex, "%s[xi]", k->in[0]);
    tether__c_load(x->dtype, ex, l, sizeof l);
    line(e, "%s v = %s;", CT, l);
    line(e, "if (bi < 0 || v > best) {");
    line(e, "    best = v;");
    if (a->mode & 2) {
        line(e, "    bi = (long long)p * %lldLL + (long long)w * %lldLL + h;", H * W, H);
    } else {
        line(e, "    bi = xi;");
    }
    line(e, "}");
    close_block(e);
    close_block(e);
    line(e, "long long oi = ((long long)p * %lldLL + oh) * %lldLL + ow;", OH, OW);
    if (a->mode & 1) {
        line(e, "%s[oi] = (int64_t)bi;", k->out);
    } else {
        char c[300];
        tether__c_convert(x->dtype, y->dtype, "best", c, sizeof c);
        line(e, "%s[oi] = %s;", k->out, c);
    }
    close_block(e);
    close_block(e);
    close_block(e);
}

static void k_max_unpool(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    long long total = (long long)tether_ir_tensor_elements(y);
    loop(e, "i", total);
    line(e, "%s[i] = (%s)0;", k->out, ctype(e, nd->outputs[0]));
    close_block(e);
    long long sp[TETHER_IR_MAX_NDIM], space = 1;
    int same = 1;
    for (int d = 0; d < y->ndim; d++) {
        sp[d] = nd->attrs.steps[d] ? nd->attrs.steps[d] : y->shape[d];
        space *= sp[d];
        same &= sp[d] == y->shape[d];
    }
    loop(e, "k", (long long)tether_ir_tensor_elements(x));
    line(e, "int64_t j = (int64_t)%s[k];", k->in[1]);
    line(e, "if (j < 0 || j >= %lldLL) {", space);
    line(e, "    return -1; /* TETHER_ERR_INVALID_ARG: an index out of range */");
    line(e, "}");
    if (same) {
        line(e, "%s[j] = %s[k];", k->out, k->in[0]);
    } else { /* the index's coordinates in the index space, placed in the output (32-bit) */
        line(e, "uint32_t rem = (uint32_t)j, off = 0;");
        long long stride = 1;
        for (int d = y->ndim - 1; d >= 0; d--) {
            line(e, "off += (rem %% %lluu) * %lluu;", (unsigned long long)sp[d],
                 (unsigned long long)stride);
            line(e, "rem /= %lluu;", (unsigned long long)sp[d]);
            stride *= y->shape[d];
        }
        line(e, "%s[off] = %s[k];", k->out, k->in[0]);
    }
    close_block(e);
}

/* ---- triangular, diag_prod ---- */

static void k_triangular(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    long long m = x->shape[x->ndim - 1], mm = m * m;
    long long mats = mm ? (long long)tether_ir_tensor_elements(x) / mm : 0;
    const char *F = rt(x->dtype), *y = k->out;
    loop(e, "i", mats * mm);
    line(e, "%s[i] = %s[i];", y, k->in[0]);
    close_block(e);
    loop(e, "b", mats);
    line(e, "%s *a = %s + (long long)b * %lldLL;", F, y, mm);
    loop(e, "c", m);
    line(e, "int p = c;");
    line(e, "for (int r = c + 1; r < %lld; ++r) {", m);
    line(e, "    %s u = a[r * %lld + c], v = a[p * %lld + c];", F, m, m);
    line(e, "    if ((u < 0 ? -u : u) > (v < 0 ? -v : v)) {");
    line(e, "        p = r;");
    line(e, "    }");
    line(e, "}");
    line(e, "if (p != c) {");
    line(e, "    for (int j = 0; j < %lld; ++j) {", m);
    line(e, "        %s t = a[p * %lld + j];", F, m);
    line(e, "        a[p * %lld + j] = a[c * %lld + j];", m, m);
    line(e, "        a[c * %lld + j] = -t;", m);
    line(e, "    }");
    line(e, "}");
    line(e, "%s piv = a[c * %lld + c];", F, m);
    line(e, "for (int r = c + 1; r < %lld; ++r) {", m);
    line(e, "    %s f = piv != 0 ? a[r * %lld + c] / piv : 0;", F, m);
    line(e, "    a[r * %lld + c] = 0;", m);
    line(e, "    for (int j = c + 1; j < %lld; ++j) {", m);
    line(e, "        a[r * %lld + j] -= f * a[c * %lld + j];", m, m);
    line(e, "    }");
    line(e, "}");
    close_block(e);
    close_block(e);
}

static void k_diag_prod(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    long long m = x->shape[x->ndim - 1];
    loop(e, "b", (long long)tether_ir_tensor_elements(y));
    line(e, "%s p = 1;", rt(x->dtype));
    loop(e, "i", m);
    line(e, "p *= %s[(long long)b * %lldLL + (long long)i * %lldLL];", k->in[0], m * m, m + 1);
    close_block(e);
    line(e, "%s[b] = p;", k->out);
    close_block(e);
}

/* ---- dft, stft ---- */

/* The twiddle table tw[2*len] (cos, sin of 2 pi j / len), computed here in double. */
static void twiddles(em *e, long long len, const char *F) {
    line(e, "static const %s tw[%lld] = {", F, 2 * len);
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

/* One transform: the input element j of the current signal is xe (an expression of j), the
 * window w[j] when win is set; output bin kk at ye (an expression of kk). */
static void transform(em *e, DLDataType xt, DLDataType yt, const char *xin, const char *xoff,
                      long long xs, long long have, int cplx, const char *win, DLDataType wt,
                      const char *yout, const char *yoff, long long ys, long long len,
                      long long bins, int inverse) {
    const char *F = rt(xt);
    char l[400], idx[300];
    loop(e, "kk", bins);
    line(e, "%s re = 0, im = 0;", F);
    line(e, "int t = 0;");
    loop(e, "j", have < len ? have : len);
    snprintf(idx, sizeof idx, "((%s) + (long long)j * %lldLL) * %d", xoff, xs, cplx ? 2 : 1);
    ld(xt, xin, idx, l, sizeof l);
    line(e, "%s a = %s;", F, l);
    if (cplx) {
        snprintf(idx, sizeof idx, "((%s) + (long long)j * %lldLL) * 2 + 1", xoff, xs);
        ld(xt, xin, idx, l, sizeof l);
        line(e, "%s b = %s;", F, l);
    } else {
        line(e, "%s b = 0;", F);
    }
    if (win) {
        ld(wt, win, "j", l, sizeof l);
        line(e, "%s w = (%s)%s;", F, F, l);
        line(e, "a *= w;");
        line(e, "b *= w;");
    }
    line(e, "%s cs = (%s)tw[2 * t], sn = %s(%s)tw[2 * t + 1];", F, F, inverse ? "" : "-", F);
    line(e, "re += a * cs - b * sn;");
    line(e, "im += a * sn + b * cs;");
    line(e, "t += kk;");
    line(e, "if (t >= %lld) {", len);
    line(e, "    t -= %lld;", len);
    line(e, "}");
    close_block(e);
    if (inverse) {
        line(e, "re /= (%s)%lld;", F, len);
        line(e, "im /= (%s)%lld;", F, len);
    }
    snprintf(idx, sizeof idx, "((%s) + (long long)kk * %lldLL) * 2", yoff, ys);
    store(e, xt, yt, yout, idx, "re");
    snprintf(idx, sizeof idx, "((%s) + (long long)kk * %lldLL) * 2 + 1", yoff, ys);
    store(e, xt, yt, yout, idx, "im");
    close_block(e);
}

static void k_dft(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    int ax = tether__ir_norm_axis(nd->attrs.axis, x->ndim);
    long long outer = 1, inner = 1;
    for (int d = 0; d < ax; d++) {
        outer *= x->shape[d];
    }
    for (int d = ax + 1; d < x->ndim - 1; d++) {
        inner *= x->shape[d];
    }
    long long have = x->shape[ax], bins = y->shape[ax], len = nd->attrs.k;
    twiddles(e, len, rt(x->dtype));
    loop(e, "p", outer);
    loop(e, "q", inner);
    char xo[100], yo[100];
    snprintf(xo, sizeof xo, "(long long)p * %lldLL + q", have * inner);
    snprintf(yo, sizeof yo, "(long long)p * %lldLL + q", bins * inner);
    transform(e, x->dtype, y->dtype, k->in[0], xo, inner, have, x->shape[x->ndim - 1] == 2, NULL,
              x->dtype, k->out, yo, inner, len, bins, (nd->attrs.mode & 1) != 0);
    close_block(e);
    close_block(e);
}

static void k_stft(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    const tether_ir_tensor *w = nd->ninputs > 1 && nd->inputs[1] >= 0 ? T(e, nd->inputs[1]) : NULL;
    long long L = x->shape[1], F = y->shape[1], bins = y->shape[2], fl = nd->attrs.ints[0];
    twiddles(e, fl, rt(x->dtype));
    loop(e, "b", x->shape[0]);
    loop(e, "f", F);
    char xo[100], yo[100];
    snprintf(xo, sizeof xo, "(long long)b * %lldLL + (long long)f * %lldLL", L,
             (long long)nd->attrs.k);
    snprintf(yo, sizeof yo, "((long long)b * %lldLL + f) * %lldLL", F, bins);
    transform(e, x->dtype, y->dtype, k->in[0], xo, 1, fl, x->shape[2] == 2, w ? k->in[1] : NULL,
              w ? w->dtype : x->dtype, k->out, yo, 1, fl, bins, 0);
    close_block(e);
    close_block(e);
}

void tether__c_vision(em *e, const tether_ir_node *nd, const kargs *k) {
    switch (nd->op) {
    case TETHER_OP_GRID_SAMPLE:
        k_grid_sample(e, nd, k);
        break;
    case TETHER_OP_ROI_ALIGN:
        k_roi_align(e, nd, k);
        break;
    case TETHER_OP_MAX_POOL_ARG:
        k_max_pool_arg(e, nd, k);
        break;
    case TETHER_OP_MAX_UNPOOL:
        k_max_unpool(e, nd, k);
        break;
    case TETHER_OP_TRIANGULAR:
        k_triangular(e, nd, k);
        break;
    case TETHER_OP_DIAG_PROD:
        k_diag_prod(e, nd, k);
        break;
    case TETHER_OP_DFT:
        k_dft(e, nd, k);
        break;
    case TETHER_OP_STFT:
        k_stft(e, nd, k);
        break;
        TETHER__CASES_NOT_DATA
        TETHER__CASES_DATA_NOT_VISION
        line(e, "#error \"tether: not a vision operator\"");
        break;
    }
}
