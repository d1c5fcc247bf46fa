/*
 * The C emitter's x86-64 AVX2 depthwise qconv kernel for stride 2 on planes whose 4 phase planes
 * fit 16384 int16 (no scalar border loop, unlike emit_c_qx86.c's 16-pixel row tiles; MobileNet's
 * 48x48 -> 24x24, 24x24 -> 12x12 and 12x12 -> 6x6 layers, the last two otherwise the portable loop;
 * docs/quantization.md, "Kernels"). Per channel, the zero-bordered plane of x - x_zp is split by
 * row and column parity into 4 int16 phase planes of PH2 x PW2 (PW2 = OW + the window's reach / 2),
 * so that output (oh, ow)'s tap (kh, kw) is phase
 * ((kh*DH) % 2, (kw*DW) % 2) at flat position oh * PW2 + ow plus a constant offset (the input split
 * into them with vector shuffles): 16 flat positions a step (the columns past OW computed and
 * dropped), taps in pairs into VPMADDWD (VPDPWSSD under AVX-512 VNNI), requantized 8 at a time
 * (tgq_rq8k / tgq_rq8 of emit_c_quant.c) into a row buffer whose first OW columns of each row are
 * copied out. Emitted inside `#if defined(__AVX2__)` by emit_c_qx86.c's dispatch (the portable
 * kernel in the #else).
 *
 * What must stay true: the accumulator is the portable loop's (bias + sum of (x - x_zp) * w over
 * the taps inside the plane; padding contributes 0), the requantization tgq_requant's, so outputs
 * equal the portable kernels' byte for byte (test_quant_x86); no float arithmetic; every load
 * stays inside the zero-filled phase planes; no read outside the input tensor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c_qconv.h"

#define DTILE 16 /* flat positions per step */

/* 0 no vector requantization, 1 tgq_rq8 (shifts -31..30), 2 tgq_rq8k (-31..-1) */
static int dw2_rq(const em *e, const tether_ir_node *nd, const qg *q) {
    if (nd->ninputs < 6 || nd->inputs[5] < 0) {
        return 0;
    }
    const tether_ir_tensor *rq = T(e, nd->inputs[5]);
    if (rq->kind != TETHER_TENSOR_CONSTANT || !rq->data ||
        (strcmp(q->yt, "int8_t") != 0 && strcmp(q->yt, "uint8_t") != 0)) {
        return 0;
    }
    int r = 2;
    for (size_t i = 1; i < tether_ir_tensor_elements(rq); i += 2) {
        const int32_t sh = ((const int32_t *)rq->data)[i];
        if (sh < -31 || sh > 30) {
            return 0;
        }
        if (sh > -1) {
            r = 1;
        }
    }
    return r;
}

typedef struct dw2 {
    long long PW2, PH2, NPOS, SP;
} dw2;

static void dw2_geo(const qg *q, dw2 *g) {
    g->PW2 = q->OW + (q->KW - 1) * q->DW / 2;
    g->PH2 = q->OH + (q->KH - 1) * q->DH / 2;
    g->NPOS = (q->OH * g->PW2 + DTILE - 1) / DTILE * DTILE;
    /* the farthest load: the last step's 16 lanes at the largest tap offset */
    g->SP = g->NPOS + (q->KH - 1) * q->DH / 2 * g->PW2 + (q->KW - 1) * q->DW / 2;
    if (g->SP < g->PH2 * g->PW2) {
        g->SP = g->PH2 * g->PW2;
    }
}

int tether__c_qdw2_x86_ok(const em *e, const tether_ir_node *nd, const qg *q) {
    if (q->G != q->C || q->O != q->C || q->SH != 2 || q->SW != 2 || q->KH * q->KW > 49 ||
        q->PT < 0 || q->PL < 0 || q->OH < 1 || q->OW < 1) {
        return 0;
    }
    dw2 g;
    dw2_geo(q, &g);
    return 4 * g.SP <= 16384 && dw2_rq(e, nd, q) != 0;
}

/* 16 bytes of 8-bit input widened to int16 */
static const char *widen16(const qg *q) {
    return strcmp(q->xt, "int8_t") == 0 ? "_mm256_cvtepi8_epi16" : "_mm256_cvtepu8_epi16";
}

/* 8 bytes of 8-bit input (the low half of an SSE register) widened to int16 */
static const char *widen8(const qg *q) {
    return strcmp(q->xt, "int8_t") == 0 ? "_mm_cvtepi8_epi16" : "_mm_cvtepu8_epi16";
}

static int32_t pair(int8_t a, int8_t b) {
    return (int32_t)((uint32_t)(uint16_t)(int16_t)a | ((uint32_t)(uint16_t)(int16_t)b << 16));
}

void tether__c_qdw2_x86(em *e, const tether_ir_node *nd, const kargs *k, const qg *q) {
    const int8_t *w = T(e, nd->inputs[1])->data;
    const long long K = q->KH * q->KW, NP = (K + 1) / 2;
    dw2 g;
    dw2_geo(q, &g);
    const int vec = dw2_rq(e, nd, q);
    line(e, "static const int32_t wq[%lld] = {", q->C * NP);
    e->depth++;
    for (long long c = 0; c < q->C; c++) {
        char buf[1024];
        size_t len = 0;
        for (long long t = 0; t < K && len + 16 < sizeof buf; t += 2) {
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%ld,", t ? " " : "",
                                    (long)pair(w[c * K + t], t + 1 < K ? w[c * K + t + 1] : 0));
        }
        line(e, "%s", buf);
    }
    e->depth--;
    line(e, "};");
    line(e, "#if defined(__AVX512VNNI__) && defined(__AVX512VL__)");
    line(e, "#define TGQ_DP(acc, x, w) _mm256_dpwssd_epi32((acc), (x), (w))");
    line(e, "#else");
    line(e, "#define TGQ_DP(acc, x, w) _mm256_add_epi32((acc), _mm256_madd_epi16((x), (w)))");
    line(e, "#endif");
    if (nd->ninputs > 4 && nd->inputs[4] >= 0) {
        line(e, "(void)%s; /* the weight zero point: 0 */", k->in[4]);
    }
    const char *zx = nd->ninputs > 3 && nd->inputs[3] >= 0 ? k->in[3] : NULL;
    const char *zy = nd->ninputs > 6 && nd->inputs[6] >= 0 ? k->in[6] : NULL;
    line(e, "const int32_t xz = %s%s%s, yz = %s%s%s;", zx ? "(int32_t)" : "0", zx ? zx : "",
         zx ? "[0]" : "", zy ? "(int32_t)" : "0", zy ? zy : "", zy ? "[0]" : "");
    line(e, "(void)%s; /* packed above (wq) */", k->in[1]);
    line(e,
         "const __m256i vlo = _mm256_set1_epi64x(%lldLL - yz), vhi = _mm256_set1_epi64x(%lldLL - "
         "yz), vzp = _mm256_set1_epi32(yz);",
         q->lo, q->hi);
    line(e, "int16_t ph[4][%lld]; /* the phase planes (row parity * 2 + column parity) */",
         g.SP + DTILE);
    line(e, "%s ob[%lld]; /* the output rows, PW2 wide */", q->yt, g.NPOS);
    line(e, "memset(ph, 0, sizeof ph);");
    line(e, "const __m256i dsel = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, "
            "13, 15, 0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);");
    line(e, "const __m256i vxz = _mm256_set1_epi16((int16_t)xz);");
    loop(e, "n", q->N);
    line(e, "for (int c = 0; c < %lld; ++c) {", q->C);
    e->depth++;
    const int bias = nd->ninputs > 2 && nd->inputs[2] >= 0;
    line(e, "const int32_t r = %s%s%s;", bias ? "(int32_t)" : "0", bias ? k->in[2] : "",
         !bias                                                 ? ""
         : tether_ir_tensor_elements(T(e, nd->inputs[2])) == 1 ? "[0]"
                                                               : "[c]");
    if (q->per_ch) {
        line(e, "const int32_t m = %s[2 * c], s = %s[2 * c + 1];", k->in[5], k->in[5]);
    } else {
        line(e, "const int32_t m = %s[0], s = %s[1];", k->in[5], k->in[5]);
    }
    line(e, "const __m256i mv = _mm256_set1_epi32(m), nv = _mm256_set1_epi64x(31 - s);");
    line(e, "const %s *restrict xc = %s + (n * %lld + c) * %lld;", q->xt, k->in[0], q->C,
         q->H * q->W);
    line(e, "const int32_t *restrict wv = wq + c * %lld;", NP);
    line(e, "%s *restrict yo = %s + (n * %lld + c) * %lld;", q->yt, k->out, q->O, q->OH * q->OW);
    /* phase (a, b) at (i, j) is the padded plane's (2i + a, 2j + b): input (ih, iw) goes to phase
     * ((ih + PT) & 1, (iw + PL) & 1) at ((ih + PT) >> 1, (iw + PL) >> 1); the positions no input
     * reaches stay 0 from the memset (the same positions are written for every channel). Each
     * row's even and odd columns split 32 bytes a step (in-lane shuffle, then the two halves). */
    const long long IHM = q->H < 2 * g.PH2 - q->PT ? q->H : 2 * g.PH2 - q->PT;
    const long long IWM = q->W < 2 * g.PW2 - q->PL ? q->W : 2 * g.PW2 - q->PL;
    line(e, "for (int ih = 0; ih < %lld; ++ih) {", IHM);
    e->depth++;
    line(e, "const int a = (ih + %lld) & 1, i = (ih + %lld) >> 1;", q->PT, q->PT);
    line(e, "int16_t *restrict pe = ph[a * 2 + %lld] + i * %lld + %lld;", q->PL & 1, g.PW2,
         q->PL >> 1);
    line(e, "int16_t *restrict po = ph[a * 2 + %lld] + i * %lld + %lld;", (q->PL + 1) & 1, g.PW2,
         (q->PL + 1) >> 1);
    line(e, "const %s *restrict xr = xc + ih * %lld;", q->xt, q->W);
    line(e, "int t = 0;");
    line(e, "for (; 2 * t + 32 <= %lld; t += 16) {", IWM);
    e->depth++;
    line(e, "const __m256i v = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(_mm256_loadu_si256("
            "(const __m256i *)(const void *)(xr + 2 * t)), dsel), 0xD8);");
    line(e,
         "_mm256_storeu_si256((__m256i *)(void *)(pe + t), _mm256_sub_epi16(%s(_mm256_castsi256_"
         "si128(v)), vxz));",
         widen16(q));
    line(e,
         "_mm256_storeu_si256((__m256i *)(void *)(po + t), _mm256_sub_epi16(%s(_mm256_"
         "extracti128_si256(v, 1)), vxz));",
         widen16(q));
    close_block(e);
    line(e, "if (2 * t + 16 <= %lld) {", IWM);
    e->depth++;
    line(e, "const __m128i v = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(xr "
            "+ 2 * t)), _mm256_castsi256_si128(dsel));");
    line(e,
         "_mm_storeu_si128((__m128i *)(void *)(pe + t), _mm_sub_epi16(%s(v), "
         "_mm256_castsi256_si128(vxz)));",
         widen8(q));
    line(e,
         "_mm_storeu_si128((__m128i *)(void *)(po + t), _mm_sub_epi16(%s(_mm_srli_si128(v, 8)), "
         "_mm256_castsi256_si128(vxz)));",
         widen8(q));
    line(e, "t += 8;");
    close_block(e);
    line(e, "for (; 2 * t + 2 <= %lld; ++t) {", IWM);
    line(e, "    pe[t] = (int16_t)((int32_t)xr[2 * t] - xz);");
    line(e, "    po[t] = (int16_t)((int32_t)xr[2 * t + 1] - xz);");
    line(e, "}");
    if (IWM % 2) {
        line(e, "pe[t] = (int16_t)((int32_t)xr[2 * t] - xz);");
    }
    close_block(e);
    line(e, "for (int p0 = 0; p0 < %lld; p0 += %d) {", g.NPOS, DTILE);
    e->depth++;
    line(e, "__m256i al = _mm256_set1_epi32(r), ah = al;");
    for (long long t = 0; t < K; t += 2) {
        line(e, "{");
        e->depth++;
        for (long long u = t; u < t + 2; u++) {
            const long long tt = u < K ? u : t; /* an odd last tap pairs with itself, weight 0 */
            const long long R = (tt / q->KW) * q->DH, C = (tt % q->KW) * q->DW;
            line(
                e,
                "const __m256i x%lld = _mm256_loadu_si256((const __m256i *)(const void *)(ph[%lld] "
                "+ p0 + %lld));",
                u - t, (R % 2) * 2 + C % 2, (R / 2) * g.PW2 + C / 2);
        }
        line(e, "const __m256i wp = _mm256_set1_epi32(wv[%lld]);", t / 2);
        line(e, "al = TGQ_DP(al, _mm256_unpacklo_epi16(x0, x1), wp);");
        line(e, "ah = TGQ_DP(ah, _mm256_unpackhi_epi16(x0, x1), wp);");
        close_block(e);
    }
    const char *st = strcmp(q->yt, "int8_t") == 0 ? "s" : "u", *rk = vec == 2 ? "k" : "";
    line(e,
         "tgq_st8%s(ob + p0, tgq_rq8%s(_mm256_permute2x128_si256(al, ah, 0x20), mv, nv, nv, "
         "vlo, vhi, vzp));",
         st, rk);
    line(e,
         "tgq_st8%s(ob + p0 + 8, tgq_rq8%s(_mm256_permute2x128_si256(al, ah, 0x31), mv, nv, "
         "nv, vlo, vhi, vzp));",
         st, rk);
    close_block(e);
    line(e, "for (int oh = 0; oh < %lld; ++oh) {", q->OH);
    line(e, "    memcpy(yo + oh * %lld, ob + oh * %lld, %lld);", q->OW, g.PW2, q->OW);
    line(e, "}");
    close_block(e);
    close_block(e);
    line(e, "#undef TGQ_DP");
}
