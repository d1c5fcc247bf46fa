/*
 * The shape and typing rule of tfidf (TfIdfVectorizer, a DATA row of ops.def; issue 27, wt27l):
 * x int32/int64 [L] or [N,L]; pool int64 [P] (the n-grams of length 1, 2, ... one after the
 * other), counts int64 [G] (counts[n-1]: where the n-grams of length n start in pool), indexes
 * int64 [I] (the output column of the i-th n-gram of pool), weights float32 [I] (optional).
 * Output float32 [C] or [N,C], C = k. ints = {min_gram, max_gram, max_skip}, mode 0 TF,
 * 1 IDF, 2 TFIDF.
 *
 * What must stay true: pool, counts, indexes and weights are constants (the C kernel unrolls the
 * n-gram groups from them at compile time) and every check the kernels rely on is made here:
 * counts ascending within pool, each group a whole number of n-grams, one index per n-gram,
 * every index in 0..k-1. Messages name the node and the offending input.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static int bad(const tether_ir_node *n, const char *msg, const char *name) {
    return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "%s%s%s", msg, name ? ": " : "",
                                 name ? name : "");
}

static bool is_i64_const(const tether_ir_tensor *t) {
    return t && t->kind == TETHER_TENSOR_CONSTANT && t->data && t->ndim == 1 &&
           tether_dtype_equal(t->dtype, TETHER_INT64);
}

int tether__tfidf_groups(const tether_ir_graph *g, const tether_ir_node *n,
                         tether__tfidf_group *grp) {
    const tether_ir_tensor *pool = tether__ir_in(g, n, 1), *cnt = tether__ir_in(g, n, 2);
    int64_t np = pool->shape[0], ng = cnt->shape[0], id = 0;
    const int64_t *c = cnt->data;
    for (int64_t i = 0; i < ng && i < TETHER__TFIDF_MAX_GRAM; i++) {
        int64_t s = c[i], e = i + 1 < ng ? c[i + 1] : np;
        grp[i].start = s;
        grp[i].count = (s >= 0 && e >= s && e <= np) ? (e - s) / (i + 1) : -1;
        grp[i].id0 = id;
        if (grp[i].count < 0 || (e - s) % (i + 1) != 0) {
            return -1;
        }
        id += grp[i].count;
    }
    return (int)(ng < TETHER__TFIDF_MAX_GRAM ? ng : TETHER__TFIDF_MAX_GRAM);
}

int tether__ir_tfidf_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond) {
    const tether_ir_tensor *x = tether__ir_in(g, n, 0), *pool = tether__ir_in(g, n, 1);
    const tether_ir_tensor *cnt = tether__ir_in(g, n, 2), *ix = tether__ir_in(g, n, 3);
    const tether_ir_tensor *w = n->ninputs > 4 ? tether__ir_in(g, n, 4) : NULL;
    const tether_ir_attrs *a = &n->attrs;
    if (x->ndim != 1 && x->ndim != 2) {
        return bad(n, "the input must be 1-D or 2-D", x->name);
    }
    if (!is_i64_const(pool) || !is_i64_const(cnt) || !is_i64_const(ix)) {
        return bad(n, "pool, counts and indexes must be 1-D int64 constants", NULL);
    }
    if (a->nints != 3 || a->ints[0] < 1 || a->ints[1] < a->ints[0] || a->ints[2] < 0) {
        return bad(n, "ints must be {min_gram >= 1, max_gram >= min_gram, max_skip >= 0}", NULL);
    }
    if (a->mode < 0 || a->mode > 2) {
        return bad(n, "mode must be 0 (TF), 1 (IDF) or 2 (TFIDF)", NULL);
    }
    if (cnt->shape[0] > TETHER__TFIDF_MAX_GRAM || a->ints[1] > TETHER__TFIDF_MAX_GRAM) {
        return tether__ir_node_error(n, TETHER_ERR_LIMIT, "n-grams longer than %d",
                                     TETHER__TFIDF_MAX_GRAM);
    }
    tether__tfidf_group grp[TETHER__TFIDF_MAX_GRAM];
    int ng = tether__tfidf_groups(g, n, grp);
    const int64_t *c = cnt->data;
    for (int i = 1; i < (int)cnt->shape[0]; i++) {
        if (c[i] < c[i - 1]) {
            return bad(n, "counts must not decrease", cnt->name);
        }
    }
    if (ng < 0) {
        return bad(n, "each n-gram group of pool must hold whole n-grams within pool", pool->name);
    }
    int64_t total = ng ? grp[ng - 1].id0 + grp[ng - 1].count : 0;
    if (ix->shape[0] != total) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                     "indexes '%s' has %lld entries; pool holds %lld n-grams",
                                     ix->name, (long long)ix->shape[0], (long long)total);
    }
    const int64_t *id = ix->data;
    for (int64_t i = 0; i < total; i++) {
        if (id[i] < 0 || id[i] >= a->k) {
            return tether__ir_node_error(
                n, TETHER_ERR_INVALID_ARG, "index %lld of '%s' is %lld, outside 0..%lld",
                (long long)i, ix->name, (long long)id[i], (long long)a->k - 1);
        }
    }
    if (w && (w->kind != TETHER_TENSOR_CONSTANT || !w->data || w->ndim != 1 ||
              w->shape[0] != total || !tether_dtype_equal(w->dtype, TETHER_FLOAT32))) {
        return bad(n, "weights must be a float32 constant with one entry per n-gram", w->name);
    }
    if (a->k < 1) {
        return bad(n, "k (the output width, max(indexes) + 1) must be >= 1", NULL);
    }
    *ond = x->ndim;
    os[0] = x->shape[0];
    os[x->ndim - 1] = a->k;
    return TETHER_OK;
}

int tether__ir_tfidf_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out) {
    const tether_ir_tensor *x = tether__ir_in(g, n, 0);
    *out = TETHER_FLOAT32;
    if (!tether_dtype_equal(x->dtype, TETHER_INT32) &&
        !tether_dtype_equal(x->dtype, TETHER_INT64)) {
        return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED,
                                     "input '%s' has element type %s; tfidf takes int32 or int64",
                                     x->name, tether__dtype_str(x->dtype));
    }
    return TETHER_OK;
}
