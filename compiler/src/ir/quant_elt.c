/*
 * The typing and shape rules of the integer elementwise and pooling operators (the rows qadd,
 * qmul, qlut, qmax_pool, qavg_pool at the end of ops.def; docs/quantization.md "Integer
 * elementwise and pooling operators"), and tether__quant_rshift_rne, the one rounding they share.
 *
 * What must stay true: a node passes these rules only when every kernel (interpreter, C, OpenCL)
 * runs it: 8-bit inputs, an 8-bit output, a constant parameter tensor of the documented length
 * whose shift and clamp are in range (the kernels bake them in as literals); every message names
 * the node.
 */
#include <string.h>

#include "../internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/ir.h"

int tether__quant_is_elt(tether_op op) {
    return op == TETHER_OP_QADD || op == TETHER_OP_QMUL || op == TETHER_OP_QLUT ||
           op == TETHER_OP_QMAX_POOL || op == TETHER_OP_QAVG_POOL;
}

int64_t tether__quant_rshift_rne(int64_t v, int n) {
    if (n <= 0) {
        return v;
    }
    if (n >= 63) {
        return 0;
    }
    int64_t r = v >> n; /* floor (arithmetic shift) */
    int64_t rem = v - r * ((int64_t)1 << n), half = (int64_t)1 << (n - 1);
    if (rem > half || (rem == half && (r & 1))) {
        r++;
    }
    return r;
}

static bool is_8bit(DLDataType t) {
    return t.lanes == 1 && t.bits == 8 && (t.code == kDLInt || t.code == kDLUInt);
}

int tether__ir_qelt_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out) {
    const tether_ir_tensor *x = tether__ir_in(g, n, 0);
    int nx = n->op == TETHER_OP_QADD || n->op == TETHER_OP_QMUL ? 2 : 1;
    for (int i = 0; i < nx; i++) {
        const tether_ir_tensor *t = tether__ir_in(g, n, i);
        if (!t || !is_8bit(t->dtype)) {
            return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED,
                                         "input %d has element type %s; int8 or uint8 only", i,
                                         t ? tether__dtype_str(t->dtype) : "(absent)");
        }
    }
    const tether_ir_tensor *p = nx < n->ninputs ? tether__ir_in(g, n, nx) : NULL;
    if (n->op == TETHER_OP_QLUT) {
        if (!p || !is_8bit(p->dtype)) {
            return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED,
                                         "the table must be int8 or uint8");
        }
        *out = p->dtype;
        return TETHER_OK;
    }
    if (n->op == TETHER_OP_QMAX_POOL) {
        *out = x->dtype;
        return TETHER_OK;
    }
    if (!p || !tether_dtype_equal(p->dtype, TETHER_INT32)) {
        return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED,
                                     "the parameter input must be int32 (%s)",
                                     p ? tether__dtype_str(p->dtype) : "absent");
    }
    if (!is_8bit(n->attrs.to)) {
        return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED, "output type %s: int8 or uint8",
                                     tether__dtype_str(n->attrs.to));
    }
    *out = n->attrs.to;
    return TETHER_OK;
}

/* p: a constant of `len` elements (rank <= 1). */
static const int32_t *params(const tether_ir_graph *g, const tether_ir_node *n, int i,
                             int64_t len) {
    const tether_ir_tensor *p = tether__ir_in(g, n, i);
    if (!p || p->kind != TETHER_TENSOR_CONSTANT || !p->data || p->ndim > 1 ||
        (int64_t)tether_ir_tensor_elements(p) != len) {
        tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                              "input %d must be a constant of %lld elements", i, (long long)len);
        return NULL;
    }
    return p->data;
}

static int check_clamp(const tether_ir_node *n, int32_t lo, int32_t hi) {
    int64_t tl = 0, th = 0;
    tether__quant_range(n->attrs.to, &tl, &th);
    if (lo > hi || lo < tl || hi > th) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                     "clamp %ld..%ld is not within %s's range", (long)lo, (long)hi,
                                     tether__dtype_str(n->attrs.to));
    }
    return TETHER_OK;
}

int tether__ir_qelt_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond) {
    tether_ir_node base = *n;
    base.attrs.act = TETHER_ACT_NONE;
    base.attrs.has_residual = false;
    int rc;
    const int32_t *p;
    if (n->op == TETHER_OP_QADD || n->op == TETHER_OP_QMUL) {
        base.op = TETHER_OP_ADD;
        base.ninputs = 2;
        if ((rc = tether__ir_infer_shape(g, &base, os, ond))) {
            return rc;
        }
        if (!(p = params(g, n, 2, 8))) {
            return TETHER_ERR_MISMATCH;
        }
        if (p[5] < 1 || p[5] > 62 || p[3] < 0 || p[4] < 0) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "multipliers %ld, %ld (>= 0), shift %ld (1..62)",
                                         (long)p[3], (long)p[4], (long)p[5]);
        }
        return check_clamp(n, p[6], p[7]);
    }
    if (n->op == TETHER_OP_QLUT) {
        const tether_ir_tensor *x = tether__ir_in(g, n, 0);
        if (!params(g, n, 1, 256)) {
            return TETHER_ERR_MISMATCH;
        }
        *ond = x->ndim;
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        return TETHER_OK;
    }
    if (n->op == TETHER_OP_QMAX_POOL || n->op == TETHER_OP_QAVG_POOL) {
        base.op = n->op == TETHER_OP_QMAX_POOL ? TETHER_OP_MAX_POOL : TETHER_OP_AVG_POOL;
        base.ninputs = 1;
        if ((rc = tether__ir_infer_shape(g, &base, os, ond))) {
            return rc;
        }
        n->attrs.kernel[0] = base.attrs.kernel[0];
        n->attrs.kernel[1] = base.attrs.kernel[1];
        if (n->op == TETHER_OP_QAVG_POOL) {
            int64_t kk = n->attrs.kernel[0] * n->attrs.kernel[1];
            if (!(p = params(g, n, 1, 4 + 2 * kk))) {
                return TETHER_ERR_MISMATCH;
            }
            for (int64_t c = 0; c < kk; c++) {
                if (p[4 + 2 * c] < 0 || p[5 + 2 * c] > 31 || p[5 + 2 * c] < -40) {
                    return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                                 "requantization of count %lld: multiplier %ld "
                                                 "(>= 0) shift %ld (-40..31)",
                                                 (long long)(c + 1), (long)p[4 + 2 * c],
                                                 (long)p[5 + 2 * c]);
                }
            }
            return check_clamp(n, p[2], p[3]);
        }
        return TETHER_OK;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "no integer elementwise shape rule");
}
