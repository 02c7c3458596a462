/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The compact topic layout (route_int.h): one QueueData id inline in the topic, an array
 * of ids only while there are two or more (back inline when one is left, insertion order
 * kept), interned QueueData values shared and unshared on change, broker vectors walked
 * for broker-wide changes and removals, cached routes only for queried topics, and the
 * creation-ordered topic records through a million topics of insert and delete churn
 * (tombstones and compaction).
 */
#include <stdlib.h>

#include "route_test.h"
#include "testlib.h"

#define T0 RT_T0

static rt_topic_t *topic(nsrv_route_t *rt, const char *name) {
    return nsrv__route_topic_find(rt, name);
}

static void add_queue_data(nsrv_route_t *rt, const char *t, const char *broker, int32_t perm) {
    nsrv_queue_data_t qd = {broker, 4, 4, perm, 0};
    nsrv_route_register_topic(rt, t, &qd, 1);
}

/* A table of brokers a, b, c (clusters C1-C3), each with a topic of its own. */
static void three_brokers(nsrv_route_t *rt) {
    rt_reg_simple(rt, "C1", "a:1", "broker-a", 0, "A-own", T0);
    rt_reg_simple(rt, "C2", "b:1", "broker-b", 0, "B-own", T0);
    rt_reg_simple(rt, "C3", "c:1", "broker-c", 0, "C-own", T0);
}

/* Topic "T" is still t, holding one queue data, inline, of broker bname; the table checks. */
static void assert_only_inline(nsrv_route_t *rt, rt_topic_t *t, const char *bname) {
    assert_ptr_equal(topic(rt, "T"), t);
    assert_int_equal(nsrv__route_n_qds(rt, t), 1);
    assert_false(t->qref & RT_QREF_MANY);
    assert_string_equal(nsrv__route_qd_at(rt, t, 0)->bname->name, bname);
    rt_assert_ok(rt, T0);
}

static void test_one_two_one(void **state) {
    rt_fix_t *f = *state;
    three_brokers(f->rt);
    add_queue_data(f->rt, "T", "broker-a", 6);
    rt_topic_t *t = topic(f->rt, "T");
    assert_non_null(t);
    assert_int_equal(nsrv__route_n_qds(f->rt, t), 1);
    assert_false(t->qref & RT_QREF_MANY);
    add_queue_data(f->rt, "T", "broker-b", 6);
    assert_int_equal(nsrv__route_n_qds(f->rt, t), 2);
    assert_true(t->qref & RT_QREF_MANY);
    rt_assert_ok(f->rt, T0);
    const char *s = rt_route(f->rt, "T", NSRV_ROUTE_JSON_STANDARD, T0, &f->b);
    /* Insertion order in queueDatas: a, then b. */
    assert_true(rt_contains(s, "\"queueDatas\":[{\"brokerName\":\"broker-a\""));
    assert_true(rt_contains(s, "},{\"brokerName\":\"broker-b\""));
    nsrv_route_delete_topic(f->rt, "T", "C2");
    assert_only_inline(f->rt, t, "broker-a");
    s = rt_route(f->rt, "T", NSRV_ROUTE_JSON_STANDARD, T0, &f->b);
    assert_false(rt_contains(s, "broker-b"));
}

static void test_first_removed_moves_inline(void **state) {
    rt_fix_t *f = *state;
    three_brokers(f->rt);
    add_queue_data(f->rt, "T", "broker-a", 6);
    add_queue_data(f->rt, "T", "broker-b", 6);
    add_queue_data(f->rt, "T", "broker-c", 6);
    /* T's entry of broker-b is neither the head nor the tail of broker-b's list. */
    add_queue_data(f->rt, "B-later", "broker-b", 6);
    rt_topic_t *t = topic(f->rt, "T");
    assert_non_null(rt_route(f->rt, "T", NSRV_ROUTE_JSON_STANDARD, T0, &f->b));
    assert_non_null(nsrv__route_tcache(f->rt, t));

    nsrv_route_delete_topic(f->rt, "T", "C1");
    assert_int_equal(nsrv__route_n_qds(f->rt, t), 2);
    assert_string_equal(nsrv__route_qd_at(f->rt, t, 0)->bname->name, "broker-b");
    assert_string_equal(nsrv__route_qd_at(f->rt, t, 1)->bname->name, "broker-c");
    assert_int_equal(t->cache, 0); /* the change dropped the cached bodies */
    rt_assert_ok(f->rt, T0);

    /* The moved entry is found through broker-b's list: wipe reaches it. */
    assert_int_equal(nsrv_route_wipe_write_perm(f->rt, "broker-b"), 4);
    assert_int_equal(nsrv__route_qd_at(f->rt, t, 0)->perm, 4);
    assert_int_equal(nsrv__route_qd_at(f->rt, t, 1)->perm, 6);
    const char *s = rt_route(f->rt, "T", NSRV_ROUTE_JSON_STANDARD, T0, &f->b);
    assert_true(rt_contains(s, "\"queueDatas\":[{\"brokerName\":\"broker-b\",\"perm\":4"));
    assert_true(rt_contains(s, "},{\"brokerName\":\"broker-c\",\"perm\":6"));

    /* broker-b's group goes: its inline entry is replaced by broker-c's, the last. */
    nsrv_route_unregister_broker(f->rt, "C2", "b:1", "broker-b", 0);
    assert_only_inline(f->rt, t, "broker-c");
    assert_null(topic(f->rt, "B-later"));
    rt_assert_ok(f->rt, T0);
    assert_int_equal(nsrv_route_wipe_write_perm(f->rt, "broker-c"), 3);
    assert_int_equal(nsrv__route_qd_at(f->rt, t, 0)->perm, 4);

    nsrv_route_delete_topic(f->rt, "T", "C3");
    assert_null(topic(f->rt, "T"));
}

static void test_cache_only_for_queried_topics(void **state) {
    rt_fix_t *f = *state;
    three_brokers(f->rt);
    assert_null(nsrv__route_tcache(f->rt, topic(f->rt, "A-own")));
    assert_non_null(rt_route(f->rt, "A-own", NSRV_ROUTE_JSON_DEFAULT, T0, &f->b));
    assert_non_null(nsrv__route_tcache(f->rt, topic(f->rt, "A-own")));
    assert_null(nsrv__route_tcache(f->rt, topic(f->rt, "B-own")));
    rt_assert_ok(f->rt, T0);
    nsrv_route_wipe_write_perm(f->rt, "broker-a");
    assert_null(nsrv__route_tcache(f->rt, topic(f->rt, "A-own")));
}

/* A topic on six brokers: the array grows past one doubling, entries leave from the
 * middle, the end and the front, and the order of the rest holds. */
static void test_many_queue_data(void **state) {
    rt_fix_t *f = *state;
    static const char *const names[] = {"b0", "b1", "b2", "b3", "b4", "b5"};
    char cluster[8], addr[16];
    for (int i = 0; i < 6; i++) {
        snprintf(cluster, sizeof cluster, "C%d", i);
        snprintf(addr, sizeof addr, "h%d:1", i);
        rt_reg_simple(f->rt, cluster, addr, names[i], 0, NULL, T0);
        add_queue_data(f->rt, "T", names[i], 6);
    }
    rt_topic_t *t = topic(f->rt, "T");
    assert_int_equal(nsrv__route_n_qds(f->rt, t), 6);
    nsrv_route_delete_topic(f->rt, "T", "C3"); /* middle */
    nsrv_route_delete_topic(f->rt, "T", "C5"); /* end */
    nsrv_route_delete_topic(f->rt, "T", "C0"); /* front: b1 moves inline */
    rt_assert_ok(f->rt, T0);
    static const char *const left[] = {"b1", "b2", "b4"};
    assert_int_equal(nsrv__route_n_qds(f->rt, t), 3);
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(nsrv__route_qd_at(f->rt, t, i)->bname->name, left[i]);
    add_queue_data(f->rt, "T", "b0", 6); /* back in, now last */
    assert_string_equal(nsrv__route_qd_at(f->rt, t, 3)->bname->name, "b0");
    const char *s = rt_route(f->rt, "T", NSRV_ROUTE_JSON_STANDARD, T0, &f->b);
    const char *p1 = strstr(s, "\"brokerName\":\"b1\",\"perm"),
               *p0 = strstr(s, "\"brokerName\":\"b0\",\"perm");
    assert_non_null(p1);
    assert_true(p0 > p1);
}

/* The interned QueueData of topic name (its only one, or the one of broker). */
static const rt_qd_t *qd_of(nsrv_route_t *rt, const char *name, const char *broker) {
    rt_topic_t *t = topic(rt, name);
    assert_non_null(t);
    const rt_qd_t *qd = nsrv__route_topic_qd(rt, t, nsrv__route_bname_find(rt, broker));
    assert_non_null(qd);
    return qd;
}

/* Equal values share one node, counted; a change moves one topic to another node (the
 * others keep theirs); broker-wide perm changes move them all; freed when unreferenced. */
static void test_interned_shared_and_unshared(void **state) {
    rt_fix_t *f = *state;
    three_brokers(f->rt);
    for (const char *const *name = (const char *const[]){"T1", "T2", "T3", NULL}; *name; name++)
        add_queue_data(f->rt, *name, "broker-a", 6);
    const rt_qd_t *shared = qd_of(f->rt, "T1", "broker-a");
    assert_ptr_equal(qd_of(f->rt, "T2", "broker-a"), shared);
    assert_ptr_equal(qd_of(f->rt, "T3", "broker-a"), shared);
    /* A-own, registered with the same queue numbers, perm and flag, shares it too. */
    assert_ptr_equal(qd_of(f->rt, "A-own", "broker-a"), shared);
    assert_int_equal(shared->refs, 4);
    assert_ptr_not_equal(qd_of(f->rt, "TBW102", "broker-a"), shared); /* 8 queues, perm 7 */
    size_t interned = HASH_COUNT(f->rt->qd_table);
    rt_assert_ok(f->rt, T0);

    /* T2 alone changes: a node of its own; T1 and T3 keep the shared one. */
    add_queue_data(f->rt, "T2", "broker-a", 4);
    assert_ptr_equal(qd_of(f->rt, "T1", "broker-a"), shared);
    assert_int_equal(shared->refs, 3);
    assert_int_equal(qd_of(f->rt, "T2", "broker-a")->perm, 4);
    assert_int_equal(qd_of(f->rt, "T1", "broker-a")->perm, 6);
    assert_int_equal(HASH_COUNT(f->rt->qd_table), interned + 1);
    const char *s = rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b);
    assert_true(rt_contains(s, "\"perm\":6"));
    rt_assert_ok(f->rt, T0);

    /* Back to the shared value: the node of its own is freed. */
    add_queue_data(f->rt, "T2", "broker-a", 6);
    assert_ptr_equal(qd_of(f->rt, "T2", "broker-a"), shared);
    assert_int_equal(shared->refs, 4);
    assert_int_equal(HASH_COUNT(f->rt->qd_table), interned);
    rt_assert_ok(f->rt, T0);

    /* The same value on another topic of two brokers shares it too. */
    add_queue_data(f->rt, "T4", "broker-b", 6);
    add_queue_data(f->rt, "T4", "broker-a", 6);
    assert_ptr_equal(qd_of(f->rt, "T4", "broker-a"), shared);
    assert_int_equal(shared->refs, 5);

    /* Wipe: every topic of broker-a moves to the read-only value, which they share. */
    assert_int_equal(nsrv_route_wipe_write_perm(f->rt, "broker-a"), 6);
    const rt_qd_t *ro = qd_of(f->rt, "T1", "broker-a");
    assert_int_equal(ro->perm, 4);
    assert_ptr_equal(qd_of(f->rt, "T3", "broker-a"), ro);
    assert_ptr_equal(qd_of(f->rt, "T4", "broker-a"), ro);
    assert_int_equal(ro->refs, 5);
    assert_int_equal(qd_of(f->rt, "TBW102", "broker-a")->perm, 5);
    assert_int_equal(qd_of(f->rt, "T4", "broker-b")->perm, 6); /* another broker's: untouched */
    rt_assert_ok(f->rt, T0);
    assert_int_equal(nsrv_route_add_write_perm(f->rt, "broker-a"), 6);
    assert_int_equal(qd_of(f->rt, "T1", "broker-a")->perm, 6);
    rt_assert_ok(f->rt, T0);

    /* Broker-a's group goes: its topics with it, its values freed; T4 keeps broker-b's. */
    nsrv_route_unregister_broker(f->rt, "C1", "a:1", "broker-a", 0);
    assert_null(topic(f->rt, "T1"));
    assert_null(topic(f->rt, "A-own"));
    assert_int_equal(nsrv__route_n_qds(f->rt, topic(f->rt, "T4")), 1);
    for (const rt_qd_t *qd = f->rt->qd_table; qd; qd = qd->hh.next)
        assert_string_not_equal(qd->bname->name, "broker-a");
}

/* A broker with many topics leaves: they all go (the shared ones lose only its entry),
 * in one walk of its vector, and the others' vectors stay whole. */
static void test_broker_removal_many_topics(void **state) {
    rt_fix_t *f = *state;
    three_brokers(f->rt);
    char name[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "many-%04d", i);
        add_queue_data(f->rt, name, "broker-a", 6);
        if (i % 4 == 0)
            add_queue_data(f->rt, name, "broker-b", 6);
    }
    /* Each also has its own topic and TBW102. */
    assert_int_equal(nsrv__route_bname_find(f->rt, "broker-a")->n_topics, 5002);
    assert_int_equal(nsrv__route_bname_find(f->rt, "broker-b")->n_topics, 1252);
    rt_assert_ok(f->rt, T0);
    nsrv_route_unregister_broker(f->rt, "C1", "a:1", "broker-a", 0);
    assert_null(nsrv__route_bname_find(f->rt, "broker-a"));
    assert_int_equal(f->rt->topic_index.n, 1250 + 3); /* broker-b's quarter, B-own, C-own, TBW102 */
    assert_int_equal(nsrv__route_bname_find(f->rt, "broker-b")->n_topics, 1252);
    assert_non_null(topic(f->rt, "many-0004"));
    assert_null(topic(f->rt, "many-0005"));
}

#define CHURN 1000000
#define BROKERS 1000 /* a removal of one topic searches its broker's vector: keep them short */

static void churn_name(char *out, size_t cap, uint32_t i) {
    snprintf(out, cap, "topic-broker-%u-%u", i % BROKERS, i);
}

/* The records are in creation order: names carry their creation number. */
static void assert_creation_order(const nsrv_route_t *rt) {
    long last = -1;
    rt_topic_t *t;
    NSRV__TINDEX_FOREACH(&rt->topic_index, t) {
        long created = strtol(strrchr(t->name, '-') + 1, NULL, 10);
        assert_true(created > last);
        last = created;
    }
}

static void test_million_topic_churn(void **state) {
    rt_fix_t *f = *state;
    rt_bname_t *bn[BROKERS];
    for (int i = 0; i < BROKERS; i++) {
        char name[32], addr[32];
        snprintf(name, sizeof name, "broker-%d", i);
        snprintf(addr, sizeof addr, "10.0.0.%d:10911", i);
        rt_reg_simple(f->rt, "C", addr, name, 0, NULL, T0);
        bn[i] = nsrv__route_bname_find(f->rt, name);
        assert_non_null(bn[i]);
    }
    char name[64];
    for (uint32_t i = 0; i < CHURN; i++) {
        churn_name(name, sizeof name, i);
        nsrv__route_upsert_qd(f->rt, name, bn[i % BROKERS], 1, 1, 6, 0);
    }
    /* Every tenth topic also on the next broker: arrays of a second entry. */
    for (uint32_t i = 0; i < CHURN; i += 10) {
        churn_name(name, sizeof name, i);
        nsrv__route_upsert_qd(f->rt, name, bn[(i + 1) % BROKERS], 1, 1, 6, 0);
    }
    assert_int_equal(f->rt->topic_index.n, CHURN);
    rt_assert_ok(f->rt, T0);
    /* Delete two thirds in a scattered order, by topic and by broker entry. */
    uint32_t step = 7919; /* prime, so i * step mod CHURN visits every index once */
    for (uint32_t k = 0; k < CHURN; k++) {
        uint32_t i = (uint32_t)(((uint64_t)k * step) % CHURN);
        if (i % 3 == 0)
            continue;
        churn_name(name, sizeof name, i);
        if (i % 10 == 0) {
            /* The inline entry goes first; the array's entry moves in. */
            rt_topic_t *t = nsrv__route_topic_find(f->rt, name);
            assert_int_equal(nsrv__route_n_qds(f->rt, t), 2);
            nsrv__route_remove_qd(f->rt, t, bn[i % BROKERS]);
            assert_int_equal(nsrv__route_n_qds(f->rt, t), 1);
            assert_ptr_equal(nsrv__route_qd_at(f->rt, t, 0)->bname, bn[(i + 1) % BROKERS]);
        }
        nsrv_route_delete_topic(f->rt, name, NULL);
        assert_null(nsrv__route_topic_find(f->rt, name));
    }
    size_t left = (CHURN + 2) / 3;
    assert_int_equal(f->rt->topic_index.n, left);
    assert_false(nsrv__tindex_compact_due(&f->rt->topic_index)); /* compacted as it went */
    rt_assert_ok(f->rt, T0);
    assert_creation_order(f->rt);
    /* New topics go after the survivors. */
    for (uint32_t i = CHURN; i < CHURN + CHURN / 5; i++) {
        churn_name(name, sizeof name, i);
        nsrv__route_upsert_qd(f->rt, name, bn[i % BROKERS], 1, 1, 6, 0);
    }
    rt_assert_ok(f->rt, T0);
    assert_creation_order(f->rt);
    for (int i = 0; i < BROKERS; i++) {
        char addr[32];
        snprintf(addr, sizeof addr, "10.0.0.%d:10911", i);
        snprintf(name, sizeof name, "broker-%d", i);
        nsrv_route_unregister_broker(f->rt, "C", addr, name, 0);
    }
    /* Every topic gone, and with it every record: no tombstone is left behind. */
    assert_true(f->rt->topic_index.n == 0 && f->rt->topic_index.used == 0);
}

NSRV_TEST_MAIN(NULL, NULL, RT_TEST(test_one_two_one), RT_TEST(test_first_removed_moves_inline),
               RT_TEST(test_cache_only_for_queried_topics), RT_TEST(test_many_queue_data),
               RT_TEST(test_interned_shared_and_unshared), RT_TEST(test_broker_removal_many_topics),
               RT_TEST(test_million_topic_churn))
