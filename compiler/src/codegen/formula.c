/*
 * The elementwise formulas as generated text: translates the FORMULA column of the operator table
 * (ir/ops.def) into a C or an OpenCL expression, spelling each function from the vocabulary of
 * ir/formula.def. The C emitter (emit_c_kernels.c) and the OpenCL emitter (emit_opencl.c) write
 * every unary, binary and prelu kernel from it; the reference interpreter compiles the same
 * formula as C (interp/interp.c). One formula per operator: nothing here names an operator.
 *
 * What must stay true: the translation keeps the formula's meaning (operands and attributes are
 * substituted whole, an OpenCL primitive spelled as operators is parenthesised wherever it is
 * not the whole expression and its compound arguments are parenthesised); a name or function
 * the vocabulary does not know is an error, never copied through; a row without a formula is an
 * error (TETHER_ERR_INTERNAL), never an identity.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* The formulas as written in the table. */
#define FORMULA_TEXT_(id, name, kind, act, min_in, max_in, attrs, epilogue, formula, defaults,     \
                      types, iformula)                                                             \
    [TETHER_OP_##id] = #formula,
static const char *const formula_src[TETHER_OP_COUNT_] = {TETHER_OP_LIST(FORMULA_TEXT_)};
#undef FORMULA_TEXT_
#define IFORMULA_TEXT_(id, name, kind, act, min_in, max_in, attrs, epilogue, formula, defaults,    \
                       types, iformula)                                                            \
    [TETHER_OP_##id] = #iformula,
static const char *const iformula_src[TETHER_OP_COUNT_] = {TETHER_OP_LIST(IFORMULA_TEXT_)};
#undef IFORMULA_TEXT_

typedef struct math_fn {
    const char *c, *cl;
    int arity;
    tether__math dbl;
} math_fn;
#define MATH_ROW_(id, c, cl, arity, dbl) [TETHER__MATH_##id] = {#c, #cl, arity, TETHER__MATH_##dbl},
static const math_fn math_fns[TETHER__MATH_COUNT] = {TETHER__MATH_LIST(MATH_ROW_)};
#undef MATH_ROW_

typedef struct prim_fn {
    const char *name;
    int arity;
    const char *c, *c_helper;
    tether__math c_math;
    const char *cl;
} prim_fn;
#define PRIM_ROW_(name, arity, c, helper, math, cl)                                                \
    {#name, arity, c, helper, TETHER__MATH_##math, cl},
static const prim_fn prim_fns[TETHER__PRIM_COUNT] = {TETHER__PRIM_LIST(PRIM_ROW_)};
#undef PRIM_ROW_

const char *tether__formula_c_helper(int k) {
    return k >= 0 && k < TETHER__PRIM_COUNT ? prim_fns[k].c_helper : NULL;
}

/* Replaces every `from` in s by `to` into out. */
static void replace_into(tether__sbuf *out, const char *s, const char *const (*map)[2], int nmap) {
    while (*s) {
        int hit = 0;
        for (int i = 0; i < nmap && !hit; i++) {
            size_t n = strlen(map[i][0]);
            if (!strncmp(s, map[i][0], n)) {
                tether__sbuf_puts(out, map[i][1]);
                s += n;
                hit = 1;
            }
        }
        if (!hit) {
            tether__sbuf_printf(out, "%c", *s++);
        }
    }
}

void tether__formula_c_helper_double(int k, tether__sbuf *out) {
    static const char *const map[][2] = {
        {"float", "double"}, {"tg_", "tgd_"},   {"expf(", "exp("},     {"fmodf(", "fmod("},
        {"sqrtf(", "sqrt("}, {"logf(", "log("}, {"floorf(", "floor("},
    };
    if (k >= 0 && k < TETHER__PRIM_COUNT) {
        replace_into(out, prim_fns[k].c_helper, map, (int)(sizeof map / sizeof *map));
    }
}

typedef struct iprim_fn {
    const char *name;
    int arity;
    const char *sbody, *ubody;
} iprim_fn;
#define IPRIM_ROW_(name, arity, sbody, ubody) {#name, arity, sbody, ubody},
static const iprim_fn iprim_fns[] = {TETHER__IPRIM_LIST(IPRIM_ROW_)};
#undef IPRIM_ROW_
#define IPRIM_COUNT ((int)(sizeof iprim_fns / sizeof *iprim_fns))

void tether__formula_c_int_helpers(DLDataType t, tether__sbuf *out) {
    const char *T = tether__c_type(t), *sfx = tether__dtype_str(t);
    char W[16], bits[8];
    snprintf(W, sizeof W, "%s", t.bits == 64 ? "uint64_t" : "uint32_t");
    snprintf(bits, sizeof bits, "%d", t.bits);
    const char *const map[][2] = {{"T", T}, {"W", W}, {"BITS", bits}};
    for (int k = 0; k < IPRIM_COUNT; k++) {
        const iprim_fn *f = &iprim_fns[k];
        if (f->arity > 1) {
            tether__sbuf_printf(out, "static inline %s tgi_%s_%s(%s a, %s b) {\n    ", T, f->name,
                                sfx, T, T);
        } else {
            tether__sbuf_printf(out, "static inline %s tgi_%s_%s(%s a) {\n    ", T, f->name, sfx,
                                T);
        }
        replace_into(out, t.code == kDLInt ? f->sbody : f->ubody, map, 3);
        tether__sbuf_puts(out, "\n}\n\n");
    }
}

const char *tether__math_name(tether__math m) {
    return (int)m >= 0 && (int)m < TETHER__MATH_COUNT ? math_fns[m].c : NULL;
}

typedef struct fx {
    tether_op op;
    tether__formula_lang lang;
    const char *isfx; /* TETHER__FORMULA_C_INT: the element type's suffix ("int32") */
    const char *x, *y;
    const tether_ir_attrs *a;
    int *helpers, *math;
    int rc;
} fx;

static int fail(fx *f, const char *fmt, const char *what) {
    if (!f->rc) {
        char msg[160];
        snprintf(msg, sizeof msg, fmt, what);
        f->rc = tether_set_error(TETHER_ERR_INTERNAL, "the formula of operator '%s' (%s): %s",
                                 tether_op_name(f->op), formula_src[f->op], msg);
    }
    return f->rc;
}

static int is_ident0(char c) {
    return isalpha((unsigned char)c) || c == '_';
}

static int is_ident(char c) {
    return isalnum((unsigned char)c) || c == '_';
}

/* An expression that needs no parentheses as an operand: a name or number, optionally followed
 * by one bracket group that ends the text (a call, a subscript), or a parenthesised whole. */
static int atomic(const char *s) {
    size_t n = strlen(s), i = 0;
    while (i < n && (is_ident(s[i]) || s[i] == '.')) {
        i++;
    }
    if (i == n) {
        return n > 0;
    }
    if (s[i] != '(' && s[i] != '[') {
        return 0;
    }
    int depth = 0;
    for (size_t j = i; j < n; j++) {
        if (s[j] == '(' || s[j] == '[') {
            depth++;
        } else if ((s[j] == ')' || s[j] == ']') && --depth == 0) {
            return j == n - 1;
        }
    }
    return 0;
}

/* The closing parenthesis of the one opening at s (within end), or NULL. */
static const char *matching(const char *s, const char *end) {
    int depth = 0;
    for (const char *p = s; p < end; p++) {
        if (*p == '(') {
            depth++;
        } else if (*p == ')' && --depth == 0) {
            return p;
        }
    }
    return NULL;
}

static void trim(const char **s, const char **end) {
    while (*s < *end && isspace((unsigned char)**s)) {
        (*s)++;
    }
    while (*end > *s && isspace((unsigned char)(*end)[-1])) {
        (*end)--;
    }
}

/* Whether [s, end) names the operand x. */
static int mentions_x(const char *s, const char *end) {
    for (const char *p = s; p < end; p++) {
        if (is_ident0(*p) && (p == s || !is_ident(p[-1]))) {
            const char *q = p;
            while (q < end && is_ident(*q)) {
                q++;
            }
            if (q - p == 1 && *p == 'x') {
                return 1;
            }
            p = q - 1;
        } else if (isdigit((unsigned char)*p)) {
            while (p + 1 < end && (is_ident(p[1]) || p[1] == '.')) {
                p++;
            }
        }
    }
    return 0;
}

static int tr(fx *f, const char *s, const char *end, int whole, tether__sbuf *out, char *pre,
              size_t npre);

/* A float attribute of the node, by its formula name. */
static int attr_value(fx *f, const char *name, size_t len, float *v) {
    static const char *const names[] = {"alpha", "beta", "min", "max"};
    const float vals[] = {f->a->alpha, f->a->beta, f->a->min, f->a->max};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (strlen(names[i]) == len && !memcmp(names[i], name, len)) {
            *v = vals[i];
            return 1;
        }
    }
    return 0;
}

/* Substitutes args into a spelling ("%0 < %1 ? ..."); wrap: parenthesise compound arguments. */
static void spell(tether__sbuf *out, const char *spelling, char args[][512], int wrap) {
    for (const char *p = spelling; *p; p++) {
        if (p[0] == '%' && p[1] >= '0' && p[1] <= '2') {
            const char *a = args[p[1] - '0'];
            if (wrap && !atomic(a)) {
                tether__sbuf_printf(out, "(%s)", a);
            } else {
                tether__sbuf_puts(out, a);
            }
            p++;
        } else {
            tether__sbuf_printf(out, "%c", *p);
        }
    }
}

/* A call name(args) of the formula, args in [s, end) without the parentheses. */
static int call(fx *f, const char *name, size_t len, const char *s, const char *end, int whole,
                tether__sbuf *out, char *pre, size_t npre) {
    const char *as[3], *ae[3];
    int nargs = 0, depth = 0;
    const char *start = s;
    for (const char *p = s; p <= end; p++) {
        if (p == end || (*p == ',' && depth == 0)) {
            if (nargs == 3) {
                return fail(f, "%s: more than 3 arguments", "call");
            }
            as[nargs] = start;
            ae[nargs] = p;
            trim(&as[nargs], &ae[nargs]);
            nargs++;
            start = p + 1;
        } else if (*p == '(') {
            depth++;
        } else if (*p == ')') {
            depth--;
        }
    }
    if (nargs == 1 && as[0] == ae[0]) {
        nargs = 0;
    }
    char args[3][512];
    for (int i = 0; i < nargs; i++) {
        tether__sbuf b;
        tether__sbuf_init(&b);
        tr(f, as[i], ae[i], 1, &b, NULL, 0);
        if (b.failed || b.len >= sizeof args[i]) {
            tether__sbuf_free(&b);
            return fail(f, "%s: an argument is too long", "call");
        }
        snprintf(args[i], sizeof args[i], "%s", b.data ? b.data : "");
        tether__sbuf_free(&b);
    }
    char fname[32];
    snprintf(fname, sizeof fname, "%.*s", (int)(len < 31 ? len : 31), name);
    if (f->lang == TETHER__FORMULA_C_INT) {
        for (int k = 0; k < IPRIM_COUNT; k++) {
            if (strcmp(iprim_fns[k].name, fname)) {
                continue;
            }
            if (nargs != iprim_fns[k].arity) {
                return fail(f, "%s takes another number of arguments", fname);
            }
            tether__sbuf_printf(out, "tgi_%s_%s(", fname, f->isfx);
            for (int i = 0; i < nargs; i++) {
                tether__sbuf_printf(out, "%s%s", i ? ", " : "", args[i]);
            }
            tether__sbuf_puts(out, ")");
            return f->rc;
        }
        return fail(f, "calls '%s', which the I rows of ir/formula.def do not list", fname);
    }
    int c_lang = f->lang == TETHER__FORMULA_C || f->lang == TETHER__FORMULA_C_DOUBLE;
    for (int mm = 0; mm < TETHER__MATH_COUNT; mm++) {
        if (strcmp(math_fns[mm].c, fname)) {
            continue;
        }
        int m = f->lang == TETHER__FORMULA_C_DOUBLE ? (int)math_fns[mm].dbl : mm;
        if (nargs != math_fns[m].arity) {
            return fail(f, "%s takes another number of arguments", fname);
        }
        if (c_lang && f->math) {
            f->math[m] = 1;
        }
        tether__sbuf_printf(out, "%s(", c_lang ? math_fns[m].c : math_fns[m].cl);
        for (int i = 0; i < nargs; i++) {
            tether__sbuf_printf(out, "%s%s", i ? ", " : "", args[i]);
        }
        tether__sbuf_puts(out, ")");
        return f->rc;
    }
    for (int k = 0; k < TETHER__PRIM_COUNT; k++) {
        const prim_fn *pf = &prim_fns[k];
        if (strcmp(pf->name, fname)) {
            continue;
        }
        if (nargs != pf->arity) {
            return fail(f, "%s takes another number of arguments", fname);
        }
        if (f->lang == TETHER__FORMULA_C) {
            if (f->helpers) {
                f->helpers[k] = 1;
            }
            if (f->math && pf->c_math != TETHER__MATH_NONE) {
                f->math[pf->c_math] = 1;
            }
            spell(out, pf->c, args, 0);
            return f->rc;
        }
        if (f->lang == TETHER__FORMULA_C_DOUBLE) {
            if (f->helpers) {
                f->helpers[TETHER__PRIM_COUNT + k] = 1;
            }
            if (f->math && pf->c_math != TETHER__MATH_NONE) {
                f->math[math_fns[pf->c_math].dbl] = 1;
            }
            tether__sbuf b;
            tether__sbuf_init(&b);
            static const char *const map[][2] = {{"tg_", "tgd_"}};
            replace_into(&b, pf->c, map, 1);
            spell(out, b.data ? b.data : "", args, 0);
            if (b.failed) {
                out->failed = 1;
            }
            tether__sbuf_free(&b);
            return f->rc;
        }
        /* OpenCL: a compound first argument that the spelling repeats goes to pre, when the
         * caller takes one and no other argument reads x */
        int repeats = 0;
        for (const char *p = pf->cl; (p = strstr(p, "%0")) != NULL; p += 2) {
            repeats++;
        }
        int hoist = pre && whole && repeats > 1 && !atomic(args[0]);
        for (int i = 1; i < nargs && hoist; i++) {
            hoist = !mentions_x(as[i], ae[i]);
        }
        if (hoist) {
            if (strlen(args[0]) >= npre) {
                return fail(f, "%s: the hoisted argument is too long", fname);
            }
            snprintf(pre, npre, "%s", args[0]);
            snprintf(args[0], sizeof args[0], "%s", f->x);
        }
        tether__sbuf b;
        tether__sbuf_init(&b);
        spell(&b, pf->cl, args, 1);
        const char *text = b.data ? b.data : "";
        if (whole || atomic(text)) {
            tether__sbuf_puts(out, text);
        } else {
            tether__sbuf_printf(out, "(%s)", text);
        }
        if (b.failed) {
            out->failed = 1;
        }
        tether__sbuf_free(&b);
        return f->rc;
    }
    return fail(f, "calls '%s', which ir/formula.def does not list", fname);
}

/* Translates [s, end); whole: the range is the whole expression where it is used (a top-level
 * formula or a function argument), so a primitive spanning it needs no parentheses. */
static int tr(fx *f, const char *s, const char *end, int whole, tether__sbuf *out, char *pre,
              size_t npre) {
    const char *ts = s, *te = end;
    trim(&ts, &te);
    for (const char *p = s; p < end && !f->rc;) {
        if (isdigit((unsigned char)*p) ||
            (*p == '.' && p + 1 < end && isdigit((unsigned char)p[1]))) {
            const char *q = p;
            while (q < end && (is_ident(*q) || *q == '.')) {
                q++;
            }
            tether__sbuf_printf(out, "%.*s", (int)(q - p), p);
            p = q;
            continue;
        }
        if (!is_ident0(*p)) {
            tether__sbuf_printf(out, "%c", *p);
            p++;
            continue;
        }
        const char *q = p;
        while (q < end && is_ident(*q)) {
            q++;
        }
        size_t len = (size_t)(q - p);
        const char *r = q;
        while (r < end && isspace((unsigned char)*r)) {
            r++;
        }
        if (r < end && *r == '(') {
            const char *close = matching(r, end);
            if (!close) {
                return fail(f, "%s: unbalanced parentheses", "call");
            }
            call(f, p, len, r + 1, close, whole && p == ts && close + 1 == te, out, pre, npre);
            p = close + 1;
            continue;
        }
        float v;
        /* an operand that is the whole expression or argument goes in as it is, else a
         * compound one ("acc + r[i]") is parenthesised */
        int alone = whole && p == ts && q == te;
        if (len == 1 && (*p == 'x' || *p == 'y')) {
            const char *operand = *p == 'x' ? f->x : f->y;
            if (!operand) {
                return fail(f, "%s: a unary formula reads y", "y");
            }
            tether__sbuf_printf(out, alone || atomic(operand) ? "%s" : "(%s)", operand);
        } else if (attr_value(f, p, len, &v)) {
            char lit[48];
            tether__cg_float_literal(lit, sizeof lit, v, f->lang == TETHER__FORMULA_OPENCL);
            /* "x - -1.0f", never "x--1.0f" */
            int sep = lit[0] == '-' && out->len &&
                      (out->data[out->len - 1] == '-' || out->data[out->len - 1] == '+');
            tether__sbuf_printf(out, sep ? "(%s)" : "%s", lit);
        } else {
            char nm[32];
            snprintf(nm, sizeof nm, "%.*s", (int)(len < 31 ? len : 31), p);
            return fail(f, "reads '%s', which is neither an operand nor an attribute", nm);
        }
        p = q;
    }
    return f->rc;
}

int tether__formula_text(tether_op op, tether__formula_lang lang, const char *x, const char *y,
                         const tether_ir_attrs *a, int *helpers, int *math, char *pre, size_t npre,
                         char *out, size_t n) {
    return tether__formula_text_typed(op, lang, TETHER_FLOAT32, x, y, a, helpers, math, pre, npre,
                                      out, n);
}

int tether__formula_text_typed(tether_op op, tether__formula_lang lang, DLDataType t, const char *x,
                               const char *y, const tether_ir_attrs *a, int *helpers, int *math,
                               char *pre, size_t npre, char *out, size_t n) {
    if (pre && npre) {
        pre[0] = '\0';
    }
    if (n) {
        out[0] = '\0';
    }
    tether__dclass dc = tether__dtype_class(t);
    if (lang == TETHER__FORMULA_C && (dc == TETHER__DC_INT || dc == TETHER__DC_UINT)) {
        lang = TETHER__FORMULA_C_INT;
    } else if (lang == TETHER__FORMULA_C && dc == TETHER__DC_F64) {
        lang = TETHER__FORMULA_C_DOUBLE;
    }
    const char *const *src = lang == TETHER__FORMULA_C_INT ? iformula_src : formula_src;
    if ((int)op < 0 || (int)op >= TETHER_OP_COUNT_ || !src[op][0]) {
        const char *name = tether_op_name(op);
        return tether_set_error(TETHER_ERR_INTERNAL,
                                "operator '%s' has no elementwise %sformula (ir/ops.def)",
                                name ? name : "?", lang == TETHER__FORMULA_C_INT ? "integer " : "");
    }
    fx f = {op,      lang, tether__dtype_str(tether__dtype_is_bool(t) ? TETHER_UINT8 : t),
            x,       y,    a,
            helpers, math, 0};
    tether__sbuf b;
    tether__sbuf_init(&b);
    const char *s = src[op];
    tr(&f, s, s + strlen(s), 1, &b, pre, npre);
    if (!f.rc && (b.failed || !b.data || b.len >= n)) {
        f.rc = tether_set_error(TETHER_ERR_INTERNAL,
                                "the formula of operator '%s' does not fit %zu bytes",
                                tether_op_name(op), n);
    }
    if (!f.rc) {
        memcpy(out, b.data, b.len + 1);
    }
    tether__sbuf_free(&b);
    return f.rc;
}
