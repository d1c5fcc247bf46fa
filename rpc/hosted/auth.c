/*
 * tether rpc: AUTH helpers on libsodium: nonce generation, HMAC-SHA256 over
 * nonce || "tether-auth-v1" keyed with the shared token, constant-time verification.
 *
 * Must stay true: the comparison is constant-time (sodium_memcmp); the token is never copied
 * anywhere but libsodium's HMAC state, which is wiped after use.
 */
#include <sodium.h>
#include <string.h>

#include "tether/crt/error.h"
#include "tether/rpc/auth.h"

static int ready(void) {
    if (sodium_init() < 0) {
        return tether_set_error(TETHER_ERR_INTERNAL, "auth: libsodium failed to initialise");
    }
    return TETHER_OK;
}

int tether_rpc_auth_nonce(uint8_t nonce[TETHER_RPC_NONCE_BYTES]) {
    int rc = ready();
    if (rc) {
        return rc;
    }
    randombytes_buf(nonce, TETHER_RPC_NONCE_BYTES);
    return TETHER_OK;
}

int tether_rpc_auth_mac(const void *token, size_t token_len,
                        const uint8_t nonce[TETHER_RPC_NONCE_BYTES],
                        uint8_t mac[TETHER_RPC_MAC_BYTES]) {
    if (!token || token_len == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "auth: empty token");
    }
    if (!nonce || !mac) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "auth: null nonce or mac");
    }
    int rc = ready();
    if (rc) {
        return rc;
    }
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, token, token_len);
    crypto_auth_hmacsha256_update(&st, nonce, TETHER_RPC_NONCE_BYTES);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)TETHER_RPC_AUTH_CONTEXT,
                                  strlen(TETHER_RPC_AUTH_CONTEXT));
    crypto_auth_hmacsha256_final(&st, mac);
    sodium_memzero(&st, sizeof st);
    return TETHER_OK;
}

int tether_rpc_auth_verify(const void *token, size_t token_len,
                           const uint8_t nonce[TETHER_RPC_NONCE_BYTES], tether_rpc_bytes mac) {
    uint8_t want[TETHER_RPC_MAC_BYTES];
    int rc = tether_rpc_auth_mac(token, token_len, nonce, want);
    if (rc) {
        return rc;
    }
    if (mac.len != TETHER_RPC_MAC_BYTES || !mac.ptr ||
        sodium_memcmp(want, mac.ptr, TETHER_RPC_MAC_BYTES) != 0) {
        sodium_memzero(want, sizeof want);
        return tether_set_error(TETHER_ERR_AUTH, "authentication failed: wrong token");
    }
    sodium_memzero(want, sizeof want);
    return TETHER_OK;
}
