/* SPDX-License-Identifier: Apache-2.0 */
/* Socket addresses: literals, host:port text, and the text of an address. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/netaddr.h"
#include "testlib.h"

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

static void test_hostport_split(void **state) {
    (void)state;
    char host[16];
    uint16_t port = 0;
    assert_int_equal(nsrv_hostport_split("localhost:9876", host, sizeof host, &port), 0);
    assert_string_equal(host, "localhost");
    assert_int_equal(port, 9876);
    assert_int_equal(nsrv_hostport_split("[::1]:65535", host, sizeof host, &port), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 65535);
    /* The last ':' splits an unbracketed host. */
    assert_int_equal(nsrv_hostport_split("::1:80", host, sizeof host, &port), 0);
    assert_string_equal(host, "::1");
    const char *bad[] = {"",        "host",  ":80",   "h:",      "h:0",
                         "h:65536", "h:+80", "h: 80", "h:80 ",   "h:000080",
                         "[::1]80", "[::1]", "[]:80", "[::1:80", "0123456789abcdef:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (nsrv_hostport_split(bad[i], host, sizeof host, &port) != -EINVAL)
            fail_msg("accepted '%s'", bad[i]);
    }
    assert_int_equal(nsrv_hostport_split(NULL, host, sizeof host, &port), -EINVAL);
}

static void test_sockaddr_parse_and_format(void **state) {
    (void)state;
    struct sockaddr_storage ss;
    socklen_t len = 0;
    char text[NSRV_SOCKADDR_TEXT_MAX];
    assert_int_equal(nsrv_sockaddr_parse("127.0.0.2:9878", &ss, &len), 0);
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(len, sizeof(struct sockaddr_in));
    nsrv_sockaddr_format((struct sockaddr *)&ss, text, sizeof text);
    assert_string_equal(text, "127.0.0.2:9878");
    assert_int_equal(nsrv_sockaddr_parse("[fe80::1]:1", &ss, &len), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_int_equal(len, sizeof(struct sockaddr_in6));
    nsrv_sockaddr_format((struct sockaddr *)&ss, text, sizeof text);
    assert_string_equal(text, "[fe80::1]:1");
    /* Names, an IPv6 literal without brackets, an IPv4 literal in them. */
    const char *bad[] = {"localhost:1", "::1:80", "[127.0.0.1]:80", "1.2.3:4", "1.2.3.4:0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (nsrv_sockaddr_parse(bad[i], &ss, &len) != -EINVAL)
            fail_msg("accepted '%s'", bad[i]);
    }
    ss.ss_family = AF_UNIX;
    nsrv_sockaddr_format((struct sockaddr *)&ss, text, sizeof text);
    assert_string_equal(text, "?");
    nsrv_sockaddr_format(NULL, text, sizeof text);
    assert_string_equal(text, "?");
}

/* A dual-stack socket reports an IPv4 peer as ::ffff:a.b.c.d: the host is the IPv4 it stands
 * for, so a host:port built from it is the one an IPv4 client can use. */
static void test_sockaddr_host_unmaps_v4_mapped(void **state) {
    (void)state;
    struct sockaddr_storage ss;
    char host[NSRV_SOCKADDR_TEXT_MAX], text[NSRV_SOCKADDR_TEXT_MAX];
    assert_int_equal(nsrv_sockaddr_literal("::ffff:10.1.2.3", 9876, &ss), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    nsrv_sockaddr_host((struct sockaddr *)&ss, host, sizeof host);
    assert_string_equal(host, "10.1.2.3");
    nsrv_hostport_format(host, 9876, text, sizeof text);
    assert_string_equal(text, "10.1.2.3:9876");
    assert_int_equal(nsrv_sockaddr_literal("fe80::1", 1, &ss), 0);
    nsrv_sockaddr_host((struct sockaddr *)&ss, host, sizeof host);
    assert_string_equal(host, "fe80::1");
    nsrv_hostport_format(host, 1, text, sizeof text);
    assert_string_equal(text, "[fe80::1]:1");
    assert_int_equal(nsrv_sockaddr_literal("127.0.0.2", 2, &ss), 0);
    nsrv_sockaddr_host((struct sockaddr *)&ss, host, sizeof host);
    assert_string_equal(host, "127.0.0.2");
    ss.ss_family = AF_UNIX;
    nsrv_sockaddr_host((struct sockaddr *)&ss, host, sizeof host);
    assert_string_equal(host, "?");
    nsrv_sockaddr_host(NULL, host, sizeof host);
    assert_string_equal(host, "?");
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_literals), cmocka_unit_test(test_refused),
               cmocka_unit_test(test_hostport_split),
               cmocka_unit_test(test_sockaddr_parse_and_format),
               cmocka_unit_test(test_sockaddr_host_unmaps_v4_mapped))
