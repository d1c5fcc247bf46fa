/*
 * Work estimates of the IR: floating-point operations per node and per graph, for the compile
 * report, the benchmarks' GFLOP/s and the fuzz targets' work bound. Counting rule: a
 * multiply-add is 2, any other arithmetic or comparison 1 per element it produces or reads;
 * reshape-like and data-movement operators (transpose, concat, pad, resize) count 0.
 *
 * What must stay true: every count saturates at UINT64_MAX instead of wrapping, so a hostile
 * model's shapes give a huge number, never a small one.
 */
#include <stdint.h>

#include "../internal.h"

static uint64_t mul_sat(uint64_t a, uint64_t b) {
    if (a != 0 && b > UINT64_MAX / a) {
        return UINT64_MAX;
    }
    return a * b;
}

static uint64_t add_sat(uint64_t a, uint64_t b) {
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

static uint64_t elements(const tether_ir_graph *g, int tensor) {
    if (tensor < 0 || tensor >= g->ntensors || g->tensors[tensor].ndim < 0) {
        return 0;
    }
    return (uint64_t)tether_ir_tensor_elements(&g->tensors[tensor]);
}

static int64_t dim(const tether_ir_graph *g, int tensor, int i) {
    if (tensor < 0 || tensor >= g->ntensors) {
        return 0;
    }
    const tether_ir_tensor *t = &g->tensors[tensor];
    if (i < 0) {
        i += t->ndim;
    }
    return i >= 0 && i < t->ndim && t->shape[i] > 0 ? t->shape[i] : 0;
}

uint64_t tether_ir_node_flops(const tether_ir_graph *g, const tether_ir_node *n) {
    const tether__op_info *info = tether__op_info_of(n->op);
    if (info == NULL || n->noutputs < 1 || n->ninputs < 1) {
        return 0;
    }
    uint64_t out = elements(g, n->outputs[0]);
    uint64_t in = elements(g, n->inputs[0]);
    uint64_t flops = 0;
    switch (info->kind) {
    case TETHER__OPK_CONV: { /* w[O, C/g, kh, kw] */
        int w = n->inputs[1];
        uint64_t per_out = mul_sat((uint64_t)dim(g, w, 1),
                                   mul_sat((uint64_t)dim(g, w, 2), (uint64_t)dim(g, w, 3)));
        flops = add_sat(mul_sat(2, mul_sat(out, per_out)), out); /* + bias */
        break;
    }
    case TETHER__OPK_CONV_ND: { /* conv_nd: per output C/g x K...; conv_transpose: per input */
        int w = n->inputs[1];
        uint64_t per = (uint64_t)dim(g, w, 1);
        for (int d = 2; d < g->tensors[w].ndim; d++) {
            per = mul_sat(per, (uint64_t)dim(g, w, d));
        }
        flops = n->op == TETHER_OP_CONV_TRANSPOSE ? add_sat(mul_sat(2, mul_sat(in, per)), out)
                                                  : add_sat(mul_sat(2, mul_sat(out, per)), out);
        break;
    }
    case TETHER__OPK_DENSE: { /* A[M,K] (or [K,M] with trans_a) */
        uint64_t k = (uint64_t)dim(g, n->inputs[0], n->attrs.trans_a ? 0 : 1);
        flops = add_sat(mul_sat(2, mul_sat(out, k)), out);
        break;
    }
    case TETHER__OPK_MATMUL: { /* A[..., M, K]; a rank-1 A is [K] */
        flops = mul_sat(2, mul_sat(out, (uint64_t)dim(g, n->inputs[0], -1)));
        break;
    }
    case TETHER__OPK_BINARY:
    case TETHER__OPK_UNARY:
    case TETHER__OPK_PRELU:
        flops = out;
        break;
    case TETHER__OPK_SOFTMAX: /* max, subtract, exp, sum, divide */
        flops = mul_sat(5, out);
        break;
    case TETHER__OPK_POOL:
        flops = mul_sat(out, mul_sat((uint64_t)n->attrs.kernel[0], (uint64_t)n->attrs.kernel[1]));
        break;
    case TETHER__OPK_GLOBAL_POOL:
    case TETHER__OPK_REDUCE:
        flops = in;
        break;
    case TETHER__OPK_NORM: /* batch norm folds to a scale and a shift; layer norm ~5 per element */
        flops = mul_sat(n->op == TETHER_OP_BATCH_NORM ? 2 : 5, out);
        break;
    case TETHER__OPK_ALIAS:
    case TETHER__OPK_TRANSPOSE:
    case TETHER__OPK_CONCAT:
    case TETHER__OPK_PAD:
    case TETHER__OPK_RESIZE:
    case TETHER__OPK_WHERE:
    case TETHER__OPK_DATA:
    case TETHER__OPK_LOSS:
        flops = 0;
        break;
    case TETHER__OPK_QUANT: /* qconv, qmatmul: as conv2d and matmul (integer operations) */
        if (n->op == TETHER_OP_QCONV) {
            int w = n->inputs[1];
            flops = mul_sat(
                2, mul_sat(out, mul_sat((uint64_t)dim(g, w, 1),
                                        mul_sat((uint64_t)dim(g, w, 2), (uint64_t)dim(g, w, 3)))));
        } else if (n->op == TETHER_OP_QMATMUL) {
            flops = mul_sat(2, mul_sat(out, (uint64_t)dim(g, n->inputs[0], -1)));
        } else {
            flops = out;
        }
        break;
    case TETHER__OPK_CUSTOM: /* a user kernel: unknown, counted as one operation per element */
        flops = out;
        break;
    }
    if (info->epilogue && n->attrs.act != TETHER_ACT_NONE) {
        flops = add_sat(flops, out);
    }
    if (info->epilogue && n->attrs.has_residual) {
        flops = add_sat(flops, out);
    }
    return flops;
}

uint64_t tether_ir_graph_flops(const tether_ir_graph *g) {
    uint64_t total = 0;
    for (int i = 0; i < g->nnodes; i++) {
        total = add_sat(total, tether_ir_node_flops(g, &g->nodes[i]));
    }
    return total;
}
