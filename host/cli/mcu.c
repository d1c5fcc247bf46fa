/*
 * The CLI's device-kind specific parts: loading a module the way the device takes it (shared
 * objects and OpenCL C for tetherd; RAM images for MCU firmware, linked on the fly from .o/.a by
 * the host library, tether/device_compile.h, against the firmware's firmware.json) with the
 * upload's report (SHA-256, function names), the CLI's settings of the host library's
 * compile-for-a-device options (temporary folders, the image line, cached uploads counted),
 * reconnecting after a fault, and `tether compile ... --device URL [--upload]` (the compiler
 * CLI's options completed for the device through the host library, then link and upload).
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

#include "tether/compiler.h"
#include "tether/compiler_cli.h"
#include "tether/device_compile.h"
#include "tether/file.h"
#include "tether/mcu_link.h"

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
    if (!code) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (src[i] == '/' && i + 1 < n && src[i + 1] == '/') {
            while (i < n && src[i] != '\n') {
                code[i++] = ' ';
            }
            if (i < n) {
                code[i] = '\n';
            }
        } else if (src[i] == '/' && i + 1 < n && src[i + 1] == '*') {
            code[i++] = ' ';
            code[i++] = ' ';
            while (i < n && !(src[i] == '*' && i + 1 < n && src[i + 1] == '/')) {
                code[i++] = ' ';
            }
            if (i < n) {
                code[i++] = ' ';
            }
            if (i < n) {
                code[i] = ' ';
            }
        } else {
            code[i] = src[i];
        }
    }
    code[n] = 0;
    for (size_t i = 0; i + 8 < n && info->nnames < 64; i++) {
        if (memcmp(code + i, "__kernel", 8) != 0 ||
            (i && (isalnum((unsigned char)code[i - 1]) || code[i - 1] == '_'))) {
            continue;
        }
        /* __kernel [attributes] void NAME( */
        const char *v = NULL;
        for (size_t k = i + 8; k + 4 < n && code[k] != '(' && code[k] != ';' && code[k] != '{';
             k++) {
            if (code[k] == '_' && !memcmp(code + k, "__attribute__", 13)) { /* skip its (( )) */
                int depth = 0;
                for (k += 13; k < n; k++) {
                    depth += code[k] == '(';
                    depth -= code[k] == ')';
                    if (code[k] == ')' && depth == 0) {
                        break;
                    }
                }
                continue;
            }
            if (!memcmp(code + k, "void", 4) && !isalnum((unsigned char)code[k + 4]) &&
                !isalnum((unsigned char)code[k - 1])) {
                v = code + k + 4;
                break;
            }
        }
        if (!v) {
            continue;
        }
        while (v < code + n && isspace((unsigned char)*v)) {
            v++;
        }
        size_t len = 0;
        while (v + len < code + n && (isalnum((unsigned char)v[len]) || v[len] == '_')) {
            len++;
        }
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
        if (rc) {
            return rc;
        }
        data = owned;
    }
    if (info) {
        info->kind = kind;
        info->bytes = size;
        tether_sha256(data, size, info->sha256);
        if (kind == TETHER_MODULE_OPENCL_SOURCE) {
            kernel_names(data, size, info);
        }
    }
    int rc = data ? tether_session_upload(s, kind, name, data, size)
                  : tether_session_upload_file(s, kind, name, path);
    free(owned);
    if (!rc && tether_session_last_upload_cached(s)) {
        g_uploads_cached++;
        if (info) {
            info->cached = 1;
        }
    }
    uint64_t m = 0;
    if (!rc) {
        rc = tether_session_load_module(s, name, &m, nfuncs);
    }
    if (rc) {
        return rc;
    }
    if (module) {
        *module = m;
    }
    return 0;
}

/* The MCU image line on stdout, and the image's registry names (the first 16) into the upload's
 * report (ctx, may be NULL). */
static void on_image(void *ctx, const char *what, const tether_mcu_firmware *fw,
                     const tether_mcu_image *img) {
    tether_cli_module_info *info = ctx;
    tether_device_image_line(stdout, what, fw, img);
    if (!info) {
        return;
    }
    info->nnames = 0;
    for (uint32_t i = 0; i < img->num_functions && i < 16; i++) {
        snprintf(info->names[info->nnames++], sizeof info->names[0], "%s", img->functions[i]);
    }
}

void tether_cli_device_options(tether_device_compile_options *o, const char *firmware) {
    tether_device_compile_options_init(o);
    o->firmware = firmware;
    o->tempdir_make = tether_cli_tempdir_make; /* removed on SIGINT/SIGTERM/SIGHUP too */
    o->tempdir_remove = tether_cli_tempdir_remove;
    o->path_shown = tether_cli_tempdir_shown;
    o->on_image = on_image;
    o->loader = tether_cli_artifact_loader; /* tether_device_loader, counting cached uploads */
    o->loader_ctx = o;
}

int tether_cli_load_module(tether_session *s, const char *path, const char *target,
                           const char *firmware, const char *name, uint64_t *module,
                           uint32_t *nfuncs, tether_cli_module_info *info) {
    if (info) {
        info->nnames = -1;
    }
    const tether_device_info *d = tether_session_info(s);
    uint32_t kind;
    int linked = tether_artifact_module_kind(d, path, &kind); /* 1: .o/.a to link first */
    if (linked < 0) {
        return linked;
    }
    if (kind != TETHER_MODULE_MCU_IMAGE) {
        return upload_and_load(s, kind, name, NULL, 0, path, module, nfuncs, info);
    }
    /* an MCU board: a .bin checked, .o/.a linked for its firmware (tether/device_compile.h) */
    tether_device_compile_options o;
    tether_cli_device_options(&o, firmware);
    o.on_image_ctx = info;
    uint8_t *data;
    size_t size;
    tether_mcu_image img;
    int rc = tether_device_image(d, &o, path, target, &data, &size, &img);
    if (rc) {
        return rc;
    }
    rc = upload_and_load(s, TETHER_MODULE_MCU_IMAGE, name, data, size, NULL, module, nfuncs, info);
    free(data);
    return rc;
}

int tether_cli_device_target(const tether_device_info *d, char *target, size_t tn, char *cpu,
                             size_t cn) {
    if (tether_device_target(d, target, tn, cpu, cn)) {
        return fail(1, "%s", tether_last_error());
    }
    return 0;
}

int tether_cli_artifact_loader(void *ctx, tether_session *s, const char *path, const char *target,
                               const char *name, uint64_t *module) {
    int rc = tether_device_loader(ctx, s, path, target, name, module);
    if (!rc && tether_session_last_upload_cached(s)) {
        g_uploads_cached++; /* for run/bench --json's upload_cached */
    }
    return rc;
}

void tether_cli_after_failure(tether_session *s, const char *cmd) {
    const char *fault = tether_session_fault(s);
    if (!s || !fault) {
        return;
    }
    const tether_device_info *d = tether_session_info(s);
    if (!tether_cli_is_mcu(d)) {
        return; /* tetherd: the session process is gone, the daemon keeps serving */
    }
    uint32_t before = d->boot_count;
    if (tether_session_reconnect(s) == 0) {
        fprintf(stderr,
                "tether %s: the device reset after the fault and is back (boot %u, was %u); "
                "the next command starts a new session\n",
                cmd, (unsigned)d->boot_count, (unsigned)before);
    } else {
        fprintf(stderr, "tether %s: the device did not come back after the fault: %s\n", cmd,
                tether_last_error());
    }
}

/* ---- tether compile ... --device URL [--upload] ---- */

/* What compile --device/--upload hands the compiler CLI's hook: the session whose HELLO decides
 * the target, CPU, pool sizes and image limits (tether_device_compile_resolve). */
typedef struct compile_device {
    tether_session *s;
    const char *out;
    int upload;
    int target_given; /* --target among the compile's options (else the device's target) */
    tether_device_compile_options dco; /* the compile's options point into it */
} compile_device;

static int compile_hook(void *ctx, tether_compile_options *o, tether_memory_cli *mem) {
    compile_device *c = ctx;
    const tether_device_info *d = tether_session_info(c->s);
    for (int k = 0; k < mem->opts.npools; k++) { /* "--pool NAME": the device's pool size */
        if (mem->from_device[k]) {
            mem->pools[k].capacity = TETHER_POOL_SIZE_FROM_DEVICE;
            mem->from_device[k] = false;
        }
    }
    c->dco.compile = *o;
    if (!c->target_given) { /* the compiler CLI's default profile gives way to the device's */
        c->dco.compile.build.target = NULL;
    }
    int rc = tether_device_compile_resolve(d, &c->dco);
    if (rc) {
        return fail(rc == TETHER_ERR_INVALID_ARG ? 2 : 1, "%s", tether_last_error());
    }
    *o = c->dco.compile;
    /* what the device cannot run is refused before the compile */
    if (c->upload && o->backend != TETHER_BACKEND_OPENCL &&
        tether_artifact_target_check(d, o->build.target, o->build.cpu, c->out)) {
        return fail(1, "%s", tether_last_error());
    }
    return 0;
}

int tether_cli_cmd_compile_upload(int argc, char **argv) {
    tether_cli_device dev = {0};
    const char *firmware = NULL, *out = NULL;
    char **cargv = calloc((size_t)argc + 1, sizeof *cargv);
    if (!cargv) {
        return fail(1, "out of memory");
    }
    int cn = 0, rc = 2, upload = 0, target_given = 0;
    for (int i = 0; i < argc; i++) {
        upload |= !strcmp(argv[i], "--upload");
    }
    /* the device's options are taken out; everything else is the compile's, unchanged */
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
            if (!strcmp(a, "-o") && v) {
                out = v;
            }
            target_given |= !strcmp(a, "--target");
            cargv[cn++] = argv[i];
            continue;
        }
        if (takes) {
            i++;
        }
    }
    cargv[cn] = NULL;
    if (!out && upload) {
        fail(2, "--upload needs -o DIR (the artifact the image is linked from)");
        goto done;
    }
    static compile_device c;
    memset(&c, 0, sizeof c);
    rc = 1;
    if (tether_cli_open(&dev, &c.s)) {
        goto done;
    }
    const tether_device_info *d = tether_session_info(c.s);
    c.out = out;
    c.upload = upload;
    c.target_given = target_given;
    tether_cli_device_options(&c.dco, firmware);
    /* compiled for the device (its target and CPU, pool sizes, image limits) */
    rc = tether_cmd_compile_with(cn, cargv, compile_hook, &c);
    if (rc || !upload) {
        goto close;
    }
    rc = 1;
    char path[4200];
    uint64_t module;
    uint32_t nf = 0;
    if (tether_cli_is_mcu(d)) {
        tether_mcu_firmware fw;
        tether_mcu_image img;
        /* linked into DIR/lib<prefix>-<board>.bin, kept with the artifact */
        if (tether_device_firmware(d, &c.dco, &fw) ||
            tether_mcu_link_artifact(&fw, out, out, path, sizeof path, &img)) {
            fail(1, "%s", tether_last_error());
            goto close;
        }
        tether_device_image_line(stdout, base_name(path), &fw, &img);
        uint8_t *data;
        size_t size;
        if (tether_file_read(path, TETHER_UPLOAD_MAX_BYTES, &data, &size)) {
            fail(1, "%s", tether_last_error());
            goto close;
        }
        int r = upload_and_load(c.s, TETHER_MODULE_MCU_IMAGE, base_name(path), data, size, NULL,
                                &module, &nf, NULL);
        free(data);
        if (r) {
            fail(1, "%s", tether_last_error());
            goto close;
        }
        printf("uploaded %s to the %s board (boot %u): SHA-256 verified by the device, %u "
               "function%s loaded",
               path, d->board, (unsigned)d->boot_count, (unsigned)nf, nf == 1 ? "" : "s");
        for (uint32_t i = 0; i < img.num_functions && i < 16; i++) {
            printf("%s%s", i ? ", " : ": ", img.functions[i]);
        }
        printf("\n");
    } else {
        /* tetherd: the artifact's shared object */
        snprintf(path, sizeof path, "%s/metadata.json", out);
        FILE *f = fopen(path, "r");
        char lib[256] = "";
        if (f) {
            char line[512];
            while (fgets(line, sizeof line, f)) {
                if (sscanf(line, " \"library\": \"%255[^\"]\"", lib) == 1) {
                    break;
                }
            }
            fclose(f);
        }
        if (!lib[0] || strchr(lib, '/')) {
            fail(1, "%s: metadata.json names no library", out);
            goto close;
        }
        snprintf(path, sizeof path, "%s/%s", out, lib);
        if (upload_and_load(c.s, 0, lib, NULL, 0, path, &module, &nf, NULL)) {
            fail(1, "%s", tether_last_error());
            goto close;
        }
        printf("uploaded %s: %u function%s loaded\n", path, (unsigned)nf, nf == 1 ? "" : "s");
    }
    rc = 0;
close:
    tether_session_close(c.s);
    c.s = NULL;
done:
    free(cargv);
    return rc;
}
