/*
 * Schedules of the C emitter: register-blocked kernels written with GCC vector extensions
 * (docs/codegen.md, "Schedules"). The generated code declares a vector type of the schedule's
 * width (tether_schedule.vector_width floats) and an unaligned, may_alias twin for loads and
 * stores, so the target's compiler maps it to SSE/AVX/AVX-512 or NEON registers; no intrinsics,
 * no per-ISA files.
 *
 * conv2d (dense, grouped and depthwise; any kernel, stride, dilation and padding): a block of
 * conv_oc_block output channels x conv_col_vectors vectors of output columns (depthwise: one
 * channel x dw_col_vectors vectors) is accumulated in registers over every input channel and
 * kernel tap, then stored once with its epilogue (bias, activation, residual). Only the columns
 * whose whole window lies inside the input row are vectorised; the border columns and the
 * ragged end of a row take a scalar path with bounds checks, and a channel count that is not a
 * multiple of the block gets a narrower tail block. A 1x1 stride-1 unpadded convolution is a
 * matrix product over the flattened plane.
 *
 * What must stay true: the result equals the scalar kernels' up to float rounding (tests compare
 * both with the reference interpreter); no load or store leaves the tensors' extents; every knob
 * keeps a default and a range (tether_codegen_c checks them).
 */
#include <stdio.h>
#include <string.h>

#include "emit_c_internal.h"

/* Declares tg_v (vw floats) and tg_vu (the same, 4-byte aligned, may alias) in the current
 * block. */
static void vector_types(em *e) {
    line(e, "typedef float tg_v __attribute__((vector_size(%d)));", e->vw * 4);
    line(e, "typedef float tg_vu __attribute__((vector_size(%d), aligned(4), may_alias));",
         e->vw * 4);
}

/* Narrower vectors for the ragged end of a row: from `pos` (< end), one block of each width
 * vw/2, vw/4, ... (>= 4) that still fits before `end`, each in a scope that redeclares tg_v and
 * tg_vu at its width (e->vw is that width while `emit` runs). `var` is the loop variable the
 * block reads (ow, p, j0). Returns the column where the scalar remainder starts. */
static long long narrow_tails(em *e, long long pos, long long end, const char *var,
                              void (*emit)(em *, const void *), const void *ctx) {
    const int vw = e->vw;
    for (int w = vw / 2; w >= 4; w /= 2) {
        if (end - pos < w) {
            continue;
        }
        line(e, "{");
        e->depth++;
        line(e, "const int %s = %lld;", var, pos);
        e->vw = w;
        vector_types(e);
        emit(e, ctx);
        e->vw = vw;
        close_block(e);
        pos += w;
    }
    return pos;
}

/* After a block is stored at yq (n floats): yq[q] = act(yq[q] (+ rq[q])). */
static void block_epilogue(em *e, const tether_ir_node *nd, const kargs *k, long long n) {
    if (nd->attrs.act == TETHER_ACT_NONE && !k->res) {
        return;
    }
    loop(e, "q", n);
    tether__c_store(e, &nd->attrs, "yq", k->res ? "rq" : NULL, "q", "yq[q]");
    close_block(e);
}

/* The accumulators a<r>_<j> of an mr x nr block, starting at the bias (or 0). */
static void acc_init(em *e, const char *bias, int mr, int nr) {
    for (int r = 0; r < mr; r++) {
        for (int j = 0; j < nr; j++) {
            if (bias) {
                line(e, "tg_v a%d_%d = (tg_v){0} + %s[oc0 + %d];", r, j, bias, r);
            } else {
                line(e, "tg_v a%d_%d = (tg_v){0};", r, j);
            }
        }
    }
}

/* a<r>_<j> += w<r> * x<j> for every j < nr. */
static void acc_update(em *e, int r, int nr) {
    for (int j = 0; j < nr; j++) {
        line(e, "a%d_%d += w%d * x%d;", r, j, r, j);
    }
}

/* Stores row r's nr vectors at yq and applies the epilogue. */
static void acc_store(em *e, const tether_ir_node *nd, const kargs *k, int r, int nr) {
    for (int j = 0; j < nr; j++) {
        line(e, "*(tg_vu *)(yq + %d) = a%d_%d;", j * e->vw, r, j);
    }
    block_epilogue(e, nd, k, (long long)nr * e->vw);
}

/* Pointers to channel r's output (and residual) row at column ow. */
static void out_row(em *e, const kargs *k, const conv_geo *c, const char *r) {
    line(e, "float *restrict yq = yb + %s * %lld + oh * %lld + ow;", r, c->OH * c->OW, c->OW);
    if (k->res) {
        line(e, "const float *restrict rq = rb + %s * %lld + oh * %lld + ow;", r, c->OH * c->OW,
             c->OW);
    }
}

/* One register block: mr channels x nr vectors of columns from column `ow` (all inside). */
static void conv_vblock(em *e, const tether_ir_node *nd, const kargs *k, const conv_geo *c, int mr,
                        int nr) {
    const int vw = e->vw;
    long long wstride = c->CG * c->KH * c->KW;
    acc_init(e, c->bias, mr, nr);
    loop(e, "ic", c->CG);
    line(e, "const float *restrict xc = xg + ic * %lld;", c->H * c->W);
    line(e, "const float *restrict wc = wb + ic * %lld;", c->KH * c->KW);
    loop(e, "kh", c->KH);
    line(e, "const int ih = ih0 + kh * %lld;", c->DH);
    if (c->rows_checked) {
        line(e, "if (ih < 0 || ih >= %lld) {", c->H);
        line(e, "    continue;");
        line(e, "}");
    }
    line(e, "const float *restrict xr = xc + ih * %lld + ow * %lld - %lld;", c->W, c->SW, c->PL);
    line(e, "const float *restrict wr = wc + kh * %lld;", c->KW);
    loop(e, "kw", c->KW);
    if (c->SW == 2) { /* shuffle masks */
        line(e, "typedef int tg_vi __attribute__((vector_size(%d)));", vw * 4);
    }
    for (int j = 0; j < nr; j++) {
        if (c->SW == 1) {
            line(e, "const tg_v x%d = *(const tg_vu *)(xr + kw * %lld + %d);", j, c->DW, j * vw);
        } else if (c->SW == 2) {
            /* stride 2: two loads that end exactly at the last element needed, and a shuffle of
             * the even lanes (lane q is element 2q: in the first vector while 2q < vw, else at
             * 2q + 1 of the pair, the second load starting at vw - 1) */
            char mask[512];
            size_t o = 0;
            for (int q = 0; q < vw; q++) {
                o += (size_t)snprintf(mask + o, sizeof mask - o, "%s%d", q ? ", " : "",
                                      2 * q < vw ? 2 * q : 2 * q + 1);
            }
            line(e, "const float *restrict xs%d = xr + kw * %lld + %d;", j, c->DW, 2 * j * vw);
            line(e,
                 "const tg_v x%d = __builtin_shuffle(*(const tg_vu *)xs%d, "
                 "*(const tg_vu *)(xs%d + %d), (tg_vi){%s});",
                 j, j, j, vw - 1, mask);
        } else { /* a strided row: gathered element by element */
            char g[2048];
            size_t o = 0;
            for (int q = 0; q < vw && o + 64 < sizeof g; q++) {
                o += (size_t)snprintf(g + o, sizeof g - o, "%sxr[kw * %lld + %lld]", q ? ", " : "",
                                      c->DW, (long long)(j * vw + q) * c->SW);
            }
            line(e, "const tg_v x%d = {%s};", j, g);
        }
    }
    for (int r = 0; r < mr; r++) {
        line(e, "const float w%d = wr[%lld + kw];", r, (long long)r * wstride);
        acc_update(e, r, nr);
    }
    close_block(e);
    close_block(e);
    close_block(e);
    for (int r = 0; r < mr; r++) {
        line(e, "{");
        e->depth++;
        char rs[16];
        snprintf(rs, sizeof rs, "%d", r);
        out_row(e, k, c, rs);
        acc_store(e, nd, k, r, nr);
        close_block(e);
    }
}

/* The scalar path for column `ow` (bounds checked), mr channels. */
static void conv_scol(em *e, const tether_ir_node *nd, const kargs *k, const conv_geo *c, int mr) {
    line(e, "const int iw0 = ow * %lld - %lld;", c->SW, c->PL);
    loop(e, "r", mr);
    if (c->bias) {
        line(e, "float acc = %s[oc0 + r];", c->bias);
    } else {
        line(e, "float acc = 0.0f;");
    }
    line(e, "const float *restrict wo = wb + r * %lld;", c->CG * c->KH * c->KW);
    loop(e, "ic", c->CG);
    line(e, "const float *restrict xc = xg + ic * %lld;", c->H * c->W);
    loop(e, "kh", c->KH);
    line(e, "const int ih = ih0 + kh * %lld;", c->DH);
    line(e, "if (ih < 0 || ih >= %lld) {", c->H);
    line(e, "    continue;");
    line(e, "}");
    loop(e, "kw", c->KW);
    line(e, "const int iw = iw0 + kw * %lld;", c->DW);
    line(e, "if (iw >= 0 && iw < %lld) {", c->W);
    line(e, "    acc += xc[ih * %lld + iw] * wo[(ic * %lld + kh) * %lld + kw];", c->W, c->KH,
         c->KW);
    line(e, "}");
    close_block(e);
    close_block(e);
    close_block(e);
    out_row(e, k, c, "r");
    tether__c_store(e, &nd->attrs, "yq", k->res ? "rq" : NULL, "0", "acc");
    close_block(e);
}

/* A register block over the flattened output plane (outputs p .. p + nr*vw - 1, possibly
 * spanning rows): each lane's input offset is computed once per block (off[]), then every tap
 * gathers through it. For planes narrower than a vector (KWS-like 25x5 maps); the input has no
 * padding (the padding pass made a padded copy, or there was none). */
static void conv_pblock(em *e, const tether_ir_node *nd, const kargs *k, const conv_geo *c, int mr,
                        int nr) {
    const int vw = e->vw;
    long long wstride = c->CG * c->KH * c->KW;
    line(e, "int off[%d];", nr * vw);
    loop(e, "q", (long long)nr * vw);
    line(e, "off[q] = (p + q) / %lld * %lld + (p + q) %% %lld * %lld;", c->OW, c->SH * c->W, c->OW,
         c->SW);
    close_block(e);
    acc_init(e, c->bias, mr, nr);
    loop(e, "ic", c->CG);
    line(e, "const float *restrict xc = xg + ic * %lld;", c->H * c->W);
    line(e, "const float *restrict wc = wb + ic * %lld;", c->KH * c->KW);
    loop(e, "kh", c->KH);
    loop(e, "kw", c->KW);
    line(e, "const float *restrict xr = xc + kh * %lld + kw * %lld;", c->DH * c->W, c->DW);
    for (int j = 0; j < nr; j++) {
        char g[2048];
        size_t o = 0;
        for (int q = 0; q < vw && o + 40 < sizeof g; q++) {
            o += (size_t)snprintf(g + o, sizeof g - o, "%sxr[off[%d]]", q ? ", " : "", j * vw + q);
        }
        line(e, "const tg_v x%d = {%s};", j, g);
    }
    for (int r = 0; r < mr; r++) {
        line(e, "const float w%d = wc[%lld + kh * %lld + kw];", r, (long long)r * wstride, c->KW);
        acc_update(e, r, nr);
    }
    close_block(e);
    close_block(e);
    close_block(e);
    for (int r = 0; r < mr; r++) {
        line(e, "{");
        e->depth++;
        line(e, "float *restrict yq = yb + %lld + p;", (long long)r * c->OH * c->OW);
        if (k->res) {
            line(e, "const float *restrict rq = rb + %lld + p;", (long long)r * c->OH * c->OW);
        }
        acc_store(e, nd, k, r, nr);
        close_block(e);
    }
}

/* A one-vector block (conv_vblock, conv_pblock) through narrow_tails. */
typedef struct conv_ctx {
    const tether_ir_node *nd;
    const kargs *k;
    const conv_geo *c;
    int mr;
} conv_ctx;

static void conv_vblock1(em *e, const void *p) {
    const conv_ctx *x = p;
    conv_vblock(e, x->nd, x->k, x->c, x->mr, 1);
}

static void conv_pblock1(em *e, const void *p) {
    const conv_ctx *x = p;
    conv_pblock(e, x->nd, x->k, x->c, x->mr, 1);
}

/* conv_channels for a plane narrower than a vector: blocks over the flattened plane. */
static void conv_plane_channels(em *e, const tether_ir_node *nd, const kargs *k, const conv_geo *c,
                                int mr, int nr) {
    const int vw = e->vw;
    long long P = c->OH * c->OW, bw = (long long)nr * vw;
    long long vend = P / bw * bw, v1end = vend + (P - vend) / vw * vw;
    line(e, "const float *restrict xg = %s + (n * %lld + (oc0 / %lld) * %lld) * %lld;", k->in[0],
         c->C, c->OG, c->CG, c->H * c->W);
    line(e, "const float *restrict wb = %s + oc0 * %lld;", k->in[1], c->CG * c->KH * c->KW);
    line(e, "float *restrict yb = %s + (n * %lld + oc0) * %lld;", k->out, c->O, P);
    if (k->res) {
        line(e, "const float *restrict rb = %s + (n * %lld + oc0) * %lld;", k->res, c->O, P);
    }
    if (vend > 0) {
        line(e, "for (int p = 0; p < %lld; p += %lld) {", vend, bw);
        e->depth++;
        conv_pblock(e, nd, k, c, mr, nr);
        close_block(e);
    }
    if (v1end > vend) {
        line(e, "for (int p = %lld; p < %lld; p += %d) {", vend, v1end, vw);
        e->depth++;
        conv_pblock(e, nd, k, c, mr, 1);
        close_block(e);
    }
    conv_ctx cx = {nd, k, c, mr};
    v1end = narrow_tails(e, v1end, P, "p", conv_pblock1, &cx);
    if (P > v1end) {
        line(e, "for (int p = %lld; p < %lld; ++p) {", v1end, P);
        e->depth++;
        line(e, "const int oh = p / %lld, ow = p %% %lld;", c->OW, c->OW);
        line(e, "const int ih0 = oh * %lld - %lld;", c->SH, c->PT);
        conv_scol(e, nd, k, c, mr);
        close_block(e);
    }
}

/* Everything for output channels oc0 .. oc0+mr-1 of image n. */
static void conv_channels(em *e, const tether_ir_node *nd, const kargs *k, const conv_geo *c,
                          int mr, int nr) {
    const int vw = e->vw;
    long long bw = (long long)nr * vw;
    long long vend = c->lo + (c->hi - c->lo) / bw * bw;
    long long v1end = vend + (c->hi - vend) / vw * vw;
    line(e, "const float *restrict xg = %s + (n * %lld + (oc0 / %lld) * %lld) * %lld;", k->in[0],
         c->C, c->OG, c->CG, c->H * c->W);
    line(e, "const float *restrict wb = %s + oc0 * %lld;", k->in[1], c->CG * c->KH * c->KW);
    line(e, "float *restrict yb = %s + (n * %lld + oc0) * %lld;", k->out, c->O, c->OH * c->OW);
    if (k->res) {
        line(e, "const float *restrict rb = %s + (n * %lld + oc0) * %lld;", k->res, c->O,
             c->OH * c->OW);
    }
    loop(e, "oh", c->OH);
    line(e, "const int ih0 = oh * %lld - %lld;", c->SH, c->PT);
    if (vend > c->lo) {
        line(e, "for (int ow = %lld; ow < %lld; ow += %lld) {", c->lo, vend, bw);
        e->depth++;
        conv_vblock(e, nd, k, c, mr, nr);
        close_block(e);
    }
    if (v1end > vend) {
        line(e, "for (int ow = %lld; ow < %lld; ow += %d) {", vend, v1end, vw);
        e->depth++;
        conv_vblock(e, nd, k, c, mr, 1);
        close_block(e);
    }
    conv_ctx cx = {nd, k, c, mr};
    long long tend = narrow_tails(e, v1end, c->hi, "ow", conv_vblock1, &cx);
    long long seg[2][2] = {{0, c->lo}, {tend, c->OW}};
    for (int s = 0; s < 2; s++) {
        if (seg[s][1] > seg[s][0]) {
            line(e, "for (int ow = %lld; ow < %lld; ++ow) {", seg[s][0], seg[s][1]);
            e->depth++;
            conv_scol(e, nd, k, c, mr);
            close_block(e);
        }
    }
    close_block(e);
}

void tether__c_conv_geo(const em *e, const tether_ir_node *nd, const kargs *k, conv_geo *g) {
    const tether_ir_attrs *a = &nd->attrs;
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    memset(g, 0, sizeof *g);
    g->N = x->shape[0];
    g->C = x->shape[1];
    g->H = x->shape[2];
    g->W = x->shape[3];
    g->O = y->shape[1];
    g->OH = y->shape[2];
    g->OW = y->shape[3];
    g->KH = a->kernel[0];
    g->KW = a->kernel[1];
    g->G = a->groups;
    g->CG = g->C / g->G;
    g->OG = g->O / g->G;
    g->SH = a->strides[0];
    g->SW = a->strides[1];
    g->DH = a->dilations[0];
    g->DW = a->dilations[1];
    g->PT = a->pads[0];
    g->PL = a->pads[1];
    g->bias = k->in[2];
    int padded = a->pads[0] || a->pads[1] || a->pads[2] || a->pads[3];
    if (g->KH == 1 && g->KW == 1 && g->SH == 1 && g->SW == 1 && !padded) { /* a matrix product */
        g->W = g->H * g->W;
        g->H = 1;
        g->OW = g->OH * g->OW;
        g->OH = 1;
    }
    /* rows: a kernel row may fall outside when padded or dilated past the input */
    g->rows_checked = g->PT > 0 || (g->OH - 1) * g->SH - g->PT + (g->KH - 1) * g->DH >= g->H;
    long long num = g->W - 1 - (g->KW - 1) * g->DW + g->PL;
    g->lo = (g->PL + g->SW - 1) / g->SW;
    g->hi = num < 0 ? 0 : num / g->SW + 1;
    g->lo = g->lo > g->OW ? g->OW : g->lo;
    g->hi = g->hi > g->OW ? g->OW : g->hi;
    if (g->hi < g->lo) {
        g->hi = g->lo;
    }
}

int tether__c_conv2d_blocked(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_attrs *a = &nd->attrs;
    const tether_schedule *sc = e->sc;
    if (e->vw <= 0) {
        return 0;
    }
    conv_geo c;
    tether__c_conv_geo(e, nd, k, &c);
    int padded = a->pads[0] || a->pads[1] || a->pads[2] || a->pads[3];
    /* rows with a vector of interior columns: blocks along rows; else, without padding, a
     * plane of at least a vector: blocks over the flattened plane; else the scalar kernel */
    int plane = 0;
    int row_min = e->vw < 4 ? e->vw : 4; /* the narrowest vector narrow_tails emits */
    if (c.hi - c.lo < row_min || (c.hi - c.lo < e->vw && c.SW > 1)) {
        if (padded || c.rows_checked || c.OH * c.OW < e->vw) {
            return 0;
        }
        plane = 1;
    }
    int depthwise = c.CG == 1 && c.OG == 1;
    int mr = depthwise ? 1 : e->conv_mr;
    int nr = depthwise ? sc->dw_col_vectors : sc->conv_col_vectors;
    if (c.G > 1 && c.OG % mr != 0) {
        mr = 1; /* a block must not cross a group */
    }
    long long full = c.O / mr * mr, tail = c.O - full;
    line(e, "/* schedule: blocked %s conv, %d channel%s x %d vector%s of %d columns */",
         depthwise ? "depthwise" : "direct", mr, mr == 1 ? "" : "s", nr, nr == 1 ? "" : "s", e->vw);
    vector_types(e);
    loop(e, "n", c.N);
    line(e, "for (int oc0 = 0; oc0 < %lld; oc0 += %d) {", full, mr);
    e->depth++;
    (plane ? conv_plane_channels : conv_channels)(e, nd, k, &c, mr, nr);
    close_block(e);
    if (tail) {
        line(e, "{");
        e->depth++;
        line(e, "const int oc0 = %lld;", full);
        (plane ? conv_plane_channels : conv_channels)(e, nd, k, &c, (int)tail, nr);
        close_block(e);
    }
    close_block(e);
    return 1;
}

/* dense with W as [N, K] (ONNX Gemm transB=1, the common fully-connected layer): every output is
 * a dot product of a row of A and a row of W. gemv_rows rows of W at a time share each vector
 * load of A; the sums are kept in vector accumulators (a scalar float reduction does not
 * vectorise without reassociation) and reduced once at the end, then the K % vw remainder. */
int tether__c_dense_blocked(em *e, const tether_ir_node *nd, const kargs *k,
                            void (*value)(const tether_ir_node *, const em *, const kargs *,
                                          const char *, const char *, const char *, char *,
                                          size_t)) {
    const tether_ir_attrs *a = &nd->attrs;
    const tether_ir_tensor *y = T(e, nd->outputs[0]), *A = T(e, nd->inputs[0]);
    const int vw = e->vw;
    if (vw <= 0 || !a->trans_b || a->trans_a) {
        return 0;
    }
    long long M = y->shape[0], N = y->shape[1], K = A->shape[1];
    if (K < vw) {
        return 0;
    }
    int rb = e->sc->gemv_rows;
    long long Kv = K / vw * vw, Nb = N / rb * rb;
    line(e, "/* schedule: blocked dot products, %d rows x vectors of %d */", rb, vw);
    vector_types(e);
    loop(e, "i", M);
    line(e, "const float *restrict a = %s + i * %lld;", k->in[0], K);
    for (int pass = 0; pass < 2; pass++) {
        int rows = pass == 0 ? rb : 1;
        long long j0 = pass == 0 ? 0 : Nb, j1 = pass == 0 ? Nb : N;
        if (j1 <= j0) {
            continue;
        }
        line(e, "for (int j = %lld; j < %lld; j += %d) {", j0, j1, rows);
        e->depth++;
        for (int r = 0; r < rows; r++) {
            line(e, "const float *restrict b%d = %s + (j + %d) * %lld;", r, k->in[1], r, K);
            line(e, "tg_v v%d = (tg_v){0};", r);
        }
        line(e, "for (int q = 0; q < %lld; q += %d) {", Kv, vw);
        e->depth++;
        line(e, "const tg_v av = *(const tg_vu *)(a + q);");
        for (int r = 0; r < rows; r++) {
            line(e, "v%d += av * *(const tg_vu *)(b%d + q);", r, r);
        }
        close_block(e);
        for (int r = 0; r < rows; r++) {
            line(e, "float s%d = 0.0f;", r);
            loop(e, "q", vw);
            line(e, "s%d += v%d[q];", r, r);
            close_block(e);
            if (Kv < K) {
                line(e, "for (int q = %lld; q < %lld; ++q) {", Kv, K);
                line(e, "    s%d += a[q] * b%d[q];", r, r);
                line(e, "}");
            }
            char sv[16], jx[32], val[400], idx[96];
            snprintf(sv, sizeof sv, "s%d", r);
            snprintf(jx, sizeof jx, "j + %d", r);
            value(nd, e, k, sv, "i", jx, val, sizeof val);
            snprintf(idx, sizeof idx, "i * %lld + j + %d", N, r);
            tether__c_store(e, a, k->out, k->res, idx, val);
        }
        close_block(e);
    }
    close_block(e);
    return 1;
}

/* One block of a row-major matrix product y[i][j] = sum_k a[i][k] b[k][j]: rows i0 .. i0+mr-1
 * (variable i0) x nr vectors of columns from j0 (variable j0). a, b, y are the names of the
 * operand base pointers (row strides K, N, N). */
static void gemm_block(em *e, const tether_ir_node *nd, const kargs *k, long long K, long long N,
                       int mr, int nr) {
    const int vw = e->vw;
    acc_init(e, NULL, mr, nr);
    loop(e, "q", K);
    line(e, "const float *restrict bk = bb + q * %lld + j0;", N);
    for (int j = 0; j < nr; j++) {
        line(e, "const tg_v x%d = *(const tg_vu *)(bk + %d);", j, j * vw);
    }
    for (int r = 0; r < mr; r++) {
        line(e, "const float w%d = ab[(i0 + %d) * %lld + q];", r, r, K);
        acc_update(e, r, nr);
    }
    close_block(e);
    for (int r = 0; r < mr; r++) {
        line(e, "{");
        e->depth++;
        line(e, "float *restrict yq = yb + (i0 + %d) * %lld + j0;", r, N);
        if (k->res) {
            line(e, "const float *restrict rq = rbb + (i0 + %d) * %lld + j0;", r, N);
        }
        acc_store(e, nd, k, r, nr);
        close_block(e);
    }
}

typedef struct gemm_ctx {
    const tether_ir_node *nd;
    const kargs *k;
    long long K, N;
    int mr;
} gemm_ctx;

static void gemm_block1(em *e, const void *p) {
    const gemm_ctx *x = p;
    gemm_block(e, x->nd, x->k, x->K, x->N, x->mr, 1);
}

/* The rows i0 .. i0+mr-1 of one batch: vector blocks, single vectors, narrower vectors, scalar
 * columns. */
static void gemm_rows(em *e, const tether_ir_node *nd, const kargs *k, long long K, long long N,
                      int mr, int nr) {
    const int vw = e->vw;
    long long bw = (long long)nr * vw, vend = N / bw * bw, v1end = vend + (N - vend) / vw * vw;
    if (vend > 0) {
        line(e, "for (int j0 = 0; j0 < %lld; j0 += %lld) {", vend, bw);
        e->depth++;
        gemm_block(e, nd, k, K, N, mr, nr);
        close_block(e);
    }
    if (v1end > vend) {
        line(e, "for (int j0 = %lld; j0 < %lld; j0 += %d) {", vend, v1end, vw);
        e->depth++;
        gemm_block(e, nd, k, K, N, mr, 1);
        close_block(e);
    }
    gemm_ctx gx = {nd, k, K, N, mr};
    v1end = narrow_tails(e, v1end, N, "j0", gemm_block1, &gx);
    if (N > v1end) {
        line(e, "for (int j0 = %lld; j0 < %lld; ++j0) {", v1end, N);
        e->depth++;
        loop(e, "r", mr);
        line(e, "float acc = 0.0f;");
        loop(e, "q", K);
        line(e, "acc += ab[(i0 + r) * %lld + q] * bb[q * %lld + j0];", K, N);
        close_block(e);
        line(e, "float *restrict yq = yb + (i0 + r) * %lld + j0;", N);
        if (k->res) {
            line(e, "const float *restrict rq = rbb + (i0 + r) * %lld + j0;", N);
        }
        tether__c_store(e, &nd->attrs, "yq", k->res ? "rq" : NULL, "0", "acc");
        close_block(e);
        close_block(e);
    }
}

/* matmul (batched, broadcast batch offsets as the scalar kernel computes them: aoff/boff, or 0)
 * as register blocks of gemm_rows rows x gemm_col_vectors vectors of columns. */
int tether__c_matmul_blocked(em *e, const tether_ir_node *nd, const kargs *k, long long batch,
                             long long M, long long N, long long K) {
    const tether_schedule *sc = e->sc;
    if (e->vw <= 0 || N < e->vw) {
        return 0;
    }
    int mr = e->gemm_mr, nr = sc->gemm_col_vectors;
    long long full = M / mr * mr;
    line(e, "/* schedule: blocked matrix product, %d rows x %d vector%s of %d columns */", mr, nr,
         nr == 1 ? "" : "s", e->vw);
    vector_types(e);
    loop(e, "bt", batch);
    line(e, "const float *restrict ab = %s + %s;", k->in[0], batch > 1 ? "aoff[bt]" : "0");
    line(e, "const float *restrict bb = %s + %s;", k->in[1], batch > 1 ? "boff[bt]" : "0");
    line(e, "float *restrict yb = %s + bt * %lld;", k->out, M * N);
    if (k->res) {
        line(e, "const float *restrict rbb = %s + bt * %lld;", k->res, M * N);
    }
    if (full > 0) {
        line(e, "for (int i0 = 0; i0 < %lld; i0 += %d) {", full, mr);
        e->depth++;
        gemm_rows(e, nd, k, K, N, mr, nr);
        close_block(e);
    }
    if (M > full) {
        line(e, "{");
        e->depth++;
        line(e, "const int i0 = %lld;", full);
        gemm_rows(e, nd, k, K, N, (int)(M - full), nr);
        close_block(e);
    }
    close_block(e);
    return 1;
}
