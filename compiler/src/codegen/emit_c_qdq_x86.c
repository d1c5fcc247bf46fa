/*
 * The C emitter's AVX2 quantize / dequantize loops (docs/quantization.md, "Kernels"): 8 elements
 * a step inside `#if defined(__AVX2__)`, before emit_c_quant.c's scalar loop, which finishes the
 * tail (and is the whole loop without AVX2). For 8-bit quantized sides, per tensor or per channel
 * with an inner extent that is a multiple of 8 (each step one channel).
 *   - quantize: q = x / scale (VDIVPS, the same IEEE quotient), rounded half to even
 *     (VROUNDPS), clamped in float to lo - zp .. hi - zp (integers, exact), converted, + zp; NaN
 *     gives zp. The scalar loop's tgq_rne(q) + zp clamped to lo..hi is the same integer (its
 *     +-2^30 saturation lies outside every 8-bit range either way).
 *   - dequantize: (x - zp) in int32 (exact), converted (exact, |x - zp| < 2^9), times scale: the
 *     same product as the scalar (float)(x - zp) * scale.
 *
 * What must stay true: every output byte / float equals the scalar loop's (test_quant_x86
 * compares the AVX2 build with the portable one); no read or write past the tensors.
 */
#include <stdio.h>

#include "emit_c_qconv.h"

int tether__c_qdq_x86(em *e, const tether_ir_node *nd, const kargs *k, long long total,
                      long long ch, long long inner, const char *zp) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    bool deq = nd->op == TETHER_OP_DEQUANTIZE;
    DLDataType qt = deq ? x->dtype : y->dtype;
    bool f32 = (deq ? y->dtype : x->dtype).code == kDLFloat && (deq ? y : x)->dtype.bits == 32;
    if (qt.bits != 8 || (qt.code != kDLInt && qt.code != kDLUInt) || !f32 || total < 8 ||
        (ch > 1 && inner % 8 != 0)) {
        return 0;
    }
    bool u8 = qt.code == kDLUInt;
    line(e, "int f = 0;");
    line(e, "#if defined(__AVX2__)");
    line(e, "for (; f + 8 <= %lld; f += 8) {", total);
    e->depth++;
    if (ch > 1) {
        line(e, "const int c = (int)((f / %lld) %% %lld);", inner, ch);
    } else {
        line(e, "const int c = 0;");
    }
    line(e, "(void)c;");
    if (deq) {
        line(e,
             "const __m256i v = _mm256_sub_epi32(_mm256_cvtep%s8_epi32(_mm_loadl_epi64((const "
             "__m128i *)(const void *)(%s + f))), _mm256_set1_epi32(%s));",
             u8 ? "u" : "i", k->in[0], zp);
        line(e,
             "_mm256_storeu_ps(%s + f, _mm256_mul_ps(_mm256_cvtepi32_ps(v), "
             "_mm256_set1_ps(%s[c])));",
             k->out, k->in[1]);
    } else {
        long long lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
        line(e, "const int32_t z = %s;", zp);
        line(e, "const __m256 q = _mm256_div_ps(_mm256_loadu_ps(%s + f), _mm256_set1_ps(%s[c]));",
             k->in[0], k->in[1]);
        line(e, "__m256 r = _mm256_round_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);");
        line(e,
             "r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps((float)(%lld - z))), "
             "_mm256_set1_ps((float)(%lld - z)));",
             lo, hi);
        line(e, "r = _mm256_andnot_ps(_mm256_cmp_ps(q, q, _CMP_UNORD_Q), r);");
        line(e,
             "tgq_st8%s((%s *)(%s + f), _mm256_add_epi32(_mm256_cvtps_epi32(r), "
             "_mm256_set1_epi32(z)));",
             u8 ? "u" : "s", u8 ? "uint8_t" : "int8_t", k->out);
    }
    e->depth--;
    line(e, "}");
    line(e, "#endif");
    line(e, "for (; f < %lld; ++f) {", total);
    e->depth++;
    return 1;
}
