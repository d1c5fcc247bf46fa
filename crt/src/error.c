/*
 * Status names, the last-error buffer and tether_format, a bounded printf subset.
 * Invariant: the message buffer is always NUL-terminated; formatting never writes past `size`.
 */
#include <stdint.h>
#include <string.h>

#include "tether/crt/error.h"

#if defined(__STDC_HOSTED__) && __STDC_HOSTED__ && !defined(__STDC_NO_THREADS__)
#define TETHER_THREAD_LOCAL _Thread_local
#else
#define TETHER_THREAD_LOCAL
#endif

static TETHER_THREAD_LOCAL char last_message[TETHER_ERROR_MSG_MAX];
static TETHER_THREAD_LOCAL int last_status;

const char *tether_status_name(int status) {
    switch (status) {
    case TETHER_OK:
        return "TETHER_OK";
    case TETHER_ERR_INVALID_ARG:
        return "TETHER_ERR_INVALID_ARG";
    case TETHER_ERR_OUT_OF_MEMORY:
        return "TETHER_ERR_OUT_OF_MEMORY";
    case TETHER_ERR_UNSUPPORTED:
        return "TETHER_ERR_UNSUPPORTED";
    case TETHER_ERR_LIMIT:
        return "TETHER_ERR_LIMIT";
    case TETHER_ERR_NOT_FOUND:
        return "TETHER_ERR_NOT_FOUND";
    case TETHER_ERR_MISMATCH:
        return "TETHER_ERR_MISMATCH";
    case TETHER_ERR_ALIGNMENT:
        return "TETHER_ERR_ALIGNMENT";
    case TETHER_ERR_STATE:
        return "TETHER_ERR_STATE";
    case TETHER_ERR_IO:
        return "TETHER_ERR_IO";
    case TETHER_ERR_TIMEOUT:
        return "TETHER_ERR_TIMEOUT";
    case TETHER_ERR_PROTOCOL:
        return "TETHER_ERR_PROTOCOL";
    case TETHER_ERR_AUTH:
        return "TETHER_ERR_AUTH";
    case TETHER_ERR_CRASHED:
        return "TETHER_ERR_CRASHED";
    case TETHER_ERR_INTERNAL:
        return "TETHER_ERR_INTERNAL";
    case TETHER_ERR_BUSY:
        return "TETHER_ERR_BUSY";
    default:
        return "TETHER_ERR_UNKNOWN";
    }
}

int tether_set_error(int status, const char *fmt, ...) {
    /* Format into a temporary first: the arguments may include tether_last_error() itself, as
     * when a caller adds context to a callee's message. */
    char text[TETHER_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    tether_vformat(text, sizeof text, fmt, ap);
    va_end(ap);
    memcpy(last_message, text, sizeof text);
    last_status = status;
    return status;
}

const char *tether_last_error(void) {
    return last_message;
}

int tether_last_status(void) {
    return last_status;
}

void tether_clear_error(void) {
    last_message[0] = '\0';
    last_status = TETHER_OK;
}

/* ---- formatter ---- */

typedef struct out_buf {
    char *buf;
    size_t size; /* capacity including the NUL */
    size_t len;  /* characters the full output has so far */
} out_buf;

static void put_char(out_buf *o, char c) {
    if (o->len + 1 < o->size) {
        o->buf[o->len] = c;
    }
    o->len++;
}

static void put_padded(out_buf *o, const char *s, size_t n, int width, int left, char pad) {
    size_t w = width > 0 ? (size_t)width : 0;
    if (!left) {
        for (size_t i = n; i < w; i++) {
            put_char(o, pad);
        }
    }
    for (size_t i = 0; i < n; i++) {
        put_char(o, s[i]);
    }
    if (left) {
        for (size_t i = n; i < w; i++) {
            put_char(o, ' ');
        }
    }
}

/* Writes magnitude `v` in `base` with an optional sign; handles zero padding after the sign. */
static void put_number(out_buf *o, uint64_t v, unsigned base, int negative, int upper, int width,
                       int left, char pad) {
    char digits[24];
    const char *set = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    size_t n = 0;
    do {
        digits[n++] = set[v % base];
        v /= base;
    } while (v != 0);
    char text[26];
    size_t len = 0;
    if (negative && pad != '0') {
        text[len++] = '-';
    }
    while (n > 0) {
        text[len++] = digits[--n];
    }
    if (negative && pad == '0') {
        put_char(o, '-');
        width = width > 0 ? width - 1 : 0;
    }
    put_padded(o, text, len, width, left, pad);
}

size_t tether_vformat(char *buf, size_t size, const char *fmt, va_list ap) {
    out_buf o = {buf, size, 0};
    if (fmt == NULL) {
        fmt = "(null format)";
    }
    for (const char *p = fmt; *p != '\0'; p++) {
        if (*p != '%') {
            put_char(&o, *p);
            continue;
        }
        p++;
        int left = 0;
        char pad = ' ';
        for (;; p++) {
            if (*p == '-') {
                left = 1;
            } else if (*p == '0') {
                pad = '0';
            } else {
                break;
            }
        }
        if (left) {
            pad = ' ';
        }
        int width = 0;
        while (*p >= '0' && *p <= '9') {
            width = width * 10 + (*p - '0');
            p++;
        }
        int precision = -1;
        if (*p == '.') {
            p++;
            precision = 0;
            if (*p == '*') {
                precision = va_arg(ap, int);
                p++;
            }
            while (*p >= '0' && *p <= '9') {
                precision = precision * 10 + (*p - '0');
                p++;
            }
        }
        /* length: 0 int, 1 long, 2 long long, 3 size_t (char/short promote to int) */
        int length = 0;
        if (*p == 'h') {
            p++;
            if (*p == 'h') {
                p++;
            }
        } else if (*p == 'l') {
            p++;
            length = 1;
            if (*p == 'l') {
                p++;
                length = 2;
            }
        } else if (*p == 'z') {
            p++;
            length = 3;
        }
        switch (*p) {
        case 'd':
        case 'i': {
            int64_t v;
            if (length == 1) {
                v = va_arg(ap, long);
            } else if (length == 2) {
                v = va_arg(ap, long long);
            } else if (length == 3) {
                v = (int64_t)va_arg(ap, size_t);
            } else {
                v = va_arg(ap, int);
            }
            uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
            put_number(&o, mag, 10, v < 0, 0, width, left, pad);
            break;
        }
        case 'u':
        case 'x':
        case 'X': {
            uint64_t v;
            if (length == 1) {
                v = va_arg(ap, unsigned long);
            } else if (length == 2) {
                v = va_arg(ap, unsigned long long);
            } else if (length == 3) {
                v = va_arg(ap, size_t);
            } else {
                v = va_arg(ap, unsigned int);
            }
            put_number(&o, v, *p == 'u' ? 10 : 16, 0, *p == 'X', width, left, pad);
            break;
        }
        case 'p': {
            uintptr_t v = (uintptr_t)va_arg(ap, void *);
            put_char(&o, '0');
            put_char(&o, 'x');
            put_number(&o, (uint64_t)v, 16, 0, 0, width, left, pad);
            break;
        }
        case 'c': {
            char c = (char)va_arg(ap, int);
            put_padded(&o, &c, 1, width, left, ' ');
            break;
        }
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (s == NULL) {
                s = "(null)";
            }
            size_t n = 0;
            while (s[n] != '\0' && (precision < 0 || n < (size_t)precision)) {
                n++;
            }
            put_padded(&o, s, n, width, left, ' ');
            break;
        }
        case 'f':
        case 'g':
        case 'e':
            (void)va_arg(ap, double);
            put_char(&o, '?');
            break;
        case '%':
            put_char(&o, '%');
            break;
        case '\0':
            p--; /* a lone '%' at the end: print it and stop at the NUL */
            put_char(&o, '%');
            break;
        default:
            put_char(&o, '%');
            put_char(&o, *p);
            break;
        }
    }
    if (size > 0) {
        buf[o.len < size ? o.len : size - 1] = '\0';
    }
    return o.len;
}

size_t tether_format(char *buf, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t n = tether_vformat(buf, size, fmt, ap);
    va_end(ap);
    return n;
}
