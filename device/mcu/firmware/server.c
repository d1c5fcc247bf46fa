/*
 * The tiny RPC server of tether's MCU firmware: UART framing + the tiny msgpack codec from rpc/,
 * NDArrays in static tether_heaps (one per board pool), the system library, RAM-uploaded
 * modules, CALL with stack high-water marks, TIME with the shared evaluator, and fault reports.
 * Every request is handled by the shared request handler of rpc/ (tether/rpc/server.h: HELLO
 * gating, decoding, the checks, codes and messages of UPLOAD..COPY_FROM and GET_FUNCTION, the
 * handle tables, CALL/TIME validation, the reply cache, the one reply per request), the same
 * handler tetherd runs; this file plugs in the ops and the device interface (heap allocation,
 * the load region, image loading, running calls).
 *
 * What must stay true:
 * - One request is handled at a time and gets exactly one reply (result or ERROR) with its id,
 *   sent by the core; the host keeps at most `window` (= 2) requests in flight: while one is
 *   handled the next one's bytes wait in the board's RX ring (QEMU's console FIFO on the
 *   semihosting channel), and the receive buffer
 *   (TETHER_MCU_MAX_FRAME bytes) is refilled only after the frame in it was answered.
 * - A request id seen recently is answered from the reply cache (the core's), never executed
 *   twice.
 * - Handles are the core's: checked before use, carrying a generation, so a stale or forged
 *   handle is an error, never a wild pointer.
 * - Every buffer is static; nothing allocates. Errors carry tether_last_error() text.
 * - A fault during a call is reported as an ERROR reply (TETHER_ERR_CRASHED) to the request in
 *   flight, then the board resets; after every boot a LOG line announces the new session.
 */
#include <stdint.h>
#include <string.h>

#include "firmware.h"
#include "tether/rpc/codec.h"
#include "tether/rpc/flow.h"
#include "tether/rpc/frame.h"
#include "tether/rpc/proto.h"
#include "tether/rpc/server.h"
#include "tether/rpc/sha256.h"
#include "tether/rpc/timeeval.h"

_Static_assert(TETHER_MCU_MAX_FRAME >= TETHER_RPC_MIN_FRAME,
               "frame buffer below the protocol minimum");
_Static_assert(TETHER_MCU_MAX_ARRAYS >= 1 && TETHER_MCU_MAX_ARRAYS <= 0xFFFF,
               "array handles hold 16-bit slots");
_Static_assert(TETHER_BOARD_MAX_POOLS <= TETHER_RPC_MAX_POOLS, "more pools than HELLO lists");

/* ---- state ---- */

static const tether_board_info *board;

static uint8_t rx_buf[TETHER_MCU_MAX_FRAME];
static uint8_t tx_buf[TETHER_MCU_MAX_FRAME];
static uint8_t log_buf[256 + TETHER_RPC_CHUNK_OVERHEAD]; /* LOG lines up to 256 bytes */
static tether_uart_unframer unframer;

#define REPLY_CACHE_SLOTS 4u
#define REPLY_CACHE_SLOT  96u
static uint8_t cache_mem[REPLY_CACHE_SLOTS * REPLY_CACHE_SLOT];
static tether_rpc_reply_cache cache;

static tether_rpc_msg req, rep;
/* The shared core; its HELLO gate refuses a request retransmitted from before a reset instead of
 * running it in the new session. */
static tether_server server;

/* One heap per board pool (board->pools; heaps[0] is the default pool). */
static tether_heap heaps[TETHER_BOARD_MAX_POOLS];
static uint32_t exports_id; /* tether__mcu_exports_id(), computed once at boot */

/* The shared handler's tables (rpc/src/server_requests.c) and this board under them: one load
 * region, so one upload and one module at a time. */
static tether_server_array arrays[TETHER_MCU_MAX_ARRAYS];
static tether_server_module modules[1];
static tether_server_upload uploads[1];
static tether_server_device device;
static char upload_room[64]; /* "the 131072-byte load region at 0x20050000" */

/* The function in flight, for fault reports (the request id is the core's `inflight`). */
static const char *volatile inflight_fn;

/* Call argument storage (static: the trampoline's stack measurement covers the callee only).
 * The core fills values/codes of every argument (arrays resolved to their DLTensor or bytes). */
static tether_value call_values[TETHER_MAX_ARGS];
static int32_t call_codes[TETHER_MAX_ARGS];
static uint32_t call_words[TETHER_MCU_MAX_CALL_WORDS];
static tether_value call_ret;
static int32_t call_ret_code;

/* ---- output ---- */

static int uart_put(void *ctx, const uint8_t *bytes, size_t n) {
    (void)ctx;
    tether_board_uart_write(bytes, n);
    return 0;
}

/* Link-2 frames (CRC-32, closing FLAG) and NAKs, once the host's HELLO said it takes them
 * (docs/rpc.md, "UART link"); classic frames after every boot until then. */
static bool link2;

/* ops->send: one encoded message as one UART frame. */
static int send_bytes(void *ctx, const uint8_t *bytes, size_t len) {
    (void)ctx;
    tether_uart_frame_write_ex(bytes, len, link2, uart_put, NULL);
    return TETHER_OK;
}

/* The unframer dropped a damaged frame: ask the host to resend at once. */
static void on_drop(void *ctx, tether_uart_drop reason) {
    (void)ctx;
    (void)reason;
    if (link2) {
        tether_uart_nak_write(uart_put, NULL);
    }
}

void tether__mcu_send_log(tether_log_level level, const char *text) {
    /* Static, not on the stack: LOG is sent from calls (whose stack is measured) and from the
     * fault handler's small private stack. */
    static tether_rpc_msg m;
    memset(&m, 0, sizeof m);
    m.type = TETHER_RPC_LOG;
    m.id = 0;
    m.u.log.level = (uint32_t)level;
    m.u.log.text = tether_rpc_str_c(text);
    if (m.u.log.text.len > sizeof log_buf - TETHER_RPC_CHUNK_OVERHEAD) {
        m.u.log.text.len = sizeof log_buf - TETHER_RPC_CHUNK_OVERHEAD;
    }
    (void)tether_server_send(&server, &m, log_buf, sizeof log_buf);
}

/* crt platform hooks that are board independent. */
void tether_platform_log(tether_log_level level, const char *msg) {
    tether__mcu_send_log(level, msg);
}

void tether_platform_abort(int status) {
    char text[96];
    tether_format(text, sizeof text, "firmware abort (status %d %s): resetting", status,
                  tether_status_name(status));
    tether__mcu_send_log(TETHER_LOG_ERROR, text);
    tether_board_reset();
}

static void board_summary(char *text, size_t size) {
    tether_format(
        text, size,
        "board %s cpu %s clock %u Hz boot %u; ram 0x%08x+%u heap 0x%08x+%u load "
        "0x%08x+%u stack %u; rx buffer %u B, max frame %u B, window 2; lost %u dropped %u",
        board->name, board->cpu, (unsigned)board->clock_hz, (unsigned)tether_board_boot_count(),
        (unsigned)board->ram_base, (unsigned)board->ram_size, (unsigned)board->heap_base,
        (unsigned)board->heap_size, (unsigned)board->load_base, (unsigned)board->load_size,
        (unsigned)board->stack_size, (unsigned)TETHER_MCU_MAX_FRAME, (unsigned)TETHER_MCU_MAX_FRAME,
        (unsigned)tether_board_uart_lost(), (unsigned)tether_uart_unframer_dropped(&unframer));
}

/* ---- handlers: each fills `rep` (type and id are set by the caller) or returns an error ---- */

static int on_hello(void *ctx, const tether_rpc_msg *rq, tether_rpc_msg *rp) {
    (void)ctx, (void)rq, (void)rp; /* the statics req and rep */
    /* The core freed whatever a previous host left behind (it may have died without RESET),
     * as on tetherd, and checked the heaps (dev_reset). */
    link2 = (req.u.hello_req.link & TETHER_RPC_LINK_UART2) != 0;
    tether_rpc_hello_rep *h = &rep.u.hello_rep;
    h->link = link2 ? TETHER_RPC_LINK_UART2 : 0;
    h->version = TETHER_RPC_VERSION;
    h->triple = tether_rpc_str_c(board->triple);
    h->arch = tether_rpc_str_c(board->cpu);
    /* the core's FPU, float ABI, DSP and MVE (the board table): a host refuses code that needs
     * more before uploading it */
    h->cpu_features = tether_rpc_str_c(board->features ? board->features : "");
    h->little_endian = true;
    h->pointer_bits = 32;
    h->max_frame = TETHER_MCU_MAX_FRAME;
    h->window = 2; /* the next chunk waits in the RX ring while one is handled */
    h->clock_hz = board->clock_hz;
    h->scopes = TETHER_RPC_SCOPE_BIT(TETHER_SCOPE_GLOBAL);
    h->num_pools = board->npools;
    for (uint32_t i = 0; i < board->npools; i++) {
        h->pools[i] = tether_rpc_str_c(board->pools[i].name);
        h->pool_sizes[i] = board->pools[i].size;
    }
    h->opencl = false;
    h->load_addr = board->load_base;
    h->load_size = board->load_size;
    h->auth_required = false;
    h->board = tether_rpc_str_c(board->name);
    h->ram_size = board->ram_size;
    h->heap_size = board->heap_size;
    h->stack_size = board->stack_size;
    h->boot_count = tether_board_boot_count();
    h->exports_id = exports_id;
    /* The same summary as a LOG line (with the link counters), for logs and older hosts. */
    char text[256];
    board_summary(text, sizeof text);
    tether__mcu_send_log(TETHER_LOG_INFO, text);
    return TETHER_OK;
}

/* ---- the device interface of the shared request handler ---- */

static int dev_alloc(void *ctx, tether_server_array *a, const tether_rpc_alloc_req *q,
                     DLDataType dt, const char *pool_name) {
    (void)ctx, (void)pool_name;
    uint32_t pool = a->pool < 0 ? 0u : (uint32_t)a->pool; /* "" = the default pool */
    int rc = tether_ndarray_alloc(&a->nd, &heaps[pool], board->pools[pool].name, q->shape,
                                  (int)q->ndim, dt);
    if (rc != TETHER_OK) {
        return rc;
    }
    a->data = (uint8_t *)a->nd.dl.data;
    return TETHER_OK;
}

static void dev_free(void *ctx, tether_server_array *a) {
    (void)ctx;
    (void)tether_ndarray_free(&a->nd);
}

/* The image goes straight into the load region, which holds the loaded module: an UPLOAD
 * unloads it. */
static int dev_upload_begin(void *ctx, tether_server_upload *u) {
    (void)ctx, (void)u;
    tether_server_drop_modules(&server);
    return 0;
}

static int dev_upload_write(void *ctx, tether_server_upload *u, uint64_t offset,
                            const uint8_t *data, size_t len) {
    (void)ctx, (void)u;
    memcpy((uint8_t *)board->load_base + offset, data, len);
    return TETHER_OK;
}

static int dev_upload_same(void *ctx, tether_server_upload *u, uint64_t offset, const uint8_t *data,
                           size_t len) {
    (void)ctx, (void)u;
    return memcmp((const uint8_t *)board->load_base + offset, data, len) == 0;
}

static int dev_load(void *ctx, const tether_server_upload *u, tether_server_module *m) {
    (void)ctx;
    return tether__mcu_image_load(board, (uint32_t)u->total, &m->reg);
}

/* HELLO and RESET, after the core freed everything: the heaps must be whole again. */
static int dev_reset(void *ctx) {
    (void)ctx;
    for (uint32_t i = 0; i < board->npools; i++) {
        int rc = tether_heap_check(&heaps[i]);
        if (rc != TETHER_OK) {
            return rc;
        }
    }
    return TETHER_OK;
}

static const tether_server_device_ops device_ops = {
    .alloc = dev_alloc,
    .free = dev_free,
    .upload_begin = dev_upload_begin,
    .upload_write = dev_upload_write,
    .upload_same = dev_upload_same,
    .load = dev_load,
    .reset = dev_reset,
};

static void device_init(void) {
    device.ops = &device_ops;
    device.system = &tether_module_registry;
    device.arrays = arrays;
    device.max_arrays = TETHER_MCU_MAX_ARRAYS;
    device.modules = modules;
    device.max_modules = 1;
    device.uploads = uploads;
    device.max_uploads = 1;
    device.npools = board->npools;
    for (uint32_t i = 0; i < board->npools; i++) {
        device.pool_names[i] = board->pools[i].name; /* the heaps bound them */
    }
    device.upload_kinds = 1u << TETHER_RPC_MODULE_MCU_IMAGE;
    device.max_upload = board->load_size;
    tether_format(upload_room, sizeof upload_room, "the %u-byte load region at 0x%08x",
                  (unsigned)board->load_size, (unsigned)board->load_base);
    device.upload_room = upload_room;
    device.load_replaces = true; /* one load region */
}

/* Turns a validated invocation (function, ABI, counts and argument kinds checked by the core;
 * scalars, strings and arrays already in call_values, the arrays in call->arrays) into
 * trampoline words. */
static int prepare_call(const tether_server_call *call, tether_mcu_callframe *cf) {
    const tether_rpc_invoke *inv = call->inv;
    const tether_func_entry *e = call->fn.impl;
    if (e->abi == TETHER_ABI_UNPACKED && inv->num_args > TETHER_MCU_MAX_CALL_WORDS) {
        return tether_set_error(TETHER_ERR_LIMIT, "unpacked call with %u arguments; at most %u",
                                (unsigned)inv->num_args, (unsigned)TETHER_MCU_MAX_CALL_WORDS);
    }
    for (uint32_t i = 0; e->abi == TETHER_ABI_UNPACKED && i < inv->num_args; i++) {
        const tether_server_array *a = call->arrays[i];
        call_words[i] =
            (uint32_t)(uintptr_t)(a ? (uint8_t *)a->nd.dl.data + a->nd.dl.byte_offset : NULL);
    }
    memset(cf, 0, sizeof *cf);
    cf->fn = e->fn.unpacked;
    cf->words = call_words;
    if (e->abi == TETHER_ABI_UNPACKED) {
        for (uint32_t i = inv->num_args; i < 4; i++) {
            call_words[i] = 0;
        }
        cf->nwords = inv->num_args;
    } else {
        call_ret.v_int64 = 0;
        call_ret_code = TETHER_TYPE_NULL;
        call_words[0] = (uint32_t)(uintptr_t)call_values;
        call_words[1] = (uint32_t)(uintptr_t)call_codes;
        call_words[2] = inv->num_args;
        call_words[3] = (uint32_t)(uintptr_t)&call_ret;
        call_words[4] = (uint32_t)(uintptr_t)&call_ret_code;
        call_words[5] = 0;
        cf->nwords = 6;
    }
    return TETHER_OK;
}

/* Paints the free stack below this frame (most of it here, the last TETHER_MCU_PAINT_GAP bytes
 * in the trampoline right before the call), then times the call. Only the trampoline's gap
 * painting (a few dozen words) lies inside the timed interval. */
static __attribute__((noinline)) void measured_call(tether_mcu_callframe *cf, uint64_t *t0,
                                                    uint64_t *t1) {
    uintptr_t sp = tether_board_stack_pointer();
    uintptr_t top = sp - TETHER_MCU_PAINT_GAP;
    tether__mcu_irq_off();
    tether_stack_paint((void *)board->stack_base, top - board->stack_base);
    tether__mcu_irq_on();
    cf->paint_from = top;
    tether__mcu_profile_begin(cf, board->stack_base);
    tether_board_timing_sync();
    *t0 = tether_platform_cycles();
    tether__mcu_trampoline(cf);
    *t1 = tether_platform_cycles();
}

/* The packed function's return value for the CALL reply: numbers as they are, a handle as its
 * address; strings and anything else are not sent (a device pointer means nothing to the
 * host), nor is a value of an unpacked function. */
static void ret_value(const tether_func_entry *e, tether_rpc_arg *out) {
    out->type_code = TETHER_TYPE_NULL;
    if (e->abi != TETHER_ABI_PACKED) {
        return;
    }
    switch (call_ret_code) {
    case TETHER_TYPE_INT:
        out->type_code = TETHER_TYPE_INT;
        out->v.v_int = call_ret.v_int64;
        break;
    case TETHER_TYPE_UINT:
        out->type_code = TETHER_TYPE_UINT;
        out->v.v_uint = (uint64_t)call_ret.v_int64;
        break;
    case TETHER_TYPE_FLOAT:
        out->type_code = TETHER_TYPE_FLOAT;
        out->v.v_float = call_ret.v_float64;
        break;
    case TETHER_TYPE_HANDLE:
        out->type_code = TETHER_TYPE_HANDLE;
        out->v.v_handle = (uint64_t)(uintptr_t)call_ret.v_handle;
        break;
    default:
        break;
    }
}

static int on_call(const tether_server_call *call) {
    const tether_func_entry *e = call->fn.impl;
    tether_mcu_callframe cf;
    int rc = prepare_call(call, &cf);
    if (rc != TETHER_OK) {
        return rc;
    }
    inflight_fn = e->name;
    tether_clear_error();
    uint64_t t0, t1;
    measured_call(&cf, &t0, &t1);
    inflight_fn = NULL;
    size_t used =
        tether_stack_used((const void *)board->stack_base, cf.sp_at_call - board->stack_base);
    /* a profiling build repainted what its nodes used: the most of them counts too */
    size_t nodes = tether__mcu_profile_end();
    used = nodes > used ? nodes : used;
    rep.u.call_rep.ret = cf.ret;
    rep.u.call_rep.elapsed_ns = (t1 - t0) * 1000000000u / board->clock_hz;
    rep.u.call_rep.stack_bytes = used;
    ret_value(e, &rep.u.call_rep.ret_value);
    if (cf.ret != 0 && tether_last_status() != TETHER_OK) {
        /* The function failed and said why: forward its message to the host. */
        tether_log(TETHER_LOG_WARN, "%s returned %d: %s", e->name, (int)cf.ret,
                   tether_last_error());
    }
    return TETHER_OK;
}

static int32_t time_run(void *ctx) {
    tether_mcu_callframe *cf = ctx;
    cf->paint_from = 0;
    tether__mcu_trampoline(cf);
    return cf->ret;
}

/* The evaluator reads the clock in pairs (start and end of each repeat). The start reading is
 * aligned to a timer tick, so every repeat starts at the same phase and, under QEMU -icount,
 * yields the same count; the alignment happens before the interval, never inside it. */
static uint32_t time_reads;

static uint64_t time_now(void *ctx) {
    (void)ctx;
    if ((time_reads++ & 1u) == 0) {
        tether_board_timing_sync();
    }
    return tether_platform_time_ns();
}

static void time_sleep(void *ctx, uint32_t ms) {
    (void)ctx;
    uint64_t end = tether_platform_cycles() + (uint64_t)ms * (board->clock_hz / 1000u);
    while (tether_platform_cycles() < end) {
    }
}

static int on_time(const tether_server_call *call) {
    const tether_rpc_time_req *t = call->time;
    const tether_func_entry *e = call->fn.impl;
    tether_mcu_callframe cf;
    int rc = prepare_call(call, &cf);
    if (rc != TETHER_OK) {
        return rc;
    }
    tether_time_hooks hooks = {time_run, time_now, time_sleep, &cf, NULL};
    tether_time_result res;
    inflight_fn = e->name;
    time_reads = 0;
    rc = tether_time_evaluate(&hooks, t->number, t->repeat, t->min_repeat_ms, t->cooldown_ms,
                              rep.u.time_rep.seconds, TETHER_RPC_MAX_REPEAT, &res);
    inflight_fn = NULL;
    if (rc != TETHER_OK) {
        return rc;
    }
    rep.u.time_rep.number = res.number;
    rep.u.time_rep.zero_timer = res.zero_timer;
    rep.u.time_rep.repeat = res.repeat;
    return TETHER_OK;
}

/* ---- the ops of the shared server core ---- */

static int decode(void *ctx, const uint8_t *buf, size_t len, tether_rpc_msg *out) {
    (void)ctx;
    return tether_rpc_tiny_decode(buf, len, out); /* sequences: refused as unsupported */
}

static int invoke(void *ctx, const tether_server_call *call, tether_rpc_msg *rp) {
    (void)ctx, (void)rp; /* rp is the static rep */
    return call->type == TETHER_RPC_TIME ? on_time(call) : on_call(call);
}

static void note(void *ctx, int level, const char *text) {
    (void)ctx;
    if (level == TETHER_LOG_WARN) {
        tether_log(TETHER_LOG_WARN, "dropped an undecodable frame: %s", text);
    }
}

static const tether_server_ops server_ops = {
    .decode = decode,
    .send = send_bytes,
    .hello = on_hello,
    .auth = NULL, /* HELLO says auth_required = false */
    .invoke = invoke,
    .note = note,
};

/* ---- faults ---- */

static const char *cfsr_reason(uint32_t cfsr) {
    static const struct {
        uint32_t bit;
        const char *name;
    } bits[] = {
        {1u << 25, "DIVBYZERO"}, {1u << 24, "UNALIGNED"}, {1u << 19, "NOCP"},
        {1u << 18, "INVPC"},     {1u << 17, "INVSTATE"},  {1u << 16, "UNDEFINSTR"},
        {1u << 12, "STKERR"},    {1u << 11, "UNSTKERR"},  {1u << 10, "IMPRECISERR"},
        {1u << 9, "PRECISERR"},  {1u << 8, "IBUSERR"},    {1u << 4, "MSTKERR"},
        {1u << 3, "MUNSTKERR"},  {1u << 1, "DACCVIOL"},   {1u << 0, "IACCVIOL"},
    };
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) {
        if (cfsr & bits[i].bit) {
            return bits[i].name;
        }
    }
    return "no CFSR bit";
}

void tether_mcu_fault(const tether_fault_info *f) {
    static char text[320];
    const char *fn = inflight_fn;
    if (f->detail) { /* a core without Arm's fault status registers (RISC-V: mcause, mtval) */
        tether_format(text, sizeof text, "%s in '%s': pc=0x%08x ra=0x%08x %s; the device resets",
                      f->kind, fn ? fn : "(firmware)", (unsigned)f->pc, (unsigned)f->lr, f->detail);
    } else {
        /* MSTKERR/STKERR: the exception frame could not be pushed (stack overflow into the guard),
         * so the stacked PC/LR are unknown. */
        bool stacking = (f->cfsr & ((1u << 4) | (1u << 12))) != 0;
        tether_format(text, sizeof text,
                      "%s in '%s'%s: pc=0x%08x lr=0x%08x cfsr=0x%08x (%s) hfsr=0x%08x mmfar=0x%08x "
                      "bfar=0x%08x; the device resets",
                      f->kind, fn ? fn : "(firmware)",
                      stacking ? " (stack overflow: no exception frame, pc/lr unknown)" : "",
                      (unsigned)f->pc, (unsigned)f->lr, (unsigned)f->cfsr, cfsr_reason(f->cfsr),
                      (unsigned)f->hfsr, (unsigned)f->mmfar, (unsigned)f->bfar);
    }
    uint32_t id = server.inflight;
    if (id != 0) {
        /* `rep` is free: the request that faulted never got to fill it. */
        tether_rpc_make_error(&rep, id, TETHER_ERR_CRASHED, text);
        (void)tether_server_send(&server, &rep, tx_buf, sizeof tx_buf);
    } else {
        tether__mcu_send_log(TETHER_LOG_ERROR, text);
    }
    tether_board_reset();
}

/* ---- main loop ---- */

void tether_mcu_main(void) {
    board = tether_board_get_info();
    tether_uart_unframer_init(&unframer, rx_buf, sizeof rx_buf, on_drop, NULL);
    tether_rpc_reply_cache_init(&cache, cache_mem, sizeof cache_mem, REPLY_CACHE_SLOTS);
    if (board->npools < 1 || board->npools > TETHER_BOARD_MAX_POOLS) {
        tether_platform_abort(TETHER_ERR_LIMIT);
    }
    device_init();
    const tether_server_config cfg = {.ops = &server_ops,
                                      .req = &req,
                                      .rep = &rep,
                                      .tx = tx_buf,
                                      .tx_cap = sizeof tx_buf,
                                      .cache = &cache,
                                      .values = call_values,
                                      .codes = call_codes,
                                      .close_on_garbage = false, /* UART: CRC drops them */
                                      .dev = &device};
    tether_server_init(&server, &cfg);
    for (uint32_t i = 0; i < board->npools; i++) {
        if (tether_heap_init(&heaps[i], (void *)board->pools[i].base, board->pools[i].size,
                             TETHER_DEFAULT_ALIGNMENT) != TETHER_OK) {
            tether_platform_abort(tether_last_status());
        }
    }
    if (tether_registry_check(&tether_module_registry) != TETHER_OK) {
        tether_platform_abort(tether_last_status());
    }
    exports_id = tether__mcu_exports_id();
    char text[256];
    board_summary(text, sizeof text);
    tether__mcu_send_log(TETHER_LOG_INFO, text);
    for (;;) {
        int c = tether_board_uart_getc();
        if (c < 0) {
            tether_board_wait();
            continue;
        }
        size_t len;
        if (tether_uart_unframer_byte(&unframer, (uint8_t)c, &len) == 1) {
            if (tether_server_handle_frame(&server, rx_buf, len) == TETHER_SERVER_CLOSE) {
                tether_board_reset(); /* SHUTDOWN was answered */
            }
        }
    }
}
