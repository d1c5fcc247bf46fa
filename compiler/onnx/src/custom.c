/*
 * Nodes of custom domains (PyTorch custom-op exports, contrib domains) that the --custom-ops
 * registry names (tether/custom_ops.h, docs/custom-ops.md): each becomes one CUSTOM node whose
 * attrs.ints[0] indexes the registry, with the permutes of the resource-layout contract around
 * it: an input declared NHWC is read through a transpose NCHW -> NHWC ([0, 2, 3, 1], or [1, 2, 0]
 * for a rank-3 CHW tensor), an output declared NHWC is turned back by the inverse transpose, so
 * the graph around the node stays NCHW and the kernel sees its declared layout.
 *
 * What must stay true: the registry is only consulted between tonnx_custom_begin and
 * tonnx_custom_end of one import on this thread; an unknown custom operator is reported with
 * the registry's operators listed; nothing here reads past the registry's declared counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/error.h"
#include "tether/custom_ops.h"

static _Thread_local const tether_custom_registry *active;
static _Thread_local op_def *defs; /* one per registry entry, in registry order */

static int tonnx_cv_custom(timport *c, const Onnx__NodeProto *n);

int tonnx_custom_begin(const tether_custom_registry *r) {
    active = r;
    free(defs);
    defs = NULL;
    if (!r || r->nops < 1) {
        return TETHER_OK;
    }
    defs = calloc((size_t)r->nops, sizeof *defs);
    if (!defs) {
        active = NULL;
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < r->nops; i++) {
        defs[i].op_type = r->ops[i].name;
        defs[i].since = 1;
        defs[i].until = 1 << 30;
        defs[i].maps_to = "custom";
        defs[i].attrs = "";
        defs[i].fn = tonnx_cv_custom;
    }
    return TETHER_OK;
}

void tonnx_custom_end(void) {
    active = NULL;
    free(defs);
    defs = NULL;
}

static int index_of(const op_def *d) {
    if (!d || !active || !defs || d < defs || d >= defs + active->nops) {
        return -1;
    }
    return (int)(d - defs);
}

const op_def *tonnx_custom_find(const char *domain, const char *op_type) {
    const tether_custom_op *op = tether_custom_registry_find(active, domain, op_type);
    return op && defs ? &defs[op - active->ops] : NULL;
}

int tonnx_custom_arity(const op_def *d, tonnx_arity *out) {
    int i = index_of(d);
    if (i < 0) {
        return TETHER_ERR_NOT_FOUND;
    }
    out->in_min = out->in_max = active->ops[i].ninputs;
    out->out_min = out->out_max = active->ops[i].noutputs;
    out->by_opset = false;
    return TETHER_OK;
}

void tonnx_custom_unknown(const char *domain, const char *op_type, char *buf, size_t n) {
    (void)op_type; /* the scan's message names it */
    if (!active) {
        snprintf(buf, n,
                 ": a custom domain; give its kernels with --custom-ops FILE "
                 "(docs/custom-ops.md)");
        return;
    }
    char list[160];
    tether_custom_registry_list(active, list, sizeof list);
    snprintf(buf, n, ": %s is not in the custom-operator registry %s (it has: %s)", domain,
             active->path ? active->path : "", list);
}

/* [0, 2, 3, 1] (NCHW -> NHWC) or [1, 2, 0] (CHW -> HWC), and the inverses. */
static void perm_of(int rank, int to_nhwc, tether_ir_attrs *a) {
    tether_ir_attrs_init(TETHER_OP_TRANSPOSE, a);
    static const int64_t to4[] = {0, 2, 3, 1}, from4[] = {0, 3, 1, 2}, to3[] = {1, 2, 0},
                         from3[] = {2, 0, 1};
    const int64_t *p = rank == 4 ? (to_nhwc ? to4 : from4) : (to_nhwc ? to3 : from3);
    memcpy(a->ints, p, sizeof(int64_t) * (size_t)rank);
    a->nints = rank;
}

static int tonnx_cv_custom(timport *c, const Onnx__NodeProto *n) {
    int k = index_of(tonnx_custom_find(S(n->domain), S(n->op_type)));
    if (k < 0) {
        return tonnx_fail(c, TETHER_ERR_INTERNAL, "custom operator without a registry entry");
    }
    const tether_custom_op *op = &active->ops[k];
    int in[TETHER_IR_MAX_INPUTS];
    int rc;
    for (int j = 0; j < op->ninputs; j++) {
        if ((rc = tonnx_in_tensor(c, j, true, &in[j]))) {
            return rc;
        }
        if (op->inputs[j].layout != TETHER_CUSTOM_NHWC) {
            continue;
        }
        int rank = c->g->tensors[in[j]].ndim;
        if (rank != 3 && rank != 4) {
            return tonnx_fail(c, TETHER_ERR_MISMATCH,
                              "custom %s::%s input %d is declared NHWC but the model's tensor "
                              "'%s' has rank %d (NCHW rank 4 or CHW rank 3 expected)",
                              op->domain, op->name, j, c->g->tensors[in[j]].name, rank);
        }
        char suffix[32];
        snprintf(suffix, sizeof suffix, "to_nhwc%d", j);
        int t;
        tether_ir_attrs a;
        perm_of(rank, 1, &a);
        if ((rc = tonnx_temp_tensor(c, suffix, &t)) ||
            (rc = tonnx_emit(c, suffix, TETHER_OP_TRANSPOSE, &in[j], 1, t, &a))) {
            return rc;
        }
        in[j] = t;
    }
    int y;
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CUSTOM, &a);
    a.ints[0] = k;
    a.nints = 1;
    if (op->outputs[0].layout != TETHER_CUSTOM_NHWC) {
        return tonnx_emit(c, NULL, TETHER_OP_CUSTOM, in, op->ninputs, y, &a);
    }
    int t;
    if ((rc = tonnx_temp_tensor(c, "nhwc_out", &t)) ||
        (rc = tonnx_emit(c, NULL, TETHER_OP_CUSTOM, in, op->ninputs, t, &a))) {
        return rc;
    }
    tether_ir_attrs p;
    perm_of(c->g->tensors[t].ndim, 0, &p);
    return tonnx_emit(c, "from_nhwc", TETHER_OP_TRANSPOSE, &t, 1, y, &p);
}
