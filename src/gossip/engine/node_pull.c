/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's pulls (proto/gossip.md §7): which keys each peer should be
 * asked for, when a pull starts (one per peer at a time, a back-off after a
 * failure, a periodic one that refreshes the peer's clock anchor), the reply
 * fed back in and applied, and the serving side. The transport only carries
 * the bytes (pull_io.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/log.h"
#include "nsrv/register_body.h"
#include "nsrv/seal.h"

#include "node_int.h"

/* ---- the per-peer record ---- */

nsrv__peer_state_t *nsrv__ps(const nsrv_gossip_node_t *n, uint8_t peer) {
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(n->peers, peer);
    return p ? nsrv__peer_state(p) : NULL;
}

/* ---- pending pulls ---- */

static void unusable_del(nsrv__peer_state_t *ps, nsrv__unusable_t *u) {
    HASH_DEL(ps->unusable, u);
    nsrv_free(u);
    ps->n_unusable--;
}

static void unusable_clear(nsrv__peer_state_t *ps) {
    nsrv__unusable_t *u, *tmp;
    HASH_ITER(hh, ps->unusable, u, tmp)
    unusable_del(ps, u);
}

/* Remembers a refused registration; false when it was already remembered at
 * this version (so the refusal is logged once per retry period, not per pull). */
static bool unusable_put(nsrv__peer_state_t *ps, uint64_t key, const nsrv_data_version_t *dv,
                         uint64_t now) {
    nsrv__unusable_t *u;
    HASH_FIND(hh, ps->unusable, &key, sizeof key, u);
    if (u) {
        bool again = now >= u->until || nsrv_data_version_cmp(dv, &u->dv) != 0;
        u->dv = *dv;
        u->until = now + NSRV_GOSSIP_UNUSABLE_RETRY_MS;
        return again;
    }
    if (ps->n_unusable >= NSRV_GOSSIP_PEND_MAX) {
        nsrv__unusable_t *tmp;
        HASH_ITER(hh, ps->unusable, u, tmp) {
            if (now >= u->until)
                unusable_del(ps, u);
        }
        if (ps->n_unusable >= NSRV_GOSSIP_PEND_MAX)
            return true;
    }
    u = nsrv_calloc(1, sizeof *u);
    u->key = key;
    u->dv = *dv;
    u->until = now + NSRV_GOSSIP_UNUSABLE_RETRY_MS;
    HASH_ADD(hh, ps->unusable, key, sizeof u->key, u);
    ps->n_unusable++;
    return true;
}

void nsrv__pend_add(nsrv_gossip_node_t *n, uint8_t peer, uint64_t key,
                    const nsrv_data_version_t *dv, uint64_t now) {
    nsrv__peer_state_t *ps = nsrv__ps(n, peer);
    if (!ps)
        return;
    nsrv__unusable_t *u;
    HASH_FIND(hh, ps->unusable, &key, sizeof key, u);
    if (u) {
        /* A newer version may fit our limits; the same one is retried only
         * after the period, in case the limits were raised meanwhile. */
        if (now < u->until && nsrv_data_version_cmp(dv, &u->dv) <= 0)
            return;
        unusable_del(ps, u);
    }
    nsrv__pend_t *p;
    HASH_FIND(hh, ps->pend, &key, sizeof key, p);
    if (p) {
        if (nsrv_data_version_cmp(dv, &p->dv) > 0)
            p->dv = *dv;
        return;
    }
    if (ps->n_pend >= NSRV_GOSSIP_PEND_MAX)
        return;
    p = nsrv_calloc(1, sizeof *p);
    p->key = key;
    p->dv = *dv;
    HASH_ADD(hh, ps->pend, key, sizeof p->key, p);
    ps->n_pend++;
}

static void pend_clear(nsrv__peer_state_t *ps) {
    nsrv__pend_t *p, *tmp;
    HASH_ITER(hh, ps->pend, p, tmp) {
        HASH_DEL(ps->pend, p);
        nsrv_free(p);
    }
    ps->n_pend = 0;
}

size_t nsrv_gossip_node_take_pull(nsrv_gossip_node_t *n, uint8_t peer_id, uint64_t *keys,
                                  size_t cap, bool *all, uint64_t now_mono) {
    nsrv__peer_state_t *ps = nsrv__ps(n, peer_id);
    *all = false;
    if (!ps)
        return 0;
    *all = ps->pend_all;
    ps->pend_all = false;
    if (*all) {
        pend_clear(ps);
        return 0;
    }
    /* Keys another pull brought in meanwhile (a start-up PULL ALL, another peer)
     * are not fetched again - unless this peer's clock still needs its anchor. */
    nsrv_gossip_peer_t *peer = nsrv_gossip_peers_find(n->peers, peer_id);
    nsrv_gossip_peer_info_t info = {0};
    if (peer)
        nsrv_gossip_peer_info(peer, &info);
    size_t k = 0;
    nsrv__pend_t *p, *tmp;
    HASH_ITER(hh, ps->pend, p, tmp) {
        if (k == cap)
            break;
        nsrv__ident_t *i = nsrv__ident_find(n, p->key);
        nsrv_route_live_info_t have;
        bool held = info.has_anchor && i &&
                    nsrv_route_live_info(n->rt, i->cluster, i->addr, now_mono, &have) &&
                    nsrv_data_version_cmp(&have.data_version, &p->dv) >= 0;
        if (!held)
            keys[k++] = p->key;
        HASH_DEL(ps->pend, p);
        nsrv_free(p);
        ps->n_pend--;
    }
    qsort(keys, k, sizeof keys[0], nsrv__cmp_u64);
    return k;
}

void nsrv_gossip_node_want_all(nsrv_gossip_node_t *n, uint8_t peer_id) {
    nsrv__peer_state_t *ps = nsrv__ps(n, peer_id);
    if (ps)
        ps->pend_all = true;
}

/* ---- making pulls ---- */

static void pull_end(nsrv__peer_state_t *ps) {
    ps->pulling = false;
    nsrv_gossip_pull_dec_destroy(&ps->dec);
}

void nsrv__peer_state_release(nsrv__peer_state_t *ps) {
    pend_clear(ps);
    unusable_clear(ps);
    pull_end(ps);
    memset(ps, 0, sizeof *ps);
}

static void pull_fail(nsrv_gossip_node_t *n, uint8_t peer, nsrv__peer_state_t *ps, uint64_t now) {
    n->c.pulls_failed++;
    /* Digest-driven keys come back with the peer's next digest; only a lost
     * start-up pull must be asked for again. */
    if (ps->pull_all)
        ps->pend_all = true;
    ps->last_pull_fail = now;
    (void)peer;
    pull_end(ps);
}

static void start_pull(nsrv_gossip_node_t *n, nsrv_gossip_peer_t *p, nsrv__peer_state_t *ps,
                       const uint64_t *keys, size_t nkeys, bool all, uint64_t now_mono,
                       int64_t now_wall) {
    uint8_t pid = nsrv_gossip_peer_id(p);
    uint8_t nonce[NSRV_GOSSIP_NONCE_LEN];
    nsrv__random(n, nonce, sizeof nonce);
    nsrv_buf_reset(&n->scratch);
    if (nsrv_gossip_node_pull_request(n, pid, all ? NULL : keys, all ? 0 : nkeys, nonce, now_mono,
                                      now_wall, &n->scratch) != 0)
        return;
    size_t npk;
    const nsrv_gossip_key_t *pk = nsrv_gossip_peer_keys(p, &npk);
    ps->dec = nsrv_gossip_pull_dec_create(nonce, pk, npk);
    ps->pulling = true;
    ps->pull_all = all;
    ps->pull_id = ++n->next_pull_id;
    ps->pull_sent_at = now_mono;
    nsrv__emit(n, NSRV_GOSSIP_ACT_PULL, pid, ps->pull_id, n->scratch.data, n->scratch.len);
}

void nsrv__pull_tick(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall) {
    uint64_t *keys = nsrv_malloc(NSRV_GOSSIP_PULL_KEYS_MAX * sizeof *keys);
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        nsrv_gossip_peer_t *p = nsrv_gossip_peers_at(n->peers, i);
        uint8_t pid = nsrv_gossip_peer_id(p);
        nsrv__peer_state_t *ps = nsrv__ps(n, pid);
        if (ps->pulling)
            continue; /* one pull per peer at a time */
        if (ps->last_pull_fail && now_mono - ps->last_pull_fail < NSRV_GOSSIP_PULL_RETRY_MS)
            continue;
        bool all = false;
        size_t k =
            nsrv_gossip_node_take_pull(n, pid, keys, NSRV_GOSSIP_PULL_KEYS_MAX, &all, now_mono);
        if (all || k) {
            start_pull(n, p, ps, keys, k, all, now_mono, now_wall);
        } else if (now_mono - ps->last_pull_ok > NSRV_GOSSIP_ANCHOR_REFRESH_MS) {
            /* Nothing to fetch, but the anchor ages: ask for one key no broker has. */
            keys[0] = 0;
            start_pull(n, p, ps, keys, 1, false, now_mono, now_wall);
        }
    }
    nsrv_free(keys);
}

uint64_t nsrv__pull_expire(nsrv_gossip_node_t *n, uint64_t now_mono) {
    uint64_t next = UINT64_MAX;
    for (size_t k = 0; k < nsrv_gossip_peers_count(n->peers); k++) {
        nsrv_gossip_peer_t *p = nsrv_gossip_peers_at(n->peers, k);
        uint8_t i = nsrv_gossip_peer_id(p);
        nsrv__peer_state_t *ps = nsrv__peer_state(p);
        if (!ps->pulling)
            continue;
        uint64_t due = ps->pull_sent_at + NSRV_GOSSIP_PULL_DEADLINE_MS;
        if (now_mono > due) {
            nsrv_log_info("GOSSIP", "pull from node %u timed out", i);
            nsrv__emit(n, NSRV_GOSSIP_ACT_PULL_CANCEL, i, ps->pull_id, NULL, 0);
            pull_fail(n, i, ps, now_mono);
        } else if (due + 1 < next) {
            next = due + 1;
        }
    }
    return next;
}

int nsrv_gossip_node_configure_peers(nsrv_gossip_node_t *n, const nsrv_gossip_peer_conf_t *confs,
                                     size_t count) {
    /* A peer that leaves takes its record along: a pull to it in flight is abandoned. */
    struct {
        uint8_t peer;
        uint32_t pull_id;
    } gone[NSRV_GOSSIP_NODE_MAX + 1];
    size_t n_gone = 0;
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        nsrv_gossip_peer_t *p = nsrv_gossip_peers_at(n->peers, i);
        const nsrv__peer_state_t *ps = nsrv__peer_state(p);
        bool stays = false;
        for (size_t k = 0; k < count && !stays; k++)
            stays = confs[k].node_id == nsrv_gossip_peer_id(p);
        if (!stays && ps->pulling && n_gone < sizeof gone / sizeof gone[0]) {
            gone[n_gone].peer = nsrv_gossip_peer_id(p);
            gone[n_gone++].pull_id = ps->pull_id;
        }
    }
    int rc = nsrv_gossip_peers_configure(n->peers, confs, count);
    for (size_t i = 0; rc == 0 && i < n_gone; i++)
        nsrv__emit(n, NSRV_GOSSIP_ACT_PULL_CANCEL, gone[i].peer, gone[i].pull_id, NULL, 0);
    return rc;
}

static nsrv__peer_state_t *pull_of(nsrv_gossip_node_t *n, uint8_t peer, uint32_t pull_id) {
    nsrv__peer_state_t *ps = nsrv__ps(n, peer);
    return ps && ps->pulling && ps->pull_id == pull_id ? ps : NULL;
}

void nsrv_gossip_node_pull_failed(nsrv_gossip_node_t *n, uint8_t peer, uint32_t pull_id,
                                  uint64_t now_mono) {
    nsrv__peer_state_t *ps = pull_of(n, peer, pull_id);
    if (ps)
        pull_fail(n, peer, ps, now_mono);
}

int nsrv_gossip_node_pull_data(nsrv_gossip_node_t *n, uint8_t peer, uint32_t pull_id,
                               const uint8_t *d, size_t len, uint64_t now_mono) {
    nsrv__peer_state_t *ps = pull_of(n, peer, pull_id);
    if (!ps)
        return -ESRCH;
    int rc = nsrv_gossip_pull_dec_feed(ps->dec, d, len);
    if (rc == NSRV_AGAIN)
        return rc;
    if (rc != 0) {
        nsrv_log_warn("GOSSIP", "pull reply from node %u rejected: %s", peer,
                      nsrv_gossip_reason_index(rc) >= 0 ? nsrv_gossip_reason_name(rc)
                                                        : nsrv_strerror(rc));
        pull_fail(n, peer, ps, now_mono);
        return rc;
    }
    const nsrv_gossip_pull_item_t *items;
    size_t count = nsrv_gossip_pull_dec_items(ps->dec, &items);
    uint64_t src_inc = 0, src_mono = 0;
    nsrv_gossip_pull_dec_origin(ps->dec, &src_inc, &src_mono);
    size_t imported = nsrv_gossip_node_apply_pull(n, peer, items, count, ps->pull_sent_at, now_mono,
                                                  src_inc, src_mono);
    nsrv_log_info("GOSSIP", "pulled %zu broker(s) from node %u, %zu applied", count, peer,
                  imported);
    ps->last_pull_ok = now_mono;
    pull_end(ps);
    return 0;
}

/* ---- pulls ---- */

int nsrv_gossip_node_pull_request(nsrv_gossip_node_t *n, uint8_t peer_id, const uint64_t *keys,
                                  size_t nkeys, const uint8_t nonce[NSRV_GOSSIP_NONCE_LEN],
                                  uint64_t now_mono, int64_t now_wall, nsrv_buf_t *out) {
    nsrv_gossip_send_opts_t so = nsrv__send_opts(n, peer_id, now_mono, now_wall);
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
    nsrv__peer_state_t *ps = nsrv__ps(n, peer_id);
    for (size_t k = 0; k < count; k++) {
        const nsrv_gossip_pull_item_t *it = &items[k];
        nsrv_arena_reset(&n->arena);
        nsrv_register_body_t body;
        char err[160];
        nsrv_register_body_limits_t lim = {
            .max_topics = n->o.reg_max_topics ? (size_t)*n->o.reg_max_topics : 0,
            .max_decoded_bytes =
                n->o.reg_max_decoded_bytes ? (size_t)*n->o.reg_max_decoded_bytes : 0,
        };
        if (nsrv_register_body_decode_bounded(it->reg, it->reg_len, NSRV__GOSSIP_PULL_BODY_VERSION,
                                              false, &lim, &n->arena, &body, err,
                                              sizeof err) != 0) {
            n->c.pulled_refused++;
            if (!ps || unusable_put(ps, it->bkey, &it->dv, now_mono))
                nsrv_log_warn("GOSSIP",
                              "pulled registration from node %u unusable: %s (not pulled again "
                              "at this version for %d s)",
                              peer_id, err, NSRV_GOSSIP_UNUSABLE_RETRY_MS / 1000);
            continue;
        }
        body.data_version = it->dv;
        /* An under-estimate: the age was measured after our request left. */
        uint64_t seen = req_sent_mono > it->age_ms ? req_sent_mono - it->age_ms : 0;
        if (seen == 0)
            continue;
        char *cl = dup_str(&n->arena, it->cluster), *ad = dup_str(&n->arena, it->addr);
        nsrv_route_live_info_t have;
        bool had = nsrv_route_live_info(n->rt, cl, ad, now_mono, &have);
        if (had && nsrv_data_version_cmp(&have.data_version, &it->dv) >= 0) {
            /* We hold this registration or a newer one (the broker may have
             * registered with us while the reply travelled): keep it, take the age. */
            nsrv_route_peer_seen(n->rt, cl, ad, &it->dv, seen, now_mono);
            nsrv__ident_put(n, it->bkey, it->cluster, it->name, it->id, it->addr, now_mono);
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
            nsrv__ident_t *i =
                nsrv__ident_put(n, it->bkey, it->cluster, it->name, it->id, it->addr, now_mono);
            if (li.last_direct_ms == 0 && seen > i->via_seen_ms) {
                i->via_seen_ms = seen;
                i->via_peer = peer_id;
            }
            /* Convergence lag: a broker new to us that a peer heard after we started (a
             * restart's catch-up pull brings older heartbeats: those are not lag). */
            if (!had && li.last_direct_ms == 0 && seen >= n->o.mono_start_ms)
                nsrv_hist_observe_us(&n->conv_lag, (now_mono - seen) * 1000);
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
    if (s->keys && !bsearch(&(uint64_t){nsrv__info_bkey(li)}, s->keys, s->nkeys, sizeof s->keys[0],
                            nsrv__cmp_u64))
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
    if (rc != 0) {
        nsrv__note_refusal(n, req, len, from, rc, true, now_mono);
        return rc;
    }
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
            .bkey = nsrv__info_bkey(li),
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
        else
            /* The peer asked for it and gets it: our news of it can stop. */
            nsrv__ident_confirm(n, it.bkey, &it.dv, m.src);
    }
    nsrv_gossip_pull_enc_finish(&enc, n->sender.sk, n->sender.key_id, n->sender.inc,
                                now_mono - n->sender.mono_start_ms, out);
    n->c.pulls_served++;
    return 0;
}
