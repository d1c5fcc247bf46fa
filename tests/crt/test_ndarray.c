/* Unit tests: shape arithmetic, tensor checks, NDArray wrap/alloc/free. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tether/crt.h"

static const DLDevice cpu = {kDLCPU, 0};

static void shape_arithmetic(void **state) {
    (void)state;
    size_t n;
    int64_t s[] = {2, 3, 4};
    assert_int_equal(tether_shape_elements(s, 3, &n), TETHER_OK);
    assert_int_equal(n, 24);
    assert_int_equal(tether_shape_elements(NULL, 0, &n), TETHER_OK);
    assert_int_equal(n, 1); /* scalar */
    int64_t z[] = {5, 0, INT64_MAX};
    assert_int_equal(tether_shape_elements(z, 3, &n), TETHER_OK);
    assert_int_equal(n, 0);
    int64_t neg[] = {2, -1};
    assert_int_equal(tether_shape_elements(neg, 2, &n), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "dimension 1 is negative"));
    int64_t big[] = {INT64_MAX, INT64_MAX, 4};
    assert_int_equal(tether_shape_elements(big, 3, &n), TETHER_ERR_LIMIT);
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_int_equal(tether_shape_elements(nine, 9, &n), TETHER_ERR_LIMIT);
    assert_int_equal(tether_shape_bytes(s, 3, TETHER_FLOAT32, &n), TETHER_OK);
    assert_int_equal(n, 96);
    assert_int_equal(tether_shape_bytes(s, 3, (DLDataType){kDLFloat, 7, 1}, &n),
                     TETHER_ERR_INVALID_ARG);
    int64_t huge[] = {INT64_MAX};
    assert_int_equal(tether_shape_bytes(huge, 1, TETHER_FLOAT32, &n), TETHER_ERR_LIMIT);
}

static void contiguity(void **state) {
    (void)state;
    float data[24];
    int64_t shape[] = {2, 3, 4};
    int64_t compact[] = {12, 4, 1};
    int64_t transposed[] = {1, 2, 6};
    DLTensor t = {data, cpu, 3, TETHER_FLOAT32, shape, NULL, 0};
    assert_int_equal(tether_tensor_check_contiguous(&t), TETHER_OK);
    t.strides = compact;
    assert_int_equal(tether_tensor_check_contiguous(&t), TETHER_OK);
    t.strides = transposed;
    assert_int_equal(tether_tensor_check_contiguous(&t), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "dimension 2 has stride 6"));
    /* extent-1 dimensions may carry any stride */
    int64_t shape1[] = {1, 4};
    int64_t odd[] = {99, 1};
    DLTensor u = {data, cpu, 2, TETHER_FLOAT32, shape1, odd, 0};
    assert_int_equal(tether_tensor_check_contiguous(&u), TETHER_OK);
}

static void tensor_check_reports_mismatch(void **state) {
    (void)state;
    float data[24];
    int64_t shape[] = {2, 3, 4};
    DLTensor t = {data, cpu, 3, TETHER_FLOAT32, shape, NULL, 0};
    int64_t want[] = {2, 3, 4};
    int64_t any[] = {-1, 3, 4};
    int64_t other[] = {2, 3, 5};
    assert_int_equal(tether_tensor_check(&t, "input 'x'", 3, want, TETHER_FLOAT32), TETHER_OK);
    assert_int_equal(tether_tensor_check(&t, "input 'x'", 3, any, TETHER_FLOAT32), TETHER_OK);
    assert_int_equal(tether_tensor_check(&t, "input 'x'", 3, other, TETHER_FLOAT32),
                     TETHER_ERR_MISMATCH);
    assert_string_equal(tether_last_error(),
                        "input 'x' has shape [2, 3, 4] (ndim 3), expected [2, 3, 5]");
    assert_int_equal(tether_tensor_check(&t, "input 'x'", 2, want, TETHER_FLOAT32),
                     TETHER_ERR_MISMATCH);
    assert_int_equal(tether_tensor_check(&t, "input 'x'", 3, want, TETHER_INT8),
                     TETHER_ERR_MISMATCH);
    assert_string_equal(tether_last_error(), "input 'x' has dtype float32, expected int8");
    t.data = NULL;
    assert_int_equal(tether_tensor_check(&t, "input 'x'", 3, want, TETHER_FLOAT32),
                     TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_tensor_check(NULL, "out", 3, want, TETHER_FLOAT32),
                     TETHER_ERR_INVALID_ARG);
}

static void wrap_and_scopes(void **state) {
    (void)state;
    float data[64];
    tether_ndarray a;
    int64_t shape[] = {2, 8, 4};
    assert_int_equal(
        tether_ndarray_wrap(&a, data, shape, 3, TETHER_FLOAT32, cpu, TETHER_SCOPE_TEXTURE),
        TETHER_OK);
    assert_ptr_equal(a.dl.shape, a.shape);
    assert_int_equal(a.dl.shape[1], 8);
    assert_null(a.dl.strides);
    assert_int_equal(a.scope, TETHER_SCOPE_TEXTURE);
    assert_string_equal(a.pool, "");
    assert_int_equal(tether_ndarray_free(&a), TETHER_OK); /* caller memory: nothing released */
    int64_t bad[] = {2, 8, 3}, bad5[] = {2, 8, 5};
    assert_int_equal(
        tether_ndarray_wrap(&a, data, bad, 3, TETHER_FLOAT32, cpu, TETHER_SCOPE_TEXTURE),
        TETHER_ERR_UNSUPPORTED); /* no RGB images: pad to 4 or stay global */
    assert_int_equal(
        tether_ndarray_wrap(&a, data, bad5, 3, TETHER_FLOAT32, cpu, TETHER_SCOPE_TEXTURE),
        TETHER_ERR_MISMATCH);
    assert_null(a.dl.data);
    assert_int_equal(
        tether_ndarray_wrap(&a, NULL, shape, 3, TETHER_FLOAT32, cpu, TETHER_SCOPE_GLOBAL),
        TETHER_ERR_INVALID_ARG);
    int64_t empty[] = {0, 4};
    assert_int_equal(
        tether_ndarray_wrap(&a, NULL, empty, 2, TETHER_FLOAT32, cpu, TETHER_SCOPE_GLOBAL),
        TETHER_OK);
    assert_int_equal(tether_ndarray_wrap(&a, data, shape, 3, TETHER_FLOAT32, cpu, (tether_scope)9),
                     TETHER_ERR_INVALID_ARG);
}

static void alloc_from_pool(void **state) {
    (void)state;
    static _Alignas(16) uint8_t mem[2048];
    tether_heap h;
    assert_int_equal(tether_heap_init(&h, mem, sizeof mem, 16), TETHER_OK);
    tether_ndarray a, b, c;
    int64_t shape[] = {4, 16};
    assert_int_equal(tether_ndarray_alloc(&a, &h, "sram", shape, 2, TETHER_FLOAT32), TETHER_OK);
    assert_string_equal(a.pool, "sram");
    assert_ptr_equal(a.heap, &h);
    assert_int_equal((uintptr_t)a.dl.data % 16, 0);
    memset(a.dl.data, 0, 256);
    int64_t large[] = {1024, 1024};
    assert_int_equal(tether_ndarray_alloc(&b, &h, "sram", large, 2, TETHER_FLOAT32),
                     TETHER_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(tether_last_error(), "pool 'sram'"));
    assert_null(b.dl.data);
    assert_int_equal(tether_ndarray_alloc(&c, &h, "bad pool", shape, 2, TETHER_FLOAT32),
                     TETHER_ERR_INVALID_ARG);
    int64_t empty[] = {0};
    assert_int_equal(tether_ndarray_alloc(&c, &h, "sram", empty, 1, TETHER_FLOAT32), TETHER_OK);
    assert_null(c.heap);
    assert_int_equal(tether_ndarray_free(&c), TETHER_OK);
    assert_int_equal(h.count, 1);
    assert_int_equal(tether_ndarray_free(&a), TETHER_OK);
    assert_int_equal(h.count, 0);
    assert_null(a.dl.data);
    assert_int_equal(tether_ndarray_free(&a), TETHER_OK); /* zeroed: no-op */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shape_arithmetic),
        cmocka_unit_test(contiguity),
        cmocka_unit_test(tensor_check_reports_mismatch),
        cmocka_unit_test(wrap_and_scopes),
        cmocka_unit_test(alloc_from_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
