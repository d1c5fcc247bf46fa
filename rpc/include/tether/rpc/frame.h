/*
 * tether rpc: framing of encoded messages on byte streams. Freestanding (tether_rpc_tiny).
 *
 * Stream framing (TCP, pipes, stdio): a 4-byte big-endian payload length, then the payload.
 * A length of 0 or above the receiver's max frame is a fatal protocol error: a byte stream cannot
 * resynchronise, so the connection must be closed.
 *
 * UART framing (serial lines, lossy), two forms that every receiver accepts:
 *   classic: 0x7E | esc( len_hi len_lo payload... crc16_hi crc16_lo )
 *   link 2:  0x7E | esc( 0x80|len_hi len_lo payload... crc32 (4 bytes, big-endian) ) | 0x7E
 * 0x7E (FLAG) starts every frame and never occurs inside one: 0x7E and 0x7D inside are sent as
 * 0x7D followed by the byte XOR 0x20. A classic frame's len is 1..32767 (big-endian) and its crc
 * CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final xor) over len and
 * payload. A link-2 frame sets the top bit of len (payload 0..32767 bytes) and carries CRC-32
 * (IEEE 802.3, the CRC of zlib and Ethernet) over the two length bytes as sent and the payload,
 * then a closing FLAG, so that a receiver knows at once when a frame ended early. A link-2
 * frame of length 0 is a NAK: "a damaged frame reached me; resend". Senders use link 2 only
 * towards a peer whose HELLO said it takes it (docs/rpc.md, "UART link"). Back-to-back FLAGs
 * (a closing FLAG, then the next frame's) are not a frame and not a drop.
 * The unframer drops (never delivers) a frame with a bad CRC, a length above its buffer, a
 * truncated frame (a FLAG arrives before the frame is complete), a bad escape, or a run of bytes
 * outside any frame ended by a FLAG (a frame whose start was lost), counts the drop by reason,
 * calls the drop callback, and resynchronises on the next FLAG.
 *
 * Ownership: unframers work in caller buffers; a delivered frame points into that buffer and is
 * valid until the next push.
 */
#ifndef TETHER_RPC_FRAME_H
#define TETHER_RPC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CRC-16/CCITT-FALSE; check value of "123456789" is 0x29B1. Chain with crc = previous result. */
#define TETHER_CRC16_INIT 0xFFFFu
uint16_t tether_crc16_ccitt(uint16_t crc, const void *data, size_t len);

/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32): start with 0, chain with the previous
 * result; check value of "123456789" is 0xCBF43926. */
uint32_t tether_crc32(uint32_t crc, const void *data, size_t len);

/* ---- stream framing ---- */

#define TETHER_STREAM_HEADER_BYTES 4u

/* Writes the 4-byte header for a payload of len bytes (len must be 1..TETHER_RPC_MAX_FRAME_LIMIT;
 * TETHER_ERR_LIMIT otherwise). */
int tether_stream_frame_header(uint8_t hdr[TETHER_STREAM_HEADER_BYTES], size_t len);

typedef struct tether_stream_unframer {
    uint8_t *buf; /* payload buffer (caller memory, cap bytes) */
    size_t cap;   /* largest payload accepted */
    uint8_t hdr[TETHER_STREAM_HEADER_BYTES];
    size_t hdr_have; /* header bytes collected */
    size_t need;     /* payload length of the current frame (valid when hdr_have == 4) */
    size_t have;     /* payload bytes collected */
    int err;         /* sticky fatal error (TETHER_ERR_PROTOCOL / TETHER_ERR_LIMIT) */
} tether_stream_unframer;

void tether_stream_unframer_init(tether_stream_unframer *u, void *buf, size_t cap);

/* Consumes bytes from data[0..len) up to and including the end of the next complete frame.
 * *consumed receives the bytes used. When a frame completed, *frame and *frame_len point at its
 * payload (in u->buf) and 1 is returned; 0 means more bytes are needed; a negative status is a
 * fatal stream error (zero or oversize length). */
int tether_stream_unframer_push(tether_stream_unframer *u, const void *data, size_t len,
                                size_t *consumed, const uint8_t **frame, size_t *frame_len);

/* ---- UART framing ---- */

#define TETHER_UART_FLAG        0x7Eu
#define TETHER_UART_ESCAPE      0x7Du
#define TETHER_UART_XOR         0x20u
#define TETHER_UART_LINK2_BIT   0x80u /* in len_hi: a link-2 frame */
#define TETHER_UART_MAX_PAYLOAD 32767u
/* Worst-case encoded size of a payload of n bytes (either form). */
#define TETHER_UART_ENCODED_MAX(n) (2u + 2u * ((size_t)(n) + 6u))
/* Encoded size of a NAK, at most. */
#define TETHER_UART_NAK_MAX TETHER_UART_ENCODED_MAX(0)

/* Drop reasons. */
typedef enum tether_uart_drop {
    TETHER_UART_DROP_CRC = 0,       /* CRC mismatch */
    TETHER_UART_DROP_OVERSIZE = 1,  /* length 0 (classic) or above the buffer */
    TETHER_UART_DROP_TRUNCATED = 2, /* FLAG arrived mid-frame */
    TETHER_UART_DROP_ESCAPE = 3,    /* escape followed by a byte that is not escapable */
    TETHER_UART_DROP_GARBAGE = 4,   /* bytes outside any frame, ended by a FLAG: a lost start */
} tether_uart_drop;
#define TETHER_UART_DROP_COUNT 5

/* Encodes one classic frame into out[0..cap). TETHER_ERR_LIMIT when it does not fit or len is 0
 * or above TETHER_UART_MAX_PAYLOAD. */
int tether_uart_frame_encode(const void *payload, size_t len, void *out, size_t cap,
                             size_t *out_len);
/* The same in either form: link2 = CRC-32 and the closing FLAG. */
int tether_uart_frame_encode_ex(const void *payload, size_t len, bool link2, void *out, size_t cap,
                                size_t *out_len);

/* Encodes one frame and hands it to put() in small pieces (no buffer needed; for MCUs writing
 * straight to the UART). put returns 0 or a negative status, which aborts and is returned. */
typedef int (*tether_uart_put_fn)(void *ctx, const uint8_t *bytes, size_t n);
int tether_uart_frame_write(const void *payload, size_t len, tether_uart_put_fn put, void *ctx);
int tether_uart_frame_write_ex(const void *payload, size_t len, bool link2, tether_uart_put_fn put,
                               void *ctx);
/* A NAK (link 2, payload length 0): the peer should resend what it is waiting on an answer to. */
int tether_uart_nak_write(tether_uart_put_fn put, void *ctx);
int tether_uart_nak_encode(void *out, size_t cap, size_t *out_len);

typedef void (*tether_uart_drop_fn)(void *ctx, tether_uart_drop reason);

typedef struct tether_uart_unframer {
    uint8_t *buf; /* payload buffer (caller memory) */
    size_t cap;   /* largest payload accepted */
    int state;    /* internal */
    bool escaped;
    bool link2;       /* the frame being read is link 2 */
    bool fresh;       /* a FLAG started this frame and no byte followed yet */
    bool in_garbage;  /* bytes outside frames since the last FLAG */
    uint8_t crc_have; /* CRC bytes read */
    uint16_t len;     /* announced payload length */
    size_t have;      /* payload bytes collected */
    uint16_t crc;     /* running CRC-16 (classic) */
    uint32_t crc32;   /* running CRC-32 (link 2) */
    uint32_t crc_rx;
    uint32_t frames;                          /* frames delivered */
    uint32_t link2_frames;                    /* of which link 2 */
    uint32_t naks;                            /* NAKs received */
    uint32_t dropped[TETHER_UART_DROP_COUNT]; /* frames dropped, per reason */
    uint32_t garbage;                         /* bytes seen outside any frame */
    tether_uart_drop_fn on_drop;              /* optional */
    void *drop_ctx;
} tether_uart_unframer;

void tether_uart_unframer_init(tether_uart_unframer *u, void *buf, size_t cap,
                               tether_uart_drop_fn on_drop, void *drop_ctx);

/* Return values of the feeding functions. */
#define TETHER_UART_FRAME 1 /* a valid frame: its payload is u->buf[0..*frame_len) */
#define TETHER_UART_NAK   2 /* a valid NAK arrived */

/* Feeds one byte (ISR-friendly). Returns TETHER_UART_FRAME when this byte completed a valid
 * frame, whose payload is then u->buf[0..*frame_len) until the next byte is fed;
 * TETHER_UART_NAK when it completed a NAK; 0 otherwise. */
int tether_uart_unframer_byte(tether_uart_unframer *u, uint8_t b, size_t *frame_len);

/* Feeds bytes until a frame or a NAK completes or the input ends; like
 * tether_stream_unframer_push but never fails (bad frames are dropped and counted). Returns
 * TETHER_UART_FRAME with *frame set, TETHER_UART_NAK, or 0. */
int tether_uart_unframer_push(tether_uart_unframer *u, const void *data, size_t len,
                              size_t *consumed, const uint8_t **frame, size_t *frame_len);

/* Total frames dropped for any reason. */
uint32_t tether_uart_unframer_dropped(const tether_uart_unframer *u);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_RPC_FRAME_H */
