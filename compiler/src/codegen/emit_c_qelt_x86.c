/*
 * The C emitter's x86-64 AVX2 loop for qadd and qmul of two 8-bit tensors of the output's shape
 * (no broadcasting; a transformer's residual adds; docs/quantization.md "Integer elementwise and
 * pooling operators"), 8 elements a step inside `#if defined(__AVX2__)`, then the scalar loop of
 * emit_c_qelt.c's form for the rest (and for every element without AVX2).
 *
 * The vector step: a - a_zp and b - b_zp widened to int32 lanes; the exact int64 value
 * (a * ma + b * mb, or (a * b) * ma) of the even and odd lanes by VPMULDQ; tgq_rnd4
 * (emit_c_quant.c) rounds it half to even by 2^n and clamps it to lo - y_zp .. hi - y_zp in
 * 64-bit lanes, the same integer as the scalar clamp(tgq_rsh(v, n) + y_zp, lo, hi).
 *
 * What must stay true: the outputs equal emit_c_qelt.c's scalar loop (and interp_qelt.c) byte for
 * byte; integers only (no float type: test_quant_elt checks the text); nothing read or written
 * past the tensors.
 */
#include <stdio.h>
#include <string.h>

#include "emit_c_internal.h"
#include "tether/crt/dtype.h"

static int is8(const tether_ir_tensor *t) {
    return (t->dtype.code == kDLInt || t->dtype.code == kDLUInt) && t->dtype.bits == 8 &&
           t->dtype.lanes == 1;
}

static int same_shape(const tether_ir_tensor *a, const tether_ir_tensor *y) {
    if (a->ndim != y->ndim) {
        return 0;
    }
    for (int d = 0; d < y->ndim; d++) {
        if (a->shape[d] != y->shape[d]) {
            return 0;
        }
    }
    return 1;
}

/* 8 bytes at p widened to int32 lanes */
static const char *widen(const tether_ir_tensor *t) {
    return t->dtype.code == kDLInt ? "_mm256_cvtepi8_epi32" : "_mm256_cvtepu8_epi32";
}

int tether__c_qbin_x86(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *a = T(e, nd->inputs[0]), *b = T(e, nd->inputs[1]),
                           *y = T(e, nd->outputs[0]), *pt = T(e, nd->inputs[2]);
    if ((nd->op != TETHER_OP_QADD && nd->op != TETHER_OP_QMUL) || !pt->data ||
        tether_ir_tensor_elements(pt) < 8 || !is8(a) || !is8(b) || !is8(y) || !same_shape(a, y) ||
        !same_shape(b, y)) {
        return 0;
    }
    const int32_t *p = pt->data;
    if (p[5] < 1 || p[5] > 62) {
        return 0;
    }
    const long long N = (long long)tether_ir_tensor_elements(y);
    const int add = nd->op == TETHER_OP_QADD;
    line(e, "(void)%s; /* its values are the literals below */", k->in[2]);
    line(e, "size_t f = 0;");
    line(e, "#if defined(__AVX2__)");
    line(e, "{");
    e->depth++;
    line(e, "const __m256i za = _mm256_set1_epi32(%ld), zb = _mm256_set1_epi32(%ld);", (long)p[0],
         (long)p[1]);
    line(e, "const __m256i ma = _mm256_set1_epi64x(%ld), mb = _mm256_set1_epi64x(%ld);", (long)p[3],
         (long)p[4]);
    line(e, "const __m256i nv = _mm256_set1_epi64x(%ld), zy = _mm256_set1_epi32(%ld);", (long)p[5],
         (long)p[2]);
    line(e, "const __m256i lo = _mm256_set1_epi64x(%lldLL), hi = _mm256_set1_epi64x(%lldLL);",
         (long long)p[6] - p[2], (long long)p[7] - p[2]);
    line(e, "(void)mb;");
    line(e, "for (; f + 8 <= %lld; f += 8) {", N);
    e->depth++;
    line(e,
         "const __m256i va = _mm256_sub_epi32(%s(_mm_loadl_epi64((const __m128i *)(const void "
         "*)(%s + f))), za);",
         widen(a), k->in[0]);
    line(e,
         "const __m256i vb = _mm256_sub_epi32(%s(_mm_loadl_epi64((const __m128i *)(const void "
         "*)(%s + f))), zb);",
         widen(b), k->in[1]);
    if (add) {
        line(e, "const __m256i pe = _mm256_add_epi64(_mm256_mul_epi32(va, ma), "
                "_mm256_mul_epi32(vb, mb));");
        line(e, "const __m256i po = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(va, 32), "
                "ma), _mm256_mul_epi32(_mm256_srli_epi64(vb, 32), mb));");
    } else {
        line(e, "const __m256i ab = _mm256_mullo_epi32(va, vb);");
        line(e, "const __m256i pe = _mm256_mul_epi32(ab, ma);");
        line(e, "const __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(ab, 32), ma);");
    }
    line(e, "const __m256i re = tgq_rnd4(pe, nv, lo, hi), ro = tgq_rnd4(po, nv, lo, hi);");
    line(e, "const __m256i r = _mm256_add_epi32(_mm256_blend_epi32(re, _mm256_slli_epi64(ro, 32), "
            "0xAA), zy);");
    line(e, "%s(%s + f, r);", y->dtype.code == kDLInt ? "tgq_st8s" : "tgq_st8u", k->out);
    close_block(e);
    close_block(e);
    line(e, "#endif");
    line(e, "for (; f < %lld; ++f) {", N);
    e->depth++;
    line(e, "const int32_t a = (int32_t)%s[f] - %ld, b = (int32_t)%s[f] - %ld;", k->in[0],
         (long)p[0], k->in[1], (long)p[1]);
    if (add) {
        line(e, "const int64_t v = (int64_t)a * %ld + (int64_t)b * %ld;", (long)p[3], (long)p[4]);
    } else {
        line(e, "const int64_t v = (int64_t)(a * b) * %ld;", (long)p[3]);
    }
    line(e, "%s[f] = (%s)tgq_clamp64(tgq_rsh(v, %ld) + %ld, %ld, %ld);", k->out,
         tether__c_type(y->dtype), (long)p[5], (long)p[2], (long)p[6], (long)p[7]);
    close_block(e);
    return 1;
}
