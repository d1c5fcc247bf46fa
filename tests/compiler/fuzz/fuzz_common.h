/*
 * What the fuzz targets do with a graph that loaded (tests/compiler/fuzz, tests/onnx/fuzz): the
 * code is compiled into each target with the compiler sources, so the fuzzer sees its coverage.
 */
#ifndef TETHER_TEST_FUZZ_COMMON_H
#define TETHER_TEST_FUZZ_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "tether/compiler.h"

/* Plans memory (greedy-size), generates C in both ABIs (the unpacked one with the typed C
 * interface when typed_c) and runs the interpreter on zeroed inputs when the graph's work is
 * under TT_FUZZ_MAX_FLOPS (a 7x34 max pool with a 34x41 window over 35x32 channels is 0.4
 * GFLOP: minutes under ASan, and libFuzzer then reports a timeout, not a bug). Nothing may
 * crash; results are not checked. g has passed the passes and has few elements. */
#define TT_FUZZ_MAX_FLOPS (UINT64_C(1) << 24)
void tt_fuzz_plan_generate_run(const tether_ir_graph *g, bool typed_c);

#endif
