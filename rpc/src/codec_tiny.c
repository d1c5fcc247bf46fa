/*
 * tether rpc: the freestanding message codec (tether_rpc_tiny_*), the schema of schema.c driven
 * by the zero-allocation msgpack reader/writer of mp.c.
 *
 * Must stay true: no allocation, no libc beyond string.h; a decoded message only points into
 * the input buffer; input that is not exactly one message is rejected, with the same result and
 * error as the msgpack-c codec's structural pre-pass (so both codecs accept exactly the same
 * inputs); the pass itself runs only when the schema's decode cannot vouch for the structure
 * (tether_rpc_tiny_decode_seq).
 */
#include <string.h>

#include "schema.h"
#include "tether/crt/error.h"
#include "tether/rpc/codec.h"
#include "tether/rpc/mp.h"

static int w_uint(void *c, uint64_t v) {
    return tether_mp_write_uint(c, v);
}
static int w_int(void *c, int64_t v) {
    return tether_mp_write_int(c, v);
}
static int w_double(void *c, double v) {
    return tether_mp_write_double(c, v);
}
static int w_bool(void *c, bool v) {
    return tether_mp_write_bool(c, v);
}
static int w_nil(void *c) {
    return tether_mp_write_nil(c);
}
static int w_str(void *c, const char *s, uint32_t len) {
    return tether_mp_write_str(c, s, len);
}
static int w_bin(void *c, const void *p, uint32_t len) {
    return tether_mp_write_bin(c, p, len);
}
static int w_array(void *c, uint32_t n) {
    return tether_mp_write_array(c, n);
}

static const tether_rpc_enc_ops tiny_enc = {w_uint, w_int, w_double, w_bool,
                                            w_nil,  w_str, w_bin,    w_array};

static tether_mp_kind r_peek(void *c) {
    return tether_mp_peek(c);
}
static int r_uint(void *c, uint64_t *v) {
    return tether_mp_read_uint(c, v);
}
static int r_int(void *c, int64_t *v) {
    return tether_mp_read_int(c, v);
}
static int r_double(void *c, double *v) {
    return tether_mp_read_double(c, v);
}
static int r_bool(void *c, bool *v) {
    return tether_mp_read_bool(c, v);
}
static int r_nil(void *c) {
    return tether_mp_read_nil(c);
}
static int r_str(void *c, const char **s, uint32_t *len) {
    return tether_mp_read_str(c, s, len);
}
static int r_bin(void *c, const uint8_t **p, uint32_t *len) {
    return tether_mp_read_bin(c, p, len);
}
static int r_array(void *c, uint32_t *n) {
    return tether_mp_read_array(c, n);
}
/* The reader's cursor (the reader first, so that every other op takes it as the reader) and
 * how many values the schema skipped (trailing fields it does not know). */
typedef struct tiny_cursor {
    tether_mp_reader r;
    uint32_t skipped;
} tiny_cursor;

static int r_skip(void *c) {
    ((tiny_cursor *)c)->skipped++;
    return tether_mp_skip(c);
}
static int r_leave(void *c) {
    (void)c;
    return 0;
}

static const tether_rpc_dec_ops tiny_dec = {r_peek, r_uint, r_int,   r_double, r_bool, r_nil,
                                            r_str,  r_bin,  r_array, r_skip,   r_leave};

int tether_rpc_tiny_encode(const tether_rpc_msg *m, void *buf, size_t cap, size_t *out_len) {
    tether_mp_writer w;
    if (!buf || !out_len) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "tiny encode: null buffer");
    }
    *out_len = 0;
    tether_mp_writer_init(&w, buf, cap);
    int rc = tether__rpc_schema_encode(&tiny_enc, &w, m);
    if (rc) {
        return rc;
    }
    *out_len = w.len;
    return TETHER_OK;
}

int tether_rpc_tiny_decode(const void *buf, size_t len, tether_rpc_msg *out) {
    return tether_rpc_tiny_decode_seq(buf, len, out, NULL);
}

/* The structural pass: exactly one value, nesting <= TETHER_MP_MAX_DEPTH from the top. */
static int structure_check(const void *buf, size_t len) {
    tether_mp_reader r;
    tether_mp_reader_init(&r, buf, len);
    if (tether_mp_skip(&r)) {
        return r.err;
    }
    if (r.pos != len) {
        return tether_set_error(TETHER_ERR_PROTOCOL, "%zu bytes after the end of the message",
                                len - r.pos);
    }
    return TETHER_OK;
}

static int schema_pass(const void *buf, size_t len, tether_rpc_msg *out,
                       tether_rpc_seq_storage *storage, uint32_t *skipped) {
    tiny_cursor cur;
    tether_mp_reader_init(&cur.r, buf, len);
    cur.skipped = 0;
    int rc = tether__rpc_schema_decode(&tiny_dec, &cur, out, storage);
    *skipped = cur.skipped;
    if (rc) {
        return rc;
    }
    if (cur.r.pos != len) {
        return tether_set_error(TETHER_ERR_PROTOCOL, "%zu bytes after the end of the message",
                                len - cur.r.pos);
    }
    return TETHER_OK;
}

/* The result (and, on failure, the error) is that of the structural pass followed by the
 * schema's decode, the msgpack-c codec's order. The schema goes first: when it reads the whole
 * message with typed reads alone (no trailing field skipped), the structural pass cannot fail
 * (the schema nests far less than TETHER_MP_MAX_DEPTH, and every value it read is one the pass
 * accepts), so it is left out; this saves walking every request and reply twice. Otherwise
 * (a failure, or a skipped value whose nesting the pass must bound) the pass runs and its error,
 * if any, is the one returned; a schema failure is then decoded again for its own message. */
int tether_rpc_tiny_decode_seq(const void *buf, size_t len, tether_rpc_msg *out,
                               tether_rpc_seq_storage *storage) {
    if (!out || (!buf && len)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "tiny decode: null argument");
    }
    uint32_t skipped = 0;
    int rc = schema_pass(buf, len, out, storage, &skipped);
    if (rc == TETHER_OK && skipped == 0) {
        return TETHER_OK;
    }
    int st = structure_check(buf, len);
    if (st) {
        return st;
    }
    return rc == TETHER_OK ? TETHER_OK : schema_pass(buf, len, out, storage, &skipped);
}

int tether_rpc_peek_header(const void *buf, size_t len, uint32_t *type, uint32_t *id) {
    tether_mp_reader r;
    uint32_t n;
    uint64_t t = 0, i = 0;
    tether_mp_reader_init(&r, buf, len);
    if (tether_mp_read_array(&r, &n) || n < 2 || tether_mp_read_uint(&r, &t) ||
        tether_mp_read_uint(&r, &i) || t > UINT32_MAX || i > UINT32_MAX ||
        !tether_rpc_type_valid((uint32_t)t)) {
        return tether_set_error(TETHER_ERR_PROTOCOL, "message header is not [type, id, ...]");
    }
    if (type) {
        *type = (uint32_t)t;
    }
    if (id) {
        *id = (uint32_t)i;
    }
    return TETHER_OK;
}

int tether_rpc_peek_numbers(const void *buf, size_t len, uint32_t *type, uint32_t *id) {
    tether_mp_reader r;
    uint32_t n;
    uint64_t t = 0, i = 0;
    tether_mp_reader_init(&r, buf, len);
    if (tether_mp_read_array(&r, &n) || n < 2 || tether_mp_read_uint(&r, &t) ||
        tether_mp_read_uint(&r, &i) || t > UINT32_MAX || i > UINT32_MAX) {
        return tether_set_error(TETHER_ERR_PROTOCOL, "message header is not [type, id, ...]");
    }
    *type = (uint32_t)t;
    *id = (uint32_t)i;
    return TETHER_OK;
}

int tether_rpc_encode_split(const tether_rpc_msg *m, void *buf, size_t cap, size_t *head_len,
                            const uint8_t **tail, size_t *tail_len) {
    if (!m || !buf || !head_len || !tail || !tail_len) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "encode split: null argument");
    }
    *tail = NULL;
    *tail_len = 0;
    tether_rpc_msg h = *m;
    tether_rpc_bytes *data = NULL;
    if (m->type == TETHER_RPC_COPY_TO) {
        data = &h.u.copy_to_req.data;
    } else if (m->type == TETHER_RPC_UPLOAD_CHUNK) {
        data = &h.u.upload_chunk_req.data;
    } else if (m->type == (TETHER_RPC_COPY_FROM | TETHER_RPC_REPLY)) {
        data = &h.u.copy_from_rep.data;
    }
    if (!data || data->len < 16) {
        return tether_rpc_tiny_encode(m, buf, cap, head_len);
    }
    int rc = tether_rpc_msg_check(m);
    if (rc) {
        return rc;
    }
    /* the message with empty data ends in its bin header c4 00; the real header replaces it */
    uint32_t n = data->len;
    data->len = 0;
    data->ptr = (const uint8_t *)"";
    size_t len = 0;
    rc = tether_rpc_tiny_encode(&h, buf, cap, &len);
    if (rc) {
        return rc;
    }
    uint8_t *b = (uint8_t *)buf;
    if (len < 2 || b[len - 2] != 0xc4 || b[len - 1] != 0) {
        return tether_set_error(TETHER_ERR_INTERNAL, "encode split: the data is not last");
    }
    len -= 2;
    uint8_t hdr[5];
    size_t hn;
    if (n < 256) {
        hdr[0] = 0xc4, hdr[1] = (uint8_t)n, hn = 2;
    } else if (n < 65536) {
        hdr[0] = 0xc5, hdr[1] = (uint8_t)(n >> 8), hdr[2] = (uint8_t)n, hn = 3;
    } else {
        hdr[0] = 0xc6, hdr[1] = (uint8_t)(n >> 24), hdr[2] = (uint8_t)(n >> 16);
        hdr[3] = (uint8_t)(n >> 8), hdr[4] = (uint8_t)n, hn = 5;
    }
    if (len + hn > cap) {
        return tether_set_error(TETHER_ERR_LIMIT, "encode split: buffer of %zu bytes", cap);
    }
    memcpy(b + len, hdr, hn);
    *head_len = len + hn;
    *tail = m->type == TETHER_RPC_COPY_TO        ? m->u.copy_to_req.data.ptr
            : m->type == TETHER_RPC_UPLOAD_CHUNK ? m->u.upload_chunk_req.data.ptr
                                                 : m->u.copy_from_rep.data.ptr;
    *tail_len = n;
    return TETHER_OK;
}
