/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gossip engine: what a node tells its peers and what it does with what
 * they tell it (proto/gossip.md §5, §7, §9.4). No sockets and no clocks of
 * its own: the I/O layer (transport.c) passes datagrams, pull replies and
 * the time in, and sends what the engine emits. Loop thread only.
 *
 * Rules it keeps (the product, pinned by tests):
 *  - digests carry only this node's direct observations, aged from its last
 *    direct heartbeat; what peers said is never re-announced as our own;
 *  - a peer's report only raises a broker's last-seen time (a max-merge),
 *    mapped onto our clock from the signed sender time, so replays and delays
 *    cannot stretch liveness; expiry and eviction stay local;
 *  - an unknown broker or a newer data version triggers a pull from the peer
 *    that reported it; a pulled registration never resurrects an expired one;
 *  - an explicit UNREGISTER_BROKER travels as a tombstone, which loses to a
 *    later direct heartbeat.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "nsrv/buf.h"
#include "nsrv/gossip_msg.h"
#include "nsrv/gossip_peer.h"
#include "nsrv/route.h"

typedef struct nsrv_gossip_node nsrv_gossip_node_t;

typedef struct {
    uint8_t node_id;
    const char *cluster;
    uint32_t budget; /* datagram budget, bytes */
    uint64_t incarnation;
    uint64_t mono_start_ms;
    uint8_t key_id;
    const uint8_t *sk; /* NSRV_SEAL_SK_LEN bytes, copied */
    /* Sends one datagram to peer `dst` (a node id). Best effort. */
    void (*send)(void *ud, uint8_t dst, const uint8_t *dgram, size_t len);
    void *ud;
} nsrv_gossip_node_opts_t;

/* rt and peers are borrowed for the engine's lifetime. */
nsrv_gossip_node_t *nsrv_gossip_node_create(const nsrv_gossip_node_opts_t *o, nsrv_route_t *rt,
                                            nsrv_gossip_peers_t *peers);
void nsrv_gossip_node_destroy(nsrv_gossip_node_t **n);
void nsrv_gossip_node_set_key(nsrv_gossip_node_t *n, uint8_t key_id, const uint8_t *sk);

/* A full digest of our direct observations to every peer. */
void nsrv_gossip_node_send_full(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall);
/* Deltas for observations that are new or changed since the last send, and new tombstones. */
void nsrv_gossip_node_send_delta(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall);
/* SYNC_REQ to every peer whose first digest has not arrived yet; returns how many. */
size_t nsrv_gossip_node_send_sync(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall);

/* One received datagram: checked, then applied. Returns 0 or the rejection reason. */
int nsrv_gossip_node_on_dgram(nsrv_gossip_node_t *n, const uint8_t *d, size_t len,
                              const struct sockaddr *from, uint64_t now_mono, int64_t now_wall);

/* UNREGISTER_BROKER received directly: remember a tombstone to spread. */
void nsrv_gossip_node_on_unregister(nsrv_gossip_node_t *n, const char *cluster, const char *addr,
                                    const char *name, int64_t id, uint64_t now_mono);

/*
 * Pulls to make. Fills keys (up to cap, sorted) with what peer `peer_id`
 * should be asked for and clears them; *all is set when everything should
 * be pulled (start-up). Returns the number of keys.
 */
size_t nsrv_gossip_node_take_pull(nsrv_gossip_node_t *n, uint8_t peer_id, uint64_t *keys,
                                  size_t cap, bool *all, uint64_t now_mono);
/* Ask peer_id for everything (start-up, or a peer's new incarnation). */
void nsrv_gossip_node_want_all(nsrv_gossip_node_t *n, uint8_t peer_id);
/* A pull failed: its keys are wanted again (from any peer that reports them). */
void nsrv_gossip_node_pull_failed(nsrv_gossip_node_t *n, uint8_t peer_id, bool all);

/* Builds the PULL_REQ for peer_id into out (u32 length prefixed). */
int nsrv_gossip_node_pull_request(nsrv_gossip_node_t *n, uint8_t peer_id, const uint64_t *keys,
                                  size_t nkeys, const uint8_t nonce[NSRV_GOSSIP_NONCE_LEN],
                                  uint64_t now_mono, int64_t now_wall, nsrv_buf_t *out);

/*
 * Applies a verified pull reply from peer_id and anchors that peer's clock
 * with the reply's signed origin (src_inc, src_mono: nsrv_gossip_pull_dec_origin;
 * proto/gossip.md §7.6). req_sent_mono: when we sent the
 * request; ages are mapped as req_sent_mono - age, which can only
 * under-estimate when the broker was last heard. A broker we already hold
 * with the same or a newer data version only has its age merged (a pull never
 * downgrades a registration). Returns the brokers applied either way.
 */
size_t nsrv_gossip_node_apply_pull(nsrv_gossip_node_t *n, uint8_t peer_id,
                                   const nsrv_gossip_pull_item_t *items, size_t count,
                                   uint64_t req_sent_mono, uint64_t now_mono, uint64_t src_inc,
                                   uint64_t src_mono);

/*
 * Serves a PULL_REQ that arrived on TCP (req: the bytes after the length
 * prefix). Appends the whole reply to out. Returns 0, or the rejection reason
 * (then nothing is appended and the connection must just be closed).
 */
int nsrv_gossip_node_serve_pull(nsrv_gossip_node_t *n, const uint8_t *req, size_t len,
                                const struct sockaddr *from, uint64_t now_mono, int64_t now_wall,
                                nsrv_buf_t *out);

/* Status (JSON value) and metrics (Prometheus lines). */
void nsrv_gossip_node_status_json(nsrv_gossip_node_t *n, uint64_t now_mono, nsrv_buf_t *out);
void nsrv_gossip_node_metrics(nsrv_gossip_node_t *n, nsrv_buf_t *out);
/* "peer:<id>" for a broker last reported by a peer, or NULL. */
const char *nsrv_gossip_node_source(nsrv_gossip_node_t *n, const nsrv_route_live_info_t *li);

/* Counters the transport adds to (bytes include UDP payload only). */
typedef struct {
    uint64_t dgrams_sent, bytes_sent, dgrams_recv, bytes_recv;
    uint64_t pulls_ok, pulls_failed, pulls_served, brokers_imported;
    uint64_t tombstones_applied;
} nsrv_gossip_counters_t;
nsrv_gossip_counters_t *nsrv_gossip_node_counters(nsrv_gossip_node_t *n);
