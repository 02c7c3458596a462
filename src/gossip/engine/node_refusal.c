/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Refused gossip, made visible (proto/gossip.md §8.1): every datagram or
 * pull request the checks refuse is attributed to the peer it claims to
 * come from (or to "unknown"), logged at once with the peer and the reason
 * (then at most once per NSRV_GOSSIP_REFUSAL_LOG_MS per peer), counted per
 * peer and reason in /metrics, and turns /health "degraded" for
 * NSRV_GOSSIP_REFUSAL_HEALTH_MS unless the reason is one that ordinary UDP
 * produces (a duplicate, a datagram of a peer's previous life).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/log.h"
#include "nsrv/netaddr.h"

#include "node_int.h"

static bool benign(int reason) {
    return reason == NSRV_GOSSIP_EREPLAY || reason == NSRV_GOSSIP_EOLD_INC;
}

void nsrv__note_refusal(nsrv_gossip_node_t *n, const uint8_t *d, size_t len,
                        const struct sockaddr *from, int reason, bool tcp, uint64_t now) {
    /* The peer it claims to be, if that is a configured peer. */
    nsrv_gossip_msg_t m;
    size_t off;
    uint8_t pid = 0;
    if (d && nsrv_gossip_msg_decode_header(d, len, &m, &off) == 0 &&
        nsrv_gossip_peers_find(n->peers, m.src))
        pid = m.src;
    nsrv__refusal_t *r = pid ? &nsrv__ps(n, pid)->refused : &n->refused_unknown;
    r->at = now;
    r->reason = reason;
    if (!benign(reason))
        r->bad_at = now;
    bool changed = r->logged_reason != reason;
    if (r->logged_at && !changed && now - r->logged_at < NSRV_GOSSIP_REFUSAL_LOG_MS) {
        r->quiet++;
        return;
    }
    char who[96], addr[64];
    nsrv_sockaddr_format(from, addr, sizeof addr);
    if (pid)
        snprintf(who, sizeof who, "node %u (%s)", pid, addr);
    else
        snprintf(who, sizeof who, "unknown sender %s", addr);
    int lvl = benign(reason) ? NSRV_LOG_INFO : NSRV_LOG_WARN;
    nsrv_log(lvl, "GOSSIP", "refused %s from %s: %s (%" PRIu64 " more refused since the last line)",
             tcp ? "a pull request" : "a datagram", who, nsrv_gossip_reason_name(reason), r->quiet);
    r->logged_at = now;
    r->logged_reason = reason;
    r->quiet = 0;
}

/* The most recent non-benign refusal within the health window, or NULL. */
static const nsrv__refusal_t *worst(const nsrv_gossip_node_t *n, uint64_t now, uint8_t *pid) {
    const nsrv__refusal_t *best = NULL;
    /* "unknown" first, then the peers by id: the first of equals wins */
    size_t np = nsrv_gossip_peers_count(n->peers);
    for (size_t k = 0; k <= np; k++) {
        const nsrv_gossip_peer_t *p = k ? nsrv_gossip_peers_at(n->peers, k - 1) : NULL;
        const nsrv__refusal_t *r =
            p ? &nsrv__peer_state((nsrv_gossip_peer_t *)p)->refused : &n->refused_unknown;
        if (!r->bad_at || now - r->bad_at >= NSRV_GOSSIP_REFUSAL_HEALTH_MS)
            continue;
        if (!best || r->bad_at > best->bad_at) {
            best = r;
            *pid = p ? nsrv_gossip_peer_id(p) : 0;
        }
    }
    return best;
}

bool nsrv_gossip_node_degraded(const nsrv_gossip_node_t *n, uint64_t now_mono, nsrv_buf_t *why) {
    uint8_t pid = 0;
    const nsrv__refusal_t *r = worst(n, now_mono, &pid);
    if (!r)
        return false;
    if (why) {
        if (pid)
            nsrv_buf_printf(why, "gossip from node %u refused (%s) %" PRIu64 " ms ago", pid,
                            nsrv_gossip_reason_name(r->reason), now_mono - r->bad_at);
        else
            nsrv_buf_printf(why, "gossip from an unknown sender refused (%s) %" PRIu64 " ms ago",
                            nsrv_gossip_reason_name(r->reason), now_mono - r->bad_at);
    }
    return true;
}

void nsrv__refusal_metrics(nsrv_gossip_node_t *n, nsrv_buf_t *out, uint64_t now) {
    nsrv_buf_printf(out, "# HELP nsrvd_gossip_peer_refused_total Gossip packets refused, by "
                         "sender and reason.\n# TYPE nsrvd_gossip_peer_refused_total counter\n");
    uint64_t acc, tot[NSRV_GOSSIP_NREASONS];
    nsrv_gossip_peers_totals(n->peers, &acc, tot);
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        nsrv_gossip_peer_info_t info;
        nsrv_gossip_peer_info(nsrv_gossip_peers_at(n->peers, i), &info);
        for (int r = 0; r < NSRV_GOSSIP_NREASONS; r++) {
            nsrv_buf_printf(
                out, "nsrvd_gossip_peer_refused_total{peer=\"%u\",reason=\"%s\"} %" PRIu64 "\n",
                info.node_id, nsrv_gossip_reason_name(NSRV_GOSSIP_ESIZE - r), info.rejected[r]);
            tot[r] -= NSRV_MIN(tot[r], info.rejected[r]);
        }
    }
    for (int r = 0; r < NSRV_GOSSIP_NREASONS; r++)
        if (tot[r])
            nsrv_buf_printf(
                out,
                "nsrvd_gossip_peer_refused_total{peer=\"unknown\",reason=\"%s\"} %" PRIu64 "\n",
                nsrv_gossip_reason_name(NSRV_GOSSIP_ESIZE - r), tot[r]);
    nsrv_buf_printf(out,
                    "# HELP nsrvd_gossip_degraded 1 while gossip was refused lately (/health "
                    "says why).\n# TYPE nsrvd_gossip_degraded gauge\nnsrvd_gossip_degraded %d\n",
                    nsrv_gossip_node_degraded(n, now, NULL) ? 1 : 0);
}
