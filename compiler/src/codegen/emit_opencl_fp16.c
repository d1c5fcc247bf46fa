/*
 * --precision fp16 for the OpenCL backend (docs/codegen.md, "Half precision"): the kernels the
 * other emitters wrote for float32 buffers are rewritten to keep the workspace and the params
 * buffer in half (2 bytes per element) while every operation stays float arithmetic: a read
 * `p[i]` of a half buffer becomes `vload_half(i, p)`, a write `p[i] = v;` `vstore_half(v, i, p);`
 * (round to nearest even), `vload4/8(i, p)` `vload_half4/8`. Those are core OpenCL C (1.0 on), so
 * the kernels need no cl_khr_fp16; accumulations, reductions and statistics stay float. Graph
 * inputs and outputs stay float32 buffers (the first kernels read float, the last write float);
 * images read and write through read_imagef/write_imagef whatever their channel type; the weights
 * are converted here at compile time (tether__ocl_fp16_params).
 *
 * What must stay true: a pointer is half exactly when it derives from a half memory object (its
 * declaration's initialiser names one); every access through a half pointer is rewritten, and a
 * kernel this pass cannot type (one name declared both half and float, an access it does not
 * recognise) fails the compile with an internal error naming the kernel, never wrong code.
 */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "emit_opencl_internal.h"
#include "tether/crt/error.h"

/* ---- float -> half (IEEE 754 binary16, round to nearest even) ----------------------------- */

uint16_t tether__ocl_half_of(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xFFu, man = x & 0x7FFFFFu;
    if (exp == 0xFFu) { /* inf / nan (a nan keeps a mantissa bit) */
        return (uint16_t)(sign | 0x7C00u | (man ? 0x200u | (man >> 13) : 0u));
    }
    int e = (int)exp - 127 + 15;
    if (e >= 31) {
        return (uint16_t)(sign | 0x7C00u);
    }
    if (e <= 0) { /* subnormal half or zero */
        if (e < -10) {
            return sign;
        }
        man |= 0x800000u;
        int shift = 14 - e;
        uint32_t h = man >> shift, rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) {
            h++;
        }
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) {
        h++; /* may carry into the exponent, up to inf: still right */
    }
    return (uint16_t)(sign | h);
}

int tether__ocl_fp16_params(ocl *e) {
    if (!e->params_bytes) {
        return TETHER_OK;
    }
    /* every byte of params.bin is a float32 (16-byte aligned blocks, zero padding) */
    size_t n = e->params_bytes / 4;
    for (size_t i = 0; i < n; i++) {
        float v;
        memcpy(&v, e->params + 4 * i, 4);
        uint16_t h = tether__ocl_half_of(v);
        memcpy(e->params + 2 * i, &h, 2);
    }
    e->params_bytes /= 2;
    e->buffer_bytes /= 2;
    for (int i = 0; i < e->nmems; i++) {
        if (e->mems[i].params_off > 0) {
            e->mems[i].params_off /= 2;
        }
    }
    return TETHER_OK;
}

/* ---- the rewrite ------------------------------------------------------------------------------
 */

#define MAX_PTRS 64

typedef struct names {
    char half[MAX_PTRS][32];
    int nhalf;
    char flt[MAX_PTRS][32];
    int nflt;
} names;

static int in_list(char (*l)[32], int n, const char *s, size_t len) {
    for (int i = 0; i < n; i++) {
        if (strlen(l[i]) == len && memcmp(l[i], s, len) == 0) {
            return 1;
        }
    }
    return 0;
}

static int is_id0(char c) {
    return isalpha((unsigned char)c) || c == '_';
}
static int is_id(char c) {
    return isalnum((unsigned char)c) || c == '_';
}

/* The index of the bracket/paren matching the one at s[i] (s[i] is '[' or '('), or -1. */
static long match(const char *s, long i, long end) {
    int depth = 0;
    for (long j = i; j < end; j++) {
        if (s[j] == '[' || s[j] == '(') {
            depth++;
        } else if (s[j] == ']' || s[j] == ')') {
            if (--depth == 0) {
                return j;
            }
        }
    }
    return -1;
}

/* The end of an expression from i: the first ';' or ',' / ')' at depth 0 (stop). */
static long expr_end(const char *s, long i, long end, int commas) {
    int depth = 0;
    for (long j = i; j < end; j++) {
        char c = s[j];
        if (c == '(' || c == '[') {
            depth++;
        } else if (c == ')' || c == ']') {
            if (depth == 0) {
                return j;
            }
            depth--;
        } else if (depth == 0 && (c == ';' || (commas && c == ','))) {
            return j;
        }
    }
    return end;
}

/* The first identifier of s[i..end) that is a pointer of either list: 1 half, 0 float, -1 none. */
static int root_kind(const names *nm, const char *s, long i, long end) {
    for (long j = i; j < end; j++) {
        if (is_id0(s[j]) && (j == i || !is_id(s[j - 1]))) {
            long k = j;
            while (k < end && is_id(s[k])) {
                k++;
            }
            if (in_list((char(*)[32])nm->half, nm->nhalf, s + j, (size_t)(k - j))) {
                return 1;
            }
            if (in_list((char(*)[32])nm->flt, nm->nflt, s + j, (size_t)(k - j))) {
                return 0;
            }
            j = k - 1;
        }
    }
    return -1;
}

typedef struct rw {
    const names *nm;
    tether__sbuf *o;
    int bad;
} rw;

static void put(rw *r, const char *s, long n) {
    if (n > 0) {
        tether__sbuf_printf(r->o, "%.*s", (int)n, s);
    }
}

/* The vector width of a vloadN/vstoreN name at s (N in 2,3,4,8,16), else 0. */
static int vec_fn(const char *s, size_t len, const char *stem) {
    size_t sl = strlen(stem);
    if (len <= sl || memcmp(s, stem, sl) != 0) {
        return 0;
    }
    int n = 0;
    for (size_t i = sl; i < len; i++) {
        if (!isdigit((unsigned char)s[i])) {
            return 0;
        }
        n = n * 10 + (s[i] - '0');
    }
    return (n == 2 || n == 3 || n == 4 || n == 8 || n == 16) ? n : 0;
}

static void rewrite(rw *r, const char *s, long i, long end);

/* Splits the arguments of the call whose '(' is at s[p] (matching ')' at q): starts/ends. */
static int split_args(const char *s, long p, long q, long *st, long *en, int max) {
    int n = 0;
    long a = p + 1;
    while (a <= q && n < max) {
        long b = expr_end(s, a, q, 1);
        st[n] = a;
        en[n] = b;
        n++;
        if (b >= q) {
            break;
        }
        a = b + 1;
    }
    return n;
}

static void rewrite(rw *r, const char *s, long i, long end) {
    while (i < end && s[i] == ' ') {
        i++;
    }
    long copied = i;
    while (i < end) {
        char c = s[i];
        if (c == '/' && i + 1 < end && s[i + 1] == '*') { /* a comment: as it is */
            const char *z = strstr(s + i + 2, "*/");
            i = z ? (long)(z - s) + 2 : end;
            continue;
        }
        if (!is_id0(c) || (i > 0 && is_id(s[i - 1]))) {
            i++;
            continue;
        }
        long j = i;
        while (j < end && is_id(s[j])) {
            j++;
        }
        size_t len = (size_t)(j - i);
        long k = j;
        while (k < end && s[k] == ' ') {
            k++;
        }
        int vl = vec_fn(s + i, len, "vload"), vs = vec_fn(s + i, len, "vstore");
        if ((vl || vs) && k < end && s[k] == '(') {
            long q = match(s, k, end);
            long st[4], en[4];
            int na = q > 0 ? split_args(s, k, q, st, en, 4) : 0;
            if (na != (vl ? 2 : 3)) {
                r->bad = 1;
                return;
            }
            int kind = root_kind(r->nm, s, st[na - 1], en[na - 1]);
            if (kind != 1) {
                i = j;
                continue; /* a float pointer: its arguments are rewritten as any text */
            }
            put(r, s + copied, i - copied);
            tether__sbuf_printf(r->o, "%s%d(", vl ? "vload_half" : "vstore_half", vl ? vl : vs);
            for (int a = 0; a < na; a++) {
                if (a) {
                    tether__sbuf_puts(r->o, ", ");
                }
                rewrite(r, s, st[a], en[a]);
            }
            tether__sbuf_puts(r->o, ")");
            i = copied = q + 1;
            continue;
        }
        if (k < end && s[k] == '[' && in_list((char(*)[32])r->nm->half, r->nm->nhalf, s + i, len)) {
            long q = match(s, k, end);
            if (q < 0) {
                r->bad = 1;
                return;
            }
            long a = q + 1;
            while (a < end && s[a] == ' ') {
                a++;
            }
            char op = 0;
            long rhs = -1;
            if (a < end && s[a] == '=' && (a + 1 >= end || s[a + 1] != '=')) {
                op = '=';
                rhs = a + 1;
            } else if (a + 1 < end && strchr("+-*/", s[a]) && s[a + 1] == '=') {
                op = s[a];
                rhs = a + 2;
            } else if (a + 1 < end &&
                       ((s[a] == '+' && s[a + 1] == '+') || (s[a] == '-' && s[a + 1] == '-'))) {
                r->bad = 1; /* the emitters never write p[i]++ */
                return;
            }
            put(r, s + copied, i - copied);
            if (!op) {
                tether__sbuf_puts(r->o, "vload_half(");
                rewrite(r, s, k + 1, q);
                tether__sbuf_printf(r->o, ", %.*s)", (int)len, s + i);
                i = copied = q + 1;
                continue;
            }
            long z = expr_end(s, rhs, end, 0);
            if (z >= end || s[z] != ';') {
                r->bad = 1;
                return;
            }
            tether__sbuf_puts(r->o, "vstore_half(");
            if (op != '=') {
                tether__sbuf_puts(r->o, "vload_half(");
                rewrite(r, s, k + 1, q);
                tether__sbuf_printf(r->o, ", %.*s) %c (", (int)len, s + i, op);
            }
            rewrite(r, s, rhs, z);
            tether__sbuf_puts(r->o, op != '=' ? "), " : ", ");
            rewrite(r, s, k + 1, q);
            tether__sbuf_printf(r->o, ", %.*s)", (int)len, s + i);
            i = copied = z; /* the ';' is copied */
            continue;
        }
        i = j;
    }
    put(r, s + copied, end - copied);
}

static int add_name(char (*l)[32], int *n, const char *s, size_t len) {
    if (*n >= MAX_PTRS || len >= 32) {
        return -1;
    }
    memcpy(l[*n], s, len);
    l[*n][len] = 0;
    (*n)++;
    return 0;
}

/* One kernel, s[0..len) from "__kernel" to its closing "}\n", into o. */
static int one_kernel(const ocl *e, const char *s, long len, tether__sbuf *o) {
    names nm;
    memset(&nm, 0, sizeof nm);
    /* a copy whose pointer declarations say half where they derive from a half memory object */
    char *t = malloc((size_t)len + 1);
    if (!t) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
    }
    memcpy(t, s, (size_t)len);
    t[len] = 0;
    char *body = strchr(t, '{');
    /* the parameters: __global [const ]float *m<i> */
    for (char *p = t; body && p < body; p++) {
        char *f = strstr(p, "float *m");
        if (!f || f > body) {
            break;
        }
        int m = atoi(f + 8);
        long nl = 1;
        while (isdigit((unsigned char)f[7 + nl])) {
            nl++;
        }
        int half = m >= 0 && m < e->nmems && tether__ocl_mem_half(e, m);
        if (half) {
            add_name(nm.half, &nm.nhalf, f + 7, (size_t)nl);
            memmove(f, f + 1, strlen(f + 1) + 1); /* "float" -> "half" */
            memcpy(f, "half", 4);
            body--;
        } else {
            add_name(nm.flt, &nm.nflt, f + 7, (size_t)nl);
        }
        p = f + 7;
    }
    /* pointer declarations in the body: [const ]__global [const ]float *NAME = INIT; */
    for (char *p = body; p && (p = strstr(p, "__global ")) != NULL; p++) {
        char *f = p + 9;
        if (strncmp(f, "const ", 6) == 0) {
            f += 6;
        }
        if (strncmp(f, "float *", 7) != 0) {
            continue;
        }
        char *nmp = f + 7;
        size_t nl = 0;
        while (is_id(nmp[nl])) {
            nl++;
        }
        char *eq = nmp + nl;
        if (strncmp(eq, " = ", 3) != 0) {
            free(t);
            return tether_set_error(TETHER_ERR_INTERNAL,
                                    "--precision fp16: a pointer without initialiser in a kernel");
        }
        char *semi = strchr(eq, ';');
        int kind = semi ? root_kind(&nm, eq, 3, semi - eq) : -1;
        int clash =
            kind == 1 ? in_list(nm.flt, nm.nflt, nmp, nl) : in_list(nm.half, nm.nhalf, nmp, nl);
        if (clash) {
            free(t);
            return tether_set_error(TETHER_ERR_INTERNAL,
                                    "--precision fp16: pointer '%.*s' is both half and float in "
                                    "one kernel",
                                    (int)nl, nmp);
        }
        if (kind == 1) {
            memmove(f, f + 1, strlen(f + 1) + 1); /* "float" -> "half" */
            memcpy(f, "half", 4);
            nmp--;
            if (!in_list(nm.half, nm.nhalf, nmp, nl) && add_name(nm.half, &nm.nhalf, nmp, nl)) {
                free(t);
                return tether_set_error(TETHER_ERR_INTERNAL, "--precision fp16: too many pointers");
            }
        } else if (!in_list(nm.flt, nm.nflt, nmp, nl)) {
            add_name(nm.flt, &nm.nflt, nmp, nl); /* float, or the null pointer of an empty tensor */
        }
    }
    rw r = {&nm, o, 0};
    len = (long)strlen(t);
    long b = body ? (long)(body - t) : len;
    put(&r, t, b);
    rewrite(&r, t, b, len);
    free(t);
    if (r.bad) {
        return tether_set_error(TETHER_ERR_INTERNAL,
                                "--precision fp16: a kernel accesses a half buffer in a way this "
                                "pass does not rewrite");
    }
    return TETHER_OK;
}

int tether__ocl_fp16_rewrite(const ocl *e, tether__sbuf *src) {
    const char *s = src->data ? src->data : "";
    tether__sbuf o;
    tether__sbuf_init(&o);
    const char *p = s;
    int rc = TETHER_OK;
    while (!rc) {
        const char *k = strstr(p, "\n__kernel void ");
        if (!k) {
            tether__sbuf_puts(&o, p);
            break;
        }
        k++;
        tether__sbuf_printf(&o, "%.*s", (int)(k - p), p);
        const char *z = strstr(k, "\n}\n");
        if (!z) {
            rc = tether_set_error(TETHER_ERR_INTERNAL, "--precision fp16: a kernel without end");
            break;
        }
        z += 3;
        rc = one_kernel(e, k, (long)(z - k), &o);
        p = z;
    }
    if (!rc && o.failed) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
    }
    if (rc) {
        tether__sbuf_free(&o);
        return rc;
    }
    tether__sbuf_free(src);
    *src = o;
    return TETHER_OK;
}
