/*
 * The OpenCL backend: one OpenCL C kernel per operator of an inferred, planned graph, the launch
 * sequence and memory objects (metadata.json) and the weights blob (params.bin), as text and
 * bytes in memory (tether_codegen_opencl). The pipeline that writes the artifact directory is
 * artifact/compile_opencl.c. Format: docs/codegen.md, "OpenCL backend".
 *
 * What must stay true:
 * - every node gets a kernel (or is an alias or empty and needs none), or the whole compile fails
 *   with one error naming every node the backend lacks; nothing falls back silently;
 * - a kernel touches only the memory objects of its step's arguments, at the element offsets of
 *   the memory plan, so two tensors live at the same time never share bytes (the planner's
 *   intervals are closed: a node's inputs and output never overlap);
 * - kernels use float and int only (no double: tensors have < 2^31 elements, infer checks it),
 *   every work-item checks `f < total` (global sizes are rounded up to the work-group size);
 * - output is deterministic (no time stamps or host paths); weights are bytes in params.bin.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../internal.h"
#include "tether/crt/dtype.h"
#include "../plan/memplan_internal.h"
#include "emit_opencl_internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

/* ---- options ------------------------------------------------------------------------------- */

void tether_opencl_options_init(tether_opencl_options *o) {
    memset(o, 0, sizeof *o);
    o->prefix = NULL;
    o->texture_weights = false;
    o->local_size = 0;
    o->legacy_kernels = false;
    o->conv_gemm = false;
    o->max_work_group_size = 0;
    o->wg_multiple = 0;
    o->local_mem_size = 0;
    o->compute_units = 0;
}

void tether_opencl_output_close(tether_opencl_output *out) {
    if (!out) {
        return;
    }
    free(out->source);
    free(out->metadata);
    free(out->params);
    free(out->plan_json);
    free(out->plan_svg);
    memset(out, 0, sizeof *out);
}

/* ---- memory assignment ------------------------------------------------------------------------
 */

static size_t align16(size_t v) {
    return (v + 15) & ~(size_t)15;
}

/* Conv weights [O, CG, KH, KW] in a texture:weight image, OIHW4o = [ceil(O/4), CG, KH, KW, 4]:
 * texel (x = (ic*KH + kh)*KW + kw, y = ob) holds output channels 4*ob .. 4*ob+3 (zeros past O). */
static void pack_oihw4o(const tether_ir_tensor *w, float *dst) {
    int64_t O = w->shape[0], CG = w->shape[1], KH = w->shape[2], KW = w->shape[3];
    int64_t OB = (O + 3) / 4, R = CG * KH * KW;
    const float *src = w->data;
    for (int64_t ob = 0; ob < OB; ob++) {
        for (int64_t r = 0; r < R; r++) {
            for (int64_t j = 0; j < 4; j++) {
                int64_t oc = ob * 4 + j;
                dst[(ob * R + r) * 4 + j] = oc < O ? src[oc * R + r] : 0.0f;
            }
        }
    }
}

static size_t oihw4o_bytes(const tether_ir_tensor *w) {
    return (size_t)((w->shape[0] + 3) / 4 * w->shape[1] * w->shape[2] * w->shape[3] * 4 * 4);
}

static int assign_memory(ocl *e) {
    const tether_ir_graph *g = e->g;
    int nt = g->ntensors ? g->ntensors : 1;
    e->store = malloc(sizeof *e->store * (size_t)nt);
    e->outmem = malloc(sizeof(int) * (size_t)nt);
    e->image = malloc(sizeof(int) * (size_t)nt);
    e->needbuf = calloc((size_t)nt, 1);
    e->needpk = calloc((size_t)nt, 1);
    e->pk = malloc(sizeof *e->pk * (size_t)nt);
    if (!e->store || !e->outmem || !e->image || !e->needbuf || !e->needpk || !e->pk) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
    }
    for (int i = 0; i < g->ntensors; i++) {
        e->store[i].mem = -1;
        e->store[i].off = 0;
        e->outmem[i] = -1;
        e->image[i] = -1;
        e->pk[i].mem = -1;
        e->pk[i].off = 0;
    }
    mem m;
    for (int i = 0; i < g->ninputs; i++) {
        int t = g->inputs[i];
        memset(&m, 0, sizeof m);
        m.kind = MEM_INPUT;
        m.tensor = t;
        m.elems = (int64_t)tether_ir_tensor_elements(T(e, t));
        m.ndim = T(e, t)->ndim;
        memcpy(m.shape, T(e, t)->shape, sizeof(int64_t) * (size_t)m.ndim);
        m.params_off = -1;
        int ix = add_mem(e, &m);
        if (ix < 0) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
        }
        e->store[t].mem = ix;
    }
    for (int i = 0; i < g->noutputs; i++) {
        int t = g->outputs[i];
        memset(&m, 0, sizeof m);
        m.kind = MEM_OUTPUT;
        m.tensor = t;
        m.elems = (int64_t)tether_ir_tensor_elements(T(e, t));
        m.ndim = T(e, t)->ndim;
        memcpy(m.shape, T(e, t)->shape, sizeof(int64_t) * (size_t)m.ndim);
        m.params_off = -1;
        int ix = add_mem(e, &m);
        if (ix < 0) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
        }
        e->outmem[t] = ix;
        /* readers of a node-produced output read it where the node wrote it */
        if (T(e, t)->producer >= 0 && T(e, t)->kind == TETHER_TENSOR_INTERMEDIATE) {
            e->store[t].mem = ix;
        }
    }
    e->memix_ws = -1;
    const int64_t *offsets = e->offset ? e->offset : e->plan->offset;
    int64_t ws_size = e->offset ? e->ws_size : e->plan->workspace_size;
    if (ws_size > 0) {
        memset(&m, 0, sizeof m);
        m.kind = MEM_WORKSPACE;
        m.tensor = -1;
        m.elems = (ws_size + 3) / 4;
        m.ndim = 1;
        m.shape[0] = m.elems;
        m.params_off = -1;
        if ((e->memix_ws = add_mem(e, &m)) < 0) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
        }
    }
    int rc = tether__ocl_check_plan(e); /* the run-time error flag (emit_opencl_check.c) */
    if (rc) {
        return rc;
    }
    for (int i = 0; i < g->ntensors; i++) {
        if (e->tex[i] >= 0) {
            e->store[i].mem = e->tex[i];
        } else if (offsets[i] >= 0 && e->store[i].mem < 0) {
            e->store[i].mem = e->memix_ws;
            e->store[i].off = offsets[i] / 4;
        }
    }
    /* which constants are read as buffers, which as images */
    char *needimg = calloc((size_t)nt, 1);
    if (!needimg) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
    }
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *n = &g->nodes[i];
        if (!node_has_kernel(e, n)) {
            continue;
        }
        for (int j = 0; j < n->ninputs; j++) {
            int t = n->inputs[j];
            if (t < 0) {
                continue;
            }
            int r = root_of(e, t);
            if (T(e, r)->kind != TETHER_TENSOR_CONSTANT) {
                continue;
            }
            if (j == 1 && is_texture_conv(e, n) && r == t) {
                needimg[t] = 1;
            } else if (j == 1 && is_packed_conv(e, n) && r == t) {
                e->needpk[t] = 1;
            } else {
                e->needbuf[r] = 1;
            }
        }
    }
    for (int i = 0; i < g->noutputs; i++) {
        int r = root_of(e, g->outputs[i]);
        if (T(e, r)->kind == TETHER_TENSOR_CONSTANT) {
            e->needbuf[r] = 1;
        }
    }
    /* params.bin: the buffer constants and packed conv weights (the params buffer), then the
     * images' texels */
    size_t off = 0;
    for (int i = 0; i < g->ntensors; i++) {
        if (e->needbuf[i]) {
            off = align16(off) + T(e, i)->nbytes;
        }
    }
    for (int i = 0; i < g->ntensors; i++) {
        if (e->needpk[i]) {
            off = align16(off) + (T(e, i)->dtype.code == kDLFloat
                                      ? oihw4o_bytes(T(e, i))
                                      : tether__ocl_quant_pack_bytes(e, i));
        }
    }
    e->buffer_bytes = align16(off);
    size_t total = e->buffer_bytes;
    for (int i = 0; i < g->ntensors; i++) {
        if (needimg[i]) {
            const tether_ir_tensor *w = T(e, i);
            total += align16(oihw4o_bytes(w));
        }
    }
    e->params_bytes = total;
    if (total) {
        e->params = calloc(1, total);
        if (!e->params) {
            free(needimg);
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
        }
    }
    e->memix_params = -1;
    if (e->buffer_bytes) {
        memset(&m, 0, sizeof m);
        m.kind = MEM_PARAMS;
        m.tensor = -1;
        m.elems = (int64_t)e->buffer_bytes / 4;
        m.ndim = 1;
        m.shape[0] = m.elems;
        m.params_off = 0;
        if ((e->memix_params = add_mem(e, &m)) < 0) {
            free(needimg);
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
        }
    }
    off = 0;
    for (int i = 0; i < g->ntensors; i++) {
        if (e->needbuf[i]) {
            off = align16(off);
            if (T(e, i)->nbytes) {
                memcpy(e->params + off, T(e, i)->data, T(e, i)->nbytes);
            }
            e->store[i].mem = e->memix_params;
            e->store[i].off = (int64_t)off / 4;
            off += T(e, i)->nbytes;
        }
    }
    for (int i = 0; i < g->ntensors; i++) {
        if (e->needpk[i]) {
            off = align16(off);
            int q = T(e, i)->dtype.code != kDLFloat; /* 8-bit weights (emit_opencl_quant.c) */
            if (q) {
                tether__ocl_quant_pack(e, i, e->params + off);
            } else {
                pack_oihw4o(T(e, i), (float *)(e->params + off));
            }
            e->pk[i].mem = e->memix_params;
            e->pk[i].off = (int64_t)off / 4;
            off += q ? tether__ocl_quant_pack_bytes(e, i) : oihw4o_bytes(T(e, i));
        }
    }
    off = e->buffer_bytes;
    for (int i = 0; i < g->ntensors; i++) {
        if (!needimg[i]) {
            continue;
        }
        const tether_ir_tensor *w = T(e, i);
        memset(&m, 0, sizeof m);
        m.kind = MEM_IMAGE;
        m.tensor = i;
        m.ndim = 5;
        m.shape[0] = (w->shape[0] + 3) / 4;
        m.shape[1] = w->shape[1];
        m.shape[2] = w->shape[2];
        m.shape[3] = w->shape[3];
        m.shape[4] = 4;
        m.elems = prod(m.shape, 0, 5);
        m.height = m.shape[0];
        m.width = w->shape[1] * w->shape[2] * w->shape[3];
        m.params_off = (int64_t)off;
        pack_oihw4o(w, (float *)(e->params + off));
        off += align16((size_t)m.elems * 4);
        int ix = add_mem(e, &m);
        if (ix < 0) {
            free(needimg);
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
        }
        e->image[i] = ix;
        e->uses_images = 1;
    }
    free(needimg);
    /* aliases read their root's storage */
    for (int i = 0; i < g->ntensors; i++) {
        if (T(e, i)->alias_of >= 0) {
            e->store[i] = e->store[T(e, i)->alias_of];
        }
    }
    return TETHER_OK;
}

/* ---- kernel scaffolding ------------------------------------------------------------------------
 */

static int kmem_add(step *st, int m) {
    for (int i = 0; i < st->nmems; i++) {
        if (st->mems[i] == m) {
            return i;
        }
    }
    st->mems[st->nmems] = m;
    return st->nmems++;
}

static void kref_add(kern *k, int tensor, loc at, int write, const char *name) {
    kref *r = &k->refs[k->nrefs++];
    r->tensor = tensor;
    r->at = at;
    r->write = write;
    snprintf(r->name, sizeof r->name, "%s", name);
    if (at.mem >= 0) {
        kmem_add(k->st, at.mem);
    }
}

static const char *mem_role(const ocl *e, int m) {
    return tether__ocl_mem_kind_name(e->mems[m].kind);
}

/* __kernel void NAME(params, int total) { f; guard; pointers */
static void kernel_open(ocl *e, kern *k, const char *comment) {
    step *st = k->st;
    tether__sbuf_printf(&e->s, "/* %s */\n", comment);
    tether__sbuf_printf(&e->s, "__kernel void %s(", st->kname);
    for (int i = 0; i < st->nmems; i++) {
        int m = st->mems[i];
        int written = 0;
        for (int r = 0; r < k->nrefs; r++) {
            written |= k->refs[r].write && k->refs[r].at.mem == m;
        }
        if (e->mems[m].kind == MEM_IMAGE) {
            tether__sbuf_printf(&e->s, "__read_only image2d_t m%d, ", m);
        } else if (e->mems[m].kind == MEM_TEXTURE) {
            tether__sbuf_printf(&e->s, "%s image2d_t m%d, ",
                                written ? "__write_only" : "__read_only", m);
        } else if (e->mems[m].kind == MEM_STATUS) {
            tether__sbuf_puts(&e->s, "__global int *tg_err /* status */, ");
        } else {
            tether__sbuf_printf(&e->s, "__global %sfloat *m%d /* %s */, ", written ? "" : "const ",
                                m, mem_role(e, m));
        }
    }
    tether__sbuf_puts(&e->s, "int total) {\n");
    e->depth = 1;
    line(e, "const int f = (int)get_global_id(0);");
    if (st->gpu == 2) {
        /* work-groups meet at barriers: every work-item stays; the body checks its outputs */
        line(e, "(void)f;");
        line(e, "(void)total;");
    } else {
        open_block(e, "if (f >= total)");
        line(e, "return;");
        close_block(e);
    }
    for (int r = 0; r < k->nrefs; r++) {
        const kref *x = &k->refs[r];
        if (x->at.mem < 0) {
            /* an empty tensor without storage: the body never dereferences it */
            line(e, "const __global %s *%s = 0;",
                 tether__ocl_typed_graph(e->g) ? tether__ocl_store_type(T(e, x->tensor)->dtype)
                                               : "float",
                 x->name);
            continue;
        }
        if (e->mems[x->at.mem].kind == MEM_IMAGE || e->mems[x->at.mem].kind == MEM_TEXTURE) {
            continue; /* read_imagef / write_imagef on m<i> */
        }
        if (tether__ocl_typed_graph(e->g)) { /* the tensor's own element type */
            const char *ty = tether__ocl_store_type(T(e, x->tensor)->dtype);
            line(e, "%s__global %s *%s = (%s__global %s *)(m%d + %lld);", x->write ? "" : "const ",
                 ty, x->name, x->write ? "" : "const ", ty, x->at.mem, (long long)x->at.off);
        } else if (x->at.off) {
            line(e, "%s__global float *%s = m%d + %lld;", x->write ? "" : "const ", x->name,
                 x->at.mem, (long long)x->at.off);
        } else {
            line(e, "%s__global float *%s = m%d;", x->write ? "" : "const ", x->name, x->at.mem);
        }
    }
}

static void kernel_close(ocl *e) {
    e->depth = 0;
    tether__sbuf_puts(&e->s, "}\n\n");
}

/* `const int p0 = ...; ...` the multi-index of flat index `flat` in shape (extent-1 dims are 0). */
/* ---- steps ----------------------------------------------------------------------------------- */

static step *new_step(ocl *e) {
    if (e->nsteps == e->capsteps) {
        int cap = e->capsteps ? 2 * e->capsteps : 16;
        step *n = realloc(e->steps, sizeof *n * (size_t)cap);
        if (!n) {
            return NULL;
        }
        e->steps = n;
        e->capsteps = cap;
    }
    step *s = &e->steps[e->nsteps++];
    memset(s, 0, sizeof *s);
    return s;
}

static void set_sizes(ocl *e, step *s, int64_t total) {
    s->total = total;
    if (total >= e->local) {
        s->local = e->local;
        s->global = (total + e->local - 1) / e->local * e->local;
    } else {
        s->local = 0;
        s->global = total;
    }
}

/* A human-readable description of a node for the comment above its kernel. */
static void describe(const ocl *e, const tether_ir_node *n, char *buf, size_t cap) {
    size_t o = (size_t)snprintf(buf, cap, "%s: %s(", tether__cg_comment_text(n->name),
                                tether_op_name(n->op));
    char sh[160];
    for (int j = 0; j < n->ninputs && o < cap; j++) {
        if (n->inputs[j] < 0) {
            o += (size_t)snprintf(buf + o, cap - o, "%s-", j ? ", " : "");
            continue;
        }
        const tether_ir_tensor *t = T(e, n->inputs[j]);
        tether__shape_text(sh, sizeof sh, t->shape, t->ndim);
        o += (size_t)snprintf(buf + o, cap - o, "%s%s %s", j ? ", " : "",
                              tether__cg_comment_text(t->name), sh);
    }
    if (o < cap) {
        const tether_ir_tensor *t = T(e, n->outputs[0]);
        tether__shape_text(sh, sizeof sh, t->shape, t->ndim);
        o += (size_t)snprintf(buf + o, cap - o, ") -> %s %s", tether__cg_comment_text(t->name), sh);
    }
    if (o < cap && n->attrs.act != TETHER_ACT_NONE) {
        o += (size_t)snprintf(buf + o, cap - o, ", epilogue %s", tether_act_name(n->attrs.act));
    }
    if (o < cap && n->attrs.has_residual) {
        o += (size_t)snprintf(buf + o, cap - o, " + residual");
    }
    for (int j = 0; j <= n->ninputs && o < cap; j++) {
        int t = j < n->ninputs ? n->inputs[j] : n->outputs[0];
        if (t >= 0 && e->tex && e->tex[t] >= 0) {
            o += (size_t)snprintf(buf + o, cap - o, "; %s in texture m%d",
                                  tether__cg_comment_text(T(e, t)->name), e->tex[t]);
        }
    }
}

static void unique_kname(ocl *e, step *s, const char *base) {
    char b[TETHER_CG_IDENT_BUF];
    tether__cg_ident(b, base, false);
    snprintf(s->kname, sizeof s->kname, "%s_%s", e->P, b);
    for (int k = 2;; k++) {
        int clash = 0;
        for (int i = 0; i < e->nsteps - 1 && !clash; i++) {
            clash = strcmp(e->steps[i].kname, s->kname) == 0;
        }
        if (!clash) {
            return;
        }
        snprintf(s->kname, sizeof s->kname, "%s_%s_%d", e->P, b, k);
    }
}

/* Node idx's kernel; fused >= 0: the softmax node computed by the same kernel (fp its plan). */
static int emit_node(ocl *e, int idx, int fused, const tether__ocl_gpu *fp) {
    const tether_ir_node *n = &e->g->nodes[idx];
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    if (tether__ocl_custom_owns(e, n)) {
        return tether__ocl_custom_emit(e, idx);
    }
    if (e->tex[n->outputs[0]] >= 0 && n->op != TETHER_OP_CONV2D) {
        /* an elementwise kernel on texels reads every operand as a texture: the scope pass
         * decides them together, and a group falls back whole (equal extents) */
        for (int j = 0; j < n->ninputs; j++) {
            if (n->inputs[j] >= 0 && e->tex[n->inputs[j]] < 0) {
                return tether_set_error(TETHER_ERR_INTERNAL,
                                        "OpenCL codegen: node '%s' writes a texture but its input "
                                        "'%s' is a buffer",
                                        n->name, T(e, n->inputs[j])->name);
            }
        }
    }
    step *s = new_step(e);
    if (!s) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
    }
    s->node = idx;
    s->tensor = n->outputs[0];
    unique_kname(e, s, n->name);
    kern k;
    memset(&k, 0, sizeof k);
    k.st = s;
    k.img = -1;
    int tex = is_texture_conv(e, n), pk = is_packed_conv(e, n);
    int nmain = tether__ir_main_inputs(n);
    for (int j = 0; j < n->ninputs; j++) {
        int t = n->inputs[j];
        if (t < 0) {
            continue;
        }
        if (j == 1 && tex) {
            k.img = e->image[t];
            kmem_add(s, k.img);
            continue;
        }
        if (j == 1 && pk) {
            k.packed = 1;
            kref_add(&k, t, e->pk[t], 0, "wp");
            continue;
        }
        const char *nm = in_name(j);
        if (j >= nmain) {
            snprintf(k.res, sizeof k.res, "%s", nm);
        }
        kref_add(&k, t, e->store[t], 0, nm);
    }
    int yt = fused >= 0 ? e->g->nodes[fused].outputs[0] : n->outputs[0];
    kref_add(&k, yt, dest_of(e, yt), 1, "y");
    e->err_cur = 0; /* a kernel that checks at run time gets the error flag last */
    for (int i = 0; i < e->nerr; i++) {
        if (e->err_nodes[i] == idx && !e->err_cur) { /* its first entry */
            e->err_cur = i + 1;
            kmem_add(s, e->memix_err);
        }
    }
    int64_t total = (int64_t)tether_ir_tensor_elements(y);
    if (e->tex[n->outputs[0]] >= 0 && n->op != TETHER_OP_CONV2D) {
        total /= 4; /* elementwise on texels */
    }
    if (tether__ocl_index_owns(e->g, n)) {
        total = tether__ocl_index_items(e, n); /* emit_opencl_index.c */
    }
    if (tether__ocl_layers_owns(e->g, n)) {
        total = tether__ocl_layers_items(e, n); /* emit_opencl_layers.c */
    }
    if (tether__ocl_dynamic_owns(e->g, n)) {
        total = 1; /* emit_opencl_dynamic.c: one work-item, serial */
    }
    if (tether__ocl_live_owns(e->g, n)) {
        total = tether__ocl_live_items(e, n); /* emit_opencl_dynamic_live.c */
    }
    switch (n->op) {
    case TETHER_OP_CONV2D:
        if (tex || pk) {
            total = y->shape[0] * ((y->shape[1] + 3) / 4) * y->shape[2] * y->shape[3];
        }
        break;
    case TETHER_OP_SOFTMAX:
    case TETHER_OP_LOG_SOFTMAX:
    case TETHER_OP_HARDMAX: {
        int ax = tether__ir_norm_axis(n->attrs.axis, y->ndim);
        total /= y->shape[ax];
        break;
    }
    case TETHER_OP_LAYER_NORM: {
        int ax = tether__ir_norm_axis(n->attrs.axis, y->ndim);
        total = prod(y->shape, 0, ax);
        break;
    }
        TETHER__CASES_UNARY
        TETHER__CASES_BINARY
    case TETHER_OP_DENSE:
    case TETHER_OP_MATMUL:
    case TETHER_OP_PRELU:
    case TETHER_OP_MAX_POOL:
    case TETHER_OP_AVG_POOL:
    case TETHER_OP_GLOBAL_AVG_POOL:
    case TETHER_OP_GLOBAL_MAX_POOL:
    case TETHER_OP_RESHAPE:
    case TETHER_OP_FLATTEN:
    case TETHER_OP_SQUEEZE:
    case TETHER_OP_UNSQUEEZE:
    case TETHER_OP_TRANSPOSE:
    case TETHER_OP_CONCAT:
    case TETHER_OP_PAD:
    case TETHER_OP_BATCH_NORM:
    case TETHER_OP_REDUCE_MEAN:
    case TETHER_OP_REDUCE_SUM:
    case TETHER_OP_REDUCE_MAX:
    case TETHER_OP_REDUCE_MIN:
    case TETHER_OP_REDUCE_PROD:
    case TETHER_OP_REDUCE_L1:
    case TETHER_OP_REDUCE_L2:
    case TETHER_OP_REDUCE_LOG_SUM:
    case TETHER_OP_REDUCE_LOG_SUM_EXP:
    case TETHER_OP_REDUCE_SUM_SQUARE:
    case TETHER_OP_RESIZE_NEAREST:
    case TETHER_OP_WHERE: /* refused by tether__ocl_check_support */
        TETHER__CASES_DATA
    case TETHER_OP_NLL_LOSS:
    case TETHER_OP_NLL_LOSS_SUM:
    case TETHER_OP_NLL_LOSS_MEAN:
    case TETHER_OP_CONV_ND:
    case TETHER_OP_CONV_TRANSPOSE:
    case TETHER_OP_QUANTIZE:
    case TETHER_OP_DEQUANTIZE:
    case TETHER_OP_QCONV:
    case TETHER_OP_QMATMUL:
    case TETHER_OP_QADD: /* issue 28 integer elementwise/pooling */
    case TETHER_OP_QMUL:
    case TETHER_OP_QLUT:
    case TETHER_OP_QMAX_POOL:
    case TETHER_OP_QAVG_POOL:
    case TETHER_OP_CUSTOM: /* emitted by tether__ocl_custom_emit */
        break;
    }
    int local = e->local; /* a tuned work-group size for this node's workload */
    const tether_schedule *sched = NULL;
    char key[TETHER_WORKLOAD_MAX];
    for (int i = 0; i < e->o->nnode_schedules && !tether_workload_key(e->g, idx, key, sizeof key);
         i++) {
        const tether_node_schedule *ns = &e->o->node_schedules[i];
        if (ns->workload && !strcmp(ns->workload, key)) {
            if (ns->schedule.local_size > 0) { /* 0: the default measured best */
                e->local = ns->schedule.local_size;
            }
            sched = &ns->schedule;
            e->ntuned++;
            break;
        }
    }
    tether__ocl_gpu gp;
    memset(&gp, 0, sizeof gp);
    int gpu = fused >= 0 ? (gp = *fp, 1)
                         : (n->op == TETHER_OP_DENSE || n->op == TETHER_OP_CONV2D ||
                            tether__ocl_quant_op(n->op) || n->op == TETHER_OP_SOFTMAX ||
                            n->op == TETHER_OP_LOG_SOFTMAX || n->op == TETHER_OP_HARDMAX ||
                            n->op == TETHER_OP_LAYER_NORM) &&
                               tether__ocl_gpu_plan(e, n, &k, sched, &gp);
    if (gpu) {
        s->total = gp.total;
        s->global = gp.global;
        s->local = gp.local;
        s->serial = gp.serial;
        s->gpu = gp.kind == TETHER__OCL_GPU_DW || gp.kind == TETHER__OCL_GPU_QUANT ? 1 : 2;
    } else {
        set_sizes(e, s, total);
        s->serial = tether__ocl_live_owns(e->g, n)      ? tether__ocl_live_serial(e, n)
                    : tether__ocl_dynamic_owns(e->g, n) ? tether__ocl_dynamic_serial(e, n)
                    : tether__ocl_layers_owns(e->g, n)  ? tether__ocl_layers_serial(e, n)
                                                        : tether__ocl_legacy_serial(e, n);
        if (tether__ocl_rnn_op(n->op)) {
            tether__ocl_rnn_launch(e, n, s); /* work-groups with barriers */
        }
    }
    e->local = local;
    char desc[1024];
    describe(e, n, desc, sizeof desc);
    char comment[1800];
    tether__ocl_fill_reason(e, s, &gp, gpu, s->underfill, sizeof s->underfill);
    snprintf(comment, sizeof comment, "%s%s; %lld work-item%s, serial loop %lld; %s%s%s%s%s", desc,
             tex  ? "; weights in a texture:weight image (OIHW4o)"
             : pk ? "; weights packed OIHW4o in the params buffer"
                  : "",
             (long long)s->global, s->global == 1 ? "" : "s", (long long)s->serial,
             gpu         ? "GPU kernel, "
             : gp.why[0] ? "one work-item per output (no GPU kernel: "
                         : "",
             gp.why, gpu || !gp.why[0] ? "" : ")", s->underfill[0] ? "; " : "", s->underfill);
    kernel_open(e, &k, comment);
    if (gpu) {
        tether__ocl_gpu_body(e, n, &k, &gp);
    } else if (tether__ocl_live_owns(e->g, n)) {
        tether__ocl_live_body(e, n);
    } else if (tether__ocl_dynamic_owns(e->g, n)) {
        tether__ocl_dynamic_body(e, n);
    } else if (tether__ocl_layers_owns(e->g, n)) {
        tether__ocl_layers_body(e, n);
    } else if (tether__ocl_typed_owns(e->g, n)) {
        tether__ocl_typed_body(e, n);
    } else {
        tether__ocl_kernel_body(e, n, &k);
    }
    kernel_close(e);
    e->err_cur = 0;
    return TETHER_OK;
}

/* A graph output no node writes (a graph input or a constant): copied at the end. */
static int emit_output_copy(ocl *e, int t) {
    step *s = new_step(e);
    if (!s) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
    }
    s->node = -1;
    s->tensor = t;
    char base[200];
    snprintf(base, sizeof base, "copy_%s", T(e, t)->name);
    unique_kname(e, s, base);
    kern k;
    memset(&k, 0, sizeof k);
    k.st = s;
    k.img = -1;
    kref_add(&k, t, e->store[root_of(e, t)], 0, "in0");
    kref_add(&k, t, dest_of(e, t), 1, "y");
    int64_t total = (int64_t)tether_ir_tensor_elements(T(e, t));
    set_sizes(e, s, total);
    char comment[300];
    snprintf(comment, sizeof comment, "graph output %s is %s: a copy; %lld work-items",
             tether__cg_comment_text(T(e, t)->name),
             T(e, root_of(e, t))->kind == TETHER_TENSOR_CONSTANT ? "a constant" : "a graph input",
             (long long)total);
    kernel_open(e, &k, comment);
    line(e, "y[f] = in0[f];");
    kernel_close(e);
    return TETHER_OK;
}

/* ---- entry ------------------------------------------------------------------------------------
 */

static void ocl_free(ocl *e) {
    free(e->plan_json);
    free(e->plan_svg);
    free(e->tex);
    free(e->offset);
    free(e->mems);
    free(e->store);
    free(e->outmem);
    free(e->image);
    free(e->needbuf);
    free(e->needpk);
    free(e->pk);
    free(e->steps);
    free(e->params);
    free(e->err_nodes);
    tether__sbuf_free(&e->s);
}

int tether_codegen_opencl(const tether_ir_graph *g, const tether_memplan *plan,
                          const tether_opencl_options *o, tether_opencl_output *out) {
    memset(out, 0, sizeof *out);
    tether_opencl_options d;
    if (!o) {
        tether_opencl_options_init(&d);
        o = &d;
    }
    const char *P = o->prefix ? o->prefix : "tether_model";
    int rc = tether__cg_check_prefix(P);
    if (rc) {
        return rc;
    }
    if (o->local_size < 0 || o->local_size > 1024) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "work-group size %d is not 1..1024",
                                o->local_size);
    }
    if ((rc = tether__ocl_check_support(g, o)) || (rc = tether__ocl_custom_check(g))) {
        return rc;
    }
    for (int i = 0; o->fp16 && i < g->nnodes; i++) {
        if (g->nodes[i].op == TETHER_OP_CUSTOM) {
            return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                    "--precision fp16: node '%s' is a custom operator, whose "
                                    "OpenCL kernel reads and writes float32 (compile without "
                                    "--precision fp16)",
                                    g->nodes[i].name);
        }
    }
    for (int i = 0; i < o->nnode_schedules; i++) {
        const tether_schedule *sc = &o->node_schedules[i].schedule;
        int ls = sc->local_size;
        if (ls < 0 || ls > 1024) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "node schedule for '%s': local_size %d is not 0..1024",
                                    o->node_schedules[i].workload, ls);
        }
        if (sc->ocl_split_k < 0 || sc->ocl_split_k > 1024 ||
            (sc->ocl_tile_m && sc->ocl_tile_m != 16 && sc->ocl_tile_m != 32 &&
             sc->ocl_tile_m != 64) ||
            (sc->ocl_tile_n && sc->ocl_tile_n != 16 && sc->ocl_tile_n != 32 &&
             sc->ocl_tile_n != 64)) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "node schedule for '%s': ocl_split_k %d (0..1024), ocl_tile_m "
                                    "%d, ocl_tile_n %d (0, 16, 32, 64) out of range",
                                    o->node_schedules[i].workload, sc->ocl_split_k, sc->ocl_tile_m,
                                    sc->ocl_tile_n);
        }
    }
    ocl e;
    memset(&e, 0, sizeof e);
    e.g = g;
    e.plan = plan;
    e.o = o;
    e.P = P;
    tether_opencl_options oc = *o; /* TETHER_OPENCL_LEGACY=1: the baseline kernels */
    const char *leg = getenv("TETHER_OPENCL_LEGACY");
    if (leg && *leg && strcmp(leg, "0") != 0) {
        oc.legacy_kernels = true;
    }
    e.o = &oc;
    e.local = o->local_size ? o->local_size : 64;
    tether__sbuf_init(&e.s);
    if ((rc = tether__ocl_plan_textures(&e)) || (rc = tether__ocl_custom_textures(&e)) ||
        (rc = assign_memory(&e))) {
        ocl_free(&e);
        return rc;
    }
    /* the kernels, into a separate buffer; the file header is written once they are known */
    for (int i = 0; i < g->nnodes && !rc; i++) {
        if (!node_has_kernel(&e, &g->nodes[i])) {
            continue;
        }
        int next = i + 1;
        while (next < g->nnodes && !node_has_kernel(&e, &g->nodes[next])) {
            next++;
        }
        tether__ocl_gpu fp;
        int fused = tether__ocl_fused_softmax(&e, i, next < g->nnodes ? next : -1, &fp);
        rc = emit_node(&e, i, fused, &fp);
        if (fused >= 0) {
            i = fused; /* its output is written by node i's kernel */
        }
    }
    for (int i = 0; i < g->noutputs && !rc; i++) {
        int t = g->outputs[i];
        if (T(&e, t)->producer < 0 && tether_ir_tensor_elements(T(&e, t)) > 0) {
            rc = emit_output_copy(&e, t);
        }
    }
    if (!rc && e.s.failed) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
    }
    if (!rc && o->fp16) {
        rc = tether__ocl_fp16_rewrite(&e, &e.s);
        if (!rc) {
            rc = tether__ocl_fp16_params(&e);
        }
    }
    if (rc) {
        ocl_free(&e);
        return rc;
    }
    tether__sbuf src;
    tether__sbuf_init(&src);
    tether__sbuf_printf(&src,
                        "/*\n * %s.cl: OpenCL C kernels of model '%s', generated by `tether "
                        "compile --backend opencl`\n * (docs/codegen.md). Do not edit.\n *\n"
                        " * %d kernels, launched in file order as metadata.json's steps list "
                        "them: one work-item per\n * output element (per 4 output channels "
                        "of a texture-weight conv, per row of softmax and\n * layer_norm), "
                        "global sizes rounded up to the work-group size, `total` = the\n * "
                        "work-items that do work. Memory objects m<i> are metadata.json's "
                        "memory[i].\n */\n",
                        P, tether__cg_comment_text(g->name), e.nsteps);
    tether__ocl_limits lim;
    char ltext[300];
    tether__ocl_limits_get(o, &lim);
    tether__ocl_limits_text(&lim, ltext, sizeof ltext);
    tether__sbuf_printf(&src, "/* Device limits the kernels are sized by: %s. */\n", ltext);
    if (o->fp16) {
        tether__sbuf_puts(&src, "/* --precision fp16: the workspace, the params buffer and the "
                                "images hold half,\n * read with vload_half and written with "
                                "vstore_half (round to nearest even);\n * arithmetic and "
                                "accumulation in float; graph inputs and outputs float32. */\n");
    }
    if (e.uses_images) {
        tether__sbuf_puts(&src,
                          "__constant sampler_t TT_SAMPLER =\n    CLK_NORMALIZED_COORDS_FALSE "
                          "| CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;\n");
    }
    tether__sbuf_puts(&src, "\n");
    tether__ocl_quant_helpers(&e, &src);
    tether__ocl_typed_prelude(g, &src);
    tether__ocl_dynamic_prelude(g, &src);
    if ((rc = tether__ocl_custom_sources(&e, &src))) {
        tether__sbuf_free(&src);
        ocl_free(&e);
        return rc;
    }
    tether__sbuf_puts(&src, e.s.data ? e.s.data : "");
    char *meta = tether__metadata_opencl(&e);
    if (src.failed || !meta) {
        tether__sbuf_free(&src);
        free(meta);
        ocl_free(&e);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
    }
    out->source = src.data;
    out->metadata = meta;
    out->params = e.params;
    out->params_bytes = e.params_bytes;
    out->nkernels = e.nsteps;
    for (int i = 0; i < e.nmems; i++) {
        out->nimages += e.mems[i].kind == MEM_IMAGE;
    }
    out->workspace_size = e.offset ? e.ws_size : plan->workspace_size;
    if (o->fp16) {
        out->workspace_size /= 2; /* the same elements, 2 bytes each */
    }
    out->ntexture_tensors = e.ntex_tensors;
    out->ntunable = e.nsteps;
    out->ntuned = e.ntuned;
    out->nfallbacks = e.nfallbacks;
    out->texture_bytes = e.tex_bytes;
    out->plan_json = e.plan_json;
    out->plan_svg = e.plan_svg;
    e.plan_json = e.plan_svg = NULL;
    for (int i = 0; i < e.nmems; i++) {
        out->ntextures += e.mems[i].kind == MEM_TEXTURE;
    }
    e.params = NULL;
    ocl_free(&e);
    return TETHER_OK;
}

/* ---- step helpers for emit_opencl_custom.c ------------------------------------------------- */

step *tether__ocl_new_step(ocl *e) {
    return new_step(e);
}

void tether__ocl_unique_kname(ocl *e, step *s, const char *base) {
    unique_kname(e, s, base);
}
