/*
 * The hosted rpc stack against the MCU firmware: rpc/'s UART transport (termios on the QEMU pty),
 * its blocking client and chunker talk to the firmware's tiny codec, exactly as a host library
 * built on tether_rpc will. Covers HELLO, a 20000-byte transfer driven by tether_rpc_chunker with
 * the window and max_frame the device announced, a CALL with checked output, TIME, and LOG
 * delivery to the client's callback, and a LAUNCH_SEQ refused as unsupported (no OpenCL).
 * usage: test_mcu_rpc_client FIRMWARE_DIR
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcu_client.h"
#include "tether/rpc/flow.h"
#include "tether/rpc/transport.h"

static mcu_board board;
static tether_transport transport;
static tether_rpc_client client;
static uint32_t device_max_frame, device_window;
static uint32_t logs_seen;
static char last_log[256];

static void on_log(void *ctx, const tether_rpc_msg *m) {
    (void)ctx;
    logs_seen++;
    snprintf(last_log, sizeof last_log, "%.*s", (int)m->u.log.text.len, m->u.log.text.ptr);
}

static int setup(void **state) {
    (void)state;
    if (mcu_board_start(&board, true) != 0) {
        mcu_board_stop(&board);
        return -1;
    }
    /* The rpc transport owns the line from here on. */
    close(board.fd);
    board.fd = -1;
    if (tether_transport_uart_open(&transport, board.url + strlen("uart://"), 115200, 65535) != 0 ||
        tether_rpc_client_init(&client, &transport, 0, 2) != 0) {
        fprintf(stderr, "opening %s: %s\n", board.url, tether_last_error());
        mcu_board_stop(&board);
        return -1;
    }
    client.on_log = on_log;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tether_rpc_client_close(&client);
    tether_transport_close(&transport);
    mcu_board_stop(&board);
    return 0;
}

static void request_ok(tether_rpc_msg *req, tether_rpc_msg *rep) {
    int rc = tether_rpc_client_request(&client, req, rep, 10000);
    if (rc != 0) {
        fail_msg("request type %u: %d %s", (unsigned)req->type, rc, tether_last_error());
    }
}

static void test_hello(void **state) {
    (void)state;
    tether_rpc_msg req = {.type = TETHER_RPC_HELLO}, rep;
    req.u.hello_req.version = TETHER_RPC_VERSION;
    req.u.hello_req.max_frame = 65535;
    req.u.hello_req.client = tether_rpc_str_c("tests/mcu rpc client");
    request_ok(&req, &rep);
    assert_int_equal(rep.type, TETHER_RPC_HELLO | TETHER_RPC_REPLY);
    assert_true(tether_rpc_str_eq(rep.u.hello_rep.arch, "cortex-m3"));
    device_max_frame = rep.u.hello_rep.max_frame;
    device_window = rep.u.hello_rep.window;
    assert_int_equal(device_max_frame, 1024);
    assert_int_equal(device_window, 2);
    /* The board description arrived through the client's LOG callback. */
    assert_true(logs_seen >= 1);
    assert_non_null(strstr(last_log, "board mps2-an385"));
}

static void test_chunked_transfer_and_call(void **state) {
    (void)state;
    const uint32_t n = 20000;
    uint8_t *in = malloc(n), *out = malloc(n);
    for (uint32_t i = 0; i < n; i++) {
        in[i] = (uint8_t)(i ^ (i >> 7));
    }
    tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_ALLOC;
    req.u.alloc_req.ndim = 1;
    req.u.alloc_req.shape[0] = n;
    req.u.alloc_req.dtype_code = kDLUInt;
    req.u.alloc_req.dtype_bits = 8;
    req.u.alloc_req.dtype_lanes = 1;
    req.u.alloc_req.pool = tether_rpc_str_c("sram");
    request_ok(&req, &rep);
    uint64_t array = rep.u.alloc_rep.array;

    /* COPY_TO with the chunker: chunk size and window from HELLO. */
    tether_rpc_chunker ch;
    assert_int_equal(tether_rpc_chunker_init(&ch, n, device_max_frame, device_window), 0);
    uint64_t off;
    uint32_t len, chunks = 0;
    while (!tether_rpc_chunker_done(&ch)) {
        assert_true(tether_rpc_chunker_next(&ch, &off, &len));
        memset(&req, 0, sizeof req);
        req.type = TETHER_RPC_COPY_TO;
        req.u.copy_to_req.array = array;
        req.u.copy_to_req.offset = off;
        req.u.copy_to_req.data.ptr = in + off;
        req.u.copy_to_req.data.len = len;
        request_ok(&req, &rep);
        assert_int_equal(rep.u.copy_to_rep.written, len);
        assert_int_equal(tether_rpc_chunker_ack(&ch, off, len), 0);
        chunks++;
    }
    assert_int_equal(chunks, (n + 975) / 976);

    /* COPY_FROM in chunks of the same size. */
    assert_int_equal(tether_rpc_chunker_init(&ch, n, device_max_frame, device_window), 0);
    while (!tether_rpc_chunker_done(&ch)) {
        assert_true(tether_rpc_chunker_next(&ch, &off, &len));
        memset(&req, 0, sizeof req);
        req.type = TETHER_RPC_COPY_FROM;
        req.u.copy_from_req.array = array;
        req.u.copy_from_req.offset = off;
        req.u.copy_from_req.length = len;
        request_ok(&req, &rep);
        assert_int_equal(rep.u.copy_from_rep.data.len, len);
        memcpy(out + off, rep.u.copy_from_rep.data.ptr, len);
        assert_int_equal(tether_rpc_chunker_ack(&ch, off, len), 0);
    }
    assert_memory_equal(in, out, n);

    /* sum_u8 on the device equals the host's sum. */
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_ALLOC;
    req.u.alloc_req.ndim = 1;
    req.u.alloc_req.shape[0] = 1;
    req.u.alloc_req.dtype_code = kDLUInt;
    req.u.alloc_req.dtype_bits = 32;
    req.u.alloc_req.dtype_lanes = 1;
    request_ok(&req, &rep);
    uint64_t sum = rep.u.alloc_rep.array;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_GET_FUNCTION;
    req.u.get_function_req.name = tether_rpc_str_c("sum_u8");
    request_ok(&req, &rep);
    uint64_t func = rep.u.get_function_rep.func;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_CALL;
    req.u.call_req.func = func;
    req.u.call_req.abi = TETHER_ABI_PACKED;
    req.u.call_req.num_args = 2;
    req.u.call_req.args[0] = mcu_arg_array(array);
    req.u.call_req.args[1] = mcu_arg_array(sum);
    request_ok(&req, &rep);
    assert_int_equal(rep.u.call_rep.ret, 0);
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_COPY_FROM;
    req.u.copy_from_req.array = sum;
    req.u.copy_from_req.length = 4;
    request_ok(&req, &rep);
    uint32_t device_sum, host_sum = 0;
    memcpy(&device_sum, rep.u.copy_from_rep.data.ptr, 4);
    for (uint32_t i = 0; i < n; i++) {
        host_sum += in[i];
    }
    assert_int_equal(device_sum, host_sum);

    /* An ERROR reply comes back as the status with the device's message. */
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_FREE;
    req.u.free_req.handle = 0x12345;
    assert_int_equal(tether_rpc_client_request(&client, &req, &rep, 10000), TETHER_ERR_NOT_FOUND);
    assert_non_null(strstr(tether_last_error(), "no NDArray with handle"));

    /* The firmware has no OpenCL: a kernel sequence is refused cleanly as unsupported (its
     * decoder keeps no room for the steps) and the session goes on. */
    static const tether_rpc_arg seq_arg = {TETHER_TYPE_INT, {.v_int = 1}};
    tether_rpc_seq_step step = {1, TETHER_ABI_PACKED, 1, &seq_arg, 1, {4, 0, 0}, {0, 0, 0}};
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_LAUNCH_SEQ;
    req.u.seq_req.num_steps = 1;
    req.u.seq_req.steps = &step;
    assert_int_equal(tether_rpc_client_request(&client, &req, &rep, 10000), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "LAUNCH_SEQ"));
    assert_non_null(strstr(tether_last_error(), "not supported"));
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_GET_FUNCTION;
    req.u.get_function_req.name = tether_rpc_str_c("spin");
    request_ok(&req, &rep);
    free(in);
    free(out);
}

static void test_time(void **state) {
    (void)state;
    static tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_GET_FUNCTION;
    req.u.get_function_req.name = tether_rpc_str_c("spin");
    request_ok(&req, &rep);
    uint64_t spin = rep.u.get_function_rep.func;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_TIME;
    req.u.time_req.invoke.func = spin;
    req.u.time_req.invoke.abi = TETHER_ABI_PACKED;
    req.u.time_req.invoke.num_args = 1;
    req.u.time_req.invoke.args[0] = mcu_arg_int(5000);
    req.u.time_req.number = 1;
    req.u.time_req.repeat = 3;
    req.u.time_req.min_repeat_ms = 2; /* spin(5000) takes 35 us: number has to grow */
    request_ok(&req, &rep);
    assert_int_equal(rep.u.time_rep.repeat, 3);
    assert_true(rep.u.time_rep.number > 1);
    printf("TIME spin(5000): number grew to %u, %.9f s per call\n", (unsigned)rep.u.time_rep.number,
           rep.u.time_rep.seconds[0]);
    for (int i = 0; i < 3; i++) {
        assert_true(rep.u.time_rep.seconds[i] > 0);
    }
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello),
        cmocka_unit_test(test_chunked_transfer_and_call),
        cmocka_unit_test(test_time),
    };
    return mcu_test_main(argc, argv, tests, sizeof tests / sizeof *tests, setup, teardown);
}
