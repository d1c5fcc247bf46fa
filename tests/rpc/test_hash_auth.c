/*
 * tether rpc tests: the freestanding SHA-256 against known answers and libsodium, and the AUTH
 * helpers (mac/verify, wrong token, wrong length, empty token).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "tether/crt.h"
#include "tether/rpc.h"

static void test_sha256_known(void **state) {
    (void)state;
    uint8_t out[32];
    tether_sha256("abc", 3, out);
    static const uint8_t abc[32] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
                                    0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
                                    0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
                                    0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
    assert_memory_equal(out, abc, 32);
    tether_sha256("", 0, out);
    assert_int_equal(out[0], 0xe3);
    assert_int_equal(out[31], 0x55);
}

static void test_sha256_vs_libsodium(void **state) {
    (void)state;
    assert_true(sodium_init() >= 0);
    static uint8_t data[5000];
    for (size_t i = 0; i < sizeof data; i++) {
        data[i] = (uint8_t)(i * 31 + 7);
    }
    for (size_t len = 0; len < sizeof data; len += 1 + len / 3) {
        uint8_t a[32], b[32];
        tether_sha256(data, len, a);
        crypto_hash_sha256(b, data, len);
        assert_memory_equal(a, b, 32);
        /* incremental in odd pieces */
        tether_sha256_ctx s;
        tether_sha256_init(&s);
        for (size_t off = 0; off < len;) {
            size_t take = 1 + (off * 7) % 97;
            if (take > len - off) {
                take = len - off;
            }
            tether_sha256_update(&s, data + off, take);
            off += take;
        }
        tether_sha256_final(&s, a);
        assert_memory_equal(a, b, 32);
    }
}

static void test_auth(void **state) {
    (void)state;
    uint8_t nonce[32], nonce2[32], mac[32];
    assert_int_equal(tether_rpc_auth_nonce(nonce), 0);
    assert_int_equal(tether_rpc_auth_nonce(nonce2), 0);
    assert_memory_not_equal(nonce, nonce2, 32);
    const char *token = "s3cret-token";
    assert_int_equal(tether_rpc_auth_mac(token, strlen(token), nonce, mac), 0);
    /* the mac is HMAC-SHA256(token, nonce || context), computed independently here */
    uint8_t msg[32 + 14], want[32];
    memcpy(msg, nonce, 32);
    memcpy(msg + 32, "tether-auth-v1", 14);
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, (const unsigned char *)token, strlen(token));
    crypto_auth_hmacsha256_update(&st, msg, sizeof msg);
    crypto_auth_hmacsha256_final(&st, want);
    assert_memory_equal(mac, want, 32);
    tether_rpc_bytes b = {mac, 32};
    assert_int_equal(tether_rpc_auth_verify(token, strlen(token), nonce, b), 0);
    assert_int_equal(tether_rpc_auth_verify("other", 5, nonce, b), TETHER_ERR_AUTH);
    assert_int_equal(tether_rpc_auth_verify(token, strlen(token), nonce2, b), TETHER_ERR_AUTH);
    mac[5] ^= 1;
    assert_int_equal(tether_rpc_auth_verify(token, strlen(token), nonce, b), TETHER_ERR_AUTH);
    tether_rpc_bytes shortmac = {mac, 31};
    assert_int_equal(tether_rpc_auth_verify(token, strlen(token), nonce, shortmac),
                     TETHER_ERR_AUTH);
    assert_int_equal(tether_rpc_auth_mac("", 0, nonce, mac), TETHER_ERR_INVALID_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_known),
        cmocka_unit_test(test_sha256_vs_libsodium),
        cmocka_unit_test(test_auth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
