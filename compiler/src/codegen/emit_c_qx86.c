/*
 * The C emitter's x86-64 qconv kernels (docs/quantization.md, "Kernels"): AVX2 code emitted
 * inside `#if defined(__AVX2__)` (the target's -march: x86-64-v3 and up, from the device's HELLO
 * `cpu`), the portable kernels of emit_c_qfast.c / emit_c_qpatch.c in the `#else`. For 8-bit
 * inputs, constant int8 weights with weight zero point 0 and a requantized 8-bit output:
 *   - one group with 1 to 4 input channels where the row kernel below does not take the layer:
 *     emit_c_qc1_x86.c;
 *   - pointwise on planes that 16-pixel tiles fit badly (the last tile more than 1/8 empty:
 *     MobileNet's 6x6 and 3x3): emit_c_qpw_x86.c, vectorised over output channels;
 *   - depthwise with 16 channels or more and output rows under 16 pixels: emit_c_qdwc_x86.c,
 *     the channels in the lanes (tried first for depthwise layers);
 *   - depthwise with column stride 2: emit_c_qdw2_x86.c (tried next);
 *   - one group, stride 1 along W, a window wider than 1x1, output rows of 16 or more: per output
 *     row the KH input rows it reads packed once as int16 pairs of channels (x - x_zp, zeros as
 *     padding) on the stack, then 16 pixels x 4 output channels a step over (kh, kw, channel
 *     pair) with VPMADDWD, the accumulators starting at the bias (row_tiles);
 *   - one group otherwise (pointwise and any window): tiles of 16 output pixels packed as
 *     int16 pairs of reduction taps (channel, kh, kw), padding filled with the input zero point
 *     (pixels whose window lies inside the plane copied without bounds checks);
 *     blocks of 4 output channels x 16 pixels in 8 accumulators, VPMADDWD on the int16 pairs
 *     (exact: two products of 8-bit values summed in int32), weights packed at compile time as
 *     int16 pairs per block of 4 output channels (zero beyond O); pointwise layers pack with
 *     vector loads, a plane's last tile moved back to end at the plane's end (no partial tile);
 *   - depthwise stride 1 on planes of up to 8,192 values (tried before the row kernel below;
 *     DS-CNN's 5-wide rows, MobileNet's 48x48): the channel in a zero-bordered int16 plane
 *     (filled 8 values a step), 16 flat positions a step (the border columns computed and
 *     dropped; no scalar border loop);
 *   - depthwise layers none of the plane kernels take (stride 1 or 2, up to 49 taps): 16
 *     output pixels of a row a step, taps in pairs interleaved into VPMADDWD; rows and columns
 *     whose window crosses the padding use the bounded scalar loop.
 * With AVX-512 VNNI (__AVX512VNNI__ and __AVX512VL__: -mavx512vnni) the multiply-add pairs are
 * VPDPWSSD, the same sums in one instruction. The input zero point is folded into the bias
 * (bias - x_zp * sum(w), the sums a compile-time table): padding holds x_zp, so its products
 * cancel. Full tiles requantize 8 outputs at a time (emit_c_quant.c: tgq_rq8k, the rounding
 * sum in 64-bit lanes and the shift and clamp in 32-bit lanes, when every shift is in -31..-1;
 * tgq_rq8, all in 64-bit lanes, when every shift is in -31..30; both equal tgq_requant; or
 * tgq_rq8h / tgq_rq8hs where emit_c_qrq_x86.c proves no accumulator is an exact tie);
 * the tile kernel's partial tiles too (into a buffer, the existing outputs copied), the other
 * kernels' partial ones per element.
 *
 * What must stay true: every path's int32 accumulator equals emit_c_quant.c's portable loop
 * (int32 wrap-around in the vector sums gives the exact value whenever the true sum fits int32,
 * as the portable loop assumes), so outputs equal the portable kernels' byte for byte
 * (test_quant_x86 compares both builds); no float arithmetic; no read outside the input tensor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c_qconv.h"
#include "tether/crt/dtype.h"

#define TILE 16 /* output pixels per tile */

void tether__c_qx86_param(const em *e, const tether_ir_node *nd, const kargs *k, int i,
                          const char *c, char *out, size_t n) {
    if (i >= nd->ninputs || nd->inputs[i] < 0) {
        snprintf(out, n, "0");
        return;
    }
    snprintf(out, n, "(int32_t)%s[%s]", k->in[i],
             tether_ir_tensor_elements(T(e, nd->inputs[i])) == 1 ? "0" : c);
}

/* A static const int32_t table of n values, 12 a line. */
void tether__c_qx86_table(em *e, const char *name, const int32_t *v, long long n) {
    line(e, "static const int32_t %s[%lld] = {", name, n);
    e->depth++;
    char buf[256];
    size_t len = 0;
    for (long long i = 0; i < n; i++) {
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%ld,", len ? " " : "", (long)v[i]);
        if ((i + 1) % 12 == 0 || i + 1 == n) {
            line(e, "%s", buf);
            len = 0;
        }
    }
    e->depth--;
    line(e, "};");
}

static int32_t pair(int8_t a, int8_t b) {
    return (int32_t)((uint32_t)(uint16_t)(int16_t)a | ((uint32_t)(uint16_t)(int16_t)b << 16));
}

/* The multiply-add of int16 pairs: acc + madd(x, w). */
void tether__c_qx86_madd_macro(em *e) {
    line(e, "#if defined(__AVX512VNNI__) && defined(__AVX512VL__)");
    line(e, "#define TGQ_DP(acc, x, w) _mm256_dpwssd_epi32((acc), (x), (w))");
    line(e, "#else");
    line(e, "#define TGQ_DP(acc, x, w) _mm256_add_epi32((acc), _mm256_madd_epi16((x), (w)))");
    line(e, "#endif");
}

static void prologue(em *e, const tether_ir_node *nd, const kargs *k) {
    char xz[96], yz[96];
    if (nd->ninputs > 4 && nd->inputs[4] >= 0) {
        line(e, "(void)%s; /* the weight zero point: 0 */", k->in[4]);
    }
    tether__c_qx86_param(e, nd, k, 3, "0", xz, sizeof xz);
    tether__c_qx86_param(e, nd, k, 6, "0", yz, sizeof yz);
    line(e, "const int32_t xz = %s, yz = %s;", xz, yz);
}

static void chan_rq(em *e, const kargs *k, const qg *q, const char *c) {
    if (q->per_ch) {
        line(e, "const int32_t m = %s[2 * (%s)], s = %s[2 * (%s) + 1];", k->in[5], c, k->in[5], c);
    } else {
        line(e, "const int32_t m = %s[0], s = %s[1];", k->in[5], k->in[5]);
    }
}

/* Whether the requantization vectorises: 0 no; 1 tgq_rq8 (constant, every shift in -31..30: n =
 * 31 - shift in 1..62, an 8-bit output); 2 tgq_rq8k (every shift in -31..-1 as well). */
int tether__c_qrq_vec(const em *e, const tether_ir_node *nd, const qg *q) {
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

/* The vector clamp and zero point of tgq_rq8 (after prologue's yz). */
static void rq_consts(em *e, const qg *q) {
    line(e,
         "const __m256i vlo = _mm256_set1_epi64x(%lldLL - yz), vhi = _mm256_set1_epi64x(%lldLL - "
         "yz), vzp = _mm256_set1_epi32(yz);",
         q->lo, q->hi);
}

void tether__c_qx86_zero_points(em *e, const tether_ir_node *nd, const kargs *k, const qg *q) {
    prologue(e, nd, k);
    rq_consts(e, q);
}

/* 8 requantized outputs of one channel (m, s in scope) from the vector v into dst */
static void rq_store8(em *e, const qg *q, const char *fn, const char *dst, const char *v) {
    line(e, "tgq_st8%s(%s, %s(%s, mv, nv, nv, vlo, vhi, vzp));",
         strcmp(q->yt, "int8_t") == 0 ? "s" : "u", dst, fn, v);
}

/* 16 bytes of 8-bit input at p widened to int16 */
static const char *widen(const qg *q) {
    return strcmp(q->xt, "int8_t") == 0 ? "_mm256_cvtepi8_epi16" : "_mm256_cvtepu8_epi16";
}

/* one group: packed tiles x blocks of 4 output channels */
static void gemm_tiles(em *e, const tether_ir_node *nd, const kargs *k, const qg *q) {
    const int8_t *w = T(e, nd->inputs[1])->data;
    long long K = q->C * q->KH * q->KW, K2 = (K + 1) / 2, OB = (q->O + 3) / 4;
    long long P = q->OH * q->OW, HW = q->H * q->W;
    int pw = q->KH == 1 && q->KW == 1 && q->SH == 1 && q->SW == 1 && q->PT == 0 && q->PL == 0 &&
             q->OH == q->H && q->OW == q->W;
    int32_t *wp = calloc((size_t)(OB * K2 * 4), sizeof(int32_t));
    int32_t *ws = calloc((size_t)q->O, sizeof(int32_t));
    if (!wp || !ws) {
        free(wp);
        free(ws);
        e->s.failed = 1;
        return;
    }
    for (long long oc = 0; oc < q->O; oc++) {
        for (long long kp = 0; kp < K2; kp++) {
            int8_t a = w[oc * K + 2 * kp], b = 2 * kp + 1 < K ? w[oc * K + 2 * kp + 1] : 0;
            wp[((oc / 4) * K2 + kp) * 4 + oc % 4] = pair(a, b);
        }
        for (long long i = 0; i < K; i++) {
            ws[oc] += w[oc * K + i];
        }
    }
    tether__c_qx86_table(e, "wp", wp, OB * K2 * 4);
    tether__c_qx86_table(e, "ws", ws, q->O);
    free(wp);
    free(ws);
    tether__c_qx86_madd_macro(e);
    prologue(e, nd, k);
    line(e, "(void)%s; /* packed above (wp) */", k->in[1]);
    if (tether__c_qrq_vec(e, nd, q)) {
        rq_consts(e, q);
    }
    line(e, "int16_t ps[%lld]; /* the tile: tap pairs x 16 pixels, int16 pairs */", K2 * 32);
    line(e, "int32_t acc[4][%d];", TILE);
    line(e, "%s tq[4][%d]; /* a partial tile, requantized */", q->yt, TILE);
    loop(e, "n", q->N);
    line(e, "const %s *restrict xn = %s + n * %lld;", q->xt, k->in[0], q->C * HW);
    line(e, "%s *restrict yn = %s + n * %lld;", q->yt, k->out, q->O * P);
    /* a pointwise plane of 16 pixels or more has no partial tile: its last tile is moved back to
     * end at the plane's end (the overlap computed twice, the same bytes stored twice), so no
     * scalar pack is emitted (gcc 13 reasons about the unreachable branch's pixel range and
     * rejects it under -Werror with "iteration 15 invokes undefined behavior") */
    const int full = pw && P >= TILE;
    line(e, "for (int pt = 0; pt < %lld; pt += %d) {", P, TILE);
    e->depth++;
    if (full && P % TILE) {
        line(e, "const int p0 = pt + %d > %lld ? %lld : pt;", TILE, P, P - TILE);
    } else {
        line(e, "const int p0 = pt;");
    }
    if (pw) {
        if (full) {
            line(e, "{");
        } else {
            line(e, "if (p0 + %d <= %lld) {", TILE, P);
        }
        e->depth++;
        line(e, "for (int kp = 0; kp < %lld; ++kp) {", K2);
        e->depth++;
        line(e,
             "const __m256i v0 = %s(_mm_loadu_si128((const __m128i *)(xn + 2 * kp * %lld + "
             "p0)));",
             widen(q), HW);
        line(e,
             "const __m256i v1 = 2 * kp + 1 < %lld ? %s(_mm_loadu_si128((const __m128i *)(xn "
             "+ (2 * kp + 1) * %lld + p0))) : _mm256_setzero_si256();",
             K, widen(q), HW);
        line(e, "const __m256i lo = _mm256_unpacklo_epi16(v0, v1), hi = "
                "_mm256_unpackhi_epi16(v0, v1);");
        line(e, "_mm256_storeu_si256((__m256i *)(ps + kp * 32), _mm256_permute2x128_si256(lo, hi, "
                "0x20));");
        line(e, "_mm256_storeu_si256((__m256i *)(ps + kp * 32 + 16), _mm256_permute2x128_si256(lo, "
                "hi, 0x31));");
        close_block(e);
        e->depth--;
        line(e, full ? "}" : "} else {");
        e->depth += !full;
    }
    if (!full) {
        /* the scalar pack: pixel i of the tile, tap t at ps[((t / 2) * 16 + i) * 2 + t % 2] */
        line(e, "for (int i = 0; i < %d; ++i) {", TILE);
        e->depth++;
        line(e, "const int p = p0 + i, ok = p < %lld;", P);
        line(e, "const int ih0 = (p / %lld) * %lld - %lld, iw0 = (p %% %lld) * %lld - %lld;", q->OW,
             q->SH, q->PT, q->OW, q->SW, q->PL);
        /* a window inside the plane: no bounds checks, the tap offsets constant */
        line(e, "if (ok && ih0 >= 0 && ih0 + %lld < %lld && iw0 >= 0 && iw0 + %lld < %lld) {",
             (q->KH - 1) * q->DH, q->H, (q->KW - 1) * q->DW, q->W);
        e->depth++;
        line(e, "const %s *restrict xw = xn + ih0 * %lld + iw0;", q->xt, q->W);
        line(e, "int16_t *restrict pi = ps + i * 2;");
        line(e, "for (int c = 0; c < %lld; ++c) {", q->C);
        line(e, "    for (int kh = 0; kh < %lld; ++kh) {", q->KH);
        line(e, "        for (int kw = 0; kw < %lld; ++kw) {", q->KW);
        line(e, "            const int t = (c * %lld + kh) * %lld + kw;", q->KH, q->KW);
        line(e,
             "            pi[(t >> 1) * %d + (t & 1)] = (int16_t)xw[(c * %lld + kh * %lld) * %lld "
             "+ kw "
             "* %lld];",
             TILE * 2, q->H, q->DH, q->W, q->DW);
        line(e, "        }");
        line(e, "    }");
        line(e, "}");
        if (K % 2) {
            line(e, "ps[((%lld >> 1) * %d + i) * 2 + 1] = 0;", K, TILE);
        }
        line(e, "continue;");
        close_block(e);
        line(e, "int t = 0;");
        line(e, "for (int c = 0; c < %lld; ++c) {", q->C);
        line(e, "    for (int kh = 0; kh < %lld; ++kh) {", q->KH);
        line(e, "        const int ih = ih0 + kh * %lld;", q->DH);
        line(e, "        for (int kw = 0; kw < %lld; ++kw, ++t) {", q->KW);
        line(e, "            const int iw = iw0 + kw * %lld;", q->DW);
        line(e,
             "            ps[((t >> 1) * %d + i) * 2 + (t & 1)] = (int16_t)(ok && ih >= 0 && ih < "
             "%lld && iw >= 0 && iw < %lld ? (int32_t)xn[(c * %lld + ih) * %lld + iw] : xz);",
             TILE, q->H, q->W, q->H, q->W);
        line(e, "        }");
        line(e, "    }");
        line(e, "}");
        if (K % 2) {
            line(e, "ps[((t >> 1) * %d + i) * 2 + 1] = 0;", TILE);
        }
        close_block(e);
        if (pw) {
            close_block(e);
        }
    }
    line(e, "for (int ob = 0; ob < %lld; ++ob) {", OB);
    e->depth++;
    line(e, "const int32_t *restrict wb = wp + ob * %lld;", K2 * 4);
    for (int j = 0; j < 4; j++) {
        line(e, "const int o%d = ob * 4 + %d < %lld ? ob * 4 + %d : %lld;", j, j, q->O, j,
             q->O - 1);
        char b[96], c[16];
        snprintf(c, sizeof c, "o%d", j);
        tether__c_qx86_param(e, nd, k, 2, c, b, sizeof b);
        line(e, "__m256i a%d0 = _mm256_set1_epi32(%s - xz * ws[o%d]), a%d1 = a%d0;", j, b, j, j, j);
    }
    line(e, "for (int kp = 0; kp < %lld; ++kp) {", K2);
    e->depth++;
    line(e, "const __m256i x0 = _mm256_loadu_si256((const __m256i *)(ps + kp * 32));");
    line(e, "const __m256i x1 = _mm256_loadu_si256((const __m256i *)(ps + kp * 32 + 16));");
    for (int j = 0; j < 4; j++) {
        line(e, "{");
        line(e, "    const __m256i wv = _mm256_set1_epi32(wb[kp * 4 + %d]);", j);
        line(e, "    a%d0 = TGQ_DP(a%d0, x0, wv);", j, j);
        line(e, "    a%d1 = TGQ_DP(a%d1, x1, wv);", j, j);
        line(e, "}");
    }
    close_block(e);
    int vec = tether__c_qrq_vec(e, nd, q);
    if (vec) {
        /* a partial tile or channel block requantizes in vectors too, into tq, then copies the
         * outputs that exist (the clamped channels o1..o3 repeat a real one) */
        line(e, "{");
        e->depth++;
        line(e, "const int full = p0 + %d <= %lld && ob * 4 + 3 < %lld;", TILE, P, q->O);
        for (int j = 0; j < 4; j++) {
            char c[16], d[64], v[16];
            snprintf(c, sizeof c, "o%d", j);
            line(e, "{");
            e->depth++;
            chan_rq(e, k, q, c);
            line(e, "const __m256i mv = _mm256_set1_epi32(m), nv = _mm256_set1_epi64x(31 - s);");
            line(e, "%s *restrict d = full ? yn + o%d * %lld + p0 : tq[%d];", q->yt, j, P, j);
            snprintf(d, sizeof d, "d");
            snprintf(v, sizeof v, "a%d0", j);
            rq_store8(e, q, tether__c_qrq_fn(e, nd, q), d, v);
            snprintf(d, sizeof d, "d + 8");
            snprintf(v, sizeof v, "a%d1", j);
            rq_store8(e, q, tether__c_qrq_fn(e, nd, q), d, v);
            close_block(e);
        }
        line(e, "if (!full) {");
        line(e, "    for (int j = 0; j < 4 && ob * 4 + j < %lld; ++j) {", q->O);
        line(e, "        for (int i = 0; i < %d && p0 + i < %lld; ++i) {", TILE, P);
        line(e, "            yn[(ob * 4 + j) * %lld + p0 + i] = tq[j][i];", P);
        line(e, "        }");
        line(e, "    }");
        line(e, "}");
        line(e, "continue;");
        close_block(e);
    }
    for (int j = 0; j < 4; j++) {
        line(e, "_mm256_storeu_si256((__m256i *)acc[%d], a%d0);", j, j);
        line(e, "_mm256_storeu_si256((__m256i *)(acc[%d] + 8), a%d1);", j, j);
    }
    line(e, "for (int j = 0; j < 4 && ob * 4 + j < %lld; ++j) {", q->O);
    e->depth++;
    line(e, "const int oc = ob * 4 + j;");
    chan_rq(e, k, q, "oc");
    line(e, "%s *restrict yo = yn + oc * %lld + p0;", q->yt, P);
    line(e, "for (int i = 0; i < %d && p0 + i < %lld; ++i) {", TILE, P);
    e->depth++;
    tether__c_qstore(e, q, "yo[i]", "acc[j][i]", "m", "s");
    close_block(e);
    close_block(e);
    close_block(e);
    close_block(e);
    close_block(e);
    line(e, "#undef TGQ_DP");
}

/* one group, stride 1 along W, a window wider than 1x1: the row kernel's padded row width (16-pixel
 * tiles of the output row plus the window's reach), 0 when it does not take q (rows of KH x channel
 * pairs on the stack, <= 64 KiB; output rows of 16 pixels or more) */
static long long row_width(const qg *q) {
    if (q->G != 1 || q->SW != 1 || q->KH * q->KW < 2 || q->OW < TILE) {
        return 0;
    }
    long long wp = (q->OW + TILE - 1) / TILE * TILE + (q->KW - 1) * q->DW;
    if (wp < q->PL + q->W) {
        wp = q->PL + q->W;
    }
    return q->KH * ((q->C + 1) / 2) * wp * 4 <= 65536 ? wp : 0;
}

/* one group, stride 1 along W: per output row, the KH input rows it reads packed once as int16
 * pairs of channels (x - x_zp, zero padding), then 16 pixels x 4 output channels a step with
 * VPMADDWD over (kh, kw, channel pair); no per-pixel gather */
static void row_tiles(em *e, const tether_ir_node *nd, const kargs *k, const qg *q, long long WP) {
    const int8_t *w = T(e, nd->inputs[1])->data;
    long long C2 = (q->C + 1) / 2, KK = q->KH * q->KW, OB = (q->O + 3) / 4, HW = q->H * q->W;
    long long P = q->OH * q->OW, KP = KK * C2;
    int32_t *wp = calloc((size_t)(OB * KP * 4), sizeof(int32_t));
    if (!wp) {
        e->s.failed = 1;
        return;
    }
    /* wp[((ob * KK + kh * KW + kw) * C2 + cp) * 4 + oc % 4]: channels 2cp, 2cp+1 of tap (kh, kw) */
    for (long long oc = 0; oc < q->O; oc++) {
        for (long long t = 0; t < KK; t++) {
            for (long long cp = 0; cp < C2; cp++) {
                int8_t a = w[(oc * q->C + 2 * cp) * KK + t],
                       b = 2 * cp + 1 < q->C ? w[(oc * q->C + 2 * cp + 1) * KK + t] : 0;
                wp[(((oc / 4) * KK + t) * C2 + cp) * 4 + oc % 4] = pair(a, b);
            }
        }
    }
    tether__c_qx86_table(e, "wp", wp, OB * KP * 4);
    free(wp);
    tether__c_qx86_madd_macro(e);
    prologue(e, nd, k);
    line(e, "(void)%s; /* packed above (wp) */", k->in[1]);
    int vec = tether__c_qrq_vec(e, nd, q);
    if (vec) {
        rq_consts(e, q);
    }
    line(e, "int32_t rows[%lld]; /* KH rows x channel pairs x %lld columns: (x - xz) pairs */",
         q->KH * C2 * WP, WP);
    line(e, "int32_t acc[4][%d];", TILE);
    line(e, "const __m256i vxz = _mm256_set1_epi16((int16_t)xz);");
    line(e, "memset(rows, 0, sizeof rows);");
    loop(e, "n", q->N);
    line(e, "const %s *restrict xn = %s + n * %lld;", q->xt, k->in[0], q->C * HW);
    line(e, "%s *restrict yn = %s + n * %lld;", q->yt, k->out, q->O * P);
    loop(e, "oh", q->OH);
    /* the pack of the KH rows */
    line(e, "for (int kh = 0; kh < %lld; ++kh) {", q->KH);
    e->depth++;
    line(e, "const int ih = oh * %lld - %lld + kh * %lld, in = ih >= 0 && ih < %lld;", q->SH, q->PT,
         q->DH, q->H);
    line(e, "for (int cp = 0; cp < %lld; ++cp) {", C2);
    e->depth++;
    line(e, "int32_t *restrict d = rows + (kh * %lld + cp) * %lld + %lld;", C2, WP, q->PL);
    line(e, "const %s *restrict a = xn + (2 * cp * %lld + (in ? ih : 0)) * %lld;", q->xt, q->H,
         q->W);
    line(e, "const int two = 2 * cp + 1 < %lld;", q->C);
    line(e, "int iw = 0;");
    line(e, "if (in && two) {");
    e->depth++;
    line(e, "for (; iw + 16 <= %lld; iw += 16) {", q->W);
    e->depth++;
    line(e,
         "const __m256i v0 = _mm256_sub_epi16(%s(_mm_loadu_si128((const __m128i *)(const void "
         "*)(a + iw))), vxz);",
         widen(q));
    line(e,
         "const __m256i v1 = _mm256_sub_epi16(%s(_mm_loadu_si128((const __m128i *)(const void "
         "*)(a + %lld + iw))), vxz);",
         widen(q), HW);
    line(e,
         "const __m256i lo = _mm256_unpacklo_epi16(v0, v1), hi = _mm256_unpackhi_epi16(v0, v1);");
    line(e, "_mm256_storeu_si256((__m256i *)(void *)(d + iw), _mm256_permute2x128_si256(lo, hi, "
            "0x20));");
    line(e, "_mm256_storeu_si256((__m256i *)(void *)(d + iw + 8), _mm256_permute2x128_si256(lo, "
            "hi, 0x31));");
    close_block(e);
    close_block(e);
    line(e, "for (; iw < %lld; ++iw) {", q->W);
    line(e,
         "    const int32_t lo = in ? (int32_t)a[iw] - xz : 0, hi = in && two ? (int32_t)a[%lld + "
         "iw] - xz : 0;",
         HW);
    line(e,
         "    d[iw] = (int32_t)((uint32_t)(uint16_t)(int16_t)lo | ((uint32_t)(uint16_t)(int16_t)hi "
         "<< 16));");
    line(e, "}");
    close_block(e);
    close_block(e);
    /* the tiles */
    line(e, "for (int ob = 0; ob < %lld; ++ob) {", OB);
    e->depth++;
    line(e, "const int32_t *restrict wb = wp + ob * %lld;", KP * 4);
    for (int j = 0; j < 4; j++) {
        line(e, "const int o%d = ob * 4 + %d < %lld ? ob * 4 + %d : %lld;", j, j, q->O, j,
             q->O - 1);
    }
    line(e, "for (int ow0 = 0; ow0 < %lld; ow0 += %d) {", q->OW, TILE);
    e->depth++;
    for (int j = 0; j < 4; j++) {
        char b[96], c[16];
        snprintf(c, sizeof c, "o%d", j);
        tether__c_qx86_param(e, nd, k, 2, c, b, sizeof b);
        line(e, "__m256i a%d0 = _mm256_set1_epi32(%s), a%d1 = a%d0;", j, b, j, j);
    }
    line(e, "for (int kh = 0; kh < %lld; ++kh) {", q->KH);
    line(e, "    for (int kw = 0; kw < %lld; ++kw) {", q->KW);
    e->depth += 2;
    line(e, "const int32_t *restrict xr = rows + kh * %lld + ow0 + kw * %lld;", C2 * WP, q->DW);
    line(e, "const int32_t *restrict wt = wb + (kh * %lld + kw) * %lld;", q->KW, C2 * 4);
    line(e, "for (int cp = 0; cp < %lld; ++cp) {", C2);
    e->depth++;
    line(e,
         "const __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(xr + cp * "
         "%lld));",
         WP);
    line(e,
         "const __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(xr + cp * %lld "
         "+ 8));",
         WP);
    for (int j = 0; j < 4; j++) {
        line(e, "{");
        line(e, "    const __m256i wv = _mm256_set1_epi32(wt[cp * 4 + %d]);", j);
        line(e, "    a%d0 = TGQ_DP(a%d0, x0, wv);", j, j);
        line(e, "    a%d1 = TGQ_DP(a%d1, x1, wv);", j, j);
        line(e, "}");
    }
    /* keeps the 8 accumulators in registers (as emit_c_qmm_x86.c's kernel): without it gcc 12
     * kept one on the stack, chaining every channel pair through a store and a reload */
    if (C2 > 1) { /* one channel pair (a first layer): nothing to spill, and the barrier
                   * would only stop gcc scheduling the taps */
        line(e, "#if defined(__GNUC__)");
        line(e, "__asm__(\"\" : \"+x\"(a00), \"+x\"(a01), \"+x\"(a10), \"+x\"(a11), \"+x\"(a20), "
                "\"+x\"(a21), \"+x\"(a30), \"+x\"(a31));");
        line(e, "#endif");
    }
    close_block(e);
    e->depth -= 2;
    line(e, "    }");
    line(e, "}");
    line(e, "%s *restrict yr = yn + oh * %lld + ow0;", q->yt, q->OW);
    if (vec) {
        line(e, "if (ow0 + %d <= %lld && ob * 4 + 3 < %lld) {", TILE, q->OW, q->O);
        e->depth++;
        for (int j = 0; j < 4; j++) {
            char c[16], d[64], v[16];
            snprintf(c, sizeof c, "o%d", j);
            line(e, "{");
            e->depth++;
            chan_rq(e, k, q, c);
            line(e, "const __m256i mv = _mm256_set1_epi32(m), nv = _mm256_set1_epi64x(31 - s);");
            snprintf(d, sizeof d, "yr + o%d * %lld", j, P);
            snprintf(v, sizeof v, "a%d0", j);
            rq_store8(e, q, tether__c_qrq_fn(e, nd, q), d, v);
            snprintf(d, sizeof d, "yr + o%d * %lld + 8", j, P);
            snprintf(v, sizeof v, "a%d1", j);
            rq_store8(e, q, tether__c_qrq_fn(e, nd, q), d, v);
            close_block(e);
        }
        line(e, "continue;");
        close_block(e);
    }
    for (int j = 0; j < 4; j++) {
        line(e, "_mm256_storeu_si256((__m256i *)acc[%d], a%d0);", j, j);
        line(e, "_mm256_storeu_si256((__m256i *)(acc[%d] + 8), a%d1);", j, j);
    }
    line(e, "for (int j = 0; j < 4 && ob * 4 + j < %lld; ++j) {", q->O);
    e->depth++;
    line(e, "const int oc = ob * 4 + j;");
    chan_rq(e, k, q, "oc");
    line(e, "%s *restrict yo = yr + oc * %lld;", q->yt, P);
    line(e, "for (int i = 0; i < %d && ow0 + i < %lld; ++i) {", TILE, q->OW);
    e->depth++;
    tether__c_qstore(e, q, "yo[i]", "acc[j][i]", "m", "s");
    close_block(e);
    close_block(e);
    close_block(e); /* ow0 */
    close_block(e); /* ob */
    close_block(e); /* oh */
    close_block(e); /* n */
    line(e, "#undef TGQ_DP");
}

/* depthwise: the window interior start columns owa..owz (tile starts), 0 when none */
static int dw_range(const qg *q, long long *owa, long long *ove) {
    if (q->SW > 2 || q->KH * q->KW > 49) {
        return 0;
    }
    long long a = (q->PL + q->SW - 1) / q->SW;
    long long last = q->W - 1 - (q->KW - 1) * q->DW - (q->SW == 1 ? 15 : 31) + q->PL;
    if (last < 0) {
        return 0;
    }
    long long z = last / q->SW;
    long long e = z + TILE < q->OW ? z + TILE : q->OW;
    if (e - a < TILE) {
        return 0;
    }
    *owa = a;
    *ove = e;
    return 1;
}

static void dw_border(em *e, const qg *q, const char *ow_from, const char *ow_to) {
    line(e, "for (int ow = %s; ow < %s; ++ow) {", ow_from, ow_to);
    e->depth++;
    line(e, "const int iw0 = ow * %lld - %lld;", q->SW, q->PL);
    line(e, "int32_t a = r;");
    line(e, "for (int kh = 0; kh < %lld; ++kh) {", q->KH);
    line(e, "    const int ih = ih0 + kh * %lld;", q->DH);
    line(e, "    for (int kw = 0; kw < %lld; ++kw) {", q->KW);
    line(e, "        const int iw = iw0 + kw * %lld;", q->DW);
    line(e, "        if (ih >= 0 && ih < %lld && iw >= 0 && iw < %lld) {", q->H, q->W);
    line(e, "            a += ((int32_t)xc[ih * %lld + iw] - xz) * (int32_t)wc[kh * %lld + kw];",
         q->W, q->KW);
    line(e, "        }");
    line(e, "    }");
    line(e, "}");
    tether__c_qstore(e, q, "yo[oh * OWC + ow]", "a", "m", "s");
    close_block(e);
}

static void depthwise(em *e, const tether_ir_node *nd, const kargs *k, const qg *q, long long owa,
                      long long ove) {
    const int8_t *w = T(e, nd->inputs[1])->data;
    long long K = q->KH * q->KW, NP = (K + 1) / 2;
    int32_t *wq = calloc((size_t)(q->C * NP), sizeof(int32_t));
    int32_t *ws = calloc((size_t)q->C, sizeof(int32_t));
    if (!wq || !ws) {
        free(wq);
        free(ws);
        e->s.failed = 1;
        return;
    }
    for (long long c = 0; c < q->C; c++) {
        for (long long t = 0; t < K; t += 2) {
            wq[c * NP + t / 2] = pair(w[c * K + t], t + 1 < K ? w[c * K + t + 1] : 0);
        }
        for (long long t = 0; t < K; t++) {
            ws[c] += w[c * K + t];
        }
    }
    tether__c_qx86_table(e, "wq", wq, q->C * NP);
    tether__c_qx86_table(e, "ws", ws, q->C);
    free(wq);
    free(ws);
    tether__c_qx86_madd_macro(e);
    prologue(e, nd, k);
    line(e, "enum { OWC = %lld };", q->OW);
    int vec = tether__c_qrq_vec(e, nd, q);
    if (vec) {
        rq_consts(e, q);
    }
    if (q->SW == 2) {
        line(e, "const __m256i even = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, "
                "-1, -1, -1, -1, 0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);");
    }
    if (!vec) {
        line(e, "int32_t acc[%d];", TILE);
    }
    loop(e, "n", q->N);
    line(e, "for (int c = 0; c < %lld; ++c) {", q->C);
    e->depth++;
    char b[96];
    tether__c_qx86_param(e, nd, k, 2, "c", b, sizeof b);
    line(e, "const int32_t r = %s, bf = r - xz * ws[c];", b);
    chan_rq(e, k, q, "c");
    if (vec) {
        line(e, "const __m256i mv = _mm256_set1_epi32(m), nv = _mm256_set1_epi64x(31 - s);");
    }
    line(e, "const %s *restrict xc = %s + (n * %lld + c) * %lld;", q->xt, k->in[0], q->C,
         q->H * q->W);
    line(e, "const %s *restrict wc = %s + c * %lld;", q->wt, k->in[1], K);
    line(e, "const int32_t *restrict wv = wq + c * %lld;", NP);
    line(e, "%s *restrict yo = %s + (n * %lld + c) * %lld;", q->yt, k->out, q->O, q->OH * q->OW);
    line(e, "for (int oh = 0; oh < %lld; ++oh) {", q->OH);
    e->depth++;
    line(e, "const int ih0 = oh * %lld - %lld;", q->SH, q->PT);
    line(e, "if (ih0 < 0 || ih0 + %lld >= %lld) {", (q->KH - 1) * q->DH, q->H);
    e->depth++;
    char to[32], from[32];
    snprintf(to, sizeof to, "%lld", q->OW);
    dw_border(e, q, "0", to);
    line(e, "continue;");
    close_block(e);
    snprintf(to, sizeof to, "%lld", owa);
    dw_border(e, q, "0", to);
    line(e, "for (int ot = %lld; ot < %lld; ot += %d) {", owa, ove, TILE);
    e->depth++;
    line(e, "const int o0 = ot + %d > %lld ? %lld : ot;", TILE, ove, ove - TILE);
    line(e, "const %s *restrict xr = xc + ih0 * %lld + o0 * %lld - %lld;", q->xt, q->W, q->SW,
         q->PL);
    line(e, "__m256i al = _mm256_set1_epi32(bf), ah = al;");
    for (long long t = 0; t < K; t += 2) {
        line(e, "{");
        e->depth++;
        for (long long u = t; u < t + 2; u++) {
            long long tt = u < K ? u : t; /* an odd last tap pairs with itself, weight 0 */
            long long off = (tt / q->KW) * q->DH * q->W + (tt % q->KW) * q->DW;
            if (q->SW == 1) {
                line(e, "const __m256i x%lld = %s(_mm_loadu_si128((const __m128i *)(xr + %lld)));",
                     u - t, widen(q), off);
            } else {
                line(e,
                     "const __m256i x%lld = %s(_mm256_castsi256_si128(_mm256_permute4x64_epi64("
                     "_mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(xr + %lld)), "
                     "even), 0x08)));",
                     u - t, widen(q), off);
            }
        }
        line(e, "const __m256i wp = _mm256_set1_epi32(wv[%lld]);", t / 2);
        line(e, "al = TGQ_DP(al, _mm256_unpacklo_epi16(x0, x1), wp);");
        line(e, "ah = TGQ_DP(ah, _mm256_unpackhi_epi16(x0, x1), wp);");
        close_block(e);
    }
    /* al: pixels 0-3, 8-11; ah: 4-7, 12-15 */
    if (vec) {
        rq_store8(e, q, tether__c_qrq_fn(e, nd, q), "yo + oh * OWC + o0",
                  "_mm256_permute2x128_si256(al, ah, 0x20)");
        rq_store8(e, q, tether__c_qrq_fn(e, nd, q), "yo + oh * OWC + o0 + 8",
                  "_mm256_permute2x128_si256(al, ah, 0x31)");
    } else {
        line(e, "_mm256_storeu_si256((__m256i *)acc, _mm256_permute2x128_si256(al, ah, 0x20));");
        line(e,
             "_mm256_storeu_si256((__m256i *)(acc + 8), _mm256_permute2x128_si256(al, ah, 0x31));");
        line(e, "for (int i = 0; i < %d; ++i) {", TILE);
        e->depth++;
        tether__c_qstore(e, q, "yo[oh * OWC + o0 + i]", "acc[i]", "m", "s");
        close_block(e);
    }
    close_block(e);
    snprintf(from, sizeof from, "%lld", ove);
    snprintf(to, sizeof to, "%lld", q->OW);
    dw_border(e, q, from, to);
    close_block(e);
    close_block(e);
    close_block(e);
    line(e, "#undef TGQ_DP");
}

/* depthwise stride 1 over a flat zero-bordered plane (narrow planes: dw_range refuses them) */
static int flat_ok(const em *e, const tether_ir_node *nd, const qg *q) {
    long long PW = q->OW + (q->KW - 1) * q->DW, PH = q->OH + (q->KH - 1) * q->DH;
    return q->SH == 1 && q->SW == 1 && q->PT >= 0 && q->PL >= 0 && q->KH * q->KW <= 49 &&
           PH * PW <= 8192 && tether__c_qrq_vec(e, nd, q);
}

/* Depthwise, stride 1: the channel's x - x_zp in a zero-bordered int16 plane of PH x PW; every
 * flat position p = oh * PW + ow (ow < PW: the columns past OW computed and dropped) is
 * sum_t w_t * plane[p + off_t], 16 positions a step, taps in pairs into VPMADDWD, requantized
 * 8 at a time into a row buffer whose first OW columns of each row are copied out. */
static void dw_flat(em *e, const tether_ir_node *nd, const kargs *k, const qg *q) {
    const int8_t *w = T(e, nd->inputs[1])->data;
    long long K = q->KH * q->KW, NP = (K + 1) / 2;
    long long PW = q->OW + (q->KW - 1) * q->DW, PH = q->OH + (q->KH - 1) * q->DH;
    long long NPOS = (q->OH * PW + TILE - 1) / TILE * TILE;
    long long MAXOFF = (q->KH - 1) * q->DH * PW + (q->KW - 1) * q->DW;
    int32_t *wq = calloc((size_t)(q->C * NP), sizeof(int32_t));
    if (!wq) {
        e->s.failed = 1;
        return;
    }
    for (long long c = 0; c < q->C; c++) {
        for (long long t = 0; t < K; t += 2) {
            wq[c * NP + t / 2] = pair(w[c * K + t], t + 1 < K ? w[c * K + t + 1] : 0);
        }
    }
    tether__c_qx86_table(e, "wq", wq, q->C * NP);
    free(wq);
    tether__c_qx86_madd_macro(e);
    prologue(e, nd, k);
    line(e, "(void)%s; /* packed above (wq) */", k->in[1]);
    rq_consts(e, q);
    line(e, "int16_t pl[%lld]; /* the plane, zero-bordered, and zeros past it */",
         NPOS + MAXOFF + TILE);
    line(e, "%s ob[%lld]; /* the output rows, PW wide */", q->yt, NPOS);
    line(e, "memset(pl, 0, sizeof pl);");
    loop(e, "n", q->N);
    line(e, "for (int c = 0; c < %lld; ++c) {", q->C);
    e->depth++;
    char b[96];
    tether__c_qx86_param(e, nd, k, 2, "c", b, sizeof b);
    line(e, "const int32_t r = %s;", b);
    chan_rq(e, k, q, "c");
    line(e, "const __m256i mv = _mm256_set1_epi32(m), nv = _mm256_set1_epi64x(31 - s);");
    line(e, "const %s *restrict xc = %s + (n * %lld + c) * %lld;", q->xt, k->in[0], q->C,
         q->H * q->W);
    line(e, "const int32_t *restrict wv = wq + c * %lld;", NP);
    line(e, "%s *restrict yo = %s + (n * %lld + c) * %lld;", q->yt, k->out, q->O, q->OH * q->OW);
    /* the rows and columns of the input the plane holds, 8 values a step, then one at a time */
    const long long NH = q->H < PH - q->PT ? q->H : PH - q->PT;
    const long long NW = q->W < PW - q->PL ? q->W : PW - q->PL;
    line(e, "for (int ih = 0; ih < %lld; ++ih) {", NH);
    e->depth++;
    line(e, "const %s *restrict a = xc + ih * %lld;", q->xt, q->W);
    line(e, "int16_t *restrict d = pl + (ih + %lld) * %lld + %lld;", q->PT, PW, q->PL);
    line(e, "int iw = 0;");
    line(e, "for (; iw + 8 <= %lld; iw += 8) {", NW);
    line(
        e,
        "    _mm_storeu_si128((__m128i *)(void *)(d + iw), _mm_sub_epi16(%s(_mm_loadl_epi64((const "
        "__m128i *)(const void *)(a + iw))), _mm_set1_epi16((int16_t)xz)));",
        strcmp(q->xt, "int8_t") == 0 ? "_mm_cvtepi8_epi16" : "_mm_cvtepu8_epi16");
    line(e, "}");
    line(e, "for (; iw < %lld; ++iw) {", NW);
    line(e, "    d[iw] = (int16_t)((int32_t)a[iw] - xz);");
    line(e, "}");
    close_block(e);
    line(e, "for (int p0 = 0; p0 < %lld; p0 += %d) {", NPOS, TILE);
    e->depth++;
    line(e, "__m256i al = _mm256_set1_epi32(r), ah = al;");
    for (long long t = 0; t < K; t += 2) {
        line(e, "{");
        e->depth++;
        for (long long u = t; u < t + 2; u++) {
            long long tt = u < K ? u : t; /* an odd last tap pairs with itself, weight 0 */
            long long off = (tt / q->KW) * q->DH * PW + (tt % q->KW) * q->DW;
            line(e,
                 "const __m256i x%lld = _mm256_loadu_si256((const __m256i *)(const void *)(pl + "
                 "p0 + %lld));",
                 u - t, off);
        }
        line(e, "const __m256i wp = _mm256_set1_epi32(wv[%lld]);", t / 2);
        line(e, "al = TGQ_DP(al, _mm256_unpacklo_epi16(x0, x1), wp);");
        line(e, "ah = TGQ_DP(ah, _mm256_unpackhi_epi16(x0, x1), wp);");
        close_block(e);
    }
    rq_store8(e, q, tether__c_qrq_fn(e, nd, q), "ob + p0",
              "_mm256_permute2x128_si256(al, ah, 0x20)");
    rq_store8(e, q, tether__c_qrq_fn(e, nd, q), "ob + p0 + 8",
              "_mm256_permute2x128_si256(al, ah, 0x31)");
    close_block(e);
    line(e, "for (int oh = 0; oh < %lld; ++oh) {", q->OH);
    line(e, "    memcpy(yo + oh * %lld, ob + oh * %lld, %lld);", q->OW, PW, q->OW);
    line(e, "}");
    close_block(e);
    close_block(e);
    line(e, "#undef TGQ_DP");
}

int tether__c_qconv_x86_ok(const em *e, const tether_ir_node *nd, const qg *q) {
    const tether_ir_tensor *w = T(e, nd->inputs[1]);
    if (w->kind != TETHER_TENSOR_CONSTANT || !w->data || w->dtype.code != kDLInt ||
        w->dtype.bits != 8) {
        return 0;
    }
    long long a, z;
    if (q->G == q->C && q->O == q->C) {
        return tether__c_qconv_dwc_ok(e, nd, q) || tether__c_qconv_dw2_ok(e, nd, q) ||
               dw_range(q, &a, &z) || flat_ok(e, nd, q);
    }
    /* the tile's pack: taps x 16 pixels of int16 on the stack (<= 64 KiB) */
    return q->G == 1 && q->C * q->KH * q->KW <= 2048;
}

void tether__c_qconv_x86(em *e, const tether_ir_node *nd, const kargs *k, const qg *q) {
    long long a = 0, z = 0; /* set by dw_range (gcc -O3 cannot see it) */
    if (tether__c_qconv_c1_ok(e, nd, q) && !(q->G == 1 && row_width(q))) {
        tether__c_qconv_c1(e, nd, k, q);         /* emit_c_qc1_x86.c */
    } else if (tether__c_qpw_x86_ok(e, nd, q)) { /* emit_c_qpw_x86.c: ragged pointwise planes */
        tether__c_qpw_x86(e, nd, k, q);
    } else if (q->G == 1 && row_width(q)) {
        row_tiles(e, nd, k, q, row_width(q));
    } else if (q->G == 1) {
        gemm_tiles(e, nd, k, q);
    } else if (tether__c_qconv_dwc_ok(e, nd, q)) {
        tether__c_qconv_dwc(e, nd, k, q); /* emit_c_qdwc_x86.c: channels in the lanes */
    } else if (tether__c_qconv_dw2_ok(e, nd, q)) {
        tether__c_qconv_dw2(e, nd, k, q); /* emit_c_qdw2_x86.c */
    } else if (flat_ok(e, nd, q)) {
        dw_flat(e, nd, k, q);
    } else {
        (void)dw_range(q, &a, &z); /* tether__c_qconv_x86_ok: it takes q */
        depthwise(e, nd, k, q, a, z);
    }
}
