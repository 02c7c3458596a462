/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-peer security state and the receive pipeline for gossip datagrams
 * (proto/gossip.md §8, §9). Pure: no sockets, no clocks read here; the I/O
 * layer passes in the bytes, the source address and the clocks. Not
 * thread-safe: one loop thread owns a peer table.
 *
 * Glossary
 *   peer         a configured remote node: id, address, public keys
 *   incarnation  the peer's src_inc; rises on every restart (persisted)
 *   window       256-bit replay bitmap over seq, per (peer, incarnation)
 *   offset       sliding minimum of (local recv mono - src_mono_ms), rising
 *                at most 1 ms/s: an UPPER bound on the true clock offset
 *                (status output, and a cap on the anchor)
 *   anchor       a LOWER bound on the clock offset from a pull round trip we
 *                started (req_sent - responder's src_mono_ms); the only
 *                thing a peer's ages are mapped with
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "nsrv/arena.h"
#include "nsrv/gossip_msg.h"
#include "nsrv/gossip_timing.h"

/* An incarnation further than this ahead of our wall clock is refused: the
 * only use of the wall clock on receipt (clocks may differ by up to a day). */
#define NSRV_GOSSIP_INC_FUTURE_MS (24 * 3600 * 1000LL)
/* Replay window width in sequence numbers. */
#define NSRV_GOSSIP_WINDOW 256
/* The clock offset is the minimum over 4 buckets of 15 s (the last 45-60 s). */
#define NSRV_GOSSIP_OFF_BUCKET_MS 15000
#define NSRV_GOSSIP_OFF_BUCKETS 4
/* ... and it rises toward that minimum by at most 1 ms per second of local time. */
#define NSRV_GOSSIP_OFF_RISE_PPM 1000
/*
 * An anchor's bound is lowered by this much per ms elapsed since it was
 * taken: the largest rate at which two machines' monotonic clocks are
 * assumed to drift apart (quartz is ~10-100 ppm). A younger anchor that is
 * looser replaces one older than NSRV_GOSSIP_ANCHOR_REFRESH_MS, so an
 * excess drift only matters over that long if peers are pulled that often.
 */
#define NSRV_GOSSIP_ANCHOR_DRIFT_PPM 100

typedef struct nsrv_gossip_peers nsrv_gossip_peers_t;
typedef struct nsrv_gossip_peer nsrv_gossip_peer_t;

/* Longest host name in a "name:port" peer address. */
#define NSRV_GOSSIP_HOST_MAX 57

/* One peer as configured. All pointers are borrowed for the call. */
typedef struct {
    uint8_t node_id; /* 1..254 */
    /* Literal "ip:port" / "[ipv6]:port", or "name:port": a named peer has no address (nothing
     * is sent to it or accepted from it) until the I/O layer resolves it
     * (nsrv_gossip_peer_set_resolved); its name is resolved again periodically. */
    const char *addr;
    const nsrv_gossip_key_t *keys;
    size_t nkeys; /* 1..NSRV_GOSSIP_MAX_KEYS, distinct key ids */
} nsrv_gossip_peer_conf_t;

/* True if addr is a peer address configure accepts (literal or "name:port"). */
bool nsrv_gossip_peer_addr_valid(const char *addr);

/*
 * An empty table. max_dgram caps accepted datagrams (use the cluster-wide
 * gossip budget, NSRV_GOSSIP_DGRAM_MIN..MAX; out of range -> default).
 */
nsrv_gossip_peers_t *nsrv_gossip_peers_create(uint32_t max_dgram);
/* Frees the table and its peers; sets *p = NULL. Accepts NULL. */
void nsrv_gossip_peers_destroy(nsrv_gossip_peers_t **p);
void nsrv_gossip_peers_set_max_dgram(nsrv_gossip_peers_t *t, uint32_t max_dgram);

/*
 * Applies a complete peer list (startup and SIGHUP reload). Validates all of
 * it first: on -EINVAL (bad id, duplicate id, bad address, 0 or too many
 * keys, duplicate key id) the table is unchanged. Otherwise peers that stay
 * keep their state (incarnation, window, offset, counters) with the new
 * address and keys, new peers start empty, and peers no longer listed are
 * freed: every nsrv_gossip_peer_t pointer the caller held for them is then
 * dangling.
 */
int nsrv_gossip_peers_configure(nsrv_gossip_peers_t *t, const nsrv_gossip_peer_conf_t *confs,
                                size_t n);

size_t nsrv_gossip_peers_count(const nsrv_gossip_peers_t *t);
/* Peers in increasing node id order, i < count. */
nsrv_gossip_peer_t *nsrv_gossip_peers_at(const nsrv_gossip_peers_t *t, size_t i);
/* NULL if node_id is not configured. */
nsrv_gossip_peer_t *nsrv_gossip_peers_find(const nsrv_gossip_peers_t *t, uint8_t node_id);
/* True if from's IP is some configured peer's IP (port not compared). */
bool nsrv_gossip_peers_ip_known(const nsrv_gossip_peers_t *t, const struct sockaddr *from);

uint8_t nsrv_gossip_peer_id(const nsrv_gossip_peer_t *p);
/* The current address (where to send): the literal one, or a name's last resolution
 * (family AF_UNSPEC while it has none; see nsrv_gossip_peer_has_addr). */
const struct sockaddr *nsrv_gossip_peer_addr(const nsrv_gossip_peer_t *p, socklen_t *len);
/* The host name of a peer configured as "name:port"; NULL for a literal address. */
const char *nsrv_gossip_peer_host(const nsrv_gossip_peer_t *p);
/* False while a named peer has never resolved. */
bool nsrv_gossip_peer_has_addr(const nsrv_gossip_peer_t *p);
/*
 * A resolution of a named peer: ip's address with the configured port becomes the peer's
 * address, so the source check and the pull listener's allow list follow it. Returns 1 if
 * the address changed, 0 if not, -EINVAL for a literal peer or a family other than
 * IPv4/IPv6. The peer's security state (incarnation, window, anchors) is kept: the keys,
 * not the address, say who it is.
 */
int nsrv_gossip_peer_set_resolved(nsrv_gossip_peer_t *p, const struct sockaddr *ip);
/* A failed resolution (err: nonzero error code, name: its static name, for status): the
 * last address stays. */
void nsrv_gossip_peer_set_resolve_error(nsrv_gossip_peer_t *p, int err, const char *name);
/* A lookup of the peer's name started / finished (the engine's, node_resolve.c). */
void nsrv_gossip_peer_resolve_started(nsrv_gossip_peer_t *p, uint64_t now_mono_ms);
void nsrv_gossip_peer_resolve_done(nsrv_gossip_peer_t *p);
bool nsrv_gossip_peer_resolving(const nsrv_gossip_peer_t *p);
/* Due at once (a reload asked for every name while the lookups in flight were at their cap). */
void nsrv_gossip_peer_resolve_soon(nsrv_gossip_peer_t *p);
/*
 * Whether a named peer's name should be looked up now (rules and periods in
 * nsrv/gossip_timing.h): never looked up (start, or its name changed on reload);
 * kick (a packet or pull connection was just refused for its source address);
 * silent for NSRV_GOSSIP_RESOLVE_SILENT_INTERVALS × interval_ms, never heard, or
 * unresolvable; or simply due. Never while a lookup is under way; never for a literal.
 */
bool nsrv_gossip_peer_resolve_is_due(const nsrv_gossip_peer_t *p, uint64_t now_mono_ms,
                                     uint32_t interval_ms, bool kick);
/* The configured public keys (e.g. for nsrv_gossip_pull_dec_create). */
const nsrv_gossip_key_t *nsrv_gossip_peer_keys(const nsrv_gossip_peer_t *p, size_t *n);

/*
 * The UDP receive pipeline, cheapest check first and the signature last:
 *   size (len <= max_dgram), version, cluster, src configured, source IP ==
 *   the peer's configured IP (port not compared), key_id configured, dst
 *   (my_id or 255), incarnation (not below the
 *   stored one, not above now_wall + 24 h), type (1..4), replay window peek,
 *   body decode (into arena), Ed25519 signature;
 * then, only when everything passed, the commit: a higher incarnation resets
 * the window and the offset; the seq bit is set; the offset takes the sample
 * now_mono_ms - src_mono_ms; counters and last-valid time are updated.
 *
 * Returns 0 (out_msg decoded, lists in arena, strings pointing into dgram;
 * *out_peer = the sender) or a negative NSRV_GOSSIP_E* reason, counted in the
 * table totals and, once src names a configured peer, on that peer. Nothing
 * else changes on rejection. The caller resets the arena after each packet;
 * it must never answer a rejected packet.
 */
int nsrv_gossip_peer_check(nsrv_gossip_peers_t *peers, uint8_t my_id, const char *cluster,
                           const uint8_t *dgram, size_t len, const struct sockaddr *from,
                           uint64_t now_mono_ms, int64_t now_wall_ms, nsrv_gossip_msg_t *out_msg,
                           nsrv_arena_t *arena, nsrv_gossip_peer_t **out_peer);

/*
 * The same pipeline for a PULL_REQ received on TCP (the bytes after its u32
 * length prefix; from = the connection's peer address): the size cap is
 * NSRV_GOSSIP_PULL_REQ_MAX, the type must be PULL_REQ and dst must be my_id
 * exactly. It shares the peer's window, so a request cannot be replayed.
 */
int nsrv_gossip_peer_check_pull(nsrv_gossip_peers_t *peers, uint8_t my_id, const char *cluster,
                                const uint8_t *req, size_t len, const struct sockaddr *from,
                                uint64_t now_mono_ms, int64_t now_wall_ms,
                                nsrv_gossip_msg_t *out_msg, nsrv_arena_t *arena,
                                nsrv_gossip_peer_t **out_peer);

/*
 * Records a clock anchor from a verified pull response of this peer
 * (nsrv_gossip_pull_dec_origin): src_inc / src_mono_ms from its end frame,
 * req_sent_mono_ms = our monotonic time taken BEFORE the request was written
 * (before connecting is fine: earlier only loosens the bound), now_mono_ms =
 * now. The responder read its clock after our request reached it, so
 *   L = req_sent_mono_ms - src_mono_ms  (signed)
 * is a lower bound on (local clock - its clock), off by at most the round
 * trip. Rules (proto/gossip.md §7.6):
 *   - src_inc below the peer's current incarnation: ignored;
 *   - src_inc equal to it: replaces the current anchor if it gives a bound
 *     at least as high after drift allowances, or if the current one is
 *     older than NSRV_GOSSIP_ANCHOR_REFRESH_MS;
 *   - src_inc above it (or no datagram accepted yet): kept aside for that
 *     incarnation (the highest one only, same replacement rule) and used
 *     once a datagram of exactly that incarnation is accepted;
 *   - req_sent_mono_ms > now_mono_ms, src_inc 0 or > 2^62: ignored.
 * A new incarnation's first accepted datagram drops every anchor of older
 * ones, so an old incarnation's clock can never map a new one's ages.
 */
void nsrv_gossip_peer_anchor(nsrv_gossip_peer_t *p, uint64_t src_inc, uint64_t src_mono_ms,
                             uint64_t req_sent_mono_ms, uint64_t now_mono_ms);

/*
 * Maps an age the peer reported onto the local monotonic clock:
 *   off       = min(L - ceil((now - anchor time) * 100 ppm), sample offset)
 *   last_seen = min(src_mono_ms - age_ms + off, now_mono_ms)
 * where L is the current incarnation's anchor. Returns 0 = unusable when
 * the peer's current incarnation has no anchor (the caller ignores the
 * report and should pull from the peer, which anchors it), and also when
 * the result would be <= 0 ("long ago"). src_mono_ms and age_ms come from
 * one accepted datagram of the peer's current incarnation; now_mono_ms is
 * when it was received. Because L is a lower bound, the result is never
 * later than the true instant (up to drift beyond the allowance) and at most
 * the anchor's round trip + allowance earlier, whatever the datagram's
 * delay: a replayed or held-back copy cannot extend liveness.
 */
uint64_t nsrv_gossip_peer_last_seen(const nsrv_gossip_peer_t *p, uint64_t src_mono_ms,
                                    uint32_t age_ms, uint64_t now_mono_ms);

/* A snapshot for status output. */
typedef struct {
    uint8_t node_id;
    bool has_incarnation; /* a valid packet was accepted since startup */
    uint64_t incarnation;
    bool new_incarnation;        /* the last accepted packet started a new incarnation */
    uint64_t top_seq;            /* highest seq accepted in this incarnation */
    uint64_t last_valid_mono_ms; /* local time of the last accepted packet */
    uint8_t last_key_id;         /* key_id of the last accepted packet */
    bool has_offset;
    int64_t offset_ms;              /* sample minimum: an upper bound, not used for mapping */
    bool has_anchor;                /* the current incarnation has a round-trip anchor */
    int64_t anchor_offset_ms;       /* its lower bound L (before the drift allowance) */
    uint64_t anchor_mono_ms;        /* local time it was taken (request sent); age = now - this */
    const char *host;               /* the configured name, NULL for a literal address */
    bool has_addr;                  /* false while a named peer has never resolved */
    int resolve_error;              /* the last resolution's error, 0 if it succeeded */
    const char *resolve_error_name; /* its name (e.g. "EAI_NONAME"), NULL if none */
    uint64_t resolve_failures;      /* failed resolutions since start */
    uint64_t accepted;
    uint64_t rejected[NSRV_GOSSIP_NREASONS]; /* by nsrv_gossip_reason_index */
} nsrv_gossip_peer_info_t;

void nsrv_gossip_peer_info(const nsrv_gossip_peer_t *p, nsrv_gossip_peer_info_t *info);
/* Totals over all packets, including those from no configured peer. */
void nsrv_gossip_peers_totals(const nsrv_gossip_peers_t *t, uint64_t *accepted,
                              uint64_t rejected[NSRV_GOSSIP_NREASONS]);
