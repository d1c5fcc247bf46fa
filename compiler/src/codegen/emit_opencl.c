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
#include "../plan/memplan_internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

/* ---- options ------------------------------------------------------------------------------- */

void tether_opencl_options_init(tether_opencl_options *o) {
    memset(o, 0, sizeof *o);
    o->prefix = NULL;
    o->texture_weights = false;
    o->local_size = 0;
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

/* ---- memory objects ----------------------------------------------------------------------- */

enum { MEM_INPUT, MEM_OUTPUT, MEM_WORKSPACE, MEM_PARAMS, MEM_IMAGE, MEM_TEXTURE };
static const char *const mem_kind_name[] = {"input",  "output",       "workspace",
                                            "params", "weight_image", "texture"};

typedef struct mem {
    int kind;
    int tensor;    /* input/output/image: its tensor, else -1 */
    int64_t elems; /* float32 elements (images: of the padded OIHW4o array) */
    int ndim;      /* shape of the array the host allocates */
    int64_t shape[6];
    int64_t width, height; /* images: extent in texels */
    int64_t params_off;    /* params/images: byte offset of the data in params.bin, else -1 */
    int written;           /* some kernel writes it (scratch for the kernel being emitted) */
} mem;

typedef struct loc {
    int mem;     /* -1 = no storage */
    int64_t off; /* element offset */
} loc;

#define MAX_KMEMS (TETHER_IR_MAX_INPUTS + 4)

typedef struct step {
    int node;   /* the node, or -1 for the copy of a graph output that no node produces */
    int tensor; /* copy steps: the graph output */
    char kname[128];
    int64_t total; /* work-items that do work (the int argument) */
    int64_t global, local;
    int nmems;
    int mems[MAX_KMEMS];
} step;

typedef struct ocl {
    const tether_ir_graph *g;
    const tether_memplan *plan;
    const tether_opencl_options *o;
    const char *P;
    int local;
    mem *mems;
    int nmems, capmems;
    loc *store;    /* per tensor: where it is read from */
    int *outmem;   /* per tensor: its output memory object when it is a graph output, else -1 */
    int *image;    /* per tensor: its texture:weight memory object, else -1 */
    char *needbuf; /* per constant: read as a buffer */
    char *needpk;  /* per constant: conv weights, packed OIHW4o in the params buffer */
    loc *pk;       /* per tensor: where its packed OIHW4o copy is (mem -1 = none) */
    step *steps;
    int nsteps, capsteps;
    char **knames; /* per node: sanitised unique kernel name (NULL = none) */
    tether__sbuf s;
    int depth;
    int uses_images;
    unsigned char *params;
    size_t params_bytes;
    size_t buffer_bytes; /* bytes of params.bin that form the params buffer */
    int memix_params, memix_ws;
    /* the storage-scope pass (texture activations) */
    int *tex;          /* per tensor: its texture memory object, else -1 */
    int64_t *offset;   /* per tensor: workspace byte offset of this backend's plan, -1 = none */
    int64_t ws_size;   /* workspace bytes of that plan */
    int ntex_tensors;  /* tensors in textures */
    int nfallbacks;    /* chosen for a texture, over the image limits: a buffer */
    int64_t tex_bytes; /* bytes of the texture images */
    int ntuned;        /* launches with a tuned work-group size */
    char *plan_json, *plan_svg;
} ocl;

static const tether_ir_tensor *T(const ocl *e, int t) {
    return &e->g->tensors[t];
}

static int add_mem(ocl *e, const mem *m) {
    if (e->nmems == e->capmems) {
        int cap = e->capmems ? 2 * e->capmems : 16;
        mem *n = realloc(e->mems, sizeof *n * (size_t)cap);
        if (!n) {
            return -1;
        }
        e->mems = n;
        e->capmems = cap;
    }
    e->mems[e->nmems] = *m;
    return e->nmems++;
}

/* ---- text helpers ---------------------------------------------------------------------------- */

static void line(ocl *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void line(ocl *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tether__sbuf_vline(&e->s, e->depth, "\n", fmt, ap);
    va_end(ap);
}

static void open_block(ocl *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void open_block(ocl *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tether__sbuf_vline(&e->s, e->depth, " {\n", fmt, ap);
    va_end(ap);
    e->depth++;
}

static void open_scope(ocl *e) {
    line(e, "{");
    e->depth++;
}

static void close_block(ocl *e) {
    e->depth--;
    line(e, "}");
}

/* A float literal of OpenCL C that round-trips. */
static void flit(char *buf, size_t n, float v) {
    tether__cg_float_literal(buf, n, v, true);
}

static int64_t prod(const int64_t *s, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) {
        p *= s[i];
    }
    return p;
}

/* ---- operator support ---------------------------------------------------------------------- */

static int op_supported(tether_op op) {
    switch (op) {
    case TETHER_OP_CONV2D:
    case TETHER_OP_DENSE:
    case TETHER_OP_MATMUL:
    case TETHER_OP_ADD:
    case TETHER_OP_SUB:
    case TETHER_OP_MUL:
    case TETHER_OP_DIV:
    case TETHER_OP_POW:
    case TETHER_OP_RELU:
    case TETHER_OP_LEAKY_RELU:
    case TETHER_OP_PRELU:
    case TETHER_OP_CLIP:
    case TETHER_OP_SIGMOID:
    case TETHER_OP_TANH:
    case TETHER_OP_HARD_SIGMOID:
    case TETHER_OP_HARD_SWISH:
    case TETHER_OP_EXP:
    case TETHER_OP_LOG:
    case TETHER_OP_SQRT:
    case TETHER_OP_NEG:
    case TETHER_OP_ABS:
    case TETHER_OP_SOFTMAX:
    case TETHER_OP_LOG_SOFTMAX:
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
    case TETHER_OP_LAYER_NORM:
    case TETHER_OP_REDUCE_MEAN:
    case TETHER_OP_RESIZE_NEAREST:
        return 1;
    }
    return 0; /* not an operator */
}

/* One error naming every node without a kernel. */
static int check_support(const tether_ir_graph *g) {
    tether__sbuf list;
    tether__sbuf_init(&list);
    int count = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *n = &g->nodes[i];
        if (op_supported(n->op)) {
            continue;
        }
        const char *name = tether_op_name(n->op);
        char num[32];
        if (!name) {
            snprintf(num, sizeof num, "operator #%d", (int)n->op);
            name = num;
        }
        tether__sbuf_printf(&list, "%snode '%s' (%s)", count ? ", " : "", n->name, name);
        count++;
    }
    if (!count) {
        tether__sbuf_free(&list);
        return TETHER_OK;
    }
    char msg[8192];
    snprintf(msg, sizeof msg,
             "the OpenCL backend has no kernel for %d node%s: %s (compile with --backend c, or "
             "change the model)",
             count, count == 1 ? "" : "s", list.data ? list.data : "");
    tether__sbuf_free(&list);
    int rc = tether_set_error(TETHER_ERR_UNSUPPORTED, "%s", msg);
    tether_set_error_detail(msg);
    return rc;
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

/* With --texture-weights, a conv with constant weights reads them from a texture:weight image
 * (OIHW4o: C/g*KH*KW texels wide, ceil(O/4) high) when that image is within the image limits
 * (--image-max, or the --device's); over them its weights stay packed in the params buffer, as
 * an activation over them stays a buffer. */
static int is_texture_conv(const ocl *e, const tether_ir_node *n) {
    if (!e->o->texture_weights || n->op != TETHER_OP_CONV2D || n->inputs[1] < 0 ||
        T(e, n->inputs[1])->kind != TETHER_TENSOR_CONSTANT) {
        return 0;
    }
    const tether_ir_tensor *w = T(e, n->inputs[1]);
    int64_t width = w->shape[1] * w->shape[2] * w->shape[3], height = (w->shape[0] + 3) / 4;
    return !(e->o->image_max_width > 0 && width > e->o->image_max_width) &&
           !(e->o->image_max_height > 0 && height > e->o->image_max_height);
}

/* Constant conv weights without --texture-weights (or over the image limits): packed OIHW4o in
 * the params buffer, read with vload4 (4 output channels per work-item, as with images). */
static int is_packed_conv(const ocl *e, const tether_ir_node *n) {
    return n->op == TETHER_OP_CONV2D && n->inputs[1] >= 0 &&
           T(e, n->inputs[1])->kind == TETHER_TENSOR_CONSTANT && !is_texture_conv(e, n);
}

static size_t oihw4o_bytes(const tether_ir_tensor *w) {
    return (size_t)((w->shape[0] + 3) / 4 * w->shape[1] * w->shape[2] * w->shape[3] * 4 * 4);
}

static int root_of(const ocl *e, int t) {
    return T(e, t)->alias_of >= 0 ? T(e, t)->alias_of : t;
}

static int node_has_kernel(const ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *o = T(e, n->outputs[0]);
    return !(tether__ir_is_alias_op(n->op) && o->alias_of >= 0) && tether_ir_tensor_elements(o) > 0;
}

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

static int plan_textures(ocl *e) {
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
        m.elems = ws_size / 4;
        m.ndim = 1;
        m.shape[0] = m.elems;
        m.params_off = -1;
        if ((e->memix_ws = add_mem(e, &m)) < 0) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "OpenCL codegen: out of memory");
        }
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
            off = align16(off) + oihw4o_bytes(T(e, i));
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
            pack_oihw4o(T(e, i), (float *)(e->params + off));
            e->pk[i].mem = e->memix_params;
            e->pk[i].off = (int64_t)off / 4;
            off += oihw4o_bytes(T(e, i));
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

/* Where a node writes its output. */
static loc dest_of(const ocl *e, int t) {
    loc l = e->store[t];
    if (e->outmem[t] >= 0) {
        l.mem = e->outmem[t];
        l.off = 0;
    }
    return l;
}

/* ---- kernel scaffolding ------------------------------------------------------------------------
 */

typedef struct kref {
    int tensor;
    loc at;
    int write;
    char name[16];
} kref;

typedef struct kern {
    step *st;
    kref refs[MAX_KMEMS];
    int nrefs;
    int img;      /* texture weights: memory index of the image, else -1 */
    int packed;   /* weights packed OIHW4o in a buffer (`wp`), read with vload4 */
    char res[16]; /* residual pointer name, "" = none */
} kern;

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
    return mem_kind_name[e->mems[m].kind];
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
        } else {
            tether__sbuf_printf(&e->s, "__global %sfloat *m%d /* %s */, ", written ? "" : "const ",
                                m, mem_role(e, m));
        }
    }
    tether__sbuf_puts(&e->s, "int total) {\n");
    e->depth = 1;
    line(e, "const int f = (int)get_global_id(0);");
    open_block(e, "if (f >= total)");
    line(e, "return;");
    close_block(e);
    for (int r = 0; r < k->nrefs; r++) {
        const kref *x = &k->refs[r];
        if (x->at.mem < 0) {
            /* an empty tensor without storage: the body never dereferences it */
            line(e, "const __global float *%s = 0;", x->name);
            continue;
        }
        if (e->mems[x->at.mem].kind == MEM_IMAGE || e->mems[x->at.mem].kind == MEM_TEXTURE) {
            continue; /* read_imagef / write_imagef on m<i> */
        }
        if (x->at.off) {
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
static void unravel(ocl *e, const char *flat, const int64_t *shape, int nd, const char *p) {
    if (nd == 0) {
        return;
    }
    line(e, "int %s_r = %s;", p, flat);
    for (int d = nd - 1; d >= 1; d--) {
        if (shape[d] == 1) {
            line(e, "const int %s%d = 0;", p, d);
        } else {
            line(e, "const int %s%d = %s_r %% %lld;", p, d, p, (long long)shape[d]);
            line(e, "%s_r /= %lld;", p, (long long)shape[d]);
        }
    }
    line(e, "const int %s0 = %s_r;", p, p);
}

/* Offset into t (row-major, broadcast against an output of rank ond) from the output's
 * multi-index p0.. (or `flat` when shapes are equal). */
static void bcast_expr(char *out, size_t n, const tether_ir_tensor *t, const int64_t *oshape,
                       int ond, const char *p, const char *flat) {
    if (t->ndim == ond && !memcmp(t->shape, oshape, sizeof(int64_t) * (size_t)ond)) {
        snprintf(out, n, "%s", flat);
        return;
    }
    if (tether_ir_tensor_elements(t) == 1) {
        snprintf(out, n, "0");
        return;
    }
    size_t o = 0;
    int64_t stride = 1;
    out[0] = 0;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1) {
            int od = ond - t->ndim + i;
            o += (size_t)snprintf(out + o, n - o, "%s%s%d * %lld", o ? " + " : "", p, od,
                                  (long long)stride);
        }
        stride *= t->shape[i];
    }
    if (!o) {
        snprintf(out, n, "0");
    }
}

static int needs_unravel(const tether_ir_tensor *t, const tether_ir_tensor *o) {
    return !(t->ndim == o->ndim &&
             !memcmp(t->shape, o->shape, sizeof(int64_t) * (size_t)o->ndim)) &&
           tether_ir_tensor_elements(t) != 1;
}

/* v = act(v) */
static void emit_act(ocl *e, const tether_ir_attrs *a, const char *v) {
    char l1[48], l2[48];
    switch (a->act) {
    case TETHER_ACT_NONE:
        return;
    case TETHER_ACT_RELU:
        line(e, "%s = %s > 0.0f ? %s : 0.0f;", v, v, v);
        return;
    case TETHER_ACT_CLIP:
        flit(l1, sizeof l1, a->act_min);
        flit(l2, sizeof l2, a->act_max);
        line(e, "%s = %s < %s ? %s : (%s > %s ? %s : %s);", v, v, l1, l1, v, l2, l2, v);
        return;
    case TETHER_ACT_LEAKY_RELU:
        flit(l1, sizeof l1, a->act_alpha);
        line(e, "%s = %s < 0.0f ? %s * %s : %s;", v, v, l1, v, v);
        return;
    case TETHER_ACT_SIGMOID:
        line(e, "%s = 1.0f / (1.0f + exp(-%s));", v, v);
        return;
    case TETHER_ACT_TANH:
        line(e, "%s = tanh(%s);", v, v);
        return;
    case TETHER_ACT_HARD_SWISH:
        open_scope(e);
        line(e, "float h = %s + 3.0f;", v);
        line(e, "h = h < 0.0f ? 0.0f : (h > 6.0f ? 6.0f : h);");
        line(e, "%s = %s * h / 6.0f;", v, v);
        close_block(e);
        return;
    }
}

/* ---- kernels ------------------------------------------------------------------------------- */

static const char *in_name(int j) {
    static const char *const names[] = {
        "in0",  "in1",  "in2",  "in3",  "in4",  "in5",  "in6",  "in7",  "in8",  "in9",  "in10",
        "in11", "in12", "in13", "in14", "in15", "in16", "in17", "in18", "in19", "in20", "in21",
        "in22", "in23", "in24", "in25", "in26", "in27", "in28", "in29", "in30", "in31"};
    return names[j];
}

static int has_bias(const tether_ir_node *n) {
    return tether__ir_main_inputs(n) > 2 && n->inputs[2] >= 0;
}

static const char *const lanes4[] = {"x", "y", "z", "w"};

/* `const float4 w4 = ...;` the weights of input channel `ic` (an expression) for output block ob.
 */
static void conv_weights4(ocl *e, const tether_ir_node *n, const kern *k, const char *var,
                          const char *ic) {
    const tether_ir_tensor *w = T(e, n->inputs[1]);
    long long CG = w->shape[1], KH = w->shape[2], KW = w->shape[3];
    if (k->packed) {
        line(e, "const float4 %s = vload4(ob * %lld + ((%s) * %lld + kh) * %lld + kw, wp);", var,
             CG * KH * KW, ic, KH, KW);
    } else {
        line(e,
             "const float4 %s = read_imagef(m%d, TT_SAMPLER, (int2)(((%s) * %lld + kh) * %lld + "
             "kw, ob));",
             var, k->img, ic, KH, KW);
    }
}

/* The accumulation of a conv whose input is a texture (N = 1): depthwise, a texel of the input
 * holds the 4 channels of the output texel; dense, each input texel feeds 4 weight vectors. */
static void conv_texture_input(ocl *e, const tether_ir_node *n, const kern *k, int xt) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    long long C = x->shape[1], H = x->shape[2], W = x->shape[3];
    long long OH = y->shape[2], OW = y->shape[3], OB = (y->shape[1] + 3) / 4;
    int depthwise = a->groups > 1;
    line(e, "const int ow = f %% %lld;", OW);
    line(e, "int q = f / %lld;", OW);
    line(e, "const int oh = q %% %lld;", OH);
    line(e, "const int ob = q / %lld %% %lld;", OH, OB);
    line(e, "const int n = 0; /* a texture holds one image (N = 1) */");
    line(e, "const int ih0 = oh * %lld - %lld;", (long long)a->strides[0], (long long)a->pads[0]);
    line(e, "const int iw0 = ow * %lld - %lld;", (long long)a->strides[1], (long long)a->pads[1]);
    line(e, "float4 acc = (float4)(0.0f);");
    if (!depthwise) {
        open_block(e, "for (int ic4 = 0; ic4 < %lld; ++ic4)", C / 4);
    }
    open_block(e, "for (int kh = 0; kh < %lld; ++kh)", (long long)a->kernel[0]);
    line(e, "const int ih = ih0 + kh * %lld;", (long long)a->dilations[0]);
    open_block(e, "if (ih < 0 || ih >= %lld)", H);
    line(e, "continue;");
    close_block(e);
    open_block(e, "for (int kw = 0; kw < %lld; ++kw)", (long long)a->kernel[1]);
    line(e, "const int iw = iw0 + kw * %lld;", (long long)a->dilations[1]);
    open_block(e, "if (iw < 0 || iw >= %lld)", W);
    line(e, "continue;");
    close_block(e);
    line(e, "const float4 x4 = read_imagef(m%d, TT_SAMPLER, (int2)(iw, %s * %lld + ih));", xt,
         depthwise ? "ob" : "ic4", H);
    if (depthwise) {
        conv_weights4(e, n, k, "w4", "0");
        line(e, "acc += x4 * w4;");
    } else {
        for (int j = 0; j < 4; j++) {
            char ic[32], var[8];
            snprintf(ic, sizeof ic, "ic4 * 4 + %d", j);
            snprintf(var, sizeof var, "w%d", j);
            conv_weights4(e, n, k, var, ic);
            line(e, "acc += x4.%s * w%d;", lanes4[j], j);
        }
    }
    close_block(e);
    close_block(e);
    if (!depthwise) {
        close_block(e);
    }
}

/* The 4 output channels of acc (channels ob*4 .. ob*4+3 of pixel (n, oh, ow)) with bias,
 * residual (a texture texel, rt >= 0, or buffer elements) and activation, written as one texel
 * (yt >= 0; N = 1 and O a multiple of 4 there) or as the buffer elements of the channels below
 * O. */
static void conv_store(ocl *e, const tether_ir_node *n, const kern *k, int yt, int rt, int bias) {
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    long long O = y->shape[1], OH = y->shape[2], OW = y->shape[3];
    if (rt >= 0) {
        line(e, "const float4 r4 = read_imagef(m%d, TT_SAMPLER, (int2)(ow, ob * %lld + oh));", rt,
             OH);
    }
    if (yt >= 0) {
        line(e, "float4 o4;");
    }
    for (int j = 0; j < 4; j++) {
        if (yt >= 0 || O % 4 == 0) {
            open_scope(e);
        } else {
            open_block(e, "if (ob * 4 + %d < %lld)", j, O);
        }
        line(e, "const int oc = ob * 4 + %d;", j);
        line(e, "float v = acc.%s%s;", lanes4[j], bias ? " + in2[oc]" : "");
        if (rt >= 0) {
            line(e, "v += r4.%s;", lanes4[j]);
        } else if (k->res[0]) {
            line(e, "v += %s[((n * %lld + oc) * %lld + oh) * %lld + ow];", k->res, O, OH, OW);
        }
        emit_act(e, &n->attrs, "v");
        if (yt >= 0) {
            line(e, "o4.%s = v;", lanes4[j]);
        } else {
            line(e, "y[((n * %lld + oc) * %lld + oh) * %lld + ow] = v;", O, OH, OW);
        }
        close_block(e);
    }
    if (yt >= 0) {
        line(e, "write_imagef(m%d, (int2)(ow, ob * %lld + oh), o4);", yt, OH);
    }
}

static void k_conv2d(ocl *e, const tether_ir_node *n, const kern *k) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *w = T(e, n->inputs[1]),
                           *y = T(e, n->outputs[0]);
    long long C = x->shape[1], H = x->shape[2], W = x->shape[3];
    long long O = y->shape[1], OH = y->shape[2], OW = y->shape[3];
    long long CG = w->shape[1], KH = w->shape[2], KW = w->shape[3];
    long long G = a->groups, OG = O / G;
    long long SH = a->strides[0], SW = a->strides[1], PT = a->pads[0], PL = a->pads[1];
    long long DH = a->dilations[0], DW = a->dilations[1];
    int bias = has_bias(n);
    if (k->img < 0 && !k->packed) {
        line(e, "const int ow = f %% %lld;", OW);
        line(e, "int q = f / %lld;", OW);
        line(e, "const int oh = q %% %lld;", OH);
        line(e, "q /= %lld;", OH);
        line(e, "const int oc = q %% %lld;", O);
        line(e, "const int n = q / %lld;", O);
        if (G == 1) {
            line(e, "const __global float *xg = in0 + n * %lld;", C * H * W);
        } else {
            line(e, "const __global float *xg = in0 + (n * %lld + (oc / %lld) * %lld) * %lld;", C,
                 OG, CG, H * W);
        }
        line(e, "const __global float *wo = in1 + oc * %lld;", CG * KH * KW);
        line(e, "const int ih0 = oh * %lld - %lld;", SH, PT);
        line(e, "const int iw0 = ow * %lld - %lld;", SW, PL);
        line(e, "float acc = %s;", bias ? "in2[oc]" : "0.0f");
        open_block(e, "for (int ic = 0; ic < %lld; ++ic)", CG);
        open_block(e, "for (int kh = 0; kh < %lld; ++kh)", KH);
        line(e, "const int ih = ih0 + kh * %lld;", DH);
        open_block(e, "if (ih < 0 || ih >= %lld)", H);
        line(e, "continue;");
        close_block(e);
        open_block(e, "for (int kw = 0; kw < %lld; ++kw)", KW);
        line(e, "const int iw = iw0 + kw * %lld;", DW);
        open_block(e, "if (iw < 0 || iw >= %lld)", W);
        line(e, "continue;");
        close_block(e);
        line(e, "acc += xg[(ic * %lld + ih) * %lld + iw] * wo[(ic * %lld + kh) * %lld + kw];", H, W,
             KH, KW);
        close_block(e);
        close_block(e);
        close_block(e);
        line(e, "float v = acc;");
        if (k->res[0]) {
            line(e, "v += %s[f];", k->res);
        }
        emit_act(e, a, "v");
        line(e, "y[f] = v;");
        return;
    }
    /* texture or packed weights: a work-item computes 4 output channels (one texel of weights) */
    long long OB = (O + 3) / 4;
    int same_group = G == 1 || OG % 4 == 0;
    int xt = e->tex[n->inputs[0]], yt = e->tex[n->outputs[0]];
    int rt = n->attrs.has_residual ? e->tex[n->inputs[n->ninputs - 1]] : -1;
    if (xt >= 0) {
        conv_texture_input(e, n, k, xt);
        conv_store(e, n, k, yt, rt, bias);
        return;
    }
    line(e, "const int ow = f %% %lld;", OW);
    line(e, "int q = f / %lld;", OW);
    line(e, "const int oh = q %% %lld;", OH);
    line(e, "q /= %lld;", OH);
    line(e, "const int ob = q %% %lld;", OB);
    line(e, "const int n = q / %lld;", OB);
    if (same_group) {
        if (G == 1) {
            line(e, "const __global float *xg = in0 + n * %lld;", C * H * W);
        } else {
            line(e, "const __global float *xg = in0 + (n * %lld + (ob * 4 / %lld) * %lld) * %lld;",
                 C, OG, CG, H * W);
        }
    } else {
        /* lanes of one texel belong to different groups (depthwise): one input base per lane */
        for (int j = 0; j < 4; j++) {
            line(e,
                 "const __global float *x%d = in0 + (n * %lld + (min(ob * 4 + %d, %lld) / %lld) * "
                 "%lld) * %lld;",
                 j, C, j, O - 1, OG, CG, H * W);
        }
    }
    line(e, "const int ih0 = oh * %lld - %lld;", SH, PT);
    line(e, "const int iw0 = ow * %lld - %lld;", SW, PL);
    line(e, "float4 acc = (float4)(0.0f);");
    open_block(e, "for (int ic = 0; ic < %lld; ++ic)", CG);
    open_block(e, "for (int kh = 0; kh < %lld; ++kh)", KH);
    line(e, "const int ih = ih0 + kh * %lld;", DH);
    open_block(e, "if (ih < 0 || ih >= %lld)", H);
    line(e, "continue;");
    close_block(e);
    open_block(e, "for (int kw = 0; kw < %lld; ++kw)", KW);
    line(e, "const int iw = iw0 + kw * %lld;", DW);
    open_block(e, "if (iw < 0 || iw >= %lld)", W);
    line(e, "continue;");
    close_block(e);
    if (k->packed) {
        line(e, "const float4 w4 = vload4(ob * %lld + (ic * %lld + kh) * %lld + kw, wp);",
             CG * KH * KW, KH, KW);
    } else {
        line(e,
             "const float4 w4 = read_imagef(m%d, TT_SAMPLER, (int2)((ic * %lld + kh) * %lld + kw, "
             "ob));",
             k->img, KH, KW);
    }
    line(e, "const int xo = (ic * %lld + ih) * %lld + iw;", H, W);
    if (same_group) {
        line(e, "acc += xg[xo] * w4;");
    } else {
        line(e, "acc += (float4)(x0[xo], x1[xo], x2[xo], x3[xo]) * w4;");
    }
    close_block(e);
    close_block(e);
    close_block(e);
    conv_store(e, n, k, yt, rt, bias);
}

static void k_dense(ocl *e, const tether_ir_node *n, const kern *k) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    long long M = y->shape[0], N = y->shape[1];
    long long K = a->trans_a ? x->shape[0] : x->shape[1];
    line(e, "const int j = f %% %lld;", N);
    line(e, "const int i = f / %lld;", N);
    line(e, "float acc = 0.0f;");
    if (!a->trans_a && a->trans_b && K % 4 == 0 && K >= 4) {
        line(e, "const __global float *ar = in0 + i * %lld;", K);
        line(e, "const __global float *br = in1 + j * %lld;", K);
        line(e, "float4 a4 = (float4)(0.0f);");
        open_block(e, "for (int k = 0; k < %lld; ++k)", K / 4);
        line(e, "a4 += vload4(k, ar) * vload4(k, br);");
        close_block(e);
        line(e, "acc = (a4.x + a4.y) + (a4.z + a4.w);");
    } else {
        char av[64], bv[64];
        if (a->trans_a) {
            snprintf(av, sizeof av, "in0[k * %lld + i]", M);
        } else {
            snprintf(av, sizeof av, "in0[i * %lld + k]", K);
        }
        if (a->trans_b) {
            snprintf(bv, sizeof bv, "in1[j * %lld + k]", K);
        } else {
            snprintf(bv, sizeof bv, "in1[k * %lld + j]", N);
        }
        open_block(e, "for (int k = 0; k < %lld; ++k)", K);
        line(e, "acc += %s * %s;", av, bv);
        close_block(e);
    }
    char l[48];
    flit(l, sizeof l, a->alpha);
    if (a->alpha == 1.0f) {
        line(e, "float v = acc;");
    } else {
        line(e, "float v = %s * acc;", l);
    }
    if (has_bias(n)) {
        const tether_ir_tensor *c = T(e, n->inputs[2]);
        /* C broadcast to [M, N]: [], [1], [N], [M,1], [1,N], [M,N] */
        char idx[16];
        if (tether_ir_tensor_elements(c) == 1) {
            snprintf(idx, sizeof idx, "0");
        } else if (c->ndim == 1) {
            snprintf(idx, sizeof idx, "j");
        } else if (c->shape[0] != 1 && c->shape[1] != 1) {
            snprintf(idx, sizeof idx, "f");
        } else if (c->shape[0] != 1) {
            snprintf(idx, sizeof idx, "i");
        } else {
            snprintf(idx, sizeof idx, "j");
        }
        flit(l, sizeof l, a->beta);
        if (a->beta == 1.0f) {
            line(e, "v += in2[%s];", idx);
        } else {
            line(e, "v += %s * in2[%s];", l, idx);
        }
    }
    if (k->res[0]) {
        line(e, "v += %s[f];", k->res);
    }
    emit_act(e, a, "v");
    line(e, "y[f] = v;");
}

/* Batch part of a matmul operand's offset: sum over the output's batch dims it does not
 * broadcast. */
static void batch_expr(char *out, size_t n, const tether_ir_tensor *t, int ond) {
    size_t o = 0;
    out[0] = 0;
    int64_t stride = t->shape[t->ndim - 1] * t->shape[t->ndim - 2];
    for (int i = t->ndim - 3; i >= 0; i--) {
        if (t->shape[i] != 1) {
            o += (size_t)snprintf(out + o, n - o, " + o%d * %lld", ond - t->ndim + i,
                                  (long long)stride);
        }
        stride *= t->shape[i];
    }
}

static void k_matmul(ocl *e, const tether_ir_node *n, const kern *k) {
    tether_ir_tensor va, vb, yv;
    tether__ir_matmul_view(e->g, n, &va, &vb, &yv);
    int nd = yv.ndim;
    long long N = yv.shape[nd - 1], K = va.shape[va.ndim - 1];
    unravel(e, "f", yv.shape, nd, "o");
    char ab[256], bb[256];
    batch_expr(ab, sizeof ab, &va, nd);
    batch_expr(bb, sizeof bb, &vb, nd);
    line(e, "const __global float *ar = in0 + o%d * %lld%s;", nd - 2, K, ab);
    line(e, "const __global float *bc = in1 + o%d%s;", nd - 1, bb);
    line(e, "float acc = 0.0f;");
    open_block(e, "for (int k = 0; k < %lld; ++k)", K);
    line(e, "acc += ar[k] * bc[k * %lld];", N);
    close_block(e);
    line(e, "float v = acc;");
    if (k->res[0]) {
        line(e, "v += %s[f];", k->res);
    }
    emit_act(e, &n->attrs, "v");
    line(e, "y[f] = v;");
}

static void binary_expr(char *out, size_t n, tether_op op, const char *x, const char *y) {
    switch (op) {
    case TETHER_OP_ADD:
        snprintf(out, n, "%s + %s", x, y);
        break;
    case TETHER_OP_SUB:
        snprintf(out, n, "%s - %s", x, y);
        break;
    case TETHER_OP_MUL:
        snprintf(out, n, "%s * %s", x, y);
        break;
    case TETHER_OP_DIV:
        snprintf(out, n, "%s / %s", x, y);
        break;
    case TETHER_OP_POW:
        snprintf(out, n, "pow(%s, %s)", x, y);
        break;
    case TETHER_OP_CONV2D: /* not elementwise binary: never called with these */
    case TETHER_OP_DENSE:
    case TETHER_OP_MATMUL:
    case TETHER_OP_RELU:
    case TETHER_OP_LEAKY_RELU:
    case TETHER_OP_PRELU:
    case TETHER_OP_CLIP:
    case TETHER_OP_SIGMOID:
    case TETHER_OP_TANH:
    case TETHER_OP_HARD_SIGMOID:
    case TETHER_OP_HARD_SWISH:
    case TETHER_OP_EXP:
    case TETHER_OP_LOG:
    case TETHER_OP_SQRT:
    case TETHER_OP_NEG:
    case TETHER_OP_ABS:
    case TETHER_OP_SOFTMAX:
    case TETHER_OP_LOG_SOFTMAX:
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
    case TETHER_OP_LAYER_NORM:
    case TETHER_OP_REDUCE_MEAN:
    case TETHER_OP_RESIZE_NEAREST:
        snprintf(out, n, "%s", x);
        break;
    }
}

/* The texel coordinate of work-item f of an NCHW4c texture (rows of W texels). */
static void texel_pos(ocl *e, const tether_ir_tensor *y) {
    line(e, "const int2 pos = (int2)(f %% %lld, f / %lld);", (long long)y->shape[3],
         (long long)y->shape[3]);
}

static void k_binary(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *z = T(e, n->inputs[1]),
                           *y = T(e, n->outputs[0]);
    int yt = e->tex[n->outputs[0]];
    if (yt >= 0 && n->op != TETHER_OP_PRELU) {
        char ex[64];
        texel_pos(e, y);
        line(e, "const float4 a0 = read_imagef(m%d, TT_SAMPLER, pos);", e->tex[n->inputs[0]]);
        line(e, "const float4 a1 = read_imagef(m%d, TT_SAMPLER, pos);", e->tex[n->inputs[1]]);
        binary_expr(ex, sizeof ex, n->op, "a0", "a1");
        line(e, "write_imagef(m%d, pos, %s);", yt, ex);
        return;
    }
    if (needs_unravel(x, y) || needs_unravel(z, y)) {
        unravel(e, "f", y->shape, y->ndim, "o");
    }
    char i0[256], i1[256], a0[300], a1[300], ex[700];
    bcast_expr(i0, sizeof i0, x, y->shape, y->ndim, "o", "f");
    bcast_expr(i1, sizeof i1, z, y->shape, y->ndim, "o", "f");
    snprintf(a0, sizeof a0, "in0[%s]", i0);
    snprintf(a1, sizeof a1, "in1[%s]", i1);
    if (n->op == TETHER_OP_PRELU) {
        line(e, "const float v = %s;", a0);
        line(e, "y[f] = v < 0.0f ? v * %s : v;", a1);
        return;
    }
    binary_expr(ex, sizeof ex, n->op, a0, a1);
    line(e, "y[f] = %s;", ex);
}

/* Elementwise operators: one element per work-item, or with texture operands (all of them, the
 * storage-scope pass keeps them together) one texel, the same expression on float4. */
static void k_unary(ocl *e, const tether_ir_node *n) {
    const tether_ir_attrs *a = &n->attrs;
    char l1[48], l2[48];
    int yt = e->tex[n->outputs[0]];
    if (yt >= 0) {
        texel_pos(e, T(e, n->outputs[0]));
        line(e, "float4 v = read_imagef(m%d, TT_SAMPLER, pos);", e->tex[n->inputs[0]]);
    } else {
        line(e, "float v = in0[f];");
    }
    switch (n->op) {
    case TETHER_OP_RELU:
        line(e, "v = v > 0.0f ? v : 0.0f;");
        break;
    case TETHER_OP_LEAKY_RELU:
        flit(l1, sizeof l1, a->alpha);
        line(e, "v = v < 0.0f ? %s * v : v;", l1);
        break;
    case TETHER_OP_CLIP:
        flit(l1, sizeof l1, a->min);
        flit(l2, sizeof l2, a->max);
        line(e, "v = v < %s ? %s : (v > %s ? %s : v);", l1, l1, l2, l2);
        break;
    case TETHER_OP_SIGMOID:
        line(e, "v = 1.0f / (1.0f + exp(-v));");
        break;
    case TETHER_OP_TANH:
        line(e, "v = tanh(v);");
        break;
    case TETHER_OP_HARD_SIGMOID:
        flit(l1, sizeof l1, a->alpha);
        flit(l2, sizeof l2, a->beta);
        line(e, "v = %s * v + %s;", l1, l2);
        line(e, "v = v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);");
        break;
    case TETHER_OP_HARD_SWISH: {
        if (yt >= 0) {
            line(e, "v = v * clamp(v + 3.0f, 0.0f, 6.0f) / 6.0f;");
            break;
        }
        tether_ir_attrs h;
        memset(&h, 0, sizeof h);
        h.act = TETHER_ACT_HARD_SWISH;
        emit_act(e, &h, "v");
        break;
    }
    case TETHER_OP_EXP:
        line(e, "v = exp(v);");
        break;
    case TETHER_OP_LOG:
        line(e, "v = log(v);");
        break;
    case TETHER_OP_SQRT:
        line(e, "v = sqrt(v);");
        break;
    case TETHER_OP_NEG:
        line(e, "v = -v;");
        break;
    case TETHER_OP_ABS:
        line(e, "v = fabs(v);");
        break;
    case TETHER_OP_CONV2D: /* not elementwise unary: never called with these */
    case TETHER_OP_DENSE:
    case TETHER_OP_MATMUL:
    case TETHER_OP_ADD:
    case TETHER_OP_SUB:
    case TETHER_OP_MUL:
    case TETHER_OP_DIV:
    case TETHER_OP_POW:
    case TETHER_OP_PRELU:
    case TETHER_OP_SOFTMAX:
    case TETHER_OP_LOG_SOFTMAX:
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
    case TETHER_OP_LAYER_NORM:
    case TETHER_OP_REDUCE_MEAN:
    case TETHER_OP_RESIZE_NEAREST:
        break;
    }
    if (yt >= 0) {
        line(e, "write_imagef(m%d, pos, v);", yt);
    } else {
        line(e, "y[f] = v;");
    }
}

static void k_softmax(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    int ax = tether__ir_norm_axis(n->attrs.axis, y->ndim);
    long long len = y->shape[ax], inner = prod(y->shape, ax + 1, y->ndim);
    line(e, "const int p = f / %lld;", inner);
    line(e, "const int q = f %% %lld;", inner);
    line(e, "const __global float *xs = in0 + p * %lld + q;", len * inner);
    line(e, "__global float *ys = y + p * %lld + q;", len * inner);
    line(e, "float mx = xs[0];");
    open_block(e, "for (int k = 1; k < %lld; ++k)", len);
    line(e, "const float v = xs[k * %lld];", inner);
    line(e, "mx = v > mx ? v : mx;");
    close_block(e);
    line(e, "float sum = 0.0f;");
    open_block(e, "for (int k = 0; k < %lld; ++k)", len);
    line(e, "sum += exp(xs[k * %lld] - mx);", inner);
    close_block(e);
    if (n->op == TETHER_OP_LOG_SOFTMAX) {
        line(e, "const float ls = log(sum);");
        open_block(e, "for (int k = 0; k < %lld; ++k)", len);
        line(e, "ys[k * %lld] = (xs[k * %lld] - mx) - ls;", inner, inner);
    } else {
        open_block(e, "for (int k = 0; k < %lld; ++k)", len);
        line(e, "ys[k * %lld] = exp(xs[k * %lld] - mx) / sum;", inner, inner);
    }
    close_block(e);
}

static void k_pool(ocl *e, const tether_ir_node *n) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    long long H = x->shape[2], W = x->shape[3], OH = y->shape[2], OW = y->shape[3];
    int is_max = n->op == TETHER_OP_MAX_POOL;
    int incl = !is_max && a->count_include_pad;
    line(e, "const int ow = f %% %lld;", OW);
    line(e, "const int oh = (f / %lld) %% %lld;", OW, OH);
    line(e, "const int nc = f / %lld;", OW * OH);
    line(e, "const __global float *xp = in0 + nc * %lld;", H * W);
    line(e, "const int ih0 = oh * %lld - %lld;", (long long)a->strides[0], (long long)a->pads[0]);
    line(e, "const int iw0 = ow * %lld - %lld;", (long long)a->strides[1], (long long)a->pads[1]);
    line(e, "float acc = %s;", is_max ? "-INFINITY" : "0.0f");
    if (!is_max) {
        line(e, "int cnt = 0;");
    }
    open_block(e, "for (int kh = 0; kh < %lld; ++kh)", (long long)a->kernel[0]);
    line(e, "const int ih = ih0 + kh * %lld;", (long long)a->dilations[0]);
    open_block(e, "for (int kw = 0; kw < %lld; ++kw)", (long long)a->kernel[1]);
    line(e, "const int iw = iw0 + kw * %lld;", (long long)a->dilations[1]);
    if (incl) {
        open_block(e, "if (ih < %lld && iw < %lld)", H + a->pads[2], W + a->pads[3]);
        line(e, "cnt++;");
        close_block(e);
    }
    open_block(e, "if (ih < 0 || ih >= %lld || iw < 0 || iw >= %lld)", H, W);
    line(e, "continue;");
    close_block(e);
    line(e, "const float v = xp[ih * %lld + iw];", W);
    if (is_max) {
        line(e, "acc = v > acc ? v : acc;");
    } else {
        line(e, "acc += v;");
        if (!incl) {
            line(e, "cnt++;");
        }
    }
    close_block(e);
    close_block(e);
    if (!is_max) {
        line(e, "acc /= (float)cnt;");
    }
    line(e, "y[f] = acc;");
}

static void k_global_pool(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    long long plane = prod(x->shape, 2, x->ndim);
    int is_max = n->op == TETHER_OP_GLOBAL_MAX_POOL;
    line(e, "const __global float *xp = in0 + f * %lld;", plane);
    line(e, "float acc = %s;", is_max ? "-INFINITY" : "0.0f");
    open_block(e, "for (int k = 0; k < %lld; ++k)", plane);
    if (is_max) {
        line(e, "const float v = xp[k];");
        line(e, "acc = v > acc ? v : acc;");
    } else {
        line(e, "acc += xp[k];");
    }
    close_block(e);
    if (is_max) {
        line(e, "y[f] = acc;");
    } else {
        line(e, "y[f] = acc / (float)%lld;", plane);
    }
}

static void k_transpose(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    int64_t st[TETHER_IR_MAX_NDIM];
    int64_t s = 1;
    for (int i = x->ndim - 1; i >= 0; i--) {
        st[i] = s;
        s *= x->shape[i];
    }
    unravel(e, "f", y->shape, y->ndim, "o");
    char ex[512];
    size_t o = 0;
    ex[0] = 0;
    for (int i = 0; i < y->ndim; i++) {
        if (y->shape[i] != 1) {
            o += (size_t)snprintf(ex + o, sizeof ex - o, "%so%d * %lld", o ? " + " : "", i,
                                  (long long)st[n->attrs.ints[i]]);
        }
    }
    line(e, "y[f] = in0[%s];", o ? ex : "0");
}

static void k_concat(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    int ax = (int)n->attrs.axis;
    long long L = y->shape[ax], inner = prod(y->shape, ax + 1, y->ndim);
    line(e, "const int i = f %% %lld;", inner);
    line(e, "const int k = (f / %lld) %% %lld;", inner, L);
    line(e, "const int o = f / %lld;", inner * L);
    long long start = 0;
    int first = 1;
    for (int j = 0; j < n->ninputs; j++) {
        long long Lj = T(e, n->inputs[j])->shape[ax];
        if (Lj == 0) {
            continue;
        }
        if (first) {
            open_block(e, "if (k < %lld)", start + Lj);
        } else {
            e->depth--;
            open_block(e, "} else if (k < %lld)", start + Lj);
        }
        first = 0;
        line(e, "y[f] = %s[(o * %lld + (k - %lld)) * %lld + i];", in_name(j), Lj, start, inner);
        start += Lj;
    }
    if (!first) {
        close_block(e);
    }
}

static void k_pad(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    int nd = x->ndim;
    unravel(e, "f", y->shape, nd, "o");
    char off[512], cond[1024];
    size_t oo = 0, co = 0;
    off[0] = cond[0] = 0;
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        long long pb = n->attrs.ints[i], pe = n->attrs.ints[i + nd];
        line(e, "const int k%d = o%d - %lld;", i, i, pb);
        if (pb || pe) {
            co += (size_t)snprintf(cond + co, sizeof cond - co, "%sk%d >= 0 && k%d < %lld",
                                   co ? " && " : "", i, i, (long long)x->shape[i]);
        }
        oo += (size_t)snprintf(off + oo, sizeof off - oo, "%sk%d * %lld", oo ? " + " : "", i,
                               (long long)s);
        s *= x->shape[i];
    }
    char l[48];
    flit(l, sizeof l, n->attrs.value);
    if (co) {
        line(e, "y[f] = (%s) ? in0[%s] : %s;", cond, oo ? off : "0", l);
    } else {
        line(e, "y[f] = in0[%s];", oo ? off : "0");
    }
}

static void k_batch_norm(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    long long C = x->shape[1], inner = prod(x->shape, 2, x->ndim);
    char eps[48];
    flit(eps, sizeof eps, n->attrs.epsilon);
    line(e, "const int c = (f / %lld) %% %lld;", inner, C);
    line(e, "y[f] = (in0[f] - in3[c]) / sqrt(in4[c] + %s) * in1[c] + in2[c];", eps);
}

static void k_layer_norm(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    int ax = tether__ir_norm_axis(n->attrs.axis, x->ndim);
    long long inner = prod(x->shape, ax, x->ndim);
    int bias = n->ninputs > 2 && n->inputs[2] >= 0;
    char eps[48];
    flit(eps, sizeof eps, n->attrs.epsilon);
    line(e, "const __global float *xs = in0 + f * %lld;", inner);
    line(e, "__global float *ys = y + f * %lld;", inner);
    line(e, "float mean = 0.0f;");
    open_block(e, "for (int k = 0; k < %lld; ++k)", inner);
    line(e, "mean += xs[k];");
    close_block(e);
    line(e, "mean /= (float)%lld;", inner);
    line(e, "float var = 0.0f;");
    open_block(e, "for (int k = 0; k < %lld; ++k)", inner);
    line(e, "const float d = xs[k] - mean;");
    line(e, "var += d * d;");
    close_block(e);
    line(e, "var /= (float)%lld;", inner);
    line(e, "const float rs = sqrt(var + %s);", eps);
    open_block(e, "for (int k = 0; k < %lld; ++k)", inner);
    line(e, "ys[k] = (xs[k] - mean) / rs * in1[k]%s;", bias ? " + in2[k]" : "");
    close_block(e);
}

static void k_reduce_mean(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    int nd = x->ndim;
    int red[TETHER_IR_MAX_NDIM] = {0};
    for (int i = 0; i < n->attrs.nints; i++) {
        red[n->attrs.ints[i]] = 1;
    }
    int64_t kshape[TETHER_IR_MAX_NDIM], st[TETHER_IR_MAX_NDIM];
    int64_t s = 1, R = 1;
    for (int i = nd - 1; i >= 0; i--) {
        st[i] = s;
        s *= x->shape[i];
        kshape[i] = red[i] ? 1 : x->shape[i];
        R *= red[i] ? x->shape[i] : 1;
    }
    unravel(e, "f", kshape, nd, "o");
    char base[512];
    size_t o = 0;
    base[0] = 0;
    for (int i = 0; i < nd; i++) {
        if (!red[i] && x->shape[i] != 1) {
            o += (size_t)snprintf(base + o, sizeof base - o, "%so%d * %lld", o ? " + " : "", i,
                                  (long long)st[i]);
        }
    }
    line(e, "const __global float *xb = in0 + %s;", o ? base : "0");
    line(e, "float acc = 0.0f;");
    char idx[512];
    size_t io = 0;
    idx[0] = 0;
    int loops = 0;
    for (int i = 0; i < nd; i++) {
        if (red[i] && x->shape[i] != 1) {
            open_block(e, "for (int r%d = 0; r%d < %lld; ++r%d)", i, i, (long long)x->shape[i], i);
            io += (size_t)snprintf(idx + io, sizeof idx - io, "%sr%d * %lld", io ? " + " : "", i,
                                   (long long)st[i]);
            loops++;
        }
    }
    line(e, "acc += xb[%s];", io ? idx : "0");
    while (loops--) {
        close_block(e);
    }
    line(e, "y[f] = acc / (float)%lld;", (long long)R);
}

static void k_resize(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    unravel(e, "f", y->shape, 4, "o");
    line(e, "y[f] = in0[((o0 * %lld + o1) * %lld + o2 / %lld) * %lld + o3 / %lld];",
         (long long)x->shape[1], (long long)x->shape[2], (long long)n->attrs.scales[0],
         (long long)x->shape[3], (long long)n->attrs.scales[1]);
}

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

static int emit_node(ocl *e, int idx) {
    const tether_ir_node *n = &e->g->nodes[idx];
    const tether_ir_tensor *y = T(e, n->outputs[0]);
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
    kref_add(&k, n->outputs[0], dest_of(e, n->outputs[0]), 1, "y");
    int64_t total = (int64_t)tether_ir_tensor_elements(y);
    if (e->tex[n->outputs[0]] >= 0 && n->op != TETHER_OP_CONV2D) {
        total /= 4; /* elementwise on texels */
    }
    switch (n->op) {
    case TETHER_OP_CONV2D:
        if (tex || pk) {
            total = y->shape[0] * ((y->shape[1] + 3) / 4) * y->shape[2] * y->shape[3];
        }
        break;
    case TETHER_OP_SOFTMAX:
    case TETHER_OP_LOG_SOFTMAX: {
        int ax = tether__ir_norm_axis(n->attrs.axis, y->ndim);
        total /= y->shape[ax];
        break;
    }
    case TETHER_OP_LAYER_NORM: {
        int ax = tether__ir_norm_axis(n->attrs.axis, y->ndim);
        total = prod(y->shape, 0, ax);
        break;
    }
    case TETHER_OP_DENSE:
    case TETHER_OP_MATMUL:
    case TETHER_OP_ADD:
    case TETHER_OP_SUB:
    case TETHER_OP_MUL:
    case TETHER_OP_DIV:
    case TETHER_OP_POW:
    case TETHER_OP_RELU:
    case TETHER_OP_LEAKY_RELU:
    case TETHER_OP_PRELU:
    case TETHER_OP_CLIP:
    case TETHER_OP_SIGMOID:
    case TETHER_OP_TANH:
    case TETHER_OP_HARD_SIGMOID:
    case TETHER_OP_HARD_SWISH:
    case TETHER_OP_EXP:
    case TETHER_OP_LOG:
    case TETHER_OP_SQRT:
    case TETHER_OP_NEG:
    case TETHER_OP_ABS:
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
    case TETHER_OP_RESIZE_NEAREST:
        break;
    }
    int local = e->local; /* a tuned work-group size for this node's workload */
    char key[TETHER_WORKLOAD_MAX];
    for (int i = 0; i < e->o->nnode_schedules && !tether_workload_key(e->g, idx, key, sizeof key);
         i++) {
        const tether_node_schedule *ns = &e->o->node_schedules[i];
        if (ns->workload && !strcmp(ns->workload, key)) {
            if (ns->schedule.local_size > 0) { /* 0: the default measured best */
                e->local = ns->schedule.local_size;
            }
            e->ntuned++;
            break;
        }
    }
    set_sizes(e, s, total);
    e->local = local;
    char desc[1024];
    describe(e, n, desc, sizeof desc);
    char comment[1200];
    snprintf(comment, sizeof comment, "%s%s; %lld work-item%s", desc,
             tex  ? "; weights in a texture:weight image (OIHW4o)"
             : pk ? "; weights packed OIHW4o in the params buffer"
                  : "",
             (long long)total, total == 1 ? "" : "s");
    kernel_open(e, &k, comment);
    switch (n->op) {
    case TETHER_OP_CONV2D:
        k_conv2d(e, n, &k);
        break;
    case TETHER_OP_DENSE:
        k_dense(e, n, &k);
        break;
    case TETHER_OP_MATMUL:
        k_matmul(e, n, &k);
        break;
    case TETHER_OP_ADD:
    case TETHER_OP_SUB:
    case TETHER_OP_MUL:
    case TETHER_OP_DIV:
    case TETHER_OP_POW:
    case TETHER_OP_PRELU:
        k_binary(e, n);
        break;
    case TETHER_OP_SOFTMAX:
    case TETHER_OP_LOG_SOFTMAX:
        k_softmax(e, n);
        break;
    case TETHER_OP_MAX_POOL:
    case TETHER_OP_AVG_POOL:
        k_pool(e, n);
        break;
    case TETHER_OP_GLOBAL_AVG_POOL:
    case TETHER_OP_GLOBAL_MAX_POOL:
        k_global_pool(e, n);
        break;
    case TETHER_OP_RESHAPE:
    case TETHER_OP_FLATTEN:
    case TETHER_OP_SQUEEZE:
    case TETHER_OP_UNSQUEEZE:
        line(e, "y[f] = in0[f];"); /* an alias that is a graph output: a copy */
        break;
    case TETHER_OP_TRANSPOSE:
        k_transpose(e, n);
        break;
    case TETHER_OP_CONCAT:
        k_concat(e, n);
        break;
    case TETHER_OP_PAD:
        k_pad(e, n);
        break;
    case TETHER_OP_BATCH_NORM:
        k_batch_norm(e, n);
        break;
    case TETHER_OP_LAYER_NORM:
        k_layer_norm(e, n);
        break;
    case TETHER_OP_REDUCE_MEAN:
        k_reduce_mean(e, n);
        break;
    case TETHER_OP_RESIZE_NEAREST:
        k_resize(e, n);
        break;
    case TETHER_OP_RELU:
    case TETHER_OP_LEAKY_RELU:
    case TETHER_OP_CLIP:
    case TETHER_OP_SIGMOID:
    case TETHER_OP_TANH:
    case TETHER_OP_HARD_SIGMOID:
    case TETHER_OP_HARD_SWISH:
    case TETHER_OP_EXP:
    case TETHER_OP_LOG:
    case TETHER_OP_SQRT:
    case TETHER_OP_NEG:
    case TETHER_OP_ABS:
        k_unary(e, n);
        break;
    }
    kernel_close(e);
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

/* ---- metadata --------------------------------------------------------------------------------
 */

static cJSON *shape_json(const int64_t *shape, int nd) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < nd; i++) {
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)shape[i]));
    }
    return a;
}

static cJSON *io_list(const ocl *e, const int *idx, int n) {
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        const tether_ir_tensor *t = T(e, idx[i]);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddStringToObject(o, "dtype", "float32");
        cJSON_AddItemToObject(o, "shape", shape_json(t->shape, t->ndim));
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

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

static char *metadata_json(const ocl *e) {
    const tether_ir_graph *g = e->g;
    cJSON *m = cJSON_CreateObject();
    char buf[200];
    cJSON_AddStringToObject(m, "format", "tether-artifact");
    cJSON_AddNumberToObject(m, "version", 1);
    cJSON_AddStringToObject(m, "backend", "opencl");
    cJSON_AddStringToObject(m, "model", g->name);
    cJSON_AddStringToObject(m, "prefix", e->P);
    snprintf(buf, sizeof buf, "%s.cl", e->P);
    cJSON_AddStringToObject(m, "source", buf);
    cJSON_AddBoolToObject(m, "texture_weights", e->o->texture_weights);
    if (e->params_bytes) {
        cJSON_AddStringToObject(m, "params_file", "params.bin");
    } else {
        cJSON_AddNullToObject(m, "params_file");
    }
    cJSON_AddNumberToObject(m, "params_bytes", (double)e->params_bytes);
    cJSON_AddItemToObject(m, "inputs", io_list(e, g->inputs, g->ninputs));
    cJSON_AddItemToObject(m, "outputs", io_list(e, g->outputs, g->noutputs));
    cJSON *mems = cJSON_AddArrayToObject(m, "memory");
    for (int i = 0; i < e->nmems; i++) {
        const mem *x = &e->mems[i];
        cJSON *o = cJSON_CreateObject();
        char tname[TEXTURE_NAME_MAX];
        const char *name = x->tensor >= 0             ? T(e, x->tensor)->name
                           : x->kind == MEM_WORKSPACE ? "workspace"
                           : x->kind == MEM_TEXTURE   ? texture_name(e, i, tname)
                                                      : "params";
        cJSON_AddStringToObject(o, "name", name);
        cJSON_AddStringToObject(o, "kind", mem_kind_name[x->kind]);
        cJSON_AddStringToObject(o, "scope",
                                x->kind == MEM_IMAGE     ? "texture:weight"
                                : x->kind == MEM_TEXTURE ? "texture"
                                                         : "global");
        cJSON_AddStringToObject(o, "dtype", "float32");
        cJSON_AddItemToObject(o, "shape", shape_json(x->shape, x->ndim));
        cJSON_AddNumberToObject(o, "bytes", (double)(x->elems * 4));
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
            cJSON_AddStringToObject(o, "layout", x->kind == MEM_IMAGE ? "OIHW4o" : "NCHW4c");
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
                cJSON_AddNumberToObject(o, "offset", (double)(l.off * 4));
            }
        }
        if (img >= 0) {
            cJSON_AddNumberToObject(o, "image", img);
        }
        if (e->pk[i].mem >= 0) {
            cJSON_AddNumberToObject(o, "oihw4o_offset", (double)(e->pk[i].off * 4));
        }
        if (t->alias_of >= 0) {
            cJSON_AddStringToObject(o, "alias_of", T(e, t->alias_of)->name);
        }
        cJSON_AddItemToArray(ts, o);
    }
    cJSON_AddNumberToObject(m, "kernels", e->nsteps);
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
        cJSON_AddItemToObject(o, "global", shape_json(&gs, 1));
        if (ls) {
            cJSON_AddItemToObject(o, "local", shape_json(&ls, 1));
        } else {
            cJSON_AddNullToObject(o, "local");
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
    char *text = cJSON_Print(m);
    cJSON_Delete(m);
    return text;
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
    if ((rc = check_support(g))) {
        return rc;
    }
    for (int i = 0; i < o->nnode_schedules; i++) {
        int ls = o->node_schedules[i].schedule.local_size;
        if (ls < 0 || ls > 1024) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "node schedule for '%s': local_size %d is not 0..1024",
                                    o->node_schedules[i].workload, ls);
        }
    }
    ocl e;
    memset(&e, 0, sizeof e);
    e.g = g;
    e.plan = plan;
    e.o = o;
    e.P = P;
    e.local = o->local_size ? o->local_size : 64;
    tether__sbuf_init(&e.s);
    if ((rc = plan_textures(&e)) || (rc = assign_memory(&e))) {
        ocl_free(&e);
        return rc;
    }
    /* the kernels, into a separate buffer; the file header is written once they are known */
    for (int i = 0; i < g->nnodes && !rc; i++) {
        if (node_has_kernel(&e, &g->nodes[i])) {
            rc = emit_node(&e, i);
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
    if (e.uses_images) {
        tether__sbuf_puts(&src,
                          "__constant sampler_t TT_SAMPLER =\n    CLK_NORMALIZED_COORDS_FALSE "
                          "| CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;\n");
    }
    tether__sbuf_puts(&src, "\n");
    tether__sbuf_puts(&src, e.s.data ? e.s.data : "");
    char *meta = metadata_json(&e);
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
