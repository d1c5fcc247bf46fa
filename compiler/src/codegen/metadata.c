/*
 * metadata.json, the one writer for both backends: what an artifact directory holds and how to
 * run it (docs/codegen.md, "metadata.json"; the OpenCL fields under "OpenCL backend"). The C
 * backend's pipeline (artifact/compile.c) calls tether__metadata_c, the OpenCL emitter
 * tether__metadata_opencl, and the OpenCL pipeline adds the buffer variant with
 * tether__metadata_with_buffer_variant; the runner (host/lib/artifact.c) and the MCU link read
 * it.
 *
 * What must stay true: both backends write the same header (format "tether-artifact", version
 * 1, the backend when not C, model, prefix) and the same inputs/outputs lists; key order is
 * fixed (the output is deterministic, byte for byte); a field is renamed or removed only with
 * the runner and the docs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/crt/dtype.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

/* The fields every artifact starts with; backend NULL for C (no "backend" key). */
static cJSON *header(const char *backend, const char *model, const char *prefix) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "format", "tether-artifact");
    cJSON_AddNumberToObject(m, "version", 1);
    if (backend) {
        cJSON_AddStringToObject(m, "backend", backend);
    }
    cJSON_AddStringToObject(m, "model", model);
    cJSON_AddStringToObject(m, "prefix", prefix);
    return m;
}

static char *finish(cJSON *m) {
    char *text = cJSON_Print(m);
    cJSON_Delete(m);
    return text;
}

static cJSON *shape_json(const int64_t *shape, int nd) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < nd; i++) {
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)shape[i]));
    }
    return a;
}

/* The graph inputs or outputs idx[0..n): name, dtype, shape; an output of data-dependent size
 * adds "dynamic_dim" (the dimension whose extent is known at run time; its shape is the bound)
 * and "extent_output" (the index of its int64 [1] extent output), which says "extent_of". */
static cJSON *tensor_list(const tether_ir_graph *g, const int *idx, int n) {
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        const tether_ir_tensor *t = &g->tensors[idx[i]];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddStringToObject(o, "dtype", tether__dtype_str(t->dtype));
        cJSON_AddItemToObject(o, "shape", shape_json(t->shape, t->ndim));
        int k = idx == g->outputs ? tether_ir_extent_output(g, i) : -1;
        if (k >= 0) {
            cJSON_AddNumberToObject(o, "dynamic_dim", t->dyn_dim - 1);
            cJSON_AddNumberToObject(o, "extent_output", k);
        }
        for (int j = 0; idx == g->outputs && j < n; j++) {
            if (tether_ir_extent_output(g, j) == i) {
                cJSON_AddNumberToObject(o, "extent_of", j);
            }
        }
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* ---- the C backend ---------------------------------------------------------------------- */

char *tether__metadata_c(const tether_ir_graph *g, const tether_compile_options *o,
                         const tether_codegen_output *cg, const tether_memplan *plan,
                         const char *library) {
    const char *P = o->codegen.prefix ? o->codegen.prefix : "tether_model";
    cJSON *m = header(NULL, g->name, P);
    char buf[200];
    cJSON_AddStringToObject(m, "abi", tether_abi_name(o->codegen.abi));
    cJSON_AddStringToObject(m, "interface", tether_interface_name(o->codegen.interface));
    cJSON_AddStringToObject(m, "target", o->build.target ? o->build.target : "x86_64-linux");
    /* the CPU the code may assume (the runner refuses a device without it) */
    cJSON_AddStringToObject(m, "cpu", o->build.cpu ? o->build.cpu : "");
    /* the compiler flags that value became (-march=x86-64-v3 -mavxvnni; "" = the baseline) */
    char cpu_flags[256];
    if (tether_cpu_flags(o->build.target, o->build.cpu, cpu_flags, sizeof cpu_flags)) {
        cpu_flags[0] = 0; /* the build refuses the value, naming it */
    }
    cJSON_AddStringToObject(m, "cpu_flags", cpu_flags);
    if (library) {
        cJSON_AddStringToObject(m, "library", library);
    } else {
        cJSON_AddNullToObject(m, "library");
    }
    snprintf(buf, sizeof buf, "%s.c", P);
    cJSON_AddStringToObject(m, "source", buf);
    snprintf(buf, sizeof buf, "%s.h", P);
    cJSON_AddStringToObject(m, "header", buf);
    cJSON_AddStringToObject(m, "params", o->codegen.link_params ? "linked" : "blob");
    if (!o->codegen.link_params) {
        cJSON_AddStringToObject(m, "params_file", "params.bin");
        snprintf(buf, sizeof buf, "%s_set_params", P);
        cJSON_AddStringToObject(m, "set_params", buf);
        if (o->memory.params_pool) {
            cJSON_AddStringToObject(m, "params_pool", o->memory.params_pool);
        }
    }
    cJSON_AddNumberToObject(m, "params_bytes", (double)cg->params_bytes);
    cJSON *e = cJSON_AddObjectToObject(m, "entry");
    cJSON_AddStringToObject(e, "name", cg->funcs[0].name);
    cJSON_AddStringToObject(e, "abi", tether_abi_name(cg->funcs[0].abi));
    cJSON_AddNumberToObject(e, "num_args", cg->funcs[0].num_args);
    if (o->codegen.interface == TETHER_INTERFACE_C) {
        snprintf(buf, sizeof buf, "%s_run", P);
        cJSON_AddStringToObject(m, "run", buf);
    }
    cJSON_AddItemToObject(m, "inputs", tensor_list(g, g->inputs, g->ninputs));
    cJSON_AddItemToObject(m, "outputs", tensor_list(g, g->outputs, g->noutputs));
    cJSON *fs = cJSON_AddArrayToObject(m, "functions");
    for (int i = 0; i < cg->nfuncs; i++) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "name", cg->funcs[i].name);
        cJSON_AddStringToObject(f, "abi", tether_abi_name(cg->funcs[i].abi));
        cJSON_AddNumberToObject(f, "num_args", cg->funcs[i].num_args);
        cJSON_AddItemToArray(fs, f);
    }
    /* pool_arguments: the entry takes one uint8 buffer per pool after the outputs (the runner
     * allocates each in the device pool of that name); else one static workspace */
    cJSON_AddBoolToObject(m, "pool_arguments", plan->pool_args);
    cJSON *pools = cJSON_AddArrayToObject(m, "pools");
    for (int k = 0; k < plan->npools; k++) {
        cJSON *pool = cJSON_CreateObject();
        cJSON_AddStringToObject(pool, "name", plan->pools[k].name);
        cJSON_AddNumberToObject(
            pool, "size", (double)(plan->pool_args ? plan->pools[k].size : cg->workspace_size));
        cJSON_AddItemToArray(pools, pool);
    }
    cJSON_AddBoolToObject(m, "plan_inputs", plan->plan_inputs);
    cJSON_AddBoolToObject(m, "plan_outputs", plan->plan_outputs);
    cJSON *mf = cJSON_AddArrayToObject(m, "math_functions");
    char *list = strdup(cg->math_functions ? cg->math_functions : "");
    char *save = NULL;
    for (char *t = list ? strtok_r(list, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
        cJSON_AddItemToArray(mf, cJSON_CreateString(t));
    }
    free(list);
    return finish(m);
}

/* ---- the OpenCL backend ----------------------------------------------------------------- */

/* The name of texture memory object m, an image of the "texture" pool that activations share in
 * turn: "texture image K of A, B" (K counts the pool's images; the activations it holds, cut with
 * "and N more" to stay under TEXTURE_NAME_MAX bytes, which the runner's names allow). Messages
 * about the image (its extent over a device's limits) then say which activations it holds. */
#define TEXTURE_NAME_MAX 120
static const char *texture_name(const ocl *e, int m, char out[TEXTURE_NAME_MAX]) {
    int k = 0;
    for (int i = 0; i < m; i++) {
        k += e->mems[i].kind == MEM_TEXTURE;
    }
    int n = snprintf(out, TEXTURE_NAME_MAX, "texture image %d of ", k), listed = 0, more = 0;
    for (int t = 0; t < e->g->ntensors; t++) {
        if (e->tex[t] != m) {
            continue;
        }
        const char *nm = T(e, t)->name;
        /* room for this name and a closing " and NNNNN more" */
        if (!more && n + (int)strlen(nm) + 2 + 16 < TEXTURE_NAME_MAX) {
            n += snprintf(out + n, (size_t)(TEXTURE_NAME_MAX - n), "%s%s", listed ? ", " : "", nm);
            listed++;
        } else {
            more++;
        }
    }
    if (more) {
        snprintf(out + n, (size_t)(TEXTURE_NAME_MAX - n), " and %d more", more);
    }
    return out;
}

char *tether__metadata_opencl(const ocl *e) {
    const tether_ir_graph *g = e->g;
    cJSON *m = header("opencl", g->name, e->P);
    char buf[200];
    snprintf(buf, sizeof buf, "%s.cl", e->P);
    cJSON_AddStringToObject(m, "source", buf);
    cJSON_AddBoolToObject(m, "texture_weights", e->o->texture_weights);
    cJSON_AddStringToObject(m, "precision", e->o->fp16 ? "fp16" : "fp32");
    if (e->params_bytes) {
        cJSON_AddStringToObject(m, "params_file", "params.bin");
    } else {
        cJSON_AddNullToObject(m, "params_file");
    }
    cJSON_AddNumberToObject(m, "params_bytes", (double)e->params_bytes);
    cJSON_AddItemToObject(m, "inputs", tensor_list(g, g->inputs, g->ninputs));
    cJSON_AddItemToObject(m, "outputs", tensor_list(g, g->outputs, g->noutputs));
    cJSON *mems = cJSON_AddArrayToObject(m, "memory");
    for (int i = 0; i < e->nmems; i++) {
        const mem *x = &e->mems[i];
        cJSON *o = cJSON_CreateObject();
        char tname[TEXTURE_NAME_MAX];
        const char *name = x->tensor >= 0             ? T(e, x->tensor)->name
                           : x->kind == MEM_WORKSPACE ? "workspace"
                           : x->kind == MEM_TEXTURE   ? texture_name(e, i, tname)
                           : x->kind == MEM_STATUS    ? "status"
                                                      : "params";
        cJSON_AddStringToObject(o, "name", name);
        cJSON_AddStringToObject(o, "kind", tether__ocl_mem_kind_name(x->kind));
        cJSON_AddStringToObject(o, "scope",
                                x->kind == MEM_IMAGE     ? "texture:weight"
                                : x->kind == MEM_TEXTURE ? "texture"
                                                         : "global");
        int eb = tether__ocl_mem_half(e, i) ? 2 : 4; /* bytes per element */
        const char *dt = eb == 2 ? "float16" : "float32";
        if (x->kind == MEM_STATUS) { /* the run-time error flag: one int */
            dt = "int32";
        }
        if (x->kind == MEM_INPUT || x->kind == MEM_OUTPUT) { /* the tensor's element type */
            eb = (int)tether_dtype_bytes(T(e, x->tensor)->dtype);
            dt = tether__dtype_str(T(e, x->tensor)->dtype);
        }
        cJSON_AddStringToObject(o, "dtype", dt);
        cJSON_AddItemToObject(o, "shape", shape_json(x->shape, x->ndim));
        cJSON_AddNumberToObject(o, "bytes", (double)(x->elems * eb));
        if (x->kind == MEM_INPUT || x->kind == MEM_OUTPUT) {
            int k = 0;
            const int *list = x->kind == MEM_INPUT ? g->inputs : g->outputs;
            int cnt = x->kind == MEM_INPUT ? g->ninputs : g->noutputs;
            while (k < cnt && list[k] != x->tensor) {
                k++;
            }
            cJSON_AddNumberToObject(o, "index", k);
        }
        if (x->params_off >= 0) {
            cJSON_AddNumberToObject(o, "params_offset", (double)x->params_off);
        }
        if (x->kind == MEM_TEXTURE) { /* the activations the image holds, in turn */
            cJSON *h = cJSON_AddArrayToObject(o, "holds");
            for (int t = 0; t < g->ntensors; t++) {
                if (e->tex[t] == i) {
                    cJSON_AddItemToArray(h, cJSON_CreateString(T(e, t)->name));
                }
            }
        }
        if (x->kind == MEM_IMAGE || x->kind == MEM_TEXTURE) {
            cJSON_AddStringToObject(o, "layout",
                                    x->kind == MEM_IMAGE ? "OIHW4o"
                                    : x->nhwc            ? "NHWC"
                                                         : "NCHW4c");
            cJSON_AddNumberToObject(o, "width", (double)x->width);
            cJSON_AddNumberToObject(o, "height", (double)x->height);
        }
        cJSON_AddItemToArray(mems, o);
    }
    cJSON *ts = cJSON_AddArrayToObject(m, "tensors");
    for (int i = 0; i < g->ntensors; i++) {
        const tether_ir_tensor *t = T(e, i);
        int img = e->image[i];
        loc l = e->outmem[i] >= 0 && t->producer >= 0 ? dest_of(e, i) : e->store[i];
        if (l.mem < 0 && img < 0) {
            continue;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddItemToObject(o, "shape", shape_json(t->shape, t->ndim));
        if (l.mem >= 0) {
            cJSON_AddNumberToObject(o, "memory", l.mem);
            cJSON_AddStringToObject(o, "storage_scope",
                                    e->mems[l.mem].kind == MEM_TEXTURE ? "texture" : "global");
            if (e->mems[l.mem].kind != MEM_TEXTURE) {
                cJSON_AddNumberToObject(o, "offset",
                                        (double)(l.off * (tether__ocl_mem_half(e, l.mem) ? 2 : 4)));
            }
        }
        if (img >= 0) {
            cJSON_AddNumberToObject(o, "image", img);
        }
        if (e->pk[i].mem >= 0) {
            cJSON_AddNumberToObject(
                o, "oihw4o_offset",
                (double)(e->pk[i].off * (tether__ocl_mem_half(e, e->pk[i].mem) ? 2 : 4)));
        }
        if (t->alias_of >= 0) {
            cJSON_AddStringToObject(o, "alias_of", T(e, t->alias_of)->name);
        }
        cJSON_AddItemToArray(ts, o);
    }
    if (e->nerr > 0) { /* the run-time error flag's entries (emit_opencl_check.c) */
        cJSON *errs = cJSON_AddArrayToObject(m, "errors");
        for (int k = 0; k < e->nerr; k++) {
            const tether_ir_node *n = &g->nodes[e->err_nodes[k]];
            int kind = 0, code = TETHER_ERR_INVALID_ARG; /* a node's entries are consecutive */
            while (kind < k && e->err_nodes[k - kind - 1] == e->err_nodes[k]) {
                kind++;
            }
            const char *what = tether__ocl_check_entry(g, n, kind, &code);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "value", k + 1);
            cJSON_AddStringToObject(o, "node", n->name);
            cJSON_AddStringToObject(o, "op", tether_op_name(n->op));
            cJSON_AddNumberToObject(o, "code", code);
            cJSON_AddStringToObject(o, "what", what ? what : "?");
            cJSON_AddItemToArray(errs, o);
        }
    }
    cJSON_AddNumberToObject(m, "kernels", e->nsteps);
    /* the lanes a step must launch to fill the device (emit_opencl_fill.c) */
    cJSON_AddNumberToObject(m, "device_lanes", (double)tether__ocl_lanes(e));
    cJSON *steps = cJSON_AddArrayToObject(m, "steps");
    for (int i = 0; i < e->nsteps; i++) {
        const step *s = &e->steps[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "kernel", s->kname);
        if (s->node >= 0) {
            cJSON_AddStringToObject(o, "node", g->nodes[s->node].name);
            cJSON_AddStringToObject(o, "op", tether_op_name(g->nodes[s->node].op));
        } else {
            cJSON_AddNullToObject(o, "node");
            cJSON_AddStringToObject(o, "op", "copy");
        }
        int64_t gs = s->global, ls = s->local;
        cJSON_AddItemToObject(
            o, "global", s->work_dim > 0 ? shape_json(s->gsize, s->work_dim) : shape_json(&gs, 1));
        if (ls && s->work_dim == 0) {
            cJSON_AddItemToObject(o, "local", shape_json(&ls, 1));
        } else {
            cJSON_AddNullToObject(o, "local");
        }
        cJSON_AddNumberToObject(o, "serial", (double)(s->serial > 0 ? s->serial : 1));
        if (s->gpu) {
            cJSON_AddBoolToObject(o, "gpu", 1);
        }
        cJSON_AddNumberToObject(o, "work_items", (double)tether__ocl_step_work_items(s));
        char why[sizeof s->underfill]; /* set by the node's emission, else (copies, custom) here */
        if (s->underfill[0]) {
            snprintf(why, sizeof why, "%s", s->underfill);
        } else {
            tether__ocl_fill_reason(e, s, NULL, 0, why, sizeof why);
        }
        if (why[0]) {
            cJSON_AddStringToObject(o, "underfill", why);
        }
        cJSON *args = cJSON_AddArrayToObject(o, "args");
        for (int k = 0; k < s->nmems; k++) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddNumberToObject(a, "memory", s->mems[k]);
            cJSON_AddItemToArray(args, a);
        }
        cJSON *a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "int", (double)s->total);
        cJSON_AddItemToArray(args, a);
        cJSON_AddItemToArray(steps, o);
    }
    return finish(m);
}

/* metadata.json with the buffer variant's metadata (bmeta) as "buffer_variant": its source
 * <prefix>.buffers.cl, its params file; malloc'd, NULL when out of memory. */
char *tether__metadata_with_buffer_variant(const char *meta, const char *bmeta, const char *source,
                                           const char *params_file) {
    cJSON *m = cJSON_Parse(meta), *b = cJSON_Parse(bmeta);
    char *text = NULL;
    if (m && b) {
        cJSON_ReplaceItemInObjectCaseSensitive(b, "source", cJSON_CreateString(source));
        cJSON_ReplaceItemInObjectCaseSensitive(
            b, "params_file", params_file ? cJSON_CreateString(params_file) : cJSON_CreateNull());
        cJSON_AddItemToObject(m, "buffer_variant", b);
        b = NULL;
        text = cJSON_Print(m);
    }
    cJSON_Delete(m);
    cJSON_Delete(b);
    return text;
}
