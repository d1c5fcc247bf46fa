/*
 * tether ONNX front end (tether_onnx): ONNX model files -> the compiler IR (tether/ir.h), and
 * onnx.TensorProto files (the .pb test data of the ONNX backend tests) -> host tensors.
 * docs/onnx.md lists the operators, opsets, attribute defaults and error messages.
 *
 * tether_onnx_register makes tether_model_load / tether_model_load_with (and so `tether compile`,
 * `tether plan`, `tether import`, `tether run`) accept .onnx files; the CLI calls it at start-up.
 *
 * Ownership: tether_onnx_load fills a graph the caller closes with tether_ir_close (it is closed
 * already on failure). A tether_onnx_tensor owns its data (malloc'd); release it with
 * tether_onnx_tensor_free (safe on a zeroed struct). Errors are negative tether_status values;
 * the message (tether_last_error, or tether_error_detail when longer) starts with the file name.
 */
#ifndef TETHER_ONNX_H
#define TETHER_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#include "tether/compiler.h"
#include "tether/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opset range of the default ("" / "ai.onnx") domain that the importer understands; each operator
 * has its own first version in tether_onnx_ops (most from 6 or 7, the version in use today). */
#define TETHER_ONNX_OPSET_MIN 1
#define TETHER_ONNX_OPSET_MAX 18

/* Loads an ONNX model file (ModelProto) into g, inferred. o may be NULL; see
 * tether_model_load_options for --input-shape and bound input values. */
int tether_onnx_load(const char *path, const tether_model_load_options *o, tether_ir_graph *g);
/* The same from bytes in memory; `source` names them in messages. */
int tether_onnx_load_buffer(const void *data, size_t len, const char *source,
                            const tether_model_load_options *o, tether_ir_graph *g);

/* Registers ".onnx" with tether_model_register_loader_with. */
int tether_onnx_register(void);
/* .pb arrays for the host library's tether_npy_read: the host side registers
 * tether_onnx_tensor_read (tether_onnx_register_arrays, tether/npy.h, host/lib/npy_pb.c); the
 * compiler does not depend on the host library. */

/* The graph inputs of a model file that are not initializers, in order (the order of the test
 * data's input_K.pb files and of tether_model_load_options.input_values): names into a
 * caller-provided array of max entries of 128 bytes (longer names are an error). */
int tether_onnx_model_inputs(const char *path, char (*names)[128], int max, int *count);

/* A tensor read from an onnx.TensorProto file or buffer (tether_onnx_tensor_read/parse). data
 * holds the elements in C order, host byte order, in the tensor's own element type: float32,
 * float64, int8/16/32/64, uint8/16/32/64, float16 (kDLFloat, 16) and bfloat16 (kDLBfloat, 16)
 * as their 16-bit patterns (from raw_data, or from int32_data as the ONNX spec stores them),
 * bool as TETHER_BOOL (one byte 0/1; other values are an error). String and complex tensors are
 * refused (TETHER_ERR_UNSUPPORTED naming the type). */
typedef struct tether_onnx_tensor {
    char name[128]; /* TensorProto.name ("" when absent; truncated to 127 bytes) */
    DLDataType dtype;
    int ndim;
    int64_t shape[TETHER_IR_MAX_NDIM];
    void *data;
    size_t nbytes;
} tether_onnx_tensor;

int tether_onnx_tensor_read(const char *path, tether_onnx_tensor *out);
/* Parses a serialized TensorProto; `what` names it in messages. */
int tether_onnx_tensor_parse(const void *buf, size_t len, const char *what,
                             tether_onnx_tensor *out);
void tether_onnx_tensor_free(tether_onnx_tensor *t);

/* The tensor as a load-option value (borrows t->data). */
tether_model_value tether_onnx_tensor_value(const tether_onnx_tensor *t);

/* One row of the supported-operator table (docs/onnx.md is generated from the same facts). */
typedef struct tether_onnx_op_info {
    const char *op_type; /* "Conv" */
    int since, until;    /* opset range handled (inclusive) */
    const char *maps_to; /* IR operators it becomes, e.g. "conv2d" */
} tether_onnx_op_info;

/* The table of supported operators (count entries). */
const tether_onnx_op_info *tether_onnx_ops(int *count);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_ONNX_H */
