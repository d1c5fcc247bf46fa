/*
 * tether rpc (internal): the message layout, written once and shared by both codecs.
 *
 * The schema walks a tether_rpc_msg field by field in wire order and calls a codec's primitive
 * operations: the tiny codec plugs in tether_mp_writer/reader, the msgpack-c codec plugs in
 * msgpack_packer and a cursor over msgpack_object trees. Must stay true: the field order here
 * is the table of docs/rpc.md; decode validates with tether_rpc_msg_check before returning.
 */
#ifndef TETHER_RPC_SCHEMA_H
#define TETHER_RPC_SCHEMA_H

#include <stdbool.h>
#include <stdint.h>

#include "tether/rpc/mp.h"
#include "tether/rpc/proto.h"

typedef struct tether_rpc_enc_ops {
    int (*uint_)(void *c, uint64_t v);
    int (*int_)(void *c, int64_t v);
    int (*double_)(void *c, double v);
    int (*bool_)(void *c, bool v);
    int (*nil)(void *c);
    int (*str)(void *c, const char *s, uint32_t len);
    int (*bin)(void *c, const void *p, uint32_t len);
    int (*array)(void *c, uint32_t n);
} tether_rpc_enc_ops;

typedef struct tether_rpc_dec_ops {
    tether_mp_kind (*peek)(void *c);
    int (*uint_)(void *c, uint64_t *v);
    int (*int_)(void *c, int64_t *v);
    int (*double_)(void *c, double *v);
    int (*bool_)(void *c, bool *v);
    int (*nil)(void *c);
    int (*str)(void *c, const char **s, uint32_t *len);
    int (*bin)(void *c, const uint8_t **p, uint32_t *len);
    int (*array)(void *c, uint32_t *n); /* enters the array */
    int (*skip)(void *c);               /* skips one value */
    int (*leave)(void *c);              /* all elements of the innermost array consumed */
} tether_rpc_dec_ops;

/* Body fields of a message type (after type and id) as encoded, and how many of them a decoder
 * requires (the trailing ones may be absent: added later, with defaults); -1 for an unknown
 * type. */
int tether__rpc_body_fields(uint32_t type);
int tether__rpc_required_fields(uint32_t type);

int tether__rpc_schema_encode(const tether_rpc_enc_ops *ops, void *c, const tether_rpc_msg *m);
/* Decodes one message; `end` (may be NULL) checks that nothing follows it. */
/* storage: where the steps of a LAUNCH_SEQ / TIME_SEQ request go; NULL refuses such requests
 * with TETHER_ERR_UNSUPPORTED. */
int tether__rpc_schema_decode(const tether_rpc_dec_ops *ops, void *c, tether_rpc_msg *m,
                              tether_rpc_seq_storage *storage);

#endif /* TETHER_RPC_SCHEMA_H */
