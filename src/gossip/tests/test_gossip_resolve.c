/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Peers by host name (node_resolve.c; proto/gossip.md §8.2), run by the
 * simulator as transport.c and resolve.c run them: the engine asks for each
 * lookup (NSRV_GOSSIP_ACT_RESOLVE) and the simulator answers it later. Each
 * test pins one rule the engine decides: the start that waits for the first
 * answers, and for NSRV_GOSSIP_RESOLVE_START_MS at most; the cap on lookups
 * in flight; the periods of the poll; the lookup a refused source kicks.
 */
#include "gossip_sim.h"
#include "testlib.h"

static gs_sim_t *sim_named(size_t n, uint32_t resolve_ms) {
    gs_sim_t *s = gs_new(n, 11);
    s->timers = true;
    s->named = true;
    s->resolve_ms = resolve_ms;
    return s;
}

/* Every node started, its first lookups answered and its first exchanges done. */
static gs_sim_t *sim_named_running(size_t n, uint32_t resolve_ms) {
    gs_sim_t *s = sim_named(n, resolve_ms);
    gs_start_all(s);
    gs_run(s, 3000);
    return s;
}

static bool started(gs_sim_t *s, uint8_t id) {
    return nsrv_gossip_node_started(s->node[id].g);
}

/* Five named peers: two lookups at a time; the start waits for the two it began with
 * (not for all five), and the others start as answers free a place. */
static void test_start_waits_for_the_first_lookups_two_at_a_time(void **state) {
    (void)state;
    gs_sim_t *s = sim_named(6, 400);
    uint64_t t0 = s->now;
    size_t from = s->nsent;
    gs_start(s, A);
    assert_int_equal(s->lookups[A][B], 1);
    assert_int_equal(s->lookups[A][C], 1);
    assert_int_equal(s->lookups[A][D] + s->lookups[A][E] + s->lookups[A][F], 0);
    assert_false(started(s, A));
    gs_run_until(s, t0 + 399); /* the 250 ms poll finds D, E and F due but no free place */
    assert_false(started(s, A));
    assert_int_equal(s->lookups[A][D] + s->lookups[A][E] + s->lookups[A][F], 0);
    assert_int_equal(gs_count_sent(s, from, A, 0, 0), 0); /* mute while it waits */
    gs_run_until(s, t0 + 400);
    assert_true(started(s, A));
    assert_int_equal(s->lookups[A][D] + s->lookups[A][E], 2);
    assert_int_equal(s->lookups[A][F], 0);
    /* Its first words go to the peers it has addresses for, none to the others. */
    assert_int_equal(gs_count_sent(s, from, A, B, NSRV_GOSSIP_SYNC_REQ), 1);
    assert_int_equal(gs_count_sent(s, from, A, C, NSRV_GOSSIP_SYNC_REQ), 1);
    assert_int_equal(gs_count_sent(s, from, A, D, 0), 0);
    gs_run_until(s, t0 + 800);
    assert_int_equal(s->lookups[A][F], 1);
    /* F answered at 1200: the SYNC_REQ retry after that reaches it */
    gs_run_until(s, t0 + 400 + 2 * NSRV_GOSSIP_SYNC_RETRY_MS);
    assert_true(gs_count_sent(s, from, A, F, NSRV_GOSSIP_SYNC_REQ) >= 1);
    assert_int_equal(s->resolving_max[A], NSRV_GOSSIP_RESOLVE_MAX_INFLIGHT);
    gs_del(s);
}

/* A resolver that never answers keeps the node mute NSRV_GOSSIP_RESOLVE_START_MS, no longer;
 * the names answered late are used from then on. */
static void test_start_gives_up_waiting_after_resolve_start_ms(void **state) {
    (void)state;
    gs_sim_t *s = sim_named(3, 0);
    s->resolve_hold = true;
    uint64_t t0 = s->now;
    size_t from = s->nsent;
    gs_start(s, A);
    gs_run_until(s, t0 + NSRV_GOSSIP_RESOLVE_START_MS - 1);
    assert_false(started(s, A));
    gs_run_until(s, t0 + NSRV_GOSSIP_RESOLVE_START_MS);
    assert_true(started(s, A));
    assert_int_equal(gs_count_sent(s, from, A, 0, 0), 0); /* no address: nothing sent */
    assert_int_equal(s->lookups[A][B], 1);                /* one lookup each, still running */
    assert_int_equal(s->lookups[A][C], 1);
    s->resolve_hold = false;
    gs_resolve_release(s);
    gs_run(s, NSRV_GOSSIP_SYNC_RETRY_MS + 1);
    assert_true(gs_count_sent(s, from, A, B, NSRV_GOSSIP_SYNC_REQ) >= 1);
    assert_true(gs_count_sent(s, from, A, C, NSRV_GOSSIP_SYNC_REQ) >= 1);
    gs_del(s);
}

/* A peer that is heard is looked up every NSRV_GOSSIP_RESOLVE_MS; a silent one every
 * NSRV_GOSSIP_RESOLVE_SILENT_MS (it may have moved); an unresolvable one as often. */
static void test_poll_periods(void **state) {
    (void)state;
    gs_sim_t *s = sim_named_running(2, 1);
    assert_true(started(s, A) && started(s, B));
    uint64_t n0 = s->lookups[A][B];
    gs_run(s, 20000);
    uint64_t heard = s->lookups[A][B] - n0;
    assert_true(heard >= 20000 / NSRV_GOSSIP_RESOLVE_MS - 1 &&
                heard <= 20000 / NSRV_GOSSIP_RESOLVE_MS);
    gs_stop(s, B);
    gs_run(s, (uint64_t)NSRV_GOSSIP_RESOLVE_SILENT_INTERVALS * s->full_ms + NSRV_GOSSIP_RESOLVE_MS);
    n0 = s->lookups[A][B];
    gs_run(s, 10000);
    uint64_t silent = s->lookups[A][B] - n0;
    assert_true(silent >= 10000 / NSRV_GOSSIP_RESOLVE_SILENT_MS - 1 &&
                silent <= 10000 / NSRV_GOSSIP_RESOLVE_SILENT_MS);
    /* The poll looks every NSRV_GOSSIP_RESOLVE_TICK_MS: never later than that after due. */
    uint64_t last = s->lookup_at[A][B];
    gs_run(s, NSRV_GOSSIP_RESOLVE_SILENT_MS + NSRV_GOSSIP_RESOLVE_TICK_MS);
    assert_true(s->lookup_at[A][B] > last);
    assert_true(s->lookup_at[A][B] - last <=
                NSRV_GOSSIP_RESOLVE_SILENT_MS + NSRV_GOSSIP_RESOLVE_TICK_MS);
    /* An unresolvable name: the error is kept for status, retried at the silent period. */
    s->unresolvable[B] = true;
    gs_run(s, 2 * NSRV_GOSSIP_RESOLVE_MS);
    nsrv_gossip_peer_info_t info;
    nsrv_gossip_peer_info(nsrv_gossip_peers_find(s->node[A].peers, B), &info);
    assert_true(info.resolve_error != 0);
    assert_string_equal(info.resolve_error_name, "EAI_NONAME");
    assert_true(info.has_addr); /* its last address stays */
    gs_del(s);
}

/* B's datagram e reaching A from a source that is not B's address: refused for it. */
static void refused_at_a(gs_sim_t *s, const gs_sent_t *e, const struct sockaddr_in *src) {
    assert_int_equal(nsrv_gossip_node_on_dgram(s->node[A].g, e->d, e->len,
                                               (const struct sockaddr *)src, gs_mono(s, A),
                                               gs_wall(s, A)),
                     NSRV_GOSSIP_ESRC_ADDR);
    gs_drain(s, A);
}

/* A datagram or pull connection refused for its source address looks the names up at once
 * (a restarted container on a new address), at most every NSRV_GOSSIP_RESOLVE_KICK_MS. */
static void test_refused_source_kicks_a_lookup(void **state) {
    (void)state;
    gs_sim_t *s = sim_named_running(2, 1);
    gs_run(s, NSRV_GOSSIP_RESOLVE_KICK_MS);
    long k = gs_find_sent(s, 0, B, A, 0);
    assert_true(k >= 0);
    gs_sent_t *e = gs_sent(s, (size_t)k);
    struct sockaddr_in elsewhere = gt_sin("10.0.9.2", GS_PORT);
    uint64_t n0 = s->lookups[A][B];
    refused_at_a(s, e, &elsewhere);
    assert_int_equal(s->lookups[A][B], n0 + 1);
    assert_int_equal(s->lookup_at[A][B], s->now);
    /* Again 50 ms later: too soon. */
    gs_run(s, 50);
    refused_at_a(s, e, &elsewhere);
    assert_int_equal(s->lookups[A][B], n0 + 1);
    /* A pull connection from there, past the kick period: looked up again, and refused. */
    gs_run(s, NSRV_GOSSIP_RESOLVE_KICK_MS);
    assert_int_equal(nsrv_gossip_node_pull_conn_open(
                         s->node[A].g, (const struct sockaddr *)&elsewhere, gs_mono(s, A)),
                     0);
    gs_drain(s, A);
    assert_int_equal(s->lookups[A][B], n0 + 2);
    gs_del(s);
}

/* SIGHUP looks every name up again, within the same cap. */
static void test_reload_looks_every_name_up_within_the_cap(void **state) {
    (void)state;
    gs_sim_t *s = sim_named_running(4, 100);
    for (int i = 0; i < 10000 && s->resolving[A]; i++)
        gs_run(s, 1);
    assert_int_equal(s->resolving[A], 0);
    uint64_t before = s->lookups[A][B] + s->lookups[A][C] + s->lookups[A][D];
    assert_int_equal(nsrv_gossip_node_resolve_all(s->node[A].g, gs_mono(s, A)),
                     NSRV_GOSSIP_RESOLVE_MAX_INFLIGHT);
    gs_drain(s, A);
    assert_int_equal(s->lookups[A][B] + s->lookups[A][C] + s->lookups[A][D], before + 2);
    gs_run(s, 100); /* an answer frees a place for the third name */
    assert_true(s->lookups[A][B] + s->lookups[A][C] + s->lookups[A][D] >= before + 3);
    assert_int_equal(s->resolving_max[A], NSRV_GOSSIP_RESOLVE_MAX_INFLIGHT);
    gs_del(s);
}

NSRV_TEST_MAIN(gs_group_setup, NULL,
               cmocka_unit_test(test_start_waits_for_the_first_lookups_two_at_a_time),
               cmocka_unit_test(test_start_gives_up_waiting_after_resolve_start_ms),
               cmocka_unit_test(test_poll_periods),
               cmocka_unit_test(test_refused_source_kicks_a_lookup),
               cmocka_unit_test(test_reload_looks_every_name_up_within_the_cap))
