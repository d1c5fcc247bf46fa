/*
 * tether rpc: message type names, borrowed-string helpers and the limit checks every encoder
 * and decoder applies (tether_rpc_msg_check).
 *
 * Must stay true: tether_rpc_msg_check enforces exactly the limits listed in docs/rpc.md, and
 * names the message type and field in its error message.
 */
#include "tether/rpc/proto.h"

#include <string.h>

#include "tether/crt/error.h"
#include "tether/crt/scope.h"
#include "tether/rpc/codec.h"

static const char *const request_names[] = {
    NULL,           "HELLO",    "AUTH", "UPLOAD",     "UPLOAD_CHUNK", "LOAD_MODULE", "UNLOAD",
    "GET_FUNCTION", "ALLOC",    "FREE", "COPY_TO",    "COPY_FROM",    "CALL",        "TIME",
    "RESET",        "SHUTDOWN", "LOG",  "LAUNCH_SEQ", "TIME_SEQ",
};
static const char *const reply_names[] = {
    NULL,
    "HELLO reply",
    "AUTH reply",
    "UPLOAD reply",
    "UPLOAD_CHUNK reply",
    "LOAD_MODULE reply",
    "UNLOAD reply",
    "GET_FUNCTION reply",
    "ALLOC reply",
    "FREE reply",
    "COPY_TO reply",
    "COPY_FROM reply",
    "CALL reply",
    "TIME reply",
    "RESET reply",
    "SHUTDOWN reply",
    NULL,
    "LAUNCH_SEQ reply",
    "TIME_SEQ reply",
};

bool tether_rpc_type_valid(uint32_t type) {
    return tether_rpc_type_name(type) != NULL;
}

const char *tether_rpc_type_name(uint32_t type) {
    if (type == TETHER_RPC_ERROR) {
        return "ERROR";
    }
    if (type >= 1 && type <= TETHER_RPC_REQUEST_TYPE_MAX) {
        return request_names[type];
    }
    if ((type & TETHER_RPC_REPLY) && (type & ~TETHER_RPC_REPLY) >= 1 &&
        (type & ~TETHER_RPC_REPLY) <= TETHER_RPC_REQUEST_TYPE_MAX) {
        return reply_names[type & ~TETHER_RPC_REPLY];
    }
    return NULL;
}

tether_rpc_str tether_rpc_str_c(const char *s) {
    tether_rpc_str r = {s ? s : "", s ? (uint32_t)strlen(s) : 0};
    return r;
}

bool tether_rpc_str_eq(tether_rpc_str s, const char *c) {
    size_t n = c ? strlen(c) : 0;
    return n == s.len && (n == 0 || memcmp(s.ptr, c, n) == 0);
}

int tether_rpc_str_copy(tether_rpc_str s, char *buf, size_t size, const char *what) {
    if (!buf || size == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: no buffer", what ? what : "string");
    }
    buf[0] = '\0';
    if (s.len && !s.ptr) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: null string", what ? what : "string");
    }
    if (s.len >= size) {
        return tether_set_error(TETHER_ERR_LIMIT, "%s: %u bytes, at most %zu fit",
                                what ? what : "string", (unsigned)s.len, size - 1);
    }
    if (s.len && memchr(s.ptr, 0, s.len)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s contains a NUL byte",
                                what ? what : "string");
    }
    if (s.len) {
        memcpy(buf, s.ptr, s.len);
    }
    buf[s.len] = '\0';
    return TETHER_OK;
}

uint32_t tether_rpc_chunk_max(uint32_t max_frame) {
    if (max_frame < TETHER_RPC_MIN_FRAME) {
        return 0;
    }
    if (max_frame > TETHER_RPC_MAX_FRAME_LIMIT) {
        max_frame = TETHER_RPC_MAX_FRAME_LIMIT;
    }
    return max_frame - TETHER_RPC_CHUNK_OVERHEAD;
}

void tether_rpc_make_error(tether_rpc_msg *m, uint32_t id, int code, const char *message) {
    memset(m, 0, sizeof *m);
    m->type = TETHER_RPC_ERROR;
    m->id = id;
    m->u.error.code = code < 0 ? code : TETHER_ERR_INTERNAL;
    m->u.error.message = tether_rpc_str_c(message);
    if (m->u.error.message.len >= TETHER_RPC_MAX_TEXT) {
        m->u.error.message.len = TETHER_RPC_MAX_TEXT - 1;
    }
}

/* ---- limit checks ---- */

typedef struct chk {
    const char *type;
    int rc;
} chk;

static void bad(chk *c, int rc, const char *field, const char *why) {
    if (!c->rc) {
        c->rc = tether_set_error(rc, "%s: field '%s': %s", c->type, field, why);
    }
}

static void str_ok(chk *c, tether_rpc_str s, const char *field, uint32_t max) {
    if (s.len && !s.ptr) {
        bad(c, TETHER_ERR_INVALID_ARG, field, "null string");
    } else if (s.len >= max) {
        bad(c, TETHER_ERR_LIMIT, field, "string too long");
    } else if (s.len && memchr(s.ptr, 0, s.len)) {
        bad(c, TETHER_ERR_PROTOCOL, field, "string contains a NUL byte");
    }
}

static void bytes_ok(chk *c, tether_rpc_bytes b, const char *field) {
    if (b.len && !b.ptr) {
        bad(c, TETHER_ERR_INVALID_ARG, field, "null data");
    } else if (b.len > TETHER_RPC_MAX_FRAME_LIMIT) {
        bad(c, TETHER_ERR_LIMIT, field, "data larger than the largest frame");
    }
}

static void frame_ok(chk *c, uint32_t max_frame) {
    if (max_frame < TETHER_RPC_MIN_FRAME || max_frame > TETHER_RPC_MAX_FRAME_LIMIT) {
        bad(c, TETHER_ERR_LIMIT, "max_frame", "outside [128, 16 MiB]");
    }
}

/* The fields CALL, TIME and every sequence step share. */
static void launch_ok(chk *c, uint32_t abi, uint32_t num_args, const tether_rpc_arg *args,
                      uint32_t work_dim, const uint64_t *global, const uint64_t *local) {
    if (abi > TETHER_ABI_UNPACKED) {
        bad(c, TETHER_ERR_PROTOCOL, "abi", "not 0 (packed) or 1 (unpacked)");
    }
    if (num_args > TETHER_RPC_MAX_ARGS) {
        bad(c, TETHER_ERR_LIMIT, "args", "more than 64 arguments");
    }
    if (num_args && !args) {
        bad(c, TETHER_ERR_INVALID_ARG, "args", "null arguments");
        return;
    }
    for (uint32_t i = 0; i < num_args && i < TETHER_RPC_MAX_ARGS; i++) {
        switch (args[i].type_code) {
        case TETHER_TYPE_INT:
        case TETHER_TYPE_UINT:
        case TETHER_TYPE_FLOAT:
        case TETHER_TYPE_HANDLE:
        case TETHER_TYPE_NULL:
        case TETHER_TYPE_DLTENSOR:
            break;
        case TETHER_TYPE_STR:
            str_ok(c, args[i].v.v_str, "args", TETHER_RPC_MAX_TEXT);
            break;
        default:
            bad(c, TETHER_ERR_PROTOCOL, "args", "unsupported type code");
        }
    }
    if (work_dim > TETHER_RPC_MAX_WORK_DIM) {
        bad(c, TETHER_ERR_LIMIT, "global", "more than 3 work dimensions");
        return;
    }
    bool any_local = false, all_local = true;
    for (uint32_t i = 0; i < work_dim; i++) {
        if (global[i] == 0) {
            bad(c, TETHER_ERR_PROTOCOL, "global", "global work size 0");
        }
        any_local |= local[i] != 0;
        all_local &= local[i] != 0;
    }
    if (any_local && !all_local) {
        bad(c, TETHER_ERR_PROTOCOL, "local", "local work sizes must be all set or all 0");
    }
}

static void invoke_ok(chk *c, const tether_rpc_invoke *v) {
    launch_ok(c, v->abi, v->num_args, v->args, v->work_dim, v->global, v->local);
}

static void seq_ok(chk *c, const tether_rpc_seq_req *q) {
    if (q->num_steps == 0) {
        bad(c, TETHER_ERR_PROTOCOL, "steps", "no steps (at least 1)");
    }
    if (q->num_steps > TETHER_RPC_MAX_SEQ_STEPS) {
        bad(c, TETHER_ERR_LIMIT, "steps", "more than 128 steps");
        return;
    }
    if (q->num_steps && !q->steps) {
        bad(c, TETHER_ERR_INVALID_ARG, "steps", "null steps");
        return;
    }
    uint32_t total = 0;
    for (uint32_t i = 0; i < q->num_steps && !c->rc; i++) {
        const tether_rpc_seq_step *st = &q->steps[i];
        launch_ok(c, st->abi, st->num_args, st->args, st->work_dim, st->global, st->local);
        if (st->work_dim == 0) {
            bad(c, TETHER_ERR_PROTOCOL, "global", "a step needs 1 to 3 work dimensions");
        }
        total += st->num_args <= TETHER_RPC_MAX_ARGS ? st->num_args : 0;
        if (c->rc) {
            /* name the step: re-raise with its index */
            char inner[TETHER_ERROR_MSG_MAX];
            tether_format(inner, sizeof inner, "%s", tether_last_error());
            c->rc = tether_set_error(c->rc, "%s (step %u)", inner, (unsigned)i);
        }
    }
    if (total > TETHER_RPC_MAX_SEQ_ARGS) {
        bad(c, TETHER_ERR_LIMIT, "steps", "more than 1024 arguments in all steps together");
    }
    if (q->flags & ~TETHER_RPC_SEQ_FLAGS) {
        bad(c, TETHER_ERR_PROTOCOL, "flags", "unknown bits (only 1 = no profiling is defined)");
    }
}

int tether_rpc_msg_check(const tether_rpc_msg *m) {
    if (!m) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "rpc message: null");
    }
    const char *tn = tether_rpc_type_name(m->type);
    if (!tn) {
        return tether_set_error(TETHER_ERR_PROTOCOL, "rpc message: unknown type %u",
                                (unsigned)m->type);
    }
    chk c_ = {tn, 0}, *c = &c_;
    bool reply = (m->type & TETHER_RPC_REPLY) != 0;
    if (m->type == TETHER_RPC_LOG) {
        if (m->id != 0) {
            bad(c, TETHER_ERR_PROTOCOL, "id", "LOG carries id 0");
        }
    } else if (m->id == 0 && m->type != TETHER_RPC_ERROR) {
        bad(c, TETHER_ERR_PROTOCOL, "id", reply ? "reply to id 0" : "request id 0");
    }
    switch (m->type) {
    case TETHER_RPC_HELLO:
        frame_ok(c, m->u.hello_req.max_frame);
        str_ok(c, m->u.hello_req.client, "client", TETHER_RPC_MAX_NAME);
        break;
    case TETHER_RPC_HELLO | TETHER_RPC_REPLY: {
        const tether_rpc_hello_rep *h = &m->u.hello_rep;
        str_ok(c, h->triple, "triple", TETHER_RPC_MAX_NAME);
        str_ok(c, h->arch, "arch", TETHER_RPC_MAX_NAME);
        str_ok(c, h->cpu, "cpu", TETHER_RPC_MAX_NAME);
        str_ok(c, h->cpu_features, "cpu_features", TETHER_RPC_MAX_FEATURES);
        frame_ok(c, h->max_frame);
        if (h->window == 0) {
            bad(c, TETHER_ERR_PROTOCOL, "window", "window 0 (at least 1)");
        }
        if (h->num_pools > TETHER_RPC_MAX_POOLS) {
            bad(c, TETHER_ERR_LIMIT, "pools", "more than 8 pools");
        }
        for (uint32_t i = 0; i < h->num_pools && i < TETHER_RPC_MAX_POOLS; i++) {
            str_ok(c, h->pools[i], "pools", TETHER_POOL_NAME_MAX);
        }
        bytes_ok(c, h->nonce, "nonce");
        if (h->auth_required ? h->nonce.len != TETHER_RPC_NONCE_BYTES : h->nonce.len != 0) {
            bad(c, TETHER_ERR_PROTOCOL, "nonce", "32 bytes when auth is required, empty otherwise");
        }
        str_ok(c, h->board, "board", TETHER_RPC_MAX_NAME);
        break;
    }
    case TETHER_RPC_AUTH:
        bytes_ok(c, m->u.auth_req.mac, "mac");
        if (m->u.auth_req.mac.len != TETHER_RPC_MAC_BYTES) {
            bad(c, TETHER_ERR_PROTOCOL, "mac", "not 32 bytes");
        }
        break;
    case TETHER_RPC_UPLOAD:
        if (m->u.upload_req.kind >= TETHER_RPC_MODULE_KIND_COUNT) {
            bad(c, TETHER_ERR_PROTOCOL, "kind", "unknown module kind");
        }
        str_ok(c, m->u.upload_req.name, "name", TETHER_RPC_MAX_NAME);
        if (m->u.upload_req.name.len == 0) {
            bad(c, TETHER_ERR_PROTOCOL, "name", "empty");
        }
        if (m->u.upload_req.total_size == 0 || m->u.upload_req.total_size > TETHER_RPC_MAX_UPLOAD) {
            bad(c, TETHER_ERR_LIMIT, "total_size", "outside [1, 256 MiB]");
        }
        bytes_ok(c, m->u.upload_req.sha256, "sha256");
        if (m->u.upload_req.sha256.len != TETHER_RPC_HASH_BYTES) {
            bad(c, TETHER_ERR_PROTOCOL, "sha256", "not 32 bytes");
        }
        break;
    case TETHER_RPC_UPLOAD_CHUNK:
        bytes_ok(c, m->u.upload_chunk_req.data, "data");
        break;
    case TETHER_RPC_LOAD_MODULE:
        str_ok(c, m->u.load_module_req.name, "name", TETHER_RPC_MAX_NAME);
        break;
    case TETHER_RPC_GET_FUNCTION:
        str_ok(c, m->u.get_function_req.name, "name", TETHER_RPC_MAX_NAME);
        break;
    case TETHER_RPC_GET_FUNCTION | TETHER_RPC_REPLY:
        if (m->u.get_function_rep.abi > TETHER_ABI_UNPACKED) {
            bad(c, TETHER_ERR_PROTOCOL, "abi", "not 0 (packed) or 1 (unpacked)");
        }
        if (m->u.get_function_rep.num_args < -1 ||
            m->u.get_function_rep.num_args > TETHER_RPC_MAX_ARGS) {
            bad(c, TETHER_ERR_LIMIT, "num_args", "outside [-1, 64]");
        }
        break;
    case TETHER_RPC_ALLOC: {
        const tether_rpc_alloc_req *a = &m->u.alloc_req;
        if (a->ndim > TETHER_RPC_MAX_NDIM) {
            bad(c, TETHER_ERR_LIMIT, "shape", "more than 8 dimensions");
        }
        for (uint32_t i = 0; i < a->ndim && i < TETHER_RPC_MAX_NDIM; i++) {
            if (a->shape[i] < 0) {
                bad(c, TETHER_ERR_PROTOCOL, "shape", "negative extent");
            }
        }
        if (a->dtype_lanes == 0) {
            bad(c, TETHER_ERR_PROTOCOL, "dtype", "0 lanes");
        }
        if (a->scope >= TETHER_SCOPE_COUNT) {
            bad(c, TETHER_ERR_PROTOCOL, "scope", "unknown scope");
        }
        str_ok(c, a->pool, "pool", TETHER_POOL_NAME_MAX);
        break;
    }
    case TETHER_RPC_COPY_TO:
        bytes_ok(c, m->u.copy_to_req.data, "data");
        break;
    case TETHER_RPC_COPY_FROM:
        if (m->u.copy_from_req.length > TETHER_RPC_MAX_FRAME_LIMIT) {
            bad(c, TETHER_ERR_LIMIT, "length", "larger than the largest frame");
        }
        break;
    case TETHER_RPC_COPY_FROM | TETHER_RPC_REPLY:
        bytes_ok(c, m->u.copy_from_rep.data, "data");
        break;
    case TETHER_RPC_CALL:
        invoke_ok(c, &m->u.call_req);
        break;
    case TETHER_RPC_CALL | TETHER_RPC_REPLY:
        switch (m->u.call_rep.ret_value.type_code) {
        case TETHER_TYPE_INT:
        case TETHER_TYPE_UINT:
        case TETHER_TYPE_FLOAT:
        case TETHER_TYPE_HANDLE:
        case TETHER_TYPE_NULL:
            break;
        default:
            bad(c, TETHER_ERR_PROTOCOL, "ret_value", "not int, uint, float, handle or null");
        }
        break;
    case TETHER_RPC_TIME:
        invoke_ok(c, &m->u.time_req.invoke);
        if (m->u.time_req.number == 0) {
            bad(c, TETHER_ERR_PROTOCOL, "number", "0 (at least 1)");
        }
        if (m->u.time_req.repeat == 0 || m->u.time_req.repeat > TETHER_RPC_MAX_REPEAT) {
            bad(c, TETHER_ERR_LIMIT, "repeat", "outside [1, 32]");
        }
        break;
    case TETHER_RPC_TIME | TETHER_RPC_REPLY:
        if (m->u.time_rep.repeat > TETHER_RPC_MAX_REPEAT) {
            bad(c, TETHER_ERR_LIMIT, "seconds", "more than 32 repeats");
        }
        break;
    case TETHER_RPC_LAUNCH_SEQ:
        seq_ok(c, &m->u.seq_req);
        break;
    case TETHER_RPC_TIME_SEQ:
        seq_ok(c, &m->u.seq_req);
        if (m->u.seq_req.number == 0) {
            bad(c, TETHER_ERR_PROTOCOL, "number", "0 (at least 1)");
        }
        if (m->u.seq_req.repeat == 0 || m->u.seq_req.repeat > TETHER_RPC_MAX_REPEAT) {
            bad(c, TETHER_ERR_LIMIT, "repeat", "outside [1, 32]");
        }
        break;
    case TETHER_RPC_LAUNCH_SEQ | TETHER_RPC_REPLY:
        if (m->u.launch_seq_rep.num_steps > TETHER_RPC_MAX_SEQ_STEPS) {
            bad(c, TETHER_ERR_LIMIT, "step_ns", "more than 128 steps");
        }
        break;
    case TETHER_RPC_TIME_SEQ | TETHER_RPC_REPLY:
        if (m->u.time_seq_rep.repeat > TETHER_RPC_MAX_REPEAT) {
            bad(c, TETHER_ERR_LIMIT, "seconds", "more than 32 repeats");
        }
        if (m->u.time_seq_rep.num_steps > TETHER_RPC_MAX_SEQ_STEPS) {
            bad(c, TETHER_ERR_LIMIT, "step_seconds", "more than 128 steps");
        }
        break;
    case TETHER_RPC_LOG:
        if (m->u.log.level > 3) {
            bad(c, TETHER_ERR_PROTOCOL, "level", "not 0..3");
        }
        str_ok(c, m->u.log.text, "text", TETHER_RPC_MAX_TEXT);
        break;
    case TETHER_RPC_ERROR:
        if (m->u.error.code >= 0) {
            bad(c, TETHER_ERR_PROTOCOL, "code", "not a negative status");
        }
        str_ok(c, m->u.error.message, "message", TETHER_RPC_MAX_TEXT);
        break;
    default:
        break;
    }
    return c->rc;
}
