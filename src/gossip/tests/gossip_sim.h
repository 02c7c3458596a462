/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An in-memory cluster of gossip engines for the merge and safety tests.
 *
 * N nodes (ids 1..N), each with its own route table, peer table, key pair
 * (from a fixed seed) and clocks: one global simulated time `now` (ms), and
 * per node a monotonic clock now + mono_off and a wall clock
 * GS_WALL0 + now + wall_off. Datagrams go through a queue that delays, drops
 * and duplicates them, and through per-direction links (partitions); every
 * datagram sent is also kept in a log so a test can replay it later or
 * deliver it somewhere else. Pulls run through the real code in memory:
 * nsrv_gossip_node_pull_request -> nsrv_gossip_node_serve_pull ->
 * nsrv_gossip_pull_dec_* -> nsrv_gossip_node_apply_pull, either at once
 * (gs_pull_now) or as queued legs with delays and losses.
 *
 * With `timers` on, the simulator is the engine's I/O layer, exactly as
 * transport.c is: it wakes each engine at the deadline the engine names
 * (nsrv_gossip_node_deadline -> nsrv_gossip_node_tick), and carries out the
 * actions the engine emits (datagrams, pulls started and abandoned, name
 * lookups answered after resolve_ms, pull server connections closed), so the
 * whole schedule of node_sched.c and node_pull.c (digest periods, SYNC
 * retries, pull batching, back-off, anchor refresh, deadlines) runs under
 * test. Off, the test drives the engines' pieces by hand.
 *
 * Header-only (static inline) so each test stays one file.
 */
#pragma once

#include "gossip_test.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "nsrv/arena.h"
#include "nsrv/gossip_node.h"
#include "nsrv/gossip_timing.h"
#include "nsrv/log.h"
#include "nsrv/route.h"

#define GS_MAX_NODES 8
#define GS_CLUSTER "DefaultCluster" /* gossip cluster, and the brokers' cluster */
#define GS_WALL0 INT64_C(1718000000000)
#define GS_T0 UINT64_C(100000000) /* global time at start: far from 0 on every clock */
#define GS_PORT 7946
#define GS_KEY_ID 1
#define GS_PULL_FAIL_MS 2000 /* a lost pull leg is noticed this much later */
#define GS_PULL_KEYS_MAX NSRV_GOSSIP_PULL_KEYS_MAX

/* The node ids by the letters the tests' comments use: node 1 is A, node 2 B, and so on. */
#define A 1
#define B 2
#define C 3
#define D 4
#define E 5
#define F 6

typedef enum { GS_DGRAM = 1, GS_PULL_REQ, GS_PULL_RESP, GS_PULL_FAIL, GS_RESOLVE } gs_kind_t;

/* One queued event: a datagram in flight, one leg of a pull, or a name lookup (src asked
 * for dst's name; d: the name). */
typedef struct {
    uint8_t kind; /* gs_kind_t */
    uint8_t src, dst;
    uint32_t pull_id; /* pulls the engine started (0: one a test started by hand) */
    bool all;         /* pulls: PULL ALL */
    bool late;        /* a datagram delivered later than the normal delays (replay, hold-back) */
    uint32_t life;    /* pulls: the requester's life when the pull started */
    uint64_t at, order;
    uint64_t req_mono; /* pulls: the requester's monotonic time when the request left */
    uint8_t nonce[NSRV_GOSSIP_NONCE_LEN];
    uint8_t *d;
    size_t len;
} gs_msg_t;

/* One datagram as sent (the log). */
typedef struct {
    uint8_t src, dst, type;
    uint64_t inc, seq, src_mono;
    uint64_t sent_at;
    uint8_t *d;
    size_t len;
} gs_sent_t;

struct gs_sim;

typedef struct {
    struct gs_sim *sim;
    uint8_t id;
    bool up;
    uint32_t life;    /* +1 per start */
    int64_t mono_off; /* monotonic = now + mono_off */
    int64_t wall_off; /* wall = GS_WALL0 + now + wall_off */
    uint64_t inc;     /* the persisted incarnation */
    uint8_t pk[NSRV_SEAL_PK_LEN], sk[NSRV_SEAL_SK_LEN];
    nsrv_route_t *rt;
    nsrv_gossip_peers_t *peers;
    nsrv_gossip_node_t *g;
    uint64_t up_since;
} gs_node_t;

/* Called for every datagram a node sends (before the network sees it). */
typedef void (*gs_sent_hook_t)(struct gs_sim *s, const gs_sent_t *sent, void *ud);
/* Called after every event the simulation processes. */
typedef void (*gs_event_hook_t)(struct gs_sim *s, void *ud);

typedef struct gs_sim {
    size_t n;
    gs_node_t node[GS_MAX_NODES + 1];
    uint64_t now;
    uint64_t rng;
    uint32_t budget;
    /* every engine's registerMaxTopics / registerMaxDecodedBytes (0: none), read per pull */
    int32_t reg_max_topics;
    int64_t reg_max_decoded_bytes;
    /* network */
    uint32_t delay_min, delay_max; /* one-way delay of datagrams and pull legs, ms */
    uint32_t drop_pm, dup_pm;      /* per mille */
    uint32_t pull_fail_ms;         /* a lost pull leg is noticed this much later; 0: never */
    bool pulls_lossless;           /* drop_pm drops datagrams only (TCP retransmits) */
    bool link[GS_MAX_NODES + 1][GS_MAX_NODES + 1]; /* link[a][b]: a reaches b */
    uint64_t late_delivered; /* replays and held-back copies that reached a node */
    /* the engines' own schedule (full_ms, delta_ms: their settings) */
    bool timers;
    uint32_t full_ms, delta_ms;
    /* presence: nodes announce NameServer port 9800+id and status port 9900+id with an empty
     * host (the peers use the source address), except those marked mute (like an older
     * version, which announces nothing) */
    bool announce;
    bool mute[GS_MAX_NODES + 1];
    /* peers by host name: with `named`, every node's peers are configured as "node<j>:port"
     * and the engines ask for lookups (NSRV_GOSSIP_ACT_RESOLVE), answered resolve_ms later
     * with node j's address (an error while unresolvable[j]); with resolve_hold, only
     * gs_resolve_release answers them */
    bool named, resolve_hold;
    uint32_t resolve_ms;
    bool unresolvable[GS_MAX_NODES + 1];
    uint64_t lookups[GS_MAX_NODES + 1][GS_MAX_NODES + 1];   /* a asked for b's name */
    uint64_t lookup_at[GS_MAX_NODES + 1][GS_MAX_NODES + 1]; /* the last time, global */
    unsigned resolving[GS_MAX_NODES + 1], resolving_max[GS_MAX_NODES + 1];
    /* pull server connections each engine closed (NSRV_GOSSIP_ACT_CLOSE), and the last one */
    uint64_t conns_closed[GS_MAX_NODES + 1];
    uint32_t conn_closed_last[GS_MAX_NODES + 1];
    uint64_t pulls_cancelled[GS_MAX_NODES + 1]; /* NSRV_GOSSIP_ACT_PULL_CANCEL */
    /* queue */
    gs_msg_t *q;
    size_t nq, qcap;
    uint64_t order;
    /* log of sent datagrams: a ring of sent_cap entries */
    gs_sent_t *sent;
    size_t nsent, sent_cap;
    /* counters */
    uint64_t delivered, accepted, rejected[NSRV_GOSSIP_NREASONS];
    uint64_t pulls_started, pulls_ok, pulls_failed, imported;
    uint64_t pulls_to[GS_MAX_NODES + 1][GS_MAX_NODES + 1]; /* pulls the engines started, a -> b */
    uint64_t max_delay; /* the longest normal one-way delay actually used */
    gs_sent_hook_t on_sent;
    gs_event_hook_t on_event;
    void *hook_ud;
    nsrv_arena_t arena; /* scratch for decoding */
} gs_sim_t;

/* ---- randomness (splitmix64: deterministic per seed) ---- */

/* Group setup of the simulator tests: only errors in the log (the simulated nodes are
 * chatty), libsodium ready. */
static inline int gs_group_setup(void **state) {
    (void)state;
    nsrv_log_level = NSRV_LOG_ERROR;
    return nsrv_seal_init() == 0 ? 0 : -1;
}

static inline uint64_t gs_rand(gs_sim_t *s) {
    uint64_t z = (s->rng += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static inline uint64_t gs_range(gs_sim_t *s, uint64_t lo, uint64_t hi) {
    return hi <= lo ? lo : lo + gs_rand(s) % (hi - lo + 1);
}

/* True with probability pm / 1000. */
static inline bool gs_chance(gs_sim_t *s, uint32_t pm) {
    return pm && gs_rand(s) % 1000 < pm;
}

/* ---- clocks and addresses ---- */

static inline uint64_t gs_mono_at(const gs_sim_t *s, uint8_t id, uint64_t global) {
    return (uint64_t)((int64_t)global + s->node[id].mono_off);
}
static inline uint64_t gs_mono(const gs_sim_t *s, uint8_t id) {
    return gs_mono_at(s, id, s->now);
}
static inline int64_t gs_wall(const gs_sim_t *s, uint8_t id) {
    return GS_WALL0 + (int64_t)s->now + s->node[id].wall_off;
}
/* A node's monotonic time back on the global clock. */
static inline uint64_t gs_global(const gs_sim_t *s, uint8_t id, uint64_t mono) {
    return (uint64_t)((int64_t)mono - s->node[id].mono_off);
}

static inline struct sockaddr_in gs_addr(uint8_t id) {
    char ip[32];
    snprintf(ip, sizeof ip, "10.0.0.%u", id);
    return gt_sin(ip, GS_PORT);
}

static inline void gs_key(uint8_t id, uint8_t pk[NSRV_SEAL_PK_LEN], uint8_t sk[NSRV_SEAL_SK_LEN]) {
    uint8_t seed[NSRV_SEAL_SEED_LEN];
    for (size_t i = 0; i < sizeof seed; i++)
        seed[i] = (uint8_t)(id * 37 + i * 11 + 5);
    nsrv_seal_keypair_from_seed(seed, pk, sk);
}

/* ---- the log of sent datagrams ---- */

static inline size_t gs_sent_first(const gs_sim_t *s) {
    return s->nsent > s->sent_cap ? s->nsent - s->sent_cap : 0;
}

/* Log entry number k (gs_sent_first(s) <= k < s->nsent). */
static inline gs_sent_t *gs_sent(gs_sim_t *s, size_t k) {
    assert_true(k >= gs_sent_first(s) && k < s->nsent);
    return &s->sent[k % s->sent_cap];
}

/* The first logged datagram at or after index `from` matching src, dst and
 * type (0 = any); -1 if none. */
static inline long gs_find_sent(gs_sim_t *s, size_t from, uint8_t src, uint8_t dst, uint8_t type) {
    for (size_t k = NSRV_MAX(from, gs_sent_first(s)); k < s->nsent; k++) {
        const gs_sent_t *e = gs_sent(s, k);
        if ((!src || e->src == src) && (!dst || e->dst == dst) && (!type || e->type == type))
            return (long)k;
    }
    return -1;
}

static inline size_t gs_count_sent(gs_sim_t *s, size_t from, uint8_t src, uint8_t dst,
                                   uint8_t type) {
    size_t c = 0;
    for (long k = gs_find_sent(s, from, src, dst, type); k >= 0;
         k = gs_find_sent(s, (size_t)k + 1, src, dst, type))
        c++;
    return c;
}

/* ---- the queue ---- */

static inline void gs_push(gs_sim_t *s, const gs_msg_t *m) {
    if (s->nq == s->qcap) {
        s->qcap = s->qcap ? s->qcap * 2 : 64;
        s->q = nsrv_realloc(s->q, s->qcap * sizeof s->q[0]);
    }
    s->q[s->nq] = *m;
    s->q[s->nq].order = ++s->order;
    s->nq++;
}

static inline uint8_t *gs_dup_bytes(const void *d, size_t len) {
    uint8_t *p = nsrv_malloc(len ? len : 1);
    if (len)
        memcpy(p, d, len);
    return p;
}

/* Queues a copy of d from src to dst, delivered at global time `at`. */
static inline void gs_queue_dgram(gs_sim_t *s, uint8_t src, uint8_t dst, const uint8_t *d,
                                  size_t len, uint64_t at, bool late) {
    gs_msg_t m;
    memset(&m, 0, sizeof m);
    m.kind = GS_DGRAM;
    m.src = src;
    m.dst = dst;
    m.at = at;
    m.late = late;
    m.d = gs_dup_bytes(d, len);
    m.len = len;
    gs_push(s, &m);
}

static inline uint32_t gs_delay(gs_sim_t *s) {
    uint32_t d = (uint32_t)gs_range(s, s->delay_min, s->delay_max);
    if (d > s->max_delay)
        s->max_delay = d;
    return d;
}

/* Queues a logged datagram again (a replay or a held-back copy) for `at`. */
static inline void gs_inject(gs_sim_t *s, size_t k, uint8_t dst, uint64_t at) {
    const gs_sent_t *e = gs_sent(s, k);
    gs_queue_dgram(s, e->src, dst ? dst : e->dst, e->d, e->len, at, true);
}

/* ---- sending ---- */

static inline void gs_send_cb(gs_node_t *nd, uint8_t dst, const uint8_t *d, size_t len) {
    gs_sim_t *s = nd->sim;
    gs_sent_t e;
    memset(&e, 0, sizeof e);
    nsrv_gossip_msg_t m;
    size_t off;
    assert_int_equal(nsrv_gossip_msg_decode_header(d, len, &m, &off), 0);
    assert_true(len <= s->budget);
    assert_int_equal(m.src, nd->id);
    assert_int_equal(m.dst, dst);
    e.src = nd->id;
    e.dst = dst;
    e.type = m.type;
    e.inc = m.src_inc;
    e.seq = m.seq;
    e.src_mono = m.src_mono_ms;
    e.sent_at = s->now;
    e.d = gs_dup_bytes(d, len);
    e.len = len;
    gs_sent_t *slot = &s->sent[s->nsent % s->sent_cap];
    if (s->nsent >= s->sent_cap)
        nsrv_free(slot->d);
    *slot = e;
    s->nsent++;
    if (s->on_sent)
        s->on_sent(s, slot, s->hook_ud);
    if (dst < 1 || dst > s->n || !s->link[nd->id][dst] || gs_chance(s, s->drop_pm))
        return;
    gs_queue_dgram(s, nd->id, dst, d, len, s->now + gs_delay(s), false);
    if (gs_chance(s, s->dup_pm))
        gs_queue_dgram(s, nd->id, dst, d, len, s->now + gs_delay(s), false);
}

/* The engine's randomness (digest jitter, pull nonces), from the seed. */
static inline void gs_random_cb(void *ud, void *buf, size_t len) {
    gs_node_t *nd = ud;
    uint8_t *b = buf;
    for (size_t i = 0; i < len; i++)
        b[i] = (uint8_t)gs_rand(nd->sim);
}

static inline void gs_pull_fail_later(gs_sim_t *s, gs_msg_t *m);

/* Like transport.c: nothing goes to a named peer whose name has not resolved yet. */
static inline bool gs_has_addr(gs_node_t *nd, uint8_t peer) {
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(nd->peers, peer);
    return !p || nsrv_gossip_peer_has_addr(p);
}

/* A lookup node id's engine asked for: answered resolve_ms later (or when released). */
static inline void gs_lookup(gs_sim_t *s, uint8_t id, const nsrv_gossip_action_t *a) {
    gs_msg_t m;
    memset(&m, 0, sizeof m);
    m.kind = GS_RESOLVE;
    m.src = id;
    m.dst = a->peer;
    m.life = s->node[id].life;
    m.at = s->resolve_hold ? UINT64_MAX : s->now + s->resolve_ms;
    m.d = gs_dup_bytes(a->data, a->len);
    m.len = a->len;
    if (a->peer <= GS_MAX_NODES) {
        s->lookups[id][a->peer]++;
        s->lookup_at[id][a->peer] = s->now;
    }
    if (++s->resolving[id] > s->resolving_max[id])
        s->resolving_max[id] = s->resolving[id];
    gs_push(s, &m);
}

/* Carries out what node id's engine asked for: datagrams into the network,
 * pulls as queued legs (a lost leg is noticed GS_PULL_FAIL_MS later, as a
 * closed or refused connection would be). */
static inline void gs_drain(gs_sim_t *s, uint8_t id) {
    gs_node_t *nd = &s->node[id];
    nsrv_gossip_action_t a;
    while (nd->up && nsrv_gossip_node_poll(nd->g, &a)) {
        if (a.kind == NSRV_GOSSIP_ACT_SEND) {
            if (gs_has_addr(nd, a.peer))
                gs_send_cb(nd, a.peer, a.data, a.len);
        } else if (a.kind == NSRV_GOSSIP_ACT_RESOLVE) {
            gs_lookup(s, id, &a);
        } else if (a.kind == NSRV_GOSSIP_ACT_CLOSE) {
            s->conns_closed[id]++;
            s->conn_closed_last[id] = a.pull_id;
        } else if (a.kind == NSRV_GOSSIP_ACT_PULL) {
            gs_msg_t m;
            memset(&m, 0, sizeof m);
            m.kind = GS_PULL_REQ;
            m.src = id;
            m.dst = a.peer;
            m.pull_id = a.pull_id;
            m.life = nd->life;
            m.req_mono = gs_mono(s, id);
            m.d = gs_dup_bytes(a.data, a.len);
            m.len = a.len;
            s->pulls_started++;
            if (a.peer <= GS_MAX_NODES)
                s->pulls_to[id][a.peer]++;
            if (!gs_has_addr(nd, a.peer)) {
                m.kind = GS_PULL_FAIL; /* nowhere to connect: it fails at once */
                m.at = s->now;
                nsrv_free(m.d);
                m.d = NULL;
                m.len = 0;
                gs_push(s, &m);
            } else if (a.peer < 1 || a.peer > s->n || !s->link[id][a.peer] ||
                       (!s->pulls_lossless && gs_chance(s, s->drop_pm))) {
                gs_pull_fail_later(s, &m);
            } else {
                m.at = s->now + gs_delay(s);
                gs_push(s, &m);
            }
        } else if (a.kind == NSRV_GOSSIP_ACT_PULL_CANCEL)
            s->pulls_cancelled[id]++; /* closed: legs still queued reach an engine that no
                                         longer waits for them */
    }
}

/* ---- set-up ---- */

static inline void gs_init(gs_sim_t *s, size_t n, uint64_t seed) {
    assert_true(n >= 1 && n <= GS_MAX_NODES);
    memset(s, 0, sizeof *s);
    s->n = n;
    s->now = GS_T0;
    s->rng = seed;
    s->budget = NSRV_GOSSIP_DGRAM_DEFAULT;
    s->delay_min = s->delay_max = 1;
    s->pull_fail_ms = GS_PULL_FAIL_MS;
    s->full_ms = 5000;
    s->delta_ms = 100;
    s->sent_cap = 4096;
    s->sent = nsrv_calloc(s->sent_cap, sizeof s->sent[0]);
    nsrv_arena_init(&s->arena, 64 * 1024);
    for (uint8_t i = 1; i <= n; i++) {
        gs_node_t *nd = &s->node[i];
        nd->sim = s;
        nd->id = i;
        gs_key(i, nd->pk, nd->sk);
        for (uint8_t j = 1; j <= n; j++)
            s->link[i][j] = true;
    }
}

/* Starts (or restarts) node id: new route table, new peer table, a higher
 * incarnation; like transport.c it asks every peer for everything and sends
 * SYNC_REQ. Brokers' registrations are lost, as in a process restart. */
static inline void gs_start(gs_sim_t *s, uint8_t id) {
    gs_node_t *nd = &s->node[id];
    assert_false(nd->up);
    uint64_t wall = (uint64_t)gs_wall(s, id);
    nd->inc = NSRV_MAX(nd->inc + 1, wall);
    nd->rt = nsrv_route_create();
    nd->peers = nsrv_gossip_peers_create(s->budget);
    nsrv_gossip_peer_conf_t confs[GS_MAX_NODES];
    nsrv_gossip_key_t keys[GS_MAX_NODES];
    char addrs[GS_MAX_NODES][32];
    size_t k = 0;
    for (uint8_t j = 1; j <= s->n; j++) {
        if (j == id)
            continue;
        keys[k].key_id = GS_KEY_ID;
        memcpy(keys[k].pk, s->node[j].pk, sizeof keys[k].pk);
        if (s->named)
            snprintf(addrs[k], sizeof addrs[k], "node%u:%d", j, GS_PORT);
        else
            snprintf(addrs[k], sizeof addrs[k], "10.0.0.%u:%d", j, GS_PORT);
        confs[k] = (nsrv_gossip_peer_conf_t){j, addrs[k], &keys[k], 1};
        k++;
    }
    assert_int_equal(nsrv_gossip_peers_configure(nd->peers, confs, k), 0);
    nsrv_gossip_node_opts_t o = {
        .node_id = id,
        .cluster = GS_CLUSTER,
        .budget = s->budget,
        .incarnation = nd->inc,
        .mono_start_ms = gs_mono(s, id),
        .key_id = GS_KEY_ID,
        .sk = nd->sk,
        .interval_ms = s->full_ms,
        .delta_ms = s->delta_ms,
        .random = gs_random_cb,
        .ud = nd,
        .reg_max_topics = &s->reg_max_topics,
        .reg_max_decoded_bytes = &s->reg_max_decoded_bytes,
    };
    nd->g = nsrv_gossip_node_create(&o, nd->rt, nd->peers);
    assert_non_null(nd->g);
    if (s->announce && !s->mute[id]) {
        nsrv_gossip_announce_t ann = {nsrv_str_c(""), (uint16_t)(9800 + id), nsrv_str_c(""),
                                      (uint16_t)(9900 + id)};
        nsrv_gossip_node_set_announce(nd->g, &ann);
    }
    nd->up = true;
    nd->life++;
    nd->up_since = s->now;
    s->resolving[id] = 0; /* a dead life's lookups are never answered */
    if (s->timers) {
        nsrv_gossip_node_start(nd->g, gs_mono(s, id), gs_wall(s, id));
    } else {
        for (uint8_t j = 1; j <= s->n; j++)
            if (j != id)
                nsrv_gossip_node_want_all(nd->g, j);
        nsrv_gossip_node_send_sync(nd->g, gs_mono(s, id), gs_wall(s, id));
    }
    gs_drain(s, id);
}

static inline void gs_stop(gs_sim_t *s, uint8_t id) {
    gs_node_t *nd = &s->node[id];
    if (!nd->up)
        return;
    nsrv_gossip_node_destroy(&nd->g);
    nsrv_gossip_peers_destroy(&nd->peers);
    nsrv_route_destroy(&nd->rt);
    nd->up = false;
}

/* A graceful stop: LEAVE to the peers that speak it, then gone. */
static inline void gs_leave(gs_sim_t *s, uint8_t id) {
    gs_node_t *nd = &s->node[id];
    if (!nd->up)
        return;
    nsrv_gossip_node_leave(nd->g, gs_mono(s, id), gs_wall(s, id));
    gs_drain(s, id);
    gs_stop(s, id);
}

static inline void gs_start_all(gs_sim_t *s) {
    for (uint8_t i = 1; i <= s->n; i++)
        gs_start(s, i);
}

static inline void gs_free(gs_sim_t *s) {
    for (uint8_t i = 1; i <= s->n; i++)
        gs_stop(s, i);
    for (size_t i = 0; i < s->nq; i++)
        nsrv_free(s->q[i].d);
    nsrv_free(s->q);
    for (size_t k = gs_sent_first(s); k < s->nsent; k++)
        nsrv_free(gs_sent(s, k)->d);
    nsrv_free(s->sent);
    nsrv_arena_deinit(&s->arena);
}

/* A simulator on the heap, for the tests that keep one per case. */
static inline gs_sim_t *gs_new(size_t n, uint64_t seed) {
    gs_sim_t *s = nsrv_malloc(sizeof *s);
    gs_init(s, n, seed);
    return s;
}

static inline void gs_del(gs_sim_t *s) {
    gs_free(s);
    nsrv_free(s);
}

/* Cuts (or heals) both directions between a and b. */
static inline void gs_link(gs_sim_t *s, uint8_t a, uint8_t b, bool up) {
    s->link[a][b] = s->link[b][a] = up;
}

/* ---- receiving ---- */

/* Delivers bytes to node dst as if they came from node src's address, now.
 * Returns the engine's verdict (0 or a rejection reason); 1 if dst is down. */
static inline int gs_deliver_raw(gs_sim_t *s, uint8_t dst, uint8_t src, const uint8_t *d,
                                 size_t len) {
    gs_node_t *nd = &s->node[dst];
    if (!nd->up)
        return 1;
    struct sockaddr_in from = gs_addr(src);
    int rc = nsrv_gossip_node_on_dgram(nd->g, d, len, (const struct sockaddr *)&from,
                                       gs_mono(s, dst), gs_wall(s, dst));
    gs_drain(s, dst);
    s->delivered++;
    if (rc == 0)
        s->accepted++;
    else if (nsrv_gossip_reason_index(rc) >= 0)
        s->rejected[nsrv_gossip_reason_index(rc)]++;
    return rc;
}

/* Delivers logged datagram k now, to its own destination or to dst. */
static inline int gs_deliver_sent(gs_sim_t *s, size_t k, uint8_t dst) {
    const gs_sent_t *e = gs_sent(s, k);
    return gs_deliver_raw(s, dst ? dst : e->dst, e->src, e->d, e->len);
}

/* ---- pulls ---- */

/* Builds a PULL_REQ from a to b into m (kind GS_PULL_REQ). */
static inline int gs_pull_begin(gs_sim_t *s, uint8_t a, uint8_t b, const uint64_t *keys, size_t n,
                                bool all, gs_msg_t *m) {
    gs_node_t *na = &s->node[a];
    memset(m, 0, sizeof *m);
    m->kind = GS_PULL_REQ;
    m->src = a;
    m->dst = b;
    m->all = all;
    m->life = na->life;
    m->req_mono = gs_mono(s, a);
    for (size_t i = 0; i < sizeof m->nonce; i++)
        m->nonce[i] = (uint8_t)gs_rand(s);
    nsrv_buf_t req;
    nsrv_buf_init(&req);
    int rc = nsrv_gossip_node_pull_request(na->g, b, all ? NULL : keys, all ? 0 : n, m->nonce,
                                           m->req_mono, gs_wall(s, a), &req);
    if (rc != 0) {
        nsrv_buf_deinit(&req);
        return rc;
    }
    assert_true(req.len >= 4);
    m->d = gs_dup_bytes(req.data, req.len);
    m->len = req.len;
    nsrv_buf_deinit(&req);
    s->pulls_started++;
    return 0;
}

/* b serves the request in m now; on success m becomes the response (kind
 * GS_PULL_RESP). Returns 0 or the rejection reason (1: b is down). */
static inline int gs_pull_serve(gs_sim_t *s, gs_msg_t *m) {
    gs_node_t *nb = &s->node[m->dst];
    if (!nb->up)
        return 1;
    struct sockaddr_in from = gs_addr(m->src);
    nsrv_buf_t out;
    nsrv_buf_init(&out);
    /* As pull_io.c: the engine admits the connection, serves its request, and hears when
     * the reply is written. */
    uint32_t conn =
        nsrv_gossip_node_pull_conn_open(nb->g, (const struct sockaddr *)&from, gs_mono(s, m->dst));
    int rc = conn ? nsrv_gossip_node_pull_conn_request(nb->g, conn, m->d + 4, m->len - 4,
                                                       (const struct sockaddr *)&from,
                                                       gs_mono(s, m->dst), gs_wall(s, m->dst), &out)
                  : NSRV_GOSSIP_ESRC_ADDR;
    if (conn)
        nsrv_gossip_node_pull_conn_closed(nb->g, conn);
    gs_drain(s, m->dst);
    nsrv_free(m->d);
    m->d = NULL;
    m->len = 0;
    if (rc == 0) {
        m->kind = GS_PULL_RESP;
        m->d = gs_dup_bytes(out.data, out.len);
        m->len = out.len;
    }
    nsrv_buf_deinit(&out);
    return rc;
}

/* The requester decodes the response in m (fed in random chunks) and applies
 * it now. Returns the brokers imported, or a negative decoder error, or -1000
 * if the requester restarted since it asked. */
static inline long gs_pull_finish(gs_sim_t *s, gs_msg_t *m) {
    gs_node_t *na = &s->node[m->src];
    if (!na->up || na->life != m->life)
        return -1000;
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(na->peers, m->dst);
    assert_non_null(p);
    size_t nkeys;
    const nsrv_gossip_key_t *keys = nsrv_gossip_peer_keys(p, &nkeys);
    nsrv_gossip_pull_dec_t *dec = nsrv_gossip_pull_dec_create(m->nonce, keys, nkeys);
    int rc = NSRV_AGAIN;
    for (size_t off = 0; off < m->len && rc == NSRV_AGAIN;) {
        size_t chunk = (size_t)gs_range(s, 1, 700); /* (NSRV_MIN evaluates twice) */
        chunk = NSRV_MIN(m->len - off, chunk);
        rc = nsrv_gossip_pull_dec_feed(dec, m->d + off, chunk);
        off += chunk;
    }
    long res;
    if (rc == 0) {
        const nsrv_gossip_pull_item_t *items;
        size_t count = nsrv_gossip_pull_dec_items(dec, &items);
        uint64_t src_inc = 0, src_mono = 0;
        nsrv_gossip_pull_dec_origin(dec, &src_inc, &src_mono);
        res = (long)nsrv_gossip_node_apply_pull(na->g, m->dst, items, count, m->req_mono,
                                                gs_mono(s, m->src), src_inc, src_mono);
        s->pulls_ok++;
        s->imported += (uint64_t)res;
    } else {
        res = rc == NSRV_AGAIN ? -1001 : rc;
        s->pulls_failed++;
    }
    nsrv_gossip_pull_dec_destroy(&dec);
    return res;
}

/* A whole pull from a to b, now, with no network in between. Returns the
 * brokers imported or a negative error. */
static inline long gs_pull_now(gs_sim_t *s, uint8_t a, uint8_t b, const uint64_t *keys, size_t n,
                               bool all) {
    gs_msg_t m;
    int rc = gs_pull_begin(s, a, b, keys, n, all, &m);
    if (rc != 0)
        return rc;
    rc = gs_pull_serve(s, &m);
    long res = rc == 0 ? gs_pull_finish(s, &m) : (rc > 0 ? -rc : rc);
    nsrv_free(m.d);
    return res;
}

/* What node a's engine wants to pull from b now, pulled at once. Returns the
 * brokers imported, 0 if nothing was wanted. */
static inline long gs_pull_wanted(gs_sim_t *s, uint8_t a, uint8_t b) {
    uint64_t *keys = nsrv_malloc(GS_PULL_KEYS_MAX * sizeof *keys);
    bool all = false;
    size_t n =
        nsrv_gossip_node_take_pull(s->node[a].g, b, keys, GS_PULL_KEYS_MAX, &all, gs_mono(s, a));
    long res = all || n ? gs_pull_now(s, a, b, keys, n, all) : 0;
    nsrv_free(keys);
    return res;
}

/* Every pull any node wants, from every peer, at once. */
static inline void gs_pull_all_wanted(gs_sim_t *s) {
    for (uint8_t a = 1; a <= s->n; a++)
        for (uint8_t b = 1; b <= s->n; b++)
            if (a != b && s->node[a].up)
                gs_pull_wanted(s, a, b);
}

static inline void gs_pull_fail_later(gs_sim_t *s, gs_msg_t *m) {
    nsrv_free(m->d);
    m->d = NULL;
    m->len = 0;
    if (!s->pull_fail_ms)
        return; /* a black hole: only the engine's deadline notices */
    m->kind = GS_PULL_FAIL;
    m->at = s->now + s->pull_fail_ms;
    gs_push(s, m);
}

/* The reply of a pull the engine started, fed to it in random chunks. */
static inline void gs_pull_feed(gs_sim_t *s, gs_msg_t *m) {
    gs_node_t *na = &s->node[m->src];
    if (!na->up || na->life != m->life)
        return;
    uint64_t before = nsrv_gossip_node_counters(na->g)->brokers_imported;
    int rc = NSRV_AGAIN;
    for (size_t off = 0; off < m->len && rc == NSRV_AGAIN;) {
        size_t chunk = (size_t)gs_range(s, 1, 700); /* (NSRV_MIN evaluates twice) */
        chunk = NSRV_MIN(m->len - off, chunk);
        rc = nsrv_gossip_node_pull_data(na->g, m->dst, m->pull_id, m->d + off, chunk,
                                        gs_mono(s, m->src));
        off += chunk;
    }
    s->imported += nsrv_gossip_node_counters(na->g)->brokers_imported - before;
    if (rc == 0)
        s->pulls_ok++;
    else if (rc == NSRV_AGAIN)
        nsrv_gossip_node_pull_failed(na->g, m->dst, m->pull_id, gs_mono(s, m->src));
    if (rc != 0 && rc != -ESRCH)
        s->pulls_failed++;
    gs_drain(s, m->src);
}

/* A pull leg was lost: the requester's engine hears of it. */
static inline void gs_pull_lost(gs_sim_t *s, const gs_msg_t *m) {
    gs_node_t *na = &s->node[m->src];
    if (!na->up || na->life != m->life || !m->pull_id)
        return;
    nsrv_gossip_node_pull_failed(na->g, m->dst, m->pull_id, gs_mono(s, m->src));
    s->pulls_failed++;
    gs_drain(s, m->src);
}

/* ---- the event loop ---- */

static inline void gs_timers(gs_sim_t *s, uint8_t id) {
    nsrv_gossip_node_tick(s->node[id].g, gs_mono(s, id), gs_wall(s, id));
    gs_drain(s, id);
}

/* The engine's next deadline on the global clock. */
static inline uint64_t gs_node_next(const gs_sim_t *s, uint8_t id) {
    uint64_t d = nsrv_gossip_node_deadline(s->node[id].g);
    return d == UINT64_MAX ? d : gs_global(s, id, d);
}

/* The answer to a lookup: node dst's address, or an error while it is unresolvable. */
static inline void gs_resolve_answer(gs_sim_t *s, const gs_msg_t *m) {
    gs_node_t *nd = &s->node[m->src];
    if (!nd->up || nd->life != m->life)
        return;
    s->resolving[m->src]--;
    char host[NSRV_GOSSIP_HOST_MAX + 1];
    snprintf(host, sizeof host, "%.*s", (int)m->len, (const char *)m->d);
    struct sockaddr_in ip = gs_addr(m->dst);
    nsrv_gossip_resolution_t r = {.addr = (const struct sockaddr *)&ip};
    if (s->unresolvable[m->dst])
        r = (nsrv_gossip_resolution_t){NULL, -3008, "EAI_NONAME", "unknown node or service"};
    nsrv_gossip_node_resolved(nd->g, m->dst, host, &r, gs_mono(s, m->src), gs_wall(s, m->src));
    gs_drain(s, m->src);
}

/* Held lookups (resolve_hold) are answered at the next event. */
static inline void gs_resolve_release(gs_sim_t *s) {
    for (size_t i = 0; i < s->nq; i++)
        if (s->q[i].kind == GS_RESOLVE && s->q[i].at == UINT64_MAX)
            s->q[i].at = s->now;
}

static inline void gs_process(gs_sim_t *s, gs_msg_t *m) {
    switch (m->kind) {
    case GS_DGRAM:
        if (!s->link[m->src][m->dst])
            break; /* cut while in flight */
        if (m->late)
            s->late_delivered++;
        gs_deliver_raw(s, m->dst, m->src, m->d, m->len);
        break;
    case GS_PULL_REQ:
        if (!s->link[m->dst][m->src] || gs_pull_serve(s, m) != 0 ||
            (!s->pulls_lossless && gs_chance(s, s->drop_pm))) {
            gs_pull_fail_later(s, m);
            return; /* m now belongs to the queue */
        }
        m->at = s->now + gs_delay(s);
        gs_push(s, m);
        return;
    case GS_PULL_RESP:
        if (m->pull_id)
            gs_pull_feed(s, m);
        else
            gs_pull_finish(s, m);
        break;
    case GS_PULL_FAIL:
        gs_pull_lost(s, m);
        break;
    case GS_RESOLVE:
        gs_resolve_answer(s, m);
        break;
    default:
        fail();
    }
    nsrv_free(m->d);
}

/* Runs every queued event and node timer due up to global time t_end, in time
 * order (queue before timers on ties), then sets now = t_end. */
static inline void gs_run_until(gs_sim_t *s, uint64_t t_end) {
    uint64_t last_t = 0, spins = 0;
    for (;;) {
        uint64_t tq = UINT64_MAX;
        size_t qi = 0;
        for (size_t i = 0; i < s->nq; i++) {
            if (s->q[i].at < tq || (s->q[i].at == tq && s->q[i].order < s->q[qi].order)) {
                tq = s->q[i].at;
                qi = i;
            }
        }
        uint64_t tt = UINT64_MAX;
        uint8_t ti = 0;
        if (s->timers) {
            for (uint8_t i = 1; i <= s->n; i++) {
                if (!s->node[i].up)
                    continue;
                uint64_t t = gs_node_next(s, i);
                if (t < tt) {
                    tt = t;
                    ti = i;
                }
            }
        }
        uint64_t t = NSRV_MIN(tq, tt);
        if (t > t_end)
            break;
        if (t > s->now)
            s->now = t;
        if (tq <= tt) {
            gs_msg_t m = s->q[qi];
            s->q[qi] = s->q[--s->nq];
            gs_process(s, &m);
        } else {
            /* An engine whose deadline does not move past now would spin. */
            spins = t == last_t ? spins + 1 : 0;
            last_t = t;
            assert_true(spins < 10000);
            gs_timers(s, ti);
        }
        if (s->on_event)
            s->on_event(s, s->hook_ud);
    }
    if (t_end > s->now)
        s->now = t_end;
}

static inline void gs_run(gs_sim_t *s, uint64_t ms) {
    gs_run_until(s, s->now + ms);
}

/* Drops everything in flight. */
static inline void gs_flush(gs_sim_t *s) {
    for (size_t i = 0; i < s->nq; i++) {
        gs_msg_t *m = &s->q[i];
        if (m->kind != GS_DGRAM && m->kind != GS_RESOLVE)
            gs_pull_lost(s, m);
        nsrv_free(m->d);
    }
    s->nq = 0;
}

/* ---- engines by hand ---- */

static inline void gs_full(gs_sim_t *s, uint8_t id) {
    nsrv_gossip_node_send_full(s->node[id].g, gs_mono(s, id), gs_wall(s, id));
    gs_drain(s, id);
}
static inline void gs_delta(gs_sim_t *s, uint8_t id) {
    nsrv_gossip_node_send_delta(s->node[id].g, gs_mono(s, id), gs_wall(s, id));
    gs_drain(s, id);
}
static inline size_t gs_sync(gs_sim_t *s, uint8_t id) {
    size_t n = nsrv_gossip_node_send_sync(s->node[id].g, gs_mono(s, id), gs_wall(s, id));
    gs_drain(s, id);
    return n;
}

/* ---- brokers ---- */

typedef struct {
    char name[32], addr[32], topic[32];
    int64_t id;
    int64_t timeout_ms; /* 0: the default 120 s */
    nsrv_data_version_t dv;
    uint64_t conn;
    uint64_t bkey;
} gs_broker_t;

static inline void gs_broker_init(gs_broker_t *b, unsigned k) {
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "broker-%u", k);
    snprintf(b->addr, sizeof b->addr, "10.1.%u.%u:10911", k / 250, k % 250);
    snprintf(b->topic, sizeof b->topic, "T%u", k);
    b->dv = (nsrv_data_version_t){1, 1700000000000LL + k, 0};
    b->conn = 1000 + k;
    b->bkey =
        nsrv_gossip_bkey(nsrv_str_c(GS_CLUSTER), nsrv_str_c(b->name), b->id, nsrv_str_c(b->addr));
}

static inline int64_t gs_broker_timeout(const gs_broker_t *b) {
    return b->timeout_ms > 0 ? b->timeout_ms : NSRV_ROUTE_DEFAULT_TIMEOUT_MS;
}

/* REGISTER_BROKER from b, received directly by node id now. */
static inline void gs_register(gs_sim_t *s, uint8_t id, const gs_broker_t *b) {
    nsrv_topic_config_t topics[2] = {{b->topic, 4, 4, 6, 0}, {"TBW102", 8, 8, 7, 0}};
    nsrv_register_body_t body;
    memset(&body, 0, sizeof body);
    body.data_version = b->dv;
    body.topics = topics;
    body.n_topics = 2;
    body.has_filter_servers = true;
    nsrv_register_req_t req = {
        .cluster = GS_CLUSTER,
        .broker_addr = b->addr,
        .broker_name = b->name,
        .ha_server_addr = "10.9.9.9:10912",
        .broker_id = b->id,
        .timeout_ms = b->timeout_ms,
        .acting_master = 0,
        .body = &body,
        .conn_id = b->conn,
    };
    nsrv_register_result_t res;
    nsrv_route_register_broker(s->node[id].rt, &req, gs_mono(s, id), &res);
}

/* QUERY_DATA_VERSION from b at node id now; returns `changed`. */
static inline bool gs_query(gs_sim_t *s, uint8_t id, const gs_broker_t *b) {
    nsrv_data_version_t stored;
    bool has = false;
    return nsrv_route_query_data_version(s->node[id].rt, GS_CLUSTER, b->addr, &b->dv,
                                         gs_mono(s, id), &stored, &has);
}

static inline void gs_heartbeat(gs_sim_t *s, uint8_t id, const gs_broker_t *b) {
    nsrv_route_broker_heartbeat(s->node[id].rt, GS_CLUSTER, b->addr, gs_mono(s, id));
}

/* UNREGISTER_BROKER from b at node id: the engine hears of it first (as the
 * processor's hook does), then the table drops it. */
static inline void gs_unregister(gs_sim_t *s, uint8_t id, const gs_broker_t *b) {
    nsrv_gossip_node_on_unregister(s->node[id].g, GS_CLUSTER, b->addr, b->name, b->id,
                                   gs_mono(s, id));
    nsrv_route_unregister_broker(s->node[id].rt, GS_CLUSTER, b->addr, b->name, b->id);
}

static inline bool gs_live(gs_sim_t *s, uint8_t id, const gs_broker_t *b,
                           nsrv_route_live_info_t *li) {
    nsrv_route_live_info_t tmp;
    return s->node[id].up && nsrv_route_live_info(s->node[id].rt, GS_CLUSTER, b->addr,
                                                  gs_mono(s, id), li ? li : &tmp);
}

static inline bool gs_routable(gs_sim_t *s, uint8_t id, const char *topic) {
    const char *body;
    size_t len;
    return s->node[id].up && nsrv_route_topic_route(s->node[id].rt, topic, NSRV_ROUTE_JSON_STANDARD,
                                                    NULL, NULL, gs_mono(s, id), &body, &len) == 0;
}

/* The route for b's topic names b's address (its own broker group). */
static inline bool gs_routes_to(gs_sim_t *s, uint8_t id, const gs_broker_t *b) {
    const char *body;
    size_t len;
    if (!s->node[id].up ||
        nsrv_route_topic_route(s->node[id].rt, b->topic, NSRV_ROUTE_JSON_STANDARD, NULL, NULL,
                               gs_mono(s, id), &body, &len) != 0)
        return false;
    char needle[64];
    snprintf(needle, sizeof needle, "\"%s\"", b->addr);
    nsrv_buf_t tmp;
    nsrv_buf_init(&tmp);
    nsrv_buf_append(&tmp, body, len);
    nsrv_buf_append_ch(&tmp, '\0');
    bool found = strstr(tmp.data, needle) != NULL;
    nsrv_buf_deinit(&tmp);
    return found;
}

/* b's last-seen time at node id on the global clock; 0 if not live there. */
static inline uint64_t gs_seen_global(gs_sim_t *s, uint8_t id, const gs_broker_t *b) {
    nsrv_route_live_info_t li;
    return gs_live(s, id, b, &li) ? gs_global(s, id, li.last_seen_ms) : 0;
}

/* Decodes a logged datagram fully (no checks of the envelope against a peer table). */
static inline void gs_decode(gs_sim_t *s, const gs_sent_t *e, nsrv_gossip_msg_t *m) {
    nsrv_arena_reset(&s->arena);
    assert_int_equal(nsrv_gossip_msg_decode(e->d, e->len, &s->arena, m), 0);
}
