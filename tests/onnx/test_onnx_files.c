/*
 * The ONNX front end on files: .pb TensorProto files (float_data, raw_data, int64, float16) and
 * their errors, `tether import`, hostile and truncated models, external data files, each
 * operator's arity against its schema, the fuzzers' regression seeds and the importer's
 * allocation bounds (what a file can make it allocate). Part of test_onnx_import (main() and the
 * shared helpers are in test_onnx_import.c).
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
#define F ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#include "test_onnx_import.h"

static void write_tensor(const char *path, Onnx__TensorProto *t) {
    size_t len = onnx__tensor_proto__get_packed_size(t);
    uint8_t *buf = malloc(len);
    onnx__tensor_proto__pack(t, buf);
    write_bytes(path, buf, len);
    free(buf);
}

void test_tensor_files(void **state) {
    (void)state;
    mb b;
    mb_init(&b, 13);
    int64_t d[2] = {2, 3};
    float v[6] = {1, -2, 3.5f, 0, 1e-3f, -7};
    tether_onnx_tensor t;
    write_tensor(tmp("f.pb"), mb_tensor_f(&b, "input", 2, d, v, 0));
    assert_int_equal(tether_onnx_tensor_read(tmp("f.pb"), &t), 0);
    assert_string_equal(t.name, "input");
    assert_true(tether_dtype_equal(t.dtype, TETHER_FLOAT32));
    assert_int_equal(t.ndim, 2);
    assert_int_equal(t.nbytes, 24);
    assert_memory_equal(t.data, v, 24);
    tether_onnx_tensor_free(&t);
    write_tensor(tmp("r.pb"), mb_tensor_f(&b, "", 2, d, v, 1));
    assert_int_equal(tether_onnx_tensor_read(tmp("r.pb"), &t), 0);
    assert_memory_equal(t.data, v, 24);
    tether_onnx_tensor_free(&t);
    int64_t iv[6] = {1, -2, 3, 4, 5, 1LL << 40};
    write_tensor(tmp("i.pb"), mb_tensor_i64(&b, "ids", 2, d, iv));
    assert_int_equal(tether_onnx_tensor_read(tmp("i.pb"), &t), 0);
    assert_true(tether_dtype_equal(t.dtype, TETHER_INT64));
    assert_memory_equal(t.data, iv, 48);
    tether_onnx_tensor_free(&t);
    /* float16 raw data keeps its bit patterns (kDLFloat, 16): 1.0, -2.0, 0.5, 65504, a
     * subnormal, 0 */
    Onnx__TensorProto *h = mb_tensor_f(&b, "h", 2, d, v, 1);
    h->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
    uint16_t hv[6] = {0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x0000};
    h->raw_data.data = (uint8_t *)hv;
    h->raw_data.len = sizeof hv;
    write_tensor(tmp("h.pb"), h);
    assert_int_equal(tether_onnx_tensor_read(tmp("h.pb"), &t), 0);
    assert_true(tether_dtype_equal(t.dtype, TETHER_DTYPE(kDLFloat, 16)));
    assert_int_equal(t.nbytes, 12);
    assert_memory_equal(t.data, hv, 12);
    tether_onnx_tensor_free(&t);
    /* float16 and bfloat16 in int32_data (the spec's typed field: one 16-bit pattern each) */
    int32_t i32[6] = {0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0xffff};
    uint16_t i16[6] = {0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0xffff};
    Onnx__TensorProto *ht = mb_tensor_f(&b, "ht", 2, d, v, 0);
    ht->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
    ht->n_float_data = 0;
    ht->n_int32_data = 6;
    ht->int32_data = i32;
    write_tensor(tmp("ht.pb"), ht);
    assert_int_equal(tether_onnx_tensor_read(tmp("ht.pb"), &t), 0);
    assert_true(tether_dtype_equal(t.dtype, TETHER_DTYPE(kDLFloat, 16)));
    assert_memory_equal(t.data, i16, 12);
    tether_onnx_tensor_free(&t);
    ht->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
    write_tensor(tmp("bt.pb"), ht);
    assert_int_equal(tether_onnx_tensor_read(tmp("bt.pb"), &t), 0);
    assert_true(tether_dtype_equal(t.dtype, TETHER_DTYPE(kDLBfloat, 16)));
    assert_memory_equal(t.data, i16, 12);
    tether_onnx_tensor_free(&t);
    i32[2] = 0x10000; /* not a 16-bit pattern: refused, not truncated */
    write_tensor(tmp("hbad.pb"), ht);
    assert_int_equal(tether_onnx_tensor_read(tmp("hbad.pb"), &t), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "int32_data[2] is 65536, not a bfloat16 value"));
    /* bool: int32_data and raw_data, one byte 0/1 (TETHER_BOOL); 2 is refused */
    int32_t bi[6] = {1, 0, 0, 1, 1, 0};
    uint8_t bb[6] = {1, 0, 0, 1, 1, 0};
    ht->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    ht->int32_data = bi;
    write_tensor(tmp("b.pb"), ht);
    assert_int_equal(tether_onnx_tensor_read(tmp("b.pb"), &t), 0);
    assert_true(tether_dtype_equal(t.dtype, TETHER_BOOL));
    assert_int_equal(t.nbytes, 6);
    assert_memory_equal(t.data, bb, 6);
    tether_onnx_tensor_free(&t);
    Onnx__TensorProto *br = mb_tensor_f(&b, "br", 2, d, v, 1);
    br->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    br->raw_data.data = bb;
    br->raw_data.len = 6;
    write_tensor(tmp("br.pb"), br);
    assert_int_equal(tether_onnx_tensor_read(tmp("br.pb"), &t), 0);
    assert_true(tether_dtype_equal(t.dtype, TETHER_BOOL));
    assert_memory_equal(t.data, bb, 6);
    tether_onnx_tensor_free(&t);
    bb[4] = 2;
    write_tensor(tmp("brbad.pb"), br);
    assert_int_equal(tether_onnx_tensor_read(tmp("brbad.pb"), &t), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "bool element 4 is 2"));
    /* the other integer types, raw_data and typed fields, keep their exact bytes */
    int32_t small[6] = {-128, 127, -1, 0, 5, -7};
    int8_t s8[6] = {-128, 127, -1, 0, 5, -7};
    ht->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT8;
    ht->int32_data = small;
    write_tensor(tmp("i8.pb"), ht);
    assert_int_equal(tether_onnx_tensor_read(tmp("i8.pb"), &t), 0);
    assert_true(tether_dtype_equal(t.dtype, TETHER_INT8));
    assert_memory_equal(t.data, s8, 6);
    tether_onnx_tensor_free(&t);
    uint64_t u64[6] = {0, 1, UINT64_MAX, 1ULL << 63, 42, 7};
    Onnx__TensorProto *ur = mb_tensor_f(&b, "u64", 2, d, v, 1);
    ur->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__UINT64;
    ur->raw_data.data = (uint8_t *)u64;
    ur->raw_data.len = sizeof u64;
    write_tensor(tmp("u64.pb"), ur);
    assert_int_equal(tether_onnx_tensor_read(tmp("u64.pb"), &t), 0);
    assert_true(tether_dtype_equal(t.dtype, TETHER_DTYPE(kDLUInt, 64)));
    assert_memory_equal(t.data, u64, sizeof u64);
    tether_onnx_tensor_free(&t);
    ur->raw_data.len = sizeof u64 - 4; /* not a whole number of elements */
    write_tensor(tmp("u64bad.pb"), ur);
    assert_int_equal(tether_onnx_tensor_read(tmp("u64bad.pb"), &t), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "not a whole number of uint64 elements"));
    /* errors: a count that does not fit the shape, a string tensor, truncation, another file */
    Onnx__TensorProto *bad = mb_tensor_f(&b, "short", 2, d, v, 0);
    bad->n_float_data = 5;
    write_tensor(tmp("bad.pb"), bad);
    assert_int_equal(tether_onnx_tensor_read(tmp("bad.pb"), &t), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "bad.pb: tensor 'short': 5 values for shape "
                                                "[2,3] (6 elements)"));
    Onnx__TensorProto *str = mb_tensor_f(&b, "s", 0, NULL, v, 0);
    str->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__STRING;
    write_tensor(tmp("s.pb"), str);
    assert_int_equal(tether_onnx_tensor_read(tmp("s.pb"), &t), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "element type string"));
    assert_non_null(strstr(tether_last_error(), "strings are refused"));
    Onnx__TensorProto *big = mb_tensor_f(&b, "big", 2, d, v, 1);
    size_t len = onnx__tensor_proto__get_packed_size(big);
    uint8_t *buf = malloc(len);
    onnx__tensor_proto__pack(big, buf);
    assert_int_equal(tether_onnx_tensor_parse(buf, len - 3, "cut.pb", &t), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "cut.pb: truncated file"));
    free(buf);
    assert_int_equal(tether_onnx_tensor_parse("\x93NUMPY", 6, "n.pb", &t), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "n.pb: not an ONNX TensorProto"));
    assert_int_equal(tether_onnx_tensor_read(tmp("nothere.pb"), &t), TETHER_ERR_IO);
    assert_non_null(strstr(tether_last_error(), "cannot open "));
    assert_non_null(strstr(tether_last_error(), "nothere.pb"));
    mb_free(&b);
}

/* tether import through the registered loader: the JSON model computes the same. */
void test_import_command(void **state) {
    (void)state;
    assert_int_equal(tether_onnx_register(), 0);
    mb b;
    conv_model(&b);
    mb_write(&b, tmp("conv.onnx"));
    mb_free(&b);
    char *argv[] = {"import", (char *)tmp("conv.onnx"), "-o", (char *)tmp("conv.json"), NULL};
    assert_int_equal(tether_cmd_import(4, argv), 0);
    tether_ir_graph a, j;
    assert_int_equal(tether_model_load(tmp("conv.onnx"), &a), 0);
    assert_int_equal(tether_model_load(tmp("conv.json"), &j), 0);
    float x[16], ya[8], yj[8];
    for (int i = 0; i < 16; i++) {
        x[i] = (float)i * 0.25f - 1.0f;
    }
    run1(&a, x, ya);
    run1(&j, x, yj);
    assert_memory_equal(ya, yj, sizeof ya);
    tether_ir_close(&a);
    tether_ir_close(&j);
    char names[4][128];
    int n;
    assert_int_equal(tether_onnx_model_inputs(tmp("conv.onnx"), names, 4, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(names[0], "x");
    /* a bad model: exit code 1, nothing written */
    write_bytes(tmp("bad.onnx"), "garbage!", 8);
    char *bad[] = {"import", (char *)tmp("bad.onnx"), "-o", (char *)tmp("bad.json"), NULL};
    assert_int_equal(tether_cmd_import(4, bad), 1);
    struct stat st;
    assert_int_not_equal(stat(tmp("bad.json"), &st), 0);
    assert_int_not_equal(stat(tmp("bad.bin"), &st), 0);
}

/* Findings of an adversarial review: each once crashed, hung, read outside the model's
 * directory or silently changed meaning. */
void test_hostile_models(void **state) {
    (void)state;
    mb b;
    int64_t s[2] = {1, 4}, two[1] = {2};
    /* int64 shape arithmetic that overflows: INT64_MIN / -1 (was SIGFPE), 2^62 * 4 (wrapped) */
    const char *ops[2] = {"Div", "Mul"};
    const int64_t lhs[2][2] = {{INT64_MIN, 4}, {(int64_t)1 << 62, 1}};
    const int64_t rhs[2][2] = {{-1, 1}, {4, 4}};
    for (int k = 0; k < 2; k++) {
        mb_init(&b, 13);
        mb_input(&b, "x", F, 2, s);
        mb_init_tensor(&b, mb_tensor_i64(&b, "a", 1, two, lhs[k]));
        mb_init_tensor(&b, mb_tensor_i64(&b, "z", 1, two, rhs[k]));
        mb_node(&b, ops[k], "arith", "a,z", "g");
        mb_node(&b, "Reshape", "reshape", "x,g", "y");
        mb_output(&b, "y", F);
        expect_error(&b, TETHER_ERR_LIMIT, "int64 overflow");
        mb_free(&b);
    }
    /* a node output named "" that a later node reads (was SIGSEGV) */
    mb_init(&b, 13);
    mb_input(&b, "x", F, 2, s);
    Onnx__NodeProto *r = mb_node(&b, "Relu", "r", "x", "tmp");
    Onnx__NodeProto *r2 = mb_node(&b, "Relu", "r2", "tmp", "y");
    r->output[0] = (char *)"";
    r2->input[0] = (char *)"";
    mb_output(&b, "y", F);
    tether_ir_graph g;
    assert_int_not_equal(load(&b, NULL, &g), 0);
    mb_free(&b);
    /* opset_import: a negative version, no default-domain entry, two conflicting entries */
    mb_init(&b, 13);
    mb_input(&b, "x", F, 2, s);
    mb_node(&b, "Relu", "r", "x", "y");
    mb_output(&b, "y", F);
    b.opset.version = -1;
    expect_error(&b, TETHER_ERR_INVALID_ARG, "no valid version");
    b.opset.version = 13;
    b.opset.domain = (char *)"com.microsoft";
    expect_error(&b, TETHER_ERR_INVALID_ARG, "no entry for the default ONNX domain");
    b.opset.domain = (char *)"";
    mb_opset(&b, "ai.onnx", 6);
    expect_error(&b, TETHER_ERR_INVALID_ARG, "default domain twice, with opsets 13 and 6");
    mb_free(&b);
    /* an Identity without its input */
    mb_init(&b, 13);
    mb_input(&b, "x", F, 2, s);
    Onnx__NodeProto *id = mb_node(&b, "Identity", "id", "x", "y");
    id->n_input = 0;
    mb_output(&b, "y", F);
    assert_int_not_equal(load(&b, NULL, &g), 0);
    mb_free(&b);
    /* an attribute given twice (was: the first one silently won) */
    mb_init(&b, 13);
    mb_input(&b, "x", F, 2, s);
    Onnx__NodeProto *lr = mb_node(&b, "LeakyRelu", "lr", "x", "y");
    mb_attr_f(&b, lr, "alpha", 0.1f);
    mb_attr_f(&b, lr, "alpha", 0.2f);
    mb_output(&b, "y", F);
    expect_error(&b, TETHER_ERR_UNSUPPORTED, "attribute 'alpha' given twice");
    mb_free(&b);
    /* a negative dimension is an error of its own, not a "dynamic" one */
    mb_init(&b, 13);
    mb_input(&b, "x", F, 2, s);
    b.g.input[0]->type->tensor_type->shape->dim[1]->dim_value = -4;
    mb_node(&b, "Relu", "r", "x", "y");
    mb_output(&b, "y", F);
    expect_error(&b, TETHER_ERR_INVALID_ARG, "graph input 'x' has a negative dimension 1 (-4)");
    mb_free(&b);
    /* an input whose extents overflow when multiplied is too large, not "empty" */
    mb_init(&b, 13);
    int64_t huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    mb_input(&b, "x", F, 2, huge);
    mb_node(&b, "Relu", "r", "x", "y");
    mb_output(&b, "y", F);
    expect_error(&b, TETHER_ERR_LIMIT, "2^31-1 elements");
    mb_free(&b);
}

/* External data must be a regular file inside the model's directory: a symbolic link out of it,
 * a FIFO (which would block the import forever) and a directory are refused. */
void test_external_data_files(void **state) {
    (void)state;
    float w[4] = {1, 2, 3, 4};
    char outside[700];
    snprintf(outside, sizeof outside, "%s.outside", g_dir);
    write_bytes(outside, w, sizeof w); /* beside the model directory, 16 bytes: a valid size */
    unlink(tmp("link.bin"));
    assert_int_equal(symlink(outside, tmp("link.bin")), 0);
    unlink(tmp("fifo"));
    assert_int_equal(mkfifo(tmp("fifo"), 0600), 0);
    mkdir(tmp("sub"), 0700);
    const char *where[3] = {"link.bin", "fifo", "sub"};
    const char *why[3] = {"outside the model's directory", "not a regular file",
                          "not a regular file"};
    for (int k = 0; k < 3; k++) {
        mb b;
        mb_init(&b, 13);
        int64_t s[1] = {4};
        mb_input(&b, "x", F, 1, s);
        Onnx__TensorProto *t = mb_tensor_f(&b, "w", 1, s, w, 1);
        t->has_raw_data = 0;
        t->has_data_location = 1;
        t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        Onnx__StringStringEntryProto e, *ep[1] = {&e};
        onnx__string_string_entry_proto__init(&e);
        e.key = (char *)"location";
        e.value = (char *)where[k];
        t->external_data = ep;
        t->n_external_data = 1;
        mb_init_tensor(&b, t);
        mb_node(&b, "Mul", "mul", "x,w", "y");
        mb_output(&b, "y", F);
        mb_write(&b, tmp("ext2.onnx"));
        tether_ir_graph g;
        int rc = tether_onnx_load(tmp("ext2.onnx"), NULL, &g);
        assert_int_not_equal(rc, 0);
        if (!strstr(tether_last_error(), why[k])) {
            fail_msg("%s: %s", where[k], tether_last_error());
        }
        mb_free(&b);
    }
    unlink(tmp("link.bin"));
    unlink(tmp("fifo"));
    rmdir(tmp("sub"));
    unlink(outside);
}

/* Every node's input and output counts are checked against the ONNX schema of its operator
 * version before any converter reads them (an Add with one input made cv_binary read input 1
 * past the end of the node's list); empty names are absent optional inputs. */
static void arity_model(mb *b, int opset, const char *op, const char *ins, const char *outs) {
    int64_t s[2] = {1, 4}, one[1] = {1};
    float v = 1.0f;
    mb_init(b, opset);
    mb_input(b, "x", F, 2, s);
    mb_init_tensor(b, mb_tensor_f(b, "k", 1, one, &v, 0));
    mb_node(b, op, "n0", ins, outs);
    mb_output(b, "y", F);
}

void test_arity(void **state) {
    (void)state;
    mb b;
    static const struct {
        int opset;
        const char *op, *ins, *outs, *msg;
    } bad[] = {
        {13, "Add", "x", "y", "m.onnx: node 'n0' (Add): takes 2 inputs, 1 given"},
        {13, "Add", "x,", "y", "node 'n0' (Add): takes 2 inputs, 1 given"},
        {13, "Add", ",x", "y",
         "node 'n0' (Add): takes 2 inputs, 1 given (input 0 has an empty name)"},
        {13, "Mul", "", "y", "node 'n0' (Mul): takes 2 inputs, 0 given"},
        {13, "Relu", "x,k", "y", "node 'n0' (Relu): takes 1 input, 2 given"},
        {13, "Clip", "x,k,k,k", "y", "node 'n0' (Clip): takes 1 to 3 inputs at opset 13, 4 given"},
        {10, "Clip", "x,k", "y", "node 'n0' (Clip): takes 1 input at opset 10, 2 given"},
        {13, "Unsqueeze", "x", "y", "node 'n0' (Unsqueeze): takes 2 inputs at opset 13, 1 given"},
        {13, "Concat", "", "y", "node 'n0' (Concat): takes at least 1 input, 0 given"},
        {10, "Gemm", "x,k", "y", "node 'n0' (Gemm): takes 3 inputs at opset 10, 2 given"},
        {13, "Conv", "x", "y", "node 'n0' (Conv): takes 2 to 3 inputs, 1 given"},
        {13, "Constant", "x", "y", "node 'n0' (Constant): takes 0 inputs, 1 given"},
        {13, "Relu", "x", "y,z", "node 'n0' (Relu): has 1 output, 2 given"},
        {13, "Relu", "x", "", "node 'n0' (Relu): has 1 output, 0 given"},
        {13, "Relu", "x", ",", "node 'n0' (Relu): output 0 has an empty name"},
        {13, "Relu", "x", ",z", "node 'n0' (Relu): has 1 output, 2 given"},
        {7, "MaxPool", "x", "y,z", "node 'n0' (MaxPool): has 1 output at opset 7, 2 given"},
        {14, "BatchNormalization", "x,k,k,k,k", "y,a,b,c,d",
         "node 'n0' (BatchNormalization): has 1 to 3 outputs at opset 14, 5 given"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        arity_model(&b, bad[i].opset, bad[i].op, bad[i].ins, bad[i].outs);
        expect_error(&b, TETHER_ERR_INVALID_ARG, bad[i].msg);
        mb_free(&b);
    }
    /* empty names for absent optional inputs, trailing or in the middle, and absent optional
     * outputs are fine: Clip-13 with only max, Resize-13 without roi and scales (sizes only) */
    int64_t s4[4] = {1, 1, 2, 2}, four[1] = {4}, sizes[4] = {1, 1, 4, 4};
    float mx = 0.5f;
    mb_init(&b, 13);
    int64_t s[2] = {1, 4}, one[1] = {1};
    mb_input(&b, "x", F, 2, s);
    mb_init_tensor(&b, mb_tensor_f(&b, "mx", 1, one, &mx, 0));
    mb_node(&b, "Clip", "clip", "x,,mx,", "y");
    mb_output(&b, "y", F);
    tether_ir_graph g;
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    tether_ir_close(&g);
    mb_free(&b);
    mb_init(&b, 13);
    mb_input(&b, "x", F, 4, s4);
    mb_init_tensor(&b, mb_tensor_i64(&b, "sizes", 1, four, sizes));
    mb_node(&b, "Resize", "resize", "x,,,sizes", "y,");
    mb_output(&b, "y", F);
    if (load(&b, NULL, &g)) {
        fail_msg("%s", tether_error_detail());
    }
    assert_int_equal(g.tensors[g.outputs[0]].shape[3], 4);
    tether_ir_close(&g);
    mb_free(&b);
    /* every operator of the table is checked: no inputs at all, and more than any takes */
    int nops = 0;
    const tether_onnx_op_info *ops = tether_onnx_ops(&nops);
    assert_true(nops > 40);
    for (int i = 0; i < nops; i++) {
        const char *op = ops[i].op_type;
        bool concat = strcmp(op, "Concat") == 0 || strcmp(op, "Max") == 0 ||
                      strcmp(op, "Min") == 0 || strcmp(op, "Sum") == 0 || strcmp(op, "Mean") == 0 ||
                      strcmp(op, "Einsum") == 0 || strcmp(op, "Loop") == 0 ||
                      strcmp(op, "Scan") == 0,
             constant = strcmp(op, "Constant") == 0 || strcmp(op, "Loop") == 0;
        for (int many = 0; many < 2; many++) {
            if ((many && concat) || (!many && constant)) {
                continue; /* variadic; takes none (Loop: M and cond optional) */
            }
            arity_model(&b, ops[i].until, op, many ? "x,x,x,x,x,x,x,x,x,x" : "", "y");
            int rc = load(&b, NULL, &g);
            if (rc != TETHER_ERR_INVALID_ARG || !strstr(tether_last_error(), "takes ") ||
                !strstr(tether_last_error(), op)) {
                fail_msg("%s with %s inputs: status %d, %s", op, many ? "10" : "no", rc,
                         tether_last_error());
            }
            assert_int_equal(g.ntensors, 0);
            mb_free(&b);
        }
    }
}

/* Every input that once crashed or exhausted the importer (tests/onnx/fuzz/regressions/, the
 * fuzzer's seeds too) is refused with a message naming the file, leaving an empty graph. */
void test_regression_seeds(void **state) {
    (void)state;
    static const struct {
        const char *file, *msg;
    } seeds[] = {
        {"add-one-input.onnx", "node 'add0' (Add): takes 2 inputs, 1 given"},
        {"initializer-dims-without-data.onnx",
         "tensor 'W': 0 values for shape [1000000000] (1000000000 elements)"},
        {"constant-of-shape-huge.onnx", "node 'cos' (ConstantOfShape): a constant of shape "
                                        "[2147483647]"},
        {"squeeze-without-input.onnx", ""},
        {"reshape-shape-not-constant.onnx", ""},
        {"timeout-maxpool-huge-window.onnx", ""},
    };
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
        char path[700];
        snprintf(path, sizeof path, "%s/tests/onnx/fuzz/regressions/%s", TETHER_SOURCE_DIR,
                 seeds[i].file);
        tether_ir_graph g;
        int rc = tether_onnx_load(path, NULL, &g);
        if (rc == 0) {
            tether_ir_close(&g); /* an input that once hung or crashed may load now */
            assert_true(!seeds[i].msg[0]);
            continue;
        }
        assert_int_equal(g.ntensors, 0);
        if (!strstr(tether_last_error(), seeds[i].file) ||
            !strstr(tether_last_error(), seeds[i].msg)) {
            fail_msg("%s: %s", seeds[i].file, tether_last_error());
        }
    }
}

/* Appends a protobuf varint. */
static size_t put_varint(uint8_t *p, uint64_t v) {
    size_t n = 0;
    do {
        p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

/* A model whose only node carries `count` empty attributes: 2 bytes each in the file, a struct
 * of ~250 bytes each once decoded (malloc'd). */
static uint8_t *empty_attributes_model(size_t count, size_t *len) {
    size_t node_len = 6 + 2 * count; /* op_type "Relu" + the attributes */
    uint8_t *m = malloc(64 + node_len);
    assert_non_null(m);
    size_t o = 0;
    m[o++] = 0x08; /* ir_version 8 */
    m[o++] = 8;
    m[o++] = 0x42; /* opset_import { version 13 } */
    m[o++] = 2;
    m[o++] = 0x10;
    m[o++] = 13;
    m[o++] = 0x3a; /* graph */
    uint8_t tmp[10];
    size_t nl = put_varint(tmp, node_len);
    o += put_varint(m + o, 1 + nl + node_len);
    m[o++] = 0x0a; /* graph.node */
    o += put_varint(m + o, node_len);
    m[o++] = 0x22; /* node.op_type */
    m[o++] = 4;
    memcpy(m + o, "Relu", 4);
    o += 4;
    for (size_t i = 0; i < count; i++) {
        m[o++] = 0x2a; /* node.attribute, empty */
        m[o++] = 0;
    }
    *len = o;
    return m;
}

/* The checks of test_allocation_bounds, in a child process whose address space is limited to
 * what it has plus 256 MiB: the importer must refuse each malformed file with its message
 * without asking for more (the old importer allocated an initializer's 4 GB before finding it
 * had no data). 0 when every check passed. */
static int bounded_loads(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f || fscanf(f, "%lu", &pages) != 1) {
        fprintf(stderr, "cannot read /proc/self/statm\n");
        return 1;
    }
    fclose(f);
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)256 << 20);
    if (setrlimit(RLIMIT_AS, &rl) != 0) {
        perror("setrlimit");
        return 1;
    }
    int bad = 0;
    /* an initializer's dims ask for 4 GB: a file of 102 bytes */
    char path[700];
    snprintf(path, sizeof path, "%s/tests/onnx/fuzz/regressions/initializer-dims-without-data.onnx",
             TETHER_SOURCE_DIR);
    tether_ir_graph g;
    if (tether_onnx_load(path, NULL, &g) != TETHER_ERR_INVALID_ARG ||
        !strstr(tether_last_error(), "tensor 'W': 0 values for shape [1000000000]")) {
        fprintf(stderr, "initializer: %s\n", tether_last_error());
        bad = 1;
    }
    /* a ConstantOfShape of 2^31-1 floats, computed at import time */
    snprintf(path, sizeof path, "%s/tests/onnx/fuzz/regressions/constant-of-shape-huge.onnx",
             TETHER_SOURCE_DIR);
    if (tether_onnx_load(path, NULL, &g) != TETHER_ERR_LIMIT ||
        !strstr(tether_last_error(), "(ConstantOfShape): a constant of shape [2147483647]")) {
        fprintf(stderr, "ConstantOfShape: %s\n", tether_last_error());
        bad = 1;
    }
    /* a .pb tensor file: int64 dims of 2^31-1 elements, raw_data of 8 bytes */
    static const uint8_t pb[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0x07, 0x10, 0x07, 0x4a,
                                 0x08, 1,    2,    3,    4,    5,    6,    7,    8};
    tether_onnx_tensor t;
    if (tether_onnx_tensor_parse(pb, sizeof pb, "big.pb", &t) != TETHER_ERR_INVALID_ARG ||
        !strstr(tether_last_error(), "big.pb: tensor '(unnamed)': 1 values for shape "
                                     "[2147483647]")) {
        fprintf(stderr, ".pb: %s\n", tether_last_error());
        bad = 1;
    }
    /* external data: dims of 2^30 floats, a data file of 16 bytes (never read: wrong size) */
    mb b;
    int64_t s[1] = {4}, one[1] = {1};
    float w[1] = {0};
    mb_init(&b, 13);
    mb_input(&b, "x", F, 1, s);
    Onnx__TensorProto *tp = mb_tensor_f(&b, "w", 1, one, w, 1);
    tp->dims[0] = (int64_t)1 << 30;
    tp->has_raw_data = 0;
    tp->has_data_location = 1;
    tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    Onnx__StringStringEntryProto e, *ep[1] = {&e};
    onnx__string_string_entry_proto__init(&e);
    e.key = (char *)"location";
    e.value = (char *)"w16.bin";
    tp->external_data = ep;
    tp->n_external_data = 1;
    mb_init_tensor(&b, tp);
    mb_node(&b, "Mul", "mul", "x,w", "y");
    mb_output(&b, "y", F);
    mb_write(&b, tmp("extbig.onnx"));
    mb_free(&b);
    if (tether_onnx_load(tmp("extbig.onnx"), NULL, &g) != TETHER_ERR_INVALID_ARG ||
        !strstr(tether_last_error(), "tensor 'w': 4 values for shape [1073741824]")) {
        fprintf(stderr, "external data: %s\n", tether_last_error());
        bad = 1;
    }
    /* 1 MB of empty attributes: protobuf-c would make 512K structs of ~250 bytes (130 MB) */
    size_t len;
    uint8_t *m = empty_attributes_model((size_t)1 << 19, &len);
    if (tether_onnx_load_buffer(m, len, "attrs.onnx", NULL, &g) != TETHER_ERR_LIMIT ||
        !strstr(tether_last_error(), "attrs.onnx: not a valid ONNX model: decoding its")) {
        fprintf(stderr, "attributes: %s\n", tether_last_error());
        bad = 1;
    }
    free(m);
    return bad;
}

void test_allocation_bounds(void **state) {
    (void)state;
    float w[4] = {1, 2, 3, 4};
    write_bytes(tmp("w16.bin"), w, sizeof w);
    /* the same model with a few empty attributes decodes (and is refused for them later) */
    size_t len;
    uint8_t *m = empty_attributes_model(3, &len);
    tether_ir_graph g;
    assert_int_not_equal(tether_onnx_load_buffer(m, len, "attrs.onnx", NULL, &g), 0);
    assert_null(strstr(tether_last_error(), "decoding its"));
    free(m);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        _exit(bounded_loads());
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fail_msg("the bounded loads failed (%s %d): see the lines above",
                 WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    }
}
