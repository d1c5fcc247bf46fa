/*
 * The OpenCL backend's kernels of vision rows of the DATA family (issue 27), reached through
 * emit_opencl_layers.c's dispatch: grid_sample (bilinear, nearest, bicubic; zeros, border,
 * reflection padding; align_corners) and max_pool_arg (MaxPool's values or indices, row-major
 * or storage_order 1) one work-item per output element; max_unpool one work-item (zeros, then
 * the values in index order); triangular (Det's elimination with partial pivoting) one
 * work-item per matrix, diag_prod one per output.
 *
 * What must stay true: each computes emit_c_vision.c's formulas in the same compute type (float,
 * double for float64; float16/bfloat16 loaded to float) and order, so results equal the C path's
 * within rounding. Every access is inside its tensor for any input values: grid_sample's taps are
 * mapped into the plane (or read as 0) before the read; a max_unpool index out of range (the C
 * path's and the interpreter's run-time error; a kernel cannot report) skips its value.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/crt/dtype.h"

static int is_f64(DLDataType t) {
    return t.code == kDLFloat && t.bits == 64;
}

/* The compute type of a floating element type, as OpenCL C and as a DLDataType. */
static const char *rt(DLDataType t) {
    return is_f64(t) ? "double" : "float";
}

static DLDataType rdt(DLDataType t) {
    return is_f64(t) ? TETHER_DTYPE(kDLFloat, 64) : TETHER_FLOAT32;
}

/* `(R)p[idx]` in the compute type. */
static void ld(DLDataType t, const char *p, const char *idx, char *out, size_t n) {
    char l[400];
    tether__ocl_load(t, p, idx, l, sizeof l);
    snprintf(out, n, "(%s)%s", rt(t), l);
}

/* ---- grid_sample ---- */

/* `int name = expr;` mapped into [0, n): zeros padding -1 when outside, border clamped,
 * reflection reflected (align: about 0 and n-1, else about -0.5 and n-0.5). */
static void tap(ocl *e, const char *name, const char *expr, long long n, int pad, int align) {
    line(e, "int %s = %s;", name, expr);
    if (pad == 0) {
        open_block(e, "if (%s < 0 || %s >= %lld)", name, name, n);
        line(e, "%s = -1;", name);
        close_block(e);
        return;
    }
    if (pad == 2) {
        long long m = align ? n - 1 : n;
        open_block(e, "if (%s < 0 || %s >= %lld)", name, name, n);
        if (m <= 0) {
            line(e, "%s = 0;", name);
        } else {
            line(e, "int lo_ = %s < 0;", name);
            line(e, "int d_ = lo_ ? -%s - %d : %s - %lld;", name, align ? 0 : 1, name,
                 align ? n - 1 : n);
            line(e, "int q_ = d_ / %lld, r_ = d_ - q_ * %lld;", m, m);
            line(e, "%s = (lo_ != 0) == ((q_ & 1) == 0) ? r_ : %lld - r_;", name, n - 1);
        }
        close_block(e);
    }
    line(e, "%s = %s < 0 ? 0 : %s >= %lld ? %lld : %s;", name, name, name, n, n - 1, name);
}

/* `int v = floor(x);` of a clamped value (|x| <= 1e7). */
static void ifloor(ocl *e, const char *v, const char *x, const char *R) {
    line(e, "int %s = (int)%s;", v, x);
    open_block(e, "if ((%s)%s > %s)", R, v, x);
    line(e, "%s -= 1;", v);
    close_block(e);
}

/* Work-item f = (n * C + c) * P + i: output pixel i of channel c of image n. */
static void k_grid_sample(ocl *e, const tether_ir_node *nd) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *gr = T(e, nd->inputs[1]),
                           *y = T(e, nd->outputs[0]);
    int mode = (int)(nd->attrs.mode & 3), pad = (int)((nd->attrs.mode >> 2) & 3);
    int align = (int)((nd->attrs.mode >> 4) & 1);
    long long C = x->shape[1], H = x->shape[2], W = x->shape[3];
    long long P = gr->shape[1] * gr->shape[2];
    const char *R = rt(x->dtype);
    char a[500], b[500], idx[200];
    line(e, "const int i = f %% %lld, c = (f / %lld) %% %lld, n = f / %lld;", P, P, C, P * C);
    snprintf(idx, sizeof idx, "(n * %lld + i) * 2", P);
    ld(gr->dtype, "in1", idx, a, sizeof a);
    snprintf(idx, sizeof idx, "(n * %lld + i) * 2 + 1", P);
    ld(gr->dtype, "in1", idx, b, sizeof b);
    line(e, "%s gx = (%s)%s, gy = (%s)%s;", R, R, a, R, b);
    if (align) {
        line(e, "%s x = (gx + 1) / 2 * (%s)%lld, y_ = (gy + 1) / 2 * (%s)%lld;", R, R, W - 1, R,
             H - 1);
    } else {
        line(e, "%s x = ((gx + 1) * (%s)%lld - 1) / 2, y_ = ((gy + 1) * (%s)%lld - 1) / 2;", R, R,
             W, R, H);
    }
    /* clamped far outside any plane (NaN too), so that the integer conversions are defined */
    line(e, "x = x >= (%s)-1e7 ? (x <= (%s)1e7 ? x : (%s)1e7) : (%s)-1e7;", R, R, R, R);
    line(e, "y_ = y_ >= (%s)-1e7 ? (y_ <= (%s)1e7 ? y_ : (%s)1e7) : (%s)-1e7;", R, R, R, R);
    const char *vs[2] = {"x", "y_"};
    if (mode == 1) { /* round half to even */
        for (int j = 0; j < 2; j++) {
            open_scope(e);
            ifloor(e, "f_", vs[j], R);
            line(e, "%s d_ = %s - (%s)f_;", R, vs[j], R);
            line(e, "%s = (%s)(d_ > (%s)0.5 || (d_ == (%s)0.5 && (f_ & 1)) ? f_ + 1 : f_);", vs[j],
                 R, R, R);
            close_block(e);
        }
    }
    const char *lox = align ? "0" : "-0.5";
    char hix[40], hiy[40];
    snprintf(hix, sizeof hix, "%lld%s", align ? W - 1 : W, align ? "" : " - 0.5");
    snprintf(hiy, sizeof hiy, "%lld%s", align ? H - 1 : H, align ? "" : " - 0.5");
    if (pad != 0) {
        open_block(e, "if (x < (%s)%s || x > (%s)(%s) || y_ < (%s)%s || y_ > (%s)(%s))", R, lox, R,
                   hix, R, lox, R, hiy);
        if (pad == 1) {
            line(e, "x = x < 0 ? 0 : x > (%s)%lld ? (%s)%lld : x;", R, W - 1, R, W - 1);
            line(e, "y_ = y_ < 0 ? 0 : y_ > (%s)%lld ? (%s)%lld : y_;", R, H - 1, R, H - 1);
        } else {
            const char *his[2] = {hix, hiy};
            for (int j = 0; j < 2; j++) {
                open_scope(e);
                line(e, "%s lo = (%s)%s, hi = (%s)(%s), range = hi - lo;", R, R, lox, R, his[j]);
                open_block(e, "if (range <= 0)");
                line(e, "%s = lo;", vs[j]);
                e->depth--;
                open_block(e, "} else if (%s < lo || %s > hi)", vs[j], vs[j]);
                line(e, "%s dx = %s < lo ? lo - %s : %s - hi;", R, vs[j], vs[j], vs[j]);
                line(e, "int q = (int)(dx / range);");
                line(e, "%s r = dx - (%s)q * range;", R, R);
                line(e, "%s = (%s < lo) == ((q & 1) == 0) ? lo + r : hi - r;", vs[j], vs[j]);
                close_block(e);
                close_block(e);
            }
        }
        close_block(e);
    }
    int ntap = mode == 1 ? 1 : mode == 0 ? 2 : 4;
    if (mode == 1) {
        line(e, "int bx = (int)x, by = (int)y_;");
    } else {
        ifloor(e, "bx", "x", R);
        ifloor(e, "by", "y_", R);
        line(e, "%s tx = x - (%s)bx, ty = y_ - (%s)by;", R, R, R);
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
            open_scope(e);
            line(e, "const %s A = (%s)-0.75, t = %s;", R, R, ts[j]);
            line(e, "%s[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;", ws[j]);
            line(e, "%s[1] = ((A + 2) * t - (A + 3)) * t * t + 1;", ws[j]);
            line(e, "%s[2] = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1;", ws[j]);
            line(e, "%s[3] = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A;", ws[j]);
            close_block(e);
        }
    }
    line(e, "int rr[%d] = {r0%s%s%s}, cc[%d] = {c0%s%s%s};", ntap, ntap > 1 ? ", r1" : "",
         ntap > 2 ? ", r2" : "", ntap > 2 ? ", r3" : "", ntap, ntap > 1 ? ", c1" : "",
         ntap > 2 ? ", c2" : "", ntap > 2 ? ", c3" : "");
    line(e, "const int base = (n * %lld + c) * %lld;", C, H * W);
    line(e, "%s v = 0;", R);
    open_block(e, "for (int p = 0; p < %d; ++p)", ntap);
    open_block(e, "for (int q = 0; q < %d; ++q)", ntap);
    snprintf(idx, sizeof idx, "base + rr[p] * %lld + cc[q]", W);
    ld(x->dtype, "in0", idx, a, sizeof a);
    line(e, "%s px = rr[p] < 0 || cc[q] < 0 ? (%s)0 : %s;", R, R, a);
    line(e, "%s", mode == 1 ? "v += px;" : "v += wy[p] * wx[q] * px;");
    close_block(e);
    close_block(e);
    tether__ocl_store(e, rdt(x->dtype), y->dtype, "y", "f", "v");
}

/* ---- max_pool_arg, max_unpool ---- */

static void k_max_pool_arg(ocl *e, const tether_ir_node *nd) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    const tether_ir_attrs *a = &nd->attrs;
    long long H = x->shape[2], W = x->shape[3], OH = y->shape[2], OW = y->shape[3];
    const char *CT = tether__ocl_compute_type(x->dtype);
    char l[400];
    line(e, "const int ow = f %% %lld, oh = (f / %lld) %% %lld, p = f / %lld;", OW, OW, OH,
         OH * OW);
    line(e, "%s best = 0;", CT);
    line(e, "long bi = -1;");
    open_block(e, "for (int kh = 0; kh < %lld; ++kh)", (long long)a->kernel[0]);
    line(e, "const int h = oh * %lld - %lld + kh * %lld;", (long long)a->strides[0],
         (long long)a->pads[0], (long long)a->dilations[0]);
    open_block(e, "if (h < 0 || h >= %lld)", H);
    line(e, "continue;");
    close_block(e);
    open_block(e, "for (int kw = 0; kw < %lld; ++kw)", (long long)a->kernel[1]);
    line(e, "const int w = ow * %lld - %lld + kw * %lld;", (long long)a->strides[1],
         (long long)a->pads[1], (long long)a->dilations[1]);
    open_block(e, "if (w < 0 || w >= %lld)", W);
    line(e, "continue;");
    close_block(e);
    line(e, "const long xi = ((long)p * %lld + h) * %lld + w;", H, W);
    tether__ocl_load(x->dtype, "in0", "xi", l, sizeof l);
    line(e, "const %s v = %s;", CT, l);
    open_block(e, "if (bi < 0 || v > best)");
    line(e, "best = v;");
    if (a->mode & 2) {
        line(e, "bi = (long)p * %lld + (long)w * %lld + h;", H * W, H);
    } else {
        line(e, "bi = xi;");
    }
    close_block(e);
    close_block(e);
    close_block(e);
    if (a->mode & 1) {
        line(e, "y[f] = bi;");
    } else {
        tether__ocl_store(e, x->dtype, y->dtype, "y", "f", "best");
    }
}

/* One work-item: every output 0, then the values at their indices in order (duplicates resolve
 * as the C path's: the last wins). */
static void k_max_unpool(ocl *e, const tether_ir_node *nd) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    long long total = (long long)tether_ir_tensor_elements(y);
    open_block(e, "for (long i = 0; i < %lld; ++i)", total);
    line(e, "y[i] = 0;");
    close_block(e);
    long long sp[TETHER_IR_MAX_NDIM], space = 1;
    int same = 1;
    for (int d = 0; d < y->ndim; d++) {
        sp[d] = nd->attrs.steps[d] ? nd->attrs.steps[d] : y->shape[d];
        space *= sp[d];
        same &= sp[d] == y->shape[d];
    }
    open_block(e, "for (long k = 0; k < %lld; ++k)", (long long)tether_ir_tensor_elements(x));
    line(e, "const long j = (long)in1[k];");
    open_block(e, "if (j < 0 || j >= %lld)", space);
    line(e, "continue; /* out of range (see the file's comment) */");
    close_block(e);
    if (same) {
        line(e, "y[j] = in0[k];");
    } else { /* the index's coordinates in the index space, placed in the output */
        line(e, "long rem = j, off = 0;");
        long long stride = 1;
        for (int d = y->ndim - 1; d >= 0; d--) {
            line(e, "off += (rem %% %lld) * %lld;", sp[d], stride);
            line(e, "rem /= %lld;", sp[d]);
            stride *= y->shape[d];
        }
        line(e, "y[off] = in0[k];");
    }
    close_block(e);
}

/* ---- triangular, diag_prod ---- */

/* Work-item f: matrix f copied into y and brought to upper triangular form in place (row swaps
 * negate the swapped row, so the diagonal's product is the determinant). */
static void k_triangular(ocl *e, const tether_ir_node *nd) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    long long m = x->shape[x->ndim - 1], mm = m * m;
    const char *F = rt(x->dtype);
    line(e, "const long a = (long)f * %lld;", mm);
    open_block(e, "for (int i = 0; i < %lld; ++i)", mm);
    line(e, "y[a + i] = in0[a + i];");
    close_block(e);
    open_block(e, "for (int c = 0; c < %lld; ++c)", m);
    line(e, "int p = c;");
    open_block(e, "for (int r = c + 1; r < %lld; ++r)", m);
    line(e, "%s u = y[a + r * %lld + c], v = y[a + p * %lld + c];", F, m, m);
    open_block(e, "if ((u < 0 ? -u : u) > (v < 0 ? -v : v))");
    line(e, "p = r;");
    close_block(e);
    close_block(e);
    open_block(e, "if (p != c)");
    open_block(e, "for (int j = 0; j < %lld; ++j)", m);
    line(e, "%s t = y[a + p * %lld + j];", F, m);
    line(e, "y[a + p * %lld + j] = y[a + c * %lld + j];", m, m);
    line(e, "y[a + c * %lld + j] = -t;", m);
    close_block(e);
    close_block(e);
    line(e, "%s piv = y[a + c * %lld + c];", F, m);
    open_block(e, "for (int r = c + 1; r < %lld; ++r)", m);
    line(e, "%s g = piv != 0 ? y[a + r * %lld + c] / piv : 0;", F, m);
    line(e, "y[a + r * %lld + c] = 0;", m);
    open_block(e, "for (int j = c + 1; j < %lld; ++j)", m);
    line(e, "y[a + r * %lld + j] = y[a + r * %lld + j] - g * y[a + c * %lld + j];", m, m, m);
    close_block(e);
    close_block(e);
    close_block(e);
}

static void k_diag_prod(ocl *e, const tether_ir_node *nd) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    long long m = x->shape[x->ndim - 1];
    line(e, "%s p = 1;", rt(x->dtype));
    open_block(e, "for (int i = 0; i < %lld; ++i)", m);
    line(e, "p *= in0[(long)f * %lld + i * %lld];", m * m, m + 1);
    close_block(e);
    line(e, "y[f] = p;");
}

int tether__ocl_vision_op(tether_op op) {
    return op == TETHER_OP_GRID_SAMPLE || op == TETHER_OP_MAX_POOL_ARG ||
           op == TETHER_OP_MAX_UNPOOL || op == TETHER_OP_TRIANGULAR || op == TETHER_OP_DIAG_PROD;
}

int64_t tether__ocl_vision_items(const ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    switch ((int)n->op) {
    case TETHER_OP_MAX_UNPOOL:
        return 1;
    case TETHER_OP_TRIANGULAR: {
        int64_t mm = x->shape[x->ndim - 1] * x->shape[x->ndim - 1];
        return mm ? (int64_t)tether_ir_tensor_elements(x) / mm : 0;
    }
    default:
        return (int64_t)tether_ir_tensor_elements(T(e, n->outputs[0]));
    }
}

int64_t tether__ocl_vision_serial(const ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    int64_t m = x->ndim ? x->shape[x->ndim - 1] : 1;
    switch ((int)n->op) {
    case TETHER_OP_MAX_UNPOOL:
        return (int64_t)tether_ir_tensor_elements(T(e, n->outputs[0])) +
               (int64_t)tether_ir_tensor_elements(x);
    case TETHER_OP_TRIANGULAR:
        return m * m * m;
    case TETHER_OP_DIAG_PROD:
        return m;
    case TETHER_OP_MAX_POOL_ARG:
        return (int64_t)n->attrs.kernel[0] * n->attrs.kernel[1];
    default: /* grid_sample: the taps */
        return (n->attrs.mode & 3) == 2 ? 16 : (n->attrs.mode & 3) == 1 ? 1 : 4;
    }
}

void tether__ocl_vision_body(ocl *e, const tether_ir_node *n) {
    switch ((int)n->op) {
    case TETHER_OP_GRID_SAMPLE:
        k_grid_sample(e, n);
        return;
    case TETHER_OP_MAX_POOL_ARG:
        k_max_pool_arg(e, n);
        return;
    case TETHER_OP_MAX_UNPOOL:
        k_max_unpool(e, n);
        return;
    case TETHER_OP_TRIANGULAR:
        k_triangular(e, n);
        return;
    default:
        k_diag_prod(e, n);
        return;
    }
}
