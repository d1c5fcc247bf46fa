/*
 * The reference loops of tfidf (TfIdfVectorizer; ops.def, ir/shapes_text.c): per row of x, for
 * each n-gram length n in min_gram..max_gram and each skip s in 0..max_skip (unigrams once: a
 * skip means nothing for them), every start i whose n-gram x[i], x[i+s+1], ... fits the row is
 * looked up in pool's group of length n and counts one for the output column of the first
 * n-gram it equals; then mode weights the counts (TF the count, IDF the weight where the count
 * is > 0, TFIDF count x weight; weights absent = 1), as ONNX Runtime does.
 *
 * What must stay true: the same order of the same operations as codegen/emit_c_text.c (counts
 * are small integers in float32, weighting one multiply), so the two agree exactly.
 */
#include <string.h>

#include "../internal.h"
#include "interp_internal.h"
#include "tether/crt/error.h"

int tether__interp_tfidf(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *x = &g->tensors[n->inputs[0]], *o = &g->tensors[n->outputs[0]];
    const tether_ir_attrs *a = &n->attrs;
    tether__tfidf_group grp[TETHER__TFIDF_MAX_GRAM];
    int ng = tether__tfidf_groups(g, n, grp);
    if (ng < 0) {
        return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "malformed n-gram groups");
    }
    const int64_t *pool = g->tensors[n->inputs[1]].data, *ix = g->tensors[n->inputs[3]].data;
    const float *w = n->ninputs > 4 && n->inputs[4] >= 0 ? g->tensors[n->inputs[4]].data : NULL;
    bool wide = x->dtype.bits == 64;
    int64_t rows = x->ndim == 2 ? x->shape[0] : 1, len = x->shape[x->ndim - 1], C = a->k;
    int64_t total = ng ? grp[ng - 1].id0 + grp[ng - 1].count : 0;
    float *y = buf[n->outputs[0]];
    memset(y, 0, tether_ir_tensor_bytes(o));
    for (int64_t r = 0; r < rows; r++) {
        float *yr = y + r * C;
        for (int64_t gl = a->ints[0]; gl <= a->ints[1] && gl <= ng; gl++) {
            const tether__tfidf_group *gp = &grp[gl - 1];
            for (int64_t s = 0; s <= (gl == 1 ? 0 : a->ints[2]); s++) {
                for (int64_t i = 0; i + (gl - 1) * (s + 1) < len; i++) {
                    for (int64_t j = 0; j < gp->count; j++) {
                        bool eq = true;
                        for (int64_t t = 0; eq && t < gl; t++) {
                            int64_t at = r * len + i + t * (s + 1);
                            int64_t v = wide ? ((const int64_t *)buf[n->inputs[0]])[at]
                                             : ((const int32_t *)buf[n->inputs[0]])[at];
                            eq = v == pool[gp->start + j * gl + t];
                        }
                        if (eq) {
                            yr[ix[gp->id0 + j]] += 1.0f;
                            break;
                        }
                    }
                }
            }
        }
        for (int64_t j = 0; a->mode != 0 && j < total; j++) {
            float wj = w ? w[j] : 1.0f, *c = &yr[ix[j]];
            *c = a->mode == 1 ? (*c > 0.0f ? wj : 0.0f) : *c * wj;
        }
    }
    return TETHER_OK;
}
