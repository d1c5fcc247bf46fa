/*
 * tether rpc tests: the shared test vectors, one message of every type (request and reply) plus
 * boundary cases, each with its exact expected bytes (docs/rpc.md encoding). Both codecs must
 * produce exactly these bytes and decode them back to the same message.
 */
#ifndef TETHER_RPC_TEST_VECTORS_H
#define TETHER_RPC_TEST_VECTORS_H

#include <stddef.h>

#include "tether/crt.h"
#include "tether/rpc.h"

typedef struct rpc_vector {
    const char *name;
    void (*build)(tether_rpc_msg *m);
    const char *hex; /* expected bytes, lowercase hex, no separators */
} rpc_vector;

extern const rpc_vector rpc_vectors[];
extern const size_t rpc_vector_count;

/* Field-by-field equality of two messages (strings and blobs by content). */
int rpc_msg_equal(const tether_rpc_msg *a, const tether_rpc_msg *b);

/* Hex helpers; hex_decode returns the byte count or -1. */
long hex_decode(const char *hex, unsigned char *out, size_t cap);
void hex_encode(const unsigned char *p, size_t n, char *out);

#endif
