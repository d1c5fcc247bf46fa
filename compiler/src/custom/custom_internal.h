/*
 * Custom operators inside the compiler (not installed): the shape/work-size expression evaluator
 * (shape_expr.c), the contract checks and shape rule of a CUSTOM node (contract.c), the host
 * reference built from the C implementation (reference.c) and the C prelude every user C source
 * is compiled after. Public side: tether/custom_ops.h; docs/custom-ops.md.
 *
 * What must stay true: the prelude is the one definition of tether_custom_tensor that generated
 * modules and the host reference compile user C against (the same layout everywhere); every
 * check here reports the operator, the resource and the rule it breaks.
 */
#ifndef TETHER_CUSTOM_INTERNAL_H
#define TETHER_CUSTOM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tether/custom_ops.h"
#include "tether/ir.h"

/* What expressions may refer to: in<i>[d] (and out<i>[d] for work sizes). syntax_only: every
 * reference reads 1 (load-time parsing). */
typedef struct tether__cx_env {
    int syntax_only;
    int nin;
    const tether_ir_tensor *const *in;
    int nout;
    const tether_ir_tensor *const *out;
} tether__cx_env;

/* Evaluates one expression; 0 and *value, or TETHER_ERR_INVALID_ARG with the reason in err. */
int tether__custom_expr_eval(const char *text, const tether__cx_env *env, int64_t *value, char *err,
                             size_t errn);

/* The C text every user C source is compiled after (the tether_custom_tensor type and the
 * entry's prototype style); ends with a newline. */
extern const char tether__custom_c_prelude[];

/* The shape rule of a CUSTOM node (shapes.c's case): its registry entry, arity, declared element
 * types, the image contract of every image resource (input and output), the output shape from
 * the shape rule and the OpenCL work size evaluating to positive sizes. Messages name the node,
 * the operator and the rule. */
int tether__custom_infer_shape(const tether_ir_graph *g, const tether_ir_node *n, int64_t *os,
                               int *ond);
/* Whether some CUSTOM node of g declares an image resource; the channels of tensor t when it is
 * an image resource of a CUSTOM node (its last extent), else 0. */
int tether__custom_graph_has_images(const tether_ir_graph *g);
int tether__custom_image_channels(const tether_ir_graph *g, int t);
/* The OpenCL global size of a CUSTOM node of an inferred graph (*nwork sizes). */
int tether__custom_work_size(const tether_ir_graph *g, const tether_ir_node *n, int64_t *work,
                             int *nwork);

/* The registry entry's C implementation for a target (mcu: the "mcu" one when present), or an
 * error naming the operator and the backend. */
int tether__custom_c_impl(const tether_custom_op *op, int mcu, const tether_custom_impl **out);

/* Runs a CUSTOM node on the host through the C implementation, built once per registry entry
 * with the system C compiler into a shared object and loaded (reference.c). */
int tether__custom_reference_run(const tether_ir_graph *g, const tether_ir_node *n,
                                 const float *const *in, float *out);

#endif
