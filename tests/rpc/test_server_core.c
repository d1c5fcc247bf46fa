/*
 * The rpc server core (tether/rpc/server.h) with a fake ops table: HELLO/AUTH gating, CALL/TIME
 * validation and argument conversion, exactly one reply per readable frame, the reply cache,
 * id 0 and non-request types, undecodable frames, a reply too large to encode, SHUTDOWN.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tether/crt.h"
#include "tether/rpc.h"

/* ---- the fake server ---- */

static struct {
    int sends; /* messages sent by the core */
    uint8_t last[2048];
    size_t last_len;
    int hellos, invokes, requests;
    bool auth_required;
    char str0[300]; /* the first argument as the invoke op saw it, when a string */
    int64_t int1;
} f;

static int fake_decode(void *ctx, const uint8_t *buf, size_t len, tether_rpc_msg *out) {
    (void)ctx;
    return tether_rpc_tiny_decode(buf, len, out);
}

static int fake_send(void *ctx, const uint8_t *bytes, size_t len) {
    (void)ctx;
    f.sends++;
    assert_true(len <= sizeof f.last);
    memcpy(f.last, bytes, len);
    f.last_len = len;
    return 0;
}

static int fake_hello(void *ctx, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    (void)ctx, (void)req;
    f.hellos++;
    rep->u.hello_rep.version = TETHER_RPC_VERSION;
    rep->u.hello_rep.pointer_bits = 64;
    rep->u.hello_rep.max_frame = 1024;
    rep->u.hello_rep.window = 1;
    rep->u.hello_rep.auth_required = f.auth_required;
    static const uint8_t nonce[TETHER_RPC_NONCE_BYTES] = {1, 2, 3};
    if (f.auth_required) {
        rep->u.hello_rep.nonce.ptr = nonce;
        rep->u.hello_rep.nonce.len = sizeof nonce;
    }
    return 0;
}

static int fake_auth(void *ctx, tether_rpc_bytes mac) {
    (void)ctx;
    return mac.len == 32 && mac.ptr[0] == 42 ? 0 : TETHER_ERR_AUTH;
}

static bool fake_find(void *ctx, uint64_t h, tether_server_func *out) {
    (void)ctx;
    static const tether_server_func fns[] = {
        {"p2", TETHER_ABI_PACKED, 2, false, NULL, 0},
        {"u1", TETHER_ABI_UNPACKED, 1, false, NULL, 0},
        {"k2", TETHER_ABI_PACKED, 2, true, NULL, 0},
        {"any", TETHER_ABI_PACKED, -1, false, NULL, 0},
    };
    if (h < 1 || h > 4) {
        return false;
    }
    *out = fns[h - 1];
    return true;
}

static int fake_invoke(void *ctx, const tether_server_call *c, tether_rpc_msg *rep) {
    (void)ctx;
    f.invokes++;
    f.str0[0] = 0;
    if (c->inv->num_args > 0 && c->codes[0] == TETHER_TYPE_STR) {
        snprintf(f.str0, sizeof f.str0, "%s", c->values[0].v_str);
    }
    if (c->inv->num_args > 1 && c->codes[1] == TETHER_TYPE_INT) {
        f.int1 = c->values[1].v_int64;
    }
    rep->u.call_rep.ret = 7;
    return 0;
}

static uint8_t big[1500];

static int fake_request(void *ctx, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    (void)ctx;
    f.requests++;
    switch (req->type) {
    case TETHER_RPC_ALLOC:
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "fake: no memory for %u dims",
                                (unsigned)req->u.alloc_req.ndim);
    case TETHER_RPC_COPY_FROM: /* larger than the transmit buffer */
        rep->u.copy_from_rep.data.ptr = big;
        rep->u.copy_from_rep.data.len = (uint32_t)req->u.copy_from_req.length;
        return 0;
    default:
        return 0;
    }
}

static const tether_server_ops ops = {fake_decode, fake_send,    fake_hello, fake_auth, fake_find,
                                      fake_invoke, fake_request, NULL,       NULL};

static tether_server srv;
static tether_rpc_msg s_req, s_rep;
static uint8_t tx[1024];
static uint8_t cache_mem[4 * 128];
static tether_rpc_reply_cache cache;
static tether_value values[TETHER_RPC_MAX_ARGS];
static int32_t codes[TETHER_RPC_MAX_ARGS];
static uint32_t next_id;

static int setup(void **state) {
    (void)state;
    memset(&f, 0, sizeof f);
    next_id = 100;
    tether_rpc_reply_cache_init(&cache, cache_mem, sizeof cache_mem, 4);
    tether_server_config cfg = {&ops,   NULL,   &s_req, &s_rep, tx,  sizeof tx,
                                &cache, values, codes,  false,  NULL};
    tether_server_init(&srv, &cfg);
    return 0;
}

/* Sends m (a fresh id unless keep_id) through the core; requires exactly one reply and decodes it
 * into out. Returns the core's result. */
static tether_server_result send_req(tether_rpc_msg *m, bool keep_id, tether_rpc_msg *out) {
    static uint8_t frame[2048];
    if (!keep_id) {
        m->id = next_id++;
    }
    size_t len = 0;
    assert_int_equal(tether_rpc_tiny_encode(m, frame, sizeof frame, &len), 0);
    int before = f.sends;
    tether_server_result r = tether_server_handle_frame(&srv, frame, len);
    assert_int_equal(f.sends, before + 1);
    assert_int_equal(tether_rpc_tiny_decode(f.last, f.last_len, out), 0);
    assert_int_equal(out->id, m->id);
    assert_int_equal(srv.inflight, 0);
    return r;
}

static int32_t error_of(tether_rpc_msg *m, char *msg, size_t n) {
    static tether_rpc_msg rep;
    send_req(m, false, &rep);
    if (rep.type != TETHER_RPC_ERROR) {
        return 0;
    }
    snprintf(msg, n, "%.*s", (int)rep.u.error.message.len, rep.u.error.message.ptr);
    return rep.u.error.code;
}

static void hello(void) {
    tether_rpc_msg m = {.type = TETHER_RPC_HELLO}, rep;
    m.u.hello_req.version = TETHER_RPC_VERSION;
    m.u.hello_req.max_frame = 1024;
    send_req(&m, false, &rep);
    assert_int_equal(rep.type, TETHER_RPC_HELLO | TETHER_RPC_REPLY);
}

/* ---- tests ---- */

static void test_hello_gate(void **state) {
    (void)state;
    char msg[300];
    tether_rpc_msg m = {.type = TETHER_RPC_FREE};
    assert_int_equal(error_of(&m, msg, sizeof msg), TETHER_ERR_STATE);
    assert_string_equal(msg, "FREE before HELLO: a session starts with HELLO (a new connection, "
                             "or the device restarted)");
    assert_int_equal(f.requests, 0);
    /* a wrong protocol version opens nothing */
    tether_rpc_msg h = {.type = TETHER_RPC_HELLO};
    h.u.hello_req.version = 99;
    h.u.hello_req.max_frame = 1024;
    assert_int_equal(error_of(&h, msg, sizeof msg), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(msg, "version 99"));
    assert_int_equal(f.hellos, 0);
    assert_int_equal(error_of(&m, msg, sizeof msg), TETHER_ERR_STATE);
    hello();
    tether_rpc_msg rep;
    send_req(&m, false, &rep);
    assert_int_equal(rep.type, TETHER_RPC_FREE | TETHER_RPC_REPLY);
    assert_int_equal(f.requests, 1);
    /* a handler's error becomes one ERROR with its text */
    tether_rpc_msg a = {.type = TETHER_RPC_ALLOC};
    a.u.alloc_req.ndim = 1;
    a.u.alloc_req.dtype_bits = 8;
    a.u.alloc_req.dtype_lanes = 1;
    assert_int_equal(error_of(&a, msg, sizeof msg), TETHER_ERR_OUT_OF_MEMORY);
    assert_string_equal(msg, "fake: no memory for 1 dims");
    /* AUTH on a device that needs none: accepted */
    static uint8_t mac[32];
    tether_rpc_msg au = {.type = TETHER_RPC_AUTH};
    au.u.auth_req.mac.ptr = mac;
    au.u.auth_req.mac.len = 32;
    send_req(&au, false, &rep);
    assert_int_equal(rep.type, TETHER_RPC_AUTH | TETHER_RPC_REPLY);
}

static void test_auth_gate(void **state) {
    (void)state;
    f.auth_required = true;
    hello();
    char msg[300];
    tether_rpc_msg m = {.type = TETHER_RPC_RESET};
    assert_int_equal(error_of(&m, msg, sizeof msg), TETHER_ERR_AUTH);
    assert_string_equal(msg, "RESET refused: this device requires authentication (AUTH) first");
    static uint8_t mac[32];
    tether_rpc_msg au = {.type = TETHER_RPC_AUTH}, rep;
    au.u.auth_req.mac.ptr = mac;
    au.u.auth_req.mac.len = 32;
    assert_int_equal(send_req(&au, false, &rep), TETHER_SERVER_CLOSE);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.u.error.code, TETHER_ERR_AUTH);
    /* a new session (in tetherd a new process) with the right mac */
    hello();
    mac[0] = 42;
    assert_int_equal(send_req(&au, false, &rep), TETHER_SERVER_CONTINUE);
    assert_int_equal(rep.type, TETHER_RPC_AUTH | TETHER_RPC_REPLY);
    send_req(&m, false, &rep);
    assert_int_equal(rep.type, TETHER_RPC_RESET | TETHER_RPC_REPLY);
    assert_int_equal(f.requests, 1);
}

static void call(tether_rpc_msg *m, uint64_t fn, uint32_t abi, uint32_t n) {
    memset(m, 0, sizeof *m);
    m->type = TETHER_RPC_CALL;
    m->u.call_req.func = fn;
    m->u.call_req.abi = abi;
    m->u.call_req.num_args = n;
    for (uint32_t i = 0; i < n; i++) {
        m->u.call_req.args[i].type_code = TETHER_TYPE_NULL;
    }
}

static void test_invoke_validation(void **state) {
    (void)state;
    hello();
    static tether_rpc_msg m;
    char msg[300];
    struct {
        uint64_t fn;
        uint32_t abi, n, work_dim;
        int32_t code0; /* type code of argument 0 (NULL when -1) */
        int32_t want;
        const char *text;
    } cases[] = {
        {0, 0, 0, 0, -1, TETHER_ERR_NOT_FOUND, "CALL: no function with handle 0"},
        {9, 0, 0, 0, -1, TETHER_ERR_NOT_FOUND, "CALL: no function with handle 9"},
        {1, 1, 2, 0, -1, TETHER_ERR_MISMATCH,
         "CALL 'p2': the caller expects the unpacked ABI but the function is packed"},
        {1, 0, 3, 0, -1, TETHER_ERR_MISMATCH, "CALL 'p2': takes 2 arguments, 3 given"},
        {1, 0, 2, 1, -1, TETHER_ERR_UNSUPPORTED, "CALL 'p2': an NDRange launch needs"},
        {2, 1, 1, 0, TETHER_TYPE_STR, TETHER_ERR_MISMATCH,
         "CALL 'u1': argument 0 has type code 11; unpacked functions take only arrays"},
        {2, 1, 1, 0, TETHER_TYPE_INT, TETHER_ERR_MISMATCH, "argument 0 has type code 0"},
        {3, 0, 2, 0, -1, TETHER_ERR_INVALID_ARG, "CALL 'k2': an OpenCL kernel needs"},
        {3, 0, 2, 1, -1, TETHER_ERR_UNSUPPORTED, "OpenCL kernels take only arrays and numbers"},
        {3, 0, 2, 1, TETHER_TYPE_STR, TETHER_ERR_UNSUPPORTED, "argument 0 has type code 11"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        call(&m, cases[i].fn, cases[i].abi, cases[i].n);
        m.u.call_req.work_dim = cases[i].work_dim;
        m.u.call_req.global[0] = 8;
        if (cases[i].code0 >= 0) {
            m.u.call_req.args[0].type_code = cases[i].code0;
            if (cases[i].code0 == TETHER_TYPE_STR) {
                m.u.call_req.args[0].v.v_str = tether_rpc_str_c("s");
            }
        }
        if (cases[i].fn == 3 && cases[i].code0 < 0) { /* a kernel's null arguments */
            m.u.call_req.args[0].type_code = TETHER_TYPE_NULL;
        }
        int32_t code = error_of(&m, msg, sizeof msg);
        if (code != cases[i].want || !strstr(msg, cases[i].text)) {
            fail_msg("case %zu: code %d '%s'", i, (int)code, msg);
        }
    }
    assert_int_equal(f.invokes, 0);
    /* valid: kernel with arrays and numbers, unpacked with arrays/null, packed with strings */
    call(&m, 3, 0, 2);
    m.u.call_req.work_dim = 1;
    m.u.call_req.global[0] = 8;
    m.u.call_req.args[0].type_code = TETHER_TYPE_DLTENSOR;
    m.u.call_req.args[1].type_code = TETHER_TYPE_FLOAT;
    tether_rpc_msg rep;
    send_req(&m, false, &rep);
    assert_int_equal(rep.type, TETHER_RPC_CALL | TETHER_RPC_REPLY);
    assert_int_equal(rep.u.call_rep.ret, 7);
    assert_int_equal(rep.u.call_rep.ret_value.type_code, TETHER_TYPE_NULL);
    call(&m, 2, 1, 1);
    m.u.call_req.args[0].type_code = TETHER_TYPE_HANDLE;
    send_req(&m, false, &rep);
    assert_int_equal(rep.type, TETHER_RPC_CALL | TETHER_RPC_REPLY);
    call(&m, 1, 0, 2);
    m.u.call_req.args[0].type_code = TETHER_TYPE_STR;
    m.u.call_req.args[0].v.v_str = tether_rpc_str_c("hello");
    m.u.call_req.args[1].type_code = TETHER_TYPE_INT;
    m.u.call_req.args[1].v.v_int = -12;
    send_req(&m, false, &rep);
    assert_int_equal(rep.type, TETHER_RPC_CALL | TETHER_RPC_REPLY);
    assert_string_equal(f.str0, "hello");
    assert_int_equal(f.int1, -12);
    assert_int_equal(f.invokes, 3);
    /* strings: 255 bytes + NUL fit the arena exactly, one more byte does not */
    static char text[300];
    memset(text, 'a', sizeof text);
    call(&m, 4, 0, 1);
    m.u.call_req.args[0].type_code = TETHER_TYPE_STR;
    m.u.call_req.args[0].v.v_str.ptr = text;
    m.u.call_req.args[0].v.v_str.len = TETHER_SERVER_STR_BYTES - 1;
    send_req(&m, false, &rep);
    assert_int_equal(rep.type, TETHER_RPC_CALL | TETHER_RPC_REPLY);
    assert_int_equal(strlen(f.str0), TETHER_SERVER_STR_BYTES - 1);
    m.u.call_req.args[0].v.v_str.len = TETHER_SERVER_STR_BYTES;
    assert_int_equal(error_of(&m, msg, sizeof msg), TETHER_ERR_LIMIT);
    assert_non_null(strstr(msg, "string arguments exceed 256 bytes"));
    /* TIME goes through the same checks */
    memset(&m, 0, sizeof m);
    m.type = TETHER_RPC_TIME;
    m.u.time_req.invoke.func = 1;
    m.u.time_req.invoke.abi = 1;
    m.u.time_req.number = 1;
    m.u.time_req.repeat = 1;
    assert_int_equal(error_of(&m, msg, sizeof msg), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(msg, "TIME 'p2'"));
    /* and the TIME parameters, checked by the core even when no decoder lets them through */
    tether_server_call c;
    tether_rpc_time_req t = {0};
    t.invoke.func = 4;
    t.number = 0;
    t.repeat = 1;
    assert_int_equal(tether_server_check_invoke(&srv, TETHER_RPC_TIME, &t.invoke, &t, &c),
                     TETHER_ERR_INVALID_ARG);
    t.number = 1;
    assert_int_equal(tether_server_check_invoke(&srv, TETHER_RPC_TIME, &t.invoke, &t, &c), 0);
    assert_string_equal(c.fn.name, "any");
}

static void test_one_reply_and_cache(void **state) {
    (void)state;
    hello();
    static tether_rpc_msg m, rep;
    call(&m, 4, 0, 0);
    send_req(&m, false, &rep);
    uint8_t first[2048];
    size_t first_len = f.last_len;
    memcpy(first, f.last, first_len);
    /* the same id again: the cached bytes, not a second call */
    send_req(&m, true, &rep);
    assert_int_equal(f.invokes, 1);
    assert_int_equal(f.last_len, first_len);
    assert_memory_equal(f.last, first, first_len);
    /* a new HELLO clears the cache */
    hello();
    send_req(&m, true, &rep);
    assert_int_equal(f.invokes, 2);
    /* id 0, a reply type, an undecodable body with a readable header: one ERROR each */
    char msg[300];
    const uint8_t reset_id0[] = {0x92, 0x0e, 0x00}; /* [RESET, 0]: encoders refuse id 0 */
    int n0 = f.sends;
    tether_server_handle_frame(&srv, reset_id0, sizeof reset_id0);
    assert_int_equal(f.sends, n0 + 1);
    assert_int_equal(tether_rpc_tiny_decode(f.last, f.last_len, &rep), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.u.error.code, TETHER_ERR_PROTOCOL);
    tether_rpc_msg r = {.type = TETHER_RPC_FREE | TETHER_RPC_REPLY};
    assert_int_equal(error_of(&r, msg, sizeof msg), TETHER_ERR_PROTOCOL);
    assert_string_equal(msg, "FREE reply (type 73) is not a request");
    const uint8_t short_free[] = {0x92, 0x09, 0x05}; /* [FREE, 5]: the handle is missing */
    int before = f.sends;
    tether_server_handle_frame(&srv, short_free, sizeof short_free);
    assert_int_equal(f.sends, before + 1);
    assert_int_equal(tether_rpc_tiny_decode(f.last, f.last_len, &rep), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.id, 5);
    assert_int_equal(rep.u.error.code, TETHER_ERR_PROTOCOL);
    /* no readable header: dropped, nothing sent */
    const uint8_t junk[] = {0xc1, 0x00};
    tether_server_handle_frame(&srv, junk, sizeof junk);
    assert_int_equal(f.sends, before + 1);
    /* a reply larger than the transmit buffer becomes one ERROR */
    tether_rpc_msg cf = {.type = TETHER_RPC_COPY_FROM};
    cf.u.copy_from_req.array = 1;
    cf.u.copy_from_req.length = sizeof big;
    int32_t code = error_of(&cf, msg, sizeof msg);
    assert_true(code == TETHER_ERR_LIMIT || code == TETHER_ERR_OUT_OF_MEMORY);
    /* SHUTDOWN: replied, then CLOSE */
    tether_rpc_msg sd = {.type = TETHER_RPC_SHUTDOWN};
    assert_int_equal(send_req(&sd, false, &rep), TETHER_SERVER_CLOSE);
    assert_int_equal(rep.type, TETHER_RPC_SHUTDOWN | TETHER_RPC_REPLY);
}

/* An unknown type whose id can be read gets one ERROR with that id; on a stream
 * (close_on_garbage) an unreadable frame gets ERROR id 0 and closes the session, on a UART it is
 * dropped. */
static void test_unknown_and_garbage(void **state) {
    (void)state;
    tether_rpc_msg rep;
    const uint8_t unknown[] = {0x92, 99, 5}; /* [99, 5] */
    int n = f.sends;
    assert_int_equal(tether_server_handle_frame(&srv, unknown, sizeof unknown),
                     TETHER_SERVER_CONTINUE);
    assert_int_equal(f.sends, n + 1);
    assert_int_equal(tether_rpc_tiny_decode(f.last, f.last_len, &rep), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.id, 5);
    assert_int_equal(rep.u.error.code, TETHER_ERR_PROTOCOL);
    assert_memory_equal(rep.u.error.message.ptr, "unknown message type 99", 23);
    const uint8_t junk[] = {0xc1, 0x00};
    n = f.sends;
    assert_int_equal(tether_server_handle_frame(&srv, junk, sizeof junk), TETHER_SERVER_CONTINUE);
    assert_int_equal(f.sends, n); /* UART: dropped */
    srv.cfg.close_on_garbage = true;
    assert_int_equal(tether_server_handle_frame(&srv, junk, sizeof junk), TETHER_SERVER_CLOSE);
    assert_int_equal(f.sends, n + 1);
    assert_int_equal(tether_rpc_tiny_decode(f.last, f.last_len, &rep), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.id, 0);
    assert_int_equal(rep.u.error.code, TETHER_ERR_PROTOCOL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_unknown_and_garbage, setup),
        cmocka_unit_test_setup(test_hello_gate, setup),
        cmocka_unit_test_setup(test_auth_gate, setup),
        cmocka_unit_test_setup(test_invoke_validation, setup),
        cmocka_unit_test_setup(test_one_reply_and_cache, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
