/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test support shared by the cmocka tests (linked into every nsrv_add_test
 * binary): scratch directories and whole-file checks. Not part of nsrvd.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A scratch directory: "<TMPDIR or /tmp>/nsrv-<name>-XXXXXX". */
typedef struct {
    char path[96];
} nsrv_test_dir_t;

/* Creates a fresh directory; 0, or -1 (for a cmocka setup's return). */
int nsrv_test_dir_make(nsrv_test_dir_t *d, const char *name);
/* Removes the directory and everything below it (links are not followed). */
void nsrv_test_dir_remove(const nsrv_test_dir_t *d);
/*
 * A per-test fixture struct of `size` bytes whose first member is an nsrv_test_dir_t: allocated
 * zeroed with a fresh "<name>" directory into *state; 0, or -1 (for a cmocka setup's return).
 * nsrv_test_fixture_free removes the directory and frees it.
 */
int nsrv_test_fixture_new(void **state, size_t size, const char *name);
void nsrv_test_fixture_free(void **state);
/* "<dir>/<name>" in one of eight rotating static buffers: valid for the next seven calls. */
const char *nsrv_test_dir_join(const nsrv_test_dir_t *d, const char *name);

bool nsrv_test_exists(const char *path);
/* The file's bytes with a NUL after them (free with nsrv_free), or NULL if unreadable. */
char *nsrv_test_read_file(const char *path);
/* Asserts that path holds exactly text. */
void nsrv_test_assert_file(const char *path, const char *text);
/* Writes text to path (atomically, no backup), asserting success. */
void nsrv_test_write_file(const char *path, const char *text);

/*
 * The main() of a cmocka test file: runs the listed tests (cmocka_unit_test(fn), ...) as one
 * group, between group_setup and group_teardown (NULL for none). The file includes <cmocka.h>.
 */
#define NSRV_TEST_MAIN(group_setup, group_teardown, ...)                                           \
    int main(void) {                                                                               \
        const struct CMUnitTest tests[] = {__VA_ARGS__};                                           \
        return cmocka_run_group_tests(tests, group_setup, group_teardown);                         \
    }

/*
 * A fixture that is just a scratch directory: defines `tmp` and the setup()/teardown() that
 * make a fresh "<name>" directory and remove it (as the group's or each test's fixture).
 */
#define NSRV_TEST_DIR_FIXTURE(name)                                                                \
    static nsrv_test_dir_t tmp;                                                                    \
    static int setup(void **state) {                                                               \
        (void)state;                                                                               \
        return nsrv_test_dir_make(&tmp, name);                                                     \
    }                                                                                              \
    static int teardown(void **state) {                                                            \
        (void)state;                                                                               \
        nsrv_test_dir_remove(&tmp);                                                                \
        return 0;                                                                                  \
    }

/* A test run between the file's own setup() and teardown() (its per-test fixture). */
#define NSRV_FIXTURE_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
