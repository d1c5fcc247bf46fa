/*
 * A hand-written RAM-upload module for the MCU tests: one unpacked and one packed function, using
 * firmware exports (expf, tether_tensor_check), initialised data and .bss (zeroed by the device).
 */
#include <math.h>
#include <stdint.h>

#include "tether/crt.h"

static const float bias[4] = {0.5f, -0.25f, 1.0f, 0.0f}; /* .rodata */
static int32_t scale = 2;                                /* .data */
static int32_t calls;                                    /* .bss, must start at 0 */

/* out[i] = exp(in[i]) / sum(exp(in)), 16 elements; out[16] = number of calls so far. */
static int32_t softmax16(const float *restrict in, float *restrict out) {
    float sum = 0.0f;
    for (int i = 0; i < 16; i++) {
        out[i] = expf(in[i]);
        sum += out[i];
    }
    for (int i = 0; i < 16; i++) {
        out[i] /= sum;
    }
    calls++;
    out[16] = (float)calls;
    return 0;
}

/* out[0] = scale * dot(a, b) + bias[n % 4] */
static int32_t dot_f32(tether_value *args, int32_t *codes, int32_t n, tether_value *ret,
                       int32_t *ret_code, void *resource) {
    (void)ret;
    (void)ret_code;
    (void)resource;
    if (n != 3 || codes[0] != TETHER_TYPE_DLTENSOR || codes[1] != TETHER_TYPE_DLTENSOR ||
        codes[2] != TETHER_TYPE_DLTENSOR) {
        return tether_set_error(TETHER_ERR_MISMATCH, "dot_f32 takes three arrays");
    }
    DLTensor *a = args[0].v_handle, *b = args[1].v_handle, *out = args[2].v_handle;
    int64_t any[1] = {-1}, one[1] = {1};
    int32_t rc;
    if ((rc = tether_tensor_check(a, "dot_f32 a", 1, any, TETHER_FLOAT32)) ||
        (rc = tether_tensor_check(b, "dot_f32 b", 1, a->shape, TETHER_FLOAT32)) ||
        (rc = tether_tensor_check(out, "dot_f32 out", 1, one, TETHER_FLOAT32))) {
        return rc;
    }
    const float *pa = a->data, *pb = b->data;
    float s = 0.0f;
    for (int64_t i = 0; i < a->shape[0]; i++) {
        s += pa[i] * pb[i];
    }
    *(float *)out->data = (float)scale * s + bias[a->shape[0] % 4];
    return 0;
}

static const tether_func_entry entries[] = {
    {"softmax16", TETHER_ABI_UNPACKED, 2, {.unpacked = (tether_unpacked_func)softmax16}},
    {"dot_f32", TETHER_ABI_PACKED, 3, {.packed = dot_f32}},
};
const tether_func_registry tether_module_registry = {entries, 2};
