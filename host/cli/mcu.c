/*
 * The CLI's device-kind specific parts: loading a module the way the device takes it (shared
 * objects and OpenCL C for tetherd; RAM images for MCU firmware, linked on the fly from .o/.a
 * with the compiler's link step against the firmware's firmware.json), passing device LOG lines
 * through, reconnecting after a fault, and `tether compile ... --upload`.
 *
 * What must stay true: a module is never uploaded to a device that cannot run it (a shared
 * object to an MCU, a Cortex-M library to tetherd, an image linked for another firmware build:
 * each is a clear error before any byte is sent); temporary link folders are removed on every
 * path; after a fault the old session is never reused (tether_session_reconnect makes a new
 * one). Errors are printed as one line "tether <command>: <reason>" (tether_cli_fail).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "tether/artifact.h"
#include "tether/crt.h"
#include "tether/rpc/sha256.h"

#ifdef TETHER_HAVE_COMPILER
#include "tether/compiler.h"
#include "tether/compiler_cli.h"
#include "tether/mcu_link.h"
#endif

#define fail tether_cli_fail

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The __kernel functions of an OpenCL C source, in order (for the upload's report); comments
 * are skipped. */
static void kernel_names(const char *src, size_t n, tether_cli_module_info *info) {
    info->nnames = 0;
    char *code = malloc(n + 1); /* the source with comments blanked out */
    if (!code)
        return;
    for (size_t i = 0; i < n; i++) {
        if (src[i] == '/' && i + 1 < n && src[i + 1] == '/') {
            while (i < n && src[i] != '\n')
                code[i++] = ' ';
            if (i < n)
                code[i] = '\n';
        } else if (src[i] == '/' && i + 1 < n && src[i + 1] == '*') {
            code[i++] = ' ';
            code[i++] = ' ';
            while (i < n && !(src[i] == '*' && i + 1 < n && src[i + 1] == '/'))
                code[i++] = ' ';
            if (i < n)
                code[i++] = ' ';
            if (i < n)
                code[i] = ' ';
        } else {
            code[i] = src[i];
        }
    }
    code[n] = 0;
    for (size_t i = 0; i + 8 < n && info->nnames < 64; i++) {
        if (memcmp(code + i, "__kernel", 8) != 0 ||
            (i && (isalnum((unsigned char)code[i - 1]) || code[i - 1] == '_')))
            continue;
        /* __kernel [attributes] void NAME( */
        const char *v = NULL;
        for (size_t k = i + 8; k + 4 < n && code[k] != '(' && code[k] != ';' && code[k] != '{';
             k++) {
            if (code[k] == '_' && !memcmp(code + k, "__attribute__", 13)) { /* skip its (( )) */
                int depth = 0;
                for (k += 13; k < n; k++) {
                    depth += code[k] == '(';
                    depth -= code[k] == ')';
                    if (code[k] == ')' && depth == 0)
                        break;
                }
                continue;
            }
            if (!memcmp(code + k, "void", 4) && !isalnum((unsigned char)code[k + 4]) &&
                !isalnum((unsigned char)code[k - 1])) {
                v = code + k + 4;
                break;
            }
        }
        if (!v)
            continue;
        while (v < code + n && isspace((unsigned char)*v))
            v++;
        size_t len = 0;
        while (v + len < code + n && (isalnum((unsigned char)v[len]) || v[len] == '_'))
            len++;
        if (len && len < sizeof info->names[0]) {
            memcpy(info->names[info->nnames], v, len);
            info->names[info->nnames++][len] = 0;
        }
    }
    free(code);
}

static int g_uploads_cached;

int tether_cli_uploads_cached(void) {
    return g_uploads_cached;
}

static int upload_and_load(tether_session *s, uint32_t kind, const char *name, const void *data,
                           size_t size, const char *path, uint64_t *module, uint32_t *nfuncs,
                           tether_cli_module_info *info) {
    uint8_t *owned = NULL;
    if (info && !data) { /* the report needs the bytes and their hash: read the file here */
        int rc = tether_file_read(path, TETHER_UPLOAD_MAX_BYTES, &owned, &size);
        if (rc)
            return rc;
        data = owned;
    }
    if (info) {
        info->kind = kind;
        info->bytes = size;
        tether_sha256(data, size, info->sha256);
        if (kind == TETHER_MODULE_OPENCL_SOURCE)
            kernel_names(data, size, info);
    }
    int rc = data ? tether_session_upload(s, kind, name, data, size)
                  : tether_session_upload_file(s, kind, name, path);
    free(owned);
    if (!rc && tether_session_last_upload_cached(s)) {
        g_uploads_cached++;
        if (info)
            info->cached = 1;
    }
    uint64_t m = 0;
    if (!rc)
        rc = tether_session_load_module(s, name, &m, nfuncs);
    if (rc)
        return rc;
    if (module)
        *module = m;
    return 0;
}

#ifdef TETHER_HAVE_COMPILER

/* Where firmware builds are looked for: this program's build tree (build/host/cli/tether ->
 * build/device/mcu) and an installation (bin/tether -> share/tether/firmware). */
static int firmware_dirs(char dirs[2][3100]) {
    char exe[3000];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return 0;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return 0;
    *slash = 0;
    snprintf(dirs[0], sizeof dirs[0], "%s/../../device/mcu", exe);
    snprintf(dirs[1], sizeof dirs[1], "%s/../share/tether/firmware", exe);
    return 2;
}

/* The description of the firmware the device runs: --firmware (a firmware.json, its folder, or
 * a folder of per-board folders), else $TETHER_FIRMWARE, else the default places; then checked
 * against HELLO (board, load region, exports id). */
static int find_firmware(const tether_device_info *d, const char *opt, tether_mcu_firmware *fw) {
    int rc;
    if (opt) {
        char p[4200];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s/firmware.json", opt, d->board);
        if (stat(opt, &st) == 0 && S_ISDIR(st.st_mode) && access(p, R_OK) == 0)
            rc = tether_mcu_firmware_load(p, fw);
        else
            rc = tether_mcu_firmware_load(opt, fw);
    } else {
        char dirs[2][3100];
        const char *dp[2] = {dirs[0], dirs[1]};
        int n = firmware_dirs(dirs);
        rc = tether_mcu_firmware_find(d->board, dp, n, fw);
    }
    if (!rc)
        rc = tether_mcu_firmware_check(fw, d->board, d->load_addr, d->load_size, d->exports_id);
    return rc;
}

/* The registry names an image carries (the first 16), for the upload's report. */
static void image_names(const tether_mcu_image *img, tether_cli_module_info *info) {
    if (!info)
        return;
    info->nnames = 0;
    for (uint32_t i = 0; i < img->num_functions && i < 16; i++)
        snprintf(info->names[info->nnames++], sizeof info->names[0], "%s", img->functions[i]);
}

static void print_image(const char *what, const tether_mcu_firmware *fw,
                        const tether_mcu_image *img) {
    printf("%s: MCU image %llu bytes (code %llu, read-only data %llu) + .bss %llu bytes, linked at "
           "0x%08llx for %s, %u function%s\n",
           what, (unsigned long long)img->size, (unsigned long long)img->code,
           (unsigned long long)img->rodata, (unsigned long long)img->bss_size,
           (unsigned long long)img->link_addr, fw->board, (unsigned)img->num_functions,
           img->num_functions == 1 ? "" : "s");
}

static int read_all(const char *path, char **data, size_t *size) {
    uint8_t *d = NULL;
    *data = NULL;
    int rc = tether_file_read(path, TETHER_UPLOAD_MAX_BYTES, &d, size);
    if (rc)
        return rc;
    *data = (char *)d;
    return 0;
}

/* Links objects/libraries for the device's firmware in a temporary folder and uploads the
 * image. */
static int mcu_link_upload(tether_session *s, const tether_mcu_firmware *fw, const char *path,
                           const char *target, const char *name, uint64_t *module, uint32_t *nfuncs,
                           tether_cli_module_info *info) {
    char dir[600];
    int trc = tether_cli_tempdir_make(dir, sizeof dir, "mcu");
    if (trc)
        return trc;
    char elf[700], bin[700], log[700];
    snprintf(elf, sizeof elf, "%s/module.elf", dir);
    snprintf(bin, sizeof bin, "%s/module.bin", dir);
    snprintf(log, sizeof log, "%s/module.bin.log", dir);
    const char *in[1] = {path};
    tether_mcu_image img;
    int rc = 0;
    char *data = NULL;
    size_t size = 0;
    int lrc = tether_mcu_link(fw, target, in, 1, elf, bin, &img);
    if (lrc) {
        /* the temporary folder is about to be removed: no path into it may stay in the message
         * (the log's " (see LOG)" ends it, possibly cut short by the message limit), and the
         * linker's first line is added, without the folder, only when the message is the
         * generic one (a region overflow or a missing export says all there is to say) */
        char e[TETHER_ERROR_MSG_MAX];
        snprintf(e, sizeof e, "%s", tether_last_error());
        const char *forms[2] = {" (see ", "; see "};
        for (int k = 0; k < 2; k++) {
            for (char *at = strstr(e, forms[k]); at; at = strstr(at + 1, forms[k])) {
                const char *rest = at + strlen(forms[k]);
                size_t n = strlen(rest) < strlen(dir) ? strlen(rest) : strlen(dir);
                if (n >= 5 && strncmp(rest, dir, n) == 0) { /* the folder, maybe cut short */
                    *at = 0;
                    break;
                }
            }
        }
        char first[300] = "";
        FILE *f = lrc == TETHER_ERR_IO ? fopen(log, "r") : NULL;
        if (f) {
            if (!fgets(first, sizeof first, f))
                first[0] = 0;
            fclose(f);
            first[strcspn(first, "\n")] = 0;
            char *at;
            while ((at = strstr(first, dir)) != NULL) { /* "DIR/module.elf" -> "module.elf" */
                size_t n = strlen(dir) + (at[strlen(dir)] == '/');
                memmove(at, at + n, strlen(at + n) + 1);
            }
        }
        /* a library compiled on the fly sits in a temporary folder too */
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: %s%s%s", tether_cli_tempdir_shown(path),
                              e, first[0] ? "; linker: " : "", first);
    } else {
        print_image(base_name(path), fw, &img);
        image_names(&img, info);
        rc = read_all(bin, &data, &size);
    }
    tether_cli_tempdir_remove(dir);
    if (rc)
        return rc;
    rc = upload_and_load(s, TETHER_MODULE_MCU_IMAGE, name, data, size, NULL, module, nfuncs, info);
    free(data);
    return rc;
}
#endif

int tether_cli_load_module(tether_session *s, const char *path, const char *target,
                           const char *firmware, const char *name, uint64_t *module,
                           uint32_t *nfuncs, tether_cli_module_info *info) {
    if (info)
        info->nnames = -1;
    const tether_device_info *d = tether_session_info(s);
    uint32_t kind;
    int linked = tether_artifact_module_kind(d, path, &kind); /* 1: .o/.a to link first */
    if (linked < 0)
        return linked;
    if (kind != TETHER_MODULE_MCU_IMAGE)
        return upload_and_load(s, kind, name, NULL, 0, path, module, nfuncs, info);
#ifdef TETHER_HAVE_COMPILER
    tether_mcu_firmware fw;
    int frc = find_firmware(d, firmware, &fw);
    if (frc)
        return frc;
    if (!linked) {
        char *data;
        size_t size;
        frc = read_all(path, &data, &size);
        if (frc)
            return frc;
        tether_mcu_image img;
        if (tether_mcu_image_check(&fw, (const uint8_t *)data, size, &img)) {
            free(data);
            return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: %s", path, tether_last_error());
        }
        print_image(base_name(path), &fw, &img);
        image_names(&img, info);
        int rc = upload_and_load(s, TETHER_MODULE_MCU_IMAGE, name, data, size, NULL, module, nfuncs,
                                 info);
        free(data);
        return rc;
    }
    return mcu_link_upload(s, &fw, path, target, name, module, nfuncs, info);
#else
    (void)target;
    (void)firmware;
    if (!linked)
        return upload_and_load(s, TETHER_MODULE_MCU_IMAGE, name, NULL, 0, path, module, nfuncs,
                               info);
    char dev[300];
    describe(d, dev, sizeof dev);
    return tether_set_error(
        TETHER_ERR_UNSUPPORTED,
        "%s: linking for %s needs the compiler, which this build lacks; link it into a "
        ".bin image (docs/mcu.md) and run that",
        path, dev);
#endif
}

#ifdef TETHER_HAVE_COMPILER
int tether_cli_device_target(const tether_device_info *d, char *target, size_t tn, char *cpu,
                             size_t cn) {
    const tether_target *t;
    cpu[0] = 0;
    if (tether_cli_is_mcu(d)) {
        if (tether_target_find(d->arch, &t))
            return fail(1,
                        "the device is a %s board with CPU '%s', for which the compiler has no "
                        "target (give --target)",
                        d->board, d->arch);
        snprintf(target, tn, "%s", t->name);
        return 0;
    }
    char name[160];
    snprintf(name, sizeof name, "%.100s-linux", d->arch);
    if (tether_target_find(name, &t))
        return fail(1,
                    "the device is a %s machine (%s), for which the compiler has no target "
                    "(give --target)",
                    d->arch, d->triple);
    snprintf(target, tn, "%s", t->name);
    snprintf(cpu, cn, "%s", d->cpu);
    return 0;
}
#endif

int tether_cli_artifact_loader(void *ctx, tether_session *s, const char *path, const char *target,
                               const char *name, uint64_t *module) {
    return tether_cli_load_module(s, path, target, (const char *)ctx, name, module, NULL, NULL);
}

void tether_cli_after_failure(tether_session *s, const char *cmd) {
    const char *fault = tether_session_fault(s);
    if (!s || !fault)
        return;
    const tether_device_info *d = tether_session_info(s);
    if (!tether_cli_is_mcu(d))
        return; /* tetherd: the session process is gone, the daemon keeps serving */
    uint32_t before = d->boot_count;
    if (tether_session_reconnect(s) == 0)
        fprintf(stderr,
                "tether %s: the device reset after the fault and is back (boot %u, was %u); "
                "the next command starts a new session\n",
                cmd, (unsigned)d->boot_count, (unsigned)before);
    else
        fprintf(stderr, "tether %s: the device did not come back after the fault: %s\n", cmd,
                tether_last_error());
}

/* ---- tether compile ... --upload ---- */

int tether_cli_image_limits_arg(char **argv, int argc, const tether_device_info *d, char *buf,
                                size_t n) {
    int tex = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--image-max"))
            return 0; /* given by hand */
        tex |= !strcmp(argv[i], "--texture-activations");
    }
    if (!tex || !d->image_max_width || !d->image_max_height)
        return 0;
    snprintf(buf, n, "%ux%u", (unsigned)d->image_max_width, (unsigned)d->image_max_height);
    return 1;
}

int tether_cli_cmd_compile_upload(int argc, char **argv) {
#ifdef TETHER_HAVE_COMPILER
    tether_cli_device dev = {0};
    const char *firmware = NULL, *out = NULL, *target = NULL;
    char **cargv = calloc((size_t)argc + 5, sizeof *cargv);
    if (!cargv)
        return fail(1, "out of memory");
    int cn = 0, rc = 2, upload = 0;
    for (int i = 0; i < argc; i++) {
        upload |= !strcmp(argv[i], "--upload");
    }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = !strcmp(a, "--device") || !strcmp(a, "--firmware") ||
                    !strcmp(a, "--token-file") || !strcmp(a, "--timeout-ms");
        if (takes && !v) {
            fail(2, "%s needs a value", a);
            goto done;
        }
        if (!strcmp(a, "--upload")) {
            continue;
        } else if (!strcmp(a, "--wait")) {
            dev.wait = 1;
            continue;
        } else if (!strcmp(a, "--device")) {
            dev.url = v;
        } else if (!strcmp(a, "--firmware")) {
            firmware = v;
        } else if (!strcmp(a, "--token-file")) {
            dev.token_file = v;
        } else if (!strcmp(a, "--timeout-ms")) {
            char *end;
            long t = strtol(v, &end, 10);
            if (*end || t < 1 || t > 86400000) {
                fail(2, "--timeout-ms: '%s' is not a positive number", v);
                goto done;
            }
            dev.timeout_ms = (int)t;
        } else {
            if (!strcmp(a, "-o") && v)
                out = v;
            if (!strcmp(a, "--target") && v)
                target = v;
            cargv[cn++] = argv[i];
            continue;
        }
        if (takes)
            i++;
    }
    if (!out && upload) {
        fail(2, "--upload needs -o DIR (the artifact the image is linked from)");
        goto done;
    }
    tether_session *s = NULL;
    rc = 1;
    if (tether_cli_open(&dev, &s))
        goto done;
    const tether_device_info *d = tether_session_info(s);
    static char pool_specs[16][TETHER_POOL_NAME_MAX + 40];
    int nspecs = 0;
    for (int i = 0; i + 1 < cn; i++) { /* --pool NAME: the device pool's size, from HELLO */
        if (strcmp(cargv[i], "--pool") != 0 || strchr(cargv[i + 1], ':') || nspecs >= 16)
            continue;
        uint32_t k = 0;
        while (k < d->num_pools && k < 8 && strcmp(d->pools[k], cargv[i + 1]) != 0)
            k++;
        if (k == d->num_pools || k == 8) {
            rc = fail(2, "--pool %s: the device has no such pool (`tether info` lists its pools)",
                      cargv[i + 1]);
            goto close;
        }
        if (d->pool_sizes[k])
            snprintf(pool_specs[nspecs], sizeof pool_specs[0], "%s:global:%llu", d->pools[k],
                     (unsigned long long)d->pool_sizes[k]);
        else
            snprintf(pool_specs[nspecs], sizeof pool_specs[0], "%s:global:unbounded", d->pools[k]);
        cargv[++i] = pool_specs[nspecs++];
    }
    char image_max[64];
    if (tether_cli_image_limits_arg(cargv, cn, d, image_max, sizeof image_max)) {
        cargv[cn++] = "--image-max"; /* texture activations within the device's limits */
        cargv[cn++] = image_max;
    }
    if (!target) {
        /* compile for the device: an MCU's core, else the host profile */
        const tether_target *t;
        if (tether_cli_is_mcu(d) && tether_target_find(d->arch, &t) == 0) {
            cargv[cn++] = "--target";
            cargv[cn++] = (char *)t->name;
            target = t->name;
        } else {
            target = "x86_64-linux";
        }
    }
    cargv[cn] = NULL;
    if (!upload) { /* compile for the device (its target and image limits), no upload */
        rc = tether_cmd_compile(cn, cargv);
        goto close;
    }
    if (tether_artifact_target_check(d, target, NULL, out)) {
        fail(1, "%s", tether_last_error());
        goto close;
    }
    rc = tether_cmd_compile(cn, cargv);
    if (rc)
        goto close;
    rc = 1;
    char path[4200];
    uint64_t module;
    uint32_t nf = 0;
    if (tether_cli_is_mcu(d)) {
        tether_mcu_firmware fw;
        tether_mcu_image img;
        if (find_firmware(d, firmware, &fw) ||
            tether_mcu_link_artifact(&fw, out, out, path, sizeof path, &img)) {
            fail(1, "%s", tether_last_error());
            goto close;
        }
        print_image(base_name(path), &fw, &img);
        char *data;
        size_t size;
        if (read_all(path, &data, &size)) {
            fail(1, "%s", tether_last_error());
            goto close;
        }
        int r = upload_and_load(s, TETHER_MODULE_MCU_IMAGE, base_name(path), data, size, NULL,
                                &module, &nf, NULL);
        free(data);
        if (r) {
            fail(1, "%s", tether_last_error());
            goto close;
        }
        printf("uploaded %s to the %s board (boot %u): SHA-256 verified by the device, %u "
               "function%s loaded",
               path, d->board, (unsigned)d->boot_count, (unsigned)nf, nf == 1 ? "" : "s");
        for (uint32_t i = 0; i < img.num_functions && i < 16; i++)
            printf("%s%s", i ? ", " : ": ", img.functions[i]);
        printf("\n");
    } else {
        /* tetherd: the artifact's shared object */
        snprintf(path, sizeof path, "%s/metadata.json", out);
        FILE *f = fopen(path, "r");
        char lib[256] = "";
        if (f) {
            char line[512];
            while (fgets(line, sizeof line, f))
                if (sscanf(line, " \"library\": \"%255[^\"]\"", lib) == 1)
                    break;
            fclose(f);
        }
        if (!lib[0] || strchr(lib, '/')) {
            fail(1, "%s: metadata.json names no library", out);
            goto close;
        }
        snprintf(path, sizeof path, "%s/%s", out, lib);
        if (upload_and_load(s, 0, lib, NULL, 0, path, &module, &nf, NULL)) {
            fail(1, "%s", tether_last_error());
            goto close;
        }
        printf("uploaded %s: %u function%s loaded\n", path, (unsigned)nf, nf == 1 ? "" : "s");
    }
    rc = 0;
close:
    tether_session_close(s);
done:
    free(cargv);
    return rc;
#else
    (void)argc;
    (void)argv;
    return fail(2, "compile needs the compiler, which this build lacks");
#endif
}
