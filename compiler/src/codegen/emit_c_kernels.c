/*
 * The C emitter's kernels: one kernel body per operator family (conv2d, dense, matmul,
 * elementwise binary/unary, softmax/hardmax, pools, transpose, concat, pad, norms, reduce_mean,
 * resize; conv_nd, conv_transpose and the other reductions in emit_c_layers.c) and
 * the activation epilogues, as C99 text. The function around each body, its ABI and the module
 * are emit_c.c's.
 *
 * What must stay true: every kernel has constant trip counts baked in and reads its reduction
 * innermost; a body touches only its kargs; tether__c_kernel_body names every operator (no
 * default: an operator added to the table must get a kernel here).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c_internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* ---- activation expressions --------------------------------------------------------------- */

/* Writes an expression applying the node's epilogue activation to `v` (a C expression): the
 * formula of the operator whose ACT column the activation is (ops.def). */
static void act_expr(em *e, const tether_ir_attrs *a, const char *v, char *out, size_t n) {
    if (a->act == TETHER_ACT_NONE) {
        snprintf(out, n, "%s", v);
        return;
    }
    tether_ir_attrs t;
    tether__act_attrs(a, &t);
    if (tether__formula_text(tether__act_op(a->act), TETHER__FORMULA_C, v, NULL, &t,
                             e->need_helpers, e->math_used, NULL, 0, out, n)) {
        snprintf(out, n, "0.0f;\n#error \"tether: no C formula for activation %s\"",
                 tether_act_name(a->act));
    }
}

/* The node's elementwise formula (ops.def) as C on the operands x and y (y NULL: unary). A
 * failure (a row without a formula: a bug) writes an #error, so the module never builds. */
static void formula_expr(em *e, const tether_ir_node *nd, const char *x, const char *y, char *out,
                         size_t n) {
    if (tether__formula_text(nd->op, TETHER__FORMULA_C, x, y, &nd->attrs, e->need_helpers,
                             e->math_used, NULL, 0, out, n)) {
        snprintf(out, n, "0.0f;\n#error \"tether: no C formula for operator %s\"",
                 tether_op_name(nd->op));
    }
}

/* ---- kernels --------------------------------------------------------------------------------
 * Each kernel body reads its tensors through the parameter names in[] (inputs in node order,
 * NULL for an absent optional input) and out. */

void tether__c_store(em *e, const tether_ir_attrs *a, const char *o, const char *r, const char *idx,
                     const char *val) {
    char v[300], ex[420];
    if (r) {
        snprintf(v, sizeof v, "%s + %s[%s]", val, r, idx);
    } else {
        snprintf(v, sizeof v, "%s", val);
    }
    act_expr(e, a, v, ex, sizeof ex);
    line(e, "%s[%s] = %s;", o, idx, ex);
}

/* The direct scalar conv with `mr` output channels per pass over the input (a node schedule's
 * conv_oc_block for the scalar kernels of MCU targets): each input value loaded once feeds mr
 * accumulators. Channels oc0 .. oc0+mr-1 of one group. */
static void conv_scalar_channels(em *e, const tether_ir_node *nd, const kargs *k, int mr,
                                 long long lo, long long hi) {
    const tether_ir_attrs *a = &nd->attrs;
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    long long C = x->shape[1], H = x->shape[2], W = x->shape[3];
    long long O = y->shape[1], OH = y->shape[2], OW = y->shape[3];
    long long KH = a->kernel[0], KW = a->kernel[1], G = a->groups, CG = C / G, OG = O / G;
    long long SH = a->strides[0], SW = a->strides[1], DH = a->dilations[0], DW = a->dilations[1];
    long long PT = a->pads[0], PL = a->pads[1];
    int padded = a->pads[0] || a->pads[1] || a->pads[2] || a->pads[3];
    line(e, "const float *restrict xg = %s + (n * %lld + (oc0 / %lld) * %lld) * %lld;", k->in[0], C,
         OG, CG, H * W);
    line(e, "const float *restrict wo = %s + oc0 * %lld;", k->in[1], CG * KH * KW);
    loop(e, "oh", OH);
    line(e, "const int ih0 = oh * %lld - %lld;", SH, PT);
    long long seg[3][2] = {{0, lo}, {lo, hi}, {hi, OW}};
    for (int sgi = 0; sgi < 3; sgi++) {
        if (seg[sgi][1] <= seg[sgi][0]) {
            continue;
        }
        int checked = padded && sgi != 1;
        line(e, "for (int ow = %lld; ow < %lld; ++ow) {", seg[sgi][0], seg[sgi][1]);
        e->depth++;
        line(e, "const int iw0 = ow * %lld - %lld;", SW, PL);
        for (int r = 0; r < mr; r++) {
            if (k->in[2]) {
                line(e, "float acc%d = %s[oc0 + %d];", r, k->in[2], r);
            } else {
                line(e, "float acc%d = 0.0f;", r);
            }
        }
        loop(e, "ic", CG);
        line(e, "const float *restrict xc = xg + ic * %lld;", H * W);
        loop(e, "kh", KH);
        line(e, "const int ih = ih0 + kh * %lld;", DH);
        if (padded) {
            line(e, "if (ih < 0 || ih >= %lld) {", H);
            line(e, "    continue;");
            line(e, "}");
        }
        loop(e, "kw", KW);
        line(e, "const int iw = iw0 + kw * %lld;", DW);
        if (checked) {
            line(e, "if (iw < 0 || iw >= %lld) {", W);
            line(e, "    continue;");
            line(e, "}");
        }
        line(e, "const float xv = xc[ih * %lld + iw];", W);
        line(e, "const float *restrict wk = wo + (ic * %lld + kh) * %lld + kw;", KH, KW);
        for (int r = 0; r < mr; r++) {
            line(e, "acc%d += xv * wk[%lld];", r, (long long)r * CG * KH * KW);
        }
        close_block(e);
        close_block(e);
        close_block(e);
        for (int r = 0; r < mr; r++) {
            char acc[16], idx[96];
            snprintf(acc, sizeof acc, "acc%d", r);
            snprintf(idx, sizeof idx, "(n * %lld + oc0 + %d) * %lld + oh * %lld + ow", O, r,
                     OH * OW, OW);
            tether__c_store(e, a, k->out, k->res, idx, acc);
        }
        close_block(e);
    }
    close_block(e);
}

static void k_conv2d(em *e, const tether_ir_node *nd, const kargs *k) {
    if (tether__c_conv2d_blocked(e, nd, k)) {
        return;
    }
    const tether_ir_attrs *a = &nd->attrs;
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    long long N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    long long O = y->shape[1], OH = y->shape[2], OW = y->shape[3];
    long long KH = a->kernel[0], KW = a->kernel[1], G = a->groups, CG = C / G, OG = O / G;
    long long SH = a->strides[0], SW = a->strides[1], DH = a->dilations[0], DW = a->dilations[1];
    long long PT = a->pads[0], PL = a->pads[1];
    int padded = a->pads[0] || a->pads[1] || a->pads[2] || a->pads[3];
    int pointwise = KH == 1 && KW == 1 && SH == 1 && SW == 1 && !padded;
    int mr = e->sc->conv_oc_block; /* scalar kernels: only when a node schedule asks */
    if (e->vw <= 0 && mr > 1 && !pointwise && !(SW == 1 && OW >= 8) && (G == 1 || OG % mr == 0)) {
        long long lo = 0, hi = OW;
        if (padded) { /* columns whose window lies inside the input row need no checks */
            long long num = W - 1 - (KW - 1) * DW + PL;
            lo = (PL + SW - 1) / SW;
            hi = num < 0 ? 0 : num / SW + 1;
            lo = lo > OW ? OW : lo;
            hi = hi > OW ? OW : hi;
            if (hi <= lo) {
                lo = 0;
                hi = 0;
            }
        }
        long long full = O / mr * mr;
        line(e, "/* schedule: scalar conv, %d output channels per pass */", mr);
        loop(e, "n", N);
        line(e, "for (int oc0 = 0; oc0 < %lld; oc0 += %d) {", full, mr);
        e->depth++;
        conv_scalar_channels(e, nd, k, mr, lo, hi);
        close_block(e);
        if (O > full) {
            line(e, "{");
            e->depth++;
            line(e, "const int oc0 = %lld;", full);
            conv_scalar_channels(e, nd, k, (int)(O - full), lo, hi);
            close_block(e);
        }
        close_block(e);
        return;
    }
    char bias[128];
    if (k->in[2]) {
        snprintf(bias, sizeof bias, "%s[oc]", k->in[2]);
    } else {
        snprintf(bias, sizeof bias, "0.0f");
    }
    loop(e, "n", N);
    loop(e, "oc", O);
    if (G > 1) {
        line(e, "const float *restrict xg = %s + (n * %lld + (oc / %lld) * %lld) * %lld;", k->in[0],
             C, OG, CG, H * W);
    } else {
        line(e, "const float *restrict xg = %s + n * %lld;", k->in[0], C * H * W);
    }
    line(e, "const float *restrict wo = %s + oc * %lld;", k->in[1], CG * KH * KW);
    line(e, "float *restrict yo = %s + (n * %lld + oc) * %lld;", k->out, O, OH * OW);
    if (k->res) {
        line(e, "const float *restrict ro = %s + (n * %lld + oc) * %lld;", k->res, O, OH * OW);
    }
    if (!pointwise && SW == 1 && OW >= 8) {
        /* Unit column stride and rows of some length: accumulate whole output rows, one weight
         * at a time, so the innermost loop runs over contiguous input and output columns (it
         * vectorises); row and column ranges that fall into the padding are cut out instead of
         * tested per element. */
        loop(e, "p", OH * OW);
        line(e, "yo[p] = %s;", bias);
        close_block(e);
        loop(e, "ic", CG);
        line(e, "const float *restrict xc = xg + ic * %lld;", H * W);
        loop(e, "kh", KH);
        line(e, "const int dh = kh * %lld - %lld;", DH, PT);
        line(e, "const int oh0 = dh < 0 ? (-dh + %lld) / %lld : 0;", SH - 1, SH);
        line(e, "const int oh1 = %lld - 1 - dh < 0 ? 0 : (%lld - 1 - dh) / %lld + 1;", H, H, SH);
        loop(e, "kw", KW);
        line(e, "const float wv = wo[(ic * %lld + kh) * %lld + kw];", KH, KW);
        line(e, "const int dw = kw * %lld - %lld;", DW, PL);
        line(e, "const int ow0 = dw < 0 ? -dw : 0;");
        line(e, "const int ow1 = %lld - dw < %lld ? %lld - dw : %lld;", W, OW, W, OW);
        line(e, "for (int oh = oh0; oh < (oh1 < %lld ? oh1 : %lld); ++oh) {", OH, OH);
        e->depth++;
        line(e, "const float *restrict xr = xc + (oh * %lld + dh) * %lld + dw;", SH, W);
        line(e, "float *restrict yr = yo + oh * %lld;", OW);
        line(e, "for (int ow = ow0; ow < ow1; ++ow) {");
        line(e, "    yr[ow] += wv * xr[ow];");
        line(e, "}");
        close_block(e);
        close_block(e);
        close_block(e);
        close_block(e);
        if (a->act != TETHER_ACT_NONE || k->res) {
            loop(e, "p", OH * OW);
            tether__c_store(e, a, "yo", k->res ? "ro" : NULL, "p", "yo[p]");
            close_block(e);
        }
    } else if (pointwise) {
        loop(e, "p", OH * OW);
        line(e, "yo[p] = %s;", bias);
        close_block(e);
        loop(e, "ic", CG);
        line(e, "const float wv = wo[ic];");
        line(e, "const float *restrict xr = xg + ic * %lld;", H * W);
        loop(e, "p", OH * OW);
        line(e, "yo[p] += wv * xr[p];");
        close_block(e);
        close_block(e);
        if (a->act != TETHER_ACT_NONE || k->res) {
            loop(e, "p", OH * OW);
            tether__c_store(e, a, "yo", k->res ? "ro" : NULL, "p", "yo[p]");
            close_block(e);
        }
    } else {
        /* Columns whose whole window lies inside the input need no bounds checks: split the
         * output row into [0, lo) checked, [lo, hi) unchecked, [hi, OW) checked. */
        long long lo = 0, hi = OW;
        if (padded) {
            long long num = W - 1 - (KW - 1) * DW + PL;
            lo = (PL + SW - 1) / SW;
            hi = num < 0 ? 0 : num / SW + 1;
            lo = lo > OW ? OW : lo;
            hi = hi > OW ? OW : hi;
            if (hi <= lo) {
                lo = 0;
                hi = 0;
            }
        }
        long long seg[3][2] = {{0, lo}, {lo, hi}, {hi, OW}};
        loop(e, "oh", OH);
        line(e, "const int ih0 = oh * %lld - %lld;", SH, PT);
        for (int sgi = 0; sgi < 3; sgi++) {
            if (seg[sgi][1] <= seg[sgi][0]) {
                continue;
            }
            int checked = padded && sgi != 1;
            line(e, "for (int ow = %lld; ow < %lld; ++ow) {", seg[sgi][0], seg[sgi][1]);
            e->depth++;
            line(e, "const int iw0 = ow * %lld - %lld;", SW, PL);
            line(e, "float acc = %s;", bias);
            loop(e, "ic", CG);
            line(e, "const float *restrict xc = xg + ic * %lld;", H * W);
            line(e, "const float *restrict wc = wo + ic * %lld;", KH * KW);
            loop(e, "kh", KH);
            line(e, "const int ih = ih0 + kh * %lld;", DH);
            if (padded) {
                line(e, "if (ih < 0 || ih >= %lld) {", H);
                line(e, "    continue;");
                line(e, "}");
            }
            line(e, "const float *restrict xr = xc + ih * %lld;", W);
            line(e, "const float *restrict wr = wc + kh * %lld;", KW);
            loop(e, "kw", KW);
            if (checked) {
                line(e, "const int iw = iw0 + kw * %lld;", DW);
                line(e, "if (iw >= 0 && iw < %lld) {", W);
                line(e, "    acc += xr[iw] * wr[kw];");
                line(e, "}");
            } else {
                line(e, "acc += xr[iw0 + kw * %lld] * wr[kw];", DW);
            }
            close_block(e);
            close_block(e);
            close_block(e);
            char idx[64];
            snprintf(idx, sizeof idx, "oh * %lld + ow", OW);
            tether__c_store(e, a, "yo", k->res ? "ro" : NULL, idx, "acc");
            close_block(e);
        }
        close_block(e);
    }
    close_block(e);
    close_block(e);
}

/* "alpha * v + beta * C[idx]" for dense epilogues; i and j are C expressions. */
static void dense_value(const tether_ir_node *nd, const em *e, const kargs *k, const char *v,
                        const char *i, const char *j, char *out, size_t n) {
    const tether_ir_attrs *a = &nd->attrs;
    char f[48], b[48];
    size_t o = 0;
    if (a->alpha != 1.0f) {
        flit(f, sizeof f, a->alpha);
        o += (size_t)snprintf(out + o, n - o, "%s * %s", f, v);
    } else {
        o += (size_t)snprintf(out + o, n - o, "%s", v);
    }
    if (k->in[2] && o < n) {
        const tether_ir_tensor *c = T(e, nd->inputs[2]);
        const tether_ir_tensor *y = T(e, nd->outputs[0]);
        char idx[96] = "";
        size_t q = 0;
        int64_t cm = c->ndim == 2 ? c->shape[0] : 1;
        int64_t cn = c->ndim >= 1 ? c->shape[c->ndim - 1] : 1;
        if (cm == y->shape[0] && cm > 1) {
            q += (size_t)snprintf(idx + q, sizeof idx - q, "(%s) * %lld", i, (long long)cn);
        }
        if (cn == y->shape[1] && cn > 1) {
            q += (size_t)snprintf(idx + q, sizeof idx - q, "%s(%s)", q ? " + " : "", j);
        }
        if (!q) {
            snprintf(idx, sizeof idx, "0");
        }
        if (a->beta != 1.0f) {
            flit(b, sizeof b, a->beta);
            snprintf(out + o, n - o, " + %s * %s[%s]", b, k->in[2], idx);
        } else {
            snprintf(out + o, n - o, " + %s[%s]", k->in[2], idx);
        }
    }
}

static void k_dense(em *e, const tether_ir_node *nd, const kargs *k) {
    if (tether__c_dense_blocked(e, nd, k, dense_value)) {
        return;
    }
    const tether_ir_attrs *a = &nd->attrs;
    const tether_ir_tensor *y = T(e, nd->outputs[0]), *A = T(e, nd->inputs[0]);
    long long M = y->shape[0], N = y->shape[1];
    long long K = a->trans_a ? A->shape[0] : A->shape[1];
    char aexpr[96], val[400], idx[96], jx[32];
    if (a->trans_a) {
        snprintf(aexpr, sizeof aexpr, "%s[k * %lld + i]", k->in[0], M);
    } else {
        snprintf(aexpr, sizeof aexpr, "a[k]");
    }
    if (a->trans_b) {
        /* gemv_rows rows of B share each load of A (4 by default; a node schedule's knob) */
        int R = e->sc->gemv_rows >= 1 && e->sc->gemv_rows <= 8 ? e->sc->gemv_rows : 4;
        long long N4 = N / R * R;
        loop(e, "i", M);
        if (!a->trans_a) {
            line(e, "const float *restrict a = %s + i * %lld;", k->in[0], K);
        }
        if (N4 > 0 && R > 1) {
            line(e, "for (int j = 0; j < %lld; j += %d) {", N4, R);
            e->depth++;
            line(e, "const float *restrict b0 = %s + j * %lld;", k->in[1], K);
            for (int q = 1; q < R; q++) {
                line(e, "const float *restrict b%d = b%d + %lld;", q, q - 1, K);
            }
            for (int q = 0; q < R; q++) {
                line(e, "float s%d = 0.0f;", q);
            }
            loop(e, "k", K);
            line(e, "const float av = %s;", aexpr);
            for (int q = 0; q < R; q++) {
                line(e, "s%d += av * b%d[k];", q, q);
            }
            close_block(e);
            for (int q = 0; q < R; q++) {
                char sv[8];
                snprintf(sv, sizeof sv, "s%d", q);
                snprintf(jx, sizeof jx, "j + %d", q);
                dense_value(nd, e, k, sv, "i", jx, val, sizeof val);
                snprintf(idx, sizeof idx, "i * %lld + j + %d", N, q);
                tether__c_store(e, a, k->out, k->res, idx, val);
            }
            close_block(e);
        } else {
            N4 = 0;
        }
        if (N4 < N) {
            line(e, "for (int j = %lld; j < %lld; ++j) {", N4, N);
            e->depth++;
            line(e, "const float *restrict b0 = %s + j * %lld;", k->in[1], K);
            line(e, "float s0 = 0.0f;");
            loop(e, "k", K);
            line(e, "s0 += %s * b0[k];", aexpr);
            close_block(e);
            dense_value(nd, e, k, "s0", "i", "j", val, sizeof val);
            snprintf(idx, sizeof idx, "i * %lld + j", N);
            tether__c_store(e, a, k->out, k->res, idx, val);
            close_block(e);
        }
        close_block(e);
        return;
    }
    loop(e, "i", M);
    line(e, "float *restrict y = %s + i * %lld;", k->out, N);
    if (!a->trans_a) {
        line(e, "const float *restrict a = %s + i * %lld;", k->in[0], K);
    }
    if (k->res) {
        line(e, "const float *restrict r = %s + i * %lld;", k->res, N);
    }
    loop(e, "j", N);
    line(e, "y[j] = 0.0f;");
    close_block(e);
    loop(e, "k", K);
    line(e, "const float av = %s;", aexpr);
    line(e, "const float *restrict b = %s + k * %lld;", k->in[1], N);
    loop(e, "j", N);
    line(e, "y[j] += av * b[j];");
    close_block(e);
    close_block(e);
    if (a->act != TETHER_ACT_NONE || k->res || k->in[2] || a->alpha != 1.0f) {
        loop(e, "j", N);
        dense_value(nd, e, k, "y[j]", "i", "j", val, sizeof val);
        tether__c_store(e, a, "y", k->res ? "r" : NULL, "j", val);
        close_block(e);
    }
    close_block(e);
}

/* Offsets of operand t (rank nd_t) for each flat batch index of the output batch shape. */
static void batch_offsets(const int64_t *bshape, int nb, const tether_ir_tensor *t, int64_t mat,
                          int64_t *out, int64_t count) {
    int tb = t->ndim - 2;
    for (int64_t f = 0; f < count; f++) {
        int64_t rem = f, off = 0, stride = mat;
        int64_t idx[TETHER_IR_MAX_NDIM];
        for (int d = nb - 1; d >= 0; d--) {
            idx[d] = rem % bshape[d];
            rem /= bshape[d];
        }
        for (int d = tb - 1; d >= 0; d--) {
            int64_t ext = t->shape[d];
            int64_t k = idx[nb - tb + d];
            off += (ext == 1 ? 0 : k) * stride;
            stride *= ext;
        }
        out[f] = off;
    }
}

static void k_matmul(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_attrs *a = &nd->attrs;
    tether_ir_tensor av, bv, yv; /* rank-1 operands promoted, see tether__ir_matmul_view */
    tether__ir_matmul_view(e->g, nd, &av, &bv, &yv);
    const tether_ir_tensor *y = &yv, *A = &av, *B = &bv;
    int nd_ = y->ndim, nb = nd_ - 2;
    long long M = y->shape[nd_ - 2], N = y->shape[nd_ - 1], K = A->shape[A->ndim - 1];
    int64_t batch = 1;
    for (int i = 0; i < nb; i++) {
        batch *= y->shape[i];
    }
    if (batch > 1) {
        int64_t *ao = malloc(sizeof(int64_t) * (size_t)batch);
        int64_t *bo = malloc(sizeof(int64_t) * (size_t)batch);
        if (!ao || !bo) {
            e->s.failed = 1;
            free(ao);
            free(bo);
            return;
        }
        batch_offsets(y->shape, nb, A, M * K, ao, batch);
        batch_offsets(y->shape, nb, B, K * N, bo, batch);
        for (int w = 0; w < 2; w++) {
            line(e, "static const int32_t %s[%lld] = {", w ? "boff" : "aoff", (long long)batch);
            e->depth++;
            tether__sbuf_puts(&e->s, "");
            for (int64_t f = 0; f < batch; f++) {
                if (f % 8 == 0) {
                    for (int i = 0; i < e->depth; i++) {
                        tether__sbuf_puts(&e->s, "    ");
                    }
                }
                tether__sbuf_printf(&e->s, "%lld,%s", (long long)(w ? bo : ao)[f],
                                    (f % 8 == 7 || f == batch - 1) ? "\n" : " ");
            }
            e->depth--;
            line(e, "};");
        }
        free(ao);
        free(bo);
    }
    if (tether__c_matmul_blocked(e, nd, k, batch, M, N, K)) {
        return;
    }
    loop(e, "bt", batch);
    line(e, "const float *restrict ab = %s + %s;", k->in[0], batch > 1 ? "aoff[bt]" : "0");
    line(e, "const float *restrict bb = %s + %s;", k->in[1], batch > 1 ? "boff[bt]" : "0");
    loop(e, "i", M);
    line(e, "float *restrict y = %s + (bt * %lld + i) * %lld;", k->out, M, N);
    if (k->res) {
        line(e, "const float *restrict r = %s + (bt * %lld + i) * %lld;", k->res, M, N);
    }
    loop(e, "j", N);
    line(e, "y[j] = 0.0f;");
    close_block(e);
    loop(e, "k", K);
    line(e, "const float av = ab[i * %lld + k];", K);
    line(e, "const float *restrict b = bb + k * %lld;", N);
    loop(e, "j", N);
    line(e, "y[j] += av * b[j];");
    close_block(e);
    close_block(e);
    if (a->act != TETHER_ACT_NONE || k->res) {
        loop(e, "j", N);
        tether__c_store(e, a, "y", k->res ? "r" : NULL, "j", "y[j]");
        close_block(e);
    }
    close_block(e);
    close_block(e);
}

/* Index expression of operand t inside nested loops i0..i{nd-1} over an output of rank nd. */
void tether__c_bcast_index(const tether_ir_tensor *t, int nd, const int64_t *oshape, char *out,
                           size_t n) {
    int64_t st = 1;
    char tmp[256] = "";
    size_t o = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int od = nd - t->ndim + d;
        if (t->shape[d] != 1 && oshape[od] != 1) {
            if (st == 1) {
                o += (size_t)snprintf(tmp + o, sizeof tmp - o, "%si%d", o ? " + " : "", od);
            } else {
                o += (size_t)snprintf(tmp + o, sizeof tmp - o, "%si%d * %lld", o ? " + " : "", od,
                                      (long long)st);
            }
        }
        st *= t->shape[d];
    }
    snprintf(out, n, "%s", o ? tmp : "0");
}

static int same_shape(const tether_ir_tensor *a, const tether_ir_tensor *b) {
    return a->ndim == b->ndim && memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

static int all_f32(const em *e, const tether_ir_node *nd) {
    int ok = tether_dtype_equal(T(e, nd->outputs[0])->dtype, TETHER_FLOAT32);
    for (int i = 0; i < nd->ninputs; i++) {
        ok &= nd->inputs[i] < 0 || tether_dtype_equal(T(e, nd->inputs[i])->dtype, TETHER_FLOAT32);
    }
    return ok;
}

static void k_binary(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *z = T(e, nd->inputs[1]);
    const tether_ir_tensor *y = T(e, nd->outputs[0]);
    if (!all_f32(e, nd)) {
        tether__c_ew_typed(e, nd, k);
        return;
    }
    size_t total = tether_ir_tensor_elements(y);
    char ex[256];
    formula_expr(e, nd, "va", "vb", ex, sizeof ex);
    int xs = same_shape(x, y), zs = same_shape(z, y);
    int x1 = tether_ir_tensor_elements(x) == 1, z1 = tether_ir_tensor_elements(z) == 1;
    if ((xs || x1) && (zs || z1)) {
        if (x1 && !xs) {
            line(e, "const float va = %s[0];", k->in[0]);
        }
        if (z1 && !zs) {
            line(e, "const float vb = %s[0];", k->in[1]);
        }
        loop(e, "i", (int64_t)total);
        if (xs) {
            line(e, "const float va = %s[i];", k->in[0]);
        }
        if (zs) {
            line(e, "const float vb = %s[i];", k->in[1]);
        }
        line(e, "%s[i] = %s;", k->out, ex);
        close_block(e);
        return;
    }
    char ia[256], ib[256];
    tether__c_bcast_index(x, y->ndim, y->shape, ia, sizeof ia);
    tether__c_bcast_index(z, y->ndim, y->shape, ib, sizeof ib);
    line(e, "float *restrict yp = %s;", k->out);
    for (int d = 0; d < y->ndim; d++) {
        char v[8];
        snprintf(v, sizeof v, "i%d", d);
        loop(e, v, y->shape[d]);
    }
    line(e, "const float va = %s[%s];", k->in[0], ia);
    line(e, "const float vb = %s[%s];", k->in[1], ib);
    line(e, "*yp++ = %s;", ex);
    for (int d = 0; d < y->ndim; d++) {
        close_block(e);
    }
}

static void k_unary(em *e, const tether_ir_node *nd, const kargs *k) {
    if (!all_f32(e, nd)) {
        tether__c_ew_typed(e, nd, k);
        return;
    }
    char ex[256];
    formula_expr(e, nd, "v", NULL, ex, sizeof ex);
    loop(e, "i", (int64_t)tether_ir_tensor_elements(T(e, nd->outputs[0])));
    line(e, "const float v = %s[i];", k->in[0]);
    line(e, "%s[i] = %s;", k->out, ex);
    close_block(e);
}

static void k_softmax(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *y = T(e, nd->outputs[0]);
    int ax = tether__ir_norm_axis(nd->attrs.axis, y->ndim);
    long long outer = 1, inner = 1, len = y->shape[ax];
    for (int i = 0; i < ax; i++) {
        outer *= y->shape[i];
    }
    for (int i = ax + 1; i < y->ndim; i++) {
        inner *= y->shape[i];
    }
    e->math_used[M_EXPF] = 1;
    loop(e, "o", outer);
    loop(e, "q", inner);
    line(e, "const float *restrict x = %s + o * %lld + q;", k->in[0], len * inner);
    line(e, "float *restrict y = %s + o * %lld + q;", k->out, len * inner);
    line(e, "float m = x[0];");
    line(e, "for (int c = 1; c < %lld; ++c) {", len);
    line(e, "    m = x[c * %lld] > m ? x[c * %lld] : m;", inner, inner);
    line(e, "}");
    line(e, "float s = 0.0f;");
    loop(e, "c", len);
    if (nd->op == TETHER_OP_SOFTMAX) {
        line(e, "const float ev = expf(x[c * %lld] - m);", inner);
        line(e, "y[c * %lld] = ev;", inner);
        line(e, "s += ev;");
    } else {
        line(e, "s += expf(x[c * %lld] - m);", inner);
    }
    close_block(e);
    if (nd->op == TETHER_OP_SOFTMAX) {
        line(e, "const float inv = 1.0f / s;");
        loop(e, "c", len);
        line(e, "y[c * %lld] *= inv;", inner);
        close_block(e);
    } else {
        e->math_used[M_LOGF] = 1;
        /* (x - m) - log(s), not x - (m + log(s)): large x would lose log(s)'s low bits */
        line(e, "const float ls = logf(s);");
        loop(e, "c", len);
        line(e, "y[c * %lld] = (x[c * %lld] - m) - ls;", inner, inner);
        close_block(e);
    }
    close_block(e);
    close_block(e);
}

static void k_pool(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_attrs *a = &nd->attrs;
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    long long NC = x->shape[0] * x->shape[1], H = x->shape[2], W = x->shape[3];
    long long OH = y->shape[2], OW = y->shape[3];
    int is_max = nd->op == TETHER_OP_MAX_POOL;
    loop(e, "nc", NC);
    line(e, "const float *restrict xc = %s + nc * %lld;", k->in[0], H * W);
    line(e, "float *restrict yc = %s + nc * %lld;", k->out, OH * OW);
    loop(e, "oh", OH);
    line(e, "const int ih0 = oh * %lld - %lld;", (long long)a->strides[0], (long long)a->pads[0]);
    loop(e, "ow", OW);
    line(e, "const int iw0 = ow * %lld - %lld;", (long long)a->strides[1], (long long)a->pads[1]);
    line(e, is_max ? "float acc = -HUGE_VALF;" : "float acc = 0.0f;");
    if (!is_max) {
        line(e, "int cnt = 0;");
    }
    loop(e, "kh", a->kernel[0]);
    line(e, "const int ih = ih0 + kh * %lld;", (long long)a->dilations[0]);
    loop(e, "kw", a->kernel[1]);
    line(e, "const int iw = iw0 + kw * %lld;", (long long)a->dilations[1]);
    if (!is_max && a->count_include_pad) {
        line(e, "cnt += ih < %lld && iw < %lld;", H + (long long)a->pads[2],
             W + (long long)a->pads[3]);
    }
    line(e, "if (ih >= 0 && ih < %lld && iw >= 0 && iw < %lld) {", H, W);
    e->depth++;
    line(e, "const float v = xc[ih * %lld + iw];", W);
    if (is_max) {
        line(e, "acc = v > acc ? v : acc;");
    } else {
        line(e, "acc += v;");
        if (!a->count_include_pad) {
            line(e, "cnt++;");
        }
    }
    close_block(e);
    close_block(e);
    close_block(e);
    if (is_max) {
        line(e, "yc[oh * %lld + ow] = acc;", OW);
    } else {
        line(e, "yc[oh * %lld + ow] = acc / (float)cnt;", OW);
    }
    close_block(e);
    close_block(e);
    close_block(e);
}

static void k_global_pool(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    long long plane = 1;
    for (int i = 2; i < x->ndim; i++) {
        plane *= x->shape[i];
    }
    int is_max = nd->op == TETHER_OP_GLOBAL_MAX_POOL;
    loop(e, "nc", x->shape[0] * x->shape[1]);
    line(e, "const float *restrict xc = %s + nc * %lld;", k->in[0], plane);
    line(e, is_max ? "float acc = xc[0];" : "float acc = 0.0f;");
    line(e, "for (int i = %d; i < %lld; ++i) {", is_max ? 1 : 0, plane);
    line(e, is_max ? "    acc = xc[i] > acc ? xc[i] : acc;" : "    acc += xc[i];");
    line(e, "}");
    if (is_max) {
        line(e, "%s[nc] = acc;", k->out);
    } else {
        char f[48];
        flit(f, sizeof f, (float)(1.0 / (double)plane));
        line(e, "%s[nc] = acc * %s;", k->out, f);
    }
    close_block(e);
}

static void k_transpose(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    int64_t st[TETHER_IR_MAX_NDIM], s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= x->shape[d];
    }
    char idx[256] = "";
    size_t o = 0;
    for (int d = 0; d < y->ndim; d++) {
        o += (size_t)snprintf(idx + o, sizeof idx - o, "%si%d * %lld", d ? " + " : "", d,
                              (long long)st[nd->attrs.ints[d]]);
    }
    line(e, "%s *restrict yp = %s;", ctype(e, nd->outputs[0]), k->out);
    for (int d = 0; d < y->ndim; d++) {
        char v[8];
        snprintf(v, sizeof v, "i%d", d);
        loop(e, v, y->shape[d]);
    }
    line(e, "*yp++ = %s[%s];", k->in[0], y->ndim ? idx : "0");
    for (int d = 0; d < y->ndim; d++) {
        close_block(e);
    }
}

static void k_concat(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *y = T(e, nd->outputs[0]);
    int ax = (int)nd->attrs.axis;
    long long outer = 1, inner = 1;
    for (int i = 0; i < ax; i++) {
        outer *= y->shape[i];
    }
    for (int i = ax + 1; i < y->ndim; i++) {
        inner *= y->shape[i];
    }
    long long row = y->shape[ax] * inner, off = 0;
    for (int i = 0; i < nd->ninputs; i++) {
        long long chunk = T(e, nd->inputs[i])->shape[ax] * inner;
        if (outer == 1) {
            line(e, "memcpy(%s + %lld, %s, %lld * sizeof(*%s));", k->out, off, k->in[i], chunk,
                 k->out);
        } else {
            loop(e, "o", outer);
            line(e, "memcpy(%s + o * %lld + %lld, %s + o * %lld, %lld * sizeof(*%s));", k->out, row,
                 off, k->in[i], chunk, chunk, k->out);
            close_block(e);
        }
        off += chunk;
    }
}

static void k_pad(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    const tether_ir_attrs *a = &nd->attrs;
    char f[96];
    if (tether_dtype_equal(y->dtype, TETHER_FLOAT32)) {
        flit(f, sizeof f, a->value);
    } else {
        tether__c_const_value(y->dtype, a->value, f, sizeof f);
    }
    loop(e, "i", (int64_t)tether_ir_tensor_elements(y));
    line(e, "%s[i] = %s;", k->out, f);
    close_block(e);
    int nd_ = x->ndim;
    if (nd_ == 0) {
        line(e, "%s[0] = %s[0];", k->out, k->in[0]);
        return;
    }
    int64_t ist[TETHER_IR_MAX_NDIM], ost[TETHER_IR_MAX_NDIM], si = 1, so = 1;
    for (int d = nd_ - 1; d >= 0; d--) {
        ist[d] = si;
        ost[d] = so;
        si *= x->shape[d];
        so *= y->shape[d];
    }
    char src[256] = "", dst[256] = "";
    size_t os = 0, od = 0;
    long long base = 0;
    for (int d = 0; d < nd_; d++) {
        base += (long long)(a->ints[d] * ost[d]);
    }
    for (int d = 0; d < nd_ - 1; d++) {
        char v[8];
        snprintf(v, sizeof v, "i%d", d);
        loop(e, v, x->shape[d]);
        os += (size_t)snprintf(src + os, sizeof src - os, "i%d * %lld + ", d, (long long)ist[d]);
        od += (size_t)snprintf(dst + od, sizeof dst - od, "i%d * %lld + ", d, (long long)ost[d]);
    }
    line(e, "memcpy(%s + %s%lld, %s + %s0, %lld * sizeof(*%s));", k->out, dst, base, k->in[0], src,
         (long long)x->shape[nd_ - 1], k->out);
    for (int d = 0; d < nd_ - 1; d++) {
        close_block(e);
    }
}

static void k_resize(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    long long H = x->shape[2], W = x->shape[3], OH = y->shape[2], OW = y->shape[3];
    loop(e, "nc", x->shape[0] * x->shape[1]);
    loop(e, "oh", OH);
    line(e, "const float *restrict xr = %s + (nc * %lld + oh / %lld) * %lld;", k->in[0], H,
         (long long)nd->attrs.scales[0], W);
    line(e, "float *restrict yr = %s + (nc * %lld + oh) * %lld;", k->out, OH, OW);
    loop(e, "ow", OW);
    line(e, "yr[ow] = xr[ow / %lld];", (long long)nd->attrs.scales[1]);
    close_block(e);
    close_block(e);
    close_block(e);
}

void tether__c_kernel_body(em *e, const tether_ir_node *nd, const kargs *k) {
    if (tether__c_blocked_body(e, nd, k)) {
        return;
    }
    switch (nd->op) {
    case TETHER_OP_CONV2D:
        k_conv2d(e, nd, k);
        return;
    case TETHER_OP_DENSE:
        k_dense(e, nd, k);
        return;
    case TETHER_OP_MATMUL:
        k_matmul(e, nd, k);
        return;
        TETHER__CASES_BINARY
    case TETHER_OP_PRELU:
        k_binary(e, nd, k);
        return;
    case TETHER_OP_SOFTMAX:
    case TETHER_OP_LOG_SOFTMAX:
        k_softmax(e, nd, k);
        return;
    case TETHER_OP_HARDMAX:
        tether__c_hardmax(e, nd, k);
        return;
    case TETHER_OP_MAX_POOL:
    case TETHER_OP_AVG_POOL:
        k_pool(e, nd, k);
        return;
    case TETHER_OP_GLOBAL_AVG_POOL:
    case TETHER_OP_GLOBAL_MAX_POOL:
        k_global_pool(e, nd, k);
        return;
    case TETHER_OP_TRANSPOSE:
        if (tether__ir_live_wired(nd)) { /* by live extents: emit_c_dynamic_live.c */
            tether__c_live(e, nd, k);
            return;
        }
        k_transpose(e, nd, k);
        return;
    case TETHER_OP_CONCAT:
        if (tether__ir_live_wired(nd)) {
            tether__c_live(e, nd, k);
            return;
        }
        k_concat(e, nd, k);
        return;
    case TETHER_OP_PAD:
        k_pad(e, nd, k);
        return;
    case TETHER_OP_BATCH_NORM:
        tether__c_batch_norm(e, nd, k);
        return;
    case TETHER_OP_LAYER_NORM:
        tether__c_layer_norm(e, nd, k);
        return;
    case TETHER_OP_REDUCE_MEAN:
        if (!tether_dtype_equal(T(e, nd->inputs[0])->dtype, TETHER_FLOAT32) || nd->ninputs > 1) {
            tether__c_reduce_typed(e, nd, k); /* and a live extent of dimension 0 */
            return;
        }
        tether__c_reduce_mean(e, nd, k);
        return;
    case TETHER_OP_REDUCE_SUM:
    case TETHER_OP_REDUCE_MAX:
    case TETHER_OP_REDUCE_MIN:
    case TETHER_OP_REDUCE_PROD:
    case TETHER_OP_REDUCE_L1:
    case TETHER_OP_REDUCE_L2:
    case TETHER_OP_REDUCE_LOG_SUM:
    case TETHER_OP_REDUCE_LOG_SUM_EXP:
    case TETHER_OP_REDUCE_SUM_SQUARE:
        if (!tether_dtype_equal(T(e, nd->inputs[0])->dtype, TETHER_FLOAT32) || nd->ninputs > 1) {
            tether__c_reduce_typed(e, nd, k); /* and a live extent of dimension 0 */
            return;
        }
        tether__c_reduce(e, nd, k);
        return;
    case TETHER_OP_CONV_ND:
    case TETHER_OP_CONV_TRANSPOSE:
        tether__c_conv_nd(e, nd, k);
        return;
    case TETHER_OP_RESIZE_NEAREST:
        k_resize(e, nd, k);
        return;
    case TETHER_OP_QUANTIZE:
    case TETHER_OP_DEQUANTIZE:
    case TETHER_OP_QCONV:
    case TETHER_OP_QMATMUL:
    case TETHER_OP_QADD: /* issue 28 integer elementwise/pooling */
    case TETHER_OP_QMUL:
    case TETHER_OP_QLUT:
    case TETHER_OP_QMAX_POOL:
    case TETHER_OP_QAVG_POOL:
        tether__c_quant_body(e, nd, k); /* emit_c_quant.c */
        return;
    case TETHER_OP_CUSTOM: /* a call of the user's C function (emit_c_custom.c) */
        tether__c_custom_body(e, nd, k);
        return;
    case TETHER_OP_RESHAPE:
    case TETHER_OP_FLATTEN:
    case TETHER_OP_SQUEEZE:
    case TETHER_OP_UNSQUEEZE:
        line(e, "memcpy(%s, %s, %zu);", k->out, k->in[0],
             tether_ir_tensor_bytes(T(e, nd->outputs[0])));
        return;
    case TETHER_OP_WHERE:
        tether__c_where(e, nd, k);
        return;
        TETHER__CASES_DATA
        tether__c_data(e, nd, k);
        return;
    case TETHER_OP_NLL_LOSS:
    case TETHER_OP_NLL_LOSS_SUM:
    case TETHER_OP_NLL_LOSS_MEAN:
        tether__c_nll_loss(e, nd, k);
        return;
        TETHER__CASES_UNARY
        k_unary(e, nd, k);
        return;
    }
}
