/* SPDX-License-Identifier: Apache-2.0 */
/* Command-line parsing: mqnamesrv-compatible options and subcommands. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/alloc.h"
#include "nsrv/common.h"
#include "nsrv/config.h"
#include "testlib.h"

#define ARGV(...) ((char *[]){"nsrvd", __VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){"nsrvd", __VA_ARGS__}) / sizeof(char *)))
#define PARSE(t, ...)                                                                              \
    nsrv_cli_parse(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), &(t)->c, (t)->err, sizeof((t)->err))

/* The per-test fixture: what a parse fills in, zeroed before each test. */
typedef struct {
    nsrv_cli_t c;
    char err[128];
} cli_fix_t;

static int cli_setup(void **state) {
    *state = nsrv_calloc(1, sizeof(cli_fix_t));
    return 0;
}

static int cli_teardown(void **state) {
    nsrv_free(*state);
    return 0;
}

static void test_no_args(void **state) {
    cli_fix_t *t = *state;
    char *argv[] = {"nsrvd", NULL};
    assert_int_equal(nsrv_cli_parse(1, argv, &t->c, t->err, sizeof t->err), 0);
    assert_null(t->c.config_file);
    assert_false(t->c.print_config);
    assert_false(t->c.help);
    assert_false(t->c.version);
    assert_null(t->c.subcommand);
}

static void test_config_file_forms(void **state) {
    cli_fix_t *t = *state;
    assert_int_equal(PARSE(t, "-c", "/etc/a.properties"), 0);
    assert_string_equal(t->c.config_file, "/etc/a.properties");
    assert_int_equal(PARSE(t, "-c/etc/b"), 0);
    assert_string_equal(t->c.config_file, "/etc/b");
    assert_int_equal(PARSE(t, "--configFile", "x"), 0);
    assert_string_equal(t->c.config_file, "x");
    assert_int_equal(PARSE(t, "--configFile=y"), 0);
    assert_string_equal(t->c.config_file, "y");
    assert_int_equal(PARSE(t, "-configFile", "z"), 0);
    assert_string_equal(t->c.config_file, "z");
    assert_int_equal(PARSE(t, "-c=w"), 0);
    assert_string_equal(t->c.config_file, "w");
}

static void test_flags(void **state) {
    cli_fix_t *t = *state;
    assert_int_equal(PARSE(t, "-c", "f", "-p"), 0);
    assert_true(t->c.print_config);
    assert_string_equal(t->c.config_file, "f");
    assert_int_equal(PARSE(t, "--printConfigItem"), 0);
    assert_true(t->c.print_config);
    assert_int_equal(PARSE(t, "-h"), 0);
    assert_true(t->c.help);
    assert_int_equal(PARSE(t, "--help"), 0);
    assert_true(t->c.help);
    assert_int_equal(PARSE(t, "--version"), 0);
    assert_true(t->c.version);
    /* -n is accepted (shared ServerUtil option) and ignored. */
    assert_int_equal(PARSE(t, "-n", "127.0.0.1:9876;127.0.0.2:9876", "-p"), 0);
    assert_string_equal(t->c.namesrv_addr, "127.0.0.1:9876;127.0.0.2:9876");
    assert_true(t->c.print_config);
    assert_int_equal(PARSE(t, "--namesrvAddr=a:1"), 0);
    assert_string_equal(t->c.namesrv_addr, "a:1");
}

static void test_errors(void **state) {
    cli_fix_t *t = *state;
    assert_int_equal(PARSE(t, "-x"), -EINVAL);
    assert_non_null(strstr(t->err, "-x"));
    assert_int_equal(PARSE(t, "--bogus"), -EINVAL);
    assert_non_null(strstr(t->err, "--bogus"));
    assert_int_equal(PARSE(t, "-c"), -EINVAL);
    assert_non_null(strstr(t->err, "missing argument"));
    assert_int_equal(PARSE(t, "-c", "a", "-c", "b"), -EINVAL);
    assert_int_equal(PARSE(t, "-c="), -EINVAL);
    assert_int_equal(PARSE(t, "-p", "stray"), -EINVAL);
    assert_non_null(strstr(t->err, "stray"));
    assert_int_equal(PARSE(t, "--help=yes"), -EINVAL);
    assert_int_equal(PARSE(t, "-px"), -EINVAL);
    assert_int_equal(PARSE(t, "-"), -EINVAL);
    assert_int_equal(PARSE(t, "-p", "--", "x"), -EINVAL);
    assert_int_equal(PARSE(t, "-p", "--"), 0);
}

static void test_subcommand(void **state) {
    cli_fix_t *t = *state;
    assert_int_equal(PARSE(t, "keygen", "-o", "key.file"), 0);
    assert_string_equal(t->c.subcommand, "keygen");
    assert_int_equal(t->c.sub_argc, 2);
    assert_string_equal(t->c.sub_argv[0], "-o");
    assert_string_equal(t->c.sub_argv[1], "key.file");
    assert_null(t->c.sub_argv[2]);
    assert_null(t->c.config_file);
    assert_int_equal(PARSE(t, "status"), 0);
    assert_string_equal(t->c.subcommand, "status");
    assert_int_equal(t->c.sub_argc, 0);
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

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test_setup_teardown(test_no_args, cli_setup, cli_teardown),
               cmocka_unit_test_setup_teardown(test_config_file_forms, cli_setup, cli_teardown),
               cmocka_unit_test_setup_teardown(test_flags, cli_setup, cli_teardown),
               cmocka_unit_test_setup_teardown(test_errors, cli_setup, cli_teardown),
               cmocka_unit_test_setup_teardown(test_subcommand, cli_setup, cli_teardown),
               cmocka_unit_test(test_usage))
