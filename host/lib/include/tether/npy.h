/*
 * tether host: .npy files (NumPy format versions 1.0, 2.0 and 3.0), C order only.
 *
 * Supported dtypes: every element type tether has, little-endian (or byte-sized): bool ('|b1',
 * DLPack (kDLUInt, 1), one byte 0 or 1: other bytes are refused), int8/16/32/64,
 * uint8/16/32/64, float16 ('<f2', the IEEE half bit patterns), float32, float64 and bfloat16
 * (no numpy type: written with descr 'bfloat16', which np.load reads once ml_dtypes is
 * imported; read from that or from '<V2', what np.save writes for an ml_dtypes.bfloat16 array).
 * Anything else (Fortran order, big-endian, other dtypes, structured arrays, object arrays, a
 * header that does not parse, a data size that does not match the shape) is an error naming the
 * problem and the file. Other array formats (ONNX .pb) plug in through tether_npy_register_reader.
 *
 * .npz archives (numpy.savez and savez_compressed: a ZIP, read and written with libzip, of .npy
 * members; member "x.npy" is the array named "x") hold several named arrays: what `tether run
 * --in inputs.npz` reads and `--out outputs.npz` writes. A deflated member may inflate to a
 * thousand times its size, so a member is checked from its .npy header (size limit, the
 * archive's own size field, what the caller expects) before it is inflated.
 *
 * Ownership: tether_npy_read fills a tether_npy whose data is malloc'ed; tether_npy_free releases
 * it. tether_npy_write and tether_npz_write only read the caller's memory.
 */
#ifndef TETHER_NPY_H
#define TETHER_NPY_H

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#include "tether/crt/ndarray.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tether_npy {
    DLDataType dtype;
    int ndim;
    int64_t shape[TETHER_MAX_NDIM];
    void *data;
    size_t nbytes;
} tether_npy;

/* Largest .npy file tether_npy_read accepts (a regular file; device nodes are refused). */
#define TETHER_NPY_MAX_FILE ((size_t)1 << 32)

/* Reads a .npy file, or a file of a registered format (below) by its extension. */
int tether_npy_read(const char *path, tether_npy *out);

/* Another array file format for tether_npy_read, by extension (".pb"): the `tether` CLI registers
 * the ONNX TensorProto reader of the compiler's ONNX front end at start-up, so --in x.pb works
 * like .npy while this library stays independent of it. fn fills out (data malloc'd, freed by
 * tether_npy_free) or returns an error naming the file. Up to 4 formats; registering an
 * extension again replaces its reader. Not thread-safe: register at start-up. */
typedef int (*tether_array_reader)(const char *path, tether_npy *out);
int tether_npy_register_reader(const char *ext, tether_array_reader fn);
/* In the library tether_onnx_arrays (host/lib/npy_pb.c, which links the host library and the
 * compiler's ONNX front end): registers ".pb" with tether_npy_register_reader, the front end's
 * onnx.TensorProto reader, so --in x.pb and tether.load_array read TensorProto files. */
int tether_onnx_register_arrays(void);
/* Parses an in-memory .npy image (what = a name for messages). */
int tether_npy_parse(const void *buf, size_t len, const char *what, tether_npy *out);
int tether_npy_write(const char *path, DLDataType dtype, const int64_t *shape, int ndim,
                     const void *data);
void tether_npy_free(tether_npy *n);

/* ---- .npz archives ---- */
#define TETHER_NPZ_MAX_ARRAYS 64
#define TETHER_NPZ_NAME_MAX   128
/* The array names of an .npz archive (member names without ".npy"), in archive order, into
 * names (max entries). A member that is not a .npy file, a name too long or given twice, more
 * than max members, or a file that is not a ZIP archive is an error naming the file. */
int tether_npz_list(const char *path, char (*names)[TETHER_NPZ_NAME_MAX], int max, int *n);
/* The most bytes one member's array may hold (its data, by its .npy header): a member is
 * inflated from an archive that may be a thousand times smaller, so its size is checked against
 * this (and against what the caller expects) before anything is inflated past the header. */
#define TETHER_NPZ_MAX_MEMBER ((size_t)1 << 30)
/* The longest .npy header of a member read (numpy writes 64 to a few hundred bytes). */
#define TETHER_NPZ_MAX_HEADER ((size_t)64 << 10)
/* What a caller expects of an array (the model input it is for), checked from the .npy header
 * alone: dtype (lanes 0: any) and shape (ndim < 0: any). what/name name it in messages, as
 * tether_npy_check does ("model input", "x"). */
typedef struct tether_npy_expect {
    const char *what, *name;
    DLDataType dtype;
    int ndim;
    int64_t shape[TETHER_MAX_NDIM];
} tether_npy_expect;
/* Reads the array `name` of the archive (stored or deflated); TETHER_ERR_NOT_FOUND listing the
 * archive's arrays when it has none of that name. Messages name it "PATH:NAME". Only the
 * member's .npy header is inflated first; the array is refused before the rest is inflated when
 * its size exceeds TETHER_NPZ_MAX_MEMBER, when the archive's declared uncompressed size of the
 * member disagrees with the header, or when it differs from `expect` (NULL: nothing expected;
 * the message then reads as tether_npy_check's). The declared sizes are never used to size an
 * allocation: the array's memory is the header's data size, allocated after those checks. */
int tether_npz_read_member(const char *path, const char *name, tether_npy *out);
int tether_npz_read_member_expect(const char *path, const char *name,
                                  const tether_npy_expect *expect, tether_npy *out);
/* Writes n arrays as members NAME.npy of a new archive at path (stored, as numpy.savez does),
 * through tether_file_write: all or nothing. Names must be distinct and non-empty; like
 * numpy.savez, a '/' is kept in the member name ("conv/out" -> "conv/out.npy"). */
int tether_npz_write(const char *path, int n, const char *const *names, const tether_npy *arrays);

/* Checks n against a model's signature entry; the error names both sides:
 * "PATH: shape [8], but model input 'b' is [16]" (or "dtype float64, but ... is float32").
 * what: "model input", "output", ... */
int tether_npy_check(const tether_npy *n, const char *path, const char *what, const char *name,
                     DLDataType dtype, int ndim, const int64_t *shape);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_NPY_H */
