/*
 * tether rpc: the msgpack-c message codec (tether_rpc_msgpack_*), used by the host and tetherd.
 *
 * Encoding drives msgpack_packer through the shared schema (../src/schema.c); decoding unpacks
 * with msgpack_unpack_next (strings and blobs reference the input, as the API promises) and
 * walks the msgpack_object tree with a cursor. Must stay true: output is byte-identical to the
 * tiny codec; input is pre-scanned with the bounded tiny reader so that msgpack-c never sees an
 * array count larger than the message could hold (no huge zone allocations on hostile input).
 */
#include <msgpack.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../src/schema.h"
#include "tether/crt/error.h"
#include "tether/rpc/codec.h"

/* ---- encode ---- */

typedef struct fixed_buf {
    uint8_t *buf;
    size_t cap;
    size_t len;
    bool full;
} fixed_buf;

static int fixed_write(void *data, const char *p, size_t n) {
    fixed_buf *b = (fixed_buf *)data;
    if (n > b->cap - b->len) {
        b->full = true;
        return -1;
    }
    memcpy(b->buf + b->len, p, n);
    b->len += n;
    return 0;
}

static int pk_rc(msgpack_packer *pk, int rc) {
    (void)pk;
    return rc == 0 ? 0
                   : tether_set_error(TETHER_ERR_LIMIT, "msgpack-c encode: output buffer is full");
}

static int e_uint(void *c, uint64_t v) {
    return pk_rc(c, msgpack_pack_uint64(c, v));
}
static int e_int(void *c, int64_t v) {
    return pk_rc(c, msgpack_pack_int64(c, v));
}
static int e_double(void *c, double v) {
    return pk_rc(c, msgpack_pack_double(c, v));
}
static int e_bool(void *c, bool v) {
    return pk_rc(c, v ? msgpack_pack_true(c) : msgpack_pack_false(c));
}
static int e_nil(void *c) {
    return pk_rc(c, msgpack_pack_nil(c));
}
static int e_str(void *c, const char *s, uint32_t len) {
    int rc = msgpack_pack_str(c, len);
    if (!rc) {
        rc = msgpack_pack_str_body(c, s, len);
    }
    return pk_rc(c, rc);
}
static int e_bin(void *c, const void *p, uint32_t len) {
    int rc = msgpack_pack_bin(c, len);
    if (!rc) {
        rc = msgpack_pack_bin_body(c, p, len);
    }
    return pk_rc(c, rc);
}
static int e_array(void *c, uint32_t n) {
    return pk_rc(c, msgpack_pack_array(c, n));
}

static const tether_rpc_enc_ops mpc_enc = {e_uint, e_int, e_double, e_bool,
                                           e_nil,  e_str, e_bin,    e_array};

int tether_rpc_msgpack_encode(const tether_rpc_msg *m, void *buf, size_t cap, size_t *out_len) {
    if (!buf || !out_len) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "msgpack-c encode: null buffer");
    }
    *out_len = 0;
    fixed_buf fb = {(uint8_t *)buf, cap, 0, false};
    msgpack_packer pk;
    msgpack_packer_init(&pk, &fb, fixed_write);
    int rc = tether__rpc_schema_encode(&mpc_enc, &pk, m);
    if (rc) {
        return rc;
    }
    *out_len = fb.len;
    return TETHER_OK;
}

int tether_rpc_msgpack_encode_alloc(const tether_rpc_msg *m, uint8_t **out, size_t *out_len) {
    if (!out || !out_len) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "msgpack-c encode: null output");
    }
    *out = NULL;
    *out_len = 0;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    int rc = tether__rpc_schema_encode(&mpc_enc, &pk, m);
    if (rc) {
        msgpack_sbuffer_destroy(&sb);
        return rc == TETHER_ERR_LIMIT
                   ? tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "msgpack-c encode: out of memory")
                   : rc;
    }
    size_t size = sb.size;
    *out = (uint8_t *)msgpack_sbuffer_release(&sb);
    *out_len = size;
    if (!*out) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "msgpack-c encode: out of memory");
    }
    return TETHER_OK;
}

/* ---- decode: a cursor over the msgpack_object tree ---- */

typedef struct level {
    const msgpack_object *items;
    uint32_t n, i;
} level;

typedef struct cursor {
    const msgpack_object *root;
    bool root_taken;
    level st[TETHER_MP_MAX_DEPTH + 1];
    int depth;
} cursor;

static int cfail(const char *what) {
    return tether_set_error(TETHER_ERR_PROTOCOL, "msgpack: %s", what);
}

static const msgpack_object *peek_obj(cursor *c) {
    if (c->depth == 0) {
        return c->root_taken ? NULL : c->root;
    }
    level *l = &c->st[c->depth - 1];
    return l->i < l->n ? &l->items[l->i] : NULL;
}

static const msgpack_object *next_obj(cursor *c) {
    const msgpack_object *o = peek_obj(c);
    if (!o) {
        return NULL;
    }
    if (c->depth == 0) {
        c->root_taken = true;
    } else {
        c->st[c->depth - 1].i++;
    }
    return o;
}

static tether_mp_kind d_peek(void *cv) {
    const msgpack_object *o = peek_obj(cv);
    if (!o) {
        return TETHER_MP_INVALID;
    }
    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
        return TETHER_MP_NIL;
    case MSGPACK_OBJECT_BOOLEAN:
        return TETHER_MP_BOOL;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        return TETHER_MP_UINT;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return TETHER_MP_INT;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        return TETHER_MP_FLOAT;
    case MSGPACK_OBJECT_STR:
        return TETHER_MP_STR;
    case MSGPACK_OBJECT_BIN:
        return TETHER_MP_BIN;
    case MSGPACK_OBJECT_ARRAY:
        return TETHER_MP_ARRAY;
    case MSGPACK_OBJECT_MAP:
        return TETHER_MP_MAP;
    default:
        return TETHER_MP_INVALID;
    }
}

static int d_uint(void *cv, uint64_t *v) {
    const msgpack_object *o = next_obj(cv);
    if (!o) {
        return cfail("missing value");
    }
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
        return cfail("expected a non-negative integer");
    }
    *v = o->via.u64;
    return 0;
}

static int d_int(void *cv, int64_t *v) {
    const msgpack_object *o = next_obj(cv);
    if (!o) {
        return cfail("missing value");
    }
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *v = o->via.i64;
        return 0;
    }
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        if (o->via.u64 > (uint64_t)INT64_MAX) {
            return cfail("integer above INT64_MAX");
        }
        *v = (int64_t)o->via.u64;
        return 0;
    }
    return cfail("expected an integer");
}

static int d_double(void *cv, double *v) {
    const msgpack_object *o = next_obj(cv);
    if (!o) {
        return cfail("missing value");
    }
    switch (o->type) {
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        *v = o->via.f64;
        return 0;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        *v = (double)o->via.u64;
        return 0;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        *v = (double)o->via.i64;
        return 0;
    default:
        return cfail("expected a number");
    }
}

static int d_bool(void *cv, bool *v) {
    const msgpack_object *o = next_obj(cv);
    if (!o) {
        return cfail("missing value");
    }
    if (o->type != MSGPACK_OBJECT_BOOLEAN) {
        return cfail("expected a boolean");
    }
    *v = o->via.boolean;
    return 0;
}

static int d_nil(void *cv) {
    const msgpack_object *o = next_obj(cv);
    if (!o) {
        return cfail("missing value");
    }
    if (o->type != MSGPACK_OBJECT_NIL) {
        return cfail("expected nil");
    }
    return 0;
}

static int d_str(void *cv, const char **s, uint32_t *len) {
    const msgpack_object *o = next_obj(cv);
    if (!o) {
        return cfail("missing value");
    }
    if (o->type != MSGPACK_OBJECT_STR) {
        return cfail("expected a string");
    }
    *s = o->via.str.size ? o->via.str.ptr : "";
    *len = o->via.str.size;
    return 0;
}

static int d_bin(void *cv, const uint8_t **p, uint32_t *len) {
    const msgpack_object *o = next_obj(cv);
    if (!o) {
        return cfail("missing value");
    }
    if (o->type != MSGPACK_OBJECT_BIN) {
        return cfail("expected binary data");
    }
    *p = o->via.bin.size ? (const uint8_t *)o->via.bin.ptr : NULL;
    *len = o->via.bin.size;
    return 0;
}

static int d_array(void *cv, uint32_t *n) {
    cursor *c = cv;
    const msgpack_object *o = next_obj(c);
    if (!o) {
        return cfail("missing value");
    }
    if (o->type != MSGPACK_OBJECT_ARRAY) {
        return cfail("expected an array");
    }
    if (c->depth > TETHER_MP_MAX_DEPTH) {
        return cfail("nesting too deep");
    }
    c->st[c->depth].items = o->via.array.ptr;
    c->st[c->depth].n = o->via.array.size;
    c->st[c->depth].i = 0;
    c->depth++;
    *n = o->via.array.size;
    return 0;
}

static int d_skip(void *cv) {
    return next_obj(cv) ? 0 : cfail("missing value");
}

static int d_leave(void *cv) {
    cursor *c = cv;
    if (c->depth == 0) {
        return cfail("cursor underflow");
    }
    level *l = &c->st[c->depth - 1];
    if (l->i != l->n) {
        return cfail("unread array elements");
    }
    c->depth--;
    return 0;
}

static const tether_rpc_dec_ops mpc_dec = {d_peek, d_uint, d_int,   d_double, d_bool, d_nil,
                                           d_str,  d_bin,  d_array, d_skip,   d_leave};

/* One zone per thread, cleared after each message: no allocation per message once it has
 * grown to the largest one (the objects reference the input; the zone holds only their
 * arrays). Freed when the thread ends. */
static pthread_key_t zone_key;
static pthread_once_t zone_once = PTHREAD_ONCE_INIT;

static void zone_free(void *z) {
    msgpack_zone_free(z);
}

static void zone_key_make(void) {
    (void)pthread_key_create(&zone_key, zone_free);
}

static msgpack_zone *thread_zone(void) {
    pthread_once(&zone_once, zone_key_make);
    msgpack_zone *z = pthread_getspecific(zone_key);
    if (!z) {
        z = msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE);
        if (z && pthread_setspecific(zone_key, z) != 0) {
            msgpack_zone_free(z);
            z = NULL;
        }
    }
    return z;
}

int tether_rpc_msgpack_decode(const void *buf, size_t len, tether_rpc_msg *out) {
    return tether_rpc_msgpack_decode_seq(buf, len, out, NULL);
}

int tether_rpc_msgpack_decode_seq(const void *buf, size_t len, tether_rpc_msg *out,
                                  tether_rpc_seq_storage *storage) {
    if (!out || (!buf && len)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "msgpack-c decode: null argument");
    }
    if (len == 0) {
        return tether_set_error(TETHER_ERR_PROTOCOL, "empty message");
    }
    /* bounded structural pre-scan: exactly one value, counts no larger than the input */
    tether_mp_reader r;
    tether_mp_reader_init(&r, buf, len);
    if (tether_mp_skip(&r)) {
        return r.err;
    }
    if (r.pos != len) {
        return tether_set_error(TETHER_ERR_PROTOCOL, "%zu bytes after the end of the message",
                                len - r.pos);
    }
    msgpack_zone *zone = thread_zone();
    if (!zone) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "msgpack-c: no memory for a zone");
    }
    msgpack_object obj;
    size_t off = 0;
    msgpack_unpack_return ur = msgpack_unpack((const char *)buf, len, &off, zone, &obj);
    int rc;
    if (ur != MSGPACK_UNPACK_SUCCESS && ur != MSGPACK_UNPACK_EXTRA_BYTES) {
        rc = tether_set_error(ur == MSGPACK_UNPACK_NOMEM_ERROR ? TETHER_ERR_OUT_OF_MEMORY
                                                               : TETHER_ERR_PROTOCOL,
                              "msgpack-c could not unpack the message (code %d)", (int)ur);
    } else {
        cursor c;
        memset(&c, 0, sizeof c);
        c.root = &obj;
        rc = tether__rpc_schema_decode(&mpc_dec, &c, out, storage);
    }
    msgpack_zone_clear(zone);
    return rc;
}
