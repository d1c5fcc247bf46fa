/*
 * The tiny RPC server of tether's MCU firmware: UART framing + the tiny msgpack codec from rpc/,
 * NDArrays in a static tether_heap, the system library, RAM-uploaded modules, CALL with stack
 * high-water marks, TIME with the shared evaluator, and fault reports. The request loop itself
 * (HELLO gating, decoding, CALL/TIME validation, reply cache, the one reply per request) is the
 * shared server core of rpc/ (tether/rpc/server.h), as in tetherd; this file plugs in the ops.
 *
 * What must stay true:
 * - One request is handled at a time and gets exactly one reply (result or ERROR) with its id,
 *   sent by the core; the host keeps at most `window` (= 2) requests in flight: while one is
 *   handled the next one's bytes wait in the board's RX ring, and the receive buffer
 *   (TETHER_MCU_MAX_FRAME bytes) is refilled only after the frame in it was answered.
 * - A request id seen recently is answered from the reply cache (the core's), never executed
 *   twice.
 * - Handles are checked before use: an NDArray handle carries a generation, so a stale or forged
 *   handle is an error, never a wild pointer; function handles name their module generation.
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
_Static_assert(TETHER_MCU_MAX_ARRAYS >= 1 && TETHER_MCU_MAX_ARRAYS <= 255,
               "array handles hold 8-bit slots");

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
static uint32_t client_max_frame = TETHER_RPC_MIN_FRAME;
/* The shared core; its HELLO gate refuses a request retransmitted from before a reset instead of
 * running it in the new session. */
static tether_server server;

/* One heap per board pool (board->pools; heaps[0] is the default pool). */
static tether_heap heaps[TETHER_BOARD_MAX_POOLS];
static uint32_t exports_id; /* tether__mcu_exports_id(), computed once at boot */

typedef struct array_slot {
    tether_ndarray arr;
    uint64_t nbytes;
    uint32_t gen; /* bumped on every allocation of this slot */
    bool used;
} array_slot;
static array_slot arrays[TETHER_MCU_MAX_ARRAYS];

/* Uploads and the loaded module (one load region, so at most one of each). */
static struct {
    bool active;   /* an UPLOAD is in progress or complete */
    bool complete; /* every byte in and the hash verified */
    uint32_t id;
    uint32_t size;
    uint32_t received;
    uint8_t sha256[TETHER_RPC_HASH_BYTES];
    char name[64];
} upload;
static uint32_t upload_ids;

static const tether_func_registry *module_reg; /* NULL when no module is loaded */
static uint32_t module_gen;                    /* handle of the loaded module (>= 1) */
static char module_name[64];

/* The function in flight, for fault reports (the request id is the core's `inflight`). */
static const char *volatile inflight_fn;

/* Call argument storage (static: the trampoline's stack measurement covers the callee only).
 * The core fills values/codes of scalar and string arguments; arrays are resolved here. */
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

/* ---- handles ---- */

static uint64_t array_handle(uint32_t slot) {
    return ((uint64_t)arrays[slot].gen << 8) | (uint64_t)(slot + 1u);
}

static int array_get(uint64_t handle, array_slot **out) {
    uint32_t slot = (uint32_t)(handle & 0xFFu);
    if (slot == 0 || slot > TETHER_MCU_MAX_ARRAYS || !arrays[slot - 1u].used ||
        array_handle(slot - 1u) != handle) {
        return tether_set_error(TETHER_ERR_NOT_FOUND,
                                "no NDArray with handle 0x%llx (freed, never allocated, or the "
                                "device reset)",
                                (unsigned long long)handle);
    }
    *out = &arrays[slot - 1u];
    return TETHER_OK;
}

/* Function handle: module generation (0 = system library) << 16 | entry index + 1. */
static bool find_func(void *ctx, uint64_t handle, tether_server_func *out) {
    (void)ctx;
    uint32_t module = (uint32_t)(handle >> 16);
    uint32_t index = (uint32_t)(handle & 0xFFFFu);
    const tether_func_registry *reg = NULL;
    if (module == 0) {
        reg = &tether_module_registry;
    } else if (module_reg != NULL && module == module_gen) {
        reg = module_reg;
    }
    if (reg == NULL || index == 0 || index > reg->count || (handle >> 48) != 0) {
        return false;
    }
    const tether_func_entry *e = &reg->entries[index - 1u];
    out->name = e->name;
    out->abi = e->abi;
    out->num_args = e->num_args;
    out->kernel = false;
    out->impl = e;
    return true;
}

/* ---- handlers: each fills `rep` (type and id are set by the caller) or returns an error ---- */

static int on_reset(void);

static int on_hello(void *ctx, const tether_rpc_msg *rq, tether_rpc_msg *rp) {
    (void)ctx, (void)rq, (void)rp; /* the statics req and rep */
    /* A HELLO starts a new session: whatever a previous host left behind (it may have died
     * without RESET) is freed, as on tetherd. */
    int rc = on_reset();
    if (rc != TETHER_OK) {
        return rc;
    }
    client_max_frame = req.u.hello_req.max_frame;
    link2 = (req.u.hello_req.link & TETHER_RPC_LINK_UART2) != 0;
    tether_rpc_hello_rep *h = &rep.u.hello_rep;
    h->link = link2 ? TETHER_RPC_LINK_UART2 : 0;
    h->version = TETHER_RPC_VERSION;
    h->triple = tether_rpc_str_c(board->triple);
    h->arch = tether_rpc_str_c(board->cpu);
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

static int on_alloc(void) {
    const tether_rpc_alloc_req *a = &req.u.alloc_req;
    if (a->scope != TETHER_SCOPE_GLOBAL) {
        const char *name = tether_scope_name((tether_scope)a->scope);
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "scope '%s' needs OpenCL images; this MCU has only 'global'",
                                name ? name : "?");
    }
    uint32_t pool = 0; /* "" = the default pool */
    if (a->pool.len != 0) {
        while (pool < board->npools && !tether_rpc_str_eq(a->pool, board->pools[pool].name)) {
            pool++;
        }
        if (pool == board->npools) {
            char have[TETHER_BOARD_MAX_POOLS * (TETHER_POOL_NAME_MAX + 2)] = "";
            size_t n = 0;
            for (uint32_t i = 0; i < board->npools && n < sizeof have; i++) {
                n += tether_format(have + n, sizeof have - n, "%s%s", i ? ", " : "",
                                   board->pools[i].name);
            }
            return tether_set_error(TETHER_ERR_NOT_FOUND, "unknown pool '%.*s'; this board has %s",
                                    (int)a->pool.len, a->pool.ptr, have);
        }
    }
    if (a->dtype_lanes > 255) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED, "dtype with %u lanes",
                                (unsigned)a->dtype_lanes);
    }
    DLDataType dt = {a->dtype_code, a->dtype_bits, a->dtype_lanes};
    uint32_t slot = 0;
    while (slot < TETHER_MCU_MAX_ARRAYS && arrays[slot].used) {
        slot++;
    }
    if (slot == TETHER_MCU_MAX_ARRAYS) {
        return tether_set_error(TETHER_ERR_LIMIT, "all %u NDArray slots are in use; FREE some",
                                (unsigned)TETHER_MCU_MAX_ARRAYS);
    }
    size_t nbytes = 0;
    int rc = tether_shape_bytes(a->shape, (int)a->ndim, dt, &nbytes);
    if (rc != TETHER_OK) {
        return rc;
    }
    array_slot *s = &arrays[slot];
    rc = tether_ndarray_alloc(&s->arr, &heaps[pool], board->pools[pool].name, a->shape,
                              (int)a->ndim, dt);
    if (rc != TETHER_OK) {
        return rc;
    }
    s->used = true;
    s->gen = (s->gen + 1u) & 0xFFFFFFu;
    s->nbytes = nbytes;
    rep.u.alloc_rep.array = array_handle(slot);
    rep.u.alloc_rep.nbytes = nbytes;
    return TETHER_OK;
}

static int on_free(void) {
    array_slot *s;
    int rc = array_get(req.u.free_req.handle, &s);
    if (rc != TETHER_OK) {
        return rc;
    }
    rc = tether_ndarray_free(&s->arr);
    s->used = false;
    return rc;
}

static int range_check(const array_slot *s, uint64_t offset, uint64_t len, const char *op) {
    if (offset > s->nbytes || len > s->nbytes - offset) {
        return tether_set_error(
            TETHER_ERR_LIMIT, "%s of %llu bytes at offset %llu is outside the %llu-byte array", op,
            (unsigned long long)len, (unsigned long long)offset, (unsigned long long)s->nbytes);
    }
    return TETHER_OK;
}

static int on_copy_to(void) {
    array_slot *s;
    const tether_rpc_copy_to_req *c = &req.u.copy_to_req;
    int rc = array_get(c->array, &s);
    if (rc == TETHER_OK) {
        rc = range_check(s, c->offset, c->data.len, "COPY_TO");
    }
    if (rc != TETHER_OK) {
        return rc;
    }
    memcpy((uint8_t *)s->arr.dl.data + c->offset, c->data.ptr, c->data.len);
    rep.u.copy_to_rep.written = c->data.len;
    return TETHER_OK;
}

static int on_copy_from(void) {
    array_slot *s;
    const tether_rpc_copy_from_req *c = &req.u.copy_from_req;
    int rc = array_get(c->array, &s);
    if (rc != TETHER_OK) {
        return rc;
    }
    uint32_t limit = tether_rpc_chunk_max(
        client_max_frame < TETHER_MCU_MAX_FRAME ? client_max_frame : TETHER_MCU_MAX_FRAME);
    if (c->length > limit) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "COPY_FROM of %llu bytes exceeds the %u-byte chunk limit of "
                                "this device (max frame %u)",
                                (unsigned long long)c->length, (unsigned)limit,
                                (unsigned)TETHER_MCU_MAX_FRAME);
    }
    if ((rc = range_check(s, c->offset, c->length, "COPY_FROM")) != TETHER_OK) {
        return rc;
    }
    rep.u.copy_from_rep.data.ptr = (const uint8_t *)s->arr.dl.data + c->offset;
    rep.u.copy_from_rep.data.len = (uint32_t)c->length;
    return TETHER_OK;
}

static void unload_module(void) {
    module_reg = NULL;
    module_name[0] = 0;
}

static int on_upload(void) {
    const tether_rpc_upload_req *u = &req.u.upload_req;
    if (u->kind != TETHER_RPC_MODULE_MCU_IMAGE) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "upload kind %u: this MCU accepts only raw RAM images (kind %u)",
                                (unsigned)u->kind, (unsigned)TETHER_RPC_MODULE_MCU_IMAGE);
    }
    if (u->total_size > board->load_size) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "image of %llu bytes does not fit the %u-byte load region at "
                                "0x%08x",
                                (unsigned long long)u->total_size, (unsigned)board->load_size,
                                (unsigned)board->load_base);
    }
    if (u->sha256.len != TETHER_RPC_HASH_BYTES) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "upload hash must be %u bytes of SHA-256",
                                (unsigned)TETHER_RPC_HASH_BYTES);
    }
    int rc = tether_rpc_str_copy(u->name, upload.name, sizeof upload.name, "module name");
    if (rc != TETHER_OK) {
        return rc;
    }
    /* The load region is about to be overwritten: the loaded module (if any) goes away. */
    unload_module();
    upload.active = true;
    upload.complete = false;
    upload.id = ++upload_ids;
    upload.size = (uint32_t)u->total_size;
    upload.received = 0;
    memcpy(upload.sha256, u->sha256.ptr, TETHER_RPC_HASH_BYTES);
    rep.u.upload_rep.upload_id = upload.id;
    return TETHER_OK;
}

static int finish_upload(void) {
    uint8_t digest[TETHER_RPC_HASH_BYTES];
    tether_sha256((const void *)board->load_base, upload.size, digest);
    if (memcmp(digest, upload.sha256, sizeof digest) != 0) {
        upload.active = false;
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "upload '%s': SHA-256 of the %u received bytes does not match "
                                "the announced hash; the upload was discarded",
                                upload.name, (unsigned)upload.size);
    }
    upload.complete = true;
    return TETHER_OK;
}

static int on_upload_chunk(void) {
    const tether_rpc_upload_chunk_req *c = &req.u.upload_chunk_req;
    if (!upload.active || c->upload_id != upload.id) {
        return tether_set_error(TETHER_ERR_STATE, "no upload with id %u in progress",
                                (unsigned)c->upload_id);
    }
    if (c->offset > upload.received || c->data.len > upload.size - c->offset) {
        return tether_set_error(TETHER_ERR_PROTOCOL,
                                "upload chunk [%llu, +%u) is past the %u bytes received so far "
                                "or the %u-byte image",
                                (unsigned long long)c->offset, (unsigned)c->data.len,
                                (unsigned)upload.received, (unsigned)upload.size);
    }
    uint8_t *dst = (uint8_t *)board->load_base + c->offset;
    if (upload.complete) {
        /* The image is verified (and may be running): a resent chunk must match it exactly. */
        if (memcmp(dst, c->data.ptr, c->data.len) != 0) {
            return tether_set_error(TETHER_ERR_STATE,
                                    "upload '%s' is complete and verified; a chunk that changes "
                                    "it is refused (start a new UPLOAD)",
                                    upload.name);
        }
    } else {
        /* A resent chunk (offset < received) rewrites bytes the final hash check covers. */
        memcpy(dst, c->data.ptr, c->data.len);
    }
    uint32_t end = (uint32_t)c->offset + c->data.len;
    bool was_complete = upload.complete;
    if (end > upload.received) {
        upload.received = end;
    }
    if (upload.received == upload.size && !was_complete) {
        int rc = finish_upload();
        if (rc != TETHER_OK) {
            return rc;
        }
    }
    rep.u.upload_chunk_rep.received = upload.received;
    rep.u.upload_chunk_rep.complete = upload.complete;
    return TETHER_OK;
}

static int on_load_module(void) {
    const tether_rpc_load_module_req *l = &req.u.load_module_req;
    if (!upload.active || !tether_rpc_str_eq(l->name, upload.name)) {
        return tether_set_error(TETHER_ERR_NOT_FOUND, "no upload named '%.*s'", (int)l->name.len,
                                l->name.ptr);
    }
    if (!upload.complete) {
        return tether_set_error(TETHER_ERR_STATE, "upload '%s' is incomplete (%u of %u bytes)",
                                upload.name, (unsigned)upload.received, (unsigned)upload.size);
    }
    const tether_func_registry *reg;
    int rc = tether__mcu_image_load(board, upload.size, &reg);
    if (rc != TETHER_OK) {
        return rc;
    }
    module_reg = reg;
    module_gen = (module_gen % 0xFFFFu) + 1u;
    memcpy(module_name, upload.name, sizeof module_name);
    rep.u.load_module_rep.module = module_gen;
    rep.u.load_module_rep.num_functions = (uint32_t)reg->count;
    return TETHER_OK;
}

static int on_unload(void) {
    uint64_t m = req.u.unload_req.module;
    if (module_reg == NULL || m != module_gen) {
        return tether_set_error(TETHER_ERR_NOT_FOUND, "no loaded module with handle %llu",
                                (unsigned long long)m);
    }
    unload_module();
    return TETHER_OK;
}

static int on_get_function(void) {
    const tether_rpc_get_function_req *g = &req.u.get_function_req;
    const tether_func_registry *reg;
    uint32_t module = 0;
    if (g->module == 0) {
        reg = &tether_module_registry;
    } else if (module_reg != NULL && g->module == module_gen) {
        reg = module_reg;
        module = module_gen;
    } else {
        return tether_set_error(TETHER_ERR_NOT_FOUND, "no loaded module with handle %llu",
                                (unsigned long long)g->module);
    }
    char name[TETHER_RPC_MAX_NAME + 1];
    int rc = tether_rpc_str_copy(g->name, name, sizeof name, "function name");
    const tether_func_entry *e = NULL;
    if (rc == TETHER_OK) {
        rc = tether_registry_find(reg, name, &e);
    }
    if (rc != TETHER_OK) {
        return rc;
    }
    rep.u.get_function_rep.func = ((uint64_t)module << 16) | (uint64_t)(e - reg->entries + 1);
    rep.u.get_function_rep.abi = (uint32_t)e->abi;
    rep.u.get_function_rep.num_args = e->num_args;
    return TETHER_OK;
}

/* Turns a validated invocation (function, ABI, counts and argument kinds checked by the core;
 * scalars and strings already in call_values) into trampoline words. */
static int prepare_call(const tether_server_call *call, tether_mcu_callframe *cf) {
    const tether_rpc_invoke *inv = call->inv;
    const tether_func_entry *e = call->fn.impl;
    if (e->abi == TETHER_ABI_UNPACKED && inv->num_args > TETHER_MCU_MAX_CALL_WORDS) {
        return tether_set_error(TETHER_ERR_LIMIT, "unpacked call with %u arguments; at most %u",
                                (unsigned)inv->num_args, (unsigned)TETHER_MCU_MAX_CALL_WORDS);
    }
    for (uint32_t i = 0; i < inv->num_args; i++) {
        const tether_rpc_arg *a = &inv->args[i];
        array_slot *s = NULL;
        if (a->type_code == TETHER_TYPE_DLTENSOR || a->type_code == TETHER_TYPE_HANDLE) {
            int rc = array_get(a->v.v_handle, &s);
            if (rc != TETHER_OK) {
                return rc;
            }
            call_values[i].v_handle =
                a->type_code == TETHER_TYPE_DLTENSOR ? (void *)&s->arr.dl : s->arr.dl.data;
        }
        if (e->abi == TETHER_ABI_UNPACKED) {
            call_words[i] =
                (uint32_t)(uintptr_t)(s ? (uint8_t *)s->arr.dl.data + s->arr.dl.byte_offset : NULL);
        }
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
    __asm volatile("cpsid i" ::: "memory");
    tether_stack_paint((void *)board->stack_base, top - board->stack_base);
    __asm volatile("cpsie i" ::: "memory");
    cf->paint_from = top;
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

/* RESET: frees every array, the module and the upload of the session (docs/rpc.md); the board
 * keeps running. Old handles then fail with TETHER_ERR_NOT_FOUND. */
static int on_reset(void) {
    for (uint32_t i = 0; i < TETHER_MCU_MAX_ARRAYS; i++) {
        if (arrays[i].used) {
            (void)tether_ndarray_free(&arrays[i].arr);
            arrays[i].used = false;
        }
    }
    unload_module();
    upload.active = false;
    upload.complete = false;
    for (uint32_t i = 0; i < board->npools; i++) {
        int rc = tether_heap_check(&heaps[i]);
        if (rc != TETHER_OK) {
            return rc;
        }
    }
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

static int request(void *ctx, const tether_rpc_msg *rq, tether_rpc_msg *rp) {
    (void)ctx, (void)rp; /* rq and rp are the statics req and rep */
    switch (rq->type) {
    case TETHER_RPC_ALLOC:
        return on_alloc();
    case TETHER_RPC_FREE:
        return on_free();
    case TETHER_RPC_COPY_TO:
        return on_copy_to();
    case TETHER_RPC_COPY_FROM:
        return on_copy_from();
    case TETHER_RPC_UPLOAD:
        return on_upload();
    case TETHER_RPC_UPLOAD_CHUNK:
        return on_upload_chunk();
    case TETHER_RPC_LOAD_MODULE:
        return on_load_module();
    case TETHER_RPC_UNLOAD:
        return on_unload();
    case TETHER_RPC_GET_FUNCTION:
        return on_get_function();
    case TETHER_RPC_RESET:
        return on_reset();
    case TETHER_RPC_SHUTDOWN:
        return TETHER_OK; /* the board resets after the reply is sent */
    default:              /* LAUNCH_SEQ / TIME_SEQ never decode here */
        return tether_set_error(TETHER_ERR_UNSUPPORTED, "%s is not supported by this device",
                                tether_rpc_type_name(rq->type));
    }
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
    .find_func = find_func,
    .invoke = invoke,
    .request = request,
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
    const tether_server_config cfg = {&server_ops, NULL,          &req,   &rep,
                                      tx_buf,      sizeof tx_buf, &cache, call_values,
                                      call_codes,  false /* UART: CRC drops damaged frames */};
    tether_server_init(&server, &cfg);
    if (board->npools < 1 || board->npools > TETHER_BOARD_MAX_POOLS) {
        tether_platform_abort(TETHER_ERR_LIMIT);
    }
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
