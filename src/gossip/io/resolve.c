/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gossip peers configured by host name (gossipPeers "id@name:port"): the
 * engine says which name to look up when (node_resolve.c); this runs the
 * lookup with uv_getaddrinfo (the libuv thread pool, never the loop) and hands
 * the answer back. The engine makes it the peer's address, which the datagram
 * source check and the pull listener's allow list use, so a container that
 * restarts on a new address is followed without anyone editing the
 * configuration.
 */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "nsrv/alloc.h"
#include "nsrv/common.h"

#include "transport_int.h"

typedef struct {
    uv_getaddrinfo_t req; /* first: the callback gets its address */
    nsrv_gossip_t *g;
    uint8_t peer;
    char host[NSRV_GOSSIP_HOST_MAX + 1];
} resolve_req_t;

static void report(nsrv_gossip_t *g, uint8_t peer, const char *host, const struct sockaddr *sa,
                   int err) {
    nsrv_gossip_resolution_t r = {
        .addr = sa,
        .error = sa ? 0 : err,
        .error_name = sa ? NULL : uv_err_name(err),
        .error_text = sa ? NULL : uv_strerror(err),
    };
    nsrv_gossip_node_resolved(g->node, peer, host, &r, nsrv__gossip_mono(), nsrv_now_wall_ms());
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
    if (!g->stopping) {
        const struct sockaddr *sa = status == 0 ? pick(res, g->resolve_family) : NULL;
        report(g, r->peer, r->host, sa, status ? status : UV_EAI_ADDRFAMILY);
        nsrv__gossip_pump(g);
    }
    uv_freeaddrinfo(res);
    nsrv_free(r);
    nsrv__gossip_handle_released(g);
}

void nsrv__gossip_resolve(nsrv_gossip_t *g, uint8_t peer, const uint8_t *host, size_t len) {
    resolve_req_t *r = nsrv_calloc(1, sizeof *r);
    r->g = g;
    r->peer = peer;
    snprintf(r->host, sizeof r->host, "%.*s", (int)len, (const char *)host);
    struct addrinfo hints = {.ai_family = g->resolve_family, .ai_socktype = SOCK_DGRAM};
    int rc = uv_getaddrinfo(g->loop, &r->req, getaddrinfo_cb, r->host, NULL, &hints);
    if (rc != 0) {
        report(g, peer, r->host, NULL, rc);
        nsrv_free(r);
        return;
    }
    g->open_handles++; /* the request holds g until its callback */
}
