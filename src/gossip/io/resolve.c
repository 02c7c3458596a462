/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gossip peers configured by host name (gossipPeers "id@name:port"): their
 * names are resolved with uv_getaddrinfo (the libuv thread pool, never the
 * loop) on the rules of nsrv/gossip_timing.h, and each answer becomes the
 * peer's address, which the datagram source check and the pull listener's
 * allow list use. A container that restarts on a new address is thus
 * followed without anyone editing the configuration.
 */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "nsrv/alloc.h"
#include "nsrv/gossip_timing.h"
#include "nsrv/log.h"
#include "nsrv/netaddr.h"

#include "transport_int.h"

typedef struct {
    uv_getaddrinfo_t req; /* first: the callback gets its address */
    nsrv_gossip_t *g;
    uint8_t peer;
    char host[NSRV_GOSSIP_HOST_MAX + 1];
} resolve_req_t;

static void addr_text(const nsrv_gossip_peer_t *p, char *buf, size_t cap) {
    if (nsrv_gossip_peer_has_addr(p))
        nsrv_sockaddr_format(nsrv_gossip_peer_addr(p, NULL), buf, cap);
    else
        snprintf(buf, cap, "none");
}

void nsrv__gossip_resolved(nsrv_gossip_t *g, uint8_t peer, const char *host,
                           const struct sockaddr *sa, int status) {
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(g->peers, peer);
    const char *now_host = p ? nsrv_gossip_peer_host(p) : NULL;
    if (!now_host || strcmp(now_host, host) != 0)
        return; /* reconfigured while the lookup ran: its own lookup follows */
    nsrv_gossip_peer_info_t info;
    nsrv_gossip_peer_info(p, &info);
    char was[80], is[80];
    addr_text(p, was, sizeof was);
    if (!sa) {
        nsrv_gossip_peer_set_resolve_error(p, status, uv_err_name(status));
        if (status != info.resolve_error)
            nsrv_log_warn("GOSSIP", "peer %u: cannot resolve '%s': %s; %s %s, retrying", peer, host,
                          uv_strerror(status),
                          info.has_addr ? "keeping its last address" : "nothing sent to it, no",
                          info.has_addr ? was : "address yet");
        return;
    }
    int changed = nsrv_gossip_peer_set_resolved(p, sa);
    addr_text(p, is, sizeof is);
    if (changed == 1 && info.has_addr) {
        nsrv_log_notice("GOSSIP", "peer %u: '%s' moved from %s to %s", peer, host, was, is);
        /* Its gossip came from the new address and was refused until now: it is most
         * likely a restarted node still waiting for our observations. */
        nsrv_gossip_node_peer_moved(g->node, peer, nsrv__gossip_mono(), nsrv_now_wall_ms());
        nsrv__gossip_pump(g);
    } else if (changed == 1) {
        nsrv_log_notice("GOSSIP", "peer %u: '%s' resolves to %s", peer, host, is);
    } else if (info.resolve_error) {
        nsrv_log_notice("GOSSIP", "peer %u: '%s' resolves again, to %s", peer, host, is);
    }
}

/* The first IPv4 or IPv6 answer in the family the gossip socket can send to. */
static const struct sockaddr *pick(const struct addrinfo *res, int family) {
    for (const struct addrinfo *a = res; a; a = a->ai_next)
        if (a->ai_addr && (a->ai_family == family || family == AF_UNSPEC) &&
            (a->ai_family == AF_INET || a->ai_family == AF_INET6))
            return a->ai_addr;
    return NULL;
}

static void getaddrinfo_cb(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
    resolve_req_t *r = (resolve_req_t *)req;
    nsrv_gossip_t *g = r->g;
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(g->peers, r->peer);
    if (p)
        nsrv_gossip_peer_resolve_done(p);
    g->resolve_inflight--;
    if (!g->stopping) {
        const struct sockaddr *sa = status == 0 ? pick(res, g->resolve_family) : NULL;
        nsrv__gossip_resolved(g, r->peer, r->host, sa,
                              sa       ? 0
                              : status ? status
                                       : UV_EAI_ADDRFAMILY);
        if (g->resolve_waiting && --g->resolve_waiting == 0)
            nsrv__gossip_engine_start(g);
        nsrv__gossip_resolve_due(g, false); /* a name that waited for a free lookup */
    }
    uv_freeaddrinfo(res);
    nsrv_free(r);
    nsrv__gossip_handle_released(g);
}

static bool resolve_one(nsrv_gossip_t *g, nsrv_gossip_peer_t *p, uint64_t now) {
    if (g->resolve_inflight >= NSRV_GOSSIP_RESOLVE_MAX_INFLIGHT)
        return false; /* still due: the next completion or tick starts it */
    resolve_req_t *r = nsrv_calloc(1, sizeof *r);
    r->g = g;
    r->peer = nsrv_gossip_peer_id(p);
    snprintf(r->host, sizeof r->host, "%s", nsrv_gossip_peer_host(p));
    struct addrinfo hints = {.ai_family = g->resolve_family, .ai_socktype = SOCK_DGRAM};
    int rc = uv_getaddrinfo(g->loop, &r->req, getaddrinfo_cb, r->host, NULL, &hints);
    if (rc != 0) {
        nsrv__gossip_resolved(g, r->peer, r->host, NULL, rc);
        nsrv_free(r);
        return false;
    }
    nsrv_gossip_peer_resolve_started(p, now);
    g->resolve_inflight++;
    g->open_handles++; /* the request holds g until its callback */
    return true;
}

void nsrv__gossip_resolve_due(nsrv_gossip_t *g, bool kick) {
    if (g->stopping)
        return;
    uint64_t now = nsrv__gossip_mono();
    for (size_t i = 0; i < nsrv_gossip_peers_count(g->peers); i++) {
        nsrv_gossip_peer_t *p = nsrv_gossip_peers_at(g->peers, i);
        if (nsrv_gossip_peer_resolve_is_due(p, now, g->interval_ms, kick))
            resolve_one(g, p, now);
    }
}

/* At start (before the engine says its first word, so its SYNC_REQ and start-up pulls go
 * to real addresses) and on reload: every name at once. Returns the lookups started. */
unsigned nsrv__gossip_resolve_all(nsrv_gossip_t *g) {
    uint64_t now = nsrv__gossip_mono();
    unsigned n = 0;
    for (size_t i = 0; i < nsrv_gossip_peers_count(g->peers); i++) {
        nsrv_gossip_peer_t *p = nsrv_gossip_peers_at(g->peers, i);
        if (nsrv_gossip_peer_host(p) && !nsrv_gossip_peer_resolving(p) && resolve_one(g, p, now))
            n++;
    }
    return n;
}

static void tick_cb(uv_timer_t *t) {
    nsrv_gossip_t *g = t->data;
    if (g->resolve_waiting && nsrv__gossip_mono() - g->started_at >= NSRV_GOSSIP_RESOLVE_START_MS) {
        g->resolve_waiting = 0; /* a slow resolver must not keep the node mute */
        nsrv__gossip_engine_start(g);
    }
    nsrv__gossip_resolve_due(g, false);
}

void nsrv__gossip_resolve_init(nsrv_gossip_t *g) {
    uv_timer_init(g->loop, &g->resolve_timer);
    g->resolve_timer.data = g;
    g->open_handles++;
    uv_timer_start(&g->resolve_timer, tick_cb, NSRV_GOSSIP_RESOLVE_TICK_MS,
                   NSRV_GOSSIP_RESOLVE_TICK_MS);
}
