/*
 * The small integer expression language of custom-operator shape and work-size rules
 * (docs/custom-ops.md): decimal integers, in<i>[d] and out<i>[d] (an extent of input/output i,
 * d counted from the end when negative), + - * / % with the usual precedence, unary minus,
 * parentheses, min(a, b), max(a, b) and ceil_div(a, b). Parsing and evaluation are one pass.
 *
 * What must stay true: any text is safe (bounded recursion, no overflow: every operation is
 * checked in int64); a failure says what was expected and where, never a partial value.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "custom_internal.h"
#include "tether/crt/error.h"

#define CX_MAX_DEPTH 32

typedef struct cx {
    const char *s, *p;
    const tether__cx_env *env;
    char *err;
    size_t errn;
    int failed, depth;
} cx;

static int64_t fail(cx *c, const char *what) {
    if (!c->failed) {
        c->failed = 1;
        if (*c->p) {
            snprintf(c->err, c->errn, "%s at offset %d ('%.12s')", what, (int)(c->p - c->s), c->p);
        } else {
            snprintf(c->err, c->errn, "%s at the end", what);
        }
    }
    return 0;
}

static void ws(cx *c) {
    while (*c->p == ' ' || *c->p == '\t') {
        c->p++;
    }
}

static int eat(cx *c, char ch) {
    ws(c);
    if (*c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

static int64_t expr(cx *c);

static int64_t number(cx *c) {
    int64_t v = 0;
    while (isdigit((unsigned char)*c->p)) {
        if (v > (INT64_MAX - 9) / 10) {
            return fail(c, "number too large");
        }
        v = v * 10 + (*c->p++ - '0');
    }
    return v;
}

static int64_t ref(cx *c, int is_out) {
    if (!isdigit((unsigned char)*c->p)) {
        return fail(c, is_out ? "expected a digit after 'out'" : "expected a digit after 'in'");
    }
    int64_t i = number(c);
    if (!eat(c, '[')) {
        return fail(c, "expected '['");
    }
    ws(c);
    int neg = *c->p == '-';
    if (neg) {
        c->p++;
    }
    if (!isdigit((unsigned char)*c->p)) {
        return fail(c, "expected a dimension index");
    }
    int64_t d = number(c);
    if (!eat(c, ']')) {
        return fail(c, "expected ']'");
    }
    if (c->failed) {
        return 0;
    }
    const tether__cx_env *e = c->env;
    if (e->syntax_only) {
        return 1;
    }
    int n = is_out ? e->nout : e->nin;
    if (i >= n) {
        char m[96];
        snprintf(m, sizeof m, "%s%lld does not exist (the node has %d %s)", is_out ? "out" : "in",
                 (long long)i, n, is_out ? "outputs" : "inputs");
        return fail(c, m);
    }
    const tether_ir_tensor *t = is_out ? e->out[i] : e->in[i];
    if (!t || t->ndim < 0) {
        return fail(c, "a referenced tensor has no known shape");
    }
    int64_t dim = neg ? t->ndim - d : d;
    if ((neg && d == 0) || dim < 0 || dim >= t->ndim) {
        char m[96];
        snprintf(m, sizeof m, "dimension %s%lld is outside %s%lld's rank %d", neg ? "-" : "",
                 (long long)d, is_out ? "out" : "in", (long long)i, t->ndim);
        return fail(c, m);
    }
    return t->shape[dim];
}

static int64_t call2(cx *c, int which) {
    if (!eat(c, '(')) {
        return fail(c, "expected '('");
    }
    int64_t a = expr(c);
    if (!eat(c, ',')) {
        return fail(c, "expected ','");
    }
    int64_t b = expr(c);
    if (!eat(c, ')')) {
        return fail(c, "expected ')'");
    }
    if (c->failed) {
        return 0;
    }
    if (which == 0) {
        return a < b ? a : b;
    }
    if (which == 1) {
        return a > b ? a : b;
    }
    if (b <= 0) {
        return fail(c, "ceil_div by a divisor below 1");
    }
    if (a < 0) {
        return fail(c, "ceil_div of a negative value");
    }
    return a / b + (a % b != 0);
}

static int64_t factor(cx *c) {
    if (++c->depth > CX_MAX_DEPTH) {
        return fail(c, "expression nested too deeply");
    }
    ws(c);
    int64_t v = 0;
    if (*c->p == '-') {
        c->p++;
        v = factor(c);
        v = v == INT64_MIN ? fail(c, "overflow") : -v;
    } else if (*c->p == '(') {
        c->p++;
        v = expr(c);
        if (!eat(c, ')')) {
            v = fail(c, "expected ')'");
        }
    } else if (isdigit((unsigned char)*c->p)) {
        v = number(c);
    } else if (!strncmp(c->p, "in", 2) && isdigit((unsigned char)c->p[2])) {
        c->p += 2;
        v = ref(c, 0);
    } else if (!strncmp(c->p, "out", 3) && isdigit((unsigned char)c->p[3])) {
        c->p += 3;
        v = ref(c, 1);
    } else if (!strncmp(c->p, "min", 3) && !isalnum((unsigned char)c->p[3])) {
        c->p += 3;
        v = call2(c, 0);
    } else if (!strncmp(c->p, "max", 3) && !isalnum((unsigned char)c->p[3])) {
        c->p += 3;
        v = call2(c, 1);
    } else if (!strncmp(c->p, "ceil_div", 8) && !isalnum((unsigned char)c->p[8])) {
        c->p += 8;
        v = call2(c, 2);
    } else {
        v = fail(c, "expected a number, in<i>[d], out<i>[d], min, max, ceil_div or '('");
    }
    c->depth--;
    return v;
}

static int64_t term(cx *c) {
    int64_t v = factor(c);
    for (;;) {
        ws(c);
        char op = *c->p;
        if (c->failed || (op != '*' && op != '/' && op != '%')) {
            return v;
        }
        c->p++;
        int64_t r = factor(c);
        if (c->failed) {
            return 0;
        }
        if (op == '*') {
            if (__builtin_mul_overflow(v, r, &v)) {
                return fail(c, "overflow");
            }
        } else if (r == 0) {
            return fail(c, op == '/' ? "division by zero" : "remainder by zero");
        } else if (v == INT64_MIN && r == -1) {
            return fail(c, "overflow");
        } else {
            v = op == '/' ? v / r : v % r;
        }
    }
}

static int64_t expr(cx *c) {
    int64_t v = term(c);
    for (;;) {
        ws(c);
        char op = *c->p;
        if (c->failed || (op != '+' && op != '-')) {
            return v;
        }
        c->p++;
        int64_t r = term(c);
        if (c->failed) {
            return 0;
        }
        if (op == '+' ? __builtin_add_overflow(v, r, &v) : __builtin_sub_overflow(v, r, &v)) {
            return fail(c, "overflow");
        }
    }
}

int tether__custom_expr_eval(const char *text, const tether__cx_env *env, int64_t *value, char *err,
                             size_t errn) {
    cx c = {.s = text, .p = text, .env = env, .err = err, .errn = errn};
    if (errn) {
        err[0] = '\0';
    }
    int64_t v = expr(&c);
    ws(&c);
    if (!c.failed && *c.p) {
        fail(&c, "unexpected text");
    }
    if (c.failed) {
        return TETHER_ERR_INVALID_ARG;
    }
    *value = v;
    return TETHER_OK;
}
