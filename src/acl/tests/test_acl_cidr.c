/* SPDX-License-Identifier: Apache-2.0 */
/* CIDR allow lists: parsing (with the errors an operator sees) and matching,
 * IPv4, IPv6 and IPv4-mapped IPv6 peers. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/acl.h"
#include "testlib.h"

static struct sockaddr_storage addr_of(const char *ip) {
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    if (strchr(ip, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        assert_int_equal(inet_pton(AF_INET6, ip, &a->sin6_addr), 1);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, ip, &a->sin_addr), 1);
    }
    return ss;
}

static bool matches(const char *list, const char *ip) {
    nsrv_cidr_list_t l;
    char err[200] = "";
    if (nsrv_cidr_list_parse(list, strlen(list), &l, err, sizeof err) != 0)
        fail_msg("'%s' did not parse: %s", list, err);
    struct sockaddr_storage ss = addr_of(ip);
    bool m = nsrv_cidr_list_match(&l, (const struct sockaddr *)&ss);
    nsrv_cidr_list_free(&l);
    return m;
}

static void refused(const char *list, const char *needle) {
    nsrv_cidr_list_t l;
    char err[200] = "";
    assert_int_equal(nsrv_cidr_list_parse(list, strlen(list), &l, err, sizeof err), -1);
    assert_null(l.v);
    if (!strstr(err, needle))
        fail_msg("error for '%s' is '%s', expected it to name '%s'", list, err, needle);
}

/* Rules and peers: IPv4 rules (never admitting a native IPv6 peer), then IPv6 and mapped ones. */
static const struct {
    enum { V4, V6 } rules;
    const char *list, *ip;
    bool match;
} match_cases[] = {
    {V4, "10.0.0.0/8", "10.200.3.4", true},
    {V4, "10.0.0.0/8", "11.0.0.1", false},
    {V4, "192.168.1.7", "192.168.1.7", true},
    {V4, "192.168.1.7", "192.168.1.8", false},
    {V4, " 172.16.0.0/12 , 127.0.0.1 ", "127.0.0.1", true},
    {V4, "172.16.0.0/12", "172.31.255.255", true},
    {V4, "172.16.0.0/12", "172.32.0.0", false},
    {V4, "0.0.0.0/0", "8.8.8.8", true},
    /* IPv4 rules never admit a native IPv6 peer. */
    {V4, "0.0.0.0/0", "::1", false},
    {V6, "::1", "::1", true},
    {V6, "::1", "::2", false},
    {V6, "fd00::/8", "fd12:3456::1", true},
    {V6, "fd00::/8", "fe80::1", false},
    {V6, "2001:db8::/33", "2001:db8:7fff::1", true},
    {V6, "2001:db8::/33", "2001:db8:8000::1", false},
    /* An IPv4 client on a dual-stack socket is ::ffff:a.b.c.d: IPv4 rules apply. */
    {V6, "127.0.0.0/8", "::ffff:127.0.0.1", true},
    {V6, "10.0.0.0/8", "::ffff:127.0.0.1", false},
    /* A mapped rule matches the plain IPv4 peer too. */
    {V6, "::ffff:10.0.0.0/104", "10.1.2.3", true},
    {V6, "::1", "127.0.0.1", false},
    {V6, "::/0", "127.0.0.1", true},
};

static void assert_matches(int rules) {
    for (size_t i = 0; i < NSRV_ARRAY_LEN(match_cases); i++)
        if ((int)match_cases[i].rules == rules &&
            matches(match_cases[i].list, match_cases[i].ip) != match_cases[i].match)
            fail_msg("'%s' %s '%s'", match_cases[i].list,
                     match_cases[i].match ? "did not match" : "matched", match_cases[i].ip);
}

static void test_ipv4(void **state) {
    (void)state;
    assert_matches(V4);
}

static void test_ipv6_and_mapped(void **state) {
    (void)state;
    assert_matches(V6);
}

static void test_empty_is_off(void **state) {
    (void)state;
    nsrv_cidr_list_t l;
    char err[100] = "";
    assert_int_equal(nsrv_cidr_list_parse("", 0, &l, err, sizeof err), 0);
    assert_int_equal(l.n, 0);
    assert_int_equal(nsrv_cidr_list_parse("  \t ", 4, &l, err, sizeof err), 0);
    assert_int_equal(l.n, 0);
}

static void test_errors(void **state) {
    (void)state;
    refused("10.0.0.0/33", "10.0.0.0/33");
    refused("::/129", "prefix");
    refused("10.0.0.1/8", "bits set past");
    refused("10.0.0.0/8,,::1", "entry 2 is empty");
    refused("10.0.0.0/8,", "entry 2 is empty");
    refused("example.com", "not an IPv4 or IPv6");
    refused("10.0.0", "not an IPv4");
    refused("10.0.0.0/", "prefix");
    refused("10.0.0.0/-1", "prefix");
    refused("10.0.0.0/+8", "prefix");
    refused("fe80::1%eth0", "not an IPv4 or IPv6");
    refused("1.2.3.4/8/8", "prefix");
    refused("aaaa:aaaa:aaaa:aaaa:aaaa:aaaa:aaaa:aaaa:aaaa:aaaa:aaaa:aaaa:aaaa:aaaa", "too long");
    /* A NUL inside the text (a length-counted input) is refused, not cut short. */
    nsrv_cidr_list_t l;
    char err[100] = "";
    assert_int_equal(nsrv_cidr_list_parse("10.0.0.0/8,1.2.3.4\0", 19, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "NUL"));
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_ipv4), cmocka_unit_test(test_ipv6_and_mapped),
               cmocka_unit_test(test_empty_is_off), cmocka_unit_test(test_errors))
