/* SPDX-License-Identifier: Apache-2.0 */
/* The address service's configuration parsers (src/server/nsaddr.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/alloc.h"
#include "../nsaddr.h"
#include "testlib.h"

static void test_valid_addresses(void **state) {
    (void)state;
    assert_true(nsrv_nsaddr_valid("10.0.0.2:9876"));
    assert_true(nsrv_nsaddr_valid("nsrvd-1:9876"));
    assert_true(nsrv_nsaddr_valid("ns1.example.com:1"));
    assert_true(nsrv_nsaddr_valid("[::1]:9876"));
    /* Nothing that could split or break the ';'-separated list, no missing parts. */
    const char *bad[] = {"",          "host",     "host:",  ":9876",      "a;b:9876",
                         "a,b:9876",  "a b:9876", "host:0", "host:65536", "host:98x",
                         "[zz]:9876", "a\n:1",    "a/b:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(nsrv_nsaddr_valid(bad[i]));
    char longname[NSRV_NSADDR_MAX + 8];
    memset(longname, 'a', sizeof longname);
    strcpy(longname + NSRV_NSADDR_MAX - 2, ":1"); /* NSRV_NSADDR_MAX bytes: one too many */
    assert_false(nsrv_nsaddr_valid(longname));
}

static void test_parse_map(void **state) {
    (void)state;
    nsrv_nsaddr_map_t *m = nsrv_malloc(sizeof *m);
    char err[200];
    assert_int_equal(nsrv_nsaddr_parse_map("2@10.0.0.2:9876,254@ns-x:1", m, err, sizeof err), 0);
    assert_string_equal(m->by_id[2], "10.0.0.2:9876");
    assert_string_equal(m->by_id[254], "ns-x:1");
    assert_string_equal(m->by_id[3], "");
    assert_int_equal(nsrv_nsaddr_parse_map("", m, err, sizeof err), 0);
    assert_string_equal(m->by_id[2], "");
    const char *bad[] = {"2@a:1,2@b:1", "0@a:1",  "255@a:1", "x@a:1", "2@",   "2@a;b:1",
                         "2a@a:1",      "2@a:1,", ",2@a:1",  "@a:1",  "2:a:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_not_equal(nsrv_nsaddr_parse_map(bad[i], m, err, sizeof err), 0);
        assert_non_null(strstr(err, "gossipPeerAdvertisedAddresses"));
    }
    nsrv_free(m);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_valid_addresses), cmocka_unit_test(test_parse_map))
