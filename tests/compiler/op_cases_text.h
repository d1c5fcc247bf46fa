/*
 * The operator cases of tfidf (TfIdfVectorizer; op_cases.c's table). Its pool, counts, indexes
 * and weights must be constants (the C kernel unrolls the n-gram groups from them), so a tfidf
 * case lists x alone as its graph input and tt_tfidf_operands (op_cases.c) adds the constants (the
 * one exception to "every operand is a graph input": the interpreter and the backend still see the
 * same values). The pool's values lie in the range of the random integers of x ([-20, 20]), so
 * unigrams, bigrams and skipped bigrams do occur.
 */
#ifndef TT_OP_CASES_TEXT_H
#define TT_OP_CASES_TEXT_H

static void a_tfidf_tfidf(tether_ir_attrs *a) { /* 1..3-grams, skips up to 2, TFIDF */
    a->k = 8;
    a->mode = 2;
    a->ints[0] = 1;
    a->ints[1] = 3;
    a->ints[2] = 2;
    a->nints = 3;
}
static void a_tfidf_idf(tether_ir_attrs *a) { /* bigrams only, no skips, IDF (weights 1) */
    a->k = 8;
    a->mode = 1;
    a->ints[0] = 2;
    a->ints[1] = 2;
    a->ints[2] = 0;
    a->nints = 3;
}
static void a_tfidf_tf(tether_ir_attrs *a) { /* 1..2-grams, skips up to 5, TF */
    a->k = 8;
    a->mode = 0;
    a->ints[0] = 1;
    a->ints[1] = 2;
    a->ints[2] = 5;
    a->nints = 3;
}

/* clang-format off */
#define TT_TEXT_CASES \
    {"tfidf_2d_int32_tfidf", TETHER_OP_TFIDF, 1, {2}, {{3, 40}}, 0, a_tfidf_tfidf, NONE, C, \
     "int32"}, \
    {"tfidf_1d_int64_idf", TETHER_OP_TFIDF, 1, {1}, {{60}}, 0, a_tfidf_idf, NONE, C, "int64"}, \
    {"tfidf_2d_int64_tf", TETHER_OP_TFIDF, 1, {2}, {{2, 50}}, 0, a_tfidf_tf, NONE, C, "int64"},
/* clang-format on */

#endif
