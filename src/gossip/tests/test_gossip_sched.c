/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's schedule (node_sched.c, node_pull.c; constants in
 * nsrv/gossip_timing.h), run by the simulator exactly as transport.c runs
 * it: the engine names its next deadline and the simulator wakes it then.
 * Each test pins one timing rule, so a rule broken in the engine (deltas not
 * sent, no back-off after a failed pull, an anchor never refreshed, SYNC_REQ
 * never repeated, a lost pull never abandoned) fails here.
 */
#include "gossip_sim.h"

#define A 1
#define B 2
#define C 3

static gs_sim_t *sim_timers(size_t n) {
    gs_sim_t *s = nsrv_malloc(sizeof *s);
    gs_init(s, n, 7);
    s->timers = true;
    gs_start_all(s);
    gs_run(s, 2000); /* start-up: SYNC, PULL ALL, anchors */
    return s;
}

static void sim_del(gs_sim_t *s) {
    gs_free(s);
    nsrv_free(s);
}

/* A broker heard by A reaches B and C by a delta and a pull, not by the
 * next full digest (full_ms = 5 s). */
static void test_delta_then_pull_spreads_a_new_broker(void **state) {
    (void)state;
    gs_sim_t *s = sim_timers(3);
    gs_broker_t b;
    gs_broker_init(&b, 1);
    gs_register(s, A, &b);
    uint64_t t0 = s->now;
    while (!(gs_routes_to(s, B, &b) && gs_routes_to(s, C, &b)) && s->now - t0 < 10000)
        gs_run(s, 1);
    uint64_t took = s->now - t0;
    /* a delta tick, a pull batch, the pull's round trip */
    assert_true(took <= s->delta_ms + NSRV_GOSSIP_PULL_BATCH_MS + 10);
    sim_del(s);
}

/* A peer whose pulls fail is asked again no sooner than the back-off. */
static void test_failed_pull_backs_off(void **state) {
    (void)state;
    gs_sim_t *s = sim_timers(2);
    s->pull_fail_ms = 1; /* a refused connection is noticed at once */
    gs_stop(s, B);
    gs_broker_t b;
    gs_broker_init(&b, 1);
    /* B's last digest said "b exists" before it died: A wants b from B. */
    nsrv_gossip_node_want_all(s->node[A].g, B);
    uint64_t before = s->pulls_to[A][B];
    gs_run(s, 10000);
    uint64_t tries = s->pulls_to[A][B] - before;
    assert_true(tries >= 10000 / (NSRV_GOSSIP_PULL_RETRY_MS + NSRV_GOSSIP_PULL_BATCH_MS) - 1);
    assert_true(tries <= 10000 / NSRV_GOSSIP_PULL_RETRY_MS + 1);
    sim_del(s);
}

/* With nothing to fetch, a peer is still pulled often enough that its clock
 * anchor never gets older than NSRV_GOSSIP_ANCHOR_REFRESH_MS (plus a batch). */
static void test_anchor_is_refreshed(void **state) {
    (void)state;
    gs_sim_t *s = sim_timers(2);
    uint64_t oldest = 0;
    for (int k = 0; k < 300; k++) {
        gs_run(s, 1000);
        nsrv_gossip_peer_info_t info;
        nsrv_gossip_peer_info(nsrv_gossip_peers_find(s->node[A].peers, B), &info);
        assert_true(info.has_anchor);
        uint64_t age = gs_mono(s, A) - info.anchor_mono_ms;
        oldest = NSRV_MAX(oldest, age);
    }
    assert_true(oldest <= NSRV_GOSSIP_ANCHOR_REFRESH_MS + NSRV_GOSSIP_PULL_BATCH_MS + 1000);
    /* ... and not much more often than that */
    assert_true(s->pulls_to[A][B] <= 2 + 300000 / NSRV_GOSSIP_ANCHOR_REFRESH_MS + 1);
    sim_del(s);
}

/* SYNC_REQ is repeated every NSRV_GOSSIP_SYNC_RETRY_MS until the peer's first
 * digest arrives, then stops. */
static void test_sync_repeats_until_answered(void **state) {
    (void)state;
    gs_sim_t *s = nsrv_malloc(sizeof *s);
    gs_init(s, 2, 9);
    s->timers = true;
    gs_start(s, A);
    size_t from = s->nsent;
    gs_run(s, 3000);
    size_t syncs = gs_count_sent(s, from, A, B, NSRV_GOSSIP_SYNC_REQ);
    assert_true(syncs >= 3000 / NSRV_GOSSIP_SYNC_RETRY_MS);
    assert_true(syncs <= 3000 / NSRV_GOSSIP_SYNC_RETRY_MS + 1);
    gs_start(s, B);
    gs_run(s, 1000);
    from = s->nsent;
    gs_run(s, 3000);
    assert_int_equal(gs_count_sent(s, from, A, B, NSRV_GOSSIP_SYNC_REQ), 0);
    sim_del(s);
}

/* A pull whose reply never comes (and whose connection never fails) is
 * abandoned after NSRV_GOSSIP_PULL_DEADLINE_MS, and the peer asked again. */
static void test_lost_pull_is_abandoned_at_the_deadline(void **state) {
    (void)state;
    gs_sim_t *s = sim_timers(2);
    s->pull_fail_ms = 0; /* black hole */
    s->drop_pm = 1000;   /* every datagram and pull leg lost */
    nsrv_gossip_node_want_all(s->node[A].g, B);
    uint64_t before = s->pulls_to[A][B];
    gs_run(s, NSRV_GOSSIP_PULL_DEADLINE_MS - 100);
    assert_int_equal(s->pulls_to[A][B] - before, 1); /* one pull, still waited for */
    gs_run(s, 100 + NSRV_GOSSIP_PULL_RETRY_MS + 3 * NSRV_GOSSIP_PULL_BATCH_MS);
    assert_int_equal(s->pulls_to[A][B] - before, 2); /* abandoned, asked again */
    sim_del(s);
}

int main(void) {
    nsrv_log_level = NSRV_LOG_ERROR;
    assert_int_equal(nsrv_seal_init(), 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delta_then_pull_spreads_a_new_broker),
        cmocka_unit_test(test_failed_pull_backs_off),
        cmocka_unit_test(test_anchor_is_refreshed),
        cmocka_unit_test(test_sync_repeats_until_answered),
        cmocka_unit_test(test_lost_pull_is_abandoned_at_the_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
