/*
 * The OpenCL backend's pipeline (tether_compile_graph with backend OpenCL): passes, memory plan,
 * tether_codegen_opencl, then the artifact directory <prefix>.cl, params.bin, metadata.json and
 * report.json, with texture activations also memory_plan.json and memory_plan.svg (docs/codegen.md,
 * "OpenCL backend"). An artifact with images compiled without image limits (no --image-max, no
 * --device) also carries its buffer variant: the same model with every tensor and weight in
 * buffers (<prefix>.buffers.cl, metadata.json's "buffer_variant", its params in params.bin when
 * they are the same bytes, else params.buffers.bin), which the runner takes on a device whose
 * image limits the images exceed.
 *
 * What must stay true: as for the C backend (compile.c), a failure removes every file this call
 * wrote, and the directory when it created it; nothing partial is left; the buffer variant has
 * the same inputs, outputs and steps (one per node, same order) as the artifact itself and no
 * image.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../custom/custom_internal.h"
#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

int tether__compile_graph_opencl(tether_ir_graph *g, const char *out_dir,
                                 const tether_compile_options *o, tether_compile_result *res) {
    double t0 = tether__now_s();
    const char *P = o->codegen.prefix ? o->codegen.prefix : "tether_model";
    const tether_memory_options *mo = &o->memory;
    if (mo->npools > 0 || mo->npins > 0 || mo->plan_inputs || mo->plan_outputs || mo->params_pool) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "--pool, --pin, --plan-inputs, --plan-outputs and --params-pool "
                                "place the C "
                                "backend's tensors; the OpenCL backend has its own storage "
                                "scopes (--texture-activations, docs/codegen.md)");
    }
    tether__artifact_writer w;
    int rc = tether__artifact_init(&w, out_dir);
    if (rc) {
        return rc;
    }
    tether_memplan plan;
    if ((rc = tether__compile_passes_and_plan(g, o, res, &plan))) {
        return rc;
    }
    tether_opencl_options oo = o->opencl;
    oo.prefix = P;
    if (!oo.nnode_schedules) { /* --tuning-log fills both; callers may set either */
        oo.node_schedules = o->codegen.node_schedules;
        oo.nnode_schedules = o->codegen.nnode_schedules;
    }
    tether_opencl_output cg, bv;
    memset(&bv, 0, sizeof bv);
    rc = tether_codegen_opencl(g, &plan, &oo, &cg);
    /* images made for no particular device: the buffer variant for a device that cannot hold
     * them (the runner takes it; docs/codegen.md, "Image limits") */
    bool variant = !rc && (cg.nimages > 0 || cg.ntextures > 0) && oo.image_max_width == 0 &&
                   oo.image_max_height == 0 && !tether__custom_graph_has_images(g);
    if (variant) {
        tether_opencl_options bo = oo;
        bo.texture_weights = false;
        bo.texture_activations = false;
        if ((rc = tether_codegen_opencl(g, &plan, &bo, &bv))) {
            tether_opencl_output_close(&cg);
        }
    }
    if (!rc && o->profile) { /* the node list the host maps each kernel's event to */
        char *pm = tether__metadata_add_profile(cg.metadata, g, &plan, o);
        if (!pm) {
            tether_opencl_output_close(&cg);
            tether_opencl_output_close(&bv);
            rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory writing metadata");
        } else {
            free(cg.metadata);
            cg.metadata = pm;
        }
    }
    tether_memplan_close(&plan);
    if (rc) {
        return rc;
    }
    char bsource[200];
    snprintf(bsource, sizeof bsource, "%s.buffers.cl", P);
    const char *bparams = NULL; /* the variant's params file */
    char *meta = NULL;
    if (variant) {
        bparams = bv.params_bytes == 0 ? NULL
                  : bv.params_bytes == cg.params_bytes &&
                          memcmp(bv.params, cg.params, bv.params_bytes) == 0
                      ? "params.bin"
                      : "params.buffers.bin";
        if (!(meta = tether__metadata_with_buffer_variant(cg.metadata, bv.metadata, bsource,
                                                          bparams))) {
            tether_opencl_output_close(&cg);
            tether_opencl_output_close(&bv);
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory writing metadata");
        }
    }
    res->codegen_seconds = tether__now_s() - t0;
    res->workspace_size = cg.workspace_size;
    res->params_bytes = cg.params_bytes;
    res->ntunable = cg.ntunable;
    res->ntuned = cg.ntuned;
    snprintf(res->entry, sizeof res->entry, "%s", "");
    if ((rc = tether__artifact_open_dir(&w, P))) {
        tether_opencl_output_close(&cg);
        tether_opencl_output_close(&bv);
        free(meta);
        return rc;
    }
    char *rep = tether__report_json_opencl(g, res, &cg, &oo, variant);
    if (!rep) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory writing the report");
    }
    char name[200];
    snprintf(name, sizeof name, "%s.cl", P);
    if (!rc) {
        rc = tether__artifact_put(&w, name, cg.source, strlen(cg.source));
    }
    if (!rc && cg.params_bytes) {
        rc = tether__artifact_put(&w, "params.bin", cg.params, cg.params_bytes);
    }
    if (!rc && variant) {
        rc = tether__artifact_put(&w, bsource, bv.source, strlen(bv.source));
    }
    if (!rc && bparams && strcmp(bparams, "params.bin") != 0) {
        rc = tether__artifact_put(&w, bparams, bv.params, bv.params_bytes);
    }
    if (!rc) {
        const char *text = meta ? meta : cg.metadata;
        rc = tether__artifact_put(&w, "metadata.json", text, strlen(text));
    }
    if (!rc) {
        rc = tether__artifact_put(&w, "report.json", rep, strlen(rep));
    }
    if (!rc && cg.plan_json) { /* the workspace and texture pools, for `tether plan`'s viewers */
        rc = tether__artifact_put(&w, "memory_plan.json", cg.plan_json, strlen(cg.plan_json));
    }
    if (!rc && cg.plan_svg) {
        rc = tether__artifact_put(&w, "memory_plan.svg", cg.plan_svg, strlen(cg.plan_svg));
    }
    free(rep);
    free(meta);
    tether_opencl_output_close(&cg);
    tether_opencl_output_close(&bv);
    if (rc) {
        return tether__artifact_rollback(&w, rc);
    }
    tether__artifact_close(&w);
    return TETHER_OK;
}
