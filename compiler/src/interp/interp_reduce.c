/*
 * The reference interpreter's reductions (reduce_sum ... reduce_sum_square) on every element type
 * that is not float32 alone: float16/bfloat16/float64 accumulate in double, integers exactly in
 * 64-bit arithmetic (sum, prod, sum of squares, L1 wrap modulo 2^64, then the store wraps to the
 * type; max/min compare in the type), and the operators whose ONNX result is not an integer
 * operation (mean, L2, log_sum, log_sum_exp) compute in double and store converting (truncated
 * and saturated, as numpy's astype of the reference). float32 stays interp.c's run_reduce.
 *
 * A reduce node with input 1 (the int64 live extent of dimension 0 of a dynamic input,
 * ir/shapes_dynamic_use.c; float32 too) reads the first rows only: mean divides by the live
 * count (no element: NaN), max/min of no element give -inf/+inf (integers: the type's lowest and
 * highest value), sums 0, prod 1, as ONNX says of empty reductions.
 *
 * What must stay true: the same results as the generated C of emit_c_reduce.c.
 */
#include <math.h>
#include <stdlib.h>

#include "interp_internal.h"
#include "tether/crt/dtype.h"

static double as_double(val v) {
    return v.c == TETHER__DC_INT ? (double)v.i : v.c == TETHER__DC_UINT ? (double)v.u : v.f;
}

void tether__interp_reduce_typed(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]], *yt = &g->tensors[n->outputs[0]];
    const void *x = buf[n->inputs[0]];
    void *y = buf[n->outputs[0]];
    size_t total = tether_ir_tensor_elements(yt), xn = tether_ir_tensor_elements(xt);
    if (n->ninputs > 1 && n->inputs[1] >= 0 && xt->ndim > 0 && xt->shape[0] > 0) {
        /* the live extent of dimension 0 (a dynamic input): its first rows only */
        int64_t live = *(const int64_t *)buf[n->inputs[1]];
        live = live < 0 ? 0 : live > xt->shape[0] ? xt->shape[0] : live;
        xn = xn / (size_t)xt->shape[0] * (size_t)live;
    }
    int red[TETHER_IR_MAX_NDIM] = {0};
    for (int i = 0; i < n->attrs.nints; i++) {
        red[n->attrs.ints[i]] = 1;
    }
    /* the output offset of each input element: strides of the kept dimensions */
    int64_t ost[TETHER_IR_MAX_NDIM], s = 1;
    for (int d = xt->ndim - 1; d >= 0; d--) {
        ost[d] = red[d] ? 0 : s;
        s *= red[d] ? 1 : xt->shape[d];
    }
    val *acc = calloc(total ? total : 1, sizeof(val));
    double *mx = malloc((total ? total : 1) * sizeof(double));
    if (!acc || !mx) {
        free(acc);
        free(mx);
        return; /* out of memory: the caller's buffers stay as they are */
    }
    tether_op op = n->op;
    tether__dclass xc = tether__dtype_class(xt->dtype);
    bool integer = xc == TETHER__DC_INT || xc == TETHER__DC_UINT;
    /* integers: sum, prod, L1, sum_square exact (modulo 2^64); max/min in the type; the others
     * in double */
    bool exact = integer && (op == TETHER_OP_REDUCE_SUM || op == TETHER_OP_REDUCE_PROD ||
                             op == TETHER_OP_REDUCE_L1 || op == TETHER_OP_REDUCE_SUM_SQUARE ||
                             op == TETHER_OP_REDUCE_MAX || op == TETHER_OP_REDUCE_MIN);
    for (size_t f = 0; f < total; f++) {
        acc[f].c = exact ? xc : TETHER__DC_F64;
        acc[f].f = op == TETHER_OP_REDUCE_PROD  ? 1.0
                   : op == TETHER_OP_REDUCE_MAX ? -INFINITY
                   : op == TETHER_OP_REDUCE_MIN ? INFINITY
                                                : 0.0;
        /* max/min of no element (ONNX): the type's lowest / highest value */
        int bits = xt->dtype.bits;
        acc[f].i =
            op == TETHER_OP_REDUCE_PROD  ? 1
            : op == TETHER_OP_REDUCE_MAX ? (bits >= 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1)))
            : op == TETHER_OP_REDUCE_MIN ? (bits >= 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1)
                                         : 0;
        acc[f].u = op == TETHER_OP_REDUCE_PROD ? 1
                   : op == TETHER_OP_REDUCE_MIN
                       ? (bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1)
                       : 0;
        mx[f] = -INFINITY;
    }
    for (int pass = op == TETHER_OP_REDUCE_LOG_SUM_EXP ? 0 : 1; pass < 2; pass++) {
        for (size_t f = 0; f < xn; f++) {
            size_t rem = f, off = 0;
            for (int d = xt->ndim - 1; d >= 0; d--) {
                off += (rem % (size_t)xt->shape[d]) * (size_t)ost[d];
                rem /= (size_t)xt->shape[d];
            }
            val v = tether__interp_load(x, xt->dtype, f);
            val *a = &acc[off];
            if (exact && xc == TETHER__DC_INT) {
                uint64_t u = (uint64_t)v.i, au = (uint64_t)a->i;
                a->i = op == TETHER_OP_REDUCE_MAX          ? (v.i > a->i ? v.i : a->i)
                       : op == TETHER_OP_REDUCE_MIN        ? (v.i < a->i ? v.i : a->i)
                       : op == TETHER_OP_REDUCE_PROD       ? (int64_t)(au * u)
                       : op == TETHER_OP_REDUCE_L1         ? (int64_t)(au + (v.i < 0 ? 0 - u : u))
                       : op == TETHER_OP_REDUCE_SUM_SQUARE ? (int64_t)(au + u * u)
                                                           : (int64_t)(au + u);
                continue;
            }
            if (exact) { /* unsigned */
                a->u = op == TETHER_OP_REDUCE_MAX          ? (v.u > a->u ? v.u : a->u)
                       : op == TETHER_OP_REDUCE_MIN        ? (v.u < a->u ? v.u : a->u)
                       : op == TETHER_OP_REDUCE_PROD       ? a->u * v.u
                       : op == TETHER_OP_REDUCE_SUM_SQUARE ? a->u + v.u * v.u
                                                           : a->u + v.u;
                continue;
            }
            double d = as_double(v);
            if (pass == 0) {
                mx[off] = d > mx[off] ? d : mx[off];
            } else if (op == TETHER_OP_REDUCE_MAX) {
                a->f = d > a->f ? d : a->f;
            } else if (op == TETHER_OP_REDUCE_MIN) {
                a->f = d < a->f ? d : a->f;
            } else if (op == TETHER_OP_REDUCE_PROD) {
                a->f *= d;
            } else if (op == TETHER_OP_REDUCE_L1) {
                a->f += fabs(d);
            } else if (op == TETHER_OP_REDUCE_L2 || op == TETHER_OP_REDUCE_SUM_SQUARE) {
                a->f += d * d;
            } else if (op == TETHER_OP_REDUCE_LOG_SUM_EXP) {
                a->f += exp(d - mx[off]);
            } else { /* sum, mean, log_sum */
                a->f += d;
            }
        }
    }
    double cnt = total ? (double)xn / (double)total : 1.0;
    for (size_t f = 0; f < total; f++) {
        val r = acc[f];
        if (!exact) {
            double v = r.f;
            r.f = op == TETHER_OP_REDUCE_MEAN          ? v / cnt
                  : op == TETHER_OP_REDUCE_L2          ? sqrt(v)
                  : op == TETHER_OP_REDUCE_LOG_SUM     ? log(v)
                  : op == TETHER_OP_REDUCE_LOG_SUM_EXP ? mx[f] + log(v)
                                                       : v;
        }
        tether__interp_store(y, yt->dtype, f, r);
    }
    free(acc);
    free(mx);
}
