/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's part of the one per-peer record. The peer table (peer.c)
 * holds one struct nsrv_gossip_peer per configured peer: its security state
 * (keys, address, incarnation, replay window, clock anchors, name lookups)
 * and, embedded, this part (pulls, digests, presence, trace). A peer leaves
 * the configuration and all of it goes at once; nothing else in the engine
 * keeps per-peer state.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/gossip_msg.h"
#include "nsrv/gossip_peer.h"
#include "nsrv/route_types.h"
#include "nsrv/uthash.h"

/* "host:port" or "[v6]:port" of an announced endpoint, with its NUL. */
#define NSRV__ADDR_TEXT_MAX (NSRV_GOSSIP_ANN_HOST_MAX + 10)

/* A registration refused from one peer's pull, by key: not pulled again at
 * this version or an older one until `until` (NSRV_GOSSIP_UNUSABLE_RETRY_MS). */
typedef struct {
    uint64_t key;
    UT_hash_handle hh;
    nsrv_data_version_t dv;
    uint64_t until;
} nsrv__unusable_t;

/* A key waiting to be pulled from one peer. */
typedef struct {
    uint64_t key;
    UT_hash_handle hh;
    nsrv_data_version_t dv; /* the version the peer reported */
} nsrv__pend_t;

/* The last refusal of gossip claiming one sender (node_refusal.c). */
typedef struct {
    uint64_t at, bad_at; /* last refusal; last one that degrades /health */
    int reason;
    uint64_t logged_at, quiet; /* rate-limited log line; refusals not logged since */
    int logged_reason;
} nsrv__refusal_t;

/* What became of one digest entry from a peer (node_trace.c names them). */
enum {
    NSRV__ENTRY_APPLIED,   /* its age was taken */
    NSRV__ENTRY_UNKNOWN,   /* we hold no such broker: pulled */
    NSRV__ENTRY_NEWER,     /* the peer has a newer data version: pulled */
    NSRV__ENTRY_NO_ANCHOR, /* no clock anchor of the peer's incarnation: pulled */
    NSRV__ENTRY_N
};

/* What the engine keeps about one peer beside its security state: a part of the
 * peer's one record (struct nsrv_gossip_peer, peer.c), born and freed with it. */
typedef struct {
    /* what to pull from it */
    nsrv__pend_t *pend;
    size_t n_pend;
    bool pend_all;
    nsrv__unusable_t *unusable;
    size_t n_unusable;
    /* digests */
    bool got_digest;          /* its first digest arrived: no more SYNC_REQ */
    uint64_t last_sync_reply; /* when we last answered its SYNC_REQ */
    /* the pull in flight (at most one per peer) */
    bool pulling, pull_all;
    uint32_t pull_id;
    uint64_t pull_sent_at;
    nsrv_gossip_pull_dec_t *dec;
    uint64_t last_pull_ok, last_pull_fail;
    nsrv__refusal_t refused;
    /* sequence numbers sent and accepted, entries by outcome (node_trace.c) */
    uint64_t seq_sent, seq_accepted, inc_accepted;
    uint64_t entries[NSRV__ENTRY_N];
    /* presence (node_presence.c, proto/gossip.md §5.7, §5.8) */
    bool announced;         /* an ANNOUNCE came from its current incarnation: it speaks them */
    uint8_t announces_sent; /* to its current incarnation while it has not announced */
    char ns_addr[NSRV__ADDR_TEXT_MAX];     /* its NameServer address, "" until announced */
    char status_addr[NSRV__ADDR_TEXT_MAX]; /* its status endpoint, "" if none */
    uint64_t left_inc;                     /* the incarnation that said LEAVE; 0 none */
    bool silent;                           /* logged as silent, not back yet */
    uint64_t gone_at; /* last valid packet before it went silent, or its LEAVE */
} nsrv__peer_state_t;

/* The engine's part of p's record (peer.c). */
nsrv__peer_state_t *nsrv__peer_state(nsrv_gossip_peer_t *p);
/* Frees what the engine's part holds and zeroes it (node_pull.c): the peer leaves the
 * configuration, its table is destroyed, or the engine that used it is. */
void nsrv__peer_state_release(nsrv__peer_state_t *ps);
