/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the in-memory KV table (src/kvconfig/kv.c) and the
 * kvConfig.json text loader (nsrv__kv_load_text): semantics of put/get/delete,
 * the exact encodings, and what a Java-written file loads as. No files here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "nsrv/buf.h"
#include "nsrv/common.h"
#include "nsrv/kv.h"

#include "../kv_int.h"
#include "testlib.h"

static nsrv_kv_t *kv_new(void) {
    return nsrv_kv_create(NULL);
}

/* The per-test fixture: an empty table without a file. */
static int kv_setup(void **state) {
    *state = kv_new();
    return 0;
}

static int kv_teardown(void **state) {
    nsrv_kv_t *kv = *state;
    nsrv_kv_destroy(&kv);
    return 0;
}

#define KV_TEST(fn) cmocka_unit_test_setup_teardown(fn, kv_setup, kv_teardown)

/* Asserts that the whole-file encoding equals text. */
static void assert_file_text(const nsrv_kv_t *kv, const char *text) {
    nsrv_buf_t b = NSRV_BUF_INIT;
    nsrv_kv_encode_file(kv, &b);
    assert_string_equal(b.data, text);
    assert_int_equal(b.len, strlen(text));
    nsrv_buf_deinit(&b);
}

static int load_text(nsrv_kv_t *kv, const char *text) {
    char err[256] = "";
    int rc = nsrv__kv_load_text(kv, text, strlen(text), err, sizeof err);
    if (rc != 0)
        assert_true(err[0] != '\0');
    return rc;
}

static void test_put_get_delete(void **state) {
    (void)state;
    nsrv_kv_t *kv = kv_new();
    assert_null(nsrv_kv_get(kv, "NS", "k"));
    assert_false(nsrv_kv_has_namespace(kv, "NS"));

    assert_int_equal(nsrv_kv_put(kv, "NS", "k", "v1"), 0);
    assert_true(nsrv_kv_has_namespace(kv, "NS"));
    assert_string_equal(nsrv_kv_get(kv, "NS", "k"), "v1");
    assert_null(nsrv_kv_get(kv, "NS", "other"));
    assert_null(nsrv_kv_get(kv, "OTHER", "k"));

    /* Overwrite. */
    assert_int_equal(nsrv_kv_put(kv, "NS", "k", "v2"), 0);
    assert_string_equal(nsrv_kv_get(kv, "NS", "k"), "v2");

    /* Empty strings are ordinary keys and values. */
    assert_int_equal(nsrv_kv_put(kv, "", "", ""), 0);
    assert_string_equal(nsrv_kv_get(kv, "", ""), "");

    assert_int_equal(nsrv_kv_delete(kv, "NS", "k"), 0);
    assert_null(nsrv_kv_get(kv, "NS", "k"));
    /* The namespace stays after its last key is gone (proto/requests.md §2.3). */
    assert_true(nsrv_kv_has_namespace(kv, "NS"));
    /* Deleting a missing key, or in a missing namespace, is fine and creates nothing. */
    assert_int_equal(nsrv_kv_delete(kv, "NS", "k"), 0);
    assert_int_equal(nsrv_kv_delete(kv, "NOPE", "k"), 0);
    assert_false(nsrv_kv_has_namespace(kv, "NOPE"));
    nsrv_kv_destroy(&kv);
    assert_null(kv);
    nsrv_kv_destroy(&kv); /* NULL is accepted */
    nsrv_kv_destroy(NULL);
}

static void test_null_arguments(void **state) {
    nsrv_kv_t *kv = *state;
    uint64_t g = nsrv_kv_generation(kv);
    assert_int_equal(nsrv_kv_put(kv, NULL, "k", "v"), -EINVAL);
    assert_int_equal(nsrv_kv_put(kv, "NS", NULL, "v"), -EINVAL);
    assert_int_equal(nsrv_kv_delete(kv, NULL, "k"), -EINVAL);
    assert_int_equal(nsrv_kv_delete(kv, "NS", NULL), -EINVAL);
    assert_false(nsrv_kv_has_namespace(kv, "NS"));
    assert_int_equal(nsrv_kv_generation(kv), g);
    assert_null(nsrv_kv_get(kv, NULL, "k"));
    assert_null(nsrv_kv_get(kv, "NS", NULL));
    assert_false(nsrv_kv_has_namespace(kv, NULL));
    nsrv_buf_t b = NSRV_BUF_INIT;
    assert_false(nsrv_kv_encode_namespace(kv, NULL, &b));
    assert_int_equal(b.len, 0);
}

static void test_null_value(void **state) {
    nsrv_kv_t *kv = *state;
    /* Java stores null: the namespace is created, the key reads as absent and is not written. */
    assert_int_equal(nsrv_kv_put(kv, "NS", "k", NULL), 0);
    assert_true(nsrv_kv_has_namespace(kv, "NS"));
    assert_null(nsrv_kv_get(kv, "NS", "k"));
    assert_int_equal(nsrv_kv_put(kv, "NS", "a", "1"), 0);
    assert_file_text(kv, "{\"configTable\":{\"NS\":{\"a\":\"1\"}}}");
    nsrv_buf_t b = NSRV_BUF_INIT;
    assert_true(nsrv_kv_encode_namespace(kv, "NS", &b));
    assert_string_equal(b.data, "{\"table\":{\"a\":\"1\"}}");
    nsrv_buf_deinit(&b);
    /* A null can be overwritten by a value and back. */
    assert_int_equal(nsrv_kv_put(kv, "NS", "k", "x"), 0);
    assert_file_text(kv, "{\"configTable\":{\"NS\":{\"k\":\"x\",\"a\":\"1\"}}}");
    assert_int_equal(nsrv_kv_put(kv, "NS", "k", NULL), 0);
    assert_file_text(kv, "{\"configTable\":{\"NS\":{\"a\":\"1\"}}}");
}

static void test_file_encoding_exact(void **state) {
    nsrv_kv_t *kv = *state;
    assert_file_text(kv, "{\"configTable\":{}}");
    assert_int_equal(nsrv_kv_put(kv, NSRV_KV_NS_ORDER_TOPIC, "TopicTest", "broker-a:4;broker-b:4"),
                     0);
    assert_file_text(
        kv, "{\"configTable\":{\"ORDER_TOPIC_CONFIG\":{\"TopicTest\":\"broker-a:4;broker-b:4\"}}}");
    assert_int_equal(nsrv_kv_put(kv, "SOME_NS", "k", "v"), 0);
    assert_int_equal(nsrv_kv_put(kv, NSRV_KV_NS_ORDER_TOPIC, "T2", "broker-a:8"), 0);
    /* Overwriting keeps the key's position. */
    assert_int_equal(nsrv_kv_put(kv, NSRV_KV_NS_ORDER_TOPIC, "TopicTest", "broker-a:2"), 0);
    assert_file_text(kv, "{\"configTable\":{\"ORDER_TOPIC_CONFIG\":{\"TopicTest\":\"broker-a:2\","
                         "\"T2\":\"broker-a:8\"},\"SOME_NS\":{\"k\":\"v\"}}}");
    /* An emptied namespace is written as {} (proto/requests.md §4). */
    assert_int_equal(nsrv_kv_delete(kv, "SOME_NS", "k"), 0);
    assert_file_text(kv, "{\"configTable\":{\"ORDER_TOPIC_CONFIG\":{\"TopicTest\":\"broker-a:2\","
                         "\"T2\":\"broker-a:8\"},\"SOME_NS\":{}}}");
}

static void test_escaping(void **state) {
    nsrv_kv_t *kv = *state;
    /* fastjson default mode: raw UTF-8, '/' unescaped, short escapes, \u00XX for controls. */
    assert_int_equal(nsrv_kv_put(kv, "命名空间", "q\"b\\s/", "l1\nl2\t\x01\xE4\xB8\xAD"), 0);
    assert_file_text(kv, "{\"configTable\":{\"命名空间\":{\"q\\\"b\\\\s/\":"
                         "\"l1\\nl2\\t\\u0001\xE4\xB8\xAD\"}}}");
}

static void test_encode_namespace(void **state) {
    nsrv_kv_t *kv = *state;
    nsrv_buf_t b = NSRV_BUF_INIT;
    nsrv_buf_append_c(&b, "prefix:");
    assert_false(nsrv_kv_encode_namespace(kv, NSRV_KV_NS_ORDER_TOPIC, &b));
    assert_string_equal(b.data, "prefix:");

    assert_int_equal(nsrv_kv_put(kv, NSRV_KV_NS_ORDER_TOPIC, "TopicTest", "broker-a:4;broker-b:4"),
                     0);
    assert_true(nsrv_kv_encode_namespace(kv, NSRV_KV_NS_ORDER_TOPIC, &b));
    assert_string_equal(b.data, "prefix:{\"table\":{\"TopicTest\":\"broker-a:4;broker-b:4\"}}");

    /* An existing but empty namespace still encodes (GET_KVLIST_BY_NAMESPACE answers SUCCESS). */
    assert_int_equal(nsrv_kv_delete(kv, NSRV_KV_NS_ORDER_TOPIC, "TopicTest"), 0);
    nsrv_buf_reset(&b);
    assert_true(nsrv_kv_encode_namespace(kv, NSRV_KV_NS_ORDER_TOPIC, &b));
    assert_string_equal(b.data, "{\"table\":{}}");
    nsrv_buf_deinit(&b);
}

static void test_generation(void **state) {
    nsrv_kv_t *kv = *state;
    uint64_t g0 = nsrv_kv_generation(kv);
    assert_int_equal(nsrv_kv_put(kv, "NS", "k", "v"), 0);
    uint64_t g1 = nsrv_kv_generation(kv);
    assert_true(g1 > g0);
    assert_int_equal(nsrv_kv_put(kv, "NS", "k", "v"), 0);
    uint64_t g2 = nsrv_kv_generation(kv);
    assert_true(g2 > g1);
    /* A delete that removes nothing changes nothing. */
    assert_int_equal(nsrv_kv_delete(kv, "NS", "missing"), 0);
    assert_int_equal(nsrv_kv_generation(kv), g2);
    assert_int_equal(nsrv_kv_delete(kv, "NS", "k"), 0);
    uint64_t g3 = nsrv_kv_generation(kv);
    assert_true(g3 > g2);
    assert_int_equal(load_text(kv, "{\"configTable\":{\"A\":{\"x\":\"y\"}}}"), 0);
    assert_true(nsrv_kv_generation(kv) > g3);
}

/* A file as a Java NameServer (fastjson default) writes it, in hash order, with escapes. */
static const char java_file[] =
    "{\"configTable\":{\"SOME_NS\":{\"quote\":\"a\\\"b\\\\c\",\"nl\":\"line1\\nline2\","
    "\"ctl\":\"\\u0001\\u001F\",\"url\":\"http://h/p\",\"zh\":\"中文\",\"esc\":\"\\u4E2D\\u6587\","
    "\"emoji\":\"\\uD83D\\uDE00\"},\"ORDER_TOPIC_CONFIG\":{\"TopicTest\":\"broker-a:4;broker-b:4\"}"
    ","
    "\"EMPTY_NS\":{}}}";

static void test_load_java_file(void **state) {
    nsrv_kv_t *kv = *state;
    assert_int_equal(load_text(kv, java_file), 0);
    assert_string_equal(nsrv_kv_get(kv, NSRV_KV_NS_ORDER_TOPIC, "TopicTest"),
                        "broker-a:4;broker-b:4");
    assert_string_equal(nsrv_kv_get(kv, "SOME_NS", "quote"), "a\"b\\c");
    assert_string_equal(nsrv_kv_get(kv, "SOME_NS", "nl"), "line1\nline2");
    assert_string_equal(nsrv_kv_get(kv, "SOME_NS", "ctl"), "\x01\x1F");
    assert_string_equal(nsrv_kv_get(kv, "SOME_NS", "url"), "http://h/p");
    assert_string_equal(nsrv_kv_get(kv, "SOME_NS", "zh"), "中文");
    assert_string_equal(nsrv_kv_get(kv, "SOME_NS", "esc"), "中文");
    assert_string_equal(nsrv_kv_get(kv, "SOME_NS", "emoji"), "\xF0\x9F\x98\x80");
    assert_true(nsrv_kv_has_namespace(kv, "EMPTY_NS"));
    /* Re-encoding keeps the file's order and fastjson's default escaping. */
    assert_file_text(
        kv, "{\"configTable\":{\"SOME_NS\":{\"quote\":\"a\\\"b\\\\c\",\"nl\":\"line1\\nline2\","
            "\"ctl\":\"\\u0001\\u001F\",\"url\":\"http://h/p\",\"zh\":\"中文\",\"esc\":\"中文\","
            "\"emoji\":\"\xF0\x9F\x98\x80\"},\"ORDER_TOPIC_CONFIG\":{\"TopicTest\":"
            "\"broker-a:4;broker-b:4\"},\"EMPTY_NS\":{}}}");
}

static void test_load_lenient(void **state) {
    (void)state;
    nsrv_kv_t *kv = kv_new();
    /* Whitespace, unknown top-level keys, bare keys, non-string and null values. */
    assert_int_equal(
        load_text(kv, " \n{ \"dataVersion\" : {\"counter\":3},\n \"configTable\" : {\n"
                      "  \"N\" : { 0 : \"zero\", \"i\":12, \"neg\":-5, \"f\":1.5e3, \"b\":true,"
                      " \"n\":null, \"o\":{\"x\":[1,\"y\",null,false]}, \"e\":[] },\n"
                      "  \"NULL_NS\": null } }\n"),
        0);
    assert_string_equal(nsrv_kv_get(kv, "N", "0"), "zero");
    assert_string_equal(nsrv_kv_get(kv, "N", "i"), "12");
    assert_string_equal(nsrv_kv_get(kv, "N", "neg"), "-5");
    assert_string_equal(nsrv_kv_get(kv, "N", "f"), "1.5e3");
    assert_string_equal(nsrv_kv_get(kv, "N", "b"), "true");
    assert_null(nsrv_kv_get(kv, "N", "n"));
    assert_string_equal(nsrv_kv_get(kv, "N", "o"), "{\"x\":[1,\"y\",null,false]}");
    assert_string_equal(nsrv_kv_get(kv, "N", "e"), "[]");
    assert_false(nsrv_kv_has_namespace(kv, "NULL_NS"));
    nsrv_kv_destroy(&kv);

    /* No configTable, or a null one: an empty table. */
    kv = kv_new();
    assert_int_equal(load_text(kv, "{}"), 0);
    assert_int_equal(load_text(kv, "{\"configTable\":null}"), 0);
    assert_file_text(kv, "{\"configTable\":{}}");
    nsrv_kv_destroy(&kv);
}

static void test_load_merge_and_duplicates(void **state) {
    (void)state;
    nsrv_kv_t *kv = kv_new();
    assert_int_equal(nsrv_kv_put(kv, "KEEP", "a", "1"), 0);
    assert_int_equal(nsrv_kv_put(kv, "REPL", "old", "1"), 0);
    /* A file namespace replaces the in-memory one wholesale; others are kept (putAll). */
    assert_int_equal(
        load_text(kv, "{\"configTable\":{\"REPL\":{\"new\":\"2\"},\"ADD\":{\"x\":\"y\"}}}"), 0);
    assert_string_equal(nsrv_kv_get(kv, "KEEP", "a"), "1");
    assert_null(nsrv_kv_get(kv, "REPL", "old"));
    assert_string_equal(nsrv_kv_get(kv, "REPL", "new"), "2");
    assert_file_text(kv, "{\"configTable\":{\"KEEP\":{\"a\":\"1\"},\"REPL\":{\"new\":\"2\"},"
                         "\"ADD\":{\"x\":\"y\"}}}");
    nsrv_kv_destroy(&kv);

    /* Duplicates inside one file: the later one wins, as HashMap.put would make it. */
    kv = kv_new();
    assert_int_equal(load_text(kv, "{\"configTable\":{\"A\":{\"k\":\"1\",\"k\":\"2\",\"j\":\"3\"},"
                                   "\"B\":{},\"A\":{\"z\":\"9\"}}}"),
                     0);
    assert_file_text(kv, "{\"configTable\":{\"A\":{\"z\":\"9\"},\"B\":{}}}");
    nsrv_kv_destroy(&kv);
}

static void test_load_embedded_nul(void **state) {
    nsrv_kv_t *kv = *state;
    assert_int_equal(load_text(kv, "{\"configTable\":{\"N\":{\"a\\u0000b\":\"x\\u0000y\"}}}"), 0);
    /* Kept exactly and written back; a C-string lookup stops at the NUL. */
    assert_file_text(kv, "{\"configTable\":{\"N\":{\"a\\u0000b\":\"x\\u0000y\"}}}");
    assert_null(nsrv_kv_get(kv, "N", "a"));
}

static void test_load_rejects(void **state) {
    (void)state;
    static const char *const bad[] = {
        "",
        "   ",
        "{",
        "{\"configTable\":{\"N\":{\"k\":\"v\"}}",
        "{\"configTable\":{\"N\":{\"k\":\"v\"}}} trailing",
        "[]",
        "\"configTable\"",
        "null",
        "{\"configTable\":[]}",
        "{\"configTable\":\"x\"}",
        "{\"configTable\":1}",
        "{\"configTable\":{\"N\":\"v\"}}",
        "{\"configTable\":{\"N\":[\"v\"]}}",
        "{\"configTable\":{\"OK\":{},\"N\":7}}",
        "{\"configTable\":{\"N\":{\"k\":\"\\x\"}}}",
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad); i++) {
        nsrv_kv_t *kv = kv_new();
        assert_int_equal(nsrv_kv_put(kv, "PRE", "k", "v"), 0);
        uint64_t g = nsrv_kv_generation(kv);
        char err[128] = "";
        int rc = nsrv__kv_load_text(kv, bad[i], strlen(bad[i]), err, sizeof err);
        if (rc != NSRV_EJSON)
            fail_msg("input %zu '%s' gave %d", i, bad[i], rc);
        assert_true(err[0] != '\0');
        /* A rejected file changes nothing. */
        assert_int_equal(nsrv_kv_generation(kv), g);
        assert_false(nsrv_kv_has_namespace(kv, "OK"));
        assert_file_text(kv, "{\"configTable\":{\"PRE\":{\"k\":\"v\"}}}");
        /* err may be NULL. */
        assert_int_equal(nsrv__kv_load_text(kv, bad[i], strlen(bad[i]), NULL, 0), NSRV_EJSON);
        nsrv_kv_destroy(&kv);
    }
}

static void test_encode_reload_roundtrip(void **state) {
    nsrv_kv_t *kv = *state;
    assert_int_equal(nsrv_kv_put(kv, "A", "k1", "v1"), 0);
    assert_int_equal(nsrv_kv_put(kv, "A", "k\"2", "v\n2"), 0);
    assert_int_equal(nsrv_kv_put(kv, "B\xE2\x80\xA8", "\x7F", "\xFF\xFE"), 0);
    assert_int_equal(nsrv_kv_put(kv, "EMPTY", "gone", "x"), 0);
    assert_int_equal(nsrv_kv_delete(kv, "EMPTY", "gone"), 0);
    nsrv_buf_t b1 = NSRV_BUF_INIT, b2 = NSRV_BUF_INIT;
    nsrv_kv_encode_file(kv, &b1);
    nsrv_kv_t *kv2 = kv_new();
    assert_int_equal(nsrv__kv_load_text(kv2, b1.data, b1.len, NULL, 0), 0);
    nsrv_kv_encode_file(kv2, &b2);
    assert_int_equal(b1.len, b2.len);
    assert_memory_equal(b1.data, b2.data, b1.len);
    /* The file is valid UTF-8 whatever was stored: ill-formed bytes are
     * written as U+FFFD (requests never store them: decoding replaces them). */
    assert_string_equal(nsrv_kv_get(kv2, "B\xE2\x80\xA8", "\x7F"), "\xEF\xBF\xBD\xEF\xBF\xBD");
    assert_true(nsrv_kv_has_namespace(kv2, "EMPTY"));
    nsrv_buf_deinit(&b1);
    nsrv_buf_deinit(&b2);
    nsrv_kv_destroy(&kv2);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_put_get_delete), KV_TEST(test_null_arguments),
               KV_TEST(test_null_value), KV_TEST(test_file_encoding_exact), KV_TEST(test_escaping),
               KV_TEST(test_encode_namespace), KV_TEST(test_generation),
               KV_TEST(test_load_java_file), cmocka_unit_test(test_load_lenient),
               cmocka_unit_test(test_load_merge_and_duplicates), KV_TEST(test_load_embedded_nul),
               cmocka_unit_test(test_load_rejects), KV_TEST(test_encode_reload_roundtrip))
