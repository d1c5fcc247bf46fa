/*
 * tether crt: UTF-8 sequence checks (utf8.h). What must stay true: only the sequences of
 * RFC 3629 are accepted (no overlong forms, no surrogates, nothing past U+10FFFF).
 */
#include "tether/crt/utf8.h"

#include <stdint.h>

size_t tether_utf8_seq(const char *s, size_t n) {
    const uint8_t *b = (const uint8_t *)s;
    if (n == 0) {
        return 0;
    }
    if (b[0] < 0x80) {
        return 1;
    }
    size_t len;
    uint32_t cp, min;
    if ((b[0] & 0xE0) == 0xC0) {
        len = 2, cp = b[0] & 0x1Fu, min = 0x80;
    } else if ((b[0] & 0xF0) == 0xE0) {
        len = 3, cp = b[0] & 0x0Fu, min = 0x800;
    } else if ((b[0] & 0xF8) == 0xF0) {
        len = 4, cp = b[0] & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len) {
        return 0;
    }
    for (size_t i = 1; i < len; i++) {
        if ((b[i] & 0xC0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (b[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return 0;
    }
    return len;
}

size_t tether_utf8_cut(const char *s, size_t max) {
    size_t i = 0;
    while (s[i] && i < max) {
        size_t rest = 0;
        while (rest < 4 && s[i + rest]) {
            rest++;
        }
        size_t k = tether_utf8_seq(s + i, rest);
        if (k == 0) {
            k = 1; /* a bad byte counts as one (the escapers replace it) */
        }
        if (i + k > max) {
            break;
        }
        i += k;
    }
    return i;
}
