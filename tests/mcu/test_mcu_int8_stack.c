/*
 * The static stack bound of an int8 build with float islands against the measured high-water
 * mark on a QEMU board (FIRMWARE_DIR: mps2-an385, Cortex-M3 soft float; mps2-an386, Cortex-M4F):
 * tests/compiler/quant_models.h's island model (integer convolutions, sigmoid, tanh and softmax
 * float between QuantizeLinear/DequantizeLinear, whose quantize and dequantize kernels of one
 * shape gcc folds into one) compiled for the board's core in both ABIs, linked, uploaded and
 * called three times. The bound must be finite and at least the lowest measured mark (an
 * interrupt during a call adds its exception frame), and the output must equal the reference
 * interpreter's within one output step of the last quantize (the islands' float functions may
 * round differently on the board's libm).
 * Channel: semihosting's console (mcu_board_start_fast; the UART where the firmware lacks it),
 * since the byte path is not the subject here and the UART model uploads at 8-16 KiB/s;
 * test_mcu_server/upload/rpc_client/tcp_serial keep the UART covered.
 * usage: test_mcu_int8_stack FIRMWARE_DIR
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../compiler/ops_common.h"
#include "../compiler/quant_models.h"
#include "mcu_client.h"
#include "tether/compiler.h"
#include "tether/mcu_link.h"

static mcu_board board;
static char workdir[256];

static void run_island(tether_abi abi) {
    tether_mcu_firmware fw;
    if (tether_mcu_firmware_load(mcu_fw_dir, &fw) != 0) {
        fail_msg("%s", tether_last_error());
    }
    tether_ir_graph g;
    if (tq_build_island(&g) != 0) {
        fail_msg("%s", tether_last_error());
    }
    char dir[512];
    snprintf(dir, sizeof dir, "%s/island-%s", workdir, tether_abi_name(abi));
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.codegen.abi = abi;
    o.build.target = fw.core[0] ? fw.core : "cortex-m3";
    tether_compile_result res;
    if (tether_compile_graph(&g, dir, &o, &res) != 0) {
        fail_msg("compile: %s", tether_last_error());
    }
    /* the shapes now: the passes tether_compile_graph runs may move the tensor table */
    const tether_ir_tensor *tx = &g.tensors[g.inputs[0]], *ty = &g.tensors[g.outputs[0]];
    size_t nx = tether_ir_tensor_elements(tx), ny = tether_ir_tensor_elements(ty);
    float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y), *ref = malloc(ny * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(ref);
    uint32_t seed = 9;
    tt_fill(x, nx, false, &seed);
    const float *ins[1] = {x};
    float *outs[1] = {ref};
    /* the reference: the graph after the passes (the integer operators), on the interpreter */
    assert_int_equal(tether_interp_run(&g, ins, outs), 0);
    char bin[1100];
    tether_mcu_image img;
    if (tether_mcu_link_artifact(&fw, dir, dir, bin, sizeof bin, &img) != 0) {
        fail_msg("linking: %s", tether_last_error());
    }
    size_t size;
    uint8_t *data = mcu_read_file(bin, &size);
    uint64_t module = mcu_upload_image(&board, tether_abi_name(abi), data, size);
    free(data);
    uint32_t fabi;
    uint64_t f = mcu_get_function(&board, module, "tether_model_main", &fabi);
    assert_int_equal(fabi, (uint32_t)abi);
    uint64_t hin = mcu_alloc(&board, tx->shape, tx->ndim, TETHER_FLOAT32, NULL);
    uint64_t hout = mcu_alloc(&board, ty->shape, ty->ndim, TETHER_FLOAT32, NULL);
    mcu_copy_to(&board, hin, x, nx * sizeof *x);
    tether_rpc_arg args[2] = {mcu_arg_array(hin), mcu_arg_array(hout)};
    uint64_t least = UINT64_MAX;
    for (int k = 0; k < 3; k++) {
        tether_rpc_call_rep rep;
        mcu_call(&board, f, (uint32_t)abi, args, 2, &rep);
        assert_int_equal(rep.ret, 0);
        least = rep.stack_bytes < least ? rep.stack_bytes : least;
    }
    mcu_copy_from(&board, hout, y, ny * sizeof *y);
    /* softmax of values one step (0.03) apart differs by at most about 3% of itself */
    for (size_t i = 0; i < ny; i++) {
        if (fabsf(y[i] - ref[i]) > 0.031f * fmaxf(fabsf(ref[i]), 1e-3f) + 1e-6f) {
            fail_msg("output %zu: %g on the board, %g in the interpreter", i, y[i], ref[i]);
        }
    }
    mcu_free(&board, hin);
    mcu_free(&board, hout);
    printf("%s %s %s: static stack bound %lld bytes (%s), measured %llu\n", fw.board,
           o.build.target, tether_abi_name(abi), (long long)res.build.stack.bytes,
           res.build.stack.path, (unsigned long long)least);
    if (!res.build.stack.bounded) {
        fail_msg("static stack unbounded: %s", res.build.stack.reason);
    }
    if ((int64_t)least > res.build.stack.bytes) {
        fail_msg("measured %llu bytes > static bound %lld (%s)", (unsigned long long)least,
                 (long long)res.build.stack.bytes, res.build.stack.path);
    }
    assert_true(least > 0);
    free(x);
    free(y);
    free(ref);
    tether_ir_close(&g);
}

static int setup(void **state) {
    (void)state;
    if (mcu_workdir_create(workdir, sizeof workdir, "int8stack") != 0) {
        return -1;
    }
    if (mcu_board_start_fast(&board, true) != 0) {
        mcu_board_stop(&board);
        return -1;
    }
    tether_rpc_msg rep;
    mcu_hello(&board, &rep);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    mcu_board_stop(&board);
    return mcu_workdir_remove(workdir);
}

static void test_island_unpacked(void **state) {
    (void)state;
    run_island(TETHER_ABI_UNPACKED);
}

static void test_island_packed(void **state) {
    (void)state;
    run_island(TETHER_ABI_PACKED);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_island_unpacked),
        cmocka_unit_test(test_island_packed),
    };
    return mcu_test_main(argc, argv, tests, sizeof tests / sizeof *tests, setup, teardown);
}
