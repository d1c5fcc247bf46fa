/*
 * The OpenCL backend's operator support (emit_opencl.c asks before it emits anything): which
 * operators have a float32 kernel, and the one error naming every node the backend lacks.
 *
 * What must stay true: a node touching a tensor other than float32 passes only when a typed
 * kernel (emit_opencl_typed.c, emit_opencl_index.c, emit_opencl_layers.c), a quantized one
 * (emit_opencl_quant.c and siblings) or a kernel of the data-dependent operators
 * (emit_opencl_dynamic.c: nonzero, compress, unique, nms) owns it, or it is a custom operator;
 * nothing falls back silently. A transpose/concat/gather/slice reading a tensor of data-dependent
 * size by its live extent (ir/shapes_dynamic_live.c) passes only with its kernel of
 * emit_opencl_dynamic_live.c (tether__ocl_live_owns), never a static reader's; else it is refused,
 * named.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static int op_supported(tether_op op) {
    switch (op) {
        TETHER__CASES_UNARY
        TETHER__CASES_BINARY
    case TETHER_OP_CONV2D:
    case TETHER_OP_DENSE:
    case TETHER_OP_MATMUL:
    case TETHER_OP_PRELU:
    case TETHER_OP_SOFTMAX:
    case TETHER_OP_LOG_SOFTMAX:
    case TETHER_OP_MAX_POOL:
    case TETHER_OP_AVG_POOL:
    case TETHER_OP_GLOBAL_AVG_POOL:
    case TETHER_OP_GLOBAL_MAX_POOL:
    case TETHER_OP_RESHAPE:
    case TETHER_OP_FLATTEN:
    case TETHER_OP_SQUEEZE:
    case TETHER_OP_UNSQUEEZE:
    case TETHER_OP_TRANSPOSE:
    case TETHER_OP_CONCAT:
    case TETHER_OP_PAD:
    case TETHER_OP_BATCH_NORM:
    case TETHER_OP_LAYER_NORM:
    case TETHER_OP_REDUCE_MEAN:
    case TETHER_OP_REDUCE_SUM:
    case TETHER_OP_REDUCE_MAX:
    case TETHER_OP_REDUCE_MIN:
    case TETHER_OP_REDUCE_PROD:
    case TETHER_OP_REDUCE_L1:
    case TETHER_OP_REDUCE_L2:
    case TETHER_OP_REDUCE_LOG_SUM:
    case TETHER_OP_REDUCE_LOG_SUM_EXP:
    case TETHER_OP_REDUCE_SUM_SQUARE:
    case TETHER_OP_HARDMAX:
    case TETHER_OP_RESIZE_NEAREST:
    case TETHER_OP_CUSTOM: /* the registry's OpenCL kernel (tether__ocl_custom_check) */
        return 1;
    case TETHER_OP_WHERE:
        /* indexing and data-dependent operators: no float32 kernel here; the typed kernels
         * (emit_opencl_typed.c, _index.c, _layers.c, ...) and emit_opencl_dynamic.c (nonzero,
         * compress, unique, nms) own those they have, asked first */
        TETHER__CASES_DATA return 0;
    case TETHER_OP_NLL_LOSS:
    case TETHER_OP_NLL_LOSS_SUM:
    case TETHER_OP_NLL_LOSS_MEAN:
        return 0;
    case TETHER_OP_QUANTIZE: /* emit_opencl_quant.c, emit_opencl_qconv.c */
    case TETHER_OP_DEQUANTIZE:
    case TETHER_OP_QCONV:
    case TETHER_OP_QMATMUL:
        return 1;
    case TETHER_OP_QADD: /* issue 28 integer elementwise/pooling: emit_opencl_qelt.c */
    case TETHER_OP_QMUL:
    case TETHER_OP_QLUT:
    case TETHER_OP_QMAX_POOL:
    case TETHER_OP_QAVG_POOL:
        return 1;
    case TETHER_OP_CONV_ND: /* emit_opencl_layers.c (tether__ocl_layers_owns, asked first) */
    case TETHER_OP_CONV_TRANSPOSE:
        return 1;
    }
    return 0; /* not an operator */
}

/* One error naming every node without a kernel (a node touching a tensor other than float32
 * needs a typed kernel of emit_opencl_typed.c, or is a quantized operator of
 * emit_opencl_quant.c); before that, the first tensor of an element type
 * the backend or the device cannot run. */
int tether__ocl_check_support(const tether_ir_graph *g, const tether_opencl_options *o) {
    int rc = tether__ocl_typed_check(g, o);
    if (rc) {
        return rc;
    }
    tether__sbuf list;
    tether__sbuf_init(&list);
    int count = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *n = &g->nodes[i];
        /* a reader by live extents (ir/shapes_dynamic_live.c): its kernel of
         * emit_opencl_dynamic_live.c, or refused (never the kernel of a static reader) */
        bool live = tether__ir_live_wired(n);
        if (live && tether__ocl_live_owns(g, n)) {
            continue;
        }
        if (!live && (tether__ocl_typed_owns(g, n) || tether__ocl_quant_op(n->op) ||
                      tether__ocl_layers_owns(g, n) || tether__ocl_dynamic_owns(g, n))) {
            continue;
        }
        if (!live && op_supported(n->op)) {
            int typed = 0; /* a float32 kernel of a node with a typed tensor: none */
            for (int j = 0; j < n->ninputs; j++) {
                typed |= n->inputs[j] >= 0 &&
                         !tether_dtype_equal(g->tensors[n->inputs[j]].dtype, TETHER_FLOAT32);
            }
            for (int j = 0; j < n->noutputs; j++) {
                typed |= n->outputs[j] >= 0 &&
                         !tether_dtype_equal(g->tensors[n->outputs[j]].dtype, TETHER_FLOAT32);
            }
            if (!typed || n->op == TETHER_OP_CUSTOM) {
                continue;
            }
        }
        const char *name = tether_op_name(n->op);
        char num[32];
        if (!name) {
            snprintf(num, sizeof num, "operator #%d", (int)n->op);
            name = num;
        }
        tether__sbuf_printf(&list, "%snode '%s' (%s%s)", count ? ", " : "", n->name, name,
                            live ? ": along a dimension of data-dependent size, by its live "
                                   "extent"
                                 : "");
        count++;
    }
    if (!count) {
        tether__sbuf_free(&list);
        return TETHER_OK;
    }
    char msg[8192];
    snprintf(msg, sizeof msg,
             "the OpenCL backend has no kernel for %d node%s: %s (compile with --backend c, or "
             "change the model)",
             count, count == 1 ? "" : "s", list.data ? list.data : "");
    tether__sbuf_free(&list);
    rc = tether_set_error(TETHER_ERR_UNSUPPORTED, "%s", msg);
    tether_set_error_detail(msg);
    return rc;
}
