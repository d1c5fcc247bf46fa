/*
 * The OpenCL backend's indexing, scan, reduction and loss kernels on any element type
 * (docs/codegen.md, "OpenCL element types"): arg_max/arg_min, trilu, cumsum, one_hot, topk,
 * scatter_elements/scatter_nd, nll_loss (none/sum/mean; SoftmaxCrossEntropyLoss is a log_softmax
 * ahead of it) and the reductions of tensors other than float32, beside emit_opencl_typed.c whose
 * dispatch (tether__ocl_typed_owns/_body) hands these operators here.
 *
 * What must stay true: each kernel computes what the C emitter's (emit_c_data.c, emit_c_loss.c,
 * emit_c_reduce.c) and so the interpreter's do: integers exactly (wrapping in 64 bits, the same
 * order of updates), floats in float (double for float64) within rounding; a scan, a top-k row
 * and an arg row are one work-item each, a scatter is one work-item in index order (duplicates
 * resolve as the interpreter's), so results never depend on scheduling. An index out of range
 * (the interpreter's run-time error) never reads or writes outside a tensor: that update is
 * skipped and the run fails through the error flag (emit_opencl_check.c). Integer means, L2 norms
 * and log sums compute in double where the device has cl_khr_fp64 (tg_acc_t, written ahead of the
 * kernels), in float otherwise.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/crt/dtype.h"

static int typed_tensor(const tether_ir_graph *g, int t) {
    return t >= 0 && !tether_dtype_equal(g->tensors[t].dtype, TETHER_FLOAT32);
}

static int touches_typed(const tether_ir_graph *g, const tether_ir_node *n) {
    for (int j = 0; j < n->ninputs; j++) {
        if (typed_tensor(g, n->inputs[j])) {
            return 1;
        }
    }
    return typed_tensor(g, n->outputs[0]);
}

static int is_reduce(tether_op op) {
    switch ((int)op) {
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
        return 1;
    default:
        return 0;
    }
}

int tether__ocl_index_owns(const tether_ir_graph *g, const tether_ir_node *n) {
    if (n->noutputs != 1 || n->outputs[0] < 0) {
        return 0;
    }
    switch ((int)n->op) {
    case TETHER_OP_ARG_MAX:
    case TETHER_OP_ARG_MIN:
    case TETHER_OP_TRILU:
    case TETHER_OP_CUMSUM:
    case TETHER_OP_ONE_HOT:
    case TETHER_OP_TOPK:
    case TETHER_OP_SCATTER_ELEMENTS:
    case TETHER_OP_SCATTER_ND:
    case TETHER_OP_NLL_LOSS:
    case TETHER_OP_NLL_LOSS_SUM:
    case TETHER_OP_NLL_LOSS_MEAN:
        return 1;
    default:
        /* float32 reductions keep emit_opencl_kernels.c's kernels */
        return is_reduce(n->op) && touches_typed(g, n);
    }
}

static int is_flt(DLDataType t) {
    return tether__dtype_is_float(t);
}

static int is_f64(DLDataType t) {
    return t.code == kDLFloat && t.bits == 64;
}

static int integer(DLDataType t) {
    tether__dclass c = tether__dtype_class(t);
    return (c == TETHER__DC_INT || c == TETHER__DC_UINT) && !tether__dtype_is_bool(t);
}

/* A reduction with input 1: the live extent of dimension 0 of a dynamic input (int64 [1],
 * ir/shapes_dynamic_use.c), which it reduces over. */
static int counted(const tether_ir_graph *g, const tether_ir_node *n) {
    if (!is_reduce(n->op) || n->ninputs < 2 || n->inputs[1] < 0 || n->attrs.nints < 1) {
        return 0;
    }
    for (int i = 0; i < n->attrs.nints; i++) {
        if (n->attrs.ints[i] == 0) {
            return g->tensors[n->inputs[0]].ndim > 0;
        }
    }
    return 0;
}

static int needs_acc(const tether_ir_graph *g, const tether_ir_node *n) {
    if (!is_reduce(n->op)) {
        return 0;
    }
    DLDataType xt = g->tensors[n->inputs[0]].dtype;
    if (counted(g, n) && !integer(xt) && !is_f64(xt)) {
        return 1; /* float32/16 over live rows: emit_c_reduce.c's double accumulator */
    }
    if (!integer(xt)) {
        return 0;
    }
    return n->op == TETHER_OP_REDUCE_MEAN || n->op == TETHER_OP_REDUCE_L2 ||
           n->op == TETHER_OP_REDUCE_LOG_SUM || n->op == TETHER_OP_REDUCE_LOG_SUM_EXP;
}

void tether__ocl_index_prelude(const tether_ir_graph *g, tether__sbuf *src) {
    for (int i = 0; i < g->nnodes; i++) {
        if (needs_acc(g, &g->nodes[i])) {
            tether__sbuf_puts(src, "/* integer means, norms and log sums: in double where the "
                                   "device has it */\n#ifdef cl_khr_fp64\n#pragma OPENCL "
                                   "EXTENSION cl_khr_fp64 : enable\ntypedef double tg_acc_t;\n"
                                   "#else\ntypedef float tg_acc_t;\n#endif\n\n");
            return;
        }
    }
}

/* outer, extent and inner of x around axis ax */
static void around(const tether_ir_tensor *x, int ax, long long *outer, long long *dim,
                   long long *inner) {
    *outer = prod(x->shape, 0, ax);
    *dim = x->shape[ax];
    *inner = prod(x->shape, ax + 1, x->ndim);
}

int64_t tether__ocl_index_items(const ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    long long outer, dim, inner;
    switch ((int)n->op) {
    case TETHER_OP_ARG_MAX:
    case TETHER_OP_ARG_MIN:
    case TETHER_OP_CUMSUM:
    case TETHER_OP_TOPK:
        around(x, tether__ir_norm_axis(n->attrs.axis, x->ndim), &outer, &dim, &inner);
        return outer * inner; /* one work-item per row along the axis */
    case TETHER_OP_SCATTER_ELEMENTS:
    case TETHER_OP_SCATTER_ND:
    case TETHER_OP_NLL_LOSS_SUM:
    case TETHER_OP_NLL_LOSS_MEAN:
        return 1; /* in index order: duplicates and sums as the interpreter's */
    default:
        return (int64_t)tether_ir_tensor_elements(y);
    }
}

/* The accumulator of a sum of elements of type t: float (float16/bfloat16/float32), double
 * (float64), ulong wrapping (integers). */
static const char *acc_type(DLDataType t) {
    return !is_flt(t) ? "ulong" : is_f64(t) ? "double" : "float";
}

static void acc_load(DLDataType t, const char *ptr, const char *idx, char *out, size_t n) {
    char l[300];
    tether__ocl_load(t, ptr, idx, l, sizeof l);
    if (is_flt(t)) {
        snprintf(out, n, "(%s)%s", acc_type(t), l);
    } else if (tether__dtype_class(t) == TETHER__DC_INT) {
        snprintf(out, n, "(ulong)(long)%s", l);
    } else {
        snprintf(out, n, "(ulong)%s", l);
    }
}

/* ptr[idx] = accumulator expression acc (of acc_type(t)) stored as t. */
static void acc_store(ocl *e, DLDataType t, const char *ptr, const char *idx, const char *acc) {
    if (is_flt(t)) {
        tether__ocl_store(e, is_f64(t) ? t : TETHER_FLOAT32, t, ptr, idx, acc);
    } else if (tether__dtype_is_bool(t)) {
        line(e, "%s[%s] = (uchar)((%s) != 0);", ptr, idx, acc);
    } else if (tether__dtype_class(t) == TETHER__DC_INT) {
        line(e, "%s[%s] = (%s)(long)(%s);", ptr, idx, tether__ocl_store_type(t), acc);
    } else {
        line(e, "%s[%s] = (%s)(%s);", ptr, idx, tether__ocl_store_type(t), acc);
    }
}

/* `long var = ptr[at]` made non-negative against dim; `ok` false when out of range. */
static void index_at(ocl *e, const char *var, const char *ptr, const char *at, long long dim) {
    line(e, "long %s = (long)%s[%s];", var, ptr, at);
    line(e, "%s = %s < 0 ? %s + %lld : %s;", var, var, var, dim, var);
    line(e, "ok = ok && %s >= 0 && %s < %lld;", var, var, dim);
}

static void k_arg(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    long long outer, dim, inner;
    around(x, tether__ir_norm_axis(n->attrs.axis, x->ndim), &outer, &dim, &inner);
    const char *ct = tether__ocl_compute_type(x->dtype);
    const char *op =
        n->op == TETHER_OP_ARG_MAX ? (n->attrs.mode ? ">=" : ">") : (n->attrs.mode ? "<=" : "<");
    char l[300];
    line(e, "const long p = f / %lld, i = f %% %lld;", inner, inner);
    line(e, "const long b = p * %lld + i;", dim * inner);
    tether__ocl_load(x->dtype, "in0", "b", l, sizeof l);
    line(e, "%s best = %s;", ct, l);
    line(e, "long at = 0;");
    open_block(e, "for (long j = 1; j < %lld; ++j)", dim);
    char ix[80];
    snprintf(ix, sizeof ix, "b + j * %lld", inner);
    tether__ocl_load(x->dtype, "in0", ix, l, sizeof l);
    line(e, "const %s v = %s;", ct, l);
    open_block(e, "if (v %s best)", op);
    line(e, "best = v;");
    line(e, "at = j;");
    close_block(e);
    close_block(e);
    line(e, "y[f] = at;");
}

static void k_trilu(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    long long rows = x->shape[x->ndim - 2], cols = x->shape[x->ndim - 1];
    line(e, "const long j = f %% %lld, i = (f / %lld) %% %lld;", cols, cols, rows);
    line(e, "y[f] = j - i %s %lld ? in0[f] : 0;",
         n->attrs.mode ? ">=" : "<=", (long long)n->attrs.k);
}

static void k_cumsum(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    long long outer, dim, inner;
    around(x, tether__ir_norm_axis(n->attrs.axis, x->ndim), &outer, &dim, &inner);
    int excl = (int)(n->attrs.mode & 1), rev = (int)(n->attrs.mode & 2);
    char l[400];
    line(e, "const long p = f / %lld, i = f %% %lld;", inner, inner);
    line(e, "%s acc = 0;", acc_type(x->dtype));
    open_block(e, "for (long q = 0; q < %lld; ++q)", dim);
    if (rev) {
        line(e, "const long o = (p * %lld + (%lld - 1 - q)) * %lld + i;", dim, dim, inner);
    } else {
        line(e, "const long o = (p * %lld + q) * %lld + i;", dim, inner);
    }
    acc_load(x->dtype, "in0", "o", l, sizeof l);
    if (excl) {
        acc_store(e, x->dtype, "y", "o", "acc");
        line(e, "acc += %s;", l);
    } else {
        line(e, "acc += %s;", l);
        acc_store(e, x->dtype, "y", "o", "acc");
    }
    close_block(e);
}

static void k_one_hot(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    int ax = tether__ir_norm_axis(n->attrs.axis, y->ndim);
    long long depth = y->shape[ax], inner = prod(y->shape, ax + 1, y->ndim);
    char l[300];
    line(e, "const long i = f %% %lld, c = (f / %lld) %% %lld, p = f / %lld;", inner, inner, depth,
         inner * depth);
    line(e, "const long at = p * %lld + i;", inner);
    tether__ocl_load(x->dtype, "in0", "at", l, sizeof l);
    if (is_flt(x->dtype)) {
        const char *ft = is_f64(x->dtype) ? "double" : "float";
        line(e, "const %s dv = (%s)%s;", ft, ft, l);
        line(e, "long v = dv != dv || dv >= 9.2e18 || dv <= -9.2e18 ? %lld : (long)dv;",
             -depth - 1);
    } else if (x->dtype.code == kDLUInt) {
        line(e, "long v = (ulong)%s >= (ulong)%lld ? %lld : (long)%s;", l, depth, -depth - 1, l);
    } else {
        line(e, "long v = (long)%s;", l);
    }
    line(e, "v = v < 0 ? v + %lld : v;", depth);
    line(e, "y[f] = in1[v == c ? 1 : 0];");
}

static void k_topk(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    long long outer, dim, inner, K = n->attrs.k;
    around(x, tether__ir_norm_axis(n->attrs.axis, x->ndim), &outer, &dim, &inner);
    int largest = (int)(n->attrs.mode & 1), want_idx = (int)(n->attrs.mode & 4);
    const char *ct = tether__ocl_compute_type(x->dtype);
    char ix[200], l[400];
    line(e, "const long a = f / %lld, i = f %% %lld;", inner, inner);
    line(e, "long cnt = 0;");
    open_block(e, "for (long j = 0; j < %lld; ++j)", dim);
    snprintf(ix, sizeof ix, "(a * %lld + j) * %lld + i", dim, inner);
    tether__ocl_load(x->dtype, "in0", ix, l, sizeof l);
    line(e, "const %s v = %s;", ct, l);
    line(e, "long p = cnt < %lld ? cnt : %lld;", K, K);
    open_block(e, "while (p > 0)");
    line(e, "const long s = (a * %lld + p - 1) * %lld + i;", K, inner);
    if (want_idx) {
        snprintf(ix, sizeof ix, "(a * %lld + y[s]) * %lld + i", dim, inner);
    } else {
        snprintf(ix, sizeof ix, "s");
    }
    tether__ocl_load(x->dtype, want_idx ? "in0" : "y", ix, l, sizeof l);
    line(e, "const %s w = %s;", ct, l);
    open_block(e, "if (!(v %s w))", largest ? ">" : "<");
    line(e, "break;");
    close_block(e);
    open_block(e, "if (p < %lld)", K);
    line(e, "y[s + %lld] = y[s];", inner);
    close_block(e);
    line(e, "p--;");
    close_block(e);
    open_block(e, "if (p < %lld)", K);
    if (want_idx) {
        line(e, "y[(a * %lld + p) * %lld + i] = j;", K, inner);
    } else {
        line(e, "y[(a * %lld + p) * %lld + i] = in0[(a * %lld + j) * %lld + i];", K, inner, dim,
             inner);
    }
    line(e, "cnt += cnt < %lld;", K);
    close_block(e);
    close_block(e);
}

/* One scatter update of y[o] by in2[u] (reduction mode: 0 none, 1 add, 2 mul, 3 max, 4 min). */
static void scatter_update(ocl *e, DLDataType t, int mode, const char *o, const char *u) {
    if (mode == 0) {
        line(e, "y[%s] = in2[%s];", o, u);
        return;
    }
    char a[300], b[300], s[700];
    if (mode <= 2) {
        acc_load(t, "y", o, a, sizeof a);
        acc_load(t, "in2", u, b, sizeof b);
        snprintf(s, sizeof s, "%s %s %s", a, mode == 1 ? "+" : "*", b);
        acc_store(e, t, "y", o, s);
        return;
    }
    tether__ocl_load(t, "y", o, a, sizeof a);
    tether__ocl_load(t, "in2", u, b, sizeof b);
    open_block(e, "if (%s %s %s)", b, mode == 3 ? ">" : "<", a);
    line(e, "y[%s] = in2[%s];", o, u);
    close_block(e);
}

static void strides(const tether_ir_tensor *t, long long *st) {
    long long s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= t->shape[d];
    }
}

static void k_scatter_elements(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *it = T(e, n->inputs[1]);
    int ax = tether__ir_norm_axis(n->attrs.axis, x->ndim);
    long long st[TETHER_IR_MAX_NDIM], ist[TETHER_IR_MAX_NDIM];
    strides(x, st);
    strides(it, ist);
    line(e, "for (long q = 0; q < %lld; ++q) {", (long long)tether_ir_tensor_elements(x));
    line(e, "    y[q] = in0[q];");
    line(e, "}");
    open_block(e, "for (long u = 0; u < %lld; ++u)", (long long)tether_ir_tensor_elements(it));
    line(e, "int ok = 1;");
    index_at(e, "w", "in1", "u", x->shape[ax]);
    char off[800] = "0";
    size_t o = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (d == ax) {
            o += (size_t)snprintf(off + o, sizeof off - o, " + w * %lld", st[d]);
        } else {
            o += (size_t)snprintf(off + o, sizeof off - o, " + (u / %lld %% %lld) * %lld", ist[d],
                                  (long long)it->shape[d], st[d]);
        }
    }
    line(e, "const long o = %s;", off);
    open_block(e, "if (!ok)");
    tether__ocl_fail(e); /* the update is skipped and the run fails */
    close_block(e);
    open_block(e, "if (ok)");
    scatter_update(e, x->dtype, (int)n->attrs.mode, "o", "u");
    close_block(e);
    close_block(e);
}

static void k_scatter_nd(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *it = T(e, n->inputs[1]);
    int q = it->ndim;
    long long m = it->shape[q - 1], tuples = prod(it->shape, 0, q - 1);
    long long slice = prod(x->shape, (int)m, x->ndim);
    long long st[TETHER_IR_MAX_NDIM];
    strides(x, st);
    line(e, "for (long q = 0; q < %lld; ++q) {", (long long)tether_ir_tensor_elements(x));
    line(e, "    y[q] = in0[q];");
    line(e, "}");
    open_block(e, "for (long t = 0; t < %lld; ++t)", tuples);
    line(e, "int ok = 1;");
    line(e, "long o = 0;");
    char at[64], w[24];
    for (long long i = 0; i < m; i++) {
        snprintf(at, sizeof at, "t * %lld + %lld", m, i);
        snprintf(w, sizeof w, "w%lld", i);
        index_at(e, w, "in1", at, x->shape[i]);
        line(e, "o += %s * %lld;", w, st[i]);
    }
    open_block(e, "if (!ok)");
    tether__ocl_fail(e); /* the update is skipped and the run fails */
    close_block(e);
    open_block(e, "if (ok)");
    open_block(e, "for (long c = 0; c < %lld; ++c)", slice);
    line(e, "const long oc = o + c, u = t * %lld + c;", slice);
    scatter_update(e, x->dtype, (int)n->attrs.mode, "oc", "u");
    close_block(e);
    close_block(e);
    close_block(e);
}

static void k_nll(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *t = T(e, n->inputs[1]);
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    int weighted = n->ninputs > 2 && n->inputs[2] >= 0;
    long long C = x->shape[1], D = prod(x->shape, 2, x->ndim), N = x->shape[0];
    int sgn = t->dtype.code == kDLInt, f64 = is_f64(x->dtype);
    const char *ft = f64 ? "double" : "float";
    char l[300];
    int all = n->op != TETHER_OP_NLL_LOSS;
    line(e, "%s sum = 0, wsum = 0;", ft);
    if (all) {
        open_block(e, "for (long b = 0; b < %lld; ++b)", N);
        open_block(e, "for (long d = 0; d < %lld; ++d)", D);
    } else {
        line(e, "const long b = f / %lld, d = f %% %lld;", D, D);
    }
    line(e, "const %s tv = in1[b * %lld + d];", tether__ocl_store_type(t->dtype), D);
    line(e, "%s l, wt;", ft);
    const char *neg = sgn ? "tv < 0 || " : "";
    if (n->attrs.nints == 1) {
        long long ii = (long long)n->attrs.ints[0];
        if (sgn) {
            open_block(e, "if ((long)tv == %lldL)", ii);
        } else if (ii < 0) {
            open_block(e, "if (0)"); /* an unsigned target never equals a negative ignore_index */
        } else {
            open_block(e, "if ((ulong)tv == %lluUL)", (unsigned long long)ii);
        }
        line(e, "l = 0;");
        line(e, "wt = 0;");
        e->depth--;
        open_block(e, "} else if (%s(ulong)tv >= %lluUL)", neg, (unsigned long long)C);
    } else {
        open_block(e, "if (%s(ulong)tv >= %lluUL)", neg, (unsigned long long)C);
    }
    line(e, "l = (%s)NAN;", ft);
    line(e, "wt = %s;", weighted ? (f64 ? "(double)NAN" : "NAN") : "1");
    e->depth--;
    open_block(e, "} else");
    if (weighted) {
        tether__ocl_load(T(e, n->inputs[2])->dtype, "in2", "(long)tv", l, sizeof l);
        line(e, "wt = (%s)%s;", ft, l);
    } else {
        line(e, "wt = 1;");
    }
    char ix[120];
    snprintf(ix, sizeof ix, "(b * %lld + (long)tv) * %lld + d", C, D);
    tether__ocl_load(x->dtype, "in0", ix, l, sizeof l);
    line(e, "l = -(%s)%s * wt;", ft, l);
    close_block(e);
    if (!all) {
        tether__ocl_store(e, f64 ? x->dtype : TETHER_FLOAT32, y->dtype, "y", "f", "l");
        line(e, "(void)sum;");
        line(e, "(void)wsum;");
        return;
    }
    line(e, "sum += l;");
    line(e, "wsum += wt;");
    close_block(e);
    close_block(e);
    tether__ocl_store(e, f64 ? x->dtype : TETHER_FLOAT32, y->dtype, "y", "0",
                      n->op == TETHER_OP_NLL_LOSS_SUM ? "sum" : "sum / wsum");
}

/* One work-item per output element: loops over the reduced dimensions (emit_c_reduce.c's
 * accumulators: exact 64-bit integers for sum/prod/L1/sum of squares/max/min, tg_acc_t for the
 * integer mean, L2 and log sums, the element's compute type widened to float or double for
 * floats). */
static void k_reduce(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    tether_op op = n->op;
    int red[TETHER_IR_MAX_NDIM] = {0};
    for (int i = 0; i < n->attrs.nints; i++) {
        red[n->attrs.ints[i]] = 1;
    }
    long long st[TETHER_IR_MAX_NDIM], cnt = 1;
    strides(x, st);
    tether__dclass xc = tether__dtype_class(x->dtype);
    int ints = integer(x->dtype), sgn = xc == TETHER__DC_INT;
    int minmax = op == TETHER_OP_REDUCE_MAX || op == TETHER_OP_REDUCE_MIN;
    int exact = ints && (minmax || op == TETHER_OP_REDUCE_SUM || op == TETHER_OP_REDUCE_PROD ||
                         op == TETHER_OP_REDUCE_L1 || op == TETHER_OP_REDUCE_SUM_SQUARE);
    int live = counted(e->g, n); /* over the first `live` rows of dimension 0 only */
    const char *at = exact              ? (minmax && sgn ? "long" : "ulong")
                     : ints || live     ? (is_f64(x->dtype) ? "double" : "tg_acc_t")
                     : is_f64(x->dtype) ? "double"
                                        : "float";
    const char *init;
    if (!exact) {
        init = op == TETHER_OP_REDUCE_PROD  ? "1"
               : op == TETHER_OP_REDUCE_MAX ? "-INFINITY"
               : op == TETHER_OP_REDUCE_MIN ? "INFINITY"
                                            : "0";
    } else if (minmax) {
        init = op == TETHER_OP_REDUCE_MAX ? (sgn ? "LONG_MIN" : "0")
                                          : (sgn ? "LONG_MAX" : "ULONG_MAX");
    } else {
        init = op == TETHER_OP_REDUCE_PROD ? "1" : "0";
    }
    /* the base offset of output element f: its kept coordinates (in order) */
    line(e, "long r_ = f;");
    line(e, "long base = 0;");
    for (int d = x->ndim - 1; d >= 0; d--) {
        if (!red[d]) {
            line(e, "base += (r_ %% %lld) * %lld;", (long long)x->shape[d], st[d]);
            line(e, "r_ /= %lld;", (long long)x->shape[d]);
        } else {
            cnt *= x->shape[d];
        }
    }
    /* r runs dimension 0's coordinate slowest: the first live * rest of them are the live rows
     * (in emit_c_reduce.c's order) */
    long long rest = x->ndim > 0 && x->shape[0] > 0 ? cnt / x->shape[0] : 0;
    char rows[120];
    snprintf(rows, sizeof rows, "%lld", cnt);
    if (live) {
        line(e, "const long live_raw = (long)in1[0];");
        line(e, "const long live = live_raw < 0 ? 0 : live_raw > %lld ? %lld : live_raw;",
             (long long)x->shape[0], (long long)x->shape[0]);
        snprintf(rows, sizeof rows, "live * %lld", rest);
    }
    int passes = op == TETHER_OP_REDUCE_LOG_SUM_EXP ? 2 : 1;
    if (passes == 2) {
        line(e, "%s m = -INFINITY;", at);
    }
    line(e, "%s acc = %s;", at, init);
    for (int pass = 2 - passes; pass < 2; pass++) {
        open_block(e, "for (long r = 0; r < %s; ++r)", rows);
        line(e, "long q_ = r, o = base;");
        for (int d = x->ndim - 1; d >= 0; d--) {
            if (red[d]) {
                line(e, "o += (q_ %% %lld) * %lld;", (long long)x->shape[d], st[d]);
                line(e, "q_ /= %lld;", (long long)x->shape[d]);
            }
        }
        char ld[300];
        tether__ocl_load(x->dtype, "in0", "o", ld, sizeof ld);
        if (exact && minmax) {
            line(e, "const %s v = (%s)%s;", at, at, ld);
            line(e, "acc = v %s acc ? v : acc;", op == TETHER_OP_REDUCE_MAX ? ">" : "<");
        } else if (exact) {
            line(e, "const ulong v = (ulong)%s%s;", sgn ? "(long)" : "", ld);
            if (op == TETHER_OP_REDUCE_PROD) {
                line(e, "acc *= v;");
            } else if (op == TETHER_OP_REDUCE_SUM_SQUARE) {
                line(e, "acc += v * v;");
            } else if (op == TETHER_OP_REDUCE_L1 && sgn) {
                line(e, "acc += %s < 0 ? 0ul - v : v;", ld);
            } else {
                line(e, "acc += v;");
            }
        } else {
            line(e, "const %s v = (%s)%s;", at, at, ld);
            if (pass == 0) {
                line(e, "m = v > m ? v : m;");
            } else if (op == TETHER_OP_REDUCE_MAX) {
                line(e, "acc = v > acc ? v : acc;");
            } else if (op == TETHER_OP_REDUCE_MIN) {
                line(e, "acc = v < acc ? v : acc;");
            } else if (op == TETHER_OP_REDUCE_PROD) {
                line(e, "acc *= v;");
            } else if (op == TETHER_OP_REDUCE_L1) {
                line(e, "acc += v < 0 ? -v : v;");
            } else if (op == TETHER_OP_REDUCE_L2 || op == TETHER_OP_REDUCE_SUM_SQUARE) {
                line(e, "acc += v * v;");
            } else if (op == TETHER_OP_REDUCE_LOG_SUM_EXP) {
                line(e, "acc += exp(v - m);");
            } else {
                line(e, "acc += v;");
            }
        }
        close_block(e);
    }
    char res[200];
    if (exact) {
        snprintf(res, sizeof res, "acc");
    } else if (op == TETHER_OP_REDUCE_MEAN && live) {
        snprintf(res, sizeof res, "acc / ((%s)live * (%s)%lld)", at, at, rest);
    } else if (op == TETHER_OP_REDUCE_MEAN) {
        snprintf(res, sizeof res, "acc / (%s)%lld", at, cnt);
    } else if (op == TETHER_OP_REDUCE_L2) {
        snprintf(res, sizeof res, "sqrt(acc)");
    } else if (op == TETHER_OP_REDUCE_LOG_SUM) {
        snprintf(res, sizeof res, "log(acc)");
    } else if (op == TETHER_OP_REDUCE_LOG_SUM_EXP) {
        snprintf(res, sizeof res, "m + log(acc)");
    } else {
        snprintf(res, sizeof res, "acc");
    }
    if (exact) {
        acc_store(e, y->dtype, "y", "f", res);
    } else if (ints) {
        /* tg_acc_t to the integer type: NaN 0, truncated, saturated */
        line(e, "y[f] = convert_%s_sat_rtz(%s);", tether__ocl_store_type(y->dtype), res);
    } else {
        tether__ocl_store(e, is_f64(x->dtype) ? x->dtype : TETHER_FLOAT32, y->dtype, "y", "f", res);
    }
}

void tether__ocl_index_body(ocl *e, const tether_ir_node *n) {
    switch ((int)n->op) {
    case TETHER_OP_ARG_MAX:
    case TETHER_OP_ARG_MIN:
        k_arg(e, n);
        return;
    case TETHER_OP_TRILU:
        k_trilu(e, n);
        return;
    case TETHER_OP_CUMSUM:
        k_cumsum(e, n);
        return;
    case TETHER_OP_ONE_HOT:
        k_one_hot(e, n);
        return;
    case TETHER_OP_TOPK:
        k_topk(e, n);
        return;
    case TETHER_OP_SCATTER_ELEMENTS:
        k_scatter_elements(e, n);
        return;
    case TETHER_OP_SCATTER_ND:
        k_scatter_nd(e, n);
        return;
    case TETHER_OP_NLL_LOSS:
    case TETHER_OP_NLL_LOSS_SUM:
    case TETHER_OP_NLL_LOSS_MEAN:
        k_nll(e, n);
        return;
    default:
        k_reduce(e, n);
        return;
    }
}
