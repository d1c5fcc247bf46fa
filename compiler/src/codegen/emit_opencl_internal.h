/*
 * The OpenCL backend's private interface (not installed) between emit_opencl.c (kernels, launch
 * steps, memory assignment, tether_codegen_opencl), opencl_textures.c (the storage-scope pass:
 * activations in texture images, planned by the 2D planner and validated) and metadata.c (the
 * one writer of metadata.json, for both backends).
 *
 * What must stay true: memory objects are only added with add_mem; a tensor's texture (tex[t])
 * is decided by the storage-scope pass alone, before memory assignment; the metadata describes
 * exactly the memory objects and steps the kernels use (the runner trusts it).
 */
#ifndef TETHER_CODEGEN_EMIT_OPENCL_INTERNAL_H
#define TETHER_CODEGEN_EMIT_OPENCL_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../internal.h"
#include "tether/compiler.h"

/* ---- memory objects ----------------------------------------------------------------------- */

/* MEM_STATUS: the run-time error flag, one int (emit_opencl_check.c) */
enum { MEM_INPUT, MEM_OUTPUT, MEM_WORKSPACE, MEM_PARAMS, MEM_IMAGE, MEM_TEXTURE, MEM_STATUS };
static inline const char *tether__ocl_mem_kind_name(int kind) {
    static const char *const names[] = {"input",        "output",  "workspace", "params",
                                        "weight_image", "texture", "status"};
    return names[kind];
}

typedef struct mem {
    int kind;
    int tensor;    /* input/output/image: its tensor, else -1 */
    int64_t elems; /* float32 elements (images: of the padded OIHW4o array) */
    int ndim;      /* shape of the array the host allocates */
    int64_t shape[6];
    int64_t width, height; /* images: extent in texels */
    int64_t params_off;    /* params/images: byte offset of the data in params.bin, else -1 */
    int written;           /* some kernel writes it (scratch for the kernel being emitted) */
    int nhwc;              /* texture: a custom operator's packed NHWC image ([H, W, C]) */
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
    int work_dim; /* > 0: a custom kernel's global size gsize[0 .. work_dim) (local: none) */
    int64_t gsize[3];
    int64_t serial; /* iterations of the longest serial loop of a work-item (the report's) */
    int gpu; /* a GPU kernel of emit_opencl_gpu.c: 1, 2 with barriers (no `f < total` guard) */
    int nmems;
    int mems[MAX_KMEMS];
    /* why it launches fewer work-items than the device's lanes (emit_opencl_fill.c; "" = it
     * fills the device, or not decided yet) */
    char underfill[320];
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
    /* the run-time error flag (emit_opencl_check.c): its memory object (-1 = none: no kernel
     * checks), the checking nodes in entry order (entry k is stored as k + 1), the entry of the
     * kernel being emitted (0 = it does not check) */
    int memix_err;
    int *err_nodes;
    int nerr;
    int err_cur;
} ocl;

static inline const tether_ir_tensor *T(const ocl *e, int t) {
    return &e->g->tensors[t];
}

static inline int add_mem(ocl *e, const mem *m) {
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

/* With --texture-weights, a conv with constant weights reads them from a texture:weight image
 * (OIHW4o: C/g*KH*KW texels wide, ceil(O/4) high) when that image is within the image limits
 * (--image-max, or the --device's); over them its weights stay packed in the params buffer, as
 * an activation over them stays a buffer. */
static inline int is_texture_conv(const ocl *e, const tether_ir_node *n) {
    if (!e->o->texture_weights || n->op != TETHER_OP_CONV2D || n->inputs[1] < 0 ||
        T(e, n->inputs[1])->kind != TETHER_TENSOR_CONSTANT) {
        return 0;
    }
    const tether_ir_tensor *w = T(e, n->inputs[1]);
    int64_t width = w->shape[1] * w->shape[2] * w->shape[3], height = (w->shape[0] + 3) / 4;
    return !(e->o->image_max_width > 0 && width > e->o->image_max_width) &&
           !(e->o->image_max_height > 0 && height > e->o->image_max_height);
}

int tether__ocl_quant_packed(const ocl *e, const tether_ir_node *n);

/* Constant conv weights without --texture-weights (or over the image limits): packed OIHW4o in
 * the params buffer, read with vload4 (4 output channels per work-item, as with images); the
 * constant 8-bit weights of qconv (OIHW4o bytes) and qmatmul (B transposed) likewise
 * (tether__ocl_quant_packed, emit_opencl_quant.c). */
static inline int is_packed_conv(const ocl *e, const tether_ir_node *n) {
    return (n->op == TETHER_OP_CONV2D && n->inputs[1] >= 0 &&
            T(e, n->inputs[1])->kind == TETHER_TENSOR_CONSTANT && !is_texture_conv(e, n)) ||
           tether__ocl_quant_packed(e, n);
}

static inline int root_of(const ocl *e, int t) {
    return T(e, t)->alias_of >= 0 ? T(e, t)->alias_of : t;
}

static inline int node_has_kernel(const ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *o = T(e, n->outputs[0]);
    return !(tether__ir_is_alias_op(n->op) && o->alias_of >= 0) && tether_ir_tensor_elements(o) > 0;
}

/* Where a node writes its output. */
static inline loc dest_of(const ocl *e, int t) {
    loc l = e->store[t];
    if (e->outmem[t] >= 0) {
        l.mem = e->outmem[t];
        l.off = 0;
    }
    return l;
}

/* ---- text helpers ---------------------------------------------------------------------------- */

static inline void line(ocl *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static inline void line(ocl *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tether__sbuf_vline(&e->s, e->depth, "\n", fmt, ap);
    va_end(ap);
}

static inline void open_block(ocl *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static inline void open_block(ocl *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tether__sbuf_vline(&e->s, e->depth, " {\n", fmt, ap);
    va_end(ap);
    e->depth++;
}

static inline void open_scope(ocl *e) {
    line(e, "{");
    e->depth++;
}

static inline void close_block(ocl *e) {
    e->depth--;
    line(e, "}");
}

/* A float literal of OpenCL C that round-trips. */
static inline void flit(char *buf, size_t n, float v) {
    tether__cg_float_literal(buf, n, v, true);
}

static inline int64_t prod(const int64_t *s, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) {
        p *= s[i];
    }
    return p;
}

/* ---- one kernel -------------------------------------------------------------------------- */

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

/* The kernel parameter name of input j: in0, in1, ... */
static inline const char *in_name(int j) {
    static const char *const names[] = {
        "in0",  "in1",  "in2",  "in3",  "in4",  "in5",  "in6",  "in7",  "in8",  "in9",  "in10",
        "in11", "in12", "in13", "in14", "in15", "in16", "in17", "in18", "in19", "in20", "in21",
        "in22", "in23", "in24", "in25", "in26", "in27", "in28", "in29", "in30", "in31"};
    return names[j];
}

/* Writes the body of node n's kernel (emit_opencl_kernels.c), its arguments k; the function
 * around it is emit_opencl.c's (kernel_open/kernel_close). Every operator is named: a row of the
 * operator table without a kernel here does not build. */
void tether__ocl_kernel_body(ocl *e, const tether_ir_node *n, const kern *k);
/* The longest serial loop of a work-item of that kernel for n (the report's measure of how much
 * a kernel leaves to one lane; emit_opencl_kernels.c). */
int64_t tether__ocl_legacy_serial(const ocl *e, const tether_ir_node *n);

/* v = act(v) for the node's fused activation (emit_opencl_kernels.c), for emit_opencl_gpu.c. */
void tether__ocl_emit_act(ocl *e, const tether_ir_attrs *a, const char *v);

/* The GPU kernels (emit_opencl_gpu.c): whether node n gets one (1, p filled: launch sizes, the
 * longest serial loop per work-item and a description in p->why) or keeps its kernel from
 * emit_opencl_kernels.c (0, the reason in p->why); ns is the node's tuned schedule or NULL. */
enum {
    TETHER__OCL_GPU_NONE,
    TETHER__OCL_GPU_GEMV,
    TETHER__OCL_GPU_CONV,
    TETHER__OCL_GPU_DW,
    TETHER__OCL_GPU_ROWS,         /* emit_opencl_rows.c */
    TETHER__OCL_GPU_CONV_SPLITK,  /* emit_opencl_splitk.c */
    TETHER__OCL_GPU_GEMV_SOFTMAX, /* dense with its softmax consumer fused */
    TETHER__OCL_GPU_QUANT         /* quantized operators (emit_opencl_quant.c, _qconv.c) */
};
typedef struct tether__ocl_gpu {
    int kind;
    int64_t global, local, total;
    int64_t serial;      /* iterations of the longest serial loop of a work-item */
    int64_t split, rows; /* GEMV: work-items per output, outputs per work-group */
    int64_t tm, tn, tk;  /* conv GEMM tiles */
    int vec;             /* GEMV: float4 loads; depthwise: 4 (vload4), 8 (vload8) or 0 */
    int fused_op;        /* GEMV_SOFTMAX: the softmax node's op (softmax or log_softmax) */
    int64_t npad;        /* GEMV_SOFTMAX: output slots per row (N rounded up to a power of 2) */
    char why[240];
} tether__ocl_gpu;
/* dense n whose only consumer is softmax or log_softmax node sm over its last axis: whether one
 * kernel can compute both (1, p filled: a row's N outputs in one work-group, the softmax over
 * them in local memory; the kernel writes sm's output), else 0 with the reason in p->why. */
int tether__ocl_dense_softmax_plan(const ocl *e, const tether_ir_node *n, const tether_ir_node *sm,
                                   tether__ocl_gpu *p);
/* Node idx (emit_opencl_gpu.c): when it is such a dense and `next` (the next node with a kernel)
 * its softmax, neither tuned, the softmax node's index with p planned; else -1. */
int tether__ocl_fused_softmax(const ocl *e, int idx, int next, tether__ocl_gpu *p);
int tether__ocl_gpu_plan(const ocl *e, const tether_ir_node *n, const kern *k,
                         const tether_schedule *ns, tether__ocl_gpu *p);
void tether__ocl_gpu_body(ocl *e, const tether_ir_node *n, const kern *k, const tether__ocl_gpu *p);
/* The row kernels (emit_opencl_rows.c: softmax, log_softmax, hardmax, layer_norm; one
 * work-group per row), planned and written through the two functions above. */
int tether__ocl_rows_plan(const ocl *e, const tether_ir_node *n, const tether_schedule *ns,
                          tether__ocl_gpu *p);
void tether__ocl_rows_body(ocl *e, const tether_ir_node *n, const tether__ocl_gpu *p);
/* The split-K conv (emit_opencl_splitk.c: few outputs, long reductions), tried by the conv plan
 * of emit_opencl_gpu.c before the direct kernel. */
int tether__ocl_splitk_plan(const ocl *e, const tether_ir_node *n, const kern *k,
                            const tether_schedule *ns, tether__ocl_gpu *p);
void tether__ocl_splitk_body(ocl *e, const tether_ir_node *n, const kern *k,
                             const tether__ocl_gpu *p);

/* The storage-scope pass (opencl_textures.c): fills e->tex (per tensor: its texture memory
 * object or -1), adds the texture images to e->mems and plans their placement; with
 * texture_activations off every tensor stays a buffer. The plan is checked with
 * tether_plan_validate in every build type. */
int tether__ocl_plan_textures(ocl *e);

/* Custom operators (emit_opencl_custom.c, docs/custom-ops.md): the checks of the backend's
 * contract (an OpenCL implementation per CUSTOM node; image resources between kernels that can
 * read or write them); the images of custom operators, planned per channel count by the 2D
 * planner (after tether__ocl_plan_textures); whether node idx is emitted there (a CUSTOM node, or
 * a transpose reading or writing a custom image: the permute folded into the layout change), and
 * its emission; the user sources written ahead of the kernels. */
int tether__ocl_custom_check(const tether_ir_graph *g);
int tether__ocl_custom_textures(ocl *e);
int tether__ocl_custom_owns(const ocl *e, const tether_ir_node *n);
int tether__ocl_custom_emit(ocl *e, int idx);
int tether__ocl_custom_sources(const ocl *e, tether__sbuf *src);
/* emit_opencl.c's step helpers, for emit_opencl_custom.c */
step *tether__ocl_new_step(ocl *e);
void tether__ocl_unique_kname(ocl *e, step *s, const char *base);

/* metadata.json of the artifact e describes (metadata.c); malloc'd, NULL when out of memory. */
char *tether__metadata_opencl(const ocl *e);

/* emit_opencl_kernels.c: dense's dot product of output (i, j) into acc, k from start by step. */
void tether__ocl_dense_dot(ocl *e, const tether_ir_node *n, bool vec, const char *start,
                           long long step);

/* --precision fp16 (emit_opencl_fp16.c): float -> IEEE half, round to nearest even; params.bin
 * converted to half in place (offsets halved); the kernels of src rewritten to read and write
 * the workspace and params buffers as half (vload_half/vstore_half). */
uint16_t tether__ocl_half_of(float f);
int tether__ocl_fp16_params(ocl *e);
int tether__ocl_fp16_rewrite(const ocl *e, tether__sbuf *src);

/* Whether memory object m holds half (fp16 artifacts: everything but graph inputs/outputs). */
static inline int tether__ocl_mem_half(const ocl *e, int m) {
    return e->o->fp16 && e->mems[m].kind != MEM_INPUT && e->mems[m].kind != MEM_OUTPUT &&
           e->mems[m].kind != MEM_STATUS;
}

/* ---- quantized operators (emit_opencl_quant.c, emit_opencl_qconv.c; docs/quantization.md) -- */

int tether__ocl_quant_op(tether_op op);
/* The OpenCL C type of an element type ("float", "char", "uchar", "short", "ushort", "int",
 * "uint"), NULL for others. */
const char *tether__ocl_ctype(DLDataType t);
/* A constant packed for its quantized consumers: its bytes in params.bin and the packing. */
size_t tether__ocl_quant_pack_bytes(const ocl *e, int t);
void tether__ocl_quant_pack(const ocl *e, int t, unsigned char *dst);
/* tgq_requant, tgq_div, tgq_rne, written ahead of the kernels when a quantized node exists. */
void tether__ocl_quant_helpers(const ocl *e, tether__sbuf *src);
/* The plan (always 1: every quantized node has a kernel; launch sizes, the serial loop and the
 * description in p) and the body of a quantized node's kernel. */
int tether__ocl_quant_plan(const ocl *e, const tether_ir_node *n, const kern *k,
                           const tether_schedule *ns, tether__ocl_gpu *p);
void tether__ocl_quant_body(ocl *e, const tether_ir_node *n, const kern *k,
                            const tether__ocl_gpu *p);
int tether__ocl_qconv_plan(const ocl *e, const tether_ir_node *n, const kern *k,
                           const tether_schedule *ns, tether__ocl_gpu *p);
void tether__ocl_qconv_body(ocl *e, const tether_ir_node *n, const kern *k,
                            const tether__ocl_gpu *p);
/* Shared pieces: parameter input i's element c as int ("0" when absent); the clamp of the
 * output type within min..max; the stored value of accumulator acc for channel expression c
 * (requantized, or the int32 accumulator); one work-item per output within the device's
 * work-group limit (kind TETHER__OCL_GPU_QUANT). */
void tether__ocl_qparam(const ocl *e, const tether_ir_node *n, int i, const char *c, char *out,
                        size_t cap);
void tether__ocl_qclamp(const tether_ir_node *n, DLDataType t, long long *lo, long long *hi);
void tether__ocl_qstore_expr(const ocl *e, const tether_ir_node *n, const char *acc, const char *c,
                             char *out, size_t cap);
void tether__ocl_qsize(const ocl *e, const tether_schedule *ns, int64_t total, tether__ocl_gpu *p);
/* The integer elementwise and pooling operators (emit_opencl_qelt.c: qadd, qmul, qlut, qmax_pool,
 * qavg_pool): which ops, tgq_rsh and tgq_clamp64 (written after tether__ocl_quant_helpers' when
 * a qadd or qmul exists), the plan (always 1) and the body of the kernel. */
int tether__ocl_qelt_op(tether_op op);
void tether__ocl_qelt_helpers(const ocl *e, tether__sbuf *src);
int tether__ocl_qelt_plan(const ocl *e, const tether_ir_node *n, const tether_schedule *ns,
                          tether__ocl_gpu *p);
void tether__ocl_qelt_body(ocl *e, const tether_ir_node *n);
/* Filling the device (emit_opencl_fill.c): the work-items a step launches, the device's lanes
 * (compute units x preferred work-group multiple, the defaults without a device's limits), and
 * why a step launches fewer (into buf; "" when it fills the device). gp is the GPU plan the step
 * was emitted with (its kind, split and why), or NULL (copies, custom kernels, no plan). */
int64_t tether__ocl_step_work_items(const step *s);
int64_t tether__ocl_lanes(const ocl *e);
void tether__ocl_fill_reason(const ocl *e, const step *s, const tether__ocl_gpu *gp, int gpu,
                             char *buf, size_t n);
/* Element types (emit_opencl_typed.c): whether g has a tensor other than float32 (then every
 * kernel's pointers are typed per tensor); the OpenCL C type t is stored in (NULL: none); the
 * refusal of a type the backend or the device cannot run; whether node n gets a typed kernel
 * (tether__ocl_typed_body) instead of the float32 one; the typedefs and helpers written ahead of
 * the kernels of a typed graph. */
int tether__ocl_typed_graph(const tether_ir_graph *g);
const char *tether__ocl_store_type(DLDataType t);
int tether__ocl_typed_check(const tether_ir_graph *g, const tether_opencl_options *o);
int tether__ocl_typed_owns(const tether_ir_graph *g, const tether_ir_node *n);
void tether__ocl_typed_body(ocl *e, const tether_ir_node *n);
void tether__ocl_typed_prelude(const tether_ir_graph *g, tether__sbuf *src);
/* emit_opencl_typed.c's element helpers: the type an element of t computes in; the value of
 * ptr[idx] in it (into out); `ptr[idx] = v;` with v of compute type `from` converted to t. */
const char *tether__ocl_compute_type(DLDataType t);
void tether__ocl_load(DLDataType t, const char *ptr, const char *idx, char *out, size_t n);
void tether__ocl_store(ocl *e, DLDataType from, DLDataType t, const char *ptr, const char *idx,
                       const char *v);
/* Indexing, scan and loss kernels on any element type (emit_opencl_index.c): whether node n gets
 * one (the typed kernels' dispatch asks it for the operators it does not own itself), the
 * work-items its kernel launches (one per row, per output, or 1 where the order of updates
 * matters), its body, and what it needs ahead of the kernels. */
int tether__ocl_index_owns(const tether_ir_graph *g, const tether_ir_node *n);
int64_t tether__ocl_index_items(const ocl *e, const tether_ir_node *n);
void tether__ocl_index_body(ocl *e, const tether_ir_node *n);
void tether__ocl_index_prelude(const tether_ir_graph *g, tether__sbuf *src);

/* N-D convolutions and gather-style layers (emit_opencl_layers.c: conv_nd, conv_transpose,
 * gather_nd, einsum on any element type the C path runs them on): whether node n gets one of
 * its kernels (before the typed and float32 dispatches), the work-items it launches (one per
 * output element), the longest serial loop of one, and its body. */
int tether__ocl_layers_owns(const tether_ir_graph *g, const tether_ir_node *n);

/* ---- run-time checks (emit_opencl_check.c; docs/codegen.md "Run-time errors") ------------- */

/* What node n's kernel checks at run time, as the C path's -1 (TETHER_ERR_INVALID_ARG) does
 * ("an index out of range", ...), or NULL when it checks nothing. */
const char *tether__ocl_check_what(const tether_ir_graph *g, const tether_ir_node *n);
/* Check k (0, 1, ...) of node n's kernel: what it checks, NULL past the last one; *code (when
 * not NULL) the C path's code (TETHER_ERR_INVALID_ARG, or TETHER_ERR_LIMIT for a count above a
 * bound). tether__ocl_check_what is check 0. The number of checks of n. */
const char *tether__ocl_check_entry(const tether_ir_graph *g, const tether_ir_node *n, int k,
                                    int *code);
int tether__ocl_check_count(const tether_ir_graph *g, const tether_ir_node *n);
/* The error flag's memory object and entries, when some node checks (assign_memory). */
int tether__ocl_check_plan(ocl *e);
/* The statement that reports the kernel being emitted failed (`atomic_cmpxchg(tg_err, 0, k)`:
 * the first failure of a run stays); the caller still keeps every access inside its tensor. */
void tether__ocl_fail(ocl *e);
int64_t tether__ocl_layers_items(const ocl *e, const tether_ir_node *n);
int64_t tether__ocl_layers_serial(const ocl *e, const tether_ir_node *n);
void tether__ocl_layers_body(ocl *e, const tether_ir_node *n);
/* The recurrent layers and reverse_sequence (emit_opencl_rnn.c, reached through the four above):
 * whether op is one, the work-items (a work-group per direction and batch row; reverse_sequence:
 * one per element), the longest serial loop, the body. */
int tether__ocl_rnn_op(tether_op op);
int64_t tether__ocl_rnn_items(const ocl *e, const tether_ir_node *n);
int64_t tether__ocl_rnn_serial(const ocl *e, const tether_ir_node *n);
/* A recurrent node's launch (after the step's sizes from its work-items): work-groups of exactly
 * its group size, with barriers (step->gpu 2); reverse_sequence keeps the default. */
void tether__ocl_rnn_launch(const ocl *e, const tether_ir_node *n, step *s);
void tether__ocl_rnn_body(ocl *e, const tether_ir_node *n);
/* grid_sample, max_pool_arg, max_unpool, triangular, diag_prod (emit_opencl_vision.c), the
 * same four. */
int tether__ocl_vision_op(tether_op op);
int64_t tether__ocl_vision_items(const ocl *e, const tether_ir_node *n);
int64_t tether__ocl_vision_serial(const ocl *e, const tether_ir_node *n);
void tether__ocl_vision_body(ocl *e, const tether_ir_node *n);
/* roi_align, dft, stft (emit_opencl_signal.c), the same four. */
int tether__ocl_signal_op(tether_op op);
int64_t tether__ocl_signal_items(const ocl *e, const tether_ir_node *n);
int64_t tether__ocl_signal_serial(const ocl *e, const tether_ir_node *n);
void tether__ocl_signal_body(ocl *e, const tether_ir_node *n);

/* The operators with data-dependent output sizes (emit_opencl_dynamic.c: nonzero, compress,
 * unique, nms and their extent nodes; docs/onnx.md "Data-dependent output sizes"): whether n gets
 * one of its kernels (one work-item: serial), the longest serial loop, the body, the checks of
 * its kernel (k-th: what, *code; NULL past the last), and the prelude (a correctly rounded float
 * division for nms' IoU) written ahead of the kernels when such a node exists. */
int tether__ocl_dynamic_owns(const tether_ir_graph *g, const tether_ir_node *n);
int64_t tether__ocl_dynamic_serial(const ocl *e, const tether_ir_node *n);
void tether__ocl_dynamic_body(ocl *e, const tether_ir_node *n);
const char *tether__ocl_dynamic_check(const tether_ir_node *n, int k, int *code);
void tether__ocl_dynamic_prelude(const tether_ir_graph *g, tether__sbuf *src);
/* The readers by live extents (emit_opencl_dynamic_live.c: transpose, concat, gather, slice
 * wired with TETHER__DYN_LIVE, and the extent nodes of slice and concat): whether n gets one of
 * its kernels, its work-items (one per element of the output's bound; an extent node one), the
 * longest serial loop, the body. */
int tether__ocl_live_owns(const tether_ir_graph *g, const tether_ir_node *n);
int64_t tether__ocl_live_items(const ocl *e, const tether_ir_node *n);
int64_t tether__ocl_live_serial(const ocl *e, const tether_ir_node *n);
void tether__ocl_live_body(ocl *e, const tether_ir_node *n);
/* Check k of the kernel being emitted failed (tether__ocl_fail is check 0). */
void tether__ocl_fail_entry(ocl *e, int k);

/* Operator support (emit_opencl_support.c): 0, or the error naming the first tensor of a type
 * the backend or device cannot run, else every node without a kernel. */
int tether__ocl_check_support(const tether_ir_graph *g, const tether_opencl_options *o);

#endif
