/*
 * .pb arrays for tether_npy_read (library tether_onnx_arrays): the host side registers the ONNX
 * front end's onnx.TensorProto reader (tether_onnx_tensor_read) as the reader of ".pb" files, for
 * the programs that link both the host library and the front end (the `tether` CLI, the Python
 * package): --in x.pb and tether.load_array read TensorProto files like .npy. The dependency goes
 * one way: this host code calls the compiler's public reader; the compiler (compiler/onnx) knows
 * nothing of the host library, and tether_host itself never links the front end.
 *
 * What must stay true: a .pb array keeps its TensorProto dtype (a float32 input still refuses an
 * int64 file with the usual message); the data buffer changes owner, nothing is copied; more
 * than TETHER_MAX_NDIM dimensions is an error naming the file.
 */
#include <string.h>

#include "tether/crt.h"
#include "tether/npy.h"
#include "tether/onnx.h"

static int read_pb(const char *path, tether_npy *out) {
    memset(out, 0, sizeof *out);
    tether_onnx_tensor t;
    int rc = tether_onnx_tensor_read(path, &t);
    if (rc) {
        return rc;
    }
    if (t.ndim > TETHER_MAX_NDIM) {
        tether_onnx_tensor_free(&t);
        return tether_set_error(TETHER_ERR_LIMIT, "%s: more than %d dimensions", path,
                                TETHER_MAX_NDIM);
    }
    out->dtype = t.dtype;
    out->ndim = t.ndim;
    memcpy(out->shape, t.shape, sizeof(int64_t) * (size_t)t.ndim);
    out->data = t.data;
    out->nbytes = t.nbytes;
    return TETHER_OK;
}

int tether_onnx_register_arrays(void) {
    return tether_npy_register_reader(".pb", read_pb);
}
