/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The safety property of proto/gossip.md §9.4
 * over random schedules, many seeds: at any node and any time t, if the node
 * serves a broker (live entry or a route naming it) then some node received
 * a direct heartbeat from that broker at or after t - timeout - EPS.
 *
 * Each seed builds a simulated cluster (gossip_sim.h) of 2-4 nodes whose
 * monotonic clocks have arbitrary origins (up to 10^9 ms apart) and whose
 * wall clocks differ by seconds, with 3-6 brokers (timeouts of 120 s, 30 s
 * or 15 s; heartbeats every timeout / 4) that register, query, heartbeat,
 * bump their data version, move between nodes, die, come back and
 * unregister. The network delays (up to 300 ms), drops, duplicates,
 * reorders, partitions (symmetric and one-way) and replays captured
 * datagrams up to 40 s late, to their own or another destination; nodes
 * crash, restart and reboot (a new monotonic origin). Chaos phases alternate
 * with healthy phases.
 *
 * Checked after every 100 ms step:
 *  - safety: for every live entry, now <= last heartbeat anywhere + timeout +
 *    EPS, and its last-seen time <= that heartbeat + EPS; a route for the
 *    broker's topic names it only under the same bound;
 *  - a live entry's last_direct_ms is exactly that node's own last direct
 *    heartbeat from the broker (gossip never makes one);
 *  - every digest entry a node sends is its own direct observation, with
 *    the age of that heartbeat (checked as it is sent).
 * At the end of each healthy phase (liveness, so the test cannot pass by
 * gossip doing nothing): every node serves every broker that heartbeat some
 * node during that phase, with the broker's current data version, and the
 * totals show brokers served by nodes they never reached.
 *
 * EPS = the largest one-way delay used + 1 ms per second simulated (the
 * clock-offset rise cap, proto/gossip.md §9.2) + 2 ms of rounding: the bound
 * the design states. The engine promises more (proto/gossip.md §9.4:
 * ages are mapped with a round-trip anchor, a lower bound, so with clocks
 * that run at one rate a reported last-seen time is never later than the
 * real heartbeat), and that is checked too (STRICT_LEAD_MS).
 *
 * Late copies (replays, held-back datagrams) reach nodes whatever their
 * state, including right after a restart or a peer's new incarnation: the
 * first datagram a node accepts from a peer must not set its clock.
 */
#include "gossip_sim.h"
#include "testlib.h"

#define SEEDS 200
#define STEPS 2000
#define STEP_MS 100
#define MAX_BR 6
#define HEAL_LEN 400        /* steps */
#define REPLAY_MAX_MS 40000 /* beyond the 30 s freshness window */
#define STRICT_LEAD_MS 0    /* last-seen never after the real heartbeat (same-rate clocks) */

typedef struct {
    gs_broker_t b;
    bool alive;
    uint32_t reach; /* bit i: reaches node i */
    uint32_t period;
    uint64_t next_hb;
    uint64_t last_hb;                      /* global; 0: never */
    uint64_t last_hb_at[GS_MAX_NODES + 1]; /* per node, global */
    uint64_t first_heal_hb;                /* first heartbeat of the current healthy phase */
} sb_t;

typedef struct {
    uint64_t seeds, steps, live_checks, route_checks, remote_served, liveness_checks;
    uint64_t accepted, rejected, pulls_ok, imported, replays, late, restarts, holds;
    uint64_t max_seen_lead; /* largest last_seen - last heartbeat observed, ms */
} totals_t;

typedef struct {
    gs_sim_t s;
    sb_t br[MAX_BR];
    size_t nb;
    uint64_t seed;
    uint64_t start;
    bool chaos;
    uint64_t restart_at[GS_MAX_NODES + 1];
    size_t step;
    uint64_t hold_until[GS_MAX_NODES + 1][GS_MAX_NODES + 1]; /* held-back links, global */
    totals_t *tot;
} world_t;

static uint64_t eps(world_t *w) {
    return w->s.max_delay + (w->s.now - w->start) / 1000 + 2;
}

static sb_t *by_bkey(world_t *w, uint64_t bkey) {
    for (size_t i = 0; i < w->nb; i++)
        if (w->br[i].b.bkey == bkey)
            return &w->br[i];
    return NULL;
}

static void violation(world_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(world_t *w, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fail_msg("seed %" PRIu64 " step %zu (t = %" PRIu64 " ms): %s", w->seed, w->step,
             w->s.now - w->start, msg);
}

#define VIOLATION(w, ...) violation((w), __VA_ARGS__)

/* Every digest entry is the sender's own direct observation, aged from it. */
static void on_sent(gs_sim_t *s, const gs_sent_t *e, void *ud) {
    world_t *w = ud;
    if (e->type != NSRV_GOSSIP_DIGEST_FULL && e->type != NSRV_GOSSIP_DIGEST_DELTA)
        return;
    nsrv_gossip_msg_t m;
    gs_decode(s, e, &m);
    const nsrv_gossip_entry_t *v =
        m.type == NSRV_GOSSIP_DIGEST_FULL ? m.body.full.entries : m.body.delta.entries;
    size_t n = m.type == NSRV_GOSSIP_DIGEST_FULL ? m.body.full.n : m.body.delta.n;
    for (size_t i = 0; i < n; i++) {
        sb_t *x = by_bkey(w, v[i].bkey);
        if (!x)
            VIOLATION(w, "node %u announces an unknown bkey", e->src);
        nsrv_route_live_info_t li;
        if (!gs_live(s, e->src, &x->b, &li) || li.last_direct_ms == 0)
            VIOLATION(w, "node %u announces %s, which it does not hear directly", e->src,
                      x->b.name);
        if (v[i].age_ms != gs_mono(s, e->src) - li.last_direct_ms)
            VIOLATION(w, "node %u announces %s with age %u, its own is %" PRIu64, e->src, x->b.name,
                      v[i].age_ms, gs_mono(s, e->src) - li.last_direct_ms);
        if (gs_global(s, e->src, li.last_direct_ms) != x->last_hb_at[e->src])
            VIOLATION(w, "node %u: last_direct of %s is not its last heartbeat", e->src, x->b.name);
    }
}

/* ---- brokers ---- */

static void beat(world_t *w, sb_t *x, uint8_t i) {
    gs_sim_t *s = &w->s;
    if (!s->node[i].up)
        return;
    uint64_t r = gs_rand(s) % 10;
    if (r < 3) {
        gs_register(s, i, &x->b);
    } else if (gs_query(s, i, &x->b)) {
        gs_register(s, i, &x->b); /* "changed": the broker registers in full */
    }
    if (r == 9)
        gs_heartbeat(s, i, &x->b); /* the 5.x lightweight heartbeat as well */
    nsrv_route_live_info_t li;
    if (gs_live(s, i, &x->b, &li) && li.last_direct_ms == gs_mono(s, i)) {
        x->last_hb = s->now;
        x->last_hb_at[i] = s->now;
        if (!w->chaos && !x->first_heal_hb)
            x->first_heal_hb = s->now;
    }
}

static uint32_t random_reach(world_t *w) {
    uint32_t all = ((1u << w->s.n) - 1) << 1;
    uint32_t r;
    do {
        r = (uint32_t)gs_rand(&w->s) & all;
    } while (!r);
    return r;
}

static void brokers_step(world_t *w) {
    gs_sim_t *s = &w->s;
    for (size_t k = 0; k < w->nb; k++) {
        sb_t *x = &w->br[k];
        if (w->chaos) {
            if (x->alive && gs_chance(s, 3)) {
                x->alive = false; /* dies silently */
            } else if (x->alive && gs_chance(s, 2)) {
                for (uint8_t i = 1; i <= s->n; i++)
                    if ((x->reach >> i & 1) && s->node[i].up)
                        gs_unregister(s, i, &x->b);
                x->alive = false; /* shut down cleanly */
            } else if (!x->alive && gs_chance(s, 4)) {
                x->alive = true; /* comes back */
                x->next_hb = s->now;
            }
            if (gs_chance(s, 5))
                x->reach = random_reach(w);
            if (gs_chance(s, 3))
                x->b.dv.counter++;
        }
        if (x->alive && x->next_hb <= s->now) {
            for (uint8_t i = 1; i <= s->n; i++)
                if (x->reach >> i & 1)
                    beat(w, x, i);
            x->next_hb = s->now + gs_range(s, x->period * 9 / 10, x->period * 11 / 10);
        }
    }
}

/* ---- nodes and network ---- */

static void crash(world_t *w, uint8_t i) {
    gs_stop(&w->s, i);
    w->restart_at[i] = w->s.now + gs_range(&w->s, 0, 20000);
}

static void restart(world_t *w, uint8_t i) {
    gs_sim_t *s = &w->s;
    if (gs_chance(s, 333)) /* a reboot: the monotonic clock starts elsewhere */
        s->node[i].mono_off = (int64_t)gs_range(s, 0, 1000000000) - (int64_t)(GS_T0 / 2);
    gs_start(s, i);
    w->restart_at[i] = 0;
    w->tot->restarts++;
}

/*
 * An attacker (or a congested path) holds back everything a sends to b for
 * 30-90 s, longer than the clock-offset window, then lets the datagrams of
 * the last 25 s through at once, late but fresh enough to be accepted. The
 * first of them is the only clock sample the receiver has left; its delay
 * must not date the ages it carries (proto/gossip.md §9.2 rise cap, proto/gossip.md §7.6
 * anchors).
 */
static void hold_start(world_t *w) {
    gs_sim_t *s = &w->s;
    uint8_t a = (uint8_t)gs_range(s, 1, s->n), b = (uint8_t)gs_range(s, 1, s->n);
    if (a == b || w->hold_until[a][b])
        return;
    w->hold_until[a][b] = s->now + gs_range(s, 30000, 90000);
    s->link[a][b] = false;
    w->tot->holds++;
}

static void hold_release(world_t *w, uint8_t a, uint8_t b) {
    gs_sim_t *s = &w->s;
    w->hold_until[a][b] = 0;
    s->link[a][b] = true;
    for (long k = gs_find_sent(s, 0, a, b, 0); k >= 0; k = gs_find_sent(s, (size_t)k + 1, a, b, 0))
        if (gs_sent(s, (size_t)k)->sent_at + 25000 >= s->now)
            gs_inject(s, (size_t)k, 0, s->now + gs_range(s, 0, 50));
}

static void holds_step(world_t *w, bool release_all) {
    for (uint8_t a = 1; a <= w->s.n; a++)
        for (uint8_t b = 1; b <= w->s.n; b++)
            if (w->hold_until[a][b] && (release_all || w->hold_until[a][b] <= w->s.now))
                hold_release(w, a, b);
}

static void chaos_step(world_t *w) {
    gs_sim_t *s = &w->s;
    uint8_t n = (uint8_t)s->n;
    if (gs_chance(s, 5)) { /* one direction of one link */
        uint8_t a = (uint8_t)gs_range(s, 1, n), b = (uint8_t)gs_range(s, 1, n);
        s->link[a][b] = !s->link[a][b];
    }
    if (gs_chance(s, 2)) { /* a partition into two groups */
        uint32_t side = (uint32_t)gs_rand(s);
        for (uint8_t a = 1; a <= n; a++)
            for (uint8_t b = 1; b <= n; b++)
                if ((side >> a & 1) != (side >> b & 1))
                    s->link[a][b] = false;
    }
    if (gs_chance(s, 3))
        for (uint8_t a = 1; a <= n; a++)
            for (uint8_t b = 1; b <= n; b++)
                s->link[a][b] = true;
    for (uint8_t i = 1; i <= n; i++)
        if (s->node[i].up && gs_chance(s, 2))
            crash(w, i);
    if (gs_chance(s, 4))
        hold_start(w);
    for (uint8_t a = 1; a <= n; a++) /* other link changes leave held links held */
        for (uint8_t b = 1; b <= n; b++)
            if (w->hold_until[a][b])
                s->link[a][b] = false;
    if (s->nsent && gs_chance(s, 50)) { /* a replay or a long-held datagram */
        size_t k = (size_t)gs_range(s, gs_sent_first(s), s->nsent - 1);
        uint8_t dst = gs_chance(s, 200) ? (uint8_t)gs_range(s, 1, n) : 0;
        gs_inject(s, k, dst, s->now + gs_range(s, 0, REPLAY_MAX_MS));
        w->tot->replays++;
    }
}

static void enter_chaos(world_t *w) {
    gs_sim_t *s = &w->s;
    w->chaos = true;
    s->drop_pm = (uint32_t)gs_range(s, 0, 300);
    s->dup_pm = (uint32_t)gs_range(s, 0, 200);
    s->delay_min = 1;
    s->delay_max = (uint32_t)gs_range(s, 1, 300);
}

static void enter_heal(world_t *w) {
    gs_sim_t *s = &w->s;
    w->chaos = false;
    s->drop_pm = s->dup_pm = 0;
    holds_step(w, true);
    for (uint8_t a = 1; a <= s->n; a++)
        for (uint8_t b = 1; b <= s->n; b++)
            s->link[a][b] = true;
    for (uint8_t i = 1; i <= s->n; i++)
        if (!s->node[i].up)
            restart(w, i);
    for (size_t k = 0; k < w->nb; k++)
        w->br[k].first_heal_hb = 0;
}

/* ---- checks ---- */

static void check_safety(world_t *w, bool routes) {
    gs_sim_t *s = &w->s;
    uint64_t e = eps(w);
    for (uint8_t i = 1; i <= s->n; i++) {
        if (!s->node[i].up)
            continue;
        for (size_t k = 0; k < w->nb; k++) {
            sb_t *x = &w->br[k];
            uint64_t bound = x->last_hb ? x->last_hb + (uint64_t)gs_broker_timeout(&x->b) + e : 0;
            nsrv_route_live_info_t li;
            w->tot->live_checks++;
            if (gs_live(s, i, &x->b, &li)) {
                uint64_t seen = gs_global(s, i, li.last_seen_ms);
                if (!x->last_hb || s->now > bound)
                    VIOLATION(w,
                              "node %u serves %s: last heartbeat anywhere %" PRIu64
                              " ms ago, timeout %" PRId64 ", eps %" PRIu64,
                              i, x->b.name, s->now - x->last_hb, gs_broker_timeout(&x->b), e);
                if (seen > x->last_hb + e)
                    VIOLATION(w, "node %u: %s last seen %" PRIu64 " ms after its last heartbeat", i,
                              x->b.name, seen - x->last_hb);
                if (seen > x->last_hb + STRICT_LEAD_MS)
                    VIOLATION(w,
                              "node %u: %s last seen %" PRIu64
                              " ms after its last heartbeat (the mapping is no lower bound)",
                              i, x->b.name, seen - x->last_hb);
                if (seen > x->last_hb && seen - x->last_hb > w->tot->max_seen_lead)
                    w->tot->max_seen_lead = seen - x->last_hb;
                if (li.last_direct_ms && gs_global(s, i, li.last_direct_ms) != x->last_hb_at[i])
                    VIOLATION(w, "node %u: last_direct of %s is not its own heartbeat", i,
                              x->b.name);
                if (!(x->reach >> i & 1) && li.last_direct_ms == 0)
                    w->tot->remote_served++;
            }
            if (routes) {
                w->tot->route_checks++;
                if (gs_routes_to(s, i, &x->b) && (!x->last_hb || s->now > bound))
                    VIOLATION(w, "node %u routes to %s past its bound", i, x->b.name);
            }
        }
    }
}

/* End of a healthy phase: every broker heard during it is served everywhere. */
static void check_liveness(world_t *w) {
    gs_sim_t *s = &w->s;
    for (size_t k = 0; k < w->nb; k++) {
        sb_t *x = &w->br[k];
        if (!x->alive || !x->first_heal_hb || x->first_heal_hb + 7000 > s->now)
            continue;
        for (uint8_t i = 1; i <= s->n; i++) {
            nsrv_route_live_info_t li;
            w->tot->liveness_checks++;
            if (!gs_live(s, i, &x->b, &li))
                VIOLATION(w, "after healing, node %u does not know %s (reach %#x)", i, x->b.name,
                          x->reach);
            if (!nsrv_data_version_eq(&li.data_version, &x->b.dv))
                VIOLATION(w, "after healing, node %u has an old data version of %s", i, x->b.name);
            if (!gs_routes_to(s, i, &x->b))
                VIOLATION(w, "after healing, node %u has no route to %s", i, x->b.name);
        }
    }
}

/* ---- one seed ---- */

static void run_seed(uint64_t seed, totals_t *tot) {
    world_t *w = nsrv_calloc(1, sizeof *w);
    gs_sim_t *s = &w->s;
    w->seed = seed;
    w->tot = tot;
    gs_init(s, 2 + seed % 3, seed * 0x9E3779B97F4A7C15u + 1);
    s->sent_cap = 512;
    s->timers = true;
    s->on_sent = on_sent;
    s->hook_ud = w;
    for (uint8_t i = 1; i <= s->n; i++) {
        s->node[i].mono_off = (int64_t)gs_range(s, 0, 1000000000) - (int64_t)(GS_T0 / 2);
        s->node[i].wall_off = (int64_t)gs_range(s, 0, 10000) - 5000;
    }
    w->start = s->now;
    gs_start_all(s);
    w->nb = 3 + gs_rand(s) % (MAX_BR - 2);
    static const int64_t timeouts[3] = {0, 30000, 15000};
    for (size_t k = 0; k < w->nb; k++) {
        sb_t *x = &w->br[k];
        gs_broker_init(&x->b, (unsigned)k);
        x->b.timeout_ms = timeouts[gs_rand(s) % 3];
        x->period = (uint32_t)NSRV_MIN(gs_broker_timeout(&x->b) / 4, 30000);
        x->alive = true;
        x->reach = random_reach(w);
        x->next_hb = s->now + gs_range(s, 0, x->period);
    }
    enter_chaos(w);
    for (w->step = 0; w->step < STEPS; w->step++) {
        size_t in_cycle = w->step % (STEPS / 2);
        if (in_cycle == 0)
            enter_chaos(w);
        else if (in_cycle == STEPS / 2 - HEAL_LEN)
            enter_heal(w);
        if (w->chaos)
            chaos_step(w);
        holds_step(w, false);
        for (uint8_t i = 1; i <= s->n; i++)
            if (!s->node[i].up && w->restart_at[i] && w->restart_at[i] <= s->now)
                restart(w, i);
        brokers_step(w);
        gs_run(s, STEP_MS);
        check_safety(w, w->step % 10 == 0);
        if (in_cycle == STEPS / 2 - 1)
            check_liveness(w);
        tot->steps++;
    }
    tot->seeds++;
    tot->accepted += s->accepted;
    for (int r = 0; r < NSRV_GOSSIP_NREASONS; r++)
        tot->rejected += s->rejected[r];
    tot->pulls_ok += s->pulls_ok;
    tot->imported += s->imported;
    tot->late += s->late_delivered;
    gs_free(s);
    nsrv_free(w);
}

static void print_totals(const char *what, const totals_t *t) {
    print_message("%s: %" PRIu64 " seeds, %" PRIu64 " steps, %" PRIu64 " live checks, %" PRIu64
                  " route checks, %" PRIu64 " liveness checks, %" PRIu64
                  " served by nodes the broker never reached\n",
                  what, t->seeds, t->steps, t->live_checks, t->route_checks, t->liveness_checks,
                  t->remote_served);
    print_message("  datagrams accepted %" PRIu64 ", rejected %" PRIu64 ", replays %" PRIu64
                  " (late copies delivered %" PRIu64 "), pulls %" PRIu64 ", imported %" PRIu64
                  ", restarts %" PRIu64 ", held-back links %" PRIu64
                  ", largest last-seen lead %" PRIu64 " ms\n",
                  t->accepted, t->rejected, t->replays, t->late, t->pulls_ok, t->imported,
                  t->restarts, t->holds, t->max_seen_lead);
}

static uint64_t seeds_from_env(uint64_t dflt) {
    const char *e = getenv("NSRV_GOSSIP_SEEDS");
    return e && *e ? strtoull(e, NULL, 10) : dflt;
}

static void test_safety_random_schedules(void **state) {
    (void)state;
    totals_t tot;
    memset(&tot, 0, sizeof tot);
    uint64_t n = seeds_from_env(SEEDS);
    for (uint64_t seed = 1; seed <= n; seed++)
        run_seed(seed, &tot);
    print_totals("safety", &tot);
    /* The schedules did exercise gossip: without it these stay at zero. */
    assert_true(tot.liveness_checks > n);
    assert_true(tot.remote_served > 0);
    assert_true(tot.imported > 0);
    assert_true(tot.late > tot.replays / 2);
    assert_true(tot.holds > 0);
}

NSRV_TEST_MAIN(gs_group_setup, NULL, cmocka_unit_test(test_safety_random_schedules))
