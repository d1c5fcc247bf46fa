/*
 * tether rpc: chunked-transfer flow control and the duplicate-request reply cache
 * (see tether/rpc/flow.h).
 *
 * Must stay true: the chunker never hands out more than `window` unacknowledged chunks, chunks
 * tile [0, total) without gaps or overlap, and acks are accepted only in order; the reply cache
 * never returns a reply for an id it did not store.
 */
#include "tether/rpc/flow.h"

#include <string.h>

#include "tether/crt/error.h"
#include "tether/rpc/proto.h"

int tether_rpc_chunker_init(tether_rpc_chunker *c, uint64_t total, uint32_t peer_max_frame,
                            uint32_t window) {
    memset(c, 0, sizeof *c);
    uint32_t chunk = tether_rpc_chunk_max(peer_max_frame);
    if (chunk == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "chunker: peer max_frame %u is below the minimum %u",
                                (unsigned)peer_max_frame, (unsigned)TETHER_RPC_MIN_FRAME);
    }
    c->total = total;
    c->chunk = chunk;
    c->window = window ? window : 1;
    return TETHER_OK;
}

bool tether_rpc_chunker_next(tether_rpc_chunker *c, uint64_t *offset, uint32_t *len) {
    if (c->next >= c->total || c->in_flight >= c->window) {
        return false;
    }
    uint64_t left = c->total - c->next;
    *offset = c->next;
    *len = left < c->chunk ? (uint32_t)left : c->chunk;
    c->next += *len;
    c->in_flight++;
    return true;
}

int tether_rpc_chunker_ack(tether_rpc_chunker *c, uint64_t offset, uint32_t len) {
    if (c->in_flight == 0) {
        return tether_set_error(TETHER_ERR_PROTOCOL,
                                "chunker: acknowledgement for offset %llu with nothing in flight",
                                (unsigned long long)offset);
    }
    uint64_t left = c->total - c->acked;
    uint32_t expect = left < c->chunk ? (uint32_t)left : c->chunk;
    if (offset != c->acked || len != expect) {
        return tether_set_error(TETHER_ERR_PROTOCOL,
                                "chunker: acknowledgement for [%llu, +%u), expected [%llu, +%u)",
                                (unsigned long long)offset, (unsigned)len,
                                (unsigned long long)c->acked, (unsigned)expect);
    }
    c->acked += len;
    c->in_flight--;
    return TETHER_OK;
}

void tether_rpc_chunker_rewind(tether_rpc_chunker *c) {
    c->next = c->acked;
    c->in_flight = 0;
}

bool tether_rpc_chunker_done(const tether_rpc_chunker *c) {
    return c->acked >= c->total;
}

int tether_rpc_reply_cache_init(tether_rpc_reply_cache *c, void *mem, size_t size, uint32_t slots) {
    memset(c, 0, sizeof *c);
    if (slots == 0 || slots > TETHER_RPC_REPLY_CACHE_MAX_SLOTS || !mem || size / slots == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "reply cache: %u slots over %zu bytes (1..%u slots, memory needed)",
                                (unsigned)slots, size, (unsigned)TETHER_RPC_REPLY_CACHE_MAX_SLOTS);
    }
    c->slots = slots;
    c->slot_size = size / slots;
    for (uint32_t i = 0; i < slots; i++) {
        c->slot[i].data = (uint8_t *)mem + (size_t)i * c->slot_size;
    }
    return TETHER_OK;
}

bool tether_rpc_reply_cache_lookup(tether_rpc_reply_cache *c, uint32_t id, const uint8_t **reply,
                                   size_t *len) {
    if (id == 0) {
        return false;
    }
    for (uint32_t i = 0; i < c->slots; i++) {
        if (c->slot[i].id == id) {
            *reply = c->slot[i].data;
            *len = c->slot[i].len;
            c->hits++;
            return true;
        }
    }
    return false;
}

int tether_rpc_reply_cache_store(tether_rpc_reply_cache *c, uint32_t id, const void *reply,
                                 size_t len) {
    if (id == 0 || c->slots == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "reply cache: id 0 or no slots");
    }
    /* forget an older reply with the same id (ids are reused only after wrap-around) */
    for (uint32_t i = 0; i < c->slots; i++) {
        if (c->slot[i].id == id) {
            c->slot[i].id = 0;
        }
    }
    if (len > c->slot_size) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "reply cache: reply of %zu bytes exceeds the slot size %zu", len,
                                c->slot_size);
    }
    tether_rpc_reply_slot *s = &c->slot[c->next];
    memcpy(s->data, reply, len);
    s->len = (uint32_t)len;
    s->id = id;
    c->next = (c->next + 1) % c->slots;
    return TETHER_OK;
}

void tether_rpc_reply_cache_clear(tether_rpc_reply_cache *c) {
    for (uint32_t i = 0; i < c->slots; i++) {
        c->slot[i].id = 0;
    }
    c->hits = 0;
    c->next = 0;
}
