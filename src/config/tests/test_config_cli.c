/* SPDX-License-Identifier: Apache-2.0 */
/* Command-line parsing: mqnamesrv-compatible options and subcommands. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/common.h"
#include "nsrv/config.h"
#include "testlib.h"

#define ARGV(...) ((char *[]){"nsrvd", __VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){"nsrvd", __VA_ARGS__}) / sizeof(char *)))
#define PARSE(out, err, ...)                                                                       \
    nsrv_cli_parse(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (out), (err), sizeof(err))

static void test_no_args(void **state) {
    (void)state;
    nsrv_cli_t c;
    char err[128];
    char *argv[] = {"nsrvd", NULL};
    assert_int_equal(nsrv_cli_parse(1, argv, &c, err, sizeof err), 0);
    assert_null(c.config_file);
    assert_false(c.print_config);
    assert_false(c.help);
    assert_false(c.version);
    assert_null(c.subcommand);
}

static void test_config_file_forms(void **state) {
    (void)state;
    nsrv_cli_t c;
    char err[128];
    assert_int_equal(PARSE(&c, err, "-c", "/etc/a.properties"), 0);
    assert_string_equal(c.config_file, "/etc/a.properties");
    assert_int_equal(PARSE(&c, err, "-c/etc/b"), 0);
    assert_string_equal(c.config_file, "/etc/b");
    assert_int_equal(PARSE(&c, err, "--configFile", "x"), 0);
    assert_string_equal(c.config_file, "x");
    assert_int_equal(PARSE(&c, err, "--configFile=y"), 0);
    assert_string_equal(c.config_file, "y");
    assert_int_equal(PARSE(&c, err, "-configFile", "z"), 0);
    assert_string_equal(c.config_file, "z");
    assert_int_equal(PARSE(&c, err, "-c=w"), 0);
    assert_string_equal(c.config_file, "w");
}

static void test_flags(void **state) {
    (void)state;
    nsrv_cli_t c;
    char err[128];
    assert_int_equal(PARSE(&c, err, "-c", "f", "-p"), 0);
    assert_true(c.print_config);
    assert_string_equal(c.config_file, "f");
    assert_int_equal(PARSE(&c, err, "--printConfigItem"), 0);
    assert_true(c.print_config);
    assert_int_equal(PARSE(&c, err, "-h"), 0);
    assert_true(c.help);
    assert_int_equal(PARSE(&c, err, "--help"), 0);
    assert_true(c.help);
    assert_int_equal(PARSE(&c, err, "--version"), 0);
    assert_true(c.version);
    /* -n is accepted (shared ServerUtil option) and ignored. */
    assert_int_equal(PARSE(&c, err, "-n", "127.0.0.1:9876;127.0.0.2:9876", "-p"), 0);
    assert_string_equal(c.namesrv_addr, "127.0.0.1:9876;127.0.0.2:9876");
    assert_true(c.print_config);
    assert_int_equal(PARSE(&c, err, "--namesrvAddr=a:1"), 0);
    assert_string_equal(c.namesrv_addr, "a:1");
}

static void test_errors(void **state) {
    (void)state;
    nsrv_cli_t c;
    char err[128];
    assert_int_equal(PARSE(&c, err, "-x"), -EINVAL);
    assert_non_null(strstr(err, "-x"));
    assert_int_equal(PARSE(&c, err, "--bogus"), -EINVAL);
    assert_non_null(strstr(err, "--bogus"));
    assert_int_equal(PARSE(&c, err, "-c"), -EINVAL);
    assert_non_null(strstr(err, "missing argument"));
    assert_int_equal(PARSE(&c, err, "-c", "a", "-c", "b"), -EINVAL);
    assert_int_equal(PARSE(&c, err, "-c="), -EINVAL);
    assert_int_equal(PARSE(&c, err, "-p", "stray"), -EINVAL);
    assert_non_null(strstr(err, "stray"));
    assert_int_equal(PARSE(&c, err, "--help=yes"), -EINVAL);
    assert_int_equal(PARSE(&c, err, "-px"), -EINVAL);
    assert_int_equal(PARSE(&c, err, "-"), -EINVAL);
    assert_int_equal(PARSE(&c, err, "-p", "--", "x"), -EINVAL);
    assert_int_equal(PARSE(&c, err, "-p", "--"), 0);
}

static void test_subcommand(void **state) {
    (void)state;
    nsrv_cli_t c;
    char err[128];
    assert_int_equal(PARSE(&c, err, "keygen", "-o", "key.file"), 0);
    assert_string_equal(c.subcommand, "keygen");
    assert_int_equal(c.sub_argc, 2);
    assert_string_equal(c.sub_argv[0], "-o");
    assert_string_equal(c.sub_argv[1], "key.file");
    assert_null(c.sub_argv[2]);
    assert_null(c.config_file);
    assert_int_equal(PARSE(&c, err, "status"), 0);
    assert_string_equal(c.subcommand, "status");
    assert_int_equal(c.sub_argc, 0);
}

static void test_usage(void **state) {
    (void)state;
    char buf[2048] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    assert_non_null(f);
    nsrv_cli_usage(f);
    fclose(f);
    assert_non_null(strstr(buf, "--configFile"));
    assert_non_null(strstr(buf, "--printConfigItem"));
    assert_non_null(strstr(buf, "--version"));
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_no_args), cmocka_unit_test(test_config_file_forms),
               cmocka_unit_test(test_flags), cmocka_unit_test(test_errors),
               cmocka_unit_test(test_subcommand), cmocka_unit_test(test_usage))
