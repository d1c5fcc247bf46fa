/*
 * The C emitter's private interface between its two halves (not installed): emit_c.c, the
 * module and ABI scaffolding (per-operator functions, entries, packed wrapper, registry, header,
 * weights), emit_c_functions.c, the per-operator functions and the graph function, and
 * emit_c_kernels.c, one kernel body emitter per operator family.
 *
 * What must stay true: a kernel body reads its tensors only through the names of kargs and
 * writes only its output; it records the math functions (math_used) and formula helpers
 * (need_helpers) it calls, and emit_c.c defines exactly those.
 */
#ifndef TETHER_CODEGEN_EMIT_C_INTERNAL_H
#define TETHER_CODEGEN_EMIT_C_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>

#include "../internal.h"
#include "tether/compiler.h"

/* The math functions generated code may call (the metadata lists the ones used): the M rows of
 * ir/formula.def, M_EXPF ... */
enum {
#define M_ENUM_(id, c, cl, arity, dbl) M_##id = TETHER__MATH_##id,
    TETHER__MATH_LIST(M_ENUM_)
#undef M_ENUM_
        M_COUNT = TETHER__MATH_COUNT
};

typedef struct em {
    tether__sbuf s;
    int depth;
    const tether_ir_graph *g;
    const tether_memplan *plan;
    /* per pool (pools given): the unpacked entry's parameter, "pool_<cname>" made distinct
     * from the entry's tensor parameters (plain C names) */
    char pool_param[TETHER_MEMORY_MAX_POOLS][TETHER_POOL_NAME_MAX + 24];
    const tether_codegen_options *o;
    const char *P; /* prefix */
    char **cname;  /* per tensor: C identifier part (sanitised, unique) */
    char **fname;  /* per node: function name, NULL for alias nodes */
    char **kname;  /* per node: its kernel (static, tgk_<function name>) */
    size_t *poff;  /* per tensor: params blob offset (constants) */
    size_t params_bytes;
    int math_used[M_COUNT];
    int need_helpers[2 * TETHER__PRIM_COUNT]; /* tg_ helpers, by primitive (ir/formula.def),
                                                 then their tgd_ (float64) versions */
    int max_args;
    int vw;                    /* the schedule's vector width, resolved: 0 = scalar kernels */
    const tether_schedule *sc; /* the schedule of the kernel being emitted (a node's tuned one
                                  or o->schedule); vector_width/channel_block: o->schedule's */
    int conv_mr, gemm_mr;      /* sc's conv_oc_block and gemm_rows, resolved */
    int ntunable, ntuned;      /* kernels with knobs / emitted with a node schedule */
    int *cb;       /* per tensor: channel block of its layout, 0 = plain (emit_c_nchwc.c) */
    float **wdata; /* per tensor: repacked constant data, NULL = the tensor's own */
} em;

static inline void line(em *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static inline void line(em *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tether__sbuf_vline(&e->s, e->depth, "\n", fmt, ap);
    va_end(ap);
}

/* `for (int v = 0; v < n; ++v) {` and depth++ */
static inline void loop(em *e, const char *v, int64_t n) {
    line(e, "for (int %s = 0; %s < %lld; ++%s) {", v, v, (long long)n, v);
    e->depth++;
}

static inline void close_block(em *e) {
    e->depth--;
    line(e, "}");
}

/* A float literal that round-trips and is valid C99. */
static inline void flit(char *buf, size_t n, float v) {
    tether__cg_float_literal(buf, n, v, false);
}

static inline const tether_ir_tensor *T(const em *e, int t) {
    return &e->g->tensors[t];
}

/* The parameter names a kernel body reads its tensors through: inputs in node order (NULL for
 * an absent optional input), the output, and the residual input or NULL. */
typedef struct kargs {
    const char *in[TETHER_IR_MAX_INPUTS];
    const char *out;
    const char *res; /* residual input or NULL */
} kargs;

/* The per-operator functions and the graph function (emit_c_functions.c): the arguments a node's
 * function takes; make sc the schedule of the kernels emitted next (resolving vector width and
 * blocks); whether a schedule can be used for a workload (0, or an error naming the knob); the
 * function of node idx; the graph function calling them in order. */
int tether__c_node_nargs(const tether_ir_node *nd);
void tether__c_use_schedule(em *e, const tether_schedule *sc);
int tether__c_schedule_check(const tether_schedule *sc, const char *workload);
void tether__c_emit_op_function(em *e, int idx);
void tether__c_emit_graph(em *e);

/* Emits the body of nd's kernel (emit_c_kernels.c). */
void tether__c_kernel_body(em *e, const tether_ir_node *nd, const kargs *k);

/* Epilogue store: `o[idx] = act(val [+ r[idx]]);` with nd's activation. r may be NULL. */
void tether__c_store(em *e, const tether_ir_attrs *a, const char *o, const char *r, const char *idx,
                     const char *val);

/* The geometry of one conv2d as the blocked kernels see it (a 1x1 stride-1 unpadded conv as a
 * matrix product over the flattened plane: H = OH = 1). */
typedef struct conv_geo {
    long long N, C, O, G, CG, OG;
    long long H, W, OH, OW; /* input and output planes */
    long long KH, KW, SH, SW, DH, DW, PT, PL;
    int rows_checked; /* some kernel row can fall into the top/bottom padding */
    long long lo, hi; /* columns whose whole window is inside the input row */
    const char *bias; /* bias parameter name or NULL */
} conv_geo;

/* emit_c_layers.c: batch_norm and layer_norm kernel bodies (float32). */
void tether__c_batch_norm(em *e, const tether_ir_node *nd, const kargs *k);
void tether__c_layer_norm(em *e, const tether_ir_node *nd, const kargs *k);
void tether__c_conv_geo(const em *e, const tether_ir_node *nd, const kargs *k, conv_geo *g);

/* emit_c_schedules.c: the register-blocked conv2d (e->vw > 0). Returns 1 when it emitted nd's
 * kernel body, 0 when the scalar kernel should (nothing emitted). */
int tether__c_conv2d_blocked(em *e, const tether_ir_node *nd, const kargs *k);
/* The same for matmul (after the scalar kernel's batch offset tables aoff/boff, when batch > 1). */
int tether__c_matmul_blocked(em *e, const tether_ir_node *nd, const kargs *k, long long batch,
                             long long M, long long N, long long K);
/* The same for dense with transposed weights (dot products); value() writes the output value
 * expression (alpha, C/beta) of emit_c_kernels.c. */
int tether__c_dense_blocked(em *e, const tether_ir_node *nd, const kargs *k,
                            void (*value)(const tether_ir_node *, const em *, const kargs *,
                                          const char *, const char *, const char *, char *,
                                          size_t));

/* emit_c_types.c: element types. The C type of tensor t; whether a graph has any tensor that is
 * not float32 (its module then defines the conversion helpers); the helpers a module needs
 * (float64 primitives used, conversions, per integer type the saturating conversion and the
 * integer primitives); the compute type of element type t (float, double, the integer type);
 * a load of element expression elem of type t in its compute type; the conversion of value v of
 * from's compute type to element type `to`; constant v as a value of type t; a typed
 * constant array; the elementwise kernel of a node that is not float32 alone; where. */
static inline const char *ctype(const em *e, int t) {
    return tether__c_type(e->g->tensors[t].dtype);
}
int tether__c_graph_typed(const tether_ir_graph *g);
void tether__c_type_helpers(const em *e, tether__sbuf *out);
const char *tether__c_compute_type(DLDataType t);
void tether__c_load(DLDataType t, const char *elem, char *out, size_t n);
void tether__c_convert(DLDataType from, DLDataType to, const char *v, char *out, size_t n);
void tether__c_const_value(DLDataType t, double v, char *out, size_t n);
void tether__c_typed_array(tether__sbuf *s, const char *name, const tether_ir_tensor *t,
                           const void *data);
void tether__c_ew_typed(em *e, const tether_ir_node *nd, const kargs *k);
void tether__c_where(em *e, const tether_ir_node *nd, const kargs *k);
/* nll_loss, _sum, _mean (emit_c_loss.c). */
void tether__c_nll_loss(em *e, const tether_ir_node *nd, const kargs *k);
/* Index expression of operand t inside nested loops i0..i{nd-1} over an output of rank nd
 * (emit_c_kernels.c). */
void tether__c_bcast_index(const tether_ir_tensor *t, int nd, const int64_t *oshape, char *out,
                           size_t n);
/* emit_c_custom.c: a CUSTOM node's kernel body (descriptors of its tensors in the declared
 * layout, the call of the user's function); the user's C sources with their #line directives
 * and prototypes (tether__c_custom_sources, after the kernels; 0 or an error naming the op). */
void tether__c_custom_body(em *e, const tether_ir_node *nd, const kargs *k);
int tether__c_custom_prototypes(em *e);
int tether__c_custom_sources(em *e);

/* Whether node n has a function (aliases and empty outputs have none). */
int tether__c_node_has_function(const tether_ir_graph *g, const tether_ir_node *n);

/* emit_c_nchwc.c: picks every tensor's layout (e->cb) and repacks the weights of the convs that
 * touch a blocked tensor (e->wdata); tether__c_layouts_free releases both. */
int tether__c_layouts(em *e);
void tether__c_layouts_free(em *e);
/* A constant's data as the module stores it (repacked or the tensor's own). */
const void *tether__c_tensor_data(const em *e, int t);
/* Emits nd's kernel body when one of its tensors is channel-blocked (1), else 0. */
int tether__c_blocked_body(em *e, const tether_ir_node *nd, const kargs *k);

/* emit_c_profile.c (o->profile): the nodes with a slot in the profile table, the table's
 * declarations (before the graph function), the clock readings around node slot's kernel call
 * (after = 0 before it, 1 after it), and <prefix>_profile (after the entries). No-ops without
 * o->profile. */
int tether__c_profile_slots(const tether_ir_graph *g);
void tether__c_profile_decls(em *e);
void tether__c_profile_node(em *e, int slot, int after);
void tether__c_profile_function(em *e);
/* emit_c_layers.c: the kernel bodies of conv_nd / conv_transpose, reduce_mean, the other
 * reductions and hardmax. */
void tether__c_conv_nd(em *e, const tether_ir_node *nd, const kargs *k);
void tether__c_reduce_mean(em *e, const tether_ir_node *nd, const kargs *k);
void tether__c_reduce(em *e, const tether_ir_node *nd, const kargs *k);
void tether__c_hardmax(em *e, const tether_ir_node *nd, const kargs *k);
/* emit_c_data.c: the kernel body of a DATA operator (its kernel returns int32_t: 0, or -1 for an
 * index out of range). */
void tether__c_data(em *e, const tether_ir_node *nd, const kargs *k);
/* emit_c_rnn.c: the recurrent layers and reverse_sequence (DATA rows; tether__c_data's). */
void tether__c_rnn(em *e, const tether_ir_node *nd, const kargs *k);
/* emit_c_dynamic.c: the kernel body of nonzero, compress, unique, nms (returns 0, -4 over the
 * bound, -1 for a condition past its extent; the graph returns that code). */
void tether__c_dynamic(em *e, const tether_ir_node *nd, const kargs *k);
/* Transpose, concat, gather and slice wired with live extents (emit_c_dynamic_live.c). */
void tether__c_live(em *e, const tether_ir_node *nd, const kargs *k);
/* tfidf (TfIdfVectorizer; emit_c_text.c). */
void tether__c_tfidf(em *e, const tether_ir_node *nd, const kargs *k);
/* The run-time Loop's statements in the graph function (emit_c_loop.c), and the C expression of
 * tensor t's storage (emit_c_functions.c). */
void tether__c_loop(em *e, int i);
void tether__c_tensor_ptr(const em *e, int t, char *out, size_t n);
/* emit_c_quant.c: the quantized operators' kernels, and the helpers a module with any defines. */
void tether__c_quant_body(em *e, const tether_ir_node *nd, const kargs *k);
void tether__c_quant_helpers(const em *e, tether__sbuf *out);
/* qadd, qmul, qlut, qmax_pool, qavg_pool (emit_c_qelt.c) and their helpers */
void tether__c_qelt_body(em *e, const tether_ir_node *nd, const kargs *k);
/* emit_c_qelt_x86.c: qadd/qmul of 8-bit tensors of the output's shape as an AVX2 loop (inside
 * `#if defined(__AVX2__)`) and the scalar rest; 0 (nothing emitted) for other forms */
int tether__c_qbin_x86(em *e, const tether_ir_node *nd, const kargs *k);
void tether__c_qelt_helpers(tether__sbuf *out);
/* emit_c_vision.c: the kernels of the vision and signal rows of the DATA family
 * (TETHER__CASES_VISION), called by emit_c_data.c's switch; their "return 0;" follows. */
void tether__c_vision(em *e, const tether_ir_node *nd, const kargs *k);
/* emit_c_qfast.c: the fast qconv kernels; 1 when it emitted nd's body, 0 when the portable loop
 * should. */
int tether__c_qconv_fast(em *e, const tether_ir_node *nd, const kargs *k);

/* emit_c_reduce.c: a reduction on any type but float32. */
void tether__c_reduce_typed(em *e, const tether_ir_node *nd, const kargs *k);

/* emit_c_qneon.c: the AArch64 NEON / dot-product int8 kernels. conv and matmul emit
 * "#if defined(__aarch64__) ...", the kernel and "#else", and return 1 (the caller emits the
 * other kernels and "#endif"), or emit nothing and return 0; helpers: tgq_n_gemm. */
int tether__c_qneon_conv(em *e, const tether_ir_node *nd, const kargs *k);
int tether__c_qneon_matmul(em *e, const tether_ir_node *nd, const kargs *k);
void tether__c_qneon_helpers(tether__sbuf *out);

#endif /* TETHER_CODEGEN_EMIT_C_INTERNAL_H */
