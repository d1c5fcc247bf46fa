/*
 * CPU values (tether_build_options.cpu) and the compiler flags they become (docs/codegen.md,
 * "CPU flags"): "-march=VALUE" on hosted targets, "-mcpu=VALUE" on MCU targets, except that on
 * x86-64 a value may carry tether's own "+extension" suffixes for what no psABI level includes,
 * the int8 dot products: "x86-64-v3+avxvnni" is "-march=x86-64-v3 -mavxvnni",
 * "x86-64-v4+avx512vnni" is "-march=x86-64-v4 -mavx512vnni" (the int8 kernels select VPDPBUSD by
 * the __AVXVNNI__ / __AVX512VNNI__ macros those flags define). A device's value comes from its
 * HELLO: `cpu` plus the extensions its `cpu_features` name (tether_cpu_for_device).
 *
 * What must stay true: an extension is added for a device only when its HELLO names it and the
 * level beneath it has what the extension's flags imply (avxvnni needs x86-64-v3's AVX2,
 * avx512vnni x86-64-v4's AVX-512), so the flags never ask for an instruction the device lacks;
 * a baseline device ("" cpu) gets no extension; every extension's feature tokens are the ones a
 * host checks against HELLO before upload (tether_cpu_needs); an unknown extension or a value
 * that could reach the compiler's argv as an option is an error naming it.
 */
#include <stdio.h>
#include <string.h>

#include "tether/compiler.h"
#include "tether/crt/error.h"

typedef struct x86_ext {
    const char *name;  /* the "+name" suffix and HELLO's cpu_features token */
    const char *flag;  /* the compiler flag it becomes */
    const char *extra; /* flags it needs below level `level` ("" none) */
    const char *needs; /* the HELLO cpu_features tokens a device must have (space separated) */
    int level;         /* the psABI level a device needs before tether adds it from HELLO */
} x86_ext;

static const x86_ext x86_exts[] = {
    {"avx512vnni", "-mavx512vnni", "-mavx512vl", "avx512vnni avx512vl", 4},
    {"avxvnni", "-mavxvnni", "", "avxvnni", 3},
};

static const x86_ext *x86_find(const char *name, size_t n) {
    for (size_t i = 0; i < sizeof x86_exts / sizeof *x86_exts; i++) {
        if (strlen(x86_exts[i].name) == n && strncmp(x86_exts[i].name, name, n) == 0) {
            return &x86_exts[i];
        }
    }
    return NULL;
}

/* The level N of "x86-64-vN" (1 for "x86-64" and ""), 0 for any other -march value. */
static int x86_level(const char *cpu, size_t n) {
    if (n == 0 || (n == 6 && strncmp(cpu, "x86-64", 6) == 0)) {
        return 1;
    }
    if (n == 9 && strncmp(cpu, "x86-64-v", 8) == 0 && cpu[8] >= '2' && cpu[8] <= '4') {
        return cpu[8] - '0';
    }
    return 0;
}

/* A -march/-mcpu value: letters, digits and . _ + - only (it reaches the compiler's argv). */
static int cpu_name_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '-' || s[0] == '+') {
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

static int is_x86(const tether_target *t) {
    return strncmp(t->name, "x86_64", 6) == 0;
}

static void append(char *out, size_t n, const char *s) {
    size_t l = strlen(out);
    if (l < n && s[0]) {
        snprintf(out + l, n - l, "%s%s", l ? " " : "", s);
    }
}

int tether_cpu_flags(const char *target, const char *cpu, char *out, size_t n) {
    if (n) {
        out[0] = 0;
    }
    const tether_target *t;
    int rc = tether_target_find(target ? target : "x86_64-linux", &t);
    if (rc) {
        return rc;
    }
    if (!cpu || !cpu[0]) {
        return 0;
    }
    if (!cpu_name_ok(cpu)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "cpu '%s' is not a -march/-mcpu value (letters, digits, . _ + -)",
                                cpu);
    }
    const char *opt = t->kind == TETHER_TARGET_SHARED ? "-march" : "-mcpu";
    size_t base = is_x86(t) ? strcspn(cpu, "+") : strlen(cpu);
    char f[128];
    snprintf(f, sizeof f, "%s=%.*s", opt, (int)base, cpu);
    char buf[256] = "";
    append(buf, sizeof buf, f);
    int level = x86_level(cpu, base);
    for (const char *p = cpu + base; *p == '+'; p += 1 + strcspn(p + 1, "+")) {
        size_t len = strcspn(p + 1, "+");
        const x86_ext *e = x86_find(p + 1, len);
        if (!e) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "cpu '%s': unknown x86-64 extension '+%.*s' (known: "
                                    "+avxvnni, +avx512vnni)",
                                    cpu, (int)len, p + 1);
        }
        append(buf, sizeof buf, e->flag);
        if (level < e->level) { /* levels below the one that implies them; 0 = a named CPU */
            append(buf, sizeof buf, e->extra);
        }
    }
    if (strlen(buf) + 1 > n) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "cpu '%s': flags too long", cpu);
    }
    snprintf(out, n, "%s", buf);
    return 0;
}

int tether_cpu_needs(const char *cpu, char *out, size_t n) {
    if (n) {
        out[0] = 0;
    }
    if (!cpu || strncmp(cpu, "x86-64", 6) != 0) {
        return 0;
    }
    int count = 0;
    for (const char *p = strchr(cpu, '+'); p; p = strchr(p + 1, '+')) {
        size_t len = strcspn(p + 1, "+");
        const x86_ext *e = x86_find(p + 1, len);
        if (!e) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "cpu '%s': unknown x86-64 extension '+%.*s'", cpu, (int)len,
                                    p + 1);
        }
        append(out, n, e->needs);
        count++;
    }
    return count;
}

void tether_cpu_for_device(const char *cpu, const char *features, char *out, size_t n) {
    snprintf(out, n, "%s", cpu ? cpu : "");
    int level = cpu ? x86_level(cpu, strlen(cpu)) : 0;
    if (!cpu || !cpu[0] || level < 2) { /* not an x86-64 level, or the baseline */
        return;
    }
    char have[300];
    snprintf(have, sizeof have, " %s ", features ? features : "");
    for (size_t i = 0; i < sizeof x86_exts / sizeof *x86_exts; i++) {
        const x86_ext *e = &x86_exts[i];
        char tok[40];
        snprintf(tok, sizeof tok, " %s ", e->name);
        if (level >= e->level && strstr(have, tok)) {
            size_t l = strlen(out);
            if (l < n) {
                snprintf(out + l, n - l, "+%s", e->name);
            }
        }
    }
}
