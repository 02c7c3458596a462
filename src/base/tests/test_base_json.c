/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the lenient JSON reader and the fastjson-compatible string writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/common.h"
#include "nsrv/json.h"
#include "testlib.h"

static nsrv_arena_t arena;

static int setup(void **state) {
    (void)state;
    nsrv_arena_init(&arena, 4096);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    nsrv_arena_deinit(&arena);
    return 0;
}

static nsrv_json_t *parse_ok(const char *text) {
    nsrv_json_t *root = NULL;
    char err[128] = "";
    int rc = nsrv_json_parse(&arena, text, strlen(text), &root, err, sizeof err);
    if (rc != 0)
        print_error("parse failed: %s for %s\n", err, text);
    assert_int_equal(rc, 0);
    assert_non_null(root);
    return root;
}

static void parse_bad(const char *text) {
    nsrv_json_t *root = NULL;
    char err[128] = "";
    assert_int_equal(nsrv_json_parse(&arena, text, strlen(text), &root, err, sizeof err),
                     NSRV_EJSON);
    assert_true(strlen(err) > 0);
}

static void test_bare_numeric_keys(void **state) {
    (void)state;
    nsrv_json_t *r = parse_ok("{\"brokerAddrs\":{0:\"192.168.0.1:10911\",1:\"b:1\",-3:'x'}}");
    const nsrv_json_t *addrs = nsrv_json_get(r, "brokerAddrs");
    assert_non_null(addrs);
    assert_int_equal(addrs->count, 3);
    assert_string_equal(nsrv_json_get(addrs, "0")->str, "192.168.0.1:10911");
    assert_string_equal(nsrv_json_get(addrs, "1")->str, "b:1");
    assert_string_equal(nsrv_json_get(addrs, "-3")->str, "x");
}

static void test_scalars_and_lenient_readers(void **state) {
    (void)state;
    nsrv_json_t *r = parse_ok(" { \"a\" : 9223372036854775807 , \"b\":\"42\", \"c\":true,"
                              " \"d\":null, \"e\":1.5e3, \"f\":\"TRUE\", \"g\": -7L } ");
    int64_t v = 0;
    assert_true(nsrv_json_as_i64(nsrv_json_get(r, "a"), &v));
    assert_true(v == INT64_MAX);
    assert_true(nsrv_json_as_i64(nsrv_json_get(r, "b"), &v));
    assert_int_equal(v, 42);
    bool b = false;
    assert_true(nsrv_json_as_bool(nsrv_json_get(r, "c"), &b));
    assert_true(b);
    assert_true(nsrv_json_as_bool(nsrv_json_get(r, "f"), &b));
    assert_int_equal(nsrv_json_get(r, "d")->type, NSRV_JSON_NULL);
    assert_false(nsrv_json_as_i64(nsrv_json_get(r, "d"), &v));
    assert_null(nsrv_json_as_str(nsrv_json_get(r, "d"), NULL));
    size_t len = 0;
    assert_string_equal(nsrv_json_as_str(nsrv_json_get(r, "e"), &len), "1.5e3");
    assert_true(nsrv_json_as_i64(nsrv_json_get(r, "e"), &v));
    assert_int_equal(v, 1500);
    assert_true(nsrv_json_as_i64(nsrv_json_get(r, "g"), &v));
    assert_int_equal(v, -7);
    assert_null(nsrv_json_get(r, "missing"));
    /* An integer too big for int64 is not silently wrapped. */
    r = parse_ok("99999999999999999999");
    assert_false(r->is_int);
    assert_false(nsrv_json_as_i64(parse_ok("\"12x\""), &v));
}

static void test_string_escapes(void **state) {
    (void)state;
    nsrv_json_t *r = parse_ok("\"a\\\"b\\\\c\\/d\\n\\t\\u4E2D\\uD83D\\uDE00\"");
    assert_string_equal(r->str, "a\"b\\c/d\n\t\xE4\xB8\xAD\xF0\x9F\x98\x80");
    r = parse_ok("'single \"quoted\"'");
    assert_string_equal(r->str, "single \"quoted\"");
    /* An embedded NUL is refused, raw or escaped, in values and in keys... */
    parse_bad("\"a\\u0000b\"");
    parse_bad("{\"a\\u0000b\":1}");
    static const char raw_nul[] = "[\"a\0b\"]";
    nsrv_json_t *root = NULL;
    char err[96] = "";
    assert_int_equal(nsrv_json_parse(&arena, raw_nul, sizeof raw_nul - 1, &root, err, sizeof err),
                     NSRV_EJSON);
    assert_non_null(strstr(err, "NUL character"));
    /* ...unless the caller keeps it, and then the length is exact. */
    assert_int_equal(
        nsrv_json_parse_opts(&arena, "\"a\\u0000b\"", 10, NSRV_JSON_KEEP_NUL, &r, NULL, 0), 0);
    assert_int_equal(r->str_len, 3);
    assert_memory_equal(r->str, "a\0b", 4);
}

/* Strings in the tree are valid UTF-8, decoded as Java's decoder does. */
static void test_strings_are_valid_utf8(void **state) {
    (void)state;
    /* Raw ill-formed bytes: one U+FFFD per maximal subpart. */
    nsrv_json_t *r = parse_ok("\"T\xFF\xFE\"");
    assert_string_equal(r->str, "T\xEF\xBF\xBD\xEF\xBF\xBD");
    assert_int_equal(r->str_len, 7);
    r = parse_ok("\"\xF0\x9F\x98x\"");
    assert_string_equal(r->str, "\xEF\xBF\xBDx");
    /* In keys too, and on the escape path. */
    r = parse_ok("{\"k\xC0\\n\":1}");
    assert_string_equal(r->child->key, "k\xEF\xBF\xBD\n");
    assert_int_equal(r->child->key_len, 5);
    /* A raw truncated sequence before an escape stays one U+FFFD. */
    r = parse_ok("\"\xE4\xB8\\u4E2D\"");
    assert_string_equal(r->str, "\xEF\xBF\xBD\xE4\xB8\xAD");
    /* Lone surrogate escapes (Java keeps them in a String, UTF-8 cannot). */
    r = parse_ok("\"\\uD800x\\uDC00\"");
    assert_string_equal(r->str, "\xEF\xBF\xBDx\xEF\xBF\xBD");
    r = parse_ok("\"\\uDBFF\\uDFFF\"");
    assert_string_equal(r->str, "\xF4\x8F\xBF\xBF");
    /* Valid multi-byte text is untouched. */
    r = parse_ok("\"\xE4\xB8\xAD\xF0\x9F\x98\x80\"");
    assert_string_equal(r->str, "\xE4\xB8\xAD\xF0\x9F\x98\x80");
}

static void test_arrays_and_order(void **state) {
    (void)state;
    nsrv_json_t *r = parse_ok("[1, [2, 3], {\"z\":1,\"a\":2}, \"s\",]");
    assert_int_equal(r->type, NSRV_JSON_ARRAY);
    assert_int_equal(r->count, 4);
    const nsrv_json_t *obj = r->child->next->next;
    assert_string_equal(obj->child->key, "z"); /* source order kept */
    assert_int_equal(parse_ok("{}")->count, 0);
    assert_int_equal(parse_ok("[]")->count, 0);
}

static void test_rejects_bad_input(void **state) {
    (void)state;
    parse_bad("");
    parse_bad("{");
    parse_bad("{\"a\":}");
    parse_bad("{\"a\" 1}");
    parse_bad("[1 2]");
    parse_bad("\"unterminated");
    parse_bad("\"bad \\x escape\"");
    parse_bad("\"bad \\u12\"");
    parse_bad("tru");
    parse_bad("{} x");
    parse_bad("-");
    parse_bad("1.");
    parse_bad("1e");
    parse_bad("{:1}");
    char deep[200];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = '\0';
    parse_bad(deep);
}

static void check_write(const char *in, size_t len, nsrv_json_esc_t mode, const char *expect) {
    nsrv_buf_t b = NSRV_BUF_INIT;
    nsrv_json_write_str(&b, in, len, mode);
    assert_string_equal(b.data, expect);
    nsrv_buf_deinit(&b);
}

static void test_writer_modes(void **state) {
    (void)state;
    /* The documented example brokerName broker-中/"x (proto/route.md §9). */
    const char *name = "broker-\xE4\xB8\xAD/\"x";
    check_write(name, strlen(name), NSRV_JSON_ESC_BROWSER, "\"broker-\\u4E2D\\/\\\"x\"");
    check_write(name, strlen(name), NSRV_JSON_ESC_DEFAULT, "\"broker-\xE4\xB8\xAD/\\\"x\"");
    check_write("a\x7F\x01\n\t\\", 6, NSRV_JSON_ESC_DEFAULT, "\"a\\u007F\\u0001\\n\\t\\\\\"");
    check_write("\xE2\x80\xA8", 3, NSRV_JSON_ESC_DEFAULT, "\"\\u2028\"");
    check_write("\xF0\x9F\x98\x80", 4, NSRV_JSON_ESC_BROWSER, "\"\\uD83D\\uDE00\"");
    check_write("\xFF", 1, NSRV_JSON_ESC_BROWSER, "\"\\uFFFD\"");
    /* Ill-formed input still gives valid UTF-8 out: one U+FFFD per subpart. */
    check_write("a\xFF\xF0\x9F\x98", 5, NSRV_JSON_ESC_DEFAULT, "\"a\xEF\xBF\xBD\xEF\xBF\xBD\"");
    check_write("\xED\xA0\x80", 3, NSRV_JSON_ESC_BROWSER, "\"\\uFFFD\\uFFFD\\uFFFD\"");
    check_write("", 0, NSRV_JSON_ESC_DEFAULT, "\"\"");
}

static void test_writer_round_trip(void **state) {
    (void)state;
    const char *samples[] = {"plain", "q\"uo\\te", "ctl\x01\x1F",
                             "uni \xE4\xB8\xAD \xF0\x9F\x98\x80", "/slash/"};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(samples); i++) {
        for (int mode = 0; mode < 2; mode++) {
            nsrv_buf_t b = NSRV_BUF_INIT;
            nsrv_json_write_str(&b, samples[i], strlen(samples[i]), (nsrv_json_esc_t)mode);
            nsrv_json_t *r = parse_ok(b.data);
            assert_string_equal(r->str, samples[i]);
            nsrv_buf_deinit(&b);
        }
    }
}

/* The writer skips plain ASCII eight bytes at a time: every byte that needs escaping or
 * checking must still be found at every position of a long string, in both modes. The
 * expected text comes from the byte-at-a-time path (strings shorter than eight bytes). */
static void test_writer_word_path_finds_every_special_byte(void **state) {
    (void)state;
    const char *specials[] = {"\"", "\\", "/", "\x7F", "\xC3\xA9", "\xFF", "\xE2\x80\xA8", "\x1F"};
    enum { LONG = 24 };
    for (int mode = 0; mode < 2; mode++) {
        for (int c = 0; c < 0x20 + (int)NSRV_ARRAY_LEN(specials); c++) {
            char one[4] = {(char)c};
            const char *sp = c < 0x20 ? one : specials[c - 0x20];
            size_t sp_len = c < 0x20 ? 1 : strlen(sp);
            nsrv_buf_t esc = NSRV_BUF_INIT;
            nsrv_json_write_str(&esc, sp, sp_len, (nsrv_json_esc_t)mode);
            for (size_t at = 0; at + sp_len <= LONG; at++) {
                char in[LONG];
                memset(in, 'a', sizeof in);
                memcpy(in + at, sp, sp_len);
                char expect[LONG * 8];
                snprintf(expect, sizeof expect, "\"%.*s%.*s%.*s\"", (int)at, in, (int)(esc.len - 2),
                         esc.data + 1, (int)(LONG - at - sp_len), in + at + sp_len);
                check_write(in, LONG, (nsrv_json_esc_t)mode, expect);
            }
            nsrv_buf_deinit(&esc);
        }
    }
}

/* A document of many tiny values is refused past NSRV_JSON_MAX_NODES, which
 * bounds what a 16 MiB frame can make the parser allocate. */
static void test_node_cap(void **state) {
    (void)state;
    size_t n = NSRV_JSON_MAX_NODES + 10;
    char *text = malloc(2 * n + 2);
    text[0] = '[';
    for (size_t i = 0; i < n; i++) {
        text[1 + 2 * i] = '0';
        text[2 + 2 * i] = ',';
    }
    text[2 * n] = ']';
    nsrv_json_t *root = NULL;
    char err[128] = "";
    assert_int_equal(nsrv_json_parse(&arena, text, 2 * n + 1, &root, err, sizeof err), NSRV_EJSON);
    assert_non_null(strstr(err, "too many values"));
    /* Just under the cap is fine. */
    size_t m = NSRV_JSON_MAX_NODES - 1; /* elements: with the array, exactly the cap */
    text[2 * m] = ']';
    assert_int_equal(nsrv_json_parse(&arena, text, 2 * m + 1, &root, err, sizeof err), 0);
    assert_int_equal(root->count, m);
    free(text);
}

NSRV_TEST_MAIN(NULL, NULL, NSRV_FIXTURE_TEST(test_bare_numeric_keys),
               NSRV_FIXTURE_TEST(test_scalars_and_lenient_readers),
               NSRV_FIXTURE_TEST(test_string_escapes),
               NSRV_FIXTURE_TEST(test_strings_are_valid_utf8),
               NSRV_FIXTURE_TEST(test_arrays_and_order), NSRV_FIXTURE_TEST(test_rejects_bad_input),
               NSRV_FIXTURE_TEST(test_writer_modes), NSRV_FIXTURE_TEST(test_writer_round_trip),
               NSRV_FIXTURE_TEST(test_writer_word_path_finds_every_special_byte),
               NSRV_FIXTURE_TEST(test_node_cap))
