/*
 * The C kernels of the reductions (reduce_sum ... reduce_sum_square) on every element type that
 * is not float32 alone: float16/bfloat16/float64 accumulate in double; integers exactly in 64-bit
 * arithmetic (sum, prod, sum of squares, L1 in uint64_t, wrapping; max/min compared in int64_t
 * or uint64_t), then stored wrapped to the type; mean, L2, log_sum and log_sum_exp of integers in
 * double, stored truncated and saturated (tg_sat_*). float32 keeps emit_c_layers.c's kernels.
 *
 * A reduce node with input 1 (the int64 live extent of dimension 0 of a dynamic input,
 * ir/shapes_dynamic_use.c; float32 too) loops over the first `live` rows of dimension 0 only
 * (clamped to the bound); mean divides by the live count.
 *
 * What must stay true: the same results as the interpreter's interp/interp_reduce.c; loops with
 * constant bounds (but the live rows), no allocation, only the math functions the module records
 * (math_used).
 */
#include <stdio.h>

#include "emit_c_internal.h"
#include "tether/crt/dtype.h"

void tether__c_reduce_typed(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    tether_op op = nd->op;
    int red[TETHER_IR_MAX_NDIM] = {0};
    for (int i = 0; i < nd->attrs.nints; i++) {
        red[nd->attrs.ints[i]] = 1;
    }
    long long st[TETHER_IR_MAX_NDIM], s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= x->shape[d];
    }
    tether__dclass xc = tether__dtype_class(x->dtype);
    bool integer = xc == TETHER__DC_INT || xc == TETHER__DC_UINT;
    bool minmax = op == TETHER_OP_REDUCE_MAX || op == TETHER_OP_REDUCE_MIN;
    bool exact = integer && (minmax || op == TETHER_OP_REDUCE_SUM || op == TETHER_OP_REDUCE_PROD ||
                             op == TETHER_OP_REDUCE_L1 || op == TETHER_OP_REDUCE_SUM_SQUARE);
    bool sgn = xc == TETHER__DC_INT;
    /* the accumulator: int64_t/uint64_t for max/min, uint64_t (wrapping) for the other exact
     * ones, double otherwise */
    const char *at = !exact ? "double" : minmax && sgn ? "int64_t" : "uint64_t";
    const char *init;
    if (!exact) {
        init = op == TETHER_OP_REDUCE_PROD  ? "1.0"
               : op == TETHER_OP_REDUCE_MAX ? "-HUGE_VAL"
               : op == TETHER_OP_REDUCE_MIN ? "HUGE_VAL"
                                            : "0.0";
    } else if (minmax) {
        /* the type's lowest / highest value: the max/min of no element (ONNX) */
        static const char *lo[] = {"INT8_MIN", "INT16_MIN", "INT32_MIN", "INT64_MIN"};
        static const char *hi[] = {"INT8_MAX", "INT16_MAX", "INT32_MAX", "INT64_MAX"};
        static const char *uhi[] = {"UINT8_MAX", "UINT16_MAX", "UINT32_MAX", "UINT64_MAX"};
        int w = x->dtype.bits <= 8 ? 0 : x->dtype.bits <= 16 ? 1 : x->dtype.bits <= 32 ? 2 : 3;
        init = op == TETHER_OP_REDUCE_MAX ? (sgn ? lo[w] : "0u") : (sgn ? hi[w] : uhi[w]);
    } else {
        init = op == TETHER_OP_REDUCE_PROD ? "1u" : "0u";
    }
    char base[320] = "0", idx[320] = "0";
    size_t ob = 1, oi = 1;
    line(e, "%s *restrict yp = %s;", tether__c_type(y->dtype), k->out);
    /* input 1: the live extent of dimension 0 (reduced), clamped to the bound */
    bool counted = nd->ninputs > 1 && nd->inputs[1] >= 0 && x->ndim > 0 && red[0];
    if (counted) {
        line(e, "const int64_t live_raw = %s[0];", k->in[1]);
        line(e, "const int live = live_raw < 0 ? 0 : live_raw > %lld ? %lld : (int)live_raw;",
             (long long)x->shape[0], (long long)x->shape[0]);
    }
    int opened = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (!red[d]) {
            char v[8];
            snprintf(v, sizeof v, "i%d", d);
            loop(e, v, x->shape[d]);
            opened++;
            ob += (size_t)snprintf(base + ob, sizeof base - ob, " + i%d * %lld", d, st[d]);
        }
        if (red[d]) {
            oi += (size_t)snprintf(idx + oi, sizeof idx - oi, " + r%d * %lld", d, st[d]);
        }
    }
    line(e, "const %s *restrict xb = %s + %s;", tether__c_type(x->dtype), k->in[0], base);
    int passes = op == TETHER_OP_REDUCE_LOG_SUM_EXP ? 2 : 1;
    if (passes == 2) {
        line(e, "double m = -HUGE_VAL;");
        e->math_used[M_EXP] = 1;
    }
    line(e, "%s acc = %s;", at, init);
    for (int pass = 2 - passes; pass < 2; pass++) {
        int loops = 0;
        for (int d = 0; d < x->ndim; d++) {
            if (red[d]) {
                char v[8];
                snprintf(v, sizeof v, "r%d", d);
                if (d == 0 && counted) {
                    line(e, "for (int r0 = 0; r0 < live; ++r0) {");
                    e->depth++;
                } else {
                    loop(e, v, x->shape[d]);
                }
                loops++;
            }
        }
        char el[360], ld[420];
        snprintf(el, sizeof el, "xb[%s]", idx);
        tether__c_load(x->dtype, el, ld, sizeof ld);
        if (exact && minmax) {
            line(e, "const %s v = (%s)%s;", at, at, ld);
            line(e, "acc = v %s acc ? v : acc;", op == TETHER_OP_REDUCE_MAX ? ">" : "<");
        } else if (exact) {
            line(e, "const uint64_t v = (uint64_t)%s;", ld);
            if (op == TETHER_OP_REDUCE_PROD) {
                line(e, "acc *= v;");
            } else if (op == TETHER_OP_REDUCE_SUM_SQUARE) {
                line(e, "acc += v * v;");
            } else if (op == TETHER_OP_REDUCE_L1 && sgn) {
                line(e, "acc += %s < 0 ? 0u - v : v;", ld);
            } else {
                line(e, "acc += v;");
            }
        } else {
            line(e, "const double v = (double)%s;", ld);
            if (pass == 0) {
                line(e, "m = v > m ? v : m;");
            } else if (op == TETHER_OP_REDUCE_MAX) {
                line(e, "acc = v > acc ? v : acc;");
            } else if (op == TETHER_OP_REDUCE_MIN) {
                line(e, "acc = v < acc ? v : acc;");
            } else if (op == TETHER_OP_REDUCE_PROD) {
                line(e, "acc *= v;");
            } else if (op == TETHER_OP_REDUCE_L1) {
                line(e, "acc += v < 0.0 ? -v : v;");
            } else if (op == TETHER_OP_REDUCE_L2 || op == TETHER_OP_REDUCE_SUM_SQUARE) {
                line(e, "acc += v * v;");
            } else if (op == TETHER_OP_REDUCE_LOG_SUM_EXP) {
                line(e, "acc += exp(v - m);");
            } else {
                line(e, "acc += v;");
            }
        }
        while (loops--) {
            close_block(e);
        }
    }
    char res[200], st_[400];
    DLDataType from =
        exact ? (sgn ? TETHER_INT64 : TETHER_DTYPE(kDLUInt, 64)) : TETHER_DTYPE(kDLFloat, 64);
    if (exact && sgn && !minmax) {
        snprintf(res, sizeof res, "(int64_t)acc");
    } else if (op == TETHER_OP_REDUCE_MEAN) {
        long long cnt = 1;
        for (int d = 0; d < x->ndim; d++) {
            cnt *= red[d] ? x->shape[d] : 1;
        }
        if (counted) {
            snprintf(res, sizeof res, "acc / ((double)live * %lld.0)", cnt / x->shape[0]);
        } else {
            snprintf(res, sizeof res, "acc / %lld.0", cnt);
        }
    } else if (op == TETHER_OP_REDUCE_L2) {
        e->math_used[M_SQRT] = 1;
        snprintf(res, sizeof res, "sqrt(acc)");
    } else if (op == TETHER_OP_REDUCE_LOG_SUM) {
        e->math_used[M_LOG] = 1;
        snprintf(res, sizeof res, "log(acc)");
    } else if (op == TETHER_OP_REDUCE_LOG_SUM_EXP) {
        e->math_used[M_LOG] = 1;
        snprintf(res, sizeof res, "m + log(acc)");
    } else {
        snprintf(res, sizeof res, "acc");
    }
    tether__c_convert(from, y->dtype, res, st_, sizeof st_);
    line(e, "*yp++ = %s;", st_);
    while (opened--) {
        close_block(e);
    }
}
