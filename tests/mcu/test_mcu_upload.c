/*
 * RAM upload on QEMU mps2-an385: hand-written modules (tests/mcu/modules/) are compiled here with
 * arm-none-eabi-gcc, linked against the firmware's module.ld + exports.ld, uploaded in chunks,
 * hash-checked, loaded and called; broken images (wrong link address, missing Thumb bit, .bss
 * overflow, oversize upload, wrong hash) are refused with clear errors; a module that faults
 * gets an error reply with PC and CFSR, the board resets, and a new session works.
 * usage: test_mcu_upload FIRMWARE_DIR
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcu_client.h"
#include "tether/rpc/sha256.h"

static mcu_board board;
static char workdir[256];
static uint32_t last_upload_id; /* id of the most recent successful UPLOAD */

/* Compiles tests/mcu/modules/<name>.c into an image; `ld` is the linker script to use (NULL =
 * the firmware's module.ld). Returns the bytes (malloc'ed) and their count. */
static uint8_t *build_module(const char *name, const char *ld, size_t *size) {
    char cmd[4096], ldpath[512], elf[512], bin[512];
    snprintf(ldpath, sizeof ldpath, "%s/module.ld", mcu_fw_dir);
    snprintf(elf, sizeof elf, "%s/%s.elf", workdir, name);
    snprintf(bin, sizeof bin, "%s/%s.bin", workdir, name);
    snprintf(cmd, sizeof cmd,
             "arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb -std=c11 -Os -ffreestanding "
             "-ffunction-sections -fdata-sections -mlong-calls -Wall -Wextra -Werror "
             "-I%s/crt/include -I%s/dlpack-include -nostdlib -Wl,--gc-sections -T %s %s/exports.ld "
             "%s/tests/mcu/modules/%s.c -lgcc -o %s && arm-none-eabi-objcopy -O binary %s %s",
             TETHER_SOURCE_DIR, TETHER_BINARY_DIR, ld ? ld : ldpath, mcu_fw_dir, TETHER_SOURCE_DIR,
             name, elf, elf, bin);
    if (system(cmd) != 0) {
        fail_msg("building module %s failed: %s", name, cmd);
    }
    FILE *f = fopen(bin, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)n);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return p;
}

/* A copy of the firmware's module.ld with one string replaced. */
static void patched_ld(const char *from, const char *to, char *out, size_t out_size) {
    char src[512];
    snprintf(src, sizeof src, "%s/module.ld", mcu_fw_dir);
    snprintf(out, out_size, "%s/patched-%d.ld", workdir, rand());
    FILE *f = fopen(src, "r");
    assert_non_null(f);
    static char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *at = strstr(text, from);
    assert_non_null(at);
    FILE *g = fopen(out, "w");
    fwrite(text, 1, (size_t)(at - text), g);
    fputs(to, g);
    fputs(at + strlen(from), g);
    fclose(g);
}

/* UPLOAD + chunks. Returns 0 or the error code of the step that failed (message in msg). */
static int32_t upload(const char *name, const uint8_t *data, size_t size, bool corrupt_hash,
                      uint64_t total_override, char *msg, size_t msg_size) {
    tether_rpc_msg req, rep;
    uint8_t hash[32];
    tether_sha256(data, size, hash);
    if (corrupt_hash) {
        hash[5] ^= 0x40;
    }
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_UPLOAD;
    req.u.upload_req.kind = TETHER_RPC_MODULE_MCU_IMAGE;
    req.u.upload_req.name = tether_rpc_str_c(name);
    req.u.upload_req.total_size = total_override ? total_override : size;
    req.u.upload_req.sha256.ptr = hash;
    req.u.upload_req.sha256.len = 32;
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    if (rep.type == TETHER_RPC_ERROR) {
        snprintf(msg, msg_size, "%.*s", (int)rep.u.error.message.len, rep.u.error.message.ptr);
        return rep.u.error.code;
    }
    uint32_t id = rep.u.upload_rep.upload_id;
    last_upload_id = id;
    uint32_t chunk = tether_rpc_chunk_max(board.device_max_frame);
    for (size_t off = 0; off < size; off += chunk) {
        size_t len = size - off < chunk ? size - off : chunk;
        memset(&req, 0, sizeof req);
        req.type = TETHER_RPC_UPLOAD_CHUNK;
        req.u.upload_chunk_req.upload_id = id;
        req.u.upload_chunk_req.offset = off;
        req.u.upload_chunk_req.data.ptr = data + off;
        req.u.upload_chunk_req.data.len = (uint32_t)len;
        assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
        if (rep.type == TETHER_RPC_ERROR) {
            snprintf(msg, msg_size, "%.*s", (int)rep.u.error.message.len, rep.u.error.message.ptr);
            return rep.u.error.code;
        }
        assert_int_equal(rep.u.upload_chunk_rep.received, off + len);
        assert_int_equal(rep.u.upload_chunk_rep.complete, off + len == size);
    }
    return 0;
}

/* LOAD_MODULE: 0 with *module, or the error code (message in msg). */
static int32_t load(const char *name, uint64_t *module, uint32_t *nfuncs, char *msg,
                    size_t msg_size) {
    tether_rpc_msg req = {.type = TETHER_RPC_LOAD_MODULE}, rep;
    req.u.load_module_req.name = tether_rpc_str_c(name);
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    if (rep.type == TETHER_RPC_ERROR) {
        snprintf(msg, msg_size, "%.*s", (int)rep.u.error.message.len, rep.u.error.message.ptr);
        return rep.u.error.code;
    }
    assert_int_equal(rep.type, TETHER_RPC_LOAD_MODULE | TETHER_RPC_REPLY);
    *module = rep.u.load_module_rep.module;
    if (nfuncs) {
        *nfuncs = rep.u.load_module_rep.num_functions;
    }
    return 0;
}

static int setup(void **state) {
    (void)state;
    if (mcu_workdir_create(workdir, sizeof workdir, "upload") != 0) {
        return -1;
    }
    if (mcu_board_start(&board, true) != 0) {
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
    return mcu_workdir_remove(workdir);
}

static void test_upload_and_call(void **state) {
    (void)state;
    size_t size;
    uint8_t *img = build_module("math_module", NULL, &size);
    char msg[512] = "";
    assert_int_equal(upload("math", img, size, false, 0, msg, sizeof msg), 0);
    uint64_t module;
    uint32_t nfuncs;
    assert_int_equal(load("math", &module, &nfuncs, msg, sizeof msg), 0);
    /* After verification a resent chunk is accepted only when it is identical. */
    {
        tether_rpc_msg req, rep;
        memset(&req, 0, sizeof req);
        req.type = TETHER_RPC_UPLOAD_CHUNK;
        req.u.upload_chunk_req.upload_id = last_upload_id;
        req.u.upload_chunk_req.offset = 32;
        req.u.upload_chunk_req.data.ptr = img + 32;
        req.u.upload_chunk_req.data.len = 16;
        assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
        assert_int_equal(rep.type, TETHER_RPC_UPLOAD_CHUNK | TETHER_RPC_REPLY);
        assert_true(rep.u.upload_chunk_rep.complete);
        uint8_t evil[16];
        memset(evil, 0xFF, sizeof evil);
        req.u.upload_chunk_req.data.ptr = evil;
        assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
        assert_int_equal(rep.type, TETHER_RPC_ERROR);
        assert_int_equal(rep.u.error.code, TETHER_ERR_STATE);
    }
    assert_true(module != 0);
    assert_int_equal(nfuncs, 2);

    /* Unpacked softmax16 (calls the firmware's expf). */
    float in[16], out[17];
    for (int i = 0; i < 16; i++) {
        in[i] = (float)(i - 8) * 0.25f;
    }
    int64_t s16[1] = {16}, s17[1] = {17};
    uint64_t hin = mcu_alloc(&board, s16, 1, TETHER_FLOAT32, NULL);
    uint64_t hout = mcu_alloc(&board, s17, 1, TETHER_FLOAT32, NULL);
    mcu_copy_to(&board, hin, in, sizeof in);
    uint32_t abi;
    uint64_t f = mcu_get_function(&board, module, "softmax16", &abi);
    assert_int_equal(abi, TETHER_ABI_UNPACKED);
    tether_rpc_arg args[3] = {mcu_arg_array(hin), mcu_arg_array(hout)};
    tether_rpc_call_rep cr;
    for (int call = 1; call <= 2; call++) {
        mcu_call(&board, f, TETHER_ABI_UNPACKED, args, 2, &cr);
        assert_int_equal(cr.ret, 0);
        mcu_copy_from(&board, hout, out, sizeof out);
        double sum = 0;
        for (int i = 0; i < 16; i++) {
            sum += exp((double)in[i]);
        }
        for (int i = 0; i < 16; i++) {
            double want = exp((double)in[i]) / sum;
            assert_true(fabs(out[i] - want) <= 1e-6 + 1e-5 * want);
        }
        /* The module's .bss counter started at 0. */
        assert_true(out[16] == (float)call);
    }
    printf("softmax16: %llu ns, stack %llu bytes\n", (unsigned long long)cr.elapsed_ns,
           (unsigned long long)cr.stack_bytes);

    /* Packed dot_f32 (uses the firmware's tether_tensor_check). */
    float a[10], b[10], d;
    float want = 0;
    for (int i = 0; i < 10; i++) {
        a[i] = (float)i;
        b[i] = (float)(3 - i);
        want += a[i] * b[i];
    }
    want = 2 * want + 1.0f; /* scale 2, bias[10 % 4] */
    int64_t s10[1] = {10}, s1[1] = {1};
    uint64_t ha = mcu_alloc(&board, s10, 1, TETHER_FLOAT32, NULL);
    uint64_t hb = mcu_alloc(&board, s10, 1, TETHER_FLOAT32, NULL);
    uint64_t hd = mcu_alloc(&board, s1, 1, TETHER_FLOAT32, NULL);
    mcu_copy_to(&board, ha, a, sizeof a);
    mcu_copy_to(&board, hb, b, sizeof b);
    uint64_t dot = mcu_get_function(&board, module, "dot_f32", &abi);
    assert_int_equal(abi, TETHER_ABI_PACKED);
    args[0] = mcu_arg_array(ha);
    args[1] = mcu_arg_array(hb);
    args[2] = mcu_arg_array(hd);
    mcu_call(&board, dot, TETHER_ABI_PACKED, args, 3, &cr);
    assert_int_equal(cr.ret, 0);
    mcu_copy_from(&board, hd, &d, sizeof d);
    assert_true(d == want);
    /* A shape mismatch is caught by the module through the firmware's crt. */
    args[1] = mcu_arg_array(hout);
    mcu_call(&board, dot, TETHER_ABI_PACKED, args, 3, &cr);
    assert_int_equal(cr.ret, TETHER_ERR_MISMATCH);

    /* Uploading again replaces the module: the old function handles go stale. */
    assert_int_equal(upload("math2", img, size, false, 0, msg, sizeof msg), 0);
    args[1] = mcu_arg_array(hb);
    assert_int_equal(mcu_call_error(&board, dot, TETHER_ABI_PACKED, args, 3, msg, sizeof msg),
                     TETHER_ERR_NOT_FOUND);
    uint64_t module2;
    assert_int_equal(load("math2", &module2, NULL, msg, sizeof msg), 0);
    assert_true(module2 != module);
    dot = mcu_get_function(&board, module2, "dot_f32", NULL);
    mcu_call(&board, dot, TETHER_ABI_PACKED, args, 3, &cr);
    assert_int_equal(cr.ret, 0);

    /* UNLOAD: the module and its functions are gone. */
    tether_rpc_msg req = {.type = TETHER_RPC_UNLOAD}, rep;
    req.u.unload_req.module = module2;
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_UNLOAD | TETHER_RPC_REPLY);
    assert_int_equal(mcu_call_error(&board, dot, TETHER_ABI_PACKED, args, 3, msg, sizeof msg),
                     TETHER_ERR_NOT_FOUND);
    mcu_free(&board, hin);
    mcu_free(&board, hout);
    mcu_free(&board, ha);
    mcu_free(&board, hb);
    mcu_free(&board, hd);
    free(img);
}

/* firmware.json describes the same load region the device announces, and every export. */
static void test_firmware_json(void **state) {
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/firmware.json", mcu_fw_dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    assert_non_null(strstr(text, "\"format\": \"tether-mcu-firmware\""));
    assert_non_null(strstr(text, "\"board\": \"mps2-an385\""));
    assert_non_null(strstr(text, "\"cpu_flags\": \"-mcpu=cortex-m3 -mthumb -mfloat-abi=soft\""));
    assert_non_null(strstr(text, "\"load_addr\": \"0x20050000\""));
    assert_non_null(strstr(text, "\"load_size\": 131072"));
    assert_non_null(strstr(text, "\"expf\": \"0x"));
    assert_non_null(strstr(text, "\"tether_tensor_check\": \"0x"));
}

static void test_bad_images(void **state) {
    (void)state;
    char msg[512], ld[512];
    uint64_t module;
    size_t size;

    /* Corrupted hash: the upload is discarded at its last chunk. */
    uint8_t *img = build_module("math_module", NULL, &size);
    assert_int_equal(upload("badhash", img, size, true, 0, msg, sizeof msg), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(msg, "SHA-256"));
    assert_int_equal(load("badhash", &module, NULL, msg, sizeof msg), TETHER_ERR_NOT_FOUND);

    /* Bigger than the load region: refused before any byte is sent. */
    assert_int_equal(upload("huge", img, size, false, 200 * 1024, msg, sizeof msg),
                     TETHER_ERR_LIMIT);
    assert_non_null(strstr(msg, "does not fit the 131072-byte load region at 0x20050000"));
    free(img);

    /* Linked for another address. */
    patched_ld("ORIGIN = 0x20050000", "ORIGIN = 0x20060000", ld, sizeof ld);
    img = build_module("math_module", ld, &size);
    assert_int_equal(upload("moved", img, size, false, 0, msg, sizeof msg), 0);
    assert_int_equal(load("moved", &module, NULL, msg, sizeof msg), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(msg, "linked for address 0x20060000"));
    free(img);

    /* A registry entry without the Thumb bit. */
    img = build_module("nothumb_module", NULL, &size);
    assert_int_equal(upload("nothumb", img, size, false, 0, msg, sizeof msg), 0);
    int32_t code = load("nothumb", &module, NULL, msg, sizeof msg);
    printf("nothumb: %s\n", msg);
    assert_int_equal(code, TETHER_ERR_ALIGNMENT);
    assert_non_null(strstr(msg, "lacks the Thumb bit"));
    free(img);

    /* .bss past the end of the load region (linked with a script claiming a bigger region; the
     * real module.ld makes the linker refuse it already). */
    patched_ld("LENGTH = 131072", "LENGTH = 1048576", ld, sizeof ld);
    img = build_module("bigbss_module", ld, &size);
    assert_int_equal(upload("bigbss", img, size, false, 0, msg, sizeof msg), 0);
    assert_int_equal(load("bigbss", &module, NULL, msg, sizeof msg), TETHER_ERR_LIMIT);
    assert_non_null(strstr(msg, "load region"));
    free(img);

    /* Not an image at all. */
    uint8_t junk[64];
    memset(junk, 0xA5, sizeof junk);
    assert_int_equal(upload("junk", junk, sizeof junk, false, 0, msg, sizeof msg), 0);
    assert_int_equal(load("junk", &module, NULL, msg, sizeof msg), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(msg, "not a tether MCU image"));
}

/* Uploads and loads fault_module (again after a fault has reset the board); its handle. */
static uint64_t load_fault_module(void) {
    size_t size;
    char msg[512] = "";
    uint8_t *img = build_module("fault_module", NULL, &size);
    assert_int_equal(upload("fault", img, size, false, 0, msg, sizeof msg), 0);
    uint64_t module;
    assert_int_equal(load("fault", &module, NULL, msg, sizeof msg), 0);
    free(img);
    return module;
}

static void test_fault_in_module(void **state) {
    (void)state;
    char msg[512];
    uint64_t module = load_fault_module();
    int64_t s1[1] = {1};
    uint64_t ha = mcu_alloc(&board, s1, 1, TETHER_INT32, NULL);
    uint64_t hb = mcu_alloc(&board, s1, 1, TETHER_INT32, NULL);
    uint64_t ho = mcu_alloc(&board, s1, 1, TETHER_INT32, NULL);
    int32_t seven = 7, two = 2, zero = 0, got = 0;
    mcu_copy_to(&board, ha, &seven, 4);
    mcu_copy_to(&board, hb, &two, 4);
    uint64_t f = mcu_get_function(&board, module, "div_i32", NULL);
    tether_rpc_arg args[3] = {mcu_arg_array(ha), mcu_arg_array(hb), mcu_arg_array(ho)};
    tether_rpc_call_rep cr;
    mcu_call(&board, f, TETHER_ABI_UNPACKED, args, 3, &cr);
    mcu_copy_from(&board, ho, &got, 4);
    assert_int_equal(got, 3);

    /* Division by zero: UsageFault DIVBYZERO with the PC inside the load region. */
    mcu_copy_to(&board, hb, &zero, 4);
    uint32_t boots = board.boots;
    assert_int_equal(mcu_call_error(&board, f, TETHER_ABI_UNPACKED, args, 3, msg, sizeof msg),
                     TETHER_ERR_CRASHED);
    printf("fault report: %s\n", msg);
    assert_non_null(strstr(msg, "UsageFault in 'div_i32'"));
    assert_non_null(strstr(msg, "(DIVBYZERO)"));
    assert_non_null(strstr(msg, "pc=0x2005"));
    assert_int_equal(mcu_wait_log(&board, "board mps2-an385", 15000), 0);
    assert_int_equal(board.boots, boots + 1);

    /* New session: the module is gone (RAM load region is not kept across a reset). */
    tether_rpc_msg rep;
    mcu_hello(&board, &rep);
    tether_rpc_msg req = {.type = TETHER_RPC_GET_FUNCTION};
    req.u.get_function_req.module = module;
    req.u.get_function_req.name = tether_rpc_str_c("div_i32");
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    assert_int_equal(rep.u.error.code, TETHER_ERR_NOT_FOUND);

    /* Upload again; a store to an unmapped address is a precise BusFault with BFAR. */
    module = load_fault_module();
    uint64_t hp = mcu_alloc(&board, s1, 1, TETHER_INT32, NULL);
    int32_t addr = (int32_t)0x60000000u; /* nothing is mapped there on the AN385 */
    mcu_copy_to(&board, hp, &addr, 4);
    f = mcu_get_function(&board, module, "poke", NULL);
    args[0] = mcu_arg_array(hp);
    assert_int_equal(mcu_call_error(&board, f, TETHER_ABI_UNPACKED, args, 1, msg, sizeof msg),
                     TETHER_ERR_CRASHED);
    printf("fault report: %s\n", msg);
    assert_non_null(strstr(msg, "BusFault in 'poke'"));
    assert_non_null(strstr(msg, "(PRECISERR)"));
    assert_non_null(strstr(msg, "bfar=0x60000000"));
    assert_int_equal(mcu_wait_log(&board, "board mps2-an385", 15000), 0);
    mcu_hello(&board, &rep);

    /* Unbounded recursion: the stack sits at the bottom of SRAM above MPU no-access guards, so
     * the overflow faults (MemManage) and never reaches .bss; the reply therefore still carries
     * the right request id. */
    module = load_fault_module();
    uint64_t hn = mcu_alloc(&board, s1, 1, TETHER_INT32, NULL);
    int32_t depth = 1000000;
    mcu_copy_to(&board, hn, &depth, 4);
    f = mcu_get_function(&board, module, "recurse", NULL);
    args[0] = mcu_arg_array(hn);
    assert_int_equal(mcu_call_error(&board, f, TETHER_ABI_UNPACKED, args, 1, msg, sizeof msg),
                     TETHER_ERR_CRASHED);
    printf("fault report: %s\n", msg);
    assert_non_null(strstr(msg, "MemManage in 'recurse' (stack overflow"));
    assert_non_null(strstr(msg, "(MSTKERR)"));
    assert_int_equal(mcu_wait_log(&board, "board mps2-an385", 15000), 0);
    mcu_hello(&board, &rep);
    /* A bounded recursion on the fresh board still works. */
    module = load_fault_module();
    hn = mcu_alloc(&board, s1, 1, TETHER_INT32, NULL);
    depth = 10;
    mcu_copy_to(&board, hn, &depth, 4);
    f = mcu_get_function(&board, module, "recurse", NULL);
    args[0] = mcu_arg_array(hn);
    tether_rpc_call_rep ok;
    mcu_call(&board, f, TETHER_ABI_UNPACKED, args, 1, &ok);
    printf("recurse(10): stack %llu bytes\n", (unsigned long long)ok.stack_bytes);
    assert_true(ok.stack_bytes > 10 * 64 && ok.stack_bytes < 10 * 160);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upload_and_call),
        cmocka_unit_test(test_firmware_json),
        cmocka_unit_test(test_bad_images),
        cmocka_unit_test(test_fault_in_module),
    };
    return mcu_test_main(argc, argv, tests, sizeof tests / sizeof *tests, setup, teardown);
}
