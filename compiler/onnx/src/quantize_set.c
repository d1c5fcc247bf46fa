/*
 * `tether quantize`: the calibration set (quantize.h) from the caller's arrays: each calibration
 * file must hold one array per model input, named after it (an array of another name is an
 * error naming both lists), of the input's dtype and shape, or a stack of samples along a first
 * axis the input lacks; every file gives samples of the same shapes (they fix the model's
 * dynamic dimensions).
 *
 * What must stay true: the set only borrows the caller's arrays; every refusal names the file,
 * the array and what the model expects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "quantize.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static const char *S(const char *s) {
    return s ? s : "";
}

typedef struct decl {
    const char *name;
    DLDataType dtype;
    int ndim;                         /* -1: no shape */
    int64_t dims[TETHER_IR_MAX_NDIM]; /* -1: dynamic */
} decl;

static int declared_inputs(const Onnx__GraphProto *g, const char *path, decl *d, int *n) {
    *n = 0;
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        int init = 0;
        for (size_t k = 0; k < g->n_initializer && !init; k++) {
            init = !strcmp(S(g->initializer[k]->name), S(vi->name));
        }
        if (init) {
            continue;
        }
        if (*n == 32) {
            return tether_set_error(TETHER_ERR_LIMIT, "%s: more than 32 inputs", path);
        }
        decl *e = &d[(*n)++];
        memset(e, 0, sizeof *e);
        e->name = S(vi->name);
        e->ndim = -1;
        const Onnx__TypeProto *tp = vi->type;
        if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type) {
            tonnx_onnx_dtype(tp->tensor_type->elem_type, &e->dtype);
            const Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
            if (sh && sh->n_dim <= TETHER_IR_MAX_NDIM) {
                e->ndim = (int)sh->n_dim;
                for (size_t k = 0; k < sh->n_dim; k++) {
                    const Onnx__TensorShapeProto__Dimension *dm = sh->dim[k];
                    e->dims[k] =
                        dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                                dm->dim_value > 0
                            ? dm->dim_value
                            : -1;
                }
            }
        }
    }
    return 0;
}

static void shape_text(int ndim, const int64_t *s, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && k < n; d++) {
        k += (size_t)snprintf(buf + k, n - k, d ? ",%lld" : "%lld", (long long)s[d]);
    }
    if (k < n) {
        snprintf(buf + k, n - k, "]");
    }
}

/* The samples of the calibration files, in declared-input order (each array one sample, or a
 * stack of them along a leading axis the input lacks). */
int tq_build_set(const Onnx__GraphProto *g, const char *path, const tether_onnx_quantize_options *o,
                 tq_set *set) {
    decl d[32];
    int nd, rc = declared_inputs(g, path, d, &nd);
    if (rc) {
        return rc;
    }
    memset(set, 0, sizeof *set);
    set->nin = nd;
    if (!o->nsamples) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "no calibration inputs given");
    }
    int total = 0, counts[256];
    if (o->nsamples > 256) {
        return tether_set_error(TETHER_ERR_LIMIT, "more than 256 calibration files");
    }
    for (int f = 0; f < o->nsamples; f++) {
        const tether_onnx_qsample *smp = &o->samples[f];
        char have[1024] = "";
        for (int j = 0; j < smp->n; j++) {
            size_t l = strlen(have);
            snprintf(have + l, sizeof have - l, "%s%s", j ? ", " : "", smp->names[j]);
        }
        if (!smp->n) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "%s: no arrays (it needs one per model input)", smp->source);
        }
        for (int j = 0; j < smp->n; j++) {
            int k = 0;
            while (k < nd && strcmp(d[k].name, smp->names[j]) != 0) {
                k++;
            }
            if (k == nd) {
                char want[1024] = "";
                for (int q = 0; q < nd; q++) {
                    size_t l = strlen(want);
                    snprintf(want + l, sizeof want - l, "%s%s", q ? ", " : "", d[q].name);
                }
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s: array '%s' is not an input of %s (its inputs: %s)",
                                        smp->source, smp->names[j], path, want);
            }
        }
        counts[f] = -1;
        for (int k = 0; k < nd; k++) {
            int j = 0;
            while (j < smp->n && strcmp(d[k].name, smp->names[j]) != 0) {
                j++;
            }
            if (j == smp->n) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s: no array for model input '%s' (it has: %s)",
                                        smp->source, d[k].name, have);
            }
            const tether_model_value *v = &smp->values[j];
            char dt[TETHER_DTYPE_NAME_MAX], want[TETHER_DTYPE_NAME_MAX], got[200], exp[200];
            if (d[k].dtype.lanes && !tether_dtype_equal(d[k].dtype, v->dtype)) {
                tether_dtype_name(v->dtype, dt, sizeof dt);
                tether_dtype_name(d[k].dtype, want, sizeof want);
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s:%s: dtype %s, but model input '%s' is %s", smp->source,
                                        d[k].name, dt, d[k].name, want);
            }
            int stacked = d[k].ndim >= 0 && v->ndim == d[k].ndim + 1;
            int off = stacked ? 1 : 0, ok = d[k].ndim < 0 || v->ndim == d[k].ndim + off;
            for (int q = 0; ok && d[k].ndim >= 0 && q < d[k].ndim; q++) {
                ok = d[k].dims[q] < 0 || d[k].dims[q] == v->shape[q + off];
            }
            int cnt = stacked ? (int)v->shape[0] : 1;
            shape_text(v->ndim, v->shape, got, sizeof got);
            shape_text(d[k].ndim, d[k].dims, exp, sizeof exp);
            if (!ok || cnt < 1 || (counts[f] >= 0 && cnt != counts[f])) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s:%s: shape %s, but model input '%s' is %s (-1: any; "
                                        "or a stack of samples along a first axis)",
                                        smp->source, d[k].name, got, d[k].name, exp);
            }
            counts[f] = cnt;
            tether_model_input_shape *sh = &set->shapes[k];
            if (f == 0) {
                snprintf(sh->name, sizeof sh->name, "%s", d[k].name);
                sh->ndim = v->ndim - off;
                memcpy(sh->shape, v->shape + off, sizeof(int64_t) * (size_t)sh->ndim);
            } else if (sh->ndim != v->ndim - off ||
                       memcmp(sh->shape, v->shape + off, sizeof(int64_t) * (size_t)sh->ndim)) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s:%s: shape %s differs from the first calibration "
                                        "file's",
                                        smp->source, d[k].name, got);
            }
        }
        total += counts[f];
    }
    set->n = total;
    set->data = calloc((size_t)total * (size_t)(nd ? nd : 1), sizeof *set->data);
    if (!set->data) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "quantize: out of memory");
    }
    int s0 = 0;
    for (int f = 0; f < o->nsamples; f++) {
        const tether_onnx_qsample *smp = &o->samples[f];
        for (int k = 0; k < nd; k++) {
            int j = 0;
            while (strcmp(d[k].name, smp->names[j]) != 0) {
                j++;
            }
            size_t per = smp->values[j].nbytes / (size_t)counts[f];
            for (int q = 0; q < counts[f]; q++) {
                set->data[(size_t)(s0 + q) * (size_t)nd + (size_t)k] =
                    (const uint8_t *)smp->values[j].data + per * (size_t)q;
            }
        }
        s0 += counts[f];
    }
    return 0;
}
