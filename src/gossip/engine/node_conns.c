/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pull server's connections (proto/gossip.md §7.5): which are accepted
 * (a configured peer's address only), how long each may stay (a complete
 * request within NSRV_GOSSIP_PULL_REQ_DEADLINE_MS, its reply written within
 * NSRV_GOSSIP_PULL_DEADLINE_MS), and which one goes when
 * NSRV_GOSSIP_PULL_SRV_MAX are open. The I/O layer holds the sockets under
 * the ids handed out here and closes one when the engine emits
 * NSRV_GOSSIP_ACT_CLOSE for it.
 */
#include <inttypes.h>
#include <string.h>

#include "nsrv/log.h"
#include "nsrv/netaddr.h"

#include "node_int.h"

static nsrv__conn_t *conn_find(nsrv_gossip_node_t *n, uint32_t id) {
    for (size_t i = 0; i < n->n_conns; i++)
        if (n->conns[i].id == id)
            return &n->conns[i];
    return NULL;
}

/* The table stays in accept order (oldest first). */
static void conn_drop(nsrv_gossip_node_t *n, nsrv__conn_t *c) {
    size_t i = (size_t)(c - n->conns);
    memmove(&n->conns[i], &n->conns[i + 1], (n->n_conns - i - 1) * sizeof n->conns[0]);
    n->n_conns--;
}

static void conn_close(nsrv_gossip_node_t *n, nsrv__conn_t *c) {
    nsrv__emit(n, NSRV_GOSSIP_ACT_CLOSE, 0, c->id, NULL, 0);
    conn_drop(n, c);
}

/* Closes the oldest connection that has not sent its request yet, so silent
 * connections cannot lock real pulls out; false if every one is being answered. */
static bool evict_oldest(nsrv_gossip_node_t *n) {
    for (size_t i = 0; i < n->n_conns; i++) {
        if (!n->conns[i].replied) {
            n->c.pull_conns_evicted++;
            conn_close(n, &n->conns[i]);
            return true;
        }
    }
    return false;
}

/* One line per NSRV_GOSSIP_REFUSAL_LOG_MS at most: a scan must not flood the log. */
static void log_not_peer(nsrv_gossip_node_t *n, const struct sockaddr *from, uint64_t now) {
    if (n->not_peer_logged_at && now - n->not_peer_logged_at < NSRV_GOSSIP_REFUSAL_LOG_MS) {
        n->not_peer_quiet++;
        return;
    }
    char addr[64];
    nsrv_sockaddr_format(from, addr, sizeof addr);
    nsrv_log_warn("GOSSIP",
                  "pull connection from %s closed: not a configured peer's address (%" PRIu64
                  " more since the last line)",
                  addr, n->not_peer_quiet);
    n->not_peer_logged_at = now;
    n->not_peer_quiet = 0;
}

uint32_t nsrv_gossip_node_pull_conn_open(nsrv_gossip_node_t *n, const struct sockaddr *from,
                                         uint64_t now_mono) {
    /* As on the datagram path: only configured peers' addresses may pull, and
     * a stranger never evicts a peer's connection. */
    if (!from || !nsrv_gossip_peers_ip_known(n->peers, from)) {
        n->c.pull_conns_not_peer++;
        log_not_peer(n, from, now_mono);
        nsrv__resolve_due(n, now_mono, true); /* a named peer may have come back elsewhere */
        return 0;
    }
    if (n->n_conns >= NSRV_GOSSIP_PULL_SRV_MAX && !evict_oldest(n)) {
        /* Every slot is answering a real request: refuse this one. */
        n->c.pull_conns_evicted++;
        return 0;
    }
    if (++n->next_conn_id == 0)
        n->next_conn_id = 1;
    n->conns[n->n_conns++] = (nsrv__conn_t){n->next_conn_id, now_mono, false};
    return n->next_conn_id;
}

int nsrv_gossip_node_pull_conn_request(nsrv_gossip_node_t *n, uint32_t conn, const uint8_t *req,
                                       size_t len, const struct sockaddr *from, uint64_t now_mono,
                                       int64_t now_wall, nsrv_buf_t *out) {
    nsrv__conn_t *c = conn_find(n, conn);
    if (!c || c->replied)
        return NSRV_GOSSIP_EDECODE; /* closed meanwhile, or a second request: hang up */
    int rc = nsrv_gossip_node_serve_pull(n, req, len, from, now_mono, now_wall, out);
    if (rc != 0)
        conn_drop(n, c); /* never answer what failed authentication: the I/O hangs up */
    else
        c->replied = true;
    return rc;
}

void nsrv_gossip_node_pull_conn_closed(nsrv_gossip_node_t *n, uint32_t conn) {
    nsrv__conn_t *c = conn_find(n, conn);
    if (c)
        conn_drop(n, c);
}

static uint64_t conn_due(const nsrv__conn_t *c) {
    return c->opened +
           (c->replied ? NSRV_GOSSIP_PULL_DEADLINE_MS : NSRV_GOSSIP_PULL_REQ_DEADLINE_MS);
}

void nsrv__conns_expire(nsrv_gossip_node_t *n, uint64_t now_mono) {
    for (size_t i = 0; i < n->n_conns;) {
        nsrv__conn_t *c = &n->conns[i];
        if (now_mono > conn_due(c)) {
            if (!c->replied)
                n->c.pull_conns_timed_out++;
            conn_close(n, c);
        } else {
            i++;
        }
    }
}

uint64_t nsrv__conns_deadline(const nsrv_gossip_node_t *n) {
    uint64_t t = UINT64_MAX;
    for (size_t i = 0; i < n->n_conns; i++)
        t = NSRV_MIN(t, conn_due(&n->conns[i]) + 1);
    return t;
}

size_t nsrv_gossip_node_pull_conns(const nsrv_gossip_node_t *n) {
    return n->n_conns;
}
