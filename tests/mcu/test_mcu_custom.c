/*
 * A custom operator (docs/custom-ops.md) on the Cortex-M3 board (QEMU mps2-an385): the example
 * CNN with the custom swish (examples/custom_ops, C implementation) compiled for the board's core
 * through `tether run MODEL --custom-ops ops.json`, linked, uploaded and run in both ABIs; the
 * outputs equal `tether run --reference` (the interpreter, with the C implementation built for
 * the host) and values computed here.
 * Channel: semihosting's console (mcu_board_start_fast; the UART where the firmware lacks it),
 * since the byte path is not the subject here and the UART model uploads at 8-16 KiB/s;
 * test_mcu_server/upload/rpc_client/tcp_serial keep the UART covered.
 * usage: test_mcu_custom FIRMWARE_DIR TETHER_EXECUTABLE
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcu_client.h"
#include "tether/host.h"
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

/* y = 2 * swish(conv3x3(x) + bias) of examples/custom_ops/swish_cnn.onnx (test_custom_ops.c) */
static void expect_all(const float *x, float *y) {
    for (int o = 0; o < 4; o++) {
        for (int h = 0; h < 3; h++) {
            for (int w = 0; w < 5; w++) {
                double acc = (double)(o - 1) / 4.0;
                for (int k = 0; k < 9; k++) {
                    int ih = h + k / 3 - 1, iw = w + k % 3 - 1;
                    if (ih >= 0 && ih < 3 && iw >= 0 && iw < 5) {
                        acc += (double)((float)((o * 9 + k) % 7 - 3) / 8.0f) * x[ih * 5 + iw];
                    }
                }
                float v = (float)acc;
                y[(o * 3 + h) * 5 + w] = 2.0f * (v / (1.0f + expf(-v)));
            }
        }
    }
}

static void check(const char *path, const float *want) {
    tether_npy a;
    assert_int_equal(tether_npy_read(path, &a), TETHER_OK);
    assert_int_equal(a.ndim, 4);
    assert_int_equal(a.nbytes, 60 * sizeof(float));
    for (int i = 0; i < 60; i++) {
        assert_float_equal(((float *)a.data)[i], want[i], 1e-5);
    }
    tether_npy_free(&a);
}

static void test_custom_on_board(void **state) {
    (void)state;
    char model[600], ops[600], in[300], ref[300], out[300];
    snprintf(model, sizeof model, "%s/examples/custom_ops/swish_cnn.onnx", TETHER_SOURCE_DIR);
    snprintf(ops, sizeof ops, "%s/examples/custom_ops/ops.json", TETHER_SOURCE_DIR);
    snprintf(in, sizeof in, "%s/x.npy", workdir);
    snprintf(ref, sizeof ref, "%s/ref.npy", workdir);
    float x[15], want[60];
    for (int i = 0; i < 15; i++) {
        x[i] = (float)((int)(i * 7 % 23) - 11) / 4.0f;
    }
    expect_all(x, want);
    int64_t shape[4] = {1, 1, 3, 5};
    assert_int_equal(tether_npy_write(in, TETHER_FLOAT32, shape, 4, x), 0);
    assert_int_equal(
        cli("run", model, "--custom-ops", ops, "--reference", "--in", in, "--out", ref, NULL), 0);
    check(ref, want);
    const char *abis[2] = {"unpacked", "packed"};
    for (int k = 0; k < 2; k++) {
        snprintf(out, sizeof out, "%s/out-%s.npy", workdir, abis[k]);
        assert_int_equal(cli("run", model, "--custom-ops", ops, "--abi", abis[k], "--device",
                             board.url, "--in", in, "--out", out, NULL),
                         0);
        assert_non_null(strstr(out_text, "returned 0"));
        check(out, want);
    }
}

static int setup(void **state) {
    (void)state;
    if (mcu_workdir_create(workdir, sizeof workdir, "custom") != 0) {
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
        cmocka_unit_test(test_custom_on_board),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
