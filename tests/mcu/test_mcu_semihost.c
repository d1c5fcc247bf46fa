/*
 * The CMSDK boards' byte channel over Arm semihosting's console (device/mcu/drivers/channel.c,
 * arm_semihost.c; scripts/qemu-board --semihost-serial PORT) on QEMU: the same RPC server as on
 * the UART, reached as tcp-serial://127.0.0.1:PORT. Without -icount: its timers wake QEMU's main
 * loop often enough to hide a console FIFO that is not read again (below).
 *
 * Checks, with real requests: HELLO over the channel; COPY_TO/COPY_FROM of 32 KiB whose bytes
 * hold every value (runs of zeros, which the firmware writes with SYS_WRITEC, and the framing's
 * FLAG/ESCAPE) come back equal, one request at a time (the test client) and pipelined (the host
 * library, window 2) with almost no request sent twice (without the kick that makes QEMU read the
 * socket again once its console FIFO was full, nearly every pipelined frame waited for a
 * resend); a fault in a call is reported, the board resets and comes back on the same channel
 * (QEMU's loader selects it again on every reset), and so does SHUTDOWN; `tether run` of the KWS
 * example (compile, link, upload, run) over the channel equals the reference interpreter.
 * usage: test_mcu_semihost FIRMWARE_DIR TETHER_EXE
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

#include "mcu_client.h"
#include "tether/host.h"
#include "tether/npy.h"

static mcu_board board;
static const char *tether_exe;
static char workdir[256];
static char out_text[65536], err_text[16384];

#define COPY_BYTES (32u * 1024u)
static uint8_t data[COPY_BYTES], back[COPY_BYTES];

static int setup(void **state) {
    (void)state;
    if (mcu_workdir_create(workdir, sizeof workdir, "semihost") != 0) {
        return -1;
    }
    if (mcu_board_start_semihost(&board, false) != 0) {
        fprintf(stderr, "could not start the board with the semihosting channel under QEMU\n");
        mcu_board_stop(&board);
        return -1;
    }
    /* every byte value, runs of zeros of several lengths, FLAG and ESCAPE next to each other */
    for (size_t i = 0; i < COPY_BYTES; i++) {
        data[i] = (uint8_t)(i * 131u + 7u);
    }
    memset(data + 100, 0, 300);
    memset(data + 5000, 0, 1);
    memset(data + 9000, 0x7E, 64);
    memset(data + 9064, 0x7D, 64);
    data[COPY_BYTES - 1] = 0;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    mcu_board_stop(&board);
    return mcu_workdir_remove(workdir);
}

static int cli(const char *first, ...) {
    va_list ap;
    va_start(ap, first);
    int rc = mcu_cli_vrun(tether_exe, workdir, out_text, sizeof out_text, err_text, sizeof err_text,
                          first, ap);
    va_end(ap);
    return rc;
}

/* HELLO and a copy round trip one request at a time (the test client's own framing). */
static void test_hello_and_copy(void **state) {
    (void)state;
    tether_rpc_msg rep;
    mcu_hello(&board, &rep);
    assert_true(tether_rpc_str_eq(rep.u.hello_rep.arch, "cortex-m3"));
    assert_int_equal(rep.u.hello_rep.max_frame, 1024);
    int64_t shape[1] = {COPY_BYTES};
    uint64_t a = mcu_alloc(&board, shape, 1, TETHER_UINT8, NULL);
    mcu_copy_to(&board, a, data, COPY_BYTES);
    memset(back, 0xEE, sizeof back);
    mcu_copy_from(&board, a, back, COPY_BYTES);
    assert_memory_equal(back, data, COPY_BYTES);
    mcu_free(&board, a);
}

/* A fault in a call: reported over the channel, then the board resets and its new session is on
 * the semihosting channel again (the boot LOG arrives here); SHUTDOWN the same. */
static void test_fault_reset_and_shutdown(void **state) {
    (void)state;
    uint32_t boots = board.boots;
    uint64_t f = mcu_get_function(&board, 0, "trap", NULL);
    char msg[512];
    assert_int_equal(mcu_call_error(&board, f, TETHER_ABI_PACKED, NULL, 0, msg, sizeof msg),
                     TETHER_ERR_CRASHED);
    assert_non_null(strstr(msg, "UsageFault in 'trap'"));
    assert_int_equal(mcu_wait_log(&board, "board mps2-an385", 15000), 0);
    assert_int_equal(board.boots, boots + 1);
    assert_non_null(strstr(board.last_log, "boot 1"));
    tether_rpc_msg rep;
    mcu_hello(&board, &rep);
    int64_t shape[1] = {300};
    uint64_t a = mcu_alloc(&board, shape, 1, TETHER_UINT8, NULL);
    mcu_copy_to(&board, a, data + 50, 300); /* zeros and not */
    memset(back, 0xEE, 300);
    mcu_copy_from(&board, a, back, 300);
    assert_memory_equal(back, data + 50, 300);

    tether_rpc_msg shutdown = {.type = TETHER_RPC_SHUTDOWN};
    assert_int_equal(mcu_request(&board, &shutdown, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_SHUTDOWN | TETHER_RPC_REPLY);
    assert_int_equal(mcu_wait_log(&board, "board mps2-an385", 15000), 0);
    assert_non_null(strstr(board.last_log, "boot 2"));
    mcu_hello(&board, &rep);
}

/* The host library over tcp-serial://: pipelined copies both ways, bytes checked, and the
 * requests were not waiting for resends. */
static void test_host_library_pipelined(void **state) {
    (void)state;
    close(board.fd); /* QEMU's socket takes one client at a time */
    board.fd = -1;
    tether_session *s = NULL;
    assert_int_equal(tether_session_open(&s, board.url, NULL), 0);
    assert_int_equal(tether_session_info(s)->window, 2);
    int64_t shape = COPY_BYTES;
    uint64_t h = 0, nb = 0;
    assert_int_equal(
        tether_session_alloc(s, &shape, 1, TETHER_UINT8, TETHER_SCOPE_GLOBAL, "", &h, &nb), 0);
    for (int round = 0; round < 2; round++) {
        assert_int_equal(tether_session_copy_to(s, h, 0, data, COPY_BYTES), 0);
        memset(back, 0xEE, sizeof back);
        assert_int_equal(tether_session_copy_from(s, h, 0, back, COPY_BYTES), 0);
        assert_memory_equal(back, data, COPY_BYTES);
    }
    tether_link_stats st;
    assert_int_equal(tether_session_link_stats(s, &st), 0);
    printf("frames sent %llu, resent %llu\n", (unsigned long long)st.frames_sent,
           (unsigned long long)st.frames_resent);
    /* 2 x 2 x 32 KiB is about 140 frames; with a console FIFO left full (no kick), 9 were resent
     * and the copies took seconds; with the kick none is */
    assert_true(st.frames_sent >= 100);
    assert_true(st.frames_resent <= 3);
    assert_int_equal(tether_session_free(s, h), 0);
    tether_session_close(s);
}

/* Compile, link, upload and run the KWS example over the channel: equal to the interpreter. */
static void test_cli_run_kws(void **state) {
    (void)state;
    static float x[490];
    mcu_kws_input(x, 490);
    char in[300], out[300], ref[300], model[512];
    snprintf(in, sizeof in, "%s/in.npy", workdir);
    snprintf(out, sizeof out, "%s/out.npy", workdir);
    snprintf(ref, sizeof ref, "%s/ref.npy", workdir);
    snprintf(model, sizeof model, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
    int64_t shape[4] = {1, 1, 49, 10};
    assert_int_equal(tether_npy_write(in, TETHER_FLOAT32, shape, 4, x), 0);
    assert_int_equal(cli("run", model, "--reference", "--in", in, "--out", ref, NULL), 0);
    assert_int_equal(
        cli("run", model, "--device", board.url, "--pool", "sram", "--in", in, "--out", out, NULL),
        0);
    assert_non_null(strstr(out_text, "linked at 0x20050000 for mps2-an385"));
    tether_npy a, b;
    assert_int_equal(tether_npy_read(out, &a), 0);
    assert_int_equal(tether_npy_read(ref, &b), 0);
    assert_int_equal(a.nbytes, b.nbytes);
    for (size_t i = 0; i < a.nbytes / 4; i++) {
        float u = ((float *)a.data)[i], v = ((float *)b.data)[i];
        assert_true(fabsf(u - v) <= 1e-5f + 1e-4f * fabsf(v));
    }
    tether_npy_free(&a);
    tether_npy_free(&b);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_mcu_semihost FIRMWARE_DIR TETHER_EXE\n");
        return 2;
    }
    tether_exe = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello_and_copy),
        cmocka_unit_test(test_fault_reset_and_shutdown),
        cmocka_unit_test(test_host_library_pipelined),
        cmocka_unit_test(test_cli_run_kws),
    };
    return mcu_test_main(argc, argv, tests, sizeof tests / sizeof *tests, setup, teardown);
}
