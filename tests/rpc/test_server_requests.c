/*
 * The shared request handler behind the server core (rpc/src/server_requests.c) over a fake
 * device kept in this file's memory: the handle schemes (stale, forged and reused slots), the
 * upload rules (order, resent and changed chunks, oversize chunks, hash, replacement of the
 * oldest upload), loading and unloading, GET_FUNCTION, ALLOC's checks (dtype, scope, pools,
 * capacities, max_alloc, slots), COPY_TO/COPY_FROM ranges and the chunk limit, array arguments
 * of CALL, the transport placement of COPY_TO data, RESET and HELLO freeing everything, and
 * kernel sequences refused on a device without them. No QEMU, no sockets: fast, and run in the
 * sanitizer tree; tests/mcu/test_mcu_agree.c holds tetherd and the firmware to the same bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tether/crt.h"
#include "tether/rpc.h"
#include "tether/rpc/server.h"
#include "tether/rpc/sha256.h"

/* ---- the fake device ---- */

#define ARRAYS 4

static struct {
    uint8_t mem[ARRAYS][256]; /* array bytes, by slot */
    uint8_t store[512];       /* the upload store (one upload at a time is enough here) */
    int allocs, frees, writes, drops, loads, unloads, resets, done;
    uint64_t written; /* bytes written to the store */
    bool fail_alloc;
    const tether_server_array *called[2]; /* what the invoke op saw */
    void *called_values[2];
    uint8_t last[4096];
    size_t last_len;
} d;

static int32_t k_null(tether_value *a, int32_t *c, int32_t n, tether_value *r, int32_t *rc,
                      void *h) {
    (void)a, (void)c, (void)n, (void)r, (void)rc, (void)h;
    return 0;
}

static const tether_func_entry sys_entries[] = {
    {"tether.null", TETHER_ABI_PACKED, -1, {.packed = k_null}},
    {"two", TETHER_ABI_PACKED, 2, {.packed = k_null}},
};
static const tether_func_registry sys_reg = {sys_entries, 2};
static const tether_func_entry mod_entries[] = {
    {"f", TETHER_ABI_PACKED, 1, {.packed = k_null}},
};
static const tether_func_registry mod_reg = {mod_entries, 1};

static int dev_alloc(void *ctx, tether_server_array *a, const tether_rpc_alloc_req *q,
                     DLDataType dt, const char *pool) {
    (void)ctx, (void)pool;
    if (d.fail_alloc) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "fake heap full");
    }
    assert_true(a->nbytes <= sizeof d.mem[0]);
    DLDevice dev = {kDLCPU, 0};
    assert_int_equal(tether_ndarray_wrap(&a->nd, d.mem[a->index], q->shape, (int)q->ndim, dt, dev,
                                         TETHER_SCOPE_GLOBAL),
                     0);
    a->data = d.mem[a->index];
    d.allocs++;
    return 0;
}

static void dev_free(void *ctx, tether_server_array *a) {
    (void)ctx;
    memset(a->data, 0, (size_t)a->nbytes);
    d.frees++;
}

static int dev_upload_begin(void *ctx, tether_server_upload *u) {
    (void)ctx, (void)u;
    return 0;
}

static int dev_upload_write(void *ctx, tether_server_upload *u, uint64_t off, const uint8_t *p,
                            size_t n) {
    (void)ctx, (void)u;
    assert_true(off + n <= sizeof d.store);
    memcpy(d.store + off, p, n);
    d.writes++;
    d.written += n;
    return 0;
}

static int dev_upload_same(void *ctx, tether_server_upload *u, uint64_t off, const uint8_t *p,
                           size_t n) {
    (void)ctx, (void)u;
    return memcmp(d.store + off, p, n) == 0;
}

static void dev_upload_done(void *ctx, tether_server_upload *u) {
    (void)ctx, (void)u;
    d.done++;
}

static void dev_upload_drop(void *ctx, tether_server_upload *u) {
    (void)ctx, (void)u;
    d.drops++;
}

static int dev_load(void *ctx, const tether_server_upload *u, tether_server_module *m) {
    (void)ctx;
    if (u->total < 4 || memcmp(d.store, "MOD!", 4) != 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "not a fake module");
    }
    m->reg = &mod_reg;
    d.loads++;
    return 0;
}

static void dev_unload(void *ctx, tether_server_module *m) {
    (void)ctx, (void)m;
    d.unloads++;
}

static int dev_reset(void *ctx) {
    (void)ctx;
    d.resets++;
    return 0;
}

static const tether_server_device_ops dev_ops = {
    .alloc = dev_alloc,
    .free = dev_free,
    .upload_begin = dev_upload_begin,
    .upload_write = dev_upload_write,
    .upload_same = dev_upload_same,
    .upload_done = dev_upload_done,
    .upload_drop = dev_upload_drop,
    .load = dev_load,
    .unload = dev_unload,
    .reset = dev_reset,
};

/* ---- the server ops ---- */

static int op_decode(void *ctx, const uint8_t *buf, size_t len, tether_rpc_msg *out) {
    (void)ctx;
    return tether_rpc_tiny_decode(buf, len, out); /* no sequence storage */
}

static int op_send(void *ctx, const uint8_t *bytes, size_t len) {
    (void)ctx;
    assert_true(len <= sizeof d.last);
    memcpy(d.last, bytes, len);
    d.last_len = len;
    return 0;
}

static int op_hello(void *ctx, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    (void)ctx, (void)req;
    rep->u.hello_rep.version = TETHER_RPC_VERSION;
    rep->u.hello_rep.max_frame = 1024;
    rep->u.hello_rep.window = 1;
    rep->u.hello_rep.pointer_bits = 64;
    rep->u.hello_rep.scopes = TETHER_RPC_SCOPE_BIT(TETHER_SCOPE_GLOBAL);
    return 0;
}

static int op_invoke(void *ctx, const tether_server_call *c, tether_rpc_msg *rep) {
    (void)ctx;
    for (uint32_t i = 0; i < 2 && i < c->inv->num_args; i++) {
        d.called[i] = c->arrays[i];
        d.called_values[i] = c->values[i].v_handle;
    }
    rep->u.call_rep.ret = 0;
    return 0;
}

static const tether_server_ops ops = {
    .decode = op_decode, .send = op_send, .hello = op_hello, .invoke = op_invoke};

static tether_server srv;
static tether_server_device dev;
static tether_server_array arrays[ARRAYS];
static tether_server_module modules[2];
static tether_server_upload uploads[2];
static tether_rpc_msg s_req, s_rep;
static uint8_t tx[1024];
static tether_value values[TETHER_RPC_MAX_ARGS];
static int32_t codes[TETHER_RPC_MAX_ARGS];
static uint32_t next_id;

static void hello(void);

static int setup(void **state) {
    (void)state;
    memset(&d, 0, sizeof d);
    memset(&dev, 0, sizeof dev);
    dev.ops = &dev_ops;
    dev.system = &sys_reg;
    dev.arrays = arrays;
    dev.max_arrays = ARRAYS;
    dev.modules = modules;
    dev.max_modules = 2;
    dev.uploads = uploads;
    dev.max_uploads = 2;
    dev.npools = 2;
    dev.pool_names[0] = "fast";
    dev.pool_names[1] = "slow";
    dev.pool_capacity[0] = 64;
    dev.max_alloc = 600;
    dev.upload_kinds = 1u << TETHER_RPC_MODULE_MCU_IMAGE;
    dev.max_upload = 300;
    dev.upload_room = "the 300-byte fake region";
    next_id = 1;
    const tether_server_config cfg = {.ops = &ops,
                                      .req = &s_req,
                                      .rep = &s_rep,
                                      .tx = tx,
                                      .tx_cap = sizeof tx,
                                      .values = values,
                                      .codes = codes,
                                      .dev = &dev};
    tether_server_init(&srv, &cfg);
    hello();
    return 0;
}

/* Sends m through the server; returns the decoded reply (valid until the next request). */
static const tether_rpc_msg *req(tether_rpc_msg *m) {
    static uint8_t frame[2048];
    static tether_rpc_msg rep;
    m->id = next_id++;
    size_t len = 0;
    assert_int_equal(tether_rpc_tiny_encode(m, frame, sizeof frame, &len), 0);
    d.last_len = 0;
    (void)tether_server_handle_frame(&srv, frame, len);
    assert_true(d.last_len > 0);
    assert_int_equal(tether_rpc_tiny_decode(d.last, d.last_len, &rep), 0);
    assert_int_equal(rep.id, m->id);
    return &rep;
}

/* The error code of the reply (0 when it is no ERROR); its message into msg. */
static char msg[600];

static int32_t code_of(const tether_rpc_msg *r) {
    msg[0] = 0;
    if (r->type != TETHER_RPC_ERROR) {
        return 0;
    }
    snprintf(msg, sizeof msg, "%.*s", (int)r->u.error.message.len, r->u.error.message.ptr);
    return r->u.error.code;
}

static void hello(void) {
    tether_rpc_msg m = {.type = TETHER_RPC_HELLO};
    m.u.hello_req.version = TETHER_RPC_VERSION;
    m.u.hello_req.max_frame = 256;
    assert_int_equal(req(&m)->type, TETHER_RPC_HELLO | TETHER_RPC_REPLY);
}

static uint64_t alloc_u8(int64_t n, const char *pool, int32_t *code) {
    tether_rpc_msg m = {.type = TETHER_RPC_ALLOC};
    m.u.alloc_req.ndim = 1;
    m.u.alloc_req.shape[0] = n;
    m.u.alloc_req.dtype_code = kDLUInt;
    m.u.alloc_req.dtype_bits = 8;
    m.u.alloc_req.dtype_lanes = 1;
    m.u.alloc_req.pool = tether_rpc_str_c(pool);
    const tether_rpc_msg *r = req(&m);
    *code = code_of(r);
    return *code ? 0 : r->u.alloc_rep.array;
}

static int32_t free_array(uint64_t h) {
    tether_rpc_msg m = {.type = TETHER_RPC_FREE};
    m.u.free_req.handle = h;
    return code_of(req(&m));
}

static uint8_t image[200];
static uint8_t image_hash[32];

static uint32_t upload(const char *name, uint64_t total) {
    tether_rpc_msg m = {.type = TETHER_RPC_UPLOAD};
    m.u.upload_req.kind = TETHER_RPC_MODULE_MCU_IMAGE;
    m.u.upload_req.name = tether_rpc_str_c(name);
    m.u.upload_req.total_size = total;
    m.u.upload_req.sha256.ptr = image_hash;
    m.u.upload_req.sha256.len = 32;
    const tether_rpc_msg *r = req(&m);
    assert_int_equal(code_of(r), 0);
    return r->u.upload_rep.upload_id;
}

static const tether_rpc_msg *chunk(uint32_t id, uint64_t off, const uint8_t *p, uint32_t n) {
    tether_rpc_msg m = {.type = TETHER_RPC_UPLOAD_CHUNK};
    m.u.upload_chunk_req.upload_id = id;
    m.u.upload_chunk_req.offset = off;
    m.u.upload_chunk_req.data.ptr = p + off;
    m.u.upload_chunk_req.data.len = n;
    return req(&m);
}

static const tether_rpc_msg *load(const char *name) {
    tether_rpc_msg m = {.type = TETHER_RPC_LOAD_MODULE};
    m.u.load_module_req.name = tether_rpc_str_c(name);
    return req(&m);
}

static const tether_rpc_msg *get_function(uint64_t module, const char *name) {
    tether_rpc_msg m = {.type = TETHER_RPC_GET_FUNCTION};
    m.u.get_function_req.module = module;
    m.u.get_function_req.name = tether_rpc_str_c(name);
    return req(&m);
}

/* ---- tests ---- */

static void test_array_handles(void **state) {
    (void)state;
    int32_t code;
    uint64_t a = alloc_u8(8, "", &code);
    assert_int_equal(code, 0);
    assert_int_equal(a, (1u << 16) | 1u); /* generation 1, slot 0 */
    uint64_t b = alloc_u8(8, "", &code);
    assert_int_equal(b, (1u << 16) | 2u);
    assert_int_equal(free_array(a), 0);
    assert_int_equal(free_array(a), TETHER_ERR_NOT_FOUND); /* stale */
    assert_non_null(strstr(msg, "FREE: no NDArray with handle 65537"));
    uint64_t c = alloc_u8(8, "", &code);
    assert_int_equal(c, (2u << 16) | 1u); /* the slot again, a new generation */
    assert_int_equal(free_array(a), TETHER_ERR_NOT_FOUND);
    assert_int_equal(free_array(1), TETHER_ERR_NOT_FOUND); /* forged: generation 0 */
    assert_int_equal(free_array(0), TETHER_ERR_NOT_FOUND);
    assert_int_equal(free_array((1u << 16) | 99u), TETHER_ERR_NOT_FOUND); /* past the table */
    /* every slot taken */
    alloc_u8(8, "", &code);
    alloc_u8(8, "", &code);
    assert_int_equal(code, 0);
    alloc_u8(8, "", &code);
    assert_int_equal(code, TETHER_ERR_LIMIT);
    assert_non_null(strstr(msg, "all 4 NDArray slots are in use"));
}

static void test_alloc_checks(void **state) {
    (void)state;
    int32_t code;
    tether_rpc_msg m = {.type = TETHER_RPC_ALLOC};
    m.u.alloc_req.ndim = 1;
    m.u.alloc_req.shape[0] = 4;
    m.u.alloc_req.dtype_code = kDLFloat;
    m.u.alloc_req.dtype_bits = 12;
    m.u.alloc_req.dtype_lanes = 1;
    assert_int_equal(code_of(req(&m)), TETHER_ERR_INVALID_ARG);
    assert_string_equal(msg, "ALLOC: invalid dtype (code 2, bits 12, lanes 1)");
    m.u.alloc_req.dtype_bits = 32;
    m.u.alloc_req.scope = TETHER_SCOPE_TEXTURE; /* HELLO said global only */
    assert_int_equal(code_of(req(&m)), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(msg, "scope 'texture' is not available on this device"));
    alloc_u8(4, "nope", &code);
    assert_int_equal(code, TETHER_ERR_NOT_FOUND);
    assert_string_equal(msg, "ALLOC: no pool 'nope' on this device (its pools: fast, slow)");
    /* pool "fast" holds 64 bytes */
    uint64_t a = alloc_u8(60, "fast", &code);
    assert_int_equal(code, 0);
    alloc_u8(8, "fast", &code);
    assert_int_equal(code, TETHER_ERR_OUT_OF_MEMORY);
    assert_string_equal(msg, "ALLOC: 8 bytes do not fit pool 'fast' (60 of 64 bytes in use)");
    assert_int_equal(free_array(a), 0);
    alloc_u8(64, "fast", &code);
    assert_int_equal(code, 0); /* freed bytes count no more */
    /* the session limit (600) over every pool */
    alloc_u8(250, "slow", &code);
    alloc_u8(250, "", &code);
    assert_int_equal(code, 0);
    alloc_u8(250, "", &code);
    assert_int_equal(code, TETHER_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(msg, "would exceed the session limit of 600 bytes (564 in use)"));
    /* the device's own failure, named as ALLOC's */
    d.fail_alloc = true;
    alloc_u8(1, "", &code);
    assert_int_equal(code, TETHER_ERR_OUT_OF_MEMORY);
    assert_string_equal(msg, "ALLOC: fake heap full");
}

static void test_copies(void **state) {
    (void)state;
    int32_t code;
    uint64_t a = alloc_u8(16, "", &code);
    static const uint8_t data[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    tether_rpc_msg m = {.type = TETHER_RPC_COPY_TO};
    m.u.copy_to_req.array = a;
    m.u.copy_to_req.offset = 4;
    m.u.copy_to_req.data.ptr = data;
    m.u.copy_to_req.data.len = 12;
    const tether_rpc_msg *r = req(&m);
    assert_int_equal(code_of(r), 0);
    assert_int_equal(r->u.copy_to_rep.written, 12);
    assert_memory_equal(d.mem[0] + 4, data, 12);
    m.u.copy_to_req.data.len = 13;
    assert_int_equal(code_of(req(&m)), TETHER_ERR_LIMIT);
    assert_string_equal(msg, "COPY_TO: bytes [4, 17) are outside the array's 16 bytes");
    tether_rpc_msg f = {.type = TETHER_RPC_COPY_FROM};
    f.u.copy_from_req.array = a;
    f.u.copy_from_req.offset = 4;
    f.u.copy_from_req.length = 12;
    r = req(&f);
    assert_int_equal(code_of(r), 0);
    assert_memory_equal(r->u.copy_from_rep.data.ptr, data, 12);
    /* the chunk limit is that of the smaller max_frame: HELLO said 256 */
    f.u.copy_from_req.length = tether_rpc_chunk_max(256) + 1;
    assert_int_equal(code_of(req(&f)), TETHER_ERR_LIMIT);
    assert_non_null(strstr(msg, "over the chunk limit of"));
    assert_non_null(strstr(msg, "(max frame 256)"));
    f.u.copy_from_req.array = a + (1u << 16); /* another generation */
    f.u.copy_from_req.length = 1;
    assert_int_equal(code_of(req(&f)), TETHER_ERR_NOT_FOUND);
}

static void test_upload_rules(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof image; i++) {
        image[i] = (uint8_t)(i * 13 + 5);
    }
    tether_sha256(image, 100, image_hash);
    const tether_rpc_msg *r = chunk(1, 0, image, 10);
    assert_int_equal(code_of(r), TETHER_ERR_NOT_FOUND); /* no upload yet */
    assert_non_null(strstr(msg, "UPLOAD_CHUNK: no upload with id 1"));
    uint32_t id = upload("m", 100);
    assert_int_equal(id, 1);
    r = chunk(id, 10, image, 10); /* a gap */
    assert_int_equal(code_of(r), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(msg, "offset 10 is past the 0 bytes received"));
    r = chunk(id, 0, image, 40);
    assert_int_equal(code_of(r), 0);
    assert_int_equal(r->u.upload_chunk_rep.received, 40);
    assert_false(r->u.upload_chunk_rep.complete);
    /* the same chunk again: nothing written, progress reported */
    int writes = d.writes;
    r = chunk(id, 0, image, 40);
    assert_int_equal(code_of(r), 0);
    assert_int_equal(r->u.upload_chunk_rep.received, 40);
    assert_int_equal(d.writes, writes);
    /* a chunk changing received bytes is refused, the upload kept */
    static uint8_t changed[200];
    memcpy(changed, image, sizeof changed);
    changed[35] ^= 1;
    r = chunk(id, 30, changed, 20);
    assert_int_equal(code_of(r), TETHER_ERR_STATE);
    assert_non_null(strstr(msg, "bytes [30, 40) differ from those received before"));
    /* overlapping: only the new bytes are written */
    uint64_t written = d.written;
    r = chunk(id, 30, image, 30);
    assert_int_equal(code_of(r), 0);
    assert_int_equal(r->u.upload_chunk_rep.received, 60);
    assert_int_equal(d.written - written, 20);
    assert_int_equal(code_of(load("m")), TETHER_ERR_STATE);
    assert_string_equal(msg, "LOAD_MODULE 'm': the upload is incomplete (60 of 100 bytes)");
    /* past the announced size: discarded */
    int drops = d.drops;
    r = chunk(id, 60, image, 41);
    assert_int_equal(code_of(r), TETHER_ERR_LIMIT);
    assert_non_null(strstr(msg, "bytes [60, 101) are past the announced 100 bytes"));
    assert_int_equal(d.drops, drops + 1);
    assert_int_equal(code_of(chunk(id, 60, image, 40)), TETHER_ERR_NOT_FOUND);
    assert_int_equal(code_of(load("m")), TETHER_ERR_NOT_FOUND);
    /* a wrong hash at the end: discarded */
    id = upload("m", 100);
    assert_int_equal(id, 2);
    assert_int_equal(code_of(chunk(id, 0, changed, 100)), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(msg, "SHA-256"));
    assert_int_equal(code_of(chunk(id, 0, image, 10)), TETHER_ERR_NOT_FOUND);
    /* complete: a resent chunk is acknowledged, a changed one refused */
    id = upload("m", 100);
    r = chunk(id, 0, image, 100);
    assert_int_equal(code_of(r), 0);
    assert_true(r->u.upload_chunk_rep.complete);
    assert_int_equal(d.done, 1);
    r = chunk(id, 50, image, 50);
    assert_int_equal(code_of(r), 0);
    assert_true(r->u.upload_chunk_rep.complete);
    changed[60] ^= 1;
    assert_int_equal(code_of(chunk(id, 50, changed, 50)), TETHER_ERR_STATE);
    assert_int_equal(d.done, 1);
}

static void test_upload_limits_and_replacement(void **state) {
    (void)state;
    tether_sha256(image, 100, image_hash);
    tether_rpc_msg m = {.type = TETHER_RPC_UPLOAD};
    m.u.upload_req.kind = TETHER_RPC_MODULE_SHARED_OBJECT;
    m.u.upload_req.name = tether_rpc_str_c("m");
    m.u.upload_req.total_size = 100;
    m.u.upload_req.sha256.ptr = image_hash;
    m.u.upload_req.sha256.len = 32;
    assert_int_equal(code_of(req(&m)), TETHER_ERR_UNSUPPORTED);
    assert_string_equal(msg, "UPLOAD 'm': module kind 0 (shared object) is not taken by this "
                             "device (it takes: MCU image 2)");
    m.u.upload_req.kind = TETHER_RPC_MODULE_MCU_IMAGE;
    m.u.upload_req.total_size = 301;
    assert_int_equal(code_of(req(&m)), TETHER_ERR_LIMIT);
    assert_string_equal(msg, "UPLOAD 'm' of 301 bytes does not fit the 300-byte fake region");
    /* two slots: a third name replaces the oldest upload */
    uint32_t a = upload("a", 100), b = upload("b", 100), c = upload("c", 100);
    assert_int_equal(code_of(chunk(a, 0, image, 10)), TETHER_ERR_NOT_FOUND);
    assert_int_equal(code_of(chunk(b, 0, image, 10)), 0);
    assert_int_equal(code_of(chunk(c, 0, image, 10)), 0);
    /* the same name replaces its upload */
    uint32_t b2 = upload("b", 100);
    assert_int_equal(code_of(chunk(b, 10, image, 10)), TETHER_ERR_NOT_FOUND);
    assert_int_equal(code_of(chunk(b2, 0, image, 10)), 0);
}

static void test_modules_and_functions(void **state) {
    (void)state;
    const tether_rpc_msg *r = get_function(0, "two");
    assert_int_equal(code_of(r), 0);
    assert_int_equal(r->u.get_function_rep.func, 2); /* system library, entry 1 */
    assert_int_equal(r->u.get_function_rep.num_args, 2);
    assert_int_equal(code_of(get_function(0, "nope")), TETHER_ERR_NOT_FOUND);
    assert_string_equal(msg, "GET_FUNCTION: function 'nope' is not in the system library");
    /* a module */
    memset(image, 0, sizeof image);
    memcpy(image, "MOD!", 4);
    tether_sha256(image, 100, image_hash);
    uint32_t id = upload("m", 100);
    assert_int_equal(code_of(chunk(id, 0, image, 100)), 0);
    r = load("m");
    assert_int_equal(code_of(r), 0);
    uint64_t mod = r->u.load_module_rep.module;
    assert_int_equal(mod, (1u << 8) | 1u);
    assert_int_equal(r->u.load_module_rep.num_functions, 1);
    r = get_function(mod, "f");
    assert_int_equal(code_of(r), 0);
    uint64_t fh = r->u.get_function_rep.func;
    assert_int_equal(fh, (mod << 16) | 1u);
    assert_int_equal(code_of(get_function(mod, "two")), TETHER_ERR_NOT_FOUND);
    assert_string_equal(msg, "GET_FUNCTION: function 'two' is not in the module's registry");
    /* a CALL reaches it */
    tether_rpc_msg c = {.type = TETHER_RPC_CALL};
    c.u.call_req.func = fh;
    c.u.call_req.abi = TETHER_ABI_PACKED;
    c.u.call_req.num_args = 1;
    c.u.call_req.args[0].type_code = TETHER_TYPE_INT;
    assert_int_equal(req(&c)->type, TETHER_RPC_CALL | TETHER_RPC_REPLY);
    /* UNLOAD: its handles are gone, the slot's next module has another */
    tether_rpc_msg u = {.type = TETHER_RPC_UNLOAD};
    u.u.unload_req.module = mod;
    assert_int_equal(code_of(req(&u)), 0);
    assert_int_equal(d.unloads, 1);
    assert_int_equal(code_of(req(&u)), TETHER_ERR_NOT_FOUND);
    assert_int_equal(code_of(req(&c)), TETHER_ERR_NOT_FOUND);
    assert_int_equal(code_of(get_function(mod, "f")), TETHER_ERR_NOT_FOUND);
    r = load("m");
    assert_int_equal(r->u.load_module_rep.module, (2u << 8) | 1u);
    /* a loader's refusal is named as LOAD_MODULE's */
    image[0] = 'X';
    tether_sha256(image, 100, image_hash);
    id = upload("bad", 100);
    assert_int_equal(code_of(chunk(id, 0, image, 100)), 0);
    assert_int_equal(code_of(load("bad")), TETHER_ERR_INVALID_ARG);
    assert_string_equal(msg, "LOAD_MODULE 'bad': not a fake module");
}

static void test_call_arrays(void **state) {
    (void)state;
    int32_t code;
    uint64_t a = alloc_u8(8, "", &code), b = alloc_u8(8, "", &code);
    tether_rpc_msg c = {.type = TETHER_RPC_CALL};
    c.u.call_req.func = 2; /* "two" */
    c.u.call_req.abi = TETHER_ABI_PACKED;
    c.u.call_req.num_args = 2;
    c.u.call_req.args[0].type_code = TETHER_TYPE_DLTENSOR;
    c.u.call_req.args[0].v.v_handle = a;
    c.u.call_req.args[1].type_code = TETHER_TYPE_HANDLE;
    c.u.call_req.args[1].v.v_handle = b;
    assert_int_equal(code_of(req(&c)), 0);
    assert_ptr_equal(d.called[0], &arrays[0]);
    assert_ptr_equal(d.called_values[0], &arrays[0].nd.dl);
    assert_ptr_equal(d.called[1], &arrays[1]);
    assert_ptr_equal(d.called_values[1], d.mem[1]);
    c.u.call_req.args[1].v.v_handle = b + (5u << 16);
    assert_int_equal(code_of(req(&c)), TETHER_ERR_NOT_FOUND);
    char want[128];
    snprintf(want, sizeof want, "CALL 'two': argument 1: no NDArray with handle %llu",
             (unsigned long long)(b + (5u << 16)));
    assert_string_equal(msg, want);
}

static void test_placement(void **state) {
    (void)state;
    int32_t code;
    uint64_t a = alloc_u8(200, "", &code);
    static uint8_t data[150];
    memset(data, 7, sizeof data);
    tether_rpc_msg m = {.type = TETHER_RPC_COPY_TO, .id = 99};
    m.u.copy_to_req.array = a;
    m.u.copy_to_req.offset = 10;
    m.u.copy_to_req.data.ptr = data;
    m.u.copy_to_req.data.len = sizeof data;
    static uint8_t frame[512];
    size_t len = 0;
    assert_int_equal(tether_rpc_tiny_encode(&m, frame, sizeof frame, &len), 0);
    size_t head = len - sizeof data;
    uint8_t *dst = NULL;
    size_t off = 0;
    assert_true(tether_server_place_copy_to(&srv, frame, head, len, &dst, &off));
    assert_ptr_equal(dst, d.mem[0] + 10);
    assert_int_equal(off, head);
    /* out of bounds, an unknown array, a short frame: through the frame buffer */
    m.u.copy_to_req.offset = 60;
    assert_int_equal(tether_rpc_tiny_encode(&m, frame, sizeof frame, &len), 0);
    assert_false(tether_server_place_copy_to(&srv, frame, head, len, &dst, &off));
    m.u.copy_to_req.offset = 10;
    m.u.copy_to_req.array = a + (1u << 16);
    assert_int_equal(tether_rpc_tiny_encode(&m, frame, sizeof frame, &len), 0);
    assert_false(tether_server_place_copy_to(&srv, frame, head, len, &dst, &off));
    m.u.copy_to_req.array = a;
    assert_int_equal(tether_rpc_tiny_encode(&m, frame, sizeof frame, &len), 0);
    assert_false(tether_server_place_copy_to(&srv, frame, head, len - 1, &dst, &off));
    /* the placed data is not copied again: the handler sees where it went */
    memset(d.mem[0], 0, sizeof d.mem[0]);
    memcpy(d.mem[0] + 10, data, sizeof data); /* what the transport did */
    uint8_t *in_frame = frame + head;
    memset(in_frame, 0xEE, sizeof data); /* the frame's own copy is stale */
    srv.placed_src = in_frame;
    srv.placed_dst = d.mem[0] + 10;
    d.last_len = 0;
    (void)tether_server_handle_frame(&srv, frame, len);
    srv.placed_src = srv.placed_dst = NULL;
    assert_memory_equal(d.mem[0] + 10, data, sizeof data);
    /* before HELLO (or AUTH) nothing is placed */
    srv.hello_done = false;
    assert_false(tether_server_place_copy_to(&srv, frame, head, len, &dst, &off));
}

static void test_reset_and_hello_free_everything(void **state) {
    (void)state;
    int32_t code;
    uint64_t a = alloc_u8(8, "", &code);
    upload("m", 100);
    tether_rpc_msg m = {.type = TETHER_RPC_RESET};
    assert_int_equal(code_of(req(&m)), 0);
    assert_int_equal(d.frees, 1);
    assert_int_equal(d.drops, 1);
    int resets = d.resets;
    assert_true(resets >= 2); /* the HELLO of setup, this RESET */
    assert_int_equal(free_array(a), TETHER_ERR_NOT_FOUND);
    a = alloc_u8(8, "", &code);
    hello();
    assert_int_equal(d.frees, 2);
    assert_int_equal(d.resets, resets + 1);
    assert_int_equal(free_array(a), TETHER_ERR_NOT_FOUND);
}

static void test_sequences_refused(void **state) {
    (void)state;
    static const tether_rpc_arg arg = {TETHER_TYPE_INT, {.v_int = 1}};
    tether_rpc_seq_step step = {1, TETHER_ABI_PACKED, 1, &arg, 1, {4, 0, 0}, {0, 0, 0}};
    tether_rpc_msg m = {.type = TETHER_RPC_LAUNCH_SEQ};
    m.u.seq_req.num_steps = 1;
    m.u.seq_req.steps = &step;
    assert_int_equal(code_of(req(&m)), TETHER_ERR_UNSUPPORTED);
    assert_string_equal(msg, "LAUNCH_SEQ: kernel sequences are not supported by this device (no "
                             "OpenCL layer; HELLO: opencl no)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_array_handles, setup),
        cmocka_unit_test_setup(test_alloc_checks, setup),
        cmocka_unit_test_setup(test_copies, setup),
        cmocka_unit_test_setup(test_upload_rules, setup),
        cmocka_unit_test_setup(test_upload_limits_and_replacement, setup),
        cmocka_unit_test_setup(test_modules_and_functions, setup),
        cmocka_unit_test_setup(test_call_arrays, setup),
        cmocka_unit_test_setup(test_placement, setup),
        cmocka_unit_test_setup(test_reset_and_hello_free_everything, setup),
        cmocka_unit_test_setup(test_sequences_refused, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
