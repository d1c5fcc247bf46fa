/*
 * The firmware's system library: functions linked into the firmware and callable by name
 * (GET_FUNCTION with module 0). They exercise both ABIs and the measurement paths:
 *
 *   add_f32          packed   (a, b, out: float32[n])        out = a + b
 *   sum_u8           packed   (in: uint8[n], out: uint32[1])  out = sum of in (checks big copies)
 *   mul_add_f32_256  unpacked (a, b, c, out: float32[256])  out = a * b + c
 *   spin             packed   (n: int)                       n iterations of a fixed loop
 *   stack_use        packed   (n: int, 0..8192)              puts n bytes on the stack
 *   copy_str         packed   (out: uint8[n], s: str)         copies s and its NUL into out
 *   trap             packed   ()                             executes an undefined instruction
 *
 * What must stay true: packed functions validate every argument (count, type code, dtype,
 * shape) with tether_tensor_check and return a negative status without touching memory on a
 * mismatch; the registry is exported as tether_module_registry (docs/abi.md).
 */
#include <stdint.h>
#include <string.h>

#include "firmware.h"

static int32_t check_codes(const int32_t *codes, int32_t n, int32_t want_n, int32_t want_code,
                           const char *fn) {
    if (n != want_n) {
        return tether_set_error(TETHER_ERR_MISMATCH, "%s takes %d arguments, got %d", fn,
                                (int)want_n, (int)n);
    }
    for (int32_t i = 0; i < n; i++) {
        if (codes[i] != want_code) {
            return tether_set_error(TETHER_ERR_MISMATCH,
                                    "%s: argument %d has type code %d, expected %d", fn, (int)i,
                                    (int)codes[i], (int)want_code);
        }
    }
    return TETHER_OK;
}

static int32_t add_f32(tether_value *args, int32_t *codes, int32_t n, tether_value *ret,
                       int32_t *ret_code, void *resource) {
    (void)ret;
    (void)ret_code;
    (void)resource;
    int32_t rc = check_codes(codes, n, 3, TETHER_TYPE_DLTENSOR, "add_f32");
    if (rc != TETHER_OK) {
        return rc;
    }
    DLTensor *a = args[0].v_handle, *b = args[1].v_handle, *out = args[2].v_handle;
    int64_t shape[1] = {a->ndim == 1 ? a->shape[0] : -1};
    if ((rc = tether_tensor_check(a, "add_f32 argument 0 'a'", 1, shape, TETHER_FLOAT32)) ||
        (rc = tether_tensor_check(b, "add_f32 argument 1 'b'", 1, shape, TETHER_FLOAT32)) ||
        (rc = tether_tensor_check(out, "add_f32 argument 2 'out'", 1, shape, TETHER_FLOAT32))) {
        return rc;
    }
    const float *pa = (const float *)((char *)a->data + a->byte_offset);
    const float *pb = (const float *)((char *)b->data + b->byte_offset);
    float *po = (float *)((char *)out->data + out->byte_offset);
    for (int64_t i = 0; i < shape[0]; i++) {
        po[i] = pa[i] + pb[i];
    }
    return 0;
}

static int32_t sum_u8(tether_value *args, int32_t *codes, int32_t n, tether_value *ret,
                      int32_t *ret_code, void *resource) {
    (void)ret;
    (void)ret_code;
    (void)resource;
    int32_t rc = check_codes(codes, n, 2, TETHER_TYPE_DLTENSOR, "sum_u8");
    if (rc != TETHER_OK) {
        return rc;
    }
    DLTensor *in = args[0].v_handle, *out = args[1].v_handle;
    int64_t any[1] = {-1}, one[1] = {1};
    if ((rc = tether_tensor_check(in, "sum_u8 argument 0 'in'", 1, any, TETHER_UINT8)) ||
        (rc = tether_tensor_check(out, "sum_u8 argument 1 'out'", 1, one,
                                  TETHER_DTYPE(kDLUInt, 32)))) {
        return rc;
    }
    const uint8_t *p = (const uint8_t *)in->data + in->byte_offset;
    uint32_t s = 0;
    for (int64_t i = 0; i < in->shape[0]; i++) {
        s += p[i];
    }
    *(uint32_t *)((char *)out->data + out->byte_offset) = s;
    return 0;
}

static int32_t mul_add_f32_256(const float *restrict a, const float *restrict b,
                               const float *restrict c, float *restrict out) {
    for (int i = 0; i < 256; i++) {
        out[i] = a[i] * b[i] + c[i];
    }
    return 0;
}

static int32_t spin(tether_value *args, int32_t *codes, int32_t n, tether_value *ret,
                    int32_t *ret_code, void *resource) {
    (void)ret;
    (void)ret_code;
    (void)resource;
    int32_t rc = check_codes(codes, n, 1, TETHER_TYPE_INT, "spin");
    if (rc != TETHER_OK) {
        return rc;
    }
    if (args[0].v_int64 < 0 || args[0].v_int64 > 100000000) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "spin: n must be 0..100000000");
    }
    volatile uint32_t x = 0;
    for (int64_t i = 0; i < args[0].v_int64; i++) {
        x = x * 1664525u + 1013904223u;
    }
    return 0;
}

/* Touches n bytes below its frame. noinline + volatile keep the compiler from shrinking it. */
static __attribute__((noinline)) uint32_t touch(volatile uint8_t *buf, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        buf[i] = (uint8_t)i;
    }
    uint32_t s = 0;
    for (uint32_t i = 0; i < n; i++) {
        s += buf[i];
    }
    return s;
}

static int32_t stack_use(tether_value *args, int32_t *codes, int32_t n, tether_value *ret,
                         int32_t *ret_code, void *resource) {
    (void)resource;
    int32_t rc = check_codes(codes, n, 1, TETHER_TYPE_INT, "stack_use");
    if (rc != TETHER_OK) {
        return rc;
    }
    if (args[0].v_int64 < 0 || args[0].v_int64 > 8192) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "stack_use: n must be 0..8192");
    }
    uint32_t len = (uint32_t)args[0].v_int64;
    /* A variable-length array of n bytes (at least one): the stack use grows with n. */
    volatile uint8_t buf[len > 0 ? len : 1];
    uint32_t s = touch(buf, len);
    ret->v_int64 = s;
    *ret_code = TETHER_TYPE_INT;
    return 0;
}

static int32_t copy_str(tether_value *args, int32_t *codes, int32_t n, tether_value *ret,
                        int32_t *ret_code, void *resource) {
    (void)ret;
    (void)ret_code;
    (void)resource;
    if (n != 2 || codes[0] != TETHER_TYPE_DLTENSOR || codes[1] != TETHER_TYPE_STR) {
        return tether_set_error(TETHER_ERR_MISMATCH, "copy_str takes (array, string)");
    }
    DLTensor *out = args[0].v_handle;
    int64_t any[1] = {-1};
    int32_t rc = tether_tensor_check(out, "copy_str argument 0 'out'", 1, any, TETHER_UINT8);
    if (rc != TETHER_OK) {
        return rc;
    }
    size_t len = strlen(args[1].v_str) + 1;
    if ((int64_t)len > out->shape[0]) {
        return tether_set_error(TETHER_ERR_LIMIT, "copy_str: %u bytes do not fit %d", (unsigned)len,
                                (int)out->shape[0]);
    }
    memcpy((char *)out->data + out->byte_offset, args[1].v_str, len);
    return 0;
}

static int32_t trap(tether_value *args, int32_t *codes, int32_t n, tether_value *ret,
                    int32_t *ret_code, void *resource) {
    (void)args;
    (void)codes;
    (void)n;
    (void)ret;
    (void)ret_code;
    (void)resource;
    __builtin_trap();
}

/* The two functions every device's system library has (tetherd's too), so that one request
 * means the same on every device (tests/mcu/test_mcu_agree.c). */
static int32_t sys_null(tether_value *args, int32_t *codes, int32_t n, tether_value *ret,
                        int32_t *ret_code, void *resource) {
    (void)args, (void)codes, (void)n, (void)ret, (void)ret_code, (void)resource;
    return 0;
}

static int32_t sys_nop1(void *p) {
    (void)p;
    return 0;
}

static const tether_func_entry entries[] = {
    {"add_f32", TETHER_ABI_PACKED, 3, {.packed = add_f32}},
    {"sum_u8", TETHER_ABI_PACKED, 2, {.packed = sum_u8}},
    {"mul_add_f32_256",
     TETHER_ABI_UNPACKED,
     4,
     {.unpacked = (tether_unpacked_func)mul_add_f32_256}},
    {"spin", TETHER_ABI_PACKED, 1, {.packed = spin}},
    {"stack_use", TETHER_ABI_PACKED, 1, {.packed = stack_use}},
    {"copy_str", TETHER_ABI_PACKED, 2, {.packed = copy_str}},
    {"trap", TETHER_ABI_PACKED, 0, {.packed = trap}},
    {"tether.null", TETHER_ABI_PACKED, -1, {.packed = sys_null}},
    {"tether.nop1", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)sys_nop1}},
};

const tether_func_registry tether_module_registry = {entries, sizeof entries / sizeof entries[0]};
