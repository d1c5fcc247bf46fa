/*
 * The whole pipeline and the artifact directory: model -> passes -> plan -> C -> build ->
 * metadata.json + report.json (format in docs/codegen.md); the backend choice (OpenCL:
 * compile_opencl.c), and the artifact writer both backends use. report.json is made in report.c.
 *
 * What must stay true: on failure every file this call created is removed again (and the
 * directory, when this call created it), so a failed compile never leaves a half artifact that
 * `tether run` could pick up, and from the moment the directory is opened until the compile ends
 * the writer is registered for tether_build_interrupt (build/children.c), which removes the same
 * when a signal ends the program; metadata.json lists exactly the functions of the module
 * registry; weights above params_link_max go to a params blob, said once (params_to_blob).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

void tether_compile_options_init(tether_compile_options *o) {
    memset(o, 0, sizeof *o);
    tether_codegen_options_init(&o->codegen);
    tether_pass_options_init(&o->passes);
    tether_opencl_options_init(&o->opencl);
    o->build.target = "x86_64-linux";
    o->build.opt_level = TETHER_OPT_DEFAULT;
    o->planner = NULL;
    o->build_library = true;
}

int tether_backend_parse(const char *name, tether_backend *out) {
    if (name && strcmp(name, "c") == 0) {
        *out = TETHER_BACKEND_C;
        return TETHER_OK;
    }
    if (name && strcmp(name, "opencl") == 0) {
        *out = TETHER_BACKEND_OPENCL;
        return TETHER_OK;
    }
    return tether_set_error(TETHER_ERR_NOT_FOUND, "unknown backend '%s' (c, opencl)",
                            name ? name : "(null)");
}

const char *tether_backend_name(tether_backend b) {
    return b == TETHER_BACKEND_OPENCL ? "opencl" : "c";
}

int tether__artifact_init(tether__artifact_writer *w, const char *out_dir) {
    memset(w, 0, sizeof *w);
    if (strlen(out_dir) >= sizeof w->dir - 64) {
        return tether_set_error(TETHER_ERR_LIMIT, "output directory path too long");
    }
    snprintf(w->dir, sizeof w->dir, "%s", out_dir);
    w->watch = -1;
    return TETHER_OK;
}

int tether__artifact_open_dir(tether__artifact_writer *w, const char *prefix) {
    struct stat st;
    if (stat(w->dir, &st) != 0) {
        if (mkdir(w->dir, 0755) != 0) {
            return tether_set_error(TETHER_ERR_IO, "cannot create '%s': %s", w->dir,
                                    strerror(errno));
        }
        w->made_dir = 1;
        w->watch = tether__artifact_watch(w); /* a signal now removes the directory */
        return TETHER_OK;
    }
    if (!S_ISDIR(st.st_mode)) {
        return tether_set_error(TETHER_ERR_IO, "'%s' exists and is not a directory", w->dir);
    }
    /* Replacing an artifact: its metadata goes first, so the directory is never a valid
     * artifact that mixes old and new files, and stale files of either backend disappear. */
    static const char *const old_files[] = {"metadata.json", "report.json", "params.bin",
                                            "params.buffers.bin", "build.log"};
    char p[1300];
    for (size_t i = 0; i < sizeof old_files / sizeof *old_files; i++) {
        snprintf(p, sizeof p, "%s/%s", w->dir, old_files[i]);
        unlink(p);
    }
    static const char *const old_pat[] = {"%s/%s.c",    "%s/%s.h",  "%s/%s.o",
                                          "%s/%s.su",   "%s/%s.ci", "%s/lib%s.so",
                                          "%s/lib%s.a", "%s/%s.cl", "%s/%s.buffers.cl"};
    for (size_t i = 0; i < sizeof old_pat / sizeof *old_pat; i++) {
        snprintf(p, sizeof p, old_pat[i], w->dir, prefix);
        unlink(p);
    }
    w->watch = tether__artifact_watch(w); /* a signal now removes the files written into it */
    return TETHER_OK;
}

int tether__artifact_put(tether__artifact_writer *w, const char *name, const void *data, size_t n) {
    if (w->n >= TETHER_ARTIFACT_MAX_FILES) {
        return tether_set_error(TETHER_ERR_INTERNAL, "too many artifact files");
    }
    snprintf(w->paths[w->n], sizeof w->paths[0], "%s/%s", w->dir, name);
    w->pending = 1;
    int rc = tether__write_file(w->paths[w->n], data, n);
    w->n++;
    w->pending = 0;
    return rc;
}

void tether__artifact_track(tether__artifact_writer *w, const char *name) {
    if (w->n < TETHER_ARTIFACT_MAX_FILES) {
        snprintf(w->paths[w->n++], sizeof w->paths[0], "%s/%s", w->dir, name);
    }
}

int tether__artifact_rollback(tether__artifact_writer *w, int rc) {
    char msg[TETHER_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", tether_last_error());
    tether__artifact_unwatch(w->watch);
    w->watch = -1;
    for (int i = 0; i < w->n; i++) {
        unlink(w->paths[i]);
    }
    if (w->made_dir) {
        rmdir(w->dir);
    }
    return tether_set_error(rc, "%s", msg);
}

void tether__artifact_close(tether__artifact_writer *w) {
    tether__artifact_unwatch(w->watch);
    w->watch = -1;
}

/* ---- large linked weights ---- */

static FILE *g_notices;
static char g_notices_who[64];
static atomic_bool g_said_blob, g_said_linked;

void tether_compile_set_notices(FILE *f, const char *who) {
    g_notices = f;
    snprintf(g_notices_who, sizeof g_notices_who, "%s", who ? who : "tether");
}

/* The bytes of constants the generated C holds (codegen's params_bytes when they are linked). */
static size_t constant_bytes(const tether_ir_graph *g) {
    size_t n = 0;
    for (int i = 0; i < g->ntensors; i++) {
        if (g->tensors[i].kind == TETHER_TENSOR_CONSTANT) {
            n += g->tensors[i].nbytes;
        }
    }
    return n;
}

/* Linked weights become C initialisers that gcc parses and keeps in memory at once (a 32 MiB
 * dense layer: over a minute and 2.5 GB): above o->params_link_max they go to a params blob
 * instead (true); linking more than TETHER_PARAMS_LINK_MAX anyway is said before gcc starts.
 * Each notice at most once per process (tune builds many candidates of one model). */
static bool params_to_blob(const tether_ir_graph *g, const tether_compile_options *o) {
    if (!o->codegen.link_params || !o->build_library) {
        return false;
    }
    size_t bytes = constant_bytes(g);
    bool blob = o->params_link_max > 0 && bytes > o->params_link_max;
    if (!blob && bytes <= TETHER_PARAMS_LINK_MAX) {
        return false;
    }
    if (g_notices && !atomic_exchange(blob ? &g_said_blob : &g_said_linked, true)) {
        double mib = (double)bytes / (1024.0 * 1024.0);
        if (blob) {
            fprintf(g_notices,
                    "%s: %.1f MiB of weights: they go to a params blob (params.bin, set at run "
                    "time), not into the C source, where gcc's time and memory grow with them "
                    "(32 MiB: a minute, 2.5 GB); --params linked links them anyway\n",
                    g_notices_who, mib);
        } else {
            fprintf(g_notices,
                    "%s: linking %.1f MiB of weights into the C source: gcc's time and memory "
                    "grow with them (32 MiB: a minute, 2.5 GB); --params blob puts them in "
                    "params.bin instead\n",
                    g_notices_who, mib);
        }
        fflush(g_notices);
    }
    return blob;
}

double tether__now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The vector width a target's code gets when the schedule leaves it to the target: none on
 * MCUs (their cores have no float SIMD worth it, and scalar loops keep code and stack small),
 * the register width on hosted CPUs (AVX-512 16 floats, AVX 8, SSE and NEON 4). */
static int target_vector_width(const tether_build_options *b) {
    const tether_target *t;
    if (tether_target_find(b->target ? b->target : "x86_64-linux", &t) != TETHER_OK ||
        t->kind != TETHER_TARGET_SHARED) {
        return 0;
    }
    char cpu[64]; /* the -march value without tether's +extensions ("x86-64-v4+avx512vnni") */
    snprintf(cpu, sizeof cpu, "%.*s", (int)strcspn(b->cpu ? b->cpu : "", "+"),
             b->cpu ? b->cpu : "");
    if (strncmp(t->name, "x86_64", 6) == 0) {
        if (strcmp(cpu, "x86-64-v4") == 0) {
            return 16;
        }
        return strcmp(cpu, "x86-64-v3") == 0 || strcmp(cpu, "native") == 0 ? 8 : 4;
    }
    return 4;
}

void tether__compile_options_resolve(const tether_compile_options *o, tether_compile_options *out) {
    *out = *o;
    const tether_target *tg;
    out->codegen.custom_mcu =
        tether_target_find(o->build.target ? o->build.target : "x86_64-linux", &tg) == TETHER_OK &&
        tg->kind != TETHER_TARGET_SHARED;
    if (o->backend == TETHER_BACKEND_OPENCL) {
        return; /* the OpenCL kernels have no vector width and take no padded copies */
    }
    if (o->profile && out->codegen.profile == TETHER_PROFILE_NONE) {
        /* a board's firmware also measures each node's stack (tether_mcu_profile_stack) */
        const tether_target *t = NULL;
        int mcu = tether_target_find(o->build.target ? o->build.target : "x86_64-linux", &t) == 0 &&
                  t->kind != TETHER_TARGET_SHARED;
        out->codegen.profile = mcu ? TETHER_PROFILE_STACK : TETHER_PROFILE_TIME;
    }
    if (out->codegen.schedule.vector_width < 0) {
        out->codegen.schedule.vector_width = target_vector_width(&o->build);
    }
    if (out->codegen.schedule.vector_width > 0 && out->passes.pad_conv_min_width == 0 &&
        out->passes.fuse_epilogues) {
        /* the passes are on: a conv whose output plane holds at least two vectors reads a
         * padded copy of its input, so the blocked kernel has no border columns (smaller ones
         * keep them in the kernel: the copy would cost more than it saves) */
        out->passes.pad_conv_min_width = 2 * out->codegen.schedule.vector_width;
    }
}

int tether__compile_passes(tether_ir_graph *g, const tether_compile_options *o,
                           tether_compile_result *res) {
    tether_compile_options r;
    tether__compile_options_resolve(o, &r); /* idempotent: resolved options stay as they are */
    res->nnodes_in = g->nnodes;
    int rc = tether_passes_run(g, &r.passes);
    if (rc) {
        return rc;
    }
    res->nnodes_out = g->nnodes;
    return TETHER_OK;
}

int tether__compile_passes_and_plan(tether_ir_graph *g, const tether_compile_options *o,
                                    tether_compile_result *res, tether_memplan *plan) {
    int rc = tether__compile_passes(g, o, res);
    if (rc) {
        return rc;
    }
    return tether_memplan_build_pools(g, o->planner, &o->memory, plan);
}

/* A float64 tensor on an MCU core without a double-precision FPU: refused naming the tensor
 * unless the build allows software doubles (tether_build_options.soft_float64). */
static int check_float64(const tether_ir_graph *g, const tether_build_options *b) {
    const tether_target *t;
    if (b->soft_float64 ||
        tether_target_find(b->target ? b->target : "x86_64-linux", &t) != TETHER_OK ||
        t->kind == TETHER_TARGET_SHARED || (t->features && strstr(t->features, "fp.dp"))) {
        return TETHER_OK;
    }
    for (int i = 0; i < g->ntensors; i++) {
        const tether_ir_tensor *x = &g->tensors[i];
        if (x->dtype.code == kDLFloat && x->dtype.bits == 64) {
            return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                    "tensor '%s' is float64: target %s has no double-precision "
                                    "FPU (add --soft-float64 to compute it with software "
                                    "doubles, slower and larger, or use a core with fp.dp such "
                                    "as cortex-m7)",
                                    x->name, t->name);
        }
    }
    return TETHER_OK;
}

int tether_compile_graph(tether_ir_graph *g, const char *out_dir, const tether_compile_options *o,
                         tether_compile_result *res) {
    tether_compile_options d, resolved;
    if (!o) {
        tether_compile_options_init(&d);
        o = &d;
    }
    tether_compile_result local;
    if (!res) {
        res = &local;
    }
    memset(res, 0, sizeof *res);
    /* the target's vector width and the passes it implies: the same for `tether plan` */
    tether__compile_options_resolve(o, &resolved);
    o = &resolved;
    if (o->backend == TETHER_BACKEND_OPENCL) {
        return tether__compile_graph_opencl(g, out_dir, o, res);
    }
    double t0 = tether__now_s();
    int rc = check_float64(g, &o->build); /* before anything is written */
    if (rc) {
        return rc;
    }
    tether__artifact_writer w;
    rc = tether__artifact_init(&w, out_dir);
    if (rc) {
        return rc;
    }
    const char *P = o->codegen.prefix ? o->codegen.prefix : "tether_model";
    if (o->memory.params_pool && o->codegen.link_params) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "--params-pool %s places a params blob: add --params blob",
                                o->memory.params_pool);
    }
    tether_memplan plan;
    if ((rc = tether__compile_passes_and_plan(g, o, res, &plan))) {
        return rc;
    }
    tether_compile_options blob;
    if (params_to_blob(g, o)) {
        blob = *o;
        blob.codegen.link_params = false;
        o = &blob;
        res->params_blob_auto = true;
    }
    tether_codegen_output cg;
    rc = tether_codegen_c(g, &plan, &o->codegen, &cg);
    if (rc) {
        tether_memplan_close(&plan);
        return rc;
    }
    res->codegen_seconds = tether__now_s() - t0;
    res->workspace_size = cg.workspace_size;
    res->npools = plan.pool_args ? plan.npools : 0;
    for (int k = 0; k < res->npools; k++) {
        snprintf(res->pools[k].name, sizeof res->pools[k].name, "%s", plan.pools[k].name);
        res->pools[k].size = plan.pools[k].size;
    }
    res->nspilled = plan.nspilled;
    res->params_bytes = cg.params_bytes;
    res->ntunable = cg.ntunable;
    res->ntuned = cg.ntuned;
    snprintf(res->entry, sizeof res->entry, "%s", cg.funcs[0].name);
    if ((rc = tether__artifact_open_dir(&w, P))) {
        tether_codegen_output_close(&cg);
        tether_memplan_close(&plan);
        return rc;
    }
    char name[200];
    char *meta = NULL, *rep = NULL;
    snprintf(name, sizeof name, "%s.c", P);
    rc = tether__artifact_put(&w, name, cg.source, strlen(cg.source));
    snprintf(name, sizeof name, "%s.h", P);
    if (!rc) {
        rc = tether__artifact_put(&w, name, cg.header, strlen(cg.header));
    }
    if (!rc && cg.params) {
        rc = tether__artifact_put(&w, "params.bin", cg.params, cg.params_bytes);
    }
    if (!rc && o->build_library) {
        const tether_target *t;
        rc = tether_target_find(o->build.target ? o->build.target : "x86_64-linux", &t);
        if (!rc) {
            tether__artifact_track(&w, "build.log");
            snprintf(name, sizeof name, "%s.o", P);
            tether__artifact_track(&w, name);
            snprintf(name, sizeof name, "%s.su", P);
            tether__artifact_track(&w, name);
            snprintf(name, sizeof name, "%s.ci", P);
            tether__artifact_track(&w, name);
            snprintf(name, sizeof name, "lib%s.%s", P,
                     t->kind == TETHER_TARGET_SHARED ? "so" : "a");
            tether__artifact_track(&w, name);
            rc = tether_build_artifact(out_dir, P, cg.funcs[0].name, &o->build, &res->build);
            res->built = rc == 0;
        }
    }
    if (!rc) {
        meta = tether__metadata_c(g, o, &cg, &plan, res->built ? res->build.library : NULL);
        if (meta && o->codegen.profile) {
            char *pm = tether__metadata_add_profile(meta, g, &plan, o);
            free(meta);
            meta = pm;
        }
        rep = tether__report_json_c(g, o, &cg, &plan, res);
        if (!meta || !rep) {
            rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory writing metadata");
        }
    }
    if (!rc) {
        rc = tether__artifact_put(&w, "metadata.json", meta, strlen(meta));
    }
    if (!rc) {
        rc = tether__artifact_put(&w, "report.json", rep, strlen(rep));
    }
    if (!rc && plan.plan_json) { /* the pools' plan, as `tether plan` writes it */
        rc = tether__artifact_put(&w, "memory_plan.json", plan.plan_json, strlen(plan.plan_json));
        if (!rc) {
            rc = tether__artifact_put(&w, "memory_plan.svg", plan.plan_svg, strlen(plan.plan_svg));
        }
    }
    free(meta);
    free(rep);
    tether_codegen_output_close(&cg);
    tether_memplan_close(&plan);
    if (rc) {
        return tether__artifact_rollback(&w, rc);
    }
    tether__artifact_close(&w);
    return TETHER_OK;
}

int tether_compile_model(const char *model_path, const char *out_dir,
                         const tether_compile_options *o, tether_compile_result *res) {
    tether_ir_graph g;
    int rc = tether_model_load_with(model_path, o ? o->load : NULL, &g);
    if (rc) {
        return rc;
    }
    rc = tether_compile_graph(&g, out_dir, o, res);
    tether_ir_close(&g);
    return rc;
}
