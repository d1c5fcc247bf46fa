/*
 * The ONNX importer's services to the converters (convert.c) and the host evaluation
 * (host_eval.c): host constants (tonnx_hconst_new, the host budget), attributes of the current
 * node (tonnx_attr_*), the graph inputs' shapes (given or from the model), and the IR tensors and
 * nodes a converter reads and adds (tonnx_in_tensor, tonnx_in_const, tonnx_out_tensor,
 * tonnx_temp_tensor, tonnx_const_tensor, tonnx_emit). The import's structure (names, values,
 * order, support scan) and the entry points are import.c's.
 *
 * What must stay true: host constants stay within the import's budget (a model cannot make the
 * importer allocate what its bytes do not hold); an attribute of the wrong type is an error
 * naming it; a graph input without a shape (in the model or given) is an error saying how to give
 * it; every name a converter adds is unique in the graph.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* ---- host constants -------------------------------------------------------------------- */

hconst *tonnx_hconst_new(timport *c, bool is_int, int ndim, const int64_t *shape) {
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] && count > (size_t)INT32_MAX / (size_t)shape[i])) {
            tether_set_error(TETHER_ERR_LIMIT, "%s: constant too large", c->source);
            return NULL;
        }
        count *= (size_t)shape[i];
    }
    size_t bytes = (count ? count : 1) * (is_int ? sizeof(int64_t) : sizeof(float));
    if (bytes > c->host_limit - c->host_bytes) {
        char shape_text[120] = "";
        for (int i = 0; i < ndim && strlen(shape_text) < 90; i++) {
            snprintf(shape_text + strlen(shape_text), sizeof shape_text - strlen(shape_text),
                     "%s%lld", i ? "," : "", (long long)shape[i]);
        }
        tonnx_fail(c, TETHER_ERR_LIMIT,
                   "a constant of shape [%s] (%zu bytes) would take the values known at import "
                   "time past %zu bytes, more than a model of this size can hold",
                   shape_text, bytes, c->host_limit);
        return NULL;
    }
    hconst *k = calloc(1, sizeof *k);
    void *data = k ? calloc(count ? count : 1, is_int ? sizeof(int64_t) : sizeof(float)) : NULL;
    if (!data) {
        free(k);
        tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", c->source);
        return NULL;
    }
    k->is_int = is_int;
    k->ndim = ndim;
    if (ndim) {
        memcpy(k->shape, shape, sizeof(int64_t) * (size_t)ndim);
    }
    k->count = count;
    k->data = data;
    k->dt = is_int ? TETHER_INT64 : TETHER_FLOAT32;
    c->host_bytes += bytes;
    k->next_owned = c->owned;
    c->owned = k;
    return k;
}

void tonnx_host_allow(timport *c, size_t count, bool is_int) {
    size_t add = (count ? count : 1) * (is_int ? sizeof(int64_t) : sizeof(float));
    c->host_limit = add > SIZE_MAX - c->host_limit ? SIZE_MAX : c->host_limit + add;
}

/* A host constant from any host tensor (read from bytes that are present: an initializer or a
 * value the caller binds, so it raises the limit by its size): integer/bool types become int64,
 * floats (float16/bfloat16 given as their bit patterns) float32. */
int tonnx_hconst_from(timport *c, DLDataType dt, int ndim, const int64_t *shape, const void *data,
                      size_t nbytes, const char *what, hconst **out) {
    bool is_half = (dt.code == kDLFloat || dt.code == kDLBfloat) && dt.bits == 16;
    if (dt.code == kDLUInt && dt.bits == 1) {
        dt.bits = 8; /* bool (TETHER_BOOL): one byte 0/1 */
    }
    bool is_int = dt.code != kDLFloat && !is_half;
    if (!(dt.code == kDLFloat && (dt.bits == 32 || dt.bits == 64)) && !is_half &&
        !((dt.code == kDLInt || dt.code == kDLUInt) &&
          (dt.bits == 8 || dt.bits == 16 || dt.bits == 32 || dt.bits == 64)) &&
        !(dt.code == 6 /* kDLBool in newer DLPack */ && dt.bits == 8)) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "%s: value of '%s' has an unsupported dtype", c->source, what);
    }
    if (ndim < 0 || ndim > TETHER_IR_MAX_NDIM) {
        return tether_set_error(TETHER_ERR_LIMIT, "%s: value of '%s' has rank %d", c->source, what,
                                ndim);
    }
    size_t es = dt.bits / 8;
    tonnx_host_allow(c, nbytes / es, is_int);
    hconst *k = tonnx_hconst_new(c, is_int, ndim, shape);
    if (!k) {
        return tether_last_status();
    }
    k->dt = dt.code == 6 ? TETHER_BOOL : dt;
    if (nbytes != k->count * es || (!data && nbytes)) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "%s: value of '%s' has %zu bytes, its shape needs %zu", c->source,
                                what, nbytes, k->count * es);
    }
    for (size_t i = 0; i < k->count; i++) {
        const uint8_t *p = (const uint8_t *)data + i * es;
        if (is_half) {
            uint16_t h;
            memcpy(&h, p, 2);
            ((float *)k->data)[i] =
                dt.code == kDLBfloat ? tonnx_bf16_to_float(h) : tonnx_half_to_float(h);
            continue;
        }
        if (dt.code == kDLFloat) {
            float f;
            if (dt.bits == 32) {
                memcpy(&f, p, 4);
            } else {
                double d;
                memcpy(&d, p, 8);
                f = (float)d;
            }
            ((float *)k->data)[i] = f;
            continue;
        }
        int64_t x = 0;
        bool sgn = dt.code == kDLInt;
        switch (dt.bits) {
        case 8:
            x = sgn ? (int64_t)(int8_t)p[0] : (int64_t)p[0];
            break;
        case 16: {
            uint16_t u;
            memcpy(&u, p, 2);
            x = sgn ? (int64_t)(int16_t)u : (int64_t)u;
            break;
        }
        case 32: {
            uint32_t u;
            memcpy(&u, p, 4);
            x = sgn ? (int64_t)(int32_t)u : (int64_t)u;
            break;
        }
        default:
            memcpy(&x, p, 8);
            break;
        }
        ((int64_t *)k->data)[i] = x;
    }
    *out = k;
    return TETHER_OK;
}

/* ---- attributes ------------------------------------------------------------------------ */

const Onnx__AttributeProto *tonnx_attr(const Onnx__NodeProto *n, const char *name) {
    for (size_t i = 0; i < n->n_attribute; i++) {
        if (strcmp(S(n->attribute[i]->name), name) == 0) {
            return n->attribute[i];
        }
    }
    return NULL;
}

static bool attr_is(const Onnx__AttributeProto *a, Onnx__AttributeProto__AttributeType t,
                    bool present) {
    return a->has_type ? a->type == t : present;
}

int tonnx_attr_int(timport *c, const char *name, int64_t def, int64_t *out) {
    const Onnx__AttributeProto *a = tonnx_attr(c->gp->node[c->cur], name);
    *out = def;
    if (!a) {
        return TETHER_OK;
    }
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, a->has_i)) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute '%s' must be an int", name);
    }
    *out = a->i;
    return TETHER_OK;
}

int tonnx_attr_float(timport *c, const char *name, float def, float *out) {
    const Onnx__AttributeProto *a = tonnx_attr(c->gp->node[c->cur], name);
    *out = def;
    if (!a) {
        return TETHER_OK;
    }
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, a->has_f)) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute '%s' must be a float", name);
    }
    *out = a->f;
    return TETHER_OK;
}

int tonnx_attr_ints(timport *c, const char *name, int64_t *out, int max, int *count) {
    const Onnx__AttributeProto *a = tonnx_attr(c->gp->node[c->cur], name);
    *count = -1;
    if (!a) {
        return TETHER_OK;
    }
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, true)) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute '%s' must be a list of ints", name);
    }
    if (a->n_ints > (size_t)max) {
        return tonnx_fail(c, TETHER_ERR_LIMIT, "attribute '%s' has %zu entries (at most %d)", name,
                          a->n_ints, max);
    }
    for (size_t i = 0; i < a->n_ints; i++) {
        out[i] = a->ints[i];
    }
    *count = (int)a->n_ints;
    return TETHER_OK;
}

int tonnx_attr_string(timport *c, const char *name, const char *def, char *out, size_t n) {
    const Onnx__AttributeProto *a = tonnx_attr(c->gp->node[c->cur], name);
    snprintf(out, n, "%s", def);
    if (!a) {
        return TETHER_OK;
    }
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, a->has_s)) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute '%s' must be a string", name);
    }
    if (a->s.len >= n || (a->s.len && memchr(a->s.data, 0, a->s.len))) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute '%s' is not a short string", name);
    }
    if (a->s.len) {
        memcpy(out, a->s.data, a->s.len);
    }
    out[a->s.len] = 0;
    return TETHER_OK;
}

/* ---- graph inputs ---------------------------------------------------------------------- */

static const tether_model_input_shape *given_shape(const timport *c, const char *name) {
    for (int i = 0; c->o && i < c->o->ninput_shapes; i++) {
        if (strcmp(c->o->input_shapes[i].name, name) == 0) {
            return &c->o->input_shapes[i];
        }
    }
    return NULL;
}

static void shape_hint(const Onnx__TensorShapeProto *sp, char *buf, size_t n) {
    size_t o = 0;
    buf[0] = 0;
    for (size_t i = 0; sp && i < sp->n_dim && o + 24 < n; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
        long long v = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                              d->dim_value > 0
                          ? (long long)d->dim_value
                          : 1;
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "x" : "", v);
    }
}

int tonnx_onnx_dtype(int32_t t, DLDataType *out) {
    static const struct {
        int32_t onnx;
        DLDataType dl;
    } map[] = {
        {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, {kDLFloat, 32, 1}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, {kDLUInt, 8, 1}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__INT8, {kDLInt, 8, 1}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__UINT16, {kDLUInt, 16, 1}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__INT16, {kDLInt, 16, 1}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__INT32, {kDLInt, 32, 1}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__INT64, {kDLInt, 64, 1}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, {kDLUInt, 1, 1}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, {kDLFloat, 16, 1}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, {kDLFloat, 64, 1}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__UINT32, {kDLUInt, 32, 1}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__UINT64, {kDLUInt, 64, 1}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16, {kDLBfloat, 16, 1}},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        if (map[i].onnx == t) {
            *out = map[i].dl;
            return 1;
        }
    }
    return 0;
}

/* Shape of real graph input k: from --input-shape, else the model's static shape. */
static int input_shape(timport *c, int k, int *ndim, int64_t *shape, DLDataType *dtype) {
    const Onnx__ValueInfoProto *vi = c->input_info[k];
    const char *name = S(vi->name);
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "graph input '%s' is not a tensor (sequences, maps and optionals are "
                          "not supported)",
                          name);
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    char tn[32];
    if (!tt->has_elem_type || !tonnx_onnx_dtype(tt->elem_type, dtype)) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "graph input '%s' has element type %s; run-time inputs are bool, "
                          "int8..int64, uint8..uint64, float16, bfloat16, float32 or float64",
                          name,
                          tonnx_dtype_name(tt->has_elem_type ? tt->elem_type : 0, tn, sizeof tn));
    }
    const Onnx__TensorShapeProto *sp = tt->shape;
    const tether_model_input_shape *given = given_shape(c, name);
    char hint[200];
    if (given) {
        if (sp && (int)sp->n_dim != given->ndim) {
            return tonnx_fail(c, TETHER_ERR_MISMATCH,
                              "graph input '%s' has rank %zu; --input-shape gives rank %d", name,
                              sp->n_dim, given->ndim);
        }
        for (int i = 0; sp && i < given->ndim; i++) {
            const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
            if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                d->dim_value > 0 && d->dim_value != given->shape[i]) {
                return tonnx_fail(c, TETHER_ERR_MISMATCH,
                                  "graph input '%s': dimension %d is %lld in the model; "
                                  "--input-shape gives %lld",
                                  name, i, (long long)d->dim_value, (long long)given->shape[i]);
            }
        }
        *ndim = given->ndim;
        memcpy(shape, given->shape, sizeof(int64_t) * (size_t)given->ndim);
        return TETHER_OK;
    }
    if (!sp) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "graph input '%s' has no shape in the model: give it with "
                          "--input-shape %s=D0xD1x...",
                          name, name);
    }
    if (sp->n_dim > TETHER_IR_MAX_NDIM) {
        return tonnx_fail(c, TETHER_ERR_LIMIT, "graph input '%s' has rank %zu (at most %d)", name,
                          sp->n_dim, TETHER_IR_MAX_NDIM);
    }
    for (size_t i = 0; i < sp->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            d->dim_value < 0) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "graph input '%s' has a negative dimension %zu (%lld)", name, i,
                              (long long)d->dim_value);
        }
        if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            shape_hint(sp, hint, sizeof hint);
            char what[96] = "";
            if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
                snprintf(what, sizeof what, " ('%.60s')", S(d->dim_param));
            }
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "graph input '%s' has a dynamic dimension %zu%s: fix it with "
                              "--input-shape, e.g. --input-shape %s=%s",
                              name, i, what, name, hint);
        }
        shape[i] = d->dim_value; /* 0: an empty tensor */
    }
    *ndim = (int)sp->n_dim;
    return TETHER_OK;
}

/* ---- services for the converters ------------------------------------------------------- */

static const char *in_name(const timport *c, int i) {
    const Onnx__NodeProto *n = c->gp->node[c->cur];
    return i < (int)n->n_input ? S(n->input[i]) : "";
}

/* Whether host constant k has an ONNX type of its own (int32, bool, float64, ...) that its IR
 * constant takes (else float32 or int64). */
static bool typed_const(const hconst *k) {
    DLDataType kdt = k->dt;
    bool kflt = kdt.code == kDLFloat && (kdt.bits == 32 || kdt.bits == 64);
    bool kint = (kdt.code == kDLInt || kdt.code == kDLUInt) && tether_dtype_bytes(kdt) > 0;
    return kdt.lanes == 1 && (k->is_int ? kint : kflt);
}

/* The IR constant `name` of host constant k in its ONNX type (typed_const). */
static int typed_constant(timport *c, const char *name, const hconst *k, int *t) {
    int rc;
    size_t es = tether_dtype_bytes(k->dt);
    unsigned char *buf = calloc(k->count ? k->count : 1, es);
    if (!buf) {
        return tonnx_fail(c, TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < k->count; i++) {
        int64_t iv = k->is_int ? ((const int64_t *)k->data)[i] : 0;
        if (k->dt.code == kDLUInt && k->dt.bits == 1) {
            buf[i] = iv != 0;
        } else if (k->is_int) {
            memcpy(buf + i * es, &iv, es); /* the low bytes: little-endian hosts */
        } else if (k->dt.bits == 64) {
            double d = ((const float *)k->data)[i];
            memcpy(buf + i * es, &d, es);
        } else {
            memcpy(buf + i * es, (const float *)k->data + i, es);
        }
    }
    rc = tether_ir_add_constant(c->g, name, k->dt, k->ndim, k->shape, buf, k->count * es, t);
    free(buf);
    return rc ? tonnx_wrap(c, rc) : TETHER_OK;
}

int tonnx_ensure_tensor(timport *c, int vi, const char *role) {
    value *v = &c->v[vi];
    if (v->tensor >= 0) {
        return TETHER_OK;
    }
    int rc;
    char name[400];
    snprintf(name, sizeof name, "%s%s", c->prefix ? c->prefix : "", v->name);
    if (v->k && typed_const(v->k)) {
        return typed_constant(c, name, v->k, &v->tensor);
    }
    if (v->k) { /* a host constant: float32 or int64 (an integer one stays int64) */
        rc = tether_ir_add_constant(
            c->g, name, v->k->is_int ? TETHER_INT64 : TETHER_FLOAT32, v->k->ndim, v->k->shape,
            v->k->data, v->k->count * (v->k->is_int ? sizeof(int64_t) : sizeof(float)), &v->tensor);
        return rc ? tonnx_wrap(c, rc) : TETHER_OK;
    }
    if (v->input >= 0) {
        int ndim = 0;
        int64_t shape[TETHER_IR_MAX_NDIM];
        int save = c->cur;
        c->cur = -1; /* input errors name the input, not the node */
        DLDataType dt = TETHER_FLOAT32;
        rc = input_shape(c, v->input, &ndim, shape, &dt);
        c->cur = save;
        if (rc) {
            return rc;
        }
        rc = tether_ir_add_tensor(c->g, name, dt, ndim, shape, &v->tensor);
        return rc ? tonnx_wrap(c, rc) : TETHER_OK;
    }
    return tonnx_fail(c, TETHER_ERR_INTERNAL, "%s '%s' has no tensor", role, v->name);
}

int tonnx_in_tensor(timport *c, int i, bool required, int *t) {
    const char *name = in_name(c, i);
    *t = -1;
    if (!name[0]) {
        return required ? tonnx_fail(c, TETHER_ERR_INVALID_ARG, "input %d is missing", i)
                        : TETHER_OK;
    }
    int vi = tonnx_find(c, name);
    char role[24];
    snprintf(role, sizeof role, "input %d", i);
    int rc = tonnx_ensure_tensor(c, vi, role);
    if (!rc) {
        *t = c->v[vi].tensor;
    }
    return rc;
}

int tonnx_in_const(timport *c, int i, bool required, hconst **k) {
    const char *name = in_name(c, i);
    *k = NULL;
    if (!name[0]) {
        return required ? tonnx_fail(c, TETHER_ERR_INVALID_ARG, "input %d is missing", i)
                        : TETHER_OK;
    }
    int vi = tonnx_find(c, name);
    if (vi < 0) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "input %d ('%s') is not defined", i, name);
    }
    const value *v = &c->v[vi];
    if (v->k) {
        *k = v->k;
        return TETHER_OK;
    }
    if (v->input >= 0) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "input %d ('%s') must be constant, but it is a graph input with no "
                          "value bound (make it an initializer, or bind it: tether run --in)",
                          i, name);
    }
    return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                      "input %d ('%s') must be constant, but node '%s' computes it at run time", i,
                      name, tonnx_node_name(c, v->producer));
}

int tonnx_out_tensor(timport *c, int i, int *t) {
    const Onnx__NodeProto *n = c->gp->node[c->cur];
    int k = i < (int)n->n_output ? tonnx_find(c, S(n->output[i])) : -1;
    if (k < 0) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "output %d has %s", i,
                          i < (int)n->n_output && S(n->output[i])[0] ? "an unknown name"
                                                                     : "an empty name");
    }
    value *v = &c->v[k];
    char name[400];
    snprintf(name, sizeof name, "%s%s", c->prefix ? c->prefix : "", v->name);
    int rc =
        tether_ir_add_tensor(c->g, name, TETHER_FLOAT32, TETHER_IR_SHAPE_UNKNOWN, NULL, &v->tensor);
    if (rc) {
        return tonnx_wrap(c, rc);
    }
    *t = v->tensor;
    return TETHER_OK;
}

static int unique_name(timport *c, const char *suffix, char *out, size_t n) {
    snprintf(out, n, "%s/%s", tonnx_node_name(c, c->cur), suffix);
    if (tether_ir_find_tensor(c->g, out) < 0) {
        return TETHER_OK;
    }
    size_t len = strlen(out);
    for (int k = 1; k < 1000000; k++) {
        snprintf(out + len, n - len, "#%d", k);
        if (tether_ir_find_tensor(c->g, out) < 0) {
            return TETHER_OK;
        }
    }
    return tonnx_fail(c, TETHER_ERR_INTERNAL, "no free tensor name");
}

int tonnx_temp_tensor(timport *c, const char *suffix, int *t) {
    char name[400];
    int rc = unique_name(c, suffix, name, sizeof name);
    if (!rc) {
        rc = tether_ir_add_tensor(c->g, name, TETHER_FLOAT32, TETHER_IR_SHAPE_UNKNOWN, NULL, t);
        rc = rc ? tonnx_wrap(c, rc) : TETHER_OK;
    }
    return rc;
}

int tonnx_const_tensor(timport *c, const char *suffix, int ndim, const int64_t *shape,
                       const float *vals, int *t) {
    char name[400];
    int rc = unique_name(c, suffix, name, sizeof name);
    if (!rc) {
        size_t count = 1;
        for (int i = 0; i < ndim; i++) {
            count *= (size_t)shape[i];
        }
        rc = tether_ir_add_constant(c->g, name, TETHER_FLOAT32, ndim, shape, vals,
                                    count * sizeof(float), t);
        rc = rc ? tonnx_wrap(c, rc) : TETHER_OK;
    }
    return rc;
}

int tonnx_hconst_tensor(timport *c, const char *suffix, const hconst *k, int *t) {
    char name[400];
    int rc = unique_name(c, suffix, name, sizeof name);
    if (!rc && typed_const(k)) {
        return typed_constant(c, name, k, t);
    }
    if (!rc) {
        rc = tether_ir_add_constant(c->g, name, k->is_int ? TETHER_INT64 : TETHER_FLOAT32, k->ndim,
                                    k->shape, k->data,
                                    k->count * (k->is_int ? sizeof(int64_t) : sizeof(float)), t);
        rc = rc ? tonnx_wrap(c, rc) : TETHER_OK;
    }
    return rc;
}

int tonnx_emit(timport *c, const char *suffix, tether_op op, const int *in, int nin, int out,
               const tether_ir_attrs *a) {
    char name[400];
    if (suffix) {
        snprintf(name, sizeof name, "%s/%s", tonnx_node_name(c, c->cur), suffix);
    } else {
        snprintf(name, sizeof name, "%s", tonnx_node_name(c, c->cur));
    }
    int idx;
    int rc = tether_ir_add_node(c->g, name, op, in, nin, &out, 1, a, &idx);
    if (!rc) {
        rc = tether_ir_infer_node(c->g, idx);
    }
    return rc ? tonnx_wrap(c, rc) : TETHER_OK;
}

bool tonnx_output_used(const timport *c, int node, int i) {
    const Onnx__NodeProto *n = c->gp->node[node];
    if (i >= (int)n->n_output || !S(n->output[i])[0]) {
        return false;
    }
    const char *name = n->output[i];
    for (size_t k = 0; k < c->gp->n_output; k++) {
        if (strcmp(S(c->gp->output[k]->name), name) == 0) {
            return true;
        }
    }
    for (size_t j = 0; j < c->gp->n_node; j++) {
        const Onnx__NodeProto *m = c->gp->node[j];
        for (size_t k = 0; k < m->n_input; k++) {
            if (strcmp(S(m->input[k]), name) == 0) {
                return true;
            }
        }
    }
    return false;
}
