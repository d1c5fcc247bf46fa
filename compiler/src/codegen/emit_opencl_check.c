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
 * What must stay true: tether__ocl_check_what names exactly the operators (and inputs) whose C
 * kernel returns -1 at run time, so the two backends fail on the same inputs with the same code;
 * a kernel that reports still never reads or writes outside a tensor; an artifact without a
 * checking node has no status object (its kernels and metadata are as before).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_opencl_internal.h"
#include "tether/crt/error.h"

const char *tether__ocl_check_what(const tether_ir_graph *g, const tether_ir_node *n) {
    (void)g;
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
        if (!tether__ocl_check_what(g, n) || tether_ir_tensor_elements(T(e, n->outputs[0])) == 0) {
            continue;
        }
        if (!e->err_nodes && !(e->err_nodes = malloc(sizeof(int) * (size_t)g->nnodes))) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
        }
        e->err_nodes[e->nerr++] = i;
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
    if (e->err_cur > 0) {
        line(e, "atomic_cmpxchg(tg_err, 0, %d); /* %s: the run fails */", e->err_cur,
             tether__ocl_check_what(e->g, &e->g->nodes[e->err_nodes[e->err_cur - 1]]));
    } else {
        line(e, "#error \"tether: a run-time check outside a checking kernel\"");
    }
}
