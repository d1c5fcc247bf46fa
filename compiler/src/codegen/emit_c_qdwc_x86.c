/*
 * The C emitter's x86-64 AVX2 depthwise qconv kernel with channels in the vector lanes, for planes
 * whose rows are too narrow for pixel lanes (docs/quantization.md "Kernels": DS-CNN's 25x5,
 * MobileNet's 12x12, 6x6 and 3x3 depthwise layers with 64 to 256 channels), called by
 * emit_c_qx86.c inside `#if defined(__AVX2__)`.
 *
 * tether is NCHW; a row of 5 or 6 pixels fills a fraction of a 16-lane vector, and every channel
 * pays its own plane copy and requantization setup. Here the whole input goes once per image into
 * a zero-bordered int16 plane in pixel-major, channel-minor order (x - x_zp; 16x16 byte transposes
 * of 16 channels x 16 pixels, widened 16 channels a step), so one 256-bit load is one tap of 16
 * channels of one output pixel: for each output pixel and block of 16 channels the tap pairs meet
 * their weights (packed at compile time per channel pair lane) in VPMADDWD after VPUNPCKLWD /
 * VPUNPCKHWD of the two taps' loads (lanes: channels 0-3, 8-11 and 4-7, 12-15 of the block), any
 * window, stride, dilation and padding, no lane wasted on a missing pixel. The 16 accumulators are
 * requantized with per-lane multipliers and shifts (tether__c_qrq_fn's tgq_rq8*), packed to 16
 * bytes into a pixel-major output buffer, which 16x16 byte transposes write back as NCHW planes (a
 * plane's last 16-pixel block moved back to end at its end; planes under 16 pixels through a
 * buffer).
 *
 * What must stay true: the int32 accumulator is bias + sum w * (x - x_zp) over the taps inside the
 * input, exactly emit_c_quant.c's portable loop (padding is 0 in the plane; lanes of channels past
 * C have weight 0 and are never stored), so outputs equal the portable kernels' byte for byte
 * (test_quant_x86); no float arithmetic; no read outside the input tensor, the plane or the
 * buffers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c_qconv.h"

/* the plane's rows and columns (PT/PL of padding first) */
static void plane(const qg *q, long long *ph, long long *pw) {
    long long h = (q->OH - 1) * q->SH + (q->KH - 1) * q->DH + 1;
    long long w = (q->OW - 1) * q->SW + (q->KW - 1) * q->DW + 1;
    *ph = h > q->H + q->PT ? h : q->H + q->PT;
    *pw = w > q->W + q->PL ? w : q->W + q->PL;
}

int tether__c_qconv_dwc_ok(const em *e, const tether_ir_node *nd, const qg *q) {
    if (q->G != q->C || q->O != q->C || q->C < 16 || q->OW >= 16 || q->PT < 0 || q->PL < 0 ||
        q->OH < 1 || q->OW < 1 || q->H < 1 || q->W < 1 || q->KH * q->KW > 64) {
        return 0;
    }
    long long ph, pw, c16 = (q->C + 15) / 16 * 16, p = q->OH * q->OW;
    plane(q, &ph, &pw);
    return ph * pw * c16 * 2 <= 65536 && (p < 16 ? 16 : p) * c16 <= 65536 &&
           tether__c_qrq_vec(e, nd, q) != 0;
}

static int32_t pair(int8_t a, int8_t b) {
    return (int32_t)((uint32_t)(uint16_t)(int16_t)a | ((uint32_t)(uint16_t)(int16_t)b << 16));
}

/* the channel (within a block of 16) of accumulator lane j: lanes 0-7 hold channels 0-3, 8-11
 * (VPUNPCKLWD), lanes 8-15 channels 4-7, 12-15 (VPUNPCKHWD): bits 2 and 3 of j swapped */
static int lane_ch(int j) {
    return (j & 3) | ((j & 8) >> 1) | ((j & 4) << 1);
}

/* A 16x16 byte transpose of the __m128i rows <in>0..<in>15 into <out>0..<out>15 (row j of the
 * result: byte j of every input row): four rounds of unpacks, bytes then words, dwords, qwords */
static void transpose16(em *e, const char *in, const char *out) {
    static const char *const size[4] = {"epi8", "epi16", "epi32", "epi64"};
    char prev[16][24], cur[16][24];
    for (int i = 0; i < 16; i++) {
        snprintf(prev[i], sizeof prev[i], "%s%d", in, i);
    }
    for (int b = 0; b < 4; b++) {
        for (int hi = 0; hi < (8 >> b); hi++) {
            for (int lo = 0; lo < (1 << b); lo++) {
                const int a = (hi << (b + 1)) | lo, c = a | (1 << b);
                const int o = (hi << (b + 1)) | (lo << 1);
                if (b == 3) {
                    snprintf(cur[o], sizeof cur[o], "%s%d", out, o);
                    snprintf(cur[o + 1], sizeof cur[o + 1], "%s%d", out, o + 1);
                } else {
                    snprintf(cur[o], sizeof cur[o], "t%d_%d", b, o);
                    snprintf(cur[o + 1], sizeof cur[o + 1], "t%d_%d", b, o + 1);
                }
                line(e, "const __m128i %s = _mm_unpacklo_%s(%s, %s), %s = _mm_unpackhi_%s(%s, %s);",
                     cur[o], size[b], prev[a], prev[c], cur[o + 1], size[b], prev[a], prev[c]);
            }
        }
        memcpy(prev, cur, sizeof prev);
    }
}

void tether__c_qconv_dwc(em *e, const tether_ir_node *nd, const kargs *k, const qg *q) {
    const int8_t *w = T(e, nd->inputs[1])->data;
    long long ph, pw;
    plane(q, &ph, &pw);
    const long long C = q->C, C16 = (C + 15) / 16 * 16, NG = C16 / 16, K = q->KH * q->KW;
    const long long NP = (K + 1) / 2, HW = q->H * q->W, P = q->OH * q->OW, PX = P < 16 ? 16 : P;
    const int s8 = strcmp(q->yt, "int8_t") == 0;
    const char *rqf = tether__c_qrq_fn(e, nd, q);
    int32_t *wq = calloc((size_t)(NG * NP * 16), sizeof(int32_t));
    int32_t *pp = calloc((size_t)HW, sizeof(int32_t));
    if (!wq || !pp) {
        free(wq);
        free(pp);
        e->s.failed = 1;
        return;
    }
    /* wq[(g * NP + tp) * 16 + j]: taps 2tp, 2tp + 1 of channel 16g + lane_ch(j) (0 past C) */
    for (long long g = 0; g < NG; g++) {
        for (long long tp = 0; tp < NP; tp++) {
            for (int j = 0; j < 16; j++) {
                const long long c = g * 16 + lane_ch(j);
                if (c < C) {
                    wq[(g * NP + tp) * 16 + j] =
                        pair(w[c * K + 2 * tp], 2 * tp + 1 < K ? w[c * K + 2 * tp + 1] : 0);
                }
            }
        }
    }
    /* pp[p]: where input pixel p starts in the plane (int16 elements) */
    for (long long p = 0; p < HW; p++) {
        pp[p] = (int32_t)(((p / q->W + q->PT) * pw + p % q->W + q->PL) * C16);
    }
    tether__c_qx86_table(e, "wq", wq, NG * NP * 16);
    tether__c_qx86_table(e, "pp", pp, HW);
    free(wq);
    free(pp);
    tether__c_qx86_madd_macro(e);
    tether__c_qx86_zero_points(e, nd, k, q);
    line(e, "(void)%s; /* packed above (wq) */", k->in[1]);
    /* per accumulator lane: the bias, the multiplier, and n = 31 - shift as the 64-bit lanes of
     * the even then the odd lanes of each 8-lane half (tgq_rq8k's ne, no) */
    line(e, "int32_t bq[%lld], mq[%lld];", C16, C16);
    line(e, "long long nq[%lld];", C16);
    line(e, "for (int o = 0; o < %lld; ++o) {", C16);
    e->depth++;
    line(e, "const int c0 = (o & ~15) | (o & 3) | ((o & 8) >> 1) | ((o & 4) << 1);");
    line(e, "const int c = c0 < %lld ? c0 : %lld;", C, C - 1);
    char bias[96];
    tether__c_qx86_param(e, nd, k, 2, "c", bias, sizeof bias);
    line(e, "bq[o] = %s;", bias);
    if (q->per_ch) {
        line(e, "const int32_t m = %s[2 * c], s = %s[2 * c + 1];", k->in[5], k->in[5]);
    } else {
        line(e, "const int32_t m = %s[0], s = %s[1];", k->in[5], k->in[5]);
    }
    line(e, "mq[o] = m;");
    line(e, "nq[(o & ~7) + (o & 1) * 4 + (o & 7) / 2] = 31 - s;");
    close_block(e);
    line(e, "int16_t pl[%lld]; /* x - xz, pixel-major, %lld channels a pixel: %lld rows x %lld */",
         ph * pw * C16, C16, ph, pw);
    line(e, "%s ob[%lld]; /* the outputs, pixel-major */", q->yt, PX * C16);
    line(e, "const __m256i vxz = _mm256_set1_epi16((int16_t)xz);");
    line(e, "memset(pl, 0, sizeof pl);");
    if (P < 16) {
        line(e, "memset(ob, 0, sizeof ob);");
    }
    if (HW < 16) {
        line(e, "%s tr[16][16]; /* a plane under 16 pixels, one channel a row */", q->xt);
        line(e, "memset(tr, 0, sizeof tr);");
    }
    loop(e, "n", q->N);
    line(e, "const %s *restrict xn = %s + n * %lld;", q->xt, k->in[0], C * HW);
    line(e, "%s *restrict yn = %s + n * %lld;", q->yt, k->out, C * P);
    /* the plane: 16 channels x 16 pixels a step, transposed, widened, x - xz */
    line(e, "for (int cb = 0; cb < %lld; cb += 16) {", C16);
    e->depth++;
    line(e, "for (int pt = 0; pt < %lld; pt += 16) {", HW);
    e->depth++;
    if (HW >= 16) {
        line(e, "const int p0 = pt + 16 > %lld ? %lld : pt;", HW, HW - 16);
    } else {
        line(e, "const int p0 = 0;");
        line(e, "(void)pt;");
    }
    for (int j = 0; j < 16; j++) {
        line(e, "const int c%d = cb + %d < %lld ? cb + %d : %lld;", j, j, C, j, C - 1);
        if (HW >= 16) {
            line(e,
                 "const __m128i r%d = _mm_loadu_si128((const __m128i *)(const void *)(xn + c%d * "
                 "%lld + p0));",
                 j, j, HW);
        } else {
            line(e, "memcpy(tr[%d], xn + c%d * %lld, %lld);", j, j, HW, HW);
            line(e, "const __m128i r%d = _mm_loadu_si128((const __m128i *)(const void *)tr[%d]);",
                 j, j);
        }
    }
    transpose16(e, "r", "v");
    for (int i = 0; i < 16; i++) {
        if (HW < 16) {
            line(e, "if (%d < %lld) {", i, HW);
            e->depth++;
        }
        line(e,
             "_mm256_storeu_si256((__m256i *)(void *)(pl + pp[p0 + %d] + cb), "
             "_mm256_sub_epi16(%s(v%d), vxz));",
             i, strcmp(q->xt, "int8_t") == 0 ? "_mm256_cvtepi8_epi16" : "_mm256_cvtepu8_epi16", i);
        if (HW < 16) {
            close_block(e);
        }
    }
    close_block(e); /* pt */
    close_block(e); /* cb */
    /* the outputs: per block of 16 channels, each output pixel */
    line(e, "for (int g = 0; g < %lld; ++g) {", NG);
    e->depth++;
    line(e, "const int32_t *restrict wg = wq + g * %lld;", NP * 16);
    line(e, "const __m256i bl = _mm256_loadu_si256((const __m256i *)(const void *)(bq + g * 16)), "
            "bh = _mm256_loadu_si256((const __m256i *)(const void *)(bq + g * 16 + 8));");
    line(e, "const __m256i ml = _mm256_loadu_si256((const __m256i *)(const void *)(mq + g * 16)), "
            "mh = _mm256_loadu_si256((const __m256i *)(const void *)(mq + g * 16 + 8));");
    line(e, "const __m256i nel = _mm256_loadu_si256((const __m256i *)(const void *)(nq + g * 16)), "
            "nol = _mm256_loadu_si256((const __m256i *)(const void *)(nq + g * 16 + 4));");
    line(e, "const __m256i neh = _mm256_loadu_si256((const __m256i *)(const void *)(nq + g * 16 + "
            "8)), noh = _mm256_loadu_si256((const __m256i *)(const void *)(nq + g * 16 + 12));");
    line(e, "for (int oh = 0; oh < %lld; ++oh) {", q->OH);
    e->depth++;
    line(e, "for (int ow = 0; ow < %lld; ++ow) {", q->OW);
    e->depth++;
    line(e, "const int16_t *restrict b = pl + (oh * %lld + ow * %lld) * %lld + g * 16;", q->SH * pw,
         q->SW, C16);
    line(e, "__m256i al = bl, ah = bh;");
    for (long long tp = 0; tp < NP; tp++) {
        line(e, "{");
        e->depth++;
        for (long long u = 2 * tp; u < 2 * tp + 2; u++) {
            const long long t = u < K ? u : 2 * tp; /* an odd last tap: weight 0 */
            const long long off = ((t / q->KW) * q->DH * pw + (t % q->KW) * q->DW) * C16;
            line(e,
                 "const __m256i x%lld = _mm256_loadu_si256((const __m256i *)(const void *)(b + "
                 "%lld));",
                 u - 2 * tp, off);
        }
        line(e,
             "al = TGQ_DP(al, _mm256_unpacklo_epi16(x0, x1), _mm256_loadu_si256((const __m256i "
             "*)(const void *)(wg + %lld)));",
             tp * 16);
        line(e,
             "ah = TGQ_DP(ah, _mm256_unpackhi_epi16(x0, x1), _mm256_loadu_si256((const __m256i "
             "*)(const void *)(wg + %lld)));",
             tp * 16 + 8);
        close_block(e);
    }
    line(e,
         "const __m256i v = _mm256_packs_epi32(%s(al, ml, nel, nol, vlo, vhi, vzp), "
         "%s(ah, mh, neh, noh, vlo, vhi, vzp));",
         rqf, rqf);
    line(e,
         "_mm_storeu_si128((__m128i *)(void *)(ob + (oh * %lld + ow) * %lld + g * 16), "
         "_mm_pack%s_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));",
         q->OW, C16, s8 ? "s" : "us");
    close_block(e); /* ow */
    close_block(e); /* oh */
    close_block(e); /* g */
    /* back to NCHW: 16 pixels x 16 channels a step, transposed */
    line(e, "for (int cb = 0; cb < %lld; cb += 16) {", C16);
    e->depth++;
    line(e, "for (int pt = 0; pt < %lld; pt += 16) {", P);
    e->depth++;
    if (P >= 16) {
        line(e, "const int p0 = pt + 16 > %lld ? %lld : pt;", P, P - 16);
    } else {
        line(e, "const int p0 = 0;");
        line(e, "(void)pt;");
    }
    for (int i = 0; i < 16; i++) {
        line(e,
             "const __m128i r%d = _mm_loadu_si128((const __m128i *)(const void *)(ob + (p0 + %d) * "
             "%lld + cb));",
             i, i, C16);
    }
    transpose16(e, "r", "v");
    for (int j = 0; j < 16; j++) {
        if (C % 16) {
            line(e, "if (cb + %d < %lld) {", j, C);
            e->depth++;
        }
        if (P >= 16) {
            line(e, "_mm_storeu_si128((__m128i *)(void *)(yn + (cb + %d) * %lld + p0), v%d);", j, P,
                 j);
        } else {
            line(e, "{");
            line(e, "    %s t[16];", q->yt);
            line(e, "    _mm_storeu_si128((__m128i *)(void *)t, v%d);", j);
            line(e, "    memcpy(yn + (cb + %d) * %lld, t, %lld);", j, P, P);
            line(e, "}");
        }
        if (C % 16) {
            close_block(e);
        }
    }
    close_block(e); /* pt */
    close_block(e); /* cb */
    close_block(e); /* n */
    line(e, "#undef TGQ_DP");
}
