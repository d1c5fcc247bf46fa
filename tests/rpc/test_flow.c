/*
 * tether rpc tests: the chunker and the reply cache, and the end-to-end flow-control case of the
 * spec: a multi-megabyte COPY_TO from a host (msgpack-c codec) through UART framing to a
 * simulated device with a 512-byte receive buffer (tiny codec), over a link that corrupts
 * requests and loses replies. The copy must arrive intact and no request may run twice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tether/crt.h"
#include "tether/rpc.h"

static void test_chunker_basics(void **state) {
    (void)state;
    tether_rpc_chunker c;
    uint64_t off;
    uint32_t len;
    assert_int_equal(tether_rpc_chunker_init(&c, 1000, 64, 1), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_rpc_chunker_init(&c, 1000, 512, 2), 0);
    assert_int_equal(c.chunk, 464);
    assert_true(tether_rpc_chunker_next(&c, &off, &len));
    assert_int_equal(off, 0);
    assert_int_equal(len, 464);
    assert_true(tether_rpc_chunker_next(&c, &off, &len));
    assert_int_equal(off, 464);
    assert_false(tether_rpc_chunker_next(&c, &off, &len)); /* window full */
    /* out-of-order ack refused */
    assert_int_equal(tether_rpc_chunker_ack(&c, 464, 464), TETHER_ERR_PROTOCOL);
    assert_int_equal(tether_rpc_chunker_ack(&c, 0, 464), 0);
    assert_true(tether_rpc_chunker_next(&c, &off, &len));
    assert_int_equal(off, 928);
    assert_int_equal(len, 72);
    assert_false(tether_rpc_chunker_next(&c, &off, &len)); /* no data left */
    /* timeout: rewind to the first unacknowledged byte */
    tether_rpc_chunker_rewind(&c);
    assert_true(tether_rpc_chunker_next(&c, &off, &len));
    assert_int_equal(off, 464);
    assert_int_equal(tether_rpc_chunker_ack(&c, 464, 464), 0);
    assert_true(tether_rpc_chunker_next(&c, &off, &len));
    assert_int_equal(tether_rpc_chunker_ack(&c, 928, 72), 0);
    assert_true(tether_rpc_chunker_done(&c));
    assert_int_equal(tether_rpc_chunker_ack(&c, 1000, 0), TETHER_ERR_PROTOCOL);
    /* empty transfer is done at once */
    assert_int_equal(tether_rpc_chunker_init(&c, 0, 512, 0), 0);
    assert_true(tether_rpc_chunker_done(&c));
    assert_false(tether_rpc_chunker_next(&c, &off, &len));
}

static void test_reply_cache(void **state) {
    (void)state;
    uint8_t mem[4 * 16];
    tether_rpc_reply_cache c;
    const uint8_t *r;
    size_t n;
    assert_int_equal(tether_rpc_reply_cache_init(&c, mem, sizeof mem, 0), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_rpc_reply_cache_init(&c, mem, sizeof mem, 9), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_rpc_reply_cache_init(&c, mem, sizeof mem, 4), 0);
    assert_false(tether_rpc_reply_cache_lookup(&c, 1, &r, &n));
    for (uint32_t id = 1; id <= 6; id++) {
        uint8_t reply[3] = {(uint8_t)id, 0xaa, 0xbb};
        assert_int_equal(tether_rpc_reply_cache_store(&c, id, reply, sizeof reply), 0);
    }
    /* ids 1 and 2 were evicted (4 slots, round robin) */
    assert_false(tether_rpc_reply_cache_lookup(&c, 1, &r, &n));
    assert_false(tether_rpc_reply_cache_lookup(&c, 2, &r, &n));
    for (uint32_t id = 3; id <= 6; id++) {
        assert_true(tether_rpc_reply_cache_lookup(&c, id, &r, &n));
        assert_int_equal(n, 3);
        assert_int_equal(r[0], id);
    }
    assert_int_equal(c.hits, 4);
    assert_false(tether_rpc_reply_cache_lookup(&c, 0, &r, &n));
    uint8_t big[17] = {0};
    assert_int_equal(tether_rpc_reply_cache_store(&c, 7, big, sizeof big), TETHER_ERR_LIMIT);
    assert_false(tether_rpc_reply_cache_lookup(&c, 7, &r, &n));
    /* storing a too-big reply for a cached id forgets the stale one */
    assert_int_equal(tether_rpc_reply_cache_store(&c, 6, big, sizeof big), TETHER_ERR_LIMIT);
    assert_false(tether_rpc_reply_cache_lookup(&c, 6, &r, &n));
    tether_rpc_reply_cache_clear(&c);
    assert_false(tether_rpc_reply_cache_lookup(&c, 5, &r, &n));
}

/* ---- the 512-byte device simulation ---- */

#define DEV_RX   512
#define LINK_CAP (64 * 1024)

typedef struct link {
    uint8_t buf[LINK_CAP];
    size_t len;
} link_q;

static uint32_t rng_state = 12345;
static uint32_t rng(void) {
    rng_state = rng_state * 1103515245u + 12345u;
    return rng_state >> 8;
}

static int link_put(void *ctx, const uint8_t *b, size_t n) {
    link_q *l = ctx;
    if (n > LINK_CAP - l->len) {
        return TETHER_ERR_LIMIT;
    }
    memcpy(l->buf + l->len, b, n);
    l->len += n;
    return 0;
}

typedef struct device {
    uint8_t rx[DEV_RX]; /* the whole receive buffer */
    tether_uart_unframer u;
    uint8_t cache_mem[4 * 32];
    tether_rpc_reply_cache cache;
    uint8_t *mem; /* the NDArray being written */
    size_t mem_size;
    uint8_t *executed; /* executions per request id */
    size_t max_id;
    uint32_t duplicates;
} device;

/* Handles one request frame; writes the framed reply to `out`. */
static void device_frame(device *d, const uint8_t *f, size_t n, link_q *out, int lose_reply) {
    uint32_t type, id;
    const uint8_t *cached;
    size_t clen;
    assert_int_equal(tether_rpc_peek_header(f, n, &type, &id), 0);
    if (tether_rpc_reply_cache_lookup(&d->cache, id, &cached, &clen)) {
        d->duplicates++;
        if (!lose_reply) {
            assert_int_equal(tether_uart_frame_write(cached, clen, link_put, out), 0);
        }
        return;
    }
    tether_rpc_msg req, rep;
    assert_int_equal(tether_rpc_tiny_decode(f, n, &req), 0);
    assert_int_equal(req.type, TETHER_RPC_COPY_TO);
    assert_true(id < d->max_id);
    d->executed[id]++;
    const tether_rpc_copy_to_req *c = &req.u.copy_to_req;
    assert_true(c->offset + c->data.len <= d->mem_size);
    memcpy(d->mem + c->offset, c->data.ptr, c->data.len);
    memset(&rep, 0, sizeof rep);
    rep.type = TETHER_RPC_COPY_TO | TETHER_RPC_REPLY;
    rep.id = id;
    rep.u.copy_to_rep.written = c->data.len;
    uint8_t enc[64];
    size_t elen;
    assert_int_equal(tether_rpc_tiny_encode(&rep, enc, sizeof enc, &elen), 0);
    assert_int_equal(tether_rpc_reply_cache_store(&d->cache, id, enc, elen), 0);
    if (!lose_reply) {
        assert_int_equal(tether_uart_frame_write(enc, elen, link_put, out), 0);
    }
}

/* Device side: consumes the host->device bytes in random-sized pieces (partial reads). */
static void device_run(device *d, link_q *in, link_q *out) {
    size_t pos = 0;
    while (pos < in->len) {
        size_t piece = 1 + rng() % 200;
        if (piece > in->len - pos) {
            piece = in->len - pos;
        }
        size_t off = 0;
        while (off < piece) {
            size_t used, flen;
            const uint8_t *f;
            if (tether_uart_unframer_push(&d->u, in->buf + pos + off, piece - off, &used, &f,
                                          &flen)) {
                /* a reply lost on the way back: 1 in 40 */
                device_frame(d, f, flen, out, rng() % 40 == 0);
            }
            off += used;
        }
        pos += piece;
    }
    in->len = 0;
}

static void run_copy(uint32_t window, size_t total) {
    uint8_t *src = malloc(total);
    device *d = calloc(1, sizeof *d);
    static link_q h2d, d2h;
    assert_non_null(src);
    assert_non_null(d);
    for (size_t i = 0; i < total; i++) {
        src[i] = (uint8_t)(rng() ^ i);
    }
    d->mem = calloc(1, total);
    d->mem_size = total;
    tether_uart_unframer_init(&d->u, d->rx, sizeof d->rx, NULL, NULL);
    assert_int_equal(tether_rpc_reply_cache_init(&d->cache, d->cache_mem, sizeof d->cache_mem, 4),
                     0);

    tether_rpc_chunker ch;
    assert_int_equal(tether_rpc_chunker_init(&ch, total, DEV_RX, window), 0);
    size_t chunks = (total + ch.chunk - 1) / ch.chunk;
    d->max_id = chunks + 2;
    d->executed = calloc(d->max_id, 1);
    uint8_t hbuf[DEV_RX];
    tether_uart_unframer hu;
    tether_uart_unframer_init(&hu, hbuf, sizeof hbuf, NULL, NULL);
    uint8_t *enc = malloc(DEV_RX);
    uint32_t timeouts = 0, corrupted = 0;
    h2d.len = d2h.len = 0;
    while (!tether_rpc_chunker_done(&ch)) {
        uint64_t off;
        uint32_t len;
        while (tether_rpc_chunker_next(&ch, &off, &len)) {
            tether_rpc_msg m;
            memset(&m, 0, sizeof m);
            m.type = TETHER_RPC_COPY_TO;
            m.id = (uint32_t)(off / ch.chunk) + 1; /* same chunk, same id: resends dedup */
            m.u.copy_to_req.array = 7;
            m.u.copy_to_req.offset = off;
            m.u.copy_to_req.data.ptr = src + off;
            m.u.copy_to_req.data.len = len;
            size_t elen;
            assert_int_equal(tether_rpc_msgpack_encode(&m, enc, DEV_RX, &elen), 0);
            assert_true(elen <= DEV_RX);
            size_t at = h2d.len;
            assert_int_equal(tether_uart_frame_write(enc, elen, link_put, &h2d), 0);
            if (rng() % 50 == 0) { /* corrupt one byte of 1 in 50 requests */
                size_t k = at + 1 + rng() % (h2d.len - at - 1);
                h2d.buf[k] ^= (uint8_t)(1u << (rng() % 8));
                corrupted++;
            }
            if (rng() % 17 == 0) { /* garbage on the line between frames */
                uint8_t junk[3] = {(uint8_t)rng(), 0x00, (uint8_t)rng()};
                assert_int_equal(link_put(&h2d, junk, sizeof junk), 0);
            }
        }
        device_run(d, &h2d, &d2h);
        /* host reads the acknowledgements */
        size_t pos = 0;
        bool progress = false;
        while (pos < d2h.len) {
            size_t used, flen;
            const uint8_t *f;
            if (tether_uart_unframer_push(&hu, d2h.buf + pos, d2h.len - pos, &used, &f, &flen)) {
                tether_rpc_msg rep;
                assert_int_equal(tether_rpc_msgpack_decode(f, flen, &rep), 0);
                uint64_t expect_off = ch.acked;
                uint32_t expect_id = (uint32_t)(expect_off / ch.chunk) + 1;
                if (ch.in_flight > 0 && rep.id == expect_id) {
                    uint64_t left = ch.total - ch.acked;
                    uint32_t l = left < ch.chunk ? (uint32_t)left : ch.chunk;
                    assert_int_equal(rep.u.copy_to_rep.written, l);
                    assert_int_equal(tether_rpc_chunker_ack(&ch, expect_off, l), 0);
                    progress = true;
                }
                /* else: a late duplicate of an already acknowledged chunk */
            }
            pos += used;
        }
        d2h.len = 0;
        if (ch.in_flight > 0 && !tether_rpc_chunker_done(&ch)) {
            /* the line went quiet with acks missing: timeout, resend from the first gap */
            timeouts++;
            tether_rpc_chunker_rewind(&ch);
        }
        (void)progress;
        assert_true(timeouts < chunks); /* always converges */
    }
    assert_memory_equal(d->mem, src, total);
    for (size_t id = 0; id < d->max_id; id++) {
        assert_true(d->executed[id] <= 1); /* nothing ran twice */
    }
    assert_true(corrupted > 0);
    assert_true(tether_uart_unframer_dropped(&d->u) > 0); /* corrupted frames were dropped */
    assert_true(d->duplicates > 0);                       /* lost replies were answered again */
    assert_true(timeouts > 0);
    free(enc);
    free(d->executed);
    free(d->mem);
    free(d);
    free(src);
}

static void test_copy_3mib_window1(void **state) {
    (void)state;
    run_copy(1, 3 * 1024 * 1024 + 123);
}

static void test_copy_2mib_window2(void **state) {
    (void)state;
    run_copy(2, 2 * 1024 * 1024 + 7);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunker_basics),
        cmocka_unit_test(test_reply_cache),
        cmocka_unit_test(test_copy_3mib_window1),
        cmocka_unit_test(test_copy_2mib_window2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
