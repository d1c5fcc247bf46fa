/*
 * tether rpc: a zero-allocation msgpack subset reader and writer for MCU firmware (and the
 * freestanding message codec built on it).
 *
 * Subset: nil, bool, integers (all widths), float32/float64, str, bin, array, map. No ext, no
 * timestamps. The writer always emits the shortest form of each value, exactly as msgpack-c does
 * (non-negative integers as positive fixint/uint8..uint64, negative as negative fixint/int8..,
 * doubles as float64, str8 for 32..255-byte strings), so both codecs produce identical bytes.
 * The reader accepts every encoding of the subset.
 *
 * Ownership: writer and reader work over caller buffers; strings and blobs read are pointers into
 * the reader's buffer. Errors are sticky: after the first failure every call fails with the same
 * status, so callers may check once at the end. Freestanding: no libc beyond string.h.
 */
#ifndef TETHER_RPC_MP_H
#define TETHER_RPC_MP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Deepest nesting tether_mp_skip follows before giving up (TETHER_ERR_LIMIT). */
#define TETHER_MP_MAX_DEPTH 16

typedef struct tether_mp_writer {
    uint8_t *buf;
    size_t cap;
    size_t len; /* bytes written so far */
    int err;    /* first failure (TETHER_ERR_LIMIT when out of room), 0 otherwise */
} tether_mp_writer;

void tether_mp_writer_init(tether_mp_writer *w, void *buf, size_t cap);
int tether_mp_write_nil(tether_mp_writer *w);
int tether_mp_write_bool(tether_mp_writer *w, bool v);
int tether_mp_write_uint(tether_mp_writer *w, uint64_t v);
int tether_mp_write_int(tether_mp_writer *w, int64_t v);
int tether_mp_write_double(tether_mp_writer *w, double v);
int tether_mp_write_str(tether_mp_writer *w, const char *s, uint32_t len);
int tether_mp_write_bin(tether_mp_writer *w, const void *p, uint32_t len);
int tether_mp_write_array(tether_mp_writer *w, uint32_t n);
int tether_mp_write_map(tether_mp_writer *w, uint32_t n);

/* Kinds seen by the reader. */
typedef enum tether_mp_kind {
    TETHER_MP_NIL,
    TETHER_MP_BOOL,
    TETHER_MP_UINT, /* non-negative integer (any encoding) */
    TETHER_MP_INT,  /* negative integer */
    TETHER_MP_FLOAT,
    TETHER_MP_STR,
    TETHER_MP_BIN,
    TETHER_MP_ARRAY,
    TETHER_MP_MAP,
    TETHER_MP_INVALID, /* ext, reserved byte 0xc1, or truncated */
} tether_mp_kind;

typedef struct tether_mp_reader {
    const uint8_t *buf;
    size_t len;
    size_t pos;
    int err; /* first failure (TETHER_ERR_PROTOCOL with a message), 0 otherwise */
} tether_mp_reader;

void tether_mp_reader_init(tether_mp_reader *r, const void *buf, size_t len);
/* Kind of the next value without consuming it. */
tether_mp_kind tether_mp_peek(const tether_mp_reader *r);
int tether_mp_read_nil(tether_mp_reader *r);
int tether_mp_read_bool(tether_mp_reader *r, bool *v);
/* Unsigned read: rejects negative values. Signed read: rejects values above INT64_MAX. */
int tether_mp_read_uint(tether_mp_reader *r, uint64_t *v);
int tether_mp_read_int(tether_mp_reader *r, int64_t *v);
/* Accepts float32, float64 and integers (converted). */
int tether_mp_read_double(tether_mp_reader *r, double *v);
int tether_mp_read_str(tether_mp_reader *r, const char **s, uint32_t *len);
int tether_mp_read_bin(tether_mp_reader *r, const uint8_t **p, uint32_t *len);
int tether_mp_read_array(tether_mp_reader *r, uint32_t *n);
int tether_mp_read_map(tether_mp_reader *r, uint32_t *n);
/* Skips one complete value (nesting up to TETHER_MP_MAX_DEPTH). */
int tether_mp_skip(tether_mp_reader *r);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_RPC_MP_H */
