/* SPDX-License-Identifier: Apache-2.0 */
/* The open-addressing topic index (topic_index.h): random puts and deletes against a
 * plain array, so backward-shift deletion and resizing keep every topic findable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "route_int.h"
#include "testlib.h"

#define N 3000

static void test_random_put_del(void **state) {
    (void)state;
    static rt_topic_t topics[N];
    static char names[N][40];
    static bool in[N];
    rt_topic_index_t ix = {0};
    uint32_t seed = 12345;
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "topic-broker-%04d-%d", i / 100, i % 100);
        topics[i].name = names[i];
    }
    for (int step = 0; step < 60000; step++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)((seed >> 8) % N);
        /* Grow for the first half, then mostly shrink, so both resizes run. */
        bool add = step < 30000 ? (seed & 3) != 0 : (seed & 3) == 0;
        if (add && !in[i]) {
            nsrv__tindex_put(&ix, &topics[i], names[i]);
            in[i] = true;
        } else if (!add && in[i]) {
            nsrv__tindex_del(&ix, &topics[i], names[i]);
            in[i] = false;
        }
        if (step % 997 == 0 || step == 59999) {
            size_t n = 0;
            for (int j = 0; j < N; j++) {
                assert_ptr_equal(nsrv__tindex_get(&ix, names[j]), in[j] ? &topics[j] : NULL);
                n += in[j];
            }
            assert_int_equal(ix.n, n);
            assert_true(ix.cap == 0 || ix.n * 2 <= ix.cap);
        }
    }
    assert_null(nsrv__tindex_get(&ix, "no-such-topic"));
    nsrv__tindex_free(&ix);
    assert_null(nsrv__tindex_get(&ix, names[0]));
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_random_put_del))
