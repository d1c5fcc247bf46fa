/*
 * tether crt: NDArrays, i.e. a DLTensor plus its storage scope and owning pool.
 *
 * tether arrays are dense and row-major. A DLTensor with strides is accepted only when the
 * strides describe that same compact layout; anything else is rejected with a message naming the
 * dimension (tether never silently reads a strided view as if it were compact).
 *
 * Ownership: a tether_ndarray either wraps caller memory (heap == NULL; freeing it releases
 * nothing) or owns a block from a tether_heap (released by tether_ndarray_free). dl.shape points
 * into the struct itself, so a tether_ndarray must not be copied by value; pass pointers.
 */
#ifndef TETHER_CRT_NDARRAY_H
#define TETHER_CRT_NDARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#include "tether/crt/alloc.h"
#include "tether/crt/scope.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most dimensions an array may have (also the wire limit, see docs/rpc.md). */
#define TETHER_MAX_NDIM 8

typedef struct tether_ndarray {
    DLTensor dl;                     /* dl.shape -> shape below; dl.strides is NULL */
    int64_t shape[TETHER_MAX_NDIM];  /* extents, ndim of them used */
    tether_scope scope;              /* how the data is laid out / accessed */
    char pool[TETHER_POOL_NAME_MAX]; /* pool the data came from; "" for caller memory */
    tether_heap *heap;               /* allocator owning dl.data, or NULL */
} tether_ndarray;

/* Number of elements of a shape; checks ndim in [0, TETHER_MAX_NDIM], every extent >= 0 and
 * overflow. A scalar (ndim 0) has one element. */
int tether_shape_elements(const int64_t *shape, int ndim, size_t *out);

/* Bytes of a dense tensor of this shape and dtype (checks as above, plus the dtype). */
int tether_shape_bytes(const int64_t *shape, int ndim, DLDataType dtype, size_t *out);

/* Checks that a DLTensor is dense row-major: strides NULL, or equal to the compact strides for
 * every dimension of extent > 1. TETHER_ERR_UNSUPPORTED naming the first offending dimension. */
int tether_tensor_check_contiguous(const DLTensor *t);

/* Checks a tensor argument against an expected signature: ndim, dtype, every extent (an expected
 * extent of -1 matches any), contiguity and a non-null data pointer. `what` names the argument in
 * the error message ("argument 2 'weights'"). TETHER_ERR_MISMATCH on a difference. */
int tether_tensor_check(const DLTensor *t, const char *what, int ndim, const int64_t *shape,
                        DLDataType dtype);

/* Byte size of a tensor's data (dense). */
int tether_tensor_bytes(const DLTensor *t, size_t *out);

/* Wraps caller-owned memory. data may be NULL only when the array has zero bytes. For texture
 * scopes the shape must satisfy the flattening convention (last dimension 4). */
int tether_ndarray_wrap(tether_ndarray *arr, void *data, const int64_t *shape, int ndim,
                        DLDataType dtype, DLDevice device, tether_scope scope);

/* Allocates a global-scope array from a heap; pool_name (checked with tether_pool_name_check) is
 * recorded. Texture-scope arrays are image objects owned by a device's OpenCL layer, never heap
 * memory, so there is no scope parameter. Zero-byte arrays are allowed and own no block. On
 * failure *arr is left zeroed. */
int tether_ndarray_alloc(tether_ndarray *arr, tether_heap *heap, const char *pool_name,
                         const int64_t *shape, int ndim, DLDataType dtype);

/* Releases an array's block (if it owns one) and zeroes the struct. Safe on a zeroed struct. */
int tether_ndarray_free(tether_ndarray *arr);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_CRT_NDARRAY_H */
