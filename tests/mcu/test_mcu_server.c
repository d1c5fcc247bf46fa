/*
 * MCU firmware on QEMU mps2-an385 (-icount shift=0): HELLO, NDArray round trips larger than the
 * 1 KiB receive buffer, error replies, system-library calls in both ABIs with checked outputs,
 * stack high-water marks, deterministic cycle counts, TIME, duplicate-request handling, and a
 * fault in a call (error reply with PC/CFSR, reset, new session).
 * usage: test_mcu_server FIRMWARE_DIR
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcu_client.h"

static mcu_board board;
/* spin(10000) as measured in the first session, compared after the reset. */
static uint64_t spin_ns_first_boot;

static int setup(void **state) {
    (void)state;
    if (mcu_board_start(&board, true) != 0) {
        fprintf(stderr, "could not start the board under QEMU\n");
        mcu_board_stop(&board);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    mcu_board_stop(&board);
    return 0;
}

static void test_hello(void **state) {
    (void)state;
    tether_rpc_msg rep;
    mcu_hello(&board, &rep);
    const tether_rpc_hello_rep *h = &rep.u.hello_rep;
    assert_int_equal(h->version, TETHER_RPC_VERSION);
    assert_true(tether_rpc_str_eq(h->triple, "thumbv7m-none-eabi"));
    assert_true(tether_rpc_str_eq(h->arch, "cortex-m3"));
    assert_true(h->little_endian);
    assert_int_equal(h->pointer_bits, 32);
    assert_int_equal(h->max_frame, 1024);
    assert_int_equal(h->window, 2);
    assert_int_equal(h->clock_hz, 25000000);
    assert_int_equal(h->num_pools, 3); /* the board's linker-script regions, with their sizes */
    assert_true(tether_rpc_str_eq(h->pools[0], "sram"));
    assert_true(tether_rpc_str_eq(h->pools[1], "psram"));
    assert_true(tether_rpc_str_eq(h->pools[2], "code"));
    assert_int_equal(h->pool_sizes[0], 256u * 1024u);
    assert_int_equal(h->pool_sizes[1], 16u * 1024u * 1024u);
    assert_int_equal(h->pool_sizes[2], 3840u * 1024u);
    assert_false(h->opencl);
    assert_false(h->auth_required);
    assert_int_equal(h->load_addr, 0x20050000u);
    assert_int_equal(h->load_size, 128u * 1024u);
    /* Optional HELLO fields: board, memory sizes, boot counter, exports id. */
    assert_true(tether_rpc_str_eq(h->board, "mps2-an385"));
    assert_int_equal(h->ram_size, 459776u);
    assert_int_equal(h->heap_size, 256u * 1024u);
    assert_int_equal(h->stack_size, 16352u);
    assert_int_equal(h->boot_count, 0);
    /* The exports id matches the one firmware.json records for this build. */
    char path[600], text[8192], want[32];
    snprintf(path, sizeof path, "%s/firmware.json", mcu_fw_dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    text[fread(text, 1, sizeof text - 1, f)] = 0;
    fclose(f);
    snprintf(want, sizeof want, "\"exports_id\": \"0x%08x\"", (unsigned)h->exports_id);
    assert_true(h->exports_id != 0);
    assert_non_null(strstr(text, want));
    /* The same facts (and the link counters) arrive as a LOG line before the reply. */
    assert_non_null(strstr(board.last_log, "board mps2-an385 cpu cortex-m3 clock 25000000 Hz"));
    assert_non_null(strstr(board.last_log, "heap 0x20010000+262144"));
    assert_non_null(strstr(board.last_log, "rx buffer 1024 B"));
}

static void test_copy_round_trip(void **state) {
    (void)state;
    tether_rpc_msg rep;
    mcu_hello(&board, &rep);
    /* 10000 bytes: about 10 receive buffers, 11 chunks each way. */
    const size_t n = 10000;
    uint8_t *in = malloc(n), *out = malloc(n);
    for (size_t i = 0; i < n; i++) {
        in[i] = (uint8_t)(i * 131u + 7u);
    }
    /* Include every byte value that needs escaping in UART framing. */
    in[0] = 0x7E;
    in[1] = 0x7D;
    in[2] = 0x7E;
    int64_t shape[1] = {(int64_t)n};
    uint64_t nbytes;
    uint64_t a = mcu_alloc(&board, shape, 1, TETHER_UINT8, &nbytes);
    assert_int_equal(nbytes, n);
    mcu_copy_to(&board, a, in, n);
    memset(out, 0, n);
    mcu_copy_from(&board, a, out, n);
    assert_memory_equal(in, out, n);

    /* The device computes on the same bytes: sum_u8 agrees with the host. */
    int64_t one[1] = {1};
    uint64_t s = mcu_alloc(&board, one, 1, TETHER_DTYPE(kDLUInt, 32), NULL);
    uint32_t abi;
    uint64_t f = mcu_get_function(&board, 0, "sum_u8", &abi);
    assert_int_equal(abi, TETHER_ABI_PACKED);
    tether_rpc_arg args[2] = {mcu_arg_array(a), mcu_arg_array(s)};
    tether_rpc_call_rep cr;
    mcu_call(&board, f, TETHER_ABI_PACKED, args, 2, &cr);
    assert_int_equal(cr.ret, 0);
    uint32_t device_sum = 0, host_sum = 0;
    mcu_copy_from(&board, s, &device_sum, 4);
    for (size_t i = 0; i < n; i++) {
        host_sum += in[i];
    }
    assert_int_equal(device_sum, host_sum);

    mcu_free(&board, s);
    mcu_free(&board, a);
    /* A freed handle is an error, not a wild pointer. */
    tether_rpc_msg req = {.type = TETHER_RPC_FREE};
    req.u.free_req.handle = a;
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.u.error.code, TETHER_ERR_NOT_FOUND);
    free(in);
    free(out);
}

/* Every element type's NDArray travels over UART to the firmware's server core: ALLOC's size
 * (bool one byte per element) and the bytes back as sent. */
static void test_every_dtype(void **state) {
    (void)state;
    tether_rpc_msg rep;
    mcu_hello(&board, &rep);
    static const DLDataType types[] = {{kDLUInt, 1, 1},   {kDLInt, 8, 1},    {kDLInt, 16, 1},
                                       {kDLInt, 32, 1},   {kDLInt, 64, 1},   {kDLUInt, 8, 1},
                                       {kDLUInt, 16, 1},  {kDLUInt, 32, 1},  {kDLUInt, 64, 1},
                                       {kDLFloat, 16, 1}, {kDLFloat, 32, 1}, {kDLFloat, 64, 1},
                                       {kDLBfloat, 16, 1}};
    int64_t shape[2] = {2, 9};
    uint8_t in[2 * 9 * 8], out[2 * 9 * 8];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        size_t es = types[t].bits == 1 ? 1 : types[t].bits / 8, n = 2 * 9 * es;
        for (size_t i = 0; i < n; i++) {
            in[i] = types[t].bits == 1 ? (uint8_t)(i % 2) : (uint8_t)(i * 73u + t + 0x7d);
        }
        uint64_t nbytes;
        uint64_t a = mcu_alloc(&board, shape, 2, types[t], &nbytes);
        assert_int_equal(nbytes, n);
        mcu_copy_to(&board, a, in, n);
        memset(out, 0, sizeof out);
        mcu_copy_from(&board, a, out, n);
        assert_memory_equal(in, out, n);
        mcu_free(&board, a);
    }
}

static void test_alloc_errors(void **state) {
    (void)state;
    tether_rpc_msg req, rep;
    int64_t shape[1] = {16};
    uint64_t a = mcu_alloc(&board, shape, 1, TETHER_FLOAT32, NULL);

    /* Texture scope: unsupported on an MCU. */
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_ALLOC;
    req.u.alloc_req.ndim = 1;
    req.u.alloc_req.shape[0] = 4;
    req.u.alloc_req.dtype_code = kDLFloat;
    req.u.alloc_req.dtype_bits = 32;
    req.u.alloc_req.dtype_lanes = 1;
    req.u.alloc_req.scope = TETHER_SCOPE_TEXTURE;
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.u.error.code, TETHER_ERR_UNSUPPORTED);

    /* Unknown pool. */
    req.u.alloc_req.scope = TETHER_SCOPE_GLOBAL;
    req.u.alloc_req.pool = tether_rpc_str_c("dram");
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.u.error.code, TETHER_ERR_NOT_FOUND);

    /* More than the 256 KiB heap. */
    req.u.alloc_req.pool = tether_rpc_str_c("");
    req.u.alloc_req.shape[0] = 300 * 1024;
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.u.error.code, TETHER_ERR_OUT_OF_MEMORY);

    /* ... fits the 16 MiB psram pool (its own region and heap) */
    req.u.alloc_req.pool = tether_rpc_str_c("psram");
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_ALLOC | TETHER_RPC_REPLY);
    mcu_free(&board, rep.u.alloc_rep.array);

    /* COPY_TO past the end of the array. */
    uint8_t bytes[8] = {0};
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_COPY_TO;
    req.u.copy_to_req.array = a;
    req.u.copy_to_req.offset = 60;
    req.u.copy_to_req.data.ptr = bytes;
    req.u.copy_to_req.data.len = 8;
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.u.error.code, TETHER_ERR_LIMIT);

    /* COPY_FROM larger than the device's chunk limit. */
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_COPY_FROM;
    req.u.copy_from_req.array = a;
    req.u.copy_from_req.length = 2000;
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.u.error.code, TETHER_ERR_LIMIT);

    /* Unknown function. */
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_GET_FUNCTION;
    req.u.get_function_req.name = tether_rpc_str_c("no_such_function");
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.u.error.code, TETHER_ERR_NOT_FOUND);
    mcu_free(&board, a);
}

static void test_syslib_calls(void **state) {
    (void)state;
    enum { N = 256 };
    float a[N], b[N], c[N], out[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i * 0.5f;
        b[i] = 3.0f - (float)i;
        c[i] = (float)(i % 7);
    }
    int64_t shape[1] = {N};
    uint64_t ha = mcu_alloc(&board, shape, 1, TETHER_FLOAT32, NULL);
    uint64_t hb = mcu_alloc(&board, shape, 1, TETHER_FLOAT32, NULL);
    uint64_t hc = mcu_alloc(&board, shape, 1, TETHER_FLOAT32, NULL);
    uint64_t ho = mcu_alloc(&board, shape, 1, TETHER_FLOAT32, NULL);
    mcu_copy_to(&board, ha, a, sizeof a);
    mcu_copy_to(&board, hb, b, sizeof b);
    mcu_copy_to(&board, hc, c, sizeof c);

    /* Packed: add_f32. */
    uint32_t abi;
    uint64_t add = mcu_get_function(&board, 0, "add_f32", &abi);
    assert_int_equal(abi, TETHER_ABI_PACKED);
    tether_rpc_arg args[4] = {mcu_arg_array(ha), mcu_arg_array(hb), mcu_arg_array(ho)};
    tether_rpc_call_rep cr;
    mcu_call(&board, add, TETHER_ABI_PACKED, args, 3, &cr);
    assert_int_equal(cr.ret, 0);
    mcu_copy_from(&board, ho, out, sizeof out);
    for (int i = 0; i < N; i++) {
        assert_true(out[i] == a[i] + b[i]);
    }
    assert_true(cr.elapsed_ns > 0);
    assert_true(cr.stack_bytes > 0 && cr.stack_bytes < 1024);

    /* Unpacked: mul_add_f32_256. */
    uint64_t fma = mcu_get_function(&board, 0, "mul_add_f32_256", &abi);
    assert_int_equal(abi, TETHER_ABI_UNPACKED);
    args[2] = mcu_arg_array(hc);
    args[3] = mcu_arg_array(ho);
    mcu_call(&board, fma, TETHER_ABI_UNPACKED, args, 4, &cr);
    assert_int_equal(cr.ret, 0);
    mcu_copy_from(&board, ho, out, sizeof out);
    for (int i = 0; i < N; i++) {
        assert_true(out[i] == a[i] * b[i] + c[i]);
    }

    /* The packed function checks its arguments: a wrong dtype is refused with a status. */
    int64_t four[1] = {4};
    uint64_t hi = mcu_alloc(&board, four, 1, TETHER_INT32, NULL);
    args[0] = mcu_arg_array(hi);
    args[2] = mcu_arg_array(ho);
    mcu_call(&board, add, TETHER_ABI_PACKED, args, 3, &cr);
    assert_int_equal(cr.ret, TETHER_ERR_MISMATCH);
    assert_non_null(strstr(board.last_log, "add_f32"));

    /* Wrong argument count / ABI are refused before the call. */
    char msg[512];
    assert_int_equal(mcu_call_error(&board, add, TETHER_ABI_PACKED, args, 2, msg, sizeof msg),
                     TETHER_ERR_MISMATCH);
    assert_int_equal(mcu_call_error(&board, add, TETHER_ABI_UNPACKED, args, 3, msg, sizeof msg),
                     TETHER_ERR_MISMATCH);
    tether_rpc_arg scalar[4] = {mcu_arg_int(1), mcu_arg_array(hb), mcu_arg_array(hc),
                                mcu_arg_array(ho)};
    assert_int_equal(mcu_call_error(&board, fma, TETHER_ABI_UNPACKED, scalar, 4, msg, sizeof msg),
                     TETHER_ERR_MISMATCH);

    mcu_free(&board, ha);
    mcu_free(&board, hb);
    mcu_free(&board, hc);
    mcu_free(&board, ho);
    mcu_free(&board, hi);
}

static void test_string_arguments(void **state) {
    (void)state;
    int64_t shape[1] = {64};
    uint64_t out = mcu_alloc(&board, shape, 1, TETHER_UINT8, NULL);
    uint64_t f = mcu_get_function(&board, 0, "copy_str", NULL);
    tether_rpc_arg args[2] = {mcu_arg_array(out), {.type_code = TETHER_TYPE_STR}};
    args[1].v.v_str = tether_rpc_str_c("hello, mcu");
    tether_rpc_call_rep cr;
    mcu_call(&board, f, TETHER_ABI_PACKED, args, 2, &cr);
    assert_int_equal(cr.ret, 0);
    char got[64];
    mcu_copy_from(&board, out, got, sizeof got);
    assert_string_equal(got, "hello, mcu");
    /* Longer than the 256-byte string arena: refused before the call. */
    char longer[300];
    memset(longer, 'x', sizeof longer);
    args[1].v.v_str.ptr = longer;
    args[1].v.v_str.len = sizeof longer;
    char msg[512];
    assert_int_equal(mcu_call_error(&board, f, TETHER_ABI_PACKED, args, 2, msg, sizeof msg),
                     TETHER_ERR_LIMIT);
    mcu_free(&board, out);
}

static void test_large_copy(void **state) {
    (void)state;
    /* 64 KiB through a 1 KiB receive buffer: 68 acknowledged chunks each way. */
    const size_t n = 64 * 1024;
    uint8_t *in = malloc(n), *out = malloc(n);
    uint32_t x = 99;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        in[i] = (uint8_t)(x >> 16);
    }
    int64_t shape[1] = {(int64_t)n};
    uint64_t a = mcu_alloc(&board, shape, 1, TETHER_UINT8, NULL);
    mcu_copy_to(&board, a, in, n);
    mcu_copy_from(&board, a, out, n);
    assert_memory_equal(in, out, n);
    mcu_free(&board, a);
    free(in);
    free(out);
    /* The UART never lost a byte and no frame was dropped (the board LOG line counts both;
     * test_duplicate_request, which sends garbage on purpose, runs later). */
    tether_rpc_msg rep;
    mcu_hello(&board, &rep);
    printf("%s\n", board.last_log);
    assert_non_null(strstr(board.last_log, "lost 0 dropped 0"));
}

static void test_stack_high_water(void **state) {
    (void)state;
    uint64_t f = mcu_get_function(&board, 0, "stack_use", NULL);
    tether_rpc_call_rep small, big;
    tether_rpc_arg arg = mcu_arg_int(100);
    mcu_call(&board, f, TETHER_ABI_PACKED, &arg, 1, &small);
    arg = mcu_arg_int(6000);
    mcu_call(&board, f, TETHER_ABI_PACKED, &arg, 1, &big);
    /* Its packed return value (the sum of the bytes 0..99 it wrote) comes back in the reply. */
    assert_int_equal(small.ret_value.type_code, TETHER_TYPE_INT);
    assert_int_equal(small.ret_value.v.v_int, 4950);
    /* stack_use puts an n-byte array on its stack (rounded up to 8 bytes). */
    printf("stack_use(100): %llu bytes, stack_use(6000): %llu bytes\n",
           (unsigned long long)small.stack_bytes, (unsigned long long)big.stack_bytes);
    assert_true(small.stack_bytes >= 100 && small.stack_bytes < 100 + 256);
    assert_true(big.stack_bytes >= 6000 && big.stack_bytes < 6000 + 256);
    assert_true(big.stack_bytes - small.stack_bytes >= 5890 &&
                big.stack_bytes - small.stack_bytes <= 5910);
    /* Too deep for the 16 KiB stack is refused by the function itself. */
    arg = mcu_arg_int(9000);
    mcu_call(&board, f, TETHER_ABI_PACKED, &arg, 1, &small);
    assert_int_equal(small.ret, TETHER_ERR_INVALID_ARG);
}

static void test_cycles_deterministic(void **state) {
    (void)state;
    uint64_t f = mcu_get_function(&board, 0, "spin", NULL);
    tether_rpc_arg arg = mcu_arg_int(10000);
    tether_rpc_call_rep r[4];
    for (int i = 0; i < 4; i++) {
        mcu_call(&board, f, TETHER_ABI_PACKED, &arg, 1, &r[i]);
        assert_int_equal(r[i].ret, 0);
    }
    printf("spin(10000): %llu ns = %llu cycles at 25 MHz, stack %llu bytes\n",
           (unsigned long long)r[0].elapsed_ns, (unsigned long long)(r[0].elapsed_ns / 40),
           (unsigned long long)r[0].stack_bytes);
    spin_ns_first_boot = r[0].elapsed_ns;
    for (int i = 1; i < 4; i++) {
        assert_int_equal(r[i].elapsed_ns, r[0].elapsed_ns);
        assert_int_equal(r[i].stack_bytes, r[0].stack_bytes);
    }
    /* Twice the work, about twice the cycles (the loop dominates). */
    arg = mcu_arg_int(20000);
    tether_rpc_call_rep d;
    mcu_call(&board, f, TETHER_ABI_PACKED, &arg, 1, &d);
    printf("spin(20000): %llu ns\n", (unsigned long long)d.elapsed_ns);
    assert_true(d.elapsed_ns > r[0].elapsed_ns * 19 / 10 &&
                d.elapsed_ns < r[0].elapsed_ns * 21 / 10);

    /* TIME: identical per-call means in every repeat. */
    static tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_TIME;
    req.u.time_req.invoke.func = f;
    req.u.time_req.invoke.abi = TETHER_ABI_PACKED;
    req.u.time_req.invoke.num_args = 1;
    req.u.time_req.invoke.args[0] = mcu_arg_int(10000);
    req.u.time_req.number = 3;
    req.u.time_req.repeat = 4;
    assert_int_equal(mcu_request(&board, &req, &rep, 30000), 0);
    assert_int_equal(rep.type, TETHER_RPC_TIME | TETHER_RPC_REPLY);
    assert_int_equal(rep.u.time_rep.repeat, 4);
    assert_int_equal(rep.u.time_rep.number, 3);
    printf("TIME spin(10000): %.9f s per call\n", rep.u.time_rep.seconds[0]);
    for (int i = 1; i < 4; i++) {
        assert_true(rep.u.time_rep.seconds[i] == rep.u.time_rep.seconds[0]);
    }
    assert_true(rep.u.time_rep.seconds[0] > 0);
}

static void test_duplicate_request(void **state) {
    (void)state;
    /* The same ALLOC frame sent twice (a retransmission) allocates once: both replies carry
     * the same handle, and the next ALLOC gets a different one. */
    tether_rpc_msg req = {.type = TETHER_RPC_ALLOC}, rep1, rep2;
    req.u.alloc_req.ndim = 1;
    req.u.alloc_req.shape[0] = 8;
    req.u.alloc_req.dtype_code = kDLUInt;
    req.u.alloc_req.dtype_bits = 8;
    req.u.alloc_req.dtype_lanes = 1;
    assert_int_equal(mcu_request(&board, &req, &rep1, 10000), 0);
    board.next_id--; /* resend with the same id */
    assert_int_equal(mcu_request(&board, &req, &rep2, 10000), 0);
    assert_int_equal(rep1.type, TETHER_RPC_ALLOC | TETHER_RPC_REPLY);
    assert_int_equal(rep2.type, TETHER_RPC_ALLOC | TETHER_RPC_REPLY);
    assert_int_equal(rep1.u.alloc_rep.array, rep2.u.alloc_rep.array);
    int64_t shape[1] = {8};
    uint64_t other = mcu_alloc(&board, shape, 1, TETHER_UINT8, NULL);
    assert_int_not_equal(other, rep1.u.alloc_rep.array);
    mcu_free(&board, other);
    mcu_free(&board, rep1.u.alloc_rep.array);

    /* Garbage and a corrupted frame on the line are dropped; the next request still works. */
    uint8_t junk[] = {0x00, 0x7E, 0x00, 0x05, 0x01, 0x02, 0x7E, 0x55};
    assert_int_equal(mcu_write_raw(&board, junk, sizeof junk), 0);
    tether_rpc_msg hello;
    mcu_hello(&board, &hello);
}

static void test_fault_and_new_session(void **state) {
    (void)state;
    int64_t shape[1] = {4};
    uint64_t old = mcu_alloc(&board, shape, 1, TETHER_UINT8, NULL);
    uint32_t boots = board.boots;
    uint64_t f = mcu_get_function(&board, 0, "trap", NULL);
    char msg[512];
    int32_t code = mcu_call_error(&board, f, TETHER_ABI_PACKED, NULL, 0, msg, sizeof msg);
    printf("fault report: %s\n", msg);
    assert_int_equal(code, TETHER_ERR_CRASHED);
    assert_non_null(strstr(msg, "UsageFault in 'trap'"));
    assert_non_null(strstr(msg, "pc=0x"));
    assert_non_null(strstr(msg, "cfsr=0x00010000 (UNDEFINSTR)"));
    /* The board resets and announces a new session. */
    assert_int_equal(mcu_wait_log(&board, "board mps2-an385", 15000), 0);
    assert_int_equal(board.boots, boots + 1);
    assert_non_null(strstr(board.last_log, "boot 1"));
    /* Until HELLO, requests (e.g. a retransmission from the old session) are refused. */
    tether_rpc_msg rep;
    tether_rpc_msg req = {.type = TETHER_RPC_FREE};
    req.u.free_req.handle = old;
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.u.error.code, TETHER_ERR_STATE);
    mcu_hello(&board, &rep);
    /* Nothing of the old session survives: its array handle is unknown. */
    req.u.free_req.handle = old;
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.u.error.code, TETHER_ERR_NOT_FOUND);
    /* And the new session works, with the same cycle count as before the reset. */
    uint64_t spin = mcu_get_function(&board, 0, "spin", NULL);
    tether_rpc_arg arg = mcu_arg_int(10000);
    tether_rpc_call_rep r;
    mcu_call(&board, spin, TETHER_ABI_PACKED, &arg, 1, &r);
    assert_int_equal(r.ret, 0);
    assert_true(spin_ns_first_boot != 0);
    assert_int_equal(r.elapsed_ns, spin_ns_first_boot);

    /* RESET frees the session's arrays without restarting the board. */
    uint64_t before = mcu_alloc(&board, shape, 1, TETHER_UINT8, NULL);
    tether_rpc_msg reset = {.type = TETHER_RPC_RESET};
    assert_int_equal(mcu_request(&board, &reset, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_RESET | TETHER_RPC_REPLY);
    req.u.free_req.handle = before;
    req.type = TETHER_RPC_FREE;
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.u.error.code, TETHER_ERR_NOT_FOUND);
    /* The whole heap is free again. */
    int64_t most[1] = {250 * 1024};
    mcu_free(&board, mcu_alloc(&board, most, 1, TETHER_UINT8, NULL));

    /* SHUTDOWN: replied to, then the MCU resets (boot 2) and serves a new session. */
    tether_rpc_msg shutdown = {.type = TETHER_RPC_SHUTDOWN};
    assert_int_equal(mcu_request(&board, &shutdown, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_SHUTDOWN | TETHER_RPC_REPLY);
    assert_int_equal(mcu_wait_log(&board, "board mps2-an385", 15000), 0);
    assert_non_null(strstr(board.last_log, "boot 2"));
    mcu_hello(&board, &rep);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello),
        cmocka_unit_test(test_copy_round_trip),
        cmocka_unit_test(test_every_dtype),
        cmocka_unit_test(test_alloc_errors),
        cmocka_unit_test(test_syslib_calls),
        cmocka_unit_test(test_string_arguments),
        cmocka_unit_test(test_large_copy),
        cmocka_unit_test(test_stack_high_water),
        cmocka_unit_test(test_cycles_deterministic),
        cmocka_unit_test(test_duplicate_request),
        cmocka_unit_test(test_fault_and_new_session),
    };
    return mcu_test_main(argc, argv, tests, sizeof tests / sizeof *tests, setup, teardown);
}
