/*
 * The run-time Loop models the ONNX tests share (loop_models.c): test_onnx_import checks them
 * through the interpreter, test_onnx_loop_c through the compiled C (hosted and Cortex-M), and
 * test_onnx_cli through `tether ab` / `run`. What must stay true: the models' inputs and outputs
 * in the order documented here (the tests feed them by position).
 */
#ifndef TETHER_TEST_LOOP_MODELS_H
#define TETHER_TEST_LOOP_MODELS_H

#include <stdbool.h>

#include "model_builder.h"

/* While-style: inputs c0 bool [], limit int64 [1], x float [1], y0 float [1]; outputs
 * nfinal int64 [1], yfinal float [1]:  n = 0; y = y0; while (c0 ...) { n += 1; y *= x;
 * cond = n < limit }. body must outlive b (it is b's Loop's body). */
void loop_while_model(mb *b, mb *body);

/* For-style: inputs M int64 [], a0 float [2], b0 float [2]; outputs af, bf float [2],
 * sf int64 []:  for (i = 0; i < M; i++) { (a, b) = (b, a + b); s += i }. */
void loop_for_model(mb *b, mb *body);

/* Scan outputs of a run-time loop: a Loop with M and y0 = {1, -1} initializers (M = 8 for
 * variants 0 and 1; variant 2: M is a graph input, first), loop-carried n int64 [1] (from 0) and
 * y float [2], scan outputs ys float [<= 8, 2] and ns int64 [<= 8, 1]:
 *   for (i = 0; i < M && cond; i++) { n += 1; y *= x; cond = n < limit; ys[i] = y; ns[i] = n }
 * inputs: [M int64 []], [c0 bool [] (variants 0, 2; variant 1 has no initial condition)],
 * limit int64 [1], x float [2]; outputs nfinal, yfinal, ys, ns (and, after import, ys_extent
 * and ns_extent, int64 [1]: the iterations run). Variant 3 is variant 0 with output ys2 = ys * 2
 * in place of ys (a consumer of the dynamic scan output; extent output ys2_extent). Variants 4
 * and 5 are variant 2 with M computed from their first input: 4, M = Min(Mraw int64 [], 6);
 * 5, M = Cast(Mu8 uint8 [], int64). Variants 6 to 8 are variant 0 with readers of ys in place
 * of it: 6, outputs tot = ReduceSum(ys, [0], keepdims 0) [2], proj = MatMul(ys, W = [[1],[2]])
 * [<= 8, 1], cat = Concat(ys, ys * ys, axis 1) [<= 8, 4], tot2 = ReduceSum(proj, [0]) [1, 1]
 * and the reductions over the iterations that read the live row count, all [2] (keepdims 0):
 * mean, mx, mn, prod = ReduceMean/Max/Min/Prod(ys, [0]), esum = ReduceSum(Exp(ys), [0])
 * (outputs nfinal, yfinal, tot, proj, cat, tot2, mean, mx, mn, prod, esum, ns, proj_extent,
 * cat_extent, ns_extent); 7, red_out = Concat(ys, ys, axis 0) [<= 16, 2]; 8, red_out =
 * Transpose(ys, [1, 0]) [2, <= 8] (outputs nfinal, yfinal, red_out, ns, red_out_extent,
 * ns_extent). */
void loop_scan_model(mb *b, mb *body, int variant);
/* ONNX Scan (opset 16) over two run-time scan inputs: seq float [2,3] along axis 1 in reverse
 * and seq2 float [3,2] along axis -2 forward; state s0 float [2]; outputs sfinal [2], outs1
 * [2,3] (along axis -1, reverse) and outs2 [3,2] (axis 0, forward):
 *   for k in 0..2: s += seq[:, 2 - k] + seq2[k, :]; outs1[:, 2 - k] = s * s; outs2[k] = s - seq2[k]
 * inputs: s0, seq, seq2. */
void scan_dirs_model(mb *b, mb *body);
/* A run-time trip count with a body Slice whose start is the iteration number: inputs M int64 [],
 * seq float [6]; outputs sfinal float [1] and the scan output els float [<= bound, 1] (after
 * import els_extent, int64 [1]):
 *   s = 0; for (i = 0; i < M; i++) { el = seq[i:i+1]; s += el; els[i] = el }
 * (ONNX clamps the slice: i >= 6 gives an empty el, which ONNX cannot add to s). With gather,
 * el = Gather(seq, Unsqueeze(i)) in place of the Slice (i >= 6: out of range). */
void loop_slice_model(mb *b, mb *body, bool gather);

/* Readers of NonZero's [2, count] by its live count (torch.nonzero(x) and what follows it):
 * input x float [2, 3], nz = NonZero(x), t = Transpose(nz) [<= 6, 2]. Variant 0, outputs
 * t, head = t[:2], tail = t[-2:] (Slice, axis 0), cols = Gather(nz, 1, axis 0) [<= 6],
 * cat = Concat(t, [[7, 7]], axis 0) [<= 7, 2], flat = Flatten(Unsqueeze(t, [2]), 1)
 * [<= 6, 2], then their six extents. Variant 1, outputs first = Gather(t, 0) and
 * last = Gather(t, -1), int64 [2] (static; no nonzero element: an index outside the live
 * count). */
void nonzero_readers_model(mb *b, int variant);
#endif
