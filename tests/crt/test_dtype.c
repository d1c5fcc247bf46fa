/* Unit tests: dtype sizes, validity, names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tether/crt.h"

static void parse_known_names(void **state) {
    (void)state;
    static const struct {
        const char *name;
        uint8_t code, bits;
        uint16_t lanes;
        size_t bytes;
    } cases[] = {
        {"float32", kDLFloat, 32, 1, 4},   {"float16", kDLFloat, 16, 1, 2},
        {"float64", kDLFloat, 64, 1, 8},   {"int8", kDLInt, 8, 1, 1},
        {"int16", kDLInt, 16, 1, 2},       {"int32", kDLInt, 32, 1, 4},
        {"int64", kDLInt, 64, 1, 8},       {"uint8", kDLUInt, 8, 1, 1},
        {"uint64", kDLUInt, 64, 1, 8},     {"bool", kDLUInt, 1, 1, 1},
        {"bfloat16", kDLBfloat, 16, 1, 2}, {"float32x4", kDLFloat, 32, 4, 16},
        {"int8x16", kDLInt, 8, 16, 16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        DLDataType t;
        assert_int_equal(tether_dtype_parse(cases[i].name, &t), TETHER_OK);
        assert_int_equal(t.code, cases[i].code);
        assert_int_equal(t.bits, cases[i].bits);
        assert_int_equal(t.lanes, cases[i].lanes);
        assert_int_equal(tether_dtype_bytes(t), cases[i].bytes);
        char name[TETHER_DTYPE_NAME_MAX];
        assert_int_equal(tether_dtype_name(t, name, sizeof name), TETHER_OK);
        assert_string_equal(name, cases[i].name);
    }
}

static void reject_unknown_names(void **state) {
    (void)state;
    static const char *bad[] = {"",         "float",    "float31",   "int7",     "int128",
                                "floaty32", "float32x", "float32x0", "bfloat32", "float32x070",
                                "Float32",  "int8 ",    "complex64"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        DLDataType t = {9, 9, 9};
        assert_int_equal(tether_dtype_parse(bad[i], &t), TETHER_ERR_NOT_FOUND);
        assert_non_null(strstr(tether_last_error(), "unknown dtype"));
        assert_int_equal(t.code, 9); /* untouched on failure */
    }
    DLDataType t;
    assert_int_equal(tether_dtype_parse(NULL, &t), TETHER_ERR_INVALID_ARG);
}

static void invalid_dtypes(void **state) {
    (void)state;
    DLDataType bad[] = {{kDLFloat, 8, 1}, {kDLInt, 32, 0}, {kDLComplex, 64, 1}, {kDLBfloat, 32, 1}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_false(tether_dtype_valid(bad[i]));
        assert_int_equal(tether_dtype_bytes(bad[i]), 0);
        char name[TETHER_DTYPE_NAME_MAX];
        assert_int_equal(tether_dtype_name(bad[i], name, sizeof name), TETHER_ERR_INVALID_ARG);
        assert_string_equal(name, "");
    }
    char small[4];
    assert_int_equal(tether_dtype_name(TETHER_FLOAT32, small, sizeof small), TETHER_ERR_LIMIT);
    assert_true(tether_dtype_equal(TETHER_FLOAT32, (DLDataType){kDLFloat, 32, 1}));
    assert_false(tether_dtype_equal(TETHER_FLOAT32, TETHER_INT32));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_known_names),
        cmocka_unit_test(reject_unknown_names),
        cmocka_unit_test(invalid_dtypes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
