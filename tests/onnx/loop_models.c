/*
 * The run-time Loop models of loop_models.h, built with model_builder.c (opset 13). What must
 * stay true: each model as loop_models.h describes it (the tests' expected values follow from
 * that description).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "loop_models.h"

#define F  ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define B  ONNX__TENSOR_PROTO__DATA_TYPE__BOOL
#define I6 ONNX__TENSOR_PROTO__DATA_TYPE__INT64

void loop_while_model(mb *b, mb *body) {
    static const int64_t d1[1] = {1};
    mb_init(b, 13);
    mb_init(body, 13);
    mb_input(body, "i", I6, 0, NULL);
    mb_input(body, "cin", B, 0, NULL);
    mb_input(body, "nin", I6, 1, d1);
    mb_input(body, "yin", F, 1, d1);
    mb_node(body, "Add", "inc", "nin,one", "nout");
    mb_node(body, "Mul", "scale", "yin,x", "yout");
    mb_node(body, "Less", "lt", "nout,limit", "cvec");
    mb_node(body, "Squeeze", "sq", "cvec", "cout");
    mb_output(body, "cout", B);
    mb_output(body, "nout", I6);
    mb_output(body, "yout", F);
    int64_t one = 1, zero = 0;
    mb_init_tensor(b, mb_tensor_i64(b, "one", 1, d1, &one));
    mb_init_tensor(b, mb_tensor_i64(b, "n0", 1, d1, &zero));
    mb_input(b, "c0", B, 0, NULL);
    mb_input(b, "limit", I6, 1, d1);
    mb_input(b, "x", F, 1, d1);
    mb_input(b, "y0", F, 1, d1);
    Onnx__NodeProto *n = mb_node(b, "Loop", "loop", ",c0,n0,y0", "nfinal,yfinal");
    mb_attr_g(b, n, "body", body);
    mb_output(b, "nfinal", I6);
    mb_output(b, "yfinal", F);
}

void loop_for_model(mb *b, mb *body) {
    static const int64_t d2[1] = {2};
    mb_init(b, 13);
    mb_init(body, 13);
    mb_input(body, "i", I6, 0, NULL);
    mb_input(body, "cin", B, 0, NULL);
    mb_input(body, "ain", F, 1, d2);
    mb_input(body, "bin", F, 1, d2);
    mb_input(body, "sin", I6, 0, NULL);
    mb_node(body, "Add", "fib", "ain,bin", "bout");
    mb_node(body, "Add", "sum", "sin,i", "sout");
    mb_output(body, "cin", B);
    mb_output(body, "bin", F);
    mb_output(body, "bout", F);
    mb_output(body, "sout", I6);
    int64_t zero = 0;
    mb_init_tensor(b, mb_tensor_i64(b, "s0", 0, NULL, &zero));
    mb_input(b, "M", I6, 0, NULL);
    mb_input(b, "a0", F, 1, d2);
    mb_input(b, "b0", F, 1, d2);
    Onnx__NodeProto *n = mb_node(b, "Loop", "loop", "M,,a0,b0,s0", "af,bf,sf");
    mb_attr_g(b, n, "body", body);
    mb_output(b, "af", F);
    mb_output(b, "bf", F);
    mb_output(b, "sf", I6);
}

void loop_scan_model(mb *b, mb *body, int variant) {
    static const int64_t d1[1] = {1}, d2[1] = {2};
    mb_init(b, 13);
    mb_init(body, 13);
    mb_input(body, "i", I6, 0, NULL);
    mb_input(body, "cin", B, 0, NULL);
    mb_input(body, "nin", I6, 1, d1);
    mb_input(body, "yin", F, 1, d2);
    mb_node(body, "Add", "inc", "nin,one", "nout");
    mb_node(body, "Mul", "scale", "yin,x", "yout");
    mb_node(body, "Less", "lt", "nout,limit", "cvec");
    mb_node(body, "Squeeze", "sq", "cvec", "cout");
    mb_output(body, "cout", B);
    mb_output(body, "nout", I6);
    mb_output(body, "yout", F);
    mb_output(body, "yout", F);
    mb_output(body, "nout", I6);
    int64_t one = 1, zero = 0, m = 8;
    static const float y0[2] = {1, -1};
    mb_init_tensor(b, mb_tensor_i64(b, "one", 1, d1, &one));
    mb_init_tensor(b, mb_tensor_i64(b, "n0", 1, d1, &zero));
    mb_init_tensor(b, mb_tensor_f(b, "y0", 1, d2, y0, 0));
    if (variant == 2) {
        mb_input(b, "M", I6, 0, NULL);
    } else if (variant == 4) { /* M = Min(Mraw, 6): bounded by the value-range analysis */
        int64_t six = 6;
        mb_init_tensor(b, mb_tensor_i64(b, "six", 0, NULL, &six));
        mb_input(b, "Mraw", I6, 0, NULL);
        mb_node(b, "Min", "cap", "Mraw,six", "M");
    } else if (variant == 5) { /* M = Cast(Mu8): bounded by uint8's range */
        mb_input(b, "Mu8", ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, 0, NULL);
        Onnx__NodeProto *cast = mb_node(b, "Cast", "widen", "Mu8", "M");
        mb_attr_i(b, cast, "to", I6);
    } else {
        mb_init_tensor(b, mb_tensor_i64(b, "M", 0, NULL, &m));
    }
    if (variant != 1) {
        mb_input(b, "c0", B, 0, NULL);
    }
    mb_input(b, "limit", I6, 1, d1);
    mb_input(b, "x", F, 1, d2);
    Onnx__NodeProto *n =
        mb_node(b, "Loop", "loop", variant == 1 ? "M,,n0,y0" : "M,c0,n0,y0", "nfinal,yfinal,ys,ns");
    mb_attr_g(b, n, "body", body);
    mb_output(b, "nfinal", I6);
    mb_output(b, "yfinal", F);
    if (variant >= 6) { /* readers of the dynamic scan output beyond elementwise ones */
        static const int64_t d21[2] = {2, 1}, d1a[1] = {1};
        static const float w[2] = {1, 2};
        int64_t zero0 = 0;
        mb_init_tensor(b, mb_tensor_f(b, "W", 2, d21, w, 0));
        mb_init_tensor(b, mb_tensor_i64(b, "ax0", 1, d1a, &zero0));
        if (variant == 6) {
            Onnx__NodeProto *r = mb_node(b, "ReduceSum", "tot_n", "ys,ax0", "tot");
            mb_attr_i(b, r, "keepdims", 0);
            mb_node(b, "MatMul", "proj_n", "ys,W", "proj");
            mb_node(b, "Mul", "sq_n", "ys,ys", "sq");
            Onnx__NodeProto *c = mb_node(b, "Concat", "cat_n", "ys,sq", "cat");
            mb_attr_i(b, c, "axis", 1);
            mb_node(b, "ReduceSum", "tot2_n", "proj,ax0", "tot2");
            /* reductions over the iterations that read the live row count */
            static const char *red[4][2] = {{"ReduceMean", "mean"},
                                            {"ReduceMax", "mx"},
                                            {"ReduceMin", "mn"},
                                            {"ReduceProd", "prod"}};
            for (int k = 0; k < 4; k++) { /* axes an attribute before opset 18 */
                Onnx__NodeProto *r = mb_node(b, red[k][0], red[k][1], "ys", red[k][1]);
                mb_attr_ints(b, r, "axes", 1, &zero0);
                mb_attr_i(b, r, "keepdims", 0);
            }
            mb_node(b, "Exp", "e_n", "ys", "eys");
            Onnx__NodeProto *es = mb_node(b, "ReduceSum", "esum_n", "eys,ax0", "esum");
            mb_attr_i(b, es, "keepdims", 0);
            mb_output(b, "tot", F);
            mb_output(b, "proj", F);
            mb_output(b, "cat", F);
            mb_output(b, "tot2", F);
            mb_output(b, "mean", F);
            mb_output(b, "mx", F);
            mb_output(b, "mn", F);
            mb_output(b, "prod", F);
            mb_output(b, "esum", F);
        } else { /* by the live extent: concat along the dynamic axis, a transpose moving it */
            if (variant == 7) {
                Onnx__NodeProto *c = mb_node(b, "Concat", "red", "ys,ys", "red_out");
                mb_attr_i(b, c, "axis", 0);
            } else {
                static const int64_t perm[2] = {1, 0};
                Onnx__NodeProto *t = mb_node(b, "Transpose", "red", "ys", "red_out");
                mb_attr_ints(b, t, "perm", 2, perm);
            }
            mb_output(b, "red_out", F);
        }
    } else if (variant == 3) { /* a consumer of the dynamic scan output */
        static const float two = 2;
        mb_init_tensor(b, mb_tensor_f(b, "two", 0, NULL, &two, 0));
        mb_node(b, "Mul", "double", "ys,two", "ys2");
        mb_output(b, "ys2", F);
    } else {
        mb_output(b, "ys", F);
    }
    mb_output(b, "ns", I6);
}

void scan_dirs_model(mb *b, mb *body) {
    static const int64_t d2[1] = {2}, d23[2] = {2, 3}, d32[2] = {3, 2};
    mb_init(b, 16);
    mb_init(body, 16);
    mb_input(body, "sin", F, 1, d2);
    mb_input(body, "col", F, 1, d2);
    mb_input(body, "row", F, 1, d2);
    mb_node(body, "Add", "a1", "sin,col", "t");
    mb_node(body, "Add", "a2", "t,row", "sout");
    mb_node(body, "Mul", "sq", "sout,sout", "o1");
    mb_node(body, "Sub", "dif", "sout,row", "o2");
    mb_output(body, "sout", F);
    mb_output(body, "o1", F);
    mb_output(body, "o2", F);
    mb_input(b, "s0", F, 1, d2);
    mb_input(b, "seq", F, 2, d23);
    mb_input(b, "seq2", F, 2, d32);
    Onnx__NodeProto *n = mb_node(b, "Scan", "scan", "s0,seq,seq2", "sfinal,outs1,outs2");
    mb_attr_g(b, n, "body", body);
    mb_attr_i(b, n, "num_scan_inputs", 2);
    mb_attr_ints(b, n, "scan_input_axes", 2, (const int64_t[]){1, -2});
    mb_attr_ints(b, n, "scan_input_directions", 2, (const int64_t[]){1, 0});
    mb_attr_ints(b, n, "scan_output_axes", 2, (const int64_t[]){-1, 0});
    mb_attr_ints(b, n, "scan_output_directions", 2, (const int64_t[]){1, 0});
    mb_output(b, "sfinal", F);
    mb_output(b, "outs1", F);
    mb_output(b, "outs2", F);
}

void loop_slice_model(mb *b, mb *body, bool gather) {
    static const int64_t d1[1] = {1}, d6[1] = {6};
    mb_init(b, 13);
    mb_init(body, 13);
    mb_input(body, "i", I6, 0, NULL);
    mb_input(body, "cin", B, 0, NULL);
    mb_input(body, "sin", F, 1, d1);
    mb_node(body, "Unsqueeze", "start_n", "i,ax0", "start");
    if (gather) {
        mb_node(body, "Gather", "pick", "seq,start", "el");
    } else {
        mb_node(body, "Add", "end_n", "start,one", "end");
        mb_node(body, "Slice", "pick", "seq,start,end", "el");
    }
    mb_node(body, "Add", "acc", "sin,el", "sout");
    mb_output(body, "cin", B);
    mb_output(body, "sout", F);
    mb_output(body, "el", F);
    int64_t one = 1, zero = 0;
    float s0 = 0;
    mb_init_tensor(b, mb_tensor_i64(b, "one", 1, d1, &one));
    mb_init_tensor(b, mb_tensor_i64(b, "ax0", 1, d1, &zero));
    mb_init_tensor(b, mb_tensor_f(b, "s0", 1, d1, &s0, 0));
    mb_input(b, "M", I6, 0, NULL);
    mb_input(b, "seq", F, 1, d6);
    Onnx__NodeProto *n = mb_node(b, "Loop", "loop", "M,,s0", "sfinal,els");
    mb_attr_g(b, n, "body", body);
    mb_output(b, "sfinal", F);
    mb_output(b, "els", F);
}

void nonzero_readers_model(mb *b, int variant) {
    static const int64_t d23[2] = {2, 3}, d12[2] = {1, 2}, d1[1] = {1};
    static const int64_t pad[2] = {7, 7}, two = 2, ax2 = 2, zero = 0, m2 = -2, big = INT64_MAX,
                         one = 1, last = -1;
    mb_init(b, 13);
    mb_input(b, "x", F, 2, d23);
    mb_node(b, "NonZero", "nz", "x", "nzo");
    mb_node(b, "Transpose", "tr", "nzo", "t");
    if (variant == 1) {
        mb_init_tensor(b, mb_tensor_i64(b, "i0", 0, NULL, &zero));
        mb_init_tensor(b, mb_tensor_i64(b, "im1", 0, NULL, &last));
        mb_node(b, "Gather", "first_n", "t,i0", "first");
        mb_node(b, "Gather", "last_n", "t,im1", "last");
        mb_output(b, "first", I6);
        mb_output(b, "last", I6);
        return;
    }
    mb_init_tensor(b, mb_tensor_i64(b, "s0", 1, d1, &zero));
    mb_init_tensor(b, mb_tensor_i64(b, "e2", 1, d1, &two));
    mb_init_tensor(b, mb_tensor_i64(b, "sm2", 1, d1, &m2));
    mb_init_tensor(b, mb_tensor_i64(b, "ebig", 1, d1, &big));
    mb_init_tensor(b, mb_tensor_i64(b, "ax0", 1, d1, &zero));
    mb_init_tensor(b, mb_tensor_i64(b, "ax2", 1, d1, &ax2));
    mb_init_tensor(b, mb_tensor_i64(b, "i1", 0, NULL, &one));
    mb_init_tensor(b, mb_tensor_i64(b, "pad", 2, d12, pad));
    mb_node(b, "Slice", "head_n", "t,s0,e2,ax0", "head");
    mb_node(b, "Slice", "tail_n", "t,sm2,ebig,ax0", "tail");
    mb_node(b, "Gather", "cols_n", "nzo,i1", "cols");
    Onnx__NodeProto *c = mb_node(b, "Concat", "cat_n", "t,pad", "cat");
    mb_attr_i(b, c, "axis", 0);
    mb_node(b, "Unsqueeze", "unsq", "t,ax2", "t3");
    Onnx__NodeProto *f = mb_node(b, "Flatten", "flat_n", "t3", "flat");
    mb_attr_i(b, f, "axis", 1);
    const char *outs[6] = {"t", "head", "tail", "cols", "cat", "flat"};
    for (int i = 0; i < 6; i++) {
        mb_output(b, outs[i], I6);
    }
}
