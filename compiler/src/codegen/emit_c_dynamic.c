/*
 * The C kernels of the operators with data-dependent output sizes (nonzero, compress, unique,
 * nms; ops.def, ir/shapes_dynamic.c): the data of the actual shape written densely at the start
 * of the output (sized at the bound), or, with mode TETHER__DYN_COUNT, the actual extent as
 * int64 [1] (the extent output the caller reads, docs/abi.md).
 *
 * What must stay true: the same selections, orders and counts as interp/interp_dynamic.c (nms in
 * float, ties by the lower box index; unique's order by item, lexicographic); a kernel returns
 * int32_t: 0, -4 (TETHER_ERR_LIMIT) when the count is above the bound, checked before any write
 * past it, -1 (TETHER_ERR_INVALID_ARG) when a condition selects past its axis' extent; the graph
 * returns that code. The output is zeroed up to its bound first (consumers of the tensor compute
 * every row of the bound: ir/shapes_dynamic.c). No 64-bit division (MCU targets), no scratch
 * memory beyond the output.
 */
#include <stdio.h>
#include <string.h>

#include "emit_c_internal.h"
#include "tether/crt/dtype.h"

/* `int cmp` = the lexicographic order of items ea and eb (C expressions) of x. */
static void emit_cmp(em *e, const tether_ir_tensor *x, const char *xn, tether__ir_items it,
                     const char *ea, const char *eb) {
    const char *ct = tether__c_compute_type(x->dtype);
    char ex[240], la[320], lb[320];
    line(e, "int cmp = 0;");
    line(e, "for (long long cp = 0; cp < %lldLL && cmp == 0; ++cp) {", it.outer);
    line(e, "    for (long long ci = 0; ci < %lldLL && cmp == 0; ++ci) {", it.inner);
    snprintf(ex, sizeof ex, "%s[(cp * %lldLL + (%s)) * %lldLL + ci]", xn, it.m, ea, it.inner);
    tether__c_load(x->dtype, ex, la, sizeof la);
    snprintf(ex, sizeof ex, "%s[(cp * %lldLL + (%s)) * %lldLL + ci]", xn, it.m, eb, it.inner);
    tether__c_load(x->dtype, ex, lb, sizeof lb);
    line(e, "        %s va = %s, vb = %s;", ct, la, lb);
    line(e, "        cmp = va < vb ? -1 : (va > vb ? 1 : 0);");
    line(e, "    }");
    line(e, "}");
}

static void k_nonzero(em *e, const tether_ir_node *nd, const kargs *k, long long b) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    long long total = (long long)tether_ir_tensor_elements(x);
    int nd_ = x->ndim;
    char ex[200], l[300];
    snprintf(ex, sizeof ex, "%s[f]", k->in[0]);
    tether__c_load(x->dtype, ex, l, sizeof l);
    line(e, "long long cnt = 0;");
    line(e, "for (long long f = 0; f < %lldLL; ++f) {", total);
    line(e, "    cnt += (%s) != 0;", l);
    line(e, "}");
    line(e, "if (cnt > %lldLL) {", b);
    line(e, "    return -4; /* TETHER_ERR_LIMIT: more nonzero elements than the bound */");
    line(e, "}");
    if (nd->attrs.mode & TETHER__DYN_COUNT) {
        line(e, "%s[0] = (int64_t)cnt;", k->out);
        return;
    }
    line(e, "long long c[%d] = {0};", nd_ ? nd_ : 1);
    line(e, "long long j = 0;");
    line(e, "for (long long f = 0; f < %lldLL; ++f) {", total);
    e->depth++;
    line(e, "if ((%s) != 0) {", l);
    if (nd_ == 0) {
        line(e, "    %s[j] = 0;", k->out);
    }
    for (int d = 0; d < nd_; d++) {
        line(e, "    %s[%d * cnt + j] = (int64_t)c[%d];", k->out, d, d);
    }
    line(e, "    j++;");
    line(e, "}");
    /* the next coordinates (an odometer; no division) */
    for (int d = nd_ - 1; d >= 1; d--) {
        line(e, "if (++c[%d] == %lldLL) {", d, (long long)x->shape[d]);
        e->depth++;
        line(e, "c[%d] = 0;", d);
    }
    line(e, "++c[0];");
    for (int d = nd_ - 1; d >= 1; d--) {
        close_block(e);
    }
    close_block(e);
}

static void k_compress(em *e, const tether_ir_node *nd, const kargs *k, long long b) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *c = T(e, nd->inputs[1]);
    tether__ir_items it = tether__ir_items_of(x, &nd->attrs);
    long long len = (long long)tether_ir_tensor_elements(c);
    char ex[200], l[300];
    snprintf(ex, sizeof ex, "%s[q]", k->in[1]);
    tether__c_load(c->dtype, ex, l, sizeof l);
    line(e, "long long cnt = 0;");
    line(e, "for (long long q = 0; q < %lldLL; ++q) {", len);
    line(e, "    if ((%s) != 0) {", l);
    line(e, "        if (q >= %lldLL) {", it.m);
    line(e, "            return -1; /* TETHER_ERR_INVALID_ARG: the condition selects past the "
            "extent */");
    line(e, "        }");
    line(e, "        cnt++;");
    line(e, "    }");
    line(e, "}");
    line(e, "if (cnt > %lldLL) {", b);
    line(e, "    return -4; /* TETHER_ERR_LIMIT: more selected than the bound */");
    line(e, "}");
    if (nd->attrs.mode & TETHER__DYN_COUNT) {
        line(e, "(void)%s;", k->in[0]);
        line(e, "%s[0] = (int64_t)cnt;", k->out);
        return;
    }
    long long lim = len < it.m ? len : it.m;
    line(e, "for (long long p = 0; p < %lldLL; ++p) {", it.outer);
    line(e, "    long long r = 0;");
    line(e, "    for (long long q = 0; q < %lldLL; ++q) {", lim);
    line(e, "        if ((%s) != 0) {", l);
    line(e, "            for (long long i = 0; i < %lldLL; ++i) {", it.inner);
    line(e, "                %s[(p * cnt + r) * %lldLL + i] = %s[(p * %lldLL + q) * %lldLL + i];",
         k->out, it.inner, k->in[0], it.m, it.inner);
    line(e, "            }");
    line(e, "            r++;");
    line(e, "        }");
    line(e, "    }");
    line(e, "}");
}

static void k_unique(em *e, const tether_ir_node *nd, const kargs *k, long long b) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    tether__ir_items it = tether__ir_items_of(x, &nd->attrs);
    int out = (int)((nd->attrs.mode >> 4) & 3);
    bool count = (nd->attrs.mode & TETHER__DYN_COUNT) != 0;
    const char *y = k->out, *xn = k->in[0];
    if (nd->ninputs < 2 || nd->inputs[1] < 0) { /* the first-occurrence indices, or the count */
        line(e, "long long u = 0;");
        line(e, "for (long long j = 0; j < %lldLL; ++j) {", it.m);
        e->depth++;
        line(e, "int first = 1;");
        line(e, "for (long long q = 0; q < j && first; ++q) {");
        e->depth++;
        emit_cmp(e, x, xn, it, "q", "j");
        line(e, "first = cmp != 0;");
        close_block(e);
        line(e, "if (!first) {");
        line(e, "    continue;");
        line(e, "}");
        line(e, "if (u >= %lldLL) {", b);
        line(e, "    return -4; /* TETHER_ERR_LIMIT: more unique items than the bound */");
        line(e, "}");
        if (!count) {
            line(e, "%s[u] = (int64_t)j;", y);
        }
        line(e, "u++;");
        close_block(e);
        if (count) {
            line(e, "%s[0] = (int64_t)u;", y);
            return;
        }
        if (nd->attrs.mode & 1) { /* insertion sort by item */
            line(e, "for (long long r = 1; r < u; ++r) {");
            e->depth++;
            line(e, "int64_t v = %s[r];", y);
            line(e, "long long s = r;");
            line(e, "while (s > 0) {");
            e->depth++;
            char ea[120];
            snprintf(ea, sizeof ea, "%s[s - 1]", y);
            emit_cmp(e, x, xn, it, ea, "v");
            line(e, "if (cmp <= 0) {");
            line(e, "    break;");
            line(e, "}");
            line(e, "%s[s] = %s[s - 1];", y, y);
            line(e, "s--;");
            close_block(e);
            line(e, "%s[s] = v;", y);
            close_block(e);
        }
        line(e, "if (u < %lldLL) {", b);
        line(e, "    %s[u] = -1; /* the terminator the other outputs read */", y);
        line(e, "}");
        return;
    }
    const char *ix = k->in[1];
    long long bi = (long long)T(e, nd->inputs[1])->shape[0];
    line(e, "long long u = 0;");
    line(e, "while (u < %lldLL && %s[u] >= 0) {", bi, ix);
    line(e, "    u++;");
    line(e, "}");
    line(e, "if (u > %lldLL) {", b);
    line(e, "    return -4; /* TETHER_ERR_LIMIT */");
    line(e, "}");
    line(e, "for (long long r = 0; r < u; ++r) {");
    line(e, "    if (%s[r] >= %lldLL) {", ix, it.m);
    line(e, "        return -1; /* TETHER_ERR_INVALID_ARG */");
    line(e, "    }");
    line(e, "}");
    char ea[120];
    snprintf(ea, sizeof ea, "%s[r]", ix);
    if (out == 0) {
        line(e, "for (long long p = 0; p < %lldLL; ++p) {", it.outer);
        line(e, "    for (long long r = 0; r < u; ++r) {");
        line(e, "        for (long long i = 0; i < %lldLL; ++i) {", it.inner);
        line(e, "            %s[(p * u + r) * %lldLL + i] = %s[(p * %lldLL + %s[r]) * %lldLL + i];",
             y, it.inner, xn, it.m, ix, it.inner);
        line(e, "        }");
        line(e, "    }");
        line(e, "}");
    } else if (out == 2) {
        line(e, "for (long long j = 0; j < %lldLL; ++j) {", it.m);
        e->depth++;
        line(e, "%s[j] = 0;", y);
        line(e, "for (long long r = 0; r < u; ++r) {");
        e->depth++;
        emit_cmp(e, x, xn, it, ea, "j");
        line(e, "if (cmp == 0) {");
        line(e, "    %s[j] = (int64_t)r;", y);
        line(e, "    break;");
        line(e, "}");
        close_block(e);
        close_block(e);
    } else {
        line(e, "for (long long r = 0; r < u; ++r) {");
        e->depth++;
        line(e, "%s[r] = 0;", y);
        line(e, "for (long long j = 0; j < %lldLL; ++j) {", it.m);
        e->depth++;
        emit_cmp(e, x, xn, it, ea, "j");
        line(e, "%s[r] += cmp == 0;", y);
        close_block(e);
        close_block(e);
    }
}

/* float bo[4] = xmin, ymin, xmax, ymax of box `j` (a C expression) of batch bt. */
static void emit_box(em *e, const tether_ir_tensor *bx, const char *bn, int center, const char *var,
                     const char *j, long long N) {
    char ex[200], l[4][300];
    for (int q = 0; q < 4; q++) {
        snprintf(ex, sizeof ex, "%s[(bt * %lldLL + (%s)) * 4 + %d]", bn, N, j, q);
        tether__c_load(bx->dtype, ex, l[q], sizeof l[q]);
    }
    line(e, "float %s[4];", var);
    line(e, "{");
    e->depth++;
    line(e, "float v0 = (float)%s, v1 = (float)%s, v2 = (float)%s, v3 = (float)%s;", l[0], l[1],
         l[2], l[3]);
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

static void k_nms(em *e, const tether_ir_node *nd, const kargs *k, long long b) {
    const tether_ir_attrs *a = &nd->attrs;
    const char *y = k->out;
    if (a->mode & TETHER__DYN_COUNT) { /* the rows of the nms node, up to its -1 row */
        line(e, "long long cnt = 0;");
        line(e, "while (cnt < %lldLL && %s[cnt * 3] >= 0) {", b, k->in[0]);
        line(e, "    cnt++;");
        line(e, "}");
        line(e, "%s[0] = (int64_t)cnt;", y);
        return;
    }
    const tether_ir_tensor *bx = T(e, nd->inputs[0]), *sc = T(e, nd->inputs[1]);
    long long B = sc->shape[0], C = sc->shape[1], N = sc->shape[2];
    int center = (int)(a->mode & 1);
    char thr[64], iou[64], ex[200], l[300];
    flit(thr, sizeof thr, a->beta);
    flit(iou, sizeof iou, a->alpha);
    snprintf(ex, sizeof ex, "%s[base + j]", k->in[1]);
    tether__c_load(sc->dtype, ex, l, sizeof l);
    line(e, "long long cnt = 0;");
    line(e, "for (long long bt = 0; bt < %lldLL; ++bt) {", B);
    e->depth++;
    line(e, "for (long long c = 0; c < %lldLL; ++c) {", C);
    e->depth++;
    line(e, "long long first = cnt, prev = -1;");
    line(e, "float prev_s = 0.0f;");
    line(e, "const long long base = (bt * %lldLL + c) * %lldLL;", C, N);
    line(e, "while (cnt - first < %lldLL) {", (long long)a->k);
    e->depth++;
    line(e, "long long best = -1; /* next in order: score down, then index up */");
    line(e, "float bs = 0.0f;");
    line(e, "for (long long j = 0; j < %lldLL; ++j) {", N);
    e->depth++;
    line(e, "float s = (float)%s;", l);
    if (a->mode & 4) {
        line(e, "if (!(s > %s) || s != s) {", thr);
    } else {
        line(e, "if (s != s) {");
    }
    line(e, "    continue;");
    line(e, "}");
    line(e, "if (prev >= 0 && !(s < prev_s || (s == prev_s && j > prev))) {");
    line(e, "    continue;");
    line(e, "}");
    line(e, "if (best < 0 || s > bs) {");
    line(e, "    best = j;");
    line(e, "    bs = s;");
    line(e, "}");
    close_block(e);
    line(e, "if (best < 0) {");
    line(e, "    break;");
    line(e, "}");
    line(e, "prev = best;");
    line(e, "prev_s = bs;");
    emit_box(e, bx, k->in[0], center, "cb", "best", N);
    line(e, "int keep = 1;");
    line(e, "for (long long r = first; keep && r < cnt; ++r) { /* this class' selections */");
    e->depth++;
    char sel[80];
    snprintf(sel, sizeof sel, "%s[r * 3 + 2]", y);
    emit_box(e, bx, k->in[0], center, "sb", sel, N);
    line(e, "float ix0 = cb[0] > sb[0] ? cb[0] : sb[0], ix1 = cb[2] < sb[2] ? cb[2] : sb[2];");
    line(e, "float iy0 = cb[1] > sb[1] ? cb[1] : sb[1], iy1 = cb[3] < sb[3] ? cb[3] : sb[3];");
    line(e, "if (ix1 <= ix0 || iy1 <= iy0) {");
    line(e, "    continue;");
    line(e, "}");
    line(e, "float inter = (ix1 - ix0) * (iy1 - iy0);");
    line(e,
         "float a1 = (cb[2] - cb[0]) * (cb[3] - cb[1]), a2 = (sb[2] - sb[0]) * (sb[3] - sb[1]);");
    line(e, "float uni = a1 + a2 - inter;");
    line(e, "if (inter <= 0.0f || a1 <= 0.0f || a2 <= 0.0f || uni <= 0.0f) {");
    line(e, "    continue;");
    line(e, "}");
    line(e, "keep = !(inter / uni > %s);", iou);
    close_block(e);
    line(e, "if (!keep) {");
    line(e, "    continue;");
    line(e, "}");
    line(e, "if (cnt >= %lldLL) {", b);
    line(e, "    return -4; /* TETHER_ERR_LIMIT: more boxes than the bound */");
    line(e, "}");
    line(e, "%s[cnt * 3] = (int64_t)bt;", y);
    line(e, "%s[cnt * 3 + 1] = (int64_t)c;", y);
    line(e, "%s[cnt * 3 + 2] = (int64_t)best;", y);
    line(e, "cnt++;");
    close_block(e);
    close_block(e);
    close_block(e);
    line(e, "if (cnt < %lldLL) {", b);
    line(e, "    %s[cnt * 3] = -1; /* the terminator row its extent node reads */", y);
    line(e, "}");
}

void tether__c_dynamic(em *e, const tether_ir_node *nd, const kargs *k) {
    long long b = (long long)tether__ir_dyn_bound(e->g, nd);
    if (!(nd->attrs.mode & TETHER__DYN_COUNT)) { /* past the actual data: zeros (consumers) */
        line(e, "for (long long z = 0; z < %lldLL; ++z) {",
             (long long)tether_ir_tensor_elements(T(e, nd->outputs[0])));
        line(e, "    %s[z] = 0;", k->out);
        line(e, "}");
    }
    if (nd->op == TETHER_OP_NONZERO) {
        k_nonzero(e, nd, k, b);
    } else if (nd->op == TETHER_OP_COMPRESS) {
        k_compress(e, nd, k, b);
    } else if (nd->op == TETHER_OP_UNIQUE) {
        k_unique(e, nd, k, b);
    } else {
        k_nms(e, nd, k, b);
    }
}
