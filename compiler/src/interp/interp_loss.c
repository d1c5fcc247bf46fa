/*
 * The reference interpreter's losses: nll_loss, nll_loss_sum and nll_loss_mean (ONNX
 * NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss after its log_softmax), plain loops with
 * double accumulators.
 *
 * What must stay true: the generated C (codegen/emit_c_loss.c) computes the same: a target equal
 * to the ignore_index contributes 0 with weight 0; a target outside [0, C) that is not ignored
 * gives NaN (its loss and, for _mean, the result), never a read outside the scores; _mean divides
 * the weighted sum by the sum of the weights of the targets counted (0/0 is NaN, as ONNX's).
 */
#include <math.h>

#include "interp_internal.h"
#include "tether/crt/dtype.h"

void tether__interp_nll_loss(const tether_ir_graph *g, const tether_ir_node *n, void **buf) {
    const tether_ir_tensor *xt = &g->tensors[n->inputs[0]];
    const tether_ir_tensor *tt = &g->tensors[n->inputs[1]];
    const float *x = buf[n->inputs[0]];
    const void *tgt = buf[n->inputs[1]];
    const float *w = n->ninputs > 2 && n->inputs[2] >= 0 ? buf[n->inputs[2]] : NULL;
    float *y = buf[n->outputs[0]];
    const int64_t N = xt->shape[0], C = xt->shape[1];
    int64_t D = 1;
    for (int i = 2; i < xt->ndim; i++) {
        D *= xt->shape[i];
    }
    const bool has_ii = n->attrs.nints == 1;
    const int64_t ii = n->attrs.ints[0];
    double sum = 0.0, wsum = 0.0;
    for (int64_t b = 0; b < N; b++) {
        for (int64_t d = 0; d < D; d++) {
            val tv = tether__interp_load(tgt, tt->dtype, (size_t)(b * D + d));
            int64_t t = tv.c == TETHER__DC_UINT ? (tv.u > INT64_MAX ? -1 : (int64_t)tv.u) : tv.i;
            bool unsigned_big = tv.c == TETHER__DC_UINT && tv.u > INT64_MAX;
            double l, wt;
            if (has_ii && !unsigned_big && t == ii) {
                l = 0.0;
                wt = 0.0;
            } else if (unsigned_big || t < 0 || t >= C) {
                l = NAN;
                wt = w ? NAN : 1.0;
            } else {
                wt = w ? w[t] : 1.0;
                l = -(double)x[(b * C + t) * D + d] * wt;
            }
            if (n->op == TETHER_OP_NLL_LOSS) {
                y[b * D + d] = (float)l;
            }
            sum += l;
            wsum += wt;
        }
    }
    if (n->op == TETHER_OP_NLL_LOSS_SUM) {
        y[0] = (float)sum;
    } else if (n->op == TETHER_OP_NLL_LOSS_MEAN) {
        y[0] = (float)(sum / wsum);
    }
}
