/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for src/base/fileio.c: atomic replace, .bak, crash between write
 * and rename, parent directory creation and capped reads. Each test works in
 * a fresh directory under /tmp. Also the writev of a rope (include/nsrv/rope.h).
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
#include "nsrv/fileio.h"
#include "nsrv/rope.h"
#include "testlib.h"

typedef struct {
    nsrv_test_dir_t dir;
} fixture_t;

static int setup(void **state) {
    return nsrv_test_fixture_new(state, sizeof(fixture_t), "fileio");
}

static int teardown(void **state) {
    nsrv_file_crash_hook = NULL;
    nsrv_test_fixture_free(state);
    return 0;
}

static void test_write_new_file(void **state) {
    fixture_t *f = *state;
    const char *p = nsrv_test_dir_join(&f->dir, "a.json");
    assert_int_equal(nsrv_file_write_atomic(p, "hello", 5, true), 0);
    nsrv_test_assert_file(p, "hello");
    /* Nothing to back up on the first write, and no temp file is left. */
    assert_false(nsrv_test_exists(nsrv_test_dir_join(&f->dir, "a.json.bak")));
    assert_false(nsrv_test_exists(nsrv_test_dir_join(&f->dir, "a.json.tmp")));
    assert_false(nsrv_test_exists(nsrv_test_dir_join(&f->dir, "a.json.bak.tmp")));
}

static void test_overwrite_keeps_bak(void **state) {
    fixture_t *f = *state;
    const char *p = nsrv_test_dir_join(&f->dir, "a.json");
    const char *bak = nsrv_test_dir_join(&f->dir, "a.json.bak");
    assert_int_equal(nsrv_file_write_atomic(p, "first", 5, true), 0);
    assert_int_equal(nsrv_file_write_atomic(p, "second, longer", 14, true), 0);
    nsrv_test_assert_file(p, "second, longer");
    nsrv_test_assert_file(bak, "first");
    /* The backup is the replaced file itself (a link, not a copy): no second write of a
     * large file; and the backup does not change with the file that replaced it. */
    struct stat before, after;
    assert_int_equal(stat(p, &before), 0);
    /* Shorter new content fully replaces the old one (no leftover tail). */
    assert_int_equal(nsrv_file_write_atomic(p, "3rd", 3, true), 0);
    assert_int_equal(stat(bak, &after), 0);
    assert_true(before.st_ino == after.st_ino);
    nsrv_test_assert_file(p, "3rd");
    nsrv_test_assert_file(bak, "second, longer");
    /* keep_bak=false leaves the .bak alone. */
    assert_int_equal(nsrv_file_write_atomic(p, "4th", 3, false), 0);
    nsrv_test_assert_file(p, "4th");
    nsrv_test_assert_file(bak, "second, longer");
    assert_false(nsrv_test_exists(nsrv_test_dir_join(&f->dir, "a.json.tmp")));
    assert_false(nsrv_test_exists(nsrv_test_dir_join(&f->dir, "a.json.bak.tmp")));
}

static void test_write_empty(void **state) {
    fixture_t *f = *state;
    const char *p = nsrv_test_dir_join(&f->dir, "empty");
    assert_int_equal(nsrv_file_write_atomic(p, NULL, 0, true), 0);
    nsrv_test_assert_file(p, "");
    assert_int_equal(nsrv_file_write_atomic(p, "x", 1, true), 0);
    nsrv_test_assert_file(nsrv_test_dir_join(&f->dir, "empty.bak"), "");
}

static int hook_calls;
static char hook_seen[256];

static int crash_hook(const char *tmp_path) {
    hook_calls++;
    snprintf(hook_seen, sizeof hook_seen, "%s", tmp_path);
    return -EIO;
}

static int pass_hook(const char *tmp_path) {
    (void)tmp_path;
    hook_calls++;
    return 0;
}

static void test_crash_before_rename_keeps_old(void **state) {
    fixture_t *f = *state;
    const char *p = nsrv_test_dir_join(&f->dir, "kv.json");
    const char *tmp = nsrv_test_dir_join(&f->dir, "kv.json.tmp");
    assert_int_equal(nsrv_file_write_atomic(p, "old complete", 12, true), 0);

    hook_calls = 0;
    nsrv_file_crash_hook = crash_hook;
    assert_int_equal(nsrv_file_write_atomic(p, "new", 3, true), -EIO);
    nsrv_file_crash_hook = NULL;
    assert_int_equal(hook_calls, 1);
    assert_string_equal(hook_seen, tmp);
    /* The main file is untouched; the "crash" left the synced temp file. */
    nsrv_test_assert_file(p, "old complete");
    nsrv_test_assert_file(tmp, "new");

    /* The next write overwrites the stale temp file and renames it away. */
    assert_int_equal(nsrv_file_write_atomic(p, "next", 4, true), 0);
    nsrv_test_assert_file(p, "next");
    nsrv_test_assert_file(nsrv_test_dir_join(&f->dir, "kv.json.bak"), "old complete");
    assert_false(nsrv_test_exists(tmp));
}

static void test_hook_returning_zero_continues(void **state) {
    fixture_t *f = *state;
    const char *p = nsrv_test_dir_join(&f->dir, "x");
    hook_calls = 0;
    nsrv_file_crash_hook = pass_hook;
    assert_int_equal(nsrv_file_write_atomic(p, "abc", 3, false), 0);
    nsrv_file_crash_hook = NULL;
    assert_int_equal(hook_calls, 1);
    nsrv_test_assert_file(p, "abc");
}

static void test_parent_dirs_created(void **state) {
    fixture_t *f = *state;
    const char *p = nsrv_test_dir_join(&f->dir, "a/b//c/d/file.json");
    assert_int_equal(nsrv_file_write_atomic(p, "{}", 2, true), 0);
    nsrv_test_assert_file(p, "{}");
    /* Existing directories are fine too. */
    assert_int_equal(nsrv_file_write_atomic(nsrv_test_dir_join(&f->dir, "a/b/other"), "1", 1, true),
                     0);
    nsrv_test_assert_file(nsrv_test_dir_join(&f->dir, "a/b/other"), "1");
}

static void test_relative_path(void **state) {
    fixture_t *f = *state;
    char cwd[512];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(f->dir.path), 0);
    int rc1 = nsrv_file_write_atomic("rel.json", "r", 1, true);
    int rc2 = nsrv_file_write_atomic("sub/rel.json", "s", 1, true);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc1, 0);
    assert_int_equal(rc2, 0);
    nsrv_test_assert_file(nsrv_test_dir_join(&f->dir, "rel.json"), "r");
    nsrv_test_assert_file(nsrv_test_dir_join(&f->dir, "sub/rel.json"), "s");
}

static void test_unwritable_parent_fails(void **state) {
    fixture_t *f = *state;
    const char *file = nsrv_test_dir_join(&f->dir, "plain");
    assert_int_equal(nsrv_file_write_atomic(file, "x", 1, false), 0);
    /* A parent that is a regular file cannot be created or written under. */
    int rc = nsrv_file_write_atomic(nsrv_test_dir_join(&f->dir, "plain/sub/kv.json"), "y", 1, true);
    assert_true(rc < 0);
    rc = nsrv_file_write_atomic(nsrv_test_dir_join(&f->dir, "plain/kv.json"), "y", 1, true);
    assert_true(rc < 0);
    nsrv_test_assert_file(file, "x");
    /* A target that is a directory cannot be replaced (and its .bak cannot be read). */
    assert_int_equal(mkdir(nsrv_test_dir_join(&f->dir, "isdir"), 0755), 0);
    assert_true(nsrv_file_write_atomic(nsrv_test_dir_join(&f->dir, "isdir"), "z", 1, true) < 0);
    assert_true(nsrv_file_write_atomic(nsrv_test_dir_join(&f->dir, "isdir"), "z", 1, false) < 0);
    assert_false(nsrv_test_exists(nsrv_test_dir_join(&f->dir, "isdir.tmp")));
    assert_int_equal(nsrv_file_write_atomic("", "z", 1, false), -EINVAL);
}

static void test_read_all_caps(void **state) {
    fixture_t *f = *state;
    const char *p = nsrv_test_dir_join(&f->dir, "cap");
    char *data = (char *)0x1;
    size_t len = 77;
    assert_int_equal(nsrv_file_read_all(nsrv_test_dir_join(&f->dir, "missing"), 100, &data, &len),
                     -ENOENT);
    /* Out-parameters are untouched on error. */
    assert_ptr_equal(data, (char *)0x1);
    assert_int_equal(len, 77);

    assert_int_equal(nsrv_file_write_atomic(p, "0123456789", 10, false), 0);
    assert_int_equal(nsrv_file_read_all(p, 10, &data, &len), 0);
    assert_int_equal(len, 10);
    assert_string_equal(data, "0123456789");
    nsrv_free(data);
    assert_int_equal(nsrv_file_read_all(p, 9, &data, &len), -EFBIG);
    assert_int_equal(nsrv_file_read_all(p, 0, &data, &len), -EFBIG);

    assert_int_equal(nsrv_file_write_atomic(p, NULL, 0, false), 0);
    assert_int_equal(nsrv_file_read_all(p, 0, &data, &len), 0);
    assert_int_equal(len, 0);
    assert_string_equal(data, "");
    nsrv_free(data);

    assert_int_equal(nsrv_file_read_all(f->dir.path, 100, &data, &len), -EISDIR);
}

static void test_read_all_large_and_unsized(void **state) {
    fixture_t *f = *state;
    const char *p = nsrv_test_dir_join(&f->dir, "big");
    size_t n = 100000;
    char *src = malloc(n);
    for (size_t i = 0; i < n; i++)
        src[i] = (char)('a' + i % 26);
    assert_int_equal(nsrv_file_write_atomic(p, src, n, false), 0);
    char *data;
    size_t len;
    assert_int_equal(nsrv_file_read_all(p, n, &data, &len), 0);
    assert_int_equal(len, n);
    assert_memory_equal(data, src, n);
    nsrv_free(data);
    free(src);

    /* /proc files report size 0, so this exercises the growth path and the cap. */
    assert_int_equal(nsrv_file_read_all("/proc/self/status", 1 << 20, &data, &len), 0);
    assert_true(len > 100);
    assert_int_equal(strlen(data), len);
    nsrv_free(data);
    assert_int_equal(nsrv_file_read_all("/proc/self/status", 50, &data, &len), -EFBIG);
}

/* A rope of more pieces than one writev takes (IOV_MAX), empty ones and a big one among
 * them, is written as its concatenation, with the .bak rules of the one-block write. */
static void test_write_iov_rope_pieces_in_order(void **state) {
    fixture_t *f = *state;
    const char *p = nsrv_test_dir_join(&f->dir, "rope.json");
    size_t big_len = 1 << 20;
    char *big = malloc(big_len);
    for (size_t i = 0; i < big_len; i++)
        big[i] = (char)('A' + i % 26);
    nsrv_rope_t r = NSRV_ROPE_INIT;
    nsrv_buf_t want = NSRV_BUF_INIT;
    for (int i = 0; i < 3000; i++) {
        char own[16];
        int n = snprintf(own, sizeof own, "<%d>", i);
        nsrv_buf_append(&r.own, own, (size_t)n);
        nsrv_buf_append(&want, own, (size_t)n);
        size_t ref_len = i == 1500 ? big_len : (size_t)(i % 7); /* 0: an empty piece */
        nsrv_rope_ref(&r, big + i % 26, ref_len - (i == 1500 ? 26 : 0));
        nsrv_buf_append(&want, big + i % 26, ref_len - (i == 1500 ? 26 : 0));
    }
    assert_int_equal(nsrv_rope_len(&r), want.len);
    size_t n = 0;
    struct iovec *iov = nsrv_rope_iov(&r, &n);
    assert_true(n > 1024);
    assert_int_equal(nsrv_file_write_atomic(p, "old", 3, true), 0);
    assert_int_equal(nsrv_file_write_atomic_iov(p, iov, n, true), 0);
    nsrv_free(iov);
    char *data;
    size_t len;
    assert_int_equal(nsrv_file_read_all(p, 4 << 20, &data, &len), 0);
    assert_int_equal(len, want.len);
    assert_memory_equal(data, want.data, len);
    nsrv_free(data);
    nsrv_test_assert_file(nsrv_test_dir_join(&f->dir, "rope.json.bak"), "old");
    nsrv_buf_t flat = NSRV_BUF_INIT;
    nsrv_rope_flatten(&r, &flat);
    assert_int_equal(flat.len, want.len);
    assert_memory_equal(flat.data, want.data, want.len);
    nsrv_buf_deinit(&flat);
    nsrv_buf_deinit(&want);
    nsrv_rope_deinit(&r);
    free(big);
}

/* Ids name themselves where the system has no name: the message still says who owns a file. */
static void test_owner_names(void **state) {
    (void)state;
    char user[64], group[64];
    nsrv_file_owner_names(0, 0, user, sizeof user, group, sizeof group);
    assert_string_equal(user, "root");
    assert_string_equal(group, "root");
    nsrv_file_owner_names(3999999, 3999998, user, sizeof user, group, sizeof group);
    assert_string_equal(user, "3999999");
    assert_string_equal(group, "3999998");
}

NSRV_TEST_MAIN(NULL, NULL, NSRV_FIXTURE_TEST(test_write_new_file),
               NSRV_FIXTURE_TEST(test_write_iov_rope_pieces_in_order),
               NSRV_FIXTURE_TEST(test_overwrite_keeps_bak), NSRV_FIXTURE_TEST(test_write_empty),
               NSRV_FIXTURE_TEST(test_crash_before_rename_keeps_old),
               NSRV_FIXTURE_TEST(test_hook_returning_zero_continues),
               NSRV_FIXTURE_TEST(test_parent_dirs_created), NSRV_FIXTURE_TEST(test_relative_path),
               NSRV_FIXTURE_TEST(test_unwritable_parent_fails),
               NSRV_FIXTURE_TEST(test_read_all_caps),
               NSRV_FIXTURE_TEST(test_read_all_large_and_unsized),
               cmocka_unit_test(test_owner_names))
