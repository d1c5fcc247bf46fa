/*
 * Model text in generated sources, shared by the C and the OpenCL emitter: identifiers built from
 * model names, model names inside comments, float literals, and the check of the user's prefix.
 *
 * What must stay true: a model file never injects code into a generated source. An identifier
 * part holds only [a-z0-9_], starts with a letter and is at most TETHER_CG_IDENT_MAX characters
 * of the name (cut before the emitters make names unique, so every identifier built from one
 * fits their buffers); comment text is printable ASCII with no comment start or end and no
 * trigraph.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "tether/crt/error.h"

static const char *const c_keywords[] = {
    "auto",    "break",  "case",     "char",   "const",    "continue", "default",
    "do",      "double", "else",     "enum",   "extern",   "float",    "for",
    "goto",    "if",     "inline",   "int",    "long",     "register", "restrict",
    "return",  "short",  "signed",   "sizeof", "static",   "struct",   "switch",
    "typedef", "union",  "unsigned", "void",   "volatile", "while",    "main",
};

void tether__cg_ident(char out[TETHER_CG_IDENT_BUF], const char *name, bool avoid_keywords) {
    size_t n = strlen(name);
    if (n > TETHER_CG_IDENT_MAX) {
        n = TETHER_CG_IDENT_MAX;
    }
    size_t o = 0;
    if (!isalpha((unsigned char)name[0])) {
        out[o++] = 't';
        out[o++] = '_';
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        out[o++] = (char)(isalnum(c) ? tolower(c) : '_');
    }
    out[o] = 0;
    for (size_t k = 0; avoid_keywords && k < sizeof c_keywords / sizeof *c_keywords; k++) {
        if (strcmp(out, c_keywords[k]) == 0) {
            strcat(out, "_");
        }
    }
}

const char *tether__cg_comment_text(const char *s) {
    static char buf[4][128];
    static unsigned k;
    char *o = buf[k++ & 3u];
    size_t n = 0;
    for (; *s && n < 120; s++) {
        unsigned char c = (unsigned char)*s;
        char prev = n ? o[n - 1] : 0;
        if ((c == '/' && prev == '*') || (c == '*' && prev == '/') || (c == '?' && prev == '?')) {
            o[n++] = ' ';
        }
        o[n++] = c >= 32 && c < 127 ? (char)c : '?';
    }
    memcpy(o + n, *s ? "..." : "", *s ? 4 : 1);
    return o;
}

int tether__cg_check_prefix(const char *prefix) {
    if (!tether__c_identifier_ok(prefix, TETHER_CG_IDENT_MAX)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "prefix '%s' is not a C identifier of at most %d characters",
                                prefix ? prefix : "(null)", TETHER_CG_IDENT_MAX);
    }
    return TETHER_OK;
}

void tether__cg_float_literal(char *buf, size_t n, float v, bool opencl) {
    if (isnan(v)) {
        snprintf(buf, n, "NAN");
    } else if (isinf(v)) {
        const char *inf = opencl ? "INFINITY" : "HUGE_VALF";
        snprintf(buf, n, v > 0 ? "%s" : "(-%s)", inf);
    } else {
        char t[40];
        snprintf(t, sizeof t, "%.9g", (double)v);
        if (!strchr(t, '.') && !strchr(t, 'e')) {
            strcat(t, ".0");
        }
        snprintf(buf, n, opencl && v < 0 ? "(%sf)" : "%sf", t);
    }
}
