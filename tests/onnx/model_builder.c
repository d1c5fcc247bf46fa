/*
 * In-memory ONNX models for the tests (see model_builder.h). Every allocation goes to the
 * builder's arena; protobuf-c only packs what it is given.
 */
#include "model_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *A(mb *b, size_t n) {
    if (b->narena >= (int)(sizeof b->arena / sizeof *b->arena)) {
        fprintf(stderr, "model builder: arena full\n");
        abort();
    }
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        abort();
    }
    b->arena[b->narena++] = p;
    return p;
}

static char *S(mb *b, const char *s) {
    char *d = A(b, strlen(s) + 1);
    strcpy(d, s);
    return d;
}

void mb_init(mb *b, int opset) {
    memset(b, 0, sizeof *b);
    onnx__model_proto__init(&b->m);
    onnx__graph_proto__init(&b->g);
    onnx__operator_set_id_proto__init(&b->opset);
    b->opset.domain = S(b, "");
    b->opset.has_version = 1;
    b->opset.version = opset;
    b->opsets[0] = &b->opset;
    b->m.opset_import = b->opsets;
    b->m.n_opset_import = 1;
    b->m.has_ir_version = 1;
    b->m.ir_version = 8;
    b->m.producer_name = S(b, "tether-test");
    b->m.graph = &b->g;
    b->g.name = S(b, "test_graph");
    b->g.node = b->nodes;
    b->g.initializer = b->inits;
    b->g.input = b->inputs;
    b->g.output = b->outputs;
}

void mb_free(mb *b) {
    for (int i = 0; i < b->narena; i++) {
        free(b->arena[i]);
    }
    b->narena = 0;
}

void mb_opset(mb *b, const char *domain, int version) {
    Onnx__OperatorSetIdProto *o = A(b, sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = S(b, domain);
    o->has_version = 1;
    o->version = version;
    b->opsets[b->m.n_opset_import++] = o;
}

/* Splits "a,b,,c" into a string array. */
static char **split(mb *b, const char *list, size_t *n) {
    *n = 0;
    if (!list || !list[0]) {
        return NULL;
    }
    size_t cnt = 1;
    for (const char *p = list; *p; p++) {
        cnt += *p == ',';
    }
    char **arr = A(b, sizeof(char *) * cnt);
    const char *p = list;
    for (size_t i = 0; i < cnt; i++) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        arr[i] = A(b, l + 1);
        memcpy(arr[i], p, l);
        p = e ? e + 1 : p + l;
    }
    *n = cnt;
    return arr;
}

Onnx__NodeProto *mb_node(mb *b, const char *op, const char *name, const char *ins,
                         const char *outs) {
    Onnx__NodeProto *n = A(b, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = S(b, op);
    n->name = S(b, name ? name : "");
    n->input = split(b, ins, &n->n_input);
    n->output = split(b, outs, &n->n_output);
    n->attribute = A(b, sizeof(Onnx__AttributeProto *) * 16);
    if (b->g.n_node >= MB_MAX) {
        fprintf(stderr, "model builder: more than %d nodes\n", MB_MAX);
        abort();
    }
    b->nodes[b->g.n_node++] = n;
    return n;
}

void mb_domain(mb *b, Onnx__NodeProto *n, const char *domain) {
    n->domain = S(b, domain);
}

static Onnx__AttributeProto *attr(mb *b, Onnx__NodeProto *n, const char *name,
                                  Onnx__AttributeProto__AttributeType t) {
    Onnx__AttributeProto *a = A(b, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = S(b, name);
    a->has_type = 1;
    a->type = t;
    n->attribute[n->n_attribute++] = a;
    return a;
}

void mb_attr_g(mb *b, Onnx__NodeProto *n, const char *name, mb *sub) {
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = &sub->g;
}

void mb_attr_i(mb *b, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

void mb_attr_f(mb *b, Onnx__NodeProto *n, const char *name, float v) {
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

void mb_attr_ints(mb *b, Onnx__NodeProto *n, const char *name, int count, const int64_t *v) {
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)count;
    a->ints = A(b, sizeof(int64_t) * (size_t)(count ? count : 1));
    memcpy(a->ints, v, sizeof(int64_t) * (size_t)count);
}

void mb_attr_floats(mb *b, Onnx__NodeProto *n, const char *name, int count, const float *v) {
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = (size_t)count;
    a->floats = A(b, sizeof(float) * (size_t)(count ? count : 1));
    memcpy(a->floats, v, sizeof(float) * (size_t)count);
}

void mb_attr_s(mb *b, Onnx__NodeProto *n, const char *name, const char *v) {
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.data = (uint8_t *)S(b, v);
    a->s.len = strlen(v);
}

void mb_attr_strs(mb *b, Onnx__NodeProto *n, const char *name, int count, const char *const *v) {
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    a->n_strings = (size_t)count;
    a->strings = A(b, sizeof *a->strings * (size_t)(count ? count : 1));
    for (int i = 0; i < count; i++) {
        a->strings[i].data = (uint8_t *)S(b, v[i]);
        a->strings[i].len = strlen(v[i]);
    }
}

void mb_attr_t(mb *b, Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t) {
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = t;
}

static Onnx__TensorProto *tensor(mb *b, const char *name, int ndim, const int64_t *dims,
                                 int32_t type) {
    Onnx__TensorProto *t = A(b, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = S(b, name);
    t->has_data_type = 1;
    t->data_type = type;
    t->n_dims = (size_t)ndim;
    t->dims = A(b, sizeof(int64_t) * (size_t)(ndim ? ndim : 1));
    if (ndim) {
        memcpy(t->dims, dims, sizeof(int64_t) * (size_t)ndim);
    }
    return t;
}

static size_t count_of(int ndim, const int64_t *dims) {
    size_t c = 1;
    for (int i = 0; i < ndim; i++) {
        c *= (size_t)dims[i];
    }
    return c;
}

Onnx__TensorProto *mb_tensor_f(mb *b, const char *name, int ndim, const int64_t *dims,
                               const float *v, int raw) {
    Onnx__TensorProto *t = tensor(b, name, ndim, dims, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    size_t c = count_of(ndim, dims);
    if (raw) {
        t->has_raw_data = 1;
        t->raw_data.len = c * sizeof(float);
        t->raw_data.data = A(b, c * sizeof(float));
        memcpy(t->raw_data.data, v, c * sizeof(float));
    } else {
        t->n_float_data = c;
        t->float_data = A(b, sizeof(float) * (c ? c : 1));
        memcpy(t->float_data, v, sizeof(float) * c);
    }
    return t;
}

Onnx__TensorProto *mb_tensor_i64(mb *b, const char *name, int ndim, const int64_t *dims,
                                 const int64_t *v) {
    Onnx__TensorProto *t = tensor(b, name, ndim, dims, ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
    size_t c = count_of(ndim, dims);
    t->n_int64_data = c;
    t->int64_data = A(b, sizeof(int64_t) * (c ? c : 1));
    memcpy(t->int64_data, v, sizeof(int64_t) * c);
    return t;
}

Onnx__TensorProto *mb_tensor_raw(mb *b, const char *name, int32_t type, int ndim,
                                 const int64_t *dims, const void *v, size_t elem_bytes) {
    Onnx__TensorProto *t = tensor(b, name, ndim, dims, type);
    size_t c = count_of(ndim, dims) * elem_bytes;
    t->has_raw_data = 1;
    t->raw_data.len = c;
    t->raw_data.data = A(b, c ? c : 1);
    memcpy(t->raw_data.data, v, c);
    return t;
}

void mb_init_tensor(mb *b, Onnx__TensorProto *t) {
    if (b->g.n_initializer >= MB_MAX) {
        fprintf(stderr, "model builder: more than %d initializers\n", MB_MAX);
        abort();
    }
    b->inits[b->g.n_initializer++] = t;
}

static Onnx__ValueInfoProto *value_info(mb *b, const char *name, int elem, int ndim,
                                        const int64_t *dims) {
    Onnx__ValueInfoProto *v = A(b, sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = S(b, name);
    Onnx__TypeProto *tp = A(b, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = A(b, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    if (ndim >= 0) {
        Onnx__TensorShapeProto *sp = A(b, sizeof *sp);
        onnx__tensor_shape_proto__init(sp);
        sp->n_dim = (size_t)ndim;
        sp->dim = A(b, sizeof(Onnx__TensorShapeProto__Dimension *) * (size_t)(ndim ? ndim : 1));
        for (int i = 0; i < ndim; i++) {
            Onnx__TensorShapeProto__Dimension *d = A(b, sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            if (dims[i] < 0) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = S(b, "N");
            } else {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = dims[i];
            }
            sp->dim[i] = d;
        }
        tt->shape = sp;
    }
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->type = tp;
    return v;
}

void mb_input(mb *b, const char *name, int elem, int ndim, const int64_t *dims) {
    b->inputs[b->g.n_input++] = value_info(b, name, elem, ndim, dims);
}

void mb_output(mb *b, const char *name, int elem) {
    b->outputs[b->g.n_output++] = value_info(b, name, elem, -1, NULL);
}

uint8_t *mb_pack(mb *b, size_t *len) {
    *len = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = malloc(*len ? *len : 1);
    if (!buf) {
        abort();
    }
    onnx__model_proto__pack(&b->m, buf);
    return buf;
}

void mb_write(mb *b, const char *path) {
    size_t len;
    uint8_t *buf = mb_pack(b, &len);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len) {
        fprintf(stderr, "cannot write %s\n", path);
        abort();
    }
    fclose(f);
    free(buf);
}
