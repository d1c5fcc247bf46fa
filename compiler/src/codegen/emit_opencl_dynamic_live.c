/*
 * The OpenCL kernels of the readers of a tensor of data-dependent size that need its live extent
 * (ir/shapes_dynamic_live.c; docs/codegen.md "OpenCL data-dependent output sizes"): transpose,
 * concat, gather and slice wired with TETHER__DYN_LIVE (their last inputs the int64 [1] live
 * extents of their dynamic data inputs), and the extent nodes of a slice or concat (mode
 * TETHER__DYN_COUNT: the output's live extent as int64 [1]), the OpenCL counterparts of
 * emit_c_dynamic_live.c.
 *
 * One work-item per element of the output's bound (an extent node: one): each reads the live
 * extents from device memory, clamps them to the bounds, computes the live shapes and the number
 * of live output elements `tot`; an element below `tot` is copied from its source element (as
 * bits, through the unsigned type of the element's width), one at or past it is zeroed.
 *
 * What must stay true: the same elements in the same places as emit_c_dynamic_live.c (and so
 * interp/interp_dynamic_live.c), byte for byte, the zeros past the live elements included; a
 * gather index outside the live extent is reported through the run-time error flag
 * (emit_opencl_check.c: tether__ocl_check_what's entry for a live gather, the C kernel's -1,
 * TETHER_ERR_INVALID_ARG) by work-item 0 checking every index (so an empty live output still
 * fails, as in C) and by any work-item meeting one, which then reads nothing; extents are clamped
 * to the bounds, so nothing is read or written outside a tensor.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/crt/dtype.h"

int tether__ocl_live_owns(const tether_ir_graph *g, const tether_ir_node *n) {
    (void)g;
    return tether__ir_live_wired(n) && n->noutputs == 1 && n->outputs[0] >= 0 &&
           n->ninputs >= (int)n->attrs.k && n->attrs.k >= 1 && n->ninputs <= 32;
}

int64_t tether__ocl_live_items(const ocl *e, const tether_ir_node *n) {
    if (n->attrs.mode & TETHER__DYN_COUNT) {
        return 1;
    }
    return (int64_t)tether_ir_tensor_elements(T(e, n->outputs[0]));
}

int64_t tether__ocl_live_serial(const ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    switch ((int)n->op) {
    case TETHER_OP_GATHER: /* work-item 0 checks every index */
        return (int64_t)tether_ir_tensor_elements(T(e, n->inputs[1])) + x->ndim;
    case TETHER_OP_CONCAT:
        return n->attrs.k;
    default:
        return x->ndim;
    }
}

/* The unsigned OpenCL type of an element of t's width (a copy as bits). */
static const char *bits_type(const tether_ir_tensor *t) {
    size_t b = tether_dtype_bytes(t->dtype);
    return b == 1 ? "uchar" : b == 2 ? "ushort" : b == 4 ? "uint" : "ulong";
}

/* `const long lv<j>` = the clamped live extent of each dynamic data input j. */
static void declare_live(ocl *e, const tether_ir_node *n) {
    int m = 0, nk = (int)n->attrs.k;
    for (int j = 0; j < nk; j++) {
        const tether_ir_tensor *t = T(e, n->inputs[j]);
        if (t->dyn_dim <= 0) {
            continue;
        }
        long long b = (long long)t->shape[t->dyn_dim - 1];
        const char *x = in_name(nk + m++);
        line(e, "const long lv%d = (long)(%s[0] < 0 ? 0 : %s[0] > %lldL ? %lldL : %s[0]);", j, x, x,
             b, b, x);
    }
}

/* `const long <name>[nd] = {...}` of input j's dimensions, its dynamic one the live extent. */
static void dims_array(ocl *e, const tether_ir_node *n, int j, const char *name) {
    const tether_ir_tensor *t = T(e, n->inputs[j]);
    char s[600];
    size_t o = 0;
    for (int d = 0; d < t->ndim && o < sizeof s; d++) {
        if (d == t->dyn_dim - 1) {
            o += (size_t)snprintf(s + o, sizeof s - o, "%slv%d", d ? ", " : "", j);
        } else {
            o += (size_t)snprintf(s + o, sizeof s - o, "%s%lldL", d ? ", " : "",
                                  (long long)t->shape[d]);
        }
    }
    line(e, "const long %s[%d] = {%s};", name, t->ndim, s);
}

/* The bit views yb of y and xb<q> of the data inputs, same width. */
static void bit_views(ocl *e, const tether_ir_node *n) {
    const char *u = bits_type(T(e, n->outputs[0]));
    line(e, "__global %s *yb = (__global %s *)y;", u, u);
    for (int q = 0; q < (int)n->attrs.k; q++) {
        if (n->op == TETHER_OP_GATHER && q > 0) {
            break; /* the indices are read as numbers */
        }
        line(e, "const __global %s *xb%d = (const __global %s *)%s;", u, q, u, in_name(q));
    }
}

/* past the `tot` live elements: zero, and nothing more for this work-item */
static void zero_past(ocl *e) {
    open_block(e, "if ((long)f >= tot)");
    line(e, "yb[f] = 0;");
    line(e, "return;");
    close_block(e);
}

/* yb[f] = xb0[sum((st[a] + i_a * sp[a]) * xs[src[a]])], i over the output's live dims od. */
static void strided_copy(ocl *e, int r) {
    line(e, "long xs[%d];", r);
    line(e, "xs[%d] = 1;", r - 1);
    open_block(e, "for (int a = %d; a >= 0; --a)", r - 2);
    line(e, "xs[a] = xs[a + 1] * xd[a + 1];");
    close_block(e);
    line(e, "long tot = 1;");
    open_block(e, "for (int a = 0; a < %d; ++a)", r);
    line(e, "tot *= od[a];");
    close_block(e);
    zero_past(e);
    line(e, "long rem = f, off = 0;");
    open_block(e, "for (int a = %d; a >= 0; --a)", r - 1);
    line(e, "const long i = rem %% od[a];");
    line(e, "rem /= od[a];");
    line(e, "off += (st[a] + i * sp[a]) * xs[src[a]];");
    close_block(e);
    line(e, "yb[f] = xb0[off];");
}

static void k_transpose(ocl *e, const tether_ir_node *n) {
    int r = T(e, n->inputs[0])->ndim;
    char p[400];
    size_t o = 0;
    for (int a = 0; a < r && o < sizeof p; a++) {
        o += (size_t)snprintf(p + o, sizeof p - o, "%s%lld", a ? ", " : "",
                              (long long)n->attrs.ints[a]);
    }
    bit_views(e, n);
    dims_array(e, n, 0, "xd");
    line(e, "const int src[%d] = {%s};", r, p);
    line(e, "long od[%d], st[%d], sp[%d];", r, r, r);
    open_block(e, "for (int a = 0; a < %d; ++a)", r);
    line(e, "od[a] = xd[src[a]];");
    line(e, "st[a] = 0;");
    line(e, "sp[a] = 1;");
    close_block(e);
    strided_copy(e, r);
}

/* An int64 as an OpenCL C literal (INT64_MIN has none of its own). */
static void lit(char *buf, size_t n, int64_t v) {
    if (v == INT64_MIN) {
        snprintf(buf, n, "(-9223372036854775807L - 1)");
    } else {
        snprintf(buf, n, "%lldL", (long long)v);
    }
}

static void k_slice(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    const tether_ir_attrs *a = &n->attrs;
    int r = x->ndim, dd = x->dyn_dim - 1;
    char st[600] = "", sp[600] = "", od[600] = "", ids[200] = "", s[48], en[48];
    size_t o1 = 0, o2 = 0, o3 = 0, o4 = 0;
    for (int d = 0; d < r; d++) {
        o1 += (size_t)snprintf(st + o1, sizeof st - o1, "%s%lldL", d ? ", " : "",
                               d == dd ? 0LL : (long long)a->ints[d]);
        o2 += (size_t)snprintf(sp + o2, sizeof sp - o2, "%s%lldL", d ? ", " : "",
                               (long long)a->steps[d]);
        o3 += (size_t)snprintf(od + o3, sizeof od - o3, "%s%lldL", d ? ", " : "",
                               d == dd ? 0LL : (long long)y->shape[d]);
        o4 += (size_t)snprintf(ids + o4, sizeof ids - o4, "%s%d", d ? ", " : "", d);
    }
    /* along the dynamic axis: ONNX's clamping of starts and ends against the live extent */
    long long step = (long long)a->steps[dd];
    lit(s, sizeof s, a->ints[dd]);
    lit(en, sizeof en, a->ints[r + dd]);
    line(e, "const long D = lv0;");
    line(e, "long s0 = %s, e0 = %s;", s, en);
    line(e, "s0 = s0 < 0 ? s0 + D : s0;");
    line(e, "e0 = e0 < 0 ? e0 + D : e0;");
    if (step > 0) {
        line(e, "s0 = s0 < 0 ? 0 : s0 > D ? D : s0;");
        line(e, "e0 = e0 < 0 ? 0 : e0 > D ? D : e0;");
        line(e, "const long len = e0 > s0 ? (e0 - s0 + %lldL) / %lldL : 0;", step - 1, step);
    } else {
        line(e, "s0 = s0 < 0 ? 0 : s0 > D - 1 ? D - 1 : s0;");
        line(e, "e0 = e0 < -1 ? -1 : e0 > D - 1 ? D - 1 : e0;");
        line(e, "const long len = D > 0 && s0 > e0 ? (s0 - e0 + %lldL) / %lldL : 0;", -step - 1,
             -step);
    }
    if (a->mode & TETHER__DYN_COUNT) {
        line(e, "y[0] = len;");
        return;
    }
    bit_views(e, n);
    dims_array(e, n, 0, "xd");
    line(e, "const int src[%d] = {%s};", r, ids);
    line(e, "long st[%d] = {%s}, od[%d] = {%s};", r, st, r, od);
    line(e, "const long sp[%d] = {%s};", r, sp);
    line(e, "st[%d] = s0;", dd);
    line(e, "od[%d] = len;", dd);
    strided_copy(e, r);
}

static void k_gather(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *ix = T(e, n->inputs[1]);
    int r = x->ndim, ax = tether__ir_norm_axis(n->attrs.axis, r);
    long long ni = (long long)tether_ir_tensor_elements(ix);
    bit_views(e, n);
    dims_array(e, n, 0, "xd");
    line(e, "long outer = 1, inner = 1;");
    open_block(e, "for (int a = 0; a < %d; ++a)", r);
    line(e, "outer *= a < %d ? xd[a] : 1;", ax);
    line(e, "inner *= a > %d ? xd[a] : 1;", ax);
    close_block(e);
    line(e, "const long dim = xd[%d];", ax);
    open_block(e, "if (f == 0) /* every index, as the C kernel before it copies anything */");
    open_block(e, "for (long j = 0; j < %lldL; ++j)", ni);
    open_block(e, "if ((long)in1[j] < -dim || (long)in1[j] >= dim)");
    tether__ocl_fail(e);
    line(e, "return;");
    close_block(e);
    close_block(e);
    close_block(e);
    line(e, "const long tot = outer * %lldL * inner;", ni);
    zero_past(e);
    line(e, "const long i = f %% inner, j = (f / inner) %% %lldL, p = f / (inner * %lldL);", ni,
         ni);
    line(e, "const long v = (long)in1[j];");
    open_block(e, "if (v < -dim || v >= dim)");
    tether__ocl_fail(e);
    line(e, "return;");
    close_block(e);
    line(e, "const long w = v < 0 ? v + dim : v;");
    line(e, "yb[f] = xb0[(p * dim + w) * inner + i];");
}

static void k_concat(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    int ax = (int)n->attrs.axis, nk = (int)n->attrs.k;
    long long outer = 1, inner = 1;
    for (int d = 0; d < x->ndim; d++) {
        outer *= d < ax ? x->shape[d] : 1;
        inner *= d > ax ? x->shape[d] : 1;
    }
    char sum[800] = "0";
    size_t o = 1;
    for (int q = 0; q < nk; q++) {
        const tether_ir_tensor *t = T(e, n->inputs[q]);
        if (t->dyn_dim > 0) {
            line(e, "const long len%d = lv%d;", q, q);
        } else {
            line(e, "const long len%d = %lldL;", q, (long long)t->shape[ax]);
        }
        if (o < sizeof sum) {
            o += (size_t)snprintf(sum + o, sizeof sum - o, " + len%d", q);
        }
    }
    line(e, "const long catn = %s;", sum);
    if (n->attrs.mode & TETHER__DYN_COUNT) {
        line(e, "y[0] = catn;");
        return;
    }
    bit_views(e, n);
    line(e, "const long tot = %lldL * catn * %lldL;", outer, inner);
    zero_past(e);
    line(e, "const long p = f / (catn * %lldL);", inner);
    line(e, "long rr = f - p * catn * %lldL;", inner);
    for (int q = 0; q < nk; q++) {
        open_block(e, "if (rr < len%d * %lldL)", q, inner);
        line(e, "yb[f] = xb%d[p * len%d * %lldL + rr];", q, q, inner);
        line(e, "return;");
        close_block(e);
        line(e, "rr -= len%d * %lldL;", q, inner);
    }
}

void tether__ocl_live_body(ocl *e, const tether_ir_node *n) {
    if (n->attrs.mode & TETHER__DYN_COUNT) { /* an extent node reads the extents only */
        for (int j = 0; j < (int)n->attrs.k; j++) {
            line(e, "(void)%s;", in_name(j));
        }
    }
    declare_live(e, n);
    switch ((int)n->op) {
    case TETHER_OP_TRANSPOSE:
        k_transpose(e, n);
        return;
    case TETHER_OP_SLICE:
        k_slice(e, n);
        return;
    case TETHER_OP_GATHER:
        k_gather(e, n);
        return;
    default:
        k_concat(e, n);
        return;
    }
}
