/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What each peer was sent and what we took from it (proto/gossip.md §8.3):
 * per peer the incarnation and sequence numbers sent and accepted, and for
 * every digest entry whether it was applied or why not. Counted for
 * /metrics always; each datagram and each entry not applied is also a
 * debug log line, so a broker that is slow to arrive can be followed from
 * the sender's "sent" line to the receiver's verdict.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/histogram.h"
#include "nsrv/log.h"

#include "node_int.h"

static const char *const TYPE_NAMES[] = {"?",         "DIGEST_FULL", "DIGEST_DELTA", "SYNC_REQ",
                                         "TOMBSTONE", "PULL_REQ",    "ANNOUNCE",     "LEAVE"};

static const char *type_name(uint8_t t) {
    return t < NSRV_ARRAY_LEN(TYPE_NAMES) ? TYPE_NAMES[t] : "?";
}

static const char *const ENTRY_NAMES[NSRV__ENTRY_N] = {
    [NSRV__ENTRY_APPLIED] = "applied",
    [NSRV__ENTRY_UNKNOWN] = "unknown_broker",
    [NSRV__ENTRY_NEWER] = "newer_version",
    [NSRV__ENTRY_NO_ANCHOR] = "no_anchor",
};

static const char *const ENTRY_WHY[NSRV__ENTRY_N] = {
    [NSRV__ENTRY_APPLIED] = "applied",
    [NSRV__ENTRY_UNKNOWN] = "broker not held here: pull queued",
    [NSRV__ENTRY_NEWER] = "peer has a newer data version: pull queued",
    [NSRV__ENTRY_NO_ANCHOR] = "no clock anchor for the peer's incarnation: pull queued",
};

static size_t entry_count(const nsrv_gossip_msg_t *m) {
    switch (m->type) {
    case NSRV_GOSSIP_DIGEST_FULL:
        return m->body.full.n;
    case NSRV_GOSSIP_DIGEST_DELTA:
        return m->body.delta.n;
    case NSRV_GOSSIP_TOMBSTONE:
        return m->body.tomb.n;
    default:
        return 0;
    }
}

void nsrv__trace_sent(nsrv_gossip_node_t *n, uint8_t dst, const uint8_t *d, size_t len) {
    nsrv__peer_state_t *ps = nsrv__ps(n, dst);
    /* emit follows the sender's seq increment: this datagram had the one before. */
    if (ps)
        ps->seq_sent = n->sender.next_seq - 1;
    if (nsrv_log_level < NSRV_LOG_DEBUG)
        return;
    nsrv_gossip_msg_t m;
    size_t off;
    if (nsrv_gossip_msg_decode_header(d, len, &m, &off) != 0)
        return;
    nsrv_log_debug("GOSSIP",
                   "node %u sent %s to node %u: inc %" PRIu64 " seq %" PRIu64 " mono %" PRIu64
                   ", %zu bytes",
                   n->o.node_id, type_name(m.type), dst, m.src_inc, m.seq, m.src_mono_ms, len);
}

void nsrv__trace_accepted(nsrv_gossip_node_t *n, uint8_t pid, const nsrv_gossip_msg_t *m) {
    nsrv__peer_state_t *ps = nsrv__ps(n, pid);
    ps->inc_accepted = m->src_inc;
    ps->seq_accepted = m->seq;
    nsrv_log_debug("GOSSIP",
                   "node %u accepted %s from node %u: inc %" PRIu64 " seq %" PRIu64 " mono %" PRIu64
                   ", %zu entries",
                   n->o.node_id, type_name(m->type), pid, m->src_inc, m->seq, m->src_mono_ms,
                   entry_count(m));
}

void nsrv__trace_entry(nsrv_gossip_node_t *n, uint8_t pid, const nsrv_gossip_msg_t *m,
                       uint64_t bkey, int outcome) {
    nsrv__ps(n, pid)->entries[outcome]++;
    if (outcome != NSRV__ENTRY_APPLIED)
        nsrv_log_debug("GOSSIP",
                       "node %u: entry %016" PRIx64 " of %s from node %u (inc %" PRIu64
                       " seq %" PRIu64 ") not applied: %s",
                       n->o.node_id, bkey, type_name(m->type), pid, m->src_inc, m->seq,
                       ENTRY_WHY[outcome]);
}

/* One gauge family with a sample per peer, read from one uint64_t field of its state. */
static void peer_gauge(nsrv_gossip_node_t *n, nsrv_buf_t *out, const char *name, const char *help,
                       size_t field_off) {
    nsrv_metric_family(out, name, "gauge", help);
    size_t np = nsrv_gossip_peers_count(n->peers);
    for (size_t i = 0; i < np; i++) {
        uint8_t id = nsrv_gossip_peer_id(nsrv_gossip_peers_at(n->peers, i));
        uint64_t v;
        memcpy(&v, (const char *)nsrv__ps(n, id) + field_off, sizeof v);
        nsrv_buf_printf(out, "%s{peer=\"%u\"} %" PRIu64 "\n", name, id, v);
    }
}

void nsrv__trace_metrics(nsrv_gossip_node_t *n, nsrv_buf_t *out) {
    size_t np = nsrv_gossip_peers_count(n->peers);
    nsrv_metric_u64(out, "nsrvd_gossip_incarnation", "gauge",
                    "This node's incarnation (src_inc of everything it sends).", n->sender.inc);
    peer_gauge(n, out, "nsrvd_gossip_peer_seq_sent",
               "Sequence number of the last datagram or pull request sent to the peer "
               "(this node's incarnation: nsrvd_gossip_incarnation).",
               offsetof(nsrv__peer_state_t, seq_sent));
    peer_gauge(n, out, "nsrvd_gossip_peer_seq_accepted",
               "Sequence number of the last datagram accepted from the peer, in the "
               "incarnation nsrvd_gossip_peer_incarnation_accepted.",
               offsetof(nsrv__peer_state_t, seq_accepted));
    peer_gauge(n, out, "nsrvd_gossip_peer_incarnation_accepted",
               "Incarnation of the last datagram accepted from the peer.",
               offsetof(nsrv__peer_state_t, inc_accepted));
    nsrv_metric_family(out, "nsrvd_gossip_peer_entries_total", "counter",
                       "Digest entries accepted from the peer, by result: applied, or why not "
                       "(each of those queues a pull).");
    for (size_t i = 0; i < np; i++) {
        uint8_t id = nsrv_gossip_peer_id(nsrv_gossip_peers_at(n->peers, i));
        for (int r = 0; r < NSRV__ENTRY_N; r++)
            nsrv_buf_printf(
                out, "nsrvd_gossip_peer_entries_total{peer=\"%u\",result=\"%s\"} %" PRIu64 "\n", id,
                ENTRY_NAMES[r], nsrv__ps(n, id)->entries[r]);
    }
}
