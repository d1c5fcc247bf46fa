/*
 * The ONNX front end on models built here (model_builder.c):
 *  - bad files give clear errors: empty, truncated, not a protobuf / another file type, a byte
 *    edit inside the graph, a cycle (named by its nodes), a missing initializer, a dynamic
 *    dimension without --input-shape (naming the input), opsets out of range, and an unsupported
 *    model lists EVERY unsupported operator (type, node name, opset) in one error;
 *  - operator mappings the node tests do not reach: opset < 13 Softmax coercion, Clip-6 and
 *    Squeeze/Unsqueeze-11 attributes, Pad-2/11, BatchNormalization, Resize scales/sizes,
 *    Upsample, shape computations folded at import (Shape/Gather/Unsqueeze/Concat/Reshape),
 *    Constant, Identity/Dropout/Cast, Gemm without C, grouped Conv with auto_pad SAME_LOWER,
 *    outputs that repeat an input, initializers listed as inputs; results are checked with the
 *    reference interpreter against values computed here;
 *  - .pb files, `tether import`, hostile models, arity, seeds and allocation bounds are in
 *    test_onnx_files.c (same executable; the helpers both use are declared in
 *    test_onnx_import.h).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "model_builder.h"
#include "tether/compiler.h"
#include "tether/compiler_cli.h"
#include "tether/crt.h"
#include "tether/onnx.h"
#include "test_onnx_import.h"

#define F ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

char g_dir[512];

const char *tmp(const char *name) {
    static char p[8][700];
    static int k;
    k = (k + 1) % 8;
    snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
    return p[k];
}

int load(mb *b, const tether_model_load_options *o, tether_ir_graph *g) {
    size_t len;
    uint8_t *buf = mb_pack(b, &len);
    int rc = tether_onnx_load_buffer(buf, len, "m.onnx", o, g);
    free(buf);
    return rc;
}

void expect_error(mb *b, int status, const char *text) {
    tether_ir_graph g;
    int rc = load(b, NULL, &g);
    if (rc != status || !strstr(tether_error_detail(), text)) {
        fail_msg("status %d (want %d), message: %s\nwanted: %s", rc, status, tether_error_detail(),
                 text);
    }
    assert_int_equal(g.ntensors, 0);
}

/* Runs the interpreter with one or two inputs and one output. */
void run1(const tether_ir_graph *g, const float *x, float *y) {
    const float *in[1] = {x};
    float *out[1] = {y};
    assert_int_equal(g->ninputs, 1);
    if (tether_interp_run(g, in, out)) {
        fail_msg("%s", tether_last_error());
    }
}

static void near(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (fabs((double)a[i] - b[i]) > 1e-5 + 1e-4 * fabs((double)b[i])) {
            fail_msg("element %zu: %.7g vs %.7g", i, (double)a[i], (double)b[i]);
        }
    }
}

/* x[1,1,4,4] -> Conv(W[2,1,3,3] initializer) -> Relu -> y: the good model the bad ones start
 * from. */
void conv_model(mb *b) {
    mb_init(b, 13);
    int64_t xs[4] = {1, 1, 4, 4}, ws[4] = {2, 1, 3, 3};
    float w[18];
    for (int i = 0; i < 18; i++) {
        w[i] = (float)(i % 5) - 2.0f;
    }
    mb_input(b, "x", F, 4, xs);
    mb_init_tensor(b, mb_tensor_f(b, "W", 4, ws, w, 1));
    mb_node(b, "Conv", "conv", "x,W", "c");
    mb_node(b, "Relu", "relu", "c", "y");
    mb_output(b, "y", F);
}

void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static void test_bad_files(void **state) {
    (void)state;
    mb b;
    conv_model(&b);
    size_t len;
    uint8_t *good = mb_pack(&b, &len);
    tether_ir_graph g;
    assert_int_equal(tether_onnx_load_buffer(good, len, "good.onnx", NULL, &g), 0);
    tether_ir_close(&g);
    /* empty */
    write_bytes(tmp("empty.onnx"), "", 0);
    assert_int_equal(tether_onnx_load(tmp("empty.onnx"), NULL, &g), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "empty.onnx: empty file, not an ONNX model"));
    /* truncated at every length: always an error, never a crash; most name the truncation */
    int truncated_msgs = 0;
    for (size_t n = 1; n < len; n++) {
        int rc = tether_onnx_load_buffer(good, n, "cut.onnx", NULL, &g);
        assert_int_not_equal(rc, 0);
        assert_non_null(strstr(tether_last_error(), "cut.onnx: "));
        truncated_msgs += strstr(tether_last_error(), "truncated") != NULL;
    }
    assert_true(truncated_msgs > (int)len / 2);
    write_bytes(tmp("half.onnx"), good, len / 2);
    assert_int_equal(tether_onnx_load(tmp("half.onnx"), NULL, &g), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "half.onnx: truncated file: field 7"));
    /* other file types: .npy, JSON, zip */
    static const char npy[] = "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False}";
    write_bytes(tmp("x.onnx"), npy, sizeof npy - 1);
    assert_int_equal(tether_onnx_load(tmp("x.onnx"), NULL, &g), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "x.onnx: not an ONNX model (ModelProto): the "
                                                "file does not start with one of its fields "
                                                "(first bytes 93 4e 55 4d"));
    static const char json[] = "{\"format\": \"tether-model\"}";
    assert_int_equal(tether_onnx_load_buffer(json, sizeof json - 1, "j.onnx", NULL, &g),
                     TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "not an ONNX model"));
    assert_int_equal(tether_onnx_load_buffer("PK\x03\x04zzzz", 8, "z.onnx", NULL, &g),
                     TETHER_ERR_INVALID_ARG);
    /* a byte edit inside the graph: every position fails cleanly or still loads */
    uint8_t *edit = malloc(len);
    for (size_t i = 0; i < len; i++) {
        memcpy(edit, good, len);
        edit[i] ^= 0xa5;
        if (tether_onnx_load_buffer(edit, len, "edit.onnx", NULL, &g) == 0) {
            tether_ir_close(&g);
        } else {
            assert_non_null(strstr(tether_last_error(), "edit.onnx: "));
        }
    }
    free(edit);
    free(good);
    mb_free(&b);
}

static void test_structure_errors(void **state) {
    (void)state;
    mb b;
    /* missing initializer */
    conv_model(&b);
    b.g.n_initializer = 0;
    expect_error(&b, TETHER_ERR_INVALID_ARG,
                 "m.onnx: node 'conv' (Conv): input 'W' is not defined: no initializer, graph "
                 "input or node output has that name (missing initializer?)");
    mb_free(&b);
    /* a cycle: a -> b -> c -> a, fed by x */
    mb_init(&b, 13);
    int64_t s[2] = {2, 2};
    mb_input(&b, "x", F, 2, s);
    mb_node(&b, "Add", "a", "x,t3", "t1");
    mb_node(&b, "Relu", "b", "t1", "t2");
    mb_node(&b, "Neg", "c", "t2", "t3");
    mb_node(&b, "Relu", "out", "t3", "y");
    mb_output(&b, "y", F);
    expect_error(&b, TETHER_ERR_INVALID_ARG, "the graph has a cycle: 'a' -> 'c' -> 'b' -> 'a'");
    mb_free(&b);
    /* a value written twice; an output nobody defines */
    mb_init(&b, 13);
    mb_input(&b, "x", F, 2, s);
    mb_node(&b, "Relu", "r1", "x", "y");
    mb_node(&b, "Neg", "r2", "x", "y");
    mb_output(&b, "y", F);
    expect_error(&b, TETHER_ERR_INVALID_ARG,
                 "node 'r2' (Neg): output 'y' is also written by "
                 "node 'r1'");
    mb_free(&b);
    mb_init(&b, 13);
    mb_input(&b, "x", F, 2, s);
    mb_node(&b, "Relu", "r1", "x", "y");
    mb_output(&b, "z", F);
    expect_error(&b, TETHER_ERR_INVALID_ARG, "graph output 'z' is not defined");
    mb_free(&b);
    /* opsets */
    conv_model(&b);
    b.opset.version = 19;
    expect_error(&b, TETHER_ERR_UNSUPPORTED,
                 "opset 19 of the default domain is not supported (1..18)");
    b.m.n_opset_import = 0;
    expect_error(&b, TETHER_ERR_INVALID_ARG, "no opset_import");
    mb_free(&b);
    /* a run-time input of a type tether does not compute */
    mb_init(&b, 13);
    mb_input(&b, "s", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, 2, s);
    mb_node(&b, "Relu", "r", "s", "y");
    mb_output(&b, "y", F);
    expect_error(&b, TETHER_ERR_UNSUPPORTED, "graph input 's' has element type string");
    mb_free(&b);
    /* an int64 input computes int64: a float32 output declared for it is refused, named */
    mb_init(&b, 13);
    mb_input(&b, "ids", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2, s);
    mb_node(&b, "Relu", "r", "ids", "y");
    mb_output(&b, "y", F);
    expect_error(&b, TETHER_ERR_UNSUPPORTED,
                 "graph output 'y' has element type float32 in the model, but tether computes it "
                 "as int64");
    mb_free(&b);
}

static void test_dynamic_dims(void **state) {
    (void)state;
    mb b;
    conv_model(&b);
    b.inputs[0] = NULL;
    b.g.n_input = 0;
    int64_t dyn[4] = {-1, 1, 4, 4};
    mb_input(&b, "x", F, 4, dyn);
    expect_error(&b, TETHER_ERR_INVALID_ARG,
                 "m.onnx: graph input 'x' has a dynamic dimension 0 ('N'): fix it with "
                 "--input-shape, e.g. --input-shape x=1x1x4x4");
    tether_model_input_shape s;
    tether_model_load_options o;
    memset(&o, 0, sizeof o);
    o.input_shapes = &s;
    o.ninput_shapes = 1;
    tether_ir_graph g;
    assert_int_equal(tether_model_input_shape_parse("x=2x1x4x4", &s), 0);
    assert_int_equal(load(&b, &o, &g), 0);
    assert_int_equal(g.tensors[g.inputs[0]].shape[0], 2);
    assert_int_equal(g.tensors[g.outputs[0]].shape[0], 2);
    tether_ir_close(&g);
    assert_int_equal(tether_model_input_shape_parse("x=2x3x4x4", &s), 0);
    assert_int_equal(load(&b, &o, &g), TETHER_ERR_MISMATCH);
    assert_non_null(
        strstr(tether_last_error(),
               "graph input 'x': dimension 1 is 1 in the model; --input-shape gives 3"));
    assert_int_equal(tether_model_input_shape_parse("x=2x1x4", &s), 0);
    assert_int_equal(load(&b, &o, &g), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "has rank 4; --input-shape gives rank 3"));
    assert_int_equal(tether_model_input_shape_parse("nope=1", &s), 0);
    assert_int_equal(load(&b, &o, &g), TETHER_ERR_NOT_FOUND);
    assert_non_null(
        strstr(tether_last_error(), "'nope', which is not a graph input (inputs: 'x')"));
    mb_free(&b);
    /* no shape at all */
    conv_model(&b);
    b.g.n_input = 0;
    mb_input(&b, "x", F, -1, NULL);
    expect_error(&b, TETHER_ERR_INVALID_ARG,
                 "graph input 'x' has no shape in the model: give it with --input-shape x=");
    mb_free(&b);
}

static void test_unsupported_list(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 13);
    mb_opset(&b, "com.microsoft", 1);
    int64_t s[4] = {1, 2, 4, 4};
    mb_input(&b, "x", F, 4, s);
    mb_node(&b, "StringNormalizer", "strnorm_1", "x", "a");
    Onnx__NodeProto *p = mb_node(&b, "Pad", "pad_reflect", "a,pads", "b2");
    mb_attr_s(&b, p, "mode", "mirror");
    int64_t pd[8] = {0, 0, 1, 1, 0, 0, 1, 1}, pds[1] = {8};
    mb_init_tensor(&b, mb_tensor_i64(&b, "pads", 1, pds, pd));
    Onnx__NodeProto *ms = mb_node(&b, "FusedGemm", "", "b2", "c");
    mb_domain(&b, ms, "com.microsoft");
    mb_node(&b, "Relu", "fine", "c", "d");
    Onnx__NodeProto *mp = mb_node(&b, "MaxPool", "pool_idx", "d", "e,idx");
    int64_t k[2] = {2, 2};
    mb_attr_ints(&b, mp, "kernel_shape", 2, k);
    mb_node(&b, "Range", "rg", "idx,idx,idx", "f"); /* (NonZero has a bounded output) */
    Onnx__NodeProto *cv = mb_node(&b, "Conv", "conv4d", "f,f", "g");
    int64_t k4[4] = {1, 1, 1, 1};
    mb_attr_ints(&b, cv, "kernel_shape", 4, k4);
    Onnx__NodeProto *lr = mb_node(&b, "LeakyRelu", "leaky", "g", "y");
    mb_attr_f(&b, lr, "gamma", 1.0f);
    mb_output(&b, "y", F);
    tether_ir_graph g;
    assert_int_equal(load(&b, NULL, &g), TETHER_ERR_UNSUPPORTED);
    const char *d = tether_error_detail();
    const char *want[] = {
        "m.onnx: unsupported model: 6 operators cannot be imported: ",
        "StringNormalizer (node 'strnorm_1', opset 13)",
        "Pad (node 'pad_reflect', opset 13: mode 'mirror' (constant, edge, reflect or wrap))",
        "FusedGemm (node 'FusedGemm_2', domain 'com.microsoft' opset 1: a custom domain; give its "
        "kernels with --custom-ops FILE",
        ("Range (node 'rg', opset 13: input 'idx' is computed at run time, and the output's size "
         "depends on its values"),
        ("Conv (node 'conv4d', opset 13: window attribute 'kernel_shape' with 4 entries (1 to 3 "
         "dimensions))"),
        "LeakyRelu (node 'leaky', opset 13: attribute 'gamma')",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        if (!strstr(d, want[i])) {
            fail_msg("missing \"%s\" in: %s", want[i], d);
        }
    }
    assert_null(strstr(d, "'fine'"));
    assert_null(strstr(d, "'pool_idx'")); /* MaxPool's Indices output is imported */
    /* the short message is the start of the same text */
    assert_true(strlen(tether_last_error()) < TETHER_ERROR_MSG_MAX);
    assert_int_equal(strncmp(tether_last_error(), d, strlen(tether_last_error())), 0);
    mb_free(&b);
    /* an operator newer than the model's opset */
    mb_init(&b, 13);
    mb_input(&b, "x", F, 4, s);
    mb_node(&b, "HardSwish", "hs", "x", "y");
    mb_output(&b, "y", F);
    expect_error(&b, TETHER_ERR_UNSUPPORTED,
                 "HardSwish (node 'hs', opset 13: handled for opsets "
                 "14..18)");
    mb_free(&b);
}

/* A constant input bound from a value, or missing. */
static void test_bound_inputs(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 13);
    int64_t s[2] = {2, 3}, one[1] = {2};
    mb_input(&b, "x", F, 2, s);
    mb_input(&b, "shape", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, one);
    mb_node(&b, "Reshape", "r", "x,shape", "y");
    mb_output(&b, "y", F);
    expect_error(&b, TETHER_ERR_UNSUPPORTED,
                 "node 'r' (Reshape): input 1 ('shape') must be constant, but it is a graph "
                 "input with no value bound");
    int64_t target[2] = {3, 2};
    tether_model_value v[2];
    memset(v, 0, sizeof v);
    v[1].dtype = TETHER_INT64;
    v[1].ndim = 1;
    v[1].shape[0] = 2;
    v[1].data = target;
    v[1].nbytes = sizeof target;
    unsigned char bound[2] = {9, 9};
    tether_model_load_options o;
    memset(&o, 0, sizeof o);
    o.input_values = v;
    o.ninput_values = 2;
    o.input_bound = bound;
    tether_ir_graph g;
    assert_int_equal(load(&b, &o, &g), 0);
    assert_int_equal(bound[0], 0);
    assert_int_equal(bound[1], 1);
    assert_int_equal(g.ninputs, 1);
    assert_int_equal(g.tensors[g.outputs[0]].shape[0], 3);
    tether_ir_close(&g);
    /* the wrong number of bytes for the value's shape */
    v[1].nbytes = 4;
    assert_int_equal(load(&b, &o, &g), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "value of 'shape' has 4 bytes"));
    mb_free(&b);
}

/* Softmax before opset 13 works on the input coerced to 2-D at axis. */
static void test_softmax_opset11(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 11);
    int64_t s[3] = {2, 3, 4};
    mb_input(&b, "x", F, 3, s);
    Onnx__NodeProto *n = mb_node(&b, "Softmax", "sm", "x", "y");
    mb_attr_i(&b, n, "axis", 1);
    mb_output(&b, "y", F);
    tether_ir_graph g;
    assert_int_equal(load(&b, NULL, &g), 0);
    float x[24], y[24], want[24];
    for (int i = 0; i < 24; i++) {
        x[i] = (float)((i * 7) % 11) * 0.3f;
    }
    for (int r = 0; r < 2; r++) { /* rows of 12 */
        double sum = 0;
        for (int i = 0; i < 12; i++) {
            sum += exp(x[r * 12 + i]);
        }
        for (int i = 0; i < 12; i++) {
            want[r * 12 + i] = (float)(exp(x[r * 12 + i]) / sum);
        }
    }
    run1(&g, x, y);
    near(y, want, 24);
    assert_int_equal(g.tensors[g.outputs[0]].ndim, 3);
    tether_ir_close(&g);
    /* the default axis before 13 is 1, too; opset 13 makes it -1 (per row of 4) */
    b.nodes[0]->n_attribute = 0;
    b.opset.version = 13;
    assert_int_equal(load(&b, NULL, &g), 0);
    run1(&g, x, y);
    for (int r = 0; r < 6; r++) {
        double sum = 0;
        for (int i = 0; i < 4; i++) {
            sum += y[r * 4 + i];
        }
        assert_true(fabs(sum - 1.0) < 1e-5);
    }
    tether_ir_close(&g);
    mb_free(&b);
}

/* Clip-6 attributes, Squeeze/Unsqueeze-11 attributes, Identity, Dropout and Cast float->float. */
static void test_old_attributes(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 11);
    int64_t s[3] = {1, 2, 3};
    mb_input(&b, "x", F, 3, s);
    b.opset.version = 10; /* Clip min/max became inputs in 11 */
    Onnx__NodeProto *c = mb_node(&b, "Clip", "clip", "x", "a");
    mb_attr_f(&b, c, "min", -0.5f);
    mb_attr_f(&b, c, "max", 0.25f);
    Onnx__NodeProto *sq = mb_node(&b, "Squeeze", "sq", "a", "b1");
    int64_t ax0[1] = {0};
    mb_attr_ints(&b, sq, "axes", 1, ax0);
    mb_node(&b, "Identity", "id", "b1", "c1");
    Onnx__NodeProto *dr = mb_node(&b, "Dropout", "drop", "c1", "d");
    mb_attr_f(&b, dr, "ratio", 0.5f);
    Onnx__NodeProto *ca = mb_node(&b, "Cast", "cast", "d", "e");
    mb_attr_i(&b, ca, "to", 1);
    Onnx__NodeProto *un = mb_node(&b, "Unsqueeze", "un", "e", "y");
    int64_t ax2[1] = {2};
    mb_attr_ints(&b, un, "axes", 1, ax2);
    mb_output(&b, "y", F);
    tether_ir_graph g;
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    const tether_ir_tensor *y = &g.tensors[g.outputs[0]];
    assert_int_equal(y->ndim, 3);
    assert_int_equal(y->shape[0], 2);
    assert_int_equal(y->shape[1], 3);
    assert_int_equal(y->shape[2], 1);
    assert_string_equal(y->name, "y");
    float x[6] = {-2, -0.25f, 0, 0.2f, 0.3f, 9}, out[6],
          want[6] = {-0.5f, -0.25f, 0, 0.2f, 0.25f, 0.25f};
    run1(&g, x, out);
    near(out, want, 6);
    tether_ir_close(&g);
    mb_free(&b);
}

/* Pad-2 (attributes) and Pad-11 (inputs), BatchNormalization, Gemm without C. */
static void test_pad_bn_gemm(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 9);
    int64_t s[2] = {1, 2};
    mb_input(&b, "x", F, 2, s);
    Onnx__NodeProto *p = mb_node(&b, "Pad", "pad", "x", "y");
    int64_t pads[4] = {0, 1, 1, 0};
    mb_attr_ints(&b, p, "pads", 4, pads);
    mb_attr_f(&b, p, "value", 7.0f);
    mb_output(&b, "y", F);
    tether_ir_graph g;
    assert_int_equal(load(&b, NULL, &g), 0);
    float x[2] = {1, 2}, y[6], want[6] = {7, 1, 2, 7, 7, 7};
    run1(&g, x, y);
    near(y, want, 6);
    tether_ir_close(&g);
    /* opset 11: pads and constant_value as initializers */
    b.opset.version = 11;
    b.nodes[0]->n_attribute = 0;
    b.nodes[0]->n_input = 0;
    b.g.n_node = 0;
    mb_node(&b, "Pad", "pad", "x,pads,cv", "y");
    int64_t four[1] = {4};
    float cv = -1.0f;
    mb_init_tensor(&b, mb_tensor_i64(&b, "pads", 1, four, pads));
    mb_init_tensor(&b, mb_tensor_f(&b, "cv", 0, NULL, &cv, 0));
    assert_int_equal(load(&b, NULL, &g), 0);
    float want2[6] = {-1, 1, 2, -1, -1, -1};
    run1(&g, x, y);
    near(y, want2, 6);
    tether_ir_close(&g);
    mb_free(&b);
    /* BatchNormalization: (x - mean) / sqrt(var + eps) * scale + bias per channel */
    mb_init(&b, 15);
    int64_t xs[4] = {1, 2, 1, 2}, cs[1] = {2};
    mb_input(&b, "x", F, 4, xs);
    float sc[2] = {2, 3}, bi[2] = {1, -1}, me[2] = {0.5f, 1}, va[2] = {4, 1};
    mb_init_tensor(&b, mb_tensor_f(&b, "s", 1, cs, sc, 0));
    mb_init_tensor(&b, mb_tensor_f(&b, "b", 1, cs, bi, 1));
    mb_init_tensor(&b, mb_tensor_f(&b, "m", 1, cs, me, 0));
    mb_init_tensor(&b, mb_tensor_f(&b, "v", 1, cs, va, 0));
    Onnx__NodeProto *bn = mb_node(&b, "BatchNormalization", "bn", "x,s,b,m,v", "y");
    mb_attr_f(&b, bn, "epsilon", 0.0f);
    mb_output(&b, "y", F);
    assert_int_equal(load(&b, NULL, &g), 0);
    float xb[4] = {2.5f, 4.5f, 3, 0}, yb[4], wb[4] = {3, 5, 5, -4};
    run1(&g, xb, yb);
    near(yb, wb, 4);
    tether_ir_close(&g);
    mb_free(&b);
    /* Gemm-13 without C, transA */
    mb_init(&b, 13);
    int64_t as[2] = {3, 2}, bs[2] = {3, 1};
    mb_input(&b, "a", F, 2, as);
    float bw[3] = {1, 10, 100};
    mb_init_tensor(&b, mb_tensor_f(&b, "B", 2, bs, bw, 0));
    Onnx__NodeProto *gm = mb_node(&b, "Gemm", "gemm", "a,B", "y");
    mb_attr_i(&b, gm, "transA", 1);
    mb_attr_f(&b, gm, "alpha", 0.5f);
    mb_output(&b, "y", F);
    assert_int_equal(load(&b, NULL, &g), 0);
    float a[6] = {1, 2, 3, 4, 5, 6}, yg[2], wg[2] = {0.5f * (1 + 30 + 500), 0.5f * (2 + 40 + 600)};
    run1(&g, a, yg);
    near(yg, wg, 2);
    tether_ir_close(&g);
    mb_free(&b);
}

/* Resize (scales, sizes, modes) and Upsample: integer nearest upscaling. */
static void test_resize(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 13);
    int64_t s[4] = {1, 1, 2, 2}, four[1] = {4};
    mb_input(&b, "x", F, 4, s);
    float scales[4] = {1, 1, 2, 3};
    mb_init_tensor(&b, mb_tensor_f(&b, "scales", 1, four, scales, 0));
    mb_node(&b, "Resize", "rs", "x,,scales", "y");
    mb_output(&b, "y", F);
    tether_ir_graph g;
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    float x[4] = {1, 2, 3, 4}, y[24];
    run1(&g, x, y);
    float want[24] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
    near(y, want, 24);
    tether_ir_close(&g);
    /* sizes instead of scales */
    b.g.n_node = 0;
    b.g.n_initializer = 0;
    int64_t sizes[4] = {1, 1, 4, 6};
    mb_init_tensor(&b, mb_tensor_i64(&b, "sizes", 1, four, sizes));
    mb_node(&b, "Resize", "rs", "x,,,sizes", "y");
    assert_int_equal(load(&b, NULL, &g), 0);
    run1(&g, x, y);
    near(y, want, 24);
    tether_ir_close(&g);
    /* modes that do not replicate pixels and non-integer factors: matmuls per axis (the node
     * suite checks their values); an unknown mode is refused */
    Onnx__NodeProto *n = b.nodes[0];
    mb_attr_s(&b, n, "coordinate_transformation_mode", "align_corners");
    assert_int_equal(load(&b, NULL, &g), 0);
    tether_ir_close(&g);
    n->n_attribute = 0;
    mb_attr_s(&b, n, "mode", "area");
    expect_error(&b, TETHER_ERR_UNSUPPORTED, "mode 'area'");
    n->n_attribute = 0;
    sizes[3] = 5;
    b.g.n_initializer = 0;
    mb_init_tensor(&b, mb_tensor_i64(&b, "sizes", 1, four, sizes));
    assert_int_equal(load(&b, NULL, &g), 0);
    assert_int_equal(g.tensors[g.outputs[0]].shape[3], 5);
    tether_ir_close(&g);
    mb_free(&b);
    /* Upsample-9 */
    mb_init(&b, 9);
    mb_input(&b, "x", F, 4, s);
    mb_init_tensor(&b, mb_tensor_f(&b, "scales", 1, four, scales, 0));
    mb_node(&b, "Upsample", "up", "x,scales", "y");
    mb_output(&b, "y", F);
    assert_int_equal(load(&b, NULL, &g), 0);
    run1(&g, x, y);
    near(y, want, 24);
    tether_ir_close(&g);
    mb_free(&b);
}

/* The flatten pattern of exported models: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, with
 * Constant nodes, all folded at import; then a grouped Conv with auto_pad SAME_LOWER. */
static void test_shape_computations(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 13);
    int64_t s[4] = {2, 3, 2, 2};
    mb_input(&b, "x", F, 4, s);
    mb_node(&b, "Shape", "shape", "x", "sh");
    Onnx__NodeProto *c0 = mb_node(&b, "Constant", "zero", "", "i0");
    int64_t zero = 0, m1 = -1, one = 1;
    mb_attr_t(&b, c0, "value", mb_tensor_i64(&b, "", 0, NULL, &zero));
    Onnx__NodeProto *ga = mb_node(&b, "Gather", "gather", "sh,i0", "n");
    mb_attr_i(&b, ga, "axis", 0);
    Onnx__NodeProto *c1 = mb_node(&b, "Constant", "axes", "", "ax");
    int64_t one_d[1] = {1};
    mb_attr_t(&b, c1, "value", mb_tensor_i64(&b, "", 1, one_d, &zero));
    mb_node(&b, "Unsqueeze", "unsq", "n,ax", "n1");
    Onnx__NodeProto *c2 = mb_node(&b, "Constant", "minus1", "", "m");
    mb_attr_ints(&b, c2, "value_ints", 1, &m1);
    Onnx__NodeProto *cc = mb_node(&b, "Concat", "cat", "n1,m", "target");
    mb_attr_i(&b, cc, "axis", 0);
    mb_node(&b, "Reshape", "flat", "x,target", "f");
    Onnx__NodeProto *sl = mb_node(&b, "Slice", "slice", "sh,st,en", "hw");
    (void)sl;
    int64_t st = 2, en = 4;
    mb_init_tensor(&b, mb_tensor_i64(&b, "st", 1, one_d, &st));
    mb_init_tensor(&b, mb_tensor_i64(&b, "en", 1, one_d, &en));
    Onnx__NodeProto *cs = mb_node(&b, "Cast", "castf", "hw", "hwf");
    mb_attr_i(&b, cs, "to", 1);
    mb_node(&b, "Add", "bias", "f,one", "y");
    Onnx__NodeProto *c3 = mb_node(&b, "Constant", "onev", "", "one");
    mb_attr_f(&b, c3, "value_float", 1.0f);
    (void)one;
    mb_output(&b, "y", F);
    tether_ir_graph g;
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    assert_int_equal(g.nnodes, 2); /* reshape + add: the rest was folded */
    const tether_ir_tensor *y = &g.tensors[g.outputs[0]];
    assert_int_equal(y->ndim, 2);
    assert_int_equal(y->shape[0], 2);
    assert_int_equal(y->shape[1], 12);
    tether_ir_close(&g);
    /* a Gather on run-time data is a gather node computed on the device: x[1] */
    b.g.n_node = 0;
    b.g.n_initializer = 0;
    int64_t idx[1] = {-1};
    mb_init_tensor(&b, mb_tensor_i64(&b, "i", 1, one_d, idx));
    mb_node(&b, "Gather", "gather_rt", "x,i", "y");
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    assert_int_equal(g.nnodes, 1);
    assert_int_equal(g.nodes[0].op, TETHER_OP_GATHER);
    float gx[24], gy[12];
    for (int i = 0; i < 24; i++) {
        gx[i] = (float)i;
    }
    run1(&g, gx, gy);
    for (int i = 0; i < 12; i++) {
        assert_true(gy[i] == (float)(12 + i));
    }
    tether_ir_close(&g);
    /* TopK's k computed at run time: refused, naming the input */
    b.g.n_node = 0;
    Onnx__NodeProto *tk = mb_node(&b, "TopK", "topk_rt", "x,k", "y,yi");
    mb_attr_i(&b, tk, "axis", 1);
    mb_node(&b, "Size", "size_rt", "x", "k0");
    mb_node(&b, "Sign", "sign_rt", "k0", "k");
    expect_error(&b, TETHER_ERR_UNSUPPORTED, "input 1 ('k') must be constant");
    mb_free(&b);
    /* grouped conv, auto_pad SAME_LOWER, stride 2: out = ceil(6/2) = 3, total pad 1 */
    mb_init(&b, 13);
    int64_t xs[4] = {1, 2, 6, 6}, ws[4] = {2, 1, 3, 3};
    mb_input(&b, "x", F, 4, xs);
    float w[18];
    for (int i = 0; i < 18; i++) {
        w[i] = 1.0f;
    }
    mb_init_tensor(&b, mb_tensor_f(&b, "W", 4, ws, w, 0));
    Onnx__NodeProto *cv = mb_node(&b, "Conv", "conv", "x,W", "y");
    mb_attr_i(&b, cv, "group", 2);
    int64_t st2[2] = {2, 2};
    mb_attr_ints(&b, cv, "strides", 2, st2);
    mb_attr_s(&b, cv, "auto_pad", "SAME_LOWER");
    mb_output(&b, "y", F);
    assert_int_equal(load(&b, NULL, &g), 0);
    const tether_ir_node *n = &g.nodes[0];
    assert_int_equal(n->attrs.groups, 2);
    assert_int_equal(n->attrs.pads[0], 1); /* lower: the odd pixel goes before */
    assert_int_equal(n->attrs.pads[1], 1);
    assert_int_equal(n->attrs.pads[2], 0);
    assert_int_equal(n->attrs.pads[3], 0);
    y = &g.tensors[g.outputs[0]];
    assert_int_equal(y->shape[2], 3);
    float xin[72], out[18];
    for (int i = 0; i < 72; i++) {
        xin[i] = i < 36 ? 1.0f : 2.0f;
    }
    run1(&g, xin, out);
    assert_true(out[0] == 4.0f);      /* channel 0, corner: 2x2 ones */
    assert_true(out[4] == 9.0f);      /* channel 0, centre: 3x3 ones */
    assert_true(out[9 + 4] == 18.0f); /* channel 1 (group 2): twos */
    tether_ir_close(&g);
    b.nodes[0]->n_attribute = 0;
    mb_attr_s(&b, cv, "auto_pad", "SAME_MIDDLE");
    expect_error(&b, TETHER_ERR_UNSUPPORTED, "auto_pad 'SAME_MIDDLE'");
    mb_free(&b);
}

/* An output that is an input (Identity), an output listed twice, an initializer listed as a graph
 * input, LayerNormalization's Mean/InvStdDev. */
static void test_graph_io(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 13);
    int64_t s[2] = {2, 3};
    mb_input(&b, "x", F, 2, s);
    float w[6] = {1, 2, 3, 4, 5, 6};
    mb_init_tensor(&b, mb_tensor_f(&b, "w", 2, s, w, 0));
    mb_input(&b, "w", F, 2, s); /* IR < 4 style: an initializer among the inputs */
    mb_node(&b, "Identity", "same", "x", "copy");
    mb_node(&b, "Add", "add", "x,w", "sum");
    mb_output(&b, "copy", F);
    mb_output(&b, "sum", F);
    mb_output(&b, "sum", F);
    tether_ir_graph g;
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    assert_int_equal(g.ninputs, 1);
    assert_int_equal(g.noutputs, 3);
    assert_string_equal(g.tensors[g.outputs[0]].name, "copy");
    float x[6] = {1, 1, 1, 2, 2, 2}, o0[6], o1[6], o2[6];
    const float *in[1] = {x};
    float *out[3] = {o0, o1, o2};
    assert_int_equal(tether_interp_run(&g, in, out), 0);
    near(o0, x, 6);
    float sum[6] = {2, 3, 4, 6, 7, 8};
    near(o1, sum, 6);
    near(o2, sum, 6);
    tether_ir_close(&g);
    mb_free(&b);
    /* outputs that are constants (a Constant node, an initializer) are copied into the output */
    mb_init(&b, 13);
    mb_input(&b, "x", F, 2, s);
    mb_init_tensor(&b, mb_tensor_f(&b, "w", 2, s, w, 0));
    Onnx__NodeProto *kn = mb_node(&b, "Constant", "k", "", "kout");
    float kv[3] = {0.5f, -1.5f, 7.0f};
    mb_attr_floats(&b, kn, "value_floats", 3, kv);
    mb_node(&b, "Neg", "neg", "x", "y");
    mb_output(&b, "kout", F);
    mb_output(&b, "y", F);
    mb_output(&b, "w", F);
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    assert_int_equal(g.noutputs, 3);
    assert_string_equal(g.tensors[g.outputs[0]].name, "kout");
    assert_string_equal(g.tensors[g.outputs[2]].name, "w");
    float k0[3], y1[6], w2[6], negx[6] = {-1, -1, -1, -2, -2, -2};
    float *outk[3] = {k0, y1, w2};
    assert_int_equal(tether_interp_run(&g, in, outk), 0);
    near(k0, kv, 3);
    near(y1, negx, 6);
    near(w2, w, 6);
    tether_ir_close(&g);
    mb_free(&b);
    /* LayerNormalization with all three outputs, axis 0 of a [2,2] input */
    mb_init(&b, 17);
    int64_t s2[2] = {2, 2};
    mb_input(&b, "x", F, 2, s2);
    float sc[4] = {1, 1, 1, 1};
    mb_init_tensor(&b, mb_tensor_f(&b, "scale", 2, s2, sc, 0));
    Onnx__NodeProto *ln = mb_node(&b, "LayerNormalization", "ln", "x,scale", "y,mean,inv");
    mb_attr_i(&b, ln, "axis", 0);
    mb_attr_f(&b, ln, "epsilon", 0.0f);
    mb_output(&b, "y", F);
    mb_output(&b, "mean", F);
    mb_output(&b, "inv", F);
    assert_int_equal(load(&b, NULL, &g), 0);
    float xl[4] = {1, 3, 5, 7}, y[4], mean[1], inv[1];
    const float *inl[1] = {xl};
    float *outl[3] = {y, mean, inv};
    assert_int_equal(tether_interp_run(&g, inl, outl), 0);
    /* mean 4, variance (9+1+1+9)/4 = 5 */
    assert_true(fabsf(mean[0] - 4.0f) < 1e-6f);
    assert_true(fabsf(inv[0] - 1.0f / sqrtf(5.0f)) < 1e-6f);
    assert_true(fabsf(y[0] + 3.0f / sqrtf(5.0f)) < 1e-5f);
    tether_ir_close(&g);
    mb_free(&b);
}

/* Opset 18: ReduceMean axes as an input (and noop_with_empty_axes), Pad axes, Resize axes. */
static void test_opset18(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 18);
    int64_t s[3] = {2, 2, 2}, one[1] = {1};
    int64_t ax[1] = {-1};
    mb_input(&b, "x", F, 3, s);
    mb_init_tensor(&b, mb_tensor_i64(&b, "axes", 1, one, ax));
    Onnx__NodeProto *rm = mb_node(&b, "ReduceMean", "rm", "x,axes", "y");
    mb_attr_i(&b, rm, "keepdims", 0);
    mb_output(&b, "y", F);
    tether_ir_graph g;
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    float x[8] = {1, 3, 5, 7, 2, 4, 6, 10}, y[8], want[4] = {2, 6, 3, 8};
    run1(&g, x, y);
    near(y, want, 4);
    tether_ir_close(&g);
    /* no axes: all of them, unless noop_with_empty_axes */
    rm->n_input = 1;
    assert_int_equal(load(&b, NULL, &g), 0);
    run1(&g, x, y);
    assert_true(fabsf(y[0] - 4.75f) < 1e-6f);
    tether_ir_close(&g);
    mb_attr_i(&b, rm, "noop_with_empty_axes", 1);
    assert_int_equal(load(&b, NULL, &g), 0);
    run1(&g, x, y);
    near(y, x, 8);
    tether_ir_close(&g);
    /* before 18 an axes input is not the ReduceMean of that opset: attribute only */
    b.opset.version = 17;
    rm->n_attribute = 1; /* keepdims */
    mb_attr_ints(&b, rm, "axes", 1, ax);
    assert_int_equal(load(&b, NULL, &g), 0);
    run1(&g, x, y);
    near(y, want, 4);
    tether_ir_close(&g);
    mb_free(&b);
    /* Pad-18 with axes: pad only the last axis by (1, 2) */
    mb_init(&b, 18);
    int64_t s2[2] = {1, 2}, two[1] = {2};
    int64_t pads[2] = {1, 2};
    mb_input(&b, "x", F, 2, s2);
    mb_init_tensor(&b, mb_tensor_i64(&b, "pads", 1, two, pads));
    mb_init_tensor(&b, mb_tensor_i64(&b, "axes", 1, one, ax));
    mb_node(&b, "Pad", "pad", "x,pads,,axes", "y");
    mb_output(&b, "y", F);
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    float xp[2] = {4, 5}, yp[5], wp[5] = {0, 4, 5, 0, 0};
    run1(&g, xp, yp);
    near(yp, wp, 5);
    tether_ir_close(&g);
    mb_free(&b);
    /* Resize-18 with axes [2, 3] and 2 scales */
    mb_init(&b, 18);
    int64_t s4[4] = {1, 1, 1, 2};
    mb_input(&b, "x", F, 4, s4);
    float sc[2] = {2, 2};
    mb_init_tensor(&b, mb_tensor_f(&b, "scales", 1, two, sc, 0));
    Onnx__NodeProto *rs = mb_node(&b, "Resize", "rs", "x,,scales", "y");
    int64_t hw[2] = {2, 3};
    mb_attr_ints(&b, rs, "axes", 2, hw);
    mb_output(&b, "y", F);
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    float xr[2] = {1, 2}, yr[8], wr[8] = {1, 1, 2, 2, 1, 1, 2, 2};
    run1(&g, xr, yr);
    near(yr, wr, 8);
    tether_ir_close(&g);
    b.opset.version = 13; /* axes did not exist before 18 */
    expect_error(&b, TETHER_ERR_UNSUPPORTED, "attribute 'axes' (opset 18 and later)");
    mb_free(&b);
}

/* Initializers in an external data file beside the model (the ONNX external data rules). */
static void test_external_data(void **state) {
    (void)state;
    float w[4] = {1, 2, 3, 4}, pad[2] = {99, 99};
    FILE *f = fopen(tmp("w.bin"), "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(pad, sizeof pad, 1, f), 1); /* the data starts at offset 8 */
    assert_int_equal(fwrite(w, sizeof w, 1, f), 1);
    fclose(f);
    mb b;
    mb_init(&b, 13);
    int64_t s[1] = {4};
    mb_input(&b, "x", F, 1, s);
    Onnx__TensorProto *t = mb_tensor_f(&b, "w", 1, s, w, 1);
    t->has_raw_data = 0;
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    Onnx__StringStringEntryProto e[3], *ep[3] = {&e[0], &e[1], &e[2]};
    const char *kv[3][2] = {{"location", "w.bin"}, {"offset", "8"}, {"length", "16"}};
    for (int i = 0; i < 3; i++) {
        onnx__string_string_entry_proto__init(&e[i]);
        e[i].key = (char *)kv[i][0];
        e[i].value = (char *)kv[i][1];
    }
    t->external_data = ep;
    t->n_external_data = 3;
    mb_init_tensor(&b, t);
    mb_node(&b, "Mul", "mul", "x,w", "y");
    mb_output(&b, "y", F);
    mb_write(&b, tmp("ext.onnx"));
    tether_ir_graph g;
    if (tether_onnx_load(tmp("ext.onnx"), NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    float x[4] = {1, 1, 2, 2}, y[4], want[4] = {1, 2, 6, 8};
    run1(&g, x, y);
    near(y, want, 4);
    tether_ir_close(&g);
    /* outside the file, escaping the directory, from memory (no directory) */
    e[1].value = "12";
    mb_write(&b, tmp("ext.onnx"));
    assert_int_equal(tether_onnx_load(tmp("ext.onnx"), NULL, &g), TETHER_ERR_INVALID_ARG);
    assert_non_null(
        strstr(tether_last_error(), "tensor 'w': external data [12, +16) lies outside"));
    e[0].value = "../w.bin";
    mb_write(&b, tmp("ext.onnx"));
    assert_int_equal(tether_onnx_load(tmp("ext.onnx"), NULL, &g), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "must be a relative path without '..'"));
    mb_free(&b);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s/tests/onnx/tmp", TETHER_BINARY_DIR);
    mkdir(g_dir, 0755);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_structure_errors),
        cmocka_unit_test(test_dynamic_dims),
        cmocka_unit_test(test_unsupported_list),
        cmocka_unit_test(test_bound_inputs),
        cmocka_unit_test(test_softmax_opset11),
        cmocka_unit_test(test_old_attributes),
        cmocka_unit_test(test_pad_bn_gemm),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_shape_computations),
        cmocka_unit_test(test_graph_io),
        cmocka_unit_test(test_tensor_files),
        cmocka_unit_test(test_import_command),
        cmocka_unit_test(test_opset18),
        cmocka_unit_test(test_external_data),
        cmocka_unit_test(test_hostile_models),
        cmocka_unit_test(test_external_data_files),
        cmocka_unit_test(test_arity),
        cmocka_unit_test(test_regression_seeds),
        cmocka_unit_test(test_allocation_bounds),
        cmocka_unit_test(test_onnx_layers),
        cmocka_unit_test(test_onnx_control_flow),
        cmocka_unit_test(test_onnx_rnn),
        cmocka_unit_test(test_onnx_misc),
        cmocka_unit_test(test_onnx_detection_head),
        cmocka_unit_test(test_onnx_nonzero_readers),
        cmocka_unit_test(test_onnx_slice_runtime),
        cmocka_unit_test(test_onnx_live_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
