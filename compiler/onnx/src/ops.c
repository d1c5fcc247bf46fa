/*
 * ONNX operators: the supported table (opsets, attributes, constant inputs) and their conversion
 * into IR operators. The host evaluation of shape computations is host_eval.c's.
 *
 * What must stay true: every attribute default is the ONNX default of the operator version in
 * use (docs/onnx.md lists them); an attribute value the IR cannot express is an error naming it,
 * never approximated; the table, the allowed-attribute lists and docs/onnx.md agree; every
 * operator of the table has its input/output counts (arities[], from the ONNX schemas), checked
 * by the importer before any converter runs, so converters read inputs and outputs below the
 * minimum without looking.
 */
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/error.h"

/* ---- support checks -------------------------------------------------------------------- */

static const char *check_auto_pad(timport *c, const Onnx__NodeProto *n, char *buf, size_t size) {
    (void)c;
    const Onnx__AttributeProto *a = tonnx_attr(n, "auto_pad");
    if (!a) {
        return NULL;
    }
    char v[32];
    snprintf(v, sizeof v, "%.*s", (int)(a->s.len < 31 ? a->s.len : 31),
             a->s.len ? (const char *)a->s.data : "");
    if (strcmp(v, "NOTSET") && strcmp(v, "SAME_UPPER") && strcmp(v, "SAME_LOWER") &&
        strcmp(v, "VALID")) {
        snprintf(buf, size, "auto_pad '%s'", v);
        return buf;
    }
    return NULL;
}

/* Windows of 1 to 3 spatial dimensions: the list attributes agree in length when present. */
static const char *check_window(timport *c, const Onnx__NodeProto *n, char *buf, size_t size,
                                bool kernel_required) {
    static const char *const names[] = {"kernel_shape", "strides", "dilations", "pads",
                                        "output_padding"};
    size_t nsp = 0;
    for (int i = 0; i < 5; i++) {
        const Onnx__AttributeProto *a = tonnx_attr(n, names[i]);
        if (!a && i == 0 && kernel_required) {
            snprintf(buf, size, "no kernel_shape");
            return buf;
        }
        if (!a) {
            continue;
        }
        size_t d = i == 3 ? a->n_ints / 2 : a->n_ints;
        if (d < 1 || d > 3 || (i == 3 && a->n_ints % 2) || (nsp && d != nsp)) {
            snprintf(buf, size, "window attribute '%s' with %zu entries (1 to 3 dimensions)",
                     names[i], a->n_ints);
            return buf;
        }
        nsp = d;
    }
    return check_auto_pad(c, n, buf, size);
}

static const char *check_conv(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                              size_t size) {
    (void)node;
    return check_window(c, n, buf, size, false);
}

static const char *check_lp_pool(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                                 size_t size) {
    const Onnx__AttributeProto *cm = tonnx_attr(n, "ceil_mode");
    if (cm && cm->i != 0) {
        return "ceil_mode 1";
    }
    (void)node;
    return check_window(c, n, buf, size, true);
}

static const char *check_pool(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                              size_t size) {
    (void)node; /* MaxPool's Indices output: max_pool_arg (convert_vision.c) */
    return check_window(c, n, buf, size, true);
}

static const char *string_attr(const Onnx__NodeProto *n, const char *name, const char *def, char *v,
                               size_t size) {
    const Onnx__AttributeProto *a = tonnx_attr(n, name);
    if (!a) {
        snprintf(v, size, "%s", def);
    } else {
        snprintf(v, size, "%.*s", (int)(a->s.len < size - 1 ? a->s.len : size - 1),
                 a->s.len ? (const char *)a->s.data : "");
    }
    return v;
}

static const char *check_pad(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                             size_t size) {
    (void)c;
    (void)node;
    char v[32];
    string_attr(n, "mode", "constant", v, sizeof v);
    if (strcmp(v, "constant") && strcmp(v, "edge") && strcmp(v, "reflect") && strcmp(v, "wrap")) {
        snprintf(buf, size, "mode '%s' (constant, edge, reflect or wrap)", v);
        return buf;
    }
    return NULL;
}

static const char *check_resize(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                                size_t size) {
    (void)node;
    char mode[32], kar[40];
    string_attr(n, "mode", "nearest", mode, sizeof mode);
    if (strcmp(mode, "nearest") && strcmp(mode, "linear") && strcmp(mode, "cubic") &&
        strcmp(mode, "bilinear")) {
        snprintf(buf, size, "mode '%s'", mode);
        return buf;
    }
    static const char *const v18[] = {"antialias", "axes", "keep_aspect_ratio_policy"};
    for (int i = 0; i < 3 && c->opset < 18; i++) {
        if (tonnx_attr(n, v18[i])) {
            snprintf(buf, size, "attribute '%s' (opset 18 and later)", v18[i]);
            return buf;
        }
    }
    string_attr(n, "keep_aspect_ratio_policy", "stretch", kar, sizeof kar);
    if (strcmp(kar, "stretch") != 0) {
        snprintf(buf, size, "keep_aspect_ratio_policy '%s' (only stretch)", kar);
        return buf;
    }
    return NULL;
}

static const char *check_batch_norm(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                                    size_t size) {
    (void)buf;
    (void)size;
    const Onnx__AttributeProto *tm = tonnx_attr(n, "training_mode");
    const Onnx__AttributeProto *sp = tonnx_attr(n, "spatial");
    if (tm && tm->i != 0 && c->opset < 14) {
        return "training_mode 1";
    }
    if (sp && sp->i != 1) {
        return "spatial 0";
    }
    /* training_mode 1 (opset 14+) gives the running mean/var (outputs 1, 2: convert_misc.c) */
    for (int i = tm && tm->i != 0 ? 3 : 1; i < 5; i++) {
        if (tonnx_output_used(c, node, i)) {
            return "the training outputs (running mean/var)";
        }
    }
    return NULL;
}

static const char *check_layer_norm(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                                    size_t size) {
    (void)c;
    (void)node;
    const Onnx__AttributeProto *st = tonnx_attr(n, "stash_type");
    if (st && st->i != 1) {
        snprintf(buf, size, "stash_type %lld (only 1, float32)", (long long)st->i);
        return buf;
    }
    return NULL;
}

static const char *check_dropout(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                                 size_t size) {
    (void)node;
    /* the mask output is all true in inference and in training with ratio 0 (convert_misc.c) */
    if (has_input(n, 2)) {
        int vi = tonnx_find(c, S(n->input[2]));
        const hconst *k = vi >= 0 ? c->v[vi].k : NULL;
        if (!k || k->count != 1) {
            return "training_mode computed at run time (it must be known at import time)";
        }
        if ((k->is_int ? ((const int64_t *)k->data)[0] : ((const float *)k->data)[0]) != 0) {
            int ri = has_input(n, 1) ? tonnx_find(c, S(n->input[1])) : -1;
            const hconst *r = ri >= 0 ? c->v[ri].k : NULL;
            double ratio = !r              ? 0.5
                           : r->count != 1 ? -1
                           : r->is_int     ? (double)((const int64_t *)r->data)[0]
                                           : (double)((const float *)r->data)[0];
            if (ri >= 0 && !r) {
                return "training_mode 1 with a ratio computed at run time";
            }
            if (ratio != 0) {
                snprintf(buf, size,
                         "training_mode 1 with ratio %g: a random mask cannot be reproduced "
                         "(the reference draws it from numpy's generator; only ratio 0, where "
                         "the mask is all true, is deterministic)",
                         ratio);
                return buf;
            }
        }
    }
    return NULL;
}

static const char *check_constant(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                                  size_t size) {
    (void)c;
    (void)node;
    static const char *const ok[] = {"value", "value_float", "value_floats", "value_int",
                                     "value_ints"};
    if (n->n_attribute != 1) {
        return "needs exactly one value attribute";
    }
    const char *name = S(n->attribute[0]->name);
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        if (strcmp(name, ok[i]) == 0) {
            return NULL;
        }
    }
    snprintf(buf, size, "attribute '%s'", name);
    return buf;
}

static const char *check_cast(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                              size_t size) {
    (void)node;
    const Onnx__AttributeProto *to = tonnx_attr(n, "to");
    int vi = n->n_input ? tonnx_find(c, S(n->input[0])) : -1;
    if (!to) {
        return "no 'to' attribute";
    }
    DLDataType dt;
    if (vi >= 0 && !c->v[vi].is_const && !tonnx_onnx_dtype((int32_t)to->i, &dt)) {
        char tn[32];
        snprintf(buf, size, "cast to %s at run time",
                 tonnx_dtype_name((int32_t)to->i, tn, sizeof tn));
        return buf;
    }
    return NULL;
}

/* Range: the output's extent depends on the input values, so it is folded at import time and
 * refused on run-time inputs (NonZero, Compress, Unique and NonMaxSuppression have bounded
 * data-dependent outputs instead: convert_dynamic.c). */
static const char *check_data_dependent(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                                        size_t size) {
    (void)node;
    for (size_t j = 0; j < n->n_input; j++) {
        int vi = tonnx_find(c, S(n->input[j]));
        if (vi >= 0 && !c->v[vi].is_const) {
            snprintf(buf, size,
                     "input '%s' is computed at run time, and the output's size depends on its "
                     "values (a compiled module's outputs have fixed shapes; only constant "
                     "inputs, folded at import time)",
                     S(n->input[j]));
            return buf;
        }
    }
    return NULL;
}

/* HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix: the output's size (and values)
 * come from the inputs, which must be constants (convert_signal.c). */
static const char *check_const_size(timport *c, const Onnx__NodeProto *n, int node, char *buf,
                                    size_t size) {
    (void)node;
    for (size_t j = 0; j < n->n_input; j++) {
        int vi = tonnx_find(c, S(n->input[j]));
        if (vi >= 0 && !c->v[vi].is_const) {
            snprintf(buf, size, "input '%s' is a run-time value (the output's size depends on it)",
                     S(n->input[j]));
            return buf;
        }
    }
    return NULL;
}

/* ---- the table ------------------------------------------------------------------------- */

#define MAXV TETHER_ONNX_OPSET_MAX

static const op_def ops[] = {
    {"And", 7, MAXV, "and", "", false, false, tonnx_cv_binary, NULL},
    {"BitShift", 11, MAXV, "bitshift_left, bitshift_right", "direction", false, false,
     tonnx_cv_binary, NULL},
    {"Equal", 7, MAXV, "equal", "", false, false, tonnx_cv_binary, NULL},
    {"Greater", 7, MAXV, "greater", "", false, false, tonnx_cv_binary, NULL},
    {"GreaterOrEqual", 12, MAXV, "greater_equal", "", false, false, tonnx_cv_binary, NULL},
    {"IsInf", 10, MAXV, "isinf", "detect_negative,detect_positive", false, false, tonnx_cv_unary,
     NULL},
    {"IsNaN", 9, MAXV, "isnan", "", false, false, tonnx_cv_unary, NULL},
    {"Less", 7, MAXV, "less", "", false, false, tonnx_cv_binary, NULL},
    {"LessOrEqual", 12, MAXV, "less_equal", "", false, false, tonnx_cv_binary, NULL},
    {"Max", 8, MAXV, "max (a chain)", "", false, false, tonnx_cv_variadic, NULL},
    {"Min", 8, MAXV, "min (a chain)", "", false, false, tonnx_cv_variadic, NULL},
    {"Mod", 10, MAXV, "mod, fmod", "fmod", false, false, tonnx_cv_binary, NULL},
    {"Not", 1, MAXV, "not", "", false, false, tonnx_cv_unary, NULL},
    {"Or", 7, MAXV, "or", "", false, false, tonnx_cv_binary, NULL},
    {"Sign", 9, MAXV, "sign", "", false, false, tonnx_cv_unary, NULL},
    {"Sum", 8, MAXV, "add (a chain)", "", false, false, tonnx_cv_variadic, NULL},
    {"Where", 9, MAXV, "where", "", false, false, tonnx_cv_variadic, NULL},
    {"Xor", 7, MAXV, "xor", "", false, false, tonnx_cv_binary, NULL},
    /* indexing, data-dependent and shape operators (convert_data.c, host_eval.c) */
    {"ArgMax", 1, MAXV, "arg_max", "axis,keepdims,select_last_index", false, false, tonnx_cv_arg,
     NULL},
    {"ArgMin", 1, MAXV, "arg_min", "axis,keepdims,select_last_index", false, false, tonnx_cv_arg,
     NULL},
    {"CastLike", 15, MAXV, "cast", "", false, false, tonnx_cv_castlike, NULL},
    {"CumSum", 11, MAXV, "cumsum", "exclusive,reverse", false, false, tonnx_cv_cumsum, NULL},
    {"Einsum", 12, MAXV, "einsum", "equation", false, false, tonnx_cv_einsum, NULL},
    {"Expand", 8, MAXV, "tile", "", false, false, tonnx_cv_tile, NULL},
    {"GatherElements", 11, MAXV, "gather_elements", "axis", false, false, tonnx_cv_gather, NULL},
    {"GatherND", 11, MAXV, "gather_nd", "batch_dims", false, false, tonnx_cv_gather, NULL},
    {"Mean", 8, MAXV, "add (a chain), div", "", false, false, tonnx_cv_mean, NULL},
    {"NonZero", 9, MAXV, "nonzero (a bounded, data-dependent size; folded on constants)", "", true,
     false, tonnx_cv_nonzero, NULL},
    {"OneHot", 9, MAXV, "one_hot", "axis", false, false, tonnx_cv_onehot, NULL},
    {"Range", 11, MAXV, "(constant inputs only: the output's size depends on the values)", "", true,
     true, NULL, check_data_dependent},
    {"Scatter", 9, 10, "scatter_elements", "axis", false, false, tonnx_cv_scatter, NULL},
    {"ScatterElements", 11, MAXV, "scatter_elements", "axis,reduction", false, false,
     tonnx_cv_scatter, NULL},
    {"ScatterND", 11, MAXV, "scatter_nd", "reduction", false, false, tonnx_cv_scatter, NULL},
    {"Size", 1, MAXV, "(constant: the input's element count)", "", true, true, NULL, NULL},
    {"Split", 2, MAXV, "slice (one per output)", "axis,num_outputs,split", false, false,
     tonnx_cv_split, NULL},
    {"Tile", 6, MAXV, "tile", "", false, false, tonnx_cv_tile, NULL},
    {"TopK", 1, MAXV, "topk (values and indices: one node each)", "axis,k,largest,sorted", false,
     false, tonnx_cv_topk, NULL},
    {"Trilu", 14, MAXV, "trilu", "upper", false, false, tonnx_cv_trilu, NULL},
    {"Abs", 6, MAXV, "abs", "", true, false, tonnx_cv_unary, NULL},
    /* data-dependent output sizes (convert_dynamic.c, wt27h) */
    {"Compress", 9, MAXV, "compress", "axis", false, false, tonnx_cv_compress, NULL},
    {"Unique", 11, MAXV, "unique (indices, then one node per other output)", "axis,sorted", false,
     false, tonnx_cv_unique, NULL},
    {"NonMaxSuppression", 10, MAXV, "nms", "center_point_box", false, false, tonnx_cv_nms, NULL},
    {"TfIdfVectorizer", 9, MAXV, "tfidf",
     "max_gram_length,max_skip_count,min_gram_length,mode,ngram_counts,ngram_indexes,pool_int64s,"
     "pool_strings,weights",
     false, false, tonnx_cv_tfidf, NULL},
    {"Abs", 6, MAXV, "abs", "", false, false, tonnx_cv_unary, NULL},
    {"Add", 7, MAXV, "add", "", true, false, tonnx_cv_binary, NULL},
    {"AveragePool", 7, MAXV, "avg_pool (1-D: on [N,C,1,L]; 3-D: two avg_pools)",
     "auto_pad,ceil_mode,count_include_pad,kernel_shape,pads,strides", false, false, tonnx_cv_pool,
     check_pool},
    {"BatchNormalization", 7, MAXV, "batch_norm", "epsilon,momentum,spatial,training_mode", false,
     false, tonnx_cv_batch_norm, check_batch_norm},
    {"Cast", 6, MAXV, "cast", "to", true, false, tonnx_cv_cast, check_cast},
    {"Clip", 6, MAXV, "clip (integers: max, min)", "min,max", false, false, tonnx_cv_clip_typed,
     NULL},
    {"Concat", 4, MAXV, "concat", "axis", true, false, tonnx_cv_concat, NULL},
    {"Constant", 1, MAXV, "(constant)",
     "value,value_float,value_floats,value_int,value_ints,value_string,value_strings,sparse_value",
     true, true, NULL, check_constant},
    {"ConstantOfShape", 9, MAXV, "(constant)", "value", true, true, NULL, NULL},
    {"Conv", 1, MAXV, "conv2d (1-D: on [N,C,1,L]), conv_nd (3-D)",
     "auto_pad,dilations,group,kernel_shape,pads,strides", false, false, tonnx_cv_conv, check_conv},
    {"ConvTranspose", 1, MAXV, "conv_transpose",
     "auto_pad,dilations,group,kernel_shape,output_padding,output_shape,pads,strides", false, false,
     tonnx_cv_conv_transpose, check_conv},
    {"DepthToSpace", 1, MAXV, "reshape, transpose, reshape", "blocksize,mode", false, false,
     tonnx_cv_depth_space, NULL},
    {"Div", 7, MAXV, "div", "", true, false, tonnx_cv_binary, NULL},
    {"Dropout", 7, MAXV, "(dropped)", "ratio,seed", true, false, tonnx_cv_alias, check_dropout},
    {"Exp", 6, MAXV, "exp", "", false, false, tonnx_cv_unary, NULL},
    {"Flatten", 1, MAXV, "flatten", "axis", true, false, tonnx_cv_flatten, NULL},
    {"Gather", 1, MAXV, "gather", "axis", true, false, tonnx_cv_gather, NULL},
    {"Gemm", 7, MAXV, "dense", "alpha,beta,transA,transB", false, false, tonnx_cv_gemm, NULL},
    {"GlobalAveragePool", 1, MAXV, "global_avg_pool", "", false, false, tonnx_cv_global_pool, NULL},
    {"GlobalLpPool", 2, MAXV, "pow, global_avg_pool, mul, pow", "p", false, false,
     tonnx_cv_global_lp_pool, NULL},
    {"GlobalMaxPool", 1, MAXV, "global_max_pool", "", false, false, tonnx_cv_global_pool, NULL},
    {"HardSigmoid", 6, MAXV, "hard_sigmoid", "alpha,beta", false, false, tonnx_cv_unary, NULL},
    {"HardSwish", 14, MAXV, "hard_swish", "", false, false, tonnx_cv_unary, NULL},
    {"Hardmax", 1, MAXV, "hardmax (before opset 13: + flatten, reshape)", "axis", false, false,
     tonnx_cv_softmax, NULL},
    {"Identity", 1, MAXV, "(dropped)", "", true, false, tonnx_cv_alias, NULL},
    {"If", 1, MAXV, "(inlined: the taken branch, or both and where)", "then_branch,else_branch",
     false, false, tonnx_cv_if, NULL},
    {"Loop", 1, MAXV, "(unrolled)", "body", false, false, tonnx_cv_loop, NULL},
    {"Scan", 8, MAXV, "(unrolled; opset 8: per batch element)",
     "body,num_scan_inputs,scan_input_axes,scan_input_directions,scan_output_axes,"
     "scan_output_directions,directions",
     false, false, tonnx_cv_scan, NULL},
    {"InstanceNormalization", 6, MAXV, "layer_norm, mul, add (+ reshapes)", "epsilon", false, false,
     tonnx_cv_instance_norm, NULL},
    {"LRN", 1, MAXV, "mul, avg_pool, mul, add, pow, div (+ reshapes)", "alpha,beta,bias,size",
     false, false, tonnx_cv_lrn, NULL},
    {"LayerNormalization", 17, MAXV,
     "layer_norm (+ reduce_mean, sub, mul, add, sqrt, div for "
     "Mean/InvStdDev)",
     "axis,epsilon,stash_type", false, false, tonnx_cv_layer_norm, check_layer_norm},
    {"LeakyRelu", 6, MAXV, "leaky_relu", "alpha", false, false, tonnx_cv_unary, NULL},
    {"Log", 6, MAXV, "log", "", false, false, tonnx_cv_unary, NULL},
    {"LogSoftmax", 1, MAXV, "log_softmax (before opset 13: + flatten, reshape)", "axis", false,
     false, tonnx_cv_softmax, NULL},
    {"LpPool", 2, MAXV, "pow, avg_pool, mul, pow",
     "auto_pad,ceil_mode,dilations,kernel_shape,p,pads,strides", false, false, tonnx_cv_lp_pool,
     check_lp_pool},
    {"MatMul", 1, MAXV, "matmul", "", false, false, tonnx_cv_matmul, NULL},
    {"MaxPool", 1, MAXV,
     "max_pool (1-D: on [N,C,1,L]; 3-D: two max_pools); max_pool_arg (Indices, integer types)",
     "auto_pad,ceil_mode,dilations,kernel_shape,pads,storage_order,strides", false, false,
     tonnx_cv_max_pool, check_pool},
    {"MeanVarianceNormalization", 9, MAXV, "reduce_mean, sub, mul, sqrt, add, div", "axes", false,
     false, tonnx_cv_mvn, NULL},
    {"Mul", 7, MAXV, "mul", "", true, false, tonnx_cv_binary, NULL},
    {"Neg", 6, MAXV, "neg", "", true, false, tonnx_cv_unary, NULL},
    {"PRelu", 7, MAXV, "prelu", "", false, false, tonnx_cv_prelu, NULL},
    {"Pad", 2, MAXV, "pad", "mode,pads,value", false, false, tonnx_cv_pad, check_pad},
    {"Pow", 7, MAXV, "pow (+ casts for mixed types)", "", false, false, tonnx_cv_pow, NULL},
    {"ReduceL1", 1, MAXV, "reduce_l1", "axes,keepdims,noop_with_empty_axes", false, false,
     tonnx_cv_reduce, NULL},
    {"ReduceL2", 1, MAXV, "reduce_l2", "axes,keepdims,noop_with_empty_axes", false, false,
     tonnx_cv_reduce, NULL},
    {"ReduceLogSum", 1, MAXV, "reduce_log_sum", "axes,keepdims,noop_with_empty_axes", false, false,
     tonnx_cv_reduce, NULL},
    {"ReduceLogSumExp", 1, MAXV, "reduce_log_sum_exp", "axes,keepdims,noop_with_empty_axes", false,
     false, tonnx_cv_reduce, NULL},
    {"ReduceMax", 1, MAXV, "reduce_max", "axes,keepdims,noop_with_empty_axes", false, false,
     tonnx_cv_reduce, NULL},
    {"ReduceMean", 1, MAXV, "reduce_mean", "axes,keepdims,noop_with_empty_axes", false, false,
     tonnx_cv_reduce, NULL},
    {"ReduceMin", 1, MAXV, "reduce_min", "axes,keepdims,noop_with_empty_axes", false, false,
     tonnx_cv_reduce, NULL},
    {"ReduceProd", 1, MAXV, "reduce_prod", "axes,keepdims,noop_with_empty_axes", false, false,
     tonnx_cv_reduce, NULL},
    {"ReduceSum", 1, MAXV, "reduce_sum", "axes,keepdims,noop_with_empty_axes", false, false,
     tonnx_cv_reduce, NULL},
    {"ReduceSumSquare", 1, MAXV, "reduce_sum_square", "axes,keepdims,noop_with_empty_axes", false,
     false, tonnx_cv_reduce, NULL},
    {"Relu", 6, MAXV, "relu", "", true, false, tonnx_cv_unary, NULL},
    {"Reshape", 5, MAXV, "reshape", "allowzero", true, false, tonnx_cv_reshape, NULL},
    {"Resize", 10, MAXV, "resize_nearest (integer nearest on H, W), else matmuls per axis",
     "antialias,axes,coordinate_transformation_mode,cubic_coeff_a,exclude_outside,"
     "extrapolation_value,keep_aspect_ratio_policy,mode,nearest_mode",
     false, false, tonnx_cv_resize, check_resize},
    {"Shape", 1, MAXV, "(constant: the input's shape)", "start,end", true, true, NULL, NULL},
    {"Sigmoid", 6, MAXV, "sigmoid", "", false, false, tonnx_cv_unary, NULL},
    {"Slice", 1, MAXV, "slice (starts, ends, axes, steps constant)", "starts,ends,axes", true,
     false, tonnx_cv_slice, NULL},
    {"Softmax", 1, MAXV, "softmax (before opset 13: + flatten, reshape)", "axis", false, false,
     tonnx_cv_softmax, NULL},
    {"SpaceToDepth", 1, MAXV, "reshape, transpose, reshape", "blocksize", false, false,
     tonnx_cv_depth_space, NULL},
    {"Sqrt", 6, MAXV, "sqrt", "", false, false, tonnx_cv_unary, NULL},
    {"Squeeze", 1, MAXV, "squeeze", "axes", true, false, tonnx_cv_squeeze, NULL},
    {"Sub", 7, MAXV, "sub", "", true, false, tonnx_cv_binary, NULL},
    {"Tanh", 6, MAXV, "tanh", "", false, false, tonnx_cv_unary, NULL},
    {"Transpose", 1, MAXV, "transpose", "perm", false, false, tonnx_cv_transpose, NULL},
    {"Unsqueeze", 1, MAXV, "unsqueeze", "axes", true, false, tonnx_cv_squeeze, NULL},
    {"Upsample", 7, 9, "resize_nearest, or matmuls per axis", "mode,scales", false, false,
     tonnx_cv_resize, check_resize},
    /* ---- unary math and activations (issue 27, wt27b): convert_math.c ---- */
    {"Sin", 7, MAXV, "sin", "", false, false, tonnx_cv_math, NULL},
    {"Cos", 7, MAXV, "cos", "", false, false, tonnx_cv_math, NULL},
    {"Tan", 7, MAXV, "tan", "", false, false, tonnx_cv_math, NULL},
    {"Asin", 7, MAXV, "asin", "", false, false, tonnx_cv_math, NULL},
    {"Acos", 7, MAXV, "acos", "", false, false, tonnx_cv_math, NULL},
    {"Atan", 7, MAXV, "atan", "", false, false, tonnx_cv_math, NULL},
    {"Sinh", 9, MAXV, "sinh", "", false, false, tonnx_cv_math, NULL},
    {"Cosh", 9, MAXV, "cosh", "", false, false, tonnx_cv_math, NULL},
    {"Asinh", 9, MAXV, "asinh", "", false, false, tonnx_cv_math, NULL},
    {"Acosh", 9, MAXV, "acosh", "", false, false, tonnx_cv_math, NULL},
    {"Atanh", 9, MAXV, "atanh", "", false, false, tonnx_cv_math, NULL},
    {"Ceil", 6, MAXV, "ceil", "", true, false, tonnx_cv_math, NULL},
    {"Floor", 6, MAXV, "floor", "", true, false, tonnx_cv_math, NULL},
    {"Round", 11, MAXV, "round", "", false, false, tonnx_cv_math, NULL},
    {"Reciprocal", 6, MAXV, "reciprocal", "", false, false, tonnx_cv_math, NULL},
    {"Softplus", 1, MAXV, "softplus", "", false, false, tonnx_cv_math, NULL},
    {"Softsign", 1, MAXV, "softsign", "", false, false, tonnx_cv_math, NULL},
    {"Mish", 18, MAXV, "mish", "", false, false, tonnx_cv_math, NULL},
    {"Erf", 9, MAXV, "erf", "", false, false, tonnx_cv_math, NULL},
    {"Elu", 6, MAXV, "elu", "alpha", false, false, tonnx_cv_math, NULL},
    {"Celu", 12, MAXV, "celu", "alpha", false, false, tonnx_cv_math, NULL},
    {"ThresholdedRelu", 10, MAXV, "thresholded_relu", "alpha", false, false, tonnx_cv_math, NULL},
    {"Selu", 6, MAXV, "selu", "alpha,gamma", false, false, tonnx_cv_math, NULL},
    {"Shrink", 9, MAXV, "shrink", "bias,lambd", false, false, tonnx_cv_math, NULL},
    {"NegativeLogLikelihoodLoss", 12, MAXV, "nll_loss, nll_loss_sum, nll_loss_mean",
     "ignore_index,reduction", false, false, tonnx_cv_loss, NULL},
    {"SoftmaxCrossEntropyLoss", 12, MAXV, "log_softmax, nll_loss (_sum, _mean)",
     "ignore_index,reduction", false, false, tonnx_cv_loss, NULL},
    /* ---- end of the unary math block ---- */
    /* quantization (convert_quant.c, docs/quantization.md) */
    {"QuantizeLinear", 10, MAXV, "quantize", "axis,block_size,output_dtype,saturate,precision",
     false, false, tonnx_cv_quantize, NULL},
    {"DequantizeLinear", 10, MAXV, "dequantize", "axis,block_size", false, false,
     tonnx_cv_dequantize, NULL},
    {"DynamicQuantizeLinear", 11, MAXV, "reduce_min, reduce_max, min, max, sub, div, neg, quantize",
     "", false, false, tonnx_cv_dyn_quantize, NULL},
    {"QLinearConv", 10, MAXV, "qconv", "auto_pad,dilations,group,kernel_shape,pads,strides", false,
     false, tonnx_cv_qlinear_conv, check_conv},
    {"QLinearMatMul", 10, MAXV, "qmatmul", "", false, false, tonnx_cv_qlinear_matmul, NULL},
    {"ConvInteger", 10, MAXV, "qconv (int32 output)",
     "auto_pad,dilations,group,kernel_shape,pads,strides", false, false, tonnx_cv_conv_integer,
     check_conv},
    {"MatMulInteger", 10, MAXV, "qmatmul (int32 output)", "", false, false, tonnx_cv_matmul_integer,
     NULL},
    /* ---- vision and signal operators (issue 27, wt27f): convert_vision.c, convert_signal.c */
    {"GridSample", 16, MAXV, "grid_sample", "align_corners,mode,padding_mode", false, false,
     tonnx_cv_grid_sample, NULL},
    {"RoiAlign", 10, MAXV, "roi_align",
     "coordinate_transformation_mode,mode,output_height,output_width,sampling_ratio,spatial_scale",
     false, false, tonnx_cv_roi_align, NULL},
    {"MaxUnpool", 9, MAXV, "max_unpool", "kernel_shape,pads,strides", false, false,
     tonnx_cv_max_unpool, NULL},
    {"Det", 11, MAXV, "triangular, diag_prod", "", false, false, tonnx_cv_det, NULL},
    {"EyeLike", 9, MAXV, "(constant: from the input's shape)", "dtype,k", true, true, NULL, NULL},
    {"DFT", 17, MAXV, "dft", "axis,inverse,onesided", false, false, tonnx_cv_dft, NULL},
    {"STFT", 17, MAXV, "stft", "onesided", false, false, tonnx_cv_stft, NULL},
    {"HannWindow", 17, MAXV, "(constant: size must be a constant)", "output_datatype,periodic",
     true, true, NULL, check_const_size},
    {"HammingWindow", 17, MAXV, "(constant: size must be a constant)", "output_datatype,periodic",
     true, true, NULL, check_const_size},
    {"BlackmanWindow", 17, MAXV, "(constant: size must be a constant)", "output_datatype,periodic",
     true, true, NULL, check_const_size},
    {"MelWeightMatrix", 17, MAXV, "(constant: every input must be a constant)", "output_datatype",
     true, true, NULL, check_const_size},
    /* ---- end of the vision and signal operators ---- */
    /* recurrent layers and ReverseSequence (convert_rnn.c; issue 27, wt27e) */
    {"RNN", 7, MAXV, "rnn (+ slice, squeeze; transposes for layout 1)",
     "activation_alpha,activation_beta,activations,clip,direction,hidden_size,layout", false, false,
     tonnx_cv_recurrent, NULL},
    {"GRU", 7, MAXV, "gru (+ slice, squeeze; transposes for layout 1)",
     "activation_alpha,activation_beta,activations,clip,direction,hidden_size,layout,"
     "linear_before_reset",
     false, false, tonnx_cv_recurrent, NULL},
    {"LSTM", 7, MAXV, "lstm (+ slice, squeeze; transposes for layout 1)",
     "activation_alpha,activation_beta,activations,clip,direction,hidden_size,layout,"
     "input_forget",
     false, false, tonnx_cv_recurrent, NULL},
    {"ReverseSequence", 10, MAXV, "reverse_sequence", "batch_axis,time_axis", false, false,
     tonnx_cv_reverse_sequence, NULL},
};

/* How many inputs and outputs each operator of ops[] takes, from the ONNX operator schemas of the
 * versions the importer handles: for each operator, its entries in opset order; the last entry
 * whose `since` is at most the model's opset applies. Optional inputs and outputs count in the
 * maximum only; in_max -1: variadic (at least in_min). Every operator of ops[] has an entry
 * (tonnx_op_arity fails closed otherwise). */
typedef struct arity_def {
    const char *op_type;
    int since;
    int in_min, in_max, out_min, out_max;
} arity_def;

static const arity_def arities[] = {
    {"And", 1, 2, 2, 1, 1},
    {"BitShift", 1, 2, 2, 1, 1},
    {"Equal", 1, 2, 2, 1, 1},
    {"Greater", 1, 2, 2, 1, 1},
    {"GreaterOrEqual", 1, 2, 2, 1, 1},
    {"IsInf", 1, 1, 1, 1, 1},
    {"IsNaN", 1, 1, 1, 1, 1},
    {"Less", 1, 2, 2, 1, 1},
    {"LessOrEqual", 1, 2, 2, 1, 1},
    {"Max", 1, 1, -1, 1, 1},
    {"Min", 1, 1, -1, 1, 1},
    {"Mod", 1, 2, 2, 1, 1},
    {"Not", 1, 1, 1, 1, 1},
    {"Or", 1, 2, 2, 1, 1},
    {"Sign", 1, 1, 1, 1, 1},
    {"Sum", 1, 1, -1, 1, 1},
    {"Where", 1, 3, 3, 1, 1},
    {"Xor", 1, 2, 2, 1, 1},
    {"ArgMax", 1, 1, 1, 1, 1},
    {"ArgMin", 1, 1, 1, 1, 1},
    {"CastLike", 15, 2, 2, 1, 1},
    {"CumSum", 11, 2, 2, 1, 1}, /* x, axis */
    {"Einsum", 12, 1, -1, 1, 1},
    {"Expand", 8, 2, 2, 1, 1},
    {"GatherElements", 11, 2, 2, 1, 1},
    {"GatherND", 11, 2, 2, 1, 1},
    {"Mean", 1, 1, -1, 1, 1},
    {"NonZero", 9, 1, 1, 1, 1},
    {"OneHot", 9, 3, 3, 1, 1}, /* indices, depth, values */
    {"Range", 11, 3, 3, 1, 1},
    {"Scatter", 9, 3, 3, 1, 1},
    {"ScatterElements", 11, 3, 3, 1, 1},
    {"ScatterND", 11, 3, 3, 1, 1},
    {"Size", 1, 1, 1, 1, 1},
    {"Split", 1, 1, 2, 1, -1},
    {"Split", 13, 1, 2, 1, -1}, /* input, split */
    {"Tile", 1, 2, 2, 1, 1},
    {"TopK", 1, 1, 1, 2, 2},
    {"TopK", 10, 2, 2, 2, 2}, /* X, K */
    {"Trilu", 14, 1, 2, 1, 1},
    {"Compress", 9, 2, 2, 1, 1},
    {"Unique", 11, 1, 1, 1, 4},            /* Y, indices, inverse_indices, counts */
    {"NonMaxSuppression", 10, 2, 5, 1, 1}, /* boxes, scores, max, iou, score thresholds */
    {"TfIdfVectorizer", 9, 1, 1, 1, 1},
    {"Abs", 1, 1, 1, 1, 1},
    {"Add", 1, 2, 2, 1, 1},
    {"AveragePool", 1, 1, 1, 1, 1},
    {"BatchNormalization", 1, 5, 5, 1, 5},  /* Y, mean, var, saved_mean, saved_var */
    {"BatchNormalization", 14, 5, 5, 1, 3}, /* Y, running_mean, running_var */
    {"Cast", 1, 1, 1, 1, 1},
    {"Clip", 1, 1, 1, 1, 1},
    {"Clip", 11, 1, 3, 1, 1}, /* input, min, max */
    {"Concat", 1, 1, -1, 1, 1},
    {"Constant", 1, 0, 0, 1, 1},
    {"ConstantOfShape", 9, 1, 1, 1, 1},
    {"Conv", 1, 2, 3, 1, 1},          /* X, W, B */
    {"ConvTranspose", 1, 2, 3, 1, 1}, /* X, W, B */
    {"DepthToSpace", 1, 1, 1, 1, 1},
    {"Div", 1, 2, 2, 1, 1},
    {"Dropout", 1, 1, 1, 1, 2},  /* output, mask */
    {"Dropout", 12, 1, 3, 1, 2}, /* data, ratio, training_mode */
    {"Exp", 1, 1, 1, 1, 1},
    {"Flatten", 1, 1, 1, 1, 1},
    {"Gather", 1, 2, 2, 1, 1},
    {"Gemm", 1, 3, 3, 1, 1},  /* A, B, C */
    {"Gemm", 11, 2, 3, 1, 1}, /* C optional */
    {"GlobalAveragePool", 1, 1, 1, 1, 1},
    {"GlobalLpPool", 1, 1, 1, 1, 1},
    {"GlobalMaxPool", 1, 1, 1, 1, 1},
    {"HardSigmoid", 1, 1, 1, 1, 1},
    {"HardSwish", 14, 1, 1, 1, 1},
    {"Hardmax", 1, 1, 1, 1, 1},
    {"Identity", 1, 1, 1, 1, 1},
    {"If", 1, 1, 1, 1, -1},
    {"Loop", 1, 0, -1, 1, -1}, /* M, cond (both optional, named ""), v_initial... */
    {"Scan", 8, 0, -1, 1, -1}, /* sequence_lens (optional, named ""), states, scan inputs */
    {"Scan", 9, 1, -1, 1, -1},
    {"InstanceNormalization", 1, 3, 3, 1, 1}, /* input, scale, B */
    {"LRN", 1, 1, 1, 1, 1},
    {"LayerNormalization", 17, 2, 3, 1, 3}, /* X, Scale, B -> Y, Mean, InvStdDev */
    {"LeakyRelu", 1, 1, 1, 1, 1},
    {"Log", 1, 1, 1, 1, 1},
    {"LogSoftmax", 1, 1, 1, 1, 1},
    {"LpPool", 1, 1, 1, 1, 1},
    {"MatMul", 1, 2, 2, 1, 1},
    {"MaxPool", 1, 1, 1, 1, 1},
    {"MaxPool", 8, 1, 1, 1, 2}, /* Y, Indices */
    {"MeanVarianceNormalization", 9, 1, 1, 1, 1},
    {"Mul", 1, 2, 2, 1, 1},
    {"Neg", 1, 1, 1, 1, 1},
    {"PRelu", 1, 2, 2, 1, 1},
    {"Pad", 1, 1, 1, 1, 1},
    {"Pad", 11, 2, 3, 1, 1}, /* data, pads, constant_value */
    {"Pad", 18, 2, 4, 1, 1}, /* ..., axes */
    {"Pow", 1, 2, 2, 1, 1},
    {"ReduceL1", 1, 1, 1, 1, 1},
    {"ReduceL1", 18, 1, 2, 1, 1}, /* data, axes */
    {"ReduceL2", 1, 1, 1, 1, 1},
    {"ReduceL2", 18, 1, 2, 1, 1},
    {"ReduceLogSum", 1, 1, 1, 1, 1},
    {"ReduceLogSum", 18, 1, 2, 1, 1},
    {"ReduceLogSumExp", 1, 1, 1, 1, 1},
    {"ReduceLogSumExp", 18, 1, 2, 1, 1},
    {"ReduceMax", 1, 1, 1, 1, 1},
    {"ReduceMax", 18, 1, 2, 1, 1},
    {"ReduceMean", 1, 1, 1, 1, 1},
    {"ReduceMean", 18, 1, 2, 1, 1}, /* data, axes */
    {"ReduceMin", 1, 1, 1, 1, 1},
    {"ReduceMin", 18, 1, 2, 1, 1},
    {"ReduceProd", 1, 1, 1, 1, 1},
    {"ReduceProd", 18, 1, 2, 1, 1},
    {"ReduceSum", 1, 1, 1, 1, 1},
    {"ReduceSum", 13, 1, 2, 1, 1}, /* data, axes */
    {"ReduceSumSquare", 1, 1, 1, 1, 1},
    {"ReduceSumSquare", 18, 1, 2, 1, 1},
    {"Relu", 1, 1, 1, 1, 1},
    {"Reshape", 5, 2, 2, 1, 1},
    {"Resize", 10, 2, 2, 1, 1}, /* X, scales */
    {"Resize", 11, 3, 4, 1, 1}, /* X, roi, scales, sizes */
    {"Resize", 13, 1, 4, 1, 1}, /* roi, scales and sizes optional */
    {"Shape", 1, 1, 1, 1, 1},
    {"Sigmoid", 1, 1, 1, 1, 1},
    {"Slice", 1, 1, 1, 1, 1},
    {"Slice", 10, 3, 5, 1, 1}, /* data, starts, ends, axes, steps */
    {"Softmax", 1, 1, 1, 1, 1},
    {"SpaceToDepth", 1, 1, 1, 1, 1},
    {"Sqrt", 1, 1, 1, 1, 1},
    {"Squeeze", 1, 1, 1, 1, 1},
    {"Squeeze", 13, 1, 2, 1, 1}, /* data, axes */
    {"Sub", 1, 2, 2, 1, 1},
    {"Tanh", 1, 1, 1, 1, 1},
    {"Transpose", 1, 1, 1, 1, 1},
    {"Unsqueeze", 1, 1, 1, 1, 1},
    {"Unsqueeze", 13, 2, 2, 1, 1}, /* data, axes (required) */
    {"Upsample", 7, 1, 1, 1, 1},
    {"Upsample", 9, 2, 2, 1, 1}, /* X, scales */
    /* ---- unary math and activations (issue 27, wt27b) ---- */
    {"Sin", 1, 1, 1, 1, 1},
    {"Cos", 1, 1, 1, 1, 1},
    {"Tan", 1, 1, 1, 1, 1},
    {"Asin", 1, 1, 1, 1, 1},
    {"Acos", 1, 1, 1, 1, 1},
    {"Atan", 1, 1, 1, 1, 1},
    {"Sinh", 1, 1, 1, 1, 1},
    {"Cosh", 1, 1, 1, 1, 1},
    {"Asinh", 1, 1, 1, 1, 1},
    {"Acosh", 1, 1, 1, 1, 1},
    {"Atanh", 1, 1, 1, 1, 1},
    {"Ceil", 1, 1, 1, 1, 1},
    {"Floor", 1, 1, 1, 1, 1},
    {"Round", 1, 1, 1, 1, 1},
    {"Reciprocal", 1, 1, 1, 1, 1},
    {"Softplus", 1, 1, 1, 1, 1},
    {"Softsign", 1, 1, 1, 1, 1},
    {"Mish", 1, 1, 1, 1, 1},
    {"Erf", 1, 1, 1, 1, 1},
    {"Elu", 1, 1, 1, 1, 1},
    {"Celu", 1, 1, 1, 1, 1},
    {"ThresholdedRelu", 1, 1, 1, 1, 1},
    {"Selu", 1, 1, 1, 1, 1},
    {"Shrink", 1, 1, 1, 1, 1},
    {"NegativeLogLikelihoodLoss", 12, 2, 3, 1, 1}, /* input, target, weight */
    {"SoftmaxCrossEntropyLoss", 12, 2, 3, 1, 2},   /* scores, labels, weights -> loss, log_prob */
    /* ---- end of the unary math block ---- */
    {"QuantizeLinear", 10, 2, 3, 1, 1},
    {"DequantizeLinear", 10, 2, 3, 1, 1},
    {"DynamicQuantizeLinear", 11, 1, 1, 3, 3},
    {"QLinearConv", 10, 8, 9, 1, 1},
    {"QLinearMatMul", 10, 8, 8, 1, 1},
    {"ConvInteger", 10, 2, 4, 1, 1},
    {"MatMulInteger", 10, 2, 4, 1, 1},
    /* ---- vision and signal operators (issue 27, wt27f) ---- */
    {"GridSample", 16, 2, 2, 1, 1},
    {"RoiAlign", 10, 3, 3, 1, 1}, /* X, rois, batch_indices */
    {"MaxUnpool", 9, 2, 2, 1, 1},
    {"MaxUnpool", 11, 2, 3, 1, 1}, /* X, I, output_shape */
    {"Det", 11, 1, 1, 1, 1},
    {"EyeLike", 9, 1, 1, 1, 1},
    {"DFT", 17, 1, 2, 1, 1},  /* input, dft_length */
    {"STFT", 17, 2, 4, 1, 1}, /* signal, frame_step, window, frame_length */
    {"HannWindow", 17, 1, 1, 1, 1},
    {"HammingWindow", 17, 1, 1, 1, 1},
    {"BlackmanWindow", 17, 1, 1, 1, 1},
    {"MelWeightMatrix", 17, 5, 5, 1, 1},
    /* recurrent layers and ReverseSequence (issue 27, wt27e) */
    {"RNN", 7, 3, 6, 0, 2},
    {"GRU", 7, 3, 6, 0, 2},
    {"LSTM", 7, 3, 8, 0, 3},
    {"ReverseSequence", 10, 2, 2, 1, 1},
};

int tonnx_op_arity(const op_def *d, int opset, tonnx_arity *out) {
    if (tonnx_custom_arity(d, out) == TETHER_OK || tonnx_ms_arity(d, out) == TETHER_OK ||
        tonnx_train_arity(d, out) == TETHER_OK) {
        return TETHER_OK;
    }
    const arity_def *found = NULL;
    int entries = 0;
    for (size_t i = 0; i < sizeof arities / sizeof *arities; i++) {
        const arity_def *e = &arities[i];
        if (strcmp(e->op_type, d->op_type) != 0) {
            continue;
        }
        entries++;
        if (e->since <= opset) {
            found = e;
        }
    }
    if (!found) {
        return TETHER_ERR_NOT_FOUND;
    }
    out->in_min = found->in_min;
    out->in_max = found->in_max;
    out->out_min = found->out_min;
    out->out_max = found->out_max;
    out->by_opset = entries > 1;
    return TETHER_OK;
}

const op_def *tonnx_op_find(const char *domain, const char *op_type) {
    if (domain && strcmp(domain, "com.microsoft") == 0 && tonnx_ms_op_find(op_type)) {
        return tonnx_ms_op_find(op_type); /* ONNX Runtime's quantized operators */
    }
    if (tonnx_train_op_find(domain, op_type)) {
        return tonnx_train_op_find(domain, op_type); /* ai.onnx.preview.training */
    }
    if (domain && domain[0] && strcmp(domain, "ai.onnx") != 0) {
        return tonnx_custom_find(domain, op_type); /* the --custom-ops registry (custom.c) */
    }
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        if (strcmp(ops[i].op_type, op_type) == 0) {
            return &ops[i];
        }
    }
    return NULL;
}

unsigned tonnx_const_inputs(const op_def *d, int opset) {
    const char *t = d->op_type;
    if (tonnx_quant_const_inputs(t)) {
        return tonnx_quant_const_inputs(t);
    }
    if (!strcmp(t, "Reshape")) {
        return 1u << 1;
    }
    if (!strcmp(t, "Squeeze") || !strcmp(t, "Unsqueeze")) {
        return opset >= 13 ? 1u << 1 : 0;
    }
    if (!strcmp(t, "Clip")) {
        return opset >= 11 ? (1u << 1) | (1u << 2) : 0;
    }
    if (!strcmp(t, "Pad")) {
        return opset >= 18 ? 0xeu : opset >= 11 ? (1u << 1) | (1u << 2) : 0;
    }
    if (!strcmp(t, "ReduceSum")) {
        return opset >= 13 ? 1u << 1 : 0;
    }
    if (!strncmp(t, "Reduce", 6)) {
        return opset >= 18 ? 1u << 1 : 0;
    }
    if (!strcmp(t, "Resize")) {
        return opset >= 11 ? (1u << 1) | (1u << 2) | (1u << 3) : 1u << 1;
    }
    if (!strcmp(t, "Upsample")) {
        return opset >= 9 ? 1u << 1 : 0;
    }
    if (!strcmp(t, "Dropout")) {
        return opset >= 12 ? (1u << 1) | (1u << 2) : 0;
    }
    if (!strcmp(t, "Slice")) {
        return 0x1eu;
    }
    if (!strcmp(t, "ConstantOfShape")) {
        return 1u;
    }
    if (!strcmp(t, "NonMaxSuppression")) {
        return 0x1cu; /* max_output_boxes_per_class, iou_threshold, score_threshold */
    }
    if (!strcmp(t, "Range")) {
        return 7u;
    }
    if (!strcmp(t, "TopK")) {
        return opset >= 10 ? 1u << 1 : 0;
    }
    if (!strcmp(t, "CumSum") || !strcmp(t, "Trilu") || !strcmp(t, "OneHot") ||
        !strcmp(t, "Expand") || !strcmp(t, "Tile") || !strcmp(t, "Split")) {
        return !strcmp(t, "Split") && opset < 13 ? 0 : 1u << 1;
    }
    if (!strcmp(t, "MaxUnpool")) {
        return 1u << 2; /* output_shape */
    }
    if (!strcmp(t, "DFT")) {
        return 1u << 1; /* dft_length */
    }
    if (!strcmp(t, "STFT")) {
        return (1u << 1) | (1u << 3); /* frame_step, frame_length */
    }
    if (!strcmp(t, "HannWindow") || !strcmp(t, "HammingWindow") || !strcmp(t, "BlackmanWindow") ||
        !strcmp(t, "MelWeightMatrix")) {
        return 0x1fu;
    }
    if (!strcmp(t, "Loop")) {
        return 3u; /* trip count and condition: the unrolling needs them (control.c) */
    }
    return 0;
}

const tether_onnx_op_info *tether_onnx_ops(int *count) {
    static tether_onnx_op_info info[sizeof ops / sizeof *ops];
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        info[i].op_type = ops[i].op_type;
        info[i].since = ops[i].since;
        info[i].until = ops[i].until;
        info[i].maps_to = ops[i].maps_to;
    }
    *count = (int)(sizeof ops / sizeof *ops);
    return info;
}
