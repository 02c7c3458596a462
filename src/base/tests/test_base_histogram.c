/* SPDX-License-Identifier: Apache-2.0 */
/* Fixed-bucket histograms (include/nsrv/histogram.h): bucket edges and the text lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/histogram.h"
#include "testlib.h"

/* A bound is inclusive (Prometheus "le"): 100 us lands in the first bucket, 101 in the next. */
static void test_bucket_edges(void **state) {
    (void)state;
    nsrv_hist_t h = {0};
    nsrv_hist_observe_us(&h, 0);
    nsrv_hist_observe_us(&h, 100);
    nsrv_hist_observe_us(&h, 101);
    nsrv_hist_observe_us(&h, 60000000);
    nsrv_hist_observe_us(&h, 60000001);
    assert_int_equal(h.in_bucket[0], 2);
    assert_int_equal(h.in_bucket[1], 1);
    assert_int_equal(h.in_bucket[NSRV_HIST_BUCKETS - 1], 1);
    assert_int_equal(h.in_bucket[NSRV_HIST_BUCKETS], 1);
    assert_int_equal(h.count, 5);
    assert_int_equal(h.sum_us, 0 + 100 + 101 + 60000000 + 60000001);
}

static void test_text_is_cumulative(void **state) {
    (void)state;
    nsrv_hist_t h = {0};
    nsrv_hist_observe_us(&h, 200);     /* le 0.00025 */
    nsrv_hist_observe_us(&h, 1500000); /* le 2.5 */
    nsrv_buf_t b = NSRV_BUF_INIT;
    nsrv_hist_write(&b, "x_seconds", "request=\"A\"", &h);
    const char *text = b.data;
    assert_non_null(strstr(text, "x_seconds_bucket{request=\"A\",le=\"0.0001\"} 0\n"));
    assert_non_null(strstr(text, "x_seconds_bucket{request=\"A\",le=\"0.00025\"} 1\n"));
    assert_non_null(strstr(text, "x_seconds_bucket{request=\"A\",le=\"1\"} 1\n"));
    assert_non_null(strstr(text, "x_seconds_bucket{request=\"A\",le=\"2.5\"} 2\n"));
    assert_non_null(strstr(text, "x_seconds_bucket{request=\"A\",le=\"60\"} 2\n"));
    assert_non_null(strstr(text, "x_seconds_bucket{request=\"A\",le=\"+Inf\"} 2\n"));
    assert_non_null(strstr(text, "x_seconds_sum{request=\"A\"} 1.500200\n"));
    assert_non_null(strstr(text, "x_seconds_count{request=\"A\"} 2\n"));
    nsrv_buf_reset(&b);
    nsrv_hist_write(&b, "y", "", &h);
    assert_non_null(strstr(b.data, "y_bucket{le=\"+Inf\"} 2\ny_sum 1.500200\ny_count 2\n"));
    nsrv_buf_deinit(&b);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_bucket_edges),
               cmocka_unit_test(test_text_is_cumulative))
