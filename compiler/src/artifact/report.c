/*
 * report.json of an artifact directory: written by both backends' pipelines (compile.c,
 * compile_opencl.c) and printed as the table of `tether compile` (tether_report_print). Format in
 * docs/codegen.md ("report.json").
 *
 * What must stay true: the two backends write the same keys where they mean the same thing
 * (format, model, target, abi, interface, opt_level, nodes_in/out, params_bytes, workspace,
 * built), so the printer and the CLI's --json read either.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

/* The pools of a C artifact: per pool its size, capacity, lower bound and tensors, and where
 * every planned tensor went. */
static void report_pools(cJSON *r, const tether_ir_graph *g, const tether_memplan *plan) {
    cJSON *ps = cJSON_AddArrayToObject(r, "pools");
    for (int k = 0; k < plan->npools; k++) {
        const tether_memplan_pool *mp = &plan->pools[k];
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "name", mp->name);
        cJSON_AddNumberToObject(p, "size", (double)mp->size);
        cJSON_AddNumberToObject(p, "capacity", (double)mp->capacity);
        cJSON_AddNumberToObject(p, "lower_bound", (double)mp->lower_bound);
        cJSON_AddNumberToObject(p, "tensors", mp->ntensors);
        cJSON_AddItemToArray(ps, p);
    }
    cJSON_AddNumberToObject(r, "spilled", plan->nspilled);
    cJSON_AddStringToObject(r, "planner", plan->algorithm);
    cJSON *pl = cJSON_AddArrayToObject(r, "placements");
    for (int t = 0; t < g->ntensors; t++) {
        if (plan->offset[t] < 0) {
            continue;
        }
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "tensor", g->tensors[t].name);
        cJSON_AddStringToObject(p, "pool", plan->pools[plan->pool[t]].name);
        cJSON_AddNumberToObject(p, "offset", (double)plan->offset[t]);
        cJSON_AddNumberToObject(p, "bytes", (double)tether_ir_tensor_bytes(&g->tensors[t]));
        cJSON_AddItemToArray(pl, p);
    }
}

char *tether__report_json_c(const tether_ir_graph *g, const tether_compile_options *o,
                            const tether_codegen_output *cg, const tether_memplan *plan,
                            const tether_compile_result *res) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "format", "tether-report");
    cJSON_AddStringToObject(r, "model", g->name);
    cJSON_AddStringToObject(r, "target", o->build.target ? o->build.target : "x86_64-linux");
    cJSON_AddStringToObject(r, "abi", tether_abi_name(o->codegen.abi));
    cJSON_AddStringToObject(r, "interface", tether_interface_name(o->codegen.interface));
    char opt[4];
    int level = tether_build_opt_level(&o->build);
    snprintf(opt, sizeof opt, "%c", level < 0 ? 's' : '0' + level);
    cJSON_AddStringToObject(r, "opt_level", opt);
    cJSON_AddStringToObject(r, "cpu", o->build.cpu ? o->build.cpu : "");
    /* the compiler flags that value became (-march=x86-64-v3 -mavxvnni; "" = the baseline) */
    char cpu_flags[256];
    if (tether_cpu_flags(o->build.target, o->build.cpu, cpu_flags, sizeof cpu_flags)) {
        cpu_flags[0] = 0; /* the build refuses the value, naming it */
    }
    cJSON_AddStringToObject(r, "cpu_flags", cpu_flags);
    const tether_schedule *sc = &o->codegen.schedule;
    cJSON *js = cJSON_AddObjectToObject(r, "schedule");
    cJSON_AddNumberToObject(js, "vector_width", sc->vector_width);
    cJSON_AddNumberToObject(js, "conv_oc_block", sc->conv_oc_block);
    cJSON_AddNumberToObject(js, "conv_col_vectors", sc->conv_col_vectors);
    cJSON_AddNumberToObject(js, "dw_col_vectors", sc->dw_col_vectors);
    cJSON_AddNumberToObject(js, "gemv_rows", sc->gemv_rows);
    cJSON_AddNumberToObject(js, "gemm_rows", sc->gemm_rows);
    cJSON_AddNumberToObject(js, "gemm_col_vectors", sc->gemm_col_vectors);
    cJSON_AddNumberToObject(js, "channel_block", sc->channel_block);
    cJSON_AddNumberToObject(js, "nchwc_oc_vectors", sc->nchwc_oc_vectors);
    cJSON_AddNumberToObject(js, "nchwc_pixels", sc->nchwc_pixels);
    cJSON_AddNumberToObject(js, "nchwc_dw_pixels", sc->nchwc_dw_pixels);
    cJSON_AddNumberToObject(js, "local_size", sc->local_size);
    cJSON_AddNumberToObject(js, "ocl_split_k", sc->ocl_split_k);
    cJSON_AddNumberToObject(js, "ocl_tile_m", sc->ocl_tile_m);
    cJSON_AddNumberToObject(js, "ocl_tile_n", sc->ocl_tile_n);
    cJSON_AddNumberToObject(r, "tuned_kernels", res->ntuned);
    cJSON_AddNumberToObject(r, "tunable_kernels", res->ntunable);
    cJSON_AddNumberToObject(r, "nodes_in", res->nnodes_in);
    cJSON_AddNumberToObject(r, "nodes_out", res->nnodes_out);
    char names[1024];
    int nfloat = tether__quant_float_nodes(g, names, sizeof names), nint = 0;
    for (int i = 0; i < g->nnodes; i++) {
        nint += g->nodes[i].op == TETHER_OP_QCONV || g->nodes[i].op == TETHER_OP_QMATMUL ||
                tether__quant_is_elt(g->nodes[i].op);
    }
    if (nfloat || nint) { /* a quantized model (docs/quantization.md) */
        cJSON *q = cJSON_AddObjectToObject(r, "quantized");
        cJSON_AddNumberToObject(q, "integer_nodes", nint);
        cJSON_AddNumberToObject(q, "float_nodes", nfloat);
        cJSON_AddStringToObject(q, "float_node_names", names);
    }
    cJSON_AddNumberToObject(r, "params_bytes", (double)cg->params_bytes);
    cJSON *ws = cJSON_AddObjectToObject(r, "workspace");
    for (int k = 0; k < plan->npools; k++) {
        cJSON_AddNumberToObject(
            ws, plan->pools[k].name,
            (double)(plan->pool_args ? plan->pools[k].size : cg->workspace_size));
    }
    report_pools(r, g, plan);
    cJSON_AddBoolToObject(r, "built", res->built);
    if (res->built) {
        cJSON_AddNumberToObject(r, "text", (double)res->build.sizes.text);
        cJSON_AddNumberToObject(r, "data", (double)res->build.sizes.data);
        cJSON_AddNumberToObject(r, "bss", (double)res->build.sizes.bss);
        cJSON_AddNumberToObject(r, "code", (double)res->build.sizes.code);
        cJSON *st = cJSON_AddObjectToObject(r, "stack");
        cJSON_AddStringToObject(st, "entry", res->entry);
        cJSON_AddNumberToObject(st, "bytes", (double)res->build.stack.bytes);
        cJSON_AddBoolToObject(st, "bounded", res->build.stack.bounded);
        if (!res->build.stack.bounded) {
            cJSON_AddStringToObject(st, "reason", res->build.stack.reason);
        }
        cJSON_AddStringToObject(st, "path", res->build.stack.path);
        cJSON_AddStringToObject(st, "excluded", res->build.stack.excluded);
    }
    char *text = cJSON_Print(r);
    cJSON_Delete(r);
    return text;
}

/* "fill": the device's lanes and every launch step that stays under them, with its reason
 * (metadata.json's steps: work_items, underfill; emit_opencl_fill.c). */
static void fill_json(cJSON *r, const char *metadata) {
    cJSON *m = metadata ? cJSON_Parse(metadata) : NULL;
    if (!m) {
        return;
    }
    cJSON *f = cJSON_AddObjectToObject(r, "fill");
    const cJSON *lanes = cJSON_GetObjectItemCaseSensitive(m, "device_lanes");
    cJSON_AddNumberToObject(f, "device_lanes", cJSON_IsNumber(lanes) ? lanes->valuedouble : 0);
    cJSON *under = cJSON_AddArrayToObject(f, "under");
    const cJSON *st;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(m, "steps")) {
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(st, "underfill");
        if (!cJSON_IsString(why)) {
            continue;
        }
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(st, "kernel");
        const cJSON *node = cJSON_GetObjectItemCaseSensitive(st, "node");
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(st, "work_items");
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "kernel", cJSON_IsString(k) ? k->valuestring : "");
        if (cJSON_IsString(node)) {
            cJSON_AddStringToObject(o, "node", node->valuestring);
        } else {
            cJSON_AddNullToObject(o, "node");
        }
        cJSON_AddNumberToObject(o, "work_items", cJSON_IsNumber(w) ? w->valuedouble : 0);
        cJSON_AddStringToObject(o, "why", why->valuestring);
        cJSON_AddItemToArray(under, o);
    }
    cJSON_Delete(m);
}

char *tether__report_json_opencl(const tether_ir_graph *g, const tether_compile_result *res,
                                 const tether_opencl_output *cg, const tether_opencl_options *oo,
                                 bool buffer_variant) {
    bool texture = oo->texture_weights;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "format", "tether-report");
    cJSON_AddStringToObject(r, "model", g->name);
    cJSON_AddStringToObject(r, "backend", "opencl");
    cJSON_AddStringToObject(r, "target", "opencl");
    cJSON_AddStringToObject(r, "abi", "opencl");
    cJSON_AddStringToObject(r, "interface", "opencl");
    cJSON_AddStringToObject(r, "opt_level", "-");
    cJSON_AddNumberToObject(r, "nodes_in", res->nnodes_in);
    cJSON_AddNumberToObject(r, "nodes_out", res->nnodes_out);
    cJSON_AddNumberToObject(r, "kernels", cg->nkernels);
    cJSON_AddNumberToObject(r, "images", cg->nimages);
    cJSON_AddBoolToObject(r, "texture_weights", texture);
    cJSON *tx = cJSON_AddObjectToObject(r, "texture_activations");
    cJSON_AddNumberToObject(tx, "images", cg->ntextures);
    cJSON_AddNumberToObject(tx, "tensors", cg->ntexture_tensors);
    cJSON_AddNumberToObject(tx, "bytes", (double)cg->texture_bytes);
    cJSON_AddNumberToObject(tx, "fallbacks", cg->nfallbacks);
    cJSON_AddBoolToObject(r, "buffer_variant", buffer_variant);
    cJSON_AddNumberToObject(r, "params_bytes", (double)cg->params_bytes);
    cJSON *ws = cJSON_AddObjectToObject(r, "workspace");
    cJSON_AddNumberToObject(ws, TETHER_WORKSPACE_POOL, (double)cg->workspace_size);
    tether__ocl_limits lim; /* what the kernels were sized by, and which are defaults */
    tether__ocl_limits_get(oo, &lim);
    cJSON *dl = cJSON_AddObjectToObject(r, "device_limits");
    cJSON_AddNumberToObject(dl, "max_work_group_size", (double)lim.max_work_group_size);
    cJSON_AddNumberToObject(dl, "wg_multiple", (double)lim.wg_multiple);
    cJSON_AddNumberToObject(dl, "local_mem_size", (double)lim.local_mem_size);
    cJSON_AddNumberToObject(dl, "compute_units", (double)lim.compute_units);
    cJSON *defs = cJSON_AddArrayToObject(dl, "defaults");
    for (int i = 0; i < 4; i++) {
        if (lim.defaulted & (1u << i)) {
            cJSON_AddItemToArray(defs, cJSON_CreateString(tether__ocl_limit_name(i)));
        }
    }
    char ltext[300];
    tether__ocl_limits_text(&lim, ltext, sizeof ltext);
    cJSON_AddStringToObject(dl, "text", ltext);
    fill_json(r, cg->metadata);
    cJSON_AddBoolToObject(r, "built", false);
    char *text = cJSON_Print(r);
    cJSON_Delete(r);
    return text;
}

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

static const char *str(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "?";
}

int tether_report_print(FILE *out, const char *artifact_dir) {
    char path[1100];
    snprintf(path, sizeof path, "%s/report.json", artifact_dir);
    char *text;
    int rc = tether__read_file(path, &text, NULL);
    if (rc) {
        return rc;
    }
    cJSON *r = cJSON_Parse(text);
    free(text);
    if (!r) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: invalid JSON", path);
    }
    fprintf(out, "model %s  target %s  abi %s  interface %s  -O%s\n", str(r, "model"),
            str(r, "target"), str(r, "abi"), str(r, "interface"), str(r, "opt_level"));
    const cJSON *cf = cJSON_GetObjectItemCaseSensitive(r, "cpu_flags");
    if (cJSON_IsString(cf) && cf->valuestring[0]) { /* the CPU it was built for, as flags */
        fprintf(out, "  cpu %s: %s\n", str(r, "cpu"), cf->valuestring);
    }
    fprintf(out, "  %-26s %12s\n", "item", "bytes");
    const cJSON *built = cJSON_GetObjectItemCaseSensitive(r, "built");
    if (cJSON_IsTrue(built)) {
        fprintf(out, "  %-26s %12.0f\n", "text", num(r, "text"));
        fprintf(out, "  %-26s %12.0f\n", "data", num(r, "data"));
        fprintf(out, "  %-26s %12.0f\n", "bss", num(r, "bss"));
        fprintf(out, "  %-26s %12.0f\n", "  of text: instructions", num(r, "code"));
    }
    if (cJSON_GetObjectItemCaseSensitive(r, "kernels")) {
        fprintf(out, "  %-26s %12.0f\n", "OpenCL kernels", num(r, "kernels"));
        fprintf(out, "  %-26s %12.0f\n", "texture:weight images", num(r, "images"));
        const cJSON *tx = cJSON_GetObjectItemCaseSensitive(r, "texture_activations");
        if (tx && num(tx, "tensors") + num(tx, "fallbacks") > 0) {
            char label[64];
            snprintf(label, sizeof label, "texture pool (%.0f images)", num(tx, "images"));
            fprintf(out,
                    "  %-26s %12.0f  (%.0f activations, %.0f over the image limits as "
                    "buffers)\n",
                    label, num(tx, "bytes"), num(tx, "tensors"), num(tx, "fallbacks"));
        }
        const cJSON *dl = cJSON_GetObjectItemCaseSensitive(r, "device_limits");
        if (cJSON_IsObject(dl)) {
            fprintf(out, "  device limits: %s\n", str(dl, "text"));
        }
        const cJSON *fill = cJSON_GetObjectItemCaseSensitive(r, "fill");
        const cJSON *under = cJSON_GetObjectItemCaseSensitive(fill, "under");
        int nu = cJSON_GetArraySize(under), shown = 0;
        if (nu > 0) {
            fprintf(out, "  kernels under the device's %.0f lanes: %d of %.0f, each says why:\n",
                    num(fill, "device_lanes"), nu, num(r, "kernels"));
            const cJSON *u;
            cJSON_ArrayForEach(u, under) {
                if (shown++ == 8) {
                    fprintf(out, "    ... %d more in report.json (\"fill\")\n", nu - 8);
                    break;
                }
                fprintf(out, "    %s: %s\n", str(u, "kernel"), str(u, "why"));
            }
        }
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "buffer_variant"))) {
            fprintf(out, "  %-26s %12s  (for a device whose image limits the images exceed)\n",
                    "buffer variant", "yes");
        }
    }
    fprintf(out, "  %-26s %12.0f\n", "params", num(r, "params_bytes"));
    const cJSON *qz = cJSON_GetObjectItemCaseSensitive(r, "quantized");
    if (cJSON_IsObject(qz)) {
        fprintf(out, "  quantized: %.0f integer nodes, %.0f float between (de)quantize%s%s\n",
                num(qz, "integer_nodes"), num(qz, "float_nodes"),
                num(qz, "float_nodes") > 0 ? ": " : "",
                num(qz, "float_nodes") > 0 ? str(qz, "float_node_names") : "");
    }
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(r, "workspace");
    const cJSON *pools = cJSON_GetObjectItemCaseSensitive(r, "pools");
    const cJSON *e;
    if (cJSON_GetArraySize(pools) > 0) { /* C artifacts: size, lower bound, capacity, tensors */
        cJSON_ArrayForEach(e, pools) {
            char label[64], cap[32];
            snprintf(label, sizeof label, "pool '%s'", str(e, "name"));
            if (num(e, "capacity") > 0) {
                snprintf(cap, sizeof cap, "%.0f", num(e, "capacity"));
            } else {
                snprintf(cap, sizeof cap, "unbounded");
            }
            fprintf(out, "  %-26s %12.0f  (lower bound %.0f, capacity %s, %.0f tensors)\n", label,
                    num(e, "size"), num(e, "lower_bound"), cap, num(e, "tensors"));
        }
        if (num(r, "spilled") > 0) {
            fprintf(out, "  %.0f tensors spilled past the first pool (report.json placements)\n",
                    num(r, "spilled"));
        }
    } else {
        cJSON_ArrayForEach(e, ws) {
            char label[64];
            snprintf(label, sizeof label, "workspace pool '%s'", e->string);
            fprintf(out, "  %-26s %12.0f\n", label, e->valuedouble);
        }
    }
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(r, "stack");
    if (st) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(st, "bounded");
        if (cJSON_IsTrue(b)) {
            fprintf(out, "  %-26s %12.0f\n", "static stack (worst case)", num(st, "bytes"));
        } else {
            fprintf(out, "  %-26s %12s  (%s)\n", "static stack (worst case)", "unbounded",
                    str(st, "reason"));
        }
        fprintf(out, "  stack path: %s\n", str(st, "path"));
        const char *ex = str(st, "excluded");
        if (ex[0] && strcmp(ex, "?") != 0) {
            fprintf(out, "  stack excludes (external, counted as 0): %s\n", ex);
        }
    }
    cJSON_Delete(r);
    return TETHER_OK;
}
