/*
 * Memory planning of generated code: the graph's intermediate tensors become the planner's
 * buffers (live interval = producing node .. last reading node, aliases extend their root), the
 * planner (compiler/planner, tether/planner.h) places them in one workspace pool, or in the
 * pools the user gave (fastest first, spilling to the next), with pins and, when asked, the
 * graph inputs (live from the start) and outputs (live to the end).
 *
 * What must stay true: two tensors whose intervals overlap never share bytes; constants and
 * aliases are never planned; graph inputs/outputs only when asked for; offsets are 16-byte
 * aligned; every plan passes tether_plan_validate before codegen sees it.
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
    /* a loop's body runs again and again: a tensor live on entry or after the loop, or a
     * loop-carried value, is live over the whole body (every iteration reads or keeps it) */
    for (int b = 0; b < g->nnodes; b++) {
        int e = g->nodes[b].op == TETHER_OP_LOOP_BEGIN ? tether__ir_loop_end_of(g, b) : -1;
        for (int t = 0; e >= 0 && t < g->ntensors; t++) {
            int p = g->tensors[t].producer;
            bool carried = p > b && p < e && g->nodes[p].op == TETHER_OP_LOOP_STATE;
            if (last[t] >= b && first[t] <= e && (first[t] < b || last[t] > e || carried)) {
                first[t] = first[t] < b ? first[t] : b; /* -1 (an input) stays */
                last[t] = last[t] > e ? last[t] : e;
            }
        }
    }
    return TETHER_OK;
}

int tether__memplan_plannable(const tether_ir_graph *g, int t) {
    const tether_ir_tensor *x = &g->tensors[t];
    return x->kind == TETHER_TENSOR_INTERMEDIATE && x->alias_of < 0 && x->producer >= 0 &&
           !tether__ir_is_graph_output(g, t) && tether_ir_tensor_bytes(x) > 0;
}

/* The pictures' annotations (tether_plan_problem_set_operators/add_io): the nodes' names, and
 * the graph inputs and outputs with bytes that are no buffer of the problem (the caller
 * provides them), over the operators they are live at. */
static int annotate(const tether_ir_graph *g, tether_plan_problem *p, const int *buffer_of) {
    const char **names = malloc(sizeof(char *) * (size_t)(g->nnodes ? g->nnodes : 1));
    size_t nt = (size_t)(g->ntensors ? g->ntensors : 1);
    int32_t *first = malloc(sizeof(int32_t) * nt), *last = malloc(sizeof(int32_t) * nt);
    int rc = TETHER_OK;
    if (!names || !first || !last) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "memory plan: out of memory");
        goto out;
    }
    for (int i = 0; i < g->nnodes; i++) {
        names[i] = g->nodes[i].name ? g->nodes[i].name : tether_op_name(g->nodes[i].op);
    }
    if ((rc = tether_plan_problem_set_operators(p, names, g->nnodes))) {
        goto out;
    }
    tether__memplan_intervals(g, first, last);
    int32_t end = g->nnodes > 0 ? g->nnodes - 1 : 0;
    for (int t = 0; t < g->ntensors && !rc; t++) {
        const tether_ir_tensor *x = &g->tensors[t];
        int in = x->kind == TETHER_TENSOR_INPUT, outp = tether__ir_is_graph_output(g, t);
        if ((!in && !outp) || buffer_of[t] >= 0 || x->alias_of >= 0 ||
            tether_ir_tensor_bytes(x) == 0) {
            continue;
        }
        int32_t a = in ? 0 : (first[t] < 0 ? 0 : first[t]);
        int32_t b = outp ? end : (last[t] < 0 ? 0 : last[t]);
        rc = tether_plan_problem_add_io(p, x->name,
                                        in ? TETHER_PLAN_GRAPH_INPUT : TETHER_PLAN_GRAPH_OUTPUT, a,
                                        b < a ? a : b, (int64_t)tether_ir_tensor_bytes(x));
    }
out:
    free(names);
    free(first);
    free(last);
    return rc;
}

static int problem_core(const tether_ir_graph *g, tether_plan_problem *p, int *buffer_of,
                        const tether_plan_pool *texture_pool, const int64_t *texture_extent);

int tether__memplan_problem(const tether_ir_graph *g, tether_plan_problem *p, int *buffer_of,
                            const tether_plan_pool *texture_pool, const int64_t *texture_extent) {
    int rc = problem_core(g, p, buffer_of, texture_pool, texture_extent);
    return rc ? rc : annotate(g, p, buffer_of);
}

static int problem_core(const tether_ir_graph *g, tether_plan_problem *p, int *buffer_of,
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

void tether_memory_options_init(tether_memory_options *o) {
    memset(o, 0, sizeof *o);
}

/* The planned graph inputs and outputs: an input with bytes that is not also an output; an
 * output with bytes that a node produces, not an alias, not an input. */
static int planned_io(const tether_ir_graph *g, const tether_memory_options *m, int t,
                      tether_plan_kind *kind) {
    const tether_ir_tensor *x = &g->tensors[t];
    if (tether_ir_tensor_bytes(x) == 0 || x->alias_of >= 0) {
        return 0;
    }
    int in = x->kind == TETHER_TENSOR_INPUT, out = tether__ir_is_graph_output(g, t);
    if (m->plan_inputs && in && !out) {
        *kind = TETHER_PLAN_GRAPH_INPUT;
        return 1;
    }
    if (m->plan_outputs && out && !in && x->producer >= 0) {
        *kind = TETHER_PLAN_GRAPH_OUTPUT;
        return 1;
    }
    return 0;
}

/* C identifier of a pool name: lower case, '.' and '-' become '_', a C keyword gets a '_'
 * ("int" -> "int_"); the header's macros use it in upper case. */
static void pool_cname(char *out, const char *name) {
    char id[TETHER_CG_IDENT_BUF];
    tether__cg_ident(id, name, true); /* a pool name (< 32 characters) keeps its length + 1 */
    size_t n = strlen(id);
    n = n < TETHER_POOL_NAME_MAX + 7 ? n : TETHER_POOL_NAME_MAX + 7;
    memcpy(out, id, n);
    out[n] = 0;
}

static int pools_check(const tether_memory_options *m) {
    if (m->npools > TETHER_MEMORY_MAX_POOLS) {
        return tether_set_error(TETHER_ERR_LIMIT, "%d pools; generated code takes at most %d",
                                m->npools, TETHER_MEMORY_MAX_POOLS);
    }
    for (int i = 0; i < m->npools; i++) {
        const tether_plan_pool *a = &m->pools[i];
        if (a->capacity != TETHER_PLAN_UNBOUNDED && a->capacity < 16) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "pool '%s' of %lld bytes: a pool holds at least 16", a->name,
                                    (long long)a->capacity);
        }
        if (a->scope != TETHER_SCOPE_GLOBAL) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "pool '%s' has scope %s: generated C code places tensors in "
                                    "global pools only (texture pools are the OpenCL backend's)",
                                    a->name, tether_scope_name(a->scope));
        }
        char ci[TETHER_POOL_NAME_MAX + 8], cj[TETHER_POOL_NAME_MAX + 8];
        pool_cname(ci, a->name);
        for (int j = 0; j < i; j++) {
            pool_cname(cj, m->pools[j].name);
            if (strcmp(ci, cj) == 0) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "pools '%s' and '%s' have the same C name '%s' (lower "
                                        "case, '.' and '-' become '_'): rename one",
                                        m->pools[j].name, a->name, ci);
            }
        }
    }
    return TETHER_OK;
}

/* Applies "TENSOR=POOL" pins to the problem's buffers. */
static int apply_pins(const tether_ir_graph *g, const tether_memory_options *m,
                      tether_plan_problem *p, const int *buffer_of, bool pools_later) {
    for (int i = 0; i < m->npins; i++) {
        const char *spec = m->pins[i];
        const char *eq = strrchr(spec, '=');
        if (!eq || eq == spec || !eq[1]) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "--pin '%s' is not TENSOR=POOL", spec);
        }
        const char *pool = eq + 1;
        if (!pools_later && tether_plan_problem_find_pool(p, pool) < 0) {
            char have[256] = "";
            for (int k = 0; k < p->npools; k++) {
                size_t n = strlen(have);
                snprintf(have + n, sizeof have - n, "%s%s", k ? ", " : "", p->pools[k].name);
            }
            return tether_set_error(TETHER_ERR_NOT_FOUND,
                                    "--pin %s: no pool '%s' (the pools are: %s)", spec, pool, have);
        }
        int t = -1;
        for (int k = 0; k < g->ntensors && t < 0; k++) {
            if (strlen(g->tensors[k].name) == (size_t)(eq - spec) &&
                strncmp(g->tensors[k].name, spec, (size_t)(eq - spec)) == 0) {
                t = k;
            }
        }
        if (t < 0) {
            return tether_set_error(TETHER_ERR_NOT_FOUND,
                                    "--pin %s: the model has no tensor '%.*s' (after the passes; "
                                    "`tether plan MODEL` lists the planned tensors)",
                                    spec, (int)(eq - spec), spec);
        }
        if (buffer_of[t] < 0) {
            const tether_ir_tensor *x = &g->tensors[t];
            const char *why = x->kind == TETHER_TENSOR_CONSTANT ? "a constant (weights)"
                              : x->alias_of >= 0                ? "an alias of another tensor"
                              : x->kind == TETHER_TENSOR_INPUT
                                  ? "a graph input (add --plan-inputs to plan inputs)"
                              : tether__ir_is_graph_output(g, t)
                                  ? "a graph output (add --plan-outputs to plan outputs)"
                                  : "not stored (empty)";
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "--pin %s: tensor '%s' is %s, not a tensor the plan places",
                                    spec, x->name, why);
        }
        tether_plan_buffer *b = &p->buffers[buffer_of[t]];
        if (b->pin_pool) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "--pin %s: tensor '%s' is already pinned to pool '%s'", spec,
                                    g->tensors[t].name, b->pin_pool);
        }
        b->pin_pool = strdup(pool);
        if (!b->pin_pool) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "memory plan: out of memory");
        }
    }
    return TETHER_OK;
}

int tether__memplan_problem_memory(const tether_ir_graph *g, const tether_memory_options *m,
                                   bool pins_pools_later, tether_plan_problem *p, int *buffer_of) {
    size_t nt = (size_t)(g->ntensors ? g->ntensors : 1);
    int rc = pools_check(m);
    if (!rc) {
        rc = problem_core(g, p, buffer_of, NULL, NULL);
    }
    if (!rc && m->npools > 0) { /* the given pools instead of the workspace */
        tether_plan_problem_clear_pools(p);
        for (int i = 0; i < m->npools && !rc; i++) {
            /* sizes are rounded up to 16 bytes, so the plan must end within the capacity
             * rounded down to 16: the code never needs more than the pool has */
            tether_plan_pool pool = m->pools[i];
            if (pool.capacity != TETHER_PLAN_UNBOUNDED) {
                pool.capacity &= ~(int64_t)15;
            }
            rc = tether_plan_problem_add_pool(p, &pool);
        }
    }
    if (!rc && (m->plan_inputs || m->plan_outputs)) {
        int32_t *first = malloc(sizeof(int32_t) * nt), *last = malloc(sizeof(int32_t) * nt);
        if (!first || !last) {
            rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "memory plan: out of memory");
        } else {
            tether__memplan_intervals(g, first, last);
        }
        for (int t = 0; !rc && t < g->ntensors; t++) {
            tether_plan_kind kind;
            if (!planned_io(g, m, t, &kind)) {
                continue;
            }
            tether_plan_buffer b = {0};
            b.name = g->tensors[t].name;
            b.size = (int64_t)tether_ir_tensor_bytes(&g->tensors[t]);
            b.alignment = 16;
            b.scope = TETHER_SCOPE_GLOBAL;
            b.kind = kind;
            b.pin_offset = -1;
            b.dtype = g->tensors[t].dtype;
            /* an input is live from the copy-in before the first operator, an output until the
             * copy-out after the last */
            b.first = kind == TETHER_PLAN_GRAPH_INPUT ? 0 : (first[t] < 0 ? 0 : first[t]);
            b.last = kind == TETHER_PLAN_GRAPH_OUTPUT ? (g->nnodes > 0 ? g->nnodes - 1 : 0)
                                                      : (last[t] < 0 ? 0 : last[t]);
            rc = tether_plan_problem_add_buffer(p, &b, &buffer_of[t]);
        }
        free(first);
        free(last);
    }
    if (!rc) {
        rc = apply_pins(g, m, p, buffer_of, pins_pools_later);
    }
    if (!rc) {
        rc = annotate(g, p, buffer_of);
    }
    return rc;
}

int tether_memplan_build(const tether_ir_graph *g, const char *algorithm, tether_memplan *out) {
    return tether_memplan_build_pools(g, algorithm, NULL, out);
}

int tether_memplan_build_pools(const tether_ir_graph *g, const char *algorithm,
                               const tether_memory_options *m, tether_memplan *out) {
    tether_memory_options none;
    if (!m) {
        tether_memory_options_init(&none);
        m = &none;
    }
    memset(out, 0, sizeof *out);
    size_t nt = (size_t)(g->ntensors ? g->ntensors : 1);
    int np = m->npools > 0 ? m->npools : 1;
    out->ntensors = g->ntensors;
    out->offset = malloc(sizeof(int64_t) * nt);
    out->pool = malloc(sizeof(int) * nt);
    out->pools = calloc((size_t)np, sizeof *out->pools);
    out->npools = np;
    out->pool_args = m->npools > 0;
    int *buffer_of = malloc(sizeof(int) * nt);
    if (!out->offset || !out->pool || !out->pools || !buffer_of) {
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
    int rc = algorithm ? tether_plan_algorithm_parse(algorithm, &o.algorithm) : TETHER_OK;
    if (!rc) {
        rc = tether__memplan_problem_memory(g, m, false, &p, buffer_of);
    }
    if (!rc && p.nbuffers > 0) {
        rc = tether_plan_run(&p, &o, &plan);
        if (!rc && (rc = tether_plan_validate(&p, &o, &plan)) != 0) {
            tether_plan_close(&plan);
        }
    }
    if (!rc) {
        for (int i = 0; i < np; i++) {
            tether_memplan_pool *mp = &out->pools[i];
            snprintf(mp->name, sizeof mp->name, "%s", p.pools[i].name);
            pool_cname(mp->cname, mp->name);
            mp->capacity = p.pools[i].capacity;
            if (p.nbuffers > 0) {
                mp->size = align16(plan.pools[i].size);
            }
            if (m->npools > 0 && mp->size < 16) {
                mp->size = 16; /* every pool argument is a real buffer, even an unused one */
            }
            if (p.nbuffers > 0) {
                mp->lower_bound = plan.pools[i].lower_bound;
                mp->ntensors = plan.pools[i].nbuffers;
            }
            out->workspace_size += mp->size;
        }
        for (int i = 0; i < g->ntensors; i++) {
            int b = buffer_of[i];
            out->offset[i] = b >= 0 ? plan.assign[b].offset : -1;
            out->pool[i] = b >= 0 ? plan.assign[b].pool : -1;
            if (b >= 0) {
                out->naive_size += align16((int64_t)tether_ir_tensor_bytes(&g->tensors[i]));
                out->nspilled += plan.assign[b].pool > 0 && !p.buffers[b].pin_pool;
            }
        }
        out->plan_inputs = m->plan_inputs;
        out->plan_outputs = m->plan_outputs;
        snprintf(out->algorithm, sizeof out->algorithm, "%s",
                 p.nbuffers > 0 ? tether_plan_algorithm_name(plan.algorithm) : "none");
        if (m->npools > 0 && p.nbuffers > 0) {
            rc = tether_plan_to_json(&p, &plan, &out->plan_json);
            if (!rc) {
                rc = tether_plan_to_svg(&p, &plan, &out->plan_svg);
            }
        }
    }
    if (p.nbuffers > 0 && plan.assign) {
        tether_plan_close(&plan);
    }
    tether_plan_problem_close(&p);
    free(buffer_of);
    if (rc) {
        char msg[TETHER_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", tether_last_error());
        tether_memplan_close(out);
        if (strstr(msg, "fits in no")) { /* a picture shows where it overflows */
            char full[TETHER_ERROR_MSG_MAX + 160];
            snprintf(full, sizeof full,
                     "memory plan: %s (tether plan MODEL with the same --target and memory "
                     "options and --svg FILE draws where it overflows)",
                     msg);
            tether_set_error(rc, "%s", full);
            tether_set_error_detail(full); /* the whole text, past the short message's limit */
            return rc;
        }
        return tether_set_error(rc, "memory plan: %s", msg);
    }
    return TETHER_OK;
}

void tether_memplan_close(tether_memplan *p) {
    if (!p) {
        return;
    }
    free(p->offset);
    free(p->pool);
    free(p->pools);
    free(p->plan_json);
    free(p->plan_svg);
    memset(p, 0, sizeof *p);
}
