/*
 * The reference loops of the vision and signal rows of the DATA family (grid_sample, roi_align,
 * max_pool_arg, max_unpool, triangular, diag_prod, dft, stft; ops.def, issue 27), in double for
 * every floating type and exactly in their class for integers (max_pool_arg, max_unpool move and
 * compare elements of any numeric type).
 *
 * What must stay true: every read and write is inside its tensor for any shape and attribute the
 * rules of ir/shapes_vision.c accept; a value that selects an element (a max_unpool index, a
 * roi_align batch index) is checked before the access and one out of range is
 * TETHER_ERR_INVALID_ARG naming the node (the generated C returns the same code). The formulas
 * are the ONNX operators' (ONNX Runtime's where the specification leaves it open) and
 * codegen/emit_c_vision.c computes the same ones.
 */
#include <math.h>
#include <string.h>

#include "interp_internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static double ld(const void *p, DLDataType t, size_t k) {
    return tether__interp_load(p, t, k).f;
}

/* An integer element (index) of any integer type; an unsigned one past INT64_MAX is negative
 * (out of range). */
static int64_t ild(const void *p, DLDataType t, size_t k) {
    val v = tether__interp_load(p, t, k);
    return v.c == TETHER__DC_UINT ? (int64_t)v.u : v.i;
}

static void st(void *p, DLDataType t, size_t k, double v) {
    val x = {TETHER__DC_F64, v, 0, 0};
    tether__interp_store(p, t, k, x);
}

/* ---- grid_sample ---- */

static double reflect(double x, double lo, double hi) {
    double range = hi - lo;
    if (range <= 0) {
        return lo;
    }
    if (x < lo) {
        double dx = lo - x;
        double nr = floor(dx / range), r = dx - nr * range;
        return fmod(nr, 2.0) == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi;
        double nr = floor(dx / range), r = dx - nr * range;
        return fmod(nr, 2.0) == 0 ? hi - r : lo + r;
    }
    return x;
}

typedef struct plane {
    const void *p;
    DLDataType t;
    size_t base;
    int64_t h, w;
    int pad; /* 0 zeros, 1 border, 2 reflection */
    double lo_x, hi_x, lo_y, hi_y;
} plane;

static double pixel(const plane *pl, int64_t r, int64_t c) {
    if (pl->pad == 0) {
        if (r < 0 || r >= pl->h || c < 0 || c >= pl->w) {
            return 0;
        }
    } else if (pl->pad == 1) {
        r = r < 0 ? 0 : r >= pl->h ? pl->h - 1 : r;
        c = c < 0 ? 0 : c >= pl->w ? pl->w - 1 : c;
    } else {
        c = (int64_t)reflect((double)c, pl->lo_x, pl->hi_x);
        r = (int64_t)reflect((double)r, pl->lo_y, pl->hi_y);
        r = r < 0 ? 0 : r >= pl->h ? pl->h - 1 : r;
        c = c < 0 ? 0 : c >= pl->w ? pl->w - 1 : c;
    }
    return ld(pl->p, pl->t, pl->base + (size_t)(r * pl->w + c));
}

static void cubic_coeffs(double x, double *c) {
    const double A = -0.75;
    x = fabs(x);
    c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
    c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
    c[3] = ((A * (2 - x) - 5 * A) * (2 - x) + 8 * A) * (2 - x) - 4 * A;
}

static double rne(double v) {
    double f = floor(v), d = v - f;
    if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0)) {
        f += 1;
    }
    return f;
}

static void run_grid_sample(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]], *gt = &g->tensors[n->inputs[1]],
                           *o = &g->tensors[n->outputs[0]];
    int mode = (int)(n->attrs.mode & 3), align = (int)((n->attrs.mode >> 4) & 1);
    int64_t N = xt->shape[0], C = xt->shape[1], H = xt->shape[2], W = xt->shape[3];
    int64_t HO = gt->shape[1], WO = gt->shape[2];
    plane pl = {buf[n->inputs[0]], xt->dtype, 0, H, W, (int)((n->attrs.mode >> 2) & 3), 0, 0, 0, 0};
    pl.lo_x = align ? 0 : -0.5;
    pl.hi_x = align ? (double)W - 1 : (double)W - 0.5;
    pl.lo_y = align ? 0 : -0.5;
    pl.hi_y = align ? (double)H - 1 : (double)H - 0.5;
    for (int64_t b = 0; b < N; b++) {
        for (int64_t i = 0; i < HO * WO; i++) {
            size_t gi = (size_t)((b * HO * WO + i) * 2);
            double gx = ld(buf[n->inputs[1]], gt->dtype, gi);
            double gy = ld(buf[n->inputs[1]], gt->dtype, gi + 1);
            double x = align ? (gx + 1) / 2 * (double)(W - 1) : ((gx + 1) * (double)W - 1) / 2;
            double y = align ? (gy + 1) / 2 * (double)(H - 1) : ((gy + 1) * (double)H - 1) / 2;
            /* clamped far outside any plane (NaN too): the integer conversions are defined */
            x = x >= -1e7 ? (x <= 1e7 ? x : 1e7) : -1e7;
            y = y >= -1e7 ? (y <= 1e7 ? y : 1e7) : -1e7;
            if (mode == 1) {
                x = rne(x);
                y = rne(y);
            }
            if (x < pl.lo_x || x > pl.hi_x || y < pl.lo_y || y > pl.hi_y) {
                if (pl.pad == 1) {
                    x = x < 0 ? 0 : x > (double)(W - 1) ? (double)(W - 1) : x;
                    y = y < 0 ? 0 : y > (double)(H - 1) ? (double)(H - 1) : y;
                } else if (pl.pad == 2) {
                    x = reflect(x, pl.lo_x, pl.hi_x);
                    y = reflect(y, pl.lo_y, pl.hi_y);
                }
            }
            for (int64_t c = 0; c < C; c++) {
                pl.base = (size_t)((b * C + c) * H * W);
                double v;
                if (mode == 1) {
                    v = pixel(&pl, (int64_t)y, (int64_t)x);
                } else if (mode == 0) {
                    double x1 = floor(x), y1 = floor(y);
                    double dx = x - x1, dy = y - y1;
                    int64_t c1 = (int64_t)x1, r1 = (int64_t)y1;
                    v = (1 - dy) * ((1 - dx) * pixel(&pl, r1, c1) + dx * pixel(&pl, r1, c1 + 1)) +
                        dy * ((1 - dx) * pixel(&pl, r1 + 1, c1) + dx * pixel(&pl, r1 + 1, c1 + 1));
                } else {
                    double x0 = floor(x) - 1, y0 = floor(y) - 1, cx[4], cy[4];
                    cubic_coeffs(x - x0 - 1, cx);
                    cubic_coeffs(y - y0 - 1, cy);
                    v = 0;
                    for (int r = 0; r < 4; r++) {
                        double row = 0;
                        for (int q = 0; q < 4; q++) {
                            row += cx[q] * pixel(&pl, (int64_t)y0 + r, (int64_t)x0 + q);
                        }
                        v += cy[r] * row;
                    }
                }
                st(buf[n->outputs[0]], o->dtype, (size_t)(((b * C + c) * HO * WO) + i), v);
            }
        }
    }
}

/* ---- roi_align ---- */

static int run_roi_align(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]], *rt = &g->tensors[n->inputs[1]],
                           *bt = &g->tensors[n->inputs[2]], *o = &g->tensors[n->outputs[0]];
    const tether_ir_attrs *a = &n->attrs;
    int64_t C = xt->shape[1], H = xt->shape[2], W = xt->shape[3], R = rt->shape[0];
    int64_t PH = a->ints[0], PW = a->ints[1];
    bool is_max = a->mode & 1, half = (a->mode & 2) != 0;
    double off = half ? 0.5 : 0, scale = (double)a->alpha;
    for (int64_t r = 0; r < R; r++) {
        int64_t b = ild(buf[n->inputs[2]], bt->dtype, (size_t)r);
        if (b < 0 || b >= xt->shape[0]) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "batch index %lld out of range for a batch of %lld",
                                         (long long)b, (long long)xt->shape[0]);
        }
        double sw = ld(buf[n->inputs[1]], rt->dtype, (size_t)(r * 4)) * scale - off;
        double sh = ld(buf[n->inputs[1]], rt->dtype, (size_t)(r * 4 + 1)) * scale - off;
        double ew = ld(buf[n->inputs[1]], rt->dtype, (size_t)(r * 4 + 2)) * scale - off;
        double eh = ld(buf[n->inputs[1]], rt->dtype, (size_t)(r * 4 + 3)) * scale - off;
        double rw = ew - sw, rh = eh - sh;
        if (!half) {
            rw = rw > 1 ? rw : 1;
            rh = rh > 1 ? rh : 1;
        }
        double bh = rh / (double)PH, bw = rw / (double)PW;
        /* the adaptive grid: ceil of the bin size, clamped to [0, 1e6] (NaN 0) as the C does */
        double fh = bh > 0 ? (bh < 1e6 ? bh : 1e6) : 0, fw = bw > 0 ? (bw < 1e6 ? bw : 1e6) : 0;
        int64_t gh = a->k > 0 ? a->k : (int64_t)ceil(fh);
        int64_t gw = a->k > 0 ? a->k : (int64_t)ceil(fw);
        double count = gh * gw > 1 ? (double)(gh * gw) : 1;
        for (int64_t c = 0; c < C; c++) {
            size_t base = (size_t)((b * C + c) * H * W);
            for (int64_t ph = 0; ph < PH; ph++) {
                for (int64_t pw = 0; pw < PW; pw++) {
                    double acc = 0;
                    for (int64_t iy = 0; iy < gh; iy++) {
                        double y = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                        for (int64_t ix = 0; ix < gw; ix++) {
                            double x = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                            double v = 0;
                            if (y >= -1.0 && y <= (double)H && x >= -1.0 && x <= (double)W) {
                                double yy = y <= 0 ? 0 : y, xx = x <= 0 ? 0 : x;
                                int64_t yl = (int64_t)yy, xl = (int64_t)xx, yh, xh;
                                if (yl >= H - 1) {
                                    yh = yl = H - 1;
                                    yy = (double)yl;
                                } else {
                                    yh = yl + 1;
                                }
                                if (xl >= W - 1) {
                                    xh = xl = W - 1;
                                    xx = (double)xl;
                                } else {
                                    xh = xl + 1;
                                }
                                double ly = yy - (double)yl, lx = xx - (double)xl;
                                double hy = 1 - ly, hx = 1 - lx;
                                const void *xp = buf[n->inputs[0]];
                                double t1 =
                                    hy * hx * ld(xp, xt->dtype, base + (size_t)(yl * W + xl));
                                double t2 =
                                    hy * lx * ld(xp, xt->dtype, base + (size_t)(yl * W + xh));
                                double t3 =
                                    ly * hx * ld(xp, xt->dtype, base + (size_t)(yh * W + xl));
                                double t4 =
                                    ly * lx * ld(xp, xt->dtype, base + (size_t)(yh * W + xh));
                                if (is_max) {
                                    v = t1 > t2 ? t1 : t2;
                                    v = v > t3 ? v : t3;
                                    v = v > t4 ? v : t4;
                                } else {
                                    v = t1 + t2 + t3 + t4;
                                }
                            }
                            if (is_max) {
                                acc = (iy == 0 && ix == 0) || v > acc ? v : acc;
                            } else {
                                acc += v;
                            }
                        }
                    }
                    st(buf[n->outputs[0]], o->dtype, (size_t)(((r * C + c) * PH + ph) * PW + pw),
                       is_max ? acc : acc / count);
                }
            }
        }
    }
    return TETHER_OK;
}

/* ---- max_pool_arg, max_unpool ---- */

static int cmp_val(val a, val b) {
    switch (a.c) {
    case TETHER__DC_F32:
    case TETHER__DC_F64:
        return a.f < b.f ? -1 : a.f > b.f ? 1 : 0;
    case TETHER__DC_INT:
        return a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
    case TETHER__DC_UINT:
    case TETHER__DC_NONE:
        break;
    }
    return a.u < b.u ? -1 : a.u > b.u ? 1 : 0;
}

static void run_max_pool_arg(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]], *o = &g->tensors[n->outputs[0]];
    const tether_ir_attrs *a = &n->attrs;
    int64_t NC = xt->shape[0] * xt->shape[1], H = xt->shape[2], W = xt->shape[3];
    int64_t OH = o->shape[2], OW = o->shape[3];
    for (int64_t p = 0; p < NC; p++) {
        for (int64_t oh = 0; oh < OH; oh++) {
            for (int64_t ow = 0; ow < OW; ow++) {
                val best = {TETHER__DC_NONE, 0, 0, 0};
                int64_t bi = -1;
                for (int64_t kh = 0; kh < a->kernel[0]; kh++) {
                    int64_t h = oh * a->strides[0] - a->pads[0] + kh * a->dilations[0];
                    if (h < 0 || h >= H) {
                        continue;
                    }
                    for (int64_t kw = 0; kw < a->kernel[1]; kw++) {
                        int64_t w = ow * a->strides[1] - a->pads[1] + kw * a->dilations[1];
                        if (w < 0 || w >= W) {
                            continue;
                        }
                        val v = tether__interp_load(buf[n->inputs[0]], xt->dtype,
                                                    (size_t)((p * H + h) * W + w));
                        if (bi < 0 || cmp_val(v, best) > 0) {
                            best = v;
                            bi = (a->mode & 2) ? p * H * W + w * H + h : (p * H + h) * W + w;
                        }
                    }
                }
                size_t oi = (size_t)((p * OH + oh) * OW + ow);
                if (a->mode & 1) {
                    val iv = {TETHER__DC_INT, 0, bi, (uint64_t)bi};
                    tether__interp_store(buf[n->outputs[0]], o->dtype, oi, iv);
                } else {
                    tether__interp_store(buf[n->outputs[0]], o->dtype, oi, best);
                }
            }
        }
    }
}

static int run_max_unpool(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]], *it = &g->tensors[n->inputs[1]],
                           *o = &g->tensors[n->outputs[0]];
    size_t es = tether_dtype_bytes(o->dtype), total = tether_ir_tensor_elements(o);
    size_t count = tether_ir_tensor_elements(xt);
    unsigned char *y = buf[n->outputs[0]];
    const unsigned char *x = buf[n->inputs[0]];
    memset(y, 0, total * es);
    int nd = o->ndim;
    int64_t sp[TETHER_IR_MAX_NDIM];
    size_t space = 1;
    for (int d = 0; d < nd; d++) {
        sp[d] = n->attrs.steps[d] ? n->attrs.steps[d] : o->shape[d];
        space *= (size_t)sp[d];
    }
    for (size_t k = 0; k < count; k++) {
        int64_t i = ild(buf[n->inputs[1]], it->dtype, k);
        if (i < 0 || (uint64_t)i >= space) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "index %lld out of range for an index space of %zu "
                                         "elements",
                                         (long long)i, space);
        }
        int64_t rem = i, off = 0, stride = 1;
        for (int d = nd - 1; d >= 0; d--) {
            off += (rem % sp[d]) * stride;
            rem /= sp[d];
            stride *= o->shape[d];
        }
        memcpy(y + (size_t)off * es, x + k * es, es);
    }
    return TETHER_OK;
}

/* ---- triangular, diag_prod ---- */

static void run_triangular(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]], *o = &g->tensors[n->outputs[0]];
    int64_t m = xt->shape[xt->ndim - 1];
    size_t mats = m ? tether_ir_tensor_elements(xt) / (size_t)(m * m) : 0;
    void *y = buf[n->outputs[0]];
    for (size_t b = 0; b < mats; b++) {
        size_t base = b * (size_t)(m * m);
        for (size_t i = 0; i < (size_t)(m * m); i++) {
            st(y, o->dtype, base + i, ld(buf[n->inputs[0]], xt->dtype, base + i));
        }
        for (int64_t c = 0; c < m; c++) {
            int64_t p = c;
            for (int64_t r = c + 1; r < m; r++) {
                if (fabs(ld(y, o->dtype, base + (size_t)(r * m + c))) >
                    fabs(ld(y, o->dtype, base + (size_t)(p * m + c)))) {
                    p = r;
                }
            }
            if (p != c) { /* swap rows p and c, negating one: the determinant stays */
                for (int64_t j = 0; j < m; j++) {
                    double t = ld(y, o->dtype, base + (size_t)(p * m + j));
                    st(y, o->dtype, base + (size_t)(p * m + j),
                       ld(y, o->dtype, base + (size_t)(c * m + j)));
                    st(y, o->dtype, base + (size_t)(c * m + j), -t);
                }
            }
            double piv = ld(y, o->dtype, base + (size_t)(c * m + c));
            for (int64_t r = c + 1; r < m; r++) {
                double f = piv != 0 ? ld(y, o->dtype, base + (size_t)(r * m + c)) / piv : 0;
                for (int64_t j = c; j < m; j++) {
                    size_t rj = base + (size_t)(r * m + j);
                    st(y, o->dtype, rj,
                       j == c
                           ? 0
                           : ld(y, o->dtype, rj) - f * ld(y, o->dtype, base + (size_t)(c * m + j)));
                }
            }
        }
    }
}

static void run_diag_prod(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]], *o = &g->tensors[n->outputs[0]];
    int64_t m = xt->shape[xt->ndim - 1];
    size_t mats = tether_ir_tensor_elements(o);
    for (size_t b = 0; b < mats; b++) {
        double p = 1;
        for (int64_t i = 0; i < m; i++) {
            p *= ld(buf[n->inputs[0]], xt->dtype, b * (size_t)(m * m) + (size_t)(i * m + i));
        }
        st(buf[n->outputs[0]], o->dtype, b, p);
    }
}

/* ---- dft, stft ---- */

/* One transform: len samples of x (element stride xs, complex when cplx, zero past have), times
 * window w (NULL: 1), into bins outputs of y (stride ys, interleaved re, im). */
static void transform(const void *xp, DLDataType xt, size_t x0, int64_t xs, int64_t have, bool cplx,
                      const void *wp, DLDataType wt, void *yp, DLDataType yt, size_t y0, int64_t ys,
                      int64_t len, int64_t bins, bool inverse) {
    const double two_pi = 6.283185307179586476925286766559;
    for (int64_t k = 0; k < bins; k++) {
        double re = 0, im = 0;
        for (int64_t j = 0; j < len && j < have; j++) {
            size_t xi = x0 + (size_t)(j * xs);
            double a = ld(xp, xt, xi * (cplx ? 2 : 1)), b = cplx ? ld(xp, xt, xi * 2 + 1) : 0;
            if (wp) {
                double w = ld(wp, wt, (size_t)j);
                a *= w;
                b *= w;
            }
            double ang = two_pi * (double)((k * j) % len) / (double)len;
            double cs = cos(ang), sn = inverse ? sin(ang) : -sin(ang);
            re += a * cs - b * sn;
            im += a * sn + b * cs;
        }
        if (inverse) {
            re /= (double)len;
            im /= (double)len;
        }
        size_t yi = (y0 + (size_t)(k * ys)) * 2;
        st(yp, yt, yi, re);
        st(yp, yt, yi + 1, im);
    }
}

static void run_dft(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]], *o = &g->tensors[n->outputs[0]];
    int ax = tether__ir_norm_axis(n->attrs.axis, xt->ndim);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < ax; d++) {
        outer *= xt->shape[d];
    }
    for (int d = ax + 1; d < xt->ndim - 1; d++) {
        inner *= xt->shape[d];
    }
    int64_t have = xt->shape[ax], bins = o->shape[ax];
    bool cplx = xt->shape[xt->ndim - 1] == 2;
    for (int64_t p = 0; p < outer; p++) {
        for (int64_t q = 0; q < inner; q++) {
            transform(buf[n->inputs[0]], xt->dtype, (size_t)(p * have * inner + q), inner, have,
                      cplx, NULL, xt->dtype, buf[n->outputs[0]], o->dtype,
                      (size_t)(p * bins * inner + q), inner, n->attrs.k, bins,
                      (n->attrs.mode & 1) != 0);
        }
    }
}

static void run_stft(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]], *o = &g->tensors[n->outputs[0]];
    const tether_ir_tensor *wt = tether__ir_in(g, n, 1);
    int64_t B = xt->shape[0], L = xt->shape[1], F = o->shape[1], bins = o->shape[2];
    int64_t fl = n->attrs.ints[0], step = n->attrs.k;
    bool cplx = xt->shape[2] == 2;
    for (int64_t b = 0; b < B; b++) {
        for (int64_t f = 0; f < F; f++) {
            transform(buf[n->inputs[0]], xt->dtype, (size_t)(b * L + f * step), 1, fl, cplx,
                      wt ? buf[n->inputs[1]] : NULL, wt ? wt->dtype : xt->dtype, buf[n->outputs[0]],
                      o->dtype, (size_t)((b * F + f) * bins), 1, fl, bins, false);
        }
    }
}

int tether__interp_vision(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    switch (n->op) {
    case TETHER_OP_GRID_SAMPLE:
        run_grid_sample(g, n, buf);
        return TETHER_OK;
    case TETHER_OP_ROI_ALIGN:
        return run_roi_align(g, n, buf);
    case TETHER_OP_MAX_POOL_ARG:
        run_max_pool_arg(g, n, buf);
        return TETHER_OK;
    case TETHER_OP_MAX_UNPOOL:
        return run_max_unpool(g, n, buf);
    case TETHER_OP_TRIANGULAR:
        run_triangular(g, n, buf);
        return TETHER_OK;
    case TETHER_OP_DIAG_PROD:
        run_diag_prod(g, n, buf);
        return TETHER_OK;
    case TETHER_OP_DFT:
        run_dft(g, n, buf);
        return TETHER_OK;
    case TETHER_OP_STFT:
        run_stft(g, n, buf);
        return TETHER_OK;
        TETHER__CASES_NOT_DATA
        TETHER__CASES_DATA_NOT_VISION
        break;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "no vision reference loops");
}
