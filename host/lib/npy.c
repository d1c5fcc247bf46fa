/*
 * tether host: .npy reader and writer.
 *
 * What must stay true: a file is accepted only when its header parses completely (magic,
 * version, header length, the dict with descr, fortran_order and shape) and the data that follows
 * is exactly shape x itemsize bytes; nothing is allocated on failure.
 */
#include "tether/npy.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tether/crt.h"
#include "tether/host.h"

/* The descr strings numpy writes for each element type (the first of a type is the one
 * written). bool is DLPack's (kDLUInt, 1), one byte 0/1; bfloat16 has no numpy type: it is
 * written as descr 'bfloat16' (np.load reads it once ml_dtypes is imported) and read from that
 * or from '<V2'/'|V2', which is what np.save writes for an ml_dtypes.bfloat16 array. */
static const struct {
    const char *descr;
    uint8_t code, bits;
} k_types[] = {
    {"<f4", kDLFloat, 32},       {"<f8", kDLFloat, 64},  {"<f2", kDLFloat, 16},
    {"|i1", kDLInt, 8},          {"<i1", kDLInt, 8},     {"|u1", kDLUInt, 8},
    {"<u1", kDLUInt, 8},         {"<i2", kDLInt, 16},    {"<i4", kDLInt, 32},
    {"<i8", kDLInt, 64},         {"<u2", kDLUInt, 16},   {"<u4", kDLUInt, 32},
    {"<u8", kDLUInt, 64},        {"|b1", kDLUInt, 1},    {"<b1", kDLUInt, 1},
    {"bfloat16", kDLBfloat, 16}, {"<V2", kDLBfloat, 16}, {"|V2", kDLBfloat, 16},
};

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && isspace((unsigned char)*p)) {
        p++;
    }
    return p;
}

/* Parses the header of a .npy image of which the first len bytes are at buf (at least the whole
 * header, which may be followed by any part of the data): fills out's dtype, ndim and shape (data
 * NULL), *hdr the header's size and *nbytes the data's size by the header. Shared with npz.c,
 * which inflates only the header of a member before it knows the data's size. */
int tether__npy_parse_header(const void *buf, size_t len, const char *what, tether_npy *out,
                             size_t *hdr, size_t *nbytes_out);
int tether__npy_parse_header(const void *buf, size_t len, const char *what, tether_npy *out,
                             size_t *hdr, size_t *nbytes_out) {
    const uint8_t *b = buf;
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: not a .npy file (bad magic)", what);
    }
    unsigned major = b[6];
    size_t hlen, hoff;
    if (major == 1) {
        hlen = (size_t)b[8] | ((size_t)b[9] << 8);
        hoff = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: truncated .npy header", what);
        }
        hlen = (size_t)b[8] | ((size_t)b[9] << 8) | ((size_t)b[10] << 16) | ((size_t)b[11] << 24);
        hoff = 12;
    } else {
        return tether_set_error(TETHER_ERR_UNSUPPORTED, "%s: .npy format version %u not supported",
                                what, major);
    }
    if (hlen > len - hoff) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: truncated .npy header", what);
    }
    const char *h = (const char *)b + hoff, *end = h + hlen;
    /* The header is a Python dict literal with exactly the keys descr, fortran_order and shape,
     * each once, followed by padding (spaces and a newline) only. */
    const char *p = skip_ws(h, end);
    if (p >= end || *p != '{') {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: .npy header is not a dict", what);
    }
    p++;
    int found = -1, fortran = -1, ndim = -1;
    for (;;) {
        p = skip_ws(p, end);
        if (p < end && *p == '}') {
            break;
        }
        if (p >= end || (*p != '\'' && *p != '"')) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: .npy header dict is malformed",
                                    what);
        }
        const char *ke = memchr(p + 1, *p, (size_t)(end - p - 1));
        if (!ke) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: .npy header: unterminated key",
                                    what);
        }
        const char *key = p + 1;
        size_t klen = (size_t)(ke - key);
        p = skip_ws(ke + 1, end);
        if (p >= end || *p != ':') {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: .npy header: no ':' after '%.*s'",
                                    what, (int)(klen > 20 ? 20 : klen), key);
        }
        p = skip_ws(p + 1, end);
        if (klen == 5 && !memcmp(key, "descr", 5)) {
            if (found != -1) {
                return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: .npy header: 'descr' twice",
                                        what);
            }
            if (p >= end || (*p != '\'' && *p != '"')) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s: .npy header: descr is not a string", what);
            }
            const char *de = memchr(p + 1, *p, (size_t)(end - p - 1));
            if (!de) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s: .npy header: unterminated descr", what);
            }
            found = -2;
            for (size_t t = 0; t < sizeof k_types / sizeof k_types[0]; t++) {
                if ((size_t)(de - p - 1) == strlen(k_types[t].descr) &&
                    memcmp(p + 1, k_types[t].descr, (size_t)(de - p - 1)) == 0) {
                    found = (int)t;
                }
            }
            if (found < 0) {
                return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                        "%s: dtype '%.*s' is not supported (bool, int8..int64, "
                                        "uint8..uint64, float16, bfloat16, float32, float64; "
                                        "little-endian)",
                                        what, (int)(de - p - 1 > 16 ? 16 : de - p - 1), p + 1);
            }
            p = de + 1;
        } else if (klen == 13 && !memcmp(key, "fortran_order", 13)) {
            if (fortran != -1) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s: .npy header: 'fortran_order' twice", what);
            }
            if (end - p >= 4 && memcmp(p, "True", 4) == 0) {
                return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                        "%s: Fortran-order arrays are not supported (save with C "
                                        "order, e.g. np.ascontiguousarray)",
                                        what);
            }
            if (!(end - p >= 5 && memcmp(p, "False", 5) == 0)) {
                return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: bad fortran_order value",
                                        what);
            }
            fortran = 0;
            p += 5;
        } else if (klen == 5 && !memcmp(key, "shape", 5)) {
            if (ndim != -1) {
                return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: .npy header: 'shape' twice",
                                        what);
            }
            if (p >= end || *p != '(') {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s: .npy header has no 'shape' tuple", what);
            }
            p++;
            ndim = 0;
            for (;;) {
                p = skip_ws(p, end);
                if (p >= end) {
                    return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: unterminated shape", what);
                }
                if (*p == ')') {
                    break;
                }
                if (!isdigit((unsigned char)*p)) {
                    return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: bad shape in .npy header",
                                            what);
                }
                if (ndim >= TETHER_MAX_NDIM) {
                    return tether_set_error(TETHER_ERR_LIMIT, "%s: more than %d dimensions", what,
                                            TETHER_MAX_NDIM);
                }
                int64_t v = 0;
                while (p < end && isdigit((unsigned char)*p)) {
                    if (v > (INT64_MAX - 9) / 10) {
                        return tether_set_error(TETHER_ERR_LIMIT, "%s: shape extent too large",
                                                what);
                    }
                    v = v * 10 + (*p++ - '0');
                }
                out->shape[ndim++] = v;
                p = skip_ws(p, end);
                if (p < end && *p == ',') {
                    p++;
                } else if (p < end && *p != ')') {
                    return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: bad shape in .npy header",
                                            what);
                }
            }
            p++;
        } else {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: .npy header: unknown key '%.*s'",
                                    what, (int)(klen > 20 ? 20 : klen), key);
        }
        p = skip_ws(p, end);
        if (p < end && *p == ',') {
            p++;
        } else if (p >= end || *p != '}') {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: .npy header dict is malformed",
                                    what);
        }
    }
    for (p++; p < end; p++) {
        if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r') {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: .npy header: text after the dict",
                                    what);
        }
    }
    if (found < 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: .npy header has no 'descr'", what);
    }
    if (fortran < 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: .npy header has no 'fortran_order'",
                                what);
    }
    if (ndim < 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: .npy header has no 'shape' tuple",
                                what);
    }
    DLDataType dt = {k_types[found].code, k_types[found].bits, 1};
    size_t nbytes;
    if (tether_shape_bytes(out->shape, ndim, dt, &nbytes)) {
        return tether_set_error(TETHER_ERR_LIMIT, "%s: %s", what, tether_last_error());
    }
    out->dtype = dt;
    out->ndim = ndim;
    *hdr = hoff + hlen;
    *nbytes_out = nbytes;
    return 0;
}

/* A bool array holds only bytes 0 and 1 (what numpy writes): anything else is an error naming
 * the element, never a value passed on. Shared with npz.c. */
int tether__npy_check_bool(const char *what, DLDataType dtype, const void *data, size_t nbytes);
int tether__npy_check_bool(const char *what, DLDataType dtype, const void *data, size_t nbytes) {
    if (dtype.code != kDLUInt || dtype.bits != 1) {
        return 0;
    }
    const uint8_t *b = data;
    for (size_t i = 0; i < nbytes; i++) {
        if (b[i] > 1) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "%s: bool element %zu is byte %u (bool data is 0 or 1)", what,
                                    i, (unsigned)b[i]);
        }
    }
    return 0;
}

int tether_npy_parse(const void *buf, size_t len, const char *what, tether_npy *out) {
    const uint8_t *b = buf;
    size_t doff, nbytes;
    int rc = tether__npy_parse_header(buf, len, what, out, &doff, &nbytes);
    if (rc) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    if (len - doff != nbytes) {
        memset(out, 0, sizeof *out);
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "%s: data is %zu bytes but the shape and dtype need %zu", what,
                                len - doff, nbytes);
    }
    if ((rc = tether__npy_check_bool(what, out->dtype, b + doff, nbytes))) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    void *data = malloc(nbytes ? nbytes : 1);
    if (!data) {
        memset(out, 0, sizeof *out);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    }
    if (nbytes) {
        memcpy(data, b + doff, nbytes);
    }
    out->data = data;
    out->nbytes = nbytes;
    return 0;
}

/* Readers of other array formats by file extension (tether_npy_register_reader). */
static struct {
    char ext[16];
    tether_array_reader fn;
} g_readers[4];

int tether_npy_register_reader(const char *ext, tether_array_reader fn) {
    if (!ext || ext[0] != '.' || strlen(ext) >= sizeof g_readers[0].ext || !fn ||
        strcmp(ext, ".npy") == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "array reader extension must be like \".pb\" (not .npy), at most "
                                "15 characters, with a function");
    }
    for (size_t i = 0; i < sizeof g_readers / sizeof g_readers[0]; i++) {
        if (!g_readers[i].fn || strcmp(g_readers[i].ext, ext) == 0) {
            snprintf(g_readers[i].ext, sizeof g_readers[i].ext, "%s", ext);
            g_readers[i].fn = fn;
            return TETHER_OK;
        }
    }
    return tether_set_error(TETHER_ERR_LIMIT, "at most %zu array readers",
                            sizeof g_readers / sizeof g_readers[0]);
}

int tether_npy_read(const char *path, tether_npy *out) {
    memset(out, 0, sizeof *out);
    size_t pl = strlen(path);
    for (size_t i = 0; i < sizeof g_readers / sizeof g_readers[0] && g_readers[i].fn; i++) {
        size_t el = strlen(g_readers[i].ext);
        if (pl > el && strcmp(path + pl - el, g_readers[i].ext) == 0) {
            return g_readers[i].fn(path, out);
        }
    }
    uint8_t *buf;
    size_t len;
    int rc = tether_file_read(path, TETHER_NPY_MAX_FILE, &buf, &len);
    if (rc) {
        return rc;
    }
    rc = tether_npy_parse(buf, len, path, out);
    free(buf);
    return rc;
}

/* The .npy header of an array (magic, version 1.0, the dict padded to 64 bytes, newline) into
 * hdr (at least TETHER_NPY_HEADER_MAX bytes); *hlen its length, *nbytes the data's. what names the
 * file or member in errors. */
#define TETHER_NPY_HEADER_MAX 640
int tether__npy_header(const char *what, DLDataType dtype, const int64_t *shape, int ndim,
                       uint8_t *hdr, size_t *hlen, size_t *nbytes) {
    const char *descr = NULL;
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++) {
        if (k_types[i].code == dtype.code && k_types[i].bits == dtype.bits && dtype.lanes == 1) {
            descr = k_types[i].descr;
            break;
        }
    }
    if (!descr) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED, "%s: dtype not supported for .npy", what);
    }
    if (tether_shape_bytes(shape, ndim, dtype, nbytes)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: %s", what, tether_last_error());
    }
    char dict[512];
    int n =
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < ndim; i++) {
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld%s", (long long)shape[i],
                      ndim == 1 ? "," : (i + 1 < ndim ? ", " : ""));
    }
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    size_t total = 10 + (size_t)n + 1; /* + newline */
    size_t pad = (64 - total % 64) % 64;
    size_t dlen = (size_t)n + pad + 1;
    uint8_t magic[10] = {
        0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)(dlen & 0xff), (uint8_t)(dlen >> 8)};
    memcpy(hdr, magic, 10);
    memcpy(hdr + 10, dict, (size_t)n);
    memset(hdr + 10 + n, ' ', pad);
    hdr[10 + (size_t)n + pad] = '\n';
    *hlen = 10 + dlen;
    return 0;
}

int tether_npy_write(const char *path, DLDataType dtype, const int64_t *shape, int ndim,
                     const void *data) {
    uint8_t hdr[TETHER_NPY_HEADER_MAX];
    size_t hlen, nbytes;
    int rc = tether__npy_header(path, dtype, shape, ndim, hdr, &hlen, &nbytes);
    if (rc) {
        return rc;
    }
    tether_file_out out;
    rc = tether_file_out_open(&out, path);
    if (rc) {
        return rc;
    }
    FILE *f = out.f;
    int ok = fwrite(hdr, 1, hlen, f) == hlen;
    ok = ok && (nbytes == 0 || fwrite(data, 1, nbytes, f) == nbytes);
    if (!ok) {
        tether_file_out_abort(&out);
        return tether_set_error(TETHER_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    if (tether_file_out_commit(&out)) {
        return TETHER_ERR_IO;
    }
    return 0;
}

void tether_npy_free(tether_npy *n) {
    if (n) {
        free(n->data);
        memset(n, 0, sizeof *n);
    }
}

static void shape_text(char *buf, size_t n, const int64_t *shape, int ndim) {
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < ndim && o + 24 < n; i++) {
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "," : "", (long long)shape[i]);
    }
}

int tether_npy_check(const tether_npy *n, const char *path, const char *what, const char *name,
                     DLDataType dtype, int ndim, const int64_t *shape) {
    if (!tether_dtype_equal(n->dtype, dtype)) {
        char have[TETHER_DTYPE_NAME_MAX], want[TETHER_DTYPE_NAME_MAX];
        tether_dtype_name(n->dtype, have, sizeof have);
        tether_dtype_name(dtype, want, sizeof want);
        return tether_set_error(TETHER_ERR_MISMATCH, "%s: dtype %s, but %s '%s' is %s", path, have,
                                what, name, want);
    }
    int same = n->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) {
        same = n->shape[i] == shape[i];
    }
    if (!same) {
        char have[200], want[200];
        shape_text(have, sizeof have, n->shape, n->ndim);
        shape_text(want, sizeof want, shape, ndim);
        return tether_set_error(TETHER_ERR_MISMATCH, "%s: shape [%s], but %s '%s' is [%s]", path,
                                have, what, name, want);
    }
    return 0;
}
