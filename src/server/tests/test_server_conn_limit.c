/* SPDX-License-Identifier: Apache-2.0 */
/* How many connections a descriptor limit allows (src/server/conn_limit.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../server_int.h"
#include "testlib.h"

static void test_reserve_is_an_eighth_within_bounds(void **state) {
    (void)state;
    assert_int_equal(nsrv__fd_reserve(200), 64);    /* at least 64 */
    assert_int_equal(nsrv__fd_reserve(1024), 128);  /* an eighth */
    assert_int_equal(nsrv__fd_reserve(8192), 1024); /* an eighth, at the bound */
    assert_int_equal(nsrv__fd_reserve(20000), 1024);
    assert_int_equal(nsrv__fd_reserve(1048576), 1024); /* at most 1024 */
}

static void test_connections_for_descriptors(void **state) {
    (void)state;
    assert_int_equal(nsrv__conns_for_fds(20000), 18976); /* these benchmark machines: 18,000 fit */
    assert_int_equal(nsrv__conns_for_fds(1024), 896);    /* a default shell's soft limit */
    assert_int_equal(nsrv__conns_for_fds(65536), 64512);
    assert_int_equal(nsrv__conns_for_fds(101024), 100000); /* what 100,000 clients need */
    assert_int_equal(nsrv__conns_for_fds(1048576), 1047552);
    /* A limit under the reserve still serves one client rather than none. */
    assert_int_equal(nsrv__conns_for_fds(64), 1);
    assert_int_equal(nsrv__conns_for_fds(10), 1);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_reserve_is_an_eighth_within_bounds),
               cmocka_unit_test(test_connections_for_descriptors))
