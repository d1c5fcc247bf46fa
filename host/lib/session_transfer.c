/*
 * tether host: the session's transfers (session_internal.h): uploads (UPLOAD, UPLOAD_CHUNK; the
 * device's upload cache), LOAD_MODULE and GET_FUNCTION, and arrays (ALLOC, FREE, COPY_TO,
 * COPY_FROM). Requests go through session.c's request path (timeouts, a lost session refused,
 * faults recorded).
 *
 * What must stay true: a transfer never assumes anything about the device that HELLO did not
 * say: chunks of tether_rpc_client_chunk of the session's chunk size (the smaller max frame,
 * shrunk on a lossy serial line), at most the device's `window` in flight (and at most
 * TETHER_RPC_WINDOW when set) through the client's pipeline; on a serial line an upload goes one
 * chunk after the other (a chunk must not arrive before the one it follows), and a device with a
 * window of 1 gets COPY chunks one by one. An upload is complete only when the device says so;
 * a COPY_FROM reply of another length than asked is a protocol error. Progress is reported from
 * 0 to the total.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"
#include "tether/crt.h"
#include "tether/file.h"
#include "tether/rpc.h"

typedef struct bulk {
    tether_session *s;
    uint32_t type;
    uint64_t handle; /* array, or upload id */
    uint64_t base;   /* array offset of byte 0 */
    const uint8_t *src;
    uint8_t *dst;
    size_t len;
    const char *what; /* progress label */
    uint64_t done;
    bool complete; /* UPLOAD_CHUNK: the last reply said so */
} bulk;

static int bulk_make(void *ctx, uint64_t off, size_t n, tether_rpc_msg *req) {
    bulk *b = ctx;
    req->type = b->type;
    if (b->type == TETHER_RPC_COPY_TO) {
        req->u.copy_to_req.array = b->handle;
        req->u.copy_to_req.offset = b->base + off;
        req->u.copy_to_req.data.ptr = b->src + off;
        req->u.copy_to_req.data.len = (uint32_t)n;
    } else if (b->type == TETHER_RPC_UPLOAD_CHUNK) {
        req->u.upload_chunk_req.upload_id = (uint32_t)b->handle;
        req->u.upload_chunk_req.offset = off;
        req->u.upload_chunk_req.data.ptr = b->src + off;
        req->u.upload_chunk_req.data.len = (uint32_t)n;
    } else {
        req->u.copy_from_req.array = b->handle;
        req->u.copy_from_req.offset = b->base + off;
        req->u.copy_from_req.length = n;
    }
    return 0;
}

static int bulk_take(void *ctx, uint64_t off, size_t n, const tether_rpc_msg *rep) {
    bulk *b = ctx;
    if (b->type == TETHER_RPC_COPY_FROM) {
        if (rep->u.copy_from_rep.data.len != n) {
            return tether_set_error(TETHER_ERR_PROTOCOL, "COPY_FROM: asked %zu bytes, got %u", n,
                                    (unsigned)rep->u.copy_from_rep.data.len);
        }
        if (rep->u.copy_from_rep.data.ptr != b->dst + off) { /* else read straight there */
            memcpy(b->dst + off, rep->u.copy_from_rep.data.ptr, n);
        }
    } else if (b->type == TETHER_RPC_UPLOAD_CHUNK) {
        b->complete = rep->u.upload_chunk_rep.complete;
    }
    b->done = off + n;
    if (b->s->progress && b->len) {
        b->s->progress(b->s->progress_ctx, b->what, b->done, b->len);
    }
    return 0;
}

#define BULK_WINDOW 4 /* chunks in flight at most (the device may allow fewer) */

/* Chunks in flight for a bulk transfer: the device's window, at most BULK_WINDOW, and at most
 * TETHER_RPC_WINDOW when that is set (1..8; 1 = one request after the other, as before
 * pipelining: the baseline of bench/rpc_copy). */
static uint32_t bulk_window(const tether_session *s) {
    uint32_t w = s->info.window < BULK_WINDOW ? s->info.window : BULK_WINDOW;
    const char *env = getenv("TETHER_RPC_WINDOW");
    if (env && *env) {
        char *end;
        unsigned long cap = strtoul(env, &end, 10);
        if (*end == 0 && cap >= 1 && cap < w) {
            w = (uint32_t)cap;
        }
    }
    return w;
}

/* Runs one bulk transfer through the client's pipeline with the device's window, checked and
 * followed up like every request. */
static int bulk_run(tether_session *s, bulk *b, uint32_t window) {
    int rc = tether__session_usable(s, tether_rpc_type_name(b->type));
    if (rc) {
        return rc;
    }
    if (s->progress && b->len) {
        s->progress(s->progress_ctx, b->what, 0, b->len);
    }
    uint32_t w = bulk_window(s);
    if (w > window) {
        w = window;
    }
    /* COPY_FROM replies' data straight into the caller's memory (a stream's transport reads
     * it there, not through its frame buffer) */
    s->c.copy_from_into = b->type == TETHER_RPC_COPY_FROM ? b->dst : NULL;
    return tether__session_after_request(s, tether_rpc_client_pipeline(&s->c, b->len, s->chunk, w,
                                                                       s->timeout_ms, bulk_make,
                                                                       bulk_take, b));
}

static int copy_to_one_by_one(tether_session *s, uint64_t array, uint64_t offset, const void *data,
                              size_t len);

int tether_session_upload(tether_session *s, uint32_t kind, const char *name, const void *data,
                          size_t size) {
    if (!s || !name || (!data && size)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "upload: null argument");
    }
    uint8_t hash[32];
    tether_sha256(data, size, hash);
    tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_UPLOAD;
    req.u.upload_req.kind = kind;
    req.u.upload_req.name = tether_rpc_str_c(name);
    req.u.upload_req.total_size = size;
    req.u.upload_req.sha256.ptr = hash;
    req.u.upload_req.sha256.len = 32;
    s->last_upload_cached = false;
    int rc = tether__session_request(s, &req, &rep);
    if (rc) {
        return rc;
    }
    uint32_t id = rep.u.upload_rep.upload_id;
    if (rep.u.upload_rep.cached) { /* the device had these bytes (its upload cache) */
        s->last_upload_cached = true;
        return 0;
    }
    char what[TETHER_RPC_MAX_NAME + 16];
    snprintf(what, sizeof what, "upload %s", name);
    if (!tether__session_is_uart(s)) {
        /* a stream loses nothing: chunks in flight as the device's window allows (on a serial
         * line a chunk could arrive before the one it follows, which an upload refuses) */
        bulk b = {s, TETHER_RPC_UPLOAD_CHUNK, id, 0, data, NULL, size, what, 0, false};
        rc = bulk_run(s, &b, BULK_WINDOW);
        if (!rc && !b.complete) {
            rc = tether_set_error(TETHER_ERR_PROTOCOL,
                                  "upload '%s': device did not confirm completion", name);
        }
        return rc;
    }
    if (s->progress) {
        s->progress(s->progress_ctx, what, 0, size);
    }
    size_t off = 0;
    while (off < size) {
        size_t chunk = tether_rpc_client_chunk(&s->c, s->chunk);
        size_t n = size - off < chunk ? size - off : chunk;
        memset(&req, 0, sizeof req);
        req.type = TETHER_RPC_UPLOAD_CHUNK;
        req.u.upload_chunk_req.upload_id = id;
        req.u.upload_chunk_req.offset = off;
        req.u.upload_chunk_req.data.ptr = (const uint8_t *)data + off;
        req.u.upload_chunk_req.data.len = (uint32_t)n;
        s->c.resize_above = n;
        rc = tether__session_request(s, &req, &rep);
        if (rc == TETHER_RPC_SMALLER) {
            continue; /* the line is worse than this chunk's size: again, smaller */
        }
        if (rc) {
            return rc;
        }
        off += n;
        /* a chunk given up earlier may have arrived after all: the device says how far it is */
        if (rep.u.upload_chunk_rep.received > off && rep.u.upload_chunk_rep.received <= size) {
            off = rep.u.upload_chunk_rep.received;
        }
        if (s->progress) {
            s->progress(s->progress_ctx, what, off, size);
        }
        if (off == size && !rep.u.upload_chunk_rep.complete) {
            return tether_set_error(TETHER_ERR_PROTOCOL,
                                    "upload '%s': device did not confirm completion", name);
        }
    }
    return 0;
}

_Static_assert(TETHER_UPLOAD_MAX_BYTES == TETHER_RPC_MAX_UPLOAD, "upload limits differ");

bool tether_session_last_upload_cached(const tether_session *s) {
    return s && s->last_upload_cached;
}

int tether_session_upload_file(tether_session *s, uint32_t kind, const char *name,
                               const char *path) {
    uint8_t *buf;
    size_t len;
    int rc = tether_file_read(path, TETHER_UPLOAD_MAX_BYTES, &buf, &len);
    if (rc) {
        return rc;
    }
    if (len == 0) {
        free(buf);
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s is empty", path);
    }
    rc = tether_session_upload(s, kind, name, buf, len);
    free(buf);
    return rc;
}

int tether_session_load_module(tether_session *s, const char *name, uint64_t *module,
                               uint32_t *num_functions) {
    tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_LOAD_MODULE;
    req.u.load_module_req.name = tether_rpc_str_c(name);
    int rc = tether__session_request(s, &req, &rep);
    if (rc) {
        return rc;
    }
    if (module) {
        *module = rep.u.load_module_rep.module;
    }
    if (num_functions) {
        *num_functions = rep.u.load_module_rep.num_functions;
    }
    return 0;
}

int tether_session_get_function(tether_session *s, uint64_t module, const char *name,
                                tether_remote_func *out) {
    tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_GET_FUNCTION;
    req.u.get_function_req.module = module;
    req.u.get_function_req.name = tether_rpc_str_c(name);
    int rc = tether__session_request(s, &req, &rep);
    if (rc) {
        return rc;
    }
    out->handle = rep.u.get_function_rep.func;
    out->abi = (tether_abi)rep.u.get_function_rep.abi;
    out->num_args = rep.u.get_function_rep.num_args;
    snprintf(out->name, sizeof out->name, "%s", name);
    return 0;
}

int tether_session_alloc(tether_session *s, const int64_t *shape, int ndim, DLDataType dtype,
                         tether_scope scope, const char *pool, uint64_t *array, uint64_t *nbytes) {
    if (ndim < 0 || ndim > TETHER_RPC_MAX_NDIM) {
        return tether_set_error(TETHER_ERR_LIMIT, "alloc: ndim %d outside 0..%d", ndim,
                                TETHER_RPC_MAX_NDIM);
    }
    if (!(s->info.scopes & TETHER_RPC_SCOPE_BIT(scope))) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "alloc: the device does not support scope '%s'",
                                tether_scope_name(scope) ? tether_scope_name(scope) : "?");
    }
    tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_ALLOC;
    req.u.alloc_req.ndim = (uint32_t)ndim;
    for (int i = 0; i < ndim; i++) {
        req.u.alloc_req.shape[i] = shape[i];
    }
    req.u.alloc_req.dtype_code = dtype.code;
    req.u.alloc_req.dtype_bits = dtype.bits;
    req.u.alloc_req.dtype_lanes = dtype.lanes;
    req.u.alloc_req.scope = scope;
    req.u.alloc_req.pool = tether_rpc_str_c(pool);
    int rc = tether__session_request(s, &req, &rep);
    if (rc) {
        return rc;
    }
    *array = rep.u.alloc_rep.array;
    if (nbytes) {
        *nbytes = rep.u.alloc_rep.nbytes;
    }
    return 0;
}

int tether_session_free(tether_session *s, uint64_t array) {
    tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_FREE;
    req.u.free_req.handle = array;
    return tether__session_request(s, &req, &rep);
}

int tether_session_copy_to(tether_session *s, uint64_t array, uint64_t offset, const void *data,
                           size_t len) {
    if (s && (bulk_window(s) > 1 || !tether__session_is_uart(s))) {
        bulk b = {s,   TETHER_RPC_COPY_TO, array, offset, data, NULL,
                  len, "copy to device",   0,     false};
        return bulk_run(s, &b, BULK_WINDOW);
    }
    return copy_to_one_by_one(s, array, offset, data, len);
}

/* A device that takes one chunk at a time over a serial line: one request after the other. */
static int copy_to_one_by_one(tether_session *s, uint64_t array, uint64_t offset, const void *data,
                              size_t len) {
    size_t off = 0;
    if (s->progress && len) {
        s->progress(s->progress_ctx, "copy to device", 0, len);
    }
    do {
        size_t chunk = tether_rpc_client_chunk(&s->c, s->chunk);
        size_t n = len - off < chunk ? len - off : chunk;
        tether_rpc_msg req, rep;
        memset(&req, 0, sizeof req);
        req.type = TETHER_RPC_COPY_TO;
        req.u.copy_to_req.array = array;
        req.u.copy_to_req.offset = offset + off;
        req.u.copy_to_req.data.ptr = (const uint8_t *)data + off;
        req.u.copy_to_req.data.len = (uint32_t)n;
        s->c.resize_above = n;
        int rc = tether__session_request(s, &req, &rep);
        if (rc == TETHER_RPC_SMALLER) {
            continue; /* again, smaller (a write at an offset is idempotent) */
        }
        if (rc) {
            return rc;
        }
        off += n;
        if (s->progress && len) {
            s->progress(s->progress_ctx, "copy to device", off, len);
        }
    } while (off < len);
    return 0;
}

static int copy_from_one_by_one(tether_session *s, uint64_t array, uint64_t offset, void *data,
                                size_t len);

int tether_session_copy_from(tether_session *s, uint64_t array, uint64_t offset, void *data,
                             size_t len) {
    if (s && (bulk_window(s) > 1 || !tether__session_is_uart(s))) {
        if (len == 0) {
            return 0;
        }
        bulk b = {s,   TETHER_RPC_COPY_FROM, array, offset, NULL, data,
                  len, "copy from device",   0,     false};
        return bulk_run(s, &b, BULK_WINDOW);
    }
    return copy_from_one_by_one(s, array, offset, data, len);
}

static int copy_from_one_by_one(tether_session *s, uint64_t array, uint64_t offset, void *data,
                                size_t len) {
    size_t off = 0;
    if (s->progress && len) {
        s->progress(s->progress_ctx, "copy from device", 0, len);
    }
    while (off < len) {
        size_t chunk = tether_rpc_client_chunk(&s->c, s->chunk);
        size_t n = len - off < chunk ? len - off : chunk;
        tether_rpc_msg req, rep;
        memset(&req, 0, sizeof req);
        req.type = TETHER_RPC_COPY_FROM;
        req.u.copy_from_req.array = array;
        req.u.copy_from_req.offset = offset + off;
        req.u.copy_from_req.length = n;
        s->c.resize_above = n;
        int rc = tether__session_request(s, &req, &rep);
        if (rc == TETHER_RPC_SMALLER) {
            continue; /* again, smaller */
        }
        if (rc) {
            return rc;
        }
        if (rep.u.copy_from_rep.data.len != n) {
            return tether_set_error(TETHER_ERR_PROTOCOL, "COPY_FROM: asked %zu bytes, got %u", n,
                                    (unsigned)rep.u.copy_from_rep.data.len);
        }
        memcpy((uint8_t *)data + off, rep.u.copy_from_rep.data.ptr, n);
        off += n;
        if (s->progress) {
            s->progress(s->progress_ctx, "copy from device", off, len);
        }
    }
    return 0;
}
