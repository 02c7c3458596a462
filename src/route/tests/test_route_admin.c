/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Admin and listing requests on the route table: wipe/add write perm (proto/requests.md §2.10),
 * delete topic (proto/requests.md §2.12), register topic (proto/requests.md §2.13), topic lists
 * (proto/requests.md §2.11, §2.15, proto/requests.md §2.16, §2.17) and member group
 * (proto/requests.md §2.20).
 */
#include "route_test.h"
#include "testlib.h"

#define T0 RT_T0

static void test_wipe_and_add_write_perm(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_init(&r, "C1", "a:1", "broker-a", 0);
    rt_reg_topic(&r, "RW", 4, 4, 6, 0);
    rt_reg_topic(&r, "RO", 4, 4, 4, 0);
    rt_reg_topic(&r, "All", 4, 4, 15, 0); /* PRIORITY|READ|WRITE|INHERIT */
    rt_reg_do(f->rt, &r, T0);
    rt_reg_simple(f->rt, "C1", "b:1", "broker-b", 0, "Bonly", T0);

    assert_int_equal(nsrv_route_wipe_write_perm(f->rt, "broker-a"), 3); /* RO counts too */
    assert_true(
        rt_contains(rt_route(f->rt, "RW", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":4"));
    assert_true(
        rt_contains(rt_route(f->rt, "RO", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":4"));
    assert_true(
        rt_contains(rt_route(f->rt, "All", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":13"));
    assert_true(
        rt_contains(rt_route(f->rt, "Bonly", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":6"));

    /* Add sets exactly READ|WRITE, dropping PRIORITY and INHERIT. */
    assert_int_equal(nsrv_route_add_write_perm(f->rt, "broker-a"), 3);
    assert_true(
        rt_contains(rt_route(f->rt, "RO", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":6"));
    assert_true(
        rt_contains(rt_route(f->rt, "All", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":6"));
    assert_int_equal(nsrv_route_wipe_write_perm(f->rt, "nobody"), 0);
    assert_int_equal(nsrv_route_add_write_perm(f->rt, "nobody"), 0);
    assert_int_equal(nsrv_route_wipe_write_perm(f->rt, NULL), 0);
}

static void test_delete_topic(void **state) {
    rt_fix_t *f = *state;
    rt_reg_simple(f->rt, "C1", "a:1", "broker-a", 0, "T", T0);
    rt_reg_simple(f->rt, "C2", "b:1", "broker-b", 0, "T", T0);

    /* Unknown cluster: nothing. */
    nsrv_route_delete_topic(f->rt, "T", "C9");
    assert_true(rt_contains(rt_route(f->rt, "T", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "broker-a"));
    /* One cluster: only its brokers' queue data. */
    nsrv_route_delete_topic(f->rt, "T", "C1");
    const char *s = rt_route(f->rt, "T", NSRV_ROUTE_JSON_STANDARD, T0, &f->b);
    assert_false(rt_contains(s, "broker-a"));
    assert_true(rt_contains(s, "broker-b"));
    /* The last cluster: the topic goes. */
    nsrv_route_delete_topic(f->rt, "T", "C2");
    assert_false(rt_has_route(f->rt, "T", T0));
    /* No cluster (NULL or ""): the whole topic. */
    nsrv_route_delete_topic(f->rt, "TBW102", NULL);
    assert_false(rt_has_route(f->rt, "TBW102", T0));
    rt_reg_simple(f->rt, "C1", "a:1", "broker-a", 0, "U", T0 + 1);
    rt_reg_t r;
    rt_reg_two(&r, "C2", "b:1", "broker-b", 0, "U", "V");
    r.dv.counter = 7;
    rt_reg_do(f->rt, &r, T0 + 1);
    nsrv_route_delete_topic(f->rt, "U", "");
    assert_false(rt_has_route(f->rt, "U", T0));
    nsrv_route_delete_topic(f->rt, "U", "");
    nsrv_route_delete_topic(f->rt, "nope", NULL);
    /* Brokers are untouched. */
    assert_int_equal(nsrv_route_broker_count(f->rt), 2);
    f->check_ms = T0 + 1;
}

static void test_register_topic(void **state) {
    rt_fix_t *f = *state;
    rt_reg_simple(f->rt, "C1", "a:1", "broker-a", 0, "T", T0);
    rt_reg_simple(f->rt, "C1", "b:1", "broker-b", 0, "T", T0);

    /* New topic with an unknown broker name anywhere: nothing is created. */
    nsrv_queue_data_t bad_new[] = {{"broker-a", 2, 2, 6, 0}, {"ghost", 2, 2, 6, 0}};
    nsrv_route_register_topic(f->rt, "New", bad_new, 2);
    assert_false(rt_has_route(f->rt, "New", T0));
    /* Valid new topic. */
    nsrv_queue_data_t ok[] = {{"broker-a", 2, 3, 6, 1}};
    nsrv_route_register_topic(f->rt, "New", ok, 1);
    assert_true(rt_contains(rt_route(f->rt, "New", NSRV_ROUTE_JSON_STANDARD, T0, &f->b),
                            "{\"brokerName\":\"broker-a\",\"perm\":6,\"readQueueNums\":2,"
                            "\"topicSysFlag\":1,\"writeQueueNums\":3}"));
    /* Existing topic: merged up to the first unknown name, which stops it silently. */
    nsrv_queue_data_t merge[] = {{"broker-a", 5, 5, 4, 0},
                                 {"broker-b", 1, 1, 6, 0},
                                 {"ghost", 1, 1, 6, 0},
                                 {"broker-b", 9, 9, 6, 0}};
    nsrv_route_register_topic(f->rt, "New", merge, 4);
    const char *s = rt_route(f->rt, "New", NSRV_ROUTE_JSON_STANDARD, T0, &f->b);
    assert_true(rt_contains(s, "{\"brokerName\":\"broker-a\",\"perm\":4,\"readQueueNums\":5"));
    assert_true(rt_contains(s, "{\"brokerName\":\"broker-b\",\"perm\":6,\"readQueueNums\":1"));
    /* Empty or NULL: nothing. */
    nsrv_route_register_topic(f->rt, "Empty", ok, 0);
    nsrv_route_register_topic(f->rt, "Empty", NULL, 1);
    nsrv_route_register_topic(f->rt, NULL, ok, 1);
    assert_false(rt_has_route(f->rt, "Empty", T0));
    /* A NULL broker name stops like an unknown one. */
    nsrv_queue_data_t nul[] = {{NULL, 1, 1, 6, 0}};
    nsrv_route_register_topic(f->rt, "Nul", nul, 1);
    assert_false(rt_has_route(f->rt, "Nul", T0));
}

static void test_topic_lists(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_init(&r, "C1", "a:1", "broker-a", 0);
    rt_reg_topic(&r, "Plain", 4, 4, 6, 0);
    rt_reg_topic(&r, "Unit", 4, 4, 6, NSRV_TOPIC_FLAG_UNIT);
    rt_reg_topic(&r, "UnitSub", 4, 4, 6, NSRV_TOPIC_FLAG_UNIT_SUB);
    rt_reg_topic(&r, "Both", 4, 4, 6, NSRV_TOPIC_FLAG_UNIT | NSRV_TOPIC_FLAG_UNIT_SUB);
    rt_reg_do(f->rt, &r, T0);
    rt_reg_t r2;
    rt_reg_init(&r2, "C2", "b:1", "broker-b", 0);
    rt_reg_topic(&r2, "Plain", 4, 4, 6, NSRV_TOPIC_FLAG_UNIT); /* not the first QueueData */
    rt_reg_topic(&r2, "Bee", 4, 4, 6, 0);
    rt_reg_do(f->rt, &r2, T0);

    assert_string_equal(rt_topics(f->rt, NSRV_TOPICS_ALL, T0, &f->b),
                        "{\"topicList\":[\"Plain\",\"Unit\",\"UnitSub\",\"Both\",\"Bee\"]}");
    assert_string_equal(rt_topics(f->rt, NSRV_TOPICS_UNIT, T0, &f->b),
                        "{\"topicList\":[\"Unit\",\"Both\"]}");
    assert_string_equal(rt_topics(f->rt, NSRV_TOPICS_UNIT_SUB, T0, &f->b),
                        "{\"topicList\":[\"UnitSub\",\"Both\"]}");
    assert_string_equal(rt_topics(f->rt, NSRV_TOPICS_UNIT_SUB_NOT_UNIT, T0, &f->b),
                        "{\"topicList\":[\"UnitSub\"]}");

    assert_string_equal(rt_cluster_topics(f->rt, "C2", T0, &f->b),
                        "{\"topicList\":[\"Plain\",\"Bee\"]}");
    assert_string_equal(rt_cluster_topics(f->rt, "C1", T0, &f->b),
                        "{\"topicList\":[\"Plain\",\"Unit\",\"UnitSub\",\"Both\"]}");
    assert_string_equal(rt_cluster_topics(f->rt, "Unknown", T0, &f->b), "{\"topicList\":[]}");
    assert_string_equal(rt_cluster_topics(f->rt, "", T0, &f->b), "{\"topicList\":[]}");
}

static void test_system_topic_list(void **state) {
    rt_fix_t *f = *state;
    assert_string_equal(rt_text(nsrv_route_system_topic_list, f->rt, T0, &f->b),
                        "{\"topicList\":[]}");
    rt_reg_simple(f->rt, "DefaultCluster", "1.2.3.4:10911", "broker-a", 0, "T", T0);
    assert_string_equal(rt_text(nsrv_route_system_topic_list, f->rt, T0, &f->b),
                        "{\"brokerAddr\":\"1.2.3.4:10911\",\"topicList\":[\"DefaultCluster\","
                        "\"broker-a\"]}");
    /* A set: a cluster named like a broker is listed once. */
    rt_reg_simple(f->rt, "broker-a", "5.6.7.8:1", "broker-z", 0, "T", T0);
    assert_string_equal(rt_text(nsrv_route_system_topic_list, f->rt, T0, &f->b),
                        "{\"brokerAddr\":\"1.2.3.4:10911\",\"topicList\":[\"DefaultCluster\","
                        "\"broker-a\",\"broker-z\"]}");
}

static void test_member_group(void **state) {
    rt_fix_t *f = *state;
    rt_reg_simple(f->rt, "c", "x:1", "b", 0, "T", T0);
    rt_reg_simple(f->rt, "c", "y:1", "b", 2, NULL, T0);
    nsrv_route_member_group(f->rt, "c", "b", T0, &f->b);
    assert_string_equal(f->b.data, "{\"brokerMemberGroup\":{\"brokerAddrs\":{0:\"x:1\",2:\"y:1\"},"
                                   "\"brokerName\":\"b\",\"cluster\":\"c\"}}");
    nsrv_buf_reset(&f->b);
    nsrv_route_member_group(f->rt, "c", "nob", T0, &f->b);
    assert_string_equal(f->b.data, "{\"brokerMemberGroup\":{\"brokerAddrs\":{},\"brokerName\":"
                                   "\"nob\",\"cluster\":\"c\"}}");
    /* The cluster is echoed, not checked; absent fields are omitted. */
    nsrv_buf_reset(&f->b);
    nsrv_route_member_group(f->rt, NULL, "b", T0, &f->b);
    assert_string_equal(f->b.data, "{\"brokerMemberGroup\":{\"brokerAddrs\":{0:\"x:1\",2:\"y:1\"},"
                                   "\"brokerName\":\"b\"}}");
    nsrv_buf_reset(&f->b);
    nsrv_route_member_group(f->rt, NULL, NULL, T0, &f->b);
    assert_string_equal(f->b.data, "{\"brokerMemberGroup\":{\"brokerAddrs\":{}}}");
}

NSRV_TEST_MAIN(NULL, NULL, RT_TEST(test_wipe_and_add_write_perm), RT_TEST(test_delete_topic),
               RT_TEST(test_register_topic), RT_TEST(test_topic_lists),
               RT_TEST(test_system_topic_list), RT_TEST(test_member_group))
