/*
 * The OpenCL backend's run-time errors (docs/codegen.md, "Run-time errors"): the kernels whose
 * C counterparts return -1 (TETHER_ERR_INVALID_ARG) on a bad index (gather, gather_elements,
 * gather_nd, scatter_elements, scatter_nd, the sequence lengths of rnn/gru/lstm and
 * reverse_sequence, roi_align's batch indices, max_unpool's indices) report it through one int
 * of device memory, the memory object of kind "status": a kernel that meets a bad index stores
 * its entry (atomic_cmpxchg from 0, so the first failure of a run stays), and metadata.json's
 * "errors" names each entry's node, operator, code and what it checks. The host runner zeroes
 * the flag at prepare and after a failed run, reads it after every run and fails the run naming
 * the node (host/lib/opencl_run.c).
 *
 * The kernels of the operators with data-dependent output sizes (nonzero, compress, unique, nms:
 * emit_opencl_dynamic.c) check what their C kernels return -4 for (TETHER_ERR_LIMIT: a count
 * above the bound) and -1 for (a Compress condition selecting past the axis' extent, a unique
 * item's index past it): such a node has one entry per check, consecutive, its first one `err_cur`
 * while its kernel is emitted (tether__ocl_fail_entry(e, k) reports the k-th). A gather by the
 * live extent (emit_opencl_dynamic_live.c) reports an index outside the live extent, C's -1.
 *
 * What must stay true: tether__ocl_check_entry names exactly the operators (and inputs) whose C
 * kernel returns an error at run time, each with the C kernel's code, so the two backends fail on
 * the same inputs with the same code;
 * a kernel that reports still never reads or writes outside a tensor; an artifact without a
 * checking node has no status object (its kernels and metadata are as before).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_opencl_internal.h"
#include "tether/crt/error.h"

const char *tether__ocl_check_entry(const tether_ir_graph *g, const tether_ir_node *n, int k,
                                    int *code) {
    int c = TETHER_ERR_INVALID_ARG;
    const char *w = NULL;
    if (tether__ir_is_dynamic_op(n->op)) {
        w = tether__ocl_dynamic_check(n, k, &c);
    } else if (k == 0) {
        w = tether__ocl_check_what(g, n);
    }
    if (code) {
        *code = c;
    }
    return w;
}

int tether__ocl_check_count(const tether_ir_graph *g, const tether_ir_node *n) {
    int k = 0;
    while (k < 4 && tether__ocl_check_entry(g, n, k, NULL)) {
        k++;
    }
    return k;
}

const char *tether__ocl_check_what(const tether_ir_graph *g, const tether_ir_node *n) {
    (void)g;
    if (tether__ir_is_dynamic_op(n->op)) {
        return tether__ocl_dynamic_check(n, 0, NULL);
    }
    if (n->op == TETHER_OP_GATHER && tether__ir_live_wired(n)) {
        return "an index outside the live extent"; /* emit_opencl_dynamic_live.c */
    }
    switch ((int)n->op) {
    case TETHER_OP_GATHER:
    case TETHER_OP_GATHER_ELEMENTS:
    case TETHER_OP_GATHER_ND:
    case TETHER_OP_SCATTER_ELEMENTS:
    case TETHER_OP_SCATTER_ND:
    case TETHER_OP_MAX_UNPOOL:
        return "an index out of range";
    case TETHER_OP_ROI_ALIGN:
        return "a batch index out of range";
    case TETHER_OP_REVERSE_SEQUENCE:
        return "a sequence length out of 0..T";
    case TETHER_OP_RNN:
    case TETHER_OP_GRU:
    case TETHER_OP_LSTM:
        return n->ninputs > 4 && n->inputs[4] >= 0 ? "a sequence length out of 0..T" : NULL;
    default:
        return NULL;
    }
}

int tether__ocl_check_plan(ocl *e) {
    const tether_ir_graph *g = e->g;
    e->memix_err = -1;
    e->nerr = 0;
    e->err_cur = 0;
    free(e->err_nodes);
    e->err_nodes = NULL;
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *n = &g->nodes[i];
        int nc = tether__ocl_check_count(g, n);
        if (!nc || tether_ir_tensor_elements(T(e, n->outputs[0])) == 0) {
            continue;
        }
        if (!e->err_nodes && !(e->err_nodes = malloc(sizeof(int) * 4 * (size_t)g->nnodes))) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
        }
        for (int k = 0; k < nc; k++) { /* one entry per check, consecutive */
            e->err_nodes[e->nerr++] = i;
        }
    }
    if (e->nerr == 0) {
        return TETHER_OK;
    }
    mem m;
    memset(&m, 0, sizeof m);
    m.kind = MEM_STATUS;
    m.tensor = -1;
    m.elems = 1;
    m.ndim = 1;
    m.shape[0] = 1;
    m.params_off = -1;
    if ((e->memix_err = add_mem(e, &m)) < 0) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
    }
    return TETHER_OK;
}

void tether__ocl_fail(ocl *e) {
    tether__ocl_fail_entry(e, 0);
}

void tether__ocl_fail_entry(ocl *e, int k) {
    const char *what = NULL;
    if (e->err_cur > 0 && e->err_cur - 1 + k < e->nerr &&
        e->err_nodes[e->err_cur - 1 + k] == e->err_nodes[e->err_cur - 1]) {
        what = tether__ocl_check_entry(e->g, &e->g->nodes[e->err_nodes[e->err_cur - 1]], k, NULL);
    }
    if (what) {
        line(e, "atomic_cmpxchg(tg_err, 0, %d); /* %s: the run fails */", e->err_cur + k, what);
    } else {
        line(e, "#error \"tether: a run-time check outside a checking kernel\"");
    }
}
