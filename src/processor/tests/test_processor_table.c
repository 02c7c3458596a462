/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The [code] -> handler table: every request code of proto/request_codes.def
 * has a handler, no other code has one, and a code without a handler gets
 * REQUEST_CODE_NOT_SUPPORTED with Java's remark.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "proc_int.h"
#include "testlib.h"

static const int32_t SERVED[] = {
#define X(code, name) NSRV_REQ_##name,
#include "request_codes.def"
#undef X
};

static bool served(int32_t code) {
    for (size_t i = 0; i < NSRV_ARRAY_LEN(SERVED); i++) {
        if (SERVED[i] == code)
            return true;
    }
    return false;
}

static void test_every_code_has_a_handler(void **state) {
    (void)state;
    for (size_t i = 0; i < NSRV_ARRAY_LEN(SERVED); i++)
        assert_non_null(nsrv__processor_find_handler(SERVED[i]));
}

static void test_only_table_codes_have_handlers(void **state) {
    (void)state;
    size_t n = 0;
    for (int32_t code = -2; code < 2000; code++) {
        if (nsrv__processor_find_handler(code)) {
            assert_true(served(code));
            n++;
        }
    }
    assert_int_equal(n, NSRV_ARRAY_LEN(SERVED));
    assert_null(nsrv__processor_find_handler(INT32_MIN));
    assert_null(nsrv__processor_find_handler(INT32_MAX));
}

static void test_unknown_code_is_not_supported(void **state) {
    (void)state;
    nsrv_processor_t p;
    memset(&p, 0, sizeof p);
    nsrv_arena_t arena;
    nsrv_arena_init(&arena, 1024);
    nsrv_buf_t body = NSRV_BUF_INIT;
    nsrv_cmd_t req = {.code = 107, .opaque = 9, .ser_type = NSRV_SER_JSON};
    nsrv_cmd_t resp;
    nsrv_processor_handle(&p, &req, 1, NULL, 0, &arena, &body, &resp);
    assert_int_equal(resp.code, NSRV_RESP_REQUEST_CODE_NOT_SUPPORTED);
    assert_int_equal(resp.opaque, 9);
    assert_int_equal(resp.version, NSRV_MQ_CURRENT);
    assert_string_equal(resp.remark.ptr, " request type 107 not supported");
    nsrv_buf_deinit(&body);
    nsrv_arena_deinit(&arena);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_every_code_has_a_handler),
               cmocka_unit_test(test_only_table_codes_have_handlers),
               cmocka_unit_test(test_unknown_code_is_not_supported))
