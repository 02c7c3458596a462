/* SPDX-License-Identifier: Apache-2.0 */
/*
 * REGISTER_BROKER rules of proto/route.md §3 (5.x registerBroker), one test per rule,
 * 4.9.x brokers included. Time is injected.
 */
#include "route_test.h"
#include "testlib.h"

#define C "DefaultCluster"
#define MA "10.0.0.1:10911"
#define SA "10.0.0.2:10911"
#define T0 RT_T0

static const char *member_addrs(nsrv_route_t *rt, const char *name, nsrv_buf_t *b) {
    nsrv_buf_reset(b);
    nsrv_route_member_group(rt, C, name, T0, b);
    return b->data;
}

static void test_master_register_creates_entries(void **state) {
    rt_fix_t *f = *state;
    nsrv_register_result_t res = rt_reg_simple(f->rt, C, MA, "broker-a", 0, "T1", T0);
    assert_int_equal(res.status, NSRV_REG_OK);
    assert_string_equal(res.master_addr, "");
    assert_string_equal(res.ha_server_addr, "");
    assert_int_equal(nsrv_route_broker_count(f->rt), 1);
    assert_string_equal(
        rt_text(nsrv_route_cluster_info, f->rt, T0, &f->b),
        "{\"brokerAddrTable\":{\"broker-a\":{\"brokerAddrs\":{0:\"10.0.0.1:10911\"},"
        "\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\","
        "\"enableActingMaster\":false}},\"clusterAddrTable\":{\"DefaultCluster\":["
        "\"broker-a\"]}}");
    assert_string_equal(rt_topics(f->rt, NSRV_TOPICS_ALL, T0, &f->b),
                        "{\"topicList\":[\"T1\",\"TBW102\"]}");
    assert_string_equal(
        rt_route(f->rt, "T1", NSRV_ROUTE_JSON_DEFAULT, T0, &f->b),
        "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"10.0.0.1:10911\"},\"brokerName\":"
        "\"broker-a\",\"cluster\":\"DefaultCluster\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[{\"brokerName\":\"broker-a\","
        "\"perm\":6,\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4}]}");
    assert_string_equal(rt_route(f->rt, "TBW102", NSRV_ROUTE_JSON_DEFAULT, T0, &f->b) ? "y" : "n",
                        "y");
    assert_null(rt_route(f->rt, "Nope", NSRV_ROUTE_JSON_DEFAULT, T0, &f->b));
}

/* A slave's registration refreshes its address and liveness only. */
static void test_slave_does_not_touch_queue_data(void **state) {
    rt_fix_t *f = *state;
    rt_reg_simple(f->rt, C, MA, "broker-a", 0, "T1", T0);
    rt_reg_t r;
    rt_reg_init(&r, C, SA, "broker-a", 1);
    r.dv.counter = 99;
    rt_reg_topic(&r, "T1", 16, 16, 2, 0);
    rt_reg_topic(&r, "SlaveOnly", 1, 1, 6, 0);
    assert_int_equal(rt_reg_do(f->rt, &r, T0).status, NSRV_REG_OK);
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b),
                            "\"perm\":6,\"readQueueNums\":4"));
    assert_true(rt_contains(f->b.data, "{\"0\":\"10.0.0.1:10911\",\"1\":\"10.0.0.2:10911\"}"));
    assert_false(rt_has_route(f->rt, "SlaveOnly", T0));
    assert_int_equal(nsrv_route_broker_count(f->rt), 2);
}

/* 5.x prime slave (smallest id, no master) writes queue data... */
static void test_prime_slave_writes_queue_data(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_two(&r, C, SA, "broker-a", 1, "T1", "T2");
    rt_reg_do(f->rt, &r, T0);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":6"));
    /* ...a non-prime slave (a smaller id exists) does not. */
    rt_reg_t r2;
    rt_reg_two(&r2, C, "10.0.0.3:10911", "broker-a", 2, "T1", "T3");
    rt_reg_do(f->rt, &r2, T0);
    assert_false(rt_has_route(f->rt, "T3", T0));
}

/* ...and with enableActingMaster its queues are read-only (write bit cleared). */
static void test_prime_slave_acting_master_clears_write(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_init(&r, C, SA, "broker-a", 1);
    r.acting = 1;
    rt_reg_topic(&r, "T1", 4, 4, 6, 0);
    rt_reg_topic(&r, "T2", 4, 4, 7, 0);
    rt_reg_do(f->rt, &r, T0);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":4,"));
    assert_true(rt_contains(f->b.data, "\"enableActingMaster\":true"));
    assert_true(
        rt_contains(rt_route(f->rt, "T2", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":5,"));
}

/* A 4.9.x slave (no enableActingMaster ext) is never a prime slave. */
static void test_old_slave_alone_no_queue_data(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_two(&r, C, SA, "broker-a", 1, "T1", "T2");
    r.acting = -1;
    assert_int_equal(rt_reg_do(f->rt, &r, T0).status, NSRV_REG_OK);
    assert_false(rt_has_route(f->rt, "T1", T0));
    assert_int_equal(nsrv_route_broker_count(f->rt), 1);
}

/* A 4.9.x master registers like a 5.x one; BrokerData shows enableActingMaster false. */
static void test_old_broker_registration(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_init(&r, C, MA, "broker-a", 0);
    r.acting = -1;
    r.dv.state_version = 0;
    r.ha = "10.0.0.1:10912";
    rt_reg_topic(&r, "T1", 4, 4, 6, 0);
    rt_reg_topic(&r, "T2", 4, 4, 6, 0);
    assert_int_equal(rt_reg_do(f->rt, &r, T0).status, NSRV_REG_OK);
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_DEFAULT, T0, &f->b),
                            "\"enableActingMaster\":false}"));
    rt_reg_t s;
    rt_reg_init(&s, C, SA, "broker-a", 1);
    s.acting = -1;
    nsrv_register_result_t res = rt_reg_do(f->rt, &s, T0);
    assert_string_equal(res.master_addr, MA);
    assert_string_equal(res.ha_server_addr, "10.0.0.1:10912");
}

/* A slave gets masterAddr and the MASTER's haServerAddr, only while the master is live. */
static void test_slave_gets_master_ha_only_when_master_live(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t s;
    rt_reg_init(&s, C, SA, "broker-a", 1);
    s.ha = "slave-ha:2";
    nsrv_register_result_t res = rt_reg_do(f->rt, &s, T0);
    assert_string_equal(res.master_addr, "");
    assert_string_equal(res.ha_server_addr, "");

    rt_reg_t m;
    rt_reg_two(&m, C, MA, "broker-a", 0, "T1", "T2");
    m.ha = "master-ha:1";
    rt_reg_do(f->rt, &m, T0);
    res = rt_reg_do(f->rt, &s, T0 + 10);
    assert_string_equal(res.master_addr, MA);
    assert_string_equal(res.ha_server_addr, "master-ha:1");

    /* The master's entry is past its timeout: it is not live, whatever the scan did. */
    uint64_t late = T0 + NSRV_ROUTE_DEFAULT_TIMEOUT_MS + 1;
    res = rt_reg_do(f->rt, &s, late);
    assert_string_equal(res.master_addr, "");
    assert_string_equal(res.ha_server_addr, "");

    /* Master back, then unregistered. */
    rt_reg_do(f->rt, &m, late);
    res = rt_reg_do(f->rt, &s, late);
    assert_string_equal(res.master_addr, MA);
    nsrv_route_unregister_broker(f->rt, C, MA, "broker-a", 0);
    res = rt_reg_do(f->rt, &s, late);
    assert_string_equal(res.master_addr, "");
    f->check_ms = late;
}

/* Topic config is applied only when the DataVersion changed or an entry is missing. */
static void test_topic_config_only_on_version_change(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_two(&r, C, MA, "broker-a", 0, "T1", "T2");
    rt_reg_do(f->rt, &r, T0);
    assert_int_equal(nsrv_route_wipe_write_perm(f->rt, "broker-a"), 2);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":4"));

    /* Same version: the wipe stays... */
    rt_reg_do(f->rt, &r, T0 + 1);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":4"));
    /* ...but a topic missing from the table is still created, with its own perm... */
    rt_reg_topic(&r, "T3", 2, 2, 6, 0);
    rt_reg_do(f->rt, &r, T0 + 2);
    assert_true(
        rt_contains(rt_route(f->rt, "T3", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":6"));
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":4"));
    /* ...and a topic deleted by an admin comes back. */
    nsrv_route_delete_topic(f->rt, "T2", NULL);
    assert_false(rt_has_route(f->rt, "T2", T0));
    rt_reg_do(f->rt, &r, T0 + 3);
    assert_true(
        rt_contains(rt_route(f->rt, "T2", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":6"));

    /* A new version restores everything. */
    r.dv.counter++;
    rt_reg_do(f->rt, &r, T0 + 4);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":6"));
    /* Any field counts: stateVersion alone is a change too. */
    nsrv_route_wipe_write_perm(f->rt, "broker-a");
    r.dv.state_version = 1;
    rt_reg_do(f->rt, &r, T0 + 5);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"perm\":6"));
    f->check_ms = T0 + 5;
}

/* The same address registering under a new id drops its old id (slave -> master). */
static void test_address_changing_id_drops_stale_id(void **state) {
    rt_fix_t *f = *state;
    rt_reg_simple(f->rt, C, MA, "broker-a", 0, "T1", T0);
    rt_reg_simple(f->rt, C, SA, "broker-a", 1, NULL, T0);
    assert_string_equal(member_addrs(f->rt, "broker-a", &f->b),
                        "{\"brokerMemberGroup\":{\"brokerAddrs\":{0:\"10.0.0.1:10911\",1:"
                        "\"10.0.0.2:10911\"},\"brokerName\":\"broker-a\",\"cluster\":"
                        "\"DefaultCluster\"}}");
    /* The old master leaves; the slave is promoted at the same address. */
    nsrv_route_unregister_broker(f->rt, C, MA, "broker-a", 0);
    rt_reg_simple(f->rt, C, SA, "broker-a", 0, "T1", T0 + 1);
    assert_string_equal(member_addrs(f->rt, "broker-a", &f->b),
                        "{\"brokerMemberGroup\":{\"brokerAddrs\":{0:\"10.0.0.2:10911\"},"
                        "\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\"}}");
    f->check_ms = T0 + 1;
}

/* proto/route.md §3 step 6: an id held by a live address with a newer stateVersion rejects the
 * newcomer. */
static void test_state_version_conflict(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t a;
    rt_reg_init(&a, C, MA, "broker-a", 0);
    a.dv.state_version = 5;
    rt_reg_topic(&a, "T1", 4, 4, 6, 0);
    rt_reg_topic(&a, "T2", 4, 4, 6, 0);
    rt_reg_do(f->rt, &a, T0);

    rt_reg_t n;
    rt_reg_init(&n, C, SA, "broker-a", 0);
    n.dv.state_version = 3;
    rt_reg_topic(&n, "T1", 8, 8, 6, 0);
    rt_reg_topic(&n, "T2", 8, 8, 6, 0);
    nsrv_register_result_t res = rt_reg_do(f->rt, &n, T0 + 1);
    assert_int_equal(res.status, NSRV_REG_OK); /* SUCCESS, but not registered */
    assert_string_equal(res.master_addr, "");
    assert_int_equal(nsrv_route_broker_count(f->rt), 1);
    nsrv_data_version_t st;
    bool has = true;
    assert_true(nsrv_route_query_data_version(f->rt, C, SA, &n.dv, T0 + 1, &st, &has));
    assert_false(has);
    assert_string_equal(member_addrs(f->rt, "broker-a", &f->b),
                        "{\"brokerMemberGroup\":{\"brokerAddrs\":{0:\"10.0.0.1:10911\"},"
                        "\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\"}}");
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0 + 1, &f->b),
                            "\"readQueueNums\":4"));

    /* A newer stateVersion takes the id over. */
    n.dv.state_version = 6;
    rt_reg_do(f->rt, &n, T0 + 2);
    assert_string_equal(member_addrs(f->rt, "broker-a", &f->b),
                        "{\"brokerMemberGroup\":{\"brokerAddrs\":{0:\"10.0.0.2:10911\"},"
                        "\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\"}}");
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0 + 2, &f->b),
                            "\"readQueueNums\":8"));
    f->check_ms = T0 + 2;
}

/* proto/route.md §3 step 7: one topic before the first full registration fails, leaving an empty
 * BrokerData. */
static void test_single_topic_guard(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_init(&r, C, MA, "broker-a", 0);
    rt_reg_topic(&r, "T1", 4, 4, 6, 0);
    assert_int_equal(rt_reg_do(f->rt, &r, T0).status, NSRV_REG_FAILED);
    assert_int_equal(nsrv_route_broker_count(f->rt), 0);
    assert_false(rt_has_route(f->rt, "T1", T0));
    assert_string_equal(
        rt_text(nsrv_route_cluster_info, f->rt, T0, &f->b),
        "{\"brokerAddrTable\":{\"broker-a\":{\"brokerAddrs\":{},\"brokerName\":"
        "\"broker-a\",\"cluster\":\"DefaultCluster\",\"enableActingMaster\":false}},"
        "\"clusterAddrTable\":{\"DefaultCluster\":[\"broker-a\"]}}");
    /* Duplicates of one name still count as one topic. */
    rt_reg_topic(&r, "T1", 4, 4, 6, 0);
    assert_int_equal(rt_reg_do(f->rt, &r, T0).status, NSRV_REG_FAILED);
    /* No topics at all is a (full) registration. */
    rt_reg_t full;
    rt_reg_init(&full, C, MA, "broker-a", 0);
    assert_int_equal(rt_reg_do(f->rt, &full, T0).status, NSRV_REG_OK);
    /* Once registered, a single-topic (incremental) registration is accepted. */
    r.n_topics = 1;
    r.dv.counter = 2;
    assert_int_equal(rt_reg_do(f->rt, &r, T0).status, NSRV_REG_OK);
    assert_true(rt_has_route(f->rt, "T1", T0));
}

static void test_delete_topic_with_broker_registration(void **state) {
    rt_fix_t *f = *state;
    nsrv_route_opts_t o = {.delete_topic_with_broker_registration = true};
    nsrv_route_set_opts(f->rt, &o);
    rt_reg_t a;
    rt_reg_two(&a, C, MA, "broker-a", 0, "T1", "T2");
    rt_reg_topic(&a, "Shared", 4, 4, 6, 0);
    rt_reg_do(f->rt, &a, T0);
    rt_reg_t bb;
    rt_reg_two(&bb, C, "10.0.0.9:10911", "broker-b", 0, "Shared", "B1");
    rt_reg_do(f->rt, &bb, T0);

    /* broker-a now reports only T1: T2 goes, Shared keeps broker-b's queues. */
    a.n_topics = 1;
    rt_reg_topic(&a, "T1b", 4, 4, 6, 0);
    rt_reg_do(f->rt, &a, T0 + 1);
    assert_true(rt_has_route(f->rt, "T1", T0 + 1));
    assert_false(rt_has_route(f->rt, "T2", T0 + 1));
    const char *s = rt_route(f->rt, "Shared", NSRV_ROUTE_JSON_STANDARD, T0 + 1, &f->b);
    assert_true(rt_contains(s, "broker-b"));
    assert_false(rt_contains(s, "broker-a"));

    /* With mapping infos (static topics) nothing is deleted. */
    rt_reg_t c;
    rt_reg_two(&c, C, MA, "broker-a", 0, "X1", "X2");
    c.mappings[0] = (nsrv_mapping_info_t){.topic = "X1", .bname = "broker-a", .epoch = 1};
    c.n_mappings = 1;
    rt_reg_do(f->rt, &c, T0 + 2);
    assert_true(rt_has_route(f->rt, "T1", T0 + 2));

    /* Off (the default): nothing is deleted either. */
    o.delete_topic_with_broker_registration = false;
    nsrv_route_set_opts(f->rt, &o);
    c.n_mappings = 0;
    rt_reg_do(f->rt, &c, T0 + 3);
    assert_true(rt_has_route(f->rt, "T1", T0 + 3));
    f->check_ms = T0 + 3;
}

/* Mapping infos are stored when the DataVersion changed (or first registration). */
static void test_mapping_info_stored_on_version_change(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_two(&r, C, MA, "broker-a", 0, "T1", "T2");
    rt_reg_sample_mapping(&r);
    rt_reg_do(f->rt, &r, T0);
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b),
                            ",\"topicQueueMappingByBroker\":{\"broker-a\":{\"bname\":\"broker-a\","
                            "\"currIdMap\":{\"0\":0,\"1\":3},\"dirty\":false,\"epoch\":3,\"scope\":"
                            "\"__global__\",\"topic\":\"T1\",\"totalQueues\":8}}}"));
    r.mappings[0].epoch = 4;
    rt_reg_do(f->rt, &r, T0 + 1); /* same version: not stored */
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"epoch\":3"));
    r.dv.counter++;
    rt_reg_do(f->rt, &r, T0 + 2);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"epoch\":4"));
    /* Never cleaned by topic deletion: it reappears with the topic. */
    nsrv_route_delete_topic(f->rt, "T1", "");
    assert_false(rt_has_route(f->rt, "T1", T0 + 2));
    nsrv_queue_data_t qd = {"broker-a", 1, 1, 6, 0};
    nsrv_route_register_topic(f->rt, "T1", &qd, 1);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "\"epoch\":4"));
}

/* zoneName follows the latest registration of any member, absent included. */
static void test_zone_overwritten_by_each_registration(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_two(&r, C, MA, "broker-a", 0, "T1", "T2");
    r.zone = "z1";
    rt_reg_do(f->rt, &r, T0);
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b),
                            "\"zoneName\":\"z1\""));
    rt_reg_t s;
    rt_reg_init(&s, C, SA, "broker-a", 1);
    rt_reg_do(f->rt, &s, T0);
    assert_false(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "zoneName"));
}

/* filterServerList: absent leaves it, empty removes it, a list replaces it. */
static void test_filter_servers(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_two(&r, C, MA, "broker-a", 0, "T1", "T2");
    r.filters[0] = "1.1.1.1:1";
    r.filters[1] = "2.2.2.2:2";
    r.n_filters = 2;
    rt_reg_do(f->rt, &r, T0);
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b),
                            "\"filterServerTable\":{\"10.0.0.1:10911\":[\"1.1.1.1:1\","
                            "\"2.2.2.2:2\"]}"));
    r.has_filter = false;
    rt_reg_do(f->rt, &r, T0);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b), "2.2.2.2:2"));
    r.has_filter = true;
    r.n_filters = 0;
    rt_reg_do(f->rt, &r, T0);
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b),
                            "\"filterServerTable\":{}"));
}

/* Missing identity fields: nothing changes (Java swallows the NPE). */
static void test_missing_identity_is_noop(void **state) {
    rt_fix_t *f = *state;
    nsrv_route_t *rt = f->rt;
    nsrv_register_req_t req = {.cluster = NULL, .broker_addr = MA, .broker_name = "b"};
    nsrv_register_result_t res;
    nsrv_route_register_broker(rt, &req, T0, &res);
    assert_int_equal(res.status, NSRV_REG_OK);
    req.cluster = C;
    req.broker_name = NULL;
    nsrv_route_register_broker(rt, &req, T0, &res);
    assert_int_equal(nsrv_route_broker_count(rt), 0);
    /* No body: an empty registration with DataVersion {0,0,0}. */
    req.broker_name = "b";
    req.body = NULL;
    nsrv_route_register_broker(rt, &req, T0, &res);
    assert_int_equal(res.status, NSRV_REG_OK);
    assert_int_equal(nsrv_route_broker_count(rt), 1);
    nsrv_data_version_t zero = {0, 0, 0}, st;
    bool has;
    assert_false(nsrv_route_query_data_version(rt, C, MA, &zero, T0, &st, &has));
    assert_true(has);
    rt_assert_ok(rt, T0);
    nsrv_route_destroy(&f->rt);
    assert_null(f->rt);
    nsrv_route_destroy(&f->rt); /* NULL-safe */
    nsrv_route_destroy(NULL);
}

NSRV_TEST_MAIN(NULL, NULL, RT_TEST(test_master_register_creates_entries),
               RT_TEST(test_slave_does_not_touch_queue_data),
               RT_TEST(test_prime_slave_writes_queue_data),
               RT_TEST(test_prime_slave_acting_master_clears_write),
               RT_TEST(test_old_slave_alone_no_queue_data), RT_TEST(test_old_broker_registration),
               RT_TEST(test_slave_gets_master_ha_only_when_master_live),
               RT_TEST(test_topic_config_only_on_version_change),
               RT_TEST(test_address_changing_id_drops_stale_id),
               RT_TEST(test_state_version_conflict), RT_TEST(test_single_topic_guard),
               RT_TEST(test_delete_topic_with_broker_registration),
               RT_TEST(test_mapping_info_stored_on_version_change),
               RT_TEST(test_zone_overwritten_by_each_registration), RT_TEST(test_filter_servers),
               RT_TEST(test_missing_identity_is_noop))
