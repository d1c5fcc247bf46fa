/* Unit tests: scope names, pool names, texture flattening and the image contract. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tether/crt.h"

static void scopes_round_trip(void **state) {
    (void)state;
    const char *names[] = {"global", "texture", "texture:weight"};
    for (int i = 0; i < 3; i++) {
        tether_scope s;
        assert_int_equal(tether_scope_parse(names[i], &s), TETHER_OK);
        assert_int_equal(s, i);
        assert_string_equal(tether_scope_name(s), names[i]);
    }
    assert_false(tether_scope_is_texture(TETHER_SCOPE_GLOBAL));
    assert_true(tether_scope_is_texture(TETHER_SCOPE_TEXTURE));
    assert_true(tether_scope_is_texture(TETHER_SCOPE_TEXTURE_WEIGHT));
    assert_null(tether_scope_name((tether_scope)7));
}

static void unknown_scope_is_an_error(void **state) {
    (void)state;
    const char *bad[] = {"", "Global", "texture:", "texture:bias", "sram", "shared"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tether_scope s = TETHER_SCOPE_TEXTURE;
        assert_int_equal(tether_scope_parse(bad[i], &s), TETHER_ERR_NOT_FOUND);
        assert_non_null(strstr(tether_last_error(), "unknown storage scope"));
        assert_int_equal(s, TETHER_SCOPE_TEXTURE);
    }
}

static void pool_names(void **state) {
    (void)state;
    assert_int_equal(tether_pool_name_check("sram"), TETHER_OK);
    assert_int_equal(tether_pool_name_check("dram.0"), TETHER_OK);
    assert_int_equal(tether_pool_name_check("global-workspace_1"), TETHER_OK);
    assert_int_equal(tether_pool_name_check(""), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_pool_name_check(NULL), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_pool_name_check("0sram"), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_pool_name_check("s ram"), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "position 1"));
    assert_int_equal(tether_pool_name_check("../etc"), TETHER_ERR_INVALID_ARG);
    char longname[64];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(tether_pool_name_check(longname), TETHER_ERR_LIMIT);
}

static void texture_activation_flattening(void **state) {
    (void)state;
    /* [A, B, C, D, 4] -> height A*B*C, width D */
    int64_t nchw4c[] = {1, 8, 32, 16, 4};
    tether_image_extent e;
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE, nchw4c, 5, 8192, 8192, &e),
                     TETHER_OK);
    assert_int_equal(e.width, 16);
    assert_int_equal(e.height, 1 * 8 * 32);
    assert_int_equal(e.channels, 4);
    int64_t two[] = {5, 4};
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE, two, 2, 0, 0, &e), TETHER_OK);
    assert_int_equal(e.width, 5);
    assert_int_equal(e.height, 1);
}

static void texture_weight_flattening(void **state) {
    (void)state;
    /* [A, B, C, D, 4] -> height A, width B*C*D */
    int64_t oihw4o[] = {16, 4, 3, 3, 4};
    tether_image_extent e;
    assert_int_equal(
        tether_texture_extent(TETHER_SCOPE_TEXTURE_WEIGHT, oihw4o, 5, 16384, 16384, &e), TETHER_OK);
    assert_int_equal(e.width, 4 * 3 * 3);
    assert_int_equal(e.height, 16);
    int64_t two[] = {5, 4};
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE_WEIGHT, two, 2, 0, 0, &e),
                     TETHER_OK);
    assert_int_equal(e.width, 1);
    assert_int_equal(e.height, 5);
}

static void texture_over_limit_names_the_limit(void **state) {
    (void)state;
    tether_image_extent e = {0, 0, 0};
    int64_t wide[] = {1, 1, 1, 9000, 4};
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE, wide, 5, 8192, 8192, &e),
                     TETHER_ERR_LIMIT);
    assert_non_null(strstr(tether_last_error(), "width 9000"));
    assert_non_null(strstr(tether_last_error(), "CL_DEVICE_IMAGE2D_MAX_WIDTH = 8192"));
    assert_int_equal(e.width, 0);         /* nothing written on failure */
    int64_t tall[] = {1, 256, 64, 16, 4}; /* height 16384 > 8192 */
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE, tall, 5, 8192, 8192, &e),
                     TETHER_ERR_LIMIT);
    assert_non_null(strstr(tether_last_error(), "height 16384"));
    assert_non_null(strstr(tether_last_error(), "CL_DEVICE_IMAGE2D_MAX_HEIGHT = 8192"));
    /* the same tensor fits Adreno's 16384 */
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE, tall, 5, 16384, 16384, &e),
                     TETHER_OK);
    int64_t wweight[] = {8, 64, 64, 4, 4}; /* width 16384 */
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE_WEIGHT, wweight, 5, 8192, 8192, &e),
                     TETHER_ERR_LIMIT);
    assert_non_null(strstr(tether_last_error(), "texture:weight image width 16384"));
    /* huge products saturate instead of overflowing */
    int64_t huge[] = {1, INT64_MAX / 2, INT64_MAX / 2, 4, 4};
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE, huge, 5, 8192, 8192, &e),
                     TETHER_ERR_LIMIT);
}

static void texture_shape_errors(void **state) {
    (void)state;
    tether_image_extent e;
    /* the image contract: C in {1, 2, 4} (R, RG, RGBA), 3 refused saying what to do, N = 1 */
    int64_t rgb[] = {1, 8, 8, 3};
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE, rgb, 4, 0, 0, &e),
                     TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "cannot have 3 channels"));
    assert_non_null(strstr(tether_last_error(), "pad the channels to 4 explicitly"));
    int64_t five[] = {8, 8, 5};
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE, five, 3, 0, 0, &e),
                     TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "1, 2 or 4 (R, RG or RGBA texels)"));
    int64_t r[] = {6, 7, 1}, rg[] = {1, 6, 7, 2};
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE, r, 3, 0, 0, &e), TETHER_OK);
    assert_int_equal(e.channels, 1);
    assert_int_equal(e.width, 7);
    assert_int_equal(e.height, 6);
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE, rg, 4, 0, 0, &e), TETHER_OK);
    assert_int_equal(e.channels, 2);
    int64_t batch2[] = {2, 8, 8, 4};
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE, batch2, 4, 0, 0, &e),
                     TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "need batch 1"));
    int64_t w2[] = {4, 2}; /* weights keep RGBA texels */
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE_WEIGHT, w2, 2, 0, 0, &e),
                     TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "4 (one RGBA texel)"));
    int64_t zero[] = {1, 0, 4};
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE, zero, 3, 0, 0, &e),
                     TETHER_ERR_INVALID_ARG);
    int64_t one[] = {4};
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_TEXTURE, one, 1, 0, 0, &e),
                     TETHER_ERR_INVALID_ARG);
    int64_t ok[] = {2, 4};
    assert_int_equal(tether_texture_extent(TETHER_SCOPE_GLOBAL, ok, 2, 0, 0, &e),
                     TETHER_ERR_INVALID_ARG);
}

static void image_contract(void **state) {
    (void)state;
    tether_image_extent e;
    int64_t hwc[] = {32, 64, 4};
    assert_int_equal(tether_image_validate(hwc, 3, 8192, 8192, &e), TETHER_OK);
    assert_int_equal(e.width, 64);
    assert_int_equal(e.height, 32);
    assert_int_equal(e.channels, 4);
    int64_t nhwc[] = {1, 10, 20, 2};
    assert_int_equal(tether_image_validate(nhwc, 4, 0, 0, &e), TETHER_OK);
    assert_int_equal(e.channels, 2);
    int64_t r[] = {3, 5, 1};
    assert_int_equal(tether_image_validate(r, 3, 0, 0, &e), TETHER_OK);
    assert_int_equal(e.channels, 1);

    int64_t rgb[] = {8, 8, 3};
    assert_int_equal(tether_image_validate(rgb, 3, 0, 0, &e), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "pad to 4 channels explicitly"));
    int64_t batch2[] = {2, 8, 8, 4};
    assert_int_equal(tether_image_validate(batch2, 4, 0, 0, &e), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "batch 1"));
    int64_t c8[] = {8, 8, 8};
    assert_int_equal(tether_image_validate(c8, 3, 0, 0, &e), TETHER_ERR_MISMATCH);
    int64_t rank2[] = {8, 8};
    assert_int_equal(tether_image_validate(rank2, 2, 0, 0, &e), TETHER_ERR_MISMATCH);
    int64_t wide[] = {8, 20000, 4};
    assert_int_equal(tether_image_validate(wide, 3, 16384, 16384, &e), TETHER_ERR_LIMIT);
    assert_non_null(strstr(tether_last_error(), "16384"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scopes_round_trip),
        cmocka_unit_test(unknown_scope_is_an_error),
        cmocka_unit_test(pool_names),
        cmocka_unit_test(texture_activation_flattening),
        cmocka_unit_test(texture_weight_flattening),
        cmocka_unit_test(texture_over_limit_names_the_limit),
        cmocka_unit_test(texture_shape_errors),
        cmocka_unit_test(image_contract),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
