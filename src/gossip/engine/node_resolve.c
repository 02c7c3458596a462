/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Peers configured by host name (proto/gossip.md §8.2): which names are looked
 * up when, how many lookups run at once, and how long the start waits for
 * them. The engine emits NSRV_GOSSIP_ACT_RESOLVE; the I/O layer runs the
 * lookup (off the loop) and hands the answer back with
 * nsrv_gossip_node_resolved, so the simulator exercises every rule here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/log.h"
#include "nsrv/netaddr.h"

#include "node_int.h"

static bool any_named(const nsrv_gossip_node_t *n) {
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++)
        if (nsrv_gossip_peer_host(nsrv_gossip_peers_at(n->peers, i)))
            return true;
    return false;
}

/* The lookups run on the I/O layer's thread pool, which has other work: at most
 * NSRV_GOSSIP_RESOLVE_MAX_INFLIGHT at once; the other due names wait their turn. */
static bool resolve_one(nsrv_gossip_node_t *n, nsrv_gossip_peer_t *p, uint64_t now) {
    if (n->resolve_inflight >= NSRV_GOSSIP_RESOLVE_MAX_INFLIGHT)
        return false; /* still due: the next answer or poll starts it */
    const char *host = nsrv_gossip_peer_host(p);
    nsrv_gossip_peer_resolve_started(p, now);
    n->resolve_inflight++;
    nsrv__emit(n, NSRV_GOSSIP_ACT_RESOLVE, nsrv_gossip_peer_id(p), 0, host, strlen(host));
    return true;
}

void nsrv__resolve_due(nsrv_gossip_node_t *n, uint64_t now, bool kick) {
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        nsrv_gossip_peer_t *p = nsrv_gossip_peers_at(n->peers, i);
        if (nsrv_gossip_peer_resolve_is_due(p, now, n->o.interval_ms, kick))
            resolve_one(n, p, now);
    }
}

unsigned nsrv_gossip_node_resolve_all(nsrv_gossip_node_t *n, uint64_t now_mono) {
    unsigned started = 0;
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        nsrv_gossip_peer_t *p = nsrv_gossip_peers_at(n->peers, i);
        if (!nsrv_gossip_peer_host(p) || nsrv_gossip_peer_resolving(p))
            continue;
        if (resolve_one(n, p, now_mono))
            started++;
        else
            nsrv_gossip_peer_resolve_soon(p); /* the next answer starts it */
    }
    n->next_resolve = now_mono + NSRV_GOSSIP_RESOLVE_TICK_MS;
    return started;
}

void nsrv__resolve_begin(nsrv_gossip_node_t *n, uint64_t now_mono) {
    /* Before the engine says its first word, so its SYNC_REQ and start-up pulls go to
     * real addresses; a slow resolver must not keep the node mute longer. */
    n->resolve_waiting = nsrv_gossip_node_resolve_all(n, now_mono);
    n->start_by = now_mono + NSRV_GOSSIP_RESOLVE_START_MS;
}

bool nsrv__resolve_tick(nsrv_gossip_node_t *n, uint64_t now_mono) {
    bool start = n->resolve_waiting && now_mono >= n->start_by;
    if (start)
        n->resolve_waiting = 0;
    if (n->next_resolve <= now_mono) {
        nsrv__resolve_due(n, now_mono, false);
        n->next_resolve = now_mono + NSRV_GOSSIP_RESOLVE_TICK_MS;
    }
    return start;
}

uint64_t nsrv__resolve_deadline(const nsrv_gossip_node_t *n) {
    uint64_t t = n->resolve_waiting ? n->start_by : UINT64_MAX;
    if (any_named(n))
        t = NSRV_MIN(t, n->next_resolve);
    return t;
}

static void addr_text(const nsrv_gossip_peer_t *p, char *buf, size_t cap) {
    if (nsrv_gossip_peer_has_addr(p))
        nsrv_sockaddr_format(nsrv_gossip_peer_addr(p, NULL), buf, cap);
    else
        snprintf(buf, cap, "none");
}

/* What one answer means for the peer: its address, an error kept for status, a log line. */
static void apply(nsrv_gossip_node_t *n, nsrv_gossip_peer_t *p, const char *host,
                  const nsrv_gossip_resolution_t *r, uint64_t now_mono, int64_t now_wall) {
    uint8_t peer = nsrv_gossip_peer_id(p);
    nsrv_gossip_peer_info_t info;
    nsrv_gossip_peer_info(p, &info);
    char was[80], is[80];
    addr_text(p, was, sizeof was);
    if (!r->addr) {
        nsrv_gossip_peer_set_resolve_error(p, r->error, r->error_name);
        if (r->error != info.resolve_error)
            nsrv_log_warn("GOSSIP", "peer %u: cannot resolve '%s': %s; %s %s, retrying", peer, host,
                          r->error_text ? r->error_text : "?",
                          info.has_addr ? "keeping its last address" : "nothing sent to it, no",
                          info.has_addr ? was : "address yet");
        return;
    }
    int changed = nsrv_gossip_peer_set_resolved(p, r->addr);
    addr_text(p, is, sizeof is);
    if (changed == 1 && info.has_addr) {
        nsrv_log_notice("GOSSIP", "peer %u: '%s' moved from %s to %s", peer, host, was, is);
        /* Its gossip came from the new address and was refused until now: it is most
         * likely a restarted node still waiting for our observations. */
        nsrv_gossip_node_peer_moved(n, peer, now_mono, now_wall);
    } else if (changed == 1) {
        nsrv_log_notice("GOSSIP", "peer %u: '%s' resolves to %s", peer, host, is);
    } else if (info.resolve_error) {
        nsrv_log_notice("GOSSIP", "peer %u: '%s' resolves again, to %s", peer, host, is);
    }
}

void nsrv_gossip_node_resolved(nsrv_gossip_node_t *n, uint8_t peer_id, const char *host,
                               const nsrv_gossip_resolution_t *r, uint64_t now_mono,
                               int64_t now_wall) {
    if (n->resolve_inflight)
        n->resolve_inflight--;
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(n->peers, peer_id);
    if (p)
        nsrv_gossip_peer_resolve_done(p);
    const char *now_host = p ? nsrv_gossip_peer_host(p) : NULL;
    /* Reconfigured while the lookup ran: the new name has its own lookup. */
    if (now_host && host && strcmp(now_host, host) == 0)
        apply(n, p, host, r, now_mono, now_wall);
    if (n->resolve_waiting && --n->resolve_waiting == 0)
        nsrv__start_now(n, now_mono, now_wall);
    nsrv__resolve_due(n, now_mono, false); /* a name that waited for a free lookup */
}
