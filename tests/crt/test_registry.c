/* Unit tests: function registry, ABI names, packed and unpacked calls through tether_call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tether/crt.h"

/* packed: out = a + b elementwise, checking its arguments like generated code does */
static int32_t add_packed(tether_value *args, int32_t *codes, int32_t n, tether_value *ret,
                          int32_t *ret_code, void *resource) {
    (void)ret;
    (void)ret_code;
    (void)resource;
    if (n != 3) {
        return -1;
    }
    int64_t shape[] = {4};
    for (int i = 0; i < 3; i++) {
        if (codes[i] != TETHER_TYPE_DLTENSOR ||
            tether_tensor_check(args[i].v_handle, "arg", 1, shape, TETHER_FLOAT32) != TETHER_OK) {
            return -2;
        }
    }
    const float *a = ((DLTensor *)args[0].v_handle)->data;
    const float *b = ((DLTensor *)args[1].v_handle)->data;
    float *o = ((DLTensor *)args[2].v_handle)->data;
    for (int i = 0; i < 4; i++) {
        o[i] = a[i] + b[i];
    }
    return 0;
}

static int32_t add_unpacked(const float *restrict a, const float *restrict b, float *restrict o) {
    for (int i = 0; i < 4; i++) {
        o[i] = a[i] * b[i];
    }
    return 7;
}

/* 16 pointer arguments: returns the sum of the first int of each. */
static int32_t sum16(int *a0, int *a1, int *a2, int *a3, int *a4, int *a5, int *a6, int *a7,
                     int *a8, int *a9, int *a10, int *a11, int *a12, int *a13, int *a14, int *a15) {
    return *a0 + *a1 + *a2 + *a3 + *a4 + *a5 + *a6 + *a7 + *a8 + *a9 + *a10 + *a11 + *a12 + *a13 +
           *a14 + *a15;
}

static const tether_func_entry entries[] = {
    {"add", TETHER_ABI_PACKED, 3, {.packed = add_packed}},
    {"mul", TETHER_ABI_UNPACKED, 3, {.unpacked = (tether_unpacked_func)add_unpacked}},
    {"sum16", TETHER_ABI_UNPACKED, 16, {.unpacked = (tether_unpacked_func)sum16}},
};
static const tether_func_registry reg = {entries, 3};

static void lookup(void **state) {
    (void)state;
    const tether_func_entry *e;
    assert_int_equal(tether_registry_check(&reg), TETHER_OK);
    assert_int_equal(tether_registry_find(&reg, "mul", &e), TETHER_OK);
    assert_ptr_equal(e, &entries[1]);
    assert_int_equal(tether_registry_find(&reg, "nope", &e), TETHER_ERR_NOT_FOUND);
    assert_null(e);
    assert_non_null(strstr(tether_last_error(), "function 'nope' is not in the registry"));
    tether_abi abi;
    assert_int_equal(tether_abi_parse("unpacked", &abi), TETHER_OK);
    assert_int_equal(abi, TETHER_ABI_UNPACKED);
    assert_int_equal(tether_abi_parse("fast", &abi), TETHER_ERR_NOT_FOUND);
    assert_string_equal(tether_abi_name(TETHER_ABI_PACKED), "packed");
    assert_string_equal(tether_type_code_name(TETHER_TYPE_DLTENSOR), "dltensor");
}

static void bad_tables(void **state) {
    (void)state;
    tether_func_entry dup[] = {
        {"f", TETHER_ABI_PACKED, 1, {.packed = add_packed}},
        {"f", TETHER_ABI_PACKED, 1, {.packed = add_packed}},
    };
    tether_func_registry r = {dup, 2};
    assert_int_equal(tether_registry_check(&r), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "both named 'f'"));
    tether_func_entry none[] = {{"g", TETHER_ABI_UNPACKED, 1, {.unpacked = NULL}}};
    r = (tether_func_registry){none, 1};
    assert_int_equal(tether_registry_check(&r), TETHER_ERR_INVALID_ARG);
    tether_func_entry many[] = {
        {"h", TETHER_ABI_UNPACKED, 30, {.unpacked = (tether_unpacked_func)sum16}}};
    r = (tether_func_registry){many, 1};
    assert_int_equal(tether_registry_check(&r), TETHER_ERR_LIMIT);
    tether_func_entry noname[] = {{"", TETHER_ABI_PACKED, 1, {.packed = add_packed}}};
    r = (tether_func_registry){noname, 1};
    assert_int_equal(tether_registry_check(&r), TETHER_ERR_INVALID_ARG);
}

static void calls_both_abis(void **state) {
    (void)state;
    float a[5] = {1, 2, 3, 4, 5}, b[4] = {10, 20, 30, 40}, o[4] = {0};
    int64_t shape[] = {4};
    DLDevice cpu = {kDLCPU, 0};
    DLTensor ta = {a, cpu, 1, TETHER_FLOAT32, shape, NULL, 0};
    DLTensor tb = {b, cpu, 1, TETHER_FLOAT32, shape, NULL, 0};
    DLTensor to = {o, cpu, 1, TETHER_FLOAT32, shape, NULL, 0};
    tether_value args[3] = {{.v_handle = &ta}, {.v_handle = &tb}, {.v_handle = &to}};
    int32_t codes[3] = {TETHER_TYPE_DLTENSOR, TETHER_TYPE_DLTENSOR, TETHER_TYPE_DLTENSOR};
    int32_t ret = -99;
    const tether_func_entry *e;
    assert_int_equal(tether_registry_find(&reg, "add", &e), TETHER_OK);
    assert_int_equal(tether_call(e, args, codes, 3, &ret), TETHER_OK);
    assert_int_equal(ret, 0);
    assert_true(o[0] == 11 && o[3] == 44);

    assert_int_equal(tether_registry_find(&reg, "mul", &e), TETHER_OK);
    assert_int_equal(tether_call(e, args, codes, 3, &ret), TETHER_OK);
    assert_int_equal(ret, 7);
    assert_true(o[0] == 10 && o[3] == 160);

    /* byte_offset is honoured for unpacked calls */
    ta.byte_offset = sizeof(float);
    int64_t shape3[] = {3};
    ta.shape = shape3;
    assert_int_equal(tether_call(e, args, codes, 3, &ret), TETHER_OK);
    assert_true(o[0] == 20);

    /* the packed callee's own check fails: its return code is passed back, status is OK */
    assert_int_equal(tether_registry_find(&reg, "add", &e), TETHER_OK);
    assert_int_equal(tether_call(e, args, codes, 3, &ret), TETHER_OK);
    assert_int_equal(ret, -2);
}

static void call_errors(void **state) {
    (void)state;
    const tether_func_entry *e;
    assert_int_equal(tether_registry_find(&reg, "mul", &e), TETHER_OK);
    tether_value args[3] = {{.v_int64 = 1}, {.v_handle = NULL}, {.v_handle = NULL}};
    int32_t codes[3] = {TETHER_TYPE_INT, TETHER_TYPE_NULL, TETHER_TYPE_NULL};
    int32_t ret = -99;
    assert_int_equal(tether_call(e, args, codes, 2, &ret), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "takes 3 arguments, the call passes 2"));
    assert_int_equal(tether_call(e, args, codes, 3, &ret), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "is a int"));
    codes[0] = TETHER_TYPE_DLTENSOR;
    args[0].v_handle = NULL;
    assert_int_equal(tether_call(e, args, codes, 3, &ret), TETHER_ERR_INVALID_ARG);
    assert_int_equal(ret, -99); /* never called */
    assert_int_equal(tether_call_unpacked((tether_unpacked_func)sum16, NULL, 25, &ret),
                     TETHER_ERR_INVALID_ARG);
    void *ptrs[25];
    assert_int_equal(tether_call_unpacked((tether_unpacked_func)sum16, ptrs, 25, &ret),
                     TETHER_ERR_LIMIT);
}

static void sixteen_pointer_arguments(void **state) {
    (void)state;
    int vals[16];
    tether_value args[16];
    int32_t codes[16];
    for (int i = 0; i < 16; i++) {
        vals[i] = i + 1;
        args[i].v_handle = &vals[i];
        codes[i] = TETHER_TYPE_HANDLE;
    }
    const tether_func_entry *e;
    assert_int_equal(tether_registry_find(&reg, "sum16", &e), TETHER_OK);
    int32_t ret = 0;
    assert_int_equal(tether_call(e, args, codes, 16, &ret), TETHER_OK);
    assert_int_equal(ret, 136);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lookup),
        cmocka_unit_test(bad_tables),
        cmocka_unit_test(calls_both_abis),
        cmocka_unit_test(call_errors),
        cmocka_unit_test(sixteen_pointer_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
