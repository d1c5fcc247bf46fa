/*
 * The ONNX training-domain operators (ai.onnx.preview.training, version 1): Adagrad, Adam and
 * Momentum (standard and nesterov), lowered into the IR's elementwise operators (mul, add, sub,
 * div, sqrt, pow, greater, where, cast), so the interpreter, both C ABIs and OpenCL run them with
 * no kernel of their own. The update count T stays a run-time input (cast to the tensors' type):
 * one compiled module serves every training step.
 *
 * What must stay true: the formulas are those of the ONNX operator definitions (the attribute
 * defaults included); every input group (X, G, V/H) is checked for its count and shapes; a
 * domain version other than 1 is refused naming it. The table rows, arities and names live here
 * (tonnx_train_op_find / tonnx_train_arity), reached from ops.c's lookups.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

#define TRAIN_DOMAIN "ai.onnx.preview.training"

typedef struct tctx {
    timport *c;
    DLDataType dt; /* the element type the update computes in (X_1's) */
    int k;         /* a counter for unique node names */
} tctx;

/* A node op(a, b) (b < 0: unary) into a fresh tensor *out. */
static int op2(tctx *t, tether_op op, int a, int b, int *out) {
    char sfx[32];
    snprintf(sfx, sizeof sfx, "t%d", t->k++);
    int rc = tonnx_temp_tensor(t->c, sfx, out);
    if (rc) {
        return rc;
    }
    int in[2] = {a, b};
    tether_ir_attrs at;
    tether_ir_attrs_init(op, &at);
    return tonnx_emit(t->c, sfx, op, in, b < 0 ? 1 : 2, *out, &at);
}

/* x cast to the update's type (x itself when it has it already). */
static int as_type(tctx *t, int x, int *out) {
    if (tether_dtype_equal(t->c->g->tensors[x].dtype, t->dt)) {
        *out = x;
        return TETHER_OK;
    }
    char sfx[32];
    snprintf(sfx, sizeof sfx, "t%d", t->k++);
    int rc = tonnx_temp_tensor(t->c, sfx, out);
    if (rc) {
        return rc;
    }
    tether_ir_attrs at;
    tether_ir_attrs_init(TETHER_OP_CAST, &at);
    at.to = t->dt;
    return tonnx_emit(t->c, sfx, TETHER_OP_CAST, &x, 1, *out, &at);
}

/* A scalar constant v of the update's type. */
static int scalar(tctx *t, double v, int *out) {
    char sfx[32];
    snprintf(sfx, sizeof sfx, "k%d", t->k++);
    float f = (float)v;
    int k, rc = tonnx_const_tensor(t->c, sfx, 0, NULL, &f, &k);
    return rc ? rc : as_type(t, k, out);
}

/* The last node of a chain writes the ONNX output: op(a, b) into output index o. */
static int op2_out(tctx *t, tether_op op, int a, int b, int o) {
    int y, rc = tonnx_out_tensor(t->c, o, &y);
    if (rc) {
        return rc;
    }
    int in[2] = {a, b};
    tether_ir_attrs at;
    tether_ir_attrs_init(op, &at);
    char sfx[32];
    snprintf(sfx, sizeof sfx, "out%d", o);
    return tonnx_emit(t->c, sfx, op, in, b < 0 ? 1 : 2, y, &at);
}

/* Inputs R, T and then `groups` groups of n tensors each: n, and checks that every tensor of a
 * group has X_i's shape. */
static int groups_of(timport *c, const Onnx__NodeProto *n, int groups, int outs, int *count) {
    size_t rest = n->n_input - 2;
    if (n->n_input < 2 + (size_t)groups || rest % (size_t)groups) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "takes R, T and %d groups of equally many tensors, %zu inputs given",
                          groups, n->n_input);
    }
    int cnt = (int)(rest / (size_t)groups);
    if ((int)n->n_output != outs * cnt) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "has %zu outputs, %d expected for %d tensors",
                          n->n_output, outs * cnt, cnt);
    }
    for (int i = 0; i < cnt; i++) {
        int x, rc = tonnx_in_tensor(c, 2 + i, true, &x);
        if (rc) {
            return rc;
        }
        tether_ir_tensor xv = c->g->tensors[x]; /* a copy: the array moves as tensors are added */
        const tether_ir_tensor *xt = &xv;
        if (xt->dtype.code != kDLFloat && xt->dtype.code != kDLBfloat) {
            return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "input '%s' is not floating point",
                              S(n->input[2 + i]));
        }
        for (int g = 1; g < groups; g++) {
            int o;
            if ((rc = tonnx_in_tensor(c, 2 + g * cnt + i, true, &o))) {
                return rc;
            }
            const tether_ir_tensor *ot = &c->g->tensors[o];
            bool same = ot->ndim == xt->ndim && tether_dtype_equal(ot->dtype, xt->dtype);
            for (int d = 0; same && d < xt->ndim; d++) {
                same = ot->shape[d] == xt->shape[d];
            }
            if (!same) {
                return tonnx_fail(c, TETHER_ERR_MISMATCH,
                                  "input '%s' differs from '%s' in type or shape",
                                  S(n->input[2 + g * cnt + i]), S(n->input[2 + i]));
            }
        }
    }
    *count = cnt;
    return TETHER_OK;
}

static int attr_f(timport *c, const char *name, float def, double *out) {
    float v;
    int rc = tonnx_attr_float(c, name, def, &v);
    *out = v;
    return rc;
}

/* R and T in the update's type; G_reg = norm_coefficient * X + G. */
static int common(tctx *t, int xi, int gi, double norm, int *greg) {
    int x, g, rc;
    if ((rc = tonnx_in_tensor(t->c, xi, true, &x)) || (rc = tonnx_in_tensor(t->c, gi, true, &g))) {
        return rc;
    }
    if (norm == 0.0) {
        *greg = g;
        return TETHER_OK;
    }
    int k, xn;
    if ((rc = scalar(t, norm, &k)) || (rc = op2(t, TETHER_OP_MUL, k, x, &xn))) {
        return rc;
    }
    return op2(t, TETHER_OP_ADD, xn, g, greg);
}

static int rt(tctx *t, int *r, int *tf) {
    int r0, t0, rc;
    if ((rc = tonnx_in_tensor(t->c, 0, true, &r0)) || (rc = tonnx_in_tensor(t->c, 1, true, &t0))) {
        return rc;
    }
    const tether_ir_tensor *a = &t->c->g->tensors[r0], *b = &t->c->g->tensors[t0];
    if (tether_ir_tensor_elements(a) != 1 || tether_ir_tensor_elements(b) != 1) {
        return tonnx_fail(t->c, TETHER_ERR_INVALID_ARG,
                          "R and T must be scalars (one element each)");
    }
    if ((rc = as_type(t, r0, r))) {
        return rc;
    }
    return as_type(t, t0, tf);
}

/* Adagrad: r = R / (1 + T * decay_factor); G_reg; H_new = H + G_reg^2;
 * X_new = X - r * G_reg / (sqrt(H_new) + epsilon). */
static int adagrad(tctx *t, const Onnx__NodeProto *n) {
    timport *c = t->c;
    double decay, eps, norm;
    int cnt = 0, rc;
    if ((rc = attr_f(c, "decay_factor", 0.0f, &decay)) ||
        (rc = attr_f(c, "epsilon", 1e-6f, &eps)) ||
        (rc = attr_f(c, "norm_coefficient", 0.0f, &norm)) || (rc = groups_of(c, n, 3, 2, &cnt))) {
        return rc;
    }
    int r, tf, kd, one, td, den, lr, ke;
    if ((rc = rt(t, &r, &tf)) || (rc = scalar(t, decay, &kd)) || (rc = scalar(t, 1.0, &one)) ||
        (rc = op2(t, TETHER_OP_MUL, tf, kd, &td)) || (rc = op2(t, TETHER_OP_ADD, one, td, &den)) ||
        (rc = op2(t, TETHER_OP_DIV, r, den, &lr)) || (rc = scalar(t, eps, &ke))) {
        return rc;
    }
    for (int i = 0; i < cnt; i++) {
        int x, h, greg, g2, hs, ha, q, step;
        if ((rc = tonnx_in_tensor(c, 2 + i, true, &x)) ||
            (rc = tonnx_in_tensor(c, 2 + 2 * cnt + i, true, &h)) ||
            (rc = common(t, 2 + i, 2 + cnt + i, norm, &greg)) ||
            (rc = op2(t, TETHER_OP_MUL, greg, greg, &g2))) {
            return rc;
        }
        int hn;
        if ((rc = tonnx_out_tensor(c, cnt + i, &hn))) {
            return rc;
        }
        int in[2] = {h, g2};
        tether_ir_attrs at;
        tether_ir_attrs_init(TETHER_OP_ADD, &at);
        char sfx[32];
        snprintf(sfx, sizeof sfx, "h%d", i);
        if ((rc = tonnx_emit(c, sfx, TETHER_OP_ADD, in, 2, hn, &at)) ||
            (rc = op2(t, TETHER_OP_SQRT, hn, -1, &hs)) ||
            (rc = op2(t, TETHER_OP_ADD, hs, ke, &ha)) ||
            (rc = op2(t, TETHER_OP_DIV, greg, ha, &q)) ||
            (rc = op2(t, TETHER_OP_MUL, lr, q, &step)) ||
            (rc = op2_out(t, TETHER_OP_SUB, x, step, i))) {
            return rc;
        }
    }
    return TETHER_OK;
}

/* Momentum: G_reg; beta_adj = T > 0 ? beta : 1; V_new = alpha * V + beta_adj * G_reg;
 * standard: X_new = X - R * V_new; nesterov: X_new = X - R * (G_reg + alpha * V_new). */
static int momentum(tctx *t, const Onnx__NodeProto *n) {
    timport *c = t->c;
    double alpha, beta, norm;
    char mode[32];
    int cnt = 0, rc;
    if ((rc = attr_f(c, "alpha", NAN, &alpha)) || (rc = attr_f(c, "beta", NAN, &beta)) ||
        (rc = attr_f(c, "norm_coefficient", NAN, &norm)) ||
        (rc = tonnx_attr_string(c, "mode", "", mode, sizeof mode)) ||
        (rc = groups_of(c, n, 3, 2, &cnt))) {
        return rc;
    }
    if (alpha != alpha || beta != beta || norm != norm) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "alpha, beta and norm_coefficient are required attributes");
    }
    bool nesterov = strcmp(mode, "nesterov") == 0;
    if (!nesterov && strcmp(mode, "standard") != 0) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "mode '%s' (standard or nesterov)", mode);
    }
    int r, tf, zero, kb, one, pos, badj, ka;
    if ((rc = rt(t, &r, &tf)) || (rc = scalar(t, 0.0, &zero)) || (rc = scalar(t, beta, &kb)) ||
        (rc = scalar(t, 1.0, &one)) || (rc = op2(t, TETHER_OP_GREATER, tf, zero, &pos)) ||
        (rc = scalar(t, alpha, &ka))) {
        return rc;
    }
    {
        char sfx[32];
        snprintf(sfx, sizeof sfx, "t%d", t->k++);
        if ((rc = tonnx_temp_tensor(c, sfx, &badj))) {
            return rc;
        }
        int in[3] = {pos, kb, one};
        tether_ir_attrs at;
        tether_ir_attrs_init(TETHER_OP_WHERE, &at);
        if ((rc = tonnx_emit(c, sfx, TETHER_OP_WHERE, in, 3, badj, &at))) {
            return rc;
        }
    }
    for (int i = 0; i < cnt; i++) {
        int x, v, greg, av, bg, vn, step;
        if ((rc = tonnx_in_tensor(c, 2 + i, true, &x)) ||
            (rc = tonnx_in_tensor(c, 2 + 2 * cnt + i, true, &v)) ||
            (rc = common(t, 2 + i, 2 + cnt + i, norm, &greg)) ||
            (rc = op2(t, TETHER_OP_MUL, ka, v, &av)) ||
            (rc = op2(t, TETHER_OP_MUL, badj, greg, &bg)) ||
            (rc = tonnx_out_tensor(c, cnt + i, &vn))) {
            return rc;
        }
        int in[2] = {av, bg};
        tether_ir_attrs at;
        tether_ir_attrs_init(TETHER_OP_ADD, &at);
        char sfx[32];
        snprintf(sfx, sizeof sfx, "v%d", i);
        if ((rc = tonnx_emit(c, sfx, TETHER_OP_ADD, in, 2, vn, &at))) {
            return rc;
        }
        int dir = vn;
        if (nesterov) {
            int avn;
            if ((rc = op2(t, TETHER_OP_MUL, ka, vn, &avn)) ||
                (rc = op2(t, TETHER_OP_ADD, greg, avn, &dir))) {
                return rc;
            }
        }
        if ((rc = op2(t, TETHER_OP_MUL, r, dir, &step)) ||
            (rc = op2_out(t, TETHER_OP_SUB, x, step, i))) {
            return rc;
        }
    }
    return TETHER_OK;
}

/* Adam: G_reg; V_new = alpha * V + (1 - alpha) * G_reg; H_new = beta * H + (1 - beta) * G_reg^2;
 * R_adj = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R;
 * X_new = (1 - norm_coefficient_post) * (X - R_adj * V_new / (sqrt(H_new) + epsilon)). */
static int adam(tctx *t, const Onnx__NodeProto *n) {
    timport *c = t->c;
    double alpha, beta, eps, norm, post;
    int cnt = 0, rc;
    if ((rc = attr_f(c, "alpha", 0.9f, &alpha)) || (rc = attr_f(c, "beta", 0.999f, &beta)) ||
        (rc = attr_f(c, "epsilon", 1e-6f, &eps)) ||
        (rc = attr_f(c, "norm_coefficient", 0.0f, &norm)) ||
        (rc = attr_f(c, "norm_coefficient_post", 0.0f, &post)) ||
        (rc = groups_of(c, n, 4, 3, &cnt))) {
        return rc;
    }
    int r, tf, zero, one, ka, kb, ka1, kb1, ke, pos, at_, bt, oma, omb, sq, num, radj0, radj;
    if ((rc = rt(t, &r, &tf)) || (rc = scalar(t, 0.0, &zero)) || (rc = scalar(t, 1.0, &one)) ||
        (rc = scalar(t, alpha, &ka)) || (rc = scalar(t, beta, &kb)) ||
        (rc = scalar(t, 1.0 - alpha, &ka1)) || (rc = scalar(t, 1.0 - beta, &kb1)) ||
        (rc = scalar(t, eps, &ke)) || (rc = op2(t, TETHER_OP_GREATER, tf, zero, &pos)) ||
        (rc = op2(t, TETHER_OP_POW, ka, tf, &at_)) || (rc = op2(t, TETHER_OP_POW, kb, tf, &bt)) ||
        (rc = op2(t, TETHER_OP_SUB, one, at_, &oma)) ||
        (rc = op2(t, TETHER_OP_SUB, one, bt, &omb)) ||
        (rc = op2(t, TETHER_OP_SQRT, omb, -1, &sq)) || (rc = op2(t, TETHER_OP_MUL, r, sq, &num)) ||
        (rc = op2(t, TETHER_OP_DIV, num, oma, &radj0))) {
        return rc;
    }
    {
        char sfx[32];
        snprintf(sfx, sizeof sfx, "t%d", t->k++);
        if ((rc = tonnx_temp_tensor(c, sfx, &radj))) {
            return rc;
        }
        int in[3] = {pos, radj0, r};
        tether_ir_attrs at;
        tether_ir_attrs_init(TETHER_OP_WHERE, &at);
        if ((rc = tonnx_emit(c, sfx, TETHER_OP_WHERE, in, 3, radj, &at))) {
            return rc;
        }
    }
    for (int i = 0; i < cnt; i++) {
        int x, v, h, greg, av, ag, g2, bh, bg, vn, hn, hs, ha, q, step, xn;
        if ((rc = tonnx_in_tensor(c, 2 + i, true, &x)) ||
            (rc = tonnx_in_tensor(c, 2 + 2 * cnt + i, true, &v)) ||
            (rc = tonnx_in_tensor(c, 2 + 3 * cnt + i, true, &h)) ||
            (rc = common(t, 2 + i, 2 + cnt + i, norm, &greg)) ||
            (rc = op2(t, TETHER_OP_MUL, ka, v, &av)) ||
            (rc = op2(t, TETHER_OP_MUL, ka1, greg, &ag)) ||
            (rc = op2(t, TETHER_OP_MUL, greg, greg, &g2)) ||
            (rc = op2(t, TETHER_OP_MUL, kb, h, &bh)) ||
            (rc = op2(t, TETHER_OP_MUL, kb1, g2, &bg)) ||
            (rc = tonnx_out_tensor(c, cnt + i, &vn)) ||
            (rc = tonnx_out_tensor(c, 2 * cnt + i, &hn))) {
            return rc;
        }
        tether_ir_attrs at;
        tether_ir_attrs_init(TETHER_OP_ADD, &at);
        int inv[2] = {av, ag}, inh[2] = {bh, bg};
        char sv[32], sh[32];
        snprintf(sv, sizeof sv, "v%d", i);
        snprintf(sh, sizeof sh, "h%d", i);
        if ((rc = tonnx_emit(c, sv, TETHER_OP_ADD, inv, 2, vn, &at)) ||
            (rc = tonnx_emit(c, sh, TETHER_OP_ADD, inh, 2, hn, &at)) ||
            (rc = op2(t, TETHER_OP_SQRT, hn, -1, &hs)) ||
            (rc = op2(t, TETHER_OP_ADD, hs, ke, &ha)) || (rc = op2(t, TETHER_OP_DIV, vn, ha, &q)) ||
            (rc = op2(t, TETHER_OP_MUL, radj, q, &step))) {
            return rc;
        }
        if (post == 0.0) {
            rc = op2_out(t, TETHER_OP_SUB, x, step, i);
        } else {
            int kp;
            rc = op2(t, TETHER_OP_SUB, x, step, &xn);
            rc = rc ? rc : scalar(t, 1.0 - post, &kp);
            rc = rc ? rc : op2_out(t, TETHER_OP_MUL, kp, xn, i);
        }
        if (rc) {
            return rc;
        }
    }
    return TETHER_OK;
}

static int cv_train(timport *c, const Onnx__NodeProto *n) {
    for (size_t k = 0; k < c->m->n_opset_import; k++) {
        const Onnx__OperatorSetIdProto *o = c->m->opset_import[k];
        if (strcmp(S(o->domain), TRAIN_DOMAIN) == 0 && o->version != 1) {
            return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                              "domain '%s' version %lld (only version 1 is known)", TRAIN_DOMAIN,
                              (long long)o->version);
        }
    }
    tctx t = {c, TETHER_FLOAT32, 0};
    if (n->n_input > 2) {
        int x, rc = tonnx_in_tensor(c, 2, true, &x);
        if (rc) {
            return rc;
        }
        t.dt = c->g->tensors[x].dtype;
    }
    const char *op = S(n->op_type);
    return !strcmp(op, "Adagrad") ? adagrad(&t, n)
           : !strcmp(op, "Adam")  ? adam(&t, n)
                                  : momentum(&t, n);
}

#define MAXV TETHER_ONNX_OPSET_MAX
static const op_def train_ops[] = {
    {"Adagrad", 1, MAXV, "mul, add, div, sqrt, sub (+ cast)",
     "decay_factor,epsilon,norm_coefficient", false, false, cv_train, NULL},
    {"Adam", 1, MAXV, "mul, add, sub, div, sqrt, pow, greater, where (+ cast)",
     "alpha,beta,epsilon,norm_coefficient,norm_coefficient_post", false, false, cv_train, NULL},
    {"Momentum", 1, MAXV, "mul, add, sub, greater, where (+ cast)",
     "alpha,beta,mode,norm_coefficient", false, false, cv_train, NULL},
};

/* R, T and at least one group; the outputs are checked against the groups by the converter. */
static const tonnx_arity train_arity[] = {
    {5, -1, 2, -1, false},
    {6, -1, 3, -1, false},
    {5, -1, 2, -1, false},
};

const op_def *tonnx_train_op_find(const char *domain, const char *op_type) {
    if (!domain || strcmp(domain, TRAIN_DOMAIN) != 0) {
        return NULL;
    }
    for (size_t i = 0; i < sizeof train_ops / sizeof *train_ops; i++) {
        if (strcmp(train_ops[i].op_type, op_type) == 0) {
            return &train_ops[i];
        }
    }
    return NULL;
}

int tonnx_train_arity(const op_def *d, tonnx_arity *out) {
    for (size_t i = 0; i < sizeof train_ops / sizeof *train_ops; i++) {
        if (d == &train_ops[i]) {
            *out = train_arity[i];
            return TETHER_OK;
        }
    }
    return TETHER_ERR_NOT_FOUND;
}
