/*
 * The C emitter's x86-64 AVX2 kernel for a one-group qconv with 1 to 4 input channels (the first
 * convolution of a speech model, KWS, micro_speech, DS-CNN, or of an RGB image model;
 * docs/quantization.md "Kernels"), called by emit_c_qx86.c inside `#if defined(__AVX2__)`.
 *
 * Each input channel goes once per image into a zero-bordered int16 plane of x - x_zp (all on
 * the stack, <= 64 KiB); no per-pixel packing: the taps of a window row pair up as adjacent int16
 * values of the plane (kw, kw + 1; an odd last tap pairs with a column whose weight is 0), so one
 * 32-bit broadcast load gives a tap pair of a pixel, and one VPMADDWD against a vector of that
 * tap pair's weights for 8 output channels (packed at compile time; taps run over input channel,
 * kh and the pairs of kw) adds 16 products into 8
 * int32 accumulators, one per channel. A step computes 8 output pixels (flat positions of the
 * output plane, any stride and row dilation) x 8 channels, requantizes the accumulators in
 * channel lanes (tether__c_qrq_fn's tgq_rq8* with per-lane multipliers and shifts, compile-time
 * tables),
 * transposes the 8 x 8 int32 block and stores 8 pixels of each channel as 8 bytes.
 *
 * What must stay true: the int32 accumulator is bias + sum w * (x - x_zp) over the taps inside
 * the input, exactly emit_c_quant.c's portable loop (padding is 0 in the plane, so its products
 * vanish; pad columns and lanes past O have weight 0), so outputs equal the portable kernels' byte
 * for byte (test_quant_x86); no float arithmetic; no read outside the input tensor or the plane.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c_qconv.h"

/* The plane's rows and columns (PT/PL of padding first); 0 when the kernel does not take q. */
static int plane(const qg *q, long long *ph, long long *pw) {
    long long kwp = (q->KW + 1) / 2;
    long long h = (q->OH - 1) * q->SH + (q->KH - 1) * q->DH + 1;
    long long w = (q->OW - 1) * q->SW + 2 * kwp;
    if (h < q->H + q->PT) {
        h = q->H + q->PT;
    }
    if (w < q->W + q->PL) {
        w = q->W + q->PL;
    }
    *ph = h;
    *pw = w;
    return q->C * h * w * 2 <= 65536;
}

int tether__c_qconv_c1_ok(const em *e, const tether_ir_node *nd, const qg *q) {
    long long ph, pw;
    return q->G == 1 && q->C >= 1 && q->C <= 4 && q->DW == 1 && q->PT >= 0 && q->PL >= 0 &&
           q->OH > 0 && q->OW > 0 && plane(q, &ph, &pw) && tether__c_qrq_vec(e, nd, q) != 0;
}

static int32_t pair(int8_t a, int8_t b) {
    return (int32_t)((uint32_t)(uint16_t)(int16_t)a | ((uint32_t)(uint16_t)(int16_t)b << 16));
}

/* An 8 x 8 transpose of the int32 vectors r0..r7 (lanes: channels) into c0..c7 (lanes: pixels) */
static void transpose8(em *e) {
    for (int i = 0; i < 8; i += 2) {
        line(e,
             "const __m256i t%d = _mm256_unpacklo_epi32(r%d, r%d), t%d = "
             "_mm256_unpackhi_epi32(r%d, r%d);",
             i, i, i + 1, i + 1, i, i + 1);
    }
    for (int h = 0; h < 8; h += 4) {
        line(e,
             "const __m256i u%d = _mm256_unpacklo_epi64(t%d, t%d), u%d = "
             "_mm256_unpackhi_epi64(t%d, t%d);",
             h, h, h + 2, h + 1, h, h + 2);
        line(e,
             "const __m256i u%d = _mm256_unpacklo_epi64(t%d, t%d), u%d = "
             "_mm256_unpackhi_epi64(t%d, t%d);",
             h + 2, h + 1, h + 3, h + 3, h + 1, h + 3);
    }
    for (int j = 0; j < 4; j++) {
        line(e, "c[%d] = _mm256_permute2x128_si256(u%d, u%d, 0x20);", j, j, j + 4);
        line(e, "c[%d] = _mm256_permute2x128_si256(u%d, u%d, 0x31);", j + 4, j, j + 4);
    }
}

void tether__c_qconv_c1(em *e, const tether_ir_node *nd, const kargs *k, const qg *q) {
    const int8_t *w = T(e, nd->inputs[1])->data;
    const tether_ir_tensor *rqt = T(e, nd->inputs[5]);
    const int32_t *rq = rqt->data;
    const int per_ch = tether_ir_tensor_elements(rqt) > 2;
    long long ph, pw;
    plane(q, &ph, &pw);
    const long long KWP = (q->KW + 1) / 2, KT = q->C * q->KH * KWP, OB = (q->O + 7) / 8;
    const long long P = q->OH * q->OW, K = q->C * q->KH * q->KW, PL = ph * pw;
    int32_t *wc = calloc((size_t)(OB * KT * 8), sizeof(int32_t));
    int32_t *mq = calloc((size_t)(OB * 8), sizeof(int32_t));
    int32_t *nq = calloc((size_t)(OB * 8), sizeof(int32_t));
    int32_t *tf = calloc((size_t)KT, sizeof(int32_t));
    if (!wc || !mq || !nq || !tf) {
        free(wc);
        free(mq);
        free(nq);
        free(tf);
        e->s.failed = 1;
        return;
    }
    /* wc[(ob * KT + (c * KH + kh) * KWP + kp) * 8 + lane]: taps (c, kh, 2kp), (c, kh, 2kp + 1)
     * of output channel ob * 8 + lane (0 past KW and past O) */
    for (long long oc = 0; oc < OB * 8; oc++) {
        const int in = oc < q->O;
        const int32_t m = in ? rq[per_ch ? 2 * oc : 0] : (int32_t)1 << 30;
        const int32_t s = in ? rq[per_ch ? 2 * oc + 1 : 1] : -1;
        mq[oc] = m;
        nq[oc] = 31 - s;
        for (long long ck = 0; ck < q->C * q->KH && in; ck++) {
            for (long long kp = 0; kp < KWP; kp++) {
                const int8_t a = w[oc * K + ck * q->KW + 2 * kp],
                             b = 2 * kp + 1 < q->KW ? w[oc * K + ck * q->KW + 2 * kp + 1] : 0;
                wc[((oc / 8) * KT + ck * KWP + kp) * 8 + oc % 8] = pair(a, b);
            }
        }
    }
    for (long long c = 0; c < q->C; c++) {
        for (long long kh = 0; kh < q->KH; kh++) {
            for (long long kp = 0; kp < KWP; kp++) {
                tf[(c * q->KH + kh) * KWP + kp] = (int32_t)(c * PL + kh * q->DH * pw + 2 * kp);
            }
        }
    }
    tether__c_qx86_table(e, "wc", wc, OB * KT * 8);
    tether__c_qx86_table(e, "mq", mq, OB * 8);
    tether__c_qx86_table(e, "nq", nq, OB * 8);
    tether__c_qx86_table(e, "tf", tf, KT);
    free(wc);
    free(mq);
    free(nq);
    free(tf);
    tether__c_qx86_madd_macro(e);
    line(e, "(void)%s; /* packed above (wc, mq, nq) */", k->in[1]);
    line(e, "(void)%s;", k->in[5]);
    char bias[96];
    tether__c_qx86_param(e, nd, k, 2, "o", bias, sizeof bias);
    tether__c_qx86_zero_points(e, nd, k, q);
    line(e, "int32_t bq[%lld]; /* the bias, 0 past O */", OB * 8);
    line(e, "for (int o = 0; o < %lld; ++o) {", OB * 8);
    line(e, "    bq[o] = o < %lld ? %s : 0;", q->O, bias);
    line(e, "}");
    line(e, "int16_t pl[%lld]; /* x - xz, zero-bordered: %lld planes of %lld rows x %lld */",
         q->C * PL, q->C, ph, pw);
    line(e, "%s tb[8][8]; /* a partial block */", q->yt);
    line(e, "__m256i c[8];");
    line(e, "const __m128i vxz8 = _mm_set1_epi16((int16_t)xz);");
    line(e, "memset(pl, 0, sizeof pl);");
    loop(e, "n", q->N);
    line(e, "const %s *restrict xn = %s + n * %lld;", q->xt, k->in[0], q->C * q->H * q->W);
    line(e, "%s *restrict yn = %s + n * %lld;", q->yt, k->out, q->O * P);
    /* the planes: each input row, 8 values a step, then one at a time */
    line(e, "for (int ch = 0; ch < %lld; ++ch) {", q->C * q->H);
    e->depth++;
    line(e, "const int c = ch / %lld, ih = ch %% %lld;", q->H, q->H);
    line(e, "const %s *restrict a = xn + ch * %lld;", q->xt, q->W);
    line(e, "int16_t *restrict d = pl + c * %lld + (ih + %lld) * %lld + %lld;", PL, q->PT, pw,
         q->PL);
    line(e, "int iw = 0;");
    line(e, "for (; iw + 8 <= %lld; iw += 8) {", q->W);
    line(
        e,
        "    _mm_storeu_si128((__m128i *)(void *)(d + iw), _mm_sub_epi16(%s(_mm_loadl_epi64((const "
        "__m128i *)(const void *)(a + iw))), vxz8));",
        strcmp(q->xt, "int8_t") == 0 ? "_mm_cvtepi8_epi16" : "_mm_cvtepu8_epi16");
    line(e, "}");
    line(e, "for (; iw < %lld; ++iw) {", q->W);
    line(e, "    d[iw] = (int16_t)((int32_t)a[iw] - xz);");
    line(e, "}");
    close_block(e);
    line(e, "for (int p0 = 0; p0 < %lld; p0 += 8) {", P);
    e->depth++;
    /* the window origins of the block's 8 pixels (the last pixel repeated past P) */
    line(e, "int b[8];");
    line(e, "for (int i = 0; i < 8; ++i) {");
    line(e, "    const int p = p0 + i < %lld ? p0 + i : %lld;", P, P - 1);
    line(e, "    b[i] = (p / %lld) * %lld + (p %% %lld) * %lld;", q->OW, q->SH * pw, q->OW, q->SW);
    line(e, "}");
    line(e, "for (int ob = 0; ob < %lld; ++ob) {", OB);
    e->depth++;
    line(e, "const int32_t *restrict wb = wc + ob * %lld;", KT * 8);
    line(e, "const __m256i bv = _mm256_loadu_si256((const __m256i *)(const void *)(bq + ob * 8));");
    for (int i = 0; i < 8; i++) {
        line(e, "__m256i a%d = bv;", i);
    }
    line(e, "for (int t = 0; t < %lld; ++t) {", KT);
    e->depth++;
    line(e, "const __m256i wv = _mm256_loadu_si256((const __m256i *)(const void *)(wb + t * 8));");
    line(e, "const int16_t *restrict pt = pl + tf[t];");
    for (int i = 0; i < 8; i++) {
        line(e, "{");
        line(e, "    int32_t v;");
        line(e, "    memcpy(&v, pt + b[%d], 4);", i);
        line(e, "    a%d = TGQ_DP(a%d, _mm256_set1_epi32(v), wv);", i, i);
        line(e, "}");
    }
    /* the 8 accumulators pinned to registers, as in emit_c_qx86.c's row kernel: gcc 12 kept one
     * on the stack and chained every tap pair through a store and a reload */
    line(e, "#if defined(__GNUC__)");
    line(e, "__asm__(\"\" : \"+x\"(a0), \"+x\"(a1), \"+x\"(a2), \"+x\"(a3), \"+x\"(a4), "
            "\"+x\"(a5), \"+x\"(a6), \"+x\"(a7));");
    line(e, "#endif");
    close_block(e);
    line(e, "const __m256i mv = _mm256_loadu_si256((const __m256i *)(const void *)(mq + ob * 8));");
    line(e, "const __m256i n8 = _mm256_loadu_si256((const __m256i *)(const void *)(nq + ob * 8));");
    line(e, "const __m256i ne = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(_mm256_permutevar8x32_"
            "epi32(n8, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7))));");
    line(e, "const __m256i no = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(_mm256_"
            "permutevar8x32_epi32(n8, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7)), 1));");
    for (int i = 0; i < 8; i++) {
        line(e, "const __m256i r%d = %s(a%d, mv, ne, no, vlo, vhi, vzp);", i,
             tether__c_qrq_fn(e, nd, q), i);
    }
    transpose8(e);
    const char *st = strcmp(q->yt, "int8_t") == 0 ? "tgq_st8s" : "tgq_st8u";
    line(e, "if (p0 + 8 <= %lld && ob * 8 + 8 <= %lld) {", P, q->O);
    line(e, "    for (int j = 0; j < 8; ++j) {");
    line(e, "        %s(yn + (ob * 8 + j) * %lld + p0, c[j]);", st, P);
    line(e, "    }");
    line(e, "} else {");
    e->depth++;
    line(e, "for (int j = 0; j < 8; ++j) {");
    line(e, "    %s(tb[j], c[j]);", st);
    line(e, "}");
    line(e, "for (int j = 0; j < 8 && ob * 8 + j < %lld; ++j) {", q->O);
    line(e, "    for (int i = 0; i < 8 && p0 + i < %lld; ++i) {", P);
    line(e, "        yn[(ob * 8 + j) * %lld + p0 + i] = tb[j][i];", P);
    line(e, "    }");
    line(e, "}");
    close_block(e);
    close_block(e); /* ob */
    close_block(e); /* p0 */
    close_block(e); /* n */
    line(e, "#undef TGQ_DP");
}
