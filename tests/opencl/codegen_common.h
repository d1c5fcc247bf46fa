/*
 * What the files of test_opencl_codegen share (the compiler's OpenCL backend end to end on PoCL):
 * test_opencl_codegen.c (main; every operator, convolutions with buffer and texture weights, the
 * zoo, aliases and empty tensors as outputs, unsupported nodes, a weight image over the limit),
 * test_opencl_codegen_tex.c (texture activations and their fallback to buffers),
 * test_opencl_codegen_cli.c (KWS through the `tether` CLI, tune, usage errors),
 * test_opencl_wall.c (the wall clock and launch overhead in run/bench/ab), test_opencl_fuse.c (the
 * kernels launched for fused patterns: conv + add + relu); the helpers are in
 * codegen_common.c (test_opencl_dynamic, _errors and _quant use its ocl_test_main too).
 * TT_OCL_FILTER=NAME runs the tests matching NAME only (while debugging).
 *
 * main opens g_s on a local tetherd and makes g_tmp before the tests and closes and removes them
 * after; a test that changes g_run, g_tex_act, g_img_max, g_legacy, g_conv_gemm or g_sched sets
 * them back before it ends. test_opencl_gpu.c: the GPU kernels (emit_opencl_gpu.c) on awkward
 * shapes.
 */
#ifndef TETHER_TEST_OPENCL_CODEGEN_COMMON_H
#define TETHER_TEST_OPENCL_CODEGEN_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "tether/compiler.h"
#include "tether/crt.h"
#include "tether/host.h"

extern tether_session *g_s;                   /* the tests' session (local:) */
extern tether_session *g_run;                 /* run_ocl's session (NULL: g_s) */
extern char g_fallback[TETHER_ERROR_MSG_MAX]; /* run_ocl: why its artifact ran the buffer variant */
extern char g_tmp[64];                        /* the tests' directory (the CLI's current one) */
extern bool g_tex_act;                        /* compile_ocl: --texture-activations */
extern int64_t g_img_max[2];                  /* compile_ocl: --image-max (0 = none) */
extern bool g_legacy;                         /* compile_ocl: the legacy (non-GPU) kernels */
extern bool g_conv_gemm; /* compile_ocl: general convs take the GEMM kernel untuned */
extern const tether_node_schedule *g_sched; /* compile_ocl: node schedules (NULL = none) */
extern int g_nsched;
extern bool g_fp16; /* compile_ocl: --precision fp16; check_graph then compares within 2e-2 */

/* A session on a tetherd started over stdio (local:), quiet. */
int open_local(tether_session **s);
/* The main of an OpenCL test file: g_tmp from tmpl (mkdtemp), g_s on a local tetherd, the n
 * tests (TT_OCL_FILTER=NAME: those matching NAME), then g_s closed and g_tmp removed; 77 (ctest's
 * skip) when tetherd reports no OpenCL device, 1 when either cannot be made. */
int ocl_test_main(const char *tmpl, const struct CMUnitTest *tests, size_t n);
/* rm -rf dir (says so when it cannot). */
void rm_tree(const char *dir);
/* Compiles g (a copy; g stays as it is) with the OpenCL backend into a fresh directory. */
void compile_ocl(const tether_ir_graph *g, bool texture, bool passes, char *dir, size_t n);
/* Runs the artifact in dir on g_run or g_s with inputs; outputs malloc'ed into outs. */
void run_ocl(const char *dir, const float *const *ins, float **outs, int nout);
/* Compiles and runs g with the OpenCL backend, compares every output with the interpreter
 * (positive bit i: input i in [0.1, 2); NULL = none). */
void check_graph(const tether_ir_graph *g, const unsigned char *positive, bool texture,
                 bool passes);

/* A convolution case: x -> conv(w const, b const) [-> + residual input] [-> act]. */
typedef struct conv_case {
    const char *name;
    int64_t x[4], w[4];
    int groups, stride, pad, dil;
    int bias;
    tether_act act;
    int residual;
} conv_case;

/* Builds and infers the graph of c (the passes fuse bias, residual and activation). */
void build_conv(tether_ir_graph *g, const conv_case *c);

/* Runs `tether ARGS` in g_tmp; the exit code, the output (stdout+stderr) in out. */
int run_cli(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Two .npy files of g_tmp hold the same shape and values within tol. */
void expect_equal_npy(const char *a, const char *b, double tol);

/* The tests, in the order main runs them. */
void test_every_operator(void **state);
void test_conv_weights_buffer_and_texture(void **state);
void test_zoo(void **state);
void test_alias_outputs(void **state);
void test_empty_tensors(void **state);
void test_unsupported_nodes(void **state);
void test_image_over_limit(void **state);
void test_texture_activations(void **state);
void test_image_fallback(void **state);
void test_kws_cli(void **state);
void test_cli_errors(void **state);
void test_tune_opencl(void **state);
void test_gpu_conv(void **state);
void test_gpu_dense(void **state);
void test_gpu_schedules(void **state);
void test_gpu_rows(void **state);
void test_gpu_dense_softmax(void **state);
void test_fp16(void **state);
void test_wall_clock(void **state);         /* test_opencl_wall.c */
void test_fuse_conv_add_relu(void **state); /* test_opencl_fuse.c */

#endif
