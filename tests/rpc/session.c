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

/* The pipelined transfers (tether_rpc_client_pipeline): make/take callbacks over one buffer,
 * counting how many requests were out before the first reply came back. */
typedef struct pipe_ctx {
    uint8_t *buf;
    uint32_t type;
    uint32_t made, taken, made_at_first_take;
    uint64_t next_take; /* replies arrive in order */
    uint64_t base;      /* the device offset of buf[0] */
} pipe_ctx;

static int pipe_make(void *ctx, uint64_t offset, size_t len, tether_rpc_msg *req) {
    pipe_ctx *p = ctx;
    p->made++;
    req->type = p->type;
    if (p->type == TETHER_RPC_COPY_TO) {
        req->u.copy_to_req.array = 1;
        req->u.copy_to_req.offset = p->base + offset;
        req->u.copy_to_req.data.ptr = p->buf + offset;
        req->u.copy_to_req.data.len = (uint32_t)len;
    } else {
        req->u.copy_from_req.array = 1;
        req->u.copy_from_req.offset = p->base + offset;
        req->u.copy_from_req.length = len;
    }
    return 0;
}

static int pipe_take(void *ctx, uint64_t offset, size_t len, const tether_rpc_msg *rep) {
    pipe_ctx *p = ctx;
    if (p->taken++ == 0) {
        p->made_at_first_take = p->made;
    }
    assert_int_equal(offset, p->next_take);
    p->next_take = offset + len;
    if (p->type == TETHER_RPC_COPY_TO) {
        assert_int_equal(rep->u.copy_to_rep.written, len);
    } else {
        assert_int_equal(rep->u.copy_from_rep.data.len, len);
        memcpy(p->buf + offset, rep->u.copy_from_rep.data.ptr, len);
    }
    return 0;
}

/* A COPY_FROM pipeline with copy_from_into: every reply's data lands in the caller's memory;
 * counts the replies whose data was read straight there (take gets it pointing there). */
typedef struct into_ctx {
    pipe_ctx p; /* first: pipe_make makes its requests */
    uint8_t *into;
    uint32_t placed, taken;
} into_ctx;

static int into_take(void *ctx, uint64_t offset, size_t len, const tether_rpc_msg *rep) {
    into_ctx *p = ctx;
    p->taken++;
    assert_int_equal(rep->u.copy_from_rep.data.len, len);
    if (rep->u.copy_from_rep.data.ptr == p->into + offset) {
        p->placed++;
    } else {
        memcpy(p->into + offset, rep->u.copy_from_rep.data.ptr, len);
    }
    return 0;
}

static void pipelined_copy(tether_rpc_client *c, uint32_t peer_frame, size_t bytes) {
    uint8_t *src = malloc(bytes), *back = calloc(1, bytes);
    for (size_t i = 0; i < bytes; i++) {
        src[i] = (uint8_t)(i * 7 + (i >> 11) + 3);
    }
    size_t chunk = tether_rpc_chunk_max(peer_frame);
    size_t chunks = (bytes + chunk - 1) / chunk;
    pipe_ctx p = {.buf = src, .type = TETHER_RPC_COPY_TO};
    if (tether_rpc_client_pipeline(c, bytes, chunk, 4, 5000, pipe_make, pipe_take, &p) != 0) {
        fail_msg("pipelined COPY_TO: %s", tether_last_error());
    }
    assert_int_equal(p.made, chunks);
    assert_int_equal(p.taken, chunks);
    assert_int_equal(p.next_take, bytes);
    /* four requests were out before the first reply was taken */
    assert_int_equal(p.made_at_first_take, chunks < 4 ? chunks : 4);
    pipe_ctx q = {.buf = back, .type = TETHER_RPC_COPY_FROM};
    if (tether_rpc_client_pipeline(c, bytes, chunk, 8, 5000, pipe_make, pipe_take, &q) != 0) {
        fail_msg("pipelined COPY_FROM: %s", tether_last_error());
    }
    assert_int_equal(q.made_at_first_take, chunks < 8 ? chunks : 8);
    assert_memory_equal(back, src, bytes);
    /* COPY_FROM straight into the caller's memory: on a stream every reply of 16 KiB or more
     * is read there (none through the frame buffer), on a serial line none is */
    memset(back, 0, bytes);
    into_ctx in = {.p = {.buf = back, .type = TETHER_RPC_COPY_FROM}, .into = back};
    c->copy_from_into = back;
    if (tether_rpc_client_pipeline(c, bytes, chunk, 4, 5000, pipe_make, into_take, &in) != 0) {
        fail_msg("COPY_FROM into the caller's memory: %s", tether_last_error());
    }
    assert_null(c->copy_from_into); /* this pipeline's alone */
    assert_int_equal(in.taken, chunks);
    size_t large = bytes / chunk + (bytes % chunk >= 16384 ? 1 : 0); /* replies >= 16 KiB */
    if (c->t->kind == TETHER_TRANSPORT_UART || chunk < 16384) {
        assert_int_equal(in.placed, 0);
    } else {
        assert_int_equal(in.placed, large);
    }
    assert_null(c->t->placed);
    assert_memory_equal(back, src, bytes);
    /* total 0 is one request of length 0 */
    pipe_ctx z = {.buf = src, .type = TETHER_RPC_COPY_TO};
    assert_int_equal(tether_rpc_client_pipeline(c, 0, chunk, 4, 5000, pipe_make, pipe_take, &z), 0);
    assert_int_equal(z.made, 1);
    assert_int_equal(z.taken, 1);
    /* an ERROR reply (a copy past the device's array) ends it with the device's status */
    pipe_ctx e = {.buf = src, .type = TETHER_RPC_COPY_FROM, .base = TS_MEM};
    assert_int_equal(tether_rpc_client_pipeline(c, 1, chunk, 4, 5000, pipe_make, pipe_take, &e),
                     TETHER_ERR_LIMIT);
    assert_int_equal(e.taken, 0);
    assert_non_null(strstr(tether_last_error(), "copy past the array"));
    free(src);
    free(back);
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
    if (tether_rpc_client_request(&c, &req, &rep, 5000) != 0) {
        fail_msg("HELLO: %s", tether_last_error());
    }
    assert_int_equal(rep.type, TETHER_RPC_HELLO | TETHER_RPC_REPLY);
    assert_true(tether_rpc_str_eq(rep.u.hello_rep.arch, "x86_64"));
    uint32_t peer_frame = rep.u.hello_rep.max_frame;
    uint32_t window = rep.u.hello_rep.window;

    /* chunked COPY_TO, then read it back with COPY_FROM */
    uint8_t *src = malloc(copy_bytes), *back = malloc(copy_bytes);
    for (size_t i = 0; i < copy_bytes; i++) {
        src[i] = (uint8_t)(i * 131 + (i >> 9));
    }
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
        if (tether_rpc_client_request(&c, &req, &rep, 5000) != 0) {
            fail_msg("COPY_TO at %llu: %s", (unsigned long long)off, tether_last_error());
        }
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
        if (tether_rpc_client_request(&c, &req, &rep, 5000) != 0) {
            fail_msg("COPY_FROM at %zu: %s", pos, tether_last_error());
        }
        assert_int_equal(rep.u.copy_from_rep.data.len, n);
        memcpy(back + pos, rep.u.copy_from_rep.data.ptr, n);
        pos += n;
    }
    assert_memory_equal(back, src, copy_bytes);
    free(src);
    free(back);

    /* the same through the pipeline, several requests in flight; after the ERROR that ends
     * the last one the replies still in flight are skipped as stale by the next request */
    pipelined_copy(&c, peer_frame < t->max_frame ? peer_frame : (uint32_t)t->max_frame, copy_bytes);

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
