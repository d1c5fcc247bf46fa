/*
 * The build driver's run-time library frames: the stack each libgcc/libm/libc function that
 * generated code calls needs, from the archives the target's toolchain links (the static stack
 * analysis, stack.c, adds them to the module's own frames).
 *
 * Generated code calls a few functions it does not define: memcpy/memset, libm (expf, ...) and,
 * on cores without an FPU, the Arm run-time helpers of libgcc (__aeabi_fadd, ...), which call
 * further helpers. Their frames are taken from the very archives the target's toolchain links
 * (libgcc.a, libm.a, the C library): each archive is disassembled once per process with the
 * toolchain's objdump (-drt: symbol table, instructions, relocations) and every function's frame
 * is the sum of all its stack pointer decrements (push/stmdb/vpush/str ...!/stp ...!/sub sp;
 * RISC-V: addi sp,sp,-N),
 * on x86-64 plus the return address and the deepest red-zone access below the stack pointer;
 * its callees are the targets of its calls, of its branches that leave the function (tail calls
 * and fall-through into a neighbouring symbol, as in libgcc's assembly) and, for an IFUNC, every
 * implementation its resolver can pick. Summing every decrement over all paths is an upper
 * bound of any single path. An indirect call or a stack decrement by a register makes the
 * function unbounded.
 *
 * What must stay true: each target's archives are disassembled at most once per process (the
 * cache of tether__lib_for_target), and across processes only while the on-disk cache
 * (libframes_cache.c) has no entry for that objdump and archive; a function whose frame cannot be
 * known (an indirect call, a dynamic decrement, an unreadable archive) is reported unbounded, never
 * counted as 0.
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
#include "build_internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

typedef tether__libset libset;
typedef tether__lfunc lfunc;

enum { ISA_ARM, ISA_X86, ISA_A64, ISA_RV };
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

static libset *lib_cache[16]; /* one per target profile (build.c has 10) */
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
    if (L->isa == ISA_RV) {
        if (strncmp(ops, "t1,", 3) == 0 && strcmp(mn, "li") != 0 && strcmp(mn, "c.li") != 0) {
            L->rv_t1_known = 0; /* another write to t1 */
        }
        /* objdump prints addi as "add" and c.addi16sp as "add sp,sp,-N" */
        if ((strcmp(mn, "add") == 0 || strcmp(mn, "addi") == 0 || strcmp(mn, "c.addi16sp") == 0 ||
             strcmp(mn, "c.addi") == 0) &&
            strncmp(ops, "sp,sp,", 6) == 0) {
            const char *v = ops + 6;
            if (*v == '-' || isdigit((unsigned char)*v)) {
                int64_t x = strtoll(v, NULL, 0);
                rc = x < 0 ? add_ev(L, sec, EV_FRAME, addr, -x, NULL) : 0;
            } else {
                rc = add_ev(L, sec, EV_DYN, addr, 0, NULL); /* sp += register */
            }
        } else if (strcmp(mn, "sub") == 0 && strncmp(ops, "sp,sp,", 6) == 0) {
            if (strcmp(ops + 6, "t1") == 0 && L->rv_t1_known) { /* sp -= t1, t1 from `li` */
                rc = L->rv_t1 > 0 ? add_ev(L, sec, EV_FRAME, addr, L->rv_t1, NULL) : 0;
            } else {
                rc = add_ev(L, sec, EV_DYN, addr, 0, NULL);
            }
        } else if ((strcmp(mn, "li") == 0 || strcmp(mn, "c.li") == 0) &&
                   strncmp(ops, "t1,", 3) == 0) {
            L->rv_t1 = strtoll(ops + 3, NULL, 0);
            L->rv_t1_known = 1;
        } else if (strcmp(mn, "auipc") == 0 &&
                   (strncmp(ops, "ra,", 3) == 0 || strncmp(ops, "t1,", 3) == 0)) {
            L->rv_call_at = addr; /* call/tail: its relocation (R_RISCV_CALL*) names the callee */
            rc = 1;
        } else if (strcmp(mn, "jal") == 0 || strcmp(mn, "j") == 0 || strcmp(mn, "c.j") == 0 ||
                   strcmp(mn, "c.jal") == 0 || (mn[0] == 'b' && strchr(ops, '<'))) {
            uint64_t t;
            if (branch_target(ops, &t)) {
                rc = add_ev(L, sec, EV_BRANCH, addr, (int64_t)t, NULL);
                rc = rc ? rc : 1;
            }
        } else if (strcmp(mn, "jalr") == 0 || strcmp(mn, "jr") == 0 || strcmp(mn, "c.jr") == 0 ||
                   strcmp(mn, "c.jalr") == 0) {
            /* `jr ra` returns, `jr t0` returns from libgcc's save/restore millicode (called
             * with `jal t0`), `jr REG` otherwise is a switch table inside the function (gcc's
             * tail calls are `tail` = auipc t1 + jr t1, paired above); a `jalr` that is not the
             * second half of a call pair is an indirect call */
            int link = strcmp(mn, "jalr") == 0 || strcmp(mn, "c.jalr") == 0;
            if (link && L->rv_call_at + 4 != addr) {
                rc = add_ev(L, sec, EV_INDIRECT, addr, 0, NULL);
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
            /* RISC-V keeps a relocation on every branch (linker relaxation): those inside a
             * function (to .L labels, R_RISCV_BRANCH/RVC_*) and the relaxation markers name no
             * callee */
            if (L->isa == ISA_RV && (strncmp(sym, ".L", 2) == 0 || strstr(p, "R_RISCV_BRANCH") ||
                                     strstr(p, "R_RISCV_RVC_") || strstr(p, "R_RISCV_RELAX"))) {
                continue;
            }
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
    /* the disassembly of an earlier process when the cache has it (libframes_cache.c) */
    char *text = tether__lib_cache_load(L->objdump, path);
    size_t len = 0;
    if (!text) {
        if (capture(argv, &text, &len) != 0) {
            L->error = 1;
            snprintf(L->errmsg, sizeof L->errmsg, "%s -d %s failed", L->objdump, path);
            return -1;
        }
        tether__lib_cache_store(L->objdump, path, text, len);
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
    n += tether__split_flags(flags, argv + n, 12);
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
    if (!strchr(out, '/') && strstr(cflags, "picolibc.specs")) {
        /* picolibc's archives are found through its specs' -L, not the compiler's search path:
         * /usr/lib/picolibc/<triple>/lib/<multilib directory>/, as the specs have it */
        char *mdir = NULL;
        argv[n - 1] = "-print-multi-directory";
        size_t cl = strlen(cc);
        if (cl > 4 && strcmp(cc + cl - 4, "-gcc") == 0 && capture(argv, &mdir, NULL) == 0) {
            mdir[strcspn(mdir, "\n")] = 0;
            const char *base = strrchr(cc, '/');
            base = base ? base + 1 : cc;
            size_t bl = strlen(base) - 4;
            char path[1200];
            snprintf(path, sizeof path, "/usr/lib/picolibc/%.*s/lib/%s/%s", (int)bl, base, mdir,
                     what);
            free(out);
            out = strdup(path);
        }
        free(mdir);
        if (!out) {
            return;
        }
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
libset *tether__lib_for_target(const tether_target *t) {
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
             : strstr(t->cc, "riscv")       ? ISA_RV
                                            : ISA_X86;
    char cc[1024];
    if (tether__find_program(t->cc, cc, sizeof cc)) {
        size_t len = strlen(cc);
        if (len >= 3 && strcmp(cc + len - 3, "gcc") == 0) {
            snprintf(L->objdump, sizeof L->objdump, "%.*sobjdump", (int)(len - 3), cc);
        }
        add_archive(L, cc, t->cflags, "libgcc");
        add_archive(L, cc, t->cflags, "libm.a");
        int pico = strstr(t->cflags, "picolibc") != NULL; /* picolibc (RISC-V) */
        add_archive(L, cc, t->cflags,
                    t->kind == TETHER_TARGET_STATIC && !pico ? "libc_nano.a" : "libc.a");
    }
    if (!L->objdump[0] || access(L->objdump, X_OK) != 0) {
        L->error = 1;
        snprintf(L->errmsg, sizeof L->errmsg, "no objdump for %s", t->cc);
    }
    lib_cache[lib_ncache++] = L;
    return L;
}

/* A global function of the target's libraries by name, loading archives as needed. */
int tether__lib_lookup(libset *L, const char *name) {
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
    int g = must ? tether__lib_lookup(L, name) : lib_find_global(L, name);
    if (g >= 0) {
        return g == id ? 0 : add_callee(&L->fn[id], g);
    }
    if (must) {
        L->fn[id].indirect = 2; /* calls something no analysed library defines */
    }
    return 0;
}

int tether__lib_compute(libset *L, int id) {
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
