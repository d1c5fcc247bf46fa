/*
 * The request handler behind the server core's gates, shared by tetherd and the MCU firmware
 * (tether/rpc/server.h "device interface", docs/rpc.md "Server core"): UPLOAD, UPLOAD_CHUNK,
 * LOAD_MODULE, UNLOAD, GET_FUNCTION, ALLOC, FREE, COPY_TO, COPY_FROM, RESET, SHUTDOWN, the
 * function handles of CALL/TIME and their array arguments.
 *
 * What must stay true:
 *  - freestanding (stdint/stddef/stdbool/string.h and the crt core only; tests/rpc/cross_check.sh);
 *    nothing here allocates: the tables are the device's storage;
 *  - every check, code and message of these requests is here, so both servers answer the same
 *    request with the same bytes (tests/mcu/test_mcu_agree.c); a device operation only
 *    allocates, stores, loads or runs, and its failures are prefixed with the request's name;
 *  - handles are never pointers: an array handle is gen << 16 | slot + 1, a module handle
 *    gen << 8 | slot + 1, a function handle module << 16 | entry + 1 (module 0 = the system
 *    library); each slot's generation moves on with every use, so a stale or forged handle is
 *    NOT_FOUND, never a dereference;
 *  - an upload's bytes are hashed here as they arrive (in order) and a chunk never changes bytes
 *    already received: a resent chunk must equal them (docs/rpc.md UPLOAD_CHUNK).
 */
#include <string.h>

#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/crt/scope.h"
#include "tether/rpc/mp.h"
#include "tether/rpc/server.h"

#define ARRAY_SLOTS_MAX  0xFFFFu
#define MODULE_SLOTS_MAX 0xFFu
#define ENTRIES_MAX      0xFFFFu

static const tether_server_device *dev_of(const tether_server *s) {
    return s->cfg.dev;
}

static const tether_server_device_ops *dops(const tether_server *s) {
    return s->cfg.dev->ops;
}

/* Re-words the device's last error with a prefix: "<prefix>: <device text>". */
static int dev_error(int rc, const char *prefix) {
    char inner[TETHER_ERROR_MSG_MAX];
    memcpy(inner, tether_last_error(), sizeof inner);
    inner[sizeof inner - 1] = 0;
    if (rc >= 0) {
        rc = TETHER_ERR_INTERNAL;
    }
    return tether_set_error(rc, "%s: %s", prefix, inner[0] ? inner : "failed");
}

/* ---- arrays ---- */

tether_server_array *tether_server_find_array(tether_server *s, uint64_t h) {
    const tether_server_device *d = dev_of(s);
    uint64_t slot = h & 0xFFFFu;
    if (slot == 0 || slot > d->max_arrays) {
        return NULL;
    }
    tether_server_array *a = &d->arrays[slot - 1];
    return a->handle != 0 && a->handle == h ? a : NULL;
}

static int no_array(const char *what, uint64_t h) {
    return tether_set_error(TETHER_ERR_NOT_FOUND,
                            "%s: no NDArray with handle %llu (freed, never allocated, or from "
                            "before a HELLO, a RESET or a device restart)",
                            what, (unsigned long long)h);
}

static void free_array(tether_server *s, tether_server_array *a) {
    dops(s)->free(s->cfg.ctx, a);
    s->allocated -= a->nbytes;
    if (a->pool >= 0) {
        s->pool_used[a->pool] -= a->nbytes;
    }
    uint32_t gen = a->gen, index = a->index;
    memset(a, 0, sizeof *a);
    a->gen = gen;
    a->index = index;
}

/* ---- modules and functions ---- */

static tether_server_module *find_module(tether_server *s, uint64_t h) {
    const tether_server_device *d = dev_of(s);
    uint64_t slot = h & 0xFFu;
    if (slot == 0 || slot > d->max_modules) {
        return NULL;
    }
    tether_server_module *m = &d->modules[slot - 1];
    return m->handle != 0 && m->handle == h ? m : NULL;
}

static void unload_module(tether_server *s, tether_server_module *m) {
    if (dops(s)->unload) {
        dops(s)->unload(s->cfg.ctx, m);
    }
    uint32_t gen = m->gen, index = m->index;
    memset(m, 0, sizeof *m);
    m->gen = gen;
    m->index = index;
}

void tether_server_drop_modules(tether_server *s) {
    const tether_server_device *d = dev_of(s);
    for (uint32_t i = 0; i < d->max_modules; i++) {
        if (d->modules[i].handle != 0) {
            unload_module(s, &d->modules[i]);
        }
    }
}

static void entry_func(const tether_func_entry *e, tether_server_func *out) {
    out->name = e->name;
    out->abi = e->abi;
    out->num_args = e->num_args;
    out->kernel = false;
    out->impl = e;
}

bool tether__server_find_func(tether_server *s, uint64_t handle, tether_server_func *out) {
    const tether_server_device *d = dev_of(s);
    uint64_t mh = handle >> 16;
    uint32_t index = (uint32_t)(handle & 0xFFFFu);
    if (index == 0) {
        return false;
    }
    const tether_func_registry *reg = d->system;
    const tether_server_module *m = NULL;
    if (mh != 0) {
        m = find_module(s, mh);
        if (m == NULL) {
            return false;
        }
        reg = m->reg;
    }
    if (reg == NULL) {
        if (dops(s)->kernel_at == NULL || index > m->num_functions ||
            !dops(s)->kernel_at(s->cfg.ctx, m, index - 1u, out)) {
            return false;
        }
    } else {
        if (index > reg->count) {
            return false;
        }
        entry_func(&reg->entries[index - 1u], out);
    }
    out->index = index - 1u;
    return true;
}

int tether__server_call_arrays(tether_server *s, tether_server_call *call) {
    const tether_rpc_invoke *inv = call->inv;
    const char *what = tether_rpc_type_name(call->type);
    for (uint32_t i = 0; i < inv->num_args; i++) {
        const tether_rpc_arg *arg = &inv->args[i];
        s->call_arrays[i] = NULL;
        if (arg->type_code != TETHER_TYPE_DLTENSOR && arg->type_code != TETHER_TYPE_HANDLE) {
            continue;
        }
        tether_server_array *a = tether_server_find_array(s, arg->v.v_handle);
        if (a == NULL) {
            return tether_set_error(
                TETHER_ERR_NOT_FOUND, "%s '%s': argument %u: no NDArray with handle %llu", what,
                call->fn.name, (unsigned)i, (unsigned long long)arg->v.v_handle);
        }
        /* a CPU function reads and writes the bytes themselves; a kernel the device's copy */
        if (!call->fn.kernel && dops(s)->host_view) {
            int rc = dops(s)->host_view(s->cfg.ctx, a);
            if (rc != TETHER_OK) {
                char prefix[TETHER_RPC_MAX_NAME + 48];
                tether_format(prefix, sizeof prefix, "%s '%s': argument %u", what, call->fn.name,
                              (unsigned)i);
                return dev_error(rc, prefix);
            }
        }
        s->call_arrays[i] = a;
        call->values[i].v_handle =
            arg->type_code == TETHER_TYPE_DLTENSOR ? (void *)&a->nd.dl : (void *)a->data;
    }
    call->arrays = s->call_arrays;
    return TETHER_OK;
}

/* ---- uploads ---- */

static tether_server_upload *find_upload_id(tether_server *s, uint32_t id) {
    const tether_server_device *d = dev_of(s);
    for (uint32_t i = 0; id != 0 && i < d->max_uploads; i++) {
        if (d->uploads[i].id == id) {
            return &d->uploads[i];
        }
    }
    return NULL;
}

static tether_server_upload *find_upload_name(tether_server *s, const char *name) {
    const tether_server_device *d = dev_of(s);
    for (uint32_t i = 0; i < d->max_uploads; i++) {
        if (d->uploads[i].id != 0 && strcmp(d->uploads[i].name, name) == 0) {
            return &d->uploads[i];
        }
    }
    return NULL;
}

static void drop_upload(tether_server *s, tether_server_upload *u) {
    if (dops(s)->upload_drop) {
        dops(s)->upload_drop(s->cfg.ctx, u);
    }
    uint32_t index = u->index;
    memset(u, 0, sizeof *u);
    u->index = index;
}

void tether_server_drop_all(tether_server *s) {
    const tether_server_device *d = dev_of(s);
    for (uint32_t i = 0; i < d->max_arrays; i++) {
        if (d->arrays[i].handle != 0) {
            free_array(s, &d->arrays[i]);
        }
    }
    s->allocated = 0;
    memset(s->pool_used, 0, sizeof s->pool_used);
    tether_server_drop_modules(s);
    for (uint32_t i = 0; i < d->max_uploads; i++) {
        if (d->uploads[i].id != 0) {
            drop_upload(s, &d->uploads[i]);
        }
    }
}

static const char *kind_name(uint32_t kind) {
    switch (kind) {
    case TETHER_RPC_MODULE_SHARED_OBJECT:
        return "shared object";
    case TETHER_RPC_MODULE_OPENCL_SOURCE:
        return "OpenCL source";
    case TETHER_RPC_MODULE_MCU_IMAGE:
        return "MCU image";
    default:
        return "unknown";
    }
}

static int on_upload(tether_server *s, const tether_rpc_upload_req *q, tether_rpc_upload_rep *r) {
    const tether_server_device *d = dev_of(s);
    char name[TETHER_RPC_MAX_NAME];
    if (tether_rpc_str_copy(q->name, name, sizeof name, "name") != TETHER_OK || name[0] == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "UPLOAD: bad module name (1 to %u bytes, no NUL)",
                                (unsigned)TETHER_RPC_MAX_NAME - 1u);
    }
    if (q->kind >= 32u || (d->upload_kinds & (1u << q->kind)) == 0) {
        char takes[96] = "";
        size_t n = 0;
        for (uint32_t k = 0; k < TETHER_RPC_MODULE_KIND_COUNT; k++) {
            if (d->upload_kinds & (1u << k)) {
                n += tether_format(takes + n, n < sizeof takes ? sizeof takes - n : 0, "%s%s %u",
                                   n ? ", " : "", kind_name(k), (unsigned)k);
            }
        }
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "UPLOAD '%s': module kind %u (%s) is not taken by this device "
                                "(it takes: %s)",
                                name, (unsigned)q->kind, kind_name(q->kind), takes);
    }
    if (q->total_size == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "UPLOAD '%s': an empty module", name);
    }
    if (q->total_size > d->max_upload) {
        return tether_set_error(TETHER_ERR_LIMIT, "UPLOAD '%s' of %llu bytes does not fit %s", name,
                                (unsigned long long)q->total_size,
                                d->upload_room ? d->upload_room : "this device");
    }
    if (q->sha256.len != TETHER_RPC_HASH_BYTES) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "UPLOAD '%s': sha256 must be %u bytes",
                                name, (unsigned)TETHER_RPC_HASH_BYTES);
    }
    /* the same name replaces the old upload; every slot taken: the oldest makes room */
    tether_server_upload *u = find_upload_name(s, name);
    if (u != NULL) {
        drop_upload(s, u);
    }
    u = NULL;
    for (uint32_t i = 0; i < d->max_uploads; i++) {
        tether_server_upload *c = &d->uploads[i];
        if (c->id == 0) {
            u = c;
            break;
        }
        if (u == NULL || c->order < u->order) {
            u = c;
        }
    }
    if (u->id != 0) {
        drop_upload(s, u);
    }
    if (++s->next_upload == 0) {
        s->next_upload = 1;
    }
    u->id = s->next_upload;
    u->kind = q->kind;
    u->complete = false;
    u->total = q->total_size;
    u->received = 0;
    u->order = ++s->upload_order;
    memcpy(u->hash, q->sha256.ptr, TETHER_RPC_HASH_BYTES);
    tether_sha256_init(&u->sha);
    memcpy(u->name, name, sizeof u->name);
    int rc = dops(s)->upload_begin(s->cfg.ctx, u);
    if (rc < 0) {
        char prefix[TETHER_RPC_MAX_NAME + 16];
        tether_format(prefix, sizeof prefix, "UPLOAD '%s'", name);
        rc = dev_error(rc, prefix);
        uint32_t index = u->index;
        memset(u, 0, sizeof *u);
        u->index = index;
        return rc;
    }
    if (rc == 1) { /* the device had these bytes: complete without a chunk */
        u->received = u->total;
        u->complete = true;
        r->cached = true;
    }
    r->upload_id = u->id;
    return TETHER_OK;
}

static int on_upload_chunk(tether_server *s, const tether_rpc_upload_chunk_req *q,
                           tether_rpc_upload_chunk_rep *r) {
    tether_server_upload *u = find_upload_id(s, q->upload_id);
    if (u == NULL) {
        return tether_set_error(TETHER_ERR_NOT_FOUND,
                                "UPLOAD_CHUNK: no upload with id %u (never started, replaced, "
                                "discarded, or from before a HELLO or RESET)",
                                (unsigned)q->upload_id);
    }
    uint64_t len = q->data.len;
    if (q->offset > u->received) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "UPLOAD_CHUNK '%s': offset %llu is past the %llu bytes received "
                                "(chunks come in order)",
                                u->name, (unsigned long long)q->offset,
                                (unsigned long long)u->received);
    }
    if (len > u->total - q->offset) {
        char name[TETHER_RPC_MAX_NAME];
        memcpy(name, u->name, sizeof name);
        uint64_t total = u->total;
        drop_upload(s, u);
        return tether_set_error(TETHER_ERR_LIMIT,
                                "UPLOAD_CHUNK '%s': bytes [%llu, %llu) are past the announced %llu "
                                "bytes; the upload was discarded",
                                name, (unsigned long long)q->offset,
                                (unsigned long long)(q->offset + len), (unsigned long long)total);
    }
    uint64_t end = q->offset + len;
    /* bytes received before (a resent chunk): they must be the same, and are not written */
    uint64_t again = (end < u->received ? end : u->received) - q->offset;
    if (again > 0) {
        int same = dops(s)->upload_same(s->cfg.ctx, u, q->offset, q->data.ptr, (size_t)again);
        if (same < 0) {
            char prefix[TETHER_RPC_MAX_NAME + 24];
            tether_format(prefix, sizeof prefix, "UPLOAD_CHUNK '%s'", u->name);
            return dev_error(same, prefix);
        }
        if (same == 0) {
            return tether_set_error(TETHER_ERR_STATE,
                                    "UPLOAD_CHUNK '%s': bytes [%llu, %llu) differ from those "
                                    "received before; a chunk that changes them is refused "
                                    "(start a new UPLOAD)",
                                    u->name, (unsigned long long)q->offset,
                                    (unsigned long long)(q->offset + again));
        }
    }
    if (end > u->received) {
        const uint8_t *fresh = q->data.ptr + again;
        size_t n = (size_t)(end - u->received);
        int rc = dops(s)->upload_write(s->cfg.ctx, u, u->received, fresh, n);
        if (rc != TETHER_OK) {
            char prefix[TETHER_RPC_MAX_NAME + 48];
            tether_format(prefix, sizeof prefix, "UPLOAD_CHUNK '%s' (upload discarded)", u->name);
            rc = dev_error(rc, prefix);
            drop_upload(s, u);
            return rc;
        }
        tether_sha256_update(&u->sha, fresh, n);
        u->received = end;
        if (u->received == u->total) {
            uint8_t h[TETHER_RPC_HASH_BYTES];
            tether_sha256_final(&u->sha, h);
            if (memcmp(h, u->hash, sizeof h) != 0) {
                char name[TETHER_RPC_MAX_NAME];
                memcpy(name, u->name, sizeof name);
                uint64_t total = u->total;
                drop_upload(s, u);
                return tether_set_error(TETHER_ERR_MISMATCH,
                                        "UPLOAD '%s': the SHA-256 of the %llu bytes received does "
                                        "not match the announced hash; the upload was discarded",
                                        name, (unsigned long long)total);
            }
            u->complete = true;
            if (dops(s)->upload_done) {
                dops(s)->upload_done(s->cfg.ctx, u);
            }
        }
    }
    r->received = u->received;
    r->complete = u->complete;
    return TETHER_OK;
}

static int on_load_module(tether_server *s, const tether_rpc_load_module_req *q,
                          tether_rpc_load_module_rep *r) {
    const tether_server_device *d = dev_of(s);
    char name[TETHER_RPC_MAX_NAME];
    if (tether_rpc_str_copy(q->name, name, sizeof name, "name") != TETHER_OK || name[0] == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "LOAD_MODULE: bad module name");
    }
    tether_server_upload *u = find_upload_name(s, name);
    if (u == NULL) {
        return tether_set_error(TETHER_ERR_NOT_FOUND, "LOAD_MODULE: no upload named '%s'", name);
    }
    if (!u->complete) {
        return tether_set_error(
            TETHER_ERR_STATE, "LOAD_MODULE '%s': the upload is incomplete (%llu of %llu bytes)",
            name, (unsigned long long)u->received, (unsigned long long)u->total);
    }
    if (d->load_replaces) {
        tether_server_drop_modules(s);
    }
    tether_server_module *m = NULL;
    for (uint32_t i = 0; i < d->max_modules && m == NULL; i++) {
        if (d->modules[i].handle == 0) {
            m = &d->modules[i];
        }
    }
    if (m == NULL) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "LOAD_MODULE '%s': %u modules are loaded already (UNLOAD one)",
                                name, (unsigned)d->max_modules);
    }
    m->reg = NULL;
    m->num_functions = 0;
    m->obj = NULL;
    int rc = dops(s)->load(s->cfg.ctx, u, m);
    if (rc == TETHER_OK && m->reg != NULL) {
        m->num_functions = (uint32_t)m->reg->count;
    }
    if (rc == TETHER_OK && m->num_functions > ENTRIES_MAX) {
        if (dops(s)->unload) {
            dops(s)->unload(s->cfg.ctx, m);
        }
        rc = tether_set_error(TETHER_ERR_LIMIT, "%u functions, at most %u",
                              (unsigned)m->num_functions, (unsigned)ENTRIES_MAX);
    }
    if (rc != TETHER_OK) {
        char prefix[TETHER_RPC_MAX_NAME + 16];
        tether_format(prefix, sizeof prefix, "LOAD_MODULE '%s'", name);
        m->reg = NULL;
        m->obj = NULL;
        return dev_error(rc, prefix);
    }
    m->gen = m->gen % 0xFFFFu + 1u;
    m->handle = (uint64_t)m->gen << 8 | (uint64_t)(m->index + 1u);
    r->module = m->handle;
    r->num_functions = m->num_functions;
    return TETHER_OK;
}

static int on_unload(tether_server *s, uint64_t h) {
    tether_server_module *m = find_module(s, h);
    if (m == NULL) {
        return tether_set_error(TETHER_ERR_NOT_FOUND, "UNLOAD: no module with handle %llu",
                                (unsigned long long)h);
    }
    unload_module(s, m);
    return TETHER_OK;
}

static int on_get_function(tether_server *s, const tether_rpc_get_function_req *q,
                           tether_rpc_get_function_rep *r) {
    char name[TETHER_RPC_MAX_NAME];
    if (tether_rpc_str_copy(q->name, name, sizeof name, "name") != TETHER_OK) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "GET_FUNCTION: bad function name");
    }
    const tether_func_registry *reg = dev_of(s)->system;
    const tether_server_module *m = NULL;
    if (q->module != 0) {
        m = find_module(s, q->module);
        if (m == NULL) {
            return tether_set_error(TETHER_ERR_NOT_FOUND,
                                    "GET_FUNCTION '%s': no module with handle %llu", name,
                                    (unsigned long long)q->module);
        }
        reg = m->reg;
    }
    uint32_t index = 0;
    tether_server_func f;
    if (reg == NULL) {
        if (dops(s)->kernel_find == NULL || !dops(s)->kernel_find(s->cfg.ctx, m, name, &index) ||
            dops(s)->kernel_at == NULL || !dops(s)->kernel_at(s->cfg.ctx, m, index, &f)) {
            return tether_set_error(TETHER_ERR_NOT_FOUND,
                                    "GET_FUNCTION: kernel '%s' is not in the module's program",
                                    name);
        }
    } else {
        const tether_func_entry *e = NULL;
        if (tether_registry_find(reg, name, &e) != TETHER_OK) {
            return tether_set_error(TETHER_ERR_NOT_FOUND,
                                    "GET_FUNCTION: function '%s' is not in the %s", name,
                                    m ? "module's registry" : "system library");
        }
        index = (uint32_t)(e - reg->entries);
        entry_func(e, &f);
    }
    if (index >= ENTRIES_MAX) {
        return tether_set_error(TETHER_ERR_LIMIT, "GET_FUNCTION '%s': entry %u, at most %u", name,
                                (unsigned)index, (unsigned)ENTRIES_MAX - 1u);
    }
    r->func = (q->module << 16) | (uint64_t)(index + 1u);
    r->abi = (uint32_t)f.abi;
    r->num_args = f.num_args;
    return TETHER_OK;
}

/* ---- memory ---- */

static int on_alloc(tether_server *s, const tether_rpc_alloc_req *q, tether_rpc_alloc_rep *r) {
    const tether_server_device *d = dev_of(s);
    DLDataType dt = {q->dtype_code, q->dtype_bits, q->dtype_lanes};
    if (!tether_dtype_valid(dt)) {
        return tether_set_error(
            TETHER_ERR_INVALID_ARG, "ALLOC: invalid dtype (code %u, bits %u, lanes %u)",
            (unsigned)q->dtype_code, (unsigned)q->dtype_bits, (unsigned)q->dtype_lanes);
    }
    if (q->scope >= 32u || (s->scopes & TETHER_RPC_SCOPE_BIT(q->scope)) == 0) {
        const char *sn = tether_scope_name((tether_scope)q->scope);
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "ALLOC: scope '%s' is not available on this device; HELLO lists "
                                "the supported scopes (texture scopes need an OpenCL layer)",
                                sn ? sn : "unknown");
    }
    bool texture = q->scope == TETHER_SCOPE_TEXTURE || q->scope == TETHER_SCOPE_TEXTURE_WEIGHT;
    if (texture && !tether_dtype_equal(dt, TETHER_FLOAT32) &&
        !tether_dtype_equal(dt, TETHER_DTYPE(kDLFloat, 16))) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "ALLOC: texture scopes hold float32 or float16 (CL_FLOAT or "
                                "CL_HALF_FLOAT images)");
    }
    char pool[TETHER_POOL_NAME_MAX] = "";
    int32_t pi = -1;
    if (q->pool.len != 0) {
        if (tether_rpc_str_copy(q->pool, pool, sizeof pool, "pool") != TETHER_OK ||
            tether_pool_name_check(pool) != TETHER_OK) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "ALLOC: bad pool name");
        }
        char have[TETHER_RPC_MAX_POOLS * (TETHER_POOL_NAME_MAX + 2)] = "";
        size_t n = 0;
        for (uint32_t i = 0; i < d->npools; i++) {
            if (strcmp(d->pool_names[i], pool) == 0) {
                pi = (int32_t)i;
            }
            n += tether_format(have + n, n < sizeof have ? sizeof have - n : 0, "%s%s",
                               i ? ", " : "", d->pool_names[i]);
        }
        if (pi < 0) {
            return tether_set_error(TETHER_ERR_NOT_FOUND,
                                    "ALLOC: no pool '%s' on this device (its pools: %s)", pool,
                                    have);
        }
    }
    size_t nbytes = 0;
    int rc = tether_shape_bytes(q->shape, (int)q->ndim, dt, &nbytes);
    if (rc != TETHER_OK) {
        return dev_error(rc, "ALLOC");
    }
    if (pi >= 0 && d->pool_capacity[pi] != 0 && nbytes > d->pool_capacity[pi] - s->pool_used[pi]) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY,
                                "ALLOC: %llu bytes do not fit pool '%s' (%llu of %llu bytes in "
                                "use)",
                                (unsigned long long)nbytes, pool,
                                (unsigned long long)s->pool_used[pi],
                                (unsigned long long)d->pool_capacity[pi]);
    }
    if (d->max_alloc != 0 && (nbytes > d->max_alloc || s->allocated > d->max_alloc - nbytes)) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY,
                                "ALLOC: %llu bytes would exceed the session limit of %llu bytes "
                                "(%llu in use)",
                                (unsigned long long)nbytes, (unsigned long long)d->max_alloc,
                                (unsigned long long)s->allocated);
    }
    tether_server_array *a = NULL;
    for (uint32_t i = 0; i < d->max_arrays && a == NULL; i++) {
        if (d->arrays[i].handle == 0) {
            a = &d->arrays[i];
        }
    }
    if (a == NULL) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "ALLOC: all %u NDArray slots are in use; FREE some",
                                (unsigned)d->max_arrays);
    }
    a->pool = pi;
    a->nbytes = nbytes;
    a->data = NULL;
    a->obj = NULL;
    memset(&a->nd, 0, sizeof a->nd);
    rc = dops(s)->alloc(s->cfg.ctx, a, q, dt, pool);
    if (rc != TETHER_OK) {
        a->nbytes = 0;
        return dev_error(rc, "ALLOC");
    }
    a->gen = a->gen % 0xFFFFFFFFu + 1u;
    a->handle = (uint64_t)a->gen << 16 | (uint64_t)(a->index + 1u);
    s->allocated += nbytes;
    if (pi >= 0) {
        s->pool_used[pi] += nbytes;
    }
    r->array = a->handle;
    r->nbytes = nbytes;
    return TETHER_OK;
}

static int range(const char *what, const tether_server_array *a, uint64_t offset, uint64_t len) {
    if (offset > a->nbytes || len > a->nbytes - offset) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "%s: bytes [%llu, %llu) are outside the array's %llu bytes", what,
                                (unsigned long long)offset, (unsigned long long)(offset + len),
                                (unsigned long long)a->nbytes);
    }
    return TETHER_OK;
}

static int on_copy_to(tether_server *s, const tether_rpc_copy_to_req *q,
                      tether_rpc_copy_to_rep *r) {
    tether_server_array *a = tether_server_find_array(s, q->array);
    if (a == NULL) {
        return no_array("COPY_TO", q->array);
    }
    int rc = range("COPY_TO", a, q->offset, q->data.len);
    if (rc == TETHER_OK && dops(s)->host_view) {
        rc = dops(s)->host_view(s->cfg.ctx, a);
        if (rc != TETHER_OK) {
            return dev_error(rc, "COPY_TO");
        }
    }
    if (rc != TETHER_OK) {
        return rc;
    }
    /* placed: the transport read the data straight into the array already */
    uint8_t *dst = a->data + q->offset;
    bool placed = s->placed_src != NULL && q->data.ptr == s->placed_src && dst == s->placed_dst;
    if (q->data.len != 0 && !placed) {
        memcpy(dst, q->data.ptr, q->data.len);
    }
    if (dops(s)->written) {
        rc = dops(s)->written(s->cfg.ctx, a, q->offset, q->data.len);
        if (rc != TETHER_OK) {
            return dev_error(rc, "COPY_TO");
        }
    }
    r->written = q->data.len;
    return TETHER_OK;
}

static int on_copy_from(tether_server *s, const tether_rpc_copy_from_req *q,
                        tether_rpc_copy_from_rep *r) {
    tether_server_array *a = tether_server_find_array(s, q->array);
    if (a == NULL) {
        return no_array("COPY_FROM", q->array);
    }
    uint32_t frame = (uint32_t)s->cfg.tx_cap;
    if (s->peer_max_frame < frame) {
        frame = s->peer_max_frame;
    }
    uint32_t maxc = tether_rpc_chunk_max(frame);
    if (q->length > maxc) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "COPY_FROM: %llu bytes is over the chunk limit of %u bytes (max "
                                "frame %u)",
                                (unsigned long long)q->length, (unsigned)maxc, (unsigned)frame);
    }
    int rc = range("COPY_FROM", a, q->offset, q->length);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (dops(s)->host_view && (rc = dops(s)->host_view(s->cfg.ctx, a)) != TETHER_OK) {
        return dev_error(rc, "COPY_FROM");
    }
    if (dops(s)->read && (rc = dops(s)->read(s->cfg.ctx, a, q->offset, q->length)) != TETHER_OK) {
        return dev_error(rc, "COPY_FROM");
    }
    r->data.ptr = a->data + q->offset;
    r->data.len = (uint32_t)q->length;
    return TETHER_OK;
}

static int on_free(tether_server *s, uint64_t h) {
    tether_server_array *a = tether_server_find_array(s, h);
    if (a == NULL) {
        return no_array("FREE", h);
    }
    free_array(s, a);
    return TETHER_OK;
}

bool tether_server_place_copy_to(void *server, const uint8_t *head, size_t head_len,
                                 size_t frame_len, uint8_t **dst, size_t *data_off) {
    tether_server *s = server;
    if (s->cfg.dev == NULL || !s->hello_done || !s->authed) {
        return false;
    }
    tether_mp_reader rd;
    tether_mp_reader_init(&rd, head, head_len);
    uint32_t n;
    uint64_t type, id, handle, offset;
    if (tether_mp_read_array(&rd, &n) != TETHER_OK || n != 5 ||
        tether_mp_read_uint(&rd, &type) != TETHER_OK || type != TETHER_RPC_COPY_TO ||
        tether_mp_read_uint(&rd, &id) != TETHER_OK ||
        tether_mp_read_uint(&rd, &handle) != TETHER_OK ||
        tether_mp_read_uint(&rd, &offset) != TETHER_OK || rd.pos >= head_len) {
        return false;
    }
    size_t p = rd.pos, hn;
    uint64_t len;
    if (head[p] == 0xc4 && p + 2 <= head_len) {
        len = head[p + 1];
        hn = 2;
    } else if (head[p] == 0xc5 && p + 3 <= head_len) {
        len = (uint64_t)head[p + 1] << 8 | head[p + 2];
        hn = 3;
    } else if (head[p] == 0xc6 && p + 5 <= head_len) {
        len = (uint64_t)head[p + 1] << 24 | (uint64_t)head[p + 2] << 16 |
              (uint64_t)head[p + 3] << 8 | head[p + 4];
        hn = 5;
    } else {
        return false;
    }
    if (p + hn + len != frame_len) {
        return false;
    }
    tether_server_array *a = tether_server_find_array(s, handle);
    if (a == NULL || offset > a->nbytes || len > a->nbytes - offset) {
        return false;
    }
    if (dops(s)->placeable && !dops(s)->placeable(s->cfg.ctx, a)) {
        return false;
    }
    *dst = a->data + offset;
    *data_off = p + hn;
    return true;
}

/* ---- dispatch ---- */

int tether__server_no_sequences(uint32_t type) {
    return tether_set_error(TETHER_ERR_UNSUPPORTED,
                            "%s: kernel sequences are not supported by this device (no OpenCL "
                            "layer; HELLO: opencl no)",
                            tether_rpc_type_name(type));
}

int tether__server_request(tether_server *s, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    switch (req->type) {
    case TETHER_RPC_UPLOAD:
        return on_upload(s, &req->u.upload_req, &rep->u.upload_rep);
    case TETHER_RPC_UPLOAD_CHUNK:
        return on_upload_chunk(s, &req->u.upload_chunk_req, &rep->u.upload_chunk_rep);
    case TETHER_RPC_LOAD_MODULE:
        return on_load_module(s, &req->u.load_module_req, &rep->u.load_module_rep);
    case TETHER_RPC_UNLOAD:
        return on_unload(s, req->u.unload_req.module);
    case TETHER_RPC_GET_FUNCTION:
        return on_get_function(s, &req->u.get_function_req, &rep->u.get_function_rep);
    case TETHER_RPC_ALLOC:
        return on_alloc(s, &req->u.alloc_req, &rep->u.alloc_rep);
    case TETHER_RPC_FREE:
        return on_free(s, req->u.free_req.handle);
    case TETHER_RPC_COPY_TO:
        return on_copy_to(s, &req->u.copy_to_req, &rep->u.copy_to_rep);
    case TETHER_RPC_COPY_FROM:
        return on_copy_from(s, &req->u.copy_from_req, &rep->u.copy_from_rep);
    case TETHER_RPC_LAUNCH_SEQ:
    case TETHER_RPC_TIME_SEQ:
        if (dev_of(s)->sequences && s->cfg.ops->request) {
            return s->cfg.ops->request(s->cfg.ctx, req, rep);
        }
        return tether__server_no_sequences(req->type);
    case TETHER_RPC_RESET:
        tether_server_drop_all(s);
        return dops(s)->reset ? dops(s)->reset(s->cfg.ctx) : TETHER_OK;
    case TETHER_RPC_SHUTDOWN:
        return TETHER_OK; /* the core reports CLOSE once the reply is sent */
    default:
        return tether_set_error(TETHER_ERR_UNSUPPORTED, "%s is not supported by this device",
                                tether_rpc_type_name(req->type));
    }
}
