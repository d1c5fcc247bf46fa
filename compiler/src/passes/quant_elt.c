/*
 * The integer-operator pass's elementwise and pooling patterns (docs/quantization.md "Integer
 * elementwise and pooling operators"): between dequantize nodes and a quantize node with constant
 * per-tensor 8-bit parameters,
 *   - add / mul (through at most one relu or clip, the output clamp) become qadd / qmul;
 *   - a unary float operator (sigmoid, leaky_relu, tanh, relu, clip, ...) becomes qlut, its 256
 *     entries quantize(op(dequantize(v))) computed here with the interpreter's own float
 *     arithmetic (so the table equals the float island's result for every input value);
 *   - max_pool becomes qmax_pool (max commutes with the increasing affine maps), followed by a
 *     requantizing qlut when the output's scale, zero point or type differ from the input's;
 *   - max_pool_arg's values on an 8-bit tensor (QOperator's MaxPool) becomes qmax_pool when every
 *     window holds an input element;
 *   - avg_pool that quant_passthrough.c leaves (padding not counted, ceil_mode) becomes qavg_pool;
 *   - concat whose inputs' parameters differ from the output's gets a requantizing qlut on each
 *     such input and runs on the 8-bit tensors.
 *
 * What must stay true: a pattern is rewritten only when the integer result is the float
 * result's quantization up to the one documented rounding (qadd, qmul, qavg_pool: within one
 * step of the float island; qlut, qmax_pool and concat: equal to it); the float intermediates are
 * read by nothing but the rewritten nodes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../interp/interp_internal.h"
#include "../internal.h"
#include "quant_pass.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static bool is8(DLDataType t) {
    return t.lanes == 1 && t.bits == 8 && (t.code == kDLInt || t.code == kDLUInt);
}

/* The quantize consuming t alone, constant per-tensor 8-bit parameters (-1 otherwise). */
static int q8_of(const tether_ir_graph *g, int t) {
    int q = only_consumer(g, t);
    if (q < 0 || g->nodes[q].op != TETHER_OP_QUANTIZE || !cst(g, g->nodes[q].inputs[1]) ||
        tether_ir_tensor_elements(&g->tensors[g->nodes[q].inputs[1]]) != 1 ||
        (g->nodes[q].ninputs > 2 && g->nodes[q].inputs[2] >= 0 && !cst(g, g->nodes[q].inputs[2])) ||
        !is8(g->nodes[q].attrs.to)) {
        return -1;
    }
    return q;
}

/* The dequantize producing t, per-tensor parameters of an 8-bit tensor (-1 otherwise). */
static int d8_of(const tether_ir_graph *g, int t) {
    int d = dq_of(g, t);
    if (d < 0 || tether_ir_tensor_elements(&g->tensors[g->nodes[d].inputs[1]]) != 1 ||
        !is8(g->tensors[g->nodes[d].inputs[0]].dtype)) {
        return -1;
    }
    return d;
}

static int uniq(tether_ir_graph *g, const char *base, const char *what, char *name, size_t n) {
    snprintf(name, n, "%s/%s", base, what);
    for (int u = 1; tether_ir_find_tensor(g, name) >= 0; u++) {
        snprintf(name, n, "%s/%s#%d", base, what, u);
    }
    return 0;
}

/* quantize(v) as the quantize node Q computes it (float32 division, half to even, saturated). */
static int64_t quantize_as(const tether_ir_graph *g, const tether_ir_node *Q, float v) {
    int64_t lo = 0, hi = 0, z = zp(g, Q, 0);
    tether__quant_range(Q->attrs.to, &lo, &hi);
    float q = v / sc(g, Q, 0);
    int64_t r = q != q ? z : tether__quant_round_even((double)q) + z;
    return r < lo ? lo : r > hi ? hi : r;
}

/* A qlut table: quantize_Q(op(dequantize_D(v))) for the 256 values v of D's input type (op
 * TETHER_OP_COUNT_: none). Adds the table constant and returns its tensor in *t. */
static int lut_table(tether_ir_graph *g, const char *base, int d, int q, tether_op op,
                     const tether_ir_attrs *at, int *t) {
    const tether_ir_node *D = &g->nodes[d], *Q = &g->nodes[q];
    bool sx = g->tensors[D->inputs[0]].dtype.code == kDLInt;
    int64_t xz = zp(g, D, 0);
    float xs = sc(g, D, 0);
    uint8_t tab[256];
    for (int i = 0; i < 256; i++) {
        int64_t v = sx ? i - 128 : i;
        float f = (float)(v - xz) * xs; /* the interpreter's dequantize */
        if (op != DEAD) {
            f = tether__interp_ew_unary(op, f, at);
        }
        tab[i] = (uint8_t)quantize_as(g, Q, f);
    }
    char name[512];
    uniq(g, base, "table", name, sizeof name);
    int64_t shape[1] = {256};
    return tether_ir_add_constant(g, name, Q->attrs.to, 1, shape, tab, 256, t);
}

/* Adds `qlut(x, table) -> y` (y a new tensor of Q's type when *y < 0). */
static int add_lut(tether_ir_graph *g, const char *base, int x, int d, int q, tether_op op,
                   const tether_ir_attrs *at, int *y) {
    int tab, rc = lut_table(g, base, d, q, op, at, &tab);
    char name[512];
    if (!rc && *y < 0) {
        uniq(g, base, "requantized", name, sizeof name);
        rc = tether_ir_add_tensor(g, name, g->nodes[q].attrs.to, -1, NULL, y);
    }
    if (rc) {
        return rc;
    }
    int in[2] = {x, tab};
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_QLUT, &a);
    snprintf(name, sizeof name, "%s/qlut", g->tensors[tab].name); /* the table's name is unique */
    return tether_ir_add_node(g, name, TETHER_OP_QLUT, in, 2, y, 1, &a, NULL);
}

/* The pair (m, n) with m / 2^n = M, m < 2^31, n in 1..62; 0 when M >= 2^30 (stays float). */
static int fixed(double M, double big, int32_t *m, int *n) {
    int e;
    frexp(big, &e); /* big = q 2^e, q in [0.5, 1): big 2^(31 - e) in [2^30, 2^31) */
    int s = 31 - e;
    if (s < 1) {
        return 0;
    }
    s = s > 62 ? 62 : s;
    double v = nearbyint(ldexp(M, s));
    while (v >= 2147483648.0 && s > 1) {
        s--;
        v = nearbyint(ldexp(M, s));
    }
    if (v >= 2147483648.0) {
        return 0;
    }
    *m = (int32_t)v;
    *n = s;
    return 1;
}

static int binary(tether_ir_graph *g, int i) {
    tether_ir_node *n = &g->nodes[i];
    if (n->ninputs != 2 || n->noutputs != 1) {
        return 0;
    }
    int da = d8_of(g, n->inputs[0]), db = d8_of(g, n->inputs[1]), out = n->outputs[0], act = -1;
    if (da < 0 || db < 0) {
        return 0;
    }
    int c = only_consumer(g, out);
    if (c >= 0 && (g->nodes[c].op == TETHER_OP_RELU || g->nodes[c].op == TETHER_OP_CLIP) &&
        g->nodes[c].attrs.act == TETHER_ACT_NONE && g->nodes[c].ninputs == 1) {
        act = c;
        out = g->nodes[c].outputs[0];
    }
    int q = q8_of(g, out);
    if (q < 0) {
        return 0;
    }
    const tether_ir_node *A = &g->nodes[da], *B = &g->nodes[db], *Q = &g->nodes[q];
    double sa = sc(g, A, 0), sb = sc(g, B, 0), sy = sc(g, Q, 0);
    int32_t p[8] = {
        (int32_t)zp(g, A, 0), (int32_t)zp(g, B, 0), (int32_t)zp(g, Q, 0), 0, 0, 0, 0, 0};
    int64_t lo, hi;
    tether__quant_range(Q->attrs.to, &lo, &hi);
    if (act >= 0) { /* quantize is increasing: q(relu(v)) = max(q(v), q(0)), clip alike */
        const tether_ir_attrs *ca = &g->nodes[act].attrs;
        float mn = g->nodes[act].op == TETHER_OP_RELU ? 0.0f : ca->min;
        if (mn > -3e38f) {
            lo = quantize_as(g, Q, mn);
        }
        if (g->nodes[act].op == TETHER_OP_CLIP && ca->max < 3e38f) {
            hi = quantize_as(g, Q, ca->max);
        }
    }
    p[6] = (int32_t)lo;
    p[7] = (int32_t)hi;
    int sh = 0;
    if (n->op == TETHER_OP_ADD) {
        double ma = sa / sy, mb = sb / sy, big = ma > mb ? ma : mb;
        if (!fixed(big, big, &p[3], &sh) || !fixed(ma, big, &p[3], &sh) ||
            !fixed(mb, big, &p[4], &sh)) {
            return 0;
        }
    } else if (!fixed(sa * sb / sy, sa * sb / sy, &p[3], &sh)) {
        return 0;
    }
    p[5] = sh;
    char base[400];
    snprintf(base, sizeof base, "%s", n->name);
    int64_t ps[1] = {8};
    int pt, in[3] = {A->inputs[0], B->inputs[0], -1};
    tether_op op = n->op == TETHER_OP_ADD ? TETHER_OP_QADD : TETHER_OP_QMUL;
    DLDataType to = Q->attrs.to;
    int rc = add_i32(g, base, "qparams", p, 1, ps, &pt);
    if (rc) {
        return rc;
    }
    in[2] = pt;
    n = &g->nodes[i];
    n->op = op;
    tether_ir_attrs_init(op, &n->attrs);
    n->attrs.to = to;
    n->ninputs = 3;
    memcpy(n->inputs, in, sizeof in);
    n->outputs[0] = g->nodes[q].outputs[0];
    g->nodes[q].op = DEAD;
    if (act >= 0) {
        g->nodes[act].op = DEAD;
    }
    return 1;
}

/* unary float op -> qlut */
static int unary(tether_ir_graph *g, int i) {
    tether_ir_node *n = &g->nodes[i];
    int d = n->ninputs == 1 ? d8_of(g, n->inputs[0]) : -1;
    if (d < 0 || n->noutputs != 1 || n->attrs.act != TETHER_ACT_NONE || n->attrs.has_residual ||
        !tether_dtype_equal(g->tensors[n->outputs[0]].dtype, TETHER_FLOAT32)) {
        return 0;
    }
    int q = q8_of(g, n->outputs[0]);
    if (q < 0) {
        return 0;
    }
    char base[400];
    snprintf(base, sizeof base, "%s", n->name);
    int y = g->nodes[q].outputs[0];
    tether_ir_attrs at = n->attrs;
    g->nodes[q].op = DEAD; /* first: add_lut may move the node array */
    int rc = add_lut(g, base, g->nodes[d].inputs[0], d, q, n->op, &at, &y);
    g->nodes[i].op = DEAD;
    return rc ? rc : 1;
}

static int pools(tether_ir_graph *g, int i) {
    tether_ir_node *n = &g->nodes[i];
    int d = n->ninputs == 1 ? d8_of(g, n->inputs[0]) : -1;
    if (d < 0 || n->noutputs != 1 || g->tensors[n->inputs[0]].ndim != 4 || n->attrs.nwin > 2) {
        return 0;
    }
    int q = q8_of(g, n->outputs[0]);
    if (q < 0) {
        return 0;
    }
    char base[400];
    snprintf(base, sizeof base, "%s", n->name);
    const tether_ir_node *D = &g->nodes[d], *Q = &g->nodes[q];
    int x = D->inputs[0], y = Q->outputs[0], rc;
    DLDataType xt = g->tensors[x].dtype;
    if (n->op == TETHER_OP_MAX_POOL) {
        bool same = sc(g, D, 0) == sc(g, Q, 0) && zp(g, D, 0) == zp(g, Q, 0) &&
                    tether_dtype_equal(xt, Q->attrs.to);
        int mid = y;
        char name[512];
        if (!same) {
            uniq(g, base, "max", name, sizeof name);
            if ((rc = tether_ir_add_tensor(g, name, xt, -1, NULL, &mid))) {
                return rc;
            }
            if ((rc = add_lut(g, base, mid, d, q, DEAD, NULL, &y))) {
                return rc;
            }
        }
        n = &g->nodes[i];
        tether_ir_attrs a = n->attrs;
        n->op = TETHER_OP_QMAX_POOL;
        tether_ir_attrs_init(TETHER_OP_QMAX_POOL, &n->attrs);
        memcpy(n->attrs.kernel, a.kernel, sizeof a.kernel);
        memcpy(n->attrs.strides, a.strides, sizeof a.strides);
        memcpy(n->attrs.pads, a.pads, sizeof a.pads);
        memcpy(n->attrs.dilations, a.dilations, sizeof a.dilations);
        n->attrs.nwin = a.nwin;
        n->attrs.ceil_mode = a.ceil_mode;
        n->inputs[0] = x;
        n->outputs[0] = mid;
        g->nodes[q].op = DEAD;
        return 1;
    }
    /* avg_pool: the requantization of every window count 1..kh*kw */
    int64_t kk = n->attrs.kernel[0] * n->attrs.kernel[1], lo, hi;
    if (kk < 1 || kk > 4096) {
        return 0;
    }
    int32_t *p = malloc(sizeof(int32_t) * (size_t)(4 + 2 * kk));
    if (!p) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "integer-operator pass: out of memory");
    }
    tether__quant_range(Q->attrs.to, &lo, &hi);
    p[0] = (int32_t)zp(g, D, 0);
    p[1] = (int32_t)zp(g, Q, 0);
    p[2] = (int32_t)lo;
    p[3] = (int32_t)hi;
    for (int64_t c = 1; c <= kk; c++) {
        double m = (double)sc(g, D, 0) / ((double)sc(g, Q, 0) * (double)c);
        if (tether_quant_multiplier(m, &p[2 + 2 * c], &p[3 + 2 * c])) {
            free(p);
            tether_clear_error();
            return 0; /* not representable: stays float */
        }
    }
    int64_t ps[1] = {4 + 2 * kk};
    int pt;
    DLDataType to = Q->attrs.to;
    rc = add_i32(g, base, "qparams", p, 1, ps, &pt);
    free(p);
    if (rc) {
        return rc;
    }
    n = &g->nodes[i];
    n->op = TETHER_OP_QAVG_POOL;
    n->attrs.to = to;
    n->ninputs = 2;
    n->inputs[0] = x;
    n->inputs[1] = pt;
    n->outputs[0] = y;
    g->nodes[q].op = DEAD;
    return 1;
}

/* concat of dequantized 8-bit tensors with other parameters than the output's */
static int concat(tether_ir_graph *g, int i) {
    tether_ir_node *n = &g->nodes[i];
    if (n->noutputs != 1 || n->ninputs < 1 || n->ninputs > TETHER_IR_MAX_INPUTS) {
        return 0;
    }
    int q = q8_of(g, n->outputs[0]), ds[TETHER_IR_MAX_INPUTS];
    if (q < 0) {
        return 0;
    }
    for (int k = 0; k < n->ninputs; k++) {
        if ((ds[k] = d8_of(g, n->inputs[k])) < 0) {
            return 0;
        }
    }
    char base[400];
    snprintf(base, sizeof base, "%s", n->name);
    int nin = n->ninputs;
    for (int k = 0; k < nin; k++) {
        const tether_ir_node *D = &g->nodes[ds[k]], *Q = &g->nodes[q];
        int x = D->inputs[0], y = -1, rc;
        if (sc(g, D, 0) == sc(g, Q, 0) && zp(g, D, 0) == zp(g, Q, 0) &&
            tether_dtype_equal(g->tensors[x].dtype, Q->attrs.to)) {
            g->nodes[i].inputs[k] = x;
            continue;
        }
        if ((rc = add_lut(g, base, x, ds[k], q, DEAD, NULL, &y))) {
            return rc;
        }
        g->nodes[i].inputs[k] = y;
    }
    g->nodes[i].outputs[0] = g->nodes[q].outputs[0];
    g->nodes[q].op = DEAD;
    return 1;
}

/* max_pool_arg's values (ONNX MaxPool reading an 8-bit tensor directly, as QOperator models
 * have it) becomes qmax_pool: the same max of the same integers when every window holds an
 * input element (dilation 1, pads below the kernel, no ceil_mode; an empty window would give 0
 * there and the type's minimum here). */
static int maxpool_arg8(tether_ir_graph *g, int i) {
    tether_ir_node *n = &g->nodes[i];
    const tether_ir_attrs *a = &n->attrs;
    if (n->ninputs != 1 || n->noutputs != 1 || (a->mode & 1) || a->ceil_mode ||
        !is8(g->tensors[n->inputs[0]].dtype) || g->tensors[n->inputs[0]].ndim != 4 || a->nwin > 2) {
        return 0;
    }
    for (int k = 0; k < 2; k++) {
        if (a->dilations[k] != 1 || a->pads[k] >= a->kernel[k] || a->pads[k + 2] >= a->kernel[k]) {
            return 0;
        }
    }
    tether_ir_attrs old = *a;
    n->op = TETHER_OP_QMAX_POOL;
    tether_ir_attrs_init(TETHER_OP_QMAX_POOL, &n->attrs);
    memcpy(n->attrs.kernel, old.kernel, sizeof old.kernel);
    memcpy(n->attrs.strides, old.strides, sizeof old.strides);
    memcpy(n->attrs.pads, old.pads, sizeof old.pads);
    memcpy(n->attrs.dilations, old.dilations, sizeof old.dilations);
    n->attrs.nwin = old.nwin;
    return 1;
}

int tether__quant_rewrite_elt(tether_ir_graph *g, int i) {
    tether_op op = g->nodes[i].op;
    if (op == DEAD) {
        return 0;
    }
    const tether__op_info *info = tether__op_info_of(op);
    if ((op == TETHER_OP_ADD || op == TETHER_OP_MUL) && g->nodes[i].attrs.act == TETHER_ACT_NONE &&
        !g->nodes[i].attrs.has_residual) {
        return binary(g, i);
    }
    if (info->kind == TETHER__OPK_UNARY) {
        return unary(g, i);
    }
    if (op == TETHER_OP_MAX_POOL || op == TETHER_OP_AVG_POOL) {
        return pools(g, i);
    }
    if (op == TETHER_OP_CONCAT) {
        return concat(g, i);
    }
    if (op == TETHER_OP_MAX_POOL_ARG) {
        return maxpool_arg8(g, i);
    }
    return 0;
}
