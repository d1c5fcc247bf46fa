/*
 * The int8 DS-CNN (tests/onnx/ds_cnn_int8.h: QDQ, int8 per channel, all-integer after the pass)
 * on the Cortex-M4F board (QEMU mps2-an386, -icount): `tether run MODEL --device` compiles it for
 * the board's core from HELLO (the DSP kernels: SXTB16/SMLAD, docs/quantization.md "Kernels"),
 * links, uploads and runs it once; its output equals `tether run --reference` (the interpreter)
 * byte for byte. One compile, one upload, one call: a few seconds.
 * Channel: semihosting's console (mcu_board_start_fast; the UART where the firmware lacks it),
 * since the byte path is not the subject here and the UART model uploads at 8-16 KiB/s;
 * test_mcu_server/upload/rpc_client/tcp_serial keep the UART covered.
 * usage: test_mcu_int8 FIRMWARE_DIR TETHER_EXECUTABLE
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
#include "mcu_client.h"
#include "tether/npy.h"

static mcu_board board;
static const char *tether_exe;
static char workdir[256];
static char out_text[65536], err_text[16384];

/* Runs `tether ARGS...` (NULL-terminated) in workdir; returns the exit code. */
static int cli(const char *first, ...) {
    va_list ap;
    va_start(ap, first);
    int rc = mcu_cli_vrun(tether_exe, workdir, out_text, sizeof out_text, err_text, sizeof err_text,
                          first, ap);
    va_end(ap);
    return rc;
}

static void test_dscnn_int8_on_board(void **state) {
    (void)state;
    char model[300], in[300], ref[300], out[300];
    snprintf(model, sizeof model, "%s/ds_cnn_int8.onnx", workdir);
    snprintf(in, sizeof in, "%s/x.npy", workdir);
    snprintf(ref, sizeof ref, "%s/ref.npy", workdir);
    snprintf(out, sizeof out, "%s/out.npy", workdir);
    ds_cnn_write(model, 1);
    static float x[490];
    mcu_kws_input(x, 490);
    int64_t shape[4] = {1, 1, 49, 10};
    assert_int_equal(tether_npy_write(in, TETHER_FLOAT32, shape, 4, x), 0);
    assert_int_equal(cli("run", model, "--reference", "--in", in, "--out", ref, NULL), 0);
    assert_int_equal(cli("run", model, "--device", board.url, "--in", in, "--out", out, NULL), 0);
    assert_non_null(strstr(out_text, "returned 0"));
    assert_non_null(strstr(out_text, "for mps2-an386"));
    tether_npy a, b;
    assert_int_equal(tether_npy_read(ref, &a), TETHER_OK);
    assert_int_equal(tether_npy_read(out, &b), TETHER_OK);
    assert_int_equal(a.ndim, 2);
    assert_int_equal(a.nbytes, 12 * sizeof(float));
    assert_int_equal(b.nbytes, a.nbytes);
    assert_memory_equal(a.data, b.data, a.nbytes); /* byte for byte */
    /* the 12 scores are not all one value (the network computed something) */
    int distinct = 0;
    for (int i = 1; i < 12; i++) {
        distinct += ((float *)a.data)[i] != ((float *)a.data)[0];
    }
    assert_true(distinct > 0);
    tether_npy_free(&a);
    tether_npy_free(&b);
}

static int setup(void **state) {
    (void)state;
    if (mcu_workdir_create(workdir, sizeof workdir, "int8") != 0) {
        return -1;
    }
    unsetenv("TETHER_FIRMWARE");
    unsetenv("TETHER_DEVICE");
    if (mcu_board_start_fast(&board, true) != 0) {
        mcu_board_stop(&board);
        return -1;
    }
    close(board.fd); /* QEMU keeps running; every CLI process opens the channel itself */
    board.fd = -1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    mcu_board_stop(&board);
    return mcu_workdir_remove(workdir);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FIRMWARE_DIR TETHER_EXECUTABLE\n", argv[0]);
        return 2;
    }
    mcu_fw_dir = argv[1];
    tether_exe = argv[2];
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dscnn_int8_on_board),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
