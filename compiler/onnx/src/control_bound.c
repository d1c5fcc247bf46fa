/*
 * The planned rows of a run-time Loop's scan outputs when its trip count is known only at run
 * time (control_loop.c; docs/onnx.md, "Control flow"): an upper bound of the trip count M from a
 * value-range analysis of the IR the import has made so far, else the user's bound
 * (tether_model_load_options.loop_max, `--loop-max N`).
 *
 * What must stay true: the range computed for a tensor holds every value the tensor can take at
 * run time (an analysis that cannot tell gives up: no bound, never a guess). Constants give
 * their extreme elements; integer graph inputs narrower than 32 bits (and bool) the range of
 * their type; min, max, clip, relu, abs, add, sub, mul, where, cast and the operators that only
 * move, select or repeat elements (reshapes, gather, slice, concat, transpose, tile, reduce_max/
 * min) are followed through their inputs. A bound above TONNX_LOOP_BOUND_MAX is no bound.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"

#define RANGE_LIMIT ((int64_t)1 << 40) /* |values| beyond it: given up (no overflow below) */
#define RANGE_DEPTH 48
#define NO_LO       INT64_MIN /* a range's lower end when it is unbounded */

typedef struct range {
    int64_t lo, hi;
} range;

static bool fits(range r) {
    return (r.lo == NO_LO || r.lo >= -RANGE_LIMIT) && r.hi <= RANGE_LIMIT && r.lo <= r.hi;
}

/* The range of integer (or bool) type dt when it is narrower than 64 bits. */
static bool type_range(DLDataType dt, range *r) {
    if (dt.code == kDLUInt && dt.bits <= 32) {
        r->lo = 0;
        r->hi = dt.bits == 1 ? 1 : (int64_t)((UINT64_C(1) << dt.bits) - 1);
        return true;
    }
    if (dt.code == kDLInt && dt.bits <= 32) {
        r->lo = -((int64_t)1 << (dt.bits - 1));
        r->hi = ((int64_t)1 << (dt.bits - 1)) - 1;
        return true;
    }
    return false;
}

/* Element i of constant tensor t as a double; false for a type it does not read. */
static bool elem(const tether_ir_tensor *t, size_t i, double *v) {
    const void *d = t->data;
    DLDataType dt = t->dtype;
    if (dt.code == kDLFloat && dt.bits == 32) {
        *v = ((const float *)d)[i];
    } else if (dt.code == kDLFloat && dt.bits == 64) {
        *v = ((const double *)d)[i];
    } else if (dt.code == kDLInt && dt.bits == 64) {
        *v = (double)((const int64_t *)d)[i];
    } else if (dt.code == kDLInt && dt.bits == 32) {
        *v = ((const int32_t *)d)[i];
    } else if (dt.code == kDLInt && dt.bits == 16) {
        *v = ((const int16_t *)d)[i];
    } else if (dt.code == kDLInt && dt.bits == 8) {
        *v = ((const int8_t *)d)[i];
    } else if (dt.code == kDLUInt && dt.bits == 32) {
        *v = ((const uint32_t *)d)[i];
    } else if (dt.code == kDLUInt && dt.bits == 16) {
        *v = ((const uint16_t *)d)[i];
    } else if (dt.code == kDLUInt && (dt.bits == 8 || dt.bits == 1)) {
        *v = ((const uint8_t *)d)[i];
    } else {
        return false;
    }
    return true;
}

/* The range of constant tensor t (floats widened to the integers around them). */
static bool const_range(const tether_ir_tensor *t, range *r) {
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++) {
        n *= (size_t)(t->shape[d] > 0 ? t->shape[d] : 0);
    }
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double v;
        if (!elem(t, i, &v) || v != v) {
            return false;
        }
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    if (n == 0 || lo < (double)-RANGE_LIMIT || hi > (double)RANGE_LIMIT) {
        return false;
    }
    r->lo = (int64_t)floor(lo);
    r->hi = (int64_t)ceil(hi);
    return true;
}

static int producer(const tether_ir_graph *g, int t) {
    for (int i = g->nnodes - 1; i >= 0; i--) {
        for (int o = 0; o < g->nodes[i].noutputs; o++) {
            if (g->nodes[i].outputs[o] == t) {
                return i;
            }
        }
    }
    return -1;
}

static bool range_of(const tether_ir_graph *g, int t, int depth, range *r);

/* The union of the ranges of inputs [from, to) of node n (all of them present and known). */
static bool union_of(const tether_ir_graph *g, const tether_ir_node *n, int from, int to, int depth,
                     range *r) {
    bool any = false;
    for (int j = from; j < to && j < n->ninputs; j++) {
        range q;
        if (n->inputs[j] < 0 || !range_of(g, n->inputs[j], depth + 1, &q)) {
            return false;
        }
        r->lo = any && r->lo < q.lo ? r->lo : q.lo;
        r->hi = any && r->hi > q.hi ? r->hi : q.hi;
        any = true;
    }
    return any;
}

static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b) {
    return a > b ? a : b;
}

/* min/max of two operands: a bound on one side holds when that side of either operand is
 * known (min's hi, max's lo), the other needs both. */
static bool minmax_range(const tether_ir_graph *g, const tether_ir_node *n, int depth, range *r) {
    range a, b;
    bool ka = n->inputs[0] >= 0 && range_of(g, n->inputs[0], depth + 1, &a);
    bool kb = n->ninputs > 1 && n->inputs[1] >= 0 && range_of(g, n->inputs[1], depth + 1, &b);
    if (ka && kb) {
        *r = n->op == TETHER_OP_MIN ? (range){min64(a.lo, b.lo), min64(a.hi, b.hi)}
                                    : (range){max64(a.lo, b.lo), max64(a.hi, b.hi)};
        return true;
    }
    if ((ka || kb) && n->op == TETHER_OP_MIN) { /* only the upper end is known */
        r->lo = NO_LO;
        r->hi = ka ? a.hi : b.hi;
        return true;
    }
    if ((ka || kb) && n->op == TETHER_OP_MAX) { /* only the lower end is known: no bound */
        return false;
    }
    return false;
}

static bool arith_range(const tether_ir_graph *g, const tether_ir_node *n, int depth, range *r) {
    range a, b;
    if (n->ninputs != 2 || n->inputs[0] < 0 || n->inputs[1] < 0 ||
        !range_of(g, n->inputs[0], depth + 1, &a) || !range_of(g, n->inputs[1], depth + 1, &b)) {
        return false;
    }
    bool unb = a.lo == NO_LO || b.lo == NO_LO;
    if (n->op == TETHER_OP_ADD) {
        *r = (range){unb ? NO_LO : a.lo + b.lo, a.hi + b.hi};
    } else if (n->op == TETHER_OP_SUB) {
        if (b.lo == NO_LO) {
            return false;
        }
        *r = (range){a.lo == NO_LO ? NO_LO : a.lo - b.hi, a.hi - b.lo};
    } else if (unb) {
        return false;
    } else {
        /* |a|, |b| <= 2^40: a product may need 2^80, so multiply in double and check */
        double p[4] = {(double)a.lo * (double)b.lo, (double)a.lo * (double)b.hi,
                       (double)a.hi * (double)b.lo, (double)a.hi * (double)b.hi};
        double lo = p[0], hi = p[0];
        for (int i = 1; i < 4; i++) {
            lo = p[i] < lo ? p[i] : lo;
            hi = p[i] > hi ? p[i] : hi;
        }
        if (lo < (double)-RANGE_LIMIT || hi > (double)RANGE_LIMIT) {
            return false;
        }
        *r = (range){(int64_t)lo, (int64_t)hi};
    }
    return fits(*r);
}

/* Operators whose output holds only elements of their first input. */
static bool moves_elements(tether_op op) {
    return op == TETHER_OP_RESHAPE || op == TETHER_OP_FLATTEN || op == TETHER_OP_SQUEEZE ||
           op == TETHER_OP_UNSQUEEZE || op == TETHER_OP_TRANSPOSE || op == TETHER_OP_SLICE ||
           op == TETHER_OP_TILE || op == TETHER_OP_GATHER || op == TETHER_OP_GATHER_ELEMENTS ||
           op == TETHER_OP_GATHER_ND || op == TETHER_OP_REDUCE_MAX || op == TETHER_OP_REDUCE_MIN;
}

/* clip (float min/max attributes), relu, abs of the range of the first input. */
static bool clamp_range(const tether_ir_graph *g, const tether_ir_node *n, int depth, range *r) {
    range a;
    bool known = union_of(g, n, 0, 1, depth, &a);
    if (n->op == TETHER_OP_CLIP) {
        if (!known) {
            a = (range){NO_LO, RANGE_LIMIT};
        }
        if (!(n->attrs.max <= (float)RANGE_LIMIT) || !(n->attrs.min >= (float)-RANGE_LIMIT)) {
            *r = a;
            return known;
        }
        int64_t cmax = (int64_t)ceil(n->attrs.max), cmin = (int64_t)floor(n->attrs.min);
        *r = (range){a.lo == NO_LO ? cmin : max64(min64(a.lo, cmax), cmin),
                     min64(max64(a.hi, cmin), cmax)};
        return true;
    }
    if (!known) {
        return false;
    }
    if (n->op == TETHER_OP_RELU) {
        *r = (range){max64(a.lo, 0), max64(a.hi, 0)};
        return true;
    }
    if (a.lo == NO_LO) {
        return false;
    }
    *r = (range){a.lo >= 0 ? a.lo : (a.hi <= 0 ? -a.hi : 0), max64(-a.lo, a.hi)};
    return true;
}

/* cast: the input's range when the values survive the conversion (floats truncate toward
 * zero), else the range of a narrow integer target type (the values wrap or saturate into it). */
static bool cast_range(const tether_ir_graph *g, const tether_ir_node *n, int depth, range *r) {
    range a, t;
    bool known = union_of(g, n, 0, 1, depth, &a);
    bool narrow = type_range(n->attrs.to, &t);
    if (known && (!narrow || (a.lo != NO_LO && a.lo >= t.lo && a.hi <= t.hi))) {
        *r = a;
        return true;
    }
    if (narrow) {
        *r = t;
        return true;
    }
    return false;
}

static bool node_range(const tether_ir_graph *g, const tether_ir_node *n, int depth, range *r) {
    tether_op op = n->op;
    if (moves_elements(op)) {
        return union_of(g, n, 0, 1, depth, r);
    }
    if (op == TETHER_OP_CONCAT) {
        return union_of(g, n, 0, n->ninputs, depth, r);
    }
    if (op == TETHER_OP_WHERE) {
        return union_of(g, n, 1, 3, depth, r);
    }
    if (op == TETHER_OP_MIN || op == TETHER_OP_MAX) {
        return minmax_range(g, n, depth, r);
    }
    if (op == TETHER_OP_ADD || op == TETHER_OP_SUB || op == TETHER_OP_MUL) {
        return arith_range(g, n, depth, r);
    }
    if (op == TETHER_OP_RELU || op == TETHER_OP_ABS || op == TETHER_OP_CLIP) {
        return clamp_range(g, n, depth, r);
    }
    if (op == TETHER_OP_CAST) {
        return cast_range(g, n, depth, r);
    }
    return false;
}

/* The range of IR tensor t's values, false when the analysis cannot tell. */
static bool range_of(const tether_ir_graph *g, int t, int depth, range *r) {
    if (t < 0 || t >= g->ntensors || depth > RANGE_DEPTH) {
        return false;
    }
    const tether_ir_tensor *x = &g->tensors[t];
    if (x->data) {
        return const_range(x, r);
    }
    int p = producer(g, t);
    if (p < 0) { /* a graph input: the range of a narrow integer type */
        return type_range(x->dtype, r);
    }
    return node_range(g, &g->nodes[p], depth, r) && fits(*r);
}

int64_t tonnx_loop_trip_bound(timport *c, int m) {
    range r;
    if (m < 0 || !range_of(c->g, m, 0, &r) || r.hi > TONNX_LOOP_BOUND_MAX) {
        return -1;
    }
    return r.hi < 1 ? 1 : r.hi;
}
