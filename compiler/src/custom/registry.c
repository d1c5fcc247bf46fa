/*
 * The custom-operator registry file (`--custom-ops ops.json`, docs/custom-ops.md): parsed with
 * cJSON and checked whole at load time: every key known, every name a C identifier, resource
 * kinds, layouts and element types from their fixed sets, shape and work-size expressions
 * parsed, implementation sources read (relative to the registry's directory) and kept in memory.
 *
 * What must stay true: a load either returns a complete registry or nothing (every allocation
 * released on every error path); messages name the file, the operator and the field.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../internal.h"
#include "custom_internal.h"
#include "tether/crt/error.h"
#include "tether/custom_ops.h"
#include "tether/file.h"

#define REG_MAX_BYTES    ((size_t)1 << 20)
#define SOURCE_MAX_BYTES ((size_t)4 << 20)
#define REG_MAX_OPS      256

typedef struct ld {
    const char *path;
    char dir[1024];
    char where[256]; /* "op 'dom::name'" */
} ld;

static int bad(const ld *l, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static int bad(const ld *l, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: %s%s%s", l->path, l->where,
                            l->where[0] ? ": " : "", msg);
}

static char *dup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) {
        memcpy(d, s, n);
    }
    return d;
}

static int is_ident(const char *s) {
    if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_') || strlen(s) > 63) {
        return 0;
    }
    for (const char *p = s; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '_') {
            return 0;
        }
    }
    return 1;
}

/* Every key of o is one of the comma-separated names in allowed. */
static int check_keys(const ld *l, const cJSON *o, const char *what, const char *allowed) {
    const cJSON *k;
    cJSON_ArrayForEach(k, o) {
        const char *p = allowed;
        size_t kl = strlen(k->string);
        int ok = 0;
        while (*p && !ok) {
            const char *e = strchr(p, ',');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            ok = n == kl && !strncmp(p, k->string, n);
            p = e ? e + 1 : p + n;
        }
        if (!ok) {
            return bad(l, "%s: unknown key '%s' (allowed: %s)", what, k->string, allowed);
        }
    }
    return TETHER_OK;
}

static const char *get_str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int load_impl(const ld *l, const cJSON *o, const char *backend, const char *entry_key,
                     tether_custom_impl *im) {
    char what[64];
    snprintf(what, sizeof what, "implementation '%s'", backend);
    if (!cJSON_IsObject(o)) {
        return bad(l, "%s must be an object {\"source\": FILE, \"%s\": NAME}", what, entry_key);
    }
    char allowed[32];
    snprintf(allowed, sizeof allowed, "source,%s", entry_key);
    int rc = check_keys(l, o, what, allowed);
    if (rc) {
        return rc;
    }
    const char *src = get_str(o, "source"), *entry = get_str(o, entry_key);
    if (!src || !src[0]) {
        return bad(l, "%s: \"source\" (a file name) is missing", what);
    }
    if (!is_ident(entry)) {
        return bad(l, "%s: \"%s\" must be a C identifier, got %s%s%s", what, entry_key,
                   entry ? "'" : "", entry ? entry : "nothing", entry ? "'" : "");
    }
    char full[2200];
    if (src[0] == '/' || !l->dir[0]) {
        snprintf(full, sizeof full, "%s", src);
    } else {
        snprintf(full, sizeof full, "%s/%s", l->dir, src);
    }
    char *text = NULL;
    size_t len = 0;
    if (tether_file_read_text(full, SOURCE_MAX_BYTES, &text, &len)) {
        char why[TETHER_ERROR_MSG_MAX];
        snprintf(why, sizeof why, "%s", tether_last_error());
        return bad(l, "%s: cannot read source '%s': %s", what, src, why);
    }
    if (strlen(text) != len) {
        free(text);
        return bad(l, "%s: source '%s' contains a NUL byte", what, src);
    }
    const char *base = strrchr(src, '/');
    base = base ? base + 1 : src;
    for (const char *p = base; *p; p++) {
        if (*p == '"' || *p == '\\' || !isprint((unsigned char)*p)) {
            free(text);
            return bad(l, "%s: source file name '%s' has a quote, backslash or unprintable byte",
                       what, src);
        }
    }
    im->present = 1;
    im->text = text;
    im->source = dup(src);
    im->file = dup(base);
    im->entry = dup(entry);
    if (!im->source || !im->file || !im->entry) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return TETHER_OK;
}

static int parse_expr(const ld *l, const char *what, const char *text) {
    tether__cx_env env = {.syntax_only = 1};
    int64_t v;
    char err[200];
    if (tether__custom_expr_eval(text, &env, &v, err, sizeof err)) {
        return bad(l, "%s '%s': %s", what, text, err);
    }
    return TETHER_OK;
}

/* An expression list: strings (expressions) and integers. */
static int load_exprs(const ld *l, const char *what, const cJSON *arr, int max, char **out,
                      int *n) {
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1 || cJSON_GetArraySize(arr) > max) {
        return bad(l, "%s must be a list of 1 to %d expressions", what, max);
    }
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) {
        char buf[64];
        const char *text;
        if (cJSON_IsString(x)) {
            text = x->valuestring;
        } else if (cJSON_IsNumber(x) && x->valuedouble == (double)(int64_t)x->valuedouble &&
                   x->valuedouble >= 0 && x->valuedouble < 9e15) {
            snprintf(buf, sizeof buf, "%lld", (long long)x->valuedouble);
            text = buf;
        } else {
            return bad(l, "%s: entry %d is neither an expression string nor an integer >= 0", what,
                       *n);
        }
        int rc = parse_expr(l, what, text);
        if (rc) {
            return rc;
        }
        if (!(out[*n] = dup(text))) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
        }
        (*n)++;
    }
    return TETHER_OK;
}

static int load_resource(const ld *l, const cJSON *o, int is_out, int idx,
                         tether_custom_resource *r) {
    char what[64];
    snprintf(what, sizeof what, "%s %d", is_out ? "output" : "input", idx);
    if (!cJSON_IsObject(o)) {
        return bad(l, "%s must be an object", what);
    }
    int rc =
        check_keys(l, o, what, is_out ? "name,kind,layout,dtype,shape" : "name,kind,layout,dtype");
    if (rc) {
        return rc;
    }
    const char *name = get_str(o, "name"), *kind = get_str(o, "kind"),
               *layout = get_str(o, "layout"), *dtype = get_str(o, "dtype");
    snprintf(r->name, sizeof r->name, "%s", name && is_ident(name) ? name : "");
    if (name && !is_ident(name)) {
        return bad(l, "%s: name '%s' is not an identifier", what, name);
    }
    if (!kind || (strcmp(kind, "buffer") && strcmp(kind, "image"))) {
        return bad(l, "%s: \"kind\" must be \"buffer\" or \"image\"%s%s%s", what,
                   kind ? ", got '" : "", kind ? kind : "", kind ? "'" : "");
    }
    r->kind = strcmp(kind, "image") ? TETHER_CUSTOM_BUFFER : TETHER_CUSTOM_IMAGE;
    if (!layout || (strcmp(layout, "NCHW") && strcmp(layout, "NHWC"))) {
        return bad(l, "%s: \"layout\" must be \"NCHW\" or \"NHWC\"%s%s%s", what,
                   layout ? ", got '" : "", layout ? layout : "", layout ? "'" : "");
    }
    r->layout = strcmp(layout, "NHWC") ? TETHER_CUSTOM_NCHW : TETHER_CUSTOM_NHWC;
    if (r->kind == TETHER_CUSTOM_IMAGE && r->layout != TETHER_CUSTOM_NHWC) {
        return bad(l,
                   "%s: an image resource is channels-last (its texels pack C), so its layout "
                   "must be NHWC",
                   what);
    }
    static const struct {
        const char *name;
        uint8_t code, bits;
    } types[] = {{"float32", kDLFloat, 32}, {"float16", kDLFloat, 16}, {"int8", kDLInt, 8},
                 {"uint8", kDLUInt, 8},     {"int32", kDLInt, 32},     {"int64", kDLInt, 64}};
    int found = 0;
    for (size_t i = 0; dtype && i < sizeof types / sizeof *types; i++) {
        if (!strcmp(dtype, types[i].name)) {
            r->dtype.code = types[i].code;
            r->dtype.bits = types[i].bits;
            r->dtype.lanes = 1;
            found = 1;
        }
    }
    if (!found) {
        return bad(l,
                   "%s: \"dtype\" must be one of float32, float16, int8, uint8, int32, int64%s%s%s",
                   what, dtype ? ", got '" : "", dtype ? dtype : "", dtype ? "'" : "");
    }
    if (!is_out) {
        return TETHER_OK;
    }
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(o, "shape");
    char swhat[80];
    snprintf(swhat, sizeof swhat, "%s: shape rule", what);
    if (cJSON_IsString(shape)) {
        /* "in<i>": the shape of input i, dimension by dimension */
        const char *s = shape->valuestring;
        if (strncmp(s, "in", 2) || !s[2] || strspn(s + 2, "0123456789") != strlen(s + 2) ||
            strlen(s) > 4) {
            return bad(l,
                       "%s '%s': a string shape rule names an input (\"in0\"); give a list "
                       "of expressions otherwise",
                       swhat, s);
        }
        r->nshape = -1 - atoi(s + 2); /* resolved against the input count by the caller */
        return TETHER_OK;
    }
    if (!shape) {
        return bad(l, "%s is missing (\"in0\", or a list such as [\"in0[0]\", \"in0[1]\", 4])",
                   swhat);
    }
    return load_exprs(l, swhat, shape, TETHER_CUSTOM_MAX_EXPRS, r->shape, &r->nshape);
}

static int load_op(ld *l, const cJSON *o, tether_custom_op *op, int index) {
    if (!cJSON_IsObject(o)) {
        return bad(l, "ops[%d] must be an object", index);
    }
    const char *domain = get_str(o, "domain"), *name = get_str(o, "name");
    snprintf(l->where, sizeof l->where, "op '%s::%s'", domain ? domain : "?", name ? name : "?");
    int rc = check_keys(l, o, "operator", "domain,name,implementations,inputs,outputs,work_size");
    if (rc) {
        return rc;
    }
    if (!domain || !domain[0] || !strcmp(domain, "ai.onnx") || strlen(domain) > 127) {
        return bad(l, "\"domain\" must name a custom domain (not \"\" or \"ai.onnx\")");
    }
    if (!name || !name[0] || strlen(name) > 127) {
        return bad(l, "\"name\" (the node's op_type) is missing");
    }
    if (!(op->domain = dup(domain)) || !(op->name = dup(name))) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    const cJSON *impls = cJSON_GetObjectItemCaseSensitive(o, "implementations");
    if (!cJSON_IsObject(impls) || !impls->child) {
        return bad(l, "\"implementations\" must name at least one of opencl, c, mcu");
    }
    if ((rc = check_keys(l, impls, "implementations", "opencl,c,mcu"))) {
        return rc;
    }
    const cJSON *x;
    if ((x = cJSON_GetObjectItemCaseSensitive(impls, "opencl")) &&
        (rc = load_impl(l, x, "opencl", "kernel", &op->opencl))) {
        return rc;
    }
    if ((x = cJSON_GetObjectItemCaseSensitive(impls, "c")) &&
        (rc = load_impl(l, x, "c", "function", &op->c))) {
        return rc;
    }
    if ((x = cJSON_GetObjectItemCaseSensitive(impls, "mcu")) &&
        (rc = load_impl(l, x, "mcu", "function", &op->mcu))) {
        return rc;
    }
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(o, "inputs");
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(o, "outputs");
    if (!cJSON_IsArray(ins) || cJSON_GetArraySize(ins) < 1 ||
        cJSON_GetArraySize(ins) > TETHER_IR_MAX_INPUTS) {
        return bad(l, "\"inputs\" must be a list of 1 to %d resources", TETHER_IR_MAX_INPUTS);
    }
    if (!cJSON_IsArray(outs) || cJSON_GetArraySize(outs) != TETHER_CUSTOM_MAX_OUTPUTS) {
        return bad(l,
                   "\"outputs\" must be a list of exactly %d resource (one output per custom "
                   "operator)",
                   TETHER_CUSTOM_MAX_OUTPUTS);
    }
    cJSON_ArrayForEach(x, ins) {
        if ((rc = load_resource(l, x, 0, op->ninputs, &op->inputs[op->ninputs]))) {
            return rc;
        }
        op->ninputs++;
    }
    cJSON_ArrayForEach(x, outs) {
        tether_custom_resource *r = &op->outputs[op->noutputs];
        if ((rc = load_resource(l, x, 1, op->noutputs, r))) {
            return rc;
        }
        if (r->nshape < 0) {
            int src = -1 - r->nshape;
            r->nshape = 0;
            if (src >= op->ninputs) {
                return bad(l,
                           "output %d: shape rule 'in%d' names an input the operator does not "
                           "have (%d inputs)",
                           op->noutputs, src, op->ninputs);
            }
            /* in<i>: one expression per dimension is only known with the rank; keep "=in<i>" */
            char t[16];
            snprintf(t, sizeof t, "=in%d", src);
            if (!(r->shape[0] = dup(t))) {
                return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
            }
            r->nshape = 1;
        }
        op->noutputs++;
    }
    const cJSON *work = cJSON_GetObjectItemCaseSensitive(o, "work_size");
    if (work) {
        if ((rc = load_exprs(l, "work_size", work, 3, op->work, &op->nwork))) {
            return rc;
        }
    } else if (op->opencl.present) {
        return bad(l, "\"work_size\" (the OpenCL global size, 1 to 3 expressions such as "
                      "[\"out0[2]\", \"out0[1]\"]) is missing");
    }
    return TETHER_OK;
}

static void free_impl(tether_custom_impl *im) {
    free(im->source);
    free(im->file);
    free(im->text);
    free(im->entry);
}

void tether_custom_registry_free(tether_custom_registry *r) {
    if (!r) {
        return;
    }
    for (int i = 0; i < r->nops; i++) {
        tether_custom_op *op = &r->ops[i];
        free(op->domain);
        free(op->name);
        free_impl(&op->opencl);
        free_impl(&op->c);
        free_impl(&op->mcu);
        for (int k = 0; k < TETHER_CUSTOM_MAX_OUTPUTS; k++) {
            for (int j = 0; j < TETHER_CUSTOM_MAX_EXPRS; j++) {
                free(op->outputs[k].shape[j]);
            }
        }
        for (int j = 0; j < 3; j++) {
            free(op->work[j]);
        }
    }
    free(r->ops);
    free(r->path);
    free(r);
}

int tether_custom_registry_load(const char *path, tether_custom_registry **out) {
    *out = NULL;
    ld l;
    memset(&l, 0, sizeof l);
    l.path = path;
    const char *slash = strrchr(path, '/');
    if (slash) {
        snprintf(l.dir, sizeof l.dir, "%.*s", (int)(slash - path), path);
        if (!l.dir[0]) {
            snprintf(l.dir, sizeof l.dir, "/");
        }
    }
    char *text = NULL;
    size_t len = 0;
    if (tether_file_read_text(path, REG_MAX_BYTES, &text, &len)) {
        char why[TETHER_ERROR_MSG_MAX];
        snprintf(why, sizeof why, "%s", tether_last_error());
        return tether_set_error(TETHER_ERR_INVALID_ARG, "custom-operator registry %s: %s", path,
                                why);
    }
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!root) {
        return bad(&l, "not valid JSON");
    }
    int rc = TETHER_OK;
    tether_custom_registry *r = calloc(1, sizeof *r);
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(root, "ops");
    if (!r || !(r->path = dup(path))) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    } else if (!cJSON_IsObject(root) || (rc = check_keys(&l, root, "the registry", "ops"))) {
        rc = rc ? rc : bad(&l, "the registry must be an object {\"ops\": [...]}");
    } else if (!cJSON_IsArray(ops) || cJSON_GetArraySize(ops) < 1 ||
               cJSON_GetArraySize(ops) > REG_MAX_OPS) {
        rc = bad(&l, "\"ops\" must be a list of 1 to %d operators", REG_MAX_OPS);
    } else if (!(r->ops = calloc((size_t)cJSON_GetArraySize(ops), sizeof *r->ops))) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    } else {
        const cJSON *o;
        cJSON_ArrayForEach(o, ops) {
            rc = load_op(&l, o, &r->ops[r->nops], r->nops);
            r->nops++; /* freed whole on failure */
            if (rc) {
                break;
            }
            const tether_custom_op *a = &r->ops[r->nops - 1];
            for (int i = 0; i < r->nops - 1; i++) {
                if (!strcmp(r->ops[i].domain, a->domain) && !strcmp(r->ops[i].name, a->name)) {
                    rc = bad(&l, "registered twice");
                    break;
                }
            }
            if (rc) {
                break;
            }
        }
    }
    cJSON_Delete(root);
    if (rc) {
        tether_custom_registry_free(r);
        return rc;
    }
    *out = r;
    return TETHER_OK;
}

const tether_custom_op *tether_custom_registry_find(const tether_custom_registry *r,
                                                    const char *domain, const char *name) {
    for (int i = 0; r && i < r->nops; i++) {
        if (!strcmp(r->ops[i].domain, domain) && !strcmp(r->ops[i].name, name)) {
            return &r->ops[i];
        }
    }
    return NULL;
}

void tether_custom_registry_list(const tether_custom_registry *r, char *buf, size_t n) {
    size_t o = 0;
    if (n) {
        buf[0] = '\0';
    }
    for (int i = 0; r && i < r->nops && o < n; i++) {
        o += (size_t)snprintf(buf + o, n - o, "%s%s::%s", i ? ", " : "", r->ops[i].domain,
                              r->ops[i].name);
    }
}

const tether_custom_op *tether_custom_op_of(const tether_ir_graph *g, const tether_ir_node *n) {
    if (!g->custom || n->op != TETHER_OP_CUSTOM || n->attrs.nints < 1 || n->attrs.ints[0] < 0 ||
        n->attrs.ints[0] >= g->custom->nops) {
        return NULL;
    }
    return &g->custom->ops[n->attrs.ints[0]];
}

static const tether_custom_registry *default_registry;

void tether_custom_ops_set_default(const tether_custom_registry *r) {
    default_registry = r;
}

const tether_custom_registry *tether_custom_ops_default(void) {
    return default_registry;
}
