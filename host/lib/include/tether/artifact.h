/*
 * tether artifact: running a compiled artifact directory (`tether compile`; metadata.json and
 * a library for the C backend, OpenCL C and a launch sequence for the OpenCL backend; formats in
 * docs/codegen.md) on a device through a session. What `tether run/bench DIR`, `tether ab` and
 * the tests and benchmarks use; the CLI only parses options and prints.
 *
 * Steps:
 *   open     reads and checks the directory (metadata, the signature, for OpenCL every memory
 *            object and step) before any device is contacted;
 *   prepare  on a session: checks the params blob's size and that the artifact's target suits
 *            the device (before anything is sent), uploads and
 *            loads its library (through a loader hook: the CLI's links .o/.a for MCU firmware),
 *            sets the params, allocates every array;
 *   run      one inference: inputs copied in, the entry called (or every kernel launched),
 *            outputs copied out, with the call's time and stack high-water mark;
 *   time     TIME (TIME_SEQ for OpenCL) with TVM semantics over the inputs of the last run;
 *   free     frees the remote arrays (unless the session was lost) and everything local.
 *
 * Ownership: the artifact owns what it read and, after prepare, the arrays it allocated on the
 * borrowed session, which must outlive it. One artifact is prepared once, on one session;
 * several artifacts may be prepared on one session at once (each uploads under its own name).
 * Errors: negative tether_status with the message in tether_last_error(), naming the directory,
 * the file, the input or the limit ("x.npy: shape [1,3], but model input 'x' is [1,4]").
 */
#ifndef TETHER_ARTIFACT_H
#define TETHER_ARTIFACT_H

#include <stdint.h>

#include "tether/host.h"
#include "tether/npy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tether_artifact tether_artifact;

/* The most inputs or outputs a C artifact's signature may have (OpenCL artifacts: any). */
#define TETHER_ARTIFACT_MAX_IO 32

typedef enum tether_artifact_backend {
    TETHER_ARTIFACT_C = 0,      /* a library with one entry function (either ABI) */
    TETHER_ARTIFACT_OPENCL = 1, /* OpenCL C kernels and their launch sequence */
} tether_artifact_backend;

/* An input or output of the model signature (shape borrowed from the artifact). */
typedef struct tether_artifact_io {
    const char *name;
    DLDataType dtype;
    int ndim;
    const int64_t *shape;
    size_t nbytes;
    /* an output of data-dependent size (docs/abi.md, "Data-dependent output sizes"): the
     * dimension whose extent is known after a run only (shape holds its bound) and the index of
     * its extent output (int64 [1]); -1 for others. extent_of: for an extent output, the output
     * it measures, else -1. Extent outputs come after the model's outputs. */
    int dynamic_dim, extent_output, extent_of;
} tether_artifact_io;

/* Uploads and loads the module at path under `name` and returns its handle in *module. target
 * is the artifact's compile target. Returns 0 or a negative tether_status with the error set. */
typedef int (*tether_artifact_loader)(void *ctx, tether_session *s, const char *path,
                                      const char *target, const char *name, uint64_t *module);

typedef struct tether_artifact_options {
    /* NULL: the library's loader, which uploads shared objects (.so), OpenCL C (.cl) and MCU RAM
     * images (.bin) as they are, and refuses what the device cannot load. */
    tether_artifact_loader loader;
    void *loader_ctx;
} tether_artifact_options;

void tether_artifact_options_init(tether_artifact_options *o);

/* Reads and checks DIR. An artifact built with --no-build (no library) is refused. */
int tether_artifact_open(const char *dir, tether_artifact **out);

tether_artifact_backend tether_artifact_backend_of(const tether_artifact *a);
/* The entry function (C) or the kernels' prefix (OpenCL). */
const char *tether_artifact_entry(const tether_artifact *a);
/* The compile target from the metadata ("x86_64-linux", "cortex-m3", ...), and the CPU the
 * code was built for ("" = the target's baseline). */
const char *tether_artifact_target(const tether_artifact *a);
const char *tether_artifact_cpu(const tether_artifact *a);
int tether_artifact_num_inputs(const tether_artifact *a);
int tether_artifact_num_outputs(const tether_artifact *a);
/* The outputs of the model, without the extent outputs of its outputs of data-dependent size
 * (which follow them): what `tether run` writes and the Python package returns. */
int tether_artifact_num_model_outputs(const tether_artifact *a);
/* Input (output = 0) or output (output = 1) i of the signature; 0, or TETHER_ERR_INVALID_ARG. */
int tether_artifact_io_of(const tether_artifact *a, int output, int i, tether_artifact_io *io);
/* Checks an array (read from `path`, for the message) against input i's dtype and shape. */
int tether_artifact_check_input(const tether_artifact *a, int i, const char *path,
                                const tether_npy *n);
/* OpenCL: the number of kernel launches of one inference and the kernel and node names of
 * launch i ("" for a copy step); 0 launches for a C artifact. */
int tether_artifact_num_kernels(const tether_artifact *a);
void tether_artifact_kernel(const tether_artifact *a, int i, const char **kernel,
                            const char **node);

/* Whether code compiled for `target` and `cpu` (the -march/-mcpu value, NULL or "" = the
 * target's baseline) runs on the device d describes; when not, the error says what to compile
 * for instead ("compile with --target cortex-m3", "--mcpu x86-64-v3"). x86-64-vN needs a
 * device of level N or above, armv8.x-a+ext its +ext, an MCU -mcpu value the device's core;
 * "native" (the compiling machine's CPU) is not checked. what names the artifact. */
int tether_artifact_target_check(const tether_device_info *d, const char *target, const char *cpu,
                                 const char *what);

/* The module kind (TETHER_MODULE_*) the device d takes for the file at path, by its extension:
 * OpenCL C (.cl), a shared object (.so, tetherd) or a RAM image (.bin, MCU firmware). Returns 0;
 * 1 for object code (.o/.a) on an MCU, which must be linked at its load region first (the
 * `tether` CLI does that with the compiler; *kind = TETHER_MODULE_MCU_IMAGE); a negative status
 * when the device cannot run the file, the error saying what to compile for instead. */
int tether_artifact_module_kind(const tether_device_info *d, const char *path, uint32_t *kind);

/* The library's loader (tether_artifact_options.loader NULL): module_kind, then upload (SHA-256
 * checked by the device) and load. ctx and target are unused. */
int tether_artifact_default_loader(void *ctx, tether_session *s, const char *path,
                                   const char *target, const char *name, uint64_t *module);

/* Prepares the artifact on the session (o NULL = defaults). Once per artifact. An OpenCL artifact
 * whose images the device cannot hold (scope, CL_DEVICE_IMAGE2D_MAX_WIDTH/HEIGHT from HELLO) runs
 * its buffer variant when it carries one (compiled without image limits), else fails naming the
 * image and the limit (docs/codegen.md, "Image limits"). */
int tether_artifact_prepare(tether_artifact *a, tether_session *s,
                            const tether_artifact_options *o);
/* After prepare: why an OpenCL artifact runs its buffer variant (the image over the device's
 * limits), or NULL when it runs as compiled (and for C artifacts). */
const char *tether_artifact_fallback(const tether_artifact *a);

/* One inference. inputs[i] / outputs[i] hold io_of(i).nbytes bytes each. res (may be NULL): the
 * return code, the device time (OpenCL: the sum of the kernels' profiled times) and the stack
 * high-water mark (0 for OpenCL). kernel_ns (may be NULL, OpenCL only) gets each launch's time.
 * An output of data-dependent size gets the data of its actual shape (output_shape), dense at
 * the start of its buffer, the rest left as it was; a count above its bound (the entry's -4) is
 * TETHER_ERR_LIMIT naming the output and the bound, an extent outside 0 .. bound
 * TETHER_ERR_PROTOCOL. */
int tether_artifact_run(tether_artifact *a, const void *const *inputs, void *const *outputs,
                        tether_call_result *res, uint64_t *kernel_ns);
/* After run: the wall-clock ns of that inference on the device (OpenCL kernel sequences: each
 * sequence's first kernel START to its last kernel END on the device's profiling clock, summed
 * over the sequences; no host round trip in it; with tether_artifact_set_unprofiled_wall the
 * same kernels launched again without profiling events, the device's host clock from before the
 * first enqueue to the return of clFinish). wall - the sum of the kernels' times is the launch
 * overhead. 0 when not measured: C artifacts, per-kernel runs, a device that does not report
 * it. */
uint64_t tether_artifact_wall_ns(const tether_artifact *a);

/* After run: the actual shape of output i (its io_of shape, the data-dependent dimension set
 * from its extent output's value in outputs[]) and its bytes. TETHER_ERR_PROTOCOL when the
 * extent is outside 0 .. the bound. */
int tether_artifact_output_shape(const tether_artifact *a, int i, const void *const *outputs,
                                 int64_t *shape, size_t *nbytes);

/* TIME over the inputs of the last run (`number` grows to fill min_repeat_ms). kernel_median
 * (may be NULL, OpenCL only) gets each launch's median seconds over the repeats. */
int tether_artifact_time(tether_artifact *a, uint32_t number, uint32_t repeat,
                         uint32_t min_repeat_ms, uint32_t cooldown_ms, tether_time_stats *out,
                         double *kernel_median);

/* OpenCL: on != 0 makes run launch its kernels a second time without profiling events (no event
 * per kernel: TETHER_SEQ_NO_PROFILE, docs/rpc.md) after the profiled launch, and
 * tether_artifact_wall_ns that launch's wall clock (what `tether run` reports). The kernels run
 * twice over the same inputs, as tether_artifact_time runs them. Default 0; no effect on a C
 * artifact. */
void tether_artifact_set_unprofiled_wall(tether_artifact *a, int on);

/* OpenCL: per_kernel != 0 makes run and time send one request per kernel (CALL/TIME each)
 * instead of kernel sequences, the path before sequences, kept as a benchmark baseline. May be
 * switched between runs; no effect on a C artifact. */
void tether_artifact_set_per_kernel(tether_artifact *a, int per_kernel);

/* NULL is ignored. */
void tether_artifact_free(tether_artifact *a);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_ARTIFACT_H */
