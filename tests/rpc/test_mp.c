/*
 * tether rpc tests: the zero-allocation msgpack subset writer/reader against msgpack-c for every
 * encoding boundary, reader edge cases (truncation, non-canonical forms, sticky errors).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <msgpack.h>

#include "tether/crt.h"
#include "tether/rpc.h"

static uint8_t big[200000];

/* Packs one value both ways and compares. kind: 0 uint, 1 int, 2 str, 3 bin, 4 array, 5 map,
 * 6 double */
static void same(int kind, uint64_t u, int64_t i, double d, uint32_t len) {
    static uint8_t a[200000];
    tether_mp_writer w;
    tether_mp_writer_init(&w, a, sizeof a);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    switch (kind) {
    case 0:
        tether_mp_write_uint(&w, u);
        msgpack_pack_uint64(&pk, u);
        break;
    case 1:
        tether_mp_write_int(&w, i);
        msgpack_pack_int64(&pk, i);
        break;
    case 2:
        tether_mp_write_str(&w, (const char *)big, len);
        msgpack_pack_str(&pk, len);
        msgpack_pack_str_body(&pk, big, len);
        break;
    case 3:
        tether_mp_write_bin(&w, big, len);
        msgpack_pack_bin(&pk, len);
        msgpack_pack_bin_body(&pk, big, len);
        break;
    case 4:
        tether_mp_write_array(&w, len);
        msgpack_pack_array(&pk, len);
        break;
    case 5:
        tether_mp_write_map(&w, len);
        msgpack_pack_map(&pk, len);
        break;
    default:
        tether_mp_write_double(&w, d);
        msgpack_pack_double(&pk, d);
        break;
    }
    assert_int_equal(w.err, 0);
    assert_int_equal(w.len, sb.size);
    assert_memory_equal(a, sb.data, w.len);
    msgpack_sbuffer_destroy(&sb);
}

static void test_writer_matches_msgpack_c(void **state) {
    (void)state;
    static const uint64_t us[] = {
        0, 1, 127, 128, 255, 256, 65535, 65536, 0xffffffffu, 0x100000000ull, UINT64_MAX};
    for (size_t k = 0; k < sizeof us / sizeof us[0]; k++) {
        same(0, us[k], 0, 0, 0);
    }
    static const int64_t is[] = {0,    1,      -1,     -32,           -33,           -128,
                                 -129, -32768, -32769, -2147483648LL, -2147483649LL, INT64_MIN,
                                 127,  128,    65536,  INT64_MAX};
    for (size_t k = 0; k < sizeof is / sizeof is[0]; k++) {
        same(1, 0, is[k], 0, 0);
    }
    static const uint32_t lens[] = {0, 1, 15, 16, 31, 32, 255, 256, 65535, 65536, 100000};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        same(2, 0, 0, 0, lens[k]);
        same(3, 0, 0, 0, lens[k]);
        same(4, 0, 0, 0, lens[k]);
        same(5, 0, 0, 0, lens[k]);
    }
    same(6, 0, 0, 0.0, 0);
    same(6, 0, 0, -1.25e300, 0);
    same(6, 0, 0, 3.14159, 0);
}

static void test_reader_roundtrip(void **state) {
    (void)state;
    uint8_t buf[256];
    tether_mp_writer w;
    tether_mp_writer_init(&w, buf, sizeof buf);
    tether_mp_write_array(&w, 9);
    tether_mp_write_nil(&w);
    tether_mp_write_bool(&w, true);
    tether_mp_write_uint(&w, 70000);
    tether_mp_write_int(&w, -70000);
    tether_mp_write_double(&w, 2.5);
    tether_mp_write_str(&w, "hi", 2);
    tether_mp_write_bin(&w, "\x01\x02", 2);
    tether_mp_write_map(&w, 1);
    tether_mp_write_uint(&w, 1);
    tether_mp_write_uint(&w, 2);
    tether_mp_write_int(&w, 5);
    assert_int_equal(w.err, 0);

    tether_mp_reader r;
    tether_mp_reader_init(&r, buf, w.len);
    uint32_t n;
    bool b;
    uint64_t u;
    int64_t i;
    double d;
    const char *s;
    const uint8_t *p;
    uint32_t len;
    assert_int_equal(tether_mp_peek(&r), TETHER_MP_ARRAY);
    assert_int_equal(tether_mp_read_array(&r, &n), 0);
    assert_int_equal(n, 9);
    assert_int_equal(tether_mp_read_nil(&r), 0);
    assert_int_equal(tether_mp_read_bool(&r, &b), 0);
    assert_true(b);
    assert_int_equal(tether_mp_read_uint(&r, &u), 0);
    assert_int_equal(u, 70000);
    assert_int_equal(tether_mp_peek(&r), TETHER_MP_INT);
    assert_int_equal(tether_mp_read_int(&r, &i), 0);
    assert_int_equal(i, -70000);
    assert_int_equal(tether_mp_read_double(&r, &d), 0);
    assert_true(d == 2.5);
    assert_int_equal(tether_mp_read_str(&r, &s, &len), 0);
    assert_int_equal(len, 2);
    assert_memory_equal(s, "hi", 2);
    assert_int_equal(tether_mp_read_bin(&r, &p, &len), 0);
    assert_memory_equal(p, "\x01\x02", 2);
    assert_int_equal(tether_mp_read_map(&r, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(tether_mp_skip(&r), 0);
    assert_int_equal(tether_mp_skip(&r), 0);
    /* int read of a non-negative value and double read of an int both work */
    assert_int_equal(tether_mp_read_double(&r, &d), 0);
    assert_true(d == 5.0);
    assert_int_equal(r.pos, w.len);
    /* past the end: error, sticky */
    assert_int_equal(tether_mp_read_nil(&r), TETHER_ERR_PROTOCOL);
    assert_int_equal(tether_mp_read_uint(&r, &u), TETHER_ERR_PROTOCOL);
}

static void test_reader_errors(void **state) {
    (void)state;
    tether_mp_reader r;
    uint64_t u;
    int64_t i;
    const char *s;
    uint32_t len;
    /* negative into uint */
    tether_mp_reader_init(&r, "\xff", 1);
    assert_int_equal(tether_mp_read_uint(&r, &u), TETHER_ERR_PROTOCOL);
    /* uint64 above INT64_MAX into int */
    tether_mp_reader_init(&r, "\xcf\x80\x00\x00\x00\x00\x00\x00\x00", 9);
    assert_int_equal(tether_mp_read_int(&r, &i), TETHER_ERR_PROTOCOL);
    /* non-negative int8 is a uint */
    tether_mp_reader_init(&r, "\xd0\x05", 2);
    assert_int_equal(tether_mp_peek(&r), TETHER_MP_UINT);
    assert_int_equal(tether_mp_read_uint(&r, &u), 0);
    assert_int_equal(u, 5);
    /* truncated uint32 */
    tether_mp_reader_init(&r, "\xce\x00\x01", 3);
    assert_int_equal(tether_mp_read_uint(&r, &u), TETHER_ERR_PROTOCOL);
    /* str32 with a length past the end */
    tether_mp_reader_init(&r,
                          "\xdb\xff\xff\xff\xff"
                          "abc",
                          8);
    assert_int_equal(tether_mp_read_str(&r, &s, &len), TETHER_ERR_PROTOCOL);
    /* wrong kind */
    tether_mp_reader_init(&r, "\xa1x", 2);
    assert_int_equal(tether_mp_read_uint(&r, &u), TETHER_ERR_PROTOCOL);
    assert_non_null(strstr(tether_last_error(), "integer"));
    /* ext and reserved bytes are invalid */
    tether_mp_reader_init(&r, "\xc1", 1);
    assert_int_equal(tether_mp_peek(&r), TETHER_MP_INVALID);
    assert_int_equal(tether_mp_skip(&r), TETHER_ERR_PROTOCOL);
    tether_mp_reader_init(&r, "\xd4\x01\x00", 3);
    assert_int_equal(tether_mp_skip(&r), TETHER_ERR_PROTOCOL);
    /* nesting deeper than the limit */
    uint8_t deep[64];
    memset(deep, 0x91, sizeof deep);
    deep[63] = 0xc0;
    tether_mp_reader_init(&r, deep, sizeof deep);
    assert_int_equal(tether_mp_skip(&r), TETHER_ERR_PROTOCOL);
    assert_non_null(strstr(tether_last_error(), "deep"));
    /* writer out of room is sticky and leaves len unchanged */
    uint8_t small[3];
    tether_mp_writer w;
    tether_mp_writer_init(&w, small, sizeof small);
    assert_int_equal(tether_mp_write_uint(&w, 1), 0);
    assert_int_equal(tether_mp_write_uint(&w, 65536), TETHER_ERR_LIMIT);
    assert_int_equal(w.len, 1);
    assert_int_equal(tether_mp_write_uint(&w, 1), TETHER_ERR_LIMIT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_matches_msgpack_c),
        cmocka_unit_test(test_reader_roundtrip),
        cmocka_unit_test(test_reader_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
