/*
 * tether compiler: custom operators, the registry file (`--custom-ops ops.json`) that binds an
 * operator a model names (ONNX domain + op_type) to the user's own kernels, and the resource
 * layout contract those kernels are written against. Schema and contract: docs/custom-ops.md.
 *
 * What must stay true: a registry is checked whole when it is loaded (every field, every source
 * file read, every shape and work-size expression parsed) and is read-only afterwards; a model
 * that uses it (tether_model_load_options.custom_ops, then tether_ir_graph.custom) keeps a
 * pointer to it, so the registry must outlive every graph loaded with it. Nothing is written to
 * disk by loading.
 */
#ifndef TETHER_CUSTOM_OPS_H
#define TETHER_CUSTOM_OPS_H

#include <stdint.h>

#include "tether/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TETHER_CUSTOM_MAX_OUTPUTS 1 /* one output per custom operator */
#define TETHER_CUSTOM_MAX_EXPRS   8 /* shape rule: one expression per dimension */

typedef enum tether_custom_kind {
    TETHER_CUSTOM_BUFFER = 0, /* dense scalar array, channels in the shape */
    TETHER_CUSTOM_IMAGE,      /* packed 2D image: [H, W, C] or [1, H, W, C], C in {1, 2, 4} */
} tether_custom_kind;

typedef enum tether_custom_layout {
    TETHER_CUSTOM_NCHW = 0, /* the graph's own layout: no permute */
    TETHER_CUSTOM_NHWC,     /* channels last: permutes are inserted around the node */
} tether_custom_layout;

typedef struct tether_custom_resource {
    char name[64];
    tether_custom_kind kind;
    tether_custom_layout layout;
    DLDataType dtype; /* float32 only for now: the IR's element type */
    /* outputs only: the shape rule, one expression per dimension of the output in its declared
     * layout (docs/custom-ops.md: integers, in<i>[d], out-free, + - * / %, min, max, ceil_div) */
    int nshape;
    char *shape[TETHER_CUSTOM_MAX_EXPRS];
} tether_custom_resource;

typedef struct tether_custom_impl {
    int present;
    char *source; /* path as given in the registry */
    char *file;   /* base name used in #line directives and messages */
    char *text;   /* the source's bytes (NUL-terminated) */
    char *entry;  /* kernel (OpenCL) or function (C) name: a C identifier */
} tether_custom_impl;

typedef struct tether_custom_op {
    char *domain; /* "" = the default ONNX domain is not allowed: custom ops have a domain */
    char *name;
    tether_custom_impl opencl, c, mcu; /* mcu: optional, else c serves MCU targets too */
    int ninputs, noutputs;
    tether_custom_resource inputs[TETHER_IR_MAX_INPUTS];
    tether_custom_resource outputs[TETHER_CUSTOM_MAX_OUTPUTS];
    int nwork; /* OpenCL global work size, 1..3 expressions over in<i>[d] and out0[d] */
    char *work[3];
} tether_custom_op;

typedef struct tether_custom_registry {
    char *path;
    tether_custom_op *ops;
    int nops;
} tether_custom_registry;

/* Loads and checks a registry file; *out is malloc'd (tether_custom_registry_free). Errors name
 * the file, the operator and the field ("ops.json: op 'ex::Swish4' output 0: shape rule
 * 'in0[1] +': expected a number, in<i>[d] or '(' at the end"). */
int tether_custom_registry_load(const char *path, tether_custom_registry **out);
void tether_custom_registry_free(tether_custom_registry *r);

/* The operator domain::name, or NULL. */
const tether_custom_op *tether_custom_registry_find(const tether_custom_registry *r,
                                                    const char *domain, const char *name);

/* "dom::A, dom::B" (for messages); writes "" for an empty or NULL registry. */
void tether_custom_registry_list(const tether_custom_registry *r, char *buf, size_t n);

/* The registry a model load uses when its options name none (the CLI's --custom-ops, set once
 * at start-up; NULL = none). Not thread-safe: set it before loading. */
void tether_custom_ops_set_default(const tether_custom_registry *r);
const tether_custom_registry *tether_custom_ops_default(void);

/* The operator a CUSTOM node of g runs (its attrs.ints[0] indexes g->custom), or NULL. */
const tether_custom_op *tether_custom_op_of(const tether_ir_graph *g, const tether_ir_node *n);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_CUSTOM_OPS_H */
