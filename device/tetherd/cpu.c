/*
 * What tetherd says about its CPU in HELLO (docs/rpc.md, `cpu` and `cpu_features`): the ISA
 * extensions that matter to generated code, and the -march value a host should compile for so
 * the code uses them. x86-64: the psABI levels (x86-64-v2 / -v3 / -v4) from cpuid through the
 * compiler's __builtin_cpu_supports, and the int8 dot-product extensions avx512vnni (cpuid leaf
 * 7, ECX bit 11) and avxvnni (leaf 7 subleaf 1, EAX bit 4) read from cpuid itself; aarch64:
 * getauxval(AT_HWCAP) (fp16, dotprod).
 *
 * What must stay true: the `cpu` value only names extensions the CPU has, so code compiled for
 * it never traps with an illegal instruction here; an AVX or AVX-512 extension is reported only
 * when the OS saves its register state too (XGETBV: XCR0 bits 1-2 for the YMM registers, 5-7
 * for the AVX-512 ones); unknown architectures report "" (the baseline) rather than a guess.
 */
#include "session.h"

#include <stdio.h>
#include <string.h>

#if defined(__aarch64__)
#include <sys/auxv.h>
#endif
#if defined(__x86_64__)
#include <cpuid.h>
#endif

static void add(char *out, size_t n, const char *word) {
    size_t len = strlen(out);
    snprintf(out + len, n - len, "%s%s", len ? " " : "", word);
}

#if defined(__x86_64__)
/* The register state the OS saves (XCR0), 0 when it does not enable XSAVE (then no AVX). */
static unsigned long long os_xcr0(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) { /* OSXSAVE */
        return 0;
    }
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* cpuid leaf 7 (subleaf sub) register `reg` (0 EAX .. 3 EDX) has bit `bit`; 0 when the CPU
 * has no such leaf or subleaf (subleaf 0's EAX is the highest subleaf). */
static int leaf7_bit(unsigned sub, int reg, int bit) {
    unsigned r[4];
    if (__get_cpuid_max(0, NULL) < 7) {
        return 0;
    }
    __cpuid_count(7, 0, r[0], r[1], r[2], r[3]);
    if (sub > r[0]) {
        return 0;
    }
    __cpuid_count(7, sub, r[0], r[1], r[2], r[3]);
    return (int)((r[reg] >> bit) & 1u);
}
#endif

void tetherd_cpu_describe(char *cpu, size_t cpu_size, char *features, size_t features_size) {
    cpu[0] = 0;
    features[0] = 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
    unsigned long long xcr0 = os_xcr0();
    int ymm = (xcr0 & 0x6u) == 0x6u;          /* SSE and AVX state */
    int zmm = ymm && (xcr0 & 0xe0u) == 0xe0u; /* opmask, ZMM0-15 upper halves, ZMM16-31 */
    /* the psABI levels, by the features both gcc and clang can test (every CPU that has these
     * has the rest of its level: cx16, lahf, lzcnt, movbe, f16c, xsave); the builtin takes
     * string literals only, hence the macro; `os` is whether the OS keeps its registers */
    int has[3] = {1, 1, 1};
#define FEATURE(name, level, os)                                                                   \
    do {                                                                                           \
        if ((os) && __builtin_cpu_supports(name)) {                                                \
            add(features, features_size, name);                                                    \
        } else {                                                                                   \
            has[level] = 0;                                                                        \
        }                                                                                          \
    } while (0)
    FEATURE("sse3", 0, 1);
    FEATURE("ssse3", 0, 1);
    FEATURE("sse4.1", 0, 1);
    FEATURE("sse4.2", 0, 1);
    FEATURE("popcnt", 0, 1);
    FEATURE("avx", 1, ymm);
    FEATURE("avx2", 1, ymm);
    FEATURE("bmi", 1, 1);
    FEATURE("bmi2", 1, 1);
    FEATURE("fma", 1, ymm);
    FEATURE("avx512f", 2, zmm);
    FEATURE("avx512bw", 2, zmm);
    FEATURE("avx512cd", 2, zmm);
    FEATURE("avx512dq", 2, zmm);
    FEATURE("avx512vl", 2, zmm);
#undef FEATURE
    /* the int8 dot products (VPDPBUSD), from cpuid itself: the builtin knows avxvnni only in
     * newer compilers. Neither is part of a psABI level; the host adds -mavx512vnni/-mavxvnni. */
    if (zmm && leaf7_bit(0, 2, 11)) {
        add(features, features_size, "avx512vnni");
    }
    if (ymm && leaf7_bit(1, 0, 4)) {
        add(features, features_size, "avxvnni");
    }
    if (has[0] && has[1] && has[2]) {
        snprintf(cpu, cpu_size, "x86-64-v4");
    } else if (has[0] && has[1]) {
        snprintf(cpu, cpu_size, "x86-64-v3");
    } else if (has[0]) {
        snprintf(cpu, cpu_size, "x86-64-v2");
    }
#elif defined(__aarch64__)
    unsigned long hw = getauxval(AT_HWCAP);
    int fp16 = 0, dot = 0;
    add(features, features_size, "asimd");
#ifdef HWCAP_ASIMDHP
    if ((hw & HWCAP_FPHP) && (hw & HWCAP_ASIMDHP)) {
        add(features, features_size, "fp16");
        fp16 = 1;
    }
#endif
#ifdef HWCAP_ASIMDDP
    if (hw & HWCAP_ASIMDDP) {
        add(features, features_size, "dotprod");
        dot = 1;
    }
#endif
    if (fp16 || dot) {
        snprintf(cpu, cpu_size, "armv8.2-a%s%s", fp16 ? "+fp16" : "", dot ? "+dotprod" : "");
    }
#endif
}
