/*
 * The rpc server core shared by tetherd and the MCU firmware (tether/rpc/server.h, docs/rpc.md
 * "Server core"): session gating, request decoding, CALL/TIME validation, reply cache and the
 * single reply site. The requests behind the gates are server_requests.c's (with a device
 * interface) or the server's ops->request (without one).
 *
 * What must stay true:
 *  - freestanding (stdint/stddef/stdbool/string.h and the crt core only; tests/rpc/cross_check.sh);
 *  - every frame whose header can be read gets exactly one reply, sent from handle_frame only:
 *    handlers return a status and fill the reply, the core sends it or one ERROR; a frame of an
 *    unknown type whose id can be read gets one ERROR with that id; on a stream transport
 *    (close_on_garbage) an unreadable frame gets ERROR id 0 and ends the session;
 *  - both servers give the same code and message for what the core checks (gating, malformed
 *    requests, function handle, ABI, work dims, argument count and types, TIME parameters), and
 *    a kernel sequence a device cannot decode is refused as on one that decodes it;
 *  - nothing here allocates or keeps pointers into a frame past handle_frame.
 */
#include "tether/rpc/server.h"

#include <string.h>

#include "tether/crt/error.h"
#include "tether/crt/platform.h"
#include "tether/rpc/codec.h"

void tether_server_init(tether_server *s, const tether_server_config *cfg) {
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    const tether_server_device *d = cfg->dev;
    if (d != NULL) { /* empty tables; every slot knows its place */
        memset(d->arrays, 0, sizeof *d->arrays * d->max_arrays);
        memset(d->modules, 0, sizeof *d->modules * d->max_modules);
        memset(d->uploads, 0, sizeof *d->uploads * d->max_uploads);
        for (uint32_t i = 0; i < d->max_arrays; i++) {
            d->arrays[i].index = i;
        }
        for (uint32_t i = 0; i < d->max_modules; i++) {
            d->modules[i].index = i;
        }
        for (uint32_t i = 0; i < d->max_uploads; i++) {
            d->uploads[i].index = i;
        }
    }
}

static bool is_request(uint32_t type) {
    return type >= TETHER_RPC_HELLO && type <= TETHER_RPC_REQUEST_TYPE_MAX &&
           type != TETHER_RPC_LOG;
}

static const char *type_name(uint32_t type) {
    const char *n = tether_rpc_type_name(type);
    return n ? n : "?";
}

static const char *abi_name(uint32_t abi) {
    const char *n = tether_abi_name((tether_abi)abi);
    return n ? n : "unknown";
}

int tether_server_send(tether_server *s, const tether_rpc_msg *m, uint8_t *buf, size_t cap) {
    size_t len = 0;
    int rc = tether_rpc_tiny_encode(m, buf, cap, &len);
    if (rc != TETHER_OK) {
        return rc;
    }
    return s->cfg.ops->send(s->cfg.ctx, buf, len);
}

#define SPLIT_MIN 4096 /* bulk data of a reply this large goes out from where it is */

/* Encodes and sends the reply; returns its encoded length (0 when nothing was sent, or when
 * the reply went out in two pieces: only a whole encoding in tx may be cached). */
static size_t send_reply(tether_server *s) {
    tether_rpc_msg *m = s->cfg.rep;
    size_t len = 0;
    if (s->cfg.ops->send2 && m->type == (TETHER_RPC_COPY_FROM | TETHER_RPC_REPLY) &&
        m->u.copy_from_rep.data.len >= SPLIT_MIN) {
        const uint8_t *tail;
        size_t tail_len;
        if (tether_rpc_encode_split(m, s->cfg.tx, s->cfg.tx_cap, &len, &tail, &tail_len) ==
                TETHER_OK &&
            s->cfg.ops->send2(s->cfg.ctx, s->cfg.tx, len, tail, tail_len) == TETHER_OK) {
            return 0;
        }
        /* else the reply is encoded whole below (an ERROR if it cannot be) */
    }
    int rc = tether_rpc_tiny_encode(m, s->cfg.tx, s->cfg.tx_cap, &len);
    if (rc != TETHER_OK && m->type != TETHER_RPC_ERROR) {
        tether_rpc_make_error(m, m->id, rc, tether_last_error());
        rc = tether_rpc_tiny_encode(m, s->cfg.tx, s->cfg.tx_cap, &len);
    }
    if (rc != TETHER_OK) {
        return 0;
    }
    if (m->type == TETHER_RPC_ERROR && s->cfg.ops->note) {
        s->cfg.ops->note(s->cfg.ctx, TETHER_LOG_DEBUG, m->u.error.message.ptr);
    }
    if (s->cfg.ops->send(s->cfg.ctx, s->cfg.tx, len) != TETHER_OK) {
        return 0;
    }
    return len;
}

int tether_server_check_invoke(tether_server *s, uint32_t type, const tether_rpc_invoke *inv,
                               const tether_rpc_time_req *time, tether_server_call *call) {
    const char *what = type_name(type);
    memset(call, 0, sizeof *call);
    call->type = type;
    call->inv = inv;
    call->time = time;
    call->values = s->cfg.values;
    call->codes = s->cfg.codes;
    bool found = s->cfg.dev ? tether__server_find_func(s, inv->func, &call->fn)
                            : s->cfg.ops->find_func(s->cfg.ctx, inv->func, &call->fn);
    if (!found) {
        return tether_set_error(TETHER_ERR_NOT_FOUND,
                                "%s: no function with handle %llu (not from GET_FUNCTION in this "
                                "session, or its module was unloaded)",
                                what, (unsigned long long)inv->func);
    }
    const tether_server_func *f = &call->fn;
    if (inv->abi != (uint32_t)f->abi) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "%s '%s': the caller expects the %s ABI but the function is %s",
                                what, f->name, abi_name(inv->abi), abi_name((uint32_t)f->abi));
    }
    if (f->kernel && (inv->work_dim < 1 || inv->work_dim > TETHER_RPC_MAX_WORK_DIM)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%s '%s': an OpenCL kernel needs a global work size of 1 to 3 "
                                "dimensions",
                                what, f->name);
    }
    if (!f->kernel && inv->work_dim != 0) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "%s '%s': an NDRange launch needs an OpenCL kernel; this is a CPU "
                                "function",
                                what, f->name);
    }
    if (f->num_args >= 0 && (uint32_t)f->num_args != inv->num_args) {
        return tether_set_error(TETHER_ERR_MISMATCH, "%s '%s': takes %d arguments, %u given", what,
                                f->name, (int)f->num_args, (unsigned)inv->num_args);
    }
    size_t arena = 0;
    for (uint32_t i = 0; i < inv->num_args; i++) {
        const tether_rpc_arg *a = &inv->args[i];
        tether_value *v = &call->values[i];
        int32_t code = a->type_code;
        bool is_array = code == TETHER_TYPE_DLTENSOR || code == TETHER_TYPE_HANDLE;
        call->codes[i] = code;
        v->v_int64 = 0;
        if (f->abi == TETHER_ABI_UNPACKED && !is_array && code != TETHER_TYPE_NULL) {
            return tether_set_error(TETHER_ERR_MISMATCH,
                                    "%s '%s': argument %u has type code %d; unpacked functions "
                                    "take only arrays (and null)",
                                    what, f->name, (unsigned)i, (int)code);
        }
        if (f->kernel && (code == TETHER_TYPE_NULL || code == TETHER_TYPE_STR)) {
            return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                    "%s '%s': argument %u has type code %d; OpenCL kernels take "
                                    "only arrays and numbers",
                                    what, f->name, (unsigned)i, (int)code);
        }
        switch (code) {
        case TETHER_TYPE_DLTENSOR:
        case TETHER_TYPE_HANDLE:
        case TETHER_TYPE_NULL:
            v->v_handle = NULL;
            break;
        case TETHER_TYPE_INT:
            v->v_int64 = a->v.v_int;
            break;
        case TETHER_TYPE_UINT:
            v->v_int64 = (int64_t)a->v.v_uint;
            break;
        case TETHER_TYPE_FLOAT:
            v->v_float64 = a->v.v_float;
            break;
        case TETHER_TYPE_STR: {
            size_t n = a->v.v_str.len;
            if (n + 1u > sizeof s->str_arena - arena) {
                return tether_set_error(TETHER_ERR_LIMIT,
                                        "%s '%s': argument %u: string arguments exceed %u bytes "
                                        "in one call",
                                        what, f->name, (unsigned)i,
                                        (unsigned)TETHER_SERVER_STR_BYTES);
            }
            if (memchr(a->v.v_str.ptr, 0, n) != NULL) {
                return tether_set_error(TETHER_ERR_PROTOCOL,
                                        "%s '%s': argument %u: string contains a NUL byte", what,
                                        f->name, (unsigned)i);
            }
            if (n > 0) {
                memcpy(s->str_arena + arena, a->v.v_str.ptr, n);
            }
            s->str_arena[arena + n] = 0;
            v->v_str = s->str_arena + arena;
            arena += n + 1u;
            break;
        }
        default:
            return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                    "%s '%s': argument %u has unknown type code %d", what, f->name,
                                    (unsigned)i, (int)code);
        }
    }
    if (time != NULL &&
        (time->number < 1 || time->repeat < 1 || time->repeat > TETHER_RPC_MAX_REPEAT)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%s '%s': number must be >= 1 and repeat in 1..%u", what, f->name,
                                (unsigned)TETHER_RPC_MAX_REPEAT);
    }
    return TETHER_OK;
}

/* The gates of a request other than HELLO and AUTH: HELLO first, then AUTH when required. */
static int gates(const tether_server *s, uint32_t type) {
    if (!s->hello_done) {
        return tether_set_error(TETHER_ERR_STATE,
                                "%s before HELLO: a session starts with HELLO (a new connection, "
                                "or the device restarted)",
                                type_name(type));
    }
    if (!s->authed) {
        return tether_set_error(TETHER_ERR_AUTH,
                                "%s refused: this device requires authentication (AUTH) first",
                                type_name(type));
    }
    return TETHER_OK;
}

/* The gates and the dispatch of one decoded request; fills rep or returns an error. */
static int dispatch(tether_server *s, const tether_rpc_msg *req, tether_rpc_msg *rep,
                    tether_server_result *res) {
    const tether_server_ops *ops = s->cfg.ops;
    uint32_t type = req->type;
    if (req->id == 0) {
        return tether_set_error(TETHER_ERR_PROTOCOL, "request id 0 is reserved");
    }
    if (!is_request(type)) {
        return tether_set_error(TETHER_ERR_PROTOCOL, "%s (type %u) is not a request",
                                type_name(type), (unsigned)type);
    }
    if (type == TETHER_RPC_HELLO) {
        const tether_rpc_hello_req *h = &req->u.hello_req;
        if (h->version != TETHER_RPC_VERSION) {
            return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                    "protocol version %u not supported (this device speaks %u)",
                                    (unsigned)h->version, (unsigned)TETHER_RPC_VERSION);
        }
        /* A HELLO starts a new session: the old one is gone even if this one fails. */
        s->hello_done = false;
        s->authed = false;
        if (s->cfg.dev) {
            tether_server_drop_all(s);
            if (s->cfg.dev->ops->reset) {
                int rc = s->cfg.dev->ops->reset(s->cfg.ctx);
                if (rc != TETHER_OK) {
                    return rc;
                }
            }
        }
        int rc = ops->hello(s->cfg.ctx, req, rep);
        if (rc != TETHER_OK) {
            return rc;
        }
        s->scopes = rep->u.hello_rep.scopes;
        s->peer_max_frame = h->max_frame;
        if (s->cfg.cache) {
            tether_rpc_reply_cache_clear(s->cfg.cache);
        }
        s->hello_done = true;
        s->auth_required = rep->u.hello_rep.auth_required;
        s->authed = !s->auth_required;
        return TETHER_OK;
    }
    if (!s->hello_done) {
        return gates(s, type);
    }
    if (type == TETHER_RPC_AUTH) {
        if (!s->auth_required) {
            return TETHER_OK; /* nothing to prove: accepted, changes nothing */
        }
        if (ops->auth == NULL || ops->auth(s->cfg.ctx, req->u.auth_req.mac) != TETHER_OK) {
            s->authed = false;
            *res = TETHER_SERVER_CLOSE;
            return tether_set_error(TETHER_ERR_AUTH, "authentication failed: wrong token");
        }
        s->authed = true;
        return TETHER_OK;
    }
    int rc = gates(s, type);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (type == TETHER_RPC_CALL || type == TETHER_RPC_TIME) {
        tether_server_call call;
        const tether_rpc_time_req *t = type == TETHER_RPC_TIME ? &req->u.time_req : NULL;
        rc = tether_server_check_invoke(s, type, t ? &t->invoke : &req->u.call_req, t, &call);
        if (rc == TETHER_OK && s->cfg.dev) {
            rc = tether__server_call_arrays(s, &call);
        }
        if (rc != TETHER_OK) {
            return rc;
        }
        call.id = req->id;
        return ops->invoke(s->cfg.ctx, &call, rep);
    }
    rc = s->cfg.dev ? tether__server_request(s, req, rep) : ops->request(s->cfg.ctx, req, rep);
    if (rc == TETHER_OK && type == TETHER_RPC_SHUTDOWN) {
        *res = TETHER_SERVER_CLOSE;
    }
    return rc;
}

tether_server_result tether_server_handle_frame(tether_server *s, const uint8_t *frame,
                                                size_t len) {
    const tether_server_ops *ops = s->cfg.ops;
    uint32_t type = 0, id = 0;
    if (tether_rpc_peek_header(frame, len, &type, &id) != TETHER_OK) {
        tether_rpc_msg *rep = s->cfg.rep;
        if (tether_rpc_peek_numbers(frame, len, &type, &id) == TETHER_OK && id != 0) {
            /* a message of a type this protocol does not have: its id is known, answer it */
            tether_set_error(TETHER_ERR_PROTOCOL, "unknown message type %u", (unsigned)type);
            tether_rpc_make_error(rep, id, TETHER_ERR_PROTOCOL, tether_last_error());
            (void)send_reply(s);
            return TETHER_SERVER_CONTINUE;
        }
        if (ops->note) {
            ops->note(s->cfg.ctx, TETHER_LOG_WARN, tether_last_error());
        }
        if (!s->cfg.close_on_garbage) {
            return TETHER_SERVER_CONTINUE;
        }
        /* a stream cannot find the next frame's start in garbage: say so, then close */
        tether_set_error(TETHER_ERR_PROTOCOL,
                         "malformed frame (%s); the device closed the connection",
                         "message header is not [type, id, ...]");
        tether_rpc_make_error(rep, 0, TETHER_ERR_PROTOCOL, tether_last_error());
        (void)send_reply(s);
        return TETHER_SERVER_CLOSE;
    }
    if (s->cfg.cache && id != 0) {
        const uint8_t *cached;
        size_t cached_len;
        if (tether_rpc_reply_cache_lookup(s->cfg.cache, id, &cached, &cached_len)) {
            (void)ops->send(s->cfg.ctx, cached, cached_len);
            return TETHER_SERVER_CONTINUE;
        }
    }
    tether_rpc_msg *req = s->cfg.req, *rep = s->cfg.rep;
    tether_server_result res = TETHER_SERVER_CONTINUE;
    memset(rep, 0, sizeof *rep);
    s->inflight = id;
    tether_clear_error();
    int rc = ops->decode(s->cfg.ctx, frame, len, req);
    if (rc != TETHER_OK) {
        /* A limit exceeded or a message this device does not take keeps its code; anything
         * else is malformed (docs/rpc.md). The decoder's text names the type and field. */
        if (rc != TETHER_ERR_LIMIT && rc != TETHER_ERR_UNSUPPORTED) {
            rc = TETHER_ERR_PROTOCOL;
        }
        /* A kernel sequence a device without sequence storage could not decode: the same gates
         * and the same refusal as on a device that decodes it but runs none. */
        if (rc == TETHER_ERR_UNSUPPORTED && s->cfg.dev && !s->cfg.dev->sequences &&
            (type == TETHER_RPC_LAUNCH_SEQ || type == TETHER_RPC_TIME_SEQ)) {
            rc = gates(s, type);
            if (rc == TETHER_OK) {
                rc = tether__server_no_sequences(type);
            }
        }
    } else {
        if (req->type == TETHER_RPC_CALL) {
            rep->u.call_rep.ret_value.type_code = TETHER_TYPE_NULL;
        }
        rc = dispatch(s, req, rep, &res);
    }
    if (rc == TETHER_OK) {
        rep->type = req->type | TETHER_RPC_REPLY;
        rep->id = id;
    } else {
        tether_rpc_make_error(rep, id, rc, tether_last_error());
        if (res == TETHER_SERVER_CLOSE && rc != TETHER_ERR_AUTH) {
            res = TETHER_SERVER_CONTINUE;
        }
    }
    size_t n = send_reply(s);
    s->inflight = 0;
    if (n > 0 && id != 0 && s->cfg.cache) {
        /* Replies too large for a slot (COPY_FROM data) are idempotent and not cached. */
        (void)tether_rpc_reply_cache_store(s->cfg.cache, id, s->cfg.tx, n);
    }
    return res;
}
