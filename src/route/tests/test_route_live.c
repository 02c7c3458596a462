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
#define T0 1000
#define TO NSRV_ROUTE_DEFAULT_TIMEOUT_MS

static rt_closed_t closed;

static nsrv_route_t *new_rt(void) {
    nsrv_route_t *rt = nsrv_route_create();
    closed.n = 0;
    nsrv_route_set_conn_close_cb(rt, rt_record_close, &closed);
    return rt;
}

static void reg(nsrv_route_t *rt, const char *addr, const char *name, int64_t id,
                int64_t timeout_ms, uint64_t conn, uint64_t now) {
    rt_reg_t r;
    rt_reg_init(&r, C, addr, name, id);
    r.timeout_ms = timeout_ms;
    r.conn = conn;
    rt_reg_topic(&r, "T1", 4, 4, 6, 0);
    rt_reg_topic(&r, "T2", 4, 4, 6, 0);
    rt_reg_do(rt, &r, now);
}

/* Expired means last + timeout < now: exactly at the timeout it is still alive. */
static void test_expiry_boundary(void **state) {
    (void)state;
    nsrv_route_t *rt = new_rt();
    reg(rt, MA, "broker-a", 0, 0, 5, T0);
    assert_int_equal(nsrv_route_expire(rt, T0 + TO), 0);
    assert_int_equal(nsrv_route_broker_count(rt), 1);
    assert_int_equal(closed.n, 0);
    assert_int_equal(nsrv_route_expire(rt, T0 + TO + 1), 1);
    assert_int_equal(nsrv_route_broker_count(rt), 0);
    assert_false(rt_has_route(rt, "T1", T0 + TO + 1));
    assert_int_equal(closed.n, 1);
    assert_int_equal(closed.ids[0], 5);
    nsrv_route_stats_t st;
    nsrv_route_get_stats(rt, &st);
    assert_int_equal(st.brokers_expired, 1);
    rt_assert_ok(rt, T0 + TO + 1);
    nsrv_route_destroy(&rt);
}

/* heartbeatTimeoutMillis is per broker. */
static void test_per_broker_timeout(void **state) {
    (void)state;
    nsrv_route_t *rt = new_rt();
    reg(rt, MA, "broker-a", 0, 10000, 1, T0);
    reg(rt, "10.0.0.9:10911", "broker-b", 0, 0, 2, T0);
    assert_int_equal(nsrv_route_expire(rt, T0 + 10000), 0);
    assert_int_equal(nsrv_route_expire(rt, T0 + 10001), 1);
    assert_int_equal(nsrv_route_broker_count(rt), 1);
    assert_int_equal(closed.ids[0], 1);
    assert_int_equal(nsrv_route_expire(rt, T0 + TO), 0);
    assert_int_equal(nsrv_route_expire(rt, T0 + TO + 1), 1);
    /* An absurd timeout cannot wrap the deadline into the past. */
    reg(rt, MA, "broker-a", 0, INT64_MAX, 3, UINT64_MAX - 10);
    assert_int_equal(nsrv_route_expire(rt, UINT64_MAX), 0);
    assert_int_equal(nsrv_route_broker_count(rt), 1);
    rt_check_and_free(&rt, NULL, 0);
}

/* A broker past its timeout is absent from every answer, although no scan ran. */
static void test_read_time_filtering(void **state) {
    (void)state;
    nsrv_route_t *rt = new_rt();
    nsrv_buf_t b = NSRV_BUF_INIT;
    reg(rt, MA, "broker-a", 0, 0, 7, T0);
    reg(rt, "10.0.0.9:10911", "broker-b", 0, 0, 8, T0 + 60000);
    uint64_t t = T0 + TO + 1;
    assert_false(rt_contains(rt_route(rt, "T1", NSRV_ROUTE_JSON_STANDARD, t, &b), "broker-a"));
    assert_true(rt_contains(b.data, "broker-b"));
    assert_int_equal(closed.n, 1); /* the lazy expiry closes the connection too */
    assert_int_equal(closed.ids[0], 7);
    assert_false(rt_contains(rt_text(nsrv_route_cluster_info, rt, t, &b), "broker-a"));

    /* Each read API filters on its own (fresh table each time). */
    nsrv_route_destroy(&rt);
    for (int api = 0; api < 7; api++) {
        rt = new_rt();
        reg(rt, MA, "broker-a", 0, 0, 7, T0);
        nsrv_buf_reset(&b);
        switch (api) {
        case 0:
            nsrv_route_cluster_info(rt, t, &b);
            assert_false(rt_contains(b.data, "broker-a"));
            break;
        case 1:
            nsrv_route_topic_list(rt, NSRV_TOPICS_ALL, t, &b);
            assert_string_equal(b.data, "{\"topicList\":[]}");
            break;
        case 2:
            nsrv_route_topics_by_cluster(rt, C, t, &b);
            assert_string_equal(b.data, "{\"topicList\":[]}");
            break;
        case 3:
            nsrv_route_system_topic_list(rt, t, &b);
            assert_string_equal(b.data, "{\"topicList\":[]}");
            break;
        case 4:
            nsrv_route_member_group(rt, C, "broker-a", t, &b);
            assert_true(rt_contains(b.data, "\"brokerAddrs\":{}"));
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
        nsrv_route_destroy(&rt);
    }
    nsrv_buf_deinit(&b);
}

/* While nothing is due, reads do not scan the live table. */
static void test_read_time_check_is_cheap(void **state) {
    (void)state;
    nsrv_route_t *rt = new_rt();
    reg(rt, MA, "broker-a", 0, 0, 1, T0);
    nsrv_route_stats_t before, after;
    nsrv_route_get_stats(rt, &before);
    for (int i = 0; i < 100; i++)
        assert_true(rt_has_route(rt, "T1", T0 + (uint64_t)i * 1000));
    nsrv_route_get_stats(rt, &after);
    assert_int_equal(after.expire_passes, before.expire_passes);
    nsrv_route_destroy(&rt);
}

/* Re-registering with a shorter timeout moves the deadline earlier; reads see it. */
static void test_shorter_timeout_on_reregister(void **state) {
    (void)state;
    nsrv_route_t *rt = new_rt();
    reg(rt, MA, "broker-a", 0, 0, 1, T0);
    reg(rt, MA, "broker-a", 0, 10000, 1, T0 + 1000);
    assert_true(rt_has_route(rt, "T1", T0 + 11000));
    assert_false(rt_has_route(rt, "T1", T0 + 11001));
    nsrv_route_destroy(&rt);
}

static void test_query_data_version(void **state) {
    (void)state;
    nsrv_route_t *rt = new_rt();
    nsrv_data_version_t dv = {1, 1700000000000LL, 0}, st = {0, 0, 0};
    bool has = true;
    /* No live entry: changed, nothing stored. */
    assert_true(nsrv_route_query_data_version(rt, C, MA, &dv, T0, &st, &has));
    assert_false(has);
    reg(rt, MA, "broker-a", 0, 0, 1, T0);
    assert_false(nsrv_route_query_data_version(rt, C, MA, &dv, T0 + 1, &st, &has));
    assert_true(has);
    assert_true(nsrv_data_version_eq(&st, &dv));
    nsrv_data_version_t other = dv;
    other.state_version = 1;
    assert_true(nsrv_route_query_data_version(rt, C, MA, &other, T0 + 2, &st, &has));
    assert_true(nsrv_data_version_eq(&st, &dv)); /* the STORED version is returned */
    assert_true(nsrv_route_query_data_version(rt, C, MA, NULL, T0 + 3, &st, &has));
    assert_true(has);
    /* Another cluster is another key. */
    assert_true(nsrv_route_query_data_version(rt, "Other", MA, &dv, T0 + 3, &st, &has));
    assert_false(has);

    /* Each query is a heartbeat, changed or not (5.x): alive long past T0 + 120 s. */
    uint64_t t = T0;
    for (int i = 1; i <= 5; i++) {
        t = T0 + (uint64_t)i * 100000;
        nsrv_route_query_data_version(rt, C, MA, i % 2 ? &other : &dv, t, &st, &has);
        assert_true(has);
    }
    assert_int_equal(nsrv_route_expire(rt, t + TO), 0);
    assert_int_equal(nsrv_route_expire(rt, t + TO + 1), 1);
    /* An expired broker is not brought back by its query. */
    reg(rt, MA, "broker-a", 0, 0, 1, T0);
    assert_true(nsrv_route_query_data_version(rt, C, MA, &dv, T0 + TO + 1, &st, &has));
    assert_false(has);
    assert_int_equal(nsrv_route_broker_count(rt), 0);
    rt_assert_ok(rt, T0 + TO + 1);
    nsrv_route_destroy(&rt);
}

static void test_broker_heartbeat_refresh(void **state) {
    (void)state;
    nsrv_route_t *rt = new_rt();
    reg(rt, MA, "broker-a", 0, 10000, 1, T0);
    nsrv_route_broker_heartbeat(rt, C, MA, T0 + 9000);
    assert_true(rt_has_route(rt, "T1", T0 + 10001)); /* past the original deadline */
    assert_true(rt_has_route(rt, "T1", T0 + 19000));
    assert_false(rt_has_route(rt, "T1", T0 + 19001));
    /* Unknown broker, wrong cluster, NULLs: no effect. */
    nsrv_route_broker_heartbeat(rt, C, SA, T0);
    nsrv_route_broker_heartbeat(rt, NULL, NULL, T0);
    assert_int_equal(nsrv_route_broker_count(rt), 0);
    nsrv_route_destroy(&rt);
}

/* A broker whose own entry is past its deadline and re-registers is refreshed in place:
 * its connection is not closed (that close would undo the registration). */
static void test_register_refreshes_own_expired_entry(void **state) {
    (void)state;
    nsrv_route_t *rt = new_rt();
    nsrv_buf_t b = NSRV_BUF_INIT;
    reg(rt, MA, "broker-a", 0, 0, 4, T0);
    nsrv_route_wipe_write_perm(rt, "broker-a");
    reg(rt, MA, "broker-a", 0, 0, 4, T0 + TO + 10);
    assert_int_equal(closed.n, 0);
    assert_int_equal(nsrv_route_broker_count(rt), 1);
    /* Same version: the group was never dropped, so the wipe stands. */
    assert_true(
        rt_contains(rt_route(rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0 + TO + 10, &b), "\"perm\":4"));
    rt_assert_ok(rt, T0 + TO + 10);
    nsrv_buf_deinit(&b);
    nsrv_route_destroy(&rt);
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
    (void)state;
    nsrv_route_t *rt = new_rt();
    reentrant_rt = rt;
    nsrv_route_set_conn_close_cb(rt, reentrant_close, NULL);
    reg(rt, MA, "broker-a", 0, 0, 1, T0);
    reg(rt, SA, "broker-a", 1, 0, 1, T0 + 5);       /* same conn, alive longer */
    reg(rt, "10.0.0.3:1", "broker-b", 0, 0, 0, T0); /* no connection: no callback */
    assert_int_equal(nsrv_route_expire(rt, T0 + TO + 1), 2);
    assert_int_equal(closed.n, 1);
    /* Closing conn 1 took the slave registered on it as well. */
    assert_int_equal(nsrv_route_broker_count(rt), 0);
    rt_assert_ok(rt, T0 + TO + 1);
    nsrv_route_set_conn_close_cb(rt, NULL, NULL);
    nsrv_route_destroy(&rt);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_expiry_boundary),
               cmocka_unit_test(test_per_broker_timeout),
               cmocka_unit_test(test_read_time_filtering),
               cmocka_unit_test(test_read_time_check_is_cheap),
               cmocka_unit_test(test_shorter_timeout_on_reregister),
               cmocka_unit_test(test_query_data_version),
               cmocka_unit_test(test_broker_heartbeat_refresh),
               cmocka_unit_test(test_register_refreshes_own_expired_entry),
               cmocka_unit_test(test_close_callback_reentrant))
