/*
 * The C emitter's element types: the C type each tensor is stored in, the conversion helpers a
 * module with float16/bfloat16/integer/bool tensors defines (C99, no compiler extensions), the
 * integer primitives of the IFORMULA column per integer type, the float64 helpers, typed
 * constant arrays, and the elementwise and where kernels of every type that is not float32
 * alone (float32 elementwise kernels stay in emit_c_kernels.c, unchanged).
 *
 * What must stay true: every load and store here computes what the interpreter's load_val and
 * store_val (interp/interp.c) compute: float16/bfloat16 round to nearest even, a float to an
 * integer NaN 0 / truncated / saturated, an integer to a narrower one modulo 2^bits, anything to
 * bool `!= 0`; the compute type of an elementwise kernel is that of its first input's class
 * (float for float16/bfloat16/float32, double for float64, the integer type itself).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emit_c_internal.h"
#include "tether/crt/dtype.h"

static const char conv_helpers[] =
    "static inline float tg_f16_load(uint16_t h) {\n"
    "    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (uint32_t)(h >> 10) & 31u, m = h & "
    "1023u, b;\n"
    "    float f;\n"
    "    if (e == 0u) { /* zero or subnormal: m * 2^-24 */\n"
    "        f = (float)m * 5.9604644775390625e-8f;\n"
    "        return s ? -f : f;\n"
    "    }\n"
    "    b = e == 31u ? (s | 0x7f800000u | (m << 13)) : (s | ((e + 112u) << 23) | (m << 13));\n"
    "    memcpy(&f, &b, 4);\n"
    "    return f;\n"
    "}\n\n"
    "/* round to nearest even */\n"
    "static inline uint16_t tg_f16_store(float f) {\n"
    "    uint32_t b, s, a;\n"
    "    memcpy(&b, &f, 4);\n"
    "    s = (b >> 16) & 0x8000u;\n"
    "    a = b & 0x7fffffffu;\n"
    "    if (a > 0x7f800000u) {\n"
    "        return (uint16_t)(s | 0x7e00u);\n"
    "    }\n"
    "    if (a >= 0x477ff000u) {\n"
    "        return (uint16_t)(s | 0x7c00u);\n"
    "    }\n"
    "    if (a < 0x38800000u) {\n"
    "        uint32_t m = (a & 0x7fffffu) | 0x800000u, sh = 126u - (a >> 23), q, r, half;\n"
    "        if (a == 0u || sh > 24u) {\n"
    "            return (uint16_t)s;\n"
    "        }\n"
    "        q = m >> sh;\n"
    "        r = m & ((1u << sh) - 1u);\n"
    "        half = 1u << (sh - 1u);\n"
    "        if (r > half || (r == half && (q & 1u))) {\n"
    "            q++;\n"
    "        }\n"
    "        return (uint16_t)(s | q);\n"
    "    }\n"
    "    a -= 0x38000000u;\n"
    "    a += 0x0fffu + ((a >> 13) & 1u);\n"
    "    return (uint16_t)(s | (a >> 13));\n"
    "}\n\n"
    "/* from double: rounded to odd into float first, so the float16 rounding is the exact one */\n"
    "static inline uint16_t tg_f16_store_d(double d) {\n"
    "    float t = (float)d;\n"
    "    if ((double)t != d && t == t) {\n"
    "        uint32_t b;\n"
    "        memcpy(&b, &t, 4);\n"
    "        if ((b & 1u) == 0u) {\n"
    "            b = fabs((double)t) > fabs(d) ? b - 1u : b + 1u;\n"
    "            memcpy(&t, &b, 4);\n"
    "        }\n"
    "    }\n"
    "    return tg_f16_store(t);\n"
    "}\n\n"
    "static inline float tg_bf16_load(uint16_t h) {\n"
    "    uint32_t b = (uint32_t)h << 16;\n"
    "    float f;\n"
    "    memcpy(&f, &b, 4);\n"
    "    return f;\n"
    "}\n\n"
    "/* round to nearest even; NaN stays a quiet NaN */\n"
    "static inline uint16_t tg_bf16_store(float f) {\n"
    "    uint32_t b;\n"
    "    memcpy(&b, &f, 4);\n"
    "    if (f != f) {\n"
    "        return (uint16_t)((b >> 16) | 0x40u);\n"
    "    }\n"
    "    b += 0x7fffu + ((b >> 16) & 1u);\n"
    "    return (uint16_t)(b >> 16);\n"
    "}\n\n";

/* A float value to integer type t: NaN 0, truncated, saturated (as the interpreter's sat_i). */
static void sat_helper(tether__sbuf *s, DLDataType t) {
    const char *T = tether__c_type(t), *n = tether__dtype_str(t);
    static const struct {
        uint8_t code, bits;
        const char *lo, *hi, *ilo, *ihi;
    } lim[] = {
        {kDLInt, 8, "-128.0", "127.0", "-128", "127"},
        {kDLInt, 16, "-32768.0", "32767.0", "-32768", "32767"},
        {kDLInt, 32, "-2147483648.0", "2147483647.0", "(-2147483647 - 1)", "2147483647"},
        {kDLInt, 64, "-9223372036854775808.0", "9223372036854775807.0",
         "(-9223372036854775807LL - 1)", "9223372036854775807LL"},
        {kDLUInt, 8, "0.0", "255.0", "0", "255u"},
        {kDLUInt, 16, "0.0", "65535.0", "0", "65535u"},
        {kDLUInt, 32, "0.0", "4294967295.0", "0", "4294967295u"},
        {kDLUInt, 64, "0.0", "18446744073709551615.0", "0", "18446744073709551615ULL"},
    };
    for (size_t i = 0; i < sizeof lim / sizeof *lim; i++) {
        if (lim[i].code == t.code && lim[i].bits == t.bits) {
            tether__sbuf_printf(s,
                                "static inline %s tg_sat_%s(double v) {\n"
                                "    return v != v ? 0 : v <= %s ? %s : v >= %s ? %s : (%s)v;\n"
                                "}\n\n",
                                T, n, lim[i].lo, lim[i].ilo, lim[i].hi, lim[i].ihi, T);
        }
    }
}

int tether__c_graph_typed(const tether_ir_graph *g) {
    for (int i = 0; i < g->ntensors; i++) {
        if (!tether_dtype_equal(g->tensors[i].dtype, TETHER_FLOAT32)) {
            return 1;
        }
    }
    return 0;
}

void tether__c_type_helpers(const em *e, tether__sbuf *out) {
    const tether_ir_graph *g = e->g;
    for (int k = 0; k < TETHER__PRIM_COUNT; k++) {
        if (e->need_helpers[TETHER__PRIM_COUNT + k]) {
            tether__formula_c_helper_double(k, out);
        }
    }
    if (!tether__c_graph_typed(g)) {
        return;
    }
    tether__sbuf_puts(out, "/* Element type conversions (docs/codegen.md, element types). */\n");
    tether__sbuf_puts(out, conv_helpers);
    static const DLDataType ints[] = {
        {kDLInt, 8, 1},  {kDLInt, 16, 1},  {kDLInt, 32, 1},  {kDLInt, 64, 1},
        {kDLUInt, 8, 1}, {kDLUInt, 16, 1}, {kDLUInt, 32, 1}, {kDLUInt, 64, 1},
    };
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        int used = 0;
        for (int t = 0; t < g->ntensors && !used; t++) {
            DLDataType d = g->tensors[t].dtype;
            used = tether_dtype_equal(d, ints[i]) ||
                   (tether__dtype_is_bool(d) && ints[i].code == kDLUInt && ints[i].bits == 8);
        }
        if (used) {
            sat_helper(out, ints[i]);
            tether__formula_c_int_helpers(ints[i], out);
        }
    }
}

const char *tether__c_compute_type(DLDataType t) {
    switch (tether__dtype_class(t)) {
    case TETHER__DC_F32:
        return "float";
    case TETHER__DC_F64:
        return "double";
    case TETHER__DC_INT:
    case TETHER__DC_UINT:
    case TETHER__DC_NONE:
        break;
    }
    return tether__c_type(t);
}

void tether__c_load(DLDataType t, const char *elem, char *out, size_t n) {
    if (t.code == kDLFloat && t.bits == 16) {
        snprintf(out, n, "tg_f16_load(%s)", elem);
    } else if (t.code == kDLBfloat) {
        snprintf(out, n, "tg_bf16_load(%s)", elem);
    } else {
        snprintf(out, n, "%s", elem);
    }
}

void tether__c_convert(DLDataType from, DLDataType to, const char *v, char *out, size_t n) {
    tether__dclass fc = tether__dtype_class(from);
    int ff = fc == TETHER__DC_F32 || fc == TETHER__DC_F64;
    if (tether__dtype_is_bool(to)) {
        snprintf(out, n, "(uint8_t)((%s) != 0)", v);
    } else if (to.code == kDLFloat && to.bits == 16) {
        snprintf(out, n, fc == TETHER__DC_F64 ? "tg_f16_store_d(%s)" : "tg_f16_store((float)(%s))",
                 v);
    } else if (to.code == kDLBfloat) {
        snprintf(out, n, "tg_bf16_store((float)(%s))", v);
    } else if (to.code == kDLFloat) {
        snprintf(out, n, "(%s)(%s)", to.bits == 32 ? "float" : "double", v);
    } else if (ff) {
        snprintf(out, n, "tg_sat_%s((double)(%s))", tether__dtype_str(to), v);
    } else {
        snprintf(out, n, "(%s)(%s)", tether__c_type(to), v);
    }
}

void tether__c_const_value(DLDataType t, double v, char *out, size_t n) {
    char lit[64];
    if (tether__dtype_is_float(t)) {
        if (t.bits == 64) {
            if (isnan(v) || isinf(v)) {
                snprintf(out, n, "%s", isnan(v) ? "(double)NAN" : v > 0 ? "HUGE_VAL" : "-HUGE_VAL");
            } else {
                snprintf(out, n, "%a", v);
            }
            return;
        }
        tether__cg_float_literal(lit, sizeof lit, (float)v, false);
        tether__c_convert(TETHER_FLOAT32, t, lit, out, n);
        return;
    }
    if (tether__dtype_is_bool(t)) {
        snprintf(out, n, "%d", v != 0.0);
        return;
    }
    /* integers: saturated like a float -> integer store */
    if (t.code == kDLInt) {
        double lo = -ldexp(1.0, t.bits - 1), hi = ldexp(1.0, t.bits - 1) - 1.0;
        long long i = v != v    ? 0
                      : v <= lo ? (long long)lo
                      : v >= hi ? (t.bits == 64 ? INT64_MAX : (long long)hi)
                                : (long long)v;
        if (i == INT64_MIN) {
            snprintf(out, n, "(int64_t)(-9223372036854775807LL - 1)");
        } else {
            snprintf(out, n, "(%s)%lldLL", tether__c_type(t), i);
        }
    } else {
        double hi = ldexp(1.0, t.bits) - 1.0;
        unsigned long long u = v != v || v <= 0.0 ? 0
                               : v >= hi ? (t.bits == 64 ? UINT64_MAX : (unsigned long long)hi)
                                         : (unsigned long long)v;
        snprintf(out, n, "(%s)%lluULL", tether__c_type(t), u);
    }
}

void tether__c_typed_array(tether__sbuf *s, const char *name, const tether_ir_tensor *t,
                           const void *data) {
    size_t n = tether_ir_tensor_elements(t), es = tether_dtype_bytes(t->dtype);
    DLDataType d = t->dtype;
    tether__sbuf_printf(s, "static const %s %s[%zu] = {\n", tether__c_type(d), name, n ? n : 1);
    if (!n) {
        tether__sbuf_puts(s, "    0,\n");
    }
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)data + i * es;
        char lit[64];
        if (d.code == kDLFloat && d.bits == 64) {
            double v;
            memcpy(&v, p, 8);
            tether__c_const_value(d, v, lit, sizeof lit);
        } else if (d.code == kDLInt) {
            long long v = 0;
            if (es == 1) {
                v = (int8_t)p[0];
            } else if (es == 2) {
                int16_t x;
                memcpy(&x, p, 2);
                v = x;
            } else if (es == 4) {
                int32_t x;
                memcpy(&x, p, 4);
                v = x;
            } else {
                int64_t x;
                memcpy(&x, p, 8);
                v = x;
            }
            if (v == INT64_MIN) {
                snprintf(lit, sizeof lit, "(-9223372036854775807LL - 1)");
            } else {
                snprintf(lit, sizeof lit, "%lldLL", v);
            }
        } else { /* unsigned, bool, float16/bfloat16 bits */
            unsigned long long v = 0;
            if (es == 1) {
                v = p[0];
            } else if (es == 2) {
                uint16_t x;
                memcpy(&x, p, 2);
                v = x;
            } else if (es == 4) {
                uint32_t x;
                memcpy(&x, p, 4);
                v = x;
            } else {
                uint64_t x;
                memcpy(&x, p, 8);
                v = x;
            }
            snprintf(lit, sizeof lit, "%lluULL", v);
        }
        tether__sbuf_printf(s, "%s%s,%s", i % 6 == 0 ? "    " : "", lit,
                            (i % 6 == 5 || i == n - 1) ? "\n" : " ");
    }
    tether__sbuf_puts(s, "};\n");
}

/* The node's formula in its compute type, operands x and y; #error when it has none. */
static void typed_formula(em *e, const tether_ir_node *nd, DLDataType ct, const char *x,
                          const char *y, char *out, size_t n) {
    if (tether__formula_text_typed(nd->op, TETHER__FORMULA_C, ct, x, y, &nd->attrs, e->need_helpers,
                                   e->math_used, NULL, 0, out, n)) {
        snprintf(out, n, "0;\n#error \"tether: no C formula for operator %s on %s\"",
                 tether_op_name(nd->op), tether__dtype_str(ct));
    }
}

void tether__c_ew_typed(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    const tether_ir_tensor *z = tether__ir_main_inputs(nd) > 1 ? T(e, nd->inputs[1]) : NULL;
    const char *ct = tether__c_compute_type(x->dtype);
    char ex[400], st[600], la[200], lb[200], ia[256] = "i", ib[256] = "i";
    typed_formula(e, nd, x->dtype, "va", z ? "vb" : NULL, ex, sizeof ex);
    tether__c_convert(x->dtype, y->dtype, ex, st, sizeof st);
    line(e, "%s *restrict yp = %s;", tether__c_type(y->dtype), k->out);
    for (int d = 0; d < y->ndim; d++) {
        char v[8];
        snprintf(v, sizeof v, "i%d", d);
        loop(e, v, y->shape[d]);
    }
    if (y->ndim) {
        tether__c_bcast_index(x, y->ndim, y->shape, ia, sizeof ia);
        if (z) {
            tether__c_bcast_index(z, y->ndim, y->shape, ib, sizeof ib);
        }
    } else {
        snprintf(ia, sizeof ia, "0");
        snprintf(ib, sizeof ib, "0");
    }
    char ea[300], eb[300];
    snprintf(ea, sizeof ea, "%s[%s]", k->in[0], ia);
    tether__c_load(x->dtype, ea, la, sizeof la);
    line(e, "const %s va = %s;", ct, la);
    if (z) {
        snprintf(eb, sizeof eb, "%s[%s]", k->in[1], ib);
        tether__c_load(z->dtype, eb, lb, sizeof lb);
        line(e, "const %s vb = %s;", ct, lb);
    }
    line(e, "*yp++ = %s;", st);
    for (int d = 0; d < y->ndim; d++) {
        close_block(e);
    }
}

void tether__c_where(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *y = T(e, nd->outputs[0]);
    char ix[3][256];
    for (int i = 0; i < 3; i++) {
        if (y->ndim) {
            tether__c_bcast_index(T(e, nd->inputs[i]), y->ndim, y->shape, ix[i], sizeof ix[i]);
        } else {
            snprintf(ix[i], sizeof ix[i], "0");
        }
    }
    line(e, "%s *restrict yp = %s;", tether__c_type(y->dtype), k->out);
    for (int d = 0; d < y->ndim; d++) {
        char v[8];
        snprintf(v, sizeof v, "i%d", d);
        loop(e, v, y->shape[d]);
    }
    line(e, "*yp++ = %s[%s] ? %s[%s] : %s[%s];", k->in[0], ix[0], k->in[1], ix[1], k->in[2], ix[2]);
    for (int d = 0; d < y->ndim; d++) {
        close_block(e);
    }
}
