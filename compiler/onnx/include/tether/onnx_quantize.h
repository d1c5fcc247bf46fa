/*
 * tether ONNX static post-training quantization (`tether quantize`, docs/quantization.md): a
 * float ONNX model plus calibration inputs -> a standard QDQ ONNX model (QuantizeLinear /
 * DequantizeLinear pairs, as ONNX Runtime's static quantizer writes them) that tether and any
 * ONNX runtime load.
 *
 * Weights: symmetric int8 in [-127, 127], per output channel (Conv axis 0, MatMul the last axis,
 * Gemm the output axis of B) or per tensor; biases int32 at x_scale * w_scale (zero point 0).
 * Activations: int8 (default) or uint8 with the scale and zero point of the range the float model
 * shows on the calibration inputs (min/max, a percentile, or the KL-divergence threshold of a
 * TensorRT-style histogram), run on the reference interpreter.
 *
 * What must stay true: the input file is never modified, nothing is written (the caller writes
 * result.model); every error names the problem (a calibration array, a node, an option); the
 * result's error figures are those of the quantized model as tether runs it (the integer-operator
 * pass applied, on the reference interpreter) against the float model, on every sample.
 */
#ifndef TETHER_ONNX_QUANTIZE_H
#define TETHER_ONNX_QUANTIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tether/compiler.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tether_qcalib {
    TETHER_QCALIB_MINMAX = 0,
    TETHER_QCALIB_PERCENTILE, /* the central `percentile` % of the values (ORT's rule) */
    TETHER_QCALIB_ENTROPY,    /* TensorRT's KL-divergence threshold on |x| */
} tether_qcalib;

/* One calibration file: named arrays (an .npz), each a model input; an array may also hold a
 * stack of samples ([S, ...input shape] for an input of fixed shape). */
typedef struct tether_onnx_qsample {
    const char *source; /* for messages: "calib.npz" */
    int n;
    const char *const *names;
    const tether_model_value *values;
} tether_onnx_qsample;

typedef struct tether_onnx_quantize_options {
    tether_qcalib method;
    double percentile; /* TETHER_QCALIB_PERCENTILE: in (50, 100]; 0 = 99.99 */
    bool per_tensor;   /* weights per tensor (default per output channel) */
    bool uint8_activations;
    const char *const *keep_float; /* node names (or a node's first output name) left float */
    int nkeep_float;
    const tether_onnx_qsample *samples;
    int nsamples;
    const tether_model_load_options *load; /* custom ops; may be NULL */
} tether_onnx_quantize_options;

typedef struct tether_onnx_qoutput {
    char name[128];
    int64_t elements; /* per sample */
    double max_abs;   /* over every sample */
    double mean_abs;
    double float_range; /* max - min of the float output over the samples */
    int64_t rows;       /* top-1: rows (the last axis is the classes; 0 when it has < 2) */
    int64_t top1_agree;
    bool compared; /* a float output (others are not compared) */
} tether_onnx_qoutput;

typedef struct tether_onnx_quantize_result {
    uint8_t *model; /* the serialized QDQ ModelProto (malloc'd) */
    size_t model_len;
    int nsamples;           /* calibration samples run */
    int quantized_nodes;    /* nodes between QDQ pairs */
    int float_nodes;        /* nodes left float (kept, or of an operator not quantized) */
    int integer_nodes;      /* of those, what tether's integer pass makes integer (qconv/qmatmul) */
    char *float_node_names; /* comma-separated (malloc'd; NULL when none) */
    size_t float_weight_bytes, quant_weight_bytes; /* the weights quantized: before and after */
    int noutputs;
    tether_onnx_qoutput outputs[32];
} tether_onnx_quantize_result;

/* Quantizes the ONNX model at path; r is filled (free it with tether_onnx_quantize_free, safe on
 * a zeroed struct). 0, or a negative status with the message in tether_last_error(). */
int tether_onnx_quantize(const char *path, const tether_onnx_quantize_options *o,
                         tether_onnx_quantize_result *r);
void tether_onnx_quantize_free(tether_onnx_quantize_result *r);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_ONNX_QUANTIZE_H */
