/*
 * The C emitter's x86-64 AVX2 pointwise qconv kernel for planes that 16-pixel tiles fit badly
 * (docs/quantization.md, "Kernels"): 1x1, stride 1, no padding, one group, a plane of P pixels
 * whose last 16-pixel tile would be more than 1/8 empty (MobileNet's 6x6 and 3x3 layers: P = 36
 * computed as 48 and P = 9 as 16 by emit_c_qx86.c's tiles). Vectorised over output channels
 * instead of pixels, so no lane is wasted on a missing pixel:
 *   - the input packed once per image as int32 pairs of channels (x[2k][p], x[2k+1][p]) as int16,
 *     pixel-major within each pair (xp[k * P + p]);
 *   - the weights packed at compile time as int16 channel pairs for blocks of 8 output channels
 *     (zero beyond O), in the order the kernel reads them (wp[(ob * K2 + k) * 8 + j]);
 *   - 2 blocks of 8 output channels x 4 pixels in 8 accumulators, one broadcast pair per pixel
 *     and VPMADDWD (VPDPWSSD under AVX-512 VNNI) per block; remainders 1 block and 1 pixel;
 *   - the input zero point folded into the bias (bias - x_zp * sum(w)), every accumulator
 *     requantized 8 channels at a time with per-lane multipliers and shifts (tgq_rq8,
 *     or tether__c_qrq_fn's choice when every shift is in -31..-1), the 8 bytes scattered to their
 * channel planes. Emitted inside `#if defined(__AVX2__)` by emit_c_qx86.c's dispatch (the portable
 * kernel in the #else).
 *
 * What must stay true: the int32 accumulators equal emit_c_quant.c's portable loop (products of
 * 8-bit values summed in int32), the requantization is tgq_requant's lane by lane, so outputs
 * equal the portable kernels' byte for byte (test_quant_x86); no float arithmetic; no read or
 * write outside the tensors (tails go through the scalar remainders, never a wide load).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c_qconv.h"

#define PWX       4                      /* pixels per step */
#define TILE16(p) (((p) + 15) / 16 * 16) /* emit_c_qx86.c's tiles over p pixels */

/* whether the requantization vectorises: 0 no, 1 tgq_rq8 (shifts -31..30), 2 tgq_rq8k (-31..-1) */
static int pw_rq(const em *e, const tether_ir_node *nd, const qg *q) {
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

int tether__c_qpw_x86_ok(const em *e, const tether_ir_node *nd, const qg *q) {
    const long long P = q->OH * q->OW, K2 = (q->C + 1) / 2, tail = (TILE16(P)) - P;
    if (q->G != 1 || q->KH != 1 || q->KW != 1 || q->SH != 1 || q->SW != 1 || q->PT != 0 ||
        q->PL != 0 || q->OH != q->H || q->OW != q->W || P < 1) {
        return 0;
    }
    /* the last tile more than 1/8 empty; the packed input on the stack (<= 64 KiB) */
    return tail * 8 > P && K2 * P <= 16384 && pw_rq(e, nd, q) != 0;
}

/* `(int32_t)in[i][c]` (a one-element tensor: [0]), or 0 when input i is absent */
static int32_t pair(int8_t a, int8_t b) {
    return (int32_t)((uint32_t)(uint16_t)(int16_t)a | ((uint32_t)(uint16_t)(int16_t)b << 16));
}

/* nb blocks of 8 output channels (from block `ob`) x np pixels (from pixel `p`): accumulate over
 * every channel pair, requantize, scatter */
static void block(em *e, const qg *q, const char *rqf, int nb, int np) {
    const long long P = q->OH * q->OW, K2 = (q->C + 1) / 2;
    line(e, "{");
    e->depth++;
    for (int b = 0; b < nb; b++) {
        line(e, "const int32_t *restrict w%d = wp + (ob + %d) * %lld;", b, b, K2 * 8);
        line(e,
             "const __m256i b%d = _mm256_loadu_si256((const __m256i *)(const void *)(bq + (ob + "
             "%d) * 8));",
             b, b);
        for (int i = 0; i < np; i++) {
            line(e, "__m256i a%d%d = b%d;", b, i, b);
        }
    }
    line(e, "const int32_t *restrict xq = xp + p;");
    line(e, "for (int kp = 0; kp < %lld; ++kp) {", K2);
    e->depth++;
    for (int b = 0; b < nb; b++) {
        line(e,
             "const __m256i v%d = _mm256_loadu_si256((const __m256i *)(const void *)(w%d + kp * "
             "8));",
             b, b);
    }
    for (int i = 0; i < np; i++) {
        line(e, "{");
        line(e, "    const __m256i x = _mm256_set1_epi32(xq[kp * %lld + %d]);", P, i);
        for (int b = 0; b < nb; b++) {
            line(e, "    a%d%d = TGQ_DP(a%d%d, x, v%d);", b, i, b, i, b);
        }
        line(e, "}");
    }
    close_block(e);
    for (int b = 0; b < nb; b++) {
        line(e, "{");
        e->depth++;
        line(e, "const int o0 = (ob + %d) * 8;", b);
        line(e, "const __m256i mv = _mm256_loadu_si256((const __m256i *)(const void *)(mq + o0));");
        line(e, "const __m256i ne = _mm256_loadu_si256((const __m256i *)(const void *)(nq + o0)), "
                "no = _mm256_loadu_si256((const __m256i *)(const void *)(nq + o0 + 4));");
        for (int i = 0; i < np; i++) {
            line(e, "tgq_st8%s(t, %s(a%d%d, mv, ne, no, vlo, vhi, vzp));",
                 strcmp(q->yt, "int8_t") == 0 ? "s" : "u", rqf, b, i);
            line(e, "for (int j = 0; j < 8 && o0 + j < %lld; ++j) {", q->O);
            line(e, "    yn[(o0 + j) * %lld + p + %d] = t[j];", P, i);
            line(e, "}");
        }
        close_block(e);
    }
    close_block(e);
}

void tether__c_qpw_x86(em *e, const tether_ir_node *nd, const kargs *k, const qg *q) {
    const int8_t *w = T(e, nd->inputs[1])->data;
    const long long C = q->C, O = q->O, P = q->OH * q->OW, K2 = (C + 1) / 2, OB = (O + 7) / 8;
    const char *rqf = pw_rq(e, nd, q) == 2 ? tether__c_qrq_fn(e, nd, q) : "tgq_rq8";
    int32_t *wp = calloc((size_t)(OB * K2 * 8), sizeof(int32_t));
    int32_t *ws = calloc((size_t)O, sizeof(int32_t));
    if (!wp || !ws) {
        free(wp);
        free(ws);
        e->s.failed = 1;
        return;
    }
    for (long long o = 0; o < O; o++) {
        for (long long kp = 0; kp < K2; kp++) {
            const int8_t a = w[o * C + 2 * kp], b = 2 * kp + 1 < C ? w[o * C + 2 * kp + 1] : 0;
            wp[((o / 8) * K2 + kp) * 8 + o % 8] = pair(a, b);
        }
        for (long long c = 0; c < C; c++) {
            ws[o] += w[o * C + c];
        }
    }
    tether__c_qx86_table(e, "wp", wp, OB * K2 * 8);
    tether__c_qx86_table(e, "ws", ws, O);
    free(wp);
    free(ws);
    tether__c_qx86_madd_macro(e);
    char bias[96];
    tether__c_qx86_zero_points(e, nd, k, q);
    line(e, "(void)%s; /* packed above (wp) */", k->in[1]);
    /* per output channel (the block's padding repeats the last channel): the folded bias, the
     * multiplier, and n = 31 - shift as 64-bit lanes, even lanes of each block then odd ones */
    line(e, "int32_t bq[%lld], mq[%lld];", OB * 8, OB * 8);
    line(e, "long long nq[%lld];", OB * 8);
    line(e, "for (int o = 0; o < %lld; ++o) {", OB * 8);
    e->depth++;
    line(e, "const int oc = o < %lld ? o : %lld;", O, O - 1);
    tether__c_qx86_param(e, nd, k, 2, "oc", bias, sizeof bias);
    line(e, "bq[o] = %s - xz * ws[oc];", bias);
    if (q->per_ch) {
        line(e, "const int32_t m = %s[2 * oc], s = %s[2 * oc + 1];", k->in[5], k->in[5]);
    } else {
        line(e, "const int32_t m = %s[0], s = %s[1];", k->in[5], k->in[5]);
    }
    line(e, "mq[o] = m;");
    line(e, "nq[(o & ~7) + (o & 1) * 4 + (o & 7) / 2] = 31 - s;");
    close_block(e);
    line(e, "int32_t xp[%lld]; /* channel pairs x pixels */", K2 * P);
    line(e, "%s t[8];", q->yt);
    loop(e, "n", q->N);
    line(e, "const %s *restrict xn = %s + n * %lld;", q->xt, k->in[0], C * P);
    line(e, "%s *restrict yn = %s + n * %lld;", q->yt, k->out, O * P);
    line(e, "for (int kp = 0; kp < %lld; ++kp) {", K2);
    line(e, "    for (int p = 0; p < %lld; ++p) {", P);
    line(e, "        const int32_t lo = (int32_t)xn[2 * kp * %lld + p];", P);
    line(e,
         "        const int32_t hi = 2 * kp + 1 < %lld ? (int32_t)xn[(2 * kp + 1) * %lld + p] : 0;",
         C, P);
    line(e,
         "        xp[kp * %lld + p] = (int32_t)((uint32_t)(uint16_t)lo | ((uint32_t)(uint16_t)hi "
         "<< 16));",
         P);
    line(e, "    }");
    line(e, "}");
    const long long P4 = P / PWX * PWX;
    if (OB >= 2) {
        line(e, "for (int ob = 0; ob + 1 < %lld; ob += 2) {", OB);
        e->depth++;
        if (P4) {
            line(e, "for (int p = 0; p < %lld; p += %d) {", P4, PWX);
            e->depth++;
            block(e, q, rqf, 2, PWX);
            close_block(e);
        }
        if (P4 < P) {
            line(e, "for (int p = %lld; p < %lld; ++p) {", P4, P);
            e->depth++;
            block(e, q, rqf, 2, 1);
            close_block(e);
        }
        close_block(e);
    }
    if (OB % 2) {
        line(e, "{");
        e->depth++;
        line(e, "const int ob = %lld;", OB - 1);
        if (P4) {
            line(e, "for (int p = 0; p < %lld; p += %d) {", P4, PWX);
            e->depth++;
            block(e, q, rqf, 1, PWX);
            close_block(e);
        }
        if (P4 < P) {
            line(e, "for (int p = %lld; p < %lld; ++p) {", P4, P);
            e->depth++;
            block(e, q, rqf, 1, 1);
            close_block(e);
        }
        close_block(e);
    }
    close_block(e);
    line(e, "#undef TGQ_DP");
}
