/*
 * The C emitter's quantized operators (docs/quantization.md): quantize, dequantize, qconv and
 * qmatmul kernels in portable C99, and the helpers a module with any of them defines
 * (tgq_requant: the integer requantization; tgq_rqs: the same for shifts -31..-1 in fewer
 * instructions; under AVX2 tgq_rq8 / tgq_rq8k / tgq_rq8h / tgq_rq8hs for 8 lanes; tgq_sat_s8/u8,
 * tgq_clamp: the output clamp; tgq_rne: round half to even of a float).
 *
 * What must stay true: every kernel computes what the interpreter's interp_quant.c computes, byte
 * for byte: int32 accumulation of (x - x_zp) * (w - w_zp) plus the int32 bias, requantization by
 * tgq_requant (ir/quant.c's tether_quant_requant, integers only), the clamp to the output type
 * within the node's min..max; quantize divides in float32 and rounds half to even. qconv and
 * qmatmul kernels contain no float arithmetic (test_quant checks the generated text).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c_internal.h"
#include "emit_c_qconv.h"
#include "tether/crt/dtype.h"

static const char quant_helpers[] =
    "/* Integer requantization (docs/quantization.md): round half to even of\n"
    " * acc * mult / 2^(31 - shift), one rounding of the exact 64-bit product, then + zp and the\n"
    " * clamp lo..hi. Integers only. */\n"
    "static inline int32_t tgq_requant(int32_t acc, int32_t mult, int32_t shift, int32_t zp,\n"
    "                                  int32_t lo, int32_t hi) {\n"
    "    int64_t p = (int64_t)acc * (int64_t)mult, r;\n"
    "    int n = 31 - (int)shift;\n"
    "    if (n <= 0) {\n"
    "        r = p;\n"
    "    } else if (n >= 63) {\n"
    "        r = 0;\n"
    "    } else {\n"
    "        /* p + 2^63 >= 0; floor((u + half - 1 + lsb) / 2^n) is round half to even of\n"
    "         * u / 2^n (lsb: the low bit of floor(u / 2^n), which 2^63 / 2^n keeps) */\n"
    "        uint64_t u = (uint64_t)p + ((uint64_t)1 << 63);\n"
    "        u += (((uint64_t)1 << (n - 1)) - 1u) + ((u >> n) & 1u);\n"
    "        r = (int64_t)(u >> n) - (int64_t)(((uint64_t)1 << 63) >> n);\n"
    "    }\n"
    "    r += zp;\n"
    "    return r < lo ? lo : r > hi ? hi : (int32_t)r;\n"
    "}\n\n"
    "/* The same value for shift in -31..-1 (the kernels use it when every channel's shift is\n"
    " * there, emit_c_qpatch.c): with n = 32 + k (k = -1 - shift), lsb = bit n of p and\n"
    " * a = p - 1 + lsb, round half to even of p / 2^n = (floor(a / 2^(n-1)) + 1) / 2 (floor);\n"
    " * a / 2^31 fits 32 bits as |p| < 2^62. Right shifts of negative values are arithmetic\n"
    " * (gcc, clang). On Armv7-M: SMULL and 10 more instructions. */\n"
    "static inline int32_t tgq_rqs(int32_t acc, int32_t mult, int32_t k) {\n"
    "    const int64_t p = (int64_t)acc * mult;\n"
    "    const int32_t hi = (int32_t)(p >> 32);\n"
    "    const int64_t a = p - (int64_t)(~(hi >> k) & 1);\n"
    "    return (((int32_t)(a >> 31) >> k) + 1) >> 1;\n"
    "}\n\n"
    "#if defined(__ARM_FEATURE_SAT) || defined(__ARM_FEATURE_DSP)\n"
    "#include <arm_acle.h>\n"
    "#endif\n"
    "#if defined(__ARM_FEATURE_SAT)\n"
    "#define tgq_sat_s8(v) ((int8_t)__ssat((v), 8))\n"
    "#define tgq_sat_u8(v) ((uint8_t)__usat((v), 8))\n"
    "#else\n"
    "#define tgq_sat_s8(v) tgq_clamp((v), -128, 127)\n"
    "#define tgq_sat_u8(v) tgq_clamp((v), 0, 255)\n"
    "#endif\n"
    "static inline int32_t tgq_clamp(int32_t v, int32_t lo, int32_t hi) {\n"
    "    return v < lo ? lo : v > hi ? hi : v;\n"
    "}\n\n"
    "#if defined(__ARM_FEATURE_DSP)\n"
    "static inline uint32_t tgq_ror8(uint32_t v) {\n"
    "    return (v >> 8) | (v << 24);\n"
    "}\n"
    "/* SXTB16/UXTB16 of v rotated by 8 in one instruction (gcc does not fold the rotation) */\n"
    "static inline uint32_t tgq_sxtb16_r8(uint32_t v) {\n"
    "    uint32_t r;\n"
    "    __asm__(\"sxtb16 %0, %1, ror #8\" : \"=r\"(r) : \"r\"(v));\n"
    "    return r;\n"
    "}\n"
    "static inline uint32_t tgq_uxtb16_r8(uint32_t v) {\n"
    "    uint32_t r;\n"
    "    __asm__(\"uxtb16 %0, %1, ror #8\" : \"=r\"(r) : \"r\"(v));\n"
    "    return r;\n"
    "}\n"
    "#endif\n"
    "#if defined(__AVX2__)\n"
    "#include <immintrin.h>\n"
    "/* tgq_requant of 4 int64 products p (n = 31 - shift in 1..62 in each lane), the same\n"
    " * unsigned-bias rounding, clamped to lo..hi (64-bit lanes) */\n"
    "static inline __m256i tgq_rnd4(__m256i p, __m256i n, __m256i lo, __m256i hi) {\n"
    "    const __m256i one = _mm256_set1_epi64x(1), top = _mm256_slli_epi64(one, 63);\n"
    "    __m256i u = _mm256_xor_si256(p, top);\n"
    "    const __m256i h = _mm256_sub_epi64(_mm256_sllv_epi64(one, _mm256_sub_epi64(n, one)), "
    "one);\n"
    "    u = _mm256_add_epi64(u, _mm256_add_epi64(h, _mm256_and_si256(_mm256_srlv_epi64(u, n), "
    "one)));\n"
    "    __m256i r = _mm256_sub_epi64(_mm256_srlv_epi64(u, n), _mm256_srlv_epi64(top, n));\n"
    "    r = _mm256_blendv_epi8(r, lo, _mm256_cmpgt_epi64(lo, r));\n"
    "    return _mm256_blendv_epi8(r, hi, _mm256_cmpgt_epi64(r, hi));\n"
    "}\n"
    "/* tgq_requant of 8 int32 accumulators: m the 8 multipliers (broadcast for one channel), "
    "ne/no\n"
    " * the n of the even/odd lanes, lo/hi the clamp minus zp (64-bit lanes), zp 8 x int32 */\n"
    "static inline __m256i tgq_rq8(__m256i acc, __m256i m, __m256i ne, __m256i no, __m256i lo,\n"
    "                              __m256i hi, __m256i zp) {\n"
    "    const __m256i re = tgq_rnd4(_mm256_mul_epi32(acc, m), ne, lo, hi);\n"
    "    const __m256i ro = tgq_rnd4(\n"
    "        _mm256_mul_epi32(_mm256_srli_epi64(acc, 32), _mm256_srli_epi64(m, 32)), no, lo, hi);\n"
    "    return _mm256_add_epi32(_mm256_blend_epi32(re, _mm256_slli_epi64(ro, 32), 0xAA), zp);\n"
    "}\n"
    "/* tgq_rq8 when every lane's n = 31 - shift is in 32..62 (shift -31..-1; the kernels use it\n"
    " * when every channel's shift is there): u = p + 2^(n-1) - 1 + lsb (lsb: bit n of p) in\n"
    " * 64-bit lanes, |u| < 2^63; floor(u / 2^n) is the high 32 bits of u shifted right by\n"
    " * n - 32 (arithmetic, 32-bit lanes), which fits int32; the clamp in 32-bit lanes (lo, hi:\n"
    " * the clamp minus zp as 64-bit lanes, their low halves used). Equal to tgq_requant. */\n"
    "static inline __m256i tgq_rq8k(__m256i acc, __m256i m, __m256i ne, __m256i no, __m256i lo,\n"
    "                               __m256i hi, __m256i zp) {\n"
    "    const __m256i one = _mm256_set1_epi64x(1), z = _mm256_setzero_si256();\n"
    "    const __m256i be = _mm256_sllv_epi64(one, ne), bo = _mm256_sllv_epi64(one, no);\n"
    "    const __m256i pe = _mm256_mul_epi32(acc, m);\n"
    "    const __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(acc, 32), _mm256_srli_epi64(m, "
    "32));\n"
    "    const __m256i ue = _mm256_add_epi64(_mm256_add_epi64(pe, _mm256_srli_epi64(be, 1)),\n"
    "                                        _mm256_cmpeq_epi64(_mm256_and_si256(pe, be), z));\n"
    "    const __m256i uo = _mm256_add_epi64(_mm256_add_epi64(po, _mm256_srli_epi64(bo, 1)),\n"
    "                                        _mm256_cmpeq_epi64(_mm256_and_si256(po, bo), z));\n"
    "    const __m256i t = _mm256_set1_epi64x(32);\n"
    "    const __m256i k = _mm256_blend_epi32(_mm256_sub_epi64(ne, t),\n"
    "                                         _mm256_slli_epi64(_mm256_sub_epi64(no, t), 32), "
    "0xAA);\n"
    "    __m256i r = _mm256_srav_epi32(_mm256_blend_epi32(_mm256_srli_epi64(ue, 32), uo, 0xAA), "
    "k);\n"
    "    r = _mm256_min_epi32(_mm256_max_epi32(r, _mm256_shuffle_epi32(lo, 0)),\n"
    "                         _mm256_shuffle_epi32(hi, 0));\n"
    "    return _mm256_add_epi32(r, zp);\n"
    "}\n"
    "/* tgq_rq8k when the emitter has proved that no accumulator makes acc * m an exact tie\n"
    " * (emit_c_qrq_x86.c): round half up, u = p + 2^(n-1), is then round half to even; the\n"
    " * same shift (tgq_rq8h_r, before the clamp and the zero point) and clamp. Equal to\n"
    " * tgq_requant on those accumulators. */\n"
    "static inline __m256i tgq_rq8h_r(__m256i acc, __m256i m, __m256i ne, __m256i no) {\n"
    "    const __m256i one = _mm256_set1_epi64x(1), t = _mm256_set1_epi64x(32);\n"
    "    const __m256i ue = _mm256_add_epi64(_mm256_mul_epi32(acc, m),\n"
    "                                        _mm256_sllv_epi64(one, _mm256_sub_epi64(ne, one)));\n"
    "    const __m256i uo = _mm256_add_epi64(\n"
    "        _mm256_mul_epi32(_mm256_srli_epi64(acc, 32), _mm256_srli_epi64(m, 32)),\n"
    "        _mm256_sllv_epi64(one, _mm256_sub_epi64(no, one)));\n"
    "    const __m256i k = _mm256_blend_epi32(_mm256_sub_epi64(ne, t),\n"
    "                                         _mm256_slli_epi64(_mm256_sub_epi64(no, t), 32), "
    "0xAA);\n"
    "    return _mm256_srav_epi32(_mm256_blend_epi32(_mm256_srli_epi64(ue, 32), uo, 0xAA), k);\n"
    "}\n"
    "static inline __m256i tgq_rq8h(__m256i acc, __m256i m, __m256i ne, __m256i no, __m256i lo,\n"
    "                               __m256i hi, __m256i zp) {\n"
    "    const __m256i r = _mm256_min_epi32(\n"
    "        _mm256_max_epi32(tgq_rq8h_r(acc, m, ne, no), _mm256_shuffle_epi32(lo, 0)),\n"
    "        _mm256_shuffle_epi32(hi, 0));\n"
    "    return _mm256_add_epi32(r, zp);\n"
    "}\n"
    "/* tgq_rq8h without the clamp, for a clamp that is the output type's whole range: the\n"
    " * saturating packs of the 8-bit store clamp (|r| <= 2^30, so r + zp does not wrap) */\n"
    "static inline __m256i tgq_rq8hs(__m256i acc, __m256i m, __m256i ne, __m256i no, __m256i lo,\n"
    "                                __m256i hi, __m256i zp) {\n"
    "    (void)lo;\n"
    "    (void)hi;\n"
    "    return _mm256_add_epi32(tgq_rq8h_r(acc, m, ne, no), zp);\n"
    "}\n"
    "/* 8 int32 lanes already inside the 8-bit range stored as 8 bytes */\n"
    "static inline void tgq_st8s(int8_t *d, __m256i v) {\n"
    "    const __m128i a = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, "
    "1));\n"
    "    _mm_storel_epi64((__m128i *)(void *)d, _mm_packs_epi16(a, a));\n"
    "}\n"
    "static inline void tgq_st8u(uint8_t *d, __m256i v) {\n"
    "    const __m128i a = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, "
    "1));\n"
    "    _mm_storel_epi64((__m128i *)(void *)d, _mm_packus_epi16(a, a));\n"
    "}\n"
    "#endif\n"
    "#include <string.h>\n\n"
    "/* round half to even of a float (|v| clamped to 2^30), without libm */\n"
    "static inline int32_t tgq_rne(float v) {\n"
    "    int32_t i;\n"
    "    float f;\n"
    "    if (v >= 1073741824.0f) {\n"
    "        return 1073741824;\n"
    "    }\n"
    "    if (v <= -1073741824.0f) {\n"
    "        return -1073741824;\n"
    "    }\n"
    "    i = (int32_t)v;\n"
    "    f = v - (float)i;\n"
    "    if (f > 0.5f || (f == 0.5f && (i & 1))) {\n"
    "        i++;\n"
    "    } else if (f < -0.5f || (f == -0.5f && (i & 1))) {\n"
    "        i--;\n"
    "    }\n"
    "    return i;\n"
    "}\n\n";

static int is_quant(tether_op op) {
    return op == TETHER_OP_QUANTIZE || op == TETHER_OP_DEQUANTIZE || op == TETHER_OP_QCONV ||
           op == TETHER_OP_QMATMUL || tether__quant_is_elt(op);
}

void tether__c_quant_helpers(const em *e, tether__sbuf *out) {
    for (int i = 0; i < e->g->nnodes; i++) {
        if (is_quant(e->g->nodes[i].op)) {
            tether__sbuf_puts(out, quant_helpers);
            tether__c_qelt_helpers(out);  /* emit_c_qelt.c */
            tether__c_qneon_helpers(out); /* emit_c_qneon.c: AArch64 only */
            return;
        }
    }
}

/* A parameter input's element c (0 for a one-element one), or "0" when absent. */
static void pexpr(const em *e, const tether_ir_node *nd, const kargs *k, int i, const char *c,
                  char *out, size_t n) {
    if (i >= nd->ninputs || nd->inputs[i] < 0) {
        snprintf(out, n, "0");
        return;
    }
    const tether_ir_tensor *t = T(e, nd->inputs[i]);
    snprintf(out, n, "(int32_t)%s[%s]", k->in[i], tether_ir_tensor_elements(t) == 1 ? "0" : c);
}

static void clamp_range(const tether_ir_node *nd, DLDataType t, long long *lo, long long *hi) {
    int64_t l, h;
    if (!tether__quant_range(t, &l, &h)) {
        l = INT32_MIN;
        h = INT32_MAX;
    }
    if (nd->attrs.min > (float)l) {
        l = (int64_t)nd->attrs.min + ((float)(int64_t)nd->attrs.min < nd->attrs.min);
    }
    if (nd->attrs.max < (float)h) {
        h = (int64_t)nd->attrs.max - ((float)(int64_t)nd->attrs.max > nd->attrs.max);
    }
    *lo = (long long)l;
    *hi = (long long)h;
}

/* The store of accumulator `acc` of channel expression c into y[idx]. */
static void store(em *e, const tether_ir_node *nd, const kargs *k, const char *yb, const char *c,
                  const char *idx) {
    const tether_ir_tensor *y = T(e, nd->outputs[0]);
    const char *yt = tether__c_type(y->dtype);
    if (nd->ninputs <= 5 || nd->inputs[5] < 0) {
        line(e, "%s[%s] = acc;", yb, idx);
        return;
    }
    long long lo, hi;
    clamp_range(nd, y->dtype, &lo, &hi);
    const tether_ir_tensor *rq = T(e, nd->inputs[5]);
    char row[64], yz[96];
    snprintf(row, sizeof row, "%s", rq->shape[0] == 1 ? "0" : c);
    pexpr(e, nd, k, 6, "0", yz, sizeof yz);
    line(e, "%s[%s] = (%s)tgq_requant(acc, %s[2 * (%s)], %s[2 * (%s) + 1], %s, %lld, %lld);", yb,
         idx, yt, k->in[5], row, k->in[5], row, yz, lo, hi);
}

static void k_qconv_other(em *e, const tether_ir_node *nd, const kargs *k);

/* the AArch64 kernel (emit_c_qneon.c) when it applies, the others in its #else */
static void k_qconv(em *e, const tether_ir_node *nd, const kargs *k) {
    const int neon = tether__c_qneon_conv(e, nd, k);
    k_qconv_other(e, nd, k);
    if (neon) {
        line(e, "#endif");
    }
}

static void k_qconv_other(em *e, const tether_ir_node *nd, const kargs *k) {
    if (tether__c_qconv_fast(e, nd, k)) { /* emit_c_qfast.c */
        return;
    }
    const tether_ir_attrs *a = &nd->attrs;
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *w = T(e, nd->inputs[1]),
                           *y = T(e, nd->outputs[0]);
    long long N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    long long O = y->shape[1], OH = y->shape[2], OW = y->shape[3];
    long long KH = w->shape[2], KW = w->shape[3], G = a->groups, CG = C / G, OG = O / G;
    long long SH = a->strides[0], SW = a->strides[1], DH = a->dilations[0], DW = a->dilations[1];
    long long PT = a->pads[0], PL = a->pads[1];
    char xz[96], wz[96], bias[96];
    pexpr(e, nd, k, 3, "0", xz, sizeof xz);
    pexpr(e, nd, k, 4, "oc", wz, sizeof wz);
    pexpr(e, nd, k, 2, "oc", bias, sizeof bias);
    line(e, "const int32_t xz = %s;", xz);
    loop(e, "n", N);
    loop(e, "oc", O);
    line(e, "const int32_t wz = %s, b = %s;", wz, bias);
    line(e, "const %s *restrict wr = %s + oc * %lld;", ctype(e, nd->inputs[1]), k->in[1],
         CG * KH * KW);
    line(e, "const %s *restrict xg = %s + (n * %lld + (oc / %lld) * %lld) * %lld;",
         ctype(e, nd->inputs[0]), k->in[0], C, OG, CG, H * W);
    line(e, "%s *restrict yo = %s + (n * %lld + oc) * %lld;", ctype(e, nd->outputs[0]), k->out, O,
         OH * OW);
    loop(e, "oh", OH);
    /* the kernel rows inside the input: kh in kh0..kh1-1 */
    line(e, "int kh0 = 0, kh1 = %lld;", KH);
    line(e, "while (kh0 < kh1 && oh * %lld - %lld + kh0 * %lld < 0) {", SH, PT, DH);
    line(e, "    kh0++;");
    line(e, "}");
    line(e, "while (kh1 > kh0 && oh * %lld - %lld + (kh1 - 1) * %lld >= %lld) {", SH, PT, DH, H);
    line(e, "    kh1--;");
    line(e, "}");
    loop(e, "ow", OW);
    line(e, "int kw0 = 0, kw1 = %lld;", KW);
    line(e, "int32_t acc = b;");
    line(e, "while (kw0 < kw1 && ow * %lld - %lld + kw0 * %lld < 0) {", SW, PL, DW);
    line(e, "    kw0++;");
    line(e, "}");
    line(e, "while (kw1 > kw0 && ow * %lld - %lld + (kw1 - 1) * %lld >= %lld) {", SW, PL, DW, W);
    line(e, "    kw1--;");
    line(e, "}");
    loop(e, "c", CG);
    line(e, "const %s *restrict xc = xg + c * %lld + (oh * %lld - %lld) * %lld + ow * %lld - %lld;",
         ctype(e, nd->inputs[0]), H * W, SH, PT, W, SW, PL);
    line(e, "const %s *restrict wc = wr + c * %lld;", ctype(e, nd->inputs[1]), KH * KW);
    line(e, "for (int kh = kh0; kh < kh1; ++kh) {");
    e->depth++;
    line(e, "for (int kw = kw0; kw < kw1; ++kw) {");
    e->depth++;
    line(e,
         "acc += ((int32_t)xc[kh * %lld + kw * %lld] - xz) * ((int32_t)wc[kh * %lld + kw] - wz);",
         DH * W, DW, KW);
    close_block(e);
    close_block(e);
    close_block(e);
    char idx[64];
    snprintf(idx, sizeof idx, "oh * %lld + ow", OW);
    store(e, nd, k, "yo", "oc", idx);
    close_block(e);
    close_block(e);
    close_block(e);
    close_block(e);
}

static void offsets(const int64_t *bshape, int nb, const tether_ir_tensor *t, int64_t mat,
                    int64_t *out, int64_t count) {
    int tb = t->ndim - 2;
    for (int64_t f = 0; f < count; f++) {
        int64_t rem = f, off = 0, stride = mat, idx[TETHER_IR_MAX_NDIM];
        for (int d = nb - 1; d >= 0; d--) {
            idx[d] = rem % bshape[d];
            rem /= bshape[d];
        }
        for (int d = tb - 1; d >= 0; d--) {
            off += (t->shape[d] == 1 ? 0 : idx[nb - tb + d]) * stride;
            stride *= t->shape[d];
        }
        out[f] = off;
    }
}

static void table(em *e, const char *name, const int64_t *v, int64_t n) {
    line(e, "static const int32_t %s[%lld] = {", name, (long long)n);
    e->depth++;
    for (int64_t f = 0; f < n; f++) {
        line(e, "%lld,", (long long)v[f]);
    }
    e->depth--;
    line(e, "};");
}

static void k_qmatmul_portable(em *e, const tether_ir_node *nd, const kargs *k);

static void k_qmatmul(em *e, const tether_ir_node *nd, const kargs *k) {
    if (tether__c_qmatmul_x86_ok(e, nd)) { /* emit_c_qmm_x86.c, the portable loop in the #else */
        line(e, "#if defined(__AVX2__)");
        tether__c_qmatmul_x86(e, nd, k);
        line(e, "#else");
        k_qmatmul_portable(e, nd, k);
        line(e, "#endif");
        return;
    }
    k_qmatmul_portable(e, nd, k);
}

static void k_qmatmul_portable(em *e, const tether_ir_node *nd, const kargs *k) {
    tether_ir_tensor av, bv, yv;
    tether__ir_matmul_view(e->g, nd, &av, &bv, &yv);
    int nb = yv.ndim - 2;
    long long M = yv.shape[nb], N = yv.shape[nb + 1], K = av.shape[av.ndim - 1];
    int64_t batch = 1;
    for (int i = 0; i < nb; i++) {
        batch *= yv.shape[i];
    }
    if (batch > 1) {
        int64_t *o = malloc(sizeof(int64_t) * (size_t)batch * 2);
        if (!o) {
            e->s.failed = 1;
            return;
        }
        offsets(yv.shape, nb, &av, M * K, o, batch);
        offsets(yv.shape, nb, &bv, K * N, o + batch, batch);
        table(e, "aoff", o, batch);
        table(e, "boff", o + batch, batch);
        free(o);
    }
    char az[96], bz[96], bias[96];
    pexpr(e, nd, k, 3, "i", az, sizeof az);
    pexpr(e, nd, k, 4, "j", bz, sizeof bz);
    pexpr(e, nd, k, 2, "j", bias, sizeof bias);
    loop(e, "bt", batch);
    line(e, "const %s *restrict ab = %s + %s;", ctype(e, nd->inputs[0]), k->in[0],
         batch > 1 ? "aoff[bt]" : "0");
    line(e, "const %s *restrict bb = %s + %s;", ctype(e, nd->inputs[1]), k->in[1],
         batch > 1 ? "boff[bt]" : "0");
    loop(e, "i", M);
    line(e, "const int32_t az = %s;", az);
    line(e, "const %s *restrict ar = ab + i * %lld;", ctype(e, nd->inputs[0]), K);
    loop(e, "j", N);
    line(e, "const int32_t bz = %s;", bz);
    line(e, "int32_t acc = %s;", bias);
    loop(e, "kk", K);
    line(e, "acc += ((int32_t)ar[kk] - az) * ((int32_t)bb[kk * %lld + j] - bz);", N);
    close_block(e);
    char idx[96];
    snprintf(idx, sizeof idx, "(bt * %lld + i) * %lld + j", M, N);
    store(e, nd, k, k->out, "j", idx);
    close_block(e);
    close_block(e);
    close_block(e);
}

/* quantize / dequantize: per tensor, or per channel along axis */
static void k_qdq(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *s = T(e, nd->inputs[1]),
                           *y = T(e, nd->outputs[0]);
    long long total = (long long)tether_ir_tensor_elements(y), ch = 1, inner = 1;
    if (tether_ir_tensor_elements(s) > 1) {
        int ax = tether__ir_norm_axis(nd->attrs.axis, x->ndim);
        ch = x->shape[ax];
        for (int d = ax + 1; d < x->ndim; d++) {
            inner *= x->shape[d];
        }
    }
    char zp[96];
    pexpr(e, nd, k, 2, "c", zp, sizeof zp);
    if (!tether__c_qdq_x86(e, nd, k, total, ch, inner, zp)) {
        loop(e, "f", total);
    }
    if (ch > 1) {
        line(e, "const int c = (int)((f / %lld) %% %lld);", inner, ch);
    } else {
        line(e, "const int c = 0;");
    }
    if (nd->op == TETHER_OP_DEQUANTIZE) {
        line(e, "%s[f] = (float)((int64_t)%s[f] - %s) * %s[c];", k->out, k->in[0], zp, k->in[1]);
    } else {
        long long lo, hi;
        int64_t l = 0, h = 0;
        tether__quant_range(y->dtype, &l, &h);
        lo = (long long)l;
        hi = (long long)h;
        line(e, "const float q = %s[f] / %s[c];", k->in[0], k->in[1]);
        line(e, "const int32_t v = q != q ? %s : tgq_rne(q) + %s;", zp, zp);
        line(e, "%s[f] = (%s)(v < %lld ? %lld : v > %lld ? %lld : v);", k->out,
             tether__c_type(y->dtype), lo, lo, hi, hi);
    }
    close_block(e);
}

void tether__c_quant_body(em *e, const tether_ir_node *nd, const kargs *k) {
    if (tether__quant_is_elt(nd->op)) {
        tether__c_qelt_body(e, nd, k); /* emit_c_qelt.c */
    } else if (nd->op == TETHER_OP_QCONV) {
        k_qconv(e, nd, k);
    } else if (nd->op == TETHER_OP_QMATMUL) {
        const int neon = tether__c_qneon_matmul(e, nd, k); /* emit_c_qneon.c */
        k_qmatmul(e, nd, k);
        if (neon) {
            line(e, "#endif");
        }
    } else {
        k_qdq(e, nd, k);
    }
}
