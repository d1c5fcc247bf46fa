/*
 * What tetherd says about its CPU in HELLO (docs/rpc.md, `cpu` and `cpu_features`): the ISA
 * extensions that matter to generated code, and the -march value a host should compile for so
 * the code uses them. x86-64: the psABI levels (x86-64-v2 / -v3 / -v4) from cpuid through the
 * compiler's __builtin_cpu_supports; aarch64: getauxval(AT_HWCAP) (fp16, dotprod).
 *
 * What must stay true: the `cpu` value only names extensions the CPU has, so code compiled for
 * it never traps with an illegal instruction here; unknown architectures report "" (the
 * baseline) rather than a guess.
 */
#include "session.h"

#include <stdio.h>
#include <string.h>

#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

static void add(char *out, size_t n, const char *word) {
    size_t len = strlen(out);
    snprintf(out + len, n - len, "%s%s", len ? " " : "", word);
}

void tetherd_cpu_describe(char *cpu, size_t cpu_size, char *features, size_t features_size) {
    cpu[0] = 0;
    features[0] = 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
    /* the psABI levels, by the features both gcc and clang can test (every CPU that has these
     * has the rest of its level: cx16, lahf, lzcnt, movbe, f16c, xsave); the builtin takes
     * string literals only, hence the macro */
    int has[3] = {1, 1, 1};
#define FEATURE(name, level)                                                                       \
    do {                                                                                           \
        if (__builtin_cpu_supports(name)) {                                                        \
            add(features, features_size, name);                                                    \
        } else {                                                                                   \
            has[level] = 0;                                                                        \
        }                                                                                          \
    } while (0)
    FEATURE("sse3", 0);
    FEATURE("ssse3", 0);
    FEATURE("sse4.1", 0);
    FEATURE("sse4.2", 0);
    FEATURE("popcnt", 0);
    FEATURE("avx", 1);
    FEATURE("avx2", 1);
    FEATURE("bmi", 1);
    FEATURE("bmi2", 1);
    FEATURE("fma", 1);
    FEATURE("avx512f", 2);
    FEATURE("avx512bw", 2);
    FEATURE("avx512cd", 2);
    FEATURE("avx512dq", 2);
    FEATURE("avx512vl", 2);
#undef FEATURE
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
