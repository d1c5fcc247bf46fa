/*
 * The build driver: target profiles, running the cross/host compiler on a generated source,
 * ELF section sizes, and the static worst-case stack from -fstack-usage/-fcallgraph-info=su.
 *
 * What must stay true: compilers are run with an argv array (never through a shell), their
 * stderr goes to <dir>/build.log; a failed build reports the log's first lines; the stack figure
 * is "bounded" only when every path from the root is known (no recursion, no indirect calls, no
 * dynamic frames, no unknown external callees).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

static const tether_target targets[] = {
    {"x86_64-linux", "gcc", "-fPIC", NULL, TETHER_TARGET_SHARED,
     "host gcc, shared object for upload to tetherd"},
    {"aarch64-linux", "aarch64-linux-gnu-gcc", "-fPIC", NULL, TETHER_TARGET_SHARED,
     "64-bit Arm Linux boards and phones, shared object"},
    {"cortex-m0", "arm-none-eabi-gcc", "-mcpu=cortex-m0 -mthumb -mfloat-abi=soft",
     "arm-none-eabi-ar", TETHER_TARGET_STATIC, "Armv6-M, no FPU, static library"},
    {"cortex-m3", "arm-none-eabi-gcc", "-mcpu=cortex-m3 -mthumb -mfloat-abi=soft",
     "arm-none-eabi-ar", TETHER_TARGET_STATIC, "Armv7-M, no FPU, static library"},
    {"cortex-m4", "arm-none-eabi-gcc", "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16",
     "arm-none-eabi-ar", TETHER_TARGET_STATIC,
     "Armv7E-M with single-precision FPU, static library"},
    {"cortex-m7", "arm-none-eabi-gcc", "-mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16",
     "arm-none-eabi-ar", TETHER_TARGET_STATIC, "Armv7E-M with double-precision FPU"},
};

const tether_target *tether_targets(int *count) {
    *count = (int)(sizeof targets / sizeof *targets);
    return targets;
}

int tether_target_find(const char *name, const tether_target **out) {
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
        if (name && strcmp(name, targets[i].name) == 0) {
            *out = &targets[i];
            return TETHER_OK;
        }
    }
    return tether_set_error(TETHER_ERR_NOT_FOUND,
                            "unknown target '%s' (x86_64-linux, aarch64-linux, cortex-m0, "
                            "cortex-m3, cortex-m4, cortex-m7)",
                            name ? name : "(null)");
}

static int find_program(const char *prog, char *out, size_t n) {
    const char *path = getenv("PATH");
    if (strchr(prog, '/')) {
        snprintf(out, n, "%s", prog);
        return access(out, X_OK) == 0;
    }
    if (!path) {
        path = "/usr/bin:/bin";
    }
    const char *p = path;
    while (*p) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        snprintf(out, n, "%.*s/%s", (int)len, p, prog);
        if (len && access(out, X_OK) == 0) {
            return 1;
        }
        if (!end) {
            break;
        }
        p = end + 1;
    }
    return 0;
}

bool tether_target_available(const tether_target *t) {
    char buf[1024];
    return find_program(t->cc, buf, sizeof buf);
}

/* Runs argv with stdout+stderr appended to log (internal.h). */
int tether_run_logged(char *const *argv, const char *log) {
    pid_t pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- ELF sizes ------------------------------------------------------------------------------ */

static uint64_t rd(const unsigned char *p, int size, int le) {
    uint64_t v = 0;
    for (int i = 0; i < size; i++) {
        int k = le ? size - 1 - i : i;
        v = (v << 8) | p[k];
    }
    return v;
}

int tether_elf_size(const char *path, tether_elf_sizes *out) {
    memset(out, 0, sizeof *out);
    char *buf;
    size_t len;
    int rc = tether_read_file(path, &buf, &len);
    if (rc) {
        return rc;
    }
    const unsigned char *b = (const unsigned char *)buf;
    if (len < 52 || memcmp(b, "\177ELF", 4) != 0 || (b[4] != 1 && b[4] != 2)) {
        free(buf);
        return tether_set_error(TETHER_ERR_INVALID_ARG, "'%s' is not an ELF file", path);
    }
    int is64 = b[4] == 2, le = b[5] == 1;
    uint64_t shoff = is64 ? rd(b + 0x28, 8, le) : rd(b + 0x20, 4, le);
    uint64_t shentsize = rd(b + (is64 ? 0x3a : 0x2e), 2, le);
    uint64_t shnum = rd(b + (is64 ? 0x3c : 0x30), 2, le);
    if (shoff + shnum * shentsize > len || shentsize < (is64 ? 64u : 40u)) {
        free(buf);
        return tether_set_error(TETHER_ERR_INVALID_ARG, "'%s': truncated section table", path);
    }
    for (uint64_t i = 0; i < shnum; i++) {
        const unsigned char *s = b + shoff + i * shentsize;
        uint64_t type = rd(s + 4, 4, le);
        uint64_t flags = is64 ? rd(s + 8, 8, le) : rd(s + 8, 4, le);
        uint64_t size = is64 ? rd(s + 0x20, 8, le) : rd(s + 0x14, 4, le);
        if (!(flags & 0x2)) { /* SHF_ALLOC */
            continue;
        }
        if (type == 8) { /* SHT_NOBITS */
            out->bss += size;
        } else if (flags & 0x1) { /* SHF_WRITE */
            out->data += size;
        } else {
            out->text += size;
            if (flags & 0x4) { /* SHF_EXECINSTR */
                out->code += size;
            }
        }
    }
    free(buf);
    return TETHER_OK;
}

/* ---- static stack ------------------------------------------------------------------------- */

typedef struct sfn {
    char *title;
    char *name;
    int64_t bytes;
    int known;   /* has a frame size (defined in an analysed unit) */
    int dynamic; /* unbounded dynamic frame */
    int state;   /* 0 new, 1 visiting, 2 done */
    int64_t total;
    int bounded;
    int next;     /* worst callee index or -1 */
    int excluded; /* an external counted as 0 bytes (leaf_libs) */
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

/* Leaf library functions a generated module may call; they are outside the analysed units and
 * counted as 0 bytes (documented in docs/codegen.md). */
static const char *const leaf_libs[] = {"memcpy",
                                        "memset",
                                        "expf",
                                        "logf",
                                        "sqrtf",
                                        "tanhf",
                                        "powf",
                                        "__aeabi_memcpy",
                                        "__aeabi_memset",
                                        "__builtin_memcpy",
                                        "__builtin_memset",
                                        "tether_set_error",
                                        NULL};

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
    f->name = strdup(title);
    f->next = -1;
    if (!f->title || !f->name) {
        return -2;
    }
    return g->nf++;
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
    int rc = tether_read_file(path, &text, NULL);
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
            if (a < 0 || b < 0) {
                free(text);
                return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "stack: out of memory");
            }
            if (g->ne == g->cape) {
                int nc = g->cape ? g->cape * 2 : 128;
                sedge *p = realloc(g->e, sizeof *p * (size_t)nc);
                if (!p) {
                    free(text);
                    return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "stack: out of memory");
                }
                g->e = p;
                g->cape = nc;
            }
            g->e[g->ne++] = (sedge){a, b};
        }
    }
    free(text);
    return TETHER_OK;
}

static void visit(sgraph *g, int i) {
    sfn *f = &g->f[i];
    if (f->state == 2) {
        return;
    }
    f->state = 1;
    f->bounded = 1;
    f->total = f->bytes;
    if (!f->known) {
        /* __aeabi_*: the Arm run-time ABI helpers (soft-float, division) from libgcc */
        int leaf = strncmp(f->name, "__aeabi_", 8) == 0;
        const char *base = strncmp(f->name, "__builtin_", 10) == 0 ? f->name + 10 : f->name;
        for (int k = 0; leaf_libs[k]; k++) {
            leaf |= strcmp(base, leaf_libs[k]) == 0;
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
        visit(g, c);
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

int tether_stack_analyze(const char *const *ci_files, int nfiles, const char *root,
                         tether_stack_report *out) {
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
        visit(&g, r);
        out->bytes = g.f[r].total;
        out->bounded = g.f[r].bounded;
        snprintf(out->reason, sizeof out->reason, "%s", g.f[r].bounded ? "" : g.f[r].why);
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

/* ---- building ------------------------------------------------------------------------------ */

static int split_flags(char *flags, char **argv, int max) {
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(flags, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save)) {
        argv[n++] = t;
    }
    return n;
}

/* The failed step with the compiler's first lines: the artifact directory (and its build.log)
 * is removed after a failure, so the message itself must say what went wrong. */
static int log_failure(const char *what, const char *log) {
    char *text = NULL;
    char first[400] = "";
    if (tether_read_file(log, &text, NULL) == 0) {
        size_t o = 0;
        int lines = 0;
        for (const char *p = text; *p && lines < 4 && o + 4 < sizeof first; p++) {
            if (*p == '\n') {
                lines++;
                if (lines < 4 && p[1]) {
                    first[o++] = ' ';
                    first[o++] = '|';
                    first[o++] = ' ';
                }
            } else {
                first[o++] = *p;
            }
        }
        first[o] = 0;
        free(text);
    }
    return tether_set_error(TETHER_ERR_IO, "%s failed: %s", what,
                            first[0] ? first : "(the compiler printed nothing)");
}

int tether_build_artifact(const char *dir, const char *prefix, const char *entry,
                          const tether_build_options *o, tether_build_result *out) {
    memset(out, 0, sizeof *out);
    tether_build_options d = {.target = "x86_64-linux", .opt_level = 2};
    if (!o) {
        o = &d;
    }
    const tether_target *t;
    int rc = tether_target_find(o->target ? o->target : "x86_64-linux", &t);
    if (rc) {
        return rc;
    }
    char cc[1024];
    if (!find_program(t->cc, cc, sizeof cc)) {
        return tether_set_error(TETHER_ERR_NOT_FOUND,
                                "target %s needs '%s', which is not installed", t->name, t->cc);
    }
    if (o->opt_level < -1 || o->opt_level > 3) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "opt level %d outside 0..3 or s",
                                o->opt_level);
    }
    char src[1500], obj[1500], ci[1500], log[1500], lib[1500], opt[8], safe_dir[1024];
    /* a relative directory such as "-dir" must not reach the compiler as an option */
    snprintf(safe_dir, sizeof safe_dir, "%s%s", dir[0] == '-' ? "./" : "", dir);
    dir = safe_dir;
    snprintf(src, sizeof src, "%s/%s.c", dir, prefix);
    snprintf(obj, sizeof obj, "%s/%s.o", dir, prefix);
    snprintf(ci, sizeof ci, "%s/%s.ci", dir, prefix);
    snprintf(log, sizeof log, "%s/build.log", dir);
    snprintf(opt, sizeof opt, "-O%c", o->opt_level < 0 ? 's' : (char)('0' + o->opt_level));
    unlink(log);
    char flags[256];
    snprintf(flags, sizeof flags, "%s", t->cflags);
    char *argv[48];
    int n = 0;
    argv[n++] = cc;
    n += split_flags(flags, argv + n, 12);
    char inc[1100];
    snprintf(inc, sizeof inc, "-I%s", dir);
    char *common[] = {"-std=c99",
                      "-Wall",
                      "-Wextra",
                      "-Werror",
                      opt,
                      "-g0",
                      "-ffunction-sections",
                      "-fdata-sections",
                      "-fstack-usage",
                      "-fcallgraph-info=su",
                      inc,
                      "-c",
                      src,
                      "-o",
                      obj};
    for (size_t i = 0; i < sizeof common / sizeof *common; i++) {
        argv[n++] = common[i];
    }
    argv[n] = NULL;
    if (tether_run_logged(argv, log) != 0) {
        return log_failure("compiling the generated C", log);
    }
    if (t->kind == TETHER_TARGET_SHARED) {
        snprintf(out->library, sizeof out->library, "lib%s.so", prefix);
        snprintf(lib, sizeof lib, "%s/%s", dir, out->library);
        char *largv[] = {cc, "-shared", "-o", lib, obj, "-lm", NULL};
        if (tether_run_logged(largv, log) != 0) {
            return log_failure("linking the shared library", log);
        }
    } else {
        snprintf(out->library, sizeof out->library, "lib%s.a", prefix);
        snprintf(lib, sizeof lib, "%s/%s", dir, out->library);
        char ar[1024];
        if (!t->ar || !find_program(t->ar, ar, sizeof ar)) {
            return tether_set_error(TETHER_ERR_NOT_FOUND,
                                    "target %s needs '%s', which is not "
                                    "installed",
                                    t->name, t->ar ? t->ar : "an archiver");
        }
        unlink(lib);
        char *aargv[] = {ar, "rcs", lib, obj, NULL};
        if (tether_run_logged(aargv, log) != 0) {
            return log_failure("archiving the static library", log);
        }
    }
    if ((rc = tether_elf_size(obj, &out->sizes))) {
        return rc;
    }
    const char *cis[1] = {ci};
    if ((rc = tether_stack_analyze(cis, 1, entry, &out->stack))) {
        return rc;
    }
    if (!o->keep_objects) {
        unlink(obj);
    }
    return TETHER_OK;
}
