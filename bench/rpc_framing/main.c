/*
 * bench/rpc_framing: throughput of both message codecs and both framings, printed as MB/s and
 * as a ratio against memcpy of the same bytes measured in the same run.
 *
 * Workloads: a bulk COPY_TO message (64 KiB of data: what chunked copies cost) and a small CALL
 * message (16 arguments: per-request overhead), each encoded and decoded by the tiny codec and
 * the msgpack-c codec; stream and UART framing (encode + unframe) of 64 KiB payloads; CRC-16.
 * Usage: bench_rpc_framing [seconds-per-case, default 0.5]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tether/crt.h"
#include "tether/rpc.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double budget = 0.5;
static volatile uint64_t sink;

typedef void (*work_fn)(void *ctx);

/* Runs fn repeatedly for the budget; returns seconds per iteration. */
static double measure(work_fn fn, void *ctx) {
    fn(ctx); /* warm-up */
    uint64_t iters = 0;
    double t0 = now_s(), t;
    do {
        for (int i = 0; i < 16; i++) {
            fn(ctx);
        }
        iters += 16;
        t = now_s();
    } while (t - t0 < budget);
    return (t - t0) / (double)iters;
}

#define BULK (64 * 1024)
static uint8_t payload[BULK], copy_dst[BULK + 64];
static uint8_t enc_buf[BULK + 256], frame_buf[TETHER_UART_ENCODED_MAX(BULK + 256)];
static uint8_t rx_buf[BULK + 256];
static tether_rpc_msg bulk_msg, small_msg, decoded;
static size_t bulk_len, small_len, frame_len;

static void w_memcpy(void *ctx) {
    size_t n = *(size_t *)ctx;
    memcpy(copy_dst, payload, n);
    sink += copy_dst[n / 2];
}
static void w_tiny_enc(void *ctx) {
    size_t n;
    tether_rpc_tiny_encode(ctx, enc_buf, sizeof enc_buf, &n);
    sink += n;
}
static void w_mpc_enc(void *ctx) {
    size_t n;
    tether_rpc_msgpack_encode(ctx, enc_buf, sizeof enc_buf, &n);
    sink += n;
}
static uint8_t small_enc[1024];
static void w_tiny_dec_bulk(void *ctx) {
    (void)ctx;
    tether_rpc_tiny_decode(rx_buf, bulk_len, &decoded);
    /* a decoder borrows the data; a receiver still has to copy it out once */
    memcpy(copy_dst, decoded.u.copy_to_req.data.ptr, decoded.u.copy_to_req.data.len);
}
static void w_mpc_dec_bulk(void *ctx) {
    (void)ctx;
    tether_rpc_msgpack_decode(rx_buf, bulk_len, &decoded);
    memcpy(copy_dst, decoded.u.copy_to_req.data.ptr, decoded.u.copy_to_req.data.len);
}
static void w_tiny_dec_small(void *ctx) {
    (void)ctx;
    tether_rpc_tiny_decode(small_enc, small_len, &decoded);
    sink += decoded.u.call_req.num_args;
}
static void w_mpc_dec_small(void *ctx) {
    (void)ctx;
    tether_rpc_msgpack_decode(small_enc, small_len, &decoded);
    sink += decoded.u.call_req.num_args;
}
static void w_stream(void *ctx) {
    (void)ctx;
    uint8_t hdr[4];
    tether_stream_frame_header(hdr, BULK);
    tether_stream_unframer u;
    tether_stream_unframer_init(&u, rx_buf, sizeof rx_buf);
    size_t used, fl;
    const uint8_t *f;
    tether_stream_unframer_push(&u, hdr, 4, &used, &f, &fl);
    tether_stream_unframer_push(&u, payload, BULK, &used, &f, &fl);
    sink += fl;
}
static void w_uart_enc(void *ctx) {
    (void)ctx;
    tether_uart_frame_encode(payload, BULK - 1, frame_buf, sizeof frame_buf, &frame_len);
    sink += frame_len;
}
static void w_uart_dec(void *ctx) {
    (void)ctx;
    tether_uart_unframer u;
    tether_uart_unframer_init(&u, rx_buf, sizeof rx_buf, NULL, NULL);
    size_t used, fl = 0;
    const uint8_t *f;
    tether_uart_unframer_push(&u, frame_buf, frame_len, &used, &f, &fl);
    sink += fl;
}
static void w_crc(void *ctx) {
    (void)ctx;
    sink += tether_crc16_ccitt(TETHER_CRC16_INIT, payload, BULK);
}

static void report(const char *name, double sec, size_t bytes, double base_mbs) {
    double mbs = (double)bytes / sec / 1e6;
    printf("%-34s %10.1f MB/s  %12.0f msg/s  %7.3fx memcpy\n", name, mbs, 1.0 / sec,
           mbs / base_mbs);
}

int main(int argc, char **argv) {
    if (argc > 1) {
        budget = atof(argv[1]);
    }
    if (budget <= 0) {
        budget = 0.5;
    }
    for (size_t i = 0; i < BULK; i++) {
        payload[i] = (uint8_t)(i * 2654435761u >> 13);
    }

    memset(&bulk_msg, 0, sizeof bulk_msg);
    bulk_msg.type = TETHER_RPC_COPY_TO;
    bulk_msg.id = 123456;
    bulk_msg.u.copy_to_req.array = 7;
    bulk_msg.u.copy_to_req.offset = 1u << 20;
    bulk_msg.u.copy_to_req.data.ptr = payload;
    bulk_msg.u.copy_to_req.data.len = BULK;
    tether_rpc_tiny_encode(&bulk_msg, rx_buf, sizeof rx_buf, &bulk_len);

    memset(&small_msg, 0, sizeof small_msg);
    small_msg.type = TETHER_RPC_CALL;
    small_msg.id = 99;
    small_msg.u.call_req.func = 0x100000001ull;
    small_msg.u.call_req.num_args = 16;
    for (int i = 0; i < 16; i++) {
        small_msg.u.call_req.args[i].type_code =
            i % 4 == 3 ? TETHER_TYPE_FLOAT : TETHER_TYPE_DLTENSOR;
        if (i % 4 == 3) {
            small_msg.u.call_req.args[i].v.v_float = 0.5 * i;
        } else {
            small_msg.u.call_req.args[i].v.v_handle = (uint64_t)i + 1000;
        }
    }
    tether_rpc_tiny_encode(&small_msg, small_enc, sizeof small_enc, &small_len);

    printf("rpc framing benchmark: %.2f s per case; bulk = COPY_TO with %d KiB, small = CALL "
           "with 16 args (%zu bytes encoded)\n",
           budget, BULK / 1024, small_len);
    size_t bulk_bytes = BULK, small_bytes = small_len;
    double base_bulk = (double)BULK / measure(w_memcpy, &bulk_bytes) / 1e6;
    double base_small = (double)small_len / measure(w_memcpy, &small_bytes) / 1e6;
    printf("%-34s %10.1f MB/s  (baseline, %d KiB)\n", "memcpy", base_bulk, BULK / 1024);
    printf("%-34s %10.1f MB/s  (baseline, %zu B)\n", "memcpy", base_small, small_len);

    report("tiny encode bulk", measure(w_tiny_enc, &bulk_msg), bulk_len, base_bulk);
    report("msgpack-c encode bulk", measure(w_mpc_enc, &bulk_msg), bulk_len, base_bulk);
    report("tiny decode bulk (+copy out)", measure(w_tiny_dec_bulk, NULL), bulk_len, base_bulk);
    report("msgpack-c decode bulk (+copy out)", measure(w_mpc_dec_bulk, NULL), bulk_len, base_bulk);
    report("tiny encode small", measure(w_tiny_enc, &small_msg), small_len, base_small);
    report("msgpack-c encode small", measure(w_mpc_enc, &small_msg), small_len, base_small);
    report("tiny decode small", measure(w_tiny_dec_small, NULL), small_len, base_small);
    report("msgpack-c decode small", measure(w_mpc_dec_small, NULL), small_len, base_small);
    report("stream frame+unframe", measure(w_stream, NULL), BULK, base_bulk);
    report("uart frame encode", measure(w_uart_enc, NULL), BULK - 1, base_bulk);
    report("uart unframe (CRC + unescape)", measure(w_uart_dec, NULL), BULK - 1, base_bulk);
    report("crc16/ccitt", measure(w_crc, NULL), BULK, base_bulk);
    return sink == 42 ? 1 : 0;
}
