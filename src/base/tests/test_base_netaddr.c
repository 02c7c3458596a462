/* SPDX-License-Identifier: Apache-2.0 */
/* Literal socket addresses for the listeners. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "nsrv/netaddr.h"

static void test_literals(void **state) {
    (void)state;
    struct sockaddr_storage ss;
    assert_int_equal(nsrv_sockaddr_literal("127.0.0.1", 9876, &ss), 0);
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 9876);
    assert_int_equal(nsrv_sockaddr_literal("::1", 0, &ss), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_int_equal(nsrv_sockaddr_literal("0.0.0.0", 65535, &ss), 0);
}

static void test_refused(void **state) {
    (void)state;
    struct sockaddr_storage ss;
    const char *bad[] = {"", "localhost", "1.2.3", "1.2.3.4.5", "::g", "1.2.3.4 ", NULL};
    for (int i = 0; bad[i]; i++)
        assert_int_equal(nsrv_sockaddr_literal(bad[i], 1, &ss), -EINVAL);
    assert_int_equal(nsrv_sockaddr_literal(NULL, 1, &ss), -EINVAL);
    assert_int_equal(nsrv_sockaddr_literal("127.0.0.1", 65536, &ss), -EINVAL);
    assert_int_equal(nsrv_sockaddr_literal("127.0.0.1", -1, &ss), -EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
