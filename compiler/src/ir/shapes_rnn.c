/*
 * Shape and typing rules of the recurrent layers (rnn, gru, lstm) and reverse_sequence (DATA rows
 * of ops.def), and the decoding of a recurrent node's attributes that the interpreter and the C
 * emitter share (tether__rnn_geo).
 *
 * What must stay true: every operand's shape is checked against the layer's geometry here
 * (directions, gates, hidden size), so the reference loops and the C kernel index them without
 * looking; the activation list decodes to one known activation per gate function and direction;
 * an unknown code or a count other than D x (1, 2 or 3) is an error naming the node.
 */
#include <float.h>
#include <string.h>

#include "../internal.h"
#include "tether/crt/error.h"

static int gates_of(tether_op op) {
    return op == TETHER_OP_LSTM ? 4 : op == TETHER_OP_GRU ? 3 : 1;
}

static int funcs_of(tether_op op) {
    return op == TETHER_OP_LSTM ? 3 : op == TETHER_OP_GRU ? 2 : 1;
}

static float bits_float(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

int tether__rnn_geo(const tether_ir_graph *g, const tether_ir_node *n, tether__rnn_geo_t *r) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = tether__ir_in(g, n, 0), *w = tether__ir_in(g, n, 1);
    memset(r, 0, sizeof *r);
    r->gates = gates_of(n->op);
    r->funcs = funcs_of(n->op);
    int64_t dir = a->mode & 3;
    if (dir > 2 || a->mode < 0 || a->mode > 7) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                     "mode %lld is not a direction (0 forward, 1 reverse, 2 "
                                     "bidirectional) plus 4 x a flag",
                                     (long long)a->mode);
    }
    r->dirs = dir == 2 ? 2 : 1;
    r->reverse = dir == 1;
    r->flag = (a->mode & 4) != 0;
    if (r->flag && n->op == TETHER_OP_RNN) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "rnn takes no flag in mode");
    }
    r->clip = a->max;
    if (!(r->clip > 0.0f)) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "clip %g is not positive",
                                     (double)r->clip);
    }
    r->has_clip = r->clip < FLT_MAX;
    int nact = r->funcs * r->dirs;
    if (a->nints != 2 * nact) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                     "activations has %d entries, expected %d (%d activations, "
                                     "then their betas)",
                                     a->nints, 2 * nact, nact);
    }
    for (int i = 0; i < nact; i++) {
        int64_t v = a->ints[i];
        if (v < 0 || (v & 255) >= TETHER__RNN_ACT_COUNT || (v >> 8) > 0xffffffffLL ||
            a->ints[nact + i] < 0 || a->ints[nact + i] > 0xffffffffLL) {
            return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                         "activation %d (%lld) is not a known activation", i,
                                         (long long)v);
        }
        r->act[i] = (int)(v & 255);
        r->alpha[i] = bits_float((uint32_t)(v >> 8));
        r->beta[i] = bits_float((uint32_t)a->ints[nact + i]);
    }
    if (x && w && x->ndim == 3 && w->ndim == 3) {
        r->T = x->shape[0];
        r->B = x->shape[1];
        r->I = x->shape[2];
        r->H = a->k;
    }
    return TETHER_OK;
}

/* t's shape equals the ndim extents of want, else an error naming the operand. */
static int want_shape(const tether_ir_node *n, const tether_ir_tensor *t, const char *what,
                      int ndim, const int64_t *want) {
    bool ok = t->ndim == ndim;
    for (int d = 0; ok && d < ndim; d++) {
        ok = t->shape[d] == want[d];
    }
    if (ok) {
        return TETHER_OK;
    }
    char got[96], exp[96];
    tether__shape_text(got, sizeof got, t->shape, t->ndim);
    tether__shape_text(exp, sizeof exp, want, ndim);
    return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "%s '%s' has shape %s, expected %s",
                                 what, t->name, got, exp);
}

static int rnn_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond) {
    tether__rnn_geo_t r;
    int rc = tether__rnn_geo(g, n, &r);
    if (rc) {
        return rc;
    }
    const tether_ir_tensor *x = tether__ir_in(g, n, 0), *w = tether__ir_in(g, n, 1);
    const tether_ir_tensor *rr = tether__ir_in(g, n, 2);
    if (x->ndim != 3) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                     "x '%s' has rank %d, expected 3 [T,B,I]", x->name, x->ndim);
    }
    int64_t H = n->attrs.k, G = r.gates, D = r.dirs, T = x->shape[0], B = x->shape[1];
    int64_t I = x->shape[2];
    if (H < 1 || H > ((int64_t)1 << 24)) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG, "hidden size k %lld out of range",
                                     (long long)H);
    }
    int64_t ws[3] = {D, G * H, I}, rs[3] = {D, G * H, H}, bs[2] = {D, 2 * G * H};
    int64_t sl[1] = {B}, hs[3] = {D, B, H}, ps[2] = {D, 3 * H};
    if ((rc = want_shape(n, w, "w", 3, ws)) || (rc = want_shape(n, rr, "r", 3, rs))) {
        return rc;
    }
    static const char *const names[] = {
        "", "", "", "bias", "sequence_lens", "initial_h", "initial_c", "peepholes"};
    for (int i = 3; i < n->ninputs; i++) {
        const tether_ir_tensor *t = tether__ir_in(g, n, i);
        if (!t) {
            continue;
        }
        const int64_t *want = i == 3 ? bs : i == 4 ? sl : i == 7 ? ps : hs;
        int nd = i == 3 || i == 7 ? 2 : i == 4 ? 1 : 3;
        if ((rc = want_shape(n, t, names[i], nd, want))) {
            return rc;
        }
    }
    if (T + 2 > ((int64_t)1 << 40) || B * H > ((int64_t)1 << 40)) {
        return tether__ir_node_error(n, TETHER_ERR_LIMIT, "the output is too large");
    }
    os[0] = T + (n->op == TETHER_OP_RNN ? 1 : 2);
    os[1] = D;
    os[2] = B;
    os[3] = H;
    *ond = 4;
    return TETHER_OK;
}

static int reverse_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond) {
    const tether_ir_tensor *x = tether__ir_in(g, n, 0), *l = tether__ir_in(g, n, 1);
    int64_t ta = n->attrs.axis, ba = n->attrs.mode;
    if (x->ndim < 2 || ta < 0 || ba < 0 || ta >= x->ndim || ba >= x->ndim || ta == ba) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                     "time axis %lld and batch axis %lld must be two different "
                                     "dimensions of the input's %d",
                                     (long long)ta, (long long)ba, x->ndim);
    }
    if (l->ndim != 1 || l->shape[0] != x->shape[ba]) {
        return tether__ir_node_error(n, TETHER_ERR_INVALID_ARG,
                                     "sequence_lens '%s' must be a vector of the batch extent %lld",
                                     l->name, (long long)x->shape[ba]);
    }
    memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    *ond = x->ndim;
    return TETHER_OK;
}

int tether__ir_rnn_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond) {
    return n->op == TETHER_OP_REVERSE_SEQUENCE ? reverse_shape(g, n, os, ond)
                                               : rnn_shape(g, n, os, ond);
}

/* Sequence lengths: any integer type (ONNX gives int32 or int64). */
static int is_index(DLDataType t) {
    tether__dclass k = tether__dtype_class(t);
    return (k == TETHER__DC_INT || k == TETHER__DC_UINT) && !tether__dtype_is_bool(t);
}

static int bad_type(const tether_ir_node *n, const tether_ir_tensor *t, const char *takes) {
    return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED, "input '%s' has element type %s; %s",
                                 t->name, tether__dtype_str(t->dtype), takes);
}

int tether__ir_rnn_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out) {
    const tether_ir_tensor *x = tether__ir_in(g, n, 0);
    *out = x->dtype;
    if (n->op == TETHER_OP_REVERSE_SEQUENCE) {
        const tether_ir_tensor *l = tether__ir_in(g, n, 1);
        return is_index(l->dtype) ? TETHER_OK : bad_type(n, l, "sequence_lens is an integer type");
    }
    for (int i = 0; i < n->ninputs; i++) {
        const tether_ir_tensor *t = tether__ir_in(g, n, i);
        if (!t) {
            continue;
        }
        if (i == 4 ? !is_index(t->dtype)
                   : !(t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1)) {
            return bad_type(n, t,
                            i == 4 ? "sequence_lens is an integer type"
                                   : "the recurrent layers compute float32");
        }
    }
    return TETHER_OK;
}
