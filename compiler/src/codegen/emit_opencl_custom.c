/*
 * The OpenCL backend's part for custom operators (docs/custom-ops.md):
 * - the user's OpenCL source is written ahead of the generated kernels with `__kernel` defined
 *   away and a #line directive, so the user's kernel is a function the generated launch kernel
 *   calls (buffers as pointers at their plan offsets, images as image2d_t) and a build error
 *   names the user's file and line;
 * - every image resource of a custom operator is a packed NHWC image ([H, W, C] -> W x H texels
 *   of C channels, C in {1, 2, 4}), planned by the 2D planner per channel count (images reused
 *   between tensors whose lifetimes do not overlap); over the image limits is an error, never a
 *   buffer (the user's kernel reads an image);
 * - the NCHW <-> NHWC permutes around a custom node are folded into the layout change: the
 *   transpose that feeds an image writes its texels, the one that reads an image reads texels;
 * - the launch uses the registry's work size (1 to 3 dimensions, no rounding, local size left
 *   to the runtime).
 *
 * What must stay true: a custom image is only touched by these kernels and by custom nodes that
 * declare it an image (tether__ocl_custom_check refuses anything else with the node named); the
 * metadata describes the images (layout NHWC, [H, W, C]) so the runner validates them with
 * tether_image_validate before any launch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../custom/custom_internal.h"
#include "../internal.h"
#include "../plan/memplan_internal.h"
#include "emit_opencl_internal.h"
#include "tether/crt/error.h"

static int is_image(const tether_ir_graph *g, int t) {
    return t >= 0 && tether__custom_image_channels(g, t) > 0;
}

int tether__ocl_custom_check(const tether_ir_graph *g) {
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *n = &g->nodes[i];
        if (n->op == TETHER_OP_CUSTOM) {
            const tether_custom_op *op = tether_custom_op_of(g, n);
            if (!op) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "node '%s': custom operator without a registry entry",
                                        n->name);
            }
            if (!op->opencl.present) {
                return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                        "node '%s': custom operator %s::%s has no OpenCL "
                                        "implementation (the registry gives %s%s%s); add "
                                        "\"opencl\" to its implementations or compile with "
                                        "--backend c",
                                        n->name, op->domain, op->name, op->c.present ? "c" : "",
                                        op->c.present && op->mcu.present ? ", " : "",
                                        op->mcu.present ? "mcu" : "");
            }
            continue;
        }
        /* every other node touching a custom image must be a transpose between it and a buffer */
        int touches = is_image(g, n->outputs[0]);
        for (int j = 0; j < n->ninputs; j++) {
            touches |= is_image(g, n->inputs[j]);
        }
        if (!touches) {
            continue;
        }
        if (n->op != TETHER_OP_TRANSPOSE ||
            (is_image(g, n->inputs[0]) && is_image(g, n->outputs[0]))) {
            return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                    "node '%s' (%s) reads or writes a custom operator's image; "
                                    "only the permutes around the custom node may (declare the "
                                    "resource a buffer, or compile with --backend c)",
                                    n->name, tether_op_name(n->op));
        }
    }
    for (int t = 0; t < g->ntensors; t++) {
        const tether_ir_tensor *x = &g->tensors[t];
        if (is_image(g, t) && (x->kind != TETHER_TENSOR_INTERMEDIATE || x->alias_of >= 0 ||
                               tether__ir_is_graph_output(g, t))) {
            return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                    "tensor '%s' is a custom operator's image and also a graph "
                                    "input, output, constant or alias; images live between "
                                    "kernels only (declare the resource a buffer)",
                                    x->name);
        }
    }
    return TETHER_OK;
}

int tether__ocl_custom_textures(ocl *e) {
    const tether_ir_graph *g = e->g;
    if (!tether__custom_graph_has_images(g)) {
        return TETHER_OK;
    }
    int nt = g->ntensors ? g->ntensors : 1;
    int *buffer_of = malloc(sizeof(int) * (size_t)nt);
    int64_t *extent = calloc((size_t)nt * 2, sizeof(int64_t));
    int rc = TETHER_OK;
    if (!buffer_of || !extent) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
    }
    static const int channels[] = {1, 2, 4};
    for (int ci = 0; ci < 3 && !rc; ci++) {
        int c = channels[ci], any = 0;
        for (int t = 0; t < g->ntensors; t++) {
            const tether_ir_tensor *x = T(e, t);
            int ch = tether__custom_image_channels(g, t);
            extent[2 * t] = extent[2 * t + 1] = 0;
            if (ch == c) {
                extent[2 * t] = x->shape[x->ndim - 2];     /* W */
                extent[2 * t + 1] = x->shape[x->ndim - 3]; /* H */
                any = 1;
            }
        }
        if (!any) {
            continue;
        }
        tether_plan_pool pool = {.name = "texture",
                                 .scope = TETHER_SCOPE_TEXTURE,
                                 .capacity = TETHER_PLAN_UNBOUNDED,
                                 .max_width = e->o->image_max_width,
                                 .max_height = e->o->image_max_height};
        tether_plan_problem p;
        memset(&p, 0, sizeof p);
        tether_plan plan;
        memset(&plan, 0, sizeof plan);
        tether_plan_options po;
        tether_plan_options_init(&po);
        int planned = 0;
        if (!(rc = tether__memplan_problem(g, &p, buffer_of, &pool, extent)) &&
            !(rc = tether_plan_run(&p, &po, &plan))) {
            planned = 1;
            rc = tether_plan_validate(&p, &po, &plan);
        }
        int first = e->nmems;
        for (int i = 0; !rc && i < plan.nimages; i++) {
            mem m;
            memset(&m, 0, sizeof m);
            m.kind = MEM_TEXTURE;
            m.tensor = -1;
            m.nhwc = 1;
            m.width = plan.images[i].width;
            m.height = plan.images[i].height;
            m.ndim = 3;
            m.shape[0] = m.height;
            m.shape[1] = m.width;
            m.shape[2] = c;
            m.elems = m.width * m.height * c;
            m.params_off = -1;
            if (add_mem(e, &m) < 0) {
                rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
            }
            e->tex_bytes += m.elems * 4;
            e->uses_images = 1;
        }
        for (int t = 0; !rc && t < g->ntensors; t++) {
            int b = buffer_of[t];
            if (b < 0 || tether__custom_image_channels(g, t) != c) {
                continue;
            }
            if (plan.assign[b].fallback || plan.assign[b].image < 0) {
                rc = tether_set_error(
                    TETHER_ERR_LIMIT,
                    "tensor '%s', a custom operator's image of %lld x %lld "
                    "texels, exceeds the image limits %lld x %lld "
                    "(--image-max or the device's); the contract needs an "
                    "image: declare the resource a buffer or make it smaller",
                    T(e, t)->name, (long long)extent[2 * t], (long long)extent[2 * t + 1],
                    (long long)e->o->image_max_width, (long long)e->o->image_max_height);
            } else {
                e->tex[t] = first + plan.assign[b].image;
                e->ntex_tensors++;
            }
        }
        if (planned) {
            tether_plan_close(&plan);
        }
        tether_plan_problem_close(&p);
    }
    free(buffer_of);
    free(extent);
    return rc;
}

int tether__ocl_custom_owns(const ocl *e, const tether_ir_node *n) {
    if (n->op == TETHER_OP_CUSTOM) {
        return 1;
    }
    return n->op == TETHER_OP_TRANSPOSE &&
           (is_image(e->g, n->inputs[0]) || is_image(e->g, n->outputs[0]));
}

static int kmem(step *st, int m) {
    for (int i = 0; i < st->nmems; i++) {
        if (st->mems[i] == m) {
            return i;
        }
    }
    st->mems[st->nmems] = m;
    return st->nmems++;
}

/* `__kernel void NAME(params, int total) {` for the step's memory objects. */
static void open_kernel(ocl *e, step *s, const int *written, const char *comment) {
    tether__sbuf_printf(&e->s, "/* %s */\n__kernel void %s(", comment, s->kname);
    for (int i = 0; i < s->nmems; i++) {
        int m = s->mems[i];
        if (e->mems[m].kind == MEM_TEXTURE || e->mems[m].kind == MEM_IMAGE) {
            tether__sbuf_printf(&e->s, "%s image2d_t m%d, ",
                                written[i] ? "__write_only" : "__read_only", m);
        } else {
            tether__sbuf_printf(&e->s, "__global %sfloat *m%d, ", written[i] ? "" : "const ", m);
        }
    }
    tether__sbuf_puts(&e->s, "int total) {\n");
    e->depth = 1;
}

static void set_1d(ocl *e, step *s, int64_t total) {
    s->total = total;
    if (total >= e->local) {
        s->local = e->local;
        s->global = (total + e->local - 1) / e->local * e->local;
    } else {
        s->local = 0;
        s->global = total;
    }
}

/* Input strides of x along the output's last three axes through perm (h, w, c of an image). */
static void perm_strides(const tether_ir_tensor *x, const tether_ir_node *n, int64_t *st) {
    int64_t xs[TETHER_IR_MAX_NDIM];
    int64_t acc = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        xs[d] = acc;
        acc *= x->shape[d];
    }
    int r = x->ndim;
    for (int k = 0; k < 3; k++) {
        int d = r - 3 + k;
        int64_t p = n->attrs.nints ? n->attrs.ints[d] : r - 1 - d;
        st[k] = xs[p];
    }
}

static int emit_to_image(ocl *e, const tether_ir_node *n, step *s) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    int64_t H = y->shape[y->ndim - 3], W = y->shape[y->ndim - 2], C = y->shape[y->ndim - 1];
    int64_t st[3];
    perm_strides(x, n, st);
    loc src = e->store[n->inputs[0]];
    int img = e->tex[n->outputs[0]];
    int written[MAX_KMEMS] = {0};
    if (src.mem >= 0) {
        kmem(s, src.mem);
    }
    written[kmem(s, img)] = 1;
    set_1d(e, s, H * W);
    char comment[600];
    snprintf(comment, sizeof comment,
             "%s: transpose %s -> %s, written as a packed NHWC image (%lld x %lld texels, C = "
             "%lld): the permute folded into the layout change; %lld work-items",
             tether__cg_comment_text(n->name), tether__cg_comment_text(x->name),
             tether__cg_comment_text(y->name), (long long)W, (long long)H, (long long)C,
             (long long)(H * W));
    open_kernel(e, s, written, comment);
    line(e, "const int f = (int)get_global_id(0);");
    line(e, "if (f >= total) {");
    line(e, "    return;");
    line(e, "}");
    line(e, "const int h = f / %lld, w = f %% %lld;", (long long)W, (long long)W);
    line(e, "const __global float *x = m%d + %lld + h * %lld + w * %lld;", src.mem,
         (long long)src.off, (long long)st[0], (long long)st[1]);
    line(e, "float4 v = (float4)(0.0f);");
    static const char lane[] = "xyzw";
    for (int c = 0; c < C; c++) {
        line(e, "v.%c = x[%lld];", lane[c], (long long)(c * st[2]));
    }
    line(e, "write_imagef(m%d, (int2)(w, h), v);", img);
    e->depth = 0;
    tether__sbuf_puts(&e->s, "}\n\n");
    return TETHER_OK;
}

static int emit_from_image(ocl *e, const tether_ir_node *n, step *s) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    int img = e->tex[n->inputs[0]];
    loc dst = dest_of(e, n->outputs[0]);
    int written[MAX_KMEMS] = {0};
    kmem(s, img);
    written[kmem(s, dst.mem)] = 1;
    int64_t total = (int64_t)tether_ir_tensor_elements(y);
    set_1d(e, s, total);
    /* output index -> input (h, w, c): input axis perm[d] is output axis d */
    int r = y->ndim;
    int64_t ys[TETHER_IR_MAX_NDIM], acc = 1;
    for (int d = r - 1; d >= 0; d--) {
        ys[d] = acc;
        acc *= y->shape[d];
    }
    int outaxis[TETHER_IR_MAX_NDIM];
    for (int d = 0; d < r; d++) {
        int p = n->attrs.nints ? (int)n->attrs.ints[d] : r - 1 - d;
        outaxis[p] = d;
    }
    char comment[600];
    snprintf(comment, sizeof comment,
             "%s: transpose %s -> %s, read from a packed NHWC image: the permute folded into the "
             "layout change; %lld work-items",
             tether__cg_comment_text(n->name), tether__cg_comment_text(x->name),
             tether__cg_comment_text(y->name), (long long)total);
    open_kernel(e, s, written, comment);
    line(e, "const int f = (int)get_global_id(0);");
    line(e, "if (f >= total) {");
    line(e, "    return;");
    line(e, "}");
    const char *nm[3] = {"h", "w", "c"};
    for (int k = 0; k < 3; k++) {
        int d = outaxis[x->ndim - 3 + k];
        line(e, "const int %s = (f / %lld) %% %lld;", nm[k], (long long)ys[d],
             (long long)y->shape[d]);
    }
    line(e, "const float4 t = read_imagef(m%d, TT_SAMPLER, (int2)(w, h));", img);
    line(e, "m%d[%lld + f] = c == 0 ? t.x : c == 1 ? t.y : c == 2 ? t.z : t.w;", dst.mem,
         (long long)dst.off);
    e->depth = 0;
    tether__sbuf_puts(&e->s, "}\n\n");
    return TETHER_OK;
}

static int emit_custom(ocl *e, const tether_ir_node *n, step *s) {
    const tether_custom_op *op = tether_custom_op_of(e->g, n);
    int64_t work[3];
    int nwork = 0;
    int rc = tether__custom_work_size(e->g, n, work, &nwork);
    if (rc) {
        return rc;
    }
    int written[MAX_KMEMS] = {0};
    int64_t items = 1, most = 0;
    for (int j = 0; j <= n->ninputs; j++) {
        int t = j < n->ninputs ? n->inputs[j] : n->outputs[0];
        loc l = j < n->ninputs ? (e->tex[t] >= 0 ? (loc){e->tex[t], 0} : e->store[t])
                               : (e->tex[t] >= 0 ? (loc){e->tex[t], 0} : dest_of(e, t));
        if (l.mem < 0) {
            return tether_set_error(TETHER_ERR_INTERNAL, "node '%s': tensor '%s' has no storage",
                                    n->name, T(e, t)->name);
        }
        int k = kmem(s, l.mem);
        written[k] |= j == n->ninputs;
        int64_t el = e->mems[l.mem].elems;
        most = el > most ? el : most;
    }
    for (int d = 0; d < nwork; d++) {
        s->gsize[d] = work[d];
        items *= work[d];
    }
    s->work_dim = nwork;
    s->global = items;
    s->local = 0;
    s->total = items < most ? items : most;
    char comment[700];
    snprintf(comment, sizeof comment,
             "%s: custom %s::%s, the registry's kernel %s() from %s; global size %lld x %lld x "
             "%lld",
             tether__cg_comment_text(n->name), tether__cg_comment_text(op->domain),
             tether__cg_comment_text(op->name), op->opencl.entry,
             tether__cg_comment_text(op->opencl.file), (long long)work[0],
             (long long)(nwork > 1 ? work[1] : 1), (long long)(nwork > 2 ? work[2] : 1));
    open_kernel(e, s, written, comment);
    line(e, "(void)total;");
    tether__sbuf_printf(&e->s, "    %s(", op->opencl.entry);
    for (int j = 0; j <= n->ninputs; j++) {
        int t = j < n->ninputs ? n->inputs[j] : n->outputs[0];
        if (e->tex[t] >= 0) {
            tether__sbuf_printf(&e->s, "%sm%d", j ? ", " : "", e->tex[t]);
        } else {
            loc l = j < n->ninputs ? e->store[t] : dest_of(e, t);
            tether__sbuf_printf(&e->s, "%sm%d + %lld", j ? ", " : "", l.mem, (long long)l.off);
        }
    }
    tether__sbuf_puts(&e->s, ");\n");
    e->depth = 0;
    tether__sbuf_puts(&e->s, "}\n\n");
    return TETHER_OK;
}

int tether__ocl_custom_emit(ocl *e, int idx) {
    const tether_ir_node *n = &e->g->nodes[idx];
    step *s = tether__ocl_new_step(e);
    if (!s) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
    }
    s->node = idx;
    s->tensor = n->outputs[0];
    tether__ocl_unique_kname(e, s, n->name);
    if (n->op == TETHER_OP_CUSTOM) {
        return emit_custom(e, n, s);
    }
    return is_image(e->g, n->outputs[0]) ? emit_to_image(e, n, s) : emit_from_image(e, n, s);
}

int tether__ocl_custom_sources(const ocl *e, tether__sbuf *src) {
    const tether_custom_impl *done[64];
    int ndone = 0;
    for (int i = 0; i < e->g->nnodes; i++) {
        const tether_custom_op *op = tether_custom_op_of(e->g, &e->g->nodes[i]);
        if (!op) {
            continue;
        }
        const tether_custom_impl *im = &op->opencl;
        int seen = 0;
        for (int j = 0; j < ndone && !seen; j++) {
            seen = done[j] == im ||
                   (!strcmp(done[j]->file, im->file) && !strcmp(done[j]->text, im->text));
        }
        if (seen) {
            continue;
        }
        if (ndone < (int)(sizeof done / sizeof *done)) {
            done[ndone++] = im;
        }
        tether__sbuf_printf(src,
                            "/* ---- custom operator source %s (the registry's; docs/"
                            "custom-ops.md): its kernels are functions the launch kernels "
                            "call ---- */\n#define __kernel\n#define kernel\n#line 1 \"%s\"\n%s\n",
                            tether__cg_comment_text(im->file), im->file, im->text);
        long lines = 1;
        for (const char *p = src->data; p && *p; p++) {
            lines += *p == '\n';
        }
        tether__sbuf_printf(src, "#line %ld \"%s.cl\"\n#undef kernel\n#undef __kernel\n\n",
                            lines + 1, e->P);
    }
    return TETHER_OK;
}
