/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET_ROUTEINFO_BY_TOPIC bodies: the proto/route.md §9 samples byte for byte in both
 * modes, escaping, the zone filter (proto/requests.md §2.8), the acting-master rewrite
 * (proto/route.md §6), orderTopicConf, and the per-topic body cache and its invalidation.
 */
#include "route_test.h"
#include "testlib.h"

#define C "DefaultCluster"
#define MA "192.168.0.1:10911"
#define SA "192.168.0.2:10911"
#define T0 RT_T0

/* broker-a: master MA + slave SA, topic TopicTest 4/4/6/0 (proto/route.md §9 samples). */
static void sample_cluster(nsrv_route_t *rt, const char *zone) {
    rt_reg_t m, s;
    rt_reg_init(&m, C, MA, "broker-a", 0);
    m.zone = zone;
    rt_reg_topic(&m, "TopicTest", 4, 4, 6, 0);
    rt_reg_topic(&m, "TBW102", 8, 8, 7, 0);
    rt_reg_do(rt, &m, T0);
    rt_reg_init(&s, C, SA, "broker-a", 1);
    s.zone = zone;
    rt_reg_do(rt, &s, T0);
}

static const char *route_full(nsrv_route_t *rt, const char *topic, nsrv_route_json_t mode,
                              const char *order, const char *zone, nsrv_buf_t *b) {
    const char *body = NULL;
    size_t len = 0;
    nsrv_buf_reset(b);
    if (nsrv_route_topic_route(rt, topic, mode, order, zone, T0, &body, &len) != 0)
        return NULL;
    assert_int_equal(strlen(body), len);
    nsrv_buf_append(b, body, len);
    return b->data;
}

/* The spec's sample cluster in each JSON form a client gets: a 4.9.4+ client's standard JSON,
 * and fastjson's default with bare numeric keys for the older ones. */
static const struct {
    nsrv_route_json_t mode;
    const char *json;
} spec_samples[] = {
    {NSRV_ROUTE_JSON_DEFAULT,
     "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"192.168.0.1:10911\",1:\"192.168.0.2:10911\"},"
     "\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\",\"enableActingMaster\":false}],"
     "\"filterServerTable\":{},\"queueDatas\":[{\"brokerName\":\"broker-a\",\"perm\":6,"
     "\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4}]}"},
    {NSRV_ROUTE_JSON_STANDARD,
     "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"192.168.0.1:10911\",\"1\":\"192.168.0.2:"
     "10911\"},\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\","
     "\"enableActingMaster\":false}],\"filterServerTable\":{},\"queueDatas\":[{\"brokerName\":"
     "\"broker-a\",\"perm\":6,\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4}]}"},
};

static void assert_spec_sample(rt_fix_t *f, size_t i) {
    sample_cluster(f->rt, NULL);
    assert_string_equal(rt_route(f->rt, "TopicTest", spec_samples[i].mode, T0, &f->b),
                        spec_samples[i].json);
}

static void test_spec_sample_default(void **state) {
    assert_spec_sample(*state, 0);
}

static void test_spec_sample_standard(void **state) {
    assert_spec_sample(*state, 1);
}

/* Every optional part: zoneName, filter servers, orderTopicConf, mapping infos. */
static void all_optional(nsrv_route_t *rt) {
    rt_reg_t m, s;
    rt_reg_init(&m, C, MA, "broker-a", 0);
    m.zone = "zone1";
    rt_reg_topic(&m, "T1", 4, 4, 6, 0);
    rt_reg_topic(&m, "TBW102", 8, 8, 7, 0);
    m.filters[0] = "1.1.1.1:1";
    m.n_filters = 1;
    rt_reg_sample_mapping(&m);
    rt_reg_do(rt, &m, T0);
    rt_reg_init(&s, C, SA, "broker-a", 1);
    s.zone = "zone1";
    rt_reg_do(rt, &s, T0);
}

static void test_spec_sample_all_optional(void **state) {
    rt_fix_t *f = *state;
    all_optional(f->rt);
    assert_string_equal(
        route_full(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, "broker-a:4", NULL, &f->b),
        "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"192.168.0.1:10911\",\"1\":\"192.168.0.2:"
        "10911\"},\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\","
        "\"enableActingMaster\":false,\"zoneName\":\"zone1\"}],\"filterServerTable\":{"
        "\"192.168.0.1:10911\":[\"1.1.1.1:1\"]},\"orderTopicConf\":\"broker-a:4\",\"queueDatas\":[{"
        "\"brokerName\":\"broker-a\",\"perm\":6,\"readQueueNums\":4,\"topicSysFlag\":0,"
        "\"writeQueueNums\":4}],\"topicQueueMappingByBroker\":{\"broker-a\":{\"bname\":\"broker-"
        "a\","
        "\"currIdMap\":{\"0\":0,\"1\":3},\"dirty\":false,\"epoch\":3,\"scope\":\"__global__\","
        "\"topic\":\"T1\",\"totalQueues\":8}}}");
    /* Default mode differs only in the bare numeric keys. */
    assert_string_equal(
        route_full(f->rt, "T1", NSRV_ROUTE_JSON_DEFAULT, "broker-a:4", NULL, &f->b),
        "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"192.168.0.1:10911\",1:\"192.168.0.2:10911\"},"
        "\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\",\"enableActingMaster\":false,"
        "\"zoneName\":\"zone1\"}],\"filterServerTable\":{\"192.168.0.1:10911\":[\"1.1.1.1:1\"]},"
        "\"orderTopicConf\":\"broker-a:4\",\"queueDatas\":[{\"brokerName\":\"broker-a\",\"perm\":6,"
        "\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4}],"
        "\"topicQueueMappingByBroker\":{\"broker-a\":{\"bname\":\"broker-a\",\"currIdMap\":{0:0,1:"
        "3},"
        "\"dirty\":false,\"epoch\":3,\"scope\":\"__global__\",\"topic\":\"T1\",\"totalQueues\":8}}"
        "}");
}

static void test_cluster_info_sample(void **state) {
    rt_fix_t *f = *state;
    sample_cluster(f->rt, "zone1");
    assert_string_equal(
        rt_text(nsrv_route_cluster_info, f->rt, T0, &f->b),
        "{\"brokerAddrTable\":{\"broker-a\":{\"brokerAddrs\":{0:\"192.168.0.1:10911\",1:\"192.168."
        "0.2:10911\"},\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\","
        "\"enableActingMaster\":false,\"zoneName\":\"zone1\"}},\"clusterAddrTable\":{"
        "\"DefaultCluster\":[\"broker-a\"]}}");
}

/* Standard mode: ids in numeric order, strings browser-escaped; default mode raw. */
static void test_ordering_and_escaping(void **state) {
    rt_fix_t *f = *state;
    const char *name = "broker-\xe4\xb8\xad/\"x";
    int64_t ids[] = {100, 2, 33, 0, 10};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(ids); i++) {
        char addr[32];
        snprintf(addr, sizeof addr, "h%lld:1", (long long)ids[i]);
        rt_reg_t r;
        rt_reg_two(&r, C, addr, name, ids[i], "T/1", "T2");
        rt_reg_do(f->rt, &r, T0);
    }
    assert_true(
        rt_contains(rt_route(f->rt, "T/1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b),
                    "{\"brokerAddrs\":{\"0\":\"h0:1\",\"2\":\"h2:1\",\"10\":\"h10:1\","
                    "\"33\":\"h33:1\",\"100\":\"h100:1\"},\"brokerName\":\"broker-\\u4E2D\\/"
                    "\\\"x\""));
    assert_true(rt_contains(rt_route(f->rt, "T/1", NSRV_ROUTE_JSON_DEFAULT, T0, &f->b),
                            "{\"brokerAddrs\":{0:\"h0:1\",2:\"h2:1\",10:\"h10:1\",33:\"h33:1\","
                            "100:\"h100:1\"},\"brokerName\":\"broker-\xe4\xb8\xad/\\\"x\""));
}

/* Longs beyond 2^53-1 are strings in standard mode (BrowserCompatible). */
static void test_big_epoch_quoted_in_standard(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_two(&r, C, MA, "broker-a", 0, "T1", "T2");
    r.mappings[0] = (nsrv_mapping_info_t){
        .topic = "T1", .bname = "broker-a", .epoch = 9007199254740992LL, .dirty = true};
    r.mappings[1] =
        (nsrv_mapping_info_t){.topic = "T2", .bname = "broker-a", .epoch = 9007199254740991LL};
    r.n_mappings = 2;
    rt_reg_do(f->rt, &r, T0);
    /* Absent scope: the Java field initializer "__global__". */
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b),
                            "{\"bname\":\"broker-a\",\"currIdMap\":{},\"dirty\":true,\"epoch\":"
                            "\"9007199254740992\",\"scope\":\"__global__\",\"topic\":\"T1\","
                            "\"totalQueues\":0}"));
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_DEFAULT, T0, &f->b),
                            "\"epoch\":9007199254740992,"));
    assert_true(rt_contains(rt_route(f->rt, "T2", NSRV_ROUTE_JSON_STANDARD, T0, &f->b),
                            "\"epoch\":9007199254740991,"));
}

/* Two groups in different zones plus a group whose master is down. */
static void zone_cluster(nsrv_route_t *rt) {
    rt_reg_t r;
    rt_reg_two(&r, C, "a0:1", "broker-a", 0, "T1", "T2");
    r.zone = "Zone-A";
    r.filters[0] = "fa:1";
    r.n_filters = 1;
    rt_reg_do(rt, &r, T0);
    rt_reg_two(&r, C, "b0:1", "broker-b", 0, "T1", "T2");
    r.zone = "zone-b";
    r.filters[0] = "fb:1";
    r.n_filters = 1;
    rt_reg_do(rt, &r, T0);
    /* broker-c: only a slave left, zone-b. */
    rt_reg_two(&r, C, "c0:1", "broker-c", 0, "T1", "T2");
    r.zone = "zone-b";
    rt_reg_do(rt, &r, T0);
    rt_reg_init(&r, C, "c1:1", "broker-c", 1);
    r.zone = "zone-b";
    rt_reg_do(rt, &r, T0);
    nsrv_route_unregister_broker(rt, C, "c0:1", "broker-c", 0);
}

static void test_zone_filter(void **state) {
    rt_fix_t *f = *state;
    zone_cluster(f->rt);
    /* Case-insensitive match keeps broker-a; broker-c has no master and stays; broker-f->b goes,
     * with its queue data and filter servers. Default-mode keys even though STANDARD was asked. */
    assert_string_equal(
        route_full(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, NULL, "zone-a", &f->b),
        "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"a0:1\"},\"brokerName\":\"broker-a\",\"cluster\":"
        "\"DefaultCluster\",\"enableActingMaster\":false,\"zoneName\":\"Zone-A\"},{\"brokerAddrs\":"
        "{1:\"c1:1\"},\"brokerName\":\"broker-c\",\"cluster\":\"DefaultCluster\","
        "\"enableActingMaster\":false,\"zoneName\":\"zone-b\"}],\"filterServerTable\":{\"a0:1\":["
        "\"fa:1\"]},\"queueDatas\":[{\"brokerName\":\"broker-a\",\"perm\":6,\"readQueueNums\":4,"
        "\"topicSysFlag\":0,\"writeQueueNums\":4},{\"brokerName\":\"broker-c\",\"perm\":6,"
        "\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4}]}");
    /* No zone matches: only the masterless group is left. */
    const char *s = route_full(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, NULL, "zone-x", &f->b);
    assert_false(rt_contains(s, "broker-a"));
    assert_false(rt_contains(s, "broker-b"));
    assert_true(rt_contains(s, "broker-c"));
    assert_true(rt_contains(s, "\"filterServerTable\":{}"));
    /* A blank zone means no filter; the unfiltered standard body is cached as usual. */
    s = route_full(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, NULL, "  ", &f->b);
    assert_true(rt_contains(s, "broker-b"));
    assert_true(rt_contains(s, "{\"0\":\"a0:1\"}"));
    /* Unknown topic: TOPIC_NOT_EXIST with or without a zone. */
    assert_null(route_full(f->rt, "Nope", NSRV_ROUTE_JSON_STANDARD, NULL, "zone-a", &f->b));
}

/* supportActingMaster: a masterless acting group with read-only queues shows its smallest id
 * as 0 - in the reply only - except for rmq_sys_SYNC_BROKER_MEMBER_ topics. */
static void test_acting_master_rewrite(void **state) {
    rt_fix_t *f = *state;
    const char *sync_topic = "rmq_sys_SYNC_BROKER_MEMBER_broker-a";
    for (int64_t id = 2; id <= 3; id++) {
        rt_reg_t r;
        char addr[16];
        snprintf(addr, sizeof addr, "s%lld:1", (long long)id);
        rt_reg_init(&r, C, addr, "broker-a", id);
        r.acting = 1;
        rt_reg_topic(&r, "T1", 4, 4, 6, 0);
        rt_reg_topic(&r, sync_topic, 1, 1, 1, 0);
        rt_reg_do(f->rt, &r, T0);
    }
    /* The prime slave (id 2) wrote read-only queues. Without the option: real ids. */
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b),
                            "{\"2\":\"s2:1\",\"3\":\"s3:1\"}"));
    nsrv_route_opts_t o = {.support_acting_master = true};
    nsrv_route_set_opts(f->rt, &o);
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b),
                            "{\"0\":\"s2:1\",\"3\":\"s3:1\"}"));
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_DEFAULT, T0, &f->b),
                            "{0:\"s2:1\",3:\"s3:1\"}"));
    assert_true(rt_contains(rt_route(f->rt, sync_topic, NSRV_ROUTE_JSON_STANDARD, T0, &f->b),
                            "{\"2\":\"s2:1\",\"3\":\"s3:1\"}"));
    /* The table is untouched. */
    nsrv_route_member_group(f->rt, C, "broker-a", T0, &f->b);
    assert_true(rt_contains(f->b.data, "{2:\"s2:1\",3:\"s3:1\"}"));
    /* A rewritten group counts as having a master for the zone filter. */
    assert_true(rt_contains(route_full(f->rt, "T1", NSRV_ROUTE_JSON_DEFAULT, NULL, "zz", &f->b),
                            "\"brokerDatas\":[]"));
    /* Writable queues: no rewrite. */
    nsrv_route_add_write_perm(f->rt, "broker-a");
    assert_true(rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, T0, &f->b),
                            "{\"2\":\"s2:1\",\"3\":\"s3:1\"}"));
}

static void test_order_topic_conf(void **state) {
    rt_fix_t *f = *state;
    sample_cluster(f->rt, NULL);
    assert_false(
        rt_contains(route_full(f->rt, "TopicTest", NSRV_ROUTE_JSON_STANDARD, NULL, NULL, &f->b),
                    "orderTopicConf"));
    assert_true(rt_contains(
        route_full(f->rt, "TopicTest", NSRV_ROUTE_JSON_STANDARD, "broker-a:4;b/2:2", NULL, &f->b),
        "\"filterServerTable\":{},\"orderTopicConf\":\"broker-a:4;b\\/2:2\",\"queueDatas\""));
    /* The conf is part of the cache key. */
    assert_true(rt_contains(
        route_full(f->rt, "TopicTest", NSRV_ROUTE_JSON_STANDARD, "broker-a:8", NULL, &f->b),
        "\"orderTopicConf\":\"broker-a:8\""));
    assert_false(
        rt_contains(route_full(f->rt, "TopicTest", NSRV_ROUTE_JSON_STANDARD, NULL, NULL, &f->b),
                    "orderTopicConf"));
}

static uint64_t builds(const nsrv_route_t *rt) {
    nsrv_route_stats_t st;
    nsrv_route_get_stats(rt, &st);
    return st.route_cache_builds;
}

/* Heartbeats and unchanged registrations keep the cached body; every change replaces it. */
static void test_route_cache(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t m;
    rt_reg_two(&m, C, MA, "broker-a", 0, "TopicTest", "Other");
    rt_reg_do(f->rt, &m, T0);

    const char *p1 = NULL, *p2 = NULL;
    size_t l1 = 0, l2 = 0;
    assert_int_equal(nsrv_route_topic_route(f->rt, "TopicTest", NSRV_ROUTE_JSON_STANDARD, NULL,
                                            NULL, T0, &p1, &l1),
                     0);
    uint64_t n = builds(f->rt);
    nsrv_data_version_t st;
    bool has;
    nsrv_route_broker_heartbeat(f->rt, C, MA, T0 + 1);
    nsrv_route_query_data_version(f->rt, C, MA, &m.dv, T0 + 2, &st, &has);
    rt_reg_do(f->rt, &m, T0 + 3); /* same version, same topics */
    nsrv_route_expire(f->rt, T0 + 4);
    assert_int_equal(nsrv_route_topic_route(f->rt, "TopicTest", NSRV_ROUTE_JSON_STANDARD, NULL,
                                            NULL, T0 + 5, &p2, &l2),
                     0);
    assert_ptr_equal(p1, p2);
    assert_int_equal(builds(f->rt), n);

    /* A new version with new queue numbers: the next read sees them. */
    m.dv.counter++;
    m.topics[0].read_queue_nums = 8;
    rt_reg_do(f->rt, &m, T0 + 6);
    assert_true(rt_contains(rt_route(f->rt, "TopicTest", NSRV_ROUTE_JSON_STANDARD, T0 + 6, &f->b),
                            "\"readQueueNums\":8"));
    assert_int_equal(builds(f->rt), n + 1);
    /* A new version that changes nothing in the queue data keeps the body. */
    m.dv.counter++;
    rt_reg_do(f->rt, &m, T0 + 7);
    rt_route(f->rt, "TopicTest", NSRV_ROUTE_JSON_STANDARD, T0 + 7, &f->b);
    assert_int_equal(builds(f->rt), n + 1);

    /* Each kind of change invalidates: a new group member, wipe, add, zone, delete, expiry. */
    const char *expect[] = {"192.168.0.2:10911", "\"perm\":4", "\"perm\":6", "\"zoneName\":\"z\"",
                            "\"readQueueNums\":8"};
    for (int step = 0; step < 5; step++) {
        switch (step) {
        case 0:
            rt_reg_simple(f->rt, C, SA, "broker-a", 1, NULL, T0 + 8);
            break;
        case 1:
            nsrv_route_wipe_write_perm(f->rt, "broker-a");
            break;
        case 2:
            nsrv_route_add_write_perm(f->rt, "broker-a");
            break;
        case 3:
            m.zone = "z";
            rt_reg_do(f->rt, &m, T0 + 9);
            break;
        case 4:
            nsrv_route_unregister_broker(f->rt, C, SA, "broker-a", 1);
            break;
        }
        const char *s = rt_route(f->rt, "TopicTest", NSRV_ROUTE_JSON_STANDARD, T0 + 9, &f->b);
        assert_true(rt_contains(s, expect[step]));
        if (step == 4)
            assert_false(rt_contains(s, SA));
        rt_assert_ok(f->rt, T0 + 9);
    }
    /* Filter servers of the group's address. */
    m.filters[0] = "9.9.9.9:9";
    m.n_filters = 1;
    rt_reg_do(f->rt, &m, T0 + 10);
    assert_true(rt_contains(rt_route(f->rt, "TopicTest", NSRV_ROUTE_JSON_DEFAULT, T0 + 10, &f->b),
                            "9.9.9.9:9"));
    /* Mapping infos. */
    m.dv.counter++;
    m.mappings[0] = (nsrv_mapping_info_t){.topic = "TopicTest", .bname = "broker-a", .epoch = 77};
    m.n_mappings = 1;
    rt_reg_do(f->rt, &m, T0 + 11);
    assert_true(rt_contains(rt_route(f->rt, "TopicTest", NSRV_ROUTE_JSON_DEFAULT, T0 + 11, &f->b),
                            "\"epoch\":77"));
    /* Delete and re-create through REGISTER_TOPIC. */
    nsrv_route_delete_topic(f->rt, "TopicTest", C);
    assert_false(rt_has_route(f->rt, "TopicTest", T0 + 11));
    nsrv_queue_data_t qd = {"broker-a", 3, 3, 6, 0};
    nsrv_route_register_topic(f->rt, "TopicTest", &qd, 1);
    assert_true(rt_contains(rt_route(f->rt, "TopicTest", NSRV_ROUTE_JSON_DEFAULT, T0 + 11, &f->b),
                            "\"readQueueNums\":3"));
    /* Expiry (read-time) of the only broker: no route. */
    assert_false(rt_has_route(f->rt, "TopicTest", T0 + 11 + NSRV_ROUTE_DEFAULT_TIMEOUT_MS + 1));
    f->check_ms = 0;
}

/* Changing supportActingMaster at runtime drops cached bodies. */
static void test_opts_change_invalidates(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_two(&r, C, "s1:1", "broker-a", 1, "T1", "T2");
    r.acting = 1;
    rt_reg_do(f->rt, &r, T0);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_DEFAULT, T0, &f->b), "{1:\"s1:1\"}"));
    nsrv_route_opts_t o = {.support_acting_master = true};
    nsrv_route_set_opts(f->rt, &o);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_DEFAULT, T0, &f->b), "{0:\"s1:1\"}"));
    o.support_acting_master = false;
    nsrv_route_set_opts(f->rt, &o);
    assert_true(
        rt_contains(rt_route(f->rt, "T1", NSRV_ROUTE_JSON_DEFAULT, T0, &f->b), "{1:\"s1:1\"}"));
}

NSRV_TEST_MAIN(NULL, NULL, RT_TEST(test_spec_sample_default), RT_TEST(test_spec_sample_standard),
               RT_TEST(test_spec_sample_all_optional), RT_TEST(test_cluster_info_sample),
               RT_TEST(test_ordering_and_escaping), RT_TEST(test_big_epoch_quoted_in_standard),
               RT_TEST(test_zone_filter), RT_TEST(test_acting_master_rewrite),
               RT_TEST(test_order_topic_conf), RT_TEST(test_route_cache),
               RT_TEST(test_opts_change_invalidates))
