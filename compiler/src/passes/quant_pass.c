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
 * the weights (a matmul's B may also be an activation, per tensor), the float intermediates used
 * by nothing else. Runs before constant folding (which
 * would turn dequantized constant weights into floats).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "quant_pass.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* A constant holding the 2-D 8-bit constant w transposed, in *t. */
static int transposed(tether_ir_graph *g, const char *base, int w, int *t) {
    const tether_ir_tensor *wt = &g->tensors[w];
    int64_t r = wt->shape[0], c = wt->shape[1], shape[2] = {c, r};
    uint8_t *v = malloc((size_t)(r * c) + 1);
    if (!v) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "integer-operator pass: out of memory");
    }
    const uint8_t *src = wt->data;
    for (int64_t i = 0; i < r; i++) {
        for (int64_t j = 0; j < c; j++) {
            v[j * r + i] = src[i * c + j];
        }
    }
    char name[512];
    snprintf(name, sizeof name, "%s/b_transposed", base);
    for (int u = 1; tether_ir_find_tensor(g, name) >= 0; u++) {
        snprintf(name, sizeof name, "%s/b_transposed#%d", base, u);
    }
    int rc = tether_ir_add_constant(g, name, wt->dtype, 2, shape, v, (size_t)(r * c), t);
    free(v);
    return rc;
}

/* Tries node i; 1 when rewritten, 0 when not a pattern, < 0 on an error. */
static int rewrite(tether_ir_graph *g, int i) {
    tether_ir_node *n = &g->nodes[i];
    bool conv = n->op == TETHER_OP_CONV2D, dense = n->op == TETHER_OP_DENSE;
    if ((!conv && !dense && n->op != TETHER_OP_MATMUL) || n->attrs.act != TETHER_ACT_NONE ||
        n->attrs.has_residual) {
        return 0;
    }
    /* dense (ONNX Gemm): A not transposed, alpha 1, beta 1 (or no C); B [K,N] or, transB, [N,K] */
    bool tb = dense && n->attrs.trans_b;
    if (dense && (n->attrs.trans_a || n->attrs.alpha != 1.0f ||
                  (n->ninputs > 2 && n->inputs[2] >= 0 && n->attrs.beta != 1.0f))) {
        return 0;
    }
    int dx = dq_of(g, n->inputs[0]), dw = dq_of(g, n->inputs[1]);
    if (dx < 0 || dw < 0 || tether_ir_tensor_elements(&g->tensors[g->nodes[dx].inputs[1]]) != 1) {
        return 0;
    }
    const tether_ir_tensor *xq = &g->tensors[g->nodes[dx].inputs[0]],
                           *wq = &g->tensors[g->nodes[dw].inputs[0]];
    const tether_ir_tensor *wt = &g->tensors[n->inputs[1]];
    /* B a constant (weights), or for matmul an activation (attention scores QK^T and their
     * product with V, as ONNX Runtime's quantizer writes them) quantized per tensor */
    bool bact = !cst(g, g->nodes[dw].inputs[0]);
    if (xq->dtype.bits != 8 || wq->dtype.bits != 8 ||
        (bact && (n->op != TETHER_OP_MATMUL ||
                  tether_ir_tensor_elements(&g->tensors[g->nodes[dw].inputs[1]]) != 1))) {
        return 0;
    }
    /* channels: conv output channels (weights axis 0), matmul columns (B's last axis; B's first
     * for a dense with transB) */
    int64_t ch = conv || tb ? wt->shape[0] : wt->shape[wt->ndim - 1];
    int64_t nws = (int64_t)tether_ir_tensor_elements(&g->tensors[g->nodes[dw].inputs[1]]);
    if (nws != 1) {
        int ax = tether__ir_norm_axis(g->nodes[dw].attrs.axis, wt->ndim);
        if (nws != ch || ax != (conv || tb ? 0 : wt->ndim - 1) || (!conv && wt->ndim != 2)) {
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
    int bt = n->ninputs > 2 ? n->inputs[2] : -1, db = conv || dense ? dq_of(g, bt) : -1, rc = 0;
    if (dense && bt >= 0) { /* Gemm's C: one value, or one per column ([N] or [1,N]) */
        const tether_ir_tensor *bv = &g->tensors[bt];
        size_t be = tether_ir_tensor_elements(bv);
        if (be != 1 && (be != (size_t)ch || bv->shape[bv->ndim - 1] != ch)) {
            return 0;
        }
    }
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
    if (tb && !rc) { /* B as [K,N]: the int8 weights transposed */
        rc = transposed(g, base, DW->inputs[0], &in[1]);
    }
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
    if (dense) { /* qmatmul's attributes: the clamp and the type only */
        tether_ir_attrs_init(TETHER_OP_QMATMUL, &n->attrs);
        n->attrs.min = a.min;
        n->attrs.max = a.max;
        n->attrs.to = a.to;
    } else {
        n->attrs = a;
    }
    n->ninputs = 7;
    memcpy(n->inputs, in, sizeof in);
    n->outputs[0] = g->nodes[q].outputs[0];
    return 1;
}

int tether_pass_integer_ops(tether_ir_graph *g) {
    int nn = g->nnodes;
    for (int i = 0; i < nn; i++) {
        if (g->nodes[i].op == DEAD) {
            continue;
        }
        int rc = rewrite(g, i);
        if (rc == 0) {
            rc = tether__quant_rewrite_passthrough(g, i);
        }
        if (rc == 0) {
            rc = tether__quant_rewrite_elt(g, i); /* quant_elt.c */
        }
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
