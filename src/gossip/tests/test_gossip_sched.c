/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's schedule (node_sched.c, node_pull.c; constants in
 * nsrv/gossip_timing.h), run by the simulator exactly as transport.c runs
 * it: the engine names its next deadline and the simulator wakes it then.
 * Each test pins one timing rule, so a rule broken in the engine (deltas not
 * sent, no back-off after a failed pull, an anchor never refreshed, SYNC_REQ
 * never repeated, a lost pull never abandoned) fails here.
 */
#include <fcntl.h>
#include <unistd.h>

#include "gossip_sim.h"
#include "testlib.h"

static gs_sim_t *sim_timers(size_t n) {
    gs_sim_t *s = gs_new(n, 7);
    s->timers = true;
    gs_start_all(s);
    gs_run(s, 2000); /* start-up: SYNC, PULL ALL, anchors */
    return s;
}

/* A broker heard by A reaches B and C by a delta and a pull, not by the
 * next full digest (full_ms = 5 s). */
static void test_delta_then_pull_spreads_a_new_broker(void **state) {
    (void)state;
    gs_sim_t *s = sim_timers(3);
    gs_broker_t b;
    gs_broker_init(&b, 1);
    size_t from = s->nsent;
    gs_register(s, A, &b);
    uint64_t t0 = s->now;
    while (!(gs_routes_to(s, B, &b) && gs_routes_to(s, C, &b)) && s->now - t0 < 10000)
        gs_run(s, 1);
    uint64_t took = s->now - t0;
    /* a delta tick, a pull batch, the pull's round trip */
    assert_true(took <= s->delta_ms + NSRV_GOSSIP_PULL_BATCH_MS + 10);
    /* The delta is repeated in the next NSRV_GOSSIP_DELTA_REPEATS ticks, then stops. */
    gs_run(s, 2000);
    assert_int_equal(gs_count_sent(s, from, A, B, NSRV_GOSSIP_DIGEST_DELTA),
                     1 + NSRV_GOSSIP_DELTA_REPEATS);
    gs_del(s);
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
    gs_del(s);
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
    gs_del(s);
}

/* SYNC_REQ is repeated every NSRV_GOSSIP_SYNC_RETRY_MS until the peer's first
 * digest arrives, then stops. */
static void test_sync_repeats_until_answered(void **state) {
    (void)state;
    gs_sim_t *s = gs_new(2, 9);
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
    gs_del(s);
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
    gs_del(s);
}

/* ---- loss and clock skew (proto/gossip.md §9.3) ---- */

#define LOSS_SEEDS 200

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t pct(uint64_t *v, size_t n, unsigned p) {
    qsort(v, n, sizeof v[0], cmp_u64);
    size_t i = (n * p + 99) / 100;
    return v[i ? i - 1 : 0];
}

static gs_sim_t *lossy(uint64_t seed) {
    gs_sim_t *s = gs_new(3, seed * 0x9E3779B97F4A7C15u + 11);
    s->timers = true;
    s->drop_pm = 300; /* 30 % of datagrams */
    s->pulls_lossless = true;
    s->delay_min = 1;
    s->delay_max = 5;
    gs_start_all(s);
    gs_run(s, 3000 + gs_range(s, 0, 100));
    return s;
}

/* A broker heard by node 1 only is routable on nodes 2 and 3 within 1 s at
 * p99 with 30 % of datagrams lost (each delta is repeated
 * NSRV_GOSSIP_DELTA_REPEATS times). */
static void test_loss_30pct_new_broker_p99_under_1s(void **state) {
    (void)state;
    uint64_t t[2 * LOSS_SEEDS];
    size_t n = 0;
    for (uint64_t seed = 1; seed <= LOSS_SEEDS; seed++) {
        gs_sim_t *s = lossy(seed);
        gs_broker_t b;
        gs_broker_init(&b, (unsigned)seed);
        gs_register(s, A, &b);
        uint64_t t0 = s->now, done[4] = {0};
        while ((!done[B] || !done[C]) && s->now - t0 < 30000) {
            gs_run(s, 1);
            for (uint8_t id = B; id <= C; id++)
                if (!done[id] && gs_routes_to(s, id, &b))
                    done[id] = s->now - t0;
        }
        assert_true(done[B] && done[C]);
        t[n++] = done[B];
        t[n++] = done[C];
        gs_del(s);
    }
    uint64_t p50 = pct(t, n, 50), p99 = pct(t, n, 99), max = t[n - 1];
    print_message("loss 30%%: %zu samples, p50 %" PRIu64 " ms, p99 %" PRIu64 " ms, max %" PRIu64
                  " ms\n",
                  n, p50, p99, max);
    assert_true(p99 < 1000);
}

/* A node restarted under 30 % datagram loss holds every broker within 0.5 s. */
static void test_loss_30pct_restarted_node_complete_under_500ms(void **state) {
    (void)state;
    uint64_t t[LOSS_SEEDS];
    for (uint64_t seed = 1; seed <= LOSS_SEEDS; seed++) {
        gs_sim_t *s = lossy(seed);
        gs_broker_t b[6];
        for (unsigned k = 0; k < 6; k++) {
            gs_broker_init(&b[k], k);
            gs_register(s, (uint8_t)(A + k % 2), &b[k]);
        }
        gs_run(s, 2000);
        gs_stop(s, C);
        gs_run(s, 100);
        gs_start(s, C);
        uint64_t t0 = s->now;
        for (;;) {
            bool all = true;
            for (unsigned k = 0; k < 6 && all; k++)
                all = gs_routes_to(s, C, &b[k]);
            if (all || s->now - t0 > 30000)
                break;
            gs_run(s, 1);
        }
        t[seed - 1] = s->now - t0;
        gs_del(s);
    }
    uint64_t p99 = pct(t, LOSS_SEEDS, 99);
    print_message("restart under loss 30%%: p50 %" PRIu64 " ms, p99 %" PRIu64 " ms\n",
                  pct(t, LOSS_SEEDS, 50), p99);
    assert_true(p99 < 500);
}

/* Node 2's wall clock 5 minutes ahead (node 3's 5 minutes behind): gossip
 * does not care. Nothing is refused and a broker heard by node 1 reaches
 * both at delta speed. */
static void test_wall_clock_skew_changes_nothing(void **state) {
    (void)state;
    gs_sim_t *s = gs_new(3, 5);
    s->timers = true;
    s->node[B].wall_off = 5 * 60000;
    s->node[C].wall_off = -5 * 60000;
    gs_start_all(s);
    gs_run(s, 3000);
    gs_broker_t b;
    gs_broker_init(&b, 1);
    gs_register(s, A, &b);
    gs_run(s, s->delta_ms + NSRV_GOSSIP_PULL_BATCH_MS + 20);
    assert_true(gs_routes_to(s, B, &b));
    assert_true(gs_routes_to(s, C, &b));
    for (int r = 0; r < NSRV_GOSSIP_NREASONS; r++)
        assert_int_equal(s->rejected[r], 0);
    for (uint8_t id = A; id <= C; id++)
        assert_false(nsrv_gossip_node_degraded(s->node[id].g, gs_mono(s, id), NULL));
    gs_del(s);
}

/* A peer refused for any reason is visible at once: /health degraded (with
 * the peer and the reason) until NSRV_GOSSIP_REFUSAL_HEALTH_MS has passed. */
static void test_refused_peer_degrades_health(void **state) {
    (void)state;
    gs_sim_t *s = sim_timers(2);
    assert_false(nsrv_gossip_node_degraded(s->node[A].g, gs_mono(s, A), NULL));
    /* B's next datagram (held back), with one byte of its signature flipped */
    size_t from = s->nsent;
    gs_link(s, A, B, false);
    gs_run(s, s->full_ms + 600);
    gs_link(s, A, B, true);
    long k = gs_find_sent(s, from, B, A, 0);
    assert_true(k >= 0);
    gs_sent_t *e = gs_sent(s, (size_t)k);
    uint8_t *bad = gs_dup_bytes(e->d, e->len);
    bad[e->len - 1] ^= 1;
    assert_int_equal(gs_deliver_raw(s, A, B, bad, e->len), NSRV_GOSSIP_EBAD_SIG);
    nsrv_free(bad);
    nsrv_buf_t why;
    nsrv_buf_init(&why);
    assert_true(nsrv_gossip_node_degraded(s->node[A].g, gs_mono(s, A), &why));
    nsrv_buf_append_ch(&why, '\0');
    assert_non_null(strstr(why.data, "node 2"));
    assert_non_null(strstr(why.data, "bad_sig"));
    nsrv_buf_deinit(&why);
    gs_run(s, NSRV_GOSSIP_REFUSAL_HEALTH_MS + 10);
    assert_false(nsrv_gossip_node_degraded(s->node[A].g, gs_mono(s, A), NULL));
    gs_del(s);
}

/* A node restarted where its peer refused it at first (a container back on a new address,
 * refused until the peer looked its name up again): its SYNC_REQ is lost and its start-up
 * pull fails. Once the peer finds it (nsrv_gossip_node_peer_moved) it sends a full digest at
 * once, and that first digest lifts the failed pull's back-off: the restarted node is complete
 * within a pull batch or two, not after the SYNC_REQ retry and NSRV_GOSSIP_PULL_RETRY_MS. */
static void test_moved_peer_is_sent_a_digest_and_pulled_at_once(void **state) {
    (void)state;
    gs_sim_t *s = sim_timers(2);
    gs_broker_t br;
    gs_broker_init(&br, 0);
    gs_register(s, A, &br);
    gs_stop(s, B);
    gs_run(s, 1000);
    gs_link(s, A, B, false);
    gs_start(s, B);
    gs_run(s, GS_PULL_FAIL_MS + 50);
    assert_true(nsrv_gossip_node_counters(s->node[B].g)->pulls_failed >= 1);
    assert_false(gs_routes_to(s, B, &br));

    gs_link(s, A, B, true);
    size_t mark = s->nsent;
    nsrv_gossip_node_peer_moved(s->node[A].g, B, gs_mono(s, A), gs_wall(s, A));
    gs_drain(s, A);
    assert_int_equal(gs_count_sent(s, mark, A, B, NSRV_GOSSIP_DIGEST_FULL), 1);
    uint64_t t0 = s->now;
    while (!gs_routes_to(s, B, &br) && s->now < t0 + NSRV_GOSSIP_PULL_RETRY_MS)
        gs_run(s, 10);
    assert_true(gs_routes_to(s, B, &br));
    assert_true(s->now - t0 <= 2 * NSRV_GOSSIP_PULL_BATCH_MS + 20);
    gs_del(s);
}

static gs_sim_t *sim_presence(size_t n, uint8_t mute) {
    gs_sim_t *s = gs_new(n, 11);
    s->timers = true;
    s->announce = true;
    if (mute)
        s->mute[mute] = true;
    gs_start_all(s);
    gs_run(s, 2000);
    return s;
}

static const char *state_of(gs_sim_t *s, uint8_t at, uint8_t peer) {
    return nsrv_gossip_node_peer_state(s->node[at].g, peer, gs_mono(s, at));
}

typedef struct {
    char list[256];
} alive_list_t;

static void alive_cb(void *ud, uint8_t id, const struct sockaddr *addr, const char *ns_addr) {
    (void)addr;
    alive_list_t *l = ud;
    size_t n = strlen(l->list);
    snprintf(l->list + n, sizeof l->list - n, "%s%u=%s", n ? ";" : "", id, ns_addr ? ns_addr : "-");
}

static const char *alive(gs_sim_t *s, uint8_t at, alive_list_t *l) {
    l->list[0] = '\0';
    nsrv_gossip_node_foreach_alive(s->node[at].g, gs_mono(s, at), alive_cb, l);
    return l->list;
}

/* Every node learns where each peer serves: an empty announced host is the address the
 * datagrams come from, with the announced port. */
static void test_announced_addresses_reach_every_peer(void **state) {
    (void)state;
    gs_sim_t *s = sim_presence(3, 0);
    alive_list_t l;
    assert_string_equal(alive(s, A, &l), "2=10.0.0.2:9802;3=10.0.0.3:9803");
    assert_string_equal(alive(s, B, &l), "1=10.0.0.1:9801;3=10.0.0.3:9803");
    assert_string_equal(nsrv_gossip_node_peer_status_addr(s->node[C].g, A), "10.0.0.1:9901");
    assert_string_equal(state_of(s, A, B), "up");
    /* One ANNOUNCE per full round to a peer that speaks them. */
    size_t from = s->nsent;
    gs_run(s, 20000);
    size_t sent = gs_count_sent(s, from, A, B, NSRV_GOSSIP_ANNOUNCE);
    assert_true(sent >= 20000 / 5500 && sent <= 20000 / 4500 + 1);
    gs_del(s);
}

/* Runs set_announce(a) on node id and returns what it logged (warnings and worse). */
static char *logged_by_set_announce(gs_sim_t *s, uint8_t id, const nsrv_gossip_announce_t *a) {
    nsrv_test_dir_t dir;
    assert_int_equal(nsrv_test_dir_make(&dir, "announce"), 0);
    int fd = open(nsrv_test_dir_join(&dir, "stderr"), O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    int level = nsrv_log_level;
    nsrv_log_level = NSRV_LOG_WARN;
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);
    nsrv_gossip_node_set_announce(s->node[id].g, a);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    nsrv_log_level = level;
    char *text = nsrv_test_read_file(nsrv_test_dir_join(&dir, "stderr"));
    close(fd);
    nsrv_test_dir_remove(&dir);
    return text;
}

/* Where this node serves, when no peer could use it (a host with a space), is not announced,
 * and the log says so and why: the peers fall back to its gossip address. */
static void test_invalid_own_announce_is_logged_and_not_sent(void **state) {
    (void)state;
    gs_sim_t *s = sim_presence(2, 0);
    nsrv_gossip_announce_t bad = {nsrv_str_c("ns host"), 9801, nsrv_str_c(""), 0};
    char *log = logged_by_set_announce(s, A, &bad);
    assert_non_null(log);
    assert_non_null(strstr(log, "announcing nothing to the peers"));
    assert_non_null(strstr(log, "NameServer host over 255 bytes or not of [A-Za-z0-9.:_-]"));
    nsrv_free(log);
    size_t from = s->nsent;
    gs_run(s, 20000);
    assert_int_equal(gs_count_sent(s, from, A, B, NSRV_GOSSIP_ANNOUNCE), 0);
    /* A valid one logs nothing and is announced again. */
    nsrv_gossip_announce_t good = {nsrv_str_c(""), 9801, nsrv_str_c(""), 0};
    log = logged_by_set_announce(s, A, &good);
    assert_true(!log || !*log);
    nsrv_free(log);
    gs_run(s, 20000);
    assert_true(gs_count_sent(s, from, A, B, NSRV_GOSSIP_ANNOUNCE) > 0);
    gs_del(s);
}

/* A peer that never announces itself (an older version refuses the type) gets a bounded
 * number of tries per incarnation, and no LEAVE. */
static void test_mute_peer_gets_few_announces_and_no_leave(void **state) {
    (void)state;
    gs_sim_t *s = sim_presence(3, C);
    gs_run(s, 60000);
    assert_true(gs_count_sent(s, 0, A, C, NSRV_GOSSIP_ANNOUNCE) <= NSRV_GOSSIP_ANNOUNCE_TRIES);
    assert_true(gs_count_sent(s, 0, A, B, NSRV_GOSSIP_ANNOUNCE) >= 60000 / 5500);
    alive_list_t l;
    assert_string_equal(alive(s, A, &l), "2=10.0.0.2:9802;3=-");
    size_t from = s->nsent;
    gs_leave(s, A);
    assert_int_equal(gs_count_sent(s, from, A, B, NSRV_GOSSIP_LEAVE), NSRV_GOSSIP_LEAVE_COPIES);
    assert_int_equal(gs_count_sent(s, from, A, C, NSRV_GOSSIP_LEAVE), 0);
    gs_del(s);
}

/* LEAVE takes a node out of its peers' lists at once (not after the alive window), it is
 * not then reported silent, and its next incarnation brings it back. */
static void test_leave_is_immediate_and_a_restart_comes_back(void **state) {
    (void)state;
    gs_sim_t *s = sim_presence(3, 0);
    gs_leave(s, B);
    gs_run(s, 10);
    alive_list_t l;
    assert_string_equal(alive(s, A, &l), "3=10.0.0.3:9803");
    assert_string_equal(state_of(s, A, B), "left");
    assert_string_equal(state_of(s, C, B), "left");
    gs_run(s, 20000);
    assert_string_equal(state_of(s, A, B), "left");
    gs_start(s, B);
    gs_run(s, 1000);
    assert_string_equal(state_of(s, A, B), "up");
    assert_string_equal(alive(s, A, &l), "2=10.0.0.2:9802;3=10.0.0.3:9803");
    gs_del(s);
}

/* A peer cut off is "silent" once the alive window passes, "up" again when heard. */
static void test_silent_then_up_again(void **state) {
    (void)state;
    gs_sim_t *s = sim_presence(2, 0);
    gs_link(s, A, B, false);
    gs_run(s, NSRV_GOSSIP_ALIVE_INTERVALS * 5000 + 5000);
    assert_string_equal(state_of(s, A, B), "silent");
    alive_list_t l;
    assert_string_equal(alive(s, A, &l), "");
    gs_link(s, A, B, true);
    gs_run(s, 6000);
    assert_string_equal(state_of(s, A, B), "up");
    gs_del(s);
}

/* A peer is one record: dropped from the configuration, everything the engine kept about it
 * goes with it (its pull in flight is cancelled, not left to its deadline), and listed again
 * it starts afresh. */
static void test_removed_peer_takes_its_whole_record(void **state) {
    (void)state;
    gs_sim_t *s = sim_timers(3);
    s->pull_fail_ms = 0; /* a black hole: only a cancel or the deadline ends the pull */
    gs_link(s, A, B, false);
    nsrv_gossip_node_want_all(s->node[A].g, B);
    uint64_t before = s->pulls_to[A][B];
    gs_run(s, NSRV_GOSSIP_PULL_BATCH_MS + 1);
    assert_int_equal(s->pulls_to[A][B], before + 1);
    uint64_t now = gs_mono(s, A);
    /* Reload without B (C stays). */
    nsrv_gossip_key_t key = {.key_id = GS_KEY_ID};
    memcpy(key.pk, s->node[C].pk, sizeof key.pk);
    nsrv_gossip_peer_conf_t only_c = {C, "10.0.0.3:7946", &key, 1};
    assert_int_equal(nsrv_gossip_node_configure_peers(s->node[A].g, &only_c, 1), 0);
    gs_drain(s, A);
    assert_int_equal(s->pulls_cancelled[A], 1);
    assert_null(nsrv_gossip_node_peer_state(s->node[A].g, B, now));
    assert_int_equal(nsrv_gossip_node_pull_data(s->node[A].g, B, 1, (const uint8_t *)"x", 1, now),
                     -ESRCH);
    gs_run(s, NSRV_GOSSIP_PULL_DEADLINE_MS + 1000);
    assert_int_equal(s->pulls_cancelled[A], 1); /* nothing left to time out */
    /* Back in the list: a fresh record, so it is asked for a first digest again. */
    gs_link(s, A, B, true);
    nsrv_gossip_key_t keys[2] = {{.key_id = GS_KEY_ID}, {.key_id = GS_KEY_ID}};
    memcpy(keys[0].pk, s->node[B].pk, sizeof keys[0].pk);
    memcpy(keys[1].pk, s->node[C].pk, sizeof keys[1].pk);
    nsrv_gossip_peer_conf_t both[2] = {{B, "10.0.0.2:7946", &keys[0], 1},
                                       {C, "10.0.0.3:7946", &keys[1], 1}};
    assert_int_equal(nsrv_gossip_node_configure_peers(s->node[A].g, both, 2), 0);
    size_t from = s->nsent;
    assert_int_equal(gs_sync(s, A), 1); /* B only: C's first digest came long ago */
    assert_true(gs_find_sent(s, from, A, B, NSRV_GOSSIP_SYNC_REQ) >= 0);
    gs_run(s, 6000);
    assert_string_equal(nsrv_gossip_node_peer_state(s->node[A].g, B, gs_mono(s, A)), "up");
    gs_del(s);
}

NSRV_TEST_MAIN(gs_group_setup, NULL, cmocka_unit_test(test_delta_then_pull_spreads_a_new_broker),
               cmocka_unit_test(test_removed_peer_takes_its_whole_record),
               cmocka_unit_test(test_failed_pull_backs_off),
               cmocka_unit_test(test_anchor_is_refreshed),
               cmocka_unit_test(test_sync_repeats_until_answered),
               cmocka_unit_test(test_lost_pull_is_abandoned_at_the_deadline),
               cmocka_unit_test(test_loss_30pct_new_broker_p99_under_1s),
               cmocka_unit_test(test_loss_30pct_restarted_node_complete_under_500ms),
               cmocka_unit_test(test_wall_clock_skew_changes_nothing),
               cmocka_unit_test(test_refused_peer_degrades_health),
               cmocka_unit_test(test_moved_peer_is_sent_a_digest_and_pulled_at_once),
               cmocka_unit_test(test_announced_addresses_reach_every_peer),
               cmocka_unit_test(test_invalid_own_announce_is_logged_and_not_sent),
               cmocka_unit_test(test_mute_peer_gets_few_announces_and_no_leave),
               cmocka_unit_test(test_leave_is_immediate_and_a_restart_comes_back),
               cmocka_unit_test(test_silent_then_up_again))
