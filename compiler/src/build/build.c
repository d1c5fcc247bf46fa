/*
 * The build driver: target profiles, running the cross/host compiler on a generated source,
 * ELF section sizes, and the static worst-case stack from -fstack-usage/-fcallgraph-info=su.
 *
 * What must stay true: compilers are run with an argv array (never through a shell) and through
 * tether__child_start (children.c: registered, so a signal handler can end them), their
 * stderr goes to <dir>/build.log; a failed build reports the log's first lines; the stack figure
 * is "bounded" only when every path from the root is known (no recursion, no indirect calls, no
 * dynamic frames, no unknown external callees).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
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
    {"x86_64-linux", "gcc", "-fPIC -mno-red-zone", NULL, TETHER_TARGET_SHARED,
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

/* Runs argv with stdout+stderr appended to log (internal.h), registered for an interrupt. */
int tether__run_logged(char *const *argv, const char *log) {
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    tether__child c;
    int rc = tether__child_start(argv, fd, fd, -1, &c);
    if (fd >= 0) {
        close(fd);
    }
    if (rc) {
        return -1;
    }
    int st = tether__child_wait(&c);
    return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
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
    int rc = tether__read_file(path, &buf, &len);
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

static int split_flags(char *flags, char **argv, int max) {
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(flags, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save)) {
        argv[n++] = t;
    }
    return n;
}

/* ---- run-time library frames ----------------------------------------------------------------
 *
 * Generated code calls a few functions it does not define: memcpy/memset, libm (expf, ...) and,
 * on cores without an FPU, the Arm run-time helpers of libgcc (__aeabi_fadd, ...), which call
 * further helpers. Their frames are taken from the very archives the target's toolchain links
 * (libgcc.a, libm.a, the C library): each archive is disassembled once per process with the
 * toolchain's objdump (-drt: symbol table, instructions, relocations) and every function's frame
 * is the sum of all its stack pointer decrements (push/stmdb/vpush/str ...!/stp ...!/sub sp),
 * on x86-64 plus the return address and the deepest red-zone access below the stack pointer;
 * its callees are the targets of its calls, of its branches that leave the function (tail calls
 * and fall-through into a neighbouring symbol, as in libgcc's assembly) and, for an IFUNC, every
 * implementation its resolver can pick. Summing every decrement over all paths is an upper
 * bound of any single path. An indirect call or a stack decrement by a register makes the
 * function unbounded. */

enum { ISA_ARM, ISA_X86, ISA_A64 };
enum { EV_FRAME, EV_DYN, EV_INDIRECT, EV_REDZONE, EV_BRANCH, EV_CALLSYM, EV_REFSYM };

typedef struct lev {
    int sec;
    uint8_t kind;
    uint64_t addr;
    int64_t n; /* bytes (FRAME, REDZONE), target address (BRANCH) */
    char *sym; /* CALLSYM, REFSYM */
} lev;

typedef struct lsec {
    int member;
    char *name;
    int ev0, ev1; /* events [ev0, ev1) */
} lsec;

typedef struct lfunc {
    char *name;
    int member, sec, global, weak, ifunc;
    uint64_t lo, hi;
    int state; /* 0 not computed, 1 computed */
    int64_t bytes;
    int dynamic, indirect;
    int *callees;
    int ncallees;
} lfunc;

typedef struct libset {
    char target[64];
    int isa;
    char objdump[1024];
    char archives[6][1024];
    int narchives, loaded; /* archives [0, loaded) are parsed */
    int error;             /* an archive could not be read */
    char errmsg[1200];
    lev *ev;
    int nev, capev;
    lsec *sec;
    int nsec, capsec;
    lfunc *fn;
    int nfn, capfn;
    int nmembers;
    int *hash; /* open addressing over global functions, -1 empty */
    int hcap;
} libset;

static libset *lib_cache[8];
static int lib_ncache;

#define GROW(ptr, n, cap, init)                                                                    \
    do {                                                                                           \
        if ((n) == (cap)) {                                                                        \
            int nc_ = (cap) ? (cap)*2 : (init);                                                    \
            void *p_ = realloc((ptr), sizeof *(ptr) * (size_t)nc_);                                \
            if (!p_) {                                                                             \
                return -1;                                                                         \
            }                                                                                      \
            (ptr) = p_;                                                                            \
            (cap) = nc_;                                                                           \
        }                                                                                          \
    } while (0)

/* Runs argv and returns what it wrote to stdout (malloc'd, NUL-terminated); -1 on failure. */
static int capture(char *const *argv, char **out, size_t *outlen) {
    int fd[2];
    *out = NULL;
    if (pipe(fd) != 0) {
        return -1;
    }
    int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
    tether__child c;
    int rc = tether__child_start(argv, fd[1], nul, fd[0], &c);
    if (nul >= 0) {
        close(nul);
    }
    close(fd[1]);
    if (rc) {
        close(fd[0]);
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int ok = buf != NULL;
    for (;;) {
        if (ok && len + 4096 + 1 > cap) {
            char *p = realloc(buf, cap * 2);
            if (!p) {
                ok = 0;
            } else {
                buf = p;
                cap *= 2;
            }
        }
        char sink[4096];
        ssize_t r = ok ? read(fd[0], buf + len, cap - len - 1) : read(fd[0], sink, sizeof sink);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break;
        }
        if (ok) {
            len += (size_t)r;
        }
    }
    close(fd[0]);
    int st = tether__child_wait(&c);
    if (!ok || st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        free(buf);
        return -1;
    }
    buf[len] = 0;
    *out = buf;
    if (outlen) {
        *outlen = len;
    }
    return 0;
}

static unsigned hash_name(const char *s) {
    unsigned h = 2166136261u;
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 16777619u;
    }
    return h;
}

static int lib_find_global(const libset *L, const char *name) {
    if (!L->hcap) {
        return -1;
    }
    for (unsigned h = hash_name(name) & (unsigned)(L->hcap - 1);;
         h = (h + 1) & (unsigned)(L->hcap - 1)) {
        int i = L->hash[h];
        if (i < 0) {
            return -1;
        }
        if (strcmp(L->fn[i].name, name) == 0) {
            return i;
        }
    }
}

/* Global (or weak) functions by name; the first strong definition in link order wins. */
static int lib_index(libset *L) {
    int need = 16;
    while (need < L->nfn * 2 + 16) {
        need *= 2;
    }
    int *h = malloc(sizeof *h * (size_t)need);
    if (!h) {
        return -1;
    }
    for (int i = 0; i < need; i++) {
        h[i] = -1;
    }
    free(L->hash);
    L->hash = h;
    L->hcap = need;
    for (int i = 0; i < L->nfn; i++) {
        const lfunc *f = &L->fn[i];
        if (!f->global) {
            continue;
        }
        unsigned k = hash_name(f->name) & (unsigned)(need - 1);
        while (h[k] >= 0 && strcmp(L->fn[h[k]].name, f->name) != 0) {
            k = (k + 1) & (unsigned)(need - 1);
        }
        if (h[k] < 0 || (L->fn[h[k]].weak && !f->weak)) {
            h[k] = i;
        }
    }
    return 0;
}

static int sec_id(libset *L, int member, const char *name) {
    for (int i = L->nsec - 1; i >= 0 && L->sec[i].member == member; i--) {
        if (strcmp(L->sec[i].name, name) == 0) {
            return i;
        }
    }
    GROW(L->sec, L->nsec, L->capsec, 64);
    lsec *s = &L->sec[L->nsec];
    s->member = member;
    s->name = strdup(name);
    s->ev0 = s->ev1 = -1;
    return s->name ? L->nsec++ : -1;
}

static int add_ev(libset *L, int sec, int kind, uint64_t addr, int64_t n, const char *sym) {
    GROW(L->ev, L->nev, L->capev, 1024);
    lev *e = &L->ev[L->nev];
    e->sec = sec;
    e->kind = (uint8_t)kind;
    e->addr = addr;
    e->n = n;
    e->sym = NULL;
    if (sym) {
        e->sym = strdup(sym);
        if (!e->sym) {
            return -1;
        }
    }
    if (L->sec[sec].ev0 < 0) {
        L->sec[sec].ev0 = L->nev;
    }
    L->sec[sec].ev1 = L->nev + 1;
    L->nev++;
    return 0;
}

/* Register count of an Arm register list "{r4, r5, lr}" / "{d8-d15}"; *width gets 8 for d
 * registers. */
static int reglist(const char *ops, int *width) {
    const char *p = strchr(ops, '{');
    *width = 4;
    if (!p) {
        return 0;
    }
    int n = 0;
    p++;
    while (*p && *p != '}') {
        while (*p == ' ' || *p == ',') {
            p++;
        }
        if (*p == '}' || !*p) {
            break;
        }
        char r0 = *p;
        if (r0 == 'd') {
            *width = 8;
        }
        const char *tok = p;
        while (*p && *p != ',' && *p != '}') {
            p++;
        }
        const char *dash = memchr(tok, '-', (size_t)(p - tok));
        if (dash && (r0 == 'd' || r0 == 's' || r0 == 'r')) {
            long a = strtol(tok + 1, NULL, 10), b = strtol(dash + 2, NULL, 10);
            n += b >= a ? (int)(b - a + 1) : 1;
        } else {
            n++;
        }
    }
    return n;
}

/* Numeric immediate after '#' (Arm) or '$' (x86) at p; handles 0x and negative values. */
static int64_t imm_at(const char *p) {
    while (*p == '#' || *p == '$' || *p == ' ') {
        p++;
    }
    int neg = *p == '-';
    unsigned long long v = strtoull(p + neg, NULL, 0);
    return neg ? -(int64_t)v : (int64_t)v;
}

/* Branch target: the hex address before " <" (or the last operand). */
static int branch_target(const char *ops, uint64_t *out) {
    const char *lt = strstr(ops, " <");
    const char *end = lt ? lt : ops + strlen(ops);
    const char *b = end;
    while (b > ops && b[-1] != ' ' && b[-1] != ',' && b[-1] != '\t') {
        b--;
    }
    if (b == end || !isxdigit((unsigned char)*b)) {
        return 0;
    }
    char *e;
    unsigned long long v = strtoull(b, &e, 16);
    if (e != end) {
        return 0;
    }
    *out = v;
    return 1;
}

static int is_cond_branch_arm(const char *mn) {
    static const char *const cc[] = {"eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs",
                                     "vc", "hi", "ls", "ge", "lt", "gt", "le", "al"};
    if (mn[0] != 'b') {
        return 0;
    }
    char base[32];
    snprintf(base, sizeof base, "%.15s", mn + 1);
    char *dot = strchr(base, '.');
    if (dot) {
        *dot = 0;
    }
    if (!base[0]) {
        return 1; /* b, b.n, b.w */
    }
    for (size_t i = 0; i < sizeof cc / sizeof *cc; i++) {
        if (strcmp(base, cc[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

/* One instruction: records its stack and control-flow effect. Returns 1 when it is a call or
 * branch (so that a relocation on it names a callee), 0 otherwise, -1 on out of memory. */
static int lib_insn(libset *L, int sec, uint64_t addr, char *mn, char *ops) {
    int rc = 0;
    if (L->isa == ISA_ARM) {
        char *c = strstr(ops, "\t@");
        if (c) {
            *c = 0;
        }
        if (strcmp(mn, "push") == 0 || strcmp(mn, "push.w") == 0 || strcmp(mn, "vpush") == 0 ||
            ((strncmp(mn, "stmdb", 5) == 0 || strncmp(mn, "stmfd", 5) == 0 ||
              strncmp(mn, "vstmdb", 6) == 0) &&
             strncmp(ops, "sp!", 3) == 0)) {
            int w, n = reglist(ops, &w);
            if (strchr(ops, '{') && strstr(ops, "{s")) {
                w = 4;
            }
            rc = add_ev(L, sec, EV_FRAME, addr, (int64_t)n * w, NULL);
        } else if (strncmp(mn, "str", 3) == 0 && strstr(ops, "[sp, #-") && strchr(ops, '!')) {
            rc = add_ev(L, sec, EV_FRAME, addr, -imm_at(strstr(ops, "[sp, #-") + 5), NULL);
        } else if ((strncmp(mn, "sub", 3) == 0) && strncmp(ops, "sp,", 3) == 0) {
            const char *last = strrchr(ops, ',');
            if (last && strchr(last, '#')) {
                rc = add_ev(L, sec, EV_FRAME, addr, imm_at(strchr(last, '#')), NULL);
            } else {
                rc = add_ev(L, sec, EV_DYN, addr, 0, NULL);
            }
        } else if (strcmp(mn, "add") == 0 && strncmp(ops, "sp, #-", 6) == 0) {
            rc = add_ev(L, sec, EV_FRAME, addr, -imm_at(ops + 4), NULL);
        } else if (strcmp(mn, "bl") == 0 || strcmp(mn, "blx") == 0 || strcmp(mn, "cbz") == 0 ||
                   strcmp(mn, "cbnz") == 0 || is_cond_branch_arm(mn)) {
            uint64_t t;
            if (branch_target(ops, &t)) {
                rc = add_ev(L, sec, EV_BRANCH, addr, (int64_t)t, NULL);
                rc = rc ? rc : 1;
            } else if (strncmp(mn, "bl", 2) == 0) {
                rc = add_ev(L, sec, EV_INDIRECT, addr, 0, NULL); /* blx rN */
            }
        } else if (strncmp(mn, "bx", 2) == 0 && strcmp(ops, "lr") != 0) {
            rc = add_ev(L, sec, EV_INDIRECT, addr, 0, NULL);
        }
        /* `mov pc, rN` / `ldr pc, [rN, ...]` are Thumb-1 switch tables inside the function */
        return rc;
    }
    if (L->isa == ISA_X86) {
        char *c = strstr(ops, " #");
        if (c) {
            *c = 0;
        }
        const char *rsp = strstr(ops, "(%rsp");
        if (rsp && rsp > ops && rsp[-1] != ',' && rsp[-1] != ' ' && rsp[-1] != '(') {
            const char *b = rsp;
            while (b > ops && (isxdigit((unsigned char)b[-1]) || b[-1] == 'x')) {
                b--;
            }
            if (b > ops && b[-1] == '-') {
                rc = add_ev(L, sec, EV_REDZONE, addr, (int64_t)strtoll(b, NULL, 16), NULL);
                if (rc) {
                    return rc;
                }
            }
        }
        if (strncmp(mn, "push", 4) == 0) {
            rc = add_ev(L, sec, EV_FRAME, addr, 8, NULL);
        } else if (strncmp(mn, "sub", 3) == 0 && strstr(ops, ",%rsp") && !strstr(ops, "(")) {
            rc = ops[0] == '$' ? add_ev(L, sec, EV_FRAME, addr, imm_at(ops), NULL)
                               : add_ev(L, sec, EV_DYN, addr, 0, NULL);
        } else if (strncmp(mn, "add", 3) == 0 && strstr(ops, ",%rsp") && ops[0] == '$') {
            int64_t v = imm_at(ops);
            rc = v < 0 ? add_ev(L, sec, EV_FRAME, addr, -v, NULL) : 0;
        } else if (strncmp(mn, "and", 3) == 0 && strstr(ops, ",%rsp") && ops[0] == '$') {
            int64_t v = imm_at(ops);
            rc = add_ev(L, sec, EV_FRAME, addr, v < 0 ? -v : 64, NULL);
        } else if (strncmp(mn, "lea", 3) == 0 && strstr(ops, ",%rsp")) {
            if (ops[0] == '-' && strstr(ops, "(%rsp)")) {
                rc = add_ev(L, sec, EV_FRAME, addr, (int64_t)strtoll(ops + 1, NULL, 16), NULL);
            }
        } else if (strncmp(mn, "enter", 5) == 0) {
            rc = add_ev(L, sec, EV_FRAME, addr, imm_at(ops) + 8, NULL);
        } else if (strncmp(mn, "call", 4) == 0) {
            uint64_t t;
            if (ops[0] == '*') {
                rc = 2; /* a relocation makes it a call of a named function, else indirect */
            } else if (branch_target(ops, &t)) {
                rc = add_ev(L, sec, EV_BRANCH, addr, (int64_t)t, NULL);
                rc = rc ? rc : 1;
            }
        } else if (mn[0] == 'j') {
            uint64_t t;
            if (ops[0] == '*') {
                rc = 3; /* jump table or, with a relocation, a tail call through the GOT */
            } else if (branch_target(ops, &t)) {
                rc = add_ev(L, sec, EV_BRANCH, addr, (int64_t)t, NULL);
                rc = rc ? rc : 1;
            }
        }
        return rc;
    }
    /* AArch64 */
    if ((strncmp(mn, "stp", 3) == 0 || strncmp(mn, "str", 3) == 0) && strstr(ops, "[sp, #-") &&
        strchr(ops, '!')) {
        rc = add_ev(L, sec, EV_FRAME, addr, -imm_at(strstr(ops, "[sp, #-") + 5), NULL);
    } else if (strcmp(mn, "sub") == 0 && strncmp(ops, "sp, sp, ", 8) == 0) {
        if (ops[8] == '#') {
            int64_t v = imm_at(ops + 8);
            rc = add_ev(L, sec, EV_FRAME, addr, strstr(ops, "lsl #12") ? v << 12 : v, NULL);
        } else {
            rc = add_ev(L, sec, EV_DYN, addr, 0, NULL);
        }
    } else if (strcmp(mn, "blr") == 0) {
        rc = add_ev(L, sec, EV_INDIRECT, addr, 0, NULL);
    } else if (strcmp(mn, "bl") == 0 || strcmp(mn, "b") == 0 || strncmp(mn, "b.", 2) == 0 ||
               strcmp(mn, "cbz") == 0 || strcmp(mn, "cbnz") == 0 || strcmp(mn, "tbz") == 0 ||
               strcmp(mn, "tbnz") == 0) {
        uint64_t t;
        if (branch_target(ops, &t)) {
            rc = add_ev(L, sec, EV_BRANCH, addr, (int64_t)t, NULL);
            rc = rc ? rc : 1;
        }
    }
    return rc;
}

/* Parses `objdump -drt` output of one archive. */
static int lib_parse(libset *L, char *text) {
    int member = -1, sec = -1, in_syms = 0, last_branch = 0, pending = 0, member_ifunc = 0;
    uint64_t last_addr = 0;
    char *save = NULL;
    for (char *ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        if (strstr(ln, ":     file format ")) {
            member = L->nmembers++;
            member_ifunc = 0;
            sec = -1;
            in_syms = 0;
            continue;
        }
        if (member < 0) {
            continue;
        }
        if (strncmp(ln, "SYMBOL TABLE:", 13) == 0) {
            in_syms = 1;
            continue;
        }
        if (strncmp(ln, "Disassembly of section ", 23) == 0) {
            in_syms = 0;
            char name[256];
            snprintf(name, sizeof name, "%s", ln + 23);
            char *colon = strrchr(name, ':');
            if (colon) {
                *colon = 0;
            }
            if ((sec = sec_id(L, member, name)) < 0) {
                return -1;
            }
            continue;
        }
        if (in_syms) {
            /* VALUE FLAGS SECTION\tSIZE [.hidden] NAME */
            char *tab = strchr(ln, '\t');
            if (!tab || !isxdigit((unsigned char)ln[0])) {
                continue;
            }
            char *sp = strchr(ln, ' ');
            if (!sp || sp > tab) {
                continue;
            }
            *tab = 0;
            char *flags = sp + 1;
            /* the flags are 7 characters, then a space and the section name */
            if (strlen(flags) < 9) {
                continue;
            }
            char fl[8];
            memcpy(fl, flags, 7);
            fl[7] = 0;
            const char *sname = flags + 8;
            int isfn = strchr(fl, 'F') != NULL, isifunc = strchr(fl, 'i') != NULL;
            if ((!isfn && !isifunc) || strcmp(sname, "*UND*") == 0 || strcmp(sname, "*ABS*") == 0) {
                continue;
            }
            char *size_s = tab + 1;
            char *name = strrchr(size_s, ' ');
            name = name ? name + 1 : size_s;
            GROW(L->fn, L->nfn, L->capfn, 256);
            lfunc *f = &L->fn[L->nfn];
            memset(f, 0, sizeof *f);
            f->name = strdup(name);
            f->member = member;
            if (!f->name || (f->sec = sec_id(L, member, sname)) < 0) {
                return -1;
            }
            f->global =
                strchr(fl, 'g') != NULL || strchr(fl, 'w') != NULL || strchr(fl, 'u') != NULL;
            f->weak = strchr(fl, 'w') != NULL;
            f->ifunc = isifunc;
            member_ifunc |= isifunc;
            f->lo = strtoull(ln, NULL, 16);
            f->hi = f->lo + strtoull(size_s, NULL, 16);
            L->nfn++;
            continue;
        }
        if (sec < 0) {
            continue;
        }
        /* instruction "   addr:\tmnemonic\toperands" or relocation "\t\t\taddr: R_TYPE\tsym" */
        char *p = ln;
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        char *e;
        unsigned long long addr = strtoull(p, &e, 16);
        if (e == p || *e != ':') {
            continue;
        }
        p = e + 1;
        if (p[0] == ' ' && p[1] == 'R' && p[2] == '_') {
            char *t = strchr(p, '\t');
            if (!t) {
                continue;
            }
            char sym[256];
            snprintf(sym, sizeof sym, "%s", t + 1);
            /* a relocation inside the call/branch instruction just seen (not a literal) */
            if (last_branch && addr >= last_addr &&
                addr - last_addr < (L->isa == ISA_X86 ? 15u : 4u) && !strstr(p, "_ABS")) {
                /* the call/branch's encoded target is a placeholder: the relocation names it */
                if (L->nev > 0 && L->ev[L->nev - 1].kind == EV_BRANCH &&
                    L->ev[L->nev - 1].addr == last_addr && L->ev[L->nev - 1].sec == sec) {
                    L->nev--;
                    L->sec[sec].ev1 = L->nev;
                    if (L->sec[sec].ev0 >= L->sec[sec].ev1) {
                        L->sec[sec].ev0 = L->sec[sec].ev1 = -1;
                    }
                }
                if (add_ev(L, sec, EV_CALLSYM, last_addr, 0, sym)) {
                    return -1;
                }
                last_branch = 0;
                pending = 0;
            } else if (member_ifunc && add_ev(L, sec, EV_REFSYM, addr, 0, sym)) {
                return -1; /* address references only matter in IFUNC resolvers */
            }
            continue;
        }
        if (*p != '\t') {
            continue;
        }
        /* an x86 indirect call/jump that got no relocation: indirect call / jump table */
        if (pending == 2 && add_ev(L, sec, EV_INDIRECT, last_addr, 0, NULL)) {
            return -1;
        }
        pending = 0;
        p++;
        char mn[32];
        size_t k = 0;
        while (*p && *p != ' ' && *p != '\t' && k + 1 < sizeof mn) {
            mn[k++] = *p++;
        }
        mn[k] = 0;
        static const char *const prefixes[] = {"notrack", "bnd",    "rep", "repz", "repnz",
                                               "lock",    "data16", "cs",  "ds",   "addr32"};
        for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
            if (strcmp(mn, prefixes[i]) == 0) {
                while (*p == ' ') {
                    p++;
                }
                k = 0;
                while (*p && *p != ' ' && *p != '\t' && k + 1 < sizeof mn) {
                    mn[k++] = *p++;
                }
                mn[k] = 0;
                break;
            }
        }
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        int r = lib_insn(L, sec, addr, mn, p);
        if (r < 0) {
            return -1;
        }
        last_branch = r > 0;
        pending = r >= 2 ? r : 0;
        last_addr = addr;
    }
    if (pending == 2 && sec >= 0 && add_ev(L, sec, EV_INDIRECT, last_addr, 0, NULL)) {
        return -1;
    }
    return 0;
}

/* Loads the next archive of L; 0 ok (or nothing left), -1 when it could not be read. */
static int lib_load_next(libset *L) {
    if (L->loaded >= L->narchives) {
        return 0;
    }
    const char *path = L->archives[L->loaded++];
    char *argv[] = {L->objdump, "-drt", "--no-show-raw-insn", (char *)path, NULL};
    char *text;
    if (capture(argv, &text, NULL) != 0) {
        L->error = 1;
        snprintf(L->errmsg, sizeof L->errmsg, "%s -d %s failed", L->objdump, path);
        return -1;
    }
    int rc = lib_parse(L, text);
    free(text);
    if (rc == 0) {
        rc = lib_index(L);
    }
    if (rc) {
        L->error = 1;
        snprintf(L->errmsg, sizeof L->errmsg, "out of memory reading %s", path);
    }
    return rc;
}

/* The archive a compiler driver links for `file` (linker scripts like Debian's libm.a, which
 * is "GROUP ( libm-2.36.a libmvec.a )", are followed one level). */
static void add_archive(libset *L, const char *cc, const char *cflags, const char *what) {
    char flags[256], opt[160];
    snprintf(flags, sizeof flags, "%s", cflags);
    char *argv[24];
    int n = 0;
    argv[n++] = (char *)cc;
    n += split_flags(flags, argv + n, 12);
    if (strcmp(what, "libgcc") == 0) {
        argv[n++] = "-print-libgcc-file-name";
    } else {
        snprintf(opt, sizeof opt, "-print-file-name=%s", what);
        argv[n++] = opt;
    }
    argv[n] = NULL;
    char *out;
    if (capture(argv, &out, NULL) != 0) {
        return;
    }
    char *nl = strchr(out, '\n');
    if (nl) {
        *nl = 0;
    }
    char *text = NULL;
    if (strchr(out, '/') && access(out, R_OK) == 0 && tether__read_file(out, &text, NULL) == 0) {
        if (strncmp(text, "!<arch>", 7) == 0) {
            if (L->narchives < 6) {
                snprintf(L->archives[L->narchives++], sizeof L->archives[0], "%s", out);
            }
        } else if (strstr(text, "GROUP")) {
            /* every absolute path ending in .a inside the script */
            for (char *p = strchr(text, '/'); p; p = strchr(p + 1, '/')) {
                if (p > text && p[-1] != ' ' && p[-1] != '(') {
                    continue;
                }
                size_t len = strcspn(p, " \t\n)");
                if (len > 2 && strncmp(p + len - 2, ".a", 2) == 0 && L->narchives < 6) {
                    snprintf(L->archives[L->narchives++], sizeof L->archives[0], "%.*s", (int)len,
                             p);
                }
                p += len - 1;
            }
        }
    }
    free(text);
    free(out);
}

/* The libraries of a target (cached per process): the compiler's libgcc, libm, and the C
 * library the images link (newlib-nano for the bare-metal profiles, as the MCU firmware does;
 * glibc's static archive, the same code as its shared one, for Linux). */
static libset *lib_for_target(const tether_target *t) {
    for (int i = 0; i < lib_ncache; i++) {
        if (strcmp(lib_cache[i]->target, t->name) == 0) {
            return lib_cache[i];
        }
    }
    if (lib_ncache == (int)(sizeof lib_cache / sizeof *lib_cache)) {
        return NULL;
    }
    libset *L = calloc(1, sizeof *L);
    if (!L) {
        return NULL;
    }
    snprintf(L->target, sizeof L->target, "%s", t->name);
    L->isa = strstr(t->cc, "arm-none-eabi") ? ISA_ARM
             : strstr(t->cc, "aarch64")     ? ISA_A64
                                            : ISA_X86;
    char cc[1024];
    if (find_program(t->cc, cc, sizeof cc)) {
        size_t len = strlen(cc);
        if (len >= 3 && strcmp(cc + len - 3, "gcc") == 0) {
            snprintf(L->objdump, sizeof L->objdump, "%.*sobjdump", (int)(len - 3), cc);
        }
        add_archive(L, cc, t->cflags, "libgcc");
        add_archive(L, cc, t->cflags, "libm.a");
        add_archive(L, cc, t->cflags, t->kind == TETHER_TARGET_STATIC ? "libc_nano.a" : "libc.a");
    }
    if (!L->objdump[0] || access(L->objdump, X_OK) != 0) {
        L->error = 1;
        snprintf(L->errmsg, sizeof L->errmsg, "no objdump for %s", t->cc);
    }
    lib_cache[lib_ncache++] = L;
    return L;
}

/* A global function of the target's libraries by name, loading archives as needed. */
static int lib_lookup(libset *L, const char *name) {
    for (;;) {
        int i = lib_find_global(L, name);
        if (i >= 0 || L->error || L->loaded >= L->narchives) {
            return i;
        }
        if (lib_load_next(L) != 0) {
            return -1;
        }
    }
}

static int add_callee(lfunc *f, int c) {
    for (int i = 0; i < f->ncallees; i++) {
        if (f->callees[i] == c) {
            return 0;
        }
    }
    int *p = realloc(f->callees, sizeof *p * (size_t)(f->ncallees + 1));
    if (!p) {
        return -1;
    }
    f->callees = p;
    p[f->ncallees++] = c;
    return 0;
}

/* The function of section `sec` at address a: one starting there, else one containing it. */
static int lib_func_at(const libset *L, int sec, uint64_t a) {
    int inside = -1;
    for (int i = 0; i < L->nfn; i++) {
        const lfunc *g = &L->fn[i];
        if (g->sec != sec) {
            continue;
        }
        if (g->lo == a) {
            return i;
        }
        if (a > g->lo && a < g->hi && inside < 0) {
            inside = i;
        }
    }
    return inside;
}

/* Resolves a relocation symbol ("name", "name+0x1c", "name-0x4", a section name) seen in
 * member m to callees of function id. A call (must) of something no analysed library defines
 * marks the function; an address reference (an IFUNC resolver's candidates) only looks at
 * what is loaded. Returns -1 on out of memory. */
static int lib_resolve(libset *L, int id, int m, const char *sym, int must) {
    char name[256];
    snprintf(name, sizeof name, "%s", sym);
    char *pm = strpbrk(name + 1, "+-");
    if (pm) {
        *pm = 0;
    }
    for (int i = 0; i < L->nfn; i++) { /* a local function of the same member */
        if (L->fn[i].member == m && !L->fn[i].global && strcmp(L->fn[i].name, name) == 0) {
            return add_callee(&L->fn[id], i);
        }
    }
    for (int s = 0; s < L->nsec; s++) { /* a section symbol: any function of that section */
        if (L->sec[s].member == m && strcmp(L->sec[s].name, name) == 0) {
            for (int i = 0; i < L->nfn; i++) {
                if (L->fn[i].sec == s && i != id && add_callee(&L->fn[id], i)) {
                    return -1;
                }
            }
            return 0;
        }
    }
    int g = must ? lib_lookup(L, name) : lib_find_global(L, name);
    if (g >= 0) {
        return g == id ? 0 : add_callee(&L->fn[id], g);
    }
    if (must) {
        L->fn[id].indirect = 2; /* calls something no analysed library defines */
    }
    return 0;
}

static int lib_compute(libset *L, int id) {
    lfunc *f = &L->fn[id];
    if (f->state) {
        return 0;
    }
    f->state = 1;
    int sec = f->sec, member = f->member;
    uint64_t lo = f->lo, hi = f->hi;
    if (hi <= lo) { /* no size: up to the next symbol of the section, and on into it */
        hi = UINT64_MAX;
        int next = -1;
        for (int i = 0; i < L->nfn; i++) {
            if (L->fn[i].sec == sec && L->fn[i].lo > lo && L->fn[i].lo < hi) {
                hi = L->fn[i].lo;
                next = i;
            }
        }
        if (next >= 0 && add_callee(&L->fn[id], next)) {
            return -1;
        }
    }
    int64_t bytes = L->isa == ISA_X86 ? 8 : 0, rz = 0;
    const lsec *s = &L->sec[sec];
    for (int k = s->ev0; k >= 0 && k < s->ev1; k++) {
        const lev *e = &L->ev[k];
        if (e->sec != sec || e->addr < lo || e->addr >= hi) {
            continue;
        }
        f = &L->fn[id];
        switch (e->kind) {
        case EV_FRAME:
            bytes += e->n > 0 ? e->n : 0;
            break;
        case EV_DYN:
            f->dynamic = 1;
            break;
        case EV_INDIRECT:
            f->indirect = 1;
            break;
        case EV_REDZONE:
            rz = e->n > rz ? e->n : rz;
            break;
        case EV_BRANCH:
            if ((uint64_t)e->n < lo || (uint64_t)e->n >= hi) {
                int c = lib_func_at(L, sec, (uint64_t)e->n);
                if (c >= 0 && c != id && add_callee(f, c)) {
                    return -1;
                }
            }
            break;
        case EV_CALLSYM:
            if (lib_resolve(L, id, member, e->sym, 1)) {
                return -1;
            }
            break;
        case EV_REFSYM:
            if (f->ifunc && lib_resolve(L, id, member, e->sym, 0)) {
                return -1;
            }
            break;
        }
        s = &L->sec[sec]; /* lib_resolve may load archives (reallocating) */
    }
    f = &L->fn[id];
    f->bytes = f->ifunc ? 0 : bytes + rz; /* a resolver runs at load time, not on this stack */
    return 0;
}

/* ---- static stack ------------------------------------------------------------------------- */

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

/* Provided by the runtime the module runs in (tetherd, the MCU firmware), not by a toolchain
 * library, and reached only on argument errors of the packed ABI: always counted as 0. */
static const char *const runtime_leaves[] = {"tether_set_error", NULL};

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
        int id = g->f[i].lib ? g->f[i].lib - 1 : lib_lookup(L, base);
        if (id < 0) {
            continue;
        }
        if (lib_compute(L, id)) {
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
            leaf |= strncmp(f->name, "__aeabi_", 8) == 0 || in_list(leaf_libs, base);
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
    }
    libset *L = NULL;
    if (!rc && target) {
        L = lib_for_target(target);
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
    libset *L = lib_for_target(target);
    if (!L) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "stack: out of memory");
    }
    int id = lib_lookup(L, name);
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

/* ---- building ------------------------------------------------------------------------------ */

/* The failed step with the compiler's first lines: the artifact directory (and its build.log)
 * is removed after a failure, so the message itself must say what went wrong. */
static int log_failure(const char *what, const char *log) {
    char *text = NULL;
    char first[400] = "";
    if (tether__read_file(log, &text, NULL) == 0) {
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

int tether_build_opt_level(const tether_build_options *o) {
    if (o->opt_level != TETHER_OPT_DEFAULT) {
        return o->opt_level;
    }
    const tether_target *t;
    if (tether_target_find(o->target ? o->target : "x86_64-linux", &t) != TETHER_OK) {
        return 2;
    }
    return t->kind == TETHER_TARGET_SHARED ? 3 : 2;
}

/* A -march/-mcpu value: letters, digits and . _ + - only (it reaches the compiler's argv). */
static int cpu_name_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '-') {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '+' || c == '-')) {
            return 0;
        }
    }
    return 1;
}

int tether_build_artifact(const char *dir, const char *prefix, const char *entry,
                          const tether_build_options *o, tether_build_result *out) {
    memset(out, 0, sizeof *out);
    tether_build_options d = {.target = "x86_64-linux", .opt_level = TETHER_OPT_DEFAULT};
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
    int level = tether_build_opt_level(o);
    if (level < -1 || level > 3) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "opt level %d outside 0..3 or s", level);
    }
    char cpu_flag[80] = "";
    if (o->cpu && o->cpu[0]) {
        if (!cpu_name_ok(o->cpu)) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "cpu '%s' is not a -march/-mcpu value (letters, digits, "
                                    ". _ + -)",
                                    o->cpu);
        }
        snprintf(cpu_flag, sizeof cpu_flag, "%s=%s",
                 t->kind == TETHER_TARGET_SHARED ? "-march" : "-mcpu", o->cpu);
    }
    char src[1500], obj[1500], ci[1500], log[1500], lib[1500], opt[8], safe_dir[1024];
    /* a relative directory such as "-dir" must not reach the compiler as an option */
    snprintf(safe_dir, sizeof safe_dir, "%s%s", dir[0] == '-' ? "./" : "", dir);
    dir = safe_dir;
    snprintf(src, sizeof src, "%s/%s.c", dir, prefix);
    snprintf(obj, sizeof obj, "%s/%s.o", dir, prefix);
    snprintf(ci, sizeof ci, "%s/%s.ci", dir, prefix);
    snprintf(log, sizeof log, "%s/build.log", dir);
    snprintf(opt, sizeof opt, "-O%c", level < 0 ? 's' : (char)('0' + level));
    unlink(log);
    char flags[256];
    snprintf(flags, sizeof flags, "%s%s%s", t->cflags, cpu_flag[0] ? " " : "", cpu_flag);
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
                      "-ffp-contract=fast", /* multiply-adds fuse where the CPU has FMA */
                      "-g0",
                      "-ffunction-sections",
                      "-fdata-sections",
                      "-fstack-usage",
                      "-fcallgraph-info=su",
                      "-pipe", /* no assembler file in $TMPDIR (or left there by a kill) */
                      inc,
                      "-c",
                      src,
                      "-o",
                      obj};
    for (size_t i = 0; i < sizeof common / sizeof *common; i++) {
        argv[n++] = common[i];
    }
    argv[n] = NULL;
    if (tether__run_logged(argv, log) != 0) {
        return log_failure("compiling the generated C", log);
    }
    if (t->kind == TETHER_TARGET_SHARED) {
        snprintf(out->library, sizeof out->library, "lib%s.so", prefix);
        snprintf(lib, sizeof lib, "%s/%s", dir, out->library);
        char *largv[] = {cc, "-shared", "-o", lib, obj, "-lm", NULL};
        if (tether__run_logged(largv, log) != 0) {
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
        if (tether__run_logged(aargv, log) != 0) {
            return log_failure("archiving the static library", log);
        }
    }
    if ((rc = tether_elf_size(obj, &out->sizes))) {
        return rc;
    }
    const char *cis[1] = {ci};
    if ((rc = tether_stack_analyze_target(cis, 1, entry, t, &out->stack))) {
        return rc;
    }
    if (!o->keep_objects) {
        unlink(obj);
    }
    return TETHER_OK;
}
