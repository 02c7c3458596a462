/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gossip engine: what a node tells its peers and what it does with what
 * they tell it (proto/gossip.md §5, §7, §9.4), and when: every timing rule
 * (nsrv/gossip_timing.h) is decided here. A sans-I/O state machine: no
 * sockets, no clocks and no timers of its own. The I/O layer (transport.c,
 * or the simulator in the tests) passes datagrams, pull replies, answers of
 * name lookups, accepted pull connections and the time in, carries out the
 * actions the engine emits, and wakes it at the one deadline it names. Loop
 * thread only.
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
    const uint8_t *sk;    /* NSRV_SEAL_SK_LEN bytes, copied */
    uint32_t interval_ms; /* full digest period (gossipIntervalMs) */
    uint32_t delta_ms;    /* delta period (gossipDeltaMs) */
    /* registerMaxTopics and registerMaxDecodedBytes, read at each pulled registration
     * (they can change at run time); NULL: no limit. A peer may accept registrations
     * this node would refuse: what we adopt is bounded by our own configuration. */
    const int32_t *reg_max_topics;
    const int64_t *reg_max_decoded_bytes;
    /* Fills buf with random bytes (digest jitter, pull nonces); NULL: libsodium. */
    void (*random)(void *ud, void *buf, size_t len);
    void *ud;
} nsrv_gossip_node_opts_t;

/* rt and peers are borrowed for the engine's lifetime. */
nsrv_gossip_node_t *nsrv_gossip_node_create(const nsrv_gossip_node_opts_t *o, nsrv_route_t *rt,
                                            nsrv_gossip_peers_t *peers);
void nsrv_gossip_node_destroy(nsrv_gossip_node_t **n);
void nsrv_gossip_node_set_key(nsrv_gossip_node_t *n, uint8_t key_id, const uint8_t *sk);

/*
 * ---- The sans-I/O interface (what transport.c and the simulator use) ----
 *
 * Inputs: nsrv_gossip_node_start, nsrv_gossip_node_on_dgram,
 * nsrv_gossip_node_pull_data / _pull_failed, nsrv_gossip_node_resolved,
 * nsrv_gossip_node_pull_conn_open / _request / _closed, nsrv_gossip_node_tick
 * (the time). After each input, drain the outputs with nsrv_gossip_node_poll and
 * arm one timer for nsrv_gossip_node_deadline.
 */
typedef enum {
    NSRV_GOSSIP_ACT_SEND = 1,    /* send data (one datagram) to peer */
    NSRV_GOSSIP_ACT_PULL,        /* connect to peer, write data (a PULL_REQ), feed the reply back */
    NSRV_GOSSIP_ACT_PULL_CANCEL, /* abandon pull `pull_id` to peer: close it, report nothing */
    NSRV_GOSSIP_ACT_RESOLVE,     /* look up peer's host name, data (len bytes, no NUL); answer
                                    with nsrv_gossip_node_resolved */
    NSRV_GOSSIP_ACT_CLOSE,       /* close pull server connection `pull_id` (its deadline passed,
                                    or a newer one evicted it); report nothing */
} nsrv_gossip_act_kind_t;

typedef struct {
    uint8_t kind; /* nsrv_gossip_act_kind_t */
    uint8_t peer;
    uint32_t pull_id;    /* PULL, PULL_CANCEL: the pull; CLOSE: the server connection */
    const uint8_t *data; /* valid until the next call into the engine */
    size_t len;
} nsrv_gossip_action_t;

/* Start: look up the peers' host names, then (once every name started answered, or after
 * NSRV_GOSSIP_RESOLVE_START_MS; at once without names) ask every peer for everything, send
 * SYNC_REQ, schedule. */
void nsrv_gossip_node_start(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall);
/* True once the start has happened (its names answered or the wait is over). */
bool nsrv_gossip_node_started(const nsrv_gossip_node_t *n);
/* Runs whatever is due at now (digests, deltas, SYNC retries, pulls, pull deadlines). */
void nsrv_gossip_node_tick(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall);
/* The monotonic time at which nsrv_gossip_node_tick has work next. */
uint64_t nsrv_gossip_node_deadline(const nsrv_gossip_node_t *n);
/* The next output, false when there is none left. */
bool nsrv_gossip_node_poll(nsrv_gossip_node_t *n, nsrv_gossip_action_t *a);
/*
 * Reply bytes of pull `pull_id` from peer. Returns NSRV_AGAIN (more wanted),
 * 0 (complete and applied: close the connection), or an error (the pull
 * failed: close it). Bytes of a pull the engine no longer waits for are
 * refused with -ESRCH.
 */
int nsrv_gossip_node_pull_data(nsrv_gossip_node_t *n, uint8_t peer, uint32_t pull_id,
                               const uint8_t *d, size_t len, uint64_t now_mono);
/* Pull `pull_id` to peer failed (connect, write, read or early close). */
void nsrv_gossip_node_pull_failed(nsrv_gossip_node_t *n, uint8_t peer, uint32_t pull_id,
                                  uint64_t now_mono);

/*
 * Peers by host name (proto/gossip.md §8.2). The engine decides when each name is
 * looked up (nsrv/gossip_timing.h: at start and on reload, periodically, at once when a
 * packet is refused for its source) and keeps at most NSRV_GOSSIP_RESOLVE_MAX_INFLIGHT
 * lookups running; the I/O layer runs each NSRV_GOSSIP_ACT_RESOLVE and reports here.
 */
typedef struct {
    const struct sockaddr *addr; /* the answer (IPv4 or IPv6), or NULL: */
    int error;                   /* the lookup's error code (nonzero) */
    const char *error_name;      /* its static name, for status (e.g. "EAI_NONAME") */
    const char *error_text;      /* its description, for the log */
} nsrv_gossip_resolution_t;
/* The lookup of peer's name host ended (host: the name it was started for). */
void nsrv_gossip_node_resolved(nsrv_gossip_node_t *n, uint8_t peer, const char *host,
                               const nsrv_gossip_resolution_t *r, uint64_t now_mono,
                               int64_t now_wall);
/* Reload: every name looked up again (within the cap). Returns the lookups started. */
unsigned nsrv_gossip_node_resolve_all(nsrv_gossip_node_t *n, uint64_t now_mono);

/*
 * The pull server's connections (proto/gossip.md §7.5): the engine admits them, times
 * them out and evicts them; the I/O layer holds each socket under the id returned here.
 */
/* A connection was accepted from `from` (NULL: unknown). Returns its id, or 0: close it at
 * once (not a configured peer's address, or all NSRV_GOSSIP_PULL_SRV_MAX are answering
 * requests). Admitting it may evict the oldest one that has not sent its request. */
uint32_t nsrv_gossip_node_pull_conn_open(nsrv_gossip_node_t *n, const struct sockaddr *from,
                                         uint64_t now_mono);
/* Its complete request: served as nsrv_gossip_node_serve_pull. On 0 the connection has
 * until NSRV_GOSSIP_PULL_DEADLINE_MS after it was accepted to write the reply; otherwise
 * the engine has forgotten it and the I/O closes it without a word. */
int nsrv_gossip_node_pull_conn_request(nsrv_gossip_node_t *n, uint32_t conn, const uint8_t *req,
                                       size_t len, const struct sockaddr *from, uint64_t now_mono,
                                       int64_t now_wall, nsrv_buf_t *out);
/* The I/O layer closed connection conn (reply written, the peer hung up). */
void nsrv_gossip_node_pull_conn_closed(nsrv_gossip_node_t *n, uint32_t conn);
/* Pull server connections open now. */
size_t nsrv_gossip_node_pull_conns(const nsrv_gossip_node_t *n);

/*
 * ---- The pieces, for tests that drive the engine by hand ----
 * (the scheduler above calls these; datagrams still go out through poll).
 */

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
/*
 * Reload: nsrv_gossip_peers_configure on the engine's table (all or nothing). A peer no
 * longer listed leaves with its whole record; a pull to it in flight is cancelled
 * (NSRV_GOSSIP_ACT_PULL_CANCEL). Returns 0 or -EINVAL.
 */
int nsrv_gossip_node_configure_peers(nsrv_gossip_node_t *n, const nsrv_gossip_peer_conf_t *confs,
                                     size_t count);
/* Ask peer_id for everything (start-up, or a peer's new incarnation). */
void nsrv_gossip_node_want_all(nsrv_gossip_node_t *n, uint8_t peer_id);
/*
 * The I/O layer found a named peer at a new address (its name resolved differently): its
 * packets were refused until now, so it gets a full digest at once (within the SYNC_REQ
 * reply limit), as if it had asked: a restarted peer learns our view without waiting.
 */
void nsrv_gossip_node_peer_moved(nsrv_gossip_node_t *n, uint8_t peer_id, uint64_t now_mono,
                                 int64_t now_wall);

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
void nsrv_gossip_node_metrics(nsrv_gossip_node_t *n, uint64_t now_mono, nsrv_buf_t *out);
/*
 * True while gossip was refused in the last NSRV_GOSSIP_REFUSAL_HEALTH_MS
 * for a reason other than a replay or a previous incarnation; appends one
 * line saying which peer and why to why (may be NULL).
 */
bool nsrv_gossip_node_degraded(const nsrv_gossip_node_t *n, uint64_t now_mono, nsrv_buf_t *why);
/* A peer counts as alive while its last valid packet is at most this many full-digest
 * intervals old (the address service and nsrvd_gossip_peer_up). */
#define NSRV_GOSSIP_ALIVE_INTERVALS 3
uint64_t nsrv_gossip_node_alive_window_ms(const nsrv_gossip_node_t *n);
/* Calls cb for each peer alive now (heard within the window, not gone by LEAVE), in node id
 * order, with its configured gossip address and the NameServer address it announced (NULL
 * until it announces one: a peer of an older version never does). */
void nsrv_gossip_node_foreach_alive(nsrv_gossip_node_t *n, uint64_t now_mono,
                                    void (*cb)(void *ud, uint8_t id, const struct sockaddr *addr,
                                               const char *ns_addr),
                                    void *ud);

/*
 * ---- Presence (proto/gossip.md §5.7, §5.8) ----
 */
/* What this node announces: its NameServer endpoint and status endpoint (status_port 0:
 * none); an empty host means "the address my datagrams come from". Copied. Until a valid
 * one is set (nsrv_gossip_announce_problem) nothing is announced; an invalid one is logged
 * with the reason. */
void nsrv_gossip_node_set_announce(nsrv_gossip_node_t *n, const nsrv_gossip_announce_t *a);
/* Stopping: a LEAVE to every peer that speaks it (it announced itself). Returns how many
 * peers were told; the datagrams go out through poll like any other. */
size_t nsrv_gossip_node_leave(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall);
/* "up", "silent", "left" or "unresolved" (a named peer whose name gives no address);
 * NULL for an unknown peer. */
const char *nsrv_gossip_node_peer_state(nsrv_gossip_node_t *n, uint8_t peer_id, uint64_t now_mono);
/* What the peer announced, as host:port text; NULL if nothing (or no status endpoint). */
const char *nsrv_gossip_node_peer_nsaddr(nsrv_gossip_node_t *n, uint8_t peer_id);
const char *nsrv_gossip_node_peer_status_addr(nsrv_gossip_node_t *n, uint8_t peer_id);
/* "peer:<id>" for a broker last reported by a peer, or NULL. */
const char *nsrv_gossip_node_source(nsrv_gossip_node_t *n, const nsrv_route_live_info_t *li);

/* Counters the transport adds to (bytes include UDP payload only). */
typedef struct {
    uint64_t dgrams_sent, bytes_sent, dgrams_recv, bytes_recv;
    uint64_t pulls_ok, pulls_failed, pulls_served, brokers_imported;
    uint64_t tombstones_applied;
    uint64_t pulled_refused; /* pulled registrations over our registration limits */
    /* pull server connections closed: not from a peer's IP, no complete
     * request in time, evicted by a newer one at the cap */
    uint64_t pull_conns_not_peer, pull_conns_timed_out, pull_conns_evicted;
} nsrv_gossip_counters_t;
nsrv_gossip_counters_t *nsrv_gossip_node_counters(nsrv_gossip_node_t *n);
