/*
 * tether rpc tests: the scripted client session (see session.h).
 */
#include "session.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_server.h"
#include "tether/crt.h"

static int logs_seen;
static char last_log[128];

static void on_log(void *ctx, const tether_rpc_msg *m) {
    (void)ctx;
    logs_seen++;
    tether_rpc_str_copy(m->u.log.text, last_log, sizeof last_log, "log");
}

static int call(tether_rpc_client *c, uint64_t func, tether_rpc_msg *rep, int timeout_ms) {
    static tether_rpc_msg req;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_CALL;
    req.u.call_req.func = func;
    req.u.call_req.abi = TETHER_ABI_PACKED;
    return tether_rpc_client_request(c, &req, rep, timeout_ms);
}

void session_run(tether_transport *t, size_t copy_bytes, bool uart) {
    tether_rpc_client c;
    static tether_rpc_msg req, rep;
    assert_int_equal(tether_rpc_client_init(&c, t, 0, 0), 0);
    c.on_log = on_log;
    logs_seen = 0;

    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_HELLO;
    req.u.hello_req.version = TETHER_RPC_VERSION;
    req.u.hello_req.max_frame = t->max_frame;
    req.u.hello_req.client = tether_rpc_str_c("test");
    if (tether_rpc_client_request(&c, &req, &rep, 5000) != 0)
        fail_msg("HELLO: %s", tether_last_error());
    assert_int_equal(rep.type, TETHER_RPC_HELLO | TETHER_RPC_REPLY);
    assert_true(tether_rpc_str_eq(rep.u.hello_rep.arch, "x86_64"));
    uint32_t peer_frame = rep.u.hello_rep.max_frame;
    uint32_t window = rep.u.hello_rep.window;

    /* chunked COPY_TO, then read it back with COPY_FROM */
    uint8_t *src = malloc(copy_bytes), *back = malloc(copy_bytes);
    for (size_t i = 0; i < copy_bytes; i++)
        src[i] = (uint8_t)(i * 131 + (i >> 9));
    tether_rpc_chunker ch;
    assert_int_equal(tether_rpc_chunker_init(&ch, copy_bytes, peer_frame, window), 0);
    uint64_t off;
    uint32_t len;
    while (tether_rpc_chunker_next(&ch, &off, &len)) {
        memset(&req, 0, sizeof req);
        req.type = TETHER_RPC_COPY_TO;
        req.u.copy_to_req.array = 1;
        req.u.copy_to_req.offset = off;
        req.u.copy_to_req.data.ptr = src + off;
        req.u.copy_to_req.data.len = len;
        if (tether_rpc_client_request(&c, &req, &rep, 5000) != 0)
            fail_msg("COPY_TO at %llu: %s", (unsigned long long)off, tether_last_error());
        assert_int_equal(rep.u.copy_to_rep.written, len);
        assert_int_equal(tether_rpc_chunker_ack(&ch, off, len), 0);
    }
    assert_true(tether_rpc_chunker_done(&ch));
    uint32_t back_chunk = tether_rpc_chunk_max(t->max_frame);
    for (size_t pos = 0; pos < copy_bytes;) {
        size_t n = copy_bytes - pos < back_chunk ? copy_bytes - pos : back_chunk;
        memset(&req, 0, sizeof req);
        req.type = TETHER_RPC_COPY_FROM;
        req.u.copy_from_req.array = 1;
        req.u.copy_from_req.offset = pos;
        req.u.copy_from_req.length = n;
        if (tether_rpc_client_request(&c, &req, &rep, 5000) != 0)
            fail_msg("COPY_FROM at %zu: %s", pos, tether_last_error());
        assert_int_equal(rep.u.copy_from_rep.data.len, n);
        memcpy(back + pos, rep.u.copy_from_rep.data.ptr, n);
        pos += n;
    }
    assert_memory_equal(back, src, copy_bytes);
    free(src);
    free(back);

    /* a LOG notification arrives before the reply */
    assert_int_equal(call(&c, TS_FUNC_LOG, &rep, 5000), 0);
    assert_int_equal(rep.u.call_rep.ret, 42);
    assert_int_equal(logs_seen, 1);
    assert_string_equal(last_log, "calling function 1");

    /* ERROR replies become a status and a message */
    assert_int_equal(call(&c, 12345, &rep, 5000), TETHER_ERR_NOT_FOUND);
    assert_non_null(strstr(tether_last_error(), "no such function"));
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_RESET;
    assert_int_equal(tether_rpc_client_request(&c, &req, &rep, 5000), TETHER_ERR_UNSUPPORTED);

    if (uart) {
        uint64_t dropped = t->stats.frames_dropped, garbage = t->stats.garbage_bytes;
        assert_int_equal(call(&c, TS_FUNC_CORRUPT, &rep, 5000), 0);
        assert_int_equal(rep.u.call_rep.ret, 66);
        assert_true(t->stats.frames_dropped >= dropped + 1);
        assert_true(t->stats.garbage_bytes >= garbage + 3);
    }

    /* a lost reply: the client times out, resends the same id, the device answers from its
     * reply cache without running the call again */
    c.retries = 2;
    assert_int_equal(call(&c, TS_FUNC_LOSE, &rep, 300), 0);
    assert_int_equal(rep.u.call_rep.ret, 77);
    assert_int_equal(call(&c, TS_FUNC_COUNT, &rep, 5000), 0);
    assert_int_equal(rep.u.call_rep.ret, 1);
    c.retries = 0;

    /* a stale duplicate reply (from the resend above, if any) never confuses the next request */
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_SHUTDOWN;
    assert_int_equal(tether_rpc_client_request(&c, &req, &rep, 5000), 0);
    assert_int_equal(rep.type, TETHER_RPC_SHUTDOWN | TETHER_RPC_REPLY);
    tether_rpc_client_close(&c);
}
