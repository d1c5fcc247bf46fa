/*
 * The ONNX importer's structural steps (import.c runs them in order, docs/onnx.md): the value
 * table (every name an initializer, a graph input or a node output defines), node names, the
 * per-node arity check against each operator's ONNX schema, the topological order, binding of
 * caller-given input values, constness, and the support scan that names every unsupported
 * operator of a model in one message.
 *
 * What must stay true: nothing here converts; after tonnx_check_arity no step reads past a
 * node's input or output lists; every allocation is bounded by the model's own counts of things
 * present in the file; each failure goes through tonnx_fail (one message naming the node).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* A growable string (the support scan's list). */
typedef struct sbuf {
    char *data;
    size_t len, cap;
    bool failed;
} sbuf;

static void sbuf_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void sbuf_printf(sbuf *b, const char *fmt, ...) {
    if (b->failed) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || b->len + (size_t)n + 1 > (size_t)1 << 24) {
        b->failed = true;
        return;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t nc = (b->len + (size_t)n + 1) * 2;
        char *d = realloc(b->data, nc);
        if (!d) {
            b->failed = true;
            return;
        }
        b->data = d;
        b->cap = nc;
    }
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* ---- value table ----------------------------------------------------------------------- */

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        h = (h ^ (uint8_t)*s) * 16777619u;
    }
    return h;
}

int tonnx_find(const timport *c, const char *name) {
    if (!name || !name[0] || !c->nslots) {
        return -1;
    }
    for (uint32_t i = hash_str(name) & (uint32_t)(c->nslots - 1);;
         i = (i + 1) & (uint32_t)(c->nslots - 1)) {
        int s = c->slots[i];
        if (s < 0) {
            return -1;
        }
        if (strcmp(c->v[s].name, name) == 0) {
            return s;
        }
    }
}

static int rehash(timport *c, int nslots) {
    int *slots = malloc(sizeof(int) * (size_t)nslots);
    if (!slots) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", c->source);
    }
    for (int i = 0; i < nslots; i++) {
        slots[i] = -1;
    }
    for (int k = 0; k < c->nv; k++) {
        uint32_t i = hash_str(c->v[k].name) & (uint32_t)(nslots - 1);
        while (slots[i] >= 0) {
            i = (i + 1) & (uint32_t)(nslots - 1);
        }
        slots[i] = k;
    }
    free(c->slots);
    c->slots = slots;
    c->nslots = nslots;
    return TETHER_OK;
}

/* Appends a new value (the name must not exist yet). */
static int add_value(timport *c, const char *name, int *idx) {
    if (c->nv == c->cap) {
        int nc = c->cap ? c->cap * 2 : 64;
        value *v = realloc(c->v, sizeof(value) * (size_t)nc);
        if (!v) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", c->source);
        }
        c->v = v;
        c->cap = nc;
    }
    value *v = &c->v[c->nv];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->producer = -1;
    v->input = -1;
    v->tensor = -1;
    c->nv++;
    if (c->nv * 2 > c->nslots) {
        int rc = rehash(c, c->nslots ? c->nslots * 2 : 128);
        if (rc) {
            return rc;
        }
    } else {
        uint32_t i = hash_str(name) & (uint32_t)(c->nslots - 1);
        while (c->slots[i] >= 0) {
            i = (i + 1) & (uint32_t)(c->nslots - 1);
        }
        c->slots[i] = c->nv - 1;
    }
    *idx = c->nv - 1;
    return TETHER_OK;
}

int tonnx_seed_value(timport *c, const char *name, int tensor, hconst *k) {
    int idx = tonnx_find(c, name);
    int rc = idx >= 0 ? TETHER_OK : add_value(c, name, &idx);
    if (!rc) {
        c->v[idx].tensor = tensor;
        c->v[idx].k = k;
        c->v[idx].is_const = k != NULL;
    }
    return rc;
}

/* ---- structure: names, values, order --------------------------------------------------- */

int tonnx_name_nodes(timport *c) {
    size_t nn = c->gp->n_node;
    c->node_names = calloc(nn ? nn : 1, sizeof(char *));
    /* a small hash set of the names given so far */
    size_t slots = 16;
    while (slots < 2 * nn + 2) {
        slots *= 2;
    }
    char **set = calloc(slots, sizeof(char *));
    if (!c->node_names || !set) {
        free(set);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", c->source);
    }
    int rc = TETHER_OK;
    for (size_t i = 0; i < nn && !rc; i++) {
        const Onnx__NodeProto *n = c->gp->node[i];
        char base[300], name[320];
        const char *pre = c->prefix ? c->prefix : "";
        if (S(n->name)[0]) {
            snprintf(base, sizeof base, "%s%s", pre, n->name);
        } else {
            snprintf(base, sizeof base, "%s%s_%zu", pre, S(n->op_type)[0] ? n->op_type : "node", i);
        }
        snprintf(name, sizeof name, "%s", base);
        for (int k = 1;; k++) {
            uint32_t h = hash_str(name) & (uint32_t)(slots - 1);
            while (set[h] && strcmp(set[h], name) != 0) {
                h = (h + 1) & (uint32_t)(slots - 1);
            }
            if (!set[h]) {
                c->node_names[i] = strdup(name);
                set[h] = c->node_names[i];
                if (!set[h]) {
                    rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", c->source);
                }
                break;
            }
            snprintf(name, sizeof name, "%s_%d", base, k);
        }
    }
    free(set);
    return rc;
}

int tonnx_collect_values(timport *c) {
    Onnx__GraphProto *gp = c->gp;
    int rc, idx;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        const char *name = S(tp->name);
        if (!name[0]) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "initializer %zu has no name", i);
        }
        if (tonnx_find(c, name) >= 0) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "initializer '%s' is defined twice", name);
        }
        tether_onnx_tensor t;
        rc = tonnx_tensor_from_proto(tp, name, c->dir, &t);
        if (rc) {
            return tonnx_wrap(c, rc);
        }
        hconst *k = NULL;
        rc = tonnx_hconst_from(c, t.dtype, t.ndim, t.shape, t.data, t.nbytes, name, &k);
        tether_onnx_tensor_free(&t);
        if (rc || (rc = add_value(c, name, &idx))) {
            return rc;
        }
        c->v[idx].k = k;
        c->v[idx].is_const = true;
    }
    if (gp->n_sparse_initializer) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "sparse initializers are not supported");
    }
    /* graph inputs that are not initializers, in order */
    c->input_info = calloc(gp->n_input ? gp->n_input : 1, sizeof *c->input_info);
    c->input_value = calloc(gp->n_input ? gp->n_input : 1, sizeof(int));
    c->bound = calloc(gp->n_input ? gp->n_input : 1, sizeof(bool));
    if (!c->input_info || !c->input_value || !c->bound) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", c->source);
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const char *name = S(gp->input[i]->name);
        if (!name[0]) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "graph input %zu has no name", i);
        }
        int prev = tonnx_find(c, name);
        if (prev >= 0) {
            if (c->v[prev].input >= 0) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "graph input '%s' is listed twice",
                                  name);
            }
            continue; /* an initializer listed as input (IR < 4): a constant */
        }
        if ((rc = add_value(c, name, &idx))) {
            return rc;
        }
        c->v[idx].input = c->ninputs;
        c->input_info[c->ninputs] = gp->input[i];
        c->input_value[c->ninputs++] = idx;
    }
    for (int i = 0; c->o && i < c->o->ninput_shapes; i++) {
        int vi = tonnx_find(c, c->o->input_shapes[i].name);
        if (vi < 0 || c->v[vi].input < 0) {
            char names[200] = "";
            for (int k = 0; k < c->ninputs && strlen(names) < 150; k++) {
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s'%s'",
                         k ? ", " : "", c->v[c->input_value[k]].name);
            }
            return tonnx_fail(c, TETHER_ERR_NOT_FOUND,
                              "--input-shape names '%s', which is not a graph input (inputs: %s)",
                              c->o->input_shapes[i].name, names);
        }
    }
    /* node outputs: each name written once, never an input or initializer */
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (size_t j = 0; j < n->n_output; j++) {
            const char *name = S(n->output[j]);
            if (!name[0]) {
                continue;
            }
            int prev = tonnx_find(c, name);
            if (prev >= 0) {
                const value *p = &c->v[prev];
                c->cur = (int)i;
                if (p->producer >= 0) {
                    return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                                      "output '%s' is also written by node '%s'", name,
                                      tonnx_node_name(c, p->producer));
                }
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "output '%s' overwrites the %s '%s'",
                                  name, p->input >= 0 ? "graph input" : "initializer", name);
            }
            if ((rc = add_value(c, name, &idx))) {
                return rc;
            }
            c->v[idx].producer = (int)i;
        }
    }
    /* every node input is defined somewhere */
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (size_t j = 0; j < n->n_input; j++) {
            const char *name = S(n->input[j]);
            if (name[0] && tonnx_find(c, name) < 0) {
                c->cur = (int)i;
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                                  "input '%s' is not defined: no initializer, graph input or node "
                                  "output has that name (missing initializer?)",
                                  name);
            }
        }
    }
    c->cur = -1;
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = S(gp->output[i]->name);
        if (tonnx_find(c, name) < 0) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG,
                              "graph output '%s' is not defined by any node, input or initializer",
                              name);
        }
    }
    if (gp->n_output == 0) {
        return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "the graph has no outputs");
    }
    return TETHER_OK;
}

/* "2 inputs", "1 to 3 inputs", "at least 1 input" */
static void count_text(char *buf, size_t n, int lo, int hi, const char *what) {
    if (hi < 0) {
        snprintf(buf, n, "at least %d %s%s", lo, what, lo == 1 ? "" : "s");
    } else if (lo == hi) {
        snprintf(buf, n, "%d %s%s", lo, what, lo == 1 ? "" : "s");
    } else {
        snprintf(buf, n, "%d to %d %ss", lo, hi, what);
    }
}

/* Every node of an operator the importer handles has as many inputs and outputs as the ONNX
 * schema of its version allows (tonnx_op_arity), checked before anything else reads them: the
 * converters and the host evaluation then read inputs and outputs below the minimum without
 * looking. Trailing empty names are absent optional inputs/outputs; an empty name at a required
 * position is a missing one. Nodes of operators the importer does not handle (or not at this
 * opset) are left to the support scan. */
int tonnx_check_arity(timport *c) {
    for (size_t i = 0; i < c->gp->n_node; i++) {
        const Onnx__NodeProto *n = c->gp->node[i];
        const op_def *d = tonnx_op_find(S(n->domain), S(n->op_type));
        if (!d || c->opset < d->since || c->opset > d->until) {
            continue;
        }
        c->cur = (int)i;
        tonnx_arity a;
        if (tonnx_op_arity(d, c->opset, &a)) {
            return tonnx_fail(c, TETHER_ERR_INTERNAL, "the importer lists no input/output counts");
        }
        char at[32] = "", want[48], note[64] = "";
        if (a.by_opset) {
            snprintf(at, sizeof at, " at opset %d", c->opset);
        }
        size_t nin = n->n_input, given = 0;
        while (nin && !S(n->input[nin - 1])[0]) {
            nin--;
        }
        for (size_t j = 0; j < nin; j++) {
            if (S(n->input[j])[0]) {
                given++;
            } else if (j < (size_t)a.in_min && !note[0]) {
                snprintf(note, sizeof note, " (input %zu has an empty name)", j);
            }
        }
        bool many = a.in_max >= 0 && nin > (size_t)a.in_max;
        if (many || nin < (size_t)a.in_min || note[0]) {
            count_text(want, sizeof want, a.in_min, a.in_max, "input");
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "takes %s%s, %zu given%s", want, at,
                              many ? nin : given, note);
        }
        size_t nout = n->n_output;
        while (nout && !S(n->output[nout - 1])[0]) {
            nout--;
        }
        if ((a.out_max >= 0 && nout > (size_t)a.out_max) || nout < (size_t)a.out_min) {
            count_text(want, sizeof want, a.out_min, a.out_max, "output");
            /* a required output named "": the message the converters gave before */
            if (nout < (size_t)a.out_min && n->n_output > nout) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "output %zu has an empty name", nout);
            }
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "has %s%s, %zu given", want, at, nout);
        }
        for (size_t j = 0; j < (size_t)a.out_min; j++) {
            if (!S(n->output[j])[0]) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "output %zu has an empty name", j);
            }
        }
    }
    c->cur = -1;
    return TETHER_OK;
}

/* Kahn's order of the nodes into order[]; a cycle is reported with its nodes. */
int tonnx_sort_nodes(timport *c, int *order) {
    size_t nn = c->gp->n_node;
    bool *placed = calloc(nn ? nn : 1, sizeof(bool));
    bool *ready = calloc((size_t)(c->nv ? c->nv : 1), sizeof(bool));
    if (!placed || !ready) {
        free(placed);
        free(ready);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", c->source);
    }
    for (int i = 0; i < c->nv; i++) {
        ready[i] = c->v[i].producer < 0;
    }
    size_t count = 0;
    for (bool progress = true; progress && count < nn;) {
        progress = false;
        for (size_t i = 0; i < nn; i++) {
            const Onnx__NodeProto *n = c->gp->node[i];
            bool ok = !placed[i];
            for (size_t j = 0; ok && j < n->n_input; j++) {
                ok = !S(n->input[j])[0] || ready[tonnx_find(c, n->input[j])];
            }
            if (!ok) {
                continue;
            }
            placed[i] = true;
            order[count++] = (int)i;
            for (size_t j = 0; j < n->n_output; j++) {
                if (S(n->output[j])[0]) {
                    ready[tonnx_find(c, n->output[j])] = true;
                }
            }
            progress = true;
        }
    }
    int rc = TETHER_OK;
    if (count < nn) {
        /* walk back from an unplaced node through unplaced producers until a node repeats */
        int *path = malloc(sizeof(int) * (nn + 1));
        int *pos = malloc(sizeof(int) * nn);
        if (!path || !pos) {
            rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", c->source);
        } else {
            for (size_t i = 0; i < nn; i++) {
                pos[i] = -1;
            }
            int u = 0;
            while (placed[u]) {
                u++;
            }
            int len = 0;
            while (pos[u] < 0) {
                pos[u] = len;
                path[len++] = u;
                const Onnx__NodeProto *n = c->gp->node[u];
                int next = -1;
                for (size_t j = 0; j < n->n_input && next < 0; j++) {
                    int vi = S(n->input[j])[0] ? tonnx_find(c, n->input[j]) : -1;
                    if (vi >= 0 && !ready[vi]) {
                        next = c->v[vi].producer;
                    }
                }
                u = next;
            }
            char text[TETHER_ERROR_MSG_MAX] = "";
            size_t o = 0;
            for (int k = pos[u]; k <= len && o + 8 < sizeof text; k++) {
                int node = k < len ? path[k] : u;
                o += (size_t)snprintf(text + o, sizeof text - o, "%s'%s'", k > pos[u] ? " -> " : "",
                                      tonnx_node_name(c, node));
            }
            rc = tonnx_fail(c, TETHER_ERR_INVALID_ARG, "the graph has a cycle: %s", text);
        }
        free(path);
        free(pos);
    }
    free(placed);
    free(ready);
    return rc;
}

/* Marks the values operators need as constants (walking back through host-evaluated ops), then
 * binds graph inputs among them to the given values. */

/* The load option value that binds graph input k (named `name`): the value given under that
 * name when the caller named its values (tether_model_load_options.input_names), else the k-th;
 * -1 when none. */
int tonnx_input_value_index(const tether_model_load_options *o, int k, const char *name) {
    if (!o || !o->input_values) {
        return -1;
    }
    if (o->input_names) {
        for (int j = 0; j < o->ninput_values; j++) {
            if (o->input_names[j] && name && strcmp(o->input_names[j], name) == 0) {
                return j;
            }
        }
        return -1;
    }
    return k < o->ninput_values ? k : -1;
}

int tonnx_bind_inputs(timport *c, const int *order) {
    size_t nn = c->gp->n_node;
    for (size_t r = nn; r-- > 0;) {
        const Onnx__NodeProto *n = c->gp->node[order[r]];
        const op_def *d = tonnx_op_find(S(n->domain), S(n->op_type));
        if (!d) {
            continue;
        }
        unsigned mask = tonnx_const_inputs(d, c->opset);
        bool outs_needed = false;
        for (size_t j = 0; j < n->n_output; j++) {
            int vi = tonnx_find(c, S(n->output[j]));
            outs_needed |= vi >= 0 && c->v[vi].needed;
        }
        for (size_t j = 0; j < n->n_input; j++) {
            int vi = tonnx_find(c, S(n->input[j]));
            if (vi >= 0 &&
                ((j < 32 && (mask >> j) & 1) || d->host_only || (d->host && outs_needed))) {
                c->v[vi].needed = true;
            }
        }
    }
    const tether_model_load_options *o = c->o;
    for (int k = 0; k < c->ninputs; k++) {
        value *v = &c->v[c->input_value[k]];
        int j = tonnx_input_value_index(o, k, v->name);
        if (!v->needed || j < 0 || !o->input_values[j].data) {
            continue;
        }
        const tether_model_value *mv = &o->input_values[j];
        int rc = tonnx_hconst_from(c, mv->dtype, mv->ndim, mv->shape, mv->data, mv->nbytes, v->name,
                                   &v->k);
        if (rc) {
            return rc;
        }
        v->is_const = true;
        c->bound[k] = true;
    }
    return TETHER_OK;
}

void tonnx_propagate_constness(timport *c, const int *order) {
    for (size_t r = 0; r < c->gp->n_node; r++) {
        const Onnx__NodeProto *n = c->gp->node[order[r]];
        const op_def *d = tonnx_op_find(S(n->domain), S(n->op_type));
        if (!d || !d->host) {
            continue;
        }
        bool all = true;
        if (!tonnx_shape_only(d->op_type)) {
            for (size_t j = 0; j < n->n_input; j++) {
                int vi = tonnx_find(c, S(n->input[j]));
                all &= vi < 0 || c->v[vi].is_const;
            }
        }
        for (size_t j = 0; all && j < n->n_output; j++) {
            int vi = tonnx_find(c, S(n->output[j]));
            if (vi >= 0) {
                c->v[vi].is_const = true;
            }
        }
    }
}

/* Every node the importer cannot convert, in one error (the full list in tether_error_detail). */
int tonnx_support_scan(timport *c) {
    sbuf list = {0};
    int count = 0;
    for (size_t i = 0; i < c->gp->n_node; i++) {
        const Onnx__NodeProto *n = c->gp->node[i];
        const char *dom = S(n->domain);
        bool std = !dom[0] || strcmp(dom, "ai.onnx") == 0;
        const op_def *d = tonnx_op_find(dom, S(n->op_type));
        char reason[200] = "";
        const char *why = NULL;
        c->cur = (int)i;
        if (!d) {
            if (!std) { /* a custom domain: not in the --custom-ops registry */
                tonnx_custom_unknown(dom, S(n->op_type), reason, sizeof reason);
            }
            why = reason;
        } else if (c->opset < d->since || c->opset > d->until) {
            snprintf(reason, sizeof reason, ": handled for opsets %d..%d", d->since, d->until);
            why = reason;
        } else {
            for (size_t a = 0; a < n->n_attribute && !why; a++) {
                const char *an = S(n->attribute[a]->name);
                const char *p = d->attrs;
                size_t al = strlen(an);
                bool known = false;
                while (p && *p && !known) {
                    const char *e = strchr(p, ',');
                    size_t l = e ? (size_t)(e - p) : strlen(p);
                    known = l == al && strncmp(p, an, l) == 0;
                    p = e ? e + 1 : NULL;
                }
                if (!known || S(n->attribute[a]->ref_attr_name)[0]) {
                    snprintf(reason, sizeof reason, ": attribute '%s'", an);
                    why = reason;
                }
                for (size_t b = 0; b < a && !why; b++) {
                    if (strcmp(S(n->attribute[b]->name), an) == 0) {
                        snprintf(reason, sizeof reason, ": attribute '%s' given twice", an);
                        why = reason;
                    }
                }
            }
            if (!why && d->check) {
                char buf[160];
                const char *r = d->check(c, n, (int)i, buf, sizeof buf);
                if (r) {
                    snprintf(reason, sizeof reason, ": %s", r);
                    why = reason;
                }
            }
            if (!why && d->host_only && !tonnx_shape_only(d->op_type)) {
                for (size_t j = 0; j < n->n_input && !why; j++) {
                    int vi = tonnx_find(c, S(n->input[j]));
                    if (vi >= 0 && !c->v[vi].is_const) {
                        why = ": only on constant inputs (shape computations)";
                    }
                }
            }
        }
        if (!why) {
            continue;
        }
        if (std) {
            sbuf_printf(&list, "%s%s (node '%s', opset %d%s)", count ? ", " : "", S(n->op_type),
                        tonnx_node_name(c, (int)i), c->opset, why);
        } else {
            int64_t dv = 0;
            for (size_t k = 0; k < c->m->n_opset_import; k++) {
                if (strcmp(S(c->m->opset_import[k]->domain), dom) == 0) {
                    dv = c->m->opset_import[k]->version;
                }
            }
            sbuf_printf(&list, "%s%s (node '%s', domain '%s' opset %lld%s)", count ? ", " : "",
                        S(n->op_type), tonnx_node_name(c, (int)i), dom, (long long)dv, why);
        }
        count++;
    }
    c->cur = -1;
    int rc = TETHER_OK;
    if (list.failed) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", c->source);
    } else if (count) {
        sbuf full = {0};
        sbuf_printf(&full, "%s: unsupported model: %d operator%s cannot be imported: %s", c->source,
                    count, count == 1 ? "" : "s", list.data);
        rc = tether_set_error(TETHER_ERR_UNSUPPORTED, "%s", full.data ? full.data : "");
        tether_set_error_detail(full.data ? full.data : "");
        free(full.data);
    }
    free(list.data);
    return rc;
}
