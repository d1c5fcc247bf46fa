/*
 * The JSON model format (docs/model-format.md): reading with cJSON into the IR, and writing.
 *
 * What must stay true: every error names the source file and, when one is involved, the node or
 * tensor and the problem; unknown keys, ops and attributes are errors (never ignored); a weights
 * file shorter than a tensor's [offset, offset+length) is an error; a successful load returns an
 * inferred graph.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

typedef struct ctx {
    const char *source;
    tether_ir_graph *g;
    unsigned char *weights;
    size_t weights_len;
    char weights_path[1024];
    int have_weights;
} ctx;

static int fail(const ctx *c, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int fail(const ctx *c, int status, const char *fmt, ...) {
    char msg[220];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tether_set_error(status, "%s: %s", c->source, msg);
}

static int get_int(const cJSON *v, int64_t *out) {
    if (!cJSON_IsNumber(v)) {
        return -1;
    }
    double d = v->valuedouble;
    if (d != floor(d) || d < -9.0e15 || d > 9.0e15) {
        return -1;
    }
    *out = (int64_t)d;
    return 0;
}

/* Reads an integer array of 1..max entries. */
static int get_ints(const cJSON *v, int64_t *out, int max, int *n) {
    if (!cJSON_IsArray(v)) {
        return -1;
    }
    int cnt = cJSON_GetArraySize(v);
    if (cnt > max) {
        return -1;
    }
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (get_int(e, &out[i++])) {
            return -1;
        }
    }
    *n = cnt;
    return 0;
}

static int parse_tensor(ctx *c, const cJSON *t, int index) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
    if (!cJSON_IsObject(t) || !cJSON_IsString(name) || !name->valuestring[0]) {
        return fail(c, TETHER_ERR_INVALID_ARG, "tensors[%d] has no \"name\"", index);
    }
    const char *nm = name->valuestring;
    const cJSON *e;
    cJSON_ArrayForEach(e, t) {
        static const char *const keys[] = {"name",   "dtype", "shape", "offset",
                                           "length", "data",  "layout"};
        int ok = 0;
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
            ok |= strcmp(e->string, keys[k]) == 0;
        }
        if (!ok) {
            return fail(c, TETHER_ERR_INVALID_ARG, "tensor '%s': unknown key \"%s\"", nm,
                        e->string);
        }
    }
    DLDataType dt = TETHER_FLOAT32;
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(t, "dtype");
    if (dtype) {
        if (!cJSON_IsString(dtype) || tether_dtype_parse(dtype->valuestring, &dt) != 0) {
            return fail(c, TETHER_ERR_INVALID_ARG, "tensor '%s': unknown dtype %s%s%s", nm,
                        cJSON_IsString(dtype) ? "'" : "",
                        cJSON_IsString(dtype) ? dtype->valuestring : "(not a string)",
                        cJSON_IsString(dtype) ? "'" : "");
        }
    }
    int64_t shape[TETHER_IR_MAX_NDIM];
    int ndim = TETHER_IR_SHAPE_UNKNOWN;
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(t, "shape");
    if (sh) {
        if (get_ints(sh, shape, TETHER_IR_MAX_NDIM, &ndim)) {
            return fail(c, TETHER_ERR_INVALID_ARG,
                        "tensor '%s': \"shape\" must be an array of at most %d integers", nm,
                        TETHER_IR_MAX_NDIM);
        }
        for (int i = 0; i < ndim; i++) {
            if (shape[i] < 0) {
                return fail(c, TETHER_ERR_INVALID_ARG,
                            "tensor '%s': dimension %d has extent %lld (must be >= 0)", nm, i,
                            (long long)shape[i]);
            }
        }
    }
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(t, "offset");
    const cJSON *len = cJSON_GetObjectItemCaseSensitive(t, "length");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(t, "data");
    int rc;
    if (off || len || data) {
        if (ndim == TETHER_IR_SHAPE_UNKNOWN) {
            return fail(c, TETHER_ERR_INVALID_ARG, "constant '%s' needs a \"shape\"", nm);
        }
        size_t elems = 1;
        for (int i = 0; i < ndim; i++) {
            elems *= (size_t)shape[i];
        }
        size_t want = elems * tether_dtype_bytes(dt);
        if (data) {
            if (off || len) {
                return fail(c, TETHER_ERR_INVALID_ARG,
                            "constant '%s' has both \"data\" and \"offset\"/\"length\"", nm);
            }
            if (!cJSON_IsArray(data) || (size_t)cJSON_GetArraySize(data) != elems ||
                !tether_dtype_equal(dt, TETHER_FLOAT32)) {
                return fail(c, TETHER_ERR_MISMATCH,
                            "constant '%s': \"data\" must be %zu float32 numbers", nm, elems);
            }
            float *vals = malloc(want ? want : 1);
            if (!vals) {
                return fail(c, TETHER_ERR_OUT_OF_MEMORY, "out of memory");
            }
            size_t i = 0;
            cJSON_ArrayForEach(e, data) {
                if (!cJSON_IsNumber(e)) {
                    free(vals);
                    return fail(c, TETHER_ERR_INVALID_ARG,
                                "constant '%s': data[%zu] is not a number", nm, i);
                }
                vals[i++] = (float)e->valuedouble;
            }
            rc = tether_ir_add_constant(c->g, nm, dt, ndim, shape, vals, want, NULL);
            free(vals);
        } else {
            int64_t o, l;
            if (!off || !len || get_int(off, &o) || get_int(len, &l) || o < 0 || l < 0) {
                return fail(c, TETHER_ERR_INVALID_ARG,
                            "constant '%s' needs integer \"offset\" and \"length\" >= 0", nm);
            }
            if ((size_t)l != want) {
                return fail(c, TETHER_ERR_MISMATCH,
                            "constant '%s': length %lld bytes, shape and dtype need %zu", nm,
                            (long long)l, want);
            }
            if (!c->have_weights) {
                return fail(c, TETHER_ERR_INVALID_ARG,
                            "constant '%s' refers to a weights file but the model names none", nm);
            }
            if ((uint64_t)o + (uint64_t)l > c->weights_len) {
                return fail(c, TETHER_ERR_MISMATCH,
                            "weights file '%s' is too short: tensor '%s' needs bytes %lld..%lld, "
                            "the file has %zu",
                            c->weights_path, nm, (long long)o, (long long)(o + l), c->weights_len);
            }
            rc = tether_ir_add_constant(c->g, nm, dt, ndim, shape, c->weights + o, (size_t)l, NULL);
        }
    } else {
        rc = tether_ir_add_tensor(c->g, nm, dt, ndim, shape, NULL);
    }
    if (rc) {
        return fail(c, rc, "%s", tether_last_error());
    }
    return TETHER_OK;
}

static int node_fail(ctx *c, const char *node, const char *op, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static int node_fail(ctx *c, const char *node, const char *op, int status, const char *fmt, ...) {
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fail(c, status, "node '%s' (%s): %s", node, op, msg);
}

static int parse_act(const char *s, tether_act *out) {
    for (int a = TETHER_ACT_NONE; a < TETHER_ACT_COUNT_; a++) {
        if (strcmp(s, tether_act_name((tether_act)a)) == 0) {
            *out = (tether_act)a;
            return 0;
        }
    }
    return -1;
}

/* The attributes each op takes (the ATTRS and EPILOGUE columns of the operator table,
 * src/ir/ops.def; docs/model-format.md, the node table). A name outside an op's list is an
 * error, so a typo or an attribute of another op is never silently ignored. */
#define EPILOGUE_ATTRS "activation act_alpha act_min act_max residual"
static const char *op_attributes(tether_op op) {
#define OP_ATTRS_(id, name, kind, act, min_in, max_in, attrs, epilogue, formula, defaults, types,  \
                  iformula)                                                                        \
    [TETHER_OP_##id] = epilogue ? attrs " " EPILOGUE_ATTRS : attrs,
    static const char *const lists[TETHER_OP_COUNT_] = {TETHER_OP_LIST(OP_ATTRS_)};
#undef OP_ATTRS_
    if ((int)op < 0 || (int)op >= TETHER_OP_COUNT_) {
        return "";
    }
    return lists[op] + (lists[op][0] == ' '); /* an op whose only attributes are the epilogue's */
}

static int op_takes(tether_op op, const char *key) {
    if (strcmp(key, "activation") == 0 || strncmp(key, "act_", 4) == 0 ||
        strcmp(key, "residual") == 0) {
        return 1; /* an epilogue on another op gets its own message after parsing */
    }
    const char *list = op_attributes(op);
    size_t n = strlen(key);
    if (n == 0) {
        return 0; /* "" names nothing (and strstr would find it everywhere, forever) */
    }
    for (const char *p = list; (p = strstr(p, key)) != NULL; p += n) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) {
            return 1;
        }
    }
    return 0;
}

static int parse_attrs(ctx *c, const char *nm, tether_op op, const cJSON *attrs,
                       tether_ir_attrs *a) {
    const char *opn = tether_op_name(op);
    tether_ir_attrs_init(op, a);
    int have_shape = 0, have_axes = 0, have_pads = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, attrs) {
        const char *k = e->string;
        if (!op_takes(op, k)) {
            const char *list = op_attributes(op);
            return node_fail(c, nm, opn, TETHER_ERR_INVALID_ARG, "unknown attribute \"%s\" (%s%s)",
                             k, *list ? "this op takes: " : "this op takes no attributes", list);
        }
        int64_t v[2 * TETHER_IR_MAX_NDIM];
        int n = 0;
        int bad = 0;
        bool win = op == TETHER_OP_CONV_ND || op == TETHER_OP_CONV_TRANSPOSE;
        if (win && (strcmp(k, "strides") == 0 || strcmp(k, "dilations") == 0 ||
                    strcmp(k, "kernel") == 0 || strcmp(k, "pads") == 0)) {
            /* N-D windows: 1 to 3 entries (pads: begin..., end...), the same count in each */
            bool pads = k[0] == 'p';
            bad = get_ints(e, v, pads ? 6 : 3, &n) || n < 1 || (pads && n % 2);
            int nw = pads ? n / 2 : n;
            if (!bad && a->nwin && a->nwin != nw) {
                return node_fail(c, nm, opn, TETHER_ERR_INVALID_ARG,
                                 "attribute \"%s\" covers %d dimensions, another %d", k, nw,
                                 a->nwin);
            }
            if (!bad) {
                a->nwin = nw;
                for (int i = 0; i < nw; i++) {
                    if (pads) {
                        a->wpads[i] = v[i];
                        a->wpads[3 + i] = v[nw + i];
                    } else {
                        (k[0] == 'k'   ? a->wkernel
                         : k[0] == 'd' ? a->wdilations
                                       : a->wstrides)[i] = v[i];
                    }
                }
            }
        } else if (strcmp(k, "strides") == 0 || strcmp(k, "dilations") == 0 ||
                   strcmp(k, "kernel") == 0 || strcmp(k, "scales") == 0) {
            bad = get_ints(e, v, 2, &n) || n != 2;
            if (!bad) {
                int64_t *dst = k[0] == 's' && k[1] == 't' ? a->strides
                               : k[0] == 'd'              ? a->dilations
                               : k[0] == 'k'              ? a->kernel
                                                          : a->scales;
                dst[0] = v[0];
                dst[1] = v[1];
            }
        } else if (strcmp(k, "pads") == 0) {
            if (op == TETHER_OP_PAD) {
                bad = get_ints(e, a->ints, 2 * TETHER_IR_MAX_NDIM, &a->nints);
                have_pads = !bad;
            } else {
                bad = get_ints(e, v, 4, &n) || (n != 2 && n != 4);
                if (!bad) {
                    a->pads[0] = v[0];
                    a->pads[1] = v[1];
                    a->pads[2] = n == 4 ? v[2] : v[0];
                    a->pads[3] = n == 4 ? v[3] : v[1];
                }
            }
        } else if (strcmp(k, "groups") == 0) {
            bad = get_int(e, &a->groups);
        } else if (strcmp(k, "axis") == 0) {
            bad = get_int(e, &a->axis);
        } else if (strcmp(k, "k") == 0 || strcmp(k, "mode") == 0) {
            bad = get_int(e, k[0] == 'k' ? &a->k : &a->mode);
        } else if (strcmp(k, "steps") == 0) {
            bad = get_ints(e, a->steps, TETHER_IR_MAX_NDIM, &n);
        } else if (strcmp(k, "bounds") == 0 || strcmp(k, "labels") == 0 ||
                   strcmp(k, "activations") == 0) {
            bad = get_ints(e, a->ints, 2 * TETHER_IR_MAX_NDIM, &a->nints);
        } else if (strcmp(k, "ints") == 0) { /* nonzero, compress, unique, nms: [bound cap] */
            bad = get_ints(e, a->ints, TETHER_IR_MAX_NDIM, &a->nints);
        } else if (strcmp(k, "ignore_index") == 0) { /* nll_loss*: ints[0] */
            bad = get_int(e, &a->ints[0]);
            a->nints = 1;
        } else if (strcmp(k, "axes") == 0 || strcmp(k, "perm") == 0 || strcmp(k, "shape") == 0) {
            bad = get_ints(e, a->ints, TETHER_IR_MAX_NDIM, &a->nints);
            have_shape |= k[0] == 's';
            have_axes |= k[0] == 'a';
        } else if (strcmp(k, "ceil_mode") == 0 || strcmp(k, "count_include_pad") == 0 ||
                   strcmp(k, "trans_a") == 0 || strcmp(k, "trans_b") == 0 ||
                   strcmp(k, "keepdims") == 0 || strcmp(k, "residual") == 0 ||
                   strcmp(k, "allowzero") == 0) {
            int64_t iv = 0;
            bad = !cJSON_IsBool(e) && get_int(e, &iv);
            bool b = cJSON_IsBool(e) ? cJSON_IsTrue(e) : iv != 0;
            if (k[0] == 'c' && k[1] == 'e') {
                a->ceil_mode = b;
            } else if (k[0] == 'c') {
                a->count_include_pad = b;
            } else if (strcmp(k, "trans_a") == 0) {
                a->trans_a = b;
            } else if (strcmp(k, "trans_b") == 0) {
                a->trans_b = b;
            } else if (k[0] == 'k') {
                a->keepdims = b;
            } else if (k[0] == 'a') {
                a->allowzero = b;
            } else {
                a->has_residual = b;
            }
        } else if (strcmp(k, "alpha") == 0 || strcmp(k, "beta") == 0 || strcmp(k, "min") == 0 ||
                   strcmp(k, "max") == 0 || strcmp(k, "epsilon") == 0 || strcmp(k, "value") == 0 ||
                   strcmp(k, "act_alpha") == 0 || strcmp(k, "act_min") == 0 ||
                   strcmp(k, "act_max") == 0) {
            bad = !cJSON_IsNumber(e);
            float f = bad ? 0.0f : (float)e->valuedouble;
            if (strcmp(k, "alpha") == 0) {
                a->alpha = f;
            } else if (strcmp(k, "beta") == 0) {
                a->beta = f;
            } else if (strcmp(k, "min") == 0) {
                a->min = f;
            } else if (strcmp(k, "max") == 0) {
                a->max = f;
            } else if (strcmp(k, "epsilon") == 0) {
                a->epsilon = f;
            } else if (strcmp(k, "value") == 0) {
                a->value = f;
            } else if (strcmp(k, "act_alpha") == 0) {
                a->act_alpha = f;
            } else if (strcmp(k, "act_min") == 0) {
                a->act_min = f;
            } else {
                a->act_max = f;
            }
        } else if (strcmp(k, "activation") == 0) {
            bad = !cJSON_IsString(e) || parse_act(e->valuestring, &a->act);
        } else if (strcmp(k, "to") == 0) { /* cast: an element type name ("int64") */
            bad = !cJSON_IsString(e) || tether_dtype_parse(e->valuestring, &a->to) != 0;
        } else {
            return node_fail(c, nm, opn, TETHER_ERR_INVALID_ARG, "unknown attribute \"%s\"", k);
        }
        if (bad) {
            return node_fail(c, nm, opn, TETHER_ERR_INVALID_ARG, "attribute \"%s\" is malformed",
                             k);
        }
    }
    if (op == TETHER_OP_RESHAPE && !have_shape) {
        return node_fail(c, nm, opn, TETHER_ERR_INVALID_ARG, "missing attribute \"shape\"");
    }
    if (op == TETHER_OP_UNSQUEEZE && !have_axes) {
        return node_fail(c, nm, opn, TETHER_ERR_INVALID_ARG, "missing attribute \"axes\"");
    }
    if (op == TETHER_OP_PAD && !have_pads) {
        return node_fail(c, nm, opn, TETHER_ERR_INVALID_ARG, "missing attribute \"pads\"");
    }
    return TETHER_OK;
}

static int parse_node(ctx *c, const cJSON *nd, int index) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(nd, "name");
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(nd, "op");
    if (!cJSON_IsObject(nd) || !cJSON_IsString(name) || !name->valuestring[0]) {
        return fail(c, TETHER_ERR_INVALID_ARG, "nodes[%d] has no \"name\"", index);
    }
    const char *nm = name->valuestring;
    if (!cJSON_IsString(op)) {
        return fail(c, TETHER_ERR_INVALID_ARG, "node '%s' has no \"op\"", nm);
    }
    tether_op kind;
    if (tether_op_parse(op->valuestring, &kind)) {
        return fail(c, TETHER_ERR_NOT_FOUND, "node '%s': unknown op '%s'", nm, op->valuestring);
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, nd) {
        if (strcmp(e->string, "name") && strcmp(e->string, "op") && strcmp(e->string, "inputs") &&
            strcmp(e->string, "outputs") && strcmp(e->string, "attrs")) {
            return node_fail(c, nm, op->valuestring, TETHER_ERR_INVALID_ARG, "unknown key \"%s\"",
                             e->string);
        }
    }
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(nd, "inputs");
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(nd, "outputs");
    const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(nd, "attrs");
    if (!cJSON_IsArray(ins) || !cJSON_IsArray(outs) || (attrs && !cJSON_IsObject(attrs))) {
        return node_fail(c, nm, op->valuestring, TETHER_ERR_INVALID_ARG,
                         "\"inputs\" and \"outputs\" must be arrays, \"attrs\" an object");
    }
    int in[TETHER_IR_MAX_INPUTS], out[TETHER_IR_MAX_OUTPUTS];
    int nin = 0, nout = 0;
    if (cJSON_GetArraySize(ins) > TETHER_IR_MAX_INPUTS ||
        cJSON_GetArraySize(outs) > TETHER_IR_MAX_OUTPUTS) {
        return node_fail(c, nm, op->valuestring, TETHER_ERR_LIMIT, "too many inputs or outputs");
    }
    cJSON_ArrayForEach(e, ins) {
        if (cJSON_IsNull(e) || (cJSON_IsString(e) && !e->valuestring[0])) {
            in[nin++] = -1;
            continue;
        }
        int t = cJSON_IsString(e) ? tether_ir_find_tensor(c->g, e->valuestring) : -1;
        if (t < 0) {
            return node_fail(c, nm, op->valuestring, TETHER_ERR_NOT_FOUND,
                             "input %d '%s' is not a tensor of the model", nin,
                             cJSON_IsString(e) ? e->valuestring : "(not a string)");
        }
        in[nin++] = t;
    }
    cJSON_ArrayForEach(e, outs) {
        if (!cJSON_IsString(e) || !e->valuestring[0]) {
            return node_fail(c, nm, op->valuestring, TETHER_ERR_INVALID_ARG,
                             "output %d is not a name", nout);
        }
        int t = tether_ir_find_tensor(c->g, e->valuestring);
        if (t < 0) {
            int rc = tether_ir_add_tensor(c->g, e->valuestring, TETHER_FLOAT32,
                                          TETHER_IR_SHAPE_UNKNOWN, NULL, &t);
            if (rc) {
                return fail(c, rc, "%s", tether_last_error());
            }
        }
        out[nout++] = t;
    }
    tether_ir_attrs a;
    int rc = parse_attrs(c, nm, kind, attrs, &a);
    if (rc) {
        return rc;
    }
    rc = tether_ir_add_node(c->g, nm, kind, in, nin, out, nout, &a, NULL);
    if (rc) {
        return fail(c, rc, "%s", tether_last_error());
    }
    return TETHER_OK;
}

static int parse_io(ctx *c, const cJSON *root, const char *key, int is_input) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1) {
        return fail(c, TETHER_ERR_INVALID_ARG, "\"%s\" must be a non-empty array of names", key);
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        int t = cJSON_IsString(e) ? tether_ir_find_tensor(c->g, e->valuestring) : -1;
        if (t < 0) {
            return fail(c, TETHER_ERR_NOT_FOUND, "%s '%s' is not a tensor of the model",
                        is_input ? "graph input" : "graph output",
                        cJSON_IsString(e) ? e->valuestring : "(not a string)");
        }
        int rc = is_input ? tether_ir_add_input(c->g, t) : tether_ir_add_output(c->g, t);
        if (rc) {
            return fail(c, rc, "%s", tether_last_error());
        }
    }
    return TETHER_OK;
}

static int load_weights(ctx *c, const char *file, const char *dir) {
    if (!file[0] || strchr(file, '/') || strcmp(file, "..") == 0) {
        return fail(c, TETHER_ERR_INVALID_ARG,
                    "\"weights\" must be a plain file name next to the model, got '%s'", file);
    }
    snprintf(c->weights_path, sizeof c->weights_path, "%s/%s", dir ? dir : ".", file);
    char *data;
    size_t len;
    if (tether__read_file(c->weights_path, &data, &len)) {
        return fail(c, TETHER_ERR_IO, "%s", tether_last_error());
    }
    c->weights = (unsigned char *)data;
    c->weights_len = len;
    c->have_weights = 1;
    return TETHER_OK;
}

int tether_model_parse_json(const char *text, const char *source, const char *weights_dir,
                            tether_ir_graph *g) {
    ctx c = {.source = source ? source : "model", .g = g};
    memset(g, 0, sizeof *g);
    cJSON *root = cJSON_Parse(text);
    int rc = TETHER_OK;
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        int line = 1;
        for (const char *p = text; at && p < at && *p; p++) {
            line += *p == '\n';
        }
        return fail(&c, TETHER_ERR_INVALID_ARG, "invalid JSON near line %d", line);
    }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    const cJSON *weights = cJSON_GetObjectItemCaseSensitive(root, "weights");
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(root, "nodes");
    if (!cJSON_IsObject(root) || !cJSON_IsString(fmt) ||
        strcmp(fmt->valuestring, "tether-model") != 0) {
        rc = fail(&c, TETHER_ERR_INVALID_ARG, "not a tether model (\"format\": \"tether-model\")");
        goto out;
    }
    if (!cJSON_IsNumber(ver) || ver->valuedouble != 1) {
        rc = fail(&c, TETHER_ERR_UNSUPPORTED, "unsupported model version (this reader: 1)");
        goto out;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, root) {
        static const char *const keys[] = {"format", "version", "name",    "weights", "tensors",
                                           "nodes",  "inputs",  "outputs", "doc"};
        int ok = 0;
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
            ok |= strcmp(e->string, keys[k]) == 0;
        }
        if (!ok) {
            rc = fail(&c, TETHER_ERR_INVALID_ARG, "unknown top-level key \"%s\"", e->string);
            goto out;
        }
    }
    if (!cJSON_IsArray(tensors) || !cJSON_IsArray(nodes)) {
        rc = fail(&c, TETHER_ERR_INVALID_ARG, "\"tensors\" and \"nodes\" must be arrays");
        goto out;
    }
    if ((rc = tether_ir_init(g, cJSON_IsString(name) ? name->valuestring : "model"))) {
        goto out;
    }
    if (weights) {
        if (!cJSON_IsString(weights)) {
            rc = fail(&c, TETHER_ERR_INVALID_ARG, "\"weights\" must be a file name");
            goto out;
        }
        if ((rc = load_weights(&c, weights->valuestring, weights_dir))) {
            goto out;
        }
    }
    int i = 0;
    cJSON_ArrayForEach(e, tensors) {
        if ((rc = parse_tensor(&c, e, i++))) {
            goto out;
        }
    }
    if ((rc = parse_io(&c, root, "inputs", 1))) {
        goto out;
    }
    /* Node outputs first, so a node may read a tensor written by a later node (the order is
     * fixed, and cycles found, by inference). */
    cJSON_ArrayForEach(e, nodes) {
        const cJSON *outs = cJSON_GetObjectItemCaseSensitive(e, "outputs");
        const cJSON *o;
        cJSON_ArrayForEach(o, outs) {
            if (cJSON_IsString(o) && o->valuestring[0] &&
                tether_ir_find_tensor(g, o->valuestring) < 0 &&
                (rc = tether_ir_add_tensor(g, o->valuestring, TETHER_FLOAT32,
                                           TETHER_IR_SHAPE_UNKNOWN, NULL, NULL))) {
                rc = fail(&c, rc, "%s", tether_last_error());
                goto out;
            }
        }
    }
    i = 0;
    cJSON_ArrayForEach(e, nodes) {
        if ((rc = parse_node(&c, e, i++))) {
            goto out;
        }
    }
    if ((rc = parse_io(&c, root, "outputs", 0))) {
        goto out;
    }
    /* an output of data-dependent size (nonzero, compress, unique, nms) gets its extent output
     * "<name>_extent" after the listed ones, unless the model lists it already */
    if ((rc = tether_ir_add_extent_outputs(g)) || (rc = tether_ir_infer(g))) {
        rc = fail(&c, rc, "%s", tether_last_error());
    }
out:
    cJSON_Delete(root);
    free(c.weights);
    if (rc) {
        tether_ir_close(g);
    }
    return rc;
}

typedef struct loader {
    char ext[16];
    tether_model_loader fn;
    tether_model_loader_with fn_with;
} loader;

static loader loaders[8];

static int register_loader(const char *ext, tether_model_loader fn, tether_model_loader_with fw) {
    if (!ext || ext[0] != '.' || strlen(ext) >= sizeof loaders[0].ext || !(fn || fw) ||
        strcmp(ext, ".json") == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "model loader extension must be like \".onnx\" (not .json), "
                                "at most 15 characters, with a function");
    }
    for (size_t i = 0; i < sizeof loaders / sizeof *loaders; i++) {
        if (!(loaders[i].fn || loaders[i].fn_with) || strcmp(loaders[i].ext, ext) == 0) {
            snprintf(loaders[i].ext, sizeof loaders[i].ext, "%s", ext);
            loaders[i].fn = fn;
            loaders[i].fn_with = fw;
            return TETHER_OK;
        }
    }
    return tether_set_error(TETHER_ERR_LIMIT, "at most %zu model loaders",
                            sizeof loaders / sizeof *loaders);
}

int tether_model_register_loader(const char *ext, tether_model_loader fn) {
    return register_loader(ext, fn, NULL);
}

int tether_model_register_loader_with(const char *ext, tether_model_loader_with fn) {
    return register_loader(ext, NULL, fn);
}

int tether_model_input_shape_parse(const char *spec, tether_model_input_shape *out) {
    memset(out, 0, sizeof *out);
    const char *eq = spec ? strrchr(spec, '=') : NULL;
    if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof out->name) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "input shape '%s' is not NAME=D0xD1x... (e.g. x=1x3x224x224)",
                                spec ? spec : "");
    }
    memcpy(out->name, spec, (size_t)(eq - spec));
    const char *p = eq + 1;
    while (*p) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 1 || v > INT32_MAX || out->ndim >= TETHER_IR_MAX_NDIM ||
            (*end && *end != 'x' && *end != ',') || ((*end == 'x' || *end == ',') && !end[1])) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "input shape '%s': extents must be integers >= 1 separated "
                                    "by 'x', at most %d of them",
                                    spec, TETHER_IR_MAX_NDIM);
        }
        out->shape[out->ndim++] = v;
        p = *end ? end + 1 : end;
    }
    return TETHER_OK;
}

/* Every --input-shape must name a graph input and equal its (final) shape. */
static int check_input_shapes(const char *path, const tether_model_load_options *o,
                              const tether_ir_graph *g) {
    for (int i = 0; o && i < o->ninput_shapes; i++) {
        const tether_model_input_shape *s = &o->input_shapes[i];
        int t = tether_ir_find_tensor(g, s->name);
        int is_input = 0;
        for (int k = 0; t >= 0 && k < g->ninputs; k++) {
            is_input |= g->inputs[k] == t;
        }
        if (!is_input) {
            char names[256] = "";
            for (int k = 0; k < g->ninputs && strlen(names) < 200; k++) {
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s'%s'",
                         k ? ", " : "", g->tensors[g->inputs[k]].name);
            }
            return tether_set_error(TETHER_ERR_NOT_FOUND,
                                    "%s: --input-shape names '%s', which is not a graph input "
                                    "(inputs: %s)",
                                    path, s->name, names);
        }
        const tether_ir_tensor *x = &g->tensors[t];
        if (x->ndim != s->ndim ||
            memcmp(x->shape, s->shape, sizeof(int64_t) * (size_t)s->ndim) != 0) {
            char a[128], b[128];
            tether__shape_text(a, sizeof a, x->shape, x->ndim);
            tether__shape_text(b, sizeof b, s->shape, s->ndim);
            return tether_set_error(TETHER_ERR_MISMATCH,
                                    "%s: input '%s' has shape %s; --input-shape gives %s", path,
                                    s->name, a, b);
        }
    }
    return TETHER_OK;
}

static int load_json(const char *path, tether_ir_graph *g);

int tether_model_load_with(const char *path, const tether_model_load_options *o,
                           tether_ir_graph *g) {
    tether_model_load_options none;
    memset(&none, 0, sizeof none);
    if (!o) {
        o = &none;
    }
    if (o->input_bound && o->ninput_values > 0) {
        memset(o->input_bound, 0, (size_t)o->ninput_values);
    }
    memset(g, 0, sizeof *g);
    for (int i = 0; i < o->ninput_shapes; i++) {
        for (int j = 0; j < i; j++) {
            if (strcmp(o->input_shapes[i].name, o->input_shapes[j].name) == 0) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "--input-shape gives input '%s' twice",
                                        o->input_shapes[i].name);
            }
        }
    }
    size_t n = strlen(path);
    int rc = TETHER_ERR_UNSUPPORTED;
    int found = 0;
    if (n >= 5 && strcmp(path + n - 5, ".json") == 0) {
        found = 1;
        rc = load_json(path, g);
    } else {
        for (size_t i = 0; i < sizeof loaders / sizeof *loaders && !found; i++) {
            size_t el = strlen(loaders[i].ext);
            if ((loaders[i].fn || loaders[i].fn_with) && n > el &&
                strcmp(path + n - el, loaders[i].ext) == 0) {
                found = 1;
                rc = loaders[i].fn_with ? loaders[i].fn_with(path, o, g) : loaders[i].fn(path, g);
            }
        }
    }
    if (!found) {
        return tether_set_error(
            TETHER_ERR_UNSUPPORTED, "%s: unknown model format (expected a .json tether model%s)",
            path, loaders[0].fn || loaders[0].fn_with ? " or a registered format" : "");
    }
    if (!rc && (rc = check_input_shapes(path, o, g)) != 0) {
        tether_ir_close(g);
    }
    return rc;
}

int tether_model_load(const char *path, tether_ir_graph *g) {
    return tether_model_load_with(path, NULL, g);
}

static int load_json(const char *path, tether_ir_graph *g) {
    char *text;
    int rc = tether__read_file(path, &text, NULL);
    if (rc) {
        return rc;
    }
    char dir[1024];
    const char *slash = strrchr(path, '/');
    if (slash) {
        size_t dl = (size_t)(slash - path);
        if (dl >= sizeof dir) {
            free(text);
            return tether_set_error(TETHER_ERR_LIMIT, "%s: path too long", path);
        }
        memcpy(dir, path, dl);
        dir[dl] = 0;
        if (dl == 0) {
            strcpy(dir, "/");
        }
    } else {
        strcpy(dir, ".");
    }
    rc = tether_model_parse_json(text, path, dir, g);
    free(text);
    return rc;
}

static void add_ints(cJSON *o, const char *k, const int64_t *v, int n) {
    cJSON *arr = cJSON_AddArrayToObject(o, k);
    for (int i = 0; i < n; i++) {
        cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)v[i]));
    }
}

int tether_model_save_json(const tether_ir_graph *g, const char *json_path,
                           const char *weights_path) {
    cJSON *root = cJSON_CreateObject();
    tether__sbuf blob;
    tether__sbuf_init(&blob);
    const char *base = strrchr(weights_path, '/');
    base = base ? base + 1 : weights_path;
    cJSON_AddStringToObject(root, "format", "tether-model");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "name", g->name);
    cJSON_AddStringToObject(root, "weights", base);
    cJSON *ts = cJSON_AddArrayToObject(root, "tensors");
    for (int i = 0; i < g->ntensors; i++) {
        const tether_ir_tensor *t = &g->tensors[i];
        if (t->kind == TETHER_TENSOR_INTERMEDIATE && !tether__ir_is_graph_output(g, i)) {
            continue;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddStringToObject(o, "dtype", "float32");
        add_ints(o, "shape", t->shape, t->ndim);
        if (t->kind == TETHER_TENSOR_CONSTANT) {
            while (blob.len % 16) {
                tether__sbuf_puts(&blob, "\x01");
                blob.data[blob.len - 1] = 0;
            }
            cJSON_AddNumberToObject(o, "offset", (double)blob.len);
            cJSON_AddNumberToObject(o, "length", (double)t->nbytes);
            for (size_t k = 0; k < t->nbytes; k++) {
                tether__sbuf_puts(&blob, "\x01");
                blob.data[blob.len - 1] = (char)((unsigned char *)t->data)[k];
            }
        }
        cJSON_AddItemToArray(ts, o);
    }
    cJSON *ins = cJSON_AddArrayToObject(root, "inputs");
    for (int i = 0; i < g->ninputs; i++) {
        cJSON_AddItemToArray(ins, cJSON_CreateString(g->tensors[g->inputs[i]].name));
    }
    cJSON *outs = cJSON_AddArrayToObject(root, "outputs");
    for (int i = 0; i < g->noutputs; i++) {
        cJSON_AddItemToArray(outs, cJSON_CreateString(g->tensors[g->outputs[i]].name));
    }
    cJSON *ns = cJSON_AddArrayToObject(root, "nodes");
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *n = &g->nodes[i];
        const tether_ir_attrs *a = &n->attrs;
        tether_ir_attrs d;
        tether_ir_attrs_init(n->op, &d);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", n->name);
        cJSON_AddStringToObject(o, "op", tether_op_name(n->op));
        cJSON *in = cJSON_AddArrayToObject(o, "inputs");
        for (int j = 0; j < n->ninputs; j++) {
            cJSON_AddItemToArray(in, n->inputs[j] >= 0
                                         ? cJSON_CreateString(g->tensors[n->inputs[j]].name)
                                         : cJSON_CreateNull());
        }
        cJSON *out = cJSON_AddArrayToObject(o, "outputs");
        cJSON_AddItemToArray(out, cJSON_CreateString(g->tensors[n->outputs[0]].name));
        cJSON *at = cJSON_AddObjectToObject(o, "attrs");
        if (n->op == TETHER_OP_MAX_POOL || n->op == TETHER_OP_AVG_POOL) {
            add_ints(at, "kernel", a->kernel, 2);
        }
        if ((n->op == TETHER_OP_CONV_ND || n->op == TETHER_OP_CONV_TRANSPOSE) && a->nwin > 0) {
            int64_t wp[6];
            for (int d = 0; d < a->nwin; d++) {
                wp[d] = a->wpads[d];
                wp[a->nwin + d] = a->wpads[3 + d];
            }
            add_ints(at, "strides", a->wstrides, a->nwin);
            add_ints(at, "dilations", a->wdilations, a->nwin);
            add_ints(at, "pads", wp, 2 * a->nwin);
        }
        if (memcmp(a->strides, d.strides, sizeof d.strides)) {
            add_ints(at, "strides", a->strides, 2);
        }
        if (memcmp(a->dilations, d.dilations, sizeof d.dilations)) {
            add_ints(at, "dilations", a->dilations, 2);
        }
        if (n->op == TETHER_OP_PAD) {
            add_ints(at, "pads", a->ints, a->nints);
        } else if (memcmp(a->pads, d.pads, sizeof d.pads)) {
            add_ints(at, "pads", a->pads, 4);
        }
        if (a->groups != 1) {
            cJSON_AddNumberToObject(at, "groups", (double)a->groups);
        }
        if (a->axis != d.axis) {
            cJSON_AddNumberToObject(at, "axis", (double)a->axis);
        }
        if (a->nints == 1 && (n->op == TETHER_OP_NLL_LOSS || n->op == TETHER_OP_NLL_LOSS_SUM ||
                              n->op == TETHER_OP_NLL_LOSS_MEAN)) {
            cJSON_AddNumberToObject(at, "ignore_index", (double)a->ints[0]);
        } else if (a->nints && n->op != TETHER_OP_PAD) {
            add_ints(at,
                     n->op == TETHER_OP_RESHAPE || n->op == TETHER_OP_TILE ? "shape"
                     : n->op == TETHER_OP_TRANSPOSE                        ? "perm"
                     : n->op == TETHER_OP_SLICE                            ? "bounds"
                     : n->op == TETHER_OP_EINSUM                           ? "labels"
                     : n->op == TETHER_OP_RNN || n->op == TETHER_OP_GRU || n->op == TETHER_OP_LSTM
                         ? "activations"
                     : tether__ir_is_dynamic_op(n->op) ? "ints"
                                                       : "axes",
                     a->ints, a->nints);
        }
        if (n->op == TETHER_OP_RESIZE_NEAREST) {
            add_ints(at, "scales", a->scales, 2);
        }
        if (a->k != d.k) {
            cJSON_AddNumberToObject(at, "k", (double)a->k);
        }
        if (a->mode != d.mode) {
            cJSON_AddNumberToObject(at, "mode", (double)a->mode);
        }
        if (n->op == TETHER_OP_SLICE) {
            add_ints(at, "steps", a->steps, g->tensors[n->inputs[0]].ndim);
        }
#define FLT(field, key)                                                                            \
    if (a->field != d.field) {                                                                     \
        cJSON_AddNumberToObject(at, key, (double)a->field);                                        \
    }
#define BOOL(field, key)                                                                           \
    if (a->field != d.field) {                                                                     \
        cJSON_AddBoolToObject(at, key, a->field);                                                  \
    }
        FLT(alpha, "alpha")
        FLT(beta, "beta")
        FLT(min, "min")
        FLT(max, "max")
        FLT(epsilon, "epsilon")
        FLT(value, "value")
        FLT(act_alpha, "act_alpha")
        FLT(act_min, "act_min")
        FLT(act_max, "act_max")
        BOOL(ceil_mode, "ceil_mode")
        BOOL(count_include_pad, "count_include_pad")
        BOOL(trans_a, "trans_a")
        BOOL(trans_b, "trans_b")
        BOOL(keepdims, "keepdims")
        BOOL(allowzero, "allowzero")
        BOOL(has_residual, "residual")
#undef FLT
#undef BOOL
        if (a->act != TETHER_ACT_NONE) {
            cJSON_AddStringToObject(at, "activation", tether_act_name(a->act));
        }
        if (n->op == TETHER_OP_CAST) {
            char dn[TETHER_DTYPE_NAME_MAX] = "?";
            tether_dtype_name(a->to, dn, sizeof dn);
            cJSON_AddStringToObject(at, "to", dn);
        }
        cJSON_AddItemToArray(ns, o);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    int rc;
    if (!text || blob.failed) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory writing the model");
    } else {
        rc = tether__write_file(json_path, text, strlen(text));
        if (!rc) {
            rc = tether__write_file(weights_path, blob.data ? blob.data : "", blob.len);
        }
    }
    free(text);
    tether__sbuf_free(&blob);
    return rc;
}
