/*
 * The C kernels of the DATA operators (gather, gather_elements, gather_nd, scatter_elements,
 * scatter_nd, topk, arg_max, arg_min, cumsum, trilu, one_hot, tile, slice, einsum; ops.def), on
 * the tensors' own C types: elements are copied whole, compared in their compute type
 * (float16/bfloat16 loaded as float), summed in float (double for float64) or in uint64_t with
 * wrap-around (integers): integers exactly as interp/interp_data.c computes them, floats within
 * rounding of its double sums. No 64-bit division (MCU targets without a divider).
 *
 * What must stay true: a DATA kernel returns int32_t (emit_c_functions.c): 0, or -1
 * (TETHER_ERR_INVALID_ARG) when an index is out of its extent after one wrap of a negative value,
 * checked before the access it selects; no kernel reads or writes outside its tensors. Trip
 * counts and strides are constants. The switch names every DATA row.
 */
#include <stdio.h>
#include <string.h>

#include "emit_c_internal.h"
#include "tether/crt/dtype.h"

static int is_flt(DLDataType t) {
    return tether__dtype_is_float(t);
}

/* The accumulator type and a value of element expression ex of type t in it: float for
 * float16/bfloat16/float32 (no soft double on an MCU with a single-precision FPU), double for
 * float64, uint64_t (wrapping) for integers. */
static const char *acc_type(DLDataType t) {
    return !is_flt(t) ? "uint64_t" : t.bits == 64 ? "double" : "float";
}

static void acc_load(DLDataType t, const char *ex, char *out, size_t n) {
    char l[200];
    tether__c_load(t, ex, l, sizeof l);
    if (is_flt(t)) {
        snprintf(out, n, "(%s)%s", acc_type(t), l);
    } else if (tether__dtype_class(t) == TETHER__DC_INT) {
        snprintf(out, n, "(uint64_t)(int64_t)%s", l);
    } else {
        snprintf(out, n, "(uint64_t)%s", l);
    }
}

/* Accumulator acc stored as element type t. */
static void acc_store(DLDataType t, const char *acc, char *out, size_t n) {
    char v[200];
    if (is_flt(t)) {
        tether__c_convert(t.bits == 64 ? TETHER_DTYPE(kDLFloat, 64) : TETHER_FLOAT32, t, acc, out,
                          n);
    } else if (tether__dtype_class(t) == TETHER__DC_INT) {
        snprintf(v, sizeof v, "(int64_t)%s", acc);
        snprintf(out, n, "(%s)%s", tether__c_type(t), v);
    } else if (tether__dtype_is_bool(t)) {
        snprintf(out, n, "(uint8_t)(%s != 0)", acc);
    } else {
        snprintf(out, n, "(%s)%s", tether__c_type(t), acc);
    }
}

static void strides(const tether_ir_tensor *t, long long *st) {
    long long s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= t->shape[d];
    }
}

static long long prod(const int64_t *shape, int from, int to) {
    long long p = 1;
    for (int d = from; d < to; d++) {
        p *= shape[d];
    }
    return p;
}

/* `int64_t var = (int64_t)ex; if (var < 0) var += dim; if out of [0, dim) return -1;` */
static void index_check(em *e, const char *var, const char *ex, long long dim) {
    line(e, "int64_t %s = (int64_t)%s;", var, ex);
    line(e, "if (%s < 0) {", var);
    line(e, "    %s += %lld;", var, dim);
    line(e, "}");
    line(e, "if (%s < 0 || %s >= %lld) {", var, var, dim);
    line(e, "    return -1; /* TETHER_ERR_INVALID_ARG: an index out of range */");
    line(e, "}");
}

/* Loops i0..i{nd-1} over shape; the flat index of the current position in shape, as C. */
static void nest(em *e, const int64_t *shape, int nd) {
    char v[16];
    for (int d = 0; d < nd; d++) {
        snprintf(v, sizeof v, "i%d", d);
        loop(e, v, shape[d]);
    }
}

static void unnest(em *e, int nd) {
    for (int d = 0; d < nd; d++) {
        close_block(e);
    }
}

static void flat(const int64_t *shape, int nd, char *out, size_t n) {
    long long st[TETHER_IR_MAX_NDIM];
    long long s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
    size_t len = (size_t)snprintf(out, n, "(long long)0");
    for (int d = 0; d < nd && len < n; d++) {
        len += (size_t)snprintf(out + len, n - len, " + (long long)i%d * %lldLL", d, st[d]);
    }
}

static void k_gather(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *ix = T(e, nd->inputs[1]);
    int ax = tether__ir_norm_axis(nd->attrs.axis, x->ndim);
    long long outer = prod(x->shape, 0, ax), dim = x->shape[ax];
    long long inner = prod(x->shape, ax + 1, x->ndim);
    long long ni = (long long)tether_ir_tensor_elements(ix);
    loop(e, "p", outer);
    loop(e, "j", ni);
    char ex[80];
    snprintf(ex, sizeof ex, "%s[j]", k->in[1]);
    index_check(e, "w", ex, dim);
    line(e,
         "memcpy(%s + ((long long)p * %lldLL + j) * %lldLL, %s + ((long long)p * %lldLL + w) * "
         "%lldLL, %zu);",
         k->out, ni, inner, k->in[0], dim, inner, (size_t)inner * tether_dtype_bytes(x->dtype));
    close_block(e);
    close_block(e);
}

/* gather_elements (scatter 0) and scatter_elements (scatter 1): loops over the indices. */
static void k_elements(em *e, const tether_ir_node *nd, const kargs *k, int scatter) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *ix = T(e, nd->inputs[1]);
    int ax = tether__ir_norm_axis(nd->attrs.axis, x->ndim);
    long long st[TETHER_IR_MAX_NDIM];
    strides(x, st);
    char f[400], off[400], ex[64];
    if (scatter) {
        line(e, "memcpy(%s, %s, %zu);", k->out, k->in[0], tether_ir_tensor_bytes(x));
    }
    nest(e, ix->shape, ix->ndim);
    flat(ix->shape, ix->ndim, f, sizeof f);
    line(e, "long long f = %s;", f);
    snprintf(ex, sizeof ex, "%s[f]", k->in[1]);
    index_check(e, "w", ex, x->shape[ax]);
    size_t len = (size_t)snprintf(off, sizeof off, "(long long)0");
    for (int d = 0; d < x->ndim; d++) {
        if (d == ax) {
            len += (size_t)snprintf(off + len, sizeof off - len, " + w * %lldLL", st[d]);
        } else {
            len += (size_t)snprintf(off + len, sizeof off - len, " + (long long)i%d * %lldLL", d,
                                    st[d]);
        }
    }
    line(e, "long long o = %s;", off);
    if (!scatter) {
        line(e, "%s[f] = %s[o];", k->out, k->in[0]);
    } else {
        DLDataType t = x->dtype;
        char a[200], b[200], s[500], v[700];
        switch (nd->attrs.mode) {
        case 0:
            line(e, "%s[o] = %s[f];", k->out, k->in[2]);
            break;
        case 1:
        case 2:
            snprintf(ex, sizeof ex, "%s[o]", k->out);
            acc_load(t, ex, a, sizeof a);
            snprintf(ex, sizeof ex, "%s[f]", k->in[2]);
            acc_load(t, ex, b, sizeof b);
            snprintf(s, sizeof s, "(%s %s %s)", a, nd->attrs.mode == 1 ? "+" : "*", b);
            acc_store(t, s, v, sizeof v);
            line(e, "%s[o] = %s;", k->out, v);
            break;
        default:
            snprintf(ex, sizeof ex, "%s[o]", k->out);
            tether__c_load(t, ex, a, sizeof a);
            snprintf(ex, sizeof ex, "%s[f]", k->in[2]);
            tether__c_load(t, ex, b, sizeof b);
            line(e, "if (%s %s %s) {", b, nd->attrs.mode == 3 ? ">" : "<", a);
            line(e, "    %s[o] = %s[f];", k->out, k->in[2]);
            line(e, "}");
            break;
        }
    }
    unnest(e, ix->ndim);
}

/* gather_nd (scatter 0) and scatter_nd (scatter 1): one index tuple per slice. */
static void k_nd(em *e, const tether_ir_node *nd, const kargs *k, int scatter) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *ix = T(e, nd->inputs[1]);
    int q = ix->ndim, b = scatter ? 0 : (int)nd->attrs.axis;
    long long m = ix->shape[q - 1], tuples = prod(ix->shape, 0, q - 1);
    long long per_batch = prod(ix->shape, b, q - 1);
    long long slice = prod(x->shape, b + (int)m, x->ndim);
    long long st[TETHER_IR_MAX_NDIM];
    strides(x, st);
    size_t es = tether_dtype_bytes(x->dtype);
    if (scatter) {
        line(e, "memcpy(%s, %s, %zu);", k->out, k->in[0], tether_ir_tensor_bytes(x));
    }
    loop(e, "t", tuples);
    if (b) {
        line(e, "long long o = (long long)(t / %d) * %lldLL;", (int)per_batch, st[b - 1]);
    } else {
        line(e, "long long o = 0;");
    }
    char ex[80], w[24];
    for (long long i = 0; i < m; i++) {
        snprintf(ex, sizeof ex, "%s[(long long)t * %lldLL + %lld]", k->in[1], m, i);
        snprintf(w, sizeof w, "w%lld", i);
        index_check(e, w, ex, x->shape[b + i]);
        line(e, "o += %s * %lldLL;", w, st[b + i]);
    }
    if (!scatter) {
        line(e, "memcpy(%s + (long long)t * %lldLL, %s + o, %zu);", k->out, slice, k->in[0],
             (size_t)slice * es);
    } else if (nd->attrs.mode == 0) {
        line(e, "memcpy(%s + o, %s + (long long)t * %lldLL, %zu);", k->out, k->in[2], slice,
             (size_t)slice * es);
    } else {
        DLDataType t = x->dtype;
        char a[200], bb[200], s[500], v[700];
        loop(e, "c", slice);
        line(e, "long long u = (long long)t * %lldLL + c;", slice);
        if (nd->attrs.mode <= 2) {
            snprintf(ex, sizeof ex, "%s[o + c]", k->out);
            acc_load(t, ex, a, sizeof a);
            snprintf(ex, sizeof ex, "%s[u]", k->in[2]);
            acc_load(t, ex, bb, sizeof bb);
            snprintf(s, sizeof s, "(%s %s %s)", a, nd->attrs.mode == 1 ? "+" : "*", bb);
            acc_store(t, s, v, sizeof v);
            line(e, "%s[o + c] = %s;", k->out, v);
        } else {
            snprintf(ex, sizeof ex, "%s[o + c]", k->out);
            tether__c_load(t, ex, a, sizeof a);
            snprintf(ex, sizeof ex, "%s[u]", k->in[2]);
            tether__c_load(t, ex, bb, sizeof bb);
            line(e, "if (%s %s %s) {", bb, nd->attrs.mode == 3 ? ">" : "<", a);
            line(e, "    %s[o + c] = %s[u];", k->out, k->in[2]);
            line(e, "}");
        }
        close_block(e);
    }
    close_block(e);
}

static void k_topk(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    int ax = tether__ir_norm_axis(nd->attrs.axis, x->ndim);
    long long outer = prod(x->shape, 0, ax), dim = x->shape[ax];
    long long inner = prod(x->shape, ax + 1, x->ndim), K = nd->attrs.k;
    int largest = (int)(nd->attrs.mode & 1), want_idx = (int)(nd->attrs.mode & 4);
    const char *ct = tether__c_compute_type(x->dtype);
    char ex[200], l[300];
    loop(e, "a", outer);
    loop(e, "i", inner);
    line(e, "long long cnt = 0;");
    loop(e, "j", dim);
    snprintf(ex, sizeof ex, "%s[((long long)a * %lldLL + j) * %lldLL + i]", k->in[0], dim, inner);
    tether__c_load(x->dtype, ex, l, sizeof l);
    line(e, "%s v = %s;", ct, l);
    line(e, "long long p = cnt < %lldLL ? cnt : %lldLL;", K, K);
    line(e, "while (p > 0) {");
    e->depth++;
    line(e, "long long s = ((long long)a * %lldLL + p - 1) * %lldLL + i;", K, inner);
    if (want_idx) {
        snprintf(ex, sizeof ex, "%s[((long long)a * %lldLL + %s[s]) * %lldLL + i]", k->in[0], dim,
                 k->out, inner);
    } else {
        snprintf(ex, sizeof ex, "%s[s]", k->out);
    }
    tether__c_load(x->dtype, ex, l, sizeof l);
    line(e, "%s w = %s;", ct, l);
    line(e, "if (!(v %s w)) {", largest ? ">" : "<");
    line(e, "    break;");
    line(e, "}");
    line(e, "if (p < %lldLL) {", K);
    line(e, "    %s[s + %lldLL] = %s[s];", k->out, inner, k->out);
    line(e, "}");
    line(e, "p--;");
    close_block(e);
    line(e, "if (p < %lldLL) {", K);
    if (want_idx) {
        line(e, "    %s[((long long)a * %lldLL + p) * %lldLL + i] = (int64_t)j;", k->out, K, inner);
    } else {
        line(e,
             "    %s[((long long)a * %lldLL + p) * %lldLL + i] = %s[((long long)a * %lldLL + j) "
             "* %lldLL + i];",
             k->out, K, inner, k->in[0], dim, inner);
    }
    line(e, "    cnt += cnt < %lldLL;", K);
    line(e, "}");
    close_block(e);
    close_block(e);
    close_block(e);
}

static void k_arg(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    int ax = tether__ir_norm_axis(nd->attrs.axis, x->ndim);
    long long outer = prod(x->shape, 0, ax), dim = x->shape[ax];
    long long inner = prod(x->shape, ax + 1, x->ndim);
    const char *ct = tether__c_compute_type(x->dtype);
    const char *op =
        nd->op == TETHER_OP_ARG_MAX ? (nd->attrs.mode ? ">=" : ">") : (nd->attrs.mode ? "<=" : "<");
    char ex[200], l[300];
    loop(e, "p", outer);
    loop(e, "i", inner);
    snprintf(ex, sizeof ex, "%s[(long long)p * %lldLL + i]", k->in[0], dim * inner);
    tether__c_load(x->dtype, ex, l, sizeof l);
    line(e, "%s best = %s;", ct, l);
    line(e, "int64_t at = 0;");
    line(e, "for (int j = 1; j < %lld; ++j) {", dim);
    e->depth++;
    snprintf(ex, sizeof ex, "%s[((long long)p * %lldLL + j) * %lldLL + i]", k->in[0], dim, inner);
    tether__c_load(x->dtype, ex, l, sizeof l);
    line(e, "%s v = %s;", ct, l);
    line(e, "if (v %s best) {", op);
    line(e, "    best = v;");
    line(e, "    at = j;");
    line(e, "}");
    close_block(e);
    line(e, "%s[(long long)p * %lldLL + i] = at;", k->out, inner);
    close_block(e);
    close_block(e);
}

static void k_cumsum(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    int ax = tether__ir_norm_axis(nd->attrs.axis, x->ndim);
    long long outer = prod(x->shape, 0, ax), dim = x->shape[ax];
    long long inner = prod(x->shape, ax + 1, x->ndim);
    int excl = (int)(nd->attrs.mode & 1), rev = (int)(nd->attrs.mode & 2);
    char ex[200], l[300], s[400];
    loop(e, "p", outer);
    loop(e, "i", inner);
    line(e, "%s acc = 0;", acc_type(x->dtype));
    loop(e, "q", dim);
    if (rev) {
        line(e, "long long o = ((long long)p * %lldLL + (%lldLL - 1 - q)) * %lldLL + i;", dim, dim,
             inner);
    } else {
        line(e, "long long o = ((long long)p * %lldLL + q) * %lldLL + i;", dim, inner);
    }
    snprintf(ex, sizeof ex, "%s[o]", k->in[0]);
    acc_load(x->dtype, ex, l, sizeof l);
    acc_store(x->dtype, "acc", s, sizeof s);
    if (excl) {
        line(e, "%s[o] = %s;", k->out, s);
        line(e, "acc += %s;", l);
    } else {
        line(e, "acc += %s;", l);
        line(e, "%s[o] = %s;", k->out, s);
    }
    close_block(e);
    close_block(e);
    close_block(e);
}

static void k_trilu(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    int r = x->ndim;
    long long rows = x->shape[r - 2], cols = x->shape[r - 1];
    loop(e, "b", prod(x->shape, 0, r - 2));
    loop(e, "i", rows);
    loop(e, "j", cols);
    line(e, "long long o = ((long long)b * %lldLL + i) * %lldLL + j;", rows, cols);
    line(e, "%s[o] = (long long)j - i %s %lldLL ? %s[o] : (%s)0;", k->out,
         nd->attrs.mode ? ">=" : "<=", (long long)nd->attrs.k, k->in[0], ctype(e, nd->inputs[0]));
    close_block(e);
    close_block(e);
    close_block(e);
}

static void k_one_hot(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    int ax = tether__ir_norm_axis(nd->attrs.axis, y->ndim);
    long long depth = y->shape[ax], inner = prod(y->shape, ax + 1, y->ndim);
    long long outer = prod(y->shape, 0, ax);
    char ex[200], l[300];
    loop(e, "p", outer);
    loop(e, "i", inner);
    snprintf(ex, sizeof ex, "%s[(long long)p * %lldLL + i]", k->in[0], inner);
    tether__c_load(x->dtype, ex, l, sizeof l);
    if (is_flt(x->dtype)) {
        line(e, "double dv = (double)%s;", l);
        line(e, "long long v = dv != dv || dv >= 9.2e18 || dv <= -9.2e18 ? %lldLL : (long long)dv;",
             -depth - 1);
    } else if (x->dtype.code == kDLUInt) {
        line(e, "long long v = (uint64_t)%s >= (uint64_t)%lldLL ? %lldLL : (long long)%s;", l,
             depth, -depth - 1, l);
    } else {
        line(e, "long long v = (long long)%s;", l);
    }
    line(e, "if (v < 0) {");
    line(e, "    v += %lldLL;", depth);
    line(e, "}");
    loop(e, "c", depth);
    line(e, "%s[((long long)p * %lldLL + c) * %lldLL + i] = %s[v == c ? 1 : 0];", k->out, depth,
         inner, k->in[1]);
    close_block(e);
    close_block(e);
    close_block(e);
}

static void k_tile_slice(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    const tether_ir_attrs *a = &nd->attrs;
    long long st[TETHER_IR_MAX_NDIM];
    strides(x, st);
    int lead = y->ndim - x->ndim;
    nest(e, y->shape, y->ndim);
    char f[400], off[600];
    flat(y->shape, y->ndim, f, sizeof f);
    size_t len = (size_t)snprintf(off, sizeof off, "(long long)0");
    for (int d = 0; d < x->ndim; d++) {
        if (nd->op == TETHER_OP_TILE) {
            len +=
                (size_t)snprintf(off + len, sizeof off - len, " + (long long)(i%d %% %d) * %lldLL",
                                 d + lead, (int)x->shape[d], st[d]);
        } else {
            len += (size_t)snprintf(off + len, sizeof off - len,
                                    " + (%lldLL + (long long)i%d * %lldLL) * %lldLL",
                                    (long long)a->ints[d], d, (long long)a->steps[d], st[d]);
        }
    }
    line(e, "%s[%s] = %s[%s];", k->out, f, k->in[0], off);
    unnest(e, y->ndim);
}

static void k_einsum(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_attrs *a = &nd->attrs;
    const tether_ir_tensor *y = T(e, nd->outputs[0]);
    int lab[TETHER_IR_MAX_INPUTS + 1][TETHER_IR_MAX_NDIM], rank[TETHER_IR_MAX_INPUTS + 1] = {0};
    int all[64], nall = 0, pos[64];
    long long ext[64];
    for (int i = 0; i < 64; i++) {
        pos[i] = -1;
    }
    for (int j = 0; j <= nd->ninputs; j++) {
        rank[j] = tether__einsum_labels(a, j, lab[j]);
    }
    for (int d = 0; d < rank[nd->ninputs]; d++) {
        pos[lab[nd->ninputs][d]] = nall;
        all[nall++] = lab[nd->ninputs][d];
    }
    for (int i = 0; i < nd->ninputs; i++) {
        const tether_ir_tensor *t = T(e, nd->inputs[i]);
        for (int d = 0; d < rank[i]; d++) {
            ext[lab[i][d]] = t->shape[d];
            if (pos[lab[i][d]] < 0) {
                pos[lab[i][d]] = nall;
                all[nall++] = lab[i][d];
            }
        }
    }
    int nout = rank[nd->ninputs];
    DLDataType t = T(e, nd->inputs[0])->dtype;
    char v[16], f[400], ex[700], l[800];
    for (int d = 0; d < nout; d++) {
        snprintf(v, sizeof v, "l%d", d);
        loop(e, v, ext[all[d]]);
    }
    line(e, "%s acc = 0;", acc_type(t));
    for (int d = nout; d < nall; d++) {
        snprintf(v, sizeof v, "l%d", d);
        loop(e, v, ext[all[d]]);
    }
    line(e, "%s p = 1;", acc_type(t));
    for (int i = 0; i < nd->ninputs; i++) {
        const tether_ir_tensor *ti = T(e, nd->inputs[i]);
        long long st[TETHER_IR_MAX_NDIM];
        strides(ti, st);
        size_t len = (size_t)snprintf(ex, sizeof ex, "%s[(long long)0", k->in[i]);
        for (int d = 0; d < rank[i]; d++) {
            len += (size_t)snprintf(ex + len, sizeof ex - len, " + (long long)l%d * %lldLL",
                                    pos[lab[i][d]], st[d]);
        }
        snprintf(ex + len, sizeof ex - len, "]");
        acc_load(t, ex, l, sizeof l);
        line(e, "p *= %s;", l);
    }
    line(e, "acc += p;");
    for (int d = nout; d < nall; d++) {
        close_block(e);
    }
    /* the output's flat index from its loop variables (l0 .. l{nout-1}) */
    long long sy = 1;
    size_t len = (size_t)snprintf(f, sizeof f, "(long long)0");
    for (int d = nout - 1; d >= 0; d--) {
        len += (size_t)snprintf(f + len, sizeof f - len, " + (long long)l%d * %lldLL", d, sy);
        sy *= y->shape[d];
    }
    acc_store(y->dtype, "acc", l, sizeof l);
    line(e, "%s[%s] = %s;", k->out, f, l);
    for (int d = 0; d < nout; d++) {
        close_block(e);
    }
}

void tether__c_data(em *e, const tether_ir_node *nd, const kargs *k) {
    if (tether__ir_live_wired(nd)) { /* gather, slice by live extents: emit_c_dynamic_live.c */
        tether__c_live(e, nd, k);
        line(e, "return 0;");
        return;
    }
    switch (nd->op) {
    case TETHER_OP_GATHER:
        k_gather(e, nd, k);
        break;
    case TETHER_OP_GATHER_ELEMENTS:
        k_elements(e, nd, k, 0);
        break;
    case TETHER_OP_SCATTER_ELEMENTS:
        k_elements(e, nd, k, 1);
        break;
    case TETHER_OP_GATHER_ND:
        k_nd(e, nd, k, 0);
        break;
    case TETHER_OP_SCATTER_ND:
        k_nd(e, nd, k, 1);
        break;
    case TETHER_OP_TOPK:
        k_topk(e, nd, k);
        break;
    case TETHER_OP_ARG_MAX:
    case TETHER_OP_ARG_MIN:
        k_arg(e, nd, k);
        break;
    case TETHER_OP_CUMSUM:
        k_cumsum(e, nd, k);
        break;
    case TETHER_OP_TRILU:
        k_trilu(e, nd, k);
        break;
    case TETHER_OP_ONE_HOT:
        k_one_hot(e, nd, k);
        break;
    case TETHER_OP_TILE:
    case TETHER_OP_SLICE:
        k_tile_slice(e, nd, k);
        break;
    case TETHER_OP_EINSUM:
        k_einsum(e, nd, k);
        break;
        TETHER__CASES_VISION /* emit_c_vision.c */
            tether__c_vision(e, nd, k);
        break;
    case TETHER_OP_RNN:
    case TETHER_OP_GRU:
    case TETHER_OP_LSTM:
    case TETHER_OP_REVERSE_SEQUENCE:
        tether__c_rnn(e, nd, k);
        break;
    case TETHER_OP_NONZERO: /* data-dependent sizes: emit_c_dynamic.c */
    case TETHER_OP_COMPRESS:
    case TETHER_OP_UNIQUE:
    case TETHER_OP_NMS:
        tether__c_dynamic(e, nd, k);
        break;
    case TETHER_OP_TFIDF: /* emit_c_text.c */
        tether__c_tfidf(e, nd, k);
        break;
        TETHER__CASES_LOOP /* statements, not kernels: emit_c_loop.c */
            line(e, "#error \"tether: a loop operator has no kernel\"");
        break;
        TETHER__CASES_NOT_DATA
        line(e, "#error \"tether: not a DATA operator\"");
        break;
    }
    line(e, "return 0;");
}
