/*
 * The OpenCL artifact object's insides (not installed), shared by opencl_artifact.c (reading
 * metadata.json, checks, prepare on a device, free) and opencl_run.c (running and timing the
 * launch steps).
 *
 * What must stay true: only those two files see these structures; after
 * tether__ocl_artifact_prepare every memory object the steps name has its remote handle, and
 * the steps' arguments name memory objects in range (checked when the metadata was read).
 */
#ifndef TETHER_HOST_OPENCL_ARTIFACT_INTERNAL_H
#define TETHER_HOST_OPENCL_ARTIFACT_INTERNAL_H

#include <stdint.h>

#include "opencl_artifact.h"
#include "tether/crt.h"

#define OCL_MAX_IO   4096
#define OCL_MAX_ARGS 64

/* K_STATUS: the run-time error flag, one int32 the checking kernels set (docs/codegen.md,
 * "Run-time errors") */
enum { K_INPUT, K_OUTPUT, K_WORKSPACE, K_PARAMS, K_IMAGE, K_TEXTURE, K_STATUS, K_NKINDS };
static const char *const kind_names[] = {"input",        "output",  "workspace", "params",
                                         "weight_image", "texture", "status"};

typedef struct ocl_mem {
    char name[128];
    int kind;
    tether_scope scope;
    int ndim;
    int64_t shape[TETHER_MAX_NDIM];
    uint64_t bytes;
    int64_t params_off; /* -1 = none */
    int index;          /* inputs/outputs: position in the signature */
    int nhwc;           /* texture: a custom operator's packed image [H, W, C] (layout NHWC) */
    int eb;             /* bytes per element: 4 (float32), 2 (float16: --precision fp16) */
    uint64_t handle;
    int allocated;
    DLDataType dt; /* graph inputs and outputs: their element type */
} ocl_mem;

typedef struct ocl_arg {
    int mem; /* -1 = the int scalar below */
    int64_t ival;
} ocl_arg;

typedef struct ocl_step {
    char kernel[128];
    char node[128];
    uint32_t work_dim;
    uint64_t global[3], local[3];
    uint32_t nargs;
    ocl_arg args[OCL_MAX_ARGS];
    tether_remote_func fn;
} ocl_step;

/* metadata.json's "errors": what a value of the status object means */
typedef struct ocl_err {
    char node[128];
    char op[64];
    char what[128];
    int code; /* the TETHER_ERR_* the run returns (the C path's code for the same input) */
} ocl_err;

typedef struct ocl_io {
    char name[128];
    int ndim;
    int64_t shape[TETHER_MAX_NDIM];
    int64_t elems;
    int eb; /* bytes per element of its dtype */
    DLDataType dt;
    /* an output of data-dependent size (metadata "dynamic_dim", "extent_output", "extent_of";
     * -1 none), checked as artifact.c checks a C artifact's */
    int dyn_dim, extent_output, extent_of;
    int mem;
} ocl_io;

struct tether__ocl_artifact {
    char dir[1024];
    char prefix[128];
    char source_name[256];
    char *source;
    size_t source_len;
    uint8_t *params;
    size_t params_bytes;
    ocl_mem *mems;
    int nmems;
    ocl_step *steps;
    int nsteps;
    ocl_io *in, *out;
    int nin, nout;
    tether_session *s;
    int prepared;
    int per_kernel;      /* one request per kernel instead of kernel sequences (bench baseline) */
    int unprofiled_wall; /* run launches the sequences again without events for wall_ns */
    uint64_t wall_ns;    /* the last run's wall clock on the device, its sequences' sum (0: none) */
    /* the steps as kernel sequences: built once after prepare; chunks of at most
     * TETHER_SEQ_MAX_STEPS steps / TETHER_SEQ_MAX_ARGS arguments */
    tether_launch_step *lsteps;
    tether_remote_arg *largs;
    int *chunk_start; /* nchunks + 1 entries */
    int nchunks;
    /* metadata.json's "buffer_variant" (NULL: none); after a fallback, the artifact as compiled
     * (with images), kept only to be freed */
    tether__ocl_artifact *variant;
    char fallback[TETHER_ERROR_MSG_MAX]; /* why the buffer variant runs ("" = it does not) */
    /* the run-time error flag: its memory object (-1 = none), the meaning of its values
     * 1..nerrs, and whether it may be set (a run that did not read it back as 0) */
    int status_mem;
    ocl_err *errs;
    int nerrs;
    int status_dirty;
};

/* opencl_run.c: the steps as kernel sequences with their arguments (the remote handles), built
 * once; prepare calls it, so a run does no per-kernel work on the host. */
int tether__ocl_artifact_build_sequences(tether__ocl_artifact *a);
/* opencl_run.c: zero the status object (prepare, and a run after one that may have set it). */
int tether__ocl_artifact_reset_status(tether__ocl_artifact *a);

#endif
