/*
 * tether compiler: helpers shared by the compiler's own source files (not installed, not part of
 * the public API). Everything here works on an inferred graph (tether_ir_infer succeeded).
 *
 * Naming: what is declared here (and in the other private headers of compiler/src) has the
 * `tether__` prefix, two underscores, so that `tether_` is only ever the public API of
 * compiler/include/tether/ headers. The ONNX front end's internals are `tonnx_` (made local
 * symbols of its one object), the planner's `tether__plan_`.
 */
#ifndef TETHER_COMPILER_INTERNAL_H
#define TETHER_COMPILER_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tether/file.h"
#include "tether/ir.h"

/* ---- the operator table (ir/ops.def), as data ---- */

/* Operator families (the KIND column of ops.def). */
typedef enum tether__op_kind {
    TETHER__OPK_CONV,
    TETHER__OPK_DENSE,
    TETHER__OPK_MATMUL,
    TETHER__OPK_BINARY, /* elementwise, numpy broadcasting */
    TETHER__OPK_UNARY,  /* elementwise, one input */
    TETHER__OPK_PRELU,
    TETHER__OPK_SOFTMAX,
    TETHER__OPK_POOL,
    TETHER__OPK_GLOBAL_POOL,
    TETHER__OPK_ALIAS, /* reshape-like: the output renames the input's storage */
    TETHER__OPK_TRANSPOSE,
    TETHER__OPK_CONCAT,
    TETHER__OPK_PAD,
    TETHER__OPK_NORM,
    TETHER__OPK_REDUCE,
    TETHER__OPK_RESIZE,
    TETHER__OPK_WHERE,   /* select by a bool condition, numpy broadcasting of three inputs */
    TETHER__OPK_CONV_ND, /* conv_nd, conv_transpose: N-D windows (window attributes) */
    TETHER__OPK_CUSTOM,  /* a user kernel (custom/, docs/custom-ops.md) */
    TETHER__OPK_DATA,  /* indexing, data-dependent and shape operators (gather, scatter, topk, ...):
                          ir/shapes_data.c, interp/interp_data.c, codegen/emit_c_data.c */
    TETHER__OPK_LOSS,  /* nll_loss*: a gather of log-probabilities by integer targets */
    TETHER__OPK_QUANT, /* quantize, dequantize and the integer operators (ir/quant.c) */
} tether__op_kind;

/* Typing rules (the TYPES column of ops.def; what each admits is described there). */
typedef enum tether__op_types {
    TETHER__TY_F32,
    TETHER__TY_FLOAT,
    TETHER__TY_NUM,
    TETHER__TY_ANY,
    TETHER__TY_CMP,
    TETHER__TY_CMPEQ,
    TETHER__TY_LOGIC,
    TETHER__TY_BITS,
    TETHER__TY_ISFLT,
    TETHER__TY_CAST,
    TETHER__TY_WHERE,
    TETHER__TY_CUSTOM, /* the registry's declared types (custom/, docs/custom-ops.md) */
    TETHER__TY_DATA,   /* the rule of each DATA operator (tether__ir_data_dtype, shapes_data.c) */
    TETHER__TY_LOSS,   /* float32 scores and weights, integer targets */
    TETHER__TY_QUANT,  /* each quantized operator's own rule (ir/quant.c, tether__ir_quant_dtype) */
} tether__op_types;

/* TETHER__TY_INTS_<TYPES>(i, o): i when the rule admits integer or bool inputs (an elementwise
 * row then computes its IFORMULA on them), else o. Each rule has its line. */
#define TETHER__TY_INTS_F32(i, o)   o
#define TETHER__TY_INTS_FLOAT(i, o) o
#define TETHER__TY_INTS_NUM(i, o)   i
#define TETHER__TY_INTS_ANY(i, o)   i
#define TETHER__TY_INTS_CMP(i, o)   i
#define TETHER__TY_INTS_CMPEQ(i, o) i
#define TETHER__TY_INTS_LOGIC(i, o) i
#define TETHER__TY_INTS_BITS(i, o)  i
#define TETHER__TY_INTS_ISFLT(i, o) o
#define TETHER__TY_INTS_CAST(i, o)  i
#define TETHER__TY_INTS_WHERE(i, o) i
#define TETHER__TY_INTS_DATA(i, o)  i
#define TETHER__TY_INTS_LOSS(i, o)  o
#define TETHER__TY_INTS_QUANT(i, o) o

/* How an element type computes (elementwise formulas, the interpreter's loads and stores). */
typedef enum tether__dclass {
    TETHER__DC_NONE = 0, /* not a type tether stores */
    TETHER__DC_F32,      /* float32, float16, bfloat16: in float */
    TETHER__DC_F64,      /* float64: in double */
    TETHER__DC_INT,      /* int8 ... int64: exactly, signed */
    TETHER__DC_UINT,     /* uint8 ... uint64 and bool (0/1): exactly, unsigned */
} tether__dclass;

/* The class of an element type (lanes 1; bool is TETHER_BOOL, kDLUInt of 1 bit stored in a
 * byte). */
tether__dclass tether__dtype_class(DLDataType t);
/* True for float16/bfloat16/float32/float64, for a signed or unsigned integer, for bool. */
bool tether__dtype_is_float(DLDataType t);
bool tether__dtype_is_bool(DLDataType t);
/* The element type's name ("int64"), or "?" for an invalid one: a static string. */
const char *tether__dtype_str(DLDataType t);

/* Elementwise dispatch on the KIND column, in the preprocessor: TETHER__OPK_EW_<KIND>(u, b, p, o)
 * is u for a UNARY row, b for a BINARY row, p for PRELU, o for every other family. Each family
 * has its line: a family added to the KIND column without one fails to build. */
#define TETHER__OPK_EW_UNARY(u, b, p, o)       u
#define TETHER__OPK_EW_BINARY(u, b, p, o)      b
#define TETHER__OPK_EW_PRELU(u, b, p, o)       p
#define TETHER__OPK_EW_CONV(u, b, p, o)        o
#define TETHER__OPK_EW_DENSE(u, b, p, o)       o
#define TETHER__OPK_EW_MATMUL(u, b, p, o)      o
#define TETHER__OPK_EW_SOFTMAX(u, b, p, o)     o
#define TETHER__OPK_EW_POOL(u, b, p, o)        o
#define TETHER__OPK_EW_GLOBAL_POOL(u, b, p, o) o
#define TETHER__OPK_EW_ALIAS(u, b, p, o)       o
#define TETHER__OPK_EW_TRANSPOSE(u, b, p, o)   o
#define TETHER__OPK_EW_CONCAT(u, b, p, o)      o
#define TETHER__OPK_EW_PAD(u, b, p, o)         o
#define TETHER__OPK_EW_NORM(u, b, p, o)        o
#define TETHER__OPK_EW_REDUCE(u, b, p, o)      o
#define TETHER__OPK_EW_CUSTOM(u, b, p, o)      o
#define TETHER__OPK_EW_RESIZE(u, b, p, o)      o
#define TETHER__OPK_EW_WHERE(u, b, p, o)       o
#define TETHER__OPK_EW_CONV_ND(u, b, p, o)     o
#define TETHER__OPK_EW_DATA(u, b, p, o)        o

/* The same for the DATA family: TETHER__OPK_DT_<KIND>(d, o) is d for a DATA row, o otherwise. */
#define TETHER__OPK_DT_UNARY(d, o)       o
#define TETHER__OPK_DT_BINARY(d, o)      o
#define TETHER__OPK_DT_PRELU(d, o)       o
#define TETHER__OPK_DT_CONV(d, o)        o
#define TETHER__OPK_DT_DENSE(d, o)       o
#define TETHER__OPK_DT_MATMUL(d, o)      o
#define TETHER__OPK_DT_SOFTMAX(d, o)     o
#define TETHER__OPK_DT_POOL(d, o)        o
#define TETHER__OPK_DT_GLOBAL_POOL(d, o) o
#define TETHER__OPK_DT_ALIAS(d, o)       o
#define TETHER__OPK_DT_TRANSPOSE(d, o)   o
#define TETHER__OPK_DT_CONCAT(d, o)      o
#define TETHER__OPK_DT_PAD(d, o)         o
#define TETHER__OPK_DT_NORM(d, o)        o
#define TETHER__OPK_DT_REDUCE(d, o)      o
#define TETHER__OPK_DT_CUSTOM(d, o)      o
#define TETHER__OPK_DT_RESIZE(d, o)      o
#define TETHER__OPK_DT_WHERE(d, o)       o
#define TETHER__OPK_DT_CONV_ND(d, o)     o
#define TETHER__OPK_DT_DATA(d, o)        d
#define TETHER__OPK_DT_LOSS(d, o)        o
#define TETHER__OPK_DT_QUANT(d, o)       o
#define TETHER__OPK_EW_LOSS(u, b, p, o)  o
#define TETHER__OPK_EW_QUANT(u, b, p, o) o

/* The case labels of every UNARY row (TETHER__CASES_UNARY) and of every BINARY row
 * (TETHER__CASES_BINARY), for a per-operator switch: the elementwise operators are handled by one
 * group computing the row's FORMULA, so a new elementwise row needs no case anywhere, while every
 * other operator is still named by hand (-Werror=switch-enum finds a missing one). */
#define TETHER__CASE_IF_UNARY_(id, name, kind, ...)                                                \
    TETHER__OPK_EW_##kind(case TETHER_OP_##id:, , , )
#define TETHER__CASE_IF_BINARY_(id, name, kind, ...)                                               \
    TETHER__OPK_EW_##kind(, case TETHER_OP_##id:, , )
#define TETHER__CASES_UNARY  TETHER_OP_LIST(TETHER__CASE_IF_UNARY_)
#define TETHER__CASES_BINARY TETHER_OP_LIST(TETHER__CASE_IF_BINARY_)
/* The DATA rows (TETHER__CASES_DATA), for the generic switches that hand them to their own files,
 * and every other row (TETHER__CASES_NOT_DATA), for the per-operator switches of those files, so
 * that a DATA row without its shape rule, reference loops or C kernel does not build. */
#define TETHER__CASE_IF_DATA_(id, name, kind, ...)     TETHER__OPK_DT_##kind(case TETHER_OP_##id:, )
#define TETHER__CASE_IF_NOT_DATA_(id, name, kind, ...) TETHER__OPK_DT_##kind(, case TETHER_OP_##id:)
#define TETHER__CASES_DATA                             TETHER_OP_LIST(TETHER__CASE_IF_DATA_)
#define TETHER__CASES_NOT_DATA                         TETHER_OP_LIST(TETHER__CASE_IF_NOT_DATA_)

/* One row of the operator table. */
typedef struct tether__op_info {
    const char *name; /* JSON spelling */
    tether__op_kind kind;
    tether_act fused_act;       /* what the fusion pass folds the op into, TETHER_ACT_NONE: never */
    int min_inputs, max_inputs; /* residual excluded */
    const char *json_attrs;     /* attribute names, space separated; "" = none */
    bool epilogue;              /* takes a fused epilogue (activation, residual) */
    tether__op_types types;     /* the typing rule */
    bool has_iformula;          /* an elementwise row computing integers/bool (IFORMULA) */
} tether__op_info;

/* The row of op; NULL when op is not an operator (out of range, or a dead node's
 * TETHER_OP_COUNT_). */
const tether__op_info *tether__op_info_of(tether_op op);

/* ---- elementwise formulas (the FORMULA column of ir/ops.def, the vocabulary of ir/formula.def) */

#include "ir/formula.def"

/* The libm functions generated C may call (the M rows of formula.def, in their order). */
typedef enum tether__math {
    TETHER__MATH_NONE = -1,
#define TETHER__MATH_ENUM_(id, c, cl, arity, dbl) TETHER__MATH_##id,
    TETHER__MATH_LIST(TETHER__MATH_ENUM_)
#undef TETHER__MATH_ENUM_
        TETHER__MATH_COUNT
} tether__math;

/* The C name of m ("expf"); NULL when m is not one. */
const char *tether__math_name(tether__math m);

/* How many primitives formula.def lists (the P rows). */
#define TETHER__PRIM_ONE_(...) +1
#define TETHER__PRIM_COUNT     (0 TETHER__PRIM_LIST(TETHER__PRIM_ONE_))

/* The definition generated C needs for primitive k (0 .. TETHER__PRIM_COUNT-1, the P rows in
 * order): a static inline tg_ function, as C text. */
const char *tether__formula_c_helper(int k);

typedef enum tether__formula_lang {
    TETHER__FORMULA_C,        /* C99: libm float functions, the module's tg_ helpers */
    TETHER__FORMULA_OPENCL,   /* OpenCL C built-ins; also valid on float4 */
    TETHER__FORMULA_C_DOUBLE, /* C99 in double (float64): libm double functions, tgd_ helpers */
    TETHER__FORMULA_C_INT,    /* C99 IFORMULA on an integer type: the tgi_<fn>_<type> helpers */
} tether__formula_lang;

/* The C type generated code stores an element type in: float, double, int8_t ... uint64_t,
 * uint8_t for bool, uint16_t for float16 and bfloat16 (converted by the tg_f16/tg_bf16 helpers);
 * NULL for a type tether does not store. */
const char *tether__c_type(DLDataType t);

/* The float64 version of primitive k's C helper (tgd_ name, double arithmetic), appended to out;
 * helpers[TETHER__PRIM_COUNT + k] marks its use by a float64 formula. */
struct tether__sbuf;
void tether__formula_c_helper_double(int k, struct tether__sbuf *out);
/* Every integer primitive (the I rows of formula.def) for integer element type t (bool: pass
 * uint8), as C text appended to out. */
void tether__formula_c_int_helpers(DLDataType t, struct tether__sbuf *out);

/* The formula of op (a UNARY, BINARY or PRELU row) as an expression of lang for float32, with the
 * operands spelled x and y (atomic expressions: a name, a subscript; y NULL for a unary operator)
 * and the node's attributes a as literals. helpers[k] (k a P row of formula.def) and
 * math[tether__math] are set to 1 for the tg_ helpers and libm functions the C text calls (NULL:
 * not recorded).
 * pre: NULL, or (OpenCL) a buffer that receives an expression the caller assigns to x before the
 * returned one ("v = 0.2f * v + 0.5f;" then "v = v < 0.0f ? ..."), when the formula is a
 * primitive that would otherwise repeat a compound first argument; "" when none.
 * TETHER_ERR_INTERNAL when op has no formula or the text does not fit in n. */
int tether__formula_text(tether_op op, tether__formula_lang lang, const char *x, const char *y,
                         const tether_ir_attrs *a, int *helpers, int *math, char *pre, size_t npre,
                         char *out, size_t n);
/* The same for compute type t (the element type of the operator's first input; the where
 * condition aside): lang C on an integer or bool type translates the IFORMULA column
 * (TETHER__FORMULA_C_INT), on float64 the FORMULA in double (TETHER__FORMULA_C_DOUBLE; helpers
 * then needs 2 * TETHER__PRIM_COUNT entries); float32, float16 and bfloat16 compute as float32. */
int tether__formula_text_typed(tether_op op, tether__formula_lang lang, DLDataType t, const char *x,
                               const char *y, const tether_ir_attrs *a, int *helpers, int *math,
                               char *pre, size_t npre, char *out, size_t n);

/* metadata.json (codegen/metadata.c, the one writer for both backends): the C artifact's (library:
 * the built file's name, NULL with --no-build), and an OpenCL artifact's with its buffer
 * variant's metadata (bmeta) as "buffer_variant" (source, params_file: the variant's files).
 * malloc'd text; NULL when out of memory. The OpenCL emitter's own is tether__metadata_opencl
 * (codegen/emit_opencl_internal.h). */
struct tether_compile_options;
struct tether_codegen_output;
struct tether_memplan;
char *tether__metadata_c(const tether_ir_graph *g, const struct tether_compile_options *o,
                         const struct tether_codegen_output *cg, const struct tether_memplan *plan,
                         const char *library);
char *tether__metadata_with_buffer_variant(const char *meta, const char *bmeta, const char *source,
                                           const char *params_file);
/* A profiling build's metadata (codegen/profile_meta.c, docs/profile.md): meta with the "profile"
 * object appended (the profiled nodes, their kernels, shapes, schedule, work, bytes and the
 * workspace live at each); malloc'd, NULL when out of memory. */
char *tether__metadata_add_profile(const char *meta, const tether_ir_graph *g,
                                   const struct tether_memplan *plan,
                                   const struct tether_compile_options *o);

/* The OpenCL backend's storage-scope pass (codegen/emit_opencl.c) on an inferred graph after the
 * passes: extent[2t], extent[2t+1] = the RGBA texel width and height of tensor t's texture, or 0
 * when it stays a buffer (`tether plan --texture-activations` shows the same plan). */
struct tether_opencl_options;
int tether__opencl_texture_extents(const tether_ir_graph *g, const struct tether_opencl_options *o,
                                   int64_t *extent);

/* The operator whose ACT column is act: a fused activation computes that operator's formula
 * (TETHER_OP_COUNT_ for TETHER_ACT_NONE). tether__act_attrs gives it the epilogue's attributes:
 * alpha = act_alpha, min = act_min, max = act_max. */
tether_op tether__act_op(tether_act act);
void tether__act_attrs(const tether_ir_attrs *a, tether_ir_attrs *out);

/* numpy broadcasting of two shapes; TETHER_ERR_MISMATCH when incompatible. */
int tether__ir_broadcast(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out,
                         int *nout);

/* Number of inputs of a node without its residual input (when the epilogue has one). */
int tether__ir_main_inputs(const tether_ir_node *n);

/* True for reshape-like operators whose output only renames the input's storage. */
int tether__ir_is_alias_op(tether_op op);

/* True for single-input elementwise operators (relu ... abs, clip, leaky_relu, ...). */
int tether__ir_is_unary(tether_op op);
/* True for add/sub/mul/div/pow. */
int tether__ir_is_binary(tether_op op);

/* The operands and output of a matmul as kernels see them: a rank-1 A [K] becomes [1,K], a
 * rank-1 B [K] becomes [K,1], and the output gets the matching extent-1 dimensions back
 * (batch..., M, N). Same memory layout, so kernels only ever handle rank >= 2. Shallow copies:
 * names and data stay owned by the graph. */
void tether__ir_matmul_view(const tether_ir_graph *g, const tether_ir_node *n, tether_ir_tensor *a,
                            tether_ir_tensor *b, tether_ir_tensor *y);

/* Normalises a possibly negative axis for rank ndim; -1 when out of range. */
int tether__ir_norm_axis(int64_t axis, int ndim);
/* The item view of Unique and Compress over x: outer x m items x inner along attrs' axis (mode
 * bit 4), or m = every element without one (the interpreter, C and OpenCL kernels share it). */
typedef struct tether__ir_items {
    long long outer, m, inner;
} tether__ir_items;
tether__ir_items tether__ir_items_of(const tether_ir_tensor *x, const tether_ir_attrs *a);

/* Shape rule of one node (ir/shapes.c): writes the output shape into os[0..*ond) from the inputs'
 * shapes and the attributes; an error naming the node when the inputs or attributes are out of
 * what the kernels run. */
int tether__ir_infer_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond);
/* Typing rule of one node (ir/types.c): the output's element type from the inputs' and the
 * operator's TYPES column; an error naming the node, the tensor and its type otherwise. */
int tether__ir_infer_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out);
/* The same two rules for the DATA family (ir/shapes_data.c). */
int tether__ir_data_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond);
int tether__ir_data_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out);
/* Einsum labels (the ints of an einsum node, packed: one int64 per operand, then the output;
 * bits 6d..6d+5 of an entry are dimension d's label, 1..63, 0 past the rank): operand j's rank
 * and its labels (-1 when malformed). */
int tether__einsum_labels(const tether_ir_attrs *a, int j, int *labels);
/* The vision and signal rows of the DATA family (issue 27, wt27f): the DATA files hand them to
 * ir/shapes_vision.c (these two rules), interp/interp_vision.c and codegen/emit_c_vision.c. */
#define TETHER__CASES_VISION                                                                       \
    case TETHER_OP_GRID_SAMPLE:                                                                    \
    case TETHER_OP_ROI_ALIGN:                                                                      \
    case TETHER_OP_MAX_POOL_ARG:                                                                   \
    case TETHER_OP_MAX_UNPOOL:                                                                     \
    case TETHER_OP_TRIANGULAR:                                                                     \
    case TETHER_OP_DIAG_PROD:                                                                      \
    case TETHER_OP_DFT:                                                                            \
    case TETHER_OP_STFT:
/* The DATA rows that are not vision rows, for the vision files' per-operator switches. */
#define TETHER__CASES_DATA_NOT_VISION                                                              \
    case TETHER_OP_RNN:                                                                            \
    case TETHER_OP_GRU:                                                                            \
    case TETHER_OP_LSTM:                                                                           \
    case TETHER_OP_REVERSE_SEQUENCE:                                                               \
    case TETHER_OP_NONZERO:                                                                        \
    case TETHER_OP_COMPRESS:                                                                       \
    case TETHER_OP_UNIQUE:                                                                         \
    case TETHER_OP_NMS:                                                                            \
    case TETHER_OP_GATHER:                                                                         \
    case TETHER_OP_GATHER_ELEMENTS:                                                                \
    case TETHER_OP_GATHER_ND:                                                                      \
    case TETHER_OP_SCATTER_ELEMENTS:                                                               \
    case TETHER_OP_SCATTER_ND:                                                                     \
    case TETHER_OP_TOPK:                                                                           \
    case TETHER_OP_ARG_MAX:                                                                        \
    case TETHER_OP_ARG_MIN:                                                                        \
    case TETHER_OP_CUMSUM:                                                                         \
    case TETHER_OP_TRILU:                                                                          \
    case TETHER_OP_ONE_HOT:                                                                        \
    case TETHER_OP_TILE:                                                                           \
    case TETHER_OP_SLICE:                                                                          \
    case TETHER_OP_EINSUM:                                                                         \
    case TETHER_OP_TFIDF:                                                                          \
        TETHER__CASES_LOOP
/* the run-time Loop's operators (ir/shapes_loop.c, interp/interp_loop.c, codegen/emit_c_loop.c) */
#define TETHER__CASES_LOOP                                                                         \
    case TETHER_OP_LOOP_BEGIN:                                                                     \
    case TETHER_OP_LOOP_STATE:                                                                     \
    case TETHER_OP_LOOP_END:                                                                       \
    case TETHER_OP_LOOP_RESULT:                                                                    \
    case TETHER_OP_LOOP_COPY:                                                                      \
    case TETHER_OP_LOOP_SCAN:                                                                      \
    case TETHER_OP_LOOP_STACK:
bool tether__ir_is_loop_op(tether_op op);
int tether__ir_loop_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond);
int tether__ir_loop_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out);
/* The loop_end node of the loop_begin node b, -1 when none. */
int tether__ir_loop_end_of(const tether_ir_graph *g, int b);
/* Puts every node between a loop_begin and its loop_end that does not depend on the begin
 * before the begin (tether_ir_infer, after ordering). */
int tether__ir_loop_hoist(tether_ir_graph *g);
/* tfidf (TfIdfVectorizer; ir/shapes_text.c, interp/interp_text.c, codegen/emit_c_text.c): its
 * n-gram groups from the constant pool and counts (group i: the n-grams of length i + 1, count of
 * them from pool[start], numbered from id0); the number of groups, -1 when malformed. */
#define TETHER__TFIDF_MAX_GRAM 64
typedef struct tether__tfidf_group {
    int64_t start, count, id0;
} tether__tfidf_group;
int tether__tfidf_groups(const tether_ir_graph *g, const tether_ir_node *n,
                         tether__tfidf_group *grp);
int tether__ir_tfidf_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond);
int tether__ir_tfidf_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out);
int tether__interp_tfidf(const tether_ir_graph *g, const tether_ir_node *n, void **buf);
int tether__ir_vision_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond);
int tether__ir_vision_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out);
/* Quantized operators (ir/quant.c, docs/quantization.md): their shape and typing rules; the
 * requantization multiplier of real multiplier m (mult in [2^30, 2^31), m = mult * 2^(shift-31);
 * an error when m is not finite and > 0 or is 2^31 or more); an int32 accumulator requantized
 * (round half to even of acc * mult / 2^(31 - shift), exact); round half to even of v (NaN 0,
 * clamped to +-9e15); the range of a quantized type (int8..int32, uint8, uint16; 0 otherwise). */
int tether__ir_quant_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond);
int tether__ir_quant_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out);
/* The integer elementwise and pooling operators qadd, qmul, qlut, qmax_pool, qavg_pool
 * (ir/quant_elt.c): which ops they are, their rules, and round half to even of v / 2^n. */
int tether__quant_is_elt(tether_op op);
int tether__ir_qelt_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond);
int tether__ir_qelt_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out);
int64_t tether__quant_rshift_rne(int64_t v, int n);
int64_t tether__quant_round_even(double v);
int tether__quant_range(DLDataType t, int64_t *lo, int64_t *hi);
/* The nodes of a QDQ model that stayed float (a dequantize feeds them; passes/quant_pass.c): their
 * count, and their names comma-separated in buf (cut to fit n). */
int tether__quant_float_nodes(const tether_ir_graph *g, char *buf, size_t n);

/* Input i of node n, NULL when absent (optional input not given). */
const tether_ir_tensor *tether__ir_in(const tether_ir_graph *g, const tether_ir_node *n, int i);
/* Sets the error "node 'NAME' (op): MESSAGE" and returns status. */
int tether__ir_node_error(const tether_ir_node *n, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Growable text buffer used by the emitters and report writers (malloc'd, NUL-terminated). */
typedef struct tether__sbuf {
    char *data;
    size_t len, cap;
    int failed; /* set when an allocation failed; later appends are ignored */
} tether__sbuf;

void tether__sbuf_init(tether__sbuf *b);
void tether__sbuf_free(tether__sbuf *b);
void tether__sbuf_printf(tether__sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void tether__sbuf_vprintf(tether__sbuf *b, const char *fmt, va_list ap);
void tether__sbuf_puts(tether__sbuf *b, const char *s);
/* One line of generated code: depth levels of four-space indent, the text, then end ("\n", or
 * " {\n" to open a block). */
void tether__sbuf_vline(tether__sbuf *b, int depth, const char *end, const char *fmt, va_list ap);

/* A shape as text, "[1,3,224,224]" ("[]" for a scalar), cut to fit n bytes. */
void tether__shape_text(char *buf, size_t n, const int64_t *shape, int ndim);

/* True when p is a C identifier that starts with a letter, of at most max_len characters (the
 * rule for the user-chosen prefix of generated code). */
bool tether__c_identifier_ok(const char *p, size_t max_len);

/* ---- model text in generated sources (codegen/names.c) ---- */

/* Longest identifier part taken from a model name (and longest user prefix): long names
 * (TFLite's run to hundreds of characters) are cut here, before the emitters make them unique,
 * so every identifier built from one fits their buffers and stays unique. */
#define TETHER_CG_IDENT_MAX 48
/* Bytes tether__cg_ident writes at most ("t_", the name's part, "_", NUL). */
#define TETHER_CG_IDENT_BUF (TETHER_CG_IDENT_MAX + 4)

/* The identifier part for a model name: lower case [a-z0-9_], "t_" in front unless it starts
 * with a letter, at most TETHER_CG_IDENT_MAX characters of the name, and "_" behind a C keyword
 * when avoid_keywords (not needed where the part always follows a prefix). */
void tether__cg_ident(char out[TETHER_CG_IDENT_BUF], const char *name, bool avoid_keywords);

/* A model's text (model, node and tensor names) as it may appear inside a C or OpenCL C
 * comment: printable ASCII only, no comment start or end, no trigraph, at most 120 characters
 * ("..." when cut). Four rotating static buffers, so one printf may take several. */
const char *tether__cg_comment_text(const char *s);

/* A float literal that round-trips: "%.9g" with ".0" added when it would read as an integer,
 * and the f suffix. C99 spells infinities HUGE_VALF, OpenCL C INFINITY; OpenCL literals that are
 * negative come in parentheses. NaN is NAN in both. */
void tether__cg_float_literal(char *buf, size_t n, float v, bool opencl);

/* TETHER_OK when prefix is a C identifier starting with a letter of at most TETHER_CG_IDENT_MAX
 * characters, else TETHER_ERR_INVALID_ARG naming it. */
int tether__cg_check_prefix(const char *prefix);

/* Runs argv (found on PATH) with stdout and stderr appended to the file log; returns its exit
 * status, or -1 when it could not be started or did not exit normally (build/build.c). */
int tether__run_logged(char *const *argv, const char *log);

/* A process the build started (build/children.c): registered from fork until
 * tether__child_wait saw it end, so tether_build_interrupt can end it (and, with
 * tether_build_isolate, its process group). */
typedef struct tether__child {
    int pid;
    int slot;
} tether__child;
/* Starts argv (found on PATH) with stdin from /dev/null, stdout/stderr on out_fd/err_fd (-1:
 * inherited) and close_fd (-1: none) closed in the child. Fails with the error set (not started)
 * once an interrupt has begun. */
int tether__child_start(char *const *argv, int out_fd, int err_fd, int close_fd, tether__child *c);
/* Waits for the child to end and unregisters it: its wait status, or -1. */
int tether__child_wait(tether__child *c);

/* Writes a whole file through tether_file_write (a regular file is replaced atomically, a device
 * or a link written in place); TETHER_ERR_IO naming the path on failure. */
int tether__write_file(const char *path, const void *data, size_t n);
/* Files the compiler reads (models, weights, logs, firmware descriptions) are at most this big. */
#define TETHER_COMPILER_MAX_FILE ((size_t)2 << 30)
/* Reads a whole regular file (malloc'd, NUL-terminated) through tether_file_read_text: devices,
 * FIFOs and files over TETHER_COMPILER_MAX_FILE are refused with a message naming the path. */
int tether__read_file(const char *path, char **out, size_t *len);

/* Evaluates one node whose inputs are all constants into out (elements of its output, of its
 * output's element type). */
int tether__interp_eval_node(const tether_ir_graph *g, int node, void *out);

/* Indices of the nodes reading tensor t (up to max); returns the total count. */
int tether__ir_consumers(const tether_ir_graph *g, int t, int *nodes, int max);
/* True when t is a graph output. */
int tether__ir_is_graph_output(const tether_ir_graph *g, int t);

/* ---- writing an artifact directory (artifact/compile.c), for both backends ---- */

#define TETHER_ARTIFACT_MAX_FILES 16
typedef struct tether__artifact_writer {
    char paths[TETHER_ARTIFACT_MAX_FILES][1300]; /* files written or tracked, for a rollback */
    volatile int n;       /* (volatile: read by tether_build_interrupt from a signal handler) */
    volatile int pending; /* paths[n] is the file being written now */
    int made_dir;         /* this call created dir */
    int watch;            /* its slot for tether_build_interrupt, -1 = none */
    char dir[1024];
} tether__artifact_writer;

/* Starts writing into out_dir (nothing touched yet); TETHER_ERR_LIMIT when the path is long. */
int tether__artifact_init(tether__artifact_writer *w, const char *out_dir);
/* Creates the directory, or clears an earlier artifact of either backend with this prefix from it
 * (metadata first, so it is never a valid artifact mixing old and new files). */
int tether__artifact_open_dir(tether__artifact_writer *w, const char *prefix);
/* Writes dir/name and remembers it for a rollback. */
int tether__artifact_put(tether__artifact_writer *w, const char *name, const void *data, size_t n);
/* Remembers dir/name (a file another step writes) for a rollback. */
void tether__artifact_track(tether__artifact_writer *w, const char *name);
/* After a failure: removes every remembered file and the directory when this writer created it,
 * keeps the current error message and returns rc. */
int tether__artifact_rollback(tether__artifact_writer *w, int rc);
/* After success: the artifact is complete, a signal no longer removes it. */
void tether__artifact_close(tether__artifact_writer *w);
/* From open_dir to rollback/close the writer is registered for tether_build_interrupt
 * (build/children.c): the slot, or -1 when every slot is taken. */
int tether__artifact_watch(const tether__artifact_writer *w);
void tether__artifact_unwatch(int slot);

/* tether_compile_graph for backend OpenCL (artifact/compile_opencl.c): same contract (artifact
 * directory, nothing partial left on failure). */
struct tether_compile_options;
struct tether_compile_result;
int tether__compile_graph_opencl(tether_ir_graph *g, const char *out_dir,
                                 const struct tether_compile_options *o,
                                 struct tether_compile_result *res);
/* report.json of each backend (artifact/report.c): malloc'd JSON text, NULL when out of memory. */
struct tether_codegen_output;
struct tether_opencl_output;
struct tether_memplan;
char *tether__report_json_c(const tether_ir_graph *g, const struct tether_compile_options *o,
                            const struct tether_codegen_output *cg,
                            const struct tether_memplan *plan,
                            const struct tether_compile_result *res);
struct tether_opencl_options;
char *tether__report_json_opencl(const tether_ir_graph *g, const struct tether_compile_result *res,
                                 const struct tether_opencl_output *cg,
                                 const struct tether_opencl_options *oo, bool buffer_variant);
/* The options a compile really runs with (artifact/compile.c): o with what its backend and
 * target decide filled in (C: the schedule's vector width from --target/--mcpu, and with it the
 * passes' pad_conv_min_width). Idempotent. */
void tether__compile_options_resolve(const struct tether_compile_options *o,
                                     struct tether_compile_options *out);
/* The pass pipeline of every compile, and of `tether plan` (which must show the plan compile
 * makes): resolves o as above, records the node counts around the passes in res and runs the
 * passes on g. The one place the passes of a compile are chosen. */
int tether__compile_passes(tether_ir_graph *g, const struct tether_compile_options *o,
                           struct tether_compile_result *res);
/* The start of both backends' compile: tether__compile_passes, then the memory plan with o's
 * planner and memory options into plan. */
struct tether_memplan;
int tether__compile_passes_and_plan(tether_ir_graph *g, const struct tether_compile_options *o,
                                    struct tether_compile_result *res, struct tether_memplan *plan);

/* ---- data-dependent output sizes (ir/shapes_dynamic.c; wt27h) ---- */
/* The count flag of the mode of nonzero/compress/unique/nms: the node computes the extent. */
#define TETHER__DYN_COUNT 256
/* True for nonzero, compress, unique, nms. */
bool tether__ir_is_dynamic_op(tether_op op);
/* The bound of node n's dynamic dimension (min of the natural one and the cap), and which
 * dimension it is (the tensor's dyn_dim: 0 static, d + 1, -1 extent); on inferred inputs. */
int64_t tether__ir_dyn_bound(const tether_ir_graph *g, const tether_ir_node *n);
int tether__ir_dyn_dim(const tether_ir_graph *g, const tether_ir_node *n);
/* Shape and typing rules of those operators (the DATA rules hand them over). */
int tether__ir_dynamic_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond);
int tether__ir_dynamic_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out);
/* After inference: no node reads a dynamic tensor (but unique's second input), and every
 * dynamic graph output has its extent output; errors name the node or tensor. */
int tether__ir_check_dynamic(const tether_ir_graph *g);
/* ---- readers of dynamic tensors beyond the elementwise ones (ir/shapes_dynamic_use.c; wt27s) */
/* The node computing the root tensor dynamic tensor t derives from; -1 when t is not dynamic. */
int tether__ir_dyn_root(const tether_ir_graph *g, int t);
/* Row readers (output dynamic along dimension 0): input `dyn`'s tensor index, else -2. */
int tether__ir_dyn_row_reader(const tether_ir_graph *g, const tether_ir_node *n, int dyn);
/* Reductions over dimension 0 of a dynamic tensor read the live row count: input 1 of such a
 * reduce node is the int64 [1] extent of the root (tether__ir_dyn_wire_counts adds it and that
 * extent node after inference; *changed says the graph must be inferred again). */
bool tether__ir_dyn_counted(const tether_ir_graph *g, const tether_ir_node *n);
int tether__ir_dyn_wire_counts(tether_ir_graph *g, bool *changed);
/* ---- readers needing the live extent in the kernel (ir/shapes_dynamic_live.c; wt27d) ---- */
/* The mode flag of a transpose/concat/gather/slice wired with live extents: attrs.k data inputs,
 * then one int64 [1] extent per dynamic data input, in their order. */
#define TETHER__DYN_LIVE 512
bool tether__ir_live_wired(const tether_ir_node *n);
/* attrs.k for a wired node, else ninputs. */
int tether__ir_live_data_inputs(const tether_ir_node *n);
/* Whether n reads a dynamic tensor through the live extent: its first dynamic data input (tensor
 * index), else -1; *odim (may be NULL) the output's dyn_dim (0 static, d + 1, -1 an extent). */
int tether__ir_dyn_live(const tether_ir_graph *g, const tether_ir_node *n, int *odim);
/* Slice and concat of such inputs: roots of their own extent (not their extent nodes). */
bool tether__ir_live_root(const tether_ir_graph *g, const tether_ir_node *n);
/* ONNX's slice length and first index along an extent dim (raw starts/ends, clamped). */
int64_t tether__ir_slice_live_len(int64_t s, int64_t e, int64_t st, int64_t dim);
int64_t tether__ir_slice_live_start(int64_t s, int64_t st, int64_t dim);
/* The shape rule of a live slice or an extent node (1: handled, *rc its status), else 0. */
int tether__ir_live_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond,
                          int *rc);
/* Whether q's attributes are those of the extent node of a root with attributes a (a's mode |
 * TETHER__DYN_COUNT, everything else equal). */
/* How many leading inputs an extent node repeats of its root's (what identifies it): unique's
 * and nms' one; else the data inputs, without the live extents a live reader is wired (two
 * extents of one tensor are the same value, computed by equal nodes). */
int tether__ir_extent_key_inputs(const tether_ir_node *n);
bool tether__ir_extent_attrs_equal(const tether_ir_attrs *a, const tether_ir_attrs *q);
/* After wiring: a live reader carries its extents (else an error naming the node). */
int tether__ir_live_check(const tether_ir_graph *g, const tether_ir_node *n);

/* CLOCK_MONOTONIC in seconds (for the timings of reports). */
double tether__now_s(void);

/* ---- the recurrent layers and reverse_sequence (ir/shapes_rnn.c; issue 27, wt27e) ---- */

/* Activation codes of a recurrent node's activations list (the ONNX names in this order). */
enum {
    TETHER__RNN_SIGMOID,
    TETHER__RNN_TANH,
    TETHER__RNN_RELU,
    TETHER__RNN_AFFINE,
    TETHER__RNN_LEAKY_RELU,
    TETHER__RNN_THRESHOLDED_RELU,
    TETHER__RNN_SCALED_TANH,
    TETHER__RNN_HARD_SIGMOID,
    TETHER__RNN_ELU,
    TETHER__RNN_SOFTSIGN,
    TETHER__RNN_SOFTPLUS,
    TETHER__RNN_ACT_COUNT
};
/* A recurrent node (rnn, gru, lstm) decoded: gates per direction (1, 3, 4), activation functions
 * per direction (1, 2, 3), directions, reverse (one direction, backwards), flag (lstm
 * input_forget, gru linear_before_reset), clip; activation f of direction d is act[d * funcs +
 * f] with its alpha and beta; T, B, I, H from x and k. */
typedef struct tether__rnn_geo_t {
    int gates, funcs, dirs, reverse, flag, has_clip;
    float clip;
    int act[6];
    float alpha[6], beta[6];
    int64_t T, B, I, H;
} tether__rnn_geo_t;
int tether__rnn_geo(const tether_ir_graph *g, const tether_ir_node *n, tether__rnn_geo_t *r);
/* Their shape and typing rules (called by the DATA family's, shapes_data.c). */
int tether__ir_rnn_shape(const tether_ir_graph *g, tether_ir_node *n, int64_t *os, int *ond);
int tether__ir_rnn_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out);
/* The device limits an OpenCL compile sizes its kernels by (codegen/opencl_limits.c): o's, or
 * the default of each that is 0; defaulted has bit i set for limit i (tether__ocl_limit_name:
 * max_work_group_size, wg_multiple, local_mem_size, compute_units) taken by default. */
typedef struct tether__ocl_limits {
    int64_t max_work_group_size, wg_multiple, local_mem_size, compute_units;
    unsigned defaulted;
} tether__ocl_limits;
void tether__ocl_limits_get(const struct tether_opencl_options *o, tether__ocl_limits *l);
const char *tether__ocl_limit_name(int i);
/* One line: the four values, then which are defaults ("(the defaults: ...)" when all). */
void tether__ocl_limits_text(const tether__ocl_limits *l, char *buf, size_t n);

#endif /* TETHER_COMPILER_INTERNAL_H */
