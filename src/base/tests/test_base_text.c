/* SPDX-License-Identifier: Apache-2.0 */
/* Strict number parsing and blank tests (include/nsrv/text.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/common.h"
#include "nsrv/text.h"
#include "testlib.h"

static bool pint(const char *s, int64_t min, int64_t max, int64_t *out) {
    return nsrv_parse_int(s, strlen(s), min, max, out);
}

/* text is no int64 to Long.parseLong: refused, and the output left alone. */
static void assert_int_refused(const char *text) {
    int64_t v = 42;
    if (pint(text, INT64_MIN, INT64_MAX, &v))
        fail_msg("accepted '%s'", text);
    assert_int_equal(v, 42);
}

static void test_parse_int(void **state) {
    (void)state;
    int64_t v = 0;
    assert_true(pint("0", INT64_MIN, INT64_MAX, &v));
    assert_int_equal(v, 0);
    assert_true(pint("+17", INT64_MIN, INT64_MAX, &v));
    assert_int_equal(v, 17);
    assert_true(pint("-17", INT64_MIN, INT64_MAX, &v));
    assert_int_equal(v, -17);
    assert_true(pint("9223372036854775807", INT64_MIN, INT64_MAX, &v));
    assert_true(v == INT64_MAX);
    assert_true(pint("-9223372036854775808", INT64_MIN, INT64_MAX, &v));
    assert_true(v == INT64_MIN);
    assert_true(pint("-2147483648", INT32_MIN, INT32_MAX, &v));
    assert_true(v == INT32_MIN);
    /* Long.parseLong refuses all of these; strtoll would take several. */
    const char *bad[] = {"",
                         "+",
                         "-",
                         " 1",
                         "\n1",
                         "\t1",
                         "1 ",
                         "1x",
                         "0x10",
                         "1.0",
                         "--1",
                         "+-1",
                         "1e3",
                         "\xef\xbc\x99",
                         "9223372036854775808",
                         "-9223372036854775809"};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad); i++)
        assert_int_refused(bad[i]);
    assert_false(pint("2147483648", INT32_MIN, INT32_MAX, &v));
    assert_false(pint("-2147483649", INT32_MIN, INT32_MAX, &v));
    assert_false(pint("5", 6, 9, &v));
    assert_false(nsrv_parse_int(NULL, 0, 0, 1, &v));
    /* Only len bytes count. */
    assert_true(nsrv_parse_int("123456", 3, INT64_MIN, INT64_MAX, &v));
    assert_int_equal(v, 123);
}

static void test_parse_uint(void **state) {
    (void)state;
    uint64_t v = 0;
    assert_true(nsrv_parse_uint("18446744073709551615", 20, UINT64_MAX, &v));
    assert_true(v == UINT64_MAX);
    assert_false(nsrv_parse_uint("18446744073709551616", 20, UINT64_MAX, &v));
    assert_true(nsrv_parse_uint("254", 3, 254, &v));
    assert_int_equal(v, 254);
    assert_false(nsrv_parse_uint("255", 3, 254, &v));
    assert_false(nsrv_parse_uint("+1", 2, 9, &v));
    assert_false(nsrv_parse_uint("-1", 2, 9, &v));
    assert_false(nsrv_parse_uint("", 0, 9, &v));
    assert_false(nsrv_parse_uint(" 1", 2, 9, &v));
}

static void test_blank(void **state) {
    (void)state;
    assert_true(nsrv_is_blank("", 0));
    assert_true(nsrv_is_blank(" \t\r\n\v\f", 6));
    assert_false(nsrv_is_blank(" x ", 3));
    assert_false(nsrv_is_blank("\0", 1));
    assert_true(nsrv_is_blank_c(NULL));
    assert_true(nsrv_is_blank_c("  "));
    assert_false(nsrv_is_blank_c(" a"));
    assert_true(nsrv_is_space('\v'));
    assert_false(nsrv_is_space('\0'));
    assert_false(nsrv_is_space('_'));
}

static void test_hex(void **state) {
    (void)state;
    assert_int_equal(nsrv_hex_digit('0'), 0);
    assert_int_equal(nsrv_hex_digit('9'), 9);
    assert_int_equal(nsrv_hex_digit('a'), 10);
    assert_int_equal(nsrv_hex_digit('F'), 15);
    assert_int_equal(nsrv_hex_digit('g'), -1);
    assert_int_equal(nsrv_hex_digit('/'), -1);
    assert_int_equal(nsrv_hex_digit('\0'), -1);
    assert_int_equal(nsrv_hex4("00e9"), 0xe9);
    assert_int_equal(nsrv_hex4("FFFFx"), 0xffff);
    assert_int_equal(nsrv_hex4("dBfF"), 0xdbff);
    assert_int_equal(nsrv_hex4("12g4"), -1);
    assert_int_equal(nsrv_hex4("123"), -1); /* the NUL is not a digit */
}

/* JSON's five letters; Java Properties has no \b; NUL and other letters are not escapes. */
static void test_unescape_letter(void **state) {
    (void)state;
    const char *letters = "bfnrt", *controls = "\b\f\n\r\t";
    for (int i = 0; letters[i]; i++)
        assert_int_equal(nsrv_unescape_letter(letters[i], "bfnrt"), controls[i]);
    assert_int_equal(nsrv_unescape_letter('t', "tnrf"), '\t');
    assert_int_equal(nsrv_unescape_letter('b', "tnrf"), 0);
    assert_int_equal(nsrv_unescape_letter('u', "bfnrt"), 0);
    assert_int_equal(nsrv_unescape_letter('\0', "bfnrt"), 0);
    assert_int_equal(nsrv_unescape_letter('x', "x"), 0);
}

static void test_fail_and_strerror(void **state) {
    (void)state;
    char err[16] = "";
    assert_int_equal(nsrv_fail(err, sizeof err, -EINVAL, "bad %d", 7), -EINVAL);
    assert_string_equal(err, "bad 7");
    assert_int_equal(nsrv_fail(NULL, 0, 3, "x"), 3);
    assert_int_equal(nsrv_fail(err, 4, 0, "truncated"), 0);
    assert_string_equal(err, "tru");
    /* One error space: the gossip codes have text too. */
    for (int code = NSRV_GOSSIP_ETYPE; code <= NSRV_GOSSIP_ESIZE; code++)
        assert_string_not_equal(nsrv_strerror(code), "unknown error");
    assert_string_equal(nsrv_strerror(NSRV_GOSSIP_EBAD_SIG), "bad gossip signature");
    assert_string_equal(nsrv_strerror(-9100), "unknown error");
}

/* Durations as nsrvd status and the gossip log lines print them. */
static void test_fmt_duration(void **state) {
    (void)state;
    char b[NSRV_DURATION_TEXT_MAX];
    static const struct {
        uint64_t ms;
        const char *text;
    } cases[] = {
        {0, "0.0s"},          {399, "0.3s"},
        {400, "0.4s"},        {9999, "9.9s"},
        {10000, "10s"},       {59999, "59s"},
        {60000, "1m00s"},     {185000, "3m05s"},
        {3599999, "59m59s"},  {3600000, "1h00m"},
        {7500000, "2h05m"},   {86400000, "1d00h"},
        {273600000, "3d04h"}, {UINT64_MAX, "213503982334d14h"},
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(cases); i++)
        assert_string_equal(nsrv_fmt_duration_ms(cases[i].ms, b, sizeof b), cases[i].text);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_parse_int), cmocka_unit_test(test_parse_uint),
               cmocka_unit_test(test_blank), cmocka_unit_test(test_hex),
               cmocka_unit_test(test_unescape_letter), cmocka_unit_test(test_fail_and_strerror),
               cmocka_unit_test(test_fmt_duration))
