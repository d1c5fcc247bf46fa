/*
 * The geometry of a qconv node shared by the C emitter's fast qconv kernels (emit_c_qfast.c and
 * emit_c_qpatch.c), and the requantized store they all emit.
 *
 * What must stay true: qg describes the node exactly as emit_c_quant.c's portable loop reads it
 * (NCHW input, OIHW weights, ONNX pads/strides/dilations); tether__c_qstore computes what
 * tgq_requant computes (docs/quantization.md), byte for byte.
 */
#ifndef TETHER_CODEGEN_EMIT_C_QCONV_H
#define TETHER_CODEGEN_EMIT_C_QCONV_H

#include "emit_c_internal.h"

typedef struct qg {
    long long N, C, H, W, O, OH, OW, KH, KW, G, SH, SW, DH, DW, PT, PL;
    const char *xt, *wt, *yt, *x16, *w16;
    int per_ch;
    int rqs; /* every channel's shift is in -31..-1 (a constant requant): tgq_rqs */
    long long lo, hi;
} qg;

/* nd's geometry, types, output clamp and requantization form. */
void tether__c_qgeo(const em *e, const tether_ir_node *nd, qg *q);

/* `dst = requant(acc)` for the channel whose multiplier and shift are the expressions m, s. */
void tether__c_qstore(em *e, const qg *q, const char *dst, const char *acc, const char *m,
                      const char *s);

/* emit_c_qpatch.c: the two-pixel patch kernel of a one-group convolution (taps C*KH*KW up to
 * 256) and the depthwise kernel over a zero-padded plane (up to 512 elements); 1 when emitted. */
int tether__c_qconv_patch(em *e, const tether_ir_node *nd, const kargs *k, const qg *q);
int tether__c_qconv_dwpad(em *e, const tether_ir_node *nd, const kargs *k, const qg *q);

/* emit_c_qx86.c: whether the AVX2 kernels take nd (constant int8 weights; one group, or a
 * depthwise layer with 16-pixel interior tiles), and the kernel (emitted inside
 * `#if defined(__AVX2__)` by tether__c_qconv_fast, the portable kernel in the #else). */
int tether__c_qconv_x86_ok(const em *e, const tether_ir_node *nd, const qg *q);
void tether__c_qconv_x86(em *e, const tether_ir_node *nd, const kargs *k, const qg *q);

/* emit_c_qx86.c's helpers: a static const int32_t table of n values; whether the requantization
 * vectorises (0 no; 1 tgq_rq8: a constant requant, every shift in -31..30, an 8-bit output;
 * 2 tgq_rq8k: every shift in -31..-1 as well). */
void tether__c_qx86_table(em *e, const char *name, const int32_t *v, long long n);
/* more of them, shared by the x86 kernels of emit_c_q*_x86.c: input i of nd as an int32 C
 * expression ("0" when absent; element c, or 0 for one element); the TGQ_DP macro (VPDPWSSD under
 * AVX-512 VNNI, else VPMADDWD + VPADDD); the zero points xz, yz (the weight zero point is 0) and
 * the requantization's clamp constants vlo, vhi, vzp */
void tether__c_qx86_param(const em *e, const tether_ir_node *nd, const kargs *k, int i,
                          const char *c, char *out, size_t n);
void tether__c_qx86_madd_macro(em *e);
void tether__c_qx86_zero_points(em *e, const tether_ir_node *nd, const kargs *k, const qg *q);
int tether__c_qrq_vec(const em *e, const tether_ir_node *nd, const qg *q);

/* emit_c_qrq_x86.c: the vector requantization nd's kernels call, when tether__c_qrq_vec is
 * non-zero: "tgq_rq8", "tgq_rq8k", or "tgq_rq8h" / "tgq_rq8hs" (round half up, proved equal:
 * no accumulator of the node can be an exact tie; "hs" leaves the clamp to the saturating 8-bit
 * store when it is the output type's whole range) */
const char *tether__c_qrq_fn(const em *e, const tether_ir_node *nd, const qg *q);

/* emit_c_qc1_x86.c: whether the AVX2 few-input-channel kernel takes nd (one group, C 1..4,
 * column dilation 1, a vector requantization, a zero-bordered int16 plane <= 64 KiB), and the
 * kernel (emitted by tether__c_qconv_x86 when its row kernel does not take nd). */
int tether__c_qconv_c1_ok(const em *e, const tether_ir_node *nd, const qg *q);
void tether__c_qconv_c1(em *e, const tether_ir_node *nd, const kargs *k, const qg *q);

/* emit_c_qdw2_x86.c: whether the AVX2 depthwise kernel of column stride 2 takes nd (column
 * dilation 1, up to 64 taps, a vector requantization, a zero-bordered int16 plane <= 64 KiB),
 * and the kernel (emitted by tether__c_qconv_x86, which tries it after emit_c_qdwc_x86.c's). */
int tether__c_qconv_dw2_ok(const em *e, const tether_ir_node *nd, const qg *q);
void tether__c_qconv_dw2(em *e, const tether_ir_node *nd, const kargs *k, const qg *q);

/* emit_c_qdwc_x86.c: whether the AVX2 depthwise kernel with channels in the lanes takes nd (16
 * channels or more, output rows under 16 pixels, up to 64 taps, a vector requantization, the
 * pixel-major plane and output buffer <= 64 KiB each), and the kernel (emitted by
 * tether__c_qconv_x86, which tries it first for depthwise layers). */
int tether__c_qconv_dwc_ok(const em *e, const tether_ir_node *nd, const qg *q);
void tether__c_qconv_dwc(em *e, const tether_ir_node *nd, const kargs *k, const qg *q);

/* emit_c_qpw_x86.c: whether the AVX2 pointwise kernel vectorised over output channels takes nd
 * (a plane that 16-pixel tiles fit badly, a vector requantization), and the kernel (called by
 * tether__c_qconv_x86, whose checks on the weights it relies on). */
int tether__c_qpw_x86_ok(const em *e, const tether_ir_node *nd, const qg *q);
void tether__c_qpw_x86(em *e, const tether_ir_node *nd, const kargs *k, const qg *q);

/* emit_c_qmm_x86.c: whether the AVX2 qmatmul kernel takes nd (constant 8-bit B, constant
 * per-tensor A zero point, requantized 8-bit output), and the kernel (emitted inside
 * `#if defined(__AVX2__)` by emit_c_quant.c, the portable loop in the #else). */
int tether__c_qmatmul_x86_ok(const em *e, const tether_ir_node *nd);
void tether__c_qmatmul_x86(em *e, const tether_ir_node *nd, const kargs *k);

/* emit_c_qdq_x86.c: quantize / dequantize between float32 and 8 bits, per tensor or per channel
 * with an inner extent a multiple of 8: the AVX2 loop over 8 elements a step (inside
 * `#if defined(__AVX2__)`) and the head of the scalar loop that finishes the tail (its body and
 * closing brace are the caller's); 0 (nothing emitted) for other forms. */
int tether__c_qdq_x86(em *e, const tether_ir_node *nd, const kargs *k, long long total,
                      long long ch, long long inner, const char *zp);

#endif /* TETHER_CODEGEN_EMIT_C_QCONV_H */
