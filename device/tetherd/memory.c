/*
 * tetherd: the device interface under the shared request handler (tether/rpc/server.h
 * tether_server_device; see session_internal.h): memory, code loading and kernel lookup. The
 * core checks every request and keeps the handle tables; these hooks only allocate, store, load
 * and release.
 *
 * What must stay true:
 *  - no name from the wire is ever used as a path: an upload is stored as "u<id>.bin" in the
 *    session directory (created 0700 by the daemon), and its SHA-256 is checked again right
 *    before dlopen;
 *  - the upload cache (upload_cache.c) is asked when an upload starts and given every complete,
 *    verified upload;
 *  - array memory is 64-byte aligned, zeroed, and released with its slot (its OpenCL image or
 *    buffer too); a global array a kernel wrote is synchronised before the host side reads it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session_internal.h"

/* ---- the built-in system library (module 0) ---- */

static int32_t sys_null(tether_value *args, int32_t *codes, int32_t n, tether_value *ret,
                        int32_t *ret_code, void *rh) {
    (void)args, (void)codes, (void)n, (void)ret, (void)ret_code, (void)rh;
    return 0;
}

static int32_t sys_nop1(void *p) {
    (void)p;
    return 0;
}

/* tether.null and tether.nop1 are in every device's system library (the MCU firmware's too). */
static const tether_func_entry sys_entries[] = {
    {"tether.null", TETHER_ABI_PACKED, -1, {.packed = sys_null}},
    {"tether.nop1", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)sys_nop1}},
};
static const tether_func_registry sys_registry = {sys_entries, 2};

#ifdef TETHERD_HAVE_OPENCL
int tetherd_ensure_cl(session *s) {
    if (s->cl) {
        return 0;
    }
    if (!s->cfg->cl_max_width) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED, "this device has no OpenCL layer");
    }
    return tetherd_cl_open(&s->cl);
}
#endif

/* ---- memory ---- */

static int dev_alloc(void *ctx, tether_server_array *a, const tether_rpc_alloc_req *q,
                     DLDataType dt, const char *pool_name) {
    session *s = ctx;
    size_t nbytes = (size_t)a->nbytes;
    size_t cap = (nbytes + 63) / 64 * 64;
    void *mem = aligned_alloc(64, cap ? cap : 64);
    if (!mem) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of host memory (%zu bytes)", nbytes);
    }
    memset(mem, 0, cap ? cap : 64);
#ifdef TETHERD_HAVE_OPENCL
    if (q->scope == TETHER_SCOPE_TEXTURE || q->scope == TETHER_SCOPE_TEXTURE_WEIGHT) {
        int rc = tetherd_ensure_cl(s);
        if (!rc) {
            rc = tetherd_cl_image(s->cl, (tether_scope)q->scope, q->shape, (int)q->ndim,
                                  dt.bits == 16, &s->acl[a->index].clm);
        }
        if (rc) {
            free(mem);
            return tether_set_error(rc, "%s: %s", tether_scope_name((tether_scope)q->scope),
                                    tether_last_error());
        }
    }
#else
    (void)s;
#endif
    DLDevice dev = {kDLCPU, 0};
    if (tether_ndarray_wrap(&a->nd, mem, q->shape, (int)q->ndim, dt, dev, (tether_scope)q->scope)) {
#ifdef TETHERD_HAVE_OPENCL
        tetherd_cl_mem_free(s->acl[a->index].clm);
        s->acl[a->index].clm = NULL;
#endif
        free(mem);
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s", tether_last_error());
    }
    snprintf(a->nd.pool, sizeof a->nd.pool, "%s", pool_name);
    a->data = mem;
    return 0;
}

static void dev_free(void *ctx, tether_server_array *a) {
    session *s = ctx;
#ifdef TETHERD_HAVE_OPENCL
    tetherd_cl_mem_free(s->acl[a->index].clm);
    s->acl[a->index].clm = NULL;
    s->acl[a->index].dirty = 0;
#else
    (void)s;
#endif
    free(a->data);
}

/* A global array that OpenCL kernels used is synchronised back to host memory only when the host
 * side needs it (a copy, a CPU call), not after every launch: a chain of kernels over the same
 * buffers (a compiled model, the params blob) costs no map/unmap between its launches. */
static int dev_host_view(void *ctx, tether_server_array *a) {
#ifdef TETHERD_HAVE_OPENCL
    session *s = ctx;
    if (s->acl[a->index].dirty) {
        if (tetherd_cl_buffer_sync(s->cl, s->acl[a->index].clm, 1)) {
            return tether_set_error(TETHER_ERR_IO, "%s", tether_last_error());
        }
        s->acl[a->index].dirty = 0;
    }
#else
    (void)ctx, (void)a;
#endif
    return 0;
}

#ifdef TETHERD_HAVE_OPENCL
/* texture scopes: the image beside the host bytes */
static int dev_written(void *ctx, tether_server_array *a, uint64_t offset, uint64_t len) {
    session *s = ctx;
    if (a->nd.scope != TETHER_SCOPE_GLOBAL &&
        tetherd_cl_image_write(s->cl, s->acl[a->index].clm, a->data, offset, len)) {
        return tether_set_error(TETHER_ERR_IO, "%s", tether_last_error());
    }
    return 0;
}

static int dev_read(void *ctx, tether_server_array *a, uint64_t offset, uint64_t len) {
    session *s = ctx;
    if (a->nd.scope != TETHER_SCOPE_GLOBAL &&
        tetherd_cl_image_read(s->cl, s->acl[a->index].clm, a->data, offset, len)) {
        return tether_set_error(TETHER_ERR_IO, "%s", tether_last_error());
    }
    return 0;
}
#endif

/* COPY_TO data read by the transport straight into the bytes: not under an OpenCL object. */
static bool dev_placeable(void *ctx, const tether_server_array *a) {
#ifdef TETHERD_HAVE_OPENCL
    session *s = ctx;
    return s->acl[a->index].clm == NULL;
#else
    (void)ctx, (void)a;
    return true;
#endif
}

/* ---- uploads ---- */

static int dev_upload_begin(void *ctx, tether_server_upload *u) {
    session *s = ctx;
    int *fd = &s->files[u->index].fd;
    char *path = s->files[u->index].path;
    snprintf(path, sizeof s->files[0].path, "%s/u%u.bin", s->dir, (unsigned)u->id);
    *fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (*fd < 0) {
        int e = errno;
        path[0] = 0;
        return tether_set_error(TETHER_ERR_IO, "cannot create file: %s", strerror(e));
    }
    int hit = tetherd_cache_fetch(s->cfg, u->hash, u->total, *fd);
    if (hit < 0) { /* the file could not be emptied after a failed fetch: start it again */
        close(*fd);
        *fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (*fd < 0) {
            int e = errno;
            unlink(path);
            path[0] = 0;
            return tether_set_error(TETHER_ERR_IO, "cannot reset the upload file: %s", strerror(e));
        }
        hit = 0;
    }
    if (hit) { /* the same bytes came before: complete without a chunk */
        close(*fd);
        *fd = -1;
        tetherd_log(s->cfg, 0, s->peer,
                    "upload '%s' from the upload cache (%llu bytes, hash verified)", u->name,
                    (unsigned long long)u->total);
        return 1;
    }
    tetherd_log(s->cfg, 0, s->peer, "upload '%s' started (%llu bytes)", u->name,
                (unsigned long long)u->total);
    return 0;
}

static int dev_upload_write(void *ctx, tether_server_upload *u, uint64_t offset,
                            const uint8_t *data, size_t len) {
    session *s = ctx;
    int fd = s->files[u->index].fd;
    size_t off = 0;
    while (off < len) {
        ssize_t n = pwrite(fd, data + off, len - off, (off_t)(offset + off));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return tether_set_error(TETHER_ERR_IO, "write failed: %s", strerror(errno));
        }
        off += (size_t)n;
    }
    return 0;
}

/* A resent chunk: compares it with the bytes in the file. */
static int dev_upload_same(void *ctx, tether_server_upload *u, uint64_t offset, const uint8_t *data,
                           size_t len) {
    session *s = ctx;
    int fd = open(s->files[u->index].path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return tether_set_error(TETHER_ERR_IO, "cannot read the upload file: %s", strerror(errno));
    }
    uint8_t buf[4096];
    int same = 1;
    size_t off = 0;
    while (same && off < len) {
        size_t want = len - off < sizeof buf ? len - off : sizeof buf;
        ssize_t n = pread(fd, buf, want, (off_t)(offset + off));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(fd);
            return tether_set_error(TETHER_ERR_IO, "cannot read the upload file: %s", strerror(e));
        }
        same = memcmp(buf, data + off, (size_t)n) == 0;
        off += (size_t)n;
    }
    close(fd);
    return same;
}

static void dev_upload_done(void *ctx, tether_server_upload *u) {
    session *s = ctx;
    close(s->files[u->index].fd);
    s->files[u->index].fd = -1;
    tetherd_log(s->cfg, 0, s->peer, "upload '%s' complete (%llu bytes, hash verified)", u->name,
                (unsigned long long)u->total);
    tetherd_cache_store(s->cfg, u->hash, s->files[u->index].path, u->total);
}

static void dev_upload_drop(void *ctx, tether_server_upload *u) {
    session *s = ctx;
    if (s->files[u->index].fd >= 0) {
        close(s->files[u->index].fd);
    }
    if (s->files[u->index].path[0]) {
        unlink(s->files[u->index].path);
    }
    s->files[u->index].fd = -1;
    s->files[u->index].path[0] = 0;
}

/* ---- loading ---- */

/* SHA-256 of a file; 0 on success. */
static int hash_file(const char *path, uint8_t out[32]) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    tether_sha256_ctx c;
    tether_sha256_init(&c);
    uint8_t buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            close(fd);
            return -1;
        }
        if (n == 0) {
            break;
        }
        tether_sha256_update(&c, buf, (size_t)n);
    }
    close(fd);
    tether_sha256_final(&c, out);
    return 0;
}

static int dev_load(void *ctx, const tether_server_upload *u, tether_server_module *m) {
    session *s = ctx;
    const char *path = s->files[u->index].path;
    uint8_t h[32];
    if (hash_file(path, h) || memcmp(h, u->hash, 32) != 0) {
        return tether_set_error(TETHER_ERR_MISMATCH, "file content no longer matches its hash");
    }
#ifdef TETHERD_HAVE_OPENCL
    if (u->kind == TETHER_RPC_MODULE_OPENCL_SOURCE) {
        char *src = malloc(u->total + 1);
        FILE *f = src ? fopen(path, "rb") : NULL;
        int ok = f && fread(src, 1, u->total, f) == u->total;
        if (f) {
            fclose(f);
        }
        tetherd_cl_program *prog = NULL;
        int rc = ok ? tetherd_ensure_cl(s) : TETHER_ERR_IO;
        if (ok && rc == 0) {
            rc = tetherd_cl_build(s->cl, src, u->total, &prog);
        }
        free(src);
        if (rc) {
            return tether_set_error(rc, "%s", ok ? tether_last_error() : "cannot read the upload");
        }
        m->obj = prog;
        m->num_functions = (uint32_t)tetherd_cl_program_count(prog);
        tetherd_log(s->cfg, 0, s->peer, "OpenCL program '%s' built (%d kernels)", u->name,
                    tetherd_cl_program_count(prog));
        return 0;
    }
#endif
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *e = dlerror();
        return tether_set_error(TETHER_ERR_INVALID_ARG, "dlopen failed: %s",
                                e ? e : "unknown error");
    }
    const tether_func_registry *reg = dlsym(dl, "tether_module_registry");
    if (!reg) {
        dlclose(dl);
        return tether_set_error(TETHER_ERR_NOT_FOUND,
                                "the module exports no tether_module_registry");
    }
    if (tether_registry_check(reg)) {
        char e[TETHER_ERROR_MSG_MAX];
        snprintf(e, sizeof e, "%s", tether_last_error());
        dlclose(dl);
        return tether_set_error(TETHER_ERR_INVALID_ARG, "bad tether_module_registry: %s", e);
    }
    m->obj = dl;
    m->reg = reg;
    tetherd_log(s->cfg, 0, s->peer, "module '%s' loaded (%zu functions)", u->name, reg->count);
    return 0;
}

static void dev_unload(void *ctx, tether_server_module *m) {
    (void)ctx;
    if (m->reg) {
        if (m->obj) {
            dlclose(m->obj);
        }
        return;
    }
#ifdef TETHERD_HAVE_OPENCL
    tetherd_cl_program_free(m->obj);
#endif
}

#ifdef TETHERD_HAVE_OPENCL
static bool dev_kernel_find(void *ctx, const tether_server_module *m, const char *name,
                            uint32_t *index) {
    (void)ctx;
    int nargs = 0;
    int k = tetherd_cl_kernel_find(m->obj, name, &nargs);
    if (k < 0) {
        return false;
    }
    *index = (uint32_t)k;
    return true;
}

static bool dev_kernel_at(void *ctx, const tether_server_module *m, uint32_t index,
                          tether_server_func *out) {
    (void)ctx;
    const char *name = tetherd_cl_kernel_name(m->obj, (int)index);
    int nargs = 0;
    if (!name || tetherd_cl_kernel_find(m->obj, name, &nargs) != (int)index) {
        return false;
    }
    out->name = name;
    out->abi = TETHER_ABI_PACKED;
    out->num_args = nargs;
    out->kernel = true;
    out->impl = m; /* cl_call.c: m->obj is the program, the call's fn.index the kernel */
    return true;
}
#endif

/* HELLO and RESET, after the core freed every array, module and upload. */
static int dev_reset(void *ctx) {
#ifdef TETHERD_HAVE_OPENCL
    session *s = ctx;
    tetherd_cl_close(s->cl);
    s->cl = NULL;
#else
    (void)ctx;
#endif
    return 0;
}

static const tether_server_device_ops k_device_ops = {
    .alloc = dev_alloc,
    .free = dev_free,
    .host_view = dev_host_view,
#ifdef TETHERD_HAVE_OPENCL
    .written = dev_written,
    .read = dev_read,
    .kernel_find = dev_kernel_find,
    .kernel_at = dev_kernel_at,
#endif
    .placeable = dev_placeable,
    .upload_begin = dev_upload_begin,
    .upload_write = dev_upload_write,
    .upload_same = dev_upload_same,
    .upload_done = dev_upload_done,
    .upload_drop = dev_upload_drop,
    .load = dev_load,
    .unload = dev_unload,
    .reset = dev_reset,
};

void tetherd_device_init(session *s) {
    const tetherd_config *cfg = s->cfg;
    tether_server_device *d = &s->dev;
    static char room[96];
    snprintf(room, sizeof room, "the session upload limit of %llu bytes (tetherd --max-upload)",
             (unsigned long long)cfg->max_upload);
    memset(d, 0, sizeof *d);
    d->ops = &k_device_ops;
    d->system = &sys_registry;
    d->arrays = s->arrays;
    d->max_arrays = MAX_ARRAYS;
    d->modules = s->modules;
    d->max_modules = MAX_MODULES;
    d->uploads = s->uploads;
    d->max_uploads = MAX_UPLOADS;
    if (cfg->npools == 0) { /* one pool "dram" without its own limit */
        d->npools = 1;
        d->pool_names[0] = "dram";
    } else {
        d->npools = (uint32_t)cfg->npools;
        for (int i = 0; i < cfg->npools; i++) {
            d->pool_names[i] = cfg->pool_name[i];
            d->pool_capacity[i] = cfg->pool_capacity[i];
        }
    }
    d->max_alloc = cfg->max_alloc;
    d->upload_kinds = 1u << TETHER_RPC_MODULE_SHARED_OBJECT;
#ifdef TETHERD_HAVE_OPENCL
    if (cfg->cl_max_width) {
        d->upload_kinds |= 1u << TETHER_RPC_MODULE_OPENCL_SOURCE;
        d->sequences = true;
    }
#endif
    d->max_upload = cfg->max_upload;
    d->upload_room = room;
    for (int i = 0; i < MAX_UPLOADS; i++) {
        s->files[i].fd = -1;
    }
}

/* The end of the session: everything freed, the OpenCL context closed. */
void tetherd_device_close(session *s) {
    tether_server_drop_all(&s->srv);
    (void)dev_reset(s);
}
