/*
 * QDQ int8 test models built with the IR API, shared by the compiler tests (test_quant_stack,
 * test_quant_aarch64) and the board tests (tests/mcu test_mcu_int8_stack): a float island model
 * (integer convolutions with sigmoid and softmax left float between QuantizeLinear /
 * DequantizeLinear) and a convolution / depthwise / dense model whose shapes exercise every edge
 * of the integer kernels.
 *
 * What must stay true: the models are QDQ as ONNX Runtime's static quantizer writes them
 * (per-tensor int8 activations with nonzero zero points, int8 weights symmetric per output
 * channel, float biases), fixed by a seed (every call builds the same bytes), inferred
 * (tether_ir_infer) and not passed through the pass pipeline (tether_compile_graph runs it).
 */
#ifndef TETHER_TEST_QUANT_MODELS_H
#define TETHER_TEST_QUANT_MODELS_H

#include "tether/compiler.h"

/* x float [1,3,8,8] -> Q -> conv 3x3 pad 1 (3 -> 4) + relu -> Q -> DQ -> sigmoid (float) -> Q
 * -> DQ -> tanh (float) -> Q -> conv 3x3 stride 2 (4 -> 5) -> Q -> DQ -> softmax over channels
 * (float) -> y [1,5,4,4]. The two quantize (and two dequantize) kernels of the islands have the
 * same shape and types, which gcc's identical code folding merges. 0, or -1 with
 * tether_last_error(). */
int tq_build_island(tether_ir_graph *g);

/* x float [1,C,H,W] -> Q (int8, zero point 5) -> conv KxK stride 2 pad (1,0,2,1) (C -> 7) + relu
 * -> Q -> depthwise 3x3 stride 1 pad 1 (7 groups, zero point -3) -> Q -> pointwise 1x1 (7 -> 9)
 * -> Q -> DQ -> flatten -> Q -> matmul by [9*OH*OW, 11] per-column weights -> Q -> DQ -> y
 * [1,11]. C, H, W from the caller (odd counts exercise the kernels' tails). */
int tq_build_mix(tether_ir_graph *g, int C, int H, int W, int K);
/* The same with uint8 activations (zero points + 128) when u8, and the depthwise at dw_stride. */
int tq_build_mix_ex(tether_ir_graph *g, int C, int H, int W, int K, int u8, int dw_stride);

#endif
