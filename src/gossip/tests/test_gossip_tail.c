/* SPDX-License-Identifier: Apache-2.0 */
/*
 * No slow tail for one-sided brokers under datagram loss (proto/gossip.md
 * §5.3), on the simulator with the engines' own schedule (gossip_sim.h,
 * timers on): the schedule of cluster-tests/cluster/test_loss_tail.py. A node
 * is stopped and restarted twice under loss, then brokers register with
 * node 1 only, one every SPACING_MS, and each must be routed by nodes 2 and 3
 * within MAX_MS, the 99th percentile within P99_MS. Datagrams are dropped at
 * random, pulls (TCP) are not.
 *
 * Before the entries were repeated until confirmed, a broker whose six delta
 * copies to one peer were all lost (0.3^6 per peer, and one run of lost
 * datagrams spans the copies of several brokers registered together) waited
 * for the next full digest that got through (2-15 s). On that engine 5 of 60
 * such schedules at 30 % loss had a broker over 2 s; each 30 % case below
 * runs SEEDS schedules that include one of them (node 3: seed 6, 8 s; node 2:
 * seed 13, 5.2 s), so both failed there.
 *
 * Also pinned: news a peer has confirmed is not repeated beyond the fixed
 * 1 + NSRV_GOSSIP_DELTA_REPEATS copies, and news no peer confirms stops after
 * NSRV_GOSSIP_NEWS_UNTIL_CONFIRMED_MS.
 */
#include "gossip_sim.h"
#include "testlib.h"

#define BROKERS 300
#define SEEDS 10
#define SPACING_MS 40
#define MAX_MS 2000
#define P99_MS 1000
#define GIVE_UP_MS 15000

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

typedef struct {
    gs_broker_t b;
    uint64_t registered, routed;
} tb_t;

/* Runs one schedule; returns the largest time to both peers (ms), fills lags (BROKERS). */
static uint64_t run_schedule(uint64_t seed, uint8_t victim, uint32_t drop_pm, uint64_t *lags) {
    gs_sim_t *s = nsrv_malloc(sizeof *s);
    gs_init(s, 3, seed);
    s->timers = true;
    s->drop_pm = drop_pm;
    s->pulls_lossless = true;
    s->delay_min = 0;
    s->delay_max = 1;
    gs_start_all(s);
    gs_run(s, 10000);
    /* kill -9 and restart under the loss, twice */
    static const uint32_t down_ms[2] = {500, 1500};
    for (int r = 0; r < 2; r++) {
        gs_stop(s, victim);
        gs_run(s, down_ms[r]);
        gs_start(s, victim);
        gs_run(s, 2000);
    }
    tb_t *t = nsrv_calloc(BROKERS, sizeof *t);
    size_t next = 0, done = 0;
    uint64_t next_at = s->now, worst = 0;
    while (done < BROKERS) {
        if (next < BROKERS && s->now >= next_at) {
            gs_broker_init(&t[next].b, (unsigned)next);
            gs_register(s, 1, &t[next].b);
            t[next].registered = s->now;
            next++;
            next_at += SPACING_MS;
        }
        gs_run(s, 5);
        for (size_t k = 0; k < next; k++) {
            if (t[k].routed)
                continue;
            if ((gs_routes_to(s, 2, &t[k].b) && gs_routes_to(s, 3, &t[k].b)) ||
                s->now - t[k].registered >= GIVE_UP_MS) {
                t[k].routed = s->now;
                lags[k] = s->now - t[k].registered;
                worst = NSRV_MAX(worst, lags[k]);
                done++;
            }
        }
    }
    nsrv_free(t);
    gs_free(s);
    nsrv_free(s);
    return worst;
}

static void check_tail(uint8_t victim, uint32_t drop_pm, uint64_t first_seed) {
    uint64_t *all = nsrv_calloc(SEEDS * BROKERS, sizeof *all);
    for (uint64_t k = 0; k < SEEDS; k++)
        run_schedule(1000 * victim + drop_pm + first_seed + k, victim, drop_pm, all + k * BROKERS);
    size_t n = SEEDS * BROKERS, over = 0;
    qsort(all, n, sizeof *all, cmp_u64);
    for (size_t k = 0; k < n; k++)
        over += all[k] > MAX_MS;
    uint64_t p50 = all[n / 2], p99 = all[(n * 99 + 99) / 100 - 1], max = all[n - 1];
    print_message("node %u restarted, %u %% loss, %zu brokers: p50 %" PRIu64 " ms, p99 %" PRIu64
                  " ms, max %" PRIu64 " ms, over %d ms: %zu\n",
                  victim, drop_pm / 10, n, p50, p99, max, MAX_MS, over);
    assert_int_equal(over, 0);
    assert_true(p99 <= P99_MS);
    nsrv_free(all);
}

static void test_node3_restarted_30pct_loss(void **state) {
    (void)state;
    check_tail(3, 300, 0);
}

static void test_node2_restarted_30pct_loss(void **state) {
    (void)state;
    check_tail(2, 300, 10);
}

static void test_node3_restarted_10pct_loss(void **state) {
    (void)state;
    check_tail(3, 100, 0);
}

/* Delta entries for bkey that node src sent to dst from log index `from` on. */
static size_t delta_copies(gs_sim_t *s, size_t from, uint8_t src, uint8_t dst, uint64_t bkey) {
    size_t c = 0;
    for (long k = gs_find_sent(s, from, src, dst, NSRV_GOSSIP_DIGEST_DELTA); k >= 0;
         k = gs_find_sent(s, (size_t)k + 1, src, dst, NSRV_GOSSIP_DIGEST_DELTA)) {
        nsrv_gossip_msg_t m;
        gs_decode(s, gs_sent(s, (size_t)k), &m);
        for (size_t i = 0; i < m.body.delta.n; i++)
            c += m.body.delta.entries[i].bkey == bkey;
    }
    return c;
}

static gs_sim_t *quiet_sim(void) {
    gs_sim_t *s = nsrv_malloc(sizeof *s);
    gs_init(s, 3, 7);
    s->timers = true;
    s->full_ms = 60000; /* no full round in the window: deltas only */
    gs_start_all(s);
    gs_run(s, 15000);
    return s;
}

/* A broker every node hears directly: each peer reports it itself, so node 1 sends its news
 * 1 + NSRV_GOSSIP_DELTA_REPEATS times and no more. */
static void test_confirmed_news_not_repeated(void **state) {
    (void)state;
    gs_sim_t *s = quiet_sim();
    gs_broker_t b;
    gs_broker_init(&b, 1);
    size_t from = s->nsent;
    for (uint8_t i = 1; i <= 3; i++)
        gs_register(s, i, &b);
    gs_run(s, NSRV_GOSSIP_NEWS_UNTIL_CONFIRMED_MS + 1000);
    assert_int_equal(delta_copies(s, from, 1, 2, b.bkey), 1 + NSRV_GOSSIP_DELTA_REPEATS);
    assert_int_equal(delta_copies(s, from, 1, 3, b.bkey), 1 + NSRV_GOSSIP_DELTA_REPEATS);
    /* one-sided: the peers pull it (the pull confirms), so the same holds */
    gs_broker_init(&b, 2);
    from = s->nsent;
    gs_register(s, 1, &b);
    gs_run(s, NSRV_GOSSIP_NEWS_UNTIL_CONFIRMED_MS + 1000);
    assert_true(gs_routes_to(s, 2, &b) && gs_routes_to(s, 3, &b));
    assert_int_equal(delta_copies(s, from, 1, 2, b.bkey), 1 + NSRV_GOSSIP_DELTA_REPEATS);
    assert_int_equal(delta_copies(s, from, 1, 3, b.bkey), 1 + NSRV_GOSSIP_DELTA_REPEATS);
    gs_free(s);
    nsrv_free(s);
}

/* A peer that never confirms (node 2's datagrams and pulls to node 1 are cut) gets the news
 * in every delta tick for NSRV_GOSSIP_NEWS_UNTIL_CONFIRMED_MS, then no more until the next full
 * digest; node 3, which pulled it, only the fixed copies. */
static void test_unconfirmed_news_repeated_for_a_bounded_time(void **state) {
    (void)state;
    gs_sim_t *s = quiet_sim();
    s->link[2][1] = false;
    gs_broker_t b;
    gs_broker_init(&b, 3);
    size_t from = s->nsent;
    gs_register(s, 1, &b);
    gs_run(s, 3 * NSRV_GOSSIP_NEWS_UNTIL_CONFIRMED_MS);
    size_t ticks = NSRV_GOSSIP_NEWS_UNTIL_CONFIRMED_MS / s->delta_ms;
    size_t to2 = delta_copies(s, from, 1, 2, b.bkey);
    assert_true(to2 >= ticks - 1 && to2 <= ticks + 1);
    assert_int_equal(delta_copies(s, from, 1, 3, b.bkey), 1 + NSRV_GOSSIP_DELTA_REPEATS);
    /* new news (a new data version) starts over, for every peer */
    b.dv.counter++;
    gs_register(s, 1, &b);
    from = s->nsent;
    gs_run(s, 1000);
    assert_true(delta_copies(s, from, 1, 3, b.bkey) >= 1);
    gs_free(s);
    nsrv_free(s);
}

NSRV_TEST_MAIN(gs_group_setup, NULL, cmocka_unit_test(test_node3_restarted_30pct_loss),
               cmocka_unit_test(test_node2_restarted_30pct_loss),
               cmocka_unit_test(test_node3_restarted_10pct_loss),
               cmocka_unit_test(test_confirmed_news_not_repeated),
               cmocka_unit_test(test_unconfirmed_news_repeated_for_a_bounded_time))
