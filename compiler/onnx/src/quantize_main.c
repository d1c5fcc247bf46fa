/*
 * `tether quantize` (tether/onnx_quantize.h): the driver. Unpacks the model (after the importer
 * has loaded it, so it is sound), checks the options against it (the opset, every --keep-float
 * name), builds the calibration set, plans (quantize.c), calibrates on the model with the
 * planned activations as extra outputs (quantize_calib.c), picks each activation's scale and
 * zero point (a reshape-like or MaxPool output takes its input's), rewrites and packs the
 * model, and measures the result against the float model.
 *
 * What must stay true: on failure nothing is returned (r->model NULL) and everything allocated
 * is freed; the input file is only read.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TQ_MODEL
#include "quantize.h"
#include "tether/crt/error.h"

static const char *S(const char *s) {
    return s ? s : "";
}

static int oom(void) {
    return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "quantize: out of memory");
}

static int opset_of(const Onnx__ModelProto *m) {
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = S(m->opset_import[i]->domain);
        if (!*d || !strcmp(d, "ai.onnx")) {
            return (int)m->opset_import[i]->version;
        }
    }
    return 0;
}

/* The model with every activation to calibrate as an extra graph output, serialized. */
static int calibration_model(qctx *c, uint8_t **buf, size_t *len) {
    size_t n0 = c->g->n_output, n = n0 + (size_t)c->nacts;
    Onnx__ValueInfoProto **outs = calloc(n, sizeof *outs), **saved = c->g->output;
    Onnx__ValueInfoProto *vis = calloc((size_t)c->nacts + 1, sizeof *vis);
    if (!outs || !vis) {
        free(outs);
        free(vis);
        return oom();
    }
    memcpy(outs, saved, sizeof *outs * n0);
    for (int a = 0; a < c->nacts; a++) {
        onnx__value_info_proto__init(&vis[a]);
        vis[a].name = (char *)c->acts[a].name; /* borrowed while packing */
        outs[n0 + (size_t)a] = &vis[a];
        c->acts[a].cal = (int)n0 + a;
    }
    c->g->output = outs;
    c->g->n_output = n;
    *len = onnx__model_proto__get_packed_size(c->m);
    *buf = malloc(*len ? *len : 1);
    if (*buf) {
        onnx__model_proto__pack(c->m, *buf);
    }
    c->g->output = saved;
    c->g->n_output = n0;
    free(outs);
    free(vis);
    return *buf ? 0 : oom();
}

static int check_keep_float(const qctx *c) {
    for (int i = 0; i < c->o->nkeep_float; i++) {
        const char *k = c->o->keep_float[i];
        int found = 0;
        for (size_t n = 0; n < c->g->n_node && !found; n++) {
            const Onnx__NodeProto *nd = c->g->node[n];
            found = !strcmp(S(nd->name), k) || (nd->n_output && !strcmp(S(nd->output[0]), k));
        }
        if (!found) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "--keep-float: %s has no node '%s' (a node's name, or the "
                                    "name of its first output)",
                                    c->path, k);
        }
    }
    return 0;
}

static int add_model_names(qctx *c) {
    const Onnx__GraphProto *g = c->g;
    int rc = 0;
    for (size_t i = 0; !rc && i < g->n_node; i++) {
        rc = tq_name_add(c, S(g->node[i]->name));
        for (size_t k = 0; !rc && k < g->node[i]->n_input; k++) {
            rc = tq_name_add(c, S(g->node[i]->input[k]));
        }
        for (size_t k = 0; !rc && k < g->node[i]->n_output; k++) {
            rc = tq_name_add(c, S(g->node[i]->output[k]));
        }
    }
    for (size_t i = 0; !rc && i < g->n_initializer; i++) {
        rc = tq_name_add(c, S(g->initializer[i]->name));
    }
    for (size_t i = 0; !rc && i < g->n_input; i++) {
        rc = tq_name_add(c, S(g->input[i]->name));
    }
    for (size_t i = 0; !rc && i < g->n_output; i++) {
        rc = tq_name_add(c, S(g->output[i]->name));
    }
    for (size_t i = 0; !rc && i < g->n_value_info; i++) {
        rc = tq_name_add(c, S(g->value_info[i]->name));
    }
    return rc;
}

static int load(const qctx *c, const uint8_t *buf, size_t len, const tq_set *set,
                tether_ir_graph *g) {
    tether_model_load_options lo;
    memset(&lo, 0, sizeof lo);
    if (c->o->load) {
        lo = *c->o->load;
    }
    lo.input_shapes = set->shapes;
    lo.ninput_shapes = set->nin;
    lo.input_values = NULL;
    lo.ninput_values = 0;
    lo.input_bound = NULL;
    lo.input_names = NULL;
    return tether_onnx_load_buffer(buf, len, c->path, &lo, g);
}

/* Scale and zero point of every activation (a shared one after its source: nodes are in
 * topological order, and a share points at the node's input). */
static void pick_params(qctx *c, const tq_range *r) {
    for (int a = 0; a < c->nacts; a++) {
        double lo, hi;
        tq_range_pick(&r[a], c->o->method, c->o->percentile > 0 ? c->o->percentile : 99.99, &lo,
                      &hi);
        tq_params(lo, hi, c->o->uint8_activations, &c->acts[a].scale, &c->acts[a].zp);
    }
    for (int a = 0; a < c->nacts; a++) {
        int s = c->acts[a].share;
        while (s >= 0 && c->acts[s].share >= 0 && c->acts[s].share != a) {
            s = c->acts[s].share;
        }
        c->acts[a].share = s;
    }
}

static int summarize(qctx *c, tether_onnx_quantize_result *r) {
    size_t cap = 1, len = 0;
    for (size_t i = 0; i < c->g->n_node; i++) {
        cap += strlen(S(c->g->node[i]->name)) + strlen(S(c->g->node[i]->op_type)) + 8;
    }
    r->float_node_names = malloc(cap);
    if (!r->float_node_names) {
        return oom();
    }
    r->float_node_names[0] = 0;
    for (size_t i = 0; i < c->g->n_node; i++) {
        if (c->quant[i]) {
            r->quantized_nodes++;
            continue;
        }
        r->float_nodes++;
        const Onnx__NodeProto *n = c->g->node[i];
        len += (size_t)snprintf(r->float_node_names + len, cap - len, "%s%s (%s)", len ? ", " : "",
                                *S(n->name) ? S(n->name) : (n->n_output ? S(n->output[0]) : "?"),
                                S(n->op_type));
    }
    if (!len) {
        free(r->float_node_names);
        r->float_node_names = NULL;
    }
    return 0;
}

int tether_onnx_quantize(const char *path, const tether_onnx_quantize_options *o,
                         tether_onnx_quantize_result *r) {
    memset(r, 0, sizeof *r);
    qctx c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.o = o;
    tq_set set;
    memset(&set, 0, sizeof set);
    tq_range *ranges = NULL;
    uint8_t *buf = NULL, *cbuf = NULL;
    size_t len = 0, clen = 0;
    tether_ir_graph gc, gq;
    int gc_open = 0, gq_open = 0;
    int rc = tonnx_read_file(path, &buf, &len);
    rc = rc ? rc : tonnx_wire_check(buf, len, path, TONNX_MODEL);
    if (!rc) {
        c.m = onnx__model_proto__unpack(NULL, len, buf);
        c.g = c.m ? c.m->graph : NULL;
        if (!c.g) {
            rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: not an ONNX model with a graph",
                                  path);
        }
    }
    if (!rc) {
        int v = opset_of(c.m);
        if (v < 10) {
            rc = tether_set_error(TETHER_ERR_UNSUPPORTED,
                                  "%s: opset %d: QuantizeLinear needs opset 10 or later (13 for "
                                  "per-channel weights)",
                                  path, v);
        } else if (v < 13 && !o->per_tensor) {
            rc = tether_set_error(TETHER_ERR_UNSUPPORTED,
                                  "%s: opset %d: per-channel weights need opset 13 (the axis of "
                                  "DequantizeLinear); give --per-tensor, or export the model at "
                                  "opset 13 or later",
                                  path, v);
        }
    }
    rc = rc ? rc : check_keep_float(&c);
    rc = rc ? rc : tq_build_set(c.g, path, o, &set);
    if (!rc && !(rc = load(&c, buf, len, &set, &c.gf))) {
        c.gf_open = 1;
    }
    size_t nn = c.g ? c.g->n_node : 0;
    if (!rc) {
        c.nnames_cap = 64;
        for (size_t i = 0; i < nn; i++) {
            c.nnames_cap += 4 * (c.g->node[i]->n_input + c.g->node[i]->n_output + 4);
        }
        c.nnames_cap += 8 * (c.g->n_initializer + c.g->n_input + c.g->n_output + c.g->n_value_info);
        c.names = calloc(c.nnames_cap, sizeof *c.names);
        c.kind = calloc(nn + 1, sizeof *c.kind);
        c.quant = calloc(nn + 1, sizeof *c.quant);
        c.acts = calloc(3 * nn + 64, sizeof *c.acts);
        c.slots = calloc(3 * nn + 1, sizeof *c.slots);
        rc = c.names && c.kind && c.quant && c.acts && c.slots ? add_model_names(&c) : oom();
    }
    if (!rc) {
        tq_plan(&c);
        if (!c.nacts) {
            rc = tether_set_error(TETHER_ERR_UNSUPPORTED,
                                  "%s: no node to quantize (Conv, MatMul, Gemm, Add, Mul, pools, "
                                  "Concat, activations and reshapes on float32 tensors)",
                                  path);
        }
    }
    rc = rc ? rc : calibration_model(&c, &cbuf, &clen);
    if (!rc && !(rc = load(&c, cbuf, clen, &set, &gc))) {
        gc_open = 1;
    }
    if (!rc) {
        ranges = calloc((size_t)c.nacts, sizeof *ranges);
        rc = ranges ? tq_calibrate(&gc, c.g->n_output ? (int)c.g->n_output : 0, c.nacts, &set,
                                   o->method, ranges)
                    : oom();
    }
    if (!rc) {
        pick_params(&c, ranges);
        rc = summarize(&c, r);
    }
    rc = rc ? rc : tq_rewrite(&c, r);
    if (!rc) {
        r->model_len = onnx__model_proto__get_packed_size(c.m);
        r->model = malloc(r->model_len ? r->model_len : 1);
        if (!r->model) {
            rc = oom();
        } else {
            onnx__model_proto__pack(c.m, r->model);
        }
    }
    if (!rc && !(rc = load(&c, r->model, r->model_len, &set, &gq))) {
        gq_open = 1;
        tether_pass_options po;
        memset(&po, 0, sizeof po);
        po.integer_ops = true; /* what tether compiles: qconv/qmatmul where the pattern allows */
        po.pad_conv_min_width = -1;
        rc = tether_passes_run(&gq, &po);
    }
    if (!rc) {
        for (int i = 0; i < gq.nnodes; i++) {
            r->integer_nodes +=
                gq.nodes[i].op == TETHER_OP_QCONV || gq.nodes[i].op == TETHER_OP_QMATMUL;
        }
        rc = tq_evaluate(&c.gf, &gq, &set, r);
    }
    /* cleanup */
    if (ranges) {
        for (int a = 0; a < c.nacts; a++) {
            free(ranges[a].hist);
        }
    }
    free(ranges);
    for (int a = 0; c.acts && a < 3 * (int)nn + 64; a++) {
        free(c.acts[a].dq);
        free(c.acts[a].name);
    }
    for (int s = 0; c.slots && s < c.nslots; s++) {
        free(c.slots[s].scales);
        free(c.slots[s].out);
        free(c.slots[s].orig);
    }
    for (size_t i = 0; i < c.nout_nodes; i++) { /* a failed rewrite: its new nodes */
        int orig = 0;
        for (size_t k = 0; k < c.g->n_node && !orig; k++) {
            orig = c.g->node[k] == c.out_nodes[i];
        }
        if (!orig) {
            onnx__node_proto__free_unpacked(c.out_nodes[i], NULL);
        }
    }
    free(c.out_nodes);
    for (size_t i = 0; c.names && i < c.nnames_cap; i++) {
        free(c.names[i]);
    }
    free(c.names);
    free(c.kind);
    free(c.quant);
    free(c.acts);
    free(c.slots);
    free(set.data);
    free(cbuf);
    free(buf);
    if (c.m) {
        onnx__model_proto__free_unpacked(c.m, NULL);
    }
    if (c.gf_open) {
        tether_ir_close(&c.gf);
    }
    if (gc_open) {
        tether_ir_close(&gc);
    }
    if (gq_open) {
        tether_ir_close(&gq);
    }
    if (rc) {
        tether_onnx_quantize_free(r);
    }
    return rc;
}

void tether_onnx_quantize_free(tether_onnx_quantize_result *r) {
    free(r->model);
    free(r->float_node_names);
    memset(r, 0, sizeof *r);
}
