/*
 * ONNX control flow: If, Loop and Scan. Their subgraphs (GraphProto attributes) are converted
 * inline into the one IR graph, so the generated C is straight-line code and no interpreter runs
 * on the device (docs/onnx.md, "Control flow"):
 *   If    a condition known at import time (an initializer, a Constant, a shape computation, a
 *         bound input) converts the taken branch only (the other branch is never read, so it may
 *         hold operators or shapes that would not import); a condition known only at run time
 *         converts both branches and selects each output with a `where` (the branches' outputs
 *         must have equal shapes and types).
 *   Loop  unrolled when the trip count is known at import time (at most TONNX_UNROLL_MAX
 *         iterations); a condition known at import time ends the unrolling where it turns false;
 *         one computed at run time predicates the carried values (`where` keeps them once it is
 *         false); with scan outputs (their length would be data-dependent) it becomes a run-time
 *         loop whose scan outputs are bounded by the trip count, as does a Loop with scan
 *         outputs of more than TONNX_UNROLL_MAX iterations. A Loop
 *         with a run-time trip count or condition, or one of more than TONNX_UNROLL_RUNTIME
 *         iterations (none given: unbounded) whose first iteration leaves nodes to run, becomes
 *         a run-time loop instead (control_loop.c; what the first iteration made is rolled
 *         back), so an unrolling never stops silently short of the loop's real end.
 *   Scan  unrolled over the scan inputs' extent (known at compile time), directions and axes as
 *         the attributes say; a scan input computed at run time is sliced per iteration (a
 *         slice and a squeeze: the index is a constant). Opset 8's batched Scan runs one such
 *         scan per batch element and stacks the results.
 *
 * A subgraph is converted by a child import (its own value table) sharing the IR graph and the
 * host constants: its formal inputs and the outer-scope values it reads are seeded from the
 * parent before its structural steps run, its node and tensor names carry a prefix naming the
 * control node (and the iteration), and its outputs come back as (IR tensor, host constant)
 * pairs. What must stay true: a subgraph reads outer values only through the seeding (a value
 * the parent has not computed yet is an error naming it); every refusal names the node and the
 * reason; nothing of the child outlives the call except its host constants, which join the
 * parent's list (and budget).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* The most iterations a Loop or Scan is unrolled to, and how deep subgraphs nest. */
#define TONNX_UNROLL_MAX 4096
#define TONNX_NEST_MAX   16
/* A Loop of more iterations than this (or with no trip count) whose first iteration leaves
 * nodes to run (not all folded at import) and that has no scan outputs becomes a run-time loop
 * (control_loop.c) instead of being unrolled further. */
#define TONNX_UNROLL_RUNTIME 64

/* The most ONNX nodes one import may convert inline (a few bytes of nested loops would
 * otherwise multiply into any number of nodes). */
#define TONNX_UNROLL_NODES (1 << 14)

static const Onnx__GraphProto *graph_attr(timport *c, const Onnx__NodeProto *n, const char *name) {
    const Onnx__AttributeProto *a = tonnx_attr(n, name);
    if (!a || a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH || !a->g) {
        tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute '%s' (a graph) is missing", name);
        return NULL;
    }
    return a->g;
}

/* Every name graph g (and the graphs nested in it) reads. */
static void refs_of(const Onnx__GraphProto *g, void (*fn)(void *, const char *), void *arg) {
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t j = 0; j < n->n_input; j++) {
            fn(arg, S(n->input[j]));
        }
        for (size_t a = 0; a < n->n_attribute; a++) {
            const Onnx__AttributeProto *at = n->attribute[a];
            if (at->g) {
                refs_of(at->g, fn, arg);
            }
            for (size_t k = 0; k < at->n_graphs; k++) {
                refs_of(at->graphs[k], fn, arg);
            }
        }
    }
    for (size_t i = 0; i < g->n_output; i++) {
        fn(arg, S(g->output[i]->name));
    }
}

static bool defined_in(const Onnx__GraphProto *g, const char *name) {
    for (size_t i = 0; i < g->n_initializer; i++) {
        if (!strcmp(S(g->initializer[i]->name), name)) {
            return true;
        }
    }
    for (size_t i = 0; i < g->n_input; i++) {
        if (!strcmp(S(g->input[i]->name), name)) {
            return true;
        }
    }
    for (size_t i = 0; i < g->n_node; i++) {
        for (size_t j = 0; j < g->node[i]->n_output; j++) {
            if (!strcmp(S(g->node[i]->output[j]), name)) {
                return true;
            }
        }
    }
    return false;
}

typedef struct seeding {
    timport *parent, *child;
    const Onnx__GraphProto *g;
    int rc;
} seeding;

/* Seeds one outer-scope name the subgraph reads from the parent's value. */
static void seed_outer(void *arg, const char *name) {
    seeding *s = arg;
    if (s->rc || !name[0] || defined_in(s->g, name) || tonnx_find(s->child, name) >= 0) {
        return;
    }
    int vi = tonnx_find(s->parent, name);
    if (vi < 0) {
        return; /* a name local to a nested graph, or undefined: the child's checks say which */
    }
    value *v = &s->parent->v[vi];
    if (!v->k && v->tensor < 0) {
        if (v->input >= 0) {
            s->rc = tonnx_ensure_tensor(s->parent, vi, "outer-scope value");
        } else {
            s->rc = tonnx_fail(s->parent, TETHER_ERR_INVALID_ARG,
                               "the subgraph reads '%s' before the outer graph computes it", name);
        }
        if (s->rc) {
            return;
        }
    }
    s->rc = tonnx_seed_value(s->child, name, v->tensor, v->k);
}

static void child_release(timport *p, timport *ch) {
    hconst **tail = &ch->owned;
    while (*tail) {
        tail = &(*tail)->next_owned;
    }
    *tail = p->owned;
    p->owned = ch->owned;
    p->host_bytes = ch->host_bytes;
    p->host_limit = ch->host_limit;
    p->inlined = ch->inlined;
    for (size_t i = 0; ch->node_names && i < ch->gp->n_node; i++) {
        free(ch->node_names[i]);
    }
    free(ch->node_names);
    free(ch->v);
    free(ch->slots);
    free(ch->input_info);
    free(ch->input_value);
    free(ch->bound);
}

/* Converts subgraph sg inline: formals bind its inputs in order, outs receive its outputs. */
int tonnx_inline_graph(timport *p, const Onnx__GraphProto *sg, const char *prefix,
                       const bindv *formals, int nformals, bindv *outs, int nouts) {
    if ((int)sg->n_input != nformals || (int)sg->n_output != nouts) {
        return tonnx_fail(p, TETHER_ERR_INVALID_ARG,
                          "subgraph '%s' has %zu inputs and %zu outputs, the node gives %d and "
                          "takes %d",
                          S(sg->name), sg->n_input, sg->n_output, nformals, nouts);
    }
    if (p->depth >= TONNX_NEST_MAX) {
        return tonnx_fail(p, TETHER_ERR_LIMIT, "subgraphs nest deeper than %d", TONNX_NEST_MAX);
    }
    if (sg->n_node > (size_t)(TONNX_UNROLL_NODES - p->inlined)) {
        return tonnx_fail(p, TETHER_ERR_LIMIT,
                          "converting subgraph '%s' inline would take the subgraph nodes "
                          "converted past %d (loops unrolled too far)",
                          S(sg->name), TONNX_UNROLL_NODES);
    }
    timport ch;
    memset(&ch, 0, sizeof ch);
    ch.source = p->source;
    memcpy(ch.dir, p->dir, sizeof ch.dir);
    ch.m = p->m;
    ch.gp = (Onnx__GraphProto *)sg;
    ch.opset = p->opset;
    ch.g = p->g;
    ch.cur = -1;
    ch.host_bytes = p->host_bytes;
    ch.host_limit = p->host_limit;
    ch.prefix = prefix;
    ch.depth = p->depth + 1;
    ch.inlined = p->inlined + (int)sg->n_node;
    ch.loop_iter1 = p->loop_iter1;
    int rc = tonnx_name_nodes(&ch);
    for (int i = 0; !rc && i < nformals; i++) {
        const char *name = S(sg->input[i]->name);
        if (!name[0]) {
            rc = tonnx_fail(p, TETHER_ERR_INVALID_ARG, "subgraph input %d has no name", i);
        } else if (tonnx_find(&ch, name) >= 0) {
            rc = tonnx_fail(p, TETHER_ERR_INVALID_ARG, "subgraph input '%s' is listed twice", name);
        } else {
            rc = tonnx_seed_value(&ch, name, formals[i].tensor, formals[i].k);
        }
    }
    if (!rc) {
        seeding s = {p, &ch, sg, 0};
        refs_of(sg, seed_outer, &s);
        rc = s.rc;
    }
    int *order = NULL;
    if (!rc && !(rc = tonnx_check_arity(&ch)) && !(rc = tonnx_collect_values(&ch))) {
        order = malloc(sizeof(int) * (sg->n_node ? sg->n_node : 1));
        rc = order ? TETHER_OK : tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (!rc && !(rc = tonnx_sort_nodes(&ch, order)) && !(rc = tonnx_bind_inputs(&ch, order))) {
        tonnx_propagate_constness(&ch, order);
        if (!(rc = tonnx_support_scan(&ch))) {
            rc = tonnx_convert_nodes(&ch, order);
        }
    }
    for (int i = 0; !rc && i < nouts; i++) {
        int vi = tonnx_find(&ch, S(sg->output[i]->name));
        if (vi < 0) {
            rc = tonnx_fail(p, TETHER_ERR_INVALID_ARG, "subgraph output '%s' is not defined",
                            S(sg->output[i]->name));
            break;
        }
        if (!ch.v[vi].k && ch.v[vi].tensor < 0) {
            rc = tonnx_ensure_tensor(&ch, vi, "subgraph output");
        }
        outs[i].tensor = ch.v[vi].tensor;
        outs[i].k = ch.v[vi].k;
    }
    free(order);
    child_release(p, &ch);
    return rc;
}

/* The IR tensor of a binding (a host constant becomes a constant tensor). */
int tonnx_tensor_of(timport *c, bindv *b, const char *suffix) {
    if (b->tensor >= 0) {
        return TETHER_OK;
    }
    if (!b->k) {
        return tonnx_fail(c, TETHER_ERR_INTERNAL, "a subgraph value has no tensor");
    }
    return tonnx_hconst_tensor(c, suffix, b->k, &b->tensor);
}

bindv tonnx_input_bind(timport *c, const Onnx__NodeProto *n, int i, int *rc) {
    bindv b = {-1, NULL};
    int vi = has_input(n, i) ? tonnx_find(c, S(n->input[i])) : -1;
    *rc = TETHER_OK;
    if (vi < 0) {
        return b;
    }
    value *v = &c->v[vi];
    if (!v->k && v->tensor < 0) {
        *rc = tonnx_ensure_tensor(c, vi, "input");
    }
    b.tensor = v->tensor;
    b.k = v->k;
    return b;
}

/* Node output i takes binding b (as Identity does). */
void tonnx_set_output(timport *c, const Onnx__NodeProto *n, int i, bindv b) {
    int vi = i < (int)n->n_output ? tonnx_find(c, S(n->output[i])) : -1;
    if (vi >= 0) {
        c->v[vi].tensor = b.tensor;
        c->v[vi].k = b.k;
    }
}

/* A new IR node op(in...) into a fresh tensor; *out its binding. */
int tonnx_emit_op(timport *c, const char *what, tether_op op, const int *in, int nin,
                  const tether_ir_attrs *a, bindv *out) {
    int t;
    char suffix[96];
    int r = snprintf(suffix, sizeof suffix, "%s#%d", what, c->uniq++); /* unique node names */
    if (r < 0 || (size_t)r >= sizeof suffix) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "ONNX import: a temporary name for '%.40s' is too long", what);
    }
    int rc = tonnx_temp_tensor(c, suffix, &t);
    if (!rc) {
        rc = tonnx_emit(c, suffix, op, in, nin, t, a);
    }
    out->tensor = t;
    out->k = NULL;
    return rc;
}

static void shape_text(const tether_ir_tensor *t, char *buf, size_t n) {
    char tn[TETHER_DTYPE_NAME_MAX];
    tether_dtype_name(t->dtype, tn, sizeof tn);
    size_t o = (size_t)snprintf(buf, n, "%s[", tn);
    for (int i = 0; i < t->ndim && o + 24 < n; i++) {
        o += (size_t)snprintf(buf + o, n - o, "%s%" PRId64, i ? "," : "", t->shape[i]);
    }
    snprintf(buf + o, n - o, "]");
}

/* where(cond, a, b) after checking that a and b have the same type and shape. */
static int select_of(timport *c, int cond, bindv *a, bindv *b, const char *what, int i,
                     bindv *out) {
    int rc = tonnx_tensor_of(c, a, "then_const");
    rc = rc ? rc : tonnx_tensor_of(c, b, "else_const");
    if (rc) {
        return rc;
    }
    const tether_ir_tensor *ta = &c->g->tensors[a->tensor], *tb = &c->g->tensors[b->tensor];
    bool same = ta->ndim == tb->ndim && ta->dtype.code == tb->dtype.code &&
                ta->dtype.bits == tb->dtype.bits;
    for (int d = 0; same && d < ta->ndim; d++) {
        same = ta->shape[d] == tb->shape[d];
    }
    if (!same) {
        char sa[160], sb[160];
        shape_text(ta, sa, sizeof sa);
        shape_text(tb, sb, sizeof sb);
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                          "%s %d is %s in one case and %s in the other; with a condition known "
                          "only at run time both are computed and selected, which needs equal "
                          "types and shapes",
                          what, i, sa, sb);
    }
    int in[3] = {cond, a->tensor, b->tensor};
    char suffix[48];
    snprintf(suffix, sizeof suffix, "select%d", i);
    return tonnx_emit_op(c, suffix, TETHER_OP_WHERE, in, 3, NULL, out);
}

/* The truth of a host constant (its first element; an empty one is false). */
static bool k_true(const hconst *k) {
    if (!k->count) {
        return false;
    }
    return k->is_int ? ((const int64_t *)k->data)[0] != 0 : ((const float *)k->data)[0] != 0.0f;
}

static int bool_tensor(timport *c, int t) {
    DLDataType dt = c->g->tensors[t].dtype;
    if (dt.code != kDLUInt || dt.bits != 1) {
        char tn[TETHER_DTYPE_NAME_MAX];
        tether_dtype_name(dt, tn, sizeof tn);
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "the condition '%s' is %s, not bool",
                          c->g->tensors[t].name, tn);
    }
    return TETHER_OK;
}

int tonnx_cv_if(timport *c, const Onnx__NodeProto *n) {
    const Onnx__GraphProto *tg = graph_attr(c, n, "then_branch");
    const Onnx__GraphProto *eg = tg ? graph_attr(c, n, "else_branch") : NULL;
    if (!eg) {
        return TETHER_ERR_INVALID_ARG;
    }
    int rc;
    bindv cond = tonnx_input_bind(c, n, 0, &rc);
    int nout = (int)n->n_output;
    if (rc) {
        return rc;
    }
    bindv *a = calloc((size_t)(2 * nout + 1), sizeof *a);
    if (!a) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    bindv *b = a + nout;
    char prefix[400];
    const char *me = tonnx_node_name(c, c->cur);
    int save = c->cur;
    if (cond.k) { /* the taken branch only */
        bool taken = k_true(cond.k);
        snprintf(prefix, sizeof prefix, "%s/%s/", me, taken ? "then" : "else");
        rc = tonnx_inline_graph(c, taken ? tg : eg, prefix, NULL, 0, a, nout);
        c->cur = save;
        for (int i = 0; !rc && i < nout; i++) {
            tonnx_set_output(c, n, i, a[i]);
        }
    } else {
        snprintf(prefix, sizeof prefix, "%s/then/", me);
        rc = tonnx_inline_graph(c, tg, prefix, NULL, 0, a, nout);
        snprintf(prefix, sizeof prefix, "%s/else/", me);
        rc = rc ? rc : tonnx_inline_graph(c, eg, prefix, NULL, 0, b, nout);
        c->cur = save;
        rc = rc ? rc : bool_tensor(c, cond.tensor);
        for (int i = 0; !rc && i < nout; i++) {
            bindv o;
            rc = select_of(c, cond.tensor, &a[i], &b[i], "output", i, &o);
            if (!rc) {
                tonnx_set_output(c, n, i, o);
            }
        }
    }
    free(a);
    return rc;
}

/* A host constant: the int64 scalar v. */
hconst *tonnx_k_int(timport *c, int64_t v) {
    hconst *k = tonnx_hconst_new(c, true, 0, NULL);
    if (k) {
        ((int64_t *)k->data)[0] = v;
    }
    return k;
}

/* Stacks per-iteration values vals[0..count) along axis (of the result's rank: a value's rank
 * + 1) into *out: unsqueeze each, then concat (in groups the IR's input limit allows). */
static int stack_values(timport *c, bindv *vals, int count, int64_t axis, int which, bindv *out) {
    int rc = TETHER_OK;
    char suffix[64];
    int *ts = malloc(sizeof(int) * (size_t)(count ? count : 1));
    if (!ts) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; !rc && i < count; i++) {
        snprintf(suffix, sizeof suffix, "scan%d_const", which);
        rc = tonnx_tensor_of(c, &vals[i], suffix);
        if (rc) {
            break;
        }
        int rank = c->g->tensors[vals[i].tensor].ndim + 1;
        int64_t ax = axis < 0 ? axis + rank : axis;
        if (ax < 0 || ax >= rank) {
            rc = tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                            "scan output axis %" PRId64 " is out of range for rank %d", axis, rank);
            break;
        }
        tether_ir_attrs at;
        tether_ir_attrs_init(TETHER_OP_UNSQUEEZE, &at);
        at.ints[0] = ax;
        at.nints = 1;
        bindv u;
        snprintf(suffix, sizeof suffix, "scan%d_%d", which, i);
        rc = tonnx_emit_op(c, suffix, TETHER_OP_UNSQUEEZE, &vals[i].tensor, 1, &at, &u);
        ts[i] = u.tensor;
        axis = ax;
    }
    int level = 0;
    while (!rc && count > 1) { /* concat groups of up to TETHER_IR_MAX_INPUTS */
        int groups = 0;
        for (int s = 0; !rc && s < count; s += TETHER_IR_MAX_INPUTS, groups++) {
            int m = count - s < TETHER_IR_MAX_INPUTS ? count - s : TETHER_IR_MAX_INPUTS;
            tether_ir_attrs at;
            tether_ir_attrs_init(TETHER_OP_CONCAT, &at);
            at.axis = axis;
            bindv o;
            snprintf(suffix, sizeof suffix, "scan%d_cat%d_%d", which, level, groups);
            rc = tonnx_emit_op(c, suffix, TETHER_OP_CONCAT, ts + s, m, &at, &o);
            ts[groups] = o.tensor;
        }
        count = groups;
        level++;
    }
    if (!rc) {
        out->tensor = ts[0];
        out->k = NULL;
    }
    free(ts);
    return rc;
}

int tonnx_cv_loop(timport *c, const Onnx__NodeProto *n) {
    const Onnx__GraphProto *body = graph_attr(c, n, "body");
    if (!body) {
        return TETHER_ERR_INVALID_ARG;
    }
    int nstate = (int)n->n_input - 2, nout = (int)n->n_output;
    if (nstate < 0) {
        nstate = 0;
    }
    int nscan = nout - nstate;
    if (nscan < 0 || (int)body->n_input != nstate + 2 ||
        (int)body->n_output != nstate + 1 + nscan) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "the body takes %zu inputs and gives %zu outputs; with %d loop-carried "
                          "values and %d outputs it must take %d and give at least %d",
                          body->n_input, body->n_output, nstate, nout, nstate + 2, nstate + 1);
    }
    int rc;
    int64_t trip = TONNX_UNROLL_MAX;
    bool has_trip = has_input(n, 0);
    if (has_trip) {
        hconst *mk;
        rc = tonnx_in_const(c, 0, true, &mk);
        if (rc) {
            tether_clear_error();
            return tonnx_loop_region(c, n, body, nstate, nscan, -1); /* control_loop.c */
        }
        if (!mk->is_int || mk->count != 1) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "the trip count must be one integer");
        }
        trip = ((const int64_t *)mk->data)[0];
        if (trip < 0) {
            trip = 0;
        }
        if (trip > TONNX_UNROLL_MAX) { /* scan outputs bounded by the trip count */
            return tonnx_loop_region(c, n, body, nstate, nscan, trip); /* control_loop.c */
        }
    }
    bindv cond = tonnx_input_bind(c, n, 1, &rc);
    if (rc) {
        return rc;
    }
    /* active: known true (cond absent or a true constant), known false, or a run-time tensor */
    bool known = cond.tensor < 0 || cond.k, go = !cond.k || k_true(cond.k) || cond.tensor < 0;
    if (cond.k) {
        go = k_true(cond.k);
    }
    int active = known ? -1 : cond.tensor;
    if (!known && (rc = bool_tensor(c, active))) {
        return rc;
    }
    if (!has_trip && !known) {
        return tonnx_loop_region(c, n, body, nstate, nscan, -1); /* control_loop.c */
    }
    if (!known && nscan && trip > 0) { /* a run-time condition: scan outputs of run-time length */
        return tonnx_loop_region(c, n, body, nstate, nscan, trip); /* control_loop.c */
    }
    size_t nb = (size_t)(2 * nstate + 2 + 2 * (nstate + 1 + nscan));
    bindv *state = calloc(nb, sizeof *state);
    bindv **scans = calloc((size_t)(nscan ? nscan : 1), sizeof *scans);
    if (!state || !scans) {
        free(state);
        free(scans);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    bindv *formals = state + nstate, *outs = formals + nstate + 2;
    for (int i = 0; i < nstate && !rc; i++) {
        state[i] = tonnx_input_bind(c, n, 2 + i, &rc);
    }
    if (!cond.k && cond.tensor < 0) {
        cond.k = tonnx_k_int(c, 1);
        rc = rc ? rc : (cond.k ? TETHER_OK : TETHER_ERR_LIMIT);
    }
    const char *me = tonnx_node_name(c, c->cur);
    int save = c->cur, it = 0, nt0 = c->g->ntensors, nn0 = c->g->nnodes, inl0 = c->inlined;
    for (; !rc && it < trip && (go || !known); it++) {
        if (it == 1 && !nscan && trip > TONNX_UNROLL_RUNTIME && c->g->nnodes > nn0) {
            /* the first iteration computes at run time and more may follow: a run-time loop */
            tonnx_loop_rollback(c, nt0, nn0);
            c->inlined = inl0;
            free(scans);
            free(state);
            return tonnx_loop_region(c, n, body, nstate, nscan, -1); /* control_loop.c */
        }
        formals[0].tensor = -1;
        formals[0].k = tonnx_k_int(c, it);
        if (!formals[0].k) {
            rc = TETHER_ERR_LIMIT;
            break;
        }
        formals[1] = cond;
        memcpy(formals + 2, state, sizeof *state * (size_t)nstate);
        char prefix[400];
        snprintf(prefix, sizeof prefix, "%s/iter%d/", me, it);
        rc = tonnx_inline_graph(c, body, prefix, formals, nstate + 2, outs, nstate + 1 + nscan);
        c->cur = save;
        if (rc) {
            break;
        }
        bool cond_rt = !outs[0].k;
        if (nscan && (active >= 0 || cond_rt)) {
            /* the scan outputs' length is known at run time only: a run-time loop whose scan
             * outputs are bounded by the trip count (what was unrolled is undone) */
            tonnx_loop_rollback(c, nt0, nn0);
            c->inlined = inl0;
            for (int j = 0; j < nscan; j++) {
                free(scans[j]);
            }
            free(scans);
            free(state);
            return tonnx_loop_region(c, n, body, nstate, nscan, trip); /* control_loop.c */
        }
        for (int i = 0; !rc && i < nstate; i++) {
            if (active >= 0) { /* predicated: keep the old value once the loop has ended */
                rc = select_of(c, active, &outs[1 + i], &state[i], "loop-carried value", i,
                               &state[i]);
            } else {
                state[i] = outs[1 + i];
            }
        }
        for (int j = 0; !rc && j < nscan; j++) {
            if (!scans[j]) {
                scans[j] = calloc((size_t)trip, sizeof **scans);
                if (!scans[j]) {
                    rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
                    break;
                }
            }
            scans[j][it] = outs[1 + nstate + j];
        }
        cond = outs[0];
        if (rc) {
            break;
        }
        if (cond.k) {
            if (!k_true(cond.k)) {
                known = true;
                go = false;
                active = -1;
            }
        } else if ((rc = bool_tensor(c, cond.tensor)) == TETHER_OK) {
            if (active < 0) {
                active = cond.tensor;
                known = false;
            } else {
                int in[2] = {active, cond.tensor};
                bindv o;
                rc = tonnx_emit_op(c, "active", TETHER_OP_AND, in, 2, NULL, &o);
                active = o.tensor;
            }
        }
    }
    if (!rc && !has_trip && known && go) {
        rc = tonnx_fail(c, TETHER_ERR_LIMIT,
                        "no trip count, and the condition is still true after %d iterations",
                        TONNX_UNROLL_MAX);
    }
    if (!rc && nscan && it == 0) {
        rc = tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                        "the loop runs no iteration, so its scan outputs have no known shape");
    }
    for (int i = 0; !rc && i < nstate; i++) {
        tonnx_set_output(c, n, i, state[i]);
    }
    for (int j = 0; !rc && j < nscan; j++) {
        bindv o;
        rc = stack_values(c, scans[j], it, 0, j, &o);
        if (!rc) {
            tonnx_set_output(c, n, nstate + j, o);
        }
    }
    for (int j = 0; j < nscan; j++) {
        free(scans[j]);
    }
    free(scans);
    free(state);
    return rc;
}

/* Element t of host constant k along axis: the slice with that axis removed. */
static hconst *k_slice(timport *c, const hconst *k, int axis, int64_t t) {
    int64_t shape[TETHER_IR_MAX_NDIM];
    int nd = 0;
    for (int d = 0; d < k->ndim; d++) {
        if (d != axis) {
            shape[nd++] = k->shape[d];
        }
    }
    hconst *o = tonnx_hconst_new(c, k->is_int, nd, shape);
    if (!o) {
        return NULL;
    }
    size_t outer = 1, inner = 1, es = k->is_int ? sizeof(int64_t) : sizeof(float);
    for (int d = 0; d < axis; d++) {
        outer *= (size_t)k->shape[d];
    }
    for (int d = axis + 1; d < k->ndim; d++) {
        inner *= (size_t)k->shape[d];
    }
    size_t ext = (size_t)k->shape[axis];
    for (size_t i = 0; i < outer; i++) {
        memcpy((char *)o->data + i * inner * es,
               (const char *)k->data + ((i * ext) + (size_t)t) * inner * es, inner * es);
    }
    return o;
}

/* Element t of binding in along axis, that axis removed: a host constant is sliced on the host, a
 * run-time tensor by a slice and a squeeze (shapes are static, so t is a constant). */
static int slice_at(timport *c, bindv in, int axis, int64_t t, const char *what, bindv *out) {
    if (in.k) {
        out->tensor = -1;
        out->k = k_slice(c, in.k, axis, t);
        return out->k ? TETHER_OK : TETHER_ERR_LIMIT;
    }
    const tether_ir_tensor *x = &c->g->tensors[in.tensor];
    int nd = x->ndim;
    tether_ir_attrs at;
    tether_ir_attrs_init(TETHER_OP_SLICE, &at);
    for (int d = 0; d < nd; d++) {
        at.ints[d] = d == axis ? t : 0;
        at.ints[nd + d] = d == axis ? t + 1 : x->shape[d];
        at.steps[d] = 1;
    }
    at.nints = 2 * nd;
    bindv s;
    char suffix[96];
    snprintf(suffix, sizeof suffix, "%s_slice", what);
    int rc = tonnx_emit_op(c, suffix, TETHER_OP_SLICE, &in.tensor, 1, &at, &s);
    if (rc) {
        return rc;
    }
    tether_ir_attrs_init(TETHER_OP_SQUEEZE, &at);
    at.ints[0] = axis;
    at.nints = 1;
    snprintf(suffix, sizeof suffix, "%s_squeeze", what);
    return tonnx_emit_op(c, suffix, TETHER_OP_SQUEEZE, &s.tensor, 1, &at, out);
}

/* One scan (opset 9's semantics): ins[0..nin) are the initial states then the nsi scan inputs;
 * res[0..nout) receive the final states then the stacked scan outputs. tag tells the IR names
 * of this run from the others of the node (opset 8 runs one per batch element). */
static int scan_run(timport *c, const Onnx__GraphProto *body, int nin, int nsi, int nout,
                    bindv *ins, const int64_t *in_axes, const int64_t *in_dirs,
                    const int64_t *out_axes, const int64_t *out_dirs, const char *tag, bindv *res) {
    int nstate = nin - nsi, nscan = nout - nstate, rc = TETHER_OK;
    bindv *all = calloc((size_t)(nin + nout + 2), sizeof *all);
    bindv **scans = calloc((size_t)(nscan ? nscan : 1), sizeof *scans);
    if (!all || !scans) {
        free(all);
        free(scans);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    bindv *formals = all, *outs = formals + nin;
    int64_t len = -1;
    int axis[TETHER_IR_MAX_INPUTS];
    for (int s = 0; !rc && s < nsi; s++) {
        const bindv *in = &ins[nstate + s];
        int nd = in->k ? in->k->ndim : c->g->tensors[in->tensor].ndim;
        const int64_t *sh = in->k ? in->k->shape : c->g->tensors[in->tensor].shape;
        int64_t ax = in_axes[s] < 0 ? in_axes[s] + nd : in_axes[s];
        if (ax < 0 || ax >= nd) {
            rc = tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                            "scan input %d: axis %" PRId64 " is out of range for rank %d", s,
                            in_axes[s], nd);
            break;
        }
        axis[s] = (int)ax;
        if (len >= 0 && sh[ax] != len) {
            rc = tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                            "the scan inputs have %" PRId64 " and %" PRId64 " elements along "
                            "their scan axes",
                            len, sh[ax]);
        }
        len = sh[ax];
    }
    if (!rc && len > TONNX_UNROLL_MAX) {
        rc = tonnx_fail(c, TETHER_ERR_LIMIT,
                        "%" PRId64 " iterations are more than the %d tether unrolls", len,
                        TONNX_UNROLL_MAX);
    }
    if (!rc && len == 0 && nscan) {
        rc = tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                        "the scan runs no iteration, so its scan outputs have no known shape");
    }
    const char *me = tonnx_node_name(c, c->cur);
    int save = c->cur;
    for (int64_t t = 0; !rc && t < len; t++) {
        for (int i = 0; i < nstate; i++) {
            formals[i] = ins[i];
        }
        for (int s = 0; s < nsi && !rc; s++) {
            char what[64];
            snprintf(what, sizeof what, "%sin%d_%" PRId64, tag, s, t);
            rc = slice_at(c, ins[nstate + s], axis[s], in_dirs[s] ? len - 1 - t : t, what,
                          &formals[nstate + s]);
        }
        char prefix[400];
        snprintf(prefix, sizeof prefix, "%s/%siter%" PRId64 "/", me, tag, t);
        rc = rc ? rc : tonnx_inline_graph(c, body, prefix, formals, nin, outs, nout);
        c->cur = save;
        for (int i = 0; !rc && i < nstate; i++) {
            ins[i] = outs[i];
        }
        for (int j = 0; !rc && j < nscan; j++) {
            if (!scans[j] && !(scans[j] = calloc((size_t)len, sizeof **scans))) {
                rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
                break;
            }
            scans[j][out_dirs[j] ? len - 1 - t : t] = outs[nstate + j];
        }
    }
    for (int i = 0; !rc && i < nstate; i++) {
        res[i] = ins[i];
    }
    for (int j = 0; !rc && j < nscan; j++) {
        rc = stack_values(c, scans[j], (int)len, out_axes[j], j, &res[nstate + j]);
    }
    for (int j = 0; j < nscan; j++) {
        free(scans[j]);
    }
    free(scans);
    free(all);
    return rc;
}

/* Scan. Opset 9 and later: inputs are the initial states then the scan inputs, sliced along
 * scan_input_axes. Opset 8: an optional sequence_lens first, then states and scan inputs with a
 * leading batch axis (the scan axis is 1); each batch element is scanned on its own and the
 * results stacked along axis 0; sequence_lens must be known at import time and equal the scan
 * length for every batch element (shorter sequences are refused naming it). */
int tonnx_cv_scan(timport *c, const Onnx__NodeProto *n) {
    const Onnx__GraphProto *body = graph_attr(c, n, "body");
    if (!body) {
        return TETHER_ERR_INVALID_ARG;
    }
    int v8 = c->opset < 9, first = v8 ? 1 : 0;
    int64_t nsi;
    int rc = tonnx_attr_int(c, "num_scan_inputs", -1, &nsi);
    int nin = (int)n->n_input - first, nout = (int)n->n_output;
    if (rc) {
        return rc;
    }
    if (nsi < 1 || nsi > nin) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "num_scan_inputs %" PRId64 " must be 1 to the %d inputs", nsi, nin);
    }
    int nstate = nin - (int)nsi, nscan = nout - nstate;
    if (nscan < 0 || (int)body->n_input != nin || (int)body->n_output != nout) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                          "the body takes %zu inputs and gives %zu outputs; the node has %d and %d",
                          body->n_input, body->n_output, nin, nout);
    }
    int64_t in_axes[TETHER_IR_MAX_INPUTS] = {0}, in_dirs[TETHER_IR_MAX_INPUTS] = {0};
    int64_t out_axes[TETHER_IR_MAX_OUTPUTS * 8] = {0}, out_dirs[TETHER_IR_MAX_OUTPUTS * 8] = {0};
    int cnt;
    if (nsi > TETHER_IR_MAX_INPUTS || nscan > TETHER_IR_MAX_OUTPUTS * 8) {
        return tonnx_fail(c, TETHER_ERR_LIMIT, "too many scan inputs or outputs");
    }
    const char *lists[4] = {"scan_input_axes", "scan_input_directions", "scan_output_axes",
                            "scan_output_directions"};
    if (v8) {
        lists[0] = lists[2] = lists[3] = NULL;
        lists[1] = "directions";
    }
    static const char *const v9only[] = {"scan_input_axes", "scan_input_directions",
                                         "scan_output_axes", "scan_output_directions"};
    for (int l = 0; l < 5; l++) {
        const char *name = l < 4 ? v9only[l] : "directions";
        if ((l < 4) == v8 && tonnx_attr(n, name)) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute '%s' is not one of opset %d",
                              name, c->opset);
        }
    }
    int64_t *dst[4] = {in_axes, in_dirs, out_axes, out_dirs};
    int want[4] = {(int)nsi, (int)nsi, nscan, nscan};
    for (int l = 0; l < 4; l++) {
        if (!lists[l]) {
            continue;
        }
        rc = tonnx_attr_ints(c, lists[l], dst[l], want[l] ? want[l] : 1, &cnt);
        if (rc) {
            return rc;
        }
        if (cnt >= 0 && cnt != want[l]) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "%s has %d entries, expected %d", lists[l],
                              cnt, want[l]);
        }
        if (cnt < 0) {
            memset(dst[l], 0, sizeof(int64_t) * (size_t)want[l]);
        }
    }
    bindv *all = calloc((size_t)(2 * nin + 2 * nout + 2), sizeof *all);
    if (!all) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    bindv *ins = all, *bins = all + nin, *res = bins + nin;
    for (int i = 0; !rc && i < nin; i++) {
        ins[i] = tonnx_input_bind(c, n, first + i, &rc);
        if (!rc && ins[i].tensor < 0 && !ins[i].k) {
            rc = tonnx_fail(c, TETHER_ERR_INVALID_ARG, "input %d is missing", first + i);
        }
    }
    if (rc || !v8) {
        rc = rc ? rc
                : scan_run(c, body, nin, (int)nsi, nout, ins, in_axes, in_dirs, out_axes, out_dirs,
                           "", res);
        for (int i = 0; !rc && i < nout; i++) {
            tonnx_set_output(c, n, i, res[i]);
        }
        free(all);
        return rc;
    }
    /* opset 8: batch axis 0 everywhere, scan axis 1 (0 once the batch element is taken) */
    int64_t batch = -1;
    for (int i = 0; !rc && i < nin; i++) {
        int nd = ins[i].k ? ins[i].k->ndim : c->g->tensors[ins[i].tensor].ndim;
        const int64_t *sh = ins[i].k ? ins[i].k->shape : c->g->tensors[ins[i].tensor].shape;
        if (nd < (i < nstate ? 1 : 2) || (batch >= 0 && sh[0] != batch)) {
            rc = tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                            "input %d has no batch axis of the other inputs' extent", first + i);
        }
        batch = nd ? sh[0] : batch;
    }
    if (!rc && has_input(n, 0)) {
        bindv sl = tonnx_input_bind(c, n, 0, &rc);
        int64_t len =
            ins[nstate].k ? ins[nstate].k->shape[1] : c->g->tensors[ins[nstate].tensor].shape[1];
        if (!rc && !sl.k) {
            rc = tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                            "sequence_lens '%s' is computed at run time (the scan is unrolled, so "
                            "it must be known at import time)",
                            S(n->input[0]));
        }
        for (size_t j = 0; !rc && j < sl.k->count; j++) {
            int64_t v = sl.k->is_int ? ((const int64_t *)sl.k->data)[j]
                                     : (int64_t)((const float *)sl.k->data)[j];
            if (v != len) {
                rc = tonnx_fail(c, TETHER_ERR_UNSUPPORTED,
                                "sequence_lens[%zu] is %" PRId64 ", shorter than the %" PRId64
                                " steps of the scan inputs (only full-length sequences)",
                                j, v, len);
            }
        }
    }
    if (!rc && batch < 1) {
        rc = tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "a batch of %" PRId64 " elements", batch);
    }
    bindv **per = rc ? NULL : calloc((size_t)(nout ? nout : 1), sizeof *per);
    if (!rc && !per) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int j = 0; !rc && j < nout; j++) {
        per[j] = calloc((size_t)batch, sizeof **per);
        if (!per[j]) {
            rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    for (int64_t b = 0; !rc && b < batch; b++) {
        char tag[48];
        snprintf(tag, sizeof tag, "b%" PRId64, b);
        for (int i = 0; !rc && i < nin; i++) {
            char what[64];
            snprintf(what, sizeof what, "%s_in%d", tag, i);
            rc = slice_at(c, ins[i], 0, b, what, &bins[i]);
        }
        snprintf(tag, sizeof tag, "b%" PRId64 "/", b);
        rc = rc ? rc
                : scan_run(c, body, nin, (int)nsi, nout, bins, in_axes, in_dirs, out_axes, out_dirs,
                           tag, res);
        for (int j = 0; !rc && j < nout; j++) {
            per[j][b] = res[j];
        }
    }
    for (int j = 0; !rc && j < nout; j++) {
        bindv o;
        rc = stack_values(c, per[j], (int)batch, 0, 100 + j, &o);
        if (!rc) {
            tonnx_set_output(c, n, j, o);
        }
    }
    for (int j = 0; per && j < nout; j++) {
        free(per[j]);
    }
    free(per);
    free(all);
    return rc;
}
