/*
 * Quantized inference (docs/quantization.md): the integer requantization on exact integers and
 * its rounding edge cases; the QDQ pass turning dequantize -> conv2d -> relu -> quantize into one
 * qconv whose results stay within one quantization step of the float path and equal the
 * generated C's byte for byte; no float arithmetic in the generated qconv kernel; bad scales
 * refused with the node named.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ops_common.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static void test_requant_exact(void **state) {
    (void)state;
    int32_t m, s;
    /* 0.5 = 2^30 * 2^(0 - 31): mult 2^30, shift 0 */
    assert_int_equal(tether_quant_multiplier(0.5, &m, &s), 0);
    assert_int_equal(m, 1 << 30);
    assert_int_equal(s, 0);
    /* ties go to even: 1*0.5, 3*0.5, 5*0.5, -1*0.5, -3*0.5 */
    assert_int_equal(tether_quant_requant(1, m, s), 0);
    assert_int_equal(tether_quant_requant(3, m, s), 2);
    assert_int_equal(tether_quant_requant(5, m, s), 2);
    assert_int_equal(tether_quant_requant(-1, m, s), 0);
    assert_int_equal(tether_quant_requant(-3, m, s), -2);
    assert_int_equal(tether_quant_requant(7, m, s), 4);
    /* 0.25: 2^30, shift -1; 6 * 0.25 = 1.5 -> 2, 10 * 0.25 = 2.5 -> 2, -6 -> -2, 7 -> 2 */
    assert_int_equal(tether_quant_multiplier(0.25, &m, &s), 0);
    assert_int_equal(s, -1);
    assert_int_equal(tether_quant_requant(6, m, s), 2);
    assert_int_equal(tether_quant_requant(10, m, s), 2);
    assert_int_equal(tether_quant_requant(-6, m, s), -2);
    assert_int_equal(tether_quant_requant(7, m, s), 2);
    /* just off a tie rounds to nearest: 0.0039 * 1000 = 3.9 -> 4, * -1000 -> -4 */
    assert_int_equal(tether_quant_multiplier(0.0039, &m, &s), 0);
    assert_int_equal(tether_quant_requant(1000, m, s), 4);
    assert_int_equal(tether_quant_requant(-1000, m, s), -4);
    /* extremes (values from exact rational arithmetic): the int32 range with M just below 1,
     * and a multiplier >= 1 */
    assert_int_equal(tether_quant_multiplier(0.999999999, &m, &s), 0);
    assert_int_equal(m, 2147483646); /* round(0.999999999 * 2^31) */
    assert_int_equal(tether_quant_requant(INT32_MAX, m, s), 2147483645);
    assert_int_equal(tether_quant_requant(INT32_MIN, m, s), -2147483646);
    assert_int_equal(tether_quant_multiplier(3.0, &m, &s), 0);
    assert_int_equal(s, 2);
    assert_int_equal(tether_quant_requant(-7, m, s), -21);
    /* the multiplier as rounded: 2^31 * 0.99999999999 rounds to 2^31 -> 2^30 with shift + 1 */
    assert_int_equal(tether_quant_multiplier(0.99999999999, &m, &s), 0);
    assert_int_equal(m, 1 << 30);
    assert_int_equal(s, 1);
    /* bad multipliers */
    assert_int_not_equal(tether_quant_multiplier(0.0, &m, &s), 0);
    assert_int_not_equal(tether_quant_multiplier(-1.0, &m, &s), 0);
    assert_int_not_equal(tether_quant_multiplier(NAN, &m, &s), 0);
    assert_int_not_equal(tether_quant_multiplier(INFINITY, &m, &s), 0);
    assert_int_not_equal(tether_quant_multiplier(4294967296.0, &m, &s), 0);
}

static int konst(tether_ir_graph *g, const char *name, DLDataType t, int ndim, const int64_t *shape,
                 const void *v, size_t bytes) {
    int idx = -1;
    assert_int_equal(tether_ir_add_constant(g, name, t, ndim, shape, v, bytes, &idx), 0);
    return idx;
}

static int tensor(tether_ir_graph *g, const char *name) {
    int idx = -1;
    assert_int_equal(tether_ir_add_tensor(g, name, TETHER_FLOAT32, -1, NULL, &idx), 0);
    return idx;
}

static void node(tether_ir_graph *g, const char *name, tether_op op, const int *in, int nin,
                 int out, const tether_ir_attrs *a) {
    assert_int_equal(tether_ir_add_node(g, name, op, in, nin, &out, 1, a, NULL), 0);
}

/* x float [1,3,6,6] -> Q(int8) -> DQ -> conv2d(DQ(w int8 per channel), float bias, pad 1) ->
 * relu -> Q(int8) -> DQ -> y */
static void build_qdq_conv(tether_ir_graph *g) {
    assert_int_equal(tether_ir_init(g, "qdq_conv"), 0);
    int64_t sx[4] = {1, 3, 6, 6}, sw[4] = {4, 3, 3, 3}, s4 = 4, one = 1;
    int x, xq, xd, wd, y, yr, yq, out;
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, sx, &x), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    int8_t w[108];
    uint32_t seed = 7;
    for (int i = 0; i < 108; i++) {
        seed = seed * 1103515245u + 12345u;
        w[i] = (int8_t)((int)(seed >> 16) % 255 - 127);
    }
    float xs = 0.02f, ws[4] = {0.004f, 0.0031f, 0.0052f, 0.0025f}, ys = 0.05f,
          b[4] = {0.1f, -0.2f, 0.05f, 0.3f};
    int8_t xz = 3, yz = -5, wz[4] = {0, 0, 0, 0};
    int cxs = konst(g, "xs", TETHER_FLOAT32, 1, &one, &xs, 4),
        cxz = konst(g, "xz", TETHER_INT8, 1, &one, &xz, 1),
        cw = konst(g, "w", TETHER_INT8, 4, sw, w, sizeof w),
        cws = konst(g, "ws", TETHER_FLOAT32, 1, &s4, ws, sizeof ws),
        cwz = konst(g, "wz", TETHER_INT8, 1, &s4, wz, sizeof wz),
        cb = konst(g, "b", TETHER_FLOAT32, 1, &s4, b, sizeof b),
        cys = konst(g, "ys", TETHER_FLOAT32, 1, &one, &ys, 4),
        cyz = konst(g, "yz", TETHER_INT8, 1, &one, &yz, 1);
    xq = tensor(g, "xq");
    xd = tensor(g, "xd");
    wd = tensor(g, "wd");
    y = tensor(g, "y");
    yr = tensor(g, "yr");
    yq = tensor(g, "yq");
    out = tensor(g, "out");
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_QUANTIZE, &a);
    a.to = TETHER_INT8;
    node(g, "qx", TETHER_OP_QUANTIZE, (int[]){x, cxs, cxz}, 3, xq, &a);
    node(g, "dqx", TETHER_OP_DEQUANTIZE, (int[]){xq, cxs, cxz}, 3, xd, NULL);
    tether_ir_attrs_init(TETHER_OP_DEQUANTIZE, &a);
    a.axis = 0;
    node(g, "dqw", TETHER_OP_DEQUANTIZE, (int[]){cw, cws, cwz}, 3, wd, &a);
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    node(g, "conv", TETHER_OP_CONV2D, (int[]){xd, wd, cb}, 3, y, &a);
    node(g, "relu", TETHER_OP_RELU, &y, 1, yr, NULL);
    tether_ir_attrs_init(TETHER_OP_QUANTIZE, &a);
    a.to = TETHER_INT8;
    node(g, "qy", TETHER_OP_QUANTIZE, (int[]){yr, cys, cyz}, 3, yq, &a);
    node(g, "dqy", TETHER_OP_DEQUANTIZE, (int[]){yq, cys, cyz}, 3, out, NULL);
    assert_int_equal(tether_ir_add_output(g, out), 0);
    assert_int_equal(tether_ir_infer(g), 0);
}

static void test_qdq_conv_becomes_qconv(void **state) {
    (void)state;
    tether_ir_graph g, h;
    build_qdq_conv(&g);
    build_qdq_conv(&h);
    tether_pass_options o;
    tether_pass_options_init(&o);
    if (tether_passes_run(&h, &o)) {
        fail_msg("%s", tether_last_error());
    }
    int nq = 0, nconv = 0;
    for (int i = 0; i < h.nnodes; i++) {
        nq += h.nodes[i].op == TETHER_OP_QCONV;
        nconv += h.nodes[i].op == TETHER_OP_CONV2D;
    }
    assert_int_equal(nq, 1);
    assert_int_equal(nconv, 0);
    float x[108], ref[144], got[144], cc[144];
    uint32_t seed = 3;
    tt_fill(x, 108, false, &seed);
    const float *in[1] = {x};
    float *o1[1] = {ref}, *o2[1] = {got}, *o3[1] = {cc};
    assert_int_equal(tether_interp_run(&g, in, o1), 0);
    assert_int_equal(tether_interp_run(&h, in, o2), 0);
    int off = 0;
    for (int i = 0; i < 144; i++) {
        float d = fabsf(ref[i] - got[i]);
        assert_true(d <= 0.05f * 1.0001f); /* at most one step of the output scale */
        off += d > 0.0f;
        assert_true(got[i] >= -1e-6f); /* the relu as clamp: y >= dequantize(yz) = 0 */
    }
    assert_true(off <= 144 / 100 + 1); /* >= 99% equal */
    /* generated C equals the interpreter byte for byte */
    if (tt_run_compiled(&h, "qdq_conv", TETHER_ABI_UNPACKED, TETHER_INTERFACE_PACKED, true, in,
                        o3)) {
        fail_msg("%s", tether_last_error());
    }
    assert_memory_equal(cc, got, sizeof got);
    /* no float arithmetic in the qconv kernel */
    tether_memplan plan;
    tether_codegen_options co;
    tether_codegen_output out;
    tether_codegen_options_init(&co);
    assert_int_equal(tether_memplan_build(&h, NULL, &plan), 0);
    assert_int_equal(tether_codegen_c(&h, &plan, &co, &out), 0);
    const char *k = strstr(out.source, "tgk_");
    for (; k; k = strstr(k + 4, "tgk_")) {
        const char *end = strstr(k, "\n}\n");
        const char *rq = strstr(k, "tgq_requant("), *rs = strstr(k, "tgq_rqs(");
        if (!rq || (rs && rs < rq)) {
            rq = rs; /* the first requantization call, either form */
        }
        if (end && rq && rq < end && !strstr(k, "tgq_rne")) {
            char *body = strndup(k, (size_t)(end - k));
            assert_null(strstr(body, "float"));
            assert_null(strstr(body, "double"));
            free(body);
            break;
        }
    }
    assert_non_null(k);
    tether_codegen_output_close(&out);
    tether_memplan_close(&plan);
    tether_ir_close(&g);
    tether_ir_close(&h);
}

static void test_bad_scale_names_node(void **state) {
    (void)state;
    tether_ir_graph g;
    assert_int_equal(tether_ir_init(&g, "bad"), 0);
    int64_t s = 4, one = 1;
    int x, y;
    float sc = -0.5f;
    assert_int_equal(tether_ir_add_tensor(&g, "x", TETHER_FLOAT32, 1, &s, &x), 0);
    assert_int_equal(tether_ir_add_input(&g, x), 0);
    int cs = konst(&g, "scale", TETHER_FLOAT32, 1, &one, &sc, 4);
    y = tensor(&g, "y");
    node(&g, "quant_node", TETHER_OP_QUANTIZE, (int[]){x, cs}, 2, y, NULL);
    assert_int_equal(tether_ir_add_output(&g, y), 0);
    assert_int_equal(tether_ir_infer(&g), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "quant_node"));
    assert_non_null(strstr(tether_last_error(), "scale"));
    tether_ir_close(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requant_exact),
        cmocka_unit_test(test_qdq_conv_becomes_qconv),
        cmocka_unit_test(test_bad_scale_names_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
