/*
 * JSON in and out: the buffer-list input format and the plan output (formats in
 * docs/planner.md), both through cJSON.
 * What must stay true: input parsing is strict (unknown keys, wrong types, fractional or
 * out-of-range numbers are errors naming the buffer/pool and the key) and all-or-nothing (on
 * failure the problem is left empty); the plan JSON lists every buffer of the problem.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "internal.h"
#include "tether/file.h"
#include "tether/crt/dtype.h"

/* ---- input ---- */

static int get_int(const cJSON *obj, const char *key, const char *what, int64_t lo, int64_t hi,
                   int64_t *out, bool *present) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (present != NULL) {
        *present = v != NULL;
    }
    if (v == NULL) {
        return TETHER_OK;
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!cJSON_IsNumber(v) || d != floor(d) || d < (double)lo || d > (double)hi) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%.60s: \"%s\" must be an integer in %lld..%lld", what, key,
                                (long long)lo, (long long)hi);
    }
    *out = (int64_t)d;
    return TETHER_OK;
}

static int get_str(const cJSON *obj, const char *key, const char *what, const char **out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (v == NULL) {
        return TETHER_OK;
    }
    if (!cJSON_IsString(v)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%.60s: \"%s\" must be a string", what,
                                key);
    }
    *out = v->valuestring;
    return TETHER_OK;
}

static int get_bool(const cJSON *obj, const char *key, const char *what, bool *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (v == NULL) {
        return TETHER_OK;
    }
    if (!cJSON_IsBool(v)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%.60s: \"%s\" must be true or false", what,
                                key);
    }
    *out = cJSON_IsTrue(v);
    return TETHER_OK;
}

static int check_keys(const cJSON *obj, const char *what, const char *const *allowed) {
    for (const cJSON *c = obj->child; c != NULL; c = c->next) {
        bool ok = false;
        for (int k = 0; allowed[k] != NULL && !ok; k++) {
            ok = c->string != NULL && strcmp(c->string, allowed[k]) == 0;
        }
        if (!ok) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "%.60s: unknown key \"%.40s\"", what,
                                    c->string ? c->string : "?");
        }
    }
    return TETHER_OK;
}

static int parse_scope(const char *s, const char *what, tether_scope *out) {
    if (tether_scope_parse(s, out) != TETHER_OK) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%.60s: unknown scope '%.40s' (global, texture, texture:weight)",
                                what, s);
    }
    return TETHER_OK;
}

static int parse_pool(tether_plan_problem *p, const cJSON *o, int index) {
    char what[96];
    snprintf(what, sizeof(what), "pool #%d", index);
    if (!cJSON_IsObject(o)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: must be an object", what);
    }
    static const char *const keys[] = {"name",      "scope",      "capacity", "alignment",
                                       "max_width", "max_height", NULL};
    tether_plan_pool pool;
    memset(&pool, 0, sizeof(pool));
    const char *scope = "global";
    int rc = get_str(o, "name", what, &pool.name);
    if (rc == TETHER_OK && pool.name == NULL) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: \"name\" is required", what);
    }
    if (rc == TETHER_OK) {
        snprintf(what, sizeof(what), "pool '%.40s'", pool.name);
        rc = check_keys(o, what, keys);
    }
    int64_t lim = INT64_C(1) << 48;
    if (rc == TETHER_OK) {
        rc = get_str(o, "scope", what, &scope);
    }
    if (rc == TETHER_OK) {
        rc = parse_scope(scope, what, &pool.scope);
    }
    if (rc == TETHER_OK) {
        rc = get_int(o, "capacity", what, 0, lim, &pool.capacity, NULL);
    }
    if (rc == TETHER_OK) {
        rc = get_int(o, "alignment", what, 0, INT64_C(1) << 20, &pool.alignment, NULL);
    }
    if (rc == TETHER_OK) {
        rc = get_int(o, "max_width", what, 0, INT64_C(1) << 30, &pool.max_width, NULL);
    }
    if (rc == TETHER_OK) {
        rc = get_int(o, "max_height", what, 0, INT64_C(1) << 30, &pool.max_height, NULL);
    }
    if (rc == TETHER_OK && pool.scope == TETHER_SCOPE_GLOBAL &&
        (pool.max_width != 0 || pool.max_height != 0)) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG,
                              "%s: max_width/max_height apply to texture pools only", what);
    }
    if (rc == TETHER_OK) {
        rc = tether_plan_problem_add_pool(p, &pool);
    }
    return rc;
}

static int parse_kind(const char *s, const char *what, tether_plan_kind *out) {
    if (strcmp(s, "intermediate") == 0) {
        *out = TETHER_PLAN_INTERMEDIATE;
    } else if (strcmp(s, "input") == 0) {
        *out = TETHER_PLAN_GRAPH_INPUT;
    } else if (strcmp(s, "output") == 0) {
        *out = TETHER_PLAN_GRAPH_OUTPUT;
    } else {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%.60s: kind '%.40s' (intermediate, input, output)", what, s);
    }
    return TETHER_OK;
}

static int parse_buffer(tether_plan_problem *p, const cJSON *o, int index) {
    char what[96];
    snprintf(what, sizeof(what), "buffer #%d", index);
    if (!cJSON_IsObject(o)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: must be an object", what);
    }
    static const char *const keys[] = {"name",  "size",   "alignment", "first", "last",
                                       "scope", "kind",   "pools",     "pin",   "alias",
                                       "width", "height", "dtype",     NULL};
    tether_plan_buffer b;
    memset(&b, 0, sizeof(b));
    b.pin_offset = -1;
    const char *scope = "global", *kind = "intermediate", *dtype = "float32";
    const char *pools[64];
    int rc = get_str(o, "name", what, &b.name);
    if (rc == TETHER_OK && b.name == NULL) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: \"name\" is required", what);
    }
    if (rc == TETHER_OK) {
        snprintf(what, sizeof(what), "buffer '%.60s'", b.name);
        rc = check_keys(o, what, keys);
    }
    int64_t v = 0, lim = INT64_C(1) << 48;
    bool has_size = false, has_first = false, has_last = false;
    if (rc == TETHER_OK) {
        rc = get_int(o, "size", what, 0, lim, &b.size, &has_size);
    }
    if (rc == TETHER_OK) {
        rc = get_int(o, "alignment", what, 0, INT64_C(1) << 20, &b.alignment, NULL);
    }
    if (rc == TETHER_OK) {
        rc = get_int(o, "first", what, 0, INT32_MAX, &v, &has_first);
        b.first = (int32_t)v;
    }
    if (rc == TETHER_OK) {
        rc = get_int(o, "last", what, 0, INT32_MAX, &v, &has_last);
        b.last = (int32_t)v;
    }
    if (rc == TETHER_OK && (!has_first || !has_last)) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: \"first\" and \"last\" are required",
                              what);
    }
    if (rc == TETHER_OK) {
        rc = get_str(o, "scope", what, &scope);
    }
    if (rc == TETHER_OK) {
        rc = parse_scope(scope, what, &b.scope);
    }
    if (rc == TETHER_OK && !has_size && !tether_scope_is_texture(b.scope)) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: \"size\" is required", what);
    }
    if (rc == TETHER_OK) {
        rc = get_str(o, "kind", what, &kind);
    }
    if (rc == TETHER_OK) {
        rc = parse_kind(kind, what, &b.kind);
    }
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(o, "pools");
    if (rc == TETHER_OK && pl != NULL) {
        if (!cJSON_IsArray(pl) || cJSON_GetArraySize(pl) > 64) {
            rc = tether_set_error(TETHER_ERR_INVALID_ARG,
                                  "%s: \"pools\" must be an array of at most 64 pool names", what);
        }
        for (const cJSON *c = pl->child; rc == TETHER_OK && c != NULL; c = c->next) {
            if (!cJSON_IsString(c)) {
                rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: \"pools\" must hold pool names",
                                      what);
            } else {
                pools[b.npools++] = c->valuestring;
            }
        }
        b.pools = pools;
    }
    const cJSON *pin = cJSON_GetObjectItemCaseSensitive(o, "pin");
    if (rc == TETHER_OK && pin != NULL) {
        static const char *const pin_keys[] = {"pool", "offset", NULL};
        if (!cJSON_IsObject(pin)) {
            rc = tether_set_error(TETHER_ERR_INVALID_ARG,
                                  "%s: \"pin\" must be {\"pool\": name, \"offset\": n}", what);
        }
        if (rc == TETHER_OK) {
            rc = check_keys(pin, what, pin_keys);
        }
        if (rc == TETHER_OK) {
            rc = get_str(pin, "pool", what, &b.pin_pool);
        }
        if (rc == TETHER_OK && b.pin_pool == NULL) {
            rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: \"pin\" needs a \"pool\"", what);
        }
        if (rc == TETHER_OK) {
            rc = get_int(pin, "offset", what, -1, lim, &b.pin_offset, NULL);
        }
    }
    if (rc == TETHER_OK) {
        int64_t alias = 0;
        rc = get_int(o, "alias", what, 0, INT32_MAX, &alias, NULL);
        b.alias_group = (int32_t)alias;
    }
    bool has_w = false, has_h = false;
    if (rc == TETHER_OK) {
        rc = get_int(o, "width", what, 1, INT64_C(1) << 30, &b.width, &has_w);
    }
    if (rc == TETHER_OK) {
        rc = get_int(o, "height", what, 1, INT64_C(1) << 30, &b.height, &has_h);
    }
    if (rc == TETHER_OK) {
        rc = get_str(o, "dtype", what, &dtype);
    }
    if (rc == TETHER_OK && tether_dtype_parse(dtype, &b.dtype) != TETHER_OK) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: unknown dtype '%.30s'", what, dtype);
    }
    if (rc == TETHER_OK && tether_scope_is_texture(b.scope) && (!has_w || !has_h)) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG,
                              "%s: a texture buffer needs \"width\" and \"height\" (texels)", what);
    }
    if (rc == TETHER_OK && !tether_scope_is_texture(b.scope) && (has_w || has_h)) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG,
                              "%s: \"width\"/\"height\" apply to texture scopes only", what);
    }
    if (rc == TETHER_OK) {
        rc = tether_plan_problem_add_buffer(p, &b, NULL);
    }
    return rc;
}

static int parse_options(const cJSON *o, tether_plan_options *opts) {
    static const char *const keys[] = {
        "planner",       "plan_inputs",       "plan_outputs",      "seed",
        "search_budget", "exact_max_buffers", "texture_max_ratio", NULL};
    if (!cJSON_IsObject(o)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "\"options\" must be an object");
    }
    int rc = check_keys(o, "options", keys);
    tether_plan_options t = *opts;
    const char *planner = NULL;
    int64_t v = 0; /* read only when present; initialised for -O3's flow analysis */
    bool has;
    if (rc == TETHER_OK) {
        rc = get_str(o, "planner", "options", &planner);
    }
    if (rc == TETHER_OK && planner != NULL) {
        rc = tether_plan_algorithm_parse(planner, &t.algorithm);
    }
    if (rc == TETHER_OK) {
        rc = get_bool(o, "plan_inputs", "options", &t.plan_inputs);
    }
    if (rc == TETHER_OK) {
        rc = get_bool(o, "plan_outputs", "options", &t.plan_outputs);
    }
    if (rc == TETHER_OK) {
        rc = get_int(o, "seed", "options", 0, INT64_C(1) << 52, &v, &has);
        if (has) {
            t.seed = (uint64_t)v;
        }
    }
    if (rc == TETHER_OK) {
        rc = get_int(o, "search_budget", "options", 0, 100000000, &v, &has);
        if (has) {
            t.search_budget = (int)v;
        }
    }
    if (rc == TETHER_OK) {
        rc = get_int(o, "exact_max_buffers", "options", 0, 20, &v, &has);
        if (has) {
            t.exact_max_buffers = (int)v;
        }
    }
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "texture_max_ratio");
    if (rc == TETHER_OK && r != NULL) {
        if (!cJSON_IsNumber(r) || !(r->valuedouble >= 1.0) || r->valuedouble > 1e6) {
            rc = tether_set_error(TETHER_ERR_INVALID_ARG,
                                  "options: \"texture_max_ratio\" must be a number >= 1");
        } else {
            t.texture_max_ratio = r->valuedouble;
        }
    }
    if (rc == TETHER_OK) {
        *opts = t;
    }
    return rc;
}

int tether_plan_problem_from_json(tether_plan_problem *p, tether_plan_options *opts,
                                  const char *text) {
    if (p == NULL || text == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "problem or text is null");
    }
    cJSON *root = cJSON_Parse(text);
    if (root == NULL) {
        const char *at = cJSON_GetErrorPtr();
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "buffer list is not valid JSON (near byte %lld)",
                                at ? (long long)(at - text) : -1LL);
    }
    tether_plan_problem tmp;
    tether_plan_problem_init(&tmp);
    tether_plan_options o;
    if (opts != NULL) {
        o = *opts;
    } else {
        tether_plan_options_init(&o);
    }
    static const char *const keys[] = {"pools", "buffers", "options", "comment", NULL};
    int rc = TETHER_OK;
    if (!cJSON_IsObject(root)) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG,
                              "buffer list must be an object with \"pools\" and \"buffers\"");
    }
    if (rc == TETHER_OK) {
        rc = check_keys(root, "buffer list", keys);
    }
    const cJSON *pools = cJSON_GetObjectItemCaseSensitive(root, "pools");
    const cJSON *bufs = cJSON_GetObjectItemCaseSensitive(root, "buffers");
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(root, "options");
    if (rc == TETHER_OK && pools != NULL && !cJSON_IsArray(pools)) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "\"pools\" must be an array");
    }
    if (rc == TETHER_OK && !cJSON_IsArray(bufs)) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "\"buffers\" must be an array (required)");
    }
    int k = 0;
    for (const cJSON *c = pools ? pools->child : NULL; rc == TETHER_OK && c; c = c->next) {
        rc = parse_pool(&tmp, c, k++);
    }
    k = 0;
    for (const cJSON *c = bufs ? bufs->child : NULL; rc == TETHER_OK && c; c = c->next) {
        rc = parse_buffer(&tmp, c, k++);
    }
    if (rc == TETHER_OK && op != NULL) {
        rc = parse_options(op, &o);
    }
    /* move everything into p */
    int added_pools = 0, added_bufs = 0;
    for (int i = 0; rc == TETHER_OK && i < tmp.npools; i++) {
        rc = tether_plan_problem_add_pool(p, &tmp.pools[i]);
        added_pools += rc == TETHER_OK;
    }
    for (int i = 0; rc == TETHER_OK && i < tmp.nbuffers; i++) {
        rc = tether_plan_problem_add_buffer(p, &tmp.buffers[i], NULL);
        added_bufs += rc == TETHER_OK;
    }
    if (rc != TETHER_OK) {
        /* undo what was added to p */
        char msg[TETHER_ERROR_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", tether_last_error());
        tether__plan_problem_truncate(p, p->npools - added_pools, p->nbuffers - added_bufs);
        tether_set_error(rc, "%s", msg);
    } else if (opts != NULL) {
        *opts = o;
    }
    tether_plan_problem_close(&tmp);
    cJSON_Delete(root);
    return rc;
}

int tether_plan_problem_load(tether_plan_problem *p, tether_plan_options *opts, const char *path) {
    if (path == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "path is null");
    }
    char *buf;
    size_t len;
    int rc = tether_file_read_text(path, (size_t)1 << 30, &buf, &len);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (rc == TETHER_OK) {
        if (strlen(buf) != len) {
            rc = tether_set_error(TETHER_ERR_INVALID_ARG, "'%.120s' contains a NUL byte", path);
        }
    }
    if (rc == TETHER_OK) {
        rc = tether_plan_problem_from_json(p, opts, buf);
    }
    free(buf);
    return rc;
}

/* ---- output ---- */

static bool add_num(cJSON *o, const char *key, int64_t v) {
    return cJSON_AddNumberToObject(o, key, (double)v) != NULL;
}

/* "operators": the operators' names when the problem has them (a graph's nodes, in the order
 * the buffers' first/last count them). */
static bool add_operators(cJSON *root, const tether_plan_problem *p) {
    if (p->noperators == 0) {
        return true;
    }
    cJSON *ops = cJSON_AddArrayToObject(root, "operators");
    bool ok = ops != NULL;
    for (int i = 0; ok && i < p->noperators; i++) {
        cJSON *s = cJSON_CreateString(p->operators[i] ? p->operators[i] : "");
        ok = s != NULL && cJSON_AddItemToArray(ops, s);
    }
    return ok;
}

/* cJSON text as a malloc'd copy, so that callers free() it regardless of cJSON's hooks. */
static int json_out(cJSON *root, bool ok, char **out) {
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (text == NULL) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory writing the plan JSON");
    }
    size_t n = strlen(text) + 1;
    *out = malloc(n);
    if (*out != NULL) {
        memcpy(*out, text, n);
    }
    cJSON_free(text);
    if (*out == NULL) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory writing the plan JSON");
    }
    return TETHER_OK;
}

int tether_plan_problem_error_json(const tether_plan_problem *p, const char *why, char **out) {
    if (p == NULL || out == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "problem or output is null");
    }
    *out = NULL;
    cJSON *root = cJSON_CreateObject();
    bool ok = root != NULL && cJSON_AddFalseToObject(root, "fits") != NULL &&
              cJSON_AddStringToObject(root, "error", why ? why : "") != NULL &&
              add_operators(root, p);
    cJSON *pools = ok ? cJSON_AddArrayToObject(root, "pools") : NULL;
    ok = ok && pools != NULL;
    for (int k = 0; ok && k < p->npools; k++) {
        cJSON *o = cJSON_CreateObject();
        ok = o != NULL && cJSON_AddItemToArray(pools, o);
        ok = ok && cJSON_AddStringToObject(o, "name", p->pools[k].name) != NULL;
        ok =
            ok && cJSON_AddStringToObject(o, "scope", tether_scope_name(p->pools[k].scope)) != NULL;
        ok = ok && add_num(o, "capacity", p->pools[k].capacity);
    }
    cJSON *bufs = ok ? cJSON_AddArrayToObject(root, "buffers") : NULL;
    ok = ok && bufs != NULL;
    for (int b = 0; ok && b < p->nbuffers; b++) {
        const tether_plan_buffer *buf = &p->buffers[b];
        cJSON *o = cJSON_CreateObject();
        ok = o != NULL && cJSON_AddItemToArray(bufs, o);
        ok = ok && cJSON_AddStringToObject(o, "name", buf->name) != NULL;
        ok = ok && cJSON_AddStringToObject(o, "scope", tether_scope_name(buf->scope)) != NULL;
        ok = ok && add_num(o, "size", buf->size) && add_num(o, "first", buf->first) &&
             add_num(o, "last", buf->last);
    }
    return json_out(root, ok, out);
}

int tether_plan_to_json(const tether_plan_problem *p, const tether_plan *plan, char **out) {
    if (p == NULL || plan == NULL || out == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "problem, plan or output is null");
    }
    *out = NULL;
    if (plan->nbuffers != p->nbuffers || plan->npools != p->npools) {
        return tether_set_error(TETHER_ERR_MISMATCH, "the plan was made for another problem");
    }
    cJSON *root = cJSON_CreateObject();
    bool ok = root != NULL;
    ok = ok && cJSON_AddStringToObject(root, "algorithm",
                                       tether_plan_algorithm_name(plan->algorithm)) != NULL;
    ok = ok && add_num(root, "total_bytes", plan->total_bytes);
    ok = ok && add_num(root, "fallbacks", plan->nfallbacks);
    ok = ok && add_operators(root, p);
    cJSON *pools = ok ? cJSON_AddArrayToObject(root, "pools") : NULL;
    ok = ok && pools != NULL;
    for (int k = 0; ok && k < p->npools; k++) {
        const tether_plan_pool *pool = &p->pools[k];
        const tether_plan_pool_usage *u = &plan->pools[k];
        cJSON *o = cJSON_CreateObject();
        ok = o != NULL && cJSON_AddItemToArray(pools, o);
        ok = ok && cJSON_AddStringToObject(o, "name", pool->name) != NULL;
        ok = ok && cJSON_AddStringToObject(o, "scope", tether_scope_name(pool->scope)) != NULL;
        ok = ok && add_num(o, "capacity", pool->capacity);
        ok = ok && add_num(o, "alignment", pool->alignment);
        ok = ok && add_num(o, "size", u->size);
        ok = ok && add_num(o, "lower_bound", u->lower_bound);
        ok = ok && add_num(o, "buffers", u->nbuffers);
        if (ok && tether_scope_is_texture(pool->scope)) {
            ok = add_num(o, "max_width", pool->max_width) &&
                 add_num(o, "max_height", pool->max_height) && add_num(o, "images", u->nimages) &&
                 add_num(o, "texel_area", u->texel_area) &&
                 add_num(o, "texel_waste", u->texel_waste);
        }
    }
    cJSON *imgs = ok ? cJSON_AddArrayToObject(root, "images") : NULL;
    ok = ok && imgs != NULL;
    for (int m = 0; ok && m < plan->nimages; m++) {
        const tether_plan_image *img = &plan->images[m];
        char dt[TETHER_DTYPE_NAME_MAX] = "?";
        tether_dtype_name(img->dtype, dt, sizeof(dt));
        cJSON *o = cJSON_CreateObject();
        ok = o != NULL && cJSON_AddItemToArray(imgs, o);
        ok = ok && add_num(o, "id", m);
        ok = ok && cJSON_AddStringToObject(o, "pool", p->pools[img->pool].name) != NULL;
        ok = ok && cJSON_AddStringToObject(o, "scope", tether_scope_name(img->scope)) != NULL;
        ok = ok && cJSON_AddStringToObject(o, "dtype", dt) != NULL;
        ok = ok && add_num(o, "width", img->width) && add_num(o, "height", img->height);
    }
    cJSON *bufs = ok ? cJSON_AddArrayToObject(root, "buffers") : NULL;
    ok = ok && bufs != NULL;
    for (int b = 0; ok && b < p->nbuffers; b++) {
        const tether_plan_buffer *buf = &p->buffers[b];
        const tether_plan_assignment *as = &plan->assign[b];
        cJSON *o = cJSON_CreateObject();
        ok = o != NULL && cJSON_AddItemToArray(bufs, o);
        ok = ok && cJSON_AddStringToObject(o, "name", buf->name) != NULL;
        ok = ok && cJSON_AddStringToObject(o, "scope", tether_scope_name(buf->scope)) != NULL;
        ok = ok && add_num(o, "size", buf->size) && add_num(o, "first", buf->first) &&
             add_num(o, "last", buf->last);
        if (!ok) {
            break;
        }
        if (as->pool < 0) {
            ok = cJSON_AddNullToObject(o, "pool") != NULL &&
                 cJSON_AddFalseToObject(o, "planned") != NULL;
            continue;
        }
        ok = cJSON_AddStringToObject(o, "pool", p->pools[as->pool].name) != NULL;
        if (as->image >= 0) {
            ok = ok && add_num(o, "image", as->image) && add_num(o, "width", buf->width) &&
                 add_num(o, "height", buf->height);
        } else {
            ok = ok && add_num(o, "offset", as->offset);
        }
        if (ok && as->fallback) {
            ok = cJSON_AddTrueToObject(o, "fallback") != NULL;
        }
    }
    return json_out(root, ok, out);
}
