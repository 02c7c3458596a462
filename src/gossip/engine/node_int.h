/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's state, shared by its parts: node.c (digests out, reports in,
 * status), node_pull.c (what to pull, pulls made and served), node_sched.c
 * (the clock: what is due when, and the outbox of actions), node_resolve.c
 * (name lookups), node_conns.c (pull server connections), node_presence.c,
 * node_refusal.c and node_trace.c. Per-peer state is in peer_state.h.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/gossip_node.h"
#include "nsrv/gossip_timing.h"
#include "nsrv/histogram.h"
#include "nsrv/mq_version.h"
#include "nsrv/route.h"
#include "nsrv/uthash.h"

#include "peer_state.h"

/* Fresh pulls decode registrations as the newest broker version would send them. */
#define NSRV__GOSSIP_PULL_BODY_VERSION NSRV_MQ_CURRENT

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
    uint8_t repeats;      /* deltas still to carry it (NSRV_GOSSIP_DELTA_REPEATS) */
    nsrv_data_version_t sent_dv;
    uint64_t sent_created; /* the live entry it carried: a returning broker is news */
    uint64_t news_ms;      /* when sent_dv became news (NSRV_GOSSIP_NEWS_UNTIL_CONFIRMED_MS) */
    uint64_t confirmed[4]; /* peers (bit = node id) known to hold sent_dv since then */
    bool for_unconfirmed;  /* the delta being built carries it only to unconfirmed peers */
} nsrv__ident_t;

typedef struct {
    uint64_t bkey;
    nsrv_data_version_t dv;
    uint64_t event_ms;
    uint8_t deltas; /* deltas that carried it (up to 1 + NSRV_GOSSIP_DELTA_REPEATS) */
} nsrv__tomb_t;

/* A pull server connection the I/O layer holds under id (node_conns.c). */
typedef struct {
    uint32_t id;
    uint64_t opened; /* accepted, local mono */
    bool replied;    /* its request was answered: the reply is being written */
} nsrv__conn_t;

/* One queued output; its bytes live in the outbox buffer. */
typedef struct {
    uint8_t kind, peer;
    uint32_t pull_id;
    size_t off, len;
} nsrv__act_t;

struct nsrv_gossip_node {
    nsrv_gossip_node_opts_t o;
    char cluster[NSRV_GOSSIP_CLUSTER_MAX + 1];
    nsrv_gossip_sender_t sender;
    nsrv_route_t *rt;
    nsrv_gossip_peers_t *peers;
    nsrv__ident_t *idents;
    nsrv__tomb_t *tombs;
    size_t n_tombs, cap_tombs;
    nsrv__refusal_t refused_unknown;
    uint32_t round;
    /* schedule, on the local monotonic clock; next_sync 0 = off */
    bool started;
    uint64_t next_full, next_delta, next_sync, next_pull;
    uint32_t next_pull_id;
    /* outbox */
    nsrv__act_t *acts;
    size_t n_acts, cap_acts, next_act;
    nsrv_buf_t out;
    nsrv_arena_t arena;
    nsrv_buf_t scratch;
    nsrv_gossip_counters_t c;
    nsrv_hist_t conv_lag; /* ages of brokers first learned from peers (metrics) */
    /* what we announce (nsrv_gossip_node_set_announce); ns_port 0: nothing yet */
    char ann_ns_host[NSRV_GOSSIP_ANN_HOST_MAX + 1], ann_status_host[NSRV_GOSSIP_ANN_HOST_MAX + 1];
    uint16_t ann_ns_port, ann_status_port;
    char source[16];
    /* name lookups (node_resolve.c); start_by: the start waits for resolve_waiting
     * answers until then at most */
    uint64_t next_resolve, start_by;
    unsigned resolve_inflight, resolve_waiting;
    /* pull server connections, oldest first (node_conns.c) */
    nsrv__conn_t conns[NSRV_GOSSIP_PULL_SRV_MAX];
    size_t n_conns;
    uint32_t next_conn_id;
    uint64_t not_peer_logged_at, not_peer_quiet; /* rate-limited log of non-peer pulls */
};

/* node.c */
nsrv__ident_t *nsrv__ident_find(nsrv_gossip_node_t *n, uint64_t bkey);
nsrv__ident_t *nsrv__ident_put(nsrv_gossip_node_t *n, uint64_t bkey, nsrv_str_t cluster,
                               nsrv_str_t name, int64_t id, nsrv_str_t addr, uint64_t now);
uint64_t nsrv__info_bkey(const nsrv_route_live_info_t *li);
/* Peer holds the broker of bkey at dv (it pulled it from us, or reported it itself): our news
 * of it need not be repeated to that peer any more. */
void nsrv__ident_confirm(nsrv_gossip_node_t *n, uint64_t bkey, const nsrv_data_version_t *dv,
                         uint8_t peer);
int nsrv__cmp_u64(const void *a, const void *b);
/* Where the sender's datagrams go: traced, counted, then queued as a SEND action for dst. */
typedef struct {
    nsrv_gossip_node_t *n;
    uint8_t dst;
} nsrv__emit_ctx_t;
int nsrv__emit_cb(void *ud, const uint8_t *d, size_t len);

nsrv_gossip_send_opts_t nsrv__send_opts(nsrv_gossip_node_t *n, uint8_t dst, uint64_t now_mono,
                                        int64_t now_wall);

/* node_pull.c */
/* The engine's part of a configured peer's record; NULL for an id not configured. */
nsrv__peer_state_t *nsrv__ps(const nsrv_gossip_node_t *n, uint8_t peer);
void nsrv__pend_add(nsrv_gossip_node_t *n, uint8_t peer, uint64_t key,
                    const nsrv_data_version_t *dv, uint64_t now);
/* Starts the pulls that are due (one per peer at a time, back-off, anchor refresh). */
void nsrv__pull_tick(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall);
/* Abandons pulls older than NSRV_GOSSIP_PULL_DEADLINE_MS; returns the next pull deadline. */
uint64_t nsrv__pull_expire(nsrv_gossip_node_t *n, uint64_t now_mono);

/* node_refusal.c */
void nsrv__note_refusal(nsrv_gossip_node_t *n, const uint8_t *d, size_t len,
                        const struct sockaddr *from, int reason, bool tcp, uint64_t now);
void nsrv__refusal_metrics(nsrv_gossip_node_t *n, nsrv_buf_t *out, uint64_t now);

/* node_trace.c */
void nsrv__trace_sent(nsrv_gossip_node_t *n, uint8_t dst, const uint8_t *d, size_t len);
void nsrv__trace_accepted(nsrv_gossip_node_t *n, uint8_t pid, const nsrv_gossip_msg_t *m);
void nsrv__trace_entry(nsrv_gossip_node_t *n, uint8_t pid, const nsrv_gossip_msg_t *m,
                       uint64_t bkey, int outcome);
void nsrv__trace_metrics(nsrv_gossip_node_t *n, nsrv_buf_t *out);

/* node_presence.c */
/* ANNOUNCE to one peer, if it speaks them or has not had its share of tries yet. */
void nsrv__announce_to(nsrv_gossip_node_t *n, uint8_t peer, uint64_t now_mono, int64_t now_wall);
/* An accepted ANNOUNCE or LEAVE. */
void nsrv__on_presence(nsrv_gossip_node_t *n, uint8_t peer, const nsrv_gossip_msg_t *m,
                       const struct sockaddr *from, uint64_t now_mono);
/* Logs a peer going silent or coming back (once each); called on every accepted datagram
 * and every tick. A new incarnation resets what it announced it can speak. */
void nsrv__watch_peer(nsrv_gossip_node_t *n, nsrv_gossip_peer_t *p, uint64_t now_mono);
/* Heard within the alive window and not gone by LEAVE. */
bool nsrv__peer_alive(const nsrv_gossip_node_t *n, const nsrv_gossip_peer_info_t *info,
                      uint64_t now_mono);

/* node_resolve.c */
/* Starts lookups of the names that are due (kick: a packet or pull connection was just
 * refused for its source address), within the in-flight cap. */
void nsrv__resolve_due(nsrv_gossip_node_t *n, uint64_t now, bool kick);
/* At start: every name looked up; the start waits for them (nsrv__resolve_tick). */
void nsrv__resolve_begin(nsrv_gossip_node_t *n, uint64_t now_mono);
/* The resolver's poll; true when the start stops waiting for the names now. */
bool nsrv__resolve_tick(nsrv_gossip_node_t *n, uint64_t now_mono);
uint64_t nsrv__resolve_deadline(const nsrv_gossip_node_t *n);

/* node_conns.c */
/* Closes the connections past their deadline. */
void nsrv__conns_expire(nsrv_gossip_node_t *n, uint64_t now_mono);
uint64_t nsrv__conns_deadline(const nsrv_gossip_node_t *n);

/* node_sched.c */
/* The start itself: start-up pulls, ANNOUNCE, SYNC_REQ, the schedule. */
void nsrv__start_now(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall);
void nsrv__emit(nsrv_gossip_node_t *n, uint8_t kind, uint8_t peer, uint32_t pull_id, const void *d,
                size_t len);
void nsrv__random(nsrv_gossip_node_t *n, void *buf, size_t len);
