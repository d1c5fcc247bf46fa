/*
 * The C emitter's x86-64 AVX2 qmatmul kernel (docs/quantization.md, "Kernels"), emitted by
 * emit_c_quant.c inside `#if defined(__AVX2__)` with the portable loop in the #else. For a
 * constant 8-bit B (weights: Gemm, dense heads, attention projections, the global average
 * pool's column of ones), 8-bit A with a per-tensor zero point and a requantized 8-bit output:
 *   - B - b_zp is packed at compile time as int16 pairs of reduction rows (k, k+1) per block of
 *     8 output columns (zero beyond N and K), as int8 pairs widened in the loop when B is int8
 *     with zero points 0 (half the memory: 1000-class heads are read once a call); the folded
 *     bias bias - a_zp * sum_k(B - b_zp)
 *     (int32, wrapping like the portable loop) is a compile-time table;
 *   - B an activation (attention scores: one [K, N] matrix, a constant per-tensor zero point,
 *     at most MAXRB bytes packed): the same int16 pairs and folded bias computed at the start of
 *     the call on the stack (runtime_b), the bias a compile-time table;
 *   - A's rows (all batches as one [R, K] matrix) are widened to int16 4 rows at a time; tiles of
 *     4 rows x 16 columns in 8 accumulators, VPMADDWD (VPDPWSSD under AVX-512 VNNI) of a
 *     broadcast A pair by a packed B vector: exact, two products of 9-bit values summed in int32;
 *     an empty __asm__ with the accumulators as "+x" operands ends each K step, so gcc keeps
 *     them in registers (it spilled one, a store-forwarding chain through the loop);
 *   - the epilogue requantizes 8 columns at a time (tgq_rq8k when every shift is in -31..-1,
 *     tgq_rq8 otherwise; per-column multipliers and shifts
 *     from compile-time tables) and stores bytes; a partial last block goes through 8 bytes on
 *     the stack. The last row block overlaps the one before when R % 4 != 0 (rows recomputed,
 *     the same bytes written).
 *
 * What must stay true: every output equals the portable loop's (int32 accumulation of
 * (a - a_zp) * (b - b_zp) plus the bias, tgq_requant, the clamp) byte for byte (test_quant_x86
 * compares both builds with the interpreter); no float arithmetic; no read outside A and B.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c_qconv.h"
#include "tether/crt/dtype.h"

#define MAXK  4096  /* A rows packed on the stack: 4 x MAXK int16 */
#define MAXRB 65536 /* bytes of a run-time B packed on the stack */

static int is8(DLDataType t) {
    return (t.code == kDLInt || t.code == kDLUInt) && t.bits == 8 && t.lanes == 1;
}

/* input i when present: constant with data, n elements or one; absent: 1 */
static int konst(const em *e, const tether_ir_node *nd, int i, size_t n) {
    if (i >= nd->ninputs || nd->inputs[i] < 0) {
        return 1;
    }
    const tether_ir_tensor *t = T(e, nd->inputs[i]);
    size_t c = tether_ir_tensor_elements(t);
    return t->kind == TETHER_TENSOR_CONSTANT && t->data && (c == 1 || c == n);
}

/* element j (0 when the tensor has one) of input i as an integer; 0 when absent */
static int64_t cval(const em *e, const tether_ir_node *nd, int i, size_t j) {
    if (i >= nd->ninputs || nd->inputs[i] < 0) {
        return 0;
    }
    const tether_ir_tensor *t = T(e, nd->inputs[i]);
    if (tether_ir_tensor_elements(t) == 1) {
        j = 0;
    }
    const void *d = t->data;
    if (t->dtype.code == kDLInt) {
        switch (t->dtype.bits) {
        case 8:
            return ((const int8_t *)d)[j];
        case 16:
            return ((const int16_t *)d)[j];
        case 32:
            return ((const int32_t *)d)[j];
        default:
            return ((const int64_t *)d)[j];
        }
    }
    switch (t->dtype.bits) {
    case 8:
        return ((const uint8_t *)d)[j];
    case 16:
        return ((const uint16_t *)d)[j];
    case 32:
        return ((const uint32_t *)d)[j];
    default:
        return (int64_t)((const uint64_t *)d)[j];
    }
}

static int int_type(const em *e, const tether_ir_node *nd, int i) {
    if (i >= nd->ninputs || nd->inputs[i] < 0) {
        return 1;
    }
    DLDataType t = T(e, nd->inputs[i])->dtype;
    return (t.code == kDLInt || t.code == kDLUInt) && t.bits <= 64 && t.lanes == 1;
}

int tether__c_qmatmul_x86_ok(const em *e, const tether_ir_node *nd) {
    if (nd->ninputs < 6 || nd->inputs[5] < 0) {
        return 0;
    }
    tether_ir_tensor av, bv, yv;
    tether__ir_matmul_view(e->g, nd, &av, &bv, &yv);
    const tether_ir_tensor *a = T(e, nd->inputs[0]), *b = T(e, nd->inputs[1]),
                           *y = T(e, nd->outputs[0]), *rq = T(e, nd->inputs[5]);
    int nb = yv.ndim - 2;
    if (nb < 0 || av.ndim < 1) {
        return 0;
    }
    long long M = yv.shape[nb], N = yv.shape[nb + 1], K = av.shape[av.ndim - 1];
    size_t R = tether_ir_tensor_elements(&yv) / (size_t)(N > 0 ? N : 1);
    const int bc = b->kind == TETHER_TENSOR_CONSTANT && b->data;
    if (!is8(a->dtype) || !is8(b->dtype) || !is8(y->dtype) || K < 1 || K > MAXK || N < 1 || M < 1 ||
        /* B an activation (attention scores): one matrix, a per-tensor zero point, its int16
         * pairs on the stack */
        (!bc && (!konst(e, nd, 4, 1) || (N + 7) / 8 * ((K + 1) / 2) * 32 > MAXRB)) ||
        tether_ir_tensor_elements(b) != (size_t)(K * N) ||
        tether_ir_tensor_elements(a) != R * (size_t)K) {
        return 0;
    }
    for (int i = 2; i <= 6; i++) {
        if (!int_type(e, nd, i) && i != 5) {
            return 0;
        }
    }
    if (!konst(e, nd, 2, (size_t)N) || !konst(e, nd, 3, 1) || !konst(e, nd, 4, (size_t)N) ||
        !konst(e, nd, 6, 1) || rq->kind != TETHER_TENSOR_CONSTANT || !rq->data ||
        rq->dtype.code != kDLInt || rq->dtype.bits != 32 ||
        (rq->shape[0] != 1 && rq->shape[0] != N)) {
        return 0;
    }
    for (size_t i = 1; i < tether_ir_tensor_elements(rq); i += 2) {
        const int32_t sh = ((const int32_t *)rq->data)[i];
        if (sh < -31 || sh > 30) {
            return 0;
        }
    }
    return 1;
}

/* A static const int32_t table of n values, 12 a line. */
static void table(em *e, const char *name, const int32_t *v, long long n) {
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

/* A static const int8_t table of n values, 16 a line. */
static void table8(em *e, const char *name, const int8_t *v, long long n) {
    line(e, "static const int8_t %s[%lld] = {", name, n);
    e->depth++;
    char buf[256];
    size_t len = 0;
    for (long long i = 0; i < n; i++) {
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%d,", len ? " " : "", (int)v[i]);
        if ((i + 1) % 16 == 0 || i + 1 == n) {
            line(e, "%s", buf);
            len = 0;
        }
    }
    e->depth--;
    line(e, "};");
}

static int32_t pair16(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)(uint16_t)(int16_t)a | ((uint32_t)(uint16_t)(int16_t)b << 16));
}

/* the output clamp: the type's range within the node's min..max */
static void out_range(const tether_ir_node *nd, DLDataType t, long long *lo, long long *hi) {
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

/* the tile of MR rows x nblk blocks of 8 columns starting at block jb (an expression) */
static void tile(em *e, int MR, int nblk, const char *jb, long long K2, long long N, int s8, int w8,
                 int rqk) {
    line(e, "{");
    e->depth++;
    line(e, "const int j0 = (%s) * 8;", jb);
    for (int r = 0; r < MR; r++) {
        for (int t = 0; t < nblk; t++) {
            line(e, "__m256i c%d%d = _mm256_loadu_si256((const __m256i *)(bf + j0 + %d));", r, t,
                 8 * t);
        }
    }
    if (w8) {
        line(e, "const int8_t *restrict wb = wp8 + (%s) * %lld;", jb, K2 * 16);
    } else {
        line(e, "const int32_t *restrict wb = wp + (%s) * %lld;", jb, K2 * 8);
    }
    line(e, "for (int kp = 0; kp < %lld; ++kp) {", K2);
    e->depth++;
    for (int t = 0; t < nblk; t++) {
        if (w8) {
            line(e,
                 "const __m256i w%d = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const "
                 "void *)(wb + kp * 16 + %lld)));",
                 t, K2 * 16 * t);
        } else {
            line(e,
                 "const __m256i w%d = _mm256_loadu_si256((const __m256i *)(wb + kp * 8 + %lld));",
                 t, K2 * 8 * t);
        }
    }
    for (int r = 0; r < MR; r++) {
        line(e, "{");
        line(e, "    const __m256i a = _mm256_set1_epi32(apk[%lld + kp]);", K2 * r);
        for (int t = 0; t < nblk; t++) {
            line(e, "    c%d%d = TGQ_DP(c%d%d, a, w%d);", r, t, r, t, t);
        }
        line(e, "}");
    }
    /* keeps the accumulators in registers: without it gcc 12 spills one to the stack and the
     * loop runs at the store-to-load forwarding latency (twice the time in the attention block) */
    line(e, "#if defined(__GNUC__)");
    {
        char buf[512];
        size_t len = 0;
        for (int r = 0; r < MR; r++) {
            for (int t = 0; t < nblk; t++) {
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s\"+x\"(c%d%d)",
                                        len ? ", " : "", r, t);
            }
        }
        line(e, "__asm__(\"\" : %s);", buf);
    }
    line(e, "#endif");
    close_block(e);
    for (int t = 0; t < nblk; t++) {
        line(e, "{");
        e->depth++;
        line(e, "const int jj = j0 + %d;", 8 * t);
        line(e, "const __m256i m = _mm256_loadu_si256((const __m256i *)(rqm + jj));");
        line(e, "const __m256i ne = _mm256_cvtepi32_epi64(_mm_loadu_si128((const __m128i *)(rqn + "
                "jj))), no = _mm256_cvtepi32_epi64(_mm_loadu_si128((const __m128i *)(rqn + jj + "
                "4)));");
        for (int r = 0; r < MR; r++) {
            line(e, "{");
            e->depth++;
            line(e, "const __m256i v = tgq_rq8%s(c%d%d, m, ne, no, vlo, vhi, vzp);", rqk ? "k" : "",
                 r, t);
            line(e, "if (jj + 8 <= %lld) {", N);
            line(e, "    tgq_st8%s(yr + %lld * %d + jj, v);", s8 ? "s" : "u", N, r);
            line(e, "} else {");
            line(e, "    %s tmp[8];", s8 ? "int8_t" : "uint8_t");
            line(e, "    tgq_st8%s(tmp, v);", s8 ? "s" : "u");
            line(e, "    memcpy(yr + %lld * %d + jj, tmp, (size_t)(%lld - jj));", N, r, N);
            line(e, "}");
            close_block(e);
        }
        close_block(e);
    }
    close_block(e);
}

/* B an activation: packed on the stack as the compile-time tables would be (int16 pairs of
 * B - b_zp per block of 8 columns, zeros beyond N and K), 8 columns of a row pair a step, and the
 * folded bias bb - a_zp * sum_k(B - b_zp) (int32, wrapping) from the column sums */
static void runtime_b(em *e, const tether_ir_node *nd, const kargs *k, long long K, long long N,
                      int64_t az) {
    const long long K2 = (K + 1) / 2, NB = (N + 7) / 8;
    const int bs8 = T(e, nd->inputs[1])->dtype.code == kDLInt;
    const char *bt = bs8 ? "int8_t" : "uint8_t",
               *cv = bs8 ? "_mm_cvtepi8_epi16" : "_mm_cvtepu8_epi16";
    const long long bz = (long long)cval(e, nd, 4, 0);
    line(e, "int32_t wp[%lld], bf[%lld]; /* B - b_zp as int16 pairs; the folded bias */",
         NB * K2 * 8, NB * 8);
    line(e, "{");
    e->depth++;
    line(e, "const %s *restrict bm = %s;", bt, k->in[1]);
    line(e, "const __m128i vbz = _mm_set1_epi16(%lld);", bz);
    line(e, "const __m256i one = _mm256_set1_epi16(1);");
    line(e, "for (int jb = 0; jb < %lld; ++jb) {", NB);
    e->depth++;
    line(e, "int32_t *restrict wd = wp + jb * %lld;", K2 * 8);
    line(e, "int32_t cs[8];");
    line(e, "if (jb * 8 + 8 <= %lld) {", N);
    e->depth++;
    line(e, "__m256i s = _mm256_setzero_si256();");
    line(e, "for (int kp = 0; kp < %lld; ++kp) {", K2);
    e->depth++;
    line(e,
         "const __m128i r0 = _mm_sub_epi16(%s(_mm_loadl_epi64((const __m128i *)(const void *)(bm + "
         "(size_t)(2 * kp) * %lld + jb * 8))), vbz);",
         cv, N);
    if (K % 2) {
        line(e,
             "const __m128i r1 = 2 * kp + 1 < %lld ? _mm_sub_epi16(%s(_mm_loadl_epi64((const "
             "__m128i *)(const void *)(bm + (size_t)(2 * kp + 1) * %lld + jb * 8))), vbz) : "
             "_mm_setzero_si128();",
             K, cv, N);
    } else {
        line(e,
             "const __m128i r1 = _mm_sub_epi16(%s(_mm_loadl_epi64((const __m128i *)(const void "
             "*)(bm + (size_t)(2 * kp + 1) * %lld + jb * 8))), vbz);",
             cv, N);
    }
    line(e, "const __m256i p = _mm256_set_m128i(_mm_unpackhi_epi16(r0, r1), _mm_unpacklo_epi16(r0, "
            "r1));");
    line(e, "_mm256_storeu_si256((__m256i *)(void *)(wd + kp * 8), p);");
    line(e, "s = _mm256_add_epi32(s, _mm256_madd_epi16(p, one));");
    close_block(e);
    line(e, "_mm256_storeu_si256((__m256i *)(void *)cs, s);");
    e->depth--;
    line(e, "} else {");
    e->depth++;
    line(e, "memset(cs, 0, sizeof cs);");
    line(e, "for (int kp = 0; kp < %lld; ++kp) {", K2);
    e->depth++;
    line(e, "for (int c = 0; c < 8; ++c) {");
    e->depth++;
    line(e, "const int j = jb * 8 + c;");
    line(e, "const int32_t b0 = j < %lld ? (int32_t)bm[(size_t)(2 * kp) * %lld + j] - %lld : 0;", N,
         N, bz);
    line(e,
         "const int32_t b1 = j < %lld && 2 * kp + 1 < %lld ? (int32_t)bm[(size_t)(2 * kp + 1) * "
         "%lld + j] - %lld : 0;",
         N, K, N, bz);
    line(e, "wd[kp * 8 + c] = (int32_t)((uint32_t)(uint16_t)(int16_t)b0 | "
            "((uint32_t)(uint16_t)(int16_t)b1 << 16));");
    line(e, "cs[c] += b0 + b1;");
    close_block(e);
    close_block(e);
    close_block(e);
    line(e, "for (int c = 0; c < 8; ++c) {");
    line(e,
         "    bf[jb * 8 + c] = (int32_t)((uint32_t)bb[jb * 8 + c] - (uint32_t)%lld * "
         "(uint32_t)cs[c]);",
         (long long)az);
    line(e, "}");
    close_block(e);
    close_block(e);
}

void tether__c_qmatmul_x86(em *e, const tether_ir_node *nd, const kargs *k) {
    tether_ir_tensor av, bv, yv;
    tether__ir_matmul_view(e->g, nd, &av, &bv, &yv);
    int nb = yv.ndim - 2;
    long long N = yv.shape[nb + 1], K = av.shape[av.ndim - 1];
    long long R = (long long)(tether_ir_tensor_elements(&yv) / (size_t)N);
    long long K2 = (K + 1) / 2, NB = (N + 7) / 8;
    int MR = R < 4 ? (int)R : 4;
    const tether_ir_tensor *b = T(e, nd->inputs[1]), *a = T(e, nd->inputs[0]),
                           *y = T(e, nd->outputs[0]), *rq = T(e, nd->inputs[5]);
    int bs8 = b->dtype.code == kDLInt, as8 = a->dtype.code == kDLInt, ys8 = y->dtype.code == kDLInt;
    int32_t *wp = calloc((size_t)(NB * K2 * 8), sizeof(int32_t));
    int32_t *bf = calloc((size_t)(NB * 8), sizeof(int32_t));
    int32_t *rm = calloc((size_t)(NB * 8), sizeof(int32_t));
    int32_t *rn = calloc((size_t)(NB * 8), sizeof(int32_t));
    if (!wp || !bf || !rm || !rn) {
        free(wp);
        free(bf);
        free(rm);
        free(rn);
        e->s.failed = 1;
        return;
    }
    const int64_t az = cval(e, nd, 3, 0);
    const int32_t *rqd = rq->data;
    const int bc = b->kind == TETHER_TENSOR_CONSTANT && b->data;
    /* every shift in -31..-1: tgq_rq8k (n = 31 - shift in 32..62, the padding columns too) */
    int rqk = 1;
    for (size_t i = 1; i < tether_ir_tensor_elements(rq); i += 2) {
        rqk = rqk && rqd[i] <= -1 && rqd[i] >= -31;
    }
    for (long long j = 0; j < NB * 8; j++) {
        long long bl = j / 8, c = j % 8;
        rn[bl * 8 + (c % 2) * 4 + c / 2] = rqk ? 32 : 1;
        if (j >= N) {
            continue;
        }
        const int64_t bz = cval(e, nd, 4, (size_t)j);
        int64_t sum = 0;
        int32_t v[2];
        for (long long kk = 0; bc && kk < K; kk++) {
            const int64_t w = (bs8 ? (int64_t)((const int8_t *)b->data)[kk * N + j]
                                   : (int64_t)((const uint8_t *)b->data)[kk * N + j]) -
                              bz;
            v[kk % 2] = (int32_t)w;
            sum += w;
            if (kk % 2 || kk + 1 == K) {
                wp[(bl * K2 + kk / 2) * 8 + c] = pair16(v[0], kk % 2 ? v[1] : 0);
            }
        }
        /* a run-time B: bf holds the bias, the column sums are taken at run time */
        bf[j] = (int32_t)(uint32_t)(uint64_t)(cval(e, nd, 2, (size_t)j) - az * sum);
        const size_t r = rq->shape[0] == 1 ? 0 : (size_t)j;
        rm[j] = rqd[2 * r];
        rn[bl * 8 + (c % 2) * 4 + c / 2] = 31 - rqd[2 * r + 1];
    }
    /* int8 B with zero points 0: the pairs fit int8, stored as bytes (half the memory) and
     * widened in the loop */
    int w8 = bs8 && bc;
    for (long long j = 0; w8 && j < N; j++) {
        w8 = cval(e, nd, 4, (size_t)j) == 0;
    }
    if (w8) {
        int8_t *p8 = malloc((size_t)(NB * K2 * 16));
        if (!p8) {
            free(wp);
            free(bf);
            free(rm);
            free(rn);
            e->s.failed = 1;
            return;
        }
        for (long long i = 0; i < NB * K2 * 8; i++) {
            p8[2 * i] = (int8_t)(int16_t)(uint16_t)((uint32_t)wp[i] & 0xffffu);
            p8[2 * i + 1] = (int8_t)(int16_t)(uint16_t)((uint32_t)wp[i] >> 16);
        }
        table8(e, "wp8", p8, NB * K2 * 16);
        free(p8);
    } else if (bc) {
        table(e, "wp", wp, NB * K2 * 8);
    }
    table(e, bc ? "bf" : "bb", bf, NB * 8);
    table(e, "rqm", rm, NB * 8);
    table(e, "rqn", rn, NB * 8); /* per block: n of columns 0,2,4,6 then 1,3,5,7 */
    free(wp);
    free(bf);
    free(rm);
    free(rn);
    long long lo, hi;
    out_range(nd, y->dtype, &lo, &hi);
    const int64_t yz = cval(e, nd, 6, 0);
    for (int i = 1; i <= 6; i++) {
        if (i < nd->ninputs && nd->inputs[i] >= 0) {
            line(e, "(void)%s; /* folded into the tables above */", k->in[i]);
        }
    }
    tether__c_qx86_madd_macro(e);
    line(e,
         "const __m256i vlo = _mm256_set1_epi64x(%lldLL), vhi = _mm256_set1_epi64x(%lldLL), vzp = "
         "_mm256_set1_epi32(%lld);",
         lo - (long long)yz, hi - (long long)yz, (long long)yz);
    if (!bc) {
        runtime_b(e, nd, k, K, N, az);
    }
    line(e, "int32_t apk[%lld]; /* %d rows of A as int16 pairs */", K2 * MR, MR);
    line(e, "for (int i0 = 0; i0 < %lld; i0 += %d) {", R, MR);
    e->depth++;
    line(e, "const int i1 = i0 + %d <= %lld ? i0 : %lld;", MR, R, R - MR);
    line(e, "%s *restrict yr = %s + (size_t)i1 * %lld;", ys8 ? "int8_t" : "uint8_t", k->out, N);
    line(e, "for (int r = 0; r < %d; ++r) {", MR);
    e->depth++;
    line(e, "const %s *restrict ar = %s + (size_t)(i1 + r) * %lld;", as8 ? "int8_t" : "uint8_t",
         k->in[0], K);
    line(e, "int16_t *ad = (int16_t *)(void *)(apk + r * %lld);", K2);
    line(e, "int kk = 0;");
    line(e, "for (; kk + 16 <= %lld; kk += 16) {", K);
    line(e,
         "    _mm256_storeu_si256((__m256i *)(void *)(ad + kk), "
         "%s(_mm_loadu_si128((const __m128i *)(const void *)(ar + kk))));",
         as8 ? "_mm256_cvtepi8_epi16" : "_mm256_cvtepu8_epi16");
    line(e, "}");
    line(e, "for (; kk < %lld; ++kk) {", 2 * K2);
    line(e, "    const int16_t v = (int16_t)(kk < %lld ? ar[kk] : 0);", K);
    line(e, "    memcpy(ad + kk, &v, sizeof v);");
    line(e, "}");
    close_block(e);
    if (NB >= 2) {
        line(e, "for (int jb = 0; jb + 2 <= %lld; jb += 2)", NB);
        tile(e, MR, 2, "jb", K2, N, ys8, w8, rqk);
    }
    if (NB % 2) {
        char jb[32];
        snprintf(jb, sizeof jb, "%lld", NB - 1);
        tile(e, MR, 1, jb, K2, N, ys8, w8, rqk);
    }
    close_block(e);
    line(e, "#undef TGQ_DP");
}
