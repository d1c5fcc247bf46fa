/*
 * tether_onnx internals shared by its source files (not installed): the generated protobuf-c
 * types, the wire-format pre-check and the TensorProto conversion.
 */
#ifndef TETHER_ONNX_INTERNAL_H
#define TETHER_ONNX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"
#include "tether/onnx.h"

/* Which message a buffer should hold, for the wire pre-check. */
typedef enum tonnx_msg {
    TONNX_MODEL = 0,  /* onnx.ModelProto */
    TONNX_TENSOR = 1, /* onnx.TensorProto */
} tonnx_msg;

/* Walks the top-level fields of a serialized message and reports, with offsets, what protobuf-c
 * would only call a failure: an empty buffer, bytes that are not protobuf fields of that message
 * (wrong file type), and a field running past the end (a truncated file). 0 when the structure
 * is sound; the message starts with `source`. */
int tonnx_wire_check(const uint8_t *buf, size_t len, const char *source, tonnx_msg kind);

/* Converts a TensorProto into a host tensor (see tether_onnx_tensor). float16/bfloat16 become
 * float32, bool becomes uint8. External data is read from base_dir (NULL: not allowed) under
 * the rules of the ONNX spec (a relative location without ".."). `what` names the tensor in
 * messages. */
int tonnx_tensor_from_proto(const Onnx__TensorProto *tp, const char *what, const char *base_dir,
                            tether_onnx_tensor *out);

/* Name of an ONNX TensorProto.DataType ("float", "int64", ...; "type N" when unknown). */
const char *tonnx_dtype_name(int32_t data_type, char *buf, size_t n);

/* Reads a whole file (malloc'd). Messages name the path. */
int tonnx_read_file(const char *path, uint8_t **out, size_t *len);

#endif /* TETHER_ONNX_INTERNAL_H */
