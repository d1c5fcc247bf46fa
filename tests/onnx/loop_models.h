/*
 * The run-time Loop models the ONNX tests share (loop_models.c): test_onnx_import checks them
 * through the interpreter, test_onnx_loop_c through the compiled C (hosted and Cortex-M), and
 * test_onnx_cli through `tether ab` / `run`. What must stay true: the models' inputs and outputs
 * in the order documented here (the tests feed them by position).
 */
#ifndef TETHER_TEST_LOOP_MODELS_H
#define TETHER_TEST_LOOP_MODELS_H

#include "model_builder.h"

/* While-style: inputs c0 bool [], limit int64 [1], x float [1], y0 float [1]; outputs
 * nfinal int64 [1], yfinal float [1]:  n = 0; y = y0; while (c0 ...) { n += 1; y *= x;
 * cond = n < limit }. body must outlive b (it is b's Loop's body). */
void loop_while_model(mb *b, mb *body);

/* For-style: inputs M int64 [], a0 float [2], b0 float [2]; outputs af, bf float [2],
 * sf int64 []:  for (i = 0; i < M; i++) { (a, b) = (b, a + b); s += i }. */
void loop_for_model(mb *b, mb *body);
#endif
