/*
 * The int8 DS-CNN keyword spotter (ds_cnn_int8.h) through the ONNX front end and the integer
 * pass: every operator of the QDQ model becomes integer (qconv, qmatmul for the global average
 * pool and the Gemm, reshape/flatten on int8 tensors: 0 float nodes between (de)quantize
 * nodes); the compiled C equals the reference interpreter byte for byte on several inputs (the
 * fast pointwise, depthwise and general qconv kernels of emit_c_qfast.c, border windows
 * included); the generated qconv/qmatmul kernels contain no float arithmetic; the planned
 * workspace is 16,000 bytes (two 64x25x5 int8 activations).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ds_cnn_int8.h"
#include "ops_common.h"
#include "tether/compiler.h"
#include "tether/onnx.h"

static void test_dscnn_int8(void **state) {
    (void)state;
    char path[] = "/tmp/tether-dscnn-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    ds_cnn_write(path, 1);
    tether_ir_graph g, h;
    if (tether_onnx_load(path, NULL, &g) != 0 || tether_onnx_load(path, NULL, &h) != 0) {
        fail_msg("%s", tether_last_error());
    }
    unlink(path);
    tether_pass_options o;
    tether_pass_options_init(&o);
    if (tether_passes_run(&h, &o)) {
        fail_msg("%s", tether_last_error());
    }
    int nq = 0, nm = 0;
    for (int i = 0; i < h.nnodes; i++) {
        tether_op op = h.nodes[i].op;
        nq += op == TETHER_OP_QCONV;
        nm += op == TETHER_OP_QMATMUL;
        /* only (de)quantize, integer operators and reshapes of int8 tensors remain */
        assert_true(op == TETHER_OP_QCONV || op == TETHER_OP_QMATMUL || op == TETHER_OP_QUANTIZE ||
                    op == TETHER_OP_DEQUANTIZE || op == TETHER_OP_RESHAPE ||
                    op == TETHER_OP_FLATTEN);
        if (op == TETHER_OP_RESHAPE || op == TETHER_OP_FLATTEN) {
            assert_int_equal(h.tensors[h.nodes[i].outputs[0]].dtype.bits, 8);
        }
    }
    assert_int_equal(nq, 9);
    assert_int_equal(nm, 2);
    /* the compiled module equals the interpreter, byte for byte */
    static float x[490], ref[12], got[12];
    uint32_t seed = 11;
    for (int r = 0; r < 3; r++) {
        tt_fill(x, 490, false, &seed);
        for (int i = 0; i < 490; i++) {
            x[i] *= 2.5f; /* beyond the input scale's range too: saturation */
        }
        const float *in[1] = {x};
        float *o1[1] = {ref}, *o2[1] = {got};
        assert_int_equal(tether_interp_run(&h, in, o1), 0);
        if (tt_run_compiled(&g, "dscnn_int8", TETHER_ABI_UNPACKED, TETHER_INTERFACE_PACKED, true,
                            in, o2)) {
            fail_msg("%s", tether_last_error());
        }
        assert_memory_equal(ref, got, sizeof got);
    }
    /* the workspace: int8 activations, 16,000 bytes at the widest point */
    tether_memplan plan;
    assert_int_equal(tether_memplan_build(&h, NULL, &plan), 0);
    assert_int_equal(plan.workspace_size, 16000);
    tether_codegen_options co;
    tether_codegen_output out;
    tether_codegen_options_init(&co);
    assert_int_equal(tether_codegen_c(&h, &plan, &co, &out), 0);
    /* no float arithmetic in the integer kernels (every kernel calling tgq_requant or tgq_rqs) */
    int kernels = 0;
    for (const char *k = strstr(out.source, "\nstatic "); k; k = strstr(k + 1, "\nstatic ")) {
        const char *end = strstr(k, "\n}\n");
        if (!end || !strstr(k, "tgk_") || strstr(k, "tgk_") > end) {
            continue;
        }
        char *body = strndup(k, (size_t)(end - k));
        if ((strstr(body, "tgq_requant(") || strstr(body, "tgq_rqs(")) &&
            !strstr(body, "tgq_rne")) {
            kernels++;
            assert_null(strstr(body, "float"));
            assert_null(strstr(body, "double"));
        }
        free(body);
    }
    assert_true(kernels >= 4);
    tether_codegen_output_close(&out);
    tether_memplan_close(&plan);
    tether_ir_close(&g);
    tether_ir_close(&h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dscnn_int8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
