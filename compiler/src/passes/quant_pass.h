/*
 * Helpers shared by the integer-operator pass's files (quant_pass.c: conv2d / matmul / dense
 * patterns; quant_passthrough.c: pass-through and pooling patterns): reading the constant scales
 * and zero points of (de)quantize nodes, the single consumer of a tensor, adding int32 constants.
 *
 * What must stay true: a helper answers "not a pattern" (-1, NULL) rather than guessing when a
 * parameter is not a constant.
 */
#ifndef TETHER_PASSES_QUANT_PASS_H
#define TETHER_PASSES_QUANT_PASS_H

#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"

#define DEAD ((tether_op)TETHER_OP_COUNT_)

static inline const tether_ir_tensor *cst(const tether_ir_graph *g, int t) {
    if (t < 0 || g->tensors[t].kind != TETHER_TENSOR_CONSTANT || !g->tensors[t].data) {
        return NULL;
    }
    return &g->tensors[t];
}

/* The producer of t when it is a dequantize with constant scale (and zero point), else -1. */
static inline int dq_of(const tether_ir_graph *g, int t) {
    int p = t >= 0 ? g->tensors[t].producer : -1;
    if (p < 0 || g->nodes[p].op != TETHER_OP_DEQUANTIZE || !cst(g, g->nodes[p].inputs[1]) ||
        (g->nodes[p].ninputs > 2 && g->nodes[p].inputs[2] >= 0 && !cst(g, g->nodes[p].inputs[2]))) {
        return -1;
    }
    return p;
}

/* The only consumer of t (-1 when none, several, or t is a graph output). */
static inline int only_consumer(const tether_ir_graph *g, int t) {
    int c[2];
    if (tether__ir_is_graph_output(g, t) || tether__ir_consumers(g, t, c, 2) != 1) {
        return -1;
    }
    return c[0];
}

static inline int64_t ival(const tether_ir_tensor *t, int64_t k) {
    size_t i = tether_ir_tensor_elements(t) == 1 ? 0 : (size_t)k;
    const uint8_t *p = t->data;
    switch (t->dtype.bits) {
    case 8:
        return t->dtype.code == kDLInt ? (int64_t)(int8_t)p[i] : (int64_t)p[i];
    case 16: {
        uint16_t u;
        memcpy(&u, p + 2 * i, 2);
        return t->dtype.code == kDLInt ? (int64_t)(int16_t)u : (int64_t)u;
    }
    default: {
        uint32_t u;
        memcpy(&u, p + 4 * i, 4);
        return t->dtype.code == kDLInt ? (int64_t)(int32_t)u : (int64_t)u;
    }
    }
}

/* The zero point of a (de)quantize node, element k (0 when absent). */
static inline int64_t zp(const tether_ir_graph *g, const tether_ir_node *n, int64_t k) {
    const tether_ir_tensor *z = n->ninputs > 2 ? cst(g, n->inputs[2]) : NULL;
    return z ? ival(z, k) : 0;
}

static inline float sc(const tether_ir_graph *g, const tether_ir_node *n, int64_t k) {
    const tether_ir_tensor *s = &g->tensors[n->inputs[1]];
    return ((const float *)s->data)[tether_ir_tensor_elements(s) == 1 ? 0 : k];
}

static inline int add_i32(tether_ir_graph *g, const char *base, const char *what, const int32_t *v,
                          int ndim, const int64_t *shape, int *t) {
    char name[512];
    snprintf(name, sizeof name, "%s/%s", base, what);
    for (int u = 1; tether_ir_find_tensor(g, name) >= 0; u++) {
        snprintf(name, sizeof name, "%s/%s#%d", base, what, u);
    }
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        n *= (size_t)shape[i];
    }
    return tether_ir_add_constant(g, name, TETHER_INT32, ndim, shape, v, n * 4, t);
}

/* The pass-through and pooling patterns of node i (quant_passthrough.c): 1 when rewritten, 0 when
 * not a pattern, < 0 on an error. */
int tether__quant_rewrite_passthrough(tether_ir_graph *g, int i);

/* The elementwise and pooling patterns of node i (quant_elt.c): qadd, qmul, qlut, qmax_pool,
 * qavg_pool, requantized concat; 1 when rewritten, 0 when not a pattern, < 0 on an error. */
int tether__quant_rewrite_elt(tether_ir_graph *g, int i);

#endif
