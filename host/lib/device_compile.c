/*
 * Compile for the device a session talks to (tether/device_compile.h): the choices taken from
 * the device's HELLO (target and CPU, with the extensions its cpu_features name; pool sizes,
 * image limits, OpenCL work limits), the MCU link against the board's firmware.json, the loader
 * that uploads what the device runs, and tether_compile_for_device, which does all of it. The one
 * home of these steps: the CLI (run, bench, ab, tune, compile --device/--upload, upload of .o/.a)
 * and the Python package call into this file.
 *
 * What must stay true: nothing is uploaded to a device that cannot run it (a shared object to an
 * MCU, a Cortex-M library to tetherd, an image linked for another firmware build: each is an
 * error before any byte is sent); a temporary link folder is removed on every path and no path
 * into it survives in a message; a failed tether_compile_for_device leaves no artifact open.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tether/crt.h"
#include "tether/device_compile.h"
#include "tether/file.h"

void tether_device_compile_options_init(tether_device_compile_options *o) {
    memset(o, 0, sizeof *o);
    tether_compile_options_init(&o->compile);
    o->compile.build.target = NULL; /* the device's, unless the caller names one */
}

static int is_mcu(const tether_device_info *d) {
    return d && d->load_size > 0; /* the device announced a RAM load region */
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int tether_device_target(const tether_device_info *d, char *target, size_t tn, char *cpu,
                         size_t cn) {
    const tether_target *t;
    cpu[0] = 0;
    if (is_mcu(d)) {
        if (tether_target_find(d->arch, &t)) {
            return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                    "the device is a %s board with CPU '%s', for which the "
                                    "compiler has no target (give --target)",
                                    d->board, d->arch);
        }
        snprintf(target, tn, "%s", t->name);
        return 0;
    }
    char name[160];
    snprintf(name, sizeof name, "%.100s-linux", d->arch);
    if (tether_target_find(name, &t)) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "the device is a %s machine (%s), for which the compiler has no "
                                "target (give --target)",
                                d->arch, d->triple);
    }
    snprintf(target, tn, "%s", t->name);
    /* HELLO's -march value plus the int8 dot products its features name (x86-64-v3+avxvnni,
     * x86-64-v4+avx512vnni: -mavxvnni / -mavx512vnni, tether_cpu_flags) */
    tether_cpu_for_device(d->cpu, d->cpu_features, cpu, cn);
    return 0;
}

int tether_device_compile_resolve(const tether_device_info *d, tether_device_compile_options *o) {
    tether_compile_options *c = &o->compile;
    if (c->backend == TETHER_BACKEND_OPENCL) {
        /* texture activations within the device's image limits, unless set */
        if (c->opencl.texture_activations && !c->opencl.image_max_width &&
            !c->opencl.image_max_height) {
            c->opencl.image_max_width = d->image_max_width;
            c->opencl.image_max_height = d->image_max_height;
        }
        /* the kernels sized by the device's work limits (HELLO; 0 from a device that does not
         * report one keeps the compiler's default), each unless the caller set it */
        if (!c->opencl.max_work_group_size) {
            c->opencl.max_work_group_size =
                (int)(d->cl_max_work_group_size > INT32_MAX ? INT32_MAX
                                                            : d->cl_max_work_group_size);
        }
        if (!c->opencl.wg_multiple) {
            c->opencl.wg_multiple =
                (int)(d->cl_wg_multiple > INT32_MAX ? INT32_MAX : d->cl_wg_multiple);
        }
        if (!c->opencl.local_mem_size) {
            c->opencl.local_mem_size =
                (int64_t)(d->cl_local_mem_size > INT64_MAX ? INT64_MAX : d->cl_local_mem_size);
        }
        if (!c->opencl.compute_units) {
            c->opencl.compute_units =
                (int)(d->cl_compute_units > INT32_MAX ? INT32_MAX : d->cl_compute_units);
        }
        /* float64 kernels only where the device reports cl_khr_fp64 (unless the caller set
         * it): without it a float64 tensor is refused at compile time, naming the tensor */
        if (!c->opencl.fp64) {
            c->opencl.fp64 = d->cl_fp64;
        }
        o->resolved = 1;
        return 0;
    }
    if (!c->build.target) { /* the device's target, and its CPU unless given */
        int rc = tether_device_target(d, o->target, sizeof o->target, o->cpu, sizeof o->cpu);
        if (rc) {
            return rc;
        }
        c->build.target = o->target;
        if (!c->build.cpu) {
            c->build.cpu = o->cpu;
        }
    } else {
        const tether_target *t;
        if (tether_target_find(c->build.target, &t)) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "--target: %s", tether_last_error());
        }
    }
    int n = c->memory.npools;
    if (n > TETHER_MEMORY_MAX_POOLS) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "more than %d memory pools",
                                TETHER_MEMORY_MAX_POOLS);
    }
    if (n && c->memory.pools != o->pools) {
        for (int k = 0; k < n; k++) {
            o->pools[k] = c->memory.pools[k];
        }
        c->memory.pools = o->pools;
    }
    uint32_t np = d->num_pools < 8 ? d->num_pools : 8;
    for (int k = 0; k < n; k++) { /* "--pool NAME": the size of the device's pool */
        if (o->pools[k].capacity != TETHER_POOL_SIZE_FROM_DEVICE) {
            continue;
        }
        uint32_t i = 0;
        while (i < np && strcmp(d->pools[i], o->pools[k].name) != 0) {
            i++;
        }
        if (i == np) {
            char have[300] = "";
            for (uint32_t j = 0; j < np; j++) {
                size_t l = strlen(have);
                snprintf(have + l, sizeof have - l, "%s%s", j ? ", " : "", d->pools[j]);
            }
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "--pool %s: the device has no such pool (its pools: %s)",
                                    o->pools[k].name, have[0] ? have : "none");
        }
        o->pools[k].capacity = (int64_t)d->pool_sizes[i]; /* 0 = unbounded */
    }
    o->resolved = 1;
    return 0;
}

/* ---- MCU boards: firmware and link ---- */

/* The default places of firmware builds: beside this program's build tree (build/host/cli/tether
 * -> build/device/mcu) and an installation (bin/tether -> share/tether/firmware). */
static int default_firmware_dirs(char dirs[2][3100]) {
    char exe[3000];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        return 0;
    }
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) {
        return 0;
    }
    *slash = 0;
    snprintf(dirs[0], sizeof dirs[0], "%s/../../device/mcu", exe);
    snprintf(dirs[1], sizeof dirs[1], "%s/../share/tether/firmware", exe);
    return 2;
}

int tether_device_firmware(const tether_device_info *d, const tether_device_compile_options *o,
                           tether_mcu_firmware *fw) {
    int rc;
    const char *opt = o ? o->firmware : NULL;
    if (opt) {
        char p[4200];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s/firmware.json", opt, d->board);
        if (stat(opt, &st) == 0 && S_ISDIR(st.st_mode) && access(p, R_OK) == 0) {
            rc = tether_mcu_firmware_load(p, fw);
        } else {
            rc = tether_mcu_firmware_load(opt, fw);
        }
    } else if (o && o->firmware_dirs) {
        rc = tether_mcu_firmware_find(d->board, o->firmware_dirs, o->nfirmware_dirs, fw);
    } else {
        char dirs[2][3100];
        const char *dp[2] = {dirs[0], dirs[1]};
        int n = default_firmware_dirs(dirs);
        rc = tether_mcu_firmware_find(d->board, dp, n, fw);
    }
    if (!rc) {
        rc = tether_mcu_firmware_check(fw, d->board, d->load_addr, d->load_size, d->exports_id);
    }
    return rc;
}

void tether_device_image_line(FILE *f, const char *what, const tether_mcu_firmware *fw,
                              const tether_mcu_image *img) {
    fprintf(f,
            "%s: MCU image %llu bytes (code %llu, read-only data %llu) + .bss %llu bytes, linked "
            "at 0x%08llx for %s, %u function%s\n",
            what, (unsigned long long)img->size, (unsigned long long)img->code,
            (unsigned long long)img->rodata, (unsigned long long)img->bss_size,
            (unsigned long long)img->link_addr, fw->board, (unsigned)img->num_functions,
            img->num_functions == 1 ? "" : "s");
    fflush(f);
}

static void say_image(const tether_device_compile_options *o, const char *what,
                      const tether_mcu_firmware *fw, const tether_mcu_image *img) {
    if (o && o->on_image) {
        o->on_image(o->on_image_ctx, what, fw, img);
    } else if (o && o->notes) {
        tether_device_image_line(o->notes, what, fw, img);
    }
}

static int tempdir_make(const tether_device_compile_options *o, char *out, size_t n) {
    if (o && o->tempdir_make) {
        return o->tempdir_make(out, n, "mcu");
    }
    const char *t = getenv("TMPDIR");
    snprintf(out, n, "%s/tether-mcu-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(out)) {
        return tether_set_error(TETHER_ERR_IO, "cannot make a temporary folder in %s: %s",
                                t && *t ? t : "/tmp", strerror(errno));
    }
    return 0;
}

static void tempdir_remove(const tether_device_compile_options *o, const char *dir) {
    if (o && o->tempdir_remove) {
        o->tempdir_remove(dir);
        return;
    }
    static const char *const files[] = {"module.elf", "module.bin", "module.bin.log"};
    char p[700];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* The link in a temporary folder `dir` failed: the message without any path into it (the log's
 * " (see LOG)" ends it, possibly cut short by the message limit), and the linker's first line
 * added, without the folder, only for the generic message (a region overflow or a missing
 * export says all there is to say). */
static int link_failed(int lrc, const char *dir, const char *log, const char *shown) {
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
        if (!fgets(first, sizeof first, f)) {
            first[0] = 0;
        }
        fclose(f);
        first[strcspn(first, "\n")] = 0;
        char *at;
        while ((at = strstr(first, dir)) != NULL) { /* "DIR/module.elf" -> "module.elf" */
            size_t n = strlen(dir) + (at[strlen(dir)] == '/');
            memmove(at, at + n, strlen(at + n) + 1);
        }
    }
    return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: %s%s%s", shown, e,
                            first[0] ? "; linker: " : "", first);
}

int tether_device_image(const tether_device_info *d, const tether_device_compile_options *o,
                        const char *path, const char *target, uint8_t **data, size_t *size,
                        tether_mcu_image *img) {
    *data = NULL;
    *size = 0;
    tether_mcu_firmware fw;
    int rc = tether_device_firmware(d, o, &fw);
    if (rc) {
        return rc;
    }
    size_t pl = strlen(path);
    if (pl > 4 && !strcmp(path + pl - 4, ".bin")) { /* an image: checked as the firmware will */
        rc = tether_file_read(path, TETHER_UPLOAD_MAX_BYTES, data, size);
        if (rc) {
            return rc;
        }
        if (tether_mcu_image_check(&fw, *data, *size, img)) {
            rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: %s", path, tether_last_error());
            free(*data);
            *data = NULL;
            return rc;
        }
        say_image(o, base_name(path), &fw, img);
        return 0;
    }
    char dir[600];
    rc = tempdir_make(o, dir, sizeof dir);
    if (rc) {
        return rc;
    }
    char elf[700], bin[700], log[700];
    snprintf(elf, sizeof elf, "%s/module.elf", dir);
    snprintf(bin, sizeof bin, "%s/module.bin", dir);
    snprintf(log, sizeof log, "%s/module.bin.log", dir);
    const char *in[1] = {path};
    int lrc = tether_mcu_link(&fw, target, in, 1, elf, bin, img);
    if (lrc) {
        rc = link_failed(lrc, dir, log, o && o->path_shown ? o->path_shown(path) : path);
    } else {
        say_image(o, base_name(path), &fw, img);
        rc = tether_file_read(bin, TETHER_UPLOAD_MAX_BYTES, data, size);
    }
    tempdir_remove(o, dir);
    return rc;
}

int tether_device_loader(void *ctx, tether_session *s, const char *path, const char *target,
                         const char *name, uint64_t *module) {
    const tether_device_compile_options *o = ctx;
    const tether_device_info *d = tether_session_info(s);
    uint32_t kind;
    int linked = tether_artifact_module_kind(d, path, &kind); /* 1: .o/.a to link first */
    if (linked < 0) {
        return linked;
    }
    if (kind != TETHER_MODULE_MCU_IMAGE) {
        return tether_artifact_default_loader(NULL, s, path, target, name, module);
    }
    uint8_t *data;
    size_t size;
    tether_mcu_image img;
    int rc = tether_device_image(d, o, path, target, &data, &size, &img);
    if (rc) {
        return rc;
    }
    rc = tether_session_upload(s, TETHER_MODULE_MCU_IMAGE, name, data, size);
    free(data);
    uint64_t m = 0;
    if (!rc) {
        rc = tether_session_load_module(s, name, &m, NULL);
    }
    if (!rc && module) {
        *module = m;
    }
    return rc;
}

int tether_device_prepare(tether_artifact *a, tether_session *s,
                          const tether_device_compile_options *o) {
    tether_artifact_options ao;
    tether_artifact_options_init(&ao);
    ao.loader = o && o->loader ? o->loader : tether_device_loader;
    ao.loader_ctx = o && o->loader ? o->loader_ctx : (void *)o;
    return tether_artifact_prepare(a, s, &ao);
}

int tether_compile_for_device(tether_session *s, const char *model, const char *dir,
                              tether_device_compile_options *o, tether_compile_result *res,
                              tether_artifact **out) {
    if (out) {
        *out = NULL;
    }
    tether_compile_result mine;
    if (!res) {
        res = &mine;
    }
    memset(res, 0, sizeof *res);
    int rc = tether_device_compile_resolve(tether_session_info(s), o);
    if (rc) {
        return rc;
    }
    tether_tuning_log log;
    tether_node_schedule *ns = NULL;
    if (o->tuning_log && tether_tuning_log_apply(o->tuning_log, &o->compile, &log, &ns)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "--tuning-log: %s", tether_last_error());
    }
    rc = tether_compile_model(model, dir, &o->compile, res);
    if (o->tuning_log) {
        if (!rc && o->notes) {
            tether_tuning_note(o->notes, res, &log, &o->compile);
        }
        free(ns);
        tether_tuning_log_close(&log);
        o->compile.codegen.node_schedules = NULL; /* pointed into ns */
        o->compile.codegen.nnode_schedules = 0;
        o->compile.opencl.node_schedules = NULL;
        o->compile.opencl.nnode_schedules = 0;
    }
    if (rc || !out) {
        return rc;
    }
    tether_artifact *a = NULL;
    rc = tether_artifact_open(dir, &a);
    if (!rc) {
        rc = tether_device_prepare(a, s, o);
    }
    if (rc) {
        tether_artifact_free(a);
        return rc;
    }
    *out = a;
    return 0;
}
