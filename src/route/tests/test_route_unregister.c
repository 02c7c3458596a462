/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unregistration (proto/route.md §5): UNREGISTER_BROKER, connection close, and the
 * stale-unregister race of apache/rocketmq#11043.
 */
#include "route_test.h"
#include "testlib.h"

#define C "DefaultCluster"
#define MA "10.0.0.1:10911"
#define SA "10.0.0.2:10911"
#define T0 RT_T0

static void two_members(nsrv_route_t *rt, int acting) {
    rt_reg_t m, s;
    rt_reg_init(&m, C, MA, "broker-a", 0);
    m.acting = acting;
    m.conn = 11;
    rt_reg_topic(&m, "T1", 4, 4, 6, 0);
    rt_reg_topic(&m, "T2", 4, 4, 7, 0);
    rt_reg_do(rt, &m, T0);
    rt_reg_init(&s, C, SA, "broker-a", 1);
    s.acting = acting;
    s.conn = 12;
    rt_reg_do(rt, &s, T0);
}

/* Removal is by address value, whatever id the request carries. */
static void test_unregister_by_address(void **state) {
    rt_fix_t *f = *state;
    two_members(f->rt, 0);
    nsrv_route_unregister_broker(f->rt, C, SA, "broker-a", 7);
    nsrv_route_member_group(f->rt, C, "broker-a", T0, &f->b);
    assert_string_equal(f->b.data, "{\"brokerMemberGroup\":{\"brokerAddrs\":{0:\"10.0.0.1:10911\"},"
                                   "\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\"}}");
    assert_int_equal(nsrv_route_broker_count(f->rt), 1);
    /* NULL fields and unknown names are harmless. */
    nsrv_route_unregister_broker(f->rt, NULL, MA, "broker-a", 0);
    nsrv_route_unregister_broker(f->rt, C, "9.9.9.9:1", "nobody", 0);
    assert_int_equal(nsrv_route_broker_count(f->rt), 1);
}

/* The topic stays while any member of the group is registered; it goes with the last one. */
static void test_topic_lifetime_follows_group(void **state) {
    rt_fix_t *f = *state;
    two_members(f->rt, 0);
    rt_reg_simple(f->rt, C, "10.0.0.5:10911", "broker-b", 0, "Shared", T0);
    rt_reg_t a2;
    rt_reg_two(&a2, C, MA, "broker-a", 0, "T1", "Shared");
    a2.conn = 11;
    a2.dv.counter = 2;
    rt_reg_do(f->rt, &a2, T0);

    nsrv_route_unregister_broker(f->rt, C, MA, "broker-a", 0);
    /* Only the slave address is left, without key 0. */
    assert_string_equal(
        rt_route(f->rt, "T1", NSRV_ROUTE_JSON_DEFAULT, T0, &f->b),
        "{\"brokerDatas\":[{\"brokerAddrs\":{1:\"10.0.0.2:10911\"},\"brokerName\":"
        "\"broker-a\",\"cluster\":\"DefaultCluster\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[{\"brokerName\":\"broker-a\","
        "\"perm\":6,\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4}]}");
    nsrv_route_unregister_broker(f->rt, C, SA, "broker-a", 1);
    assert_false(rt_has_route(f->rt, "T1", T0));
    assert_false(rt_has_route(f->rt, "T2", T0));
    /* A topic shared with another group keeps that group's queue data. */
    const char *s = rt_route(f->rt, "Shared", NSRV_ROUTE_JSON_STANDARD, T0, &f->b);
    assert_true(rt_contains(s, "broker-b"));
    assert_false(rt_contains(s, "broker-a"));
    assert_string_equal(
        rt_text(nsrv_route_cluster_info, f->rt, T0, &f->b),
        "{\"brokerAddrTable\":{\"broker-b\":{\"brokerAddrs\":{0:\"10.0.0.5:10911\"},"
        "\"brokerName\":\"broker-b\",\"cluster\":\"DefaultCluster\","
        "\"enableActingMaster\":false}},\"clusterAddrTable\":{\"DefaultCluster\":["
        "\"broker-b\"]}}");
    nsrv_route_unregister_broker(f->rt, C, "10.0.0.5:10911", "broker-b", 0);
    assert_string_equal(rt_text(nsrv_route_cluster_info, f->rt, T0, &f->b),
                        "{\"brokerAddrTable\":{},\"clusterAddrTable\":{}}");
    assert_string_equal(rt_topics(f->rt, NSRV_TOPICS_ALL, T0, &f->b), "{\"topicList\":[]}");
}

/* A reduced acting-master group without a master gets read-only queues. */
static void test_acting_master_write_clear_on_unregister(void **state) {
    rt_fix_t *f = *state;
    two_members(f->rt, 1);
    nsrv_route_unregister_broker(f->rt, C, MA, "broker-a", 0);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":4,"));
    assert_true(
        rt_contains(rt_route(f->rt, "T2", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":5,"));

    /* Without enableActingMaster the perms stay. */
    two_members(rt_fix_renew(f), 0);
    nsrv_route_unregister_broker(f->rt, C, MA, "broker-a", 0);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":6,"));

    /* Removing a slave leaves the master: perms stay. */
    two_members(rt_fix_renew(f), 1);
    nsrv_route_unregister_broker(f->rt, C, SA, "broker-a", 1);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":6,"));
}

static rt_closed_t closed;

/* A closed connection takes every broker whose last registration came on it. */
static void test_conn_close_removes_its_brokers(void **state) {
    rt_fix_t *f = *state;
    closed.n = 0;
    nsrv_route_set_conn_close_cb(f->rt, rt_record_close, &closed);
    two_members(f->rt, 0); /* master on conn 11, slave on 12 */
    rt_reg_t c;
    rt_reg_init(&c, C, "10.0.0.7:10911", "broker-c", 0);
    c.conn = 11; /* a second broker in the same process and connection */
    rt_reg_topic(&c, "C1", 1, 1, 6, 0);
    rt_reg_topic(&c, "C2", 1, 1, 6, 0);
    rt_reg_do(f->rt, &c, T0);
    assert_int_equal(nsrv_route_broker_count(f->rt), 3);

    assert_int_equal(nsrv_route_conn_closed(f->rt, 99, T0), 0); /* a client connection */
    assert_int_equal(nsrv_route_conn_closed(f->rt, 0, T0), 0);
    assert_int_equal(nsrv_route_conn_closed(f->rt, 11, T0), 2);
    assert_int_equal(nsrv_route_broker_count(f->rt), 1);
    assert_false(rt_has_route(f->rt, "C1", T0));
    assert_true(rt_has_route(f->rt, "T1", T0)); /* the slave still serves broker-a */
    assert_int_equal(nsrv_route_conn_closed(f->rt, 11, T0), 0);
    assert_int_equal(nsrv_route_conn_closed(f->rt, 12, T0), 1);
    assert_false(rt_has_route(f->rt, "T1", T0));
    assert_int_equal(closed.n, 0); /* the server already knows: no callback */
}

/*
 * apache/rocketmq#11043: the broker re-registers on a new connection before
 * the close of its old one is processed. The stale close must not remove it.
 */
static void test_stale_close_after_reregister_keeps_broker(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t m;
    rt_reg_two(&m, C, MA, "broker-a", 0, "T1", "T2");
    m.conn = 1;
    rt_reg_do(f->rt, &m, T0);
    m.conn = 2;
    rt_reg_do(f->rt, &m, T0 + 5);
    assert_int_equal(nsrv_route_conn_closed(f->rt, 1, T0 + 6), 0);
    assert_int_equal(nsrv_route_broker_count(f->rt), 1);
    assert_true(rt_has_route(f->rt, "T1", T0 + 6));
    /* Heartbeats on yet another connection do not rebind it (only registration does). */
    nsrv_route_broker_heartbeat(f->rt, C, MA, T0 + 7);
    assert_int_equal(nsrv_route_conn_closed(f->rt, 2, T0 + 8), 1);
    assert_false(rt_has_route(f->rt, "T1", T0 + 8));
    f->check_ms = T0 + 8;
}

/* An expired broker that re-registered (same address) is not expired again by a stale scan. */
static void test_expiry_rechecks_deadline(void **state) {
    rt_fix_t *f = *state;
    rt_reg_simple(f->rt, C, MA, "broker-a", 0, "T1", T0);
    uint64_t late = T0 + NSRV_ROUTE_DEFAULT_TIMEOUT_MS + 50;
    /* The broker re-registers past its deadline, before any scan ran... */
    rt_reg_simple(f->rt, C, MA, "broker-a", 0, "T1", late);
    /* ...so the scan at the same moment finds nothing to remove. */
    assert_int_equal(nsrv_route_expire(f->rt, late), 0);
    assert_true(rt_has_route(f->rt, "T1", late));
    f->check_ms = late;
}

NSRV_TEST_MAIN(NULL, NULL, RT_TEST(test_unregister_by_address),
               RT_TEST(test_topic_lifetime_follows_group),
               RT_TEST(test_acting_master_write_clear_on_unregister),
               RT_TEST(test_conn_close_removes_its_brokers),
               RT_TEST(test_stale_close_after_reregister_keeps_broker),
               RT_TEST(test_expiry_rechecks_deadline))
