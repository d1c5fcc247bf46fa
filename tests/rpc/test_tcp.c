/*
 * tether rpc tests (integration): TCP over 127.0.0.1 and ::1. The device side is the libuv
 * listener running in a second thread; each accepted connection (a plain blocking fd) is served
 * by the test server; the client is the blocking transport + tether_rpc_client in this thread.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "session.h"
#include "test_server.h"
#include "tether/crt.h"

typedef struct srv {
    uv_loop_t loop;
    tether_tcp_listener *l;
    char peer[96];
    int served;
    int result;
    ts_stats st;
} srv;

static void on_accept(void *ctx, int fd, const char *peer) {
    srv *s = ctx;
    snprintf(s->peer, sizeof s->peer, "%s", peer);
    tether_transport t;
    if (tether_transport_fd_open(&t, TETHER_TRANSPORT_TCP, fd, fd, 65536, true) != 0) {
        s->result = -1;
        close(fd);
    } else {
        s->result = ts_serve(&t, &s->st);
        tether_transport_close(&t);
    }
    s->served++;
    tether_tcp_listener_close(s->l); /* one session per test: the loop then ends */
}

static void *loop_thread(void *arg) {
    srv *s = arg;
    uv_run(&s->loop, UV_RUN_DEFAULT);
    return NULL;
}

static void run_over(const char *host) {
    static srv s;
    memset(&s, 0, sizeof s);
    assert_int_equal(uv_loop_init(&s.loop), 0);
    int rc = tether_tcp_listen(&s.loop, host, 0, on_accept, &s, &s.l);
    if (rc != 0 && strcmp(host, "::1") == 0) {
        uv_loop_close(&s.loop);
        skip(); /* no IPv6 loopback on this machine */
    }
    if (rc) {
        fail_msg("listen on %s: %s", host, tether_last_error());
    }
    uint16_t port = tether_tcp_listener_port(s.l);
    assert_true(port > 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, loop_thread, &s), 0);

    tether_transport t;
    if (tether_transport_tcp_connect(&t, host, port, 0, 5000) != 0) {
        fail_msg("connect to %s:%u: %s", host, port, tether_last_error());
    }
    assert_int_equal(t.kind, TETHER_TRANSPORT_TCP);
    session_run(&t, 1024 * 1024 + 5, false);
    tether_transport_close(&t);
    pthread_join(th, NULL);
    assert_int_equal(uv_loop_close(&s.loop), 0);
    assert_int_equal(s.served, 1);
    assert_int_equal(s.result, 0);
    assert_true(s.st.duplicates >= 1);
    assert_true(s.st.copied >= 1024 * 1024 + 5);
    if (strcmp(host, "::1") == 0) {
        assert_non_null(strstr(s.peer, "[::1]:"));
    } else {
        assert_non_null(strstr(s.peer, "127.0.0.1:"));
    }
}

static void test_tcp_ipv4(void **state) {
    (void)state;
    run_over("127.0.0.1");
}

static void test_tcp_ipv6(void **state) {
    (void)state;
    run_over("::1");
}

/* Connection refused and closed-peer errors are reported, not crashes. */
static void test_tcp_errors(void **state) {
    (void)state;
    uv_loop_t loop;
    tether_tcp_listener *l;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(tether_tcp_listen(&loop, "127.0.0.1", 0, NULL, NULL, &l),
                     TETHER_ERR_INVALID_ARG);
    /* find a free port, then close it again: connecting there is refused */
    srv s;
    memset(&s, 0, sizeof s);
    assert_int_equal(tether_tcp_listen(&loop, "127.0.0.1", 0, on_accept, &s, &l), 0);
    uint16_t port = tether_tcp_listener_port(l);
    tether_tcp_listener_close(l);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    tether_transport t;
    assert_int_equal(tether_transport_tcp_connect(&t, "127.0.0.1", port, 0, 2000), TETHER_ERR_IO);
    assert_non_null(strstr(tether_last_error(), "cannot connect"));
    /* a transport on a closed socket: recv reports the peer closing */
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(tether_transport_fd_open(&t, TETHER_TRANSPORT_TCP, sv[0], sv[0], 0, true), 0);
    /* a header announcing more than max_frame: the stream is refused */
    const uint8_t hdr[4] = {0x7f, 0, 0, 0};
    assert_int_equal(write(sv[1], hdr, 4), 4);
    const uint8_t *m;
    size_t n;
    assert_int_equal(tether_transport_recv(&t, &m, &n, 2000), TETHER_ERR_LIMIT);
    tether_transport_close(&t);
    assert_int_equal(tether_transport_fd_open(&t, TETHER_TRANSPORT_TCP, sv[1], sv[1], 0, true), 0);
    assert_int_equal(tether_transport_recv(&t, &m, &n, 2000), TETHER_ERR_IO);
    assert_int_equal(tether_transport_send(&t, "x", 1, 2000), TETHER_ERR_IO);
    /* nothing to read within the timeout */
    tether_transport_close(&t);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(tether_transport_fd_open(&t, TETHER_TRANSPORT_TCP, sv[0], sv[0], 0, true), 0);
    assert_int_equal(tether_transport_recv(&t, &m, &n, 50), TETHER_ERR_TIMEOUT);
    /* half a frame, a timeout, then the rest: the frame is delivered whole */
    const uint8_t part1[] = {0, 0, 0, 3, 'a'};
    const uint8_t part2[] = {'b', 'c'};
    assert_int_equal(write(sv[1], part1, sizeof part1), (ssize_t)sizeof part1);
    assert_int_equal(tether_transport_recv(&t, &m, &n, 50), TETHER_ERR_TIMEOUT);
    assert_int_equal(write(sv[1], part2, sizeof part2), (ssize_t)sizeof part2);
    assert_int_equal(tether_transport_recv(&t, &m, &n, 2000), 0);
    assert_int_equal(n, 3);
    assert_memory_equal(m, "abc", 3);
    tether_transport_close(&t);
    close(sv[1]);
    /* closing twice / a zeroed transport is harmless */
    tether_transport_close(&t);
    tether_transport z;
    memset(&z, 0, sizeof z);
    tether_transport_close(&z);
    assert_int_equal(tether_transport_send(&z, "x", 1, 10), TETHER_ERR_STATE);
}

static int log_calls;
static void count_log(void *ctx, const tether_rpc_msg *m) {
    (void)ctx;
    assert_true(tether_rpc_str_eq(m->u.log.text, "hi"));
    log_calls++;
}

/* The client skips replies to other ids and garbage frames, forwards LOG, and checks the reply
 * type; the peer here is written by hand over a socketpair. */
static void test_client_matching(void **state) {
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    tether_transport t, peer;
    assert_int_equal(tether_transport_fd_open(&t, TETHER_TRANSPORT_TCP, sv[0], sv[0], 0, true), 0);
    assert_int_equal(tether_transport_fd_open(&peer, TETHER_TRANSPORT_TCP, sv[1], sv[1], 0, true),
                     0);
    tether_rpc_client c;
    assert_int_equal(tether_rpc_client_init(&c, &t, 4096, 0), 0);
    c.on_log = count_log;
    log_calls = 0;
    /* queue, before the request is even sent: a stale reply (id 99), a garbage frame, a LOG,
     * then the real reply to id 1 */
    static tether_rpc_msg m;
    uint8_t buf[256];
    size_t n;
    memset(&m, 0, sizeof m);
    m.type = TETHER_RPC_FREE | TETHER_RPC_REPLY;
    m.id = 99;
    assert_int_equal(tether_rpc_tiny_encode(&m, buf, sizeof buf, &n), 0);
    assert_int_equal(tether_transport_send(&peer, buf, n, 1000), 0);
    assert_int_equal(tether_transport_send(&peer, "\xc1\xc1", 2, 1000), 0);
    memset(&m, 0, sizeof m);
    m.type = TETHER_RPC_LOG;
    m.u.log.text = tether_rpc_str_c("hi");
    assert_int_equal(tether_rpc_tiny_encode(&m, buf, sizeof buf, &n), 0);
    assert_int_equal(tether_transport_send(&peer, buf, n, 1000), 0);
    memset(&m, 0, sizeof m);
    m.type = TETHER_RPC_FREE | TETHER_RPC_REPLY;
    m.id = 1;
    assert_int_equal(tether_rpc_tiny_encode(&m, buf, sizeof buf, &n), 0);
    assert_int_equal(tether_transport_send(&peer, buf, n, 1000), 0);
    static tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_FREE;
    req.u.free_req.handle = 5;
    assert_int_equal(tether_rpc_client_request(&c, &req, &rep, 2000), 0);
    assert_int_equal(req.id, 1);
    assert_int_equal(rep.type, TETHER_RPC_FREE | TETHER_RPC_REPLY);
    assert_int_equal(c.stale_replies, 2);
    assert_int_equal(log_calls, 1);
    /* the request really went out, with id 1 */
    const uint8_t *in;
    size_t inlen;
    assert_int_equal(tether_transport_recv(&peer, &in, &inlen, 1000), 0);
    assert_int_equal(tether_rpc_tiny_decode(in, inlen, &m), 0);
    assert_int_equal(m.type, TETHER_RPC_FREE);
    assert_int_equal(m.id, 1);
    assert_int_equal(m.u.free_req.handle, 5);
    /* a reply of the wrong type for id 2 is a protocol error */
    memset(&m, 0, sizeof m);
    m.type = TETHER_RPC_ALLOC | TETHER_RPC_REPLY;
    m.id = 2;
    m.u.alloc_rep.array = 1;
    assert_int_equal(tether_rpc_tiny_encode(&m, buf, sizeof buf, &n), 0);
    assert_int_equal(tether_transport_send(&peer, buf, n, 1000), 0);
    assert_int_equal(tether_rpc_client_request(&c, &req, &rep, 2000), TETHER_ERR_PROTOCOL);
    /* no reply at all: a timeout naming the request, after 1 + retries attempts */
    c.retries = 1;
    assert_int_equal(tether_rpc_client_request(&c, &req, &rep, 50), TETHER_ERR_TIMEOUT);
    assert_non_null(strstr(tether_last_error(), "FREE"));
    assert_non_null(strstr(tether_last_error(), "2 attempt"));
    /* replies are not requests */
    req.type = TETHER_RPC_FREE | TETHER_RPC_REPLY;
    assert_int_equal(tether_rpc_client_request(&c, &req, &rep, 50), TETHER_ERR_INVALID_ARG);
    tether_rpc_client_close(&c);
    tether_transport_close(&t);
    tether_transport_close(&peer);
}

/* Frames far larger than the socket buffer: the sender's single sendmsg goes out in pieces
 * (EAGAIN, poll, the rest of the header/payload pieces), a reader that starts late still gets
 * every byte, and a peer that closed makes the send fail instead of raising SIGPIPE. */
typedef struct big_send {
    tether_transport *t;
    const uint8_t *data;
    size_t len;
    int rc[3];
} big_send;

static void *send_big(void *arg) {
    big_send *b = arg;
    for (int i = 0; i < 3; i++) {
        b->rc[i] = tether_transport_send(b->t, b->data, b->len - (size_t)i * 1001, 5000);
    }
    return NULL;
}

static void test_socket_partial_sends(void **state) {
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    tether_transport a, b;
    assert_int_equal(
        tether_transport_fd_open(&a, TETHER_TRANSPORT_TCP, sv[0], sv[0], 4u << 20, true), 0);
    assert_int_equal(
        tether_transport_fd_open(&b, TETHER_TRANSPORT_TCP, sv[1], sv[1], 4u << 20, true), 0);
    size_t len = 3u << 20;
    uint8_t *data = malloc(len);
    assert_non_null(data);
    for (size_t i = 0; i < len; i++) {
        data[i] = (uint8_t)(i * 131u + (i >> 16));
    }
    big_send bs = {&a, data, len, {-1, -1, -1}};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, send_big, &bs), 0);
    usleep(50 * 1000); /* the sender is blocked on a full buffer by now */
    for (int i = 0; i < 3; i++) {
        const uint8_t *in;
        size_t inlen;
        assert_int_equal(tether_transport_recv(&b, &in, &inlen, 5000), 0);
        assert_int_equal(inlen, len - (size_t)i * 1001);
        assert_memory_equal(in, data, inlen);
    }
    pthread_join(th, NULL);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(bs.rc[i], 0);
    }
    tether_transport_close(&b);
    assert_int_not_equal(tether_transport_send(&a, data, len, 1000), 0);
    assert_non_null(strstr(tether_last_error(), "write failed"));
    tether_transport_close(&a);
    free(data);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tcp_ipv4),
        cmocka_unit_test(test_tcp_ipv6),
        cmocka_unit_test(test_tcp_errors),
        cmocka_unit_test(test_client_matching),
        cmocka_unit_test(test_socket_partial_sends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
