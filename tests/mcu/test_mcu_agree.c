/*
 * The two device servers agree, byte for byte: one script of requests sent to tetherd (started
 * here on 127.0.0.1 with the board's pools and without OpenCL, spoken to over TCP with the tiny
 * codec) and to the MCU firmware on QEMU mps2-an385, each request under the same id on both.
 * Both run the same request handler (rpc/src/server_core.c and server_requests.c, docs/rpc.md
 * "Server core"), so every reply must be the same bytes, ERROR replies included.
 *
 * The script covers every request type (HELLO, AUTH, UPLOAD, UPLOAD_CHUNK, LOAD_MODULE, UNLOAD,
 * GET_FUNCTION, ALLOC, FREE, COPY_TO, COPY_FROM, CALL, TIME, RESET, SHUTDOWN, LAUNCH_SEQ,
 * TIME_SEQ) and every ERROR the shared handler gives for them: the gates, malformed frames, bad
 * names, handles, dtypes, scopes, pools, ranges, chunk limits, upload order, resent and changed
 * chunks, oversize chunks, hash mismatches, incomplete uploads, CALL/TIME validation and array
 * arguments. The HELLO host max_frame is the board's (1024), so chunk limits agree too.
 *
 * A few replies carry what only the device knows, and there the type and code must agree but the
 * bytes may differ (marked DEVICE, each with its reason): the HELLO body, a system-library
 * function's handle (its index in each device's own library), a successful CALL/TIME (times and
 * stack bytes), the module kinds a device takes and its upload room, and loading bytes that are
 * no module (dlopen's and the image check's own words).
 *
 * Both servers are stopped by the teardown, also when a case fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "mcu_client.h"
#include "tether/rpc.h"
#include "tether/rpc/sha256.h"

static mcu_board board;
static test_daemon daemon_;
static bool daemon_started;
static tether_transport tcp;
static bool tcp_open;
static uint8_t tcp_tx[64 * 1024];

#define BOARD_FRAME 1024u /* the firmware's max frame, announced by the host to both */

/* What one server answered: its bytes and the decoded reply. */
typedef struct outcome {
    uint8_t bytes[4096];
    size_t len;
    tether_rpc_msg rep; /* decoded from bytes */
} outcome;

static outcome out_tcp, out_mcu;

static void tcp_exchange(const uint8_t *msg, size_t len, uint32_t id, outcome *o) {
    assert_int_equal(tether_transport_send(&tcp, msg, len, 10000), 0);
    for (;;) {
        const uint8_t *buf;
        size_t n;
        assert_int_equal(tether_transport_recv(&tcp, &buf, &n, 10000), 0);
        assert_true(n <= sizeof o->bytes);
        memcpy(o->bytes, buf, n);
        o->len = n;
        assert_int_equal(tether_rpc_tiny_decode(o->bytes, n, &o->rep), 0);
        if (o->rep.type == TETHER_RPC_LOG) {
            continue;
        }
        assert_int_equal(o->rep.id, id);
        return;
    }
}

static void mcu_take(outcome *o) {
    assert_true(board.reply_len <= sizeof o->bytes);
    memcpy(o->bytes, board.reply, board.reply_len);
    o->len = board.reply_len;
    assert_int_equal(tether_rpc_tiny_decode(o->bytes, o->len, &o->rep), 0);
}

/* Per device: what the script learnt from that device's earlier replies. */
typedef struct ctx {
    bool mcu;
    uint64_t null_fn, nop1_fn; /* tether.null (packed, any arguments), tether.nop1 (unpacked) */
    uint64_t array;            /* float32[4] */
    uint32_t upload;           /* the upload in progress */
    uint32_t kind;             /* the module kind the device takes */
} ctx;

static ctx c_tcp = {false, 0, 0, 0, 0, TETHER_RPC_MODULE_SHARED_OBJECT};
static ctx c_mcu = {true, 0, 0, 0, 0, TETHER_RPC_MODULE_MCU_IMAGE};

typedef void (*make_fn)(const ctx *c, tether_rpc_msg *req);

enum { SAME, DEVICE };

static const char *msg_of(const tether_rpc_msg *r) {
    static char text[2][600];
    static int k;
    k ^= 1;
    snprintf(text[k], sizeof text[k], "%.*s", (int)r->u.error.message.len,
             r->u.error.message.ptr ? r->u.error.message.ptr : "");
    return text[k];
}

static void print_outcomes(const char *what) {
    const tether_rpc_msg *a = &out_tcp.rep, *b = &out_mcu.rep;
    printf("%-44s tetherd: type %u%s%s\n", what, (unsigned)a->type,
           a->type == TETHER_RPC_ERROR ? " " : "", a->type == TETHER_RPC_ERROR ? msg_of(a) : "");
    printf("%-44s mcu:     type %u%s%s\n", "", (unsigned)b->type,
           b->type == TETHER_RPC_ERROR ? " " : "", b->type == TETHER_RPC_ERROR ? msg_of(b) : "");
}

/* Checks the two outcomes: the same bytes (SAME) or the same type and code (DEVICE); then the
 * reply must be of type want (an ERROR with code want_code when want is TETHER_RPC_ERROR). */
static void judge(const char *what, int same, uint32_t want, int32_t want_code) {
    print_outcomes(what);
    const tether_rpc_msg *a = &out_tcp.rep, *b = &out_mcu.rep;
    assert_int_equal(a->type, b->type);
    if (a->type == TETHER_RPC_ERROR) {
        assert_int_equal(a->u.error.code, b->u.error.code);
    }
    if (same == SAME) {
        if (out_tcp.len != out_mcu.len || memcmp(out_tcp.bytes, out_mcu.bytes, out_tcp.len) != 0) {
            for (int k = 0; k < 2; k++) {
                const outcome *o = k ? &out_mcu : &out_tcp;
                printf("%s bytes:", k ? "mcu    " : "tetherd");
                for (size_t i = 0; i < o->len; i++) {
                    printf(" %02x", o->bytes[i]);
                }
                printf("\n");
            }
            fail_msg("%s: the replies differ (%zu and %zu bytes)", what, out_tcp.len, out_mcu.len);
        }
    }
    assert_int_equal(a->type, want);
    if (want == TETHER_RPC_ERROR) {
        assert_int_equal(a->u.error.code, want_code);
    }
}

/* Sends the request built by `make` (from each device's context) to both under one id. */
static void both(const char *what, make_fn make, int same, uint32_t want, int32_t want_code) {
    static tether_rpc_msg req;
    uint32_t id = board.next_id;
    memset(&req, 0, sizeof req);
    make(&c_tcp, &req);
    req.id = id;
    size_t len = 0;
    if (tether_rpc_tiny_encode(&req, tcp_tx, sizeof tcp_tx, &len) != 0) {
        fail_msg("%s: cannot encode the request: %s", what, tether_last_error());
    }
    tcp_exchange(tcp_tx, len, id, &out_tcp);
    memset(&req, 0, sizeof req);
    make(&c_mcu, &req);
    assert_int_equal(mcu_request(&board, &req, &out_mcu.rep, 10000), 0);
    assert_int_equal(req.id, id);
    mcu_take(&out_mcu);
    judge(what, same, want, want_code);
}

/* Sends the same raw message bytes (a frame no encoder would write) to both. */
static void both_raw(const char *what, const uint8_t *msg, size_t len, uint32_t id, uint32_t want,
                     int32_t want_code) {
    tcp_exchange(msg, len, id, &out_tcp);
    assert_int_equal(mcu_request_bytes(&board, msg, len, id, 0, &out_mcu.rep, 10000), 0);
    mcu_take(&out_mcu);
    judge(what, SAME, want, want_code);
}

#define REP(t) ((t) | TETHER_RPC_REPLY)
#define ERR    TETHER_RPC_ERROR

/* ---- the requests ---- */

static void mk_hello(const ctx *c, tether_rpc_msg *r) {
    (void)c;
    r->type = TETHER_RPC_HELLO;
    r->u.hello_req.version = TETHER_RPC_VERSION;
    r->u.hello_req.max_frame = BOARD_FRAME;
    r->u.hello_req.client = tether_rpc_str_c("test_mcu_agree");
}

static void mk_hello_v99(const ctx *c, tether_rpc_msg *r) {
    mk_hello(c, r);
    r->u.hello_req.version = 99;
}

static uint8_t mac[32];

static void mk_auth(const ctx *c, tether_rpc_msg *r) {
    (void)c;
    r->type = TETHER_RPC_AUTH;
    r->u.auth_req.mac.ptr = mac;
    r->u.auth_req.mac.len = sizeof mac;
}

static const char *fname; /* GET_FUNCTION's name */
static uint64_t fmodule;  /* and module */

static void mk_get_function(const ctx *c, tether_rpc_msg *r) {
    (void)c;
    r->type = TETHER_RPC_GET_FUNCTION;
    r->u.get_function_req.module = fmodule;
    r->u.get_function_req.name = tether_rpc_str_c(fname);
}

/* ALLOC's fields */
static struct {
    uint32_t ndim;
    int64_t shape[2];
    DLDataType dt;
    uint32_t scope;
    const char *pool;
} al;

static void mk_alloc(const ctx *c, tether_rpc_msg *r) {
    (void)c;
    r->type = TETHER_RPC_ALLOC;
    r->u.alloc_req.ndim = al.ndim;
    memcpy(r->u.alloc_req.shape, al.shape, sizeof al.shape);
    r->u.alloc_req.dtype_code = al.dt.code;
    r->u.alloc_req.dtype_bits = al.dt.bits;
    r->u.alloc_req.dtype_lanes = al.dt.lanes;
    r->u.alloc_req.scope = al.scope;
    r->u.alloc_req.pool = tether_rpc_str_c(al.pool);
}

static void alloc_case(const char *what, uint32_t ndim, int64_t s0, int64_t s1, DLDataType dt,
                       uint32_t scope, const char *pool, int same, uint32_t want, int32_t code) {
    al.ndim = ndim;
    al.shape[0] = s0;
    al.shape[1] = s1;
    al.dt = dt;
    al.scope = scope;
    al.pool = pool;
    both(what, mk_alloc, same, want, code);
}

static uint64_t h_arg; /* a handle for FREE, COPY_*; 0 = the context's array */
static uint64_t off_arg, len_arg;
static uint8_t data4[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static uint64_t handle_of(const ctx *c) {
    return h_arg ? h_arg : c->array;
}

static void mk_free(const ctx *c, tether_rpc_msg *r) {
    r->type = TETHER_RPC_FREE;
    r->u.free_req.handle = handle_of(c);
}

static void mk_copy_to(const ctx *c, tether_rpc_msg *r) {
    r->type = TETHER_RPC_COPY_TO;
    r->u.copy_to_req.array = handle_of(c);
    r->u.copy_to_req.offset = off_arg;
    r->u.copy_to_req.data.ptr = data4;
    r->u.copy_to_req.data.len = (uint32_t)len_arg;
}

static void mk_copy_from(const ctx *c, tether_rpc_msg *r) {
    r->type = TETHER_RPC_COPY_FROM;
    r->u.copy_from_req.array = handle_of(c);
    r->u.copy_from_req.offset = off_arg;
    r->u.copy_from_req.length = len_arg;
}

/* CALL / TIME */
static char long_text[200];
static int call_kind;

enum {
    CALL_UNKNOWN_HANDLE,
    CALL_WRONG_ABI,
    CALL_WRONG_COUNT,
    CALL_STR_UNPACKED,
    CALL_STR_PACKED,
    CALL_STR_TOO_LONG,
    CALL_WORK_DIM,
    CALL_NO_ARRAY,
    CALL_ARRAY,
};

static void fill_invoke(const ctx *c, tether_rpc_invoke *v) {
    v->func = c->null_fn;
    v->abi = TETHER_ABI_PACKED;
    switch (call_kind) {
    case CALL_UNKNOWN_HANDLE:
        v->func = 999999;
        break;
    case CALL_WRONG_ABI:
        v->abi = TETHER_ABI_UNPACKED;
        break;
    case CALL_WRONG_COUNT:
        v->func = c->nop1_fn;
        v->abi = TETHER_ABI_UNPACKED;
        v->num_args = 2;
        v->args[0].type_code = TETHER_TYPE_NULL;
        v->args[1].type_code = TETHER_TYPE_NULL;
        break;
    case CALL_STR_UNPACKED:
        v->func = c->nop1_fn;
        v->abi = TETHER_ABI_UNPACKED;
        v->num_args = 1;
        v->args[0].type_code = TETHER_TYPE_STR;
        v->args[0].v.v_str = tether_rpc_str_c("text");
        break;
    case CALL_STR_PACKED:
        v->num_args = 2;
        v->args[0].type_code = TETHER_TYPE_STR;
        v->args[0].v.v_str = tether_rpc_str_c("hello");
        v->args[1].type_code = TETHER_TYPE_INT;
        v->args[1].v.v_int = -3;
        break;
    case CALL_STR_TOO_LONG:
        v->num_args = 2;
        for (int i = 0; i < 2; i++) {
            v->args[i].type_code = TETHER_TYPE_STR;
            v->args[i].v.v_str.ptr = long_text;
            v->args[i].v.v_str.len = sizeof long_text;
        }
        break;
    case CALL_WORK_DIM:
        v->work_dim = 1;
        v->global[0] = 4;
        break;
    case CALL_NO_ARRAY:
        v->func = c->nop1_fn;
        v->abi = TETHER_ABI_UNPACKED;
        v->num_args = 1;
        v->args[0].type_code = TETHER_TYPE_DLTENSOR;
        v->args[0].v.v_handle = 12345;
        break;
    case CALL_ARRAY:
        v->func = c->nop1_fn;
        v->abi = TETHER_ABI_UNPACKED;
        v->num_args = 1;
        v->args[0].type_code = TETHER_TYPE_DLTENSOR;
        v->args[0].v.v_handle = c->array;
        break;
    }
}

static void mk_call(const ctx *c, tether_rpc_msg *r) {
    r->type = TETHER_RPC_CALL;
    fill_invoke(c, &r->u.call_req);
}

static uint32_t t_number, t_repeat;

static void mk_time(const ctx *c, tether_rpc_msg *r) {
    r->type = TETHER_RPC_TIME;
    fill_invoke(c, &r->u.time_req.invoke);
    r->u.time_req.number = t_number;
    r->u.time_req.repeat = t_repeat;
}

/* UPLOAD / UPLOAD_CHUNK / LOAD_MODULE / UNLOAD */
static uint8_t image[100];
static uint8_t image_hash[32];
static struct {
    const char *name;
    int kind; /* -1 = the device's */
    uint64_t total;
    uint32_t hash_len;
} up;

static void mk_upload(const ctx *c, tether_rpc_msg *r) {
    r->type = TETHER_RPC_UPLOAD;
    r->u.upload_req.name = tether_rpc_str_c(up.name);
    r->u.upload_req.kind = up.kind < 0 ? c->kind : (uint32_t)up.kind;
    r->u.upload_req.total_size = up.total;
    r->u.upload_req.sha256.ptr = image_hash;
    r->u.upload_req.sha256.len = up.hash_len;
}

static void upload_case(const char *what, const char *name, int kind, uint64_t total,
                        uint32_t hash_len, int same, uint32_t want, int32_t code) {
    up.name = name;
    up.kind = kind;
    up.total = total;
    up.hash_len = hash_len;
    both(what, mk_upload, same, want, code);
    if (want != ERR) {
        c_tcp.upload = out_tcp.rep.u.upload_rep.upload_id;
        c_mcu.upload = out_mcu.rep.u.upload_rep.upload_id;
    }
}

static uint32_t chunk_id; /* 0 = the context's upload */
static const uint8_t *chunk_src = image;

static void mk_chunk(const ctx *c, tether_rpc_msg *r) {
    r->type = TETHER_RPC_UPLOAD_CHUNK;
    r->u.upload_chunk_req.upload_id = chunk_id ? chunk_id : c->upload;
    r->u.upload_chunk_req.offset = off_arg;
    r->u.upload_chunk_req.data.ptr = chunk_src + off_arg;
    r->u.upload_chunk_req.data.len = (uint32_t)len_arg;
}

static void chunk_case(const char *what, uint64_t off, uint64_t len, uint32_t want, int32_t code) {
    off_arg = off;
    len_arg = len;
    both(what, mk_chunk, SAME, want, code);
}

static const char *lname;

static void mk_load(const ctx *c, tether_rpc_msg *r) {
    (void)c;
    r->type = TETHER_RPC_LOAD_MODULE;
    r->u.load_module_req.name = tether_rpc_str_c(lname);
}

static void mk_unload(const ctx *c, tether_rpc_msg *r) {
    (void)c;
    r->type = TETHER_RPC_UNLOAD;
    r->u.unload_req.module = 77;
}

static const tether_rpc_arg seq_arg = {TETHER_TYPE_INT, {.v_int = 1}};
static const tether_rpc_seq_step seq_step = {1, TETHER_ABI_PACKED, 1,        &seq_arg,
                                             1, {4, 0, 0},         {0, 0, 0}};

static void mk_launch_seq(const ctx *c, tether_rpc_msg *r) {
    (void)c;
    r->type = TETHER_RPC_LAUNCH_SEQ;
    r->u.seq_req.num_steps = 1;
    r->u.seq_req.steps = &seq_step;
}

static void mk_time_seq(const ctx *c, tether_rpc_msg *r) {
    mk_launch_seq(c, r);
    r->type = TETHER_RPC_TIME_SEQ;
    r->u.seq_req.number = 1;
    r->u.seq_req.repeat = 1;
}

static void mk_reset(const ctx *c, tether_rpc_msg *r) {
    (void)c;
    r->type = TETHER_RPC_RESET;
}

static void mk_shutdown(const ctx *c, tether_rpc_msg *r) {
    (void)c;
    r->type = TETHER_RPC_SHUTDOWN;
}

static void mk_reply_type(const ctx *c, tether_rpc_msg *r) {
    (void)c;
    r->type = TETHER_RPC_RESET | TETHER_RPC_REPLY;
}

/* msgpack of [type, id, extra...] with small unsigned numbers (< 128, or one 0xcc byte). */
static size_t raw_msg(uint8_t *out, uint32_t type, uint32_t id, const uint8_t *extra,
                      size_t extra_len, uint32_t count) {
    size_t n = 0;
    out[n++] = (uint8_t)(0x90 | count);
    uint32_t v[2] = {type, id};
    for (int i = 0; i < 2; i++) {
        if (v[i] >= 128) {
            out[n++] = 0xcc;
        }
        out[n++] = (uint8_t)v[i];
    }
    if (extra_len) {
        memcpy(out + n, extra, extra_len);
    }
    return n + extra_len;
}

static void get_functions(void) {
    fmodule = 0;
    fname = "tether.null";
    /* the handle names the entry in each device's own system library */
    both("GET_FUNCTION tether.null", mk_get_function, DEVICE, REP(TETHER_RPC_GET_FUNCTION), 0);
    assert_int_equal(out_tcp.rep.u.get_function_rep.abi, out_mcu.rep.u.get_function_rep.abi);
    assert_int_equal(out_tcp.rep.u.get_function_rep.num_args,
                     out_mcu.rep.u.get_function_rep.num_args);
    c_tcp.null_fn = out_tcp.rep.u.get_function_rep.func;
    c_mcu.null_fn = out_mcu.rep.u.get_function_rep.func;
    fname = "tether.nop1";
    both("GET_FUNCTION tether.nop1", mk_get_function, DEVICE, REP(TETHER_RPC_GET_FUNCTION), 0);
    assert_int_equal(out_tcp.rep.u.get_function_rep.abi, out_mcu.rep.u.get_function_rep.abi);
    c_tcp.nop1_fn = out_tcp.rep.u.get_function_rep.func;
    c_mcu.nop1_fn = out_mcu.rep.u.get_function_rep.func;
}

static void test_agree(void **state) {
    (void)state;
    uint8_t raw[96];
    size_t n;

    /* ---- before HELLO: a fresh connection / a freshly booted board ---- */
    alloc_case("ALLOC before HELLO", 1, 4, 0, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", SAME, ERR,
               TETHER_ERR_STATE);
    assert_non_null(strstr(msg_of(&out_tcp.rep), "before HELLO"));
    both("LAUNCH_SEQ before HELLO", mk_launch_seq, SAME, ERR, TETHER_ERR_STATE);
    both("HELLO of protocol version 99", mk_hello_v99, SAME, ERR, TETHER_ERR_UNSUPPORTED);

    /* ---- HELLO, AUTH ---- */
    both("HELLO", mk_hello, DEVICE, REP(TETHER_RPC_HELLO), 0); /* each describes itself */
    assert_int_equal(out_tcp.rep.u.hello_rep.scopes, out_mcu.rep.u.hello_rep.scopes);
    assert_int_equal(out_tcp.rep.u.hello_rep.num_pools, out_mcu.rep.u.hello_rep.num_pools);
    both("AUTH without auth_required", mk_auth, SAME, REP(TETHER_RPC_AUTH), 0);

    /* ---- GET_FUNCTION ---- */
    get_functions();
    fname = "nope";
    both("GET_FUNCTION of a name not there", mk_get_function, SAME, ERR, TETHER_ERR_NOT_FOUND);
    fname = "";
    both("GET_FUNCTION of the empty name", mk_get_function, SAME, ERR, TETHER_ERR_NOT_FOUND);
    fname = "tether.null";
    fmodule = 77;
    both("GET_FUNCTION in an unknown module", mk_get_function, SAME, ERR, TETHER_ERR_NOT_FOUND);
    fmodule = 0;

    /* ---- ALLOC / FREE ---- */
    alloc_case("ALLOC float32[4]", 1, 4, 0, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", SAME,
               REP(TETHER_RPC_ALLOC), 0);
    c_tcp.array = out_tcp.rep.u.alloc_rep.array;
    c_mcu.array = out_mcu.rep.u.alloc_rep.array;
    DLDataType bad_dt = {kDLFloat, 12, 1};
    alloc_case("ALLOC of an invalid dtype", 1, 4, 0, bad_dt, TETHER_SCOPE_GLOBAL, "", SAME, ERR,
               TETHER_ERR_INVALID_ARG);
    alloc_case("ALLOC in a texture scope", 2, 4, 4, TETHER_FLOAT32, TETHER_SCOPE_TEXTURE, "", SAME,
               ERR, TETHER_ERR_UNSUPPORTED);
    /* (an unknown scope is refused by both decoders: see "malformed frames") */
    alloc_case("ALLOC in an unknown pool", 1, 4, 0, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "fast",
               SAME, ERR, TETHER_ERR_NOT_FOUND);
    assert_non_null(strstr(msg_of(&out_tcp.rep), "its pools: sram, psram, code"));
    alloc_case("ALLOC in a badly named pool", 1, 4, 0, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "a b",
               SAME, ERR, TETHER_ERR_INVALID_ARG);
    alloc_case("ALLOC of an overflowing shape", 2, (int64_t)1 << 40, (int64_t)1 << 40,
               TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", SAME, ERR, TETHER_ERR_LIMIT);
    /* (a negative extent too: see "malformed frames") */
    /* more than the device has: tetherd's session limit, the board's heap */
    alloc_case("ALLOC of 1 GiB + 4 bytes", 1, ((int64_t)1 << 28) + 1, 0, TETHER_FLOAT32,
               TETHER_SCOPE_GLOBAL, "", DEVICE, ERR, TETHER_ERR_OUT_OF_MEMORY);
    alloc_case("ALLOC uint8[8] in pool psram", 1, 8, 0, TETHER_UINT8, TETHER_SCOPE_GLOBAL, "psram",
               SAME, REP(TETHER_RPC_ALLOC), 0);
    h_arg = out_tcp.rep.u.alloc_rep.array;
    both("FREE", mk_free, SAME, REP(TETHER_RPC_FREE), 0);
    both("FREE again", mk_free, SAME, ERR, TETHER_ERR_NOT_FOUND);
    h_arg = 12345;
    both("FREE of an unknown handle", mk_free, SAME, ERR, TETHER_ERR_NOT_FOUND);
    h_arg = 0;

    /* ---- COPY_TO / COPY_FROM ---- */
    off_arg = 0;
    len_arg = 16;
    both("COPY_TO 16 bytes", mk_copy_to, SAME, REP(TETHER_RPC_COPY_TO), 0);
    off_arg = 12;
    len_arg = 8;
    both("COPY_TO past the end", mk_copy_to, SAME, ERR, TETHER_ERR_LIMIT);
    h_arg = 12345;
    both("COPY_TO an unknown handle", mk_copy_to, SAME, ERR, TETHER_ERR_NOT_FOUND);
    h_arg = 0;
    off_arg = 4;
    len_arg = 12;
    both("COPY_FROM 12 bytes", mk_copy_from, SAME, REP(TETHER_RPC_COPY_FROM), 0);
    assert_memory_equal(out_tcp.rep.u.copy_from_rep.data.ptr, data4 + 4, 12);
    off_arg = 8;
    len_arg = 9;
    both("COPY_FROM past the end", mk_copy_from, SAME, ERR, TETHER_ERR_LIMIT);
    off_arg = 0;
    len_arg = 2000;
    both("COPY_FROM over the chunk limit", mk_copy_from, SAME, ERR, TETHER_ERR_LIMIT);
    h_arg = 12345;
    len_arg = 4;
    both("COPY_FROM an unknown handle", mk_copy_from, SAME, ERR, TETHER_ERR_NOT_FOUND);
    h_arg = 0;

    /* ---- CALL / TIME ---- */
    memset(long_text, 's', sizeof long_text);
    static const struct {
        const char *what;
        int kind;
        int same;
        uint32_t want;
        int32_t code;
    } calls[] = {
        {"CALL of an unknown function handle", CALL_UNKNOWN_HANDLE, SAME, ERR,
         TETHER_ERR_NOT_FOUND},
        {"CALL with the wrong ABI", CALL_WRONG_ABI, SAME, ERR, TETHER_ERR_MISMATCH},
        {"CALL with the wrong argument count", CALL_WRONG_COUNT, SAME, ERR, TETHER_ERR_MISMATCH},
        {"CALL: a string to an unpacked function", CALL_STR_UNPACKED, SAME, ERR,
         TETHER_ERR_MISMATCH},
        {"CALL: strings over 256 bytes", CALL_STR_TOO_LONG, SAME, ERR, TETHER_ERR_LIMIT},
        {"CALL: a work size on a CPU function", CALL_WORK_DIM, SAME, ERR, TETHER_ERR_UNSUPPORTED},
        {"CALL: an unknown array handle", CALL_NO_ARRAY, SAME, ERR, TETHER_ERR_NOT_FOUND},
        /* times and stack bytes are the device's */
        {"CALL: strings to a packed function", CALL_STR_PACKED, DEVICE, REP(TETHER_RPC_CALL), 0},
        {"CALL with an array", CALL_ARRAY, DEVICE, REP(TETHER_RPC_CALL), 0},
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        call_kind = calls[i].kind;
        both(calls[i].what, mk_call, calls[i].same, calls[i].want, calls[i].code);
        if (calls[i].want != ERR) {
            assert_int_equal(out_tcp.rep.u.call_rep.ret, out_mcu.rep.u.call_rep.ret);
        }
    }
    call_kind = CALL_STR_PACKED;
    t_number = 1;
    t_repeat = 0;
    /* (number 0 and repeat 0 or > 32 no encoder writes: both decoders refuse them) */
    call_kind = CALL_NO_ARRAY;
    t_repeat = 1;
    both("TIME: an unknown array handle", mk_time, SAME, ERR, TETHER_ERR_NOT_FOUND);
    call_kind = CALL_ARRAY;
    both("TIME", mk_time, DEVICE, REP(TETHER_RPC_TIME), 0);

    /* ---- UPLOAD / UPLOAD_CHUNK / LOAD_MODULE / UNLOAD ---- */
    for (size_t i = 0; i < sizeof image; i++) {
        image[i] = (uint8_t)(i * 7 + 1);
    }
    tether_sha256(image, sizeof image, image_hash);

    /* the kinds a device takes and the room it has are its own */
    upload_case("UPLOAD of an OpenCL source", "m", TETHER_RPC_MODULE_OPENCL_SOURCE, 100, 32, DEVICE,
                ERR, TETHER_ERR_UNSUPPORTED);
    upload_case("UPLOAD of 128 MiB", "m", -1, 128u << 20, 32, DEVICE, ERR, TETHER_ERR_LIMIT);
    chunk_id = 99;
    chunk_case("UPLOAD_CHUNK of an unknown upload", 0, 10, ERR, TETHER_ERR_NOT_FOUND);
    chunk_id = 0;
    upload_case("UPLOAD of 100 bytes", "m", -1, 100, 32, SAME, REP(TETHER_RPC_UPLOAD), 0);
    chunk_case("UPLOAD_CHUNK past what was received", 50, 10, ERR, TETHER_ERR_INVALID_ARG);
    chunk_case("UPLOAD_CHUNK [0, 40)", 0, 40, REP(TETHER_RPC_UPLOAD_CHUNK), 0);
    chunk_case("UPLOAD_CHUNK [0, 40) again", 0, 40, REP(TETHER_RPC_UPLOAD_CHUNK), 0);
    assert_int_equal(out_tcp.rep.u.upload_chunk_rep.received, 40);
    static uint8_t changed[100];
    memcpy(changed, image, sizeof changed);
    changed[30] ^= 0xFF;
    chunk_src = changed;
    chunk_case("UPLOAD_CHUNK changing received bytes", 20, 20, ERR, TETHER_ERR_STATE);
    chunk_src = image;
    chunk_case("UPLOAD_CHUNK [20, 60) over received bytes", 20, 40, REP(TETHER_RPC_UPLOAD_CHUNK),
               0);
    assert_int_equal(out_tcp.rep.u.upload_chunk_rep.received, 60);
    lname = "m";
    both("LOAD_MODULE of an incomplete upload", mk_load, SAME, ERR, TETHER_ERR_STATE);
    static uint8_t longer[120];
    memcpy(longer, image, sizeof image);
    chunk_src = longer;
    chunk_case("UPLOAD_CHUNK past the announced size", 60, 60, ERR, TETHER_ERR_LIMIT);
    chunk_case("UPLOAD_CHUNK of the discarded upload", 60, 40, ERR, TETHER_ERR_NOT_FOUND);
    chunk_src = changed;
    upload_case("UPLOAD again", "m", -1, 100, 32, SAME, REP(TETHER_RPC_UPLOAD), 0);
    chunk_case("UPLOAD_CHUNK of bytes not hashing to it", 0, 100, ERR, TETHER_ERR_MISMATCH);
    both("LOAD_MODULE of the discarded upload", mk_load, SAME, ERR, TETHER_ERR_NOT_FOUND);
    chunk_src = image;
    upload_case("UPLOAD a third time", "m", -1, 100, 32, SAME, REP(TETHER_RPC_UPLOAD), 0);
    chunk_case("UPLOAD_CHUNK of all 100 bytes", 0, 100, REP(TETHER_RPC_UPLOAD_CHUNK), 0);
    assert_true(out_tcp.rep.u.upload_chunk_rep.complete);
    chunk_case("UPLOAD_CHUNK [90, 100) after completion", 90, 10, REP(TETHER_RPC_UPLOAD_CHUNK), 0);
    /* these bytes are no module: dlopen's and the image check's own words */
    both("LOAD_MODULE of bytes that are no module", mk_load, DEVICE, ERR, TETHER_ERR_INVALID_ARG);
    lname = "";
    both("LOAD_MODULE without a name", mk_load, SAME, ERR, TETHER_ERR_INVALID_ARG);
    lname = "other";
    both("LOAD_MODULE of a name never uploaded", mk_load, SAME, ERR, TETHER_ERR_NOT_FOUND);
    both("UNLOAD of an unknown module", mk_unload, SAME, ERR, TETHER_ERR_NOT_FOUND);

    /* ---- kernel sequences: neither runs them (no OpenCL) ---- */
    both("LAUNCH_SEQ", mk_launch_seq, SAME, ERR, TETHER_ERR_UNSUPPORTED);
    both("TIME_SEQ", mk_time_seq, SAME, ERR, TETHER_ERR_UNSUPPORTED);

    /* ---- malformed frames ---- */
    uint32_t id = board.next_id++;
    n = raw_msg(raw, 48, id, NULL, 0, 2);
    both_raw("a message type the protocol does not have", raw, n, id, ERR, TETHER_ERR_PROTOCOL);
    both("a reply type as a request", mk_reply_type, SAME, ERR, TETHER_ERR_PROTOCOL);
    id = board.next_id++;
    static const uint8_t field[] = {0xa1, 'x'};
    n = raw_msg(raw, TETHER_RPC_FREE, id, field, sizeof field, 3);
    both_raw("FREE with a string for its handle", raw, n, id, ERR, TETHER_ERR_PROTOCOL);
    id = board.next_id++;
    static const uint8_t scope9[] = {0x91, 4, 0x93, 2, 32, 1, 9, 0xa0};
    n = raw_msg(raw, TETHER_RPC_ALLOC, id, scope9, sizeof scope9, 6);
    both_raw("ALLOC in an unknown scope", raw, n, id, ERR, TETHER_ERR_PROTOCOL);
    id = board.next_id++;
    static const uint8_t negative[] = {0x91, 0xff, 0x93, 2, 32, 1, 0, 0xa0};
    n = raw_msg(raw, TETHER_RPC_ALLOC, id, negative, sizeof negative, 6);
    both_raw("ALLOC of a negative extent", raw, n, id, ERR, TETHER_ERR_PROTOCOL);
    /* an UPLOAD without a name, of no bytes, with a short hash: both decoders refuse them */
    static uint8_t up_raw[3][40];

    static const char *const up_what[3] = {"UPLOAD without a name", "UPLOAD of no bytes",
                                           "UPLOAD with a short hash"};
    static const int32_t up_code[3] = {TETHER_ERR_PROTOCOL, TETHER_ERR_LIMIT, TETHER_ERR_PROTOCOL};
    for (int k = 0; k < 3; k++) {
        uint8_t *p = up_raw[k];
        size_t m = 0;
        p[m++] = 0; /* kind */
        if (k == 0) {
            p[m++] = 0xa0;
        } else {
            p[m++] = 0xa1;
            p[m++] = 'm';
        }
        p[m++] = k == 1 ? 0 : 100;
        p[m++] = 0xc4;
        p[m++] = k == 2 ? 31 : 32;
        memcpy(p + m, image_hash, k == 2 ? 31 : 32);
        m += k == 2 ? 31 : 32;
        id = board.next_id++;
        n = raw_msg(raw, TETHER_RPC_UPLOAD, id, p, m, 6);
        both_raw(up_what[k], raw, n, id, ERR, up_code[k]);
    }
    n = raw_msg(raw, TETHER_RPC_RESET, 0, NULL, 0, 2);
    both_raw("a request with id 0", raw, n, 0, ERR, TETHER_ERR_PROTOCOL);

    /* ---- RESET, SHUTDOWN ---- */
    both("RESET", mk_reset, SAME, REP(TETHER_RPC_RESET), 0);
    off_arg = 0;
    len_arg = 4;
    both("COPY_TO an array from before the RESET", mk_copy_to, SAME, ERR, TETHER_ERR_NOT_FOUND);
    lname = "m";
    both("LOAD_MODULE of an upload from before the RESET", mk_load, SAME, ERR,
         TETHER_ERR_NOT_FOUND);
    both("SHUTDOWN", mk_shutdown, SAME, REP(TETHER_RPC_SHUTDOWN), 0);
}

static int setup(void **state) {
    (void)state;
    if (mcu_board_start(&board, false) != 0) {
        return -1;
    }
    /* the board's pools (no sizes: the board's heaps bound them), no OpenCL layer, no upload
     * cache (the board has none) */
    static const char *const args[] = {"--no-opencl", "--upload-cache", "off",    "--pool", "sram",
                                       "--pool",      "psram",          "--pool", "code",   NULL};
    if (daemon_start(&daemon_, args) != 0) {
        return -1;
    }
    daemon_started = true;
    if (tether_transport_tcp_connect(&tcp, "127.0.0.1", (uint16_t)daemon_.port, 1u << 20, 10000)) {
        return -1;
    }
    tcp_open = true;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (tcp_open) {
        tether_transport_close(&tcp);
    }
    tcp_open = false;
    if (daemon_started) {
        daemon_stop(&daemon_);
    }
    daemon_started = false;
    mcu_board_stop(&board);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0); /* the cases' lines in order with cmocka's */
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_agree)};
    return mcu_test_main(argc, argv, tests, sizeof tests / sizeof tests[0], setup, teardown);
}
