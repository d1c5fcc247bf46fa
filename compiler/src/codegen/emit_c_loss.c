/*
 * The C emitter's losses: the kernels of nll_loss, nll_loss_sum and nll_loss_mean (float32
 * scores and weights, targets of any integer type), plain loops with float accumulators.
 *
 * What must stay true: the kernel computes what the interpreter does (interp/interp_loss.c): a
 * target equal to the ignore_index contributes 0 with weight 0; a target outside [0, C) that is
 * not ignored gives NaN and is never used as an index; _mean divides the weighted sum by the sum
 * of the weights counted.
 */
#include <stdio.h>

#include "emit_c_internal.h"
#include "tether/crt/dtype.h"

void tether__c_nll_loss(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *t = T(e, nd->inputs[1]);
    const bool weighted = nd->ninputs > 2 && nd->inputs[2] >= 0;
    long long N = x->shape[0], C = x->shape[1], D = 1;
    for (int i = 2; i < x->ndim; i++) {
        D *= x->shape[i];
    }
    const bool is_signed = t->dtype.code == kDLInt;
    line(e, "const %s *restrict tp = %s;", tether__c_type(t->dtype), k->in[1]);
    if (weighted) {
        line(e, "const float *restrict w_ = %s;", k->in[2]);
    }
    line(e, "float sum = 0.0f, wsum = 0.0f;");
    line(e, "(void)sum;");
    line(e, "(void)wsum;");
    loop(e, "b", N);
    loop(e, "d", D);
    line(e, "const %s tv = tp[b * %lld + d];", tether__c_type(t->dtype), D);
    line(e, "float l, wt;");
    if (nd->attrs.nints == 1) {
        long long ii = (long long)nd->attrs.ints[0];
        if (is_signed) {
            line(e, "if ((long long)tv == %lldLL) {", ii);
        } else if (ii < 0) {
            line(e, "if (0) {"); /* an unsigned target never equals a negative ignore_index */
        } else {
            line(e, "if ((unsigned long long)tv == %lluULL) {", (unsigned long long)ii);
        }
        e->depth++;
        line(e, "l = 0.0f;");
        line(e, "wt = 0.0f;");
        e->depth--;
        line(e, "} else if (%s(unsigned long long)tv >= %lluULL) {", is_signed ? "tv < 0 || " : "",
             (unsigned long long)C);
    } else {
        line(e, "if (%s(unsigned long long)tv >= %lluULL) {", is_signed ? "tv < 0 || " : "",
             (unsigned long long)C);
    }
    e->depth++;
    line(e, "l = NAN;");
    line(e, "wt = %s;", weighted ? "NAN" : "1.0f");
    e->depth--;
    line(e, "} else {");
    e->depth++;
    line(e, "wt = %s;", weighted ? "w_[tv]" : "1.0f");
    line(e, "l = -%s[(b * %lld + (long long)tv) * %lld + d] * wt;", k->in[0], C, D);
    close_block(e);
    if (nd->op == TETHER_OP_NLL_LOSS) {
        line(e, "%s[b * %lld + d] = l;", k->out, D);
    }
    line(e, "sum += l;");
    line(e, "wsum += wt;");
    close_block(e);
    close_block(e);
    if (nd->op == TETHER_OP_NLL_LOSS_SUM) {
        line(e, "%s[0] = sum;", k->out);
    } else if (nd->op == TETHER_OP_NLL_LOSS_MEAN) {
        line(e, "%s[0] = sum / wsum;", k->out);
    }
}
