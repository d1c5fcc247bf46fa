/*
 * The integer-operator pass (docs/quantization.md): in a QDQ model, a conv2d or matmul whose
 * input and weights come from dequantize nodes and whose only consumer is a quantize node (through
 * at most one relu or clip, which becomes the output clamp) is replaced by one qconv / qmatmul on
 * the quantized tensors: int32 bias (a dequantized int32 bias, or a float constant bias rounded to
 * the accumulator's scale), int32 zero points, and the requantization rows computed from the
 * constant scales. Everything else stays float between its explicit (de)quantize nodes;
 * tether__quant_float_nodes names those for the compile report.
 *
 * What must stay true: a pattern is rewritten only when the integer operator computes what the
 * float one followed by quantize computes (up to one rounding of the requantization): scales and
 * zero points constant, per-tensor for the input and output, per-tensor or per output channel for
 * the weights, the float intermediates used by nothing else. Runs before constant folding (which
 * would turn dequantized constant weights into floats).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

#define DEAD ((tether_op)TETHER_OP_COUNT_)

static const tether_ir_tensor *cst(const tether_ir_graph *g, int t) {
    if (t < 0 || g->tensors[t].kind != TETHER_TENSOR_CONSTANT || !g->tensors[t].data) {
        return NULL;
    }
    return &g->tensors[t];
}

/* The producer of t when it is a dequantize with constant scale (and zero point), else -1. */
static int dq_of(const tether_ir_graph *g, int t) {
    int p = t >= 0 ? g->tensors[t].producer : -1;
    if (p < 0 || g->nodes[p].op != TETHER_OP_DEQUANTIZE || !cst(g, g->nodes[p].inputs[1]) ||
        (g->nodes[p].ninputs > 2 && g->nodes[p].inputs[2] >= 0 && !cst(g, g->nodes[p].inputs[2]))) {
        return -1;
    }
    return p;
}

/* The only consumer of t (-1 when none, several, or t is a graph output). */
static int only_consumer(const tether_ir_graph *g, int t) {
    int c[2];
    if (tether__ir_is_graph_output(g, t) || tether__ir_consumers(g, t, c, 2) != 1) {
        return -1;
    }
    return c[0];
}

static int64_t ival(const tether_ir_tensor *t, int64_t k) {
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
static int64_t zp(const tether_ir_graph *g, const tether_ir_node *n, int64_t k) {
    const tether_ir_tensor *z = n->ninputs > 2 ? cst(g, n->inputs[2]) : NULL;
    return z ? ival(z, k) : 0;
}

static float sc(const tether_ir_graph *g, const tether_ir_node *n, int64_t k) {
    const tether_ir_tensor *s = &g->tensors[n->inputs[1]];
    return ((const float *)s->data)[tether_ir_tensor_elements(s) == 1 ? 0 : k];
}

static int add_i32(tether_ir_graph *g, const char *base, const char *what, const int32_t *v,
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

/* Tries node i; 1 when rewritten, 0 when not a pattern, < 0 on an error. */
static int rewrite(tether_ir_graph *g, int i) {
    tether_ir_node *n = &g->nodes[i];
    bool conv = n->op == TETHER_OP_CONV2D;
    if ((!conv && n->op != TETHER_OP_MATMUL) || n->attrs.act != TETHER_ACT_NONE ||
        n->attrs.has_residual) {
        return 0;
    }
    int dx = dq_of(g, n->inputs[0]), dw = dq_of(g, n->inputs[1]);
    if (dx < 0 || dw < 0 || tether_ir_tensor_elements(&g->tensors[g->nodes[dx].inputs[1]]) != 1) {
        return 0;
    }
    const tether_ir_tensor *xq = &g->tensors[g->nodes[dx].inputs[0]],
                           *wq = &g->tensors[g->nodes[dw].inputs[0]];
    const tether_ir_tensor *wt = &g->tensors[n->inputs[1]];
    if (xq->dtype.bits != 8 || wq->dtype.bits != 8 || !cst(g, g->nodes[dw].inputs[0])) {
        return 0;
    }
    /* channels: conv output channels (weights axis 0), matmul columns (B's last axis) */
    int64_t ch = conv ? wt->shape[0] : wt->shape[wt->ndim - 1];
    int64_t nws = (int64_t)tether_ir_tensor_elements(&g->tensors[g->nodes[dw].inputs[1]]);
    if (nws != 1) {
        int ax = tether__ir_norm_axis(g->nodes[dw].attrs.axis, wt->ndim);
        if (nws != ch || ax != (conv ? 0 : wt->ndim - 1) || (!conv && wt->ndim != 2)) {
            return 0;
        }
    }
    /* the consumer chain: [relu | clip] then quantize */
    int q = only_consumer(g, n->outputs[0]), act = -1;
    if (q >= 0 && (g->nodes[q].op == TETHER_OP_RELU || g->nodes[q].op == TETHER_OP_CLIP)) {
        act = q;
        q = only_consumer(g, g->nodes[q].outputs[0]);
    }
    if (q < 0 || g->nodes[q].op != TETHER_OP_QUANTIZE || !cst(g, g->nodes[q].inputs[1]) ||
        tether_ir_tensor_elements(&g->tensors[g->nodes[q].inputs[1]]) != 1 ||
        (g->nodes[q].ninputs > 2 && g->nodes[q].inputs[2] >= 0 && !cst(g, g->nodes[q].inputs[2])) ||
        g->nodes[q].attrs.to.bits != 8) {
        return 0;
    }
    const tether_ir_node *Q = &g->nodes[q], *DX = &g->nodes[dx], *DW = &g->nodes[dw];
    float xs = sc(g, DX, 0), ys = sc(g, Q, 0);
    int64_t yz = zp(g, Q, 0), lo, hi;
    tether__quant_range(Q->attrs.to, &lo, &hi);
    if (act >= 0) {
        float amin = g->nodes[act].op == TETHER_OP_RELU ? 0.0f : g->nodes[act].attrs.min;
        float amax = g->nodes[act].op == TETHER_OP_RELU ? INFINITY : g->nodes[act].attrs.max;
        if (amin > -1e30f) {
            int64_t l = tether__quant_round_even((double)(amin / ys)) + yz;
            lo = l > lo ? l : lo;
        }
        if (amax < 1e30f) {
            int64_t h = tether__quant_round_even((double)(amax / ys)) + yz;
            hi = h < hi ? h : hi;
        }
    }
    /* bias: dequantize of int32 with scale xs * ws[c] and zero point 0, or a float constant */
    int32_t *bias = NULL, *wz = NULL, *rq = NULL;
    int bt = n->ninputs > 2 ? n->inputs[2] : -1, db = conv ? dq_of(g, bt) : -1, rc = 0;
    if (bt >= 0 &&
        !(db >= 0 && g->tensors[g->nodes[db].inputs[0]].dtype.bits == 32 &&
          cst(g, g->nodes[db].inputs[0])) &&
        !(cst(g, bt) && tether_dtype_equal(g->tensors[bt].dtype, TETHER_FLOAT32))) {
        return 0;
    }
    bias = calloc((size_t)ch, sizeof *bias);
    wz = calloc((size_t)ch, sizeof *wz);
    rq = calloc((size_t)ch * 2, sizeof *rq);
    if (!bias || !wz || !rq) {
        free(bias);
        free(wz);
        free(rq);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "integer-operator pass: out of memory");
    }
    for (int64_t c = 0; c < ch && !rc; c++) {
        float ws = sc(g, DW, nws == 1 ? 0 : c);
        volatile float m = xs * ws;
        float accs = m;
        m = m / ys;
        wz[c] = (int32_t)zp(g, DW, nws == 1 ? 0 : c);
        if (tether_quant_multiplier((double)m, &rq[2 * c], &rq[2 * c + 1])) {
            rc = -1;
        }
        if (db >= 0) {
            const tether_ir_tensor *bq = &g->tensors[g->nodes[db].inputs[0]];
            bias[c] = (int32_t)(ival(bq, c) - zp(g, &g->nodes[db], c));
        } else if (bt >= 0) {
            double b = (double)((const float *)g->tensors[bt].data)[c] / (double)accs;
            b = b > 2147483647.0 ? 2147483647.0 : b < -2147483648.0 ? -2147483648.0 : b;
            bias[c] = (int32_t)tether__quant_round_even(b);
        }
    }
    char base[400];
    snprintf(base, sizeof base, "%s", n->name);
    int in[7] = {DX->inputs[0], DW->inputs[0], -1, -1, -1, -1, -1};
    int64_t one = 1, sch = ch, srq[2] = {ch, 2};
    int32_t xz = (int32_t)zp(g, DX, 0), yz32 = (int32_t)yz;
    bool same_wz = true;
    for (int64_t c = 1; c < ch; c++) {
        same_wz &= wz[c] == wz[0];
    }
    if (!rc) {
        rc = add_i32(g, base, "bias_q", bias, 1, &sch, &in[2]);
    }
    if (!rc) {
        rc = add_i32(g, base, "x_zero_point", &xz, 1, &one, &in[3]);
    }
    if (!rc) {
        rc = add_i32(g, base, "w_zero_point", wz, 1, same_wz ? &one : &sch, &in[4]);
    }
    if (!rc) {
        rc = add_i32(g, base, "requant", rq, 2, srq, &in[5]);
    }
    if (!rc) {
        rc = add_i32(g, base, "y_zero_point", &yz32, 1, &one, &in[6]);
    }
    free(bias);
    free(wz);
    free(rq);
    if (rc) {
        return rc < 0 && rc != -1 ? rc : 0;
    }
    n = &g->nodes[i]; /* tensors were added; nodes did not move */
    tether_ir_attrs a = n->attrs;
    a.min = (float)lo;
    a.max = (float)hi;
    a.to = g->nodes[q].attrs.to;
    /* the node becomes the integer one in place (the order stays topological) and writes the
     * quantize node's output; the dequantize nodes die with dead-node elimination when nothing
     * else reads them */
    g->nodes[q].op = DEAD;
    if (act >= 0) {
        g->nodes[act].op = DEAD;
    }
    n->op = conv ? TETHER_OP_QCONV : TETHER_OP_QMATMUL;
    n->attrs = a;
    n->ninputs = 7;
    memcpy(n->inputs, in, sizeof in);
    n->outputs[0] = g->nodes[q].outputs[0];
    return 1;
}

int tether_pass_integer_ops(tether_ir_graph *g) {
    int nn = g->nnodes;
    for (int i = 0; i < nn; i++) {
        int rc = rewrite(g, i);
        if (rc < 0) {
            return rc;
        }
    }
    return TETHER_OK;
}

int tether__quant_float_nodes(const tether_ir_graph *g, char *buf, size_t n) {
    int count = 0;
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *nd = &g->nodes[i];
        bool after_dq = false;
        for (int k = 0; k < nd->ninputs && !after_dq; k++) {
            int p = nd->inputs[k] >= 0 ? g->tensors[nd->inputs[k]].producer : -1;
            after_dq = p >= 0 && g->nodes[p].op == TETHER_OP_DEQUANTIZE;
        }
        if (!after_dq || tether__op_info_of(nd->op)->kind == TETHER__OPK_QUANT) {
            continue;
        }
        count++;
        if (len + strlen(nd->name) + 3 < n) {
            len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "", nd->name);
        }
    }
    return count;
}
