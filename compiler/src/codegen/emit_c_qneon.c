/*
 * The C emitter's AArch64 int8 kernels (docs/quantization.md, "Kernels"): Advanced SIMD (NEON)
 * versions of qconv and qmatmul, emitted inside `#if defined(__aarch64__) &&
 * defined(__ARM_NEON)` ahead of the other kernels (emit_c_quant.c puts the Cortex-M / portable
 * kernels in the #else, so the generated C stays C99 and compiles for every target):
 *   - one GEMM helper (tgq_n_gemm, in the module's helpers): int32 sums of A[r][k] * B[k][j] for
 *     up to 4 rows of A and 16 columns of B; with the dot-product extension
 *     (__ARM_FEATURE_DOTPROD, -march=armv8.2-a+dotprod) SDOT 4 taps a step (4 rows of B zipped
 *     into 4-tap lanes in registers), otherwise SMLAL of int16-widened values 8 taps a step (an
 *     int8 x int8 product in int16 and every sum in int32: exact); the column sums of B when
 *     asked (the zero point of A folded after the sums);
 *   - qconv, one group: W[O, C*KH*KW] times the patch matrix of 16 output pixels (im2col into a
 *     stack tile, x - 128 for uint8 inputs, the input zero point in the padding), or the input
 *     plane itself for a full block of an int8 pointwise convolution; the input zero point is
 *     folded into each channel's initial value (bias - x_zp * sum(w), once a call);
 *   - qconv, depthwise (one channel a group): each window row's input as x - x_zp in an int16
 *     row buffer (0 in the padding), 8 output columns a step by SMLAL by the tap's weight
 *     (strides 1 and 2 vector loads, other strides the scalar loop on the same buffer);
 *   - qmatmul without batch: A's rows times B's 16-column blocks (B a weight matrix read in
 *     place; a last partial block copied into a tile), A's zero point folded by B's column sums.
 * Every output goes through tether__c_qstore (tgq_rqs / tgq_requant), one element at a time.
 *
 * What must stay true: each accumulator equals the portable loop's int32 sum exactly (8-bit
 * operands; int32 sums), so outputs equal the interpreter's byte for byte on any AArch64 CPU with
 * or without the dot product; no float arithmetic; every stack array is fixed-size (the static
 * stack bound stays finite) and within the limits below; nodes outside these forms return 0.
 */
#include <stdio.h>
#include <string.h>

#include "emit_c_qconv.h"
#include "tether/crt/dtype.h"

enum {
    NEON_MAX_TAPS = 4096, /* K of a GEMM: a 16-column tile of K bytes, 64 KB */
    NEON_MAX_CH = 4096,   /* O: the folded initial values, 16 KB */
    NEON_MAX_ROW = 4096   /* depthwise padded row width, KH rows of int16 */
};

static const char neon_helpers[] =
    "#if defined(__aarch64__) && defined(__ARM_NEON)\n"
    "#include <arm_neon.h>\n"
    "/* One SMLAL step (tap k + u of 8 widened in av[r]) of tgq_n_gemm. */\n"
    "#define TGQ_N_STEP(u)                                                           \\\n"
    "    {                                                                           \\\n"
    "        const int8x16_t bv = vld1q_s8(b + (long)(k + (u)) * ldb);               \\\n"
    "        const int16x8_t bl = vmovl_s8(vget_low_s8(bv)), bh = vmovl_high_s8(bv); \\\n"
    "        if (cs) {                                                               \\\n"
    "            t[0] = vaddw_s16(t[0], vget_low_s16(bl));                           \\\n"
    "            t[1] = vaddw_high_s16(t[1], bl);                                    \\\n"
    "            t[2] = vaddw_s16(t[2], vget_low_s16(bh));                           \\\n"
    "            t[3] = vaddw_high_s16(t[3], bh);                                    \\\n"
    "        }                                                                       \\\n"
    "        for (int r = 0; r < nr; ++r) {                                          \\\n"
    "            c[r][0] = vmlal_laneq_s16(c[r][0], vget_low_s16(bl), av[r], (u));   \\\n"
    "            c[r][1] = vmlal_high_laneq_s16(c[r][1], bl, av[r], (u));            \\\n"
    "            c[r][2] = vmlal_laneq_s16(c[r][2], vget_low_s16(bh), av[r], (u));   \\\n"
    "            c[r][3] = vmlal_high_laneq_s16(c[r][3], bh, av[r], (u));            \\\n"
    "        }                                                                       \\\n"
    "    }\n"
    "/* s[r * 16 + j] = sum over k < K of a[r * lda + k] * b[k * ldb + j] (r < nr <= 4, j < 16),\n"
    " * exact in int32; with cs, cs[j] = sum over k of b[k * ldb + j]. SDOT 4 taps a step with\n"
    " * the dot-product extension, SMLAL of int16-widened values 8 taps a step without it. */\n"
    "static inline __attribute__((always_inline)) void\n"
    "tgq_n_gemm(const int nr, const int K, const int8_t *restrict a, const long lda,\n"
    "           const int8_t *restrict b, const long ldb, int32_t *restrict s,\n"
    "           int32_t *restrict cs) {\n"
    "    int32x4_t c[4][4], t[4];\n"
    "    for (int r = 0; r < 4; ++r) {\n"
    "        for (int j = 0; j < 4; ++j) {\n"
    "            c[r][j] = vdupq_n_s32(0);\n"
    "        }\n"
    "        t[r] = vdupq_n_s32(0);\n"
    "    }\n"
    "    int k = 0;\n"
    "#if defined(__ARM_FEATURE_DOTPROD)\n"
    "    const int8x16_t one = vdupq_n_s8(1);\n"
    "    for (; k + 4 <= K; k += 4) {\n"
    "        const int8_t *bk = b + (long)k * ldb;\n"
    "        /* rows k..k+3 of 16 columns into 4 vectors of 4 columns x 4 taps */\n"
    "        const int8x16x2_t z01 = vzipq_s8(vld1q_s8(bk), vld1q_s8(bk + ldb));\n"
    "        const int8x16x2_t z23 = vzipq_s8(vld1q_s8(bk + 2 * ldb), vld1q_s8(bk + 3 * ldb));\n"
    "        const int16x8x2_t lo = vzipq_s16(vreinterpretq_s16_s8(z01.val[0]),\n"
    "                                         vreinterpretq_s16_s8(z23.val[0]));\n"
    "        const int16x8x2_t hi = vzipq_s16(vreinterpretq_s16_s8(z01.val[1]),\n"
    "                                         vreinterpretq_s16_s8(z23.val[1]));\n"
    "        const int8x16_t q0 = vreinterpretq_s8_s16(lo.val[0]);\n"
    "        const int8x16_t q1 = vreinterpretq_s8_s16(lo.val[1]);\n"
    "        const int8x16_t q2 = vreinterpretq_s8_s16(hi.val[0]);\n"
    "        const int8x16_t q3 = vreinterpretq_s8_s16(hi.val[1]);\n"
    "        if (cs) {\n"
    "            t[0] = vdotq_s32(t[0], q0, one);\n"
    "            t[1] = vdotq_s32(t[1], q1, one);\n"
    "            t[2] = vdotq_s32(t[2], q2, one);\n"
    "            t[3] = vdotq_s32(t[3], q3, one);\n"
    "        }\n"
    "        for (int r = 0; r < nr; ++r) {\n"
    "            uint32_t w;\n"
    "            memcpy(&w, a + r * lda + k, 4);\n"
    "            const int8x16_t av = vreinterpretq_s8_u32(vdupq_n_u32(w));\n"
    "            c[r][0] = vdotq_s32(c[r][0], q0, av);\n"
    "            c[r][1] = vdotq_s32(c[r][1], q1, av);\n"
    "            c[r][2] = vdotq_s32(c[r][2], q2, av);\n"
    "            c[r][3] = vdotq_s32(c[r][3], q3, av);\n"
    "        }\n"
    "    }\n"
    "#else\n"
    "    for (; k + 8 <= K; k += 8) {\n"
    "        int16x8_t av[4];\n"
    "        for (int r = 0; r < nr; ++r) {\n"
    "            av[r] = vmovl_s8(vld1_s8(a + r * lda + k));\n"
    "        }\n"
    "        TGQ_N_STEP(0)\n"
    "        TGQ_N_STEP(1)\n"
    "        TGQ_N_STEP(2)\n"
    "        TGQ_N_STEP(3)\n"
    "        TGQ_N_STEP(4)\n"
    "        TGQ_N_STEP(5)\n"
    "        TGQ_N_STEP(6)\n"
    "        TGQ_N_STEP(7)\n"
    "    }\n"
    "#endif\n"
    "    for (; k < K; ++k) {\n"
    "        const int8x16_t bv = vld1q_s8(b + (long)k * ldb);\n"
    "        const int16x8_t bl = vmovl_s8(vget_low_s8(bv)), bh = vmovl_high_s8(bv);\n"
    "        if (cs) {\n"
    "            t[0] = vaddw_s16(t[0], vget_low_s16(bl));\n"
    "            t[1] = vaddw_high_s16(t[1], bl);\n"
    "            t[2] = vaddw_s16(t[2], vget_low_s16(bh));\n"
    "            t[3] = vaddw_high_s16(t[3], bh);\n"
    "        }\n"
    "        for (int r = 0; r < nr; ++r) {\n"
    "            const int16_t v = a[r * lda + k];\n"
    "            c[r][0] = vmlal_n_s16(c[r][0], vget_low_s16(bl), v);\n"
    "            c[r][1] = vmlal_high_n_s16(c[r][1], bl, v);\n"
    "            c[r][2] = vmlal_n_s16(c[r][2], vget_low_s16(bh), v);\n"
    "            c[r][3] = vmlal_high_n_s16(c[r][3], bh, v);\n"
    "        }\n"
    "    }\n"
    "    for (int r = 0; r < nr; ++r) {\n"
    "        for (int j = 0; j < 4; ++j) {\n"
    "            vst1q_s32(s + r * 16 + 4 * j, c[r][j]);\n"
    "        }\n"
    "    }\n"
    "    if (cs) {\n"
    "        for (int j = 0; j < 4; ++j) {\n"
    "            vst1q_s32(cs + 4 * j, t[j]);\n"
    "        }\n"
    "    }\n"
    "}\n"
    "#endif\n\n";

void tether__c_qneon_helpers(tether__sbuf *out) {
    tether__sbuf_puts(out, neon_helpers);
}

static int is_int8(DLDataType t) {
    return t.code == kDLInt && t.bits == 8 && t.lanes == 1;
}

static int is_8bit(DLDataType t) {
    return (t.code == kDLInt || t.code == kDLUInt) && t.bits == 8 && t.lanes == 1;
}

/* input i absent, or a constant of zeros */
static int zero_or_absent(const em *e, const tether_ir_node *nd, int i) {
    if (i >= nd->ninputs || nd->inputs[i] < 0) {
        return 1;
    }
    const tether_ir_tensor *z = T(e, nd->inputs[i]);
    if (z->kind != TETHER_TENSOR_CONSTANT || !z->data) {
        return 0;
    }
    const int32_t *v = z->data;
    for (size_t j = 0; j < tether_ir_tensor_elements(z); j++) {
        if (v[j] != 0) {
            return 0;
        }
    }
    return 1;
}

/* input i absent or of one element */
static int scalar_or_absent(const em *e, const tether_ir_node *nd, int i) {
    return i >= nd->ninputs || nd->inputs[i] < 0 ||
           tether_ir_tensor_elements(T(e, nd->inputs[i])) == 1;
}

static void pexpr(const em *e, const tether_ir_node *nd, const kargs *k, int i, const char *c,
                  char *out, size_t n) {
    if (i >= nd->ninputs || nd->inputs[i] < 0) {
        snprintf(out, n, "0");
        return;
    }
    snprintf(out, n, "(int32_t)%s[%s]", k->in[i],
             tether_ir_tensor_elements(T(e, nd->inputs[i])) == 1 ? "0" : c);
}

/* the signed value of an 8-bit element expression v: x itself, or x - 128 for uint8 */
static void to_s8(DLDataType t, const char *v, char *out, size_t n) {
    if (t.code == kDLUInt) {
        snprintf(out, n, "(int8_t)((int32_t)%s - 128)", v);
    } else {
        snprintf(out, n, "%s", v);
    }
}

/* xz, yz, and the zero point in the signed domain (xq) */
static void prologue(em *e, const tether_ir_node *nd, const kargs *k, int zi, DLDataType t) {
    char xz[96], yz[96];
    if (nd->ninputs > 4 && nd->inputs[4] >= 0) {
        line(e, "(void)%s; /* the weight zero point: 0 */", k->in[4]);
    }
    pexpr(e, nd, k, zi, "0", xz, sizeof xz);
    pexpr(e, nd, k, 6, "0", yz, sizeof yz);
    line(e, "const int32_t xz = %s, yz = %s;", xz, yz);
    line(e, "const int32_t xq = xz - %d; /* the zero point of the signed operand */",
         t.code == kDLUInt ? 128 : 0);
}

/* rows o..o+nr-1 of res (nv columns from p) requantized into yrow(o + r) + p + j */
static void store_rows(em *e, const qg *q, const kargs *k, const char *init, const char *yexpr,
                       const char *mrow, const char *extra) {
    line(e, "for (int r = 0; r < nr; ++r) {");
    e->depth++;
    if (q->per_ch) {
        line(e, "const int32_t m0 = %s[2 * (%s)], s0 = %s[2 * (%s) + 1];", k->in[5], mrow, k->in[5],
             mrow);
    } else {
        line(e, "const int32_t m0 = %s[0], s0 = %s[1];", k->in[5], k->in[5]);
    }
    line(e, "for (int j = 0; j < nv; ++j) {");
    e->depth++;
    line(e, "const int32_t acc = %s + res[r * 16 + j]%s;", init, extra);
    tether__c_qstore(e, q, yexpr, "acc", "m0", "s0");
    close_block(e);
    close_block(e);
}

/* the 16-pixel im2col tile from pixel p (the last pixel repeated past P) */
static void im2col(em *e, const qg *q, DLDataType xt, long long P) {
    char v[96];
    to_s8(xt, "xr[iw]", v, sizeof v);
    line(e, "for (int j = 0; j < 16; ++j) {");
    e->depth++;
    line(e, "const int pp = p + j < %lld ? p + j : %lld;", P, P - 1);
    line(e, "const int oh = pp / %lld, ow = pp - oh * %lld;", q->OW, q->OW);
    line(e, "const int ih0 = oh * %lld - %lld, iw0 = ow * %lld - %lld;", q->SH, q->PT, q->SW,
         q->PL);
    line(e, "int8_t *restrict tj = tile + j;");
    line(e, "for (int c = 0; c < %lld; ++c) {", q->C);
    e->depth++;
    line(e, "for (int kh = 0; kh < %lld; ++kh) {", q->KH);
    e->depth++;
    line(e, "const int ih = ih0 + kh * %lld;", q->DH);
    line(e, "const int rok = ih >= 0 && ih < %lld;", q->H);
    line(e, "const %s *restrict xr = xn + (c * %lld + (rok ? ih : 0)) * %lld;", q->xt, q->H, q->W);
    line(e, "for (int kw = 0; kw < %lld; ++kw, tj += 16) {", q->KW);
    line(e, "    const int iw = iw0 + kw * %lld;", q->DW);
    line(e, "    *tj = rok && iw >= 0 && iw < %lld ? %s : (int8_t)xq;", q->W, v);
    line(e, "}");
    close_block(e);
    close_block(e);
    close_block(e);
}

static void gemm_conv(em *e, const tether_ir_node *nd, const kargs *k, const qg *q, DLDataType xt) {
    long long K = q->C * q->KH * q->KW, P = q->OH * q->OW;
    int pointwise = q->KH == 1 && q->KW == 1 && q->SH == 1 && q->SW == 1 && q->PT == 0 &&
                    q->PL == 0 && q->OH == q->H && q->OW == q->W;
    int direct = pointwise && is_int8(xt); /* full blocks read the input planes in place */
    char b[96];
    prologue(e, nd, k, 3, xt);
    pexpr(e, nd, k, 2, "o", b, sizeof b);
    line(e, "int32_t qi[%lld]; /* bias - xq * sum(w): the input zero point folded */", q->O);
    line(e, "int8_t tile[%lld]; /* 16 pixels' patches, tap-major */", K * 16);
    line(e, "int32_t res[64];");
    line(e, "for (int o = 0; o < %lld; ++o) {", q->O);
    line(e, "    const %s *restrict wo = %s + o * %lld;", q->wt, k->in[1], K);
    line(e, "    int32_t sw = 0;");
    line(e, "    for (int t = 0; t < %lld; ++t) {", K);
    line(e, "        sw += wo[t];");
    line(e, "    }");
    line(e, "    qi[o] = %s - xq * sw;", b);
    line(e, "}");
    loop(e, "n", q->N);
    line(e, "const %s *restrict xn = %s + n * %lld;", q->xt, k->in[0], q->C * q->H * q->W);
    line(e, "%s *restrict yn = %s + n * %lld;", q->yt, k->out, q->O * P);
    line(e, "for (int p = 0; p < %lld; p += 16) {", P);
    e->depth++;
    line(e, "const int nv = p + 16 <= %lld ? 16 : %lld - p;", P, P);
    line(e, "const int8_t *bt = tile;");
    line(e, "long ldb = 16;");
    if (pointwise) {
        if (direct) {
            line(e, "if (nv == 16) {");
            line(e, "    bt = (const int8_t *)xn + p;");
            line(e, "    ldb = %lld;", P);
            line(e, "} else {");
        } else {
            line(e, "{");
        }
        e->depth++;
        char v[96];
        to_s8(xt, "xc[p + j < P ? p + j : P - 1]", v, sizeof v);
        line(e, "enum { P = %lld };", P);
        line(e, "for (int c = 0; c < %lld; ++c) {", q->C);
        line(e, "    const %s *restrict xc = xn + c * %lld;", q->xt, P);
        line(e, "    for (int j = 0; j < 16; ++j) {");
        line(e, "        tile[c * 16 + j] = %s;", v);
        line(e, "    }");
        line(e, "}");
        close_block(e);
    } else {
        im2col(e, q, xt, P);
    }
    line(e, "int o = 0;");
    for (int pass = 0; pass < 2; pass++) {
        int nr = pass == 0 ? 4 : 1;
        if (pass == 0) {
            line(e, "for (; o + 4 <= %lld; o += 4) {", q->O);
        } else {
            line(e, "for (; o < %lld; ++o) {", q->O);
        }
        e->depth++;
        line(e, "const int nr = %d;", nr);
        line(e, "tgq_n_gemm(%d, %lld, (const int8_t *)%s + o * %lld, %lld, bt, ldb, res, 0);", nr,
             K, k->in[1], K, K);
        char y[96];
        snprintf(y, sizeof y, "yn[(o + r) * %lld + p + j]", P);
        store_rows(e, q, k, "qi[o + r]", y, "o + r", "");
        close_block(e);
    }
    close_block(e);
    close_block(e);
}

static void depthwise(em *e, const tether_ir_node *nd, const kargs *k, const qg *q, long long WP) {
    long long OW8 = q->OW & ~7LL;
    long long RB = WP + 16; /* slack: the stride-2 loads read 16 values */
    char b[96];
    prologue(e, nd, k, 3, T(e, nd->inputs[0])->dtype);
    line(e, "(void)xq;");
    line(e, "int16_t rb[%lld]; /* the window's rows as x - x_zp, 0 in the padding */", q->KH * RB);
    line(e, "memset(rb, 0, sizeof rb);");
    loop(e, "n", q->N);
    line(e, "for (int oc = 0; oc < %lld; ++oc) {", q->O);
    e->depth++;
    pexpr(e, nd, k, 2, "oc", b, sizeof b);
    line(e, "const %s *restrict w0 = %s + oc * %lld;", q->wt, k->in[1], q->KH * q->KW);
    line(e, "const int32_t b0 = %s;", b);
    if (q->per_ch) {
        line(e, "const int32_t m0 = %s[2 * oc], s0 = %s[2 * oc + 1];", k->in[5], k->in[5]);
    } else {
        line(e, "const int32_t m0 = %s[0], s0 = %s[1];", k->in[5], k->in[5]);
    }
    line(e, "const %s *restrict xc = %s + (n * %lld + oc) * %lld;", q->xt, k->in[0], q->C,
         q->H * q->W);
    line(e, "%s *restrict yo = %s + (n * %lld + oc) * %lld;", q->yt, k->out, q->O, q->OH * q->OW);
    line(e, "for (int oh = 0; oh < %lld; ++oh) {", q->OH);
    e->depth++;
    line(e, "for (int kh = 0; kh < %lld; ++kh) {", q->KH);
    e->depth++;
    line(e, "const int ih = oh * %lld - %lld + kh * %lld;", q->SH, q->PT, q->DH);
    line(e, "int16_t *restrict rr = rb + kh * %lld;", RB);
    line(e, "if (ih < 0 || ih >= %lld) {", q->H);
    line(e, "    memset(rr, 0, %lld * sizeof(int16_t));", WP);
    line(e, "    continue;");
    line(e, "}");
    line(e, "const %s *restrict xr = xc + ih * %lld;", q->xt, q->W);
    line(e, "for (int i = 0; i < %lld; ++i) {", WP);
    line(e, "    const int iw = i - %lld;", q->PL);
    line(e, "    rr[i] = (int16_t)(iw >= 0 && iw < %lld ? (int32_t)xr[iw] - xz : 0);", q->W);
    line(e, "}");
    close_block(e);
    line(e, "int ow = 0;");
    if (OW8 > 0 && (q->SW == 1 || q->SW == 2)) {
        line(e, "for (; ow < %lld; ow += 8) {", OW8);
        e->depth++;
        line(e, "int32x4_t lo = vdupq_n_s32(b0), hi = lo;");
        for (long long kh = 0; kh < q->KH; kh++) {
            for (long long kw = 0; kw < q->KW; kw++) {
                char src[96];
                snprintf(src, sizeof src, "rb + %lld + ow * %lld", kh * RB + kw * q->DW, q->SW);
                line(e, "{");
                e->depth++;
                if (q->SW == 1) {
                    line(e, "const int16x8_t v = vld1q_s16(%s);", src);
                } else {
                    line(e, "const int16x8_t v = vld2q_s16(%s).val[0];", src);
                }
                line(e, "const int16_t u = (int16_t)w0[%lld];", kh * q->KW + kw);
                line(e, "lo = vmlal_n_s16(lo, vget_low_s16(v), u);");
                line(e, "hi = vmlal_high_n_s16(hi, v, u);");
                close_block(e);
            }
        }
        line(e, "int32_t res[8];");
        line(e, "vst1q_s32(res, lo);");
        line(e, "vst1q_s32(res + 4, hi);");
        line(e, "for (int j = 0; j < 8; ++j) {");
        e->depth++;
        line(e, "const int32_t acc = res[j];");
        char y[64];
        snprintf(y, sizeof y, "yo[oh * %lld + ow + j]", q->OW);
        tether__c_qstore(e, q, y, "acc", "m0", "s0");
        close_block(e);
        close_block(e);
    }
    line(e, "for (; ow < %lld; ++ow) {", q->OW);
    e->depth++;
    line(e, "int32_t acc = b0;");
    line(e, "for (int kh = 0; kh < %lld; ++kh) {", q->KH);
    line(e, "    for (int kw = 0; kw < %lld; ++kw) {", q->KW);
    line(e,
         "        acc += (int32_t)rb[kh * %lld + ow * %lld + kw * %lld] * (int32_t)w0[kh * %lld "
         "+ kw];",
         RB, q->SW, q->DW, q->KW);
    line(e, "    }");
    line(e, "}");
    char y[64];
    snprintf(y, sizeof y, "yo[oh * %lld + ow]", q->OW);
    tether__c_qstore(e, q, y, "acc", "m0", "s0");
    close_block(e);
    close_block(e);
    close_block(e);
    close_block(e);
}

int tether__c_qneon_conv(em *e, const tether_ir_node *nd, const kargs *k) {
    if (nd->ninputs <= 5 || nd->inputs[5] < 0) {
        return 0;
    }
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *w = T(e, nd->inputs[1]);
    if (!is_8bit(x->dtype) || !is_int8(w->dtype) || !zero_or_absent(e, nd, 4) ||
        !scalar_or_absent(e, nd, 3) || !scalar_or_absent(e, nd, 6)) {
        return 0;
    }
    qg q;
    tether__c_qgeo(e, nd, &q);
    long long K = q.C * q.KH * q.KW;
    long long WP = (q.OW - 1) * q.SW + (q.KW - 1) * q.DW + 1;
    if (q.G == 1 && K <= NEON_MAX_TAPS && q.O <= NEON_MAX_CH && q.OH * q.OW >= 1) {
        line(e, "#if defined(__aarch64__) && defined(__ARM_NEON) /* emit_c_qneon.c */");
        gemm_conv(e, nd, k, &q, x->dtype);
    } else if (q.G == q.C && q.O == q.C && WP <= NEON_MAX_ROW && q.KH * q.KW <= 256 && q.OW >= 1) {
        line(e, "#if defined(__aarch64__) && defined(__ARM_NEON) /* emit_c_qneon.c */");
        depthwise(e, nd, k, &q, WP);
    } else {
        return 0;
    }
    line(e, "#else");
    return 1;
}

int tether__c_qneon_matmul(em *e, const tether_ir_node *nd, const kargs *k) {
    if (nd->ninputs <= 5 || nd->inputs[5] < 0) {
        return 0;
    }
    tether_ir_tensor av, bv, yv;
    tether__ir_matmul_view(e->g, nd, &av, &bv, &yv);
    int nb = yv.ndim - 2;
    long long M = yv.shape[nb], N = yv.shape[nb + 1], K = av.shape[av.ndim - 1];
    int64_t batch = 1;
    for (int i = 0; i < nb; i++) {
        batch *= yv.shape[i];
    }
    const tether_ir_tensor *y = T(e, nd->outputs[0]);
    if (batch != 1 || !is_8bit(av.dtype) || !is_int8(bv.dtype) || !zero_or_absent(e, nd, 4) ||
        !scalar_or_absent(e, nd, 3) || !scalar_or_absent(e, nd, 6) || K > NEON_MAX_TAPS || K < 1 ||
        M < 1 || N < 1 || !is_8bit(y->dtype)) {
        return 0;
    }
    /* the store's requantization form (tether__c_qgeo's, for a matrix) */
    qg q;
    memset(&q, 0, sizeof q);
    q.yt = tether__c_type(y->dtype);
    const tether_ir_tensor *rq = T(e, nd->inputs[5]);
    q.per_ch = rq->shape[0] != 1;
    int64_t l, h;
    tether__quant_range(y->dtype, &l, &h);
    if (nd->attrs.min > (float)l) {
        l = (int64_t)nd->attrs.min + ((float)(int64_t)nd->attrs.min < nd->attrs.min);
    }
    if (nd->attrs.max < (float)h) {
        h = (int64_t)nd->attrs.max - ((float)(int64_t)nd->attrs.max > nd->attrs.max);
    }
    q.lo = (long long)l;
    q.hi = (long long)h;
    q.rqs = rq->kind == TETHER_TENSOR_CONSTANT && rq->data != NULL;
    for (size_t i = 1; q.rqs && i < tether_ir_tensor_elements(rq); i += 2) {
        const int32_t sh = ((const int32_t *)rq->data)[i];
        q.rqs = sh >= -31 && sh <= -1;
    }
    int conv_a = av.dtype.code == kDLUInt;
    char b[96], v[96];
    line(e, "#if defined(__aarch64__) && defined(__ARM_NEON) /* emit_c_qneon.c */");
    prologue(e, nd, k, 3, av.dtype);
    pexpr(e, nd, k, 2, "j + c", b, sizeof b);
    line(e, "int8_t tile[%lld]; /* a last partial block of B's columns */", K * 16);
    if (conv_a) {
        line(e, "int8_t as[%lld]; /* 4 rows of A - 128 */", 4 * K);
    }
    line(e, "int32_t res[64], cs[16];");
    line(e, "const int8_t *restrict bm = (const int8_t *)%s;", k->in[1]);
    line(e, "for (int j = 0; j < %lld; j += 16) {", N);
    e->depth++;
    line(e, "const int nv = j + 16 <= %lld ? 16 : %lld - j;", N, N);
    line(e, "const int8_t *bt = bm + j;");
    line(e, "long ldb = %lld;", N);
    line(e, "if (nv < 16) {");
    line(e, "    for (int t = 0; t < %lld; ++t) {", K);
    line(e, "        for (int c = 0; c < 16; ++c) {");
    line(e, "            tile[t * 16 + c] = bm[t * %lld + j + (c < nv ? c : nv - 1)];", N);
    line(e, "        }");
    line(e, "    }");
    line(e, "    bt = tile;");
    line(e, "    ldb = 16;");
    line(e, "}");
    line(e, "int32_t bi[16]; /* bias - xq * (B's column sum) */");
    line(e, "int i = 0;");
    for (int pass = 0; pass < 2; pass++) {
        int nr = pass == 0 ? 4 : 1;
        if (pass == 0) {
            line(e, "for (; i + 4 <= %lld; i += 4) {", M);
        } else {
            line(e, "for (; i < %lld; ++i) {", M);
        }
        e->depth++;
        line(e, "const int nr = %d;", nr);
        if (conv_a) {
            to_s8(av.dtype, "ar[t]", v, sizeof v);
            line(e, "for (int r = 0; r < nr; ++r) {");
            line(e, "    const uint8_t *restrict ar = %s + (i + r) * %lld;", k->in[0], K);
            line(e, "    for (int t = 0; t < %lld; ++t) {", K);
            line(e, "        as[r * %lld + t] = %s;", K, v);
            line(e, "    }");
            line(e, "}");
            line(e, "const int8_t *ap = as;");
        } else {
            line(e, "const int8_t *ap = (const int8_t *)%s + i * %lld;", k->in[0], K);
        }
        line(e, "if (i == 0) {");
        line(e, "    tgq_n_gemm(%d, %lld, ap, %lld, bt, ldb, res, cs);", nr, K, K);
        line(e, "    for (int c = 0; c < 16; ++c) {");
        line(e, "        bi[c] = c < nv ? %s - xq * cs[c] : 0;", b);
        line(e, "    }");
        line(e, "} else {");
        line(e, "    tgq_n_gemm(%d, %lld, ap, %lld, bt, ldb, res, 0);", nr, K, K);
        line(e, "}");
        char y2[96];
        snprintf(y2, sizeof y2, "%s[(i + r) * %lld + j + j2]", k->out, N);
        /* store_rows indexes res by r and j; the column is j2 here */
        line(e, "for (int r = 0; r < nr; ++r) {");
        e->depth++;
        line(e, "for (int j2 = 0; j2 < nv; ++j2) {");
        e->depth++;
        if (q.per_ch) {
            line(e, "const int32_t m0 = %s[2 * (j + j2)], s0 = %s[2 * (j + j2) + 1];", k->in[5],
                 k->in[5]);
        } else {
            line(e, "const int32_t m0 = %s[0], s0 = %s[1];", k->in[5], k->in[5]);
        }
        line(e, "const int32_t acc = bi[j2] + res[r * 16 + j2];");
        tether__c_qstore(e, &q, y2, "acc", "m0", "s0");
        close_block(e);
        close_block(e);
        close_block(e);
    }
    close_block(e);
    line(e, "#else");
    return 1;
}
