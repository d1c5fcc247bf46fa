/*
 * The OpenCL kernels of the operators with data-dependent output sizes (nonzero, compress,
 * unique, nms; ir/shapes_dynamic.c, docs/onnx.md "Data-dependent output sizes"), the OpenCL
 * counterparts of emit_c_dynamic.c: the data of the actual shape written densely at the start of
 * the output (sized at the bound), zeros after it (nms' -1 terminator row, unique's -1 terminator
 * as in C), or, with mode TETHER__DYN_COUNT, the actual extent as int64 [1] (the extent output).
 *
 * Each kernel is one work-item (global size 1): the selections, orders and counts are serial
 * (a count, then the writes in order; unique's first occurrences and insertion sort; nms' greedy
 * selection per batch and class), and one work-item makes them exactly the C kernel's.
 *
 * What must stay true: the same selections, orders, counts and bytes as emit_c_dynamic.c (and so
 * interp/interp_dynamic.c): nms in float with no contracted multiply-add (every product is its own
 * statement) and its IoU division correctly rounded (in double where the device has cl_khr_fp64:
 * float / float rounded once more to float is the correctly rounded quotient), ties by the lower
 * box index; unique's order by item, lexicographic. Where the C kernel returns -4
 * (TETHER_ERR_LIMIT: a count above the bound) or -1 (TETHER_ERR_INVALID_ARG) the kernel reports the
 * same code through the run-time error flag (emit_opencl_check.c: tether__ocl_dynamic_check lists
 * them) and returns before any write past the bound; every access stays inside its tensor.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

int tether__ocl_dynamic_owns(const tether_ir_graph *g, const tether_ir_node *n) {
    (void)g;
    return tether__ir_is_dynamic_op(n->op) && n->noutputs == 1 && n->outputs[0] >= 0;
}

static int unique_out(const tether_ir_node *n) {
    return (int)((n->attrs.mode >> 4) & 3);
}

/* unique's node of Y, inverse_indices or counts: it reads the first-occurrence indices */
static int unique_reader(const tether_ir_node *n) {
    return n->op == TETHER_OP_UNIQUE && n->ninputs > 1 && n->inputs[1] >= 0;
}

const char *tether__ocl_dynamic_check(const tether_ir_node *n, int k, int *code) {
    int c = TETHER_ERR_LIMIT;
    const char *w = NULL;
    int count = (n->attrs.mode & TETHER__DYN_COUNT) != 0;
    switch ((int)n->op) {
    case TETHER_OP_NONZERO:
        w = k == 0 ? "more nonzero elements than the output's bound" : NULL;
        break;
    case TETHER_OP_COMPRESS:
        if (k == 0) {
            w = "more selected than the output's bound";
        } else if (k == 1) {
            w = "a condition selecting past the axis' extent";
            c = TETHER_ERR_INVALID_ARG;
        }
        break;
    case TETHER_OP_UNIQUE:
        if (k == 0) {
            w = "more unique items than the output's bound";
        } else if (k == 1 && unique_reader(n)) {
            w = "a first-occurrence index past the axis' extent";
            c = TETHER_ERR_INVALID_ARG;
        }
        break;
    case TETHER_OP_NMS:
        w = k == 0 && !count ? "more boxes than the output's bound" : NULL;
        break;
    default:
        break;
    }
    if (code) {
        *code = c;
    }
    return w;
}

void tether__ocl_dynamic_prelude(const tether_ir_graph *g, tether__sbuf *src) {
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *n = &g->nodes[i];
        if (n->op == TETHER_OP_NMS && !(n->attrs.mode & TETHER__DYN_COUNT)) {
            tether__sbuf_puts(src, "/* NonMaxSuppression's IoU: a correctly rounded float "
                                   "division (as C's), in double where the\n * device has it */\n"
                                   "#ifdef cl_khr_fp64\n#pragma OPENCL EXTENSION cl_khr_fp64 : "
                                   "enable\n#define TG_DIV_RN(a, b) ((float)((double)(a) / "
                                   "(double)(b)))\n#else\n#define TG_DIV_RN(a, b) ((a) / (b))\n"
                                   "#endif\n\n");
            return;
        }
    }
}

int64_t tether__ocl_dynamic_serial(const ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    int64_t zero = (n->attrs.mode & TETHER__DYN_COUNT) ? 0 : (int64_t)tether_ir_tensor_elements(y);
    int64_t b = tether__ir_dyn_bound(e->g, n);
    switch ((int)n->op) {
    case TETHER_OP_NONZERO:
        return zero + 2 * (int64_t)tether_ir_tensor_elements(x);
    case TETHER_OP_COMPRESS: {
        tether__ir_items it = tether__ir_items_of(x, &n->attrs);
        int64_t len = (int64_t)tether_ir_tensor_elements(T(e, n->inputs[1]));
        return zero + len + it.outer * (len < it.m ? len : it.m) * it.inner;
    }
    case TETHER_OP_UNIQUE: {
        tether__ir_items it = tether__ir_items_of(x, &n->attrs);
        return zero + it.m * it.m * it.outer * it.inner; /* pairs of items, compared by row */
    }
    default: { /* nms: per batch and class, per selection a pass over the boxes and the kept */
        if (n->attrs.mode & TETHER__DYN_COUNT) {
            return b;
        }
        const tether_ir_tensor *sc = T(e, n->inputs[1]);
        int64_t k = n->attrs.k;
        return zero + sc->shape[0] * sc->shape[1] * k * (sc->shape[2] + k);
    }
    }
}

/* `int cmp` = the lexicographic order of items ea and eb (expressions) of x (in0). */
static void emit_cmp(ocl *e, const tether_ir_tensor *x, tether__ir_items it, const char *ea,
                     const char *eb) {
    const char *ct = tether__ocl_compute_type(x->dtype);
    char ix[240], la[320], lb[320];
    line(e, "int cmp = 0;");
    open_block(e, "for (long cp = 0; cp < %lldL && cmp == 0; ++cp)", it.outer);
    open_block(e, "for (long ci = 0; ci < %lldL && cmp == 0; ++ci)", it.inner);
    snprintf(ix, sizeof ix, "(cp * %lldL + (%s)) * %lldL + ci", it.m, ea, it.inner);
    tether__ocl_load(x->dtype, "in0", ix, la, sizeof la);
    snprintf(ix, sizeof ix, "(cp * %lldL + (%s)) * %lldL + ci", it.m, eb, it.inner);
    tether__ocl_load(x->dtype, "in0", ix, lb, sizeof lb);
    line(e, "const %s va = %s, vb = %s;", ct, la, lb);
    line(e, "cmp = va < vb ? -1 : (va > vb ? 1 : 0);");
    close_block(e);
    close_block(e);
}

/* `if (cond) { fail(k); return; }` */
static void fail_if(ocl *e, int k, const char *fmt, long long v) {
    char cond[200];
    snprintf(cond, sizeof cond, fmt, v);
    open_block(e, "if (%s)", cond);
    tether__ocl_fail_entry(e, k);
    line(e, "return;");
    close_block(e);
}

static void k_nonzero(ocl *e, const tether_ir_node *n, long long b) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    long long total = (long long)tether_ir_tensor_elements(x);
    int nd = x->ndim;
    char l[300];
    tether__ocl_load(x->dtype, "in0", "q", l, sizeof l);
    line(e, "long cnt = 0;");
    open_block(e, "for (long q = 0; q < %lldL; ++q)", total);
    line(e, "cnt += (%s) != 0;", l);
    close_block(e);
    fail_if(e, 0, "cnt > %lldL", b); /* the C kernel's -4 */
    if (n->attrs.mode & TETHER__DYN_COUNT) {
        line(e, "y[0] = cnt;");
        return;
    }
    line(e, "long c[%d] = {0};", nd ? nd : 1);
    line(e, "long j = 0;");
    open_block(e, "for (long q = 0; q < %lldL; ++q)", total);
    open_block(e, "if ((%s) != 0)", l);
    if (nd == 0) {
        line(e, "y[j] = 0;");
    }
    for (int d = 0; d < nd; d++) {
        line(e, "y[%d * cnt + j] = c[%d];", d, d);
    }
    line(e, "j++;");
    close_block(e);
    for (int d = nd - 1; d >= 1; d--) { /* the next coordinates (an odometer) */
        open_block(e, "if (++c[%d] == %lldL)", d, (long long)x->shape[d]);
        line(e, "c[%d] = 0;", d);
    }
    line(e, "++c[0];");
    for (int d = nd - 1; d >= 1; d--) {
        close_block(e);
    }
    close_block(e);
}

static void k_compress(ocl *e, const tether_ir_node *n, long long b) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *c = T(e, n->inputs[1]);
    tether__ir_items it = tether__ir_items_of(x, &n->attrs);
    long long len = (long long)tether_ir_tensor_elements(c);
    char l[300];
    tether__ocl_load(c->dtype, "in1", "q", l, sizeof l);
    line(e, "long cnt = 0;");
    open_block(e, "for (long q = 0; q < %lldL; ++q)", len);
    open_block(e, "if ((%s) != 0)", l);
    fail_if(e, 1, "q >= %lldL", it.m); /* the C kernel's -1 */
    line(e, "cnt++;");
    close_block(e);
    close_block(e);
    fail_if(e, 0, "cnt > %lldL", b);
    if (n->attrs.mode & TETHER__DYN_COUNT) {
        line(e, "y[0] = cnt;");
        return;
    }
    long long lim = len < it.m ? len : it.m;
    open_block(e, "for (long p = 0; p < %lldL; ++p)", it.outer);
    line(e, "long r = 0;");
    open_block(e, "for (long q = 0; q < %lldL; ++q)", lim);
    open_block(e, "if ((%s) != 0)", l);
    open_block(e, "for (long i = 0; i < %lldL; ++i)", it.inner);
    line(e, "y[(p * cnt + r) * %lldL + i] = in0[(p * %lldL + q) * %lldL + i];", it.inner, it.m,
         it.inner);
    close_block(e);
    line(e, "r++;");
    close_block(e);
    close_block(e);
    close_block(e);
}

static void k_unique(ocl *e, const tether_ir_node *n, long long b) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    tether__ir_items it = tether__ir_items_of(x, &n->attrs);
    int out = unique_out(n);
    int count = (n->attrs.mode & TETHER__DYN_COUNT) != 0;
    if (!unique_reader(n)) { /* the first-occurrence indices, or the count */
        line(e, "long u = 0;");
        open_block(e, "for (long j = 0; j < %lldL; ++j)", it.m);
        line(e, "int first = 1;");
        open_block(e, "for (long q = 0; q < j && first; ++q)");
        emit_cmp(e, x, it, "q", "j");
        line(e, "first = cmp != 0;");
        close_block(e);
        open_block(e, "if (!first)");
        line(e, "continue;");
        close_block(e);
        fail_if(e, 0, "u >= %lldL", b);
        if (!count) {
            line(e, "y[u] = j;");
        }
        line(e, "u++;");
        close_block(e);
        if (count) {
            line(e, "y[0] = u;");
            return;
        }
        if (n->attrs.mode & 1) { /* insertion sort by item */
            open_block(e, "for (long r = 1; r < u; ++r)");
            line(e, "const long v = y[r];");
            line(e, "long s = r;");
            open_block(e, "while (s > 0)");
            emit_cmp(e, x, it, "y[s - 1]", "v");
            open_block(e, "if (cmp <= 0)");
            line(e, "break;");
            close_block(e);
            line(e, "y[s] = y[s - 1];");
            line(e, "s--;");
            close_block(e);
            line(e, "y[s] = v;");
            close_block(e);
        }
        open_block(e, "if (u < %lldL)", b);
        line(e, "y[u] = -1; /* the terminator the other outputs read */");
        close_block(e);
        return;
    }
    long long bi = (long long)T(e, n->inputs[1])->shape[0];
    line(e, "long u = 0;");
    open_block(e, "while (u < %lldL && in1[u] >= 0)", bi);
    line(e, "u++;");
    close_block(e);
    fail_if(e, 0, "u > %lldL", b);
    open_block(e, "for (long r = 0; r < u; ++r)");
    fail_if(e, 1, "in1[r] >= %lldL", it.m);
    close_block(e);
    if (out == 0) {
        open_block(e, "for (long p = 0; p < %lldL; ++p)", it.outer);
        open_block(e, "for (long r = 0; r < u; ++r)");
        open_block(e, "for (long i = 0; i < %lldL; ++i)", it.inner);
        line(e, "y[(p * u + r) * %lldL + i] = in0[(p * %lldL + in1[r]) * %lldL + i];", it.inner,
             it.m, it.inner);
        close_block(e);
        close_block(e);
        close_block(e);
    } else if (out == 2) {
        open_block(e, "for (long j = 0; j < %lldL; ++j)", it.m);
        line(e, "y[j] = 0;");
        open_block(e, "for (long r = 0; r < u; ++r)");
        emit_cmp(e, x, it, "in1[r]", "j");
        open_block(e, "if (cmp == 0)");
        line(e, "y[j] = r;");
        line(e, "break;");
        close_block(e);
        close_block(e);
        close_block(e);
    } else {
        open_block(e, "for (long r = 0; r < u; ++r)");
        line(e, "y[r] = 0;");
        open_block(e, "for (long j = 0; j < %lldL; ++j)", it.m);
        emit_cmp(e, x, it, "in1[r]", "j");
        line(e, "y[r] += cmp == 0;");
        close_block(e);
        close_block(e);
    }
}

/* float var[4] = xmin, ymin, xmax, ymax of box `j` (an expression) of batch bt (in0). */
static void emit_box(ocl *e, const tether_ir_tensor *bx, int center, const char *var, const char *j,
                     long long N) {
    char ix[200], l[4][300];
    for (int q = 0; q < 4; q++) {
        snprintf(ix, sizeof ix, "(bt * %lldL + (%s)) * 4 + %d", N, j, q);
        tether__ocl_load(bx->dtype, "in0", ix, l[q], sizeof l[q]);
    }
    line(e, "float %s[4];", var);
    open_scope(e);
    line(e, "const float v0 = (float)%s, v1 = (float)%s, v2 = (float)%s, v3 = (float)%s;", l[0],
         l[1], l[2], l[3]);
    if (center) {
        line(e, "%s[0] = v0 - v2 / 2.0f;", var);
        line(e, "%s[2] = v0 + v2 / 2.0f;", var);
        line(e, "%s[1] = v1 - v3 / 2.0f;", var);
        line(e, "%s[3] = v1 + v3 / 2.0f;", var);
    } else {
        line(e, "%s[0] = v1 < v3 ? v1 : v3;", var);
        line(e, "%s[2] = v1 < v3 ? v3 : v1;", var);
        line(e, "%s[1] = v0 < v2 ? v0 : v2;", var);
        line(e, "%s[3] = v0 < v2 ? v2 : v0;", var);
    }
    close_block(e);
}

static void k_nms(ocl *e, const tether_ir_node *n, long long b) {
    const tether_ir_attrs *a = &n->attrs;
    if (a->mode & TETHER__DYN_COUNT) { /* the rows of the nms node, up to its -1 row */
        line(e, "long cnt = 0;");
        open_block(e, "while (cnt < %lldL && in0[cnt * 3] >= 0)", b);
        line(e, "cnt++;");
        close_block(e);
        line(e, "y[0] = cnt;");
        return;
    }
    const tether_ir_tensor *bx = T(e, n->inputs[0]), *sc = T(e, n->inputs[1]);
    long long B = sc->shape[0], C = sc->shape[1], N = sc->shape[2];
    int center = (int)(a->mode & 1);
    char thr[64], iou[64], l[300];
    flit(thr, sizeof thr, a->beta);
    flit(iou, sizeof iou, a->alpha);
    tether__ocl_load(sc->dtype, "in1", "base + j", l, sizeof l);
    line(e, "long cnt = 0;");
    open_block(e, "for (long bt = 0; bt < %lldL; ++bt)", B);
    open_block(e, "for (long c = 0; c < %lldL; ++c)", C);
    line(e, "const long first = cnt;");
    line(e, "long prev = -1;");
    line(e, "float prev_s = 0.0f;");
    line(e, "const long base = (bt * %lldL + c) * %lldL;", C, N);
    open_block(e, "while (cnt - first < %lldL)", (long long)a->k);
    line(e, "long best = -1; /* next in order: score down, then index up */");
    line(e, "float bs = 0.0f;");
    open_block(e, "for (long j = 0; j < %lldL; ++j)", N);
    line(e, "const float s = (float)%s;", l);
    if (a->mode & 4) {
        open_block(e, "if (!(s > %s) || s != s)", thr);
    } else {
        open_block(e, "if (s != s)");
    }
    line(e, "continue;");
    close_block(e);
    open_block(e, "if (prev >= 0 && !(s < prev_s || (s == prev_s && j > prev)))");
    line(e, "continue;");
    close_block(e);
    open_block(e, "if (best < 0 || s > bs)");
    line(e, "best = j;");
    line(e, "bs = s;");
    close_block(e);
    close_block(e);
    open_block(e, "if (best < 0)");
    line(e, "break;");
    close_block(e);
    line(e, "prev = best;");
    line(e, "prev_s = bs;");
    emit_box(e, bx, center, "cb", "best", N);
    line(e, "int keep = 1;");
    open_block(e, "for (long r = first; keep && r < cnt; ++r) /* this class' selections */");
    emit_box(e, bx, center, "sb", "y[r * 3 + 2]", N);
    line(e,
         "const float ix0 = cb[0] > sb[0] ? cb[0] : sb[0], ix1 = cb[2] < sb[2] ? cb[2] : sb[2];");
    line(e,
         "const float iy0 = cb[1] > sb[1] ? cb[1] : sb[1], iy1 = cb[3] < sb[3] ? cb[3] : sb[3];");
    open_block(e, "if (ix1 <= ix0 || iy1 <= iy0)");
    line(e, "continue;");
    close_block(e);
    /* each product its own statement: no multiply-add is contracted (C computes them apart) */
    line(e, "const float inter = (ix1 - ix0) * (iy1 - iy0);");
    line(e, "const float a1 = (cb[2] - cb[0]) * (cb[3] - cb[1]);");
    line(e, "const float a2 = (sb[2] - sb[0]) * (sb[3] - sb[1]);");
    line(e, "const float uni = a1 + a2 - inter;");
    open_block(e, "if (inter <= 0.0f || a1 <= 0.0f || a2 <= 0.0f || uni <= 0.0f)");
    line(e, "continue;");
    close_block(e);
    line(e, "keep = !(TG_DIV_RN(inter, uni) > %s);", iou);
    close_block(e);
    open_block(e, "if (!keep)");
    line(e, "continue;");
    close_block(e);
    fail_if(e, 0, "cnt >= %lldL", b);
    line(e, "y[cnt * 3] = bt;");
    line(e, "y[cnt * 3 + 1] = c;");
    line(e, "y[cnt * 3 + 2] = best;");
    line(e, "cnt++;");
    close_block(e);
    close_block(e);
    close_block(e);
    open_block(e, "if (cnt < %lldL)", b);
    line(e, "y[cnt * 3] = -1; /* the terminator row its extent node reads */");
    close_block(e);
}

void tether__ocl_dynamic_body(ocl *e, const tether_ir_node *n) {
    long long b = (long long)tether__ir_dyn_bound(e->g, n);
    if (!(n->attrs.mode & TETHER__DYN_COUNT)) { /* past the actual data: zeros (consumers) */
        open_block(e, "for (long z = 0; z < %lldL; ++z)",
                   (long long)tether_ir_tensor_elements(T(e, n->outputs[0])));
        line(e, "y[z] = 0;");
        close_block(e);
    }
    switch ((int)n->op) {
    case TETHER_OP_NONZERO:
        k_nonzero(e, n, b);
        return;
    case TETHER_OP_COMPRESS:
        k_compress(e, n, b);
        return;
    case TETHER_OP_UNIQUE:
        k_unique(e, n, b);
        return;
    default:
        k_nms(e, n, b);
        return;
    }
}
