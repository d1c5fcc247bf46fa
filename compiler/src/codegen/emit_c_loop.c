/*
 * Generated C of the run-time Loop's operators (ops.def, ir/shapes_loop.c): no kernel functions,
 * plain statements in the graph function. A loop_begin opens a block and a C `for` over the
 * iterations (while iteration < M and the condition holds), its loop_end stores the next values
 * into the loop-carried buffers, reads the body's condition and closes both; the nodes between
 * them are the body. Nothing is allocated: every buffer is in the memory plan (plan/memplan.c
 * keeps what the body reads or carries live over the whole loop).
 *
 * A loop_scan (in the body) copies its value into row `iteration` of its buffer, a loop_stack
 * (after the loop) gives the rows written, zero after them, or their count; both return -4
 * (TETHER_ERR_LIMIT) from the graph function past the buffer's rows.
 *
 * What must stay true: the same semantics as interp/interp_loop.c; the generated text is C99.
 */
#include <string.h>

#include "../internal.h"
#include "emit_c_internal.h"

static size_t bytes_of(const em *e, int t) {
    return tether_ir_tensor_bytes(T(e, t));
}

static void copy(em *e, int dst, int src, const char *how) {
    char d[160], s[160];
    if (!bytes_of(e, dst)) {
        return;
    }
    tether__c_tensor_ptr(e, dst, d, sizeof d);
    tether__c_tensor_ptr(e, src, s, sizeof s);
    if (strcmp(d, s) != 0) {
        line(e, "%s((void *)%s, (const void *)%s, %zu);", how, d, s, bytes_of(e, dst));
    }
}

void tether__c_loop(em *e, int i) {
    const tether_ir_node *n = &e->g->nodes[i];
    char p[160], q[160], r[160];
    tether__c_tensor_ptr(e, n->outputs[0], p, sizeof p);
    switch ((int)n->op) { /* the loop operators only */
    case TETHER_OP_LOOP_BEGIN: {
        int j = 0;
        line(e, "{ /* %s: a loop */", tether__cg_comment_text(n->name));
        e->depth++;
        if (n->attrs.mode & 1) {
            tether__c_tensor_ptr(e, n->inputs[j++], q, sizeof q);
            line(e, "const int64_t tg_lp%d_m = (%s)[0];", i, q);
        } else {
            line(e, "const int64_t tg_lp%d_m = INT64_MAX;", i);
        }
        if (n->attrs.mode & 2) {
            tether__c_tensor_ptr(e, n->inputs[j], q, sizeof q);
            line(e, "int tg_lp%d_c = ((const uint8_t *)%s)[0] != 0;", i, q);
        } else {
            line(e, "int tg_lp%d_c = 1;", i);
        }
        line(e, "int64_t tg_lp%d_i = 0;", i);
        line(e, "for (; tg_lp%d_i < tg_lp%d_m && tg_lp%d_c; tg_lp%d_i++) {", i, i, i, i);
        e->depth++;
        line(e, "(%s)[0] = tg_lp%d_i;", p, i);
        return;
    }
    case TETHER_OP_LOOP_END: {
        int b = T(e, n->inputs[0])->producer, k = (int)n->attrs.k;
        for (int s = 0; s < k; s++) {
            copy(e, n->inputs[1 + s], n->inputs[1 + k + s], "memmove");
        }
        if (n->attrs.mode & 2) {
            tether__c_tensor_ptr(e, n->inputs[1 + 2 * k], q, sizeof q);
            line(e, "tg_lp%d_c = ((const uint8_t *)%s)[0] != 0;", b, q);
        }
        e->depth--;
        line(e, "}");
        line(e, "(%s)[0] = tg_lp%d_i;", p, b);
        e->depth--;
        line(e, "}");
        return;
    }
    case TETHER_OP_LOOP_STATE:
        if (!bytes_of(e, n->outputs[0])) {
            return;
        }
        tether__c_tensor_ptr(e, n->inputs[1], q, sizeof q);
        line(e, "if ((%s)[0] == 0) { /* %s: the loop's initial value */", q,
             tether__cg_comment_text(n->name));
        e->depth++;
        copy(e, n->outputs[0], n->inputs[0], "memcpy");
        e->depth--;
        line(e, "}");
        return;
    case TETHER_OP_LOOP_RESULT:
        if (!bytes_of(e, n->outputs[0])) {
            return;
        }
        tether__c_tensor_ptr(e, n->inputs[0], q, sizeof q);
        tether__c_tensor_ptr(e, n->inputs[2], r, sizeof r);
        {
            char c[160];
            tether__c_tensor_ptr(e, n->inputs[1], c, sizeof c);
            line(e, "memcpy((void *)%s, (%s)[0] > 0 ? (const void *)%s : (const void *)%s, %zu);",
                 p, c, q, r, bytes_of(e, n->outputs[0]));
        }
        return;
    case TETHER_OP_LOOP_COPY:
        copy(e, n->outputs[0], n->inputs[0], "memcpy");
        return;
    case TETHER_OP_LOOP_SCAN: {
        long long rows = (long long)T(e, n->outputs[0])->shape[0];
        size_t row = bytes_of(e, n->inputs[0]);
        tether__c_tensor_ptr(e, n->inputs[1], q, sizeof q);
        line(e, "if ((%s)[0] < 0 || (%s)[0] >= %lldLL) { /* %s: a scan output's row */", q, q, rows,
             tether__cg_comment_text(n->name));
        line(e, "    return -4; /* TETHER_ERR_LIMIT: past the scan buffer's rows */");
        line(e, "}");
        if (row) {
            tether__c_tensor_ptr(e, n->inputs[0], r, sizeof r);
            line(e,
                 "memcpy((void *)((uint8_t *)%s + (size_t)(%s)[0] * %zu), (const void *)%s, %zu);",
                 p, q, row, r, row);
        }
        return;
    }
    case TETHER_OP_LOOP_STACK: {
        const tether_ir_tensor *s = T(e, n->inputs[0]);
        long long rows = (long long)s->shape[0];
        size_t all = bytes_of(e, n->inputs[0]), row = rows ? all / (size_t)rows : 0;
        tether__c_tensor_ptr(e, n->inputs[1], q, sizeof q);
        tether__c_tensor_ptr(e, n->inputs[0], r, sizeof r);
        line(e, "if ((%s)[0] < 0 || (%s)[0] > %lldLL) { /* %s: the loop's iterations */", q, q,
             rows, tether__cg_comment_text(n->name));
        line(e, "    return -4; /* TETHER_ERR_LIMIT: more than the scan buffer's rows */");
        line(e, "}");
        if (n->attrs.mode & TETHER__DYN_COUNT) {
            line(e, "(%s)[0] = (%s)[0];", p, q);
            return;
        }
        if (row && strcmp(p, r) != 0) {
            line(e, "memcpy((void *)%s, (const void *)%s, (size_t)(%s)[0] * %zu);", p, r, q, row);
        }
        if (all) {
            line(e,
                 "memset((void *)((uint8_t *)%s + (size_t)(%s)[0] * %zu), 0, %zu - (size_t)(%s)[0] "
                 "* %zu);",
                 p, q, row, all, q, row);
        }
        return;
    }
    default:
        break;
    }
    line(e, "#error \"tether: not a loop operator\"");
}
