/*
 * Memory planning of generated code: the graph's intermediate tensors become the planner's
 * buffers (live interval = producing node .. last reading node, aliases extend their root), the
 * planner (compiler/planner, tether/planner.h) places them in one workspace pool.
 *
 * What must stay true: two tensors whose intervals overlap never share bytes; graph inputs,
 * outputs, constants and aliases are never in the workspace; offsets are 16-byte aligned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "memplan_internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"
#include "tether/planner.h"

static int64_t align16(int64_t v) {
    return (v + 15) & ~(int64_t)15;
}

int tether__memplan_intervals(const tether_ir_graph *g, int32_t *first, int32_t *last) {
    for (int i = 0; i < g->ntensors; i++) {
        first[i] = -1;
        last[i] = -1;
    }
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *n = &g->nodes[i];
        int o = n->outputs[0];
        if (first[o] < 0) {
            first[o] = i;
        }
        if (last[o] < i) {
            last[o] = i;
        }
        for (int j = 0; j < n->ninputs; j++) {
            int t = n->inputs[j];
            if (t < 0) {
                continue;
            }
            int root = g->tensors[t].alias_of >= 0 ? g->tensors[t].alias_of : t;
            last[root] = last[root] > i ? last[root] : i;
        }
    }
    return TETHER_OK;
}

int tether__memplan_plannable(const tether_ir_graph *g, int t) {
    const tether_ir_tensor *x = &g->tensors[t];
    return x->kind == TETHER_TENSOR_INTERMEDIATE && x->alias_of < 0 && x->producer >= 0 &&
           !tether__ir_is_graph_output(g, t) && tether_ir_tensor_bytes(x) > 0;
}

int tether__memplan_problem(const tether_ir_graph *g, tether_plan_problem *p, int *buffer_of,
                            const tether_plan_pool *texture_pool, const int64_t *texture_extent) {
    int32_t *first = malloc(sizeof(int32_t) * (size_t)(g->ntensors ? g->ntensors : 1));
    int32_t *last = malloc(sizeof(int32_t) * (size_t)(g->ntensors ? g->ntensors : 1));
    int rc = TETHER_OK;
    if (!first || !last) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "memory plan: out of memory");
        goto out;
    }
    tether__memplan_intervals(g, first, last);
    if ((rc = tether_plan_problem_init(p))) {
        goto out;
    }
    tether_plan_pool pool = {.name = TETHER_WORKSPACE_POOL,
                             .scope = TETHER_SCOPE_GLOBAL,
                             .capacity = TETHER_PLAN_UNBOUNDED,
                             .alignment = 16};
    if ((rc = tether_plan_problem_add_pool(p, &pool))) {
        goto out;
    }
    if (texture_pool && (rc = tether_plan_problem_add_pool(p, texture_pool))) {
        goto out;
    }
    for (int i = 0; i < g->ntensors; i++) {
        buffer_of[i] = -1;
        if (!tether__memplan_plannable(g, i)) {
            continue;
        }
        tether_plan_buffer b = {0};
        b.name = g->tensors[i].name;
        b.size = (int64_t)tether_ir_tensor_bytes(&g->tensors[i]);
        b.alignment = 16;
        b.first = first[i];
        b.last = last[i];
        b.scope = TETHER_SCOPE_GLOBAL;
        b.kind = TETHER_PLAN_INTERMEDIATE;
        b.pin_offset = -1;
        b.dtype = g->tensors[i].dtype;
        if (texture_pool && texture_extent[2 * i] > 0) {
            b.scope = TETHER_SCOPE_TEXTURE;
            b.size = 0;
            b.width = texture_extent[2 * i];
            b.height = texture_extent[2 * i + 1];
        }
        if ((rc = tether_plan_problem_add_buffer(p, &b, &buffer_of[i]))) {
            goto out;
        }
    }
out:
    free(first);
    free(last);
    return rc;
}

int tether_memplan_build(const tether_ir_graph *g, const char *algorithm, tether_memplan *out) {
    memset(out, 0, sizeof *out);
    out->ntensors = g->ntensors;
    out->offset = malloc(sizeof(int64_t) * (size_t)(g->ntensors ? g->ntensors : 1));
    int *buffer_of = malloc(sizeof(int) * (size_t)(g->ntensors ? g->ntensors : 1));
    if (!out->offset || !buffer_of) {
        free(buffer_of);
        tether_memplan_close(out);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "memory plan: out of memory");
    }
    tether_plan_problem p;
    memset(&p, 0, sizeof p);
    tether_plan_options o;
    tether_plan plan;
    memset(&plan, 0, sizeof plan);
    tether_plan_options_init(&o);
    int rc = TETHER_OK;
    if (algorithm && (rc = tether_plan_algorithm_parse(algorithm, &o.algorithm))) {
        free(buffer_of);
        tether_memplan_close(out);
        return rc;
    }
    rc = tether__memplan_problem(g, &p, buffer_of, NULL, NULL);
    if (!rc && p.nbuffers > 0) {
        rc = tether_plan_run(&p, &o, &plan);
    }
    if (!rc) {
        for (int i = 0; i < g->ntensors; i++) {
            out->offset[i] = buffer_of[i] >= 0 ? plan.assign[buffer_of[i]].offset : -1;
            if (buffer_of[i] >= 0) {
                out->naive_size += align16((int64_t)tether_ir_tensor_bytes(&g->tensors[i]));
            }
        }
        out->workspace_size = p.nbuffers > 0 ? align16(plan.pools[0].size) : 0;
        snprintf(out->algorithm, sizeof out->algorithm, "%s",
                 p.nbuffers > 0 ? tether_plan_algorithm_name(plan.algorithm) : "none");
    }
    if (p.nbuffers > 0 && !rc) {
        tether_plan_close(&plan);
    }
    tether_plan_problem_close(&p);
    free(buffer_of);
    if (rc) {
        char msg[TETHER_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", tether_last_error());
        tether_memplan_close(out);
        return tether_set_error(rc, "memory plan: %s", msg);
    }
    return TETHER_OK;
}

void tether_memplan_close(tether_memplan *p) {
    if (!p) {
        return;
    }
    free(p->offset);
    memset(p, 0, sizeof *p);
}
