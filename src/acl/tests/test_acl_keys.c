/* SPDX-License-Identifier: Apache-2.0 */
/* The adminAclFile: its line format, its errors (never quoting a secret) and
 * the permission check on the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "nsrv/acl.h"
#include "testlib.h"

static void test_lines(void **state) {
    (void)state;
    const char *text = "# admins\n"
                       "\n"
                       "  rocketmq2 = 12345678  \r\n"
                       "ops=s3cr=et\n"
                       "\t# indented comment\n"
                       "last=no-newline";
    nsrv_acl_keys_t *k = NULL;
    char err[200] = "";
    assert_int_equal(nsrv_acl_keys_parse(text, strlen(text), &k, err, sizeof err), 0);
    assert_int_equal(nsrv_acl_keys_count(k), 3);
    assert_string_equal(nsrv_acl_keys_secret(k, "rocketmq2"), "12345678");
    assert_string_equal(nsrv_acl_keys_secret(k, "ops"), "s3cr=et"); /* split at the first '=' */
    assert_string_equal(nsrv_acl_keys_secret(k, "last"), "no-newline");
    assert_null(nsrv_acl_keys_secret(k, "nobody"));
    assert_null(nsrv_acl_keys_secret(k, "rocketmq"));
    nsrv_acl_keys_free(&k);
    assert_null(k);
    assert_int_equal(nsrv_acl_keys_parse("", 0, &k, err, sizeof err), 0);
    assert_int_equal(nsrv_acl_keys_count(k), 0);
    nsrv_acl_keys_free(&k);
}

static void bad(const char *text, size_t len, const char *needle, const char *secret) {
    nsrv_acl_keys_t *k = NULL;
    char err[200] = "";
    assert_int_equal(nsrv_acl_keys_parse(text, len, &k, err, sizeof err), -1);
    assert_null(k);
    if (!strstr(err, needle))
        fail_msg("error '%s' does not name '%s'", err, needle);
    if (secret && strstr(err, secret))
        fail_msg("error '%s' quotes the secret", err);
}

static void test_errors(void **state) {
    (void)state;
    bad("a=1\njustakey\n", 13, "line 2: expected accessKey=secretKey", NULL);
    bad("=hunter2\n", 9, "line 1: empty accessKey", "hunter2");
    bad("a=  \n", 5, "line 1: empty secretKey", NULL);
    bad("a=hunter2\nb=x\na=other\n", 22, "line 3: accessKey 'a' is given twice", "hunter2");
    bad("a=hun\0ter2\n", 11, "line 1 contains a NUL", "hun");
}

static void test_file_mode(void **state) {
    (void)state;
    nsrv_test_dir_t d;
    assert_int_equal(nsrv_test_dir_make(&d, "acl_keys"), 0);
    const char *path = nsrv_test_dir_join(&d, "acl.keys");
    nsrv_test_write_file(path, "rocketmq2=12345678\n");
    nsrv_acl_keys_t *k = NULL;
    char err[300] = "";
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(nsrv_acl_keys_load(path, &k, err, sizeof err), -1);
    assert_non_null(strstr(err, "mode 0644"));
    assert_null(strstr(err, "12345678"));
    assert_int_equal(chmod(path, 0640), 0);
    assert_int_equal(nsrv_acl_keys_load(path, &k, err, sizeof err), -1);
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(nsrv_acl_keys_load(path, &k, err, sizeof err), 0);
    assert_string_equal(nsrv_acl_keys_secret(k, "rocketmq2"), "12345678");
    nsrv_acl_keys_free(&k);
    assert_int_equal(chmod(path, 0400), 0);
    assert_int_equal(nsrv_acl_keys_load(path, &k, err, sizeof err), 0);
    nsrv_acl_keys_free(&k);
    /* Parse errors name the file and the line. */
    assert_int_equal(chmod(path, 0600), 0);
    nsrv_test_write_file(path, "ok=1\nbroken\n");
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(nsrv_acl_keys_load(path, &k, err, sizeof err), -1);
    assert_non_null(strstr(err, "acl.keys"));
    assert_non_null(strstr(err, "line 2"));
    /* Missing file, directory. */
    assert_int_equal(nsrv_acl_keys_load(nsrv_test_dir_join(&d, "none"), &k, err, sizeof err), -1);
    assert_non_null(strstr(err, "No such file"));
    assert_int_equal(nsrv_acl_keys_load(d.path, &k, err, sizeof err), -1);
    nsrv_test_dir_remove(&d);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_lines), cmocka_unit_test(test_errors),
               cmocka_unit_test(test_file_mode))
