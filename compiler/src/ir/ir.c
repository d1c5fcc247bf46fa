/*
 * The graph IR: construction, operator names, attribute defaults, compaction.
 *
 * Invariants: every name is a heap copy owned by the graph; tensor and node indices stay valid
 * until tether_ir_compact; a constant's data is an owned copy of exactly nbytes bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/ir.h"

#define OP_ROW_(id, name, kind, act, min_in, max_in, attrs, epilogue, formula, defaults, types,    \
                iformula)                                                                          \
    [TETHER_OP_##                                                                                  \
        id] = {name,                                                                               \
               TETHER__OPK_##kind,                                                                 \
               TETHER_ACT_##act,                                                                   \
               min_in,                                                                             \
               max_in,                                                                             \
               attrs,                                                                              \
               epilogue,                                                                           \
               TETHER__TY_##types,                                                                 \
               TETHER__OPK_EW_##kind(TETHER__TY_INTS_##types(true, false),                         \
                                     TETHER__TY_INTS_##types(true, false), false, false)},
static const tether__op_info op_table[TETHER_OP_COUNT_] = {TETHER_OP_LIST(OP_ROW_)};
#undef OP_ROW_

const tether__op_info *tether__op_info_of(tether_op op) {
    if ((int)op < 0 || (int)op >= TETHER_OP_COUNT_) {
        return NULL;
    }
    return &op_table[op];
}

tether_op tether__act_op(tether_act act) {
    for (int i = 0; act != TETHER_ACT_NONE && i < TETHER_OP_COUNT_; i++) {
        if (op_table[i].fused_act == act) {
            return (tether_op)i;
        }
    }
    return (tether_op)TETHER_OP_COUNT_;
}

void tether__act_attrs(const tether_ir_attrs *a, tether_ir_attrs *out) {
    memset(out, 0, sizeof *out);
    out->beta = 1.0f;
    out->alpha = a->act_alpha;
    out->min = a->act_min;
    out->max = a->act_max;
}

const char *tether_op_name(tether_op op) {
    const tether__op_info *info = tether__op_info_of(op);
    return info ? info->name : NULL;
}

int tether_op_parse(const char *name, tether_op *out) {
    for (int i = 0; i < TETHER_OP_COUNT_; i++) {
        if (name && strcmp(name, op_table[i].name) == 0) {
            *out = (tether_op)i;
            return TETHER_OK;
        }
    }
    return tether_set_error(TETHER_ERR_NOT_FOUND, "unknown op '%s'", name ? name : "(null)");
}

const char *tether_act_name(tether_act act) {
    switch (act) {
    case TETHER_ACT_NONE:
        return "none";
    case TETHER_ACT_RELU:
        return "relu";
    case TETHER_ACT_CLIP:
        return "clip";
    case TETHER_ACT_LEAKY_RELU:
        return "leaky_relu";
    case TETHER_ACT_SIGMOID:
        return "sigmoid";
    case TETHER_ACT_TANH:
        return "tanh";
    case TETHER_ACT_HARD_SWISH:
        return "hard_swish";
    }
    return NULL;
}

void tether_ir_attrs_init(tether_op op, tether_ir_attrs *a) {
    memset(a, 0, sizeof *a);
    a->kernel[0] = a->kernel[1] = 1;
    a->strides[0] = a->strides[1] = 1;
    a->dilations[0] = a->dilations[1] = 1;
    a->groups = 1;
    a->alpha = 1.0f;
    a->beta = 1.0f;
    a->min = -3.402823466e38f;
    a->max = 3.402823466e38f;
    a->epsilon = 1e-5f;
    a->axis = 0;
    a->keepdims = true;
    a->scales[0] = a->scales[1] = 2;
    a->to = TETHER_FLOAT32;
    for (int i = 0; i < 3; i++) {
        a->wstrides[i] = a->wdilations[i] = 1;
    }
    switch (op) { /* the DEFAULTS column of ops.def */
#define OP_DEFAULTS_(id, name, kind, act, min_in, max_in, attrs, epilogue, formula, defaults,      \
                     types, iformula)                                                              \
    case TETHER_OP_##id:                                                                           \
        defaults break;
        TETHER_OP_LIST(OP_DEFAULTS_)
#undef OP_DEFAULTS_
    }
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) {
        memcpy(d, s, n);
    }
    return d;
}

int tether_ir_init(tether_ir_graph *g, const char *name) {
    memset(g, 0, sizeof *g);
    g->name = dup_str(name ? name : "model");
    if (!g->name) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return TETHER_OK;
}

void tether_ir_close(tether_ir_graph *g) {
    if (!g) {
        return;
    }
    for (int i = 0; i < g->ntensors; i++) {
        free(g->tensors[i].name);
        free(g->tensors[i].data);
    }
    for (int i = 0; i < g->nnodes; i++) {
        free(g->nodes[i].name);
    }
    free(g->tensors);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->name);
    memset(g, 0, sizeof *g);
}

static int grow(void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) {
        return TETHER_OK;
    }
    int ncap = *cap ? *cap * 2 : 16;
    while (ncap < need) {
        ncap *= 2;
    }
    void *p = realloc(*arr, (size_t)ncap * elem);
    if (!p) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory growing the graph");
    }
    *arr = p;
    *cap = ncap;
    return TETHER_OK;
}

int tether_ir_find_tensor(const tether_ir_graph *g, const char *name) {
    for (int i = 0; i < g->ntensors; i++) {
        if (strcmp(g->tensors[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

static int add_tensor_common(tether_ir_graph *g, const char *name, DLDataType dtype, int ndim,
                             const int64_t *shape, int *index_out) {
    if (index_out) {
        *index_out = -1; /* set on every path, errors included */
    }
    if (!name || !name[0]) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "tensor name is empty");
    }
    if (tether_ir_find_tensor(g, name) >= 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "tensor '%s' is defined twice", name);
    }
    if (ndim != TETHER_IR_SHAPE_UNKNOWN && (ndim < 0 || ndim > TETHER_IR_MAX_NDIM)) {
        return tether_set_error(TETHER_ERR_LIMIT, "tensor '%s': rank %d outside 0..%d", name, ndim,
                                TETHER_IR_MAX_NDIM);
    }
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "tensor '%s': dimension %d has extent %lld (must be >= 0)",
                                    name, i, (long long)shape[i]);
        }
    }
    int rc = grow((void **)&g->tensors, &g->tensors_cap_, g->ntensors + 1, sizeof *g->tensors);
    if (rc) {
        return rc;
    }
    tether_ir_tensor *t = &g->tensors[g->ntensors];
    memset(t, 0, sizeof *t);
    t->name = dup_str(name);
    if (!t->name) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        t->shape[i] = shape[i];
    }
    t->producer = -1;
    t->alias_of = -1;
    t->layout = TETHER_LAYOUT_ANY;
    if (index_out) {
        *index_out = g->ntensors;
    }
    g->ntensors++;
    return TETHER_OK;
}

int tether_ir_add_tensor(tether_ir_graph *g, const char *name, DLDataType dtype, int ndim,
                         const int64_t *shape, int *index_out) {
    return add_tensor_common(g, name, dtype, ndim, shape, index_out);
}

size_t tether_ir_tensor_elements(const tether_ir_tensor *t) {
    size_t n = 1;
    for (int i = 0; i < t->ndim; i++) {
        n *= (size_t)t->shape[i];
    }
    return n;
}

size_t tether_ir_tensor_bytes(const tether_ir_tensor *t) {
    return tether_ir_tensor_elements(t) * tether_dtype_bytes(t->dtype);
}

int tether_ir_add_constant(tether_ir_graph *g, const char *name, DLDataType dtype, int ndim,
                           const int64_t *shape, const void *data, size_t nbytes, int *index_out) {
    if (ndim == TETHER_IR_SHAPE_UNKNOWN) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "constant '%s' needs a shape",
                                name ? name : "");
    }
    if (!tether_dtype_valid(dtype)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "constant '%s' has an invalid dtype",
                                name ? name : "");
    }
    int idx;
    int rc = add_tensor_common(g, name, dtype, ndim, shape, &idx);
    if (rc) {
        return rc;
    }
    tether_ir_tensor *t = &g->tensors[idx];
    size_t want = tether_ir_tensor_bytes(t);
    if (nbytes != want || (!data && nbytes)) {
        g->ntensors--;
        free(t->name);
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "constant '%s': %zu bytes of data, shape needs %zu", name, nbytes,
                                want);
    }
    t->data = malloc(nbytes ? nbytes : 1);
    if (!t->data) {
        g->ntensors--;
        free(t->name);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (nbytes) {
        memcpy(t->data, data, nbytes);
    }
    t->nbytes = nbytes;
    t->kind = TETHER_TENSOR_CONSTANT;
    if (index_out) {
        *index_out = idx;
    }
    return TETHER_OK;
}

int tether_ir_add_node(tether_ir_graph *g, const char *name, tether_op op, const int *inputs,
                       int ninputs, const int *outputs, int noutputs, const tether_ir_attrs *attrs,
                       int *index_out) {
    if (!name || !name[0]) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "node name is empty");
    }
    if ((int)op < 0 || op >= TETHER_OP_COUNT_) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "node '%s': invalid op %d", name, op);
    }
    if (ninputs < 0 || ninputs > TETHER_IR_MAX_INPUTS || noutputs < 1 ||
        noutputs > TETHER_IR_MAX_OUTPUTS) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "node '%s': %d inputs / %d outputs (limits %d / 1..%d)", name,
                                ninputs, noutputs, TETHER_IR_MAX_INPUTS, TETHER_IR_MAX_OUTPUTS);
    }
    for (int i = 0; i < ninputs; i++) {
        if (inputs[i] < -1 || inputs[i] >= g->ntensors) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "node '%s': input %d is no tensor",
                                    name, i);
        }
    }
    for (int i = 0; i < noutputs; i++) {
        if (outputs[i] < 0 || outputs[i] >= g->ntensors) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "node '%s': output %d is no tensor",
                                    name, i);
        }
    }
    for (int i = 0; i < g->nnodes; i++) {
        if (strcmp(g->nodes[i].name, name) == 0) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "node '%s' is defined twice", name);
        }
    }
    int rc = grow((void **)&g->nodes, &g->nodes_cap_, g->nnodes + 1, sizeof *g->nodes);
    if (rc) {
        return rc;
    }
    tether_ir_node *n = &g->nodes[g->nnodes];
    memset(n, 0, sizeof *n);
    n->name = dup_str(name);
    if (!n->name) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    n->op = op;
    n->ninputs = ninputs;
    for (int i = 0; i < ninputs; i++) {
        n->inputs[i] = inputs[i];
    }
    n->noutputs = noutputs;
    for (int i = 0; i < noutputs; i++) {
        n->outputs[i] = outputs[i];
    }
    if (attrs) {
        n->attrs = *attrs;
    } else {
        tether_ir_attrs_init(op, &n->attrs);
    }
    if (index_out) {
        *index_out = g->nnodes;
    }
    g->nnodes++;
    return TETHER_OK;
}

int tether_ir_add_input(tether_ir_graph *g, int tensor) {
    if (tensor < 0 || tensor >= g->ntensors) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "graph input %d is no tensor", tensor);
    }
    if (g->tensors[tensor].kind == TETHER_TENSOR_CONSTANT) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "graph input '%s' is a constant",
                                g->tensors[tensor].name);
    }
    for (int i = 0; i < g->ninputs; i++) {
        if (g->inputs[i] == tensor) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "graph input '%s' listed twice",
                                    g->tensors[tensor].name);
        }
    }
    int rc = grow((void **)&g->inputs, &g->inputs_cap_, g->ninputs + 1, sizeof *g->inputs);
    if (rc) {
        return rc;
    }
    g->inputs[g->ninputs++] = tensor;
    g->tensors[tensor].kind = TETHER_TENSOR_INPUT;
    return TETHER_OK;
}

int tether_ir_add_output(tether_ir_graph *g, int tensor) {
    if (tensor < 0 || tensor >= g->ntensors) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "graph output %d is no tensor", tensor);
    }
    for (int i = 0; i < g->noutputs; i++) {
        if (g->outputs[i] == tensor) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "graph output '%s' listed twice",
                                    g->tensors[tensor].name);
        }
    }
    int rc = grow((void **)&g->outputs, &g->outputs_cap_, g->noutputs + 1, sizeof *g->outputs);
    if (rc) {
        return rc;
    }
    g->outputs[g->noutputs++] = tensor;
    return TETHER_OK;
}

int tether_ir_compact(tether_ir_graph *g) {
    /* Drop dead nodes. */
    int w = 0;
    for (int i = 0; i < g->nnodes; i++) {
        if (g->nodes[i].op == TETHER_OP_COUNT_) {
            free(g->nodes[i].name);
            continue;
        }
        g->nodes[w++] = g->nodes[i];
    }
    g->nnodes = w;
    /* Keep tensors that are graph inputs/outputs or referenced by a node. */
    int *map = malloc(sizeof(int) * (size_t)(g->ntensors ? g->ntensors : 1));
    char *used = calloc((size_t)(g->ntensors ? g->ntensors : 1), 1);
    if (!map || !used) {
        free(map);
        free(used);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < g->ninputs; i++) {
        used[g->inputs[i]] = 1;
    }
    for (int i = 0; i < g->noutputs; i++) {
        used[g->outputs[i]] = 1;
    }
    for (int i = 0; i < g->nnodes; i++) {
        for (int j = 0; j < g->nodes[i].ninputs; j++) {
            if (g->nodes[i].inputs[j] >= 0) {
                used[g->nodes[i].inputs[j]] = 1;
            }
        }
        for (int j = 0; j < g->nodes[i].noutputs; j++) {
            used[g->nodes[i].outputs[j]] = 1;
        }
    }
    w = 0;
    for (int i = 0; i < g->ntensors; i++) {
        if (!used[i]) {
            free(g->tensors[i].name);
            free(g->tensors[i].data);
            map[i] = -1;
            continue;
        }
        map[i] = w;
        g->tensors[w++] = g->tensors[i];
    }
    g->ntensors = w;
    for (int i = 0; i < g->ntensors; i++) {
        tether_ir_tensor *t = &g->tensors[i];
        t->alias_of = t->alias_of >= 0 ? map[t->alias_of] : -1;
        t->producer = -1;
    }
    for (int i = 0; i < g->nnodes; i++) {
        tether_ir_node *n = &g->nodes[i];
        for (int j = 0; j < n->ninputs; j++) {
            if (n->inputs[j] >= 0) {
                n->inputs[j] = map[n->inputs[j]];
            }
        }
        for (int j = 0; j < n->noutputs; j++) {
            n->outputs[j] = map[n->outputs[j]];
            g->tensors[n->outputs[j]].producer = i;
        }
    }
    for (int i = 0; i < g->ninputs; i++) {
        g->inputs[i] = map[g->inputs[i]];
    }
    for (int i = 0; i < g->noutputs; i++) {
        g->outputs[i] = map[g->outputs[i]];
    }
    free(map);
    free(used);
    return TETHER_OK;
}
