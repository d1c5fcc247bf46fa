/*
 * The ONNX importer: a decoded ModelProto -> the compiler IR (docs/onnx.md).
 *
 * Order of work, each step failing with one message that starts with the file name:
 *   wire pre-check and decoding (truncated file, not a model; protobuf-c's memory bounded by the
 *   file's size) -> opset -> each node's input and output counts against the ONNX schema of its
 *   operator (check_arity: nothing after it reads past a node's lists) -> values (initializers,
 *   graph inputs, node outputs; undefined or doubly-written names) -> topological order (a cycle
 *   is named by its nodes) -> which inputs operators need as constants, binding given values ->
 *   constness -> the support scan (every unsupported operator of the model in ONE error, with
 *   node name and opset) -> conversion in order, shaping each IR node as it is added -> graph
 *   outputs and inputs -> tether_ir_infer.
 *
 * What must stay true: nothing of the decoded model outlives the call (the IR owns copies);
 * every allocation is bounded by bytes present in the file (or given by the caller), never by a
 * count the file merely states (docs/onnx.md, "What a file can make the importer allocate");
 * on failure the graph is closed; input_bound is written only on success; graph inputs keep the
 * model's order minus the bound ones. The structural steps up to the support scan are
 * structure.c's; the services converters use (host constants, attributes, tensors and nodes) are
 * services.c's; the converters convert.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
/* ---- errors ---------------------------------------------------------------------------- */

int tonnx_fail(timport *c, int status, const char *fmt, ...) {
    char msg[TETHER_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->cur >= 0) {
        const Onnx__NodeProto *n = c->gp->node[c->cur];
        return tether_set_error(status, "%s: node '%s' (%s): %s", c->source,
                                tonnx_node_name(c, c->cur), S(n->op_type), msg);
    }
    return tether_set_error(status, "%s: %s", c->source, msg);
}

/* Prefixes the current error message with the source file. */
int tonnx_wrap(timport *c, int rc) {
    char msg[TETHER_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", tether_last_error());
    return tether_set_error(rc, "%s: %s", c->source, msg);
}

const char *tonnx_node_name(const timport *c, int node) {
    return c->node_names && c->node_names[node] ? c->node_names[node] : "?";
}

/* ---- conversion ------------------------------------------------------------------------ */

/* Identity-like nodes: the output names the input's tensor or constant. */
static int alias_output(timport *c, int out_vi, int in_vi) {
    value *in = &c->v[in_vi], *out = &c->v[out_vi];
    if (!in->k && in->tensor < 0) {
        int rc = tonnx_ensure_tensor(c, in_vi, "input");
        if (rc) {
            return rc;
        }
    }
    out->k = in->k;
    out->tensor = in->tensor;
    return TETHER_OK;
}

int tonnx_convert_nodes(timport *c, const int *order) {
    for (size_t r = 0; r < c->gp->n_node; r++) {
        int i = order[r];
        const Onnx__NodeProto *n = c->gp->node[i];
        const op_def *d = tonnx_op_find(S(n->domain), S(n->op_type));
        c->cur = i;
        bool all_const = d->host;
        if (!tonnx_shape_only(d->op_type)) {
            for (size_t j = 0; all_const && j < n->n_input; j++) {
                int vi = tonnx_find(c, S(n->input[j]));
                all_const = vi < 0 || c->v[vi].k;
            }
        }
        int rc;
        if (all_const) {
            rc = tonnx_host_eval(c, n, d);
        } else if (!d->fn) {
            rc = tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                            "only on constant inputs (shape computations)");
        } else if (strcmp(d->op_type, "Identity") == 0 || strcmp(d->op_type, "Dropout") == 0) {
            int out = n->n_output ? tonnx_find(c, S(n->output[0])) : -1;
            int in = n->n_input ? tonnx_find(c, S(n->input[0])) : -1;
            rc = out < 0 || in < 0
                     ? tonnx_fail(c, TETHER_ERR_INVALID_ARG, "needs one named input and output")
                     : alias_output(c, out, in);
            if (!rc && d->op_type[0] == 'D' && n->n_output > 1 && S(n->output[1])[0]) {
                rc = tonnx_dropout_mask(c, n); /* all true (convert_misc.c) */
            }
        } else {
            rc = d->fn(c, n);
        }
        if (rc) {
            return rc;
        }
    }
    c->cur = -1;
    return TETHER_OK;
}

static int is_output_tensor(const tether_ir_graph *g, int t) {
    for (int i = 0; i < g->noutputs; i++) {
        if (g->outputs[i] == t) {
            return 1;
        }
    }
    return 0;
}

static int add_outputs(timport *c) {
    for (size_t i = 0; i < c->gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = c->gp->output[i];
        const char *name = S(vi->name);
        int k = tonnx_find(c, name);
        if (k < 0) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "graph output '%s' is not defined", name);
        }
        value *v = &c->v[k];
        const Onnx__TypeProto *tp = vi->type;
        DLDataType want = {0, 0, 0};
        if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type &&
            tp->tensor_type->has_elem_type &&
            !tonnx_onnx_dtype(tp->tensor_type->elem_type, &want)) {
            char tn[32];
            return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                              "graph output '%s' has element type %s, which tether does not "
                              "compute",
                              name, tonnx_dtype_name(tp->tensor_type->elem_type, tn, sizeof tn));
        }
        if (v->tensor < 0 && (v->k || v->input >= 0)) {
            /* a constant (computed at import time) becomes a constant tensor, copied below */
            int rc = tonnx_ensure_tensor(c, tonnx_find(c, name), "graph output");
            if (rc) {
                return rc;
            }
        }
        int t = v->tensor;
        if (t < 0) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "graph output '%s' is not computed by any node", name);
        }
        tether_ir_tensor *tt = &c->g->tensors[t];
        if (want.lanes && !tether_dtype_equal(tt->dtype, want)) {
            char a[TETHER_DTYPE_NAME_MAX] = "?", b[TETHER_DTYPE_NAME_MAX] = "?";
            tether_dtype_name(want, a, sizeof a);
            tether_dtype_name(tt->dtype, b, sizeof b);
            return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                              "graph output '%s' has element type %s in the model, but tether "
                              "computes it as %s (a constant folded at import time is float32 or "
                              "int64)",
                              name, a, b);
        }
        bool produced = tt->kind == TETHER_TENSOR_INTERMEDIATE; /* by a node, not an input */
        for (int k = 0; k < c->ninputs && produced; k++) {
            produced = c->v[c->input_value[k]].tensor != t;
        }
        if (produced && strcmp(tt->name, name) != 0 && !is_output_tensor(c->g, t) &&
            tether_ir_find_tensor(c->g, name) < 0) {
            /* an Identity renamed it: the tensor takes the output's name */
            char *nm = strdup(name);
            if (!nm) {
                return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", c->source);
            }
            free(tt->name);
            tt->name = nm;
        } else if (!produced || is_output_tensor(c->g, t)) {
            /* a graph input, a constant or an output listed twice: copy it through a reshape */
            tether_ir_attrs a;
            /* a reshape to its own shape; a scalar through a tile to rank 0 */
            tether_op copy = tt->ndim ? TETHER_OP_RESHAPE : TETHER_OP_TILE;
            tether_ir_attrs_init(copy, &a);
            a.nints = tt->ndim;
            for (int d = 0; d < tt->ndim; d++) {
                a.ints[d] = tt->shape[d];
            }
            if (tt->kind == TETHER_TENSOR_CONSTANT && strcmp(tt->name, name) == 0) {
                /* the output keeps the ONNX name; the constant it copies takes "NAME/value" */
                char vname[300];
                snprintf(vname, sizeof vname, "%s/value", name);
                char *nm = tether_ir_find_tensor(c->g, vname) < 0 ? strdup(vname) : NULL;
                if (nm) {
                    free(tt->name);
                    tt->name = nm;
                }
            }
            char cname[300];
            snprintf(cname, sizeof cname, "%s", name);
            if (tether_ir_find_tensor(c->g, cname) >= 0) {
                snprintf(cname, sizeof cname, "%s/copy%zu", name, i);
            }
            int o, rc = tether_ir_add_tensor(c->g, cname, TETHER_FLOAT32, TETHER_IR_SHAPE_UNKNOWN,
                                             NULL, &o);
            int idx;
            char nname[320];
            snprintf(nname, sizeof nname, "output_copy_%zu", i);
            if (!rc) {
                rc = tether_ir_add_node(c->g, nname, copy, &t, 1, &o, 1, &a, &idx);
            }
            if (!rc) {
                rc = tether_ir_infer_node(c->g, idx);
            }
            if (rc) {
                return tonnx_wrap(c, rc);
            }
            t = o;
        }
        int rc = tether_ir_add_output(c->g, t);
        if (rc) {
            return tonnx_wrap(c, rc);
        }
    }
    return TETHER_OK;
}

static int add_inputs(timport *c) {
    for (int k = 0; k < c->ninputs; k++) {
        if (c->bound[k]) {
            continue;
        }
        int vi = c->input_value[k];
        int rc = tonnx_ensure_tensor(c, vi, "graph input");
        if (!rc) {
            rc = tether_ir_add_input(c->g, c->v[vi].tensor);
            rc = rc ? tonnx_wrap(c, rc) : TETHER_OK;
        }
        if (rc) {
            return rc;
        }
    }
    return TETHER_OK;
}

static int import_model(timport *c) {
    Onnx__ModelProto *m = c->m;
    c->cur = -1;
    int64_t opset = -1;
    int found = 0;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        const char *d = S(o->domain);
        if (d[0] && strcmp(d, "ai.onnx") != 0) {
            continue;
        }
        if (!o->has_version || o->version < 0) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "opset_import of the default domain has no valid version");
        }
        if (found && o->version != opset) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "opset_import names the default domain twice, with opsets %lld "
                              "and %lld",
                              (long long)opset, (long long)o->version);
        }
        opset = o->version;
        found = 1;
    }
    if (!found) {
        if (m->n_opset_import == 0 && m->has_ir_version && m->ir_version < 3) {
            opset = 1; /* IR versions before 3 had no opset_import */
        } else if (m->n_opset_import == 0) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "no opset_import: not an ONNX model, or a truncated one");
        } else if (m->graph) {
            /* only other domains (a training-domain model): fine while no node needs the
             * default domain; the opset then only bounds the table rows of those domains */
            for (size_t i = 0; i < m->graph->n_node; i++) {
                const char *d = S(m->graph->node[i]->domain);
                if (!d[0] || strcmp(d, "ai.onnx") == 0) {
                    return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                                      "opset_import has no entry for the default ONNX domain, "
                                      "which node '%s' (%s) is in",
                                      S(m->graph->node[i]->name), S(m->graph->node[i]->op_type));
                }
            }
            opset = TETHER_ONNX_OPSET_MAX;
        } else {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "opset_import has no entry for the default ONNX domain");
        }
    }
    if (opset < TETHER_ONNX_OPSET_MIN || opset > TETHER_ONNX_OPSET_MAX) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "opset %lld of the default domain is not supported (%d..%d)",
                          (long long)opset, TETHER_ONNX_OPSET_MIN, TETHER_ONNX_OPSET_MAX);
    }
    c->opset = (int)opset;
    c->gp = m->graph;
    if (!c->gp) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "the model has no graph");
    }
    int rc = tether_ir_init(c->g, S(c->gp->name)[0] ? c->gp->name : "model");
    /* custom.c: the registry CUSTOM nodes index */
    c->prefix = "";
    c->g->custom = c->o && c->o->custom_ops ? c->o->custom_ops : tether_custom_ops_default();
    if (rc || (rc = tonnx_name_nodes(c)) || (rc = tonnx_check_arity(c)) ||
        (rc = tonnx_collect_values(c))) {
        return rc;
    }
    int *order = malloc(sizeof(int) * (c->gp->n_node ? c->gp->n_node : 1));
    if (!order) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", c->source);
    }
    if (!(rc = tonnx_sort_nodes(c, order)) && !(rc = tonnx_bind_inputs(c, order))) {
        tonnx_propagate_constness(c, order);
        if (!(rc = tonnx_support_scan(c)) && !(rc = tonnx_convert_nodes(c, order)) &&
            !(rc = add_outputs(c)) && !(rc = add_inputs(c))) {
            /* the actual extent of each output of data-dependent size (convert_dynamic.c) */
            rc = tether_ir_add_extent_outputs(c->g);
            rc = rc ? rc : tether_ir_infer(c->g);
            rc = rc ? tonnx_wrap(c, rc) : TETHER_OK;
        }
    }
    free(order);
    return rc;
}

static void release(timport *c) {
    while (c->owned) {
        hconst *k = c->owned;
        c->owned = k->next_owned;
        free(k->data);
        free(k);
    }
    for (size_t i = 0; c->node_names && c->gp && i < c->gp->n_node; i++) {
        free(c->node_names[i]);
    }
    free(c->node_names);
    free(c->v);
    free(c->slots);
    free(c->input_info);
    free(c->input_value);
    free(c->bound);
    if (c->m) {
        onnx__model_proto__free_unpacked(c->m, &c->alloc.pb);
    }
}

/* Decodes a ModelProto with the budgeted allocator (*m NULL on failure, with the error set). */
static int unpack_model(const void *data, size_t len, const char *source, tonnx_alloc *al,
                        Onnx__ModelProto **m) {
    tonnx_alloc_init(al, len);
    *m = onnx__model_proto__unpack(&al->pb, len, data);
    if (*m) {
        return TETHER_OK;
    }
    if (al->over) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "%s: not a valid ONNX model: decoding its %zu bytes would take "
                                "more than %zu bytes of memory (a model of many empty or tiny "
                                "entries: a corrupted file?)",
                                source, len, al->limit);
    }
    return tether_set_error(TETHER_ERR_INVALID_ARG,
                            "%s: not a valid ONNX model: protobuf decoding failed (a "
                            "corrupted or truncated field inside the graph)",
                            source);
}

int tether_onnx_load_buffer(const void *data, size_t len, const char *source,
                            const tether_model_load_options *o, tether_ir_graph *g) {
    memset(g, 0, sizeof *g);
    timport c;
    memset(&c, 0, sizeof c);
    c.source = source ? source : "model";
    c.o = o;
    c.g = g;
    c.cur = -1;
    const char *slash = strrchr(c.source, '/');
    if (slash) {
        snprintf(c.dir, sizeof c.dir, "%.*s", (int)(slash - c.source), c.source);
        if (!c.dir[0]) {
            strcpy(c.dir, "/");
        }
    } else {
        strcpy(c.dir, ".");
    }
    c.host_limit = TONNX_HOST_BUDGET(len);
    int rc = tonnx_custom_begin(o && o->custom_ops ? o->custom_ops : tether_custom_ops_default());
    rc = rc ? rc : tonnx_wire_check(data, len, c.source, TONNX_MODEL);
    if (!rc) {
        rc = unpack_model(data, len, c.source, &c.alloc, &c.m);
    }
    if (!rc) {
        rc = import_model(&c);
    }
    if (!rc && o && o->input_bound) {
        memset(o->input_bound, 0, (size_t)(o->ninput_values > 0 ? o->ninput_values : 0));
        for (int k = 0; k < c.ninputs; k++) {
            int j = tonnx_input_value_index(o, k, c.v[c.input_value[k]].name);
            if (j >= 0) {
                o->input_bound[j] = c.bound[k];
            }
        }
    }
    release(&c);
    tonnx_custom_end();
    if (rc) {
        tether_ir_close(g);
        memset(g, 0, sizeof *g);
    }
    return rc;
}

int tether_onnx_load(const char *path, const tether_model_load_options *o, tether_ir_graph *g) {
    memset(g, 0, sizeof *g);
    uint8_t *buf;
    size_t len;
    int rc = tonnx_read_file(path, &buf, &len);
    if (rc) {
        return rc;
    }
    rc = tether_onnx_load_buffer(buf, len, path, o, g);
    free(buf);
    return rc;
}

static int onnx_loader(const char *path, const tether_model_load_options *o, tether_ir_graph *g) {
    return tether_onnx_load(path, o, g);
}

int tether_onnx_register(void) {
    return tether_model_register_loader_with(".onnx", onnx_loader);
}

int tether_onnx_model_inputs(const char *path, char (*names)[128], int max, int *count) {
    *count = 0;
    uint8_t *buf;
    size_t len;
    int rc = tonnx_read_file(path, &buf, &len);
    if (rc) {
        return rc;
    }
    rc = tonnx_wire_check(buf, len, path, TONNX_MODEL);
    tonnx_alloc al;
    Onnx__ModelProto *m = NULL;
    if (!rc) {
        rc = unpack_model(buf, len, path, &al, &m);
    }
    free(buf);
    if (!rc && !m->graph) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: not a valid ONNX model", path);
    }
    for (size_t i = 0; !rc && i < m->graph->n_input; i++) {
        const char *name = S(m->graph->input[i]->name);
        bool init = false;
        for (size_t k = 0; k < m->graph->n_initializer && !init; k++) {
            init = strcmp(S(m->graph->initializer[k]->name), name) == 0;
        }
        if (init) {
            continue;
        }
        if (*count >= max || strlen(name) >= 128) {
            rc = tether_set_error(TETHER_ERR_LIMIT,
                                  "%s: more than %d inputs or a name over 127 "
                                  "bytes",
                                  path, max);
            break;
        }
        snprintf(names[(*count)++], 128, "%s", name);
    }
    if (m) {
        onnx__model_proto__free_unpacked(m, &al.pb);
    }
    return rc;
}
