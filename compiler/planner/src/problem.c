/*
 * Planner problems: owned copies of pools and buffers, names of algorithms, --pool parsing and
 * the growable text buffer used by the writers.
 * Invariants: every string and array inside a tether_plan_problem is owned by it (malloc'd
 * here, freed by close); a failed add leaves the problem exactly as it was.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tether/file.h"
#include "tether/crt/dtype.h"
#include "tether/crt/utf8.h"

static const char *const algo_names[TETHER_PLAN_ALGORITHM_COUNT] = {
    "naive", "shared-objects", "greedy-size", "greedy-conflicts", "search", "exact", "best"};

const char *tether_plan_algorithm_name(tether_plan_algorithm a) {
    if ((unsigned)a >= TETHER_PLAN_ALGORITHM_COUNT) {
        return NULL;
    }
    return algo_names[a];
}

int tether_plan_algorithm_parse(const char *name, tether_plan_algorithm *out) {
    if (name == NULL || out == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "planner name is null");
    }
    for (int i = 0; i < TETHER_PLAN_ALGORITHM_COUNT; i++) {
        if (strcmp(name, algo_names[i]) == 0) {
            *out = (tether_plan_algorithm)i;
            return TETHER_OK;
        }
    }
    return tether_set_error(TETHER_ERR_NOT_FOUND,
                            "unknown planner '%.40s' (valid: naive, shared-objects, greedy-size, "
                            "greedy-conflicts, search, exact, best)",
                            name);
}

void tether_plan_options_init(tether_plan_options *o) {
    memset(o, 0, sizeof(*o));
    o->algorithm = TETHER_PLAN_BEST;
    o->plan_inputs = true;
    o->plan_outputs = true;
    o->seed = 1;
    o->search_budget = 2000;
    o->exact_max_buffers = TETHER_PLAN_EXACT_MAX_DEFAULT;
    o->texture_max_ratio = TETHER_PLAN_TEXTURE_RATIO_DEFAULT;
}

int tether_plan_problem_init(tether_plan_problem *p) {
    if (p == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "problem is null");
    }
    memset(p, 0, sizeof(*p));
    return TETHER_OK;
}

static void free_buffer(tether_plan_buffer *b) {
    free((char *)b->name);
    for (int i = 0; i < b->npools; i++) {
        free((char *)b->pools[i]);
    }
    free((char **)b->pools);
    free((char *)b->pin_pool);
}

void tether_plan_problem_clear_pools(tether_plan_problem *p) {
    if (p == NULL) {
        return;
    }
    for (int i = 0; i < p->npools; i++) {
        free((char *)p->pools[i].name);
    }
    p->npools = 0;
}

void tether__plan_problem_truncate(tether_plan_problem *p, int npools, int nbuffers) {
    while (p->npools > npools) {
        free((char *)p->pools[--p->npools].name);
    }
    while (p->nbuffers > nbuffers) {
        free_buffer(&p->buffers[--p->nbuffers]);
    }
}

static void free_operators(tether_plan_problem *p) {
    for (int i = 0; i < p->noperators; i++) {
        free(p->operators[i]);
    }
    free(p->operators);
    p->operators = NULL;
    p->noperators = 0;
}

void tether_plan_problem_close(tether_plan_problem *p) {
    if (p == NULL) {
        return;
    }
    tether_plan_problem_clear_pools(p);
    for (int i = 0; i < p->nbuffers; i++) {
        free_buffer(&p->buffers[i]);
    }
    free(p->pools);
    free(p->buffers);
    free_operators(p);
    for (int i = 0; i < p->nios; i++) {
        free(p->ios[i].name);
    }
    free(p->ios);
    memset(p, 0, sizeof(*p));
}

int tether_plan_problem_set_operators(tether_plan_problem *p, const char *const *names, int n) {
    if (p == NULL || n < 0 || (n > 0 && names == NULL)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "operator names: bad arguments");
    }
    free_operators(p);
    if (n == 0) {
        return TETHER_OK;
    }
    p->operators = calloc((size_t)n, sizeof(char *));
    if (p->operators == NULL) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "operator names: out of memory");
    }
    p->noperators = n;
    for (int i = 0; i < n; i++) {
        p->operators[i] = strdup(names[i] ? names[i] : "");
        if (p->operators[i] == NULL) {
            free_operators(p);
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "operator names: out of memory");
        }
    }
    return TETHER_OK;
}

int tether_plan_problem_add_io(tether_plan_problem *p, const char *name, tether_plan_kind kind,
                               int32_t first, int32_t last, int64_t size) {
    if (p == NULL || name == NULL ||
        (kind != TETHER_PLAN_GRAPH_INPUT && kind != TETHER_PLAN_GRAPH_OUTPUT) || first < 0 ||
        last < first || size < 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "graph input/output '%s': bad kind, interval or size",
                                name ? name : "");
    }
    tether_plan_io *n = realloc(p->ios, sizeof(*n) * (size_t)(p->nios + 1));
    if (n == NULL) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "graph input/output: out of memory");
    }
    p->ios = n;
    tether_plan_io *io = &p->ios[p->nios];
    io->name = strdup(name);
    if (io->name == NULL) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "graph input/output: out of memory");
    }
    io->kind = kind;
    io->first = first;
    io->last = last;
    io->size = size;
    p->nios++;
    return TETHER_OK;
}

int tether_plan_problem_find_pool(const tether_plan_problem *p, const char *name) {
    if (p == NULL || name == NULL) {
        return -1;
    }
    for (int i = 0; i < p->npools; i++) {
        if (strcmp(p->pools[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

int tether_plan_problem_find_buffer(const tether_plan_problem *p, const char *name) {
    if (p == NULL || name == NULL) {
        return -1;
    }
    for (int i = 0; i < p->nbuffers; i++) {
        if (strcmp(p->buffers[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

static bool is_pow2(int64_t v) {
    return v > 0 && (v & (v - 1)) == 0;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c != NULL) {
        memcpy(c, s, n);
    }
    return c;
}

int tether_plan_problem_add_pool(tether_plan_problem *p, const tether_plan_pool *pool) {
    if (p == NULL || pool == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "problem or pool is null");
    }
    int rc = tether_pool_name_check(pool->name);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (tether_scope_name(pool->scope) == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "pool '%s': invalid scope %d", pool->name,
                                (int)pool->scope);
    }
    if (pool->capacity < 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "pool '%s': negative capacity %lld (0 means unbounded)", pool->name,
                                (long long)pool->capacity);
    }
    if (pool->alignment != 0 && !is_pow2(pool->alignment)) {
        return tether_set_error(TETHER_ERR_ALIGNMENT,
                                "pool '%s': alignment %lld is not a power of two", pool->name,
                                (long long)pool->alignment);
    }
    if (pool->max_width < 0 || pool->max_height < 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "pool '%s': negative image limit (0 means no limit)", pool->name);
    }
    if (tether_plan_problem_find_pool(p, pool->name) >= 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "pool '%s' is declared twice", pool->name);
    }
    if (p->npools == p->pools_cap_) {
        int cap = p->pools_cap_ ? p->pools_cap_ * 2 : 4;
        tether_plan_pool *np = realloc(p->pools, (size_t)cap * sizeof(*np));
        if (np == NULL) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory adding a pool");
        }
        p->pools = np;
        p->pools_cap_ = cap;
    }
    tether_plan_pool c = *pool;
    c.name = dup_str(pool->name);
    if (c.name == NULL) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory adding a pool");
    }
    if (c.alignment == 0) {
        c.alignment = TETHER_PLAN_DEFAULT_ALIGNMENT;
    }
    p->pools[p->npools++] = c;
    return TETHER_OK;
}

int64_t tether__plan_texture_bytes(int64_t w, int64_t h, DLDataType dtype) {
    size_t eb = tether_dtype_bytes(dtype);
    if (eb == 0 || w <= 0 || h <= 0) {
        return -1;
    }
    if (w > INT64_MAX / h || w * h > INT64_MAX / (4 * (int64_t)eb)) {
        return -1;
    }
    return w * h * 4 * (int64_t)eb;
}

static int check_buffer(const tether_plan_buffer *b) {
    if (b->name == NULL || b->name[0] == '\0') {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "buffer name is empty");
    }
    const char *n = b->name;
    if (tether_scope_name(b->scope) == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "buffer '%.60s': invalid scope %d", n,
                                (int)b->scope);
    }
    if (b->kind != TETHER_PLAN_INTERMEDIATE && b->kind != TETHER_PLAN_GRAPH_INPUT &&
        b->kind != TETHER_PLAN_GRAPH_OUTPUT) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "buffer '%.60s': invalid kind %d", n,
                                (int)b->kind);
    }
    if (b->first < 0 || b->last < b->first) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "buffer '%.60s': live interval [%d, %d] is not 0 <= first <= last",
                                n, (int)b->first, (int)b->last);
    }
    if (b->alignment < 0 || (b->alignment != 0 && !is_pow2(b->alignment))) {
        return tether_set_error(TETHER_ERR_ALIGNMENT,
                                "buffer '%.60s': alignment %lld is not a power of two", n,
                                (long long)b->alignment);
    }
    if (tether_scope_is_texture(b->scope)) {
        if (b->width <= 0 || b->height <= 0) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "buffer '%.60s': texture extent %lldx%lld must be positive", n,
                                    (long long)b->width, (long long)b->height);
        }
        int64_t bytes = tether__plan_texture_bytes(b->width, b->height, b->dtype);
        if (bytes < 0) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "buffer '%.60s': invalid texture dtype or extent overflow", n);
        }
        if (b->size < 0) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "buffer '%.60s': negative size", n);
        }
    } else if (b->size <= 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "buffer '%.60s': size %lld must be positive", n,
                                (long long)b->size);
    }
    if (b->size > (INT64_C(1) << 48)) {
        return tether_set_error(TETHER_ERR_LIMIT, "buffer '%.60s': size %lld is over 2^48 bytes", n,
                                (long long)b->size);
    }
    if (b->npools < 0 || (b->npools > 0 && b->pools == NULL)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "buffer '%.60s': bad pool list", n);
    }
    for (int i = 0; i < b->npools; i++) {
        int rc = tether_pool_name_check(b->pools[i]);
        if (rc != TETHER_OK) {
            char why[TETHER_ERROR_MSG_MAX];
            snprintf(why, sizeof(why), "%s", tether_last_error());
            return tether_set_error(rc, "buffer '%.60s': candidate pool: %s", n, why);
        }
    }
    if (b->pin_pool != NULL) {
        int rc = tether_pool_name_check(b->pin_pool);
        if (rc != TETHER_OK) {
            char why[TETHER_ERROR_MSG_MAX];
            snprintf(why, sizeof(why), "%s", tether_last_error());
            return tether_set_error(rc, "buffer '%.60s': pin: %s", n, why);
        }
        if (b->pin_offset < -1) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "buffer '%.60s': pin offset %lld (use -1 for any offset)", n,
                                    (long long)b->pin_offset);
        }
    } else if (b->pin_offset > 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "buffer '%.60s': pin offset given without a pin pool", n);
    }
    if (b->alias_group < 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "buffer '%.60s': alias group %d must be >= 0", n,
                                (int)b->alias_group);
    }
    return TETHER_OK;
}

int tether_plan_problem_add_buffer(tether_plan_problem *p, const tether_plan_buffer *buffer,
                                   int *index_out) {
    if (p == NULL || buffer == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "problem or buffer is null");
    }
    int rc = check_buffer(buffer);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (tether_plan_problem_find_buffer(p, buffer->name) >= 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "buffer '%.60s' is declared twice",
                                buffer->name);
    }
    if (p->nbuffers == INT_MAX / 2) {
        return tether_set_error(TETHER_ERR_LIMIT, "too many buffers");
    }
    if (p->nbuffers == p->buffers_cap_) {
        int cap = p->buffers_cap_ ? p->buffers_cap_ * 2 : 16;
        tether_plan_buffer *nb = realloc(p->buffers, (size_t)cap * sizeof(*nb));
        if (nb == NULL) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory adding a buffer");
        }
        p->buffers = nb;
        p->buffers_cap_ = cap;
    }
    tether_plan_buffer c = *buffer;
    c.name = dup_str(buffer->name);
    c.pools = NULL;
    c.npools = 0;
    c.pin_pool = NULL;
    bool oom = c.name == NULL;
    if (!oom && buffer->npools > 0) {
        char **list = calloc((size_t)buffer->npools, sizeof(char *));
        c.pools = (const char *const *)list;
        oom = list == NULL;
        for (int i = 0; !oom && i < buffer->npools; i++) {
            list[i] = dup_str(buffer->pools[i]);
            oom = list[i] == NULL;
            c.npools = i + 1;
        }
    }
    if (!oom && buffer->pin_pool != NULL) {
        c.pin_pool = dup_str(buffer->pin_pool);
        oom = c.pin_pool == NULL;
    }
    if (oom) {
        free_buffer(&c);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory adding a buffer");
    }
    if (c.pin_pool == NULL) {
        c.pin_offset = -1;
    }
    if (tether_scope_is_texture(c.scope) && c.size == 0) {
        c.size = tether__plan_texture_bytes(c.width, c.height, c.dtype);
    }
    if (index_out != NULL) {
        *index_out = p->nbuffers;
    }
    p->buffers[p->nbuffers++] = c;
    return TETHER_OK;
}

/* Parses a byte count with an optional K/M/G suffix. */
static int parse_bytes(const char *s, int64_t *out) {
    if (strcmp(s, "unbounded") == 0) {
        *out = TETHER_PLAN_UNBOUNDED;
        return 0;
    }
    if (!isdigit((unsigned char)s[0])) {
        return -1;
    }
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0) {
        return -1;
    }
    int shift = 0;
    if (*end == 'K' || *end == 'k') {
        shift = 10;
        end++;
    } else if (*end == 'M' || *end == 'm') {
        shift = 20;
        end++;
    } else if (*end == 'G' || *end == 'g') {
        shift = 30;
        end++;
    }
    if (*end != '\0' || v > (1ULL << 48) >> shift) {
        return -1;
    }
    *out = (int64_t)(v << shift);
    return 0;
}

int tether_plan_pool_parse(const char *spec, tether_plan_pool *pool, char *name_buf) {
    if (spec == NULL || pool == NULL || name_buf == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "pool spec is null");
    }
    memset(pool, 0, sizeof(*pool));
    const char *c1 = strchr(spec, ':');
    if (c1 == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "pool '%.60s': expected name:scope:capacity", spec);
    }
    size_t nlen = (size_t)(c1 - spec);
    if (nlen == 0 || nlen >= TETHER_POOL_NAME_MAX) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "pool '%.60s': name must be 1..%d characters", spec,
                                TETHER_POOL_NAME_MAX - 1);
    }
    memcpy(name_buf, spec, nlen);
    name_buf[nlen] = '\0';
    int rc = tether_pool_name_check(name_buf);
    if (rc != TETHER_OK) {
        return rc;
    }
    const char *rest = c1 + 1;
    tether_scope scope;
    const char *after;
    if (strncmp(rest, "texture:weight:", 15) == 0) {
        scope = TETHER_SCOPE_TEXTURE_WEIGHT;
        after = rest + 15;
    } else if (strncmp(rest, "texture:", 8) == 0) {
        scope = TETHER_SCOPE_TEXTURE;
        after = rest + 8;
    } else if (strncmp(rest, "global:", 7) == 0) {
        scope = TETHER_SCOPE_GLOBAL;
        after = rest + 7;
    } else {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "pool '%.60s': scope must be global, texture or texture:weight "
                                "followed by :capacity",
                                spec);
    }
    char cap[64];
    const char *c3 = strchr(after, ':');
    size_t clen = c3 ? (size_t)(c3 - after) : strlen(after);
    if (clen == 0 || clen >= sizeof(cap)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "pool '%.60s': missing capacity", spec);
    }
    memcpy(cap, after, clen);
    cap[clen] = '\0';
    if (parse_bytes(cap, &pool->capacity) != 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "pool '%.60s': capacity '%s' is not a byte count (digits with an "
                                "optional K/M/G, or 'unbounded')",
                                spec, cap);
    }
    if (c3 != NULL) {
        long long w = 0, h = 0;
        char tail = 0;
        if (!tether_scope_is_texture(scope) || sscanf(c3 + 1, "%lldx%lld%c", &w, &h, &tail) != 2 ||
            w <= 0 || h <= 0) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "pool '%.60s': only texture pools take a 4th field, the "
                                    "device image limit WxH (e.g. 8192x8192)",
                                    spec);
        }
        pool->max_width = w;
        pool->max_height = h;
    }
    pool->name = name_buf;
    pool->scope = scope;
    pool->alignment = 0;
    return TETHER_OK;
}

/* ---- text builder ---- */

void tether__plan_text_printf(tp_text *t, const char *fmt, ...) {
    if (t->failed) {
        return;
    }
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = t->cap - t->len;
        int n = vsnprintf(t->buf ? t->buf + t->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if ((size_t)n < room) {
            t->len += (size_t)n;
            return;
        }
        size_t ncap = t->cap ? t->cap * 2 : 1024;
        while (ncap < t->len + (size_t)n + 1) {
            ncap *= 2;
        }
        char *nb = realloc(t->buf, ncap);
        if (nb == NULL) {
            t->failed = true;
            return;
        }
        t->buf = nb;
        t->cap = ncap;
    }
}

void tether__plan_text_escape_xml(tp_text *t, const char *s) {
    for (; *s; s++) {
        if ((unsigned char)*s >= 0x80) { /* a whole UTF-8 character, or '?' for a bad byte */
            size_t rest = 0;
            while (rest < 4 && s[rest]) {
                rest++;
            }
            size_t k = tether_utf8_seq(s, rest);
            if (k == 0) {
                tether__plan_text_printf(t, "?");
            } else {
                tether__plan_text_printf(t, "%.*s", (int)k, s);
                s += k - 1;
            }
            continue;
        }
        switch (*s) {
        case '<':
            tether__plan_text_printf(t, "&lt;");
            break;
        case '>':
            tether__plan_text_printf(t, "&gt;");
            break;
        case '&':
            tether__plan_text_printf(t, "&amp;");
            break;
        case '"':
            tether__plan_text_printf(t, "&quot;");
            break;
        case '\'':
            tether__plan_text_printf(t, "&apos;");
            break;
        default:
            if ((unsigned char)*s < 0x20) {
                tether__plan_text_printf(t, "?");
            } else {
                tether__plan_text_printf(t, "%c", *s);
            }
        }
    }
}

int tether_plan_write_file(const char *path, const char *text) {
    if (path == NULL || text == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "path or text is null");
    }
    return tether_file_write(path, text, strlen(text));
}
