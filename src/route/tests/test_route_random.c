/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Randomized operation sequences over a small universe of clusters, broker
 * names, addresses, topics and connections, with many seeds. After every
 * operation the table's invariants are checked (nsrv__route_check): indexes
 * consistent, no topic without queue data, every queue data's broker name has
 * a BrokerData, one id per address, connection counts right, the expiry bound
 * below every deadline, and - the cache's correctness - every cached route
 * body byte-equal to a fresh encoding. After every read, no live entry is
 * past its deadline. Every body produced must parse as JSON.
 */
#include "route_test.h"

#include "nsrv/arena.h"
#include "nsrv/json.h"
#include "nsrv/log.h"
#include "testlib.h"

#define SEEDS 150
#define OPS 1500

static const char *clusters[] = {"C1", "C2"};
static const char *names[] = {"ba", "bb", "bc", "b/\xe4\xb8\xad"};
static const char *addrs[] = {"h1:1", "h2:1", "h3:1", "h4:1", "h5:1", "h6:1"};
static const char *topics[] = {"T0", "T1", "T2", "T3", "TBW102", "rmq_sys_SYNC_BROKER_MEMBER_ba"};
static const char *zones[] = {NULL, "z1", "Z2"};

typedef struct {
    uint64_t s;
} rng_t;

static uint32_t rnd(rng_t *r, uint32_t n) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (uint32_t)(r->s % n);
}

#define PICK(r, arr) (arr[rnd((r), NSRV_ARRAY_LEN(arr))])

static nsrv_arena_t arena;

static void assert_json(const char *s, size_t len) {
    nsrv_json_t *root = NULL;
    char err[128];
    nsrv_arena_reset(&arena);
    if (nsrv_json_parse(&arena, s, len, &root, err, sizeof err) != 0)
        fail_msg("invalid JSON (%s): %.*s", err, (int)len, s);
    assert_int_equal(root->type, NSRV_JSON_OBJECT);
}

static void op_register(nsrv_route_t *rt, rng_t *r, uint64_t now) {
    static nsrv_int_pair_t ids[] = {{0, 0}, {1, 1}, {0, 2}};
    rt_reg_t g;
    rt_reg_init(&g, PICK(r, clusters), PICK(r, addrs), PICK(r, names), (int64_t)rnd(r, 3));
    g.acting = (int)rnd(r, 3) - 1;
    g.timeout_ms = rnd(r, 3) == 0 ? 5000 : 0;
    g.conn = rnd(r, 5); /* 0 = none */
    g.zone = PICK(r, zones);
    g.dv.counter = rnd(r, 3);
    g.dv.state_version = rnd(r, 3);
    size_t nt = rnd(r, 4);
    for (size_t i = 0; i < nt; i++)
        rt_reg_topic(&g, PICK(r, topics), (int32_t)rnd(r, 8), (int32_t)rnd(r, 8),
                     (int32_t)rnd(r, 16), (int32_t)rnd(r, 4));
    g.has_filter = rnd(r, 2);
    if (g.has_filter && rnd(r, 3) == 0) {
        g.filters[0] = rnd(r, 2) ? "f1:1" : "f2:2";
        g.n_filters = 1;
    }
    if (rnd(r, 4) == 0) {
        g.mappings[0] = (nsrv_mapping_info_t){.topic = PICK(r, topics),
                                              .bname = g.name,
                                              .epoch = rnd(r, 3),
                                              .total_queues = 4,
                                              .curr_id_map = ids,
                                              .n_curr_id = rnd(r, 4)};
        g.n_mappings = 1;
    }
    nsrv_register_result_t res = rt_reg_do(rt, &g, now);
    if (res.status == NSRV_REG_FAILED)
        assert_int_equal(g.n_topics > 0, 1);
    if (g.id == 0)
        assert_string_equal(res.master_addr, "");
}

static void op_read_route(nsrv_route_t *rt, rng_t *r, uint64_t now) {
    const char *topic = PICK(r, topics);
    nsrv_route_json_t mode = rnd(r, 2) ? NSRV_ROUTE_JSON_STANDARD : NSRV_ROUTE_JSON_DEFAULT;
    const char *order = rnd(r, 4) == 0 ? "ba:4" : NULL;
    const char *zone = rnd(r, 5) == 0 ? PICK(r, zones) : NULL;
    const char *body;
    size_t len;
    int rc = nsrv_route_topic_route(rt, topic, mode, order, zone, now, &body, &len);
    if (rc == 0) {
        assert_json(body, len);
        assert_true(rt_contains(body, "\"queueDatas\":["));
    } else {
        assert_int_equal(rc, -ENOENT);
        assert_null(nsrv__route_topic_find(rt, topic));
    }
}

static void op_read_other(nsrv_route_t *rt, rng_t *r, uint64_t now, nsrv_buf_t *b) {
    nsrv_buf_reset(b);
    switch (rnd(r, 6)) {
    case 0:
        nsrv_route_cluster_info(rt, now, b);
        break;
    case 1:
        nsrv_route_topic_list(rt, (nsrv_topic_filter_t)rnd(r, 4), now, b);
        break;
    case 2:
        nsrv_route_topics_by_cluster(rt, PICK(r, clusters), now, b);
        break;
    case 3:
        nsrv_route_system_topic_list(rt, now, b);
        break;
    case 4:
        nsrv_route_member_group(rt, PICK(r, clusters), PICK(r, names), now, b);
        break;
    default: {
        nsrv_data_version_t dv = {rnd(r, 3), 1700000000000LL, rnd(r, 3)}, st;
        bool has;
        nsrv_route_query_data_version(rt, PICK(r, clusters), PICK(r, addrs), rnd(r, 4) ? &dv : NULL,
                                      now, &st, &has);
        nsrv_buf_append_c(b, "{}");
        break;
    }
    }
    assert_json(b->data, b->len);
}

static size_t closes_seen;
static void count_close(void *ud, uint64_t conn_id) {
    (void)ud;
    assert_true(conn_id != 0);
    closes_seen++;
}

static void run_seed(uint64_t seed) {
    rng_t r = {seed * 0x9E3779B97F4A7C15ULL + 1};
    nsrv_route_t *rt = nsrv_route_create();
    nsrv_route_set_conn_close_cb(rt, count_close, NULL);
    nsrv_buf_t b = NSRV_BUF_INIT;
    uint64_t now = 1000;
    for (int op = 0; op < OPS; op++) {
        now += rnd(&r, 4) == 0 ? rnd(&r, 130000) : rnd(&r, 3000);
        bool read = false;
        switch (rnd(&r, 14)) {
        case 0:
        case 1:
        case 2:
            op_register(rt, &r, now);
            break;
        case 3:
            nsrv_route_unregister_broker(rt, PICK(&r, clusters), PICK(&r, addrs), PICK(&r, names),
                                         (int64_t)rnd(&r, 3));
            break;
        case 4:
            nsrv_route_conn_closed(rt, rnd(&r, 5), now);
            break;
        case 5:
            nsrv_route_expire(rt, now);
            read = true;
            break;
        case 6:
            nsrv_route_broker_heartbeat(rt, PICK(&r, clusters), PICK(&r, addrs), now);
            read = true;
            break;
        case 7:
            if (rnd(&r, 2))
                nsrv_route_wipe_write_perm(rt, PICK(&r, names));
            else
                nsrv_route_add_write_perm(rt, PICK(&r, names));
            break;
        case 8:
            nsrv_route_delete_topic(rt, PICK(&r, topics), rnd(&r, 2) ? PICK(&r, clusters) : NULL);
            break;
        case 9: {
            nsrv_queue_data_t qds[2] = {{PICK(&r, names), 1, 1, 6, 0},
                                        {PICK(&r, names), 2, 2, (int32_t)rnd(&r, 8), 1}};
            nsrv_route_register_topic(rt, PICK(&r, topics), qds, 1 + rnd(&r, 2));
            break;
        }
        case 10: {
            nsrv_route_opts_t o = {rnd(&r, 2) == 0, rnd(&r, 2) == 0};
            nsrv_route_set_opts(rt, &o);
            break;
        }
        case 11:
            op_read_other(rt, &r, now, &b);
            read = true;
            break;
        default:
            op_read_route(rt, &r, now);
            read = true;
            break;
        }
        char why[256] = "";
        int rc = nsrv__route_check(rt, read ? now : 0, why, sizeof why);
        if (rc != 0)
            fail_msg("seed %llu op %d: invariant %d: %s", (unsigned long long)seed, op, rc, why);
    }
    nsrv_buf_deinit(&b);
    nsrv_route_destroy(&rt);
}

static void test_random_sequences(void **state) {
    (void)state;
    nsrv_arena_init(&arena, 4096);
    closes_seen = 0;
    for (uint64_t seed = 1; seed <= SEEDS; seed++)
        run_seed(seed);
    assert_true(closes_seen > 0); /* the sequences do exercise expiry */
    nsrv_arena_deinit(&arena);
}

/* Thousands of expected notices otherwise. */
static int quiet_log(void **state) {
    (void)state;
    nsrv_log_level = NSRV_LOG_ERROR;
    return 0;
}

NSRV_TEST_MAIN(quiet_log, NULL, cmocka_unit_test(test_random_sequences))
