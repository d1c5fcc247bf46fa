/*
 * tether crt: data types.
 *
 * tether uses DLPack's DLDataType (code, bits, lanes) everywhere. These helpers give the element
 * size and convert between a DLDataType and its name: "float32", "int8", "uint16", "bool",
 * "bfloat16", and a vector form "float32x4" (lanes = 4). Names are the numpy/TVM spellings.
 * No allocation; names are written into caller buffers.
 */
#ifndef TETHER_CRT_DTYPE_H
#define TETHER_CRT_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest name produced by tether_dtype_name, including the NUL ("bfloat16x65535"). */
#define TETHER_DTYPE_NAME_MAX 24

/* Bytes of one element (bits * lanes rounded up to whole bytes); 0 for an invalid dtype. */
size_t tether_dtype_bytes(DLDataType dtype);

/* True for the combinations tether can store: int/uint 8..64 bits, float 16/32/64,
 * bfloat16, bool (8 bits), lanes >= 1. */
bool tether_dtype_valid(DLDataType dtype);

/* True when both dtypes are identical in code, bits and lanes. */
bool tether_dtype_equal(DLDataType a, DLDataType b);

/* Parses a dtype name. TETHER_ERR_NOT_FOUND with a message naming the text when unknown. */
int tether_dtype_parse(const char *name, DLDataType *out);

/* Writes the name of dtype into buf. TETHER_ERR_INVALID_ARG for an invalid dtype,
 * TETHER_ERR_LIMIT when buf is too small. */
int tether_dtype_name(DLDataType dtype, char *buf, size_t size);

/* Shorthands. */
#define TETHER_DTYPE(code_, bits_) ((DLDataType){(uint8_t)(code_), (uint8_t)(bits_), 1})
#define TETHER_FLOAT32             TETHER_DTYPE(kDLFloat, 32)
#define TETHER_INT8                TETHER_DTYPE(kDLInt, 8)
#define TETHER_INT32               TETHER_DTYPE(kDLInt, 32)
#define TETHER_INT64               TETHER_DTYPE(kDLInt, 64)
#define TETHER_UINT8               TETHER_DTYPE(kDLUInt, 8)
#define TETHER_BOOL                TETHER_DTYPE(kDLUInt, 1) /* stored one byte per element, 0/1 */

#ifdef __cplusplus
}
#endif
#endif /* TETHER_CRT_DTYPE_H */
