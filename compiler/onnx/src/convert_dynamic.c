/*
 * ONNX operators whose output size depends on the input values, on run-time tensors: NonZero,
 * Compress, Unique (its indices node, then one node per other output used) and
 * NonMaxSuppression, into the IR's nonzero, compress, unique and nms (ops.def,
 * ir/shapes_dynamic.c). Each output is sized at a bound and its actual extent is an extra graph
 * output (tether_ir_add_extent_outputs, called by import.c after the model's outputs).
 *
 * What must stay true: NonMaxSuppression's max_output_boxes_per_class, iou_threshold and
 * score_threshold are constants at import time or absent (tonnx_const_inputs lists them), else
 * the node is refused naming the input; attributes follow the ONNX defaults; a NonZero whose
 * input is known at import time is still folded on the host (host_eval.c), exactly.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

int tonnx_cv_nonzero(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_NONZERO, &a);
    int x, y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_NONZERO, &x, 1, y, &a);
}

int tonnx_cv_compress(timport *c, const Onnx__NodeProto *n) {
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_COMPRESS, &a);
    int in[2], y, rc;
    if (tonnx_attr(n, "axis")) {
        a.mode = 4;
        if ((rc = tonnx_attr_int(c, "axis", 0, &a.axis))) {
            return rc;
        }
    }
    if ((rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1])) ||
        (rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_COMPRESS, in, 2, y, &a);
}

int tonnx_cv_unique(timport *c, const Onnx__NodeProto *n) {
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_UNIQUE, &a);
    int64_t sorted = 1;
    int in[2], rc;
    if ((rc = tonnx_attr_int(c, "sorted", 1, &sorted))) {
        return rc;
    }
    if (tonnx_attr(n, "axis")) {
        a.mode |= 4;
        if ((rc = tonnx_attr_int(c, "axis", 0, &a.axis))) {
            return rc;
        }
    }
    a.mode |= sorted ? 1 : 0;
    if ((rc = tonnx_in_tensor(c, 0, true, &in[0]))) {
        return rc;
    }
    /* the first-occurrence indices (sorted by item when sorted): output 1, or a temporary */
    tether_ir_attrs ai = a;
    ai.mode |= 1 << 4;
    rc = tonnx_output_used(c, c->cur, 1) ? tonnx_out_tensor(c, 1, &in[1])
                                         : tonnx_temp_tensor(c, "indices", &in[1]);
    if (rc || (rc = tonnx_emit(c, "indices", TETHER_OP_UNIQUE, in, 1, in[1], &ai))) {
        return rc;
    }
    static const char *const what[4] = {"values", "indices", "inverse_indices", "counts"};
    for (int i = 0; i < 4; i++) {
        if (i == 1 || !tonnx_output_used(c, c->cur, i)) {
            continue;
        }
        int y;
        tether_ir_attrs ao = a;
        ao.mode |= (int64_t)i << 4;
        if ((rc = tonnx_out_tensor(c, i, &y)) ||
            (rc = tonnx_emit(c, what[i], TETHER_OP_UNIQUE, in, 2, y, &ao))) {
            return rc;
        }
    }
    return TETHER_OK;
}

/* A constant scalar input of NonMaxSuppression (absent: def). */
static int nms_scalar(timport *c, int i, const char *what, double def, double *out, bool *given) {
    hconst *k;
    int rc = tonnx_in_const(c, i, false, &k);
    *out = def;
    *given = false;
    if (rc || !k) {
        return rc;
    }
    if (k->count != 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "%s must have one element, it has %zu", what,
                          k->count);
    }
    *out = k->is_int ? (double)((const int64_t *)k->data)[0] : ((const float *)k->data)[0];
    *given = true;
    return TETHER_OK;
}

int tonnx_cv_nms(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_NMS, &a);
    int64_t center = 0;
    int in[2], y, rc;
    double maxb, iou, thr;
    bool g1, g2, g3;
    if ((rc = tonnx_attr_int(c, "center_point_box", 0, &center)) ||
        (rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1])) ||
        (rc = nms_scalar(c, 2, "max_output_boxes_per_class", 0, &maxb, &g1)) ||
        (rc = nms_scalar(c, 3, "iou_threshold", 0, &iou, &g2)) ||
        (rc = nms_scalar(c, 4, "score_threshold", 0, &thr, &g3))) {
        return rc;
    }
    if (center != 0 && center != 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "center_point_box %lld (0 or 1)",
                          (long long)center);
    }
    if (maxb < 0 || maxb > (double)INT32_MAX) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "max_output_boxes_per_class %.0f out of range (0 .. 2^31-1)", maxb);
    }
    (void)g1;
    (void)g2;
    a.k = (int64_t)maxb;
    a.alpha = (float)iou;
    a.beta = (float)thr;
    a.mode = (center ? 1 : 0) | (g3 ? 4 : 0);
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_NMS, in, 2, y, &a);
}
