/*
 * The C emitter's qconv kernels for small windows and planes (docs/quantization.md, "Kernels"),
 * tried before emit_c_qfast.c's:
 *   - the patch kernel (one group, C*KH*KW taps up to 256): two output pixels at a time, their
 *     windows gathered into an int16 patch of x - x_zp on the stack (0 in the padding, so the
 *     raw bias starts the sums and no window has bounds), then 2 output channels x 2 pixels a
 *     step; on cores with the DSP extension the patch is stored in SMLAD order (taps 0,2,1,3 of
 *     each group of four) and each weight word, widened with SXTB16/UXTB16, meets it in SMLAD
 *     dual multiply-accumulates (a pointwise convolution fills the patch with SXTB16/SSUB16 from
 *     halfword loads); elsewhere plain multiply-accumulates;
 *   - the depthwise kernel (one channel a group, a window of up to 49 taps, a padded plane of up
 *     to 512 elements): each channel's plane copied as x - x_zp into a zero-bordered int16 plane
 *     on the stack, then every window unrolled without bounds, with SMLAD over pairs of
 *     neighbouring taps on DSP cores.
 * Every output goes through tether__c_qstore (tgq_rqs when every shift allows it).
 *
 * What must stay true: each accumulator is exactly the portable loop's int32 sum (the bias plus
 * (x - x_zp) * w over the taps inside the input), so outputs equal the interpreter's byte for
 * byte; no float arithmetic; the stack arrays stay within the limits above (1 KB).
 */
#include <stdio.h>

#include "emit_c_qconv.h"
#include "tether/crt/dtype.h"

enum { PATCH_MAX_TAPS = 256, PLANE_MAX = 512, DW_MAX_TAPS = 49 };

static void pexpr(const em *e, const tether_ir_node *nd, const kargs *k, int i, const char *c,
                  char *out, size_t n) {
    if (i >= nd->ninputs || nd->inputs[i] < 0) {
        snprintf(out, n, "0");
        return;
    }
    snprintf(out, n, "(int32_t)%s[%s]", k->in[i],
             tether_ir_tensor_elements(T(e, nd->inputs[i])) == 1 ? "0" : c);
}

static void prologue(em *e, const tether_ir_node *nd, const kargs *k) {
    char xz[96], yz[96];
    if (nd->ninputs > 4 && nd->inputs[4] >= 0) {
        line(e, "(void)%s; /* the weight zero point: 0 */", k->in[4]);
    }
    pexpr(e, nd, k, 3, "0", xz, sizeof xz);
    pexpr(e, nd, k, 6, "0", yz, sizeof yz);
    line(e, "const int32_t xz = %s, yz = %s;", xz, yz);
}

/* m<j>, s<j>: the requantization pair of channel expression c */
static void rq_pair(em *e, const tether_ir_node *nd, const kargs *k, const qg *q, int j,
                    const char *c) {
    (void)nd;
    if (q->per_ch) {
        line(e, "const int32_t m%d = %s[2 * (%s)], s%d = %s[2 * (%s) + 1];", j, k->in[5], c, j,
             k->in[5], c);
    } else {
        line(e, "const int32_t m%d = %s[0], s%d = %s[1];", j, k->in[5], j, k->in[5]);
    }
}

static void store(em *e, const qg *q, const char *dst, const char *acc, int j) {
    char m[8], s[8];
    snprintf(m, sizeof m, "m%d", j);
    snprintf(s, sizeof s, "s%d", j);
    tether__c_qstore(e, q, dst, acc, m, s);
}

/* the generic patch fill: both slots, any window, padding 0 */
static void fill_generic(em *e, const qg *q, long long K, long long P) {
    line(e, "for (int s = 0; s < 2; ++s) {");
    e->depth++;
    line(e, "const int qq = p + s < %lld ? p + s : %lld;", P, P - 1);
    line(e, "const int oh = qq / %lld, ow = qq - oh * %lld;", q->OW, q->OW);
    line(e, "const int ih0 = oh * %lld - %lld, iw0 = ow * %lld - %lld;", q->SH, q->PT, q->SW,
         q->PL);
    line(e, "int t = 0;");
    line(e, "for (int c = 0; c < %lld; ++c) {", q->C);
    e->depth++;
    line(e, "for (int kh = 0; kh < %lld; ++kh) {", q->KH);
    e->depth++;
    line(e, "const int ih = ih0 + kh * %lld;", q->DH);
    line(e, "const int rok = ih >= 0 && ih < %lld;", q->H);
    line(e, "const %s *restrict xr = xn + (c * %lld + (rok ? ih : 0)) * %lld;", q->xt, q->H, q->W);
    line(e, "for (int kw = 0; kw < %lld; ++kw, ++t) {", q->KW);
    e->depth++;
    line(e, "const int iw = iw0 + kw * %lld;", q->DW);
    line(e, "const int16_t v = (int16_t)(rok && iw >= 0 && iw < %lld ? (int32_t)xr[iw] - xz : 0);",
         q->W);
    line(e,
         "pt[t < K4 ? ((t & ~3) << 1) + (s << 2) + ((t & 1) << 1) + ((t >> 1) & 1) : K4 + s * "
         "(%lld - K4) + t] = v;",
         K);
    close_block(e);
    close_block(e);
    close_block(e);
    close_block(e);
}

/* the pointwise fill of two pixels p, p+1 (DSP): 4 channels from 4 halfword loads */
static void fill_pointwise(em *e, const qg *q, long long P) {
    line(e, "const uint32_t zz = (uint32_t)(uint16_t)xz * 0x10001u;");
    line(e, "for (int c = 0; c < K4; c += 4) {");
    e->depth++;
    line(e, "uint16_t h0, h1, h2, h3;");
    for (int i = 0; i < 4; i++) {
        line(e, "memcpy(&h%d, xn + (c + %d) * %lld + p, 2);", i, i, P);
    }
    line(e, "const uint32_t t0 = h0 | ((uint32_t)h2 << 16), t1 = h1 | ((uint32_t)h3 << 16);");
    line(e, "uint32_t *restrict d = pt_u.w + c;");
    line(e, "d[0] = __ssub16(%s(t0), zz);", q->x16);
    line(e, "d[1] = __ssub16(%s(t1), zz);", q->x16);
    line(e, "d[2] = __ssub16(%s(tgq_ror8(t0)), zz);", q->x16);
    line(e, "d[3] = __ssub16(%s(tgq_ror8(t1)), zz);", q->x16);
    close_block(e);
    line(e, "for (int c = K4; c < %lld; ++c) {", q->C);
    line(e, "    pt[K4 + c] = (int16_t)((int32_t)xn[c * %lld + p] - xz);", P);
    line(e, "    pt[%lld + c] = (int16_t)((int32_t)xn[c * %lld + p + 1] - xz);", q->C, P);
    line(e, "}");
}

/* one group of 4 taps (SMLAD order) at pw + 4u, pp + 8u into a0, a1 (and c0, c1) */
static void quad(em *e, const qg *q, int nb, long long K, int u) {
    const char *w8 = q->w16 + 2; /* sxtb16 or uxtb16 */
    line(e, "{");
    e->depth++;
    line(e, "uint32_t wa;");
    line(e, "uint64_t xa, xb;");
    line(e, "memcpy(&wa, pw + %d, 4);", 4 * u);
    line(e, "const uint32_t wa0 = %s(wa), wa1 = tgq_%s_r8(wa);", q->w16, w8);
    if (nb == 2) {
        line(e, "uint32_t wb;");
        line(e, "memcpy(&wb, pw + %lld, 4);", K + 4 * u);
        line(e, "const uint32_t wb0 = %s(wb), wb1 = tgq_%s_r8(wb);", q->w16, w8);
    }
    line(e, "memcpy(&xa, __builtin_assume_aligned(pt_u.h + 8 * i + %d, 8), 8);", 8 * u);
    line(e, "memcpy(&xb, __builtin_assume_aligned(pt_u.h + 8 * i + %d, 8), 8);", 8 * u + 4);
    for (int s = 0; s < 2; s++) {
        const char *x = s ? "xb" : "xa";
        line(e, "a%d = __smlad((uint32_t)(%s >> 32), wa1, __smlad((uint32_t)%s, wa0, a%d));", s, x,
             x, s);
        if (nb == 2) {
            line(e, "c%d = __smlad((uint32_t)(%s >> 32), wb1, __smlad((uint32_t)%s, wb0, c%d));", s,
                 x, x, s);
        }
    }
    close_block(e);
}

/* nb (1 or 2) output channels from oc: sums over the patch, then the stores */
static void channels(em *e, const tether_ir_node *nd, const kargs *k, const qg *q, int nb,
                     long long K, long long P) {
    char b0[96], b1[96];
    pexpr(e, nd, k, 2, "oc", b0, sizeof b0);
    pexpr(e, nd, k, 2, "oc + 1", b1, sizeof b1);
    line(e, "const %s *restrict w0 = %s + oc * %lld;", q->wt, k->in[1], K);
    line(e, "int32_t a0 = %s, a1 = a0;", b0);
    if (nb == 2) {
        line(e, "int32_t c0 = %s, c1 = c0;", b1);
    }
    long long quads = (K & ~3LL) / 4;
    if (quads > 0) {
        line(e, "#if defined(__ARM_FEATURE_DSP)");
        line(e, "{");
        e->depth++;
        line(e, "const %s *restrict pw = w0;", q->wt);
    }
    if (quads >= 2) {
        line(e, "int i = 0;");
        line(e, "for (; i + 2 <= %lld; i += 2, pw += 8) {", quads);
        e->depth++;
        quad(e, q, nb, K, 0);
        quad(e, q, nb, K, 1);
        close_block(e);
    }
    if (quads % 2) {
        if (quads < 2) {
            line(e, "const int i = 0;");
        }
        quad(e, q, nb, K, 0);
    }
    if (quads > 0) {
        close_block(e);
        line(e, "#endif");
    }
    line(e, "for (int t = K4; t < %lld; ++t) {", K);
    e->depth++;
    line(e, "const int32_t va = pt[K4 + t], vb = pt[%lld + t], u0 = w0[t];", K);
    line(e, "a0 += va * u0;");
    line(e, "a1 += vb * u0;");
    if (nb == 2) {
        line(e, "const int32_t u1 = w0[%lld + t];", K);
        line(e, "c0 += va * u1;");
        line(e, "c1 += vb * u1;");
    }
    close_block(e);
    rq_pair(e, nd, k, q, 0, "oc");
    if (nb == 2) {
        rq_pair(e, nd, k, q, 1, "oc + 1");
    }
    char d[96];
    snprintf(d, sizeof d, "yn[oc * %lld + p]", P);
    store(e, q, d, "a0", 0);
    if (nb == 2) {
        snprintf(d, sizeof d, "yn[(oc + 1) * %lld + p]", P);
        store(e, q, d, "c0", 1);
    }
    line(e, "if (two) {");
    e->depth++;
    snprintf(d, sizeof d, "yn[oc * %lld + p + 1]", P);
    store(e, q, d, "a1", 0);
    if (nb == 2) {
        snprintf(d, sizeof d, "yn[(oc + 1) * %lld + p + 1]", P);
        store(e, q, d, "c1", 1);
    }
    close_block(e);
}

/* without the DSP extension (Cortex-M0/M3, hosts): 4 output channels x 2 pixels a step, plain
 * multiply-accumulates (each patch value read once for 4 channels) */
static void scalar4(em *e, const tether_ir_node *nd, const kargs *k, const qg *q, long long K,
                    long long P) {
    static const char acc[4] = {'a', 'c', 'd', 'e'};
    line(e, "const %s *restrict w0 = %s + oc * %lld;", q->wt, k->in[1], K);
    for (int j = 0; j < 4; j++) {
        char b[96], c[16];
        snprintf(c, sizeof c, "oc + %d", j);
        pexpr(e, nd, k, 2, c, b, sizeof b);
        line(e, "int32_t %c0 = %s, %c1 = %c0;", acc[j], b, acc[j], acc[j]);
    }
    line(e, "for (int t = 0; t < %lld; ++t) {", K);
    e->depth++;
    line(e, "const int32_t va = pt[t], vb = pt[%lld + t];", K);
    for (int j = 0; j < 4; j++) {
        line(e, "{");
        line(e, "    const int32_t u = w0[%lld + t];", j * K);
        line(e, "    %c0 += va * u;", acc[j]);
        line(e, "    %c1 += vb * u;", acc[j]);
        line(e, "}");
    }
    close_block(e);
    for (int j = 0; j < 4; j++) {
        char c[16], d[96], a[4];
        snprintf(c, sizeof c, "oc + %d", j);
        rq_pair(e, nd, k, q, j, c);
        snprintf(d, sizeof d, "yn[(oc + %d) * %lld + p]", j, P);
        snprintf(a, sizeof a, "%c0", acc[j]);
        store(e, q, d, a, j);
        line(e, "if (two) {");
        snprintf(d, sizeof d, "yn[(oc + %d) * %lld + p + 1]", j, P);
        snprintf(a, sizeof a, "%c1", acc[j]);
        e->depth++;
        store(e, q, d, a, j);
        close_block(e);
    }
}

int tether__c_qconv_patch(em *e, const tether_ir_node *nd, const kargs *k, const qg *q) {
    long long K = q->C * q->KH * q->KW, P = q->OH * q->OW;
    if (q->G != 1 || K > PATCH_MAX_TAPS || P < 1) {
        return 0;
    }
    int pointwise = q->KH == 1 && q->KW == 1 && q->SH == 1 && q->SW == 1 && q->PT == 0 &&
                    q->PL == 0 && q->OH == q->H && q->OW == q->W;
    prologue(e, nd, k);
    line(e, "#if defined(__ARM_FEATURE_DSP)");
    line(e, "enum { K4 = %lld }; /* taps in SMLAD order: 0, 2, 1, 3 of each four */", K & ~3LL);
    line(e, "#else");
    line(e, "enum { K4 = 0 };");
    line(e, "#endif");
    line(e, "union {");
    line(e, "    int16_t h[%lld];", 2 * K);
    line(e, "    uint32_t w[%lld];", K);
    line(e, "    uint64_t d[%lld]; /* 8-byte aligned: LDRD */", (K + 1) / 2);
    line(e, "} pt_u; /* two patches of x - x_zp */");
    line(e, "int16_t *const pt = pt_u.h;");
    loop(e, "n", q->N);
    line(e, "const %s *restrict xn = %s + n * %lld;", q->xt, k->in[0], q->C * q->H * q->W);
    line(e, "%s *restrict yn = %s + n * %lld;", q->yt, k->out, q->O * P);
    line(e, "for (int p = 0; p < %lld; p += 2) {", P);
    e->depth++;
    line(e, "const int two = p + 1 < %lld;", P);
    if (pointwise && K >= 4) {
        line(e, "#if defined(__ARM_FEATURE_DSP)");
        line(e, "if (two) {");
        e->depth++;
        fill_pointwise(e, q, P);
        e->depth--;
        line(e, "} else");
        line(e, "#endif");
        line(e, "{");
        e->depth++;
        fill_generic(e, q, K, P);
        close_block(e);
    } else {
        fill_generic(e, q, K, P);
    }
    line(e, "int oc = 0;");
    if (q->O >= 4) {
        line(e, "#if !defined(__ARM_FEATURE_DSP)");
        line(e, "for (; oc + 4 <= %lld; oc += 4) {", q->O);
        e->depth++;
        scalar4(e, nd, k, q, K, P);
        close_block(e);
        line(e, "#endif");
    }
    line(e, "for (; oc + 2 <= %lld; oc += 2) {", q->O);
    e->depth++;
    channels(e, nd, k, q, 2, K, P);
    close_block(e);
    if (q->O % 2) {
        line(e, "if (oc < %lld) {", q->O);
        e->depth++;
        channels(e, nd, k, q, 1, K, P);
        close_block(e);
    }
    close_block(e);
    close_block(e);
    return 1;
}

int tether__c_qconv_dwpad(em *e, const tether_ir_node *nd, const kargs *k, const qg *q) {
    long long K = q->KH * q->KW;
    long long HP = (q->OH - 1) * q->SH + (q->KH - 1) * q->DH + 1;
    long long WP = (q->OW - 1) * q->SW + (q->KW - 1) * q->DW + 1;
    if (q->G != q->C || q->O != q->C || K > DW_MAX_TAPS || HP * WP > PLANE_MAX || HP < 1 ||
        WP < 1) {
        return 0;
    }
    /* the input rows/columns inside the padded plane */
    long long RH = q->H < HP - q->PT ? q->H : HP - q->PT,
              RW = q->W < WP - q->PL ? q->W : WP - q->PL;
    prologue(e, nd, k);
    line(e, "union {");
    line(e, "    int16_t h[%lld];", HP * WP);
    line(e, "    uint32_t w[%lld];", (HP * WP + 1) / 2);
    line(e, "} pl_u; /* one channel's x - x_zp, zero-bordered */");
    line(e, "int16_t *const pl = pl_u.h;");
    line(e, "memset(&pl_u, 0, sizeof pl_u);");
    loop(e, "n", q->N);
    line(e, "for (int oc = 0; oc < %lld; ++oc) {", q->O);
    e->depth++;
    char b[96];
    pexpr(e, nd, k, 2, "oc", b, sizeof b);
    line(e, "const %s *restrict w0 = %s + oc * %lld;", q->wt, k->in[1], K);
    line(e, "const int32_t r0 = %s;", b);
    rq_pair(e, nd, k, q, 0, "oc");
    line(e, "const %s *restrict xc = %s + (n * %lld + oc) * %lld;", q->xt, k->in[0], q->C,
         q->H * q->W);
    line(e, "%s *restrict yo = %s + (n * %lld + oc) * %lld;", q->yt, k->out, q->O, q->OH * q->OW);
    if (RH > 0 && RW > 0) {
        line(e, "for (int ih = 0; ih < %lld; ++ih) {", RH);
        line(e, "    const %s *restrict xr = xc + ih * %lld;", q->xt, q->W);
        line(e, "    int16_t *restrict pr = pl + (ih + %lld) * %lld + %lld;", q->PT, WP, q->PL);
        line(e, "    for (int iw = 0; iw < %lld; ++iw) {", RW);
        line(e, "        pr[iw] = (int16_t)((int32_t)xr[iw] - xz);");
        line(e, "    }");
        line(e, "}");
    }
    for (long long i = 0; i < K; i++) {
        line(e, "const int32_t v%lld = w0[%lld];", i, i);
    }
    int pairs = q->DW == 1 && q->KW >= 2;
    if (pairs) {
        line(e, "#if defined(__ARM_FEATURE_DSP)");
        for (long long kh = 0; kh < q->KH; kh++) {
            for (long long kw = 0; kw + 1 < q->KW; kw += 2) {
                long long i = kh * q->KW + kw;
                line(e,
                     "const uint32_t u%lld = (uint32_t)(uint16_t)v%lld | ((uint32_t)v%lld << 16);",
                     i, i, i + 1);
            }
        }
        line(e, "#endif");
    }
    line(e, "for (int oh = 0; oh < %lld; ++oh) {", q->OH);
    e->depth++;
    line(e, "for (int ow = 0; ow < %lld; ++ow) {", q->OW);
    e->depth++;
    line(e, "const int16_t *restrict r = pl + oh * %lld + ow * %lld;", q->SH * WP, q->SW);
    line(e, "int32_t acc = r0;");
    for (int dsp = pairs ? 1 : 0; dsp >= 0; dsp--) {
        if (pairs) {
            line(e, dsp ? "#if defined(__ARM_FEATURE_DSP)" : "#else");
        }
        for (long long kh = 0; kh < q->KH; kh++) {
            for (long long kw = 0; kw < q->KW; kw++) {
                long long i = kh * q->KW + kw, off = kh * q->DH * WP + kw * q->DW;
                if (dsp && kw + 1 < q->KW) {
                    line(e, "{");
                    line(e, "    uint32_t t;");
                    line(e, "    memcpy(&t, r + %lld, 4);", off);
                    line(e, "    acc = __smlad(t, u%lld, acc);", i);
                    line(e, "}");
                    kw++;
                } else {
                    line(e, "acc += (int32_t)r[%lld] * v%lld;", off, i);
                }
            }
        }
    }
    if (pairs) {
        line(e, "#endif");
    }
    char d[64];
    snprintf(d, sizeof d, "yo[oh * %lld + ow]", q->OW);
    store(e, q, d, "acc", 0);
    close_block(e);
    close_block(e);
    close_block(e);
    close_block(e);
    return 1;
}
