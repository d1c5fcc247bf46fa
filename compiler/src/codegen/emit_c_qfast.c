/*
 * The C emitter's fast qconv kernels (docs/quantization.md, "Kernels"): for 8-bit inputs and
 * weights with weight zero point 0 and a requantized 8-bit output, emit_c_qpatch.c's patch and
 * padded-plane depthwise kernels first (small layers); for layers over their stack limits,
 *   - pointwise (1x1, stride 1, no padding, one group): blocks of 4 output channels x 2 pixels;
 *     with the Arm DSP extension (__ARM_FEATURE_DSP: Cortex-M4/M7/M33/M55) the channel sums use
 *     SXTB16/UXTB16 widening and SMLAD dual multiply-accumulates (arm_acle.h), 4 input channels a
 *     step; plain C multiply-accumulates elsewhere (Cortex-M0/M3, hosts);
 *   - depthwise (one input and one output channel a group): the window unrolled with the weights
 *     in locals;
 *   - any other one-group convolution: blocks of 4 output channels sharing each input load, with
 *     SMLAD along kernel rows of 4 or more on DSP cores.
 * On x86-64 with AVX2, emit_c_qx86.c's kernels come first, inside `#if defined(__AVX2__)`,
 * with the kernels here in the #else.
 * Inside the input the input zero point is folded into the bias (bias - x_zp * sum(w), computed
 * per output channel at run time); windows crossing the padding use (x - x_zp) with bounds.
 *
 * What must stay true: every path computes exactly the accumulator of emit_c_quant.c's portable
 * loop (int32 arithmetic, no overflow for 8-bit operands) and stores it through tgq_requant, so
 * the output equals the interpreter's byte for byte; no float arithmetic.
 */
#include <stdio.h>
#include <string.h>

#include "emit_c_qconv.h"
#include "tether/crt/dtype.h"

/* the fast paths' preconditions: 8-bit x and w, w zero point absent or constant 0, requant */
static int fast_ok(const em *e, const tether_ir_node *nd) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *w = T(e, nd->inputs[1]);
    if (x->dtype.bits != 8 || w->dtype.bits != 8 || x->dtype.lanes != 1 || w->dtype.lanes != 1 ||
        nd->ninputs <= 5 || nd->inputs[5] < 0) {
        return 0;
    }
    if (nd->ninputs > 4 && nd->inputs[4] >= 0) {
        const tether_ir_tensor *z = T(e, nd->inputs[4]);
        if (z->kind != TETHER_TENSOR_CONSTANT || !z->data) {
            return 0;
        }
        const int32_t *v = z->data;
        for (size_t i = 0; i < tether_ir_tensor_elements(z); i++) {
            if (v[i] != 0) {
                return 0;
            }
        }
    }
    return 1;
}

static void param(const tether_ir_node *nd, const kargs *k, int i, const char *c, char *out,
                  size_t n, const em *e) {
    if (i >= nd->ninputs || nd->inputs[i] < 0) {
        snprintf(out, n, "0");
        return;
    }
    snprintf(out, n, "(int32_t)%s[%s]", k->in[i],
             tether_ir_tensor_elements(T(e, nd->inputs[i])) == 1 ? "0" : c);
}

static void range(const tether_ir_node *nd, DLDataType t, long long *lo, long long *hi) {
    int64_t l, h;
    tether__quant_range(t, &l, &h);
    if (nd->attrs.min > (float)l) {
        l = (int64_t)nd->attrs.min + ((float)(int64_t)nd->attrs.min < nd->attrs.min);
    }
    if (nd->attrs.max < (float)h) {
        h = (int64_t)nd->attrs.max - ((float)(int64_t)nd->attrs.max > nd->attrs.max);
    }
    *lo = (long long)l;
    *hi = (long long)h;
}

void tether__c_qgeo(const em *e, const tether_ir_node *nd, qg *q) {
    const tether_ir_attrs *a = &nd->attrs;
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *w = T(e, nd->inputs[1]),
                           *y = T(e, nd->outputs[0]);
    q->N = x->shape[0];
    q->C = x->shape[1];
    q->H = x->shape[2];
    q->W = x->shape[3];
    q->O = y->shape[1];
    q->OH = y->shape[2];
    q->OW = y->shape[3];
    q->KH = w->shape[2];
    q->KW = w->shape[3];
    q->G = a->groups;
    q->SH = a->strides[0];
    q->SW = a->strides[1];
    q->DH = a->dilations[0];
    q->DW = a->dilations[1];
    q->PT = a->pads[0];
    q->PL = a->pads[1];
    q->xt = tether__c_type(x->dtype);
    q->wt = tether__c_type(w->dtype);
    q->yt = tether__c_type(y->dtype);
    q->x16 = x->dtype.code == kDLInt ? "__sxtb16" : "__uxtb16";
    q->w16 = w->dtype.code == kDLInt ? "__sxtb16" : "__uxtb16";
    const tether_ir_tensor *rq = T(e, nd->inputs[5]);
    q->per_ch = rq->shape[0] != 1;
    range(nd, y->dtype, &q->lo, &q->hi);
    q->rqs = rq->kind == TETHER_TENSOR_CONSTANT && rq->data != NULL;
    for (size_t i = 1; q->rqs && i < tether_ir_tensor_elements(rq); i += 2) {
        const int32_t sh = ((const int32_t *)rq->data)[i];
        q->rqs = sh >= -31 && sh <= -1;
    }
}

void tether__c_qstore(em *e, const qg *q, const char *dst, const char *acc, const char *m,
                      const char *s) {
    if (!q->rqs) {
        line(e, "%s = (%s)tgq_requant(%s, %s, %s, yz, %lld, %lld);", dst, q->yt, acc, m, s, q->lo,
             q->hi);
    } else if (q->lo == -128 && q->hi == 127) {
        line(e, "%s = tgq_sat_s8(tgq_rqs(%s, %s, -1 - %s) + yz);", dst, acc, m, s);
    } else if (q->lo == 0 && q->hi == 255) {
        line(e, "%s = tgq_sat_u8(tgq_rqs(%s, %s, -1 - %s) + yz);", dst, acc, m, s);
    } else {
        line(e, "%s = (%s)tgq_clamp(tgq_rqs(%s, %s, -1 - %s) + yz, %lld, %lld);", dst, q->yt, acc,
             m, s, q->lo, q->hi);
    }
}

static void rq_line(em *e, const qg *q, const char *dst, const char *acc, int j) {
    char m[8], s[8];
    snprintf(m, sizeof m, "m%d", j);
    snprintf(s, sizeof s, "s%d", j);
    tether__c_qstore(e, q, dst, acc, m, s);
}

/* requantization pair of channel oc+j: m<j>, s<j>; bias r<j>; folded b<j> */
static void chan_params(em *e, const tether_ir_node *nd, const kargs *k, const qg *q, int nb,
                        long long cnt) {
    for (int j = 0; j < nb; j++) {
        char c[32], b[96];
        snprintf(c, sizeof c, "oc + %d", j);
        param(nd, k, 2, c, b, sizeof b, e);
        line(e, "const %s *restrict w%d = %s + (oc + %d) * %lld;", q->wt, j, k->in[1], j, cnt);
        line(e, "const int32_t r%d = %s;", j, b);
        if (q->per_ch) {
            line(e, "const int32_t m%d = %s[2 * (oc + %d)], s%d = %s[2 * (oc + %d) + 1];", j,
                 k->in[5], j, j, k->in[5], j);
        } else {
            line(e, "const int32_t m%d = %s[0], s%d = %s[1];", j, k->in[5], j, k->in[5]);
        }
        line(e, "int32_t b%d = r%d;", j, j);
    }
    line(e, "for (int i = 0; i < %lld; ++i) {", cnt);
    for (int j = 0; j < nb; j++) {
        line(e, "    b%d -= xz * (int32_t)w%d[i];", j, j);
    }
    line(e, "}");
}

static void prologue(em *e, const tether_ir_node *nd, const kargs *k) {
    char xz[96], yz[96];
    if (nd->ninputs > 4 && nd->inputs[4] >= 0) {
        line(e, "(void)%s; /* the weight zero point: 0 */", k->in[4]);
    }
    param(nd, k, 3, "0", xz, sizeof xz, e);
    param(nd, k, 6, "0", yz, sizeof yz, e);
    line(e, "const int32_t xz = %s, yz = %s;", xz, yz);
}

static void pointwise(em *e, const tether_ir_node *nd, const kargs *k, const qg *q) {
    long long P = q->H * q->W, C = q->C;
    prologue(e, nd, k);
    loop(e, "n", q->N);
    line(e, "const %s *restrict xn = %s + n * %lld;", q->xt, k->in[0], C * P);
    line(e, "%s *restrict yn = %s + n * %lld;", q->yt, k->out, q->O * P);
    for (int pass = 0; pass < 2; pass++) {
        int nb = pass == 0 ? 4 : 1;
        if (pass == 0) {
            line(e, "int oc = 0;");
            line(e, "for (; oc + 4 <= %lld; oc += 4) {", q->O);
        } else {
            line(e, "for (; oc < %lld; ++oc) {", q->O);
        }
        e->depth++;
        chan_params(e, nd, k, q, nb, C);
        line(e, "int p = 0;");
        if (nb == 4) {
            line(e, "for (; p + 2 <= %lld; p += 2) {", P);
            e->depth++;
            line(e, "const %s *restrict xp = xn + p;", q->xt);
            for (int j = 0; j < 4; j++) {
                line(e, "int32_t a%d0 = b%d, a%d1 = b%d;", j, j, j, j);
            }
            line(e, "int c = 0;");
            if (C >= 4) {
                line(e, "#if defined(__ARM_FEATURE_DSP)");
                line(e, "for (; c + 4 <= %lld; c += 4) {", C);
                e->depth++;
                /* two halves (channels c, c+2 then c+1, c+3) keep 8 accumulators and 2 pairs
                 * of inputs in registers; each weight word is read once per half */
                for (int half = 0; half < 2; half++) {
                    line(e, "{");
                    e->depth++;
                    line(e, "uint16_t hl, hh;");
                    line(e, "memcpy(&hl, xp + (c + %d) * %lld, 2);", half, P);
                    line(e, "memcpy(&hh, xp + (c + %d) * %lld, 2);", half + 2, P);
                    line(e, "const uint32_t t = (uint32_t)hl | ((uint32_t)hh << 16);");
                    line(e, "const uint32_t xa = %s(t), xb = %s(tgq_ror8(t));", q->x16, q->x16);
                    for (int j = 0; j < 4; j++) {
                        line(e, "{");
                        line(e, "    uint32_t wv;");
                        line(e, "    memcpy(&wv, w%d + c, 4);", j);
                        line(e, "    const uint32_t wp = %s(%s);", q->w16,
                             half ? "tgq_ror8(wv)" : "wv");
                        line(e, "    a%d0 = __smlad(xa, wp, a%d0);", j, j);
                        line(e, "    a%d1 = __smlad(xb, wp, a%d1);", j, j);
                        line(e, "}");
                    }
                    close_block(e);
                }
                close_block(e);
                line(e, "#endif");
            }
            line(e, "for (; c < %lld; ++c) {", C);
            e->depth++;
            line(e, "const int32_t x0 = xp[c * %lld], x1 = xp[c * %lld + 1];", P, P);
            for (int j = 0; j < 4; j++) {
                line(e, "{");
                line(e, "    const int32_t v = w%d[c];", j);
                line(e, "    a%d0 += x0 * v;", j);
                line(e, "    a%d1 += x1 * v;", j);
                line(e, "}");
            }
            close_block(e);
            for (int j = 0; j < 4; j++) {
                char d[96], a[16];
                snprintf(d, sizeof d, "yn[(oc + %d) * %lld + p]", j, P);
                snprintf(a, sizeof a, "a%d0", j);
                rq_line(e, q, d, a, j);
                snprintf(d, sizeof d, "yn[(oc + %d) * %lld + p + 1]", j, P);
                snprintf(a, sizeof a, "a%d1", j);
                rq_line(e, q, d, a, j);
            }
            close_block(e);
        }
        line(e, "for (; p < %lld; ++p) {", P);
        e->depth++;
        for (int j = 0; j < nb; j++) {
            line(e, "int32_t a%d = b%d;", j, j);
        }
        line(e, "for (int c = 0; c < %lld; ++c) {", C);
        line(e, "    const int32_t xv = xn[c * %lld + p];", P);
        for (int j = 0; j < nb; j++) {
            line(e, "    a%d += xv * (int32_t)w%d[c];", j, j);
        }
        line(e, "}");
        for (int j = 0; j < nb; j++) {
            char d[96], a[16];
            snprintf(d, sizeof d, "yn[(oc + %d) * %lld + p]", j, P);
            snprintf(a, sizeof a, "a%d", j);
            rq_line(e, q, d, a, j);
        }
        close_block(e);
        close_block(e);
    }
    close_block(e);
}

/* The bounded window of channel oc+j at (ih0, iw0) into acc (x - x_zp, padding skipped). */
static void border(em *e, const qg *q, const char *xb, long long cg, int j, const char *acc) {
    line(e, "for (int c = 0; c < %lld; ++c) {", cg);
    e->depth++;
    line(e, "for (int kh = 0; kh < %lld; ++kh) {", q->KH);
    e->depth++;
    line(e, "const int ih = ih0 + kh * %lld;", q->DH);
    line(e, "if (ih < 0 || ih >= %lld) {", q->H);
    line(e, "    continue;");
    line(e, "}");
    line(e, "for (int kw = 0; kw < %lld; ++kw) {", q->KW);
    e->depth++;
    line(e, "const int iw = iw0 + kw * %lld;", q->DW);
    line(e, "if (iw >= 0 && iw < %lld) {", q->W);
    line(e,
         "    %s += ((int32_t)%s[(c * %lld + ih) * %lld + iw] - xz) * (int32_t)w%d[(c * %lld + "
         "kh) * %lld + kw];",
         acc, xb, q->H, q->W, j, q->KH, q->KW);
    line(e, "}");
    close_block(e);
    close_block(e);
    close_block(e);
}

static void depthwise(em *e, const tether_ir_node *nd, const kargs *k, const qg *q) {
    long long K = q->KH * q->KW;
    int unroll = K <= 49;
    prologue(e, nd, k);
    loop(e, "n", q->N);
    line(e, "for (int oc = 0; oc < %lld; ++oc) {", q->O);
    e->depth++;
    chan_params(e, nd, k, q, 1, K);
    line(e, "const %s *restrict xc = %s + (n * %lld + oc) * %lld;", q->xt, k->in[0], q->C,
         q->H * q->W);
    line(e, "%s *restrict yo = %s + (n * %lld + oc) * %lld;", q->yt, k->out, q->O, q->OH * q->OW);
    if (unroll) {
        for (long long i = 0; i < K; i++) {
            line(e, "const int32_t v%lld = w0[%lld];", i, i);
        }
    }
    line(e, "for (int oh = 0; oh < %lld; ++oh) {", q->OH);
    e->depth++;
    line(e, "const int ih0 = oh * %lld - %lld;", q->SH, q->PT);
    line(e, "const int rin = ih0 >= 0 && ih0 + %lld < %lld;", (q->KH - 1) * q->DH, q->H);
    line(e, "for (int ow = 0; ow < %lld; ++ow) {", q->OW);
    e->depth++;
    line(e, "const int iw0 = ow * %lld - %lld;", q->SW, q->PL);
    line(e, "int32_t acc;");
    line(e, "if (rin && iw0 >= 0 && iw0 + %lld < %lld) {", (q->KW - 1) * q->DW, q->W);
    e->depth++;
    line(e, "const %s *restrict r = xc + ih0 * %lld + iw0;", q->xt, q->W);
    if (unroll) {
        line(e, "acc = b0;");
        for (long long kh = 0; kh < q->KH; kh++) {
            for (long long kw = 0; kw < q->KW; kw++) {
                line(e, "acc += (int32_t)r[%lld] * v%lld;", kh * q->DH * q->W + kw * q->DW,
                     kh * q->KW + kw);
            }
        }
    } else {
        line(e, "acc = b0;");
        line(e, "for (int kh = 0; kh < %lld; ++kh) {", q->KH);
        line(e, "    for (int kw = 0; kw < %lld; ++kw) {", q->KW);
        line(e, "        acc += (int32_t)r[kh * %lld + kw * %lld] * (int32_t)w0[kh * %lld + kw];",
             q->DH * q->W, q->DW, q->KW);
        line(e, "    }");
        line(e, "}");
    }
    e->depth--;
    line(e, "} else {");
    e->depth++;
    line(e, "acc = r0;");
    border(e, q, "xc", 1, 0, "acc");
    e->depth--;
    line(e, "}");
    char d[64];
    snprintf(d, sizeof d, "yo[oh * %lld + ow]", q->OW);
    rq_line(e, q, d, "acc", 0);
    close_block(e);
    close_block(e);
    close_block(e);
    close_block(e);
}

/* one group, any window: 4 output channels a block */
static void general(em *e, const tether_ir_node *nd, const kargs *k, const qg *q) {
    long long K = q->C * q->KH * q->KW;
    prologue(e, nd, k);
    loop(e, "n", q->N);
    line(e, "const %s *restrict xn = %s + n * %lld;", q->xt, k->in[0], q->C * q->H * q->W);
    line(e, "%s *restrict yn = %s + n * %lld;", q->yt, k->out, q->O * q->OH * q->OW);
    for (int pass = 0; pass < 2; pass++) {
        int nb = pass == 0 ? 4 : 1;
        if (pass == 0) {
            line(e, "int oc = 0;");
            line(e, "for (; oc + 4 <= %lld; oc += 4) {", q->O);
        } else {
            line(e, "for (; oc < %lld; ++oc) {", q->O);
        }
        e->depth++;
        chan_params(e, nd, k, q, nb, K);
        line(e, "for (int oh = 0; oh < %lld; ++oh) {", q->OH);
        e->depth++;
        line(e, "const int ih0 = oh * %lld - %lld;", q->SH, q->PT);
        line(e, "const int rin = ih0 >= 0 && ih0 + %lld < %lld;", (q->KH - 1) * q->DH, q->H);
        line(e, "for (int ow = 0; ow < %lld; ++ow) {", q->OW);
        e->depth++;
        line(e, "const int iw0 = ow * %lld - %lld;", q->SW, q->PL);
        for (int j = 0; j < nb; j++) {
            line(e, "int32_t a%d;", j);
        }
        line(e, "if (rin && iw0 >= 0 && iw0 + %lld < %lld) {", (q->KW - 1) * q->DW, q->W);
        e->depth++;
        for (int j = 0; j < nb; j++) {
            line(e, "a%d = b%d;", j, j);
        }
        line(e, "for (int c = 0; c < %lld; ++c) {", q->C);
        e->depth++;
        line(e, "for (int kh = 0; kh < %lld; ++kh) {", q->KH);
        e->depth++;
        line(e, "const %s *restrict r = xn + (c * %lld + ih0 + kh * %lld) * %lld + iw0;", q->xt,
             q->H, q->DH, q->W);
        line(e, "const int wo = (c * %lld + kh) * %lld;", q->KH, q->KW);
        line(e, "int kw = 0;");
        if (q->DW == 1 && q->KW >= 4) {
            line(e, "#if defined(__ARM_FEATURE_DSP)");
            line(e, "for (; kw + 4 <= %lld; kw += 4) {", q->KW);
            e->depth++;
            line(e, "uint32_t xv;");
            line(e, "memcpy(&xv, r + kw, 4);");
            line(e, "const uint32_t xe = %s(xv), xo = %s(tgq_ror8(xv));", q->x16, q->x16);
            for (int j = 0; j < nb; j++) {
                line(e, "{");
                line(e, "    uint32_t wv;");
                line(e, "    memcpy(&wv, w%d + wo + kw, 4);", j);
                line(e, "    a%d = __smlad(xe, %s(wv), a%d);", j, q->w16, j);
                line(e, "    a%d = __smlad(xo, %s(tgq_ror8(wv)), a%d);", j, q->w16, j);
                line(e, "}");
            }
            close_block(e);
            line(e, "#endif");
        }
        line(e, "for (; kw < %lld; ++kw) {", q->KW);
        line(e, "    const int32_t xv = r[kw * %lld];", q->DW);
        for (int j = 0; j < nb; j++) {
            line(e, "    a%d += xv * (int32_t)w%d[wo + kw];", j, j);
        }
        line(e, "}");
        close_block(e);
        close_block(e);
        e->depth--;
        line(e, "} else {");
        e->depth++;
        for (int j = 0; j < nb; j++) {
            char acc[8];
            snprintf(acc, sizeof acc, "a%d", j);
            line(e, "a%d = r%d;", j, j);
            border(e, q, "xn", q->C, j, acc);
        }
        e->depth--;
        line(e, "}");
        for (int j = 0; j < nb; j++) {
            char d[96], a[8];
            snprintf(d, sizeof d, "yn[(oc + %d) * %lld + oh * %lld + ow]", j, q->OH * q->OW, q->OW);
            snprintf(a, sizeof a, "a%d", j);
            rq_line(e, q, d, a, j);
        }
        close_block(e);
        close_block(e);
        close_block(e);
    }
    close_block(e);
}

static int portable(em *e, const tether_ir_node *nd, const kargs *k, const qg *q);

int tether__c_qconv_fast(em *e, const tether_ir_node *nd, const kargs *k) {
    if (!fast_ok(e, nd)) {
        return 0;
    }
    qg q;
    tether__c_qgeo(e, nd, &q);
    if (tether__c_qconv_x86_ok(e, nd, &q)) { /* emit_c_qx86.c, the portable kernel in the #else */
        line(e, "#if defined(__AVX2__)");
        tether__c_qconv_x86(e, nd, k, &q);
        line(e, "#else");
        portable(e, nd, k, &q);
        line(e, "#endif");
        return 1;
    }
    return portable(e, nd, k, &q);
}

static int portable(em *e, const tether_ir_node *nd, const kargs *k, const qg *qp) {
    qg q = *qp;
    if (tether__c_qconv_dwpad(e, nd, k, &q) || tether__c_qconv_patch(e, nd, k, &q)) {
        return 1; /* emit_c_qpatch.c */
    }
    if (q.G == 1 && q.KH == 1 && q.KW == 1 && q.SH == 1 && q.SW == 1 && q.PT == 0 && q.PL == 0 &&
        q.OH == q.H && q.OW == q.W) {
        pointwise(e, nd, k, &q);
        return 1;
    }
    if (q.G == q.C && q.O == q.C) {
        depthwise(e, nd, k, &q);
        return 1;
    }
    if (q.G == 1) {
        general(e, nd, k, &q);
        return 1;
    }
    return 0;
}
