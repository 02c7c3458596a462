/* SPDX-License-Identifier: Apache-2.0 */
/* Test support: scratch directories and whole-file checks (testlib.h). */
#include "testlib.h"

#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "nsrv/alloc.h"
#include "nsrv/common.h"
#include "nsrv/fileio.h"

int nsrv_test_dir_make(nsrv_test_dir_t *d, const char *name) {
    const char *tmp = getenv("TMPDIR");
    int n =
        snprintf(d->path, sizeof d->path, "%s/nsrv-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (n < 0 || (size_t)n >= sizeof d->path)
        return -1;
    return mkdtemp(d->path) ? 0 : -1;
}

int nsrv_test_fixture_new(void **state, size_t size, const char *name) {
    nsrv_test_dir_t *d = calloc(1, size);
    if (!d || nsrv_test_dir_make(d, name) != 0) {
        free(d);
        return -1;
    }
    *state = d;
    return 0;
}

void nsrv_test_fixture_free(void **state) {
    nsrv_test_dir_remove(*state);
    free(*state);
    *state = NULL;
}

static int remove_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

void nsrv_test_dir_remove(const nsrv_test_dir_t *d) {
    nftw(d->path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *nsrv_test_dir_join(const nsrv_test_dir_t *d, const char *name) {
    static char buf[8][160];
    static unsigned i;
    char *b = buf[i++ % 8];
    snprintf(b, sizeof buf[0], "%s/%s", d->path, name);
    return b;
}

bool nsrv_test_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

char *nsrv_test_read_file(const char *path) {
    char *data = NULL;
    size_t len = 0;
    return nsrv_file_read_all(path, 1 << 20, &data, &len) == 0 ? data : NULL;
}

void nsrv_test_assert_file(const char *path, const char *text) {
    char *data = NULL;
    size_t len = 0;
    int rc = nsrv_file_read_all(path, 1 << 20, &data, &len);
    if (rc != 0)
        fail_msg("reading '%s': %s", path, nsrv_strerror(rc));
    assert_int_equal(len, strlen(text));
    assert_memory_equal(data, text, len);
    assert_int_equal(data[len], '\0');
    nsrv_free(data);
}

void nsrv_test_write_file(const char *path, const char *text) {
    assert_int_equal(nsrv_file_write_atomic(path, text, strlen(text), false), 0);
}
