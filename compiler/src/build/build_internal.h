/*
 * The build driver's private interface (not installed) between build.c (target profiles,
 * running the compiler, ELF sizes, building an artifact), libframes.c (the stack frames of the
 * run-time library functions generated code calls: libgcc, libm, the C library) and stack.c
 * (the static worst-case stack of a generated module, from GCC's call-graph files).
 *
 * What must stay true: a tether__libset is made and cached per target by
 * tether__lib_for_target only (its archives are disassembled at most once per process); its
 * functions are indexed by tether__lib_lookup and their frames computed on demand by
 * tether__lib_compute, so a caller reads L->fn[id] only after tether__lib_compute(L, id).
 */
#ifndef TETHER_BUILD_INTERNAL_H
#define TETHER_BUILD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tether/compiler.h"

/* A program on PATH (or a path): its full name in out; nonzero when found. */
int tether__find_program(const char *prog, char *out, size_t n);

/* Splits flags (modified in place) at spaces into argv (at most max); the count. */
int tether__split_flags(char *flags, char **argv, int max);

/* ---- run-time library frames (libframes.c) ---- */

typedef struct tether__lfunc {
    char *name;
    int member, sec, global, weak, ifunc;
    uint64_t lo, hi;
    int state; /* 0 not computed, 1 computed */
    int64_t bytes;
    int dynamic, indirect;
    int *callees;
    int ncallees;
} tether__lfunc;

typedef struct tether__libset {
    char target[64];
    int isa;
    char objdump[1024];
    char archives[6][1024];
    int narchives, loaded; /* archives [0, loaded) are parsed */
    int error;             /* an archive could not be read */
    char errmsg[1200];
    struct lev *ev;
    int nev, capev;
    struct lsec *sec;
    int nsec, capsec;
    tether__lfunc *fn;
    int nfn, capfn;
    int nmembers;
    int *hash; /* open addressing over global functions, -1 empty */
    int hcap;
    uint64_t rv_call_at; /* RISC-V: address of the last `auipc ra/t1` (a call/tail pair) */
    int rv_t1_known;     /* RISC-V: t1 holds rv_t1 (the last `li t1,N`), for libgcc's */
    int64_t rv_t1;       /* __riscv_save_N millicode, which adjusts sp by t1 */
} tether__libset;

/* The library functions of target t's toolchain (cached; never NULL unless out of memory; an
 * archive that cannot be read sets L->error and L->errmsg and leaves its functions unknown). */
tether__libset *tether__lib_for_target(const tether_target *t);

/* The index of the global function `name` in L->fn, loading archives as needed; -1 when none
 * defines it. */
int tether__lib_lookup(tether__libset *L, const char *name);

/* Computes L->fn[id]'s frame, dynamic/indirect flags and callees (and those of everything it
 * reaches); 0 on success, -1 out of memory. */
int tether__lib_compute(tether__libset *L, int id);

/* ---- the disassemblies on disk (libframes_cache.c) ---- */

/* objdump's text for archive from the cache (malloc'ed, NUL-terminated), or NULL when the cache
 * is off or has no complete entry for this objdump and archive. */
char *tether__lib_cache_load(const char *objdump, const char *archive);

/* Keeps objdump's text of archive for later processes (any failure leaves the cache as it was). */
void tether__lib_cache_store(const char *objdump, const char *archive, const char *text,
                             size_t len);

/* ---- function symbols of an object (elf_funcs.c) ---- */

/* The STT_FUNC symbols defined in an ELF object: name, section index, value. */
typedef struct tether__elf_funcs {
    char **name;
    uint32_t *sec;
    uint64_t *value;
    int n, cap;
} tether__elf_funcs;

/* Reads path's function symbols (TETHER_OK, or an error for a missing or malformed file). */
int tether__elf_funcs_read(const char *path, tether__elf_funcs *out);
void tether__elf_funcs_free(tether__elf_funcs *f);

/* The index of the nth (from 0) other function at the same section and value as `name` (the same
 * code under another name: gcc's identical code folding), or -1. */
int tether__elf_funcs_same(const tether__elf_funcs *f, const char *name, int nth);

#endif
