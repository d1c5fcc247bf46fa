/*
 * The host evaluation of ONNX shape computations (Shape, Size, Gather, Slice, Cast, Concat,
 * Constant, ConstantOfShape, Range, NonZero, Unsqueeze/Squeeze/Reshape on constants, elementwise
 * int64 arithmetic, Neg, Abs, Relu, Ceil, Floor) that
 * exported models use to build Reshape targets: when every input of such a node is a host
 * constant, its output is a host constant too (tonnx_host_eval, called by the importer for the
 * operators whose table row has a host evaluator, ops.c).
 *
 * What must stay true: results are exact (int64 arithmetic is checked for overflow, float32 is
 * converted as ONNX does) and bounded by the import's host budget (tonnx_host_allow); a value the
 * evaluation cannot compute is an error naming the node, never a guess.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static double el(const hconst *k, size_t i) {
    return k->is_int ? (double)((const int64_t *)k->data)[i] : (double)((const float *)k->data)[i];
}

static void set_el(hconst *k, size_t i, double v) {
    if (k->is_int) {
        ((int64_t *)k->data)[i] = (int64_t)v;
    } else {
        ((float *)k->data)[i] = (float)v;
    }
}

static void copy_el(hconst *dst, size_t di, const hconst *src, size_t si) {
    if (dst->is_int && src->is_int) {
        ((int64_t *)dst->data)[di] = ((const int64_t *)src->data)[si];
    } else {
        set_el(dst, di, el(src, si));
    }
}

static int set_out(timport *c, const Onnx__NodeProto *n, int i, hconst *k) {
    if (i < (int)n->n_output && S(n->output[i])[0]) {
        c->v[tonnx_find(c, n->output[i])].k = k;
    }
    return TETHER_OK;
}

static hconst *in_k(timport *c, const Onnx__NodeProto *n, int i) {
    int v = has_input(n, i) ? tonnx_find(c, n->input[i]) : -1;
    return v < 0 ? NULL : c->v[v].k;
}

/* A constant with the same data as k under a new shape. */
static int reshaped(timport *c, const hconst *k, int ndim, const int64_t *shape, hconst **out) {
    hconst *r = tonnx_hconst_new(c, k->is_int, ndim, shape);
    if (!r) {
        return tether_last_status();
    }
    if (r->count != k->count) {
        return tonnx_fail(c, TETHER_ERR_MISMATCH, "%zu elements cannot take a shape of %zu",
                          k->count, r->count);
    }
    memcpy(r->data, k->data, k->count * (k->is_int ? sizeof(int64_t) : sizeof(float)));
    r->dt = k->dt;
    *out = r;
    return TETHER_OK;
}

static int norm_axis(timport *c, int64_t axis, int rank, int *out) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axis %lld out of range for rank %d",
                          (long long)axis, rank);
    }
    *out = (int)a;
    return TETHER_OK;
}

static int host_constant(timport *c, const Onnx__NodeProto *n) {
    const Onnx__AttributeProto *a = n->attribute[0];
    const char *name = S(a->name);
    hconst *k = NULL;
    if (!strcmp(name, "value")) {
        if (!a->t) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute 'value' has no tensor");
        }
        tether_onnx_tensor t;
        int rc = tonnx_tensor_from_proto(a->t, S(n->output[0]), c->dir, &t);
        if (rc) {
            return tonnx_fail(c, rc, "%s", tether_last_error());
        }
        bool is_int = t.dtype.code != kDLFloat;
        tonnx_host_allow(c, t.nbytes / (t.dtype.bits / 8), is_int); /* bytes of the file */
        k = tonnx_hconst_new(c, is_int, t.ndim, t.shape);
        if (!k) {
            tether_onnx_tensor_free(&t);
            return tether_last_status();
        }
        k->dt = t.dtype;
        size_t es = t.dtype.bits / 8;
        for (size_t i = 0; i < k->count; i++) {
            const uint8_t *p = (const uint8_t *)t.data + i * es;
            double v = 0;
            if (t.dtype.code == kDLFloat) {
                if (es == 4) {
                    float f;
                    memcpy(&f, p, 4);
                    v = f;
                } else {
                    memcpy(&v, p, 8);
                }
                set_el(k, i, v);
            } else {
                int64_t x = 0;
                bool sg = t.dtype.code == kDLInt;
                if (es == 1) {
                    x = sg ? (int8_t)p[0] : p[0];
                } else if (es == 2) {
                    uint16_t u;
                    memcpy(&u, p, 2);
                    x = sg ? (int16_t)u : u;
                } else if (es == 4) {
                    uint32_t u;
                    memcpy(&u, p, 4);
                    x = sg ? (int32_t)u : (int64_t)u;
                } else {
                    memcpy(&x, p, 8);
                }
                ((int64_t *)k->data)[i] = x;
            }
        }
        tether_onnx_tensor_free(&t);
    } else if (!strcmp(name, "value_float") || !strcmp(name, "value_int")) {
        k = tonnx_hconst_new(c, name[6] == 'i', 0, NULL);
        if (!k) {
            return tether_last_status();
        }
        set_el(k, 0, name[6] == 'i' ? (double)a->i : (double)a->f);
    } else {
        bool ints = !strcmp(name, "value_ints");
        int64_t len = ints ? (int64_t)a->n_ints : (int64_t)a->n_floats;
        k = tonnx_hconst_new(c, ints, 1, &len);
        if (!k) {
            return tether_last_status();
        }
        for (int64_t i = 0; i < len; i++) {
            set_el(k, (size_t)i, ints ? (double)a->ints[i] : (double)a->floats[i]);
        }
    }
    return set_out(c, n, 0, k);
}

static int host_shape(timport *c, const Onnx__NodeProto *n) {
    int vi = tonnx_find(c, S(n->input[0]));
    int ndim;
    const int64_t *shape;
    int rc;
    if (c->v[vi].k) {
        ndim = c->v[vi].k->ndim;
        shape = c->v[vi].k->shape;
    } else {
        int t;
        if ((rc = tonnx_in_tensor(c, 0, true, &t))) {
            return rc;
        }
        ndim = c->g->tensors[t].ndim;
        shape = c->g->tensors[t].shape;
    }
    int64_t start, end;
    if ((rc = tonnx_attr_int(c, "start", 0, &start)) ||
        (rc = tonnx_attr_int(c, "end", ndim, &end))) {
        return rc;
    }
    start = start < 0 ? start + ndim : start;
    end = end < 0 ? end + ndim : end;
    start = start < 0 ? 0 : start > ndim ? ndim : start;
    end = end < 0 ? 0 : end > ndim ? ndim : end;
    int64_t len = end > start ? end - start : 0;
    hconst *k = tonnx_hconst_new(c, true, 1, &len);
    if (!k) {
        return tether_last_status();
    }
    for (int64_t i = 0; i < len; i++) {
        ((int64_t *)k->data)[i] = shape[start + i];
    }
    return set_out(c, n, 0, k);
}

static int host_cast(timport *c, const Onnx__NodeProto *n) {
    const hconst *x = in_k(c, n, 0);
    int64_t to;
    int rc = tonnx_attr_int(c, "to", 0, &to);
    if (rc) {
        return rc;
    }
    bool is_float = to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
                    to == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ||
                    to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
    bool is_bool = to == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    hconst *k = tonnx_hconst_new(c, !is_float, x->ndim, x->shape);
    if (!k) {
        return tether_last_status();
    }
    DLDataType dt;
    if (tonnx_onnx_dtype((int32_t)to, &dt)) {
        k->dt = dt;
    }
    for (size_t i = 0; i < k->count; i++) {
        double v = el(x, i);
        set_el(k, i, is_bool ? (v != 0) : is_float ? v : trunc(v));
    }
    return set_out(c, n, 0, k);
}

static int host_reshape_like(timport *c, const Onnx__NodeProto *n) {
    const char *t = S(n->op_type);
    const hconst *x = in_k(c, n, 0);
    int64_t shape[TETHER_IR_MAX_NDIM];
    int nd = 0, rc, cnt;
    if (!strcmp(t, "Reshape")) {
        int64_t allowzero;
        if ((rc = tonnx_const_ints(c, in_k(c, n, 1), "shape", shape, TETHER_IR_MAX_NDIM, &nd)) ||
            (rc = tonnx_attr_int(c, "allowzero", 0, &allowzero))) {
            return rc;
        }
        int infer = -1;
        size_t known = 1;
        for (int i = 0; i < nd; i++) {
            if (shape[i] == 0 && !allowzero) {
                if (i >= x->ndim) {
                    return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                                      "shape entry %d is 0 past the "
                                      "input's rank",
                                      i);
                }
                shape[i] = x->shape[i];
            }
            if (shape[i] == -1) {
                if (infer >= 0) {
                    return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "shape has more than one -1");
                }
                infer = i;
                continue;
            }
            if (shape[i] < 0) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "shape entry %d is %lld", i,
                                  (long long)shape[i]);
            }
            known *= (size_t)shape[i];
        }
        if (infer >= 0) {
            if (!known || x->count % known) {
                return tonnx_fail(c, TETHER_ERR_MISMATCH, "%zu elements cannot fill the shape",
                                  x->count);
            }
            shape[infer] = (int64_t)(x->count / known);
        }
    } else if (!strcmp(t, "Flatten")) {
        int64_t axis;
        if ((rc = tonnx_attr_int(c, "axis", 1, &axis))) {
            return rc;
        }
        axis = axis < 0 ? axis + x->ndim : axis;
        if (axis < 0 || axis > x->ndim) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axis out of range");
        }
        nd = 2;
        shape[0] = shape[1] = 1;
        for (int i = 0; i < x->ndim; i++) {
            shape[i < axis ? 0 : 1] *= x->shape[i];
        }
    } else {
        bool un = !strcmp(t, "Unsqueeze");
        int64_t axes[TETHER_IR_MAX_NDIM];
        cnt = -1;
        if (c->opset < 13) {
            rc = tonnx_attr_ints(c, "axes", axes, TETHER_IR_MAX_NDIM, &cnt);
        } else {
            const hconst *ak = in_k(c, n, 1);
            rc = ak ? tonnx_const_ints(c, ak, "axes", axes, TETHER_IR_MAX_NDIM, &cnt) : TETHER_OK;
        }
        if (rc) {
            return rc;
        }
        bool mark[TETHER_IR_MAX_NDIM] = {false};
        if (un) {
            nd = x->ndim + (cnt > 0 ? cnt : 0);
            if (cnt < 1 || nd > TETHER_IR_MAX_NDIM) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axes missing or rank above %d",
                                  TETHER_IR_MAX_NDIM);
            }
            for (int i = 0; i < cnt; i++) {
                int a = 0;
                if ((rc = norm_axis(c, axes[i], nd, &a))) {
                    return rc;
                }
                mark[a] = true;
            }
            for (int i = 0, j = 0; i < nd; i++) {
                shape[i] = mark[i] ? 1 : x->shape[j++];
            }
        } else {
            for (int i = 0; i < cnt; i++) {
                int a = 0;
                if ((rc = norm_axis(c, axes[i], x->ndim, &a))) {
                    return rc;
                }
                mark[a] = true;
            }
            for (int i = 0; i < x->ndim; i++) {
                if (cnt < 0 ? x->shape[i] != 1 : !mark[i]) {
                    shape[nd++] = x->shape[i];
                }
            }
        }
    }
    hconst *k = NULL;
    if ((rc = reshaped(c, x, nd, shape, &k))) {
        return rc;
    }
    return set_out(c, n, 0, k);
}

static int host_concat(timport *c, const Onnx__NodeProto *n) {
    int64_t axis;
    int rc = tonnx_attr_int(c, "axis", 0, &axis), ax = 0;
    const hconst *x0 = in_k(c, n, 0);
    if (rc || !x0 || (rc = norm_axis(c, axis, x0->ndim, &ax))) {
        return rc ? rc : tonnx_fail(c, TETHER_ERR_INVALID_ARG, "input 0 is missing");
    }
    int64_t shape[TETHER_IR_MAX_NDIM];
    memcpy(shape, x0->shape, sizeof shape);
    shape[ax] = 0;
    bool is_int = true;
    for (int i = 0; i < in_count(n); i++) {
        const hconst *x = in_k(c, n, i);
        if (!x || x->ndim != x0->ndim) {
            return tonnx_fail(c, TETHER_ERR_MISMATCH, "input %d is missing or of other rank", i);
        }
        for (int d = 0; d < x->ndim; d++) {
            if (d != ax && x->shape[d] != x0->shape[d]) {
                return tonnx_fail(c, TETHER_ERR_MISMATCH, "input %d differs in dimension %d", i, d);
            }
        }
        shape[ax] += x->shape[ax];
        is_int &= x->is_int;
    }
    hconst *k = tonnx_hconst_new(c, is_int, x0->ndim, shape);
    if (!k) {
        return tether_last_status();
    }
    size_t outer = 1, inner = 1;
    for (int d = 0; d < ax; d++) {
        outer *= (size_t)shape[d];
    }
    for (int d = ax + 1; d < x0->ndim; d++) {
        inner *= (size_t)shape[d];
    }
    size_t o = 0;
    for (size_t a = 0; a < outer; a++) {
        for (int i = 0; i < in_count(n); i++) {
            const hconst *x = in_k(c, n, i);
            size_t len = (size_t)x->shape[ax] * inner;
            for (size_t e = 0; e < len; e++) {
                copy_el(k, o++, x, a * len + e);
            }
        }
    }
    return set_out(c, n, 0, k);
}

static int host_gather(timport *c, const Onnx__NodeProto *n) {
    const hconst *x = in_k(c, n, 0), *idx = in_k(c, n, 1);
    int64_t axis;
    int ax = 0, rc;
    if (!idx || !idx->is_int) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "indices must be integers");
    }
    if ((rc = tonnx_attr_int(c, "axis", 0, &axis)) || (rc = norm_axis(c, axis, x->ndim, &ax))) {
        return rc;
    }
    int nd = x->ndim - 1 + idx->ndim;
    if (nd > TETHER_IR_MAX_NDIM) {
        return tonnx_fail(c, TETHER_ERR_LIMIT, "result rank %d", nd);
    }
    int64_t shape[TETHER_IR_MAX_NDIM];
    int o = 0;
    for (int d = 0; d < ax; d++) {
        shape[o++] = x->shape[d];
    }
    for (int d = 0; d < idx->ndim; d++) {
        shape[o++] = idx->shape[d];
    }
    for (int d = ax + 1; d < x->ndim; d++) {
        shape[o++] = x->shape[d];
    }
    hconst *k = tonnx_hconst_new(c, x->is_int, nd, shape);
    if (!k) {
        return tether_last_status();
    }
    k->dt = x->dt;
    size_t outer = 1, inner = 1, dim = (size_t)x->shape[ax];
    for (int d = 0; d < ax; d++) {
        outer *= (size_t)x->shape[d];
    }
    for (int d = ax + 1; d < x->ndim; d++) {
        inner *= (size_t)x->shape[d];
    }
    size_t w = 0;
    for (size_t a = 0; a < outer; a++) {
        for (size_t j = 0; j < idx->count; j++) {
            int64_t i = ((const int64_t *)idx->data)[j];
            i = i < 0 ? i + (int64_t)dim : i;
            if (i < 0 || (size_t)i >= dim) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "index %lld out of range",
                                  (long long)((const int64_t *)idx->data)[j]);
            }
            for (size_t e = 0; e < inner; e++) {
                copy_el(k, w++, x, (a * dim + (size_t)i) * inner + e);
            }
        }
    }
    return set_out(c, n, 0, k);
}

static int host_slice(timport *c, const Onnx__NodeProto *n) {
    const hconst *x = in_k(c, n, 0);
    int64_t starts[TETHER_IR_MAX_NDIM], ends[TETHER_IR_MAX_NDIM], axes[TETHER_IR_MAX_NDIM],
        steps[TETHER_IR_MAX_NDIM];
    int ns, ne, na = -1, nst = -1, rc;
    if (c->opset < 10) {
        if ((rc = tonnx_attr_ints(c, "starts", starts, TETHER_IR_MAX_NDIM, &ns)) ||
            (rc = tonnx_attr_ints(c, "ends", ends, TETHER_IR_MAX_NDIM, &ne)) ||
            (rc = tonnx_attr_ints(c, "axes", axes, TETHER_IR_MAX_NDIM, &na))) {
            return rc;
        }
    } else {
        if (!in_k(c, n, 1) || !in_k(c, n, 2)) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "starts and ends are required");
        }
        if ((rc = tonnx_const_ints(c, in_k(c, n, 1), "starts", starts, TETHER_IR_MAX_NDIM, &ns)) ||
            (rc = tonnx_const_ints(c, in_k(c, n, 2), "ends", ends, TETHER_IR_MAX_NDIM, &ne)) ||
            (in_k(c, n, 3) &&
             (rc = tonnx_const_ints(c, in_k(c, n, 3), "axes", axes, TETHER_IR_MAX_NDIM, &na))) ||
            (in_k(c, n, 4) &&
             (rc = tonnx_const_ints(c, in_k(c, n, 4), "steps", steps, TETHER_IR_MAX_NDIM, &nst)))) {
            return rc;
        }
    }
    if (ns < 0 || ns != ne || (na >= 0 && na != ns) || (nst >= 0 && nst != ns)) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "starts, ends, axes and steps differ in "
                          "length");
    }
    int64_t lo[TETHER_IR_MAX_NDIM], step[TETHER_IR_MAX_NDIM], shape[TETHER_IR_MAX_NDIM];
    for (int d = 0; d < x->ndim; d++) {
        lo[d] = 0;
        step[d] = 1;
        shape[d] = x->shape[d];
    }
    for (int i = 0; i < ns; i++) {
        int ax = 0;
        if ((rc = norm_axis(c, na >= 0 ? axes[i] : i, x->ndim, &ax))) {
            return rc;
        }
        int64_t dim = x->shape[ax], s = starts[i], e = ends[i], st = nst >= 0 ? steps[i] : 1;
        if (st == 0) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "step 0");
        }
        s = s < 0 ? s + dim : s;
        e = e < 0 ? e + dim : e;
        if (st > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            shape[ax] = e > s ? (e - s + st - 1) / st : 0;
        } else {
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s; /* [0, dim - 1] (ONNX) */
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            shape[ax] = s > e && dim > 0 ? (s - e + (-st) - 1) / (-st) : 0;
        }
        lo[ax] = s;
        step[ax] = st;
    }
    hconst *k = tonnx_hconst_new(c, x->is_int, x->ndim, shape);
    if (!k) {
        return tether_last_status();
    }
    k->dt = x->dt;
    int64_t idx[TETHER_IR_MAX_NDIM] = {0}, st[TETHER_IR_MAX_NDIM];
    int64_t s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= x->shape[d];
    }
    for (size_t o = 0; o < k->count; o++) {
        size_t rem = o;
        int64_t off = 0;
        for (int d = x->ndim - 1; d >= 0; d--) {
            idx[d] = (int64_t)(rem % (size_t)shape[d]);
            rem /= (size_t)shape[d];
            off += (lo[d] + idx[d] * step[d]) * st[d];
        }
        copy_el(k, o, x, (size_t)off);
    }
    return set_out(c, n, 0, k);
}

static int host_constant_of_shape(timport *c, const Onnx__NodeProto *n) {
    int64_t shape[TETHER_IR_MAX_NDIM];
    int nd, rc;
    if ((rc = tonnx_const_ints(c, in_k(c, n, 0), "shape", shape, TETHER_IR_MAX_NDIM, &nd))) {
        return rc;
    }
    bool is_int = false;
    double v = 0;
    DLDataType vdt = TETHER_FLOAT32;
    const Onnx__AttributeProto *a = tonnx_attr(n, "value");
    if (a && a->t) {
        tether_onnx_tensor t;
        if ((rc = tonnx_tensor_from_proto(a->t, "value", NULL, &t))) {
            return tonnx_fail(c, rc, "%s", tether_last_error());
        }
        vdt = t.dtype;
        if (t.nbytes && t.dtype.code == kDLFloat && t.dtype.bits == 32) {
            v = ((float *)t.data)[0];
        } else if (t.nbytes && t.dtype.code == kDLFloat) {
            v = ((double *)t.data)[0];
        } else if (t.nbytes) {
            is_int = true;
            int64_t x = 0;
            memcpy(&x, t.data, (t.dtype.bits + 7) / 8);
            if (t.dtype.code == kDLInt && t.dtype.bits < 64 && (x >> (t.dtype.bits - 1)) & 1) {
                x -= (int64_t)1 << t.dtype.bits; /* sign-extended */
            }
            v = (double)x;
        }
        tether_onnx_tensor_free(&t);
    }
    hconst *k = tonnx_hconst_new(c, is_int, nd, shape);
    if (!k) {
        return tether_last_status();
    }
    k->dt = vdt;
    for (size_t i = 0; i < k->count; i++) {
        set_el(k, i, v);
    }
    return set_out(c, n, 0, k);
}

static int host_binary(timport *c, const Onnx__NodeProto *n) {
    const hconst *a = in_k(c, n, 0), *b = in_k(c, n, 1);
    if (!a || !b) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "two inputs are required");
    }
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    int64_t shape[TETHER_IR_MAX_NDIM];
    for (int i = 0; i < nd; i++) {
        int64_t da = i < nd - a->ndim ? 1 : a->shape[i - (nd - a->ndim)];
        int64_t db = i < nd - b->ndim ? 1 : b->shape[i - (nd - b->ndim)];
        if (da != db && da != 1 && db != 1) {
            return tonnx_fail(c, TETHER_ERR_MISMATCH, "shapes do not broadcast");
        }
        shape[i] = da == 1 ? db : da;
    }
    bool is_int = a->is_int && b->is_int;
    hconst *k = tonnx_hconst_new(c, is_int, nd, shape);
    if (!k) {
        return tether_last_status();
    }
    char op = S(n->op_type)[0];
    for (size_t o = 0; o < k->count; o++) {
        size_t rem = o, ia = 0, ib = 0, sa = 1, sb = 1;
        for (int d = nd - 1; d >= 0; d--) {
            size_t i = rem % (size_t)shape[d];
            rem /= (size_t)shape[d];
            int dA = d - (nd - a->ndim), dB = d - (nd - b->ndim);
            if (dA >= 0) {
                ia += (a->shape[dA] == 1 ? 0 : i) * sa;
                sa *= (size_t)a->shape[dA];
            }
            if (dB >= 0) {
                ib += (b->shape[dB] == 1 ? 0 : i) * sb;
                sb *= (size_t)b->shape[dB];
            }
        }
        if (is_int) {
            int64_t x = ((const int64_t *)a->data)[ia], y = ((const int64_t *)b->data)[ib], r;
            if (op == 'D' && y == 0) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "integer division by zero");
            }
            /* shape arithmetic must be exact: an overflow is an error, never a wrapped value */
            bool ovf = op == 'A'   ? __builtin_add_overflow(x, y, &r)
                       : op == 'S' ? __builtin_sub_overflow(x, y, &r)
                       : op == 'M' ? __builtin_mul_overflow(x, y, &r)
                                   : (x == INT64_MIN && y == -1) || ((r = x / y), false);
            if (ovf) {
                return tonnx_fail(c, TETHER_ERR_LIMIT, "int64 overflow in %s(%lld, %lld)",
                                  S(n->op_type), (long long)x, (long long)y);
            }
            ((int64_t *)k->data)[o] = r;
        } else {
            float x = (float)el(a, ia), y = (float)el(b, ib);
            ((float *)k->data)[o] = op == 'A'   ? x + y
                                    : op == 'S' ? x - y
                                    : op == 'M' ? x * y
                                                : x / y;
        }
    }
    /* operands of one ONNX type give that type (Range's function expansion adds int32 scalars);
     * a narrow integer result that does not fit it is an error, never a wrapped value */
    if (a->dt.code == b->dt.code && a->dt.bits == b->dt.bits && a->dt.lanes == b->dt.lanes) {
        bool narrow = is_int && a->dt.bits < 64 && a->dt.bits > 1;
        int sh = narrow ? a->dt.bits - 1 : 0; /* 64-bit and bool: no range to check */
        int64_t lo = a->dt.code == kDLInt ? -((int64_t)1 << sh) : 0;
        int64_t hi = a->dt.code == kDLInt ? ((int64_t)1 << sh) - 1
                                          : (int64_t)((UINT64_C(1) << (sh + 1)) - 1);
        for (size_t o = 0; narrow && o < k->count; o++) {
            int64_t v = ((const int64_t *)k->data)[o];
            if (v < lo || v > hi) {
                return tonnx_fail(c, TETHER_ERR_LIMIT, "%s overflows its %d-bit type (%lld)",
                                  S(n->op_type), a->dt.bits, (long long)v);
            }
        }
        if (narrow || !is_int) {
            k->dt = a->dt;
        }
    }
    return set_out(c, n, 0, k);
}

/* Neg, Abs, Relu, Ceil and Floor: exact in int64 (the negation of INT64_MIN is an error, never a
 * wrapped value; Ceil and Floor of an integer are the integer), float32 otherwise. Range's
 * function expansion computes its trip count with Ceil and Relu. */
static int host_unary(timport *c, const Onnx__NodeProto *n) {
    const hconst *x = in_k(c, n, 0);
    const char *t = S(n->op_type);
    bool neg = t[0] == 'N', relu = t[0] == 'R', round = t[0] == 'C' || t[0] == 'F';
    hconst *k = tonnx_hconst_new(c, x->is_int, x->ndim, x->shape);
    if (!k) {
        return tether_last_status();
    }
    k->dt = x->dt;
    for (size_t i = 0; i < k->count; i++) {
        if (x->is_int) {
            int64_t v = ((const int64_t *)x->data)[i];
            if (v == INT64_MIN && !relu && !round) {
                return tonnx_fail(c, TETHER_ERR_LIMIT, "int64 overflow in %s(%lld)", t,
                                  (long long)v);
            }
            ((int64_t *)k->data)[i] = round  ? v
                                      : relu ? (v < 0 ? 0 : v)
                                      : neg  ? -v
                                             : (v < 0 ? -v : v);
        } else {
            float v = ((const float *)x->data)[i];
            ((float *)k->data)[i] = t[0] == 'C'   ? ceilf(v)
                                    : t[0] == 'F' ? floorf(v)
                                    : relu        ? (v < 0.0f ? 0.0f : v)
                                    : neg         ? -v
                                                  : fabsf(v);
        }
    }
    return set_out(c, n, 0, k);
}

/* Size: the element count of the input (its shape is known at import time). */
static int host_size(timport *c, const Onnx__NodeProto *n) {
    int vi = tonnx_find(c, S(n->input[0]));
    int64_t count = 1;
    if (c->v[vi].k) {
        count = (int64_t)c->v[vi].k->count;
    } else {
        int t, rc;
        if ((rc = tonnx_in_tensor(c, 0, true, &t))) {
            return rc;
        }
        count = (int64_t)tether_ir_tensor_elements(&c->g->tensors[t]);
    }
    hconst *k = tonnx_hconst_new(c, true, 0, NULL);
    if (!k) {
        return tether_last_status();
    }
    ((int64_t *)k->data)[0] = count;
    return set_out(c, n, 0, k);
}

/* Range on constant start, limit, delta (scalars of one type). */
static int host_range(timport *c, const Onnx__NodeProto *n) {
    const hconst *s = in_k(c, n, 0), *l = in_k(c, n, 1), *d = in_k(c, n, 2);
    if (!s || !l || !d || s->count != 1 || l->count != 1 || d->count != 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "start, limit and delta must be scalars");
    }
    bool is_int = s->is_int && l->is_int && d->is_int;
    double ds = el(s, 0), dl = el(l, 0), dd = el(d, 0);
    if (dd == 0 || dd != dd || ds != ds || dl != dl) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "delta is 0 or a value is NaN");
    }
    double cnt = ceil((dl - ds) / dd);
    int64_t len = cnt > 0 ? (int64_t)cnt : 0;
    if (cnt > (double)INT32_MAX) {
        return tonnx_fail(c, TETHER_ERR_LIMIT, "a range of %.0f elements", cnt);
    }
    hconst *k = tonnx_hconst_new(c, is_int, 1, &len);
    if (!k) {
        return tether_last_status();
    }
    k->dt = s->dt;
    for (int64_t i = 0; i < len; i++) {
        if (is_int) {
            ((int64_t *)k->data)[i] =
                ((const int64_t *)s->data)[0] + i * ((const int64_t *)d->data)[0];
        } else {
            ((float *)k->data)[i] = (float)(ds + (double)i * dd);
        }
    }
    return set_out(c, n, 0, k);
}

/* NonZero of a constant: the int64 coordinates [rank, count] of its nonzero elements. */
static int host_nonzero(timport *c, const Onnx__NodeProto *n) {
    const hconst *x = in_k(c, n, 0);
    int64_t cnt = 0;
    for (size_t i = 0; i < x->count; i++) {
        cnt += el(x, i) != 0;
    }
    int64_t shape[2] = {x->ndim, cnt};
    hconst *k = tonnx_hconst_new(c, true, 2, shape);
    if (!k) {
        return tether_last_status();
    }
    int64_t j = 0;
    for (size_t i = 0; i < x->count; i++) {
        if (el(x, i) == 0) {
            continue;
        }
        size_t rem = i;
        for (int d = x->ndim - 1; d >= 0; d--) {
            ((int64_t *)k->data)[d * cnt + j] = (int64_t)(rem % (size_t)x->shape[d]);
            rem /= (size_t)x->shape[d];
        }
        j++;
    }
    return set_out(c, n, 0, k);
}

int tonnx_host_eval(timport *c, const Onnx__NodeProto *n, const op_def *d) {
    const char *t = d->op_type;
    bool done = false;
    int src = tonnx_host_signal(c, n, &done); /* convert_signal.c */
    if (done || src) {
        return src;
    }
    if (!strcmp(t, "Constant")) {
        return host_constant(c, n);
    }
    if (!strcmp(t, "Shape")) {
        return host_shape(c, n);
    }
    if (!strcmp(t, "Size")) {
        return host_size(c, n);
    }
    /* every other operator evaluated here reads its first input as a constant */
    if (!in_k(c, n, 0)) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "input 0 is missing");
    }
    if (!strcmp(t, "Identity") || !strcmp(t, "Dropout")) {
        return set_out(c, n, 0, in_k(c, n, 0));
    }
    if (!strcmp(t, "Cast")) {
        return host_cast(c, n);
    }
    if (!strcmp(t, "Reshape") || !strcmp(t, "Flatten") || !strcmp(t, "Squeeze") ||
        !strcmp(t, "Unsqueeze")) {
        return host_reshape_like(c, n);
    }
    if (!strcmp(t, "Concat")) {
        return host_concat(c, n);
    }
    if (!strcmp(t, "Gather")) {
        return host_gather(c, n);
    }
    if (!strcmp(t, "Slice")) {
        return host_slice(c, n);
    }
    if (!strcmp(t, "ConstantOfShape")) {
        return host_constant_of_shape(c, n);
    }
    if (!strcmp(t, "Range")) {
        return host_range(c, n);
    }
    if (!strcmp(t, "NonZero")) {
        return host_nonzero(c, n);
    }
    if (!strcmp(t, "Neg") || !strcmp(t, "Abs") || !strcmp(t, "Relu") || !strcmp(t, "Ceil") ||
        !strcmp(t, "Floor")) {
        return host_unary(c, n);
    }
    return host_binary(c, n);
}
