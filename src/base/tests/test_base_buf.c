/* SPDX-License-Identifier: Apache-2.0 */
/* The growable byte buffer (include/nsrv/buf.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nsrv/buf.h"
#include "testlib.h"

/* nsrv_buf_append_sep: a comma before every item but the first, none for no items. */
static void test_list_separator(void **state) {
    (void)state;
    nsrv_buf_t b = NSRV_BUF_INIT;
    bool first = true;
    nsrv_buf_append_ch(&b, '[');
    for (char c = 'a'; c <= 'c'; c++) {
        nsrv_buf_append_sep(&b, &first);
        nsrv_buf_append_ch(&b, c);
    }
    nsrv_buf_append_ch(&b, ']');
    assert_string_equal(b.data, "[a,b,c]");
    assert_false(first);
    nsrv_buf_deinit(&b);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_list_separator))
