/*
 * The C kernels of the readers of a tensor of data-dependent size that need its live extent
 * (ir/shapes_dynamic_live.c): transpose, concat, gather and slice wired with TETHER__DYN_LIVE
 * (their last inputs the int64 [1] live extents of their dynamic data inputs). Each computes on
 * the live shapes at run time, writes the output densely at the start of its buffer and zeroes
 * the rest up to the bound; the extent node of a slice or concat (mode TETHER__DYN_COUNT) writes
 * the output's live extent.
 *
 * What must stay true: the same elements in the same places as interp/interp_dynamic_live.c
 * (bit-equal outputs); a gather index outside the live extent returns -1
 * (TETHER_ERR_INVALID_ARG) before anything is copied from it; extents are clamped to the
 * bounds, so nothing is read or written outside a tensor. No 64-bit division (MCU targets), no
 * scratch memory beyond a few ints on the stack.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "emit_c_internal.h"
#include "tether/crt/dtype.h"

/* An int64 as a C literal (INT64_MIN has none of its own). */
static void lit(char *buf, size_t n, int64_t v) {
    if (v == INT64_MIN) {
        snprintf(buf, n, "(-9223372036854775807LL - 1)");
    } else {
        snprintf(buf, n, "%lldLL", (long long)v);
    }
}

/* `const int <name>[nd] = {...}` of tensor input j's dimensions, its dynamic one the live extent
 * (declared as `lv<j>` by declare_live). */
static void dims_array(em *e, const tether_ir_node *nd, int j, const char *name) {
    const tether_ir_tensor *t = T(e, nd->inputs[j]);
    char s[400];
    size_t o = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (d == t->dyn_dim - 1) {
            o += (size_t)snprintf(s + o, sizeof s - o, "%slv%d", d ? ", " : "", j);
        } else {
            o += (size_t)snprintf(s + o, sizeof s - o, "%s%lld", d ? ", " : "",
                                  (long long)t->shape[d]);
        }
    }
    line(e, "const int %s[%d] = {%s};", name, t->ndim, s);
}

/* `const int lv<j>` = the clamped live extent of each dynamic data input j. */
static void declare_live(em *e, const tether_ir_node *nd, const kargs *k) {
    int m = 0, nk = (int)nd->attrs.k;
    for (int j = 0; j < nk; j++) {
        const tether_ir_tensor *t = T(e, nd->inputs[j]);
        if (t->dyn_dim <= 0) {
            continue;
        }
        long long b = (long long)t->shape[t->dyn_dim - 1];
        const char *x = k->in[nk + m++];
        line(e, "const int lv%d = (int)(%s[0] < 0 ? 0 : %s[0] > %lldLL ? %lldLL : %s[0]);", j, x, x,
             b, b, x);
    }
}

/* The zeros past the `tot` elements written, up to the output's bound. */
static void zero_rest(em *e, const tether_ir_node *nd, const kargs *k) {
    line(e, "for (int z = tot; z < %lld; ++z) {",
         (long long)tether_ir_tensor_elements(T(e, nd->outputs[0])));
    line(e, "    %s[z] = 0;", k->out);
    line(e, "}");
}

/* y[f] = x[sum((st[a] + i_a * sp[a]) * xs[src[a]])] over the output's live dims od. */
static void strided_copy(em *e, int ndim, const kargs *k) {
    line(e, "int xs[%d];", ndim);
    line(e, "xs[%d] = 1;", ndim - 1);
    line(e, "for (int a = %d; a >= 0; --a) {", ndim - 2);
    line(e, "    xs[a] = xs[a + 1] * xd[a + 1];");
    line(e, "}");
    line(e, "int tot = 1;");
    line(e, "for (int a = 0; a < %d; ++a) {", ndim);
    line(e, "    tot *= od[a];");
    line(e, "}");
    line(e, "for (int f = 0; f < tot; ++f) {");
    line(e, "    int rem = f, off = 0;");
    line(e, "    for (int a = %d; a >= 0; --a) {", ndim - 1);
    line(e, "        const int i = rem %% od[a];");
    line(e, "        rem /= od[a];");
    line(e, "        off += (st[a] + i * sp[a]) * xs[src[a]];");
    line(e, "    }");
    line(e, "    %s[f] = %s[off];", k->out, k->in[0]);
    line(e, "}");
}

static void k_transpose(em *e, const tether_ir_node *nd, const kargs *k) {
    int r = T(e, nd->inputs[0])->ndim;
    char p[200];
    size_t o = 0;
    for (int a = 0; a < r; a++) {
        o += (size_t)snprintf(p + o, sizeof p - o, "%s%lld", a ? ", " : "",
                              (long long)nd->attrs.ints[a]);
    }
    dims_array(e, nd, 0, "xd");
    line(e, "const int src[%d] = {%s};", r, p);
    line(e, "int od[%d], st[%d], sp[%d];", r, r, r);
    line(e, "for (int a = 0; a < %d; ++a) {", r);
    line(e, "    od[a] = xd[src[a]];");
    line(e, "    st[a] = 0;");
    line(e, "    sp[a] = 1;");
    line(e, "}");
    strided_copy(e, r, k);
    zero_rest(e, nd, k);
}

static void k_slice(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    const tether_ir_attrs *a = &nd->attrs;
    int r = x->ndim, dd = x->dyn_dim - 1;
    char st[200] = "", sp[200] = "", od[200] = "", s[48], en[48];
    size_t o1 = 0, o2 = 0, o3 = 0;
    for (int d = 0; d < r; d++) {
        o1 += (size_t)snprintf(st + o1, sizeof st - o1, "%s%lld", d ? ", " : "",
                               d == dd ? 0LL : (long long)a->ints[d]);
        o2 += (size_t)snprintf(sp + o2, sizeof sp - o2, "%s%lld", d ? ", " : "",
                               (long long)a->steps[d]);
        o3 += (size_t)snprintf(od + o3, sizeof od - o3, "%s%lld", d ? ", " : "",
                               d == dd ? 0LL : (long long)y->shape[d]);
    }
    /* along the dynamic axis: ONNX's clamping of starts and ends against the live extent */
    long long step = (long long)a->steps[dd];
    lit(s, sizeof s, a->ints[dd]);
    lit(en, sizeof en, a->ints[r + dd]);
    line(e, "const long long D = lv0;");
    line(e, "long long s0 = %s, e0 = %s;", s, en);
    line(e, "s0 = s0 < 0 ? s0 + D : s0;");
    line(e, "e0 = e0 < 0 ? e0 + D : e0;");
    if (step > 0) {
        line(e, "s0 = s0 < 0 ? 0 : s0 > D ? D : s0;");
        line(e, "e0 = e0 < 0 ? 0 : e0 > D ? D : e0;");
        line(e, "const int len = e0 > s0 ? ((int)(e0 - s0) + %lld) / %lld : 0;", step - 1, step);
    } else {
        line(e, "s0 = s0 < 0 ? 0 : s0 > D - 1 ? D - 1 : s0;");
        line(e, "e0 = e0 < -1 ? -1 : e0 > D - 1 ? D - 1 : e0;");
        line(e, "const int len = D > 0 && s0 > e0 ? ((int)(s0 - e0) + %lld) / %lld : 0;", -step - 1,
             -step);
    }
    if (a->mode & TETHER__DYN_COUNT) {
        line(e, "%s[0] = (int64_t)len;", k->out);
        return;
    }
    dims_array(e, nd, 0, "xd");
    char ids[64];
    size_t o4 = 0;
    for (int d = 0; d < r; d++) {
        o4 += (size_t)snprintf(ids + o4, sizeof ids - o4, "%s%d", d ? ", " : "", d);
    }
    line(e, "const int src[%d] = {%s};", r, ids);
    line(e, "int st[%d] = {%s}, od[%d] = {%s};", r, st, r, od);
    line(e, "const int sp[%d] = {%s};", r, sp);
    line(e, "st[%d] = (int)s0;", dd);
    line(e, "od[%d] = len;", dd);
    strided_copy(e, r, k);
    zero_rest(e, nd, k);
}

static void k_gather(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *ix = T(e, nd->inputs[1]);
    int r = x->ndim, ax = tether__ir_norm_axis(nd->attrs.axis, r);
    long long ni = (long long)tether_ir_tensor_elements(ix);
    dims_array(e, nd, 0, "xd");
    line(e, "int outer = 1, inner = 1;");
    line(e, "for (int a = 0; a < %d; ++a) {", r);
    line(e, "    outer *= a < %d ? xd[a] : 1;", ax);
    line(e, "    inner *= a > %d ? xd[a] : 1;", ax);
    line(e, "}");
    line(e, "const long long dim = xd[%d];", ax);
    line(e, "for (int j = 0; j < %lld; ++j) { /* every index first: none copied from a bad one */",
         ni);
    line(e, "    if (%s[j] < -dim || %s[j] >= dim) {", k->in[1], k->in[1]);
    line(e, "        return -1; /* TETHER_ERR_INVALID_ARG: outside the live extent */");
    line(e, "    }");
    line(e, "}");
    line(e, "for (int p = 0; p < outer; ++p) {");
    line(e, "    for (int j = 0; j < %lld; ++j) {", ni);
    line(e, "        const int w = (int)(%s[j] < 0 ? %s[j] + dim : %s[j]);", k->in[1], k->in[1],
         k->in[1]);
    line(e,
         "        memcpy(%s + ((long long)p * %lldLL + j) * inner, %s + ((long long)p * dim + w) "
         "* inner, (size_t)inner * %zu);",
         k->out, ni, k->in[0], tether_dtype_bytes(x->dtype));
    line(e, "    }");
    line(e, "}");
    line(e, "const int tot = outer * %lld * inner;", ni);
    zero_rest(e, nd, k);
}

static void k_concat(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    int ax = (int)nd->attrs.axis, nk = (int)nd->attrs.k;
    long long outer = 1, inner = 1;
    for (int d = 0; d < x->ndim; d++) {
        outer *= d < ax ? x->shape[d] : 1;
        inner *= d > ax ? x->shape[d] : 1;
    }
    char sum[600] = "0";
    size_t o = 1;
    for (int q = 0; q < nk; q++) {
        const tether_ir_tensor *t = T(e, nd->inputs[q]);
        if (t->dyn_dim > 0) {
            line(e, "const int len%d = lv%d;", q, q);
        } else {
            line(e, "const int len%d = %lld;", q, (long long)t->shape[ax]);
        }
        o += (size_t)snprintf(sum + o, sizeof sum - o, " + len%d", q);
    }
    line(e, "const int total = %s;", sum);
    if (nd->attrs.mode & TETHER__DYN_COUNT) {
        line(e, "%s[0] = (int64_t)total;", k->out);
        return;
    }
    size_t es = tether_dtype_bytes(x->dtype);
    line(e, "for (int p = 0; p < %lld; ++p) {", outer);
    line(e, "    long long at = (long long)p * total * %lldLL;", inner);
    for (int q = 0; q < nk; q++) {
        line(e, "    memcpy(%s + at, %s + (long long)p * len%d * %lldLL, (size_t)len%d * %zu);",
             k->out, k->in[q], q, inner, q, (size_t)inner * es);
        line(e, "    at += (long long)len%d * %lldLL;", q, inner);
    }
    line(e, "}");
    line(e, "const int tot = %lld * total * %lld;", outer, inner);
    zero_rest(e, nd, k);
}

void tether__c_live(em *e, const tether_ir_node *nd, const kargs *k) {
    if (nd->attrs.mode & TETHER__DYN_COUNT) { /* an extent node reads the extents only */
        for (int j = 0; j < (int)nd->attrs.k; j++) {
            line(e, "(void)%s;", k->in[j]);
        }
    }
    declare_live(e, nd, k);
    if (nd->op == TETHER_OP_TRANSPOSE) {
        k_transpose(e, nd, k);
    } else if (nd->op == TETHER_OP_SLICE) {
        k_slice(e, nd, k);
    } else if (nd->op == TETHER_OP_GATHER) {
        k_gather(e, nd, k);
    } else {
        k_concat(e, nd, k);
    }
}
