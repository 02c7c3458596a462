/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pull server's connections (node_conns.c; proto/gossip.md §7.5), run by
 * the simulator as pull_io.c runs them: the engine admits each connection
 * under an id, wakes at its deadline and emits NSRV_GOSSIP_ACT_CLOSE. Each
 * test pins one rule: a configured peer's address only; a complete request
 * within NSRV_GOSSIP_PULL_REQ_DEADLINE_MS; the reply within
 * NSRV_GOSSIP_PULL_DEADLINE_MS; at most NSRV_GOSSIP_PULL_SRV_MAX, the oldest
 * silent one evicted for a newer one.
 */
#include "gossip_sim.h"
#include "testlib.h"

static gs_sim_t *sim_two(void) {
    gs_sim_t *s = gs_new(2, 5);
    s->timers = true;
    gs_start_all(s);
    gs_run(s, 2000);
    return s;
}

static uint32_t conn_open(gs_sim_t *s, const char *ip) {
    struct sockaddr_in from = gt_sin(ip, 40000);
    uint32_t id = nsrv_gossip_node_pull_conn_open(s->node[A].g, (const struct sockaddr *)&from,
                                                  gs_mono(s, A));
    gs_drain(s, A);
    return id;
}

/* A connection from B's address (any port), accepted. */
static uint32_t peer_conn_open(gs_sim_t *s) {
    uint32_t id = conn_open(s, "10.0.0.2");
    assert_true(id != 0);
    return id;
}

/* B's PULL_REQ sent on connection conn to A; returns A's verdict. */
static int conn_request(gs_sim_t *s, uint32_t conn) {
    gs_msg_t m;
    assert_int_equal(gs_pull_begin(s, B, A, NULL, 0, true, &m), 0);
    struct sockaddr_in from = gs_addr(B);
    nsrv_buf_t out;
    nsrv_buf_init(&out);
    int rc = nsrv_gossip_node_pull_conn_request(s->node[A].g, conn, m.d + 4, m.len - 4,
                                                (const struct sockaddr *)&from, gs_mono(s, A),
                                                gs_wall(s, A), &out);
    assert_true(rc == 0 ? out.len > 0 : out.len == 0);
    nsrv_buf_deinit(&out);
    nsrv_free(m.d);
    gs_drain(s, A);
    return rc;
}

/* Connection id is still open at last_open and closed (the only close) one ms later. */
static void closed_just_after(gs_sim_t *s, uint32_t id, uint64_t last_open) {
    gs_run_until(s, last_open);
    assert_int_equal(s->conns_closed[A], 0);
    gs_run_until(s, last_open + 1);
    assert_int_equal(s->conns_closed[A], 1);
    assert_int_equal(s->conn_closed_last[A], id);
}

static nsrv_gossip_counters_t *counters(gs_sim_t *s) {
    return nsrv_gossip_node_counters(s->node[A].g);
}

static size_t open_conns(gs_sim_t *s) {
    return nsrv_gossip_node_pull_conns(s->node[A].g);
}

static void test_stranger_is_refused(void **state) {
    (void)state;
    gs_sim_t *s = sim_two();
    assert_int_equal(conn_open(s, "10.9.9.9"), 0);
    assert_int_equal(counters(s)->pull_conns_not_peer, 1);
    assert_int_equal(open_conns(s), 0);
    assert_true(conn_open(s, "10.0.0.2") != 0); /* B's address, any port */
    gs_del(s);
}

/* Silent: closed when NSRV_GOSSIP_PULL_REQ_DEADLINE_MS have passed, by the engine's own
 * deadline (no input needed). */
static void test_silent_conn_closed_at_the_request_deadline(void **state) {
    (void)state;
    gs_sim_t *s = sim_two();
    uint64_t t0 = s->now;
    uint32_t id = peer_conn_open(s);
    closed_just_after(s, id, t0 + NSRV_GOSSIP_PULL_REQ_DEADLINE_MS);
    assert_int_equal(counters(s)->pull_conns_timed_out, 1);
    assert_int_equal(open_conns(s), 0);
    /* A request that arrives after that is not served. */
    assert_true(conn_request(s, id) != 0);
    gs_del(s);
}

/* Answered: its reply may take until NSRV_GOSSIP_PULL_DEADLINE_MS after the accept. */
static void test_answered_conn_gets_the_pull_deadline(void **state) {
    (void)state;
    gs_sim_t *s = sim_two();
    uint64_t t0 = s->now;
    uint32_t id = peer_conn_open(s);
    assert_int_equal(conn_request(s, id), 0);
    uint64_t served = counters(s)->pulls_served;
    assert_true(served >= 1);
    assert_true(conn_request(s, id) != 0); /* one request per connection */
    closed_just_after(s, id, t0 + NSRV_GOSSIP_PULL_DEADLINE_MS);
    assert_int_equal(counters(s)->pull_conns_timed_out, 0);
    gs_del(s);
}

/* Closed by the I/O layer (reply written, peer gone): forgotten, no deadline left. */
static void test_closed_conn_is_forgotten(void **state) {
    (void)state;
    gs_sim_t *s = sim_two();
    uint32_t id = peer_conn_open(s);
    nsrv_gossip_node_pull_conn_closed(s->node[A].g, id);
    assert_int_equal(open_conns(s), 0);
    gs_run(s, NSRV_GOSSIP_PULL_DEADLINE_MS + 1);
    assert_int_equal(s->conns_closed[A], 0);
    assert_int_equal(counters(s)->pull_conns_timed_out, 0);
    gs_del(s);
}

/* Full: a new connection evicts the oldest one that has not sent its request; when every
 * one is being answered, the new one is refused. */
static void test_full_server_evicts_the_oldest_silent_conn(void **state) {
    (void)state;
    gs_sim_t *s = sim_two();
    uint32_t ids[NSRV_GOSSIP_PULL_SRV_MAX];
    for (size_t i = 0; i < NSRV_GOSSIP_PULL_SRV_MAX; i++) {
        ids[i] = peer_conn_open(s);
        gs_run(s, 1);
    }
    assert_int_equal(conn_request(s, ids[0]), 0); /* the oldest is being answered */
    /* A stranger is refused before anything is evicted for it. */
    assert_int_equal(conn_open(s, "10.9.9.9"), 0);
    assert_int_equal(s->conns_closed[A], 0);
    assert_int_equal(counters(s)->pull_conns_evicted, 0);
    uint32_t extra = peer_conn_open(s);
    assert_int_equal(s->conns_closed[A], 1);
    assert_int_equal(s->conn_closed_last[A], ids[1]); /* the oldest silent one */
    assert_int_equal(counters(s)->pull_conns_evicted, 1);
    assert_int_equal(open_conns(s), NSRV_GOSSIP_PULL_SRV_MAX);
    assert_true(conn_request(s, ids[1]) != 0); /* evicted: forgotten */
    for (size_t i = 2; i < NSRV_GOSSIP_PULL_SRV_MAX; i++)
        assert_int_equal(conn_request(s, ids[i]), 0);
    assert_int_equal(conn_request(s, extra), 0);
    assert_int_equal(conn_open(s, "10.0.0.2"), 0); /* every one answering: refused */
    assert_int_equal(counters(s)->pull_conns_evicted, 2);
    assert_int_equal(s->conns_closed[A], 1);
    gs_del(s);
}

NSRV_TEST_MAIN(gs_group_setup, NULL, cmocka_unit_test(test_stranger_is_refused),
               cmocka_unit_test(test_silent_conn_closed_at_the_request_deadline),
               cmocka_unit_test(test_answered_conn_gets_the_pull_deadline),
               cmocka_unit_test(test_closed_conn_is_forgotten),
               cmocka_unit_test(test_full_server_evicts_the_oldest_silent_conn))
