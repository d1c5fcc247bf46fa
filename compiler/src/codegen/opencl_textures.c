/*
 * The OpenCL backend's storage-scope pass: which activations live in texture images (scope
 * "texture") and where, planned by the 2D token allocator of the planner at the device's image
 * limits (tether_plan_run with a texture pool); `tether plan --texture-activations` shows the same
 * plan (tether__opencl_texture_extents). Format and rules: docs/codegen.md, "OpenCL backend".
 *
 * What must stay true: a texture plan is checked with tether_plan_validate in every build type
 * (Release too) before a kernel reads it: a plan that fails is an internal error, never code; a
 * tensor whose image would exceed the limits falls back to the workspace.
 */
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "../plan/memplan_internal.h"
#include "emit_opencl_internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

/* ---- the storage-scope pass: activations in texture images --------------------------------
 * With texture_activations, an activation is stored in a texture image (scope "texture", the
 * RFC's C0 flattening of NCHW4c: [N=1, C/4, H, W, 4] -> an image W texels wide and C/4*H high,
 * texel (w, c4*H + h) = channels 4*c4 .. 4*c4+3 of pixel (h, w)) when its producer and every
 * consumer have texture kernels: convs with constant weights (dense or depthwise: a work-item
 * computes one texel), elementwise operators whose operands all share the output's shape (a
 * work-item per texel, the same expression on float4). Graph inputs and outputs, aliases and
 * everything other kernels read stay buffers; a conv between a buffer and a texture reads or
 * writes each side in its own form, so there are no transform kernels. The 2D token allocator
 * (tether_plan_run with a texture pool at the device's image limits) places the textures, reusing
 * images between tensors whose lifetimes do not overlap; a tensor over the limits falls back to
 * the workspace. */

static int tex_conv(const ocl *e, const tether_ir_node *n) {
    if (n->op != TETHER_OP_CONV2D || !(is_texture_conv(e, n) || is_packed_conv(e, n))) {
        return 0;
    }
    const tether_ir_tensor *x = T(e, n->inputs[0]), *w = T(e, n->inputs[1]);
    int64_t G = n->attrs.groups;
    return G == 1 || (w->shape[1] == 1 && G == x->shape[1] && G == w->shape[0]);
}

static int tex_elementwise(const ocl *e, const tether_ir_node *n) {
    const tether__op_info *info = tether__op_info_of(n->op);
    if (!info || (info->kind != TETHER__OPK_UNARY && info->kind != TETHER__OPK_BINARY)) {
        return 0;
    }
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    for (int j = 0; j < n->ninputs; j++) {
        const tether_ir_tensor *x = n->inputs[j] >= 0 ? T(e, n->inputs[j]) : NULL;
        if (!x || x->ndim != y->ndim ||
            memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)y->ndim)) {
            return 0;
        }
    }
    return 1;
}

static int tex_find(int *parent, int t) {
    while (parent[t] != t) {
        parent[t] = parent[parent[t]];
        t = parent[t];
    }
    return t;
}

/* Whether tensor t may live in a texture (before the image limits). */
static int tex_candidate(const ocl *e, int t) {
    const tether_ir_graph *g = e->g;
    const tether_ir_tensor *x = T(e, t);
    if (x->kind != TETHER_TENSOR_INTERMEDIATE || x->alias_of >= 0 || x->ndim != 4 ||
        x->shape[0] != 1 || x->shape[1] % 4 != 0 || x->dtype.code != kDLFloat ||
        x->dtype.bits != 32 || x->producer < 0 || tether__ir_is_graph_output(g, t) ||
        !tether__memplan_plannable(g, t) || tether_ir_tensor_elements(x) == 0) {
        return 0;
    }
    const tether_ir_node *p = &g->nodes[x->producer];
    if (!node_has_kernel(e, p) || !(tex_conv(e, p) || tex_elementwise(e, p))) {
        return 0;
    }
    for (int i = 0; i < g->ntensors; i++) {
        if (T(e, i)->alias_of == t) {
            return 0;
        }
    }
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *n = &g->nodes[i];
        for (int j = 0; j < n->ninputs; j++) {
            if (n->inputs[j] != t) {
                continue;
            }
            int main_in = tether__ir_main_inputs(n);
            int ok = node_has_kernel(e, n) &&
                     ((tex_conv(e, n) && (j == 0 || j >= main_in)) || tex_elementwise(e, n));
            if (!ok) {
                return 0;
            }
        }
    }
    return 1;
}

/* The scope decision: extent[2t], extent[2t+1] = width, height of tensor t's image, or 0 when it
 * stays a buffer (groups of elementwise operands decided together). */
static int choose_textures(const ocl *e, int64_t *extent) {
    const tether_ir_graph *g = e->g;
    int nt = g->ntensors ? g->ntensors : 1;
    int *parent = malloc(sizeof(int) * (size_t)nt), *ok = malloc(sizeof(int) * (size_t)nt);
    if (!parent || !ok) {
        free(parent);
        free(ok);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
    }
    for (int t = 0; t < g->ntensors; t++) {
        parent[t] = t;
        ok[t] = 1;
    }
    for (int i = 0; i < g->nnodes; i++) { /* elementwise operands share the output's scope */
        const tether_ir_node *n = &g->nodes[i];
        if (!tex_elementwise(e, n)) {
            continue;
        }
        for (int j = 0; j < n->ninputs; j++) {
            parent[tex_find(parent, n->inputs[j])] = tex_find(parent, n->outputs[0]);
        }
    }
    for (int t = 0; t < g->ntensors; t++) {
        if (!tex_candidate(e, t)) {
            ok[tex_find(parent, t)] = 0;
        }
    }
    for (int t = 0; t < g->ntensors; t++) {
        extent[2 * t] = extent[2 * t + 1] = 0;
        if (ok[tex_find(parent, t)]) {
            const tether_ir_tensor *x = T(e, t);
            extent[2 * t] = x->shape[3];
            extent[2 * t + 1] = x->shape[1] / 4 * x->shape[2];
        }
    }
    free(parent);
    free(ok);
    return TETHER_OK;
}

int tether__opencl_texture_extents(const tether_ir_graph *g, const tether_opencl_options *o,
                                   int64_t *extent) {
    ocl e;
    memset(&e, 0, sizeof e);
    e.g = g;
    e.o = o;
    return choose_textures(&e, extent);
}

int tether__ocl_plan_textures(ocl *e) {
    const tether_ir_graph *g = e->g;
    int nt = g->ntensors ? g->ntensors : 1;
    e->tex = malloc(sizeof(int) * (size_t)nt);
    if (!e->tex) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
    }
    for (int i = 0; i < g->ntensors; i++) {
        e->tex[i] = -1;
    }
    if (!e->o->texture_activations) {
        return TETHER_OK;
    }
    int *buffer_of = malloc(sizeof(int) * (size_t)nt);
    int64_t *extent = calloc((size_t)nt * 2, sizeof(int64_t));
    e->offset = malloc(sizeof(int64_t) * (size_t)nt);
    tether_plan_problem p;
    memset(&p, 0, sizeof p);
    tether_plan plan;
    memset(&plan, 0, sizeof plan);
    int rc = TETHER_OK, planned = 0;
    if (!buffer_of || !extent || !e->offset) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
        goto out;
    }
    if ((rc = choose_textures(e, extent))) {
        goto out;
    }
    tether_plan_pool pool = {.name = "texture",
                             .scope = TETHER_SCOPE_TEXTURE,
                             .capacity = TETHER_PLAN_UNBOUNDED,
                             .max_width = e->o->image_max_width,
                             .max_height = e->o->image_max_height};
    if ((rc = tether__memplan_problem(g, &p, buffer_of, &pool, extent))) {
        goto out;
    }
    tether_plan_options po;
    tether_plan_options_init(&po);
    if (p.nbuffers > 0) {
        if ((rc = tether_plan_run(&p, &po, &plan))) {
            goto out;
        }
        planned = 1;
        /* tether_plan_run checks its plans only without NDEBUG: check here in every build */
        if ((rc = tether_plan_validate(&p, &po, &plan))) {
            goto out;
        }
    }
    int first_image = e->nmems;
    for (int i = 0; planned && i < plan.nimages; i++) {
        mem m;
        memset(&m, 0, sizeof m);
        m.kind = MEM_TEXTURE;
        m.tensor = -1;
        m.width = plan.images[i].width;
        m.height = plan.images[i].height;
        m.ndim = 3;
        m.shape[0] = m.height;
        m.shape[1] = m.width;
        m.shape[2] = 4;
        m.elems = m.width * m.height * 4;
        m.params_off = -1;
        if (add_mem(e, &m) < 0) {
            rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
            goto out;
        }
        e->tex_bytes += m.elems * 4;
        e->uses_images = 1;
    }
    for (int t = 0; t < g->ntensors; t++) {
        int b = buffer_of[t];
        e->offset[t] = b >= 0 && planned ? plan.assign[b].offset : -1;
        if (b >= 0 && planned && plan.assign[b].image >= 0) {
            e->tex[t] = first_image + plan.assign[b].image;
            e->ntex_tensors++;
        }
        e->nfallbacks += b >= 0 && planned && plan.assign[b].fallback;
    }
    e->ws_size = planned ? (plan.pools[0].size + 15) / 16 * 16 : 0;
    if (planned && ((rc = tether_plan_to_json(&p, &plan, &e->plan_json)) ||
                    (rc = tether_plan_to_svg(&p, &plan, &e->plan_svg)))) {
        goto out;
    }
out:
    if (planned) {
        tether_plan_close(&plan);
    }
    tether_plan_problem_close(&p);
    free(buffer_of);
    free(extent);
    return rc;
}
