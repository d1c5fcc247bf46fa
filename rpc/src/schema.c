/*
 * tether rpc: the message layout shared by both codecs (see schema.h and docs/rpc.md): the
 * field counts of each message and the encoder; schema_decode.c holds the decoder.
 *
 * Must stay true: encode and decode list the same fields in the same order as the table in
 * docs/rpc.md; every decoded message passes tether_rpc_msg_check; a decode error names the
 * message type and the field.
 */
#include "schema.h"

#include <string.h>

#include "tether/crt/error.h"
#include "tether/rpc/codec.h"

/* Number of body fields of each message (after type and id), as encoded. */
int tether__rpc_body_fields(uint32_t type) {
    bool reply = (type & TETHER_RPC_REPLY) && type != TETHER_RPC_ERROR;
    switch (type & ~TETHER_RPC_REPLY) {
    case TETHER_RPC_HELLO:
        return reply ? 32 : 4;
    case TETHER_RPC_AUTH:
        return reply ? 0 : 1;
    case TETHER_RPC_UPLOAD:
        return reply ? 2 : 4;
    case TETHER_RPC_UPLOAD_CHUNK:
        return reply ? 2 : 3;
    case TETHER_RPC_LOAD_MODULE:
        return reply ? 2 : 1;
    case TETHER_RPC_UNLOAD:
        return reply ? 0 : 1;
    case TETHER_RPC_GET_FUNCTION:
        return reply ? 3 : 2;
    case TETHER_RPC_ALLOC:
        return reply ? 2 : 4;
    case TETHER_RPC_FREE:
        return reply ? 0 : 1;
    case TETHER_RPC_COPY_TO:
        return reply ? 1 : 3;
    case TETHER_RPC_COPY_FROM:
        return reply ? 1 : 3;
    case TETHER_RPC_CALL:
        return reply ? 4 : 5;
    case TETHER_RPC_TIME:
        return reply ? 3 : 9;
    case TETHER_RPC_RESET:
    case TETHER_RPC_SHUTDOWN:
        return 0;
    case TETHER_RPC_LOG:
        return reply ? -1 : 2;
    case TETHER_RPC_LAUNCH_SEQ:
        return reply ? 3 : 2;
    case TETHER_RPC_TIME_SEQ:
        return reply ? 5 : 6;
    case TETHER_RPC_ERROR & ~TETHER_RPC_REPLY:
        return type == TETHER_RPC_ERROR ? 2 : -1;
    default:
        return -1;
    }
}

/* Fields a decoder requires: the optional trailing fields (docs/rpc.md) may be absent. */
int tether__rpc_required_fields(uint32_t type) {
    if (type == (TETHER_RPC_HELLO | TETHER_RPC_REPLY)) {
        return 17; /* board ... exports_id, cpu, cpu_features, pool_sizes, link, cl_* optional */
    }
    if (type == TETHER_RPC_HELLO) {
        return 3; /* link optional */
    }
    if (type == (TETHER_RPC_CALL | TETHER_RPC_REPLY)) {
        return 3; /* ret_value optional */
    }
    if (type == (TETHER_RPC_UPLOAD | TETHER_RPC_REPLY)) {
        return 1; /* cached optional */
    }
    if (type == (TETHER_RPC_TIME_SEQ | TETHER_RPC_REPLY)) {
        return 4; /* wall_seconds optional */
    }
    if (type == (TETHER_RPC_LAUNCH_SEQ | TETHER_RPC_REPLY)) {
        return 2; /* wall_ns optional */
    }
    if (type == TETHER_RPC_LAUNCH_SEQ) {
        return 1; /* flags optional */
    }
    if (type == TETHER_RPC_TIME_SEQ) {
        return 5; /* flags optional */
    }
    return tether__rpc_body_fields(type);
}

/* ---- encode ---- */

typedef struct enc {
    const tether_rpc_enc_ops *ops;
    void *c;
    int rc;
} enc;

#define E_U(v)                                                                                     \
    do {                                                                                           \
        if (!e->rc) {                                                                              \
            e->rc = e->ops->uint_(e->c, (uint64_t)(v));                                            \
        }                                                                                          \
    } while (0)
#define E_I(v)                                                                                     \
    do {                                                                                           \
        if (!e->rc) {                                                                              \
            e->rc = e->ops->int_(e->c, (int64_t)(v));                                              \
        }                                                                                          \
    } while (0)
#define E_D(v)                                                                                     \
    do {                                                                                           \
        if (!e->rc) {                                                                              \
            e->rc = e->ops->double_(e->c, (v));                                                    \
        }                                                                                          \
    } while (0)
#define E_B(v)                                                                                     \
    do {                                                                                           \
        if (!e->rc) {                                                                              \
            e->rc = e->ops->bool_(e->c, (v));                                                      \
        }                                                                                          \
    } while (0)
#define E_NIL()                                                                                    \
    do {                                                                                           \
        if (!e->rc) {                                                                              \
            e->rc = e->ops->nil(e->c);                                                             \
        }                                                                                          \
    } while (0)
#define E_S(s)                                                                                     \
    do {                                                                                           \
        if (!e->rc) {                                                                              \
            e->rc = e->ops->str(e->c, (s).ptr ? (s).ptr : "", (s).len);                            \
        }                                                                                          \
    } while (0)
#define E_BIN(b)                                                                                   \
    do {                                                                                           \
        if (!e->rc) {                                                                              \
            e->rc =                                                                                \
                e->ops->bin(e->c, (b).ptr ? (const void *)(b).ptr : (const void *)"", (b).len);    \
        }                                                                                          \
    } while (0)
#define E_A(n)                                                                                     \
    do {                                                                                           \
        if (!e->rc) {                                                                              \
            e->rc = e->ops->array(e->c, (uint32_t)(n));                                            \
        }                                                                                          \
    } while (0)

/* One [type_code, value] pair (CALL/TIME arguments, the CALL reply's return value). */
static void enc_arg(enc *e, const tether_rpc_arg *a) {
    E_A(2);
    E_I(a->type_code);
    switch (a->type_code) {
    case TETHER_TYPE_INT:
        E_I(a->v.v_int);
        break;
    case TETHER_TYPE_UINT:
        E_U(a->v.v_uint);
        break;
    case TETHER_TYPE_FLOAT:
        E_D(a->v.v_float);
        break;
    case TETHER_TYPE_HANDLE:
    case TETHER_TYPE_DLTENSOR:
        E_U(a->v.v_handle);
        break;
    case TETHER_TYPE_STR:
        E_S(a->v.v_str);
        break;
    default: /* TETHER_TYPE_NULL (others were refused by the check) */
        E_NIL();
        break;
    }
}

/* func, abi, args, global, local: the fields of CALL, TIME and every sequence step. */
static void enc_launch(enc *e, uint64_t func, uint32_t abi, uint32_t num_args,
                       const tether_rpc_arg *args, uint32_t work_dim, const uint64_t *global,
                       const uint64_t *local) {
    E_U(func);
    E_U(abi);
    E_A(num_args);
    for (uint32_t i = 0; i < num_args; i++) {
        enc_arg(e, &args[i]);
    }
    E_A(work_dim);
    for (uint32_t i = 0; i < work_dim; i++) {
        E_U(global[i]);
    }
    bool has_local = work_dim > 0 && local[0] != 0;
    E_A(has_local ? work_dim : 0);
    for (uint32_t i = 0; has_local && i < work_dim; i++) {
        E_U(local[i]);
    }
}

static void enc_invoke(enc *e, const tether_rpc_invoke *v) {
    enc_launch(e, v->func, v->abi, v->num_args, v->args, v->work_dim, v->global, v->local);
}

/* steps: an array of [func, abi, args, global, local] arrays */
static void enc_steps(enc *e, const tether_rpc_seq_req *q) {
    E_A(q->num_steps);
    for (uint32_t i = 0; i < q->num_steps; i++) {
        const tether_rpc_seq_step *st = &q->steps[i];
        E_A(5);
        enc_launch(e, st->func, st->abi, st->num_args, st->args, st->work_dim, st->global,
                   st->local);
    }
}

int tether__rpc_schema_encode(const tether_rpc_enc_ops *ops, void *c, const tether_rpc_msg *m) {
    int rc = tether_rpc_msg_check(m);
    if (rc) {
        return rc;
    }
    enc e_ = {ops, c, 0}, *e = &e_;
    E_A(2 + tether__rpc_body_fields(m->type));
    E_U(m->type);
    E_U(m->id);
    switch (m->type) {
    case TETHER_RPC_HELLO:
        E_U(m->u.hello_req.version);
        E_U(m->u.hello_req.max_frame);
        E_S(m->u.hello_req.client);
        E_U(m->u.hello_req.link);
        break;
    case TETHER_RPC_HELLO | TETHER_RPC_REPLY: {
        const tether_rpc_hello_rep *h = &m->u.hello_rep;
        E_U(h->version);
        E_S(h->triple);
        E_S(h->arch);
        E_B(h->little_endian);
        E_U(h->pointer_bits);
        E_U(h->max_frame);
        E_U(h->window);
        E_U(h->clock_hz);
        E_U(h->scopes);
        E_A(h->num_pools);
        for (uint32_t i = 0; i < h->num_pools; i++) {
            E_S(h->pools[i]);
        }
        E_B(h->opencl);
        E_U(h->image_max_width);
        E_U(h->image_max_height);
        E_U(h->load_addr);
        E_U(h->load_size);
        E_B(h->auth_required);
        E_BIN(h->nonce);
        E_S(h->board);
        E_U(h->ram_size);
        E_U(h->heap_size);
        E_U(h->stack_size);
        E_U(h->boot_count);
        E_U(h->exports_id);
        E_S(h->cpu);
        E_S(h->cpu_features);
        E_A(h->num_pools);
        for (uint32_t i = 0; i < h->num_pools; i++) {
            E_U(h->pool_sizes[i]);
        }
        E_U(h->link);
        E_U(h->cl_max_work_group_size);
        E_U(h->cl_wg_multiple);
        E_U(h->cl_local_mem_size);
        E_U(h->cl_compute_units);
        E_U(h->cl_features);
        break;
    }
    case TETHER_RPC_AUTH:
        E_BIN(m->u.auth_req.mac);
        break;
    case TETHER_RPC_UPLOAD:
        E_U(m->u.upload_req.kind);
        E_S(m->u.upload_req.name);
        E_U(m->u.upload_req.total_size);
        E_BIN(m->u.upload_req.sha256);
        break;
    case TETHER_RPC_UPLOAD | TETHER_RPC_REPLY:
        E_U(m->u.upload_rep.upload_id);
        E_B(m->u.upload_rep.cached);
        break;
    case TETHER_RPC_UPLOAD_CHUNK:
        E_U(m->u.upload_chunk_req.upload_id);
        E_U(m->u.upload_chunk_req.offset);
        E_BIN(m->u.upload_chunk_req.data);
        break;
    case TETHER_RPC_UPLOAD_CHUNK | TETHER_RPC_REPLY:
        E_U(m->u.upload_chunk_rep.received);
        E_B(m->u.upload_chunk_rep.complete);
        break;
    case TETHER_RPC_LOAD_MODULE:
        E_S(m->u.load_module_req.name);
        break;
    case TETHER_RPC_LOAD_MODULE | TETHER_RPC_REPLY:
        E_U(m->u.load_module_rep.module);
        E_U(m->u.load_module_rep.num_functions);
        break;
    case TETHER_RPC_UNLOAD:
        E_U(m->u.unload_req.module);
        break;
    case TETHER_RPC_GET_FUNCTION:
        E_U(m->u.get_function_req.module);
        E_S(m->u.get_function_req.name);
        break;
    case TETHER_RPC_GET_FUNCTION | TETHER_RPC_REPLY:
        E_U(m->u.get_function_rep.func);
        E_U(m->u.get_function_rep.abi);
        E_I(m->u.get_function_rep.num_args);
        break;
    case TETHER_RPC_ALLOC: {
        const tether_rpc_alloc_req *a = &m->u.alloc_req;
        E_A(a->ndim);
        for (uint32_t i = 0; i < a->ndim; i++) {
            E_I(a->shape[i]);
        }
        E_A(3);
        E_U(a->dtype_code);
        E_U(a->dtype_bits);
        E_U(a->dtype_lanes);
        E_U(a->scope);
        E_S(a->pool);
        break;
    }
    case TETHER_RPC_ALLOC | TETHER_RPC_REPLY:
        E_U(m->u.alloc_rep.array);
        E_U(m->u.alloc_rep.nbytes);
        break;
    case TETHER_RPC_FREE:
        E_U(m->u.free_req.handle);
        break;
    case TETHER_RPC_COPY_TO:
        E_U(m->u.copy_to_req.array);
        E_U(m->u.copy_to_req.offset);
        E_BIN(m->u.copy_to_req.data);
        break;
    case TETHER_RPC_COPY_TO | TETHER_RPC_REPLY:
        E_U(m->u.copy_to_rep.written);
        break;
    case TETHER_RPC_COPY_FROM:
        E_U(m->u.copy_from_req.array);
        E_U(m->u.copy_from_req.offset);
        E_U(m->u.copy_from_req.length);
        break;
    case TETHER_RPC_COPY_FROM | TETHER_RPC_REPLY:
        E_BIN(m->u.copy_from_rep.data);
        break;
    case TETHER_RPC_CALL:
        enc_invoke(e, &m->u.call_req);
        break;
    case TETHER_RPC_CALL | TETHER_RPC_REPLY:
        E_I(m->u.call_rep.ret);
        E_U(m->u.call_rep.elapsed_ns);
        E_U(m->u.call_rep.stack_bytes);
        enc_arg(e, &m->u.call_rep.ret_value);
        break;
    case TETHER_RPC_TIME:
        enc_invoke(e, &m->u.time_req.invoke);
        E_U(m->u.time_req.number);
        E_U(m->u.time_req.repeat);
        E_U(m->u.time_req.min_repeat_ms);
        E_U(m->u.time_req.cooldown_ms);
        break;
    case TETHER_RPC_TIME | TETHER_RPC_REPLY:
        E_U(m->u.time_rep.number);
        E_B(m->u.time_rep.zero_timer);
        E_A(m->u.time_rep.repeat);
        for (uint32_t i = 0; i < m->u.time_rep.repeat; i++) {
            E_D(m->u.time_rep.seconds[i]);
        }
        break;
    case TETHER_RPC_LAUNCH_SEQ:
        enc_steps(e, &m->u.seq_req);
        E_U(m->u.seq_req.flags);
        break;
    case TETHER_RPC_TIME_SEQ:
        enc_steps(e, &m->u.seq_req);
        E_U(m->u.seq_req.number);
        E_U(m->u.seq_req.repeat);
        E_U(m->u.seq_req.min_repeat_ms);
        E_U(m->u.seq_req.cooldown_ms);
        E_U(m->u.seq_req.flags);
        break;
    case TETHER_RPC_LAUNCH_SEQ | TETHER_RPC_REPLY:
        E_U(m->u.launch_seq_rep.elapsed_ns);
        E_A(m->u.launch_seq_rep.num_steps);
        for (uint32_t i = 0; i < m->u.launch_seq_rep.num_steps; i++) {
            E_U(m->u.launch_seq_rep.step_ns[i]);
        }
        E_U(m->u.launch_seq_rep.wall_ns);
        break;
    case TETHER_RPC_TIME_SEQ | TETHER_RPC_REPLY:
        E_U(m->u.time_seq_rep.number);
        E_B(m->u.time_seq_rep.zero_timer);
        E_A(m->u.time_seq_rep.repeat);
        for (uint32_t i = 0; i < m->u.time_seq_rep.repeat; i++) {
            E_D(m->u.time_seq_rep.seconds[i]);
        }
        E_A(m->u.time_seq_rep.num_steps);
        for (uint32_t i = 0; i < m->u.time_seq_rep.num_steps; i++) {
            E_D(m->u.time_seq_rep.step_seconds[i]);
        }
        E_D(m->u.time_seq_rep.wall_seconds);
        break;
    case TETHER_RPC_LOG:
        E_U(m->u.log.level);
        E_S(m->u.log.text);
        break;
    case TETHER_RPC_ERROR:
        E_I(m->u.error.code);
        E_S(m->u.error.message);
        break;
    default: /* bodiless messages */
        break;
    }
    return e->rc;
}
