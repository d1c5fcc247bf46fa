/*
 * tether rpc tests (integration): a serial line exported over TCP (tcp-serial://, what ser2net
 * or QEMU's socket chardev offer): tether_transport_tcp_serial_connect to a peer on 127.0.0.1
 * that speaks the UART framing over the socket (the test server in a thread on the accepted
 * connection). The scripted session (HELLO, a pipelined 64 KiB COPY_TO/COPY_FROM round trip,
 * calls, corrupted frames on the line, a lost reply answered from the reply cache) runs over it
 * byte-exact; garbage and a damaged frame the host puts on the line are dropped and counted by
 * the device. The host end acknowledges at once after every read (TCP_QUICKACK renewed per
 * recv: a serial server with Nagle on holds a reply's tail until it is acknowledged), checked on
 * the socket after the session; a TCP stream transport and a socket pair do not take it.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "session.h"
#include "test_server.h"
#include "tether/crt.h"

typedef struct dev {
    int listen_fd;
    tether_transport t;
    int result;
    ts_stats st;
} dev;

/* The serial server: accepts one connection and serves UART framing on it until SHUTDOWN. */
static void *serve_thread(void *arg) {
    dev *d = arg;
    int fd = accept(d->listen_fd, NULL, NULL);
    if (fd < 0 || tether_transport_fd_open(&d->t, TETHER_TRANSPORT_UART, fd, fd, 1024, true)) {
        d->result = -1;
        return NULL;
    }
    d->result = ts_serve(&d->t, &d->st);
    return NULL;
}

static int listen_local(uint16_t *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 1) ||
        getsockname(fd, (struct sockaddr *)&a, &al)) {
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static int quickack_of(int fd) {
    int v = -1;
    socklen_t l = sizeof v;
    return getsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &v, &l) == 0 ? v : -1;
}

static void test_session_over_tcp_serial(void **state) {
    (void)state;
    static dev d;
    memset(&d, 0, sizeof d);
    uint16_t port = 0;
    d.listen_fd = listen_local(&port);
    assert_true(d.listen_fd >= 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, serve_thread, &d), 0);

    tether_transport host;
    if (tether_transport_tcp_serial_connect(&host, "127.0.0.1", port, 1024, 5000) != 0) {
        fail_msg("tcp-serial connect: %s", tether_last_error());
    }
    assert_int_equal(host.kind, TETHER_TRANSPORT_UART);
    /* garbage and a corrupted frame on the line before the first request */
    uint8_t bad[64];
    size_t bl;
    assert_int_equal(tether_uart_frame_encode("broken frame", 12, bad, sizeof bad, &bl), 0);
    bad[bl - 1] ^= 0x40;
    const uint8_t junk[] = {0x55, 0xaa, 0x00};
    assert_int_equal(write(host.fd_write, junk, sizeof junk), (ssize_t)sizeof junk);
    assert_int_equal(write(host.fd_write, bad, bl), (ssize_t)bl);

    session_run(&host, 64 * 1024 + 3, true);
    /* a request/reply exchange puts Linux TCP in delayed-ACK (ping-pong) mode; the transport
     * renews the quick ACK after each read, so the last read left it on */
    assert_int_equal(quickack_of(host.fd_read), 1);
    pthread_join(th, NULL);
    assert_int_equal(d.result, 0);
    assert_true(d.t.stats.frames_dropped >= 1);
    assert_true(d.t.stats.garbage_bytes >= 3);
    assert_true(d.st.duplicates >= 1);
    tether_transport_close(&d.t);
    tether_transport_close(&host);
    close(d.listen_fd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_session_over_tcp_serial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
