/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gossip engine (include/nsrv/gossip_node.h): digests out, reports in,
 * pulls and tombstones, on top of the route table's peer view (route_peer.c).
 * No sockets and no clocks of its own. Loop thread only.
 */
#include "nsrv/gossip_node.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/arena.h"
#include "nsrv/json.h"
#include "nsrv/log.h"
#include "nsrv/register_body.h"
#include "nsrv/seal.h"
#include "nsrv/uthash.h"

/* Explicit unregisters are re-sent with every full digest for this long: the
 * broker timeout plus two digest rounds (gossip-design §6.5 item 4). */
#define TOMB_KEEP_MS (150 * 1000)
/* A peer gets at most one full digest per second in answer to SYNC_REQs. */
#define SYNC_REPLY_MIN_MS 1000
/* Keys waiting to be pulled from one peer; a peer cannot make us hold more. */
#define PEND_MAX 65536
/* Identities no longer in the route table are forgotten after this long. */
#define IDENT_KEEP_MS (10 * 60 * 1000)
/* Fresh pulls decode registrations as the newest broker version would send them. */
#define PULL_BODY_VERSION 479

/* What a bkey stands for; learned from our own table or from pulls. */
typedef struct {
    uint64_t bkey;
    UT_hash_handle hh;
    char *cluster, *name, *addr;
    int64_t id;
    uint8_t via_peer;     /* last peer whose report raised last-seen; 0 none */
    uint64_t via_seen_ms; /* that report, on our clock */
    uint64_t touched_ms;  /* last time the route table had it */
    bool sent;            /* a delta or digest carried it */
    nsrv_data_version_t sent_dv;
    uint64_t sent_created; /* the live entry it carried: a returning broker is news */
} ident_t;

typedef struct {
    uint64_t key;
    UT_hash_handle hh;
    nsrv_data_version_t dv; /* the version the peer reported */
} pend_t;

typedef struct {
    uint64_t bkey;
    nsrv_data_version_t dv;
    uint64_t event_ms;
    bool sent;
} tomb_t;

struct nsrv_gossip_node {
    nsrv_gossip_node_opts_t o;
    char cluster[NSRV_GOSSIP_CLUSTER_MAX + 1];
    nsrv_gossip_sender_t sender;
    nsrv_route_t *rt;
    nsrv_gossip_peers_t *peers;
    ident_t *idents;
    pend_t *pend[256];
    size_t n_pend[256];
    bool pend_all[256];
    bool got_digest[256];
    uint64_t last_sync_reply[256];
    tomb_t *tombs;
    size_t n_tombs, cap_tombs;
    uint32_t round;
    nsrv_arena_t arena;
    nsrv_buf_t scratch;
    nsrv_gossip_counters_t c;
    char source[16];
};

/* ---- identities ---- */

static ident_t *ident_find(nsrv_gossip_node_t *n, uint64_t bkey) {
    ident_t *i;
    HASH_FIND(hh, n->idents, &bkey, sizeof bkey, i);
    return i;
}

static ident_t *ident_put(nsrv_gossip_node_t *n, uint64_t bkey, nsrv_str_t cluster, nsrv_str_t name,
                          int64_t id, nsrv_str_t addr, uint64_t now) {
    ident_t *i = ident_find(n, bkey);
    if (!i) {
        i = nsrv_calloc(1, sizeof *i);
        i->bkey = bkey;
        i->cluster = nsrv_strndup(cluster.ptr, cluster.len);
        i->name = nsrv_strndup(name.ptr, name.len);
        i->addr = nsrv_strndup(addr.ptr, addr.len);
        i->id = id;
        HASH_ADD(hh, n->idents, bkey, sizeof i->bkey, i);
    }
    i->touched_ms = now;
    return i;
}

static void ident_free(nsrv_gossip_node_t *n, ident_t *i) {
    HASH_DEL(n->idents, i);
    nsrv_free(i->cluster);
    nsrv_free(i->name);
    nsrv_free(i->addr);
    nsrv_free(i);
}

static uint64_t info_bkey(const nsrv_route_live_info_t *li) {
    return nsrv_gossip_bkey(nsrv_str_c(li->cluster), nsrv_str_c(li->broker_name), li->broker_id,
                            nsrv_str_c(li->broker_addr));
}

/* ---- pending pulls ---- */

static void pend_add(nsrv_gossip_node_t *n, uint8_t peer, uint64_t key,
                     const nsrv_data_version_t *dv) {
    pend_t *p;
    HASH_FIND(hh, n->pend[peer], &key, sizeof key, p);
    if (p) {
        if (nsrv_data_version_cmp(dv, &p->dv) > 0)
            p->dv = *dv;
        return;
    }
    if (n->n_pend[peer] >= PEND_MAX)
        return;
    p = nsrv_calloc(1, sizeof *p);
    p->key = key;
    p->dv = *dv;
    HASH_ADD(hh, n->pend[peer], key, sizeof p->key, p);
    n->n_pend[peer]++;
}

static void pend_clear(nsrv_gossip_node_t *n, uint8_t peer) {
    pend_t *p, *tmp;
    HASH_ITER(hh, n->pend[peer], p, tmp) {
        HASH_DEL(n->pend[peer], p);
        nsrv_free(p);
    }
    n->n_pend[peer] = 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

size_t nsrv_gossip_node_take_pull(nsrv_gossip_node_t *n, uint8_t peer_id, uint64_t *keys,
                                  size_t cap, bool *all, uint64_t now_mono) {
    *all = n->pend_all[peer_id];
    n->pend_all[peer_id] = false;
    if (*all) {
        pend_clear(n, peer_id);
        return 0;
    }
    /* Keys another pull brought in meanwhile (a start-up PULL ALL, another peer)
     * are not fetched again - unless this peer's clock still needs its anchor. */
    nsrv_gossip_peer_t *peer = nsrv_gossip_peers_find(n->peers, peer_id);
    nsrv_gossip_peer_info_t info = {0};
    if (peer)
        nsrv_gossip_peer_info(peer, &info);
    size_t k = 0;
    pend_t *p, *tmp;
    HASH_ITER(hh, n->pend[peer_id], p, tmp) {
        if (k == cap)
            break;
        ident_t *i = ident_find(n, p->key);
        nsrv_route_live_info_t have;
        bool held = info.has_anchor && i &&
                    nsrv_route_live_info(n->rt, i->cluster, i->addr, now_mono, &have) &&
                    nsrv_data_version_cmp(&have.data_version, &p->dv) >= 0;
        if (!held)
            keys[k++] = p->key;
        HASH_DEL(n->pend[peer_id], p);
        nsrv_free(p);
        n->n_pend[peer_id]--;
    }
    qsort(keys, k, sizeof keys[0], cmp_u64);
    return k;
}

void nsrv_gossip_node_want_all(nsrv_gossip_node_t *n, uint8_t peer_id) {
    n->pend_all[peer_id] = true;
}

void nsrv_gossip_node_pull_failed(nsrv_gossip_node_t *n, uint8_t peer_id, bool all) {
    n->c.pulls_failed++;
    /* Digest-driven keys come back with the peer's next digest; only a lost
     * start-up pull must be asked for again. */
    if (all)
        n->pend_all[peer_id] = true;
}

/* ---- create ---- */

nsrv_gossip_node_t *nsrv_gossip_node_create(const nsrv_gossip_node_opts_t *o, nsrv_route_t *rt,
                                            nsrv_gossip_peers_t *peers) {
    nsrv_gossip_node_t *n = nsrv_calloc(1, sizeof *n);
    n->o = *o;
    snprintf(n->cluster, sizeof n->cluster, "%s", o->cluster);
    n->o.cluster = n->cluster;
    n->o.sk = NULL;
    if (nsrv_gossip_sender_init(&n->sender, nsrv_str_c(n->cluster), o->node_id, o->incarnation,
                                o->mono_start_ms, o->key_id, o->sk) != 0) {
        nsrv_free(n);
        return NULL;
    }
    n->rt = rt;
    n->peers = peers;
    nsrv_arena_init(&n->arena, 64 * 1024);
    nsrv_buf_init(&n->scratch);
    return n;
}

void nsrv_gossip_node_destroy(nsrv_gossip_node_t **np) {
    nsrv_gossip_node_t *n = np ? *np : NULL;
    if (!n)
        return;
    ident_t *i, *tmp;
    HASH_ITER(hh, n->idents, i, tmp) {
        ident_free(n, i);
    }
    for (int p = 0; p < 256; p++)
        pend_clear(n, (uint8_t)p);
    nsrv_free(n->tombs);
    nsrv_gossip_sender_deinit(&n->sender);
    nsrv_arena_deinit(&n->arena);
    nsrv_buf_deinit(&n->scratch);
    nsrv_free(n);
    *np = NULL;
}

void nsrv_gossip_node_set_key(nsrv_gossip_node_t *n, uint8_t key_id, const uint8_t *sk) {
    nsrv_gossip_sender_set_key(&n->sender, key_id, sk);
    n->o.key_id = key_id;
}

nsrv_gossip_counters_t *nsrv_gossip_node_counters(nsrv_gossip_node_t *n) {
    return &n->c;
}

/* ---- sending ---- */

typedef struct {
    nsrv_gossip_node_t *n;
    uint8_t dst;
} emit_ctx_t;

static int emit_cb(void *ud, const uint8_t *d, size_t len) {
    emit_ctx_t *e = ud;
    e->n->c.dgrams_sent++;
    e->n->c.bytes_sent += len;
    e->n->o.send(e->n->o.ud, e->dst, d, len);
    return 0;
}

static nsrv_gossip_send_opts_t send_opts(nsrv_gossip_node_t *n, uint8_t dst, uint64_t now_mono,
                                         int64_t now_wall) {
    nsrv_gossip_send_opts_t so = {dst, n->o.budget, now_mono, now_wall};
    return so;
}

typedef struct {
    nsrv_gossip_node_t *n;
    uint64_t now;
    nsrv_gossip_entry_t *e;
    size_t count, cap;
    bool changed_only;
} collect_t;

/* Our direct observations only: gossip never re-announces what peers said. */
static void collect_cb(void *ud, const nsrv_route_live_info_t *li) {
    collect_t *c = ud;
    if (li->last_direct_ms == 0)
        return;
    uint64_t bkey = info_bkey(li);
    ident_t *i = ident_put(c->n, bkey, nsrv_str_c(li->cluster), nsrv_str_c(li->broker_name),
                           li->broker_id, nsrv_str_c(li->broker_addr), c->now);
    if (c->changed_only && i->sent && nsrv_data_version_eq(&i->sent_dv, &li->data_version) &&
        i->sent_created == li->created_ms)
        return;
    i->sent = true;
    i->sent_dv = li->data_version;
    i->sent_created = li->created_ms;
    if (c->count == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 256;
        c->e = nsrv_realloc(c->e, c->cap * sizeof c->e[0]);
    }
    uint64_t age = c->now > li->last_direct_ms ? c->now - li->last_direct_ms : 0;
    c->e[c->count++] =
        (nsrv_gossip_entry_t){.bkey = bkey,
                              .dv = li->data_version,
                              .age_ms = age > UINT32_MAX ? UINT32_MAX : (uint32_t)age};
}

static int cmp_entry(const void *a, const void *b) {
    return cmp_u64(&((const nsrv_gossip_entry_t *)a)->bkey,
                   &((const nsrv_gossip_entry_t *)b)->bkey);
}

/* Two brokers with one bkey (a 2^-64 event) would break the sorted-list rule: keep one. */
static size_t dedupe_entries(nsrv_gossip_entry_t *e, size_t n) {
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w && e[w - 1].bkey == e[i].bkey)
            continue;
        e[w++] = e[i];
    }
    return w;
}

/* By bkey, then youngest first. */
static int cmp_tomb(const void *a, const void *b) {
    const nsrv_gossip_tomb_t *x = a, *y = b;
    if (x->bkey != y->bkey)
        return x->bkey < y->bkey ? -1 : 1;
    return (x->age_ms > y->age_ms) - (x->age_ms < y->age_ms);
}

static void send_tombs(nsrv_gossip_node_t *n, uint8_t dst, bool unsent_only, uint64_t now_mono,
                       int64_t now_wall) {
    nsrv_gossip_tomb_t *t = n->n_tombs ? nsrv_malloc(n->n_tombs * sizeof *t) : NULL;
    size_t k = 0;
    for (size_t i = 0; i < n->n_tombs; i++) {
        if (unsent_only && n->tombs[i].sent)
            continue;
        uint64_t age = now_mono - n->tombs[i].event_ms;
        t[k++] = (nsrv_gossip_tomb_t){n->tombs[i].bkey, n->tombs[i].dv, NSRV_GOSSIP_TOMB_UNREGISTER,
                                      (uint32_t)age};
    }
    if (k) {
        /* One tombstone per bkey, the newest event: an older one would lose to a
         * heartbeat that the newer one beats. */
        qsort(t, k, sizeof t[0], cmp_tomb);
        size_t w = 0;
        for (size_t i = 0; i < k; i++) {
            if (!w || t[w - 1].bkey != t[i].bkey)
                t[w++] = t[i];
        }
        emit_ctx_t e = {n, dst};
        nsrv_gossip_send_opts_t so = send_opts(n, dst, now_mono, now_wall);
        nsrv_gossip_sender_tombs(&n->sender, &so, t, w, emit_cb, &e);
    }
    nsrv_free(t);
}

static void expire_tombs(nsrv_gossip_node_t *n, uint64_t now) {
    size_t w = 0;
    for (size_t i = 0; i < n->n_tombs; i++) {
        if (now - n->tombs[i].event_ms < TOMB_KEEP_MS)
            n->tombs[w++] = n->tombs[i];
    }
    n->n_tombs = w;
}

static void forget_idents(nsrv_gossip_node_t *n, uint64_t now) {
    ident_t *i, *tmp;
    HASH_ITER(hh, n->idents, i, tmp) {
        if (now - i->touched_ms > IDENT_KEEP_MS)
            ident_free(n, i);
    }
}

typedef struct {
    nsrv_gossip_node_t *n;
    uint64_t now;
} touch_ctx_t;

static void touch_cb(void *ud, const nsrv_route_live_info_t *li) {
    touch_ctx_t *t = ud;
    ident_put(t->n, info_bkey(li), nsrv_str_c(li->cluster), nsrv_str_c(li->broker_name),
              li->broker_id, nsrv_str_c(li->broker_addr), t->now);
}

static void send_full_to(nsrv_gossip_node_t *n, uint8_t dst, const nsrv_gossip_entry_t *e, size_t k,
                         uint64_t now_mono, int64_t now_wall) {
    emit_ctx_t ec = {n, dst};
    nsrv_gossip_send_opts_t so = send_opts(n, dst, now_mono, now_wall);
    int rc = nsrv_gossip_sender_full(&n->sender, &so, n->round, e, k, emit_cb, &ec);
    if (rc < 0)
        nsrv_log_warn("GOSSIP", "full digest to node %u not sent: %s", dst, nsrv_strerror(rc));
    if (n->n_tombs)
        send_tombs(n, dst, false, now_mono, now_wall);
}

static size_t collect_direct(nsrv_gossip_node_t *n, uint64_t now, bool changed_only,
                             nsrv_gossip_entry_t **out) {
    collect_t c = {n, now, NULL, 0, 0, changed_only};
    nsrv_route_foreach_live(n->rt, now, collect_cb, &c);
    if (c.count > 1) {
        qsort(c.e, c.count, sizeof c.e[0], cmp_entry);
        c.count = dedupe_entries(c.e, c.count);
    }
    *out = c.e;
    return c.count;
}

void nsrv_gossip_node_send_full(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall) {
    expire_tombs(n, now_mono);
    /* Keep identities of everything the table holds (peer-learned ones too). */
    touch_ctx_t t = {n, now_mono};
    nsrv_route_foreach_live(n->rt, now_mono, touch_cb, &t);
    forget_idents(n, now_mono);
    nsrv_gossip_entry_t *e;
    size_t k = collect_direct(n, now_mono, false, &e);
    n->round++;
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++)
        send_full_to(n, nsrv_gossip_peer_id(nsrv_gossip_peers_at(n->peers, i)), e, k, now_mono,
                     now_wall);
    for (size_t i = 0; i < n->n_tombs; i++)
        n->tombs[i].sent = true;
    nsrv_free(e);
}

void nsrv_gossip_node_send_delta(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall) {
    nsrv_gossip_entry_t *e;
    size_t k = collect_direct(n, now_mono, true, &e);
    bool new_tombs = false;
    for (size_t i = 0; i < n->n_tombs; i++)
        new_tombs |= !n->tombs[i].sent;
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        uint8_t dst = nsrv_gossip_peer_id(nsrv_gossip_peers_at(n->peers, i));
        if (k) {
            emit_ctx_t ec = {n, dst};
            nsrv_gossip_send_opts_t so = send_opts(n, dst, now_mono, now_wall);
            nsrv_gossip_sender_delta(&n->sender, &so, e, k, emit_cb, &ec);
        }
        if (new_tombs)
            send_tombs(n, dst, true, now_mono, now_wall);
    }
    for (size_t i = 0; i < n->n_tombs; i++)
        n->tombs[i].sent = true;
    nsrv_free(e);
}

size_t nsrv_gossip_node_send_sync(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall) {
    size_t sent = 0;
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        uint8_t dst = nsrv_gossip_peer_id(nsrv_gossip_peers_at(n->peers, i));
        if (n->got_digest[dst])
            continue;
        emit_ctx_t ec = {n, dst};
        nsrv_gossip_send_opts_t so = send_opts(n, dst, now_mono, now_wall);
        nsrv_gossip_sender_sync(&n->sender, &so, emit_cb, &ec);
        sent++;
    }
    return sent;
}

void nsrv_gossip_node_on_unregister(nsrv_gossip_node_t *n, const char *cluster, const char *addr,
                                    const char *name, int64_t id, uint64_t now_mono) {
    nsrv_route_live_info_t li;
    nsrv_data_version_t dv = {0, 0, 0};
    if (nsrv_route_live_info(n->rt, cluster, addr, now_mono, &li))
        dv = li.data_version;
    if (n->n_tombs == n->cap_tombs) {
        n->cap_tombs = n->cap_tombs ? n->cap_tombs * 2 : 16;
        n->tombs = nsrv_realloc(n->tombs, n->cap_tombs * sizeof n->tombs[0]);
    }
    uint64_t bkey = nsrv_gossip_bkey(nsrv_str_c(cluster), nsrv_str_c(name), id, nsrv_str_c(addr));
    n->tombs[n->n_tombs++] = (tomb_t){bkey, dv, now_mono, false};
}

/* ---- receiving ---- */

/* Learns identities of everything the table holds now, so a broker that
 * registered since our last full digest is not mistaken for an unknown one. */
static void refresh_idents(nsrv_gossip_node_t *n, uint64_t now) {
    touch_ctx_t t = {n, now};
    nsrv_route_foreach_live(n->rt, now, touch_cb, &t);
}

/* The identity of bkey, refreshing once per datagram when it is unknown. */
static ident_t *ident_lookup(nsrv_gossip_node_t *n, uint64_t bkey, bool *refreshed, uint64_t now) {
    ident_t *i = ident_find(n, bkey);
    if (!i && !*refreshed) {
        *refreshed = true;
        refresh_idents(n, now);
        i = ident_find(n, bkey);
    }
    return i;
}

static void on_entry(nsrv_gossip_node_t *n, nsrv_gossip_peer_t *p, uint8_t pid,
                     const nsrv_gossip_msg_t *m, const nsrv_gossip_entry_t *e, uint64_t now,
                     bool *refreshed) {
    uint64_t seen = nsrv_gossip_peer_last_seen(p, m->src_mono_ms, e->age_ms, now);
    ident_t *i = ident_lookup(n, e->bkey, refreshed, now);
    if (!i || seen == 0) {
        /* Unknown broker, or no clock anchor for this peer yet: a pull brings
         * the registration and anchors the peer's clock (proto/gossip.md §7.6). */
        pend_add(n, pid, e->bkey, &e->dv);
        return;
    }
    nsrv_peer_seen_t r = nsrv_route_peer_seen(n->rt, i->cluster, i->addr, &e->dv, seen, now);
    if (r == NSRV_PEER_SEEN_UNKNOWN || r == NSRV_PEER_SEEN_NEWER)
        pend_add(n, pid, e->bkey, &e->dv);
    if (seen > i->via_seen_ms) {
        i->via_seen_ms = seen;
        i->via_peer = pid;
    }
}

static void answer_sync(nsrv_gossip_node_t *n, uint8_t pid, uint64_t now_mono, int64_t now_wall) {
    if (n->last_sync_reply[pid] && now_mono - n->last_sync_reply[pid] < SYNC_REPLY_MIN_MS)
        return;
    n->last_sync_reply[pid] = now_mono;
    nsrv_gossip_entry_t *e;
    size_t k = collect_direct(n, now_mono, false, &e);
    send_full_to(n, pid, e, k, now_mono, now_wall);
    nsrv_free(e);
}

int nsrv_gossip_node_on_dgram(nsrv_gossip_node_t *n, const uint8_t *d, size_t len,
                              const struct sockaddr *from, uint64_t now_mono, int64_t now_wall) {
    nsrv_arena_reset(&n->arena);
    nsrv_gossip_msg_t m;
    nsrv_gossip_peer_t *p = NULL;
    n->c.dgrams_recv++;
    n->c.bytes_recv += len;
    int rc = nsrv_gossip_peer_check(n->peers, n->o.node_id, n->cluster, d, len, from, now_mono,
                                    now_wall, &m, &n->arena, &p);
    if (rc != 0)
        return rc;
    uint8_t pid = nsrv_gossip_peer_id(p);
    nsrv_gossip_peer_info_t info;
    nsrv_gossip_peer_info(p, &info);
    if (info.new_incarnation) {
        /* The peer (re)started: it wants our observations now, not in 5 s. */
        nsrv_log_notice("GOSSIP", "node %u has a new incarnation %" PRIu64, pid, info.incarnation);
        answer_sync(n, pid, now_mono, now_wall);
    }
    bool refreshed = false;
    switch (m.type) {
    case NSRV_GOSSIP_DIGEST_FULL:
        n->got_digest[pid] = true;
        for (size_t i = 0; i < m.body.full.n; i++)
            on_entry(n, p, pid, &m, &m.body.full.entries[i], now_mono, &refreshed);
        break;
    case NSRV_GOSSIP_DIGEST_DELTA:
        for (size_t i = 0; i < m.body.delta.n; i++)
            on_entry(n, p, pid, &m, &m.body.delta.entries[i], now_mono, &refreshed);
        break;
    case NSRV_GOSSIP_SYNC_REQ:
        answer_sync(n, pid, now_mono, now_wall);
        break;
    case NSRV_GOSSIP_TOMBSTONE:
        for (size_t i = 0; i < m.body.tomb.n; i++) {
            const nsrv_gossip_tomb_t *t = &m.body.tomb.tombs[i];
            ident_t *id = ident_lookup(n, t->bkey, &refreshed, now_mono);
            if (!id || t->reason != NSRV_GOSSIP_TOMB_UNREGISTER)
                continue;
            uint64_t event = nsrv_gossip_peer_last_seen(p, m.src_mono_ms, t->age_ms, now_mono);
            if (event && nsrv_route_peer_unregister(n->rt, id->cluster, id->addr, id->name, id->id,
                                                    event, now_mono)) {
                n->c.tombstones_applied++;
                nsrv_log_info("GOSSIP", "broker '%s' unregistered (relayed by node %u)", id->addr,
                              pid);
            }
        }
        break;
    default:
        break;
    }
    return 0;
}

/* ---- pulls ---- */

int nsrv_gossip_node_pull_request(nsrv_gossip_node_t *n, uint8_t peer_id, const uint64_t *keys,
                                  size_t nkeys, const uint8_t nonce[NSRV_GOSSIP_NONCE_LEN],
                                  uint64_t now_mono, int64_t now_wall, nsrv_buf_t *out) {
    nsrv_gossip_send_opts_t so = send_opts(n, peer_id, now_mono, now_wall);
    return nsrv_gossip_sender_pull_req(&n->sender, &so, nonce, keys, nkeys, out);
}

static char *dup_str(nsrv_arena_t *a, nsrv_str_t s) {
    return nsrv_arena_strndup(a, s.ptr ? s.ptr : "", s.ptr ? s.len : 0);
}

size_t nsrv_gossip_node_apply_pull(nsrv_gossip_node_t *n, uint8_t peer_id,
                                   const nsrv_gossip_pull_item_t *items, size_t count,
                                   uint64_t req_sent_mono, uint64_t now_mono, uint64_t src_inc,
                                   uint64_t src_mono) {
    size_t imported = 0;
    n->c.pulls_ok++;
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(n->peers, peer_id);
    if (p)
        nsrv_gossip_peer_anchor(p, src_inc, src_mono, req_sent_mono, now_mono);
    for (size_t k = 0; k < count; k++) {
        const nsrv_gossip_pull_item_t *it = &items[k];
        nsrv_arena_reset(&n->arena);
        nsrv_register_body_t body;
        char err[160];
        if (nsrv_register_body_decode(it->reg, it->reg_len, PULL_BODY_VERSION, false, &n->arena,
                                      &body, err, sizeof err) != 0) {
            nsrv_log_warn("GOSSIP", "pulled registration from node %u unusable: %s", peer_id, err);
            continue;
        }
        body.data_version = it->dv;
        /* An under-estimate: the age was measured after our request left. */
        uint64_t seen = req_sent_mono > it->age_ms ? req_sent_mono - it->age_ms : 0;
        if (seen == 0)
            continue;
        char *cl = dup_str(&n->arena, it->cluster), *ad = dup_str(&n->arena, it->addr);
        nsrv_route_live_info_t have;
        if (nsrv_route_live_info(n->rt, cl, ad, now_mono, &have) &&
            nsrv_data_version_cmp(&have.data_version, &it->dv) >= 0) {
            /* We hold this registration or a newer one (the broker may have
             * registered with us while the reply travelled): keep it, take the age. */
            nsrv_route_peer_seen(n->rt, cl, ad, &it->dv, seen, now_mono);
            ident_put(n, it->bkey, it->cluster, it->name, it->id, it->addr, now_mono);
            imported++;
            continue;
        }
        nsrv_register_req_t req = {
            .cluster = dup_str(&n->arena, it->cluster),
            .broker_addr = dup_str(&n->arena, it->addr),
            .broker_name = dup_str(&n->arena, it->name),
            .ha_server_addr = dup_str(&n->arena, it->ha_addr),
            .zone_name = it->zone_name.ptr ? dup_str(&n->arena, it->zone_name) : NULL,
            .broker_id = it->id,
            .timeout_ms = (int64_t)(it->timeout_ms > INT64_MAX ? INT64_MAX : it->timeout_ms),
            .acting_master = it->acting_master,
            .body = &body,
            .peer_last_seen_ms = seen,
        };
        nsrv_register_result_t res;
        nsrv_route_register_broker(n->rt, &req, now_mono, &res);
        nsrv_route_live_info_t li;
        if (nsrv_route_live_info(n->rt, req.cluster, req.broker_addr, now_mono, &li)) {
            ident_t *i = ident_put(n, it->bkey, it->cluster, it->name, it->id, it->addr, now_mono);
            if (li.last_direct_ms == 0 && seen > i->via_seen_ms) {
                i->via_seen_ms = seen;
                i->via_peer = peer_id;
            }
            imported++;
        }
    }
    n->c.brokers_imported += imported;
    return imported;
}

typedef struct {
    nsrv_arena_t *arena;
    nsrv_route_live_info_t *v;
    size_t count, cap;
    const uint64_t *keys; /* NULL: all */
    size_t nkeys;
} serve_ctx_t;

static void serve_collect_cb(void *ud, const nsrv_route_live_info_t *li) {
    serve_ctx_t *s = ud;
    if (s->keys &&
        !bsearch(&(uint64_t){info_bkey(li)}, s->keys, s->nkeys, sizeof s->keys[0], cmp_u64))
        return;
    if (s->count == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        nsrv_route_live_info_t *nv = nsrv_arena_alloc(s->arena, s->cap * sizeof *nv);
        if (s->count)
            memcpy(nv, s->v, s->count * sizeof *nv);
        s->v = nv;
    }
    nsrv_route_live_info_t c = *li;
    c.cluster = nsrv_arena_strndup(s->arena, li->cluster, strlen(li->cluster));
    c.broker_name = nsrv_arena_strndup(s->arena, li->broker_name, strlen(li->broker_name));
    c.broker_addr = nsrv_arena_strndup(s->arena, li->broker_addr, strlen(li->broker_addr));
    c.ha_server_addr = li->ha_server_addr ? nsrv_arena_strndup(s->arena, li->ha_server_addr,
                                                               strlen(li->ha_server_addr))
                                          : NULL;
    c.zone_name =
        li->zone_name ? nsrv_arena_strndup(s->arena, li->zone_name, strlen(li->zone_name)) : NULL;
    s->v[s->count++] = c;
}

int nsrv_gossip_node_serve_pull(nsrv_gossip_node_t *n, const uint8_t *req, size_t len,
                                const struct sockaddr *from, uint64_t now_mono, int64_t now_wall,
                                nsrv_buf_t *out) {
    nsrv_arena_reset(&n->arena);
    nsrv_gossip_msg_t m;
    nsrv_gossip_peer_t *p = NULL;
    int rc = nsrv_gossip_peer_check_pull(n->peers, n->o.node_id, n->cluster, req, len, from,
                                         now_mono, now_wall, &m, &n->arena, &p);
    if (rc != 0)
        return rc;
    serve_ctx_t s = {&n->arena, NULL, 0, 0, m.body.pull.n ? m.body.pull.keys : NULL, m.body.pull.n};
    nsrv_route_foreach_live(n->rt, now_mono, serve_collect_cb, &s);
    nsrv_gossip_pull_enc_t enc;
    nsrv_gossip_pull_enc_init(&enc, m.body.pull.nonce);
    for (size_t i = 0; i < s.count; i++) {
        const nsrv_route_live_info_t *li = &s.v[i];
        nsrv_register_body_t body;
        if (nsrv_route_export_body(n->rt, li->cluster, li->broker_addr, &n->arena, &body) != 0)
            continue;
        nsrv_buf_reset(&n->scratch);
        nsrv_register_body_encode_json(&body, &n->scratch);
        uint64_t age = now_mono > li->last_seen_ms ? now_mono - li->last_seen_ms : 0;
        nsrv_gossip_pull_item_t it = {
            .bkey = info_bkey(li),
            .addr = nsrv_str_c(li->broker_addr),
            .cluster = nsrv_str_c(li->cluster),
            .name = nsrv_str_c(li->broker_name),
            .id = li->broker_id,
            .ha_addr = li->ha_server_addr ? nsrv_str_c(li->ha_server_addr) : NSRV_STR_LIT(""),
            .zone_name = li->zone_name ? nsrv_str_c(li->zone_name) : NSRV_STR_NULL,
            .acting_master = (int8_t)li->acting_master,
            .timeout_ms = (uint64_t)li->timeout_ms,
            .dv = li->data_version,
            .age_ms = age > UINT32_MAX ? UINT32_MAX : (uint32_t)age,
            .reg = (const uint8_t *)n->scratch.data,
            .reg_len = n->scratch.len,
        };
        if (nsrv_gossip_pull_enc_item(&enc, &it, out) != 0)
            nsrv_log_warn("GOSSIP", "broker '%s' left out of a pull reply", li->broker_addr);
    }
    nsrv_gossip_pull_enc_finish(&enc, n->sender.sk, n->sender.key_id, n->sender.inc,
                                now_mono - n->sender.mono_start_ms, out);
    n->c.pulls_served++;
    return 0;
}

/* ---- status ---- */

const char *nsrv_gossip_node_source(nsrv_gossip_node_t *n, const nsrv_route_live_info_t *li) {
    ident_t *i = ident_find(n, info_bkey(li));
    if (!i || !i->via_peer)
        return NULL;
    snprintf(n->source, sizeof n->source, "peer:%u", i->via_peer);
    return n->source;
}

static void addr_text(const struct sockaddr *sa, char *buf, size_t cap) {
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof ip);
        port = ntohs(s4->sin_port);
        snprintf(buf, cap, "%s:%d", ip, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof ip);
        port = ntohs(s6->sin6_port);
        snprintf(buf, cap, "[%s]:%d", ip, port);
    } else {
        snprintf(buf, cap, "?");
    }
}

static void reasons_json(nsrv_buf_t *out, const uint64_t *rej) {
    nsrv_buf_append_ch(out, '{');
    bool first = true;
    for (int r = 0; r < NSRV_GOSSIP_NREASONS; r++) {
        if (!rej[r])
            continue;
        nsrv_buf_printf(out, "%s\"%s\":%" PRIu64, first ? "" : ",",
                        nsrv_gossip_reason_name(NSRV_GOSSIP_ESIZE - r), rej[r]);
        first = false;
    }
    nsrv_buf_append_ch(out, '}');
}

void nsrv_gossip_node_status_json(nsrv_gossip_node_t *n, uint64_t now_mono, nsrv_buf_t *out) {
    nsrv_buf_printf(out, "{\"nodeId\":%u,\"cluster\":", n->o.node_id);
    nsrv_json_write_str(out, n->cluster, strlen(n->cluster), NSRV_JSON_ESC_DEFAULT);
    nsrv_buf_printf(out,
                    ",\"incarnation\":%" PRIu64 ",\"keyId\":%u,\"dgramsSent\":%" PRIu64
                    ",\"bytesSent\":%" PRIu64 ",\"dgramsRecv\":%" PRIu64 ",\"bytesRecv\":%" PRIu64
                    ",\"pullsOk\":%" PRIu64 ",\"pullsFailed\":%" PRIu64 ",\"pullsServed\":%" PRIu64
                    ",\"brokersImported\":%" PRIu64 ",\"tombstonesApplied\":%" PRIu64
                    ",\"pendingTombstones\":%zu,\"peers\":[",
                    n->sender.inc, n->o.key_id, n->c.dgrams_sent, n->c.bytes_sent, n->c.dgrams_recv,
                    n->c.bytes_recv, n->c.pulls_ok, n->c.pulls_failed, n->c.pulls_served,
                    n->c.brokers_imported, n->c.tombstones_applied, n->n_tombs);
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        nsrv_gossip_peer_t *p = nsrv_gossip_peers_at(n->peers, i);
        nsrv_gossip_peer_info_t info;
        nsrv_gossip_peer_info(p, &info);
        socklen_t alen;
        char addr[80];
        addr_text(nsrv_gossip_peer_addr(p, &alen), addr, sizeof addr);
        nsrv_buf_printf(out, "%s{\"id\":%u,\"addr\":\"%s\",", i ? "," : "", info.node_id, addr);
        if (info.has_incarnation)
            nsrv_buf_printf(
                out, "\"incarnation\":%" PRIu64 ",\"keyId\":%u,\"lastValidAgeMs\":%" PRIu64 ",",
                info.incarnation, info.last_key_id, now_mono - info.last_valid_mono_ms);
        else
            nsrv_buf_append_c(out, "\"incarnation\":null,\"keyId\":null,\"lastValidAgeMs\":null,");
        if (info.has_offset)
            nsrv_buf_printf(out, "\"clockOffsetMs\":%" PRId64 ",", info.offset_ms);
        if (info.has_anchor)
            nsrv_buf_printf(out, "\"anchorOffsetMs\":%" PRId64 ",\"anchorAgeMs\":%" PRIu64 ",",
                            info.anchor_offset_ms, now_mono - info.anchor_mono_ms);
        nsrv_buf_printf(out, "\"accepted\":%" PRIu64 ",\"rejected\":", info.accepted);
        reasons_json(out, info.rejected);
        nsrv_buf_append_ch(out, '}');
    }
    uint64_t acc, rej[NSRV_GOSSIP_NREASONS];
    nsrv_gossip_peers_totals(n->peers, &acc, rej);
    nsrv_buf_printf(out, "],\"acceptedTotal\":%" PRIu64 ",\"rejectedTotal\":", acc);
    reasons_json(out, rej);
    nsrv_buf_append_ch(out, '}');
}

void nsrv_gossip_node_metrics(nsrv_gossip_node_t *n, nsrv_buf_t *out) {
    nsrv_buf_printf(out,
                    "# TYPE nsrvd_gossip_bytes_sent_total counter\n"
                    "nsrvd_gossip_bytes_sent_total %" PRIu64 "\n"
                    "# TYPE nsrvd_gossip_bytes_received_total counter\n"
                    "nsrvd_gossip_bytes_received_total %" PRIu64 "\n"
                    "# TYPE nsrvd_gossip_datagrams_sent_total counter\n"
                    "nsrvd_gossip_datagrams_sent_total %" PRIu64 "\n"
                    "# TYPE nsrvd_gossip_pulls_total counter\n"
                    "nsrvd_gossip_pulls_total{result=\"ok\"} %" PRIu64 "\n"
                    "nsrvd_gossip_pulls_total{result=\"failed\"} %" PRIu64 "\n",
                    n->c.bytes_sent, n->c.bytes_recv, n->c.dgrams_sent, n->c.pulls_ok,
                    n->c.pulls_failed);
    uint64_t acc, rej[NSRV_GOSSIP_NREASONS];
    nsrv_gossip_peers_totals(n->peers, &acc, rej);
    nsrv_buf_printf(out,
                    "# TYPE nsrvd_gossip_packets_total counter\n"
                    "nsrvd_gossip_packets_total{result=\"accepted\"} %" PRIu64 "\n",
                    acc);
    for (int r = 0; r < NSRV_GOSSIP_NREASONS; r++)
        nsrv_buf_printf(out, "nsrvd_gossip_packets_total{result=\"%s\"} %" PRIu64 "\n",
                        nsrv_gossip_reason_name(NSRV_GOSSIP_ESIZE - r), rej[r]);
}
