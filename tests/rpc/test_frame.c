/*
 * tether rpc tests: CRC-16/CCITT, stream framing and UART framing: round trips, every single-bit
 * flip of a frame, truncation, oversize lengths, garbage between frames, escapes, and frames
 * delivered in every possible split of partial reads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tether/crt.h"
#include "tether/rpc.h"

static void test_crc(void **state) {
    (void)state;
    assert_int_equal(tether_crc16_ccitt(TETHER_CRC16_INIT, "123456789", 9), 0x29B1);
    uint16_t c = tether_crc16_ccitt(TETHER_CRC16_INIT, "1234", 4);
    assert_int_equal(tether_crc16_ccitt(c, "56789", 5), 0x29B1);
    assert_int_equal(tether_crc16_ccitt(TETHER_CRC16_INIT, "", 0), 0xFFFF);
}

/* ---- stream framing ---- */

static void test_stream_roundtrip_splits(void **state) {
    (void)state;
    uint8_t wire[64];
    size_t n = 0;
    const char *msgs[3] = {"hello", "x", "a longer third message"};
    for (int i = 0; i < 3; i++) {
        size_t len = strlen(msgs[i]);
        assert_int_equal(tether_stream_frame_header(wire + n, len), 0);
        memcpy(wire + n + 4, msgs[i], len);
        n += 4 + len;
    }
    /* feed in chunks of every size from 1 to all at once */
    for (size_t step = 1; step <= n; step++) {
        uint8_t buf[64];
        tether_stream_unframer u;
        tether_stream_unframer_init(&u, buf, sizeof buf);
        int got = 0;
        for (size_t pos = 0; pos < n;) {
            size_t take = n - pos < step ? n - pos : step;
            size_t off = 0;
            while (off < take) {
                size_t used;
                const uint8_t *f;
                size_t flen;
                int rc =
                    tether_stream_unframer_push(&u, wire + pos + off, take - off, &used, &f, &flen);
                assert_true(rc >= 0);
                off += used;
                if (rc == 1) {
                    assert_int_equal(flen, strlen(msgs[got]));
                    assert_memory_equal(f, msgs[got], flen);
                    got++;
                }
            }
            pos += take;
        }
        assert_int_equal(got, 3);
    }
}

static void test_stream_errors(void **state) {
    (void)state;
    uint8_t hdr[4], buf[16];
    assert_int_equal(tether_stream_frame_header(hdr, 0), TETHER_ERR_LIMIT);
    assert_int_equal(tether_stream_frame_header(hdr, TETHER_RPC_MAX_FRAME_LIMIT + 1),
                     TETHER_ERR_LIMIT);
    tether_stream_unframer u;
    size_t used, flen;
    const uint8_t *f;
    /* oversize: 17 > 16 */
    tether_stream_unframer_init(&u, buf, sizeof buf);
    const uint8_t over[] = {0, 0, 0, 17, 'a'};
    assert_int_equal(tether_stream_unframer_push(&u, over, sizeof over, &used, &f, &flen),
                     TETHER_ERR_LIMIT);
    assert_non_null(strstr(tether_last_error(), "exceeds"));
    /* sticky: even a valid frame afterwards is refused */
    const uint8_t ok[] = {0, 0, 0, 1, 'a'};
    assert_int_equal(tether_stream_unframer_push(&u, ok, sizeof ok, &used, &f, &flen),
                     TETHER_ERR_LIMIT);
    /* zero length */
    tether_stream_unframer_init(&u, buf, sizeof buf);
    const uint8_t zero[] = {0, 0, 0, 0};
    assert_int_equal(tether_stream_unframer_push(&u, zero, sizeof zero, &used, &f, &flen),
                     TETHER_ERR_PROTOCOL);
    /* huge length (garbage header) */
    tether_stream_unframer_init(&u, buf, sizeof buf);
    const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff};
    assert_int_equal(tether_stream_unframer_push(&u, huge, sizeof huge, &used, &f, &flen),
                     TETHER_ERR_LIMIT);
    /* truncated frame: no delivery, waits for more */
    tether_stream_unframer_init(&u, buf, sizeof buf);
    const uint8_t part[] = {0, 0, 0, 5, 'a', 'b'};
    assert_int_equal(tether_stream_unframer_push(&u, part, sizeof part, &used, &f, &flen), 0);
    assert_int_equal(used, sizeof part);
}

/* ---- UART framing ---- */

typedef struct drops {
    int count[TETHER_UART_DROP_COUNT];
} drops;

static void on_drop(void *ctx, tether_uart_drop reason) {
    ((drops *)ctx)->count[reason]++;
}

/* Feeds wire bytes one at a time; records delivered frames into out (concatenated). */
static int feed(tether_uart_unframer *u, const uint8_t *wire, size_t n, uint8_t *out,
                size_t *out_len, size_t *lens) {
    int frames = 0;
    *out_len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t flen;
        if (tether_uart_unframer_byte(u, wire[i], &flen) == TETHER_UART_FRAME) {
            memcpy(out + *out_len, u->buf, flen);
            *out_len += flen;
            if (lens) {
                lens[frames] = flen;
            }
            frames++;
        }
    }
    return frames;
}

static void test_uart_roundtrip_escapes(void **state) {
    (void)state;
    uint8_t payload[300];
    for (size_t i = 0; i < sizeof payload; i++) {
        payload[i] = (uint8_t)(i % 3 == 0 ? 0x7e : i % 3 == 1 ? 0x7d : i);
    }
    uint8_t wire[TETHER_UART_ENCODED_MAX(300)];
    size_t n;
    assert_int_equal(tether_uart_frame_encode(payload, sizeof payload, wire, sizeof wire, &n), 0);
    assert_int_equal(wire[0], 0x7e);
    for (size_t i = 1; i < n; i++) {
        assert_int_not_equal(wire[i], 0x7e); /* FLAG never inside a frame */
    }
    uint8_t buf[512], got[512];
    size_t got_len;
    tether_uart_unframer u;
    tether_uart_unframer_init(&u, buf, sizeof buf, NULL, NULL);
    assert_int_equal(feed(&u, wire, n, got, &got_len, NULL), 1);
    assert_int_equal(got_len, sizeof payload);
    assert_memory_equal(got, payload, sizeof payload);
    assert_int_equal(u.frames, 1);
    assert_int_equal(tether_uart_unframer_dropped(&u), 0);
    /* the frame as written by hand: 7e 00 01 'A' crc */
    uint8_t one[16];
    assert_int_equal(tether_uart_frame_encode("A", 1, one, sizeof one, &n), 0);
    uint8_t lenA[3] = {0, 1, 'A'};
    uint16_t crc = tether_crc16_ccitt(TETHER_CRC16_INIT, lenA, 3);
    assert_int_equal(n, 6);
    assert_int_equal(one[1], 0);
    assert_int_equal(one[2], 1);
    assert_int_equal(one[3], 'A');
    assert_int_equal(one[4], crc >> 8);
    assert_int_equal(one[5], crc & 0xff);
    /* encode errors */
    assert_int_equal(tether_uart_frame_encode("A", 0, one, sizeof one, &n), TETHER_ERR_LIMIT);
    assert_int_equal(tether_uart_frame_encode(payload, 20, one, sizeof one, &n), TETHER_ERR_LIMIT);
}

/* Every single-bit flip of an encoded frame: the frame is never delivered with wrong content,
 * and the next good frame is always delivered. */
static void test_uart_bit_flips(void **state) {
    (void)state;
    const uint8_t payload[] = "the quick brown fox \x7e\x7d jumps";
    uint8_t frame[128], good[128];
    size_t fn, gn;
    assert_int_equal(tether_uart_frame_encode(payload, sizeof payload, frame, sizeof frame, &fn),
                     0);
    assert_int_equal(tether_uart_frame_encode("ok", 2, good, sizeof good, &gn), 0);
    int corrupted_delivered = 0;
    for (size_t bit = 0; bit < fn * 8; bit++) {
        uint8_t wire[256];
        memcpy(wire, frame, fn);
        wire[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        memcpy(wire + fn, good, gn);
        uint8_t buf[128], got[256];
        size_t got_len, lens[4];
        drops d = {{0}};
        tether_uart_unframer u;
        tether_uart_unframer_init(&u, buf, sizeof buf, on_drop, &d);
        int frames = feed(&u, wire, fn + gn, got, &got_len, lens);
        /* the good frame is always last and intact */
        assert_true(frames >= 1);
        assert_int_equal(lens[frames - 1], 2);
        assert_memory_equal(got + got_len - 2, "ok", 2);
        if (frames == 2) {
            /* only acceptable if the flip did not change the payload (impossible: CRC) */
            corrupted_delivered++;
        } else {
            assert_int_equal(frames, 1);
            int total = 0;
            for (int k = 0; k < TETHER_UART_DROP_COUNT; k++) {
                total += d.count[k];
            }
            /* a flip that removed the start FLAG makes the frame garbage instead of a drop */
            if (bit / 8 != 0) {
                assert_true(total >= 1);
            }
            assert_int_equal((uint32_t)total, tether_uart_unframer_dropped(&u));
        }
    }
    assert_int_equal(corrupted_delivered, 0);
}

static void test_uart_truncation_garbage_oversize(void **state) {
    (void)state;
    uint8_t f1[64], f2[64];
    size_t n1, n2;
    assert_int_equal(tether_uart_frame_encode("first frame", 11, f1, sizeof f1, &n1), 0);
    assert_int_equal(tether_uart_frame_encode("second", 6, f2, sizeof f2, &n2), 0);
    uint8_t wire[512];
    size_t n = 0;
    /* garbage, a truncated frame, garbage, a good frame */
    const uint8_t junk[] = {0x00, 0x13, 0xff, 0x7d, 0x5e, 0x42};
    memcpy(wire + n, junk, sizeof junk);
    n += sizeof junk;
    memcpy(wire + n, f1, n1 - 4);
    n += n1 - 4;
    memcpy(wire + n, f2, n2);
    n += n2;
    /* an oversize frame (length 1000 > buffer 32), then a good one */
    const uint8_t over[] = {0x7e, 0x03, 0xe8, 'x', 'y'};
    memcpy(wire + n, over, sizeof over);
    n += sizeof over;
    memcpy(wire + n, f1, n1);
    n += n1;
    /* a bad escape inside a frame, then a good one */
    const uint8_t badesc[] = {0x7e, 0x00, 0x02, 0x7d, 0x11, 'q'};
    memcpy(wire + n, badesc, sizeof badesc);
    n += sizeof badesc;
    memcpy(wire + n, f2, n2);
    n += n2;

    uint8_t buf[32], got[256];
    size_t got_len, lens[8];
    drops d = {{0}};
    tether_uart_unframer u;
    tether_uart_unframer_init(&u, buf, sizeof buf, on_drop, &d);
    int frames = feed(&u, wire, n, got, &got_len, lens);
    assert_int_equal(frames, 3);
    assert_memory_equal(got, "second", 6);
    assert_memory_equal(got + 6, "first frame", 11);
    assert_memory_equal(got + 17, "second", 6);
    assert_int_equal(d.count[TETHER_UART_DROP_TRUNCATED], 1); /* f1 cut by the next FLAG */
    assert_int_equal(d.count[TETHER_UART_DROP_OVERSIZE], 1);
    assert_int_equal(d.count[TETHER_UART_DROP_ESCAPE], 1);
    assert_int_equal(d.count[TETHER_UART_DROP_CRC], 0);
    assert_int_equal(u.garbage, sizeof junk + 2 /* x y after the oversize drop */ + 1 /* q */);
}

static void test_crc32(void **state) {
    (void)state;
    assert_int_equal(tether_crc32(0, "123456789", 9), 0xCBF43926u);
    uint32_t c = tether_crc32(0, "1234", 4);
    assert_int_equal(tether_crc32(c, "56789", 5), 0xCBF43926u);
    assert_int_equal(tether_crc32(0, "", 0), 0);
}

/* Link 2: CRC-32, the top bit of len, a closing FLAG; receivers take both forms in any order,
 * back-to-back FLAGs are not a drop, a NAK is reported as such. */
static void test_uart_link2(void **state) {
    (void)state;
    uint8_t payload[200];
    for (size_t i = 0; i < sizeof payload; i++) {
        payload[i] = (uint8_t)(i % 4 == 0 ? 0x7e : i % 4 == 1 ? 0x7d : i * 7);
    }
    uint8_t wire[4 * TETHER_UART_ENCODED_MAX(200)];
    size_t n = 0, k;
    assert_int_equal(
        tether_uart_frame_encode_ex(payload, sizeof payload, true, wire, sizeof wire, &k), 0);
    assert_int_equal(wire[0], 0x7e);
    assert_int_equal(wire[k - 1], 0x7e);
    assert_int_equal(wire[1], 0x80); /* 200 bytes: len_hi 0 with the link-2 bit */
    for (size_t i = 1; i + 1 < k; i++) {
        assert_true(wire[i] != 0x7e);
    }
    n = k;
    assert_int_equal(tether_uart_frame_encode(payload, 50, wire + n, sizeof wire - n, &k), 0);
    n += k;
    assert_int_equal(tether_uart_frame_encode_ex(payload, 10, true, wire + n, sizeof wire - n, &k),
                     0);
    n += k;
    assert_int_equal(tether_uart_nak_encode(wire + n, sizeof wire - n, &k), 0);
    assert_true(k <= TETHER_UART_NAK_MAX);
    n += k;
    assert_int_equal(tether_uart_frame_encode(payload, 3, wire + n, sizeof wire - n, &k), 0);
    n += k;
    uint8_t buf[256];
    drops d = {{0}};
    tether_uart_unframer u;
    tether_uart_unframer_init(&u, buf, sizeof buf, on_drop, &d);
    size_t expect[] = {200, 50, 10, 0, 3}, seen = 0;
    for (size_t i = 0; i < n; i++) {
        size_t flen = 0;
        int r = tether_uart_unframer_byte(&u, wire[i], &flen);
        if (r == TETHER_UART_FRAME) {
            assert_int_equal(flen, expect[seen]);
            assert_memory_equal(buf, payload, flen);
            seen++;
        } else if (r == TETHER_UART_NAK) {
            assert_int_equal(expect[seen], 0);
            seen++;
        }
    }
    assert_int_equal(seen, 5);
    assert_int_equal(u.frames, 4);
    assert_int_equal(u.link2_frames, 2);
    assert_int_equal(u.naks, 1);
    assert_int_equal(tether_uart_unframer_dropped(&u), 0);
    assert_int_equal(u.garbage, 0);
    /* a classic frame of length 0 is still no NAK: oversize */
    const uint8_t zero[] = {0x7e, 0x00, 0x00, 0x12, 0x34};
    for (size_t i = 0; i < sizeof zero; i++) {
        size_t flen;
        assert_int_equal(tether_uart_unframer_byte(&u, zero[i], &flen), 0);
    }
    assert_int_equal(d.count[TETHER_UART_DROP_OVERSIZE], 1);
    /* the largest payload of either form */
    assert_int_equal(tether_uart_frame_encode_ex(payload, TETHER_UART_MAX_PAYLOAD + 1, true, wire,
                                                 sizeof wire, &k),
                     TETHER_ERR_LIMIT);
}

/* Every single bit flip in a link-2 frame is noticed at once (a drop, never a wrong frame, and
 * never silence until the next frame: the closing FLAG ends a frame whose length was hit). */
static void test_uart_link2_damage(void **state) {
    (void)state;
    uint8_t payload[40];
    for (size_t i = 0; i < sizeof payload; i++) {
        payload[i] = (uint8_t)(i * 37 + 1);
    }
    uint8_t wire[TETHER_UART_ENCODED_MAX(40)], bad[TETHER_UART_ENCODED_MAX(40)];
    size_t n;
    assert_int_equal(
        tether_uart_frame_encode_ex(payload, sizeof payload, true, wire, sizeof wire, &n), 0);
    int silent = 0, wrong = 0;
    for (size_t byte = 0; byte < n; byte++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(bad, wire, n);
            bad[byte] ^= (uint8_t)(1u << bit);
            uint8_t buf[1024];
            tether_uart_unframer u;
            tether_uart_unframer_init(&u, buf, sizeof buf, NULL, NULL);
            int delivered = 0;
            for (size_t i = 0; i < n; i++) {
                size_t flen;
                if (tether_uart_unframer_byte(&u, bad[i], &flen) == TETHER_UART_FRAME) {
                    delivered = 1;
                    if (flen != sizeof payload || memcmp(buf, payload, flen) != 0) {
                        wrong++;
                    }
                }
            }
            /* what a stop-and-wait peer sees next: the start of the next frame */
            size_t flen;
            tether_uart_unframer_byte(&u, 0x7e, &flen);
            uint32_t drops_now = tether_uart_unframer_dropped(&u);
            /* a flipped closing FLAG leaves a good frame (already delivered) and garbage */
            if (!delivered && drops_now == 0) {
                silent++;
            }
        }
    }
    assert_int_equal(wrong, 0);
    assert_int_equal(silent, 0);
    /* a length hit upwards: the closing FLAG ends it as truncated, before any next frame */
    memcpy(bad, wire, n);
    bad[2] = 0x50; /* len 0x0050 = 80 > 40 */
    uint8_t buf[256];
    drops d = {{0}};
    tether_uart_unframer u;
    tether_uart_unframer_init(&u, buf, sizeof buf, on_drop, &d);
    for (size_t i = 0; i < n; i++) {
        size_t flen;
        assert_int_not_equal(tether_uart_unframer_byte(&u, bad[i], &flen), TETHER_UART_FRAME);
    }
    assert_int_equal(d.count[TETHER_UART_DROP_TRUNCATED], 1);
    /* a lost start FLAG: the frame's bytes are garbage, ended by its closing FLAG */
    tether_uart_unframer_init(&u, buf, sizeof buf, on_drop, &d);
    memset(&d, 0, sizeof d);
    for (size_t i = 1; i < n; i++) {
        size_t flen;
        assert_int_equal(tether_uart_unframer_byte(&u, wire[i], &flen), 0);
    }
    assert_int_equal(d.count[TETHER_UART_DROP_GARBAGE], 1);
}

/* Partial reads: frames split across push() calls at every position. */
static void test_uart_push_partial(void **state) {
    (void)state;
    uint8_t wire[256];
    size_t n = 0, k;
    const char *msgs[3] = {"alpha~}", "b", "gamma gamma"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(
            tether_uart_frame_encode(msgs[i], strlen(msgs[i]), wire + n, sizeof wire - n, &k), 0);
        n += k;
    }
    for (size_t split = 1; split < n; split++) {
        uint8_t buf[64];
        tether_uart_unframer u;
        tether_uart_unframer_init(&u, buf, sizeof buf, NULL, NULL);
        int got = 0;
        size_t pos = 0;
        while (pos < n) {
            size_t end = pos < split ? split : n;
            while (pos < end) {
                size_t used, flen;
                const uint8_t *f;
                if (tether_uart_unframer_push(&u, wire + pos, end - pos, &used, &f, &flen)) {
                    assert_int_equal(flen, strlen(msgs[got]));
                    assert_memory_equal(f, msgs[got], flen);
                    got++;
                }
                pos += used;
            }
        }
        assert_int_equal(got, 3);
    }
}

/* Streaming writer with a tiny put callback produces the same bytes as the buffer encoder. */
typedef struct collect {
    uint8_t buf[4096];
    size_t len;
    int calls;
} collect;

static int put(void *ctx, const uint8_t *b, size_t n) {
    collect *c = ctx;
    memcpy(c->buf + c->len, b, n);
    c->len += n;
    c->calls++;
    return 0;
}

static int put_fail(void *ctx, const uint8_t *b, size_t n) {
    (void)ctx;
    (void)b;
    (void)n;
    return TETHER_ERR_IO;
}

static void test_uart_write_stream(void **state) {
    (void)state;
    uint8_t payload[1000];
    for (size_t i = 0; i < sizeof payload; i++) {
        payload[i] = (uint8_t)(i * 7);
    }
    static collect c;
    assert_int_equal(tether_uart_frame_write(payload, sizeof payload, put, &c), 0);
    static uint8_t ref[TETHER_UART_ENCODED_MAX(1000)];
    size_t n;
    assert_int_equal(tether_uart_frame_encode(payload, sizeof payload, ref, sizeof ref, &n), 0);
    assert_int_equal(c.len, n);
    assert_memory_equal(c.buf, ref, n);
    assert_true(c.calls > 1);
    assert_int_equal(tether_uart_frame_write(payload, 10, put_fail, NULL), TETHER_ERR_IO);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc),
        cmocka_unit_test(test_stream_roundtrip_splits),
        cmocka_unit_test(test_stream_errors),
        cmocka_unit_test(test_uart_roundtrip_escapes),
        cmocka_unit_test(test_uart_bit_flips),
        cmocka_unit_test(test_uart_truncation_garbage_oversize),
        cmocka_unit_test(test_uart_push_partial),
        cmocka_unit_test(test_uart_write_stream),
        cmocka_unit_test(test_crc32),
        cmocka_unit_test(test_uart_link2),
        cmocka_unit_test(test_uart_link2_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
