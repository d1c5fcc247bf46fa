/*
 * tether_onnx internals: the state of one import (import.c) shared with the operator converters
 * (ops.c). Not installed.
 *
 * Values are ONNX value names (initializers, graph inputs, node outputs). Each may have an IR
 * tensor (created on first use as a run-time operand), a host constant (initializers, Constant
 * nodes, bound inputs, shape computations folded at import time), or both.
 */
#ifndef TETHER_ONNX_IMPORT_H
#define TETHER_ONNX_IMPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "internal.h"
#include "tether/custom_ops.h"

/* A tensor known on the host during import: float32 or int64 elements, C order. */
typedef struct hconst {
    bool is_int; /* int64 elements, else float32 */
    int ndim;
    int64_t shape[TETHER_IR_MAX_NDIM];
    size_t count;
    void *data;                /* float * or int64_t * (count elements; never NULL) */
    DLDataType dt;             /* the ONNX element type it was read as (int8, bool, float64...;
                                  computed ones int64 or float32); its IR constant is made in
                                  that type (tonnx_ensure_tensor) */
    struct hconst *next_owned; /* the import's list of constants to free */
} hconst;

typedef struct value {
    const char *name; /* ONNX name, owned by the decoded model */
    int producer;     /* ONNX node index, -1 */
    int input;        /* position among the graph inputs that are not initializers, -1 */
    int tensor;       /* IR tensor, -1 until created */
    hconst *k;        /* host value, NULL */
    bool is_const;    /* constness analysis: known at import time */
    bool needed;      /* some operator needs it as a constant */
} value;

typedef struct timport {
    const char *source; /* file name for messages */
    char dir[1024];     /* its directory (external data) */
    Onnx__ModelProto *m;
    Onnx__GraphProto *gp;
    int opset;
    const tether_model_load_options *o;
    tether_ir_graph *g;
    value *v;
    int nv, cap;
    int *slots; /* open-addressing hash of value names -> index in v */
    int nslots;
    const Onnx__ValueInfoProto **input_info; /* per real graph input */
    int ninputs;
    int *input_value; /* per real graph input: value index */
    bool *bound;      /* per real graph input: bound to a given value */
    hconst *owned;
    char **node_names; /* per ONNX node: its unique IR node name (malloc'd) */
    int uniq;
    int cur;           /* ONNX node being converted, -1 */
    tonnx_alloc alloc; /* protobuf-c's memory for m (a budget from the file's size) */
    /* host constants: bytes held in all, and the most they may hold (TONNX_HOST_BUDGET) */
    size_t host_bytes, host_limit;
    /* a subgraph converted inline (control.c): the prefix of its IR names ("" at the top),
     * how deep it is nested */
    const char *prefix;
    int depth;
    int inlined;    /* subgraph nodes converted inline so far (bounded, control.c) */
    int loop_iter1; /* the enclosing run-time Loop's iteration tensor + 1, 0 none (control_loop.c)
                     */
} timport;

/* What the host constants computed at import time (ConstantOfShape, broadcasting shape
 * arithmetic, Gather, reshaped copies, ...) may hold in all: 8 MiB + 32 x the model's bytes.
 * Values read from bytes that are present (initializers, Constant tensors, external data, the
 * values the caller binds) raise the limit by their own size (tonnx_host_allow), so a real
 * model stays far below it, while a few bytes asking for a ConstantOfShape of gigabytes are an
 * error naming the node. */
#define TONNX_HOST_BUDGET(model_len) (((size_t)8 << 20) + (size_t)32 * (model_len))

/* ---- import.c services for the converters ---- */

const char *tonnx_node_name(const timport *c, int node);
int tonnx_fail(timport *c, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int tonnx_find(const timport *c, const char *name); /* value index or -1 */
hconst *tonnx_hconst_new(timport *c, bool is_int, int ndim, const int64_t *shape);
/* Raises the host constants' limit by count elements read from bytes that are present. */
void tonnx_host_allow(timport *c, size_t count, bool is_int);
/* IR tensor of input i of the current node as a float run-time operand (creates constants and
 * graph inputs on first use); TETHER_ERR_INVALID_ARG when absent and required. *t = -1 when
 * absent and optional. */
int tonnx_in_tensor(timport *c, int i, bool required, int *t);
/* Host constant of input i of the current node; NULL (with 0) when absent and optional. */
int tonnx_in_const(timport *c, int i, bool required, hconst **k);
/* IR tensor for output i of the current node (named after the ONNX value). */
int tonnx_out_tensor(timport *c, int i, int *t);
/* A fresh intermediate tensor named "<node>/<suffix>". */
int tonnx_temp_tensor(timport *c, const char *suffix, int *t);
/* A float constant tensor of the given shape and values. */
int tonnx_const_tensor(timport *c, const char *suffix, int ndim, const int64_t *shape,
                       const float *vals, int *t);
/* Adds an IR node for the current ONNX node (name suffixed when not NULL) and shapes it. */
int tonnx_emit(timport *c, const char *suffix, tether_op op, const int *in, int nin, int out,
               const tether_ir_attrs *a);
/* True when output i of the current node exists and is used (by a node or as graph output). */
bool tonnx_output_used(const timport *c, int node, int i);

/* Attributes of the current node. Absent -> default; wrong type -> error naming it. */
const Onnx__AttributeProto *tonnx_attr(const Onnx__NodeProto *n, const char *name);
int tonnx_attr_int(timport *c, const char *name, int64_t def, int64_t *out);
int tonnx_attr_float(timport *c, const char *name, float def, float *out);
/* count = -1 when absent */
int tonnx_attr_ints(timport *c, const char *name, int64_t *out, int max, int *count);
int tonnx_attr_string(timport *c, const char *name, const char *def, char *out, size_t n);

/* ---- structure.c: the importer's structural steps, run in this order by import.c ---- */

int tonnx_name_nodes(timport *c);
int tonnx_collect_values(timport *c);
int tonnx_check_arity(timport *c);
int tonnx_sort_nodes(timport *c, int *order);
int tonnx_bind_inputs(timport *c, const int *order);
void tonnx_propagate_constness(timport *c, const int *order);
int tonnx_support_scan(timport *c);
/* A value defined before collect_values runs (a subgraph's formal input or an outer-scope value
 * it reads, control.c): its IR tensor and host constant. */
int tonnx_seed_value(timport *c, const char *name, int tensor, hconst *k);
/* import.c: converts the nodes in order (the last step before the graph outputs). */
int tonnx_convert_nodes(timport *c, const int *order);
/* Index into o's input values of graph input k named name; -1 when not given. */
int tonnx_input_value_index(const tether_model_load_options *o, int k, const char *name);

/* ---- ops.c ---- */

typedef struct op_def op_def;
typedef int (*tonnx_convert_fn)(timport *c, const Onnx__NodeProto *n);
/* Returns NULL when the node's attributes are supported, else the reason (in buf). */
typedef const char *(*tonnx_check_fn)(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                                      size_t size);

struct op_def {
    const char *op_type;
    int since, until;     /* opsets handled */
    const char *maps_to;  /* documentation */
    const char *attrs;    /* allowed attribute names, comma-separated */
    bool host;            /* evaluated on the host when all inputs are constant */
    bool host_only;       /* only on constant inputs (shape computations) */
    tonnx_convert_fn fn;  /* IR conversion (NULL for host-only ops) */
    tonnx_check_fn check; /* attribute/opset checks for the support scan (may be NULL) */
};

const op_def *tonnx_op_find(const char *domain, const char *op_type);
/* How many inputs and outputs an operator takes at an opset (the ONNX schema of that version):
 * optional ones count in the maximum only; in_max -1 = variadic. */
typedef struct tonnx_arity {
    int in_min, in_max, out_min, out_max;
    bool by_opset; /* the counts differ between the opsets the importer handles */
} tonnx_arity;
/* TETHER_ERR_NOT_FOUND when the operator has no entry (the caller fails closed). */
int tonnx_op_arity(const op_def *d, int opset, tonnx_arity *out);
/* Bit i set: input i must be a constant at this opset. */
unsigned tonnx_const_inputs(const op_def *d, int opset);
/* services.c, for import.c: a host constant from tensor bytes that are present (an initializer, a
 * bound value; float32/64 and integer types, what names it in errors); the IR tensor of value vi,
 * made on first use (role names it in errors); the current error prefixed with the file name. */
int tonnx_hconst_from(timport *c, DLDataType dt, int ndim, const int64_t *shape, const void *data,
                      size_t nbytes, const char *what, hconst **out);
int tonnx_ensure_tensor(timport *c, int vi, const char *role);
int tonnx_wrap(timport *c, int rc);

/* The converters of the operator table (convert.c): add the IR node(s) for node n. */
int tonnx_cv_alias(timport *c, const Onnx__NodeProto *n);
/* convert_dynamic.c: bounded data-dependent output sizes */
int tonnx_cv_nonzero(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_compress(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_unique(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_nms(timport *c, const Onnx__NodeProto *n);
/* convert_text.c: TfIdfVectorizer */
int tonnx_cv_tfidf(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_batch_norm(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_binary(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_cast(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_variadic(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_clip(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_concat(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_conv(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_flatten(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_gemm(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_global_pool(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_layer_norm(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_matmul(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_pad(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_pool(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_prelu(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_reduce(timport *c, const Onnx__NodeProto *n);
/* convert_layers.c: windows of 1 to 3 dimensions, the normalisation and layout layers. */
int tonnx_cv_conv_transpose(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_lp_pool(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_global_lp_pool(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_instance_norm(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_mvn(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_lrn(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_depth_space(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_reshape(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_resize(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_softmax(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_squeeze(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_transpose(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_unary(timport *c, const Onnx__NodeProto *n);
/* convert_data.c: indexing, data-dependent and shape operators (the IR's DATA family). */
int tonnx_cv_gather(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_scatter(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_topk(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_arg(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_cumsum(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_trilu(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_onehot(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_tile(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_slice(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_split(timport *c, const Onnx__NodeProto *n);
/* convert_slice_rt.c: Slice with starts/ends computed at run time and ends - starts constant, as
 * gathers; nax -1 when axes are absent (then starts' length). */
int tonnx_slice_runtime(timport *c, const Onnx__NodeProto *n, int x, const int64_t *axes, int nax,
                        const int64_t *steps);
int tonnx_cv_einsum(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_mean(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_castlike(timport *c, const Onnx__NodeProto *n);
/* Operators whose value is the input's shape alone (Shape, Size, EyeLike): host-evaluated whatever
 * the input is. */
static inline bool tonnx_shape_only(const char *op_type) {
    return !strcmp(op_type, "Shape") || !strcmp(op_type, "Size") || !strcmp(op_type, "EyeLike");
}
/* convert_math.c: unary math and activations, losses, Pad modes, Dropout (issue 27, wt27b) */
int tonnx_cv_math(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_loss(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_pow(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_clip_typed(timport *c, const Onnx__NodeProto *n);
/* control.c: If, Loop and Scan, their subgraphs converted inline (If: the taken branch when the
 * condition is known at import time, else both and a where per output; Loop and Scan
 * unrolled). */
int tonnx_cv_if(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_loop(timport *c, const Onnx__NodeProto *n);
/* control.c's pieces for control_loop.c: a value handed into or out of a subgraph (its IR
 * tensor, -1 none yet, and host constant), a subgraph converted inline, the IR tensor of a
 * binding, a node input's binding, a new IR node into a fresh tensor, a node output's binding,
 * the int64 scalar host constant v. */
typedef struct bindv {
    int tensor;
    hconst *k;
} bindv;
int tonnx_inline_graph(timport *p, const Onnx__GraphProto *sg, const char *prefix,
                       const bindv *formals, int nformals, bindv *outs, int nouts);
int tonnx_tensor_of(timport *c, bindv *b, const char *suffix);
bindv tonnx_input_bind(timport *c, const Onnx__NodeProto *n, int i, int *rc);
int tonnx_emit_op(timport *c, const char *what, tether_op op, const int *in, int nin,
                  const tether_ir_attrs *a, bindv *out);
void tonnx_set_output(timport *c, const Onnx__NodeProto *n, int i, bindv b);
hconst *tonnx_k_int(timport *c, int64_t v);
/* Undoes an unrolling begun at the graph's ntensors/nnodes (control_loop.c): the IR tensors and
 * nodes made since are freed, and c's values bound to such tensors unbound. */
void tonnx_loop_rollback(timport *c, int ntensors, int nnodes);
/* A Loop whose trip count or condition is known only at run time (control_loop.c); bound, the
 * rows of its scan outputs (the constant trip count), -1 when there is none (then the trip
 * count's value-range bound, tonnx_loop_trip_bound, or the load options' loop_max bounds them;
 * with neither, scan outputs are refused). */
int tonnx_loop_region(timport *c, const Onnx__NodeProto *n, const Onnx__GraphProto *body,
                      int nstate, int nscan, int64_t bound);
/* control_bound.c: an upper bound (>= 1) of the values of IR tensor m, the trip count of a
 * run-time Loop, from a value-range analysis of the IR made so far; -1 when there is none or it
 * is above TONNX_LOOP_BOUND_MAX. */
#define TONNX_LOOP_BOUND_MAX 65536
int64_t tonnx_loop_trip_bound(timport *c, int m);
int tonnx_cv_scan(timport *c, const Onnx__NodeProto *n);
/* convert_rnn.c: RNN, GRU, LSTM (the IR's recurrent nodes) and ReverseSequence. */
int tonnx_cv_recurrent(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_reverse_sequence(timport *c, const Onnx__NodeProto *n);
/* services.c: an IR constant tensor holding host constant k ("<node>/<suffix>"). */
int tonnx_hconst_tensor(timport *c, const char *suffix, const hconst *k, int *t);

/* convert_layers.c, for convert_quant.c: a reshape of x into out (-1: a new tensor, *res); the
 * conv2d window of the current Conv-like node (x, w its input and weights; 1-D made 2-D by
 * reshapes into *x2, *w2; *nsp the node's spatial rank); a pool of op with the current node's
 * window attributes of x into out. */
int tonnx_reshape_into(timport *c, const char *suffix, int x, int ndim, const int64_t *shape,
                       int out, int *res);
int tonnx_conv_window2d(timport *c, int x, int w, tether_ir_attrs *a, int *x2, int *w2, int *nsp);
int tonnx_pool_into(timport *c, tether_op op, int x, int out);
/* convert_layers.c, for convert_vision.c: the current pool node's window of x as the IR's 2-D
 * attributes (kernel, strides, dilations, pads, ceil_mode; a 1-D window as [1, L]); *nsp its
 * spatial rank (3: nothing set but ceil_mode). */
int tonnx_pool_window_2d(timport *c, int x, tether_ir_attrs *a, int *nsp);
/* convert_vision.c (issue 27, wt27f): GridSample, RoiAlign, MaxPool (the Indices output and
 * integer inputs; else tonnx_cv_pool), MaxUnpool, Det, DFT, STFT. */
int tonnx_cv_grid_sample(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_roi_align(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_max_pool(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_max_unpool(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_det(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_dft(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_stft(timport *c, const Onnx__NodeProto *n);
/* convert_signal.c (issue 27, wt27f): the operators whose whole output is known at import time
 * (EyeLike from its input's shape; HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix
 * from constant inputs): *done set when n is one of them (its output a host constant). */
int tonnx_host_signal(timport *c, const Onnx__NodeProto *n, bool *done);
/* convert_quant.c: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv,
 * QLinearMatMul, ConvInteger, MatMulInteger and the com.microsoft quantized operators. */
int tonnx_cv_quantize(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_dequantize(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_dyn_quantize(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_qlinear_conv(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_qlinear_matmul(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_conv_integer(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_matmul_integer(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_qgemm(timport *c, const Onnx__NodeProto *n);
int tonnx_cv_qlinear_float(timport *c, const Onnx__NodeProto *n);
const op_def *tonnx_ms_op_find(const char *op_type);
int tonnx_ms_arity(const op_def *d, tonnx_arity *out);
unsigned tonnx_quant_const_inputs(const char *op_type);

/* custom.c: nodes of the --custom-ops registry's domains (tether/custom_ops.h). Between begin
 * and end (one import, this thread) tonnx_op_find answers for the registry's operators with an
 * op_def whose converter adds the CUSTOM node and the NCHW <-> NHWC permutes the contract asks
 * for; tonnx_custom_arity gives its counts (TETHER_ERR_NOT_FOUND for any other op_def);
 * tonnx_custom_unknown says why a node of another domain is not imported (the registry's
 * operators listed). */
int tonnx_custom_begin(const tether_custom_registry *r);
void tonnx_custom_end(void);
const op_def *tonnx_custom_find(const char *domain, const char *op_type);
int tonnx_custom_arity(const op_def *d, tonnx_arity *out);
void tonnx_custom_unknown(const char *domain, const char *op_type, char *buf, size_t n);

/* Evaluates the current node on host constants (d->host, every present input constant;
 * host_eval.c). */
int tonnx_host_eval(timport *c, const Onnx__NodeProto *n, const op_def *d);
/* Integer list from a constant (int64 elements, rank <= 1, at most max): what names it in the
 * error. */
int tonnx_const_ints(timport *c, const hconst *k, const char *what, int64_t *out, int max,
                     int *count);

/* A protobuf string that may be NULL, as "" */
static inline const char *S(const char *s) {
    return s ? s : "";
}

/* How many inputs a node lists, and whether input i is present (listed and named). */
static inline int in_count(const Onnx__NodeProto *n) {
    return (int)n->n_input;
}

static inline bool has_input(const Onnx__NodeProto *n, int i) {
    return i < (int)n->n_input && S(n->input[i])[0];
}

/* convert_train.c: the ai.onnx.preview.training operators (Adagrad, Adam, Momentum); NULL for
 * another domain or operator. */
const op_def *tonnx_train_op_find(const char *domain, const char *op_type);
int tonnx_train_arity(const op_def *d, tonnx_arity *out);

/* convert_misc.c: Pad's edge/reflect/wrap modes (x padded into y), Dropout's mask output,
 * BatchNormalization with training_mode 1. */
int tonnx_pad_mode(timport *c, int x, int y, const int64_t *pads, int cnt, const char *mode);
int tonnx_dropout_mask(timport *c, const Onnx__NodeProto *n);
int tonnx_batch_norm_training(timport *c, const Onnx__NodeProto *n);

#endif /* TETHER_ONNX_IMPORT_H */
