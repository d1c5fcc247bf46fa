/*
 * tether rpc: zero-allocation msgpack subset writer and reader (see tether/rpc/mp.h).
 *
 * Must stay true: the writer emits exactly the bytes msgpack-c emits for the same values
 * (shortest forms, float64 for doubles); the reader never reads past r->len, never recurses
 * deeper than TETHER_MP_MAX_DEPTH, and every failure is sticky in r->err / w->err.
 */
#include "tether/rpc/mp.h"

#include <string.h>

#include "tether/crt/error.h"

/* ---- writer ---- */

void tether_mp_writer_init(tether_mp_writer *w, void *buf, size_t cap) {
    w->buf = (uint8_t *)buf;
    w->cap = buf ? cap : 0;
    w->len = 0;
    w->err = 0;
}

static int full(tether_mp_writer *w, size_t n);

static int put(tether_mp_writer *w, const void *p, size_t n) {
    if (w->err) {
        return w->err;
    }
    if (n > w->cap - w->len) {
        return full(w, n);
    }
    if (n) {
        memcpy(w->buf + w->len, p, n);
    }
    w->len += n;
    return 0;
}

static int full(tether_mp_writer *w, size_t n) {
    w->err = tether_set_error(TETHER_ERR_LIMIT,
                              "msgpack writer: buffer of %zu bytes is full (need %zu more)", w->cap,
                              n - (w->cap - w->len));
    return w->err;
}

/* A tag byte and a big-endian number of `bytes` bytes, stored directly (no memcpy call: this
 * is the hot path of small messages). */
static int put_tag(tether_mp_writer *w, uint8_t tag, uint64_t v, int bytes) {
    if (w->err) {
        return w->err;
    }
    if ((size_t)bytes + 1 > w->cap - w->len) {
        return full(w, (size_t)bytes + 1);
    }
    uint8_t *p = w->buf + w->len;
    p[0] = tag;
    for (int i = 0; i < bytes; i++) {
        p[1 + i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
    }
    w->len += (size_t)bytes + 1;
    return 0;
}

int tether_mp_write_nil(tether_mp_writer *w) {
    return put_tag(w, 0xc0, 0, 0);
}

int tether_mp_write_bool(tether_mp_writer *w, bool v) {
    return put_tag(w, v ? 0xc3 : 0xc2, 0, 0);
}

int tether_mp_write_uint(tether_mp_writer *w, uint64_t v) {
    if (v < 128) {
        return put_tag(w, (uint8_t)v, 0, 0);
    }
    if (v <= 0xff) {
        return put_tag(w, 0xcc, v, 1);
    }
    if (v <= 0xffff) {
        return put_tag(w, 0xcd, v, 2);
    }
    if (v <= 0xffffffffu) {
        return put_tag(w, 0xce, v, 4);
    }
    return put_tag(w, 0xcf, v, 8);
}

int tether_mp_write_int(tether_mp_writer *w, int64_t v) {
    if (v >= 0) {
        return tether_mp_write_uint(w, (uint64_t)v);
    }
    if (v >= -32) {
        return put_tag(w, (uint8_t)(int8_t)v, 0, 0);
    }
    if (v >= -128) {
        return put_tag(w, 0xd0, (uint64_t)v & 0xff, 1);
    }
    if (v >= -32768) {
        return put_tag(w, 0xd1, (uint64_t)v & 0xffff, 2);
    }
    if (v >= -2147483647 - 1) {
        return put_tag(w, 0xd2, (uint64_t)v & 0xffffffffu, 4);
    }
    return put_tag(w, 0xd3, (uint64_t)v, 8);
}

int tether_mp_write_double(tether_mp_writer *w, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return put_tag(w, 0xcb, bits, 8);
}

int tether_mp_write_str(tether_mp_writer *w, const char *s, uint32_t len) {
    int rc;
    if (len < 32) {
        rc = put_tag(w, (uint8_t)(0xa0 | len), 0, 0);
    } else if (len <= 0xff) {
        rc = put_tag(w, 0xd9, len, 1);
    } else if (len <= 0xffff) {
        rc = put_tag(w, 0xda, len, 2);
    } else {
        rc = put_tag(w, 0xdb, len, 4);
    }
    return rc ? rc : put(w, s, len);
}

int tether_mp_write_bin(tether_mp_writer *w, const void *p, uint32_t len) {
    int rc;
    if (len <= 0xff) {
        rc = put_tag(w, 0xc4, len, 1);
    } else if (len <= 0xffff) {
        rc = put_tag(w, 0xc5, len, 2);
    } else {
        rc = put_tag(w, 0xc6, len, 4);
    }
    return rc ? rc : put(w, p, len);
}

int tether_mp_write_array(tether_mp_writer *w, uint32_t n) {
    if (n < 16) {
        return put_tag(w, (uint8_t)(0x90 | n), 0, 0);
    }
    if (n <= 0xffff) {
        return put_tag(w, 0xdc, n, 2);
    }
    return put_tag(w, 0xdd, n, 4);
}

int tether_mp_write_map(tether_mp_writer *w, uint32_t n) {
    if (n < 16) {
        return put_tag(w, (uint8_t)(0x80 | n), 0, 0);
    }
    if (n <= 0xffff) {
        return put_tag(w, 0xde, n, 2);
    }
    return put_tag(w, 0xdf, n, 4);
}

/* ---- reader ---- */

void tether_mp_reader_init(tether_mp_reader *r, const void *buf, size_t len) {
    r->buf = (const uint8_t *)buf;
    r->len = buf ? len : 0;
    r->pos = 0;
    r->err = 0;
}

static int fail(tether_mp_reader *r, const char *what) {
    if (!r->err) {
        r->err = tether_set_error(TETHER_ERR_PROTOCOL, "msgpack: %s at byte %zu", what, r->pos);
    }
    return r->err;
}

tether_mp_kind tether_mp_peek(const tether_mp_reader *r) {
    if (r->err || r->pos >= r->len) {
        return TETHER_MP_INVALID;
    }
    uint8_t b = r->buf[r->pos];
    if (b <= 0x7f || b == 0xcc || b == 0xcd || b == 0xce || b == 0xcf) {
        return TETHER_MP_UINT;
    }
    if (b >= 0xe0 || (b >= 0xd0 && b <= 0xd3)) {
        /* signed encodings may still hold a non-negative value */
        if (b >= 0xd0 && b <= 0xd3) {
            size_t n = (size_t)1 << (b - 0xd0);
            if (r->len - r->pos - 1 < n) {
                return TETHER_MP_INVALID;
            }
            return (r->buf[r->pos + 1] & 0x80) ? TETHER_MP_INT : TETHER_MP_UINT;
        }
        return TETHER_MP_INT;
    }
    if ((b & 0xf0) == 0x80 || b == 0xde || b == 0xdf) {
        return TETHER_MP_MAP;
    }
    if ((b & 0xf0) == 0x90 || b == 0xdc || b == 0xdd) {
        return TETHER_MP_ARRAY;
    }
    if ((b & 0xe0) == 0xa0 || b == 0xd9 || b == 0xda || b == 0xdb) {
        return TETHER_MP_STR;
    }
    switch (b) {
    case 0xc0:
        return TETHER_MP_NIL;
    case 0xc2:
    case 0xc3:
        return TETHER_MP_BOOL;
    case 0xc4:
    case 0xc5:
    case 0xc6:
        return TETHER_MP_BIN;
    case 0xca:
    case 0xcb:
        return TETHER_MP_FLOAT;
    default:
        return TETHER_MP_INVALID;
    }
}

/* Reads an n-byte big-endian number following the tag byte. */
static int take_be(tether_mp_reader *r, size_t n, uint64_t *v) {
    if (r->len - r->pos < n) {
        return fail(r, "truncated value");
    }
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        x = (x << 8) | r->buf[r->pos + i];
    }
    r->pos += n;
    *v = x;
    return 0;
}

static int tag(tether_mp_reader *r, uint8_t *b) {
    if (r->err) {
        return r->err;
    }
    if (r->pos >= r->len) {
        return fail(r, "unexpected end of message");
    }
    *b = r->buf[r->pos++];
    return 0;
}

int tether_mp_read_nil(tether_mp_reader *r) {
    uint8_t b = 0;
    if (tag(r, &b)) {
        return r->err;
    }
    if (b != 0xc0) {
        r->pos--;
        return fail(r, "expected nil");
    }
    return 0;
}

int tether_mp_read_bool(tether_mp_reader *r, bool *v) {
    uint8_t b = 0;
    if (tag(r, &b)) {
        return r->err;
    }
    if (b != 0xc2 && b != 0xc3) {
        r->pos--;
        return fail(r, "expected a boolean");
    }
    *v = b == 0xc3;
    return 0;
}

/* Reads any integer as sign + magnitude. */
/* *neg and *mag are set on every path, errors included (callers stay defined at -O3). */
static int read_integer(tether_mp_reader *r, bool *neg, uint64_t *mag) {
    uint8_t b = 0;
    uint64_t x = 0;
    *neg = false;
    *mag = 0;
    if (tag(r, &b)) {
        return r->err;
    }
    if (b <= 0x7f) {
        *mag = b;
        return 0;
    }
    if (b >= 0xe0) {
        *neg = true;
        *mag = (uint64_t)(-(int64_t)(int8_t)b);
        return 0;
    }
    if (b >= 0xcc && b <= 0xcf) {
        if (take_be(r, (size_t)1 << (b - 0xcc), &x)) {
            return r->err;
        }
        *mag = x;
        return 0;
    }
    if (b >= 0xd0 && b <= 0xd3) {
        size_t n = (size_t)1 << (b - 0xd0);
        if (take_be(r, n, &x)) {
            return r->err;
        }
        int64_t s;
        if (n == 8) {
            s = (int64_t)x;
        } else {
            uint64_t sign = (uint64_t)1 << (8 * n - 1);
            s = (int64_t)(x ^ sign) - (int64_t)sign;
        }
        if (s < 0) {
            *neg = true;
            *mag = (uint64_t)0 - (uint64_t)s;
        } else {
            *mag = (uint64_t)s;
        }
        return 0;
    }
    r->pos--;
    return fail(r, "expected an integer");
}

int tether_mp_read_uint(tether_mp_reader *r, uint64_t *v) {
    bool neg;
    uint64_t mag;
    size_t at = r->pos;
    if (read_integer(r, &neg, &mag)) {
        return r->err;
    }
    if (neg) {
        r->pos = at;
        return fail(r, "expected a non-negative integer");
    }
    *v = mag;
    return 0;
}

int tether_mp_read_int(tether_mp_reader *r, int64_t *v) {
    bool neg;
    uint64_t mag;
    size_t at = r->pos;
    if (read_integer(r, &neg, &mag)) {
        return r->err;
    }
    if (!neg && mag > (uint64_t)INT64_MAX) {
        r->pos = at;
        return fail(r, "integer above INT64_MAX");
    }
    if (neg && mag > (uint64_t)INT64_MAX + 1u) {
        r->pos = at;
        return fail(r, "integer below INT64_MIN");
    }
    *v = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return 0;
}

int tether_mp_read_double(tether_mp_reader *r, double *v) {
    uint8_t b = 0;
    uint64_t x = 0;
    if (r->err) {
        return r->err;
    }
    tether_mp_kind k = tether_mp_peek(r);
    if (k == TETHER_MP_UINT || k == TETHER_MP_INT) {
        bool neg;
        uint64_t mag;
        if (read_integer(r, &neg, &mag)) {
            return r->err;
        }
        *v = neg ? -(double)mag : (double)mag;
        return 0;
    }
    if (tag(r, &b)) {
        return r->err;
    }
    if (b == 0xcb) {
        if (take_be(r, 8, &x)) {
            return r->err;
        }
        memcpy(v, &x, sizeof *v);
        return 0;
    }
    if (b == 0xca) {
        if (take_be(r, 4, &x)) {
            return r->err;
        }
        uint32_t x32 = (uint32_t)x;
        float f;
        memcpy(&f, &x32, sizeof f);
        *v = f;
        return 0;
    }
    r->pos--;
    return fail(r, "expected a number");
}

static int read_len(tether_mp_reader *r, uint8_t b, uint8_t fix_mask, uint8_t fix_tag, uint8_t tag8,
                    uint32_t *n) {
    uint64_t x = 0;
    if ((b & fix_mask) == fix_tag) {
        *n = (uint32_t)(b & (uint8_t)~fix_mask);
        return 0;
    }
    size_t bytes = b == tag8 ? 1 : b == tag8 + 1 ? 2 : 4;
    if (take_be(r, bytes, &x)) {
        return r->err;
    }
    *n = (uint32_t)x;
    return 0;
}

static int read_blob(tether_mp_reader *r, bool str, const uint8_t **p, uint32_t *len) {
    uint8_t b = 0;
    uint32_t n = 0;
    if (tag(r, &b)) {
        return r->err;
    }
    if (str && ((b & 0xe0) == 0xa0 || (b >= 0xd9 && b <= 0xdb))) {
        if (read_len(r, b, 0xe0, 0xa0, 0xd9, &n)) {
            return r->err;
        }
    } else if (!str && b >= 0xc4 && b <= 0xc6) {
        if (read_len(r, b, 0x00, 0xff, 0xc4, &n)) {
            return r->err;
        }
    } else {
        r->pos--;
        return fail(r, str ? "expected a string" : "expected binary data");
    }
    if (r->len - r->pos < n) {
        return fail(r, str ? "string runs past the end" : "binary data runs past the end");
    }
    *p = r->buf + r->pos;
    *len = n;
    r->pos += n;
    return 0;
}

int tether_mp_read_str(tether_mp_reader *r, const char **s, uint32_t *len) {
    const uint8_t *p = NULL;
    int rc = read_blob(r, true, &p, len);
    if (!rc) {
        *s = (const char *)p;
    }
    return rc;
}

int tether_mp_read_bin(tether_mp_reader *r, const uint8_t **p, uint32_t *len) {
    return read_blob(r, false, p, len);
}

int tether_mp_read_array(tether_mp_reader *r, uint32_t *n) {
    uint8_t b = 0;
    if (tag(r, &b)) {
        return r->err;
    }
    if ((b & 0xf0) == 0x90 || b == 0xdc || b == 0xdd) {
        if (read_len(r, b, 0xf0, 0x90, 0xdb, n)) {
            return r->err;
        }
        /* every element takes at least one byte: reject counts the input cannot hold */
        if (*n > r->len - r->pos) {
            return fail(r, "array count exceeds the message");
        }
        return 0;
    }
    r->pos--;
    return fail(r, "expected an array");
}

int tether_mp_read_map(tether_mp_reader *r, uint32_t *n) {
    uint8_t b = 0;
    if (tag(r, &b)) {
        return r->err;
    }
    if ((b & 0xf0) == 0x80 || b == 0xde || b == 0xdf) {
        if (read_len(r, b, 0xf0, 0x80, 0xdd, n)) {
            return r->err;
        }
        if (*n > (r->len - r->pos) / 2) {
            return fail(r, "map count exceeds the message");
        }
        return 0;
    }
    r->pos--;
    return fail(r, "expected a map");
}

static int skip_depth(tether_mp_reader *r, int depth) {
    if (depth > TETHER_MP_MAX_DEPTH) {
        return fail(r, "nesting too deep");
    }
    const uint8_t *p;
    uint32_t n = 0;
    bool bv;
    double d;
    switch (tether_mp_peek(r)) {
    case TETHER_MP_NIL:
        return tether_mp_read_nil(r);
    case TETHER_MP_BOOL:
        return tether_mp_read_bool(r, &bv);
    case TETHER_MP_UINT:
    case TETHER_MP_INT:
    case TETHER_MP_FLOAT:
        return tether_mp_read_double(r, &d);
    case TETHER_MP_STR:
        return read_blob(r, true, &p, &n);
    case TETHER_MP_BIN:
        return read_blob(r, false, &p, &n);
    case TETHER_MP_ARRAY:
        if (tether_mp_read_array(r, &n)) {
            return r->err;
        }
        for (uint32_t i = 0; i < n; i++) {
            if (skip_depth(r, depth + 1)) {
                return r->err;
            }
        }
        return 0;
    case TETHER_MP_MAP:
        if (tether_mp_read_map(r, &n)) {
            return r->err;
        }
        for (uint32_t i = 0; i < 2 * n; i++) {
            if (skip_depth(r, depth + 1)) {
                return r->err;
            }
        }
        return 0;
    default:
        if (r->err) {
            return r->err;
        }
        return fail(r, r->pos >= r->len ? "unexpected end of message" : "unsupported type byte");
    }
}

int tether_mp_skip(tether_mp_reader *r) {
    return skip_depth(r, 0);
}
