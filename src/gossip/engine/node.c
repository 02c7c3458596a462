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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/arena.h"
#include "nsrv/json.h"
#include "nsrv/log.h"
#include "nsrv/netaddr.h"
#include "nsrv/register_body.h"
#include "nsrv/seal.h"
#include "nsrv/uthash.h"

#include "node_int.h"

/* ---- identities ---- */

nsrv__ident_t *nsrv__ident_find(nsrv_gossip_node_t *n, uint64_t bkey) {
    nsrv__ident_t *i;
    HASH_FIND(hh, n->idents, &bkey, sizeof bkey, i);
    return i;
}

nsrv__ident_t *nsrv__ident_put(nsrv_gossip_node_t *n, uint64_t bkey, nsrv_str_t cluster,
                               nsrv_str_t name, int64_t id, nsrv_str_t addr, uint64_t now) {
    nsrv__ident_t *i = nsrv__ident_find(n, bkey);
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

static void ident_free(nsrv_gossip_node_t *n, nsrv__ident_t *i) {
    HASH_DEL(n->idents, i);
    nsrv_free(i->cluster);
    nsrv_free(i->name);
    nsrv_free(i->addr);
    nsrv_free(i);
}

static bool ident_confirmed(const nsrv__ident_t *i, uint8_t peer) {
    return (i->confirmed[peer / 64] >> (peer % 64)) & 1u;
}

void nsrv__ident_confirm(nsrv_gossip_node_t *n, uint64_t bkey, const nsrv_data_version_t *dv,
                         uint8_t peer) {
    nsrv__ident_t *i = nsrv__ident_find(n, bkey);
    if (i && i->sent && nsrv_data_version_cmp(dv, &i->sent_dv) >= 0)
        i->confirmed[peer / 64] |= (uint64_t)1 << (peer % 64);
}

uint64_t nsrv__info_bkey(const nsrv_route_live_info_t *li) {
    return nsrv_gossip_bkey(nsrv_str_c(li->cluster), nsrv_str_c(li->broker_name), li->broker_id,
                            nsrv_str_c(li->broker_addr));
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
    nsrv_buf_init(&n->out);
    return n;
}

void nsrv_gossip_node_destroy(nsrv_gossip_node_t **np) {
    nsrv_gossip_node_t *n = np ? *np : NULL;
    if (!n)
        return;
    nsrv__ident_t *i, *tmp;
    HASH_ITER(hh, n->idents, i, tmp) {
        ident_free(n, i);
    }
    /* The records outlive the engine (the table is the caller's): its part of each goes. */
    for (size_t k = 0; k < nsrv_gossip_peers_count(n->peers); k++)
        nsrv__peer_state_release(nsrv__peer_state(nsrv_gossip_peers_at(n->peers, k)));
    nsrv_free(n->tombs);
    nsrv_free(n->acts);
    nsrv_buf_deinit(&n->out);
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

int nsrv__emit_cb(void *ud, const uint8_t *d, size_t len) {
    nsrv__emit_ctx_t *e = ud;
    e->n->c.dgrams_sent++;
    e->n->c.bytes_sent += len;
    nsrv__trace_sent(e->n, e->dst, d, len);
    nsrv__emit(e->n, NSRV_GOSSIP_ACT_SEND, e->dst, 0, d, len);
    return 0;
}

nsrv_gossip_send_opts_t nsrv__send_opts(nsrv_gossip_node_t *n, uint8_t dst, uint64_t now_mono,
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
    bool unconfirmed; /* some entries go only to peers that have not confirmed them */
} collect_t;

/* Our direct observations only: gossip never re-announces what peers said. */
static void collect_cb(void *ud, const nsrv_route_live_info_t *li) {
    collect_t *c = ud;
    if (li->last_direct_ms == 0)
        return;
    uint64_t bkey = nsrv__info_bkey(li);
    nsrv__ident_t *i =
        nsrv__ident_put(c->n, bkey, nsrv_str_c(li->cluster), nsrv_str_c(li->broker_name),
                        li->broker_id, nsrv_str_c(li->broker_addr), c->now);
    bool changed = !i->sent || !nsrv_data_version_eq(&i->sent_dv, &li->data_version) ||
                   i->sent_created != li->created_ms;
    if (changed) {
        /* News: this send, then NSRV_GOSSIP_DELTA_REPEATS more deltas to every peer, then
         * more to those that have not confirmed it. */
        i->repeats = NSRV_GOSSIP_DELTA_REPEATS;
        i->news_ms = c->now;
        memset(i->confirmed, 0, sizeof i->confirmed);
    }
    i->for_unconfirmed = false;
    if (!changed && c->changed_only) {
        if (i->repeats > 0)
            i->repeats--;
        else if (c->now - i->news_ms >= NSRV_GOSSIP_NEWS_UNTIL_CONFIRMED_MS)
            return;
        else
            i->for_unconfirmed = c->unconfirmed = true; /* filtered per peer in send_delta */
    }
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

int nsrv__cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_entry(const void *a, const void *b) {
    return nsrv__cmp_u64(&((const nsrv_gossip_entry_t *)a)->bkey,
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

static void send_tombs(nsrv_gossip_node_t *n, uint8_t dst, bool repeating_only, uint64_t now_mono,
                       int64_t now_wall) {
    nsrv_gossip_tomb_t *t = n->n_tombs ? nsrv_malloc(n->n_tombs * sizeof *t) : NULL;
    size_t k = 0;
    for (size_t i = 0; i < n->n_tombs; i++) {
        if (repeating_only && n->tombs[i].deltas > NSRV_GOSSIP_DELTA_REPEATS)
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
        nsrv__emit_ctx_t e = {n, dst};
        nsrv_gossip_send_opts_t so = nsrv__send_opts(n, dst, now_mono, now_wall);
        nsrv_gossip_sender_tombs(&n->sender, &so, t, w, nsrv__emit_cb, &e);
    }
    nsrv_free(t);
}

static void expire_tombs(nsrv_gossip_node_t *n, uint64_t now) {
    size_t w = 0;
    for (size_t i = 0; i < n->n_tombs; i++) {
        if (now - n->tombs[i].event_ms < NSRV_GOSSIP_TOMB_KEEP_MS)
            n->tombs[w++] = n->tombs[i];
    }
    n->n_tombs = w;
}

static void forget_idents(nsrv_gossip_node_t *n, uint64_t now) {
    nsrv__ident_t *i, *tmp;
    HASH_ITER(hh, n->idents, i, tmp) {
        if (now - i->touched_ms > NSRV_GOSSIP_IDENT_KEEP_MS)
            ident_free(n, i);
    }
}

typedef struct {
    nsrv_gossip_node_t *n;
    uint64_t now;
} touch_ctx_t;

static void touch_cb(void *ud, const nsrv_route_live_info_t *li) {
    touch_ctx_t *t = ud;
    nsrv__ident_put(t->n, nsrv__info_bkey(li), nsrv_str_c(li->cluster), nsrv_str_c(li->broker_name),
                    li->broker_id, nsrv_str_c(li->broker_addr), t->now);
}

static void send_full_to(nsrv_gossip_node_t *n, uint8_t dst, const nsrv_gossip_entry_t *e, size_t k,
                         uint64_t now_mono, int64_t now_wall) {
    nsrv__emit_ctx_t ec = {n, dst};
    nsrv_gossip_send_opts_t so = nsrv__send_opts(n, dst, now_mono, now_wall);
    int rc = nsrv_gossip_sender_full(&n->sender, &so, n->round, e, k, nsrv__emit_cb, &ec);
    if (rc < 0)
        nsrv_log_warn("GOSSIP", "full digest to node %u not sent: %s", dst, nsrv_strerror(rc));
    if (n->n_tombs)
        send_tombs(n, dst, false, now_mono, now_wall);
}

static size_t collect_direct(nsrv_gossip_node_t *n, uint64_t now, bool changed_only,
                             nsrv_gossip_entry_t **out, bool *unconfirmed) {
    collect_t c = {n, now, NULL, 0, 0, changed_only, false};
    nsrv_route_foreach_live(n->rt, now, collect_cb, &c);
    if (c.count > 1) {
        qsort(c.e, c.count, sizeof c.e[0], cmp_entry);
        c.count = dedupe_entries(c.e, c.count);
    }
    *out = c.e;
    if (unconfirmed)
        *unconfirmed = c.unconfirmed;
    return c.count;
}

void nsrv_gossip_node_send_full(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall) {
    expire_tombs(n, now_mono);
    /* Keep identities of everything the table holds (peer-learned ones too). */
    touch_ctx_t t = {n, now_mono};
    nsrv_route_foreach_live(n->rt, now_mono, touch_cb, &t);
    forget_idents(n, now_mono);
    nsrv_gossip_entry_t *e;
    size_t k = collect_direct(n, now_mono, false, &e, NULL);
    n->round++;
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        uint8_t dst = nsrv_gossip_peer_id(nsrv_gossip_peers_at(n->peers, i));
        /* Every round: a peer that restarted or lost one learns where we serve within it. */
        nsrv__announce_to(n, dst, now_mono, now_wall);
        send_full_to(n, dst, e, k, now_mono, now_wall);
    }
    nsrv_free(e);
}

void nsrv_gossip_node_send_delta(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall) {
    nsrv_gossip_entry_t *e;
    bool unconfirmed = false;
    size_t k = collect_direct(n, now_mono, true, &e, &unconfirmed);
    nsrv_gossip_entry_t *mine = NULL;
    /* Entries sent only to the peers that have not confirmed them: each one's identity,
     * looked up once per delta rather than once per peer. NULL for the others. */
    const nsrv__ident_t **only_unconfirmed = NULL;
    if (unconfirmed) {
        mine = nsrv_malloc(k * sizeof *mine);
        only_unconfirmed = nsrv_malloc(k * sizeof *only_unconfirmed);
        for (size_t j = 0; j < k; j++) {
            const nsrv__ident_t *id = nsrv__ident_find(n, e[j].bkey);
            only_unconfirmed[j] = id && id->for_unconfirmed ? id : NULL;
        }
    }
    bool new_tombs = false;
    for (size_t i = 0; i < n->n_tombs; i++)
        new_tombs |= n->tombs[i].deltas <= NSRV_GOSSIP_DELTA_REPEATS;
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        uint8_t dst = nsrv_gossip_peer_id(nsrv_gossip_peers_at(n->peers, i));
        const nsrv_gossip_entry_t *send = e;
        size_t ks = k;
        if (unconfirmed) {
            /* Past its fixed repeats, an entry goes only to peers that have not confirmed it. */
            ks = 0;
            for (size_t j = 0; j < k; j++) {
                if (!only_unconfirmed[j] || !ident_confirmed(only_unconfirmed[j], dst))
                    mine[ks++] = e[j];
            }
            send = mine;
        }
        if (ks) {
            nsrv__emit_ctx_t ec = {n, dst};
            nsrv_gossip_send_opts_t so = nsrv__send_opts(n, dst, now_mono, now_wall);
            nsrv_gossip_sender_delta(&n->sender, &so, send, ks, nsrv__emit_cb, &ec);
        }
        if (new_tombs)
            send_tombs(n, dst, true, now_mono, now_wall);
    }
    for (size_t i = 0; i < n->n_tombs; i++)
        if (n->tombs[i].deltas <= NSRV_GOSSIP_DELTA_REPEATS)
            n->tombs[i].deltas++;
    nsrv_free(only_unconfirmed);
    nsrv_free(mine);
    nsrv_free(e);
}

size_t nsrv_gossip_node_send_sync(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall) {
    size_t sent = 0;
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        uint8_t dst = nsrv_gossip_peer_id(nsrv_gossip_peers_at(n->peers, i));
        if (nsrv__ps(n, dst)->got_digest)
            continue;
        nsrv__emit_ctx_t ec = {n, dst};
        nsrv_gossip_send_opts_t so = nsrv__send_opts(n, dst, now_mono, now_wall);
        nsrv_gossip_sender_sync(&n->sender, &so, nsrv__emit_cb, &ec);
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
    n->tombs[n->n_tombs++] = (nsrv__tomb_t){bkey, dv, now_mono, 0};
}

/* ---- receiving ---- */

/* Learns identities of everything the table holds now, so a broker that
 * registered since our last full digest is not mistaken for an unknown one. */
static void refresh_idents(nsrv_gossip_node_t *n, uint64_t now) {
    touch_ctx_t t = {n, now};
    nsrv_route_foreach_live(n->rt, now, touch_cb, &t);
}

/* The identity of bkey, refreshing once per datagram when it is unknown. */
static nsrv__ident_t *ident_lookup(nsrv_gossip_node_t *n, uint64_t bkey, bool *refreshed,
                                   uint64_t now) {
    nsrv__ident_t *i = nsrv__ident_find(n, bkey);
    if (!i && !*refreshed) {
        *refreshed = true;
        refresh_idents(n, now);
        i = nsrv__ident_find(n, bkey);
    }
    return i;
}

static void on_entry(nsrv_gossip_node_t *n, nsrv_gossip_peer_t *p, uint8_t pid,
                     const nsrv_gossip_msg_t *m, const nsrv_gossip_entry_t *e, uint64_t now,
                     bool *refreshed) {
    uint64_t seen = nsrv_gossip_peer_last_seen(p, m->src_mono_ms, e->age_ms, now);
    nsrv__ident_t *i = ident_lookup(n, e->bkey, refreshed, now);
    if (!i || seen == 0) {
        /* Unknown broker, or no clock anchor for this peer yet: a pull brings
         * the registration and anchors the peer's clock (proto/gossip.md §7.6). */
        nsrv__trace_entry(n, pid, m, e->bkey, seen ? NSRV__ENTRY_UNKNOWN : NSRV__ENTRY_NO_ANCHOR);
        nsrv__pend_add(n, pid, e->bkey, &e->dv, now);
        return;
    }
    /* The peer observes the broker itself: it holds it, our news of it can stop. */
    nsrv__ident_confirm(n, e->bkey, &e->dv, pid);
    nsrv_peer_seen_t r = nsrv_route_peer_seen(n->rt, i->cluster, i->addr, &e->dv, seen, now);
    nsrv__trace_entry(n, pid, m, e->bkey,
                      r == NSRV_PEER_SEEN_UNKNOWN ? NSRV__ENTRY_UNKNOWN
                      : r == NSRV_PEER_SEEN_NEWER ? NSRV__ENTRY_NEWER
                                                  : NSRV__ENTRY_APPLIED);
    if (r == NSRV_PEER_SEEN_UNKNOWN || r == NSRV_PEER_SEEN_NEWER)
        nsrv__pend_add(n, pid, e->bkey, &e->dv, now);
    if (seen > i->via_seen_ms) {
        i->via_seen_ms = seen;
        i->via_peer = pid;
    }
}

static void answer_sync(nsrv_gossip_node_t *n, uint8_t pid, uint64_t now_mono, int64_t now_wall) {
    nsrv__peer_state_t *ps = nsrv__ps(n, pid);
    if (ps->last_sync_reply && now_mono - ps->last_sync_reply < NSRV_GOSSIP_SYNC_REPLY_MIN_MS)
        return;
    ps->last_sync_reply = now_mono;
    /* It knows nothing of us: where we serve too. */
    nsrv__announce_to(n, pid, now_mono, now_wall);
    nsrv_gossip_entry_t *e;
    size_t k = collect_direct(n, now_mono, false, &e, NULL);
    send_full_to(n, pid, e, k, now_mono, now_wall);
    nsrv_free(e);
}

void nsrv_gossip_node_peer_moved(nsrv_gossip_node_t *n, uint8_t peer_id, uint64_t now_mono,
                                 int64_t now_wall) {
    if (n->started && nsrv_gossip_peers_find(n->peers, peer_id))
        answer_sync(n, peer_id, now_mono, now_wall);
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
    if (rc != 0) {
        nsrv__note_refusal(n, d, len, from, rc, false, now_mono);
        if (rc == NSRV_GOSSIP_ESRC_ADDR)
            nsrv__resolve_due(n, now_mono, true); /* a named peer may have come back elsewhere */
        return rc;
    }
    uint8_t pid = nsrv_gossip_peer_id(p);
    nsrv__trace_accepted(n, pid, &m);
    nsrv_gossip_peer_info_t info;
    nsrv_gossip_peer_info(p, &info);
    if (info.new_incarnation) {
        /* The peer (re)started, perhaps as another version: whether it speaks ANNOUNCE is
         * learnt again (a peer that never did keeps its spent tries: if it now does, its own
         * ANNOUNCE says so). It wants our observations now, not in 5 s. */
        nsrv__peer_state_t *ps = nsrv__ps(n, pid);
        if (ps->announced) {
            ps->announced = false;
            ps->announces_sent = 0;
        }
        nsrv_log_notice("GOSSIP", "node %u has a new incarnation %" PRIu64, pid, info.incarnation);
        answer_sync(n, pid, now_mono, now_wall);
    }
    if (m.type == NSRV_GOSSIP_ANNOUNCE || m.type == NSRV_GOSSIP_LEAVE)
        nsrv__on_presence(n, pid, &m, from, now_mono);
    nsrv__watch_peer(n, p, now_mono);
    bool refreshed = false;
    switch (m.type) {
    case NSRV_GOSSIP_DIGEST_FULL: {
        nsrv__peer_state_t *ps = nsrv__ps(n, pid);
        if (!ps->got_digest)
            /* Heard at last: a start-up pull that failed meanwhile (the peer did not know
             * our address yet) is retried at once, not after the back-off. */
            ps->last_pull_fail = 0;
        ps->got_digest = true;
        for (size_t i = 0; i < m.body.full.n; i++)
            on_entry(n, p, pid, &m, &m.body.full.entries[i], now_mono, &refreshed);
        break;
    }
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
            nsrv__ident_t *id = ident_lookup(n, t->bkey, &refreshed, now_mono);
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

/* ---- status ---- */

const char *nsrv_gossip_node_source(nsrv_gossip_node_t *n, const nsrv_route_live_info_t *li) {
    nsrv__ident_t *i = nsrv__ident_find(n, nsrv__info_bkey(li));
    if (!i || !i->via_peer)
        return NULL;
    snprintf(n->source, sizeof n->source, "peer:%u", i->via_peer);
    return n->source;
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
                    ",\"pullConnsNotPeer\":%" PRIu64 ",\"pullConnsTimedOut\":%" PRIu64
                    ",\"pullConnsEvicted\":%" PRIu64 ",\"degraded\":%s"
                    ",\"pendingTombstones\":%zu,\"peers\":[",
                    n->sender.inc, n->o.key_id, n->c.dgrams_sent, n->c.bytes_sent, n->c.dgrams_recv,
                    n->c.bytes_recv, n->c.pulls_ok, n->c.pulls_failed, n->c.pulls_served,
                    n->c.brokers_imported, n->c.tombstones_applied, n->c.pull_conns_not_peer,
                    n->c.pull_conns_timed_out, n->c.pull_conns_evicted,
                    nsrv_gossip_node_degraded(n, now_mono, NULL) ? "true" : "false", n->n_tombs);
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        nsrv_gossip_peer_t *p = nsrv_gossip_peers_at(n->peers, i);
        nsrv_gossip_peer_info_t info;
        nsrv_gossip_peer_info(p, &info);
        socklen_t alen;
        char addr[80] = "";
        if (info.has_addr)
            nsrv_sockaddr_format(nsrv_gossip_peer_addr(p, &alen), addr, sizeof addr);
        bool up = nsrv__peer_alive(n, &info, now_mono);
        nsrv_buf_printf(out, "%s{\"id\":%u,\"addr\":\"%s\",\"up\":%s,\"state\":\"%s\",",
                        i ? "," : "", info.node_id, addr, up ? "true" : "false",
                        nsrv_gossip_node_peer_state(n, info.node_id, now_mono));
        /* What it announced: the address service's entry and the cluster page's link. */
        const char *ns = nsrv_gossip_node_peer_nsaddr(n, info.node_id);
        const char *st = nsrv_gossip_node_peer_status_addr(n, info.node_id);
        nsrv_buf_append_c(out, "\"nsAddr\":");
        if (ns)
            nsrv_json_write_str(out, ns, strlen(ns), NSRV_JSON_ESC_DEFAULT);
        else
            nsrv_buf_append_c(out, "null");
        nsrv_buf_append_c(out, ",\"statusAddr\":");
        if (st)
            nsrv_json_write_str(out, st, strlen(st), NSRV_JSON_ESC_DEFAULT);
        else
            nsrv_buf_append_c(out, "null");
        nsrv_buf_append_ch(out, ',');
        if (info.host) {
            /* a named peer: its name and whether the last lookup worked */
            nsrv_buf_append_c(out, "\"host\":");
            nsrv_json_write_str(out, info.host, strlen(info.host), NSRV_JSON_ESC_DEFAULT);
            nsrv_buf_printf(out, ",\"resolveError\":");
            if (info.resolve_error) {
                const char *e = info.resolve_error_name ? info.resolve_error_name : "error";
                nsrv_json_write_str(out, e, strlen(e), NSRV_JSON_ESC_DEFAULT);
            } else {
                nsrv_buf_append_c(out, "null");
            }
            nsrv_buf_printf(out, ",\"resolveFailures\":%" PRIu64 ",", info.resolve_failures);
        }
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

uint64_t nsrv_gossip_node_alive_window_ms(const nsrv_gossip_node_t *n) {
    return (uint64_t)NSRV_GOSSIP_ALIVE_INTERVALS * n->o.interval_ms;
}

void nsrv_gossip_node_foreach_alive(nsrv_gossip_node_t *n, uint64_t now_mono,
                                    void (*cb)(void *ud, uint8_t id, const struct sockaddr *addr,
                                               const char *ns_addr),
                                    void *ud) {
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        nsrv_gossip_peer_t *p = nsrv_gossip_peers_at(n->peers, i);
        nsrv_gossip_peer_info_t info;
        nsrv_gossip_peer_info(p, &info);
        if (!nsrv__peer_alive(n, &info, now_mono))
            continue;
        socklen_t alen;
        cb(ud, info.node_id, nsrv_gossip_peer_addr(p, &alen),
           nsrv_gossip_node_peer_nsaddr(n, info.node_id));
    }
}

/* Per peer: seconds since its last valid packet (+Inf: none since we started) and whether
 * that is within the alive window (the address service's rule). */
static void peer_metrics(nsrv_gossip_node_t *n, uint64_t now_mono, nsrv_buf_t *out) {
    size_t np = nsrv_gossip_peers_count(n->peers);
    /* One snapshot of every peer, then one family after the other (the text format wants
     * a family's samples together). */
    nsrv_gossip_peer_info_t *info = nsrv_malloc(np * sizeof *info);
    for (size_t i = 0; i < np; i++)
        nsrv_gossip_peer_info(nsrv_gossip_peers_at(n->peers, i), &info[i]);
    nsrv_metric_family(
        out, "nsrvd_gossip_peer_last_heard_seconds", "gauge",
        "Seconds since the peer's last valid gossip packet (+Inf: none since start).");
    for (size_t i = 0; i < np; i++) {
        nsrv_buf_printf(out, "nsrvd_gossip_peer_last_heard_seconds{peer=\"%u\"} ", info[i].node_id);
        if (info[i].has_incarnation)
            nsrv_buf_printf(out, "%.3f\n",
                            (double)(now_mono - info[i].last_valid_mono_ms) / 1000.0);
        else
            nsrv_buf_append_c(out, "+Inf\n");
    }
    nsrv_metric_family(out, "nsrvd_gossip_peer_up", "gauge",
                       "1 while the peer was heard within the alive window (3 gossip intervals).");
    for (size_t i = 0; i < np; i++) {
        nsrv_buf_printf(out, "nsrvd_gossip_peer_up{peer=\"%u\"} %d\n", info[i].node_id,
                        nsrv__peer_alive(n, &info[i], now_mono));
    }
    nsrv_metric_family(out, "nsrvd_gossip_peer_incarnation", "gauge",
                       "The peer's current incarnation (rises on each restart).");
    for (size_t i = 0; i < np; i++) {
        if (info[i].has_incarnation)
            nsrv_buf_printf(out, "nsrvd_gossip_peer_incarnation{peer=\"%u\"} %" PRIu64 "\n",
                            info[i].node_id, info[i].incarnation);
    }
    nsrv_metric_family(out, "nsrvd_gossip_peer_resolved", "gauge",
                       "Peers configured by host name: 1 if its last lookup gave an address.");
    for (size_t i = 0; i < np; i++) {
        if (info[i].host)
            nsrv_buf_printf(out, "nsrvd_gossip_peer_resolved{peer=\"%u\"} %d\n", info[i].node_id,
                            info[i].has_addr && !info[i].resolve_error);
    }
    nsrv_metric_family(out, "nsrvd_gossip_peer_resolve_failures_total", "counter",
                       "Peers configured by host name: lookups that failed.");
    for (size_t i = 0; i < np; i++) {
        if (info[i].host)
            nsrv_buf_printf(out,
                            "nsrvd_gossip_peer_resolve_failures_total{peer=\"%u\"} %" PRIu64 "\n",
                            info[i].node_id, info[i].resolve_failures);
    }
    nsrv_free(info);
}

/* The counters exported as families of one unlabelled sample each. */
#define CTR(field, suffix, help)                                                                   \
    { "nsrvd_gossip_" suffix, help, offsetof(nsrv_gossip_counters_t, field) }
static const struct {
    const char *name, *help;
    size_t offset; /* of a uint64_t in nsrv_gossip_counters_t */
} plain_counters[] = {
    CTR(bytes_sent, "bytes_sent_total", "Gossip UDP payload bytes sent."),
    CTR(bytes_recv, "bytes_received_total", "Gossip UDP payload bytes received."),
    CTR(dgrams_sent, "datagrams_sent_total", "Gossip datagrams sent."),
    CTR(dgrams_recv, "datagrams_received_total", "Gossip datagrams received (accepted or not)."),
    CTR(pulls_served, "pulls_served_total", "Registration pulls served to peers."),
    CTR(brokers_imported, "brokers_imported_total",
        "Broker registrations taken from peers' pulls."),
    CTR(pulled_refused, "pulled_registrations_refused_total",
        "Pulled registrations over this node's registration limits, not adopted."),
};
#undef CTR

void nsrv_gossip_node_metrics(nsrv_gossip_node_t *n, uint64_t now_mono, nsrv_buf_t *out) {
    for (size_t i = 0; i < NSRV_ARRAY_LEN(plain_counters); i++)
        nsrv_metric_u64(out, plain_counters[i].name, "counter", plain_counters[i].help,
                        *(const uint64_t *)((const char *)&n->c + plain_counters[i].offset));
    nsrv_metric_family(out, "nsrvd_gossip_pulls_total", "counter",
                       "Registration pulls this node made from peers, by result.");
    nsrv_buf_printf(out,
                    "nsrvd_gossip_pulls_total{result=\"ok\"} %" PRIu64 "\n"
                    "nsrvd_gossip_pulls_total{result=\"failed\"} %" PRIu64 "\n",
                    n->c.pulls_ok, n->c.pulls_failed);
    nsrv_metric_family(out, "nsrvd_gossip_pull_conns_closed_total", "counter",
                       "Pull-listener connections closed early, by reason.");
    nsrv_buf_printf(out,
                    "nsrvd_gossip_pull_conns_closed_total{reason=\"not_peer\"} %" PRIu64 "\n"
                    "nsrvd_gossip_pull_conns_closed_total{reason=\"no_request_in_time\"} %" PRIu64
                    "\n"
                    "nsrvd_gossip_pull_conns_closed_total{reason=\"evicted\"} %" PRIu64 "\n",
                    n->c.pull_conns_not_peer, n->c.pull_conns_timed_out, n->c.pull_conns_evicted);
    uint64_t acc, rej[NSRV_GOSSIP_NREASONS];
    nsrv_gossip_peers_totals(n->peers, &acc, rej);
    nsrv_metric_family(
        out, "nsrvd_gossip_packets_total", "counter",
        "Gossip packets (UDP and pull requests) by result: accepted or the refusal reason.");
    nsrv_buf_printf(out, "nsrvd_gossip_packets_total{result=\"accepted\"} %" PRIu64 "\n", acc);
    for (int r = 0; r < NSRV_GOSSIP_NREASONS; r++)
        nsrv_buf_printf(out, "nsrvd_gossip_packets_total{result=\"%s\"} %" PRIu64 "\n",
                        nsrv_gossip_reason_name(NSRV_GOSSIP_ESIZE - r), rej[r]);
    peer_metrics(n, now_mono, out);
    nsrv_metric_family(
        out, "nsrvd_gossip_convergence_lag_seconds", "histogram",
        "For each broker this node first learned from a peer: its age then, i.e. the time "
        "from the peer's last direct heartbeat of it to its being routable here.");
    nsrv_hist_write(out, "nsrvd_gossip_convergence_lag_seconds", "", &n->conv_lag);
    nsrv__refusal_metrics(n, out, now_mono);
    nsrv__trace_metrics(n, out);
}
