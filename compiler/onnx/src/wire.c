/*
 * A pre-check of the protobuf wire format of ONNX files, run before protobuf-c decodes them.
 *
 * protobuf-c reports any decoding problem as a bare failure. This walk over the top-level fields
 * turns the common cases into precise messages: an empty file, a file that is not a protobuf of
 * the expected message at all (its first bytes are no field of that message), and a truncated
 * file (a field whose declared length runs past the end). What must stay true: it reads only
 * inside [buf, buf + len) and never rejects a well-formed message of the expected type (unknown
 * field numbers with valid wire types are accepted once a known field has been seen, as newer
 * ONNX versions add fields).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "tether/crt/error.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

#define M(t) (1u << (t))

typedef struct field_spec {
    uint32_t number;
    unsigned wire_mask;
} field_spec;

static const field_spec model_fields[] = {
    {1, M(WT_VARINT)}, {2, M(WT_LEN)},  {3, M(WT_LEN)},  {4, M(WT_LEN)},
    {5, M(WT_VARINT)}, {6, M(WT_LEN)},  {7, M(WT_LEN)},  {8, M(WT_LEN)},
    {14, M(WT_LEN)},   {20, M(WT_LEN)}, {25, M(WT_LEN)}, {0, 0},
};

static const field_spec tensor_fields[] = {
    {1, M(WT_VARINT) | M(WT_LEN)},
    {2, M(WT_VARINT)},
    {3, M(WT_LEN)},
    {4, M(WT_LEN) | M(WT_I32)},
    {5, M(WT_LEN) | M(WT_VARINT)},
    {6, M(WT_LEN)},
    {7, M(WT_LEN) | M(WT_VARINT)},
    {8, M(WT_LEN)},
    {9, M(WT_LEN)},
    {10, M(WT_LEN) | M(WT_I64)},
    {11, M(WT_LEN) | M(WT_VARINT)},
    {12, M(WT_LEN)},
    {13, M(WT_LEN)},
    {14, M(WT_VARINT)},
    {0, 0},
};

/* Reads a varint at *pos; -1 when it runs past the end, -2 when longer than 10 bytes. */
static int read_varint(const uint8_t *b, size_t len, size_t *pos, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*pos >= len) {
            return -1;
        }
        uint8_t c = b[(*pos)++];
        if (shift < 64) {
            v |= (uint64_t)(c & 0x7f) << shift;
        }
        if (!(c & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -2;
}

static const field_spec *find_field(const field_spec *specs, uint32_t number) {
    for (const field_spec *f = specs; f->number; f++) {
        if (f->number == number) {
            return f;
        }
    }
    return NULL;
}

static void first_bytes(const uint8_t *b, size_t len, char *out, size_t n) {
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < len && i < 8 && o + 4 < n; i++) {
        o += (size_t)snprintf(out + o, n - o, "%s%02x", i ? " " : "", b[i]);
    }
}

int tonnx_wire_check(const uint8_t *b, size_t len, const char *source, tonnx_msg kind) {
    const field_spec *specs = kind == TONNX_MODEL ? model_fields : tensor_fields;
    const char *what = kind == TONNX_MODEL ? "an ONNX model (ModelProto)" : "an ONNX TensorProto";
    char head[40];
    if (len == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: empty file, not %s", source, what);
    }
    size_t pos = 0;
    int known = 0, have_graph = 0;
    while (pos < len) {
        size_t at = pos;
        uint64_t tag = 0;
        int r = read_varint(b, len, &pos, &tag);
        uint32_t number = (uint32_t)(tag >> 3);
        unsigned wt = (unsigned)(tag & 7);
        const field_spec *f = r == 0 && (tag >> 3) <= 0x1fffffff ? find_field(specs, number) : NULL;
        int valid_wt = wt == WT_VARINT || wt == WT_I64 || wt == WT_LEN || wt == WT_I32;
        if (r == -1 && known) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "%s: truncated file: a field tag at offset %zu runs past the "
                                    "end (%zu bytes)",
                                    source, at, len);
        }
        if (r != 0 || number == 0 || !valid_wt || (f && !(f->wire_mask & M(wt))) ||
            (!f && !known)) {
            first_bytes(b, len, head, sizeof head);
            if (!known) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s: not %s: the file does not start with one of its "
                                        "fields (first bytes %s)",
                                        source, what, head);
            }
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "%s: not %s or corrupted: invalid field (number %u, wire type "
                                    "%u) at offset %zu",
                                    source, what, number, wt, at);
        }
        uint64_t v = 0;
        switch (wt) {
        case WT_VARINT:
            r = read_varint(b, len, &pos, &v);
            if (r == -2) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s: corrupted: field %u at offset %zu has an overlong "
                                        "varint",
                                        source, number, at);
            }
            break;
        case WT_I64:
        case WT_I32: {
            size_t need = wt == WT_I64 ? 8 : 4;
            r = len - pos < need ? -1 : 0;
            pos += r ? 0 : need;
            break;
        }
        default:
            r = read_varint(b, len, &pos, &v);
            if (r == 0 && v > len - pos) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s: truncated file: field %u at offset %zu declares %llu "
                                        "bytes, only %zu remain",
                                        source, number, at, (unsigned long long)v, len - pos);
            }
            if (r == 0) {
                pos += (size_t)v;
            }
            break;
        }
        if (r == -1) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "%s: truncated file: field %u at offset %zu runs past the end "
                                    "(%zu bytes)",
                                    source, number, at, len);
        }
        known |= f != NULL;
        have_graph |= kind == TONNX_MODEL && number == 7;
    }
    if (kind == TONNX_MODEL && !have_graph) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%s: not a usable ONNX model: it has no graph (truncated file?)",
                                source);
    }
    return TETHER_OK;
}
