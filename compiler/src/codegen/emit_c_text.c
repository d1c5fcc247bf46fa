/*
 * The C kernel of tfidf (TfIdfVectorizer; ops.def, ir/shapes_text.c): the n-gram groups of the
 * constant pool are unrolled at compile time (one block per n-gram length, its start in pool, its
 * count and first id as literals); per row the block loops over skips, start positions and the
 * group's n-grams, comparing the elements of x with pool, and counts one for the output column of
 * the first match; then mode weights the counts.
 *
 * What must stay true: the same order of the same operations as interp/interp_text.c, so the two
 * agree exactly; no division, no stack arrays (MCU targets).
 */
#include <stdio.h>
#include <string.h>

#include "emit_c_internal.h"

void tether__c_tfidf(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    const tether_ir_attrs *a = &nd->attrs;
    tether__tfidf_group grp[TETHER__TFIDF_MAX_GRAM];
    int ng = tether__tfidf_groups(e->g, nd, grp);
    if (ng < 0) {
        line(e, "#error \"tether: tfidf with malformed n-gram groups\"");
        return;
    }
    long long rows = x->ndim == 2 ? x->shape[0] : 1, len = x->shape[x->ndim - 1];
    long long C = a->k, total = ng ? grp[ng - 1].id0 + grp[ng - 1].count : 0;
    const char *xs = k->in[0], *pool = k->in[1], *ix = k->in[3], *y = k->out;
    line(e, "(void)%s; /* the groups are unrolled from it */", k->in[2]);
    line(e, "for (long long r = 0; r < %lldLL; ++r) {", rows);
    e->depth++;
    line(e, "for (long long c = 0; c < %lldLL; ++c) {", C);
    line(e, "    %s[r * %lldLL + c] = 0.0f;", y, C);
    line(e, "}");
    for (long long gl = a->ints[0]; gl <= a->ints[1] && gl <= ng; gl++) {
        const tether__tfidf_group *gp = &grp[gl - 1];
        if (gp->count == 0) {
            continue;
        }
        line(e, "/* the %lld-grams: %lld of them from pool[%lld] */", gl, (long long)gp->count,
             (long long)gp->start);
        line(e, "for (long long s = 0; s <= %lldLL; ++s) {", gl == 1 ? 0LL : (long long)a->ints[2]);
        e->depth++;
        line(e, "for (long long i = 0; i + %lldLL * (s + 1) < %lldLL; ++i) {", gl - 1, len);
        e->depth++;
        line(e, "for (long long j = 0; j < %lldLL; ++j) {", (long long)gp->count);
        e->depth++;
        line(e, "int eq = 1;");
        line(e, "for (long long t = 0; eq && t < %lldLL; ++t) {", gl);
        line(e,
             "    eq = (long long)%s[r * %lldLL + i + t * (s + 1)] == "
             "(long long)%s[%lldLL + j * %lldLL + t];",
             xs, len, pool, (long long)gp->start, gl);
        line(e, "}");
        line(e, "if (eq) {");
        line(e, "    %s[r * %lldLL + %s[%lldLL + j]] += 1.0f;", y, C, ix, (long long)gp->id0);
        line(e, "    break;");
        line(e, "}");
        close_block(e);
        close_block(e);
        close_block(e);
    }
    if (a->mode != 0 && total > 0) {
        line(e, "for (long long j = 0; j < %lldLL; ++j) {", total);
        e->depth++;
        if (nd->ninputs > 4 && k->in[4]) {
            line(e, "float wj = %s[j];", k->in[4]);
        } else {
            line(e, "float wj = 1.0f;");
        }
        line(e, "float *c = &%s[r * %lldLL + %s[j]];", y, C, ix);
        if (a->mode == 1) {
            line(e, "*c = *c > 0.0f ? wj : 0.0f;");
        } else {
            line(e, "*c = *c * wj;");
        }
        close_block(e);
    }
    close_block(e);
}
