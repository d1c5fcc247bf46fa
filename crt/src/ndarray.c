/*
 * Shape arithmetic, tensor checks and NDArray wrap/alloc/free.
 * Invariant: every size computed here is overflow-checked; an array owns a heap block exactly
 * when arr->heap != NULL and arr->dl.data != NULL.
 */
#include <string.h>

#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/crt/ndarray.h"
#include "tether/crt/texture.h"

int tether_shape_elements(const int64_t *shape, int ndim, size_t *out) {
    if (ndim < 0 || ndim > TETHER_MAX_NDIM) {
        return tether_set_error(TETHER_ERR_LIMIT, "ndim %d is outside [0, %d]", ndim,
                                TETHER_MAX_NDIM);
    }
    if (shape == NULL && ndim > 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "shape is null");
    }
    size_t n = 1;
    bool overflow = false;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "dimension %d is negative (%lld)", i,
                                    (long long)shape[i]);
        }
        if ((uint64_t)shape[i] > SIZE_MAX) {
            overflow = true;
        } else if (shape[i] != 0 && n > SIZE_MAX / (size_t)shape[i]) {
            overflow = true;
        } else {
            n *= (size_t)shape[i];
        }
    }
    /* A zero extent makes the whole array empty, whatever the other extents are. */
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) {
            *out = 0;
            return TETHER_OK;
        }
    }
    if (overflow) {
        return tether_set_error(TETHER_ERR_LIMIT, "shape has too many elements for this target");
    }
    *out = n;
    return TETHER_OK;
}

int tether_shape_bytes(const int64_t *shape, int ndim, DLDataType dtype, size_t *out) {
    size_t elems;
    int rc = tether_shape_elements(shape, ndim, &elems);
    if (rc != TETHER_OK) {
        return rc;
    }
    size_t esize = tether_dtype_bytes(dtype);
    if (esize == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "invalid dtype (code %u, bits %u, lanes "
                                "%u)",
                                (unsigned)dtype.code, (unsigned)dtype.bits, (unsigned)dtype.lanes);
    }
    if (elems > SIZE_MAX / esize) {
        return tether_set_error(TETHER_ERR_LIMIT, "array is too large for this target");
    }
    *out = elems * esize;
    return TETHER_OK;
}

int tether_tensor_check_contiguous(const DLTensor *t) {
    if (t == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "tensor is null");
    }
    if (t->strides == NULL) {
        return TETHER_OK;
    }
    int64_t expected = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != expected) {
            return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                    "strided tensors are not supported: dimension %d has stride "
                                    "%lld, a contiguous row-major tensor has %lld; make a compact "
                                    "copy first",
                                    i, (long long)t->strides[i], (long long)expected);
        }
        expected *= t->shape[i];
    }
    return TETHER_OK;
}

int tether_tensor_bytes(const DLTensor *t, size_t *out) {
    if (t == NULL || out == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "tensor is null");
    }
    return tether_shape_bytes(t->shape, t->ndim, t->dtype, out);
}

static void dims_text(char *buf, size_t size, const int64_t *shape, int ndim) {
    size_t n = tether_format(buf, size, "[");
    for (int i = 0; i < ndim && n < size; i++) {
        n += tether_format(buf + n, size - n, i ? ", %lld" : "%lld", (long long)shape[i]);
    }
    if (n < size) {
        tether_format(buf + n, size - n, "]");
    }
}

int tether_tensor_check(const DLTensor *t, const char *what, int ndim, const int64_t *shape,
                        DLDataType dtype) {
    if (what == NULL) {
        what = "tensor";
    }
    if (t == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s is null", what);
    }
    if (!tether_dtype_equal(t->dtype, dtype)) {
        char got[TETHER_DTYPE_NAME_MAX], want[TETHER_DTYPE_NAME_MAX];
        if (tether_dtype_name(t->dtype, got, sizeof got) != TETHER_OK) {
            tether_format(got, sizeof got, "code %u bits %u", (unsigned)t->dtype.code,
                          (unsigned)t->dtype.bits);
        }
        if (tether_dtype_name(dtype, want, sizeof want) != TETHER_OK) {
            tether_format(want, sizeof want, "?");
        }
        return tether_set_error(TETHER_ERR_MISMATCH, "%s has dtype %s, expected %s", what, got,
                                want);
    }
    bool same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) {
        same = shape[i] == -1 || t->shape[i] == shape[i];
    }
    if (!same) {
        char got[96], want[96];
        dims_text(got, sizeof got, t->shape, t->ndim > TETHER_MAX_NDIM ? 0 : t->ndim);
        dims_text(want, sizeof want, shape, ndim);
        return tether_set_error(TETHER_ERR_MISMATCH, "%s has shape %s (ndim %d), expected %s", what,
                                got, t->ndim, want);
    }
    int rc = tether_tensor_check_contiguous(t);
    if (rc != TETHER_OK) {
        return tether_set_error(rc, "%s: %s", what, tether_last_error());
    }
    size_t bytes;
    rc = tether_tensor_bytes(t, &bytes);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (t->data == NULL && bytes > 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s has no data", what);
    }
    return TETHER_OK;
}

static int fill(tether_ndarray *arr, void *data, const int64_t *shape, int ndim, DLDataType dtype,
                DLDevice device, tether_scope scope, size_t *bytes) {
    memset(arr, 0, sizeof *arr);
    int rc = tether_shape_bytes(shape, ndim, dtype, bytes);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (tether_scope_name(scope) == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "invalid scope value %d", (int)scope);
    }
    if (tether_scope_is_texture(scope)) {
        tether_image_extent ext;
        rc = tether_texture_extent(scope, shape, ndim, 0, 0, &ext);
        if (rc != TETHER_OK) {
            return rc;
        }
    }
    for (int i = 0; i < ndim; i++) {
        arr->shape[i] = shape[i];
    }
    arr->dl.data = data;
    arr->dl.device = device;
    arr->dl.ndim = ndim;
    arr->dl.dtype = dtype;
    arr->dl.shape = arr->shape;
    arr->dl.strides = NULL;
    arr->dl.byte_offset = 0;
    arr->scope = scope;
    return TETHER_OK;
}

int tether_ndarray_wrap(tether_ndarray *arr, void *data, const int64_t *shape, int ndim,
                        DLDataType dtype, DLDevice device, tether_scope scope) {
    if (arr == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "ndarray is null");
    }
    size_t bytes;
    int rc = fill(arr, data, shape, ndim, dtype, device, scope, &bytes);
    if (rc == TETHER_OK && data == NULL && bytes > 0) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "ndarray of %zu bytes wraps a null pointer",
                              bytes);
    }
    if (rc != TETHER_OK) {
        memset(arr, 0, sizeof *arr);
    }
    return rc;
}

int tether_ndarray_alloc(tether_ndarray *arr, tether_heap *heap, const char *pool_name,
                         const int64_t *shape, int ndim, DLDataType dtype) {
    if (arr == NULL || heap == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "ndarray alloc: null argument");
    }
    int rc = tether_pool_name_check(pool_name);
    size_t bytes = 0;
    if (rc == TETHER_OK) {
        DLDevice cpu = {kDLCPU, 0};
        rc = fill(arr, NULL, shape, ndim, dtype, cpu, TETHER_SCOPE_GLOBAL, &bytes);
    }
    void *data = NULL;
    if (rc == TETHER_OK && bytes > 0) {
        rc = tether_heap_alloc(heap, bytes, &data);
        if (rc != TETHER_OK) {
            rc = tether_set_error(rc, "pool '%s': %s", pool_name, tether_last_error());
        }
    }
    if (rc != TETHER_OK) {
        memset(arr, 0, sizeof *arr);
        return rc;
    }
    arr->dl.data = data;
    arr->heap = data != NULL ? heap : NULL;
    memcpy(arr->pool, pool_name, strlen(pool_name) + 1);
    return TETHER_OK;
}

int tether_ndarray_free(tether_ndarray *arr) {
    if (arr == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "ndarray is null");
    }
    int rc = TETHER_OK;
    if (arr->heap != NULL && arr->dl.data != NULL) {
        rc = tether_heap_free(arr->heap, arr->dl.data);
    }
    memset(arr, 0, sizeof *arr);
    return rc;
}
