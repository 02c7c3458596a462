/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Liveness (proto/route.md §7, proto/requests.md §2.4, §2.7): expiry boundaries, per-broker
 * timeouts, read-time filtering, QUERY_DATA_VERSION and BROKER_HEARTBEAT refreshes, the
 * connection-close callback.
 */
#include "route_test.h"
#include "testlib.h"

#define C "DefaultCluster"
#define MA "10.0.0.1:10911"
#define SA "10.0.0.2:10911"
#define T0 RT_T0
#define TO NSRV_ROUTE_DEFAULT_TIMEOUT_MS

static rt_closed_t closed;

static void record_closes(nsrv_route_t *rt) {
    closed.n = 0;
    nsrv_route_set_conn_close_cb(rt, rt_record_close, &closed);
}

static void reg(nsrv_route_t *rt, const char *addr, const char *name, int64_t id,
                int64_t timeout_ms, uint64_t conn, uint64_t now) {
    rt_reg_t r;
    rt_reg_two(&r, C, addr, name, id, "T1", "T2");
    r.timeout_ms = timeout_ms;
    r.conn = conn;
    rt_reg_do(rt, &r, now);
}

/* Expired means last + timeout < now: exactly at the timeout it is still alive. */
static void test_expiry_boundary(void **state) {
    rt_fix_t *f = *state;
    record_closes(f->rt);
    reg(f->rt, MA, "broker-a", 0, 0, 5, T0);
    assert_int_equal(nsrv_route_expire(f->rt, T0 + TO), 0);
    assert_int_equal(nsrv_route_broker_count(f->rt), 1);
    assert_int_equal(closed.n, 0);
    assert_int_equal(nsrv_route_expire(f->rt, T0 + TO + 1), 1);
    assert_int_equal(nsrv_route_broker_count(f->rt), 0);
    assert_false(rt_has_route(f->rt, "T1", T0 + TO + 1));
    assert_int_equal(closed.n, 1);
    assert_int_equal(closed.ids[0], 5);
    nsrv_route_stats_t st;
    nsrv_route_get_stats(f->rt, &st);
    assert_int_equal(st.brokers_expired, 1);
    f->check_ms = T0 + TO + 1;
}

/* heartbeatTimeoutMillis is per broker. */
static void test_per_broker_timeout(void **state) {
    rt_fix_t *f = *state;
    record_closes(f->rt);
    reg(f->rt, MA, "broker-a", 0, 10000, 1, T0);
    reg(f->rt, "10.0.0.9:10911", "broker-b", 0, 0, 2, T0);
    assert_int_equal(nsrv_route_expire(f->rt, T0 + 10000), 0);
    assert_int_equal(nsrv_route_expire(f->rt, T0 + 10001), 1);
    assert_int_equal(nsrv_route_broker_count(f->rt), 1);
    assert_int_equal(closed.ids[0], 1);
    assert_int_equal(nsrv_route_expire(f->rt, T0 + TO), 0);
    assert_int_equal(nsrv_route_expire(f->rt, T0 + TO + 1), 1);
    /* An absurd timeout cannot wrap the deadline into the past. */
    reg(f->rt, MA, "broker-a", 0, INT64_MAX, 3, UINT64_MAX - 10);
    assert_int_equal(nsrv_route_expire(f->rt, UINT64_MAX), 0);
    assert_int_equal(nsrv_route_broker_count(f->rt), 1);
    f->check_ms = 0;
}

/* A broker past its timeout is absent from every answer, although no scan ran. */
static void test_read_time_filtering(void **state) {
    rt_fix_t *f = *state;
    nsrv_route_t *rt = f->rt;
    nsrv_buf_t *b = &f->b;
    record_closes(rt);
    reg(rt, MA, "broker-a", 0, 0, 7, T0);
    reg(rt, "10.0.0.9:10911", "broker-b", 0, 0, 8, T0 + 60000);
    uint64_t t = T0 + TO + 1;
    assert_false(rt_contains(rt_route(rt, "T1", NSRV_ROUTE_JSON_STANDARD, t, b), "broker-a"));
    assert_true(rt_contains(b->data, "broker-b"));
    assert_int_equal(closed.n, 1); /* the lazy expiry closes the connection too */
    assert_int_equal(closed.ids[0], 7);
    assert_false(rt_contains(rt_text(nsrv_route_cluster_info, rt, t, b), "broker-a"));

    /* Each read API filters on its own (fresh table each time). */
    for (int api = 0; api < 7; api++) {
        rt = rt_fix_renew(f);
        record_closes(rt);
        reg(rt, MA, "broker-a", 0, 0, 7, T0);
        nsrv_buf_reset(b);
        switch (api) {
        case 0:
            nsrv_route_cluster_info(rt, t, b);
            assert_false(rt_contains(b->data, "broker-a"));
            break;
        case 1:
            nsrv_route_topic_list(rt, NSRV_TOPICS_ALL, t, b);
            assert_string_equal(b->data, "{\"topicList\":[]}");
            break;
        case 2:
            nsrv_route_topics_by_cluster(rt, C, t, b);
            assert_string_equal(b->data, "{\"topicList\":[]}");
            break;
        case 3:
            nsrv_route_system_topic_list(rt, t, b);
            assert_string_equal(b->data, "{\"topicList\":[]}");
            break;
        case 4:
            nsrv_route_member_group(rt, C, "broker-a", t, b);
            assert_true(rt_contains(b->data, "\"brokerAddrs\":{}"));
            break;
        case 5: {
            nsrv_data_version_t dv = {1, 1700000000000LL, 0}, st;
            bool has = true;
            assert_true(nsrv_route_query_data_version(rt, C, MA, &dv, t, &st, &has));
            assert_false(has);
            break;
        }
        case 6:
            assert_false(rt_has_route(rt, "T1", t));
            break;
        }
        assert_int_equal(nsrv_route_broker_count(rt), 0);
        rt_assert_ok(rt, t);
    }
    f->check_ms = t;
}

/* While nothing is due, reads do not scan the live table. */
static void test_read_time_check_is_cheap(void **state) {
    rt_fix_t *f = *state;
    record_closes(f->rt);
    reg(f->rt, MA, "broker-a", 0, 0, 1, T0);
    nsrv_route_stats_t before, after;
    nsrv_route_get_stats(f->rt, &before);
    for (int i = 0; i < 100; i++)
        assert_true(rt_has_route(f->rt, "T1", T0 + (uint64_t)i * 1000));
    nsrv_route_get_stats(f->rt, &after);
    assert_int_equal(after.expire_passes, before.expire_passes);
}

/* Re-registering with a shorter timeout moves the deadline earlier; reads see it. */
static void test_shorter_timeout_on_reregister(void **state) {
    rt_fix_t *f = *state;
    record_closes(f->rt);
    reg(f->rt, MA, "broker-a", 0, 0, 1, T0);
    reg(f->rt, MA, "broker-a", 0, 10000, 1, T0 + 1000);
    assert_true(rt_has_route(f->rt, "T1", T0 + 11000));
    assert_false(rt_has_route(f->rt, "T1", T0 + 11001));
}

static void test_query_data_version(void **state) {
    rt_fix_t *f = *state;
    record_closes(f->rt);
    nsrv_data_version_t dv = {1, 1700000000000LL, 0}, st = {0, 0, 0};
    bool has = true;
    /* No live entry: changed, nothing stored. */
    assert_true(nsrv_route_query_data_version(f->rt, C, MA, &dv, T0, &st, &has));
    assert_false(has);
    reg(f->rt, MA, "broker-a", 0, 0, 1, T0);
    assert_false(nsrv_route_query_data_version(f->rt, C, MA, &dv, T0 + 1, &st, &has));
    assert_true(has);
    assert_true(nsrv_data_version_eq(&st, &dv));
    nsrv_data_version_t other = dv;
    other.state_version = 1;
    assert_true(nsrv_route_query_data_version(f->rt, C, MA, &other, T0 + 2, &st, &has));
    assert_true(nsrv_data_version_eq(&st, &dv)); /* the STORED version is returned */
    assert_true(nsrv_route_query_data_version(f->rt, C, MA, NULL, T0 + 3, &st, &has));
    assert_true(has);
    /* Another cluster is another key. */
    assert_true(nsrv_route_query_data_version(f->rt, "Other", MA, &dv, T0 + 3, &st, &has));
    assert_false(has);

    /* Each query is a heartbeat, changed or not (5.x): alive long past T0 + 120 s. */
    uint64_t t = T0;
    for (int i = 1; i <= 5; i++) {
        t = T0 + (uint64_t)i * 100000;
        nsrv_route_query_data_version(f->rt, C, MA, i % 2 ? &other : &dv, t, &st, &has);
        assert_true(has);
    }
    assert_int_equal(nsrv_route_expire(f->rt, t + TO), 0);
    assert_int_equal(nsrv_route_expire(f->rt, t + TO + 1), 1);
    /* An expired broker is not brought back by its query. */
    reg(f->rt, MA, "broker-a", 0, 0, 1, T0);
    assert_true(nsrv_route_query_data_version(f->rt, C, MA, &dv, T0 + TO + 1, &st, &has));
    assert_false(has);
    assert_int_equal(nsrv_route_broker_count(f->rt), 0);
    f->check_ms = T0 + TO + 1;
}

static void test_broker_heartbeat_refresh(void **state) {
    rt_fix_t *f = *state;
    record_closes(f->rt);
    reg(f->rt, MA, "broker-a", 0, 10000, 1, T0);
    nsrv_route_broker_heartbeat(f->rt, C, MA, T0 + 9000);
    assert_true(rt_has_route(f->rt, "T1", T0 + 10001)); /* past the original deadline */
    assert_true(rt_has_route(f->rt, "T1", T0 + 19000));
    assert_false(rt_has_route(f->rt, "T1", T0 + 19001));
    /* Unknown broker, wrong cluster, NULLs: no effect. */
    nsrv_route_broker_heartbeat(f->rt, C, SA, T0);
    nsrv_route_broker_heartbeat(f->rt, NULL, NULL, T0);
    assert_int_equal(nsrv_route_broker_count(f->rt), 0);
}

/* A broker whose own entry is past its deadline and re-registers is refreshed in place:
 * its connection is not closed (that close would undo the registration). */
static void test_register_refreshes_own_expired_entry(void **state) {
    rt_fix_t *f = *state;
    record_closes(f->rt);
    reg(f->rt, MA, "broker-a", 0, 0, 4, T0);
    nsrv_route_wipe_write_perm(f->rt, "broker-a");
    reg(f->rt, MA, "broker-a", 0, 0, 4, T0 + TO + 10);
    assert_int_equal(closed.n, 0);
    assert_int_equal(nsrv_route_broker_count(f->rt), 1);
    /* Same version: the group was never dropped, so the wipe stands. */
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0 + TO + 10, &f->b),
                            "\"perm\":4"));
    f->check_ms = T0 + TO + 10;
}

/* The close callback may call back into the table. */
static nsrv_route_t *reentrant_rt;
static void reentrant_close(void *ud, uint64_t conn_id) {
    (void)ud;
    closed.n++;
    nsrv_route_conn_closed(reentrant_rt, conn_id, 0);
    nsrv_buf_t b = NSRV_BUF_INIT;
    nsrv_route_cluster_info(reentrant_rt, T0 + TO + 1, &b);
    nsrv_buf_deinit(&b);
}

static void test_close_callback_reentrant(void **state) {
    rt_fix_t *f = *state;
    record_closes(f->rt);
    reentrant_rt = f->rt;
    nsrv_route_set_conn_close_cb(f->rt, reentrant_close, NULL);
    reg(f->rt, MA, "broker-a", 0, 0, 1, T0);
    reg(f->rt, SA, "broker-a", 1, 0, 1, T0 + 5);       /* same conn, alive longer */
    reg(f->rt, "10.0.0.3:1", "broker-b", 0, 0, 0, T0); /* no connection: no callback */
    assert_int_equal(nsrv_route_expire(f->rt, T0 + TO + 1), 2);
    assert_int_equal(closed.n, 1);
    /* Closing conn 1 took the slave registered on it as well. */
    assert_int_equal(nsrv_route_broker_count(f->rt), 0);
    rt_assert_ok(f->rt, T0 + TO + 1);
    nsrv_route_set_conn_close_cb(f->rt, NULL, NULL);
}

NSRV_TEST_MAIN(NULL, NULL, RT_TEST(test_expiry_boundary), RT_TEST(test_per_broker_timeout),
               RT_TEST(test_read_time_filtering), RT_TEST(test_read_time_check_is_cheap),
               RT_TEST(test_shorter_timeout_on_reregister), RT_TEST(test_query_data_version),
               RT_TEST(test_broker_heartbeat_refresh),
               RT_TEST(test_register_refreshes_own_expired_entry),
               RT_TEST(test_close_callback_reentrant))
