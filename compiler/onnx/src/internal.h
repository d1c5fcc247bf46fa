/*
 * tether_onnx internals shared by its source files (not installed): the generated protobuf-c
 * types, the decoding allocator's budget, the wire-format pre-check and the TensorProto
 * conversion.
 */
#ifndef TETHER_ONNX_INTERNAL_H
#define TETHER_ONNX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"
#include "tether/onnx.h"

/* Which message a buffer should hold, for the wire pre-check. */
typedef enum tonnx_msg {
    TONNX_MODEL = 0,  /* onnx.ModelProto */
    TONNX_TENSOR = 1, /* onnx.TensorProto */
} tonnx_msg;

/* The allocator every protobuf-c decode of the front end runs with: it gives protobuf-c at
 * most TONNX_DECODE_BUDGET(len) bytes in all for a message of len bytes. protobuf-c sizes each
 * allocation from the bytes present (a repeated field's count from its occurrences, a string or
 * bytes field from its length, checked against the buffer), but a message of many small or empty
 * sub-messages costs a struct of up to ~250 bytes per 2 input bytes; the budget bounds the sum.
 * A well-formed model needs far less (the onnx-node models: at most ~20 x their size). */
#define TONNX_DECODE_BUDGET(len) (((size_t)4 << 20) + (size_t)64 * (len))
typedef struct tonnx_alloc {
    ProtobufCAllocator pb; /* pass &pb to unpack and to free_unpacked */
    size_t used, limit;
    bool over; /* an allocation was refused: the budget, not the bytes, ended the decode */
} tonnx_alloc;
void tonnx_alloc_init(tonnx_alloc *a, size_t len);

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
/* The same; exact: the element type as stored (float16 and bfloat16 as their 16-bit patterns,
 * bool as TETHER_BOOL, one byte 0/1, other values refused), what .pb test data and --in x.pb
 * files need (tether_onnx_tensor_parse/read). */
/* IEEE half and bfloat16 bit patterns as float (exact). */
float tonnx_half_to_float(uint16_t h);
float tonnx_bf16_to_float(uint16_t h);
int tonnx_tensor_from_proto_as(const Onnx__TensorProto *tp, const char *what, const char *base_dir,
                               bool exact, tether_onnx_tensor *out);

/* Name of an ONNX TensorProto.DataType ("float", "int64", ...; "type N" when unknown). */
const char *tonnx_dtype_name(int32_t data_type, char *buf, size_t n);
/* The DLDataType of an ONNX TensorProto data type tether computes (bool: TETHER_BOOL); 0 when
 * it computes no such type (string, complex, ...). */
int tonnx_onnx_dtype(int32_t data_type, DLDataType *out);

/* Reads a whole file (malloc'd). Messages name the path. */
int tonnx_read_file(const char *path, uint8_t **out, size_t *len);

#endif /* TETHER_ONNX_INTERNAL_H */
