/*
 * ONNX TfIdfVectorizer (opset 9+) to the IR's tfidf (ops.def, ir/shapes_text.c): the attributes
 * pool_int64s, ngram_counts, ngram_indexes and weights become int64 / float32 constants of the
 * node (inputs 1..4), the output width k is max(ngram_indexes) + 1, ints {min_gram_length,
 * max_gram_length, max_skip_count}, mode TF 0, IDF 1, TFIDF 2.
 *
 * What must stay true: pool_strings is refused with the reason (tether has no string tensors),
 * as is any mode but TF/IDF/TFIDF; the IR's shape rule checks the rest (groups, indexes,
 * weights), naming the node.
 */
#include <stdio.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* The int64 constant `<node>/<suffix>` of the values of vals (count of them). */
static int i64_const(timport *c, const char *suffix, const int64_t *vals, size_t count, int *t) {
    char name[400];
    snprintf(name, sizeof name, "%s%s/%s", c->prefix ? c->prefix : "", tonnx_node_name(c, c->cur),
             suffix);
    int64_t shape = (int64_t)count;
    static const int64_t none = 0;
    int rc = tether_ir_add_constant(c->g, name, TETHER_INT64, 1, &shape, count ? vals : &none,
                                    count * sizeof(int64_t), t);
    return rc ? tonnx_wrap(c, rc) : TETHER_OK;
}

int tonnx_cv_tfidf(timport *c, const Onnx__NodeProto *n) {
    const Onnx__AttributeProto *ps = tonnx_attr(n, "pool_strings");
    if (ps && ps->n_strings) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "pool_strings: tether has no string tensors (only pool_int64s over "
                          "int32/int64 input is supported)");
    }
    const Onnx__AttributeProto *pool = tonnx_attr(n, "pool_int64s");
    const Onnx__AttributeProto *cnt = tonnx_attr(n, "ngram_counts");
    const Onnx__AttributeProto *ix = tonnx_attr(n, "ngram_indexes");
    const Onnx__AttributeProto *w = tonnx_attr(n, "weights");
    if (!cnt || !ix) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "ngram_counts and ngram_indexes are required");
    }
    char mode[16];
    int64_t mn, mx, skip;
    int rc;
    if ((rc = tonnx_attr_string(c, "mode", "", mode, sizeof mode)) ||
        (rc = tonnx_attr_int(c, "min_gram_length", -1, &mn)) ||
        (rc = tonnx_attr_int(c, "max_gram_length", -1, &mx)) ||
        (rc = tonnx_attr_int(c, "max_skip_count", -1, &skip))) {
        return rc;
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_TFIDF, &a);
    if (!strcmp(mode, "TF")) {
        a.mode = 0;
    } else if (!strcmp(mode, "IDF")) {
        a.mode = 1;
    } else if (!strcmp(mode, "TFIDF")) {
        a.mode = 2;
    } else {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "mode '%s' (TF, IDF or TFIDF)", mode);
    }
    if (mn < 1 || mx < mn || skip < 0) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "min_gram_length %lld, max_gram_length %lld, max_skip_count %lld (each "
                          "given; 1 <= min <= max, skip >= 0)",
                          (long long)mn, (long long)mx, (long long)skip);
    }
    a.ints[0] = mn;
    a.ints[1] = mx;
    a.ints[2] = skip;
    a.nints = 3;
    int64_t k = 0;
    for (size_t i = 0; i < ix->n_ints; i++) {
        k = ix->ints[i] + 1 > k ? ix->ints[i] + 1 : k;
    }
    a.k = k > 0 ? k : 1;
    int in[5], y;
    int nin = w && w->n_floats ? 5 : 4;
    if ((rc = tonnx_in_tensor(c, 0, true, &in[0])) ||
        (rc = i64_const(c, "pool", pool ? pool->ints : NULL, pool ? pool->n_ints : 0, &in[1])) ||
        (rc = i64_const(c, "ngram_counts", cnt->ints, cnt->n_ints, &in[2])) ||
        (rc = i64_const(c, "ngram_indexes", ix->ints, ix->n_ints, &in[3]))) {
        return rc;
    }
    if (nin == 5) {
        char name[400];
        snprintf(name, sizeof name, "%s%s/weights", c->prefix ? c->prefix : "",
                 tonnx_node_name(c, c->cur));
        int64_t shape = (int64_t)w->n_floats;
        rc = tether_ir_add_constant(c->g, name, TETHER_FLOAT32, 1, &shape, w->floats,
                                    w->n_floats * sizeof(float), &in[4]);
        if (rc) {
            return tonnx_wrap(c, rc);
        }
    }
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_TFIDF, in, nin, y, &a);
}
