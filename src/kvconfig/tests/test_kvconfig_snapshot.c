/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for src/kvconfig/kv_snapshot.c: a clone encodes exactly as the
 * table did when it was taken, outlives changes to and the end of the table
 * (its shared value texts are reference counted; ASan checks), and a table with
 * deferred persistence never touches its file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsrv/buf.h"
#include "nsrv/kv.h"
#include "nsrv/rope.h"
#include "testlib.h"

static char *encode(const nsrv_kv_t *kv) {
    nsrv_buf_t b = NSRV_BUF_INIT;
    nsrv_kv_encode_file(kv, &b);
    char *s = strdup(b.data ? b.data : "");
    nsrv_buf_deinit(&b);
    return s;
}

static void test_clone_is_a_frozen_copy(void **state) {
    (void)state;
    nsrv_kv_t *kv = nsrv_kv_create(NULL);
    assert_int_equal(nsrv_kv_put(kv, "A", "k1", "v1"), 0);
    assert_int_equal(nsrv_kv_put(kv, "B", "k2", "v2"), 0);
    assert_int_equal(nsrv_kv_put(kv, "A", "k3", NULL), 0); /* null: not encoded */
    assert_int_equal(nsrv_kv_put(kv, "C", "gone", "x"), 0);
    assert_int_equal(nsrv_kv_delete(kv, "C", "gone"), 0); /* emptied namespace stays as {} */
    char *before = encode(kv);
    nsrv_kv_t *copy = nsrv_kv_clone(kv);
    assert_null(nsrv_kv_path(copy));
    assert_int_equal(nsrv_kv_generation(copy), nsrv_kv_generation(kv));

    /* Changing or freeing the original leaves the copy as it was. */
    assert_int_equal(nsrv_kv_put(kv, "A", "k1", "changed"), 0);
    assert_int_equal(nsrv_kv_put(kv, "D", "new", "n"), 0);
    nsrv_kv_destroy(&kv);
    char *after = encode(copy);
    assert_string_equal(after, before);
    assert_string_equal(after, "{\"configTable\":{\"A\":{\"k1\":\"v1\"},\"B\":{\"k2\":\"v2\"},"
                               "\"C\":{}}}");
    nsrv_kv_destroy(&copy);
    free(before);
    free(after);
}

static void test_deferred_table_never_writes_its_file(void **state) {
    (void)state;
    nsrv_test_dir_t dir;
    assert_int_equal(nsrv_test_dir_make(&dir, "kvsnap"), 0);
    const char *path = nsrv_test_dir_join(&dir, "kv.json");
    nsrv_kv_t *kv = nsrv_kv_create(path);
    nsrv_kv_defer_persist(kv);
    assert_string_equal(nsrv_kv_path(kv), path);
    assert_int_equal(nsrv_kv_put(kv, "N", "k", "v"), 0);
    assert_int_equal(nsrv_kv_delete(kv, "N", "k"), 0);
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0);
    nsrv_kv_destroy(&kv);
    nsrv_test_dir_remove(&dir);
}

static char *flatten(const nsrv_kv_t *kv, size_t *ext_bytes) {
    nsrv_rope_t r = NSRV_ROPE_INIT;
    nsrv_kv_encode_file_rope(kv, &r);
    *ext_bytes = r.ext_bytes;
    nsrv_buf_t b = NSRV_BUF_INIT;
    nsrv_rope_flatten(&r, &b);
    nsrv_rope_deinit(&r);
    char *s = strdup(b.data);
    nsrv_buf_deinit(&b);
    return s;
}

/* The writer's rope encoding is the file text byte for byte; big values (plain or needing
 * escapes) are referenced, not copied, and the escaped form is made once and reused. */
static void test_rope_encoding_is_the_file_text(void **state) {
    (void)state;
    size_t big = NSRV_KV_VALUE_REF_MIN + 100;
    char *plain = malloc(big + 1), *esc = malloc(big + 1);
    for (size_t i = 0; i < big; i++) {
        plain[i] = (char)('a' + i % 26);
        esc[i] = "q\"\\\n\x01/\xE4\xB8\xAD"[i % 9]; /* quotes, controls, UTF-8 */
    }
    plain[big] = esc[big] = '\0';
    esc[big - 1] = '\xFF'; /* ill-formed at the end: written as U+FFFD */
    nsrv_kv_t *kv = nsrv_kv_create(NULL);
    assert_int_equal(nsrv_kv_put(kv, "A", "small", "v\"1"), 0);
    assert_int_equal(nsrv_kv_put(kv, "A", "plain", plain), 0);
    assert_int_equal(nsrv_kv_put(kv, "A", "null", NULL), 0);
    assert_int_equal(nsrv_kv_put(kv, "B", "esc", esc), 0);
    assert_int_equal(nsrv_kv_put(kv, "C", "gone", "x"), 0);
    assert_int_equal(nsrv_kv_delete(kv, "C", "gone"), 0);
    char *want = encode(kv);
    nsrv_kv_t *copy = nsrv_kv_clone(kv);
    size_t ext1 = 0, ext2 = 0;
    char *first = flatten(copy, &ext1);
    char *again = flatten(kv, &ext2); /* the cached forms, through the shared values */
    assert_string_equal(first, want);
    assert_string_equal(again, want);
    /* plain: the text itself; esc: its escaped form, longer than the text. */
    assert_true(ext1 > 2 * big);
    assert_int_equal(ext2, ext1);
    assert_true(strlen(want) - ext1 < 200);
    nsrv_kv_destroy(&copy);
    nsrv_kv_destroy(&kv);
    free(want);
    free(first);
    free(again);
    free(plain);
    free(esc);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_clone_is_a_frozen_copy),
               cmocka_unit_test(test_rope_encoding_is_the_file_text),
               cmocka_unit_test(test_deferred_table_never_writes_its_file))
