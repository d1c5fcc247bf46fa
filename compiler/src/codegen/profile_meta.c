/*
 * metadata.json's "profile" object of a profiling build (`tether compile --profile`,
 * docs/profile.md), for both backends: how to read the node times back and what each profiled
 * node is (name, operator, kernel, shapes, schedule, work, bytes, workspace live at it).
 *
 * What must stay true: the C backend's nodes are listed in the order of the emitted profile
 * table's slots (emit_c_profile.c: the nodes with a function, in node order) and name their
 * function in the registry; the OpenCL backend's name the launch step of each node (the host
 * maps each kernel's profiling event to it; a node computed inside another node's kernel, a
 * softmax fused into its dense, is not listed: its time is in that kernel's); the object is
 * appended last, so the rest of the metadata stays byte for byte the plain build's but for
 * "functions" (C: <prefix>_profile).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "emit_c_internal.h"
#include "tether/crt/error.h"

static uint64_t elems(const tether_ir_graph *g, int t) {
    return t < 0 ? 0 : (uint64_t)tether_ir_tensor_elements(&g->tensors[t]);
}

static int64_t dim(const tether_ir_graph *g, int t, int i) {
    const tether_ir_tensor *x = &g->tensors[t];
    if (i < 0) {
        i += x->ndim;
    }
    return i >= 0 && i < x->ndim ? x->shape[i] : 0;
}

/* Multiply-accumulates of the node's main reduction (0 for operators without one). */
static uint64_t node_macs(const tether_ir_graph *g, const tether_ir_node *n) {
    uint64_t out = elems(g, n->outputs[0]);
    if (n->op == TETHER_OP_CONV2D) { /* w[O, C/g, kh, kw] */
        return out * (uint64_t)(dim(g, n->inputs[1], 1) * dim(g, n->inputs[1], 2) *
                                dim(g, n->inputs[1], 3));
    }
    if (n->op == TETHER_OP_DENSE) {
        return out * (uint64_t)dim(g, n->inputs[0], n->attrs.trans_a ? 0 : 1);
    }
    if (n->op == TETHER_OP_MATMUL) {
        return out * (uint64_t)dim(g, n->inputs[0], -1);
    }
    return 0;
}

static cJSON *shape_of(const tether_ir_tensor *t) {
    cJSON *a = cJSON_CreateArray();
    for (int d = 0; d < t->ndim; d++) {
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)t->shape[d]));
    }
    return a;
}

/* "scalar" / "vector width 8", then " tuned: conv_oc_block=4 ..." when a tuning record's node
 * schedule applies to the node's workload (the knobs that are set). */
static void schedule_text(const tether_ir_graph *g, int idx, const tether_compile_options *o,
                          char *out, size_t n) {
    const tether_codegen_options *c = &o->codegen;
    int vw = c->schedule.vector_width;
    int k = vw > 0    ? snprintf(out, n, "vector width %d", vw)
            : vw == 0 ? snprintf(out, n, "scalar")
                      : snprintf(out, n, "default");
    char key[TETHER_WORKLOAD_MAX];
    if (!c->nnode_schedules || !tether_workload_tunable(g, idx) ||
        tether_workload_key(g, idx, key, sizeof key)) {
        return;
    }
    for (int i = 0; i < c->nnode_schedules; i++) {
        const tether_node_schedule *ns = &c->node_schedules[i];
        if (!ns->workload || strcmp(ns->workload, key) != 0) {
            continue;
        }
        const tether_schedule *s = &ns->schedule;
        const struct {
            const char *name;
            int v;
        } knobs[] = {{"conv_oc_block", s->conv_oc_block},
                     {"conv_col_vectors", s->conv_col_vectors},
                     {"dw_col_vectors", s->dw_col_vectors},
                     {"gemv_rows", s->gemv_rows},
                     {"gemm_rows", s->gemm_rows},
                     {"gemm_col_vectors", s->gemm_col_vectors},
                     {"nchwc_oc_vectors", s->nchwc_oc_vectors},
                     {"nchwc_pixels", s->nchwc_pixels},
                     {"nchwc_dw_pixels", s->nchwc_dw_pixels},
                     {"local_size", s->local_size},
                     {"ocl_split_k", s->ocl_split_k},
                     {"ocl_tile_m", s->ocl_tile_m},
                     {"ocl_tile_n", s->ocl_tile_n}};
        k += snprintf(out + k, n > (size_t)k ? n - (size_t)k : 0, ", tuned:");
        for (size_t j = 0; j < sizeof knobs / sizeof knobs[0]; j++) {
            if (knobs[j].v > 0 && (size_t)k < n) {
                k += snprintf(out + k, n - (size_t)k, " %s=%d", knobs[j].name, knobs[j].v);
            }
        }
        return;
    }
}

/* The name of node idx's kernel: C, the registry function listed for it (functions in order:
 * entry, set_params, one per node with a function, profile); OpenCL, the step's kernel. */
static const char *kernel_of(const cJSON *m, const char *node, int slot, int opencl) {
    if (opencl) {
        const cJSON *st;
        cJSON_ArrayForEach(st, cJSON_GetObjectItem(m, "steps")) {
            const cJSON *nd = cJSON_GetObjectItem(st, "node");
            if (cJSON_IsString(nd) && strcmp(nd->valuestring, node) == 0) {
                return cJSON_GetStringValue(cJSON_GetObjectItem(st, "kernel"));
            }
        }
        return NULL;
    }
    int first = cJSON_GetObjectItem(m, "set_params") ? 2 : 1;
    const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "functions"), first + slot);
    return f ? cJSON_GetStringValue(cJSON_GetObjectItem(f, "name")) : NULL;
}

char *tether__metadata_add_profile(const char *meta, const tether_ir_graph *g,
                                   const tether_memplan *plan, const tether_compile_options *o) {
    int opencl = o->backend == TETHER_BACKEND_OPENCL;
    cJSON *m = cJSON_Parse(meta);
    int nt = g->ntensors;
    int *first = malloc(sizeof(int) * (size_t)(nt ? nt : 1)),
        *last = malloc(sizeof(int) * (size_t)(nt ? nt : 1));
    if (!m || !first || !last) {
        cJSON_Delete(m);
        free(first);
        free(last);
        return NULL;
    }
    /* live interval of every planned tensor: [producer, last reader], reads through aliases
     * counted for the root (the planner's rule, docs/codegen.md "Memory planning") */
    for (int t = 0; t < nt; t++) {
        first[t] = g->nnodes;
        last[t] = -1;
    }
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *nd = &g->nodes[i];
        for (int j = 0; j <= nd->ninputs; j++) {
            int t = j < nd->ninputs ? nd->inputs[j] : nd->outputs[0];
            if (t < 0) {
                continue;
            }
            int r = g->tensors[t].alias_of >= 0 ? g->tensors[t].alias_of : t;
            first[r] = first[r] < i ? first[r] : i;
            last[r] = last[r] > i ? last[r] : i;
        }
    }
    const char *P = o->codegen.prefix ? o->codegen.prefix : "tether_model";
    int stack = !opencl && o->codegen.profile == TETHER_PROFILE_STACK;
    cJSON *p = cJSON_AddObjectToObject(m, "profile");
    char buf[TETHER_WORKLOAD_MAX + 64];
    if (opencl) {
        cJSON_AddStringToObject(p, "source", "opencl-events");
    } else {
        cJSON_AddStringToObject(p, "source", "clock");
        snprintf(buf, sizeof buf, "%s_profile", P);
        cJSON_AddStringToObject(p, "function", buf);
        cJSON_AddStringToObject(p, "clock", "tether_platform_cycles");
        cJSON_AddNumberToObject(p, "slot_words", 3);
        int ns = tether__c_profile_slots(g);
        cJSON_AddNumberToObject(p, "table_bytes", 24.0 * (ns ? ns : 1));
    }
    cJSON_AddBoolToObject(p, "stack", stack);
    cJSON *nodes = cJSON_AddArrayToObject(p, "nodes");
    for (int i = 0, slot = 0; i < g->nnodes; i++) {
        const tether_ir_node *nd = &g->nodes[i];
        if (!tether__c_node_has_function(g, nd)) {
            continue;
        }
        const char *k = kernel_of(m, nd->name, slot, opencl);
        if (opencl && !k) { /* computed by another node's kernel (a softmax fused into dense) */
            continue;
        }
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "slot", slot);
        cJSON_AddStringToObject(x, "name", nd->name);
        cJSON_AddStringToObject(x, "op", tether_op_name(nd->op));
        cJSON_AddStringToObject(x, "kernel", k ? k : "");
        cJSON *ins = cJSON_AddArrayToObject(x, "inputs");
        uint64_t bin = 0;
        for (int j = 0; j < nd->ninputs; j++) {
            if (nd->inputs[j] >= 0) {
                cJSON_AddItemToArray(ins, shape_of(&g->tensors[nd->inputs[j]]));
                bin += tether_ir_tensor_bytes(&g->tensors[nd->inputs[j]]);
            }
        }
        cJSON_AddItemToObject(x, "output", shape_of(&g->tensors[nd->outputs[0]]));
        if (opencl) {
            snprintf(buf, sizeof buf, "opencl");
        } else {
            schedule_text(g, i, o, buf, sizeof buf);
        }
        cJSON_AddStringToObject(x, "schedule", buf);
        cJSON_AddNumberToObject(x, "macs", (double)node_macs(g, nd));
        cJSON_AddNumberToObject(x, "flops", (double)tether_ir_node_flops(g, nd));
        cJSON_AddNumberToObject(x, "bytes_in", (double)bin);
        cJSON_AddNumberToObject(x, "bytes_out",
                                (double)tether_ir_tensor_bytes(&g->tensors[nd->outputs[0]]));
        uint64_t live = 0;
        for (int t = 0; plan && t < nt && t < plan->ntensors; t++) {
            if (plan->offset[t] >= 0 && first[t] <= i && i <= last[t]) {
                live += tether_ir_tensor_bytes(&g->tensors[t]);
            }
        }
        cJSON_AddNumberToObject(x, "workspace_live", (double)live);
        cJSON_AddItemToArray(nodes, x);
        slot++;
    }
    free(first);
    free(last);
    char *text = cJSON_Print(m);
    cJSON_Delete(m);
    return text;
}
