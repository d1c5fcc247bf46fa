/*
 * Shared helpers of the compiler tests: build a graph, compile it into a temporary artifact,
 * dlopen the library and run it through the module registry (packed or unpacked entry) or the
 * typed C interface, and compare with the reference interpreter.
 */
#ifndef TETHER_TEST_OPS_COMMON_H
#define TETHER_TEST_OPS_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "tether/compiler.h"

/* Fills n floats in [-1, 1) (or [0.1, 2) when positive) from a fixed-seed generator. */
void tt_fill(float *v, size_t n, bool positive, uint32_t *seed);

/* The optimisation level tt_run_compiled* build at (tether_build_options.opt_level):
 * TETHER_OPT_DEFAULT (-O3 on x86_64) unless a test lowers it for builds whose code speed is not
 * under test (test_ops.c: the gcc time of ~900 one-node builds). */
extern int tt_opt_level;

/* Compiles g (a copy is made; g is not changed) for x86_64 with the given options into
 * <binary dir>/tests/compiler/tmp/<tag>, runs it on inputs through the entry in its registry
 * (interface packed) or <prefix>_run (interface c) and writes the outputs. Returns 0 or a
 * negative status; messages via tether_last_error(). */
int tt_run_compiled(const tether_ir_graph *g, const char *tag, tether_abi abi,
                    tether_interface iface, bool link_params, const float *const *inputs,
                    float *const *outputs);

/* The same with the kernels' schedule knobs given (NULL = the defaults) and the conv padding
 * pass's minimum width (0 = the driver's choice, -1 = off: borders in the kernel). */
int tt_run_compiled_schedule(const tether_ir_graph *g, const char *tag, tether_abi abi,
                             tether_interface iface, bool link_params,
                             const tether_schedule *schedule, int pad_conv_min_width,
                             const float *const *inputs, float *const *outputs);

/* The same with memory options (pools, pins, planned inputs/outputs; NULL = none): the pools are
 * allocated (16-byte aligned, filled with 0xA5) and passed after the outputs (packed interface)
 * or in the workspace struct (C interface). result (may be NULL) receives the compile result. */
int tt_run_compiled_memory(const tether_ir_graph *g, const char *tag, tether_abi abi,
                           tether_interface iface, bool link_params,
                           const tether_schedule *schedule, int pad_conv_min_width,
                           const tether_memory_options *memory, tether_compile_result *result,
                           const float *const *inputs, float *const *outputs);

/* The same, the module run through both of its entries: the registry's <prefix>_main into
 * out_packed (NULL: not run) and, with iface TETHER_INTERFACE_C, <prefix>_run into out_c (NULL:
 * not run). An artifact of the C interface is one of the packed interface plus <prefix>_run and
 * its structs (emit_c.c), so one build of it checks the code of both (test_ops.c). */
int tt_run_compiled_both(const tether_ir_graph *g, const char *tag, tether_abi abi,
                         tether_interface iface, bool link_params, const tether_schedule *schedule,
                         int pad_conv_min_width, const tether_memory_options *memory,
                         tether_compile_result *result, const float *const *inputs,
                         float *const *out_packed, float *const *out_c);

/* Max |a-b| / (atol + rtol*|b|) over n values; <= 1 means "close". NaN in both counts as equal. */
double tt_close(const float *a, const float *b, size_t n, double atol, double rtol);

/* A float32 constant of the given shape filled by tt_fill (values in [-1, 1)) from *seed; its
 * tensor index (-1 on failure). */
int tt_add_const(tether_ir_graph *g, const char *name, int ndim, const int64_t *shape,
                 uint32_t *seed);

/* Deep copy of a graph (for running passes on a copy). */
int tt_graph_copy(const tether_ir_graph *src, tether_ir_graph *dst);

/* A chain of every operator kind with constant weights (for cross-compile checks and the
 * benchmarks): input x[1,3,8,8], one output. */
void tt_build_zoo(tether_ir_graph *g);

/* The rest of the project's model set (bench/compiler, the stack tests), both inferred:
 *  - tt_build_convnet: a small conv net, conv 3x3 (16->32, pad 1) -> relu -> conv 1x1 (32->32)
 *    -> relu -> max pool 2x2 -> flatten -> dense 10 on x[1,16,32,32];
 *  - tt_build_mobile: a MobileNet-style block, conv 3x3 s2 (3->16) + relu6 -> depthwise 3x3 +
 *    relu6 -> pointwise (16->32) + relu -> global average pool -> dense 10 -> softmax on
 *    x[1,3,64,64] (the block of bench/opencl).
 * `small` gives the same structure at sizes that fit a Cortex-M3 board's load region
 * (docs/mcu.md): the conv net on x[1,8,16,16] with 16 channels, the block on x[1,3,32,32]. */
void tt_build_convnet(tether_ir_graph *g, bool small);
void tt_build_mobile(tether_ir_graph *g, bool small);

/* Model `name` of the set: "kws" (examples/kws/kws.json), "zoo", "convnet", "mobile"; 0 or a
 * negative status. */
int tt_build_model(const char *name, bool small, tether_ir_graph *g);

/* ---- one-node operator cases (op_cases.c) ----------------------------------------------------
 * Each case is one node whose operands are all graph inputs (plus a second node on its output
 * when `then` is not TT_NONE, so reshape-like aliases run), marked with the backends whose
 * operator test runs it (tests/compiler/test_ops.c: TT_C, tests/opencl/test_opencl_codegen.c:
 * TT_OPENCL). */
#define TT_MAXIN 8
#define TT_NONE  TETHER_OP_COUNT_
enum { TT_C = 1u, TT_OPENCL = 2u };

typedef struct tt_op_case {
    const char *name;
    tether_op op;
    int nin;
    int ndim[TT_MAXIN];
    int64_t shape[TT_MAXIN][6];
    unsigned positive; /* bit i: input i is drawn from [0.1, 2) */
    void (*attrs)(tether_ir_attrs *a);
    tether_op then;    /* a second node on the output (TT_NONE = none) */
    unsigned backends; /* TT_C | TT_OPENCL: the tests that run it */
    /* element types of the inputs, space separated ("int32 bool"; the last one repeats), NULL:
     * float32; the output's follows from the operator's typing rule */
    const char *dtypes;
} tt_op_case;

/* tfidf's constant operands (op_cases_text.h): pool, counts, indexes and, when with_w, weights
 * added to g, their tensors into in[]; how many. */
int tt_tfidf_operands(tether_ir_graph *g, int *in, int with_w);
/* the constant parameters of a qadd/qmul/qlut/qavg_pool case (op_cases_qelt.h) added to g, their
 * tensor into in[0]; how many (0 or 1). */
int tt_qelt_operands(tether_ir_graph *g, tether_op op, const tether_ir_attrs *a, int *in);

extern const tt_op_case tt_op_cases[];
extern const size_t tt_num_op_cases;

/* 2x2 kernel, stride 2 (pooling attributes of several cases). */
void tt_attrs_pool2(tether_ir_attrs *a);
/* Custom operator 0 of tt_custom_registry() (the examples/custom_ops registry, loaded once, or
 * NULL with the error printed): what a graph with a CUSTOM case points its ->custom at. */
void tt_attrs_custom(tether_ir_attrs *a);
const struct tether_custom_registry *tt_custom_registry(void);
#endif
