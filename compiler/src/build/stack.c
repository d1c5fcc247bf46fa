/*
 * The static worst-case stack of a generated module: GCC's -fcallgraph-info=su call graphs (.ci
 * files, frames from -fstack-usage) of the module's units, plus the frames of the run-time
 * library functions it calls (libframes.c), summed along the deepest path from the root. A
 * function gcc folded into an identical one (identical code folding) is that one, as the object
 * beside the .ci file says (elf_funcs.c).
 *
 * What must stay true: the figure is "bounded" only when every path from the root is known (no
 * recursion, no indirect calls, no dynamic frames, no unknown external callees); a library
 * function counted as a leaf (memcpy, the libm functions of ir/formula.def, without library
 * analysis) is said so in the report (docs/codegen.md).
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "build_internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

typedef tether__libset libset;
typedef tether__lfunc lfunc;

typedef struct sfn {
    char *title;
    char *name;
    int64_t bytes;
    int known;   /* has a frame size (defined in an analysed unit or library) */
    int dynamic; /* unbounded dynamic frame */
    int state;   /* 0 new, 1 visiting, 2 done */
    int64_t total;
    int bounded;
    int next;     /* worst callee index or -1 */
    int excluded; /* an external counted as 0 bytes (leaf_libs) */
    int alias;    /* gcc's foo.localalias: same function as `alias` - 1 */
    int lib;      /* library function index + 1 (0 = none) */
    int libbad;   /* 1 indirect call, 2 unknown callee inside the library function */
    char why[160];
} sfn;

typedef struct sedge {
    int from, to;
} sedge;

typedef struct sgraph {
    sfn *f;
    int nf, capf;
    sedge *e;
    int ne, cape;
} sgraph;

/* External functions counted as 0 bytes when no library analysis is asked for
 * (tether_stack_analyze; documented in docs/codegen.md). */
static const char *const leaf_libs[] = {
    "memcpy",           "memset",           "__aeabi_memcpy",   "__aeabi_memset",
    "__builtin_memcpy", "__builtin_memset", "tether_set_error", NULL};

/* Provided by the runtime the module runs in (tetherd, the MCU firmware), not by a toolchain
 * library, and reached only on argument errors of the packed ABI, or between the kernels of a
 * profiling build (the clock and the firmware's stack mark, docs/profile.md): always counted as
 * 0. */
static const char *const runtime_leaves[] = {"tether_set_error", "tether_platform_cycles",
                                             "tether_mcu_profile_stack", NULL};

static int find_fn(sgraph *g, const char *title, int create) {
    for (int i = 0; i < g->nf; i++) {
        if (strcmp(g->f[i].title, title) == 0) {
            return i;
        }
    }
    if (!create) {
        return -1;
    }
    if (g->nf == g->capf) {
        int nc = g->capf ? g->capf * 2 : 64;
        sfn *p = realloc(g->f, sizeof *p * (size_t)nc);
        if (!p) {
            return -2;
        }
        g->f = p;
        g->capf = nc;
    }
    sfn *f = &g->f[g->nf];
    memset(f, 0, sizeof *f);
    f->title = strdup(title);
    /* a local function's title is "file.c:name": its name is what follows the last colon */
    const char *colon = strrchr(title, ':');
    f->name = strdup(colon ? colon + 1 : title);
    f->next = -1;
    if (!f->title || !f->name) {
        return -2;
    }
    return g->nf++;
}

static int add_edge(sgraph *g, int a, int b) {
    if (g->ne == g->cape) {
        int nc = g->cape ? g->cape * 2 : 128;
        sedge *p = realloc(g->e, sizeof *p * (size_t)nc);
        if (!p) {
            return -1;
        }
        g->e = p;
        g->cape = nc;
    }
    g->e[g->ne++] = (sedge){a, b};
    return 0;
}

/* Extracts the quoted value after `key` in line; returns 0 when absent. */
static int quoted(const char *line, const char *key, char *out, size_t n) {
    const char *p = strstr(line, key);
    if (!p) {
        return 0;
    }
    p = strchr(p + strlen(key), '"');
    if (!p) {
        return 0;
    }
    p++;
    size_t o = 0;
    while (*p && *p != '"' && o + 1 < n) {
        if (*p == '\\' && p[1]) {
            out[o++] = *p++;
        }
        out[o++] = *p++;
    }
    out[o] = 0;
    return 1;
}

static int parse_ci(sgraph *g, const char *path) {
    char *text;
    int rc = tether__read_file(path, &text, NULL);
    if (rc) {
        return rc;
    }
    char *save = NULL;
    for (char *ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        char title[512], label[1024], src[512], dst[512];
        if (strncmp(ln, "node:", 5) == 0 && quoted(ln, "title:", title, sizeof title) &&
            quoted(ln, "label:", label, sizeof label)) {
            int i = find_fn(g, title, 1);
            if (i < 0) {
                free(text);
                return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "stack: out of memory");
            }
            sfn *f = &g->f[i];
            char *nl = strstr(label, "\\n");
            if (nl) {
                free(f->name);
                f->name = strndup(label, (size_t)(nl - label));
            }
            char *bytes = strstr(label, " bytes (");
            if (bytes) {
                char *start = bytes;
                while (start > label && start[-1] >= '0' && start[-1] <= '9') {
                    start--;
                }
                f->bytes = strtoll(start, NULL, 10);
                f->known = 1;
                f->dynamic = strstr(bytes, "(dynamic)") != NULL;
            }
        } else if (strncmp(ln, "edge:", 5) == 0 && quoted(ln, "sourcename:", src, sizeof src) &&
                   quoted(ln, "targetname:", dst, sizeof dst)) {
            int a = find_fn(g, src, 1), b = find_fn(g, dst, 1);
            if (a < 0 || b < 0 || add_edge(g, a, b)) {
                free(text);
                return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "stack: out of memory");
            }
        }
    }
    free(text);
    return TETHER_OK;
}

/* gcc calls a global function `foo` through its local alias `foo.localalias` when it may not
 * be interposed (-fPIC, identical code folding): an edge to "file.c:foo.localalias" is an edge
 * to `foo` (title "foo", or "file.c:foo" for a local one). Other suffixes (.part.N,
 * .constprop.N, .isra.N) are real functions with their own nodes and frames; a .cold part is
 * inside its function's frame and never a node of its own. */
static void resolve_aliases(sgraph *g) {
    static const char suffix[] = ".localalias";
    const size_t sl = sizeof suffix - 1;
    for (int i = 0; i < g->nf; i++) {
        sfn *f = &g->f[i];
        size_t tl = strlen(f->title);
        if (f->known || tl <= sl || strcmp(f->title + tl - sl, suffix) != 0) {
            continue;
        }
        char local[512], global[512];
        snprintf(local, sizeof local, "%.*s", (int)(tl - sl), f->title);
        const char *colon = strrchr(local, ':');
        snprintf(global, sizeof global, "%s", colon ? colon + 1 : local);
        int t = find_fn(g, global, 0);
        if (t < 0 || !g->f[t].known) {
            t = find_fn(g, local, 0);
        }
        if (t >= 0 && g->f[t].known && t != i) {
            g->f[i].alias = t + 1;
            free(g->f[i].name);
            g->f[i].name = strdup(g->f[t].name);
            for (int k = 0; k < g->ne; k++) {
                if (g->e[k].to == i) {
                    g->e[k].to = t;
                }
            }
        } else {
            /* name it by the function it aliases in messages */
            char *nm = strdup(global);
            if (nm) {
                free(g->f[i].name);
                g->f[i].name = nm;
            }
        }
    }
}

/* gcc's identical code folding: a function that compiles to the same code as another becomes a
 * local alias of it (same section, same address) and has no node of its own in the .ci file, only
 * edges to it. The object beside each .ci file (<stem>.o, when it is still there) says which body
 * it is: its edges go to that body's node, whose frame is the folded function's too. */
static void resolve_folded(sgraph *g, const char *const *ci_files, int nfiles) {
    for (int c = 0; c < nfiles; c++) {
        size_t l = strlen(ci_files[c]);
        if (l < 4 || strcmp(ci_files[c] + l - 3, ".ci") != 0) {
            continue;
        }
        char obj[1200];
        snprintf(obj, sizeof obj, "%.*s.o", (int)(l - 3), ci_files[c]);
        FILE *fp = fopen(obj, "rb");
        if (!fp) {
            continue;
        }
        fclose(fp);
        tether__elf_funcs ef;
        if (tether__elf_funcs_read(obj, &ef) != TETHER_OK) {
            continue;
        }
        for (int i = 0; i < g->nf; i++) {
            sfn *f = &g->f[i];
            if (f->known || f->alias || f->lib) {
                continue;
            }
            const char *colon = strrchr(f->title, ':');
            const char *name = colon ? colon + 1 : f->title;
            int plen = colon ? (int)(colon + 1 - f->title) : 0;
            int t = -1;
            for (int nth = 0, j; t < 0 && (j = tether__elf_funcs_same(&ef, name, nth)) >= 0;
                 nth++) {
                char cand[600];
                snprintf(cand, sizeof cand, "%.*s%s", plen, f->title, ef.name[j]);
                t = find_fn(g, cand, 0);
                if (t < 0 || !g->f[t].known) {
                    t = find_fn(g, ef.name[j], 0);
                }
                if (t >= 0 && (!g->f[t].known || t == i)) {
                    t = -1;
                }
            }
            if (t < 0) {
                continue;
            }
            f->alias = t + 1;
            for (int k = 0; k < g->ne; k++) {
                if (g->e[k].to == i) {
                    g->e[k].to = t;
                }
            }
        }
        tether__elf_funcs_free(&ef);
    }
}

/* leaf_libs, and the libm functions generated code may call (the M rows of ir/formula.def). */
static int leaf_lib(const char *name) {
    for (int m = 0; m < TETHER__MATH_COUNT; m++) {
        if (strcmp(tether__math_name((tether__math)m), name) == 0) {
            return 1;
        }
    }
    for (int i = 0; leaf_libs[i]; i++) {
        if (strcmp(leaf_libs[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

static int in_list(const char *const *list, const char *name) {
    for (int k = 0; list[k]; k++) {
        if (strcmp(name, list[k]) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Gives every external the graph reaches its frame and callees from the target's libraries
 * (new nodes are appended, so the loop reaches them too). */
static int attach_libs(sgraph *g, libset *L) {
    for (int i = 0; i < g->nf; i++) {
        if (g->f[i].known || g->f[i].alias || strcmp(g->f[i].title, "__indirect_call") == 0) {
            continue;
        }
        const char *base = g->f[i].name;
        if (strncmp(base, "__builtin_", 10) == 0) {
            base += 10;
        }
        if (in_list(runtime_leaves, base)) {
            continue;
        }
        int id = g->f[i].lib ? g->f[i].lib - 1 : tether__lib_lookup(L, base);
        if (id < 0) {
            continue;
        }
        if (tether__lib_compute(L, id)) {
            return -1;
        }
        const lfunc *lf = &L->fn[id];
        g->f[i].known = 1;
        g->f[i].lib = id + 1;
        g->f[i].bytes = lf->bytes;
        g->f[i].dynamic = lf->dynamic;
        g->f[i].libbad = lf->indirect;
        for (int c = 0; c < lf->ncallees; c++) {
            const lfunc *cf = &L->fn[lf->callees[c]];
            char title[600];
            if (cf->global) {
                snprintf(title, sizeof title, "%s", cf->name);
            } else {
                snprintf(title, sizeof title, "lib:%d:%s", cf->member, cf->name);
            }
            int t = find_fn(g, title, 1);
            if (t < 0) {
                return -1;
            }
            if (!g->f[t].known && !g->f[t].lib) {
                g->f[t].lib = L->fn[id].callees[c] + 1;
                free(g->f[t].name);
                g->f[t].name = strdup(L->fn[L->fn[id].callees[c]].name);
                if (!g->f[t].name) {
                    return -1;
                }
            }
            if (add_edge(g, i, t)) {
                return -1;
            }
            lf = &L->fn[id];
        }
    }
    return 0;
}

static void visit(sgraph *g, int i, int with_libs) {
    sfn *f = &g->f[i];
    if (f->state == 2) {
        return;
    }
    f->state = 1;
    f->bounded = 1;
    f->total = f->bytes;
    if (!f->known) {
        const char *base = strncmp(f->name, "__builtin_", 10) == 0 ? f->name + 10 : f->name;
        int leaf = in_list(runtime_leaves, base);
        if (!with_libs) {
            /* __aeabi_*: the Arm run-time ABI helpers (soft-float, division) from libgcc */
            leaf |= strncmp(f->name, "__aeabi_", 8) == 0 || leaf_lib(base);
        }
        if (leaf) {
            f->excluded = 1;
        } else {
            f->bounded = 0;
            snprintf(f->why, sizeof f->why, "calls %s, whose stack is unknown",
                     strcmp(f->title, "__indirect_call") == 0 ? "through a function pointer"
                                                              : f->name);
        }
        f->state = 2;
        return;
    }
    if (f->dynamic) {
        f->bounded = 0;
        snprintf(f->why, sizeof f->why, "%s has a dynamic stack frame", f->name);
    }
    if (f->libbad) {
        f->bounded = 0;
        snprintf(f->why, sizeof f->why, "library function %s %s", f->name,
                 f->libbad == 1 ? "calls through a function pointer"
                                : "calls a function no analysed library defines");
    }
    int64_t worst = 0;
    for (int k = 0; k < g->ne; k++) {
        if (g->e[k].from != i) {
            continue;
        }
        int c = g->e[k].to;
        if (g->f[c].state == 1) {
            f->bounded = 0;
            snprintf(f->why, sizeof f->why, "recursion through %s", g->f[c].name);
            continue;
        }
        visit(g, c, with_libs);
        if (!g->f[c].bounded && f->bounded) {
            f->bounded = 0;
            snprintf(f->why, sizeof f->why, "%s", g->f[c].why);
        }
        if (g->f[c].total > worst || f->next < 0) {
            if (g->f[c].total >= worst) {
                worst = g->f[c].total;
                f->next = c;
            }
        }
    }
    f->total = f->bytes + worst;
    f->state = 2;
}

static int stack_analyze(const char *const *ci_files, int nfiles, const char *root,
                         const tether_target *target, tether_stack_report *out) {
    memset(out, 0, sizeof *out);
    sgraph g;
    memset(&g, 0, sizeof g);
    int rc = TETHER_OK;
    for (int i = 0; i < nfiles && !rc; i++) {
        rc = parse_ci(&g, ci_files[i]);
    }
    int r = -1;
    if (!rc) {
        for (int i = 0; i < g.nf; i++) {
            if (strcmp(g.f[i].name, root) == 0 && g.f[i].known) {
                r = i;
            }
        }
        if (r < 0) {
            rc = tether_set_error(TETHER_ERR_NOT_FOUND,
                                  "stack: function '%s' is not in the call graph", root);
        }
    }
    if (!rc) {
        resolve_aliases(&g);
        resolve_folded(&g, ci_files, nfiles);
    }
    libset *L = NULL;
    if (!rc && target) {
        L = tether__lib_for_target(target);
        if (!L) {
            rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "stack: out of memory");
        } else if (attach_libs(&g, L)) {
            rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "stack: out of memory");
        }
    }
    if (!rc) {
        visit(&g, r, target != NULL);
        out->bytes = g.f[r].total;
        out->bounded = g.f[r].bounded;
        snprintf(out->reason, sizeof out->reason, "%s", g.f[r].bounded ? "" : g.f[r].why);
        if (!out->bounded && L && L->error && strstr(out->reason, "whose stack is unknown")) {
            size_t o = strlen(out->reason);
            snprintf(out->reason + o, sizeof out->reason - o, " (%s)", L->errmsg);
        }
        size_t o = 0;
        for (int i = r, depth = 0; i >= 0 && depth < 64 && o < sizeof out->path; depth++) {
            o += (size_t)snprintf(out->path + o, sizeof out->path - o, "%s%s(%lld)",
                                  depth ? " -> " : "", g.f[i].name, (long long)g.f[i].bytes);
            i = g.f[i].next;
        }
        o = 0;
        for (int i = 0; i < g.nf; i++) {
            if (g.f[i].excluded && g.f[i].state == 2 && o < sizeof out->excluded) {
                o += (size_t)snprintf(out->excluded + o, sizeof out->excluded - o, "%s%s",
                                      o ? "," : "", g.f[i].name);
            }
        }
    }
    for (int i = 0; i < g.nf; i++) {
        free(g.f[i].title);
        free(g.f[i].name);
    }
    free(g.f);
    free(g.e);
    return rc;
}

int tether_stack_analyze(const char *const *ci_files, int nfiles, const char *root,
                         tether_stack_report *out) {
    return stack_analyze(ci_files, nfiles, root, NULL, out);
}

int tether_stack_analyze_target(const char *const *ci_files, int nfiles, const char *root,
                                const tether_target *target, tether_stack_report *out) {
    return stack_analyze(ci_files, nfiles, root, target, out);
}

int tether_stack_library_function(const tether_target *target, const char *name,
                                  tether_stack_report *out) {
    memset(out, 0, sizeof *out);
    libset *L = tether__lib_for_target(target);
    if (!L) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "stack: out of memory");
    }
    int id = tether__lib_lookup(L, name);
    if (id < 0) {
        return tether_set_error(TETHER_ERR_NOT_FOUND, "%s: no library of target %s defines %s%s%s",
                                "stack", target->name, name, L->error ? ": " : "",
                                L->error ? L->errmsg : "");
    }
    /* a one-node graph whose only function is `name`, analysed like any external */
    sgraph g;
    memset(&g, 0, sizeof g);
    int rc = TETHER_OK;
    int r = find_fn(&g, name, 1);
    if (r < 0 || attach_libs(&g, L)) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "stack: out of memory");
    } else {
        visit(&g, r, 1);
        out->bytes = g.f[r].total;
        out->bounded = g.f[r].bounded;
        snprintf(out->reason, sizeof out->reason, "%s", g.f[r].bounded ? "" : g.f[r].why);
        size_t o = 0;
        for (int i = r, depth = 0; i >= 0 && depth < 64 && o < sizeof out->path; depth++) {
            o += (size_t)snprintf(out->path + o, sizeof out->path - o, "%s%s(%lld)",
                                  depth ? " -> " : "", g.f[i].name, (long long)g.f[i].bytes);
            i = g.f[i].next;
        }
    }
    for (int i = 0; i < g.nf; i++) {
        free(g.f[i].title);
        free(g.f[i].name);
    }
    free(g.f);
    free(g.e);
    return rc;
}
