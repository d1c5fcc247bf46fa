/*
 * Running an OpenCL artifact (`tether compile --backend opencl`, docs/codegen.md "OpenCL
 * backend") on a device through the host library: read and validate the artifact, then on a
 * session upload the kernels (the device builds them), allocate every memory object in its scope,
 * copy the weights, launch the steps in order, read the outputs, time the sequence.
 *
 * Internal to tether_host: the OpenCL half of tether/artifact.h (artifact.c hands an artifact
 * whose metadata says "backend": "opencl" to it); no printing.
 * Ownership: tether__ocl_artifact_load returns an object that owns the parsed metadata, the source
 * and the weights, and after tether__ocl_artifact_prepare the remote arrays it allocated on the
 * borrowed session (which must outlive it); tether__ocl_artifact_free releases all of it, on every
 * path. Errors: negative tether_status with the message in tether_last_error(), naming the
 * artifact, memory object, node or limit.
 */
#ifndef TETHER_HOST_OPENCL_ARTIFACT_H
#define TETHER_HOST_OPENCL_ARTIFACT_H

#include <stddef.h>
#include <stdint.h>

#include "tether/host.h"

typedef struct tether__ocl_artifact tether__ocl_artifact;

/* Checks DIR's metadata (m, parsed by artifact.c; borrowed) and reads the source and params.bin:
 * memory objects, their shapes, bytes and params ranges, every step and argument, before
 * anything is sent. m NULL: the metadata did not parse. */
struct cJSON;
int tether__ocl_artifact_load(const char *dir, const struct cJSON *m, tether__ocl_artifact **out);

/* artifact.c: a plain file name inside the artifact directory (no '/', not . or .., < 200). */
int tether__artifact_file_name_ok(const char *s);

/* artifact.c: what an output says of its data-dependent size (metadata "dynamic_dim",
 * "extent_output", "extent_of"; -1 none), and the one check of them both artifact kinds make:
 * a dynamic output names a dimension it has and an int64 [1] extent output naming it back;
 * extent outputs come last. Nonzero (TETHER_ERR_INVALID_ARG) with the reason in why. */
typedef struct tether__io_dyn {
    const char *name;
    int ndim;
    int64_t len0; /* shape[0] (1 for a scalar) */
    DLDataType dtype;
    int dyn_dim, extent_output, extent_of;
} tether__io_dyn;
int tether__artifact_check_dynamic(const tether__io_dyn *io, int n, char *why, size_t cap);

/* The model signature from the metadata. */
int tether__ocl_artifact_num_inputs(const tether__ocl_artifact *a);
int tether__ocl_artifact_num_outputs(const tether__ocl_artifact *a);
/* name, ndim and shape (up to 8) of input/output i; returns the element count. */
int64_t tether__ocl_artifact_io(const tether__ocl_artifact *a, int output, int i, const char **name,
                                int *ndim, const int64_t **shape);
/* The element type of input/output i, and for an output of data-dependent size its dynamic
 * dimension, its extent output's index and, for an extent output, the output it gives the extent
 * of (-1 each when none). */
void tether__ocl_artifact_io_kind(const tether__ocl_artifact *a, int output, int i, DLDataType *dt,
                                  int *dyn_dim, int *extent_output, int *extent_of);
int tether__ocl_artifact_num_steps(const tether__ocl_artifact *a);
/* kernel and node name ("" for a copy step) of step i. */
void tether__ocl_artifact_step(const tether__ocl_artifact *a, int i, const char **kernel,
                               const char **node);
const char *tether__ocl_artifact_prefix(const tether__ocl_artifact *a);

/* Checks that the device runs OpenCL and that every image fits its HELLO limits, uploads and
 * builds the source, looks up every kernel, allocates every memory object and copies the weights.
 * Once per artifact object. An image the device cannot hold (no such scope, an extent over
 * CL_DEVICE_IMAGE2D_MAX_WIDTH/HEIGHT) makes the artifact its buffer variant from here on when it
 * has one (same inputs, outputs and steps), else fails naming the image, its node and the limit. */
int tether__ocl_artifact_prepare(tether__ocl_artifact *a, tether_session *s);
/* After prepare: why the buffer variant runs instead of the images (the image that did not fit
 * and the limit), or NULL when the artifact runs as compiled. */
const char *tether__ocl_artifact_fallback(const tether__ocl_artifact *a);

/* One inference: inputs (float32, sizes as the metadata says) copied in, every step launched,
 * outputs copied out; *elapsed_ns (may be NULL) = the sum of the kernels' profiled times;
 * step_ns (may be NULL) receives each step's time. The steps go to the device as kernel
 * sequences (LAUNCH_SEQ: one request for up to 128 steps / 1024 arguments; longer models in
 * several such requests, in order). */
int tether__ocl_artifact_run(tether__ocl_artifact *a, const float *const *inputs,
                             float *const *outputs, uint64_t *elapsed_ns, uint64_t *step_ns);
/* After run: its wall-clock ns on the device (each sequence's first kernel START to last END,
 * summed over the sequences; with unprofiled_wall the unprofiled launch's host clock around
 * enqueue + clFinish); 0 after a per-kernel run or from a device that does not report it. */
uint64_t tether__ocl_artifact_wall_ns(const tether__ocl_artifact *a);

/* TIME of the whole sequence after a run (TIME_SEQ: one call = every step in order; a model of
 * several sequences sums their per-repeat times); out gets per-repeat seconds per inference and
 * mean/median/min/max. step_median (may be NULL) receives each step's median seconds over the
 * repeats. cooldown_ms is waited between repeats. */
int tether__ocl_artifact_time(tether__ocl_artifact *a, uint32_t number, uint32_t repeat,
                              uint32_t min_repeat_ms, uint32_t cooldown_ms, tether_time_stats *out,
                              double *step_median);

/* on != 0: run launches its sequences a second time without profiling events
 * (TETHER_SEQ_NO_PROFILE) and wall_ns is that launch's wall clock. Default 0. */
void tether__ocl_artifact_unprofiled_wall(tether__ocl_artifact *a, int on);

/* per_kernel != 0: run and time launch one request per kernel (CALL / TIME each), the path
 * before kernel sequences; kept as bench/opencl's baseline. Default 0. */
void tether__ocl_artifact_per_kernel(tether__ocl_artifact *a, int per_kernel);

/* Frees the remote arrays (unless the session was lost) and everything local. NULL is ignored. */
void tether__ocl_artifact_free(tether__ocl_artifact *a);

#endif
