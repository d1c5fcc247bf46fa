/*
 * tether compiler: the in-memory graph IR every front end (JSON models, ONNX) builds and every
 * pass, the reference interpreter and the C emitters read.
 *
 * A graph owns tensors (name, dtype, shape, layout, optional constant data) and nodes (operator
 * kind, input/output tensor indices, typed attributes). Tensors and nodes are referred to by
 * index; indices are stable until a pass compacts the graph (tether_ir_compact), which only the
 * pass pipeline calls. Graph inputs and outputs are lists of tensor indices.
 *
 * Building: tether_ir_init, then tether_ir_add_tensor / tether_ir_add_constant / tether_ir_add_node
 * / tether_ir_add_input / tether_ir_add_output, then tether_ir_infer (validation plus shape and
 * dtype inference; a tensor added with ndim = TETHER_IR_SHAPE_UNKNOWN gets its shape here).
 * Errors are int statuses (0 ok, negative tether_status) with the message in tether_last_error()
 * naming the node and the problem. Extents may be 0 (empty tensors): they flow only into nodes
 * whose output is empty too, and those nodes compute nothing.
 *
 * Ownership: the graph owns copies of every name, shape and constant buffer passed in; callers may
 * free theirs right after the call. tether_ir_close releases everything. Not thread-safe per
 * graph.
 */
#ifndef TETHER_IR_H
#define TETHER_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TETHER_IR_MAX_NDIM    8
#define TETHER_IR_MAX_INPUTS  32 /* per node (concat is the only variadic operator) */
#define TETHER_IR_MAX_OUTPUTS 4
/* ndim of a tensor whose shape is left to tether_ir_infer. */
#define TETHER_IR_SHAPE_UNKNOWN (-1)

/* Operators: TETHER_OP_CONV2D ("conv2d"), TETHER_OP_DENSE, TETHER_OP_MATMUL, the
 * elementwise TETHER_OP_ADD ... TETHER_OP_ABS, TETHER_OP_SOFTMAX, pools, reshape-likes,
 * TETHER_OP_TRANSPOSE, TETHER_OP_CONCAT, TETHER_OP_PAD, norms, TETHER_OP_REDUCE_MEAN,
 * TETHER_OP_RESIZE_NEAREST, TETHER_OP_ERF (elementwise, appended), then the typed operators
 * (TETHER_OP_CAST, comparisons, logic, shifts, mod, max/min, sign, isnan/isinf, where), then
 * TETHER_OP_CONV_ND, TETHER_OP_CONV_TRANSPOSE, the other reductions TETHER_OP_REDUCE_SUM ...
 * _SUM_SQUARE and TETHER_OP_HARDMAX (the two branches' rows in the order merged). Tensors
 * have any ONNX element type (bool, int8..int64, uint8..uint64, float16, bfloat16, float32,
 * float64); each operator's typing rule is a column of the table. The enum is generated from
 * the compiler's operator table, compiler/src/ir/ops.def (one row per operator: its JSON name,
 * kind, input counts, attributes, elementwise formula and defaults); see
 * docs/adding-an-operator.md. */
#if defined(__has_include)
#if __has_include("../../src/ir/ops.def")
#include "../../src/ir/ops.def" /* the source tree */
#else
#include "tether/ops.def" /* an installation (cmake --install puts the table beside this file) */
#endif
#else
#include "../../src/ir/ops.def"
#endif

typedef enum tether_op {
#define TETHER_OP_ENUM_(id, ...) TETHER_OP_##id,
    TETHER_OP_LIST(TETHER_OP_ENUM_)
#undef TETHER_OP_ENUM_
} tether_op;

/* How many operators there are: one past the last tether_op (an int). Not an enumerator, so a
 * switch on tether_op names only real operators (a pass marks a dead node with
 * op = TETHER_OP_COUNT_). */
#define TETHER_OP_ONE_(id, ...) +1
#define TETHER_OP_COUNT_        ((int)(0 TETHER_OP_LIST(TETHER_OP_ONE_)))

/* Elementwise activation fused into a producer's epilogue (set by the fusion pass, or by a front
 * end that already knows it). */
typedef enum tether_act {
    TETHER_ACT_NONE = 0,
    TETHER_ACT_RELU,       /* max(x, 0) */
    TETHER_ACT_CLIP,       /* min(max(x, act_min), act_max) */
    TETHER_ACT_LEAKY_RELU, /* x < 0 ? act_alpha * x : x */
    TETHER_ACT_SIGMOID,
    TETHER_ACT_TANH,
    TETHER_ACT_HARD_SWISH,
} tether_act;
/* One past the last tether_act (an int, not an enumerator: switches name only real ones). */
#define TETHER_ACT_COUNT_ ((int)TETHER_ACT_HARD_SWISH + 1)

/* How a tensor's dimensions are to be read. Informative for the emitters; every tensor is dense
 * row-major whatever its layout. */
typedef enum tether_layout {
    TETHER_LAYOUT_ANY = 0, /* plain row-major, no named dimensions */
    TETHER_LAYOUT_NCHW,    /* activations of conv/pool */
    TETHER_LAYOUT_OIHW,    /* conv weights */
} tether_layout;

/*
 * Typed attributes of a node. One struct for every operator: tether_ir_attrs_init(op, &a) sets
 * the operator's defaults (strides 1, dilations 1, groups 1, alpha 1 for dense, axis -1 for
 * softmax, ...), then a front end overwrites what the model states. Fields an operator does not
 * use are ignored.
 */
typedef struct tether_ir_attrs {
    /* conv2d / pools */
    int64_t kernel[2];      /* pools: kh, kw (conv takes them from the weights) */
    int64_t strides[2];     /* sh, sw */
    int64_t pads[4];        /* top, left, bottom, right */
    int64_t dilations[2];   /* dh, dw */
    int64_t groups;         /* conv2d */
    bool ceil_mode;         /* pools */
    bool count_include_pad; /* avg_pool */
    /* dense */
    bool trans_a, trans_b;
    /* scalars: dense alpha/beta, leaky_relu alpha, hard_sigmoid alpha/beta, clip min/max,
     * batch/layer norm epsilon, pad value */
    float alpha, beta;
    float min, max;
    float epsilon;
    float value;
    /* axis: softmax, log_softmax, concat, flatten, layer_norm (negative counts from the end) */
    int64_t axis;
    /* axes: squeeze, unsqueeze, reduce_mean; perm: transpose; shape: reshape; pads: pad */
    int64_t ints[2 * TETHER_IR_MAX_NDIM];
    int nints;         /* how many of ints[] are set (0 = attribute absent) */
    bool keepdims;     /* reduce_mean (default true) */
    bool allowzero;    /* reshape: a 0 in shape is an extent of 0, not "copy the input's" */
    int64_t scales[2]; /* resize_nearest: integer H and W factors */
    DLDataType to;     /* cast: the output's element type (default float32) */
    /* conv_nd / conv_transpose: the window over the nwin (1 to 3) spatial dimensions, set
     * together (nwin 0 = defaults for the input's rank: strides and dilations 1, pads 0). kernel
     * comes from the weights (when given it must agree). wpads: begin..., end...; an end pad of
     * conv_transpose may be negative (ONNX output_padding: the output grows by it). */
    int nwin;
    int64_t wkernel[3], wstrides[3], wdilations[3], wpads[6];
    /* the DATA operators (gather ... einsum, ops.def): k (topk's count, trilu's diagonal,
     * one_hot's depth), mode (scatter's reduction, topk/cumsum/trilu/arg flags), steps (slice:
     * per dimension, with its bounds in ints) */
    int64_t k, mode;
    int64_t steps[TETHER_IR_MAX_NDIM];
    /* epilogue (fusion): activation after the op; with has_residual the node's last input is
     * added to the result before the activation (shape equal to the output). */
    tether_act act;
    float act_alpha, act_min, act_max;
    bool has_residual;
} tether_ir_attrs;

typedef enum tether_tensor_kind {
    TETHER_TENSOR_INTERMEDIATE = 0, /* produced by a node */
    TETHER_TENSOR_INPUT,            /* a graph input: caller memory */
    TETHER_TENSOR_CONSTANT,         /* weights: data below */
} tether_tensor_kind;

typedef struct tether_ir_tensor {
    char *name;
    DLDataType dtype;
    int ndim; /* TETHER_IR_SHAPE_UNKNOWN until inferred */
    int64_t shape[TETHER_IR_MAX_NDIM];
    tether_layout layout;
    tether_tensor_kind kind;
    void *data;    /* constants: owned copy of the values (nbytes), else NULL */
    size_t nbytes; /* constants: bytes of data */
    int producer;  /* node index that writes it, -1 for inputs/constants (set by infer) */
    int alias_of;  /* reshape-like outputs: the tensor whose storage it shares, else -1 */
    /* data-dependent output sizes (set by infer from the producer: nonzero, compress, unique,
     * nms): 0 static; d + 1 when dimension d's extent is known at run time only (shape[d] is its
     * bound, what the planner sizes; the data is dense for the actual shape, at the start of the
     * buffer); -1 for an extent tensor (int64 [1]: the actual extent of a dynamic tensor) */
    int dyn_dim;
} tether_ir_tensor;

typedef struct tether_ir_node {
    char *name;
    tether_op op;
    int ninputs;
    int inputs[TETHER_IR_MAX_INPUTS]; /* tensor indices; -1 = optional input absent */
    int noutputs;
    int outputs[TETHER_IR_MAX_OUTPUTS];
    tether_ir_attrs attrs;
} tether_ir_node;

typedef struct tether_ir_graph {
    char *name;
    tether_ir_tensor *tensors;
    int ntensors;
    tether_ir_node *nodes;
    int nnodes;
    int *inputs; /* graph inputs, tensor indices, in signature order */
    int ninputs;
    int *outputs; /* graph outputs */
    int noutputs;
    int tensors_cap_, nodes_cap_, inputs_cap_, outputs_cap_; /* private */
    /* the custom-operator registry its CUSTOM nodes index (tether/custom_ops.h; borrowed: it
     * outlives the graph), NULL when the model has none */
    const struct tether_custom_registry *custom;
} tether_ir_graph;

/* Operator names ("conv2d") and their parse; NULL / TETHER_ERR_NOT_FOUND when unknown. */
const char *tether_op_name(tether_op op);
int tether_op_parse(const char *name, tether_op *out);
const char *tether_act_name(tether_act act);

/* The defaults of op's attributes. */
void tether_ir_attrs_init(tether_op op, tether_ir_attrs *attrs);

int tether_ir_init(tether_ir_graph *g, const char *name);
void tether_ir_close(tether_ir_graph *g);

/* Adds a non-constant tensor. ndim = TETHER_IR_SHAPE_UNKNOWN leaves the shape to inference.
 * Names must be unique (TETHER_ERR_INVALID_ARG naming the duplicate). */
int tether_ir_add_tensor(tether_ir_graph *g, const char *name, DLDataType dtype, int ndim,
                         const int64_t *shape, int *index_out);

/* Adds a constant; data (nbytes = elements * dtype bytes, checked) is copied. */
int tether_ir_add_constant(tether_ir_graph *g, const char *name, DLDataType dtype, int ndim,
                           const int64_t *shape, const void *data, size_t nbytes, int *index_out);

/* Adds a node; inputs/outputs are tensor indices (-1 for an absent optional input). attrs NULL =
 * the operator's defaults. */
int tether_ir_add_node(tether_ir_graph *g, const char *name, tether_op op, const int *inputs,
                       int ninputs, const int *outputs, int noutputs, const tether_ir_attrs *attrs,
                       int *index_out);

/* Marks a tensor as graph input (its kind becomes TETHER_TENSOR_INPUT) / output. */
int tether_ir_add_input(tether_ir_graph *g, int tensor);
int tether_ir_add_output(tether_ir_graph *g, int tensor);

/* For every graph output whose extent is data-dependent (tether_ir_tensor.dyn_dim > 0; its
 * producer is nonzero, compress, unique or nms), adds a node computing that extent (int64 [1],
 * named "<output>_extent") and appends it to the graph outputs, in the order of the dynamic
 * outputs: the caller reads output i's actual extent there (docs/abi.md, "Data-dependent output
 * sizes"). Front ends call it after adding their outputs; tether_ir_infer refuses a graph whose
 * dynamic outputs lack them. Idempotent. */
int tether_ir_add_extent_outputs(tether_ir_graph *g);
/* Graph output i's extent output (an index into g->outputs), or -1 when output i is static;
 * on an inferred graph. */
int tether_ir_extent_output(const tether_ir_graph *g, int i);

/* Index of the tensor named `name`, or -1. */
int tether_ir_find_tensor(const tether_ir_graph *g, const char *name);

/* Validates the graph and infers every shape and dtype: each tensor written once, no cycles
 * (nodes are re-ordered topologically when needed), arities, attribute ranges, element types
 * (each operator's typing rule; every node output's element type is set from it, replacing what
 * the front end gave), shapes compatible. A tensor whose shape was given must equal the inferred
 * one. Sets producer and alias_of. Messages name the node and the problem: "node 'conv1' (conv2d):
 * input channels 3 differ from weight channels 4 x groups 1". */
int tether_ir_infer(tether_ir_graph *g);

/* Infers one node as tether_ir_infer would (arity, attribute ranges, shape rule, element limit)
 * and sets its output's shape, for front ends that need shapes while they build the graph (nodes
 * added in execution order, inputs already shaped). tether_ir_infer must still run on the whole
 * graph afterwards. */
int tether_ir_infer_node(tether_ir_graph *g, int node);

/* Elements of a tensor (1 for a scalar); its bytes. */
size_t tether_ir_tensor_elements(const tether_ir_tensor *t);
size_t tether_ir_tensor_bytes(const tether_ir_tensor *t);

/* Floating-point operations of one node of an inferred graph, and of the whole graph: a
 * multiply-add counts 2, other arithmetic 1 per element; data movement (reshape, transpose,
 * concat, pad, resize) 0. Saturates at UINT64_MAX. For reports, GFLOP/s and work bounds. */
uint64_t tether_ir_node_flops(const tether_ir_graph *g, const tether_ir_node *n);
uint64_t tether_ir_graph_flops(const tether_ir_graph *g);

/* Human-readable dump (tether compile --dump-ir): one line per tensor and per node. */
int tether_ir_print(FILE *out, const tether_ir_graph *g);

/* Removes nodes marked dead (op field set to TETHER_OP_COUNT_) and tensors nothing refers to,
 * renumbering indices. Used by the passes. */
int tether_ir_compact(tether_ir_graph *g);

/* Integer requantization of the quantized operators (docs/quantization.md): a real multiplier m
 * (finite, > 0, below 2^31) as mult in [2^30, 2^31) and shift, m = mult * 2^(shift - 31)
 * (TETHER_ERR_INVALID_ARG otherwise); an int32 accumulator requantized: round half to even of
 * acc * mult / 2^(31 - shift), exactly (the integers qconv and qmatmul compute everywhere). */
int tether_quant_multiplier(double m, int32_t *mult, int32_t *shift);
int64_t tether_quant_requant(int32_t acc, int32_t mult, int32_t shift);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_IR_H */
