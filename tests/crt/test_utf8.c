/*
 * UTF-8 checks (tether/crt/utf8.h): well-formed sequences of every length are taken whole;
 * stray continuation bytes, overlong forms, surrogates, code points past U+10FFFF and cut
 * sequences are refused; a cut never splits a character.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "tether/crt/utf8.h"

static void test_sequences(void **state) {
    (void)state;
    assert_int_equal(tether_utf8_seq("a", 1), 1);
    assert_int_equal(tether_utf8_seq("\xc3\xb1", 2), 2);         /* n with tilde */
    assert_int_equal(tether_utf8_seq("\xe2\x82\xac", 3), 3);     /* euro sign */
    assert_int_equal(tether_utf8_seq("\xf0\x9f\x98\x80", 4), 4); /* an emoji */
    assert_int_equal(tether_utf8_seq("\xe2\x82\xac", 2), 0);     /* cut short */
    assert_int_equal(tether_utf8_seq("\x80", 1), 0);             /* stray continuation */
    assert_int_equal(tether_utf8_seq("\xc0\xaf", 2), 0);         /* overlong '/' */
    assert_int_equal(tether_utf8_seq("\xe0\x80\xaf", 3), 0);     /* overlong */
    assert_int_equal(tether_utf8_seq("\xed\xa0\x80", 3), 0);     /* surrogate U+D800 */
    assert_int_equal(tether_utf8_seq("\xf4\x90\x80\x80", 4), 0); /* past U+10FFFF */
    assert_int_equal(tether_utf8_seq("\xff", 1), 0);
    assert_int_equal(tether_utf8_seq("\xc3(", 2), 0); /* no continuation */
    assert_int_equal(tether_utf8_seq("a", 0), 0);
}

static void test_cut(void **state) {
    (void)state;
    const char *s = "ab\xe2\x82\xac"
                    "c"; /* a b EURO c */
    assert_int_equal(tether_utf8_cut(s, 2), 2);
    assert_int_equal(tether_utf8_cut(s, 3), 2); /* not inside the euro sign */
    assert_int_equal(tether_utf8_cut(s, 4), 2);
    assert_int_equal(tether_utf8_cut(s, 5), 5);
    assert_int_equal(tether_utf8_cut(s, 100), 6);
    assert_int_equal(tether_utf8_cut("\xff\xfe", 1), 1); /* a bad byte counts as one */
    assert_int_equal(tether_utf8_cut("", 10), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_sequences),
                                       cmocka_unit_test(test_cut)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
