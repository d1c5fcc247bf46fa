/* Unit tests: status names, last-error message, tether_format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tether/crt.h"

static void format_conversions(void **state) {
    (void)state;
    char buf[128];
    assert_int_equal(tether_format(buf, sizeof buf, "%d|%i|%u|%x|%X", -42, 7, 42u, 255u, 255u),
                     strlen("-42|7|42|ff|FF"));
    assert_string_equal(buf, "-42|7|42|ff|FF");
    tether_format(buf, sizeof buf, "%lld %llu %zu %ld", (long long)INT64_MIN,
                  (unsigned long long)UINT64_MAX, (size_t)12345, -9L);
    assert_string_equal(buf, "-9223372036854775808 18446744073709551615 12345 -9");
    tether_format(buf, sizeof buf, "[%5d][%-5d][%05d][%-3s][%4s][%.2s][%c][%%]", 42, 42, -42, "a",
                  "bc", "xyz", 'q');
    assert_string_equal(buf, "[   42][42   ][-0042][a  ][  bc][xy][q][%]");
    const char *volatile null_text = NULL; /* hidden from the compiler's format checker */
    tether_format(buf, sizeof buf, "%s|%p", null_text, (void *)0x10);
    assert_string_equal(buf, "(null)|0x10");
    tether_format(buf, sizeof buf, "%f", 1.5);
    assert_string_equal(buf, "?");
}

static void format_truncates_and_reports_length(void **state) {
    (void)state;
    char buf[8];
    memset(buf, 'Z', sizeof buf);
    size_t n = tether_format(buf, sizeof buf, "hello %s", "world");
    assert_int_equal(n, 11);
    assert_string_equal(buf, "hello w");
    char one[1] = {'Z'};
    assert_int_equal(tether_format(one, 1, "abc"), 3);
    assert_int_equal(one[0], '\0');
}

static void set_error_records_and_returns(void **state) {
    (void)state;
    tether_clear_error();
    assert_string_equal(tether_last_error(), "");
    assert_int_equal(tether_last_status(), TETHER_OK);
    int rc = tether_set_error(TETHER_ERR_LIMIT, "width %d over %d", 9000, 8192);
    assert_int_equal(rc, TETHER_ERR_LIMIT);
    assert_int_equal(tether_last_status(), TETHER_ERR_LIMIT);
    assert_string_equal(tether_last_error(), "width 9000 over 8192");
    /* wrapping the previous message into a new one must not corrupt it */
    tether_set_error(TETHER_ERR_IO, "upload: %s", tether_last_error());
    assert_string_equal(tether_last_error(), "upload: width 9000 over 8192");
    tether_clear_error();
    assert_string_equal(tether_last_error(), "");
}

static void long_error_is_truncated(void **state) {
    (void)state;
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    tether_set_error(TETHER_ERR_INTERNAL, "%s", big);
    assert_int_equal(strlen(tether_last_error()), TETHER_ERROR_MSG_MAX - 1);
}

static void status_names(void **state) {
    (void)state;
    assert_string_equal(tether_status_name(TETHER_OK), "TETHER_OK");
    assert_string_equal(tether_status_name(TETHER_ERR_LIMIT), "TETHER_ERR_LIMIT");
    assert_string_equal(tether_status_name(TETHER_ERR_CRASHED), "TETHER_ERR_CRASHED");
    assert_string_equal(tether_status_name(12345), "TETHER_ERR_UNKNOWN");
}

static char logged[256];
static tether_log_level logged_level;
void tether_platform_log(tether_log_level level, const char *msg) {
    logged_level = level;
    strncpy(logged, msg, sizeof logged - 1);
}

static void log_respects_threshold(void **state) {
    (void)state;
    logged[0] = '\0';
    tether_log_set_level(TETHER_LOG_WARN);
    tether_log(TETHER_LOG_INFO, "hidden %d", 1);
    assert_string_equal(logged, "");
    tether_log(TETHER_LOG_ERROR, "shown %d", 2);
    assert_string_equal(logged, "shown 2");
    assert_int_equal(logged_level, TETHER_LOG_ERROR);
    tether_log_set_level(TETHER_LOG_INFO);
    assert_int_equal(tether_log_get_level(), TETHER_LOG_INFO);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(format_conversions),
        cmocka_unit_test(format_truncates_and_reports_length),
        cmocka_unit_test(set_error_records_and_returns),
        cmocka_unit_test(long_error_is_truncated),
        cmocka_unit_test(status_names),
        cmocka_unit_test(log_respects_threshold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
