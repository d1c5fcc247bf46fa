/*
 * The example model (examples/kws) compiled for cortex-m3 in both ABIs with the compiler
 * library, linked at the load region, uploaded to the firmware on QEMU (-icount shift=0), run,
 * and compared with the reference interpreter. Checks: outputs match the reference, repeated
 * runs give identical cycle counts, and the unpacked build uses strictly less stack than the
 * packed one. Prints the seed-003 style table (code size, cycles, stack) for the closing note.
 * usage: test_mcu_model FIRMWARE_DIR
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcu_client.h"
#include "tether/compiler.h"
#include "tether/compiler_cli.h"
#include "tether/mcu_link.h"
#include "tether/rpc/sha256.h"

static mcu_board board;
static char workdir[256];
static tether_ir_graph graph;
static float input[1 * 1 * 49 * 10];
static float reference[12];

typedef struct result {
    uint64_t image_bytes; /* uploaded image (code + rodata incl. weights + data) */
    uint64_t bss_bytes;   /* static workspace */
    uint64_t cycles;
    uint64_t stack;
} result;
static result results[2];

static uint8_t *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
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

/* Compiles the model for cortex-m3 in `abi`, links the static library at the load region with
 * the host's link step (tether/mcu_link.h) and returns the image. */
static uint8_t *build_image(const char *abi, size_t *size, uint64_t *bss) {
    char dir[512], model[512];
    snprintf(dir, sizeof dir, "%s/kws-%s", workdir, abi);
    snprintf(model, sizeof model, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
    char *argv[] = {"compile",   model,   "-o",        dir,       "--target",
                    "cortex-m3", "--abi", (char *)abi, "--quiet", NULL};
    int rc = tether_cmd_compile(9, argv);
    if (rc != 0) {
        fail_msg("tether compile --target cortex-m3 --abi %s failed (%d): %s", abi, rc,
                 tether_last_error());
    }
    tether_mcu_firmware fw;
    if (tether_mcu_firmware_load(mcu_fw_dir, &fw) != 0) {
        fail_msg("%s", tether_last_error());
    }
    char bin[1100];
    tether_mcu_image img;
    if (tether_mcu_link_artifact(&fw, dir, dir, bin, sizeof bin, &img) != 0) {
        fail_msg("linking the %s model image failed: %s", abi, tether_last_error());
    }
    uint8_t *data = read_file(bin, size);
    assert_int_equal(*size, img.size);
    *bss = img.bss_size;
    return data;
}

static uint64_t upload_and_load(const char *name, const uint8_t *img, size_t size) {
    tether_rpc_msg req, rep;
    uint8_t hash[32];
    tether_sha256(img, size, hash);
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_UPLOAD;
    req.u.upload_req.kind = TETHER_RPC_MODULE_MCU_IMAGE;
    req.u.upload_req.name = tether_rpc_str_c(name);
    req.u.upload_req.total_size = size;
    req.u.upload_req.sha256.ptr = hash;
    req.u.upload_req.sha256.len = 32;
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_UPLOAD | TETHER_RPC_REPLY);
    uint32_t id = rep.u.upload_rep.upload_id;
    uint32_t chunk = tether_rpc_chunk_max(board.device_max_frame);
    for (size_t off = 0; off < size; off += chunk) {
        size_t len = size - off < chunk ? size - off : chunk;
        memset(&req, 0, sizeof req);
        req.type = TETHER_RPC_UPLOAD_CHUNK;
        req.u.upload_chunk_req.upload_id = id;
        req.u.upload_chunk_req.offset = off;
        req.u.upload_chunk_req.data.ptr = img + off;
        req.u.upload_chunk_req.data.len = (uint32_t)len;
        assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
        assert_int_equal(rep.type, TETHER_RPC_UPLOAD_CHUNK | TETHER_RPC_REPLY);
    }
    assert_true(rep.u.upload_chunk_rep.complete);
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_LOAD_MODULE;
    req.u.load_module_req.name = tether_rpc_str_c(name);
    assert_int_equal(mcu_request(&board, &req, &rep, 10000), 0);
    if (rep.type == TETHER_RPC_ERROR) {
        fail_msg("LOAD_MODULE %s: %.*s", name, (int)rep.u.error.message.len,
                 rep.u.error.message.ptr);
    }
    return rep.u.load_module_rep.module;
}

static void run_abi(int which) {
    const char *abi = which == 0 ? "packed" : "unpacked";
    size_t size;
    uint64_t bss;
    uint8_t *img = build_image(abi, &size, &bss);
    uint64_t module = upload_and_load(abi, img, size);
    free(img);
    uint32_t fabi;
    uint64_t f = mcu_get_function(&board, module, "tether_model_main", &fabi);
    assert_int_equal(fabi, which == 0 ? TETHER_ABI_PACKED : TETHER_ABI_UNPACKED);

    int64_t in_shape[4] = {1, 1, 49, 10}, out_shape[2] = {1, 12};
    uint64_t hin = mcu_alloc(&board, in_shape, 4, TETHER_FLOAT32, NULL);
    uint64_t hout = mcu_alloc(&board, out_shape, 2, TETHER_FLOAT32, NULL);
    mcu_copy_to(&board, hin, input, sizeof input);
    tether_rpc_arg args[2] = {mcu_arg_array(hin), mcu_arg_array(hout)};
    tether_rpc_call_rep first, again;
    mcu_call(&board, f, which == 0 ? TETHER_ABI_PACKED : TETHER_ABI_UNPACKED, args, 2, &first);
    assert_int_equal(first.ret, 0);
    float out[12];
    mcu_copy_from(&board, hout, out, sizeof out);
    for (int i = 0; i < 12; i++) {
        if (fabsf(out[i] - reference[i]) > 1e-5f + 1e-4f * fabsf(reference[i])) {
            fail_msg("%s output %d: device %.9g, reference %.9g", abi, i, out[i], reference[i]);
        }
    }
    mcu_call(&board, f, which == 0 ? TETHER_ABI_PACKED : TETHER_ABI_UNPACKED, args, 2, &again);
    assert_int_equal(again.elapsed_ns, first.elapsed_ns);
    assert_int_equal(again.stack_bytes, first.stack_bytes);
    results[which].image_bytes = size;
    results[which].bss_bytes = bss;
    results[which].cycles = first.elapsed_ns / 40; /* 25 MHz */
    results[which].stack = first.stack_bytes;
    mcu_free(&board, hin);
    mcu_free(&board, hout);
}

static int setup(void **state) {
    (void)state;
    if (mcu_workdir_create(workdir, sizeof workdir, "model") != 0) {
        return -1;
    }
    char model[512];
    snprintf(model, sizeof model, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
    if (tether_model_load(model, &graph) != 0) {
        fprintf(stderr, "loading %s: %s\n", model, tether_last_error());
        return -1;
    }
    mcu_kws_input(input, sizeof input / sizeof input[0]);
    const float *ins[1] = {input};
    float *outs[1] = {reference};
    if (tether_interp_run(&graph, ins, outs) != 0) {
        fprintf(stderr, "reference interpreter: %s\n", tether_last_error());
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
    tether_ir_close(&graph);
    return mcu_workdir_remove(workdir);
}

static void test_kws_packed(void **state) {
    (void)state;
    run_abi(0);
}

static void test_kws_unpacked(void **state) {
    (void)state;
    run_abi(1);
}

static void test_kws_compare(void **state) {
    (void)state;
    printf(
        "kws on cortex-m3 (QEMU mps2-an385, -icount shift=0; cycles = SysTick ticks at 25 MHz)\n");
    printf("  abi        image bytes  bss bytes      cycles  stack bytes\n");
    for (int i = 0; i < 2; i++) {
        printf("  %-9s  %11llu  %9llu  %10llu  %11llu\n", i == 0 ? "packed" : "unpacked",
               (unsigned long long)results[i].image_bytes, (unsigned long long)results[i].bss_bytes,
               (unsigned long long)results[i].cycles, (unsigned long long)results[i].stack);
    }
    assert_true(results[0].stack > 0 && results[1].stack > 0);
    assert_true(results[1].stack < results[0].stack);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kws_packed),
        cmocka_unit_test(test_kws_unpacked),
        cmocka_unit_test(test_kws_compare),
    };
    return mcu_test_main(argc, argv, tests, sizeof tests / sizeof *tests, setup, teardown);
}
