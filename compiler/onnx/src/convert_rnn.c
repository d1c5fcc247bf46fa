/*
 * ONNX RNN, GRU and LSTM (opset 7+) into the IR's rnn / gru / lstm node, and ReverseSequence
 * (opset 10+) into reverse_sequence (issue 27, wt27e).
 *
 * The IR node takes the ONNX inputs in their order and layout 0 ([T,B,I], states [D,B,H]); its
 * one output [T+S,D,B,H] holds Y, then Y_h (row T) and Y_c (row T+1, lstm), which slices and
 * squeezes turn into the node's outputs (only those used). layout 1 ([B,T,I], states and outputs
 * batch first) adds transposes around the node.
 *
 * What must stay true: every attribute is honoured or refused naming it: direction, hidden_size
 * (checked against R when given), activations (one per gate function, or one per function and
 * direction; names as ONNX spells them, case-insensitive), activation_alpha/_beta (consumed in
 * order by the activations that take them: alpha by Affine, LeakyRelu, ThresholdedRelu,
 * ScaledTanh, HardSigmoid, Elu; beta by Affine, ScaledTanh, HardSigmoid; missing ones take the
 * ONNX operators' defaults; values left over are an error), clip, input_forget,
 * linear_before_reset, layout.
 */
#include <ctype.h>
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "import.h"
#include "tether/crt/error.h"

/* The activations in the order of their codes in the IR (ops.def; TETHER__RNN_SIGMOID ...
 * of compiler/src/internal.h): an activation's code is its index here. */
static const struct {
    const char *name;
    int nalpha, nbeta;
    float alpha, beta; /* the defaults of the ONNX operator of that name */
} acts[] = {
    {"sigmoid", 0, 0, 0.0f, 0.0f},    {"tanh", 0, 0, 0.0f, 0.0f},
    {"relu", 0, 0, 0.0f, 0.0f},       {"affine", 1, 1, 1.0f, 0.0f},
    {"leakyrelu", 1, 0, 0.01f, 0.0f}, {"thresholdedrelu", 1, 0, 1.0f, 0.0f},
    {"scaledtanh", 1, 1, 1.0f, 1.0f}, {"hardsigmoid", 1, 1, 0.2f, 0.5f},
    {"elu", 1, 0, 1.0f, 0.0f},        {"softsign", 0, 0, 0.0f, 0.0f},
    {"softplus", 0, 0, 0.0f, 0.0f},
};

static int64_t fbits(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return (int64_t)b;
}

/* The activations list and its parameters into a->ints (ops.def's packing). */
static int activations(timport *c, const Onnx__NodeProto *n, int funcs, int dirs,
                       tether_ir_attrs *a) {
    static const char *const defaults[3][3] = {
        {"tanh", "", ""}, {"sigmoid", "tanh", ""}, {"sigmoid", "tanh", "tanh"}};
    const char *names[6];
    char buf[6][32];
    const Onnx__AttributeProto *at = tonnx_attr(n, "activations");
    int given = at ? (int)at->n_strings : 0;
    if (at && at->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute 'activations' must be strings");
    }
    if (at && given != funcs && given != funcs * dirs) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "attribute 'activations' has %d entries; this layer takes %d per "
                          "direction (%d directions)",
                          given, funcs, dirs);
    }
    int nact = funcs * dirs;
    for (int i = 0; i < nact; i++) {
        if (!at) {
            names[i] = defaults[funcs - 1][i % funcs];
            continue;
        }
        const ProtobufCBinaryData *s = &at->strings[i % given];
        size_t len = s->len < sizeof buf[i] - 1 ? s->len : sizeof buf[i] - 1;
        for (size_t j = 0; j < len; j++) {
            buf[i][j] = (char)tolower(s->data[j]);
        }
        buf[i][len] = 0;
        names[i] = buf[i];
    }
    const Onnx__AttributeProto *aa = tonnx_attr(n, "activation_alpha");
    const Onnx__AttributeProto *ab = tonnx_attr(n, "activation_beta");
    size_t na = aa ? aa->n_floats : 0, nb = ab ? ab->n_floats : 0, ia = 0, ib = 0;
    for (int i = 0; i < nact; i++) {
        size_t k = 0;
        while (k < sizeof acts / sizeof *acts && strcmp(acts[k].name, names[i])) {
            k++;
        }
        if (k == sizeof acts / sizeof *acts) {
            return tonnx_fail(
                c, TETHER_ERR_UNSUPPORTED,
                "activation '%.*s' is not one of Sigmoid, Tanh, Relu, Affine, "
                "LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, "
                "Softsign, Softplus",
                at ? (int)(at->strings[i % given].len > 64 ? 64 : at->strings[i % given].len)
                   : (int)strlen(names[i]),
                at ? (const char *)at->strings[i % given].data : names[i]);
        }
        float al = acts[k].alpha, be = acts[k].beta;
        if (acts[k].nalpha && ia < na) {
            al = aa->floats[ia++];
        }
        if (acts[k].nbeta && ib < nb) {
            be = ab->floats[ib++];
        }
        a->ints[i] = (int64_t)k + 256 * fbits(al);
        a->ints[nact + i] = fbits(be);
    }
    if (ia < na || ib < nb) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "activation_alpha has %zu and activation_beta %zu values; the "
                          "activations take %zu and %zu",
                          na, nb, ia, ib);
    }
    a->nints = 2 * nact;
    return TETHER_OK;
}

/* A transpose of t by perm (rank nd) into out (-1: a new tensor, *res). */
static int transpose(timport *c, const char *what, int t, const int64_t *perm, int nd, int out,
                     int *res) {
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_TRANSPOSE, &a);
    memcpy(a.ints, perm, sizeof(int64_t) * (size_t)nd);
    a.nints = nd;
    int rc = out >= 0 ? TETHER_OK : tonnx_temp_tensor(c, what, &out);
    if (!rc) {
        rc = tonnx_emit(c, what, TETHER_OP_TRANSPOSE, &t, 1, out, &a);
    }
    *res = out;
    return rc;
}

/* Output i of the current node from rows [r0, r1) of the layer's result all ([T+S,D,B,H]):
 * squeezed when one row (a state), transposed for layout 1. */
static int take_rows(timport *c, int all, int i, int64_t r0, int64_t r1, int layout) {
    static const char *const what[] = {"Y", "Y_h", "Y_c"};
    const tether_ir_tensor *t = &c->g->tensors[all];
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_SLICE, &a);
    for (int d = 0; d < 4; d++) {
        a.ints[d] = d ? 0 : r0;
        a.ints[4 + d] = d ? t->shape[d] : r1;
        a.steps[d] = 1;
    }
    a.nints = 8;
    int out, s, rc;
    char suffix[32];
    snprintf(suffix, sizeof suffix, "%s_rows", what[i]);
    if ((rc = tonnx_out_tensor(c, i, &out))) {
        return rc;
    }
    if (i == 0 && !layout) { /* Y [T,D,B,H] */
        return tonnx_emit(c, "Y", TETHER_OP_SLICE, &all, 1, out, &a);
    }
    if ((rc = tonnx_temp_tensor(c, suffix, &s)) ||
        (rc = tonnx_emit(c, suffix, TETHER_OP_SLICE, &all, 1, s, &a))) {
        return rc;
    }
    if (i == 0) { /* layout 1: Y [B,T,D,H] */
        static const int64_t perm[4] = {2, 0, 1, 3};
        return transpose(c, "Y", s, perm, 4, out, &s);
    }
    tether_ir_attrs_init(TETHER_OP_SQUEEZE, &a);
    a.ints[0] = 0;
    a.nints = 1;
    if (!layout) {
        return tonnx_emit(c, what[i], TETHER_OP_SQUEEZE, &s, 1, out, &a);
    }
    int q;
    snprintf(suffix, sizeof suffix, "%s_squeeze", what[i]);
    if ((rc = tonnx_temp_tensor(c, suffix, &q)) ||
        (rc = tonnx_emit(c, suffix, TETHER_OP_SQUEEZE, &s, 1, q, &a))) {
        return rc;
    }
    static const int64_t perm[3] = {1, 0, 2};
    return transpose(c, what[i], q, perm, 3, out, &q);
}

int tonnx_cv_recurrent(timport *c, const Onnx__NodeProto *n) {
    const char *ty = S(n->op_type);
    tether_op op = !strcmp(ty, "LSTM")  ? TETHER_OP_LSTM
                   : !strcmp(ty, "GRU") ? TETHER_OP_GRU
                                        : TETHER_OP_RNN;
    int funcs = op == TETHER_OP_LSTM ? 3 : op == TETHER_OP_GRU ? 2 : 1;
    int nin = op == TETHER_OP_LSTM ? 8 : 6, nout = op == TETHER_OP_LSTM ? 3 : 2;
    tether_ir_attrs a;
    tether_ir_attrs_init(op, &a);
    char dir[32];
    int64_t hidden, layout, flag = 0;
    float clip;
    int rc;
    if ((rc = tonnx_attr_string(c, "direction", "forward", dir, sizeof dir)) ||
        (rc = tonnx_attr_int(c, "hidden_size", -1, &hidden)) ||
        (rc = tonnx_attr_int(c, "layout", 0, &layout)) ||
        (rc = tonnx_attr_float(c, "clip", FLT_MAX, &clip))) {
        return rc;
    }
    if (op != TETHER_OP_RNN &&
        (rc = tonnx_attr_int(c, op == TETHER_OP_LSTM ? "input_forget" : "linear_before_reset", 0,
                             &flag))) {
        return rc;
    }
    int dirs = 1;
    if (!strcmp(dir, "forward")) {
        a.mode = 0;
    } else if (!strcmp(dir, "reverse")) {
        a.mode = 1;
    } else if (!strcmp(dir, "bidirectional")) {
        a.mode = 2;
        dirs = 2;
    } else {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "direction '%s' is not forward, reverse or bidirectional", dir);
    }
    if (layout != 0 && layout != 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "layout %lld is not 0 or 1",
                          (long long)layout);
    }
    if (!(clip > 0.0f)) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "clip %g is not positive", (double)clip);
    }
    if (flag != 0 && flag != 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute '%s' is %lld, not 0 or 1",
                          op == TETHER_OP_LSTM ? "input_forget" : "linear_before_reset",
                          (long long)flag);
    }
    a.mode += 4 * flag;
    a.max = clip;
    if ((rc = activations(c, n, funcs, dirs, &a))) {
        return rc;
    }
    int in[8];
    for (int i = 0; i < nin; i++) {
        if ((rc = tonnx_in_tensor(c, i, i < 3, &in[i]))) {
            return rc;
        }
    }
    const tether_ir_tensor *r = &c->g->tensors[in[2]];
    if (r->ndim != 3) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "R '%s' has rank %d, not 3", r->name, r->ndim);
    }
    if (hidden >= 0 && hidden != r->shape[2]) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "hidden_size %lld differs from R's last extent %lld", (long long)hidden,
                          (long long)r->shape[2]);
    }
    a.k = r->shape[2];
    if (layout) { /* batch first: X [B,T,I] and the states [B,D,H] into layout 0 */
        static const int64_t perm[3] = {1, 0, 2};
        static const char *const names[8] = {"X_t",         "", "", "", "", "initial_h_t",
                                             "initial_c_t", ""};
        for (int i = 0; i < nin; i++) {
            if (names[i][0] && in[i] >= 0 &&
                (rc = transpose(c, names[i], in[i], perm, 3, -1, &in[i]))) {
                return rc;
            }
        }
    }
    int all;
    if ((rc = tonnx_temp_tensor(c, "all", &all)) ||
        (rc = tonnx_emit(c, NULL, op, in, nin, all, &a))) {
        return rc;
    }
    int64_t T = c->g->tensors[all].shape[0] - (op == TETHER_OP_RNN ? 1 : 2);
    for (int i = 0; i < nout; i++) {
        if (tonnx_output_used(c, c->cur, i) &&
            (rc = take_rows(c, all, i, i ? T + i - 1 : 0, i ? T + i : T, (int)layout))) {
            return rc;
        }
    }
    return TETHER_OK;
}

int tonnx_cv_reverse_sequence(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_REVERSE_SEQUENCE, &a);
    int in[2], y, rc;
    if ((rc = tonnx_attr_int(c, "batch_axis", 1, &a.mode)) ||
        (rc = tonnx_attr_int(c, "time_axis", 0, &a.axis)) ||
        (rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 1, true, &in[1]))) {
        return rc;
    }
    if ((a.mode != 0 && a.mode != 1) || (a.axis != 0 && a.axis != 1) || a.mode == a.axis) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "batch_axis %lld and time_axis %lld must be 0 and 1 or 1 and 0",
                          (long long)a.mode, (long long)a.axis);
    }
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_REVERSE_SEQUENCE, in, 2, y, &a);
}
