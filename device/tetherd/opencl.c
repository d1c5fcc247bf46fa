/*
 * tetherd OpenCL layer (see opencl.h).
 *
 * What must stay true: an image is only ever created from tether_texture_extent with the device's
 * real CL_DEVICE_IMAGE2D_MAX_WIDTH/HEIGHT (nothing is truncated), or with the smaller limits of
 * the test aid TETHERD_TEST_IMAGE_MAX=WxH, which HELLO then reports too (so tests can meet a
 * device with small images on PoCL); every OpenCL error becomes a status with a message naming
 * the call and the CL error code; a failed build returns its log; a kernel argument is set
 * (clSetKernelArg) only when its value or memory object differs from what the kernel holds
 * (remembered per kernel argument; any freed memory object forgets every remembered array), and
 * a parameter's type is asked once: a sequence run again does no per-kernel host work but the
 * enqueue.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include "opencl.h"

#include "tether/rpc/proto.h"

#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct tetherd_cl {
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue q;
    size_t max_w, max_h;
};

struct tetherd_cl_mem {
    cl_mem mem;
    int is_image;
    int64_t width, height; /* texels */
    int64_t texel;         /* bytes per texel: 4 x channels */
};

/* The value last given to one kernel argument (clSetKernelArg keeps it on the kernel until
 * changed): a launch with the same value sets nothing. `gen` is mem_gen at that time: freeing
 * any memory object invalidates every remembered array (a new object may reuse the handle). */
typedef struct arg_cache {
    int set;
    int scalar_type; /* 0 = not asked yet, else ARG_* of the parameter */
    cl_mem mem;
    int type_code;
    int64_t i;
    double f;
    uint64_t gen;
} arg_cache;

enum { ARG_FLOAT = 1, ARG_DOUBLE, ARG_INT, ARG_LONG, ARG_OTHER };

static uint64_t mem_gen = 1; /* bumped whenever a memory object is released */

struct tetherd_cl_program {
    cl_program prog;
    cl_uint nkernels;
    cl_kernel *kernels;
    char (*names)[128];
    cl_uint *nargs;
    arg_cache **cache; /* per kernel: per argument */
};

/* The test aid TETHERD_TEST_IMAGE_MAX=WxH (docs/tetherd.md): the image limits become at most W x
 * H texels, in HELLO and for every image, as on a device with smaller images. A value that is
 * not WxH (positive) is said on stderr and ignored. */
static void test_image_limits(size_t *w, size_t *h) {
    const char *v = getenv("TETHERD_TEST_IMAGE_MAX");
    if (!v || !v[0]) {
        return;
    }
    unsigned long long tw = 0, th = 0;
    char tail = 0;
    if (sscanf(v, "%llux%llu%c", &tw, &th, &tail) != 2 || tw < 1 || th < 1) {
        fprintf(stderr, "tetherd: TETHERD_TEST_IMAGE_MAX='%s' is not WIDTHxHEIGHT; ignored\n", v);
        return;
    }
    if ((size_t)tw < *w) {
        *w = (size_t)tw;
    }
    if ((size_t)th < *h) {
        *h = (size_t)th;
    }
}

static int cl_fail(const char *what, cl_int err) {
    return tether_set_error(TETHER_ERR_IO, "OpenCL %s failed (error %d)", what, (int)err);
}

static int pick_device(cl_platform_id *pl, cl_device_id *dev) {
    cl_uint n = 0;
    cl_platform_id pls[8];
    if (clGetPlatformIDs(8, pls, &n) != CL_SUCCESS || n == 0) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED, "no OpenCL platform on this device");
    }
    for (cl_uint i = 0; i < n && i < 8; i++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(pls[i], CL_DEVICE_TYPE_ALL, 1, dev, &nd) == CL_SUCCESS && nd > 0) {
            cl_bool img = CL_FALSE;
            clGetDeviceInfo(*dev, CL_DEVICE_IMAGE_SUPPORT, sizeof img, &img, NULL);
            if (img) {
                *pl = pls[i];
                return 0;
            }
        }
    }
    return tether_set_error(TETHER_ERR_UNSUPPORTED, "no OpenCL device with image support");
}

/* CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE of a trivial kernel on dev, or 32 when any step
 * fails (the value every kernel of the compiler assumes without a device). */
static uint32_t preferred_multiple(cl_platform_id pl, cl_device_id dev) {
    static const char *src = "__kernel void tetherd_probe(__global float *a) {\n"
                             "    a[get_global_id(0)] = 0.0f;\n}\n";
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)pl, 0};
    cl_int err = CL_SUCCESS;
    size_t m = 0;
    cl_context ctx = clCreateContext(props, 1, &dev, NULL, NULL, &err);
    if (err != CL_SUCCESS || !ctx) {
        return 32;
    }
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (err == CL_SUCCESS && clBuildProgram(prog, 1, &dev, "", NULL, NULL) == CL_SUCCESS) {
        cl_kernel k = clCreateKernel(prog, "tetherd_probe", &err);
        if (err == CL_SUCCESS) {
            if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                         sizeof m, &m, NULL) != CL_SUCCESS) {
                m = 0;
            }
            clReleaseKernel(k);
        }
    }
    if (prog) {
        clReleaseProgram(prog);
    }
    clReleaseContext(ctx);
    return m > 0 && m <= UINT32_MAX ? (uint32_t)m : 32;
}

/* TETHER_RPC_CL_* bits of the device's extension string (whole names only). */
static uint32_t extension_bits(cl_device_id dev) {
    uint32_t bits = TETHER_RPC_CL_REPORTED;
    size_t n = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || n == 0) {
        return bits;
    }
    char *s = malloc(n + 2);
    if (!s) {
        return bits;
    }
    s[0] = ' ';
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, n, s + 1, NULL) == CL_SUCCESS) {
        s[n] = 0;
        for (char *c = s; *c; c++) {
            *c = *c == '\t' || *c == '\n' ? ' ' : *c;
        }
        size_t len = strlen(s);
        s[len] = ' ';
        s[len + 1] = 0;
        bits |= strstr(s, " cl_khr_fp64 ") ? TETHER_RPC_CL_FP64 : 0;
        bits |= strstr(s, " cl_khr_fp16 ") ? TETHER_RPC_CL_FP16 : 0;
    }
    free(s);
    return bits;
}

static uint32_t clamp32(uint64_t v) {
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

int tetherd_cl_probe(tetherd_cl_limits *out) {
    int p[2];
    if (pipe(p)) {
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        close(p[0]);
        cl_platform_id pl;
        cl_device_id dev;
        tetherd_cl_limits v;
        memset(&v, 0, sizeof v);
        if (pick_device(&pl, &dev) == 0) {
            size_t w = 0, h = 0, wg = 0;
            cl_ulong lmem = 0;
            cl_uint cu = 0;
            clGetDeviceInfo(dev, CL_DEVICE_IMAGE2D_MAX_WIDTH, sizeof w, &w, NULL);
            clGetDeviceInfo(dev, CL_DEVICE_IMAGE2D_MAX_HEIGHT, sizeof h, &h, NULL);
            clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
            clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL);
            clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
            test_image_limits(&w, &h);
            v.max_width = clamp32(w);
            v.max_height = clamp32(h);
            v.max_work_group_size = clamp32(wg);
            v.local_mem_size = lmem;
            v.compute_units = cu;
            v.wg_multiple = preferred_multiple(pl, dev);
            v.features = extension_bits(dev);
        }
        ssize_t wr = write(p[1], &v, sizeof v);
        _exit(wr == (ssize_t)sizeof v ? 0 : 1);
    }
    close(p[1]);
    tetherd_cl_limits v;
    memset(&v, 0, sizeof v);
    ssize_t n = read(p[0], &v, sizeof v);
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    if (n != (ssize_t)sizeof v || v.max_width == 0 || v.max_height == 0) {
        return -1;
    }
    *out = v;
    return 0;
}

int tetherd_cl_open(tetherd_cl **out) {
    tetherd_cl *cl = calloc(1, sizeof *cl);
    if (!cl) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    int rc = pick_device(&cl->platform, &cl->device);
    if (rc) {
        free(cl);
        return rc;
    }
    clGetDeviceInfo(cl->device, CL_DEVICE_IMAGE2D_MAX_WIDTH, sizeof cl->max_w, &cl->max_w, NULL);
    clGetDeviceInfo(cl->device, CL_DEVICE_IMAGE2D_MAX_HEIGHT, sizeof cl->max_h, &cl->max_h, NULL);
    test_image_limits(&cl->max_w, &cl->max_h);
    cl_int err;
    cl->ctx = clCreateContext(NULL, 1, &cl->device, NULL, NULL, &err);
    if (!cl->ctx) {
        free(cl);
        return cl_fail("clCreateContext", err);
    }
    cl->q = clCreateCommandQueue(cl->ctx, cl->device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (!cl->q) {
        clReleaseContext(cl->ctx);
        free(cl);
        return cl_fail("clCreateCommandQueue", err);
    }
    *out = cl;
    return 0;
}

void tetherd_cl_close(tetherd_cl *cl) {
    if (!cl) {
        return;
    }
    clFinish(cl->q);
    clReleaseCommandQueue(cl->q);
    clReleaseContext(cl->ctx);
    free(cl);
}

int tetherd_cl_image(tetherd_cl *cl, tether_scope scope, const int64_t *shape, int ndim, int half,
                     tetherd_cl_mem **out) {
    tether_image_extent ext;
    int rc =
        tether_texture_extent(scope, shape, ndim, (int64_t)cl->max_w, (int64_t)cl->max_h, &ext);
    if (rc) {
        return rc;
    }
    if (ext.width < 1 || ext.height < 1) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "an image needs at least one texel");
    }
    cl_image_format fmt = {ext.channels == 1   ? CL_R
                           : ext.channels == 2 ? CL_RG
                                               : CL_RGBA,
                           half ? CL_HALF_FLOAT : CL_FLOAT};
    /* the image contract's formats exist on every device for RGBA; R and RG are optional */
    cl_image_format have[128];
    cl_uint nhave = 0;
    if (clGetSupportedImageFormats(cl->ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 128, have,
                                   &nhave) == CL_SUCCESS) {
        int found = 0;
        for (cl_uint i = 0; i < nhave && i < 128 && !found; i++) {
            found = have[i].image_channel_order == fmt.image_channel_order &&
                    have[i].image_channel_data_type == fmt.image_channel_data_type;
        }
        if (!found) {
            return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                    "this OpenCL device has no %s %s images (%d channels); use "
                                    "4 channels (RGBA) or the global scope%s",
                                    ext.channels == 1   ? "CL_R"
                                    : ext.channels == 2 ? "CL_RG"
                                                        : "CL_RGBA",
                                    half ? "half-float (CL_HALF_FLOAT)" : "float",
                                    (int)ext.channels,
                                    half ? " (or compile without --precision fp16)" : "");
        }
    }
    cl_image_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = (size_t)ext.width;
    desc.image_height = (size_t)ext.height;
    cl_int err;
    cl_mem m = clCreateImage(cl->ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
    if (!m) {
        return cl_fail("clCreateImage", err);
    }
    tetherd_cl_mem *r = calloc(1, sizeof *r);
    if (!r) {
        clReleaseMemObject(m);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    r->mem = m;
    r->is_image = 1;
    r->width = ext.width;
    r->height = ext.height;
    r->texel = (half ? 2 : 4) * (int64_t)ext.channels;
    *out = r;
    return 0;
}

int tetherd_cl_buffer(tetherd_cl *cl, void *host, size_t nbytes, tetherd_cl_mem **out) {
    cl_int err;
    cl_mem m = clCreateBuffer(cl->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, nbytes ? nbytes : 4,
                              host, &err);
    if (!m) {
        return cl_fail("clCreateBuffer", err);
    }
    tetherd_cl_mem *r = calloc(1, sizeof *r);
    if (!r) {
        clReleaseMemObject(m);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    r->mem = m;
    *out = r;
    return 0;
}

void tetherd_cl_mem_free(tetherd_cl_mem *m) {
    if (m) {
        clReleaseMemObject(m->mem);
        free(m);
        mem_gen++; /* a kernel argument remembered as this object must be set again */
    }
}

/* Rows [r0, r1) covering bytes [offset, offset+len). */
static void rows_of(const tetherd_cl_mem *m, uint64_t offset, uint64_t len, size_t *r0,
                    size_t *r1) {
    uint64_t row = (uint64_t)m->width * (uint64_t)m->texel;
    *r0 = (size_t)(offset / row);
    *r1 = len ? (size_t)((offset + len + row - 1) / row) : *r0;
    if (*r1 > (size_t)m->height) {
        *r1 = (size_t)m->height;
    }
}

int tetherd_cl_image_write(tetherd_cl *cl, tetherd_cl_mem *m, const uint8_t *shadow,
                           uint64_t offset, uint64_t len) {
    size_t r0, r1;
    rows_of(m, offset, len, &r0, &r1);
    if (r1 <= r0) {
        return 0;
    }
    size_t origin[3] = {0, r0, 0}, region[3] = {(size_t)m->width, r1 - r0, 1};
    cl_int err =
        clEnqueueWriteImage(cl->q, m->mem, CL_TRUE, origin, region, 0, 0,
                            shadow + r0 * (size_t)m->width * (size_t)m->texel, 0, NULL, NULL);
    return err == CL_SUCCESS ? 0 : cl_fail("clEnqueueWriteImage", err);
}

int tetherd_cl_image_read(tetherd_cl *cl, tetherd_cl_mem *m, uint8_t *shadow, uint64_t offset,
                          uint64_t len) {
    size_t r0, r1;
    rows_of(m, offset, len, &r0, &r1);
    if (r1 <= r0) {
        return 0;
    }
    size_t origin[3] = {0, r0, 0}, region[3] = {(size_t)m->width, r1 - r0, 1};
    cl_int err =
        clEnqueueReadImage(cl->q, m->mem, CL_TRUE, origin, region, 0, 0,
                           shadow + r0 * (size_t)m->width * (size_t)m->texel, 0, NULL, NULL);
    return err == CL_SUCCESS ? 0 : cl_fail("clEnqueueReadImage", err);
}

int tetherd_cl_buffer_sync(tetherd_cl *cl, tetherd_cl_mem *m, int to_host) {
    (void)to_host;
    /* CL_MEM_USE_HOST_PTR: finishing the queue makes kernel writes visible in the host memory
     * on the CPU devices tetherd targets; map/unmap keeps it correct elsewhere. */
    size_t size = 0;
    clGetMemObjectInfo(m->mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    cl_int err;
    void *p = clEnqueueMapBuffer(cl->q, m->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, size, 0,
                                 NULL, NULL, &err);
    if (!p) {
        return cl_fail("clEnqueueMapBuffer", err);
    }
    err = clEnqueueUnmapMemObject(cl->q, m->mem, p, 0, NULL, NULL);
    if (err == CL_SUCCESS) {
        err = clFinish(cl->q);
    }
    return err == CL_SUCCESS ? 0 : cl_fail("clEnqueueUnmapMemObject", err);
}

int tetherd_cl_build(tetherd_cl *cl, const char *source, size_t len, tetherd_cl_program **out) {
    cl_int err;
    cl_program prog = clCreateProgramWithSource(cl->ctx, 1, &source, &len, &err);
    if (!prog) {
        return cl_fail("clCreateProgramWithSource", err);
    }
    err = clBuildProgram(prog, 1, &cl->device, "-cl-kernel-arg-info", NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[900] = "";
        size_t n = 0;
        clGetProgramBuildInfo(prog, cl->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &n);
        log[sizeof log - 1] = 0;
        clReleaseProgram(prog);
        return tether_set_error(TETHER_ERR_INVALID_ARG, "clBuildProgram failed (error %d): %s",
                                (int)err, log[0] ? log : "(empty build log)");
    }
    tetherd_cl_program *p = calloc(1, sizeof *p);
    cl_uint nk = 0;
    clCreateKernelsInProgram(prog, 0, NULL, &nk);
    if (!p || nk == 0) {
        free(p);
        clReleaseProgram(prog);
        return tether_set_error(TETHER_ERR_NOT_FOUND, "the OpenCL program defines no kernel");
    }
    p->prog = prog;
    p->nkernels = nk;
    p->kernels = calloc(nk, sizeof *p->kernels);
    p->names = calloc(nk, sizeof *p->names);
    p->nargs = calloc(nk, sizeof *p->nargs);
    p->cache = calloc(nk, sizeof *p->cache);
    if (!p->kernels || !p->names || !p->nargs || !p->cache ||
        clCreateKernelsInProgram(prog, nk, p->kernels, NULL) != CL_SUCCESS) {
        tetherd_cl_program_free(p);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "cannot create the program's kernels");
    }
    for (cl_uint k = 0; k < nk; k++) {
        clGetKernelInfo(p->kernels[k], CL_KERNEL_FUNCTION_NAME, sizeof p->names[k], p->names[k],
                        NULL);
        clGetKernelInfo(p->kernels[k], CL_KERNEL_NUM_ARGS, sizeof p->nargs[k], &p->nargs[k], NULL);
        p->cache[k] = calloc(p->nargs[k] ? p->nargs[k] : 1, sizeof **p->cache);
        if (!p->cache[k]) {
            tetherd_cl_program_free(p);
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    *out = p;
    return 0;
}

void tetherd_cl_program_free(tetherd_cl_program *p) {
    if (!p) {
        return;
    }
    for (cl_uint k = 0; p->kernels && k < p->nkernels; k++) {
        if (p->kernels[k]) {
            clReleaseKernel(p->kernels[k]);
        }
    }
    for (cl_uint k = 0; p->cache && k < p->nkernels; k++) {
        free(p->cache[k]);
    }
    free(p->cache);
    free(p->kernels);
    free(p->names);
    free(p->nargs);
    clReleaseProgram(p->prog);
    free(p);
}

int tetherd_cl_program_count(const tetherd_cl_program *p) {
    return (int)p->nkernels;
}

int tetherd_cl_kernel_find(const tetherd_cl_program *p, const char *name, int *num_args) {
    for (cl_uint k = 0; k < p->nkernels; k++) {
        if (strcmp(p->names[k], name) == 0) {
            *num_args = (int)p->nargs[k];
            return (int)k;
        }
    }
    return -1;
}

const char *tetherd_cl_kernel_name(const tetherd_cl_program *p, int k) {
    return p->names[k];
}

/* The parameter's type name (messages, and its scalar type the first time). */
static void type_name(cl_kernel kern, cl_uint i, char *tn, size_t cap) {
    tn[0] = 0;
    clGetKernelArgInfo(kern, i, CL_KERNEL_ARG_TYPE_NAME, cap, tn, NULL);
}

/* Sets scalar argument i; its parameter's type is asked once per kernel argument (c). */
static int set_scalar(cl_kernel kern, cl_uint i, const tetherd_cl_arg *a, const char *kname,
                      arg_cache *c) {
    char tn[64] = "";
    if (!c->scalar_type) {
        type_name(kern, i, tn, sizeof tn);
        c->scalar_type = !strcmp(tn, "float")                          ? ARG_FLOAT
                         : !strcmp(tn, "double")                       ? ARG_DOUBLE
                         : !strcmp(tn, "int") || !strcmp(tn, "uint")   ? ARG_INT
                         : !strcmp(tn, "long") || !strcmp(tn, "ulong") ? ARG_LONG
                                                                       : ARG_OTHER;
    }
    int ty = c->scalar_type;
    if ((a->type_code == TETHER_TYPE_FLOAT && (ty == ARG_INT || ty == ARG_LONG)) ||
        ty == ARG_OTHER) {
        type_name(kern, i, tn, sizeof tn);
    }
    cl_int err;
    if (ty == ARG_FLOAT) {
        cl_float v = a->type_code == TETHER_TYPE_FLOAT ? (cl_float)a->f : (cl_float)a->i;
        err = clSetKernelArg(kern, i, sizeof v, &v);
    } else if (ty == ARG_DOUBLE) {
        cl_double v = a->type_code == TETHER_TYPE_FLOAT ? a->f : (double)a->i;
        err = clSetKernelArg(kern, i, sizeof v, &v);
    } else if (ty == ARG_INT) {
        if (a->type_code == TETHER_TYPE_FLOAT) {
            return tether_set_error(TETHER_ERR_MISMATCH,
                                    "kernel '%s' argument %u is %s, a float was given", kname,
                                    (unsigned)i, tn);
        }
        cl_int v = (cl_int)a->i;
        err = clSetKernelArg(kern, i, sizeof v, &v);
    } else if (ty == ARG_LONG) {
        if (a->type_code == TETHER_TYPE_FLOAT) {
            return tether_set_error(TETHER_ERR_MISMATCH,
                                    "kernel '%s' argument %u is %s, a float was given", kname,
                                    (unsigned)i, tn);
        }
        cl_long v = (cl_long)a->i;
        err = clSetKernelArg(kern, i, sizeof v, &v);
    } else {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "kernel '%s' argument %u has type '%s'; scalars may be int, uint, "
                                "long, ulong, float or double",
                                kname, (unsigned)i, tn);
    }
    if (err != CL_SUCCESS) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "kernel '%s' argument %u: clSetKernelArg error %d", kname,
                                (unsigned)i, (int)err);
    }
    return 0;
}

int tetherd_cl_enqueue(tetherd_cl *cl, tetherd_cl_program *p, int k, const tetherd_cl_arg *args,
                       int nargs, uint32_t work_dim, const uint64_t *global, const uint64_t *local,
                       void **ev) {
    cl_kernel kern = p->kernels[k];
    const char *kname = p->names[k];
    if (ev) {
        *ev = NULL;
    }
    for (int i = 0; i < nargs; i++) {
        arg_cache *c = &p->cache[k][i];
        if (args[i].mem) {
            if (c->set && c->mem == args[i].mem->mem && c->gen == mem_gen) {
                continue; /* the kernel holds this array already */
            }
            c->set = 0;
            cl_int err = clSetKernelArg(kern, (cl_uint)i, sizeof(cl_mem), &args[i].mem->mem);
            if (err != CL_SUCCESS) {
                return tether_set_error(TETHER_ERR_MISMATCH,
                                        "kernel '%s' argument %d: the array does not fit the "
                                        "parameter (clSetKernelArg error %d; image parameters "
                                        "need texture-scope arrays)",
                                        kname, i, (int)err);
            }
            c->set = 1;
            c->mem = args[i].mem->mem;
            c->gen = mem_gen;
        } else {
            if (c->set && !c->mem && c->type_code == args[i].type_code &&
                (args[i].type_code == TETHER_TYPE_FLOAT ? c->f == args[i].f : c->i == args[i].i)) {
                continue; /* the same scalar as last time */
            }
            c->set = 0;
            int rc = set_scalar(kern, (cl_uint)i, &args[i], kname, c);
            if (rc) {
                return rc;
            }
            c->set = 1;
            c->mem = NULL;
            c->type_code = args[i].type_code;
            c->i = args[i].i;
            c->f = args[i].f;
        }
    }
    size_t g[3], l[3];
    int has_local = local[0] != 0;
    for (uint32_t d = 0; d < work_dim; d++) {
        g[d] = (size_t)global[d];
        l[d] = (size_t)local[d];
    }
    cl_event e = NULL;
    cl_int err = clEnqueueNDRangeKernel(cl->q, kern, work_dim, NULL, g, has_local ? l : NULL, 0,
                                        NULL, ev ? &e : NULL);
    if (err != CL_SUCCESS) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "kernel '%s': clEnqueueNDRangeKernel error %d", kname, (int)err);
    }
    if (ev) {
        *ev = e;
    }
    return 0;
}

int tetherd_cl_finish(tetherd_cl *cl) {
    cl_int err = clFinish(cl->q);
    return err == CL_SUCCESS ? 0 : cl_fail("clFinish", err);
}

int tetherd_cl_wait(tetherd_cl *cl, void **evs, int n, uint64_t *ns, uint64_t *span_ns,
                    int *failed) {
    cl_int ferr = clFinish(cl->q);
    int rc = 0;
    cl_ulong first = 0, last = 0; /* earliest START, latest END */
    *failed = -1;
    for (int i = 0; i < n; i++) {
        cl_event e = evs[i];
        ns[i] = 0;
        if (!e) {
            continue;
        }
        cl_int st = CL_COMPLETE;
        clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
        cl_ulong t0 = 0, t1 = 0;
        clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
        clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        clReleaseEvent(e);
        evs[i] = NULL;
        ns[i] = t1 > t0 ? (uint64_t)(t1 - t0) : 0;
        if (t0 && t1 >= t0) {
            first = first && first < t0 ? first : t0;
            last = last > t1 ? last : t1;
        }
        if (st < 0 && !rc) {
            *failed = i;
            rc = tether_set_error(TETHER_ERR_STATE, "the kernel failed (error %d)", (int)st);
        }
    }
    if (span_ns) {
        *span_ns = last > first ? (uint64_t)(last - first) : 0;
    }
    if (!rc && ferr != CL_SUCCESS) {
        rc = cl_fail("clFinish", ferr);
    }
    return rc;
}

int tetherd_cl_launch(tetherd_cl *cl, tetherd_cl_program *p, int k, const tetherd_cl_arg *args,
                      int nargs, uint32_t work_dim, const uint64_t *global, const uint64_t *local,
                      uint64_t *elapsed_ns) {
    void *ev;
    int rc = tetherd_cl_enqueue(cl, p, k, args, nargs, work_dim, global, local, &ev);
    if (rc) {
        return rc;
    }
    int failed;
    rc = tetherd_cl_wait(cl, &ev, 1, elapsed_ns, NULL, &failed);
    if (rc) {
        char msg[TETHER_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", tether_last_error());
        return tether_set_error(rc, "kernel '%s': %s", p->names[k], msg);
    }
    return 0;
}
