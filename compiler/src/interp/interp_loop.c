/*
 * Reference semantics of the run-time Loop's operators (ops.def, ir/shapes_loop.c): the
 * interpreter's node loop hands every loop operator to tether__interp_loop, which tells it the
 * next node to run (a loop_begin whose loop is over jumps past its loop_end, a loop_end back to
 * its loop_begin).
 *
 * What must stay true: the body runs while iteration < M and the condition holds (the initial
 * condition, then the body's); loop_end stores every next value into its state's buffer before
 * the next iteration reads it; loop_result is the initial value when no iteration ran; loop_scan
 * writes row `iteration` of its buffer, loop_stack gives the rows the loop wrote and zero after
 * them (or their count), both TETHER_ERR_LIMIT past the buffer's rows. ls holds
 * three int64 per node: the iteration, whether the loop is running, the condition.
 */
#include <stdint.h>
#include <string.h>

#include "../internal.h"
#include "interp_internal.h"
#include "tether/crt/error.h"

static size_t bytes_of(const tether_ir_graph *g, int t) {
    return tether_ir_tensor_bytes(&g->tensors[t]);
}

static void copy(const tether_ir_graph *g, void **buf, int dst, int src) {
    if (buf[dst] != buf[src] && bytes_of(g, dst)) {
        memmove(buf[dst], buf[src], bytes_of(g, dst));
    }
}

int tether__interp_loop(const tether_ir_graph *g, int i, void **buf, int64_t *ls, int *next) {
    const tether_ir_node *n = &g->nodes[i];
    int o = n->outputs[0];
    *next = i + 1;
    switch ((int)n->op) { /* the loop operators only */
    case TETHER_OP_LOOP_BEGIN: {
        int e = tether__ir_loop_end_of(g, i), j = 0;
        if (e < 0) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "has no loop_end");
        }
        int64_t m = INT64_MAX;
        if (n->attrs.mode & 1) {
            m = ((const int64_t *)buf[n->inputs[j++]])[0];
        }
        if (!ls[3 * i + 1]) { /* entering the loop */
            ls[3 * i] = 0;
            ls[3 * i + 1] = 1;
            ls[3 * i + 2] = (n->attrs.mode & 2) ? ((const uint8_t *)buf[n->inputs[j]])[0] != 0 : 1;
        }
        if (ls[3 * i] < m && ls[3 * i + 2]) {
            ((int64_t *)buf[o])[0] = ls[3 * i];
        } else {
            ((int64_t *)buf[g->nodes[e].outputs[0]])[0] = ls[3 * i];
            ls[3 * i + 1] = 0;
            *next = e + 1;
        }
        return TETHER_OK;
    }
    case TETHER_OP_LOOP_END: {
        int b = g->tensors[n->inputs[0]].producer, k = (int)n->attrs.k;
        for (int s = 0; s < k; s++) {
            copy(g, buf, n->inputs[1 + s], n->inputs[1 + k + s]);
        }
        if (n->attrs.mode & 2) {
            ls[3 * b + 2] = ((const uint8_t *)buf[n->inputs[1 + 2 * k]])[0] != 0;
        }
        ls[3 * b]++;
        *next = b;
        return TETHER_OK;
    }
    case TETHER_OP_LOOP_STATE:
        if (((const int64_t *)buf[n->inputs[1]])[0] == 0) {
            copy(g, buf, o, n->inputs[0]);
        }
        return TETHER_OK;
    case TETHER_OP_LOOP_RESULT:
        copy(g, buf, o, ((const int64_t *)buf[n->inputs[1]])[0] > 0 ? n->inputs[0] : n->inputs[2]);
        return TETHER_OK;
    case TETHER_OP_LOOP_COPY:
        copy(g, buf, o, n->inputs[0]);
        return TETHER_OK;
    case TETHER_OP_LOOP_SCAN: {
        int64_t it = ((const int64_t *)buf[n->inputs[1]])[0], rows = g->tensors[o].shape[0];
        size_t row = bytes_of(g, n->inputs[0]);
        if (it < 0 || it >= rows) {
            return tether__ir_node_error(n, TETHER_ERR_LIMIT,
                                         "iteration %lld is past the %lld rows of the scan "
                                         "output's buffer",
                                         (long long)it, (long long)rows);
        }
        if (row) {
            memmove((uint8_t *)buf[o] + (size_t)it * row, buf[n->inputs[0]], row);
        }
        return TETHER_OK;
    }
    case TETHER_OP_LOOP_STACK: {
        const tether_ir_tensor *s = &g->tensors[n->inputs[0]];
        int64_t cnt = ((const int64_t *)buf[n->inputs[1]])[0], rows = s->shape[0];
        if (cnt < 0 || cnt > rows) {
            return tether__ir_node_error(n, TETHER_ERR_LIMIT,
                                         "the loop ran %lld iterations, its scan output holds %lld",
                                         (long long)cnt, (long long)rows);
        }
        if (n->attrs.mode & TETHER__DYN_COUNT) {
            ((int64_t *)buf[o])[0] = cnt;
            return TETHER_OK;
        }
        size_t all = bytes_of(g, o), row = rows ? all / (size_t)rows : 0;
        if (buf[o] != buf[n->inputs[0]] && cnt && row) {
            memmove(buf[o], buf[n->inputs[0]], (size_t)cnt * row);
        }
        if (all > (size_t)cnt * row) {
            memset((uint8_t *)buf[o] + (size_t)cnt * row, 0, all - (size_t)cnt * row);
        }
        return TETHER_OK;
    }
    default:
        break;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "not a loop operator");
}
