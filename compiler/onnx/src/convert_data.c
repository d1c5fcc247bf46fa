/*
 * ONNX indexing, data-dependent and shape operators into the IR's DATA family (ops.def): Gather,
 * GatherElements, GatherND, Scatter, ScatterElements, ScatterND, TopK (two nodes: values and
 * indices), ArgMax/ArgMin, CumSum, Trilu, OneHot, Expand and Tile (tile), Slice and Split (one
 * slice per output), Einsum, and the lowerings Mean (add chain, div) and CastLike (cast).
 *
 * What must stay true: an input the IR takes as an attribute (TopK's k, CumSum's axis, Trilu's k,
 * OneHot's depth, Expand's shape, Tile's repeats, Slice's starts/ends/axes/steps, Split's split)
 * must be a constant at import time (tonnx_const_inputs lists them), else the node is refused
 * naming the input (except Slice starts/ends computed at run time with a constant difference:
 * convert_slice_rt.c); attributes follow the ONNX defaults of the operator version in use; a value
 * the IR cannot express is an error naming it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static int norm_axis(int64_t axis, int rank) {
    int64_t a = axis < 0 ? axis + rank : axis;
    return a < 0 || a >= rank ? -1 : (int)a;
}

static int emit1(timport *c, tether_op op, const int *in, int nin, const tether_ir_attrs *a) {
    int y, rc = tonnx_out_tensor(c, 0, &y);
    return rc ? rc : tonnx_emit(c, NULL, op, in, nin, y, a);
}

/* Inputs 0 .. nin-1 as IR tensors. */
static int inputs(timport *c, int nin, int *in) {
    for (int i = 0; i < nin; i++) {
        int rc = tonnx_in_tensor(c, i, true, &in[i]);
        if (rc) {
            return rc;
        }
    }
    return TETHER_OK;
}

static const tether_ir_tensor *tensor(timport *c, int t) {
    return &c->g->tensors[t];
}

/* A scalar integer input (k, axis, depth) that must be a constant. */
static int const_scalar(timport *c, int i, const char *what, int64_t *out) {
    hconst *k;
    int rc = tonnx_in_const(c, i, true, &k);
    if (rc) {
        return rc;
    }
    if (k->count != 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "%s must have one element, it has %zu", what,
                          k->count);
    }
    *out = k->is_int ? ((const int64_t *)k->data)[0] : (int64_t)((const float *)k->data)[0];
    return TETHER_OK;
}

int tonnx_cv_gather(timport *c, const Onnx__NodeProto *n) {
    const char *t = S(n->op_type);
    tether_op op = !strcmp(t, "Gather")           ? TETHER_OP_GATHER
                   : !strcmp(t, "GatherElements") ? TETHER_OP_GATHER_ELEMENTS
                                                  : TETHER_OP_GATHER_ND;
    tether_ir_attrs a;
    tether_ir_attrs_init(op, &a);
    int in[2], rc;
    if ((rc = tonnx_attr_int(c, op == TETHER_OP_GATHER_ND ? "batch_dims" : "axis", 0, &a.axis)) ||
        (rc = inputs(c, 2, in))) {
        return rc;
    }
    return emit1(c, op, in, 2, &a);
}

int tonnx_cv_scatter(timport *c, const Onnx__NodeProto *n) {
    bool nd = !strcmp(S(n->op_type), "ScatterND");
    tether_op op = nd ? TETHER_OP_SCATTER_ND : TETHER_OP_SCATTER_ELEMENTS;
    tether_ir_attrs a;
    tether_ir_attrs_init(op, &a);
    char red[16];
    int in[3], rc;
    if ((!nd && (rc = tonnx_attr_int(c, "axis", 0, &a.axis))) ||
        (rc = tonnx_attr_string(c, "reduction", "none", red, sizeof red)) ||
        (rc = inputs(c, 3, in))) {
        return rc;
    }
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    a.mode = -1;
    for (int i = 0; i < 5; i++) {
        if (!strcmp(red, names[i])) {
            a.mode = i;
        }
    }
    if (a.mode < 0) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "reduction '%s' (none, add, mul, max, min)",
                          red);
    }
    return emit1(c, op, in, 3, &a);
}

int tonnx_cv_topk(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_TOPK, &a);
    int64_t largest = 1, sorted = 1;
    int x, rc;
    if ((rc = tonnx_attr_int(c, "axis", -1, &a.axis)) ||
        (rc = tonnx_attr_int(c, "largest", 1, &largest)) ||
        (rc = tonnx_attr_int(c, "sorted", 1, &sorted)) || (rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    rc = c->opset < 10 ? tonnx_attr_int(c, "k", -1, &a.k) : const_scalar(c, 1, "K", &a.k);
    if (rc) {
        return rc;
    }
    (void)sorted; /* the result is always sorted (ONNX leaves the order open when sorted=0) */
    for (int i = 0; i < 2; i++) {
        if (!tonnx_output_used(c, c->cur, i)) {
            continue;
        }
        int y;
        a.mode = (largest ? 1 : 0) | 2 | (i ? 4 : 0);
        if ((rc = tonnx_out_tensor(c, i, &y)) ||
            (rc = tonnx_emit(c, i ? "indices" : "values", TETHER_OP_TOPK, &x, 1, y, &a))) {
            return rc;
        }
    }
    return TETHER_OK;
}

int tonnx_cv_arg(timport *c, const Onnx__NodeProto *n) {
    tether_op op = !strcmp(S(n->op_type), "ArgMax") ? TETHER_OP_ARG_MAX : TETHER_OP_ARG_MIN;
    tether_ir_attrs a;
    tether_ir_attrs_init(op, &a);
    int64_t keep = 1;
    int x, rc;
    if ((rc = tonnx_attr_int(c, "axis", 0, &a.axis)) ||
        (rc = tonnx_attr_int(c, "keepdims", 1, &keep)) ||
        (rc = tonnx_attr_int(c, "select_last_index", 0, &a.mode)) ||
        (rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    a.keepdims = keep != 0;
    return emit1(c, op, &x, 1, &a);
}

int tonnx_cv_cumsum(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CUMSUM, &a);
    int64_t excl, rev;
    int x, rc;
    if ((rc = tonnx_attr_int(c, "exclusive", 0, &excl)) ||
        (rc = tonnx_attr_int(c, "reverse", 0, &rev)) ||
        (rc = const_scalar(c, 1, "axis", &a.axis)) || (rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    a.mode = (excl ? 1 : 0) | (rev ? 2 : 0);
    return emit1(c, TETHER_OP_CUMSUM, &x, 1, &a);
}

int tonnx_cv_trilu(timport *c, const Onnx__NodeProto *n) {
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_TRILU, &a);
    int x, rc;
    if ((rc = tonnx_attr_int(c, "upper", 1, &a.mode)) || (rc = tonnx_in_tensor(c, 0, true, &x)) ||
        (has_input(n, 1) && (rc = const_scalar(c, 1, "k", &a.k)))) {
        return rc;
    }
    a.mode = a.mode != 0;
    return emit1(c, TETHER_OP_TRILU, &x, 1, &a);
}

int tonnx_cv_onehot(timport *c, const Onnx__NodeProto *n) {
    (void)n;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_ONE_HOT, &a);
    hconst *dk;
    int in[2], rc;
    if ((rc = tonnx_attr_int(c, "axis", -1, &a.axis)) || (rc = tonnx_in_const(c, 1, true, &dk)) ||
        (rc = tonnx_in_tensor(c, 0, true, &in[0])) || (rc = tonnx_in_tensor(c, 2, true, &in[1]))) {
        return rc;
    }
    if (dk->count != 1) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "depth must have one element");
    }
    a.k = dk->is_int ? ((const int64_t *)dk->data)[0] : (int64_t)((const float *)dk->data)[0];
    return emit1(c, TETHER_OP_ONE_HOT, in, 2, &a);
}

/* Expand (numpy broadcasting of the input and the shape) and Tile (the input times repeats). */
int tonnx_cv_tile(timport *c, const Onnx__NodeProto *n) {
    bool expand = !strcmp(S(n->op_type), "Expand");
    int64_t v[TETHER_IR_MAX_NDIM];
    int nv = 0, x, rc;
    hconst *k;
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = tonnx_in_const(c, 1, true, &k)) ||
        (rc = tonnx_const_ints(c, k, expand ? "shape" : "repeats", v, TETHER_IR_MAX_NDIM, &nv))) {
        return rc;
    }
    const tether_ir_tensor *xt = tensor(c, x);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_TILE, &a);
    if (!expand) {
        if (nv != xt->ndim) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "repeats has %d entries, the input rank %d", nv, xt->ndim);
        }
        for (int d = 0; d < nv; d++) {
            if (v[d] < 0) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "repeats entry %d is negative", d);
            }
            a.ints[d] = xt->shape[d] * v[d];
        }
        a.nints = nv;
    } else {
        int nd = nv > xt->ndim ? nv : xt->ndim;
        for (int d = 0; d < nd; d++) {
            int64_t s = d < nd - nv ? 1 : v[d - (nd - nv)];
            int64_t i = d < nd - xt->ndim ? 1 : xt->shape[d - (nd - xt->ndim)];
            if (s != i && s != 1 && i != 1) {
                return tonnx_fail(c, TETHER_ERR_MISMATCH,
                                  "the input does not broadcast to the shape (dimension %d: %lld "
                                  "and %lld)",
                                  d, (long long)i, (long long)s);
            }
            a.ints[d] = i == 1 ? s : i;
        }
        a.nints = nd;
    }
    return emit1(c, TETHER_OP_TILE, &x, 1, &a);
}

/* The slice node of data tensor x over [start, end) with step per listed axis (the others
 * whole), ONNX clamping; output out. */
static int emit_slice(timport *c, const char *sfx, int x, int n, const int64_t *axes,
                      const int64_t *starts, const int64_t *ends, const int64_t *steps, int out) {
    const tether_ir_tensor *xt = tensor(c, x);
    int nd = xt->ndim;
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_SLICE, &a);
    bool seen[TETHER_IR_MAX_NDIM] = {false};
    for (int d = 0; d < nd; d++) {
        a.ints[d] = 0;
        a.ints[nd + d] = xt->shape[d];
        a.steps[d] = 1;
    }
    for (int i = 0; i < n; i++) {
        int ax = norm_axis(axes[i], nd);
        if (ax < 0 || seen[ax]) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axis %lld out of range or repeated",
                              (long long)axes[i]);
        }
        seen[ax] = true;
        int64_t dim = xt->shape[ax], s = starts[i], e = ends[i], st = steps[i];
        if (st == 0) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "step 0 on axis %d", ax);
        }
        if (xt->dyn_dim == ax + 1) { /* data-dependent extent: ONNX's own starts and ends, */
            /* clamped at run time (ir/shapes_dynamic_live.c); past +-the bound alike */
            a.ints[ax] = s < -dim - 1 ? -dim - 1 : s > dim ? dim : s;
            a.ints[nd + ax] = e < -dim - 1 ? -dim - 1 : e > dim ? dim : e;
            a.steps[ax] = st;
            continue;
        }
        s = s < 0 ? s + dim : s;
        e = e < 0 ? e + dim : e;
        if (st > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < s ? s : e > dim ? dim : e;
        } else {
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s; /* [0, dim - 1] (ONNX) */
            e = e < -1 ? -1 : e > s ? s : e;
            if (s < 0 || dim == 0) { /* nothing to take: an empty range */
                s = 0;
                e = 0;
                st = 1;
            }
        }
        a.ints[ax] = s;
        a.ints[nd + ax] = e;
        a.steps[ax] = st;
    }
    a.nints = 2 * nd;
    return tonnx_emit(c, sfx, TETHER_OP_SLICE, &x, 1, out, &a);
}

/* Known at import time (or undefined: the constant path reports it). */
static bool host_known(timport *c, const char *name) {
    int vi = tonnx_find(c, name);
    return !name[0] || vi < 0 || c->v[vi].k;
}

static int list_input(timport *c, int i, const char *what, int64_t *v, int *nv) {
    hconst *k;
    int rc = tonnx_in_const(c, i, true, &k);
    return rc ? rc : tonnx_const_ints(c, k, what, v, TETHER_IR_MAX_NDIM, nv);
}

int tonnx_cv_slice(timport *c, const Onnx__NodeProto *n) {
    int64_t st[TETHER_IR_MAX_NDIM], en[TETHER_IR_MAX_NDIM], ax[TETHER_IR_MAX_NDIM],
        sp[TETHER_IR_MAX_NDIM];
    int ns = 0, ne = 0, na = -1, nsp = -1, x, y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    if (c->opset < 10) {
        if ((rc = tonnx_attr_ints(c, "starts", st, TETHER_IR_MAX_NDIM, &ns)) ||
            (rc = tonnx_attr_ints(c, "ends", en, TETHER_IR_MAX_NDIM, &ne)) ||
            (rc = tonnx_attr_ints(c, "axes", ax, TETHER_IR_MAX_NDIM, &na))) {
            return rc;
        }
    } else if (n->n_input >= 3 &&
               (!host_known(c, S(n->input[1])) || !host_known(c, S(n->input[2])))) {
        /* starts or ends computed at run time: a gather per axis (convert_slice_rt.c) */
        if ((has_input(n, 3) && (rc = list_input(c, 3, "axes", ax, &na))) ||
            (has_input(n, 4) && (rc = list_input(c, 4, "steps", sp, &nsp)))) {
            return rc;
        }
        hconst *h;
        int64_t cnt = -1;
        if (na >= 0) {
            cnt = na;
        } else if (nsp >= 0) {
            cnt = nsp;
        } else if (c->g->tensors[x].ndim > 0) {
            cnt = c->g->tensors[x].ndim; /* starts' length: the offset analysis checks it */
        }
        for (int i = 0; i < cnt && i < TETHER_IR_MAX_NDIM; i++) {
            ax[i] = na >= 0 ? ax[i] : i;
            sp[i] = nsp >= 0 ? sp[i] : 1;
        }
        return cnt < 0 ? tonnx_in_const(c, 1, true, &h)
                       : tonnx_slice_runtime(c, n, x, ax, na >= 0 ? na : -1, sp);
    } else if ((rc = list_input(c, 1, "starts", st, &ns)) ||
               (rc = list_input(c, 2, "ends", en, &ne)) ||
               (has_input(n, 3) && (rc = list_input(c, 3, "axes", ax, &na))) ||
               (has_input(n, 4) && (rc = list_input(c, 4, "steps", sp, &nsp)))) {
        return rc;
    }
    if (ns < 0 || ns != ne || (na >= 0 && na != ns) || (nsp >= 0 && nsp != ns)) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "starts, ends, axes and steps differ in length");
    }
    for (int i = 0; i < ns; i++) {
        ax[i] = na >= 0 ? ax[i] : i;
        sp[i] = nsp >= 0 ? sp[i] : 1;
    }
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    return emit_slice(c, NULL, x, ns, ax, st, en, sp, y);
}

int tonnx_cv_split(timport *c, const Onnx__NodeProto *n) {
    int64_t axis, num = 0, sizes[64];
    int x, rc, ns = -1, nout = (int)n->n_output;
    if ((rc = tonnx_attr_int(c, "axis", 0, &axis)) || (rc = tonnx_in_tensor(c, 0, true, &x)) ||
        (rc = tonnx_attr_int(c, "num_outputs", 0, &num))) {
        return rc;
    }
    const tether_ir_tensor *xt = tensor(c, x);
    int ax = norm_axis(axis, xt->ndim);
    if (ax < 0 || nout > 64) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axis %lld or %d outputs out of range",
                          (long long)axis, nout);
    }
    if (c->opset < 13) {
        rc = tonnx_attr_ints(c, "split", sizes, 64, &ns);
    } else if (has_input(n, 1)) {
        hconst *k;
        rc = tonnx_in_const(c, 1, true, &k);
        if (!rc) {
            rc = tonnx_const_ints(c, k, "split", sizes, 64, &ns);
        }
    }
    if (rc) {
        return rc;
    }
    int64_t dim = xt->shape[ax];
    if (ns < 0) { /* equal parts; with num_outputs (opset 18) the last may be smaller */
        int64_t parts = num > 0 ? num : nout;
        int64_t each = parts ? (dim + parts - 1) / parts : 0;
        if (num <= 0 && parts && dim % parts) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "an extent of %lld does not split into %lld equal parts",
                              (long long)dim, (long long)parts);
        }
        ns = (int)parts;
        for (int i = 0; i < ns; i++) {
            sizes[i] = each * (i + 1) <= dim ? each : dim - each * i > 0 ? dim - each * i : 0;
        }
    }
    int64_t sum = 0;
    for (int i = 0; i < ns; i++) {
        sum += sizes[i] < 0 ? dim + 1 : sizes[i];
    }
    if (ns != nout || sum != dim) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "split gives %d parts summing to %lld for %d outputs and an extent of "
                          "%lld",
                          ns, (long long)sum, nout, (long long)dim);
    }
    int64_t at = 0, a1 = ax, step = 1;
    for (int i = 0; i < nout; i++) {
        int64_t end = at + sizes[i];
        if (S(n->output[i])[0]) {
            int y;
            char sfx[24];
            snprintf(sfx, sizeof sfx, "part%d", i);
            if ((rc = tonnx_out_tensor(c, i, &y)) ||
                (rc = emit_slice(c, sfx, x, 1, &a1, &at, &end, &step, y))) {
                return rc;
            }
        }
        at = end;
    }
    return TETHER_OK;
}

/* Einsum: the equation's letters become labels 1..52, an ellipsis the labels 53.. of the
 * dimensions it covers (aligned to the right as numpy broadcasts them, equal extents only). */
int tonnx_cv_einsum(timport *c, const Onnx__NodeProto *n) {
    char eq[256];
    int in[8], rc;
    int nin = (int)n->n_input;
    if (nin < 1 || nin > 7) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "%d inputs (1 to 7)", nin);
    }
    if ((rc = tonnx_attr_string(c, "equation", "", eq, sizeof eq)) || (rc = inputs(c, nin, in))) {
        return rc;
    }
    char *p = eq, *w = eq;
    for (; *p; p++) { /* spaces removed */
        if (*p != ' ') {
            *w++ = *p;
        }
    }
    *w = 0;
    char *arrow = strstr(eq, "->");
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_EINSUM, &a);
    int count[64] = {0}, ell_rank = 0;
    int lab[8][TETHER_IR_MAX_NDIM], rank[8];
    const char *s = eq;
    for (int j = 0; j < nin; j++) {
        const char *end = strchr(s, ',');
        const char *stop = arrow ? arrow : eq + strlen(eq);
        if (j < nin - 1 ? !end || end > stop : (end && end < stop)) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "equation '%s' does not list %d operands",
                              eq, nin);
        }
        if (j == nin - 1) {
            end = stop;
        }
        int letters = 0, has_ell = 0;
        for (const char *q = s; q < end; q++) {
            if (*q == '.') {
                has_ell = 1;
                q += 2;
            } else {
                letters++;
            }
        }
        int r = tensor(c, in[j])->ndim, er = r - letters, d = 0;
        if (er < 0 || (!has_ell && er) || r > TETHER_IR_MAX_NDIM) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "operand %d has rank %d for the term '%.*s'", j, r, (int)(end - s),
                              s);
        }
        ell_rank = er > ell_rank ? er : ell_rank;
        for (const char *q = s; q < end; q++) {
            if (*q == '.') {
                for (int e = 0; e < er; e++) {
                    lab[j][d++] = 53 + (8 - er) + e; /* aligned to the right */
                }
                q += 2;
            } else if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')) {
                lab[j][d++] = *q >= 'a' ? *q - 'a' + 1 : *q - 'A' + 27;
            } else {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "equation '%s': '%c'", eq, *q);
            }
        }
        rank[j] = d;
        for (int e = 0; e < d; e++) {
            count[lab[j][e]]++;
        }
        s = end + 1;
    }
    int out[TETHER_IR_MAX_NDIM], nout = 0;
    if (arrow) {
        for (const char *q = arrow + 2; *q; q++) {
            if (nout >= TETHER_IR_MAX_NDIM) {
                return tonnx_fail(c, TETHER_ERR_LIMIT, "the output's rank is above %d",
                                  TETHER_IR_MAX_NDIM);
            }
            if (*q == '.') {
                for (int e = 0; e < ell_rank && nout < TETHER_IR_MAX_NDIM; e++) {
                    out[nout++] = 53 + (8 - ell_rank) + e;
                }
                q += 2;
            } else if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')) {
                out[nout++] = *q >= 'a' ? *q - 'a' + 1 : *q - 'A' + 27;
            } else {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "equation '%s': '%c'", eq, *q);
            }
        }
    } else { /* implicit: the ellipsis, then the labels seen once, alphabetically */
        for (int e = 0; e < ell_rank; e++) {
            out[nout++] = 53 + (8 - ell_rank) + e;
        }
        for (int l = 1; l <= 52 && nout < TETHER_IR_MAX_NDIM; l++) {
            int ord = l <= 26 ? l + 26 : l - 26; /* uppercase sorts before lowercase */
            if (count[ord] == 1) {
                out[nout++] = ord;
            }
        }
    }
    for (int j = 0; j <= nin; j++) {
        const int *lb = j < nin ? lab[j] : out;
        int r = j < nin ? rank[j] : nout;
        int64_t v = 0;
        for (int d = 0; d < r; d++) {
            v |= (int64_t)lb[d] << (6 * d);
        }
        a.ints[j] = v;
    }
    a.nints = nin + 1;
    return emit1(c, TETHER_OP_EINSUM, in, nin, &a);
}

int tonnx_cv_mean(timport *c, const Onnx__NodeProto *n) {
    int nin = (int)n->n_input, acc, y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &acc))) {
        return rc;
    }
    if (nin == 1) { /* the mean of one input is that input */
        c->v[tonnx_find(c, S(n->output[0]))].tensor = acc;
        return TETHER_OK;
    }
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    for (int i = 1; i < nin; i++) {
        int b, sum;
        char sfx[32];
        snprintf(sfx, sizeof sfx, "sum%d", i);
        if ((rc = tonnx_in_tensor(c, i, true, &b)) || (rc = tonnx_temp_tensor(c, sfx, &sum))) {
            return rc;
        }
        int ab[2] = {acc, b};
        if ((rc = tonnx_emit(c, sfx, TETHER_OP_ADD, ab, 2, sum, NULL))) {
            return rc;
        }
        acc = sum;
    }
    float cnt = (float)nin;
    int kf, k = -1;
    DLDataType dt = tensor(c, acc)->dtype;
    if ((rc = tonnx_const_tensor(c, "count", 0, NULL, &cnt, &kf))) {
        return rc;
    }
    k = kf;
    if (!tether_dtype_equal(dt, TETHER_FLOAT32)) { /* the count in the inputs' type */
        tether_ir_attrs ca;
        tether_ir_attrs_init(TETHER_OP_CAST, &ca);
        ca.to = dt;
        if ((rc = tonnx_temp_tensor(c, "count_typed", &k)) ||
            (rc = tonnx_emit(c, "count_typed", TETHER_OP_CAST, &kf, 1, k, &ca))) {
            return rc;
        }
    }
    int ak[2] = {acc, k};
    return tonnx_emit(c, NULL, TETHER_OP_DIV, ak, 2, y, NULL);
}

int tonnx_cv_castlike(timport *c, const Onnx__NodeProto *n) {
    int x, like, y, rc;
    if ((rc = tonnx_in_tensor(c, 0, true, &x)) || (rc = tonnx_in_tensor(c, 1, true, &like))) {
        return rc;
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CAST, &a);
    a.to = tensor(c, like)->dtype;
    if (tether_dtype_equal(tensor(c, x)->dtype, a.to)) {
        c->v[tonnx_find(c, S(n->output[0]))].tensor = x;
        return TETHER_OK;
    }
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    return tonnx_emit(c, NULL, TETHER_OP_CAST, &x, 1, y, &a);
}
