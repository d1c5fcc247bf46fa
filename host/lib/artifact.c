/*
 * Running compiled artifacts on a device (tether/artifact.h): the C backend here, the OpenCL
 * backend in opencl_artifact.c, behind one object.
 *
 * What must stay true: everything that can be checked locally (metadata, signature, params
 * blob size, the artifact's target against the device) is checked before any byte is sent; an
 * artifact never reaches a device that cannot run it; every remote array allocated here is
 * freed by tether_artifact_free unless the session was lost (the device then drops them with
 * the session); nothing is printed: errors go to tether_last_error().
 */
#include "tether/artifact.h"
#include "tether/compiler.h"
#include "tether/mcu_link.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "artifact_internal.h"
#include "opencl_artifact.h"
#include "tether/crt.h"
#include "tether/file.h"

#define MAX_IO    TETHER_ARTIFACT_MAX_IO
#define MAX_POOLS 8

typedef struct io_entry {
    char name[128];
    DLDataType dtype;
    int ndim;
    int64_t shape[TETHER_MAX_NDIM];
    size_t nbytes;
    /* data-dependent size (metadata "dynamic_dim", "extent_output", "extent_of"; -1 none) */
    int dyn_dim, extent_output, extent_of;
} io_entry;

struct tether_artifact {
    char dir[1024];
    tether_artifact_backend backend;
    tether__ocl_artifact *ocl;
    /* the C backend: from metadata.json */
    char entry[128], target[64], cpu[64], library[256];
    char params_file[256], set_params[128]; /* "" = weights linked into the library */
    char params_pool[TETHER_POOL_NAME_MAX]; /* device pool of the blob ("" = default) */
    size_t params_bytes;
    int nin, nout;
    io_entry in[MAX_IO], out[MAX_IO];
    /* pool_arguments: the entry takes one uint8 buffer per pool after the outputs */
    int npools;
    char pool_name[MAX_POOLS][TETHER_POOL_NAME_MAX];
    int64_t pool_size[MAX_POOLS];
    /* after prepare */
    tether_session *s; /* borrowed */
    int prepared;
    tether_remote_func f;
    tether_remote_arg args[2 * MAX_IO + MAX_POOLS];
    uint64_t arrays[2 * MAX_IO + MAX_POOLS + 2]; /* every remote array: freed by _free */
    int narrays;
    /* a profiling build (metadata "profile", docs/profile.md): the object as text; C: the
     * function copying the table out, its size, and after prepare its array argument */
    char *profile;
    char profile_fn[128];
    size_t profile_bytes;
    tether_remote_func pf;
    tether_remote_arg parg;
};

void tether_artifact_options_init(tether_artifact_options *o) {
    memset(o, 0, sizeof *o);
}

/* ---- the device side of a module ---- */

static int is_mcu(const tether_device_info *d) {
    return d && d->load_size > 0;
}

/* "the mps2-an385 board (cortex-m3)" / "a x86_64 device (x86_64-linux-gnu)" */
static void describe(const tether_device_info *d, char *out, size_t n) {
    if (is_mcu(d)) {
        snprintf(out, n, "the %s board (%s)", d->board[0] ? d->board : "MCU", d->arch);
    } else {
        snprintf(out, n, "a %s device (%s)", d->arch, d->triple);
    }
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* The level N of "x86-64-vN" (1 for "x86-64" and ""), 0 when cpu is not an x86-64 level; tether's
 * +extensions after it ("x86-64-v3+avxvnni") are not part of the level. */
static int x86_level(const char *cpu) {
    size_t n = strcspn(cpu, "+");
    if (n == 0 || (n == 6 && strncmp(cpu, "x86-64", 6) == 0)) {
        return 1;
    }
    if (n == 9 && strncmp(cpu, "x86-64-v", 8) == 0 && cpu[8] >= '2' && cpu[8] <= '4') {
        return cpu[8] - '0';
    }
    return 0;
}

/* Every space-separated token of `need` is one of the device's cpu_features. */
static int has_features(const tether_device_info *d, const char *need) {
    char have[300];
    snprintf(have, sizeof have, " %s ", d->cpu_features);
    for (const char *p = need; *p; p += strspn(p, " ")) {
        size_t n = strcspn(p, " ");
        if (!n) {
            break;
        }
        char tok[64];
        snprintf(tok, sizeof tok, " %.*s ", (int)(n < 60 ? n : 60), p);
        if (!strstr(have, tok)) {
            return 0;
        }
        p += n;
    }
    return 1;
}

static int cpu_check(const tether_device_info *d, const char *cpu, const char *what,
                     const char *dev) {
    if (!cpu || !cpu[0] || strcmp(cpu, "native") == 0 || strcmp(cpu, d->cpu) == 0) {
        return 0;
    }
    const char *instead = is_mcu(d) ? d->arch : d->cpu[0] ? d->cpu : "(none: the baseline)";
    if (is_mcu(d)) {
        if (strcmp(cpu, d->arch) == 0) {
            return 0;
        }
    } else if (x86_level(cpu) && x86_level(d->cpu)) {
        /* the level, and the features each +extension needs (+avxvnni: avxvnni) */
        char need[200];
        if (x86_level(cpu) <= x86_level(d->cpu) && tether_cpu_needs(cpu, need, sizeof need) >= 0 &&
            has_features(d, need)) {
            return 0;
        }
    } else if (strncmp(cpu, "armv8", 5) == 0) { /* every +extension must be the device's */
        int ok = 1;
        for (const char *p = strchr(cpu, '+'); ok && p; p = strchr(p + 1, '+')) {
            size_t n = strcspn(p + 1, "+");
            char ext[64];
            snprintf(ext, sizeof ext, " %.*s ", (int)(n < 60 ? n : 60), p + 1);
            char have[300];
            snprintf(have, sizeof have, " %s ", d->cpu_features);
            ok = strstr(have, ext) != NULL;
        }
        if (ok) {
            return 0;
        }
    }
    return tether_set_error(TETHER_ERR_MISMATCH,
                            "%s was compiled for CPU %s, which %s does not have (its cpu: %s): "
                            "compile with --mcpu %s, or without --mcpu",
                            what, cpu, dev, d->cpu[0] ? d->cpu : "the baseline", instead);
}

int tether_artifact_target_check(const tether_device_info *d, const char *target, const char *cpu,
                                 const char *what) {
    char dev[300];
    describe(d, dev, sizeof dev);
    const tether_target *tt;
    int mcu_target =
        tether_target_find(target, &tt) == TETHER_OK && tt->kind == TETHER_TARGET_STATIC;
    if (is_mcu(d) && !mcu_target) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "%s was compiled for %s, but the device is %s: compile with "
                                "--target %s",
                                what, target, dev, d->arch);
    }
    if (!is_mcu(d) && mcu_target) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "%s was compiled for %s (a static library for MCU firmware), but "
                                "the device is %s, which loads shared objects: compile with "
                                "--target %s-linux",
                                what, target, dev, d->arch);
    }
    /* an MCU target must run on the board's core: instruction set, float ABI, FPU precision,
     * DSP and MVE, from HELLO (arch, cpu_features), before anything is uploaded */
    if (is_mcu(d) && tether_mcu_target_check(target, d->board[0] ? d->board : "MCU", d->arch,
                                             d->cpu_features) != TETHER_OK) {
        char why[400];
        snprintf(why, sizeof why, "%s", tether_last_error());
        return tether_set_error(TETHER_ERR_MISMATCH, "%s: %s", what, why);
    }
    /* a Linux target must match the device's architecture ("aarch64-linux" on an aarch64) */
    const char *dash = strstr(target, "-linux");
    if (!is_mcu(d) && dash &&
        ((size_t)(dash - target) != strlen(d->arch) ||
         strncmp(target, d->arch, (size_t)(dash - target)) != 0)) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "%s was compiled for %s, but the device is %s: compile with "
                                "--target %s-linux",
                                what, target, dev, d->arch);
    }
    return cpu_check(d, cpu, what, dev);
}

int tether_artifact_module_kind(const tether_device_info *d, const char *path, uint32_t *kind) {
    char dev[300];
    describe(d, dev, sizeof dev);
    if (ends_with(path, ".cl")) {
        *kind = TETHER_MODULE_OPENCL_SOURCE;
        return 0;
    }
    int is_object = ends_with(path, ".a") || ends_with(path, ".o");
    int is_image = ends_with(path, ".bin");
    if (!is_mcu(d)) {
        if (is_object || is_image) {
            return tether_set_error(TETHER_ERR_MISMATCH,
                                    "%s is %s for MCU firmware, but the device is %s, which loads "
                                    "shared objects: compile with --target %s-linux",
                                    path, is_image ? "a RAM image" : "code", dev, d->arch);
        }
        *kind = TETHER_MODULE_SHARED_OBJECT;
        return 0;
    }
    if (ends_with(path, ".so")) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "%s is a shared object for tetherd, but the device is %s, which "
                                "runs RAM images: compile with --target %s (the CLI links .o/.a "
                                "files for it)",
                                path, dev, d->arch);
    }
    *kind = TETHER_MODULE_MCU_IMAGE;
    return is_object ? 1 : 0;
}

int tether_artifact_default_loader(void *ctx, tether_session *s, const char *path,
                                   const char *target, const char *name, uint64_t *module) {
    (void)ctx;
    (void)target;
    uint32_t kind;
    int rc = tether_artifact_module_kind(tether_session_info(s), path, &kind);
    if (rc == 1) {
        char dev[300];
        describe(tether_session_info(s), dev, sizeof dev);
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "%s: linking for %s needs the compiler's MCU link step (the "
                                "`tether` CLI does it); link it into a .bin image (docs/mcu.md) "
                                "and run that",
                                path, dev);
    }
    if (rc == 0) {
        rc = tether_session_upload_file(s, kind, name, path);
    }
    if (rc == 0) {
        rc = tether_session_load_module(s, name, module, NULL);
    }
    return rc;
}

/* ---- reading ---- */

static int bad(const char *dir, const char *msg) {
    return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: %s", dir, msg);
}

int tether__artifact_file_name_ok(const char *s) {
    return s[0] && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 &&
           strlen(s) < 200;
}

/* The outputs' data-dependent sizes are consistent: a dynamic output names a dimension it has
 * and an int64 [1] extent output that names it back; extent outputs come after the others. The
 * C and the OpenCL artifact loaders both ask this one check (tether__artifact_check_dynamic). */
int tether__artifact_check_dynamic(const tether__io_dyn *io, int n, char *why, size_t cap) {
    int first_extent = n;
    for (int i = 0; i < n; i++) {
        const tether__io_dyn *e = &io[i];
        int k = e->extent_output;
        const tether__io_dyn *x = k >= 0 && k < n ? &io[k] : NULL;
        if ((e->dyn_dim >= 0) != (k >= 0) || (e->dyn_dim >= e->ndim) ||
            (k >= 0 && (!x || x->extent_of != i || x->ndim != 1 || x->len0 != 1 ||
                        !tether_dtype_equal(x->dtype, TETHER_INT64))) ||
            (e->extent_of >= 0 && (e->extent_of >= n || io[e->extent_of].extent_output != i))) {
            snprintf(why, cap,
                     "output '%s': dynamic_dim, extent_output and extent_of do not agree (an "
                     "output of data-dependent size names its dimension and its int64 [1] "
                     "extent output, which names it back)",
                     e->name);
            return TETHER_ERR_INVALID_ARG;
        }
        if (e->extent_of >= 0 && i < first_extent) {
            first_extent = i;
        } else if (e->extent_of < 0 && i > first_extent) {
            snprintf(why, cap,
                     "output '%s' comes after an extent output (extent outputs come last)",
                     e->name);
            return TETHER_ERR_INVALID_ARG;
        }
    }
    return 0;
}

static int check_dynamic(const tether_artifact *a) {
    tether__io_dyn *d = calloc(a->nout > 0 ? (size_t)a->nout : 1, sizeof *d);
    if (!d) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < a->nout; i++) {
        const io_entry *e = &a->out[i];
        d[i] = (tether__io_dyn){e->name,     e->ndim,    e->ndim > 0 ? e->shape[0] : 1,
                                e->dtype,    e->dyn_dim, e->extent_output,
                                e->extent_of};
    }
    char why[400];
    int rc = tether__artifact_check_dynamic(d, a->nout, why, sizeof why);
    free(d);
    return rc ? tether_set_error(rc, "%s: metadata.json: %s", a->dir, why) : 0;
}

static int read_io(tether_artifact *a, const cJSON *arr, int output) {
    int n = cJSON_GetArraySize(arr);
    if (n > MAX_IO) {
        return tether_set_error(TETHER_ERR_LIMIT, "%s: metadata.json: %d %s, at most %d", a->dir, n,
                                output ? "outputs" : "inputs", MAX_IO);
    }
    for (int i = 0; i < n; i++) {
        const cJSON *o = cJSON_GetArrayItem(arr, i);
        const cJSON *jn = cJSON_GetObjectItem(o, "name"), *jd = cJSON_GetObjectItem(o, "dtype"),
                    *js = cJSON_GetObjectItem(o, "shape");
        io_entry *e = output ? &a->out[i] : &a->in[i];
        snprintf(e->name, sizeof e->name, "%s", cJSON_IsString(jn) ? jn->valuestring : "?");
        if (!cJSON_IsString(jd) || tether_dtype_parse(jd->valuestring, &e->dtype) ||
            !cJSON_IsArray(js) || cJSON_GetArraySize(js) > TETHER_MAX_NDIM) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "%s: metadata.json: %s %d ('%s') has no valid dtype/shape",
                                    a->dir, output ? "output" : "input", i, e->name);
        }
        e->ndim = cJSON_GetArraySize(js);
        for (int k = 0; k < e->ndim; k++) {
            const cJSON *v = cJSON_GetArrayItem(js, k);
            if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9.0e15) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s: metadata.json: %s '%s' has a bad extent", a->dir,
                                        output ? "output" : "input", e->name);
            }
            e->shape[k] = (int64_t)v->valuedouble;
        }
        if (tether_shape_bytes(e->shape, e->ndim, e->dtype, &e->nbytes)) {
            return tether_set_error(TETHER_ERR_LIMIT, "%s: metadata.json: %s '%s': %s", a->dir,
                                    output ? "output" : "input", e->name, tether_last_error());
        }
        const char *keys[3] = {"dynamic_dim", "extent_output", "extent_of"};
        int *vals[3] = {&e->dyn_dim, &e->extent_output, &e->extent_of};
        for (int k = 0; k < 3; k++) {
            const cJSON *v = output ? cJSON_GetObjectItem(o, keys[k]) : NULL;
            *vals[k] = -1;
            if (v && (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > MAX_IO)) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s: metadata.json: output '%s' "
                                        "has a bad %s",
                                        a->dir, e->name, keys[k]);
            }
            *vals[k] = v ? (int)v->valuedouble : -1;
        }
    }
    if (output) {
        a->nout = n;
        return check_dynamic(a);
    } else {
        a->nin = n;
    }
    return 0;
}

/* metadata.json of a C artifact. */
static int open_c(tether_artifact *a, const cJSON *md) {
    const char *dir = a->dir;
    const cJSON *fmt = cJSON_GetObjectItem(md, "format"), *lib = cJSON_GetObjectItem(md, "library"),
                *entry = cJSON_GetObjectItem(md, "entry"), *ins = cJSON_GetObjectItem(md, "inputs"),
                *outs = cJSON_GetObjectItem(md, "outputs"),
                *ver = cJSON_GetObjectItem(md, "version");
    const cJSON *ename = entry ? cJSON_GetObjectItem(entry, "name") : NULL;
    int is_artifact = cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "tether-artifact");
    if (is_artifact && (!cJSON_IsNumber(ver) || ver->valuedouble != 1)) {
        return tether_set_error(
            TETHER_ERR_UNSUPPORTED,
            "%s: metadata.json: artifact format version %lld, this tether reads "
            "version 1",
            dir, cJSON_IsNumber(ver) ? (long long)ver->valuedouble : 0LL);
    }
    if (is_artifact && cJSON_IsNull(lib)) {
        return bad(dir, "the artifact was compiled with --no-build: it has no library to run");
    }
    if (!is_artifact || !cJSON_IsString(lib) || !cJSON_IsString(ename) || !cJSON_IsArray(ins) ||
        !cJSON_IsArray(outs)) {
        return bad(dir, "metadata.json is not a tether artifact (format, library, entry, inputs, "
                        "outputs)");
    }
    if (!tether__artifact_file_name_ok(lib->valuestring)) {
        return bad(dir, "metadata.json: library must be a file name in the directory");
    }
    snprintf(a->library, sizeof a->library, "%s", lib->valuestring);
    snprintf(a->entry, sizeof a->entry, "%s", ename->valuestring);
    const cJSON *jt = cJSON_GetObjectItem(md, "target");
    snprintf(a->target, sizeof a->target, "%s",
             cJSON_IsString(jt) ? jt->valuestring : "x86_64-linux");
    const cJSON *jc = cJSON_GetObjectItem(md, "cpu");
    snprintf(a->cpu, sizeof a->cpu, "%s", cJSON_IsString(jc) ? jc->valuestring : "");
    int rc = read_io(a, ins, 0);
    if (!rc) {
        rc = read_io(a, outs, 1);
    }
    if (rc) {
        return rc;
    }
    const cJSON *jpa = cJSON_GetObjectItem(md, "pool_arguments"),
                *jpools = cJSON_GetObjectItem(md, "pools");
    if (cJSON_IsTrue(jpa)) {
        if (!cJSON_IsArray(jpools) || cJSON_GetArraySize(jpools) < 1 ||
            cJSON_GetArraySize(jpools) > MAX_POOLS) {
            return bad(dir, "metadata.json: pool_arguments needs 1..8 pools");
        }
        const cJSON *p;
        cJSON_ArrayForEach(p, jpools) {
            const cJSON *n = cJSON_GetObjectItem(p, "name"), *sz = cJSON_GetObjectItem(p, "size");
            if (!cJSON_IsString(n) || tether_pool_name_check(n->valuestring) != 0 ||
                !cJSON_IsNumber(sz) || sz->valuedouble < 1 || sz->valuedouble > 9.0e15) {
                return bad(dir, "metadata.json: every pool needs a valid name and a size > 0");
            }
            snprintf(a->pool_name[a->npools], sizeof a->pool_name[0], "%s", n->valuestring);
            a->pool_size[a->npools++] = (int64_t)sz->valuedouble;
        }
    }
    const cJSON *jpf = cJSON_GetObjectItem(md, "params_file"),
                *jpb = cJSON_GetObjectItem(md, "params_bytes"),
                *jsp = cJSON_GetObjectItem(md, "set_params");
    if (cJSON_IsString(jpf)) {
        if (!tether__artifact_file_name_ok(jpf->valuestring) || !cJSON_IsNumber(jpb) ||
            jpb->valuedouble < 0 || !cJSON_IsString(jsp)) {
            return bad(dir, "metadata.json: params_file must be a file name, with params_bytes "
                            "and set_params");
        }
        snprintf(a->params_file, sizeof a->params_file, "%s", jpf->valuestring);
        snprintf(a->set_params, sizeof a->set_params, "%s", jsp->valuestring);
        const cJSON *jpp = cJSON_GetObjectItem(md, "params_pool");
        if (jpp && (!cJSON_IsString(jpp) || tether_pool_name_check(jpp->valuestring) != 0)) {
            return bad(dir, "metadata.json: params_pool must be a pool name");
        }
        if (jpp) {
            snprintf(a->params_pool, sizeof a->params_pool, "%s", jpp->valuestring);
        }
        a->params_bytes = (size_t)jpb->valuedouble;
    }
    return 0;
}

/* metadata.json's "profile" (a profiling build): kept as text for profile.c, which checks the
 * node list; here only what prepare needs (the C backend's function and table size). */
static int profile_read(tether_artifact *a, const cJSON *md) {
    const cJSON *p = cJSON_GetObjectItem(md, "profile");
    if (!p) {
        return 0;
    }
    const cJSON *b = cJSON_GetObjectItem(md, "backend");
    int opencl = cJSON_IsString(b) && strcmp(b->valuestring, "opencl") == 0;
    const cJSON *fn = cJSON_GetObjectItem(p, "function"),
                *tb = cJSON_GetObjectItem(p, "table_bytes");
    if (!cJSON_IsObject(p) || !cJSON_IsArray(cJSON_GetObjectItem(p, "nodes")) ||
        (!opencl && (!cJSON_IsString(fn) || strlen(fn->valuestring) >= sizeof a->profile_fn ||
                     !cJSON_IsNumber(tb) || tb->valuedouble < 24 || tb->valuedouble > (1 << 24)))) {
        return bad(a->dir, "metadata.json: profile needs nodes (and for C a function and "
                           "table_bytes of 24 bytes per node)");
    }
    if (!opencl) {
        snprintf(a->profile_fn, sizeof a->profile_fn, "%s", fn->valuestring);
        a->profile_bytes = (size_t)tb->valuedouble;
    }
    a->profile = cJSON_PrintUnformatted(p);
    if (!a->profile) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return 0;
}

int tether_artifact_open(const char *dir, tether_artifact **out) {
    *out = NULL;
    tether_artifact *a = calloc(1, sizeof *a);
    if (!a) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    snprintf(a->dir, sizeof a->dir, "%s", dir);
    char path[1100];
    snprintf(path, sizeof path, "%s/metadata.json", dir);
    char *text = NULL;
    size_t len;
    int rc = tether_file_read_text(path, (size_t)64 << 20, &text, &len);
    if (rc) {
        rc = tether_set_error(rc, "%s: cannot read metadata.json: %s", dir, tether_last_error());
        free(a);
        return rc;
    }
    cJSON *md = cJSON_Parse(text);
    free(text);
    rc = profile_read(a, md);
    if (rc) {
        cJSON_Delete(md);
        free(a);
        return rc;
    }
    const cJSON *b = cJSON_GetObjectItem(md, "backend");
    if (cJSON_IsString(b) && strcmp(b->valuestring, "opencl") == 0) {
        a->backend = TETHER_ARTIFACT_OPENCL;
        rc = tether__ocl_artifact_load(dir, md, &a->ocl);
        if (!rc) {
            a->nin = tether__ocl_artifact_num_inputs(a->ocl);
            a->nout = tether__ocl_artifact_num_outputs(a->ocl);
            snprintf(a->entry, sizeof a->entry, "%s", tether__ocl_artifact_prefix(a->ocl));
            const cJSON *jt = cJSON_GetObjectItem(md, "target");
            snprintf(a->target, sizeof a->target, "%s",
                     cJSON_IsString(jt) ? jt->valuestring : "opencl");
        }
    } else {
        a->backend = TETHER_ARTIFACT_C;
        rc = open_c(a, md);
    }
    cJSON_Delete(md);
    if (rc) {
        tether_artifact_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

tether_artifact_backend tether_artifact_backend_of(const tether_artifact *a) {
    return a->backend;
}

const char *tether_artifact_entry(const tether_artifact *a) {
    return a->entry;
}

const char *tether_artifact_target(const tether_artifact *a) {
    return a->target;
}

const char *tether_artifact_cpu(const tether_artifact *a) {
    return a->cpu;
}

int tether_artifact_num_inputs(const tether_artifact *a) {
    return a->nin;
}

int tether_artifact_num_outputs(const tether_artifact *a) {
    return a->nout;
}

int tether_artifact_io_of(const tether_artifact *a, int output, int i, tether_artifact_io *io) {
    if (i < 0 || i >= (output ? a->nout : a->nin)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: no %s %d", a->dir,
                                output ? "output" : "input", i);
    }
    if (a->ocl) {
        int64_t n = tether__ocl_artifact_io(a->ocl, output, i, &io->name, &io->ndim, &io->shape);
        tether__ocl_artifact_io_kind(a->ocl, output, i, &io->dtype, &io->dynamic_dim,
                                     &io->extent_output, &io->extent_of);
        io->nbytes = (size_t)n * tether_dtype_bytes(io->dtype); /* its own element type */
        if (!io->name) {
            io->name = "";
        }
        return 0;
    }
    const io_entry *e = output ? &a->out[i] : &a->in[i];
    io->name = e->name;
    io->dtype = e->dtype;
    io->ndim = e->ndim;
    io->shape = e->shape;
    io->nbytes = e->nbytes;
    io->dynamic_dim = output ? e->dyn_dim : -1;
    io->extent_output = output ? e->extent_output : -1;
    io->extent_of = output ? e->extent_of : -1;
    return 0;
}

int tether_artifact_check_input(const tether_artifact *a, int i, const char *path,
                                const tether_npy *n) {
    tether_artifact_io io;
    int rc = tether_artifact_io_of(a, 0, i, &io);
    if (rc) {
        return rc;
    }
    return tether_npy_check(n, path, "model input", io.name, io.dtype, io.ndim, io.shape);
}

const char *tether_artifact_fallback(const tether_artifact *a) {
    return a->ocl ? tether__ocl_artifact_fallback(a->ocl) : NULL;
}

uint64_t tether_artifact_wall_ns(const tether_artifact *a) {
    return a->ocl ? tether__ocl_artifact_wall_ns(a->ocl) : 0;
}

int tether_artifact_num_kernels(const tether_artifact *a) {
    return a->ocl ? tether__ocl_artifact_num_steps(a->ocl) : 0;
}

void tether_artifact_kernel(const tether_artifact *a, int i, const char **kernel,
                            const char **node) {
    *kernel = "";
    *node = "";
    if (a->ocl && i >= 0 && i < tether__ocl_artifact_num_steps(a->ocl)) {
        tether__ocl_artifact_step(a->ocl, i, kernel, node);
        if (!*node) {
            *node = "";
        }
    }
}

/* ---- on the device ---- */

/* A params blob must be the one this build wrote: the unpacked ABI cannot check it. */
static int check_params_size(const tether_artifact *a) {
    char path[1300];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", a->dir, a->params_file);
    if (stat(path, &st) != 0) {
        return tether_set_error(TETHER_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    }
    if ((uint64_t)st.st_size != (uint64_t)a->params_bytes) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "%s is %lld bytes, but metadata.json says params_bytes %lld (a "
                                "params file of another build?)",
                                path, (long long)st.st_size, (long long)a->params_bytes);
    }
    return 0;
}

/* The weights of a params blob: P_set_params(blob) before the first call. */
static int set_params(tether_artifact *a, uint64_t module) {
    char path[1300];
    snprintf(path, sizeof path, "%s/%s", a->dir, a->params_file);
    uint8_t *blob = NULL;
    size_t n = 0;
    int rc = tether_file_read(path, TETHER_UPLOAD_MAX_BYTES, &blob, &n);
    if (rc) {
        return rc;
    }
    if (n != a->params_bytes) {
        free(blob);
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "%s is %zu bytes, but metadata.json says params_bytes %zu (a "
                                "params file of another build?)",
                                path, n, a->params_bytes);
    }
    int64_t shape = (int64_t)n;
    tether_remote_func spf;
    uint64_t h = 0;
    rc = tether_session_get_function(a->s, module, a->set_params, &spf);
    if (!rc) {
        rc = tether_session_alloc(a->s, &shape, 1, TETHER_UINT8, TETHER_SCOPE_GLOBAL,
                                  a->params_pool, &h, NULL);
    }
    if (!rc) {
        a->arrays[a->narrays++] = h;
        rc = tether_session_copy_to(a->s, h, 0, blob, n);
    }
    free(blob);
    if (rc) {
        return tether_set_error(rc, "params %s: %s", path, tether_last_error());
    }
    tether_remote_arg arg = {
        spf.abi == TETHER_ABI_PACKED ? TETHER_TYPE_DLTENSOR : TETHER_TYPE_HANDLE, {.array = h}};
    return tether_session_call(a->s, &spf, &arg, 1, NULL);
}

/* Every pool the entry takes (and the params blob's) must be one the device lists in its HELLO. */
static int pools_check(const tether_artifact *a, const tether_device_info *d) {
    for (int k = 0; k <= a->npools; k++) {
        const char *want = k < a->npools ? a->pool_name[k] : a->params_pool;
        if (!want[0]) {
            continue;
        }
        int found = 0;
        char have[300] = "";
        for (uint32_t i = 0; i < d->num_pools && i < 8; i++) {
            found |= strcmp(d->pools[i], want) == 0;
            size_t n = strlen(have);
            snprintf(have + n, sizeof have - n, "%s%s", i ? ", " : "", d->pools[i]);
        }
        if (!found) {
            return tether_set_error(TETHER_ERR_NOT_FOUND,
                                    "%s was compiled with pool '%s', which the device does not "
                                    "have (its pools: %s): compile with --pool names the device "
                                    "lists (`tether info`), or start tetherd with --pool %s:SIZE",
                                    a->dir, want, have[0] ? have : "none", want);
        }
    }
    return 0;
}

int tether_artifact_prepare(tether_artifact *a, tether_session *s,
                            const tether_artifact_options *o) {
    tether_artifact_options defaults;
    if (!o) {
        tether_artifact_options_init(&defaults);
        o = &defaults;
    }
    if (a->s) {
        return tether_set_error(TETHER_ERR_STATE, "%s: already prepared", a->dir);
    }
    a->s = s;
    if (a->ocl) {
        int rc = tether__ocl_artifact_prepare(a->ocl, s);
        a->prepared = rc == 0;
        return rc;
    }
    int rc = a->params_file[0] ? check_params_size(a) : 0;
    if (!rc) {
        rc = tether_artifact_target_check(tether_session_info(s), a->target, a->cpu, a->dir);
    }
    if (!rc) {
        rc = pools_check(a, tether_session_info(s));
    }
    if (rc) {
        return rc;
    }
    /* a unique upload name per artifact object: an upload of the same name replaces the
     * previous module, and `tether ab` holds several artifacts on one session */
    static unsigned serial;
    char name[300], path[1300];
    if (serial++ == 0) {
        snprintf(name, sizeof name, "%s", a->library);
    } else {
        snprintf(name, sizeof name, "%u-%s", serial, a->library);
    }
    snprintf(path, sizeof path, "%s/%s", a->dir, a->library);
    uint64_t module = 0;
    tether_artifact_loader load = o->loader ? o->loader : tether_artifact_default_loader;
    rc = load(o->loader_ctx, s, path, a->target, name, &module);
    if (!rc) {
        rc = tether_session_get_function(s, module, a->entry, &a->f);
    }
    if (!rc && a->f.num_args >= 0 && a->f.num_args != a->nin + a->nout + a->npools) {
        rc = tether_set_error(TETHER_ERR_MISMATCH,
                              "%s: function '%s' takes %d arguments, the signature has %d inputs, "
                              "%d outputs and %d pools",
                              a->dir, a->entry, (int)a->f.num_args, a->nin, a->nout, a->npools);
    }
    if (!rc && a->params_file[0]) {
        rc = set_params(a, module);
    }
    for (int i = 0; !rc && i < a->nin + a->nout; i++) {
        const io_entry *e = i < a->nin ? &a->in[i] : &a->out[i - a->nin];
        uint64_t h = 0;
        rc =
            tether_session_alloc(s, e->shape, e->ndim, e->dtype, TETHER_SCOPE_GLOBAL, "", &h, NULL);
        if (rc) {
            rc = tether_set_error(rc, "%s '%s': %s", i < a->nin ? "input" : "output", e->name,
                                  tether_last_error());
            break;
        }
        a->arrays[a->narrays++] = h;
        a->args[i].type_code =
            a->f.abi == TETHER_ABI_PACKED ? TETHER_TYPE_DLTENSOR : TETHER_TYPE_HANDLE;
        a->args[i].v.array = h;
    }
    for (int k = 0; !rc && k < a->npools; k++) { /* each pool in the device pool of its name */
        uint64_t h = 0;
        rc = tether_session_alloc(s, &a->pool_size[k], 1, TETHER_UINT8, TETHER_SCOPE_GLOBAL,
                                  a->pool_name[k], &h, NULL);
        if (rc) {
            rc = tether_set_error(rc, "pool '%s' (%lld bytes): %s", a->pool_name[k],
                                  (long long)a->pool_size[k], tether_last_error());
            break;
        }
        a->arrays[a->narrays++] = h;
        int j = a->nin + a->nout + k;
        a->args[j].type_code =
            a->f.abi == TETHER_ABI_PACKED ? TETHER_TYPE_DLTENSOR : TETHER_TYPE_HANDLE;
        a->args[j].v.array = h;
    }
    if (!rc && a->profile_fn[0]) { /* the profile table's function and its uint8 array */
        int64_t n = (int64_t)a->profile_bytes;
        uint64_t h = 0;
        rc = tether_session_get_function(s, module, a->profile_fn, &a->pf);
        if (!rc) {
            rc = tether_session_alloc(s, &n, 1, TETHER_UINT8, TETHER_SCOPE_GLOBAL, "", &h, NULL);
        }
        if (rc) {
            rc = tether_set_error(rc, "%s: profile table: %s", a->dir, tether_last_error());
        } else {
            a->arrays[a->narrays++] = h;
            a->parg.type_code =
                a->pf.abi == TETHER_ABI_PACKED ? TETHER_TYPE_DLTENSOR : TETHER_TYPE_HANDLE;
            a->parg.v.array = h;
        }
    }
    a->prepared = rc == 0;
    return rc;
}

static int check_prepared(const tether_artifact *a) {
    if (!a->prepared) {
        return tether_set_error(TETHER_ERR_STATE, "%s: not prepared on a device", a->dir);
    }
    return 0;
}

/* The entry's -4 in an artifact with outputs of data-dependent size: a count above the bound
 * (docs/abi.md); the message names the outputs and their bounds. */
static int over_the_bound(const tether_artifact *a) {
    char list[600] = "";
    size_t l = 0;
    int n = 0;
    for (int i = 0; i < a->nout && l + 8 < sizeof list; i++) {
        const io_entry *e = &a->out[i];
        if (e->dyn_dim >= 0) {
            l += (size_t)snprintf(list + l, sizeof list - l,
                                  "%s'%s' (at most %lld along dimension "
                                  "%d)",
                                  n++ ? ", " : "", e->name, (long long)e->shape[e->dyn_dim],
                                  e->dyn_dim);
        }
    }
    if (!n) {
        return TETHER_ERR_LIMIT; /* the call's own message stands */
    }
    char why[300];
    snprintf(why, sizeof why, "%s", tether_last_error());
    return tether_set_error(TETHER_ERR_LIMIT,
                            "%s: the data gave more entries than the bound of %s %s: the "
                            "output's size is data-dependent and the artifact was compiled for at "
                            "most that many (%s)",
                            a->dir, n > 1 ? "one of the outputs" : "output", list, why);
}

int tether_artifact_run(tether_artifact *a, const void *const *inputs, void *const *outputs,
                        tether_call_result *res, uint64_t *kernel_ns) {
    tether_call_result local;
    if (!res) {
        res = &local;
    }
    memset(res, 0, sizeof *res);
    int rc = check_prepared(a);
    if (rc) {
        return rc;
    }
    if (a->ocl) {
        res->ret_value.type_code = TETHER_TYPE_NULL;
        return tether__ocl_artifact_run(a->ocl, (const float *const *)inputs,
                                        (float *const *)outputs, &res->elapsed_ns, kernel_ns);
    }
    for (int i = 0; !rc && i < a->nin; i++) {
        rc = tether_session_copy_to(a->s, a->args[i].v.array, 0, inputs[i], a->in[i].nbytes);
    }
    if (!rc) {
        rc = tether_session_call(a->s, &a->f, a->args, (uint32_t)(a->nin + a->nout + a->npools),
                                 res);
        /* the entry's -4 (tetherd replies with the error; an MCU with the code) */
        if (rc == TETHER_ERR_LIMIT &&
            (res->ret == TETHER_ERR_LIMIT || strstr(tether_last_error(), "returned -4"))) {
            return over_the_bound(a);
        }
    }
    /* the extent outputs first (they come last), then each output, a dynamic one only as far as
     * its actual shape (dense at the start; the bytes past it are left as they were) */
    for (int i = a->nout - 1; !rc && i >= 0; i--) { /* backwards: the extents are last */
        size_t n = a->out[i].nbytes;
        if (a->out[i].dyn_dim >= 0) {
            int64_t shape[TETHER_MAX_NDIM];
            rc = tether_artifact_output_shape(a, i, (const void *const *)outputs, shape, &n);
        }
        if (!rc) {
            rc = tether_session_copy_from(a->s, a->args[a->nin + i].v.array, 0, outputs[i], n);
        }
    }
    return rc;
}

int tether_artifact_num_model_outputs(const tether_artifact *a) {
    int n = tether_artifact_num_outputs(a);
    tether_artifact_io io;
    while (n > 0 && !tether_artifact_io_of(a, 1, n - 1, &io) && io.extent_of >= 0) {
        n--; /* the extent outputs, last */
    }
    return n;
}

int tether_artifact_output_shape(const tether_artifact *a, int i, const void *const *outputs,
                                 int64_t *shape, size_t *nbytes) {
    tether_artifact_io io;
    int rc = tether_artifact_io_of(a, 1, i, &io);
    if (rc) {
        return rc;
    }
    memcpy(shape, io.shape, sizeof(int64_t) * (size_t)io.ndim);
    *nbytes = io.nbytes;
    if (io.dynamic_dim < 0) {
        return 0;
    }
    int64_t ext;
    memcpy(&ext, outputs[io.extent_output], sizeof ext);
    int64_t bound = io.shape[io.dynamic_dim];
    if (ext < 0 || ext > bound) {
        return tether_set_error(TETHER_ERR_PROTOCOL,
                                "%s: output '%s': the device reported %lld entries along its "
                                "data-dependent dimension %d, outside 0 .. %lld (its bound)",
                                a->dir, io.name, (long long)ext, io.dynamic_dim, (long long)bound);
    }
    shape[io.dynamic_dim] = ext;
    return tether_shape_bytes(shape, io.ndim, io.dtype, nbytes);
}

int tether_artifact_time(tether_artifact *a, uint32_t number, uint32_t repeat,
                         uint32_t min_repeat_ms, uint32_t cooldown_ms, tether_time_stats *out,
                         double *kernel_median) {
    int rc = check_prepared(a);
    if (rc) {
        return rc;
    }
    if (a->ocl) {
        return tether__ocl_artifact_time(a->ocl, number, repeat, min_repeat_ms, cooldown_ms, out,
                                         kernel_median);
    }
    return tether_session_time(a->s, &a->f, a->args, (uint32_t)(a->nin + a->nout + a->npools),
                               number, repeat, min_repeat_ms, cooldown_ms, out);
}

void tether_artifact_set_unprofiled_wall(tether_artifact *a, int on) {
    if (a && a->ocl) {
        tether__ocl_artifact_unprofiled_wall(a->ocl, on);
    }
}

void tether_artifact_set_per_kernel(tether_artifact *a, int per_kernel) {
    if (a->ocl) {
        tether__ocl_artifact_per_kernel(a->ocl, per_kernel);
    }
}

void tether_artifact_free(tether_artifact *a) {
    if (!a) {
        return;
    }
    int free_remote = a->s && !tether_session_fault(a->s);
    for (int i = 0; free_remote && i < a->narrays; i++) {
        tether_session_free(a->s, a->arrays[i]); /* best effort: the session ends it anyway */
    }
    tether__ocl_artifact_free(a->ocl);
    free(a->profile);
    free(a);
}

const char *tether__artifact_profile_json(const tether_artifact *a) {
    return a->profile;
}

const char *tether__artifact_dir(const tether_artifact *a) {
    return a->dir;
}

tether_session *tether__artifact_session(const tether_artifact *a) {
    return a->s;
}

int tether__artifact_profile_table(tether_artifact *a, void *buf, size_t n) {
    int rc = check_prepared(a);
    if (rc) {
        return rc;
    }
    if (!a->profile_fn[0] || n != a->profile_bytes) {
        return tether_set_error(TETHER_ERR_STATE, "%s: no profile table of %zu bytes", a->dir, n);
    }
    tether_call_result res;
    rc = tether_session_call(a->s, &a->pf, &a->parg, 1, &res);
    if (!rc) {
        rc = tether_session_copy_from(a->s, a->parg.v.array, 0, buf, n);
    }
    return rc;
}
