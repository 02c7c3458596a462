/* SPDX-License-Identifier: Apache-2.0 */
/* java.util.Properties reader and escaping writer: every syntax feature of
 * Properties.load, error reporting, and the write/read round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/buf.h"
#include "nsrv/common.h"
#include "nsrv/properties.h"
#include "testlib.h"

static void parse_ok(const char *text, nsrv_props_t *p) {
    char err[128];
    nsrv_props_init(p);
    int rc = nsrv_props_parse(text, strlen(text), p, err, sizeof err);
    if (rc != 0)
        fail_msg("parse failed: %s", err);
}

/* Parses text and checks it yields exactly the given key/value pairs in order. */
static void expect_props(const char *text, const char *const *kv, size_t n) {
    nsrv_props_t p;
    parse_ok(text, &p);
    if (p.count != n) {
        for (size_t i = 0; i < p.count; i++)
            print_message("  got [%s]=[%s]\n", p.items[i].key, p.items[i].value);
        fail_msg("text [%s]: %zu properties, expected %zu", text, p.count, n);
    }
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(p.items[i].key, kv[2 * i]);
        assert_string_equal(p.items[i].value, kv[2 * i + 1]);
    }
    nsrv_props_free(&p);
}

#define EXPECT(text, ...)                                                                          \
    do {                                                                                           \
        static const char *const kv_[] = {__VA_ARGS__};                                            \
        expect_props((text), kv_, NSRV_ARRAY_LEN(kv_) / 2);                                        \
    } while (0)

static void expect_empty(const char *text) {
    nsrv_props_t p;
    parse_ok(text, &p);
    assert_int_equal(p.count, 0);
    nsrv_props_free(&p);
}

static void test_separators(void **state) {
    (void)state;
    EXPECT("a=1\nb:2\nc 3\nd\t4\ne\f5\n", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5");
    /* Blanks around the separator go; trailing blanks of the value stay. */
    EXPECT("  a  =  1 \n", "a", "1 ");
    /* Only one separator is skipped; a second belongs to the value. */
    EXPECT("a = = b\n", "a", "= b");
    EXPECT("a==b\n", "a", "=b");
    EXPECT("a :b\n", "a", "b");
    EXPECT("a b = c\n", "a", "b = c");
    EXPECT("a    b\n", "a", "b");
    EXPECT("a=b=c:d\n", "a", "b=c:d");
    /* No trailing newline. */
    EXPECT("k=v", "k", "v");
    /* An empty key. */
    EXPECT("=v\n", "", "v");
    EXPECT(":v\n", "", "v");
}

static void test_key_without_value(void **state) {
    (void)state;
    EXPECT("lonely\n", "lonely", "");
    EXPECT("lonely=\n", "lonely", "");
    EXPECT("lonely   \n", "lonely", "");
    EXPECT("lonely  :  \n", "lonely", "");
}

static void test_comments_and_blank_lines(void **state) {
    (void)state;
    expect_empty("");
    expect_empty("\n\n\r\n   \n\t\f\n");
    expect_empty("# comment\n! bang comment\n   # indented comment\n\t! also\n");
    EXPECT("# c\nx=1 # not a comment\n!c\n", "x", "1 # not a comment");
    /* A comment at the end of input without a newline. */
    EXPECT("x=1\n# trailing", "x", "1");
    /* '#' inside a key or value is data. */
    EXPECT("a#b=c!d\n", "a#b", "c!d");
}

static void test_line_endings(void **state) {
    (void)state;
    EXPECT("a=1\r\nb=2\r\n", "a", "1", "b", "2");
    EXPECT("a=1\rb=2\r", "a", "1", "b", "2");
    EXPECT("a=1\n\r\nb=2", "a", "1", "b", "2");
}

static void test_continuation(void **state) {
    (void)state;
    /* Leading blanks of the continuation line are dropped. */
    EXPECT("a=hello \\\n    world\n", "a", "hello world");
    EXPECT("a=1\\\n 2\\\n\t3\nb=4\n", "a", "123", "b", "4");
    EXPECT("a=x\\\r\n   y\r\n", "a", "xy");
    EXPECT("a=x\\\r   y\r", "a", "xy");
    /* The key can continue too. */
    EXPECT("ke\\\n  y=v\n", "key", "v");
    /* An even number of backslashes is an escaped backslash, not a continuation. */
    EXPECT("a=x\\\\\nb=y\n", "a", "x\\", "b", "y");
    EXPECT("a=x\\\\\\\n y\n", "a", "x\\y");
    /* A continuation at the end of input. */
    EXPECT("a=x\\", "a", "x");
    EXPECT("a=x\\\n", "a", "x");
    /* A blank line ends a continuation. */
    EXPECT("a=x\\\n\nb=1\n", "a", "x", "b", "1");
    /* A comment line never continues... */
    EXPECT("#c\\\na=1\n", "a", "1");
    /* ...and a continuation line starting with '#' is not a comment. */
    EXPECT("a=x\\\n#y\n", "a", "x#y");
}

static void test_escapes(void **state) {
    (void)state;
    EXPECT("a=\\t\\n\\r\\f\\\\\\q\\\"\n", "a", "\t\n\r\f\\q\"");
    /* Escaped separators and blanks belong to the key. */
    EXPECT("k\\=ey\\:x\\ y=v\n", "k=ey:x y", "v");
    EXPECT("\\#notcomment=1\n", "#notcomment", "1");
    EXPECT("\\!x=1\n", "!x", "1");
    /* An escaped leading blank of the value is kept. */
    EXPECT("a=\\  x\n", "a", "  x");
}

static void test_unicode_escapes(void **state) {
    (void)state;
    EXPECT("a=\\u0041\\u00e9\\u4E2D\n", "a", "A\xC3\xA9\xE4\xB8\xAD");
    EXPECT("\\u006Bey=v\n", "key", "v");
    /* A surrogate pair becomes one 4-byte UTF-8 sequence. */
    EXPECT("a=\\uD83D\\uDE00\n", "a", "\xF0\x9F\x98\x80");
    /* Lone surrogates become U+FFFD. */
    EXPECT("a=\\uD800x\n", "a", "\xEF\xBF\xBDx");
    EXPECT("a=\\uDC00\n", "a", "\xEF\xBF\xBD");
    EXPECT("a=\\uD800\\u0041\n", "a",
           "\xEF\xBF\xBD"
           "A");
    /* Valid UTF-8 passes through; each ill-formed subpart becomes U+FFFD, as
     * Java's decoder reads the body. */
    EXPECT("a=\xC3\xA9\xFF\n", "a", "\xC3\xA9\xEF\xBF\xBD");
    EXPECT("\xF0\x9F\x98=\xE4\xB8\n", "\xEF\xBF\xBD", "\xEF\xBF\xBD");
}

static void expect_error(const char *text, size_t len, const char *want) {
    nsrv_props_t p = NSRV_PROPS_INIT;
    char err[128];
    int rc = nsrv_props_parse(text, len, &p, err, sizeof err);
    assert_int_equal(rc, NSRV_EBODY);
    if (!strstr(err, want))
        fail_msg("error [%s] does not contain [%s]", err, want);
    nsrv_props_free(&p);
}

static void test_malformed(void **state) {
    (void)state;
    const char *t1 = "x=1\ny=2\nz=\\u00G1\n";
    expect_error(t1, strlen(t1), "line 3: Malformed \\uxxxx encoding.");
    const char *t2 = "a=\\u12";
    expect_error(t2, strlen(t2), "line 1: Malformed");
    const char *t3 = "\\uZZZZ=1";
    expect_error(t3, strlen(t3), "Malformed");
    /* The line of a continued logical line is where it started. */
    const char *t4 = "\n\na=b\\\n  \\u12x4\n";
    expect_error(t4, strlen(t4), "line 3:");
    const char *t5 = "a=\\u0000\n";
    expect_error(t5, strlen(t5), "NUL");
    const char t6[] = "a=x\0y\n";
    expect_error(t6, sizeof t6 - 1, "NUL");
    /* A NUL in a comment is harmless. */
    const char t7[] = "#\0\na=1\n";
    nsrv_props_t p = NSRV_PROPS_INIT;
    assert_int_equal(nsrv_props_parse(t7, sizeof t7 - 1, &p, NULL, 0), 0);
    assert_string_equal(nsrv_props_get(&p, "a"), "1");
    nsrv_props_free(&p);
}

static void test_duplicates_and_order(void **state) {
    (void)state;
    nsrv_props_t p;
    parse_ok("a=1\nb=2\na=3\nc=4\n", &p);
    assert_int_equal(p.count, 3);
    assert_string_equal(p.items[0].key, "a");
    assert_string_equal(p.items[0].value, "3");
    assert_int_equal(p.items[0].line, 3);
    assert_string_equal(p.items[1].key, "b");
    assert_string_equal(p.items[2].key, "c");
    assert_int_equal(p.items[2].line, 4);
    assert_string_equal(nsrv_props_get(&p, "b"), "2");
    assert_null(nsrv_props_get(&p, "zz"));
    nsrv_props_set(&p, "b", "x", 0);
    nsrv_props_set(&p, "d", "y", 0);
    assert_int_equal(p.count, 4);
    assert_string_equal(p.items[1].value, "x");
    assert_string_equal(nsrv_props_find(&p, "d")->value, "y");
    nsrv_props_free(&p);
    assert_int_equal(p.count, 0);
    nsrv_props_free(&p); /* freeing twice is fine */
}

static void test_many_keys(void **state) {
    (void)state;
    nsrv_buf_t b = NSRV_BUF_INIT;
    for (int i = 0; i < 50000; i++)
        nsrv_buf_printf(&b, "key%d=v%d\n", i, i);
    nsrv_props_t p = NSRV_PROPS_INIT;
    assert_int_equal(nsrv_props_parse(b.data, b.len, &p, NULL, 0), 0);
    assert_int_equal(p.count, 50000);
    assert_string_equal(nsrv_props_get(&p, "key49999"), "v49999");
    nsrv_props_free(&p);
    nsrv_buf_deinit(&b);
}

static void test_writer_exact(void **state) {
    (void)state;
    nsrv_buf_t b = NSRV_BUF_INIT;
    nsrv_props_write_escaped(&b, "a b", " x\ny");
    assert_string_equal(b.data, "a\\ b=\\ x\\ny\n");
    nsrv_buf_reset(&b);
    nsrv_props_write_escaped(&b, "#k=:!", "v=:#! \\\t\r\f\x01\x7f");
    assert_string_equal(b.data, "\\#k\\=\\:\\!=v=:#! \\\\\\t\\r\\f\\u0001\\u007F\n");
    nsrv_buf_reset(&b);
    nsrv_props_write_escaped(&b, "listenPort", "9876");
    assert_string_equal(b.data, "listenPort=9876\n");
    nsrv_buf_deinit(&b);
}

static void test_writer_round_trip(void **state) {
    (void)state;
    static const char *const samples[] = {
        "plain",
        "",
        "x\nkvConfigPath=/etc/evil",
        "x\r\nkvConfigPath=/etc/evil\r",
        " leading blank",
        "\tleading tab",
        "trailing blank ",
        "#hash",
        "!bang",
        "=eq",
        ":colon",
        "a=b:c",
        "back\\slash\\",
        "\\",
        "\\u0041 literal",
        "ctl\x01\x1f\x7f",
        "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80", /* valid UTF-8: the parser replaces ill-formed bytes
                                                 */
        "k e y",
        "   ",
        "\f",
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(samples); i++) {
        for (size_t j = 0; j < NSRV_ARRAY_LEN(samples); j++) {
            nsrv_buf_t b = NSRV_BUF_INIT;
            nsrv_props_write_escaped(&b, samples[i], samples[j]);
            nsrv_props_write_escaped(&b, "after", "1");
            /* Exactly two physical lines: nothing can be injected. */
            size_t nl = 0;
            for (size_t k = 0; k < b.len; k++)
                nl += b.data[k] == '\n' || b.data[k] == '\r';
            assert_int_equal(nl, 2);
            nsrv_props_t p = NSRV_PROPS_INIT;
            assert_int_equal(nsrv_props_parse(b.data, b.len, &p, NULL, 0), 0);
            if (strcmp(samples[i], "after") != 0) {
                assert_int_equal(p.count, 2);
                assert_string_equal(p.items[0].key, samples[i]);
                assert_string_equal(p.items[0].value, samples[j]);
                assert_string_equal(p.items[1].value, "1");
            }
            nsrv_props_free(&p);
            nsrv_buf_deinit(&b);
        }
    }
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_separators),
               cmocka_unit_test(test_key_without_value),
               cmocka_unit_test(test_comments_and_blank_lines), cmocka_unit_test(test_line_endings),
               cmocka_unit_test(test_continuation), cmocka_unit_test(test_escapes),
               cmocka_unit_test(test_unicode_escapes), cmocka_unit_test(test_malformed),
               cmocka_unit_test(test_duplicates_and_order), cmocka_unit_test(test_many_keys),
               cmocka_unit_test(test_writer_exact), cmocka_unit_test(test_writer_round_trip))
