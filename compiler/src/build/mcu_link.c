/*
 * The RAM-upload link step for tether MCU firmware (tether/mcu_link.h, docs/mcu.md): reading
 * firmware.json, checking it against the device, running the cross linker and objcopy, and
 * checking the image the way the firmware's LOAD_MODULE does.
 *
 * What must stay true: tools are run with argv arrays (never a shell) and their output goes to
 * a log file next to the image; a failed link leaves no image behind; the image checks mirror
 * device/mcu/firmware/image.c (header layout, 32-bit little-endian registry entries of 16
 * bytes: name, abi, num_args, function) so that what passes here also loads on the device.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"
#include "tether/mcu_link.h"

#define IMAGE_MAGIC   0x52485454u /* "TTHR" */
#define IMAGE_VERSION 1u
#define HEADER_BYTES  32u
#define ENTRY_BYTES   16u /* name, abi, num_args, fn: four 32-bit words */
#define MAX_FUNCS     64u /* TETHER_MCU_MAX_MODULE_FUNCS of the firmware */

/* ---- firmware.json ---- */

static int parse_u64(const cJSON *v, uint64_t *out) {
    if (cJSON_IsNumber(v) && v->valuedouble >= 0) {
        *out = (uint64_t)v->valuedouble;
        return 0;
    }
    if (cJSON_IsString(v)) {
        char *end;
        errno = 0;
        unsigned long long x = strtoull(v->valuestring, &end, 0);
        if (!errno && end != v->valuestring && *end == 0) {
            *out = x;
            return 0;
        }
    }
    return -1;
}

int tether_mcu_firmware_load(const char *path, tether_mcu_firmware *out) {
    memset(out, 0, sizeof *out);
    struct stat st;
    if (!path || stat(path, &st) != 0) {
        return tether_set_error(TETHER_ERR_NOT_FOUND, "firmware description '%s': %s",
                                path ? path : "(null)", strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(out->json, sizeof out->json, "%s/firmware.json", path);
    } else {
        snprintf(out->json, sizeof out->json, "%s", path);
    }
    char *text;
    int rc = tether__read_file(out->json, &text, NULL);
    if (rc) {
        return rc;
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format");
    if (!j || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "tether-mcu-firmware") != 0) {
        cJSON_Delete(j);
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%s is not a tether firmware description (format "
                                "\"tether-mcu-firmware\")",
                                out->json);
    }
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(j, "version");
    if (!cJSON_IsNumber(ver) || ver->valuedouble != 1) {
        long long v = cJSON_IsNumber(ver) ? (long long)ver->valuedouble : 0;
        cJSON_Delete(j);
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "%s: firmware description version %lld (this tether reads 1)",
                                out->json, v);
    }
    const cJSON *board = cJSON_GetObjectItemCaseSensitive(j, "board"),
                *flags = cJSON_GetObjectItemCaseSensitive(j, "cpu_flags"),
                *mld = cJSON_GetObjectItemCaseSensitive(j, "module_ld"),
                *eld = cJSON_GetObjectItemCaseSensitive(j, "exports_ld"),
                *id = cJSON_GetObjectItemCaseSensitive(j, "exports_id");
    const char *bad = NULL;
    uint64_t idv = 0;
    if (!cJSON_IsString(board) || strlen(board->valuestring) >= sizeof out->board) {
        bad = "board";
    } else if (!cJSON_IsString(flags) || strlen(flags->valuestring) >= sizeof out->cpu_flags) {
        bad = "cpu_flags";
    } else if (parse_u64(cJSON_GetObjectItemCaseSensitive(j, "load_addr"), &out->load_addr)) {
        bad = "load_addr";
    } else if (parse_u64(cJSON_GetObjectItemCaseSensitive(j, "load_size"), &out->load_size) ||
               out->load_size == 0) {
        bad = "load_size";
    } else if (!cJSON_IsString(mld) || strchr(mld->valuestring, '/')) {
        bad = "module_ld";
    } else if (!cJSON_IsString(eld) || strchr(eld->valuestring, '/')) {
        bad = "exports_ld";
    } else if (id && (parse_u64(id, &idv) || idv > UINT32_MAX)) {
        bad = "exports_id";
    }
    if (bad) {
        cJSON_Delete(j);
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: field '%s' is missing or invalid",
                                out->json, bad);
    }
    snprintf(out->board, sizeof out->board, "%s", board->valuestring);
    snprintf(out->cpu_flags, sizeof out->cpu_flags, "%s", flags->valuestring);
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(j, "toolchain");
    snprintf(out->toolchain, sizeof out->toolchain, "arm-none-eabi");
    if (cJSON_IsString(tc) && strlen(tc->valuestring) < sizeof out->toolchain &&
        strspn(tc->valuestring, "abcdefghijklmnopqrstuvwxyz0123456789-_") ==
            strlen(tc->valuestring)) {
        snprintf(out->toolchain, sizeof out->toolchain, "%s", tc->valuestring);
    }
    const cJSON *core = cJSON_GetObjectItemCaseSensitive(j, "core"),
                *feat = cJSON_GetObjectItemCaseSensitive(j, "features");
    if (cJSON_IsString(core) && strlen(core->valuestring) < sizeof out->core) {
        snprintf(out->core, sizeof out->core, "%s", core->valuestring);
    }
    if (cJSON_IsString(feat) && strlen(feat->valuestring) < sizeof out->features) {
        snprintf(out->features, sizeof out->features, "%s", feat->valuestring);
    }
    out->exports_id = (uint32_t)idv;
    char dir[TETHER_MCU_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", out->json);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = 0;
    } else {
        snprintf(dir, sizeof dir, ".");
    }
    int n1 = snprintf(out->module_ld, sizeof out->module_ld, "%s/%s", dir, mld->valuestring);
    int n2 = snprintf(out->exports_ld, sizeof out->exports_ld, "%s/%s", dir, eld->valuestring);
    cJSON_Delete(j);
    if (n1 < 0 || n2 < 0 || (size_t)n1 >= sizeof out->module_ld ||
        (size_t)n2 >= sizeof out->exports_ld) {
        return tether_set_error(TETHER_ERR_LIMIT, "%s: path too long", out->json);
    }
    if (access(out->module_ld, R_OK) != 0 || access(out->exports_ld, R_OK) != 0) {
        return tether_set_error(TETHER_ERR_NOT_FOUND, "%s: %s or %s is missing", out->json,
                                out->module_ld, out->exports_ld);
    }
    return TETHER_OK;
}

static int try_load(const char *path, tether_mcu_firmware *out) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        return 1; /* not there: keep looking */
    }
    return tether_mcu_firmware_load(path, out) ? -1 : 0;
}

int tether_mcu_firmware_find(const char *board, const char *const *dirs, int n,
                             tether_mcu_firmware *out) {
    char p[TETHER_MCU_PATH_MAX + 128];
    char looked[900] = "";
    const char *env = getenv("TETHER_FIRMWARE");
    if (env && *env) {
        struct stat st;
        if (stat(env, &st) == 0 && S_ISREG(st.st_mode)) {
            return tether_mcu_firmware_load(env, out);
        }
        snprintf(p, sizeof p, "%s/%s/firmware.json", env, board);
        int r = try_load(p, out);
        if (r <= 0) {
            return r ? tether_last_status() : TETHER_OK;
        }
        snprintf(p, sizeof p, "%s/firmware.json", env);
        r = try_load(p, out);
        if (r <= 0) {
            return r ? tether_last_status() : TETHER_OK;
        }
        return tether_set_error(TETHER_ERR_NOT_FOUND,
                                "no firmware description for board '%s' in $TETHER_FIRMWARE=%s",
                                board, env);
    }
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/%s/firmware.json", dirs[i], board);
        int r = try_load(p, out);
        if (r <= 0) {
            return r ? tether_last_status() : TETHER_OK;
        }
        size_t l = strlen(looked);
        snprintf(looked + l, sizeof looked - l, "%s%.300s", l ? ", " : "", p);
    }
    return tether_set_error(TETHER_ERR_NOT_FOUND,
                            "no firmware description (firmware.json) for board '%s': give "
                            "--firmware DIR or set TETHER_FIRMWARE (looked in: %s)",
                            board, looked[0] ? looked : "nowhere");
}

int tether_mcu_firmware_check(const tether_mcu_firmware *fw, const char *board, uint64_t load_addr,
                              uint64_t load_size, uint32_t exports_id) {
    if (board && board[0] && strcmp(board, fw->board) != 0) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "the device is a '%s' board, but %s describes '%s'", board,
                                fw->json, fw->board);
    }
    if (load_size == 0) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "the device has no RAM load region (HELLO load_size 0): it "
                                "cannot take uploaded MCU images");
    }
    if (load_addr != fw->load_addr || load_size != fw->load_size) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "the device loads modules at 0x%llx (%llu bytes), but %s says "
                                "0x%llx (%llu bytes): a different firmware build",
                                (unsigned long long)load_addr, (unsigned long long)load_size,
                                fw->json, (unsigned long long)fw->load_addr,
                                (unsigned long long)fw->load_size);
    }
    if (exports_id && fw->exports_id && exports_id != fw->exports_id) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "the device's firmware exports its symbols at other addresses "
                                "(exports id 0x%08x) than %s describes (0x%08x): use the "
                                "firmware.json of the running firmware build",
                                (unsigned)exports_id, fw->json, (unsigned)fw->exports_id);
    }
    return TETHER_OK;
}

/* ---- image checks ---- */

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int tether_mcu_image_check(const tether_mcu_firmware *fw, const uint8_t *data, size_t size,
                           tether_mcu_image *img) {
    memset(img, 0, sizeof *img);
    if (size < HEADER_BYTES || rd32(data) != IMAGE_MAGIC) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "not a tether MCU image (no \"TTHR\" header): link with the "
                                "firmware's module.ld");
    }
    if (rd32(data + 4) != IMAGE_VERSION) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED, "MCU image header version %u, expected %u",
                                (unsigned)rd32(data + 4), IMAGE_VERSION);
    }
    uint32_t link = rd32(data + 8), isize = rd32(data + 12), bss = rd32(data + 16),
             bss_size = rd32(data + 20), reg = rd32(data + 24);
    img->size = size;
    img->link_addr = link;
    img->bss_addr = bss;
    img->bss_size = bss_size;
    img->registry = reg;
    if (link != fw->load_addr) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "image linked for 0x%08x, but the %s firmware loads at 0x%08llx "
                                "(re-link with its module.ld)",
                                (unsigned)link, fw->board, (unsigned long long)fw->load_addr);
    }
    if (link % 4 != 0) {
        return tether_set_error(TETHER_ERR_ALIGNMENT,
                                "image link address 0x%08x is not 4-byte "
                                "aligned",
                                (unsigned)link);
    }
    if (isize != size) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "image header says %u bytes, the file has %zu (truncated or "
                                "not made by objcopy -O binary)",
                                (unsigned)isize, size);
    }
    uint64_t end = fw->load_addr + fw->load_size;
    uint64_t need = (uint64_t)bss + bss_size - link;
    if (size > fw->load_size || bss < link + size || (uint64_t)bss + bss_size > end) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "the module needs %llu bytes (%zu uploaded + %u of .bss), the "
                                "%s load region has %llu",
                                (unsigned long long)(need > size ? need : size), size,
                                (unsigned)bss_size, fw->board, (unsigned long long)fw->load_size);
    }
    if (reg % 4 != 0) {
        return tether_set_error(TETHER_ERR_ALIGNMENT,
                                "tether_module_registry at 0x%08x is not 4-byte aligned",
                                (unsigned)reg);
    }
    if (reg < link + HEADER_BYTES || (uint64_t)reg + 8 > link + size) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "tether_module_registry (0x%08x) is not inside the image",
                                (unsigned)reg);
    }
    const uint8_t *r = data + (reg - link);
    uint32_t entries = rd32(r), count = rd32(r + 4);
    if (count == 0 || count > MAX_FUNCS) {
        return tether_set_error(TETHER_ERR_LIMIT, "the module registers %u functions (1..%u)",
                                (unsigned)count, MAX_FUNCS);
    }
    if (entries % 4 != 0) {
        return tether_set_error(TETHER_ERR_ALIGNMENT,
                                "the registry's entry table at 0x%08x is not 4-byte aligned",
                                (unsigned)entries);
    }
    if (entries < link + HEADER_BYTES ||
        (uint64_t)entries + (uint64_t)count * ENTRY_BYTES > link + size) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "the registry's entry table (0x%08x, %u entries) is not inside "
                                "the image",
                                (unsigned)entries, (unsigned)count);
    }
    img->num_functions = count;
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *e = data + (entries - link) + i * ENTRY_BYTES;
        uint32_t name = rd32(e), abi = rd32(e + 4), fn = rd32(e + 12);
        char nm[64] = "?";
        if (name >= link + HEADER_BYTES && name < link + size) {
            const uint8_t *s = data + (name - link);
            const uint8_t *z = memchr(s, 0, size - (name - link));
            if (!z) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "registry entry %u: name is not NUL-terminated",
                                        (unsigned)i);
            }
            snprintf(nm, sizeof nm, "%s", (const char *)s);
        } else {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "registry entry %u: name pointer 0x%08x is outside the image",
                                    (unsigned)i, (unsigned)name);
        }
        if (i < 16) {
            snprintf(img->functions[i], sizeof img->functions[i], "%s", nm);
        }
        if (abi > 1) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "function '%s': ABI %u", nm,
                                    (unsigned)abi);
        }
        bool riscv = strncmp(fw->toolchain, "riscv", 5) == 0;
        if (riscv && (fn & 1u) != 0) {
            return tether_set_error(TETHER_ERR_ALIGNMENT,
                                    "function '%s' at 0x%08x is not 2-byte aligned: not a RISC-V "
                                    "instruction address",
                                    nm, (unsigned)fn);
        }
        if (!riscv && (fn & 1u) == 0) {
            return tether_set_error(TETHER_ERR_ALIGNMENT,
                                    "function '%s' at 0x%08x has no Thumb bit: Cortex-M runs "
                                    "Thumb code only (compile with -mthumb)",
                                    nm, (unsigned)fn);
        }
        uint32_t addr = fn & ~1u;
        if (addr < link + HEADER_BYTES || addr >= link + size) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "function '%s' at 0x%08x is outside the image", nm,
                                    (unsigned)fn);
        }
    }
    return TETHER_OK;
}

/* ---- linking ---- */

/* Value of -m<opt>=... in a flag string ("" when absent). */
static void flag_value(const char *flags, const char *opt, char *out, size_t n) {
    out[0] = 0;
    const char *p = strstr(flags, opt);
    if (!p) {
        return;
    }
    p += strlen(opt);
    size_t k = 0;
    while (p[k] && p[k] != ' ' && k + 1 < n) {
        out[k] = p[k];
        k++;
    }
    out[k] = 0;
}

/* Cortex-M cores by instruction set: code for a core runs on every core of the same or a higher
 * rank (Armv6-M < Armv7-M < Armv7E-M < Armv8-M Mainline < Armv8.1-M); the DSP, FPU and MVE
 * extensions are checked separately (features). -1 = unknown. */
static const struct {
    const char *name;
    int rank; /* Arm: 0..4; RISC-V: 100 (RV32IMAC) */
    const char *isa;
} cores[] = {
    {"rv32imac", 100, "RV32IMAC"},  {"cortex-m0", 0, "Armv6-M"},   {"cortex-m0plus", 0, "Armv6-M"},
    {"cortex-m1", 0, "Armv6-M"},    {"cortex-m3", 1, "Armv7-M"},   {"cortex-m4", 2, "Armv7E-M"},
    {"cortex-m7", 2, "Armv7E-M"},   {"cortex-m33", 3, "Armv8-M"},  {"cortex-m35p", 3, "Armv8-M"},
    {"cortex-m55", 4, "Armv8.1-M"}, {"cortex-m85", 4, "Armv8.1-M"}};

static int cpu_rank(const char *cpu) {
    for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++) {
        if (strcmp(cpu, cores[i].name) == 0) {
            return cores[i].rank;
        }
    }
    return -1;
}

static const char *cpu_isa(const char *cpu) {
    for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++) {
        if (strcmp(cpu, cores[i].name) == 0) {
            return cores[i].isa;
        }
    }
    return "an unknown instruction set";
}

/* Whether the space- or comma-separated list `have` holds `tok`; fp.sp is implied by fp.dp,
 * mve by mve.fp. */
static bool has_feature(const char *have, const char *tok) {
    size_t n = strlen(tok);
    for (const char *p = have; *p;) {
        while (*p == ' ' || *p == ',') {
            p++;
        }
        size_t k = strcspn(p, " ,");
        if (k == n && strncmp(p, tok, n) == 0) {
            return true;
        }
        p += k;
    }
    if (strcmp(tok, "fp.sp") == 0) {
        return has_feature(have, "fp.dp");
    }
    if (strcmp(tok, "mve") == 0) {
        return has_feature(have, "mve.fp");
    }
    return false;
}

int tether_mcu_target_check(const char *target, const char *board, const char *core,
                            const char *features) {
    const tether_target *t;
    int rc = tether_target_find(target, &t);
    if (rc) {
        return rc;
    }
    if (!features) {
        features = "";
    }
    char instead[80] = "";
    const tether_target *dt;
    if (tether_target_find(core, &dt) == TETHER_OK && dt->kind == TETHER_TARGET_STATIC) {
        snprintf(instead, sizeof instead, ": compile with --target %s", core);
    }
    if (t->kind != TETHER_TARGET_STATIC) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "target '%s' builds shared objects for tetherd; the %s board "
                                "(%s) runs modules compiled for its MCU core%s",
                                target, board, core, instead);
    }
    char mc[64];
    flag_value(t->cflags, "-mcpu=", mc, sizeof mc);
    mc[strcspn(mc, "+")] = 0; /* cortex-m55+nomve: the core */
    if (!mc[0]) {             /* RISC-V targets name the ISA with -march */
        flag_value(t->cflags, "-march=", mc, sizeof mc);
    }
    int rm = cpu_rank(mc), rd = cpu_rank(core);
    if (rm < 0 || rd < 0 || rm > rd || (rm >= 100) != (rd >= 100)) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "the module was compiled for %s (%s), which the %s board's %s (%s) "
                                "cannot run%s",
                                target, cpu_isa(mc), board, core, cpu_isa(core), instead);
    }
    const char *need = t->features ? t->features : "";
    if (has_feature(need, "hard-float") != has_feature(features, "hard-float")) {
        bool hard = has_feature(need, "hard-float");
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "the module was compiled for %s with the %s-float ABI, but the %s "
                                "board's firmware (%s) uses the %s-float ABI%s",
                                target, hard ? "hard" : "soft", board, core, hard ? "soft" : "hard",
                                instead);
    }
    char lacks[96] = "";
    static const char *const toks[] = {"dsp", "fp.sp", "fp.dp", "mve", "mve.fp"};
    for (size_t i = 0; i < sizeof toks / sizeof *toks; i++) {
        if (has_feature(need, toks[i]) && !has_feature(features, toks[i])) {
            size_t l = strlen(lacks);
            snprintf(lacks + l, sizeof lacks - l, "%s%s", l ? " " : "", toks[i]);
        }
    }
    if (lacks[0]) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "the module was compiled for %s, which needs %s; the %s board's %s "
                                "has %s and lacks %s%s",
                                target, need, board, core, features[0] ? features : "none of them",
                                lacks, instead);
    }
    return TETHER_OK;
}

static int check_target(const tether_mcu_firmware *fw, const char *target) {
    const tether_target *t;
    int rc = tether_target_find(target, &t);
    if (rc) {
        return rc;
    }
    if (fw->core[0]) { /* the board table's core and features (firmware.json) */
        return tether_mcu_target_check(target, fw->board, fw->core, fw->features);
    }
    if (t->kind != TETHER_TARGET_STATIC) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "target '%s' builds shared objects for tetherd; the %s firmware "
                                "takes modules compiled for a Cortex-M target (--target "
                                "cortex-m3 ...)",
                                target, fw->board);
    }
    /* an older firmware.json without core/features: CPU rank and float ABI from the flags */
    char mc[64], fc[64], mf[32], ff[32];
    flag_value(t->cflags, "-mcpu=", mc, sizeof mc);
    flag_value(fw->cpu_flags, "-mcpu=", fc, sizeof fc);
    flag_value(t->cflags, "-mfloat-abi=", mf, sizeof mf);
    flag_value(fw->cpu_flags, "-mfloat-abi=", ff, sizeof ff);
    if (!mf[0]) {
        snprintf(mf, sizeof mf, "soft");
    }
    if (!ff[0]) {
        snprintf(ff, sizeof ff, "soft");
    }
    mc[strcspn(mc, "+")] = 0;
    int rm = cpu_rank(mc), rf = cpu_rank(fc);
    bool soft_m = strcmp(mf, "hard") != 0, soft_f = strcmp(ff, "hard") != 0;
    if (rm < 0 || rf < 0 || rm > rf || soft_m != soft_f) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "the module was compiled for %s (%s), which the %s firmware (%s) "
                                "cannot run: compile with --target matching its CPU and float ABI",
                                target, t->cflags, fw->board, fw->cpu_flags);
    }
    return TETHER_OK;
}

/* Sums the sizes of function and read-only object symbols of a 32-bit little-endian ELF. */
static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void elf_symbol_sizes(const char *path, uint64_t *code, uint64_t *rodata) {
    *code = *rodata = 0;
    char *buf;
    size_t len;
    if (tether__read_file(path, &buf, &len)) {
        return;
    }
    const uint8_t *b = (const uint8_t *)buf;
    if (len < 52 || memcmp(b, "\177ELF", 4) != 0 || b[4] != 1 || b[5] != 1) {
        free(buf);
        return;
    }
    uint32_t shoff = rd32(b + 0x20);
    uint32_t shentsize = (uint32_t)b[0x2e] | (uint32_t)b[0x2f] << 8;
    uint32_t shnum = (uint32_t)b[0x30] | (uint32_t)b[0x31] << 8;
    if (shentsize < 40 || (uint64_t)shoff + (uint64_t)shnum * shentsize > len) {
        free(buf);
        return;
    }
    for (uint32_t i = 0; i < shnum; i++) {
        const uint8_t *sh = b + shoff + i * shentsize;
        if (rd32(sh + 4) != 2) { /* SHT_SYMTAB */
            continue;
        }
        uint32_t off = rd32(sh + 0x10), size = rd32(sh + 0x14), ent = rd32(sh + 0x24);
        if (ent < 16 || (uint64_t)off + size > len) {
            continue;
        }
        /* (address << 32 | size, kind) of every symbol defined in the image (absolute symbols
         * are the firmware's exports, not part of it) */
        size_t n = size / ent, m = 0;
        uint64_t *keys = malloc((n ? n : 1) * sizeof *keys);
        if (!keys) {
            break;
        }
        for (uint32_t k = 0; k + ent <= size; k += ent) {
            const uint8_t *sym = b + off + k;
            uint32_t value = rd32(sym + 4) & ~1u, sz = rd32(sym + 8);
            uint8_t type = sym[12] & 0xf;
            uint16_t shndx = (uint16_t)(sym[14] | sym[15] << 8);
            if (shndx == 0 || shndx >= shnum || sz == 0) {
                continue;
            }
            const uint8_t *ts = b + shoff + (uint32_t)shndx * shentsize;
            uint32_t flags = rd32(ts + 8), stype = rd32(ts + 4);
            int kind = type == 2 ? 1 : (type == 1 && !(flags & 0x1) && stype != 8) ? 2 : 0;
            if (kind) {
                keys[m++] = ((uint64_t)value << 32 | sz) << 1 | (uint64_t)(kind - 1);
            }
        }
        qsort(keys, m, sizeof *keys, cmp_u64);
        /* the union of the [address, address + size) ranges of each kind (libgcc's soft-float
         * symbols overlap) */
        uint64_t end[2] = {0, 0};
        for (size_t k = 0; k < m; k++) {
            int kind = (int)(keys[k] & 1);
            uint64_t lo = keys[k] >> 33, hi = lo + ((keys[k] >> 1) & 0xffffffffu);
            uint64_t *sum = kind ? rodata : code;
            if (hi > end[kind]) {
                *sum += hi - (lo > end[kind] ? lo : end[kind]);
                end[kind] = hi;
            }
        }
        free(keys);
    }
    free(buf);
}

/* The first line of the log that matches `needle`, copied into out. */
static int log_line(const char *log, const char *needle, char *out, size_t n) {
    char *text;
    if (tether__read_file(log, &text, NULL)) {
        return 0;
    }
    char *p = strstr(text, needle);
    int found = p != NULL;
    if (p) {
        char *start = p;
        while (start > text && start[-1] != '\n') {
            start--;
        }
        char *nl = strchr(p, '\n');
        if (nl) {
            *nl = 0;
        }
        snprintf(out, n, "%s", start);
    }
    free(text);
    return found;
}

static int link_failed(const tether_mcu_firmware *fw, const char *log) {
    char line[400], sym[128];
    if (log_line(log, "overflowed by", line, sizeof line)) {
        unsigned long long over = 0;
        const char *p = strstr(line, "overflowed by");
        if (sscanf(p, "overflowed by %llu", &over) != 1) {
            over = 0;
        }
        return tether_set_error(TETHER_ERR_LIMIT,
                                "the module (code, data, .bss) does not fit the %llu-byte load "
                                "region of the %s firmware: %llu bytes too large; use --pool "
                                "(tensors in the board's pools), --params blob (weights in a "
                                "pool) or int8 weights (1/4 of the bytes) (see %s)",
                                (unsigned long long)fw->load_size, fw->board, over, log);
    }
    if (log_line(log, "undefined reference to", line, sizeof line)) {
        const char *p = strstr(line, "undefined reference to");
        const char *q = strpbrk(p, "`'\xe2");
        sym[0] = 0;
        if (q) {
            while (*q && (*q == '`' || *q == '\'' || (unsigned char)*q >= 0x80)) {
                q++;
            }
            size_t k = 0;
            while (q[k] && q[k] != '\'' && (unsigned char)q[k] < 0x80 && k + 1 < sizeof sym) {
                sym[k] = q[k];
                k++;
            }
            sym[k] = 0;
        }
        return tether_set_error(TETHER_ERR_NOT_FOUND,
                                "the module calls '%s', which the %s firmware does not export "
                                "(device/mcu/firmware/exports.def lists what modules may call; "
                                "see %s)",
                                sym[0] ? sym : "?", fw->board, log);
    }
    char first[300] = "";
    char *text;
    if (tether__read_file(log, &text, NULL) == 0) {
        snprintf(first, sizeof first, "%s", text);
        char *nl = strchr(first, '\n');
        if (nl) {
            *nl = 0;
        }
        free(text);
    }
    return tether_set_error(TETHER_ERR_IO, "linking the module for %s failed (see %s): %s",
                            fw->board, log, first);
}

int tether_mcu_link(const tether_mcu_firmware *fw, const char *target, const char *const *inputs,
                    int ninputs, const char *out_elf, const char *out_bin, tether_mcu_image *img) {
    memset(img, 0, sizeof *img);
    if (ninputs < 1 || ninputs > 32) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "mcu link: 1..32 inputs");
    }
    int rc;
    if (target && (rc = check_target(fw, target))) {
        return rc;
    }
    char cc[64], objcopy[64];
    snprintf(cc, sizeof cc, "%s-gcc", fw->toolchain[0] ? fw->toolchain : "arm-none-eabi");
    snprintf(objcopy, sizeof objcopy, "%s-objcopy",
             fw->toolchain[0] ? fw->toolchain : "arm-none-eabi");
    char log[TETHER_MCU_PATH_MAX + 8];
    snprintf(log, sizeof log, "%s.log", out_bin);
    unlink(log);
    unlink(out_elf);
    unlink(out_bin);
    char flags[256];
    snprintf(flags, sizeof flags, "%s", fw->cpu_flags);
    char *argv[80];
    int n = 0;
    argv[n++] = cc;
    char *save = NULL;
    for (char *t = strtok_r(flags, " ", &save); t && n < 20; t = strtok_r(NULL, " ", &save)) {
        argv[n++] = t;
    }
    argv[n++] = "-nostdlib";
    argv[n++] = "-Wl,--gc-sections";
    argv[n++] = "-Wl,-u,tether_module_registry"; /* pulls the registry out of a static library */
    argv[n++] = "-T";
    argv[n++] = (char *)fw->module_ld;
    argv[n++] = (char *)fw->exports_ld;
    for (int i = 0; i < ninputs; i++) {
        argv[n++] = (char *)inputs[i];
    }
    argv[n++] = "-lgcc";
    argv[n++] = "-o";
    argv[n++] = (char *)out_elf;
    argv[n] = NULL;
    int st = tether__run_logged(argv, log);
    if (st == 127 || st < 0) {
        return tether_set_error(TETHER_ERR_NOT_FOUND,
                                "cannot run %s (install gcc-%s, scripts/setup)", cc,
                                fw->toolchain[0] ? fw->toolchain : "arm-none-eabi");
    }
    if (st != 0) {
        unlink(out_elf);
        return link_failed(fw, log);
    }
    char *oc[] = {objcopy, "-O", "binary", (char *)out_elf, (char *)out_bin, NULL};
    st = tether__run_logged(oc, log);
    if (st != 0) {
        unlink(out_elf);
        unlink(out_bin);
        return tether_set_error(TETHER_ERR_IO, "%s -O binary %s failed (see %s)", objcopy, out_elf,
                                log);
    }
    char *data;
    size_t size;
    rc = tether__read_file(out_bin, &data, &size);
    if (!rc) {
        rc = tether_mcu_image_check(fw, (const uint8_t *)data, size, img);
        free(data);
    }
    if (rc) {
        char e[TETHER_ERROR_MSG_MAX];
        snprintf(e, sizeof e, "%s", tether_last_error());
        unlink(out_elf);
        unlink(out_bin);
        return tether_set_error(rc, "%s: %s", out_bin, e);
    }
    elf_symbol_sizes(out_elf, &img->code, &img->rodata);
    return TETHER_OK;
}

int tether_mcu_link_artifact(const tether_mcu_firmware *fw, const char *artifact_dir,
                             const char *out_dir, char *bin_path, size_t bin_path_size,
                             tether_mcu_image *img) {
    char path[TETHER_MCU_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/metadata.json", artifact_dir);
    char *text;
    int rc = tether__read_file(path, &text, NULL);
    if (rc) {
        return rc;
    }
    cJSON *m = cJSON_Parse(text);
    free(text);
    const cJSON *lib = cJSON_GetObjectItemCaseSensitive(m, "library"),
                *target = cJSON_GetObjectItemCaseSensitive(m, "target");
    if (!cJSON_IsString(lib) || !cJSON_IsString(target) || strchr(lib->valuestring, '/')) {
        cJSON_Delete(m);
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%s: no built library (compile without --no-build)", path);
    }
    char input[TETHER_MCU_PATH_MAX + 300], elf[TETHER_MCU_PATH_MAX + 300];
    char base[200];
    snprintf(base, sizeof base, "%s", lib->valuestring);
    char *dot = strrchr(base, '.');
    if (dot) {
        *dot = 0;
    }
    snprintf(input, sizeof input, "%s/%s", artifact_dir, lib->valuestring);
    snprintf(elf, sizeof elf, "%s/%s-%s.elf", out_dir, base, fw->board);
    int w = snprintf(bin_path, bin_path_size, "%s/%s-%s.bin", out_dir, base, fw->board);
    if (w < 0 || (size_t)w >= bin_path_size) {
        cJSON_Delete(m);
        return tether_set_error(TETHER_ERR_LIMIT, "output path too long");
    }
    const char *inputs[1] = {input};
    rc = tether_mcu_link(fw, target->valuestring, inputs, 1, elf, bin_path, img);
    cJSON_Delete(m);
    return rc;
}
