/*
 * The OpenCL backend's kernels for the N-D convolutions and the gather-style layers the other
 * emitters lack (issue 27): conv_nd (1-D to 3-D Conv) and conv_transpose (1-D to 3-D
 * ConvTranspose, every pads/output_padding/dilation/group/auto_pad form: the importer and shape
 * inference reduce them to begin pads and the output extents), gather_nd (batch_dims) and einsum
 * (the forms the C path supports: any labels, repeated labels, sums over labels absent from the
 * output); the recurrent layers and reverse_sequence (emit_opencl_rnn.c) and grid_sample,
 * max_pool_arg, max_unpool, triangular and diag_prod (emit_opencl_vision.c), roi_align, dft and
 * stft (emit_opencl_signal.c) are dispatched from here. emit_opencl.c hands a node here when
 * tether__ocl_layers_owns says so, before the typed and float32 dispatches.
 *
 * What must stay true: one work-item per output element (the recurrent kernels: a work-group
 * per direction and batch row; those of emit_opencl_vision.c and _signal.c say theirs), each
 * computing what the C emitter's kernel (emit_c_layers.c, emit_c_data.c) computes for that element,
 * in the same order of accumulation (bias first, then input channels, then the window in row-major
 * order), so the results equal the C path's within rounding; window positions outside the input are
 * skipped, never read; a GatherND index out of range reads element 0 of its dimension (the
 * interpreter's run-time error; a kernel cannot report), never outside the tensor. Every tensor of
 * these kernels is a buffer: the storage-scope pass (opencl_textures.c) gives textures only to
 * convs and elementwise operators with texture kernels, so these operators' activations stay
 * buffers (the documented fallback). Reads and writes are plain `p[i]` on in0.., y, so --precision
 * fp16 rewrites them like every other kernel.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/crt/dtype.h"

int tether__ocl_layers_owns(const tether_ir_graph *g, const tether_ir_node *n) {
    (void)g;
    if (n->noutputs != 1 || n->outputs[0] < 0) {
        return 0;
    }
    switch ((int)n->op) {
    case TETHER_OP_CONV_ND:
    case TETHER_OP_CONV_TRANSPOSE:
    case TETHER_OP_GATHER_ND:
    case TETHER_OP_EINSUM:
        return 1;
    default:
        /* emit_opencl_rnn.c, emit_opencl_vision.c, emit_opencl_signal.c */
        return tether__ocl_rnn_op(n->op) || tether__ocl_vision_op(n->op) ||
               tether__ocl_signal_op(n->op);
    }
}

int64_t tether__ocl_layers_items(const ocl *e, const tether_ir_node *n) {
    if (tether__ocl_rnn_op(n->op)) {
        return tether__ocl_rnn_items(e, n);
    }
    if (tether__ocl_vision_op(n->op)) {
        return tether__ocl_vision_items(e, n);
    }
    if (tether__ocl_signal_op(n->op)) {
        return tether__ocl_signal_items(e, n);
    }
    return (int64_t)tether_ir_tensor_elements(T(e, n->outputs[0]));
}

/* ---- conv_nd and conv_transpose ------------------------------------------------------------ */

/* The spatial geometry seen as 3 dimensions (leading extents 1), as emit_c_layers.c's. */
typedef struct geo3 {
    long long in[3], out[3], k[3], s[3], d[3], p[3];
} geo3;

static void geo3_of(const ocl *e, const tether_ir_node *n, geo3 *g) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    const tether_ir_attrs *a = &n->attrs;
    int nsp = x->ndim - 2, off = 3 - nsp;
    for (int i = 0; i < 3; i++) {
        int j = i - off;
        g->in[i] = j >= 0 ? x->shape[2 + j] : 1;
        g->out[i] = j >= 0 ? y->shape[2 + j] : 1;
        g->k[i] = j >= 0 ? a->wkernel[j] : 1;
        g->s[i] = j >= 0 ? a->wstrides[j] : 1;
        g->d[i] = j >= 0 ? a->wdilations[j] : 1;
        g->p[i] = j >= 0 ? a->wpads[j] : 0;
    }
}

/* Input coordinate i<d> of output coordinate o<d> and kernel tap k<d>, or `continue`. */
static void tap(ocl *e, const tether_ir_node *n, const geo3 *g, int d) {
    if (n->op == TETHER_OP_CONV_ND) {
        line(e, "const int i%d = o%d * %lld - %lld + k%d * %lld;", d, d, g->s[d], g->p[d], d,
             g->d[d]);
        open_block(e, "if (i%d < 0 || i%d >= %lld)", d, d, g->in[d]);
        line(e, "continue;");
        close_block(e);
        return;
    }
    /* transpose: o = i * s - p + k * d, so i = (o + p - k * d) / s where that divides */
    line(e, "const int t%d = o%d + %lld - k%d * %lld;", d, d, g->p[d], d, g->d[d]);
    if (g->s[d] == 1) {
        open_block(e, "if (t%d < 0 || t%d >= %lld)", d, d, g->in[d]);
    } else {
        open_block(e, "if (t%d < 0 || t%d %% %lld != 0 || t%d / %lld >= %lld)", d, d, g->s[d], d,
                   g->s[d], g->in[d]);
    }
    line(e, "continue;");
    close_block(e);
    line(e, "const int i%d = t%d / %lld;", d, d, g->s[d]);
}

static void k_conv(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    geo3 g;
    geo3_of(e, n, &g);
    long long C = x->shape[1], O = y->shape[1], G = n->attrs.groups;
    long long CG = C / G, OG = O / G, K = g.k[0] * g.k[1] * g.k[2];
    long long IS = g.in[0] * g.in[1] * g.in[2];
    int tr = n->op == TETHER_OP_CONV_TRANSPOSE;
    line(e, "int r_ = f;");
    for (int d = 2; d >= 0; d--) {
        line(e, "const int o%d = r_ %% %lld;", d, g.out[d]);
        line(e, "r_ /= %lld;", g.out[d]);
    }
    line(e, "const int oc = r_ %% %lld;", O);
    line(e, "const int nb = r_ / %lld;", O);
    line(e, "const int gi = oc / %lld;", OG);
    int bias = n->ninputs > 2 && n->inputs[2] >= 0;
    line(e, "float acc = %s;", bias ? "in2[oc]" : "0.0f");
    open_block(e, "for (int ic = 0; ic < %lld; ++ic)", CG);
    line(e, "const int xb = (nb * %lld + gi * %lld + ic) * %lld;", C, CG, IS);
    if (tr) { /* w[C, O/G, K...]: input channel gi*CG+ic, output channel oc %% OG */
        line(e, "const int wb = ((gi * %lld + ic) * %lld + oc %% %lld) * %lld;", CG, OG, OG, K);
    } else { /* w[O, C/G, K...] */
        line(e, "const int wb = (oc * %lld + ic) * %lld;", CG, K);
    }
    for (int d = 0; d < 3; d++) {
        open_block(e, "for (int k%d = 0; k%d < %lld; ++k%d)", d, d, g.k[d], d);
        tap(e, n, &g, d);
    }
    line(e,
         "acc += in0[xb + (i0 * %lld + i1) * %lld + i2] * in1[wb + (k0 * %lld + k1) * %lld + "
         "k2];",
         g.in[1], g.in[2], g.k[1], g.k[2]);
    for (int d = 0; d < 3; d++) {
        close_block(e);
    }
    close_block(e); /* ic */
    line(e, "y[f] = acc;");
}

/* ---- gather_nd ----------------------------------------------------------------------------- */

/* y[t, r] = x[batch(t), idx[t, 0..m), r]: tuple t of the indices (batch_dims b leading
 * dimensions shared with x), r within the slice it selects. */
static void k_gather_nd(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *it = T(e, n->inputs[1]);
    int b = (int)n->attrs.axis, q = it->ndim;
    long long m = it->shape[q - 1];
    long long per_batch = prod(it->shape, b, q - 1), slice = prod(x->shape, b + (int)m, x->ndim);
    line(e, "const long t = (long)f / %lld;", slice);
    line(e, "long off = (long)f %% %lld;", slice);
    if (b) {
        line(e, "off += (t / %lld) * %lld;", per_batch, (long long)prod(x->shape, b, x->ndim));
    }
    for (long long i = 0; i < m; i++) {
        long long dim = x->shape[b + i];
        open_scope(e);
        line(e, "long w = (long)in1[t * %lld + %lld];", m, i);
        line(e, "w = w < 0 ? w + %lld : w;", dim);
        line(e, "w = w >= 0 && w < %lld ? w : 0;", dim);
        line(e, "off += w * %lld;", (long long)prod(x->shape, b + (int)i + 1, x->ndim));
        close_block(e);
    }
    line(e, "y[f] = in0[off];");
}

/* ---- einsum -------------------------------------------------------------------------------- */

static int is_flt(DLDataType t) {
    return tether__dtype_is_float(t) || t.code == kDLBfloat;
}

/* The C path's accumulator (emit_c_data.c): float, double for float64, 64-bit wrapping for
 * integers and bool. */
static const char *acc_type(DLDataType t) {
    return !is_flt(t) ? "ulong" : t.bits == 64 && t.code == kDLFloat ? "double" : "float";
}

/* The labels of an einsum node: per operand (and the output, last) its rank and labels; every
 * label in order, the output's first (nout of them), then the summed ones; per label its
 * position in that order and its extent. */
typedef struct einsum_labels {
    int lab[TETHER_IR_MAX_INPUTS + 1][TETHER_IR_MAX_NDIM], rank[TETHER_IR_MAX_INPUTS + 1];
    int all[64], nall, pos[64], nout;
    long long ext[64];
} einsum_labels;

static int einsum_of(const ocl *e, const tether_ir_node *n, einsum_labels *L) {
    memset(L, 0, sizeof *L);
    for (int i = 0; i < 64; i++) {
        L->pos[i] = -1;
    }
    for (int j = 0; j <= n->ninputs; j++) {
        L->rank[j] = tether__einsum_labels(&n->attrs, j, L->lab[j]);
        if (L->rank[j] < 0) {
            return -1;
        }
    }
    for (int d = 0; d < L->rank[n->ninputs]; d++) {
        L->pos[L->lab[n->ninputs][d]] = L->nall;
        L->all[L->nall++] = L->lab[n->ninputs][d];
    }
    for (int i = 0; i < n->ninputs; i++) {
        const tether_ir_tensor *t = T(e, n->inputs[i]);
        for (int d = 0; d < L->rank[i]; d++) {
            L->ext[L->lab[i][d]] = t->shape[d];
            if (L->pos[L->lab[i][d]] < 0) {
                L->pos[L->lab[i][d]] = L->nall;
                L->all[L->nall++] = L->lab[i][d];
            }
        }
    }
    L->nout = L->rank[n->ninputs];
    return 0;
}

static void k_einsum(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    einsum_labels L;
    if (einsum_of(e, n, &L)) {
        line(e, "#error \"tether: einsum node %s has malformed labels\"",
             tether__cg_comment_text(n->name));
        return;
    }
    int nout = L.nout, nall = L.nall;
    DLDataType t = T(e, n->inputs[0])->dtype;
    const char *acc = acc_type(t);
    /* the output's labels from f (row-major over the output's extents) */
    if (nout) {
        line(e, "int r_ = f;");
    }
    for (int d = nout - 1; d >= 0; d--) {
        line(e, "const int l%d = r_ %% %lld;", d, (long long)y->shape[d]);
        if (d) {
            line(e, "r_ /= %lld;", (long long)y->shape[d]);
        }
    }
    line(e, "%s acc = 0;", acc);
    for (int d = nout; d < nall; d++) {
        open_block(e, "for (int l%d = 0; l%d < %lld; ++l%d)", d, d, L.ext[L.all[d]], d);
    }
    line(e, "%s p = 1;", acc);
    for (int i = 0; i < n->ninputs; i++) {
        const tether_ir_tensor *ti = T(e, n->inputs[i]);
        char ex[700], l[900];
        size_t len = (size_t)snprintf(ex, sizeof ex, "0");
        long long s = 1;
        for (int d = L.rank[i] - 1; d >= 0; d--) {
            len +=
                (size_t)snprintf(ex + len, sizeof ex - len, " + l%d * %lld", L.pos[L.lab[i][d]], s);
            s *= ti->shape[d];
        }
        tether__ocl_load(ti->dtype, in_name(i), ex, l, sizeof l);
        if (is_flt(ti->dtype)) {
            line(e, "p *= (%s)%s;", acc, l);
        } else if (tether__dtype_class(ti->dtype) == TETHER__DC_INT) {
            line(e, "p *= (ulong)(long)%s;", l);
        } else {
            line(e, "p *= (ulong)%s;", l);
        }
    }
    line(e, "acc += p;");
    for (int d = nout; d < nall; d++) {
        close_block(e);
    }
    if (is_flt(t)) {
        tether__ocl_store(e, strcmp(acc, "double") ? TETHER_FLOAT32 : TETHER_DTYPE(kDLFloat, 64),
                          y->dtype, "y", "f", "acc");
    } else {
        int sgn = tether__dtype_class(y->dtype) == TETHER__DC_INT;
        tether__ocl_store(e, y->dtype, y->dtype, "y", "f", sgn ? "(long)acc" : "acc");
    }
}

/* ---- dispatch ------------------------------------------------------------------------------ */

int64_t tether__ocl_layers_serial(const ocl *e, const tether_ir_node *n) {
    switch ((int)n->op) {
    case TETHER_OP_CONV_ND:
    case TETHER_OP_CONV_TRANSPOSE: {
        const tether_ir_tensor *w = T(e, n->inputs[1]);
        /* input channels of a group times the window */
        int64_t cg = n->op == TETHER_OP_CONV_ND ? w->shape[1] : w->shape[0] / n->attrs.groups;
        return cg * prod(w->shape, 2, w->ndim);
    }
    case TETHER_OP_GATHER_ND: {
        const tether_ir_tensor *it = T(e, n->inputs[1]);
        return it->shape[it->ndim - 1];
    }
    case TETHER_OP_EINSUM: {
        einsum_labels L;
        int64_t r = 1; /* the summed labels' extents */
        for (int d = einsum_of(e, n, &L) ? L.nall : L.nout; d < L.nall; d++) {
            r *= L.ext[L.all[d]];
        }
        return r;
    }
    default:
        return tether__ocl_rnn_op(n->op)      ? tether__ocl_rnn_serial(e, n)
               : tether__ocl_vision_op(n->op) ? tether__ocl_vision_serial(e, n)
               : tether__ocl_signal_op(n->op) ? tether__ocl_signal_serial(e, n)
                                              : 1;
    }
}

void tether__ocl_layers_body(ocl *e, const tether_ir_node *n) {
    switch ((int)n->op) {
    case TETHER_OP_CONV_ND:
    case TETHER_OP_CONV_TRANSPOSE:
        k_conv(e, n);
        return;
    case TETHER_OP_GATHER_ND:
        k_gather_nd(e, n);
        return;
    case TETHER_OP_EINSUM:
        k_einsum(e, n);
        return;
    default:
        if (tether__ocl_rnn_op(n->op)) {
            tether__ocl_rnn_body(e, n);
            return;
        }
        if (tether__ocl_vision_op(n->op)) {
            tether__ocl_vision_body(e, n);
            return;
        }
        if (tether__ocl_signal_op(n->op)) {
            tether__ocl_signal_body(e, n);
            return;
        }
        line(e, "#error \"tether: operator %s reached the layer kernels\"", tether_op_name(n->op));
        return;
    }
}
