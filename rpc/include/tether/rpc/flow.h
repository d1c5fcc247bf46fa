/*
 * tether rpc: flow control for chunked transfers and the duplicate-request reply cache.
 * Freestanding (tether_rpc_tiny).
 *
 * Chunker (sender side of COPY_TO / UPLOAD_CHUNK, receiver side of COPY_FROM): splits `total`
 * bytes into chunks of at most tether_rpc_chunk_max(peer max_frame) and allows at most `window`
 * unacknowledged chunks in flight (the window the device announced in HELLO; 1 = stop and wait).
 * Each chunk is one request; its reply is the acknowledgement. Acks must come in order. On a
 * timeout the sender calls tether_rpc_chunker_rewind and resends from the first unacknowledged
 * byte (go-back-N); COPY_TO/UPLOAD_CHUNK at a given offset are idempotent, so a resend is safe.
 *
 * Reply cache (device side): remembers the encoded replies of the last `slots` requests by id.
 * A request whose id is in the cache is answered by resending the cached bytes, never executed
 * again (a retransmission after a lost reply). Memory is caller-provided.
 */
#ifndef TETHER_RPC_FLOW_H
#define TETHER_RPC_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tether_rpc_chunker {
    uint64_t total;  /* bytes to move */
    uint64_t next;   /* offset of the next chunk to send */
    uint64_t acked;  /* bytes acknowledged (contiguous from 0) */
    uint32_t chunk;  /* bytes per chunk */
    uint32_t window; /* most chunks in flight */
    uint32_t in_flight;
} tether_rpc_chunker;

/* chunk = tether_rpc_chunk_max(peer_max_frame) (TETHER_ERR_INVALID_ARG when that is 0); window
 * 0 is treated as 1. total may be 0 (done at once). */
int tether_rpc_chunker_init(tether_rpc_chunker *c, uint64_t total, uint32_t peer_max_frame,
                            uint32_t window);
/* Next chunk to send, if the window and the data allow: returns true with offset/len. */
bool tether_rpc_chunker_next(tether_rpc_chunker *c, uint64_t *offset, uint32_t *len);
/* Acknowledges the oldest in-flight chunk, which must be [offset, offset+len)
 * (TETHER_ERR_PROTOCOL otherwise, naming the expected and received offsets). */
int tether_rpc_chunker_ack(tether_rpc_chunker *c, uint64_t offset, uint32_t len);
/* Forgets every unacknowledged chunk; the next chunk restarts at `acked`. */
void tether_rpc_chunker_rewind(tether_rpc_chunker *c);
bool tether_rpc_chunker_done(const tether_rpc_chunker *c);

typedef struct tether_rpc_reply_slot {
    uint32_t id;   /* 0 = empty */
    uint32_t len;  /* bytes of the cached reply */
    uint8_t *data; /* slot storage (slot_size bytes) */
} tether_rpc_reply_slot;

#define TETHER_RPC_REPLY_CACHE_MAX_SLOTS 8

typedef struct tether_rpc_reply_cache {
    tether_rpc_reply_slot slot[TETHER_RPC_REPLY_CACHE_MAX_SLOTS];
    uint32_t slots;
    size_t slot_size;
    uint32_t next; /* slot overwritten next (round robin) */
    uint32_t hits; /* duplicates answered from the cache */
} tether_rpc_reply_cache;

/* Splits mem[0..size) into `slots` (1..TETHER_RPC_REPLY_CACHE_MAX_SLOTS) equal slots. */
int tether_rpc_reply_cache_init(tether_rpc_reply_cache *c, void *mem, size_t size, uint32_t slots);
/* True (and the cached reply) when `id` was answered before; counts a hit. id 0 never matches. */
bool tether_rpc_reply_cache_lookup(tether_rpc_reply_cache *c, uint32_t id, const uint8_t **reply,
                                   size_t *len);
/* Remembers the reply to `id`. A reply larger than a slot is not cached (TETHER_ERR_LIMIT):
 * callers must then treat a retransmission of id as new (only idempotent replies such as
 * COPY_FROM data get that large). */
int tether_rpc_reply_cache_store(tether_rpc_reply_cache *c, uint32_t id, const void *reply,
                                 size_t len);
void tether_rpc_reply_cache_clear(tether_rpc_reply_cache *c);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_RPC_FLOW_H */
