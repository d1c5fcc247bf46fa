/*
 * The run-time Loop's operators (ops.def: loop_begin, loop_state, loop_end, loop_result,
 * loop_copy, loop_scan, loop_stack; docs/onnx.md, "Control flow"): their shape and typing rules,
 * the pairing of a loop_begin with its loop_end (the loop_end reads the begin's output as input 0)
 * and the ordering rule that makes the nodes between them the loop's body.
 *
 * What must stay true: the body is exactly the nodes between a begin and its end, and every one
 * of them depends (through its inputs) on the begin: tether__ir_loop_hoist moves every other
 * node found there before the begin, keeping the order of both groups (a loop-invariant node
 * runs once, before the loop). A loop-carried value keeps its shape and element type from one
 * iteration to the next (loop_end refuses otherwise, naming the tensor). Messages name the node.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/ir.h"

bool tether__ir_is_loop_op(tether_op op) {
    return op == TETHER_OP_LOOP_BEGIN || op == TETHER_OP_LOOP_STATE || op == TETHER_OP_LOOP_END ||
           op == TETHER_OP_LOOP_RESULT || op == TETHER_OP_LOOP_COPY || op == TETHER_OP_LOOP_SCAN ||
           op == TETHER_OP_LOOP_STACK;
}

static int64_t numel(const tether_ir_tensor *t) {
    int64_t p = 1;
    for (int d = 0; d < t->ndim; d++) {
        p *= t->shape[d];
    }
    return p;
}

static bool same_type(const tether_ir_tensor *a, const tether_ir_tensor *b) {
    if (a->ndim != b->ndim || !tether_dtype_equal(a->dtype, b->dtype)) {
        return false;
    }
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] != b->shape[d]) {
            return false;
        }
    }
    return true;
}

static bool is_int64_scalar(const tether_ir_tensor *t) {
    return tether_dtype_equal(t->dtype, TETHER_INT64) && numel(t) == 1;
}

static bool is_bool_scalar(const tether_ir_tensor *t) {
    return t->dtype.code == kDLUInt && t->dtype.bits == 1 && numel(t) == 1;
}

/* Whether tensor t is the output of a loop_scan (producer is not set while importing). */
static bool made_by_scan(const tether_ir_graph *g, int t) {
    for (int i = 0; i < g->nnodes; i++) {
        if (g->nodes[i].outputs[0] == t) {
            return g->nodes[i].op == TETHER_OP_LOOP_SCAN;
        }
    }
    return false;
}

int tether__ir_loop_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = tether__ir_in(g, n, 0);
    switch ((int)n->op) { /* the loop operators only */
    case TETHER_OP_LOOP_BEGIN: {
        int want = (int)(a->mode & 1) + (int)((a->mode >> 1) & 1) + (int)((a->mode >> 2) & 1);
        if ((a->mode & ~(int64_t)7) || want != n->ninputs) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "mode %lld (bit 0 M, bit 1 cond, bit 2 the enclosing "
                                         "iteration) does not match its %d inputs",
                                         (long long)a->mode, n->ninputs);
        }
        int j = 0;
        if ((a->mode & 1) && !is_int64_scalar(tether__ir_in(g, n, j++))) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "the trip count '%s' must be one int64",
                                         tether__ir_in(g, n, 0)->name);
        }
        if ((a->mode & 2) && !is_bool_scalar(tether__ir_in(g, n, j))) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "the condition '%s' must be one bool",
                                         tether__ir_in(g, n, j)->name);
        }
        *ond = 0;
        return TETHER_OK;
    }
    case TETHER_OP_LOOP_STATE:
    case TETHER_OP_LOOP_COPY:
    case TETHER_OP_LOOP_RESULT:
        if (n->op == TETHER_OP_LOOP_RESULT &&
            (!same_type(x, tether__ir_in(g, n, 2)) || !is_int64_scalar(tether__ir_in(g, n, 1)))) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "the state '%s' and its initial value '%s' differ in "
                                         "type or shape, or the count is not one int64",
                                         x->name, tether__ir_in(g, n, 2)->name);
        }
        if (n->op == TETHER_OP_LOOP_STATE && !is_int64_scalar(tether__ir_in(g, n, 1))) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "input 1 must be the loop's iteration number");
        }
        *ond = x->ndim;
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        return TETHER_OK;
    case TETHER_OP_LOOP_SCAN:
        if (!is_int64_scalar(tether__ir_in(g, n, 1))) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "input 1 must be the loop's iteration number");
        }
        if (a->k < 1 || x->ndim + 1 > TETHER_IR_MAX_NDIM ||
            (numel(x) > 0 && a->k > INT64_MAX / 16 / numel(x))) {
            return tether__ir_node_error(n, TETHER_ERR_LIMIT,
                                         "a scan buffer of %lld rows of '%s' (rank %d) cannot be "
                                         "planned (k must be >= 1, the rank below %d and the size "
                                         "representable)",
                                         (long long)a->k, x->name, x->ndim, TETHER_IR_MAX_NDIM);
        }
        *ond = x->ndim + 1;
        os[0] = a->k;
        memcpy(os + 1, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        return TETHER_OK;
    case TETHER_OP_LOOP_STACK: {
        const tether_ir_tensor *cnt = tether__ir_in(g, n, 1);
        if ((a->mode & ~(int64_t)TETHER__DYN_COUNT) || x->ndim < 1 || !is_int64_scalar(cnt) ||
            !made_by_scan(g, n->inputs[0])) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "takes a loop_scan's buffer and the iterations run "
                                         "(one int64); mode 0 or 256 (the extent)");
        }
        if (a->mode & TETHER__DYN_COUNT) {
            *ond = 1;
            os[0] = 1;
            return TETHER_OK;
        }
        *ond = x->ndim;
        memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        return TETHER_OK;
    }
    case TETHER_OP_LOOP_END: {
        int64_t k = a->k;
        int cond = (a->mode & 2) ? 1 : 0;
        if ((a->mode & ~(int64_t)2) || k < 0 || n->ninputs != 1 + 2 * k + cond) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "takes the iteration, k = %lld states, their next values "
                                         "and (mode bit 1) the condition: %lld inputs, got %d",
                                         (long long)k, (long long)(1 + 2 * k + cond), n->ninputs);
        }
        if (!is_int64_scalar(x) || x->ndim != 0) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "input 0 must be the loop's iteration number");
        }
        for (int i = 0; i < k; i++) {
            const tether_ir_tensor *s = tether__ir_in(g, n, 1 + i);
            const tether_ir_tensor *v = tether__ir_in(g, n, 1 + (int)k + i);
            if (!same_type(s, v)) {
                char ss[96], vs[96];
                tether__shape_text(ss, sizeof ss, s->shape, s->ndim);
                tether__shape_text(vs, sizeof vs, v->shape, v->ndim);
                return tether__ir_node_error(
                    n, TETHER_ERR_UNSUPPORTED,
                    "loop-carried value '%s' is %s %s but the body gives %s %s ('%s'): a "
                    "loop-carried value must keep its shape and element type",
                    s->name, tether__dtype_str(s->dtype), ss, tether__dtype_str(v->dtype), vs,
                    v->name);
            }
        }
        if (cond && !is_bool_scalar(tether__ir_in(g, n, 1 + 2 * (int)k))) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "the body's condition '%s' must be one bool",
                                         tether__ir_in(g, n, 1 + 2 * (int)k)->name);
        }
        *ond = 1;
        os[0] = 1;
        return TETHER_OK;
    }
    default:
        break;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "not a loop operator");
}

int tether__ir_loop_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out) {
    if (n->op == TETHER_OP_LOOP_BEGIN || n->op == TETHER_OP_LOOP_END ||
        (n->op == TETHER_OP_LOOP_STACK && (n->attrs.mode & TETHER__DYN_COUNT))) {
        *out = TETHER_INT64;
    } else {
        *out = tether__ir_in(g, n, 0)->dtype;
    }
    return TETHER_OK;
}

int tether__ir_loop_end_of(const tether_ir_graph *g, int b) {
    int it = g->nodes[b].outputs[0];
    for (int i = b + 1; i < g->nnodes; i++) {
        if (g->nodes[i].op == TETHER_OP_LOOP_END && g->nodes[i].ninputs > 0 &&
            g->nodes[i].inputs[0] == it) {
            return i;
        }
    }
    return -1;
}

/* Moves the nodes in (b, e) that do not depend on node b before it; whether any moved. */
static int hoist_one(tether_ir_graph *g, int b, int e, char *dep, tether_ir_node *tmp,
                     bool *moved) {
    memset(dep, 0, (size_t)g->ntensors);
    dep[g->nodes[b].outputs[0]] = 1;
    int nin = 0, nout = 0;
    tether_ir_node *out = tmp + (e - b); /* the independent ones, after the dependent ones */
    for (int i = b + 1; i < e; i++) {
        tether_ir_node *n = &g->nodes[i];
        bool d = false;
        for (int j = 0; j < n->ninputs && !d; j++) {
            d = n->inputs[j] >= 0 && dep[n->inputs[j]];
        }
        if (d) {
            dep[n->outputs[0]] = 1;
            tmp[nin++] = *n;
        } else {
            out[nout++] = *n;
        }
    }
    if (!nout) {
        return TETHER_OK;
    }
    *moved = true;
    tether_ir_node begin = g->nodes[b];
    memcpy(&g->nodes[b], out, sizeof *out * (size_t)nout);
    g->nodes[b + nout] = begin;
    memcpy(&g->nodes[b + nout + 1], tmp, sizeof *tmp * (size_t)nin);
    return TETHER_OK;
}

int tether__ir_loop_hoist(tether_ir_graph *g) {
    bool any = false;
    for (int i = 0; i < g->nnodes && !any; i++) {
        any = g->nodes[i].op == TETHER_OP_LOOP_BEGIN;
    }
    for (int i = 0; i < g->nnodes && !any; i++) {
        any = g->nodes[i].op == TETHER_OP_LOOP_END;
    }
    if (!any) {
        return TETHER_OK;
    }
    char *dep = malloc((size_t)(g->ntensors ? g->ntensors : 1));
    tether_ir_node *tmp = malloc(sizeof *tmp * (size_t)(2 * g->nnodes + 2));
    int rc = TETHER_OK;
    if (!dep || !tmp) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    bool moved = true;
    for (int round = 0; !rc && moved; round++) {
        if (round > g->nnodes + 1) {
            rc = tether_set_error(TETHER_ERR_INTERNAL, "loop bodies could not be ordered");
            break;
        }
        moved = false;
        for (int b = 0; !rc && b < g->nnodes; b++) {
            if (g->nodes[b].op != TETHER_OP_LOOP_BEGIN) {
                continue;
            }
            int e = tether__ir_loop_end_of(g, b);
            if (e < 0) {
                rc = tether__ir_node_error(&g->nodes[b], TETHER_ERR_INVALID_ARG,
                                           "has no loop_end reading its iteration number");
                break;
            }
            bool m = false;
            rc = hoist_one(g, b, e, dep, tmp, &m);
            moved |= m;
        }
    }
    for (int i = 0; !rc && i < g->nnodes; i++) { /* every end pairs with an earlier begin */
        const tether_ir_node *n = &g->nodes[i];
        bool paired = false;
        for (int b = 0; n->op == TETHER_OP_LOOP_END && b < i && !paired; b++) {
            paired =
                g->nodes[b].op == TETHER_OP_LOOP_BEGIN && n->inputs[0] == g->nodes[b].outputs[0];
        }
        if (n->op == TETHER_OP_LOOP_END && !paired) {
            rc = tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                       "input 0 is not the output of a loop_begin");
        }
    }
    free(dep);
    free(tmp);
    return rc;
}
