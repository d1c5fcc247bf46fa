/*
 * `tether quantize` (tether/onnx_quantize.h, docs/quantization.md): static post-training
 * quantization of an ONNX model into a QDQ model, the form ONNX Runtime's static quantizer
 * writes. The model is first loaded by the importer (so it is known to be sound and every tensor's
 * type and shape are known), then unpacked again with the system allocator and rewritten in
 * place:
 *  - the plan: which nodes are quantized (Conv, MatMul, Gemm, Add, Mul, the activations, the
 *    pools, Concat and the reshape-likes, unless --keep-float names them) and so which float
 *    activation tensors get one QuantizeLinear/DequantizeLinear pair (each consumer then reads the
 *    dequantized tensor; a graph output keeps its name on the DequantizeLinear), which initializers
 *    become int8 weights (per channel along the output axis, or per tensor) and int32 biases; a
 *    Relu or Clip that is the only consumer of a quantized Conv/MatMul/Gemm is fused (no pair
 *    between them: tether's integer pass makes the pair one integer operator with a clamp);
 *  - calibration (quantize_calib.c) of every activation to quantize, on the float model with
 *    those tensors as extra outputs;
 *  - the rewrite: the new nodes in topological order (weights' DequantizeLinear before their
 *    consumer, an activation's pair right after its producer), the new initializers, the float
 *    initializers no node reads any more removed;
 *  - the result packed, loaded again, passed through the integer pass and compared with the float
 *    model on every sample.
 *
 * What must stay true: every string and array put into the unpacked model is malloc'd (the
 * system allocator frees them with the model); new names never collide with a name of the model;
 * a node is quantized only when every input the pattern needs can be.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#define TQ_MODEL
#include "quantize.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static int oom(void) {
    return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "quantize: out of memory");
}

static const char *S(const char *s) {
    return s ? s : "";
}

/* ---- names ---- */

static size_t hash(const char *s) {
    size_t h = 1469598103934665603u;
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    }
    return h;
}

static int name_has(const qctx *c, const char *s) {
    for (size_t i = hash(s) % c->nnames_cap;; i = (i + 1) % c->nnames_cap) {
        if (!c->names[i]) {
            return 0;
        }
        if (!strcmp(c->names[i], s)) {
            return 1;
        }
    }
}

static int name_add(qctx *c, const char *s) {
    if (!*s || name_has(c, s)) {
        return 0;
    }
    size_t i = hash(s) % c->nnames_cap;
    while (c->names[i]) {
        i = (i + 1) % c->nnames_cap;
    }
    return (c->names[i] = strdup(s)) ? 0 : oom();
}

/* A new unique name "BASE_SUFFIX" (malloc'd), or NULL (error set). */
static char *uniq(qctx *c, const char *base, const char *suffix) {
    size_t n = strlen(base) + strlen(suffix) + 24;
    char *s = malloc(n);
    if (!s) {
        oom();
        return NULL;
    }
    snprintf(s, n, "%s%s", base, suffix);
    for (int k = 1; name_has(c, s); k++) {
        snprintf(s, n, "%s%s_%d", base, suffix, k);
    }
    if (name_add(c, s)) {
        free(s);
        return NULL;
    }
    return s;
}

/* ---- the model ---- */

static int find_init(const qctx *c, const char *name) {
    for (size_t i = 0; i < c->g->n_initializer; i++) {
        if (!strcmp(S(c->g->initializer[i]->name), name)) {
            return (int)i;
        }
    }
    return -1;
}

static int is_graph_output(const qctx *c, const char *name) {
    for (size_t i = 0; i < c->g->n_output; i++) {
        if (!strcmp(S(c->g->output[i]->name), name)) {
            return 1;
        }
    }
    return 0;
}

/* A float32 tensor computed at run time (a graph input or a node output), known to the importer. */
static int is_float_act(const qctx *c, const char *name) {
    if (!*name || find_init(c, name) >= 0) {
        return 0;
    }
    int t = tether_ir_find_tensor(&c->gf, name);
    return t >= 0 && c->gf.tensors[t].kind != TETHER_TENSOR_CONSTANT &&
           tether_dtype_equal(c->gf.tensors[t].dtype, TETHER_FLOAT32);
}

static const Onnx__TensorProto *float_init(const qctx *c, const char *name) {
    int k = find_init(c, name);
    const Onnx__TensorProto *t = k >= 0 ? c->g->initializer[k] : NULL;
    return t && t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ? t : NULL;
}

static int64_t attr_i(const Onnx__NodeProto *n, const char *name, int64_t dflt) {
    for (size_t i = 0; i < n->n_attribute; i++) {
        if (!strcmp(S(n->attribute[i]->name), name)) {
            return n->attribute[i]->i;
        }
    }
    return dflt;
}

static float attr_f(const Onnx__NodeProto *n, const char *name, float dflt) {
    for (size_t i = 0; i < n->n_attribute; i++) {
        if (!strcmp(S(n->attribute[i]->name), name)) {
            return n->attribute[i]->f;
        }
    }
    return dflt;
}

static int op_kind(const Onnx__NodeProto *n) {
    const char *d = S(n->domain);
    if (*d && strcmp(d, "ai.onnx") != 0) {
        return K_NONE;
    }
    static const struct {
        const char *op;
        int kind;
    } t[] = {{"Conv", K_CONV},       {"MatMul", K_MATMUL},       {"Gemm", K_GEMM},
             {"Add", K_BINARY},      {"Mul", K_BINARY},          {"Relu", K_ACT},
             {"Clip", K_ACT},        {"Sigmoid", K_ACT},         {"LeakyRelu", K_ACT},
             {"Tanh", K_ACT},        {"AveragePool", K_POOL},    {"GlobalAveragePool", K_POOL},
             {"MaxPool", K_SHARE},   {"GlobalMaxPool", K_SHARE}, {"Reshape", K_SHARE},
             {"Flatten", K_SHARE},   {"Transpose", K_SHARE},     {"Squeeze", K_SHARE},
             {"Unsqueeze", K_SHARE}, {"Concat", K_CONCAT}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (!strcmp(S(n->op_type), t[i].op)) {
            return t[i].kind;
        }
    }
    return K_NONE;
}

static int want_act(qctx *c, const char *name) {
    for (int i = 0; i < c->nacts; i++) {
        if (!strcmp(c->acts[i].name, name)) {
            return i;
        }
    }
    act *a = &c->acts[c->nacts];
    free(a->name); /* an entry a node's plan gave back */
    memset(a, 0, sizeof *a);
    a->name = strdup(name); /* the model's strings change in the rewrite */
    a->share = -1;
    if (!a->name) {
        return -1;
    }
    return c->nacts++;
}

static int add_slot(qctx *c, int node, int input, int axis, int bias_of, int x_act) {
    slot *s = &c->slots[c->nslots];
    memset(s, 0, sizeof *s);
    s->node = node;
    s->input = input;
    s->axis = axis;
    s->bias_of = bias_of;
    s->x_act = x_act;
    s->orig = strdup(S(c->g->node[node]->input[input]));
    return c->nslots++;
}

static int keep_float(const qctx *c, const Onnx__NodeProto *n) {
    for (int i = 0; i < c->o->nkeep_float; i++) {
        const char *k = c->o->keep_float[i];
        if (!strcmp(S(n->name), k) || (n->n_output && !strcmp(S(n->output[0]), k))) {
            return 1;
        }
    }
    return 0;
}

/* Consumers of name among the graph's nodes (plus 1 per graph output). */
static int consumers(const qctx *c, const char *name, int *only) {
    int cnt = is_graph_output(c, name);
    for (size_t i = 0; i < c->g->n_node; i++) {
        for (size_t k = 0; k < c->g->node[i]->n_input; k++) {
            if (!strcmp(S(c->g->node[i]->input[k]), name)) {
                cnt++;
                *only = (int)i;
            }
        }
    }
    return cnt;
}

/* Plans node i: c->quant[i] set when quantized, its activations and slots recorded. */
static void plan_node(qctx *c, int i) {
    const Onnx__NodeProto *n = c->g->node[i];
    int k = c->kind[i];
    if (k == K_NONE || keep_float(c, n) || !n->n_output || !is_float_act(c, S(n->output[0]))) {
        return;
    }
    const char *x = n->n_input ? S(n->input[0]) : "";
    int save_acts = c->nacts, save_slots = c->nslots;
    if (k == K_CONV || k == K_MATMUL || k == K_GEMM) {
        if (n->n_input < 2 || !is_float_act(c, x)) {
            return;
        }
        int xa = want_act(c, x);
        if (xa < 0) {
            return;
        }
        const char *w = S(n->input[1]);
        const Onnx__TensorProto *wt = float_init(c, w);
        int ws = -1;
        if (wt && wt->n_dims >= 2) {
            int axis = k == K_CONV                   ? 0
                       : k == K_MATMUL               ? (int)wt->n_dims - 1
                       : attr_i(n, "transB", 0) != 0 ? 0
                                                     : 1;
            ws = add_slot(c, i, 1, c->o->per_tensor ? -1 : axis, -1, -1);
            c->slots[ws].channels = (int)wt->dims[axis];
        } else if (is_float_act(c, w) && k != K_CONV) {
            want_act(c, w);
        } else {
            c->nacts = save_acts;
            c->nslots = save_slots;
            return;
        }
        if (n->n_input > 2 && *S(n->input[2]) && ws >= 0) {
            const Onnx__TensorProto *bt = float_init(c, S(n->input[2]));
            int ok = bt && bt->n_dims == 1 && bt->dims[0] == c->slots[ws].channels;
            if (k == K_GEMM) {
                ok = ok && attr_f(n, "alpha", 1.0f) == 1.0f && attr_f(n, "beta", 1.0f) == 1.0f;
            }
            if (ok) {
                add_slot(c, i, 2, c->o->per_tensor ? -1 : 0, ws, xa);
            }
        }
    } else if (k == K_BINARY || k == K_CONCAT) {
        for (size_t j = 0; j < n->n_input; j++) {
            const char *in = S(n->input[j]);
            if (is_float_act(c, in)) {
                want_act(c, in);
            } else if (k == K_BINARY && float_init(c, in)) {
                add_slot(c, i, (int)j, -1, -1, -1);
            }
        }
    } else {
        if (!is_float_act(c, x) || (k == K_SHARE && n->n_output > 1 && *S(n->output[1]))) {
            return;
        }
        want_act(c, x);
    }
    int ya = want_act(c, S(n->output[0]));
    if (ya < 0) {
        c->nacts = save_acts;
        c->nslots = save_slots;
        return;
    }
    if (k == K_SHARE) {
        c->acts[ya].share = want_act(c, x);
    }
    c->quant[i] = 1;
}

/* A Relu/Clip that alone reads a quantized Conv/MatMul/Gemm: no pair between them. */
static void fuse_activations(qctx *c) {
    for (size_t i = 0; i < c->g->n_node; i++) {
        int k = c->kind[i];
        if (!c->quant[i] || (k != K_CONV && k != K_MATMUL && k != K_GEMM)) {
            continue;
        }
        const char *y = S(c->g->node[i]->output[0]);
        int only = -1;
        if (consumers(c, y, &only) != 1 || only < 0 || !c->quant[only]) {
            continue;
        }
        const char *op = S(c->g->node[only]->op_type);
        if (strcmp(op, "Relu") != 0 && strcmp(op, "Clip") != 0) {
            continue;
        }
        for (int a = 0; a < c->nacts; a++) {
            if (!strcmp(c->acts[a].name, y)) {
                c->acts[a].fused = 1;
            }
        }
    }
}

/* ---- new protobuf objects (malloc'd: the model frees them) ---- */

static Onnx__TensorProto *new_tensor(const char *name, int32_t type, int ndim, const int64_t *dims,
                                     const void *data, size_t nbytes) {
    Onnx__TensorProto *t = malloc(sizeof *t);
    if (!t) {
        return NULL;
    }
    onnx__tensor_proto__init(t);
    t->name = strdup(name);
    t->has_data_type = 1;
    t->data_type = type;
    t->n_dims = (size_t)ndim;
    t->dims = ndim ? malloc(sizeof(int64_t) * (size_t)ndim) : NULL;
    t->has_raw_data = 1;
    t->raw_data.len = nbytes;
    t->raw_data.data = malloc(nbytes ? nbytes : 1);
    if (!t->name || (ndim && !t->dims) || !t->raw_data.data) {
        onnx__tensor_proto__free_unpacked(t, NULL);
        return NULL;
    }
    if (ndim) {
        memcpy(t->dims, dims, sizeof(int64_t) * (size_t)ndim);
    }
    memcpy(t->raw_data.data, data, nbytes); /* little-endian, as raw_data is (x86, Arm) */
    return t;
}

static int push_init(qctx *c, Onnx__TensorProto *t) {
    if (!t) {
        return oom();
    }
    Onnx__TensorProto **a = realloc(c->g->initializer, sizeof *a * (c->g->n_initializer + 1));
    if (!a) {
        onnx__tensor_proto__free_unpacked(t, NULL);
        return oom();
    }
    c->g->initializer = a;
    a[c->g->n_initializer++] = t;
    return 0;
}

static int push_node(qctx *c, Onnx__NodeProto *n) {
    if (!n) {
        return oom();
    }
    if (c->nout_nodes == c->cap_nodes) {
        size_t cap = c->cap_nodes ? 2 * c->cap_nodes : 64;
        Onnx__NodeProto **a = realloc(c->out_nodes, sizeof *a * cap);
        if (!a) {
            onnx__node_proto__free_unpacked(n, NULL);
            return oom();
        }
        c->out_nodes = a;
        c->cap_nodes = cap;
    }
    c->out_nodes[c->nout_nodes++] = n;
    return 0;
}

/* op(in0, in1, in2) -> out, with an `axis` attribute when axis >= 0. Takes name/out. */
static Onnx__NodeProto *new_qdq(const char *op, char *name, const char *in0, const char *in1,
                                const char *in2, char *out, int axis) {
    Onnx__NodeProto *n = malloc(sizeof *n);
    if (!n) {
        free(name);
        free(out);
        return NULL;
    }
    onnx__node_proto__init(n);
    n->op_type = strdup(op);
    n->name = name;
    n->n_input = in2 ? 3 : 2;
    n->input = calloc(3, sizeof *n->input);
    n->n_output = 1;
    n->output = calloc(1, sizeof *n->output);
    int ok = n->op_type && name && n->input && n->output;
    if (ok) {
        n->output[0] = out;
        n->input[0] = strdup(in0);
        n->input[1] = strdup(in1);
        n->input[2] = in2 ? strdup(in2) : NULL;
        ok = n->input[0] && n->input[1] && (!in2 || n->input[2]);
    } else {
        free(out);
    }
    if (ok && axis >= 0) {
        n->attribute = calloc(1, sizeof *n->attribute);
        Onnx__AttributeProto *a = malloc(sizeof *a);
        if (n->attribute && a) {
            onnx__attribute_proto__init(a);
            a->name = strdup("axis");
            a->has_type = 1;
            a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
            a->has_i = 1;
            a->i = axis;
            n->attribute[0] = a;
            n->n_attribute = 1;
            ok = a->name != NULL;
        } else {
            free(a);
            ok = 0;
        }
    }
    if (!ok) {
        if (!n->input) {
            n->n_input = 0;
        }
        if (!n->output) {
            n->n_output = 0;
        }
        onnx__node_proto__free_unpacked(n, NULL);
        return NULL;
    }
    return n;
}

static int set_str(char **field, const char *v) {
    char *s = strdup(v);
    if (!s) {
        return oom();
    }
    free(*field);
    *field = s;
    return 0;
}

/* ---- weights ---- */

/* The float values of an initializer (malloc'd). */
static int init_values(const qctx *c, const char *name, float **out, size_t *n) {
    int k = find_init(c, name);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", c->path);
    char *sl = strrchr(dir, '/');
    if (sl) {
        *sl = 0;
    } else {
        snprintf(dir, sizeof dir, ".");
    }
    tether_onnx_tensor t;
    memset(&t, 0, sizeof t);
    int rc = tonnx_tensor_from_proto(c->g->initializer[k], name, dir, &t);
    if (rc) {
        return rc;
    }
    *out = t.data;
    *n = t.nbytes / sizeof(float);
    return 0;
}

/* Weights of slot s: int8 initializer, scales, zero points, the DequantizeLinear. */
static int write_weights(qctx *c, slot *s, size_t *fbytes, size_t *qbytes) {
    const Onnx__NodeProto *node = c->g->node[s->node];
    const char *w = S(node->input[s->input]);
    const Onnx__TensorProto *wt = c->g->initializer[find_init(c, w)];
    float *v;
    size_t n;
    int rc = init_values(c, w, &v, &n);
    if (rc) {
        return rc;
    }
    int ch = s->axis >= 0 ? s->channels : 1;
    size_t inner = 1, outer = 1;
    for (size_t d = 0; s->axis >= 0 && d < wt->n_dims; d++) {
        if ((int)d > s->axis) {
            inner *= (size_t)wt->dims[d];
        } else if ((int)d < s->axis) {
            outer *= (size_t)wt->dims[d];
        }
    }
    s->scales = calloc((size_t)ch, sizeof(float));
    int8_t *q = malloc(n ? n : 1), *zps = calloc((size_t)ch, 1);
    if (!s->scales || !q || !zps) {
        free(v);
        free(q);
        free(zps);
        return oom();
    }
    double *amax = calloc((size_t)ch, sizeof(double));
    for (size_t e = 0; amax && e < n; e++) {
        size_t cc = s->axis >= 0 ? (e / inner) % (size_t)ch : 0;
        amax[cc] = fabs(v[e]) > amax[cc] ? fabs(v[e]) : amax[cc];
    }
    for (int k = 0; amax && k < ch; k++) {
        float sc = (float)amax[k] / 127.0f;
        s->scales[k] = sc > 0 && isfinite(sc) ? sc : 1.0f;
    }
    for (size_t e = 0; amax && e < n; e++) {
        size_t cc = s->axis >= 0 ? (e / inner) % (size_t)ch : 0;
        double r = nearbyint((double)(v[e] / s->scales[cc]));
        q[e] = (int8_t)(r < -127 ? -127 : r > 127 ? 127 : r);
    }
    (void)outer;
    free(v);
    free(amax);
    char *qn = uniq(c, w, "_quantized"), *sn = uniq(c, w, "_scale"),
         *zn = uniq(c, w, "_zero_point");
    char *dn = uniq(c, w, "_DequantizeLinear"), *dq = uniq(c, w, "_DequantizeLinear_Output");
    int64_t cd = ch;
    rc = !qn || !sn || !zn || !dn || !dq ? TETHER_ERR_OUT_OF_MEMORY : 0;
    rc = rc ? rc
            : push_init(c, new_tensor(qn, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, (int)wt->n_dims,
                                      wt->dims, q, n));
    rc =
        rc ? rc
           : push_init(c, new_tensor(sn, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, s->axis >= 0 ? 1 : 0,
                                     &cd, s->scales, sizeof(float) * (size_t)ch));
    rc = rc ? rc
            : push_init(c, new_tensor(zn, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, s->axis >= 0 ? 1 : 0,
                                      &cd, zps, (size_t)ch));
    free(q);
    free(zps);
    if (!rc) {
        s->out = strdup(dq);
        rc =
            s->out ? push_node(c, new_qdq("DequantizeLinear", dn, qn, sn, zn, dq, s->axis)) : oom();
        dn = dq = NULL;
    }
    *fbytes += n * 4;
    *qbytes += n + (size_t)ch * 5;
    free(qn);
    free(sn);
    free(zn);
    free(dn);
    free(dq);
    return rc ? (rc < 0 ? rc : oom()) : 0;
}

/* An int32 bias at x_scale * w_scale[c], zero point 0. */
static int write_bias(qctx *c, slot *s, size_t *fbytes, size_t *qbytes) {
    const Onnx__NodeProto *node = c->g->node[s->node];
    const char *b = S(node->input[s->input]);
    const slot *ws = &c->slots[s->bias_of];
    const act *xa = &c->acts[c->acts[s->x_act].share >= 0 ? c->acts[s->x_act].share : s->x_act];
    float *v;
    size_t n;
    int rc = init_values(c, b, &v, &n);
    if (rc) {
        return rc;
    }
    int32_t *q = malloc(sizeof(int32_t) * (n ? n : 1));
    float *sc = malloc(sizeof(float) * (n ? n : 1));
    if (!q || !sc) {
        free(v);
        free(q);
        free(sc);
        return oom();
    }
    for (size_t e = 0; e < n; e++) {
        float ws_e = ws->scales[ws->axis >= 0 ? e : 0];
        sc[e] = xa->scale * ws_e; /* float32, as ONNX Runtime computes it */
        double r = nearbyint((double)v[e] / (double)sc[e]);
        q[e] = (int32_t)(r < -2147483647.0 ? -2147483647.0 : r > 2147483647.0 ? 2147483647.0 : r);
    }
    free(v);
    int per = s->axis >= 0;
    int64_t d = (int64_t)n;
    char *qn = uniq(c, b, "_quantized"), *sn = uniq(c, b, "_scale");
    char *dn = uniq(c, b, "_DequantizeLinear"), *dq = uniq(c, b, "_DequantizeLinear_Output");
    rc = !qn || !sn || !dn || !dq ? TETHER_ERR_OUT_OF_MEMORY : 0;
    rc = rc ? rc
            : push_init(c, new_tensor(qn, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 1, &d, q,
                                      sizeof(int32_t) * n));
    rc = rc ? rc
            : push_init(c, new_tensor(sn, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, per ? 1 : 0, &d, sc,
                                      sizeof(float) * (per ? n : 1)));
    free(q);
    free(sc);
    if (!rc) {
        s->out = strdup(dq);
        rc = s->out ? push_node(c, new_qdq("DequantizeLinear", dn, qn, sn, NULL, dq, per ? 0 : -1))
                    : oom();
        dn = dq = NULL;
    }
    *fbytes += n * 4;
    *qbytes += n * 4 + (per ? n : 1) * 4;
    free(qn);
    free(sn);
    free(dn);
    free(dq);
    return rc ? (rc < 0 ? rc : oom()) : 0;
}

/* ---- activations ---- */

static const act *params_of(const qctx *c, const act *a) {
    return a->share >= 0 ? &c->acts[a->share] : a;
}

/* Names the pair of act a: a graph output produced by a node keeps its name on the
 * DequantizeLinear (the producer writes NAME_float); otherwise every consumer is rewired to the
 * DequantizeLinear's output. */
static int name_act(qctx *c, act *a, char **qin) {
    int producer = -1;
    for (size_t i = 0; i < c->g->n_node && producer < 0; i++) {
        for (size_t k = 0; k < c->g->node[i]->n_output; k++) {
            if (!strcmp(S(c->g->node[i]->output[k]), a->name)) {
                producer = (int)i;
            }
        }
    }
    if (producer >= 0 && is_graph_output(c, a->name)) {
        char *f = uniq(c, a->name, "_float");
        a->dq = strdup(a->name);
        if (!f || !a->dq) {
            free(f);
            return oom();
        }
        Onnx__NodeProto *p = c->g->node[producer];
        for (size_t k = 0; k < p->n_output; k++) {
            if (!strcmp(S(p->output[k]), a->name)) {
                free(p->output[k]);
                p->output[k] = f;
                break;
            }
        }
        *qin = strdup(f);
        return *qin ? 0 : oom();
    }
    a->dq = uniq(c, a->name, "_DequantizeLinear_Output");
    *qin = strdup(a->name);
    if (!a->dq || !*qin) {
        return oom();
    }
    for (size_t i = 0; i < c->g->n_node; i++) {
        Onnx__NodeProto *n = c->g->node[i];
        for (size_t k = 0; k < n->n_input; k++) {
            if (!strcmp(S(n->input[k]), a->name) && set_str(&n->input[k], a->dq)) {
                return oom();
            }
        }
    }
    return 0;
}

static int emit_act(qctx *c, act *a, const char *qin) {
    const act *p = params_of(c, a);
    int u8 = c->o->uint8_activations;
    uint8_t zb = u8 ? (uint8_t)p->zp : (uint8_t)(int8_t)p->zp;
    char *sn = uniq(c, a->name, "_scale"), *zn = uniq(c, a->name, "_zero_point");
    char *qn = uniq(c, a->name, "_QuantizeLinear"),
         *qo = uniq(c, a->name, "_QuantizeLinear_Output");
    char *dn = uniq(c, a->name, "_DequantizeLinear"), *dq = strdup(a->dq);
    int rc = !sn || !zn || !qn || !qo || !dn || !dq ? oom() : 0;
    rc = rc ? rc
            : push_init(c, new_tensor(sn, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL, &p->scale,
                                      sizeof(float)));
    rc = rc ? rc
            : push_init(c, new_tensor(zn,
                                      u8 ? ONNX__TENSOR_PROTO__DATA_TYPE__UINT8
                                         : ONNX__TENSOR_PROTO__DATA_TYPE__INT8,
                                      0, NULL, &zb, 1));
    if (!rc) {
        rc = push_node(c, new_qdq("QuantizeLinear", qn, qin, sn, zn, strdup(qo), -1));
        qn = NULL;
    }
    if (!rc) {
        rc = push_node(c, new_qdq("DequantizeLinear", dn, qo, sn, zn, dq, -1));
        dn = dq = NULL;
    }
    free(sn);
    free(zn);
    free(qn);
    free(qo);
    free(dn);
    free(dq);
    return rc;
}

/* Replaces the node list by the quantized one and drops the float initializers no one reads. */
int tq_rewrite(qctx *c, tether_onnx_quantize_result *r) {
    char **qin = calloc((size_t)c->nacts + 1, sizeof *qin);
    int rc = qin ? 0 : oom();
    for (int a = 0; !rc && a < c->nacts; a++) {
        if (!c->acts[a].fused) {
            rc = name_act(c, &c->acts[a], &qin[a]);
        }
    }
    for (int a = 0; !rc && a < c->nacts; a++) { /* graph inputs: pairs first */
        if (!c->acts[a].fused && tether_ir_find_tensor(&c->gf, c->acts[a].name) >= 0 &&
            c->gf.tensors[tether_ir_find_tensor(&c->gf, c->acts[a].name)].kind ==
                TETHER_TENSOR_INPUT) {
            rc = emit_act(c, &c->acts[a], qin[a]);
        }
    }
    for (size_t i = 0; !rc && i < c->g->n_node; i++) {
        Onnx__NodeProto *n = c->g->node[i];
        for (int s = 0; !rc && s < c->nslots; s++) {
            slot *sl = &c->slots[s];
            if (sl->node != (int)i) {
                continue;
            }
            rc = sl->bias_of >= 0
                     ? write_bias(c, sl, &r->float_weight_bytes, &r->quant_weight_bytes)
                     : write_weights(c, sl, &r->float_weight_bytes, &r->quant_weight_bytes);
        }
        for (int s = 0; !rc && s < c->nslots; s++) { /* after every slot read the old names */
            if (c->slots[s].node == (int)i) {
                rc = set_str(&n->input[c->slots[s].input], c->slots[s].out);
            }
        }
        rc = rc ? rc : push_node(c, n);
        for (size_t k = 0; !rc && k < n->n_output; k++) {
            for (int a = 0; !rc && a < c->nacts; a++) {
                if (!c->acts[a].fused && qin[a] &&
                    (!strcmp(S(n->output[k]), c->acts[a].name) ||
                     !strcmp(S(n->output[k]), qin[a])) &&
                    strcmp(c->acts[a].dq, S(n->output[k])) != 0) {
                    rc = emit_act(c, &c->acts[a], qin[a]);
                }
            }
        }
    }
    for (int a = 0; a < c->nacts; a++) {
        free(qin[a]);
    }
    free(qin);
    if (rc) {
        return rc;
    }
    free(c->g->node);
    c->g->node = c->out_nodes;
    c->g->n_node = c->nout_nodes;
    c->out_nodes = NULL;
    c->nout_nodes = c->cap_nodes = 0;
    /* float initializers replaced and read by no one any more */
    for (size_t i = 0; !c->subgraphs && i < c->g->n_initializer;) {
        const char *nm = S(c->g->initializer[i]->name);
        int replaced = 0, used = is_graph_output(c, nm);
        for (int s = 0; s < c->nslots && !replaced; s++) {
            replaced = c->slots[s].out && c->slots[s].orig && !strcmp(c->slots[s].orig, nm);
        }
        for (size_t k = 0; replaced && !used && k < c->g->n_node; k++) {
            for (size_t j = 0; j < c->g->node[k]->n_input && !used; j++) {
                used = !strcmp(S(c->g->node[k]->input[j]), nm);
            }
        }
        if (!replaced || used) {
            i++;
            continue;
        }
        for (size_t k = 0; k < c->g->n_input; k++) { /* an initializer listed as an input */
            if (!strcmp(S(c->g->input[k]->name), nm)) {
                onnx__value_info_proto__free_unpacked(c->g->input[k], NULL);
                memmove(&c->g->input[k], &c->g->input[k + 1],
                        sizeof *c->g->input * (c->g->n_input - k - 1));
                c->g->n_input--;
                break;
            }
        }
        onnx__tensor_proto__free_unpacked(c->g->initializer[i], NULL);
        memmove(&c->g->initializer[i], &c->g->initializer[i + 1],
                sizeof *c->g->initializer * (c->g->n_initializer - i - 1));
        c->g->n_initializer--;
    }
    return 0;
}

void tq_plan(qctx *c) {
    for (size_t i = 0; i < c->g->n_node; i++) {
        c->kind[i] = op_kind(c->g->node[i]);
        for (size_t k = 0; k < c->g->node[i]->n_attribute; k++) {
            Onnx__AttributeProto__AttributeType t = c->g->node[i]->attribute[k]->type;
            c->subgraphs |= t == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ||
                            t == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
        }
    }
    for (size_t i = 0; i < c->g->n_node; i++) {
        plan_node(c, (int)i);
    }
    fuse_activations(c);
}

int tq_name_add(qctx *c, const char *s) {
    return name_add(c, s);
}
