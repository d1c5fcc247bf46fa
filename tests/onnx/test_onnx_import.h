/*
 * What the source files of test_onnx_import share: the scratch directory, the model loader
 * and error expectation helpers (test_onnx_import.c) and the file/robustness tests
 * (test_onnx_files.c) that main() runs.
 */
#ifndef TETHER_TEST_ONNX_IMPORT_H
#define TETHER_TEST_ONNX_IMPORT_H

#include <stddef.h>

#include "model_builder.h"
#include "tether/compiler.h"

extern char g_dir[512];
const char *tmp(const char *name);
int load(mb *b, const tether_model_load_options *o, tether_ir_graph *g);
void expect_error(mb *b, int status, const char *text);
void run1(const tether_ir_graph *g, const float *x, float *y);
void conv_model(mb *b);
void write_bytes(const char *path, const void *data, size_t n);

void test_tensor_files(void **state);
void test_import_command(void **state);
void test_hostile_models(void **state);
void test_external_data_files(void **state);
void test_arity(void **state);
void test_regression_seeds(void **state);
void test_allocation_bounds(void **state);
/* test_onnx_layers.c: the window layers the node suite does not reach, by value. */
void test_onnx_layers(void **state);
void test_onnx_control_flow(void **state);
/* run-time Loops (test_onnx_loop.c), run by test_onnx_control_flow */
void test_onnx_loop_runtime(void);
/* test_onnx_rnn.c: RNN, GRU and LSTM attributes the node suite does not reach, by value. */
void test_onnx_rnn(void **state);
/* test_onnx_misc.c: shape folding of Neg/Abs, training operators, Pad modes, Dropout masks. */
void test_onnx_misc(void **state);
/* test_onnx_dynamic.c: a detection head of data-dependent size. */
void test_onnx_detection_head(void **state);
void test_onnx_nonzero_readers(void **state);
/* test_onnx_dynamic.c: a run-time Slice on two axes with a step, by value. */
void test_onnx_slice_runtime(void **state);
void test_onnx_live_chain(void **state);

#endif
