/*
 * The two device servers agree: one table of requests sent to tetherd (started here on
 * 127.0.0.1, spoken to over TCP with the tiny codec) and to the MCU firmware on QEMU
 * mps2-an385; every request must get the same reply type, error code and error message from
 * both (the request core is shared: rpc/src/server_core.c, docs/rpc.md "Server core").
 *
 * Cases: a request before HELLO, an unknown function handle, the wrong ABI, the wrong argument
 * count, a string argument to an unpacked function, a string argument to a packed function
 * (accepted by both), string arguments over the 256-byte limit, a work size on a CPU function,
 * AUTH on a device that needs none, a non-request type. Functions are looked up by name in the
 * system library both devices share (tether.null: packed, any arguments; tether.nop1: unpacked,
 * one argument). Both servers are stopped by the teardown, also when a case fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "mcu_client.h"
#include "tether/rpc.h"

static mcu_board board;
static test_daemon daemon_;
static bool daemon_started;
static tether_transport tcp;
static bool tcp_open;
static uint32_t tcp_next_id = 1;
static uint8_t tcp_tx[64 * 1024];

/* What one server answered, copied out of its receive buffer. */
typedef struct outcome {
    uint32_t type;
    int32_t code; /* ERROR only */
    char msg[512];
    int32_t ret; /* CALL reply only */
} outcome;

static void take(const tether_rpc_msg *rep, outcome *o) {
    memset(o, 0, sizeof *o);
    o->type = rep->type;
    if (rep->type == TETHER_RPC_ERROR) {
        o->code = rep->u.error.code;
        snprintf(o->msg, sizeof o->msg, "%.*s", (int)rep->u.error.message.len,
                 rep->u.error.message.ptr ? rep->u.error.message.ptr : "");
    } else if (rep->type == (TETHER_RPC_CALL | TETHER_RPC_REPLY)) {
        o->ret = rep->u.call_rep.ret;
    }
}

static void tcp_request(tether_rpc_msg *req, outcome *o) {
    req->id = tcp_next_id++;
    size_t len = 0;
    assert_int_equal(tether_rpc_tiny_encode(req, tcp_tx, sizeof tcp_tx, &len), 0);
    assert_int_equal(tether_transport_send(&tcp, tcp_tx, len, 10000), 0);
    for (;;) {
        const uint8_t *buf;
        size_t n;
        assert_int_equal(tether_transport_recv(&tcp, &buf, &n, 10000), 0);
        static tether_rpc_msg rep;
        assert_int_equal(tether_rpc_tiny_decode(buf, n, &rep), 0);
        if (rep.type == TETHER_RPC_LOG)
            continue;
        assert_int_equal(rep.id, req->id);
        take(&rep, o);
        return;
    }
}

static void mcu_req(tether_rpc_msg *req, outcome *o) {
    static tether_rpc_msg rep;
    assert_int_equal(mcu_request(&board, req, &rep, 10000), 0);
    take(&rep, o);
}

/* Sends the request built by `make` (given each server's function handles) to both servers and
 * requires the same outcome; returns it (tetherd's). */
typedef struct handles {
    uint64_t null_fn; /* tether.null */
    uint64_t nop1_fn; /* tether.nop1 */
} handles;

static handles h_tcp, h_mcu;

typedef void (*make_fn)(const handles *h, tether_rpc_msg *req);

static outcome both(const char *what, make_fn make) {
    static tether_rpc_msg req;
    outcome a, b;
    memset(&req, 0, sizeof req);
    make(&h_tcp, &req);
    tcp_request(&req, &a);
    memset(&req, 0, sizeof req);
    make(&h_mcu, &req);
    mcu_req(&req, &b);
    printf("%-34s tetherd: type %u code %d '%s'\n%-34s mcu:     type %u code %d '%s'\n", what,
           (unsigned)a.type, (int)a.code, a.msg, "", (unsigned)b.type, (int)b.code, b.msg);
    assert_int_equal(a.type, b.type);
    assert_int_equal(a.code, b.code);
    assert_string_equal(a.msg, b.msg);
    assert_int_equal(a.ret, b.ret);
    return a;
}

static uint64_t get_function(bool on_mcu, const char *name) {
    static tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_GET_FUNCTION;
    req.u.get_function_req.name = tether_rpc_str_c(name);
    if (on_mcu) {
        assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
        assert_int_equal(rep.type, TETHER_RPC_GET_FUNCTION | TETHER_RPC_REPLY);
        return rep.u.get_function_rep.func;
    }
    req.id = tcp_next_id++;
    size_t len = 0;
    assert_int_equal(tether_rpc_tiny_encode(&req, tcp_tx, sizeof tcp_tx, &len), 0);
    assert_int_equal(tether_transport_send(&tcp, tcp_tx, len, 10000), 0);
    const uint8_t *buf;
    size_t n;
    do {
        assert_int_equal(tether_transport_recv(&tcp, &buf, &n, 10000), 0);
        assert_int_equal(tether_rpc_tiny_decode(buf, n, &rep), 0);
    } while (rep.type == TETHER_RPC_LOG);
    assert_int_equal(rep.type, TETHER_RPC_GET_FUNCTION | TETHER_RPC_REPLY);
    return rep.u.get_function_rep.func;
}

/* ---- the requests ---- */

static void mk_alloc(const handles *h, tether_rpc_msg *r) {
    (void)h;
    r->type = TETHER_RPC_ALLOC;
    r->u.alloc_req.ndim = 1;
    r->u.alloc_req.shape[0] = 4;
    r->u.alloc_req.dtype_code = kDLFloat;
    r->u.alloc_req.dtype_bits = 32;
    r->u.alloc_req.dtype_lanes = 1;
}

static void mk_hello(const handles *h, tether_rpc_msg *r) {
    (void)h;
    r->type = TETHER_RPC_HELLO;
    r->u.hello_req.version = TETHER_RPC_VERSION;
    r->u.hello_req.max_frame = 65535;
    r->u.hello_req.client = tether_rpc_str_c("test_mcu_agree");
}

static void mk_unknown_handle(const handles *h, tether_rpc_msg *r) {
    (void)h;
    r->type = TETHER_RPC_CALL;
    r->u.call_req.func = 999999;
    r->u.call_req.abi = TETHER_ABI_PACKED;
}

static void mk_wrong_abi(const handles *h, tether_rpc_msg *r) {
    r->type = TETHER_RPC_CALL;
    r->u.call_req.func = h->null_fn;
    r->u.call_req.abi = TETHER_ABI_UNPACKED;
}

static void mk_wrong_count(const handles *h, tether_rpc_msg *r) {
    r->type = TETHER_RPC_CALL;
    r->u.call_req.func = h->nop1_fn;
    r->u.call_req.abi = TETHER_ABI_UNPACKED;
    r->u.call_req.num_args = 2;
    r->u.call_req.args[0].type_code = TETHER_TYPE_NULL;
    r->u.call_req.args[1].type_code = TETHER_TYPE_NULL;
}

static void mk_str_unpacked(const handles *h, tether_rpc_msg *r) {
    r->type = TETHER_RPC_CALL;
    r->u.call_req.func = h->nop1_fn;
    r->u.call_req.abi = TETHER_ABI_UNPACKED;
    r->u.call_req.num_args = 1;
    r->u.call_req.args[0].type_code = TETHER_TYPE_STR;
    r->u.call_req.args[0].v.v_str = tether_rpc_str_c("text");
}

static void mk_str_packed(const handles *h, tether_rpc_msg *r) {
    r->type = TETHER_RPC_CALL;
    r->u.call_req.func = h->null_fn;
    r->u.call_req.abi = TETHER_ABI_PACKED;
    r->u.call_req.num_args = 2;
    r->u.call_req.args[0].type_code = TETHER_TYPE_STR;
    r->u.call_req.args[0].v.v_str = tether_rpc_str_c("hello");
    r->u.call_req.args[1].type_code = TETHER_TYPE_INT;
    r->u.call_req.args[1].v.v_int = -3;
}

static char long_text[200];

static void mk_str_too_long(const handles *h, tether_rpc_msg *r) {
    r->type = TETHER_RPC_CALL;
    r->u.call_req.func = h->null_fn;
    r->u.call_req.abi = TETHER_ABI_PACKED;
    r->u.call_req.num_args = 2;
    for (int i = 0; i < 2; i++) {
        r->u.call_req.args[i].type_code = TETHER_TYPE_STR;
        r->u.call_req.args[i].v.v_str.ptr = long_text;
        r->u.call_req.args[i].v.v_str.len = sizeof long_text;
    }
}

static void mk_work_dim(const handles *h, tether_rpc_msg *r) {
    r->type = TETHER_RPC_CALL;
    r->u.call_req.func = h->null_fn;
    r->u.call_req.abi = TETHER_ABI_PACKED;
    r->u.call_req.work_dim = 1;
    r->u.call_req.global[0] = 4;
}

static uint8_t mac[32];

static void mk_auth(const handles *h, tether_rpc_msg *r) {
    (void)h;
    r->type = TETHER_RPC_AUTH;
    r->u.auth_req.mac.ptr = mac;
    r->u.auth_req.mac.len = sizeof mac;
}

static void mk_reply_type(const handles *h, tether_rpc_msg *r) {
    (void)h;
    r->type = TETHER_RPC_RESET | TETHER_RPC_REPLY;
}

static void test_agree(void **state) {
    (void)state;
    /* Before HELLO: a fresh connection / a freshly booted board. */
    outcome o = both("ALLOC before HELLO", mk_alloc);
    assert_int_equal(o.code, TETHER_ERR_STATE);
    assert_non_null(strstr(o.msg, "before HELLO"));

    o = both("HELLO", mk_hello);
    assert_int_equal(o.type, TETHER_RPC_HELLO | TETHER_RPC_REPLY);
    h_tcp.null_fn = get_function(false, "tether.null");
    h_tcp.nop1_fn = get_function(false, "tether.nop1");
    h_mcu.null_fn = get_function(true, "tether.null");
    h_mcu.nop1_fn = get_function(true, "tether.nop1");

    o = both("unknown function handle", mk_unknown_handle);
    assert_int_equal(o.code, TETHER_ERR_NOT_FOUND);
    assert_non_null(strstr(o.msg, "no function with handle 999999"));

    o = both("wrong ABI", mk_wrong_abi);
    assert_int_equal(o.code, TETHER_ERR_MISMATCH);
    assert_non_null(strstr(o.msg, "'tether.null'"));

    o = both("wrong argument count", mk_wrong_count);
    assert_int_equal(o.code, TETHER_ERR_MISMATCH);
    assert_non_null(strstr(o.msg, "takes 1 arguments, 2 given"));

    o = both("string argument, unpacked function", mk_str_unpacked);
    assert_int_equal(o.code, TETHER_ERR_MISMATCH);

    o = both("string argument, packed function", mk_str_packed);
    assert_int_equal(o.type, TETHER_RPC_CALL | TETHER_RPC_REPLY);
    assert_int_equal(o.ret, 0);

    memset(long_text, 's', sizeof long_text);
    o = both("string arguments over 256 bytes", mk_str_too_long);
    assert_int_equal(o.code, TETHER_ERR_LIMIT);

    o = both("work size on a CPU function", mk_work_dim);
    assert_int_equal(o.code, TETHER_ERR_UNSUPPORTED);

    o = both("AUTH without auth_required", mk_auth);
    assert_int_equal(o.type, TETHER_RPC_AUTH | TETHER_RPC_REPLY);

    o = both("a reply type as a request", mk_reply_type);
    assert_int_equal(o.code, TETHER_ERR_PROTOCOL);
}

static int setup(void **state) {
    (void)state;
    if (mcu_board_start(&board, false) != 0)
        return -1;
    if (daemon_start(&daemon_, NULL) != 0)
        return -1;
    daemon_started = true;
    if (tether_transport_tcp_connect(&tcp, "127.0.0.1", (uint16_t)daemon_.port, 1u << 20, 10000))
        return -1;
    tcp_open = true;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (tcp_open)
        tether_transport_close(&tcp);
    tcp_open = false;
    if (daemon_started)
        daemon_stop(&daemon_);
    daemon_started = false;
    mcu_board_stop(&board);
    return 0;
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_agree)};
    return mcu_test_main(argc, argv, tests, sizeof tests / sizeof tests[0], setup, teardown);
}
