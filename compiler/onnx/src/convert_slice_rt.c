/*
 * ONNX Slice whose starts/ends are computed at run time (PyTorch's x[i:i+1] in a loop, x[:, a:b]
 * from shape arithmetic that is not folded): lowered to a gather per sliced axis of the indices
 * start' + [0, step, ..., (n-1)*step] (tonnx_cv_slice calls it).
 *
 * What must stay true: only when ends - starts is a constant k on every axis, proven from the
 * nodes that compute them (ends = Add/Sub(starts, constant), through the same Unsqueeze, Squeeze,
 * Reshape, Identity, Cast or Concat on both sides), and axes and steps are constants (steps > 0);
 * else the node is refused naming the input. start' follows ONNX's normalisation and clamping of
 * starts and ends; when the clamped slice does not hold exactly n = ceil(k / step) rows the start
 * becomes the axis' extent, an index the gather rejects at run time (TETHER_ERR_INVALID_ARG),
 * never an output of the wrong size or a read of other rows.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

#define RT_MAX TETHER_IR_MAX_NDIM

static const Onnx__NodeProto *producer(timport *c, const char *name) {
    int vi = tonnx_find(c, name);
    return vi >= 0 && c->v[vi].producer >= 0 ? c->gp->node[c->v[vi].producer] : NULL;
}

static const hconst *host_ints(timport *c, const char *name) {
    int vi = tonnx_find(c, name);
    const hconst *k = vi >= 0 ? c->v[vi].k : NULL;
    return k && k->is_int ? k : NULL;
}

static int64_t count_of(timport *c, const char *name) {
    int vi = tonnx_find(c, name);
    if (vi < 0) {
        return -1;
    }
    if (c->v[vi].k) {
        return (int64_t)c->v[vi].k->count;
    }
    if (c->v[vi].tensor < 0) {
        return -1;
    }
    const tether_ir_tensor *t = &c->g->tensors[c->v[vi].tensor];
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) {
        n *= t->shape[d];
    }
    return t->ndim < 0 ? -1 : n;
}

static bool same_op(const Onnx__NodeProto *a, const Onnx__NodeProto *b) {
    static const char *const ops[] = {"Unsqueeze", "Squeeze", "Reshape", "Identity", "Cast"};
    if (!a || !b || strcmp(S(a->op_type), S(b->op_type)) || a->n_input != b->n_input) {
        return false;
    }
    if (!strcmp(S(a->op_type), "Cast")) {
        /* only a Cast to int32/int64 keeps e - s: a narrower integer wraps, a float rounds */
        const Onnx__AttributeProto *ta = tonnx_attr(a, "to"), *tb = tonnx_attr(b, "to");
        return ta && tb && ta->i == tb->i &&
               (ta->i == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ||
                ta->i == ONNX__TENSOR_PROTO__DATA_TYPE__INT32);
    }
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (!strcmp(S(a->op_type), ops[i])) {
            return true;
        }
    }
    return !strcmp(S(a->op_type), "Concat");
}

/* e - s elementwise as constants k[0..*n-1] when the graph proves it; false otherwise. */
static bool offset(timport *c, const char *e, const char *s, int64_t *k, int *n, int depth) {
    if (depth > 32) {
        return false;
    }
    if (!strcmp(e, s)) {
        int64_t cnt = count_of(c, e);
        if (cnt < 1 || cnt > RT_MAX) {
            return false;
        }
        *n = (int)cnt;
        memset(k, 0, sizeof(int64_t) * (size_t)cnt);
        return true;
    }
    const hconst *he = host_ints(c, e), *hs = host_ints(c, s);
    if (he && hs) {
        if (he->count != hs->count || he->count < 1 || he->count > RT_MAX) {
            return false;
        }
        *n = (int)he->count;
        for (int i = 0; i < *n; i++) {
            k[i] = ((const int64_t *)he->data)[i] - ((const int64_t *)hs->data)[i];
        }
        return true;
    }
    const Onnx__NodeProto *pe = producer(c, e), *ps = producer(c, s);
    for (int side = 0; side < 2; side++) { /* peel a constant Add/Sub off ends, then starts */
        const Onnx__NodeProto *p = side ? ps : pe;
        if (!p || p->n_input != 2 ||
            (strcmp(S(p->op_type), "Add") && strcmp(S(p->op_type), "Sub"))) {
            continue;
        }
        bool sub = !strcmp(S(p->op_type), "Sub");
        for (int j = sub ? 1 : 0; j < 2; j++) {
            const hconst *h = host_ints(c, S(p->input[j]));
            if (!h || h->count < 1 || h->count > RT_MAX) {
                continue;
            }
            const char *rest = S(p->input[1 - j]);
            if (!offset(c, side ? e : rest, side ? rest : s, k, n, depth + 1) ||
                (h->count != 1 && (int)h->count != *n)) {
                continue;
            }
            for (int i = 0; i < *n; i++) {
                int64_t v = ((const int64_t *)h->data)[h->count == 1 ? 0 : i];
                k[i] += (side ^ sub) ? -v : v;
            }
            return true;
        }
    }
    if (!same_op(pe, ps)) {
        return false;
    }
    if (!strcmp(S(pe->op_type), "Concat")) {
        int tot = 0;
        for (size_t i = 0; i < pe->n_input; i++) {
            int m;
            if (!offset(c, S(pe->input[i]), S(ps->input[i]), k + tot, &m, depth + 1) ||
                tot + m > RT_MAX) {
                return false;
            }
            tot += m;
        }
        *n = tot;
        return tot > 0;
    }
    for (size_t i = 1; i < pe->n_input; i++) { /* axes / shape inputs must be the same values */
        if (strcmp(S(pe->input[i]), S(ps->input[i]))) {
            return false;
        }
    }
    return offset(c, S(pe->input[0]), S(ps->input[0]), k, n, depth + 1);
}

static int iconst(timport *c, const char *sfx, int n, const int64_t *v, int *t) {
    int64_t shape[1] = {n};
    hconst *h = tonnx_hconst_new(c, true, 1, shape);
    if (!h) {
        return tonnx_fail(c, TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    memcpy(h->data, v, sizeof(int64_t) * (size_t)n);
    return tonnx_hconst_tensor(c, sfx, h, t);
}

/* A binary (or where, 3 inputs) node into a new intermediate "<node>/<sfx>". */
static int op(timport *c, const char *sfx, tether_op o, int a, int b, int w, int *out) {
    tether_ir_attrs at;
    tether_ir_attrs_init(o, &at);
    int in[3] = {a, b, w};
    int rc = tonnx_temp_tensor(c, sfx, out);
    return rc ? rc : tonnx_emit(c, sfx, o, in, o == TETHER_OP_WHERE ? 3 : 2, *out, &at);
}

/* The start row of axis j: start' when the clamped slice holds n rows, else dim. */
static int start_row(timport *c, int st_t, int j, int64_t dim, int64_t k, int64_t step, int64_t n,
                     int *out) {
    char s[40];
    int t[16], rc;
    int64_t v[6] = {j, 0, dim, k, (n - 1) * step, n * step + 1};
#define SFX(name) (snprintf(s, sizeof s, "rt%d_%s", j, name), s)
    if ((rc = iconst(c, SFX("j"), 1, &v[0], &t[0])) ||
        (rc = iconst(c, SFX("0"), 1, &v[1], &t[1])) ||
        (rc = iconst(c, SFX("dim"), 1, &v[2], &t[2])) ||
        (rc = iconst(c, SFX("k"), 1, &v[3], &t[3])) ||
        (rc = iconst(c, SFX("lo"), 1, &v[4], &t[4])) ||
        (rc = iconst(c, SFX("hi"), 1, &v[5], &t[5]))) {
        return rc;
    }
    tether_ir_attrs ga;
    tether_ir_attrs_init(TETHER_OP_GATHER, &ga);
    int in2[2] = {st_t, t[0]};
    if ((rc = tonnx_temp_tensor(c, SFX("s"), &t[6])) ||
        (rc = tonnx_emit(c, s, TETHER_OP_GATHER, in2, 2, t[6], &ga))) {
        return rc;
    }
    if (!tether_dtype_equal(c->g->tensors[t[6]].dtype, TETHER_INT64)) {
        tether_ir_attrs ca;
        tether_ir_attrs_init(TETHER_OP_CAST, &ca);
        ca.to = TETHER_INT64;
        int x = t[6];
        if ((rc = tonnx_temp_tensor(c, SFX("s64"), &t[6])) ||
            (rc = tonnx_emit(c, s, TETHER_OP_CAST, &x, 1, t[6], &ca))) {
            return rc;
        }
    }
    int sv = t[6], ev, a, b, lt, sn, en, len, ok1, ok2, ok;
    /* clamp(x < 0 ? x + dim : x, 0, dim) for the start and the end */
    int clamped[2];
    if ((rc = op(c, SFX("e"), TETHER_OP_ADD, sv, t[3], -1, &ev))) {
        return rc;
    }
    for (int i = 0; i < 2; i++) {
        int x = i ? ev : sv;
        if ((rc = op(c, SFX(i ? "en" : "sn"), TETHER_OP_LESS, x, t[1], -1, &lt)) ||
            (rc = op(c, SFX(i ? "ew" : "sw"), TETHER_OP_ADD, x, t[2], -1, &a)) ||
            (rc = op(c, SFX(i ? "ex" : "sx"), TETHER_OP_WHERE, lt, a, x, &b)) ||
            (rc = op(c, SFX(i ? "el" : "sl"), TETHER_OP_MAX, b, t[1], -1, &a)) ||
            (rc = op(c, SFX(i ? "ec" : "sc"), TETHER_OP_MIN, a, t[2], -1, &clamped[i]))) {
            return rc;
        }
    }
    sn = clamped[0];
    en = clamped[1];
    if ((rc = op(c, SFX("len"), TETHER_OP_SUB, en, sn, -1, &len)) ||
        (rc = op(c, SFX("ok1"), TETHER_OP_GREATER, len, t[4], -1, &ok1)) ||
        (rc = op(c, SFX("ok2"), TETHER_OP_LESS, len, t[5], -1, &ok2)) ||
        (rc = op(c, SFX("ok"), TETHER_OP_AND, ok1, ok2, -1, &ok))) {
        return rc;
    }
    rc = op(c, SFX("base"), TETHER_OP_WHERE, ok, sn, t[2], out);
#undef SFX
    return rc;
}

int tonnx_slice_runtime(timport *c, const Onnx__NodeProto *n, int x, const int64_t *axes, int nax,
                        const int64_t *steps) {
    int64_t k[RT_MAX];
    int nk = 0, st_t, rc;
    if (!offset(c, S(n->input[2]), S(n->input[1]), k, &nk, 0) || (nax >= 0 && nk != nax) ||
        (nax < 0 && nk > c->g->tensors[x].ndim)) {
        hconst *h;
        return tonnx_in_const(c, host_ints(c, S(n->input[1])) ? 2 : 1, true, &h);
    }
    if ((rc = tonnx_in_tensor(c, 1, true, &st_t))) {
        return rc;
    }
    nax = nk;
    int cur = x, last = -1, y;
    for (int j = 0; j < nax; j++) {
        if (k[j] > 0 && steps[j] > 0) {
            last = j;
        }
    }
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    for (int j = 0; j < nax; j++) {
        const tether_ir_tensor *xt = &c->g->tensors[cur];
        int nd = xt->ndim, ax = (int)(axes[j] < 0 ? axes[j] + nd : axes[j]);
        if (ax < 0 || ax >= nd) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axis %lld out of range",
                              (long long)axes[j]);
        }
        if (steps[j] <= 0 || k[j] <= 0) {
            return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                              "starts computed at run time on axis %d with ends - starts %lld and "
                              "step %lld: only a positive length and step run (the gather form)",
                              ax, (long long)k[j], (long long)steps[j]);
        }
        int64_t dim = xt->shape[ax], cnt = (k[j] + steps[j] - 1) / steps[j], off[4096];
        if (cnt > 4096) {
            return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                              "a run-time slice of %lld rows on axis %d (at most 4096)",
                              (long long)cnt, ax);
        }
        for (int64_t r = 0; r < cnt; r++) {
            off[r] = r * steps[j];
        }
        char s[40];
        int base, rows, idx, o;
        snprintf(s, sizeof s, "rt%d_rows", j);
        if ((rc = start_row(c, st_t, j, dim, k[j], steps[j], cnt, &base)) ||
            (rc = iconst(c, s, (int)cnt, off, &rows)) ||
            (rc = op(c, (snprintf(s, sizeof s, "rt%d_idx", j), s), TETHER_OP_ADD, base, rows, -1,
                     &idx))) {
            return rc;
        }
        tether_ir_attrs ga;
        tether_ir_attrs_init(TETHER_OP_GATHER, &ga);
        ga.axis = ax;
        int in[2] = {cur, idx};
        snprintf(s, sizeof s, "rt%d_pick", j);
        if (j == last) {
            o = y;
        } else if ((rc = tonnx_temp_tensor(c, s, &o))) {
            return rc;
        }
        if ((rc = tonnx_emit(c, j == last ? NULL : s, TETHER_OP_GATHER, in, 2, o, &ga))) {
            return rc;
        }
        cur = o;
    }
    return TETHER_OK;
}
