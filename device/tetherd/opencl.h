/*
 * tetherd OpenCL layer (private to device/tetherd): one context + profiling queue per session,
 * created on first use inside the session process; texture-scope arrays as CL_RGBA/CL_FLOAT 2D
 * (CL_HALF_FLOAT for float16 arrays: --precision fp16)
 * images with a host shadow; OpenCL C programs built from uploads, their kernels callable.
 *
 * Ownership: the session owns the tetherd_cl and everything made from it; tetherd_cl_close
 * releases all of it. Failures return a negative tether_status with the message in
 * tether_last_error() (a failed build carries the build log).
 */
#ifndef TETHERD_OPENCL_H
#define TETHERD_OPENCL_H

#include <stddef.h>
#include <stdint.h>

#include "tether/crt.h"

typedef struct tetherd_cl tetherd_cl;
typedef struct tetherd_cl_mem tetherd_cl_mem; /* an image or a buffer */
typedef struct tetherd_cl_program tetherd_cl_program;

/* What HELLO reports of the OpenCL device (docs/rpc.md). */
typedef struct tetherd_cl_limits {
    uint32_t max_width, max_height; /* CL_DEVICE_IMAGE2D_MAX_WIDTH/HEIGHT (or the test aid's) */
    uint32_t max_work_group_size;   /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    uint32_t wg_multiple;           /* CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE of a trivial
                                       kernel; 32 when it cannot be had */
    uint64_t local_mem_size;        /* CL_DEVICE_LOCAL_MEM_SIZE, bytes */
    uint32_t compute_units;         /* CL_DEVICE_MAX_COMPUTE_UNITS */
    uint32_t features; /* TETHER_RPC_CL_* bits from CL_DEVICE_EXTENSIONS (REPORTED always) */
} tetherd_cl_limits;

/* Probes the first OpenCL device in a short-lived child process (so the daemon itself never
 * initialises OpenCL before forking). 0 and the device's limits when a device exists. */
int tetherd_cl_probe(tetherd_cl_limits *out);

int tetherd_cl_open(tetherd_cl **out);
void tetherd_cl_close(tetherd_cl *cl);

/* Texture-scope image for a float32 tensor of this shape (extent from tether_texture_extent,
 * checked against the device limits). host points at the array's shadow of nbytes. */
int tetherd_cl_image(tetherd_cl *cl, tether_scope scope, const int64_t *shape, int ndim, int half,
                     tetherd_cl_mem **out);
/* A buffer over host memory (global arrays used by kernels). */
int tetherd_cl_buffer(tetherd_cl *cl, void *host, size_t nbytes, tetherd_cl_mem **out);
void tetherd_cl_mem_free(tetherd_cl_mem *m);
/* Image copies of bytes [offset, offset+len) of the tensor (whole rows are transferred between
 * the shadow and the image). */
int tetherd_cl_image_write(tetherd_cl *cl, tetherd_cl_mem *m, const uint8_t *shadow,
                           uint64_t offset, uint64_t len);
int tetherd_cl_image_read(tetherd_cl *cl, tetherd_cl_mem *m, uint8_t *shadow, uint64_t offset,
                          uint64_t len);
/* Buffers over host memory: make device writes visible to the host / host writes to the device */
int tetherd_cl_buffer_sync(tetherd_cl *cl, tetherd_cl_mem *m, int to_host);

int tetherd_cl_build(tetherd_cl *cl, const char *source, size_t len, tetherd_cl_program **out);
void tetherd_cl_program_free(tetherd_cl_program *p);
int tetherd_cl_program_count(const tetherd_cl_program *p);
/* Index of kernel `name` or -1; its argument count. */
int tetherd_cl_kernel_find(const tetherd_cl_program *p, const char *name, int *num_args);
const char *tetherd_cl_kernel_name(const tetherd_cl_program *p, int k);

/* One kernel argument: a memory object, or a scalar. */
typedef struct tetherd_cl_arg {
    tetherd_cl_mem *mem; /* NULL for a scalar */
    int32_t type_code;   /* TETHER_TYPE_INT / UINT / FLOAT for scalars */
    int64_t i;
    double f;
} tetherd_cl_arg;

/* Sets kernel k's arguments and enqueues it without waiting; *ev is its profiling event, for
 * tetherd_cl_wait (ev NULL: no event is made, the kernel is not profiled; wait with
 * tetherd_cl_finish). Kernel arguments are captured at enqueue: the same kernel may be enqueued
 * again at once with other arguments. */
int tetherd_cl_enqueue(tetherd_cl *cl, tetherd_cl_program *p, int k, const tetherd_cl_arg *args,
                       int nargs, uint32_t work_dim, const uint64_t *global, const uint64_t *local,
                       void **ev);
/* One clFinish for everything enqueued, then ns[i] = profiled time of evs[i]; every event is
 * released. A failed kernel is an error naming its index in evs (*failed, -1 when none).
 * *span_ns (may be NULL): the wall-clock span of the events on the device's profiling clock,
 * the earliest START to the latest END (0 when no event has both). */
int tetherd_cl_wait(tetherd_cl *cl, void **evs, int n, uint64_t *ns, uint64_t *span_ns,
                    int *failed);

/* One clFinish for everything enqueued (kernels enqueued without events); an error names it. */
int tetherd_cl_finish(tetherd_cl *cl);

/* Launches kernel k and waits; *elapsed_ns from event profiling (end - start). */
int tetherd_cl_launch(tetherd_cl *cl, tetherd_cl_program *p, int k, const tetherd_cl_arg *args,
                      int nargs, uint32_t work_dim, const uint64_t *global, const uint64_t *local,
                      uint64_t *elapsed_ns);

#endif
