/*
 * tether rpc: the decoder of the message layout (schema.c has the field counts it checks and the
 * encoder; see schema.h and docs/rpc.md).
 *
 * Must stay true: decode lists the same fields in the same order as schema.c's encoder and the
 * table in docs/rpc.md; every decoded message passes tether_rpc_msg_check; a decode error names
 * the message type and the field; nothing here allocates (the MCU firmware compiles this file).
 */
#include "schema.h"

#include <string.h>

#include "tether/crt/error.h"
#include "tether/rpc/codec.h"

typedef struct dec {
    const tether_rpc_dec_ops *ops;
    void *c;
    int rc;
    uint32_t type;
} dec;

static int dfail(dec *d, int rc, const char *field) {
    if (d->rc) {
        return d->rc;
    }
    char inner[TETHER_ERROR_MSG_MAX];
    tether_format(inner, sizeof inner, "%s", tether_last_error());
    const char *tn = tether_rpc_type_name(d->type);
    d->rc = tether_set_error(rc, "%s: field '%s': %s", tn ? tn : "message", field, inner);
    return d->rc;
}

static uint64_t d_uint(dec *d, const char *field, uint64_t max) {
    uint64_t v = 0;
    if (d->rc) {
        return 0;
    }
    int rc = d->ops->uint_(d->c, &v);
    if (rc) {
        dfail(d, rc, field);
        return 0;
    }
    if (v > max) {
        tether_set_error(TETHER_ERR_LIMIT, "value %llu above %llu", (unsigned long long)v,
                         (unsigned long long)max);
        dfail(d, TETHER_ERR_LIMIT, field);
        return 0;
    }
    return v;
}

static int64_t d_int(dec *d, const char *field, int64_t min, int64_t max) {
    int64_t v = 0;
    if (d->rc) {
        return 0;
    }
    int rc = d->ops->int_(d->c, &v);
    if (rc) {
        dfail(d, rc, field);
        return 0;
    }
    if (v < min || v > max) {
        tether_set_error(TETHER_ERR_LIMIT, "value %lld outside [%lld, %lld]", (long long)v,
                         (long long)min, (long long)max);
        dfail(d, TETHER_ERR_LIMIT, field);
        return 0;
    }
    return v;
}

static bool d_bool(dec *d, const char *field) {
    bool v = false;
    if (d->rc) {
        return false;
    }
    int rc = d->ops->bool_(d->c, &v);
    if (rc) {
        dfail(d, rc, field);
    }
    return v;
}

static double d_double(dec *d, const char *field) {
    double v = 0;
    if (d->rc) {
        return 0;
    }
    int rc = d->ops->double_(d->c, &v);
    if (rc) {
        dfail(d, rc, field);
    }
    return v;
}

static tether_rpc_str d_str(dec *d, const char *field) {
    tether_rpc_str s = {"", 0};
    if (d->rc) {
        return s;
    }
    int rc = d->ops->str(d->c, &s.ptr, &s.len);
    if (rc) {
        dfail(d, rc, field);
        s.ptr = "";
        s.len = 0;
    }
    return s;
}

static tether_rpc_bytes d_bin(dec *d, const char *field) {
    tether_rpc_bytes b = {NULL, 0};
    if (d->rc) {
        return b;
    }
    int rc = d->ops->bin(d->c, &b.ptr, &b.len);
    if (rc) {
        dfail(d, rc, field);
        b.ptr = NULL;
        b.len = 0;
    }
    return b;
}

/* Enters an array of at most max elements. */
static uint32_t d_array(dec *d, const char *field, uint32_t max) {
    uint32_t n = 0;
    if (d->rc) {
        return 0;
    }
    int rc = d->ops->array(d->c, &n);
    if (rc) {
        dfail(d, rc, field);
        return 0;
    }
    if (n > max) {
        tether_set_error(TETHER_ERR_LIMIT, "%u elements, at most %u allowed", (unsigned)n,
                         (unsigned)max);
        dfail(d, TETHER_ERR_LIMIT, field);
        return 0;
    }
    return n;
}

static void d_leave(dec *d, const char *field) {
    if (d->rc) {
        return;
    }
    int rc = d->ops->leave(d->c);
    if (rc) {
        dfail(d, rc, field);
    }
}

/* One [type_code, value] pair; `what` names the field in errors ("args", "ret_value"). */
static void dec_arg(dec *d, tether_rpc_arg *a, uint32_t i, const char *what) {
    uint32_t n = d_array(d, what, UINT32_MAX);
    if (!d->rc && n < 2) {
        tether_set_error(TETHER_ERR_PROTOCOL, "argument %u has %u elements, expected 2",
                         (unsigned)i, (unsigned)n);
        dfail(d, TETHER_ERR_PROTOCOL, what);
    }
    a->type_code = (int32_t)d_int(d, "type code", INT32_MIN, INT32_MAX);
    switch (a->type_code) {
    case TETHER_TYPE_INT:
        a->v.v_int = d_int(d, "int value", INT64_MIN, INT64_MAX);
        break;
    case TETHER_TYPE_UINT:
        a->v.v_uint = d_uint(d, "uint value", UINT64_MAX);
        break;
    case TETHER_TYPE_FLOAT:
        a->v.v_float = d_double(d, "float value");
        break;
    case TETHER_TYPE_HANDLE:
    case TETHER_TYPE_DLTENSOR:
        a->v.v_handle = d_uint(d, "handle", UINT64_MAX);
        break;
    case TETHER_TYPE_STR:
        a->v.v_str = d_str(d, "str value");
        break;
    case TETHER_TYPE_NULL:
        if (!d->rc) {
            int rc = d->ops->nil(d->c);
            if (rc) {
                dfail(d, rc, "null value");
            }
        }
        break;
    default:
        if (!d->rc) {
            tether_set_error(TETHER_ERR_PROTOCOL, "argument %u has unsupported type code %d",
                             (unsigned)i, (int)a->type_code);
            dfail(d, TETHER_ERR_PROTOCOL, what);
        }
        break;
    }
    for (uint32_t k = 2; k < n && !d->rc; k++) {
        if (d->ops->skip(d->c)) {
            dfail(d, TETHER_ERR_PROTOCOL, what);
        }
    }
    d_leave(d, what);
}

/* func, abi, args (into `args`, at most max_args), global, local. */
static void dec_launch(dec *d, uint64_t *func, uint32_t *abi, uint32_t *num_args,
                       tether_rpc_arg *args, uint32_t max_args, uint32_t *work_dim,
                       uint64_t *global, uint64_t *local) {
    *func = d_uint(d, "func", UINT64_MAX);
    *abi = (uint32_t)d_uint(d, "abi", UINT32_MAX);
    *num_args = d_array(d, "args", TETHER_RPC_MAX_ARGS);
    if (!d->rc && *num_args > max_args) {
        tether_set_error(TETHER_ERR_LIMIT, "more than %u arguments in all steps together",
                         (unsigned)TETHER_RPC_MAX_SEQ_ARGS);
        dfail(d, TETHER_ERR_LIMIT, "args");
        *num_args = 0;
    }
    for (uint32_t i = 0; i < *num_args && !d->rc; i++) {
        dec_arg(d, &args[i], i, "args");
    }
    d_leave(d, "args");
    *work_dim = d_array(d, "global", TETHER_RPC_MAX_WORK_DIM);
    for (uint32_t i = 0; i < *work_dim; i++) {
        global[i] = d_uint(d, "global", UINT64_MAX);
    }
    d_leave(d, "global");
    uint32_t nl = d_array(d, "local", TETHER_RPC_MAX_WORK_DIM);
    for (uint32_t i = 0; i < nl; i++) {
        local[i] = d_uint(d, "local", UINT64_MAX);
    }
    d_leave(d, "local");
    if (!d->rc && nl != 0 && nl != *work_dim) {
        tether_set_error(TETHER_ERR_PROTOCOL, "%u local sizes for %u global sizes", (unsigned)nl,
                         (unsigned)*work_dim);
        dfail(d, TETHER_ERR_PROTOCOL, "local");
    }
    if (!d->rc && nl != 0) {
        for (uint32_t i = 0; i < nl; i++) {
            if (local[i] == 0) {
                tether_set_error(TETHER_ERR_PROTOCOL, "local size %u is 0", (unsigned)i);
                dfail(d, TETHER_ERR_PROTOCOL, "local");
            }
        }
    }
}

static void dec_invoke(dec *d, tether_rpc_invoke *v) {
    dec_launch(d, &v->func, &v->abi, &v->num_args, v->args, TETHER_RPC_MAX_ARGS, &v->work_dim,
               v->global, v->local);
}

/* The steps of LAUNCH_SEQ / TIME_SEQ, into the caller's storage (no storage: unsupported). */
static void dec_steps(dec *d, tether_rpc_seq_storage *st, tether_rpc_seq_req *q) {
    if (d->rc) {
        return;
    }
    if (!st) {
        tether_set_error(TETHER_ERR_UNSUPPORTED,
                         "kernel sequences are not supported by this peer (no OpenCL)");
        dfail(d, TETHER_ERR_UNSUPPORTED, "steps");
        return;
    }
    q->steps = st->steps;
    q->num_steps = d_array(d, "steps", TETHER_RPC_MAX_SEQ_STEPS);
    uint32_t used = 0;
    for (uint32_t i = 0; i < q->num_steps && !d->rc; i++) {
        tether_rpc_seq_step *s = &st->steps[i];
        memset(s, 0, sizeof *s); /* the storage may hold an earlier message's steps */
        uint32_t n = d_array(d, "steps", UINT32_MAX);
        if (!d->rc && n < 5) {
            tether_set_error(TETHER_ERR_PROTOCOL,
                             "step %u has %u elements, expected [func, abi, args, global, local]",
                             (unsigned)i, (unsigned)n);
            dfail(d, TETHER_ERR_PROTOCOL, "steps");
        }
        s->args = st->args + used;
        dec_launch(d, &s->func, &s->abi, &s->num_args, st->args + used,
                   TETHER_RPC_MAX_SEQ_ARGS - used, &s->work_dim, s->global, s->local);
        used += s->num_args;
        for (uint32_t k = 5; k < n && !d->rc; k++) {
            if (d->ops->skip(d->c)) {
                dfail(d, TETHER_ERR_PROTOCOL, "steps");
            }
        }
        d_leave(d, "steps");
        if (d->rc) {
            char inner[TETHER_ERROR_MSG_MAX];
            tether_format(inner, sizeof inner, "%s", tether_last_error());
            d->rc = tether_set_error(d->rc, "%s (step %u)", inner, (unsigned)i);
        }
    }
    d_leave(d, "steps");
}

int tether__rpc_schema_decode(const tether_rpc_dec_ops *ops, void *c, tether_rpc_msg *m,
                              tether_rpc_seq_storage *storage) {
    dec d_ = {ops, c, 0, 0}, *d = &d_;
    memset(m, 0, sizeof *m);
    uint32_t n = 0;
    int rc = ops->array(c, &n);
    if (rc) {
        char inner[TETHER_ERROR_MSG_MAX];
        tether_format(inner, sizeof inner, "%s", tether_last_error());
        return tether_set_error(TETHER_ERR_PROTOCOL, "message is not a msgpack array: %s", inner);
    }
    if (n < 2) {
        return tether_set_error(TETHER_ERR_PROTOCOL,
                                "message array has %u elements, needs at least type and id",
                                (unsigned)n);
    }
    uint64_t type = 0, id = 0;
    rc = ops->uint_(c, &type);
    if (!rc && (type > UINT32_MAX || !tether_rpc_type_valid((uint32_t)type))) {
        return tether_set_error(TETHER_ERR_PROTOCOL, "unknown message type %llu",
                                (unsigned long long)type);
    }
    if (!rc) {
        rc = ops->uint_(c, &id);
    }
    if (!rc && id > UINT32_MAX) {
        return tether_set_error(TETHER_ERR_PROTOCOL, "message id %llu does not fit 32 bits",
                                (unsigned long long)id);
    }
    if (rc) {
        char inner[TETHER_ERROR_MSG_MAX];
        tether_format(inner, sizeof inner, "%s", tether_last_error());
        return tether_set_error(TETHER_ERR_PROTOCOL, "bad message header: %s", inner);
    }
    m->type = (uint32_t)type;
    m->id = (uint32_t)id;
    d->type = m->type;
    int fields = tether__rpc_body_fields(m->type), required = tether__rpc_required_fields(m->type);
    if (n < (uint32_t)(2 + required)) {
        const char *tn = tether_rpc_type_name(m->type);
        return tether_set_error(TETHER_ERR_PROTOCOL, "%s: %u fields, expected %d", tn,
                                (unsigned)(n - 2), required);
    }
    /* present = body fields actually in the message (optional trailing ones may be missing) */
    uint32_t present = n - 2 < (uint32_t)fields ? n - 2 : (uint32_t)fields;
    switch (m->type) {
    case TETHER_RPC_HELLO:
        m->u.hello_req.version = (uint32_t)d_uint(d, "version", UINT32_MAX);
        m->u.hello_req.max_frame = (uint32_t)d_uint(d, "max_frame", UINT32_MAX);
        m->u.hello_req.client = d_str(d, "client");
        if (present > 3) {
            m->u.hello_req.link = (uint32_t)d_uint(d, "link", UINT32_MAX);
        }
        break;
    case TETHER_RPC_HELLO | TETHER_RPC_REPLY: {
        tether_rpc_hello_rep *h = &m->u.hello_rep;
        h->version = (uint32_t)d_uint(d, "version", UINT32_MAX);
        h->triple = d_str(d, "triple");
        h->arch = d_str(d, "arch");
        h->little_endian = d_bool(d, "little_endian");
        h->pointer_bits = (uint32_t)d_uint(d, "pointer_bits", UINT32_MAX);
        h->max_frame = (uint32_t)d_uint(d, "max_frame", UINT32_MAX);
        h->window = (uint32_t)d_uint(d, "window", UINT32_MAX);
        h->clock_hz = d_uint(d, "clock_hz", UINT64_MAX);
        h->scopes = (uint32_t)d_uint(d, "scopes", UINT32_MAX);
        h->num_pools = d_array(d, "pools", TETHER_RPC_MAX_POOLS);
        for (uint32_t i = 0; i < h->num_pools; i++) {
            h->pools[i] = d_str(d, "pools");
        }
        d_leave(d, "pools");
        h->opencl = d_bool(d, "opencl");
        h->image_max_width = (uint32_t)d_uint(d, "image_max_width", UINT32_MAX);
        h->image_max_height = (uint32_t)d_uint(d, "image_max_height", UINT32_MAX);
        h->load_addr = d_uint(d, "load_addr", UINT64_MAX);
        h->load_size = d_uint(d, "load_size", UINT64_MAX);
        h->auth_required = d_bool(d, "auth_required");
        h->nonce = d_bin(d, "nonce");
        h->board.ptr = "";
        if (present > 17) {
            h->board = d_str(d, "board");
        }
        if (present > 18) {
            h->ram_size = d_uint(d, "ram_size", UINT64_MAX);
        }
        if (present > 19) {
            h->heap_size = d_uint(d, "heap_size", UINT64_MAX);
        }
        if (present > 20) {
            h->stack_size = d_uint(d, "stack_size", UINT64_MAX);
        }
        if (present > 21) {
            h->boot_count = (uint32_t)d_uint(d, "boot_count", UINT32_MAX);
        }
        if (present > 22) {
            h->exports_id = (uint32_t)d_uint(d, "exports_id", UINT32_MAX);
        }
        h->cpu.ptr = "";
        h->cpu_features.ptr = "";
        if (present > 23) {
            h->cpu = d_str(d, "cpu");
        }
        if (present > 24) {
            h->cpu_features = d_str(d, "cpu_features");
        }
        if (present > 25) {
            uint32_t n = d_array(d, "pool_sizes", TETHER_RPC_MAX_POOLS);
            for (uint32_t i = 0; i < n; i++) {
                h->pool_sizes[i] = d_uint(d, "pool_sizes", UINT64_MAX);
            }
            d_leave(d, "pool_sizes");
        }
        if (present > 26) {
            h->link = (uint32_t)d_uint(d, "link", UINT32_MAX);
        }
        if (present > 27) {
            h->cl_max_work_group_size = (uint32_t)d_uint(d, "cl_max_work_group_size", UINT32_MAX);
        }
        if (present > 28) {
            h->cl_wg_multiple = (uint32_t)d_uint(d, "cl_wg_multiple", UINT32_MAX);
        }
        if (present > 29) {
            h->cl_local_mem_size = d_uint(d, "cl_local_mem_size", UINT64_MAX);
        }
        if (present > 30) {
            h->cl_compute_units = (uint32_t)d_uint(d, "cl_compute_units", UINT32_MAX);
        }
        if (present > 31) {
            h->cl_features = (uint32_t)d_uint(d, "cl_features", UINT32_MAX);
        }
        break;
    }
    case TETHER_RPC_AUTH:
        m->u.auth_req.mac = d_bin(d, "mac");
        break;
    case TETHER_RPC_UPLOAD:
        m->u.upload_req.kind = (uint32_t)d_uint(d, "kind", UINT32_MAX);
        m->u.upload_req.name = d_str(d, "name");
        m->u.upload_req.total_size = d_uint(d, "total_size", UINT64_MAX);
        m->u.upload_req.sha256 = d_bin(d, "sha256");
        break;
    case TETHER_RPC_UPLOAD | TETHER_RPC_REPLY:
        m->u.upload_rep.upload_id = (uint32_t)d_uint(d, "upload_id", UINT32_MAX);
        m->u.upload_rep.cached = present > 1 && d_bool(d, "cached");
        break;
    case TETHER_RPC_UPLOAD_CHUNK:
        m->u.upload_chunk_req.upload_id = (uint32_t)d_uint(d, "upload_id", UINT32_MAX);
        m->u.upload_chunk_req.offset = d_uint(d, "offset", UINT64_MAX);
        m->u.upload_chunk_req.data = d_bin(d, "data");
        break;
    case TETHER_RPC_UPLOAD_CHUNK | TETHER_RPC_REPLY:
        m->u.upload_chunk_rep.received = d_uint(d, "received", UINT64_MAX);
        m->u.upload_chunk_rep.complete = d_bool(d, "complete");
        break;
    case TETHER_RPC_LOAD_MODULE:
        m->u.load_module_req.name = d_str(d, "name");
        break;
    case TETHER_RPC_LOAD_MODULE | TETHER_RPC_REPLY:
        m->u.load_module_rep.module = d_uint(d, "module", UINT64_MAX);
        m->u.load_module_rep.num_functions = (uint32_t)d_uint(d, "num_functions", UINT32_MAX);
        break;
    case TETHER_RPC_UNLOAD:
        m->u.unload_req.module = d_uint(d, "module", UINT64_MAX);
        break;
    case TETHER_RPC_GET_FUNCTION:
        m->u.get_function_req.module = d_uint(d, "module", UINT64_MAX);
        m->u.get_function_req.name = d_str(d, "name");
        break;
    case TETHER_RPC_GET_FUNCTION | TETHER_RPC_REPLY:
        m->u.get_function_rep.func = d_uint(d, "func", UINT64_MAX);
        m->u.get_function_rep.abi = (uint32_t)d_uint(d, "abi", UINT32_MAX);
        m->u.get_function_rep.num_args = (int32_t)d_int(d, "num_args", INT32_MIN, INT32_MAX);
        break;
    case TETHER_RPC_ALLOC: {
        tether_rpc_alloc_req *a = &m->u.alloc_req;
        a->ndim = d_array(d, "shape", TETHER_RPC_MAX_NDIM);
        for (uint32_t i = 0; i < a->ndim; i++) {
            a->shape[i] = d_int(d, "shape", INT64_MIN, INT64_MAX);
        }
        d_leave(d, "shape");
        uint32_t k = d_array(d, "dtype", UINT32_MAX);
        if (!d->rc && k < 3) {
            tether_set_error(TETHER_ERR_PROTOCOL, "%u elements, expected [code, bits, lanes]",
                             (unsigned)k);
            dfail(d, TETHER_ERR_PROTOCOL, "dtype");
        }
        a->dtype_code = (uint8_t)d_uint(d, "dtype code", UINT8_MAX);
        a->dtype_bits = (uint8_t)d_uint(d, "dtype bits", UINT8_MAX);
        a->dtype_lanes = (uint16_t)d_uint(d, "dtype lanes", UINT16_MAX);
        for (uint32_t i = 3; i < k && !d->rc; i++) {
            if (ops->skip(c)) {
                dfail(d, TETHER_ERR_PROTOCOL, "dtype");
            }
        }
        d_leave(d, "dtype");
        a->scope = (uint32_t)d_uint(d, "scope", UINT32_MAX);
        a->pool = d_str(d, "pool");
        break;
    }
    case TETHER_RPC_ALLOC | TETHER_RPC_REPLY:
        m->u.alloc_rep.array = d_uint(d, "array", UINT64_MAX);
        m->u.alloc_rep.nbytes = d_uint(d, "nbytes", UINT64_MAX);
        break;
    case TETHER_RPC_FREE:
        m->u.free_req.handle = d_uint(d, "array", UINT64_MAX);
        break;
    case TETHER_RPC_COPY_TO:
        m->u.copy_to_req.array = d_uint(d, "array", UINT64_MAX);
        m->u.copy_to_req.offset = d_uint(d, "offset", UINT64_MAX);
        m->u.copy_to_req.data = d_bin(d, "data");
        break;
    case TETHER_RPC_COPY_TO | TETHER_RPC_REPLY:
        m->u.copy_to_rep.written = d_uint(d, "written", UINT64_MAX);
        break;
    case TETHER_RPC_COPY_FROM:
        m->u.copy_from_req.array = d_uint(d, "array", UINT64_MAX);
        m->u.copy_from_req.offset = d_uint(d, "offset", UINT64_MAX);
        m->u.copy_from_req.length = d_uint(d, "length", UINT64_MAX);
        break;
    case TETHER_RPC_COPY_FROM | TETHER_RPC_REPLY:
        m->u.copy_from_rep.data = d_bin(d, "data");
        break;
    case TETHER_RPC_CALL:
        dec_invoke(d, &m->u.call_req);
        break;
    case TETHER_RPC_CALL | TETHER_RPC_REPLY:
        m->u.call_rep.ret = (int32_t)d_int(d, "ret", INT32_MIN, INT32_MAX);
        m->u.call_rep.elapsed_ns = d_uint(d, "elapsed_ns", UINT64_MAX);
        m->u.call_rep.stack_bytes = d_uint(d, "stack_bytes", UINT64_MAX);
        m->u.call_rep.ret_value.type_code = TETHER_TYPE_NULL;
        if (present > 3) {
            dec_arg(d, &m->u.call_rep.ret_value, 0, "ret_value");
        }
        break;
    case TETHER_RPC_TIME:
        dec_invoke(d, &m->u.time_req.invoke);
        m->u.time_req.number = (uint32_t)d_uint(d, "number", UINT32_MAX);
        m->u.time_req.repeat = (uint32_t)d_uint(d, "repeat", UINT32_MAX);
        m->u.time_req.min_repeat_ms = (uint32_t)d_uint(d, "min_repeat_ms", UINT32_MAX);
        m->u.time_req.cooldown_ms = (uint32_t)d_uint(d, "cooldown_ms", UINT32_MAX);
        break;
    case TETHER_RPC_TIME | TETHER_RPC_REPLY:
        m->u.time_rep.number = (uint32_t)d_uint(d, "number", UINT32_MAX);
        m->u.time_rep.zero_timer = d_bool(d, "zero_timer");
        m->u.time_rep.repeat = d_array(d, "seconds", TETHER_RPC_MAX_REPEAT);
        for (uint32_t i = 0; i < m->u.time_rep.repeat; i++) {
            m->u.time_rep.seconds[i] = d_double(d, "seconds");
        }
        d_leave(d, "seconds");
        break;
    case TETHER_RPC_LAUNCH_SEQ:
        dec_steps(d, storage, &m->u.seq_req);
        m->u.seq_req.flags = present > 1 ? (uint32_t)d_uint(d, "flags", UINT32_MAX) : 0;
        break;
    case TETHER_RPC_TIME_SEQ:
        dec_steps(d, storage, &m->u.seq_req);
        m->u.seq_req.number = (uint32_t)d_uint(d, "number", UINT32_MAX);
        m->u.seq_req.repeat = (uint32_t)d_uint(d, "repeat", UINT32_MAX);
        m->u.seq_req.min_repeat_ms = (uint32_t)d_uint(d, "min_repeat_ms", UINT32_MAX);
        m->u.seq_req.cooldown_ms = (uint32_t)d_uint(d, "cooldown_ms", UINT32_MAX);
        m->u.seq_req.flags = present > 5 ? (uint32_t)d_uint(d, "flags", UINT32_MAX) : 0;
        break;
    case TETHER_RPC_LAUNCH_SEQ | TETHER_RPC_REPLY: {
        tether_rpc_launch_seq_rep *r = &m->u.launch_seq_rep;
        r->elapsed_ns = d_uint(d, "elapsed_ns", UINT64_MAX);
        r->num_steps = d_array(d, "step_ns", TETHER_RPC_MAX_SEQ_STEPS);
        for (uint32_t i = 0; i < r->num_steps; i++) {
            r->step_ns[i] = d_uint(d, "step_ns", UINT64_MAX);
        }
        d_leave(d, "step_ns");
        r->wall_ns = present > 2 ? d_uint(d, "wall_ns", UINT64_MAX) : 0;
        break;
    }
    case TETHER_RPC_TIME_SEQ | TETHER_RPC_REPLY: {
        tether_rpc_time_seq_rep *r = &m->u.time_seq_rep;
        r->number = (uint32_t)d_uint(d, "number", UINT32_MAX);
        r->zero_timer = d_bool(d, "zero_timer");
        r->repeat = d_array(d, "seconds", TETHER_RPC_MAX_REPEAT);
        for (uint32_t i = 0; i < r->repeat; i++) {
            r->seconds[i] = d_double(d, "seconds");
        }
        d_leave(d, "seconds");
        r->num_steps = d_array(d, "step_seconds", TETHER_RPC_MAX_SEQ_STEPS);
        for (uint32_t i = 0; i < r->num_steps; i++) {
            r->step_seconds[i] = d_double(d, "step_seconds");
        }
        d_leave(d, "step_seconds");
        r->wall_seconds = present > 4 ? d_double(d, "wall_seconds") : 0.0;
        break;
    }
    case TETHER_RPC_LOG:
        m->u.log.level = (uint32_t)d_uint(d, "level", UINT32_MAX);
        m->u.log.text = d_str(d, "text");
        break;
    case TETHER_RPC_ERROR:
        m->u.error.code = (int32_t)d_int(d, "code", INT32_MIN, INT32_MAX);
        m->u.error.message = d_str(d, "message");
        break;
    default:
        break;
    }
    for (uint32_t i = 2 + present; i < n && !d->rc; i++) {
        if (ops->skip(c)) {
            dfail(d, TETHER_ERR_PROTOCOL, "trailing field");
        }
    }
    d_leave(d, "message");
    if (d->rc) {
        return d->rc;
    }
    return tether_rpc_msg_check(m);
}
