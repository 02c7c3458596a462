/* SPDX-License-Identifier: Apache-2.0 */
/* The status endpoint's request parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/common.h"
#include "nsrv/http.h"
#include "testlib.h"

static int parse(const char *s, nsrv_http_req_t *r) {
    return nsrv_http_parse_request(s, strlen(s), r);
}

static void test_valid(void **state) {
    (void)state;
    nsrv_http_req_t r;
    assert_int_equal(parse("GET /status HTTP/1.1\r\nHost: x\r\n\r\n", &r), 0);
    assert_int_equal(r.method_len, 3);
    assert_memory_equal(r.method, "GET", 3);
    assert_int_equal(r.path_len, 7);
    assert_memory_equal(r.path, "/status", 7);
    assert_int_equal(parse("GET /metrics?x=1 HTTP/1.0\n\n", &r), 0);
    assert_int_equal(r.path_len, 8);
    assert_memory_equal(r.path, "/metrics", 8);
    assert_int_equal(parse("HEAD / HTTP/1.1\r\n\r\n", &r), 0);
    assert_int_equal(r.path_len, 1);
}

static void test_incomplete_and_too_big(void **state) {
    (void)state;
    nsrv_http_req_t r;
    assert_int_equal(parse("", &r), NSRV_AGAIN);
    assert_int_equal(parse("GET /status HTTP/1.1\r\nHost: x\r\n", &r), NSRV_AGAIN);
    char big[NSRV_HTTP_MAX_REQUEST + 10];
    memset(big, 'a', sizeof big);
    assert_int_equal(nsrv_http_parse_request(big, sizeof big, &r), NSRV_ETOOBIG);
    assert_int_equal(nsrv_http_parse_request(big, NSRV_HTTP_MAX_REQUEST - 1, &r), NSRV_AGAIN);
}

static void test_malformed(void **state) {
    (void)state;
    nsrv_http_req_t r;
    const char *bad[] = {
        "get /x HTTP/1.1\r\n\r\n",  "GET x HTTP/1.1\r\n\r\n",     "GET /x HTTP/2.0\r\n\r\n",
        "GET /x\r\n\r\n",           "GET  /x HTTP/1.1\r\n\r\n",   "/x HTTP/1.1\r\n\r\n",
        "GET /x HTTP/1.1 \r\n\r\n", "GET /\x01 HTTP/1.1\r\n\r\n", "\x16\x03\x01\n\n",
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad); i++) {
        if (parse(bad[i], &r) != -EPROTO)
            fail_msg("accepted: %s", bad[i]);
    }
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_valid),
               cmocka_unit_test(test_incomplete_and_too_big), cmocka_unit_test(test_malformed))
