/*
 * tether rpc: CRC-16/CCITT, CRC-32, stream framing and UART framing (see tether/rpc/frame.h).
 *
 * Must stay true: an unframer never writes past its buffer, never delivers a frame whose CRC or
 * length is wrong, accepts classic and link-2 frames alike whatever it sends, and after any
 * garbage resynchronises on the next FLAG byte. The stream
 * unframer's errors are sticky (a byte stream cannot resynchronise).
 */
#include "tether/rpc/frame.h"

#include <string.h>

#include "tether/crt/error.h"
#include "tether/rpc/proto.h"

/* CRC of each 4-bit value, polynomial 0x1021 (a 32-byte table: 4x faster than bit by bit and
 * still small enough for a Cortex-M0). */
static const uint16_t crc_nibble[16] = {0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5,
                                        0x60c6, 0x70e7, 0x8108, 0x9129, 0xa14a, 0xb16b,
                                        0xc18c, 0xd1ad, 0xe1ce, 0xf1ef};

uint16_t tether_crc16_ccitt(uint16_t crc, const void *data, size_t len) {
    const uint8_t *p = (const uint8_t *)data;
    for (size_t i = 0; i < len; i++) {
        crc = (uint16_t)((crc << 4) ^ crc_nibble[((crc >> 12) ^ (p[i] >> 4)) & 0x0f]);
        crc = (uint16_t)((crc << 4) ^ crc_nibble[((crc >> 12) ^ (p[i] & 0x0f)) & 0x0f]);
    }
    return crc;
}

/* CRC-32 of each 4-bit value, reflected polynomial 0xEDB88320 (64 bytes of constants). */
static const uint32_t crc32_nibble[16] = {0x00000000u, 0x1db71064u, 0x3b6e20c8u, 0x26d930acu,
                                          0x76dc4190u, 0x6b6b51f4u, 0x4db26158u, 0x5005713cu,
                                          0xedb88320u, 0xf00f9344u, 0xd6d6a3e8u, 0xcb61b38cu,
                                          0x9b64c2b0u, 0x86d3d2d4u, 0xa00ae278u, 0xbdbdf21cu};

static uint32_t crc32_byte(uint32_t c, uint8_t b) {
    c = (c >> 4) ^ crc32_nibble[(c ^ b) & 0x0f];
    return (c >> 4) ^ crc32_nibble[(c ^ (uint32_t)(b >> 4)) & 0x0f];
}

uint32_t tether_crc32(uint32_t crc, const void *data, size_t len) {
    const uint8_t *p = (const uint8_t *)data;
    uint32_t c = ~crc;
    for (size_t i = 0; i < len; i++) {
        c = crc32_byte(c, p[i]);
    }
    return ~c;
}

/* ---- stream framing ---- */

int tether_stream_frame_header(uint8_t hdr[TETHER_STREAM_HEADER_BYTES], size_t len) {
    if (len == 0 || len > TETHER_RPC_MAX_FRAME_LIMIT) {
        return tether_set_error(TETHER_ERR_LIMIT, "stream frame of %zu bytes (must be 1..%u bytes)",
                                len, (unsigned)TETHER_RPC_MAX_FRAME_LIMIT);
    }
    hdr[0] = (uint8_t)(len >> 24);
    hdr[1] = (uint8_t)(len >> 16);
    hdr[2] = (uint8_t)(len >> 8);
    hdr[3] = (uint8_t)len;
    return TETHER_OK;
}

void tether_stream_unframer_init(tether_stream_unframer *u, void *buf, size_t cap) {
    memset(u, 0, sizeof *u);
    u->buf = (uint8_t *)buf;
    u->cap = buf ? cap : 0;
}

int tether_stream_unframer_push(tether_stream_unframer *u, const void *data, size_t len,
                                size_t *consumed, const uint8_t **frame, size_t *frame_len) {
    const uint8_t *p = (const uint8_t *)data;
    size_t used = 0;
    *consumed = 0;
    if (u->err) {
        return u->err;
    }
    while (used < len) {
        if (u->hdr_have < TETHER_STREAM_HEADER_BYTES) {
            u->hdr[u->hdr_have++] = p[used++];
            if (u->hdr_have == TETHER_STREAM_HEADER_BYTES) {
                size_t n = ((size_t)u->hdr[0] << 24) | ((size_t)u->hdr[1] << 16) |
                           ((size_t)u->hdr[2] << 8) | u->hdr[3];
                if (n == 0) {
                    *consumed = used;
                    u->err = tether_set_error(TETHER_ERR_PROTOCOL,
                                              "stream frame with length 0; closing the stream");
                    return u->err;
                }
                if (n > u->cap) {
                    *consumed = used;
                    u->err = tether_set_error(
                        TETHER_ERR_LIMIT,
                        "stream frame of %zu bytes exceeds the maximum of %zu; closing the stream",
                        n, u->cap);
                    return u->err;
                }
                u->need = n;
                u->have = 0;
            }
            continue;
        }
        size_t take = u->need - u->have;
        if (take > len - used) {
            take = len - used;
        }
        memcpy(u->buf + u->have, p + used, take);
        u->have += take;
        used += take;
        if (u->have == u->need) {
            break;
        }
    }
    *consumed = used;
    if (u->hdr_have == TETHER_STREAM_HEADER_BYTES && u->have == u->need) {
        *frame = u->buf;
        *frame_len = u->need;
        u->hdr_have = 0;
        u->have = 0;
        u->need = 0;
        return 1;
    }
    return 0;
}

/* ---- UART framing ---- */

enum { ST_IDLE, ST_LEN_HI, ST_LEN_LO, ST_PAYLOAD, ST_CRC };

static bool needs_escape(uint8_t b) {
    return b == TETHER_UART_FLAG || b == TETHER_UART_ESCAPE;
}

typedef struct sink {
    uint8_t *out;
    size_t cap;
    size_t len;
} sink;

static int sink_put(void *ctx, const uint8_t *bytes, size_t n) {
    sink *s = (sink *)ctx;
    if (n > s->cap - s->len) {
        return tether_set_error(TETHER_ERR_LIMIT, "UART frame does not fit %zu bytes", s->cap);
    }
    memcpy(s->out + s->len, bytes, n);
    s->len += n;
    return 0;
}

/* Writes FLAG, the escaped header+payload+CRC, and (link 2) the closing FLAG. */
static int frame_write(const uint8_t *p, size_t len, bool link2, tether_uart_put_fn put,
                       void *ctx) {
    uint8_t lenb[2] = {(uint8_t)((len >> 8) | (link2 ? TETHER_UART_LINK2_BIT : 0)), (uint8_t)len};
    uint8_t crcb[4];
    size_t ncrc;
    if (link2) {
        uint32_t crc = tether_crc32(0, lenb, 2);
        crc = tether_crc32(crc, p, len);
        crcb[0] = (uint8_t)(crc >> 24);
        crcb[1] = (uint8_t)(crc >> 16);
        crcb[2] = (uint8_t)(crc >> 8);
        crcb[3] = (uint8_t)crc;
        ncrc = 4;
    } else {
        uint16_t crc = tether_crc16_ccitt(TETHER_CRC16_INIT, lenb, 2);
        crc = tether_crc16_ccitt(crc, p, len);
        crcb[0] = (uint8_t)(crc >> 8);
        crcb[1] = (uint8_t)crc;
        ncrc = 2;
    }
    uint8_t out[64];
    size_t n = 0;
    int rc;
    out[n++] = TETHER_UART_FLAG;
    /* walk len bytes, payload, crc bytes as one sequence */
    for (size_t i = 0; i < len + 2 + ncrc; i++) {
        uint8_t b = i < 2 ? lenb[i] : i < len + 2 ? p[i - 2] : crcb[i - len - 2];
        if (needs_escape(b)) {
            out[n++] = TETHER_UART_ESCAPE;
            out[n++] = (uint8_t)(b ^ TETHER_UART_XOR);
        } else {
            out[n++] = b;
        }
        if (n >= sizeof out - 3) {
            if ((rc = put(ctx, out, n)) != 0) {
                return rc;
            }
            n = 0;
        }
    }
    if (link2) {
        out[n++] = TETHER_UART_FLAG;
    }
    if (n && (rc = put(ctx, out, n)) != 0) {
        return rc;
    }
    return TETHER_OK;
}

int tether_uart_frame_write_ex(const void *payload, size_t len, bool link2, tether_uart_put_fn put,
                               void *ctx) {
    if (len == 0 || len > TETHER_UART_MAX_PAYLOAD) {
        return tether_set_error(TETHER_ERR_LIMIT, "UART frame payload of %zu bytes (1..%u)", len,
                                (unsigned)TETHER_UART_MAX_PAYLOAD);
    }
    return frame_write((const uint8_t *)payload, len, link2, put, ctx);
}

int tether_uart_frame_write(const void *payload, size_t len, tether_uart_put_fn put, void *ctx) {
    return tether_uart_frame_write_ex(payload, len, false, put, ctx);
}

int tether_uart_nak_write(tether_uart_put_fn put, void *ctx) {
    return frame_write((const uint8_t *)"", 0, true, put, ctx);
}

int tether_uart_frame_encode_ex(const void *payload, size_t len, bool link2, void *out, size_t cap,
                                size_t *out_len) {
    sink s = {(uint8_t *)out, out ? cap : 0, 0};
    *out_len = 0;
    int rc = tether_uart_frame_write_ex(payload, len, link2, sink_put, &s);
    if (rc) {
        return rc;
    }
    *out_len = s.len;
    return TETHER_OK;
}

int tether_uart_frame_encode(const void *payload, size_t len, void *out, size_t cap,
                             size_t *out_len) {
    return tether_uart_frame_encode_ex(payload, len, false, out, cap, out_len);
}

int tether_uart_nak_encode(void *out, size_t cap, size_t *out_len) {
    sink s = {(uint8_t *)out, out ? cap : 0, 0};
    *out_len = 0;
    int rc = tether_uart_nak_write(sink_put, &s);
    if (rc) {
        return rc;
    }
    *out_len = s.len;
    return TETHER_OK;
}

void tether_uart_unframer_init(tether_uart_unframer *u, void *buf, size_t cap,
                               tether_uart_drop_fn on_drop, void *drop_ctx) {
    memset(u, 0, sizeof *u);
    u->buf = (uint8_t *)buf;
    u->cap = buf ? cap : 0;
    if (u->cap > TETHER_UART_MAX_PAYLOAD) {
        u->cap = TETHER_UART_MAX_PAYLOAD;
    }
    u->state = ST_IDLE;
    u->on_drop = on_drop;
    u->drop_ctx = drop_ctx;
}

static void drop(tether_uart_unframer *u, tether_uart_drop reason) {
    u->dropped[reason]++;
    u->state = ST_IDLE;
    u->escaped = false;
    if (u->on_drop) {
        u->on_drop(u->drop_ctx, reason);
    }
}

static void start(tether_uart_unframer *u) {
    u->state = ST_LEN_HI;
    u->escaped = false;
    u->fresh = true;
    u->link2 = false;
    u->have = 0;
    u->len = 0;
    u->crc = TETHER_CRC16_INIT;
    u->crc32 = ~0u;
    u->crc_rx = 0;
    u->crc_have = 0;
}

/* The frame's CRC matched: a frame, a NAK, or (classic length 0) a drop. */
static int complete(tether_uart_unframer *u, size_t *frame_len) {
    u->state = ST_IDLE;
    if (u->len == 0) {
        u->naks++;
        return TETHER_UART_NAK;
    }
    u->frames++;
    u->link2_frames += u->link2;
    *frame_len = u->have;
    return TETHER_UART_FRAME;
}

int tether_uart_unframer_byte(tether_uart_unframer *u, uint8_t b, size_t *frame_len) {
    if (b == TETHER_UART_FLAG) {
        if (u->state == ST_IDLE && u->in_garbage) {
            drop(u, TETHER_UART_DROP_GARBAGE); /* a frame whose start was lost */
        } else if (u->state != ST_IDLE && !u->fresh) {
            drop(u, TETHER_UART_DROP_TRUNCATED);
        }
        u->in_garbage = false;
        start(u); /* back-to-back FLAGs: still just the start of the next frame */
        return 0;
    }
    if (u->state == ST_IDLE) {
        u->garbage++;
        u->in_garbage = true;
        return 0;
    }
    u->fresh = false;
    if (u->escaped) {
        u->escaped = false;
        if (b != (TETHER_UART_FLAG ^ TETHER_UART_XOR) &&
            b != (TETHER_UART_ESCAPE ^ TETHER_UART_XOR)) {
            drop(u, TETHER_UART_DROP_ESCAPE);
            return 0;
        }
        b ^= TETHER_UART_XOR;
    } else if (b == TETHER_UART_ESCAPE) {
        u->escaped = true;
        return 0;
    }
    switch (u->state) {
    case ST_LEN_HI:
        u->link2 = (b & TETHER_UART_LINK2_BIT) != 0;
        u->len = (uint16_t)((b & (uint8_t)~TETHER_UART_LINK2_BIT) << 8);
        u->crc = tether_crc16_ccitt(u->crc, &b, 1);
        u->crc32 = crc32_byte(u->crc32, b);
        u->state = ST_LEN_LO;
        return 0;
    case ST_LEN_LO:
        u->len |= b;
        u->crc = tether_crc16_ccitt(u->crc, &b, 1);
        u->crc32 = crc32_byte(u->crc32, b);
        if ((u->len == 0 && !u->link2) || u->len > u->cap) {
            drop(u, TETHER_UART_DROP_OVERSIZE);
            return 0;
        }
        u->state = u->len == 0 ? ST_CRC : ST_PAYLOAD;
        return 0;
    case ST_PAYLOAD:
        u->buf[u->have++] = b;
        if (u->link2) {
            u->crc32 = crc32_byte(u->crc32, b);
        } else {
            u->crc = tether_crc16_ccitt(u->crc, &b, 1);
        }
        if (u->have == u->len) {
            u->state = ST_CRC;
        }
        return 0;
    case ST_CRC:
        u->crc_rx = (u->crc_rx << 8) | b;
        if (++u->crc_have < (u->link2 ? 4 : 2)) {
            return 0;
        }
        if (u->link2 ? u->crc_rx != ~u->crc32 : u->crc_rx != u->crc) {
            drop(u, TETHER_UART_DROP_CRC);
            return 0;
        }
        return complete(u, frame_len);
    default:
        u->state = ST_IDLE;
        return 0;
    }
}

int tether_uart_unframer_push(tether_uart_unframer *u, const void *data, size_t len,
                              size_t *consumed, const uint8_t **frame, size_t *frame_len) {
    const uint8_t *p = (const uint8_t *)data;
    for (size_t i = 0; i < len; i++) {
        int r = tether_uart_unframer_byte(u, p[i], frame_len);
        if (r) {
            *consumed = i + 1;
            if (r == TETHER_UART_FRAME) {
                *frame = u->buf;
            }
            return r;
        }
    }
    *consumed = len;
    return 0;
}

uint32_t tether_uart_unframer_dropped(const tether_uart_unframer *u) {
    uint32_t n = 0;
    for (int i = 0; i < TETHER_UART_DROP_COUNT; i++) {
        n += u->dropped[i];
    }
    return n;
}
