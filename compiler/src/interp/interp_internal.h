/*
 * What the interpreter's files share (interp.c runs the nodes, interp_types.c loads and stores
 * elements of every type, interp_quant.c runs the quantized operators).
 *
 * What must stay true: a value loaded and stored back in the same type is unchanged; a store
 * converts as the generated C does (float16/bfloat16 round to nearest even, float to integer:
 * NaN 0, truncated and saturated; integers wrap modulo 2^bits; bool is != 0).
 */
#ifndef TETHER_INTERP_INTERNAL_H
#define TETHER_INTERP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "../internal.h"

/* One element as the interpreter computes it: its class and the value in that class. */
typedef struct val {
    tether__dclass c;
    double f; /* F32 and F64 */
    int64_t i;
    uint64_t u;
} val;

/* Element k of buffer p of type t, in its compute class. */
val tether__interp_load(const void *p, DLDataType t, size_t k);
/* Stores v (of any class) as element k of buffer p of type t, converting. */
void tether__interp_store(void *p, DLDataType t, size_t k, val v);

/* A DATA operator's node (interp_data.c): TETHER_OK, or an error naming the node (an index out
 * of range). */
int tether__interp_data(const tether_ir_graph *g, const tether_ir_node *n, void **buf);
/* The run-time Loop's operators (interp_loop.c): node i, *next the node to run next. */
int tether__interp_loop(const tether_ir_graph *g, int i, void **buf, int64_t *ls, int *next);
/* A vision or signal operator's node (interp_vision.c; TETHER__CASES_VISION): as
 * tether__interp_data. */
int tether__interp_vision(const tether_ir_graph *g, const tether_ir_node *n, void **buf);
/* The recurrent layers and reverse_sequence (interp_rnn.c; called by tether__interp_data): an
 * error naming the node for a sequence length out of range. */
int tether__interp_rnn(const tether_ir_graph *g, const tether_ir_node *n, void **buf);
/* nonzero, compress, unique, nms (interp_dynamic.c): their data of the actual shape, or the
 * extent; TETHER_ERR_LIMIT naming the node when it is above the bound. */
int tether__interp_dynamic(const tether_ir_graph *g, const tether_ir_node *n, void **buf);
/* Transpose, concat, gather and slice wired with live extents (interp_dynamic_live.c): an error
 * naming the node for a gather index outside the live extent. */
int tether__interp_live(const tether_ir_graph *g, const tether_ir_node *n, void **buf);
/* nll_loss, _sum, _mean (interp_loss.c): buf holds every tensor's storage. */
void tether__interp_nll_loss(const tether_ir_graph *g, const tether_ir_node *n, void **buf);
/* Runs a quantized operator (quantize, dequantize, qconv, qmatmul; interp_quant.c). */
void tether__interp_quant(const tether_ir_graph *g, const tether_ir_node *n, void **buf);
/* qadd, qmul, qlut, qmax_pool, qavg_pool (interp_qelt.c) */
void tether__interp_qelt(const tether_ir_graph *g, const tether_ir_node *n, void **buf);

/* The elementwise formulas (interp_formula.c): an operator's FORMULA on float32 (x alone for a
 * unary one), in the class of x for any element type (y NULL for a unary operator), and a fused
 * epilogue activation. */
float tether__interp_ew_unary(tether_op op, float x, const tether_ir_attrs *at);
float tether__interp_ew_binary(tether_op op, float x, float y, const tether_ir_attrs *at);
val tether__interp_ew_typed(tether_op op, val x, const val *y, const tether_ir_attrs *a);
float tether__interp_apply_act(float v, const tether_ir_attrs *a);

/* A reduction on any type but float32 (interp_reduce.c). */
void tether__interp_reduce_typed(const tether_ir_graph *g, const tether_ir_node *n, void **buf);

#endif
