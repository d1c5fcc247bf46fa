/*
 * Quantized models on the OpenCL backend (emit_opencl_quant.c, emit_opencl_qconv.c,
 * emit_opencl_qelt.c) on PoCL:
 * each model's outputs equal the C backend's and the reference interpreter's byte for byte:
 *  - the int8 QDQ DS-CNN (ds_cnn_int8.h: conv 10x4 stride 2, depthwise 3x3 and pointwise blocks,
 *    global average pool and FC as qmatmul, per-channel int8 weights, int8 activations);
 *  - the same network's float twin quantized by `tether quantize`'s library call with uint8
 *    activations (asymmetric zero points; its FC stays a float Gemm, compared within 1e-5);
 *  - a QOperator model (QuantizeLinear to uint8, QLinearConv grouped with stride, dilation and
 *    asymmetric padding, uint8 weights with a zero point and 6 channels (not a multiple of 4),
 *    depthwise with per-channel int8 weights, pointwise over 25 pixels (a partial block),
 *    reshape, QLinearMatMul with constant uint8 weights and with two activations through a
 *    transpose of uint8);
 *  - ONNX Runtime's com.microsoft QLinearLeakyRelu, QLinearAdd (broadcast), QLinearSigmoid,
 *    QLinearMul, QLinearConcat, QLinearAveragePool and MaxPool on uint8: all integer operators;
 *  - QuantizeLinear alone on values at and near rounding ties, NaN, infinities, zeros and
 *    subnormals (per tensor int8, per channel uint8): the correctly rounded division;
 *  - the residual int8 blocks of test_quant_elt (qelt_block.h: qadd, qmul, qlut, qmax_pool,
 *    qavg_pool of emit_opencl_qelt.c; broadcasting, uint8, ceil_mode) and qadd/qmul on exact
 *    rounding ties;
 * an integer graph output compiles (the typed kernels' host runner passes any element type), and
 * the refusals name the node or tensor: an integer tensor read by an operator without an integer
 * kernel, --precision fp16.
 *
 * What must stay true: the C, interpreter and OpenCL outputs of integer operators are compared
 * with memcmp (no tolerance); tetherd is started by the test (local:) and stopped at the end.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "codegen_common.h"
#include "ds_cnn_int8.h"
#include "model_builder.h"
#include "ops_common.h"
#include "qelt_block.h"
#include "tether/compiler.h"
#include "tether/onnx.h"
#include "tether/onnx_quantize.h"

enum { F32 = 1, U8 = 2, I8 = 3, I32 = 6, I64 = 7 };

static uint32_t g_seed = 2028;

static uint32_t rnd(void) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return g_seed >> 8;
}

static float gauss(float sd) {
    float s = 0.0f;
    for (int i = 0; i < 4; i++) {
        s += (float)(rnd() % 10000) / 10000.0f - 0.5f;
    }
    return s * sd * 1.7f;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = calloc((size_t)n + 1, 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return s;
}

static void check_graphs(tether_ir_graph *g, tether_ir_graph *h, int nin, const int64_t *in_elems,
                         int nsets, float **sets, int nout, const int64_t *out_elems, float tol,
                         char *dir, size_t dn);

/* Loads the ONNX model at path; runs it on the interpreter (passes applied), the C backend and
 * the OpenCL backend with each input set, and asserts the outputs equal byte for byte (tol 0), or
 * within tol where a float operator after the integer ones sums in another order. */
static void check_model(const char *path, int nin, const int64_t *in_elems, int nsets, float **sets,
                        int nout, const int64_t *out_elems, float tol, char *dir, size_t dn) {
    tether_ir_graph g, h;
    if (tether_onnx_load(path, NULL, &g) || tether_onnx_load(path, NULL, &h)) {
        fail_msg("%s", tether_last_error());
    }
    check_graphs(&g, &h, nin, in_elems, nsets, sets, nout, out_elems, tol, dir, dn);
}

/* check_model's comparison of g (as loaded) and h (the same graph, passes run here); closes
 * both. */
static void check_graphs(tether_ir_graph *g, tether_ir_graph *h, int nin, const int64_t *in_elems,
                         int nsets, float **sets, int nout, const int64_t *out_elems, float tol,
                         char *dir, size_t dn) {
    tether_pass_options po;
    tether_pass_options_init(&po);
    assert_int_equal(tether_passes_run(h, &po), 0);
    compile_ocl(g, false, true, dir, dn);
    for (int s = 0; s < nsets; s++) {
        const float *in[4];
        for (int i = 0; i < nin; i++) {
            in[i] = sets[s * nin + i];
        }
        (void)in_elems;
        float *ref[4], *c[4], *o[4];
        for (int i = 0; i < nout; i++) {
            ref[i] = calloc((size_t)out_elems[i], sizeof(float));
            c[i] = calloc((size_t)out_elems[i], sizeof(float));
        }
        assert_int_equal(tether_interp_run(h, in, ref), 0);
        if (tt_run_compiled(g, "qocl", TETHER_ABI_UNPACKED, TETHER_INTERFACE_PACKED, true, in, c)) {
            fail_msg("%s", tether_last_error());
        }
        run_ocl(dir, in, o, nout);
        for (int i = 0; i < nout; i++) {
            size_t bytes = (size_t)out_elems[i] * sizeof(float);
            if (tol > 0.0f) {
                for (int64_t k = 0; k < out_elems[i]; k++) {
                    assert_true(fabsf(o[i][k] - c[i][k]) <= tol);
                    assert_true(fabsf(c[i][k] - ref[i][k]) <= tol);
                }
            } else {
                assert_memory_equal(c[i], ref[i], bytes);
                assert_memory_equal(o[i], c[i], bytes);
            }
            free(ref[i]);
            free(c[i]);
            free(o[i]);
        }
    }
    tether_ir_close(g);
    tether_ir_close(h);
}

static void tmp_path(char *p, size_t n, const char *name) {
    snprintf(p, n, "%s/%s", g_tmp, name);
}

static float *dscnn_inputs(int sets) {
    float *x = malloc(sizeof(float) * 490 * (size_t)sets);
    assert_non_null(x);
    for (int i = 0; i < 490 * sets; i++) {
        x[i] = gauss(2.5f); /* beyond the input scale's range too: saturation */
    }
    return x;
}

static void test_dscnn_int8(void **state) {
    (void)state;
    char path[128], dir[128];
    tmp_path(path, sizeof path, "ds8.onnx");
    ds_cnn_write(path, 1);
    float *x = dscnn_inputs(1);
    float *sets[1] = {x};
    int64_t ie = 490, oe = 12;
    check_model(path, 1, &ie, 1, sets, 1, &oe, 0.0f, dir, sizeof dir);
    /* the kernels: the integer pass left no float node but (de)quantize, char4 arithmetic */
    char cl[192];
    snprintf(cl, sizeof cl, "%s/m.cl", dir);
    char *src = read_file(cl);
    assert_non_null(strstr(src, "integer pointwise conv"));
    assert_non_null(strstr(src, "integer conv (depthwise)"));
    assert_non_null(strstr(src, "convert_int4(vload4("));
    assert_non_null(strstr(src, "integer matmul"));
    assert_non_null(strstr(src, "tgq_div(in0[f]"));
    assert_null(strstr(src, "avg_pool"));
    free(src);
    free(x);
}

static void test_dscnn_uint8_quantized(void **state) {
    (void)state;
    char fpath[128], qpath[128], dir[128];
    tmp_path(fpath, sizeof fpath, "dsf.onnx");
    tmp_path(qpath, sizeof qpath, "dsu8.onnx");
    ds_cnn_write(fpath, 0);
    float *cal = dscnn_inputs(4);
    tether_model_value v[4];
    tether_onnx_qsample smp[4];
    static const char *const names[] = {"x"};
    for (int i = 0; i < 4; i++) {
        memset(&v[i], 0, sizeof v[i]);
        v[i].dtype = TETHER_FLOAT32;
        v[i].ndim = 4;
        v[i].shape[0] = v[i].shape[1] = 1;
        v[i].shape[2] = 49;
        v[i].shape[3] = 10;
        v[i].data = cal + 490 * i;
        v[i].nbytes = 490 * sizeof(float);
        smp[i].source = "calibration";
        smp[i].n = 1;
        smp[i].names = names;
        smp[i].values = &v[i];
    }
    tether_onnx_quantize_options qo;
    memset(&qo, 0, sizeof qo);
    qo.uint8_activations = true;
    qo.samples = smp;
    qo.nsamples = 4;
    tether_onnx_quantize_result r;
    memset(&r, 0, sizeof r);
    if (tether_onnx_quantize(fpath, &qo, &r)) {
        fail_msg("%s", tether_last_error());
    }
    FILE *f = fopen(qpath, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(r.model, 1, r.model_len, f), r.model_len);
    fclose(f);
    assert_true(r.integer_nodes >= 9);
    tether_onnx_quantize_free(&r);
    float *x = dscnn_inputs(1);
    float *sets[1] = {x};
    int64_t ie = 490, oe = 12;
    /* the FC stays a float Gemm (no QuantizeLinear after it): its sums' order differs; one step of
     * an int8 tensor before it would move the logits by 1e-2 or more */
    check_model(qpath, 1, &ie, 1, sets, 1, &oe, 1e-5f, dir, sizeof dir);
    char cl[192];
    snprintf(cl, sizeof cl, "%s/m.cl", dir);
    char *src = read_file(cl);
    assert_non_null(strstr(src, "const __global uchar *in0"));
    free(src);
    free(x);
    free(cal);
}

/* ---- QOperator ------------------------------------------------------------------------------ */

static void init_f(mb *b, const char *name, int n, const float *v) {
    int64_t d = n;
    mb_init_tensor(b, mb_tensor_f(b, name, n == 1 ? 0 : 1, &d, v, 0));
}

static void init_raw(mb *b, const char *name, int type, int ndim, const int64_t *dims,
                     const void *v, size_t eb) {
    mb_init_tensor(b, mb_tensor_raw(b, name, type, ndim, dims, v, eb));
}

static void scalar_f(mb *b, const char *name, float v) {
    init_f(b, name, 1, &v);
}

static void scalar_u8(mb *b, const char *name, uint8_t v) {
    init_raw(b, name, U8, 0, NULL, &v, 1);
}

static void random_bytes(void *p, size_t n, int lo, int hi) {
    uint8_t *q = p;
    for (size_t i = 0; i < n; i++) {
        q[i] = (uint8_t)(lo + (int)(rnd() % (uint32_t)(hi - lo + 1)));
    }
}

static void bias(mb *b, const char *name, int n) {
    int32_t v[8];
    for (int i = 0; i < n; i++) {
        v[i] = (int32_t)(rnd() % 4001) - 2000;
    }
    int64_t d = n;
    init_raw(b, name, I32, 1, &d, v, 4);
}

static void write_qop(const char *path) {
    mb b;
    mb_init(&b, 13);
    int64_t xin[4] = {1, 4, 9, 7};
    mb_input(&b, "x", F32, 4, xin);
    scalar_f(&b, "xs", 0.025f);
    scalar_u8(&b, "xz", 118);
    mb_node(&b, "QuantizeLinear", "quant_x", "x,xs,xz", "xq");
    /* A: groups 2, stride (2,1), dilation (1,2), pads t1 l1 b2 r1; uint8 weights, zp 131 */
    uint8_t wa[6 * 2 * 9];
    random_bytes(wa, sizeof wa, 0, 255);
    int64_t wad[4] = {6, 2, 3, 3};
    init_raw(&b, "wa", U8, 4, wad, wa, 1);
    scalar_f(&b, "was", 0.011f);
    scalar_u8(&b, "waz", 131);
    scalar_f(&b, "yas", 0.13f);
    scalar_u8(&b, "yaz", 100);
    bias(&b, "ba", 6);
    Onnx__NodeProto *n =
        mb_node(&b, "QLinearConv", "conv_a", "xq,xs,xz,wa,was,waz,yas,yaz,ba", "aq");
    mb_attr_i(&b, n, "group", 2);
    mb_attr_ints(&b, n, "strides", 2, (int64_t[]){2, 1});
    mb_attr_ints(&b, n, "dilations", 2, (int64_t[]){1, 2});
    mb_attr_ints(&b, n, "pads", 4, (int64_t[]){1, 1, 2, 1});
    /* B: depthwise 3x3, per-channel int8 weights */
    int8_t wb[6 * 9];
    random_bytes(wb, sizeof wb, -127, 127);
    int64_t wbd[4] = {6, 1, 3, 3}, six = 6;
    init_raw(&b, "wb", I8, 4, wbd, wb, 1);
    float wbs[6] = {0.004f, 0.007f, 0.01f, 0.013f, 0.016f, 0.02f};
    init_f(&b, "wbs", 6, wbs);
    int8_t z6[6] = {0};
    init_raw(&b, "wbz", I8, 1, &six, z6, 1);
    scalar_f(&b, "ybs", 0.28f);
    scalar_u8(&b, "ybz", 90);
    bias(&b, "bb", 6);
    n = mb_node(&b, "QLinearConv", "conv_b", "aq,yas,yaz,wb,wbs,wbz,ybs,ybz,bb", "bq");
    mb_attr_i(&b, n, "group", 6);
    mb_attr_ints(&b, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    /* C: pointwise 6 -> 5 over 5x5 pixels */
    int8_t wc[5 * 6];
    random_bytes(wc, sizeof wc, -127, 127);
    int64_t wcd[4] = {5, 6, 1, 1}, five = 5;
    init_raw(&b, "wc", I8, 4, wcd, wc, 1);
    float wcs[5] = {0.006f, 0.009f, 0.012f, 0.008f, 0.01f};
    init_f(&b, "wcs", 5, wcs);
    init_raw(&b, "wcz", I8, 1, &five, z6, 1);
    scalar_f(&b, "ycs", 0.5f);
    scalar_u8(&b, "ycz", 128);
    bias(&b, "bc", 5);
    mb_node(&b, "QLinearConv", "conv_c", "bq,ybs,ybz,wc,wcs,wcz,ycs,ycz,bc", "cq");
    int64_t shp[2] = {5, 25}, two = 2;
    mb_init_tensor(&b, mb_tensor_i64(&b, "shape", 1, &two, shp));
    mb_node(&b, "Reshape", "reshape", "cq,shape", "r");
    /* D: [5,25] x constant uint8 [25,3], zp 9 */
    uint8_t wd[25 * 3];
    random_bytes(wd, sizeof wd, 0, 255);
    int64_t wdd[2] = {25, 3};
    init_raw(&b, "wd", U8, 2, wdd, wd, 1);
    scalar_f(&b, "wds", 0.004f);
    scalar_u8(&b, "wdz", 9);
    scalar_f(&b, "yds", 1.4f);
    scalar_u8(&b, "ydz", 128);
    mb_node(&b, "QLinearMatMul", "mm_d", "r,ycs,ycz,wd,wds,wdz,yds,ydz", "dq");
    mb_node(&b, "DequantizeLinear", "deq_d", "dq,yds,ydz", "y1");
    /* E: r x transpose(r): two activations */
    mb_attr_ints(&b, mb_node(&b, "Transpose", "transpose", "r", "rt"), "perm", 2,
                 (int64_t[]){1, 0});
    scalar_f(&b, "yes", 250.0f);
    scalar_u8(&b, "yez", 128);
    mb_node(&b, "QLinearMatMul", "mm_e", "r,ycs,ycz,rt,ycs,ycz,yes,yez", "eq");
    mb_node(&b, "DequantizeLinear", "deq_e", "eq,yes,yez", "y2");
    mb_output(&b, "y1", F32);
    mb_output(&b, "y2", F32);
    mb_write(&b, path);
    mb_free(&b);
}

static void test_qoperator_uint8(void **state) {
    (void)state;
    char path[128], dir[128];
    tmp_path(path, sizeof path, "qop.onnx");
    write_qop(path);
    float x[2][252];
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < 252; i++) {
            x[s][i] = gauss(1.5f);
        }
    }
    float *sets[2] = {x[0], x[1]};
    int64_t ie = 252, oe[2] = {15, 25};
    check_model(path, 1, &ie, 2, sets, 2, oe, 0.0f, dir, sizeof dir);
    char cl[192];
    snprintf(cl, sizeof cl, "%s/m.cl", dir);
    char *src = read_file(cl);
    assert_non_null(strstr(src, "B read by column"));       /* mm_e: b an activation */
    assert_non_null(strstr(src, "B transposed in params")); /* mm_d */
    assert_non_null(strstr(src, "if (full)"));              /* the pointwise's partial block */
    free(src);
}

/* ONNX Runtime's QOperator form of the integer elementwise and pooling operators: the
 * com.microsoft QLinearLeakyRelu, QLinearAdd (a per-channel uint8 constant, broadcast),
 * QLinearSigmoid, QLinearMul, QLinearConcat (three differently scaled inputs) and
 * QLinearAveragePool (padding not counted), with MaxPool on uint8, all uint8. */
static void write_qop_ms(const char *path) {
    mb b;
    mb_init(&b, 13);
    mb_opset(&b, "com.microsoft", 1);
    int64_t xin[4] = {1, 4, 6, 6};
    mb_input(&b, "x", F32, 4, xin);
    scalar_f(&b, "xs", 0.03f);
    scalar_u8(&b, "xz", 120);
    mb_node(&b, "QuantizeLinear", "quant_x", "x,xs,xz", "xq");
    scalar_f(&b, "ls", 0.02f);
    scalar_u8(&b, "lz", 100);
    Onnx__NodeProto *n = mb_node(&b, "QLinearLeakyRelu", "leaky", "xq,xs,xz,ls,lz", "lq");
    mb_domain(&b, n, "com.microsoft");
    mb_attr_f(&b, n, "alpha", 0.2f);
    uint8_t bc[4] = {3, 90, 160, 250};
    int64_t bcd[4] = {1, 4, 1, 1};
    init_raw(&b, "bc", U8, 4, bcd, bc, 1);
    scalar_f(&b, "bcs", 0.05f);
    scalar_u8(&b, "bcz", 128);
    scalar_f(&b, "as", 0.04f);
    scalar_u8(&b, "az", 110);
    mb_domain(&b, mb_node(&b, "QLinearAdd", "add", "lq,ls,lz,bc,bcs,bcz,as,az", "aq"),
              "com.microsoft");
    n = mb_node(&b, "MaxPool", "maxpool", "aq", "mq");
    mb_attr_ints(&b, n, "kernel_shape", 2, (int64_t[]){2, 2});
    mb_attr_ints(&b, n, "strides", 2, (int64_t[]){2, 2});
    scalar_f(&b, "ss", 1.0f / 256.0f);
    scalar_u8(&b, "sz", 0);
    mb_domain(&b, mb_node(&b, "QLinearSigmoid", "sigmoid", "mq,as,az,ss,sz", "sq"),
              "com.microsoft");
    scalar_f(&b, "ms", 0.03f);
    scalar_u8(&b, "mz", 20);
    mb_domain(&b, mb_node(&b, "QLinearMul", "mul", "sq,ss,sz,mq,as,az,ms,mz", "pq"),
              "com.microsoft");
    scalar_f(&b, "ks", 0.05f);
    scalar_u8(&b, "kz", 90);
    n = mb_node(&b, "QLinearConcat", "concat", "ks,kz,sq,ss,sz,pq,ms,mz,mq,as,az", "kq");
    mb_domain(&b, n, "com.microsoft");
    mb_attr_i(&b, n, "axis", 1);
    scalar_f(&b, "vs", 0.04f);
    scalar_u8(&b, "vz", 100);
    n = mb_node(&b, "QLinearAveragePool", "avgpool", "kq,ks,kz,vs,vz", "vq");
    mb_domain(&b, n, "com.microsoft");
    mb_attr_ints(&b, n, "kernel_shape", 2, (int64_t[]){3, 3});
    mb_attr_ints(&b, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    mb_attr_i(&b, n, "count_include_pad", 0);
    mb_node(&b, "DequantizeLinear", "deq", "vq,vs,vz", "y");
    mb_output(&b, "y", F32);
    mb_write(&b, path);
    mb_free(&b);
}

static void test_qoperator_ms_elementwise(void **state) {
    (void)state;
    char path[128], dir[128];
    tmp_path(path, sizeof path, "qop_ms.onnx");
    write_qop_ms(path);
    /* every float island became an integer operator */
    tether_ir_graph g;
    if (tether_onnx_load(path, NULL, &g)) {
        fail_msg("%s", tether_last_error());
    }
    tether_pass_options po;
    tether_pass_options_init(&po);
    assert_int_equal(tether_passes_run(&g, &po), 0);
    int seen[5] = {0};
    for (int i = 0; i < g.nnodes; i++) {
        tether_op op = g.nodes[i].op;
        if (op != TETHER_OP_QUANTIZE && op != TETHER_OP_DEQUANTIZE &&
            tether_dtype_equal(g.tensors[g.nodes[i].outputs[0]].dtype, TETHER_FLOAT32)) {
            fail_msg("node %s (%s) is still float", g.nodes[i].name, tether_op_name(op));
        }
        seen[0] += op == TETHER_OP_QADD;
        seen[1] += op == TETHER_OP_QMUL;
        seen[2] += op == TETHER_OP_QLUT;
        seen[3] += op == TETHER_OP_QMAX_POOL; /* MaxPool on uint8 (max_pool_arg) */
        seen[4] += op == TETHER_OP_QAVG_POOL;
    }
    tether_ir_close(&g);
    for (int k = 0; k < 5; k++) {
        if (!seen[k]) {
            fail_msg("integer operator %d missing", k);
        }
    }
    float x[2][144];
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < 144; i++) {
            x[s][i] = gauss(2.0f);
        }
    }
    float *sets[2] = {x[0], x[1]};
    int64_t ie = 144, oe = 108;
    check_model(path, 1, &ie, 2, sets, 1, &oe, 0.0f, dir, sizeof dir);
}

/* ---- QuantizeLinear: ties and special values ------------------------------------------------ */

static void test_quantize_rounding(void **state) {
    (void)state;
    char path[128], dir[128];
    tmp_path(path, sizeof path, "q.onnx");
    mb b;
    mb_init(&b, 13);
    int64_t xin[4] = {1, 4, 32, 32};
    mb_input(&b, "x", F32, 4, xin);
    scalar_f(&b, "s", 0.0173f);
    init_raw(&b, "z", I8, 0, NULL, (int8_t[]){-3}, 1);
    mb_node(&b, "QuantizeLinear", "q1", "x,s,z", "q1");
    mb_node(&b, "DequantizeLinear", "dq1", "q1,s,z", "y1");
    float sc[4] = {0.1f, 0.0371f, 3.0f, 1e-3f};
    int64_t four = 4;
    init_f(&b, "sc", 4, sc);
    init_raw(&b, "zc", U8, 1, &four, (uint8_t[]){0, 17, 128, 255}, 1);
    Onnx__NodeProto *n = mb_node(&b, "QuantizeLinear", "q2", "x,sc,zc", "q2");
    mb_attr_i(&b, n, "axis", 1);
    mb_attr_i(&b, mb_node(&b, "DequantizeLinear", "dq2", "q2,sc,zc", "y2"), "axis", 1);
    mb_output(&b, "y1", F32);
    mb_output(&b, "y2", F32);
    mb_write(&b, path);
    mb_free(&b);
    static float x[4096];
    const float scales[] = {0.0173f, 0.1f, 0.0371f, 3.0f, 1e-3f};
    for (int i = 0; i < 4096; i++) {
        float s = scales[rnd() % 5];
        int k = (int)(rnd() % 400) - 200;
        switch (i % 4) {
        case 0: /* a tie of the float product, or a float next to it */
            x[i] = ((float)k + 0.5f) * s;
            break;
        case 1:
            x[i] = nextafterf(((float)k + 0.5f) * s, rnd() & 1 ? INFINITY : -INFINITY);
            break;
        case 2:
            x[i] = gauss(3.0f);
            break;
        default:
            x[i] = (float)k * s;
            break;
        }
    }
    const float special[] = {NAN,    INFINITY, -INFINITY, 0.0f,   -0.0f,
                             1e-40f, -1e-42f,  3e38f,     -3e38f, 1e-30f};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        x[i * 97] = special[i];
    }
    float *sets[1] = {x};
    int64_t ie = 4096, oe[2] = {4096, 4096};
    check_model(path, 1, &ie, 1, sets, 2, oe, 0.0f, dir, sizeof dir);
}

/* ---- integer elementwise and pooling operators (emit_opencl_qelt.c) ---------------------------
 */

/* The residual int8 block of test_quant_elt (qelt_block.h: qconv, qadd, qmax_pool, qlut, concat,
 * qmul, qavg_pool) and its variant with a broadcasting qadd of a per-channel constant, a uint8
 * scalar qmul, a uint8 qavg_pool with ceil_mode and a leaky_relu table: OpenCL == C == the
 * interpreter byte for byte, every operator between the input quantize and the output
 * dequantize an integer one. */
static void test_qelt_block(void **state) {
    (void)state;
    static const int opts[2] = {0, QB_BCAST};
    static const int64_t ny[2] = {128, 120};
    for (int v = 0; v < 2; v++) {
        tether_ir_graph g, h;
        qb_build(&g, opts[v]);
        qb_build(&h, opts[v]);
        float *x = malloc(sizeof(float) * 256 * 2);
        assert_non_null(x);
        for (int i = 0; i < 256 * 2; i++) {
            x[i] = gauss(2.0f); /* beyond the input's range too: saturation */
        }
        float *sets[2] = {x, x + 256};
        int64_t ie = 256;
        char dir[128];
        tmp_path(dir, sizeof dir, v ? "qelt_bcast" : "qelt");
        check_graphs(&g, &h, 1, &ie, 2, sets, 1, &ny[v], 0.0f, dir, sizeof dir);
        free(x);
    }
    /* rounding ties of qadd and qmul (multipliers exactly 1/2), negative values included */
    tether_ir_graph g, h;
    qb_build_ties(&g);
    qb_build_ties(&h);
    float x[64];
    for (int i = 0; i < 64; i++) {
        x[i] = (float)(i % 32) * 0.75f - 11.5f + (float)(rnd() % 3) * 0.25f;
    }
    float *sets[1] = {x};
    int64_t ie = 64, oe[2] = {64, 64};
    char dir[128];
    tmp_path(dir, sizeof dir, "qelt_ties");
    check_graphs(&g, &h, 1, &ie, 1, sets, 2, oe, 0.0f, dir, sizeof dir);
}

/* ---- refusals ------------------------------------------------------------------------------- */

static void expect_refusal(const char *path, bool fp16, const char *want1, const char *want2) {
    tether_ir_graph g;
    if (tether_onnx_load(path, NULL, &g)) {
        fail_msg("%s", tether_last_error());
    }
    char dir[128];
    tmp_path(dir, sizeof dir, "refused");
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.backend = TETHER_BACKEND_OPENCL;
    o.opencl.fp16 = fp16;
    tether_compile_result res;
    assert_int_not_equal(tether_compile_graph(&g, dir, &o, &res), 0);
    const char *msg = tether_last_error();
    if (!strstr(msg, want1) || !strstr(msg, want2)) {
        fail_msg("unexpected message: %s", msg);
    }
    assert_int_not_equal(access(dir, F_OK), 0); /* nothing left behind */
    tether_ir_close(&g);
}

static void test_refusals(void **state) {
    (void)state;
    char path[128];
    tmp_path(path, sizeof path, "r1.onnx");
    /* an integer graph output */
    mb b;
    mb_init(&b, 13);
    int64_t xin[2] = {2, 3};
    mb_input(&b, "x", F32, 2, xin);
    scalar_f(&b, "s", 0.5f);
    scalar_u8(&b, "z", 7);
    mb_node(&b, "QuantizeLinear", "quant", "x,s,z", "yq");
    mb_output(&b, "yq", U8);
    mb_write(&b, path);
    mb_free(&b);
    {
        tether_ir_graph g;
        assert_int_equal(tether_onnx_load(path, NULL, &g), 0);
        char dir[128];
        tmp_path(dir, sizeof dir, "intout");
        tether_compile_options o;
        tether_compile_options_init(&o);
        o.backend = TETHER_BACKEND_OPENCL;
        tether_compile_result res;
        if (tether_compile_graph(&g, dir, &o, &res)) {
            fail_msg("an integer graph output: %s", tether_last_error());
        }
        tether_ir_close(&g);
    }
    /* an integer tensor read by an operator that takes float32 only (every ONNX operator that
     * takes integers has a typed OpenCL kernel now; a uint8 Relu turned into a Softmax at the IR,
     * as a front end could write it): refused before any kernel is chosen, naming the node */
    mb_init(&b, 13);
    int64_t xin2[2] = {2, 3};
    mb_input(&b, "x", F32, 2, xin2);
    scalar_f(&b, "s", 0.5f);
    scalar_u8(&b, "z", 7);
    mb_node(&b, "QuantizeLinear", "quant", "x,s,z", "xq");
    mb_node(&b, "Relu", "uq", "xq", "u");
    mb_output(&b, "u", U8);
    mb_write(&b, path);
    mb_free(&b);
    {
        tether_ir_graph g;
        assert_int_equal(tether_onnx_load(path, NULL, &g), 0);
        int uq = -1;
        for (int i = 0; i < g.nnodes; i++) {
            uq = g.nodes[i].op == TETHER_OP_RELU ? i : uq;
        }
        assert_true(uq >= 0);
        g.nodes[uq].op = TETHER_OP_SOFTMAX;
        char dir[128];
        tmp_path(dir, sizeof dir, "refused_typed");
        tether_compile_options o;
        tether_compile_options_init(&o);
        o.backend = TETHER_BACKEND_OPENCL;
        tether_compile_result res;
        assert_int_not_equal(tether_compile_graph(&g, dir, &o, &res), 0);
        const char *msg = tether_last_error();
        if (!strstr(msg, "node 'uq' (softmax): input 'xq' has element type uint8")) {
            fail_msg("unexpected message: %s", msg);
        }
        assert_int_not_equal(access(dir, F_OK), 0);
        tether_ir_close(&g);
    }
    /* fp16 */
    ds_cnn_write(path, 1);
    expect_refusal(path, true, "--precision fp16", "int8");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dscnn_int8),        cmocka_unit_test(test_dscnn_uint8_quantized),
        cmocka_unit_test(test_qoperator_uint8),   cmocka_unit_test(test_qoperator_ms_elementwise),
        cmocka_unit_test(test_quantize_rounding), cmocka_unit_test(test_qelt_block),
        cmocka_unit_test(test_refusals),
    };
    return ocl_test_main("/tmp/toclqXXXXXX", tests, sizeof tests / sizeof tests[0]);
}
