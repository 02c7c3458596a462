/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's clock and outbox (include/nsrv/gossip_node.h): what is due
 * when (nsrv/gossip_timing.h), and the actions the I/O layer carries out.
 * Time only comes in as an argument, so the simulator in the tests runs
 * exactly this schedule.
 */
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/seal.h"

#include "node_int.h"

/* ---- outbox ---- */

void nsrv__emit(nsrv_gossip_node_t *n, uint8_t kind, uint8_t peer, uint32_t pull_id, const void *d,
                size_t len) {
    if (n->n_acts == n->cap_acts) {
        n->cap_acts = n->cap_acts ? n->cap_acts * 2 : 16;
        n->acts = nsrv_realloc(n->acts, n->cap_acts * sizeof n->acts[0]);
    }
    n->acts[n->n_acts++] = (nsrv__act_t){kind, peer, pull_id, n->out.len, len};
    if (len)
        nsrv_buf_append(&n->out, d, len);
}

bool nsrv_gossip_node_poll(nsrv_gossip_node_t *n, nsrv_gossip_action_t *a) {
    if (n->next_act == n->n_acts) {
        n->next_act = n->n_acts = 0;
        nsrv_buf_reset(&n->out);
        return false;
    }
    const nsrv__act_t *q = &n->acts[n->next_act++];
    *a = (nsrv_gossip_action_t){q->kind, q->peer, q->pull_id,
                                q->len ? (const uint8_t *)n->out.data + q->off : NULL, q->len};
    return true;
}

void nsrv__random(nsrv_gossip_node_t *n, void *buf, size_t len) {
    if (n->o.random)
        n->o.random(n->o.ud, buf, len);
    else
        nsrv_seal_random(buf, len);
}

/* ---- schedule ---- */

static uint64_t jittered(nsrv_gossip_node_t *n, uint32_t ms) {
    uint32_t r;
    nsrv__random(n, &r, sizeof r);
    uint32_t span = ms * NSRV_GOSSIP_FULL_JITTER_PCT / 100;
    return (uint64_t)ms - span + (span ? r % (2 * span + 1) : 0);
}

void nsrv_gossip_node_start(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall) {
    if (n->started || n->resolve_waiting)
        return;
    nsrv__resolve_begin(n, now_mono);
    if (!n->resolve_waiting)
        nsrv__start_now(n, now_mono, now_wall);
}

bool nsrv_gossip_node_started(const nsrv_gossip_node_t *n) {
    return n->started;
}

void nsrv__start_now(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall) {
    /* A (re)started node asks for observations and registrations at once. */
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++)
        nsrv_gossip_node_want_all(n, nsrv_gossip_peer_id(nsrv_gossip_peers_at(n->peers, i)));
    n->started = true;
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++)
        nsrv__announce_to(n, nsrv_gossip_peer_id(nsrv_gossip_peers_at(n->peers, i)), now_mono,
                          now_wall);
    n->next_sync = nsrv_gossip_node_send_sync(n, now_mono, now_wall)
                       ? now_mono + NSRV_GOSSIP_SYNC_RETRY_MS
                       : 0;
    n->next_full = now_mono + jittered(n, n->o.interval_ms) / NSRV_GOSSIP_FIRST_FULL_DIV + 1;
    n->next_delta = now_mono + n->o.delta_ms;
    n->next_pull = now_mono;
    nsrv_gossip_node_tick(n, now_mono, now_wall);
}

void nsrv_gossip_node_tick(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall) {
    /* Pull connections and name lookups run before the start too. */
    nsrv__conns_expire(n, now_mono);
    if (nsrv__resolve_tick(n, now_mono)) {
        nsrv__start_now(n, now_mono, now_wall); /* it runs the rest of this tick */
        return;
    }
    if (!n->started)
        return;
    /* Ticks come at least every delta period: a silence is logged that late at most. */
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++)
        nsrv__watch_peer(n, nsrv_gossip_peers_at(n->peers, i), now_mono);
    if (n->next_full <= now_mono) {
        nsrv_gossip_node_send_full(n, now_mono, now_wall);
        n->next_full = now_mono + jittered(n, n->o.interval_ms);
    }
    if (n->next_delta <= now_mono) {
        nsrv_gossip_node_send_delta(n, now_mono, now_wall);
        n->next_delta = now_mono + n->o.delta_ms;
    }
    if (n->next_sync && n->next_sync <= now_mono)
        n->next_sync = nsrv_gossip_node_send_sync(n, now_mono, now_wall)
                           ? now_mono + NSRV_GOSSIP_SYNC_RETRY_MS
                           : 0;
    nsrv__pull_expire(n, now_mono);
    if (n->next_pull <= now_mono) {
        nsrv__pull_tick(n, now_mono, now_wall);
        n->next_pull = now_mono + NSRV_GOSSIP_PULL_BATCH_MS;
    }
}

uint64_t nsrv_gossip_node_deadline(const nsrv_gossip_node_t *n) {
    uint64_t t = NSRV_MIN(nsrv__resolve_deadline(n), nsrv__conns_deadline(n));
    if (!n->started)
        return t;
    t = NSRV_MIN(t, n->next_full);
    t = NSRV_MIN(t, n->next_delta);
    t = NSRV_MIN(t, n->next_pull);
    if (n->next_sync)
        t = NSRV_MIN(t, n->next_sync);
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        const nsrv__peer_state_t *ps = nsrv__peer_state(nsrv_gossip_peers_at(n->peers, i));
        if (ps->pulling)
            t = NSRV_MIN(t, ps->pull_sent_at + NSRV_GOSSIP_PULL_DEADLINE_MS + 1);
    }
    return t;
}
