/*
 * The build driver: target profiles, running the cross/host compiler on a generated source,
 * ELF section sizes, and the artifact build (the static worst-case stack it reports is
 * stack.c's, with the run-time library frames of libframes.c).
 *
 * What must stay true: compilers are run with an argv array (never through a shell) and through
 * tether__child_start (children.c: registered, so a signal handler can end them), their
 * stderr goes to <dir>/build.log; a failed build reports the log's first lines.
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

static const tether_target targets[] = {
    {"x86_64-linux", "gcc", "-fPIC -mno-red-zone", NULL, TETHER_TARGET_SHARED,
     "host gcc, shared object for upload to tetherd", NULL},
    {"aarch64-linux", "aarch64-linux-gnu-gcc", "-fPIC", NULL, TETHER_TARGET_SHARED,
     "64-bit Arm Linux boards and phones, shared object", NULL},
    {"cortex-m0", "arm-none-eabi-gcc", "-mcpu=cortex-m0 -mthumb -mfloat-abi=soft",
     "arm-none-eabi-ar", TETHER_TARGET_STATIC, "Armv6-M, no FPU, static library", ""},
    {"cortex-m3", "arm-none-eabi-gcc", "-mcpu=cortex-m3 -mthumb -mfloat-abi=soft",
     "arm-none-eabi-ar", TETHER_TARGET_STATIC, "Armv7-M, no FPU, static library", ""},
    {"cortex-m4", "arm-none-eabi-gcc", "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16",
     "arm-none-eabi-ar", TETHER_TARGET_STATIC, "Armv7E-M with single-precision FPU, static library",
     "dsp fp.sp hard-float"},
    {"cortex-m7", "arm-none-eabi-gcc", "-mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16",
     "arm-none-eabi-ar", TETHER_TARGET_STATIC, "Armv7E-M with double-precision FPU",
     "dsp fp.sp fp.dp hard-float"},
    {"cortex-m33", "arm-none-eabi-gcc",
     "-mcpu=cortex-m33 -mthumb -mfloat-abi=hard -mfpu=fpv5-sp-d16", "arm-none-eabi-ar",
     TETHER_TARGET_STATIC, "Armv8-M Mainline with DSP and single-precision FPU",
     "dsp fp.sp hard-float"},
    {"cortex-m55", "arm-none-eabi-gcc", "-mcpu=cortex-m55 -mthumb -mfloat-abi=hard",
     "arm-none-eabi-ar", TETHER_TARGET_STATIC,
     "Armv8.1-M with Helium (MVE, integer and float; gcc vectorizes) and double-precision FPU",
     "dsp fp.sp fp.dp hard-float mve mve.fp"},
    {"cortex-m55-nomve", "arm-none-eabi-gcc", "-mcpu=cortex-m55+nomve -mthumb -mfloat-abi=hard",
     "arm-none-eabi-ar", TETHER_TARGET_STATIC,
     "Cortex-M55 without Helium: the scalar build to measure MVE against",
     "dsp fp.sp fp.dp hard-float"},
    {"rv32imac", "riscv64-unknown-elf-gcc",
     "-march=rv32imac -mabi=ilp32 -mcmodel=medany --specs=picolibc.specs", "riscv64-unknown-elf-ar",
     TETHER_TARGET_STATIC, "RISC-V RV32IMAC microcontroller, no FPU (ilp32), static library", ""},
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
                            "cortex-m3, cortex-m4, cortex-m7, cortex-m33, cortex-m55, "
                            "cortex-m55-nomve, rv32imac)",
                            name ? name : "(null)");
}

int tether__find_program(const char *prog, char *out, size_t n) {
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
    return tether__find_program(t->cc, buf, sizeof buf);
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

int tether__split_flags(char *flags, char **argv, int max) {
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(flags, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save)) {
        argv[n++] = t;
    }
    return n;
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
    if (!tether__find_program(t->cc, cc, sizeof cc)) {
        return tether_set_error(TETHER_ERR_NOT_FOUND,
                                "target %s needs '%s', which is not installed", t->name, t->cc);
    }
    int level = tether_build_opt_level(o);
    if (level < -1 || level > 3) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "opt level %d outside 0..3 or s", level);
    }
    char cpu_flag[256];
    rc = tether_cpu_flags(t->name, o->cpu, cpu_flag, sizeof cpu_flag);
    if (rc) {
        return rc;
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
    char flags[600];
    snprintf(flags, sizeof flags, "%s%s%s", t->cflags, cpu_flag[0] ? " " : "", cpu_flag);
    char *argv[48];
    int n = 0;
    argv[n++] = cc;
    n += tether__split_flags(flags, argv + n, 16);
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
        if (!t->ar || !tether__find_program(t->ar, ar, sizeof ar)) {
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
