/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gossip view of the route table (route_peer.c): what peers report may
 * keep a broker alive only until its timeout after the last direct heartbeat
 * anywhere, never longer; imports never count as direct heartbeats, never
 * rebind connections and never resurrect an expired broker.
 */
#include "route_test.h"
#include "testlib.h"

#define T0 1000000u
#define TIMEOUT 120000u

typedef struct {
    nsrv_route_live_info_t seen[8];
    size_t n;
} collect_t;

static void collect_cb(void *ud, const nsrv_route_live_info_t *info) {
    collect_t *c = ud;
    if (c->n < 8)
        c->seen[c->n++] = *info;
}

static void test_foreach_lists_direct_entries(void **state) {
    rt_fix_t *f = *state;
    rt_reg_simple(f->rt, "c", "a:1", "broker-a", 0, "T", T0);
    collect_t c = {0};
    nsrv_route_foreach_live(f->rt, T0 + 5, collect_cb, &c);
    assert_int_equal(c.n, 1);
    assert_string_equal(c.seen[0].broker_name, "broker-a");
    assert_string_equal(c.seen[0].broker_addr, "a:1");
    assert_int_equal(c.seen[0].last_direct_ms, T0);
    assert_int_equal(c.seen[0].conn_id, 1);
}

/* A broker learned only from a peer is routable, and expires TIMEOUT after the
 * peer's last direct heartbeat, not after the import. */
static void test_import_serves_routes_and_expires_by_peer_time(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_two(&r, "c", "a:1", "broker-a", 0, "T", "U");
    r.conn = 0;
    r.peer_seen = T0 - 30000; /* the peer heard it 30 s before we import */
    rt_reg_do(f->rt, &r, T0);
    assert_true(rt_has_route(f->rt, "T", T0));
    nsrv_route_live_info_t info;
    assert_true(nsrv_route_live_info(f->rt, "c", "a:1", T0, &info));
    assert_int_equal(info.last_direct_ms, 0);
    assert_int_equal(info.last_seen_ms, T0 - 30000);
    assert_true(rt_has_route(f->rt, "T", T0 - 30000 + TIMEOUT));
    assert_false(rt_has_route(f->rt, "T", T0 - 30000 + TIMEOUT + 1));
    f->check_ms = T0 + TIMEOUT;
}

static void test_import_cannot_resurrect(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_two(&r, "c", "a:1", "broker-a", 0, "T", "U");
    r.conn = 0;
    r.peer_seen = T0 - TIMEOUT - 1; /* already past its timeout when it arrives */
    rt_reg_do(f->rt, &r, T0);
    assert_false(rt_has_route(f->rt, "T", T0));
    assert_false(nsrv_route_live_info(f->rt, "c", "a:1", T0, &(nsrv_route_live_info_t){0}));
}

/* peer_seen raises last_seen (a max-merge) and so extends liveness, but never
 * beyond TIMEOUT after the latest direct heartbeat reported anywhere. */
static void test_peer_seen_is_a_max_merge(void **state) {
    rt_fix_t *f = *state;
    rt_reg_simple(f->rt, "c", "a:1", "broker-a", 0, "T", T0);
    nsrv_data_version_t dv = {1, 1700000000000LL, 0};
    assert_int_equal(nsrv_route_peer_seen(f->rt, "c", "a:1", &dv, T0 + 60000, T0 + 70000),
                     NSRV_PEER_SEEN_SAME);
    /* An older report does not lower it. */
    assert_int_equal(nsrv_route_peer_seen(f->rt, "c", "a:1", &dv, T0 + 10, T0 + 70000),
                     NSRV_PEER_SEEN_SAME);
    nsrv_route_live_info_t info;
    assert_true(nsrv_route_live_info(f->rt, "c", "a:1", T0 + 70000, &info));
    assert_int_equal(info.last_seen_ms, T0 + 60000);
    assert_int_equal(info.last_direct_ms, T0); /* gossip is never a direct heartbeat */
    assert_true(rt_has_route(f->rt, "T", T0 + 60000 + TIMEOUT));
    assert_false(rt_has_route(f->rt, "T", T0 + 60000 + TIMEOUT + 1));
}

static void test_peer_seen_cannot_claim_the_future(void **state) {
    rt_fix_t *f = *state;
    rt_reg_simple(f->rt, "c", "a:1", "broker-a", 0, "T", T0);
    nsrv_data_version_t dv = {1, 1700000000000LL, 0};
    nsrv_route_peer_seen(f->rt, "c", "a:1", &dv, T0 + 500000, T0 + 1000);
    nsrv_route_live_info_t info;
    assert_true(nsrv_route_live_info(f->rt, "c", "a:1", T0 + 1000, &info));
    assert_int_equal(info.last_seen_ms, T0);
}

static void test_peer_seen_versions(void **state) {
    rt_fix_t *f = *state;
    nsrv_data_version_t dv = {1, 1700000000000LL, 0};
    assert_int_equal(nsrv_route_peer_seen(f->rt, "c", "a:1", &dv, T0, T0), NSRV_PEER_SEEN_UNKNOWN);
    rt_reg_simple(f->rt, "c", "a:1", "broker-a", 0, "T", T0);
    nsrv_data_version_t newer = {2, 1700000000000LL, 0};
    nsrv_data_version_t older = {0, 1700000000000LL, 0};
    nsrv_data_version_t state_newer = {0, 0, 1}; /* stateVersion orders first */
    assert_int_equal(nsrv_route_peer_seen(f->rt, "c", "a:1", &newer, T0, T0), NSRV_PEER_SEEN_NEWER);
    assert_int_equal(nsrv_route_peer_seen(f->rt, "c", "a:1", &older, T0, T0), NSRV_PEER_SEEN_OLDER);
    assert_int_equal(nsrv_route_peer_seen(f->rt, "c", "a:1", &state_newer, T0, T0),
                     NSRV_PEER_SEEN_NEWER);
}

/* An import of a broker we also hear directly keeps our direct age and the
 * connection binding: closing that connection still unregisters it. */
static void test_import_keeps_direct_binding(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_two(&r, "c", "a:1", "broker-a", 0, "T", "U");
    r.conn = 7;
    rt_reg_do(f->rt, &r, T0);
    r.conn = 0;
    r.peer_seen = T0 + 100;
    r.dv.counter = 2; /* the peer has a newer table */
    rt_reg_topic(&r, "V", 4, 4, 6, 0);
    rt_reg_do(f->rt, &r, T0 + 200);
    nsrv_route_live_info_t info;
    assert_true(nsrv_route_live_info(f->rt, "c", "a:1", T0 + 200, &info));
    assert_int_equal(info.last_direct_ms, T0);
    assert_int_equal(info.last_seen_ms, T0 + 100);
    assert_int_equal(info.conn_id, 7);
    assert_true(rt_has_route(f->rt, "V", T0 + 200));
    assert_int_equal(nsrv_route_conn_closed(f->rt, 7, T0 + 300), 1);
    assert_false(rt_has_route(f->rt, "T", T0 + 300));
}

/* After an import, QUERY_DATA_VERSION with the same version says unchanged, so
 * the broker needs no full re-registration. */
static void test_query_after_import_unchanged(void **state) {
    rt_fix_t *f = *state;
    rt_reg_t r;
    rt_reg_two(&r, "c", "a:1", "broker-a", 0, "T", "U");
    r.conn = 0;
    r.peer_seen = T0;
    rt_reg_do(f->rt, &r, T0);
    nsrv_data_version_t stored;
    bool has = false;
    assert_false(nsrv_route_query_data_version(f->rt, "c", "a:1", &r.dv, T0 + 10, &stored, &has));
    assert_true(has);
    nsrv_route_live_info_t info;
    assert_true(nsrv_route_live_info(f->rt, "c", "a:1", T0 + 10, &info));
    assert_int_equal(info.last_direct_ms, T0 + 10); /* the query was a direct heartbeat */
}

static void test_tombstone_versus_later_heartbeat(void **state) {
    rt_fix_t *f = *state;
    rt_reg_simple(f->rt, "c", "a:1", "broker-a", 0, "T", T0);
    /* The broker restarted and heartbeat us after the unregister event: keep it. */
    assert_false(nsrv_route_peer_unregister(f->rt, "c", "a:1", "broker-a", 0, T0 - 1, T0 + 5));
    assert_true(rt_has_route(f->rt, "T", T0 + 5));
    /* The unregister happened after everything we heard: apply it. */
    assert_true(nsrv_route_peer_unregister(f->rt, "c", "a:1", "broker-a", 0, T0 + 1, T0 + 5));
    assert_false(rt_has_route(f->rt, "T", T0 + 5));
    f->check_ms = T0 + 5;
}

/* export_body on node A, imported on node B, gives B the same routes. */
static void test_export_import_round_trip(void **state) {
    (void)state;
    nsrv_route_t *a = nsrv_route_create(), *b = nsrv_route_create();
    rt_reg_t r;
    rt_reg_init(&r, "c", "a:1", "broker-a", 0);
    rt_reg_topic(&r, "T", 4, 8, 6, 1);
    rt_reg_topic(&r, "U", 2, 2, 4, 0);
    r.filters[0] = "f:1";
    r.n_filters = 1;
    nsrv_int_pair_t ids[2] = {{0, 0}, {1, 3}};
    r.mappings[0] = (nsrv_mapping_info_t){"T", "broker-a", "__global__", 3, 8, false, ids, 2};
    r.n_mappings = 1;
    rt_reg_do(a, &r, T0);

    nsrv_arena_t arena;
    nsrv_arena_init(&arena, 4096);
    nsrv_register_body_t body;
    assert_int_equal(nsrv_route_export_body(a, "c", "a:1", &arena, &body), 0);
    assert_int_equal(nsrv_route_export_body(a, "c", "nope:1", &arena, &body), -ENOENT);
    assert_int_equal(nsrv_route_export_body(a, "c", "a:1", &arena, &body), 0);
    nsrv_route_live_info_t info;
    assert_true(nsrv_route_live_info(a, "c", "a:1", T0, &info));
    nsrv_register_req_t req = {
        .cluster = info.cluster,
        .broker_addr = info.broker_addr,
        .broker_name = info.broker_name,
        .ha_server_addr = info.ha_server_addr,
        .zone_name = info.zone_name,
        .broker_id = info.broker_id,
        .timeout_ms = info.timeout_ms,
        .acting_master = info.acting_master,
        .body = &body,
        .peer_last_seen_ms = T0,
    };
    nsrv_register_result_t res;
    nsrv_route_register_broker(b, &req, T0 + 1, &res);
    nsrv_buf_t ba = NSRV_BUF_INIT, bb = NSRV_BUF_INIT;
    for (int mode = 0; mode < 2; mode++) {
        assert_string_equal(rt_route(a, "T", (nsrv_route_json_t)mode, T0 + 1, &ba),
                            rt_route(b, "T", (nsrv_route_json_t)mode, T0 + 1, &bb));
        assert_string_equal(rt_route(a, "U", (nsrv_route_json_t)mode, T0 + 1, &ba),
                            rt_route(b, "U", (nsrv_route_json_t)mode, T0 + 1, &bb));
    }
    assert_non_null(strstr(bb.data, "\"brokerName\":\"broker-a\""));
    nsrv_buf_deinit(&ba);
    nsrv_buf_deinit(&bb);
    nsrv_arena_deinit(&arena);
    nsrv_route_destroy(&a);
    nsrv_route_destroy(&b);
}

NSRV_TEST_MAIN(NULL, NULL, RT_TEST(test_foreach_lists_direct_entries),
               RT_TEST(test_import_serves_routes_and_expires_by_peer_time),
               RT_TEST(test_import_cannot_resurrect), RT_TEST(test_peer_seen_is_a_max_merge),
               RT_TEST(test_peer_seen_cannot_claim_the_future), RT_TEST(test_peer_seen_versions),
               RT_TEST(test_import_keeps_direct_binding),
               RT_TEST(test_query_after_import_unchanged),
               RT_TEST(test_tombstone_versus_later_heartbeat),
               cmocka_unit_test(test_export_import_round_trip))
