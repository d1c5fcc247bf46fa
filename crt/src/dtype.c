/*
 * DLDataType helpers: sizes, validity and name <-> dtype conversion.
 * Invariant: tether_dtype_parse(tether_dtype_name(t)) == t for every valid t.
 */
#include <string.h>

#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static const char *base_name(DLDataType t) {
    switch (t.code) {
    case kDLInt:
        return "int";
    case kDLUInt:
        return t.bits == 1 ? "bool" : "uint";
    case kDLFloat:
        return "float";
    case kDLBfloat:
        return "bfloat";
    default:
        return NULL;
    }
}

bool tether_dtype_valid(DLDataType t) {
    if (t.lanes == 0) {
        return false;
    }
    switch (t.code) {
    case kDLInt:
        return t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
    case kDLUInt:
        return t.bits == 1 || t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
    case kDLFloat:
        return t.bits == 16 || t.bits == 32 || t.bits == 64;
    case kDLBfloat:
        return t.bits == 16;
    default:
        return false;
    }
}

size_t tether_dtype_bytes(DLDataType t) {
    if (!tether_dtype_valid(t)) {
        return 0;
    }
    /* bool is stored as one byte per element, as numpy and DLPack's kDLBool do. */
    size_t bits = t.bits == 1 ? 8 : t.bits;
    return (bits * t.lanes + 7) / 8;
}

bool tether_dtype_equal(DLDataType a, DLDataType b) {
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

/* Parses a decimal number in [1, max] from s[0..n); returns 0 when not one. */
static unsigned parse_uint(const char *s, size_t n, unsigned max) {
    if (n == 0 || n > 5) {
        return 0;
    }
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return 0;
        }
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (s[0] == '0' || v > max) {
        return 0;
    }
    return v;
}

int tether_dtype_parse(const char *name, DLDataType *out) {
    if (name == NULL || out == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "dtype name is null");
    }
    static const struct {
        const char *prefix;
        uint8_t code;
    } bases[] = {{"bfloat", kDLBfloat}, {"float", kDLFloat}, {"uint", kDLUInt}, {"int", kDLInt}};
    DLDataType t = {0, 0, 1};
    const char *rest = NULL;
    if (strncmp(name, "bool", 4) == 0) {
        t.code = kDLUInt;
        t.bits = 1;
        rest = name + 4;
    } else {
        for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
            size_t n = strlen(bases[i].prefix);
            if (strncmp(name, bases[i].prefix, n) == 0) {
                const char *p = name + n;
                size_t digits = 0;
                while (p[digits] >= '0' && p[digits] <= '9') {
                    digits++;
                }
                t.code = bases[i].code;
                t.bits = (uint8_t)parse_uint(p, digits, 64);
                rest = p + digits;
                break;
            }
        }
    }
    if (rest != NULL && rest[0] == 'x') {
        t.lanes = (uint16_t)parse_uint(rest + 1, strlen(rest + 1), 65535);
        rest += strlen(rest);
    }
    if (rest == NULL || rest[0] != '\0' || !tether_dtype_valid(t)) {
        return tether_set_error(TETHER_ERR_NOT_FOUND,
                                "unknown dtype '%.40s' (expected e.g. float32, float16, int8, "
                                "uint8, int32, int64, bool, bfloat16, float32x4)",
                                name);
    }
    *out = t;
    return TETHER_OK;
}

int tether_dtype_name(DLDataType t, char *buf, size_t size) {
    if (buf == NULL || size == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "dtype name buffer is empty");
    }
    buf[0] = '\0';
    if (!tether_dtype_valid(t)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "invalid dtype (code %u, bits %u, lanes %u)", (unsigned)t.code,
                                (unsigned)t.bits, (unsigned)t.lanes);
    }
    size_t n;
    if (t.code == kDLUInt && t.bits == 1) {
        n = t.lanes == 1 ? tether_format(buf, size, "bool")
                         : tether_format(buf, size, "boolx%u", (unsigned)t.lanes);
    } else if (t.lanes == 1) {
        n = tether_format(buf, size, "%s%u", base_name(t), (unsigned)t.bits);
    } else {
        n = tether_format(buf, size, "%s%ux%u", base_name(t), (unsigned)t.bits, (unsigned)t.lanes);
    }
    if (n >= size) {
        buf[0] = '\0';
        return tether_set_error(TETHER_ERR_LIMIT, "dtype name needs %zu bytes, buffer has %zu",
                                n + 1, size);
    }
    return TETHER_OK;
}
