/*
 * The resource-layout contract of custom operators at compile time (docs/custom-ops.md): a
 * CUSTOM node's inputs must match its registry entry (count, element type), every image
 * resource must be a packed image ([H, W, C] or [1, H, W, C], batch 1, C in {1, 2, 4}: checked by
 * tether_image_validate, the rule the runtime applies again before a launch), and its output
 * shape and OpenCL work size come from the entry's rules.
 *
 * What must stay true: these checks run in shape inference, so every path that compiles a graph
 * (compile, run, bench, ab, plan, the Python package) refuses a node that breaks the contract
 * before any code exists, with the node, the operator, the resource and the rule named.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "custom_internal.h"
#include "tether/crt/error.h"
#include "tether/crt/texture.h"

static const char *dtype_name(DLDataType t) {
    if (t.code == kDLFloat && t.bits == 32) {
        return "float32";
    }
    if (t.code == kDLFloat && t.bits == 16) {
        return "float16";
    }
    if (t.code == kDLInt && t.bits == 8) {
        return "int8";
    }
    if (t.code == kDLUInt && t.bits == 8) {
        return "uint8";
    }
    if (t.code == kDLInt && t.bits == 32) {
        return "int32";
    }
    if (t.code == kDLInt && t.bits == 64) {
        return "int64";
    }
    return "another type";
}

static int same_dtype(DLDataType a, DLDataType b) {
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

static int op_error(const tether_ir_node *n, const tether_custom_op *op, int status,
                    const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int op_error(const tether_ir_node *n, const tether_custom_op *op, int status,
                    const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tether_set_error(status, "node '%s' (custom %s::%s): %s", n->name, op->domain, op->name,
                            msg);
}

/* The image contract on one resource's shape (in its declared layout). */
static int check_image(const tether_ir_node *n, const tether_custom_op *op, const char *what,
                       const int64_t *shape, int ndim) {
    tether_image_extent ext;
    int rc = tether_image_validate(shape, ndim, 0, 0, &ext);
    if (rc) {
        char why[TETHER_ERROR_MSG_MAX];
        snprintf(why, sizeof why, "%s", tether_last_error());
        char sh[96];
        tether__shape_text(sh, sizeof sh, shape, ndim);
        return op_error(n, op, rc, "%s %s breaks the image contract: %s", what, sh, why);
    }
    return TETHER_OK;
}

int tether__custom_infer_shape(const tether_ir_graph *g, const tether_ir_node *n, int64_t *os,
                               int *ond) {
    const tether_custom_op *op = tether_custom_op_of(g, n);
    if (!op) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                     "no custom-operator registry entry (load the model with "
                                     "--custom-ops FILE)");
    }
    if (n->ninputs != op->ninputs || n->noutputs != op->noutputs) {
        return op_error(n, op, TETHER_ERR_MISMATCH,
                        "the registry declares %d input%s and %d output%s, the node has %d and %d",
                        op->ninputs, op->ninputs == 1 ? "" : "s", op->noutputs,
                        op->noutputs == 1 ? "" : "s", n->ninputs, n->noutputs);
    }
    const tether_ir_tensor *in[TETHER_IR_MAX_INPUTS];
    for (int i = 0; i < n->ninputs; i++) {
        const tether_ir_tensor *t = tether__ir_in(g, n, i);
        const tether_custom_resource *r = &op->inputs[i];
        char what[128];
        snprintf(what, sizeof what, "input %d%s%s%s", i, r->name[0] ? " ('" : "", r->name,
                 r->name[0] ? "')" : "");
        if (!t) {
            return op_error(n, op, TETHER_ERR_INVALID_ARG, "%s is missing", what);
        }
        if (!same_dtype(t->dtype, r->dtype)) {
            return op_error(n, op, TETHER_ERR_MISMATCH,
                            "%s '%s' is %s but the registry declares %s", what, t->name,
                            dtype_name(t->dtype), dtype_name(r->dtype));
        }
        if (r->layout == TETHER_CUSTOM_NHWC && t->ndim != 3 && t->ndim != 4) {
            return op_error(n, op, TETHER_ERR_MISMATCH,
                            "%s is declared NHWC but has rank %d (NHWC resources are [N, H, W, "
                            "C] or [H, W, C])",
                            what, t->ndim);
        }
        if (r->kind == TETHER_CUSTOM_IMAGE) {
            int rc = check_image(n, op, what, t->shape, t->ndim);
            if (rc) {
                return rc;
            }
        }
        in[i] = t;
    }
    const tether_custom_resource *r = &op->outputs[0];
    const tether_ir_tensor *y = &g->tensors[n->outputs[0]];
    if (!same_dtype(y->dtype, r->dtype)) {
        return op_error(n, op, TETHER_ERR_MISMATCH,
                        "output 0 '%s' is %s but the registry declares %s", y->name,
                        dtype_name(y->dtype), dtype_name(r->dtype));
    }
    if (r->nshape == 1 && !strncmp(r->shape[0], "=in", 3)) {
        const tether_ir_tensor *src = in[atoi(r->shape[0] + 3)];
        *ond = src->ndim;
        memcpy(os, src->shape, sizeof(int64_t) * (size_t)src->ndim);
    } else {
        tether__cx_env env = {.nin = n->ninputs, .in = in};
        for (int d = 0; d < r->nshape; d++) {
            char err[200];
            if (tether__custom_expr_eval(r->shape[d], &env, &os[d], err, sizeof err)) {
                return op_error(n, op, TETHER_ERR_INVALID_ARG,
                                "shape rule of output 0, dimension %d, '%s' does not evaluate: %s",
                                d, r->shape[d], err);
            }
            if (os[d] < 1 || os[d] > ((int64_t)1 << 31)) {
                return op_error(n, op, TETHER_ERR_INVALID_ARG,
                                "shape rule of output 0, dimension %d, '%s' gives %lld (an extent "
                                "must be 1 .. 2^31)",
                                d, r->shape[d], (long long)os[d]);
            }
        }
        *ond = r->nshape;
    }
    if (r->layout == TETHER_CUSTOM_NHWC && *ond != 3 && *ond != 4) {
        return op_error(n, op, TETHER_ERR_MISMATCH,
                        "output 0 is declared NHWC but its shape rule gives rank %d", *ond);
    }
    if (r->kind == TETHER_CUSTOM_IMAGE) {
        int rc = check_image(n, op, "output 0", os, *ond);
        if (rc) {
            return rc;
        }
    }
    if (op->nwork > 0) {
        tether_ir_tensor shaped = *y;
        shaped.ndim = *ond;
        memcpy(shaped.shape, os, sizeof(int64_t) * (size_t)*ond);
        const tether_ir_tensor *out[1] = {&shaped};
        tether__cx_env env = {.nin = n->ninputs, .in = in, .nout = 1, .out = out};
        for (int d = 0; d < op->nwork; d++) {
            int64_t v;
            char err[200];
            if (tether__custom_expr_eval(op->work[d], &env, &v, err, sizeof err)) {
                return op_error(n, op, TETHER_ERR_INVALID_ARG,
                                "work_size %d '%s' does not evaluate: %s", d, op->work[d], err);
            }
            if (v < 1 || v > ((int64_t)1 << 31)) {
                return op_error(n, op, TETHER_ERR_INVALID_ARG,
                                "work_size %d '%s' gives %lld (a global size must be 1 .. 2^31)", d,
                                op->work[d], (long long)v);
            }
        }
    }
    return TETHER_OK;
}

int tether__custom_work_size(const tether_ir_graph *g, const tether_ir_node *n, int64_t *work,
                             int *nwork) {
    const tether_custom_op *op = tether_custom_op_of(g, n);
    if (!op || op->nwork < 1) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "node '%s': custom operator without an OpenCL work_size", n->name);
    }
    const tether_ir_tensor *in[TETHER_IR_MAX_INPUTS];
    for (int i = 0; i < n->ninputs; i++) {
        in[i] = &g->tensors[n->inputs[i]];
    }
    const tether_ir_tensor *out[1] = {&g->tensors[n->outputs[0]]};
    tether__cx_env env = {.nin = n->ninputs, .in = in, .nout = 1, .out = out};
    for (int d = 0; d < op->nwork; d++) {
        char err[200];
        if (tether__custom_expr_eval(op->work[d], &env, &work[d], err, sizeof err)) {
            return op_error(n, op, TETHER_ERR_INVALID_ARG,
                            "work_size %d '%s' does not evaluate: %s", d, op->work[d], err);
        }
    }
    *nwork = op->nwork;
    return TETHER_OK;
}

int tether__custom_c_impl(const tether_custom_op *op, int mcu, const tether_custom_impl **out) {
    if (mcu && op->mcu.present) {
        *out = &op->mcu;
        return TETHER_OK;
    }
    if (op->c.present) {
        *out = &op->c;
        return TETHER_OK;
    }
    return tether_set_error(TETHER_ERR_UNSUPPORTED,
                            "custom operator %s::%s has no C implementation for %s targets (the "
                            "registry gives %s%s%s); add \"%s\" to its implementations or compile "
                            "with another backend",
                            op->domain, op->name, mcu ? "MCU" : "CPU",
                            op->opencl.present ? "opencl" : "",
                            op->opencl.present && op->mcu.present ? ", " : "",
                            op->mcu.present ? "mcu" : "", mcu ? "mcu\" or \"c" : "c");
}

const char tether__custom_c_prelude[] =
    "/* the custom-operator contract (docs/custom-ops.md): one descriptor per tensor, dense in\n"
    " * the declared layout; the entry returns 0, or non-zero for an error */\n"
    "#include <stdint.h>\n"
    "#ifndef TETHER_CUSTOM_TENSOR_DEFINED\n"
    "#define TETHER_CUSTOM_TENSOR_DEFINED\n"
    "typedef struct tether_custom_tensor {\n"
    "    void *data;\n"
    "    int32_t ndim;\n"
    "    int64_t shape[8];\n"
    "} tether_custom_tensor;\n"
    "#endif\n";

int tether__custom_image_channels(const tether_ir_graph *g, int t) {
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *n = &g->nodes[i];
        const tether_custom_op *op = tether_custom_op_of(g, n);
        if (!op) {
            continue;
        }
        for (int j = 0; j < n->ninputs && j < op->ninputs; j++) {
            if (n->inputs[j] == t && op->inputs[j].kind == TETHER_CUSTOM_IMAGE) {
                return (int)g->tensors[t].shape[g->tensors[t].ndim - 1];
            }
        }
        if (n->outputs[0] == t && op->outputs[0].kind == TETHER_CUSTOM_IMAGE) {
            return (int)g->tensors[t].shape[g->tensors[t].ndim - 1];
        }
    }
    return 0;
}

int tether__custom_graph_has_images(const tether_ir_graph *g) {
    for (int t = 0; t < g->ntensors; t++) {
        if (tether__custom_image_channels(g, t)) {
            return 1;
        }
    }
    return 0;
}
