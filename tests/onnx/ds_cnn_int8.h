/*
 * The int8 DS-CNN keyword spotter of issue 28's Cortex-M goal, written as an ONNX model with the
 * tests' model builder (model_builder.h): conv 10x4 stride 2 to 64 channels (input 1x1x49x10,
 * output 64x25x5), four depthwise-3x3 + pointwise-64 blocks with ReLU, global average pool,
 * flatten, fully connected 12; BatchNorm folded. Used by bench/models (gen_ds_cnn_int8) and the
 * tests (tests/compiler/test_quant_dscnn, tests/mcu test_mcu_int8).
 *
 * What must stay true: the weights come from a fixed-seed generator, so every call writes the same
 * bytes; the int8 model is QDQ as ONNX Runtime's static quantizer writes it (int8 activations
 * with per-tensor scale and zero point, int8 weights symmetric per output channel, int32 biases
 * at scale x_scale * w_scale, QuantizeLinear/DequantizeLinear around every float operator,
 * including the global average pool and flatten); the float model is the same network with the
 * dequantized weights and biases and no (de)quantize nodes.
 */
#ifndef TETHER_TEST_DS_CNN_INT8_H
#define TETHER_TEST_DS_CNN_INT8_H

/* Writes the model to path: quantized != 0 the int8 QDQ model, 0 its float32 twin. Aborts on an
 * I/O error (a test or bench helper). */
void ds_cnn_write(const char *path, int quantized);

#endif
