/*
 * Builds small ONNX models in memory with the protobuf-c types generated for tether_onnx, so the
 * ONNX tests can make exactly the (good and bad) files they need. Everything is allocated from a
 * per-model arena released by mb_free.
 */
#ifndef TETHER_TEST_MODEL_BUILDER_H
#define TETHER_TEST_MODEL_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"

#define MB_MAX 512 /* nodes, initializers, inputs, outputs each (bench/models' zoo) */

typedef struct mb {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[4];
    Onnx__NodeProto *nodes[MB_MAX];
    Onnx__TensorProto *inits[MB_MAX];
    Onnx__ValueInfoProto *inputs[MB_MAX], *outputs[MB_MAX];
    void *arena[16384];
    int narena;
} mb;

void mb_init(mb *b, int opset);
void mb_free(mb *b);
/* An extra opset_import (another domain). */
void mb_opset(mb *b, const char *domain, int version);
/* A node: inputs and outputs are comma-separated names ("" entries = absent optional inputs). */
Onnx__NodeProto *mb_node(mb *b, const char *op, const char *name, const char *ins,
                         const char *outs);
void mb_domain(mb *b, Onnx__NodeProto *n, const char *domain);
void mb_attr_i(mb *b, Onnx__NodeProto *n, const char *name, int64_t v);
void mb_attr_f(mb *b, Onnx__NodeProto *n, const char *name, float v);
void mb_attr_ints(mb *b, Onnx__NodeProto *n, const char *name, int count, const int64_t *v);
void mb_attr_floats(mb *b, Onnx__NodeProto *n, const char *name, int count, const float *v);
void mb_attr_s(mb *b, Onnx__NodeProto *n, const char *name, const char *v);
void mb_attr_strs(mb *b, Onnx__NodeProto *n, const char *name, int count, const char *const *v);
void mb_attr_t(mb *b, Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t);
/* A graph attribute (If branches, Loop/Scan bodies): sub's graph, which must outlive b's use. */
void mb_attr_g(mb *b, Onnx__NodeProto *n, const char *name, mb *sub);
/* Tensors (float_data / int64_data, or raw_data when raw is set). */
Onnx__TensorProto *mb_tensor_f(mb *b, const char *name, int ndim, const int64_t *dims,
                               const float *v, int raw);
Onnx__TensorProto *mb_tensor_i64(mb *b, const char *name, int ndim, const int64_t *dims,
                                 const int64_t *v);
/* A tensor of any element type (ONNX TensorProto data type number) from raw little-endian bytes
 * (elem_bytes per element). */
Onnx__TensorProto *mb_tensor_raw(mb *b, const char *name, int32_t type, int ndim,
                                 const int64_t *dims, const void *v, size_t elem_bytes);
void mb_init_tensor(mb *b, Onnx__TensorProto *t);
/* A graph input/output of element type elem (1 = float); dims < 0 become dim_param "N".
 * ndim < 0: no shape at all. */
void mb_input(mb *b, const char *name, int elem, int ndim, const int64_t *dims);
void mb_output(mb *b, const char *name, int elem);
/* Serialized model (malloc'd). */
uint8_t *mb_pack(mb *b, size_t *len);
/* Writes the model to path. */
void mb_write(mb *b, const char *path);

#endif
