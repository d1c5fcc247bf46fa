/*
 * ONNX operators whose whole output is known at import time (issue 27): EyeLike (from its
 * input's shape and the attributes, whatever the input's values), HannWindow, HammingWindow,
 * BlackmanWindow and MelWeightMatrix (from their constant scalar inputs), evaluated into host
 * constants by tonnx_host_signal (called first by host_eval.c's tonnx_host_eval).
 *
 * What must stay true: the values are the ONNX definitions computed in double (windows: the
 * generalized cosine windows with the true pi, periodic by default; MelWeightMatrix: the ONNX
 * reference's triangular filters on integer bins); an input that sets the output's size and is
 * not a constant is an error naming the node and the input (ops.c's checks refuse it first).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static const hconst *in_k(timport *c, const Onnx__NodeProto *n, int i) {
    int v = has_input(n, i) ? tonnx_find(c, n->input[i]) : -1;
    return v < 0 ? NULL : c->v[v].k;
}

static int scalar(timport *c, const Onnx__NodeProto *n, int i, const char *what, double *out) {
    const hconst *k = in_k(c, n, i);
    if (!k) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "%s must be a constant (the output depends on it)", what);
    }
    if (k->count != 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "%s must have one element", what);
    }
    *out = k->is_int ? (double)((const int64_t *)k->data)[0] : (double)((const float *)k->data)[0];
    return TETHER_OK;
}

/* A host constant of element type dt (values held as float32, or int64 for integers and bool). */
static hconst *new_out(timport *c, DLDataType dt, int ndim, const int64_t *shape) {
    bool is_int = dt.code != kDLFloat && dt.code != kDLBfloat;
    hconst *k = tonnx_hconst_new(c, is_int, ndim, shape);
    if (k) {
        k->dt = dt;
    }
    return k;
}

static void put(hconst *k, size_t i, double v) {
    if (k->is_int) {
        ((int64_t *)k->data)[i] = (int64_t)v;
    } else {
        ((float *)k->data)[i] = (float)v;
    }
}

static int out_dtype(timport *c, const char *attr, int64_t def, DLDataType *dt) {
    int64_t v;
    int rc = tonnx_attr_int(c, attr, def, &v);
    if (rc) {
        return rc;
    }
    if (!tonnx_onnx_dtype((int32_t)v, dt) || dt->code == kDLBfloat ||
        (dt->code == kDLFloat && dt->bits == 16)) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "%s %lld", attr, (long long)v);
    }
    return TETHER_OK;
}

static int set_out(timport *c, const Onnx__NodeProto *n, hconst *k) {
    if (n->n_output && S(n->output[0])[0]) {
        c->v[tonnx_find(c, n->output[0])].k = k;
    }
    return TETHER_OK;
}

static int eye_like(timport *c, const Onnx__NodeProto *n) {
    int vi = tonnx_find(c, S(n->input[0]));
    int ndim;
    int64_t shape[TETHER_IR_MAX_NDIM];
    DLDataType dt;
    if (c->v[vi].k) {
        ndim = c->v[vi].k->ndim;
        memcpy(shape, c->v[vi].k->shape, sizeof shape);
        dt = c->v[vi].k->dt;
    } else {
        int t, rc = tonnx_in_tensor(c, 0, true, &t);
        if (rc) {
            return rc;
        }
        const tether_ir_tensor *x = &c->g->tensors[t];
        ndim = x->ndim;
        memcpy(shape, x->shape, sizeof shape);
        dt = x->dtype;
    }
    int64_t kk = 0;
    int rc;
    if (tonnx_attr(n, "dtype") && (rc = out_dtype(c, "dtype", 1, &dt))) {
        return rc;
    }
    if ((rc = tonnx_attr_int(c, "k", 0, &kk))) {
        return rc;
    }
    if (ndim != 2) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "the input must be 2-D, not rank %d", ndim);
    }
    hconst *k = new_out(c, dt, 2, shape);
    if (!k) {
        return tether_last_status();
    }
    for (int64_t i = 0; i < shape[0]; i++) {
        for (int64_t j = 0; j < shape[1]; j++) {
            put(k, (size_t)(i * shape[1] + j), j - i == kk ? 1 : 0);
        }
    }
    return set_out(c, n, k);
}

/* a0 - a1 cos(2 pi i / N) + a2 cos(4 pi i / N), N the size (periodic) or the size - 1. */
static int window(timport *c, const Onnx__NodeProto *n, double a0, double a1, double a2) {
    double size = 0;
    int64_t periodic = 1;
    DLDataType dt;
    int rc;
    if ((rc = scalar(c, n, 0, "size", &size)) ||
        (rc = tonnx_attr_int(c, "periodic", 1, &periodic)) ||
        (rc = out_dtype(c, "output_datatype", 1, &dt))) {
        return rc;
    }
    if (!(size >= 0 && size <= 16777216.0)) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "size %g (0 to 2^24)", size);
    }
    int64_t len = (int64_t)size;
    hconst *k = new_out(c, dt, 1, &len);
    if (!k) {
        return tether_last_status();
    }
    const double pi = 3.14159265358979323846264338327950288;
    double N = periodic ? (double)len : (double)len - 1;
    for (int64_t i = 0; i < len; i++) {
        double t = N > 0 ? (double)i / N : 0;
        put(k, (size_t)i, a0 - a1 * cos(2 * pi * t) + a2 * cos(4 * pi * t));
    }
    return set_out(c, n, k);
}

static int mel_weight_matrix(timport *c, const Onnx__NodeProto *n) {
    double nmel = 0, dftl = 0, rate = 0, lo = 0, hi = 0;
    DLDataType dt;
    int rc;
    if ((rc = scalar(c, n, 0, "num_mel_bins", &nmel)) ||
        (rc = scalar(c, n, 1, "dft_length", &dftl)) ||
        (rc = scalar(c, n, 2, "sample_rate", &rate)) ||
        (rc = scalar(c, n, 3, "lower_edge_hertz", &lo)) ||
        (rc = scalar(c, n, 4, "upper_edge_hertz", &hi)) ||
        (rc = out_dtype(c, "output_datatype", 1, &dt))) {
        return rc;
    }
    if (!(nmel >= 1 && nmel <= 4096 && dftl >= 1 && dftl <= 1048576 && rate > 0 && lo >= 0 &&
          hi > lo)) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "needs 1 <= num_mel_bins <= 4096, 1 <= dft_length, sample_rate > 0 and "
                          "0 <= lower_edge_hertz < upper_edge_hertz");
    }
    int64_t M = (int64_t)nmel, bins = (int64_t)dftl / 2 + 1;
    int64_t shape[2] = {bins, M};
    hconst *k = new_out(c, dt, 2, shape);
    if (!k) {
        return tether_last_status();
    }
    for (size_t i = 0; i < k->count; i++) {
        put(k, i, 0);
    }
    double lmel = 2595 * log10(1 + lo / 700), hmel = 2595 * log10(1 + hi / 700);
    double step = (hmel - lmel) / (double)(M + 2);
    int64_t fb[4098];
    for (int64_t i = 0; i < M + 2; i++) {
        double hz = 700 * (pow(10, ((double)i * step + lmel) / 2595) - 1);
        fb[i] = (int64_t)floor((dftl + 1) * hz / rate);
    }
    for (int64_t i = 0; i < M; i++) {
        int64_t l = fb[i], ce = fb[i + 1], h = fb[i + 2];
        if (l < 0 || h >= bins || ce < l || h < ce) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "the mel bands fall outside the %lld spectrogram bins",
                              (long long)bins);
        }
        if (ce == l) {
            put(k, (size_t)(ce * M + i), 1);
        } else {
            for (int64_t j = l; j <= ce; j++) {
                put(k, (size_t)(j * M + i), (double)(j - l) / (double)(ce - l));
            }
        }
        for (int64_t j = ce; j < h; j++) {
            put(k, (size_t)(j * M + i), (double)(h - j) / (double)(h - ce));
        }
    }
    return set_out(c, n, k);
}

int tonnx_host_signal(timport *c, const Onnx__NodeProto *n, bool *done) {
    const char *t = S(n->op_type);
    *done = true;
    if (!strcmp(t, "EyeLike")) {
        return eye_like(c, n);
    }
    if (!strcmp(t, "HannWindow")) {
        return window(c, n, 0.5, 0.5, 0);
    }
    if (!strcmp(t, "HammingWindow")) {
        return window(c, n, 25.0 / 46.0, 21.0 / 46.0, 0);
    }
    if (!strcmp(t, "BlackmanWindow")) {
        return window(c, n, 0.42, 0.5, 0.08);
    }
    if (!strcmp(t, "MelWeightMatrix")) {
        return mel_weight_matrix(c, n);
    }
    *done = false;
    return TETHER_OK;
}
