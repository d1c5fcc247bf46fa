/*
 * The C emitter's x86-64 AVX2 kernel for a depthwise qconv of column stride 2 (MobileNet's
 * stride-2 3x3 layers, small planes included; docs/quantization.md "Kernels"), called by
 * emit_c_qx86.c inside `#if defined(__AVX2__)`.
 *
 * Each channel goes into a zero-bordered int16 plane of x - x_zp (on the stack, <= 64 KiB).
 * With a column stride of 2, the 32-bit word at plane column 2 * ow + kw holds the taps kw and
 * kw + 1 of output pixel ow, so one 256-bit load gives a tap pair of 8 consecutive output pixels
 * with no shuffle, and one VPMADDWD against the broadcast weight pair adds both products (an odd
 * last tap pairs with weight 0). Output rows go 8 pixels a step (the last step of a row moved back
 * to end at the row's end; rows narrower than 8 computed 8 wide into a buffer), requantized 8 at
 * a time (tether__c_qrq_fn's tgq_rq8*) and stored as 8 bytes.
 *
 * What must stay true: the int32 accumulator is bias + sum w * (x - x_zp) over the taps inside the
 * input, exactly emit_c_quant.c's portable loop (padding is 0 in the plane), so outputs equal the
 * portable kernels' byte for byte (test_quant_x86); no float arithmetic; no read outside the input
 * tensor or the plane.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c_qconv.h"

/* The plane's rows and columns (PT/PL of padding first); 0 when it exceeds 64 KiB. */
static int plane(const qg *q, long long *ph, long long *pw) {
    const long long kwp = (q->KW + 1) / 2, ow8 = q->OW < 8 ? 8 : q->OW;
    long long h = (q->OH - 1) * q->SH + (q->KH - 1) * q->DH + 1;
    long long w = 2 * (ow8 - 1) + 2 * kwp;
    if (h < q->H + q->PT) {
        h = q->H + q->PT;
    }
    if (w < q->W + q->PL) {
        w = q->W + q->PL;
    }
    *ph = h;
    *pw = w;
    return h * w * 2 <= 65536;
}

int tether__c_qconv_dw2_ok(const em *e, const tether_ir_node *nd, const qg *q) {
    long long ph, pw;
    return q->G == q->C && q->O == q->C && q->SW == 2 && q->DW == 1 && q->PT >= 0 && q->PL >= 0 &&
           q->OH > 0 && q->OW > 0 && q->KH * q->KW <= 64 && plane(q, &ph, &pw) &&
           tether__c_qrq_vec(e, nd, q) != 0;
}

static int32_t pair(int8_t a, int8_t b) {
    return (int32_t)((uint32_t)(uint16_t)(int16_t)a | ((uint32_t)(uint16_t)(int16_t)b << 16));
}

void tether__c_qconv_dw2(em *e, const tether_ir_node *nd, const kargs *k, const qg *q) {
    const int8_t *w = T(e, nd->inputs[1])->data;
    long long ph, pw;
    plane(q, &ph, &pw);
    const long long KWP = (q->KW + 1) / 2, KT = q->KH * KWP, K = q->KH * q->KW;
    int32_t *wq = calloc((size_t)(q->C * KT), sizeof(int32_t));
    if (!wq) {
        e->s.failed = 1;
        return;
    }
    for (long long c = 0; c < q->C; c++) {
        for (long long kh = 0; kh < q->KH; kh++) {
            for (long long kp = 0; kp < KWP; kp++) {
                const int8_t a = w[c * K + kh * q->KW + 2 * kp],
                             b = 2 * kp + 1 < q->KW ? w[c * K + kh * q->KW + 2 * kp + 1] : 0;
                wq[c * KT + kh * KWP + kp] = pair(a, b);
            }
        }
    }
    tether__c_qx86_table(e, "wq", wq, q->C * KT);
    free(wq);
    tether__c_qx86_madd_macro(e);
    line(e, "(void)%s; /* packed above (wq) */", k->in[1]);
    char bias[96];
    tether__c_qx86_param(e, nd, k, 2, "c", bias, sizeof bias);
    tether__c_qx86_zero_points(e, nd, k, q);
    line(e, "int16_t pl[%lld]; /* x - xz, zero-bordered: %lld rows x %lld */", ph * pw, ph, pw);
    if (q->OW < 8) {
        line(e, "%s ob[8]; /* a row narrower than 8 */", q->yt);
    }
    line(e, "const __m128i vxz8 = _mm_set1_epi16((int16_t)xz);");
    line(e, "memset(pl, 0, sizeof pl);");
    loop(e, "n", q->N);
    line(e, "for (int c = 0; c < %lld; ++c) {", q->C);
    e->depth++;
    line(e, "const int32_t r = %s;", bias);
    if (q->per_ch) {
        line(e, "const int32_t m = %s[2 * c], s = %s[2 * c + 1];", k->in[5], k->in[5]);
    } else {
        line(e, "const int32_t m = %s[0], s = %s[1];", k->in[5], k->in[5]);
    }
    line(e, "const __m256i mv = _mm256_set1_epi32(m), nv = _mm256_set1_epi64x(31 - s);");
    line(e, "const %s *restrict xc = %s + (n * %lld + c) * %lld;", q->xt, k->in[0], q->C,
         q->H * q->W);
    line(e, "%s *restrict yo = %s + (n * %lld + c) * %lld;", q->yt, k->out, q->O, q->OH * q->OW);
    for (long long t = 0; t < KT; t++) {
        line(e, "const __m256i w%lld = _mm256_set1_epi32(wq[c * %lld + %lld]);", t, KT, t);
    }
    /* the plane: each input row, 8 values a step, then one at a time */
    line(e, "for (int ih = 0; ih < %lld; ++ih) {", q->H);
    e->depth++;
    line(e, "const %s *restrict a = xc + ih * %lld;", q->xt, q->W);
    line(e, "int16_t *restrict d = pl + (ih + %lld) * %lld + %lld;", q->PT, pw, q->PL);
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
    line(e, "for (int oh = 0; oh < %lld; ++oh) {", q->OH);
    e->depth++;
    line(e, "const int16_t *restrict pr = pl + oh * %lld;", q->SH * pw);
    line(e, "%s *restrict yr = yo + oh * %lld;", q->yt, q->OW);
    line(e, "for (int ow0 = 0; ow0 < %lld; ow0 += 8) {", q->OW);
    e->depth++;
    if (q->OW >= 8) {
        line(e, "const int o0 = ow0 + 8 > %lld ? %lld : ow0;", q->OW, q->OW - 8);
    } else {
        line(e, "const int o0 = ow0;");
    }
    line(e, "__m256i acc = _mm256_set1_epi32(r);");
    for (long long kh = 0; kh < q->KH; kh++) {
        for (long long kp = 0; kp < KWP; kp++) {
            line(e,
                 "acc = TGQ_DP(acc, _mm256_loadu_si256((const __m256i *)(const void *)(pr + 2 * o0 "
                 "+ %lld)), w%lld);",
                 kh * q->DH * pw + 2 * kp, kh * KWP + kp);
        }
    }
    const char *st = strcmp(q->yt, "int8_t") == 0 ? "tgq_st8s" : "tgq_st8u";
    const char *rqf = tether__c_qrq_fn(e, nd, q);
    if (q->OW >= 8) {
        line(e, "%s(yr + o0, %s(acc, mv, nv, nv, vlo, vhi, vzp));", st, rqf);
    } else {
        line(e, "%s(ob, %s(acc, mv, nv, nv, vlo, vhi, vzp));", st, rqf);
        line(e, "memcpy(yr, ob, %lld);", q->OW);
    }
    close_block(e); /* ow0 */
    close_block(e); /* oh */
    close_block(e); /* c */
    close_block(e); /* n */
    line(e, "#undef TGQ_DP");
}
