/*
 * tether rpc: AUTH challenge-response helpers (hosted, libsodium).
 *
 * Exchange (docs/rpc.md AUTH): when a device requires auth, its HELLO reply carries a fresh
 * random nonce of TETHER_RPC_NONCE_BYTES. The client answers with AUTH { mac } where
 *   mac = HMAC-SHA256(key = shared token bytes, message = nonce || "tether-auth-v1").
 * The device checks the mac in constant time; a wrong mac gets ERROR(TETHER_ERR_AUTH). Every
 * other request before a successful AUTH gets ERROR(TETHER_ERR_AUTH). The token never crosses
 * the wire. Policy (where the token comes from, retries) belongs to tetherd / the host.
 */
#ifndef TETHER_RPC_AUTH_H
#define TETHER_RPC_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tether/rpc/proto.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TETHER_RPC_AUTH_CONTEXT "tether-auth-v1"

/* Fills nonce with TETHER_RPC_NONCE_BYTES random bytes (libsodium randombytes). */
int tether_rpc_auth_nonce(uint8_t nonce[TETHER_RPC_NONCE_BYTES]);
/* Computes the mac for a nonce. TETHER_ERR_INVALID_ARG for an empty token. */
int tether_rpc_auth_mac(const void *token, size_t token_len,
                        const uint8_t nonce[TETHER_RPC_NONCE_BYTES],
                        uint8_t mac[TETHER_RPC_MAC_BYTES]);
/* TETHER_OK when mac matches (constant-time compare), TETHER_ERR_AUTH otherwise (also when the
 * mac has the wrong length). */
int tether_rpc_auth_verify(const void *token, size_t token_len,
                           const uint8_t nonce[TETHER_RPC_NONCE_BYTES], tether_rpc_bytes mac);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_RPC_AUTH_H */
