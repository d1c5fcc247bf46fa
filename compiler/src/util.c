/*
 * Small host utilities of the compiler: a growable string buffer and whole-file I/O.
 * The buffer never loses data silently: an allocation failure sets `failed`, which writers check.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

void tether__sbuf_init(tether__sbuf *b) {
    memset(b, 0, sizeof *b);
}

void tether__sbuf_free(tether__sbuf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

static int reserve(tether__sbuf *b, size_t extra) {
    if (b->failed) {
        return -1;
    }
    if (b->len + extra + 1 <= b->cap) {
        return 0;
    }
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < b->len + extra + 1) {
        ncap *= 2;
    }
    char *p = realloc(b->data, ncap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->data = p;
    b->cap = ncap;
    return 0;
}

void tether__sbuf_vprintf(tether__sbuf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || reserve(b, (size_t)n) != 0) {
        b->failed = 1;
        return;
    }
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void tether__sbuf_vline(tether__sbuf *b, int depth, const char *end, const char *fmt, va_list ap) {
    for (int i = 0; i < depth; i++) {
        tether__sbuf_puts(b, "    ");
    }
    tether__sbuf_vprintf(b, fmt, ap);
    tether__sbuf_puts(b, end);
}

void tether__sbuf_printf(tether__sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tether__sbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

void tether__sbuf_puts(tether__sbuf *b, const char *s) {
    size_t n = strlen(s);
    if (reserve(b, n) != 0) {
        return;
    }
    memcpy(b->data + b->len, s, n + 1);
    b->len += n;
}

int tether__write_file(const char *path, const void *data, size_t n) {
    return tether_file_write(path, data, n);
}

int tether__read_file(const char *path, char **out, size_t *len) {
    return tether_file_read_text(path, TETHER_COMPILER_MAX_FILE, out, len);
}

/* The long form of the last error (tether_error_detail): kept with a copy of the short message it
 * belongs to, so a later error makes it stale without anyone clearing it. */
static _Thread_local char error_detail[16384];
static _Thread_local char error_detail_owner[TETHER_ERROR_MSG_MAX];

void tether_set_error_detail(const char *text) {
    snprintf(error_detail, sizeof error_detail, "%s", text ? text : "");
    snprintf(error_detail_owner, sizeof error_detail_owner, "%s", tether_last_error());
}

const char *tether_error_detail(void) {
    const char *msg = tether_last_error();
    if (error_detail[0] && strcmp(msg, error_detail_owner) == 0) {
        return error_detail;
    }
    return msg;
}

void tether__shape_text(char *buf, size_t n, const int64_t *shape, int ndim) {
    size_t o = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && o < n; i++) {
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "," : "", (long long)shape[i]);
    }
    if (o < n) {
        snprintf(buf + o, n - o, "]");
    }
}

bool tether__c_identifier_ok(const char *p, size_t max_len) {
    if (!p || !isalpha((unsigned char)p[0]) || strlen(p) > max_len) {
        return false;
    }
    for (const char *c = p; *c; c++) {
        if (!isalnum((unsigned char)*c) && *c != '_') {
            return false;
        }
    }
    return true;
}
