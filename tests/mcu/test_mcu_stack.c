/*
 * The static stack bound against the measured stack high-water mark on the Cortex-M3 board
 * (QEMU mps2-an385): every model of the project's model set - the KWS example, the operator zoo
 * (tests/compiler/ops_common.c), the small conv net and the MobileNet-style block (at the sizes
 * that fit the board's 128 KiB load region, tt_build_* with small = true) - compiled for
 * cortex-m3 in both ABIs, linked at the load region, uploaded, run and compared with the
 * reference interpreter. The firmware measures the callee's own stack from the stack pointer of
 * the call (docs/mcu.md); the compiler's report (libgcc's soft-float helpers and the firmware's
 * libm counted from the toolchain's archives) must be bounded and at least that. The lowest of
 * three calls is taken, since an interrupt during a call adds its exception frame.
 * Channel: semihosting's console (mcu_board_start_fast; the UART where the firmware lacks it),
 * since the byte path is not the subject here and the UART model uploads at 8-16 KiB/s;
 * test_mcu_server/upload/rpc_client/tcp_serial keep the UART covered.
 * usage: test_mcu_stack FIRMWARE_DIR
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../compiler/ops_common.h"
#include "mcu_client.h"
#include "tether/compiler.h"
#include "tether/mcu_link.h"
#include "tether/rpc/sha256.h"

static mcu_board board;
static char workdir[256];

typedef struct row {
    const char *model, *abi;
    int64_t bound;
    uint64_t measured, text;
    char path[512];
} row;
static row rows[8];
static int nrows;

static void run_model(const char *model, tether_abi abi) {
    tether_ir_graph g;
    if (tt_build_model(model, true, &g) != 0) {
        fail_msg("%s: %s", model, tether_last_error());
    }
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s-%s", workdir, model, tether_abi_name(abi));
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.codegen.abi = abi;
    o.build.target = "cortex-m3";
    tether_compile_result res;
    if (tether_compile_graph(&g, dir, &o, &res) != 0) {
        fail_msg("compile %s %s: %s", model, tether_abi_name(abi), tether_last_error());
    }
    tether_mcu_firmware fw;
    if (tether_mcu_firmware_load(mcu_fw_dir, &fw) != 0) {
        fail_msg("%s", tether_last_error());
    }
    char bin[1100];
    tether_mcu_image img;
    if (tether_mcu_link_artifact(&fw, dir, dir, bin, sizeof bin, &img) != 0) {
        fail_msg("linking %s %s: %s", model, tether_abi_name(abi), tether_last_error());
    }
    size_t size;
    uint8_t *data = mcu_read_file(bin, &size);
    char name[64];
    snprintf(name, sizeof name, "%s-%s", model, tether_abi_name(abi));
    uint64_t module = mcu_upload_image(&board, name, data, size);
    free(data);
    uint32_t fabi;
    uint64_t f = mcu_get_function(&board, module, "tether_model_main", &fabi);
    assert_int_equal(fabi, (uint32_t)abi);
    const tether_ir_tensor *tx = &g.tensors[g.inputs[0]], *ty = &g.tensors[g.outputs[0]];
    size_t nx = tether_ir_tensor_elements(tx), ny = tether_ir_tensor_elements(ty);
    float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y), *ref = malloc(ny * sizeof *y);
    uint32_t seed = 5;
    tt_fill(x, nx, false, &seed);
    const float *ins[1] = {x};
    float *outs[1] = {ref};
    assert_int_equal(tether_interp_run(&g, ins, outs), 0);
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
    if (tt_close(y, ref, ny, 1e-5, 1e-4) > 1.0) {
        fail_msg("%s %s: outputs differ from the reference interpreter", model,
                 tether_abi_name(abi));
    }
    mcu_free(&board, hin);
    mcu_free(&board, hout);
    row *r = &rows[nrows++];
    r->model = model;
    r->abi = tether_abi_name(abi);
    r->bound = res.build.stack.bytes;
    r->measured = least;
    r->text = res.build.sizes.text;
    snprintf(r->path, sizeof r->path, "%s", res.build.stack.path);
    free(x);
    free(y);
    free(ref);
    tether_ir_close(&g);
    if (!res.build.stack.bounded) {
        fail_msg("%s %s: static stack unbounded: %s", model, r->abi, res.build.stack.reason);
    }
    if ((int64_t)least > r->bound) {
        fail_msg("%s %s: measured %llu bytes > static bound %lld (%s)", model, r->abi,
                 (unsigned long long)least, (long long)r->bound, r->path);
    }
}

static int setup(void **state) {
    (void)state;
    if (mcu_workdir_create(workdir, sizeof workdir, "stack") != 0) {
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

static void test_kws(void **state) {
    (void)state;
    run_model("kws", TETHER_ABI_UNPACKED);
    run_model("kws", TETHER_ABI_PACKED);
}

static void test_zoo(void **state) {
    (void)state;
    run_model("zoo", TETHER_ABI_UNPACKED);
    run_model("zoo", TETHER_ABI_PACKED);
}

static void test_convnet(void **state) {
    (void)state;
    run_model("convnet", TETHER_ABI_UNPACKED);
    run_model("convnet", TETHER_ABI_PACKED);
}

static void test_mobile(void **state) {
    (void)state;
    run_model("mobile", TETHER_ABI_UNPACKED);
    run_model("mobile", TETHER_ABI_PACKED);
}

static void test_table(void **state) {
    (void)state;
    printf("cortex-m3 (QEMU mps2-an385): static stack bound vs measured high-water mark (bytes)\n");
    printf("  %-8s %-9s %7s %9s %7s  worst path\n", "model", "abi", "static", "measured", "text");
    for (int i = 0; i < nrows; i++) {
        printf("  %-8s %-9s %7lld %9llu %7llu  %s\n", rows[i].model, rows[i].abi,
               (long long)rows[i].bound, (unsigned long long)rows[i].measured,
               (unsigned long long)rows[i].text, rows[i].path);
    }
    assert_int_equal(nrows, 8);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kws),    cmocka_unit_test(test_zoo),   cmocka_unit_test(test_convnet),
        cmocka_unit_test(test_mobile), cmocka_unit_test(test_table),
    };
    return mcu_test_main(argc, argv, tests, sizeof tests / sizeof *tests, setup, teardown);
}
