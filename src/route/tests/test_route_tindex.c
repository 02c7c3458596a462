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

static void topic_name(char *out, size_t cap, int i) {
    snprintf(out, cap, "topic-broker-%04d-%d", i / 100, i % 100);
}

/* The records hold the topics in, in creation order, tombstones apart. */
static void check_order(const rt_topic_index_t *ix, const bool *in, const uint64_t *created) {
    uint64_t last = 0;
    size_t live = 0;
    rt_topic_t *t;
    NSRV__TINDEX_FOREACH(ix, t) {
        int b, k;
        assert_int_equal(sscanf(t->name, "topic-broker-%d-%d", &b, &k), 2);
        int i = b * 100 + k;
        assert_true(in[i]);
        assert_true(created[i] > last);
        last = created[i];
        live++;
    }
    assert_int_equal(live, ix->n);
}

static void test_random_put_del(void **state) {
    (void)state;
    static bool in[N];
    static uint64_t created[N];
    rt_topic_index_t ix = {0};
    uint32_t seed = 12345;
    char name[40];
    size_t compactions = 0;
    for (int step = 0; step < 60000; step++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)((seed >> 8) % N);
        /* Grow for the first half, then mostly shrink, so both resizes and the
         * compaction of the records run. */
        bool add = step < 30000 ? (seed & 3) != 0 : (seed & 3) == 0;
        topic_name(name, sizeof name, i);
        if (add && !in[i]) {
            rt_topic_t *t = nsrv__tindex_add(&ix, name);
            assert_string_equal(t->name, name);
            t->qref = (rt_qref_t)i;
            in[i] = true;
            created[i] = (uint64_t)step + 1;
        } else if (!add && in[i]) {
            nsrv__tindex_del(&ix, nsrv__tindex_get(&ix, name));
            in[i] = false;
            if (nsrv__tindex_compact_due(&ix)) {
                size_t before = ix.used;
                nsrv__tindex_compact(&ix);
                assert_true(ix.used * 2 < before);
                assert_int_equal(ix.dead, 0);
                compactions++;
            }
        }
        if (step % 997 == 0 || step == 59999) {
            size_t n = 0;
            for (int j = 0; j < N; j++) {
                topic_name(name, sizeof name, j);
                rt_topic_t *t = nsrv__tindex_get(&ix, name);
                if (in[j]) {
                    assert_non_null(t);
                    assert_int_equal(t->qref, j); /* the record moved with its topic */
                    assert_ptr_equal(nsrv__tindex_at(&ix, nsrv__tindex_pos(&ix, t)), t);
                } else {
                    assert_null(t);
                }
                n += in[j];
            }
            assert_int_equal(ix.n, n);
            assert_true(ix.cap == 0 || ix.n * 2 <= ix.cap);
            /* Tombstones never outnumber the topics for long. */
            assert_false(nsrv__tindex_compact_due(&ix));
            check_order(&ix, in, created);
        }
    }
    assert_true(compactions > 0);
    assert_null(nsrv__tindex_get(&ix, "no-such-topic"));
    nsrv__tindex_free(&ix);
    topic_name(name, sizeof name, 0);
    assert_null(nsrv__tindex_get(&ix, name));
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

/* Every used slot carries its name's tag under the arena's position mask, through the
 * arena's growth (which narrows the tags in place) and a compaction (which rebuilds them),
 * and the tags spare the probes the records: over 20,000 lookups, hardly any record but
 * the one found passes a tag check (13 tag bits at this size; comparing every probe's
 * name, as the 4-byte position slots did, loads ~0.3 more records per lookup). */
static void test_tags(void **state) {
    (void)state;
    enum { TAGS_N = 20000 };
    rt_topic_index_t ix = {0};
    char name[40];
    for (uint32_t i = 0; i < TAGS_N; i++) {
        family_name(name, sizeof name, 1, i);
        nsrv__tindex_add(&ix, name);
    }
    for (int round = 0; round < 2; round++) {
        assert_int_equal(ix.pos_mask, nsrv__tindex_pos_mask(ix.cap_arena));
        assert_true(ix.pos_mask < 0x00100000u); /* at least 12 tag bits */
        size_t used = 0;
        for (size_t i = 0; i < ix.cap; i++) {
            if (!ix.slots[i])
                continue;
            used++;
            const char *n = nsrv__tindex_at(&ix, nsrv__tindex_slot_pos(&ix, ix.slots[i]))->name;
            assert_true(nsrv__tindex_slot_tag_ok(&ix, ix.slots[i], nsrv__tindex_hash(n)));
        }
        assert_int_equal(used, ix.n);
        uint64_t passed = 0, found = 0;
        for (uint32_t i = 0; i < TAGS_N; i++) {
            family_name(name, sizeof name, 1, i);
            uint32_t hash = nsrv__tindex_hash(name);
            rt_topic_t *t = nsrv__tindex_get(&ix, name);
            if (!t)
                continue;
            found++;
            size_t mask = ix.cap - 1;
            for (size_t j = hash & mask; ix.slots[j]; j = (j + 1) & mask) {
                if (nsrv__tindex_slot_tag_ok(&ix, ix.slots[j], hash))
                    passed++;
                if (nsrv__tindex_at(&ix, nsrv__tindex_slot_pos(&ix, ix.slots[j])) == t)
                    break;
            }
        }
        assert_int_equal(found, ix.n);
        assert_true(passed - found < found / 200); /* < 0.5 % extra record loads */
        /* Round two: two thirds of the topics gone, the rest compacted. */
        for (uint32_t i = 0; round == 0 && i < TAGS_N; i++) {
            if (i % 3 == 0)
                continue;
            family_name(name, sizeof name, 1, i);
            nsrv__tindex_del(&ix, nsrv__tindex_get(&ix, name));
        }
        if (round == 0) {
            assert_true(nsrv__tindex_compact_due(&ix));
            nsrv__tindex_compact(&ix);
        }
    }
    nsrv__tindex_free(&ix);
}

/* A tag that matches a name longer than the record it leads to, the arena's last, which
 * ends the allocation exactly: the compare must not read past the records (ASan sees it),
 * and finds nothing. The slot is forged: a real collision needs ~2^30 tries. */
static void test_tag_collision_at_arena_end(void **state) {
    (void)state;
    rt_topic_index_t ix = {0};
    char name[40];
    /* 128 records of 8 + 20 + NUL bytes, 4-aligned to 32: exactly the first 4 KiB arena. */
    for (int i = 0; i < 128; i++) {
        snprintf(name, sizeof name, "topic-%014d", i);
        nsrv__tindex_add(&ix, name);
    }
    assert_int_equal(ix.used, ix.cap_arena);
    rt_topic_t *last = nsrv__tindex_get(&ix, name);
    assert_non_null(last);
    const char *keys[] = {"topic-00000000000127-and-longer", "topic-0000000000012", "topic-"};
    for (size_t k = 0; k < NSRV_ARRAY_LEN(keys); k++) {
        uint32_t hash = nsrv__tindex_hash(keys[k]);
        size_t mask = ix.cap - 1, home = hash & mask;
        uint32_t saved = ix.slots[home];
        ix.slots[home] = (hash & ~ix.pos_mask) | (nsrv__tindex_pos(&ix, last) + 1);
        assert_null(nsrv__tindex_get(&ix, keys[k]));
        ix.slots[home] = saved;
    }
    assert_ptr_equal(nsrv__tindex_get(&ix, name), last);
    nsrv__tindex_free(&ix);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_random_put_del),
               cmocka_unit_test(test_names_spread), cmocka_unit_test(test_tags),
               cmocka_unit_test(test_tag_collision_at_arena_end))
