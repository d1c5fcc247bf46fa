/*
 * tether rpc tests (integration): COPY_FROM replies read straight into the caller's memory
 * (tether_rpc_client.copy_from_into, docs/rpc.md "Flow control") over a socket pair whose other
 * end is a scripted device in a thread. What must stay true: a reply cut off by a timeout
 * finishes in the transport's frame buffer, never in the caller's memory once the pipeline has
 * returned, and the frame is whole when its rest arrives. Back-to-back large frames are received
 * where they belong: after a large frame only the next one's head passes through the transport's
 * read-ahead buffer (stats.bytes_staged), placed or not, and every byte arrives unchanged.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "tether/crt.h"
#include "tether/rpc.h"

#define DATA_BYTES 100000u
#define FIRST_PART 40000u /* data bytes sent before the device stalls */

typedef struct device {
    int fd;
    int go[2]; /* a byte here: send the rest of the reply */
    uint8_t *data;
    int result;
} device;

static int write_all(int fd, const uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Answers one COPY_FROM with DATA_BYTES of data: the frame header, the reply's head and the
 * first FIRST_PART data bytes, then, once told, the rest. */
static void *device_main(void *arg) {
    device *d = arg;
    d->result = -1;
    tether_transport t;
    if (tether_transport_fd_open(&t, TETHER_TRANSPORT_TCP, d->fd, d->fd, 0, false) != 0) {
        return NULL;
    }
    const uint8_t *msg;
    size_t len;
    static tether_rpc_msg req, rep;
    if (tether_transport_recv(&t, &msg, &len, 5000) != 0 ||
        tether_rpc_tiny_decode(msg, len, &req) != 0 || req.type != TETHER_RPC_COPY_FROM ||
        req.u.copy_from_req.length != DATA_BYTES) {
        tether_transport_close(&t);
        return NULL;
    }
    memset(&rep, 0, sizeof rep);
    rep.type = TETHER_RPC_COPY_FROM | TETHER_RPC_REPLY;
    rep.id = req.id;
    rep.u.copy_from_rep.data.ptr = d->data;
    rep.u.copy_from_rep.data.len = DATA_BYTES;
    uint8_t head[64], hdr[TETHER_STREAM_HEADER_BYTES];
    size_t head_len, tail_len;
    const uint8_t *tail;
    char go;
    if (tether_rpc_encode_split(&rep, head, sizeof head, &head_len, &tail, &tail_len) == 0 &&
        tail == d->data && tail_len == DATA_BYTES &&
        tether_stream_frame_header(hdr, head_len + tail_len) == 0 &&
        write_all(d->fd, hdr, sizeof hdr) == 0 && write_all(d->fd, head, head_len) == 0 &&
        write_all(d->fd, tail, FIRST_PART) == 0 && read(d->go[0], &go, 1) == 1 &&
        write_all(d->fd, tail + FIRST_PART, DATA_BYTES - FIRST_PART) == 0) {
        d->result = 0;
    }
    tether_transport_close(&t);
    return NULL;
}

static int make_copy_from(void *ctx, uint64_t offset, size_t len, tether_rpc_msg *req) {
    (void)ctx;
    req->type = TETHER_RPC_COPY_FROM;
    req->u.copy_from_req.array = 1;
    req->u.copy_from_req.offset = offset;
    req->u.copy_from_req.length = len;
    return 0;
}

static int take_fails(void *ctx, uint64_t offset, size_t len, const tether_rpc_msg *rep) {
    (void)ctx, (void)offset, (void)len, (void)rep;
    fail_msg("no reply is complete before the timeout");
    return -1;
}

static void test_timeout_mid_reply(void **state) {
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    device d = {.fd = sv[1]};
    assert_int_equal(pipe(d.go), 0);
    d.data = malloc(DATA_BYTES);
    uint8_t *dst = calloc(1, DATA_BYTES);
    for (uint32_t i = 0; i < DATA_BYTES; i++) {
        d.data[i] = (uint8_t)(i * 13 + (i >> 8) + 1);
    }
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, device_main, &d), 0);

    tether_transport t;
    tether_rpc_client c;
    assert_int_equal(tether_transport_fd_open(&t, TETHER_TRANSPORT_TCP, sv[0], sv[0], 0, true), 0);
    assert_int_equal(tether_rpc_client_init(&c, &t, 0, 0), 0);
    c.copy_from_into = dst;
    /* the reply stalls after FIRST_PART of its data, which went straight into dst */
    assert_int_equal(tether_rpc_client_pipeline(&c, DATA_BYTES, DATA_BYTES, 1, 300, make_copy_from,
                                                take_fails, NULL),
                     TETHER_ERR_TIMEOUT);
    assert_null(c.copy_from_into);
    assert_null(t.place); /* the pipeline's placement is gone with it */
    assert_memory_equal(dst, d.data, FIRST_PART);
    /* the caller's memory is the caller's again: the rest must not land there */
    memset(dst, 0xAA, DATA_BYTES);
    assert_int_equal(write(d.go[1], "g", 1), 1);
    const uint8_t *msg;
    size_t len;
    if (tether_transport_recv(&t, &msg, &len, 5000) != 0) {
        fail_msg("the rest of the reply: %s", tether_last_error());
    }
    assert_null(t.placed);
    static tether_rpc_msg rep;
    assert_int_equal(tether_rpc_msgpack_decode(msg, len, &rep), 0);
    assert_int_equal(rep.type, TETHER_RPC_COPY_FROM | TETHER_RPC_REPLY);
    assert_int_equal(rep.u.copy_from_rep.data.len, DATA_BYTES);
    assert_memory_equal(rep.u.copy_from_rep.data.ptr, d.data, DATA_BYTES); /* whole */
    for (uint32_t i = 0; i < DATA_BYTES; i++) {
        if (dst[i] != 0xAA) {
            fail_msg("byte %u of the caller's memory written after the pipeline returned", i);
        }
    }
    pthread_join(th, NULL);
    assert_int_equal(d.result, 0);
    tether_rpc_client_close(&c);
    tether_transport_close(&t);
    close(sv[1]);
    close(d.go[0]);
    close(d.go[1]);
    free(d.data);
    free(dst);
}

#define LARGE   20000u /* a large frame (the transport reads its rest directly from 16 KiB) */
#define SKIP_AT 16u    /* the placed test puts a frame's bytes from this one on into dst */

static uint8_t g_dst[LARGE];

static bool place_at_16(void *ctx, const uint8_t *head, size_t head_len, size_t frame_len,
                        uint8_t **dst, size_t *data_off) {
    (void)ctx, (void)head, (void)head_len;
    if (frame_len != LARGE) {
        return false;
    }
    *dst = g_dst;
    *data_off = SKIP_AT;
    return true;
}

static void fill(uint8_t *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        p[i] = (uint8_t)(i * 7 + seed * 31 + (i >> 9));
    }
}

/* frame k (1-based) received and checked: whole in the frame buffer, or placed from SKIP_AT */
static void expect_frame(tether_transport *t, unsigned k, bool placed) {
    static uint8_t want[LARGE];
    fill(want, LARGE, k);
    const uint8_t *msg;
    size_t len;
    memset(g_dst, 0, sizeof g_dst);
    if (tether_transport_recv(t, &msg, &len, 5000) != 0) {
        fail_msg("frame %u: %s", k, tether_last_error());
    }
    assert_int_equal(len, LARGE);
    if (placed) {
        assert_ptr_equal(t->placed, g_dst);
        assert_int_equal(t->placed_off, SKIP_AT);
        assert_memory_equal(msg, want, SKIP_AT);
        assert_memory_equal(g_dst, want + SKIP_AT, LARGE - SKIP_AT);
    } else {
        assert_null(t->placed);
        assert_memory_equal(msg, want, LARGE);
    }
}

static void back_to_back(bool placed) {
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    tether_transport tx, rx;
    assert_int_equal(tether_transport_fd_open(&tx, TETHER_TRANSPORT_TCP, sv[1], sv[1], 0, true), 0);
    assert_int_equal(tether_transport_fd_open(&rx, TETHER_TRANSPORT_TCP, sv[0], sv[0], 0, true), 0);
    if (placed) {
        rx.place = place_at_16;
    }
    static uint8_t frame[LARGE];
    fill(frame, LARGE, 1);
    assert_int_equal(tether_transport_send(&tx, frame, LARGE, 1000), 0);
    expect_frame(&rx, 1, placed); /* the first read is a full read-ahead: all of it staged */
    uint64_t first = rx.stats.bytes_staged;
    assert_true(first <= LARGE);
    /* frames 2 and 3 wait in the socket together: only their heads go through the buffer */
    for (unsigned k = 2; k <= 3; k++) {
        fill(frame, LARGE, k);
        assert_int_equal(tether_transport_send(&tx, frame, LARGE, 1000), 0);
    }
    expect_frame(&rx, 2, placed);
    expect_frame(&rx, 3, placed);
    uint64_t later = rx.stats.bytes_staged - first;
    if (later > 2 * 512) {
        fail_msg("%llu bytes of frames 2-3 copied through the read-ahead buffer (at most their "
                 "512-byte heads expected)",
                 (unsigned long long)later);
    }
    /* a small frame after them still arrives whole */
    assert_int_equal(tether_transport_send(&tx, "ping", 4, 1000), 0);
    const uint8_t *msg;
    size_t len;
    assert_int_equal(tether_transport_recv(&rx, &msg, &len, 5000), 0);
    assert_int_equal(len, 4);
    assert_memory_equal(msg, "ping", 4);
    tether_transport_close(&rx);
    tether_transport_close(&tx);
}

static void test_back_to_back_large(void **state) {
    (void)state;
    back_to_back(false);
}

static void test_back_to_back_placed(void **state) {
    (void)state;
    back_to_back(true);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timeout_mid_reply),
        cmocka_unit_test(test_back_to_back_large),
        cmocka_unit_test(test_back_to_back_placed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
