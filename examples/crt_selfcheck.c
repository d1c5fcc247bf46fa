/*
 * crt self-check: exercises the runtime core the way a device does and prints what it sees.
 * Run by scripts/demo. Exit code 0 only if every step gave the expected result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether/crt.h"
#include "tether/crt_posix.h"

static int failures;

static void check(int ok, const char *what) {
    printf("  %-58s %s\n", what, ok ? "ok" : "FAILED");
    if (!ok) {
        failures++;
    }
}

static int32_t scale2(const float *restrict in, float *restrict out) {
    float tmp[1024]; /* a known 4 KiB of stack */
    for (int i = 0; i < 1024; i++) {
        tmp[i] = in[i % 16] * 2.0f;
    }
    for (int i = 0; i < 16; i++) {
        out[i] = tmp[i];
    }
    return 0;
}

typedef struct call_ctx {
    const tether_func_entry *fn;
    tether_value args[2];
    int32_t codes[2];
    int32_t ret;
    int status;
} call_ctx;

static void run_call(void *p) {
    call_ctx *c = p;
    c->status = tether_call(c->fn, c->args, c->codes, 2, &c->ret);
}

int main(void) {
    printf("tether crt self-check\n");
    static _Alignas(16) unsigned char sram[16 * 1024];
    tether_heap heap;
    check(tether_heap_init(&heap, sram, sizeof sram, 16) == TETHER_OK, "heap over a 16 KiB pool");

    tether_ndarray in, out;
    int64_t shape[] = {16};
    DLDataType f32;
    check(tether_dtype_parse("float32", &f32) == TETHER_OK, "dtype 'float32' parses");
    check(tether_ndarray_alloc(&in, &heap, "sram", shape, 1, f32) == TETHER_OK &&
              tether_ndarray_alloc(&out, &heap, "sram", shape, 1, f32) == TETHER_OK,
          "two float32[16] arrays in pool 'sram'");
    for (int i = 0; i < 16; i++) {
        ((float *)in.dl.data)[i] = (float)i;
    }

    static const tether_func_entry entries[] = {
        {"scale2", TETHER_ABI_UNPACKED, 2, {.unpacked = (tether_unpacked_func)scale2}},
    };
    tether_func_registry reg = {entries, 1};
    call_ctx c = {0};
    check(tether_registry_check(&reg) == TETHER_OK &&
              tether_registry_find(&reg, "scale2", &c.fn) == TETHER_OK,
          "system library lookup of 'scale2' (unpacked ABI)");
    c.args[0].v_handle = &in.dl;
    c.args[1].v_handle = &out.dl;
    c.codes[0] = c.codes[1] = TETHER_TYPE_DLTENSOR;

    size_t stack_size = 64 * 1024, used = 0;
    void *stack = aligned_alloc(16, stack_size);
    uint64_t t0 = tether_platform_time_ns();
    int rc = tether_posix_call_on_stack(stack, stack_size, run_call, &c, &used);
    uint64_t t1 = tether_platform_time_ns();
    free(stack);
    check(rc == TETHER_OK && c.status == TETHER_OK && c.ret == 0, "call on a painted stack");
    check(((float *)out.dl.data)[15] == 30.0f, "output[15] == 30");
    check(used >= 4096, "stack high-water covers the 4 KiB local array");
    printf("    stack high-water %zu bytes, call %llu ns\n", used, (unsigned long long)(t1 - t0));

    tether_image_extent ext;
    int64_t act[] = {1, 8, 32, 32, 4};
    check(tether_texture_extent(TETHER_SCOPE_TEXTURE, act, 5, 8192, 8192, &ext) == TETHER_OK &&
              ext.width == 32 && ext.height == 256,
          "texture [1,8,32,32,4] -> 32 x 256 RGBA image");
    int64_t rgb[] = {8, 8, 3};
    check(tether_image_validate(rgb, 3, 8192, 8192, &ext) == TETHER_ERR_UNSUPPORTED,
          "image [8,8,3] rejected (C=3)");
    printf("    error text: %s\n", tether_last_error());

    check(tether_ndarray_free(&in) == TETHER_OK && tether_ndarray_free(&out) == TETHER_OK &&
              heap.used == 0 && tether_heap_check(&heap) == TETHER_OK,
          "arrays freed, heap back to empty");
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
