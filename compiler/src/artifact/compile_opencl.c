/*
 * The OpenCL backend's pipeline (tether_compile_graph with backend OpenCL): passes, memory plan,
 * tether_codegen_opencl, then the artifact directory <prefix>.cl, params.bin, metadata.json and
 * report.json, with texture activations also memory_plan.json and memory_plan.svg (docs/codegen.md,
 * "OpenCL backend").
 *
 * What must stay true: as for the C backend (compile.c), a failure removes every file this call
 * wrote, and the directory when it created it; nothing partial is left.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

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
    tether_opencl_output cg;
    rc = tether_codegen_opencl(g, &plan, &oo, &cg);
    tether_memplan_close(&plan);
    if (rc) {
        return rc;
    }
    res->codegen_seconds = tether__now_s() - t0;
    res->workspace_size = cg.workspace_size;
    res->params_bytes = cg.params_bytes;
    res->ntunable = cg.ntunable;
    res->ntuned = cg.ntuned;
    snprintf(res->entry, sizeof res->entry, "%s", "");
    if ((rc = tether__artifact_open_dir(&w, P))) {
        tether_opencl_output_close(&cg);
        return rc;
    }
    char *rep = tether__report_json_opencl(g, res, &cg, o->opencl.texture_weights);
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
    if (!rc) {
        rc = tether__artifact_put(&w, "metadata.json", cg.metadata, strlen(cg.metadata));
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
    tether_opencl_output_close(&cg);
    if (rc) {
        return tether__artifact_rollback(&w, rc);
    }
    tether__artifact_close(&w);
    return TETHER_OK;
}
