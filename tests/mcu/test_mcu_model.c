/*
 * The example model (examples/kws) compiled for cortex-m3 in both ABIs with the compiler
 * library, linked at the load region, uploaded to the firmware on QEMU (-icount shift=0), run,
 * and compared with the reference interpreter. Checks: outputs match the reference, repeated
 * runs give identical cycle counts, and the unpacked build uses strictly less stack than the
 * packed one. Prints the seed-003 style table (code size, cycles, stack) for the closing note.
 * Channel: semihosting's console (mcu_board_start_fast; the UART where the firmware lacks it),
 * since the byte path is not the subject here and the UART model uploads at 8-16 KiB/s;
 * test_mcu_server/upload/rpc_client/tcp_serial keep the UART covered. -icount as before: the
 * channel is outside the timed region.
 * usage: test_mcu_model FIRMWARE_DIR
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcu_client.h"
#include "tether/compiler.h"
#include "tether/compiler_cli.h"
#include "tether/mcu_link.h"
#include "tether/rpc/sha256.h"

static mcu_board board;
static char workdir[256];
static tether_ir_graph graph;
static float input[1 * 1 * 49 * 10];
static float reference[12];

typedef struct result {
    uint64_t image_bytes; /* uploaded image (code + rodata incl. weights + data) */
    uint64_t bss_bytes;   /* static workspace */
    uint64_t cycles;
    uint64_t stack;
} result;
static result results[2];

/* Compiles the model for cortex-m3 in `abi`, links the static library at the load region with
 * the host's link step (tether/mcu_link.h) and returns the image. */
static uint8_t *build_image(const char *abi, size_t *size, uint64_t *bss) {
    char dir[512], model[512];
    snprintf(dir, sizeof dir, "%s/kws-%s", workdir, abi);
    snprintf(model, sizeof model, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
    char *argv[] = {"compile",   model,   "-o",        dir,       "--target",
                    "cortex-m3", "--abi", (char *)abi, "--quiet", NULL};
    int rc = tether_cmd_compile(9, argv);
    if (rc != 0) {
        fail_msg("tether compile --target cortex-m3 --abi %s failed (%d): %s", abi, rc,
                 tether_last_error());
    }
    tether_mcu_firmware fw;
    if (tether_mcu_firmware_load(mcu_fw_dir, &fw) != 0) {
        fail_msg("%s", tether_last_error());
    }
    char bin[1100];
    tether_mcu_image img;
    if (tether_mcu_link_artifact(&fw, dir, dir, bin, sizeof bin, &img) != 0) {
        fail_msg("linking the %s model image failed: %s", abi, tether_last_error());
    }
    uint8_t *data = mcu_read_file(bin, size);
    assert_int_equal(*size, img.size);
    *bss = img.bss_size;
    return data;
}

static void run_abi(int which) {
    const char *abi = which == 0 ? "packed" : "unpacked";
    size_t size;
    uint64_t bss;
    uint8_t *img = build_image(abi, &size, &bss);
    uint64_t module = mcu_upload_image(&board, abi, img, size);
    free(img);
    uint32_t fabi;
    uint64_t f = mcu_get_function(&board, module, "tether_model_main", &fabi);
    assert_int_equal(fabi, which == 0 ? TETHER_ABI_PACKED : TETHER_ABI_UNPACKED);

    int64_t in_shape[4] = {1, 1, 49, 10}, out_shape[2] = {1, 12};
    uint64_t hin = mcu_alloc(&board, in_shape, 4, TETHER_FLOAT32, NULL);
    uint64_t hout = mcu_alloc(&board, out_shape, 2, TETHER_FLOAT32, NULL);
    mcu_copy_to(&board, hin, input, sizeof input);
    tether_rpc_arg args[2] = {mcu_arg_array(hin), mcu_arg_array(hout)};
    tether_rpc_call_rep first, again;
    mcu_call(&board, f, which == 0 ? TETHER_ABI_PACKED : TETHER_ABI_UNPACKED, args, 2, &first);
    assert_int_equal(first.ret, 0);
    float out[12];
    mcu_copy_from(&board, hout, out, sizeof out);
    for (int i = 0; i < 12; i++) {
        if (fabsf(out[i] - reference[i]) > 1e-5f + 1e-4f * fabsf(reference[i])) {
            fail_msg("%s output %d: device %.9g, reference %.9g", abi, i, out[i], reference[i]);
        }
    }
    mcu_call(&board, f, which == 0 ? TETHER_ABI_PACKED : TETHER_ABI_UNPACKED, args, 2, &again);
    assert_int_equal(again.elapsed_ns, first.elapsed_ns);
    assert_int_equal(again.stack_bytes, first.stack_bytes);
    results[which].image_bytes = size;
    results[which].bss_bytes = bss;
    results[which].cycles = first.elapsed_ns / 40; /* 25 MHz */
    results[which].stack = first.stack_bytes;
    mcu_free(&board, hin);
    mcu_free(&board, hout);
}

static int setup(void **state) {
    (void)state;
    if (mcu_workdir_create(workdir, sizeof workdir, "model") != 0) {
        return -1;
    }
    char model[512];
    snprintf(model, sizeof model, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
    if (tether_model_load(model, &graph) != 0) {
        fprintf(stderr, "loading %s: %s\n", model, tether_last_error());
        return -1;
    }
    mcu_kws_input(input, sizeof input / sizeof input[0]);
    const float *ins[1] = {input};
    float *outs[1] = {reference};
    if (tether_interp_run(&graph, ins, outs) != 0) {
        fprintf(stderr, "reference interpreter: %s\n", tether_last_error());
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
    tether_ir_close(&graph);
    return mcu_workdir_remove(workdir);
}

static void test_kws_packed(void **state) {
    (void)state;
    run_abi(0);
}

static void test_kws_unpacked(void **state) {
    (void)state;
    run_abi(1);
}

static void test_kws_compare(void **state) {
    (void)state;
    printf(
        "kws on cortex-m3 (QEMU mps2-an385, -icount shift=0; cycles = SysTick ticks at 25 MHz)\n");
    printf("  abi        image bytes  bss bytes      cycles  stack bytes\n");
    for (int i = 0; i < 2; i++) {
        printf("  %-9s  %11llu  %9llu  %10llu  %11llu\n", i == 0 ? "packed" : "unpacked",
               (unsigned long long)results[i].image_bytes, (unsigned long long)results[i].bss_bytes,
               (unsigned long long)results[i].cycles, (unsigned long long)results[i].stack);
    }
    assert_true(results[0].stack > 0 && results[1].stack > 0);
    assert_true(results[1].stack < results[0].stack);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kws_packed),
        cmocka_unit_test(test_kws_unpacked),
        cmocka_unit_test(test_kws_compare),
    };
    return mcu_test_main(argc, argv, tests, sizeof tests / sizeof *tests, setup, teardown);
}
