/* SPDX-License-Identifier: Apache-2.0 */
/* The topic order array and its open-addressing index (topic_index.h): random puts and
 * deletes against a plain array, so backward-shift deletion, resizing and the compaction of
 * the order array keep every topic findable and the creation order. */
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

/* The order array holds the topics in, in creation order, tombstones apart. */
static void check_order(const rt_topic_index_t *ix, rt_topic_t **topics, const bool *in,
                        const uint64_t *created) {
    uint64_t last = 0;
    size_t live = 0;
    for (uint32_t p = 0; p < ix->n_order; p++) {
        rt_topic_t *t = ix->order[p];
        if (!t)
            continue;
        size_t i = 0;
        while (topics[i] != t)
            i++;
        assert_true(in[i]);
        assert_true(created[i] > last);
        last = created[i];
        live++;
    }
    assert_int_equal(live, ix->n);
}

static void test_random_put_del(void **state) {
    (void)state;
    static rt_topic_t *topics[N];
    static bool in[N];
    static uint64_t created[N];
    rt_topic_index_t ix = {0};
    uint32_t seed = 12345;
    for (int i = 0; i < N; i++) {
        char name[40];
        int len = snprintf(name, sizeof name, "topic-broker-%04d-%d", i / 100, i % 100);
        topics[i] = calloc(1, sizeof *topics[i] + (size_t)len + 1);
        memcpy(topics[i]->name, name, (size_t)len + 1);
    }
    size_t compactions = 0;
    for (int step = 0; step < 60000; step++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)((seed >> 8) % N);
        /* Grow for the first half, then mostly shrink, so both resizes and the
         * compaction of the order array run. */
        bool add = step < 30000 ? (seed & 3) != 0 : (seed & 3) == 0;
        if (add && !in[i]) {
            nsrv__tindex_put(&ix, topics[i]);
            in[i] = true;
            created[i] = (uint64_t)step + 1;
        } else if (!add && in[i]) {
            uint32_t before = ix.n_order;
            nsrv__tindex_del(&ix, topics[i]);
            compactions += ix.n_order + 1 < before;
            in[i] = false;
        }
        if (step % 997 == 0 || step == 59999) {
            size_t n = 0;
            for (int j = 0; j < N; j++) {
                assert_ptr_equal(nsrv__tindex_get(&ix, topics[j]->name), in[j] ? topics[j] : NULL);
                n += in[j];
            }
            assert_int_equal(ix.n, n);
            assert_true(ix.cap == 0 || ix.n * 2 <= ix.cap);
            /* Tombstones never outnumber the topics for long. */
            assert_true(ix.n_order - ix.n <= 64 || (ix.n_order - ix.n) * 2 <= ix.n_order);
            check_order(&ix, topics, in, created);
        }
    }
    assert_true(compactions > 0);
    assert_null(nsrv__tindex_get(&ix, "no-such-topic"));
    nsrv__tindex_free(&ix);
    assert_null(nsrv__tindex_get(&ix, topics[0]->name));
    for (int i = 0; i < N; i++)
        free(topics[i]);
}

/* The i-th name of a family: the shapes a cluster and the benchmark use. */
static void family_name(char *name, size_t size, int family, uint32_t i) {
    switch (family) {
    case 0:
        snprintf(name, size, "topic-broker-%04u-%u", i / 10, i % 10);
        break;
    case 1:
        snprintf(name, size, "shared-topic-%u", i);
        break;
    case 2:
        snprintf(name, size, "t%u", i);
        break;
    case 3:
        snprintf(name, size, "%07u", i);
        break;
    default:
        snprintf(name, size, "TopicTest-with-a-longer-name-%08u", i);
        break;
    }
}

/* Mean probe length of linear probing with n names of a family hashed into cap slots. */
static double mean_probe(int family, uint32_t n, size_t cap) {
    uint8_t *used = calloc(cap, 1);
    uint64_t probes = 0;
    char name[64];
    for (uint32_t i = 0; i < n; i++) {
        family_name(name, sizeof name, family, i);
        size_t j = nsrv__tindex_hash(name) & (cap - 1);
        for (probes++; used[j]; j = (j + 1) & (cap - 1))
            probes++;
        used[j] = 1;
    }
    free(used);
    return (double)probes / n;
}

/* The word-at-a-time hash spreads names that differ only in a few digits, whatever their
 * length, as a random one would: ~1.3 probes at 38 % load (1.6 allowed). */
static void test_names_spread(void **state) {
    (void)state;
    for (int family = 0; family < 5; family++) {
        double m = mean_probe(family, 100000, 1u << 18);
        if (m > 1.6)
            fail_msg("name family %d: %.2f probes per lookup", family, m);
    }
    /* Every byte counts: names of 1-24 bytes that differ in one byte hash apart. */
    char a[32], b[32];
    for (size_t len = 1; len <= 24; len++) {
        for (size_t k = 0; k < len; k++) {
            memset(a, 'x', len);
            a[len] = '\0';
            memcpy(b, a, len + 1);
            b[k] = 'y';
            assert_int_not_equal(nsrv__tindex_hash(a), nsrv__tindex_hash(b));
        }
    }
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_random_put_del),
               cmocka_unit_test(test_names_spread))
