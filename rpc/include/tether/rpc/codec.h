/*
 * tether rpc: message encode/decode, two interchangeable codecs.
 *
 *   tether_rpc_tiny_*     freestanding, zero allocation, built on tether/rpc/mp.h (MCU firmware;
 *                         part of tether_rpc_tiny).
 *   tether_rpc_msgpack_*  msgpack-c based (hosted; part of tether_rpc). tetherd and the host
 *                         client decode with the tiny codec, which does less work per message.
 *
 * Both produce byte-identical output for every message and accept each other's output; the
 * shared test vectors in tests/rpc prove it. Decoding validates everything docs/rpc.md states
 * (types, field kinds, every limit) and fails with TETHER_ERR_PROTOCOL or TETHER_ERR_LIMIT and a
 * message naming the message type and field; on failure *out is unspecified but holds no pointer
 * outside the input. A decoded message borrows strings/blobs from the input buffer.
 * Extra trailing fields in a message array are ignored (room for additive protocol changes).
 *
 * LAUNCH_SEQ / TIME_SEQ requests carry more steps and arguments than tether_rpc_msg holds: only
 * the *_decode_seq variants accept them, putting the steps into caller-owned storage that must
 * outlive the decoded message. The plain decoders refuse them with TETHER_ERR_UNSUPPORTED
 * ("kernel sequences are not supported by this peer"), which is what a peer without OpenCL
 * answers. Replies of every type decode with either.
 */
#ifndef TETHER_RPC_CODEC_H
#define TETHER_RPC_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "tether/rpc/proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- tiny codec (freestanding) ---- */

/* Encodes into buf[0..cap). TETHER_ERR_LIMIT when it does not fit, TETHER_ERR_INVALID_ARG when
 * the message breaks a limit or has an unknown type (nothing useful is left in buf). */
int tether_rpc_tiny_encode(const tether_rpc_msg *m, void *buf, size_t cap, size_t *out_len);
int tether_rpc_tiny_decode(const void *buf, size_t len, tether_rpc_msg *out);
int tether_rpc_tiny_decode_seq(const void *buf, size_t len, tether_rpc_msg *out,
                               tether_rpc_seq_storage *storage);

/* Reads only the type and id of an encoded message (cheap; used for duplicate detection and to
 * route replies). Fails like decode when the header is malformed. */
int tether_rpc_peek_header(const void *buf, size_t len, uint32_t *type, uint32_t *id);

/* Reads the first two elements of an encoded message as unsigned 32-bit integers, whatever the
 * type number: a server answers a message of an unknown type with an ERROR carrying its id. */
int tether_rpc_peek_numbers(const void *buf, size_t len, uint32_t *type, uint32_t *id);

/* Checks a message against the protocol limits without encoding it (both encoders call it). */
int tether_rpc_msg_check(const tether_rpc_msg *m);

/* Encodes m (tiny codec) without copying its bulk data: for a message whose last field is its
 * data (COPY_TO, UPLOAD_CHUNK, the COPY_FROM reply) buf receives everything up to and including
 * that bin's header (*head_len bytes) and *tail, *tail_len are the data itself, to be sent after
 * the head as they are; for any other message buf receives the whole encoding and *tail_len is
 * 0. The bytes head + tail are exactly what tether_rpc_tiny_encode writes. */
int tether_rpc_encode_split(const tether_rpc_msg *m, void *buf, size_t cap, size_t *head_len,
                            const uint8_t **tail, size_t *tail_len);

/* ---- msgpack-c codec (hosted) ---- */

/* Encodes into buf[0..cap), like the tiny encoder. */
int tether_rpc_msgpack_encode(const tether_rpc_msg *m, void *buf, size_t cap, size_t *out_len);
/* Encodes into a malloc'ed buffer the caller frees with free(). */
int tether_rpc_msgpack_encode_alloc(const tether_rpc_msg *m, uint8_t **out, size_t *out_len);
int tether_rpc_msgpack_decode(const void *buf, size_t len, tether_rpc_msg *out);
int tether_rpc_msgpack_decode_seq(const void *buf, size_t len, tether_rpc_msg *out,
                                  tether_rpc_seq_storage *storage);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_RPC_CODEC_H */
