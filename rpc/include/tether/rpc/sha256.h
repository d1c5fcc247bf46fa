/*
 * tether rpc: SHA-256 (FIPS 180-4), freestanding, for checking UPLOAD content hashes on devices
 * without a crypto library. Incremental: init, update any number of times, final.
 */
#ifndef TETHER_RPC_SHA256_H
#define TETHER_RPC_SHA256_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tether_sha256_ctx {
    uint32_t h[8];
    uint64_t bytes;
    uint8_t block[64];
    uint32_t fill;
} tether_sha256_ctx;

void tether_sha256_init(tether_sha256_ctx *s);
void tether_sha256_update(tether_sha256_ctx *s, const void *data, size_t len);
void tether_sha256_final(tether_sha256_ctx *s, uint8_t out[32]);
void tether_sha256(const void *data, size_t len, uint8_t out[32]);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_RPC_SHA256_H */
