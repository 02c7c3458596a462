/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for kvConfig.json persistence (src/kvconfig/kv_store.c): the
 * file after each change, the .bak, loading Java-written, missing, empty and
 * corrupt files, a crash between write and rename, and write failures. Each
 * test works in a fresh directory under /tmp.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsrv/alloc.h"
#include "nsrv/common.h"
#include "nsrv/fileio.h"
#include "nsrv/kv.h"
#include "nsrv/log.h"
#include "testlib.h"

typedef struct {
    nsrv_test_dir_t dir;
    char path[128]; /* <dir>/namesrv/kvConfig.json: the parent does not exist yet */
    char bak[160];
    char tmp[160];
} fixture_t;

static int setup(void **state) {
    if (nsrv_test_fixture_new(state, sizeof(fixture_t), "kv") != 0)
        return -1;
    fixture_t *f = *state;
    snprintf(f->path, sizeof f->path, "%s/namesrv/kvConfig.json", f->dir.path);
    snprintf(f->bak, sizeof f->bak, "%s.bak", f->path);
    snprintf(f->tmp, sizeof f->tmp, "%s.tmp", f->path);
    /* Expected warnings (corrupt files) would only clutter the test output. */
    nsrv_log_level = NSRV_LOG_ERROR - 1;
    return 0;
}

static int teardown(void **state) {
    nsrv_file_crash_hook = NULL;
    nsrv_test_fixture_free(state);
    return 0;
}

/* A fresh table at path, loaded; asserts the load result. */
static nsrv_kv_t *reload(const char *path, int want_rc) {
    nsrv_kv_t *kv = nsrv_kv_create(path);
    char err[512] = "";
    int rc = nsrv_kv_load(kv, err, sizeof err);
    if (rc != want_rc)
        fail_msg("load of '%s' gave %d (%s), wanted %d", path, rc, err, want_rc);
    if (rc != 0)
        assert_true(err[0] != '\0');
    return kv;
}

#define ORDER_FILE                                                                                 \
    "{\"configTable\":{\"ORDER_TOPIC_CONFIG\":{\"TopicTest\":\"broker-a:4;broker-b:4\"}}}"

static void test_put_writes_file_and_bak(void **state) {
    fixture_t *f = *state;
    nsrv_kv_t *kv = nsrv_kv_create(f->path);
    assert_int_equal(nsrv_kv_load(kv, NULL, 0), 0);
    /* Loading a missing file writes nothing. */
    assert_false(nsrv_test_exists(f->path));

    assert_int_equal(nsrv_kv_put(kv, "ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:4;broker-b:4"),
                     0);
    /* The parent directory was created; the file is byte-exact; no .bak for a new file. */
    nsrv_test_assert_file(f->path, ORDER_FILE);
    assert_false(nsrv_test_exists(f->bak));
    assert_false(nsrv_test_exists(f->tmp));

    assert_int_equal(nsrv_kv_put(kv, "SOME_NS", "k", "v"), 0);
    const char *two =
        "{\"configTable\":{\"ORDER_TOPIC_CONFIG\":{\"TopicTest\":\"broker-a:4;broker-b:4\"},"
        "\"SOME_NS\":{\"k\":\"v\"}}}";
    nsrv_test_assert_file(f->path, two);
    /* .bak holds the content before this put. */
    nsrv_test_assert_file(f->bak, ORDER_FILE);

    assert_int_equal(nsrv_kv_delete(kv, "SOME_NS", "k"), 0);
    const char *three =
        "{\"configTable\":{\"ORDER_TOPIC_CONFIG\":{\"TopicTest\":\"broker-a:4;broker-b:4\"},"
        "\"SOME_NS\":{}}}";
    nsrv_test_assert_file(f->path, three);
    nsrv_test_assert_file(f->bak, two);
    nsrv_kv_destroy(&kv);

    /* A restart sees the same table, emptied namespace included. */
    kv = reload(f->path, 0);
    assert_string_equal(nsrv_kv_get(kv, "ORDER_TOPIC_CONFIG", "TopicTest"),
                        "broker-a:4;broker-b:4");
    assert_true(nsrv_kv_has_namespace(kv, "SOME_NS"));
    nsrv_buf_t b = NSRV_BUF_INIT;
    nsrv_kv_encode_file(kv, &b);
    assert_string_equal(b.data, three);
    nsrv_buf_deinit(&b);
    nsrv_kv_destroy(&kv);
}

static void test_delete_missing_key_still_writes(void **state) {
    fixture_t *f = *state;
    nsrv_kv_t *kv = nsrv_kv_create(f->path);
    /* Even on an empty table, with no namespace: Java persists on every delete. */
    assert_int_equal(nsrv_kv_delete(kv, "NS", "nothing"), 0);
    nsrv_test_assert_file(f->path, "{\"configTable\":{}}");
    assert_int_equal(nsrv_kv_put(kv, "NS", "k", "v"), 0);
    nsrv_test_assert_file(f->bak, "{\"configTable\":{}}");
    assert_int_equal(nsrv_kv_delete(kv, "NS", "other"), 0);
    nsrv_test_assert_file(f->path, "{\"configTable\":{\"NS\":{\"k\":\"v\"}}}");
    /* The delete rotated .bak too, although the content did not change. */
    nsrv_test_assert_file(f->bak, "{\"configTable\":{\"NS\":{\"k\":\"v\"}}}");
    nsrv_kv_destroy(&kv);
}

static void test_null_value_persisted(void **state) {
    fixture_t *f = *state;
    nsrv_kv_t *kv = nsrv_kv_create(f->path);
    assert_int_equal(nsrv_kv_put(kv, "NS", "k", NULL), 0);
    nsrv_test_assert_file(f->path, "{\"configTable\":{\"NS\":{}}}");
    nsrv_kv_destroy(&kv);
}

static void test_load_java_written_file(void **state) {
    fixture_t *f = *state;
    /* As MixAll.string2File leaves it: compact fastjson, hash order, no newline. */
    nsrv_test_write_file(
        f->path, "{\"configTable\":{\"SOME_NS\":{\"msg\":\"say \\\"hi\\\"\\n\",\"zh\":\"顺序消息\","
                 "\"u\":\"\\u00E9\\u4e2d\"},\"ORDER_TOPIC_CONFIG\":{\"TopicTest\":"
                 "\"broker-a:4;broker-b:4\",\"T2\":\"broker-b:8\"}}}");
    nsrv_kv_t *kv = reload(f->path, 0);
    assert_string_equal(nsrv_kv_get(kv, "SOME_NS", "msg"), "say \"hi\"\n");
    assert_string_equal(nsrv_kv_get(kv, "SOME_NS", "zh"), "顺序消息");
    assert_string_equal(nsrv_kv_get(kv, "SOME_NS", "u"), "é中");
    assert_string_equal(nsrv_kv_get(kv, "ORDER_TOPIC_CONFIG", "T2"), "broker-b:8");
    /* The next write keeps everything and moves the Java file to .bak untouched. */
    assert_int_equal(nsrv_kv_put(kv, "ORDER_TOPIC_CONFIG", "T3", "broker-c:1"), 0);
    nsrv_test_assert_file(
        f->path, "{\"configTable\":{\"SOME_NS\":{\"msg\":\"say \\\"hi\\\"\\n\",\"zh\":\"顺序消息\","
                 "\"u\":\"é中\"},\"ORDER_TOPIC_CONFIG\":{\"TopicTest\":"
                 "\"broker-a:4;broker-b:4\",\"T2\":\"broker-b:8\",\"T3\":\"broker-c:1\"}}}");
    nsrv_test_assert_file(
        f->bak, "{\"configTable\":{\"SOME_NS\":{\"msg\":\"say \\\"hi\\\"\\n\",\"zh\":\"顺序消息\","
                "\"u\":\"\\u00E9\\u4e2d\"},\"ORDER_TOPIC_CONFIG\":{\"TopicTest\":"
                "\"broker-a:4;broker-b:4\",\"T2\":\"broker-b:8\"}}}");
    nsrv_kv_destroy(&kv);
}

static void test_load_missing_is_empty(void **state) {
    fixture_t *f = *state;
    /* A .bak without a main file is ignored: a deleted file means a reset table. */
    nsrv_test_write_file(f->bak, ORDER_FILE);
    nsrv_kv_t *kv = reload(f->path, 0);
    assert_false(nsrv_kv_has_namespace(kv, "ORDER_TOPIC_CONFIG"));
    nsrv_kv_destroy(&kv);
    /* In-memory tables load nothing. */
    kv = nsrv_kv_create(NULL);
    assert_int_equal(nsrv_kv_load(kv, NULL, 0), 0);
    nsrv_kv_destroy(&kv);
}

/* With main_text as the main file, the load falls back to the .bak (ORDER_FILE). */
static void assert_falls_back_to_bak(const fixture_t *f, const char *main_text) {
    nsrv_test_write_file(f->path, main_text);
    nsrv_kv_t *kv = reload(f->path, 0);
    assert_string_equal(nsrv_kv_get(kv, "ORDER_TOPIC_CONFIG", "TopicTest"),
                        "broker-a:4;broker-b:4");
    nsrv_kv_destroy(&kv);
}

static void test_load_corrupt_uses_bak(void **state) {
    fixture_t *f = *state;
    nsrv_test_write_file(f->bak, ORDER_FILE);
    /* A Java NameServer crashed half-way through its in-place rewrite. */
    assert_falls_back_to_bak(f, "{\"configTable\":{\"ORDER_TOPIC_CONFIG\":{\"TopicTest\":\"bro");
    /* The same for a main file of the wrong shape. */
    assert_falls_back_to_bak(f, "{\"configTable\":[1,2]}");
}

static void test_load_empty_file(void **state) {
    fixture_t *f = *state;
    /* Truncated to nothing by a crash right after Java's truncate: .bak has the old table. */
    nsrv_test_write_file(f->bak, ORDER_FILE);
    assert_falls_back_to_bak(f, "");
    /* Without a usable .bak an empty file is an empty table, as in Java. */
    nsrv_test_write_file(f->path, " \n");
    assert_int_equal(unlink(f->bak), 0);
    nsrv_kv_t *kv = reload(f->path, 0);
    assert_false(nsrv_kv_has_namespace(kv, "ORDER_TOPIC_CONFIG"));
    nsrv_kv_destroy(&kv);
    nsrv_test_write_file(f->bak, "garbage");
    kv = reload(f->path, 0);
    assert_false(nsrv_kv_has_namespace(kv, "ORDER_TOPIC_CONFIG"));
    nsrv_kv_destroy(&kv);
}

static void test_load_corrupt_both_fails(void **state) {
    fixture_t *f = *state;
    nsrv_test_write_file(f->path, "{\"configTable\":");
    nsrv_test_write_file(f->bak, "not json");
    nsrv_kv_t *kv = reload(f->path, NSRV_EJSON);
    assert_false(nsrv_kv_has_namespace(kv, "ORDER_TOPIC_CONFIG"));
    nsrv_kv_destroy(&kv);
    /* The same without any .bak, and with an empty .bak. */
    assert_int_equal(unlink(f->bak), 0);
    kv = reload(f->path, NSRV_EJSON);
    nsrv_kv_destroy(&kv);
    nsrv_test_write_file(f->bak, "");
    kv = reload(f->path, NSRV_EJSON);
    nsrv_kv_destroy(&kv);
    /* Neither file was touched by the failed loads. */
    nsrv_test_assert_file(f->path, "{\"configTable\":");
    nsrv_test_assert_file(f->bak, "");
}

static void test_load_unreadable(void **state) {
    fixture_t *f = *state;
    /* A directory where the file should be: a read error, not an empty table. */
    const char *ns_dir = nsrv_test_dir_join(&f->dir, "namesrv");
    assert_int_equal(mkdir(ns_dir, 0755), 0);
    assert_int_equal(mkdir(f->path, 0755), 0);
    nsrv_kv_t *kv = reload(f->path, -EISDIR);
    nsrv_kv_destroy(&kv);
    /* ... unless .bak can stand in for it. */
    nsrv_test_write_file(f->bak, ORDER_FILE);
    kv = reload(f->path, 0);
    assert_string_equal(nsrv_kv_get(kv, "ORDER_TOPIC_CONFIG", "TopicTest"),
                        "broker-a:4;broker-b:4");
    nsrv_kv_destroy(&kv);
}

static int crash_calls;

static int crash_hook(const char *tmp_path) {
    (void)tmp_path;
    crash_calls++;
    return -EIO;
}

static void test_crash_between_write_and_rename(void **state) {
    fixture_t *f = *state;
    nsrv_kv_t *kv = nsrv_kv_create(f->path);
    assert_int_equal(nsrv_kv_put(kv, "ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:4;broker-b:4"),
                     0);

    /* The process "dies" after the new text is in kvConfig.json.tmp, before the rename. */
    crash_calls = 0;
    nsrv_file_crash_hook = crash_hook;
    assert_int_equal(nsrv_kv_put(kv, "ORDER_TOPIC_CONFIG", "TopicTest", "broker-z:1"), -EIO);
    nsrv_file_crash_hook = NULL;
    assert_int_equal(crash_calls, 1);
    /* The in-memory change stays (Java only logs a failed write)... */
    assert_string_equal(nsrv_kv_get(kv, "ORDER_TOPIC_CONFIG", "TopicTest"), "broker-z:1");
    nsrv_kv_destroy(&kv);

    /* ...but the file still holds the complete old content, and a restart loads it. */
    nsrv_test_assert_file(f->path, ORDER_FILE);
    assert_true(nsrv_test_exists(f->tmp));
    kv = reload(f->path, 0);
    assert_string_equal(nsrv_kv_get(kv, "ORDER_TOPIC_CONFIG", "TopicTest"),
                        "broker-a:4;broker-b:4");

    /* The next successful put replaces the stale temp file. */
    assert_int_equal(nsrv_kv_put(kv, "NS", "k", "v"), 0);
    assert_false(nsrv_test_exists(f->tmp));
    nsrv_test_assert_file(f->path, "{\"configTable\":{\"ORDER_TOPIC_CONFIG\":{\"TopicTest\":"
                                   "\"broker-a:4;broker-b:4\"},\"NS\":{\"k\":\"v\"}}}");
    nsrv_test_assert_file(f->bak, ORDER_FILE);
    nsrv_kv_destroy(&kv);
}

static void test_crash_on_delete(void **state) {
    fixture_t *f = *state;
    nsrv_kv_t *kv = nsrv_kv_create(f->path);
    assert_int_equal(nsrv_kv_put(kv, "ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:4;broker-b:4"),
                     0);
    nsrv_file_crash_hook = crash_hook;
    assert_int_equal(nsrv_kv_delete(kv, "ORDER_TOPIC_CONFIG", "TopicTest"), -EIO);
    nsrv_file_crash_hook = NULL;
    nsrv_test_assert_file(f->path, ORDER_FILE);
    nsrv_kv_destroy(&kv);
}

static void test_persist_failure(void **state) {
    fixture_t *f = *state;
    /* The parent "directory" is a regular file: every write fails. */
    const char *plain = nsrv_test_dir_join(&f->dir, "plain");
    char path[340];
    nsrv_test_write_file(plain, "x");
    snprintf(path, sizeof path, "%s/sub/kvConfig.json", plain);
    nsrv_kv_t *kv = nsrv_kv_create(path);
    assert_int_equal(nsrv_kv_load(kv, NULL, 0), -ENOTDIR);
    int rc = nsrv_kv_put(kv, "NS", "k", "v");
    assert_true(rc < 0);
    assert_true(rc > -4096); /* a -errno */
    assert_string_equal(nsrv_kv_get(kv, "NS", "k"), "v");
    assert_true(nsrv_kv_delete(kv, "NS", "k") < 0);
    assert_null(nsrv_kv_get(kv, "NS", "k"));
    nsrv_kv_destroy(&kv);
    nsrv_test_assert_file(plain, "x");
}

static void test_load_too_big(void **state) {
    fixture_t *f = *state;
    /* A sparse file just over the cap is refused without reading it all. */
    nsrv_test_write_file(f->path, "{}");
    assert_int_equal(truncate(f->path, (off_t)NSRV_KV_MAX_FILE_BYTES + 1), 0);
    nsrv_kv_t *kv = reload(f->path, -EFBIG);
    nsrv_kv_destroy(&kv);
}

NSRV_TEST_MAIN(
    NULL, NULL, NSRV_FIXTURE_TEST(test_put_writes_file_and_bak),
    NSRV_FIXTURE_TEST(test_delete_missing_key_still_writes),
    NSRV_FIXTURE_TEST(test_null_value_persisted), NSRV_FIXTURE_TEST(test_load_java_written_file),
    NSRV_FIXTURE_TEST(test_load_missing_is_empty), NSRV_FIXTURE_TEST(test_load_corrupt_uses_bak),
    NSRV_FIXTURE_TEST(test_load_empty_file), NSRV_FIXTURE_TEST(test_load_corrupt_both_fails),
    NSRV_FIXTURE_TEST(test_load_unreadable), NSRV_FIXTURE_TEST(test_crash_between_write_and_rename),
    NSRV_FIXTURE_TEST(test_crash_on_delete), NSRV_FIXTURE_TEST(test_persist_failure),
    NSRV_FIXTURE_TEST(test_load_too_big))
