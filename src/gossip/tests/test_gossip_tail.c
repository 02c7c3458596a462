/* SPDX-License-Identifier: Apache-2.0 */
/* experiment */
#include "gossip_sim.h"
#include "testlib.h"

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void run_one(uint64_t seed, uint8_t victim, uint32_t drop_pm, unsigned nb) {
    gs_sim_t *s = nsrv_malloc(sizeof *s);
    gs_init(s, 3, seed);
    s->timers = true;
    s->drop_pm = drop_pm;
    s->pulls_lossless = true;
    s->delay_min = 0;
    s->delay_max = 1;
    gs_start_all(s);
    gs_run(s, 10000);
    int restarts = getenv("TAIL_NORESTART") ? 0 : 2;
    for (int r = 0; r < restarts; r++) {
        gs_stop(s, victim);
        gs_run(s, gs_range(s, 100, 1500));
        gs_start(s, victim);
        gs_run(s, gs_range(s, 1000, 4000));
    }
    uint64_t *lag = nsrv_calloc(nb, sizeof *lag);
    gs_broker_t b;
    for (unsigned k = 0; k < nb; k++) {
        gs_broker_init(&b, k);
        gs_register(s, 1, &b);
        if (nsrv_log_level == NSRV_LOG_DEBUG)
            fprintf(stderr, "=== broker %u bkey %016" PRIx64 " registered at node 1, global %" PRIu64 ", n1 mono %" PRIu64 "\n", k, b.bkey, s->now, gs_mono(s, 1) - s->node[1].up_since);
        uint64_t t0 = s->now;
        while (!(gs_routes_to(s, 2, &b) && gs_routes_to(s, 3, &b)) && s->now - t0 < 20000)
            gs_run(s, 5);
        lag[k] = s->now - t0;
        if (lag[k] > 2000 && !getenv("TAIL_QUIET"))
            fprintf(stderr, "seed %" PRIu64 " broker %u lag %" PRIu64 " ms (n2 %d n3 %d)\n", seed,
                    k, lag[k], gs_routes_to(s, 2, &b), gs_routes_to(s, 3, &b));
        gs_run(s, gs_range(s, 0, 30));
    }
    qsort(lag, nb, sizeof *lag, cmp_u64);
    unsigned over = 0;
    for (unsigned k = 0; k < nb; k++)
        over += lag[k] > 2000;
    fprintf(stderr, "seed %" PRIu64 " victim %u drop %u: p50 %" PRIu64 " p99 %" PRIu64 " max %" PRIu64 " over2s %u\n",
            seed, victim, drop_pm, lag[nb / 2], lag[nb * 99 / 100], lag[nb - 1], over);
    nsrv_free(lag);
    gs_free(s);
    nsrv_free(s);
}

static void test_tail(void **state) {
    (void)state;
    const char *e = getenv("TAIL_SEEDS");
    unsigned seeds = e ? (unsigned)atoi(e) : 5;
    const char *one = getenv("TAIL_SEED");
    if (one) {
        nsrv_log_level = NSRV_LOG_DEBUG;
        run_one((uint64_t)atoll(one), 3, 300, (unsigned)atoi(getenv("TAIL_NB")));
        return;
    }
    for (uint64_t seed = 1; seed <= seeds; seed++)
        run_one(seed, 3, 300, 300);
}

NSRV_TEST_MAIN(gs_group_setup, NULL, cmocka_unit_test(test_tail))
