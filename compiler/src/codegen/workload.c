/*
 * Workload keys: the text that names what a node's kernel depends on (operator, attributes,
 * epilogue, operand shapes and constness), so tuning records measured on one model's node serve
 * every node with the same key (docs/tune.md).
 *
 * What must stay true: two nodes get the same key only when the emitters would write the same
 * kernel body for them under the same schedule; the key is plain printable text without spaces
 * inside a field, and stable across releases of the same record format.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

/* The free space at offset o of a buffer of n bytes (0 once full: snprintf then writes nothing,
 * and o keeps counting what would have been written) and where to write. */
#define LEFT(o) ((o) < n ? n - (o) : 0)
#define AT(o)   (buf + ((o) < n ? (o) : n - 1))

static size_t put_shape(char *buf, size_t n, size_t o, const char *tag, const tether_ir_tensor *t) {
    o += (size_t)snprintf(AT(o), LEFT(o), " %s%s", tag,
                          t->kind == TETHER_TENSOR_CONSTANT ? "c" : "");
    for (int d = 0; d < t->ndim; d++) {
        o += (size_t)snprintf(AT(o), LEFT(o), "%s%lld", d ? "x" : "", (long long)t->shape[d]);
    }
    if (t->ndim == 0) {
        o += (size_t)snprintf(AT(o), LEFT(o), "scalar");
    }
    return o;
}

bool tether_workload_tunable(const tether_ir_graph *g, int node) {
    if (!g || node < 0 || node >= g->nnodes) {
        return false;
    }
    tether_op op = g->nodes[node].op;
    return op == TETHER_OP_CONV2D || op == TETHER_OP_DENSE || op == TETHER_OP_MATMUL;
}

int tether_workload_key(const tether_ir_graph *g, int node, char *buf, size_t n) {
    if (!g || node < 0 || node >= g->nnodes || !buf || n < 2) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "workload key: no such node %d", node);
    }
    const tether_ir_node *nd = &g->nodes[node];
    const tether_ir_attrs *a = &nd->attrs;
    size_t o = (size_t)snprintf(buf, n, "%s", tether_op_name(nd->op));
    for (int i = 0; i < nd->ninputs; i++) {
        char tag[8];
        snprintf(tag, sizeof tag, "i%d=", i);
        if (nd->inputs[i] < 0) {
            o += (size_t)snprintf(AT(o), LEFT(o), " %s-", tag);
            continue;
        }
        o = put_shape(buf, n, o, tag, &g->tensors[nd->inputs[i]]);
    }
    o = put_shape(buf, n, o, "y=", &g->tensors[nd->outputs[0]]);
    if (nd->op == TETHER_OP_CONV2D || nd->op == TETHER_OP_MAX_POOL ||
        nd->op == TETHER_OP_AVG_POOL) {
        o += (size_t)snprintf(
            AT(o), LEFT(o), " k%lldx%lld s%lldx%lld p%lld,%lld,%lld,%lld d%lldx%lld g%lld",
            (long long)a->kernel[0], (long long)a->kernel[1], (long long)a->strides[0],
            (long long)a->strides[1], (long long)a->pads[0], (long long)a->pads[1],
            (long long)a->pads[2], (long long)a->pads[3], (long long)a->dilations[0],
            (long long)a->dilations[1], (long long)a->groups);
    }
    if (nd->op == TETHER_OP_DENSE) {
        o += (size_t)snprintf(AT(o), LEFT(o), " ta%d tb%d alpha%g beta%g", (int)a->trans_a,
                              (int)a->trans_b, (double)a->alpha, (double)a->beta);
    }
    if (nd->op != TETHER_OP_CONV2D && nd->op != TETHER_OP_DENSE && nd->op != TETHER_OP_MATMUL) {
        /* the other operators' attributes (OpenCL tunes every launch): axis, axes/perm/pads,
         * flags and scalars, whichever the operator reads */
        o += (size_t)snprintf(AT(o), LEFT(o), " ax%lld", (long long)a->axis);
        for (int i = 0; i < a->nints; i++) {
            o += (size_t)snprintf(AT(o), LEFT(o), "%s%lld", i ? "," : " n", (long long)a->ints[i]);
        }
        o += (size_t)snprintf(AT(o), LEFT(o), " f%d%d%d%d a%g,%g,%g,%g,%g,%g r%lldx%lld",
                              (int)a->keepdims, (int)a->ceil_mode, (int)a->count_include_pad,
                              (int)a->allowzero, (double)a->alpha, (double)a->beta, (double)a->min,
                              (double)a->max, (double)a->value, (double)a->epsilon,
                              (long long)a->scales[0], (long long)a->scales[1]);
    }
    if (a->act != TETHER_ACT_NONE) {
        o += (size_t)snprintf(AT(o), LEFT(o), " act=%s,%g,%g,%g", tether_act_name(a->act),
                              (double)a->act_alpha, (double)a->act_min, (double)a->act_max);
    }
    if (a->has_residual) {
        o += (size_t)snprintf(AT(o), LEFT(o), " res");
    }
    if (o >= n) {
        return tether_set_error(TETHER_ERR_LIMIT, "workload key of node '%s' is over %zu bytes",
                                nd->name, n - 1);
    }
    return TETHER_OK;
}
