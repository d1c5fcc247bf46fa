/*
 * Internals of `tether quantize` (tether/onnx_quantize.h), shared by quantize.c (the plan: which
 * nodes and tensors get QDQ pairs, and the rewrite of the ModelProto) and quantize_calib.c (the
 * calibration samples, the ranges and histograms the float model shows on them, the scale and
 * zero point of each range, and the error of the quantized model against the float one).
 *
 * What must stay true: every calibrated tensor is float32 and listed once; a sample is one value
 * per graph input, in the graph's input order, of that input's dtype and shape.
 */
#ifndef TETHER_ONNX_QUANTIZE_INTERNAL_H
#define TETHER_ONNX_QUANTIZE_INTERNAL_H

#include <stdint.h>

#include "tether/onnx_quantize.h"

#define TQ_BINS 2048

/* The calibration set: n samples of nin inputs each (data[s * nin + i] borrows the caller's
 * arrays), every sample of the shapes in `shapes`. */
typedef struct tq_set {
    int nin, n;
    const void **data;
    tether_model_input_shape shapes[32];
} tq_set;

/* The samples of o's calibration files for graph g's inputs (quantize_set.c); set->data is
 * malloc'd (free it), the arrays borrowed. */
struct Onnx__GraphProto;
int tq_build_set(const struct Onnx__GraphProto *g, const char *path,
                 const tether_onnx_quantize_options *o, tq_set *set);

/* What the float model shows of one activation tensor. */
typedef struct tq_range {
    double lo, hi;  /* min and max over every sample (finite values) */
    uint64_t *hist; /* TQ_BINS bins over [lo, hi] (percentile) or [0, max |x|] (entropy) */
    int seen;
} tq_range;

/* Runs the calibration graph gc (whose outputs from `first` on are the ncal tensors to calibrate)
 * on every sample and fills r[ncal] for the method: min/max, then the histograms. */
int tq_calibrate(const tether_ir_graph *gc, int first, int ncal, const tq_set *set,
                 tether_qcalib method, tq_range *r);
/* The activation range [lo, hi] the method chooses from r (before the zero is included). */
void tq_range_pick(const tq_range *r, tether_qcalib method, double percentile, double *lo,
                   double *hi);
/* Scale and zero point of [lo, hi] for int8 (-128..127) or uint8 (0..255), 0 included (ORT). */
void tq_params(double lo, double hi, int uint8, float *scale, int *zp);
/* Per-output error of gq (the quantized model, integer pass applied) against gf on every
 * sample; r->outputs filled. */
int tq_evaluate(const tether_ir_graph *gf, const tether_ir_graph *gq, const tq_set *set,
                tether_onnx_quantize_result *r);

#ifdef TQ_MODEL /* quantize.c and quantize_main.c: the plan on the unpacked model */
#include "internal.h"

enum { K_NONE, K_CONV, K_MATMUL, K_GEMM, K_BINARY, K_ACT, K_POOL, K_SHARE, K_CONCAT };

typedef struct act {
    char *name; /* a copy */
    int cal;    /* output index in the calibration graph (after the model's outputs) */
    int share;  /* act whose scale and zero point it takes (-1: its own) */
    float scale;
    int zp;
    char *dq;  /* the name consumers read */
    int fused; /* a fused Relu/Clip reads it: no pair */
} act;

typedef struct slot { /* an initializer input of a quantized node that is replaced */
    int node, input;
    int axis;    /* weights: per-channel axis, -1 per tensor */
    int bias_of; /* bias: the slot of its weights, else -1 */
    int x_act;   /* bias: the activation of the node's input */
    int channels;
    float *scales; /* weights: one per channel (or one) */
    char *out;     /* the DequantizeLinear output the node reads */
    char *orig;    /* the float initializer it replaces */
} slot;

typedef struct qctx {
    const char *path;
    Onnx__ModelProto *m;
    Onnx__GraphProto *g;
    const tether_onnx_quantize_options *o;
    tether_ir_graph gf;
    int gf_open;
    int *kind, *quant; /* per node */
    act *acts;
    int nacts;
    slot *slots;
    int nslots;
    char **names; /* every name in use (hash set, open addressing) */
    size_t nnames_cap;
    Onnx__NodeProto **out_nodes;
    size_t nout_nodes, cap_nodes;
    int subgraphs; /* some node holds a graph attribute: keep every float initializer */
} qctx;

/* Plans every node (c->kind, c->quant, c->acts, c->slots); c->gf must be loaded. */
void tq_plan(qctx *c);
/* Names every pair, writes the weights, biases and pairs, and replaces the node list; drops the
 * float initializers no one reads any more. r: the weight byte counts. */
int tq_rewrite(qctx *c, tether_onnx_quantize_result *r);
/* Adds a name in use (the model's names, before the plan's new ones). */
int tq_name_add(qctx *c, const char *s);
#endif

#endif
